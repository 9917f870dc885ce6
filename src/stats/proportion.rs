//! Confidence intervals for one proportion (K = 1 arm rates, or one case's trial counts):
//! Wilson score and Clopper–Pearson exact (statistics.md §4). Must not be applied to trials
//! pooled across cases when K > 1 (§1): pass case-level counts only.

use statrs::distribution::{Beta, ContinuousCDF};

use super::{Interval, two_sided_normal_quantile};

/// Wilson score interval for `successes` out of `trials` (Wilson 1927; statistics.md §4).
///
/// With `p = k/n` and `z = z_{1-α/2}`:
/// centre `= (p + z²/(2n)) / (1 + z²/n)`,
/// half-width `= z/(1 + z²/n) · √(p(1-p)/n + z²/(4n²))`.
/// Bounds lie in `[0, 1]` (clamped against rounding; exactly 0 at `k = 0` and 1 at `k = n`).
///
/// `confidence` is the two-sided level in `(0, 1)`, e.g. 0.95.
/// Returns `None` when `trials = 0`, `successes > trials`, or `confidence` is outside `(0, 1)`.
pub fn wilson_interval(successes: u64, trials: u64, confidence: f64) -> Option<Interval> {
    if trials == 0 || successes > trials {
        return None;
    }
    let z = two_sided_normal_quantile(confidence)?;
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half_width = z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let low = if successes == 0 {
        0.0
    } else {
        (centre - half_width).max(0.0)
    };
    let high = if successes == trials {
        1.0
    } else {
        (centre + half_width).min(1.0)
    };
    Some(Interval { low, high })
}

/// Clopper–Pearson "exact" interval (Clopper & Pearson 1934; statistics.md §4).
///
/// `low = B⁻¹(α/2; k, n-k+1)` (0 when `k = 0`), `high = B⁻¹(1-α/2; k+1, n-k)` (1 when `k = n`),
/// with `B⁻¹` the Beta quantile. Conservative: coverage ≥ the nominal level.
///
/// Returns `None` when `trials = 0`, `successes > trials`, or `confidence` is outside `(0, 1)`.
pub fn clopper_pearson_interval(successes: u64, trials: u64, confidence: f64) -> Option<Interval> {
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
    use crate::stats::test_data::assert_close;

    const TOL: f64 = 1e-6;

    fn check(interval: Option<Interval>, low: f64, high: f64) {
        let interval = interval.expect("interval defined");
        assert_close(interval.low, low, TOL);
        assert_close(interval.high, high, TOL);
    }

    /// statistics.md §4 table and §11: Wilson 17/20, 5/5, 0/30, 18/30, 12/30.
    #[test]
    fn wilson_reproduces_reference_table() {
        check(wilson_interval(17, 20, 0.95), 0.639581, 0.947631);
        check(wilson_interval(5, 5, 0.95), 0.565518, 1.0);
        check(wilson_interval(0, 30, 0.95), 0.0, 0.113513);
        check(wilson_interval(18, 30, 0.95), 0.423204, 0.754094);
        check(wilson_interval(12, 30, 0.95), 0.245906, 0.576796);
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
        check(clopper_pearson_interval(17, 20, 0.95), 0.621073, 0.967929);
        check(clopper_pearson_interval(5, 5, 0.95), 0.478176, 1.0);
        check(clopper_pearson_interval(0, 30, 0.95), 0.0, 0.115703);
        check(clopper_pearson_interval(18, 30, 0.95), 0.406035, 0.773442);
        check(clopper_pearson_interval(12, 30, 0.95), 0.226558, 0.593965);
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

    #[test]
    fn symmetric_under_complement_and_nested_in_confidence() {
        let a = wilson_interval(7, 20, 0.95).unwrap();
        let b = wilson_interval(13, 20, 0.95).unwrap();
        assert_close(a.low, 1.0 - b.high, 1e-12);
        let narrow = wilson_interval(7, 20, 0.8).unwrap();
        assert!(narrow.low > a.low && narrow.high < a.high);
    }
}
