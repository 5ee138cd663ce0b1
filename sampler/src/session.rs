//! Sampling sessions.
