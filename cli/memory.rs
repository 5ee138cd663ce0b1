//! `hwprof memory`: who allocates memory, and what stays allocated (`--leaks`), by
//! allocating stack, from uprobes on the allocator the target calls
//! ([`hwprof_pmu::probe::allocator`]: glibc's malloc family, or whatever replaces it,
//! or `--allocator`). The sizes come from the entry's argument registers, the
//! pointers from the return, paired per thread in the kernel ([`bpf`]). The result is
//! a recording (a `dummy` event's mapping and task records, and the sums as samples of
//! an `allocated-bytes` or `leaked-bytes` event) drawn as a flame graph in bytes,
//! folded stacks, or a table (`--report`).

mod bpf;
mod report;

use std::path::{Path, PathBuf};

use anyhow::Context;
use std::collections::HashMap;

use hwprof_analysis::alloc::{self, pair, pair::Probe};
use hwprof_analysis::fold::{self, FoldOptions, Weight};
use hwprof_pmu::attr::{sample, types};
use hwprof_pmu::probe::allocator::{self, Allocator, Found, Role};
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::{Rules, Target};
use hwprof_sampler::config::{self, CallGraph, RecordOptions};
use hwprof_sampler::recorder::{RecordPlan, Sink};
use hwprof_sampler::session::{Edge, SessionOptions};
use hwprof_symbolize::Options as SymOptions;

use crate::args::{Engine, MEMORY_OUT, MemoryArgs, MemoryWeight, TargetWords};
use crate::error::{ExitWith, usage};
use crate::render::svg::{self, Render};
use crate::render::{escape, thousands};

/// Runs `hwprof memory`; returns the exit code (the traced command's, when one ran).
pub fn run(a: MemoryArgs, stop: &Stop) -> anyhow::Result<u8> {
    let target = target_of(&a)?;
    let mode = match a.record.call_graph.as_deref().map(CallGraph::parse) {
        None => CallGraph::Fp,
        Some(Ok(CallGraph::Lbr)) => {
            return usage(
                "--call-graph lbr does not apply to uprobes (LBR samples only hardware events): use fp or dwarf",
            );
        }
        Some(Ok(m)) => m,
        Some(Err(e)) => return usage(format!("--call-graph: {e}")),
    };
    let dwarf = matches!(mode, CallGraph::Dwarf { .. });
    if hwprof_pmu::sys::euid() != 0 {
        anyhow::bail!(ExitWith(
            1,
            "hwprof memory needs root: the allocator's uprobes are defined in tracefs and opened through the kernel's uprobe PMU, which only root (CAP_SYS_ADMIN) may, whatever kernel.perf_event_paranoid says; run it as root".into()
        ));
    }
    let pids = target.processes().to_vec();
    let program = program_of(&target)?;
    let found = match &a.allocator {
        Some(spec) => allocator::parse(spec, Some(&program), &pids),
        None => allocator::find(&program, &pids),
    }
    .map_err(|e| ExitWith(1, e))?;
    if found.found == Found::Replaced {
        eprintln!(
            "hwprof: note: tracing the allocator of {} (its malloc replaces libc's)",
            escape(&found.path.display().to_string())
        );
    }
    let in_kernel = engine(&a, dwarf)?;
    // The output first, so a wrong -o fails before the command starts.
    let (early, data, scratch) = crate::destination::record_then_draw(
        &a.output,
        to_stdout(&a),
        a.record.data_file.as_deref(),
        stop,
    )?;
    let (specs, events) = event_specs(&found);
    let enc = crate::events::encoder(None, &[])?;
    let list = crate::events::parse_all(&enc, &specs)?;
    let command = matches!(target, Target::Command(_));
    let mut rec = RecordPlan::new(list, target.clone());
    rec.options = RecordOptions {
        command,
        call_graph: in_kernel.is_none().then_some(mode),
        ..RecordOptions::default()
    };
    config::configure(&mut rec.events, &rec.options);
    for e in &mut rec.events.events {
        // The allocation samples written at the end find their event by its id.
        e.attr.sample_type |= sample::IDENTIFIER;
    }
    if in_kernel.is_none() {
        sample_calls(&mut rec, &events, dwarf);
    }
    rec.configure = false;
    rec.session = SessionOptions {
        data_pages: crate::sampling::ring_pages(Some(if in_kernel.is_some() {
            "1M"
        } else if dwarf {
            "16M"
        } else {
            "4M"
        }))?,
        inherit: true,
        duration: a.record.duration,
    };
    let output = crate::sampling::open_output(&data, stop)?;
    let what = What {
        leaks: a.leaks,
        attached: !command,
        min_age_ns: a.min_age.unwrap_or(0),
        allocator: &found,
        perf: in_kernel.is_none(),
    };
    let announce = crate::sampling::announce(&target, "allocations", a.record.duration);
    let Some(allocs) = in_kernel else {
        // Every call through the ring, paired when drawn; the stack copies stay raw
        // (unwinding while recording would drop the registers the pairing reads).
        let recorder = crate::sampling::open_recorder(rec, false, None)?;
        let done = recorder.run_all(Sink::PerfData(output), stop, None, None, &mut |e| {
            if let (Edge::Enabled, Some(a)) = (e, &announce) {
                eprintln!("{a}");
            }
        })?;
        crate::sampling::warn_lost(&done);
        let code = done.exit_code();
        let probes = probes(&events);
        draw(&a, &data, early, &what, Source::Paired(&probes))?;
        drop(scratch);
        return Ok(code);
    };
    let mut recorder = crate::sampling::open_recorder(rec, false, None)?;
    let in_tracefs = events.iter().all(|&(_, entry, _)| {
        recorder
            .entries()
            .get(entry)
            .is_some_and(|e| e.attr.type_ == types::TRACEPOINT)
    });
    if !in_tracefs {
        anyhow::bail!(ExitWith(
            1,
            "the allocator's uprobes could not be defined in tracefs (its uprobe_events), which the BPF programs attach to: mount tracefs at /sys/kernel/tracing and run as root".into()
        ));
    }
    let mut summed = bpf::Summed::attach(
        allocs,
        &mut recorder,
        &events,
        command,
        a.leaks,
        a.min_age.unwrap_or(0),
    )
    .context("attaching the BPF programs")?;
    summed.announce = announce;
    let done = recorder.run_with_extra(output, stop, None, &mut summed)?;
    crate::sampling::warn_lost(&done);
    let code = done.exit_code();
    let kept = summed.data.take().unwrap_or_default();
    warn_dropped(&kept.dropped);
    let ages = std::mem::take(&mut summed.ages);
    let age = |pid: u32, chain: &[u64]| ages.get(&(pid, chain.to_vec())).copied();
    draw(&a, &data, early, &what, Source::Summed(&age))?;
    drop(scratch);
    Ok(code)
}

/// The BPF programs, loaded, when `--engine` and the stacks let them run: `None` for
/// the perf-event path (asked for; needed for DWARF stacks; or, with `auto`, BPF
/// unavailable here, which a note says).
fn engine(a: &MemoryArgs, dwarf: bool) -> anyhow::Result<Option<hwprof_bpf::alloc::Allocs>> {
    match (a.engine, dwarf) {
        (Engine::Perf, _) | (Engine::Auto, true) => return Ok(None),
        (Engine::Bpf, true) => {
            return usage(
                "--engine bpf takes frame-pointer stacks: --call-graph dwarf copies each allocation's stack to user space; use --engine perf",
            );
        }
        _ => {}
    }
    match bpf::Summed::load() {
        Ok(k) => Ok(Some(k)),
        Err(e) if a.engine == Engine::Auto => {
            eprintln!(
                "hwprof: note: {}: sampling every allocator call with perf events instead (more overhead; --engine perf skips this attempt)",
                escape(&e.to_string())
            );
            Ok(None)
        }
        Err(e) => Err(anyhow::anyhow!(ExitWith(1, format!("--engine bpf: {e}")))),
    }
}

/// The perf-event path's samples: each entry with the argument registers only, each
/// return with its value and the allocating stack (frame pointers, or DWARF's
/// registers and stack copy).
fn sample_calls(rec: &mut RecordPlan, events: &[bpf::FuncEvents], dwarf: bool) {
    use hwprof_analysis::alloc::pair::reg;
    let returns: Vec<usize> = events.iter().filter_map(|e| e.2).collect();
    let entries: Vec<usize> = events.iter().map(|e| e.1).collect();
    for (i, e) in rec.events.events.iter_mut().enumerate() {
        let at = &mut e.attr;
        at.exclude_callchain_kernel = true;
        if entries.contains(&i) {
            at.sample_type &= !(sample::CALLCHAIN | sample::STACK_USER);
            at.sample_type |= sample::REGS_USER;
            at.sample_regs_user = reg::ARGS;
            at.sample_stack_user = 0;
        } else if returns.contains(&i) {
            at.sample_type |= sample::REGS_USER;
            if !dwarf {
                at.sample_regs_user = reg::RET;
            }
        }
    }
}

/// The role of each uprobe event of the recording, by event index.
fn probes(events: &[bpf::FuncEvents]) -> HashMap<usize, Probe> {
    let mut m = HashMap::new();
    for &(role, entry, ret) in events {
        m.insert(entry, Probe::Entry(role));
        if let Some(r) = ret {
            m.insert(r, Probe::Return(role));
        }
    }
    m
}

fn target_of(a: &MemoryArgs) -> anyhow::Result<Target> {
    let words = TargetWords {
        several: "give one -p",
        missing: "nothing to trace: give a command after --, or -p PID (e.g. `hwprof memory -- ./app`)",
    };
    let rules = Rules {
        live_ids: true,
        ..Rules::default()
    };
    let t = crate::args::target(&a.record.flags(), rules, &words)?;
    if t.processes().len() > 1 {
        return usage("give one -p: each process may call another allocator");
    }
    Ok(t)
}

/// The program whose allocator is probed: the command's (found in `$PATH` as the
/// shell would), or the attached process's executable.
fn program_of(target: &Target) -> anyhow::Result<PathBuf> {
    if let Some(&pid) = target.processes().first() {
        return std::fs::read_link(format!("/proc/{pid}/exe")).with_context(|| {
            format!("reading /proc/{pid}/exe (which program process {pid} runs)")
        });
    }
    let Target::Command(argv) = target else {
        return usage("nothing to trace: give a command after --, or -p PID");
    };
    let Some(cmd) = argv.first() else {
        return usage("nothing to trace: give a command after --, or -p PID");
    };
    if cmd.contains('/') {
        return Ok(PathBuf::from(cmd));
    }
    hwprof_pmu::probe::in_path(cmd).ok_or_else(|| {
        anyhow::anyhow!(ExitWith(
            127,
            format!("{}: command not found in $PATH", escape(cmd))
        ))
    })
}

/// The recording's events: a `dummy` for the mapping and task records, then a uprobe
/// (and but for free a uretprobe) per allocator function, and C++'s operator new as
/// malloc (see [`Allocator::operator_new`]); and where each function's are.
fn event_specs(a: &Allocator) -> (Vec<String>, Vec<bpf::FuncEvents>) {
    let mut specs = vec!["dummy".to_string()];
    let mut events = Vec::new();
    let path = a.path.display().to_string();
    for (role, sym) in &a.symbols {
        let entry = specs.len();
        specs.push(format!("uprobe:{path}:{sym}"));
        let ret = (*role != Role::Free).then(|| {
            specs.push(format!("uretprobe:{path}:{sym}"));
            specs.len() - 1
        });
        events.push((*role, entry, ret));
    }
    if let Some((lib, names)) = &a.operator_new {
        let lib = lib.display();
        for n in names {
            let entry = specs.len();
            specs.push(format!("uprobe:{lib}:{n}"));
            specs.push(format!("uretprobe:{lib}:{n}"));
            events.push((Role::Malloc, entry, Some(entry + 1)));
        }
    }
    (specs, events)
}

/// Says what did not fit the kernel's maps.
fn warn_dropped(d: &hwprof_bpf::AllocDropped) {
    let parts = crate::render::nonzero_counts(&[
        (d.calls, "calls not paired (no room for their thread)"),
        (
            d.outstanding,
            "blocks not kept (no room among the live blocks: missing from --leaks)",
        ),
        (d.sites, "allocations not summed (no room for their stack)"),
        (
            d.stacks.collisions + d.stacks.other,
            "allocations without their stack (the stack map was full)",
        ),
    ]);
    if !parts.is_empty() {
        eprintln!(
            "hwprof: warning: the kernel's maps were full: {}: the figures are lower bounds",
            parts.join("; ")
        );
    }
}

/// What was traced, for the titles.
struct What<'a> {
    leaks: bool,
    attached: bool,
    min_age_ns: u64,
    allocator: &'a Allocator,
    /// On the perf-event path.
    perf: bool,
}

/// Where the allocations are in the recording.
enum Source<'a> {
    /// Summed in the kernel: the `allocated-bytes`/`leaked-bytes` samples, and each
    /// leaked stack's oldest block.
    Summed(alloc::Age<'a>),
    /// The calls, one sample each, paired when drawn (events by index).
    Paired(&'a HashMap<usize, Probe>),
}

/// Where the output goes: stdout for `-o -`, or `--folded`/`--report` without `-o`.
fn to_stdout(a: &MemoryArgs) -> bool {
    a.output.as_os_str() == "-" || ((a.folded || a.report) && a.output.as_os_str() == MEMORY_OUT)
}

/// `1.5 GiB`, `3.0 MiB`, `64.0 KiB`, `100 B`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// Draws the recording `data` to `-o` (or stdout), into `early`.
fn draw(
    a: &MemoryArgs,
    data: &Path,
    early: Option<hwprof_sampler::outfile::Output>,
    what: &What<'_>,
    source: Source<'_>,
) -> anyhow::Result<()> {
    let opts = SymOptions {
        inline: true,
        kernel: false,
        user: true,
        merge: false,
        symfs: a.record.symfs.clone(),
    };
    let pd = crate::input::open(data)?;
    let symbolizing = || format!("symbolizing {}", data.display());
    let (profile, event) = match source {
        Source::Summed(age) => {
            let (event, _) = alloc::event(pd.attrs())
                .with_context(|| format!("{} has no allocation samples", data.display()))?;
            let p = alloc::profile(&pd, &opts, event, age).with_context(symbolizing)?;
            (p, u32::try_from(event).unwrap_or(u32::MAX))
        }
        Source::Paired(probes) => {
            let paired = pair::pair(&pd, probes, what.leaks, what.min_age_ns)
                .with_context(|| format!("reading {}", data.display()))?;
            if paired.unfollowed > 0 && what.leaks {
                eprintln!(
                    "hwprof: note: {} of posix_memalign not in the leaks: on the perf engine their pointer (stored in memory) is not recorded; --engine bpf reads it",
                    crate::render::plural(paired.unfollowed, "block")
                );
            }
            // Every kept sample is weighed as the first return event.
            let event = probes
                .iter()
                .filter(|(_, p)| matches!(p, Probe::Return(_)))
                .map(|(i, _)| *i)
                .min()
                .unwrap_or(0);
            let event = u32::try_from(event).unwrap_or(u32::MAX);
            let p = pair::profile(&pd, &opts, probes, event, &paired, what.leaks)
                .with_context(symbolizing)?;
            (p, event)
        }
    };
    crate::input::notices(&profile);
    let fopts = FoldOptions {
        inline: true,
        kernel: false,
    };
    let (weight, unit) = match a.weight {
        MemoryWeight::Bytes => (Weight::Period, "bytes"),
        MemoryWeight::Count => (
            Weight::Samples,
            if what.leaks { "blocks" } else { "allocations" },
        ),
    };
    let folded = fold::fold(&profile, event, weight, fopts);
    let bytes: u64 = profile
        .samples
        .iter()
        .filter(|s| s.event == event)
        .map(|s| s.period)
        .sum();
    let count: u64 = profile
        .samples
        .iter()
        .filter(|s| s.event == event)
        .map(|s| s.count)
        .sum();
    let title = title(what, bytes, count);
    if folded.is_empty() && !a.report {
        anyhow::bail!(ExitWith(
            1,
            if what.leaks {
                format!("{title}: nothing to draw")
            } else {
                format!(
                    "no allocations seen through {} (is it the allocator the program calls? --allocator names another)",
                    found_words(what.allocator)
                )
            }
        ));
    }
    let out_bytes = if a.report {
        let by_count = a.weight == MemoryWeight::Count;
        let t = alloc::table(&profile, event, fopts, by_count, 20, 10);
        report::table(&t, &title, what.leaks, by_count).into_bytes()
    } else if a.folded {
        folded.to_text().into_bytes()
    } else {
        let r = Render {
            title: title.clone(),
            subtitle: Some(subtitle(what, unit)),
            count_name: unit.to_string(),
            sources: &folded.sources,
        };
        svg::render(folded.lines(), &r).context("drawing the flame graph")?
    };
    crate::destination::write_drawn(&a.output, to_stdout(a), early, &out_bytes, &title)
}

/// The allocator's functions and file, in a few words (all of them, for the error
/// that says none was called).
fn found_words(a: &Allocator) -> String {
    let names: Vec<&str> = a.symbols.iter().map(|(_, s)| s.as_str()).collect();
    let new = match &a.operator_new {
        Some((lib, _)) => format!(" and operator new of {}", lib.display()),
        None => String::new(),
    };
    format!("{} of {}{new}", names.join(", "), a.path.display())
}

/// The allocator in the few words a subtitle has room for: how many functions, and
/// the files' names.
fn short_words(a: &Allocator) -> String {
    let name = |p: &Path| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        )
    };
    let n = a.symbols.len();
    let mut w = format!(
        "{n} allocator {} of {}",
        crate::render::noun(n as u64, "function"),
        name(&a.path)
    );
    if let Some((lib, _)) = &a.operator_new {
        w.push_str(&format!(" and operator new of {}", name(lib)));
    }
    w
}

fn title(what: &What<'_>, bytes: u64, count: u64) -> String {
    if what.leaks {
        let when = if what.attached {
            "at the end"
        } else {
            "at exit"
        };
        let older = if what.min_age_ns > 0 {
            format!(
                " (blocks older than {})",
                crate::render::human_us(what.min_age_ns / 1000)
            )
        } else {
            String::new()
        };
        format!(
            "Still allocated {when}{older}: {} ({} bytes) in {} {}",
            human_bytes(bytes),
            thousands(bytes),
            thousands(count),
            crate::render::noun(count, "block")
        )
    } else {
        format!(
            "Allocated: {} ({} bytes) in {} {}",
            human_bytes(bytes),
            thousands(bytes),
            thousands(count),
            crate::render::noun(count, "allocation")
        )
    }
}

fn subtitle(what: &What<'_>, unit: &str) -> String {
    let view = if what.leaks {
        "still allocated, by allocating stack"
    } else {
        "allocated, by allocating stack"
    };
    let how = if what.perf {
        "every call sampled"
    } else {
        "paired in the kernel"
    };
    format!(
        "width = {unit} {view} (uprobes on {}, {how})",
        short_words(what.allocator)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ages_read_as_people_write_them() {
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(human_bytes(65_536), "64.0 KiB");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
    }
}
