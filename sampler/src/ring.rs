//! The lock-free mmap ring reader.
