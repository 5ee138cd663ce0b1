//! Pairing entry and return hits per thread into calls and their durations (the
//! perf-event path; the BPF engine pairs them in the kernel), and what both paths give:
//! [`FuncResult`].

use std::collections::HashMap;

use hdrhistogram::Histogram;
use hwprof_sampler::probe::Func;

/// A hit's stack in [`super::stacks::Stacks`]: its addresses while recording, its
/// locations once normalized there.
pub type StackRef = u32;

/// The stack of a hit without one.
pub const NO_STACK: StackRef = u32::MAX;

/// One probe hit (a sample of an entry or return event).
#[derive(Debug, Clone)]
pub struct Hit {
    /// Sample time (ns, perf clock).
    pub time: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Index of the event in the event list.
    pub event: usize,
    /// The callchain, held by [`super::stacks::Stacks`] ([`NO_STACK`]
    /// without --stacks).
    pub stack: StackRef,
}

/// A call slower than the threshold.
#[derive(Debug, Clone)]
pub struct Slow {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Its duration in ns.
    pub duration_ns: u64,
    /// The entry's callchain.
    pub stack: StackRef,
}

/// The durations of the calls whose entry and return were both seen, as both engines
/// keep them: log2 buckets of microseconds and an HdrHistogram of 3 significant digits
/// (`hwprof_bpf::latency`'s, so that the kernel's and these give the same percentiles).
#[derive(Debug, Clone)]
pub struct Durations {
    /// Calls by the bit length of their duration in µs (at least 1; slot 0 unused).
    pub log2_us: Vec<u64>,
    /// Every duration (ns).
    pub hist: Histogram<u64>,
}

impl Default for Durations {
    fn default() -> Self {
        Durations {
            log2_us: vec![0; 65],
            hist: hwprof_bpf::latency::latency_histogram(),
        }
    }
}

impl Durations {
    /// Adds one duration (ns).
    pub fn record(&mut self, ns: u64) {
        let us = ns / 1000;
        let slot = (64 - us.leading_zeros() as usize).max(1);
        if let Some(c) = self.log2_us.get_mut(slot) {
            *c += 1;
        }
        // An auto-resizing histogram only fails on counts overflowing u64.
        let _ = self.hist.record(ns);
    }

    /// Calls timed.
    pub fn timed(&self) -> u64 {
        self.log2_us.iter().sum()
    }
}

/// What was measured for one function.
#[derive(Debug, Default)]
pub struct FuncResult {
    /// Entries seen: the exact call count.
    pub calls: u64,
    /// Returns seen.
    pub returns: u64,
    /// Durations of the calls whose entry and return were both seen.
    pub durations: Durations,
    /// The calls slower than the threshold, in time order.
    pub slow: Vec<Slow>,
    /// Calls not timed because they were nested more than [`MAX_NESTING`] deep in their
    /// thread: the kernel sets no return probe on them.
    pub too_deep: u64,
}

/// The deepest a task's calls under return probes nest (the kernel's
/// `MAX_URETPROBE_DEPTH`): a call entered with that many in progress never returns
/// through its uretprobe.
pub const MAX_NESTING: usize = 64;

/// Sorts `hits` by time and pairs each thread's entries with its returns, innermost
/// first (a stack per thread and function, so recursion pairs right). A return with no
/// entry (the call began before we attached) is counted as a return only.
pub fn pair(hits: &mut [Hit], funcs: &[Func], threshold: Option<u64>) -> Vec<FuncResult> {
    hits.sort_by_key(|h| h.time);
    let mut out: Vec<FuncResult> = funcs.iter().map(|_| FuncResult::default()).collect();
    let mut open: HashMap<(u32, usize), Vec<usize>> = HashMap::new();
    // Calls in progress per thread, all functions together (the kernel's count).
    let mut nesting: HashMap<u32, usize> = HashMap::new();
    for (i, h) in hits.iter().enumerate() {
        for (fi, f) in funcs.iter().enumerate() {
            let Some(r) = out.get_mut(fi) else { continue };
            if h.event == f.entry {
                r.calls += 1;
                let n = nesting.entry(h.tid).or_default();
                if *n >= MAX_NESTING {
                    // No return will come: pushing it would pair the next returns with
                    // the wrong calls.
                    r.too_deep += 1;
                    continue;
                }
                *n += 1;
                open.entry((h.tid, fi)).or_default().push(i);
            } else if h.event == f.ret {
                r.returns += 1;
                let Some(ei) = open.get_mut(&(h.tid, fi)).and_then(Vec::pop) else {
                    continue;
                };
                if let Some(n) = nesting.get_mut(&h.tid) {
                    *n = n.saturating_sub(1);
                }
                let Some(e) = hits.get(ei) else { continue };
                let d = h.time.saturating_sub(e.time);
                r.durations.record(d);
                if threshold.is_some_and(|t| d >= t) {
                    r.slow.push(Slow {
                        pid: e.pid,
                        tid: e.tid,
                        duration_ns: d,
                        stack: e.stack,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(time: u64, tid: u32, event: usize) -> Hit {
        Hit {
            time,
            pid: 1,
            tid,
            event,
            stack: super::NO_STACK,
        }
    }

    /// The durations recorded, in order (each of these tests' values is its own
    /// HdrHistogram bucket).
    fn recorded(r: &FuncResult) -> Vec<u64> {
        let h = &r.durations.hist;
        h.iter_recorded().map(|v| v.value_iterated_to()).collect()
    }

    #[test]
    fn pairs_per_thread_and_recursion() {
        let f = [Func {
            target: "/x:f".into(),
            entry: 0,
            ret: 1,
        }];
        // tid 1: f(10) { f(20) ret 30 } ret 100; tid 2: ret 5 (began earlier), f(40) ret 41.
        let mut h = vec![
            hit(100, 1, 1),
            hit(10, 1, 0),
            hit(20, 1, 0),
            hit(30, 1, 1),
            hit(5, 2, 1),
            hit(40, 2, 0),
            hit(41, 2, 1),
        ];
        let r = pair(&mut h, &f, Some(50));
        assert_eq!(r[0].calls, 3);
        assert_eq!(r[0].returns, 4);
        assert_eq!(recorded(&r[0]), [1, 10, 90]);
        assert_eq!(r[0].durations.timed(), 3);
        assert_eq!(r[0].slow.len(), 1);
        assert_eq!(r[0].slow[0].duration_ns, 90);
    }

    /// 70 nested calls, of which the kernel returns from the outer 64: each return
    /// pairs with its own call (call k at time k returns at 200 - k), the inner 6 are
    /// counted and not timed.
    #[test]
    fn calls_nested_beyond_the_kernels_limit_are_not_timed() {
        let f = [Func {
            target: "/x:f".into(),
            entry: 0,
            ret: 1,
        }];
        let mut h: Vec<Hit> = (0..70).map(|k| hit(k, 1, 0)).collect();
        h.extend((0..64).map(|k| hit(200 - k, 1, 1)));
        let r = pair(&mut h, &f, None);
        assert_eq!((r[0].calls, r[0].returns, r[0].too_deep), (70, 64, 6));
        // 200 - 2k for k in 0..64: 74, 76, ..., 200.
        let want: Vec<u64> = (0..64).rev().map(|k| 200 - 2 * k).collect();
        assert_eq!(recorded(&r[0]), want);
    }
}
