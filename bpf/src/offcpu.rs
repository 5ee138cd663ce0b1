//! Off-CPU time summed in the kernel (`src/c/offcpu.bpf.c`): per thread, user stack and
//! kernel stack, the time target threads spent switched out, and how many blocks.
//!
//! The semantics are those of hwprof's perf-event path (`hwprof_analysis::offcpu` and
//! its `pair`): a block runs from a target thread's switch-out to its next switch-in,
//! both exact (the program runs on the raw `sched_switch` tracepoint). Where the kernel
//! let a switch-in reach no program (it happens: see `end_wait` in the C file),
//! the block ends where the thread resumed, found from its CPU time at its next
//! switch-out (or, still running at the end, from `/proc/.../schedstat`). Every
//! switch-out counts, preempted or blocked, as that path and perf's and bcc's offcputime count; a thread's
//! last switch-out (it exited) is no block; the idle tasks never block. Blocks shorter
//! than [`OffCpuOptions::min_block_ns`] are left out in the kernel, each on its own.
//!
//! The window: [`OffCpu::open_window`] says when counting starts. A block whose
//! switch-out came before it counts from the window's start
//! ([`BlockKind::BeforeWindow`]); a thread of the targets present then whose first
//! event is a switch-in (it was off CPU when the window opened and its switch-out was
//! never seen) counts (switch-in − window start), as `BeforeWindow` with no stacks.
//! [`OffCpu::close_window`] ends it in the kernel (no block begins after it, and the
//! blocks that end later count up to it), and [`OffCpu::finish`] adds the blocks still
//! in progress at its end ([`BlockKind::InProgressAtEnd`], or `BeforeWindow` when they
//! also began before the window). Times are `CLOCK_MONOTONIC` ns ([`crate::now_ns`]).
//!
//! Bounded: every map has `max_entries` (the options' `max_*`); what did not fit is
//! counted in [`Dropped`].

use std::collections::{HashMap, HashSet};

use crate::engine::{Engine, Loader, NO_STACK, StackErrors, objects};
use crate::error::Error;
use hwprof_pmu::target;

use crate::maps::{
    Comm, NO_RUNTIME, OffCpuConfig, OffCpuKey, OffCpuPresent, OffCpuStart, OffCpuSum,
};

/// What to trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffCpuOptions {
    /// Every thread of the system (`-a`); else only the target processes' threads.
    pub all: bool,
    /// The target processes (`-p PID`), to start with.
    pub tgids: Vec<u32>,
    /// Child processes of targets become targets (`task_newtask`); threads of a target
    /// always are.
    pub follow_forks: bool,
    /// Blocks shorter than this (each block on its own, the time counted in the window)
    /// are left out, in the kernel.
    pub min_block_ns: u64,
    /// Take the blocked thread's user stack at each switch-out (frame pointers).
    pub user_stacks: bool,
    /// Take its kernel stack.
    pub kernel_stacks: bool,
    /// Entries of the sums (distinct thread, stacks, kind).
    pub max_blocks: u32,
    /// Entries of the stack map (distinct stacks, user and kernel together). Each takes
    /// 127 × 8 bytes of kernel memory, allocated at load: 16384 is 16 MiB.
    pub max_stacks: u32,
    /// Threads followed at once (switched out, present at the window's start, comms).
    pub max_threads: u32,
}

impl Default for OffCpuOptions {
    fn default() -> Self {
        OffCpuOptions {
            all: false,
            tgids: Vec::new(),
            follow_forks: true,
            min_block_ns: 0,
            user_stacks: true,
            kernel_stacks: true,
            max_blocks: 65536,
            max_stacks: 16384,
            max_threads: 65536,
        }
    }
}

/// Where a summed time began and ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockKind {
    /// Switch-out and switch-in both inside the window.
    Ended,
    /// Still switched out when the window closed: counted up to its end.
    InProgressAtEnd,
    /// Switched out before the window opened: counted from its start (with the stacks
    /// of the switch-out when it was seen, else none).
    BeforeWindow,
}

/// Time summed for one thread, stack pair and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// The process.
    pub tgid: u32,
    /// The thread.
    pub tid: u32,
    /// User stack at the switch-out, instruction pointers leaf first (empty: not
    /// asked for, not seen, or not readable: see [`Dropped::stacks`]).
    pub user: Vec<u64>,
    /// Kernel stack at the switch-out, leaf first. Taken on the raw tracepoint, it
    /// starts with the program's own frame and the tracing glue above `__schedule`
    /// (hwprof cuts them off by name: `hwprof_symbolize::kallsyms::Kallsyms::tracing_glue`).
    pub kernel: Vec<u64>,
    /// Nanoseconds off CPU.
    pub ns: u64,
    /// Blocks summed.
    pub count: u64,
    /// Where they began and ended.
    pub kind: BlockKind,
}

/// What did not fit or could not be read; all zero in a complete answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Blocks whose (thread, stacks, kind) found no room in the sums (`max_blocks`).
    pub blocks: u64,
    /// Switch-outs that found no room among the threads switched out (`max_threads`):
    /// those blocks are lost.
    pub starts: u64,
    /// Threads whose comm found no room (`max_threads`), or present when the window
    /// opened that found none.
    pub threads: u64,
    /// Child processes of targets not followed: no room among the targets.
    pub targets: u64,
    /// Stacks of the summed blocks that are missing, by cause, weighted by blocks.
    pub stacks: StackErrors,
}

impl Dropped {
    /// Nothing was dropped and every stack asked for was read.
    pub fn is_empty(&self) -> bool {
        *self == Dropped::default()
    }
}

/// What the kernel summed (see [`OffCpu::finish`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OffCpuData {
    /// Summed per (tgid, tid, user stack, kernel stack, kind).
    pub blocks: Vec<Blocked>,
    /// Per tid, its comm at its last switch: every thread with an event while tracing.
    pub comms: HashMap<u32, String>,
    /// Threads (tgid, tid) present when the window opened that had no event at all
    /// after it: off CPU all through the window, or on CPU all through it without ever
    /// switching (only /proc or on-CPU samples tell which).
    pub silent: Vec<(u32, u32)>,
    /// What did not fit.
    pub dropped: Dropped,
}

/// `dropped` slots of offcpu.bpf.c.
const DROP_BLOCKS: usize = 0;
const DROP_STARTS: usize = 1;
const DROP_THREADS: usize = 2;
const DROP_TARGETS: usize = 3;

const KIND_ENDED: u32 = 0;
const KIND_BEFORE_WINDOW: u32 = 1;

/// The off-CPU program, loaded and attached.
#[derive(Debug)]
pub struct OffCpu {
    engine: Engine,
    config: OffCpuConfig,
    all: bool,
    min_block_ns: u64,
    present_dropped: u64,
}

impl OffCpu {
    /// Loads the program with `o`'s options and attaches it (`sched:sched_switch`,
    /// `task:task_newtask`): from now on the targets' switch-outs are recorded, but
    /// nothing counts until [`OffCpu::open_window`].
    pub fn start(o: &OffCpuOptions) -> Result<OffCpu, Error> {
        let at_least = |n: u32| n.max(1);
        let targets = u32::try_from(o.tgids.len().saturating_mul(2))
            .unwrap_or(u32::MAX)
            .max(4096);
        let mut engine = Loader::new(&objects::OFFCPU)
            .global("all_threads", o.all)
            .global("follow_forks", o.follow_forks)
            .global("user_stacks", o.user_stacks)
            .global("kernel_stacks", o.kernel_stacks)
            .global("min_block_ns", o.min_block_ns)
            .max_entries("blocks", at_least(o.max_blocks))
            .max_entries("stacks", at_least(o.max_stacks))
            .max_entries("start", at_least(o.max_threads))
            .max_entries("present", at_least(o.max_threads))
            .max_entries("threads", at_least(o.max_threads))
            .max_entries("targets", targets)
            .load()?;
        for &t in &o.tgids {
            engine.hash_insert("targets", t, 1u8)?;
        }
        engine.attach_raw_tracepoint("offcpu_newtask", "task_newtask")?;
        engine.attach_raw_tracepoint("offcpu_switch", "sched_switch")?;
        Ok(OffCpu {
            engine,
            config: OffCpuConfig::default(),
            all: o.all,
            min_block_ns: o.min_block_ns,
            present_dropped: 0,
        })
    }

    /// The kernel's ids of its programs (see [`Engine::program_ids`]).
    pub fn program_ids(&self) -> Vec<u32> {
        self.engine.program_ids()
    }

    /// Makes `tgid` a target (a command started after [`OffCpu::start`]). Call it
    /// before [`OffCpu::open_window`] for its waits in progress then to count.
    pub fn add_tgid(&mut self, tgid: u32) -> Result<(), Error> {
        self.engine.hash_insert("targets", tgid, 1u8)
    }

    /// Opens the window at `now_ns` (`CLOCK_MONOTONIC`, [`crate::now_ns`]): blocks count
    /// from then on (see the module docs). The targets' threads (every thread with
    /// `all`) are read from /proc now, for their waits in progress.
    pub fn open_window(&mut self, now_ns: u64) -> Result<(), Error> {
        let threads = if self.all {
            let mut v = Vec::new();
            for pid in target::processes() {
                v.extend(u32::try_from(pid).map(threads_of).unwrap_or_default());
            }
            v
        } else {
            let targets: Vec<(u32, u8)> = self.engine.hash_entries("targets")?;
            targets.iter().flat_map(|&(t, _)| threads_of(t)).collect()
        };
        // How many: the programs count them down as the threads switch, and look the
        // map up no more once it is empty.
        let mut present: u32 = 0;
        for (tgid, tid) in threads {
            let p = OffCpuPresent {
                tgid,
                pad: 0,
                runtime: asleep_runtime(tgid, tid).unwrap_or(NO_RUNTIME),
            };
            match self.engine.hash_insert("present", tid, p) {
                Ok(()) => present += 1,
                Err(_) => self.present_dropped += 1,
            }
        }
        self.config = OffCpuConfig {
            window_start: now_ns,
            open: 1,
            present,
            window_end: 0,
        };
        self.engine.array_set("config", 0, self.config)
    }

    /// Closes the window at `now_ns` ([`crate::now_ns`]): from then on no block begins,
    /// and the blocks that end later count up to it. Call it as the rest of the
    /// recording stops, then [`OffCpu::finish`] with the same time, whenever that comes.
    pub fn close_window(&mut self, now_ns: u64) -> Result<(), Error> {
        // The kernel's copy: its `present` count is the programs' by now.
        let mut c = self
            .engine
            .array::<OffCpuConfig>("config")?
            .first()
            .copied()
            .unwrap_or(self.config);
        c.window_end = now_ns;
        self.engine.array_set("config", 0, c)?;
        self.config.window_end = now_ns;
        Ok(())
    }

    /// Detaches the program and reads what it summed, with the blocks still in progress
    /// counted up to `end_ns`. Call it at `end_ns` (`now_ns()`): a block that ended
    /// between `end_ns` and the call is summed whole, as [`BlockKind::Ended`] (the
    /// kernel's sums cannot be cut afterwards).
    pub fn finish(mut self, end_ns: u64) -> Result<OffCpuData, Error> {
        self.engine.detach()?;
        let e = &self.engine;
        let sums: Vec<(OffCpuKey, OffCpuSum)> = e.hash_entries("blocks")?;
        let starts: Vec<(u32, OffCpuStart)> = e.hash_entries("start")?;
        let comms: Vec<(u32, Comm)> = e.hash_entries("threads")?;
        let present: Vec<(u32, OffCpuPresent)> = e.hash_entries("present")?;
        let slots = e.dropped()?;
        let mut stacks = e.stacks("stacks")?;
        let mut out = OffCpuData::default();
        for (k, v) in sums {
            let kind = match k.kind {
                KIND_ENDED => BlockKind::Ended,
                KIND_BEFORE_WINDOW => BlockKind::BeforeWindow,
                _ => continue,
            };
            out.blocks.push(Blocked {
                tgid: k.tgid,
                tid: k.tid,
                user: stacks.get(k.ustack, v.count),
                kernel: stacks.get(k.kstack, v.count),
                ns: v.ns,
                count: v.count,
                kind,
            });
        }
        let c = self.config;
        // Blocks still in progress: one per thread; the same thread and stacks as a sum
        // above stay a row of their own (their kind differs).
        for (tid, s) in starts {
            // A thread that ran since (its switch-in unseen: see end_wait in the
            // C file) ended its block that much CPU time before now.
            let ran = runtime(s.tgid, tid)
                .and_then(|r| r.checked_sub(s.runtime))
                .filter(|&r| r > 0);
            let found = match ran {
                None => in_progress(&c, s.ts, end_ns),
                Some(r) => ended_unseen(&c, s.ts, end_ns.saturating_sub(r)),
            };
            let Some((ns, kind)) = found else {
                continue;
            };
            if ns < self.min_block_ns {
                continue;
            }
            out.blocks.push(Blocked {
                tgid: s.tgid,
                tid,
                user: stacks.get(s.ustack, 1),
                kernel: stacks.get(s.kstack, 1),
                ns,
                count: 1,
                kind,
            });
        }
        out.blocks.sort_by(|a, b| {
            (a.tgid, a.tid, a.kind, &a.user, &a.kernel)
                .cmp(&(b.tgid, b.tid, b.kind, &b.user, &b.kernel))
        });
        out.comms = comms
            .into_iter()
            .map(|(tid, c)| (tid, comm_text(&c.comm)))
            .collect();
        let blocked: HashSet<u32> = out.blocks.iter().map(|b| b.tid).collect();
        out.silent = present
            .into_iter()
            .filter(|(tid, _)| !blocked.contains(tid) && !out.comms.contains_key(tid))
            .map(|(tid, p)| (p.tgid, tid))
            .collect();
        out.silent.sort_unstable();
        let slot = |i: usize| slots.get(i).copied().unwrap_or(0);
        out.dropped = Dropped {
            blocks: slot(DROP_BLOCKS),
            starts: slot(DROP_STARTS),
            threads: slot(DROP_THREADS) + self.present_dropped,
            targets: slot(DROP_TARGETS),
            stacks: stacks.errors(),
        };
        Ok(out)
    }
}

/// A block switched out at `ts` and still out at `end`: its time in the window and its
/// kind, `None` when none of it is in the window.
fn in_progress(c: &OffCpuConfig, ts: u64, end: u64) -> Option<(u64, BlockKind)> {
    if c.open == 0 || end <= c.window_start {
        return None;
    }
    if ts < c.window_start {
        Some((end - c.window_start, BlockKind::BeforeWindow))
    } else {
        Some((end.checked_sub(ts)?, BlockKind::InProgressAtEnd))
    }
}

/// A block switched out at `ts` whose thread resumed unseen at `end`: its time in the
/// window and its kind, `None` when none of it is in the window.
fn ended_unseen(c: &OffCpuConfig, ts: u64, end: u64) -> Option<(u64, BlockKind)> {
    let (ns, kind) = in_progress(c, ts, end)?;
    let kind = match kind {
        BlockKind::InProgressAtEnd => BlockKind::Ended,
        k => k,
    };
    Some((ns, kind)).filter(|&(ns, _)| ns > 0)
}

/// Thread `tid`'s CPU time in ns (`se.sum_exec_runtime`: the first field of
/// `/proc/TGID/task/TID/schedstat`), `None` when it is gone.
fn runtime(tgid: u32, tid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{tgid}/task/{tid}/schedstat")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// [`runtime`] of a thread that is asleep (not running or runnable: its state is not
/// `R`), `None` otherwise.
fn asleep_runtime(tgid: u32, tid: u32) -> Option<u64> {
    let state = target::thread_state(i32::try_from(tgid).ok()?, i32::try_from(tid).ok()?)?;
    (state != 'R').then(|| runtime(tgid, tid)).flatten()
}

/// A comm's bytes up to the first NUL, lossily as text.
fn comm_text(b: &[u8; 16]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// (tgid, tid) of each thread of process `tgid` (none when it is gone).
fn threads_of(tgid: u32) -> Vec<(u32, u32)> {
    let Ok(pid) = i32::try_from(tgid) else {
        return Vec::new();
    };
    target::threads_of(pid)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|tid| u32::try_from(tid).ok())
        .filter(|&t| t != 0)
        .map(|tid| (tgid, tid))
        .collect()
}

/// `NO_STACK` is what the C file's `HWPROF_NO_STACK` is.
const _: () = assert!(NO_STACK == -1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_progress_counts_inside_the_window_only() {
        let c = OffCpuConfig {
            window_start: 1000,
            open: 1,
            ..OffCpuConfig::default()
        };
        assert_eq!(
            in_progress(&c, 1500, 4000),
            Some((2500, BlockKind::InProgressAtEnd))
        );
        assert_eq!(
            in_progress(&c, 500, 4000),
            Some((3000, BlockKind::BeforeWindow))
        );
        assert_eq!(in_progress(&c, 500, 900), None);
        let closed = OffCpuConfig::default();
        assert_eq!(in_progress(&closed, 500, 4000), None);
    }

    #[test]
    fn comms_stop_at_the_first_nul() {
        let mut b = [0u8; 16];
        b[..5].copy_from_slice(b"sleep");
        assert_eq!(comm_text(&b), "sleep");
        assert_eq!(comm_text(&[b'x'; 16]), "x".repeat(16));
    }
}
