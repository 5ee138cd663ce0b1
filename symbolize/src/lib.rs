//! `hwprof-symbolize`: addresses to frames.
//!
//! This crate owns symbolization: it replays a recording's MMAP/MMAP2/COMM/FORK/EXIT
//! records into per-process address spaces over time (so exec and dlopen are right),
//! resolves user addresses with blazesym (ELF symbols, DWARF lines and inlined functions)
//! from the files [`locate`] finds (perf's build-id cache, `--symfs`, debug files by build
//! id and debuglink, debuginfod), kernel addresses with `/proc/kallsyms`, and JIT code
//! with `/tmp/perf-PID.map`. Failing to resolve is a result, not an error: such
//! addresses become `[unknown]` frames that still name their module.
//!
//! A recording names files by path, and a path may now be anything: only regular files
//! are opened, never blocking (a FIFO, a device or a directory named by an MMAP2 record
//! resolves to `[unknown]` in its module), and DWARF is read only when every separate
//! debug file blazesym would open is a regular file ([`debugfiles`]). No file is read
//! whose compressed sections claim or inflate to more than a file can hold
//! ([`elfcheck`]): a hostile debug file is skipped with a notice, not an abort.
//!
//! Its output is a [`Profile`]: interned frames and samples whose stacks are frame ids,
//! the one input of `hwprof report` and `hwprof flamegraph`. It renders nothing.
//!
//! ```no_run
//! use hwprof_sampler::perfdata::reader::PerfData;
//! use hwprof_symbolize::{Options, Profile};
//!
//! let pd = PerfData::open("perf.data".as_ref())?;
//! let p = Profile::build(&pd, &Options::default())?;
//! for s in &p.samples {
//!     let leaf = s.stack.first().map(|&f| p.frame(f).name());
//!     println!("{} {:?}", p.comm(s), leaf);
//! }
//! # Ok::<(), hwprof_symbolize::Error>(())
//! ```

#![forbid(unsafe_code)]

mod aliases;
mod assemble;
pub mod buildid;
pub mod chains;
pub mod datasym;
pub mod debugfiles;
pub mod elfcheck;
pub mod error;
pub mod intern;
pub mod kallsyms;
pub mod lines;
pub mod locate;
mod maps;
pub mod module;
pub mod perfmap;
pub mod process;
pub mod profile;
pub mod replay;
mod stacks;
pub mod symbolizer;
pub mod timeline;
pub mod unwind;

pub use assemble::{Built, ProfileBuilder, Replayed, Weigh, Weighed};
pub use buildid::BuildId;
pub use error::{Error, Result};
pub use locate::Locator;
pub use module::{Module, ModuleId};
pub use profile::{
    Branch, BranchEnd, EventInfo, Frame, FrameId, FrameKind, Options, Profile, Sample,
};
pub use symbolizer::{Symbolizer, kernel_matches};
pub use timeline::Timed;
