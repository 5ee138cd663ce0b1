//! TopDown (TMA) metrics from Intel's published metric files.
//!
//! Intel's perfmon repository ships, per CPU model, a metrics JSON
//! (`SKL/metrics/skylake_metrics.json`, ...): `Metrics[]`, each with its `MetricName`,
//! `Level` in the TopDown tree (`ParentCategory` names the node above), the `Events` and
//! `Constants` it needs (each with the `Alias` the formula uses), and the `Formula`
//! itself. This module reads that file ([`MetricFile::parse`]), parses every formula with
//! [`expr`] (no scripting engine), and evaluates the metrics over counts measured
//! anywhere ([`MetricFile::evaluate`]). The formulas are never retyped here.
//!
//! - [`counts`]: counts from `perf stat -x,` or `hwprof stat -j` output.
//! - [`schedule`]: the events of a set of metrics in groups that fit the counters.
//!
//! A metric whose events or constants are missing has no value: its [`MetricValue`]
//! names what is missing, so nothing is made up.

pub mod counts;
pub mod expr;
pub mod fetch;
pub mod perf_tables;
pub mod schedule;
pub mod source;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hwprof_pmu::cpu;
use serde::Deserialize;

pub use counts::Counts;
pub use expr::{EvalError, Expr, ParseError};

/// Errors of loading a metrics file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file is not a regular file, is too large, cannot be opened or read
    /// ([`hwprof_pmu::file`]).
    #[error(transparent)]
    File(#[from] hwprof_pmu::file::FileError),
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a metrics JSON.
    #[error("{path} is not an Intel TMA metrics file: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A formula is outside the supported language.
    #[error("{path}: metric {metric}: {source}")]
    Formula {
        /// The file.
        path: PathBuf,
        /// The metric.
        metric: String,
        /// Why.
        source: ParseError,
    },
    /// The perfmon folder given has no metrics file for this model.
    #[error(
        "no TopDown metrics file for {model} in {dir}: --perfmon-dir (or HWPROF_PERFMON_DIR) names {what}, which has {file}"
    )]
    NotFound {
        /// The model.
        model: String,
        /// The folder.
        dir: PathBuf,
        /// What the folder should be.
        what: &'static str,
        /// The file the model needs, inside it.
        file: String,
    },
    /// No source had the model's formulas.
    #[error("no TopDown formulas for {model}: {perf}, and {download}: {hint}")]
    NoSource {
        /// The model.
        model: String,
        /// Why perf's tables were not used.
        perf: String,
        /// Why the pinned copy could not be had.
        download: String,
        /// What to do.
        hint: String,
    },
    /// Counts that cannot be read.
    #[error("{0}")]
    Counts(String),
    /// perf's metric tables (`perf list --details` output) that cannot be used.
    #[error("{0}")]
    PerfTables(String),
    /// perf is not installed.
    #[error("perf is not installed")]
    NoPerf,
}

/// The CPU models with TopDown metrics: Intel's with a TMA metrics file in perfmon, and
/// AMD's with pipeline-utilization metrics in the kernel's `pmu-events` files. A
/// subset of pmu's [`cpu::Model`], whose names, aliases and CPUID mapping they share.
/// (Alder Lake's come from perf's tables only: see [`perf_tables`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Skylake client (perfmon `SKL`).
    Skylake,
    /// Skylake server / Cascade Lake (perfmon `SKX`).
    SkylakeX,
    /// Ice Lake client (perfmon `ICL`).
    IceLake,
    /// Sapphire Rapids (perfmon `SPR`).
    SapphireRapids,
    /// AMD Zen 4 (the kernel's `amdzen4`).
    Zen4,
    /// AMD Zen 5 (the kernel's `amdzen5`).
    Zen5,
}

impl From<Model> for cpu::Model {
    fn from(m: Model) -> cpu::Model {
        match m {
            Model::Skylake => cpu::Model::Skylake,
            Model::SkylakeX => cpu::Model::SkylakeX,
            Model::IceLake => cpu::Model::IceLake,
            Model::SapphireRapids => cpu::Model::SapphireRapids,
            Model::Zen4 => cpu::Model::Zen4,
            Model::Zen5 => cpu::Model::Zen5,
        }
    }
}

impl TryFrom<cpu::Model> for Model {
    type Error = cpu::Model;

    /// The model's TopDown model; the model itself back when it has no TopDown files.
    fn try_from(m: cpu::Model) -> Result<Model, cpu::Model> {
        Model::ALL
            .into_iter()
            .find(|&t| cpu::Model::from(t) == m)
            .ok_or(m)
    }
}

impl Model {
    /// Every model.
    pub const ALL: [Model; 6] = [
        Model::Skylake,
        Model::SkylakeX,
        Model::IceLake,
        Model::SapphireRapids,
        Model::Zen4,
        Model::Zen5,
    ];

    /// The Intel models (perfmon TMA files).
    pub const INTEL: [Model; 4] = [
        Model::Skylake,
        Model::SkylakeX,
        Model::IceLake,
        Model::SapphireRapids,
    ];

    /// From `skl`, `SKL`, `skylake`, `zen4` and the like: pmu's `--cpu` names
    /// ([`cpu::Model::from_name`]), for the models with TopDown files.
    pub fn from_name(name: &str) -> Option<Model> {
        cpu::Model::from_name(name).ok()?.try_into().ok()
    }

    /// Whether it is an AMD model (formulas in perf's language, events in the kernel's
    /// JSON).
    pub fn is_amd(self) -> bool {
        matches!(self, Model::Zen4 | Model::Zen5)
    }

    /// The perfmon folder (`SKL`), or the kernel's `pmu-events/arch/x86` folder
    /// (`amdzen4`).
    pub fn dir(self) -> &'static str {
        match self {
            Model::Skylake => "SKL",
            Model::SkylakeX => "SKX",
            Model::IceLake => "ICL",
            Model::SapphireRapids => "SPR",
            Model::Zen4 => "amdzen4",
            Model::Zen5 => "amdzen5",
        }
    }

    /// How messages name the model: perfmon's folder (`SKL`), or `zen4`.
    pub fn label(self) -> &'static str {
        if self.is_amd() {
            self.name()
        } else {
            self.dir()
        }
    }

    /// The CPU name (`skylake`), as in perfmon's file names (pmu's name of the model).
    pub fn name(self) -> &'static str {
        cpu::Model::from(self).name()
    }

    /// The metrics file inside a perfmon checkout (`SKL/metrics/skylake_metrics.json`),
    /// or inside the kernel's `tools/perf/pmu-events/arch/x86` (`amdzen4/pipeline.json`).
    pub fn metrics_file(self) -> String {
        if self.is_amd() {
            return format!("{}/pipeline.json", self.dir());
        }
        format!("{}/metrics/{}_metrics.json", self.dir(), self.name())
    }

    /// The event files whose encodings the metrics' events need, in the same tree:
    /// perfmon's `SKL/events/skylake_core.json`; the kernel's `amdzen4/core.json`,
    /// `branch.json` and `other.json` (Zen 5: none pinned; its events are in pmu's
    /// built-in table).
    pub fn event_files(self) -> Vec<String> {
        match self {
            Model::Zen4 => ["core", "branch", "other"]
                .iter()
                .map(|f| format!("amdzen4/{f}.json"))
                .collect(),
            Model::Zen5 => Vec::new(),
            _ => vec![format!("{}/events/{}_core.json", self.dir(), self.name())],
        }
    }

    /// A CPUID of the model as perf spells it (`PERF_CPUID`), for reading its tables
    /// from the installed perf when the counts come from another machine.
    pub fn perf_cpuid(self) -> &'static str {
        match self {
            Model::Skylake => "GenuineIntel-6-5E-3",
            Model::SkylakeX => "GenuineIntel-6-55-4",
            Model::IceLake => "GenuineIntel-6-7E-5",
            Model::SapphireRapids => "GenuineIntel-6-8F-4",
            Model::Zen4 => "AuthenticAMD-25-11-1",
            Model::Zen5 => "AuthenticAMD-26-2-0",
        }
    }

    /// What `--perfmon-dir` names for this model.
    pub fn tree_description(self) -> &'static str {
        if self.is_amd() {
            "the kernel's tools/perf/pmu-events/arch/x86 folder"
        } else {
            "a checkout of https://github.com/intel/perfmon"
        }
    }

    /// Whether the model has the PERF_METRICS MSR (Ice Lake and later): level 1 (and
    /// level 2 on Sapphire Rapids) from one `slots` + `topdown-*` group.
    pub fn has_perf_metrics(self) -> bool {
        matches!(self, Model::IceLake | Model::SapphireRapids)
    }

    /// The model of a `GenuineIntel-6-XX` id, through perfmon's `mapfile.csv` rows
    /// (`GenuineIntel-6-55-[01234],V1.0,/SKX/metrics/skylakex_metrics.json,metrics,...`).
    pub fn from_mapfile(mapfile: &str, family: u32, model: u32) -> Option<Model> {
        let id = format!("GenuineIntel-{family}-{model:X}");
        for line in mapfile.lines() {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() < 4 || f[3] != "metrics" {
                continue;
            }
            let key = f[0];
            let matches = key.eq_ignore_ascii_case(&id)
                || key
                    .strip_prefix(&id)
                    .is_some_and(|rest| rest.starts_with('-'));
            if matches {
                let dir = f[2].trim_start_matches('/').split('/').next()?;
                return Model::INTEL.into_iter().find(|m| m.dir() == dir);
            }
        }
        None
    }
}

/// Where to look for the model's file: `dir/SKL/metrics/skylake_metrics.json`.
pub fn find_file(perfmon_dir: &Path, model: Model) -> Result<PathBuf, Error> {
    let p = perfmon_dir.join(model.metrics_file());
    if p.is_file() || model.is_amd() {
        return if p.is_file() {
            Ok(p)
        } else {
            Err(Error::NotFound {
                model: model.label().to_string(),
                dir: perfmon_dir.to_path_buf(),
                what: model.tree_description(),
                file: model.metrics_file(),
            })
        };
    }
    // Any `*_metrics.json` of the folder (perfmon renames files now and then).
    let folder = perfmon_dir.join(model.dir()).join("metrics");
    if let Ok(rd) = std::fs::read_dir(&folder) {
        let mut found: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        found.sort();
        if let Some(p) = found.into_iter().next() {
            return Ok(p);
        }
    }
    Err(Error::NotFound {
        model: model.label().to_string(),
        dir: perfmon_dir.to_path_buf(),
        what: model.tree_description(),
        file: model.metrics_file(),
    })
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(rename = "Metrics")]
    metrics: Vec<RawMetric>,
}

#[derive(Deserialize)]
struct RawNamed {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "Alias")]
    alias: String,
}

#[derive(Deserialize)]
struct RawMetric {
    #[serde(rename = "MetricName")]
    name: String,
    #[serde(rename = "Level")]
    level: u32,
    #[serde(rename = "ParentCategory", default)]
    parent: Option<String>,
    #[serde(rename = "UnitOfMeasure", default)]
    unit: String,
    #[serde(rename = "Category", default)]
    category: String,
    #[serde(rename = "Events", default)]
    events: Vec<RawNamed>,
    #[serde(rename = "Constants", default)]
    constants: Vec<RawNamed>,
    #[serde(rename = "Formula")]
    formula: String,
}

/// One metric of the file.
#[derive(Debug, Clone)]
pub struct Metric {
    /// `MetricName` (`Backend_Bound`).
    pub name: String,
    /// `Level`.
    pub level: u32,
    /// `ParentCategory`: the TopDown node above.
    pub parent: Option<String>,
    /// `UnitOfMeasure` (`percent`, `GHz`, or empty).
    pub unit: String,
    /// `Category` (`TMA`, ...).
    pub category: String,
    /// (event name as written, alias).
    pub events: Vec<(String, String)>,
    /// (constant name, alias).
    pub constants: Vec<(String, String)>,
    /// The formula's text.
    pub formula_text: String,
    /// The parsed formula.
    pub formula: Expr,
    /// Whether it is a node of the TopDown tree (it has a parent, or is a parent).
    pub in_tree: bool,
}

impl Metric {
    /// The events (as the file names them) the formula needs with these constants:
    /// those only in a branch the constants rule out (`... if smt_on else ...`) are
    /// left out.
    pub fn needed_events(&self, consts: &Constants) -> Vec<&str> {
        let lookup = |alias: &str| -> Option<f64> {
            if self.events.iter().any(|e| e.1 == alias) {
                return None;
            }
            match self.constants.iter().find(|c| c.1 == alias) {
                Some((name, _)) => consts.get(name),
                None => consts.get(alias),
            }
        };
        self.formula
            .unbound(&lookup)
            .into_iter()
            .filter_map(|alias| self.events.iter().find(|e| e.1 == alias))
            .map(|e| e.0.as_str())
            .collect()
    }
}

/// A metrics file, parsed.
#[derive(Debug, Clone)]
pub struct MetricFile {
    /// The metrics, in file order.
    pub metrics: Vec<Metric>,
}

/// What a metric evaluates to.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricValue {
    /// `MetricName`.
    pub name: String,
    /// `Level`.
    pub level: u32,
    /// `ParentCategory`.
    pub parent: Option<String>,
    /// `UnitOfMeasure`.
    pub unit: String,
    /// The value, or None with the reasons below.
    pub value: Option<f64>,
    /// Events the formula needs that the counts do not have.
    pub missing_events: Vec<String>,
    /// Constants with no value (`SYSTEM_TSC_FREQ`: pass them with `--const`).
    pub missing_constants: Vec<String>,
    /// Another reason for no value (`division by zero`).
    pub error: Option<String>,
}

/// Values of the constants of the files.
#[derive(Debug, Clone, Default)]
pub struct Constants {
    /// SMT (hyper-threading) on: `HYPERTHREADING_ON` = 1, `THREADS_PER_CORE` = 2, perf's
    /// `#smt_on` = 1.
    pub smt: bool,
    /// Other constants by name (`SYSTEM_TSC_FREQ`, `SOCKET_COUNT`,
    /// `DURATIONTIMEINMILLISECONDS`, `CORE_WIDE` for perf's `#core_wide`, 0 when not
    /// given), upper case.
    pub named: BTreeMap<String, f64>,
}

impl Constants {
    /// The value of a constant named `name`.
    pub fn get(&self, name: &str) -> Option<f64> {
        let upper = name.to_ascii_uppercase();
        match upper.as_str() {
            "HYPERTHREADING_ON" | "SMT_ON" | "#SMT_ON" => {
                return Some(if self.smt { 1.0 } else { 0.0 });
            }
            "THREADS_PER_CORE" | "THREADS" => return Some(if self.smt { 2.0 } else { 1.0 }),
            // perf's `#core_wide`: every thread of each core counted (`perf stat -a`),
            // which `--const CORE_WIDE=1` says; counting a command or PIDs is not.
            "#CORE_WIDE" | "CORE_WIDE" => {
                return Some(self.named.get("CORE_WIDE").copied().unwrap_or(0.0));
            }
            _ => {}
        }
        if let Ok(v) = name.trim().parse::<f64>() {
            return Some(v);
        }
        if let Some(v) = self.named.get(&upper) {
            return Some(*v);
        }
        match upper.as_str() {
            "DURATIONTIMEINMILLISECONDS" => {
                self.named.get("DURATIONTIMEINSECONDS").map(|s| s * 1e3)
            }
            "DURATIONTIMEINSECONDS" => self
                .named
                .get("DURATIONTIMEINMILLISECONDS")
                .map(|ms| ms / 1e3),
            _ => None,
        }
    }
}

impl MetricFile {
    /// Reads and parses a metrics file: a regular file of at most
    /// [`source::MAX_FILE`] bytes ([`hwprof_pmu::file`]: a FIFO or device is refused).
    pub fn load(path: &Path) -> Result<MetricFile, Error> {
        Self::parse(&source::read_file(path)?, path)
    }

    /// Parses the text of a metrics file (`path` only names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<MetricFile, Error> {
        let raw: RawFile = serde_json::from_str(text).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
        let parents: Vec<String> = raw
            .metrics
            .iter()
            .filter_map(|m| m.parent.clone())
            .collect();
        let mut metrics = Vec::with_capacity(raw.metrics.len());
        for m in raw.metrics {
            let formula = expr::parse(&m.formula).map_err(|source| Error::Formula {
                path: path.to_path_buf(),
                metric: m.name.clone(),
                source,
            })?;
            let in_tree = m.parent.is_some() || parents.contains(&m.name);
            metrics.push(Metric {
                in_tree,
                name: m.name,
                level: m.level,
                parent: m.parent,
                unit: m.unit,
                category: m.category,
                events: m.events.into_iter().map(|e| (e.name, e.alias)).collect(),
                constants: m.constants.into_iter().map(|c| (c.name, c.alias)).collect(),
                formula_text: m.formula,
                formula,
            });
        }
        Ok(MetricFile { metrics })
    }

    /// The metrics of these levels: the TopDown tree's nodes, or with `all` every
    /// metric of the levels (the file also puts its `Info_*` and `Bottleneck_*` metrics
    /// at level 1).
    pub fn select(&self, levels: &[u32], all: bool) -> Vec<&Metric> {
        self.metrics
            .iter()
            .filter(|m| levels.contains(&m.level) && (all || m.in_tree))
            .collect()
    }

    /// Evaluates `metrics` over `counts` and `consts`.
    pub fn evaluate(metrics: &[&Metric], counts: &Counts, consts: &Constants) -> Vec<MetricValue> {
        metrics
            .iter()
            .map(|m| evaluate(m, counts, consts))
            .collect()
    }
}

/// Evaluates one metric.
pub fn evaluate(m: &Metric, counts: &Counts, consts: &Constants) -> MetricValue {
    let lookup = |alias: &str| -> Option<f64> {
        if let Some((name, _)) = m.events.iter().find(|e| e.1 == alias) {
            return counts.get(name);
        }
        if let Some((name, _)) = m.constants.iter().find(|c| c.1 == alias) {
            return consts.get(name);
        }
        // A name the file uses without declaring it (`DURATIONTIMEINSECONDS`).
        consts.get(alias)
    };
    let mut out = MetricValue {
        name: m.name.clone(),
        level: m.level,
        parent: m.parent.clone(),
        unit: m.unit.clone(),
        value: None,
        missing_events: Vec::new(),
        missing_constants: Vec::new(),
        error: None,
    };
    match m.formula.eval(&lookup) {
        Ok(v) if v.is_finite() => out.value = Some(v),
        Ok(v) => out.error = Some(format!("not a finite number ({v})")),
        Err(EvalError::Unbound(_)) => {
            // Name everything missing, not only the first name hit.
            for alias in m.formula.unbound(&lookup) {
                match m.events.iter().find(|e| e.1 == alias) {
                    Some((name, _)) => out.missing_events.push(name.clone()),
                    None => {
                        let name = m
                            .constants
                            .iter()
                            .find(|c| c.1 == alias)
                            .map_or(alias, |c| c.0.as_str());
                        out.missing_constants.push(name.to_string());
                    }
                }
            }
        }
        Err(e) => out.error = Some(e.to_string()),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{"Header": {}, "Metrics": [
      {"MetricName": "Frontend_Bound", "Level": 1, "UnitOfMeasure": "percent",
       "Events": [{"Name": "IDQ_UOPS_NOT_DELIVERED.CORE", "Alias": "a"},
                  {"Name": "CPU_CLK_UNHALTED.THREAD_ANY", "Alias": "b"},
                  {"Name": "CPU_CLK_UNHALTED.THREAD", "Alias": "c"}],
       "Constants": [{"Name": "HYPERTHREADING_ON", "Alias": "smt_on"}],
       "Formula": "100 * ( a / ( ( 4 ) * ( ( b / 2 ) if smt_on else ( c ) ) ) )"},
      {"MetricName": "Fetch_Latency", "Level": 2, "ParentCategory": "Frontend_Bound",
       "UnitOfMeasure": "percent", "Events": [{"Name": "X.Y:c1", "Alias": "a"}],
       "Constants": [], "Formula": "a"},
      {"MetricName": "Info_Freq", "Level": 1, "UnitOfMeasure": "GHz",
       "Events": [{"Name": "CPU_CLK_UNHALTED.THREAD", "Alias": "a"}],
       "Constants": [{"Name": "SYSTEM_TSC_FREQ", "Alias": "c"}],
       "Formula": "a * c / 1e9"}
    ]}"#;

    #[test]
    fn smt_constant_picks_the_formula_branch_and_missing_inputs_are_named() {
        let f = MetricFile::parse(FILE, Path::new("t.json")).expect("parses");
        assert_eq!(f.select(&[1, 2], false).len(), 2);
        assert_eq!(f.select(&[1], true).len(), 2);
        let counts = Counts::from_pairs([
            ("IDQ_UOPS_NOT_DELIVERED.CORE", 400.0),
            ("CPU_CLK_UNHALTED.THREAD_ANY", 200.0),
            ("CPU_CLK_UNHALTED.THREAD", 1000.0),
        ]);
        let mut c = Constants::default();
        let all = f.select(&[1, 2], true);
        let v = MetricFile::evaluate(&all, &counts, &c);
        assert_eq!(v[0].value, Some(10.0));
        assert_eq!(v[1].value, None);
        assert_eq!(v[1].missing_events, ["X.Y:c1"]);
        assert_eq!(v[2].missing_constants, ["SYSTEM_TSC_FREQ"]);
        assert_eq!(
            all[0].needed_events(&c),
            ["IDQ_UOPS_NOT_DELIVERED.CORE", "CPU_CLK_UNHALTED.THREAD"]
        );
        c.smt = true;
        assert_eq!(
            all[0].needed_events(&c),
            ["IDQ_UOPS_NOT_DELIVERED.CORE", "CPU_CLK_UNHALTED.THREAD_ANY"]
        );
        c.named.insert("SYSTEM_TSC_FREQ".into(), 2e9);
        let v = MetricFile::evaluate(&all, &counts, &c);
        assert_eq!(v[0].value, Some(100.0));
        assert_eq!(v[2].value, Some(2000.0));
    }

    #[test]
    fn model_names_and_mapfile() {
        assert_eq!(Model::from_name("SKX"), Some(Model::SkylakeX));
        assert_eq!(Model::from_name("icelake"), Some(Model::IceLake));
        assert_eq!(Model::from_name("zen4"), Some(Model::Zen4));
        assert_eq!(Model::from_name("ZEN5"), Some(Model::Zen5));
        assert_eq!(Model::from_name("zen3"), None);
        assert_eq!(Model::from_name("adl"), None);
        let map = "Family-model,Version,Filename,EventType\n\
                   GenuineIntel-6-55-[01234],V1.0,/SKX/metrics/skylakex_metrics.json,metrics,,,\n\
                   GenuineIntel-6-8F,V1.0,/SPR/events/sapphirerapids_core.json,core,,,\n\
                   GenuineIntel-6-8F,V1.0,/SPR/metrics/sapphirerapids_metrics.json,metrics,,,\n";
        assert_eq!(Model::from_mapfile(map, 6, 0x55), Some(Model::SkylakeX));
        assert_eq!(
            Model::from_mapfile(map, 6, 0x8f),
            Some(Model::SapphireRapids)
        );
        assert_eq!(Model::from_mapfile(map, 6, 0x9e), None);
    }
}
