//! Student-t inference on case-level values: the t interval for one arm's mean rate and the
//! paired t test on per-case differences `d_i`, each with an optional clustered standard error
//! (statistics.md §3, §6.1; Miller, "Adding Error Bars to Evals", arXiv 2411.00640,
//! recommendations 1, 2 and 4). Works on one value per case; never on pooled trials.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{Clusters, Interval, StatsError, check_confidence, check_finite};

/// Result of a one-sample / paired t analysis of case values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PairedTResult {
    /// Number of cases `n`.
    pub n: usize,
    /// Mean of the case values (the lift `d̄` for differences), in the values' units.
    pub mean: f64,
    /// Standard error of the mean: `sd/√n`, or the cluster-adjusted SE when clusters are given.
    /// `None` when it cannot be estimated (n < 2, fewer than 2 clusters, or a clustered SE that
    /// collapses to 0 although the values differ). `Some(0.0)` only when all values are identical.
    pub standard_error: Option<f64>,
    /// Degrees of freedom: `n - 1`, or `C - 1` with clusters; 0 when undefined.
    pub df: u64,
    /// `(mean - null_mean)/SE`; `None` when the SE is `None` or 0.
    pub t_statistic: Option<f64>,
    /// `mean ± t_{df,1-α/2}·SE`; `[mean, mean]` when all values are identical; `None` with no SE.
    pub interval: Option<Interval>,
    /// Two-sided p-value of `mean = null_mean`; `None` when `t_statistic` is `None`.
    pub p_value: Option<f64>,
    /// Number of clusters `C` when a clustered SE was used.
    pub cluster_count: Option<usize>,
}

/// Clustered standard error of a mean (Miller 2024 recommendation 2; the formula of inspect_ai's
/// `stderr(cluster=)`; statistics.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClusteredStandardError {
    /// `SE_cl = √(Σ_c (Σ_{i∈c} e_i)²)/n` with residuals `e_i = v_i - v̄`.
    pub raw: f64,
    /// `SE_cl·√(C/(C-1))`, the value to use.
    pub adjusted: f64,
    /// Number of clusters `C` (≥ 2).
    pub cluster_count: usize,
    /// Degrees of freedom `C - 1` for the t quantile.
    pub df: u64,
}

/// Clustered SE of the mean of `values` (one per case) under `clusters` (statistics.md §3).
///
/// With every case its own cluster this equals `S/√n`. Returns `Ok(None)` with fewer than two
/// clusters. Errors: length mismatch, non-finite values, empty input.
pub(crate) fn clustered_standard_error(
    values: &[f64],
    clusters: &Clusters,
) -> Result<Option<ClusteredStandardError>, StatsError> {
    check_finite("values", values)?;
    clusters.check_cases(values.len())?;
    if values.is_empty() {
        return Err(StatsError::TooFewCases {
            what: "clustered standard error",
            needed: 1,
            found: 0,
        });
    }
    let count = clusters.cluster_count();
    if count < 2 {
        return Ok(None);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let mut residual_sums = vec![0.0; count];
    for (value, &cluster) in values.iter().zip(clusters.cluster_of_case()) {
        residual_sums[cluster] += value - mean;
    }
    let raw = residual_sums.iter().map(|s| s * s).sum::<f64>().sqrt() / n;
    let adjusted = raw * (count as f64 / (count as f64 - 1.0)).sqrt();
    Ok(Some(ClusteredStandardError {
        raw,
        adjusted,
        cluster_count: count,
        df: count as u64 - 1,
    }))
}

/// One-sample t analysis of case values against `null_mean` (Student 1908; statistics.md §3).
///
/// Unclustered: `SE = S/√n` (sample sd with n-1), `df = n - 1`.
/// Clustered: SE from [`clustered_standard_error`], `df = C - 1`.
/// `CI = mean ± t_{df,1-α/2}·SE`, `t = (mean - null_mean)/SE`, two-sided p from Student's t.
/// Use it for one arm's mean of case rates (D10 arm A: 0.76, CI [0.5489, 0.9711]).
///
/// Degenerate data: n = 1 → SE, interval and p are `None`, `df = 0`; all values identical →
/// `SE = 0`, interval `[mean, mean]`, t and p `None` (no variation to test against).
/// Errors: empty input, non-finite values, `confidence` outside (0, 1), cluster length mismatch.
pub(crate) fn one_sample_t(
    values: &[f64],
    null_mean: f64,
    clusters: Option<&Clusters>,
    confidence: f64,
) -> Result<PairedTResult, StatsError> {
    check_confidence(confidence)?;
    check_finite("values", values)?;
    if values.is_empty() {
        return Err(StatsError::TooFewCases {
            what: "t analysis",
            needed: 1,
            found: 0,
        });
    }
    if let Some(clusters) = clusters {
        clusters.check_cases(values.len())?;
    }
    let n = values.len();
    let all_identical = values.iter().all(|&v| v == values[0]);
    let mean = if all_identical {
        values[0]
    } else {
        values.iter().sum::<f64>() / n as f64
    };
    let mut result = PairedTResult {
        n,
        mean,
        standard_error: None,
        df: 0,
        t_statistic: None,
        interval: None,
        p_value: None,
        cluster_count: clusters.map(Clusters::cluster_count),
    };
    if n < 2 {
        return Ok(result);
    }
    let (standard_error, df) = match clusters {
        None => {
            let sum_squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
            let se = if all_identical {
                0.0
            } else {
                (sum_squares / (n as f64 - 1.0)).sqrt() / (n as f64).sqrt()
            };
            (se, n as u64 - 1)
        }
        Some(clusters) => match clustered_standard_error(values, clusters)? {
            None => return Ok(result),
            Some(clustered) => {
                let se = if all_identical {
                    0.0
                } else {
                    clustered.adjusted
                };
                (se, clustered.df)
            }
        },
    };
    result.df = df;
    if all_identical {
        result.standard_error = Some(0.0);
        result.interval = Some(Interval {
            low: mean,
            high: mean,
        });
        return Ok(result);
    }
    // Residual sums that cancel within every cluster give a clustered SE of (numerically) zero:
    // it carries no information about the spread, so report it as not estimable.
    let scale = values.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
    if standard_error <= 1e-12 * scale || standard_error.is_nan() {
        return Ok(result);
    }
    let t_distribution =
        StudentsT::new(0.0, 1.0, df as f64).expect("df ≥ 1 gives a valid Student t distribution");
    let quantile = t_distribution.inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    let t = (mean - null_mean) / standard_error;
    result.standard_error = Some(standard_error);
    result.t_statistic = Some(t);
    result.interval = Some(Interval {
        low: mean - quantile * standard_error,
        high: mean + quantile * standard_error,
    });
    result.p_value = Some((2.0 * t_distribution.sf(t.abs())).min(1.0));
    Ok(result)
}

/// Paired t test on per-case differences `d_i = r_{A,i} - r_{B,i}` against 0 (Miller 2024
/// recommendation 4; statistics.md §6.1): [`one_sample_t`] with `null_mean = 0`.
///
/// `SE(d̄) = sd(d)/√n`, `df = n - 1`; with clusters the clustered SE of §3 and `df = C - 1`.
/// D10: SE 0.097980, t 2.449490, p 0.036787, CI [0.018355, 0.461645]; with its four clusters
/// SE 0.152210, CI [-0.2444, 0.7244]. Same degenerate cases and errors as [`one_sample_t`].
pub(crate) fn paired_t(
    differences: &[f64],
    clusters: Option<&Clusters>,
    confidence: f64,
) -> Result<PairedTResult, StatsError> {
    one_sample_t(differences, 0.0, clusters, confidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data::{self, assert_close};

    /// statistics.md §6.1 and §11: paired t on D10.
    #[test]
    fn paired_t_reproduces_d10() {
        let r = paired_t(&test_data::differences(), None, 0.95).unwrap();
        assert_eq!(r.n, 10);
        assert_eq!(r.df, 9);
        assert_close(r.mean, 0.24, 1e-12);
        assert_close(r.standard_error.unwrap(), 0.097980, 1e-6);
        assert_close(r.t_statistic.unwrap(), 2.449490, 1e-6);
        assert_close(r.p_value.unwrap(), 0.036787, 1e-6);
        let interval = r.interval.unwrap();
        assert_close(interval.low, 0.018355, 1e-6);
        assert_close(interval.high, 0.461645, 1e-6);
        assert_eq!(r.cluster_count, None);
    }

    /// statistics.md §3: per-arm t intervals on D10 case means.
    #[test]
    fn arm_t_intervals_reproduce_d10() {
        let a = one_sample_t(&test_data::rates_with(), 0.0, None, 0.95).unwrap();
        assert_close(a.mean, 0.76, 1e-12);
        assert_close(a.standard_error.unwrap(), 0.093333, 1e-6);
        assert_close(a.interval.unwrap().low, 0.5489, 1e-4);
        assert_close(a.interval.unwrap().high, 0.9711, 1e-4);
        let b = one_sample_t(&test_data::rates_without(), 0.0, None, 0.95).unwrap();
        assert_close(b.mean, 0.52, 1e-12);
        assert_close(b.standard_error.unwrap(), 0.090431, 1e-6);
        assert_close(b.interval.unwrap().low, 0.3154, 1e-4);
        assert_close(b.interval.unwrap().high, 0.7246, 1e-4);
    }

    /// statistics.md §3 and §11: clustered SE of the D10 lift with four clusters.
    #[test]
    fn clustered_reproduces_d10() {
        let clusters = Clusters::from_labels(&test_data::CLUSTERS);
        let d = test_data::differences();
        let se = clustered_standard_error(&d, &clusters).unwrap().unwrap();
        assert_close(se.raw, 0.131818, 1e-6);
        assert_close(se.raw, 1.7376f64.sqrt() / 10.0, 1e-12);
        assert_close(se.adjusted, 0.152210, 1e-6);
        assert_eq!((se.cluster_count, se.df), (4, 3));
        let r = paired_t(&d, Some(&clusters), 0.95).unwrap();
        assert_eq!(r.df, 3);
        assert_eq!(r.cluster_count, Some(4));
        assert_close(r.standard_error.unwrap(), 0.152210, 1e-6);
        assert_close(r.interval.unwrap().low, -0.2444, 1e-4);
        assert_close(r.interval.unwrap().high, 0.7244, 1e-4);
        assert!(r.p_value.unwrap() > 0.05);
    }

    #[test]
    fn singleton_clusters_equal_the_unclustered_se() {
        let d = test_data::differences();
        let clustered = paired_t(&d, Some(&Clusters::singletons(10)), 0.95).unwrap();
        let plain = paired_t(&d, None, 0.95).unwrap();
        assert_close(
            clustered.standard_error.unwrap(),
            plain.standard_error.unwrap(),
            1e-12,
        );
        assert_eq!(clustered.df, plain.df);
    }

    #[test]
    fn degenerate_inputs() {
        // n = 0
        assert!(matches!(
            paired_t(&[], None, 0.95),
            Err(StatsError::TooFewCases { .. })
        ));
        // n = 1: mean only.
        let one = paired_t(&[0.4], None, 0.95).unwrap();
        assert_eq!((one.mean, one.df), (0.4, 0));
        assert_eq!(one.standard_error, None);
        assert_eq!(one.interval, None);
        assert_eq!(one.p_value, None);
        // All identical: SE exactly 0, zero-width interval, no test.
        let same = paired_t(&[0.2; 7], None, 0.95).unwrap();
        assert_eq!(same.standard_error, Some(0.0));
        assert_eq!(
            same.interval,
            Some(Interval {
                low: 0.2,
                high: 0.2
            })
        );
        assert_eq!(same.p_value, None);
        let zeros = paired_t(&[0.0; 4], Some(&Clusters::from_labels(&[1, 1, 2, 2])), 0.95).unwrap();
        assert_eq!(zeros.standard_error, Some(0.0));
        // One cluster: no clustered SE.
        let single_cluster = paired_t(
            &[0.1, 0.3, 0.5],
            Some(&Clusters::from_labels(&["x"; 3])),
            0.95,
        )
        .unwrap();
        assert_eq!(single_cluster.standard_error, None);
        assert_eq!(single_cluster.interval, None);
        // Residuals cancel inside each cluster: clustered SE collapses → reported as None, not 0.
        let cancelling = Clusters::from_labels(&[1, 1, 2, 2]);
        let r = paired_t(&[0.2, -0.2, 0.1, -0.1], Some(&cancelling), 0.95).unwrap();
        assert_eq!(r.standard_error, None);
        // Errors.
        assert!(matches!(
            paired_t(&[0.1, f64::NAN], None, 0.95),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
        assert!(matches!(
            paired_t(&[0.1, 0.2], Some(&Clusters::singletons(3)), 0.95),
            Err(StatsError::LengthMismatch { .. })
        ));
        assert_eq!(
            paired_t(&[0.1, 0.2], None, 95.0),
            Err(StatsError::InvalidConfidence(95.0))
        );
    }

    #[test]
    fn null_mean_shifts_the_test_not_the_interval() {
        let values = test_data::rates_with();
        let at_zero = one_sample_t(&values, 0.0, None, 0.95).unwrap();
        let at_mean = one_sample_t(&values, 0.76, None, 0.95).unwrap();
        assert_eq!(at_zero.interval, at_mean.interval);
        assert_close(at_mean.p_value.unwrap(), 1.0, 1e-9);
    }
}
