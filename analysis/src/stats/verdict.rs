//! Verdicts: which metrics changed, with what confidence, and whether that is a
//! regression.
//!
//! A metric regressed only when both hold:
//! - the difference is significant: the two-sided Mann-Whitney U test, Holm-corrected
//!   over all compared metrics, gives p < 1 − confidence (so the chance of any false
//!   verdict in one comparison stays below 1 − confidence when runs are independent);
//! - the median moved by more than the threshold (in percent, higher is worse: every
//!   metric is a cost).
//!
//! The overall verdict comes from the gating metrics only ([`overall`]); which metrics
//! gate is the caller's choice.

use super::{change_ci, change_pct, holm, mann_whitney_p, median, min_p};

/// The verdict on one metric (or, from [`overall`], on a comparison).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A significant increase beyond the threshold.
    Regression,
    /// A significant decrease beyond the threshold.
    Improvement,
    /// Significant but within the threshold.
    Negligible,
    /// Not significant.
    NoChange,
}

impl Verdict {
    /// The name of the JSON schema: `regression`, `improvement`, `negligible`,
    /// `no_change`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Negligible => "negligible",
            Verdict::NoChange => "no_change",
        }
    }
}

/// How one metric moved from its baseline values to its new values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    /// Median of the baseline values.
    pub baseline_median: f64,
    /// Median of the new values.
    pub median: f64,
    /// `median / baseline_median - 1` in percent (+∞ from a zero baseline, see
    /// [`super::change_pct`]).
    pub change_pct: f64,
    /// Bootstrap interval of the change at the confidence asked, percent.
    pub change_ci: (f64, f64),
    /// Two-sided Mann-Whitney U p-value.
    pub p_value: f64,
    /// `p_value` after Holm's correction over the compared metrics (what the verdict
    /// uses).
    pub p_adjusted: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// The changes of metrics given as (baseline values, new values), in order: a change
/// beyond `threshold_pct` percent that is significant at `confidence` (e.g. 0.99) after
/// Holm's correction over all of them is a regression or an improvement.
pub fn changes(pairs: &[(&[f64], &[f64])], threshold_pct: f64, confidence: f64) -> Vec<Change> {
    pairs
        .iter()
        .zip(changes_without_intervals(pairs, threshold_pct, confidence))
        .map(|((b, c), ch)| Change {
            change_ci: change_ci(b, c, confidence),
            ..ch
        })
        .collect()
}

/// [`changes`] with `change_ci` left NaN: the verdicts alone, without the bootstrap.
fn changes_without_intervals(
    pairs: &[(&[f64], &[f64])],
    threshold_pct: f64,
    confidence: f64,
) -> Vec<Change> {
    let alpha = 1.0 - confidence;
    let raw: Vec<f64> = pairs.iter().map(|(b, c)| mann_whitney_p(b, c)).collect();
    let adjusted = holm(&raw);
    pairs
        .iter()
        .zip(raw.iter().zip(&adjusted))
        .map(|((b, c), (&p, &padj))| {
            let (bm, cm) = (median(b), median(c));
            let change = change_pct(bm, cm);
            let verdict = if padj >= alpha {
                Verdict::NoChange
            } else if change > threshold_pct {
                Verdict::Regression
            } else if change < -threshold_pct {
                Verdict::Improvement
            } else {
                Verdict::Negligible
            };
            Change {
                baseline_median: bm,
                median: cm,
                change_pct: change,
                change_ci: (f64::NAN, f64::NAN),
                p_value: p,
                p_adjusted: padj,
                verdict,
            }
        })
        .collect()
}

/// The verdict of a comparison from its gating metrics' verdicts: a regression if any
/// regressed, else an improvement if any improved, else no change.
pub fn overall(gating: impl IntoIterator<Item = Verdict>) -> Verdict {
    let mut improved = false;
    for v in gating {
        match v {
            Verdict::Regression => return Verdict::Regression,
            Verdict::Improvement => improved = true,
            Verdict::Negligible | Verdict::NoChange => {}
        }
    }
    if improved {
        Verdict::Improvement
    } else {
        Verdict::NoChange
    }
}

/// The smallest Holm-adjusted p-value `metrics` metrics measured `n_base` and `n_new`
/// times can reach (fully separated samples): when it is not below 1 − confidence, no
/// difference can be found.
pub fn best_p(n_base: usize, n_new: usize, metrics: usize) -> f64 {
    min_p(n_base, n_new) * metrics as f64
}

/// The fewest runs per side for which fully separated samples reach `alpha` after the
/// Holm correction over `m` metrics.
pub fn runs_needed(m: usize, alpha: f64) -> usize {
    (2..=1000)
        .find(|&n| min_p(n, n) * m as f64 * 2.0 < alpha)
        .unwrap_or(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn around(center: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| center * (1.0 + 0.01 * ((i * 7 % 11) as f64 - 5.0) / 5.0))
            .collect()
    }

    #[test]
    fn doubling_regresses_halving_improves_noise_does_not() {
        let (base, twice) = (around(100.0, 10), around(200.0, 10));
        let flat = vec![50.0; 10];
        let c = changes(&[(&base, &twice), (&flat, &flat)], 5.0, 0.99);
        assert_eq!(c[0].verdict, Verdict::Regression);
        assert_eq!(c[1].verdict, Verdict::NoChange);
        assert!((c[0].change_pct - 100.0).abs() < 3.0, "{:?}", c[0]);
        let (lo, hi) = c[0].change_ci;
        assert!(lo < c[0].change_pct && c[0].change_pct < hi);
        assert!(c[0].p_adjusted >= c[0].p_value);
        let c = changes(&[(&twice, &base)], 5.0, 0.99);
        assert_eq!(c[0].verdict, Verdict::Improvement);
    }

    #[test]
    fn significant_but_small_is_negligible() {
        let (base, cur) = (around(100.0, 30), around(103.0, 30));
        assert_eq!(
            changes(&[(&base, &cur)], 5.0, 0.99)[0].verdict,
            Verdict::Negligible
        );
        assert_eq!(
            changes(&[(&base, &cur)], 2.0, 0.99)[0].verdict,
            Verdict::Regression
        );
    }

    #[test]
    fn overall_and_run_counts() {
        use Verdict::*;
        assert_eq!(overall([NoChange, Improvement, Regression]), Regression);
        assert_eq!(overall([Negligible, Improvement]), Improvement);
        assert_eq!(overall([Negligible, NoChange]), NoChange);
        assert_eq!(overall([]), NoChange);
        assert_eq!(Regression.as_str(), "regression");
        assert_eq!(NoChange.as_str(), "no_change");
        let n = runs_needed(7, 0.01);
        assert!(min_p(n, n) * 7.0 < 0.01);
        assert!(min_p(n - 1, n - 1) * 7.0 * 2.0 >= 0.01);
        // 3 runs over 2 metrics can never reach 1%.
        assert!(best_p(3, 3, 2) >= 0.01);
    }

    /// The interval of each change is at the confidence asked, the one of the verdict.
    #[test]
    fn change_intervals_are_at_the_confidence_asked() {
        let base: Vec<f64> = (0..20u32).map(|i| 100.0 + f64::from(i * 37 % 19)).collect();
        let cur: Vec<f64> = (0..20u32).map(|i| 104.0 + f64::from(i * 23 % 17)).collect();
        for level in [0.99, 0.98, 0.95] {
            let c = changes(&[(&base, &cur)], 5.0, level);
            assert_eq!(c[0].change_ci, change_ci(&base, &cur, level), "{level}");
        }
        assert_ne!(change_ci(&base, &cur, 0.99), change_ci(&base, &cur, 0.98));
    }

    /// A/A comparisons, both sides drawn from one distribution, rarely call anything:
    /// at 99% confidence with Holm's correction over seven metrics (those of a machine
    /// without a PMU), at most 1% of the comparisons may have any significant metric.
    /// 1,000 pairs of 10 runs with 10% noise (so that the 5% threshold alone protects
    /// nothing) and 5% outlier runs, from a fixed seed: the count is always the same,
    /// and no machine's load enters it (the live A/A test of tests/bench.rs measures A/B
    /// mode, where interleaving cancels the load).
    #[test]
    fn aa_comparisons_rarely_find_a_difference() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut uniform = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut series = || -> Vec<f64> {
            (0..10)
                .map(|_| {
                    // A sum of 4 uniforms: about normal, sd 10% of the centre.
                    let z = (0..4).map(|_| uniform()).sum::<f64>() - 2.0;
                    let outlier = if uniform() < 0.05 { 1.5 } else { 1.0 };
                    17e6 * (1.0 + 0.17 * z) * outlier
                })
                .collect()
        };
        let (mut any, mut regressions) = (0, 0);
        for _ in 0..1000 {
            let sides: Vec<(Vec<f64>, Vec<f64>)> = (0..7).map(|_| (series(), series())).collect();
            let pairs: Vec<(&[f64], &[f64])> = sides
                .iter()
                .map(|(b, c)| (b.as_slice(), c.as_slice()))
                .collect();
            let c = changes_without_intervals(&pairs, 5.0, 0.99);
            any += usize::from(c.iter().any(|c| c.verdict != Verdict::NoChange));
            regressions += usize::from(c[3].verdict == Verdict::Regression);
        }
        // 6 here, where 10 are allowed (the 1% family-wise error); 10% noise and no
        // Holm correction would give about 7 times as many.
        assert!(
            any <= 10,
            "{any} of 1000 A/A comparisons found a difference"
        );
        assert!(
            regressions <= 5,
            "{regressions} of 1000 called a regression"
        );
    }
}
