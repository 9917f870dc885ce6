//! Baseline reuse (`run --reuse-baseline`): trials keyed by everything that determines them,
//! the store of reusable trials in the state folder (`trial-store.json`), and the import of
//! matching recorded trials into a new run instead of running them again.
//!
//! A **trial key** ([`TrialKeys`], one `sha256:` digest per arm and case) covers what decides a
//! trial's trajectory and its grade:
//!
//! - the harness: skill-lift's version and the run-folder format version;
//! - the runner profile's settings that shape the output (kind, base URL or command, program
//!   and arguments, system prompt, skill mode, temperature, seed, max tokens, turns, timeout,
//!   managed server, …), with the requested model in place of the profile's; settings that only
//!   pace or price the run (`concurrency`, retry policy, `price`, `context_tokens`, `vision`,
//!   `api_key_env`) are left out, so a changed price or concurrency still reuses;
//! - the arm (what it stages and how it exposes it, e.g. a nudge), the run's arm design, the
//!   target skill's name and the calibre, and the fingerprints of every staged skill: the decoys
//!   in every arm, plus the target in the arms that stage it and the previous version in
//!   `previous_version`;
//! - the case: its id, prompt, expectations, checks and assertions, and a digest of the bytes of
//!   every fixture file staged into its workspace (not the folder they were read from: two copies
//!   of a skill with the same fixtures share keys);
//! - the grading settings (judges with their profile digests, metrics, weights, custom graders,
//!   pass threshold).
//!
//! Graders are in the key rather than re-applied to a reused trajectory: deterministic checks
//! and custom graders read the trial's workspace, which is gone after the trial, so a grader
//! change cannot be re-applied faithfully to a stored trial; it runs the arm again instead. (A
//! stored run can still be re-graded as a whole with `skill-lift regrade`.)
//!
//! Not covered: the version of an agent CLI program itself (only its command line), and what a
//! model server serves under an unchanged model name and URL.
//!
//! Only trials measured by a run are registered (a reused trial names its origin and is never
//! registered twice), and a trial unscoreable for an infrastructure cause is never reused.
//! This module does not run anything; the run pipeline (`crate::pipeline`) calls it before the
//! trials run.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::analysis::{ReuseSummary, ReusedTrial};
use crate::features::evalset::{CaseFiles, GoldenCase};
use crate::features::runner::profile::RunnerProfile;
use crate::features::workspace::ArmStaging;
use crate::record::{
    Arm, Manifest, Outcome, RecordError, ReuseSource, ReusedFrom, TrialKey, TrialKeys, TrialRecord,
};

/// Version of the key recipe: bumped when what goes into a key changes, so keys of older
/// recipes never match.
pub(crate) const KEY_RECIPE_VERSION: u32 = 1;

/// The reusable-trial store's file in the state folder.
pub(crate) const STORE_FILE: &str = "trial-store.json";

/// Schema version of [`STORE_FILE`].
pub(crate) const STORE_SCHEMA_VERSION: u32 = 1;

/// Runner-profile settings that do not change what a trial does or how it is graded (they pace
/// or price the run), left out of the key.
const PROFILE_FIELDS_NOT_IN_KEY: [&str; 8] = [
    "concurrency",
    "max_retries",
    "retry_base_delay_s",
    "max_retry_delay_s",
    "price",
    "context_tokens",
    "vision",
    "api_key_env",
];

/// Errors of baseline reuse.
#[derive(Debug, thiserror::Error)]
pub enum ReuseError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Registry(#[from] crate::features::registry::RegistryError),
    #[error(
        "{path}: neither a run folder (manifest.json), a matrix folder (matrix-manifest.json) nor a state folder; --reuse-baseline takes a run folder or the state folder holding {STORE_FILE}"
    )]
    NotASource { path: PathBuf },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ReuseError + '_ {
    move |source| ReuseError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What the key of one arm's trials hashes besides the case.
#[derive(Serialize)]
struct ArmKeyInputs<'a> {
    recipe: u32,
    skill_lift: &'a str,
    format_version: u32,
    runner_kind: &'a str,
    runner: &'a serde_json::Value,
    model: &'a str,
    arm: Arm,
    arm_design: crate::record::ArmDesign,
    target_name: &'a str,
    calibre: &'a str,
    /// (name, fingerprint) of every staged skill, sorted by name.
    staged: Vec<(&'a str, &'a str)>,
    grading: &'a crate::record::GradingSettings,
    /// A balanced run's seed: it fixes the order each trial presents the skills in
    /// (`crate::analysis::skill_order`). Absent for runs that list the skills by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    skill_order_seed: Option<u64>,
}

/// The runner settings that go into a key: the profile as JSON without the fields in
/// [`PROFILE_FIELDS_NOT_IN_KEY`], with `model` set to the run's model.
fn runner_key_value(profile: &RunnerProfile, model: &str) -> serde_json::Value {
    let mut value = serde_json::to_value(profile).unwrap_or(serde_json::Value::Null);
    if let Some(object) = value.as_object_mut() {
        for field in PROFILE_FIELDS_NOT_IN_KEY {
            object.remove(field);
        }
        object.insert("model".into(), serde_json::Value::String(model.into()));
    }
    value
}

/// `sha256:<hex>` over the files under `path` (a file or a folder, recursively, symbolic links
/// followed), each as its relative path and bytes, in path order.
pub(crate) fn tree_digest(path: &Path) -> Result<String, ReuseError> {
    use sha2::{Digest, Sha256};
    fn walk(base: &Path, path: &Path, hasher: &mut Sha256) -> Result<(), ReuseError> {
        let metadata = std::fs::metadata(path).map_err(io_error(path))?;
        if metadata.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(io_error(path))?
                .map(|entry| entry.map(|e| e.path()))
                .collect::<Result<_, _>>()
                .map_err(io_error(path))?;
            entries.sort();
            for entry in entries {
                walk(base, &entry, hasher)?;
            }
            return Ok(());
        }
        let relative = path.strip_prefix(base).unwrap_or(Path::new(""));
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update(metadata.len().to_le_bytes());
        let mut file = std::fs::File::open(path).map_err(io_error(path))?;
        let mut buffer = [0u8; 64 * 1024];
        loop {
            let read = file.read(&mut buffer).map_err(io_error(path))?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        Ok(())
    }
    let mut hasher = Sha256::new();
    walk(path, path, &mut hasher)?;
    Ok(format!("sha256:{}", hex::encode(hasher.finalize())))
}

/// The case as it goes into a key: every field but those that only weigh or label it for the
/// analysis (`cluster`, `status`, `weight`), with `files` as the digest of the staged fixtures.
fn case_key_value(
    case: &GoldenCase,
    eval_files_dir: &Path,
) -> Result<serde_json::Value, ReuseError> {
    let files: Vec<(String, String)> = match &case.files {
        CaseFiles::Omitted if eval_files_dir.is_dir() => {
            vec![(String::new(), tree_digest(eval_files_dir)?)]
        }
        CaseFiles::Omitted => Vec::new(),
        CaseFiles::Listed(files) => files
            .iter()
            .map(|file| {
                Ok((
                    file.destination.to_string_lossy().into_owned(),
                    tree_digest(&file.source)?,
                ))
            })
            .collect::<Result<_, ReuseError>>()?,
    };
    let mut value = serde_json::to_value(case).unwrap_or(serde_json::Value::Null);
    if let Some(object) = value.as_object_mut() {
        for field in ["cluster", "status", "weight", "files"] {
            object.remove(field);
        }
        object.insert(
            "files".into(),
            serde_json::to_value(files).unwrap_or_default(),
        );
    }
    Ok(value)
}

/// The trial keys of a fresh run's arms and cases (see the module comment for what they
/// cover). `eval_files_dir` is the `evals/files/` folder staged for cases that omit `files`.
pub(crate) fn trial_keys(
    manifest: &Manifest,
    cases: &[GoldenCase],
    profile: &RunnerProfile,
    eval_files_dir: &Path,
) -> Result<TrialKeys, ReuseError> {
    use sha2::{Digest, Sha256};
    let runner = runner_key_value(profile, &manifest.model);
    let case_values: Vec<(String, String)> = cases
        .iter()
        .map(|case| {
            let value = case_key_value(case, eval_files_dir)?;
            Ok((case.id.clone(), value.to_string()))
        })
        .collect::<Result<_, ReuseError>>()?;
    let mut keys = TrialKeys::new();
    for &arm in &manifest.arms {
        let mut staged: Vec<(&str, &str)> = manifest
            .decoys
            .skills
            .iter()
            .map(|d| (d.name.as_str(), d.fingerprint.as_str()))
            .collect();
        match manifest.arm_design.staging(arm) {
            ArmStaging::WithTarget => {
                staged.push((&manifest.asset.name, &manifest.asset.fingerprint));
            }
            ArmStaging::WithPrevious => {
                if let Some(previous) = &manifest.previous {
                    staged.push((&manifest.asset.name, &previous.fingerprint));
                }
            }
            ArmStaging::WithoutTarget => {}
        }
        staged.sort();
        let inputs = ArmKeyInputs {
            recipe: KEY_RECIPE_VERSION,
            skill_lift: &manifest.skill_lift_version,
            format_version: manifest.format_version,
            runner_kind: &manifest.runner.kind,
            runner: &runner,
            model: &manifest.model,
            arm,
            arm_design: manifest.arm_design,
            target_name: &manifest.asset.name,
            calibre: &manifest.asset.calibre,
            staged,
            grading: &manifest.grading,
            skill_order_seed: (manifest.skill_order == crate::record::SkillOrdering::Balanced)
                .then_some(manifest.seed),
        };
        let arm_text = serde_json::to_string(&inputs).unwrap_or_default();
        let by_case = case_values
            .iter()
            .map(|(id, case_text)| {
                let mut hasher = Sha256::new();
                hasher.update(arm_text.as_bytes());
                hasher.update([0]);
                hasher.update(case_text.as_bytes());
                (
                    id.clone(),
                    format!("sha256:{}", hex::encode(hasher.finalize())),
                )
            })
            .collect();
        keys.insert(arm, by_case);
    }
    Ok(keys)
}

impl ReuseSource {
    /// The source a `--reuse-baseline PATH` names: a run folder, a matrix folder (its cells) or
    /// a state folder.
    pub fn of_path(path: &Path) -> Result<Self, ReuseError> {
        if path.join("manifest.json").is_file() {
            return Ok(Self::Runs {
                paths: vec![path.to_path_buf()],
            });
        }
        if crate::record::is_matrix_folder(path) {
            let cells = path.join("cells");
            let mut paths: Vec<PathBuf> = std::fs::read_dir(&cells)
                .map_err(io_error(&cells))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("manifest.json").is_file())
                .collect();
            paths.sort();
            return Ok(Self::Runs { paths });
        }
        if path.join(STORE_FILE).is_file() || path.join("baseline-results.json").is_file() {
            return Ok(Self::Store {
                path: path.to_path_buf(),
            });
        }
        Err(ReuseError::NotASource {
            path: path.to_path_buf(),
        })
    }
}

/// One entry of the trial store: a measured trial and its key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredTrial {
    pub key: String,
    pub run_id: String,
    /// The run folder holding its record and transcript.
    pub run_dir: PathBuf,
    pub trial_id: String,
    pub registered_at: DateTime<Utc>,
}

/// The state folder's [`STORE_FILE`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TrialStore {
    pub schema_version: u32,
    pub trials: Vec<StoredTrial>,
}

/// Whether a recorded trial may stand in for a new one: measured (pass, fail, or unscoreable
/// for a cause of its own, not of the infrastructure).
fn reusable(record: &TrialRecord) -> bool {
    match record.outcome {
        Outcome::Pass | Outcome::Fail => true,
        Outcome::Unscoreable => record
            .cause()
            .is_some_and(|cause| !cause.is_infrastructure()),
        Outcome::NotGradable => false,
    }
}

/// The key of `record` in its run (`None` when the run recorded no keys or not this one).
fn key_of<'a>(keys: &'a TrialKeys, record: &TrialRecord) -> Option<&'a String> {
    keys.get(&record.arm)?.get(&record.case_id)
}

/// Register the trials `records` of a finished run (its folder `run_dir`) in the state
/// folder's trial store: the measured, reusable ones (reused ones are registered by the run
/// that measured them). Idempotent: the run's earlier entries are replaced. Returns how many
/// were registered.
pub(crate) fn register_run(
    state_dir: &Path,
    run_dir: &Path,
    manifest: &Manifest,
    records: &[TrialRecord],
) -> Result<usize, ReuseError> {
    let Some(keys) = &manifest.trial_keys else {
        return Ok(0);
    };
    if !manifest.arm_design.is_paired() {
        return Ok(0);
    }
    let run_dir = run_dir.canonicalize().unwrap_or(run_dir.to_path_buf());
    let now = Utc::now();
    let entries: Vec<StoredTrial> = records
        .iter()
        .filter(|r| r.reused_from.is_none() && reusable(r))
        .filter_map(|record| {
            Some(StoredTrial {
                key: key_of(keys, record)?.clone(),
                run_id: manifest.run_id.clone(),
                run_dir: run_dir.clone(),
                trial_id: record.trial_id.clone(),
                registered_at: now,
            })
        })
        .collect();
    let count = entries.len();
    let path = state_dir.join(STORE_FILE);
    let _lock = crate::features::registry::state::lock_for(&path)?;
    let mut store: TrialStore =
        crate::features::registry::state::read_json(&path, "a trial store")?.unwrap_or_default();
    crate::features::registry::state::check_schema(
        &path,
        store.schema_version,
        STORE_SCHEMA_VERSION,
    )?;
    store.schema_version = STORE_SCHEMA_VERSION;
    store.trials.retain(|t| t.run_id != manifest.run_id);
    store.trials.extend(entries);
    crate::features::registry::state::write_state_json(&path, &store)?;
    Ok(count)
}

/// Matching recorded trials by trial key.
pub(crate) type CandidatesByKey = HashMap<String, Vec<Candidate>>;

/// A recorded trial that matches a planned one.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// The record as its run wrote it.
    pub record: TrialRecord,
    /// The run folder holding it.
    pub run_dir: PathBuf,
}

impl Candidate {
    /// Where it was measured: its own `reused_from` when its run had reused it, else its run.
    fn origin(&self) -> ReusedFrom {
        self.record.reused_from.clone().unwrap_or(ReusedFrom {
            run_id: self.record.run_id.clone(),
            trial_id: self.record.trial_id.clone(),
        })
    }
}

/// The recorded trials of one run folder, by key (reusable ones only).
fn run_candidates(
    run_dir: &Path,
    wanted: &HashSet<&String>,
    into: &mut HashMap<String, Vec<Candidate>>,
    warnings: &mut Vec<String>,
) -> Result<(), ReuseError> {
    let manifest = crate::record::read_manifest(run_dir)?;
    let Some(keys) = &manifest.trial_keys else {
        warnings.push(format!(
            "{}: recorded no trial keys (made by a skill-lift without baseline reuse); nothing in it is reused",
            run_dir.display()
        ));
        return Ok(());
    };
    crate::record::for_each_trial(&run_dir.join("trials.jsonl"), |record| {
        if let Some(key) = key_of(keys, &record)
            && wanted.contains(key)
            && reusable(&record)
        {
            into.entry(key.clone()).or_default().push(Candidate {
                record,
                run_dir: run_dir.to_path_buf(),
            });
        }
        Ok(())
    })?;
    Ok(())
}

/// The recorded trials in `source` whose key is one of `wanted`, by key, in the source's order
/// (a store: the most recently registered run first, each run's trials in its file order; run
/// folders: in the order given, each in its file order), each measured trial once. Newest
/// first because a newer baseline is the closer one to what the model and server do now
/// (what serves under an unchanged model name and URL is outside the key). Unreadable or
/// moved run folders named by the store are skipped with a warning (returned).
pub(crate) fn find_candidates(
    source: &ReuseSource,
    wanted: &HashSet<&String>,
) -> Result<(CandidatesByKey, Vec<String>), ReuseError> {
    let mut found: HashMap<String, Vec<Candidate>> = HashMap::new();
    let mut warnings = Vec::new();
    match source {
        ReuseSource::Runs { paths } => {
            for path in paths {
                run_candidates(path, wanted, &mut found, &mut warnings)?;
            }
        }
        ReuseSource::Store { path } => {
            let file = path.join(STORE_FILE);
            let store: TrialStore =
                crate::features::registry::state::read_json(&file, "a trial store")?
                    .unwrap_or_default();
            crate::features::registry::state::check_schema(
                &file,
                store.schema_version,
                STORE_SCHEMA_VERSION,
            )?;
            // The runs the store names for the wanted keys, each read once; a trial is taken
            // only when its run still records it under the same key. Newest run first: a run
            // registers its entries together at the end of the store (registering it again
            // moves them there), so a later run's entries come later; within a run, its order.
            let mut runs: Vec<&PathBuf> = Vec::new();
            let mut run_rank: HashMap<&str, usize> = HashMap::new();
            for (index, stored) in store.trials.iter().enumerate() {
                run_rank.entry(stored.run_id.as_str()).or_insert(index);
            }
            let mut order: HashMap<(String, String), (std::cmp::Reverse<usize>, usize)> =
                HashMap::new();
            for (index, stored) in store.trials.iter().enumerate() {
                if wanted.contains(&stored.key) {
                    if !runs.contains(&&stored.run_dir) {
                        runs.push(&stored.run_dir);
                    }
                    let rank = run_rank[stored.run_id.as_str()];
                    order.insert(
                        (stored.run_id.clone(), stored.trial_id.clone()),
                        (std::cmp::Reverse(rank), index),
                    );
                }
            }
            let mut from_runs: HashMap<String, Vec<Candidate>> = HashMap::new();
            for run_dir in runs {
                if let Err(error) = run_candidates(run_dir, wanted, &mut from_runs, &mut warnings) {
                    warnings.push(format!(
                        "{}: not read ({error}); its registered trials are not reused",
                        run_dir.display()
                    ));
                }
            }
            for (key, mut candidates) in from_runs {
                candidates.retain(|c| {
                    order.contains_key(&(c.record.run_id.clone(), c.record.trial_id.clone()))
                });
                candidates
                    .sort_by_key(|c| order[&(c.record.run_id.clone(), c.record.trial_id.clone())]);
                found.insert(key, candidates);
            }
        }
    }
    // Each measured trial once, whichever runs carry a copy of it.
    for candidates in found.values_mut() {
        let mut seen = HashSet::new();
        candidates.retain(|c| seen.insert(c.origin()));
    }
    Ok((found, warnings))
}

/// What [`import`] took.
#[derive(Debug, Default)]
pub(crate) struct Imported {
    /// The new run's records of the reused trials (ready to append).
    pub records: Vec<TrialRecord>,
    /// Planned trials of the reused arms with no matching recorded trial.
    pub not_found: usize,
    /// Warnings (unreadable source runs, missing transcripts).
    pub warnings: Vec<String>,
}

/// For each planned trial of `arms` not in `done`, take a recorded trial with the same key
/// from `source`: attempts 1..=K of a case take the case's matching trials in the source's
/// order (K larger than what is stored: the rest run). The records are copied for the run
/// `manifest` describes (its run id, the new trial id, `reused_from` naming the origin), and
/// their transcripts into `run_dir`.
pub(crate) fn import(
    source: &ReuseSource,
    arms: &[Arm],
    manifest: &Manifest,
    run_dir: &Path,
    done: &HashSet<TrialKey>,
) -> Result<Imported, ReuseError> {
    let mut imported = Imported::default();
    let Some(keys) = &manifest.trial_keys else {
        return Ok(imported);
    };
    let wanted: HashSet<&String> = arms
        .iter()
        .filter_map(|arm| keys.get(arm))
        .flat_map(|by_case| by_case.values())
        .collect();
    let (found, warnings) = find_candidates(source, &wanted)?;
    imported.warnings = warnings;
    for arm in arms {
        let Some(by_case) = keys.get(arm) else {
            continue;
        };
        for case_id in &manifest.eval_set.case_ids {
            let Some(key) = by_case.get(case_id) else {
                continue;
            };
            let mut candidates = found.get(key).map(Vec::as_slice).unwrap_or(&[]).iter();
            for attempt in 1..=manifest.k {
                let trial = TrialKey {
                    case_id: case_id.clone(),
                    arm: *arm,
                    attempt,
                };
                if done.contains(&trial) {
                    continue;
                }
                let Some(candidate) = candidates.next() else {
                    imported.not_found += 1;
                    continue;
                };
                let record =
                    copy_trial(candidate, &trial, manifest, run_dir, &mut imported.warnings)?;
                imported.records.push(record);
            }
        }
    }
    Ok(imported)
}

/// The new run's record of a reused trial, its transcript copied into `run_dir` (its trial id
/// and attempt rewritten to the new ones).
fn copy_trial(
    candidate: &Candidate,
    trial: &TrialKey,
    manifest: &Manifest,
    run_dir: &Path,
    warnings: &mut Vec<String>,
) -> Result<TrialRecord, ReuseError> {
    let mut record = candidate.record.clone();
    record.reused_from = Some(candidate.origin());
    record.run_id = manifest.run_id.clone();
    record.trial_id = trial.trial_id();
    record.attempt = trial.attempt;
    record.case_id = trial.case_id.clone();
    record.workspace = None;
    record.supersedes = false;
    record.transcript = None;
    record.transcript_span = None;
    if let Some(relative) = &candidate.record.transcript {
        // Either form: the source's transcript log, or a file of its own (older run folders).
        // The reused trial's transcript is written as a file of its own (readers take both).
        match crate::record::TranscriptReader::new(&candidate.run_dir).read(&candidate.record)? {
            Some(bytes) => {
                let bytes = match serde_json::from_slice::<serde_json::Value>(&bytes) {
                    Ok(mut document) => {
                        if let Some(object) = document.as_object_mut() {
                            object.insert("trial_id".into(), trial.trial_id().into());
                            object.insert("attempt".into(), trial.attempt.into());
                        }
                        serde_json::to_vec(&document).unwrap_or(bytes)
                    }
                    Err(_) => bytes,
                };
                let new_relative = trial.transcript_path();
                let path = run_dir.join(&new_relative);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(io_error(parent))?;
                }
                crate::disk::write_atomic(&path, &bytes).map_err(RecordError::from)?;
                record.transcript = Some(new_relative);
            }
            None => warnings.push(format!(
                "{}: transcript {relative} of {} is missing; the trial is reused without it",
                candidate.run_dir.display(),
                candidate.record.trial_id
            )),
        }
    }
    Ok(record)
}

impl ReuseSummary {
    /// The reused trials as a Markdown list, grouped by the run that measured them (at most
    /// `limit` trials listed; the rest counted, all of them in `trials.csv`'s `reused_from`).
    pub(crate) fn trials_markdown(&self, limit: usize) -> String {
        if self.trials.is_empty() {
            return String::new();
        }
        let mut by_run: BTreeMap<&str, Vec<&ReusedTrial>> = BTreeMap::new();
        for trial in &self.trials {
            by_run.entry(&trial.from_run).or_default().push(trial);
        }
        let mut out =
            String::from("\nReused trials (this run's trial ← the trial that measured it):\n\n");
        let mut listed = 0;
        for (run, trials) in by_run {
            out.push_str(&format!("- from `{run}`:"));
            let mut items = Vec::new();
            for trial in trials {
                if listed >= limit {
                    break;
                }
                listed += 1;
                items.push(format!(
                    " `{}` {} #{} ← `{}`",
                    trial.case_id, trial.arm, trial.attempt, trial.from_trial
                ));
            }
            out.push_str(&items.join(","));
            out.push('\n');
        }
        if self.trials.len() > listed {
            out.push_str(&format!(
                "- … and {} more (`reused_from` in trials.csv)\n",
                self.trials.len() - listed
            ));
        }
        out
    }

    /// One line for the terminal and report.md.
    pub(crate) fn line(&self) -> String {
        if self.reused == 0 {
            return format!(
                "Baseline reuse: asked for ({}), no recorded trial matched: every trial ran.",
                self.source
            );
        }
        let arms = self
            .by_arm
            .iter()
            .map(|(arm, n)| format!("{n} {arm}"))
            .collect::<Vec<_>>()
            .join(", ");
        let runs = self
            .from_runs
            .iter()
            .map(|(run, n)| format!("{run} ({n})"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "Baseline reuse: {} trials reused ({arms}) from {runs}, not run again (same trial keys; `reused_from` in trials.jsonl); {} trials of the reused arms had no match and ran.",
            self.reused, self.not_found
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_digest_covers_names_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/x.txt"), "one").unwrap();
        let first = tree_digest(&dir.path().join("a")).unwrap();
        assert_eq!(first, tree_digest(&dir.path().join("a")).unwrap());
        std::fs::write(dir.path().join("a/b/x.txt"), "two").unwrap();
        let changed = tree_digest(&dir.path().join("a")).unwrap();
        assert_ne!(first, changed);
        std::fs::rename(dir.path().join("a/b/x.txt"), dir.path().join("a/b/y.txt")).unwrap();
        assert_ne!(changed, tree_digest(&dir.path().join("a")).unwrap());
    }

    #[test]
    fn pacing_and_price_stay_out_of_the_runner_key() {
        let text = "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n";
        let profile: RunnerProfile = toml::from_str(text).unwrap();
        let mut faster = profile.clone();
        faster.concurrency = profile.concurrency + 7;
        faster.max_retries = profile.max_retries + 1;
        assert_eq!(
            runner_key_value(&profile, "x"),
            runner_key_value(&faster, "x")
        );
        let mut hotter = profile.clone();
        hotter.temperature = Some(0.9);
        assert_ne!(
            runner_key_value(&profile, "x"),
            runner_key_value(&hotter, "x")
        );
        assert_ne!(
            runner_key_value(&profile, "x"),
            runner_key_value(&profile, "y")
        );
    }
}
