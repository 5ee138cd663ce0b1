//! The small library API: count a closure or a running process from Rust.

use crate::counter::{Count, CountOptions, Counter, Slot, Status, prepare};
use crate::error::Result;
use crate::event::Encoder;

/// Counters on this thread or on a process, ready to measure: the API for a custom
/// harness.
///
/// Open once, then [`measure`](Counters::measure) as often as needed: each call resets
/// the counters, enables them around the closure only, and returns the closure's result
/// with the counts. Events the machine cannot count (`cycles` in a VM without a PMU) are
/// `None` in [`Counts`] rather than errors; [`Counts::scaled`] gives the estimate
/// corrected for multiplexing. For criterion, see `hwprof_pmu::criterion` (feature
/// `criterion`).
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
/// let cpu_ns = counts.scaled("task-clock").unwrap_or(0.0);
/// assert!(cpu_ns > 0.0);
///
/// // Hardware events are `None` where there is no PMU, never an error.
/// let mut hw = Counters::this_thread("instructions,task-clock")?;
/// let (_, counts) = hw.measure(|| std::hint::black_box((0..1000u64).sum::<u64>()))?;
/// match counts.scaled("instructions") {
///     Some(n) => println!("{n} instructions"),
///     None => println!("no PMU: {:?}", counts.unsupported().collect::<Vec<_>>()),
/// }
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

    /// The count of an event scaled for multiplexing ([`Count::scaled`]): `None` when
    /// the event is unknown, not supported here, or never ran.
    pub fn scaled(&self, name: &str) -> Option<f64> {
        self.get(name)?.scaled()
    }

    /// Names of the events that are not supported here, in order.
    pub fn unsupported(&self) -> impl Iterator<Item = &str> {
        self.values
            .iter()
            .filter(|(_, c)| c.is_none())
            .map(|(n, _)| n.as_str())
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
