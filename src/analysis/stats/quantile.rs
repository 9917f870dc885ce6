//! A distribution-free confidence interval for a quantile from order statistics (the quality
//! contract's P95 wall time, `crate::analysis::quality`).
//!
//! For `n` independent draws from a continuous distribution with `p`-quantile `ξ_p`, the number
//! of draws below `ξ_p` is `B ~ Binomial(n, p)`, so the order statistics `X_(l) ≤ X_(u)` cover
//! `ξ_p` with probability `P(l ≤ B ≤ u − 1) = F(u − 1) − F(l − 1)`, `F` the binomial CDF —
//! whatever the distribution (Conover 1999, *Practical Nonparametric Statistics*, 3rd ed.,
//! §3.2; Hahn & Meeker 1991, *Statistical Intervals*, §5.2). Each end is chosen on its own so
//! that it misses with probability at most `α/2`: `l` is the largest rank with
//! `F(l − 1) ≤ α/2`, `u` the smallest with `F(u − 1) ≥ 1 − α/2`. When no rank qualifies the end
//! is open (`None`): a 95 % interval for the 95th percentile has an upper end only from 72
//! draws on (`0.95^n ≤ 0.025`).

use statrs::distribution::{Binomial, DiscreteCDF};

/// The order-statistic interval of a quantile: its ends (values of the sample; `None` where the
/// sample is too small to bound that side) and their 1-based ranks in the sorted sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct QuantileInterval {
    /// `X_(l)`, or `None` when no rank bounds the quantile from below at this level.
    pub low: Option<f64>,
    /// `X_(u)`, or `None` when no rank bounds it from above.
    pub high: Option<f64>,
    /// `l` (1-based), when `low` is set.
    pub low_rank: Option<usize>,
    /// `u` (1-based), when `high` is set.
    pub high_rank: Option<usize>,
    /// The coverage the ranks guarantee, `F(u − 1) − F(l − 1)` with an open end counted as
    /// rank 0 or `n + 1` (at least the nominal level).
    pub coverage: f64,
}

/// The two-sided `confidence` interval of the `p` quantile of `values` (any order) from order
/// statistics (module comment). `None` for an empty sample, `p` outside (0, 1) or `confidence`
/// outside (0, 1).
pub(crate) fn quantile_interval(
    values: &[f64],
    p: f64,
    confidence: f64,
) -> Option<QuantileInterval> {
    let n = values.len();
    if n == 0 || !(p > 0.0 && p < 1.0) || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let binomial = Binomial::new(p, n as u64).ok()?;
    let tail = (1.0 - confidence) / 2.0;
    // F(r − 1) for rank r in 1..=n+1 (F(−1) = 0).
    let below = |rank: usize| {
        if rank == 0 {
            0.0
        } else {
            binomial.cdf(rank as u64 - 1)
        }
    };
    let low_rank = (1..=n).rev().find(|&l| below(l) <= tail);
    let high_rank = (1..=n).find(|&u| below(u) >= 1.0 - tail);
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let coverage = below(high_rank.unwrap_or(n + 1)) - below(low_rank.unwrap_or(0));
    Some(QuantileInterval {
        low: low_rank.map(|l| sorted[l - 1]),
        high: high_rank.map(|u| sorted[u - 1]),
        low_rank,
        high_rank,
        coverage,
    })
}

/// The `p` quantile of `values` by the nearest-rank method: the `⌈p·n⌉`-th smallest (`None`
/// when empty).
pub(crate) fn nearest_rank(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> Vec<f64> {
        // 1..=n in a scrambled order: the interval must sort.
        (1..=n).map(|i| ((i * 7) % n + 1) as f64).collect()
    }

    #[test]
    fn the_median_of_twenty_is_bounded_by_the_sixth_and_fifteenth_order_statistics() {
        // The textbook interval (Conover 1999 §3.2, table A3): n = 20, 95 %: X_(6), X_(15),
        // coverage F(14) − F(5) = 0.9793 − 0.0207 = 0.9586.
        let interval = quantile_interval(&sample(20), 0.5, 0.95).unwrap();
        assert_eq!(interval.low_rank, Some(6));
        assert_eq!(interval.high_rank, Some(15));
        assert_eq!(interval.low, Some(6.0));
        assert_eq!(interval.high, Some(15.0));
        assert!((interval.coverage - 0.958611).abs() < 1e-6, "{interval:?}");
    }

    #[test]
    fn the_p95_of_twenty_has_a_lower_end_only() {
        // F(16) = 0.0159 ≤ 0.025 < F(17) = 0.0755: l = 17; F(19) = 0.6415 < 0.975: no u.
        let interval = quantile_interval(&sample(20), 0.95, 0.95).unwrap();
        assert_eq!(interval.low_rank, Some(17));
        assert_eq!(interval.low, Some(17.0));
        assert_eq!(interval.high, None);
        assert!(interval.coverage >= 0.975);
    }

    #[test]
    fn the_p95_gets_an_upper_end_from_seventy_two_draws() {
        // 0.95^71 = 0.0262 > 0.025, 0.95^72 = 0.0249.
        assert_eq!(
            quantile_interval(&sample(71), 0.95, 0.95).unwrap().high,
            None
        );
        let interval = quantile_interval(&sample(72), 0.95, 0.95).unwrap();
        assert_eq!(interval.high_rank, Some(72));
        assert!(interval.coverage >= 0.95, "{interval:?}");
    }

    #[test]
    fn coverage_is_at_least_nominal_for_every_size() {
        for n in 1..300 {
            let interval = quantile_interval(&sample(n), 0.95, 0.95).unwrap();
            assert!(interval.coverage >= 0.95 - 1e-12, "n = {n}: {interval:?}");
            if let (Some(l), Some(u)) = (interval.low_rank, interval.high_rank) {
                assert!(l <= u, "n = {n}");
            }
        }
    }

    #[test]
    fn degenerate_inputs_give_none() {
        assert_eq!(quantile_interval(&[], 0.95, 0.95), None);
        assert_eq!(quantile_interval(&[1.0], 1.0, 0.95), None);
        assert_eq!(quantile_interval(&[1.0], 0.5, 1.0), None);
        let one = quantile_interval(&[3.0], 0.95, 0.95).unwrap();
        assert_eq!((one.low, one.high), (None, None));
        assert_eq!(nearest_rank(&[], 0.95), None);
        assert_eq!(nearest_rank(&sample(20), 0.95), Some(19.0));
    }
}
