//! Where a model's TopDown formulas come from, tried in this order:
//!
//! 1. `--metrics-file FILE`, else the model's file in `--perfmon-dir DIR` (or
//!    `$HWPROF_PERFMON_DIR`): Intel's perfmon TMA file, or for AMD the kernel's
//!    `amdzen4/pipeline.json`. A file named there and missing or unreadable is an
//!    error, not a reason to look elsewhere.
//! 2. The installed perf's own tables (`PERF_CPUID=... perf list --details`), when they
//!    have the model's TopDown tree (`TopdownL1`..., AMD `PipelineL1`...). perf 6.1 has
//!    Skylake, Skylake-X, Ice Lake and Sapphire Rapids, and no Zen 4/5 pipeline metrics.
//! 3. The pinned copy of the published file, from the cache or downloaded into it and
//!    verified ([`fetch`]).
//!
//! What was used is a [`Source`], which the commands print (one line on stderr, and in
//! `--json`). The formulas of 1 and 3 for Intel are Intel's (names such as
//! `Frontend_Bound`, `percent` values); those of perf's tables and of AMD's files are in
//! perf's language (`tma_frontend_bound`, `frontend_bound`: fractions).

use std::path::{Path, PathBuf};

use super::fetch::{self, Fetched};
use super::perf_tables::PerfTables;
use super::{Error, MetricFile, Model, find_file};

/// What the formulas came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--metrics-file`.
    MetricsFile(PathBuf),
    /// The model's file in `--perfmon-dir` / `$HWPROF_PERFMON_DIR`.
    PerfmonDir(PathBuf),
    /// The installed perf's tables, for this `PERF_CPUID`.
    Perf(String),
    /// The pinned copy in the cache (`origin`: `intel/perfmon@6dadedf3aa48`).
    Cache {
        /// The cached file.
        path: PathBuf,
        /// Repository and commit.
        origin: String,
        /// The URL, when downloaded by this run.
        downloaded_from: Option<String>,
    },
}

impl Source {
    /// A short word for `--json`: `metrics-file`, `perfmon-dir`, `perf`, `cache` or
    /// `download`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::MetricsFile(_) => "metrics-file",
            Source::PerfmonDir(_) => "perfmon-dir",
            Source::Perf(_) => "perf",
            Source::Cache {
                downloaded_from: None,
                ..
            } => "cache",
            Source::Cache { .. } => "download",
        }
    }

    /// The file, perf's CPUID, or the cached file.
    pub fn detail(&self) -> String {
        match self {
            Source::MetricsFile(p) | Source::PerfmonDir(p) | Source::Cache { path: p, .. } => {
                p.display().to_string()
            }
            Source::Perf(cpuid) => format!("PERF_CPUID={cpuid}"),
        }
    }

    /// One line for people: `the installed perf's tables (PERF_CPUID=...)`.
    pub fn describe(&self) -> String {
        match self {
            Source::MetricsFile(p) => format!("{} (--metrics-file)", p.display()),
            Source::PerfmonDir(p) => format!("{} (--perfmon-dir)", p.display()),
            Source::Perf(cpuid) => {
                format!("the installed perf's tables (perf list --details, PERF_CPUID={cpuid})")
            }
            Source::Cache {
                path,
                origin,
                downloaded_from: None,
            } => format!("{origin}, SHA-256 verified, cached in {}", path.display()),
            Source::Cache {
                path,
                origin,
                downloaded_from: Some(url),
            } => format!(
                "{origin}, downloaded from {url}, SHA-256 verified, cached in {}",
                path.display()
            ),
        }
    }

    /// Whether the formulas are in perf's language (names such as `tma_retiring`,
    /// values as fractions) rather than Intel's files' (`Retiring`, percent).
    pub fn perf_language(&self, model: Model) -> bool {
        model.is_amd() || matches!(self, Source::Perf(_))
    }
}

/// What to load.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The model.
    pub model: Model,
    /// `--metrics-file`.
    pub metrics_file: Option<&'a Path>,
    /// `--perfmon-dir` or `$HWPROF_PERFMON_DIR`.
    pub perfmon_dir: Option<&'a Path>,
    /// The CPUID to ask perf's tables for (this CPU's, or [`Model::perf_cpuid`]).
    pub perf_cpuid: &'a str,
    /// Cache and download.
    pub fetch: &'a fetch::Config,
    /// Also the event files with the encodings of the metrics' events (to count them).
    pub events: bool,
}

/// The formulas and where they came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The metrics.
    pub file: MetricFile,
    /// Where they came from.
    pub source: Source,
    /// Event files with the encodings, when asked for and found.
    pub event_files: Vec<PathBuf>,
    /// Why the event files are not all there, when they are not.
    pub events_note: Option<String>,
}

/// Parses a model's metrics file (Intel's TMA JSON, or the kernel's pipeline JSON).
pub fn parse_file(model: Model, text: &str, path: &Path) -> Result<MetricFile, Error> {
    if model.is_amd() {
        let name = path.display().to_string();
        return PerfTables::from_json(&[(&name, text)])?.metric_file(None);
    }
    MetricFile::parse(text, path)
}

/// The most a metrics file may hold (the largest published one is 511 KiB).
pub const MAX_FILE: u64 = 64 << 20;

/// The text of a metrics file (`--metrics-file`, or the model's file in
/// `--perfmon-dir`): a regular file only, never opened blocking (a FIFO or device is
/// refused before it is opened), at most [`MAX_FILE`] bytes. A file that cannot be
/// opened is [`Error::Read`], as before (`cannot read FILE: ...`).
pub(crate) fn read_file(path: &Path) -> Result<String, Error> {
    hwprof_pmu::file::read_to_string(path, MAX_FILE).map_err(|e| match e {
        hwprof_pmu::file::FileError::Io { source, .. } => Error::Read {
            path: path.to_path_buf(),
            source,
        },
        e => Error::File(e),
    })
}

/// The TopDown tree of perf's tables for `cpuid`, or why not.
fn from_perf(cpuid: &str) -> Result<MetricFile, String> {
    let tables = PerfTables::from_perf(cpuid).map_err(|e| match e {
        Error::NoPerf => "perf is not installed".to_string(),
        e => format!("perf's tables cannot be used ({e})"),
    })?;
    tables.metric_file(None).map_err(|e| match e {
        Error::PerfTables(m) if m.starts_with("perf's tables have no TopDown") => {
            format!("the installed perf has no TopDown metrics for PERF_CPUID={cpuid}")
        }
        e => format!(
            "the installed perf's TopDown metrics for PERF_CPUID={cpuid} cannot be used ({e})"
        ),
    })
}

fn fetched(model: Model, rel: &str, c: &fetch::Config) -> Result<Fetched, String> {
    let p = fetch::pinned(rel)
        .ok_or_else(|| format!("no pinned copy of {rel} for {}", model.label()))?;
    fetch::fetch(p, c).map_err(|e| e.to_string())
}

/// Loads the formulas of `r.model` from the first source that has them.
pub fn load(r: &Request<'_>) -> Result<Loaded, Error> {
    let model = r.model;
    let mut loaded = if let Some(path) = r.metrics_file {
        let file = parse_file(model, &read_file(path)?, path)?;
        Loaded {
            file,
            source: Source::MetricsFile(path.to_path_buf()),
            event_files: Vec::new(),
            events_note: None,
        }
    } else if let Some(dir) = r.perfmon_dir {
        let path = find_file(dir, model)?;
        let file = parse_file(model, &read_file(&path)?, &path)?;
        Loaded {
            file,
            source: Source::PerfmonDir(path),
            event_files: Vec::new(),
            events_note: None,
        }
    } else {
        match from_perf(r.perf_cpuid) {
            Ok(file) => Loaded {
                file,
                source: Source::Perf(r.perf_cpuid.to_string()),
                event_files: Vec::new(),
                events_note: None,
            },
            Err(perf) => match fetched(model, &model.metrics_file(), r.fetch) {
                Ok(f) => {
                    let text = String::from_utf8_lossy(&f.bytes);
                    let file = parse_file(model, &text, &f.path)?;
                    let origin = fetch::pinned(&model.metrics_file())
                        .map_or_else(String::new, |p| p.origin());
                    Loaded {
                        file,
                        source: Source::Cache {
                            path: f.path,
                            origin,
                            downloaded_from: f.downloaded_from,
                        },
                        event_files: Vec::new(),
                        events_note: None,
                    }
                }
                Err(download) => {
                    let hint = if model.is_amd() {
                        "pass --perfmon-dir DIR (the kernel's tools/perf/pmu-events/arch/x86, which has amdzen4/ and amdzen5/) or install a perf whose tables have the Zen pipeline metrics (6.1's have none)"
                    } else {
                        "pass --perfmon-dir DIR (a checkout of https://github.com/intel/perfmon) or install perf 6.1 or later"
                    };
                    return Err(Error::NoSource {
                        model: model.label().to_string(),
                        perf,
                        download: format!("the pinned copy cannot be had: {download}"),
                        hint: hint.to_string(),
                    });
                }
            },
        }
    };
    if r.events {
        let mut notes = Vec::new();
        for rel in model.event_files() {
            let local = match &loaded.source {
                Source::PerfmonDir(p) => perfmon_root(p, model).map(|d| d.join(&rel)),
                _ => None,
            };
            match local {
                Some(p) if p.is_file() => loaded.event_files.push(p),
                _ => match fetched(model, &rel, r.fetch) {
                    Ok(f) => loaded.event_files.push(f.path),
                    Err(e) => notes.push(format!("{rel}: {e}")),
                },
            }
        }
        if !notes.is_empty() {
            loaded.events_note = Some(notes.join("; "));
        }
    }
    Ok(loaded)
}

/// The folder `--perfmon-dir` named, from the metrics file found in it.
fn perfmon_root(metrics: &Path, model: Model) -> Option<PathBuf> {
    let depth = model.metrics_file().split('/').count();
    let mut p = metrics;
    for _ in 0..depth {
        p = p.parent()?;
    }
    Some(p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_describe_themselves() {
        let s = Source::Perf("GenuineIntel-6-7E-5".into());
        assert_eq!(s.kind(), "perf");
        assert!(s.perf_language(Model::IceLake));
        let c = Source::Cache {
            path: "/c/x.json".into(),
            origin: "intel/perfmon@6dadedf3aa48".into(),
            downloaded_from: Some("http://h/x.json".into()),
        };
        assert_eq!(c.kind(), "download");
        assert!(c.describe().contains("downloaded from http://h/x.json"));
        assert!(!c.perf_language(Model::Skylake));
        assert!(c.perf_language(Model::Zen4));
        assert_eq!(
            perfmon_root(
                Path::new("/p/SKL/metrics/skylake_metrics.json"),
                Model::Skylake
            ),
            Some(PathBuf::from("/p"))
        );
        assert_eq!(
            perfmon_root(Path::new("/k/amdzen4/pipeline.json"), Model::Zen4),
            Some(PathBuf::from("/k"))
        );
    }
}
