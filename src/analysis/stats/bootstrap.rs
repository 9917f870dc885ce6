//! Seeded case / cluster bootstrap of a mean (one arm's pass rate, or the lift as the mean of
//! paired differences), with percentile and BCa intervals, plus the exact "ideal" case bootstrap
//! (B → ∞) used for small n and as a test oracle (statistics.md §6.2; Efron, "Better bootstrap
//! confidence intervals", JASA 82:171, 1987).
//!
//! Works on precomputed case values only; the resampling loop allocates nothing. When every
//! value is `k/K` for a common K (see `lattice`), sums are exact integers, so ties with the
//! estimate (BCa's `z₀`) and quantiles are exact; otherwise it falls back to `f64` sums.

use std::cmp::Ordering;
use std::ops::{AddAssign, Sub};

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::lattice::{common_denominator, to_lattice};
use super::sampling::{PREFETCH_MIN_WORDS, SeededWords, Words, uniform_below, with_seeded_words};
use super::{Clusters, Interval, StatsError, check_confidence, check_finite, check_unit_interval};

/// Default number of bootstrap resamples B.
pub(crate) const DEFAULT_RESAMPLES: usize = 10_000;

/// Which bootstrap interval [`BootstrapResult::interval`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BootstrapMethod {
    /// Percentile interval: the α/2 and 1-α/2 quantiles of the resampled means.
    Percentile,
    /// Bias-corrected and accelerated interval (Efron 1987).
    Bca,
}

/// Settings of one bootstrap run; record them next to the result.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BootstrapConfig {
    /// Number of resamples B (≥ 2; default [`DEFAULT_RESAMPLES`]).
    pub resamples: usize,
    /// Seed of the ChaCha20 stream (`ChaCha20Rng::seed_from_u64`).
    pub seed: u64,
    /// Interval reported in [`BootstrapResult::interval`].
    pub method: BootstrapMethod,
    /// Two-sided confidence level in (0, 1).
    pub confidence: f64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        Self {
            resamples: DEFAULT_RESAMPLES,
            seed: 0,
            method: BootstrapMethod::Bca,
            confidence: 0.95,
        }
    }
}

/// Result of a Monte Carlo case or cluster bootstrap of a mean.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BootstrapResult {
    /// The estimate θ̂: mean of the case values (the lift `d̄` for paired differences).
    pub estimate: f64,
    /// The method requested.
    pub method: BootstrapMethod,
    /// The requested method's interval; `None` only when BCa was requested and is undefined.
    pub interval: Option<Interval>,
    /// Percentile interval (always defined).
    pub percentile: Interval,
    /// BCa interval; `None` with fewer than two sampled units, when every resample lies on one
    /// side of θ̂ (`z₀` infinite), or when `1 - a(z₀ + z)` is not positive.
    pub bca: Option<Interval>,
    /// Bootstrap standard error: sd of the B resampled means (denominator B - 1).
    pub standard_error: f64,
    /// BCa bias correction `z₀` (mid-rank for ties); `None` when infinite.
    pub bias_correction: Option<f64>,
    /// BCa acceleration `a` from the (case or cluster) jackknife; `None` with < 2 units.
    pub acceleration: Option<f64>,
    /// Resamples B drawn.
    pub resamples: usize,
    /// Seed used.
    pub seed: u64,
    /// Confidence level used.
    pub confidence: f64,
    /// Number of cases n.
    pub cases: usize,
    /// Units resampled: n cases, or C clusters.
    pub sampled_units: usize,
    /// Whether whole clusters were resampled.
    pub clustered: bool,
    /// The common denominator K when exact integer sums were used; `None` for the `f64` path.
    pub lattice_denominator: Option<u64>,
}

/// Percentile or BCa bootstrap interval for the mean of `values` (one per case), with the
/// defaults of [`BootstrapConfig`] at 95 %: e.g. one arm's pass rate from per-case rates when
/// K > 1. See [`bootstrap_mean`].
pub(crate) fn bootstrap_mean_interval(
    values: &[f64],
    clusters: Option<&Clusters>,
    resamples: usize,
    seed: u64,
    method: BootstrapMethod,
) -> Result<BootstrapResult, StatsError> {
    let config = BootstrapConfig {
        resamples,
        seed,
        method,
        ..BootstrapConfig::default()
    };
    bootstrap_mean(values, clusters, &config)
}

/// Case (or cluster) bootstrap of the mean of `values`, one finite value per case
/// (statistics.md §6.2).
///
/// Each of the B resamples draws n cases with replacement (with `clusters`: C whole clusters,
/// the statistic being the mean over the drawn clusters' cases) from the ChaCha20 stream seeded
/// with `config.seed`; indices come from Lemire's rule on 32-bit words, so a seed reproduces the
/// result exactly.
///
/// - Quantile rule (both intervals): inverse empirical CDF (Hyndman–Fan type 1): the quantile at
///   p is the smallest resampled mean θ* with `#{θ*_b ≤ θ*}/B ≥ p`, i.e. the `⌈pB⌉`-th smallest.
/// - BCa (Efron 1987): `z₀ = Φ⁻¹((#{θ* < θ̂} + ½#{θ* = θ̂})/B)`;
///   `a = Σ(θ̄₍.₎ - θ₍ᵢ₎)³ / (6[Σ(θ̄₍.₎ - θ₍ᵢ₎)²]^{3/2})` from the leave-one-case-out (or
///   leave-one-cluster-out) jackknife (a = 0 when all jackknife values are equal);
///   `αⱼ = Φ(z₀ + (z₀ + z_j)/(1 - a(z₀ + z_j)))` for `z_j = z_{α/2}, z_{1-α/2}`.
/// - Exactness: if all values are `k/K` for a common K ≤ 10⁶, sums are integers and ties are
///   exact; otherwise `f64` sums are used and ties with θ̂ are only approximate.
///
/// Degenerate data: n = 1 or all values identical → every θ* = θ̂, zero-width intervals
/// (BCa `None` with one unit). Errors: empty input, non-finite values, B < 2, bad confidence,
/// cluster length mismatch.
pub(crate) fn bootstrap_mean(
    values: &[f64],
    clusters: Option<&Clusters>,
    config: &BootstrapConfig,
) -> Result<BootstrapResult, StatsError> {
    check_finite("values", values)?;
    match common_denominator(values) {
        Some(denominator) => run(
            &to_lattice(values, denominator),
            Scale::Lattice(denominator),
            clusters,
            config,
        ),
        None => run(values, Scale::Float, clusters, config),
    }
}

/// Case (or cluster) bootstrap of the lift: the mean of paired differences
/// `d_i = with_values[i] - without_values[i]`, each value a case mean in `[0, 1]` (statistics.md
/// §6.2: keep both arms of a case together). Same method, rules and degenerate cases as
/// [`bootstrap_mean`]; the lattice K is common to both arms, so pass rates `k/K` give exact
/// integer sums of `k_A - k_B`.
///
/// Errors: arms of different length, values outside `[0, 1]` or non-finite, plus those of
/// [`bootstrap_mean`].
pub(crate) fn bootstrap_paired_difference(
    with_values: &[f64],
    without_values: &[f64],
    clusters: Option<&Clusters>,
    config: &BootstrapConfig,
) -> Result<BootstrapResult, StatsError> {
    check_unit_interval("with_values", with_values)?;
    check_unit_interval("without_values", without_values)?;
    if with_values.len() != without_values.len() {
        return Err(StatsError::LengthMismatch {
            what: "without_values",
            expected: with_values.len(),
            found: without_values.len(),
        });
    }
    let both: Vec<f64> = with_values.iter().chain(without_values).copied().collect();
    match common_denominator(&both) {
        Some(denominator) => {
            let with_units = to_lattice(with_values, denominator);
            let without_units = to_lattice(without_values, denominator);
            let differences: Vec<i64> = with_units
                .iter()
                .zip(&without_units)
                .map(|(a, b)| a - b)
                .collect();
            run(&differences, Scale::Lattice(denominator), clusters, config)
        }
        None => {
            let differences: Vec<f64> = with_values
                .iter()
                .zip(without_values)
                .map(|(a, b)| a - b)
                .collect();
            run(&differences, Scale::Float, clusters, config)
        }
    }
}

/// How unit sums map back to the values' scale.
#[derive(Clone, Copy)]
enum Scale {
    /// Sums are integers in units of `1/K`.
    Lattice(u64),
    /// Sums are plain `f64`.
    Float,
}

impl Scale {
    fn denominator(self) -> Option<u64> {
        match self {
            Scale::Lattice(k) => Some(k),
            Scale::Float => None,
        }
    }

    fn factor(self) -> f64 {
        match self {
            Scale::Lattice(k) => k as f64,
            Scale::Float => 1.0,
        }
    }
}

/// A per-unit sum: `i64` on the lattice (exact), `f64` otherwise.
trait UnitSum: Copy + Default + AddAssign + Sub<Output = Self> {
    /// Orders the means `a.0/a.1` and `b.0/b.1` (`a.1, b.1 > 0`).
    fn compare_means(a: (Self, u64), b: (Self, u64)) -> Ordering;
    fn to_f64(self) -> f64;
    /// Bit-for-bit equality (`-0.0` and `0.0` differ).
    fn same(self, other: Self) -> bool;
}

impl UnitSum for i64 {
    fn compare_means(a: (i64, u64), b: (i64, u64)) -> Ordering {
        (i128::from(a.0) * i128::from(b.1)).cmp(&(i128::from(b.0) * i128::from(a.1)))
    }

    fn to_f64(self) -> f64 {
        self as f64
    }

    fn same(self, other: Self) -> bool {
        self == other
    }
}

impl UnitSum for f64 {
    fn compare_means(a: (f64, u64), b: (f64, u64)) -> Ordering {
        (a.0 / a.1 as f64).total_cmp(&(b.0 / b.1 as f64))
    }

    fn to_f64(self) -> f64 {
        self
    }

    fn same(self, other: Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

fn run<T: UnitSum>(
    case_values: &[T],
    scale: Scale,
    clusters: Option<&Clusters>,
    config: &BootstrapConfig,
) -> Result<BootstrapResult, StatsError> {
    let z = check_confidence(config.confidence)?;
    if config.resamples < 2 {
        return Err(StatsError::TooFewResamples(config.resamples));
    }
    if case_values.is_empty() {
        return Err(StatsError::TooFewCases {
            what: "bootstrap",
            needed: 1,
            found: 0,
        });
    }
    let (unit_sums, unit_sizes) = match clusters {
        Some(clusters) => {
            clusters.check_cases(case_values.len())?;
            let mut sums = vec![T::default(); clusters.cluster_count()];
            let mut sizes = vec![0u64; clusters.cluster_count()];
            for (&value, &cluster) in case_values.iter().zip(clusters.cluster_of_case()) {
                sums[cluster] += value;
                sizes[cluster] += 1;
            }
            (sums, sizes)
        }
        None => (case_values.to_vec(), vec![1u64; case_values.len()]),
    };
    let unit_count = u32::try_from(unit_sums.len()).map_err(|_| StatsError::TooFewCases {
        what: "bootstrap (at most 2^32 - 1 units)",
        needed: 0,
        found: unit_sums.len(),
    })?;

    let mut total = T::default();
    for &sum in &unit_sums {
        total += sum;
    }
    let estimate_pair = (total, case_values.len() as u64);
    let to_mean = |(sum, size): (T, u64)| sum.to_f64() / (size as f64 * scale.factor());

    let mut draws = if all_units_alike(&unit_sums, &unit_sizes) {
        // Every resample draws `unit_count` copies of one unit: its sum is `total`, added in the
        // same order (bit-identical), whichever units the stream picks. Skipping the stream
        // changes nothing in the result (the generator is not used after the draws).
        vec![estimate_pair; config.resamples]
    } else {
        let words = config.resamples as u64 * u64::from(unit_count);
        with_seeded_words(config.seed, words, PREFETCH_MIN_WORDS, |words| {
            // One loop per kind of source, each with its word fetch inlined.
            match words {
                SeededWords::Drawn(rng) => {
                    draw_resamples(&unit_sums, &unit_sizes, unit_count, config.resamples, rng)
                }
                SeededWords::Prefetched(prefetched) => draw_resamples(
                    &unit_sums,
                    &unit_sizes,
                    unit_count,
                    config.resamples,
                    prefetched,
                ),
            }
        })
    };
    draws.sort_unstable_by(|a, b| T::compare_means(*a, *b));
    let less = draws.partition_point(|&d| T::compare_means(d, estimate_pair) == Ordering::Less);
    let less_or_equal =
        draws.partition_point(|&d| T::compare_means(d, estimate_pair) != Ordering::Greater);
    let means: Vec<f64> = draws.iter().map(|&d| to_mean(d)).collect();

    let jackknife: Vec<f64> = if unit_sums.len() >= 2 {
        unit_sums
            .iter()
            .zip(&unit_sizes)
            .map(|(&sum, &size)| to_mean((total - sum, estimate_pair.1 - size)))
            .collect()
    } else {
        Vec::new()
    };
    let summary = summarise(
        &SortedDistribution::Sample(&means),
        less as f64 / means.len() as f64,
        (less_or_equal - less) as f64 / means.len() as f64,
        &jackknife,
        z,
    );
    let estimate = to_mean(estimate_pair);
    Ok(BootstrapResult {
        estimate,
        method: config.method,
        interval: match config.method {
            BootstrapMethod::Percentile => Some(summary.percentile),
            BootstrapMethod::Bca => summary.bca,
        },
        percentile: summary.percentile,
        bca: summary.bca,
        standard_error: sample_standard_deviation(&means),
        bias_correction: summary.bias_correction,
        acceleration: summary.acceleration,
        resamples: config.resamples,
        seed: config.seed,
        confidence: config.confidence,
        cases: case_values.len(),
        sampled_units: unit_sums.len(),
        clustered: clusters.is_some(),
        lattice_denominator: scale.denominator(),
    })
}

/// Whether every unit has the same sum (bit for bit) and the same size: then every resample is
/// the same sequence of additions as the estimate (a metric that never differs between the
/// arms, or always by the same amount).
fn all_units_alike<T: UnitSum>(unit_sums: &[T], unit_sizes: &[u64]) -> bool {
    match (unit_sums.first(), unit_sizes.first()) {
        (Some(&sum), Some(&size)) => {
            unit_sums.iter().all(|&other| other.same(sum))
                && unit_sizes.iter().all(|&other| other == size)
        }
        _ => false,
    }
}

/// The resampling loop: B × (number of units) draws, no allocation inside.
fn draw_resamples<T: UnitSum>(
    unit_sums: &[T],
    unit_sizes: &[u64],
    unit_count: u32,
    resamples: usize,
    words: &mut impl Words,
) -> Vec<(T, u64)> {
    let mut draws = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut sum = T::default();
        let mut size = 0u64;
        for _ in 0..unit_count {
            let unit = uniform_below(words, unit_count) as usize;
            sum += unit_sums[unit];
            size += unit_sizes[unit];
        }
        draws.push((sum, size));
    }
    draws
}

/// A bootstrap distribution in ascending order: B equally weighted sample values, or an exact
/// distribution's support points with probabilities.
enum SortedDistribution<'a> {
    Sample(&'a [f64]),
    #[cfg(test)]
    Exact {
        support: &'a [f64],
        probabilities: &'a [f64],
    },
}

impl SortedDistribution<'_> {
    /// Inverse-CDF quantile: the smallest value whose cumulative probability reaches `p`.
    fn quantile(&self, p: f64) -> f64 {
        match self {
            SortedDistribution::Sample(values) => {
                let count = values.len();
                let rank = (p * count as f64 - 1e-9).ceil().clamp(1.0, count as f64) as usize;
                values[rank - 1]
            }
            #[cfg(test)]
            SortedDistribution::Exact {
                support,
                probabilities,
            } => {
                let mut cumulative = 0.0;
                for (value, probability) in support.iter().zip(probabilities.iter()) {
                    cumulative += probability;
                    if cumulative >= p - 1e-12 {
                        return *value;
                    }
                }
                *support.last().expect("non-empty distribution")
            }
        }
    }
}

struct Summary {
    percentile: Interval,
    bca: Option<Interval>,
    bias_correction: Option<f64>,
    acceleration: Option<f64>,
}

/// Percentile and BCa intervals from a sorted bootstrap distribution, the shares of it below and
/// equal to θ̂, and the jackknife values (empty when fewer than two units).
fn summarise(
    distribution: &SortedDistribution<'_>,
    share_below: f64,
    share_equal: f64,
    jackknife: &[f64],
    z: f64,
) -> Summary {
    let normal = Normal::standard();
    let alpha = 2.0 * normal.cdf(-z);
    let percentile = Interval {
        low: distribution.quantile(alpha / 2.0),
        high: distribution.quantile(1.0 - alpha / 2.0),
    };
    let mid_rank = share_below + 0.5 * share_equal;
    let bias_correction = (mid_rank > 0.0 && mid_rank < 1.0).then(|| normal.inverse_cdf(mid_rank));
    let acceleration = jackknife_acceleration(jackknife);
    let bca = match (bias_correction, acceleration) {
        (Some(z0), Some(a)) => {
            let adjusted = |z_j: f64| {
                let shifted = z0 + z_j;
                let denominator = 1.0 - a * shifted;
                (denominator > 0.0).then(|| normal.cdf(z0 + shifted / denominator))
            };
            match (adjusted(-z), adjusted(z)) {
                (Some(alpha_1), Some(alpha_2)) => Some(Interval {
                    low: distribution.quantile(alpha_1),
                    high: distribution.quantile(alpha_2),
                }),
                _ => None,
            }
        }
        _ => None,
    };
    Summary {
        percentile,
        bca,
        bias_correction,
        acceleration,
    }
}

/// `a = Σ(θ̄ - θᵢ)³ / (6[Σ(θ̄ - θᵢ)²]^{3/2})`; 0 when all θᵢ are equal; `None` for < 2 values.
fn jackknife_acceleration(jackknife: &[f64]) -> Option<f64> {
    if jackknife.len() < 2 {
        return None;
    }
    let mean = jackknife.iter().sum::<f64>() / jackknife.len() as f64;
    let (mut squares, mut cubes) = (0.0, 0.0);
    for value in jackknife {
        let deviation = mean - value;
        squares += deviation * deviation;
        cubes += deviation * deviation * deviation;
    }
    Some(if squares > 0.0 {
        cubes / (6.0 * squares.powf(1.5))
    } else {
        0.0
    })
}

/// Sample sd (denominator B - 1) of ascending `values`; exactly 0 when all are equal.
fn sample_standard_deviation(values: &[f64]) -> f64 {
    if values.len() < 2 || values.first() == values.last() {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (squares / (values.len() as f64 - 1.0)).sqrt()
}

/// The exact ("ideal", B → ∞) case bootstrap distribution of a mean, with its intervals.
#[cfg(test)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct IdealBootstrap {
    /// θ̂, the mean of the case values.
    pub estimate: f64,
    /// Percentile interval (inverse-CDF rule, as in [`bootstrap_mean`]).
    pub percentile: Interval,
    /// BCa interval (same definitions as [`bootstrap_mean`]); `None` when undefined.
    pub bca: Option<Interval>,
    /// Exact bootstrap SE `√(Σ(vᵢ - v̄)²/n)/√n`.
    pub standard_error: f64,
    /// `z₀` with mid-rank ties; `None` when infinite.
    pub bias_correction: Option<f64>,
    /// Jackknife acceleration `a`; `None` for n = 1.
    pub acceleration: Option<f64>,
    /// Common denominator K of the values.
    pub lattice_denominator: u64,
    /// Possible resampled means in ascending order (lattice step `1/(nK)`).
    pub support: Vec<f64>,
    /// `P*(θ* = support[j])`.
    pub probabilities: Vec<f64>,
}

/// Upper bound on convolution work (n × support × distinct values) for [`ideal_case_bootstrap`].
#[cfg(test)]
const MAX_IDEAL_WORK: f64 = 2e8;

/// The ideal case bootstrap of the mean of `values` (all resamples weighted exactly), computed as
/// the n-fold convolution of the empirical distribution of the lattice values `k/K`
/// (statistics.md §6.2 gives the D10 results of this computation). Use it for small n, or to
/// check the Monte Carlo path.
///
/// Returns `Ok(None)` when the values are not on a common lattice (see `common_denominator`)
/// or the convolution would exceed about 2·10⁸ operations. Errors: empty input, non-finite
/// values, bad confidence.
#[cfg(test)]
pub(crate) fn ideal_case_bootstrap(
    values: &[f64],
    confidence: f64,
) -> Result<Option<IdealBootstrap>, StatsError> {
    let z = check_confidence(confidence)?;
    check_finite("values", values)?;
    if values.is_empty() {
        return Err(StatsError::TooFewCases {
            what: "ideal bootstrap",
            needed: 1,
            found: 0,
        });
    }
    let Some(denominator) = common_denominator(values) else {
        return Ok(None);
    };
    let units = to_lattice(values, denominator);
    let n = units.len();
    let minimum = *units.iter().min().expect("non-empty");
    let maximum = *units.iter().max().expect("non-empty");
    let mut offsets: Vec<usize> = units.iter().map(|u| (u - minimum) as usize).collect();
    offsets.sort_unstable();
    let mut masses: Vec<(usize, f64)> = Vec::new();
    for offset in offsets {
        match masses.last_mut() {
            Some((last, mass)) if *last == offset => *mass += 1.0 / n as f64,
            _ => masses.push((offset, 1.0 / n as f64)),
        }
    }
    let support_len = (maximum - minimum) as usize * n + 1;
    if (n as f64) * (support_len as f64) * (masses.len() as f64) > MAX_IDEAL_WORK {
        return Ok(None);
    }
    let mut distribution = vec![0.0; support_len];
    let mut next = vec![0.0; support_len];
    distribution[0] = 1.0;
    let span = maximum - minimum;
    for draw in 0..n {
        next.iter_mut().for_each(|p| *p = 0.0);
        let reach = span as usize * draw;
        for (i, &p) in distribution.iter().enumerate().take(reach + 1) {
            if p == 0.0 {
                continue;
            }
            for &(offset, mass) in &masses {
                next[i + offset] += p * mass;
            }
        }
        std::mem::swap(&mut distribution, &mut next);
    }
    let scale = n as f64 * denominator as f64;
    let base = minimum * n as i64;
    let support: Vec<f64> = (0..support_len)
        .map(|i| (base + i as i64) as f64 / scale)
        .collect();
    let total: i64 = units.iter().sum();
    let estimate_index = (total - base) as usize;
    let share_below: f64 = distribution[..estimate_index].iter().sum();
    let share_equal = distribution[estimate_index];
    let jackknife: Vec<f64> = if n >= 2 {
        units
            .iter()
            .map(|&u| (total - u) as f64 / ((n - 1) as f64 * denominator as f64))
            .collect()
    } else {
        Vec::new()
    };
    let summary = summarise(
        &SortedDistribution::Exact {
            support: &support,
            probabilities: &distribution,
        },
        share_below,
        share_equal,
        &jackknife,
        z,
    );
    let mean = total as f64 / scale;
    let population_variance =
        values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
    Ok(Some(IdealBootstrap {
        estimate: mean,
        percentile: summary.percentile,
        bca: summary.bca,
        standard_error: (population_variance / n as f64).sqrt(),
        bias_correction: summary.bias_correction,
        acceleration: summary.acceleration,
        lattice_denominator: denominator,
        support,
        probabilities: distribution,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data::{self, assert_close};

    /// One lattice step of D10's bootstrap distribution: 1/(nK) = 1/50.
    const STEP: f64 = 0.02;

    fn ideal_d10() -> IdealBootstrap {
        ideal_case_bootstrap(&test_data::differences(), 0.95)
            .unwrap()
            .expect("D10 is on a lattice")
    }

    fn cdf_at(ideal: &IdealBootstrap, x: f64) -> f64 {
        ideal
            .support
            .iter()
            .zip(&ideal.probabilities)
            .filter(|(v, _)| **v <= x + 1e-9)
            .map(|(_, p)| p)
            .sum()
    }

    /// statistics.md §6.2 and §11: the ideal bootstrap of D10, reproduced exactly.
    #[test]
    fn ideal_bootstrap_reproduces_d10() {
        let ideal = ideal_d10();
        assert_eq!(ideal.lattice_denominator, 5);
        assert_close(ideal.estimate, 0.24, 1e-12);
        assert_close(ideal.support[1] - ideal.support[0], STEP, 1e-12);
        assert_close(ideal.probabilities.iter().sum::<f64>(), 1.0, 1e-12);
        for (x, expected) in [
            (0.0, 0.003849),
            (0.04, 0.015981),
            (0.06, 0.028940),
            (0.08, 0.048986),
            (0.40, 0.962941),
            (0.42, 0.976783),
            (0.44, 0.986004),
        ] {
            assert_close(cdf_at(&ideal, x), expected, 1e-6);
        }
        assert_close(cdf_at(&ideal, 0.22), 0.466333, 1e-6);
        assert_close(cdf_at(&ideal, 0.24) - cdf_at(&ideal, 0.22), 0.084658, 1e-6);
        assert_close(ideal.percentile.low, 0.06, 1e-12);
        assert_close(ideal.percentile.high, 0.42, 1e-12);
        assert_close(ideal.standard_error, 0.092952, 1e-6);
        let z0 = ideal.bias_correction.unwrap();
        let a = ideal.acceleration.unwrap();
        assert_close(z0, 0.021713, 1e-6);
        assert_close(a, 0.021517, 1e-6);
        let normal = Normal::standard();
        let z = normal.inverse_cdf(0.975);
        let level = |z_j: f64| normal.cdf(z0 + (z0 + z_j) / (1.0 - a * (z0 + z_j)));
        assert_close(level(-z), 0.032962, 1e-6);
        assert_close(level(z), 0.981765, 1e-6);
        let bca = ideal.bca.unwrap();
        assert_close(bca.low, 0.08, 1e-12);
        assert_close(bca.high, 0.44, 1e-12);
    }

    #[test]
    fn ideal_bootstrap_tiny_cases_are_exact() {
        let two = ideal_case_bootstrap(&[0.0, 1.0], 0.95).unwrap().unwrap();
        assert_eq!(two.support, vec![0.0, 0.5, 1.0]);
        assert_eq!(two.probabilities, vec![0.25, 0.5, 0.25]);
        assert_eq!(
            two.percentile,
            Interval {
                low: 0.0,
                high: 1.0
            }
        );
        assert_eq!(two.bias_correction, Some(0.0));
        assert_eq!(two.acceleration, Some(0.0));
        let one = ideal_case_bootstrap(&[0.4], 0.95).unwrap().unwrap();
        assert_eq!(
            one.percentile,
            Interval {
                low: 0.4,
                high: 0.4
            }
        );
        assert_eq!(one.bca, None);
        assert_eq!(one.standard_error, 0.0);
        let same = ideal_case_bootstrap(&[0.6; 5], 0.95).unwrap().unwrap();
        assert_eq!(
            same.bca,
            Some(Interval {
                low: 0.6,
                high: 0.6
            })
        );
        assert_eq!(
            ideal_case_bootstrap(&[0.5, std::f64::consts::FRAC_1_PI], 0.95),
            Ok(None)
        );
        assert!(ideal_case_bootstrap(&[], 0.95).is_err());
    }

    fn d10_config(seed: u64, method: BootstrapMethod) -> BootstrapConfig {
        BootstrapConfig {
            seed,
            method,
            ..BootstrapConfig::default()
        }
    }

    /// statistics.md §6.2: Monte Carlo with B = 10,000 lands on the ideal lattice points or one
    /// step (0.02) away; checked over several seeds.
    #[test]
    fn monte_carlo_matches_ideal_within_one_lattice_step() {
        let ideal = ideal_d10();
        let ideal_bca = ideal.bca.unwrap();
        for seed in [0, 1, 2, 3, 4, 20_240_601] {
            let r = bootstrap_paired_difference(
                &test_data::rates_with(),
                &test_data::rates_without(),
                None,
                &d10_config(seed, BootstrapMethod::Bca),
            )
            .unwrap();
            assert_eq!(r.lattice_denominator, Some(5));
            assert_eq!((r.cases, r.sampled_units, r.clustered), (10, 10, false));
            assert_close(r.estimate, 0.24, 1e-12);
            assert_close(r.percentile.low, ideal.percentile.low, STEP + 1e-9);
            assert_close(r.percentile.high, ideal.percentile.high, STEP + 1e-9);
            let bca = r.bca.unwrap();
            assert_eq!(r.interval, Some(bca));
            assert_close(bca.low, ideal_bca.low, STEP + 1e-9);
            assert_close(bca.high, ideal_bca.high, STEP + 1e-9);
            assert_close(r.standard_error, 0.092952, 0.003);
            assert_close(r.bias_correction.unwrap(), 0.021713, 0.04);
            assert_close(r.acceleration.unwrap(), 0.021517, 1e-6);
            // Every bound is a lattice point.
            for bound in [r.percentile.low, r.percentile.high, bca.low, bca.high] {
                assert_close((bound / STEP).round() * STEP, bound, 1e-12);
            }
        }
    }

    /// Golden value pinned for seed 20240601 (B = 10,000): changes only if the stream, the index
    /// rule, or the quantile rule change, which would break recorded runs' reproducibility.
    #[test]
    fn fixed_seed_golden_value() {
        let r = bootstrap_paired_difference(
            &test_data::rates_with(),
            &test_data::rates_without(),
            None,
            &d10_config(20_240_601, BootstrapMethod::Bca),
        )
        .unwrap();
        let round6 = |x: f64| (x * 1e6).round() / 1e6;
        let golden = (GOLDEN_PERCENTILE, GOLDEN_BCA, GOLDEN_SE, GOLDEN_Z0);
        assert_eq!(
            (
                r.percentile,
                r.bca.unwrap(),
                round6(r.standard_error),
                round6(r.bias_correction.unwrap())
            ),
            golden,
            "{r:?}"
        );
        let again = bootstrap_paired_difference(
            &test_data::rates_with(),
            &test_data::rates_without(),
            None,
            &d10_config(20_240_601, BootstrapMethod::Bca),
        )
        .unwrap();
        assert_eq!(r, again);
    }

    const GOLDEN_PERCENTILE: Interval = Interval {
        low: 0.06,
        high: 0.42,
    };
    const GOLDEN_BCA: Interval = Interval {
        low: 0.08,
        high: 0.44,
    };
    const GOLDEN_SE: f64 = 0.093458;
    const GOLDEN_Z0: f64 = 0.020054;

    #[test]
    fn paired_difference_equals_mean_of_differences() {
        let config = d10_config(9, BootstrapMethod::Percentile);
        let paired = bootstrap_paired_difference(
            &test_data::rates_with(),
            &test_data::rates_without(),
            None,
            &config,
        )
        .unwrap();
        let direct = bootstrap_mean(&test_data::differences(), None, &config).unwrap();
        assert_eq!(paired, direct);
        assert_eq!(paired.interval, Some(paired.percentile));
    }

    /// One arm's rate (K > 1): bootstrap of arm A's case means against its ideal bootstrap.
    #[test]
    fn arm_mean_interval_matches_its_ideal() {
        let values = test_data::rates_with();
        let ideal = ideal_case_bootstrap(&values, 0.95).unwrap().unwrap();
        let r = bootstrap_mean_interval(&values, None, DEFAULT_RESAMPLES, 5, BootstrapMethod::Bca)
            .unwrap();
        let step = 1.0 / 50.0;
        assert_close(r.estimate, 0.76, 1e-12);
        assert_close(r.percentile.low, ideal.percentile.low, step + 1e-9);
        assert_close(r.percentile.high, ideal.percentile.high, step + 1e-9);
        let (bca, ideal_bca) = (r.interval.unwrap(), ideal.bca.unwrap());
        assert_close(bca.low, ideal_bca.low, step + 1e-9);
        assert_close(bca.high, ideal_bca.high, step + 1e-9);
        assert!(bca.high <= 1.0);
    }

    #[test]
    fn cluster_bootstrap_resamples_whole_clusters() {
        let clusters = Clusters::from_labels(&test_data::CLUSTERS);
        let config = d10_config(11, BootstrapMethod::Percentile);
        let clustered = bootstrap_paired_difference(
            &test_data::rates_with(),
            &test_data::rates_without(),
            Some(&clusters),
            &config,
        )
        .unwrap();
        let plain = bootstrap_paired_difference(
            &test_data::rates_with(),
            &test_data::rates_without(),
            None,
            &config,
        )
        .unwrap();
        assert_eq!((clustered.sampled_units, clustered.clustered), (4, true));
        assert!(clustered.percentile.width() > plain.percentile.width());
        assert!(clustered.standard_error > plain.standard_error);
        // Cluster means are rationals with varying denominators; bounds are still exact means
        // of some resample: q/(5·m) for a case count m between 4 and 12.
        let low = clustered.percentile.low;
        assert!((4..=12).any(|m| {
            let scaled = low * 5.0 * m as f64;
            (scaled - scaled.round()).abs() < 1e-9
        }));
        // Singleton clusters reproduce the case bootstrap exactly (same units, same stream).
        let singletons = bootstrap_paired_difference(
            &test_data::rates_with(),
            &test_data::rates_without(),
            Some(&Clusters::singletons(10)),
            &config,
        )
        .unwrap();
        assert_eq!(singletons.percentile, plain.percentile);
        assert_eq!(singletons.standard_error, plain.standard_error);
    }

    #[test]
    fn float_fallback_for_general_scores() {
        let values: Vec<f64> = (0..40).map(|i| ((i as f64) * 0.37).sin().abs()).collect();
        let r = bootstrap_mean(&values, None, &BootstrapConfig::default()).unwrap();
        assert_eq!(r.lattice_denominator, None);
        let mean = values.iter().sum::<f64>() / 40.0;
        let ideal_se =
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 40.0).sqrt() / 40f64.sqrt();
        assert_close(r.standard_error, ideal_se, 0.05 * ideal_se);
        assert!(r.percentile.contains(mean) && r.bca.unwrap().contains(mean));
    }

    #[test]
    fn degenerate_inputs() {
        let config = BootstrapConfig::default();
        // n = 0
        assert!(matches!(
            bootstrap_mean(&[], None, &config),
            Err(StatsError::TooFewCases { .. })
        ));
        // n = 1: point interval, BCa undefined (no jackknife).
        let one = bootstrap_mean(&[0.4], None, &config).unwrap();
        assert_eq!(
            one.percentile,
            Interval {
                low: 0.4,
                high: 0.4
            }
        );
        assert_eq!(
            (one.bca, one.interval, one.standard_error),
            (None, None, 0.0)
        );
        // All identical (0/n and n/n everywhere): zero-width intervals, z₀ = 0, a = 0.
        for value in [0.0, 1.0] {
            let same =
                bootstrap_paired_difference(&[value; 6], &[value; 6], None, &config).unwrap();
            assert_eq!(
                same.percentile,
                Interval {
                    low: 0.0,
                    high: 0.0
                }
            );
            assert_eq!(
                same.bca,
                Some(Interval {
                    low: 0.0,
                    high: 0.0
                })
            );
            assert_eq!(
                (same.bias_correction, same.acceleration),
                (Some(0.0), Some(0.0))
            );
            assert_eq!(same.standard_error, 0.0);
        }
        // One cluster: every resample is the full sample.
        let single =
            bootstrap_mean(&[0.2, 0.6], Some(&Clusters::from_labels(&[0, 0])), &config).unwrap();
        assert_eq!(
            single.percentile,
            Interval {
                low: 0.4,
                high: 0.4
            }
        );
        assert_eq!(single.bca, None);
        // Errors.
        let too_few = BootstrapConfig {
            resamples: 1,
            ..config
        };
        assert_eq!(
            bootstrap_mean(&[0.1, 0.2], None, &too_few),
            Err(StatsError::TooFewResamples(1))
        );
        assert!(matches!(
            bootstrap_paired_difference(&[0.5, 1.2], &[0.5, 0.5], None, &config),
            Err(StatsError::OutsideUnitInterval { index: 1, .. })
        ));
        assert!(matches!(
            bootstrap_paired_difference(&[0.5], &[0.5, 0.5], None, &config),
            Err(StatsError::LengthMismatch { .. })
        ));
        assert!(matches!(
            bootstrap_mean(&[0.5, 0.5], Some(&Clusters::singletons(3)), &config),
            Err(StatsError::LengthMismatch { .. })
        ));
        assert!(matches!(
            bootstrap_mean(&[f64::INFINITY], None, &config),
            Err(StatsError::NonFinite { .. })
        ));
    }

    /// The shortcut for alike units (no stream drawn) gives exactly the draws the stream gives:
    /// on the lattice, in `f64` (values whose sums round), and for equal clusters.
    #[test]
    fn alike_units_shortcut_equals_the_drawn_resamples() {
        fn check<T: UnitSum + std::fmt::Debug + PartialEq>(sums: &[T], sizes: &[u64]) {
            assert!(all_units_alike(sums, sizes));
            let mut total = T::default();
            for &sum in sums {
                total += sum;
            }
            let n: u64 = sizes.iter().sum();
            let count = u32::try_from(sums.len()).unwrap();
            for seed in [0, 7, 42] {
                let drawn =
                    draw_resamples(sums, sizes, count, 500, &mut super::super::seeded_rng(seed));
                assert!(
                    drawn
                        .iter()
                        .all(|&(sum, size)| sum.same(total) && size == n),
                    "{drawn:?}"
                );
            }
        }
        check(&[3i64; 37], &[1; 37]);
        check(&[-2i64; 5], &[4; 5]);
        check(&[0.1f64; 1000], &[1; 1000]);
        check(&[-0.7f64; 12], &[3; 12]);
        assert!(!all_units_alike(&[1i64, 1, 2], &[1, 1, 1]));
        assert!(!all_units_alike(&[1i64, 1, 1], &[1, 2, 1]));
        assert!(!all_units_alike(&[0.0f64, -0.0], &[1, 1]));
        assert!(!all_units_alike::<i64>(&[], &[]));
        // Through the public entry: a constant difference gives the point interval.
        let result =
            bootstrap_paired_difference(&[0.5; 40], &[0.0; 40], None, &BootstrapConfig::default())
                .unwrap();
        assert_eq!(
            result.percentile,
            Interval {
                low: 0.5,
                high: 0.5
            }
        );
        assert_eq!(result.standard_error, 0.0);
    }

    /// All resamples above θ̂ cannot happen for a mean, but all-but-ties can: with n = 2 values
    /// {0, 1} and few resamples, z₀ may be infinite and BCa must then be None, not a panic.
    #[test]
    fn bca_undefined_when_no_resample_reaches_the_estimate_side() {
        let small = BootstrapConfig {
            resamples: 2,
            ..BootstrapConfig::default()
        };
        for seed in 0..64 {
            let config = BootstrapConfig { seed, ..small };
            let r = bootstrap_mean(&[0.0, 1.0], None, &config).unwrap();
            match r.bias_correction {
                Some(z0) => assert!(z0.is_finite()),
                None => assert_eq!(r.bca, None),
            }
        }
    }

    /// statistics.md §6.2 speed requirement: 10,000 resamples × 1,000 cases well under a second
    /// in release mode. Run with `cargo test --release -- --ignored bootstrap_speed`.
    #[test]
    #[ignore = "timing check; run in release mode"]
    fn bootstrap_speed_release() {
        let with: Vec<f64> = (0..1000).map(|i| ((i * 7) % 6) as f64 / 5.0).collect();
        let without: Vec<f64> = (0..1000).map(|i| ((i * 3) % 6) as f64 / 5.0).collect();
        let start = std::time::Instant::now();
        let r = bootstrap_paired_difference(&with, &without, None, &BootstrapConfig::default())
            .unwrap();
        let lattice = start.elapsed();
        let general: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.37).sin().abs()).collect();
        let start = std::time::Instant::now();
        bootstrap_mean(&general, None, &BootstrapConfig::default()).unwrap();
        let float = start.elapsed();
        crate::errln!(
            "lattice path {lattice:?}, float path {float:?}, {:?}",
            r.interval
        );
        assert!(lattice.as_secs_f64() < 1.0 && float.as_secs_f64() < 1.0);
    }
}
