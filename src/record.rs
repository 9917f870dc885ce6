//! The run folder: `manifest.json` (what was run), the append-only `trials.jsonl` (one fsync'd
//! line per finished trial) and `transcripts/` (one normalized trajectory per trial).
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

use crate::grade::Outcome;
use crate::grade::checks::CheckResult;
use crate::trajectory::{RetryRecord, Usage};
use crate::workspace::Arm;

/// Version of the run-folder format (manifest and trial records). Version 2 added the grading
/// settings, composite and metric results; version 1 folders are still read (as output checks
/// only).
pub const FORMAT_VERSION: u32 = 2;
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
    /// Skill mode (`inject` | `tools`).
    pub skill_mode: String,
    /// Server base URL.
    pub base_url: String,
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
    /// Trials planned: cases × arms × K (the whole run, also in a shard).
    pub trials_planned: usize,
    /// How trials are graded (absent in runs recorded before grading settings existed: output
    /// checks only).
    #[serde(default)]
    pub grading: crate::grade::GradingSettings,
    /// For a folder written by `regrade`: the run folder whose trajectories it re-graded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regraded_from: Option<PathBuf>,
    /// The shard of the run this folder holds (`--shard i/n`); absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shard::Shard>,
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
    /// Why (first failed check, infrastructure error, missing checks).
    pub reason: Option<String>,
    /// Each deterministic check's result.
    pub checks: Vec<CheckResult>,
    /// Applicable metric scores in [0,1] by metric name.
    pub scores: BTreeMap<String, f64>,
    /// The composite score in [0,1] (`crate::grade` defines it); absent when no metric applied.
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
    pub other_judges: BTreeMap<String, BTreeMap<String, crate::grade::MetricResult>>,
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
    /// Names of skills activated (target and decoys), in order.
    pub activated_skills: Vec<String>,
    /// Transcript path relative to the run folder.
    pub transcript: Option<String>,
    /// Kept workspace folder (`--keep-workspaces`).
    pub workspace: Option<PathBuf>,
}

impl TrialRecord {
    /// The trial's key: (case id, arm, attempt).
    pub fn key(&self) -> TrialKey {
        TrialKey {
            case_id: self.case_id.clone(),
            arm: self.arm,
            attempt: self.attempt,
        }
    }
}

/// The `metrics` of a trial record: a JSON object (metric name → [`crate::grade::MetricResult`])
/// held as its text. Parsing every record's sub-scores and reasons would dominate the analysis
/// of a large run, which needs only the flat `scores`; [`MetricDetails::parse`] reads them on
/// demand (judge agreement, transcript pages).
#[derive(Debug, Clone, Default)]
pub struct MetricDetails(Option<Box<serde_json::value::RawValue>>);

impl MetricDetails {
    /// Details from parsed metric results.
    pub fn from_map(metrics: &BTreeMap<String, crate::grade::MetricResult>) -> Self {
        if metrics.is_empty() {
            return Self(None);
        }
        Self(serde_json::value::to_raw_value(metrics).ok())
    }

    /// The details a trial record keeps: the judge and custom-grader metrics of `metrics`.
    pub fn for_record(metrics: &BTreeMap<String, crate::grade::MetricResult>) -> Self {
        let kept: BTreeMap<String, crate::grade::MetricResult> = metrics
            .iter()
            .filter(|(_, metric)| metric.source != crate::grade::MetricSource::Deterministic)
            .map(|(name, metric)| (name.clone(), metric.clone()))
            .collect();
        Self::from_map(&kept)
    }

    /// Whether there are none (records without metrics, e.g. format version 1).
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|raw| raw.get() == "{}")
    }

    /// The parsed metric results (empty when there are none or the text is not a metric map).
    pub fn parse(&self) -> BTreeMap<String, crate::grade::MetricResult> {
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

/// A trial's transcript file (`transcripts/<case>/<arm>/<attempt>.json`): the whole trajectory
/// and its grade. Written by the run, read by `regrade` and the HTML report.
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
    pub grade: std::borrow::Cow<'a, crate::grade::Grade>,
    pub trajectory: std::borrow::Cow<'a, crate::trajectory::Trajectory>,
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

    /// Transcript path relative to the run folder.
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
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Write `bytes` to `path` atomically (temporary file in the same folder, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
    temp.write_all(bytes).map_err(io(path))?;
    temp.as_file().sync_data().map_err(io(path))?;
    temp.persist(path).map_err(|e| RecordError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

/// Read `manifest.json` from a run folder.
pub fn read_manifest(run_dir: &Path) -> Result<Manifest, RecordError> {
    let path = run_dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| RecordError::BadManifest {
        path: path.clone(),
        message: e.to_string(),
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
    Ok(manifest)
}

/// Stream the complete records of `trials.jsonl` to `visit`, in file order, without holding
/// them in memory. A torn last line (no trailing newline: a crash mid-write) is not a record and
/// is skipped. Returns the byte length of the valid prefix (what [`TrialLog::open`] keeps).
/// A missing file has no records.
pub fn for_each_trial(
    path: &Path,
    mut visit: impl FnMut(TrialRecord) -> Result<(), RecordError>,
) -> Result<u64, RecordError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(io(path)(error)),
    };
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut valid_len = 0u64;
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(io(path))?;
        if read == 0 {
            break;
        }
        number += 1;
        if line.last() != Some(&b'\n') {
            break;
        }
        let text = &line[..line.len() - 1];
        if !text.iter().all(u8::is_ascii_whitespace) {
            let record: TrialRecord =
                serde_json::from_slice(text).map_err(|e| RecordError::BadRecord {
                    path: path.to_path_buf(),
                    line: number,
                    message: e.to_string(),
                })?;
            visit(record)?;
        }
        valid_len += read as u64;
    }
    Ok(valid_len)
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

/// The append-only trial log of a run, held under an exclusive lock.
pub struct TrialLog {
    file: File,
    path: PathBuf,
    _lock: File,
}

impl TrialLog {
    /// Open (creating) `trials.jsonl` in `run_dir` for appending, after cutting a torn last line
    /// to `valid_len` bytes. Fails when another process holds the run's lock.
    pub fn open(run_dir: &Path, valid_len: u64) -> Result<Self, RecordError> {
        let lock_path = run_dir.join(".lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(RecordError::Locked {
                    path: run_dir.to_path_buf(),
                });
            }
            Err(std::fs::TryLockError::Error(error)) => return Err(io(&lock_path)(error)),
        }
        let path = run_dir.join("trials.jsonl");
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(io(&path))?;
        let length = file.metadata().map_err(io(&path))?.len();
        if length > valid_len {
            file.set_len(valid_len).map_err(io(&path))?;
        }
        Ok(Self {
            file,
            path,
            _lock: lock,
        })
    }

    /// Append records (one line each) in a single write, then fsync: group commit.
    pub fn append(&mut self, records: &[TrialRecord]) -> Result<(), RecordError> {
        let mut buffer = Vec::with_capacity(records.len() * 1024);
        for record in records {
            serde_json::to_writer(&mut buffer, record).map_err(|e| RecordError::Io {
                path: self.path.clone(),
                source: std::io::Error::other(e),
            })?;
            buffer.push(b'\n');
        }
        self.file.write_all(&buffer).map_err(io(&self.path))?;
        self.file.sync_data().map_err(io(&self.path))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn record(case_id: &str, arm: Arm, attempt: u32, outcome: Outcome) -> TrialRecord {
        TrialRecord {
            run_id: "r".into(),
            trial_id: format!("{case_id}/{}/{attempt}", arm.as_str()),
            case_id: case_id.into(),
            arm,
            attempt,
            runner: "x".into(),
            model: "m".into(),
            observed_model: None,
            outcome,
            reason: None,
            checks: vec![],
            scores: BTreeMap::new(),
            composite: None,
            metrics: Default::default(),
            other_judges: BTreeMap::new(),
            other_judge_errors: BTreeMap::new(),
            usage: Usage::default(),
            started_at: Utc::now(),
            wall_s: 0.1,
            model_latency_s: 0.05,
            requests: 1,
            retries: vec![],
            tool_calls: 0,
            activated_skills: vec![],
            transcript: None,
            workspace: None,
        }
    }

    #[test]
    fn append_read_and_torn_line_repair() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut log = TrialLog::open(dir.path(), 0).unwrap();
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
        let mut log = TrialLog::open(dir.path(), valid).unwrap();
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
        let _first = TrialLog::open(dir.path(), 0).unwrap();
        assert!(matches!(
            TrialLog::open(dir.path(), 0),
            Err(RecordError::Locked { .. })
        ));
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
