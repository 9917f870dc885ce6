//! Confidence intervals for one proportion (K = 1 arm rates, or one case's trial counts):
//! Wilson score and Clopper–Pearson exact (statistics.md §4), and the effective-count Wilson
//! interval for a mean of case rates when K > 1 or cases are clustered (§6.4). Plain Wilson must
//! not be applied to trials pooled across cases when K > 1 (§1): pass case-level counts only,
//! or use [`effective_count_wilson_interval`].

use serde::{Deserialize, Serialize};
#[cfg(test)]
use statrs::distribution::Beta;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{
    Clusters, Interval, StatsError, check_confidence, check_unit_interval,
    mean_t::clustered_standard_error, two_sided_normal_quantile,
};

/// The Wilson score interval for a rate `p` observed on `n` (possibly fractional, effective)
/// trials with quantile `z`; bounds clamped to `[0, 1]`.
fn wilson_score(p: f64, n: f64, z: f64) -> Interval {
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half_width = z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).max(0.0).sqrt();
    Interval {
        low: if p <= 0.0 {
            0.0
        } else {
            (centre - half_width).max(0.0)
        },
        high: if p >= 1.0 {
            1.0
        } else {
            (centre + half_width).min(1.0)
        },
    }
}

/// Effective-count Wilson interval of one arm's mean of case rates (statistics.md §6.4).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct EffectiveCountWilson {
    /// The interval.
    pub interval: Interval,
    /// Mean of the case rates `p̂`.
    pub rate: f64,
    /// Effective number of independent trials `n_eff = T/deff`.
    pub effective_trials: f64,
    /// Design effect `deff = max(1, V̂·T/(p̂(1-p̂)))`, `V̂` the (clustered) variance of `p̂`;
    /// 1 when `p̂` is 0 or 1 or the case rates do not vary (no evidence of clustering).
    pub design_effect: f64,
    /// Degrees of freedom of the t quantile used in place of z: `n - 1`, or `C - 1` clustered.
    pub df: u64,
}

/// Wilson interval for the mean `p̂` of case rates with unequal information (K attempts per
/// case, or clustered cases), on an effective count (Kish's design effect; the Korn & Graubard
/// 1998 adaptation of binomial intervals to complex samples; statistics.md §6.4):
///
/// `V̂ = S²/n` (or the clustered `SE²` of §3), `T = Σ trials`,
/// `deff = max(1, V̂·T/(p̂(1-p̂)))`, `n_eff = T/deff`, and the Wilson score interval of `p̂`
/// on `n_eff` trials with `t_{df,1-α/2}` in place of z (`df = n - 1`, or `C - 1`).
/// A rate of exactly 0 or 1 keeps `deff = 1` and a positive width: never a zero-width interval.
///
/// `case_rates[i]` is case i's pass rate in `[0, 1]`, `trials` the scored attempts behind all
/// of them together. Errors: no cases, `trials < n`, values outside `[0, 1]`, bad confidence,
/// cluster length mismatch.
pub(crate) fn effective_count_wilson_interval(
    case_rates: &[f64],
    trials: u64,
    clusters: Option<&Clusters>,
    confidence: f64,
) -> Result<EffectiveCountWilson, StatsError> {
    check_confidence(confidence)?;
    check_unit_interval("case_rates", case_rates)?;
    let n = case_rates.len();
    if n == 0 || (trials as usize) < n {
        return Err(StatsError::TooFewCases {
            what: "effective-count Wilson interval",
            needed: n.max(1),
            found: (trials as usize).min(n),
        });
    }
    let rate = case_rates.iter().sum::<f64>() / n as f64;
    let (variance, df) = match clusters {
        Some(clusters) => {
            clusters.check_cases(n)?;
            match clustered_standard_error(case_rates, clusters)? {
                Some(se) => (Some(se.adjusted * se.adjusted), se.df),
                None => (None, 0),
            }
        }
        None if n >= 2 => {
            let sum_squares: f64 = case_rates.iter().map(|r| (r - rate) * (r - rate)).sum();
            (
                Some(sum_squares / (n as f64 - 1.0) / n as f64),
                n as u64 - 1,
            )
        }
        None => (None, 0),
    };
    let total = trials as f64;
    let binomial = rate * (1.0 - rate);
    let design_effect = match variance {
        Some(v) if binomial > 0.0 && v > 0.0 => (v * total / binomial).max(1.0),
        _ => 1.0,
    };
    let quantile = if df >= 1 {
        StudentsT::new(0.0, 1.0, df as f64)
            .map_err(|_| StatsError::InvalidConfidence(confidence))?
            .inverse_cdf(1.0 - (1.0 - confidence) / 2.0)
    } else {
        check_confidence(confidence)?
    };
    let effective_trials = total / design_effect;
    Ok(EffectiveCountWilson {
        interval: wilson_score(rate, effective_trials, quantile),
        rate,
        effective_trials,
        design_effect,
        df,
    })
}

/// Wilson score interval for `successes` out of `trials` (Wilson 1927; statistics.md §4).
///
/// With `p = k/n` and `z = z_{1-α/2}`:
/// centre `= (p + z²/(2n)) / (1 + z²/n)`,
/// half-width `= z/(1 + z²/n) · √(p(1-p)/n + z²/(4n²))`.
/// Bounds lie in `[0, 1]` (clamped against rounding; exactly 0 at `k = 0` and 1 at `k = n`).
///
/// `confidence` is the two-sided level in `(0, 1)`, e.g. 0.95.
/// Returns `None` when `trials = 0`, `successes > trials`, or `confidence` is outside `(0, 1)`.
pub(crate) fn wilson_interval(successes: u64, trials: u64, confidence: f64) -> Option<Interval> {
    if trials == 0 || successes > trials {
        return None;
    }
    let z = two_sided_normal_quantile(confidence)?;
    let n = trials as f64;
    Some(wilson_score(successes as f64 / n, n, z))
}

/// The exact (Garwood 1936) two-sided interval of a Poisson mean from one observed count:
/// `low = χ²(α/2; 2k) / 2` (0 when `k = 0`), `high = χ²(1 − α/2; 2k + 2) / 2`, with `χ²(q; ν)`
/// the chi-square quantile. In the units of the count (events per observation window);
/// conservative: coverage ≥ the nominal level. Used for a task's frequency in session history.
///
/// Returns `None` when `confidence` is outside `(0, 1)`.
pub(crate) fn poisson_interval(count: u64, confidence: f64) -> Option<Interval> {
    use statrs::distribution::ChiSquared;
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let alpha = 1.0 - confidence;
    let k = count as f64;
    let low = if count == 0 {
        0.0
    } else {
        ChiSquared::new(2.0 * k).ok()?.inverse_cdf(alpha / 2.0) / 2.0
    };
    let high = ChiSquared::new(2.0 * k + 2.0)
        .ok()?
        .inverse_cdf(1.0 - alpha / 2.0)
        / 2.0;
    Some(Interval { low, high })
}

/// Clopper–Pearson "exact" interval (Clopper & Pearson 1934; statistics.md §4).
///
/// `low = B⁻¹(α/2; k, n-k+1)` (0 when `k = 0`), `high = B⁻¹(1-α/2; k+1, n-k)` (1 when `k = n`),
/// with `B⁻¹` the Beta quantile. Conservative: coverage ≥ the nominal level.
///
/// Returns `None` when `trials = 0`, `successes > trials`, or `confidence` is outside `(0, 1)`.
#[cfg(test)]
pub(crate) fn clopper_pearson_interval(
    successes: u64,
    trials: u64,
    confidence: f64,
) -> Option<Interval> {
    if trials == 0 || successes > trials || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let alpha = 1.0 - confidence;
    let k = successes as f64;
    let n = trials as f64;
    let low = if successes == 0 {
        0.0
    } else {
        Beta::new(k, n - k + 1.0).ok()?.inverse_cdf(alpha / 2.0)
    };
    let high = if successes == trials {
        1.0
    } else {
        Beta::new(k + 1.0, n - k)
            .ok()?
            .inverse_cdf(1.0 - alpha / 2.0)
    };
    Some(Interval { low, high })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data::assert_close;

    const TOL: f64 = 1e-6;

    /// Garwood's exact Poisson interval: the published 95% bounds for 0 and 10 events
    /// (0–3.689 and 4.795–18.390; e.g. Ulm 1990, Table 1), and a refused level.
    #[test]
    fn poisson_interval_reproduces_published_bounds() {
        let zero = poisson_interval(0, 0.95).unwrap();
        assert_eq!(zero.low, 0.0);
        assert!((zero.high - 3.6889).abs() < 1e-3, "{zero:?}");
        let ten = poisson_interval(10, 0.95).unwrap();
        assert!((ten.low - 4.7954).abs() < 1e-3, "{ten:?}");
        assert!((ten.high - 18.3904).abs() < 1e-3, "{ten:?}");
        assert!(poisson_interval(3, 1.0).is_none());
    }

    /// The inputs (successes, trials) of statistics.md §4 table and §11.
    const TABLE: [(u64, u64); 5] = [(17, 20), (5, 5), (0, 30), (18, 30), (12, 30)];

    /// `method`'s 95% interval of each [`TABLE`] input against the reference's `(low, high)`;
    /// a failure names the input.
    fn check_table(method: fn(u64, u64, f64) -> Option<Interval>, expected: [(f64, f64); 5]) {
        for ((successes, trials), (low, high)) in TABLE.into_iter().zip(expected) {
            let interval = method(successes, trials, 0.95)
                .unwrap_or_else(|| panic!("{successes}/{trials}: no interval"));
            assert!(
                (interval.low - low).abs() <= TOL && (interval.high - high).abs() <= TOL,
                "{successes}/{trials}: got {interval:?}, expected [{low}, {high}] ± {TOL}"
            );
        }
    }

    /// statistics.md §4 table and §11: Wilson 17/20, 5/5, 0/30, 18/30, 12/30.
    #[test]
    fn wilson_reproduces_reference_table() {
        check_table(
            wilson_interval,
            [
                (0.639581, 0.947631),
                (0.565518, 1.0),
                (0.0, 0.113513),
                (0.423204, 0.754094),
                (0.245906, 0.576796),
            ],
        );
        // Centres from the same table.
        let centre = |i: Interval| (i.low + i.high) / 2.0;
        assert_close(
            centre(wilson_interval(17, 20, 0.95).unwrap()),
            0.793606,
            TOL,
        );
        assert_close(
            centre(wilson_interval(18, 30, 0.95).unwrap()),
            0.588649,
            TOL,
        );
    }

    /// statistics.md §4 table and §11: Clopper–Pearson, same inputs.
    #[test]
    fn clopper_pearson_reproduces_reference_table() {
        check_table(
            clopper_pearson_interval,
            [
                (0.621073, 0.967929),
                (0.478176, 1.0),
                (0.0, 0.115703),
                (0.406035, 0.773442),
                (0.226558, 0.593965),
            ],
        );
        // 0/30 upper bound is 1 - 0.025^(1/30).
        assert_close(
            clopper_pearson_interval(0, 30, 0.95).unwrap().high,
            1.0 - 0.025f64.powf(1.0 / 30.0),
            1e-9,
        );
    }

    #[test]
    fn degenerate_counts() {
        for f in [wilson_interval, clopper_pearson_interval] {
            assert_eq!(f(0, 0, 0.95), None, "n = 0");
            assert_eq!(f(3, 2, 0.95), None, "k > n");
            assert_eq!(f(1, 2, 1.0), None, "bad confidence");
            assert_eq!(f(1, 2, 0.0), None, "bad confidence");
            // n = 1
            let zero = f(0, 1, 0.95).unwrap();
            let one = f(1, 1, 0.95).unwrap();
            assert_eq!(zero.low, 0.0);
            assert_eq!(one.high, 1.0);
            assert!(zero.high > 0.0 && zero.high < 1.0);
            assert_close(one.low, 1.0 - zero.high, 1e-12);
            // 0/n and n/n have positive width (unlike Wald).
            assert!(f(0, 30, 0.95).unwrap().width() > 0.0);
            assert!(f(30, 30, 0.95).unwrap().width() > 0.0);
        }
        // Clopper–Pearson n = 1: [0, 0.975], [0.025, 1].
        assert_close(
            clopper_pearson_interval(0, 1, 0.95).unwrap().high,
            0.975,
            1e-9,
        );
    }

    /// K = 3, 30 cases all passing (0.98-vs-0.90 scenario's common draw): deff = 1, n_eff = 90,
    /// t₂₉ in place of z — a positive width, never the bootstrap's [1, 1].
    #[test]
    fn effective_count_wilson_at_the_bounds() {
        let all = effective_count_wilson_interval(&[1.0; 30], 90, None, 0.95).unwrap();
        assert_eq!(all.design_effect, 1.0);
        assert_eq!(all.effective_trials, 90.0);
        assert_eq!(all.df, 29);
        let t = StudentsT::new(0.0, 1.0, 29.0).unwrap().inverse_cdf(0.975);
        assert_close(all.interval.low, 90.0 / (90.0 + t * t), 1e-12);
        assert_eq!(all.interval.high, 1.0);
        let none = effective_count_wilson_interval(&[0.0; 30], 90, None, 0.95).unwrap();
        assert_eq!(none.interval.low, 0.0);
        assert_close(none.interval.high, 1.0 - all.interval.low, 1e-12);
    }

    /// Independent trials (no between-case spread beyond binomial noise) keep deff near 1;
    /// case rates that are all 0 or 1 (maximal clustering) give deff = K and n_eff = n.
    #[test]
    fn effective_count_wilson_design_effect() {
        let rates = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0];
        let r = effective_count_wilson_interval(&rates, 30, None, 0.95).unwrap();
        // S² = 0.6·0.4·10/9, V = S²/10, deff = V·30/0.24 = 30/9.
        assert_close(r.design_effect, 30.0 / 9.0, 1e-12);
        assert_close(r.effective_trials, 9.0, 1e-12);
        // K = 1 data: deff = n/(n-1) → n_eff = n - 1.
        let k1 = effective_count_wilson_interval(&rates, 10, None, 0.95).unwrap();
        assert_close(k1.design_effect, 10.0 / 9.0, 1e-12);
        assert_close(k1.effective_trials, 9.0, 1e-12);
        // Clustered: uses the clustered SE and C - 1 df.
        // Clusters of alike cases (0,0 / 1,1): the clustered variance is larger than S²/n.
        let clusters = Clusters::from_labels(&["a", "b", "a", "b", "c", "d", "c", "e", "d", "e"]);
        let c = effective_count_wilson_interval(&rates, 30, Some(&clusters), 0.95).unwrap();
        assert_eq!(c.df, 4);
        assert!(c.interval.low < r.interval.low);
        assert!(effective_count_wilson_interval(&[], 0, None, 0.95).is_err());
        assert!(effective_count_wilson_interval(&[0.5, 0.5], 1, None, 0.95).is_err());
        assert!(effective_count_wilson_interval(&[1.5], 3, None, 0.95).is_err());
    }

    #[test]
    fn symmetric_under_complement_and_nested_in_confidence() {
        let a = wilson_interval(7, 20, 0.95).unwrap();
        let b = wilson_interval(13, 20, 0.95).unwrap();
        assert_close(a.low, 1.0 - b.high, 1e-12);
        let narrow = wilson_interval(7, 20, 0.8).unwrap();
        assert!(narrow.low > a.low && narrow.high < a.high);
    }
}
