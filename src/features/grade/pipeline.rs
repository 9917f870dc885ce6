//! The grader set of a run: every grading component applied to one trial, in one order, by the
//! run itself and by `regrade` alike.
//!
//! Two steps, because they need different things: [`GraderSet::grade_remote`] (async: LLM judges
//! over HTTP, custom grader processes in the live workspace) and [`GraderSet::finish`]
//! (synchronous: output checks, deterministic metrics, composite and outcome). The scheduler runs
//! the first on its async workers and the second on the blocking pool while the workspace still
//! exists.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Semaphore;

use crate::features::evalset::GoldenCase;
use crate::features::grade::checks;
use crate::features::grade::custom::{self, GraderInput};
use crate::features::grade::metric::MetricContext;
use crate::features::grade::{composite_score, deterministic, outcome_score, security_violation};
use crate::features::workspace::ArmStaging;
use crate::record::{
    Arm, CheckResult, Grade, GradingSettings, JudgeInfo, MetricResult, MetricSource, Outcome,
    PassBasis, UnscoreableCause,
};
use crate::values::trajectory::{Trajectory, TrajectoryStatus};

/// A judge that gave no usable answer (infrastructure errors past their retries, or malformed
/// answers past the format retries). The trial is unscoreable, never scored 0.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct JudgeError {
    /// Why, as a type: callers read the cause from here, never from `message`.
    pub failure: JudgeFailure,
    /// What failed, naming the judge and metric (never a credential).
    pub message: String,
}

/// Why a judge gave no usable answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JudgeFailure {
    /// A request failed for good: connection errors, timeouts or error answers past their
    /// retries, or an error status that is not retried (`status`, when the server answered).
    Request {
        /// The HTTP status of the last answer.
        status: Option<u16>,
    },
    /// The server answered, but not in the shape of its API (no message, no content).
    MalformedResponse,
    /// Every answer was malformed, past the format retries.
    MalformedAnswer,
    /// The grader set asked for a metric the judge does not grade.
    UnknownMetric,
    /// The judge's request slots were closed before the grade could start.
    SlotsClosed,
}

impl JudgeError {
    /// A failure of `failure`'s kind, described by `message`.
    pub(crate) fn new(failure: JudgeFailure, message: impl Into<String>) -> Self {
        Self {
            failure,
            message: message.into(),
        }
    }
}

/// An LLM judge as the grader set uses it (implemented by [`crate::features::grade::judge::Judge`]; tests
/// may script one).
#[async_trait]
pub(crate) trait TrialJudge: Send + Sync {
    /// What the manifest records about the judge.
    fn info(&self) -> &JudgeInfo;
    /// Requests the judge may have in flight at once.
    fn concurrency(&self) -> usize;
    /// One line on what the judge spent so far (requests, cache hits, tokens), when it counts.
    fn usage_line(&self) -> Option<String> {
        None
    }
    /// Grade `metric` (`accuracy`, `goal_accuracy`, `behavior_check`) on one trajectory.
    /// `Err` is why the trial is unscoreable (its [`JudgeFailure`] the cause).
    async fn grade(
        &self,
        metric: &str,
        case: &GoldenCase,
        target_skill: &str,
        trajectory: &Trajectory,
    ) -> Result<MetricResult, JudgeError>;
}

/// Everything grading needs to know about one trial.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TrialFacts<'a> {
    pub case: &'a GoldenCase,
    pub trajectory: &'a Trajectory,
    pub arm: Arm,
    pub attempt: u32,
    /// `<case_id>/<arm>/<attempt>`.
    pub trial_id: &'a str,
    /// The skill under evaluation.
    pub target_skill: &'a str,
    /// Skills staged in this arm (decoys, plus the target in `with_skill`).
    pub staged_skills: &'a [String],
    /// False in `inject` mode (every staged skill is in the prompt).
    pub activation_observable: bool,
    /// False for runners without a shell (`openai-chat`).
    pub can_run_commands: bool,
    /// The live workspace, when it still exists (workspace checks, custom graders' folder).
    pub workspace: Option<&'a Path>,
    /// The workspace and home paths as they were during the run (scope checks).
    pub run_workspace: Option<&'a Path>,
    pub run_home: Option<&'a Path>,
    /// Recorded check results (`regrade`): workspace checks reuse them when `workspace` is gone.
    pub recorded_checks: Option<&'a [CheckResult]>,
}

/// The skills staged in a trial: the decoys, plus the target when `staging` says so, sorted.
pub(crate) fn staged_skill_names(
    target: &str,
    decoys: &[String],
    staging: ArmStaging,
) -> Vec<String> {
    let mut names = decoys.to_vec();
    if staging.stages_target_name() {
        names.push(target.to_string());
    }
    names.sort();
    names
}

/// What the asynchronous graders produced for one trial.
#[derive(Debug, Clone, Default)]
pub(crate) struct RemoteGrades {
    /// Metrics of the primary judge and the custom graders.
    pub metrics: BTreeMap<String, MetricResult>,
    /// Metrics of the other judges, by judge name.
    pub other_judges: BTreeMap<String, BTreeMap<String, MetricResult>>,
    /// Errors of required graders (the primary judge, custom graders).
    pub errors: Vec<String>,
    /// Errors of the other judges, by judge name.
    pub other_judge_errors: BTreeMap<String, Vec<String>>,
}

/// A judge with its request slots.
struct JudgeSlot {
    judge: Arc<dyn TrialJudge>,
    slots: Arc<Semaphore>,
}

/// The grader set of a run.
pub(crate) struct GraderSet {
    /// The recorded settings.
    pub settings: GradingSettings,
    judges: Vec<JudgeSlot>,
    /// `(variable, value)` credentials passed to the runner, for the secret scan.
    secrets: Vec<(String, String)>,
}

impl GraderSet {
    /// A grader set. `judges` are in `--judge` order (the first is primary); their
    /// [`JudgeInfo`] must match `settings.judges`.
    pub(crate) fn new(
        settings: GradingSettings,
        judges: Vec<Arc<dyn TrialJudge>>,
        secrets: Vec<(String, String)>,
    ) -> Self {
        let judges = judges
            .into_iter()
            .map(|judge| JudgeSlot {
                slots: Arc::new(Semaphore::new(judge.concurrency().max(1))),
                judge,
            })
            .collect();
        Self {
            settings,
            judges,
            secrets,
        }
    }

    /// `(variable, value)` of the credentials passed to the runner (redacted from recorded
    /// trajectories, searched for by the `security` metric).
    pub(crate) fn credentials(&self) -> &[(String, String)] {
        &self.secrets
    }

    /// One line per judge on what it spent (for the end of a run or regrade).
    pub(crate) fn judge_usage_lines(&self) -> Vec<String> {
        self.judges
            .iter()
            .filter_map(|slot| slot.judge.usage_line())
            .collect()
    }

    /// Whether any grader calls out (judges or custom graders).
    pub(crate) fn has_remote(&self) -> bool {
        !self.judges.is_empty() || !self.settings.custom_graders.is_empty()
    }

    /// Run the judges and custom graders on one trial (nothing for an incomplete trajectory).
    /// Judge metrics and graders run concurrently; each judge keeps to its own concurrency.
    pub(crate) async fn grade_remote(&self, facts: &TrialFacts<'_>) -> RemoteGrades {
        let mut remote = RemoteGrades::default();
        if matches!(facts.trajectory.status, TrajectoryStatus::Incomplete { .. }) {
            return remote;
        }
        let arm = facts.arm.as_str();
        let grader_runs = self.settings.custom_graders.iter().map(|spec| async move {
            let input = GraderInput {
                trial_id: facts.trial_id,
                arm,
                attempt: facts.attempt,
                target_skill: facts.target_skill,
                case: facts.case,
                trajectory: facts.trajectory,
                workspace: facts.workspace,
            };
            custom::run_grader(spec, &input).await
        });
        let mut judge_runs = Vec::new();
        let skip_judges = self.settings.judge_scope == crate::record::JudgeScope::Decisive
            && output_checks_decide(facts.case, &self.settings);
        for (index, slot) in self.judges.iter().enumerate() {
            for metric in &self.settings.judge_metrics {
                if skip_judges {
                    let skipped = skipped_judge_metric(slot.judge.info());
                    judge_runs.push(futures::future::Either::Left(async move {
                        (index, metric.clone(), Ok(skipped))
                    }));
                    continue;
                }
                judge_runs.push(futures::future::Either::Right(async move {
                    let result = match slot.slots.acquire().await {
                        Ok(_permit) => {
                            slot.judge
                                .grade(metric, facts.case, facts.target_skill, facts.trajectory)
                                .await
                        }
                        Err(_) => Err(JudgeError::new(
                            JudgeFailure::SlotsClosed,
                            "judge slots closed",
                        )),
                    };
                    (index, metric.clone(), result)
                }));
            }
        }
        let (grader_results, judge_results) = futures::join!(
            futures::future::join_all(grader_runs),
            futures::future::join_all(judge_runs)
        );
        for result in grader_results {
            match result {
                Ok(metrics) => {
                    for (name, metric) in metrics {
                        if remote.metrics.contains_key(&name) {
                            remote
                                .errors
                                .push(format!("two custom graders returned the metric `{name}`"));
                        }
                        remote.metrics.insert(name, metric);
                    }
                }
                Err(error) => remote.errors.push(error.to_string()),
            }
        }
        for (index, metric, result) in judge_results {
            let judge_name = &self.judges[index].judge.info().name;
            match (index, result) {
                (0, Ok(result)) => {
                    remote.metrics.insert(metric, result);
                }
                // `style` never decides a pass, so its failure must not take the trial's
                // outcome away either: the metric alone is unscoreable (no score, never a 0).
                (0, Err(error)) if metric == crate::record::STYLE => {
                    remote.metrics.insert(
                        metric,
                        unscoreable_style(self.judges[0].judge.info(), &error),
                    );
                }
                (0, Err(error)) => remote.errors.push(error.message),
                (_, Ok(result)) => {
                    remote
                        .other_judges
                        .entry(judge_name.clone())
                        .or_default()
                        .insert(metric, result);
                }
                // A second judge only feeds the agreement report; its failure does not make the
                // trial unscoreable, but it is recorded and counted.
                (_, Err(error)) => remote
                    .other_judge_errors
                    .entry(judge_name.clone())
                    .or_default()
                    .push(format!("{metric}: {}", error.message)),
            }
        }
        remote
    }

    /// Output checks, deterministic metrics, composite and outcome.
    pub(crate) fn finish(&self, facts: &TrialFacts<'_>, remote: RemoteGrades) -> Grade {
        if let Some(failure) = &facts.trajectory.infrastructure_error {
            // The agent's own report: "agent API unreachable: API Error: Can't reach …".
            return Grade::unscoreable(
                UnscoreableCause::AgentApiError,
                format!("{}: {}", failure.cause.describe(), failure.message),
            );
        }
        if let TrajectoryStatus::Incomplete { reason } = &facts.trajectory.status {
            return UnscoreableCause::IncompleteTrajectory.grade(reason);
        }
        if !remote.errors.is_empty() {
            return UnscoreableCause::GraderError.grade(remote.errors.join("; "));
        }
        let checks = self.output_checks(facts);
        let mut metrics = BTreeMap::new();
        if self.settings.deterministic_metrics {
            let context = MetricContext {
                target_skill: facts.target_skill,
                staged_skills: facts.staged_skills,
                activation_observable: facts.activation_observable,
                can_run_commands: facts.can_run_commands,
                workspace: facts.run_workspace,
                home: facts.run_home,
                secrets: &self.secrets,
            };
            let (case, trajectory) = (facts.case, facts.trajectory);
            metrics.insert(
                crate::record::SECURITY.to_string(),
                deterministic::security(case, trajectory, &context),
            );
            metrics.insert(
                crate::record::SKILL_EXECUTION.to_string(),
                deterministic::skill_execution(case, trajectory, &context),
            );
            metrics.insert(
                crate::record::SKILL_EFFICIENCY.to_string(),
                deterministic::skill_efficiency(case, trajectory, &context),
            );
        }
        if !checks.is_empty() {
            metrics.insert(crate::record::CHECKS.to_string(), checks_metric(&checks));
        }
        metrics.extend(remote.metrics);
        let scores: BTreeMap<String, f64> = metrics
            .iter()
            .filter_map(|(name, result)| result.score.map(|score| (name.clone(), score)))
            .collect();
        let composite = composite_score(&metrics, &self.settings.weights);
        let outcome_score = outcome_score(&metrics, &self.settings.weights);
        let (outcome, decided_by, reason) = decide_outcome(
            &checks,
            &metrics,
            outcome_score,
            self.settings.pass_threshold,
        );
        Grade {
            outcome,
            reason,
            decided_by,
            outcome_score,
            checks,
            scores,
            composite,
            metrics,
            other_judges: remote.other_judges,
            other_judge_errors: remote.other_judge_errors,
            cause: None,
        }
    }

    /// Grade one trial completely (both steps). File checks read the workspace on the calling
    /// thread.
    pub(crate) async fn grade(&self, facts: &TrialFacts<'_>) -> Grade {
        let remote = self.grade_remote(facts).await;
        self.finish(facts, remote)
    }

    /// The case's checks plus the implicit `expected_output` check. With the workspace gone,
    /// workspace checks reuse the recorded result at the same position.
    fn output_checks(&self, facts: &TrialFacts<'_>) -> Vec<CheckResult> {
        let answer = facts.trajectory.final_answer.as_deref().unwrap_or("");
        let workspace = facts
            .workspace
            .unwrap_or(Path::new("/nonexistent-workspace"));
        let mut results: Vec<CheckResult> = facts
            .case
            .checks
            .iter()
            .enumerate()
            .map(|(index, check)| {
                if check.reads_workspace()
                    && facts.workspace.is_none()
                    && let Some(recorded) = facts
                        .recorded_checks
                        .and_then(|recorded| recorded.get(index))
                        .filter(|r| r.check_type == check.type_name())
                {
                    return recorded.clone();
                }
                check.evaluate_in(answer, workspace, Some(facts.trajectory))
            })
            .collect();
        let mode = facts
            .case
            .expected_output_match
            .unwrap_or(self.settings.expected_output_match);
        if let Some(expected) = &facts.case.expected_output
            && let Some(result) = checks::expected_output_check(mode, expected, answer)
        {
            results.push(result);
        }
        results
    }
}

/// Prefix of the reason of a `style` metric whose judge failed.
pub(crate) const STYLE_UNSCOREABLE_PREFIX: &str = "unscoreable: ";

/// The `style` result of a trial whose judge gave no usable style answer: no score (left out
/// of the style means, never a 0), the judge's error as the reason.
fn unscoreable_style(info: &JudgeInfo, error: &JudgeError) -> MetricResult {
    MetricResult {
        score: None,
        reason: format!("{STYLE_UNSCOREABLE_PREFIX}{}", error.message),
        source: MetricSource::Judge,
        sub_scores: BTreeMap::new(),
        judge: Some(crate::record::JudgeSpread {
            judge: info.name.clone(),
            model: info.model.clone(),
            repeats: Vec::new(),
            sd: None,
            cached: 0,
            items: Vec::new(),
            spent: None,
        }),
    }
}

/// Why a judge is not asked under `--judge-scope decisive`.
pub(crate) const JUDGE_SKIPPED_REASON: &str = "skipped: the case's output checks decide pass or fail, so the judge could not change the outcome (--judge-scope decisive)";

/// Whether the case's output checks decide its trials' pass or fail (the pass rule's step 2):
/// it has `checks`, or an `expected_output` matched deterministically.
pub(crate) fn output_checks_decide(case: &GoldenCase, settings: &GradingSettings) -> bool {
    let mode = case
        .expected_output_match
        .unwrap_or(settings.expected_output_match);
    !case.checks.is_empty()
        || (case.expected_output.is_some() && mode != crate::record::OutputMatch::Judge)
}

/// The result of a judge metric not asked (`--judge-scope decisive`): no score, the reason,
/// and a spend of nothing that says why.
fn skipped_judge_metric(info: &JudgeInfo) -> MetricResult {
    MetricResult {
        score: None,
        reason: JUDGE_SKIPPED_REASON.to_string(),
        source: MetricSource::Judge,
        sub_scores: BTreeMap::new(),
        judge: Some(crate::record::JudgeSpread {
            judge: info.name.clone(),
            model: info.model.clone(),
            repeats: Vec::new(),
            sd: None,
            cached: 0,
            items: Vec::new(),
            spent: Some(crate::record::JudgeSpend {
                skipped: Some(JUDGE_SKIPPED_REASON.to_string()),
                ..Default::default()
            }),
        }),
    }
}

/// The pass rule (`crate::features::grade` module documentation; `docs/grading.md` "Pass rule"): the
/// security gate, then the output checks, then the outcome score against `pass_threshold`;
/// process metrics and `style` never decide. Returns the outcome, what decided it, and the reason for a
/// fail or a not-gradable trial.
pub(crate) fn decide_outcome(
    checks: &[CheckResult],
    metrics: &BTreeMap<String, MetricResult>,
    outcome_score: Option<f64>,
    pass_threshold: f64,
) -> (Outcome, Option<PassBasis>, Option<String>) {
    if let Some(violation) = metrics
        .get(crate::record::SECURITY)
        .and_then(security_violation)
    {
        return (
            Outcome::Fail,
            Some(PassBasis::SecurityGate),
            Some(format!("security violation: {violation}")),
        );
    }
    if !checks.is_empty() {
        return match checks.iter().find(|c| !c.passed) {
            None => (Outcome::Pass, Some(PassBasis::OutputChecks), None),
            Some(failed) => (
                Outcome::Fail,
                Some(PassBasis::OutputChecks),
                Some(format!("{}: {}", failed.check_type, failed.detail)),
            ),
        };
    }
    // `style` never decides: it is not an outcome metric.
    let outcome_graded = metrics.iter().any(|(name, m)| {
        crate::features::grade::counts_toward_scores(name, m)
            && matches!(m.source, MetricSource::Judge | MetricSource::Custom)
            && m.score.is_some()
    });
    match outcome_score {
        Some(value) if value >= pass_threshold => {
            (Outcome::Pass, Some(PassBasis::OutcomeScore), None)
        }
        Some(value) => (
            Outcome::Fail,
            Some(PassBasis::OutcomeScore),
            Some(format!(
                "outcome score {value:.4} (judge and custom-grader metrics) is below the pass threshold {pass_threshold}"
            )),
        ),
        None if outcome_graded => (
            Outcome::NotGradable,
            None,
            Some("no outcome metric with a positive weight applied (see --metric-weight)".to_string()),
        ),
        None => (
            Outcome::NotGradable,
            None,
            Some(
                "no outcome grader: the case has no output checks; add `checks`, an `expected_output_match`, --judge PROFILE or --grader COMMAND"
                    .to_string(),
            ),
        ),
    }
}

/// The `checks` metric: the fraction of output checks that passed.
fn checks_metric(checks: &[CheckResult]) -> MetricResult {
    let passed = checks.iter().filter(|c| c.passed).count();
    let reason = match checks.iter().find(|c| !c.passed) {
        None => format!("{passed}/{} checks passed", checks.len()),
        Some(failed) => format!(
            "{passed}/{} checks passed; first failure: {}: {}",
            checks.len(),
            failed.check_type,
            failed.detail
        ),
    };
    MetricResult {
        score: Some(passed as f64 / checks.len() as f64),
        reason,
        source: MetricSource::Deterministic,
        sub_scores: BTreeMap::new(),
        judge: None,
    }
}

#[cfg(test)]
mod tests;
