//! The run folder: `manifest.json` (what was run), the append-only `trials.jsonl` (one fsync'd
//! line per finished trial) and the append-only transcript log `transcripts/transcripts.jsonl`
//! (one normalized trajectory per trial, located by its record's `transcript_span`; older run
//! folders hold one file per trial, which [`TranscriptReader`] still reads).
//!
//! Recorded runs are the source of truth; everything after recording is derived from them.
//! Schema: `docs/run-format.md`. A crash can leave at most a torn last line, which resume
//! removes; a complete line is never rewritten.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::values::trajectory::{RetryRecord, Usage};

mod layout;
mod parallel;
mod schema;
mod view;
pub use layout::{IdError, MATRIX_MANIFEST, MAX_ID_CHARS, is_matrix_folder, validate_id};
pub use schema::{
    ACCURACY, ACES_METRICS, Arm, ArmDesign, BEHAVIOR_CHECK, Budgets, CHECKS, CalibrationArm,
    CalibrationBrief, CalibrationLookup, CheckResult, CustomGraderSpec, DeclaredVersion, FailOn,
    GOAL_ACCURACY, Grade, GradingSettings, JudgeInfo, JudgeItem, JudgeScope, JudgeSpend,
    JudgeSpendSummary, JudgeSpread, LiftMethod, MetricResult, MetricSource, Outcome, OutputMatch,
    PassBasis, PriceTable, QualityBounds, QualityContract, ReuseRecord, ReuseSource, ReusedFrom,
    RunnerCapabilities, SECURITY, SKILL_EFFICIENCY, SKILL_EXECUTION, STYLE, SequentialSettings,
    Shard, SkillDelivery, SkillOrdering, Spend, Spread, StopReason, StoppingOutcome, StoppingPlan,
    StyleReferenceFile, StyleReferenceInfo, SubScore, TrialKeys, UnscoreableCause, VersionPolicy,
};
pub use view::{CheckSummary, RetryCount, Scores, TrialView};

/// Version of the run-folder format (manifest and trial records). Version 4 keeps every
/// transcript in one append-only log ([`TRANSCRIPTS_FILE`], located by each record's
/// `transcript_span`) instead of a file per trial; version 3 added the runner's typed
/// capabilities (`runner.capabilities`) and the arms as data (`arm_specs`); version 2 the
/// grading settings, composite and metric results. Versions 1 to 3 are still read (their
/// transcripts from their own files, their capabilities from the recorded kind and skill mode,
/// their arms the paired two).
pub const FORMAT_VERSION: u32 = 4;
/// The oldest run-folder format this skill-lift reads.
pub const OLDEST_READABLE_FORMAT_VERSION: u32 = 1;

/// The asset evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssetInfo {
    /// Skill name.
    pub name: String,
    /// Absolute path of the skill folder.
    pub path: PathBuf,
    /// `sha256:<hex>` fingerprint.
    pub fingerprint: String,
    /// Calibre that produced it.
    pub calibre: String,
    /// Files hashed.
    pub fingerprint_files: Vec<String>,
    /// Loader warnings (spec deviations).
    pub warnings: Vec<String>,
}

/// The eval set used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalSetInfo {
    /// Absolute path of the eval file.
    pub path: PathBuf,
    /// `sha256:<hex>` of its bytes.
    pub digest: String,
    /// Detected format.
    pub format: String,
    /// Ids of the cases run, in order.
    pub case_ids: Vec<String>,
    /// Cluster label of each case that has one.
    #[serde(default)]
    pub case_clusters: BTreeMap<String, String>,
    /// The name of each case whose id was derived from it (a Vally scenario named in free
    /// text): id → name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub case_labels: BTreeMap<String, String>,
    /// Whether drafts were included.
    pub allow_draft: bool,
}

/// The runner used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunnerInfo {
    /// Profile name.
    pub name: String,
    /// Runner kind (`openai-chat`).
    pub kind: String,
    /// Absolute path of the profile file.
    pub profile_path: PathBuf,
    /// `sha256:<hex>` of the profile file.
    pub profile_digest: String,
    /// Skill mode (`inject` | `tools`; `native` for agent CLIs).
    pub skill_mode: String,
    /// Server base URL.
    pub base_url: String,
    /// What the runner can do and what can be observed of it (run-folder format 3 on; absent in older
    /// run folders: [`RunnerInfo::capabilities`] reads those from `kind` and `skill_mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<RunnerCapabilities>,
}

impl RunnerInfo {
    /// The runner's capabilities: as recorded, else (older run folders) from the recorded kind
    /// and skill mode.
    pub fn capabilities(&self) -> RunnerCapabilities {
        self.capabilities
            .clone()
            .unwrap_or_else(|| RunnerCapabilities::of_recorded_names(&self.kind, &self.skill_mode))
    }
}

/// One staged decoy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecoyInfo {
    pub name: String,
    pub fingerprint: String,
}

/// Where the decoys came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecoysInfo {
    /// `builtin`, `none`, or the folder given with `--decoys`.
    pub source: String,
    /// The decoys staged in both arms.
    pub skills: Vec<DecoyInfo>,
}

/// `manifest.json`: what a run is. Written once at the start; resume checks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// skill-lift version that created the run.
    pub skill_lift_version: String,
    /// The run id (folder name).
    pub run_id: String,
    /// Creation time (UTC).
    pub created_at: DateTime<Utc>,
    pub asset: AssetInfo,
    pub eval_set: EvalSetInfo,
    pub runner: RunnerInfo,
    /// Requested model.
    pub model: String,
    /// Attempts per case per arm.
    pub k: u32,
    /// Seed of the bootstrap (and of any seeded sampling).
    pub seed: u64,
    pub decoys: DecoysInfo,
    /// Arms run.
    pub arms: Vec<Arm>,
    /// What each arm stages: `paired` (the target in `with_skill` only; absent in the file) or
    /// an A/A control of `skill-lift calibrate` (`aa_without_target`, `aa_with_target`).
    #[serde(default, skip_serializing_if = "ArmDesign::is_paired")]
    pub arm_design: ArmDesign,
    /// The arm every other arm is compared against (`--reference`); absent: `without_skill`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Arm>,
    /// The previous version of the skill staged in the `previous_version` arm, when the run has
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<PreviousInfo>,
    /// Trials planned: cases × arms × K (the whole run, also in a shard).
    pub trials_planned: usize,
    /// How trials are graded (absent in runs recorded before grading settings existed: output
    /// checks only).
    #[serde(default)]
    pub grading: GradingSettings,
    /// For a folder written by `regrade`: the run folder whose trajectories it re-graded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regraded_from: Option<PathBuf>,
    /// The suite's A/A calibration as `run` found it in the state folder when the run started
    /// (`crate::features::calibration`); reports show it from here, never from a live lookup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationLookup>,
    /// The shard of the run this folder holds (`--shard i/n`); absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The gates the run was started with; `report`, `merge`, `regrade` and `--resume` keep them
    /// unless the flag is given again. Absent in runs recorded before gates were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<RecordedGates>,
    /// Round scheduling, budgets and sequential stopping (`run --sequential`, `--max-cost-usd`,
    /// `--max-tokens`, `--max-wall`), with how the run stopped; absent for an ordinary run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<StoppingPlan>,
    /// The trial key of each arm and case (`crate::features::reuse`: everything that determines a
    /// trial), arm → case id → `sha256:<hex>`; what `--reuse-baseline` matches. Absent in runs
    /// recorded before baseline reuse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_keys: Option<TrialKeys>,
    /// Baseline reuse (`run --reuse-baseline`): where the run looked and what it took; absent
    /// when reuse was not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<ReuseRecord>,
    /// The evolution contract (`--previous`, `--previous-ref`): the declared versions of the
    /// skill and its previous version and the margin; absent without a previous version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_policy: Option<VersionPolicy>,
    /// `--equivalence` on a fixed-n run without a previous version: the margin δ (a fraction)
    /// of the test that the skill makes no meaningful difference (two one-sided tests on the
    /// lift, `crate::analysis::evolution::no_effect`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence_margin: Option<f64>,
    /// The quality contract the skill or its eval set declares (`contract.toml`); absent when
    /// none is declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality_contract: Option<QualityContract>,
    /// How trials order the skills they present (`crate::analysis::skill_order`): `balanced` (a seeded
    /// order per trial, the target's position balanced across attempts) or, absent, by name
    /// (runs recorded before balancing, and runners that list the skills themselves).
    #[serde(default, skip_serializing_if = "SkillOrdering::is_by_name")]
    pub skill_order: SkillOrdering,
}

/// The previous version of the skill (`--previous DIR` or `--previous-ref GIT_REF`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreviousInfo {
    /// The folder staged (`--previous`), or the skill folder whose history `git_ref` names.
    pub path: PathBuf,
    /// The git revision the previous version was taken from (`--previous-ref`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// `sha256:<hex>` over the calibre's files of the previous version (`--resume` refuses a
    /// change).
    pub fingerprint: String,
}

impl Manifest {
    /// The arm every other arm is compared against.
    pub fn reference(&self) -> Arm {
        self.reference.unwrap_or(Arm::WithoutSkill)
    }
}

/// The analysis gates of a run, as given when it started (`--min-lift`, `--fail-on`,
/// `--max-unscoreable`, `--method`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedGates {
    /// `--min-lift`, a fraction.
    #[serde(default)]
    pub min_lift: Option<f64>,
    /// `--fail-on`.
    #[serde(default)]
    pub fail_on: Vec<FailOn>,
    /// `--max-unscoreable`, a fraction in [0, 1].
    pub max_unscoreable: f64,
    /// `--method`.
    #[serde(default)]
    pub method: Option<LiftMethod>,
    /// `--max-latency-ratio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_ratio: Option<f64>,
    /// `--max-token-ratio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_token_ratio: Option<f64>,
    /// `--enforce-version-policy`: a release that breaks the evolution contract fails the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enforce_version_policy: bool,
}

/// One line of `trials.jsonl`: a finished trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    pub run_id: String,
    /// `<case_id>/<arm>/<attempt>`; unique in a run.
    pub trial_id: String,
    pub case_id: String,
    pub arm: Arm,
    /// Attempt number, 1..=K.
    pub attempt: u32,
    /// Runner profile name.
    pub runner: String,
    /// Requested model.
    pub model: String,
    /// Model the server reported, when it did.
    pub observed_model: Option<String>,
    /// pass | fail | unscoreable | not_gradable.
    pub outcome: Outcome,
    /// Why (security violation, first failed check, outcome score below the threshold,
    /// infrastructure error, missing graders).
    pub reason: Option<String>,
    /// Which scores decided pass or fail (`security_gate`, `output_checks`, `outcome_score`);
    /// absent for unscoreable and not-gradable trials and in runs recorded before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<PassBasis>,
    /// The outcome score in [0,1] (judge and custom-grader metrics only; `crate::features::grade`
    /// defines it); absent when no outcome grader scored the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome_score: Option<f64>,
    /// Each deterministic check's result.
    pub checks: Vec<CheckResult>,
    /// Applicable metric scores in [0,1] by metric name.
    pub scores: BTreeMap<String, f64>,
    /// The composite score in [0,1] (`crate::features::grade` defines it); absent when no metric applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite: Option<f64>,
    /// The judge and custom-grader metrics' results with sub-scores, reasons and judge repeats,
    /// kept as JSON text until asked for (analysis reads `scores` and `composite`). The
    /// deterministic metrics' details are in the transcript's `grade.metrics` only: they would
    /// triple the size of every record.
    #[serde(default, skip_serializing_if = "MetricDetails::is_empty")]
    pub metrics: MetricDetails,
    /// Metrics of the second and later judges, by judge name (judge-agreement report only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_judges: BTreeMap<String, BTreeMap<String, MetricResult>>,
    /// Errors of the second and later judges, by judge name (counted in the agreement report).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_judge_errors: BTreeMap<String, Vec<String>>,
    /// Token usage (absent counts stay null).
    pub usage: Usage,
    /// Start time (UTC).
    pub started_at: DateTime<Utc>,
    /// Wall time of the whole trial (staging, agent, grading), seconds.
    pub wall_s: f64,
    /// Sum of successful model-request latencies, seconds.
    pub model_latency_s: f64,
    /// Model requests made.
    pub requests: usize,
    /// Retried infrastructure errors, in order.
    pub retries: Vec<RetryRecord>,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Tool calls whose result was an error (`is_error` in the transcript's `tool_calls`): a
    /// tool the model called wrongly or that failed. `regress` attributes a rise to the tool
    /// description. Absent (0) in records written before it was counted.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub tool_call_errors: usize,
    /// Names of skills activated (target and decoys), in order.
    pub activated_skills: Vec<String>,
    /// Transcript path relative to the run folder: the run's one transcript log
    /// ([`TRANSCRIPTS_FILE`], with `transcript_span`; format 4 on) or, in older run folders, the
    /// trial's own file (`transcripts/<case>.<arm>.<attempt>.json`). Read either with
    /// [`TranscriptReader`].
    pub transcript: Option<String>,
    /// Where the trial's transcript lies in the transcript log (byte offset and length of its
    /// JSON document); absent for a transcript in its own file (format 3 and older).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_span: Option<TranscriptSpan>,
    /// Kept workspace folder (`--keep-workspaces`).
    pub workspace: Option<PathBuf>,
    /// True when this record replaces the earlier records of the same trial (written by
    /// `run --resume --retry-unscoreable` for a trial that was unscoreable for an
    /// infrastructure cause). The earlier lines stay in `trials.jsonl` as they were, superseded:
    /// readers ([`for_each_trial`]) skip them, so no trial is counted twice.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub supersedes: bool,
    /// For an unscoreable trial: the class of its cause (the detail is in `reason`). Absent in
    /// records written before causes were typed; [`TrialRecord::cause`] reads it from the
    /// reason then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscoreable_cause: Option<UnscoreableCause>,
    /// True when only some of the trial's model requests reported usage: `usage` is then the
    /// sum over those that did (a lower bound), flagged rather than silently summed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_partial: bool,
    /// For an unscoreable trial that failed for an infrastructure reason: which (typed; the
    /// agent's or server's own message is in `reason`). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure: Option<crate::values::trajectory::InfrastructureCause>,
    /// What the trial's output lost to the runner profile's size caps (`stdout`, `stderr`,
    /// `transcript`); absent when nothing was cut.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncated: Vec<crate::values::trajectory::OutputCut>,
    /// For a trial taken from an earlier run by `run --reuse-baseline` instead of running it:
    /// the run and trial that measured it. Absent for a trial this run measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<ReusedFrom>,
    /// What the LLM judges spent on this trial: requests, cache hits, tokens and their cost
    /// (the judge profile's `[price]`), or why they were not asked; absent without judges and
    /// in records written before judge spend was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_usage: Option<JudgeSpend>,
    /// The staged skills in the order the model was shown them (`crate::analysis::skill_order`): the
    /// order skill-lift built the prompt or tool list in (`inject`, `tools`), or the skill
    /// catalogue an agent CLI's stream reported. Absent when no order is known (an agent CLI
    /// that does not report its catalogue, a trial that failed before it ran, runs recorded
    /// before orders were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_order: Option<Vec<String>>,
}

/// Whether a count is zero (a count left out of `trials.jsonl` when it is).
fn is_zero_count(value: &usize) -> bool {
    *value == 0
}

impl TrialRecord {
    /// Why the trial is unscoreable (`None` for any other outcome): the recorded typed cause;
    /// for records written before causes were typed, the class of the reason's prefix.
    pub fn cause(&self) -> Option<UnscoreableCause> {
        if self.outcome != Outcome::Unscoreable {
            return None;
        }
        Some(self.unscoreable_cause.unwrap_or_else(|| {
            UnscoreableCause::of_legacy_reason(self.reason.as_deref().unwrap_or(""))
        }))
    }

    /// The name the analysis counts an unscoreable trial's cause under: the typed cause's
    /// label (an agent-reported API failure by its infrastructure class, e.g. `agent API
    /// unreachable`); for records written before causes were typed, the reason's text before
    /// its first `:`.
    pub fn cause_label(&self) -> String {
        cause_label(
            self.unscoreable_cause,
            self.infrastructure,
            self.reason.as_deref(),
        )
    }

    /// The trial's key: (case id, arm, attempt).
    pub fn key(&self) -> TrialKey {
        TrialKey {
            case_id: self.case_id.clone(),
            arm: self.arm,
            attempt: self.attempt,
        }
    }
}

/// [`TrialRecord::cause_label`] of a record's typed cause, infrastructure class and reason.
fn cause_label(
    cause: Option<UnscoreableCause>,
    infrastructure: Option<crate::values::trajectory::InfrastructureCause>,
    reason: Option<&str>,
) -> String {
    match (cause, infrastructure) {
        (Some(UnscoreableCause::AgentApiError), Some(infrastructure)) => {
            infrastructure.describe().to_string()
        }
        (Some(cause), _) => cause.label().to_string(),
        (None, _) => {
            let reason = reason.unwrap_or("unknown");
            reason
                .split(':')
                .next()
                .unwrap_or(reason)
                .trim()
                .to_string()
        }
    }
}

/// The `metrics` of a trial record: a JSON object (metric name → [`MetricResult`])
/// held as its text. Parsing every record's sub-scores and reasons would dominate the analysis
/// of a large run, which needs only the flat `scores`; [`MetricDetails::parse`] reads them on
/// demand (judge agreement, transcript pages).
#[derive(Debug, Clone, Default)]
pub struct MetricDetails(Option<Box<serde_json::value::RawValue>>);

impl MetricDetails {
    /// Details from parsed metric results.
    pub fn from_map(metrics: &BTreeMap<String, MetricResult>) -> Self {
        if metrics.is_empty() {
            return Self(None);
        }
        Self(serde_json::value::to_raw_value(metrics).ok())
    }

    /// The details a trial record keeps: the judge and custom-grader metrics of `metrics`.
    pub fn for_record(metrics: &BTreeMap<String, MetricResult>) -> Self {
        let kept: BTreeMap<String, MetricResult> = metrics
            .iter()
            .filter(|(_, metric)| metric.source != MetricSource::Deterministic)
            .map(|(name, metric)| (name.clone(), metric.clone()))
            .collect();
        Self::from_map(&kept)
    }

    /// Whether there are none (records without metrics, e.g. format version 1).
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|raw| raw.get() == "{}")
    }

    /// The parsed metric results (empty when there are none or the text is not a metric map).
    pub fn parse(&self) -> BTreeMap<String, MetricResult> {
        self.0
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default()
    }
}

impl PartialEq for MetricDetails {
    fn eq(&self, other: &Self) -> bool {
        self.parse() == other.parse()
    }
}

impl Serialize for MetricDetails {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Some(raw) => raw.serialize(serializer),
            None => serializer.serialize_map(Some(0)).and_then(|map| {
                use serde::ser::SerializeMap;
                map.end()
            }),
        }
    }
}

impl<'de> Deserialize<'de> for MetricDetails {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        Ok(Self((raw.get() != "null").then_some(raw)))
    }
}

/// A trial's transcript: the whole trajectory and its grade, one line of the run's transcript
/// log ([`TRANSCRIPTS_FILE`]; a file of its own, `transcripts/<case>.<arm>.<attempt>.json`, in
/// run folders of format 3 and older). Written by the run, read by `regrade`, `merge` and the
/// HTML report through [`TranscriptReader`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptDocument<'a> {
    pub trial_id: String,
    pub case_id: String,
    pub arm: Arm,
    pub attempt: u32,
    pub prompt: String,
    /// The trial's workspace path during the run (absent in runs before grading v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<PathBuf>,
    /// The trial's fresh HOME during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_path: Option<PathBuf>,
    pub grade: std::borrow::Cow<'a, Grade>,
    pub trajectory: std::borrow::Cow<'a, crate::values::trajectory::Trajectory>,
}

/// The run's one append-only transcript log, relative to the run folder: one JSON
/// [`TranscriptDocument`] per line, located by each record's [`TranscriptSpan`]. Written by
/// the recorder in the same group commit as the records (transcript bytes fsync'd before the
/// records that point at them).
pub const TRANSCRIPTS_FILE: &str = "transcripts/transcripts.jsonl";

/// Where one transcript lies in [`TRANSCRIPTS_FILE`]: byte offset and length of its JSON
/// document (without the line's newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptSpan {
    /// Byte offset from the start of the file.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
}

/// A finished trial on its way to the run log: its record and its transcript's bytes (one
/// serialized [`TranscriptDocument`], already through the redaction boundary), when it has
/// one. [`TrialLog::commit`] places the transcript and points the record at it.
#[derive(Debug, Clone)]
pub struct FinishedTrial {
    /// The trial's record (`transcript` and `transcript_span` are set by the commit).
    pub record: TrialRecord,
    transcript: Option<Vec<u8>>,
    /// The shape of its trajectory, for trace export (none without a trajectory).
    outline: Option<crate::values::trajectory::TrajectoryOutline>,
}

impl FinishedTrial {
    /// A trial without a transcript (staging failed, or the run keeps none).
    pub fn without_transcript(record: TrialRecord) -> Self {
        Self {
            record,
            transcript: None,
            outline: None,
        }
    }

    /// A trial with its transcript document.
    pub fn with_transcript(
        record: TrialRecord,
        document: &TranscriptDocument<'_>,
    ) -> Result<Self, serde_json::Error> {
        let bytes = serde_json::to_vec(document)?;
        Ok(Self::with_transcript_bytes(record, &bytes))
    }

    /// A trial with its transcript as serialized JSON (a document read back from another run
    /// folder); the bytes pass the redaction boundary here. A newline inside would split the
    /// line, so JSON's own escaping is relied on: serialized JSON holds none.
    pub fn with_transcript_bytes(record: TrialRecord, bytes: &[u8]) -> Self {
        Self {
            record,
            transcript: Some(crate::disk::redact::redact_bytes(bytes).into_owned()),
            outline: None,
        }
    }

    /// [`FinishedTrial::with_transcript_bytes`] taking the serialized document by value (not
    /// copied when redaction leaves it unchanged, the usual case).
    pub fn with_transcript_vec(record: TrialRecord, bytes: Vec<u8>) -> Self {
        let transcript = match crate::disk::redact::redact_bytes(&bytes) {
            std::borrow::Cow::Borrowed(_) => bytes,
            std::borrow::Cow::Owned(redacted) => redacted,
        };
        Self {
            record,
            transcript: Some(transcript),
            outline: None,
        }
    }

    /// The trial with the outline of its trajectory (its model turns and tool calls, for trace
    /// export).
    pub(crate) fn with_outline(
        mut self,
        outline: crate::values::trajectory::TrajectoryOutline,
    ) -> Self {
        self.outline = Some(outline);
        self
    }

    /// The transcript's bytes, when there are any.
    pub fn transcript(&self) -> Option<&[u8]> {
        self.transcript.as_deref()
    }

    /// The outline of the trial's trajectory, when it had one and it was kept.
    pub(crate) fn outline(&self) -> Option<&crate::values::trajectory::TrajectoryOutline> {
        self.outline.as_ref()
    }
}

/// Reads the transcripts records point at, in either form: a span of the run's transcript log
/// (format 4 on; the file is opened once) or a file of its own (older run folders). Only files
/// under the run folder's `transcripts/` are read, never through a symbolic link, and at most
/// [`MAX_RUN_FILE_BYTES`] per transcript.
pub struct TranscriptReader {
    run_dir: PathBuf,
    log: Option<(String, File)>,
}

impl TranscriptReader {
    /// A reader of the transcripts of the run in `run_dir`.
    pub fn new(run_dir: &Path) -> Self {
        Self {
            run_dir: run_dir.to_path_buf(),
            log: None,
        }
    }

    /// The bytes of `record`'s transcript (its JSON document); `Ok(None)` when it has none or
    /// its file does not exist.
    pub fn read(&mut self, record: &TrialRecord) -> Result<Option<Vec<u8>>, RecordError> {
        self.read_at(
            &record.trial_id,
            record.transcript.as_deref(),
            record.transcript_span,
        )
    }

    /// [`TranscriptReader::read`] by the record's fields: its `trial_id` (for messages), its
    /// `transcript` path and its `transcript_span`.
    pub fn read_at(
        &mut self,
        trial_id: &str,
        transcript: Option<&str>,
        transcript_span: Option<TranscriptSpan>,
    ) -> Result<Option<Vec<u8>>, RecordError> {
        let Some(relative) = transcript else {
            return Ok(None);
        };
        let Some(span) = transcript_span else {
            return read_run_file(&self.run_dir, relative);
        };
        let path = self.run_dir.join(relative);
        let unsafe_path = |message: String| RecordError::UnsafePath {
            path: path.clone(),
            message,
        };
        if span.length > MAX_RUN_FILE_BYTES {
            return Err(unsafe_path(format!(
                "transcript of {trial_id} is {} bytes, more than the {MAX_RUN_FILE_BYTES} a transcript may hold",
                span.length
            )));
        }
        if self.log.as_ref().is_none_or(|(open, _)| open != relative) {
            let Some(checked) = checked_run_path(&self.run_dir, relative)? else {
                return Ok(None);
            };
            let file = File::open(&checked).map_err(io(&checked))?;
            self.log = Some((relative.to_string(), file));
        }
        let (_, file) = self.log.as_ref().expect("opened above");
        let mut bytes = vec![0; span.length as usize];
        std::os::unix::fs::FileExt::read_exact_at(file, &mut bytes, span.offset).map_err(
            |error| {
                unsafe_path(format!(
                    "transcript of {trial_id} at bytes {}..{}: {error}",
                    span.offset,
                    span.offset + span.length
                ))
            },
        )?;
        Ok(Some(bytes))
    }
}

/// Identity of a trial inside a run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrialKey {
    pub case_id: String,
    pub arm: Arm,
    pub attempt: u32,
}

impl TrialKey {
    /// `<case_id>/<arm>/<attempt>`.
    pub fn trial_id(&self) -> String {
        format!("{}/{}/{}", self.case_id, self.arm.as_str(), self.attempt)
    }

    /// The trial's own transcript file relative to the run folder (the form of format 3 and
    /// older; its HTML page is the same path ending in `.html`).
    pub fn transcript_path(&self) -> String {
        format!(
            "transcripts/{}.{}.{}.json",
            self.case_id,
            self.arm.as_str(),
            self.attempt
        )
    }
}

/// Errors of the run folder.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a valid trial record: {message}")]
    BadRecord {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: not a valid manifest: {message}")]
    BadManifest { path: PathBuf, message: String },
    #[error("{path}: another skill-lift process is writing this run (lock held)")]
    Locked { path: PathBuf },
    #[error("{path}: {message}")]
    UnsafePath { path: PathBuf, message: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl From<crate::disk::DiskError> for RecordError {
    fn from(error: crate::disk::DiskError) -> Self {
        RecordError::Io {
            path: error.path,
            source: error.source,
        }
    }
}

/// Redact the managed servers' logs (`*.log`) directly in `dir` in place
/// ([`crate::disk::redact::redact_logs_in`]), reporting a warning about each log that could not
/// be.
pub fn redact_logs_in(dir: &Path) {
    for error in crate::disk::redact::redact_logs_in(dir) {
        crate::values::reporter::report(crate::values::reporter::Event::warning_at(
            error.path,
            format!("cannot redact the log: {}", error.source),
        ));
    }
}

/// Read `manifest.json` from a run folder.
pub fn read_manifest(run_dir: &Path) -> Result<Manifest, RecordError> {
    let path = run_dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    // The key a bad value sits under is named (`k`, `runner.model`), not only its offset.
    let manifest: Manifest = serde_path_to_error::deserialize(
        &mut serde_json::Deserializer::from_str(&text),
    )
    .map_err(|e| RecordError::BadManifest {
        path: path.clone(),
        message: match e.path().to_string().as_str() {
            "." => e.inner().to_string(),
            key => format!("`{key}`: {}", e.inner()),
        },
    })?;
    if !(OLDEST_READABLE_FORMAT_VERSION..=FORMAT_VERSION).contains(&manifest.format_version) {
        return Err(RecordError::BadManifest {
            path,
            message: format!(
                "format version {} is not supported by this skill-lift (reads {OLDEST_READABLE_FORMAT_VERSION} to {FORMAT_VERSION})",
                manifest.format_version
            ),
        });
    }
    if let Some(message) = implausible_manifest(&manifest) {
        return Err(RecordError::BadManifest { path, message });
    }
    Ok(manifest)
}

/// Largest manifest `k` accepted (attempts per case per arm).
pub const MAX_K: u32 = 100_000;

/// What makes a manifest's plan impossible, when something does: `k` = 0, no arms or an arm
/// twice, shard `i/n` outside 1 ≤ i ≤ n, duplicate or empty case ids, a case id or run id that
/// is not a plain name (the rules they were written under), a `trials_planned` other than
/// cases × arms × K.
pub fn implausible_manifest(manifest: &Manifest) -> Option<String> {
    if manifest.k == 0 || manifest.k > MAX_K {
        return Some(format!("k = {} must be between 1 and {MAX_K}", manifest.k));
    }
    if manifest.arms.is_empty() {
        return Some("arms is empty; a run has both arms".to_string());
    }
    let arms: std::collections::BTreeSet<_> = manifest.arms.iter().collect();
    if arms.len() != manifest.arms.len() {
        return Some("arms lists an arm twice".to_string());
    }
    if let Some(shard) = manifest.shard
        && (shard.count == 0 || shard.index == 0 || shard.index > shard.count)
    {
        return Some(format!(
            "shard {}/{} is not a shard (1 ≤ i ≤ n)",
            shard.index, shard.count
        ));
    }
    let ids = &manifest.eval_set.case_ids;
    // Case ids name transcript files and report pages: the rule they were written under holds
    // on read, so a tampered manifest cannot make `report` or `merge` write outside the run.
    for (index, id) in ids.iter().enumerate() {
        if let Err(message) = validate_id(id) {
            return Some(format!("`eval_set.case_ids[{index}]`: {message}"));
        }
    }
    let run_id = &manifest.run_id;
    if run_id.is_empty() || run_id.starts_with('.') || run_id.contains(['/', '\\', '\0']) {
        return Some(format!(
            "`run_id` `{}` is not a plain folder name",
            manifest.run_id
        ));
    }
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    if unique.len() != ids.len() || ids.iter().any(|id| id.is_empty()) {
        return Some("eval_set.case_ids has an empty or repeated case id".to_string());
    }
    let planned = ids.len() as u128 * manifest.arms.len() as u128 * u128::from(manifest.k);
    if planned != manifest.trials_planned as u128 {
        return Some(format!(
            "trials_planned = {} but {} cases × {} arms × K = {} plan {planned}",
            manifest.trials_planned,
            ids.len(),
            manifest.arms.len(),
            manifest.k
        ));
    }
    None
}

/// Why a record does not belong to the run its manifest describes, when it does not: another
/// run id, an unknown case or arm, an attempt outside 1..=K, a trial id that does not match its
/// key, implausible numbers (negative or non-finite times, scores outside [0, 1]) or a
/// transcript path outside `transcripts/`.
///
/// Builds the run's case-id set on each call; a reader checking many records uses one
/// [`PlanCheck`] instead (a set lookup per record rather than a scan of the plan's cases).
pub fn record_outside_plan(manifest: &Manifest, record: &TrialRecord) -> Option<String> {
    PlanCheck::new(manifest).outside(&record.view())
}

/// The plan of one run, prepared once for checking many records against it: the manifest and a
/// hash set of its case ids (a lookup per record, so reading R records of an N-case run costs
/// O(R + N), not O(R × N)).
pub struct PlanCheck<'manifest> {
    manifest: &'manifest Manifest,
    case_ids: rustc_hash::FxHashSet<&'manifest str>,
}

impl<'manifest> PlanCheck<'manifest> {
    /// The check of records against `manifest`'s plan.
    pub fn new(manifest: &'manifest Manifest) -> Self {
        Self {
            manifest,
            case_ids: manifest
                .eval_set
                .case_ids
                .iter()
                .map(String::as_str)
                .collect(),
        }
    }

    /// Why `record` does not belong to the run, when it does not ([`record_outside_plan`]).
    pub fn outside(&self, record: &TrialView<'_>) -> Option<String> {
        let manifest = self.manifest;
        if record.run_id != manifest.run_id {
            return Some(format!(
                "run_id `{}` is not this run's (`{}`)",
                record.run_id, manifest.run_id
            ));
        }
        if !self.case_ids.contains(record.case_id.as_ref()) {
            return Some(format!(
                "case `{}` is not in the run's plan (manifest eval_set.case_ids)",
                record.case_id
            ));
        }
        if !manifest.arms.contains(&record.arm) {
            return Some(format!(
                "arm `{}` is not in the run's plan",
                record.arm.as_str()
            ));
        }
        if record.attempt == 0 || record.attempt > manifest.k {
            return Some(format!(
                "attempt {} is outside 1..={} (K)",
                record.attempt, manifest.k
            ));
        }
        if !record.trial_id_matches_key() {
            return Some(format!(
                "trial_id `{}` does not match its case, arm and attempt",
                record.trial_id
            ));
        }
        let seconds = |name: &str, value: f64| {
            (!(value.is_finite() && value >= 0.0))
                .then(|| format!("{name} = {value} must be a non-negative number of seconds"))
        };
        if let Some(problem) = seconds("wall_s", record.wall_s)
            .or_else(|| seconds("model_latency_s", record.model_latency_s))
        {
            return Some(problem);
        }
        let unit = |value: f64| value.is_finite() && (0.0..=1.0).contains(&value);
        if let Some(composite) = record.composite
            && !unit(composite)
        {
            return Some(format!("composite = {composite} is outside [0, 1]"));
        }
        if let Some((name, score)) = record.scores.0.iter().find(|(_, score)| !unit(*score)) {
            return Some(format!("scores.{name} = {score} is outside [0, 1]"));
        }
        if let Some(transcript) = &record.transcript
            && let Err(message) = check_relative(transcript)
        {
            return Some(format!("transcript `{transcript}`: {message}"));
        }
        None
    }
}

/// Largest file read from a run folder (a transcript), bytes.
pub const MAX_RUN_FILE_BYTES: u64 = 512 << 20;

/// Why a recorded transcript path is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum TranscriptPathError {
    /// Not under `transcripts/`, or absolute.
    #[error("must be a relative path under transcripts/")]
    NotUnderTranscripts,
    /// A `..`, `.` or root component.
    #[error("must not contain `..`, `.` or a root")]
    NotPlain,
    /// A NUL character.
    #[error("must not contain NUL")]
    Nul,
}

/// Whether `relative` is a plain path under `transcripts/`: relative, no `..`, no root.
fn check_relative(relative: &str) -> Result<(), TranscriptPathError> {
    // The usual form, `transcripts/<one name>`, needs no component parsing.
    if let Some(name) = relative.strip_prefix("transcripts/")
        && !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
    {
        return Ok(());
    }
    let path = Path::new(relative);
    let mut components = path.components();
    if !matches!(components.next(), Some(std::path::Component::Normal(first)) if first == "transcripts")
    {
        return Err(TranscriptPathError::NotUnderTranscripts);
    }
    if !components.all(|c| matches!(c, std::path::Component::Normal(_))) {
        return Err(TranscriptPathError::NotPlain);
    }
    if relative.contains('\0') {
        return Err(TranscriptPathError::Nul);
    }
    Ok(())
}

/// `root` joined with `relative`, refused unless `relative` is a plain relative path (only
/// normal components: no root, no `..`, no `.`, no NUL). Every file a derived export writes
/// under its folder (report pages named after recorded case ids) is placed through it, so a
/// record that slipped past the read checks still cannot write outside `root`.
pub fn path_inside(root: &Path, relative: &str) -> Result<PathBuf, RecordError> {
    let plain = !relative.is_empty()
        && !relative.contains('\0')
        && Path::new(relative)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain {
        return Err(RecordError::UnsafePath {
            path: root.join(relative),
            message: format!(
                "`{relative}` is not a plain path inside {}; refusing to write it",
                root.display()
            ),
        });
    }
    Ok(root.join(relative))
}

/// The file a record names (`transcript`), checked to stay inside the run folder: a relative
/// path under `transcripts/`, with no symbolic link on the way and a regular file at the end
/// (never a device or a FIFO). `Ok(None)` when it does not exist.
pub fn run_file(run_dir: &Path, relative: &str) -> Result<Option<PathBuf>, RecordError> {
    let Some(current) = checked_run_path(run_dir, relative)? else {
        return Ok(None);
    };
    let metadata = std::fs::symlink_metadata(&current).map_err(io(&current))?;
    if metadata.len() > MAX_RUN_FILE_BYTES {
        return Err(RecordError::UnsafePath {
            path: current,
            message: format!(
                "is {} bytes, more than the {MAX_RUN_FILE_BYTES} a run-folder file may hold",
                metadata.len()
            ),
        });
    }
    Ok(Some(current))
}

/// [`run_file`]'s path rules without its size limit (the transcript log may be larger than one
/// file may; each transcript in it is bounded instead).
fn checked_run_path(run_dir: &Path, relative: &str) -> Result<Option<PathBuf>, RecordError> {
    let unsafe_path = |message: String| RecordError::UnsafePath {
        path: run_dir.join(relative),
        message,
    };
    check_relative(relative).map_err(|problem| unsafe_path(problem.to_string()))?;
    let mut current = run_dir.to_path_buf();
    for component in Path::new(relative).components() {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(unsafe_path(
                    "is or passes through a symbolic link; run-folder files must be inside the run folder".to_string(),
                ));
            }
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io(&current)(error)),
        }
    }
    let metadata = std::fs::symlink_metadata(&current).map_err(io(&current))?;
    if !metadata.is_file() {
        return Err(unsafe_path("is not a regular file".to_string()));
    }
    Ok(Some(current))
}

/// Read a file a record names ([`run_file`] rules), at most [`MAX_RUN_FILE_BYTES`] bytes.
/// `Ok(None)` when it does not exist.
pub fn read_run_file(run_dir: &Path, relative: &str) -> Result<Option<Vec<u8>>, RecordError> {
    let Some(path) = run_file(run_dir, relative)? else {
        return Ok(None);
    };
    let file = File::open(&path).map_err(io(&path))?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_RUN_FILE_BYTES + 1),
        &mut bytes,
    )
    .map_err(io(&path))?;
    if bytes.len() as u64 > MAX_RUN_FILE_BYTES {
        return Err(RecordError::UnsafePath {
            path,
            message: format!("is larger than {MAX_RUN_FILE_BYTES} bytes"),
        });
    }
    Ok(Some(bytes))
}

/// Remove temporary files a killed skill-lift left in `run_dir` and `run_dir/transcripts`
/// (names starting with [`crate::disk::TEMP_PREFIX`], or tempfile's `.tmpXXXXXX` of earlier versions).
/// Returns how many were removed. Call only while holding the run's [`RunLock`].
pub fn remove_stale_temp_files(run_dir: &Path, _lock: &RunLock) -> Result<usize, RecordError> {
    let mut removed = 0;
    for dir in [run_dir.to_path_buf(), run_dir.join("transcripts")] {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(io(&dir)(error)),
        };
        for entry in entries {
            let entry = entry.map_err(io(&dir))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let legacy = name.len() == 10
                && name.starts_with(".tmp")
                && name[4..].chars().all(|c| c.is_ascii_alphanumeric());
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if is_file && (name.starts_with(crate::disk::TEMP_PREFIX) || legacy) {
                std::fs::remove_file(entry.path()).map_err(io(&entry.path()))?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// Stream the complete records of `trials.jsonl` to `visit`, in file order, without holding
/// them in memory. A torn last line (no trailing newline: a crash mid-write) is not a record and
/// is skipped. Records superseded by a later record of the same trial (`supersedes: true`) are
/// skipped too, so every trial is visited once. Returns the byte length of the valid prefix
/// (what [`TrialLog::open`] keeps). A missing file has no records.
pub fn for_each_trial(
    path: &Path,
    mut visit: impl FnMut(TrialRecord) -> Result<(), RecordError>,
) -> Result<u64, RecordError> {
    for_each_numbered_trial::<FullRecord>(path, |_, record| visit(record))
}

/// [`for_each_trial`], checking each record against the run `manifest` describes
/// ([`record_outside_plan`]): a record outside the plan is an error naming `file:line`.
pub fn for_each_planned_trial(
    path: &Path,
    manifest: &Manifest,
    mut visit: impl FnMut(TrialRecord) -> Result<(), RecordError>,
) -> Result<u64, RecordError> {
    let plan = PlanCheck::new(manifest);
    for_each_numbered_trial::<FullRecord>(path, |line, record| {
        if let Some(message) = plan.outside(&record.view()) {
            return Err(RecordError::BadRecord {
                path: path.to_path_buf(),
                line,
                message,
            });
        }
        visit(record)
    })
}

/// [`for_each_planned_trial`] for readers that need only what the analysis reads: each line is
/// decoded as a [`TrialView`] borrowing from the line (the same records, in the same order, with
/// the same supersede rule, the same torn-line rule and the same first error as the full
/// records), which costs a fraction of decoding the full records. The records are visited into
/// a `state` made by `start`, which is returned.
///
/// The file is read once when no record of it supersedes another (the usual case), its blocks
/// decoded on several threads ([`parallel::for_each_view`]) and the records visited in file
/// order. When a block holds a superseding record (`supersedes: true`; that block is not
/// visited), or a line is refused, the state is made afresh and the file read as
/// [`for_each_planned_trial`] reads it (superseded lines found first), so the outcome is the same.
pub fn for_each_planned_view<State>(
    path: &Path,
    manifest: &Manifest,
    mut start: impl FnMut() -> State,
    mut visit: impl FnMut(&mut State, &TrialView<'_>) -> Result<(), RecordError>,
) -> Result<(State, u64), RecordError> {
    let plan = PlanCheck::new(manifest);
    let mut state = start();
    let single_pass = parallel::for_each_view(
        path,
        PARALLEL_READ_BLOCK,
        decoding_threads(),
        |record| record.supersedes,
        |record| plan.outside(record),
        |_, record| visit(&mut state, record),
    );
    if let Ok(Some(valid_len)) = single_pass {
        return Ok((state, valid_len));
    }
    let mut state = start();
    let valid_len = for_each_numbered_trial::<ViewRecord>(path, |line, record| {
        if let Some(message) = plan.outside(&record) {
            return Err(RecordError::BadRecord {
                path: path.to_path_buf(),
                line,
                message,
            });
        }
        visit(&mut state, &record)
    })?;
    Ok((state, valid_len))
}

/// How a line of `trials.jsonl` is decoded: as a whole [`TrialRecord`] ([`FullRecord`]) or as
/// a [`TrialView`] borrowing from the line ([`ViewRecord`]). Both accept and refuse the same
/// lines.
trait LineDecoding {
    /// What one line decodes to; it may borrow from the line.
    type Decoded<'line>: Deserialize<'line>;

    /// The message for a line that does not decode: the decoder's, as a [`TrialRecord`]
    /// decoder words it.
    fn message(_line: &[u8], error: serde_json::Error) -> String {
        error.to_string()
    }
}

/// Lines decoded as [`TrialRecord`]s.
enum FullRecord {}

impl LineDecoding for FullRecord {
    type Decoded<'line> = TrialRecord;
}

/// Lines decoded as [`TrialView`]s.
enum ViewRecord {}

impl LineDecoding for ViewRecord {
    type Decoded<'line> = TrialView<'line>;

    /// A line refused as a view is refused as a record too; the record decoder's message is
    /// the one given (the two word a few shapes differently, e.g. a record as an array).
    fn message(line: &[u8], error: serde_json::Error) -> String {
        let full = match std::str::from_utf8(line) {
            Ok(text) => serde_json::from_str::<TrialRecord>(text).err(),
            Err(_) => serde_json::from_slice::<TrialRecord>(line).err(),
        };
        full.unwrap_or(error).to_string()
    }
}

/// The text a record superseding another has (records are written compactly).
const SUPERSEDES_MARKER: &[u8] = br#""supersedes":true"#;

/// The line numbers of records superseded by a later `supersedes: true` record of the same trial
/// (a cheap first pass: the file is scanned in large blocks for the marker text, and only when
/// it is there are the lines that mention it parsed, then the earlier lines of those trials
/// found by their trial id).
fn superseded_lines(path: &Path) -> Result<std::collections::HashSet<usize>, RecordError> {
    static MARKER: std::sync::LazyLock<regex::bytes::Regex> = std::sync::LazyLock::new(|| {
        regex::bytes::Regex::new(&regex::escape(
            std::str::from_utf8(SUPERSEDES_MARKER).expect("ASCII marker"),
        ))
        .expect("marker pattern")
    });
    let mut superseded = std::collections::HashSet::new();
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(superseded),
        Err(error) => return Err(io(path)(error)),
    };
    if !contains_marker(file, path, &MARKER)? {
        // No record of the file supersedes another (the usual case): one fast scan.
        return Ok(superseded);
    }
    let file = File::open(path).map_err(io(path))?;
    // trial id → line of its latest superseding record.
    let mut latest: std::collections::HashMap<String, usize> = Default::default();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io(path))? == 0
            || line.last() != Some(&b'\n')
        {
            break;
        }
        number += 1;
        if MARKER.is_match(&line)
            && let Ok(record) = serde_json::from_slice::<TrialRecord>(&line)
            && record.supersedes
        {
            latest.insert(record.trial_id, number);
        }
    }
    if latest.is_empty() {
        return Ok(superseded);
    }
    for_each_line::<FullRecord>(path, |number, record| {
        if latest
            .get(&record.trial_id)
            .is_some_and(|last| number < *last)
        {
            superseded.insert(number);
        }
        Ok(())
    })?;
    Ok(superseded)
}

/// Whether `marker` matches anywhere in `file` (read in large blocks; a match across a block
/// boundary is found).
fn contains_marker(
    mut file: File,
    path: &Path,
    marker: &regex::bytes::Regex,
) -> Result<bool, RecordError> {
    // Kept from the previous block: longer than the marker, so no match is cut in two.
    const OVERLAP: usize = 64;
    let mut block = vec![0u8; 4 << 20];
    let mut kept = 0;
    loop {
        let read = match std::io::Read::read(&mut file, &mut block[kept..]) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(path)(e)),
        };
        if read == 0 {
            return Ok(false);
        }
        let end = kept + read;
        if marker.is_match(&block[..end]) {
            return Ok(true);
        }
        kept = end.min(OVERLAP);
        block.copy_within(end - kept..end, 0);
    }
}

/// Bytes read from `trials.jsonl` at a time (lines are decoded where they lie in the block).
const READ_BLOCK: usize = 4 << 20;

/// Bytes of `trials.jsonl` in a block decoded by one thread of the parallel reader (measured
/// on 1,000,000 records: 1 MiB blocks as fast as 4 MiB ones, with less memory).
const PARALLEL_READ_BLOCK: usize = 1 << 20;

/// Threads decoding `trials.jsonl` for the analysis: one per available CPU, at most four (the
/// reader and the analysis itself run beside them).
fn decoding_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4))
}

/// Every complete record with its 1-based line number, superseded ones included, decoded as
/// `D` says. The file is read in large blocks and each whole line decoded in place; a line
/// without its newline at the end of the file (torn by a crash) is no record and ends the
/// reading. The first line that does not decode is the error, naming the file and line.
fn for_each_line<D: LineDecoding>(
    path: &Path,
    visit: impl FnMut(usize, D::Decoded<'_>) -> Result<(), RecordError>,
) -> Result<u64, RecordError> {
    for_each_line_in_blocks::<D>(path, READ_BLOCK, visit)
}

/// [`for_each_line`] reading `block_bytes` at a time (grown for a longer line).
fn for_each_line_in_blocks<D: LineDecoding>(
    path: &Path,
    block_bytes: usize,
    mut visit: impl FnMut(usize, D::Decoded<'_>) -> Result<(), RecordError>,
) -> Result<u64, RecordError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(io(path)(error)),
    };
    let mut valid_len = 0u64;
    let mut number = 0;
    let mut block: Vec<u8> = vec![0; block_bytes.max(1)];
    // Bytes of `block` holding data: whole lines first, then the start of the next one.
    let mut filled = 0;
    loop {
        if filled == block.len() {
            // One line longer than the block: make room for the rest of it.
            block.resize(block.len() * 2, 0);
        }
        let read = match std::io::Read::read(&mut file, &mut block[filled..]) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(path)(e)),
        };
        if read == 0 {
            // End of file: what is left (if anything) is a torn line.
            break;
        }
        let scanned = filled;
        filled += read;
        // Only the new bytes can hold the newline ending the first unfinished line.
        let Some(last_newline) = memchr::memrchr(b'\n', &block[scanned..filled]) else {
            continue;
        };
        let whole = scanned + last_newline + 1;
        let mut start = 0;
        while start < whole {
            let end = start
                + memchr::memchr(b'\n', &block[start..whole])
                    .expect("a newline ends every whole line");
            number += 1;
            let text = &block[start..end];
            if let Some(decoded) = decode_line::<D>(text) {
                let record = decoded.map_err(|e| RecordError::BadRecord {
                    path: path.to_path_buf(),
                    line: number,
                    message: D::message(text, e),
                })?;
                visit(number, record)?;
            }
            valid_len += (end + 1 - start) as u64;
            start = end + 1;
        }
        block.copy_within(whole..filled, 0);
        filled -= whole;
    }
    Ok(valid_len)
}

/// One line of `trials.jsonl` (without its newline) decoded as `D` says; `None` for a blank
/// line (only whitespace), which is no record.
fn decode_line<D: LineDecoding>(text: &[u8]) -> Option<Result<D::Decoded<'_>, serde_json::Error>> {
    let blank = match text.first() {
        Some(b'{') => false,
        _ => text.iter().all(u8::is_ascii_whitespace),
    };
    if blank {
        return None;
    }
    // A line of UTF-8 (every line skill-lift writes) is checked once as a whole and decoded as
    // text, which spares the decoder checking each string again; any other line is decoded as
    // bytes, which accepts and refuses what it did before.
    Some(match std::str::from_utf8(text) {
        Ok(text) => serde_json::from_str::<D::Decoded<'_>>(text),
        Err(_) => serde_json::from_slice::<D::Decoded<'_>>(text),
    })
}

/// The current (not superseded) records with their line numbers.
fn for_each_numbered_trial<D: LineDecoding>(
    path: &Path,
    mut visit: impl FnMut(usize, D::Decoded<'_>) -> Result<(), RecordError>,
) -> Result<u64, RecordError> {
    let superseded = superseded_lines(path)?;
    for_each_line::<D>(path, |number, record| {
        if superseded.contains(&number) {
            Ok(())
        } else {
            visit(number, record)
        }
    })
}

/// Every complete record of `trials.jsonl`, superseded ones included, in file order (what
/// `--retry-unscoreable` and the audit of a run read).
pub fn read_all_trial_lines(path: &Path) -> Result<(Vec<TrialRecord>, u64), RecordError> {
    let mut records = Vec::new();
    let valid_len = for_each_line::<FullRecord>(path, |_, record| {
        records.push(record);
        Ok(())
    })?;
    Ok((records, valid_len))
}

/// Read every complete record of `trials.jsonl` into memory (see [`for_each_trial`] for the
/// streaming form and the torn-line rule).
pub fn read_trials(path: &Path) -> Result<(Vec<TrialRecord>, u64), RecordError> {
    let mut records = Vec::new();
    let valid_len = for_each_trial(path, |record| {
        records.push(record);
        Ok(())
    })?;
    Ok((records, valid_len))
}

/// The exclusive lock of a run folder (`.lock`, an advisory file lock). Whoever writes a run
/// (`run`, `run --resume`) takes it *before* reading `trials.jsonl` and holds it until its final
/// export is written, so two processes never interleave reads and truncations.
pub struct RunLock {
    _file: File,
}

impl RunLock {
    /// Take the lock of `run_dir`; fails at once when another process holds it.
    pub fn acquire(run_dir: &Path) -> Result<Self, RecordError> {
        let lock_path = run_dir.join(".lock");
        let file = crate::disk::open(
            &lock_path,
            OpenOptions::new().create(true).truncate(false).write(true),
        )?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(RecordError::Locked {
                path: run_dir.to_path_buf(),
            }),
            Err(std::fs::TryLockError::Error(error)) => Err(io(&lock_path)(error)),
        }
    }
}

/// The append-only trial log of a run (`trials.jsonl`) and its transcript log
/// ([`TRANSCRIPTS_FILE`]); opening it requires the run's [`RunLock`].
pub struct TrialLog {
    file: File,
    path: PathBuf,
    transcripts: TranscriptLog,
}

/// The append side of [`TRANSCRIPTS_FILE`] ([`TrialLog`] owns one; `merge` writes a new
/// folder's with its own).
pub struct TranscriptLog {
    file: File,
    path: PathBuf,
    /// The file's length: where the next transcript goes.
    end: u64,
}

impl TranscriptLog {
    /// Open (creating) the transcript log of `run_dir`, cutting a torn last line (a crash in the
    /// middle of a write: no record points at it, since records are written only after their
    /// transcripts are durable). Complete lines no record points at (their records were not
    /// yet written) stay: they are never read.
    pub fn open(run_dir: &Path) -> Result<Self, RecordError> {
        use std::io::{Read, Seek, SeekFrom};
        let path = run_dir.join(TRANSCRIPTS_FILE);
        let dir = path.parent().expect("the transcript log is in a folder");
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let existed = path.exists();
        let mut file = crate::disk::open(
            &path,
            OpenOptions::new().create(true).append(true).read(true),
        )?;
        if !existed {
            // The new file's name must survive a crash too.
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io(dir))?;
        }
        let length = file.metadata().map_err(io(&path))?.len();
        // The end of the last complete line, searched backwards block by block.
        let mut end = length;
        let mut block = vec![0u8; 64 << 10];
        while end > 0 {
            let start = end.saturating_sub(block.len() as u64);
            let chunk = &mut block[..(end - start) as usize];
            file.seek(SeekFrom::Start(start)).map_err(io(&path))?;
            file.read_exact(chunk).map_err(io(&path))?;
            if let Some(newline) = chunk.iter().rposition(|b| *b == b'\n') {
                end = start + newline as u64 + 1;
                break;
            }
            end = start;
        }
        if end < length {
            file.set_len(end).map_err(io(&path))?;
            file.sync_data().map_err(io(&path))?;
        }
        Ok(Self { file, path, end })
    }

    /// Append the batch's transcripts in one write and fsync them; points each record at its
    /// own (a record without transcript bytes gets none).
    pub fn append(&mut self, batch: &mut [FinishedTrial]) -> Result<(), RecordError> {
        let size: usize = batch
            .iter()
            .filter_map(|trial| trial.transcript.as_ref())
            .map(|bytes| bytes.len() + 1)
            .sum();
        let mut buffer = Vec::with_capacity(size);
        for trial in batch.iter_mut() {
            match &trial.transcript {
                Some(bytes) => {
                    let offset = self.end + buffer.len() as u64;
                    buffer.extend_from_slice(bytes);
                    buffer.push(b'\n');
                    trial.record.transcript = Some(TRANSCRIPTS_FILE.to_string());
                    trial.record.transcript_span = Some(TranscriptSpan {
                        offset,
                        length: bytes.len() as u64,
                    });
                }
                None => {
                    trial.record.transcript = None;
                    trial.record.transcript_span = None;
                }
            }
        }
        if buffer.is_empty() {
            return Ok(());
        }
        if let Err(error) = self
            .file
            .write_all(&buffer)
            .and_then(|()| self.file.sync_data())
        {
            // A partial write leaves a torn tail; the next open cuts it. The file's length
            // decides where the next transcript goes.
            self.end = self.file.metadata().map(|m| m.len()).unwrap_or(self.end);
            return Err(io(&self.path)(error));
        }
        self.end += buffer.len() as u64;
        Ok(())
    }
}

impl TrialLog {
    /// Open (creating) `trials.jsonl` in `run_dir` for appending, after cutting a torn last line
    /// to `valid_len` bytes (read under the same `lock`).
    pub fn open(run_dir: &Path, valid_len: u64, _lock: &RunLock) -> Result<Self, RecordError> {
        let path = run_dir.join("trials.jsonl");
        let file = crate::disk::open(
            &path,
            OpenOptions::new().create(true).append(true).read(true),
        )?;
        let length = file.metadata().map_err(io(&path))?.len();
        if length > valid_len {
            file.set_len(valid_len).map_err(io(&path))?;
        }
        let transcripts = TranscriptLog::open(run_dir)?;
        Ok(Self {
            file,
            path,
            transcripts,
        })
    }

    /// Commit a batch of finished trials: their transcripts are appended to the transcript log
    /// and fsync'd first, then their records (pointing at them) to `trials.jsonl` in one write
    /// and fsync. A kill at any moment leaves no record pointing at transcript bytes that are
    /// not on disk.
    pub fn commit(&mut self, batch: &mut [FinishedTrial]) -> Result<(), RecordError> {
        self.transcripts.append(batch)?;
        let records: Vec<&TrialRecord> = batch.iter().map(|trial| &trial.record).collect();
        self.append_all(&records)
    }

    /// Append records (one line each) in a single write, then fsync: group commit. Their
    /// `transcript` fields are written as they are (use [`TrialLog::commit`] for new
    /// transcripts).
    pub fn append(&mut self, records: &[TrialRecord]) -> Result<(), RecordError> {
        let records: Vec<&TrialRecord> = records.iter().collect();
        self.append_all(&records)
    }

    fn append_all(&mut self, records: &[&TrialRecord]) -> Result<(), RecordError> {
        let mut buffer = Vec::with_capacity(records.len() * 1024);
        for record in records {
            serde_json::to_writer(&mut buffer, record).map_err(|e| RecordError::Io {
                path: self.path.clone(),
                source: std::io::Error::other(e),
            })?;
            buffer.push(b'\n');
        }
        // The redaction boundary: no credential value or key shape reaches the log.
        self.file
            .write_all(&crate::disk::redact::redact_bytes(&buffer))
            .map_err(io(&self.path))?;
        self.file.sync_data().map_err(io(&self.path))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::trajectory::RetryRecord;

    pub(crate) fn record(case_id: &str, arm: Arm, attempt: u32, outcome: Outcome) -> TrialRecord {
        crate::test_support::trial_record(case_id, arm, attempt, outcome)
    }

    #[test]
    fn transcripts_are_committed_before_their_records_and_read_in_either_form() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RunLock::acquire(dir.path()).unwrap();
        let mut log = TrialLog::open(dir.path(), 0, &lock).unwrap();
        let mut batch = vec![
            FinishedTrial::with_transcript_bytes(
                record("a", Arm::WithSkill, 1, Outcome::Pass),
                br#"{"trial_id":"a/with_skill/1"}"#,
            ),
            FinishedTrial::without_transcript(record("a", Arm::WithoutSkill, 1, Outcome::Fail)),
            FinishedTrial::with_transcript_bytes(
                record("b", Arm::WithSkill, 1, Outcome::Pass),
                br#"{"trial_id":"b/with_skill/1"}"#,
            ),
        ];
        log.commit(&mut batch).unwrap();
        drop(log);
        let mut records = Vec::new();
        for_each_trial(&dir.path().join("trials.jsonl"), |r| {
            records.push(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[1].transcript, None);
        assert_eq!(
            records[2].transcript_span,
            Some(TranscriptSpan {
                offset: 30,
                length: 29
            })
        );
        let mut reader = TranscriptReader::new(dir.path());
        assert_eq!(
            reader.read(&records[2]).unwrap().unwrap(),
            br#"{"trial_id":"b/with_skill/1"}"#
        );
        assert_eq!(reader.read(&records[1]).unwrap(), None);
        // A torn tail (a kill in the middle of a write) is cut when the log is opened again,
        // and the next transcript goes after the last complete line.
        let path = dir.path().join(TRANSCRIPTS_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"torn");
        std::fs::write(&path, &bytes).unwrap();
        let valid = std::fs::metadata(dir.path().join("trials.jsonl"))
            .unwrap()
            .len();
        let mut log = TrialLog::open(dir.path(), valid, &lock).unwrap();
        let mut more = vec![FinishedTrial::with_transcript_bytes(
            record("c", Arm::WithSkill, 1, Outcome::Pass),
            b"{}",
        )];
        log.commit(&mut more).unwrap();
        assert_eq!(more[0].record.transcript_span.unwrap().offset, 60);
        assert_eq!(std::fs::read(&path).unwrap().len(), 63);
        assert_eq!(reader.read(&more[0].record).unwrap().unwrap(), b"{}");
        // The form of format 3 and older: a file per trial.
        std::fs::write(dir.path().join("transcripts/old.json"), b"{\"old\":1}").unwrap();
        let mut old = record("d", Arm::WithSkill, 1, Outcome::Pass);
        old.transcript = Some("transcripts/old.json".into());
        assert_eq!(reader.read(&old).unwrap().unwrap(), b"{\"old\":1}");
        // A span past the end is an error, never a panic or a short read.
        let mut past = more[0].record.clone();
        past.transcript_span = Some(TranscriptSpan {
            offset: 1 << 40,
            length: 4,
        });
        assert!(matches!(
            reader.read(&past),
            Err(RecordError::UnsafePath { .. })
        ));
    }

    #[test]
    fn append_read_and_torn_line_repair() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RunLock::acquire(dir.path()).unwrap();
        {
            let mut log = TrialLog::open(dir.path(), 0, &lock).unwrap();
            log.append(&[
                record("a", Arm::WithSkill, 1, Outcome::Pass),
                record("a", Arm::WithoutSkill, 1, Outcome::Fail),
            ])
            .unwrap();
        }
        let path = dir.path().join("trials.jsonl");
        // Simulate a crash mid-write.
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"run_id\": \"r\", \"trial_").unwrap();
        drop(file);
        let (records, valid) = read_trials(&path).unwrap();
        assert_eq!(records.len(), 2);
        let mut log = TrialLog::open(dir.path(), valid, &lock).unwrap();
        log.append(&[record("b", Arm::WithSkill, 1, Outcome::Pass)])
            .unwrap();
        drop(log);
        let (records, _) = read_trials(&path).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[2].case_id, "b");
    }

    #[test]
    fn lock_refuses_a_second_writer() {
        let dir = tempfile::tempdir().unwrap();
        let _first = RunLock::acquire(dir.path()).unwrap();
        assert!(matches!(
            RunLock::acquire(dir.path()),
            Err(RecordError::Locked { .. })
        ));
    }

    #[test]
    fn superseded_records_are_skipped_and_the_latest_counts() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RunLock::acquire(dir.path()).unwrap();
        let mut log = TrialLog::open(dir.path(), 0, &lock).unwrap();
        let retried = |outcome| TrialRecord {
            supersedes: true,
            ..record("a", Arm::WithSkill, 1, outcome)
        };
        log.append(&[
            record("a", Arm::WithSkill, 1, Outcome::Unscoreable),
            record("a", Arm::WithoutSkill, 1, Outcome::Fail),
            retried(Outcome::Unscoreable),
            record("b", Arm::WithSkill, 1, Outcome::Pass),
            retried(Outcome::Pass),
        ])
        .unwrap();
        let (records, _) = read_trials(&dir.path().join("trials.jsonl")).unwrap();
        let outcomes: Vec<(String, Outcome)> = records
            .iter()
            .map(|r| (r.trial_id.clone(), r.outcome))
            .collect();
        assert_eq!(
            outcomes,
            vec![
                ("a/without_skill/1".to_string(), Outcome::Fail),
                ("b/with_skill/1".to_string(), Outcome::Pass),
                ("a/with_skill/1".to_string(), Outcome::Pass),
            ]
        );
        let (all, _) = read_all_trial_lines(&dir.path().join("trials.jsonl")).unwrap();
        assert_eq!(all.len(), 5, "superseded lines stay in the log");
    }

    /// A record using every part of the format (escapes, non-ASCII text, the optional parts).
    fn rich_record() -> TrialRecord {
        let mut full = record("c\"é", Arm::WithSkill, 2, Outcome::Unscoreable);
        full.trial_id = "c\"é/with_skill/2".into();
        full.observed_model = Some("m-1".into());
        full.reason = Some("agent API error: \"429\"\n\tretry".into());
        full.decided_by = Some(PassBasis::OutputChecks);
        full.outcome_score = Some(0.25);
        full.checks = vec![
            CheckResult {
                check_type: "regex".into(),
                passed: true,
                detail: "matches /^\\s*Aye!/".into(),
            },
            CheckResult {
                check_type: "contains".into(),
                passed: false,
                detail: "no \"x\"".into(),
            },
        ];
        full.scores = [("b\\".to_string(), 0.5), ("a".to_string(), 1.0)]
            .into_iter()
            .collect();
        full.composite = Some(0.75);
        full.other_judge_errors = [("j2".to_string(), vec!["bad".to_string()])]
            .into_iter()
            .collect();
        full.usage.input_tokens = Some(10);
        full.usage.cost_usd = Some(0.5);
        full.retries = vec![RetryRecord {
            error: "HTTP 429".into(),
            waited_s: 1.5,
        }];
        full.activated_skills = vec!["target".into(), "decoy".into()];
        full.transcript = Some(TRANSCRIPTS_FILE.into());
        full.transcript_span = Some(TranscriptSpan {
            offset: 3,
            length: 4,
        });
        full.workspace = Some("/tmp/w s".into());
        full.unscoreable_cause = Some(UnscoreableCause::AgentApiError);
        full.infrastructure = Some(crate::values::trajectory::InfrastructureCause::RateLimited);
        full.usage_partial = true;
        full.truncated = vec![crate::values::trajectory::OutputCut::Stdout];
        full.reused_from = Some(ReusedFrom {
            run_id: "old".into(),
            trial_id: "t".into(),
        });
        full.judge_usage = Some(JudgeSpend {
            requests: 2,
            skipped: Some("decisive".into()),
            ..Default::default()
        });
        full
    }

    /// What reading `path` gives with decoding `D` and a block of `block` bytes: each visited
    /// record's line and view (a full record by its view), and the valid length or the error.
    fn read_as<D: LineDecoding>(
        path: &Path,
        block: usize,
        view: impl for<'a> Fn(&'a D::Decoded<'_>) -> TrialView<'a>,
    ) -> (Vec<(usize, String)>, Result<u64, String>) {
        let mut seen = Vec::new();
        let result = for_each_line_in_blocks::<D>(path, block, |line, record| {
            seen.push((line, format!("{:?}", view(&record))));
            Ok(())
        });
        (seen, result.map_err(|e| e.to_string()))
    }

    /// [`read_as`] with [`parallel::for_each_view`] and `workers` decoding threads.
    fn read_in_parallel(
        path: &Path,
        block: usize,
        workers: usize,
    ) -> (Vec<(usize, String)>, Result<u64, String>) {
        let mut seen = Vec::new();
        let result = parallel::for_each_view(
            path,
            block,
            workers,
            |_| false,
            |_| None,
            |line, record| {
                seen.push((line, format!("{record:?}")));
                Ok(())
            },
        );
        (seen, result.map(Option::unwrap).map_err(|e| e.to_string()))
    }

    #[test]
    fn the_parallel_reader_stops_checks_and_ends_like_the_sequential_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trials.jsonl");
        let line = |case: &str| {
            serde_json::to_string(&record(case, Arm::WithSkill, 1, Outcome::Pass)).unwrap()
        };
        let mut text = String::new();
        for case in 0..200 {
            text.push_str(&line(&format!("case-{case:03}")));
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap();
        // Many blocks, more workers than blocks, no file.
        for (block, workers) in [(1, 2), (500, 3), (4096, 4), (1 << 20, 8)] {
            let (seen, valid) = read_in_parallel(&path, block, workers);
            assert_eq!(seen.len(), 200);
            assert!(seen.iter().enumerate().all(|(i, (line, _))| *line == i + 1));
            assert_eq!(valid, Ok(text.len() as u64));
        }
        let missing = dir.path().join("none.jsonl");
        assert_eq!(read_in_parallel(&missing, 100, 2), (Vec::new(), Ok(0)));
        // A check's refusal names the line; records before it are visited, none after.
        let refuse_case_150 = |record: &TrialView<'_>| {
            (record.case_id == "case-150").then(|| "not planned".to_string())
        };
        for workers in [1, 2, 3] {
            let mut visited = 0;
            let error = parallel::for_each_view(
                &path,
                1000,
                workers,
                |_| false,
                refuse_case_150,
                |_, _| {
                    visited += 1;
                    Ok(())
                },
            )
            .unwrap_err()
            .to_string();
            assert_eq!(visited, 150);
            assert!(
                error.ends_with("trials.jsonl:151: not a valid trial record: not planned"),
                "{error}"
            );
        }
        // `stop`: nothing of the block that holds the record, or after it, is visited.
        let mut visited = Vec::new();
        let stopped = parallel::for_each_view(
            &path,
            2000,
            2,
            |record| record.case_id == "case-120",
            |_| None,
            |line, _| {
                visited.push(line);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(stopped, None);
        assert!(
            !visited.is_empty() && visited.len() < 121,
            "{}",
            visited.len()
        );
        // A visitor's error ends the reading (every thread stops).
        for workers in [1, 2, 5] {
            let mut visited = 0;
            let error = parallel::for_each_view(
                &path,
                300,
                workers,
                |_| false,
                |_| None,
                |line, _| {
                    visited += 1;
                    if line == 7 {
                        return Err(RecordError::BadRecord {
                            path: path.clone(),
                            line,
                            message: "visitor".into(),
                        });
                    }
                    Ok(())
                },
            )
            .unwrap_err();
            assert_eq!(visited, 7);
            assert!(
                error
                    .to_string()
                    .ends_with(":7: not a valid trial record: visitor"),
                "{error}"
            );
        }
    }

    #[test]
    fn views_and_full_records_read_the_same_lines_alike() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trials.jsonl");
        let rich = serde_json::to_value(rich_record()).unwrap();
        let plain =
            serde_json::to_string(&record("a", Arm::WithoutSkill, 1, Outcome::Pass)).unwrap();
        let both = |text: &[u8], block: usize| {
            std::fs::write(&path, text).unwrap();
            let full = read_as::<FullRecord>(&path, block, |r| r.view());
            let view = read_as::<ViewRecord>(&path, block, |v| v.clone());
            for workers in [1, 2, 3] {
                assert_eq!(
                    read_in_parallel(&path, block, workers),
                    view,
                    "{workers} workers, block of {block} bytes"
                );
            }
            (full, view)
        };
        // Good lines, blank lines, a torn last line; blocks smaller than a line, of a few lines,
        // and larger than the file.
        let mut text = format!("{rich}\n\n{plain}\n  \t\n{rich}\n{plain}\n").into_bytes();
        let whole = text.len() as u64;
        text.extend_from_slice(br#"{"run_id":"r","tri"#);
        let reference = both(&text, 1 << 20);
        assert_eq!(reference.0, reference.1);
        assert_eq!(reference.0.0.len(), 4);
        assert_eq!(reference.0.0[1].0, 3, "line numbers count blank lines");
        assert_eq!(
            reference.0.1,
            Ok(whole),
            "the torn line is not in the valid length"
        );
        for block in [1, 7, 300, 5000] {
            assert_eq!(both(&text, block), reference, "block of {block} bytes");
        }
        // Every malformed shape gives the same first error (file, line, decoder message) in
        // both decodings: each field removed or of the wrong type, nested parts too.
        let mut variants: Vec<Vec<u8>> = Vec::new();
        let object = rich.as_object().unwrap();
        for key in object.keys() {
            for wrong in [
                serde_json::Value::Null,
                serde_json::json!(17),
                serde_json::json!(-1.5),
                serde_json::json!("text"),
                serde_json::json!(true),
                serde_json::json!([1]),
                serde_json::json!({"x": 1}),
            ] {
                let mut changed = object.clone();
                changed.insert(key.clone(), wrong);
                variants.push(serde_json::to_vec(&changed).unwrap());
            }
            let mut removed = object.clone();
            removed.remove(key);
            variants.push(serde_json::to_vec(&removed).unwrap());
        }
        for pointer in [
            "/checks/0/detail",
            "/checks/1/passed",
            "/checks/0/type",
            "/retries/0/error",
            "/retries/0/waited_s",
            "/scores/a",
            "/usage/input_tokens",
            "/reused_from/run_id",
            "/judge_usage/requests",
            "/transcript_span/offset",
            "/truncated/0",
            "/activated_skills/1",
        ] {
            for wrong in [
                serde_json::json!("x"),
                serde_json::json!(3),
                serde_json::json!(null),
            ] {
                let mut changed = rich.clone();
                *changed.pointer_mut(pointer).unwrap() = wrong;
                variants.push(serde_json::to_vec(&changed).unwrap());
            }
        }
        let rich_text = rich.to_string();
        variants.extend([
            b"not json".to_vec(),
            b"{".to_vec(),
            b"[]".to_vec(),
            b"{}".to_vec(),
            rich_text
                .replace("\"runner\":\"x\"", "\"runner\":\"x\",\"runner\":\"y\"")
                .into_bytes(),
            rich_text.replace("2026", "yesterday").into_bytes(),
            rich_text.replace("\"m-1\"", "\"m-\\uD800\"").into_bytes(),
            // Not UTF-8: in a field read, in one ignored (unknown fields pass in both).
            rich_text
                .replace("\"m-1\"", "\"m-\u{1}\"")
                .replace('\u{1}', "\u{FFFF}")
                .into_bytes(),
        ]);
        let mut invalid = rich_text.clone().into_bytes();
        let at = rich_text.find("m-1").unwrap();
        invalid[at + 1] = 0xFF;
        variants.push(invalid);
        let mut unknown = rich_text
            .replacen('{', "{\"extra\":\"\u{1}\",", 1)
            .into_bytes();
        let at = unknown.iter().position(|&b| b == 1).unwrap();
        unknown[at] = 0xFE;
        variants.push(unknown);
        let mut accepted = 0;
        for variant in &variants {
            let mut text = format!("{plain}\n").into_bytes();
            text.extend_from_slice(variant);
            text.extend_from_slice(format!("\n{plain}\n").as_bytes());
            let (full, view) = both(&text, 64);
            assert_eq!(full, view, "{}", String::from_utf8_lossy(variant));
            if let Err(message) = &full.1 {
                assert!(message.contains("trials.jsonl:2:"), "{message}");
            } else {
                accepted += 1;
            }
        }
        // Most variants are refused; the accepted ones (optional fields removed or null, an
        // unknown field) are read alike.
        assert!(accepted > 5 && accepted < variants.len() / 2, "{accepted}");
    }

    #[test]
    fn planned_views_skip_superseded_records_like_full_records() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RunLock::acquire(dir.path()).unwrap();
        let mut log = TrialLog::open(dir.path(), 0, &lock).unwrap();
        let retried = |outcome| TrialRecord {
            supersedes: true,
            ..record("a", Arm::WithSkill, 1, outcome)
        };
        log.append(&[
            record("a", Arm::WithSkill, 1, Outcome::Unscoreable),
            record("a", Arm::WithoutSkill, 1, Outcome::Fail),
            retried(Outcome::Unscoreable),
            record("b", Arm::WithSkill, 1, Outcome::Pass),
            retried(Outcome::Pass),
        ])
        .unwrap();
        let path = dir.path().join("trials.jsonl");
        let mut full = Vec::new();
        let full_len = for_each_numbered_trial::<FullRecord>(&path, |line, record| {
            full.push((line, format!("{:?}", record.view())));
            Ok(())
        })
        .unwrap();
        let mut views = Vec::new();
        let view_len = for_each_numbered_trial::<ViewRecord>(&path, |line, record| {
            views.push((line, format!("{record:?}")));
            Ok(())
        })
        .unwrap();
        assert_eq!(full, views);
        assert_eq!(full_len, view_len);
        let lines: Vec<usize> = views.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, vec![2, 4, 5]);
    }

    #[test]
    fn a_view_checks_its_trial_id_against_its_key() {
        let mut record = record("c/1", Arm::WithSkill, 12, Outcome::Pass);
        assert!(record.view().trial_id_matches_key());
        for wrong in [
            "c/1/with_skill/012",
            "c/1/with_skill/+12",
            "c/1/with_skill/13",
            "c/1/without_skill/12",
            "c/1/with_skill/12/",
            "c/1/with_skill",
            "c/with_skill/12",
            "",
        ] {
            record.trial_id = wrong.into();
            assert!(!record.view().trial_id_matches_key(), "{wrong}");
            assert_ne!(record.trial_id, record.key().trial_id());
        }
    }

    #[test]
    fn transcript_paths_fast_and_slow_checks_agree() {
        for (path, ok) in [
            ("transcripts/a.json", true),
            ("transcripts/transcripts.jsonl", true),
            ("transcripts/sub/a.json", true),
            ("transcripts/./a.json", true),
            ("transcripts/../a.json", false),
            ("transcripts/..", false),
            ("transcripts/", true),
            ("transcripts", true),
            ("/transcripts/a.json", false),
            ("other/a.json", false),
            ("transcripts/a\0b", false),
        ] {
            assert_eq!(check_relative(path).is_ok(), ok, "{path}");
        }
    }

    #[test]
    fn corrupt_middle_line_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trials.jsonl");
        std::fs::write(&path, "not json\n").unwrap();
        let error = read_trials(&path).unwrap_err();
        assert!(error.to_string().contains("trials.jsonl:1:"), "{error}");
    }
}
