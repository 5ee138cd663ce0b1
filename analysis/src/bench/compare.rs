//! Verdicts: which metrics changed, with what confidence, and whether that is a
//! regression.
//!
//! A metric regressed only when both hold:
//! - the difference is significant: the two-sided Mann-Whitney U test, Holm-corrected
//!   over all compared metrics, gives p < 1 − confidence (so the chance of any false
//!   verdict in one comparison stays below 1 − confidence when runs are independent);
//! - the median moved by more than the threshold (in percent, higher is worse: every
//!   metric here is a cost).
//!
//! Every metric gets its verdict; the overall verdict (and the exit code) comes from the
//! gating metrics only (`--gate`; by default task-clock, instructions and cycles, plus
//! wall-time in A/B mode). The others are evidence: a machine's load moves wall time,
//! context switches or system time between a baseline and today while the code did not
//! change.

use super::command::shell_words;
use super::doc::{Comparison, Doc, Metric, MetricChange};
use super::{Error, Result};
use crate::stats::verdict::{self, Verdict, best_p, runs_needed};

/// Verdict strings of the JSON schema ([`Verdict::as_str`]).
pub const REGRESSION: &str = Verdict::Regression.as_str();
/// A significant decrease beyond the threshold.
pub const IMPROVEMENT: &str = Verdict::Improvement.as_str();
/// Significant but within the threshold.
pub const NEGLIGIBLE: &str = Verdict::Negligible.as_str();

/// The metrics that decide the verdict against a saved baseline unless `--gate` says
/// otherwise (the ones not counted here are skipped). Wall time is evidence only there:
/// the machine's load between the two measurements moves it more than code does.
pub const DEFAULT_GATE: &str = "task-clock,instructions,cycles";

/// The default gate in A/B mode, where interleaving cancels the machine's drift.
pub const DEFAULT_GATE_AB: &str = "wall-time,task-clock,instructions,cycles";

/// How the two sides were measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Against a saved baseline file.
    Baseline,
    /// `--compare`: both commands in this run, interleaved.
    Ab,
}

/// Compares `cur` against `base`.
pub fn compare(
    base: &Doc,
    cur: &Doc,
    threshold_pct: f64,
    confidence: f64,
    mode: Mode,
    gate: &[String],
) -> Comparison {
    let mut warnings = Vec::new();
    if mode == Mode::Baseline {
        let diff = base.machine.differences(&cur.machine);
        if !diff.is_empty() {
            warnings.push(format!(
                "the baseline was measured on a different machine ({}); differences may come from the machine, not the code",
                diff.join("; ")
            ));
        }
        if base.command != cur.command {
            warnings.push(format!(
                "the baseline measured a different command: {} (this run: {})",
                shell_words(&base.command),
                shell_words(&cur.command)
            ));
        }
    }
    let pairs: Vec<(&Metric, &Metric)> = cur
        .metrics
        .iter()
        .filter(|m| m.supported)
        .filter_map(|m| {
            base.metrics
                .iter()
                .find(|b| b.name == m.name && b.supported && !b.values.is_empty())
                .map(|b| (b, m))
        })
        .collect();
    let only = |from: &Doc, other: &Doc| -> Vec<String> {
        from.metrics
            .iter()
            .filter(|m| m.supported)
            .filter(|m| {
                !other
                    .metrics
                    .iter()
                    .any(|o| o.name == m.name && o.supported)
            })
            .map(|m| m.name.clone())
            .collect()
    };
    let (base_only, cur_only) = (only(base, cur), only(cur, base));
    if !base_only.is_empty() {
        warnings.push(format!(
            "not compared (counted in the baseline only): {}",
            base_only.join(", ")
        ));
    }
    if !cur_only.is_empty() {
        warnings.push(format!(
            "not compared (not in the baseline): {}",
            cur_only.join(", ")
        ));
    }
    let alpha = 1.0 - confidence;
    if let Some((b, c)) = pairs.first() {
        let best = best_p(b.values.len(), c.values.len(), pairs.len());
        if best >= alpha {
            warnings.push(format!(
                "too few runs to find any difference: with {} and {} runs over {} metrics the smallest possible p is {:.3}, not below {alpha:.3}; use -r {} or more",
                b.values.len(),
                c.values.len(),
                pairs.len(),
                best.min(1.0),
                runs_needed(pairs.len(), alpha)
            ));
        }
    }
    let scaled: Vec<&str> = pairs
        .iter()
        .filter(|(b, c)| b.scaled || c.scaled)
        .map(|(_, c)| c.name.as_str())
        .collect();
    if !scaled.is_empty() {
        warnings.push(format!(
            "multiplexed, so estimated (scaled by time enabled/running): {}",
            scaled.join(", ")
        ));
    }
    let values: Vec<(&[f64], &[f64])> = pairs
        .iter()
        .map(|(b, c)| (b.values.as_slice(), c.values.as_slice()))
        .collect();
    let changes = verdict::changes(&values, threshold_pct, confidence);
    let metrics: Vec<MetricChange> = pairs
        .iter()
        .zip(&changes)
        .map(|((_, c), ch)| {
            let (lo, hi) = ch.change_ci;
            MetricChange {
                name: c.name.clone(),
                unit: c.unit,
                baseline_median: ch.baseline_median,
                median: ch.median,
                change_pct: ch.change_pct.is_finite().then_some(ch.change_pct),
                change_ci: (lo.is_finite() && hi.is_finite()).then_some([lo, hi]),
                p_value: ch.p_value,
                p_adjusted: ch.p_adjusted,
                verdict: ch.verdict.as_str().to_string(),
                gating: gate.contains(&c.name),
            }
        })
        .collect();
    // The overall verdict: from the gating metrics only.
    let overall = verdict::overall(
        pairs
            .iter()
            .zip(&changes)
            .filter(|((_, c), _)| gate.contains(&c.name))
            .map(|(_, ch)| ch.verdict),
    );
    Comparison {
        mode: match mode {
            Mode::Baseline => "baseline",
            Mode::Ab => "ab",
        }
        .to_string(),
        verdict: overall.as_str().to_string(),
        warnings,
        metrics,
    }
}

/// The gating metrics: `--gate` (`gate`: a comma-separated list, or `all` for every
/// metric `counted`) checked against the `metrics` measured, or the defaults that were
/// counted here ([`DEFAULT_GATE`], [`DEFAULT_GATE_AB`] when `ab`).
pub fn gate_of(
    gate: Option<&str>,
    metrics: &[String],
    counted: &[String],
    ab: bool,
) -> Result<Vec<String>> {
    let Some(list) = gate else {
        let default = if ab { DEFAULT_GATE_AB } else { DEFAULT_GATE };
        return Ok(default
            .split(',')
            .filter(|g| counted.iter().any(|m| m == g))
            .map(String::from)
            .collect());
    };
    if list.trim() == "all" {
        return Ok(counted.to_vec());
    }
    let mut out = Vec::new();
    for g in list.split(',').map(str::trim).filter(|g| !g.is_empty()) {
        if !metrics.iter().any(|m| m == g) {
            return Err(Error::NoSuchMetric {
                gate: g.to_string(),
                metrics: metrics.to_vec(),
            });
        }
        out.push(g.to_string());
    }
    if out.is_empty() {
        return Err(Error::NoGate);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::doc::{Machine, Settings, Unit};
    use super::*;

    const NO_CHANGE: &str = Verdict::NoChange.as_str();

    fn doc(metrics: Vec<(&str, Vec<f64>)>) -> Doc {
        Doc {
            schema: super::super::doc::SCHEMA.into(),
            hwprof_version: "test".into(),
            created: "2026-01-01T00:00:00Z".into(),
            name: None,
            command: vec!["cmd".into()],
            machine: Machine::default(),
            settings: Settings {
                runs: 10,
                warmup: 0,
                events: vec![],
                threshold_pct: 5.0,
                confidence: 0.99,
                gate: vec![],
            },
            metrics: metrics
                .into_iter()
                .map(|(name, values)| Metric {
                    name: name.into(),
                    unit: Unit::Ns,
                    supported: !values.is_empty(),
                    scaled: false,
                    median: None,
                    mad: None,
                    min: None,
                    max: None,
                    ci95: None,
                    values,
                })
                .collect(),
            baseline: None,
            comparison: None,
        }
    }

    fn gate() -> Vec<String> {
        vec!["wall-time".to_string()]
    }

    fn around(center: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| center * (1.0 + 0.01 * ((i * 7 % 11) as f64 - 5.0) / 5.0))
            .collect()
    }

    #[test]
    fn doubling_is_a_regression_and_noise_is_not() {
        let base = doc(vec![
            ("wall-time", around(100.0, 10)),
            ("page-faults", vec![50.0; 10]),
        ]);
        let cur = doc(vec![
            ("wall-time", around(200.0, 10)),
            ("page-faults", vec![50.0; 10]),
        ]);
        let c = compare(&base, &cur, 5.0, 0.99, Mode::Ab, &gate());
        assert_eq!(c.verdict, REGRESSION);
        assert_eq!(c.metrics[0].verdict, REGRESSION);
        // Only gating metrics decide.
        let c2 = compare(
            &base,
            &cur,
            5.0,
            0.99,
            Mode::Ab,
            &["page-faults".to_string()],
        );
        assert_eq!(c2.metrics[0].verdict, REGRESSION);
        assert!(!c2.metrics[0].gating);
        assert_eq!(c2.verdict, NO_CHANGE);
        assert_eq!(c.metrics[1].verdict, NO_CHANGE);
        let ch = c.metrics[0].change_pct.unwrap();
        assert!((ch - 100.0).abs() < 3.0, "{ch}");
        let [lo, hi] = c.metrics[0].change_ci.unwrap();
        assert!(lo < ch && ch < hi);
        // The reverse is an improvement.
        let c = compare(&cur, &base, 5.0, 0.99, Mode::Ab, &gate());
        assert_eq!(c.verdict, IMPROVEMENT);
        // Same data: nothing.
        let c = compare(&base, &base, 5.0, 0.99, Mode::Ab, &gate());
        assert_eq!(c.verdict, NO_CHANGE);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn significant_but_small_is_negligible() {
        let base = doc(vec![("wall-time", around(100.0, 30))]);
        let cur = doc(vec![("wall-time", around(103.0, 30))]);
        let c = compare(&base, &cur, 5.0, 0.99, Mode::Ab, &gate());
        assert_eq!(c.metrics[0].verdict, NEGLIGIBLE);
        assert_eq!(c.verdict, NO_CHANGE);
        let c = compare(&base, &cur, 2.0, 0.99, Mode::Ab, &gate());
        assert_eq!(c.verdict, REGRESSION);
    }

    #[test]
    fn too_few_runs_and_missing_metrics_are_warned() {
        let base = doc(vec![
            ("wall-time", around(100.0, 3)),
            ("cycles", around(5.0, 3)),
        ]);
        let cur = doc(vec![("wall-time", around(300.0, 3)), ("cycles", vec![])]);
        let c = compare(&base, &cur, 5.0, 0.99, Mode::Baseline, &gate());
        assert_eq!(
            c.verdict, NO_CHANGE,
            "3 runs can never be significant at 99%"
        );
        let w = c.warnings.join("\n");
        assert!(w.contains("too few runs") && w.contains("-r "), "{w}");
        assert!(w.contains("counted in the baseline only): cycles"), "{w}");
    }

    #[test]
    fn gates_default_to_what_was_counted_and_refuse_unknown_names() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all = names(&["wall-time", "task-clock", "cycles", "max-rss"]);
        let counted = names(&["wall-time", "task-clock", "max-rss"]);
        assert_eq!(
            gate_of(None, &all, &counted, false).unwrap(),
            ["task-clock"]
        );
        assert_eq!(
            gate_of(None, &all, &counted, true).unwrap(),
            ["wall-time", "task-clock"]
        );
        assert_eq!(
            gate_of(Some(" all "), &all, &counted, false).unwrap(),
            counted
        );
        assert_eq!(
            gate_of(Some("cycles, max-rss"), &all, &counted, false).unwrap(),
            ["cycles", "max-rss"]
        );
        assert_eq!(
            gate_of(Some("bogus"), &all, &counted, false)
                .unwrap_err()
                .to_string(),
            "--gate bogus: no such metric here (metrics: wall-time, task-clock, cycles, max-rss, or `all`)"
        );
        assert!(matches!(
            gate_of(Some(" , "), &all, &counted, false),
            Err(Error::NoGate)
        ));
    }

    /// A metric multiplexed on either side (its values estimated from time enabled /
    /// running) is named in one warning; nothing is said when neither side was.
    #[test]
    fn multiplexed_metrics_are_warned_from_either_side() {
        let mk = |scaled: [bool; 2]| {
            let mut d = doc(vec![
                ("wall-time", around(100.0, 10)),
                ("cycles", around(5.0, 10)),
                ("page-faults", around(7.0, 10)),
            ]);
            d.metrics[1].scaled = scaled[0];
            d.metrics[2].scaled = scaled[1];
            d
        };
        let warned = |base: &Doc, cur: &Doc| -> Vec<String> {
            compare(base, cur, 5.0, 0.99, Mode::Ab, &gate())
                .warnings
                .into_iter()
                .filter(|w| w.contains("multiplexed"))
                .collect()
        };
        let plain = mk([false, false]);
        assert_eq!(warned(&plain, &plain), Vec::<String>::new());
        let expected =
            ["multiplexed, so estimated (scaled by time enabled/running): cycles".to_string()];
        assert_eq!(
            warned(&mk([true, false]), &plain),
            expected,
            "baseline only"
        );
        assert_eq!(
            warned(&plain, &mk([true, false])),
            expected,
            "this run only"
        );
        assert_eq!(
            warned(&mk([true, true]), &mk([false, true])),
            ["multiplexed, so estimated (scaled by time enabled/running): cycles, page-faults"]
        );
    }

    /// Each compared metric carries the interval of its change at the confidence asked.
    #[test]
    fn change_intervals_follow_the_confidence() {
        let b: Vec<f64> = (0..20u32).map(|i| 100.0 + f64::from(i * 37 % 19)).collect();
        let c: Vec<f64> = (0..20u32).map(|i| 104.0 + f64::from(i * 23 % 17)).collect();
        let (base, cur) = (
            doc(vec![("wall-time", b.clone())]),
            doc(vec![("wall-time", c.clone())]),
        );
        for level in [0.99, 0.98] {
            let got = compare(&base, &cur, 5.0, level, Mode::Ab, &gate()).metrics[0].change_ci;
            let (lo, hi) = crate::stats::change_ci(&b, &c, level);
            assert_eq!(got, Some([lo, hi]), "{level}");
        }
    }
}
