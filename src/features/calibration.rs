//! A/A calibration: what a suite's verdicts are worth on one runner and model, measured by
//! running the eval set with both arms identical (`skill-lift calibrate`) and counting how often
//! the analysis still says `improved` or `regressed`.
//!
//! This module owns the calibration's shapes and its store: the [`CalibrationKey`] (what makes
//! two runs comparable: eval set, runner profile, model, decoys, K, grading settings), the
//! [`CalibrationRecord`] computed from the repeats' summaries (false-verdict rate with a Wilson
//! interval, spread of the lift across repeats), the state file `calibrations.json` beside the
//! baseline store, and the [`CalibrationLookup`] a `run` records in its manifest so that every
//! export shows it without looking anything up at export time. Running the repeats is the
//! pipeline's job (`pipeline::calibrate`), through the same code path as `run`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::analysis::{CONFIDENCE, Summary, Verdict};
use crate::features::asset::fingerprint::sha256_digest;
use crate::features::registry::RegistryError;
use crate::features::registry::state::{check_schema, lock_for, read_json, write_state_json};
use crate::record::{
    ArmDesign, CalibrationArm, CalibrationBrief, CalibrationLookup, DecoyInfo, Manifest, Spread,
};

/// File name of the calibration store in the state folder.
pub(crate) const STORE_FILE: &str = "calibrations.json";
/// Schema version of `calibrations.json`.
pub(crate) const STORE_SCHEMA_VERSION: u32 = 1;
/// Default `--repeats` of `skill-lift calibrate`.
pub(crate) const DEFAULT_REPEATS: u32 = 10;

/// Why a calibration could not be read or recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CalibrationError {
    #[error(transparent)]
    State(#[from] RegistryError),
    #[error("{0}: not an A/A design (calibration needs both arms staged the same way)")]
    NotAa(&'static str),
}

impl CalibrationArm {
    /// The arm design that stages both arms this way.
    pub fn design(self) -> ArmDesign {
        match self {
            CalibrationArm::WithoutSkill => ArmDesign::AaWithoutTarget,
            CalibrationArm::WithSkill => ArmDesign::AaWithTarget,
        }
    }

    /// The calibration arm of an A/A design (`None` for the paired design).
    pub fn of_design(design: ArmDesign) -> Option<Self> {
        match design {
            ArmDesign::Paired => None,
            ArmDesign::AaWithoutTarget => Some(CalibrationArm::WithoutSkill),
            ArmDesign::AaWithTarget => Some(CalibrationArm::WithSkill),
        }
    }

    /// Words for reports: `both arms without the target`.
    pub fn describe(self) -> &'static str {
        match self {
            CalibrationArm::WithoutSkill => "both arms without the target",
            CalibrationArm::WithSkill => "both arms with the target",
        }
    }
}

impl std::str::FromStr for CalibrationArm {
    type Err = crate::values::unknown_name::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "without-skill" | "without_skill" => Ok(Self::WithoutSkill),
            "with-skill" | "with_skill" => Ok(Self::WithSkill),
            other => Err(crate::values::unknown_name::UnknownName::new(
                "arm",
                other,
                ["without-skill", "with-skill"],
            )),
        }
    }
}

/// What makes a calibration apply to a run: the same eval set (and drafts setting), runner
/// profile, model, decoys, K and grading settings. The target skill's fingerprint is not part
/// of it: an A/A control without the target does not depend on it (a with-target calibration
/// records the fingerprint and applies only while it is unchanged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CalibrationKey {
    /// `sha256:<hex>` of the eval file.
    pub eval_set_digest: String,
    /// Whether draft cases were included.
    pub allow_draft: bool,
    /// Runner profile name (for people; the digest decides).
    pub runner: String,
    /// `sha256:<hex>` of the runner profile file.
    pub runner_profile_digest: String,
    /// Requested model.
    pub model: String,
    /// Decoy source (`builtin`, `none`, a folder) and the staged decoys' fingerprints.
    pub decoys_source: String,
    pub decoys: Vec<DecoyInfo>,
    /// Attempts per case per arm.
    pub k: u32,
    /// `sha256:<hex>` of the grading settings (judge profiles by digest, not by path).
    pub grading_digest: String,
}

impl CalibrationKey {
    /// The key of the run `manifest` describes.
    pub(crate) fn of_manifest(manifest: &Manifest) -> Self {
        let mut grading = manifest.grading.clone();
        for judge in &mut grading.judges {
            judge.profile_path = PathBuf::new();
        }
        let grading_json = serde_json::to_vec(&grading).expect("grading settings serialize");
        Self {
            eval_set_digest: manifest.eval_set.digest.clone(),
            allow_draft: manifest.eval_set.allow_draft,
            runner: manifest.runner.name.clone(),
            runner_profile_digest: manifest.runner.profile_digest.clone(),
            model: manifest.model.clone(),
            decoys_source: manifest.decoys.source.clone(),
            decoys: manifest.decoys.skills.clone(),
            k: manifest.k,
            grading_digest: sha256_digest(&grading_json),
        }
    }

    /// `sha256:<hex>` of the key (the lookup compares this).
    pub(crate) fn digest(&self) -> String {
        sha256_digest(&serde_json::to_vec(self).expect("key serializes"))
    }
}

/// One A/A repeat's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RepeatResult {
    /// The repeat's run id (its run folder's name).
    pub run_id: String,
    /// The repeat's verdict on the pass-rate lift.
    pub verdict: Verdict,
    /// The pass-rate lift estimate (fraction), `None` when no case was scored in both arms.
    pub estimate: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Interval method the analysis chose.
    pub method: String,
    pub p_value: Option<f64>,
    /// Paired cases.
    pub n_cases: usize,
    /// Each metric's (and the composite's) lift estimate.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metric_estimates: BTreeMap<String, f64>,
}

impl RepeatResult {
    /// The repeat result of one repeat's summary.
    pub(crate) fn of_summary(summary: &Summary) -> Self {
        Self {
            run_id: summary.run_id.clone(),
            verdict: summary.lift.verdict,
            estimate: summary.lift.estimate,
            ci_low: summary.lift.ci_low,
            ci_high: summary.lift.ci_high,
            method: summary.lift.method.clone(),
            p_value: summary.lift.p_value,
            n_cases: summary.lift.n_cases,
            metric_estimates: summary
                .metric_lifts
                .iter()
                .filter_map(|m| m.estimate.map(|e| (m.metric.clone(), e)))
                .collect(),
        }
    }

    /// Whether the verdict claims a difference that an A/A run cannot have.
    pub(crate) fn is_false_verdict(&self) -> bool {
        matches!(self.verdict, Verdict::Improved | Verdict::Regressed)
    }

    /// Whether the repeat measured a lift at all (some case scored in both arms).
    pub(crate) fn measured(&self) -> bool {
        self.n_cases > 0 && self.estimate.is_some()
    }
}

impl Spread {
    fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = (values.len() > 1)
            .then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
        Some(Self {
            mean,
            sd,
            repeats: values.len(),
        })
    }
}

/// A finished calibration: one entry of `calibrations.json`, also written as
/// `calibration-result.json` in the calibration folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CalibrationRecord {
    /// `sha256:<hex>` of [`CalibrationKey`].
    pub key_digest: String,
    pub key: CalibrationKey,
    /// Which identical arms ran.
    pub arm: CalibrationArm,
    /// The skill whose eval set ran, and its fingerprint at the time (a with-skill calibration
    /// applies only while it is unchanged).
    pub asset: String,
    pub fingerprint: String,
    /// When the calibration finished (UTC) and which skill-lift analyzed it (verdict rules
    /// change between versions).
    pub created_at: DateTime<Utc>,
    pub skill_lift_version: String,
    /// The calibration folder holding one run folder per repeat.
    pub calibration_dir: PathBuf,
    /// Repeats planned (`--repeats`).
    pub repeats_planned: u32,
    /// Repeats that measured a lift (the denominator of the rate).
    pub repeats: u32,
    /// Repeats whose verdict was `improved` or `regressed`.
    pub false_verdicts: u32,
    /// `false_verdicts / repeats` (fraction).
    pub false_verdict_rate: f64,
    /// Wilson 95% interval of the rate.
    pub rate_ci_low: f64,
    pub rate_ci_high: f64,
    /// Spread of the pass-rate lift estimate across repeats.
    pub lift_spread: Option<Spread>,
    /// Spread of each metric's (and the composite's) lift estimate across repeats.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metric_spread: BTreeMap<String, Spread>,
    /// Every repeat, in order.
    pub repeat_results: Vec<RepeatResult>,
}

impl CalibrationRecord {
    /// The record of a calibration of `manifest`'s suite (any repeat's manifest: they share
    /// the key) from its repeats' results. Repeats that measured nothing are listed but not
    /// counted in the rate.
    pub(crate) fn from_repeats(
        manifest: &Manifest,
        calibration_dir: &Path,
        repeats_planned: u32,
        repeat_results: Vec<RepeatResult>,
    ) -> Result<Self, CalibrationError> {
        let arm = CalibrationArm::of_design(manifest.arm_design)
            .ok_or(CalibrationError::NotAa("the repeats' manifest"))?;
        let key = CalibrationKey::of_manifest(manifest);
        let measured: Vec<&RepeatResult> = repeat_results.iter().filter(|r| r.measured()).collect();
        let repeats = measured.len() as u32;
        let false_verdicts = measured.iter().filter(|r| r.is_false_verdict()).count() as u32;
        let interval = crate::analysis::stats::wilson_interval(
            false_verdicts as u64,
            repeats as u64,
            CONFIDENCE,
        );
        let estimates: Vec<f64> = measured.iter().filter_map(|r| r.estimate).collect();
        let mut by_metric: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for repeat in &measured {
            for (metric, estimate) in &repeat.metric_estimates {
                by_metric.entry(metric.clone()).or_default().push(*estimate);
            }
        }
        Ok(Self {
            key_digest: key.digest(),
            key,
            arm,
            asset: manifest.asset.name.clone(),
            fingerprint: manifest.asset.fingerprint.clone(),
            created_at: Utc::now(),
            skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
            calibration_dir: calibration_dir.to_path_buf(),
            repeats_planned,
            repeats,
            false_verdicts,
            false_verdict_rate: if repeats > 0 {
                false_verdicts as f64 / repeats as f64
            } else {
                0.0
            },
            rate_ci_low: interval.map(|i| i.low).unwrap_or(0.0),
            rate_ci_high: interval.map(|i| i.high).unwrap_or(1.0),
            lift_spread: Spread::of(&estimates),
            metric_spread: by_metric
                .into_iter()
                .filter_map(|(metric, values)| Spread::of(&values).map(|s| (metric, s)))
                .collect(),
            repeat_results,
        })
    }

    /// One line: `A/A false-verdict rate 10.0% over 10 repeats (95% CI [1.8%, 40.4%]; spread
    /// of the lift: sd 4.2 pp)`.
    pub(crate) fn headline(&self) -> String {
        let spread = match self.lift_spread.as_ref().and_then(|s| s.sd) {
            Some(sd) => format!("spread of the lift: sd {:.1} pp", sd * 100.0),
            None => "spread of the lift: n/a with one repeat".to_string(),
        };
        format!(
            "A/A false-verdict rate {:.1}% over {} repeats (95% CI [{:.1}%, {:.1}%]; {spread})",
            self.false_verdict_rate * 100.0,
            self.repeats,
            self.rate_ci_low * 100.0,
            self.rate_ci_high * 100.0,
        )
    }
}

/// `calibrations.json`: the latest calibration per key and arm (and fingerprint, for
/// with-skill calibrations).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CalibrationStore {
    pub schema_version: u32,
    pub records: Vec<CalibrationRecord>,
}

fn same_slot(a: &CalibrationRecord, b: &CalibrationRecord) -> bool {
    a.key_digest == b.key_digest
        && a.arm == b.arm
        && (a.arm == CalibrationArm::WithoutSkill || a.fingerprint == b.fingerprint)
}

/// Read the store in `state` (empty when absent).
pub(crate) fn read_store(state: &Path) -> Result<CalibrationStore, CalibrationError> {
    let path = state.join(STORE_FILE);
    let store: Option<CalibrationStore> = read_json(&path, "a calibration store")?;
    let store = store.unwrap_or(CalibrationStore {
        schema_version: STORE_SCHEMA_VERSION,
        records: Vec::new(),
    });
    check_schema(&path, store.schema_version, STORE_SCHEMA_VERSION)?;
    Ok(store)
}

/// Record `record` in the store in `state` (under its lock), replacing an earlier calibration
/// of the same key and arm. Returns the store's path.
pub(crate) fn record(
    state: &Path,
    record: &CalibrationRecord,
) -> Result<PathBuf, CalibrationError> {
    let path = state.join(STORE_FILE);
    let _lock = lock_for(&path)?;
    let mut store = read_store(state)?;
    store.schema_version = STORE_SCHEMA_VERSION;
    store
        .records
        .retain(|existing| !same_slot(existing, record));
    store.records.push(record.clone());
    write_state_json(&path, &store)?;
    Ok(path)
}

impl CalibrationLookup {
    /// Whether a calibration was found.
    pub fn is_calibrated(&self) -> bool {
        self.record.is_some()
    }
}

/// The `skill-lift calibrate` command that calibrates the suite of the run `manifest`
/// describes (shown when a run finds no calibration).
pub(crate) fn calibrate_command(manifest: &Manifest) -> String {
    use crate::values::shell::{shell_path, shell_word};
    let mut command = format!(
        "skill-lift calibrate {} --runner {} --model {} -k {}",
        shell_path(&manifest.asset.path),
        runner_argument(&manifest.runner),
        shell_word(&manifest.model),
        manifest.k
    );
    if manifest.eval_set.path != crate::features::evalset::default_eval_path(&manifest.asset.path) {
        command.push_str(&format!(" --evals {}", shell_path(&manifest.eval_set.path)));
    }
    if manifest.eval_set.allow_draft {
        command.push_str(" --allow-draft");
    }
    match manifest.decoys.source.as_str() {
        "builtin" => {}
        "none" => command.push_str(" --no-decoys"),
        folder => command.push_str(&format!(" --decoys {}", shell_word(folder))),
    }
    if manifest.grading != crate::record::GradingSettings::new() {
        command.push_str(" plus the run's grading flags");
    }
    command
}

/// `--runner`'s value that finds the run's profile again from the current folder: the profile's
/// name when that name resolves to the same file (or built-in), else the profile's path.
fn runner_argument(runner: &crate::record::RunnerInfo) -> String {
    let same_file = |found: &Path| {
        found == runner.profile_path
            || matches!(
                (found.canonicalize(), runner.profile_path.canonicalize()),
                (Ok(a), Ok(b)) if a == b
            )
    };
    match crate::features::runner::profile::resolve_profile_path(&runner.name) {
        Ok(found) if same_file(&found) => {
            crate::values::shell::shell_word(&runner.name).into_owned()
        }
        _ => crate::values::shell::shell_path(&runner.profile_path),
    }
}

/// Look up the calibration of the run `manifest` describes in `store`.
pub(crate) fn lookup_in(store: &CalibrationStore, manifest: &Manifest) -> CalibrationLookup {
    let hint = calibrate_command(manifest);
    let key_digest = CalibrationKey::of_manifest(manifest).digest();
    let matching = |arm: CalibrationArm| {
        store
            .records
            .iter()
            .filter(|r| r.key_digest == key_digest && r.arm == arm)
            .filter(|r| {
                arm == CalibrationArm::WithoutSkill || r.fingerprint == manifest.asset.fingerprint
            })
            .max_by_key(|r| r.created_at)
    };
    let found =
        matching(CalibrationArm::WithoutSkill).or_else(|| matching(CalibrationArm::WithSkill));
    match found {
        Some(record) => CalibrationLookup {
            key_digest,
            message: format!(
                "calibrated: {} ({}, {} on {})",
                record.headline(),
                record.arm.describe(),
                record.calibration_dir.display(),
                record.created_at.format("%Y-%m-%d")
            ),
            record: Some(CalibrationBrief {
                arm: record.arm,
                created_at: record.created_at,
                skill_lift_version: record.skill_lift_version.clone(),
                calibration_dir: record.calibration_dir.clone(),
                repeats: record.repeats,
                false_verdicts: record.false_verdicts,
                false_verdict_rate: record.false_verdict_rate,
                rate_ci_low: record.rate_ci_low,
                rate_ci_high: record.rate_ci_high,
                lift_spread: record.lift_spread.clone(),
                metric_spread: record.metric_spread.clone(),
            }),
        },
        None => CalibrationLookup {
            key_digest,
            record: None,
            message: format!(
                "uncalibrated: no A/A calibration of this suite on this runner, model, decoys, K and grading settings, so its false-verdict rate is unknown; measure it with `{hint}`"
            ),
        },
    }
}

/// Look up the calibration of `manifest`'s suite in the state folder `state`. An unreadable
/// store yields an uncalibrated lookup that says why (a run never fails over it).
pub(crate) fn lookup(state: &Path, manifest: &Manifest) -> CalibrationLookup {
    match read_store(state) {
        Ok(store) => lookup_in(&store, manifest),
        Err(error) => unavailable(
            manifest,
            &format!("the calibration store could not be read ({error})"),
        ),
    }
}

/// An uncalibrated lookup for a run whose calibration store could not be consulted, saying
/// why.
pub(crate) fn unavailable(manifest: &Manifest, reason: &str) -> CalibrationLookup {
    CalibrationLookup {
        key_digest: CalibrationKey::of_manifest(manifest).digest(),
        record: None,
        message: format!("uncalibrated: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{AssetInfo, EvalSetInfo, RunnerInfo};

    fn manifest(design: ArmDesign, k: u32) -> Manifest {
        let base = crate::test_support::manifest(&["a".into()], k);
        Manifest {
            asset: AssetInfo {
                fingerprint: "sha256:fp1".into(),
                ..base.asset.clone()
            },
            eval_set: EvalSetInfo {
                path: "/x/evals/evals.json".into(),
                digest: "sha256:evals".into(),
                ..base.eval_set.clone()
            },
            runner: RunnerInfo {
                profile_digest: "sha256:profile".into(),
                ..base.runner.clone()
            },
            arm_design: design,
            grading: crate::record::GradingSettings::new(),
            ..base
        }
    }

    fn repeat(verdict: Verdict, estimate: Option<f64>) -> RepeatResult {
        RepeatResult {
            run_id: "repeat".into(),
            verdict,
            estimate,
            ci_low: None,
            ci_high: None,
            method: "newcombe".into(),
            p_value: None,
            n_cases: if estimate.is_some() { 10 } else { 0 },
            metric_estimates: estimate
                .map(|e| BTreeMap::from([("composite".to_string(), e / 2.0)]))
                .unwrap_or_default(),
        }
    }

    #[test]
    fn the_rate_counts_improved_and_regressed_among_measured_repeats() {
        let repeats = vec![
            repeat(Verdict::Improved, Some(0.3)),
            repeat(Verdict::Inconclusive, Some(0.0)),
            repeat(Verdict::Regressed, Some(-0.3)),
            repeat(Verdict::Inconclusive, Some(0.0)),
            // Measured nothing: listed, not counted.
            repeat(Verdict::Inconclusive, None),
        ];
        let record = CalibrationRecord::from_repeats(
            &manifest(ArmDesign::AaWithoutTarget, 1),
            Path::new("/cal"),
            5,
            repeats,
        )
        .unwrap();
        assert_eq!((record.repeats, record.false_verdicts), (4, 2));
        assert_eq!(record.false_verdict_rate, 0.5);
        // Wilson 95% for 2/4 (statistics.md §4): [0.150, 0.850].
        assert!(
            (record.rate_ci_low - 0.1500).abs() < 1e-3,
            "{}",
            record.rate_ci_low
        );
        assert!(
            (record.rate_ci_high - 0.8500).abs() < 1e-3,
            "{}",
            record.rate_ci_high
        );
        let spread = record.lift_spread.as_ref().unwrap();
        assert_eq!(spread.mean, 0.0);
        // sd of (0.3, 0, −0.3, 0) with n − 1 = 3: sqrt(0.18 / 3).
        assert!((spread.sd.unwrap() - (0.18f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!(
            (record.metric_spread["composite"].sd.unwrap() - (0.045f64 / 3.0).sqrt()).abs() < 1e-12
        );
        assert_eq!(record.repeat_results.len(), 5);
        assert!(
            record
                .headline()
                .starts_with("A/A false-verdict rate 50.0% over 4 repeats")
        );
        // A paired run is no calibration.
        assert!(
            CalibrationRecord::from_repeats(
                &manifest(ArmDesign::Paired, 1),
                Path::new("/c"),
                1,
                vec![]
            )
            .is_err()
        );
    }

    #[test]
    fn the_calibrate_command_pastes_back_into_a_shell() {
        let mut run = manifest(ArmDesign::Paired, 1);
        run.asset.path = "/skills/my skill".into();
        run.model = "model's name".into();
        // A built-in profile is found again by its name.
        run.runner.name = "local".into();
        run.runner.profile_path =
            crate::features::runner::profile::resolve_profile_path("local").unwrap();
        let command = calibrate_command(&run);
        assert!(
            command.starts_with(
                "skill-lift calibrate '/skills/my skill' --runner local --model 'model'\\''s name' -k 1"
            ),
            "{command}"
        );
    }

    #[test]
    fn a_run_finds_the_calibration_of_its_own_suite_only() {
        let state = tempfile::tempdir().unwrap();
        let aa = manifest(ArmDesign::AaWithoutTarget, 1);
        let record_of = |manifest: &Manifest, verdicts: &[Verdict]| {
            let repeats = verdicts.iter().map(|v| repeat(*v, Some(0.0))).collect();
            CalibrationRecord::from_repeats(
                manifest,
                Path::new("/cal"),
                verdicts.len() as u32,
                repeats,
            )
            .unwrap()
        };
        let run = manifest(ArmDesign::Paired, 1);
        let found = lookup(state.path(), &run);
        assert!(!found.is_calibrated());
        assert!(
            found.message.starts_with("uncalibrated:"),
            "{}",
            found.message
        );
        assert!(
            found
                .message
                .contains("skill-lift calibrate /x --runner /x/mock.toml --model m -k 1"),
            "a profile that its name does not find again is named by its path: {}",
            found.message
        );

        record(
            state.path(),
            &record_of(&aa, &[Verdict::Inconclusive, Verdict::Improved]),
        )
        .unwrap();
        let found = lookup(state.path(), &run);
        assert!(found.is_calibrated());
        assert!(
            found
                .message
                .starts_with("calibrated: A/A false-verdict rate 50.0% over 2 repeats"),
            "{}",
            found.message
        );
        // A new calibration of the same key replaces the old one.
        record(state.path(), &record_of(&aa, &[Verdict::Inconclusive; 3])).unwrap();
        assert_eq!(read_store(state.path()).unwrap().records.len(), 1);
        assert_eq!(lookup(state.path(), &run).record.unwrap().repeats, 3);
        // Another K, model, grading or eval set is another suite.
        let mut other = manifest(ArmDesign::Paired, 3);
        assert!(!lookup(state.path(), &other).is_calibrated());
        other.k = 1;
        other.grading.pass_threshold = 0.7;
        assert!(!lookup(state.path(), &other).is_calibrated());
        other.grading.pass_threshold = 0.5;
        other.model = "other".into();
        assert!(!lookup(state.path(), &other).is_calibrated());
        // The skill's fingerprint does not matter to a without-skill calibration ...
        let mut edited = manifest(ArmDesign::Paired, 1);
        edited.asset.fingerprint = "sha256:fp2".into();
        assert!(lookup(state.path(), &edited).is_calibrated());
        // ... but does to a with-skill one.
        let other_state = tempfile::tempdir().unwrap();
        let with = manifest(ArmDesign::AaWithTarget, 1);
        record(
            other_state.path(),
            &record_of(&with, &[Verdict::Inconclusive]),
        )
        .unwrap();
        assert!(lookup(other_state.path(), &run).is_calibrated());
        assert!(!lookup(other_state.path(), &edited).is_calibrated());
        // A malformed store is named, and the run stays uncalibrated.
        std::fs::write(other_state.path().join(STORE_FILE), "{oops").unwrap();
        let found = lookup(other_state.path(), &run);
        assert!(!found.is_calibrated());
        assert!(found.message.contains(STORE_FILE), "{}", found.message);
    }
}
