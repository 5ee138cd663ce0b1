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
//! offcputime do by default). A thread's last switch-out with no end (it exited, or the
//! recording stopped) is dropped.

use std::collections::HashMap;

/// One event of the pairing: a `sched_switch` sample (a switch-out), or a sign that a
/// thread runs (an on-CPU sample, a switch-in record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// Timestamp (ns).
    pub time: u64,
    /// The thread switching out.
    pub tid: u32,
    /// The thread switching in, when the raw data says.
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

/// Pairs switch-outs with their ends (see the module docs). Samples of the idle task
/// (tid 0) are ignored. The blocks come in the order of their switch-outs' times.
pub fn pair(switches: &[Switch]) -> Vec<Block> {
    let mut order: Vec<usize> = (0..switches.len()).collect();
    order.sort_by_key(|&i| switches.get(i).map_or(0, |s| s.time));
    let mut pending: HashMap<u32, (usize, u64)> = HashMap::new();
    let mut blocks = Vec::new();
    for i in order {
        let Some(s) = switches.get(i) else { continue };
        if s.tid != 0 && !s.out {
            if let Some((j, t0)) = pending.remove(&s.tid) {
                blocks.push(Block {
                    index: j,
                    ns: s.time.saturating_sub(t0),
                });
            }
            continue;
        }
        if s.tid != 0 {
            if let Some((j, t0)) = pending.insert(s.tid, (i, s.time)) {
                blocks.push(Block {
                    index: j,
                    ns: s.time.saturating_sub(t0),
                });
            }
        }
        if let Some(n) = s.next_pid.filter(|&n| n != 0 && n != s.tid) {
            if let Some((j, t0)) = pending.remove(&n) {
                blocks.push(Block {
                    index: j,
                    ns: s.time.saturating_sub(t0),
                });
            }
        }
    }
    blocks.sort_by_key(|b| (switches.get(b.index).map_or(0, |s| s.time), b.index));
    blocks
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
        assert!(pair(&[sw(5, 0, Some(3))]).is_empty());
    }
}
