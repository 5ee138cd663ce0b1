//! Pairing switch-outs with their ends: how long each thread stayed off CPU.
//!
//! Every `sched:sched_switch` sample is taken in the context of the task switching out
//! (its tid, time and stack are the blocked thread's); its raw data names the task that
//! comes in (`next_pid`). A thread's block ends at the first of:
//! - its switch-in: a PERF_RECORD_SWITCH (`--switch-events`, which `hwprof offcpu`
//!   records), or a switch whose `next_pid` is the thread (seen when recording with `-a`,
//!   or when another traced thread hands the CPU over to it); both exact;
//! - a sign that the thread runs: an on-CPU (cpu-clock) sample of it, at most one
//!   sampling interval after it came back;
//! - the thread's own next switch-out (per-thread recordings see only switch-outs; the
//!   block then also counts the thread's run time since it woke, which the cpu-clock
//!   samples above cut short for threads that run long).
//!
//! All switch-outs count, whether the thread blocked or was preempted (as perf's and bcc's
//! offcputime do by default). The idle task (tid 0, the swapper) is no thread that
//! waits: its switch-outs, switch-ins and samples are ignored, and a switch to it ends
//! nobody's block.
//!
//! At the recording's edges, [`pair`] (like bcc's offcputime and `perf record
//! --off-cpu`, which only count a wait whose switch-out and switch-in they both saw)
//! drops a thread's last switch-out with no end and a switch-in with no switch-out
//! before it. [`pair_within`], given the window the recording covered ([`Edges`]),
//! counts the time inside it instead: a wait in progress when the window opened (the
//! first event of a thread that existed then is an exact switch-in) from the window's
//! start ([`Early`]), a
//! wait still in progress when it closed up to its end (unless the thread exited: its
//! last switch-out is its end), and a thread that existed all through the window and
//! had no event in it as blocked for the whole window.

use std::collections::{HashMap, HashSet};

/// One event of the pairing: a `sched_switch` sample (a switch-out), or a sign that a
/// thread runs (an on-CPU sample, a switch-in record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// Timestamp (ns).
    pub time: u64,
    /// The thread switching out.
    pub tid: u32,
    /// The thread switching in, when known: from a switch-out's raw data, or the thread
    /// itself for an exact switch-in (a PERF_RECORD_SWITCH), unlike an on-CPU sample.
    pub next_pid: Option<u32>,
    /// A switch-out; false for an on-CPU sample, which only ends the thread's block.
    pub out: bool,
}

/// One off-CPU interval: the index of the switch-out sample and its length (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Index of the switch-out in the input slice.
    pub index: usize,
    /// Nanoseconds off CPU.
    pub ns: u64,
}

/// The window a recording covered, and what the records said about threads' lives, for
/// the waits in progress at its edges ([`pair_within`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Edges {
    /// When the events were enabled (ns, the samples' clock).
    pub start: u64,
    /// When they were disabled (ns, the samples' clock).
    pub end: u64,
    /// The threads that existed when the window opened (read from /proc just before):
    /// the only ones whose first switch-in can end a wait in progress then (a switch's
    /// `next_pid` also names threads that are not traced).
    pub present: HashSet<u32>,
    /// Threads created inside the window (a FORK record the kernel wrote): no wait of
    /// theirs was in progress when it opened, whatever `present` says of their tid.
    pub born: HashSet<u32>,
    /// Threads that exited inside it (an EXIT record): their last switch-out is their
    /// end, not a wait.
    pub exited: HashSet<u32>,
    /// Threads known to have existed from before the window opened to after it closed
    /// (the target's threads, read from /proc before and after): one with no event at all
    /// in the window was off CPU for all of it.
    pub through: Vec<u32>,
}

/// A wait in progress when the window opened: no switch-out of it was recorded, so it
/// has no recorded stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Early {
    /// The waiting thread.
    pub tid: u32,
    /// Nanoseconds off CPU inside the window: from its start to the thread's switch-in,
    /// or the whole window.
    pub ns: u64,
}

/// What [`pair_within`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Paired {
    /// The waits that began with a recorded switch-out, in the order of their times.
    pub blocks: Vec<Block>,
    /// The waits in progress when the window opened, in the order of their ends.
    pub early: Vec<Early>,
}

/// Pairs switch-outs with their ends (see the module docs): only waits whose
/// switch-out and end were both recorded, as bcc's offcputime counts. The blocks come in
/// the order of their switch-outs' times.
pub fn pair(switches: &[Switch]) -> Vec<Block> {
    pair_inner(switches, None).blocks
}

/// Pairs switch-outs with their ends, counting the time of the waits in progress at the
/// window's edges (see the module docs). Switch-ins mark themselves exact with
/// `next_pid` their own tid ([`Switch`]); an on-CPU sample is no sign that a thread was
/// waiting before it (it may have run since the window opened).
pub fn pair_within(switches: &[Switch], edges: &Edges) -> Paired {
    pair_inner(switches, Some(edges))
}

fn pair_inner(switches: &[Switch], edges: Option<&Edges>) -> Paired {
    let mut order: Vec<usize> = (0..switches.len()).collect();
    order.sort_by_key(|&i| switches.get(i).map_or(0, |s| s.time));
    let mut p = Pairing {
        edges,
        pending: HashMap::new(),
        seen: HashSet::new(),
        out: Paired::default(),
    };
    for i in order {
        let Some(s) = switches.get(i) else { continue };
        if s.tid != 0 {
            if !s.out {
                p.switch_in(s.tid, s.time, s.next_pid == Some(s.tid));
                continue;
            }
            p.switch_out(s.tid, s.time, i);
        }
        // (The idle task's switch-outs only say whom it hands the CPU to.)
        if let Some(n) = s.next_pid.filter(|&n| n != 0 && n != s.tid) {
            p.switch_in(n, s.time, true);
        }
    }
    let Pairing {
        pending,
        seen,
        mut out,
        ..
    } = p;
    if let Some(e) = edges {
        for (tid, (j, t0)) in pending {
            if !e.exited.contains(&tid) {
                out.blocks.push(Block {
                    index: j,
                    ns: e.end.saturating_sub(t0),
                });
            }
        }
        for &tid in &e.through {
            if tid != 0 && !seen.contains(&tid) {
                out.early.push(Early {
                    tid,
                    ns: e.end.saturating_sub(e.start),
                });
            }
        }
    }
    out.blocks
        .sort_by_key(|b| (switches.get(b.index).map_or(0, |s| s.time), b.index));
    out
}

/// The state of one pass of [`pair_inner`].
struct Pairing<'a> {
    edges: Option<&'a Edges>,
    /// Per thread, its switch-out with no end yet: (index, time).
    pending: HashMap<u32, (usize, u64)>,
    /// Threads with an event so far.
    seen: HashSet<u32>,
    out: Paired,
}

impl Pairing<'_> {
    /// `tid` switches out at `time` (the switch's index `i`); a pending block of its ends
    /// there.
    fn switch_out(&mut self, tid: u32, time: u64, i: usize) {
        self.seen.insert(tid);
        if let Some((j, t0)) = self.pending.insert(tid, (i, time)) {
            self.out.blocks.push(Block {
                index: j,
                ns: time.saturating_sub(t0),
            });
        }
    }

    /// `tid` is seen back on CPU at `time` (`exact`: it switched in then): the end of its
    /// pending block, or, when it is the thread's first event, of a wait in progress since
    /// the window opened.
    fn switch_in(&mut self, tid: u32, time: u64, exact: bool) {
        let first = self.seen.insert(tid);
        if let Some((j, t0)) = self.pending.remove(&tid) {
            self.out.blocks.push(Block {
                index: j,
                ns: time.saturating_sub(t0),
            });
        } else if let Some(e) = self.edges
            && first
            && exact
            && e.present.contains(&tid)
            && !e.born.contains(&tid)
        {
            self.out.early.push(Early {
                tid,
                ns: time.saturating_sub(e.start),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(time: u64, tid: u32, next: Option<u32>) -> Switch {
        Switch {
            time,
            tid,
            next_pid: next,
            out: true,
        }
    }

    #[test]
    fn an_on_cpu_sample_ends_the_block() {
        let mut on = sw(300, 7, None);
        on.out = false;
        let s = [sw(0, 7, None), on, sw(5000, 7, None), sw(9000, 7, None)];
        assert_eq!(
            pair(&s),
            vec![Block { index: 0, ns: 300 }, Block { index: 2, ns: 4000 }]
        );
    }

    #[test]
    fn exact_switch_in_wins_over_the_next_switch_out() {
        // 10 switches out at 100, 11 hands the CPU to 10 at 150, 10 switches out at 170.
        let s = [
            sw(100, 10, Some(11)),
            sw(170, 10, Some(0)),
            sw(150, 11, Some(10)),
        ];
        let b = pair(&s);
        assert_eq!(b, vec![Block { index: 0, ns: 50 }]);
    }

    #[test]
    fn per_thread_falls_back_to_the_next_switch_out_and_drops_the_last() {
        let s = [sw(0, 7, None), sw(1000, 7, None), sw(5000, 7, None)];
        let b = pair(&s);
        assert_eq!(
            b,
            vec![Block { index: 0, ns: 1000 }, Block { index: 1, ns: 4000 }]
        );
    }

    fn on(time: u64, tid: u32) -> Switch {
        Switch {
            time,
            tid,
            next_pid: None,
            out: false,
        }
    }

    fn switch_in(time: u64, tid: u32) -> Switch {
        Switch {
            next_pid: Some(tid),
            ..on(time, tid)
        }
    }

    /// The idle task (tid 0) switches out whenever a CPU gets work and back in when it
    /// has none: never a blocked thread, however its events pair up, and a switch to it
    /// ends nobody's block. Each case fails if one of the exclusions goes.
    #[test]
    fn the_idle_task_never_blocks() {
        let edges = Edges {
            start: 0,
            end: 10_000,
            through: vec![0],
            present: [0, 3, 4].into(),
            ..Edges::default()
        };
        let cases: [&[Switch]; 4] = [
            // Out, then seen running (a cpu-clock sample of the idle task).
            &[sw(100, 0, Some(3)), on(900, 0)],
            // Out, then out again.
            &[sw(100, 0, Some(3)), sw(900, 0, Some(4))],
            // Out, then handed the CPU back (next_pid 0).
            &[sw(100, 0, Some(3)), sw(900, 3, Some(0))],
            // Out, and still out when the window closes.
            &[sw(100, 0, Some(3))],
        ];
        for (i, s) in cases.iter().enumerate() {
            assert_eq!(pair(s), [], "case {i}");
            let p = pair_within(s, &edges);
            let idle = |t: u32| t == 0;
            assert!(
                !p.blocks.iter().any(|b| idle(s[b.index].tid))
                    && !p.early.iter().any(|e| idle(e.tid)),
                "case {i}: {p:?}"
            );
        }
        // Thread 3 blocked from 950 and handed the CPU to the idle task; it comes back at
        // 1200: its block is 250 ns, not cut short by the switch to 0.
        let s = [sw(950, 3, Some(0)), switch_in(1200, 3)];
        assert_eq!(pair(&s), [Block { index: 0, ns: 250 }]);
        // A switch-in record of the idle task (system-wide) is no wait either.
        let p = pair_within(&[switch_in(500, 0)], &edges);
        assert_eq!(p, Paired::default());
    }

    fn edges(start: u64, end: u64) -> Edges {
        Edges {
            start,
            end,
            present: (1..=9).collect(),
            ..Edges::default()
        }
    }

    /// Waits in progress at the window's edges count for their time inside it.
    #[test]
    fn waits_at_the_edges_count_inside_the_window() {
        let e = edges(1000, 10_000);
        // 7 was off CPU when the window opened and switches in at 4000; it blocks again
        // at 6000 and is still off CPU at the end.
        let s = [switch_in(4000, 7), sw(6000, 7, None)];
        let p = pair_within(&s, &e);
        assert_eq!(p.early, [Early { tid: 7, ns: 3000 }]);
        assert_eq!(p.blocks, [Block { index: 1, ns: 4000 }]);
        // Without the window, neither counts (bcc's and perf's offcputime).
        assert_eq!(pair(&s), []);
        // A thread handed the CPU by another (next_pid) is exact too.
        let p = pair_within(&[sw(2500, 8, Some(9))], &e);
        assert_eq!(p.early, [Early { tid: 9, ns: 1500 }]);
        assert_eq!(p.blocks, [Block { index: 0, ns: 7500 }]);
        // Not a thread that was not there when the window opened (another process's,
        // which a per-process recording names as next_pid only).
        let p = pair_within(&[sw(2500, 8, Some(10))], &e);
        assert_eq!(p.early, []);
    }

    /// What is not a wait at the edges: a thread first seen running (it may have run
    /// since the window opened), one created in the window, one whose last switch-out
    /// is its exit.
    #[test]
    fn what_is_no_wait_at_the_edges() {
        let mut e = edges(1000, 10_000);
        let p = pair_within(&[on(1200, 7), switch_in(5000, 7)], &e);
        assert_eq!(p, Paired::default());
        e.born.insert(8);
        let p = pair_within(&[switch_in(3000, 8)], &e);
        assert_eq!(p, Paired::default());
        e.exited.insert(9);
        let s = [sw(2000, 9, None), switch_in(2100, 9), sw(2500, 9, None)];
        let p = pair_within(&s, &e);
        assert_eq!(p.blocks, [Block { index: 0, ns: 100 }]);
        assert_eq!(p.early, []);
    }

    /// A thread that existed all through the window and had no event in it was off CPU
    /// for all of it; one with events is paired from them.
    #[test]
    fn a_thread_with_no_event_was_off_cpu_all_window() {
        let e = Edges {
            through: vec![7, 8],
            ..edges(1000, 10_000)
        };
        let p = pair_within(&[sw(5000, 8, None)], &e);
        assert_eq!(p.early, [Early { tid: 7, ns: 9000 }]);
        assert_eq!(p.blocks, [Block { index: 0, ns: 5000 }]);
    }
}
