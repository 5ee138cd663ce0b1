//! Call latency computed in the kernel (`src/c/latency.bpf.c`): one function's exact
//! call and return counts, the durations of its calls in two histograms (log2 of
//! microseconds, as bcc's funclatency draws them, and HdrHistogram's buckets, from which
//! [`LatencyData::histogram`] rebuilds the very histogram, and so the percentiles, that
//! recording every duration would give), and only the calls slower than a threshold
//! crossing to user space, through a BPF ring buffer, with their user stacks.
//!
//! Calls are paired per thread with a stack of the calls in progress (recursion pairs
//! innermost first), as `hwprof probe`'s perf-event path pairs hits: a return whose call
//! began before tracing is counted as a return and not timed. A slow call's stack is
//! the function's address (where the call entered) followed by the user stack at its
//! return (the caller's return address, then its callers): the stack at its entry,
//! taken only for the calls that turn out slow.
//!
//! Attach the programs either to perf events of uprobes defined in tracefs
//! ([`Latency::attach_entry_event`]: they then run in what that definition's events
//! follow, a command's children and threads, as hwprof's perf-event path does) or to a binary
//! for one process or all ([`Latency::attach`]). A [`Gate`] opens and closes the
//! window in which calls count: at once, or at a held command's `exec`.
//!
//! Bounded: every map has `max_entries`; what did not fit is counted in
//! [`LatencyDropped`].

use std::os::fd::BorrowedFd;
use std::path::Path;

use hdrhistogram::Histogram;

use crate::engine::{Engine, Loader, Ring, StackErrors, UprobeAt, objects};
use crate::error::Error;
use crate::gate::Gate;
use crate::maps::LatencyEvent;

/// What to measure, and the maps' sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencyOptions {
    /// Calls at least this long are sent to user space (`None`: none is).
    pub threshold_ns: Option<u64>,
    /// Take the user stack (frame pointers) of each slow call.
    pub user_stacks: bool,
    /// Threads with calls in progress at once.
    pub max_threads: u32,
    /// Distinct HdrHistogram buckets of the durations of 2^36 ns (68.7 s) or more (those
    /// below have an array of their own).
    pub max_slots: u32,
    /// Distinct stacks of the slow calls. Each takes 127 × 8 bytes of kernel memory,
    /// allocated at load.
    pub max_stacks: u32,
    /// Bytes of the ring buffer of slow calls (a power of two and of the page size; each
    /// call takes 48).
    pub ring_bytes: u32,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions {
            threshold_ns: None,
            user_stacks: false,
            max_threads: 10240,
            max_slots: 1024,
            max_stacks: 2048,
            ring_bytes: 1 << 20,
        }
    }
}

/// A call slower than the threshold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowCall {
    /// The process.
    pub tgid: u32,
    /// The thread.
    pub tid: u32,
    /// Its duration.
    pub ns: u64,
    /// When it returned (`CLOCK_MONOTONIC` ns).
    pub time: u64,
    /// Its user stack, leaf first: the function's address, then the stack at its
    /// return (empty without [`LatencyOptions::user_stacks`]; the address alone when
    /// that stack could not be read: see [`LatencyDropped::stacks`]).
    pub user: Vec<u64>,
}

/// What did not fit or could not be read; all zero in a complete answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyDropped {
    /// Calls whose thread found no room among the threads with calls in progress
    /// (`max_threads`): counted, not timed.
    pub threads: u64,
    /// Slow calls the ring buffer had no room for (timed and in the histograms, not
    /// listed).
    pub events: u64,
    /// Calls nested more than 64 deep in their thread (recursion: the kernel sets no
    /// return probe on them), or with no room for
    /// their thread's nested calls: counted, not timed (with no room, its thread's
    /// next returns may pair with the wrong calls).
    pub depth: u64,
    /// Durations whose HdrHistogram bucket found no room (`max_slots`): in the log2
    /// histogram, not in [`LatencyData::histogram`].
    pub slots: u64,
    /// Stacks of slow calls that are missing, by cause.
    pub stacks: StackErrors,
}

impl LatencyDropped {
    /// Nothing was dropped and every stack asked for was read.
    pub fn is_empty(&self) -> bool {
        *self == LatencyDropped::default()
    }
}

/// What the kernel measured (see [`Latency::finish`]).
#[derive(Clone, Debug, Default)]
pub struct LatencyData {
    /// Entries seen: the exact call count.
    pub calls: u64,
    /// Returns seen (a call in progress when tracing began returns without an entry).
    pub returns: u64,
    /// Durations by log2 of microseconds: slot `s` (1 to 64) counts the calls whose
    /// duration in µs has bit length `s`, with 0 µs in slot 1 (`0 -> 1`, then `2 -> 3`,
    /// `4 -> 7`, ...); slot 0 is unused.
    pub log2_us: Vec<u64>,
    /// Durations by HdrHistogram counts index (3 significant digits, unit 1 ns).
    pub hdr: Vec<(u32, u64)>,
    /// The slow calls, in the order they returned.
    pub slow: Vec<SlowCall>,
    /// What did not fit.
    pub dropped: LatencyDropped,
}

impl LatencyData {
    /// Calls timed (entry and return both seen).
    pub fn timed(&self) -> u64 {
        self.log2_us.iter().sum()
    }

    /// The durations as an HdrHistogram of 3 significant digits: the same histogram
    /// (every count in the same bucket, the same percentiles and max) as one recording
    /// each duration, less what [`LatencyDropped::slots`] counts.
    pub fn histogram(&self) -> Histogram<u64> {
        let mut h = latency_histogram();
        for &(i, n) in &self.hdr {
            // An auto-resizing histogram only fails on counts overflowing u64.
            let _ = h.record_n(hdr_value(i), n);
        }
        h
    }
}

/// The histogram [`LatencyData::histogram`] fills: 3 significant digits, auto-resizing.
pub fn latency_histogram() -> Histogram<u64> {
    let mut h = Histogram::<u64>::new(HDR_SIGFIG).expect("3 significant digits are valid");
    h.auto(true);
    h
}

/// The significant digits of latency.bpf.c's `hdr` buckets.
const HDR_SIGFIG: u8 = 3;
/// log2 of half their sub-buckets (2048 for 3 significant digits).
const HDR_HALF_SHIFT: u32 = 10;

/// The smallest value of HdrHistogram counts index `i` (3 significant digits, unit 1):
/// the inverse of `hdr_index` in latency.bpf.c.
pub fn hdr_value(i: u32) -> u64 {
    let half = 1u64 << HDR_HALF_SHIFT;
    let bucket = i64::from(i >> HDR_HALF_SHIFT) - 1;
    let sub = u64::from(i) & (half - 1);
    match bucket {
        b if b < 0 => sub,
        b => (sub + half).checked_shl(b as u32).unwrap_or(u64::MAX),
    }
}

/// latency.bpf.c's `hdr_index`, for the tests.
#[cfg(test)]
fn hdr_index(v: u64) -> u32 {
    let x = v | ((1u64 << (HDR_HALF_SHIFT + 1)) - 1);
    let bucket = 63 - x.leading_zeros() - HDR_HALF_SHIFT;
    let sub = v >> bucket;
    // Unsigned and wrapping, as in C: below 2048 the index is the value itself.
    ((bucket + 1) << HDR_HALF_SHIFT).wrapping_add(sub.wrapping_sub(1u64 << HDR_HALF_SHIFT) as u32)
}

/// `dropped` slots of latency.bpf.c.
const DROP_THREADS: usize = 0;
const DROP_EVENTS: usize = 1;
const DROP_DEPTH: usize = 2;
const DROP_HDR: usize = 3;

/// The latency programs of one function, loaded.
#[derive(Debug)]
pub struct Latency {
    engine: Engine,
    gate: Option<Gate>,
}

impl Latency {
    /// Loads the programs with `o`'s options (nothing is attached but the `exec`
    /// tracepoint [`Gate::open_at_exec`] needs; the gate is open).
    pub fn load(o: &LatencyOptions) -> Result<Latency, Error> {
        let at_least = |n: u32| n.max(1);
        let mut engine = Loader::new(&objects::LATENCY)
            .global("threshold_ns", o.threshold_ns.unwrap_or(u64::MAX))
            .global("user_stacks", o.user_stacks)
            .max_entries("calls", at_least(o.max_threads))
            // Threads with nested calls in progress (recursion): an eighth of them.
            .max_entries("nested", (o.max_threads / 8).max(128))
            .max_entries("hdr", at_least(o.max_slots))
            .max_entries("stacks", at_least(o.max_stacks))
            .max_entries("events", o.ring_bytes)
            .load()?;
        let gate = Gate::attach(&mut engine, "latency_exec")?;
        Ok(Latency {
            engine,
            gate: Some(gate),
        })
    }

    /// The program's [`Gate`], to open and close its window (once only: `None` after).
    pub fn gate(&mut self) -> Option<Gate> {
        self.gate.take()
    }

    /// Attaches the entry program to a perf event of the function's uprobe as defined
    /// in tracefs ([`Engine::attach_perf_event`]: one fd that no task inherits); it
    /// stays attached until that fd is closed.
    pub fn attach_entry_event(&mut self, event: BorrowedFd<'_>) -> Result<(), Error> {
        self.engine.attach_perf_event("latency_entry", event)
    }

    /// [`Latency::attach_entry_event`] for the return program and the uretprobe.
    pub fn attach_return_event(&mut self, event: BorrowedFd<'_>) -> Result<(), Error> {
        self.engine.attach_perf_event("latency_return", event)
    }

    /// Attaches the programs to `at` in `binary`, for process `pid` (all its threads;
    /// not its children) or every process that maps it.
    pub fn attach(
        &mut self,
        binary: &Path,
        at: UprobeAt<'_>,
        pid: Option<u32>,
    ) -> Result<(), Error> {
        self.engine
            .attach_uprobe("latency_entry", binary, at, pid)?;
        self.engine.attach_uprobe("latency_return", binary, at, pid)
    }

    /// The ring buffer of slow calls, to drain while the workload runs (each record is
    /// a [`LatencyEvent`]); once only.
    pub fn ring(&mut self) -> Result<Ring, Error> {
        self.engine.ring("events")
    }

    /// The kernel's ids of its programs (see [`Engine::program_ids`]).
    pub fn program_ids(&self) -> Vec<u32> {
        self.engine.program_ids()
    }

    /// Detaches what [`Latency::attach`] attached and reads what was measured; `slow`
    /// is what was drained from the ring, in any order.
    pub fn finish(mut self, slow: Vec<LatencyEvent>) -> Result<LatencyData, Error> {
        self.engine.detach()?;
        let e = &self.engine;
        let counts = e.counters("counts")?;
        let slots = e.dropped()?;
        let slot = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        let mut hdr: Vec<(u32, u64)> = (e.counters("hdr_low")?.into_iter().enumerate())
            .filter(|&(_, n)| n > 0)
            .filter_map(|(i, n)| Some((u32::try_from(i).ok()?, n)))
            .collect();
        hdr.extend(e.hash_entries::<u32, u64>("hdr")?);
        hdr.sort_unstable();
        let mut slow = slow;
        slow.sort_by_key(|s| s.time);
        let mut stacks = e.stacks("stacks")?;
        let slow = slow
            .iter()
            .map(|s| {
                let at_return = stacks.get(s.ustack, 1);
                let user = match s.ustack == crate::engine::NO_STACK {
                    true => Vec::new(),
                    false => std::iter::once(s.ip).chain(at_return).collect(),
                };
                SlowCall {
                    tgid: s.tgid,
                    tid: s.tid,
                    ns: s.ns,
                    time: s.time,
                    user,
                }
            })
            .collect();
        Ok(LatencyData {
            calls: slot(&counts, 0),
            returns: slot(&counts, 1),
            log2_us: e.counters("hist")?,
            hdr,
            slow,
            dropped: LatencyDropped {
                threads: slot(&slots, DROP_THREADS),
                events: slot(&slots, DROP_EVENTS),
                depth: slot(&slots, DROP_DEPTH),
                slots: slot(&slots, DROP_HDR),
                stacks: stacks.errors(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value's index gives back the lowest value of its HdrHistogram bucket, so
    /// that a histogram rebuilt from the kernel's indexes equals one of the values.
    #[test]
    fn hdr_indexes_are_hdrhistogram_buckets() {
        let h = latency_histogram();
        let mut values: Vec<u64> = (0..5000).collect();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        values.extend([u64::MAX, u64::MAX / 2, 1 << 40, (1 << 40) - 1]);
        for v in values {
            assert_eq!(hdr_value(hdr_index(v)), h.lowest_equivalent(v), "value {v}");
        }
        let mut raw = latency_histogram();
        let mut rebuilt = latency_histogram();
        for v in [
            1u64,
            999,
            1_500,
            20_000,
            20_001,
            1_000_000,
            1_234_567,
            9_000_000_000,
        ] {
            raw.record(v).unwrap();
            rebuilt.record(hdr_value(hdr_index(v))).unwrap();
        }
        for q in [0.5, 0.9, 0.99, 1.0] {
            assert_eq!(
                raw.value_at_quantile(q),
                rebuilt.value_at_quantile(q),
                "q {q}"
            );
        }
        assert_eq!(raw.max(), rebuilt.max());
    }
}
