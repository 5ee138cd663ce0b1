//! The engine's errors: one line each, with the errno the kernel gave when there is one.

use std::io;

/// Why BPF cannot be used on this machine ([`crate::Engine::check`]): a one-line reason
/// for the notice that says the perf-event path runs instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// The kernel refused (EPERM; EACCES when attaching): loading BPF needs root, or CAP_BPF with
    /// CAP_PERFMON (kernel 5.8 and later).
    #[error("loading BPF programs needs root or CAP_BPF and CAP_PERFMON ({0})")]
    Permission(String),
    /// The kernel is in lockdown (`/sys/kernel/security/lockdown`), which refuses BPF.
    #[error("the kernel is locked down ({0}), which refuses BPF programs")]
    LockedDown(String),
    /// The kernel lacks what the programs use (BPF ring buffers: 5.8; BTF-defined maps).
    #[error("kernel {release} is too old for hwprof's BPF programs (5.8 or later): {detail}")]
    KernelTooOld {
        /// `uname -r`.
        release: String,
        /// What failed.
        detail: String,
    },
    /// The kernel has no BTF (`/sys/kernel/btf/vmlinux`, CONFIG_DEBUG_INFO_BTF), which
    /// the programs' CO-RE reads of kernel structs are relocated against.
    #[error(
        "this kernel has no BTF (/sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF), which hwprof's BPF programs need ({0})"
    )]
    NoBtf(String),
    /// Anything else (the text says what failed).
    #[error("{0}")]
    Other(String),
}

/// An error of the engine or of one of its programs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// BPF cannot be used here (see [`Unavailable`]).
    #[error("BPF unavailable: {0}")]
    Unavailable(#[from] Unavailable),
    /// Loading an object (its maps, BTF or programs) failed.
    #[error("loading BPF object {object}: {detail}")]
    Load {
        /// The object's name (`offcpu`).
        object: &'static str,
        /// What failed, in one line.
        detail: String,
        /// The kernel's errno, when it gave one.
        errno: Option<i32>,
    },
    /// Attaching a program failed.
    #[error("attaching BPF program {program} to {target}: {detail}")]
    Attach {
        /// The program.
        program: String,
        /// Where it was to go (`sched:sched_switch`, `/bin/x:func`).
        target: String,
        /// What failed, in one line.
        detail: String,
    },
    /// The object has no program or map of that name or type (a bug of hwprof).
    #[error("BPF object {object} has no {what} {name}")]
    Missing {
        /// The object's name.
        object: &'static str,
        /// `program`, `hash map`...
        what: &'static str,
        /// The name asked for.
        name: String,
    },
    /// Reading or writing a map failed.
    #[error("BPF map {map}: {detail}")]
    Map {
        /// The map.
        map: String,
        /// What failed, in one line.
        detail: String,
    },
    /// Reading /proc or waiting on a ring buffer failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
}

/// The first `io::Error` in `e`'s chain of sources (aya wraps the kernel's errno).
pub(crate) fn io_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a io::Error> {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(io) = c.downcast_ref::<io::Error>() {
            return Some(io);
        }
        cur = c.source();
    }
    None
}

/// `e` in one line: its first line (aya appends the verifier's log to load errors), and
/// the kernel's error when the first line does not say it already.
pub(crate) fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let full = e.to_string();
    let first = full.lines().next().unwrap_or("").trim().to_string();
    let first = first
        .split(". Verifier output:")
        .next()
        .unwrap_or("")
        .to_string();
    match io_error(e) {
        Some(io) if !first.contains(&io.to_string()) => format!("{first}: {io}"),
        _ => first,
    }
}
