//! `hwprof offcpu`: where threads wait. Records `sched:sched_switch` with callchains
//! (kernel + user, frame pointers, every switch), pairs each thread's switch-out with its
//! end, and weights each blocked stack by its time off CPU in µs
//! ([`hwprof_analysis::offcpu`], which decodes the switches with the `sched_switch`
//! format stored in the recording): an SVG flame graph titled "Off-CPU time", folded
//! stacks (`--folded`), or a table (`--report`).

mod attach;
mod bpf;
mod report;

use std::path::{Path, PathBuf};

use anyhow::Context;
use hwprof_analysis::fold::{self, FoldOptions, Weight};
use hwprof_analysis::offcpu::{self, SwitchFormat};
use hwprof_pmu::attr::sample;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::Target;
use hwprof_sampler::config::{self, CallGraph, RecordOptions};
use hwprof_sampler::outfile::Output;
use hwprof_sampler::recorder::RecordPlan;
use hwprof_sampler::session::SessionOptions;
use hwprof_symbolize::{Options as SymOptions, Profile};

use crate::args::{Engine, FlamegraphArgs, OffcpuArgs};
use crate::error::usage;
use crate::render::svg::{self, Render};
use crate::render::thousands;
use hwprof_bpf::offcpu::OffCpuOptions;

use crate::args::OFFCPU_OUT as DEFAULT_OUT;

/// Runs `hwprof offcpu`; returns the exit code (the traced command's, when one ran).
pub fn run(a: OffcpuArgs, stop: &Stop) -> anyhow::Result<u8> {
    let target = crate::sampling::target_or(
        &a.record.flags(),
        "nothing to trace: give a command after --, or -p PID, -t TID, or -a (e.g. `hwprof offcpu -- ./app`)",
    )?;
    // The output first, so a wrong -o fails before the command starts (stdout: the
    // command's own stdout goes to stderr); the recording goes to a private scratch
    // directory (0700), removed at the end.
    let (early, data, scratch) = crate::destination::record_then_draw(
        &a.output,
        to_stdout(&a),
        a.record.data_file.as_deref(),
        stop,
    )?;
    // As `hwprof record --switch-events -g -m 2M -o DATA`: cpu-clock samples say when a
    // thread runs (they end its block, see `pair`) and are the on-CPU side of --wall;
    // each event samples at its default (every switch, cpu-clock at 4000 Hz).
    let enc = crate::events::encoder(None, &[])?;
    // `--engine bpf` takes frame-pointer stacks unless told otherwise (DWARF is the
    // perf-event engine's): no judging of the command's program.
    let call_graph = match (a.record.call_graph.as_deref(), a.engine) {
        (None, Engine::Bpf) => Some("fp"),
        (cg, _) => cg,
    };
    let mode = stack_mode(call_graph, &target)?;
    let dwarf = matches!(mode, CallGraph::Dwarf { .. });
    // DWARF samples copy the user stack into the ring: room for bursts of switches.
    let data_pages = crate::sampling::ring_pages(Some(if dwarf { "8M" } else { "2M" }))?;
    let output = crate::sampling::open_output(&data, stop)?;
    let command = matches!(target, Target::Command(_));
    let system_wide = target.is_system_wide();
    let attached = attach::applies(&target);
    if let Some(summed) = engine(&a, &target, dwarf)? {
        // The side-band records come with a dummy event; cpu-clock samples are the
        // on-CPU side of --wall.
        let event = if a.wall { "cpu-clock" } else { "dummy" };
        let events = crate::events::parse_all(&enc, &[event.to_string()])?;
        let mut rec = RecordPlan::new(events, target.clone());
        rec.options = RecordOptions {
            call_graph: a.wall.then_some(mode),
            command,
            system_wide,
            ..RecordOptions::default()
        };
        config::configure(&mut rec.events, &rec.options);
        // The offcpu-time samples written at the end find their event by its id.
        for e in &mut rec.events.events {
            e.attr.sample_type |= sample::IDENTIFIER;
        }
        rec.configure = false;
        let code = record_and_draw(
            &a,
            rec,
            &target,
            data_pages,
            output,
            &data,
            early,
            Some(summed),
            stop,
        )?;
        drop(scratch);
        return Ok(code);
    }
    let events = ["sched:sched_switch".to_string(), "cpu-clock".to_string()];
    let mut rec = RecordPlan::new(crate::events::parse_all(&enc, &events)?, target.clone());
    rec.options = RecordOptions {
        call_graph: Some(mode),
        switch_events: true,
        ..RecordOptions::default()
    };
    if attached || (dwarf && !a.wall) {
        config::configure(
            &mut rec.events,
            &RecordOptions {
                command,
                system_wide,
                ..rec.options.clone()
            },
        );
        rec.configure = false;
    }
    if dwarf && !a.wall {
        // Without --wall the cpu-clock samples only end blocks: their stacks are never
        // drawn, so they copy no user stack (4000 a second of 8 KiB would crowd the
        // ring that the switches' stacks need).
        for e in rec
            .events
            .events
            .iter_mut()
            .filter(|e| e.name == "cpu-clock")
        {
            e.attr.sample_type &= !(sample::REGS_USER | sample::STACK_USER);
            e.attr.sample_regs_user = 0;
            e.attr.sample_stack_user = 0;
        }
    }
    let code = record_and_draw(
        &a, rec, &target, data_pages, output, &data, early, None, stop,
    )?;
    drop(scratch);
    Ok(code)
}

/// Records `rec` into `output` (`data`) on either engine (`summed`: the BPF engine's
/// sums, written at the end), then draws it into `early`: the session both share, the
/// window of an attached recording, the exit code of the target.
#[allow(clippy::too_many_arguments)]
fn record_and_draw(
    a: &OffcpuArgs,
    mut rec: RecordPlan,
    target: &Target,
    data_pages: usize,
    output: Output,
    data: &Path,
    early: Option<Output>,
    summed: Option<bpf::Summed>,
    stop: &Stop,
) -> anyhow::Result<u8> {
    let attached = attach::applies(target);
    if attached {
        // Waits in progress at the window's edges count for their time inside it: the
        // records timed in a clock this process reads too.
        attach::use_clock(&mut rec);
    }
    rec.session = SessionOptions {
        data_pages,
        inherit: true,
        duration: a.record.duration,
    };
    // The threads as they were when the window opened (their kernel stacks: where the
    // ones already waiting wait).
    let threads = attached.then(|| attach::threads(target, !a.no_kernel));
    let (done, summed_early) = match summed {
        Some(mut summed) => {
            let done = crate::sampling::record_with_extra(rec, output, &mut summed, stop)?;
            warn_dropped(&summed.dropped);
            (done, summed.early)
        }
        // The truncated stacks are said once, by the recording (it knows the copies'
        // size).
        None => (
            crate::sampling::record(rec, output, false, None, false, true, None, stop)?,
            Vec::new(),
        ),
    };
    let window = threads
        .zip(done.stats.started)
        .map(|(t, started)| attach::window(target, t, started, done.stats.wall));
    let code = done.exit_code();
    draw_into(a, data, early, false, window.as_ref(), &summed_early)?;
    Ok(code)
}

/// The BPF engine, started, when `--engine` and the target let it run: `None` for the
/// perf-event path (asked for; needed for DWARF stacks, single threads or some CPUs;
/// or, with `auto`, BPF unavailable here, which a note says).
fn engine(a: &OffcpuArgs, target: &Target, dwarf: bool) -> anyhow::Result<Option<bpf::Summed>> {
    let why_not = if dwarf {
        Some("--call-graph dwarf copies each stack to user space")
    } else {
        match target {
            Target::Tids(_) | Target::During { .. }
                if matches!(attach::attached(target), Target::Tids(_)) =>
            {
                Some("it follows processes (-p) or the whole system (-a), not single threads (-t)")
            }
            _ if matches!(
                attach::attached(target),
                Target::SystemWide { cpus: Some(_) }
            ) =>
            {
                Some("it traces every CPU (-a), not a list of CPUs (-C)")
            }
            _ => None,
        }
    };
    match (a.engine, why_not) {
        (Engine::Perf, _) => return Ok(None),
        (Engine::Auto, Some(_)) => return Ok(None),
        (Engine::Bpf, Some(why)) => {
            return usage(format!(
                "--engine bpf cannot trace this: {why}; use --engine perf"
            ));
        }
        _ => {}
    }
    let (all, tgids) = match attach::attached(target) {
        Target::SystemWide { .. } => (true, Vec::new()),
        Target::Pids(p) => (
            false,
            p.iter().filter_map(|&p| u32::try_from(p).ok()).collect(),
        ),
        _ => (false, Vec::new()),
    };
    let opts = OffCpuOptions {
        all,
        tgids,
        follow_forks: true,
        min_block_ns: a.min_block.saturating_mul(1000),
        user_stacks: true,
        kernel_stacks: !a.no_kernel,
        ..OffCpuOptions::default()
    };
    match bpf::Summed::start(&opts, matches!(target, Target::Command(_))) {
        Ok(s) => Ok(Some(s)),
        Err(e) if a.engine == Engine::Auto => {
            eprintln!(
                "hwprof: note: {}: tracing every switch with perf events instead (more overhead; --engine perf skips this attempt)",
                crate::render::escape(&e.to_string())
            );
            Ok(None)
        }
        Err(e) => Err(anyhow::anyhow!("--engine bpf: {e}")),
    }
}

/// Says what did not fit the BPF engine's maps (its sizes are fixed at load).
fn warn_dropped(d: &hwprof_bpf::offcpu::Dropped) {
    let parts = crate::render::nonzero_counts(&[
        (d.blocks, "blocks"),
        (d.starts, "switch-outs"),
        (d.threads, "threads"),
        (d.targets, "child processes"),
        (d.stacks.collisions + d.stacks.other, "stacks"),
    ]);
    if !parts.is_empty() {
        eprintln!(
            "hwprof: warning: the kernel's maps were full: {} not counted: the times are lower bounds (trace fewer processes, or for less time)",
            parts.join(", ")
        );
    }
}

/// `--call-graph`: frame pointers or DWARF (LBR records only branches of hardware
/// events, which the off-CPU events are not); without it, DWARF for a command whose
/// program has no frame pointers ([`crate::sampling::auto_call_graph`]).
fn stack_mode(arg: Option<&str>, target: &Target) -> anyhow::Result<CallGraph> {
    match crate::sampling::auto_call_graph(arg, target)? {
        CallGraph::Lbr => Err(crate::error::Usage(
            "--call-graph lbr cannot record off-CPU stacks (LBR samples only hardware events): use fp or dwarf".into(),
        )
        .into()),
        m => Ok(m),
    }
}

/// The off-CPU profile of the recording `path` ([`offcpu::profile`]; of its
/// `offcpu-time` samples when the kernel summed the blocks, `summed_early` the waits in
/// progress when its window opened): the switch-out
/// samples that ended, each with its time off CPU (µs) as its period; blocks shorter than
/// `min_block_us` are left out. With `wall`, the on-CPU samples too, every stack ending in
/// `[off]` or `[on]`. All samples are of event 0. With the `window` the recording
/// covered, waits in progress at its edges count for their time inside it.
pub fn offcpu_profile(
    path: &Path,
    opts: &SymOptions,
    min_block_us: u64,
    wall: bool,
    window: Option<&offcpu::Window>,
    summed_early: &[(u32, u64)],
) -> anyhow::Result<Profile> {
    let pd = crate::input::open(path)?;
    if let Some(event) = offcpu::summed_event(pd.attrs()) {
        // Blocks summed in the kernel (the BPF engine, or perf record --off-cpu).
        let plan = offcpu::Plan::summed(event, wall, summed_early.to_vec(), window);
        let p = offcpu::profile_summed(&pd, opts, plan)
            .with_context(|| format!("symbolizing {}", path.display()))?;
        crate::input::notices(&p);
        return Ok(p);
    }
    let switch_event = offcpu::switch_event(pd.attrs())
        .with_context(|| format!("{} has no sched:sched_switch samples", path.display()))?;
    // The layout the recording kernel wrote the raw data in, from the file.
    let format = match SwitchFormat::of_recording(&pd)
        .with_context(|| format!("reading the tracing data of {}", path.display()))?
    {
        Some(f) => f,
        None => {
            eprintln!(
                "hwprof: warning: {} holds no sched_switch format (no tracing data): blocks end only at switch-ins, on-CPU samples and the next switch-out",
                crate::render::escape(&path.display().to_string())
            );
            SwitchFormat::default()
        }
    };
    let switches = offcpu::collect(&pd, switch_event, format)
        .with_context(|| format!("reading {}", path.display()))?;
    let p = offcpu::profile(&pd, opts, switches, min_block_us, wall, window)
        .with_context(|| format!("symbolizing {}", path.display()))?;
    crate::input::notices(&p);
    Ok(p)
}

/// What the widths of the graph are.
fn subtitle(wall: bool) -> &'static str {
    if wall {
        "width = wall-clock time (µs): on CPU ([on], cpu-clock samples) and off CPU ([off], sched:sched_switch, switch-out to switch-in)"
    } else {
        "width = time off CPU (µs) from sched:sched_switch, switch-out to switch-in"
    }
}

/// Where the output goes: stdout for `-o -`, or `--folded`/`--report` without `-o`.
fn to_stdout(a: &OffcpuArgs) -> bool {
    a.output.as_os_str() == "-" || ((a.folded || a.report) && a.output.as_os_str() == DEFAULT_OUT)
}

/// Draws the recording `data` to `-o` (or stdout).
pub(crate) fn draw(a: &OffcpuArgs, data: &Path) -> anyhow::Result<()> {
    draw_into(a, data, None, true, None, &[])
}

/// [`draw`], into `early` when the output was opened before recording; says how many
/// stacks are truncated or cut short by code without frame pointers when
/// `say_truncated` (the recording said it otherwise); counts the time inside `window`
/// of the waits at its edges when the recording was attached.
fn draw_into(
    a: &OffcpuArgs,
    data: &Path,
    early: Option<Output>,
    say_truncated: bool,
    window: Option<&offcpu::Window>,
    summed_early: &[(u32, u64)],
) -> anyhow::Result<()> {
    let opts = SymOptions {
        inline: true,
        kernel: !a.no_kernel,
        user: true,
        // Blocks of one stack and thread merge once weighted (offcpu::Plan).
        merge: true,
        symfs: a.record.symfs.clone(),
    };
    let profile = offcpu_profile(data, &opts, a.min_block, a.wall, window, summed_early)?;
    // Read from a file: a recording made here said both when it was made.
    if say_truncated {
        crate::render::note_truncated(&profile);
        if let Some(c) = &profile.cut_stacks {
            crate::sampling::note_cut_stacks(c);
        }
    }
    let folded = fold::fold(
        &profile,
        0,
        Weight::Micros,
        FoldOptions {
            inline: true,
            kernel: !a.no_kernel,
        },
    );
    if folded.is_empty() {
        anyhow::bail!(
            "no off-CPU time recorded (no thread blocked for {} µs or more)",
            a.min_block.max(1)
        );
    }
    let title = if a.wall {
        let on: u64 = folded
            .lines()
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(st, _)| st.ends_with(";[on]"))
            .filter_map(|(_, n)| n.parse::<u64>().ok())
            .sum();
        format!(
            "Wall-clock time: {} ({} µs): on CPU {}, off CPU {}",
            crate::render::human_us(folded.total),
            thousands(folded.total),
            crate::render::human_us(on),
            crate::render::human_us(folded.total.saturating_sub(on))
        )
    } else {
        format!(
            "Off-CPU time: {} ({} µs), {} {}",
            crate::render::human_us(folded.total),
            thousands(folded.total),
            thousands(folded.samples),
            crate::render::noun(folded.samples, "block")
        )
    };
    let to_stdout = to_stdout(a);
    let out_bytes = if a.report {
        report::table(&folded, &title).into_bytes()
    } else if a.folded {
        folded.to_text().into_bytes()
    } else {
        let r = Render {
            title: title.clone(),
            subtitle: Some(subtitle(a.wall).into()),
            count_name: "µs".to_string(),
            sources: &folded.sources,
        };
        svg::render(folded.lines(), &r).context("drawing the flame graph")?
    };
    crate::destination::write_drawn(&a.output, to_stdout, early, &out_bytes, &title)
}

/// `hwprof flamegraph --off-cpu`: the wall-clock view of `hwprof offcpu --wall`, recorded now or drawn
/// from `-i FILE`.
pub fn flamegraph(a: FlamegraphArgs, stop: &Stop) -> anyhow::Result<u8> {
    let recording = a.records();
    if !a.record.events.is_empty() || a.record.freq.is_some() || a.record.count.is_some() {
        return usage(
            "--off-cpu records its own events (cpu-clock and sched:sched_switch): leave out -e/--event, -F and -c",
        );
    }
    let mut record = a.record.into_words();
    record.symfs = a.input.symfs;
    let oa = OffcpuArgs {
        record,
        min_block: 1,
        // `--folded` without `-o` writes to stdout, as it does without --off-cpu.
        output: if a.folded && a.output.as_os_str() == "flamegraph.svg" {
            PathBuf::from("-")
        } else {
            a.output
        },
        folded: a.folded,
        report: false,
        wall: true,
        no_kernel: a.no_kernel,
        engine: crate::args::Engine::Auto,
    };
    if recording {
        return run(oa, stop);
    }
    draw(&oa, &a.input.file)?;
    Ok(0)
}
