//! What the commands that record (record, flamegraph, offcpu) share over
//! [`hwprof_sampler::recorder`]: their target flags, `-F`/`-c`/`--call-graph`, the
//! perf.data output, and the recorder's notices, errors and lost-record warning as the
//! user reads them.

use anyhow::anyhow;
use hwprof_pmu::EventList;
use hwprof_pmu::event::Class;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::{Flags, Rules, Target};
use hwprof_sampler::config::{self, CallGraph, Sampling};
use hwprof_sampler::output::Output;
use hwprof_sampler::recorder::{Recorded, Recorder, Recording, Sink};

use crate::args::TargetWords;
use crate::{ExitWith, usage};

/// The target of a recording (`-p`, `-t`, `-a`/`-C` or a command), in record's words.
pub fn target(flags: &Flags<'_>) -> anyhow::Result<Target> {
    let conflict = "give one target: a command after --, or -p, -t, or -a/-C";
    let words = TargetWords {
        several: conflict,
        command_and: conflict,
        missing: "nothing to record: give a command after --, or -p PID, -t TID, or -a (e.g. `hwprof record -g -- ./app`)",
    };
    let rules = Rules {
        live_ids: true,
        ..Rules::default()
    };
    crate::args::target(flags, rules, &words)
}

/// `-F` (Hz or `max`) or `-c` (a period), checked.
pub fn sampling(freq: Option<&str>, count: Option<u64>) -> anyhow::Result<Sampling> {
    Ok(match (freq, count) {
        (Some(f), _) => Sampling::Freq(config::parse_freq(f).map_err(crate::Usage)?),
        (None, Some(0)) => return usage("-c must be at least 1"),
        (None, Some(c)) => Sampling::Period(c),
        (None, None) => Sampling::Default,
    })
}

/// `--call-graph MODE`, or `-g` (frame pointers).
pub fn call_graph(mode: Option<&str>, fp: bool) -> anyhow::Result<Option<CallGraph>> {
    Ok(match (mode, fp) {
        (Some(s), _) => {
            Some(CallGraph::parse(s).map_err(|e| crate::Usage(format!("--call-graph: {e}")))?)
        }
        (None, true) => Some(CallGraph::Fp),
        (None, false) => None,
    })
}

/// Data pages per ring from `--mmap-pages`.
pub fn ring_pages(m: Option<&str>) -> anyhow::Result<usize> {
    Ok(config::ring_pages(m).map_err(crate::Usage)?)
}

/// Refuses hardware events the user named on a machine without a hardware PMU.
fn check_core_events(list: &EventList) -> anyhow::Result<()> {
    if let Some(e) = list.events.iter().find(|e| e.class == Class::Core) {
        return Err(ExitWith(
            1,
            format!(
                "{}: not supported here: this kernel exposes no hardware PMU (usual in VMs and containers); sample a software event instead, e.g. -e cpu-clock",
                e.name
            ),
        )
        .into());
    }
    Ok(())
}

/// The perf.data output: stdout for `-`, else a new file (0600, `.old` kept); when it
/// cannot seek, the target's stdout goes to stderr.
pub fn open_output(path: &std::path::Path) -> anyhow::Result<Output> {
    if path.as_os_str() == "-" {
        return crate::outfile::binary_stdout();
    }
    let out = crate::outfile::create(path, &crate::outfile::PERF_DATA)?;
    if !out.is_seekable() {
        crate::outfile::keep_stdout_clean(&out)?;
    }
    Ok(out)
}

/// Records `rec` into `output`: notices on stderr (unless `quiet`), open errors in the
/// user's words (`branch_flag`: the flag that asked for branch stacks), and a warning
/// when records were lost.
pub fn record(
    rec: Recording,
    output: Output,
    quiet: bool,
    branch_flag: Option<&str>,
    stop: &Stop,
) -> anyhow::Result<Recorded> {
    let note = |n: &String| {
        if !quiet {
            eprintln!("hwprof: note: {n}");
        }
    };
    let recorder = match Recorder::open(rec) {
        Ok(r) => r,
        Err(e) => {
            e.notices.iter().for_each(note);
            return Err(open_error(e.error, &e.events, branch_flag));
        }
    };
    recorder.notices().iter().for_each(note);
    let done = recorder.run(Sink::PerfData(output), stop)?;
    let s = &done.stats;
    if s.lost > 0 || s.lost_samples > 0 {
        eprintln!(
            "hwprof: warning: {} and {} lost (the ring buffer was full): raise --mmap-pages or lower -F",
            crate::render::plural(s.lost, "record"),
            crate::render::plural(s.lost_samples, "sample")
        );
    }
    Ok(done)
}

/// What to use instead of branch stacks for call stacks.
pub const INSTEAD_OF_BRANCHES: &str =
    "use -g (frame-pointer call stacks) or --call-graph dwarf instead";

/// Why the events did not open, in one line.
fn open_error(
    e: hwprof_sampler::Error,
    list: &EventList,
    branch_flag: Option<&str>,
) -> anyhow::Error {
    let failed = match &e {
        hwprof_sampler::Error::Pmu(hwprof_pmu::Error::Open { event, .. }) => Some(event.as_str()),
        _ => None,
    };
    let event = failed
        .or_else(|| list.events.first().map(|e| e.name.as_str()))
        .unwrap_or_default()
        .to_string();
    // A PMU that cannot record branches answers EOPNOTSUPP: say that, not "not supported".
    if let (Some(flag), Some(libc::EOPNOTSUPP)) = (branch_flag, e.raw_os_error()) {
        return anyhow!(
            "{flag}: cannot sample branch stacks on '{event}': this PMU does not record branches (Intel LBR, AMD BRS or LbrExtV2; VMs often do not pass them through): {INSTEAD_OF_BRANCHES}"
        );
    }
    if e.raw_os_error() == Some(libc::EINVAL) {
        // PMUs other than the CPU's (msr, power, uncore...) mostly only count: the
        // kernel's EINVAL for a sampling event there is that, not a bad config.
        if let Some(ev) = list
            .events
            .iter()
            .find(|x| x.name == event && x.class == Class::Other)
        {
            return anyhow!(
                "cannot sample '{event}': the '{}' PMU refused a sampling event (PMUs such as msr, power and uncore only count): count it with `hwprof stat -e {event}`",
                ev.pmu
            );
        }
        // A frequency above the kernel's limit (refused before opening when the limit
        // is readable).
        let max = config::max_sample_rate();
        if list
            .events
            .iter()
            .any(|e| e.attr.freq && max.is_none_or(|m| e.attr.sample_period > m))
        {
            return anyhow!(
                "{e}: is -F above the kernel's limit of {} Hz (/proc/sys/kernel/perf_event_max_sample_rate)?",
                max.map_or("?".into(), |m| m.to_string())
            );
        }
    }
    // The PMU layer's message already names the event and says what to do.
    anyhow!(e)
}

/// Refuses, before anything opens, what cannot record here: branch stacks (see
/// [`check_branch_events`]; without a PMU, before the default event's note) and
/// hardware events the user named on a machine without a hardware PMU.
pub fn check_events(
    rec: &Recording,
    enc: &hwprof_pmu::Encoder,
    branch_flag: Option<&str>,
    off_cpu: bool,
) -> anyhow::Result<()> {
    let default_event = rec.options.default_event;
    let has_pmu = enc.host_has_cpu_pmu();
    if let Some(flag) = branch_flag.filter(|_| default_event && !has_pmu) {
        // Refused before the note: the fallback to cpu-clock cannot help here.
        return Err(no_pmu_for_branches(flag));
    }
    let (first, _) = rec.events_to_open()?;
    if let Some(flag) = branch_flag {
        check_branch_events(off_cpu, flag, &first, default_event, has_pmu)?;
    }
    if !default_event && !has_pmu {
        check_core_events(&first)?;
    }
    Ok(())
}

/// The flag that asked for branch stacks, as the user wrote it (`-b`, `-j FILTERS`,
/// `--call-graph lbr`), or `None` when none did.
pub fn branch_flag(filter: Option<&str>, any: bool, call_graph: Option<&str>) -> Option<String> {
    if let Some(j) = filter {
        return Some(format!("-j {j}"));
    }
    if any {
        return Some("-b".to_string());
    }
    call_graph
        .filter(|c| c.trim().eq_ignore_ascii_case("lbr"))
        .map(|_| "--call-graph lbr".to_string())
}

/// Branch stacks asked for on a machine without a hardware PMU (perf: "PMU Hardware
/// or event type doesn't support branch stack sampling"): a limit of this machine, so
/// exit 1, as for `-e cycles` here.
fn no_pmu_for_branches(flag: &str) -> anyhow::Error {
    ExitWith(
        1,
        format!(
            "{flag}: branch-stack sampling (Intel LBR, AMD BRS or LbrExtV2) needs a hardware PMU that records branches, and this machine exposes none (usual in VMs and containers): {INSTEAD_OF_BRANCHES}"
        ),
    )
    .into()
}

/// Refuses, before anything opens, branch stacks that cannot work: on events that never
/// have them (software, tracepoint, breakpoint, uprobe: a usage error, exit 2) or on a
/// machine without a hardware PMU (exit 1). The kernel would only say EOPNOTSUPP.
fn check_branch_events(
    off_cpu: bool,
    flag: &str,
    list: &EventList,
    default_event: bool,
    has_pmu: bool,
) -> anyhow::Result<()> {
    let kind = |c: Class| match c {
        Class::Software => Some("a software event"),
        Class::Tracepoint => Some("a tracepoint"),
        Class::Breakpoint => Some("a breakpoint"),
        Class::Uprobe => Some("a uprobe"),
        Class::Core | Class::Other => None,
    };
    if off_cpu {
        return usage(format!(
            "--off-cpu samples cpu-clock and sched:sched_switch, which cannot record branch stacks (only hardware events can): leave out {flag}; -g or --call-graph dwarf give call stacks"
        ));
    }
    // The default event is the machine's choice (cpu-clock only without a PMU).
    let named = list.events.iter().filter(|_| !default_event);
    if let Some((e, k)) = named.filter_map(|e| kind(e.class).map(|k| (e, k))).next() {
        let way_out = if has_pmu {
            format!("sample a hardware event (e.g. -e cycles {flag}), or {INSTEAD_OF_BRANCHES}")
        } else {
            format!("this machine has no hardware PMU either, so {INSTEAD_OF_BRANCHES}")
        };
        return usage(format!(
            "{flag}: branch-stack sampling needs a hardware event, and '{}' is {k}: {way_out}",
            e.name
        ));
    }
    if !has_pmu {
        return Err(no_pmu_for_branches(flag));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eopnotsupp_with_branch_stacks_names_branch_recording() {
        let e = hwprof_sampler::Error::Pmu(hwprof_pmu::Error::Open {
            event: "cycles".into(),
            source: std::io::Error::from_raw_os_error(libc::EOPNOTSUPP),
            hint: "not supported".into(),
        });
        let msg = open_error(e, &EventList::default(), Some("-b")).to_string();
        assert!(
            msg.starts_with(
                "-b: cannot sample branch stacks on 'cycles': this PMU does not record branches"
            ),
            "{msg}"
        );
        assert!(msg.contains("--call-graph dwarf"), "{msg}");
        let e = hwprof_sampler::Error::Pmu(hwprof_pmu::Error::Open {
            event: "cycles".into(),
            source: std::io::Error::from_raw_os_error(libc::EOPNOTSUPP),
            hint: "not supported".into(),
        });
        let msg = open_error(e, &EventList::default(), None).to_string();
        assert!(!msg.contains("branch"), "{msg}");
    }
}
