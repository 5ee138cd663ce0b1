//! `hwprof-sampler`: getting records out of the kernel and into files.
//!
//! This crate owns sampling: the lock-free mmap ring reader ([`ring`]), the one safe
//! decoder from bytes to records for every `PERF_RECORD_*` type and `PERF_SAMPLE_*`
//! field ([`record`]), sampling sessions on commands, PIDs, TIDs and CPUs ([`session`]),
//! the recorder that turns a session into perf.data or a live stream ([`recorder`]),
//! perf.data reading and writing ([`perfdata`]), and the one way every output file of
//! hwprof is written ([`output`]). It resolves no symbols.
//!
//! The only `unsafe` code is in [`ring`] (the mmap'd ring and its control page) and in
//! `hwprof_pmu::sys` (syscalls).

// Unsafe code only in `ring` (the mmap'd ring), which allows it.
#![deny(unsafe_code)]

pub mod buildid;
pub mod config;
pub mod error;
pub mod outfile;
pub mod perfdata;
pub mod probe;
pub mod record;
pub mod recorder;
#[allow(unsafe_code)]
pub mod ring;
pub mod session;
pub mod synth;

pub use error::{Error, Result};
