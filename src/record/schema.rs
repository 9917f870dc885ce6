//! The run-folder schema's value types that features fill: the arms, the recorded gates, the
//! shard, the skill order, the stopping plan and its outcome, the calibration found at the
//! start, baseline reuse, and the runner's capabilities and prices. They are data only (fields,
//! serde attributes and derives, in the order they are written to `manifest.json` and
//! `trials.jsonl`); the features keep their logic as `impl` blocks beside their code
//! (`crate::features::workspace`, `crate::pipeline::sequential`, `crate::features::calibration`, `crate::features::reuse`,
//! `crate::features::shard`, `crate::analysis::skill_order`, `crate::features::runner`, `crate::analysis`). A change to the
//! run-folder format is a diff here or in `crate::record` (next to [`super::FORMAT_VERSION`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// How a run orders the skills it presents (recorded in the manifest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillOrdering {
    /// Sorted by name in every trial: runs recorded before balanced ordering (the default
    /// when the manifest has no `skill_order`).
    #[default]
    ByName,
    /// A seeded permutation per trial, the target's position balanced across attempts
    /// (module comment).
    Balanced,
}

/// What a gate fails on (`--fail-on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// Fail when the verdict is `regressed`.
    Regressed,
    /// Fail when the verdict is not `improved`.
    NotImproved,
}

/// The interval method for the lift (`--method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LiftMethod {
    /// Newcombe's paired interval with McNemar mid-p (K = 1 binary data only).
    Newcombe,
    /// Case (cluster) bootstrap, BCa.
    Bca,
    /// Case (cluster) bootstrap, percentile.
    Percentile,
    /// Paired t interval on case differences (clustered SE with clusters).
    T,
}

/// How a run schedules and stops (`manifest.json` `stopping`; absent for an ordinary run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppingPlan {
    /// Anytime-valid stopping, when `--sequential` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialSettings>,
    /// Spending limits (those of the latest invocation).
    #[serde(default)]
    pub budgets: Budgets,
    /// Cases per round.
    pub round_cases: usize,
    /// Case ids in the order the rounds take them (a shuffle seeded by the run's seed).
    pub case_order: Vec<String>,
    /// The runner profile's token prices, for trials that report no cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<PriceTable>,
    /// The runner profile's `max_tokens` (the reply cap): the least spend per trial a round is
    /// projected at ([`TrialFloor`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_cap_tokens: Option<u64>,
    /// How the run stopped; absent while it runs (or when it was killed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<StoppingOutcome>,
}

impl StoppingPlan {
    /// The rounds: the case order cut into groups of `round_cases`.
    pub fn rounds(&self) -> Vec<&[String]> {
        self.case_order.chunks(self.round_cases.max(1)).collect()
    }
}

/// How a run stopped (`manifest.json` `stopping.outcome`; rewritten when the run ends).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppingOutcome {
    pub reason: StopReason,
    /// The reason in words, with the numbers behind it.
    pub message: String,
    /// Rounds whose trials ran (or were recorded before).
    pub rounds_run: usize,
    /// Trials recorded when the run stopped.
    pub trials_recorded: usize,
    /// Planned trials not run because of the stop.
    pub trials_not_run: usize,
    /// What the run had spent.
    pub spent: Spend,
}

/// What a run spent, from its recorded trials (and the wall time of its invocations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// USD of the trials whose cost is known (reported, or priced from tokens).
    pub cost_usd: f64,
    /// Trials whose cost is unknown (no reported cost, no tokens or no `[price]` table).
    pub unpriced_trials: usize,
    /// Input + output tokens.
    pub tokens: u64,
    /// Trials counted.
    pub trials: usize,
    /// Wall time of trial execution, seconds.
    pub wall_s: f64,
}

/// Why a round-scheduled run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every round ran (no sequential decision fell, no budget ran out).
    Completed,
    /// The confidence sequence excluded 0 upward.
    Improved,
    /// The confidence sequence excluded 0 downward.
    Regressed,
    /// The confidence sequence lies inside ±equivalence: no meaningful effect.
    Equivalent,
    /// The next round would have exceeded `--max-cost-usd`.
    BudgetCost,
    /// The next round would have exceeded `--max-tokens`.
    BudgetTokens,
    /// The next round would have exceeded `--max-wall`.
    BudgetWall,
    /// `--max-cost-usd` cannot be checked: trials report no cost and the profile has no
    /// `[price]` table.
    CostUnknown,
    /// Ctrl-C / SIGTERM.
    Interrupted,
    /// The circuit breaker (infrastructure failures in a row).
    CircuitBreaker,
}

impl StopReason {
    /// The snake_case name (as in `summary.json`).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::Improved => "improved",
            StopReason::Regressed => "regressed",
            StopReason::Equivalent => "equivalent",
            StopReason::BudgetCost => "budget_cost",
            StopReason::BudgetTokens => "budget_tokens",
            StopReason::BudgetWall => "budget_wall",
            StopReason::CostUnknown => "cost_unknown",
            StopReason::Interrupted => "interrupted",
            StopReason::CircuitBreaker => "circuit_breaker",
        }
    }

    /// Whether the confidence sequence decided (the verdict is the sequence's, not fixed-n).
    pub fn is_sequential_decision(self) -> bool {
        matches!(
            self,
            StopReason::Improved | StopReason::Regressed | StopReason::Equivalent
        )
    }

    /// Whether a budget stopped the run (its unscheduled trials are "not run: budget").
    pub fn is_budget(self) -> bool {
        matches!(
            self,
            StopReason::BudgetCost
                | StopReason::BudgetTokens
                | StopReason::BudgetWall
                | StopReason::CostUnknown
        )
    }
}

/// Spending limits of a run; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Budgets {
    /// USD, over the run's recorded trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Input + output tokens, over the run's recorded trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Wall time of the run's trial execution, seconds (over every invocation of the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall_s: Option<f64>,
}

/// Anytime-valid stopping settings (`--sequential`, `--equivalence`, `--sequential-alpha`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SequentialSettings {
    /// Miscoverage of the confidence sequence (0.05: 95 %).
    pub alpha: f64,
    /// Equivalence margin δ (a fraction): stop with "no meaningful effect" once the sequence
    /// lies inside [−δ, +δ].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<f64>,
}

/// A version number a skill declares (the evolution contract, `crate::analysis::evolution`):
/// the text as written, and where it was read. It is parsed when the run is analyzed, so a
/// recorded version that does not parse stays visible as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredVersion {
    /// The version as written (`1.2.0`, `v2.1`, …).
    pub text: String,
    /// Where it was read: `SKILL.md metadata.version` or `<path>/.claude-plugin/plugin.json
    /// version`.
    pub source: String,
}

/// The evolution contract of a run with a previous version (`run --previous`,
/// `--previous-ref`): both versions as declared and the margin the policy tests against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionPolicy {
    /// The skill's version; absent when it declares none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<DeclaredVersion>,
    /// The previous version's; absent when it declares none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<DeclaredVersion>,
    /// Equivalence (patch) and non-inferiority (minor) margin δ, a fraction of the pass rate
    /// (`--equivalence`, else the default).
    pub margin: f64,
}

/// Absolute quality bounds a skill (or its eval set) declares in `contract.toml`'s
/// `[quality]` table (`crate::analysis::quality`); every field optional, unknown keys refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QualityBounds {
    /// Smallest acceptable pass rate of `with_skill`, a fraction in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_pass_rate: Option<f64>,
    /// Largest acceptable 95th percentile of `with_skill`'s trial wall time, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_p95_wall_s: Option<f64>,
    /// Largest acceptable mean input + output tokens per `with_skill` trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_per_trial: Option<f64>,
    /// Largest acceptable mean cost per `with_skill` trial, USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd_per_trial: Option<f64>,
    /// Largest acceptable share of unscoreable trials over every arm, a fraction in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unscoreable: Option<f64>,
}

/// The quality contract a run checks: the file it was read from and its bounds (recorded at
/// the start, so `report` and `--resume` check the same bounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualityContract {
    /// The `contract.toml` the bounds were read from.
    pub path: PathBuf,
    /// The bounds.
    pub bounds: QualityBounds,
}

/// Token prices of a model, USD per million tokens: estimates for `skill-lift plan`, and the
/// recorded cost of every trial that reports tokens (`openai-chat` and `anthropic-messages`
/// per request; an agent CLI that reports tokens but no cost of its own, per trial).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    /// USD per million input (prompt) tokens.
    pub input_usd_per_million_tokens: f64,
    /// USD per million output (completion) tokens.
    pub output_usd_per_million_tokens: f64,
    /// USD per million prompt tokens read from the prompt cache (Anthropic: 0.1 × input);
    /// unset: priced as input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_usd_per_million_tokens: Option<f64>,
    /// USD per million prompt tokens written to the prompt cache (Anthropic, 5-minute cache:
    /// 1.25 × input); unset: priced as input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_usd_per_million_tokens: Option<f64>,
}

/// What a run found when it looked for its suite's calibration (recorded in its manifest, so
/// reports show it without a live lookup).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationLookup {
    /// `sha256:<hex>` of the run's [`CalibrationKey`].
    pub key_digest: String,
    /// The calibration found (the without-skill one when both exist), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<CalibrationBrief>,
    /// The line every output prints: `calibrated: …` or `uncalibrated: …`.
    pub message: String,
}

/// The part of a [`CalibrationRecord`] a run keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationBrief {
    pub arm: CalibrationArm,
    pub created_at: DateTime<Utc>,
    pub skill_lift_version: String,
    pub calibration_dir: PathBuf,
    pub repeats: u32,
    pub false_verdicts: u32,
    pub false_verdict_rate: f64,
    pub rate_ci_low: f64,
    pub rate_ci_high: f64,
    pub lift_spread: Option<Spread>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metric_spread: BTreeMap<String, Spread>,
}

/// The spread of one lift estimate across repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Mean of the repeats' estimates (fraction; 0 in expectation for an A/A run).
    pub mean: f64,
    /// Sample standard deviation across repeats (fraction); `None` with fewer than 2 repeats.
    pub sd: Option<f64>,
    /// Repeats with an estimate.
    pub repeats: usize,
}

/// Which identical arms an A/A calibration runs (`--arm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CalibrationArm {
    /// Both arms without the target (the default: no skill content at all).
    WithoutSkill,
    /// Both arms with the target.
    WithSkill,
}

/// `manifest.reuse`: what a run was asked to reuse and what it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReuseRecord {
    /// Where it looked.
    pub source: ReuseSource,
    /// The arms whose trials may be reused (the reference arm).
    pub arms: Vec<Arm>,
    /// Trials taken from earlier runs (each trial record says from which: `reused_from`).
    #[serde(default)]
    pub reused: usize,
    /// Of the reused trials, how many came from each run id.
    #[serde(default)]
    pub from_runs: BTreeMap<String, usize>,
    /// Trials of the reused arms left to run (no matching recorded trial).
    #[serde(default)]
    pub not_found: usize,
}

/// Where `--reuse-baseline` looks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReuseSource {
    /// The state folder's [`STORE_FILE`] (a bare `--reuse-baseline`, or a state folder named).
    Store { path: PathBuf },
    /// The trials recorded in these run folders (a run folder named, or every cell of a matrix
    /// folder).
    Runs { paths: Vec<PathBuf> },
}

impl ReuseSource {
    /// How the source reads in messages.
    pub fn describe(&self) -> String {
        match self {
            Self::Store { path } => format!("the trial store in {}", path.display()),
            Self::Runs { paths } if paths.len() == 1 => format!("run {}", paths[0].display()),
            Self::Runs { paths } => format!("{} run folders", paths.len()),
        }
    }
}

/// Where a reused trial was measured (a trial record's `reused_from`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReusedFrom {
    /// The run that measured it.
    pub run_id: String,
    /// Its trial id in that run.
    pub trial_id: String,
}

/// The trial key of each arm and case of a run: arm → case id → `sha256:<hex>`.
pub type TrialKeys = BTreeMap<Arm, BTreeMap<String, String>>;

/// What a runner can do and what the harness can observe of it: one typed value, decided from
/// the profile when a run starts and recorded in the manifest (`runner.capabilities`), so
/// staging, grading and analysis read it instead of re-deriving it from kind names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunnerCapabilities {
    /// Where staged skills go, relative to the workspace (e.g. `.agents/skills`).
    pub skills_dir: PathBuf,
    /// How the staged skills reach the model.
    pub skill_delivery: SkillDelivery,
    /// Whether skill activation can be observed (false when every staged skill is in the
    /// prompt: `inject`).
    pub activation_observable: bool,
    /// Whether the agent can run shell commands (false for the model-API kinds).
    pub can_run_commands: bool,
}

/// How the staged skills reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillDelivery {
    /// The agent discovers the skills folder itself (agent CLIs).
    Native,
    /// Every staged skill's body is placed in the system prompt (`openai-chat` and
    /// `anthropic-messages`, `inject`).
    Inject,
    /// Names and descriptions in the prompt, bodies through a tool (`openai-chat` and
    /// `anthropic-messages`, `tools`).
    Tools,
}

/// Which arm a trial belongs to. An arm is data: what it stages and how the skill is exposed
/// ([`Arm::spec`]); the staging rule ([`ArmDesign::staging`]) and the prompt
/// ([`Exposure::prompt`]) follow from it. A new arm kind is a variant here, its spec and its
/// recorded name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// Decoys plus the target skill, discovered natively.
    WithSkill,
    /// Decoys only (the baseline).
    WithoutSkill,
    /// Decoys plus the previous version of the skill (`--previous DIR`, `--previous-ref REF`),
    /// staged under the target's name.
    PreviousVersion,
    /// Decoys plus the target, and the prompt names the skill (`--exposure nudge`).
    WithSkillNudge,
    /// Decoys plus the target, and the target's `SKILL.md` is in the prompt (`--exposure
    /// forced`).
    WithSkillForced,
}

/// How a run's two arms are staged (recorded in the manifest as `arm_design`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ArmDesign {
    /// The measurement: `with_skill` stages the target, `without_skill` does not.
    #[default]
    Paired,
    /// A/A control: neither arm stages the target.
    AaWithoutTarget,
    /// A/A control: both arms stage the target.
    AaWithTarget,
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
    pub usage: crate::values::trajectory::Usage,
    /// Why the judge was not asked (`--judge-scope decisive`: its answer could not change the
    /// trial's outcome); absent when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
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
    pub expected_output_match: OutputMatch,
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
    pub custom_graders: Vec<CustomGraderSpec>,
    /// Which trials the judges are asked about (`--judge-scope`; absent: every trial).
    #[serde(default, skip_serializing_if = "JudgeScope::is_all")]
    pub judge_scope: JudgeScope,
    /// What the `style` metric's reference was made of (absent: no `style` metric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style_reference: Option<StyleReferenceInfo>,
}

/// What the reference of the `style` judge metric was made of: the `USER.md` file and the
/// sample of the user's past answers from session history. Hashes and counts only, never the
/// text (`docs/grading.md`, "The style metric").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StyleReferenceInfo {
    /// The `USER.md` read (`--style-reference FILE`, or the default lookup), when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_md: Option<StyleReferenceFile>,
    /// Whether `USER.md` was named with `--style-reference` (else it was looked up).
    #[serde(default)]
    pub user_md_explicit: bool,
    /// The stand-in home folder the history and the default `USER.md` were read from
    /// (`--history-root`/`SKILL_LIFT_HISTORY_ROOT`); absent: the real home folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_root: Option<PathBuf>,
    /// Past assistant answers in the sample (at most 5).
    pub history_answers: usize,
    /// Their characters in the sample, after truncation and redaction.
    pub history_chars: usize,
    /// Hex sha256 of the sampled answers (as sent, joined), absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_sha256: Option<String>,
    /// Hex sha256 of the whole reference text sent to the judge (redacted).
    pub reference_sha256: String,
}

/// One file of a [`StyleReferenceInfo`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StyleReferenceFile {
    /// The file, absolute.
    pub path: PathBuf,
    /// Hex sha256 of its bytes as read.
    pub sha256: String,
    /// Characters of it in the reference, after truncation and redaction.
    pub chars: usize,
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
    pub spent: Option<JudgeSpend>,
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

/// One sub-check of a metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubScore {
    /// Score in [0, 1]; `None` when the sub-check is not applicable to this trial.
    pub score: Option<f64>,
    /// One line: what was looked for and what was found (never a secret's value).
    pub reason: String,
}

/// The result of one check on one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check's `type`.
    #[serde(rename = "type")]
    pub check_type: String,
    /// Whether it passed.
    pub passed: bool,
    /// One line saying what was looked for and what was found.
    pub detail: String,
}

/// How a case's `expected_output` is compared with the final answer
/// (`expected_output_match` in `evals.json`, default from `--expected-output-match`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMatch {
    /// Not compared deterministically: `expected_output` goes to the `goal_accuracy` judge
    /// (when `--judge` is given) and into reports. The default: most `expected_output` texts
    /// describe an answer rather than quote it.
    #[default]
    Judge,
    /// The trimmed answer equals the trimmed expected output, whitespace runs collapsed,
    /// case-insensitive.
    Exact,
    /// The answer contains the expected output (case-insensitive, whitespace runs collapsed).
    Contains,
    /// The expected output is a regular expression the answer must match.
    Regex,
    /// The first number in the expected output appears in the answer (thousands separators
    /// ignored), within a relative tolerance of 1e-6 (absolute 1e-9 near zero).
    Numeric,
}

/// A custom grader as given on the command line and recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomGraderSpec {
    /// Its name (prefix of nothing: its metrics keep their own names).
    pub name: String,
    /// The shell command.
    pub command: String,
    /// Timeout per trial, seconds.
    pub timeout_s: f64,
}

/// `checks`: the fraction of the case's deterministic output checks that passed.
pub const CHECKS: &str = "checks";

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
/// `style`: LLM judge, the final answer's format, language and verbosity against the user's
/// style reference (`USER.md` and past answers); reported only, never part of a pass, the
/// composite or the verdict.
pub const STYLE: &str = "style";
/// The six ACES metrics (SkillEvaluator metric set `skill-evaluator-default-v2`), in order.
pub const ACES_METRICS: [&str; 6] = [
    SECURITY,
    SKILL_EXECUTION,
    SKILL_EFFICIENCY,
    ACCURACY,
    GOAL_ACCURACY,
    BEHAVIOR_CHECK,
];
