//! Sign-flip permutation test of "no skill effect" on paired differences (statistics.md §6.3):
//! exact enumeration of all sign vectors for up to [`EXACT_SIGN_FLIP_LIMIT`] nonzero
//! differences, seeded Monte Carlo beyond. Integer differences (`k_A - k_B`) are compared
//! exactly; `f64` differences are first mapped to a common lattice when possible.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::lattice::{common_denominator, to_lattice};
use super::sampling::seeded_rng;
use super::{StatsError, check_finite};

/// Largest number of nonzero differences for which all `2^m` sign vectors are enumerated.
pub(crate) const EXACT_SIGN_FLIP_LIMIT: usize = 20;

/// Result of a sign-flip permutation test of `T = Σ dᵢ`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SignFlipResult {
    /// Observed `Σ dᵢ` (in the input's units).
    pub statistic: f64,
    /// Nonzero differences m (zeros do not change any p-value and are dropped).
    pub nonzero: usize,
    /// Two-sided p: share of sign vectors with `|T*| ≥ |T|`.
    pub two_sided_p: f64,
    /// One-sided p for "with-skill better": share with `T* ≥ T`.
    pub greater_p: f64,
    /// One-sided p for "with-skill worse": share with `T* ≤ T`.
    pub less_p: f64,
    /// Whether all `2^m` vectors were enumerated (otherwise Monte Carlo).
    pub exact: bool,
    /// Monte Carlo resamples B (`None` when exact).
    pub resamples: Option<usize>,
    /// Monte Carlo seed (`None` when exact).
    pub seed: Option<u64>,
}

/// Sign-flip test on integer differences, e.g. `k_A - k_B` per case (Fisher 1935 / Pitman 1937
/// randomisation test; statistics.md §6.3).
///
/// Under H₀ each `dᵢ` is symmetric about 0. Exact (m ≤ 20 nonzero): `p = #{|T*| ≥ |T|}/2^m`
/// over all sign vectors. Monte Carlo (m > 20): `p = (1 + #{|T*| ≥ |T|})/(1 + B)` with B sign
/// vectors from `ChaCha20Rng::seed_from_u64(seed)` (one bit per nonzero difference, 64 bits per
/// word, low bit first; bit set = keep the sign). One-sided p-values likewise.
///
/// No nonzero differences: every p is 1. Errors: `resamples = 0` when Monte Carlo is needed.
pub(crate) fn sign_flip_test_integer(
    differences: &[i64],
    resamples: usize,
    seed: u64,
) -> Result<SignFlipResult, StatsError> {
    let nonzero: Vec<i64> = differences.iter().copied().filter(|&d| d != 0).collect();
    let observed: i64 = nonzero.iter().sum();
    let counts = if nonzero.len() <= EXACT_SIGN_FLIP_LIMIT {
        exact_counts(&nonzero, observed)
    } else {
        if resamples == 0 {
            return Err(StatsError::TooFewResamples(0));
        }
        monte_carlo_counts(&nonzero, observed, resamples, seed)
    };
    Ok(counts.into_result(observed as f64, nonzero.len(), resamples, seed))
}

/// Sign-flip test on `f64` differences (e.g. `r_A - r_B`). Values on a common lattice `k/K` are
/// converted to integers and tested exactly with [`sign_flip_test_integer`]; general values are
/// compared with a tolerance of `1e-9·Σ|dᵢ|` so rounding cannot break ties.
///
/// Errors: non-finite values; `resamples = 0` when Monte Carlo is needed.
pub(crate) fn sign_flip_test(
    differences: &[f64],
    resamples: usize,
    seed: u64,
) -> Result<SignFlipResult, StatsError> {
    check_finite("differences", differences)?;
    if let Some(denominator) = common_denominator(differences) {
        let mut result =
            sign_flip_test_integer(&to_lattice(differences, denominator), resamples, seed)?;
        result.statistic /= denominator as f64;
        return Ok(result);
    }
    let nonzero: Vec<f64> = differences.iter().copied().filter(|&d| d != 0.0).collect();
    let observed: f64 = nonzero.iter().sum();
    let tolerance = 1e-9 * nonzero.iter().map(|d| d.abs()).sum::<f64>();
    let counts = if nonzero.len() <= EXACT_SIGN_FLIP_LIMIT {
        let mut counts = Counts::new(false, 1u64 << nonzero.len());
        for mask in 0u64..(1u64 << nonzero.len()) {
            let flipped: f64 = nonzero
                .iter()
                .enumerate()
                .map(|(j, &d)| if mask >> j & 1 == 1 { d } else { -d })
                .sum();
            counts.add_float(flipped, observed, tolerance);
        }
        counts
    } else {
        if resamples == 0 {
            return Err(StatsError::TooFewResamples(0));
        }
        let mut rng = seeded_rng(seed);
        let mut counts = Counts::new(true, resamples as u64);
        for _ in 0..resamples {
            let mut flipped = 0.0;
            let mut bits = 0u64;
            for (j, &d) in nonzero.iter().enumerate() {
                if j % 64 == 0 {
                    bits = rng.next_u64();
                }
                flipped += if bits >> (j % 64) & 1 == 1 { d } else { -d };
            }
            counts.add_float(flipped, observed, tolerance);
        }
        counts
    };
    Ok(counts.into_result(observed, nonzero.len(), resamples, seed))
}

/// Tallies of `|T*| ≥ |T|`, `T* ≥ T`, `T* ≤ T` over `total` sign vectors.
struct Counts {
    monte_carlo: bool,
    total: u64,
    two_sided: u64,
    greater: u64,
    less: u64,
}

impl Counts {
    fn new(monte_carlo: bool, total: u64) -> Self {
        Self {
            monte_carlo,
            total,
            two_sided: 0,
            greater: 0,
            less: 0,
        }
    }

    #[inline]
    fn add_integer(&mut self, flipped: i64, observed: i64) {
        self.two_sided += u64::from(flipped.abs() >= observed.abs());
        self.greater += u64::from(flipped >= observed);
        self.less += u64::from(flipped <= observed);
    }

    fn add_float(&mut self, flipped: f64, observed: f64, tolerance: f64) {
        self.two_sided += u64::from(flipped.abs() >= observed.abs() - tolerance);
        self.greater += u64::from(flipped >= observed - tolerance);
        self.less += u64::from(flipped <= observed + tolerance);
    }

    fn into_result(
        self,
        statistic: f64,
        nonzero: usize,
        resamples: usize,
        seed: u64,
    ) -> SignFlipResult {
        let share = |count: u64| {
            if self.monte_carlo {
                (1 + count) as f64 / (1 + self.total) as f64
            } else {
                count as f64 / self.total as f64
            }
        };
        SignFlipResult {
            statistic,
            nonzero,
            two_sided_p: share(self.two_sided),
            greater_p: share(self.greater),
            less_p: share(self.less),
            exact: !self.monte_carlo,
            resamples: self.monte_carlo.then_some(resamples),
            seed: self.monte_carlo.then_some(seed),
        }
    }
}

/// All `2^m` sign vectors in Gray-code order: one sign changes per step, so each step is O(1).
fn exact_counts(nonzero: &[i64], observed: i64) -> Counts {
    let total = 1u64 << nonzero.len();
    let mut counts = Counts::new(false, total);
    // Start from all signs negative, then flip one difference per step.
    let mut flipped: i64 = -observed;
    let mut positive = 0u64;
    counts.add_integer(flipped, observed);
    for step in 1..total {
        let j = step.trailing_zeros() as usize;
        if positive >> j & 1 == 1 {
            flipped -= 2 * nonzero[j];
        } else {
            flipped += 2 * nonzero[j];
        }
        positive ^= 1 << j;
        counts.add_integer(flipped, observed);
    }
    counts
}

fn monte_carlo_counts(nonzero: &[i64], observed: i64, resamples: usize, seed: u64) -> Counts {
    let mut rng = seeded_rng(seed);
    let mut counts = Counts::new(true, resamples as u64);
    for _ in 0..resamples {
        let mut flipped = 0i64;
        let mut bits = 0u64;
        for (j, &d) in nonzero.iter().enumerate() {
            if j % 64 == 0 {
                bits = rng.next_u64();
            }
            flipped += if bits >> (j % 64) & 1 == 1 { d } else { -d };
        }
        counts.add_integer(flipped, observed);
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data::{self, assert_close};

    /// statistics.md §6.3 and §11: D10 differences {0,3,0,2,1,4,1,-1,0,2}, T = 12:
    /// 64/1024 = 0.0625 two-sided (8/128 without the zeros), 32/1024 = 0.03125 one-sided.
    #[test]
    fn exact_reproduces_d10() {
        let r = sign_flip_test_integer(&test_data::count_differences(), 0, 0).unwrap();
        assert_eq!(r.statistic, 12.0);
        assert_eq!(r.nonzero, 7);
        assert!(r.exact);
        assert_eq!(r.two_sided_p, 0.0625);
        assert_eq!(r.greater_p, 0.03125);
        assert!(r.less_p > 0.9);
        assert_eq!((r.resamples, r.seed), (None, None));
        let from_rates = sign_flip_test(&test_data::differences(), 0, 0).unwrap();
        assert_eq!(from_rates.two_sided_p, 0.0625);
        assert_eq!(from_rates.greater_p, 0.03125);
        assert_close(from_rates.statistic, 2.4, 1e-12);
    }

    #[test]
    fn gray_code_matches_direct_enumeration() {
        let d = [3i64, -1, 4, 1, -5, 9, 2, -6];
        let observed: i64 = d.iter().sum();
        let fast = exact_counts(&d, observed);
        let mut direct = Counts::new(false, 1 << d.len());
        for mask in 0u64..(1 << d.len()) {
            let t: i64 = d
                .iter()
                .enumerate()
                .map(|(j, &x)| if mask >> j & 1 == 1 { x } else { -x })
                .sum();
            direct.add_integer(t, observed);
        }
        assert_eq!(
            (fast.two_sided, fast.greater, fast.less),
            (direct.two_sided, direct.greater, direct.less)
        );
    }

    #[test]
    fn monte_carlo_beyond_twenty_and_reproducible() {
        // 24 nonzero ±1 differences: Monte Carlo; the exact p follows from the binomial.
        let d: Vec<i64> = (0..24).map(|i| if i % 3 == 0 { -1 } else { 1 }).collect();
        let a = sign_flip_test_integer(&d, 20_000, 3).unwrap();
        let b = sign_flip_test_integer(&d, 20_000, 3).unwrap();
        assert_eq!(a, b);
        assert!(!a.exact);
        assert_eq!((a.resamples, a.seed), (Some(20_000), Some(3)));
        // T = 8 with 24 ±1 terms: P(|S| ≥ 8) for S = 2·Bin(24,½) - 24, i.e. Bin ≤ 8 or ≥ 16.
        let exact: f64 = (0..=24u64)
            .filter(|&k| k <= 8 || k >= 16)
            .map(|k| binomial(24, k) as f64 / 2f64.powi(24))
            .sum();
        assert_close(a.two_sided_p, exact, 0.01);
        assert!(sign_flip_test_integer(&d, 0, 3).is_err());
        // f64 Monte Carlo path (non-lattice values).
        let general: Vec<f64> = (0..24).map(|i| (i as f64 * 0.7).sin()).collect();
        let r = sign_flip_test(&general, 5_000, 1).unwrap();
        assert!(!r.exact && r.two_sided_p > 0.0 && r.two_sided_p <= 1.0);
    }

    fn binomial(n: u64, k: u64) -> u64 {
        (1..=k).fold(1, |acc, j| acc * (n + 1 - j) / j)
    }

    #[test]
    fn degenerate_inputs() {
        // n = 0 and all zero (no discordant cases): p = 1.
        for d in [&[][..], &[0, 0, 0][..]] {
            let r = sign_flip_test_integer(d, 0, 0).unwrap();
            assert_eq!((r.two_sided_p, r.greater_p, r.less_p), (1.0, 1.0, 1.0));
            assert_eq!(r.nonzero, 0);
        }
        // n = 1: p = 1 two-sided, ½ one-sided.
        let one = sign_flip_test_integer(&[2], 0, 0).unwrap();
        assert_eq!((one.two_sided_p, one.greater_p), (1.0, 0.5));
        // All identical positive, n = 10: only the all-plus vector reaches T (two-sided: ±).
        let same = sign_flip_test(&[0.2; 10], 0, 0).unwrap();
        assert_eq!(same.two_sided_p, 2.0 / 1024.0);
        assert_eq!(same.greater_p, 1.0 / 1024.0);
        // General f64 values, exact path with tolerance: symmetric data → p = 1.
        let symmetric = [0.1f64.sqrt(), -(0.1f64.sqrt())];
        assert_eq!(sign_flip_test(&symmetric, 0, 0).unwrap().two_sided_p, 1.0);
        assert!(sign_flip_test(&[f64::NAN], 0, 0).is_err());
    }
}
