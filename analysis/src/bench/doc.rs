//! The JSON document of `hwprof bench` (schema `hwprof-bench/1`): what `--json` prints
//! and what `--save` writes as a baseline. A saved baseline is the same document without
//! `baseline` and `comparison`, so `hwprof bench --json -- CMD > main.json` also makes one.
//!
//! The schema is stable: fields are only ever added. docs/bench.md documents every field.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Error, Result};

/// The schema name and major version every document carries.
pub const SCHEMA: &str = "hwprof-bench/1";

/// One bench run (and optionally what it was compared with).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Doc {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The hwprof version that measured.
    pub hwprof_version: String,
    /// When the runs ended, RFC 3339 UTC.
    pub created: String,
    /// The baseline name this was saved as, or "A"/"B" in A/B mode.
    #[serde(default)]
    pub name: Option<String>,
    /// The benchmarked command, argv.
    pub command: Vec<String>,
    /// Where it ran.
    pub machine: Machine,
    /// How it was run.
    pub settings: Settings,
    /// One entry per metric, in display order.
    pub metrics: Vec<Metric>,
    /// What this run was compared with (a loaded baseline, or side A).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Box<Doc>>,
    /// The comparison with `baseline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
}

/// The machine a document was measured on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Host name.
    pub hostname: String,
    /// CPU model name (`/proc/cpuinfo` "model name").
    pub cpu: String,
    /// perf's CPUID string, e.g. `GenuineIntel-6-55-4`.
    pub cpuid: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Whether the kernel exposes a hardware CPU PMU.
    pub pmu: bool,
}

/// The settings of a bench run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Settings {
    /// Measured runs (per side in A/B mode).
    pub runs: u32,
    /// Unmeasured warm-up runs before them.
    pub warmup: u32,
    /// The counter events, one name per event (as the metrics are named). Baselines
    /// written before this held the `-e` arguments as given, comma-joined
    /// (`["task-clock,instructions,..."]`): they are read back split into events.
    #[serde(deserialize_with = "event_names")]
    pub events: Vec<String>,
    /// Regression threshold, percent.
    pub threshold_pct: f64,
    /// Confidence level of verdicts (e.g. 0.99).
    pub confidence: f64,
    /// The metrics whose verdicts decide the overall verdict and the exit code.
    #[serde(default)]
    pub gate: Vec<String>,
}

/// `settings.events` of any baseline: each entry split into its events with perf's
/// grammar (a group's members, `pmu/a=1,b=2/` kept whole); an entry that does not
/// parse is kept as it is.
fn event_names<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<String>, D::Error> {
    use hwprof_pmu::event::parse::{Item, parse_list};
    let entries = Vec::<String>::deserialize(d)?;
    let mut out = Vec::new();
    for e in entries {
        match parse_list(&e) {
            Ok(items) if !items.is_empty() => {
                for item in items {
                    match item {
                        Item::Event(ev) => out.push(ev.text),
                        Item::Group(members, _) => out.extend(members.into_iter().map(|m| m.text)),
                    }
                }
            }
            _ => out.push(e),
        }
    }
    Ok(out)
}

/// Units of a metric's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// An event count.
    Count,
    /// Kibibytes.
    Kib,
}

/// One metric over the runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Metric {
    /// `wall-time`, `user-time`, `sys-time`, `max-rss`, or the event's name.
    pub name: String,
    /// Unit of every value below.
    pub unit: Unit,
    /// Whether it could be counted here (false: perf's `<not supported>`).
    pub supported: bool,
    /// Whether some counts were scaled for multiplexing (estimates).
    #[serde(default)]
    pub scaled: bool,
    /// Per-run values, in run order (empty when not supported).
    pub values: Vec<f64>,
    /// Median of `values`.
    pub median: Option<f64>,
    /// Median absolute deviation from the median (unscaled).
    pub mad: Option<f64>,
    /// Smallest value.
    pub min: Option<f64>,
    /// Largest value.
    pub max: Option<f64>,
    /// 95% percentile-bootstrap confidence interval of the median, `[low, high]`.
    pub ci95: Option<[f64; 2]>,
}

/// A comparison of this run's metrics with a baseline's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Comparison {
    /// `baseline` (a saved file) or `ab` (`--compare`, interleaved runs).
    pub mode: String,
    /// `regression`, `improvement` or `no_change`.
    pub verdict: String,
    /// Notes on the comparison (different machine or command, too few runs...).
    pub warnings: Vec<String>,
    /// One entry per metric present on both sides.
    pub metrics: Vec<MetricChange>,
}

/// How one metric changed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MetricChange {
    /// Metric name.
    pub name: String,
    /// Unit of the medians.
    pub unit: Unit,
    /// Baseline median.
    pub baseline_median: f64,
    /// This run's median.
    pub median: f64,
    /// `median / baseline_median - 1` in percent; null when the baseline is 0 and this
    /// run is not.
    pub change_pct: Option<f64>,
    /// Bootstrap interval of the change at `confidence`, percent, `[low, high]`.
    pub change_ci: Option<[f64; 2]>,
    /// Two-sided Mann-Whitney U p-value.
    pub p_value: f64,
    /// `p_value` after Holm's correction over the compared metrics (what the verdict uses).
    pub p_adjusted: f64,
    /// `regression`, `improvement`, `negligible` (significant but within the threshold)
    /// or `no_change` (not significant).
    pub verdict: String,
    /// Whether this metric decides the overall verdict (`--gate`).
    pub gating: bool,
}

impl Machine {
    /// This machine.
    pub fn this() -> Machine {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let cpu = hwprof_pmu::cpu::CpuId::host();
        Machine {
            hostname: read("/proc/sys/kernel/hostname"),
            cpu: cpu.as_ref().map(|c| c.brand.clone()).unwrap_or_default(),
            cpuid: cpu.as_ref().map(|c| c.perf_cpuid()).unwrap_or_default(),
            cpus: hwprof_pmu::sysfs::online_cpus().len() as u32,
            kernel: read("/proc/sys/kernel/osrelease"),
            pmu: hwprof_pmu::sysfs::has_cpu_pmu(&hwprof_pmu::sysfs::pmus()),
        }
    }

    /// What differs between `self` (the baseline's machine) and `other` in ways that
    /// change timings and counts: CPU, core count, kernel, PMU.
    pub fn differences(&self, other: &Machine) -> Vec<String> {
        let mut d = Vec::new();
        if self.cpu != other.cpu || self.cpuid != other.cpuid {
            d.push(format!("CPU '{}' vs '{}'", self.cpu, other.cpu));
        }
        if self.cpus != other.cpus {
            d.push(format!("{} vs {} CPUs", self.cpus, other.cpus));
        }
        if self.kernel != other.kernel {
            d.push(format!("kernel {} vs {}", self.kernel, other.kernel));
        }
        if self.pmu != other.pmu {
            let s = |p: bool| {
                if p {
                    "a hardware PMU"
                } else {
                    "no hardware PMU"
                }
            };
            d.push(format!("{} vs {}", s(self.pmu), s(other.pmu)));
        }
        d
    }
}

/// Where baseline `name` lives: `name` itself when it looks like a path (has a `/` or
/// ends in `.json`), else `DIR/NAME.json`.
pub fn baseline_path(name: &str, dir: &Path) -> PathBuf {
    if name.contains('/') || name.ends_with(".json") {
        PathBuf::from(name)
    } else {
        dir.join(format!("{name}.json"))
    }
}

/// The largest baseline read (a baseline of 10,000 runs is about 2 MiB).
pub const MAX_BASELINE: u64 = 64 << 20;

/// Loads a baseline document. Everything wrong with it is an [`Error`] that names the
/// file and the problem: missing or unreadable, not a regular file (a directory, a FIFO
/// or a device is never read), larger than [`MAX_BASELINE`], not text, not JSON, another
/// schema, or values no measurement gives (at least one metric; every metric counted
/// has values; every value and statistic a finite number ≥ 0).
pub fn load(name: &str, dir: &Path) -> Result<Doc> {
    let path = baseline_path(name, dir);
    let bytes = match hwprof_pmu::file::read(&path, MAX_BASELINE) {
        Ok(b) => b,
        Err(e)
            if e.io_error()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound) =>
        {
            return Err(Error::NoBaseline {
                name: name.to_string(),
                path,
            });
        }
        // Not a regular file, too large, unreadable: the comparison cannot be made.
        Err(source) => {
            return Err(Error::BadBaseline {
                name: name.to_string(),
                source,
            });
        }
    };
    let not_baseline = |why: String| -> Result<Doc> {
        Err(Error::NotBaseline {
            path: path.clone(),
            why,
        })
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return not_baseline("the file is empty".to_string());
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            return not_baseline(format!(
                "not text (byte {} is not UTF-8: a binary file?)",
                e.valid_up_to()
            ));
        }
    };
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return not_baseline(format!("not JSON ({e})")),
    };
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(s) if s.starts_with("hwprof-bench/") => {
            return Err(Error::OtherSchema {
                schema: s.to_string(),
                path,
            });
        }
        _ => return not_baseline(format!("no \"schema\": \"{SCHEMA}\" field")),
    }
    let doc: Doc = match serde_json::from_value(value) {
        Ok(d) => d,
        Err(e) => return not_baseline(e.to_string()),
    };
    match check_values(&doc) {
        Ok(()) => Ok(doc),
        Err(why) => not_baseline(why),
    }
}

/// What a measurement can give: at least one metric, every metric counted here has
/// values, and every value and statistic is a finite number ≥ 0 (times, counts and
/// sizes; JSON has no NaN). Returns the first problem.
fn check_values(doc: &Doc) -> std::result::Result<(), String> {
    if doc.metrics.is_empty() {
        return Err("it has no metrics".to_string());
    }
    for m in &doc.metrics {
        if m.supported && m.values.is_empty() {
            return Err(format!(
                "metric '{}' has no values (an empty \"values\" list)",
                m.name
            ));
        }
        if let Some((i, v)) = m
            .values
            .iter()
            .enumerate()
            .find(|(_, v)| !(v.is_finite() && **v >= 0.0))
        {
            return Err(format!(
                "metric '{}' has value {v} in run {}; values are times, counts or sizes, never negative",
                m.name,
                i + 1
            ));
        }
        let stats = [
            ("median", m.median),
            ("mad", m.mad),
            ("min", m.min),
            ("max", m.max),
            ("ci95", m.ci95.map(|c| c[0])),
            ("ci95", m.ci95.map(|c| c[1])),
        ];
        if let Some((what, Some(v))) = stats
            .iter()
            .find(|(_, v)| v.is_some_and(|v| !(v.is_finite() && v >= 0.0)))
        {
            return Err(format!(
                "metric '{}' has {what} {v}, which is negative",
                m.name
            ));
        }
    }
    Ok(())
}

impl Doc {
    /// The runs its metrics hold values of (the first metric's).
    pub fn runs_measured(&self) -> usize {
        self.metrics.first().map_or(0, |m| m.values.len())
    }

    /// The bytes of `self` saved as baseline `name`: pretty JSON and a newline, without
    /// what it was compared with (`baseline`, `comparison`).
    pub fn baseline_json(&self, name: &str) -> serde_json::Result<Vec<u8>> {
        let mut d = self.clone();
        d.baseline = None;
        d.comparison = None;
        d.name = Some(name.to_string());
        let mut bytes = serde_json::to_vec_pretty(&d)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// Now as RFC 3339 UTC (`2026-11-23T09:41:07Z`).
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_415), (2025, 11, 23));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    /// Old baselines hold the `-e` arguments comma-joined; they read back as names.
    #[test]
    fn settings_events_read_old_joined_lists() {
        let old = r#"{"runs": 3, "warmup": 1, "threshold_pct": 5.0, "confidence": 0.99,
            "events": ["task-clock,instructions,cycles", "cpu/event=0x3c,umask=0x0/", "{a,b}:u", "not an event,,"]}"#;
        let s: Settings = serde_json::from_str(old).expect("old settings");
        assert_eq!(
            s.events,
            [
                "task-clock",
                "instructions",
                "cycles",
                "cpu/event=0x3c,umask=0x0/",
                "a",
                "b",
                "not an event,,"
            ]
        );
    }

    #[test]
    fn baseline_paths() {
        let dir = Path::new(".hwprof/baselines");
        assert_eq!(
            baseline_path("main", dir),
            Path::new(".hwprof/baselines/main.json")
        );
        assert_eq!(
            baseline_path("ci/main.json", dir),
            Path::new("ci/main.json")
        );
        assert_eq!(baseline_path("x.json", dir), Path::new("x.json"));
    }

    #[test]
    fn machine_differences() {
        let a = Machine {
            cpu: "Xeon".into(),
            kernel: "6.1".into(),
            pmu: true,
            cpus: 8,
            ..Machine::default()
        };
        let mut b = a.clone();
        b.hostname = "other".into();
        assert!(
            a.differences(&b).is_empty(),
            "host names alone do not matter"
        );
        b.pmu = false;
        b.kernel = "6.8".into();
        let d = a.differences(&b).join("; ");
        assert_eq!(d, "kernel 6.1 vs 6.8; a hardware PMU vs no hardware PMU");
    }
}
