//! Paired binary outcomes with one trial per case per arm (K = 1): the Newcombe hybrid score
//! interval for the difference of paired proportions and the McNemar tests (statistics.md §5).
//! The 2×2 table is over cases: `both` pass, `only_a` (with-skill passes, baseline fails),
//! `only_b` (baseline passes, with-skill fails), `neither`. K > 1 data belongs to `bootstrap`
//! and `mean_t`, not here.

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, Discrete, DiscreteCDF};

use super::{Interval, proportion::wilson_interval};

/// Newcombe's hybrid score interval for `p₁ - p₂` of paired proportions, method 10 as published
/// (Newcombe, Statistics in Medicine 17:2635, 1998; statistics.md §5): Wilson intervals without
/// continuity correction, combined with the correlation `φ` *with* Newcombe's correction.
///
/// With `n = a+b+c+d`, `p₁ = (a+b)/n`, `p₂ = (a+c)/n`, Wilson intervals `(l₁,u₁)`, `(l₂,u₂)`,
/// `num = ad - bc`, corrected to `max(num - n/2, 0)` when `num > 0`, and
/// `φ = num/√((a+b)(c+d)(a+c)(b+d))` (0 when that denominator is 0):
/// `low  = δ̂ - √((p₁-l₁)² - 2φ(p₁-l₁)(u₂-p₂) + (u₂-p₂)²)`,
/// `high = δ̂ + √((u₁-p₁)² - 2φ(u₁-p₁)(p₂-l₂) + (p₂-l₂)²)`.
///
/// Arguments are case counts: `a = both`, `b = only_a`, `c = only_b`, `d = neither`.
/// The interval is for the lift in `[-1, 1]` (×100 for percentage points).
/// Returns `None` when there are no cases or `confidence` is outside `(0, 1)`.
pub(crate) fn newcombe_paired_interval(
    both: u64,
    only_a: u64,
    only_b: u64,
    neither: u64,
    confidence: f64,
) -> Option<Interval> {
    let n = both + only_a + only_b + neither;
    let wilson_1 = wilson_interval(both + only_a, n, confidence)?;
    let wilson_2 = wilson_interval(both + only_b, n, confidence)?;
    let total = n as f64;
    let p1 = (both + only_a) as f64 / total;
    let p2 = (both + only_b) as f64 / total;
    let (a, b, c, d) = (both as f64, only_a as f64, only_b as f64, neither as f64);
    let marginal_product = (a + b) * (c + d) * (a + c) * (b + d);
    let mut numerator = a * d - b * c;
    if numerator > 0.0 {
        numerator = (numerator - total / 2.0).max(0.0);
    }
    let phi = if marginal_product > 0.0 {
        numerator / marginal_product.sqrt()
    } else {
        0.0
    };
    Some(newcombe_from_parts(p1, p2, wilson_1, wilson_2, phi))
}

/// Method 10's combination step, given the two rates, their Wilson intervals and `φ`.
fn newcombe_from_parts(
    p1: f64,
    p2: f64,
    wilson_1: Interval,
    wilson_2: Interval,
    phi: f64,
) -> Interval {
    let delta = p1 - p2;
    let combine = |x: f64, y: f64| (x * x - 2.0 * phi * x * y + y * y).max(0.0).sqrt();
    let low = delta - combine(p1 - wilson_1.low, wilson_2.high - p2);
    let high = delta + combine(wilson_1.high - p1, p2 - wilson_2.low);
    Interval {
        low: low.max(-1.0),
        high: high.min(1.0),
    }
}

/// McNemar's tests on the discordant pairs (McNemar 1947; mid-p per Fagerland, Lydersen &
/// Laake, BMC Med Res Methodol 13:91, 2013; statistics.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct McNemarResult {
    /// Discordant cases `m = b + c`.
    pub discordant: u64,
    /// Exact conditional two-sided p: `min(1, 2·P(X ≤ min(b,c)))`, `X ~ Bin(m, ½)`; 1 when m = 0.
    pub exact_p: f64,
    /// Mid-p: `2·[P(X ≤ min) - ½·P(X = min)]`, capped at 1 (recommended by Fagerland et al.).
    pub mid_p: f64,
    /// One-sided exact p for "with-skill better": `P(X ≥ b)`.
    pub one_sided_exact_p: f64,
    /// `(b - c)²/(b + c)`, 1 df; `None` when m = 0.
    pub chi_square: Option<f64>,
    /// Upper-tail χ²₁ probability of `chi_square`.
    pub chi_square_p: Option<f64>,
    /// Continuity-corrected `max(0, |b - c| - 1)²/(b + c)` (clamped at 0 so that `b = c` gives
    /// 0, not `1/m`); `None` when m = 0.
    pub chi_square_corrected: Option<f64>,
    /// Upper-tail χ²₁ probability of `chi_square_corrected`.
    pub chi_square_corrected_p: Option<f64>,
}

/// McNemar exact, mid-p and asymptotic tests of `b = only_a` versus `c = only_b`
/// (see [`McNemarResult`] for each formula). Concordant cases do not enter.
///
/// With no discordant pairs every p is 1 and the χ² fields are `None`.
pub(crate) fn mcnemar(only_a: u64, only_b: u64) -> McNemarResult {
    let m = only_a + only_b;
    if m == 0 {
        return McNemarResult {
            discordant: 0,
            exact_p: 1.0,
            mid_p: 1.0,
            one_sided_exact_p: 1.0,
            chi_square: None,
            chi_square_p: None,
            chi_square_corrected: None,
            chi_square_corrected_p: None,
        };
    }
    let binomial = Binomial::new(0.5, m).expect("p = 0.5 is a valid binomial parameter");
    let smaller = only_a.min(only_b);
    let (tail, at) = fair_binomial_lower_tail(m, smaller)
        .unwrap_or_else(|| (binomial.cdf(smaller), binomial.pmf(smaller)));
    let exact_p = (2.0 * tail).min(1.0);
    let mid_p = (2.0 * (tail - 0.5 * at)).clamp(0.0, 1.0);
    let one_sided_exact_p = if only_a == 0 {
        1.0
    } else {
        binomial.sf(only_a - 1)
    };
    let chi = ChiSquared::new(1.0).expect("1 degree of freedom is valid");
    let difference = only_a.abs_diff(only_b) as f64;
    let chi_square = difference * difference / m as f64;
    let corrected_difference = (difference - 1.0).max(0.0);
    let chi_square_corrected = corrected_difference * corrected_difference / m as f64;
    McNemarResult {
        discordant: m,
        exact_p,
        mid_p,
        one_sided_exact_p,
        chi_square: Some(chi_square),
        chi_square_p: Some(chi.sf(chi_square)),
        chi_square_corrected: Some(chi_square_corrected),
        chi_square_corrected_p: Some(chi.sf(chi_square_corrected)),
    }
}

/// `(P(X ≤ k), P(X = k))` for `X ~ Bin(m, ½)` by summing `C(m, j)·2⁻ᵐ` with the exact
/// recurrence (exact in `f64` for small m, so e.g. m = 1 gives exactly ½); `None` when `2⁻ᵐ`
/// would underflow, in which case statrs' regularised-beta CDF is used.
fn fair_binomial_lower_tail(m: u64, k: u64) -> Option<(f64, f64)> {
    if m > 1000 {
        return None;
    }
    let mut term = 0.5f64.powi(m as i32);
    let mut tail = term;
    for j in 0..k {
        term = term * (m - j) as f64 / (j + 1) as f64;
        tail += term;
    }
    Some((tail, term))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data::assert_close;

    /// statistics.md §5 worked example: n = 30, a = 10, b = 8, c = 2, d = 10 → φ = 69/216 with
    /// Newcombe's correction, [−0.006262, +0.379776] (spans 0, like McNemar's mid-p 0.065).
    #[test]
    fn newcombe_reproduces_worked_example() {
        let interval = newcombe_paired_interval(10, 8, 2, 10, 0.95).unwrap();
        assert_close(interval.low, -0.006262, 1e-6);
        assert_close(interval.high, 0.379776, 1e-6);
    }

    /// Published rows (statistics.md §5): Newcombe 1998 Table III and the Cavo table of
    /// Fagerland, Lydersen & Laake 2014, to the 4 decimals they are published with.
    #[test]
    fn newcombe_reproduces_published_rows() {
        let rows: [([u64; 4], f64, f64); 4] = [
            ([20, 12, 2, 16], 0.0562, 0.3292),
            ([36, 12, 2, 0], 0.0569, 0.3404),
            ([35, 14, 0, 1], 0.1461, 0.4175),
            ([59, 6, 16, 80], -0.1186, -0.0046),
        ];
        for ([a, b, c, d], low, high) in rows {
            let interval = newcombe_paired_interval(a, b, c, d, 0.95).unwrap();
            assert_close(interval.low, low, 5e-5);
            assert_close(interval.high, high, 5e-5);
        }
    }

    /// a·d − b·c positive but below n/2: the corrected numerator is clamped at 0 (φ = 0, the
    /// square-and-add interval); a negative a·d − b·c is used as it is.
    #[test]
    fn newcombe_correction_clamps_and_leaves_negative_numerators() {
        // a=3, b=2, c=2, d=2: ad − bc = 2 > 0, n/2 = 4.5 → num = 0.
        let clamped = newcombe_paired_interval(3, 2, 2, 2, 0.95).unwrap();
        let w = wilson_interval(5, 9, 0.95).unwrap();
        let p = 5.0 / 9.0;
        let expected = ((p - w.low).powi(2) + (w.high - p).powi(2)).sqrt();
        assert_close(clamped.low, -expected, 1e-12);
        assert_close(clamped.high, expected, 1e-12);
        // a=1, b=4, c=4, d=1: ad − bc = −15 < 0 → φ = −15/25, wider than square-and-add.
        let negative = newcombe_paired_interval(1, 4, 4, 1, 0.95).unwrap();
        let w = wilson_interval(5, 10, 0.95).unwrap();
        let independent = ((0.5 - w.low).powi(2) + (w.high - 0.5).powi(2)).sqrt();
        assert!(negative.high > independent);
        let phi: f64 = -15.0 / 25.0;
        let x = 0.5 - w.low;
        let y = w.high - 0.5;
        assert_close(
            negative.high,
            (x * x - 2.0 * phi * x * y + y * y).sqrt(),
            1e-12,
        );
    }

    /// §5 contrast: the same rates with φ = 0 (arms treated as independent) give
    /// [-0.0500, +0.4179]; without Newcombe's correction φ would be 84/216 and the interval
    /// [0.004544, 0.370357] (the wrong "improved" of an earlier reference page).
    #[test]
    fn newcombe_with_zero_phi_is_square_and_add() {
        let w1 = wilson_interval(18, 30, 0.95).unwrap();
        let w2 = wilson_interval(12, 30, 0.95).unwrap();
        let independent = newcombe_from_parts(0.6, 0.4, w1, w2, 0.0);
        assert_close(independent.low, -0.0500, 1e-4);
        assert_close(independent.high, 0.4179, 1e-4);
        let paired = newcombe_from_parts(0.6, 0.4, w1, w2, 84.0 / 216.0);
        assert_close(paired.low, 0.004544, 1e-6);
        assert_close(paired.high, 0.370357, 1e-6);
        // a·d = b·c → φ = 0: a=4, b=2, c=2, d=1; n = 9, p₁ = p₂ = 6/9.
        let interval = newcombe_paired_interval(4, 2, 2, 1, 0.95).unwrap();
        let w = wilson_interval(6, 9, 0.95).unwrap();
        let p = 6.0 / 9.0;
        let expected = ((p - w.low).powi(2) + (w.high - p).powi(2)).sqrt();
        assert_close(interval.low, -expected, 1e-12);
        assert_close(interval.high, expected, 1e-12);
    }

    #[test]
    fn newcombe_degenerate_tables() {
        assert_eq!(newcombe_paired_interval(0, 0, 0, 0, 0.95), None, "n = 0");
        assert_eq!(newcombe_paired_interval(1, 2, 0, 0, 1.2), None);
        // No discordant pairs, all pass (n/n in both arms): interval straddles 0, width > 0.
        let all_pass = newcombe_paired_interval(20, 0, 0, 0, 0.95).unwrap();
        assert!(all_pass.low < 0.0 && all_pass.high > 0.0);
        let w = wilson_interval(20, 20, 0.95).unwrap();
        assert_close(all_pass.low, -(1.0 - w.low), 1e-12);
        assert_close(all_pass.high, 1.0 - w.low, 1e-12);
        // All fail (0/n both arms): symmetric.
        let all_fail = newcombe_paired_interval(0, 0, 0, 20, 0.95).unwrap();
        assert_close(all_fail.low, -all_fail.high, 1e-12);
        // n = 1 (one discordant case): inside [-1, 1], contains δ̂ = 1.
        let single = newcombe_paired_interval(0, 1, 0, 0, 0.95).unwrap();
        assert!(single.low > -1.0 && single.high <= 1.0 && single.contains(1.0));
        // Every case only_a (n/n vs 0/n): δ̂ = 1 lies inside, bounds ≤ 1.
        let extreme = newcombe_paired_interval(0, 30, 0, 0, 0.95).unwrap();
        assert!(extreme.contains(1.0) && extreme.low > 0.8);
    }

    /// §5 worked example and §11: b = 8, c = 2.
    #[test]
    fn mcnemar_reproduces_worked_example() {
        let r = mcnemar(8, 2);
        assert_eq!(r.discordant, 10);
        assert_close(r.exact_p, 112.0 / 1024.0, 1e-12);
        assert_close(r.exact_p, 0.109375, 1e-6);
        assert_close(r.mid_p, 67.0 / 1024.0, 1e-12);
        assert_close(r.mid_p, 0.065430, 1e-6);
        assert_close(r.chi_square.unwrap(), 3.6, 1e-12);
        assert_close(r.chi_square_p.unwrap(), 0.057780, 1e-6);
        assert_close(r.chi_square_corrected.unwrap(), 2.5, 1e-12);
        assert_close(r.chi_square_corrected_p.unwrap(), 0.113846, 1e-6);
        assert_close(r.one_sided_exact_p, 0.054688, 1e-6);
        // Symmetric in the two-sided p-values.
        let swapped = mcnemar(2, 8);
        assert_eq!(swapped.exact_p, r.exact_p);
        assert_eq!(swapped.mid_p, r.mid_p);
        assert!(swapped.one_sided_exact_p > 0.9);
    }

    #[test]
    fn fair_binomial_tail_matches_statrs() {
        for m in [1u64, 2, 10, 57, 400, 1000] {
            let binomial = Binomial::new(0.5, m).unwrap();
            for k in [0, m / 3, m / 2] {
                let (tail, at) = fair_binomial_lower_tail(m, k).unwrap();
                assert_close(tail, binomial.cdf(k), 1e-12);
                assert_close(at, binomial.pmf(k), 1e-12);
            }
        }
        assert_eq!(
            fair_binomial_lower_tail(10, 2),
            Some((56.0 / 1024.0, 45.0 / 1024.0))
        );
        assert_eq!(fair_binomial_lower_tail(1001, 2), None);
        // The statrs fallback for large m.
        let large = mcnemar(1200, 1000);
        assert!(large.exact_p > 0.0 && large.exact_p < 1e-4 && large.mid_p < large.exact_p);
    }

    #[test]
    fn mcnemar_degenerate_cases() {
        let none = mcnemar(0, 0);
        assert_eq!(
            (none.exact_p, none.mid_p, none.one_sided_exact_p),
            (1.0, 1.0, 1.0)
        );
        assert_eq!(none.chi_square, None);
        // Balanced discordance: every p is 1, corrected χ² is clamped to 0.
        let balanced = mcnemar(3, 3);
        assert_eq!(balanced.exact_p, 1.0);
        assert_close(balanced.mid_p, 1.0, 1e-12);
        assert_eq!(balanced.chi_square_corrected, Some(0.0));
        assert_close(balanced.chi_square_p.unwrap(), 1.0, 1e-12);
        // One discordant pair: exact p = 1, mid-p = 2·(½ - ½·½) = 0.5.
        let one = mcnemar(1, 0);
        assert_eq!(one.exact_p, 1.0);
        assert_close(one.mid_p, 0.5, 1e-12);
        assert_close(one.one_sided_exact_p, 0.5, 1e-12);
        // All discordant one way, m = 10: exact p = 2/1024, mid-p = 1/1024.
        let all = mcnemar(10, 0);
        assert_close(all.exact_p, 2.0 / 1024.0, 1e-12);
        assert_close(all.mid_p, 1.0 / 1024.0, 1e-12);
    }
}
