//! The one decoder from bytes to [`Record`]s, for live rings and files alike.
