//! The quality contract: absolute bounds a skill (or its eval set) declares in `contract.toml`
//! (`crate::record::QualityBounds`), checked against the run's own intervals.
//!
//! Each bound is **met** only when its whole 95 % interval lies on the right side of it,
//! **violated** when the whole interval lies on the wrong side, and **not shown** otherwise
//! (**not measured** when the run has nothing to measure it with, e.g. no trial reported
//! tokens). Only a violated bound fails the run (exit 1); a bound not shown or not measured is
//! a warning in every report. The intervals:
//!
//! - `min_pass_rate`: `with_skill`'s pass rate over the paired cases with its per-arm interval
//!   (Wilson, or the effective-count Wilson; docs/statistics.md "Per-arm intervals");
//! - `max_p95_wall_s`: the nearest-rank 95th percentile of `with_skill`'s trial wall times, with
//!   the distribution-free order-statistic interval of the quantile
//!   ([`crate::analysis::stats::quantile_interval`]; Conover 1999 §3.2), which treats trials as
//!   independent draws;
//! - `max_tokens_per_trial`, `max_cost_usd_per_trial`: the mean over `with_skill`'s trials
//!   that reported tokens (cost), with the cluster-robust t interval of the mean, the case (or
//!   its eval-set cluster) as the cluster (`crate::analysis::stats::one_sample_t`, C − 1 df);
//! - `max_unscoreable`: unscoreable trials over every recorded trial of the run, Wilson score
//!   interval.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ArmSummary, CONFIDENCE};
use crate::analysis::stats::{self, Clusters};
use crate::record::{QualityBounds, QualityContract};

/// Which bound a check is about (the key in `contract.toml`'s `[quality]` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum QualityBound {
    /// Smallest pass rate of `with_skill`.
    MinPassRate,
    /// Largest P95 trial wall time of `with_skill`, seconds.
    MaxP95WallS,
    /// Largest mean tokens per `with_skill` trial.
    MaxTokensPerTrial,
    /// Largest mean cost per `with_skill` trial, USD.
    MaxCostUsdPerTrial,
    /// Largest share of unscoreable trials of the run.
    MaxUnscoreable,
}

impl QualityBound {
    /// The key in `contract.toml`.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::MinPassRate => "min_pass_rate",
            Self::MaxP95WallS => "max_p95_wall_s",
            Self::MaxTokensPerTrial => "max_tokens_per_trial",
            Self::MaxCostUsdPerTrial => "max_cost_usd_per_trial",
            Self::MaxUnscoreable => "max_unscoreable",
        }
    }

    /// What is measured, in words.
    fn what(self) -> &'static str {
        match self {
            Self::MinPassRate => "pass rate of with_skill",
            Self::MaxP95WallS => "P95 trial wall time of with_skill",
            Self::MaxTokensPerTrial => "tokens per with_skill trial",
            Self::MaxCostUsdPerTrial => "cost per with_skill trial",
            Self::MaxUnscoreable => "unscoreable share of the run's trials",
        }
    }

    /// Whether the bound is a floor (the measured value must reach it) rather than a ceiling.
    fn is_minimum(self) -> bool {
        matches!(self, Self::MinPassRate)
    }

    /// `value` in this bound's unit.
    pub(crate) fn format(self, value: f64) -> String {
        match self {
            Self::MinPassRate | Self::MaxUnscoreable => format!("{:.1}%", value * 100.0),
            Self::MaxP95WallS => format!("{value:.3} s"),
            Self::MaxTokensPerTrial => format!("{value:.0}"),
            Self::MaxCostUsdPerTrial => format!("${value:.4}"),
        }
    }
}

/// Whether a bound holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BoundStatus {
    /// The whole interval lies on the right side of the bound.
    Met,
    /// The interval contains the bound (or is open on the side that would decide): neither
    /// met nor violated at this run's size.
    NotShown,
    /// The whole interval lies on the wrong side of the bound: the run fails (exit 1).
    Violated,
    /// Nothing in the run measures it (no trial reported tokens or cost, no scored case).
    NotMeasured,
}

impl BoundStatus {
    /// The status as reports print it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Met => "met",
            Self::NotShown => "not shown",
            Self::Violated => "violated",
            Self::NotMeasured => "not measured",
        }
    }
}

/// One declared bound checked against the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BoundCheck {
    /// The bound's key in `contract.toml`.
    pub bound: QualityBound,
    /// The declared limit, in the bound's unit (fraction, seconds, tokens, USD).
    pub limit: f64,
    /// The measured value (point estimate), when measured.
    pub measured: Option<f64>,
    /// The 95 % interval's lower end (`None`: open or not measured).
    pub ci_low: Option<f64>,
    /// The 95 % interval's upper end (`None`: open or not measured).
    pub ci_high: Option<f64>,
    /// The interval's method: `wilson`, `wilson-effective-count`, `order-statistic`,
    /// `cluster-t`.
    pub interval_method: Option<String>,
    /// What the interval is over: trials (P95, tokens, cost, unscoreable share) or cases
    /// (pass rate).
    pub n: usize,
    pub status: BoundStatus,
    /// The check in one sentence.
    pub message: String,
}

/// The quality contract checked against a run (`summary.json` `quality_contract`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct QualityReport {
    /// The `contract.toml` the bounds came from.
    pub path: PathBuf,
    /// One check per declared bound, in the order of [`QualityBound`].
    pub checks: Vec<BoundCheck>,
    /// No bound is violated.
    pub passed: bool,
}

impl QualityReport {
    /// One line per violated bound (the gate's failures).
    pub(crate) fn failures(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| c.status == BoundStatus::Violated)
            .map(|c| format!("quality contract: {}", c.message))
            .collect()
    }

    /// One line per bound the run neither met nor violated (warnings in every report).
    pub(crate) fn undecided(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| matches!(c.status, BoundStatus::NotShown | BoundStatus::NotMeasured))
            .map(|c| format!("quality contract: {}", c.message))
            .collect()
    }
}

/// One `with_skill` trial's figures the contract reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrialFigures {
    /// Wall time, seconds.
    pub wall_s: Vec<f64>,
    /// (case index, input + output tokens) of trials that reported tokens.
    pub tokens: Vec<(usize, f64)>,
    /// (case index, USD) of trials that reported a cost.
    pub cost_usd: Vec<(usize, f64)>,
}

/// What the checks read from the analyzed run.
pub(crate) struct QualityInputs<'a> {
    /// `with_skill` over the paired cases (pass rate and its interval).
    pub with_skill: &'a ArmSummary,
    /// `with_skill`'s trials.
    pub trials: &'a TrialFigures,
    /// The cluster label of each case index (its eval-set cluster, else the case itself).
    pub case_labels: &'a [String],
    /// Unscoreable and recorded trials over every arm.
    pub unscoreable: (usize, usize),
}

/// Check every declared bound of `contract` against the run.
pub(crate) fn check(contract: &QualityContract, inputs: &QualityInputs<'_>) -> QualityReport {
    let QualityBounds {
        min_pass_rate,
        max_p95_wall_s,
        max_tokens_per_trial,
        max_cost_usd_per_trial,
        max_unscoreable,
    } = contract.bounds;
    let mut checks = Vec::new();
    if let Some(limit) = min_pass_rate {
        let arm = inputs.with_skill;
        checks.push(judge(
            QualityBound::MinPassRate,
            limit,
            Measurement {
                value: arm.pass_rate,
                low: arm.ci_low,
                high: arm.ci_high,
                method: arm.interval_method.clone(),
                n: arm.n_cases,
                over: "cases",
                missing: "no case was scored in both arms",
            },
        ));
    }
    if let Some(limit) = max_p95_wall_s {
        let times = &inputs.trials.wall_s;
        let interval = stats::quantile_interval(times, 0.95, CONFIDENCE);
        checks.push(judge(
            QualityBound::MaxP95WallS,
            limit,
            Measurement {
                value: stats::nearest_rank(times, 0.95),
                low: interval.and_then(|i| i.low),
                high: interval.and_then(|i| i.high),
                method: Some("order-statistic".to_string()),
                n: times.len(),
                over: "trials",
                missing: "no with_skill trial was recorded",
            },
        ));
    }
    if let Some(limit) = max_tokens_per_trial {
        checks.push(judge(
            QualityBound::MaxTokensPerTrial,
            limit,
            mean_of(
                &inputs.trials.tokens,
                inputs.case_labels,
                "no with_skill trial reported tokens",
            ),
        ));
    }
    if let Some(limit) = max_cost_usd_per_trial {
        checks.push(judge(
            QualityBound::MaxCostUsdPerTrial,
            limit,
            mean_of(
                &inputs.trials.cost_usd,
                inputs.case_labels,
                "no with_skill trial reported a cost (the runner reports none and its profile has no [price])",
            ),
        ));
    }
    if let Some(limit) = max_unscoreable {
        let (unscoreable, recorded) = inputs.unscoreable;
        let interval = stats::wilson_interval(unscoreable as u64, recorded as u64, CONFIDENCE);
        checks.push(judge(
            QualityBound::MaxUnscoreable,
            limit,
            Measurement {
                value: (recorded > 0).then(|| unscoreable as f64 / recorded as f64),
                low: interval.map(|i| i.low),
                high: interval.map(|i| i.high),
                method: Some("wilson".to_string()),
                n: recorded,
                over: "trials",
                missing: "no trial was recorded",
            },
        ));
    }
    let passed = checks.iter().all(|c| c.status != BoundStatus::Violated);
    QualityReport {
        path: contract.path.clone(),
        checks,
        passed,
    }
}

/// A measured value with its interval.
struct Measurement {
    value: Option<f64>,
    low: Option<f64>,
    high: Option<f64>,
    method: Option<String>,
    n: usize,
    /// What `n` counts.
    over: &'static str,
    /// Why there is no value, when there is none.
    missing: &'static str,
}

/// The mean of per-trial `values` with the cluster-robust t interval (the case, or its cluster,
/// as the cluster).
fn mean_of(values: &[(usize, f64)], case_labels: &[String], missing: &'static str) -> Measurement {
    let numbers: Vec<f64> = values.iter().map(|(_, v)| *v).collect();
    let labels: Vec<&str> = values
        .iter()
        .map(|(case, _)| case_labels.get(*case).map_or("", String::as_str))
        .collect();
    let clusters = Clusters::from_labels(&labels);
    let t = (!numbers.is_empty())
        .then(|| stats::one_sample_t(&numbers, 0.0, Some(&clusters), CONFIDENCE).ok())
        .flatten();
    Measurement {
        value: t.map(|t| t.mean),
        low: t.and_then(|t| t.interval).map(|i| i.low),
        high: t.and_then(|t| t.interval).map(|i| i.high),
        method: Some("cluster-t".to_string()),
        n: numbers.len(),
        over: "trials",
        missing,
    }
}

/// Met, violated or not shown (module comment), with its sentence.
fn judge(bound: QualityBound, limit: f64, measured: Measurement) -> BoundCheck {
    let declared = format!("{} {}", bound.key(), bound.format(limit));
    let Some(value) = measured.value else {
        return BoundCheck {
            bound,
            limit,
            measured: None,
            ci_low: None,
            ci_high: None,
            interval_method: None,
            n: measured.n,
            status: BoundStatus::NotMeasured,
            message: format!("{declared}: not measured ({})", measured.missing),
        };
    };
    // An open end is an infinite one; a missing interval (too few cases) decides nothing.
    let has_interval = measured.low.is_some() || measured.high.is_some();
    let low = measured.low.unwrap_or(f64::NEG_INFINITY);
    let high = measured.high.unwrap_or(f64::INFINITY);
    let status = if !has_interval {
        BoundStatus::NotShown
    } else if bound.is_minimum() {
        if low >= limit {
            BoundStatus::Met
        } else if high < limit {
            BoundStatus::Violated
        } else {
            BoundStatus::NotShown
        }
    } else if high <= limit {
        BoundStatus::Met
    } else if low > limit {
        BoundStatus::Violated
    } else {
        BoundStatus::NotShown
    };
    let end = |value: Option<f64>| value.map_or("open".to_string(), |v| bound.format(v));
    let interval = if has_interval {
        format!(
            "95% interval [{}, {}] ({}, {} {})",
            end(measured.low),
            end(measured.high),
            measured.method.as_deref().unwrap_or("?"),
            measured.n,
            measured.over
        )
    } else {
        format!("no interval ({} {}: too few)", measured.n, measured.over)
    };
    let verdict = match status {
        BoundStatus::Met => "met",
        BoundStatus::Violated => "violated",
        _ => {
            "not shown: the interval reaches both sides of the bound; more cases or attempts decide it"
        }
    };
    let verdict = if status == BoundStatus::NotShown && !has_interval {
        "not shown"
    } else {
        verdict
    };
    BoundCheck {
        bound,
        limit,
        measured: Some(value),
        ci_low: measured.low,
        ci_high: measured.high,
        interval_method: measured.method,
        n: measured.n,
        status,
        message: format!(
            "{declared}: {} {}, {interval} — {verdict}",
            bound.what(),
            bound.format(value)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(bounds: QualityBounds) -> QualityContract {
        QualityContract {
            path: PathBuf::from("evals/contract.toml"),
            bounds,
        }
    }

    fn arm(rate: f64, low: f64, high: f64) -> ArmSummary {
        ArmSummary {
            pass_rate: Some(rate),
            ci_low: Some(low),
            ci_high: Some(high),
            interval_method: Some("wilson".to_string()),
            n_cases: 20,
            trials: Default::default(),
            usage: Default::default(),
            mean_wall_s: None,
            mean_model_latency_s: None,
            retries: 0,
            unscoreable_causes: Default::default(),
            truncated_trials: 0,
            security_gate_failures: 0,
        }
    }

    fn run(bounds: QualityBounds, with: &ArmSummary, trials: &TrialFigures) -> QualityReport {
        let labels: Vec<String> = (0..20).map(|i| format!("case:{i}")).collect();
        check(
            &contract(bounds),
            &QualityInputs {
                with_skill: with,
                trials,
                case_labels: &labels,
                unscoreable: (1, 40),
            },
        )
    }

    #[test]
    fn a_pass_rate_bound_is_met_only_when_the_whole_interval_clears_it() {
        let bounds = |b| QualityBounds {
            min_pass_rate: Some(b),
            ..Default::default()
        };
        let trials = TrialFigures::default();
        let with = arm(0.85, 0.7, 0.95);
        assert_eq!(
            run(bounds(0.6), &with, &trials).checks[0].status,
            BoundStatus::Met
        );
        assert_eq!(
            run(bounds(0.8), &with, &trials).checks[0].status,
            BoundStatus::NotShown
        );
        let report = run(bounds(0.97), &with, &trials);
        assert_eq!(report.checks[0].status, BoundStatus::Violated);
        assert!(!report.passed);
        assert_eq!(report.failures().len(), 1);
    }

    #[test]
    fn a_p95_bound_uses_the_order_statistic_interval_and_its_open_end() {
        // 20 trials of 1..=20 s: the P95 is 19 s, its interval [X_(17) = 17 s, open).
        let trials = TrialFigures {
            wall_s: (1..=20).map(f64::from).collect(),
            ..Default::default()
        };
        let with = arm(0.5, 0.3, 0.7);
        let p95 = |limit| {
            run(
                QualityBounds {
                    max_p95_wall_s: Some(limit),
                    ..Default::default()
                },
                &with,
                &trials,
            )
            .checks
            .remove(0)
        };
        let violated = p95(10.0);
        assert_eq!(violated.status, BoundStatus::Violated);
        assert_eq!(violated.measured, Some(19.0));
        assert_eq!((violated.ci_low, violated.ci_high), (Some(17.0), None));
        assert!(
            violated.message.contains("max_p95_wall_s 10.000 s")
                && violated.message.contains("19.000 s")
                && violated.message.contains("[17.000 s, open]"),
            "{}",
            violated.message
        );
        // An open upper end can never meet a ceiling: 100 s is not shown with 20 trials.
        assert_eq!(p95(100.0).status, BoundStatus::NotShown);
    }

    #[test]
    fn tokens_cost_and_unscoreable_share() {
        let trials = TrialFigures {
            wall_s: vec![1.0; 20],
            tokens: (0..20).map(|i| (i, 1000.0 + i as f64)).collect(),
            cost_usd: Vec::new(),
        };
        let report = run(
            QualityBounds {
                max_tokens_per_trial: Some(2000.0),
                max_cost_usd_per_trial: Some(0.01),
                max_unscoreable: Some(0.5),
                ..Default::default()
            },
            &arm(0.5, 0.3, 0.7),
            &trials,
        );
        let status: Vec<_> = report.checks.iter().map(|c| c.status).collect();
        assert_eq!(
            status,
            vec![BoundStatus::Met, BoundStatus::NotMeasured, BoundStatus::Met]
        );
        assert!(report.passed);
        assert_eq!(report.undecided().len(), 1);
        assert!(report.undecided()[0].contains("not measured"));
    }
}
