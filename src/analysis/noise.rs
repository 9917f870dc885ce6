//! Noise decomposition (statistics.md §2 and the end of §6.4): how much of the variance of a
//! case's value comes from the cases themselves, from attempts (the agent's run-to-run noise)
//! and from judge repeats, per arm, so a user sees whether to add cases, attempts or judge
//! repeats. The pass rate gets cases and attempts (one pass decision per attempt); every judge
//! metric graded with `--judge-k J > 1` gets all three.
//!
//! Law of total variance for one arm, case i with K attempts and J judge repeats per attempt:
//! `Var(r_i) = σ²_case + σ²_attempt/K + σ²_judge/(K·J)`. Estimators (method of moments):
//! `σ²_judge^ = mean over attempts of the repeats' sample variance`;
//! `σ²_attempt^ = max(0, mean_i(s_i²) − σ²_judge^/J)`, `s_i²` the sample variance of case i's
//! attempt scores; `σ²_case^ = max(0, S² − mean_i(s_i²/K_i))`, `S²` the sample variance of the
//! case means. A negative raw estimate is clamped at 0 and listed in `clamped`.
//! For binary attempts `s_i² = K/(K−1)·r_i(1 − r_i)`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analysis::stats::{self, Clusters};

use super::{MDE_ALPHA, MDE_POWER};

/// One arm's variance components of one score (a fraction², per case value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArmNoise {
    /// Cases with a value (paired cases).
    pub n_cases: usize,
    /// Mean attempts per case K.
    pub attempts_per_case: f64,
    /// Judge repeats per attempt J (`None` for the pass rate: one decision per attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_repeats: Option<u32>,
    /// `S²`, the sample variance of the case values.
    pub total: f64,
    /// `σ²_case`: variance of the cases' true values (contributes fully to `S²`).
    pub case_variance: f64,
    /// `σ²_attempt`: attempt-to-attempt variance inside a case (contributes `/K`).
    pub attempt_variance: Option<f64>,
    /// `σ²_judge`: repeat-to-repeat variance of the judge on one attempt (contributes `/(K·J)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_variance: Option<f64>,
    /// Share of `S²` from cases, attempts and judge repeats (sums to 1 when `S² > 0`).
    pub shares: NoiseShares,
    /// Components whose raw estimate was negative and clamped at 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clamped: Vec<String>,
}

/// Shares of the case-value variance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NoiseShares {
    pub cases: Option<f64>,
    pub attempts: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_repeats: Option<f64>,
}

/// The decomposition of one score in both arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScoreNoise {
    /// `pass_rate` or a judge metric's name.
    pub score: String,
    pub with_skill: Option<ArmNoise>,
    pub without_skill: Option<ArmNoise>,
}

/// What a bigger run would buy: the MDE of the pass-rate lift projected from the paired
/// variance components `Var(d_i) = ω² + σ²_A/K + σ²_B/K` (Miller 2024; statistics.md §9.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MdeProjection {
    /// `ω²^`, between-case variance of the true lift (clamped at 0: see `omega_clamped`).
    pub omega_squared: f64,
    pub omega_clamped: bool,
    /// MDE (normal approximation, α = 0.05, power 0.8) at this run's N and K.
    pub current: f64,
    /// With twice the cases.
    pub twice_the_cases: f64,
    /// With twice the attempts per case.
    pub twice_the_attempts: f64,
}

/// `noise` in `summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NoiseSummary {
    /// The pass rate first, then judge metrics with judge repeats.
    pub scores: Vec<ScoreNoise>,
    /// Pass-rate MDE projections (`None` with fewer than 2 paired cases or K = 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mde_projection: Option<MdeProjection>,
}

/// Per case of one arm: the attempt scores' count, sum, sum of squares, and the judge repeats'
/// summed sample variance over attempts (with the number of attempts it covers).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CaseMoments {
    pub count: u32,
    pub sum: f64,
    pub sum_squares: f64,
    pub judge_variance_sum: f64,
    pub judge_attempts: u32,
}

impl CaseMoments {
    fn mean(&self) -> f64 {
        self.sum / f64::from(self.count)
    }

    /// Sample variance of the attempt scores (`None` with one attempt).
    fn within(&self) -> Option<f64> {
        (self.count >= 2).then(|| {
            let k = f64::from(self.count);
            ((self.sum_squares - self.sum * self.sum / k) / (k - 1.0)).max(0.0)
        })
    }
}

fn sample_variance(values: &[f64]) -> Option<f64> {
    let n = values.len();
    (n >= 2).then(|| {
        let mean = values.iter().sum::<f64>() / n as f64;
        values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n as f64 - 1.0)
    })
}

/// One arm's decomposition from its cases' moments; `judge_repeats` = J when the score is
/// judged J > 1 times per attempt.
pub(crate) fn arm_noise(cases: &[CaseMoments], judge_repeats: Option<u32>) -> Option<ArmNoise> {
    let cases: Vec<&CaseMoments> = cases.iter().filter(|c| c.count > 0).collect();
    let means: Vec<f64> = cases.iter().map(|c| c.mean()).collect();
    let total = sample_variance(&means)?;
    let n = cases.len();
    let attempts_per_case = cases.iter().map(|c| f64::from(c.count)).sum::<f64>() / n as f64;
    let mut clamped = Vec::new();
    let within: Vec<(f64, f64)> = cases
        .iter()
        .filter_map(|c| c.within().map(|w| (w, f64::from(c.count))))
        .collect();
    let judge_variance = judge_repeats.and_then(|_| {
        let attempts: u32 = cases.iter().map(|c| c.judge_attempts).sum();
        (attempts > 0)
            .then(|| cases.iter().map(|c| c.judge_variance_sum).sum::<f64>() / f64::from(attempts))
    });
    let j = f64::from(judge_repeats.unwrap_or(1));
    let (attempt_variance, within_term) = if within.is_empty() {
        (None, 0.0)
    } else {
        let mean_within = within.iter().map(|(w, _)| w).sum::<f64>() / within.len() as f64;
        let within_term = within.iter().map(|(w, k)| w / k).sum::<f64>() / within.len() as f64;
        let raw = mean_within - judge_variance.unwrap_or(0.0) / j;
        if raw < 0.0 {
            clamped.push("attempts".to_string());
        }
        (Some(raw.max(0.0)), within_term)
    };
    let raw_case = total - within_term;
    if raw_case < 0.0 {
        clamped.push("cases".to_string());
    }
    let case_variance = raw_case.max(0.0);
    let k = attempts_per_case;
    let attempt_part = attempt_variance.map(|a| a / k);
    let judge_part = judge_variance.map(|v| v / (k * j));
    let parts = case_variance + attempt_part.unwrap_or(0.0) + judge_part.unwrap_or(0.0);
    let share = |part: f64| (parts > 0.0).then(|| part / parts);
    Some(ArmNoise {
        n_cases: n,
        attempts_per_case,
        judge_repeats,
        total,
        case_variance,
        attempt_variance,
        judge_variance,
        shares: NoiseShares {
            cases: share(case_variance),
            attempts: attempt_part.and_then(share),
            judge_repeats: judge_part.and_then(share),
        },
        clamped,
    })
}

/// The pass-rate MDE projection from both arms' moments (paired, same case order).
pub(crate) fn mde_projection(
    with: &[CaseMoments],
    without: &[CaseMoments],
    clusters: Option<&Clusters>,
) -> Option<MdeProjection> {
    let n = with.len();
    if n < 2 || with.iter().chain(without).any(|c| c.count < 2) {
        return None;
    }
    let differences: Vec<f64> = with
        .iter()
        .zip(without)
        .map(|(a, b)| a.mean() - b.mean())
        .collect();
    let within = |cases: &[CaseMoments]| -> Vec<f64> {
        cases.iter().map(|c| c.within().unwrap_or(0.0)).collect()
    };
    let k_with = with.iter().map(|c| f64::from(c.count)).sum::<f64>() / n as f64;
    let k_without = without.iter().map(|c| f64::from(c.count)).sum::<f64>() / n as f64;
    let decomposition = stats::difference_variance_decomposition(
        &differences,
        &within(with),
        k_with,
        &within(without),
        k_without,
    )
    .ok()?;
    // With clusters, the variance of the mean is the clustered one: scale the per-case
    // variance by the design effect of the differences.
    let design_effect = match clusters {
        Some(clusters) => {
            let clustered = stats::clustered_standard_error(&differences, clusters).ok()??;
            let plain = decomposition.difference_variance / n as f64;
            if plain > 0.0 {
                (clustered.adjusted * clustered.adjusted / plain).max(1.0)
            } else {
                1.0
            }
        }
        None => 1.0,
    };
    let sigma_with = within(with).iter().sum::<f64>() / n as f64;
    let sigma_without = within(without).iter().sum::<f64>() / n as f64;
    let mde = |cases: u64, k: f64| {
        let components = stats::PairedVarianceComponents {
            omega_squared: decomposition.omega_squared,
            within_variance_a: sigma_with,
            trials_a: k * k_with,
            within_variance_b: sigma_without,
            trials_b: k * k_without,
        };
        stats::minimum_detectable_effect(&components, cases * n as u64, MDE_ALPHA, MDE_POWER)
            .map(|m| m * design_effect.sqrt())
    };
    Some(MdeProjection {
        omega_squared: decomposition.omega_squared,
        omega_clamped: decomposition.clamped,
        current: mde(1, 1.0)?,
        twice_the_cases: mde(2, 1.0)?,
        twice_the_attempts: mde(1, 2.0)?,
    })
}

/// Assemble `noise`: the pass rate from `pass` (per paired case: with, without moments) and
/// the judge metrics from `metrics` (name → per paired case moments of both arms).
pub(crate) fn summarize(
    pass: &[[CaseMoments; 2]],
    metrics: BTreeMap<String, Vec<[CaseMoments; 2]>>,
    judge_k: u32,
    clusters: Option<&Clusters>,
) -> NoiseSummary {
    let split = |cases: &[[CaseMoments; 2]]| -> (Vec<CaseMoments>, Vec<CaseMoments>) {
        (
            cases.iter().map(|c| c[0]).collect(),
            cases.iter().map(|c| c[1]).collect(),
        )
    };
    let (with, without) = split(pass);
    let mut scores = vec![ScoreNoise {
        score: "pass_rate".to_string(),
        with_skill: arm_noise(&with, None),
        without_skill: arm_noise(&without, None),
    }];
    for (name, cases) in metrics {
        let (with, without) = split(&cases);
        scores.push(ScoreNoise {
            score: name,
            with_skill: arm_noise(&with, Some(judge_k)),
            without_skill: arm_noise(&without, Some(judge_k)),
        });
    }
    NoiseSummary {
        scores,
        mde_projection: mde_projection(&with, &without, clusters),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binary(passes: u32, k: u32) -> CaseMoments {
        CaseMoments {
            count: k,
            sum: f64::from(passes),
            sum_squares: f64::from(passes),
            ..Default::default()
        }
    }

    /// statistics.md §2, D10: arm A S² = 0.087111, mean s_i²/K = 0.026, Var(x)^ = 0.061111;
    /// arm B 0.081778, 0.044, 0.037778; ω²^ = 0.026.
    #[test]
    fn reproduces_d10() {
        let k_a = [5, 5, 4, 5, 3, 5, 2, 3, 1, 5];
        let k_b = [5, 2, 4, 3, 2, 1, 1, 4, 1, 3];
        let with: Vec<CaseMoments> = k_a.iter().map(|&k| binary(k, 5)).collect();
        let without: Vec<CaseMoments> = k_b.iter().map(|&k| binary(k, 5)).collect();
        let a = arm_noise(&with, None).unwrap();
        assert!((a.total - 0.087111).abs() < 1e-6);
        assert!((a.case_variance - 0.061111).abs() < 1e-6);
        assert!((a.attempt_variance.unwrap() - 0.13).abs() < 1e-9);
        assert!(a.clamped.is_empty());
        let shares = &a.shares;
        assert!((shares.cases.unwrap() + shares.attempts.unwrap() - 1.0).abs() < 1e-12);
        let b = arm_noise(&without, None).unwrap();
        assert!((b.case_variance - 0.037778).abs() < 1e-6);
        assert!((b.attempt_variance.unwrap() - 0.22).abs() < 1e-9);
        let projection = mde_projection(&with, &without, None).unwrap();
        assert!((projection.omega_squared - 0.026).abs() < 1e-9);
        // §9.1: ω² = 0.026, σ_A² + σ_B² = 0.35 → K = 10, n = 10 is the "twice the attempts" case.
        let expected = 2.801585 * ((0.026 + 0.35 / 10.0) / 10.0f64).sqrt();
        assert!((projection.twice_the_attempts - expected).abs() < 1e-5);
        assert!(projection.twice_the_cases < projection.current);
    }

    #[test]
    fn judge_repeats_are_split_off_and_negative_estimates_clamped() {
        // Two cases, 2 attempts each, J = 3; repeat variance 0.04 on every attempt.
        let case = |a: f64, b: f64| CaseMoments {
            count: 2,
            sum: a + b,
            sum_squares: a * a + b * b,
            judge_variance_sum: 0.08,
            judge_attempts: 2,
        };
        let cases = [case(0.2, 0.4), case(0.6, 0.8), case(0.5, 0.5)];
        let noise = arm_noise(&cases, Some(3)).unwrap();
        assert_eq!(noise.judge_variance, Some(0.04));
        // mean s_i² = (0.02 + 0.02 + 0)/3; minus 0.04/3 → 0.0 (clamped? 0.01333 − 0.01333 = 0).
        assert!(noise.attempt_variance.unwrap() < 1e-12);
        // Identical case means and large within variance: the case component clamps.
        let flat = [binary(1, 2), binary(1, 2), binary(1, 2)];
        let noise = arm_noise(&flat, None).unwrap();
        assert_eq!(noise.case_variance, 0.0);
        assert_eq!(noise.clamped, vec!["cases".to_string()]);
        assert!(arm_noise(&[binary(1, 2)], None).is_none());
    }
}
