//! `hwprof bench`: run a command many times, summarize every metric robustly, and give
//! a regression verdict against a saved baseline or an interleaved A/B command.
//!
//! Exit codes: 0 no regression, 1 regression, 2 usage error, 3 the benchmark could not
//! be measured (the command failed, counters could not open), 127 or 126 the command
//! cannot run (not found, not executable: a shell's codes, as every command gives), 130
//! interrupted (SIGINT or SIGTERM: the runs that finished are reported, nothing saved).

mod print;
mod run;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hwprof_analysis::bench::command::split_command;
use hwprof_analysis::bench::compare::{self, Mode, gate_of};
use hwprof_analysis::bench::doc::{self, Doc, Settings};
use hwprof_analysis::bench::metrics::{self, RunResult};
use hwprof_pmu::event::Class;
use hwprof_pmu::stop::Stop;
use hwprof_sampler::outfile::Output;

use crate::args::BenchArgs;
use crate::error::{ExitWith, Usage, usage};
use crate::render::escape;
use run::Runner;

/// The default counters: time and software events everywhere, hardware events where
/// a PMU exists.
const DEFAULT_EVENTS: &str =
    "task-clock,instructions,cycles,branch-misses,cache-misses,page-faults,context-switches";

/// Runs `hwprof bench`.
pub fn run(a: BenchArgs, stop: &Stop) -> anyhow::Result<u8> {
    run_checked(a, stop).map_err(|e| {
        if matches!(crate::error::exit_code_of(&e), 2 | 126 | 127 | 130)
            || crate::error::is_broken_pipe(&e)
            || crate::error::stopped(&e).is_some()
        {
            e
        } else {
            ExitWith(3, crate::error::error_line(&e)).into()
        }
    })
}

fn run_checked(a: BenchArgs, stop: &Stop) -> anyhow::Result<u8> {
    if a.record.command.is_empty() {
        return usage("give the command to benchmark after `--`, e.g. `hwprof bench -- ./bench`");
    }
    if a.runs < 2 {
        return usage(format!(
            "-r {}: a benchmark needs at least 2 runs (use `hwprof stat` for one)",
            a.runs
        ));
    }
    if !(a.confidence > 0.0 && a.confidence < 1.0) {
        return usage(format!(
            "--confidence {}: give a level between 0 and 1, e.g. 0.99",
            a.confidence
        ));
    }
    if !(a.threshold.is_finite() && a.threshold >= 0.0) {
        return usage(format!(
            "--threshold {}: give a percentage ≥ 0, e.g. 5",
            a.threshold
        ));
    }
    let a_argv = match &a.compare {
        Some(s) => Some(split_command(s).map_err(|e| Usage(format!("--compare: {e}")))?),
        None => None,
    };
    let base = match &a.baseline {
        // Everything wrong with a baseline is a usage error.
        Some(name) => Some(doc::load(name, &a.baseline_dir).map_err(|e| Usage(e.to_string()))?),
        None => None,
    };
    // The baseline's output is opened now: it cannot be saved → nothing runs.
    let mut saver = match &a.save {
        Some(name) => Some(prepare_save(name, &a.baseline_dir, stop)?),
        None => None,
    };
    let enc = crate::events::encoder(None, &a.record.event_file)?;
    let explicit = !a.record.events.is_empty();
    let events = if explicit {
        crate::events::parse_all(&enc, &a.record.events)?
    } else {
        enc.parse(DEFAULT_EVENTS)?
    };
    let names: Vec<&str> = events.events.iter().map(|e| e.name.as_str()).collect();
    if let Some(d) = names
        .iter()
        .enumerate()
        .find(|(i, n)| names[..*i].contains(n))
    {
        return usage(format!("event '{}' is given twice", d.1));
    }
    let classes: Vec<Class> = events.events.iter().map(|e| e.class).collect();
    let settings = Settings {
        runs: a.runs,
        warmup: a.warmup,
        // One name per event, as the metrics are named.
        events: names.iter().map(|n| n.to_string()).collect(),
        threshold_pct: a.threshold,
        confidence: a.confidence,
        gate: Vec::new(),
    };
    // The report's stdout, taken before any run: the command's own stdout then goes to
    // stderr (--show-output), so the report stays clean.
    let report =
        crate::destination::open_for_target(Path::new("-"), &crate::destination::REPORT, stop)?;
    let runner = Runner::new(events, a.show_output, a.ignore_failure);

    let mut sides: Vec<Vec<String>> = Vec::new();
    if let Some(x) = a_argv {
        sides.push(x);
    }
    sides.push(a.record.command.clone());
    let event_names = runner.event_names();
    let all_metrics = metrics::metric_names(&event_names);
    // Bad --gate names are usage errors before anything runs.
    let gate = |counted: &[String], ab| {
        gate_of(a.gate.as_deref(), &all_metrics, counted, ab).map_err(|e| Usage(e.to_string()))
    };
    gate(&all_metrics, false)?;
    let results = measure(&runner, &sides, a.warmup, a.runs, stop)?;
    note_unsupported(
        &results[0][0],
        &event_names,
        &classes,
        enc.host_has_cpu_pmu(),
    );

    let counted = metrics::counted(&event_names, &results[0][0]);
    let settings = Settings {
        gate: gate(&counted, sides.len() == 2)?,
        ..settings
    };
    let machine = doc::Machine::this();
    let created = doc::now_utc();
    let make = |argv: &[String], runs: &[RunResult], name: Option<&str>| Doc {
        schema: doc::SCHEMA.to_string(),
        hwprof_version: env!("CARGO_PKG_VERSION").to_string(),
        created: created.clone(),
        name: name.map(String::from),
        command: argv.to_vec(),
        machine: machine.clone(),
        settings: Settings {
            runs: runs.len() as u32,
            ..settings.clone()
        },
        metrics: metrics::metrics(runs, &event_names),
        baseline: None,
        comparison: None,
    };
    let (mut cur, base, mode) = if sides.len() == 2 {
        (
            make(&sides[1], &results[1], Some("B")),
            Some(make(&sides[0], &results[0], Some("A"))),
            Mode::Ab,
        )
    } else {
        (make(&sides[0], &results[0], None), base, Mode::Baseline)
    };
    let mut code = 0;
    if let Some(base) = base {
        let cmp = compare::compare(
            &base,
            &cur,
            a.threshold,
            a.confidence,
            mode,
            &cur.settings.gate,
        );
        for w in &cmp.warnings {
            eprintln!("hwprof: warning: {}", escape(w));
        }
        if cmp.verdict == compare::REGRESSION {
            code = 1;
        }
        cur.baseline = Some(Box::new(base));
        cur.comparison = Some(cmp);
    }
    let interrupted = stop.is_stopped();
    let mut out = std::io::BufWriter::new(report);
    if a.json {
        serde_json::to_writer_pretty(&mut out, &cur).context("encoding JSON")?;
        writeln!(out)?;
    } else if a.markdown {
        print::markdown(&mut out, &cur)?;
    } else {
        print::human(&mut out, &cur)?;
    }
    let report = out
        .into_inner()
        .map_err(|e| anyhow::Error::new(e.into_error()).context("writing the report"))?;
    crate::destination::commit(report)?;
    if interrupted {
        if let Some(name) = &a.save {
            // Fewer runs than asked for: not a baseline to compare against later.
            eprintln!(
                "hwprof: baseline '{}' not saved: the bench was interrupted",
                escape(name)
            );
        }
        return Ok(130);
    }
    if let (Some(name), Some(saver)) = (&a.save, saver.take()) {
        let path = save(&cur, name, saver)?;
        eprintln!(
            "hwprof: saved baseline '{}' to {} ({})",
            escape(name),
            escape(&path.display().to_string()),
            crate::render::plural(u64::from(cur.settings.runs), "run")
        );
    }
    Ok(code)
}

/// Opens, before any run, the output baseline `name` will be saved to: creates its
/// directory, then the output itself ([`crate::destination`]: a temporary file next to it,
/// renamed into place by [`save`], or a device or FIFO written directly). That is the
/// check that it can be saved; dropped unsaved (a failed or interrupted run), nothing
/// is left behind.
fn prepare_save(name: &str, dir: &Path, stop: &Stop) -> anyhow::Result<(PathBuf, Output)> {
    let path = doc::baseline_path(name, dir);
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Only when the path is not a directory itself: `--save some/dir/` is refused
    // below as a usage error, not half-created.
    if !path.is_dir() {
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("cannot create baseline directory {}", parent.display()))?;
    }
    let out = crate::destination::create(&path, &crate::destination::REPORT, stop)
        .with_context(|| format!("cannot save baseline '{name}'"))?;
    Ok((path, out))
}

/// Saves `doc` (without its comparison) as baseline `name` into `out` (from
/// [`prepare_save`]), atomically. Returns the path.
fn save(doc: &Doc, name: &str, (path, mut out): (PathBuf, Output)) -> anyhow::Result<PathBuf> {
    let bytes = doc.baseline_json(name).context("encoding the baseline")?;
    out.write_all(&bytes)
        .and_then(|()| out.flush())
        .with_context(|| format!("cannot save baseline {}", path.display()))?;
    crate::destination::commit(out)
        .with_context(|| format!("cannot save baseline {}", path.display()))?;
    Ok(path)
}

/// Warm-up runs, then the measured ones, alternating between `sides` (A B A B ...).
/// Returns the measured runs of each side. On SIGINT, keeps the complete rounds.
fn measure(
    runner: &Runner,
    sides: &[Vec<String>],
    warmup: u32,
    runs: u32,
    stop: &Stop,
) -> anyhow::Result<Vec<Vec<RunResult>>> {
    let mut results: Vec<Vec<RunResult>> = vec![Vec::new(); sides.len()];
    let tag = |k: usize| -> &'static str {
        match (sides.len(), k) {
            (1, _) => "",
            (_, 0) => " (A)",
            _ => " (B)",
        }
    };
    let mut first: Option<RunResult> = None;
    'outer: for i in 0..warmup + runs {
        for (k, argv) in sides.iter().enumerate() {
            let label = if i < warmup {
                format!("warm-up run {}", i + 1)
            } else {
                format!("run {}", i - warmup + 1)
            };
            let of = if i < warmup { warmup } else { runs };
            runner.progress(&format!("hwprof bench: {label}/{of}{}", tag(k)));
            let r = runner.run(argv, &label, stop)?;
            if stop.is_stopped() {
                break 'outer;
            }
            first.get_or_insert_with(|| r.clone());
            if i >= warmup {
                results[k].push(r);
            }
        }
    }
    runner.done();
    let done = results.iter().map(Vec::len).min().unwrap_or(0);
    if stop.is_stopped() {
        if done < 2 {
            return Err(ExitWith(
                130,
                format!(
                    "bench interrupted after {}: nothing to report (a bench needs 2)",
                    crate::render::plural(done as u64, "finished run")
                ),
            )
            .into());
        }
        eprintln!(
            "hwprof: bench interrupted: reporting the {done} of {runs} runs that finished (exit 130)"
        );
        for r in &mut results {
            r.truncate(done);
        }
    }
    Ok(results)
}

/// One note for counters the kernel refused, as `hwprof stat` gives.
fn note_unsupported(first: &RunResult, names: &[String], classes: &[Class], has_pmu: bool) {
    let missing: Vec<&str> = names
        .iter()
        .zip(&first.counts)
        .filter(|(_, c)| c.is_none())
        .map(|(n, _)| n.as_str())
        .collect();
    if missing.is_empty() {
        return;
    }
    let hw = classes.contains(&Class::Core);
    let why = if hw && !has_pmu {
        "this kernel exposes no hardware PMU (usual in VMs and containers)"
    } else {
        "the kernel rejected them"
    };
    eprintln!(
        "hwprof: note: {} <not supported>: {why}; the verdict uses the other metrics",
        escape(&missing.join(", "))
    );
}
