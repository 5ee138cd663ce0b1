//! The statistics behind `hwprof bench`: robust summaries (median, MAD, min), percentile
//! bootstrap confidence intervals, the Mann-Whitney U test and Holm's correction.
//!
//! Everything is deterministic: the bootstrap draws from a fixed-seed generator, so the
//! same runs always give the same intervals (a CI log can be reproduced from its JSON).
//!
//! [`verdict`] turns these into `hwprof bench`'s verdicts: which metrics changed, with
//! what confidence, and whether that is a regression.

pub mod verdict;

/// Bootstrap resamples per interval. 10,000 keeps the 0.5% tails of a 99% interval
/// stable to about a tenth of their spread.
const RESAMPLES: usize = 10_000;

/// Largest sample size (per side) for which the exact U distribution is computed.
const EXACT_MAX: usize = 50;

/// The median of `xs` (the mean of the middle two for an even count); NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    median_in_place(&mut v)
}

fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let (_, &mut hi, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        return hi;
    }
    let lo = v[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo + hi) / 2.0
}

/// The median absolute deviation from the median (unscaled: for normal data it is
/// 0.6745 σ).
pub fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let mut dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median_in_place(&mut dev)
}

/// The smallest value; NaN when empty.
pub fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().reduce(f64::min).unwrap_or(f64::NAN)
}

/// A small deterministic generator (SplitMix64) for the bootstrap.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift (bias below 2^-32 for our sizes).
    fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
}

/// Bootstrap medians of one sample. The sample is sorted once; a resample is a count per
/// sorted position, so its median is one scan (no copy, no selection).
struct Resampler {
    sorted: Vec<f64>,
    counts: Vec<u32>,
}

impl Resampler {
    fn new(xs: &[f64]) -> Resampler {
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        Resampler {
            counts: vec![0; sorted.len()],
            sorted,
        }
    }

    /// The median of one resample (n draws with replacement); the sample is not empty.
    fn median(&mut self, rng: &mut Rng) -> f64 {
        let n = self.sorted.len();
        self.counts.fill(0);
        for _ in 0..n {
            self.counts[rng.below(n)] += 1;
        }
        // 1-based ranks of the middle pair (the same rank twice when n is odd).
        let (lo_rank, hi_rank) = (n.div_ceil(2), n / 2 + 1);
        let mut seen = 0usize;
        let mut lo = None;
        for (&x, &c) in self.sorted.iter().zip(&self.counts) {
            seen += c as usize;
            if lo.is_none() && seen >= lo_rank {
                lo = Some(x);
            }
            if seen >= hi_rank {
                return (lo.unwrap_or(x) + x) / 2.0;
            }
        }
        self.sorted[n - 1]
    }
}

/// The `level` percentile interval of sorted bootstrap statistics.
fn percentile_interval(mut stats: Vec<f64>, level: f64) -> (f64, f64) {
    stats.sort_by(f64::total_cmp);
    let (lo, hi) = percentile_ranks(stats.len(), level);
    (stats[lo], stats[hi])
}

/// The 0-based ranks, among `n` sorted statistics (n > 0), of the ends of the central
/// `level` interval: `(n - 1) q` rounded, for q = (1 - level) / 2 and 1 - q.
fn percentile_ranks(n: usize, level: f64) -> (usize, usize) {
    let tail = (1.0 - level) / 2.0;
    let at = |q: f64| (((n as f64 - 1.0) * q).round() as usize).min(n - 1);
    (at(tail), at(1.0 - tail))
}

/// A percentile-bootstrap confidence interval for the median of `xs`, at `level`
/// (e.g. 0.95). `(NaN, NaN)` when `xs` is empty.
pub fn median_ci(xs: &[f64], level: f64) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = Rng::new(0x6877_7072_6f66_0001);
    let mut r = Resampler::new(xs);
    let stats = (0..RESAMPLES).map(|_| r.median(&mut rng)).collect();
    percentile_interval(stats, level)
}

/// The relative change of `new` against `base` in percent: `new / base - 1`. Zero when
/// both are zero, +∞ when only the base is zero.
pub fn change_pct(base: f64, new: f64) -> f64 {
    if base == 0.0 {
        return if new == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (new / base - 1.0) * 100.0
}

/// A percentile-bootstrap interval, at `level`, for the change of the median from `base`
/// to `new` in percent (each side resampled independently).
pub fn change_ci(base: &[f64], new: &[f64], level: f64) -> (f64, f64) {
    if base.is_empty() || new.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = Rng::new(0x6877_7072_6f66_0002);
    let (mut ra, mut rb) = (Resampler::new(base), Resampler::new(new));
    let stats = (0..RESAMPLES)
        .map(|_| {
            let a = ra.median(&mut rng);
            let b = rb.median(&mut rng);
            change_pct(a, b)
        })
        .collect();
    percentile_interval(stats, level)
}

/// Two-sided p-value of the Mann-Whitney U test (Wilcoxon rank-sum) that `a` and `b` come
/// from the same distribution.
///
/// Exact (the permutation distribution of U) when both samples have at most 50 values
/// and no ties; otherwise the normal approximation with the tie correction and a
/// continuity correction. 1.0 when either side is empty or all values are equal.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // Midranks over the pooled sample.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = pooled.len();
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0; // Σ (t³ - t) over tie groups
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        let midrank = (i + j + 1) as f64 / 2.0; // ranks i+1 ..= j
        rank_sum_a += midrank * pooled[i..j].iter().filter(|p| p.1).count() as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    let u1 = rank_sum_a - (n1 * (n1 + 1)) as f64 / 2.0;
    if tie_term == 0.0 && n1 <= EXACT_MAX && n2 <= EXACT_MAX {
        return exact_p(n1, n2, u1.round() as usize);
    }
    normal_p(u1, n1, n2, tie_term)
}

/// The normal approximation of the two-sided p-value of U statistic `u1`, with the tie
/// correction (`tie_term` = Σ (t³ − t) over groups of t equal values) and a continuity
/// correction.
fn normal_p(u1: f64, n1: usize, n2: usize, tie_term: f64) -> f64 {
    let (f1, f2) = (n1 as f64, n2 as f64);
    let mean = f1 * f2 / 2.0;
    let nf = f1 + f2;
    let var = f1 * f2 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let d = (u1 - mean).abs() - 0.5;
    let z = d.max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// Exact two-sided p-value: 2·P(U ≤ min(u, n1·n2 − u)) under the null, counting the
/// arrangements of the two samples by dynamic programming (counts as f64: C(100, 50)
/// ≈ 1e29 fits with relative error ~1e-16).
fn exact_p(n1: usize, n2: usize, u: usize) -> f64 {
    let max_u = n1 * n2;
    let u = u.min(max_u);
    let u = u.min(max_u - u);
    // ways[j][k]: arrangements of j values of the first sample and the current i values
    // of the second with U = k. Built up over i (values of the second sample).
    // Recurrence: f(i, j, k) = f(i-1, j, k - j) + f(i, j-1, k)  (largest value from b / a).
    let mut prev: Vec<Vec<f64>> = (0..=n1).map(|_| vec![0.0; max_u + 1]).collect();
    for row in prev.iter_mut() {
        row[0] = 1.0; // i = 0: one arrangement, U = 0
    }
    for _i in 1..=n2 {
        let mut cur: Vec<Vec<f64>> = (0..=n1).map(|_| vec![0.0; max_u + 1]).collect();
        cur[0][0] = 1.0;
        for j in 1..=n1 {
            for k in 0..=max_u {
                let from_b = if k >= j { prev[j][k - j] } else { 0.0 };
                cur[j][k] = from_b + cur[j - 1][k];
            }
        }
        prev = cur;
    }
    let dist = &prev[n1];
    let total: f64 = dist.iter().sum();
    let tail: f64 = dist[..=u].iter().sum();
    (2.0 * tail / total).min(1.0)
}

/// The smallest two-sided p-value the exact test can give for these sample sizes
/// (both samples fully separated): 2 / C(n1 + n2, n1).
pub fn min_p(n1: usize, n2: usize) -> f64 {
    let mut c = 1.0f64;
    for k in 0..n1 {
        c = c * (n2 + k + 1) as f64 / (k + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// Upper tail of the standard normal distribution, P(Z > z).
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function (W. J. Cody's rational Chebyshev approximation via
/// the Numerical Recipes `erfcc` form; relative error below 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Holm's step-down adjustment of p-values for testing several metrics at once: the
/// chance of any false positive among them stays at most α when each adjusted p is
/// compared with α.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| ps[i].total_cmp(&ps[j]));
    let mut out = vec![1.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        let adj = ((m - rank) as f64 * ps[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn median_mad_min() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        // deviations from 3: 2,1,0,1,97 -> median 1
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), 1.0);
        assert_eq!(min(&[5.0, 2.0, 9.0]), 2.0);
    }

    #[test]
    fn exact_mann_whitney_matches_tables() {
        // Fully separated 5 vs 5: p = 2 / C(10,5) = 2/252.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert!(close(mann_whitney_p(&a, &b), 2.0 / 252.0, 1e-12));
        assert!(close(min_p(5, 5), 2.0 / 252.0, 1e-12));
        // U = 1: 4 of the 252 arrangements are as extreme (U ≤ 1 or U ≥ 24), p = 4/252.
        let a = [1.0, 2.0, 3.0, 4.0, 6.0];
        let b = [5.0, 7.0, 8.0, 9.0, 10.0];
        assert!(close(mann_whitney_p(&a, &b), 4.0 / 252.0, 1e-12));
        // Interleaved samples: no evidence.
        let a = [1.0, 3.0, 5.0, 7.0, 9.0];
        let b = [2.0, 4.0, 6.0, 8.0, 10.0];
        assert!(mann_whitney_p(&a, &b) > 0.5);
        // Symmetric in its arguments.
        assert_eq!(mann_whitney_p(&a, &b), mann_whitney_p(&b, &a));
    }

    #[test]
    fn normal_approximation_with_ties() {
        // All equal: no evidence at all.
        assert_eq!(mann_whitney_p(&[1.0; 8], &[1.0; 8]), 1.0);
        // By hand: U = 1, mean 18, tie term 48, σ² = 3·(13 − 48/132), z = 16.5/σ = 2.6799,
        // p = erfc(z/√2) = 0.0073653.
        let p = mann_whitney_p(
            &[1.0, 1.0, 2.0, 2.0, 3.0, 3.0],
            &[3.0, 4.0, 4.0, 5.0, 5.0, 6.0],
        );
        assert!(close(p, 0.007_365_3, 1e-6), "{p}");
        // Large separated samples go to the normal branch and are tiny.
        let a: Vec<f64> = (0..60).map(f64::from).collect();
        let b: Vec<f64> = (100..160).map(f64::from).collect();
        assert!(mann_whitney_p(&a, &b) < 1e-15);
    }

    #[test]
    fn exact_and_normal_agree_for_large_samples() {
        // 40 vs 40, shifted: both methods should give about the same p.
        let a: Vec<f64> = (0..40).map(|i| f64::from(i) * 1.0).collect();
        let b: Vec<f64> = (0..40).map(|i| f64::from(i) * 1.0 + 7.5).collect();
        let exact = mann_whitney_p(&a, &b);
        let approx = normal_p(528.0, 40, 40, 0.0);
        // U = 528 of 1600; the normal approximation (by hand) gives 0.008988.
        assert!(close(approx, 0.008_988, 1e-5), "{approx}");
        assert!(exact > 0.007 && exact < 0.01, "{exact}");
        assert!((exact / approx).ln().abs() < 0.1, "{exact} vs {approx}");
    }

    #[test]
    fn erfc_is_accurate() {
        assert!(close(erfc(0.0), 1.0, 1e-7));
        assert!(close(erfc(1.0), 0.157_299_207, 1e-7));
        assert!(close(erfc(-1.0), 1.842_700_793, 1e-7));
        assert!(close(2.0 * normal_sf(1.959_964), 0.05, 1e-6));
    }

    #[test]
    fn holm_adjustment() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.5]);
        assert!(close(adj[0], 0.04, 1e-12)); // 4 * 0.01
        assert!(close(adj[2], 0.09, 1e-12)); // 3 * 0.03
        assert!(close(adj[1], 0.09, 1e-12)); // max(2 * 0.04, 0.09)
        assert!(close(adj[3], 0.5, 1e-12));
    }

    #[test]
    fn bootstrap_intervals_cover_the_truth() {
        let xs: Vec<f64> = (0..30).map(|i| 100.0 + f64::from(i % 7)).collect();
        let (lo, hi) = median_ci(&xs, 0.95);
        let m = median(&xs);
        assert!(lo <= m && m <= hi, "{lo} {m} {hi}");
        let ys: Vec<f64> = xs.iter().map(|x| x * 2.0).collect();
        let (clo, chi) = change_ci(&xs, &ys, 0.99);
        assert!(clo <= 100.0 && 100.0 <= chi, "{clo} {chi}");
        assert!(clo > 80.0 && chi < 120.0, "{clo} {chi}");
        // Deterministic.
        assert_eq!(change_ci(&xs, &ys, 0.99), (clo, chi));
    }

    #[test]
    fn resampled_medians_are_medians_of_resamples() {
        // Against the direct method: draw the same indices, copy, take the median.
        for n in [1usize, 2, 5, 6, 31] {
            let xs: Vec<f64> = (0..n)
                .map(|i| ((i * 37) % 11) as f64 + i as f64 / 100.0)
                .collect();
            let mut sorted = xs.clone();
            sorted.sort_by(f64::total_cmp);
            let mut r = Resampler::new(&xs);
            let (mut a, mut b) = (Rng::new(7), Rng::new(7));
            for _ in 0..200 {
                let fast = r.median(&mut a);
                let draw: Vec<f64> = (0..n).map(|_| sorted[b.below(n)]).collect();
                assert_eq!(fast, median(&draw), "n = {n}");
            }
        }
    }

    /// The ends of the interval among the 10,000 bootstrap statistics, worked out by
    /// hand from round((n - 1) q): each level has its own ranks, so a 99% interval
    /// computed as 98% (or 95%, or one rank off) is a different pair.
    #[test]
    fn percentile_ranks_of_the_usual_levels() {
        assert_eq!(RESAMPLES, 10_000);
        // 9999 × 0.005 = 49.995, 9999 × 0.995 = 9949.005
        assert_eq!(percentile_ranks(10_000, 0.99), (50, 9949));
        // 9999 × 0.01 = 99.99, 9999 × 0.99 = 9899.01
        assert_eq!(percentile_ranks(10_000, 0.98), (100, 9899));
        // 9999 × 0.025 = 249.975, 9999 × 0.975 = 9749.025
        assert_eq!(percentile_ranks(10_000, 0.95), (250, 9749));
        // 9999 × 0.05 = 499.95, 9999 × 0.95 = 9499.05
        assert_eq!(percentile_ranks(10_000, 0.90), (500, 9499));
        // Small counts: the whole range at 100%, the middle at 0%.
        assert_eq!(percentile_ranks(5, 1.0), (0, 4));
        assert_eq!(percentile_ranks(5, 0.0), (2, 2));
        assert_eq!(percentile_ranks(1, 0.99), (0, 0));
        // 200 × 0.05 = 10, 200 × 0.95 = 190
        assert_eq!(percentile_ranks(201, 0.90), (10, 190));
    }

    /// A sample with many distinct values, so that neighbouring ranks of the bootstrap
    /// distribution of its median are distinct values too.
    fn spread(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|_| 100.0 + (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 20.0)
            .collect()
    }

    /// The median by sorting a copy: the reference, independent of `median`.
    fn sorted_median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    /// A reference percentile bootstrap with the same seed and draws: 10,000 medians of
    /// resamples (copied and sorted), sorted, read at the ranks given by hand.
    fn reference_ci(xs: &[f64], seed: u64, ranks: (usize, usize)) -> (f64, f64) {
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mut rng = Rng::new(seed);
        let mut stats: Vec<f64> = (0..10_000)
            .map(|_| sorted_median((0..n).map(|_| sorted[rng.below(n)]).collect()))
            .collect();
        stats.sort_by(f64::total_cmp);
        (stats[ranks.0], stats[ranks.1])
    }

    #[test]
    fn median_ci_is_the_reference_bootstrap_at_each_level() {
        const SEED: u64 = 0x6877_7072_6f66_0001;
        for n in [40usize, 41] {
            let xs = spread(n, n as u64);
            let ci99 = median_ci(&xs, 0.99);
            let ci98 = median_ci(&xs, 0.98);
            let ci95 = median_ci(&xs, 0.95);
            assert_eq!(ci99, reference_ci(&xs, SEED, (50, 9949)), "n = {n}");
            assert_eq!(ci98, reference_ci(&xs, SEED, (100, 9899)), "n = {n}");
            assert_eq!(ci95, reference_ci(&xs, SEED, (250, 9749)), "n = {n}");
            // Wider at a higher level, strictly for this sample.
            assert!(ci99.0 < ci98.0 && ci98.1 < ci99.1, "{ci99:?} {ci98:?}");
            assert!(ci98.0 < ci95.0 && ci95.1 < ci98.1, "{ci98:?} {ci95:?}");
        }
    }

    #[test]
    fn change_ci_is_the_reference_bootstrap_at_each_level() {
        let (base, new) = (spread(30, 1), spread(31, 2));
        // The reference: per resample, a median of each side (base first) from one
        // generator, their relative change in percent.
        let reference = |ranks: (usize, usize)| {
            let sort = |v: &[f64]| {
                let mut s = v.to_vec();
                s.sort_by(f64::total_cmp);
                s
            };
            let (sb, sn) = (sort(&base), sort(&new));
            let mut rng = Rng::new(0x6877_7072_6f66_0002);
            let mut stats: Vec<f64> = (0..10_000)
                .map(|_| {
                    let b = sorted_median((0..sb.len()).map(|_| sb[rng.below(sb.len())]).collect());
                    let c = sorted_median((0..sn.len()).map(|_| sn[rng.below(sn.len())]).collect());
                    (c / b - 1.0) * 100.0
                })
                .collect();
            stats.sort_by(f64::total_cmp);
            (stats[ranks.0], stats[ranks.1])
        };
        let ci99 = change_ci(&base, &new, 0.99);
        let ci98 = change_ci(&base, &new, 0.98);
        assert_eq!(ci99, reference((50, 9949)));
        assert_eq!(ci98, reference((100, 9899)));
        assert!(ci99.0 < ci98.0 && ci98.1 < ci99.1, "{ci99:?} {ci98:?}");
    }

    #[test]
    fn change_handles_zero_bases() {
        assert_eq!(change_pct(0.0, 0.0), 0.0);
        assert!(change_pct(0.0, 3.0).is_infinite());
        assert!(close(change_pct(10.0, 11.0), 10.0, 1e-9));
    }
}
