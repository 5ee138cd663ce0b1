//! What `hwprof metrics` and `hwprof stat --topdown` share: the TopDown formulas of a
//! model found where they are ([`load`]: `--metrics-file`, the perfmon checkout, perf's
//! tables, the verified cached copy), where they came from said once ([`say_source`]),
//! and the metrics printed as a tree or JSON lines ([`print`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use hwprof_analysis::topdown::source::{self, Loaded, Source};
use hwprof_analysis::topdown::{self, MetricValue, Model, fetch};
use serde_json::json;

/// The environment variable naming a perfmon checkout.
pub const PERFMON_ENV: &str = "HWPROF_PERFMON_DIR";

/// The perfmon checkout: `--perfmon-dir`, else `$HWPROF_PERFMON_DIR`.
pub fn perfmon_dir(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(PERFMON_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// Loads the formulas of `model` from the first source that has them
/// ([`source::load`]): `--metrics-file`, the perfmon folder, perf's tables for
/// `perf_cpuid`, the verified cached copy. `events`: also the event files (to count).
pub fn load(
    model: Model,
    metrics_file: Option<&Path>,
    perfmon: Option<&Path>,
    perf_cpuid: &str,
    events: bool,
) -> anyhow::Result<Loaded> {
    let dir = perfmon_dir(perfmon);
    let fetch = fetch::Config::from_env();
    let loaded = source::load(&source::Request {
        model,
        metrics_file,
        perfmon_dir: dir.as_deref(),
        perf_cpuid,
        fetch: &fetch,
        events,
    });
    match loaded {
        // A FIFO, a device, a directory or too large a file: the user named the wrong
        // file (exit 2, as for -i and --event-file).
        Err(topdown::Error::File(e)) if e.is_bad_input() => {
            Err(crate::error::Usage(e.to_string()).into())
        }
        other => Ok(other?),
    }
}

/// The one line on stderr that says where the formulas came from.
pub fn say_source(model: &str, source: &Source) {
    eprintln!(
        "hwprof: TopDown formulas for {model}: {}",
        crate::render::escape(&source.describe())
    );
}

/// One metric as a JSON object, with where its formula came from.
pub fn json_of(v: &MetricValue, source: &Source) -> serde_json::Value {
    json!({
        "name": v.name,
        "level": v.level,
        "value": v.value,
        "unit": v.unit,
        "parent": v.parent,
        "missing_events": v.missing_events,
        "missing_constants": v.missing_constants,
        "error": v.error,
        "source": source.kind(),
        "source_detail": source.detail(),
    })
}

/// Why a metric has no value, in one phrase.
pub fn why_not(v: &MetricValue) -> String {
    let mut parts = Vec::new();
    if !v.missing_events.is_empty() {
        parts.push(format!("missing events {}", v.missing_events.join(", ")));
    }
    if !v.missing_constants.is_empty() {
        parts.push(format!(
            "missing constants {} (pass --const NAME=VALUE)",
            v.missing_constants.join(", ")
        ));
    }
    if let Some(e) = &v.error {
        parts.push(e.clone());
    }
    parts.join("; ")
}

/// Prints the metrics, as a TopDown tree (children indented under their parent) or
/// JSON lines.
pub fn print(
    w: &mut dyn Write,
    values: &[MetricValue],
    as_json: bool,
    source: &Source,
) -> anyhow::Result<()> {
    if as_json {
        for v in values {
            writeln!(w, "{}", json_of(v, source))?;
        }
        return Ok(());
    }
    // Names, units and reasons come from metric files and perf's tables: escaped.
    use crate::render::escape;
    let labels: Vec<String> = values
        .iter()
        .map(|v| {
            let indent = " ".repeat(2 * (v.level as usize).saturating_sub(1));
            format!("{indent}{}", escape(&v.name))
        })
        .collect();
    let width = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    writeln!(w, "{:<width$}  {:>10}", "Metric", "Value")?;
    for (v, label) in values.iter().zip(&labels) {
        match v.value {
            Some(x) if v.unit == "percent" => writeln!(w, "{label:<width$}  {x:>10.2} %")?,
            Some(x) if v.unit.is_empty() => writeln!(w, "{label:<width$}  {x:>10.3}")?,
            Some(x) => writeln!(w, "{label:<width$}  {x:>10.3} {}", escape(&v.unit))?,
            None => writeln!(
                w,
                "{label:<width$}  {:>10}   ({})",
                "-",
                escape(&why_not(v))
            )?,
        }
    }
    Ok(())
}
