//! Analysis: from recorded trials to per-arm pass rates, the paired lift with its interval, and
//! a verdict. A pure function of the manifest and the trial records.
//!
//! The case is the unit of analysis (statistics.md §1): a case's value in an arm is the mean of
//! its scored attempts (pass = 1, fail = 0); unscoreable and not-gradable trials are counted and
//! shown but never scored. N in every interval is the number of cases scored in both arms.
//! Methods: per-arm rate — Wilson score interval when every case has exactly one scored attempt,
//! else a seeded case bootstrap (percentile); lift — seeded case (or cluster) bootstrap, BCa
//! (Efron 1987) with percentile fallback, and the paired t test as a cross-check.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::grade::Outcome;
use crate::record::{Manifest, TrialRecord};
use crate::stats::{self, BootstrapConfig, BootstrapMethod, Clusters};
use crate::workspace::Arm;

/// Version of the `summary.json` schema (docs/summary-format.md).
pub const SUMMARY_FORMAT_VERSION: u32 = 1;

/// Confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;

/// Analysis settings.
#[derive(Debug, Clone, Copy)]
pub struct AnalysisSettings {
    /// Bootstrap resamples B.
    pub resamples: usize,
    /// Bootstrap seed.
    pub seed: u64,
}

/// Trial counts by outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomeCounts {
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

    /// Trials recorded.
    pub fn total(&self) -> usize {
        self.pass + self.fail + self.unscoreable + self.not_gradable
    }

    /// Trials scored (pass + fail).
    pub fn scored(&self) -> usize {
        self.pass + self.fail
    }
}

/// One case in one arm.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseArm {
    /// Trial counts by outcome.
    pub trials: OutcomeCounts,
    /// passes / scored attempts; `None` when no attempt was scored.
    pub pass_rate: Option<f64>,
}

/// One golden case across both arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseSummary {
    pub case_id: String,
    pub cluster: Option<String>,
    pub with_skill: CaseArm,
    pub without_skill: CaseArm,
    /// with − without case pass rates; `None` unless both arms were scored.
    pub lift: Option<f64>,
    /// Why the case is not in the paired analysis, when it is not.
    pub excluded_reason: Option<String>,
}

/// Token usage totals of an arm (`None` when no trial reported that count).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

/// One arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSummary {
    /// Mean over the paired cases of the case pass rates (fraction in [0,1]).
    pub pass_rate: Option<f64>,
    /// Lower end of the 95% interval.
    pub ci_low: Option<f64>,
    /// Upper end of the 95% interval.
    pub ci_high: Option<f64>,
    /// `wilson` or `case-bootstrap-percentile`.
    pub interval_method: Option<String>,
    /// Cases in the rate (scored in both arms).
    pub n_cases: usize,
    /// Trial counts by outcome over all of the arm's recorded trials.
    pub trials: OutcomeCounts,
    /// Usage totals over all recorded trials of the arm.
    pub usage: UsageTotals,
    /// Mean trial wall time, seconds.
    pub mean_wall_s: Option<f64>,
    /// Mean model latency per trial, seconds.
    pub mean_model_latency_s: Option<f64>,
    /// Retries recorded across the arm's trials.
    pub retries: usize,
}

/// The verdict on the lift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The interval excludes 0 upward.
    Improved,
    /// The interval excludes 0 downward.
    Regressed,
    /// Otherwise; `verdict_reason` says why.
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// Distribution of per-case lifts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseLiftDistribution {
    pub positive: usize,
    pub zero: usize,
    pub negative: usize,
    pub median: Option<f64>,
}

/// The paired lift of the pass rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiftSummary {
    /// What the lift is a difference of.
    pub metric: String,
    /// Mean over paired cases of (with − without), a fraction in [-1, 1].
    pub estimate: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Interval method, e.g. `case-bootstrap-bca`.
    pub method: String,
    /// Paired cases (N of the interval).
    pub n_cases: usize,
    /// Clusters resampled, when cases carry `cluster`.
    pub n_clusters: Option<usize>,
    /// Attempts per case per arm planned.
    pub k: u32,
    pub verdict: Verdict,
    /// Why the verdict is inconclusive, when it is.
    pub verdict_reason: Option<String>,
    /// Two-sided paired t p-value (cross-check).
    pub p_value_paired_t: Option<f64>,
    /// Pearson correlation between the arms' case values.
    pub correlation: Option<f64>,
    pub case_lifts: CaseLiftDistribution,
    /// Bootstrap resamples and seed.
    pub resamples: usize,
    pub seed: u64,
}

/// Trial totals of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialTotals {
    pub planned: usize,
    pub recorded: usize,
    #[serde(flatten)]
    pub outcomes: OutcomeCounts,
}

/// Both arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arms {
    pub with_skill: ArmSummary,
    pub without_skill: ArmSummary,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
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
    /// Models the server reported, when they differ from the requested one.
    pub observed_models: Vec<String>,
    pub k: u32,
    pub seed: u64,
    pub decoys: Vec<String>,
    /// Whether every planned trial is recorded.
    pub complete: bool,
    pub trials: TrialTotals,
    pub arms: Arms,
    pub lift: LiftSummary,
    pub cases: Vec<CaseSummary>,
    /// What this run did not measure.
    pub not_measured: Vec<String>,
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

fn usage_totals<'a>(records: impl Iterator<Item = &'a TrialRecord>) -> UsageTotals {
    let mut totals = UsageTotals::default();
    for record in records {
        let usage = &record.usage;
        if let Some(v) = usage.input_tokens {
            totals.input_tokens = Some(totals.input_tokens.unwrap_or(0) + v);
        }
        if let Some(v) = usage.output_tokens {
            totals.output_tokens = Some(totals.output_tokens.unwrap_or(0) + v);
        }
        if let Some(v) = usage.cached_tokens {
            totals.cached_tokens = Some(totals.cached_tokens.unwrap_or(0) + v);
        }
        if let Some(v) = usage.cost_usd {
            totals.cost_usd = Some(totals.cost_usd.unwrap_or(0.0) + v);
        }
    }
    totals
}

/// Keep the first record of each trial key (a run never holds duplicates, but a hand-edited one
/// might), in file order.
fn unique_records(records: &[TrialRecord]) -> Vec<&TrialRecord> {
    let mut seen = std::collections::HashSet::new();
    records.iter().filter(|r| seen.insert(r.key())).collect()
}

/// Analyze a run.
pub fn analyze(
    manifest: &Manifest,
    records: &[TrialRecord],
    settings: AnalysisSettings,
) -> Summary {
    let records = unique_records(records);
    let mut cases: BTreeMap<&str, [CaseArm; 2]> = BTreeMap::new();
    for id in &manifest.eval_set.case_ids {
        cases.insert(id.as_str(), Default::default());
    }
    let arm_index = |arm: Arm| if arm == Arm::WithSkill { 0 } else { 1 };
    let mut arm_trials = [OutcomeCounts::default(), OutcomeCounts::default()];
    let mut arm_passes_by_case: BTreeMap<&str, [(usize, usize); 2]> = BTreeMap::new();
    for record in &records {
        let index = arm_index(record.arm);
        arm_trials[index].add(record.outcome);
        let entry = cases.entry(record.case_id.as_str()).or_default();
        entry[index].trials.add(record.outcome);
        let counts = arm_passes_by_case
            .entry(record.case_id.as_str())
            .or_default();
        if record.outcome.is_scored() {
            counts[index].1 += 1;
            if record.outcome == Outcome::Pass {
                counts[index].0 += 1;
            }
        }
    }

    let mut case_summaries = Vec::with_capacity(cases.len());
    let order: Vec<&str> = manifest
        .eval_set
        .case_ids
        .iter()
        .map(String::as_str)
        .chain(
            cases
                .keys()
                .copied()
                .filter(|id| !manifest.eval_set.case_ids.iter().any(|c| c == id)),
        )
        .collect();
    let mut paired_with = Vec::new();
    let mut paired_without = Vec::new();
    let mut paired_labels = Vec::new();
    let mut with_passes = 0u64;
    let mut without_passes = 0u64;
    let mut single_attempt = true;
    for id in order {
        let mut arms = cases.remove(id).unwrap_or_default();
        for arm in arms.iter_mut() {
            let scored = arm.trials.scored();
            arm.pass_rate = (scored > 0).then(|| arm.trials.pass as f64 / scored as f64);
            if scored != 1 {
                single_attempt = false;
            }
        }
        let cluster = manifest.eval_set.case_clusters.get(id).cloned();
        let [with, without] = arms;
        let (lift, excluded_reason) = match (with.pass_rate, without.pass_rate) {
            (Some(a), Some(b)) => (Some(a - b), None),
            _ => {
                let reason = if with.trials.total() + without.trials.total() == 0 {
                    "no trial recorded"
                } else if with.trials.not_gradable + without.trials.not_gradable > 0
                    && with.trials.unscoreable + without.trials.unscoreable == 0
                {
                    "not gradable (no deterministic checks)"
                } else {
                    "no scored attempt in one arm (unscoreable trials)"
                };
                (None, Some(reason.to_string()))
            }
        };
        if let (Some(a), Some(b)) = (with.pass_rate, without.pass_rate) {
            paired_with.push(a);
            paired_without.push(b);
            paired_labels.push(cluster.clone().unwrap_or_else(|| format!("case:{id}")));
            with_passes += with.trials.pass as u64;
            without_passes += without.trials.pass as u64;
        }
        case_summaries.push(CaseSummary {
            case_id: id.to_string(),
            cluster,
            with_skill: with,
            without_skill: without,
            lift,
            excluded_reason,
        });
    }
    let n = paired_with.len();
    let clustered = !manifest.eval_set.case_clusters.is_empty();
    let clusters = clustered.then(|| Clusters::from_labels(&paired_labels));
    let n_clusters = clustered.then(|| {
        paired_labels
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    });
    let bootstrap = |method| BootstrapConfig {
        resamples: settings.resamples,
        seed: settings.seed,
        method,
        confidence: CONFIDENCE,
    };

    // Per-arm rates over the paired cases.
    let arm_interval =
        |values: &[f64], passes: u64| -> (Option<f64>, Option<stats::Interval>, Option<String>) {
            if values.is_empty() {
                return (None, None, None);
            }
            let rate = mean(values);
            if single_attempt && !clustered {
                (
                    rate,
                    stats::wilson_interval(passes, values.len() as u64, CONFIDENCE),
                    Some("wilson".to_string()),
                )
            } else {
                let result = stats::bootstrap_mean(
                    values,
                    clusters.as_ref(),
                    &bootstrap(BootstrapMethod::Percentile),
                );
                (
                    rate,
                    result.ok().map(|r| r.percentile),
                    Some("case-bootstrap-percentile".to_string()),
                )
            }
        };
    let arm_summary = |arm: Arm, values: &[f64], passes: u64| {
        let index = arm_index(arm);
        let (pass_rate, interval, interval_method) = arm_interval(values, passes);
        let arm_records: Vec<&&TrialRecord> = records.iter().filter(|r| r.arm == arm).collect();
        let walls: Vec<f64> = arm_records.iter().map(|r| r.wall_s).collect();
        let latencies: Vec<f64> = arm_records
            .iter()
            .filter(|r| r.outcome != Outcome::Unscoreable)
            .map(|r| r.model_latency_s)
            .collect();
        ArmSummary {
            pass_rate,
            ci_low: interval.map(|i| i.low),
            ci_high: interval.map(|i| i.high),
            interval_method,
            n_cases: values.len(),
            trials: arm_trials[index].clone(),
            usage: usage_totals(arm_records.iter().map(|r| **r)),
            mean_wall_s: mean(&walls),
            mean_model_latency_s: mean(&latencies),
            retries: arm_records.iter().map(|r| r.retries.len()).sum(),
        }
    };
    let arms = Arms {
        with_skill: arm_summary(Arm::WithSkill, &paired_with, with_passes),
        without_skill: arm_summary(Arm::WithoutSkill, &paired_without, without_passes),
    };

    // The paired lift.
    let differences: Vec<f64> = paired_with
        .iter()
        .zip(&paired_without)
        .map(|(a, b)| a - b)
        .collect();
    let estimate = mean(&differences);
    let mut method = "case-bootstrap-bca".to_string();
    let mut interval = None;
    if n >= 1 {
        match stats::bootstrap_paired_difference(
            &paired_with,
            &paired_without,
            clusters.as_ref(),
            &bootstrap(BootstrapMethod::Bca),
        ) {
            Ok(result) => match result.bca {
                Some(bca) => interval = Some(bca),
                None => {
                    method = "case-bootstrap-percentile".to_string();
                    interval = Some(result.percentile);
                }
            },
            Err(_) => interval = None,
        }
    }
    if clustered {
        method = method.replace("case-bootstrap", "cluster-bootstrap");
    }
    let p_value_paired_t = (n >= 2)
        .then(|| stats::paired_t(&differences, clusters.as_ref(), CONFIDENCE).ok())
        .flatten()
        .and_then(|r| r.p_value);
    let (verdict, verdict_reason) = match (n, interval) {
        (0, _) | (_, None) => (
            Verdict::Inconclusive,
            Some("no case was scored in both arms".to_string()),
        ),
        (1, _) => (
            Verdict::Inconclusive,
            Some("too few scored cases (1) for an interval".to_string()),
        ),
        (_, Some(i)) if i.low > 0.0 => (Verdict::Improved, None),
        (_, Some(i)) if i.high < 0.0 => (Verdict::Regressed, None),
        (_, Some(_)) => (
            Verdict::Inconclusive,
            Some("the 95% interval of the lift spans 0".to_string()),
        ),
    };
    let case_lifts = CaseLiftDistribution {
        positive: differences.iter().filter(|d| **d > 0.0).count(),
        zero: differences.iter().filter(|d| **d == 0.0).count(),
        negative: differences.iter().filter(|d| **d < 0.0).count(),
        median: median(&differences),
    };
    let lift = LiftSummary {
        metric: "pass_rate".to_string(),
        estimate,
        ci_low: interval.map(|i| i.low),
        ci_high: interval.map(|i| i.high),
        method,
        n_cases: n,
        n_clusters,
        k: manifest.k,
        verdict,
        verdict_reason,
        p_value_paired_t,
        correlation: stats::pearson_correlation(&paired_with, &paired_without),
        case_lifts,
        resamples: settings.resamples,
        seed: settings.seed,
    };

    let mut observed_models: Vec<String> = records
        .iter()
        .filter_map(|r| r.observed_model.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    observed_models.retain(|m| *m != manifest.model);
    let totals = OutcomeCounts {
        pass: arm_trials[0].pass + arm_trials[1].pass,
        fail: arm_trials[0].fail + arm_trials[1].fail,
        unscoreable: arm_trials[0].unscoreable + arm_trials[1].unscoreable,
        not_gradable: arm_trials[0].not_gradable + arm_trials[1].not_gradable,
    };
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
        decoys: manifest.decoys.skills.iter().map(|d| d.name.clone()).collect(),
        complete: totals.total() >= manifest.trials_planned,
        trials: TrialTotals {
            planned: manifest.trials_planned,
            recorded: totals.total(),
            outcomes: totals,
        },
        arms,
        lift,
        cases: case_summaries,
        not_measured: vec![
            "skill metrics (security, skill_execution, skill_efficiency) and LLM-judge metrics: not implemented in this version; grading is by deterministic checks only".to_string(),
            "minimum detectable effect and power: not computed in this version".to_string(),
        ],
    }
}
