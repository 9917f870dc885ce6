//! Trigger evaluation (`skill-lift triggers`): does the skill activate when it should, and only
//! then? Owns the trigger set (skill-creator `[{query, should_trigger}]`, skill-lift's
//! `triggers.json`, or an ACES golden set's `should_trigger` / `expected_skill`), the attempt
//! loop (each query K times, the target and the decoys staged, through the run's own staging
//! and runner code), what one attempt shows (the skills activated anywhere in its trajectory),
//! and the analysis: per-query trigger rates, precision / recall / F1 with Wilson intervals,
//! attempt-level trigger rates, and the confusions (which skill was activated instead).
//!
//! The query is the unit of analysis: K attempts give a query its trigger rate, and the query
//! counts as triggered when that rate reaches the threshold (skill-creator's rule, 0.5 by
//! default). Intervals are over queries, never over queries × K (design.md, "the case is the
//! unit of analysis"). This module does not parse flags or print: `cli::triggers` does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::analysis::stats::{EffectiveCountWilson, Interval, effective_count_wilson_interval};
use crate::features::asset::fingerprint::Calibre;
use crate::features::evalset::{
    EvalSetError, ExpectedSkill, GoldenCase, load_eval_set, load_trigger_set as load_trigger_list,
};
use crate::features::runner::{AttemptInput, Runner};
use crate::features::workspace::{ArmStaging, SkillSource, TrialStaging, stage_trial};
use crate::record::UnscoreableCause;
use crate::values::trajectory::{ActivationEvidence, Trajectory, TrajectoryStatus};

/// Version of `triggers.json` (the result file).
pub(crate) const TRIGGERS_FORMAT_VERSION: u32 = 1;
/// A query counts as triggered when the target was activated in at least this share of its
/// scored attempts (skill-creator's `--trigger-threshold` default).
pub(crate) const DEFAULT_THRESHOLD: f64 = 0.5;
/// Two-sided level of every interval.
pub(crate) const CONFIDENCE: f64 = 0.95;
/// File names looked for in `SKILL_DIR/evals/` when no trigger set is given, in order; then
/// the golden set (`evals.json`) when its cases carry negatives.
pub(crate) const DEFAULT_TRIGGER_FILES: [&str; 5] = [
    "triggers.json",
    "trigger-eval.json",
    "trigger_eval.json",
    "trigger-evals.json",
    "trigger_evals.json",
];
/// Extra time past the runner's own budget before an attempt is abandoned.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// Where the queries came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TriggerSetFormat {
    /// A trigger list: skill-creator's `[{query, should_trigger}]` (also under `evals`,
    /// `queries` or `triggers`), with skill-lift's optional `id`, `expected_skill`, `note`.
    TriggerList,
    /// Golden cases (`evals.json`, ACES): each active case's prompt, with `should_trigger`
    /// (default: `expected_skill` is not null) and a named `expected_skill`.
    GoldenCases,
}

/// One query to replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TriggerQuery {
    /// Unique id (`id` from the file, else `q01`, `q02`, … by position).
    pub id: String,
    /// The user's message.
    pub query: String,
    /// Whether the target should be activated.
    pub should_trigger: bool,
    /// The skill that should handle the query, when the file names one other than the target
    /// (a decoy for a near-miss negative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_skill: Option<String>,
    /// Free text from the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A loaded trigger set.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TriggerSet {
    /// The file read.
    pub path: PathBuf,
    /// `sha256:<hex>` of its bytes.
    pub digest: String,
    pub format: TriggerSetFormat,
    pub queries: Vec<TriggerQuery>,
    /// Problems that did not stop loading.
    pub warnings: Vec<String>,
}

impl TriggerSet {
    /// Queries that should trigger.
    pub(crate) fn positives(&self) -> usize {
        self.queries.iter().filter(|q| q.should_trigger).count()
    }

    /// Queries that should not.
    pub(crate) fn negatives(&self) -> usize {
        self.queries.len() - self.positives()
    }
}

/// Why a trigger set could not be used or an evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TriggerError {
    #[error(transparent)]
    EvalSet(#[from] EvalSetError),
    #[error(
        "{dir}: no trigger set found (looked for evals/{} and for golden cases with negatives in evals/evals.json); write evals/triggers.json (docs/triggers.md) or pass --triggers FILE",
        DEFAULT_TRIGGER_FILES.join(", evals/")
    )]
    NotFound { dir: PathBuf },
    #[error("{path}: {at}: {message}")]
    Invalid {
        path: PathBuf,
        at: String,
        message: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The trigger set of `skill_dir` when none is named: the first of [`DEFAULT_TRIGGER_FILES`]
/// in `evals/`, else `evals/evals.json` (golden cases; refused later when it has no
/// negatives).
pub(crate) fn find_trigger_set(skill_dir: &Path) -> Result<PathBuf, TriggerError> {
    let evals = skill_dir.join("evals");
    for name in DEFAULT_TRIGGER_FILES {
        let path = evals.join(name);
        if path.is_file() {
            return Ok(path);
        }
    }
    let golden = crate::features::evalset::default_eval_path(skill_dir);
    if golden.is_file() {
        return Ok(golden);
    }
    Err(TriggerError::NotFound {
        dir: skill_dir.to_path_buf(),
    })
}

/// Load the trigger set at `path` for the target `target` (its name), whose folder is
/// `skill_dir`: a trigger list, or golden cases read for their `should_trigger`.
///
/// Refused (naming the file and the query): an `expected_skill` equal to the target on a
/// should-not-trigger query (contradictory), golden cases without a single negative or a
/// single positive (precision or recall would be undefined by construction).
pub(crate) fn load_triggers(
    path: &Path,
    skill_dir: &Path,
    target: &str,
) -> Result<TriggerSet, TriggerError> {
    let bytes = std::fs::read(path).map_err(|source| TriggerError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let digest = crate::features::asset::fingerprint::sha256_digest(&bytes);
    let mut warnings = Vec::new();
    let (format, queries) = match load_eval_set(path, skill_dir) {
        // A trigger list (bare array, or under `evals`), or `{"queries"|"triggers": [...]}`,
        // which the golden-set loader does not know: the trigger loader reads it (and names
        // the file and JSON path of anything wrong).
        Err(EvalSetError::TriggerSet { .. } | EvalSetError::UnknownShape { .. }) => {
            let cases = load_trigger_list(path)?;
            let queries = cases
                .into_iter()
                .enumerate()
                .map(|(index, case)| TriggerQuery {
                    id: case.id.unwrap_or_else(|| default_id(index)),
                    query: case.query,
                    should_trigger: case.should_trigger,
                    expected_skill: case.expected_skill,
                    note: case.note,
                })
                .collect();
            (TriggerSetFormat::TriggerList, queries)
        }
        Err(other) => return Err(other.into()),
        Ok(set) => {
            if set.harbor_tasks.is_some() {
                return Err(TriggerError::Invalid {
                    path: path.to_path_buf(),
                    at: "$".to_string(),
                    message: "a Harbor task folder is not a trigger set; pass a trigger list (docs/triggers.md)".to_string(),
                });
            }
            let queries: Vec<TriggerQuery> = set
                .runnable_cases(false)
                .into_iter()
                .map(query_of_case)
                .collect();
            let positives = queries.iter().filter(|q| q.should_trigger).count();
            if positives == 0 || positives == queries.len() {
                let missing = if positives == 0 {
                    "should-trigger"
                } else {
                    "should-not-trigger (`should_trigger: false` or `expected_skill: null`)"
                };
                return Err(TriggerError::Invalid {
                    path: path.to_path_buf(),
                    at: "evals".to_string(),
                    message: format!(
                        "the golden set's {} active cases hold no {missing} case, so {} would be undefined; write a trigger set with both kinds (evals/triggers.json, docs/triggers.md) and pass it with --triggers",
                        queries.len(),
                        if positives == 0 {
                            "recall"
                        } else {
                            "precision"
                        }
                    ),
                });
            }
            (TriggerSetFormat::GoldenCases, queries)
        }
    };
    for query in &queries {
        if !query.should_trigger && query.expected_skill.as_deref() == Some(target) {
            return Err(TriggerError::Invalid {
                path: path.to_path_buf(),
                at: format!("query `{}`", query.id),
                message: format!(
                    "`should_trigger: false` but `expected_skill` names the target `{target}`; keep one"
                ),
            });
        }
    }
    let positives = queries.iter().filter(|q| q.should_trigger).count();
    if positives == 0 {
        warnings.push("no should-trigger query: recall is undefined".to_string());
    }
    if positives == queries.len() {
        warnings.push(
            "no should-not-trigger query: precision cannot fall below 100% (add near-miss negatives)"
                .to_string(),
        );
    }
    Ok(TriggerSet {
        path: path.to_path_buf(),
        digest,
        format,
        queries,
        warnings,
    })
}

fn default_id(index: usize) -> String {
    format!("q{:02}", index + 1)
}

/// A golden case as a trigger query: its prompt, `should_trigger`, and a named expected skill.
fn query_of_case(case: &GoldenCase) -> TriggerQuery {
    TriggerQuery {
        id: case.id.clone(),
        query: case.prompt.clone(),
        should_trigger: case.should_trigger,
        expected_skill: match &case.expected_skill {
            ExpectedSkill::Named(name) => Some(name.clone()),
            ExpectedSkill::None | ExpectedSkill::Unspecified => None,
        },
        note: None,
    }
}

/// What one attempt showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AttemptRecord {
    /// The query's id.
    pub query_id: String,
    /// 1-based attempt number.
    pub attempt: u32,
    /// Whether the target was activated (successfully) anywhere in the trajectory; `None` when
    /// the attempt is unscoreable.
    pub target_activated: Option<bool>,
    /// The skills activated successfully, in order of first activation, each once.
    pub activated: Vec<String>,
    /// How the target's activation was seen, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_evidence: Option<ActivationEvidence>,
    /// Activation attempts that failed (e.g. an unknown skill name), by requested name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_activations: Vec<String>,
    /// Why the attempt tells nothing, when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscoreable_cause: Option<UnscoreableCause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Wall time of the attempt, seconds.
    pub wall_s: f64,
    /// Tool calls in the trajectory.
    pub tool_calls: usize,
    /// Input and output tokens, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// The model the server said answered, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_model: Option<String>,
    /// Transcript path relative to the result folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// The order the attempt presented the staged skills in (balanced order), or the skill
    /// catalogue an agent CLI's stream showed; empty when unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skill_order: Vec<String>,
}

impl AttemptRecord {
    /// Whether the attempt was scored (its activations are known).
    pub(crate) fn is_scored(&self) -> bool {
        self.target_activated.is_some()
    }
}

/// What a finished trajectory shows about activation: the skills activated successfully (in
/// order, each once), the target's evidence, failed activation attempts; or why it shows
/// nothing (an incomplete trajectory, an agent API error, or a catalogue without the target).
pub(crate) fn observe(
    trajectory: &Trajectory,
    target: &str,
) -> Result<Observation, (UnscoreableCause, String)> {
    if let Some(failure) = &trajectory.infrastructure_error {
        return Err((
            UnscoreableCause::AgentApiError,
            format!("{}: {}", failure.cause.describe(), failure.message),
        ));
    }
    if let TrajectoryStatus::Incomplete { reason } = &trajectory.status {
        return Err((UnscoreableCause::IncompleteTrajectory, reason.clone()));
    }
    let mut activated: Vec<String> = Vec::new();
    let mut failed = Vec::new();
    let mut target_evidence = None;
    for activation in &trajectory.skill_activations {
        if !activation.ok {
            failed.push(activation.skill.clone());
            continue;
        }
        if activation.skill == target && target_evidence.is_none() {
            target_evidence = Some(activation.evidence);
        }
        if !activated.contains(&activation.skill) {
            activated.push(activation.skill.clone());
        }
    }
    // An agent that reports its catalogue must list the staged target, else the attempt
    // measured nothing about it (a discovery failure, not a miss).
    if let Some(catalogue) = &trajectory.skill_catalogue {
        let listed = catalogue
            .iter()
            .any(|name| name == target || name.rsplit(':').next() == Some(target));
        if !listed && target_evidence.is_none() {
            return Err((
                UnscoreableCause::DiscoveryFailure,
                format!("the agent's skill catalogue does not list the staged target `{target}`"),
            ));
        }
    }
    Ok(Observation {
        target_activated: target_evidence.is_some(),
        activated,
        target_evidence,
        failed_activations: failed,
    })
}

/// What a scoreable trajectory showed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observation {
    pub target_activated: bool,
    pub activated: Vec<String>,
    pub target_evidence: Option<ActivationEvidence>,
    pub failed_activations: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Analysis
// ---------------------------------------------------------------------------------------------

/// A proportion with its Wilson score interval (`stats::wilson_interval`, 95%).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProportionEstimate {
    /// `successes / trials`.
    pub value: f64,
    pub successes: u64,
    pub trials: u64,
    /// Wilson score interval (statistics.md §4).
    pub interval: Interval,
}

impl ProportionEstimate {
    fn of(successes: u64, trials: u64) -> Option<Self> {
        let interval = crate::analysis::stats::wilson_interval(successes, trials, CONFIDENCE)?;
        Some(Self {
            value: successes as f64 / trials as f64,
            successes,
            trials,
            interval,
        })
    }
}

/// F1 with an interval: the Wilson interval of the Jaccard index `J = TP / (TP + FP + FN)`
/// mapped through `F1 = 2J / (1 + J)` (monotone, so the mapped bounds keep the coverage of the
/// J interval; like the precision interval it conditions on the number of events counted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct F1Estimate {
    /// `2TP / (2TP + FP + FN)`.
    pub value: f64,
    pub interval: Interval,
    /// `wilson-jaccard`.
    pub method: String,
}

impl F1Estimate {
    fn of(tp: u64, fp: u64, false_negatives: u64) -> Option<Self> {
        let events = tp + fp + false_negatives;
        let jaccard = crate::analysis::stats::wilson_interval(tp, events, CONFIDENCE)?;
        let map = |j: f64| 2.0 * j / (1.0 + j);
        Some(Self {
            value: 2.0 * tp as f64 / (2 * tp + fp + false_negatives) as f64,
            interval: Interval {
                low: map(jaccard.low),
                high: map(jaccard.high),
            },
            method: "wilson-jaccard".to_string(),
        })
    }
}

/// A query's outcome, in skill-creator's result shape (`query`, `should_trigger`,
/// `trigger_rate`, `triggers`, `runs`, `pass`) plus what else was activated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct QueryResult {
    pub id: String,
    pub query: String,
    pub should_trigger: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_skill: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Scored attempts.
    pub runs: u32,
    /// Scored attempts that activated the target.
    pub triggers: u32,
    /// `triggers / runs`; `None` when no attempt was scored.
    pub trigger_rate: Option<f64>,
    /// Whether the query counts as triggered (`trigger_rate >= threshold`); `None` when no
    /// attempt was scored.
    pub triggered: Option<bool>,
    /// Whether `triggered` agrees with `should_trigger`; `None` when undecided.
    pub pass: Option<bool>,
    /// Attempts that were not scored.
    pub unscoreable: u32,
    /// Every skill activated (target included), with the number of scored attempts that
    /// activated it.
    pub activated: BTreeMap<String, u32>,
    /// Scored attempts that activated no skill at all.
    pub activated_nothing: u32,
}

/// The four counts over decided queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct ConfusionCounts {
    pub true_positive: u64,
    pub false_positive: u64,
    pub false_negative: u64,
    pub true_negative: u64,
    /// Queries with no scored attempt (left out of every count above).
    pub undecided: u64,
}

/// Kinds of routing mistakes listed in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ConfusionKind {
    /// Should trigger, did not (a false negative): `instead` says what was activated.
    Missed,
    /// Should not trigger, did (a false positive): `expected_skill` says what should have been.
    FalseTrigger,
    /// Should not trigger, did not, but a skill other than the named `expected_skill` was
    /// activated (a routing error among the other skills; precision and recall unaffected).
    Misrouted,
}

/// One query that went wrong, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Confusion {
    pub kind: ConfusionKind,
    pub query_id: String,
    pub query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_skill: Option<String>,
    pub trigger_rate: f64,
    /// Skills other than the target activated on the query, with attempt counts.
    pub instead: BTreeMap<String, u32>,
    /// Scored attempts that activated nothing.
    pub activated_nothing: u32,
    pub runs: u32,
}

/// Attempt-level trigger rates: the mean of the queries' trigger rates, with the
/// effective-count Wilson interval for a mean of case rates (statistics.md §6.4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct AttemptRates {
    /// On should-trigger queries (the attempt-level recall).
    pub should_trigger: Option<EffectiveCountWilson>,
    /// On should-not-trigger queries (the false-trigger rate).
    pub should_not_trigger: Option<EffectiveCountWilson>,
}

/// A gate on the result (`--min-precision`, `--min-recall`, `--min-f1`), on point estimates.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct TriggerGates {
    pub min_precision: Option<f64>,
    pub min_recall: Option<f64>,
    pub min_f1: Option<f64>,
}

impl TriggerGates {
    /// Whether any gate is set.
    pub(crate) fn any(&self) -> bool {
        self.min_precision.is_some() || self.min_recall.is_some() || self.min_f1.is_some()
    }
}

/// How the gates fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GateOutcome {
    pub passed: bool,
    /// One line per failed gate.
    pub failures: Vec<String>,
}

/// Everything but the results: what was measured, how, with what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TriggerSetup {
    pub run_id: String,
    pub created_at: DateTime<Utc>,
    pub skill_name: String,
    pub description: String,
    pub skill_path: PathBuf,
    /// The target's fingerprint (`sha256:…`) under `calibre`.
    pub fingerprint: String,
    pub calibre: String,
    pub trigger_set: TriggerSetInfo,
    pub runner: TriggerRunnerInfo,
    /// The decoys staged beside the target in every attempt.
    pub decoys: Vec<String>,
    /// Attempts per query.
    pub k: u32,
    pub threshold: f64,
    pub confidence: f64,
    pub gates: TriggerGates,
    /// Largest share of unscoreable attempts tolerated before the result is an
    /// infrastructure error.
    pub max_unscoreable: f64,
}

/// The trigger set as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TriggerSetInfo {
    pub path: PathBuf,
    pub digest: String,
    pub format: TriggerSetFormat,
    pub queries: usize,
    pub should_trigger: usize,
    pub should_not_trigger: usize,
}

/// The runner as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TriggerRunnerInfo {
    pub name: String,
    pub kind: String,
    pub model: String,
    /// `tools` (openai-chat) or `native` (agent CLIs).
    pub skill_mode: String,
}

/// Attempt bookkeeping.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct AttemptCounts {
    pub planned: usize,
    pub recorded: usize,
    pub scored: usize,
    pub unscoreable: usize,
    /// Unscoreable attempts by cause.
    pub causes: BTreeMap<String, usize>,
    /// Share of recorded attempts that are unscoreable.
    pub unscoreable_fraction: f64,
    /// Whether that share exceeds the setup's `max_unscoreable`.
    pub unscoreable_exceeded: bool,
}

/// The summary in skill-creator's shape (`total`, `passed`, `failed`), plus `undecided`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct PassSummary {
    pub total: usize,
    pub passed: usize,
    pub failed: usize,
    pub undecided: usize,
}

/// The result of a trigger evaluation (`triggers.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TriggerReport {
    pub format_version: u32,
    pub skill_lift_version: String,
    /// skill-creator's `skill_name`.
    pub skill_name: String,
    /// skill-creator's `description` (the text that decides triggering).
    pub description: String,
    pub setup: TriggerSetup,
    /// Per query, in the set's order.
    pub results: Vec<QueryResult>,
    pub summary: PassSummary,
    pub counts: ConfusionCounts,
    /// `TP / (TP + FP)`; `None` when nothing was triggered.
    pub precision: Option<ProportionEstimate>,
    /// `TP / (TP + FN)`; `None` without decided should-trigger queries.
    pub recall: Option<ProportionEstimate>,
    /// `2TP / (2TP + FP + FN)`; `None` when all three are 0.
    pub f1: Option<F1Estimate>,
    /// Accuracy over decided queries, `(TP + TN) / decided`.
    pub accuracy: Option<ProportionEstimate>,
    pub attempt_rates: AttemptRates,
    /// Queries that went wrong, in the set's order.
    pub confusions: Vec<Confusion>,
    /// Attempt counts per expected kind (`should_trigger` / `should_not_trigger`) and
    /// activated skill (`(nothing)` for none); an attempt activating two skills counts in both.
    pub routing: BTreeMap<String, BTreeMap<String, u32>>,
    pub attempts: AttemptCounts,
    pub gate: Option<GateOutcome>,
    /// Things to know before reading the numbers.
    pub warnings: Vec<String>,
    /// Whether the evaluation was interrupted (the numbers cover the attempts recorded).
    pub interrupted: bool,
    /// Wall time, seconds.
    pub wall_s: f64,
}

/// Analyze the recorded attempts of `queries` (pure; the same records give the same report).
pub(crate) fn analyze(
    setup: TriggerSetup,
    queries: &[TriggerQuery],
    records: &[AttemptRecord],
    mut warnings: Vec<String>,
    interrupted: bool,
    wall_s: f64,
) -> TriggerReport {
    let target = setup.skill_name.clone();
    let threshold = setup.threshold;
    let mut by_query: BTreeMap<&str, Vec<&AttemptRecord>> = BTreeMap::new();
    for record in records {
        by_query.entry(&record.query_id).or_default().push(record);
    }
    let mut results = Vec::with_capacity(queries.len());
    let mut counts = ConfusionCounts::default();
    let mut confusions = Vec::new();
    let mut routing: BTreeMap<String, BTreeMap<String, u32>> = BTreeMap::new();
    let mut attempts = AttemptCounts {
        planned: queries.len() * setup.k as usize,
        ..Default::default()
    };
    let mut positive_rates = (Vec::new(), 0u64);
    let mut negative_rates = (Vec::new(), 0u64);
    for query in queries {
        let recorded = by_query.get(query.id.as_str()).cloned().unwrap_or_default();
        let mut runs = 0u32;
        let mut triggers = 0u32;
        let mut unscoreable = 0u32;
        let mut activated: BTreeMap<String, u32> = BTreeMap::new();
        let mut nothing = 0u32;
        let kind = if query.should_trigger {
            "should_trigger"
        } else {
            "should_not_trigger"
        };
        for record in &recorded {
            attempts.recorded += 1;
            let Some(hit) = record.target_activated else {
                unscoreable += 1;
                attempts.unscoreable += 1;
                let cause = record
                    .unscoreable_cause
                    .map(|c| c.prefix().to_string())
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(|| "other".to_string());
                *attempts.causes.entry(cause).or_default() += 1;
                continue;
            };
            runs += 1;
            attempts.scored += 1;
            if hit {
                triggers += 1;
            }
            let row = routing.entry(kind.to_string()).or_default();
            if record.activated.is_empty() {
                nothing += 1;
                *row.entry("(nothing)".to_string()).or_default() += 1;
            }
            for skill in &record.activated {
                *activated.entry(skill.clone()).or_default() += 1;
                *row.entry(skill.clone()).or_default() += 1;
            }
        }
        let trigger_rate = (runs > 0).then(|| f64::from(triggers) / f64::from(runs));
        let triggered = trigger_rate.map(|rate| rate >= threshold);
        let pass = triggered.map(|t| t == query.should_trigger);
        if let Some(rate) = trigger_rate {
            let bucket = if query.should_trigger {
                &mut positive_rates
            } else {
                &mut negative_rates
            };
            bucket.0.push(rate);
            bucket.1 += u64::from(runs);
        }
        match (query.should_trigger, triggered) {
            (_, None) => counts.undecided += 1,
            (true, Some(true)) => counts.true_positive += 1,
            (true, Some(false)) => counts.false_negative += 1,
            (false, Some(true)) => counts.false_positive += 1,
            (false, Some(false)) => counts.true_negative += 1,
        }
        let instead: BTreeMap<String, u32> = activated
            .iter()
            .filter(|(skill, _)| **skill != target)
            .map(|(skill, count)| (skill.clone(), *count))
            .collect();
        let confusion_kind = match (query.should_trigger, triggered) {
            (true, Some(false)) => Some(ConfusionKind::Missed),
            (false, Some(true)) => Some(ConfusionKind::FalseTrigger),
            (false, Some(false)) => query.expected_skill.as_ref().and_then(|expected| {
                instead
                    .keys()
                    .any(|skill| skill != expected)
                    .then_some(ConfusionKind::Misrouted)
            }),
            _ => None,
        };
        if let (Some(kind), Some(rate)) = (confusion_kind, trigger_rate) {
            confusions.push(Confusion {
                kind,
                query_id: query.id.clone(),
                query: query.query.clone(),
                expected_skill: query.expected_skill.clone(),
                trigger_rate: rate,
                instead: instead.clone(),
                activated_nothing: nothing,
                runs,
            });
        }
        results.push(QueryResult {
            id: query.id.clone(),
            query: query.query.clone(),
            should_trigger: query.should_trigger,
            expected_skill: query.expected_skill.clone(),
            note: query.note.clone(),
            runs,
            triggers,
            trigger_rate,
            triggered,
            pass,
            unscoreable,
            activated,
            activated_nothing: nothing,
        });
    }
    attempts.unscoreable_fraction = if attempts.recorded == 0 {
        0.0
    } else {
        attempts.unscoreable as f64 / attempts.recorded as f64
    };
    attempts.unscoreable_exceeded = attempts.unscoreable_fraction > setup.max_unscoreable;
    let tp = counts.true_positive;
    let fp = counts.false_positive;
    let false_negatives = counts.false_negative;
    let precision = ProportionEstimate::of(tp, tp + fp);
    let recall = ProportionEstimate::of(tp, tp + false_negatives);
    let f1 = F1Estimate::of(tp, fp, false_negatives);
    let decided = tp + fp + false_negatives + counts.true_negative;
    let accuracy = ProportionEstimate::of(tp + counts.true_negative, decided);
    let rate_interval = |(rates, trials): &(Vec<f64>, u64)| {
        effective_count_wilson_interval(rates, *trials, None, CONFIDENCE).ok()
    };
    let attempt_rates = AttemptRates {
        should_trigger: rate_interval(&positive_rates),
        should_not_trigger: rate_interval(&negative_rates),
    };
    let summary = PassSummary {
        total: results.len(),
        passed: results.iter().filter(|r| r.pass == Some(true)).count(),
        failed: results.iter().filter(|r| r.pass == Some(false)).count(),
        undecided: results.iter().filter(|r| r.pass.is_none()).count(),
    };
    if precision.is_none() && decided > 0 {
        warnings.push(format!(
            "the target `{target}` was never activated often enough to count as triggered: precision is undefined and recall is 0"
        ));
    }
    if counts.undecided > 0 {
        warnings.push(format!(
            "{} queries had no scored attempt and are left out of every count",
            counts.undecided
        ));
    }
    let gate = setup.gates.any().then(|| {
        let mut failures = Vec::new();
        let mut check = |name: &str, minimum: Option<f64>, value: Option<f64>| {
            if let Some(minimum) = minimum {
                match value {
                    Some(value) if value >= minimum => {}
                    Some(value) => failures.push(format!(
                        "{name} {:.1}% is below --min-{name} {:.1}%",
                        value * 100.0,
                        minimum * 100.0
                    )),
                    None => failures.push(format!(
                        "{name} is undefined (see the warnings), so --min-{name} {:.1}% is not met",
                        minimum * 100.0
                    )),
                }
            }
        };
        check(
            "precision",
            setup.gates.min_precision,
            precision.map(|p| p.value),
        );
        check("recall", setup.gates.min_recall, recall.map(|r| r.value));
        check("f1", setup.gates.min_f1, f1.as_ref().map(|f| f.value));
        GateOutcome {
            passed: failures.is_empty(),
            failures,
        }
    });
    TriggerReport {
        format_version: TRIGGERS_FORMAT_VERSION,
        skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
        skill_name: setup.skill_name.clone(),
        description: setup.description.clone(),
        setup,
        results,
        summary,
        counts,
        precision,
        recall,
        f1,
        accuracy,
        attempt_rates,
        confusions,
        routing,
        attempts,
        gate,
        warnings,
        interrupted,
        wall_s,
    }
}

// ---------------------------------------------------------------------------------------------
// Markdown
// ---------------------------------------------------------------------------------------------

fn percent(value: f64) -> String {
    format!("{:.1}%", value * 100.0)
}

fn interval_text(interval: &Interval) -> String {
    format!(
        "[{:.1}%, {:.1}%]",
        interval.low * 100.0,
        interval.high * 100.0
    )
}

/// Escape a table cell.
fn cell(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let short = if flat.chars().count() > 80 {
        format!("{}…", flat.chars().take(79).collect::<String>())
    } else {
        flat
    };
    short.replace('|', "\\|")
}

fn counts_text(map: &BTreeMap<String, u32>, runs: u32) -> String {
    if map.is_empty() {
        return "-".to_string();
    }
    map.iter()
        .map(|(skill, count)| format!("`{skill}` {count}/{runs}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report as Markdown (`triggers.md`, and the terminal summary).
pub(crate) fn report_markdown(report: &TriggerReport) -> String {
    let setup = &report.setup;
    let value = |estimate: Option<f64>| estimate.map_or("n/a".to_string(), percent);
    let mut out = format!(
        "# skill-lift triggers: `{}` — precision {} · recall {} · F1 {}\n\n",
        report.skill_name,
        value(report.precision.map(|p| p.value)),
        value(report.recall.map(|r| r.value)),
        value(report.f1.as_ref().map(|f| f.value)),
    );
    out.push_str(&format!(
        "Trigger set `{}` ({}): {} queries ({} should trigger, {} should not), K = {} attempts each; runner `{}` ({}, {} mode), model `{}`; staged beside the target: {}.\n\n",
        setup.trigger_set.path.display(),
        match setup.trigger_set.format {
            TriggerSetFormat::TriggerList => "trigger list",
            TriggerSetFormat::GoldenCases => "golden cases' should_trigger",
        },
        setup.trigger_set.queries,
        setup.trigger_set.should_trigger,
        setup.trigger_set.should_not_trigger,
        setup.k,
        setup.runner.name,
        setup.runner.kind,
        setup.runner.skill_mode,
        setup.runner.model,
        if setup.decoys.is_empty() {
            "no decoys".to_string()
        } else {
            setup.decoys.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")
        }
    ));
    out.push_str(&format!(
        "Activation is read from each attempt's whole trajectory (skill tool calls, reads of a skill's `SKILL.md`). A query counts as triggered when the target was activated in at least {} of its scored attempts. N = {} decided queries; intervals are 95% and over queries, not attempts.\n\n",
        percent(setup.threshold),
        report.counts.true_positive + report.counts.false_positive + report.counts.false_negative + report.counts.true_negative
    ));
    let c = &report.counts;
    out.push_str("| measure | value | 95% CI | from |\n|---|---|---|---|\n");
    match &report.precision {
        Some(p) => out.push_str(&format!(
            "| precision | {} | {} | TP {} / (TP {} + FP {}) (Wilson) |\n",
            percent(p.value),
            interval_text(&p.interval),
            c.true_positive,
            c.true_positive,
            c.false_positive
        )),
        None => out.push_str("| precision | n/a | - | nothing counted as triggered |\n"),
    }
    match &report.recall {
        Some(r) => out.push_str(&format!(
            "| recall | {} | {} | TP {} / (TP {} + FN {}) (Wilson) |\n",
            percent(r.value),
            interval_text(&r.interval),
            c.true_positive,
            c.true_positive,
            c.false_negative
        )),
        None => out.push_str("| recall | n/a | - | no decided should-trigger query |\n"),
    }
    match &report.f1 {
        Some(f) => out.push_str(&format!(
            "| F1 | {} | {} | 2TP / (2TP + FP + FN) (Wilson on TP/(TP+FP+FN), mapped) |\n",
            percent(f.value),
            interval_text(&f.interval)
        )),
        None => out.push_str("| F1 | n/a | - | no TP, FP or FN |\n"),
    }
    if let Some(a) = &report.accuracy {
        out.push_str(&format!(
            "| accuracy | {} | {} | (TP {} + TN {}) / {} decided (Wilson) |\n",
            percent(a.value),
            interval_text(&a.interval),
            c.true_positive,
            c.true_negative,
            a.trials
        ));
    }
    out.push('\n');
    let rate_line = |label: &str, rate: &Option<EffectiveCountWilson>| match rate {
        Some(r) => format!(
            "- {label}: target activated in {} of attempts, 95% CI {} (effective-count Wilson over queries)\n",
            percent(r.rate),
            interval_text(&r.interval)
        ),
        None => format!("- {label}: no scored attempt\n"),
    };
    out.push_str("Attempt level:\n\n");
    out.push_str(&rate_line(
        "should-trigger queries",
        &report.attempt_rates.should_trigger,
    ));
    out.push_str(&rate_line(
        "should-not-trigger queries",
        &report.attempt_rates.should_not_trigger,
    ));
    let attempts = &report.attempts;
    out.push_str(&format!(
        "- attempts: {} planned, {} recorded, {} scored, {} unscoreable{}\n",
        attempts.planned,
        attempts.recorded,
        attempts.scored,
        attempts.unscoreable,
        if attempts.causes.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                attempts
                    .causes
                    .iter()
                    .map(|(cause, n)| format!("{cause} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    if let Some(gate) = &report.gate {
        out.push_str(&format!(
            "\n**Gate: {}**{}\n",
            if gate.passed { "passed" } else { "FAILED" },
            if gate.failures.is_empty() {
                String::new()
            } else {
                format!(" — {}", gate.failures.join("; "))
            }
        ));
    }
    out.push_str("\n## Confusions\n\n");
    if report.confusions.is_empty() {
        out.push_str("None: every decided query went the way the set says.\n");
    } else {
        out.push_str("| query | kind | target rate | expected | activated instead | nothing |\n|---|---|---|---|---|---|\n");
        for confusion in &report.confusions {
            out.push_str(&format!(
                "| `{}` {} | {} | {} | {} | {} | {}/{} |\n",
                cell(&confusion.query_id),
                cell(&confusion.query),
                match confusion.kind {
                    ConfusionKind::Missed => "missed",
                    ConfusionKind::FalseTrigger => "false trigger",
                    ConfusionKind::Misrouted => "misrouted",
                },
                percent(confusion.trigger_rate),
                match (&confusion.expected_skill, confusion.kind) {
                    (Some(skill), _) => format!("`{skill}`"),
                    (None, ConfusionKind::Missed) => format!("`{}`", report.skill_name),
                    (None, _) => "not the target".to_string(),
                },
                counts_text(&confusion.instead, confusion.runs),
                confusion.activated_nothing,
                confusion.runs
            ));
        }
    }
    if !report.routing.is_empty() {
        out.push_str("\n## Routing (attempts)\n\n| queries | activated |\n|---|---|\n");
        for (kind, row) in &report.routing {
            let cells = row
                .iter()
                .map(|(skill, n)| format!("`{skill}` {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            out.push_str(&format!("| {} | {} |\n", kind.replace('_', " "), cells));
        }
    }
    out.push_str("\n## Queries\n\n| id | query | should | rate | triggered | pass | activated |\n|---|---|---|---|---|---|---|\n");
    for result in &report.results {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            cell(&result.id),
            cell(&result.query),
            if result.should_trigger { "yes" } else { "no" },
            match result.trigger_rate {
                Some(rate) => format!("{}/{} ({})", result.triggers, result.runs, percent(rate)),
                None => format!("- ({} unscoreable)", result.unscoreable),
            },
            match result.triggered {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            },
            match result.pass {
                Some(true) => "pass",
                Some(false) => "FAIL",
                None => "-",
            },
            counts_text(&result.activated, result.runs)
        ));
    }
    if !report.warnings.is_empty() {
        out.push_str("\n## Warnings\n\n");
        for warning in &report.warnings {
            out.push_str(&format!("- {warning}\n"));
        }
    }
    if report.interrupted {
        out.push_str(
            "\n**Interrupted**: the numbers cover the attempts recorded before the interrupt.\n",
        );
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Attempts
// ---------------------------------------------------------------------------------------------

/// Everything the attempts of one evaluation share.
pub(crate) struct TriggerContext {
    /// The result folder (attempts.jsonl and transcripts/ go here).
    pub dir: PathBuf,
    pub runner: Box<dyn Runner>,
    pub model: String,
    pub target: SkillSource,
    pub target_digest: String,
    pub calibre: Calibre,
    pub decoys: Vec<SkillSource>,
    /// How attempts order the skills they present ([`crate::analysis::skill_order`]): balanced over a
    /// query's attempts where skill-lift builds the prompt or the tool list, as for `run`.
    pub skill_order: crate::record::SkillOrdering,
    /// The seed of that order.
    pub seed: u64,
    /// Wall-clock budget of one attempt.
    pub timeout: Duration,
    /// Folder for the attempts' workspaces (default: the system temporary folder).
    pub workspace_root: Option<PathBuf>,
    /// Credential values the runner passes to the agent (replaced in transcripts).
    pub credentials: Vec<(String, String)>,
}

/// Scheduler settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttemptSettings {
    pub k: u32,
    /// Attempts in flight.
    pub jobs: usize,
    /// Stop after this many attempts in a row were unscoreable for an infrastructure cause
    /// (0: never).
    pub breaker: usize,
    /// Draw a progress bar.
    pub progress: bool,
}

/// How the attempts ended.
#[derive(Debug)]
pub(crate) struct AttemptsFinished {
    /// Every recorded attempt, in recording order.
    pub records: Vec<AttemptRecord>,
    pub interrupted: bool,
    /// Why the circuit breaker stopped the evaluation, when it did.
    pub breaker: Option<String>,
    pub wall_s: f64,
}

/// The transcript file of attempt `attempt` of the query at `index` (ids may hold any text, so
/// files are named by position).
fn transcript_name(index: usize, attempt: u32) -> String {
    format!("transcripts/q{:03}.a{attempt}.json", index + 1)
}

/// Run every query `settings.k` times (attempts outermost, so an interrupted evaluation stays
/// balanced across queries), appending each finished attempt to `attempts.jsonl` in the
/// result folder.
pub(crate) async fn run_attempts(
    context: Arc<TriggerContext>,
    queries: Arc<Vec<TriggerQuery>>,
    settings: AttemptSettings,
) -> Result<AttemptsFinished, TriggerError> {
    use std::io::Write;
    let started = Instant::now();
    let log_path = context.dir.join("attempts.jsonl");
    let mut log = crate::disk::open(
        &log_path,
        std::fs::OpenOptions::new().create(true).append(true),
    )
    .map_err(crate::disk::DiskError::into_io)
    .map_err(|source| TriggerError::Io {
        path: log_path.clone(),
        source,
    })?;
    std::fs::create_dir_all(context.dir.join("transcripts")).map_err(|source| {
        TriggerError::Io {
            path: context.dir.join("transcripts"),
            source,
        }
    })?;
    let total = queries.len() * settings.k as usize;
    let bar = if settings.progress {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total as u64),
            indicatif::ProgressDrawTarget::stderr_with_hz(8),
        );
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} attempts  {msg}",
            )
            .expect("valid template"),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let semaphore = Arc::new(tokio::sync::Semaphore::new(settings.jobs.max(1)));
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<AttemptRecord>();
    let spawner = {
        let context = Arc::clone(&context);
        let queries = Arc::clone(&queries);
        tokio::spawn(async move {
            let mut tasks = tokio::task::JoinSet::new();
            for attempt in 1..=settings.k {
                for index in 0..queries.len() {
                    let Ok(permit) = Arc::clone(&semaphore).acquire_owned().await else {
                        break;
                    };
                    let context = Arc::clone(&context);
                    let queries = Arc::clone(&queries);
                    let sender = sender.clone();
                    tasks.spawn(async move {
                        let record = drive(&context, &queries[index], index, attempt).await;
                        let _ = sender.send(record);
                        drop(permit);
                    });
                    while tasks.try_join_next().is_some() {}
                }
            }
            while tasks.join_next().await.is_some() {}
        })
    };
    let abort = spawner.abort_handle();
    let mut records = Vec::with_capacity(total);
    let mut interrupted = false;
    let mut breaker = None;
    let mut streak = 0usize;
    let interrupt = crate::features::contain::interrupted();
    tokio::pin!(interrupt);
    loop {
        tokio::select! {
            record = receiver.recv() => {
                let Some(record) = record else { break };
                let line = serde_json::to_vec(&record).expect("attempt record serializes");
                log.write_all(&crate::disk::redact::redact_bytes(&line))
                    .and_then(|()| log.write_all(b"\n"))
                    .map_err(|source| TriggerError::Io { path: log_path.clone(), source })?;
                let infrastructure = record
                    .unscoreable_cause
                    .is_some_and(UnscoreableCause::is_infrastructure);
                streak = if infrastructure { streak + 1 } else { 0 };
                if settings.breaker > 0 && streak >= settings.breaker && breaker.is_none() {
                    breaker = Some(format!(
                        "circuit breaker: the last {streak} attempts all failed for infrastructure reasons; last: {}",
                        crate::disk::redact::truncate(record.reason.as_deref().unwrap_or(""), 300)
                    ));
                    abort.abort();
                }
                bar.inc(1);
                records.push(record);
            }
            _ = &mut interrupt, if !interrupted => {
                interrupted = true;
                abort.abort();
            }
        }
    }
    let _ = spawner.await;
    bar.finish_and_clear();
    log.sync_data().map_err(|source| TriggerError::Io {
        path: log_path,
        source,
    })?;
    Ok(AttemptsFinished {
        records,
        interrupted,
        breaker,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// One attempt: stage the target and the decoys (the run's own staging code), drive the
/// runner under the attempt's timeout, read the activations, write the transcript.
async fn drive(
    context: &Arc<TriggerContext>,
    query: &TriggerQuery,
    index: usize,
    attempt: u32,
) -> AttemptRecord {
    let clock = Instant::now();
    let mut record = AttemptRecord {
        query_id: query.id.clone(),
        attempt,
        target_activated: None,
        activated: Vec::new(),
        target_evidence: None,
        failed_activations: Vec::new(),
        unscoreable_cause: None,
        reason: None,
        wall_s: 0.0,
        tool_calls: 0,
        input_tokens: None,
        output_tokens: None,
        observed_model: None,
        transcript: None,
        skill_order: Vec::new(),
    };
    let unscoreable = |mut record: AttemptRecord, cause: UnscoreableCause, detail: String| {
        record.reason = Some(format!("{}: {detail}", cause.prefix()));
        record.unscoreable_cause = Some(cause);
        record.wall_s = clock.elapsed().as_secs_f64();
        record
    };
    let staging_context = Arc::clone(context);
    let case = GoldenCase::new(query.id.clone(), query.query.clone());
    let staged = tokio::task::spawn_blocking(move || {
        let context = &staging_context;
        stage_trial(&TrialStaging {
            staging: ArmStaging::WithTarget,
            case: &case,
            target: &context.target,
            previous: None,
            decoys: &context.decoys,
            skills_dir: context.runner.skills_dir(),
            eval_files_dir: Path::new(""),
            target_digest: &context.target_digest,
            calibre: context.calibre,
            temp_root: context.workspace_root.as_deref(),
            owner: None,
        })
    })
    .await;
    let mut staged = match staged {
        Ok(Ok(staged)) => staged,
        Ok(Err(error)) => {
            return unscoreable(record, UnscoreableCause::StagingFailed, error.to_string());
        }
        Err(error) => {
            return unscoreable(record, UnscoreableCause::InternalError, error.to_string());
        }
    };
    if context.skill_order == crate::record::SkillOrdering::Balanced {
        let decoys: Vec<String> = context.decoys.iter().map(|d| d.name.clone()).collect();
        let order = crate::analysis::skill_order::presentation_order(
            context.seed,
            &query.id,
            attempt,
            &decoys,
            Some(&context.target.name),
        );
        // Nothing is dropped: a staged skill the order does not name (none should) goes last.
        staged.skills.sort_by_key(|skill| {
            order
                .iter()
                .position(|name| *name == skill.name)
                .unwrap_or(usize::MAX)
        });
        record.skill_order = order;
    }
    let input = AttemptInput {
        prompt: &query.query,
        workspace: &staged.workspace,
        home: &staged.home,
        skills: &staged.skills,
        model: &context.model,
        timeout: context.timeout,
        // A trigger query is staged like the with-skill arm.
        trial_seed: crate::features::runner::TrialSeed::of_trial(
            context.seed,
            &query.id,
            crate::record::Arm::WithSkill.as_str(),
            attempt,
        ),
    };
    let outcome = tokio::time::timeout(
        context.timeout + TIMEOUT_MARGIN,
        context.runner.run_attempt(input),
    )
    .await;
    let trajectory = match outcome {
        Ok(Ok(mut trajectory)) => {
            trajectory.redact_credentials(&context.credentials);
            Ok(trajectory)
        }
        Ok(Err(error)) => {
            let mut partial = error.partial.map(|t| *t);
            if let Some(partial) = partial.as_mut() {
                partial.redact_credentials(&context.credentials);
            }
            Err((
                UnscoreableCause::RunnerError,
                error.message.clone(),
                partial,
            ))
        }
        Err(_) => Err((
            UnscoreableCause::Timeout,
            format!("of {:.0} s", context.timeout.as_secs_f64()),
            None,
        )),
    };
    let (trajectory, failure) = match trajectory {
        Ok(trajectory) => match observe(&trajectory, &context.target.name) {
            Ok(observation) => {
                record.target_activated = Some(observation.target_activated);
                record.activated = observation.activated;
                record.target_evidence = observation.target_evidence;
                record.failed_activations = observation.failed_activations;
                (Some(trajectory), None)
            }
            Err((cause, detail)) => (Some(trajectory), Some((cause, detail))),
        },
        Err((cause, detail, partial)) => (partial, Some((cause, detail))),
    };
    if let Some(trajectory) = &trajectory {
        record.tool_calls = trajectory.tool_calls.len();
        record.input_tokens = trajectory.usage.input_tokens;
        record.output_tokens = trajectory.usage.output_tokens;
        record.observed_model = trajectory.observed_model.clone();
        if record.skill_order.is_empty() {
            record.skill_order = trajectory.skill_catalogue.clone().unwrap_or_default();
        }
        let relative = transcript_name(index, attempt);
        let document = serde_json::json!({
            "query_id": query.id,
            "attempt": attempt,
            "query": query.query,
            "should_trigger": query.should_trigger,
            "workspace_path": staged.workspace,
            "home_path": staged.home,
            "trajectory": trajectory,
        });
        let bytes = serde_json::to_vec(&document).expect("transcript serializes");
        // The redaction boundary: no credential value or key shape reaches the file.
        match crate::disk::write(
            context.dir.join(&relative),
            crate::disk::redact::redact_bytes(&bytes),
        )
        .map_err(crate::disk::DiskError::into_io)
        {
            Ok(()) => record.transcript = Some(relative),
            Err(error) if failure.is_none() => {
                record.target_activated = None;
                drop(staged);
                return unscoreable(
                    record,
                    UnscoreableCause::TranscriptWriteFailed,
                    format!("{}: {error}", context.dir.join(relative).display()),
                );
            }
            Err(_) => {}
        }
    }
    drop(staged);
    match failure {
        Some((cause, detail)) => unscoreable(record, cause, detail),
        None => {
            record.wall_s = clock.elapsed().as_secs_f64();
            record
        }
    }
}

/// Why a value given for a fraction flag (`--threshold`, `--min-precision` …) is not one.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FractionError {
    /// The value is not a number.
    #[error("`{0}` is not a number")]
    NotANumber(String),
    /// The number is outside [0, 1].
    #[error("must be a fraction between 0 and 1 (0.8 means 80%)")]
    OutOfRange,
}

/// A fraction between 0 and 1 (inclusive) given as text.
pub(crate) fn parse_fraction(value: &str) -> Result<f64, FractionError> {
    let fraction: f64 = value
        .parse()
        .map_err(|_| FractionError::NotANumber(value.to_string()))?;
    if (0.0..=1.0).contains(&fraction) {
        Ok(fraction)
    } else {
        Err(FractionError::OutOfRange)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::trajectory::SkillActivation;

    #[test]
    fn a_fraction_is_a_number_between_0_and_1() {
        assert_eq!(parse_fraction("0.8").unwrap(), 0.8);
        assert_eq!(parse_fraction("1").unwrap(), 1.0);
        assert_eq!(
            parse_fraction("x").unwrap_err().to_string(),
            "`x` is not a number"
        );
        assert_eq!(
            parse_fraction("1.5").unwrap_err().to_string(),
            "must be a fraction between 0 and 1 (0.8 means 80%)"
        );
    }

    fn setup(k: u32) -> TriggerSetup {
        TriggerSetup {
            run_id: "r".into(),
            created_at: Utc::now(),
            skill_name: "target".into(),
            description: "d".into(),
            skill_path: PathBuf::from("t"),
            fingerprint: "sha256:x".into(),
            calibre: "v3-agent-skills".into(),
            trigger_set: TriggerSetInfo {
                path: PathBuf::from("triggers.json"),
                digest: "sha256:y".into(),
                format: TriggerSetFormat::TriggerList,
                queries: 0,
                should_trigger: 0,
                should_not_trigger: 0,
            },
            runner: TriggerRunnerInfo {
                name: "mock".into(),
                kind: "openai-chat".into(),
                model: "m".into(),
                skill_mode: "tools".into(),
            },
            decoys: vec!["decoy".into()],
            k,
            threshold: DEFAULT_THRESHOLD,
            confidence: CONFIDENCE,
            gates: TriggerGates::default(),
            max_unscoreable: 0.1,
        }
    }

    fn query(id: &str, should: bool) -> TriggerQuery {
        TriggerQuery {
            id: id.into(),
            query: format!("query {id}"),
            should_trigger: should,
            expected_skill: None,
            note: None,
        }
    }

    fn record(id: &str, attempt: u32, activated: &[&str]) -> AttemptRecord {
        AttemptRecord {
            query_id: id.into(),
            attempt,
            target_activated: Some(activated.contains(&"target")),
            activated: activated.iter().map(|s| s.to_string()).collect(),
            target_evidence: None,
            failed_activations: Vec::new(),
            unscoreable_cause: None,
            reason: None,
            wall_s: 0.0,
            tool_calls: 0,
            input_tokens: None,
            output_tokens: None,
            observed_model: None,
            transcript: None,
            skill_order: Vec::new(),
        }
    }

    #[test]
    fn counts_precision_recall_and_f1_over_queries() {
        // Positives: p1 3/3, p2 2/3 (triggered at 0.5), p3 1/3 (missed; decoy instead).
        // Negatives: n1 0/3, n2 2/3 (false trigger).
        let queries = vec![
            query("p1", true),
            query("p2", true),
            query("p3", true),
            query("n1", false),
            query("n2", false),
        ];
        let mut records = Vec::new();
        for a in 1..=3 {
            records.push(record("p1", a, &["target"]));
            records.push(record("p2", a, if a < 3 { &["target"] } else { &[] }));
            records.push(record(
                "p3",
                a,
                if a == 1 { &["target"] } else { &["decoy"] },
            ));
            records.push(record("n1", a, &["decoy"]));
            records.push(record(
                "n2",
                a,
                if a == 3 { &[] } else { &["target", "decoy"] },
            ));
        }
        let report = analyze(setup(3), &queries, &records, Vec::new(), false, 1.0);
        assert_eq!(
            report.counts,
            ConfusionCounts {
                true_positive: 2,
                false_positive: 1,
                false_negative: 1,
                true_negative: 1,
                undecided: 0
            }
        );
        let precision = report.precision.unwrap();
        assert!((precision.value - 2.0 / 3.0).abs() < 1e-12);
        let wilson = crate::analysis::stats::wilson_interval(2, 3, 0.95).unwrap();
        assert_eq!(precision.interval, wilson);
        assert!((report.recall.unwrap().value - 2.0 / 3.0).abs() < 1e-12);
        let f1 = report.f1.as_ref().unwrap();
        assert!((f1.value - 4.0 / 6.0).abs() < 1e-12);
        assert!(f1.interval.low < f1.value && f1.value < f1.interval.high);
        // Confusions: p3 missed with the decoy instead, n2 a false trigger.
        assert_eq!(report.confusions.len(), 2);
        assert_eq!(report.confusions[0].kind, ConfusionKind::Missed);
        assert_eq!(report.confusions[0].instead.get("decoy"), Some(&2));
        assert_eq!(report.confusions[1].kind, ConfusionKind::FalseTrigger);
        assert_eq!(report.summary.passed, 3);
        assert_eq!(report.summary.failed, 2);
        let rates = report.attempt_rates.should_trigger.unwrap();
        assert!((rates.rate - (1.0 + 2.0 / 3.0 + 1.0 / 3.0) / 3.0).abs() < 1e-12);
        assert_eq!(report.routing["should_trigger"]["decoy"], 2);
        assert_eq!(report.routing["should_not_trigger"]["(nothing)"], 1);
    }

    #[test]
    fn unscoreable_attempts_leave_queries_undecided_and_never_count() {
        let queries = vec![query("p1", true), query("n1", false)];
        let mut failed = record("p1", 1, &[]);
        failed.target_activated = None;
        failed.unscoreable_cause = Some(UnscoreableCause::RunnerError);
        let records = vec![failed, record("n1", 1, &[])];
        let report = analyze(setup(1), &queries, &records, Vec::new(), false, 1.0);
        assert_eq!(report.counts.undecided, 1);
        assert_eq!(report.counts.true_negative, 1);
        assert!(report.precision.is_none() && report.recall.is_none());
        assert_eq!(report.attempts.unscoreable, 1);
        assert!(report.attempts.unscoreable_exceeded);
        assert_eq!(report.attempts.causes["runner error"], 1);
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("no scored attempt"))
        );
    }

    #[test]
    fn gates_compare_point_estimates_and_fail_when_undefined() {
        let queries = vec![query("p1", true), query("n1", false)];
        let records = vec![record("p1", 1, &[]), record("n1", 1, &[])];
        let mut gated = setup(1);
        gated.gates.min_recall = Some(0.5);
        gated.gates.min_precision = Some(0.5);
        let report = analyze(gated, &queries, &records, Vec::new(), false, 1.0);
        let gate = report.gate.unwrap();
        assert!(!gate.passed);
        assert_eq!(gate.failures.len(), 2, "{:?}", gate.failures);
        assert!(gate.failures[0].contains("precision is undefined"));
        assert!(gate.failures[1].contains("recall 0.0% is below"));
    }

    #[test]
    fn misrouted_negatives_are_listed() {
        let mut negative = query("n1", false);
        negative.expected_skill = Some("decoy".into());
        let records = vec![record("n1", 1, &["other"])];
        let report = analyze(setup(1), &[negative], &records, Vec::new(), false, 1.0);
        assert_eq!(report.confusions[0].kind, ConfusionKind::Misrouted);
        assert_eq!(report.counts.true_negative, 1);
    }

    #[test]
    fn observation_reads_the_whole_trajectory_and_checks_the_catalogue() {
        let mut trajectory = Trajectory::new();
        let activation = |skill: &str, ok: bool| SkillActivation {
            skill: skill.into(),
            evidence: ActivationEvidence::SkillTool,
            ok,
            tool_call_index: None,
            target: skill == "target",
            reason: None,
        };
        trajectory.skill_activations = vec![
            activation("nope", false),
            activation("decoy", true),
            activation("decoy", true),
            activation("target", true),
        ];
        let seen = observe(&trajectory, "target").unwrap();
        assert!(seen.target_activated);
        assert_eq!(seen.activated, vec!["decoy", "target"]);
        assert_eq!(seen.failed_activations, vec!["nope"]);
        trajectory.skill_activations.pop();
        trajectory.skill_catalogue = Some(vec!["decoy".into()]);
        let (cause, _) = observe(&trajectory, "target").unwrap_err();
        assert_eq!(cause, UnscoreableCause::DiscoveryFailure);
        trajectory.skill_catalogue = Some(vec!["plugin:target".into()]);
        assert!(!observe(&trajectory, "target").unwrap().target_activated);
        trajectory.status = TrajectoryStatus::Incomplete {
            reason: "stream ended".into(),
        };
        assert_eq!(
            observe(&trajectory, "target").unwrap_err().0,
            UnscoreableCause::IncompleteTrajectory
        );
    }

    #[test]
    fn f1_interval_maps_the_jaccard_wilson_interval() {
        let f1 = F1Estimate::of(8, 2, 2).unwrap();
        let jaccard = crate::analysis::stats::wilson_interval(8, 12, 0.95).unwrap();
        assert!((f1.interval.low - 2.0 * jaccard.low / (1.0 + jaccard.low)).abs() < 1e-12);
        assert!((f1.value - 0.8).abs() < 1e-12);
        // All correct: F1 = 1 with a lower bound below 1 (never zero width).
        let perfect = F1Estimate::of(5, 0, 0).unwrap();
        assert_eq!(perfect.value, 1.0);
        assert!(perfect.interval.low < 1.0 && perfect.interval.high == 1.0);
        assert!(F1Estimate::of(0, 0, 0).is_none());
    }
}
