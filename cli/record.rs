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
use hwprof_pmu::stop::Stop;
use hwprof_sampler::config::{self, RecordOptions};
use hwprof_sampler::recorder::RecordPlan;
use hwprof_sampler::session::SessionOptions;

use crate::args::RecordCommandArgs;
use crate::error::usage;
use crate::events::{encoder, parse_all, print_json};
use crate::sampling;

pub fn run(mut a: RecordCommandArgs, stop: &Stop) -> anyhow::Result<u8> {
    if a.off_cpu {
        if !a.record.events.is_empty() || a.record.freq.is_some() || a.record.count.is_some() {
            return usage(
                "--off-cpu records its own events (cpu-clock at 4000 Hz and every sched:sched_switch): leave out -e, -F and -c",
            );
        }
        // Every switch (period 1) and cpu-clock at its default frequency, as `hwprof
        // offcpu` records them; callchains are the point.
        a.record.events = vec!["sched:sched_switch".to_string(), "cpu-clock".to_string()];
        a.switch_events = true;
        if a.record.call_graph.is_none() {
            a.record.callgraph_fp = true;
        }
    }
    let target = sampling::target(&a.record.flags())?;
    let mut enc = encoder(None, &a.record.event_file)?;
    enc.set_processes(target.processes());
    let default_event = a.record.events.is_empty();
    // Options are checked before anything is said or opened.
    let options = record_options(&a, default_event)?;
    let data_pages = sampling::ring_pages(a.mmap_pages.as_deref())?;
    // The output before anything opens or runs: a wrong -o costs nothing.
    let output = if a.dry_run {
        None
    } else {
        Some(sampling::open_output(&a.output, stop)?)
    };
    let branch_flag = sampling::branch_flag(
        a.branch_filter.as_deref(),
        a.branch_any,
        a.record.call_graph.as_deref(),
    );
    let list = if default_event {
        EventList::default()
    } else {
        parse_all(&enc, &a.record.events)?
    };
    if !a.quiet {
        for n in hwprof_pmu::probe::breakpoint_notices(&list, &target) {
            eprintln!("hwprof: warning: {}", crate::render::escape(&n));
        }
    }
    let mut rec = RecordPlan::new(list, target);
    rec.options = options;
    rec.session = SessionOptions {
        data_pages,
        inherit: !a.no_inherit,
        duration: a.record.duration,
    };
    // --dry-run shows the attrs whatever they are; it opens nothing.
    if a.dry_run {
        let (list, _) = rec.events_to_open()?;
        print_json(&list)?;
        return Ok(0);
    }
    sampling::check_events(&rec, &enc, branch_flag.as_deref(), a.off_cpu)?;
    let Some(output) = output else {
        return Err(anyhow!("no output opened"));
    };
    let done = sampling::record(
        rec,
        output,
        a.quiet,
        branch_flag.as_deref(),
        a.keep_raw_stacks,
        true,
        None,
        stop,
    )?;
    if !a.quiet && !a.no_summary {
        eprintln!(
            "[ hwprof record: {}, {} lost, {:.3} MB written to {}{} ]",
            crate::render::plural(done.stats.samples, "sample"),
            done.stats.lost + done.stats.lost_samples,
            done.data_bytes as f64 / 1e6,
            if a.output.as_os_str() == "-" {
                "stdout".to_string()
            } else {
                crate::render::escape(&a.output.display().to_string()).into_owned()
            },
            if done.pipe { " (pipe mode)" } else { "" }
        );
    }
    Ok(done.exit_code())
}

fn record_options(a: &RecordCommandArgs, default_event: bool) -> anyhow::Result<RecordOptions> {
    let sampling = sampling::sampling(a.record.freq.as_deref(), a.record.count)?;
    let call_graph = sampling::call_graph(a.record.call_graph.as_deref(), a.record.callgraph_fp)?;
    if a.keep_raw_stacks && !matches!(call_graph, Some(config::CallGraph::Dwarf { .. })) {
        return Err(crate::error::Usage(
            "--keep-raw-stacks keeps the user stack copies of --call-graph dwarf: add --call-graph dwarf, or leave it out".into(),
        )
        .into());
    }
    let branch_filter = match (&a.branch_filter, a.branch_any) {
        (Some(j), _) => Some(
            config::parse_branch_filter(j).map_err(|e| crate::error::Usage(format!("-j: {e}")))?,
        ),
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
