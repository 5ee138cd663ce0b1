//! `hwprof-symbolize`: addresses to frames.
//!
//! This crate owns symbolization: it replays a recording's MMAP/MMAP2/COMM/FORK/EXIT
//! records into per-process address spaces over time (so exec and dlopen are right),
//! resolves user addresses with blazesym (ELF symbols, DWARF lines and inlined functions,
//! debug files by build id and debuglink), kernel addresses with `/proc/kallsyms`, and JIT
//! code with `/tmp/perf-PID.map`. Failing to resolve is a result, not an error: such
//! addresses become `[unknown]` frames that still name their module.
//!
//! Its output is a [`Profile`]: interned frames and samples whose stacks are frame ids,
//! the one input of `hwprof report` and `hwprof flamegraph`. It renders nothing.

pub mod profile;

pub use profile::{EventInfo, Frame, FrameId, FrameKind, Options, Profile, Sample};
