//! `hwprof io`: where threads wait on files and sockets. Times the I/O system calls
//! (`hwprof_bpf::io::SYSCALLS`: read, write, their p/v variants, send/recv, fsync,
//! opens, closes, accept, connect, sendfile, splice...) from the syscall tracepoints,
//! paired per thread, and weighs each stack by the time inside them (µs), each stack
//! ending in the syscall (`[read]`) and the file it worked on (its path, `pipe:[INODE]`,
//! `socket:[INODE]`, named through the process model's fd table): an SVG flame graph,
//! folded stacks (`--folded`) or tables per file and per syscall with percentiles
//! (`--report`). `--threshold` keeps only the slower calls.
//!
//! Two engines, as `offcpu`: the BPF one (`io/bpf`) sums in the kernel; the perf-event
//! one (`io/perf`) records every `raw_syscalls` entry and exit with its stack and pairs
//! them here.

mod bpf;
mod perf;
mod report;

use std::path::Path;

use anyhow::Context;
use hwprof_analysis::fold::{self, FoldOptions, Weight};
use hwprof_analysis::io::{IO_TIME, Labels, Table};
use hwprof_bpf::io::IoOptions;
use hwprof_pmu::attr::sample;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::Target;
use hwprof_sampler::config::{self, CallGraph, RecordOptions};
use hwprof_sampler::recorder::RecordPlan;
use hwprof_sampler::session::SessionOptions;
use hwprof_symbolize::Options as SymOptions;

use crate::args::Engine;
use crate::args::io::{IO_OUT, IoArgs};
use crate::error::usage;
use crate::render::svg::{self, Render};
use crate::render::thousands;

/// What a run measured besides the recording: the labels its samples carry, the
/// tables, the slow calls.
pub struct Measured {
    labels: Labels,
    table: Table,
    slow: Vec<(String, String, u64, u32, i64)>,
}

/// Runs `hwprof io`; returns the exit code (the traced command's, when one ran).
pub fn run(a: IoArgs, stop: &Stop) -> anyhow::Result<u8> {
    let target = crate::sampling::target_or(
        &a.record.flags(),
        "nothing to trace: give a command after --, or -p PID, or -a (e.g. `hwprof io -- ./app`)",
    )?;
    let (early, data, scratch) = crate::destination::record_then_draw(
        &a.output,
        to_stdout(&a),
        a.record.data_file.as_deref(),
        stop,
    )?;
    let enc = crate::events::encoder(None, &[])?;
    // Frame pointers on the BPF engine (it finds the frameless syscall wrapper's caller
    // itself); DWARF on the perf-event one unless told (a frame-pointer walk from a
    // syscall skips that caller: `slow_reads` would vanish under `read`).
    let mode = call_graph(a.record.call_graph.as_deref().unwrap_or("fp"), &target)?;
    let dwarf = matches!(mode, CallGraph::Dwarf { .. });
    let data_pages = crate::sampling::ring_pages(Some(if dwarf { "8M" } else { "2M" }))?;
    let output = crate::sampling::open_output(&data, stop)?;
    let command = matches!(target, Target::Command(_));
    let system_wide = target.is_system_wide();
    let session = SessionOptions {
        data_pages,
        inherit: true,
        duration: a.record.duration,
    };
    if let Some(mut traced) = engine(&a, &target, dwarf)? {
        traced.announce = crate::sampling::announce(&target, "I/O system calls", a.record.duration);
        // The side-band records come with a dummy event.
        let events = crate::events::parse_all(&enc, &["dummy".to_string()])?;
        let mut rec = RecordPlan::new(events, target.clone());
        rec.options = RecordOptions {
            command,
            system_wide,
            ..RecordOptions::default()
        };
        config::configure(&mut rec.events, &rec.options);
        // The io-time samples written at the end find their event by its id.
        for e in &mut rec.events.events {
            e.attr.sample_type |= sample::IDENTIFIER;
        }
        rec.configure = false;
        rec.session = session;
        let done = crate::sampling::record_with_extra(rec, output, &mut traced, stop)?;
        warn_dropped(&traced);
        let m = Measured {
            labels: std::mem::take(&mut traced.labels),
            table: std::mem::take(&mut traced.table),
            slow: std::mem::take(&mut traced.slow),
        };
        draw(&a, &data, early, &m, Source::Summed)?;
        drop(scratch);
        return Ok(done.exit_code());
    }
    let mode = match a.record.call_graph.as_deref() {
        Some(_) => mode,
        None => call_graph("dwarf", &target)?,
    };
    // DWARF samples copy the user stack into the ring: room for bursts of syscalls.
    let session = SessionOptions {
        data_pages: crate::sampling::ring_pages(Some(match mode {
            CallGraph::Dwarf { .. } => "8M",
            _ => "2M",
        }))?,
        ..session
    };
    let (code, seen) = perf::record(&enc, target, mode, session, output, stop)?;
    let pd = crate::input::open(&data)?;
    let (m, weights) = perf::measure(&pd, &seen, a.threshold)?;
    drop(pd);
    draw(&a, &data, early, &m, Source::Paired(weights))?;
    drop(scratch);
    Ok(code)
}

/// The `--call-graph` mode `cg` (fp or dwarf).
fn call_graph(cg: &str, target: &Target) -> anyhow::Result<CallGraph> {
    match crate::sampling::auto_call_graph(Some(cg), target)? {
        CallGraph::Lbr => usage("--call-graph lbr cannot record syscall stacks: use fp or dwarf"),
        m => Ok(m),
    }
}

/// The BPF engine, started, when `--engine` and the target let it run: `None` for the
/// perf-event path (asked for; needed for DWARF stacks or single threads; or, with
/// `auto`, BPF unavailable here, which a note says).
fn engine(a: &IoArgs, target: &Target, dwarf: bool) -> anyhow::Result<Option<bpf::Traced>> {
    let attached = match target {
        Target::During { of, .. } => of.as_ref(),
        t => t,
    };
    let why_not = if dwarf {
        Some("--call-graph dwarf copies each stack to user space")
    } else {
        match attached {
            Target::Tids(_) => Some("it follows processes (-p), not single threads (-t)"),
            Target::SystemWide { cpus: Some(_) } => {
                Some("it traces every CPU (-a), not a list of CPUs (-C)")
            }
            _ => None,
        }
    };
    match (a.engine, why_not) {
        (Engine::Perf, _) | (Engine::Auto, Some(_)) => return Ok(None),
        (Engine::Bpf, Some(why)) => {
            return usage(format!(
                "--engine bpf cannot trace this: {why}; use --engine perf"
            ));
        }
        _ => {}
    }
    let (all, tgids) = match attached {
        Target::SystemWide { .. } => (true, Vec::new()),
        Target::Pids(p) => (
            false,
            p.iter().filter_map(|&p| u32::try_from(p).ok()).collect(),
        ),
        _ => (false, Vec::new()),
    };
    let opts = IoOptions {
        all,
        tgids,
        min_ns: a.threshold.unwrap_or(0),
        slow_events: a.threshold.is_some(),
        ..IoOptions::default()
    };
    match bpf::Traced::start(&opts, matches!(target, Target::Command(_))) {
        Ok(t) => Ok(Some(t)),
        Err(e) if a.engine == Engine::Auto => {
            eprintln!(
                "hwprof: note: {}: tracing every syscall with perf events instead (more overhead; --engine perf skips this attempt)",
                crate::render::escape(&e.to_string())
            );
            Ok(None)
        }
        Err(e) => Err(anyhow::anyhow!("--engine bpf: {e}")),
    }
}

/// Says what did not fit the BPF engine's maps (their sizes are fixed at load).
fn warn_dropped(t: &bpf::Traced) {
    let d = &t.dropped;
    let parts = crate::render::nonzero_counts(&[
        (d.sums + d.calls, "calls"),
        (d.targets, "child processes"),
        (d.events, "fd changes or slow calls"),
        (d.hdr, "durations in the percentiles"),
        (d.fds + t.names_dropped, "fd names"),
        (d.stacks.collisions + d.stacks.other, "stacks"),
        (t.slow_dropped, "slow calls in the list"),
    ]);
    if !parts.is_empty() {
        eprintln!(
            "hwprof: warning: the kernel's maps were full: {} not counted: the times are lower bounds (trace fewer processes, or for less time)",
            parts.join(", ")
        );
    }
}

/// Where the samples of the recording come from.
enum Source {
    /// The BPF engine's `io-time` samples.
    Summed,
    /// `raw_syscalls` samples, paired: each drawn entry's weight ([`perf::weigher`]).
    Paired(perf::Weights),
}

/// Where the output goes: stdout for `-o -`, or `--folded`/`--report` without `-o`.
fn to_stdout(a: &IoArgs) -> bool {
    a.output.as_os_str() == "-" || ((a.folded || a.report) && a.output.as_os_str() == IO_OUT)
}

/// Draws the recording `data` to `-o` (or stdout), opened as `early`.
fn draw(
    a: &IoArgs,
    data: &Path,
    early: Option<hwprof_sampler::outfile::Output>,
    m: &Measured,
    source: Source,
) -> anyhow::Result<()> {
    let opts = SymOptions {
        inline: true,
        kernel: false,
        user: true,
        merge: true,
        symfs: a.record.symfs.clone(),
    };
    let pd = crate::input::open(data)?;
    let profile = match source {
        Source::Summed => {
            let event = pd
                .attrs()
                .iter()
                .position(|e| e.name == IO_TIME)
                .with_context(|| format!("{} has no {IO_TIME} samples", data.display()))?;
            let mut weigh = |attr: usize, _tid: u32, time: u64, period: u64| {
                (attr == event).then_some((time as u32, period))
            };
            hwprof_analysis::io::profile(&pd, &opts, &m.labels, &mut weigh)
        }
        Source::Paired(weights) => {
            let mut w = perf::weigher(&pd, weights);
            hwprof_analysis::io::profile(&pd, &opts, &m.labels, &mut w)
        }
    }
    .with_context(|| format!("symbolizing {}", data.display()))?;
    crate::input::notices(&profile);
    let folded = fold::fold(
        &profile,
        0,
        Weight::Micros,
        FoldOptions {
            inline: true,
            kernel: false,
        },
    );
    let calls: u64 = m.table.syscalls.values().map(|s| s.calls).sum();
    if folded.is_empty() && calls == 0 {
        anyhow::bail!(
            "no I/O system call recorded{}",
            match a.threshold {
                Some(ns) => format!(" as slow as {}", report::duration(ns)),
                None => String::new(),
            }
        );
    }
    let title = format!(
        "I/O time: {} ({} µs), {} {}{}",
        crate::render::human_us(folded.total),
        thousands(folded.total),
        thousands(calls),
        crate::render::noun(calls, "call"),
        match a.threshold {
            Some(ns) => format!(" slower than {}", report::duration(ns)),
            None => String::new(),
        }
    );
    let out_bytes = if a.report {
        report::text(&m.table, &m.slow, &folded, &title).into_bytes()
    } else if a.folded {
        folded.to_text().into_bytes()
    } else {
        let r = Render {
            title: title.clone(),
            subtitle: Some(
                "width = time inside file and socket system calls (µs), entry to exit; each stack ends in the syscall and its file".into(),
            ),
            count_name: "µs".to_string(),
            sources: &folded.sources,
        };
        svg::render(folded.lines(), &r).context("drawing the flame graph")?
    };
    crate::destination::write_drawn(&a.output, to_stdout(a), early, &out_bytes, &title)
}
