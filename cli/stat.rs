//! `hwprof stat`: count events for a command, running PIDs/TIDs, or CPUs.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hwprof_pmu::counter::{CountOptions, Readings, prepare};
use hwprof_pmu::event::Class;
use hwprof_pmu::metrics::Context as MetricCtx;
use hwprof_pmu::sys::{self, ExecError, Workload};
use hwprof_pmu::{Counter, EventList, Slot, Status, sysfs};

use crate::args::StatArgs;
use crate::outfile::Sink;
use crate::render::{self, Format, Line, Times};
use crate::{ExitWith, usage};

/// perf stat's default events.
const DEFAULT_EVENTS: &str = "task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,branch-misses";

/// Where to count.
enum Target {
    /// Run a command (optionally system-wide on `cpus` while it runs).
    Command {
        argv: Vec<String>,
        cpus: Option<Vec<u32>>,
    },
    /// Existing processes (all their threads).
    Pids(Vec<i32>),
    /// Existing threads.
    Tids(Vec<i32>),
    /// System-wide, until SIGINT.
    Cpus(Vec<u32>),
}

pub fn run(a: StatArgs) -> anyhow::Result<u8> {
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
    if a.no_aggr
        && !matches!(
            &target,
            Target::Cpus(_) | Target::Command { cpus: Some(_), .. }
        )
    {
        return usage("-A (per-CPU counts) needs -a or -C");
    }
    if a.repeat > 1 && !matches!(target, Target::Command { .. }) {
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
    sys::catch_interrupts().context("installing the SIGINT handler")?;
    let quiet_notices = !matches!(fmt, Format::Human) && a.output.is_none();
    let opts = Opts {
        fmt,
        quiet_notices,
        interval: a.interval.map(Duration::from_millis),
        per_cpu: a.no_aggr,
        inherit: !a.no_inherit,
    };
    let code = match &target {
        Target::Command { argv, cpus } => run_command(
            &events,
            argv,
            cpus.as_deref(),
            a.repeat,
            &opts,
            &mut sink,
            enc.host_has_cpu_pmu(),
        )?,
        _ => run_attached(&events, &target, &opts, &mut sink, enc.host_has_cpu_pmu())?,
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
    let system_wide = a.all_cpus || a.cpus.is_some();
    let n_targets =
        usize::from(a.pid.is_some()) + usize::from(a.tid.is_some()) + usize::from(system_wide);
    if n_targets > 1 {
        return usage("choose one of -p, -t, -a/-C");
    }
    let cpus = if system_wide {
        let online = sysfs::online_cpus();
        Some(match &a.cpus {
            Some(list) => {
                let v = sysfs::parse_cpu_list(list).map_err(crate::Usage)?;
                if let Some(bad) = v.iter().find(|c| !online.contains(c)) {
                    return usage(format!(
                        "CPU {bad} is not online (online CPUs: {})",
                        cpu_list_text(&online)
                    ));
                }
                v
            }
            None => online,
        })
    } else {
        None
    };
    if !a.command.is_empty() {
        if a.pid.is_some() || a.tid.is_some() {
            return usage("give either a command or -p/-t, not both");
        }
        return Ok(Target::Command {
            argv: a.command.clone(),
            cpus,
        });
    }
    if let Some(p) = &a.pid {
        return Ok(Target::Pids(crate::args::id_list(p, "-p")?));
    }
    if let Some(t) = &a.tid {
        return Ok(Target::Tids(crate::args::id_list(t, "-t")?));
    }
    match cpus {
        Some(c) => Ok(Target::Cpus(c)),
        None => usage("nothing to count: give a command after `--`, or -p PID, -t TID, or -a"),
    }
}

fn cpu_list_text(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
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

pub(crate) fn exec_error(argv: &[String], e: ExecError) -> anyhow::Error {
    match e {
        ExecError::Exec(err) => {
            let code = if err.raw_os_error() == Some(libc::ENOENT) {
                127
            } else {
                126
            };
            ExitWith(code, format!("cannot run '{}': {err}", argv[0])).into()
        }
        ExecError::Setup(err) => anyhow::Error::new(err).context(format!("starting '{}'", argv[0])),
    }
}

fn run_command(
    events: &EventList,
    argv: &[String],
    cpus: Option<&[u32]>,
    repeat: u32,
    o: &Opts,
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
    for _ in 0..repeat {
        let mut wl = Workload::prepare(argv).map_err(|e| exec_error(argv, e))?;
        let mut list = events.clone();
        prepare(
            &mut list,
            CountOptions {
                inherit: o.inherit,
                enable_on_exec: cpus.is_none(),
            },
        );
        let slots: Vec<Slot> = match cpus {
            Some(c) => c
                .iter()
                .map(|&cpu| Slot {
                    pid: -1,
                    cpu: cpu as i32,
                })
                .collect(),
            None => vec![Slot {
                pid: wl.pid(),
                cpu: -1,
            }],
        };
        let counter = Counter::open(list, slots)?;
        if cpus.is_some() {
            counter.enable()?;
        }
        let pidfd = sys::pidfd_open(wl.pid()).context("watching the workload")?;
        let t0 = Instant::now();
        if let Err(e) = wl.start() {
            let _ = sys::wait(wl.pid());
            return Err(exec_error(argv, e));
        }
        notices(&counter, has_pmu, &mut told, o.quiet_notices);
        let pid = wl.pid();
        let watched = watch(&counter, &[pidfd], &[], t0, o, sink, || {
            let _ = sys::kill(pid, libc::SIGINT);
            true
        });
        if let Err(e) = watched {
            // Intervals could not be written (stdout closed, say): stop the command as
            // Ctrl-C does and wait for it, then end with the error.
            let _ = sys::kill(pid, libc::SIGINT);
            let _ = sys::wait(pid);
            return Err(e);
        }
        let wall = t0.elapsed();
        let exit = sys::wait(pid).context("waiting for the workload")?;
        if cpus.is_some() {
            counter.disable()?;
        }
        code = u8::try_from(exit.code).unwrap_or(1);
        user += exit.user_us;
        sysus += exit.sys_us;
        walls.push(wall.as_secs_f64());
        let r = counter.read()?;
        all_lines.push(lines_of(&counter, &r, wall.as_nanos() as f64, o.per_cpu));
        if sys::interrupted() {
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

/// Waits until every watched target ends (pidfds readable, `tids` gone) or SIGINT,
/// printing interval deltas on the way (perf's column header before the first). Each
/// interval's metrics use its own length, measured between two reads (the last one is
/// usually shorter than -I). `on_interrupt` runs on the first SIGINT and says whether
/// to keep waiting for the targets (true with a workload) or stop now.
fn watch(
    counter: &Counter,
    pidfds: &[OwnedFd],
    tids: &[i32],
    t0: Instant,
    o: &Opts,
    sink: &mut Sink,
    mut on_interrupt: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let mut done = vec![false; pidfds.len()];
    // The previous interval's reading and when it was taken.
    let mut prev: Option<(Readings, Instant)> = None;
    let mut next_tick = o.interval.map(|i| t0 + i);
    let mut interrupted = false;
    loop {
        let now = Instant::now();
        let mut timeout: i32 = -1;
        if let Some(t) = next_tick {
            timeout = t
                .saturating_duration_since(now)
                .as_millis()
                .min(i32::MAX as u128) as i32;
        }
        if !tids.is_empty() {
            timeout = if timeout < 0 { 100 } else { timeout.min(100) };
        }
        let mut live: Vec<&OwnedFd> = pidfds
            .iter()
            .zip(&done)
            .filter(|(_, d)| !**d)
            .map(|(f, _)| f)
            .collect();
        let live_idx: Vec<usize> = (0..pidfds.len()).filter(|&i| !done[i]).collect();
        // Until the first SIGINT is handled, its pipe wakes the poll even when the signal
        // lands between the check below and the poll (it stays readable afterwards, so
        // it is left out then).
        if !interrupted && let Some(fd) = sys::interrupt_fd() {
            live.push(fd);
        }
        let ready = sys::poll_readable(&live, timeout).context("waiting for the target")?;
        for r in ready {
            if let Some(&i) = live_idx.get(r) {
                done[i] = true;
            }
        }
        if let (Some(iv), Some(t)) = (o.interval, next_tick) {
            if Instant::now() >= t {
                print_interval(counter, t0, &mut prev, o, sink)?;
                next_tick = Some(t + iv);
            }
        }
        let tids_alive = tids.iter().any(|&t| sys::process_exists(t));
        let all_done = done.iter().all(|d| *d) && !tids_alive;
        if (!pidfds.is_empty() || !tids.is_empty()) && all_done {
            break;
        }
        if sys::interrupted() && !interrupted {
            interrupted = true;
            // With a workload, pass the interrupt on and wait for it to exit; when
            // attached to existing tasks or CPUs, SIGINT ends counting at once.
            if !on_interrupt() {
                break;
            }
        }
    }
    if o.interval.is_some() {
        // The last, partial interval (the only one when the target ended before -I).
        print_interval(counter, t0, &mut prev, o, sink)?;
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
    let (slots, desc, pidfds, tids): (Vec<Slot>, String, Vec<OwnedFd>, Vec<i32>) = match target {
        Target::Pids(pids) => {
            let mut slots = Vec::new();
            let mut fds = Vec::new();
            for &p in pids {
                let tasks = threads_of(p)?;
                slots.extend(tasks.into_iter().map(|t| Slot { pid: t, cpu: -1 }));
                fds.push(sys::pidfd_open(p).map_err(|_| hwprof_pmu::Error::NoSuchProcess(p))?);
            }
            let ids: Vec<String> = pids.iter().map(i32::to_string).collect();
            (
                slots,
                format!("process id '{}'", ids.join(",")),
                fds,
                Vec::new(),
            )
        }
        Target::Tids(tids) => {
            for &t in tids {
                if !Path::new(&format!("/proc/{t}")).exists() {
                    bail!(hwprof_pmu::Error::NoSuchProcess(t));
                }
            }
            let ids: Vec<String> = tids.iter().map(i32::to_string).collect();
            (
                tids.iter().map(|&t| Slot { pid: t, cpu: -1 }).collect(),
                format!("thread id '{}'", ids.join(",")),
                Vec::new(),
                tids.clone(),
            )
        }
        Target::Cpus(cpus) => {
            let all = sysfs::online_cpus();
            let desc = if *cpus == all {
                "'system wide'".to_string()
            } else {
                format!("'CPU(s) {}'", cpu_list_text(cpus))
            };
            (
                cpus.iter()
                    .map(|&c| Slot {
                        pid: -1,
                        cpu: c as i32,
                    })
                    .collect(),
                desc,
                Vec::new(),
                Vec::new(),
            )
        }
        Target::Command { .. } => unreachable!("commands run in run_command"),
    };
    let counter = Counter::open(list, slots)?;
    let mut told = false;
    notices(&counter, has_pmu, &mut told, o.quiet_notices);
    counter.enable()?;
    let t0 = Instant::now();
    watch(&counter, &pidfds, &tids, t0, o, sink, || false)?;
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
    Ok(if sys::interrupted() { 130 } else { 0 })
}

/// Every thread of a process, from /proc/PID/task.
fn threads_of(pid: i32) -> anyhow::Result<Vec<i32>> {
    let dir = format!("/proc/{pid}/task");
    let rd = std::fs::read_dir(&dir).map_err(|_| hwprof_pmu::Error::NoSuchProcess(pid))?;
    let mut v: Vec<i32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    if v.is_empty() {
        bail!(hwprof_pmu::Error::NoSuchProcess(pid));
    }
    Ok(v)
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

    #[test]
    fn cpu_list_text_compacts_ranges() {
        assert_eq!(cpu_list_text(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }
}
