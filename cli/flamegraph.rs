//! `hwprof flamegraph`: SVG flame graphs (or folded stacks) from a perf.data, from two
//! (differential), or from a command recorded on the spot.
//!
//! Every input becomes folded stacks ([`hwprof_analysis::fold`]), then one renderer draws
//! them ([`svg`], inferno). Outputs go through [`crate::destination`]: a temporary file in the same directory
//! renamed over a regular file (so a failure never leaves a half-written graph), or
//! straight into a device or FIFO; mode `0666 & ~umask`. When a command is recorded the
//! output is opened before it starts, and the recording lives in a private scratch
//! directory (0700) removed afterwards.
//!
//! Outputs: `-o FILE` (default `flamegraph.svg`); with `--all` one file per event,
//! `flamegraph.EVENT.svg`. `--folded` writes folded stacks to stdout unless `-o` names
//! another file (several events on stdout are separated by `# event: NAME` lines, which
//! inferno skips); `--diff --folded` writes inferno's two-count lines (BASE normalised).
//! When a command is recorded and the data goes to stdout, the command's stdout is
//! pointed at stderr first ([`crate::destination::open_for_target`]).
//!
//! Flags: `-e/--event` records (perf's name); `--draw-event NAME` picks one event of a
//! recording to draw.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hwprof_analysis::fold::{self, FoldOptions, Folded, Weight};
use hwprof_pmu::attr::types;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::Target;
use hwprof_sampler::outfile::Output;
use hwprof_symbolize::{Options as SymOptions, Profile, ProfileBuilder};

use crate::args::FlamegraphArgs;
use crate::destination::write_output;
use crate::error::usage;
use crate::render::escape;
use crate::render::svg::{self, Render};

/// Runs `hwprof flamegraph`; returns the exit code (the recorded command's, when one ran).
pub fn run(a: FlamegraphArgs, stop: &Stop) -> anyhow::Result<u8> {
    let recording = a.records();
    // `--off-cpu` is offcpu's (main dispatches it there).
    if !recording && !a.record.events.is_empty() {
        let what = match &a.diff {
            Some(_) => "these recordings".to_string(),
            None => a.input.file.display().to_string(),
        };
        return usage(format!(
            "-e/--event records events (with a command after --, -p or -a); to draw one event of {what}, use --draw-event NAME"
        ));
    }
    if !recording && !a.record.event_file.is_empty() {
        return usage(
            "--event-file names events for -e when recording (with a command after --, -p or -a)",
        );
    }
    if let Some(d) = &a.diff {
        if recording {
            return usage("--diff draws two existing recordings: give no command, -p or -a");
        }
        if a.all {
            return usage("--diff draws one event: use --draw-event NAME instead of --all");
        }
        let (Some(base), Some(new)) = (d.first(), d.get(1)) else {
            return usage("--diff needs two files: BASE NEW");
        };
        diff(&a, base, new)?;
        return Ok(0);
    }
    if recording {
        return record_and_draw(&a, stop);
    }
    draw_file(&a, &a.input.file, None, stop)?;
    Ok(0)
}

fn sym_options(a: &FlamegraphArgs) -> SymOptions {
    SymOptions {
        inline: !a.no_inline,
        kernel: !a.no_kernel,
        user: true,
        // A flame chart keeps each sample's time.
        merge: !a.flamechart,
        symfs: a.input.symfs.clone(),
    }
}

/// How the graph is drawn (`--reverse`, `--inverted`, `--flamechart`, `--min-width`,
/// `--colors`).
fn style_of(a: &FlamegraphArgs) -> svg::Style {
    svg::Style {
        reverse: a.reverse,
        inverted: a.inverted,
        flame_chart: a.flamechart,
        min_width: a.min_width,
        colors: a.colors,
    }
}

/// The folded lines of event `ev` in time order (a flame chart's input): each sample's
/// stack in the order of their times (the profile keeps them unmerged), neighbours with
/// the same stack summed.
fn flame_chart_lines(a: &FlamegraphArgs, p: &Profile, ev: u32) -> Vec<String> {
    let mut samples: Vec<&hwprof_symbolize::Sample> =
        p.samples.iter().filter(|s| s.event == ev).collect();
    samples.sort_by_key(|s| s.time.unwrap_or(0));
    let mut out: Vec<(String, u64)> = Vec::new();
    for s in samples {
        let w = a.weight.of(s);
        if w == 0 {
            continue;
        }
        let stack = fold::labels(p, s, fold_options(a)).join(";");
        match out.last_mut() {
            Some((last, n)) if *last == stack => *n += w,
            _ => out.push((stack, w)),
        }
    }
    out.into_iter().map(|(st, n)| format!("{st} {n}")).collect()
}

fn fold_options(a: &FlamegraphArgs) -> FoldOptions {
    FoldOptions {
        inline: !a.no_inline,
        kernel: !a.no_kernel,
    }
}

/// Reads and symbolizes `path`; says how many stacks are truncated when
/// `say_truncated` (a recording of this run said it already, knowing the copies' size).
fn load(path: &Path, opts: &SymOptions, say_truncated: bool) -> anyhow::Result<Profile> {
    let pd = crate::input::open(path)?;
    // The file is let go once replayed, before the profile is assembled.
    let replayed = ProfileBuilder::new(&pd, opts)
        .replay()
        .with_context(|| format!("symbolizing {}", path.display()))?;
    drop(pd);
    let p = replayed.finish().profile;
    if say_truncated {
        crate::render::note_truncated(&p);
    }
    crate::input::notices(&p);
    Ok(p)
}

/// [`load`] with only the samples served from `level` (`--mem`).
fn load_level(
    path: &Path,
    opts: &SymOptions,
    level: hwprof_analysis::mem::Level,
) -> anyhow::Result<Profile> {
    let pd = crate::input::open(path)?;
    let lp = hwprof_analysis::mem::profile_for_level(&pd, opts, level)
        .with_context(|| format!("symbolizing {}", path.display()))?;
    if lp.memory == 0 {
        return Err(crate::input::no_memory_samples(path, lp.with_source));
    }
    crate::input::notices(&lp.profile);
    Ok(lp.profile)
}

/// Which modules built without frame pointers cut the profile's stacks short, if any.
fn note_cut_stacks(p: &Profile) {
    if let Some(c) = &p.cut_stacks {
        crate::sampling::note_cut_stacks(c);
    }
}

fn event_names(p: &Profile) -> String {
    let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
    names.join(", ")
}

/// The index of the event called `name`: exact, else ignoring modifiers (`cycles` for
/// `cycles:ppp`).
fn find_event(p: &Profile, name: &str, path: &Path) -> anyhow::Result<u32> {
    let exact = p.events.iter().position(|e| e.name == name);
    let loose = || {
        p.events.iter().position(|e| {
            e.attr.type_ != types::TRACEPOINT && e.name.split(':').next() == Some(name)
        })
    };
    match exact.or_else(loose) {
        Some(i) => Ok(i as u32),
        None => usage(format!(
            "no event '{name}' in {} (its events: {})",
            path.display(),
            event_names(p)
        )),
    }
}

fn has_samples(p: &Profile, ev: u32) -> bool {
    p.samples.iter().any(|s| s.event == ev)
}

/// The events to draw: `--draw-event`, `--all`, or the first event that has samples (with a
/// note naming the others, to print once the graph is written).
fn select_events(
    a: &FlamegraphArgs,
    p: &Profile,
    path: &Path,
) -> anyhow::Result<(Vec<u32>, Option<String>)> {
    if p.events.is_empty() {
        anyhow::bail!("{} has no events", path.display());
    }
    if let Some(name) = &a.draw_event {
        return Ok((vec![find_event(p, name, path)?], None));
    }
    if a.all {
        return Ok(((0..p.events.len() as u32).collect(), None));
    }
    let first = (0..p.events.len() as u32)
        .find(|&e| has_samples(p, e))
        .unwrap_or(0);
    let note = (p.events.len() > 1).then(|| {
        let name = p.events.get(first as usize).map_or("", |e| e.name.as_str());
        format!(
            "hwprof: note: {} has {} events ({}); drew {name} (--draw-event NAME for another, --all for one graph each)",
            path.display(),
            p.events.len(),
            event_names(p)
        )
    });
    Ok((vec![first], note))
}

/// `flamegraph.svg` + `cache-misses` → `flamegraph.cache-misses.svg`.
fn per_event_path(out: &Path, event: &str) -> PathBuf {
    let safe: String = event
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = match (stem, out.extension()) {
        (Some(stem), Some(ext)) => format!("{stem}.{safe}.{}", ext.to_string_lossy()),
        (Some(stem), None) => format!("{stem}.{safe}"),
        (None, _) => safe,
    };
    out.with_file_name(name)
}

/// Where `--folded` goes: stdout unless `-o` names a file other than the SVG default.
fn folded_to_stdout(a: &FlamegraphArgs) -> bool {
    a.output.as_os_str() == "-" || (a.folded && a.output.as_os_str() == "flamegraph.svg")
}

/// Folds one event, checking that the asked weight exists.
fn fold_event(a: &FlamegraphArgs, p: &Profile, ev: u32, path: &Path) -> anyhow::Result<Folded> {
    let folded = fold::fold(p, ev, a.weight, fold_options(a));
    let name = p.events.get(ev as usize).map_or("", |e| e.name.as_str());
    if a.weight == Weight::Weight && folded.samples > 0 && folded.weighted == 0 {
        return usage(format!(
            "{name} in {} has no sample weights: record with `hwprof record --weight` (-W) to sample them, or draw --weight period",
            path.display()
        ));
    }
    Ok(folded)
}

fn title_of(a: &FlamegraphArgs, p: &Profile, ev: u32, f: &Folded) -> String {
    if let Some(t) = &a.title {
        return t.clone();
    }
    let e = p.events.get(ev as usize);
    let name = e.map_or("", |e| e.name.as_str());
    let unit = svg::unit_of(name, e.is_some_and(|e| e.attr.type_ == types::TRACEPOINT));
    svg::title(name, &unit, a.weight, f.total, f.samples, f.period)
}

fn count_name_of(a: &FlamegraphArgs, p: &Profile, ev: u32) -> String {
    let e = p.events.get(ev as usize);
    let name = e.map_or("", |e| e.name.as_str());
    let unit = svg::unit_of(name, e.is_some_and(|e| e.attr.type_ == types::TRACEPOINT));
    svg::count_name(&unit, a.weight)
}

/// Draws `path`. `early` is the output opened before recording (used for a single graph);
/// the files of `--all`, opened now, wait for a FIFO's reader only until `stop`.
fn draw_file(
    a: &FlamegraphArgs,
    path: &Path,
    mut early: Option<Output>,
    stop: &Stop,
) -> anyhow::Result<()> {
    let profile = match a.mem {
        Some(level) => load_level(path, &sym_options(a), level)?,
        None => load(path, &sym_options(a), !a.records())?,
    };
    // A command recorded here was noted when it was recorded.
    if !a.records() {
        note_cut_stacks(&profile);
    }
    let (events, note) = select_events(a, &profile, path)?;
    let several = events.len() > 1;
    let to_stdout = folded_to_stdout(a);
    // stdout (opened before recording, or now), shared by every event drawn there.
    let mut stdout: Option<Output> = None;
    let mut drawn = 0;
    for ev in events {
        let name = profile
            .events
            .get(ev as usize)
            .map_or(String::new(), |e| e.name.clone());
        let folded = fold_event(a, &profile, ev, path)?;
        if folded.is_empty() {
            if several {
                eprintln!(
                    "hwprof: note: {}",
                    escape(&format!(
                        "no samples of {name} in {}; no graph for it",
                        path.display()
                    ))
                );
                continue;
            }
            return Err(NoSamples {
                what: format!(
                    "no samples of {name} in {}{}",
                    path.display(),
                    if a.weight == Weight::Weight {
                        " with a weight"
                    } else {
                        ""
                    }
                ),
                event: name,
            }
            .into());
        }
        let out = if several {
            per_event_path(&a.output, &name)
        } else {
            a.output.clone()
        };
        let title = title_of(a, &profile, ev, &folded);
        let chart = a.flamechart.then(|| flame_chart_lines(a, &profile, ev));
        if a.folded {
            let text = match &chart {
                Some(lines) => lines.iter().map(|l| format!("{l}\n")).collect(),
                None => folded.to_text(),
            };
            if to_stdout {
                let o = match stdout.take().or_else(|| early.take()) {
                    Some(o) => stdout.insert(o),
                    None => stdout.insert(crate::destination::stdout()?),
                };
                if several {
                    writeln!(o, "# event: {}", escape(&name))?;
                }
                o.write_all(text.as_bytes())?;
            } else {
                let early = per_event_output(several, &out, &mut early, stop)?;
                write_output(&out, early, text.as_bytes())?;
                eprintln!(
                    "hwprof: wrote {}",
                    escape(&format!("{} ({title})", out.display()))
                );
            }
        } else {
            let r = Render {
                title: title.clone(),
                subtitle: None,
                count_name: count_name_of(a, &profile, ev),
                sources: &folded.sources,
            };
            let style = style_of(a);
            let bytes = match &chart {
                Some(lines) => svg::render_styled(lines.iter().map(String::as_str), &r, &style),
                None => svg::render_styled(folded.lines(), &r, &style),
            }
            .context("drawing the flame graph")?;
            let early = per_event_output(several, &out, &mut early, stop)?;
            write_output(&out, early, &bytes)?;
            eprintln!(
                "hwprof: wrote {}",
                escape(&format!("{} ({title})", out.display()))
            );
        }
        drawn += 1;
    }
    if drawn == 0 {
        return Err(NoSamples {
            what: format!("no samples in {}", path.display()),
            event: String::new(),
        }
        .into());
    }
    if let Some(o) = stdout {
        crate::destination::commit(o)?;
    }
    if let Some(note) = note {
        eprintln!("{}", escape(&note));
    }
    Ok(())
}

/// Differential graph of NEW against BASE: red = grew, blue = shrank, BASE normalised to
/// NEW's total.
fn diff(a: &FlamegraphArgs, base: &Path, new: &Path) -> anyhow::Result<()> {
    let opts = sym_options(a);
    let pb = load(base, &opts, true)?;
    note_cut_stacks(&pb);
    let pn = load(new, &opts, true)?;
    note_cut_stacks(&pn);
    let ev_new = match &a.draw_event {
        Some(name) => find_event(&pn, name, new)?,
        None => (0..pn.events.len() as u32)
            .find(|&e| has_samples(&pn, e))
            .unwrap_or(0),
    };
    let name = pn
        .events
        .get(ev_new as usize)
        .map(|e| e.name.clone())
        .with_context(|| format!("{} has no events", new.display()))?;
    let ev_base = find_event(&pb, &name, base)?;
    let fb = fold_event(a, &pb, ev_base, base)?;
    let fn_ = fold_event(a, &pn, ev_new, new)?;
    if fb.is_empty() || fn_.is_empty() {
        anyhow::bail!(
            "no samples of {name} in {}",
            if fb.is_empty() {
                base.display()
            } else {
                new.display()
            }
        );
    }
    let two = fold::diff(&fb, &fn_).context("differential fold")?;
    if a.folded {
        let text = two.to_text();
        if folded_to_stdout(a) {
            write_output(Path::new("-"), None, text.as_bytes())?;
        } else {
            write_output(&a.output, None, text.as_bytes())?;
            eprintln!("hwprof: wrote {}", escape(&a.output.display().to_string()));
        }
        return Ok(());
    }
    let file_name = |p: &Path| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let title = a.title.clone().unwrap_or_else(|| {
        let base_title = title_of(a, &pn, ev_new, &fn_);
        format!("{base_title}: {} vs {}", file_name(new), file_name(base))
    });
    let subtitle = Some(format!(
        "{}; {} normalised to the total of {}",
        svg::diff_scale_words(),
        file_name(base),
        file_name(new)
    ));
    let r = Render {
        title: title.clone(),
        subtitle,
        count_name: count_name_of(a, &pn, ev_new),
        sources: &fn_.sources,
    };
    let bytes = svg::render_diff(two.lines(), &r).context("drawing the flame graph")?;
    write_output(&a.output, None, &bytes)?;
    eprintln!(
        "hwprof: wrote {}",
        escape(&format!("{} ({title})", a.output.display()))
    );
    Ok(())
}

/// Records (as `hwprof record -F 999 -g -q`), draws, removes the recording unless
/// `--data-file` keeps it, and returns the command's exit code. The graph's output is
/// opened first, so a wrong `-o` fails before the command starts; when it is stdout,
/// the command's stdout goes to stderr.
fn record_and_draw(a: &FlamegraphArgs, stop: &Stop) -> anyhow::Result<u8> {
    let dest = if folded_to_stdout(a) {
        Path::new("-")
    } else {
        a.output.as_path()
    };
    let early = Some(crate::destination::open_for_target(
        dest,
        &crate::destination::REPORT,
        stop,
    )?);
    let dir = if folded_to_stdout(a) {
        std::env::temp_dir()
    } else {
        match a.output.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        }
    };
    let (data, scratch) = crate::destination::recording_path(a.record.data_file.as_deref(), &dir)?;
    // As `hwprof record -F 999 -g -q -o DATA`.
    let target = crate::sampling::target(&a.record.flags())?;
    let output = crate::sampling::open_output(&data, stop)?;
    let who = ran_briefly(&target);
    let code = crate::sampling::record_profile(
        &a.record,
        target,
        a.weight == Weight::Weight,
        output,
        stop,
    )?;
    // With --all, files get one name per event: `early` only proved -o (stdout serves
    // every event).
    let drawn = draw_file(a, &data, early, stop);
    drop(scratch);
    match drawn {
        // The recording is hwprof's own scratch file: its path means nothing to the
        // user, the cause is the command being too short for the sampling rate.
        Err(e) if a.record.data_file.is_none() && e.downcast_ref::<NoSamples>().is_some() => {
            let event = e
                .downcast_ref::<NoSamples>()
                .map(|n| n.event.clone())
                .unwrap_or_default();
            let event = if event.is_empty() {
                "any event".to_string()
            } else {
                event
            };
            anyhow::bail!(
                "{}: no samples of {event} (at {}); sample more often (-F 10000, or -c N) or give it more work",
                who,
                match (&a.record.freq, a.record.count) {
                    (_, Some(c)) => format!("one sample every {c} events"),
                    (Some(f), None) => format!("-F {f}"),
                    (None, None) => "-F 999".to_string(),
                }
            )
        }
        Err(e) => Err(e),
        Ok(()) => Ok(code),
    }
}

/// Who ran too briefly to be sampled, in the user's words: the command, or the
/// processes, threads or CPUs recorded (while a command ran).
fn ran_briefly(target: &Target) -> String {
    let ids = |v: &[i32]| v.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
    let brief = "ran too briefly to be sampled";
    match target {
        Target::Command(argv) => format!("`{}` {brief}", argv.join(" ")),
        Target::During { argv, of } => {
            format!("{} while `{}` ran", ran_briefly(of), argv.join(" "))
        }
        Target::Pids(p) => format!("process {} {brief}", ids(p)),
        Target::Tids(t) => format!("thread {} {brief}", ids(t)),
        _ => format!("the system {brief}"),
    }
}

/// A recording with nothing to draw for the event asked for.
#[derive(Debug)]
struct NoSamples {
    /// The message, naming the file.
    what: String,
    /// The event that has no samples (empty: none has).
    event: String,
}

impl std::fmt::Display for NoSamples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for NoSamples {}

/// The output of one graph: `early` for a single one; with `--all`, `out` opened now
/// through the same gate as every output ([`crate::destination::create`]: a FIFO without a
/// reader is waited for only until `stop`, Ctrl-C when recording).
fn per_event_output(
    several: bool,
    out: &Path,
    early: &mut Option<Output>,
    stop: &Stop,
) -> anyhow::Result<Option<Output>> {
    if several {
        crate::destination::create(out, &crate::destination::REPORT, stop).map(Some)
    } else {
        Ok(early.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_event_names() {
        assert_eq!(
            per_event_path(Path::new("out/flamegraph.svg"), "cache-misses"),
            PathBuf::from("out/flamegraph.cache-misses.svg")
        );
        assert_eq!(
            per_event_path(Path::new("g.svg"), "sched:sched_switch"),
            PathBuf::from("g.sched_sched_switch.svg")
        );
        assert_eq!(
            per_event_path(Path::new("g"), "cpu-clock"),
            PathBuf::from("g.cpu-clock")
        );
    }
}
