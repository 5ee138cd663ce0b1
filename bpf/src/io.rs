//! System calls timed in the kernel (`src/c/io.bpf.c`): each call paired per thread
//! from its entry to its exit on the raw `sys_enter`/`sys_exit` tracepoints, summed per
//! (thread, syscall, user stack at the call) in calls, time in the kernel, bytes (the
//! positive results of the calls that return byte counts) and errors, with a log2
//! histogram of the times per syscall: what the I/O latency views are made of.
//!
//! The syscalls are chosen by number ([`IoOptions::syscalls`], the host's numbers: on
//! x86-64 `read` is 0 and `write` is 1), or all of them. The threads: every thread
//! ([`IoOptions::all`]) or the target processes' ones, children followed as they fork.
//! A call in progress when tracing stops is not counted.
//!
//! Bounded: every map has `max_entries`; what did not fit is counted in [`IoDropped`].

use std::collections::BTreeMap;

use crate::engine::{Engine, Loader, Log2Hist, StackErrors, objects};
use crate::error::Error;
use crate::maps::{IoHistKey, IoSumKey, IoSumVal};

/// What to trace, and the maps' sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoOptions {
    /// Every thread of the system; else the target processes' threads.
    pub all: bool,
    /// The target processes, to start with.
    pub tgids: Vec<u32>,
    /// Child processes of targets become targets.
    pub follow_forks: bool,
    /// The syscalls to time, by number, each with whether its positive result is a
    /// byte count; empty: every syscall (no bytes counted).
    pub syscalls: Vec<(u32, bool)>,
    /// Take the user stack (frame pointers) of each call.
    pub user_stacks: bool,
    /// Distinct (thread, syscall, stack) sums.
    pub max_sums: u32,
    /// Distinct stacks; each takes 127 × 8 bytes of kernel memory, allocated at load.
    pub max_stacks: u32,
    /// Threads inside a traced call at once.
    pub max_threads: u32,
}

impl Default for IoOptions {
    fn default() -> Self {
        IoOptions {
            all: false,
            tgids: Vec::new(),
            follow_forks: true,
            syscalls: Vec::new(),
            user_stacks: true,
            max_sums: 65536,
            max_stacks: 16384,
            max_threads: 65536,
        }
    }
}

/// The calls of one thread, syscall and stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoSum {
    /// The process.
    pub tgid: u32,
    /// The thread.
    pub tid: u32,
    /// The syscall's number.
    pub nr: u32,
    /// The user stack at the call, leaf first (empty: not asked for or not readable).
    pub user: Vec<u64>,
    /// Calls.
    pub count: u64,
    /// Nanoseconds in the kernel, entry to exit.
    pub ns: u64,
    /// Bytes (the positive results of a byte-counting syscall).
    pub bytes: u64,
    /// Calls that returned an error.
    pub errors: u64,
}

/// What did not fit or could not be read; all zero in a complete answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoDropped {
    /// Calls whose (thread, syscall, stack) found no room in the sums.
    pub sums: u64,
    /// Calls whose thread found no room among the calls in progress: not counted.
    pub calls: u64,
    /// Child processes of targets not followed: no room among the targets.
    pub targets: u64,
    /// Stacks that are missing, by cause (weighted by calls).
    pub stacks: StackErrors,
}

/// What the kernel summed (see [`Io::finish`]).
#[derive(Clone, Debug, Default)]
pub struct IoData {
    /// Per thread, syscall and stack.
    pub sums: Vec<IoSum>,
    /// Per syscall, the log2 histogram of its calls' times in ns.
    pub hist: BTreeMap<u32, Log2Hist>,
    /// What did not fit.
    pub dropped: IoDropped,
}

const DROP_SUMS: usize = 0;
const DROP_STARTS: usize = 1;
const DROP_TARGETS: usize = 2;

/// The syscall programs, loaded and attached.
#[derive(Debug)]
pub struct Io {
    engine: Engine,
}

impl Io {
    /// Loads the programs with `o`'s options and attaches them (`sys_enter`,
    /// `sys_exit`, `task_newtask`): the targets' calls are timed from now on.
    pub fn start(o: &IoOptions) -> Result<Io, Error> {
        let at_least = |n: u32| n.max(1);
        let targets = u32::try_from(o.tgids.len().saturating_mul(2))
            .unwrap_or(u32::MAX)
            .max(4096);
        let mut engine = Loader::new(&objects::IO)
            .global("all_threads", o.all)
            .global("all_syscalls", o.syscalls.is_empty())
            .global("follow_forks", o.follow_forks)
            .global("user_stacks", o.user_stacks)
            .max_entries("sums", at_least(o.max_sums))
            .max_entries("stacks", at_least(o.max_stacks))
            .max_entries("start", at_least(o.max_threads))
            .max_entries("targets", targets)
            .load()?;
        for &t in &o.tgids {
            engine.hash_insert("targets", t, 1u8)?;
        }
        for &(nr, bytes) in &o.syscalls {
            engine.array_set("wanted", nr, if bytes { 2u8 } else { 1u8 })?;
        }
        engine.attach_raw_tracepoint("io_newtask", "task_newtask")?;
        engine.attach_raw_tracepoint("io_enter", "sys_enter")?;
        engine.attach_raw_tracepoint("io_exit", "sys_exit")?;
        Ok(Io { engine })
    }

    /// Makes `tgid` a target (a command started after [`Io::start`]).
    pub fn add_tgid(&mut self, tgid: u32) -> Result<(), Error> {
        self.engine.hash_insert("targets", tgid, 1u8)
    }

    /// The kernel's ids of its programs (see [`Engine::program_ids`]).
    pub fn program_ids(&self) -> Vec<u32> {
        self.engine.program_ids()
    }

    /// Detaches the programs and reads what they summed.
    pub fn finish(mut self) -> Result<IoData, Error> {
        self.engine.detach()?;
        let e = &self.engine;
        let slots = e.dropped()?;
        let at = |i: usize| slots.get(i).copied().unwrap_or(0);
        let mut stacks = e.stacks("stacks")?;
        let sums = e
            .hash_entries::<IoSumKey, IoSumVal>("sums")?
            .into_iter()
            .map(|(k, v)| IoSum {
                tgid: k.tgid,
                tid: k.tid,
                nr: k.nr,
                user: stacks.get(k.stack, v.count),
                count: v.count,
                ns: v.ns,
                bytes: v.bytes,
                errors: v.errors,
            })
            .collect();
        let mut hist: BTreeMap<u32, Log2Hist> = BTreeMap::new();
        for (k, n) in e.hash_entries::<IoHistKey, u64>("hist")? {
            let h = hist
                .entry(k.nr)
                .or_insert_with(|| Log2Hist { slots: vec![0; 64] });
            if let Some(c) = h.slots.get_mut(k.slot as usize) {
                *c += n;
            }
        }
        Ok(IoData {
            sums,
            hist,
            dropped: IoDropped {
                sums: at(DROP_SUMS),
                calls: at(DROP_STARTS),
                targets: at(DROP_TARGETS),
                stacks: stacks.errors(),
            },
        })
    }
}
