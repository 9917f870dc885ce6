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

pub(crate) mod checks;
pub(crate) mod custom;
pub(crate) mod deterministic;
pub(crate) mod judge;
pub(crate) mod metric;
pub(crate) mod pipeline;
pub(crate) mod style_reference;

use std::collections::BTreeMap;

use crate::record::{
    Grade, GradingSettings, JudgeScope, JudgeSpend, JudgeSpendSummary, MetricResult, MetricSource,
    Outcome, PassBasis, UnscoreableCause,
};

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
        let mut tokens = crate::values::trajectory::Usage {
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

impl JudgeScope {
    /// Whether this is the default (left out of the manifest).
    pub fn is_all(&self) -> bool {
        *self == JudgeScope::All
    }
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
/// metric's weight taken from `weights` (1.0 when absent; 0 leaves it out); `style` never
/// counts. `None` when no metric with positive weight applied.
pub(crate) fn composite_score(
    metrics: &BTreeMap<String, MetricResult>,
    weights: &BTreeMap<String, f64>,
) -> Option<f64> {
    weighted_mean(metrics, weights, |_| true)
}

/// Whether a metric may count toward the composite and the outcome score: every metric but
/// the judge's `style`, which is reported beside them and breaks ties in `compare`, never
/// more (a custom grader's metric of that name counts as any custom metric does).
pub(crate) fn counts_toward_scores(name: &str, result: &MetricResult) -> bool {
    !(name == crate::record::STYLE && result.source == MetricSource::Judge)
}

/// The outcome score: the weighted mean of the applicable **outcome** metric scores in `metrics`
/// — those from an LLM judge or a custom grader ([`MetricSource::Judge`],
/// [`MetricSource::Custom`]) — with the same weights as the composite (1.0 when absent; 0 leaves
/// a metric out). Process metrics, `checks` and `style` are never part of it. `None` when no outcome
/// metric with positive weight applied.
pub(crate) fn outcome_score(
    metrics: &BTreeMap<String, MetricResult>,
    weights: &BTreeMap<String, f64>,
) -> Option<f64> {
    weighted_mean(metrics, weights, |result| {
        matches!(result.source, MetricSource::Judge | MetricSource::Custom)
    })
}

/// The weighted mean of the scores of the metrics that `counts` keeps (weight 1.0 when absent
/// from `weights`; 0 leaves a metric out); `None` when none with positive weight applied.
fn weighted_mean(
    metrics: &BTreeMap<String, MetricResult>,
    weights: &BTreeMap<String, f64>,
    counts: impl Fn(&MetricResult) -> bool,
) -> Option<f64> {
    let mut weighted = 0.0;
    let mut total_weight = 0.0;
    for (name, result) in metrics
        .iter()
        .filter(|(name, result)| counts_toward_scores(name, result) && counts(result))
    {
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
pub(crate) fn security_violation(security: &MetricResult) -> Option<String> {
    security
        .sub_scores
        .iter()
        .find(|(_, sub)| sub.score.is_some_and(|score| score < 1.0))
        .map(|(name, sub)| format!("{name}: {}", sub.reason))
}

impl Default for GradingSettings {
    /// The settings of runs recorded before grading settings existed: output checks only.
    fn default() -> Self {
        Self {
            deterministic_metrics: false,
            pass_threshold: DEFAULT_PASS_THRESHOLD,
            weights: BTreeMap::new(),
            expected_output_match: crate::record::OutputMatch::Judge,
            judges: Vec::new(),
            judge_metrics: Vec::new(),
            judge_k: 1,
            rubric_version: None,
            custom_graders: Vec::new(),
            judge_scope: JudgeScope::All,
            style_reference: None,
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
pub(crate) const DEFAULT_PASS_THRESHOLD: f64 = 0.5;
