//! `hwprof export`: a recording (or a command recorded on the spot) as a pprof,
//! speedscope or Firefox Profiler file. The writers are `hwprof_analysis::export`'s;
//! this file reads flags, records (as `hwprof flamegraph -- CMD` does: `-F 999 -g`),
//! and writes through [`crate::destination`] (a temporary file renamed into place, so a
//! failure never leaves half a profile).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use hwprof_analysis::export::{self, Export};
use hwprof_pmu::stop::Stop;
use hwprof_sampler::outfile::Output;
use hwprof_symbolize::Options as SymOptions;

use crate::args::export::{ExportArgs, ExportFormat};
use crate::error::usage;
use crate::render::{escape, thousands};

/// Runs `hwprof export`; returns the exit code (the recorded command's, when one ran).
/// `on_signals` makes the stop token of a recording (reading a file, Ctrl-C keeps its
/// default action).
pub fn run(a: ExportArgs, on_signals: fn() -> anyhow::Result<Stop>) -> anyhow::Result<u8> {
    if !a.records() && !a.record.events.is_empty() {
        return usage(format!(
            "-e/--event records events (with a command after --, -p or -a); {} is exported whole",
            a.input.file.display()
        ));
    }
    if !a.records() && !a.record.event_file.is_empty() {
        return usage(
            "--event-file names events for -e when recording (with a command after --, -p or -a)",
        );
    }
    if a.records() {
        return record_and_export(&a, &on_signals()?);
    }
    export_file(&a, &a.input.file, None)?;
    Ok(0)
}

/// Reads, symbolizes and writes `path`, into `early` when the output was opened
/// before recording.
fn export_file(a: &ExportArgs, path: &Path, early: Option<Output>) -> anyhow::Result<()> {
    let opts = SymOptions {
        inline: !a.no_inline,
        kernel: !a.no_kernel,
        user: true,
        merge: true,
        symfs: a.input.symfs.clone(),
    };
    let pd = crate::input::open(path)?;
    // The Firefox Profiler's timeline needs each sample at its time.
    let e = match a.format {
        ExportFormat::Firefox => Export::load_timeline(&pd, &opts),
        _ => Export::load(&pd, &opts),
    }
    .with_context(|| format!("symbolizing {}", path.display()))?;
    drop(pd);
    crate::input::notices(&e.profile);
    if !a.records() {
        crate::render::note_truncated(&e.profile);
        if let Some(c) = &e.profile.cut_stacks {
            crate::sampling::note_cut_stacks(c);
        }
    }
    if e.is_empty() {
        anyhow::bail!("{} has no samples to export", path.display());
    }
    let out_path = a.output();
    let out = match early {
        Some(o) => o,
        None => crate::destination::open_unwatched(&out_path, &crate::destination::REPORT)?,
    };
    let mut w = BufWriter::new(out);
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let written = match a.format {
        ExportFormat::Pprof => export::pprof::write(&e, &mut w),
        ExportFormat::Speedscope => export::speedscope::write(&e, &name, &mut w),
        ExportFormat::Firefox => export::firefox::write(&e, &format!("hwprof: {name}"), &mut w),
    };
    written
        .and_then(|()| w.flush())
        .with_context(|| format!("cannot write {}", out_path.display()))?;
    let out = w
        .into_inner()
        .map_err(|e| anyhow::Error::new(e.into_error()))
        .with_context(|| format!("cannot write {}", out_path.display()))?;
    crate::destination::commit(out)?;
    eprintln!(
        "hwprof: wrote {}",
        escape(&format!("{} ({})", out_path.display(), summary(&e)))
    );
    Ok(())
}

/// `cpu-clock: 2,220 samples, off-cpu: 12 samples`: what was exported.
fn summary(e: &Export) -> String {
    let p = &e.profile;
    let mut parts = Vec::new();
    for (i, ev) in p.events.iter().enumerate() {
        let n: u64 = p
            .samples
            .iter()
            .filter(|s| s.event as usize == i)
            .map(|s| s.count)
            .sum();
        if n > 0 {
            parts.push(format!("{}: {} samples", ev.name, thousands(n)));
        }
    }
    parts.join(", ")
}

/// Records (as `hwprof flamegraph -- CMD`: `-F 999`, frame pointers or DWARF as the
/// program needs), exports, removes the recording unless `--data-file` keeps it, and
/// returns the command's exit code. The output is opened first, so that a wrong `-o`
/// fails before the command starts.
fn record_and_export(a: &ExportArgs, stop: &Stop) -> anyhow::Result<u8> {
    let out_path = a.output();
    let early = crate::destination::open_for_target(&out_path, &crate::destination::REPORT, stop)?;
    let dir = match out_path.parent() {
        Some(d) if !d.as_os_str().is_empty() && out_path.as_os_str() != "-" => d.to_path_buf(),
        _ if out_path.as_os_str() == "-" => std::env::temp_dir(),
        _ => PathBuf::from("."),
    };
    let (data, scratch) = crate::destination::recording_path(a.record.data_file.as_deref(), &dir)?;
    let target = crate::sampling::target(&a.record.flags())?;
    let output = crate::sampling::open_output(&data, stop)?;
    let code = crate::sampling::record_profile(&a.record, target, false, output, stop)?;
    let exported = export_file(a, &data, Some(early));
    drop(scratch);
    exported?;
    Ok(code)
}
