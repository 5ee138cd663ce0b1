//! Hardware counters as a criterion [`Measurement`] (feature `criterion`).
//!
//! [`CounterMeasurement`] makes a criterion bench report instructions, cycles or any one
//! event instead of wall time. Counts are far less noisy than time on a shared machine,
//! which is what a regression check in CI needs. Where the event cannot be counted (a VM
//! or CI runner without a hardware PMU, `cycles` failing with `ENOENT`), it falls back to
//! `task-clock` (CPU time of the bench thread, in ns) and says so once on stderr; where
//! `perf_event_open` is forbidden altogether (a container's seccomp profile,
//! `kernel.perf_event_paranoid = 3`), to wall time. [`CounterMeasurement::event`] and
//! [`CounterMeasurement::fell_back`] tell what was measured; [`CounterMeasurement::exact`]
//! refuses to fall back.
//!
//! Put it in place with [`CriterionExt::with_counter`]: criterion compares a run with the
//! baseline saved under the same benchmark name whatever was measured, so a baseline
//! counted in instructions and a rerun that fell back to task-clock would be compared as
//! one unit; `with_counter` keeps one set of baselines per measured event
//! (`<criterion home>/counting-<event>/`) and says once which event it measures.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::{self, ThreadId};
use std::time::Instant;

use ::criterion::measurement::{Measurement, ValueFormatter};

use crate::attr::read_format as rf;
use crate::counter::{Count, open_hint};
use crate::error::{Error, Result};
use crate::event::{Encoder, Event};
use crate::{Slot, sys};

mod baseline;
mod format;

pub use baseline::{CriterionExt, criterion_home};
use format::Formatter;

/// A criterion [`Measurement`] that counts one perf event on the benchmarking thread.
///
/// The event is opened once, on the thread that creates the measurement, counting from
/// then on; [`start`](Measurement::start) and [`end`](Measurement::end) each cost one
/// `read()` of the counter, without allocating: a start/end pair took 1.06 µs of wall
/// time on a KVM guest, and an empty batch measured 0.52 µs of task-clock. That constant
/// cost per batch (criterion runs thousands of iterations per batch and fits the slope
/// over batch sizes) barely shows; `instructions:u` also leaves out the kernel
/// instructions of the `read()` itself. When the
/// kernel multiplexes the counter (more events than hardware counters), each batch is
/// scaled by `time_enabled / time_running` for that batch, as `perf stat` does; a batch
/// during which the counter never ran measures 0.
///
/// Create it on the thread that runs the benchmarks (criterion's `config` expression
/// does). `start` panics on another thread, rather than measuring nothing.
///
/// ```
/// use criterion::measurement::Measurement;
/// use hwprof_pmu::criterion::CounterMeasurement;
///
/// // instructions where there is a PMU; task-clock (ns) with one warning where not.
/// let m = CounterMeasurement::instructions();
/// let start = m.start();
/// let v: Vec<u64> = (0..100_000).collect();
/// std::hint::black_box(v.iter().sum::<u64>());
/// let measured = m.end(start);
/// assert!(measured > 0.0);
/// println!("{} {}", m.formatter().format_value(measured), m.event());
/// ```
///
/// In a bench (`harness = false`):
///
/// ```no_run
/// use criterion::{Criterion, criterion_group, criterion_main};
/// use hwprof_pmu::criterion::{CounterMeasurement, CriterionExt};
///
/// fn sum(c: &mut Criterion<CounterMeasurement>) {
///     let v: Vec<u64> = (0..10_000).collect();
///     c.bench_function("sum", |b| b.iter(|| v.iter().sum::<u64>()));
/// }
///
/// criterion_group! {
///     name = benches;
///     // One set of baselines per measured event (see `CriterionExt::with_counter`).
///     config = Criterion::default().with_counter(CounterMeasurement::instructions());
///     targets = sum
/// }
/// criterion_main!(benches);
/// ```
#[derive(Debug)]
pub struct CounterMeasurement {
    source: Source,
    requested: String,
    event: String,
    formatter: Formatter,
    thread: ThreadId,
    /// Set by `with_counter`: baselines are kept per measured event.
    separated: bool,
}

#[derive(Debug)]
enum Source {
    Counter(OwnedFd),
    Wall,
}

/// What [`CounterMeasurement::start`](Measurement::start) read: a counter value or an
/// instant, passed back to `end`.
#[derive(Clone, Copy, Debug)]
pub struct Reading(Inner);

#[derive(Clone, Copy, Debug)]
enum Inner {
    Count(Count),
    Instant(Instant),
}

static WARNINGS: AtomicUsize = AtomicUsize::new(0);

/// How many fallback warnings this process has printed: 0 or 1, however many
/// measurements fell back.
pub fn warnings_printed() -> usize {
    WARNINGS.load(Ordering::Relaxed)
}

fn warn_once(msg: &str) {
    if WARNINGS
        .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        eprintln!("hwprof: warning: {msg}");
    }
}

impl CounterMeasurement {
    /// Counts `event` (one event in perf syntax: `instructions`, `cycles:u`,
    /// `L1-dcache-load-misses`, `r00c0`, `cpu/event=0x3c/`...), falling back to
    /// `task-clock` with one warning per process when it cannot be counted here, and to
    /// wall time when no perf event can be opened at all.
    ///
    /// Errors only when `event` does not parse or is not exactly one event.
    pub fn new(event: &str) -> Result<CounterMeasurement> {
        let ev = parse_one(event)?;
        Ok(Self::with_fallback(event, Some(ev)))
    }

    /// Counts `event` or fails: no fallback. The error says why it cannot be counted
    /// here (e.g. no hardware PMU).
    pub fn exact(event: &str) -> Result<CounterMeasurement> {
        let ev = parse_one(event)?;
        let (fd, name) = open(ev)?;
        Ok(Self::from_fd(event, fd, name))
    }

    /// Retired instructions, or task-clock where they cannot be counted (see [`new`]).
    ///
    /// [`new`]: CounterMeasurement::new
    pub fn instructions() -> CounterMeasurement {
        Self::with_fallback("instructions", parse_one("instructions").ok())
    }

    /// CPU cycles, or task-clock where they cannot be counted (see [`new`]).
    ///
    /// [`new`]: CounterMeasurement::new
    pub fn cycles() -> CounterMeasurement {
        Self::with_fallback("cycles", parse_one("cycles").ok())
    }

    /// CPU time of the bench thread in ns (`task-clock`): unlike wall time, it leaves out
    /// the time the thread waits for a CPU on a busy machine. Wall time where no perf
    /// event can be opened.
    pub fn task_clock() -> CounterMeasurement {
        Self::with_fallback("task-clock", parse_one("task-clock").ok())
    }

    /// The event actually measured: the one asked for (with `:u` appended when
    /// `perf_event_paranoid` only allows user space), `task-clock`, or `wall-time`.
    pub fn event(&self) -> &str {
        &self.event
    }

    /// The event asked for.
    pub fn requested(&self) -> &str {
        &self.requested
    }

    /// Whether another event than the one asked for is measured.
    pub fn fell_back(&self) -> bool {
        self.event != self.requested
            && !self
                .event
                .strip_prefix(self.requested.as_str())
                .is_some_and(|modifiers| modifiers.starts_with(':'))
    }

    fn from_fd(requested: &str, fd: OwnedFd, name: String) -> CounterMeasurement {
        CounterMeasurement {
            source: Source::Counter(fd),
            requested: requested.to_string(),
            formatter: Formatter::for_event(&name),
            event: name,
            thread: thread::current().id(),
            separated: false,
        }
    }

    fn with_fallback(requested: &str, ev: Option<Event>) -> CounterMeasurement {
        let why = match ev.map(open) {
            Some(Ok((fd, name))) => return Self::from_fd(requested, fd, name),
            Some(Err(Error::Open { hint, .. })) => hint,
            Some(Err(e)) => e.to_string(),
            None => "it does not parse".to_string(),
        };
        if requested != "task-clock" {
            if let Some((fd, name)) = parse_one("task-clock").ok().and_then(|e| open(e).ok()) {
                warn_once(&format!(
                    "cannot count '{requested}' here: {why}; criterion measures task-clock (CPU time of the bench thread, ns) instead"
                ));
                return Self::from_fd(requested, fd, name);
            }
        }
        warn_once(&format!(
            "cannot count '{requested}' here: {why}; no perf event can be opened, criterion measures wall time instead"
        ));
        CounterMeasurement {
            source: Source::Wall,
            requested: requested.to_string(),
            event: "wall-time".to_string(),
            formatter: Formatter::Time,
            thread: thread::current().id(),
            separated: false,
        }
    }

    fn read(&self) -> Inner {
        match &self.source {
            Source::Wall => Inner::Instant(Instant::now()),
            Source::Counter(fd) => Inner::Count(read_count(fd).unwrap_or_else(|e| {
                panic!(
                    "hwprof-pmu: reading the '{}' counter failed: {e}",
                    self.event
                )
            })),
        }
    }
}

/// Parses `input` as exactly one event.
fn parse_one(input: &str) -> Result<Event> {
    let mut list = Encoder::host().parse(input)?;
    if list.events.len() != 1 {
        return Err(Error::Syntax {
            input: input.to_string(),
            reason: format!(
                "a criterion measurement counts exactly one event, this is {}",
                list.events.len()
            ),
        });
    }
    list.events.pop().ok_or_else(|| Error::Syntax {
        input: input.to_string(),
        reason: "no event".to_string(),
    })
}

/// Opens `ev` on the calling thread, counting now, with the kernel's time totals;
/// retries user space only when the kernel part is not allowed (as `Counter::open`).
fn open(mut ev: Event) -> Result<(OwnedFd, String)> {
    let a = &mut ev.attr;
    a.read_format = rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING;
    a.disabled = false;
    a.inherit = false;
    a.enable_on_exec = false;
    let slot = Slot { pid: 0, cpu: -1 };
    let mut res = sys::perf_event_open(&ev.attr, slot.pid, slot.cpu, None);
    let denied = |r: &std::io::Result<OwnedFd>| matches!(r, Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)));
    if denied(&res) && !ev.explicit_mods && !ev.attr.exclude_kernel {
        ev.attr.exclude_kernel = true;
        ev.attr.exclude_hv = true;
        res = sys::perf_event_open(&ev.attr, slot.pid, slot.cpu, None);
        if res.is_ok() {
            ev.name.push_str(":u");
        }
    }
    match res {
        Ok(fd) => Ok((fd, ev.name)),
        Err(e) => Err(Error::Open {
            hint: open_hint(e.raw_os_error().unwrap_or(0), &ev.name, slot),
            event: ev.name,
            source: e,
        }),
    }
}

/// Reads `value, time_enabled, time_running` without allocating.
fn read_count(fd: &OwnedFd) -> Result<Count> {
    let mut buf = [0u8; 24];
    let got = sys::read(fd, &mut buf).map_err(|e| Error::io("reading a counter", e))?;
    let word = |i: usize| {
        buf.get(i * 8..i * 8 + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_ne_bytes)
    };
    match (got, word(0), word(1), word(2)) {
        (24, Some(raw), Some(enabled), Some(running)) => Ok(Count {
            raw,
            enabled,
            running,
        }),
        _ => Err(Error::io(
            "reading a counter",
            std::io::ErrorKind::UnexpectedEof.into(),
        )),
    }
}

impl Measurement for CounterMeasurement {
    type Intermediate = Reading;
    type Value = f64;

    /// Reads the counter (or the clock).
    ///
    /// # Panics
    ///
    /// On a thread other than the one that created the measurement (it would count
    /// nothing), or if the kernel refuses the `read()` of an open counter (criterion has
    /// no error path, and a made-up value would corrupt the statistics).
    fn start(&self) -> Reading {
        if thread::current().id() != self.thread {
            panic!(
                "hwprof-pmu: a CounterMeasurement counts the thread that created it; create it on the thread that runs the benchmarks"
            );
        }
        if !self.separated {
            baseline::plain_notice(&self.event);
        }
        Reading(self.read())
    }

    /// The count since `start`, scaled for multiplexing (ns for time events).
    ///
    /// # Panics
    ///
    /// As [`start`](Measurement::start) when the counter cannot be read.
    fn end(&self, start: Reading) -> f64 {
        match (start.0, self.read()) {
            (Inner::Count(a), Inner::Count(b)) => {
                let d = b.delta(a);
                d.scaled().unwrap_or(0.0)
            }
            (Inner::Instant(a), Inner::Instant(b)) => b.duration_since(a).as_nanos() as f64,
            _ => 0.0,
        }
    }

    fn add(&self, v1: &f64, v2: &f64) -> f64 {
        v1 + v2
    }

    fn zero(&self) -> f64 {
        0.0
    }

    fn to_f64(&self, value: &f64) -> f64 {
        *value
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &self.formatter
    }
}

#[cfg(test)]
mod tests;
