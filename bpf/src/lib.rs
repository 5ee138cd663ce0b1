//! hwprof's BPF engine: programs written for hwprof, loaded into the kernel with
//! [aya](https://aya-rs.dev) (pure Rust), which aggregate there (sums, counts, log2
//! histograms, stacks) so that only the results, or the rare events that must reach
//! user space, cross into hwprof.
//!
//! # How it is put together
//!
//! - **Programs** are C files in `bpf/src/c/` (`*.bpf.c`, sharing `hwprof.h`), compiled
//!   by `bpf/build.sh` into `bpf/objects/*.bpf.o`, which are committed and embedded
//!   ([`objects`]): `cargo build` needs no BPF compiler. CI checks that a rebuild gives
//!   the same bytes (`bpf/build.sh --check`). No vmlinux.h: the few kernel struct
//!   fields a program reads are declared in its C file with `preserve_access_index`
//!   (CO-RE), and aya relocates them against the running kernel's BTF at load
//!   ([`Object::core`]; without BTF such an object is [`Unavailable::NoBtf`], never
//!   loaded with guessed offsets). Scheduler programs attach to raw tracepoints, which
//!   the kernel calls directly (a classic tracepoint program runs behind perf's trace
//!   buffer and its recursion guard, which lost switches); the kernel stacks they take
//!   start with the program's frame and the tracing glue (`bpf_trace_run4`...), which
//!   hwprof cuts off by name when it writes them (`Kallsyms::tracing_glue`). Uprobe
//!   programs need no BTF. Kernel 5.8 and later (BPF ring buffers).
//! - **The engine** ([`Loader`], [`Engine`]) loads an object with its `volatile const`
//!   globals and map sizes set, attaches its programs to raw and classic tracepoints and
//!   uprobes
//!   (symbol or file offset, one process or all), detaches them, and reads its maps:
//!   hash maps ([`Engine::hash_entries`]), array and per-CPU array counters
//!   ([`Engine::counters`]), log2 histograms ([`Engine::log2_hist`]), stack-trace maps
//!   ([`Engine::stacks`]: ids to instruction pointers, leaf first, the kernel's errors
//!   counted), and BPF ring buffers drained into a callback ([`Engine::ring`], polled or
//!   through its fd). [`Engine::check`] says whether BPF can be used here and, if not,
//!   why in one line ([`Unavailable`]).
//! - **Bounded maps:** every map has `max_entries`, and every program counts what did
//!   not fit in its `dropped` array (one slot per reason, [`Engine::dropped`]), which
//!   its Rust module returns so that hwprof can show it.
//! - **Nothing outlives hwprof:** programs, attachments and maps are held by file
//!   descriptors; dropping the [`Engine`], or the process ending in any way (SIGKILL
//!   too), removes them from the kernel.
//!
//! # A program
//!
//! A program is a C file plus a few lines of Rust: [`offcpu`] (off-CPU time summed per
//! thread and stacks), [`latency`] (a uprobe and uretprobe pair: counts, log2 and
//! HdrHistogram histograms, slow calls through a ring buffer), [`alloc`] (allocator
//! calls paired from the size at entry to the pointer at return, sums per stack, the
//! blocks still allocated by pointer) and [`io`] (syscalls paired from `sys_enter` to
//! `sys_exit`, sums per syscall and stack). Each module sets the globals and map sizes,
//! attaches, and reads the maps into plain Rust data:
//!
//! ```no_run
//! use hwprof_bpf::{Latency, LatencyEvent, LatencyOptions, UprobeAt};
//! # fn main() -> Result<(), hwprof_bpf::Error> {
//! let mut l = Latency::load(&LatencyOptions {
//!     threshold_ns: Some(1_000_000),
//!     user_stacks: true,
//!     ..LatencyOptions::default()
//! })?;
//! l.attach(std::path::Path::new("/usr/bin/true"), UprobeAt::Symbol("main"), None)?;
//! let mut ring = l.ring()?;
//! let mut slow = Vec::new();
//! // ... the workload runs; drain the ring when its fd is readable ...
//! ring.drain(|bytes| slow.extend(LatencyEvent::from_bytes(bytes)));
//! let d = l.finish(slow)?;
//! println!("{} calls, p99 {} ns, {} slower than 1 ms", d.calls,
//!     d.histogram().value_at_quantile(0.99), d.slow.len());
//! # Ok(()) }
//! ```
//!
//! The crate's only `unsafe` is in `maps` (aya's `Pod` for the C structs).

#![deny(unsafe_code)]

pub mod alloc;
mod engine;
mod error;
mod gate;
pub mod io;
pub mod latency;
#[allow(unsafe_code)]
mod maps;
pub mod offcpu;

pub use crate::alloc::{AllocData, AllocDropped, AllocOptions, Allocs, Site};
pub use engine::{
    Engine, Global, Loader, Log2Hist, NO_STACK, Object, Ring, StackErrors, StackReader, UprobeAt,
    loaded_program_ids, now_ns, objects,
};
pub use error::{Error, Unavailable};
pub use gate::Gate;
pub use io::{Io, IoData, IoDropped, IoOptions, IoSum};
pub use latency::{Latency, LatencyData, LatencyDropped, LatencyOptions, SlowCall};
pub use maps::LatencyEvent;
pub use offcpu::{BlockKind, Blocked, Dropped, OffCpu, OffCpuData, OffCpuOptions};
