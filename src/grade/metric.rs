//! The shapes every metric shares: a score in [0, 1] or "not applicable", sub-scores, a reason,
//! and the context a deterministic metric is computed in.
//!
//! Not-applicable is `None`, never 0 or 1: a sub-check that cannot be told (no failure to
//! recover from, activation unobservable in inject mode) is left out of every mean.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// `security`: destructive commands, exposed secrets, access outside the workspace.
pub const SECURITY: &str = "security";
/// `skill_execution`: activation, script execution, workflow order, error recovery.
pub const SKILL_EXECUTION: &str = "skill_execution";
/// `skill_efficiency`: routing and tool efficiency.
pub const SKILL_EFFICIENCY: &str = "skill_efficiency";
/// `accuracy`: LLM judge, five yes/no criteria.
pub const ACCURACY: &str = "accuracy";
/// `goal_accuracy`: LLM judge, the goal against `expected_output`.
pub const GOAL_ACCURACY: &str = "goal_accuracy";
/// `behavior_check`: LLM judge, each assertion YES/NO.
pub const BEHAVIOR_CHECK: &str = "behavior_check";
/// `checks`: the fraction of the case's deterministic output checks that passed.
pub const CHECKS: &str = "checks";

/// The six ACES metrics (SkillEvaluator metric set `skill-evaluator-default-v2`), in order.
pub const ACES_METRICS: [&str; 6] = [
    SECURITY,
    SKILL_EXECUTION,
    SKILL_EFFICIENCY,
    ACCURACY,
    GOAL_ACCURACY,
    BEHAVIOR_CHECK,
];

/// Names a custom grader may not use for its metrics: the six metrics, `checks`, `composite`,
/// and the reserved keys of SkillEvaluator's custom-metric contract
/// (`../shared/reference/eval-formats.md` §2.2).
pub const RESERVED_METRIC_NAMES: &[&str] = &[
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

/// Where a metric's score came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricSource {
    /// Computed from the trajectory by skill-lift's own code.
    Deterministic,
    /// An LLM judge (`--judge`).
    Judge,
    /// A custom grader command (`--grader`).
    Custom,
}

/// One sub-check of a metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubScore {
    /// Score in [0, 1]; `None` when the sub-check is not applicable to this trial.
    pub score: Option<f64>,
    /// One line: what was looked for and what was found (never a secret's value).
    pub reason: String,
}

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

/// How an LLM-judged metric's repeats came out (`--judge-k`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSpread {
    /// Judge profile name.
    pub judge: String,
    /// Judge model requested.
    pub model: String,
    /// The score of each repeat, in order.
    pub repeats: Vec<f64>,
    /// Sample standard deviation of the repeats (`None` for one repeat).
    pub sd: Option<f64>,
    /// Repeats answered from the judge cache.
    pub cached: u32,
    /// Per yes/no item (criterion or assertion): how many repeats said yes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<JudgeItem>,
    /// What grading this metric spent (requests, cache hits, tokens, cost); absent in records
    /// written before judge spend was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<crate::grade::JudgeSpend>,
}

/// One yes/no item a judge answered, over the repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeItem {
    /// Criterion name (`skill_identified`) or the assertion text.
    pub name: String,
    /// Repeats that answered yes.
    pub yes: u32,
    /// Repeats that answered.
    pub total: u32,
    /// The first repeat's one-line justification.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub evidence: String,
}

/// One metric's result on one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricResult {
    /// Score in [0, 1]; `None` when the metric is not applicable (every sub-check was).
    pub score: Option<f64>,
    /// One line explaining the score.
    pub reason: String,
    /// Where it came from.
    pub source: MetricSource,
    /// Sub-checks by name (`activation`, `routing`, …), when the metric has them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sub_scores: BTreeMap<String, SubScore>,
    /// Judge repeats and their spread (judge metrics only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeSpread>,
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
pub struct MetricContext<'a> {
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
