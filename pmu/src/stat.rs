//! A counting session over a target, as `perf stat` counts ([`Counting::start`]): a
//! command from its `exec` to its exit ([`Counting::command`], on its own tasks, or on
//! processes, threads or CPUs while it runs), or running processes, threads or CPUs
//! until they end or the [`Stop`] ([`Counting::attach`]), either at most for
//! [`Options::duration`]; interval deltas on the way ([`Counting::next_interval`]);
//! readings as [`Line`]s (event, CPU, count, the value scaled by enabled / running
//! time, derived metrics); and the means of repeated runs with their relative
//! standard error ([`summarize`]). Nothing here prints: the program renders the lines.

use std::time::{Duration, Instant};

use crate::command::{self, CountedCommand};
use crate::counter::{Count, CountOptions, Counter, Readings, Slot, Status, prepare};
use crate::error::{Error, Result};
use crate::event::{Class, EventList};
use crate::metrics::{Context, Metric};
use crate::stop::Stop;
use crate::sys::ExitInfo;
use crate::sysfs;
use crate::target::{self, Target, Watch, Woke, cpu_list_text};

/// One reading of one event (per CPU with [`Options::per_cpu`]).
#[derive(Clone, Debug)]
pub struct Line {
    /// Event display name.
    pub event: String,
    /// The CPU, when counts are per CPU.
    pub cpu: Option<i32>,
    /// The kernel's count; `None` when the event could not be opened (`<not supported>`).
    pub count: Option<Count>,
    /// The value to show: the scaled count, or the mean over runs; `None` when the
    /// event never ran (`<not counted>`).
    pub value: Option<f64>,
    /// Relative standard error of the mean over runs, percent.
    pub stddev_pct: Option<f64>,
    /// Derived metric.
    pub metric: Option<Metric>,
}

impl Line {
    /// The line of one event: `None` count when it could not be opened (`counting`
    /// false), and the value is the count scaled by enabled / running time (perf's
    /// estimate when the kernel multiplexed it). No metric yet ([`attach_metrics`]).
    pub fn of(event: &str, cpu: Option<i32>, counting: bool, v: Option<Count>) -> Line {
        let count = counting.then(|| v.unwrap_or_default());
        Line {
            event: event.to_string(),
            cpu,
            count,
            value: count.and_then(|c| c.scaled()),
            stddev_pct: None,
            metric: None,
        }
    }
}

/// Sets each line's derived metric from the values of the lines beside it (one CPU, one
/// interval, or the means of runs) over `wall_ns`.
pub fn attach_metrics(lines: &mut [Line], wall_ns: f64) {
    let mut ctx = Context::new(wall_ns);
    for l in lines.iter() {
        if let Some(v) = l.value {
            ctx.add(&l.event, v);
        }
    }
    for l in lines.iter_mut() {
        l.metric = l.value.and_then(|v| ctx.metric(&l.event, v));
    }
}

/// The lines of readings `r` of `counter` over `wall_ns`, with their metrics: one per
/// event summed over the counter's slots, or one per event and slot with `per_cpu`.
pub fn lines_of(counter: &Counter, r: &Readings, wall_ns: f64, per_cpu: bool) -> Vec<Line> {
    let events = &counter.events().events;
    let status = counter.status();
    let make = |values: Vec<Option<Count>>, cpu: Option<i32>| -> Vec<Line> {
        let mut lines: Vec<Line> = events
            .iter()
            .zip(values)
            .zip(status)
            .map(|((e, v), s)| Line::of(&e.name, cpu, *s == Status::Counting, v))
            .collect();
        attach_metrics(&mut lines, wall_ns);
        lines
    };
    if per_cpu {
        counter
            .slots()
            .iter()
            .zip(&r.values)
            .flat_map(|(slot, vals)| make(vals.clone(), Some(slot.cpu)))
            .collect()
    } else {
        make(r.total(events.len()), None)
    }
}

/// The hardware (CPU PMU) events of `counter` that are not counting, by name.
pub fn unsupported_hardware(counter: &Counter) -> Vec<&str> {
    counter
        .events()
        .events
        .iter()
        .zip(counter.status())
        .filter(|(e, s)| e.class == Class::Core && **s != Status::Counting)
        .map(|(e, _)| e.name.as_str())
        .collect()
}

/// Mean and relative standard error of the mean (percent), as `perf stat -r` prints.
pub fn mean_and_rse(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 || mean == 0.0 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt() * 100.0 / mean.abs())
}

/// How to count.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Children and new threads inherit the counters.
    pub inherit: bool,
    /// One line per event and CPU (or slot) instead of sums.
    pub per_cpu: bool,
    /// Interval deltas this often ([`Counting::next_interval`]).
    pub interval: Option<Duration>,
    /// Count at most this long: attached counting then ends, and a command is sent
    /// SIGTERM (SIGKILL 2 s later if it is still there), as `perf stat --timeout` does.
    pub duration: Option<Duration>,
}

/// How long a command gets after the SIGTERM of [`Options::duration`] before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// What is counted: a command, or tasks or CPUs attached to.
#[derive(Debug)]
enum Counted {
    Command(CountedCommand),
    Attached { counter: Counter, watch: Watch },
}

/// A counting session (see the module docs).
#[derive(Debug)]
pub struct Counting {
    counted: Counted,
    description: String,
    started: Instant,
    opts: Options,
    next_tick: Option<Instant>,
    /// The previous interval's reading and when it was taken.
    prev: Option<(Readings, Instant)>,
    /// When [`Options::duration`] ends the counting (then, for a command, when it is
    /// killed if it ignored SIGTERM).
    end_at: Option<Instant>,
    /// The command was sent SIGTERM at [`Options::duration`].
    timed: bool,
    ended: bool,
}

/// Interval deltas: the counts since the previous interval (or the start).
#[derive(Clone, Debug)]
pub struct Interval {
    /// The first interval of the session.
    pub first: bool,
    /// Seconds since the start.
    pub at: f64,
    /// The deltas, with metrics over the interval's own length (measured between two
    /// reads: the last one is usually shorter).
    pub lines: Vec<Line>,
}

/// One finished run.
#[derive(Clone, Debug)]
pub struct Run {
    /// The counts over the whole run, with metrics.
    pub lines: Vec<Line>,
    /// Wall time of the run (a command: from `exec` to exit).
    pub wall: Duration,
    /// The command's exit status and rusage (`None` when attached).
    pub exit: Option<ExitInfo>,
    /// The run was ended by [`Options::duration`] (a command: sent SIGTERM).
    pub timed: bool,
}

impl Run {
    /// The exit status a program reports for this run, as `perf stat` does: the
    /// command's (0 when it was ended by the time limit's SIGTERM), else 0.
    pub fn exit_code(&self) -> u8 {
        match self.exit {
            Some(x) if self.timed && x.signal == Some(libc::SIGTERM) => 0,
            Some(x) => u8::try_from(x.code).unwrap_or(1),
            None => 0,
        }
    }
}

impl Counting {
    /// Starts counting `target`: a command ([`Counting::command`], alone or bounding
    /// the time of what it is given with) or what is attached to
    /// ([`Counting::attach`]).
    pub fn start(target: &Target, events: &EventList, opts: &Options) -> Result<Counting> {
        match target.argv() {
            Some(argv) => Counting::command(argv, events, target.attached(), opts),
            None => Counting::attach(events, target, opts),
        }
    }

    /// Starts `argv` with `events` counting it, or counting `during` (processes,
    /// threads or CPUs) while it runs. A [`Stop`] is passed on to the command, which
    /// decides how to end.
    pub fn command(
        argv: &[String],
        events: &EventList,
        during: Option<&Target>,
        opts: &Options,
    ) -> Result<Counting> {
        let (attached, description) = match during {
            Some(t) => {
                let (slots, description) = slots_of(t, None)?;
                (Some(slots), description)
            }
            None => (None, format!("'{}'", argv.join(" "))),
        };
        let copts = command::Options {
            inherit: opts.inherit,
            quiet: false,
            attached,
        };
        let cmd = CountedCommand::start(argv, events, &copts)?;
        let started = cmd.started();
        Ok(Counting::new(
            Counted::Command(cmd),
            description,
            started,
            opts,
        ))
    }

    /// Opens `events` on the running processes, threads or CPUs of `target` and enables
    /// them: counting goes on until they end or the [`Stop`]. Errors:
    /// [`Error::NoSuchProcess`] for a process or thread that is gone.
    pub fn attach(events: &EventList, target: &Target, opts: &Options) -> Result<Counting> {
        let mut list = events.clone();
        prepare(
            &mut list,
            CountOptions {
                inherit: opts.inherit,
                enable_on_exec: false,
            },
        );
        let mut watch = Watch::new();
        let (slots, description) = slots_of(target, Some(&mut watch))?;
        let counter = Counter::open(list, slots)?;
        counter.enable()?;
        let started = Instant::now();
        let counted = Counted::Attached { counter, watch };
        Ok(Counting::new(counted, description, started, opts))
    }

    fn new(counted: Counted, description: String, started: Instant, opts: &Options) -> Counting {
        Counting {
            counted,
            description,
            started,
            next_tick: opts.interval.map(|i| started + i),
            end_at: opts.duration.map(|d| started + d),
            opts: opts.clone(),
            prev: None,
            timed: false,
            ended: false,
        }
    }

    /// The counters (their events, status and notices).
    pub fn counter(&self) -> &Counter {
        match &self.counted {
            Counted::Command(c) => c.counter(),
            Counted::Attached { counter, .. } => counter,
        }
    }

    /// The target as perf names it in its report: `'CMD ARGS'`, `'system wide'`,
    /// `'CPU(s) 0-1'`, `process id '1,2'`, `thread id '3'`.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Waits for the next interval, or for the end: the target ended, or the stop (a
    /// command is passed the stop and waited for until it exits; attached counting ends
    /// at once). With [`Options::interval`], returns each interval's deltas and, at the
    /// end, the last partial interval (the only one when the target ended before the
    /// first); `None` once ended.
    pub fn next_interval(&mut self, stop: &Stop) -> Result<Option<Interval>> {
        if self.ended {
            return Ok(None);
        }
        loop {
            let until = match (self.next_tick, self.end_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let woke = match &mut self.counted {
                Counted::Command(c) => c.wait(stop, until),
                Counted::Attached { watch, .. } => watch.wait(stop, until),
            };
            match woke.map_err(|e| Error::io("waiting for the target", e))? {
                Woke::Deadline => {
                    let now = Instant::now();
                    if self.end_at.is_some_and(|t| now >= t) {
                        match &self.counted {
                            Counted::Attached { .. } => {
                                self.timed = true;
                                break;
                            }
                            Counted::Command(c) if !self.timed => {
                                self.timed = true;
                                c.signal(libc::SIGTERM);
                                self.end_at = Some(now + TERM_GRACE);
                            }
                            Counted::Command(c) => {
                                c.signal(libc::SIGKILL);
                                self.end_at = None;
                            }
                        }
                    }
                    if let (Some(iv), Some(t)) = (self.opts.interval, self.next_tick) {
                        if now >= t {
                            self.next_tick = Some(t + iv);
                            return self.interval().map(Some);
                        }
                    }
                }
                Woke::Done => break,
                Woke::Stopped => {
                    if matches!(self.counted, Counted::Attached { .. }) {
                        break;
                    }
                }
            }
        }
        self.ended = true;
        match self.opts.interval {
            Some(_) => self.interval().map(Some),
            None => Ok(None),
        }
    }

    /// The counts since the previous interval (or the start), whose reading becomes the
    /// previous one.
    fn interval(&mut self) -> Result<Interval> {
        let cur = self.counter().read()?;
        let at = Instant::now();
        let (delta, since) = match self.prev.as_ref() {
            Some((p, when)) => (cur.delta(p), *when),
            None => (cur.clone(), self.started),
        };
        let length = at.saturating_duration_since(since);
        let lines = lines_of(
            self.counter(),
            &delta,
            length.as_nanos() as f64,
            self.opts.per_cpu,
        );
        let first = self.prev.is_none();
        self.prev = Some((cur, at));
        Ok(Interval {
            first,
            at: at.saturating_duration_since(self.started).as_secs_f64(),
            lines,
        })
    }

    /// Counts until the end ([`Counting::next_interval`] until `None`), then
    /// [`Counting::finish`]es: for a caller that does not show intervals.
    pub fn run_to_end(mut self, stop: &Stop) -> Result<Run> {
        while self.next_interval(stop)?.is_some() {}
        self.finish()
    }

    /// Ends the session (after [`Counting::next_interval`] returned `None`; with a
    /// command, this waits until it exits): the whole run's counts.
    pub fn finish(self) -> Result<Run> {
        let per_cpu = self.opts.per_cpu;
        match self.counted {
            Counted::Command(c) => {
                let f = c.finish()?;
                let lines = lines_of(&f.counter, &f.readings, f.wall.as_nanos() as f64, per_cpu);
                Ok(Run {
                    lines,
                    wall: f.wall,
                    exit: Some(f.exit),
                    timed: self.timed,
                })
            }
            Counted::Attached { counter, .. } => {
                counter.disable()?;
                let wall = self.started.elapsed();
                let r = counter.read()?;
                let lines = lines_of(&counter, &r, wall.as_nanos() as f64, per_cpu);
                Ok(Run {
                    lines,
                    wall,
                    exit: None,
                    timed: self.timed,
                })
            }
        }
    }

    /// Gives up: a command is ended as Ctrl-C would (SIGINT) and reaped.
    pub fn abort(self) {
        if let Counted::Command(c) = self.counted {
            c.abort();
        }
    }
}

/// The counter slots of an attached target (processes: every thread now; threads; CPUs)
/// and perf's name for it; with `watch`, its processes and threads are watched.
/// Errors: [`Error::NoSuchProcess`] for a process or thread that is gone.
fn slots_of(target: &Target, mut watch: Option<&mut Watch>) -> Result<(Vec<Slot>, String)> {
    let gone = Error::NoSuchProcess;
    let ids = |ids: &[i32]| ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
    Ok(match target {
        Target::Pids(pids) => {
            let mut slots = Vec::new();
            for &p in pids {
                let tasks = target::threads_of(p).map_err(|_| gone(p))?;
                if tasks.is_empty() {
                    return Err(gone(p));
                }
                slots.extend(tasks.into_iter().map(|t| Slot { pid: t, cpu: -1 }));
                if let Some(w) = watch.as_deref_mut() {
                    w.add_pid(p).map_err(|_| gone(p))?;
                }
            }
            (slots, format!("process id '{}'", ids(pids)))
        }
        Target::Tids(tids) => {
            for &t in tids {
                if !std::path::Path::new(&format!("/proc/{t}")).exists() {
                    return Err(gone(t));
                }
            }
            if let Some(w) = watch {
                w.add_tids(tids);
            }
            let slots = tids.iter().map(|&t| Slot { pid: t, cpu: -1 });
            (slots.collect(), format!("thread id '{}'", ids(tids)))
        }
        _ => {
            let cpus = target.cpus().unwrap_or_default();
            let description = if cpus == sysfs::online_cpus() {
                "'system wide'".to_string()
            } else {
                format!("'CPU(s) {}'", cpu_list_text(&cpus))
            };
            let slots = cpus.iter().map(|&c| Slot {
                pid: -1,
                cpu: c as i32,
            });
            (slots.collect(), description)
        }
    })
}

/// Repeated runs summed up as `perf stat -r` shows them.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Each event's mean over the runs with its relative standard error, and the
    /// metrics of the means over the mean wall time.
    pub lines: Vec<Line>,
    /// Mean wall time, seconds.
    pub wall: f64,
    /// Standard error of the mean wall time, seconds.
    pub wall_sd: f64,
    /// Mean user and system CPU time of the commands, seconds.
    pub user: f64,
    /// See `user`.
    pub sys: f64,
}

/// The means of `runs` (at least one; all of the same events).
pub fn summarize(runs: &[Run]) -> Summary {
    let walls: Vec<f64> = runs.iter().map(|r| r.wall.as_secs_f64()).collect();
    let n = runs.first().map_or(0, |r| r.lines.len());
    let mut lines = Vec::with_capacity(n);
    for i in 0..n {
        let Some(first) = runs.first().and_then(|r| r.lines.get(i)) else {
            continue;
        };
        let xs: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.lines.get(i).and_then(|l| l.value))
            .collect();
        let (mean, rse) = if xs.is_empty() {
            (0.0, 0.0)
        } else {
            mean_and_rse(&xs)
        };
        lines.push(Line {
            value: (!xs.is_empty()).then_some(mean),
            stddev_pct: first.count.map(|_| rse),
            metric: None,
            ..first.clone()
        });
    }
    let (wall, wall_rse) = mean_and_rse(&walls);
    attach_metrics(&mut lines, wall * 1e9);
    let (user, sys) = cpu_seconds(runs);
    let n_runs = walls.len() as f64;
    Summary {
        lines,
        wall,
        wall_sd: wall * wall_rse / 100.0,
        user: user / n_runs,
        sys: sys / n_runs,
    }
}

/// Total user and system CPU seconds of the runs' commands.
pub fn cpu_seconds(runs: &[Run]) -> (f64, f64) {
    let (user, sys) = runs
        .iter()
        .filter_map(|r| r.exit)
        .fold((0, 0), |(u, s), x| (u + x.user_us, s + x.sys_us));
    (user as f64 / 1e6, sys as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_standard_error_like_perf() {
        let (m, rse) = mean_and_rse(&[10.0, 12.0, 14.0]);
        assert_eq!(m, 12.0);
        // sd = 2, se = 2/sqrt(3) = 1.1547, rel = 9.62%
        assert!((rse - 9.6225).abs() < 1e-3, "{rse}");
        assert_eq!(mean_and_rse(&[5.0]), (5.0, 0.0));
    }

    /// A multiplexed event (it ran 1 ms of the 4 ms it was enabled) is its count
    /// scaled, perf's estimate raw × enabled / running; the metrics come from the
    /// scaled values.
    #[test]
    fn multiplexed_counts_are_scaled() {
        let quarter = |raw| Count {
            raw,
            enabled: 4_000_000,
            running: 1_000_000,
        };
        let mut lines = vec![
            Line::of("task-clock", None, true, Some(quarter(2_000_000))),
            Line::of("page-faults", None, true, Some(quarter(1_234))),
            Line::of("cycles", None, false, None),
        ];
        attach_metrics(&mut lines, 10e6);
        assert_eq!(lines[0].value, Some(8_000_000.0));
        assert_eq!(lines[1].value, Some(4_936.0));
        assert!(lines[2].count.is_none() && lines[2].value.is_none());
        let cpus = lines[0].metric.expect("CPUs utilized");
        assert!((cpus.value - 0.8).abs() < 1e-9, "{cpus:?}");
    }

    #[test]
    fn runs_are_summed_up_as_means() {
        let run = |raw: u64, wall_ms: u64| Run {
            lines: vec![
                Line::of(
                    "page-faults",
                    None,
                    true,
                    Some(Count {
                        raw,
                        enabled: 1,
                        running: 1,
                    }),
                ),
                Line::of("cycles", None, false, None),
            ],
            wall: Duration::from_millis(wall_ms),
            exit: None,
            timed: false,
        };
        let s = summarize(&[run(10, 100), run(12, 100), run(14, 100)]);
        assert_eq!(s.lines[0].value, Some(12.0));
        assert!((s.lines[0].stddev_pct.unwrap_or(0.0) - 9.6225).abs() < 1e-3);
        assert_eq!(s.lines[1].value, None);
        assert_eq!(s.lines[1].stddev_pct, None);
        assert!((s.wall - 0.1).abs() < 1e-12 && s.wall_sd.abs() < 1e-12);
    }

    /// A finished command's run: `user_us` and `sys_us` of CPU time, `wall_ms` of wall.
    fn command_run(user_us: u64, sys_us: u64, wall_ms: u64) -> Run {
        Run {
            lines: Vec::new(),
            wall: Duration::from_millis(wall_ms),
            exit: Some(ExitInfo {
                code: 0,
                signal: None,
                user_us,
                sys_us,
                max_rss_kb: 0,
            }),
            timed: false,
        }
    }

    /// `-r`'s user and sys seconds are the means of the runs' rusage, each kept apart:
    /// values chosen so that a sum instead of a mean, user and sys swapped or mixed, a
    /// run left out or counted twice, or microseconds read as another unit all differ.
    #[test]
    fn user_and_sys_of_repeated_runs_are_their_means() {
        let runs = [
            command_run(300_000, 20_000, 400),
            command_run(310_000, 30_000, 420),
            command_run(350_000, 70_000, 500),
        ];
        let s = summarize(&runs);
        assert!((s.user - 0.32).abs() < 1e-12, "user {}", s.user);
        assert!((s.sys - 0.04).abs() < 1e-12, "sys {}", s.sys);
        assert!((s.wall - 0.44).abs() < 1e-12, "wall {}", s.wall);
        // The totals, as one run prints them.
        let (u, sy) = cpu_seconds(&runs);
        assert!(
            (u - 0.96).abs() < 1e-12 && (sy - 0.12).abs() < 1e-12,
            "{u} {sy}"
        );
        assert_eq!(cpu_seconds(&runs[..1]), (0.3, 0.02));
        // Microseconds are kept whole: 1 µs is 1e-6 s, not rounded to a millisecond.
        let tiny = summarize(&[command_run(1, 3, 1), command_run(2, 4, 1)]);
        assert!((tiny.user - 1.5e-6).abs() < 1e-15, "{}", tiny.user);
        assert!((tiny.sys - 3.5e-6).abs() < 1e-15, "{}", tiny.sys);
    }

    /// A run without rusage (attached, not waited for) adds no CPU time.
    #[test]
    fn runs_without_an_exit_add_no_cpu_time() {
        let mut attached = command_run(0, 0, 100);
        attached.exit = None;
        assert_eq!(cpu_seconds(&[attached.clone()]), (0.0, 0.0));
        let s = summarize(&[attached]);
        assert_eq!((s.user, s.sys), (0.0, 0.0));
    }

    #[test]
    fn a_command_is_counted_with_intervals() {
        let stop = Stop::new().expect("stop");
        let events = crate::Encoder::host()
            .parse("task-clock")
            .expect("task-clock");
        let opts = Options {
            inherit: true,
            per_cpu: false,
            interval: Some(Duration::from_millis(20)),
            duration: None,
        };
        let argv = ["sleep", "0.1"].map(String::from);
        let mut c = Counting::command(&argv, &events, None, &opts).expect("start");
        assert_eq!(c.description(), "'sleep 0.1'");
        let mut n = 0;
        while let Some(iv) = c.next_interval(&stop).expect("interval") {
            assert_eq!(iv.first, n == 0);
            assert_eq!(iv.lines.len(), 1);
            n += 1;
        }
        assert!(n >= 2, "{n} intervals");
        let run = c.finish().expect("finish");
        assert_eq!(run.exit.map(|x| x.code), Some(0));
        assert!(run.lines[0].value.is_some());
    }
}
