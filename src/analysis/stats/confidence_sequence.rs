//! Anytime-valid confidence sequences for a bounded mean, by betting (statistics.md §12).
//!
//! Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting", JRSS-B
//! 2024 (arXiv 2010.09686): for observations `X_i ∈ [0, 1]` with conditional mean `m` given the
//! past, the capital process of a bettor who stakes a predictable fraction `λ_i(m)`
//!
//! ```text
//! K_t(m) = Π_{i≤t} (1 + λ_i(m) (X_i − m)),   λ_i(m) ∈ [−c/(1 − m), c/m]
//! ```
//!
//! is a non-negative martingale at the true mean, so by Ville's inequality it ever reaches `1/α`
//! with probability at most α. `C_t = {m : K_t(m) < 1/α}` is therefore a confidence sequence:
//! `P(∀t: m ∈ C_t) ≥ 1 − α`, and a decision taken at a data-dependent stopping time keeps its
//! error rate. The bets are the paper's aGRAPA ("approximate growth-rate adaptive to the
//! particular alternative"), which bets near the Kelly-optimal fraction for the
//! alternative the data suggest and so decides early when the mean is far from `m`:
//!
//! ```text
//! λ_t(m) = (μ̂_{t−1} − m) / (σ̂²_{t−1} + (μ̂_{t−1} − m)²),  truncated to [−c/(1 − m), c/m]
//! μ̂_t = (½ + Σ_{i≤t} X_i) / (t + 1),   σ̂²_t = (¼ + Σ_{i≤t} (X_i − μ̂_i)²) / (t + 1)
//! ```
//!
//! with `c = 0.9` ([`BET_TRUNCATION`]), so every factor stays ≥ 0.1 (no overflow or sign
//! change; computed in logarithms). The interval's ends are found on a grid of `m` and refined by bisection (the
//! hull of the kept grid points: never narrower than `C_t`); the reported interval is the
//! running intersection `∩_{s≤t} C_s` (also a confidence sequence).
//!
//! A paired lift uses per-case differences `d ∈ [−1, 1]` mapped to `X = (d + 1)/2`; the lift's
//! interval is `2m − 1` ([`PairedLiftSequence`]).

use serde::{Deserialize, Serialize};

use super::{Interval, StatsError};

/// Truncation of the bets: `−c/(1 − m) ≤ λ ≤ c/m`. The paper uses c = ½ or ¾; a paired lift's
/// observations rarely reach the far end of [0, 1], and the Kelly-optimal bet at a clear lift
/// lies beyond ½/m, so c = 0.9 (every factor stays ≥ 0.1; validity does not depend on c < 1).
/// Chosen by `scripts/check-sequential` (docs/statistics.md).
const BET_TRUNCATION: f64 = 0.9;
/// Grid points over `[0, 1]` before the interval's ends are refined by bisection.
const GRID: usize = 400;
/// Bisection steps refining each end (2⁻⁴⁰ of a grid cell).
const BISECTION_STEPS: usize = 40;

/// The betting confidence sequence of a mean in `[0, 1]` (Waudby-Smith & Ramdas 2024, aGRAPA
/// bets). Feed observations in their (exchangeable) order with
/// [`push`](Self::push); [`interval`](Self::interval) is valid at every step simultaneously.
///
/// The work per push is kept small without changing a single bit of the result (the
/// projection in `plan --pilot` pushes millions of observations): a grid point's capital is
/// brought up to date only when the interval's search reaches it (its terms are added in the
/// same order as an eager update would), and an end of `C_t` is refined by bisection only when
/// the running intersection can take it (an end whose grid cell lies outside the running
/// interval cannot move it, unless `C_t` misses the running interval altogether).
#[derive(Debug, Clone)]
pub(crate) struct BettingConfidenceSequence {
    alpha: f64,
    observations: Vec<f64>,
    /// The predictable mean and variance estimates `(μ̂_{i−1}, σ̂²_{i−1})` each observation's
    /// bet is made from (the observations before it only).
    estimates: Vec<(f64, f64)>,
    /// Running sums for μ̂ and σ̂².
    sum: f64,
    squared_deviations: f64,
    /// The running intersection of the intervals so far.
    running: Interval,
    /// `log K_s(m)` at every grid point `m = i / GRID`, summed term by term over the first
    /// `s = grid_terms[i]` observations (the terms of [`Self::log_capital`]; equal to it but for
    /// rounding), brought up to `t` when needed ([`Self::catch_up`]): O(GRID) per push at most,
    /// not O(GRID · t).
    grid_log_capital: Vec<f64>,
    /// `max(0, max_{s'≤s} log K_{s'}(m))` at every grid point (the p-value's running maximum),
    /// over the same `s` observations.
    grid_best_log_capital: Vec<f64>,
    /// Observations summed into each grid point's capital.
    grid_terms: Vec<usize>,
}

impl BettingConfidenceSequence {
    /// A sequence at miscoverage `alpha` (0.05: 95 %), before any observation (`[0, 1]`).
    pub(crate) fn new(alpha: f64) -> Result<Self, StatsError> {
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(StatsError::InvalidConfidence(1.0 - alpha));
        }
        Ok(Self {
            alpha,
            observations: Vec::new(),
            estimates: Vec::new(),
            sum: 0.0,
            squared_deviations: 0.0,
            running: Interval {
                low: 0.0,
                high: 1.0,
            },
            grid_log_capital: vec![0.0; GRID + 1],
            grid_best_log_capital: vec![0.0; GRID + 1],
            grid_terms: vec![0; GRID + 1],
        })
    }

    /// Observations so far.
    pub(crate) fn len(&self) -> usize {
        self.observations.len()
    }

    /// Add one observation in `[0, 1]`; returns the updated (running-intersection) interval.
    pub(crate) fn push(&mut self, x: f64) -> Result<Interval, StatsError> {
        if !(0.0..=1.0).contains(&x) {
            return Err(StatsError::OutOfRange {
                what: "confidence-sequence observation",
                value: x,
                low: 0.0,
                high: 1.0,
            });
        }
        let t = self.observations.len() + 1;
        // μ̂_{t−1} and σ̂²_{t−1} from the observations before this one (μ̂_0 = ½, σ̂²_0 = ¼).
        let mean_before = (0.5 + self.sum) / t as f64;
        let variance_before = (0.25 + self.squared_deviations) / t as f64;
        self.estimates.push((mean_before, variance_before));
        self.observations.push(x);
        self.sum += x;
        let mean = (0.5 + self.sum) / (t as f64 + 1.0);
        self.squared_deviations += (x - mean).powi(2);
        let now = self.current_ends();
        let running = self.running;
        let intersection = Interval {
            low: match now.low {
                // The refined end lies in (rejected, kept]: it cannot raise the running low.
                End::Between { kept, .. } if kept <= running.low => running.low,
                end => running.low.max(self.end_value(end)),
            },
            high: match now.high {
                // The refined end lies in [kept, rejected): it cannot lower the running high.
                End::Between { kept, .. } if kept >= running.high => running.high,
                end => running.high.min(self.end_value(end)),
            },
        };
        self.running = if intersection.low > intersection.high {
            // The intersection can only be empty at a miscoverage event; keep the latest.
            Interval {
                low: self.end_value(now.low),
                high: self.end_value(now.high),
            }
        } else {
            intersection
        };
        Ok(self.running)
    }

    /// The running interval of the mean (`[0, 1]` before any observation).
    pub(crate) fn interval(&self) -> Interval {
        self.running
    }

    /// log of the capital `K_t(m)` over all observations so far. The factors are multiplied
    /// in groups of [`PRODUCT_GROUP`] and each group's product is logged (one logarithm per
    /// group instead of per factor: the bisection of the interval's ends calls this often).
    pub(crate) fn log_capital(&self, m: f64) -> f64 {
        let mut capital = 0.0_f64;
        for (xs, estimates) in self
            .observations
            .chunks(PRODUCT_GROUP)
            .zip(self.estimates.chunks(PRODUCT_GROUP))
        {
            capital += group_log_product(m, xs, estimates);
        }
        capital
    }

    /// Bring grid point `i`'s capital and running maximum up to every observation, adding the
    /// missing terms in order (the same sums as an update at every push).
    fn catch_up(&mut self, i: usize) {
        let m = grid_point(i);
        let mut capital = self.grid_log_capital[i];
        let mut best = self.grid_best_log_capital[i];
        for (&x, &(mean, variance)) in self.observations[self.grid_terms[i]..]
            .iter()
            .zip(&self.estimates[self.grid_terms[i]..])
        {
            capital += log_factor(m, x, mean, variance);
            best = best.max(capital);
        }
        self.grid_log_capital[i] = capital;
        self.grid_best_log_capital[i] = best;
        self.grid_terms[i] = self.observations.len();
    }

    /// An anytime-valid p-value of `mean = m`: `min(1, 1 / max_{s≤t} K_s(m))` (Ville).
    pub(crate) fn p_value(&self, m: f64) -> f64 {
        let (start, mut capital, mut best) = match grid_index(m) {
            Some(i) => (
                self.grid_terms[i],
                self.grid_log_capital[i],
                self.grid_best_log_capital[i],
            ),
            None => (0, 0.0_f64, 0.0_f64),
        };
        for (&x, &(mean, variance)) in self.observations[start..]
            .iter()
            .zip(&self.estimates[start..])
        {
            capital += log_factor(m, x, mean, variance);
            best = best.max(capital);
        }
        (-best).exp().min(1.0)
    }

    /// Whether `m` is rejected now: `K_t(m) ≥ 1/α`.
    fn rejects(&self, m: f64) -> bool {
        self.log_capital(m) >= (1.0 / self.alpha).ln()
    }

    /// Whether grid point `i` is rejected now (from the cached capital, brought up to date).
    fn rejects_grid_point(&mut self, i: usize) -> bool {
        self.catch_up(i);
        self.grid_log_capital[i] >= (1.0 / self.alpha).ln()
    }

    /// `C_t` at the current step (not intersected with the earlier ones): the hull of the kept
    /// grid points, found from each end (the points between are not needed); each end is
    /// refined between its last rejected and its first kept grid point when asked for
    /// ([`End`]).
    fn current_ends(&mut self) -> Ends {
        let Some(first) = (0..=GRID).find(|&i| !self.rejects_grid_point(i)) else {
            // Every grid point rejected (possible only between grid points): the mean.
            let mean = self.sum / self.observations.len().max(1) as f64;
            return Ends {
                low: End::Exact(mean),
                high: End::Exact(mean),
            };
        };
        let last = (first..=GRID)
            .rev()
            .find(|&i| !self.rejects_grid_point(i))
            .unwrap_or(first);
        Ends {
            low: if first == 0 {
                End::Exact(0.0)
            } else {
                End::Between {
                    rejected: grid_point(first - 1),
                    kept: grid_point(first),
                }
            },
            high: if last == GRID {
                End::Exact(1.0)
            } else {
                End::Between {
                    rejected: grid_point(last + 1),
                    kept: grid_point(last),
                }
            },
        }
    }

    /// An end's value: refined by bisection when it is a grid cell.
    fn end_value(&self, end: End) -> f64 {
        match end {
            End::Exact(value) => value,
            End::Between { rejected, kept } => self.bisect(rejected, kept),
        }
    }

    /// The boundary between a rejected `m` and a kept one.
    fn bisect(&self, mut rejected: f64, mut kept: f64) -> f64 {
        for _ in 0..BISECTION_STEPS {
            let middle = 0.5 * (rejected + kept);
            if self.rejects(middle) {
                rejected = middle;
            } else {
                kept = middle;
            }
        }
        kept
    }
}

/// `log Π (1 + λ(m)(x − m))` over one group of observations (one logarithm).
#[inline]
fn group_log_product(m: f64, xs: &[f64], estimates: &[(f64, f64)]) -> f64 {
    let mut product = 1.0_f64;
    for (&x, &(mean, variance)) in xs.iter().zip(estimates) {
        product *= factor(m, x, mean, variance);
    }
    product.ln()
}

/// One end of `C_t`: known, or to be refined by bisection between a rejected and a kept grid
/// point ([`BettingConfidenceSequence::end_value`]).
#[derive(Debug, Clone, Copy)]
enum End {
    Exact(f64),
    Between { rejected: f64, kept: f64 },
}

/// Both ends of `C_t`.
#[derive(Debug, Clone, Copy)]
struct Ends {
    low: End,
    high: End,
}

/// Grid point `i` of `[0, 1]`.
fn grid_point(i: usize) -> f64 {
    i as f64 / GRID as f64
}

/// The index of `m` when it is exactly a grid point.
fn grid_index(m: f64) -> Option<usize> {
    let i = (m * GRID as f64).round();
    (0.0..=GRID as f64)
        .contains(&i)
        .then_some(i as usize)
        .filter(|&i| grid_point(i) == m)
}

/// Factors multiplied before one logarithm in [`BettingConfidenceSequence::log_capital`]. A
/// factor lies in `[1 − c, 1 + c·max((1 − m)/m, m/(1 − m))]`: at least 0.1, and at most about
/// 5·10¹⁴ for the smallest `m` the bisection reaches (2⁻⁴⁰ of the first grid cell), so a
/// product of 8 stays far inside the range of an f64.
const PRODUCT_GROUP: usize = 8;

/// `1 + λ(m) (x − m)` with the aGRAPA bet `λ(m)` from the predictable estimates
/// `(mean, variance)`, truncated to `[−c/(1 − m), c/m]`.
#[inline]
fn factor(m: f64, x: f64, mean: f64, variance: f64) -> f64 {
    let gap = mean - m;
    let mut bet = gap / (variance + gap * gap);
    if m > 0.0 {
        bet = bet.min(BET_TRUNCATION / m);
    }
    if m < 1.0 {
        bet = bet.max(-BET_TRUNCATION / (1.0 - m));
    }
    1.0 + bet * (x - m)
}

/// `log(1 + λ(m) (x − m))` ([`factor`]).
#[inline]
fn log_factor(m: f64, x: f64, mean: f64, variance: f64) -> f64 {
    factor(m, x, mean, variance).ln()
}

/// What a paired lift's confidence sequence says now.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct LiftSequenceState {
    /// Case differences observed.
    pub n: usize,
    /// Mean of the observed differences.
    pub estimate: Option<f64>,
    /// The running interval of the lift, in `[−1, 1]`.
    pub interval: Interval,
    /// Anytime-valid p-value of "no lift".
    pub p_value: f64,
}

/// The confidence sequence of a paired lift: per-case differences `d ∈ [−1, 1]` mapped to
/// `X = (d + 1)/2`, lift interval `2m − 1`.
#[derive(Debug, Clone)]
pub(crate) struct PairedLiftSequence {
    inner: BettingConfidenceSequence,
    sum: f64,
}

impl PairedLiftSequence {
    /// A sequence at miscoverage `alpha`.
    pub(crate) fn new(alpha: f64) -> Result<Self, StatsError> {
        Ok(Self {
            inner: BettingConfidenceSequence::new(alpha)?,
            sum: 0.0,
        })
    }

    /// Add one case difference in `[−1, 1]`.
    pub(crate) fn push(&mut self, difference: f64) -> Result<(), StatsError> {
        if !(-1.0..=1.0).contains(&difference) {
            return Err(StatsError::OutOfRange {
                what: "paired case difference",
                value: difference,
                low: -1.0,
                high: 1.0,
            });
        }
        self.inner.push((difference + 1.0) / 2.0)?;
        self.sum += difference;
        Ok(())
    }

    /// The current state (interval `[−1, 1]` before any difference).
    pub(crate) fn state(&self) -> LiftSequenceState {
        let m = self.inner.interval();
        let n = self.inner.len();
        LiftSequenceState {
            n,
            estimate: (n > 0).then(|| self.sum / n as f64),
            interval: Interval {
                low: 2.0 * m.low - 1.0,
                high: 2.0 * m.high - 1.0,
            },
            p_value: self.inner.p_value(0.5),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::sampling::seeded_rng;
    use rand::Rng;

    fn uniform(rng: &mut rand_chacha::ChaCha20Rng) -> f64 {
        (rng.next_u32() as f64 + 0.5) / 4_294_967_296.0
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(BettingConfidenceSequence::new(0.0).is_err());
        assert!(BettingConfidenceSequence::new(1.0).is_err());
        let mut cs = BettingConfidenceSequence::new(0.05).unwrap();
        assert!(cs.push(1.5).is_err());
        assert!(cs.push(f64::NAN).is_err());
        let mut lift = PairedLiftSequence::new(0.05).unwrap();
        assert!(lift.push(-1.01).is_err());
        assert_eq!(
            lift.state().interval,
            Interval {
                low: -1.0,
                high: 1.0
            }
        );
    }

    #[test]
    fn the_cached_grid_capital_is_the_recomputed_one() {
        let mut cs = BettingConfidenceSequence::new(0.05).unwrap();
        let mut rng = seeded_rng(5);
        for _ in 0..60 {
            cs.push(uniform(&mut rng)).unwrap();
        }
        for i in 0..=GRID {
            let m = grid_point(i);
            cs.catch_up(i);
            // Logged per factor (the cache) or per group of factors: equal but for rounding.
            let (cached, grouped) = (cs.grid_log_capital[i], cs.log_capital(m));
            assert!(
                (cached - grouped).abs() <= 1e-9 * cached.abs().max(1.0),
                "grid point {i}: {cached} {grouped}"
            );
        }
        // The p-value's running maximum, from the cache and recomputed off the grid.
        let on_grid = cs.p_value(0.5);
        let mut capital = 0.0_f64;
        let mut best = 0.0_f64;
        for (&x, &(mean, variance)) in cs.observations.iter().zip(&cs.estimates) {
            capital += log_factor(0.5, x, mean, variance);
            best = best.max(capital);
        }
        assert_eq!(on_grid, (-best).exp().min(1.0));
        assert_eq!(grid_index(0.5), Some(200));
        assert_eq!(grid_index(0.5001), None);
    }

    #[test]
    fn the_interval_shrinks_around_the_mean_and_is_nested() {
        let mut cs = BettingConfidenceSequence::new(0.05).unwrap();
        let mut rng = seeded_rng(3);
        let mut previous = cs.interval();
        for _ in 0..400 {
            let x = if uniform(&mut rng) < 0.3 { 1.0 } else { 0.0 };
            let now = cs.push(x).unwrap();
            assert!(now.low >= previous.low - 1e-12 && now.high <= previous.high + 1e-12);
            previous = now;
        }
        assert!(previous.contains(0.3), "{previous:?}");
        assert!(previous.width() < 0.2, "{previous:?}");
        assert!(cs.p_value(0.3) > 0.05);
        assert!(cs.p_value(0.6) < 1e-6);
    }

    /// Coverage by simulation: the running interval must hold the true mean at every step in at
    /// least 1 − α of the sequences (the guarantee is time-uniform, so this is conservative).
    #[test]
    fn time_uniform_coverage_by_simulation() {
        let reps = 300;
        let steps = 40;
        for (seed, true_mean, spread) in [(11_u64, 0.5, 0.5), (12, 0.65, 0.3), (13, 0.2, 0.2)] {
            let mut rng = seeded_rng(seed);
            let mut misses = 0;
            for _ in 0..reps {
                let mut cs = BettingConfidenceSequence::new(0.05).unwrap();
                let mut missed = false;
                for _ in 0..steps {
                    // A three-point distribution with the given mean (case differences of a
                    // paired binary trial map to 0, ½, 1).
                    let u = uniform(&mut rng);
                    let x = if u < spread / 2.0 {
                        true_mean - spread
                    } else if u < spread {
                        true_mean + spread
                    } else {
                        true_mean
                    }
                    .clamp(0.0, 1.0);
                    let interval = cs.push(x).unwrap();
                    missed |= !interval.contains(true_mean);
                }
                misses += usize::from(missed);
            }
            // 5 % allowed; with 300 repetitions, 9 % is beyond any binomial noise at 5 %.
            assert!(
                misses as f64 / reps as f64 <= 0.09,
                "mean {true_mean}: {misses}/{reps} sequences missed"
            );
        }
    }

    #[test]
    fn a_clear_lift_is_excluded_from_zero_and_no_lift_rarely_is() {
        let mut rng = seeded_rng(21);
        let mut lift = PairedLiftSequence::new(0.05).unwrap();
        for _ in 0..40 {
            // Lift 0.5: with passes 0.8, without 0.3.
            let with = f64::from(uniform(&mut rng) < 0.8);
            let without = f64::from(uniform(&mut rng) < 0.3);
            lift.push(with - without).unwrap();
        }
        let state = lift.state();
        assert!(state.interval.low > 0.0, "{state:?}");
        assert!(state.p_value < 0.05);
        let mut false_decisions = 0;
        for _ in 0..200 {
            let mut lift = PairedLiftSequence::new(0.05).unwrap();
            let mut decided = false;
            for _ in 0..40 {
                let with = f64::from(uniform(&mut rng) < 0.4);
                let without = f64::from(uniform(&mut rng) < 0.4);
                lift.push(with - without).unwrap();
                let interval = lift.state().interval;
                decided |= interval.low > 0.0 || interval.high < 0.0;
            }
            false_decisions += usize::from(decided);
        }
        assert!(false_decisions <= 16, "{false_decisions}/200");
    }

    /// The eager computation the sequence was first written as: every grid point updated at
    /// every push, every end probe summing all groups, the interval the hull of all kept points.
    struct Eager {
        alpha: f64,
        observations: Vec<f64>,
        estimates: Vec<(f64, f64)>,
        sum: f64,
        squared_deviations: f64,
        running: Interval,
        grid: Vec<f64>,
        best: Vec<f64>,
    }

    impl Eager {
        fn new(alpha: f64) -> Self {
            Self {
                alpha,
                observations: Vec::new(),
                estimates: Vec::new(),
                sum: 0.0,
                squared_deviations: 0.0,
                running: Interval {
                    low: 0.0,
                    high: 1.0,
                },
                grid: vec![0.0; GRID + 1],
                best: vec![0.0; GRID + 1],
            }
        }

        fn log_capital(&self, m: f64) -> f64 {
            let mut capital = 0.0_f64;
            for (xs, estimates) in self
                .observations
                .chunks(PRODUCT_GROUP)
                .zip(self.estimates.chunks(PRODUCT_GROUP))
            {
                let mut product = 1.0_f64;
                for (&x, &(mean, variance)) in xs.iter().zip(estimates) {
                    product *= factor(m, x, mean, variance);
                }
                capital += product.ln();
            }
            capital
        }

        fn bisect(&self, mut rejected: f64, mut kept: f64) -> f64 {
            for _ in 0..BISECTION_STEPS {
                let middle = 0.5 * (rejected + kept);
                if self.log_capital(middle) >= (1.0 / self.alpha).ln() {
                    rejected = middle;
                } else {
                    kept = middle;
                }
            }
            kept
        }

        fn push(&mut self, x: f64) -> (Interval, f64) {
            let t = self.observations.len() + 1;
            let mean_before = (0.5 + self.sum) / t as f64;
            let variance_before = (0.25 + self.squared_deviations) / t as f64;
            self.estimates.push((mean_before, variance_before));
            self.observations.push(x);
            for i in 0..=GRID {
                self.grid[i] += log_factor(grid_point(i), x, mean_before, variance_before);
                self.best[i] = self.best[i].max(self.grid[i]);
            }
            self.sum += x;
            let mean = (0.5 + self.sum) / (t as f64 + 1.0);
            self.squared_deviations += (x - mean).powi(2);
            let kept: Vec<usize> = (0..=GRID)
                .filter(|&i| self.grid[i] < (1.0 / self.alpha).ln())
                .collect();
            let now = match (kept.first(), kept.last()) {
                (Some(&first), Some(&last)) => Interval {
                    low: if first == 0 {
                        0.0
                    } else {
                        self.bisect(grid_point(first - 1), grid_point(first))
                    },
                    high: if last == GRID {
                        1.0
                    } else {
                        self.bisect(grid_point(last + 1), grid_point(last))
                    },
                },
                _ => {
                    let mean = self.sum / self.observations.len() as f64;
                    Interval {
                        low: mean,
                        high: mean,
                    }
                }
            };
            self.running = Interval {
                low: self.running.low.max(now.low),
                high: self.running.high.min(now.high),
            };
            if self.running.low > self.running.high {
                self.running = now;
            }
            (self.running, (-self.best[GRID / 2]).exp().min(1.0))
        }
    }

    /// The lazy grid and the bisection's group sums change no bit of any interval or p-value.
    #[test]
    fn the_lazy_sequence_is_the_eager_one_bit_for_bit() {
        let mut rng = seeded_rng(31);
        for (sequence, alpha) in (0..60).zip([0.05, 0.1, 0.01].into_iter().cycle()) {
            // Case differences of K = 1..3 paired attempts (mapped to [0, 1]) at varied lifts,
            // and continuous observations.
            let k = 1 + sequence % 3;
            let lift = (sequence % 7) as f64 / 6.0 - 0.5;
            let mut lazy = BettingConfidenceSequence::new(alpha).unwrap();
            let mut eager = Eager::new(alpha);
            for step in 0..70 {
                let x = if sequence % 5 == 4 {
                    uniform(&mut rng)
                } else {
                    let mut rate = |p: f64| {
                        (0..k)
                            .map(|_| f64::from(uniform(&mut rng) < p.clamp(0.0, 1.0)))
                            .sum::<f64>()
                            / k as f64
                    };
                    let (with, without) = (rate(0.4 + lift / 2.0), rate(0.4 - lift / 2.0));
                    (with - without + 1.0) / 2.0
                };
                let interval = lazy.push(x).unwrap();
                let (expected, p_value) = eager.push(x);
                assert_eq!(
                    (interval.low.to_bits(), interval.high.to_bits()),
                    (expected.low.to_bits(), expected.high.to_bits()),
                    "sequence {sequence}, step {step}: {interval:?} {expected:?}"
                );
                assert_eq!(lazy.p_value(0.5).to_bits(), p_value.to_bits());
            }
        }
    }
}
