//! Variance components, power and minimum detectable effect (MDE) for the paired, K-repeat
//! design (statistics.md §2 and §9; Miller, "Adding Error Bars to Evals", arXiv 2411.00640;
//! Connor, Biometrics 43:207, 1987 for K = 1 McNemar designs). Planning arithmetic only: the
//! caller decides what to print or warn about (e.g. a clamped negative variance).

use serde::{Deserialize, Serialize};
#[cfg(test)]
use statrs::distribution::StudentsT;
use statrs::distribution::{ContinuousCDF, Normal};

use super::{StatsError, check_finite};

/// Within-case variance of one binary case: `s² = K/(K-1)·r(1-r)` with `r = passes/trials`
/// (statistics.md §2). `None` when `trials < 2` or `passes > trials`.
pub(crate) fn binary_within_case_variance(passes: u64, trials: u64) -> Option<f64> {
    if trials < 2 || passes > trials {
        return None;
    }
    let k = trials as f64;
    let r = passes as f64 / k;
    Some(k / (k - 1.0) * r * (1.0 - r))
}

/// Miller's law-of-total-variance split of one arm's case means (statistics.md §2).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArmVarianceDecomposition {
    /// Cases n.
    pub cases: usize,
    /// Trials per case K.
    pub trials_per_case: f64,
    /// `S² = Σ(rᵢ - r̄)²/(n-1)`, variance of the case means.
    pub case_mean_variance: f64,
    /// `mean(sᵢ²)`, the average within-case (trial-to-trial) variance.
    pub mean_within_case_variance: f64,
    /// `mean(sᵢ²)/K`, the within-case part of `Var(rᵢ)`.
    pub within_term: f64,
    /// `Var(x)^ = max(0, S² - mean(sᵢ²)/K)`, variance of the cases' true pass probabilities.
    pub between_case_variance: f64,
    /// Whether `S² - mean(sᵢ²)/K` was negative and clamped to 0 (say so in the report).
    pub clamped: bool,
    /// `K* = mean(sᵢ²)/Var(x)^`: repeats beyond it buy less than more cases; `None` when
    /// `Var(x)^ = 0`.
    pub balancing_trials: Option<f64>,
}

/// Decomposes one arm's case-mean variance into between-case and within-case parts
/// (Miller 2024 §3; statistics.md §2): `Var(rᵢ) = Var(x) + E[σ²]/K`.
///
/// `case_means[i] = rᵢ`, `within_case_variances[i] = sᵢ²` (e.g. from
/// [`binary_within_case_variance`]), `trials_per_case = K > 0`.
/// Errors: fewer than 2 cases, length mismatch, non-finite inputs, `K ≤ 0`.
#[cfg(test)]
pub(crate) fn arm_variance_decomposition(
    case_means: &[f64],
    within_case_variances: &[f64],
    trials_per_case: f64,
) -> Result<ArmVarianceDecomposition, StatsError> {
    let (case_mean_variance, mean_within_case_variance) =
        checked_variances(case_means, within_case_variances, "within_case_variances")?;
    check_trials(trials_per_case)?;
    let within_term = mean_within_case_variance / trials_per_case;
    let raw = case_mean_variance - within_term;
    let between_case_variance = raw.max(0.0);
    Ok(ArmVarianceDecomposition {
        cases: case_means.len(),
        trials_per_case,
        case_mean_variance,
        mean_within_case_variance,
        within_term,
        between_case_variance,
        clamped: raw < 0.0,
        balancing_trials: (between_case_variance > 0.0)
            .then(|| mean_within_case_variance / between_case_variance),
    })
}

/// Miller's split of the paired differences' variance (statistics.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct DifferenceVarianceDecomposition {
    /// Cases n.
    pub cases: usize,
    /// `S_d²`, sample variance (n-1) of the differences `dᵢ`.
    pub difference_variance: f64,
    /// `mean(s_A²)/K_A + mean(s_B²)/K_B`.
    pub within_term: f64,
    /// `ω²^ = max(0, S_d² - within_term)`, the between-case variance of the true lift.
    pub omega_squared: f64,
    /// Whether the raw estimate was negative and clamped to 0.
    pub clamped: bool,
}

/// Estimates `ω² = Var(x_A - x_B)` from paired differences and each arm's within-case variances
/// (statistics.md §2): `ω²^ = max(0, S_d² - mean(s_A²)/K_A - mean(s_B²)/K_B)`, assuming
/// independent sampling of the two arms within a case.
/// Errors: fewer than 2 cases, length mismatch, non-finite inputs, `K ≤ 0`.
pub(crate) fn difference_variance_decomposition(
    differences: &[f64],
    within_variances_a: &[f64],
    trials_a: f64,
    within_variances_b: &[f64],
    trials_b: f64,
) -> Result<DifferenceVarianceDecomposition, StatsError> {
    let (difference_variance, mean_a) =
        checked_variances(differences, within_variances_a, "within_variances_a")?;
    let (_, mean_b) = checked_variances(differences, within_variances_b, "within_variances_b")?;
    check_trials(trials_a)?;
    check_trials(trials_b)?;
    let within_term = mean_a / trials_a + mean_b / trials_b;
    let raw = difference_variance - within_term;
    Ok(DifferenceVarianceDecomposition {
        cases: differences.len(),
        difference_variance,
        within_term,
        omega_squared: raw.max(0.0),
        clamped: raw < 0.0,
    })
}

/// Planning inputs for a paired design: `Var(dᵢ) = ω² + σ_A²/K_A + σ_B²/K_B`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PairedVarianceComponents {
    /// Between-case variance of the true lift `ω²`.
    pub omega_squared: f64,
    /// Within-case variance `σ_A²` of arm A (binary: mean `x(1-x)`).
    pub within_variance_a: f64,
    /// Trials per case `K_A`.
    pub trials_a: f64,
    /// Within-case variance `σ_B²` of arm B.
    pub within_variance_b: f64,
    /// Trials per case `K_B`.
    pub trials_b: f64,
}

impl PairedVarianceComponents {
    /// `ω² + σ_A²/K_A + σ_B²/K_B`, the variance of one case's difference.
    pub(crate) fn difference_variance(&self) -> f64 {
        self.omega_squared
            + self.within_variance_a / self.trials_a
            + self.within_variance_b / self.trials_b
    }

    fn is_valid(&self) -> bool {
        let values = [
            self.omega_squared,
            self.within_variance_a,
            self.trials_a,
            self.within_variance_b,
            self.trials_b,
        ];
        values.iter().all(|v| v.is_finite() && *v >= 0.0)
            && self.trials_a > 0.0
            && self.trials_b > 0.0
    }
}

/// A required number of cases: the formula's real value and its ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SampleSize {
    /// Unrounded n from the formula.
    pub exact: f64,
    /// `⌈exact⌉` (with a 1e-9 guard so 63.0000000001 stays 63).
    pub cases: u64,
}

impl SampleSize {
    fn from_exact(exact: f64) -> Self {
        Self {
            exact,
            cases: (exact - 1e-9).ceil().max(1.0) as u64,
        }
    }
}

/// Minimum detectable lift of a paired design with `cases` cases (Miller 2024 §5; statistics.md
/// §9.1): `MDE = (z_{1-α/2} + z_{power})·√(Var(dᵢ)/n)`, in rate units (×100 for pp).
/// `None` for `cases = 0`, invalid components, or `alpha`/`power` outside (0, 1).
pub(crate) fn minimum_detectable_effect(
    components: &PairedVarianceComponents,
    cases: u64,
    alpha: f64,
    power: f64,
) -> Option<f64> {
    if cases == 0 || !components.is_valid() {
        return None;
    }
    Some(
        normal_multiplier(alpha, power)? * (components.difference_variance() / cases as f64).sqrt(),
    )
}

/// Cases needed to detect a lift of `lift` (statistics.md §9.1):
/// `n = (z_{1-α/2} + z_{power})²·Var(dᵢ)/δ²`. `None` for `lift = 0`, invalid components, or
/// `alpha`/`power` outside (0, 1).
pub(crate) fn cases_needed(
    components: &PairedVarianceComponents,
    lift: f64,
    alpha: f64,
    power: f64,
) -> Option<SampleSize> {
    if lift == 0.0 || !lift.is_finite() || !components.is_valid() {
        return None;
    }
    let multiplier = normal_multiplier(alpha, power)?;
    Some(SampleSize::from_exact(
        multiplier * multiplier * components.difference_variance() / (lift * lift),
    ))
}

/// MDE of a finished run, to print next to its lift (statistics.md §9.1).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ObservedMinimumDetectableEffect {
    /// `(z_{1-α/2} + z_{power})·sd(d)/√n`.
    pub normal: f64,
    /// `(t_{n-1,1-α/2} + t_{n-1,power})·sd(d)/√n`.
    pub t_based: f64,
}

/// Observed MDE from the run's paired differences. `None` when n < 2, a value is not finite,
/// or `alpha`/`power` are outside (0, 1). D10: 0.2745 (t-based 0.3082).
#[cfg(test)]
pub(crate) fn observed_minimum_detectable_effect(
    differences: &[f64],
    alpha: f64,
    power: f64,
) -> Option<ObservedMinimumDetectableEffect> {
    let n = differences.len();
    if n < 2 || check_finite("differences", differences).is_err() {
        return None;
    }
    let multiplier = normal_multiplier(alpha, power)?;
    let standard_error = (sample_variance(differences) / n as f64).sqrt();
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
    let t_multiplier = t.inverse_cdf(1.0 - alpha / 2.0) + t.inverse_cdf(power);
    Some(ObservedMinimumDetectableEffect {
        normal: multiplier * standard_error,
        t_based: t_multiplier * standard_error,
    })
}

/// Cases for a K = 1 paired binary design analysed with McNemar's test (Connor 1987;
/// statistics.md §9.2): `n = [z_{1-α/2}√ψ + z_{power}√(ψ - δ²)]²/δ²` with `ψ` the expected
/// discordant share `p_b + p_c` and `δ = p_b - p_c` the lift.
/// `None` unless `0 < |δ| ≤ ψ ≤ 1` and `alpha`, `power` lie in (0, 1).
#[cfg(test)]
pub(crate) fn mcnemar_cases_needed(
    discordant_share: f64,
    lift: f64,
    alpha: f64,
    power: f64,
) -> Option<SampleSize> {
    if !(lift != 0.0 && lift.abs() <= discordant_share && discordant_share <= 1.0) {
        return None;
    }
    let (z_alpha, z_power) = normal_quantiles(alpha, power)?;
    let root = z_alpha * discordant_share.sqrt()
        + z_power * (discordant_share - lift * lift).max(0.0).sqrt();
    Some(SampleSize::from_exact(root * root / (lift * lift)))
}

fn normal_quantiles(alpha: f64, power: f64) -> Option<(f64, f64)> {
    let in_unit = |x: f64| x > 0.0 && x < 1.0;
    if !in_unit(alpha) || !in_unit(power) {
        return None;
    }
    let normal = Normal::standard();
    Some((
        normal.inverse_cdf(1.0 - alpha / 2.0),
        normal.inverse_cdf(power),
    ))
}

/// `z_{1-α/2} + z_{power}` (2.801585 at α = 0.05, power 0.8).
fn normal_multiplier(alpha: f64, power: f64) -> Option<f64> {
    normal_quantiles(alpha, power).map(|(a, b)| a + b)
}

fn sample_variance(values: &[f64]) -> f64 {
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (values.len() as f64 - 1.0)
}

/// Validates a per-case value slice and its within-variance slice; returns
/// `(sample variance of values, mean of within variances)`.
fn checked_variances(
    values: &[f64],
    within: &[f64],
    within_name: &'static str,
) -> Result<(f64, f64), StatsError> {
    check_finite("values", values)?;
    check_finite(within_name, within)?;
    if values.len() < 2 {
        return Err(StatsError::TooFewCases {
            what: "variance decomposition",
            needed: 2,
            found: values.len(),
        });
    }
    if within.len() != values.len() {
        return Err(StatsError::LengthMismatch {
            what: within_name,
            expected: values.len(),
            found: within.len(),
        });
    }
    Ok((
        sample_variance(values),
        within.iter().sum::<f64>() / within.len() as f64,
    ))
}

fn check_trials(trials: f64) -> Result<(), StatsError> {
    if trials.is_finite() && trials > 0.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidTrials(trials))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data::{self, assert_close};

    fn within(passes: &[u64]) -> Vec<f64> {
        passes
            .iter()
            .map(|&k| binary_within_case_variance(k, test_data::TRIALS).unwrap())
            .collect()
    }

    /// statistics.md §2 and §11: Miller decomposition of D10.
    #[test]
    fn miller_decomposition_reproduces_d10() {
        let a = arm_variance_decomposition(
            &test_data::rates_with(),
            &within(&test_data::PASSES_WITH),
            5.0,
        )
        .unwrap();
        assert_close(a.case_mean_variance, 0.087111, 1e-6);
        assert_close(a.mean_within_case_variance, 0.13, 1e-12);
        assert_close(a.within_term, 0.026, 1e-12);
        assert_close(a.between_case_variance, 0.061111, 1e-6);
        assert_close(a.balancing_trials.unwrap(), 2.13, 0.005);
        assert!(!a.clamped);
        let b = arm_variance_decomposition(
            &test_data::rates_without(),
            &within(&test_data::PASSES_WITHOUT),
            5.0,
        )
        .unwrap();
        assert_close(b.case_mean_variance, 0.081778, 1e-6);
        assert_close(b.mean_within_case_variance, 0.22, 1e-12);
        assert_close(b.within_term, 0.044, 1e-12);
        assert_close(b.between_case_variance, 0.037778, 1e-6);
        assert_close(b.balancing_trials.unwrap(), 5.82, 0.005);
        let d = difference_variance_decomposition(
            &test_data::differences(),
            &within(&test_data::PASSES_WITH),
            5.0,
            &within(&test_data::PASSES_WITHOUT),
            5.0,
        )
        .unwrap();
        assert_close(d.difference_variance, 0.096, 1e-12);
        assert_close(d.within_term, 0.07, 1e-12);
        assert_close(d.omega_squared, 0.026, 1e-12);
        assert!(!d.clamped);
    }

    #[test]
    fn decomposition_degenerate_inputs() {
        // Negative estimate is clamped and flagged; K* undefined.
        let clamped = arm_variance_decomposition(&[0.4, 0.6], &[0.3, 0.3], 5.0).unwrap();
        assert!(clamped.clamped);
        assert_eq!(clamped.between_case_variance, 0.0);
        assert_eq!(clamped.balancing_trials, None);
        // All identical case means, no within variance (all 0/K or K/K).
        let flat = arm_variance_decomposition(&[1.0; 4], &[0.0; 4], 5.0).unwrap();
        assert_eq!(
            (flat.case_mean_variance, flat.between_case_variance),
            (0.0, 0.0)
        );
        assert!(!flat.clamped);
        assert!(matches!(
            arm_variance_decomposition(&[0.5], &[0.1], 5.0),
            Err(StatsError::TooFewCases { .. })
        ));
        assert!(arm_variance_decomposition(&[], &[], 5.0).is_err());
        assert!(matches!(
            arm_variance_decomposition(&[0.5, 0.4], &[0.1], 5.0),
            Err(StatsError::LengthMismatch { .. })
        ));
        assert_eq!(
            arm_variance_decomposition(&[0.5, 0.4], &[0.1, 0.1], 0.0),
            Err(StatsError::InvalidTrials(0.0))
        );
        assert_eq!(binary_within_case_variance(1, 1), None);
        assert_eq!(binary_within_case_variance(3, 2), None);
        assert_eq!(binary_within_case_variance(0, 5), Some(0.0));
        assert_eq!(binary_within_case_variance(5, 5), Some(0.0));
        assert_eq!(binary_within_case_variance(1, 2), Some(0.5));
    }

    fn illustrative(omega_squared: f64, trials: f64) -> PairedVarianceComponents {
        PairedVarianceComponents {
            omega_squared,
            within_variance_a: 0.15,
            trials_a: trials,
            within_variance_b: 0.15,
            trials_b: trials,
        }
    }

    /// statistics.md §9.1 MDE table (all 20 cells, both ω² values) and §11 (0.1447).
    #[test]
    fn mde_reproduces_reference_table() {
        let table: [(u64, [(f64, f64); 4]); 5] = [
            (20, [(35.4, 37.1), (21.7, 24.3), (17.7, 20.8), (14.0, 17.7)]),
            (30, [(28.9, 30.3), (17.7, 19.8), (14.5, 17.0), (11.4, 14.5)]),
            (50, [(22.4, 23.4), (13.7, 15.3), (11.2, 13.1), (8.9, 11.2)]),
            (100, [(15.8, 16.6), (9.7, 10.9), (7.9, 9.3), (6.3, 7.9)]),
            (200, [(11.2, 11.7), (6.9, 7.7), (5.6, 6.6), (4.4, 5.6)]),
        ];
        for (cases, row) in table {
            for (trials, (low_omega, high_omega)) in [1.0, 3.0, 5.0, 10.0].into_iter().zip(row) {
                let mde = |omega| {
                    100.0
                        * minimum_detectable_effect(&illustrative(omega, trials), cases, 0.05, 0.8)
                            .unwrap()
                };
                assert_close(mde(0.02), low_omega, 0.05 + 1e-9);
                assert_close(mde(0.05), high_omega, 0.05 + 1e-9);
            }
        }
        let headline = minimum_detectable_effect(&illustrative(0.02, 5.0), 30, 0.05, 0.8).unwrap();
        assert_close(headline, 0.1447, 5e-5);
    }

    /// statistics.md §9.1: cases needed for a 10 pp lift.
    #[test]
    fn cases_needed_reproduces_reference() {
        let exact = [251.16, 94.19, 62.79, 39.24];
        let rounded_low = [252, 95, 63, 40];
        let rounded_high = [275, 118, 87, 63];
        for (i, trials) in [1.0, 3.0, 5.0, 10.0].into_iter().enumerate() {
            let low = cases_needed(&illustrative(0.02, trials), 0.10, 0.05, 0.8).unwrap();
            assert_close(low.exact, exact[i], 0.005 + 1e-9);
            assert_eq!(low.cases, rounded_low[i]);
            let high = cases_needed(&illustrative(0.05, trials), 0.10, 0.05, 0.8).unwrap();
            assert_eq!(high.cases, rounded_high[i]);
        }
        // Negative lift needs the same n.
        assert_eq!(
            cases_needed(&illustrative(0.02, 5.0), -0.10, 0.05, 0.8)
                .unwrap()
                .cases,
            63
        );
    }

    /// statistics.md §9.1: observed MDE and projections from D10's ω²^ = 0.026.
    #[test]
    fn observed_mde_and_projection_reproduce_d10() {
        let observed =
            observed_minimum_detectable_effect(&test_data::differences(), 0.05, 0.8).unwrap();
        assert_close(observed.normal, 0.2745, 5e-5);
        assert_close(observed.t_based, 0.3082, 5e-5);
        let projection = |trials: f64| PairedVarianceComponents {
            omega_squared: 0.026,
            within_variance_a: 0.13,
            trials_a: trials,
            within_variance_b: 0.22,
            trials_b: trials,
        };
        let mde = |trials, cases| {
            minimum_detectable_effect(&projection(trials), cases, 0.05, 0.8).unwrap()
        };
        assert_close(mde(5.0, 30), 0.1585, 5e-5);
        assert_close(mde(10.0, 30), 0.1263, 5e-5);
        assert_close(mde(20.0, 50), 0.0826, 5e-5);
        let five = cases_needed(&projection(5.0), 0.10, 0.05, 0.8).unwrap();
        assert_close(five.exact, 75.35, 0.005);
        assert_eq!(five.cases, 76);
        let ten = cases_needed(&projection(10.0), 0.10, 0.05, 0.8).unwrap();
        assert_close(ten.exact, 47.88, 0.005);
        assert_eq!(ten.cases, 48);
    }

    /// statistics.md §9.2 Connor table and §11.
    #[test]
    fn connor_reproduces_reference_table() {
        for (psi, delta, exact, cases) in [
            (0.3, 0.10, 233.09, 234),
            (0.2, 0.10, 154.60, 155),
            (0.4, 0.10, 311.59, 312),
            (0.3, 0.05, 939.50, 940),
            (0.2, 0.20, 36.79, 37),
        ] {
            let n = mcnemar_cases_needed(psi, delta, 0.05, 0.8).unwrap();
            assert_close(n.exact, exact, 0.005 + 1e-9);
            assert_eq!(n.cases, cases);
        }
    }

    #[test]
    fn power_degenerate_inputs() {
        let c = illustrative(0.02, 5.0);
        assert_eq!(minimum_detectable_effect(&c, 0, 0.05, 0.8), None);
        assert_eq!(minimum_detectable_effect(&c, 30, 0.0, 0.8), None);
        assert_eq!(minimum_detectable_effect(&c, 30, 0.05, 1.0), None);
        assert_eq!(cases_needed(&c, 0.0, 0.05, 0.8), None);
        assert_eq!(cases_needed(&illustrative(0.02, 0.0), 0.1, 0.05, 0.8), None);
        assert_eq!(mcnemar_cases_needed(0.1, 0.2, 0.05, 0.8), None, "|δ| > ψ");
        assert_eq!(mcnemar_cases_needed(0.3, 0.0, 0.05, 0.8), None);
        assert_eq!(observed_minimum_detectable_effect(&[0.2], 0.05, 0.8), None);
        assert_eq!(observed_minimum_detectable_effect(&[], 0.05, 0.8), None);
        let flat = observed_minimum_detectable_effect(&[0.2; 5], 0.05, 0.8).unwrap();
        assert_close(flat.normal, 0.0, 1e-12);
        // All variance zero: nothing is needed beyond one case.
        let zero = PairedVarianceComponents {
            omega_squared: 0.0,
            within_variance_a: 0.0,
            trials_a: 1.0,
            within_variance_b: 0.0,
            trials_b: 1.0,
        };
        assert_eq!(cases_needed(&zero, 0.1, 0.05, 0.8).unwrap().cases, 1);
        assert_eq!(minimum_detectable_effect(&zero, 10, 0.05, 0.8), Some(0.0));
    }
}
