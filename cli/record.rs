//! `hwprof record`: sample a command, PIDs, threads or CPUs into perf.data.
//!
//! This file checks the flags (events, sampling, branch stacks, the target, the output)
//! and prints; [`hwprof_sampler::recorder`] does the recording: perf's fallbacks, the
//! session, synthesized records, build ids, header features and the writer. The output
//! is opened before anything else, so a wrong or unwritable `-o` fails before any event
//! opens or the target runs.
//!
//! `-o -` and an `-o` that cannot seek (a FIFO, a terminal) get perf's pipe mode: the
//! header features (all but BUILD_ID) and the tracing data are written first, and the
//! workload's stdout goes to stderr so that only perf.data reaches the pipe.

use anyhow::anyhow;
use hwprof_pmu::EventList;
use hwprof_pmu::event::Class;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::Flags;
use hwprof_sampler::config::{self, RecordOptions};
use hwprof_sampler::recorder::Recording;
use hwprof_sampler::session::SessionOptions;

use crate::args::RecordArgs;
use crate::encode::{encoder, parse_all, print_json};
use crate::recording::{self, INSTEAD_OF_BRANCHES};
use crate::{ExitWith, usage};

pub fn run(mut a: RecordArgs, stop: &Stop) -> anyhow::Result<u8> {
    if a.off_cpu {
        if !a.events.is_empty() || a.freq.is_some() || a.count.is_some() {
            return usage(
                "--off-cpu records its own events (cpu-clock at 4000 Hz and every sched:sched_switch): leave out -e, -F and -c",
            );
        }
        // Every switch (period 1) and cpu-clock at its default frequency, as `hwprof
        // offcpu` records them; callchains are the point.
        a.events = vec!["sched:sched_switch".to_string(), "cpu-clock".to_string()];
        a.switch_events = true;
        if a.call_graph.is_none() {
            a.callgraph_fp = true;
        }
    }
    let target = recording::target(&Flags {
        command: &a.command,
        pid: a.pid.as_deref(),
        tid: a.tid.as_deref(),
        all_cpus: a.all_cpus,
        cpus: a.cpus.as_deref(),
    })?;
    let enc = encoder(None, &a.event_file)?;
    let default_event = a.events.is_empty();
    // Options are checked before anything is said or opened.
    let options = record_options(&a, default_event)?;
    let data_pages = recording::ring_pages(a.mmap_pages.as_deref())?;
    // The output before anything opens or runs: a wrong -o costs nothing.
    let output = if a.dry_run {
        None
    } else {
        Some(recording::open_output(&a.output)?)
    };
    let has_pmu = enc.host_has_cpu_pmu();
    let branch_flag = branch_flag(&a);
    let list = if default_event {
        if let Some(flag) = branch_flag.as_deref().filter(|_| !a.dry_run && !has_pmu) {
            // Refused before the note: the fallback to cpu-clock cannot help here.
            return Err(no_pmu_for_branches(flag));
        }
        EventList::default()
    } else {
        parse_all(&enc, &a.events)?
    };
    let mut rec = Recording::new(list, target);
    rec.options = options;
    rec.session = SessionOptions {
        data_pages,
        inherit: !a.no_inherit,
        duration: a.duration,
    };
    // --dry-run shows the attrs whatever they are; it opens nothing.
    if a.dry_run {
        let (list, _) = rec.events_to_open()?;
        print_json(&list)?;
        return Ok(0);
    }
    let (first, _) = rec.events_to_open()?;
    if let Some(flag) = branch_flag.as_deref() {
        check_branch_events(&a, flag, &first, default_event, has_pmu)?;
    }
    if !default_event && !has_pmu {
        recording::check_core_events(&first)?;
    }
    let Some(output) = output else {
        return Err(anyhow!("no output opened"));
    };
    let done = recording::record(rec, output, a.quiet, branch_flag.as_deref(), stop)?;
    if !a.quiet && !a.no_summary {
        eprintln!(
            "[ hwprof record: {}, {} lost, {:.3} MB written to {}{} ]",
            crate::render::plural(done.stats.samples, "sample"),
            done.stats.lost + done.stats.lost_samples,
            done.data_bytes as f64 / 1e6,
            if a.output.as_os_str() == "-" {
                "stdout".to_string()
            } else {
                a.output.display().to_string()
            },
            if done.pipe { " (pipe mode)" } else { "" }
        );
    }
    Ok(done.exit_code())
}

fn record_options(a: &RecordArgs, default_event: bool) -> anyhow::Result<RecordOptions> {
    let sampling = recording::sampling(a.freq.as_deref(), a.count)?;
    let call_graph = recording::call_graph(a.call_graph.as_deref(), a.callgraph_fp)?;
    let branch_filter = match (&a.branch_filter, a.branch_any) {
        (Some(j), _) => {
            Some(config::parse_branch_filter(j).map_err(|e| crate::Usage(format!("-j: {e}")))?)
        }
        (None, true) => Some(hwprof_pmu::attr::branch::ANY),
        (None, false) => None,
    };
    Ok(RecordOptions {
        sampling,
        call_graph,
        branch_filter,
        data: a.data,
        weight: a.weight,
        inherit: !a.no_inherit,
        default_event,
        switch_events: a.switch_events,
        ..RecordOptions::default()
    })
}

/// The flag that asked for branch stacks, as the user wrote it (`-b`, `-j FILTERS`,
/// `--call-graph lbr`), or `None` when none did.
fn branch_flag(a: &RecordArgs) -> Option<String> {
    if let Some(j) = &a.branch_filter {
        return Some(format!("-j {j}"));
    }
    if a.branch_any {
        return Some("-b".to_string());
    }
    a.call_graph
        .as_deref()
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
    a: &RecordArgs,
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
    if a.off_cpu {
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
