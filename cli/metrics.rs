//! `hwprof metrics`: TopDown (TMA) metrics of Intel's metric files over counts taken
//! elsewhere (`perf stat -x,` or `hwprof stat -j` output). The evaluation is
//! `hwprof_analysis::topdown`; this file finds the file, reads the counts and prints.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use hwprof_analysis::topdown::perf_tables::PerfTables;
use hwprof_analysis::topdown::source::{self, Loaded, Source};
use hwprof_analysis::topdown::{self, Constants, Counts, MetricFile, MetricValue, Model, fetch};
use serde_json::json;

use crate::args::MetricsArgs;
use crate::error::Usage;

/// The environment variable naming a perfmon checkout.
pub const PERFMON_ENV: &str = "HWPROF_PERFMON_DIR";

/// The model of `--cpu NAME`, or a usage error listing the known ones.
pub fn model(name: &str) -> anyhow::Result<Model> {
    Model::from_name(name).ok_or_else(|| {
        Usage(format!(
            "no TopDown metrics for CPU `{name}`: the models are skl, skx, icl, spr, zen4 and zen5, and adl for `hwprof metrics` (Zen 3 and older have no pipeline metrics)"
        ))
        .into()
    })
}

/// Whether `--cpu` names Alder Lake, whose metrics come from perf's tables.
pub fn is_alder_lake(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "adl" | "alderlake" | "alder-lake"
    )
}

/// perf's CPU id of Alder Lake (`GenuineIntel-6-97`; 6-9A has the same tables).
pub const ADL_CPUID: &str = "GenuineIntel-6-97-0";

/// perf's Alder Lake tables, or one line on why not.
fn adl_tables() -> anyhow::Result<PerfTables> {
    let no_tables = || {
        anyhow::anyhow!(
            "the installed perf has no Alder Lake metric tables (no cpu_core and cpu_atom TopDown metrics for PERF_CPUID={ADL_CPUID}): install perf 6.1 or later"
        )
    };
    let tables = match PerfTables::from_perf(ADL_CPUID) {
        Ok(t) => t,
        Err(topdown::Error::NoPerf) => anyhow::bail!(
            "Alder Lake metrics are read from perf's tables and perf is not installed: install perf 6.1 or later (Debian: linux-perf)"
        ),
        Err(topdown::Error::PerfTables(e)) if e.contains("Metric Groups") => {
            return Err(no_tables());
        }
        Err(e) => return Err(e.into()),
    };
    let units = tables.units();
    if !(units.contains(&"cpu_core") && units.contains(&"cpu_atom")) {
        return Err(no_tables());
    }
    Ok(tables)
}

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
        Err(topdown::Error::File(e)) if e.is_bad_input() => Err(Usage(e.to_string()).into()),
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

fn constants(smt: bool, given: &[String]) -> anyhow::Result<Constants> {
    let mut c = Constants {
        smt,
        ..Constants::default()
    };
    for kv in given {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(Usage(format!("--const {kv}: expected NAME=VALUE")).into());
        };
        let v: f64 = v
            .trim()
            .parse()
            .map_err(|_| Usage(format!("--const {kv}: `{v}` is not a number")))?;
        c.named.insert(k.trim().to_ascii_uppercase(), v);
    }
    Ok(c)
}

/// The most a counts file may hold: perf's output for thousands of events and CPUs is a
/// few MiB.
const MAX_COUNTS_BYTES: u64 = 256 << 20;

fn read_counts(path: &Path) -> anyhow::Result<Counts> {
    use std::os::unix::fs::FileTypeExt;
    let mut text = String::new();
    let what = if path == Path::new("-") {
        "stdin".to_string()
    } else {
        path.display().to_string()
    };
    let reader: Box<dyn Read> = if path == Path::new("-") {
        Box::new(std::io::stdin())
    } else {
        let meta = std::fs::metadata(path).with_context(|| format!("cannot read {what}"))?;
        let t = meta.file_type();
        let kind = if t.is_dir() {
            Some("a directory")
        } else if t.is_char_device() || t.is_block_device() {
            Some("a device")
        } else if t.is_socket() {
            Some("a socket")
        } else {
            None
        };
        if let Some(kind) = kind {
            return Err(Usage(format!(
                "--counts {what}: is {kind}, not the output of `perf stat -x,` or `hwprof stat -j`"
            ))
            .into());
        }
        Box::new(std::fs::File::open(path).with_context(|| format!("cannot read {what}"))?)
    };
    reader
        .take(MAX_COUNTS_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("reading the counts from {what}"))?;
    if text.len() as u64 > MAX_COUNTS_BYTES {
        anyhow::bail!("{what} is larger than 256 MiB: not a counts file");
    }
    topdown::Counts::parse(&text).with_context(|| format!("reading counts from {what}"))
}

pub fn run(a: MetricsArgs) -> anyhow::Result<u8> {
    if is_alder_lake(&a.cpu) {
        return run_perf_tables(a);
    }
    if a.core_type.is_some() {
        return Err(Usage(format!(
            "--core-type is for hybrid models (--cpu adl), not `{}`",
            a.cpu
        ))
        .into());
    }
    let model = model(&a.cpu)?;
    let smt = a.smt == "on";
    let consts = constants(smt, &a.consts)?;
    let loaded = load(
        model,
        a.metrics_file.as_deref(),
        a.perfmon_dir.as_deref(),
        model.perf_cpuid(),
        false,
    )?;
    let counts = read_counts(&a.counts)?;
    let consts = with_duration(consts, &counts);
    let levels: Vec<u32> = (1..=a.level).collect();
    let selected = loaded.file.select(&levels, a.all);
    let values = MetricFile::evaluate(&selected, &counts, &consts);
    say_source(model.label(), &loaded.source);
    let out = std::io::stdout();
    let mut out = out.lock();
    print(&mut out, &values, a.json, &loaded.source)?;
    out.flush()?;
    if !values.is_empty() && values.iter().all(|v| v.value.is_none()) {
        anyhow::bail!(
            "no metric could be computed from {}: the counts lack the events listed above (count them with `perf stat -x, -e EVENTS`)",
            a.counts.display()
        );
    }
    Ok(0)
}

/// `--cpu adl`: the TopDown tree of each core type from perf's tables; values are
/// what perf's expressions give (fractions: perf stat shows them as percent).
fn run_perf_tables(a: MetricsArgs) -> anyhow::Result<u8> {
    if a.metrics_file.is_some() || a.perfmon_dir.is_some() {
        return Err(Usage(
            "--cpu adl reads the formulas from the installed perf's tables, not from --metrics-file or --perfmon-dir".into(),
        )
        .into());
    }
    let consts = constants(a.smt == "on", &a.consts)?;
    let units: Vec<(&str, &str)> = match a.core_type.as_deref() {
        Some("core") => vec![("core", "cpu_core")],
        Some("atom") => vec![("atom", "cpu_atom")],
        _ => vec![("core", "cpu_core"), ("atom", "cpu_atom")],
    };
    let tables = adl_tables()?;
    let counts = read_counts(&a.counts)?;
    let source = Source::Perf(ADL_CPUID.to_string());
    let consts = with_duration(consts, &counts);
    let levels: Vec<u32> = (1..=a.level).collect();
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut any = false;
    let mut all_none = true;
    say_source("ADL", &source);
    for (i, (core_type, unit)) in units.iter().enumerate() {
        let file = tables.metric_file(Some(unit))?;
        let selected = file.select(&levels, a.all);
        let values = MetricFile::evaluate(&selected, &counts, &consts);
        any |= !values.is_empty();
        all_none &= values.iter().all(|v| v.value.is_none());
        if a.json {
            for v in &values {
                let mut o = json_of(v, &source);
                o["core_type"] = json!(core_type);
                writeln!(out, "{o}")?;
            }
        } else {
            if units.len() > 1 {
                if i > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "{unit} (--core-type {core_type}):")?;
            }
            print(&mut out, &values, false, &source)?;
        }
    }
    out.flush()?;
    if any && all_none {
        anyhow::bail!(
            "no metric could be computed from {}: the counts lack the events listed above (count them with `perf stat -j` or `hwprof stat -j`)",
            a.counts.display()
        );
    }
    Ok(0)
}

fn with_duration(consts: Constants, counts: &Counts) -> Constants {
    let mut consts = consts;
    // perf's `duration_time` event (ns) gives the files' duration constant.
    if consts.get("DURATIONTIMEINMILLISECONDS").is_none()
        && let Some(ns) = counts.get("duration_time")
    {
        consts
            .named
            .insert("DURATIONTIMEINMILLISECONDS".into(), ns / 1e6);
    }
    consts
}

/// One metric as a JSON object, with where its formula came from.
fn json_of(v: &MetricValue, source: &Source) -> serde_json::Value {
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
