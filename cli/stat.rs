//! `hwprof stat`: count events for a command, running PIDs/TIDs, or CPUs.

use std::time::{Duration, Instant};

use anyhow::Context;
use hwprof_pmu::command::{self, CountedCommand};
use hwprof_pmu::counter::{CountOptions, Readings, prepare};
use hwprof_pmu::event::Class;
use hwprof_pmu::metrics::Context as MetricCtx;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::{self, Flags, Rules, Target, Watch, Woke, cpu_list_text};
use hwprof_pmu::{Counter, EventList, Slot, Status, sysfs};

use crate::args::{StatArgs, TargetWords};
use crate::outfile::Sink;
use crate::render::{self, Format, Line, Times};
use crate::usage;

/// perf stat's default events.
const DEFAULT_EVENTS: &str = "task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,branch-misses";

pub fn run(a: StatArgs, stop: &Stop) -> anyhow::Result<u8> {
    let fmt = match (&a.sep, a.json) {
        (Some(s), _) if s.is_empty() => return usage("-x needs a non-empty separator"),
        (Some(s), _) => Format::Csv(s.clone()),
        (None, true) => Format::Json,
        (None, false) => Format::Human,
    };
    if a.repeat == 0 {
        return usage("-r needs at least 1 run");
    }
    if let Some(ms) = a.interval {
        if ms < 10 {
            return usage(format!("-I {ms}: the interval must be at least 10 ms"));
        }
        if a.repeat > 1 {
            return usage("-I and -r cannot be combined");
        }
    }
    let target = target_of(&a)?;
    if a.no_aggr && !target.is_system_wide() {
        return usage("-A (per-CPU counts) needs -a or -C");
    }
    if a.repeat > 1 && target.argv().is_none() {
        return usage("-r needs a command to repeat");
    }
    let enc = crate::encode::encoder(None, &a.event_file)?;
    let defaults = a.events.is_empty();
    let events = if defaults {
        enc.parse(DEFAULT_EVENTS)?
    } else {
        crate::encode::parse_all(&enc, &a.events)?
    };
    let mut sink = Sink::open(a.output.as_deref())?;
    let quiet_notices = !matches!(fmt, Format::Human) && a.output.is_none();
    let opts = Opts {
        fmt,
        quiet_notices,
        interval: a.interval.map(Duration::from_millis),
        per_cpu: a.no_aggr,
        inherit: !a.no_inherit,
    };
    let code = match target.argv() {
        Some(argv) => run_command(
            &events,
            argv,
            target.cpus().as_deref(),
            a.repeat,
            &opts,
            stop,
            &mut sink,
            enc.host_has_cpu_pmu(),
        )?,
        None => run_attached(
            &events,
            &target,
            &opts,
            stop,
            &mut sink,
            enc.host_has_cpu_pmu(),
        )?,
    };
    sink.commit()?;
    Ok(code)
}

struct Opts {
    fmt: Format,
    /// CSV/JSON on stderr: notices would corrupt the stream (the data says `<not supported>`).
    quiet_notices: bool,
    interval: Option<Duration>,
    per_cpu: bool,
    inherit: bool,
}

fn target_of(a: &StatArgs) -> anyhow::Result<Target> {
    let flags = Flags {
        command: &a.command,
        pid: a.pid.as_deref(),
        tid: a.tid.as_deref(),
        all_cpus: a.all_cpus,
        cpus: a.cpus.as_deref(),
    };
    let rules = Rules {
        command_on_cpus: true,
        live_ids: false,
        online_cpus: true,
    };
    crate::args::target(
        &flags,
        rules,
        &TargetWords {
            several: "choose one of -p, -t, -a/-C",
            command_and: "give either a command or -p/-t, not both",
            missing: "nothing to count: give a command after `--`, or -p PID, -t TID, or -a",
        },
    )
}

/// Prints the one notice about unsupported hardware events, and any counter notices.
fn notices(counter: &Counter, has_cpu_pmu: bool, told: &mut bool, quiet: bool) {
    if *told || quiet {
        return;
    }
    *told = true;
    for n in counter.notices() {
        eprintln!("hwprof: note: {n}");
    }
    let unsupported: Vec<&str> = counter
        .events()
        .events
        .iter()
        .zip(counter.status())
        .filter(|(e, s)| e.class == Class::Core && **s != Status::Counting)
        .map(|(e, _)| e.name.as_str())
        .collect();
    if !unsupported.is_empty() {
        let why = if has_cpu_pmu {
            "the CPU PMU rejected them (wrong model, or counters taken)".to_string()
        } else {
            "this kernel exposes no hardware PMU (no /sys/bus/event_source/devices/cpu; usual in VMs and containers)".to_string()
        };
        eprintln!(
            "hwprof: note: {} <not supported>: {why}; software events are still counted",
            unsupported.join(", ")
        );
    }
}

/// Sets each line's derived metric from the values of the lines beside it (one CPU, one
/// interval, or the means of `-r` runs).
fn attach_metrics(lines: &mut [Line], wall_ns: f64) {
    let mut ctx = MetricCtx::new(wall_ns);
    for l in lines.iter() {
        if let Some(v) = l.value {
            ctx.add(&l.event, v);
        }
    }
    for l in lines.iter_mut() {
        l.metric = l.value.and_then(|v| ctx.metric(&l.event, v));
    }
}

/// Builds the printed lines from readings: summed, or per CPU with `per_cpu`.
fn lines_of(counter: &Counter, r: &Readings, wall_ns: f64, per_cpu: bool) -> Vec<Line> {
    let events = &counter.events().events;
    let status = counter.status();
    let make = |values: Vec<Option<hwprof_pmu::Count>>, cpu: Option<i32>| -> Vec<Line> {
        let mut lines: Vec<Line> = events
            .iter()
            .zip(values)
            .zip(status)
            .map(|((e, v), s)| line_of(&e.name, cpu, *s == Status::Counting, v))
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

/// The line of one event: `None` count when it could not be opened (`counting` false),
/// and the value shown is the count scaled by enabled / running time (perf's estimate
/// when the kernel multiplexed it).
fn line_of(event: &str, cpu: Option<i32>, counting: bool, v: Option<hwprof_pmu::Count>) -> Line {
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

/// Mean and relative standard error of the mean (percent), as `perf stat -r` prints.
fn mean_and_rse(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 || mean == 0.0 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt() * 100.0 / mean.abs())
}

#[allow(clippy::too_many_arguments)]
fn run_command(
    events: &EventList,
    argv: &[String],
    cpus: Option<&[u32]>,
    repeat: u32,
    o: &Opts,
    stop: &Stop,
    sink: &mut Sink,
    has_pmu: bool,
) -> anyhow::Result<u8> {
    let target = match cpus {
        Some(_) => "'system wide'".to_string(),
        None => format!("'{}'", argv.join(" ")),
    };
    let mut told = false;
    let mut all_lines: Vec<Vec<Line>> = Vec::new();
    let mut walls = Vec::new();
    let (mut user, mut sysus) = (0u64, 0u64);
    let mut code = 0u8;
    let opts = command::Options {
        inherit: o.inherit,
        quiet: false,
        cpus: cpus.map(<[u32]>::to_vec),
    };
    for _ in 0..repeat {
        let mut cmd = CountedCommand::start(argv, events, &opts)?;
        notices(cmd.counter(), has_pmu, &mut told, o.quiet_notices);
        let t0 = cmd.started();
        if let Err(e) = watch(&mut Waiter::Command(&mut cmd), stop, t0, o, sink) {
            // Intervals could not be written (stdout closed, say): stop the command as
            // Ctrl-C does and wait for it, then end with the error.
            cmd.abort();
            return Err(e);
        }
        let f = cmd.finish()?;
        code = u8::try_from(f.exit.code).unwrap_or(1);
        user += f.exit.user_us;
        sysus += f.exit.sys_us;
        walls.push(f.wall.as_secs_f64());
        all_lines.push(lines_of(
            &f.counter,
            &f.readings,
            f.wall.as_nanos() as f64,
            o.per_cpu,
        ));
        if stop.is_stopped() {
            break;
        }
    }
    // The whole block once the command has ended (as perf), so that the command's own
    // output never lands inside it; -I printed its lines as they came.
    let mut block: Vec<u8> = Vec::new();
    let runs = walls.len() as u32;
    if o.interval.is_none() {
        render::header(&mut block, &o.fmt, &target, runs, false)?;
    }
    if repeat > 1 {
        let n = all_lines[0].len();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let first = &all_lines[0][i];
            let xs: Vec<f64> = all_lines.iter().filter_map(|r| r[i].value).collect();
            let (mean, rse) = if xs.is_empty() {
                (0.0, 0.0)
            } else {
                mean_and_rse(&xs)
            };
            out.push(Line {
                value: (!xs.is_empty()).then_some(mean),
                stddev_pct: first.count.map(|_| rse),
                metric: None,
                ..first.clone()
            });
        }
        // Metrics from the means.
        let (wall_mean, wall_rse) = mean_and_rse(&walls);
        attach_metrics(&mut out, wall_mean * 1e9);
        render::lines(&mut block, &o.fmt, None, &out)?;
        let n_runs = walls.len() as f64;
        let t = Times {
            wall: wall_mean,
            wall_sd: Some(wall_mean * wall_rse / 100.0),
            user: Some(user as f64 / 1e6 / n_runs),
            sys: Some(sysus as f64 / 1e6 / n_runs),
        };
        render::footer(&mut block, &o.fmt, t)?;
    } else {
        if o.interval.is_none() {
            render::lines(&mut block, &o.fmt, None, &all_lines[0])?;
        }
        let t = Times {
            wall: walls[0],
            wall_sd: None,
            user: Some(user as f64 / 1e6),
            sys: Some(sysus as f64 / 1e6),
        };
        render::footer(&mut block, &o.fmt, t)?;
    }
    sink.w().write_all(&block)?;
    Ok(code)
}

/// What [`watch`] waits on: a command (a stop is passed on to it, and the wait goes on
/// until it exits), or attached processes, threads or CPUs (a stop ends the wait).
enum Waiter<'a> {
    Command(&'a mut CountedCommand),
    Attached { counter: &'a Counter, watch: Watch },
}

impl Waiter<'_> {
    fn counter(&self) -> &Counter {
        match self {
            Waiter::Command(c) => c.counter(),
            Waiter::Attached { counter, .. } => counter,
        }
    }

    fn wait(&mut self, stop: &Stop, until: Option<Instant>) -> std::io::Result<Woke> {
        match self {
            Waiter::Command(c) => c.wait(stop, until),
            Waiter::Attached { watch, .. } => watch.wait(stop, until),
        }
    }
}

/// Waits until the target ends or the stop (with a command: until it exits), printing
/// interval deltas on the way (perf's column header before the first). Each interval's
/// metrics use its own length, measured between two reads (the last one is usually
/// shorter than -I).
fn watch(
    w: &mut Waiter<'_>,
    stop: &Stop,
    t0: Instant,
    o: &Opts,
    sink: &mut Sink,
) -> anyhow::Result<()> {
    // The previous interval's reading and when it was taken.
    let mut prev: Option<(Readings, Instant)> = None;
    let mut next_tick = o.interval.map(|i| t0 + i);
    loop {
        match w.wait(stop, next_tick).context("waiting for the target")? {
            Woke::Deadline => {
                if let (Some(iv), Some(t)) = (o.interval, next_tick) {
                    print_interval(w.counter(), t0, &mut prev, o, sink)?;
                    next_tick = Some(t + iv);
                }
            }
            Woke::Done => break,
            // With a command, the stop was passed on to it: wait for it to exit. When
            // attached to existing tasks or CPUs, the stop ends counting at once.
            Woke::Stopped => {
                if matches!(w, Waiter::Attached { .. }) {
                    break;
                }
            }
        }
    }
    if o.interval.is_some() {
        // The last, partial interval (the only one when the target ended before -I).
        print_interval(w.counter(), t0, &mut prev, o, sink)?;
    }
    Ok(())
}

/// Prints the counts since the previous interval (`prev`, or since `t0`), their
/// metrics over that interval's own length, and makes this reading the previous one.
fn print_interval(
    counter: &Counter,
    t0: Instant,
    prev: &mut Option<(Readings, Instant)>,
    o: &Opts,
    sink: &mut Sink,
) -> anyhow::Result<()> {
    let cur = counter.read()?;
    let at = Instant::now();
    let (delta, since) = match prev.as_ref() {
        Some((p, when)) => (cur.delta(p), *when),
        None => {
            render::header(sink.w(), &o.fmt, "", 1, true)?;
            (cur.clone(), t0)
        }
    };
    let length = at.saturating_duration_since(since);
    let ls = lines_of(counter, &delta, length.as_nanos() as f64, o.per_cpu);
    let ts = at.saturating_duration_since(t0).as_secs_f64();
    render::lines(sink.w(), &o.fmt, Some(ts), &ls)?;
    sink.w().flush()?;
    *prev = Some((cur, at));
    Ok(())
}

fn run_attached(
    events: &EventList,
    target: &Target,
    o: &Opts,
    stop: &Stop,
    sink: &mut Sink,
    has_pmu: bool,
) -> anyhow::Result<u8> {
    let mut list = events.clone();
    prepare(
        &mut list,
        CountOptions {
            inherit: o.inherit,
            enable_on_exec: false,
        },
    );
    let gone = hwprof_pmu::Error::NoSuchProcess;
    let mut watched = Watch::new();
    let (slots, desc): (Vec<Slot>, String) = match target {
        Target::Pids(pids) => {
            let mut slots = Vec::new();
            for &p in pids {
                let tasks = target::threads_of(p).map_err(|_| gone(p))?;
                if tasks.is_empty() {
                    return Err(gone(p).into());
                }
                slots.extend(tasks.into_iter().map(|t| Slot { pid: t, cpu: -1 }));
                watched.add_pid(p).map_err(|_| gone(p))?;
            }
            let ids: Vec<String> = pids.iter().map(i32::to_string).collect();
            (slots, format!("process id '{}'", ids.join(",")))
        }
        Target::Tids(tids) => {
            for &t in tids {
                if !std::path::Path::new(&format!("/proc/{t}")).exists() {
                    return Err(gone(t).into());
                }
            }
            watched.add_tids(tids);
            let ids: Vec<String> = tids.iter().map(i32::to_string).collect();
            (
                tids.iter().map(|&t| Slot { pid: t, cpu: -1 }).collect(),
                format!("thread id '{}'", ids.join(",")),
            )
        }
        _ => {
            let cpus = target.cpus().unwrap_or_default();
            let desc = if cpus == sysfs::online_cpus() {
                "'system wide'".to_string()
            } else {
                format!("'CPU(s) {}'", cpu_list_text(&cpus))
            };
            (
                cpus.iter()
                    .map(|&c| Slot {
                        pid: -1,
                        cpu: c as i32,
                    })
                    .collect(),
                desc,
            )
        }
    };
    let counter = Counter::open(list, slots)?;
    let mut told = false;
    notices(&counter, has_pmu, &mut told, o.quiet_notices);
    counter.enable()?;
    let t0 = Instant::now();
    let mut waiter = Waiter::Attached {
        counter: &counter,
        watch: watched,
    };
    watch(&mut waiter, stop, t0, o, sink)?;
    counter.disable()?;
    let wall = t0.elapsed();
    let mut block: Vec<u8> = Vec::new();
    if o.interval.is_none() {
        let r = counter.read()?;
        let ls = lines_of(&counter, &r, wall.as_nanos() as f64, o.per_cpu);
        render::header(&mut block, &o.fmt, &desc, 1, false)?;
        render::lines(&mut block, &o.fmt, None, &ls)?;
    }
    render::footer(
        &mut block,
        &o.fmt,
        Times {
            wall: wall.as_secs_f64(),
            ..Times::default()
        },
    )?;
    sink.w().write_all(&block)?;
    // Ended by Ctrl-C: perf's 130 (128 + SIGINT), after the counts; 0 when the
    // processes or threads ended on their own.
    Ok(if stop.is_stopped() { 130 } else { 0 })
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

    /// A multiplexed event (it ran 1 ms of the 4 ms it was enabled) shows its scaled
    /// count, perf's estimate raw × enabled / running, with the percentage of time it
    /// ran; the metrics come from the scaled values. No hardware PMU here multiplexes,
    /// so this is checked on the lines and their rendering rather than through the
    /// binary.
    #[test]
    fn multiplexed_counts_are_shown_scaled_with_the_time_running() {
        use hwprof_pmu::Count;
        let quarter = |raw| Count {
            raw,
            enabled: 4_000_000,
            running: 1_000_000,
        };
        let mut lines = vec![
            line_of("task-clock", None, true, Some(quarter(2_000_000))),
            line_of("page-faults", None, true, Some(quarter(1_234))),
            line_of("cycles", None, false, None),
        ];
        attach_metrics(&mut lines, 10e6);
        assert_eq!(lines[1].value, Some(4_936.0));
        let render = |fmt: Format| {
            let mut out = Vec::new();
            render::lines(&mut out, &fmt, None, &lines).expect("render");
            String::from_utf8(out).expect("utf-8")
        };
        let human = render(Format::Human);
        let row = |ev: &str| {
            human
                .lines()
                .find(|l| l.contains(ev))
                .unwrap_or_else(|| panic!("no {ev} in\n{human}"))
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        // 2 ms scaled to 8 ms of task-clock over 10 ms: 0.8 CPUs.
        assert_eq!(row("task-clock")[..2], ["8.00", "msec"], "{human}");
        assert!(human.contains("0.800 CPUs utilized"), "{human}");
        assert!(human.contains("(25.00%)"), "{human}");
        assert_eq!(row("page-faults")[0], "4,936", "{human}");
        // 4936 faults in 8 ms of task-clock: 617 K/sec.
        assert!(human.contains("617.000 K/sec"), "{human}");
        assert_eq!(row("cycles")[0], "<not", "{human}");
        let csv = render(Format::Csv(",".into()));
        assert!(
            csv.lines()
                .any(|l| l == "4936,,page-faults,1000000,25.00,617.000,K/sec"),
            "{csv}"
        );
        assert!(
            csv.lines()
                .any(|l| l.starts_with("8.00,msec,task-clock,1000000,25.00,"))
        );
        let json = render(Format::Json);
        let pf: serde_json::Value = json
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .find(|v: &serde_json::Value| v["event"] == "page-faults")
            .expect("page-faults line");
        assert_eq!(pf["scaled"].as_f64(), Some(4_936.0), "{pf}");
        assert_eq!(pf["value"].as_u64(), Some(1_234), "the raw count: {pf}");
        assert_eq!(pf["pct_running"].as_f64(), Some(25.0), "{pf}");
    }
}
