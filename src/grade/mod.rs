//! Grading a trial: from its trajectory and the golden case to an [`Outcome`] with check results.
//!
//! This first version grades by the case's deterministic `checks`; the metric set (security,
//! skill_execution, skill_efficiency, LLM judges, custom graders) plugs in here as further
//! grade components. A case without checks is `not_gradable` — never passed or failed.

pub mod checks;
pub mod deterministic;
pub mod metric;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::evalset::GoldenCase;
use crate::trajectory::{Trajectory, TrajectoryStatus};
use checks::CheckResult;

/// The typed outcome of one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every check passed.
    Pass,
    /// At least one check failed.
    Fail,
    /// An infrastructure failure (runner, server, incomplete trajectory): excluded from rates.
    Unscoreable,
    /// The case has nothing to grade it by yet: excluded from rates.
    NotGradable,
}

impl Outcome {
    /// Whether the outcome counts in pass rates (pass or fail).
    pub fn is_scored(self) -> bool {
        matches!(self, Outcome::Pass | Outcome::Fail)
    }

    /// The outcome's recorded name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Unscoreable => "unscoreable",
            Outcome::NotGradable => "not_gradable",
        }
    }
}

/// A trial's grade: outcome, the reason, and each check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grade {
    /// The trial outcome.
    pub outcome: Outcome,
    /// Why (for fail: the first failed check; for unscoreable/not_gradable: the cause).
    pub reason: Option<String>,
    /// The result of each deterministic check, in the case's order.
    pub checks: Vec<CheckResult>,
    /// Per-metric scores in [0,1] (`checks` = fraction of checks passed). Further metrics are
    /// added by the grader set.
    pub scores: std::collections::BTreeMap<String, f64>,
}

/// Grade a trajectory against its case; `workspace` is the trial's workspace after the run.
pub fn grade_trajectory(case: &GoldenCase, trajectory: &Trajectory, workspace: &Path) -> Grade {
    if let TrajectoryStatus::Incomplete { reason } = &trajectory.status {
        return unscoreable(format!("incomplete trajectory: {reason}"));
    }
    if case.checks.is_empty() {
        return Grade {
            outcome: Outcome::NotGradable,
            reason: Some(
                "case has no deterministic checks; LLM-judge grading of assertions is not available in this version"
                    .to_string(),
            ),
            checks: Vec::new(),
            scores: Default::default(),
        };
    }
    let answer = trajectory.final_answer.as_deref().unwrap_or("");
    let results: Vec<CheckResult> = case
        .checks
        .iter()
        .map(|check| check.evaluate(answer, workspace))
        .collect();
    let passed = results.iter().filter(|r| r.passed).count();
    let outcome = if passed == results.len() {
        Outcome::Pass
    } else {
        Outcome::Fail
    };
    let reason = results
        .iter()
        .find(|r| !r.passed)
        .map(|r| format!("{}: {}", r.check_type, r.detail));
    let mut scores = std::collections::BTreeMap::new();
    scores.insert("checks".to_string(), passed as f64 / results.len() as f64);
    Grade {
        outcome,
        reason,
        checks: results,
        scores,
    }
}

/// An unscoreable grade with `reason`.
pub fn unscoreable(reason: String) -> Grade {
    Grade {
        outcome: Outcome::Unscoreable,
        reason: Some(reason),
        checks: Vec::new(),
        scores: Default::default(),
    }
}
