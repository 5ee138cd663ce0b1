//! The timeline of a merged profile ([`crate::ProfileBuilder::timeline`]): every recorded
//! sample in file order as the merged sample it went into, with its own time and
//! period, for writers that place samples in time (the Firefox Profiler's tracks).
//!
//! **Runs.** A thread sampled at a steady pace in one place (a loop: most of a CPU
//! profile) records the same stack at every tick. Consecutive samples of one thread and
//! event that went into the same merged sample, each at most two sampling intervals
//! after the one before, are a run, kept as two entries: its first sample as recorded,
//! then one at the run's last time standing for the others (their count and summed
//! period). A writer that draws a stack from its sample's time to the next one's (the
//! Firefox Profiler's stack chart), adds counts (call trees) or divides a CPU time by
//! the time since the thread's previous sample (its CPU graph) shows the same stacks,
//! the same totals and the run's mean CPU use; a gap (the thread off CPU, a stack
//! elsewhere) ends a run, so that it is not averaged away. The timeline's size then
//! follows the recording's changes of stack, not its samples: 943,130 samples of a
//! two-thread loop are some 34,000 entries.
//!
//! The sampling interval is known for events sampled by frequency (1/freq: the kernel
//! sets the period so) and for `cpu-clock` and `task-clock` sampled by period (the
//! period is nanoseconds); samples of other events (tracepoints, a hardware event
//! sampled every N events) are each an entry.

use rustc_hash::FxHashMap as HashMap;

use hwprof_pmu::attr::{Attr, types};

/// One entry of a [`Timeline`]: a recorded sample, or the rest of a run (see the
/// module's doc): the merged sample it went into, its time, period and count (24
/// bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timed {
    /// Its time (ns), [`Timed::NO_TIME`] when not sampled; a run's rest: its last
    /// sample's.
    pub time: u64,
    /// Its period (as [`crate::Sample::period`] counts it); a run's rest: the sum of
    /// its samples'.
    pub period: u64,
    /// Its index in [`crate::Profile::samples`].
    pub sample: u32,
    /// Recorded samples it stands for (as [`crate::Sample::count`] counts them; at most
    /// `u32::MAX`).
    pub count: u32,
}

impl Timed {
    /// [`Timed::time`] of a sample without a time.
    pub const NO_TIME: u64 = u64::MAX;

    /// Its time, if sampled.
    pub fn time(&self) -> Option<u64> {
        (self.time != Timed::NO_TIME).then_some(self.time)
    }
}

/// `PERF_COUNT_SW_CPU_CLOCK` and `PERF_COUNT_SW_TASK_CLOCK`: periods in nanoseconds.
const CLOCKS: [u64; 2] = [0, 1];

/// The longest time (ns) between two samples of a run of an event of `attr`: two
/// sampling intervals; 0 when its interval is not known (no runs).
pub fn run_gap(attr: &Attr) -> u64 {
    if attr.sample_period == 0 {
        0
    } else if attr.freq {
        2_000_000_000 / attr.sample_period
    } else if attr.type_ == types::SOFTWARE && CLOCKS.contains(&attr.config) {
        attr.sample_period.saturating_mul(2)
    } else {
        0
    }
}

/// The last entry of a thread's samples of an event.
#[derive(Clone, Copy)]
struct Tail {
    /// Its index in [`Timeline::entries`].
    at: usize,
    /// Its merged sample.
    sample: u32,
    /// Its last sample's time.
    time: u64,
    /// It is a run's rest (it takes the run's next samples).
    rest: bool,
}

/// Entries in file order, runs kept as two (see the module's doc).
#[derive(Default)]
pub struct Timeline {
    entries: Vec<Timed>,
    /// Per attr: [`run_gap`].
    gaps: Vec<u64>,
    /// Per (thread, event): its last entry.
    tails: HashMap<(u32, u32), Tail>,
}

impl Timeline {
    /// An empty timeline of a recording of `attrs`.
    pub fn new<'a>(attrs: impl IntoIterator<Item = &'a Attr>) -> Timeline {
        Timeline {
            gaps: attrs.into_iter().map(run_gap).collect(),
            ..Timeline::default()
        }
    }

    /// Adds sample `t` of thread `tid`, recorded for attr `attr` as event `event`.
    pub fn push(&mut self, attr: usize, tid: u32, event: u32, t: Timed) {
        let gap = self.gaps.get(attr).copied().unwrap_or(0);
        if gap == 0 || t.time == Timed::NO_TIME {
            self.entries.push(t);
            return;
        }
        let at = self.entries.len();
        let tail = self.tails.entry((tid, event)).or_insert(Tail {
            at,
            sample: t.sample,
            time: t.time,
            rest: false,
        });
        let joins = tail.at != at
            && tail.sample == t.sample
            && t.time >= tail.time
            && t.time - tail.time <= gap;
        if joins && tail.rest {
            if let Some(e) = self.entries.get_mut(tail.at) {
                e.time = t.time;
                e.period = e.period.saturating_add(t.period);
                e.count = e.count.saturating_add(t.count);
            }
            tail.time = t.time;
            return;
        }
        *tail = Tail {
            at,
            sample: t.sample,
            time: t.time,
            rest: joins,
        };
        self.entries.push(t);
    }

    /// The entries, in file order (a thread's in time order when the file's are).
    pub fn into_entries(self) -> Vec<Timed> {
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(period: u64, freq: bool) -> Attr {
        Attr {
            type_: types::SOFTWARE,
            config: 0,
            sample_period: period,
            freq,
            ..Attr::default()
        }
    }

    fn at(time: u64, sample: u32) -> Timed {
        Timed {
            time,
            period: 10,
            sample,
            count: 1,
        }
    }

    #[test]
    fn the_interval_is_known_by_frequency_or_a_clocks_period() {
        assert_eq!(run_gap(&clock(1000, true)), 2_000_000);
        assert_eq!(run_gap(&clock(50_000, false)), 100_000);
        let tracepoint = Attr {
            type_: types::TRACEPOINT,
            sample_period: 1,
            ..Attr::default()
        };
        assert_eq!(run_gap(&tracepoint), 0);
        let cycles = Attr {
            type_: types::HARDWARE,
            sample_period: 100_000,
            ..Attr::default()
        };
        assert_eq!(run_gap(&cycles), 0);
        assert_eq!(run_gap(&clock(0, true)), 0);
    }

    #[test]
    fn a_run_is_its_first_sample_and_its_rest() {
        // 1 kHz: samples at most 2 ms apart join.
        let mut t = Timeline::new([&clock(1000, true)]);
        for ms in 0..5 {
            t.push(0, 7, 0, at(ms * 1_000_000, 3));
        }
        // A gap of 3 ms ends the run; another stack ends the next.
        t.push(0, 7, 0, at(7_000_000, 3));
        t.push(0, 7, 0, at(8_000_000, 4));
        t.push(0, 7, 0, at(9_000_000, 3));
        let e = t.into_entries();
        let got: Vec<(u64, u64, u32, u32)> = e
            .iter()
            .map(|x| (x.time, x.period, x.sample, x.count))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 10, 3, 1),
                (4_000_000, 40, 3, 4),
                (7_000_000, 10, 3, 1),
                (8_000_000, 10, 4, 1),
                (9_000_000, 10, 3, 1),
            ]
        );
        // Every recorded sample is counted once, its period once.
        assert_eq!(e.iter().map(|x| x.count).sum::<u32>(), 8);
        assert_eq!(e.iter().map(|x| x.period).sum::<u64>(), 80);
    }

    #[test]
    fn threads_and_events_run_apart_and_untimed_samples_stand_alone() {
        let mut t = Timeline::new([&clock(1000, true), &clock(1000, true)]);
        // Two threads' samples of one stack interleave; a second event's too.
        for ms in 0..3 {
            t.push(0, 1, 0, at(ms * 1_000_000, 5));
            t.push(0, 2, 0, at(ms * 1_000_000, 5));
            t.push(1, 1, 1, at(ms * 1_000_000, 5));
        }
        let e = t.into_entries();
        assert_eq!(e.len(), 6, "{e:?}");
        assert!(e.iter().all(|x| x.count == 1 || x.count == 2));
        let mut t = Timeline::new([&clock(1000, true)]);
        let untimed = Timed {
            time: Timed::NO_TIME,
            ..at(0, 1)
        };
        t.push(0, 1, 0, untimed);
        t.push(0, 1, 0, untimed);
        assert_eq!(t.into_entries().len(), 2);
        // A sample going back in time starts a run of its own.
        let mut t = Timeline::new([&clock(1000, true)]);
        t.push(0, 1, 0, at(5_000_000, 1));
        t.push(0, 1, 0, at(4_000_000, 1));
        assert_eq!(t.into_entries().len(), 2);
    }
}
