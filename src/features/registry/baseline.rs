//! `baseline-results.json`: the baseline store, shared across hosts and keyed by asset name.
//! Each entry is one verdict under (fingerprint, calibre, model, runner, case, arm, attempt), from
//! a recorded `skill-lift run` ([`record_run`]) or a manual replay ([`merge_file`]). Writes are
//! atomic under an exclusive lock; a malformed store or merge file is an error naming the file and
//! nothing is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::RegistryError;
use super::state::{check_schema, lock_for, read_json, write_state_json};
use crate::record::{Manifest, Outcome, TrialRecord};

/// Version of the baseline store format.
pub const BASELINE_SCHEMA_VERSION: u32 = 1;
/// File name of the store in the state folder.
pub const BASELINE_FILE: &str = "baseline-results.json";

/// Arms a verdict may belong to.
pub const ARMS: [&str; 3] = ["with_skill", "without_skill", "previous_version"];

/// Where a verdict came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntrySource {
    /// A recorded `skill-lift run`.
    Run,
    /// `skill-lift baseline merge` (a manual replay).
    Manual,
}

/// One deterministic check's verdict, kept for attribution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckVerdict {
    #[serde(rename = "type")]
    pub check_type: String,
    pub passed: bool,
}

/// One recorded verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineEntry {
    pub fingerprint: String,
    pub calibre: String,
    /// The model requested (the runner profile's, or `--model`); manual verdicts: as given.
    pub model: String,
    /// The model the server or agent CLI reported answering (`observed_model` of the trial
    /// record); `None` when it reported none, for manual verdicts and for entries stored before
    /// it was kept. `check` reads it as evidence of the model a host runs under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_model: Option<String>,
    /// When the trial started (`started_at` of the trial record); `None` for manual verdicts
    /// and entries stored before it was kept (then `recorded_at` stands in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_at: Option<DateTime<Utc>>,
    pub runner: String,
    pub case_id: String,
    /// The `sha256:` digest of the eval set the case came from (runs); `None` for manual
    /// verdicts and entries stored before it was recorded. `regress` never pools verdicts of
    /// different eval sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_set: Option<String>,
    /// `with_skill`, `without_skill` or `previous_version`.
    pub arm: String,
    pub attempt: u32,
    /// pass | fail | unscoreable | not_gradable (only pass/fail count in rates).
    pub verdict: Outcome,
    pub source: EntrySource,
    /// The run id (runs) or `None` (manual).
    pub run_id: Option<String>,
    pub recorded_at: DateTime<Utc>,
    /// Whether the target skill was activated in this trial (runs only).
    #[serde(default)]
    pub activated: Option<bool>,
    /// Deterministic check verdicts (runs only).
    #[serde(default)]
    pub checks: Vec<CheckVerdict>,
    /// Tool calls made (runs only).
    #[serde(default)]
    pub tool_calls: Option<usize>,
    /// Tool calls whose result was an error (runs recorded since it was counted; `None` for
    /// manual verdicts and older entries). `regress` attributes a rise to the tool description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_errors: Option<usize>,
    /// Why it failed or was unscoreable.
    #[serde(default)]
    pub reason: Option<String>,
    /// What the trial cost in USD (runs only): the cost its runner reported, else its input and
    /// output tokens at the run's `[price]` table; `None` when neither is known, and in entries
    /// stored before costs were kept. The value card's marginal cost is the paired difference
    /// of these between the arms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// What the LLM judges spent on this trial in USD (the judge profile's `[price]`); `None`
    /// without a judge, for a trial reused from an earlier run (it cost nothing here), when
    /// the judge is unpriced, and in entries stored before judge spend was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_cost_usd: Option<f64>,
}

impl BaselineEntry {
    fn key(&self) -> (&str, &str, &str, &str, &str, &str, u32, Option<&str>) {
        (
            &self.fingerprint,
            &self.calibre,
            &self.model,
            &self.runner,
            &self.case_id,
            &self.arm,
            self.attempt,
            self.run_id.as_deref(),
        )
    }
}

/// One asset's verdicts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AssetBaseline {
    pub entries: Vec<BaselineEntry>,
}

/// `baseline-results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineStore {
    pub schema_version: u32,
    pub assets: BTreeMap<String, AssetBaseline>,
}

impl Default for BaselineStore {
    fn default() -> Self {
        Self {
            schema_version: BASELINE_SCHEMA_VERSION,
            assets: BTreeMap::new(),
        }
    }
}

/// The store's path in the state folder.
pub fn baseline_path(state_dir: &Path) -> PathBuf {
    state_dir.join(BASELINE_FILE)
}

/// Read the store (empty when it does not exist).
pub fn read_store(state_dir: &Path) -> Result<BaselineStore, RegistryError> {
    let path = baseline_path(state_dir);
    let store: Option<BaselineStore> = read_json(&path, "the baseline store")?;
    let store = store.unwrap_or_default();
    check_schema(&path, store.schema_version, BASELINE_SCHEMA_VERSION)?;
    Ok(store)
}

fn update_store<T>(
    state_dir: &Path,
    change: impl FnOnce(&mut BaselineStore) -> Result<T, RegistryError>,
) -> Result<T, RegistryError> {
    let path = baseline_path(state_dir);
    let _lock = lock_for(&path)?;
    let mut store = read_store(state_dir)?;
    let result = change(&mut store)?;
    write_state_json(&path, &store)?;
    Ok(result)
}

/// What [`record_run`] stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRun {
    pub asset: String,
    pub run_id: String,
    /// Entries now stored for this run.
    pub entries: usize,
    /// Entries of an earlier ingestion of the same run that were replaced.
    pub replaced: usize,
    pub store: PathBuf,
}

/// The baseline entries one recorded run contributes (one per `with_skill` / `without_skill`
/// trial record), without writing
/// anything: what [`record_run`] stores, and what `skill-lift lint --against RUN_DIR` reads.
pub fn entries_from_run(
    manifest: &Manifest,
    records: &[TrialRecord],
    recorded_at: DateTime<Utc>,
) -> Vec<BaselineEntry> {
    let asset = &manifest.asset.name;
    let price = manifest.stopping.as_ref().and_then(|s| s.price.as_ref());
    // The store holds verdicts of this fingerprint with and without it: the other arms of a
    // run (a previous version, exposure variants) are no verdicts of this version as installed.
    records
        .iter()
        .filter(|record| crate::record::Arm::PAIRED.contains(&record.arm))
        .map(|record| BaselineEntry {
            fingerprint: manifest.asset.fingerprint.clone(),
            calibre: manifest.asset.calibre.clone(),
            model: record.model.clone(),
            observed_model: record.observed_model.clone(),
            trial_at: Some(record.started_at),
            runner: record.runner.clone(),
            case_id: record.case_id.clone(),
            eval_set: Some(manifest.eval_set.digest.clone()),
            arm: record.arm.as_str().to_string(),
            attempt: record.attempt,
            verdict: record.outcome,
            source: EntrySource::Run,
            run_id: Some(manifest.run_id.clone()),
            recorded_at,
            activated: Some(record.activated_skills.iter().any(|s| s == asset)),
            checks: record
                .checks
                .iter()
                .map(|c| CheckVerdict {
                    check_type: c.check_type.clone(),
                    passed: c.passed,
                })
                .collect(),
            tool_calls: Some(record.tool_calls),
            tool_call_errors: Some(record.tool_call_errors),
            reason: record.reason.clone(),
            cost_usd: trial_cost_usd(record, price),
            judge_cost_usd: record
                .judge_usage
                .as_ref()
                .filter(|_| record.reused_from.is_none())
                .and_then(|spend| spend.usage.cost_usd),
        })
        .collect()
}

/// A trial's cost in USD: what its runner reported, else its input and output tokens at
/// `price` (USD per million tokens), else `None`; a trial that made no request costs 0. The
/// same rule as a run's spend (`run --max-cost-usd`).
fn trial_cost_usd(record: &TrialRecord, price: Option<&crate::record::PriceTable>) -> Option<f64> {
    if let Some(cost) = record.usage.cost_usd {
        return Some(cost);
    }
    let usage = &record.usage;
    if usage.input_tokens.is_none() && usage.output_tokens.is_none() {
        return (record.requests == 0).then_some(0.0);
    }
    price.map(|price| {
        (usage.input_tokens.unwrap_or(0) as f64 * price.input_usd_per_million_tokens
            + usage.output_tokens.unwrap_or(0) as f64 * price.output_usd_per_million_tokens)
            / 1e6
    })
}

/// Feed the baseline store from a recorded run: one entry per trial record, keyed by the run's
/// fingerprint and calibre and each record's model, runner, case, arm and attempt (the
/// `with_skill` and `without_skill` arms only). Idempotent:
/// entries from an earlier call for the same run id are replaced (so `run --resume` and
/// `report` can call it again). The hook `skill-lift run` calls after recording.
pub fn record_run(
    state_dir: &Path,
    manifest: &Manifest,
    records: &[TrialRecord],
) -> Result<RecordedRun, RegistryError> {
    if !manifest.arm_design.is_paired() {
        return Err(RegistryError::Invalid {
            path: PathBuf::from(&manifest.run_id),
            message: "an A/A repeat of `skill-lift calibrate` (both arms staged the same way) is no evaluation of the skill; the baseline store takes paired runs only".to_string(),
        });
    }
    let asset = manifest.asset.name.clone();
    let entries = entries_from_run(manifest, records, Utc::now());
    let count = entries.len();
    let replaced = update_store(state_dir, |store| {
        let slot = store.assets.entry(asset.clone()).or_default();
        let before = slot.entries.len();
        slot.entries
            .retain(|e| e.run_id.as_deref() != Some(manifest.run_id.as_str()));
        let replaced = before - slot.entries.len();
        slot.entries.extend(entries);
        Ok(replaced)
    })?;
    Ok(RecordedRun {
        asset,
        run_id: manifest.run_id.clone(),
        entries: count,
        replaced,
        store: baseline_path(state_dir),
    })
}

/// One verdict of a manual replay file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManualVerdict {
    pub case_id: String,
    /// `pass`, `fail`, `unscoreable`, or null (not replayed yet: skipped).
    pub verdict: Option<Outcome>,
    /// `active` (default) or `draft`.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default = "default_arm")]
    pub arm: String,
    #[serde(default = "default_attempt")]
    pub attempt: u32,
    /// Free text; not stored.
    #[serde(default)]
    pub note: Option<String>,
    /// The prompt, copied by `checklist` for the person replaying; not stored.
    #[serde(default)]
    pub prompt: Option<String>,
}

fn default_arm() -> String {
    "with_skill".to_string()
}

fn default_attempt() -> u32 {
    1
}

/// A manual replay file: verdicts of one asset under one fingerprint and model.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManualReplay {
    pub asset: String,
    pub fingerprint: String,
    #[serde(default = "default_calibre")]
    pub calibre: String,
    pub model: String,
    #[serde(default = "default_runner")]
    pub runner: String,
    pub verdicts: Vec<ManualVerdict>,
}

fn default_calibre() -> String {
    crate::features::asset::fingerprint::Calibre::default()
        .name()
        .to_string()
}

fn default_runner() -> String {
    "manual".to_string()
}

/// One file holds one replay or a list of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum ReplayFile {
    One(ManualReplay),
    Many(Vec<ManualReplay>),
}

/// What [`merge_file`] did, per asset.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct MergeReport {
    pub assets: BTreeMap<String, MergedAsset>,
}

/// Counts for one asset of a merge.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct MergedAsset {
    pub added: usize,
    /// Existing entries overwritten (same key), or removed by `--replace`.
    pub replaced: usize,
    pub skipped_draft: usize,
    pub skipped_no_verdict: usize,
}

/// Merge a manual replay file into the store. `replace` drops every existing entry of each asset
/// in the file first; otherwise entries with the same key are overwritten. Draft cases are
/// skipped unless `allow_draft`. A malformed file is an error naming it; nothing is written.
pub fn merge_file(
    state_dir: &Path,
    file: &Path,
    replace: bool,
    allow_draft: bool,
) -> Result<MergeReport, RegistryError> {
    let parsed: ReplayFile = read_json(file, "a baseline replay file (expected {asset, fingerprint, model, verdicts: [{case_id, verdict}]} or a list of them)")?
        .ok_or_else(|| RegistryError::Io {
            path: file.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        })?;
    let replays = match parsed {
        ReplayFile::One(one) => vec![one],
        ReplayFile::Many(many) => many,
    };
    let invalid = |message: String| RegistryError::Invalid {
        path: file.to_path_buf(),
        message,
    };
    for replay in &replays {
        if replay.asset.trim().is_empty() || replay.model.trim().is_empty() {
            return Err(invalid("`asset` and `model` must not be empty".to_string()));
        }
        if !replay.fingerprint.starts_with("sha256:") {
            return Err(invalid(format!(
                "asset `{}`: `fingerprint` must be a `sha256:<hex>` digest (run `skill-lift baseline checklist --template` to get one)",
                replay.asset
            )));
        }
        for verdict in &replay.verdicts {
            if !ARMS.contains(&verdict.arm.as_str()) {
                return Err(invalid(format!(
                    "case `{}`: arm `{}` is not one of {}",
                    verdict.case_id,
                    verdict.arm,
                    ARMS.join(", ")
                )));
            }
            if let Some(status) = &verdict.status
                && status != "active"
                && status != "draft"
            {
                return Err(invalid(format!(
                    "case `{}`: status `{status}` must be active or draft",
                    verdict.case_id
                )));
            }
            if verdict.attempt == 0 {
                return Err(invalid(format!(
                    "case `{}`: attempt counts from 1",
                    verdict.case_id
                )));
            }
        }
    }
    let now = Utc::now();
    update_store(state_dir, |store| {
        let mut report = MergeReport::default();
        if replace {
            for replay in &replays {
                if let Some(slot) = store.assets.get_mut(&replay.asset) {
                    let counts = report.assets.entry(replay.asset.clone()).or_default();
                    counts.replaced += slot.entries.len();
                    slot.entries.clear();
                }
            }
        }
        for replay in replays {
            let counts = report.assets.entry(replay.asset.clone()).or_default();
            let slot = store.assets.entry(replay.asset.clone()).or_default();
            for verdict in replay.verdicts {
                if verdict.status.as_deref() == Some("draft") && !allow_draft {
                    counts.skipped_draft += 1;
                    continue;
                }
                let Some(outcome) = verdict.verdict else {
                    counts.skipped_no_verdict += 1;
                    continue;
                };
                let entry = BaselineEntry {
                    fingerprint: replay.fingerprint.clone(),
                    calibre: replay.calibre.clone(),
                    model: replay.model.clone(),
                    observed_model: None,
                    trial_at: None,
                    runner: replay.runner.clone(),
                    case_id: verdict.case_id,
                    eval_set: None,
                    arm: verdict.arm,
                    attempt: verdict.attempt,
                    verdict: outcome,
                    source: EntrySource::Manual,
                    run_id: None,
                    recorded_at: now,
                    activated: None,
                    checks: Vec::new(),
                    tool_calls: None,
                    tool_call_errors: None,
                    reason: verdict.note,
                    cost_usd: None,
                    judge_cost_usd: None,
                };
                let before = slot.entries.len();
                slot.entries.retain(|e| e.key() != entry.key());
                counts.replaced += before - slot.entries.len();
                slot.entries.push(entry);
                counts.added += 1;
            }
        }
        Ok(report)
    })
}

/// A replay checklist of an asset's golden cases (active ones, plus drafts when allowed), and
/// the matching merge template with `verdict: null` everywhere.
pub fn checklist(
    asset: &str,
    fingerprint: &str,
    calibre: &str,
    model: &str,
    eval_set: &crate::features::evalset::EvalSet,
    allow_draft: bool,
) -> (String, ManualReplay) {
    let cases = eval_set.runnable_cases(allow_draft);
    let mut text = format!(
        "# Replay checklist: {asset}\n\nfingerprint {fingerprint} ({calibre}), model {model}\neval set {} — {} case(s){}\n\nFor each case: start a fresh session with the skill installed, paste the prompt, judge the answer against the expectations, and record pass or fail in the template's `verdict`. Then run `skill-lift baseline merge FILE`.\n\n",
        eval_set.path.display(),
        cases.len(),
        if allow_draft { ", drafts included" } else { "" }
    );
    let mut verdicts = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        text.push_str(&format!("## [ ] {}. {}\n\n", index + 1, case.id));
        text.push_str(&format!(
            "Prompt:\n\n    {}\n\n",
            case.prompt.replace('\n', "\n    ")
        ));
        if let Some(expected) = &case.expected_output {
            text.push_str(&format!("Expected output: {expected}\n\n"));
        }
        for assertion in &case.assertions {
            text.push_str(&format!("- expect: {assertion}\n"));
        }
        for check in &case.checks {
            text.push_str(&format!(
                "- check: {}\n",
                serde_json::to_string(check).unwrap_or_default()
            ));
        }
        if let crate::features::evalset::ExpectedSkill::Named(skill) = &case.expected_skill {
            text.push_str(&format!("- should use skill: {skill}\n"));
        }
        text.push('\n');
        let draft = case.status == crate::features::evalset::CaseStatus::Draft;
        verdicts.push(ManualVerdict {
            case_id: case.id.clone(),
            verdict: None,
            status: Some(if draft { "draft" } else { "active" }.to_string()),
            arm: default_arm(),
            attempt: 1,
            note: None,
            prompt: Some(case.prompt.clone()),
        });
    }
    let template = ManualReplay {
        asset: asset.to_string(),
        fingerprint: fingerprint.to_string(),
        calibre: calibre.to_string(),
        model: model.to_string(),
        runner: default_runner(),
        verdicts,
    };
    (text, template)
}

/// What `baseline checklist` prints.
#[derive(Debug, Clone)]
pub struct ChecklistSettings {
    /// A skill folder, or an asset name from the host's registry.
    pub asset: String,
    /// The eval set file (default: the skill's `evals/evals.json`).
    pub evals: Option<PathBuf>,
    /// The model the replay runs under (default: the host's current bump).
    pub model: Option<String>,
    /// The fingerprint calibre's name.
    pub calibre: String,
    /// Include draft cases.
    pub allow_draft: bool,
    /// Write a merge template (`verdict: null` per case) to this file.
    pub template: Option<PathBuf>,
}

/// `baseline checklist`: print the replay checklist of an asset of host `host` (a profile of
/// the state folder `state`), and write its merge template when asked.
pub fn print_checklist(
    state: &Path,
    host: &str,
    settings: &ChecklistSettings,
) -> Result<(), RegistryError> {
    let calibre: crate::features::asset::fingerprint::Calibre =
        settings.calibre.parse().map_err(RegistryError::Calibre)?;
    let host = super::hosts::find_host(state, host)?.name;
    let registry = super::scan::read_registry(state, &host)?;
    let as_path = PathBuf::from(&settings.asset);
    let dir = match registry
        .as_ref()
        .and_then(|r| r.assets.get(&settings.asset))
    {
        _ if as_path.join("SKILL.md").is_file() => as_path,
        Some(entry) => entry.path.clone(),
        None => {
            let asset = settings.asset.clone();
            return Err(RegistryError::UnknownAsset { asset, host });
        }
    };
    let skill = crate::features::asset::load_skill(&dir)?;
    let model = settings
        .model
        .clone()
        .or_else(|| {
            registry
                .as_ref()?
                .model_bumps
                .last()
                .map(|b| b.model.clone())
        })
        .ok_or_else(|| RegistryError::NoModel { host: host.clone() })?;
    let evals = settings
        .evals
        .clone()
        .unwrap_or_else(|| crate::features::evalset::default_eval_path(&dir));
    let eval_set = crate::features::evalset::load_eval_set(&evals, &dir)?;
    let print = crate::features::asset::fingerprint::fingerprint(&dir, calibre)?;
    let (name, digest) = (&skill.name, &print.digest);
    let allow_draft = settings.allow_draft;
    let (text, template) = checklist(name, digest, calibre.name(), &model, &eval_set, allow_draft);
    crate::values::reporter::result(&text);
    if let Some(path) = &settings.template {
        super::state::write_json(path, &template)?;
        crate::values::reporter::result_line(&format!(
            "template: {} (fill each `verdict` with pass or fail, then `skill-lift baseline merge {}`)",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

/// `baseline merge`: merge a replay file into the store of `state` and print what each asset
/// received.
pub fn merge_replays(
    state: &Path,
    file: &Path,
    replace: bool,
    allow_draft: bool,
) -> Result<(), RegistryError> {
    let report = merge_file(state, file, replace, allow_draft)?;
    for (asset, counts) in &report.assets {
        crate::values::reporter::result_line(&format!(
            "{asset}: {} verdict(s) merged, {} replaced, {} draft skipped{}, {} without verdict skipped",
            counts.added,
            counts.replaced,
            counts.skipped_draft,
            if allow_draft {
                ""
            } else {
                " (use --allow-draft)"
            },
            counts.skipped_no_verdict
        ));
    }
    let store = baseline_path(state);
    crate::values::reporter::result_line(&format!("store: {}", store.display()));
    Ok(())
}

/// `baseline ingest`: add the trials of recorded run folders to the store of `state`, printing
/// one line per run.
pub fn ingest_runs(state: &Path, run_dirs: &[PathBuf]) -> Result<(), RegistryError> {
    for run_dir in run_dirs {
        let manifest = crate::record::read_manifest(run_dir)?;
        let (records, _) = crate::record::read_trials(&run_dir.join("trials.jsonl"))?;
        let recorded = record_run(state, &manifest, &records)?;
        crate::values::reporter::result_line(&format!(
            "{}: run {} → {} verdict(s) ({} replaced) in {}",
            recorded.asset,
            recorded.run_id,
            recorded.entries,
            recorded.replaced,
            recorded.store.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay_json(verdicts: &str) -> String {
        format!(
            r#"{{"asset": "a", "fingerprint": "sha256:ab", "model": "m1", "verdicts": [{verdicts}]}}"#
        )
    }

    #[test]
    fn merge_skips_drafts_and_null_verdicts_and_overwrites_same_key() {
        let state = tempfile::tempdir().unwrap();
        let file = state.path().join("replay.json");
        std::fs::write(
            &file,
            replay_json(
                r#"{"case_id": "c1", "verdict": "pass"}, {"case_id": "c2", "verdict": "fail", "status": "draft"},
                   {"case_id": "c3", "verdict": null}"#,
            ),
        )
        .unwrap();
        let report = merge_file(state.path(), &file, false, false).unwrap();
        assert_eq!(report.assets["a"].added, 1);
        assert_eq!(report.assets["a"].skipped_draft, 1);
        assert_eq!(report.assets["a"].skipped_no_verdict, 1);
        let report = merge_file(state.path(), &file, false, true).unwrap();
        assert_eq!(report.assets["a"].added, 2);
        assert_eq!(report.assets["a"].replaced, 1);
        assert_eq!(
            read_store(state.path()).unwrap().assets["a"].entries.len(),
            2
        );
        std::fs::write(
            &file,
            replay_json(r#"{"case_id": "c9", "verdict": "fail"}"#),
        )
        .unwrap();
        let report = merge_file(state.path(), &file, true, false).unwrap();
        assert_eq!(report.assets["a"].replaced, 2);
        assert_eq!(
            read_store(state.path()).unwrap().assets["a"].entries.len(),
            1
        );
    }

    #[test]
    fn malformed_merge_file_or_store_is_an_error_and_nothing_is_lost() {
        let state = tempfile::tempdir().unwrap();
        let file = state.path().join("replay.json");
        std::fs::write(
            &file,
            replay_json(r#"{"case_id": "c1", "verdict": "pass"}"#),
        )
        .unwrap();
        merge_file(state.path(), &file, false, false).unwrap();
        let before = std::fs::read(baseline_path(state.path())).unwrap();
        std::fs::write(
            &file,
            replay_json(r#"{"case_id": "c1", "verdict": "great"}"#),
        )
        .unwrap();
        let error = merge_file(state.path(), &file, true, false).unwrap_err();
        assert!(error.to_string().contains("replay.json"), "{error}");
        std::fs::write(
            &file,
            replay_json(r#"{"case_id": "c1", "verdict": "pass", "arm": "x"}"#),
        )
        .unwrap();
        assert!(merge_file(state.path(), &file, true, false).is_err());
        assert_eq!(std::fs::read(baseline_path(state.path())).unwrap(), before);
        std::fs::write(baseline_path(state.path()), "{broken").unwrap();
        let error = read_store(state.path()).unwrap_err();
        assert!(error.to_string().contains(BASELINE_FILE), "{error}");
    }
}
