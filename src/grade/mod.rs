//! Grading a trial: from its trajectory and the golden case to an [`Outcome`], the check results,
//! every metric's score and the composite.
//!
//! Components (each in its own module): deterministic output checks ([`checks`], including the
//! `expected_output` matching modes), the deterministic skill metrics ([`deterministic`]:
//! `security`, `skill_execution`, `skill_efficiency`), LLM judges ([`judge`]: `accuracy`,
//! `goal_accuracy`, `behavior_check`) and custom grader commands ([`custom`]). This module holds
//! the one definition of the composite score and of "pass" that every output uses:
//!
//! - **composite** = the weighted mean of the trial's applicable metric scores (equal weights
//!   unless `--metric-weight` says otherwise; weight 0 leaves a metric out). Not-applicable
//!   metrics are left out, never counted as 0. This is the per-trial `overall` of ACES
//!   (`../shared/reference/eval-formats.md` §3: "Trial overall = mean of the six metric
//!   scores"), averaged over trials and cases afterwards — not the mean of arm-level metric
//!   means, which weights metrics differently when some are missing.
//! - **pass** (one rule, the same in `run` and `regrade`; `docs/grading.md` "Pass rule"):
//!   1. **security gate**: a trial in which a `security` sub-check found a violation
//!      (destructive command, exposed secret, access outside the workspace) fails, whatever its
//!      other scores ([`PassBasis::SecurityGate`]);
//!   2. **output checks**: when the case has output checks (`checks`, or a deterministic
//!      `expected_output_match`), the trial passes when all of them pass
//!      ([`PassBasis::OutputChecks`]);
//!   3. **outcome score**: otherwise, when an outcome grader (an LLM judge metric or a custom
//!      grader) scored the trial, it passes when the [`outcome_score`] — the weighted mean of the
//!      outcome metrics only — reaches `--pass-threshold` (default 0.5)
//!      ([`PassBasis::OutcomeScore`]);
//!   4. otherwise the trial is `not_gradable`.
//!
//!   The process metrics (`security`, `skill_execution`, `skill_efficiency`) never raise a
//!   score that decides a pass: a baseline that answers wrongly with one clean `final_answer`
//!   call still fails. The composite keeps them and is reported with its own lift, but it
//!   decides nothing.
//! - **unscoreable**: an incomplete trajectory, or a required grader that errored (judge
//!   unavailable or malformed after its retries, custom grader crash or timeout). Excluded from
//!   every mean, counted per arm.

pub mod checks;
pub mod custom;
pub mod deterministic;
pub mod judge;
pub mod metric;
pub mod pipeline;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use checks::CheckResult;
pub use metric::{MetricResult, MetricSource};

/// What the LLM judges spent on one trial (a trial record's `judge_usage`; per metric in a
/// judge metric's `judge.spent`): requests, cache hits, tokens and their cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeSpend {
    /// Judge requests answered (re-asks after malformed answers included).
    pub requests: u64,
    /// Repeats answered from the judge cache (no request, no cost).
    #[serde(default)]
    pub cached_answers: u64,
    /// Tokens the judge servers reported, summed; `cost_usd` priced from the judge profile's
    /// `[price]` table (null without one).
    pub usage: crate::trajectory::Usage,
    /// Why the judge was not asked (`--judge-scope decisive`: its answer could not change the
    /// trial's outcome); absent when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl JudgeSpend {
    /// Add another judge call's (or metric's) spend.
    pub fn add(&mut self, other: &JudgeSpend) {
        self.requests += other.requests;
        self.cached_answers += other.cached_answers;
        self.usage.add(&other.usage);
        if self.skipped.is_none() {
            self.skipped.clone_from(&other.skipped);
        }
    }

    /// The judges' spend on a trial: the sum over its judge metrics (every judge's); `None`
    /// when no judge metric was graded.
    pub fn of_metrics<'a>(metrics: impl IntoIterator<Item = &'a MetricResult>) -> Option<Self> {
        let mut total: Option<JudgeSpend> = None;
        for spent in metrics
            .into_iter()
            .filter_map(|m| m.judge.as_ref().and_then(|j| j.spent.as_ref()))
        {
            total.get_or_insert_with(JudgeSpend::default).add(spent);
        }
        total
    }
}

/// The judges' spend over a run's trials (`summary.json` `judge_spend`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeSpendSummary {
    /// Trials a judge was asked about.
    pub trials_judged: usize,
    /// Trials whose judge calls were skipped (`--judge-scope decisive`).
    pub trials_skipped: usize,
    /// Judge requests answered.
    pub requests: u64,
    /// Repeats answered from the judge cache.
    pub cached_answers: u64,
    /// Judge input tokens, summed (null when no server reported them).
    pub input_tokens: Option<u64>,
    /// Judge output tokens, summed.
    pub output_tokens: Option<u64>,
    /// Judge cost in USD from the judge profile's `[price]` (null without one).
    pub cost_usd: Option<f64>,
    /// Judged trials whose judge cost is unknown (tokens but no `[price]`).
    pub unpriced_trials: usize,
}

impl JudgeSpendSummary {
    /// Count one trial's judge spend.
    pub fn add(&mut self, spent: &JudgeSpend) {
        if spent.skipped.is_some() && spent.requests == 0 && spent.cached_answers == 0 {
            self.trials_skipped += 1;
            return;
        }
        self.trials_judged += 1;
        self.requests += spent.requests;
        self.cached_answers += spent.cached_answers;
        let mut tokens = crate::trajectory::Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cost_usd: self.cost_usd,
            ..Default::default()
        };
        tokens.add(&spent.usage);
        self.input_tokens = tokens.input_tokens;
        self.output_tokens = tokens.output_tokens;
        self.cost_usd = tokens.cost_usd;
        if spent.usage.cost_usd.is_none() && spent.requests > 0 {
            self.unpriced_trials += 1;
        }
    }

    /// One line for the terminal and report.md.
    pub fn line(&self) -> String {
        let tokens = match (self.input_tokens, self.output_tokens) {
            (Some(input), Some(output)) => format!(", {input} input / {output} output tokens"),
            _ => String::new(),
        };
        let cost = match self.cost_usd {
            Some(cost) if self.unpriced_trials == 0 => format!(", {cost:.4} USD"),
            Some(cost) => format!(
                ", {cost:.4} USD priced ({} trials without a judge [price])",
                self.unpriced_trials
            ),
            None => ", cost unknown (no [price] in the judge profile)".to_string(),
        };
        let skipped = if self.trials_skipped > 0 {
            format!(
                "; judge skipped on {} trials whose output checks decide (--judge-scope decisive)",
                self.trials_skipped
            )
        } else {
            String::new()
        };
        format!(
            "Judge spend: {} trials judged, {} requests ({} cached answers){tokens}{cost}{skipped}.",
            self.trials_judged, self.requests, self.cached_answers
        )
    }
}

/// Which trials the LLM judges are asked about (`--judge-scope`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum JudgeScope {
    /// Every trial: the judge metrics are reported for every case (default).
    #[default]
    All,
    /// Only trials whose outcome the judge can change: not in cases whose output checks decide
    /// pass or fail (the pass rule never lets a judge overturn them).
    Decisive,
}

impl JudgeScope {
    /// Whether this is the default (left out of the manifest).
    pub fn is_all(&self) -> bool {
        *self == JudgeScope::All
    }
}

/// Which scores decided a trial's pass or fail (recorded as `decided_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PassBasis {
    /// A `security` sub-check found a violation: the trial fails whatever else it scored.
    SecurityGate,
    /// The case's output checks (all must pass).
    OutputChecks,
    /// The outcome score (judge and custom-grader metrics) against `--pass-threshold`.
    OutcomeScore,
}

impl PassBasis {
    /// The recorded name.
    pub fn as_str(self) -> &'static str {
        match self {
            PassBasis::SecurityGate => "security_gate",
            PassBasis::OutputChecks => "output_checks",
            PassBasis::OutcomeScore => "outcome_score",
        }
    }
}

/// The typed outcome of one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The trial passed (its checks, or its outcome score reached the pass threshold).
    Pass,
    /// It did not.
    Fail,
    /// An infrastructure failure (runner, server, incomplete trajectory, grader error):
    /// excluded from rates and means.
    Unscoreable,
    /// The case has nothing to decide pass/fail by: excluded from pass rates.
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

/// A trial's grade: outcome, the reason, each check's result and each metric's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grade {
    /// The trial outcome.
    pub outcome: Outcome,
    /// Why (for fail: the security violation, the first failed check or the outcome score
    /// below the threshold; for unscoreable/not_gradable: the cause).
    pub reason: Option<String>,
    /// Which scores decided pass or fail; `None` for unscoreable and not-gradable trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<PassBasis>,
    /// The outcome score in [0, 1]: the weighted mean of the judge and custom-grader metric
    /// scores ([`outcome_score`]); `None` when no outcome grader scored the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome_score: Option<f64>,
    /// The result of each output check, in the case's order (the implicit `expected_output`
    /// check last).
    pub checks: Vec<CheckResult>,
    /// Applicable metric scores in [0, 1] by metric name (not-applicable metrics are absent).
    pub scores: BTreeMap<String, f64>,
    /// The composite score in [0, 1] (see the module documentation); `None` when no metric
    /// applied or the trial is unscoreable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite: Option<f64>,
    /// Every metric's result with its sub-scores and reason, not-applicable ones included.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, MetricResult>,
    /// Judge metrics of the second and later `--judge` profiles, by judge name: recorded for the
    /// judge-agreement report, never used for the outcome or the composite. A judge that failed
    /// on this trial is absent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_judges: BTreeMap<String, BTreeMap<String, MetricResult>>,
    /// Errors of the second and later judges on this trial (judge name → error per metric):
    /// they do not make the trial unscoreable, but the agreement report counts them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_judge_errors: BTreeMap<String, Vec<String>>,
    /// Why an unscoreable trial is unscoreable, typed (`reason` holds the detail); `None` for
    /// every other outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<UnscoreableCause>,
}

impl Grade {
    /// An unscoreable grade of `cause` whose reason is `reason` (the whole text; see
    /// [`UnscoreableCause::grade`] for `<prefix>: <detail>`).
    pub fn unscoreable(cause: UnscoreableCause, reason: String) -> Self {
        Self {
            cause: Some(cause),
            outcome: Outcome::Unscoreable,
            reason: Some(reason),
            decided_by: None,
            outcome_score: None,
            checks: Vec::new(),
            scores: BTreeMap::new(),
            composite: None,
            metrics: BTreeMap::new(),
            other_judges: BTreeMap::new(),
            other_judge_errors: BTreeMap::new(),
        }
    }
}

/// Why a trial is unscoreable, as a class. It travels typed from where the trial failed to the
/// grade ([`Grade::cause`]), the trial record (`unscoreable_cause`) and the analysis; the reason
/// text carries the detail and starts with [`UnscoreableCause::prefix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnscoreableCause {
    /// The runner failed (HTTP error after retries, agent CLI failure, missing program).
    RunnerError,
    /// The agent CLI reported that its model API was unreachable, refused the credentials,
    /// rate-limited or was overloaded (the typed cause is the record's `infrastructure`).
    AgentApiError,
    /// The trial ran past its timeout.
    Timeout,
    /// The trajectory ended without its terminal event.
    IncompleteTrajectory,
    /// The trial's workspace could not be staged.
    StagingFailed,
    /// The trial's transcript could not be written to the run folder.
    TranscriptWriteFailed,
    /// skill-lift itself failed inside the trial (a panic in the trial's task).
    InternalError,
    /// A judge or custom grader failed (re-grade with `skill-lift regrade`).
    GraderError,
    /// The agent's catalogue listed the target in the baseline.
    IsolationFailure,
    /// The agent's catalogue did not list the staged target.
    DiscoveryFailure,
    /// Anything else (older records).
    Other,
}

impl UnscoreableCause {
    /// Every cause.
    pub const ALL: [UnscoreableCause; 11] = [
        UnscoreableCause::RunnerError,
        UnscoreableCause::AgentApiError,
        UnscoreableCause::Timeout,
        UnscoreableCause::IncompleteTrajectory,
        UnscoreableCause::StagingFailed,
        UnscoreableCause::TranscriptWriteFailed,
        UnscoreableCause::InternalError,
        UnscoreableCause::GraderError,
        UnscoreableCause::IsolationFailure,
        UnscoreableCause::DiscoveryFailure,
        UnscoreableCause::Other,
    ];

    /// The text a reason of this cause starts with.
    pub fn prefix(self) -> &'static str {
        match self {
            UnscoreableCause::RunnerError => "runner error",
            // `agent API unreachable: …`, `agent API rate limit: …` (`InfrastructureCause`).
            UnscoreableCause::AgentApiError => "agent API",
            UnscoreableCause::Timeout => "trial exceeded its timeout",
            UnscoreableCause::IncompleteTrajectory => "incomplete trajectory",
            UnscoreableCause::StagingFailed => "staging failed",
            UnscoreableCause::TranscriptWriteFailed => "transcript write failed",
            UnscoreableCause::InternalError => "internal error",
            UnscoreableCause::GraderError => "grader error",
            UnscoreableCause::IsolationFailure => "isolation failure",
            UnscoreableCause::DiscoveryFailure => "discovery failure",
            UnscoreableCause::Other => "",
        }
    }

    /// The cause of a reason recorded before causes were typed (trial records without
    /// `unscoreable_cause`), by its prefix. Only [`crate::record::TrialRecord::cause`] reads old
    /// records this way; nothing new is classified by its text.
    pub fn of_legacy_reason(reason: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|cause| cause != &UnscoreableCause::Other && reason.starts_with(cause.prefix()))
            .unwrap_or(UnscoreableCause::Other)
    }

    /// Whether the cause is the infrastructure's, not the agent's or the skill's: such trials
    /// are re-run by `run --resume --retry-unscoreable`. Grader errors are re-graded instead
    /// (`skill-lift regrade`), isolation and discovery failures are facts about the trial.
    pub fn is_infrastructure(self) -> bool {
        matches!(
            self,
            UnscoreableCause::RunnerError
                | UnscoreableCause::AgentApiError
                | UnscoreableCause::Timeout
                | UnscoreableCause::IncompleteTrajectory
                | UnscoreableCause::StagingFailed
                | UnscoreableCause::TranscriptWriteFailed
                | UnscoreableCause::InternalError
        )
    }

    /// An unscoreable grade of this cause: `<prefix>: <detail>`.
    pub fn grade(self, detail: impl std::fmt::Display) -> Grade {
        Grade::unscoreable(self, format!("{}: {detail}", self.prefix()))
    }

    /// The name the analysis counts this cause under (`summary.json` `unscoreable_causes`):
    /// its prefix (`runner error`, `grader error`, …); `other` for [`UnscoreableCause::Other`].
    pub fn label(self) -> &'static str {
        match self {
            UnscoreableCause::Other => "other",
            cause => cause.prefix(),
        }
    }
}

/// The composite score: the weighted mean of the applicable metric scores in `metrics`, a
/// metric's weight taken from `weights` (1.0 when absent; 0 leaves it out). `None` when no
/// metric with positive weight applied.
pub fn composite_score(
    metrics: &BTreeMap<String, MetricResult>,
    weights: &BTreeMap<String, f64>,
) -> Option<f64> {
    let mut weighted = 0.0;
    let mut total_weight = 0.0;
    for (name, result) in metrics {
        let weight = weights.get(name).copied().unwrap_or(1.0);
        if let Some(score) = result.score
            && weight > 0.0
        {
            weighted += weight * score;
            total_weight += weight;
        }
    }
    (total_weight > 0.0).then(|| weighted / total_weight)
}

/// The outcome score: the weighted mean of the applicable **outcome** metric scores in `metrics`
/// — those from an LLM judge or a custom grader ([`MetricSource::Judge`],
/// [`MetricSource::Custom`]) — with the same weights as the composite (1.0 when absent; 0 leaves
/// a metric out). Process metrics and `checks` are never part of it. `None` when no outcome
/// metric with positive weight applied.
pub fn outcome_score(
    metrics: &BTreeMap<String, MetricResult>,
    weights: &BTreeMap<String, f64>,
) -> Option<f64> {
    let mut weighted = 0.0;
    let mut total_weight = 0.0;
    for (name, result) in metrics {
        if !matches!(result.source, MetricSource::Judge | MetricSource::Custom) {
            continue;
        }
        let weight = weights.get(name).copied().unwrap_or(1.0);
        if let Some(score) = result.score
            && weight > 0.0
        {
            weighted += weight * score;
            total_weight += weight;
        }
    }
    (total_weight > 0.0).then(|| weighted / total_weight)
}

/// The security violation a `security` metric result shows, as `sub-check: reason` (the first
/// sub-check that scored below 1), or `None` when every applicable sub-check was clean.
pub fn security_violation(security: &MetricResult) -> Option<String> {
    security
        .sub_scores
        .iter()
        .find(|(_, sub)| sub.score.is_some_and(|score| score < 1.0))
        .map(|(name, sub)| format!("{name}: {}", sub.reason))
}

/// Settings of the grader set, recorded in the manifest (a resumed run must grade the same way;
/// `regrade` records its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GradingSettings {
    /// Whether the deterministic skill metrics are computed (false only in runs recorded before
    /// they existed).
    pub deterministic_metrics: bool,
    /// Outcome-score threshold for a pass when the case has no output checks.
    pub pass_threshold: f64,
    /// Metric weights in the composite that differ from 1.0.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub weights: BTreeMap<String, f64>,
    /// How `expected_output` is matched for cases that do not say (`--expected-output-match`).
    pub expected_output_match: checks::OutputMatch,
    /// The LLM judges, primary first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<JudgeInfo>,
    /// Judge metrics computed (`accuracy`, `goal_accuracy`, `behavior_check`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge_metrics: Vec<String>,
    /// Judge repeats per metric per trial.
    pub judge_k: u32,
    /// Judge rubric version, when a judge is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_version: Option<String>,
    /// Custom grader commands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom_graders: Vec<custom::CustomGraderSpec>,
    /// Which trials the judges are asked about (`--judge-scope`; absent: every trial).
    #[serde(default, skip_serializing_if = "JudgeScope::is_all")]
    pub judge_scope: JudgeScope,
}

impl Default for GradingSettings {
    /// The settings of runs recorded before grading settings existed: output checks only.
    fn default() -> Self {
        Self {
            deterministic_metrics: false,
            pass_threshold: DEFAULT_PASS_THRESHOLD,
            weights: BTreeMap::new(),
            expected_output_match: checks::OutputMatch::Judge,
            judges: Vec::new(),
            judge_metrics: Vec::new(),
            judge_k: 1,
            rubric_version: None,
            custom_graders: Vec::new(),
            judge_scope: JudgeScope::All,
        }
    }
}

impl GradingSettings {
    /// Settings of a new run: deterministic metrics on, no judge, no custom grader.
    pub fn new() -> Self {
        Self {
            deterministic_metrics: true,
            ..Self::default()
        }
    }

    /// The weight of `metric` in the composite.
    pub fn weight(&self, metric: &str) -> f64 {
        self.weights.get(metric).copied().unwrap_or(1.0)
    }
}

/// Default `--pass-threshold`.
pub const DEFAULT_PASS_THRESHOLD: f64 = 0.5;

/// One judge as recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeInfo {
    /// Profile name.
    pub name: String,
    /// Profile kind (`openai-chat`, `anthropic-messages`).
    pub kind: String,
    /// Judge model.
    pub model: String,
    /// Server base URL.
    pub base_url: String,
    /// Absolute path of the profile file (a resumed run reloads it from here).
    #[serde(default)]
    pub profile_path: std::path::PathBuf,
    /// `sha256:<hex>` of the profile file.
    pub profile_digest: String,
}
