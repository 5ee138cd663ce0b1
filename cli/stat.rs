//! `hwprof stat`: count events for a command, running PIDs/TIDs, or CPUs.

mod topdown;

use std::time::Duration;

use anyhow::Context;
use hwprof_pmu::stat::{self, Counting, Run};
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::{Rules, Target};
use hwprof_pmu::{Counter, EventList};

use crate::args::{StatArgs, TargetWords};
use crate::destination::Sink;
use crate::error::usage;
use crate::render::{self, Format, Times};

/// perf stat's default events.
const DEFAULT_EVENTS: &str = "task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,branch-misses";

pub fn run(a: StatArgs, stop: &Stop) -> anyhow::Result<u8> {
    if a.topdown {
        return topdown::run(&a, stop);
    }
    if a.topdown_level.is_some() || a.metrics_file.is_some() {
        return usage("--level and --metrics-file go with --topdown");
    }
    let perf_keys = a.json_keys.as_deref() == Some("perf");
    let fmt = match (&a.sep, a.json || perf_keys) {
        (Some(s), _) if s.is_empty() => return usage("-x needs a non-empty separator"),
        (Some(s), _) => Format::Csv(s.clone()),
        (None, true) if perf_keys => Format::PerfJson,
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
    let mut enc = crate::events::encoder(None, &a.record.event_file)?;
    enc.set_processes(target.processes());
    let defaults = a.record.events.is_empty();
    let events = if defaults {
        enc.parse(DEFAULT_EVENTS)?
    } else {
        crate::events::parse_all(&enc, &a.record.events)?
    };
    let mut sink = Sink::open(a.output.as_deref(), stop)?;
    let quiet_notices = !matches!(fmt, Format::Human) && a.output.is_none();
    if !quiet_notices {
        for n in hwprof_pmu::probe::breakpoint_notices(&events, &target) {
            eprintln!("hwprof: warning: {}", render::escape(&n));
        }
    }
    let interval = a.interval.map(Duration::from_millis);
    let opts = Opts {
        fmt,
        quiet_notices,
        interval,
        counting: stat::Options {
            inherit: !a.no_inherit,
            per_cpu: a.no_aggr,
            interval,
            duration: a.record.duration.or(a.timeout),
        },
    };
    let code = match target.argv() {
        Some(_) => run_command(
            &events,
            &target,
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
    counting: stat::Options,
}

fn target_of(a: &StatArgs) -> anyhow::Result<Target> {
    let flags = a.record.flags();
    let rules = Rules {
        live_ids: false,
        online_cpus: true,
    };
    crate::args::target(
        &flags,
        rules,
        &TargetWords {
            several: "choose one of -p, -t, -a/-C",
            missing: "nothing to count: give a command after `--`, or -p PID, -t TID, or -a",
        },
    )
}

/// Prints the one notice about unsupported hardware events, and any counter notices.
fn notices(counter: &Counter, has_cpu_pmu: bool, quiet: bool) {
    if quiet {
        return;
    }
    for n in counter.notices() {
        eprintln!("hwprof: note: {}", render::escape(n));
    }
    let unsupported = stat::unsupported_hardware(counter);
    if !unsupported.is_empty() {
        let why = if has_cpu_pmu {
            "the CPU PMU rejected them (wrong model, or counters taken)"
        } else {
            "this kernel exposes no hardware PMU (no /sys/bus/event_source/devices/cpu; usual in VMs and containers)"
        };
        eprintln!(
            "hwprof: note: {} <not supported>: {why}; software events are still counted",
            render::escape(&unsupported.join(", "))
        );
    }
}

fn run_command(
    events: &EventList,
    target: &Target,
    repeat: u32,
    o: &Opts,
    stop: &Stop,
    sink: &mut Sink,
    has_pmu: bool,
) -> anyhow::Result<u8> {
    let mut runs: Vec<Run> = Vec::new();
    let mut desc = String::new();
    for i in 0..repeat {
        let mut c = Counting::start(target, events, &o.counting)?;
        notices(c.counter(), has_pmu, i > 0 || o.quiet_notices);
        desc = c.description().to_string();
        if let Err(e) = print_intervals(&mut c, stop, o, sink) {
            // Intervals could not be written (stdout closed, say): stop the command as
            // Ctrl-C does and wait for it, then end with the error.
            c.abort();
            return Err(e);
        }
        runs.push(c.finish()?);
        if stop.is_stopped() {
            break;
        }
    }
    let code = runs.last().map_or(0, Run::exit_code);
    // The whole block once the command has ended (as perf), so that the command's own
    // output never lands inside it; -I printed its lines as they came.
    let mut block: Vec<u8> = Vec::new();
    if o.interval.is_none() {
        render::header(&mut block, &o.fmt, &desc, runs.len() as u32, false)?;
    }
    let t = if repeat > 1 {
        let s = stat::summarize(&runs);
        render::lines(&mut block, &o.fmt, None, &s.lines)?;
        Times {
            wall: s.wall,
            wall_sd: Some(s.wall_sd),
            user: Some(s.user),
            sys: Some(s.sys),
        }
    } else {
        let run = runs.first().context("no run")?;
        if o.interval.is_none() {
            render::lines(&mut block, &o.fmt, None, &run.lines)?;
        }
        let (user, sys) = stat::cpu_seconds(&runs);
        Times {
            wall: run.wall.as_secs_f64(),
            wall_sd: None,
            user: Some(user),
            sys: Some(sys),
        }
    };
    // The command's CPU time is what was counted only when it is the target (perf
    // prints it then too, and not for `-a -- CMD` or `-p PID -- CMD`).
    let t = match target.attached() {
        None => t,
        Some(_) => Times {
            user: None,
            sys: None,
            ..t
        },
    };
    render::footer(&mut block, &o.fmt, t)?;
    sink.w().write_all(&block)?;
    Ok(code)
}

/// Waits until the end of counting, printing interval deltas on the way (perf's column
/// header before the first).
fn print_intervals(c: &mut Counting, stop: &Stop, o: &Opts, sink: &mut Sink) -> anyhow::Result<()> {
    while let Some(iv) = c.next_interval(stop)? {
        if iv.first {
            render::header(sink.w(), &o.fmt, "", 1, true)?;
        }
        render::lines(sink.w(), &o.fmt, Some(iv.at), &iv.lines)?;
        sink.w().flush()?;
    }
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
    let mut c = Counting::attach(events, target, &o.counting)?;
    notices(c.counter(), has_pmu, o.quiet_notices);
    let desc = c.description().to_string();
    print_intervals(&mut c, stop, o, sink)?;
    let run = c.finish()?;
    let mut block: Vec<u8> = Vec::new();
    if o.interval.is_none() {
        render::header(&mut block, &o.fmt, &desc, 1, false)?;
        render::lines(&mut block, &o.fmt, None, &run.lines)?;
    }
    render::footer(
        &mut block,
        &o.fmt,
        Times {
            wall: run.wall.as_secs_f64(),
            ..Times::default()
        },
    )?;
    sink.w().write_all(&block)?;
    // Ended by Ctrl-C: perf's 130 (128 + SIGINT), after the counts; 0 when the
    // processes or threads ended on their own or --duration passed.
    Ok(if stop.is_stopped() && !run.timed {
        130
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwprof_pmu::stat::{Line, attach_metrics};

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
            Line::of("task-clock", None, true, Some(quarter(2_000_000))),
            Line::of("page-faults", None, true, Some(quarter(1_234))),
            Line::of("cycles", None, false, None),
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
