//! TopDown metrics from the tables compiled into perf, for models whose Intel metrics
//! file is not in the fixtures (Alder Lake, hybrid: `cpu_core` and `cpu_atom`).
//!
//! perf's `pmu-events` tables are generated from Intel's perfmon files. `perf list
//! --details` (with `PERF_CPUID` naming the model) prints them: under `Metric Groups:`,
//! each group (`TopdownL1`, `tma_frontend_bound_group`, ...) and its metrics, each as
//!
//! ```text
//!   tma_backend_bound
//!        [Description ... Unit: cpu_core ]
//!        [topdown\-be\-bound / (topdown\-fe\-bound + ...) + 0*SLOTS]
//! ```
//!
//! [`PerfTables::parse`] reads that text; [`PerfTables::metric_file`] gives the TopDown
//! tree of one unit (core type) as a [`MetricFile`], the model the Intel JSON reader
//! gives: the level is the `TopdownL<n>` group, the parent the metric `tma_X` of a
//! `tma_X_group` the metric is in. Expressions are parsed with
//! [`expr::parse_perf`]; a name that is another metric of the same unit (`SLOTS`,
//! `tma_fetch_latency`) is replaced by that metric's expression, recursively, with a
//! cycle guard, so what is left are events (named as the expression spells them,
//! unescaped) and `#smt_on`. Nothing is retyped: every formula comes from perf's text.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

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
    /// The TopDown level: `n` of a `TopdownL<n>` group.
    pub fn level(&self) -> Option<u32> {
        self.groups
            .iter()
            .filter_map(|g| g.strip_prefix("TopdownL")?.parse().ok())
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

impl PerfTables {
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

    /// The TopDown tree (metrics of a `TopdownL<n>` group) of `unit` (`cpu_core`) as a
    /// [`MetricFile`], in tree order (each node followed by its children).
    pub fn metric_file(&self, unit: &str) -> Result<MetricFile, Error> {
        // The metrics a name refers to: those of the unit, else those with no unit.
        let mut by_name: BTreeMap<&str, &PerfMetric> = BTreeMap::new();
        for m in self.metrics.iter().filter(|m| m.unit.is_none()) {
            by_name.insert(&m.name, m);
        }
        for m in self
            .metrics
            .iter()
            .filter(|m| m.unit.as_deref() == Some(unit))
        {
            by_name.insert(&m.name, m);
        }
        let tree: Vec<&PerfMetric> = self
            .metrics
            .iter()
            .filter(|m| m.unit.as_deref() == Some(unit) && m.level().is_some())
            .collect();
        if tree.is_empty() {
            return Err(perf_err(format!(
                "perf's tables have no TopDown metrics (TopdownL1...) for {unit}"
            )));
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
                .filter(|n| **n != "#smt_on")
                .map(|n| (n.to_string(), n.to_string()))
                .collect();
            let constants: Vec<(String, String)> = names
                .iter()
                .filter(|n| **n == "#smt_on")
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
        if name == "#smt_on" {
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
        let atom = t.metric_file("cpu_atom").expect("atom");
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
        let e = t.metric_file("cpu_core").expect_err("cycle");
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
        let core = t.metric_file("cpu_core").expect("core");
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
            .metric_file("cpu_atom")
            .expect_err("source_count");
        assert!(
            e.to_string()
                .contains("metric SLOTS: unsupported function `source_count`"),
            "{e}"
        );
        assert!(PerfTables::parse("cycles\n").is_err());
        assert!(t.metric_file("cpu_x").is_err());
    }
}
