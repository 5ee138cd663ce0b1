//! TopDown metrics in perf's metric language: the tables compiled into the installed
//! perf ([`PerfTables::from_perf`], for Alder Lake and, when this perf has them,
//! Skylake to Sapphire Rapids and AMD Zen 4/5), and the kernel's `pmu-events` metric
//! JSON files those tables are built from ([`PerfTables::from_json`]: AMD's
//! `amdzen4/pipeline.json`, `amdzen5/pipeline.json`).
//!
//! perf's `pmu-events` tables are generated from Intel's perfmon files and AMD's
//! published metrics. `perf list --details` (with `PERF_CPUID` naming the model) prints
//! them: under `Metric Groups:`,
//! each group (`TopdownL1`, `tma_frontend_bound_group`, ...) and its metrics, each as
//!
//! ```text
//!   tma_backend_bound
//!        [Description ... Unit: cpu_core ]
//!        [topdown\-be\-bound / (topdown\-fe\-bound + ...) + 0*SLOTS]
//! ```
//!
//! [`PerfTables::parse`] reads that text; [`PerfTables::metric_file`] gives the TopDown
//! tree of one unit (core type, or none on a model with one core PMU) as a
//! [`MetricFile`], the model the Intel JSON reader gives: the level is the `TopdownL<n>`
//! group (AMD: `PipelineL<n>`), the parent the metric `X` of an `X_group` the metric is
//! in (`tma_frontend_bound_group`, AMD's `frontend_bound_group`). Expressions are parsed with
//! [`expr::parse_perf`]; a name that is another metric of the same unit (`SLOTS`,
//! `tma_fetch_latency`) is replaced by that metric's expression, recursively, with a
//! cycle guard, so what is left are events (named as the expression spells them,
//! unescaped) and `#smt_on`. Nothing is retyped: every formula comes from perf's text.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde::Deserialize;

use super::expr::{self, Expr};
use super::{Error, Metric, MetricFile};

/// The most expression nodes a metric may expand to (references included).
const MAX_NODES: usize = 200_000;

/// One metric as perf prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfMetric {
    /// The metric's name (`tma_backend_bound`).
    pub name: String,
    /// The PMU it is for (`cpu_core`, `cpu_atom`), from `Unit:` in the description.
    pub unit: Option<String>,
    /// The description (without the `Unit:` part).
    pub description: String,
    /// The expression, as perf prints it.
    pub expr: String,
    /// The metric groups it is in.
    pub groups: Vec<String>,
}

impl PerfMetric {
    /// The TopDown level: `n` of a `TopdownL<n>` group (Intel) or a `PipelineL<n>`
    /// group (AMD).
    pub fn level(&self) -> Option<u32> {
        self.groups
            .iter()
            .filter_map(|g| {
                g.strip_prefix("TopdownL")
                    .or_else(|| g.strip_prefix("PipelineL"))?
                    .parse()
                    .ok()
            })
            .min()
    }
}

/// The metrics of a `perf list --details` listing.
#[derive(Debug, Clone, Default)]
pub struct PerfTables {
    /// In listing order, one per (name, unit).
    pub metrics: Vec<PerfMetric>,
}

fn perf_err(what: impl Into<String>) -> Error {
    Error::PerfTables(what.into())
}

/// Splits `desc. Unit: cpu_core ` into the description and the unit.
fn split_unit(desc: &str) -> (String, Option<String>) {
    let d = desc.trim();
    if let Some(at) = d.rfind("Unit:") {
        let unit = d[at + 5..].trim();
        if !unit.is_empty() && !unit.contains(char::is_whitespace) {
            return (d[..at].trim().to_string(), Some(unit.to_string()));
        }
    }
    (d.to_string(), None)
}

/// One metric of a kernel `pmu-events` JSON file.
#[derive(Deserialize)]
struct JsonMetric {
    #[serde(rename = "MetricName")]
    name: String,
    #[serde(rename = "MetricExpr")]
    expr: String,
    #[serde(rename = "MetricGroup", default)]
    groups: Option<String>,
    #[serde(rename = "BriefDescription", default)]
    description: Option<String>,
    #[serde(rename = "Unit", default)]
    unit: Option<String>,
}

/// The most `perf list --details` may print (a few hundred KiB today).
const MAX_LISTING_BYTES: u64 = 64 << 20;

impl PerfTables {
    /// The metrics of the kernel's `pmu-events` metric JSON files
    /// (`tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json`): arrays of objects
    /// with `MetricName`, `MetricExpr`, `MetricGroup` (`;`-separated),
    /// `BriefDescription` and, on hybrid models, `Unit`. Objects without a
    /// `MetricName` (event files) are an error naming the file.
    pub fn from_json(texts: &[(&str, &str)]) -> Result<PerfTables, Error> {
        let mut out = PerfTables::default();
        for (name, text) in texts {
            let list: Vec<JsonMetric> = serde_json::from_str(text)
                .map_err(|e| perf_err(format!("{name} is not a perf metrics JSON file: {e}")))?;
            for m in list {
                out.metrics.push(PerfMetric {
                    name: m.name,
                    unit: m.unit.filter(|u| !u.is_empty()),
                    description: m.description.unwrap_or_default(),
                    expr: m.expr,
                    groups: m
                        .groups
                        .unwrap_or_default()
                        .split(';')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(str::to_string)
                        .collect(),
                });
            }
        }
        Ok(out)
    }

    /// The tables of the installed perf for `cpuid` (`GenuineIntel-6-7E-5`):
    /// `PERF_CPUID=cpuid perf list --details`, read within 64 MiB. Errors: perf is not
    /// installed, it fails, or it prints no metric groups.
    pub fn from_perf(cpuid: &str) -> Result<PerfTables, Error> {
        let child = Command::new("perf")
            .args(["list", "--details"])
            .env("PERF_CPUID", cpuid)
            .env("PERF_PAGER", "cat")
            .env("COLUMNS", "100000")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NoPerf);
            }
            Err(e) => return Err(perf_err(format!("cannot run `perf list --details`: {e}"))),
        };
        // stderr in a thread, so that a perf filling it cannot block the reading of stdout.
        let stderr = child.stderr.take().map(|e| {
            std::thread::spawn(move || {
                let mut e = e;
                let mut err = Vec::new();
                let _ = (&mut e).take(64 << 10).read_to_end(&mut err);
                let _ = std::io::copy(&mut e, &mut std::io::sink());
                err
            })
        });
        let mut text = Vec::new();
        let read = child
            .stdout
            .take()
            .map(|o| o.take(MAX_LISTING_BYTES + 1).read_to_end(&mut text));
        if text.len() as u64 > MAX_LISTING_BYTES {
            let _ = child.kill();
        }
        let status = child
            .wait()
            .map_err(|e| perf_err(format!("waiting for `perf list --details`: {e}")))?;
        let err = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
        if let Some(Err(e)) = read {
            return Err(perf_err(format!("reading `perf list --details`: {e}")));
        }
        if text.len() as u64 > MAX_LISTING_BYTES {
            return Err(perf_err(
                "`perf list --details` printed more than 64 MiB: not a listing",
            ));
        }
        if !status.success() {
            let err = String::from_utf8_lossy(&err);
            let first = err
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("");
            return Err(perf_err(format!(
                "`perf list --details` failed ({status}): {first}"
            )));
        }
        PerfTables::parse(&String::from_utf8_lossy(&text))
    }

    /// Reads the `Metric Groups:` part of `perf list --details` output.
    pub fn parse(listing: &str) -> Result<PerfTables, Error> {
        struct Entry {
            group: String,
            name: String,
            blocks: Vec<String>,
        }
        let mut entries: Vec<Entry> = Vec::new();
        let mut in_groups = false;
        let mut group: Option<String> = None;
        for line in listing.lines() {
            if !in_groups {
                in_groups = line.trim() == "Metric Groups:";
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            if !line.starts_with(' ') {
                group = line.trim().strip_suffix(':').map(str::to_string);
                continue;
            }
            let Some(g) = &group else { continue };
            let indent = line.len() - line.trim_start().len();
            let t = line.trim();
            if indent <= 4 {
                entries.push(Entry {
                    group: g.clone(),
                    name: t.to_string(),
                    blocks: Vec::new(),
                });
            } else if let Some(e) = entries.last_mut() {
                match e.blocks.last_mut() {
                    // perf wraps long lines: a line not opening `[` continues the last.
                    Some(b) if !t.starts_with('[') => {
                        b.push(' ');
                        b.push_str(t);
                    }
                    _ => e.blocks.push(t.to_string()),
                }
            }
        }
        if !in_groups {
            return Err(perf_err(
                "perf list printed no `Metric Groups:` section: this perf has no metric tables for the model",
            ));
        }
        let mut out = PerfTables::default();
        let mut index: HashMap<(String, Option<String>), usize> = HashMap::new();
        for e in entries {
            let blocks: Vec<String> = e
                .blocks
                .iter()
                .map(|b| {
                    let b = b.trim();
                    let b = b.strip_prefix('[').unwrap_or(b);
                    b.strip_suffix(']').unwrap_or(b).trim().to_string()
                })
                .collect();
            let (desc, expr) = match blocks.as_slice() {
                [] => continue,
                [expr] => (String::new(), expr.clone()),
                [desc, .., expr] => (desc.clone(), expr.clone()),
            };
            let (description, unit) = split_unit(&desc);
            let key = (e.name.clone(), unit.clone());
            match index.get(&key) {
                Some(&i) => {
                    let m = &mut out.metrics[i];
                    if !m.groups.contains(&e.group) {
                        m.groups.push(e.group);
                    }
                }
                None => {
                    index.insert(key, out.metrics.len());
                    out.metrics.push(PerfMetric {
                        name: e.name,
                        unit,
                        description,
                        expr,
                        groups: vec![e.group],
                    });
                }
            }
        }
        Ok(out)
    }

    /// The units (PMUs) the metrics are for, in listing order.
    pub fn units(&self) -> Vec<&str> {
        let mut u: Vec<&str> = Vec::new();
        for m in &self.metrics {
            if let Some(x) = m.unit.as_deref()
                && !u.contains(&x)
            {
                u.push(x);
            }
        }
        u
    }

    /// The TopDown tree (metrics of a `TopdownL<n>` or `PipelineL<n>` group) of `unit`
    /// (`cpu_core`; None: the metrics without a unit, on models with one core PMU) as a
    /// [`MetricFile`], in tree order (each node followed by its children).
    pub fn metric_file(&self, unit: Option<&str>) -> Result<MetricFile, Error> {
        // The metrics a name refers to: those of the unit, else those with no unit.
        let mut by_name: BTreeMap<&str, &PerfMetric> = BTreeMap::new();
        for m in self.metrics.iter().filter(|m| m.unit.is_none()) {
            by_name.insert(&m.name, m);
        }
        for m in self.metrics.iter().filter(|m| m.unit.as_deref() == unit) {
            by_name.insert(&m.name, m);
        }
        let tree: Vec<&PerfMetric> = self
            .metrics
            .iter()
            .filter(|m| m.unit.as_deref() == unit && m.level().is_some())
            .collect();
        if tree.is_empty() {
            return Err(perf_err(match unit {
                Some(unit) => {
                    format!("perf's tables have no TopDown metrics (TopdownL1...) for {unit}")
                }
                None => "perf's tables have no TopDown metrics (TopdownL1... or PipelineL1...)"
                    .to_string(),
            }));
        }
        let mut x = Expander {
            by_name: &by_name,
            memo: HashMap::new(),
        };
        let mut metrics = Vec::with_capacity(tree.len());
        for m in &tree {
            let formula = x.expand(&m.name, &mut Vec::new())?;
            let names = formula.names();
            let events: Vec<(String, String)> = names
                .iter()
                .filter(|n| !n.starts_with('#'))
                .map(|n| (n.to_string(), n.to_string()))
                .collect();
            let constants: Vec<(String, String)> = names
                .iter()
                .filter(|n| n.starts_with('#'))
                .map(|n| (n.to_string(), n.to_string()))
                .collect();
            let parent = m
                .groups
                .iter()
                .filter_map(|g| g.strip_suffix("_group"))
                .find(|p| *p != m.name && tree.iter().any(|t| t.name == *p))
                .map(str::to_string);
            metrics.push(Metric {
                name: m.name.clone(),
                level: m.level().unwrap_or(0),
                parent,
                unit: String::new(),
                category: "TMA".into(),
                events,
                constants,
                formula_text: m.expr.clone(),
                formula,
                in_tree: true,
            });
        }
        // Tree order: each level-1 node then its subtree; orphans at the end.
        let mut order: Vec<usize> = Vec::with_capacity(metrics.len());
        fn visit(i: usize, ms: &[Metric], order: &mut Vec<usize>) {
            if order.contains(&i) {
                return;
            }
            order.push(i);
            for (j, c) in ms.iter().enumerate() {
                if c.parent.as_deref() == Some(ms[i].name.as_str()) {
                    visit(j, ms, order);
                }
            }
        }
        for i in 0..metrics.len() {
            if metrics[i].parent.is_none() {
                visit(i, &metrics, &mut order);
            }
        }
        for i in 0..metrics.len() {
            visit(i, &metrics, &mut order);
        }
        let mut slots: Vec<Option<Metric>> = metrics.into_iter().map(Some).collect();
        let metrics = order.into_iter().filter_map(|i| slots[i].take()).collect();
        Ok(MetricFile { metrics })
    }
}

struct Expander<'a> {
    by_name: &'a BTreeMap<&'a str, &'a PerfMetric>,
    memo: HashMap<String, Expr>,
}

impl<'a> Expander<'a> {
    fn lookup(&self, name: &str) -> Option<&'a PerfMetric> {
        if name.starts_with('#') {
            return None;
        }
        let by_name = self.by_name;
        by_name.get(name).copied().or_else(|| {
            by_name
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, m)| *m)
        })
    }

    /// The expression of metric `name` with the metrics it names replaced by theirs.
    fn expand(&mut self, name: &str, stack: &mut Vec<String>) -> Result<Expr, Error> {
        if let Some(e) = self.memo.get(name) {
            return Ok(e.clone());
        }
        let Some(m) = self.lookup(name) else {
            return Err(perf_err(format!("no metric `{name}` in perf's tables")));
        };
        if stack.iter().any(|s| s == &m.name) {
            stack.push(m.name.clone());
            return Err(perf_err(format!(
                "metric {}: its expression refers to itself ({})",
                stack[0],
                stack.join(" -> ")
            )));
        }
        let parsed = expr::parse_perf(&m.expr).map_err(|source| Error::Formula {
            path: PathBuf::from("perf list --details"),
            metric: m.name.clone(),
            source,
        })?;
        stack.push(m.name.clone());
        let out = self.substitute(parsed, stack)?;
        stack.pop();
        let mut nodes = 0usize;
        count_nodes(&out, &mut nodes);
        if nodes > MAX_NODES {
            return Err(perf_err(format!(
                "metric {}: its expression with the metrics it refers to is larger than {MAX_NODES} terms",
                m.name
            )));
        }
        self.memo.insert(name.to_string(), out.clone());
        Ok(out)
    }

    fn substitute(&mut self, e: Expr, stack: &mut Vec<String>) -> Result<Expr, Error> {
        Ok(match e {
            Expr::Var(n) if self.lookup(&n).is_some() => self.expand(&n, stack)?,
            Expr::Num(_) | Expr::Var(_) => e,
            Expr::Neg(a) => Expr::Neg(Box::new(self.substitute(*a, stack)?)),
            Expr::Not(a) => Expr::Not(Box::new(self.substitute(*a, stack)?)),
            Expr::DRatio(a, b) => Expr::DRatio(
                Box::new(self.substitute(*a, stack)?),
                Box::new(self.substitute(*b, stack)?),
            ),
            Expr::Bin(op, a, b) => Expr::Bin(
                op,
                Box::new(self.substitute(*a, stack)?),
                Box::new(self.substitute(*b, stack)?),
            ),
            Expr::If {
                cond,
                then,
                otherwise,
            } => Expr::If {
                cond: Box::new(self.substitute(*cond, stack)?),
                then: Box::new(self.substitute(*then, stack)?),
                otherwise: Box::new(self.substitute(*otherwise, stack)?),
            },
            Expr::MinMax(max, args) => Expr::MinMax(
                max,
                args.into_iter()
                    .map(|a| self.substitute(a, stack))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

fn count_nodes(e: &Expr, n: &mut usize) {
    *n += 1;
    if *n > MAX_NODES {
        return;
    }
    match e {
        Expr::Num(_) | Expr::Var(_) => {}
        Expr::Neg(a) | Expr::Not(a) => count_nodes(a, n),
        Expr::Bin(_, a, b) | Expr::DRatio(a, b) => {
            count_nodes(a, n);
            count_nodes(b, n);
        }
        Expr::If {
            cond,
            then,
            otherwise,
        } => {
            count_nodes(cond, n);
            count_nodes(then, n);
            count_nodes(otherwise, n);
        }
        Expr::MinMax(_, args) => args.iter().for_each(|a| count_nodes(a, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topdown::{Constants, Counts};

    const LISTING: &str = r"List of pre-defined events:
  cycles [Hardware event]

Metric Groups:

TopdownL1:
  tma_backend_bound
       [Backend. Unit: cpu_atom ]
       [TOPDOWN_BE_BOUND.ALL / SLOTS]
  tma_backend_bound
       [Backend [GHz]. Unit: cpu_core ]
       [topdown\-be\-bound / (topdown\-fe\-bound +
        topdown\-be\-bound) + 0*SLOTS]
  tma_frontend_bound
       [Unit: cpu_core ]
       [topdown\-fe\-bound / (topdown\-fe\-bound + topdown\-be\-bound) + 0*SLOTS]
TopdownL2:
  tma_core_bound
       [Core. Unit: cpu_core ]
       [max(0, tma_backend_bound - tma_loop) if #SMT_on else 1]
No_group:
  SLOTS
       [Unit: cpu_atom ]
       [5 * CLKS]
  SLOTS
       [Unit: cpu_core ]
       [TOPDOWN.SLOTS]
  CLKS
       [Unit: cpu_atom ]
       [CPU_CLK_UNHALTED.CORE]
  tma_loop
       [Unit: cpu_core ]
       [tma_loop2 * 2]
  tma_loop2
       [Unit: cpu_core ]
       [tma_loop / 2]
tma_backend_bound_group:
  tma_core_bound
       [Core. Unit: cpu_core ]
       [max(0, tma_backend_bound - tma_loop) if #SMT_on else 1]
";

    #[test]
    fn reads_units_levels_parents_and_expands_references() {
        let t = PerfTables::parse(LISTING).expect("parses");
        assert_eq!(t.units(), ["cpu_atom", "cpu_core"]);
        let be = &t.metrics[1];
        assert_eq!(be.unit.as_deref(), Some("cpu_core"));
        assert_eq!(be.description, "Backend [GHz].");
        assert_eq!(
            be.expr,
            "topdown\\-be\\-bound / (topdown\\-fe\\-bound + topdown\\-be\\-bound) + 0*SLOTS"
        );
        let atom = t.metric_file(Some("cpu_atom")).expect("atom");
        assert_eq!(atom.metrics.len(), 1);
        assert_eq!(
            atom.metrics[0].events,
            [
                (
                    "TOPDOWN_BE_BOUND.ALL".to_string(),
                    "TOPDOWN_BE_BOUND.ALL".to_string()
                ),
                (
                    "CPU_CLK_UNHALTED.CORE".to_string(),
                    "CPU_CLK_UNHALTED.CORE".to_string()
                )
            ]
        );
        let c = Counts::from_pairs([
            ("toPDOWN_BE_BOUND.ALL", 50.0),
            ("CPU_CLK_UNHALTED.CORE", 20.0),
        ]);
        let v = MetricFile::evaluate(&atom.select(&[1], false), &c, &Constants::default());
        assert_eq!(v[0].value, Some(0.5));
        // The core's tree: tma_core_bound refers to a cycle.
        let e = t.metric_file(Some("cpu_core")).expect_err("cycle");
        assert!(
            e.to_string()
                .contains("refers to itself (tma_core_bound -> tma_loop -> tma_loop2 -> tma_loop)"),
            "{e}"
        );
    }

    #[test]
    fn core_tree_with_smt_and_unknown_constructs() {
        let text = LISTING.replace("tma_backend_bound - tma_loop", "tma_backend_bound - 0.1");
        let t = PerfTables::parse(&text).expect("parses");
        let core = t.metric_file(Some("cpu_core")).expect("core");
        let names: Vec<(&str, u32, Option<&str>)> = core
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), m.level, m.parent.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("tma_backend_bound", 1, None),
                ("tma_core_bound", 2, Some("tma_backend_bound")),
                ("tma_frontend_bound", 1, None)
            ]
        );
        let c = Counts::from_pairs([
            ("topdown-be-bound", 30.0),
            ("topdown-fe-bound", 10.0),
            ("TOPDOWN.SLOTS", 100.0),
        ]);
        let mut k = Constants {
            smt: true,
            ..Constants::default()
        };
        let all = core.select(&[1, 2], false);
        let v = MetricFile::evaluate(&all, &c, &k);
        assert_eq!(v[0].value, Some(0.75));
        assert!((v[1].value.expect("value") - 0.65).abs() < 1e-12);
        k.smt = false;
        assert_eq!(MetricFile::evaluate(&all, &c, &k)[1].value, Some(1.0));
        let bad = LISTING.replace("[5 * CLKS]", "[source_count(CLKS)]");
        let e = PerfTables::parse(&bad)
            .expect("parses")
            .metric_file(Some("cpu_atom"))
            .expect_err("source_count");
        assert!(
            e.to_string()
                .contains("metric SLOTS: unsupported function `source_count`"),
            "{e}"
        );
        assert!(PerfTables::parse("cycles\n").is_err());
        assert!(t.metric_file(Some("cpu_x")).is_err());
    }
}
