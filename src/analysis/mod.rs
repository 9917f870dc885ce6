//! Analysis: from recorded trials to per-arm pass rates, the paired lift with its interval,
//! test, minimum detectable effect and verdict, negative-lift classes and gates. A pure function
//! of the manifest, the trial records and the [`AnalysisSettings`].
//!
//! Records are consumed one at a time by a [`RunAccumulator`] holding per-case counters only, so
//! a run of millions of trials is analyzed in bounded memory.
//!
//! The case is the unit of analysis (statistics.md §1): a case's value in an arm is the mean of
//! its scored attempts (pass = 1, fail = 0); unscoreable and not-gradable trials are counted and
//! shown but never scored. N in every interval is the number of cases scored in both arms.
//!
//! Default methods (statistics.md §5–6, "suggested defaults"; `--method` overrides):
//! - per-arm rate: Wilson score interval when every paired case has exactly one scored attempt,
//!   else a seeded case bootstrap (percentile);
//! - lift, K = 1 binary and no clusters: Newcombe's paired interval (method 10) with McNemar's
//!   mid-p test;
//! - lift otherwise: seeded case (or cluster) bootstrap, BCa (Efron 1987) with percentile
//!   fallback; the test is the sign-flip permutation test for n ≤ 20 and the paired t test
//!   beyond; the paired t test is always given as a cross-check;
//! - minimum detectable effect at the run's observed variance (Miller 2024, α = 0.05,
//!   power 0.8, t-based).

mod agreement;
pub(crate) mod evolution;
mod inference;
mod metrics;
mod noise;
pub(crate) mod position;
pub(crate) mod quality;
mod reuse;
pub(crate) mod skill_order;
pub(crate) mod stats;
mod stopping;
pub(crate) mod text;

use std::collections::{BTreeMap, BTreeSet, HashSet};

pub(crate) use agreement::JudgeAgreement;
#[cfg(test)]
pub(crate) use inference::LiftTest;
pub(crate) use inference::{InconclusiveReason, MIN_VERDICT_CASES, PairedTCheck, VerdictReason};
pub(crate) use metrics::{COMPOSITE, MetricLift, MetricVerdict};
pub(crate) use noise::NoiseSummary;
pub(crate) use reuse::{ReuseSummary, ReusedTrial};
pub(crate) use stopping::{CaseTally, StoppingSummary, lift_sequence};

use serde::{Deserialize, Serialize};

use crate::analysis::stats::{Clusters, Interval};
use crate::record::{Arm, FailOn, LiftMethod, Manifest, Outcome, TrialRecord, TrialView};

/// Version of the `summary.json` schema (docs/summary-format.md).
pub(crate) const SUMMARY_FORMAT_VERSION: u32 = 4;

/// Confidence level of every interval.
pub(crate) const CONFIDENCE: f64 = 0.95;

/// Significance level and power of the minimum detectable effect.
pub(crate) const MDE_ALPHA: f64 = 0.05;
/// Power of the minimum detectable effect.
pub(crate) const MDE_POWER: f64 = 0.8;

impl std::str::FromStr for LiftMethod {
    type Err = crate::values::unknown_name::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "newcombe" => Ok(Self::Newcombe),
            "bca" | "bootstrap" | "bootstrap-bca" => Ok(Self::Bca),
            "percentile" | "bootstrap-percentile" => Ok(Self::Percentile),
            "t" | "paired-t" => Ok(Self::T),
            other => Err(crate::values::unknown_name::UnknownName::new(
                "method",
                other,
                ["newcombe", "bca", "percentile", "t"],
            )),
        }
    }
}

impl std::str::FromStr for FailOn {
    type Err = crate::values::unknown_name::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "regressed" => Ok(Self::Regressed),
            "not-improved" | "not_improved" | "inconclusive" => Ok(Self::NotImproved),
            other => Err(crate::values::unknown_name::UnknownName::new(
                "--fail-on value",
                other,
                ["regressed", "not-improved"],
            )),
        }
    }
}

/// Gate settings for CI.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateSettings {
    /// The lift interval's lower bound must exceed this (fraction, e.g. 0.05 for 5 pp).
    pub min_lift: Option<f64>,
    /// Verdicts that fail the gate.
    pub fail_on: Vec<FailOn>,
    /// `--max-latency-ratio`: the P95 wall time of `with_skill` over the reference's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_ratio: Option<f64>,
    /// `--max-token-ratio`: tokens per trial of `with_skill` over the reference's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_token_ratio: Option<f64>,
    /// `--enforce-version-policy`: a release that breaks the evolution contract (or whose
    /// versions give no policy) fails the gate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enforce_version_policy: bool,
}

impl GateSettings {
    /// Whether a cost gate (`--max-latency-ratio`, `--max-token-ratio`) is set.
    pub fn has_cost_gates(&self) -> bool {
        self.max_latency_ratio.is_some() || self.max_token_ratio.is_some()
    }
}

/// Analysis settings.
#[derive(Debug, Clone)]
pub struct AnalysisSettings {
    /// Bootstrap resamples B.
    pub resamples: usize,
    /// Bootstrap and Monte Carlo seed.
    pub seed: u64,
    /// Interval method override.
    pub method: Option<LiftMethod>,
    /// Gates.
    pub gate: GateSettings,
    /// Largest tolerated fraction of unscoreable trials (`--max-unscoreable`); beyond it the
    /// run is an infrastructure error.
    pub max_unscoreable: f64,
}

/// A `--method` that cannot apply to a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MethodError {
    /// Newcombe's interval is for K = 1 paired binary outcomes only.
    #[error(
        "--method newcombe needs K = 1 (one attempt per case per arm) but this run has K = {k}; use --method t, bca or percentile, or leave --method out for the data-driven default"
    )]
    NewcombeNeedsSingleAttempt {
        /// The run's K.
        k: u32,
    },
    /// Newcombe's interval does not account for clusters.
    #[error(
        "--method newcombe ignores the cases' `cluster` labels ({clusters} clusters); use --method t (cluster-robust t) or bca (cluster bootstrap)"
    )]
    NewcombeIgnoresClusters {
        /// Distinct cluster labels.
        clusters: usize,
    },
}

/// Refuses a `--method` the run's design cannot use (never a silent fallback): Newcombe with
/// K > 1 or with clustered cases.
pub(crate) fn check_method(
    manifest: &Manifest,
    method: Option<LiftMethod>,
) -> Result<(), MethodError> {
    if method != Some(LiftMethod::Newcombe) {
        return Ok(());
    }
    if manifest.k > 1 {
        return Err(MethodError::NewcombeNeedsSingleAttempt { k: manifest.k });
    }
    let clusters: BTreeSet<&String> = manifest.eval_set.case_clusters.values().collect();
    if !clusters.is_empty() {
        return Err(MethodError::NewcombeIgnoresClusters {
            clusters: clusters.len(),
        });
    }
    Ok(())
}

/// Default `--max-unscoreable`: 10% of the recorded trials.
pub(crate) const DEFAULT_MAX_UNSCOREABLE: f64 = 0.10;

impl AnalysisSettings {
    /// Defaults: 10,000 resamples, the given seed, data-driven method, no gate.
    pub fn new(seed: u64) -> Self {
        Self {
            resamples: stats::DEFAULT_RESAMPLES,
            seed,
            method: None,
            gate: GateSettings::default(),
            max_unscoreable: DEFAULT_MAX_UNSCOREABLE,
        }
    }

    /// The settings a recorded run was started with (its seed and recorded gates), with no
    /// flag given: what `report` without flags and `compare` use.
    pub fn recorded(manifest: &crate::record::Manifest) -> Self {
        let mut settings = Self::new(manifest.seed);
        if let Some(gates) = &manifest.gates {
            settings.method = gates.method;
            settings.gate.min_lift = gates.min_lift;
            settings.gate.fail_on = gates.fail_on.clone();
            settings.max_unscoreable = gates.max_unscoreable;
            settings.gate.enforce_version_policy = gates.enforce_version_policy;
            settings.gate.max_latency_ratio = gates.max_latency_ratio;
            settings.gate.max_token_ratio = gates.max_token_ratio;
        }
        settings
    }
}

/// Trial counts by outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct OutcomeCounts {
    pub pass: usize,
    pub fail: usize,
    pub unscoreable: usize,
    pub not_gradable: usize,
}

impl OutcomeCounts {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail => self.fail += 1,
            Outcome::Unscoreable => self.unscoreable += 1,
            Outcome::NotGradable => self.not_gradable += 1,
        }
    }

    fn merge(&mut self, other: &OutcomeCounts) {
        self.pass += other.pass;
        self.fail += other.fail;
        self.unscoreable += other.unscoreable;
        self.not_gradable += other.not_gradable;
    }

    /// Trials recorded.
    pub(crate) fn total(&self) -> usize {
        self.pass + self.fail + self.unscoreable + self.not_gradable
    }

    /// Trials scored (pass + fail).
    pub(crate) fn scored(&self) -> usize {
        self.pass + self.fail
    }
}

/// One case in one arm.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CaseArm {
    /// Trial counts by outcome.
    pub trials: OutcomeCounts,
    /// passes / scored attempts; `None` when no attempt was scored.
    pub pass_rate: Option<f64>,
    /// Attempts that activated the target skill (observable in `tools` mode and agent CLIs).
    pub target_activations: usize,
    /// Mean of each metric (and `composite`) over the arm's scoreable attempts where it applied.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metric_means: BTreeMap<String, f64>,
}

/// Why a case lost with the skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NegativeLiftClass {
    /// The target was never activated in the case's with-skill attempts.
    NeverDiscovered,
    /// The target was activated (or injected) and the outcome was worse.
    DiscoveredButMisused,
    /// With-skill attempts were unscoreable while the baseline scored.
    ExecutionInstability,
}

/// One golden case across both arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CaseSummary {
    pub case_id: String,
    pub cluster: Option<String>,
    pub with_skill: CaseArm,
    pub without_skill: CaseArm,
    /// with − without case pass rates; `None` unless both arms were scored.
    pub lift: Option<f64>,
    /// Why the case is not in the paired analysis, when it is not.
    pub excluded_reason: Option<String>,
    /// For cases that lost with the skill (or whose with-skill arm could not be scored).
    pub negative_lift_class: Option<NegativeLiftClass>,
}

/// Token usage totals of an arm (`None` when no trial reported that count).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct UsageTotals {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

impl UsageTotals {
    fn add(&mut self, usage: &crate::values::trajectory::Usage) {
        fn add_u64(total: &mut Option<u64>, value: Option<u64>) {
            if let Some(value) = value {
                *total = Some(total.unwrap_or(0) + value);
            }
        }
        add_u64(&mut self.input_tokens, usage.input_tokens);
        add_u64(&mut self.output_tokens, usage.output_tokens);
        add_u64(&mut self.cached_tokens, usage.cached_tokens);
        if let Some(cost) = usage.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
    }
}

/// One arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArmSummary {
    /// Mean over the paired cases of the case pass rates (fraction in [0,1]).
    pub pass_rate: Option<f64>,
    /// Lower end of the 95% interval.
    pub ci_low: Option<f64>,
    /// Upper end of the 95% interval.
    pub ci_high: Option<f64>,
    /// [`ArmIntervalMethod`]: `wilson` (every paired case has one scored attempt, no
    /// clusters) or `wilson-effective-count`; `None` with fewer than 5 paired cases.
    pub interval_method: Option<String>,
    /// Cases in the rate (scored in both arms).
    pub n_cases: usize,
    /// Trial counts by outcome over all of the arm's recorded trials.
    pub trials: OutcomeCounts,
    /// Usage totals over all recorded trials of the arm.
    pub usage: UsageTotals,
    /// Mean trial wall time, seconds.
    pub mean_wall_s: Option<f64>,
    /// Mean model latency per scored or not-gradable trial, seconds.
    pub mean_model_latency_s: Option<f64>,
    /// Retries recorded across the arm's trials.
    pub retries: usize,
    /// Unscoreable trials by cause (the reason up to its first `:`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unscoreable_causes: BTreeMap<String, usize>,
    /// Trials whose output was cut at the runner profile's size caps (`truncated` in their
    /// records); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated_trials: usize,
    /// Trials that failed on the security gate (a `security` violation), whatever their
    /// other scores; counted in `trials.fail`.
    #[serde(default)]
    pub security_gate_failures: usize,
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

/// The interval of one arm's pass rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ArmIntervalMethod {
    /// Wilson score interval on the case-level passes (K = 1, unclustered).
    Wilson,
    /// Wilson score interval on the effective count (design effect from the case rates'
    /// variance, clustered when cases carry `cluster`; t quantile): K > 1 or clusters.
    WilsonEffectiveCount,
}

impl ArmIntervalMethod {
    /// The name used in every output.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ArmIntervalMethod::Wilson => "wilson",
            ArmIntervalMethod::WilsonEffectiveCount => "wilson-effective-count",
        }
    }
}

/// The verdict on the lift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// The interval excludes 0 upward.
    Improved,
    /// The interval excludes 0 downward.
    Regressed,
    /// Otherwise; `verdict_reasons` says why.
    Inconclusive,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// Distribution of per-case lifts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CaseLiftDistribution {
    pub positive: usize,
    pub zero: usize,
    pub negative: usize,
    pub median: Option<f64>,
}

/// Counts of negative-lift classes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NegativeLiftCounts {
    pub never_discovered: usize,
    pub discovered_but_misused: usize,
    pub execution_instability: usize,
    /// Whether activation was observable (false in `inject` mode, where the skill is always in
    /// the prompt: negative cases then read as discovered but misused).
    pub activation_observable: bool,
}

/// The outcome of the gates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GateResult {
    pub settings: GateSettings,
    pub passed: bool,
    /// Why it failed (empty when it passed).
    pub failures: Vec<String>,
}

/// The paired lift of the pass rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LiftSummary {
    /// What the lift is a difference of.
    pub metric: String,
    /// Mean over paired cases of (with − without), a fraction in [-1, 1].
    pub estimate: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Interval method ([`IntervalMethod::as_str`]): `newcombe`, `paired-t`, `cluster-t`,
    /// `case-bootstrap-bca`, `case-bootstrap-percentile`, `cluster-bootstrap-*`.
    pub method: String,
    /// Test behind `p_value` ([`LiftTest::as_str`]): `mcnemar-mid-p`, `sign-flip-permutation`,
    /// `paired-t`, `cluster-t`.
    pub test: Option<String>,
    /// Two-sided p-value of no lift.
    pub p_value: Option<f64>,
    /// Paired t interval and p-value (cluster-robust with clusters), always computed as a
    /// cross-check.
    pub paired_t: PairedTCheck,
    /// Minimum detectable effect at the observed variance of the lift (α = 0.05, power 0.8,
    /// t-based: `(t_{df,0.975} + t_{df,0.8})·SE`, the clustered SE and C − 1 df with
    /// clusters), a fraction.
    pub mde: Option<f64>,
    /// Paired cases (N of the interval).
    pub n_cases: usize,
    /// Clusters resampled, when cases carry `cluster`.
    pub n_clusters: Option<usize>,
    /// Attempts per case per arm planned.
    pub k: u32,
    pub verdict: Verdict,
    /// Why the verdict is inconclusive (empty otherwise): typed `code` (and its fields) plus
    /// `message`.
    pub verdict_reasons: Vec<VerdictReason>,
    /// Pearson correlation between the arms' case values.
    pub correlation: Option<f64>,
    pub case_lifts: CaseLiftDistribution,
    pub negative_lift: NegativeLiftCounts,
    /// Bootstrap resamples and seed.
    pub resamples: usize,
    pub seed: u64,
    /// Gate outcome, when gates were set.
    pub gate: Option<GateResult>,
}

/// How trials were graded, and the one definition of the composite every output uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GradingSummary {
    /// What the composite is.
    pub composite_definition: String,
    /// What decides pass/fail.
    pub pass_rule: String,
    pub pass_threshold: f64,
    /// Weights that differ from 1.0.
    pub weights: BTreeMap<String, f64>,
    /// Whether security, skill_execution and skill_efficiency were computed.
    pub deterministic_metrics: bool,
    /// Judges as `name (model)`, primary first.
    pub judges: Vec<String>,
    pub judge_metrics: Vec<String>,
    pub judge_k: u32,
    pub rubric_version: Option<String>,
    /// Custom grader names.
    pub custom_graders: Vec<String>,
}

impl GradingSummary {
    fn from_settings(settings: &crate::record::GradingSettings) -> Self {
        let mut composite_definition = "per trial: the weighted mean of the applicable metric scores (not-applicable metrics left out; equal weights unless listed); per arm: the mean over paired cases of the case means; lift = with_skill − without_skill".to_string();
        let mut pass_rule = format!(
            "a security violation fails the trial (gate); else cases with output checks pass when every check passes; else a trial passes when its outcome score (the weighted mean of the LLM-judge and custom-grader metrics only) is ≥ {}; with neither it is not gradable. Process metrics (security, skill_execution, skill_efficiency) and the composite never decide a pass",
            settings.pass_threshold
        );
        // Said only where the metric was asked for: runs without it keep their words.
        if settings
            .judge_metrics
            .iter()
            .any(|m| m == crate::record::STYLE)
        {
            composite_definition.push_str("; style is never part of it");
            pass_rule.push_str(
                "; style (the answer's format, language and verbosity against the user's style reference) is reported only: it never decides a pass, never enters the outcome score, the composite or the verdict, and only breaks ties in compare",
            );
        }
        Self {
            composite_definition,
            pass_rule,
            pass_threshold: settings.pass_threshold,
            weights: settings.weights.clone(),
            deterministic_metrics: settings.deterministic_metrics,
            judges: settings
                .judges
                .iter()
                .map(|j| format!("{} ({})", j.name, j.model))
                .collect(),
            judge_metrics: settings.judge_metrics.clone(),
            judge_k: settings.judge_k,
            rubric_version: settings.rubric_version.clone(),
            custom_graders: settings
                .custom_graders
                .iter()
                .map(|g| g.name.clone())
                .collect(),
        }
    }
}

/// Unscoreable trials against `--max-unscoreable`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct UnscoreableSummary {
    /// Unscoreable trials over recorded trials (0 when none recorded).
    pub fraction: f64,
    /// The tolerated fraction.
    pub limit: f64,
    /// Whether `fraction` exceeds `limit` (the run then exits 3).
    pub exceeded: bool,
}

/// Trial totals of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TrialTotals {
    pub planned: usize,
    pub recorded: usize,
    #[serde(flatten)]
    pub outcomes: OutcomeCounts,
    /// Records ignored because their (case, arm, attempt) was already recorded.
    pub duplicates_ignored: usize,
}

/// Both arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Arms {
    pub with_skill: ArmSummary,
    pub without_skill: ArmSummary,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub format_version: u32,
    pub run_id: String,
    pub skill_lift_version: String,
    pub asset: String,
    pub fingerprint: String,
    pub calibre: String,
    pub eval_set_digest: String,
    pub runner: String,
    pub runner_kind: String,
    pub skill_mode: String,
    pub model: String,
    /// Every model the server reported (the requested one too); empty when none reported one.
    pub observed_models: Vec<String>,
    pub k: u32,
    pub seed: u64,
    pub decoys: Vec<String>,
    /// Whether every planned trial is recorded, or the run stopped as planned (a sequential
    /// decision or a budget; `stopping` says which and how many trials were not run).
    pub complete: bool,
    pub trials: TrialTotals,
    pub arms: Arms,
    pub lift: LiftSummary,
    /// The composite's and every metric's lift, composite first.
    #[serde(default)]
    pub metric_lifts: Vec<MetricLift>,
    /// How trials were graded.
    pub grading: GradingSummary,
    /// Unscoreable trials against the limit.
    pub unscoreable: UnscoreableSummary,
    /// Where the variance comes from: cases, attempts, judge repeats, per arm (format 4).
    #[serde(default)]
    pub noise: NoiseSummary,
    /// Judge agreement, when a judge graded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_agreement: Option<JudgeAgreement>,
    pub cases: Vec<CaseSummary>,
    /// What this run did not measure.
    pub not_measured: Vec<String>,
    /// Settings too weak for the run's verdict to be read at face value (judge-scored cases
    /// with fewer than [`MIN_JUDGE_REPEATS`] judge repeats or fewer than
    /// [`MIN_JUDGE_ATTEMPTS`] attempts); printed in the terminal summary and every report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// How the arms were staged: `paired` (the measurement; absent) or an A/A control of
    /// `skill-lift calibrate` (`aa_without_target`, `aa_with_target`).
    #[serde(default, skip_serializing_if = "crate::record::ArmDesign::is_paired")]
    pub arm_design: crate::record::ArmDesign,
    /// The suite's A/A calibration as the run found it at its start (`calibrated: …` or
    /// `uncalibrated: …`); absent in A/A repeats and in runs recorded before lookups existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<crate::record::CalibrationLookup>,
    /// The arm the comparisons are against, when the run has comparisons (more arms than the
    /// paired two, or `--reference`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Arm>,
    /// Every arm but the reference compared with the reference, in the run's arm order (empty,
    /// and absent, in a run of the paired two arms: `lift` is that comparison).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
    /// How a round-scheduled run (`--sequential`, budgets) stopped: reason, rounds, trials
    /// spent and not run, the confidence sequence; absent for an ordinary run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<StoppingSummary>,
    /// Baseline reuse (`run --reuse-baseline`): how many trials were taken from earlier runs,
    /// by arm and by the run that measured them; absent when reuse was not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<ReuseSummary>,
    /// What the LLM judges spent over the run's trials (requests, tokens, cost from the judge
    /// profile's `[price]`, trials skipped); absent without judges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_spend: Option<crate::record::JudgeSpendSummary>,
    /// The lift by the target's position in the list of skills the model was shown
    /// (`position`), with the position-sensitivity test; absent when no trial recorded an
    /// order of two or more skills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<position::PositionSummary>,
    /// The quality contract (`contract.toml`) checked against the run: each declared bound
    /// with the measured value, its interval and whether it is met, violated or not shown;
    /// absent when the run declares none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality_contract: Option<quality::QualityReport>,
    /// The evolution contract of a run with a previous version: both declared versions, the
    /// bump and its policy, the `with_skill − previous_version` lift with its 90 % interval
    /// and the verdict (`equivalent`, `not_shown_equivalent`, `non_inferior`, …); absent
    /// without a previous version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_contract: Option<evolution::EvolutionReport>,
    /// The no-effect test of a fixed-n run with `--equivalence` and no previous version: the
    /// lift with its 90 % interval against ±δ and whether the skill is shown to make no
    /// meaningful difference; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<evolution::NoEffectReport>,
}

impl Summary {
    /// The comparison the verdict headline and the gates judge when the run compares against
    /// another reference than `without_skill` (`--reference`): `with_skill` against that
    /// reference. `None` when the reference is `without_skill` (then `lift` is the headline).
    pub(crate) fn reference_comparison(&self) -> Option<&Comparison> {
        let reference = self.reference.filter(|r| *r != Arm::WithoutSkill)?;
        self.comparisons
            .iter()
            .find(|c| c.arm == Arm::WithSkill && c.reference == reference)
    }

    /// The lift the headline verdict reports, and the arm it is measured against: `with_skill`
    /// against the reference (the comparison the gates judge).
    pub(crate) fn headline_lift(&self) -> (&LiftSummary, Arm) {
        match self.reference_comparison() {
            Some(comparison) => (&comparison.lift, comparison.reference),
            None => (&self.lift, Arm::WithoutSkill),
        }
    }

    /// The gate results of the run: the run's `lift` and each comparison's.
    pub(crate) fn gates(&self) -> impl Iterator<Item = &GateResult> {
        self.lift
            .gate
            .iter()
            .chain(self.comparisons.iter().filter_map(|c| c.lift.gate.as_ref()))
    }

    /// Whether every gate passed: the lift's and comparisons' gates and the contracts'.
    pub(crate) fn gates_passed(&self) -> bool {
        self.gates().all(|gate| gate.passed)
            && self.quality_contract.as_ref().is_none_or(|q| q.passed)
            && self
                .version_contract
                .as_ref()
                .is_none_or(|v| v.failure().is_none())
    }

    /// Why the gates failed: every failed gate's and contract's reasons, in report order.
    pub(crate) fn gate_failures(&self) -> Vec<String> {
        let mut failures: Vec<String> = self
            .gates()
            .flat_map(|gate| gate.failures.iter().cloned())
            .collect();
        if let Some(quality) = &self.quality_contract {
            failures.extend(quality.failures());
        }
        failures.extend(self.version_contract.as_ref().and_then(|v| v.failure()));
        failures
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    Some(if sorted.len().is_multiple_of(2) {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    })
}

/// Per-arm running totals.
#[derive(Debug, Default, Clone)]
struct ArmTotals {
    trials: OutcomeCounts,
    usage: UsageTotals,
    wall_s: f64,
    /// Every recorded trial's wall time, seconds (for the P95 of version comparisons).
    wall_times: Vec<f64>,
    /// (case index, input + output tokens) of every recorded trial that reported tokens (the
    /// quality contract's tokens per trial).
    trial_tokens: Vec<(usize, f64)>,
    /// (case index, USD) of every recorded trial that reported a cost.
    trial_costs: Vec<(usize, f64)>,
    latency_s: f64,
    latency_trials: usize,
    retries: usize,
    unscoreable_causes: BTreeMap<String, usize>,
    truncated_trials: usize,
    security_gate_failures: usize,
}

/// Streaming accumulator of one comparison (an arm against its reference): per-case and
/// per-arm counters of those two arms only. Slot 0 is the compared arm, slot 1 the reference.
struct PairAccumulator<'a> {
    manifest: &'a Manifest,
    slots: [Arm; 2],
    case_index: rustc_hash::FxHashMap<String, usize>,
    case_ids: Vec<String>,
    cases: Vec<[CaseArm; 2]>,
    arms: [ArmTotals; 2],
    /// Trial keys added: one bit per (case, slot, attempt in 1..=K), in case order.
    seen_bits: Vec<u64>,
    /// Trial keys added whose attempt is outside 1..=K (records not checked against the plan).
    seen_outside_k: HashSet<(u32, u8, u32)>,
    duplicates: usize,
    observed_models: BTreeSet<String>,
    metrics: metrics::MetricAccumulator,
    agreement: agreement::AgreementAccumulator,
    /// Cases with a trial whose pass/fail the outcome score decided in a run with an LLM
    /// judge (judge-scored cases).
    judge_scored: HashSet<usize>,
}

impl<'a> PairAccumulator<'a> {
    /// An empty accumulator of `arm` against `reference` in the run `manifest` describes.
    fn new(manifest: &'a Manifest, arm: Arm, reference: Arm) -> Self {
        let case_ids = manifest.eval_set.case_ids.clone();
        let case_index = case_ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), i))
            .collect();
        let cases = vec![Default::default(); case_ids.len()];
        Self {
            manifest,
            slots: [arm, reference],
            case_index,
            case_ids,
            cases,
            arms: Default::default(),
            seen_bits: Vec::new(),
            seen_outside_k: HashSet::new(),
            duplicates: 0,
            observed_models: BTreeSet::new(),
            metrics: Default::default(),
            agreement: Default::default(),
            judge_scored: HashSet::new(),
        }
    }

    /// Mark the trial key (case index, slot, attempt) as added; `false` when it already was.
    fn first_time(&mut self, case: usize, slot: usize, attempt: u32) -> bool {
        // The bitset spans 2·K bits per case; a larger K (no real run has one) uses the set.
        const MAX_BITSET_K: usize = 1 << 12;
        let k = self.manifest.k as usize;
        if attempt == 0 || attempt as usize > k || k > MAX_BITSET_K {
            return self
                .seen_outside_k
                .insert((case as u32, slot as u8, attempt));
        }
        let bit = (case * 2 + slot) * k + (attempt as usize - 1);
        let word = bit / 64;
        if word >= self.seen_bits.len() {
            self.seen_bits.resize(word + 1, 0);
        }
        let mask = 1u64 << (bit % 64);
        let fresh = self.seen_bits[word] & mask == 0;
        self.seen_bits[word] |= mask;
        fresh
    }

    /// Add one record of this pair's arms; returns `false` (and ignores it) when its trial key
    /// was already added. Records of other arms are ignored (`true`).
    fn add(&mut self, record: &TrialView<'_>) -> bool {
        let arm = if record.arm == self.slots[0] {
            0
        } else if record.arm == self.slots[1] {
            1
        } else {
            return true;
        };
        let case = match self.case_index.get(record.case_id.as_ref()) {
            Some(&index) => index,
            None => {
                let index = self.case_ids.len();
                self.case_index.insert(record.case_id.to_string(), index);
                self.case_ids.push(record.case_id.to_string());
                self.cases.push(Default::default());
                index
            }
        };
        if !self.first_time(case, arm, record.attempt) {
            self.duplicates += 1;
            return false;
        }
        let case_arm = &mut self.cases[case][arm];
        case_arm.trials.add(record.outcome);
        if record.activated_skills.contains(&self.manifest.asset.name) {
            case_arm.target_activations += 1;
        }
        let totals = &mut self.arms[arm];
        totals.trials.add(record.outcome);
        totals.usage.add(&record.usage);
        totals.wall_s += record.wall_s;
        totals.wall_times.push(record.wall_s);
        let usage = &record.usage;
        if usage.input_tokens.is_some() || usage.output_tokens.is_some() {
            let tokens = usage.input_tokens.unwrap_or(0) + usage.output_tokens.unwrap_or(0);
            totals.trial_tokens.push((case, tokens as f64));
        }
        if let Some(cost) = usage.cost_usd {
            totals.trial_costs.push((case, cost));
        }
        if record.outcome != Outcome::Unscoreable {
            totals.latency_s += record.model_latency_s;
            totals.latency_trials += 1;
        }
        totals.retries += record.retries.0;
        if !record.truncated.is_empty() {
            totals.truncated_trials += 1;
        }
        if record.decided_by == Some(crate::record::PassBasis::SecurityGate) {
            totals.security_gate_failures += 1;
        }
        if record.decided_by == Some(crate::record::PassBasis::OutcomeScore)
            && !self.manifest.grading.judges.is_empty()
        {
            self.judge_scored.insert(case);
        }
        if record.outcome == Outcome::Unscoreable {
            *totals
                .unscoreable_causes
                .entry(record.cause_label())
                .or_default() += 1;
        }
        let grading = &self.manifest.grading;
        let judge_repeats = !grading.judges.is_empty() && grading.judge_k > 1;
        self.metrics.add(case, arm, record, judge_repeats);
        if let Some(primary) = self.manifest.grading.judges.first() {
            self.agreement.add(&primary.name, record);
        }
        if let Some(model) = &record.observed_model
            && !self.observed_models.contains(model.as_ref())
        {
            self.observed_models.insert(model.to_string());
        }
        true
    }
}

/// Streaming accumulator of a run's records: the classic pair (`with_skill` against
/// `without_skill`), plus one pair per further comparison when the run has more arms or another
/// reference ([`Summary::comparisons`]). A two-arm run feeds the one pair only.
pub(crate) struct RunAccumulator<'a> {
    manifest: &'a Manifest,
    primary: PairAccumulator<'a>,
    /// The other comparisons, each an arm against the reference.
    others: Vec<PairAccumulator<'a>>,
    /// Whether comparisons are reported (more than the paired two arms, or another reference).
    compare: bool,
    /// Outcome counts and keys of the arms outside the classic pair.
    extra_outcomes: OutcomeCounts,
    extra_seen: HashSet<(String, Arm, u32)>,
    extra_duplicates: usize,
    /// Reused trials counted so far (runs that asked for reuse).
    reuse: Option<ReuseSummary>,
    /// The judges' spend so far (trials with judge metrics).
    judge_spend: Option<crate::record::JudgeSpendSummary>,
    /// The pairs by the target's position (`position`).
    position: position::PositionAccumulator,
    /// One trial per case and paired arm whose answer the reports show ([`SampleTrial`]).
    samples: BTreeMap<(String, Arm), SampleTrial>,
    /// `with_skill` against `previous_version`, for the evolution contract (a run with a
    /// previous version and its recorded version policy).
    version_pair: Option<PairAccumulator<'a>>,
    /// `with_skill` against `without_skill` once more, for the no-effect test at 90 % (a
    /// fixed-n run with `--equivalence`, `Manifest::equivalence_margin`).
    equivalence_pair: Option<PairAccumulator<'a>>,
}

/// The trial of a case in one arm whose answer `report.md` and `report.html` show: a failing
/// attempt when the arm has one (what went wrong), else the lowest attempt; where its
/// transcript lies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SampleTrial {
    /// The case.
    pub case_id: String,
    /// `with_skill` or `without_skill`.
    pub arm: Arm,
    /// Its attempt number.
    pub attempt: u32,
    /// `<case_id>/<arm>/<attempt>`.
    pub trial_id: String,
    /// Its outcome.
    pub outcome: crate::record::Outcome,
    /// Its transcript path relative to the run folder.
    pub transcript: Option<String>,
    /// Where its transcript lies in the transcript log.
    pub transcript_span: Option<crate::record::TranscriptSpan>,
}

impl SampleTrial {
    /// Lower is shown first: a failing attempt, then the lowest attempt number.
    fn rank(&self) -> (bool, u32) {
        (self.outcome != crate::record::Outcome::Fail, self.attempt)
    }
}

impl<'a> RunAccumulator<'a> {
    /// An empty accumulator for the run `manifest` describes.
    pub(crate) fn new(manifest: &'a Manifest) -> Self {
        let reference = manifest.reference();
        let compare = reference != Arm::WithoutSkill
            || manifest.arms.iter().any(|arm| !Arm::PAIRED.contains(arm));
        let others = if compare {
            manifest
                .arms
                .iter()
                .filter(|&&arm| {
                    arm != reference && !(arm == Arm::WithSkill && reference == Arm::WithoutSkill)
                })
                .map(|&arm| PairAccumulator::new(manifest, arm, reference))
                .collect()
        } else {
            Vec::new()
        };
        Self {
            manifest,
            primary: PairAccumulator::new(manifest, Arm::WithSkill, Arm::WithoutSkill),
            others,
            compare,
            extra_outcomes: OutcomeCounts::default(),
            extra_seen: HashSet::new(),
            extra_duplicates: 0,
            reuse: ReuseSummary::of_run(manifest, []),
            judge_spend: None,
            position: position::PositionAccumulator::new(&manifest.asset.name),
            samples: BTreeMap::new(),
            version_pair: (manifest.version_policy.is_some()
                && manifest.arms.contains(&Arm::PreviousVersion))
            .then(|| PairAccumulator::new(manifest, Arm::WithSkill, Arm::PreviousVersion)),
            equivalence_pair: manifest
                .equivalence_margin
                .is_some()
                .then(|| PairAccumulator::new(manifest, Arm::WithSkill, Arm::WithoutSkill)),
        }
    }

    /// The manifest of the run being accumulated.
    pub(crate) fn manifest(&self) -> &'a Manifest {
        self.manifest
    }

    /// The trials whose answers the reports show, one per case and paired arm so far.
    pub(crate) fn samples(&self) -> Vec<SampleTrial> {
        self.samples.values().cloned().collect()
    }

    /// Add one record; returns `false` (and ignores it) when its trial key was already added.
    pub(crate) fn add(&mut self, record: &TrialRecord) -> bool {
        self.add_view(&record.view())
    }

    /// [`RunAccumulator::add`] of a record's [view](TrialView) (what the analysis reads of it;
    /// `crate::record::for_each_planned_view` reads these without decoding whole records).
    pub(crate) fn add_view(&mut self, record: &TrialView<'_>) -> bool {
        let fresh = self.add_to_pairs(record);
        if fresh {
            self.position.add(record);
            if Arm::PAIRED.contains(&record.arm) {
                let sample = SampleTrial {
                    case_id: record.case_id.to_string(),
                    arm: record.arm,
                    attempt: record.attempt,
                    trial_id: record.trial_id.to_string(),
                    outcome: record.outcome,
                    transcript: record.transcript.as_deref().map(str::to_string),
                    transcript_span: record.transcript_span,
                };
                let key = (sample.case_id.clone(), sample.arm);
                match self.samples.get(&key) {
                    Some(shown) if shown.rank() <= sample.rank() => {}
                    _ => {
                        self.samples.insert(key, sample);
                    }
                }
            }
        }
        if fresh && let Some(reuse) = self.reuse.as_mut() {
            reuse.count(record);
        }
        if fresh && let Some(spent) = &record.judge_usage {
            self.judge_spend
                .get_or_insert_with(Default::default)
                .add(spent);
        }
        fresh
    }

    fn add_to_pairs(&mut self, record: &TrialView<'_>) -> bool {
        if let Some(pair) = self.version_pair.as_mut() {
            // Duplicates are counted by the pairs below.
            pair.add(record);
        }
        if let Some(pair) = self.equivalence_pair.as_mut() {
            pair.add(record);
        }
        let mut fresh = self.primary.add(record);
        if !self.compare {
            return fresh;
        }
        if !Arm::PAIRED.contains(&record.arm) {
            if !self
                .extra_seen
                .insert((record.case_id.to_string(), record.arm, record.attempt))
            {
                self.extra_duplicates += 1;
                return false;
            }
            self.extra_outcomes.add(record.outcome);
        }
        for pair in &mut self.others {
            fresh &= pair.add(record);
        }
        fresh
    }

    /// Compute the summary: the classic pair's analysis, and each comparison's.
    pub(crate) fn finish(self, settings: &AnalysisSettings) -> Summary {
        let RunAccumulator {
            manifest,
            primary,
            others,
            compare,
            extra_outcomes,
            extra_duplicates,
            reuse,
            judge_spend,
            position,
            version_pair,
            equivalence_pair,
            ..
        } = self;
        let reference = manifest.reference();
        // The gates apply to `with_skill` against the reference.
        let ungated = AnalysisSettings {
            gate: GateSettings::default(),
            ..settings.clone()
        };
        let classic_gated = reference == Arm::WithoutSkill;
        let cost_gates = settings.gate.has_cost_gates();
        let primary_costs = (compare || cost_gates).then(|| primary.arm_costs());
        let quality_figures = manifest
            .quality_contract
            .as_ref()
            .map(|_| primary.quality_figures());
        let version_contract = match (&manifest.version_policy, version_pair) {
            (Some(policy), Some(pair)) => {
                let versus = summarize_scoped(
                    pair,
                    &ungated,
                    SummaryScope::LiftAt(evolution::CONTRACT_CONFIDENCE),
                );
                Some(evolution::evaluate(
                    policy,
                    &versus.lift,
                    settings.gate.enforce_version_policy,
                ))
            }
            _ => None,
        };
        let no_effect = match (manifest.equivalence_margin, equivalence_pair) {
            (Some(margin), Some(pair)) => {
                let at_90 = summarize_scoped(
                    pair,
                    &ungated,
                    SummaryScope::LiftAt(evolution::CONTRACT_CONFIDENCE),
                );
                Some(evolution::no_effect(margin, &at_90.lift))
            }
            _ => None,
        };
        let mut summary = summarize(primary, if classic_gated { settings } else { &ungated });
        summary.reuse = reuse;
        summary.judge_spend = judge_spend;
        summary.position = if manifest.arm_design.is_paired() {
            position.finish(manifest.seed)
        } else {
            None
        };
        if classic_gated
            && cost_gates
            && let Some(costs) = &primary_costs
        {
            let cost =
                CostComparison::of(costs, &summary.arms.with_skill, &summary.arms.without_skill);
            apply_cost_gates(&mut summary.lift.gate, &settings.gate, &cost);
        }
        attach_version_contract(&mut summary, version_contract, settings);
        attach_no_effect(&mut summary, no_effect);
        if !compare {
            attach_quality_contract(manifest, &mut summary, quality_figures);
            return summary;
        }
        let mut comparisons = Vec::new();
        if classic_gated && manifest.arms.contains(&Arm::WithSkill) {
            let costs = primary_costs.expect("computed when comparing");
            comparisons.push(Comparison {
                arm: Arm::WithSkill,
                reference,
                cost: CostComparison::of(
                    &costs,
                    &summary.arms.with_skill,
                    &summary.arms.without_skill,
                ),
                arm_summary: summary.arms.with_skill.clone(),
                reference_summary: summary.arms.without_skill.clone(),
                lift: summary.lift.clone(),
            });
        }
        for pair in others {
            let arm = pair.slots[0];
            let gated = arm == Arm::WithSkill;
            let costs = pair.arm_costs();
            let sub = summarize(pair, if gated { settings } else { &ungated });
            let cost = CostComparison::of(&costs, &sub.arms.with_skill, &sub.arms.without_skill);
            let mut lift = sub.lift;
            if gated {
                apply_cost_gates(&mut lift.gate, &settings.gate, &cost);
            }
            comparisons.push(Comparison {
                arm,
                reference,
                arm_summary: sub.arms.with_skill,
                reference_summary: sub.arms.without_skill,
                lift,
                cost,
            });
        }
        // Planning order of the compared arms.
        comparisons.sort_by_key(|c| manifest.arms.iter().position(|arm| *arm == c.arm));
        // The run's totals count every arm.
        summary.trials.outcomes.merge(&extra_outcomes);
        summary.trials.recorded = summary.trials.outcomes.total();
        summary.trials.duplicates_ignored += extra_duplicates;
        summary.complete = summary.trials.recorded >= manifest.trials_planned;
        let recorded = summary.trials.recorded;
        summary.unscoreable.fraction = if recorded == 0 {
            0.0
        } else {
            summary.trials.outcomes.unscoreable as f64 / recorded as f64
        };
        summary.unscoreable.exceeded = summary.unscoreable.fraction > settings.max_unscoreable;
        summary.reference = Some(reference);
        summary.comparisons = comparisons;
        attach_quality_contract(manifest, &mut summary, quality_figures);
        summary
    }
}

/// Set the evolution contract's result; a contract with no policy, or one enforced on a run
/// without a previous version, is a warning of every report.
fn attach_version_contract(
    summary: &mut Summary,
    contract: Option<evolution::EvolutionReport>,
    settings: &AnalysisSettings,
) {
    match &contract {
        Some(report) if report.verdict == evolution::ContractVerdict::NoPolicy => {
            summary
                .warnings
                .push(format!("version policy not applied: {}", report.message));
        }
        None if settings.gate.enforce_version_policy => summary.warnings.push(
            "--enforce-version-policy: this run has no previous version with its declared versions recorded (run with --previous or --previous-ref); nothing was enforced"
                .to_string(),
        ),
        _ => {}
    }
    summary.version_contract = contract;
}

/// Set the no-effect test's result; an inconclusive verdict whose 90 % interval lies inside
/// the margin gets the reason that says so (the verdict stays `inconclusive`: equivalence is
/// a finding about the size of the effect, not a direction).
fn attach_no_effect(summary: &mut Summary, report: Option<evolution::NoEffectReport>) {
    if let Some(report) = &report
        && report.verdict == evolution::ContractVerdict::Equivalent
        && summary.lift.verdict == Verdict::Inconclusive
    {
        summary.lift.verdict_reasons.push(
            InconclusiveReason::EquivalentWithinMargin {
                margin: report.margin,
            }
            .into(),
        );
    }
    summary.equivalence = report;
}

/// Check the run's quality contract (if it declares one) against its summary; a bound neither
/// met nor violated becomes a warning of every report.
fn attach_quality_contract(
    manifest: &Manifest,
    summary: &mut Summary,
    figures: Option<(quality::TrialFigures, Vec<String>)>,
) {
    let (Some(contract), Some((trials, case_labels))) = (&manifest.quality_contract, figures)
    else {
        return;
    };
    let report = quality::check(
        contract,
        &quality::QualityInputs {
            with_skill: &summary.arms.with_skill,
            trials: &trials,
            case_labels: &case_labels,
            unscoreable: (summary.trials.outcomes.unscoreable, summary.trials.recorded),
        },
    );
    summary.warnings.extend(report.undecided());
    summary.quality_contract = Some(report);
}

impl PairAccumulator<'_> {
    /// The compared arm's (slot 0) per-trial figures the quality contract reads, and the
    /// cluster label of every case index (its eval-set cluster, else `case:<id>`).
    fn quality_figures(&self) -> (quality::TrialFigures, Vec<String>) {
        let totals = &self.arms[0];
        let labels = self
            .case_ids
            .iter()
            .map(|id| {
                self.manifest
                    .eval_set
                    .case_clusters
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| format!("case:{id}"))
            })
            .collect();
        (
            quality::TrialFigures {
                wall_s: totals.wall_times.clone(),
                tokens: totals.trial_tokens.clone(),
                cost_usd: totals.trial_costs.clone(),
            },
            labels,
        )
    }

    /// The two arms' cost figures that need every trial (the P95 wall time).
    fn arm_costs(&self) -> [Option<f64>; 2] {
        [
            percentile(&self.arms[0].wall_times, 0.95),
            percentile(&self.arms[1].wall_times, 0.95),
        ]
    }
}

/// The `q` quantile of `values` by the nearest-rank method (`None` when empty).
fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// One arm compared with the reference arm: the same paired statistics as the run's `lift`,
/// plus what the arm costs against the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Comparison {
    /// The compared arm.
    pub arm: Arm,
    /// The arm it is compared against.
    pub reference: Arm,
    /// The compared arm over the cases scored in both arms.
    pub arm_summary: ArmSummary,
    /// The reference arm over the same cases.
    pub reference_summary: ArmSummary,
    /// The paired lift `arm − reference` (its `gate` when the gates apply to this comparison:
    /// `with_skill` against the reference).
    pub lift: LiftSummary,
    /// Latency, tokens and cost per trial of both arms, with their ratios.
    pub cost: CostComparison,
}

/// What one arm costs per trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArmCost {
    /// The 95th percentile of the trials' wall time (nearest rank), seconds.
    pub p95_wall_s: Option<f64>,
    /// Input plus output tokens per recorded trial (trials that reported usage).
    pub tokens_per_trial: Option<f64>,
    /// Cost per recorded trial, USD, when the runner reports cost.
    pub cost_usd_per_trial: Option<f64>,
}

/// The compared arm's costs against the reference's, and their ratios (compared ÷ reference;
/// `None` when either is unknown or the reference's is 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CostComparison {
    pub arm: ArmCost,
    pub reference: ArmCost,
    /// P95 wall time ratio (`--max-latency-ratio` gates it).
    pub latency_ratio: Option<f64>,
    /// Tokens per trial ratio (`--max-token-ratio` gates it).
    pub token_ratio: Option<f64>,
    /// Cost per trial ratio.
    pub cost_ratio: Option<f64>,
}

impl CostComparison {
    fn of(p95: &[Option<f64>; 2], arm: &ArmSummary, reference: &ArmSummary) -> Self {
        let cost = |p95: Option<f64>, summary: &ArmSummary| {
            let recorded = summary.trials.total();
            let per_trial =
                |total: Option<f64>| total.filter(|_| recorded > 0).map(|t| t / recorded as f64);
            let tokens = match (summary.usage.input_tokens, summary.usage.output_tokens) {
                (None, None) => None,
                (input, output) => Some((input.unwrap_or(0) + output.unwrap_or(0)) as f64),
            };
            ArmCost {
                p95_wall_s: p95,
                tokens_per_trial: per_trial(tokens),
                cost_usd_per_trial: per_trial(summary.usage.cost_usd),
            }
        };
        let arm = cost(p95[0], arm);
        let reference = cost(p95[1], reference);
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        Self {
            latency_ratio: ratio(arm.p95_wall_s, reference.p95_wall_s),
            token_ratio: ratio(arm.tokens_per_trial, reference.tokens_per_trial),
            cost_ratio: ratio(arm.cost_usd_per_trial, reference.cost_usd_per_trial),
            arm,
            reference,
        }
    }
}

/// Add the cost gates' failures (`--max-latency-ratio`, `--max-token-ratio`) to `gate`.
fn apply_cost_gates(gate: &mut Option<GateResult>, settings: &GateSettings, cost: &CostComparison) {
    let mut failures = Vec::new();
    let mut check = |limit: Option<f64>, ratio: Option<f64>, what: &str, flag: &str| {
        let Some(limit) = limit else {
            return;
        };
        match ratio {
            Some(ratio) if ratio <= limit => {}
            Some(ratio) => failures.push(format!(
                "the {what} ratio {ratio:.3} exceeds {flag} {limit}"
            )),
            None => failures.push(format!("no {what} ratio to compare with {flag}")),
        }
    };
    check(
        settings.max_latency_ratio,
        cost.latency_ratio,
        "P95 latency",
        "--max-latency-ratio",
    );
    check(
        settings.max_token_ratio,
        cost.token_ratio,
        "tokens-per-trial",
        "--max-token-ratio",
    );
    if !settings.has_cost_gates() {
        return;
    }
    let result = gate.get_or_insert_with(|| GateResult {
        settings: settings.clone(),
        passed: true,
        failures: Vec::new(),
    });
    result.failures.extend(failures);
    result.passed = result.failures.is_empty();
}

/// Analyze in-memory records (convenience over [`RunAccumulator`]).
#[cfg(test)]
pub(crate) fn analyze(
    manifest: &Manifest,
    records: &[TrialRecord],
    settings: &AnalysisSettings,
) -> Summary {
    let mut accumulator = RunAccumulator::new(manifest);
    for record in records {
        accumulator.add(record);
    }
    accumulator.finish(settings)
}

/// Why a case has no lift: for each arm without a scored attempt, what its trials were — none
/// recorded (an interrupted run), all unscoreable, or not gradable — naming the arm.
fn exclusion_reason(arms: [Arm; 2], sides: [&CaseArm; 2]) -> String {
    let mut reasons = Vec::new();
    for (arm, side) in arms.iter().zip(sides) {
        if side.pass_rate.is_some() {
            continue;
        }
        let trials = &side.trials;
        let reason = if trials.total() == 0 {
            format!("no {arm} trial recorded")
        } else if trials.unscoreable > 0 && trials.not_gradable == 0 {
            format!("every {arm} trial unscoreable ({})", trials.unscoreable)
        } else if trials.unscoreable == 0 {
            format!(
                "{arm} not gradable ({} trial{}: nothing decides pass or fail)",
                trials.not_gradable,
                if trials.not_gradable == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "no scored {arm} trial ({} unscoreable, {} not gradable)",
                trials.unscoreable, trials.not_gradable
            )
        };
        reasons.push(reason);
    }
    reasons.join("; ")
}

/// The paired cases' data.
struct Paired {
    with: Vec<f64>,
    without: Vec<f64>,
    labels: Vec<String>,
    /// Whether every paired case has exactly one scored attempt per arm (K = 1 binary).
    single_attempt: bool,
    /// 2×2 table for K = 1: both pass, only with, only without, neither.
    table: [u64; 4],
    with_passes: u64,
    without_passes: u64,
    with_scored: u64,
    without_scored: u64,
    /// Per paired case: the pass moments of both arms.
    moments: Vec<[noise::CaseMoments; 2]>,
}

fn summarize(accumulator: PairAccumulator<'_>, settings: &AnalysisSettings) -> Summary {
    summarize_scoped(accumulator, settings, SummaryScope::Full)
}

/// What [`summarize_scoped`] computes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SummaryScope {
    /// Everything, every interval at the reports' [`CONFIDENCE`].
    Full,
    /// The pass-rate lift with its interval at this two-sided level (the evolution contract's
    /// 90 % interval): no metric lifts, no sequential stopping applied.
    LiftAt(f64),
}

fn summarize_scoped(
    accumulator: PairAccumulator<'_>,
    settings: &AnalysisSettings,
    scope: SummaryScope,
) -> Summary {
    let lift_confidence = match scope {
        SummaryScope::Full => CONFIDENCE,
        SummaryScope::LiftAt(confidence) => confidence,
    };
    let PairAccumulator {
        manifest,
        case_ids,
        cases,
        arms: arm_totals,
        duplicates,
        observed_models,
        metrics: metric_accumulator,
        agreement,
        judge_scored,
        slots,
        ..
    } = accumulator;
    let activation_observable = manifest.runner.capabilities().activation_observable;
    let mut paired = Paired {
        with: Vec::new(),
        without: Vec::new(),
        labels: Vec::new(),
        single_attempt: true,
        table: [0; 4],
        with_passes: 0,
        without_passes: 0,
        with_scored: 0,
        without_scored: 0,
        moments: Vec::new(),
    };
    let mut case_summaries = Vec::with_capacity(case_ids.len());
    let mut negative_lift = NegativeLiftCounts {
        activation_observable,
        ..Default::default()
    };
    let mut metric_labels = Vec::with_capacity(case_ids.len());
    for (index, (id, mut arms)) in case_ids.into_iter().zip(cases).enumerate() {
        let means = metric_accumulator.case_means(index);
        for (arm, means) in arms.iter_mut().zip(means) {
            let scored = arm.trials.scored();
            arm.pass_rate = (scored > 0).then(|| arm.trials.pass as f64 / scored as f64);
            arm.metric_means = means;
        }
        metric_labels.push(
            manifest
                .eval_set
                .case_clusters
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("case:{id}")),
        );
        let cluster = manifest.eval_set.case_clusters.get(&id).cloned();
        let [with, without] = arms;
        let (lift, excluded_reason) = match (with.pass_rate, without.pass_rate) {
            (Some(a), Some(b)) => (Some(a - b), None),
            _ => (None, Some(exclusion_reason(slots, [&with, &without]))),
        };
        if let (Some(a), Some(b)) = (with.pass_rate, without.pass_rate) {
            if with.trials.scored() != 1 || without.trials.scored() != 1 {
                paired.single_attempt = false;
            } else {
                let cell = match (with.trials.pass == 1, without.trials.pass == 1) {
                    (true, true) => 0,
                    (true, false) => 1,
                    (false, true) => 2,
                    (false, false) => 3,
                };
                paired.table[cell] += 1;
            }
            paired.with.push(a);
            paired.without.push(b);
            paired
                .labels
                .push(cluster.clone().unwrap_or_else(|| format!("case:{id}")));
            paired.with_passes += with.trials.pass as u64;
            paired.without_passes += without.trials.pass as u64;
            paired.with_scored += with.trials.scored() as u64;
            paired.without_scored += without.trials.scored() as u64;
            let moments = |arm: &CaseArm| noise::CaseMoments {
                count: arm.trials.scored() as u32,
                sum: arm.trials.pass as f64,
                sum_squares: arm.trials.pass as f64,
                ..Default::default()
            };
            paired.moments.push([moments(&with), moments(&without)]);
        }
        let with_unstable = with.trials.unscoreable > 0 && without.trials.scored() > 0;
        let negative_lift_class = match lift {
            Some(d) if d < 0.0 => Some(if with_unstable {
                NegativeLiftClass::ExecutionInstability
            } else if activation_observable && with.target_activations == 0 {
                NegativeLiftClass::NeverDiscovered
            } else {
                NegativeLiftClass::DiscoveredButMisused
            }),
            None if with.trials.scored() == 0 && with_unstable => {
                Some(NegativeLiftClass::ExecutionInstability)
            }
            _ => None,
        };
        match negative_lift_class {
            Some(NegativeLiftClass::NeverDiscovered) => negative_lift.never_discovered += 1,
            Some(NegativeLiftClass::DiscoveredButMisused) => {
                negative_lift.discovered_but_misused += 1
            }
            Some(NegativeLiftClass::ExecutionInstability) => {
                negative_lift.execution_instability += 1
            }
            None => {}
        }
        case_summaries.push(CaseSummary {
            case_id: id,
            cluster,
            with_skill: with,
            without_skill: without,
            lift,
            excluded_reason,
            negative_lift_class,
        });
    }

    let n = paired.with.len();
    let clustered = !manifest.eval_set.case_clusters.is_empty();
    let clusters = clustered.then(|| Clusters::from_labels(&paired.labels));

    // Per-arm rates over the paired cases: Wilson on the case-level passes when every paired
    // case has exactly one scored attempt (K = 1, unclustered), else the effective-count Wilson
    // interval (design effect from the case rates' own variance; never zero width).
    let single_attempt = n > 0 && paired.single_attempt && !clustered;
    let arm_summary = |slot: usize, values: &[f64], passes: u64, scored: u64| {
        let totals = &arm_totals[slot];
        let (interval, interval_method) = if values.len() < MIN_VERDICT_CASES {
            (None, None)
        } else if single_attempt {
            (
                stats::wilson_interval(passes, values.len() as u64, CONFIDENCE),
                Some(ArmIntervalMethod::Wilson.as_str().to_string()),
            )
        } else {
            (
                stats::effective_count_wilson_interval(
                    values,
                    scored,
                    clusters.as_ref(),
                    CONFIDENCE,
                )
                .ok()
                .map(|r| r.interval),
                Some(ArmIntervalMethod::WilsonEffectiveCount.as_str().to_string()),
            )
        };
        let recorded = totals.trials.total();
        ArmSummary {
            pass_rate: mean(values),
            ci_low: interval.map(|i| i.low),
            ci_high: interval.map(|i| i.high),
            interval_method,
            n_cases: values.len(),
            trials: totals.trials.clone(),
            usage: totals.usage.clone(),
            mean_wall_s: (recorded > 0).then(|| totals.wall_s / recorded as f64),
            mean_model_latency_s: (totals.latency_trials > 0)
                .then(|| totals.latency_s / totals.latency_trials as f64),
            retries: totals.retries,
            unscoreable_causes: totals.unscoreable_causes.clone(),
            truncated_trials: totals.truncated_trials,
            security_gate_failures: totals.security_gate_failures,
        }
    };
    let arms = Arms {
        with_skill: arm_summary(0, &paired.with, paired.with_passes, paired.with_scored),
        without_skill: arm_summary(
            1,
            &paired.without,
            paired.without_passes,
            paired.without_scored,
        ),
    };
    let mut inference = inference::infer_at(
        &inference::PairedData {
            with: &paired.with,
            without: &paired.without,
            clusters: clusters.as_ref(),
            binary_table: single_attempt.then_some(paired.table),
            arm_trials: Some([paired.with_scored, paired.without_scored]),
        },
        settings.method,
        settings.resamples,
        settings.seed,
        lift_confidence,
    );
    let (direction, verdict_reasons) = inference::decide(&mut inference);
    let verdict = match direction {
        inference::Direction::Up => Verdict::Improved,
        inference::Direction::Down => Verdict::Regressed,
        inference::Direction::None => Verdict::Inconclusive,
    };
    let interval = inference.interval;
    let estimate = inference.estimate;
    let differences = &inference.differences;
    let noise = noise::summarize(
        &paired.moments,
        if manifest.grading.judge_k > 1 {
            metric_accumulator.judge_moments()
        } else {
            BTreeMap::new()
        },
        manifest.grading.judge_k,
        clusters.as_ref(),
    );
    let gate = evaluate_gate(&settings.gate, verdict, interval);
    let case_lifts = CaseLiftDistribution {
        positive: differences.iter().filter(|d| **d > 0.0).count(),
        zero: differences.iter().filter(|d| **d == 0.0).count(),
        negative: differences.iter().filter(|d| **d < 0.0).count(),
        median: median(differences),
    };
    let mut lift = LiftSummary {
        metric: "pass_rate".to_string(),
        estimate,
        ci_low: interval.map(|i| i.low),
        ci_high: interval.map(|i| i.high),
        method: inference.method.as_str().to_string(),
        test: inference.test.map(|t| t.as_str().to_string()),
        p_value: inference.p_value,
        paired_t: inference.paired_t.clone(),
        mde: inference.mde,
        n_cases: n,
        n_clusters: inference.n_clusters,
        k: manifest.k,
        verdict,
        verdict_reasons,
        correlation: stats::pearson_correlation(&paired.with, &paired.without),
        case_lifts,
        negative_lift,
        resamples: settings.resamples,
        seed: settings.seed,
        gate,
    };
    let mut totals = OutcomeCounts::default();
    totals.merge(&arm_totals[0].trials);
    totals.merge(&arm_totals[1].trials);
    let stopping = manifest
        .stopping
        .as_ref()
        .filter(|_| scope == SummaryScope::Full)
        .map(|plan| {
            let stopping = StoppingSummary::of_run(
                plan,
                &case_tallies(&case_summaries),
                manifest.k,
                manifest.trials_planned,
                totals.total(),
            );
            if stopping.apply_to(&mut lift) {
                let interval = lift
                    .ci_low
                    .zip(lift.ci_high)
                    .map(|(low, high)| Interval { low, high });
                lift.gate = evaluate_gate(&settings.gate, lift.verdict, interval);
            }
            stopping
        });

    let observed_models: Vec<String> = observed_models.into_iter().collect();
    let metric_lifts = if metric_accumulator.is_empty() || scope != SummaryScope::Full {
        Vec::new()
    } else {
        metric_accumulator.lifts(&metric_labels, clustered, &manifest.grading, settings)
    };
    let judge_agreement =
        agreement.finish(manifest.grading.judges.first().map(|j| j.name.as_str()));
    let unscoreable = {
        let recorded = totals.total();
        let fraction = if recorded == 0 {
            0.0
        } else {
            totals.unscoreable as f64 / recorded as f64
        };
        UnscoreableSummary {
            fraction,
            limit: settings.max_unscoreable,
            exceeded: fraction > settings.max_unscoreable,
        }
    };
    let mut not_measured = Vec::new();
    if !manifest.grading.deterministic_metrics {
        not_measured.push(
            "skill metrics (security, skill_execution, skill_efficiency): this run was recorded before they existed; `skill-lift regrade` computes them".to_string(),
        );
    }
    if manifest.grading.judges.is_empty() {
        not_measured.push(
            "LLM-judge metrics (accuracy, goal_accuracy, behavior_check): no --judge was given"
                .to_string(),
        );
    }
    let tokens_known = arm_totals
        .iter()
        .any(|arm| arm.usage.input_tokens.is_some() || arm.usage.output_tokens.is_some());
    if tokens_known && arm_totals.iter().all(|arm| arm.usage.cost_usd.is_none()) {
        not_measured.push(
            "cost: the trials reported tokens but no cost, and the runner profile has no [price] table to price them (cost_usd is null)"
                .to_string(),
        );
    }
    if !activation_observable {
        not_measured.push(
            "skill activation: not observable in inject mode (every staged skill is in the prompt)"
                .to_string(),
        );
    }
    let warnings = judge_warning(judge_scored.len(), manifest.grading.judge_k, manifest.k)
        .into_iter()
        .collect();
    Summary {
        format_version: SUMMARY_FORMAT_VERSION,
        run_id: manifest.run_id.clone(),
        skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
        asset: manifest.asset.name.clone(),
        fingerprint: manifest.asset.fingerprint.clone(),
        calibre: manifest.asset.calibre.clone(),
        eval_set_digest: manifest.eval_set.digest.clone(),
        runner: manifest.runner.name.clone(),
        runner_kind: manifest.runner.kind.clone(),
        skill_mode: manifest.runner.skill_mode.clone(),
        model: manifest.model.clone(),
        observed_models,
        k: manifest.k,
        seed: manifest.seed,
        decoys: manifest
            .decoys
            .skills
            .iter()
            .map(|d| d.name.clone())
            .collect(),
        // A run that stopped as planned (a sequential decision, a budget) is complete too.
        complete: totals.total() >= manifest.trials_planned
            || stopping.as_ref().is_some_and(|s| s.stopped_as_planned()),
        trials: TrialTotals {
            planned: manifest.trials_planned,
            recorded: totals.total(),
            outcomes: totals,
            duplicates_ignored: duplicates,
        },
        arms,
        lift,
        metric_lifts,
        grading: GradingSummary::from_settings(&manifest.grading),
        unscoreable,
        noise,
        judge_agreement,
        cases: case_summaries,
        not_measured,
        warnings,
        arm_design: manifest.arm_design,
        calibration: manifest.calibration.clone(),
        reference: None,
        comparisons: Vec::new(),
        stopping,
        reuse: None,
        judge_spend: None,
        position: None,
        quality_contract: None,
        version_contract: None,
        equivalence: None,
    }
}

/// Fewest LLM-judge repeats (`--judge-k`) for judge-scored cases without a warning (an LLM
/// judge is noisy; statistics.md §6.4 adds its variance as a third level).
pub(crate) const MIN_JUDGE_REPEATS: u32 = 5;
/// Fewest attempts (`-k`) for judge-scored cases without a warning.
pub(crate) const MIN_JUDGE_ATTEMPTS: u32 = 3;

/// The judge warning as it is known before the first trial (printed then; the summary's comes
/// from the recorded trials): `judge_scored` cases (those whose output checks do not decide
/// their pass, in a run with an LLM judge) to be graded with `judge_k` repeats and `k`
/// attempts, when either is below its minimum.
pub(crate) fn judge_warning_before_trials(
    judge_scored: usize,
    judge_k: u32,
    k: u32,
) -> Option<String> {
    judge_warning_worded(judge_scored, judge_k, k, "run")
}

/// The warning for `judge_scored` cases graded with `judge_k` repeats and `k` attempts, when
/// either is below its minimum.
fn judge_warning(judge_scored: usize, judge_k: u32, k: u32) -> Option<String> {
    judge_warning_worded(judge_scored, judge_k, k, "ran")
}

/// [`judge_warning`] with its verb (`ran` after the trials, `run` before them).
fn judge_warning_worded(judge_scored: usize, judge_k: u32, k: u32, verb: &str) -> Option<String> {
    if judge_scored == 0 || (judge_k >= MIN_JUDGE_REPEATS && k >= MIN_JUDGE_ATTEMPTS) {
        return None;
    }
    let mut weak = Vec::new();
    if judge_k < MIN_JUDGE_REPEATS {
        weak.push(format!(
            "{judge_k} judge repeat{} (--judge-k; at least {MIN_JUDGE_REPEATS} recommended)",
            if judge_k == 1 { "" } else { "s" }
        ));
    }
    if k < MIN_JUDGE_ATTEMPTS {
        weak.push(format!(
            "{k} attempt{} per case and arm (-k; at least {MIN_JUDGE_ATTEMPTS} recommended)",
            if k == 1 { "" } else { "s" }
        ));
    }
    Some(format!(
        "{} judge-scored case{} (pass/fail decided by an LLM judge's score) {verb} with {}: the judge's noise is averaged over too few repeats, so the lift and its verdict carry it",
        judge_scored,
        if judge_scored == 1 { "" } else { "s" },
        weak.join(" and ")
    ))
}

/// Each case's recorded outcomes in the compared pair, for the sequential analysis.
fn case_tallies(cases: &[CaseSummary]) -> std::collections::HashMap<String, CaseTally> {
    let counts = |arm: &CaseArm| (arm.trials.pass, arm.trials.scored(), arm.trials.total());
    cases
        .iter()
        .map(|case| {
            (
                case.case_id.clone(),
                CaseTally {
                    with: counts(&case.with_skill),
                    without: counts(&case.without_skill),
                },
            )
        })
        .collect()
}

fn evaluate_gate(
    settings: &GateSettings,
    verdict: Verdict,
    interval: Option<Interval>,
) -> Option<GateResult> {
    if settings.min_lift.is_none() && settings.fail_on.is_empty() {
        return None;
    }
    let mut failures = Vec::new();
    if let Some(minimum) = settings.min_lift {
        match interval {
            Some(i) if i.low > minimum => {}
            Some(i) => failures.push(format!(
                "the lift interval's lower bound {:+.1} pp does not exceed --min-lift {:+.1} pp",
                i.low * 100.0,
                minimum * 100.0
            )),
            None => failures.push("no lift interval to compare with --min-lift".to_string()),
        }
    }
    for fail_on in &settings.fail_on {
        match (fail_on, verdict) {
            (FailOn::Regressed, Verdict::Regressed) => {
                failures.push("the verdict is regressed".to_string())
            }
            (FailOn::NotImproved, Verdict::Regressed | Verdict::Inconclusive) => {
                failures.push(format!("the verdict is {}, not improved", verdict.as_str()))
            }
            _ => {}
        }
    }
    Some(GateResult {
        settings: settings.clone(),
        passed: failures.is_empty(),
        failures,
    })
}

#[cfg(test)]
mod tests;
