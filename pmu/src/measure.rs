//! The small library API: count a closure or a running process from Rust.

use crate::counter::{Count, CountOptions, Counter, Slot, Status, prepare};
use crate::error::Result;
use crate::event::Encoder;

/// Counters on this thread or on a process, ready to measure.
///
/// ```
/// use hwprof_pmu::Counters;
///
/// let mut counters = Counters::this_thread("task-clock,page-faults")?;
/// let (sum, counts) = counters.measure(|| {
///     let v: Vec<u64> = (0..1_000_000).collect(); // touches fresh pages
///     v.iter().sum::<u64>()
/// })?;
/// assert_eq!(sum, 499_999_500_000);
/// let faults = counts.get("page-faults").expect("software events always count");
/// assert!(faults.raw > 0);
/// assert!(counts.get("task-clock").unwrap().raw > 0); // nanoseconds
/// # Ok::<(), hwprof_pmu::Error>(())
/// ```
#[derive(Debug)]
pub struct Counters {
    counter: Counter,
}

/// The result of one measurement: each event with its count, or `None` when it is not
/// supported here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts {
    /// `(event name, count)` in the order given.
    pub values: Vec<(String, Option<Count>)>,
}

impl Counts {
    /// The count of an event by the name it was given (or its display name).
    pub fn get(&self, name: &str) -> Option<Count> {
        self.values
            .iter()
            .find(|(n, _)| n == name || crate::metrics::base_name(n) == name)
            .and_then(|(_, c)| *c)
    }
}

impl Counters {
    /// Opens `events` (perf syntax) on the calling thread, disabled.
    pub fn this_thread(events: &str) -> Result<Counters> {
        Self::open(events, Slot { pid: 0, cpu: -1 }, false)
    }

    /// Opens `events` on process `pid` (its threads created from now on included).
    pub fn for_pid(events: &str, pid: i32) -> Result<Counters> {
        Self::open(events, Slot { pid, cpu: -1 }, true)
    }

    fn open(events: &str, slot: Slot, inherit: bool) -> Result<Counters> {
        let mut list = Encoder::host().parse(events)?;
        prepare(
            &mut list,
            CountOptions {
                inherit,
                enable_on_exec: false,
            },
        );
        Ok(Counters {
            counter: Counter::open(list, vec![slot])?,
        })
    }

    /// Names of events the kernel could not count here (e.g. `cycles` without a PMU).
    pub fn unsupported(&self) -> Vec<&str> {
        let ev = &self.counter.events().events;
        self.counter
            .status()
            .iter()
            .zip(ev)
            .filter(|(s, _)| **s != Status::Counting)
            .map(|(_, e)| e.name.as_str())
            .collect()
    }

    /// Resets, enables, runs `f`, disables, and returns its result with the counts.
    pub fn measure<R>(&mut self, f: impl FnOnce() -> R) -> Result<(R, Counts)> {
        self.counter.reset()?;
        self.counter.enable()?;
        let r = f();
        self.counter.disable()?;
        Ok((r, self.read()?))
    }

    /// Starts counting (without reset).
    pub fn enable(&self) -> Result<()> {
        self.counter.enable()
    }

    /// Stops counting.
    pub fn disable(&self) -> Result<()> {
        self.counter.disable()
    }

    /// Reads the current counts.
    pub fn read(&self) -> Result<Counts> {
        let n = self.counter.events().events.len();
        let totals = self.counter.read()?.total(n);
        let values = self
            .counter
            .events()
            .events
            .iter()
            .zip(totals)
            .map(|(e, c)| (e.name.clone(), c))
            .collect();
        Ok(Counts { values })
    }
}
