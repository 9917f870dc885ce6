//! The shapes every metric shares: a score in [0, 1] or "not applicable", sub-scores, a reason,
//! and the context a deterministic metric is computed in.
//!
//! Not-applicable is `None`, never 0 or 1: a sub-check that cannot be told (no failure to
//! recover from, activation unobservable in inject mode) is left out of every mean.

use std::collections::BTreeMap;
use std::path::Path;

use crate::record::{
    ACCURACY, BEHAVIOR_CHECK, CHECKS, GOAL_ACCURACY, MetricResult, MetricSource, SECURITY,
    SKILL_EFFICIENCY, SKILL_EXECUTION, SubScore,
};

/// Names a custom grader may not use for its metrics: the six metrics, `checks`, `composite`,
/// and the reserved keys of SkillEvaluator's custom-metric contract
/// (`../shared/reference/eval-formats.md` §2.2).
pub(crate) const RESERVED_METRIC_NAMES: &[&str] = &[
    SECURITY,
    SKILL_EXECUTION,
    SKILL_EFFICIENCY,
    ACCURACY,
    GOAL_ACCURACY,
    BEHAVIOR_CHECK,
    CHECKS,
    "composite",
    "overall",
    "metric_set",
    "entry_id",
    "has_skill",
    "details",
    "pass_rate",
];

impl SubScore {
    /// An applicable sub-score.
    pub fn scored(score: f64, reason: impl Into<String>) -> Self {
        Self {
            score: Some(score.clamp(0.0, 1.0)),
            reason: reason.into(),
        }
    }

    /// A not-applicable sub-check.
    pub fn not_applicable(reason: impl Into<String>) -> Self {
        Self {
            score: None,
            reason: reason.into(),
        }
    }
}

impl MetricResult {
    /// A metric whose score is the unweighted mean of its applicable sub-scores (`None` when
    /// none applies). The reason names each sub-check and its score.
    pub fn from_sub_scores(source: MetricSource, sub_scores: BTreeMap<String, SubScore>) -> Self {
        let applicable: Vec<f64> = sub_scores.values().filter_map(|s| s.score).collect();
        let score = (!applicable.is_empty())
            .then(|| applicable.iter().sum::<f64>() / applicable.len() as f64);
        let reason = sub_scores
            .iter()
            .map(|(name, sub)| match sub.score {
                Some(score) => format!("{name} {score:.2}"),
                None => format!("{name} n/a"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            score,
            reason,
            source,
            sub_scores,
            judge: None,
        }
    }
}

/// What a deterministic metric needs to know about the trial besides the case and trajectory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MetricContext<'a> {
    /// The skill under evaluation.
    pub target_skill: &'a str,
    /// Names of the skills staged in this trial's arm (the target only in `with_skill`).
    pub staged_skills: &'a [String],
    /// Whether skill activation can be observed (false in `inject` mode, where every staged
    /// skill's body is in the prompt).
    pub activation_observable: bool,
    /// Whether the runner can run shell commands at all (false for `openai-chat`).
    pub can_run_commands: bool,
    /// The trial's absolute workspace path as it was during the run, when known.
    pub workspace: Option<&'a Path>,
    /// The trial's absolute fresh HOME as it was during the run, when known.
    pub home: Option<&'a Path>,
    /// `(variable name, value)` of credentials passed to the runner. Values are only compared,
    /// never written anywhere.
    pub secrets: &'a [(String, String)],
}
