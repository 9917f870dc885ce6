//! Grading a recorded run again (`regrade`) on the run pipeline: check the recorded run and its
//! eval set ([`prepare_regrade`]: the run folder, its eval set by digest, the grading — the
//! run's own or new — and the graders, the new folder with its manifest), then grade every
//! recorded trial through the one dispatcher of `crate::pipeline::execute` ([`execute_regrade`]: typed
//! events, progress, the trial log in the recorded order, the live records the periodic exports
//! are written from, interrupts), and write the final exports. No agent is called.
//!
//! Kept as recorded: trials without a transcript (staging failures) and trials unscoreable for
//! a reason other than a grader error (runner errors, timeouts, isolation failures): those are
//! facts about the run, not about grading. Trials unscoreable because a grader failed are graded
//! again. Workspace checks reuse their recorded result unless the workspace was kept
//! (`--keep-workspaces`); custom graders then run in an empty folder with
//! `SKILL_LIFT_WORKSPACE_AVAILABLE=0`.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::Utc;

use super::Failure;
use super::PipelineError;
use super::grading::{
    build_grader_set, ensure_judge_servers, recorded_judge_profiles, runner_secrets,
    validate_expected_outputs,
};
use super::prepare::{look_up_calibration, write_manifest};
use super::run::{periodic_exports, write_final_exports};
use super::settings::AnalysisOverrides;
use crate::analysis::Summary;
use crate::features::evalset::{GoldenCase, load_eval_set};
use crate::features::grade::pipeline::{GraderSet, TrialFacts, staged_skill_names};
use crate::features::runner::LoadedProfile;
use crate::features::runner::profile::load_profile;
use crate::pipeline::execute::{
    ExecuteReport, Fatal, Planned, RecordedTrialError, SchedulerSettings, TrialClock, TrialWork,
    dispatch,
};
use crate::record::{
    FORMAT_VERSION, FinishedTrial, Manifest, RunLock, TranscriptDocument, TranscriptReader,
    TrialLog, TrialRecord, read_manifest,
};
use crate::record::{GradingSettings, Outcome};
use crate::report::progress::ProgressDisplay;
use crate::values::reporter::{Event, report};

/// A validated regrade request (the flags of `skill-lift regrade`, resolved).
pub(crate) struct RegradeRequest {
    /// The run folder whose trajectories are graded again.
    pub run_dir: PathBuf,
    /// The eval set, when it is no longer where the manifest says (`--evals`).
    pub evals: Option<PathBuf>,
    /// The new run folder (`--out`; default `RUN_DIR/regrades/<id>`).
    pub out: Option<PathBuf>,
    /// Trials graded at once.
    pub jobs: usize,
    /// New grading settings with their judge profiles; `None`: the run's own.
    pub grading: Option<(GradingSettings, Vec<LoadedProfile>)>,
    /// Judge answers in the wrong format asked again, at most.
    pub judge_format_retries: u32,
    /// Whether judge answers are cached under the state folder.
    pub judge_cache: bool,
    /// The state folder (`--state`).
    pub state: Option<PathBuf>,
    /// Analysis and gate settings given for this invocation.
    pub analysis: AnalysisOverrides,
    /// How progress is shown.
    pub progress: ProgressDisplay,
}

/// A regrade ready to grade: its new folder exists with its manifest.
pub(crate) struct PreparedRegrade {
    /// The regraded run folder.
    pub run_dir: PathBuf,
    /// The new run folder.
    pub out_dir: PathBuf,
    /// The new folder's manifest.
    pub manifest: Manifest,
    /// The recorded trials to grade again, in their recorded order.
    pub records: Vec<TrialRecord>,
    /// The regraded run's id.
    pub from_run_id: String,
    cases: Vec<GoldenCase>,
    graders: GraderSet,
    judge_profiles: Vec<LoadedProfile>,
    jobs: usize,
    analysis: AnalysisOverrides,
    progress: ProgressDisplay,
}

/// What a regrade left.
pub(crate) struct RegradeFinished {
    /// The new run folder.
    pub out_dir: PathBuf,
    /// How the dispatcher ended (interrupted or not, trials recorded).
    pub report: ExecuteReport,
    /// Trials of the recorded run.
    pub planned: usize,
    /// Trials graded again (the others were kept as recorded).
    pub regraded: usize,
    /// Trials graded again whose grade changed.
    pub changed: usize,
    /// The analysis of the new folder.
    pub summary: Summary,
    /// The exports written.
    pub written: Vec<PathBuf>,
}

/// Check the recorded run, its eval set and the grading, build the graders, and create the new
/// run folder with its manifest.
pub(crate) fn prepare_regrade(request: RegradeRequest) -> Result<PreparedRegrade, PipelineError> {
    let run_dir = request.run_dir.clone();
    if !run_dir.join("manifest.json").is_file() {
        return Err(PipelineError::NotARunFolder {
            dir: run_dir,
            half_created: false,
        });
    }
    let original = read_manifest(&run_dir).map_err(PipelineError::RunFolder)?;
    if original.shard.is_some() {
        return Err(PipelineError::RegradeShard(run_dir));
    }
    crate::analysis::check_method(&original, request.analysis.method)?;
    let eval_path = request
        .evals
        .clone()
        .unwrap_or_else(|| original.eval_set.path.clone());
    if !eval_path.is_file() && !eval_path.is_dir() {
        return Err(PipelineError::RegradeEvalSetGone(eval_path));
    }
    // Fixture paths resolve against the skill folder: the recorded one, or (for a moved run)
    // the folder holding the eval file's `evals/` folder.
    let skill_root = if original.asset.path.is_dir() {
        original.asset.path.clone()
    } else {
        eval_path
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    };
    let eval_set = load_eval_set(&eval_path, &skill_root)?;
    if eval_set.digest != original.eval_set.digest {
        return Err(PipelineError::RegradeEvalSetChanged {
            path: eval_path,
            recorded: original.eval_set.digest.clone(),
            now: eval_set.digest,
        });
    }
    let cases = eval_set.cases;
    let (settings, judge_profiles) = match request.grading {
        Some(given) => given,
        // Runs recorded before grading settings existed: grade with today's defaults.
        None if original.format_version < 2 => (GradingSettings::new(), Vec::new()),
        None => (
            original.grading.clone(),
            recorded_judge_profiles(&original.grading)?,
        ),
    };
    validate_expected_outputs(&eval_path, &cases, &settings)?;
    let secrets = match load_profile(&original.runner.profile_path) {
        Ok(runner) => runner_secrets(&runner),
        Err(_) => {
            report(Event::warning(format!(
                "runner profile {} not found: the secret scan checks key patterns only, not the runner's credential values",
                original.runner.profile_path.display()
            )));
            Vec::new()
        }
    };
    let graders = build_grader_set(
        settings.clone(),
        &judge_profiles,
        secrets,
        request.judge_format_retries,
        request.judge_cache,
        request.state.as_deref(),
    )?;

    let run_id = regrade_id(&original.run_id);
    let out_dir = match &request.out {
        Some(dir) => dir.clone(),
        None => run_dir.join("regrades").join(&run_id),
    };
    if out_dir.join("manifest.json").exists() {
        return Err(PipelineError::RegradeOutExists(out_dir));
    }
    std::fs::create_dir_all(out_dir.join("transcripts")).map_err(|source| {
        PipelineError::RunFolderIo {
            verb: "creating",
            path: out_dir.clone(),
            source,
        }
    })?;
    let mut manifest = Manifest {
        format_version: FORMAT_VERSION,
        skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id,
        created_at: Utc::now(),
        grading: settings,
        regraded_from: Some(run_dir.canonicalize().unwrap_or(run_dir.clone())),
        // A folder of an older format gets its capabilities written out.
        runner: crate::record::RunnerInfo {
            capabilities: Some(original.runner.capabilities()),
            ..original.runner.clone()
        },
        ..original.clone()
    };
    // The trial keys cover the grading: with new grading settings the original keys no longer
    // describe these records, so a regraded folder offers nothing to `--reuse-baseline`.
    if manifest.grading != original.grading {
        manifest.trial_keys = None;
    }
    // New grading settings make another suite: look its calibration up again (the regrade's
    // manifest records what it found, like a run's).
    if manifest.arm_design.is_paired() && manifest.grading != original.grading {
        manifest.calibration = Some(look_up_calibration(&manifest, request.state.as_deref()));
    }
    write_manifest(&out_dir, &manifest)?;

    // Only the recorded run's own planned trials are regraded (file:line errors otherwise).
    let mut records = Vec::new();
    crate::record::for_each_planned_trial(&run_dir.join("trials.jsonl"), &original, |record| {
        records.push(record);
        Ok(())
    })
    .map_err(PipelineError::RunFolder)?;
    Ok(PreparedRegrade {
        from_run_id: original.run_id,
        run_dir,
        out_dir,
        manifest,
        records,
        cases,
        graders,
        judge_profiles,
        jobs: request.jobs,
        analysis: request.analysis,
        progress: request.progress,
    })
}

/// The id of a regrade of `run_id` (also the folder name under `RUN_DIR/regrades/`).
pub(crate) fn regrade_id(run_id: &str) -> String {
    let suffix: u16 = rand::random();
    format!(
        "{run_id}-regrade-{}-{suffix:04x}",
        Utc::now().format("%Y%m%dT%H%M%SZ")
    )
}

/// Grade every recorded trial of `prepared` again through the run dispatcher (judge servers
/// started for it and stopped after), then analyze the new folder and write every export.
/// `interrupt` resolving stops the grading: what was graded is committed and analyzed.
pub(crate) async fn execute_regrade(
    prepared: PreparedRegrade,
    interrupt: impl Future<Output = ()>,
) -> Result<RegradeFinished, PipelineError> {
    let PreparedRegrade {
        run_dir,
        out_dir,
        manifest,
        records,
        from_run_id,
        cases,
        graders,
        judge_profiles,
        jobs,
        analysis,
        progress,
    } = prepared;
    report(Event::Regrading {
        trials: records.len(),
        from_run_id: from_run_id.clone(),
        out_dir: out_dir.clone(),
    });
    let mut judge_servers = ensure_judge_servers(&judge_profiles, &out_dir).await?;
    let lock = RunLock::acquire(&out_dir).map_err(PipelineError::RunFolder)?;
    let log = TrialLog::open(&out_dir, 0, &lock).map_err(PipelineError::RunFolder)?;
    let analysis_settings = analysis.settings_over(manifest.seed, manifest.gates.as_ref());
    let planned = records.len();
    let work = Arc::new(Regrade {
        graders,
        cases,
        manifest: manifest.clone(),
        run_dir,
        regraded: AtomicUsize::new(0),
        changed: AtomicUsize::new(0),
    });
    let settings = SchedulerSettings {
        jobs,
        k: manifest.k,
        progress,
        // Recorded infrastructure failures are kept as they were: no breaker.
        breaker: 0,
        exports: Some(periodic_exports(
            out_dir.clone(),
            manifest.clone(),
            analysis_settings.clone(),
        )),
        round: None,
        // A regrade grades recorded trials again: they were traced when they ran.
        traces: None,
    };
    let outcome = dispatch(
        Arc::clone(&work),
        records,
        Planned {
            total: planned as u64,
            already_done: 0,
            labelled: manifest
                .arms
                .iter()
                .any(|arm| !crate::record::Arm::PAIRED.contains(arm)),
            in_order: true,
        },
        &settings,
        &[],
        log,
        interrupt,
    )
    .await;
    for line in work.graders.judge_usage_lines() {
        report(Event::JudgeUsage { line });
    }
    for server in judge_servers.iter_mut() {
        server.stop().await;
    }
    crate::record::redact_logs_in(&out_dir);
    let report = outcome?;
    let (summary, written) = write_final_exports(&out_dir, &manifest, &analysis_settings, true)?;
    drop(lock);
    Ok(RegradeFinished {
        out_dir,
        report,
        planned,
        regraded: work.regraded.load(Ordering::Relaxed),
        changed: work.changed.load(Ordering::Relaxed),
        summary,
        written,
    })
}

/// Whether a recorded trial is graded again: it has a transcript, and it is not unscoreable for
/// a reason outside grading.
fn regradable(record: &TrialRecord) -> bool {
    record.transcript.is_some()
        && (record.outcome != Outcome::Unscoreable
            || record
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with("grader error")))
}

/// The work of a regrade, one recorded trial at a time ([`TrialWork`]).
struct Regrade {
    graders: GraderSet,
    cases: Vec<GoldenCase>,
    manifest: Manifest,
    run_dir: PathBuf,
    /// Trials graded again so far.
    regraded: AtomicUsize,
    /// Trials graded again whose grade changed.
    changed: AtomicUsize,
}

impl TrialWork for Regrade {
    type Item = TrialRecord;

    async fn run(self: Arc<Self>, record: TrialRecord) -> Result<FinishedTrial, Fatal> {
        self.regrade_one(record).await.map_err(Fatal::RecordedTrial)
    }

    fn panicked(
        &self,
        record: &TrialRecord,
        _started: TrialClock,
        message: String,
    ) -> Result<FinishedTrial, Fatal> {
        // Grading the same trajectory again would panic again: an internal error.
        Err(Fatal::TaskPanicked(format!(
            "grading {} again: {message}",
            record.key().trial_id()
        )))
    }
}

impl Regrade {
    /// Grade one record again; returns the new record with its transcript (committed into the
    /// new folder's transcript log), and counts whether it was regraded and its grade changed.
    async fn regrade_one(&self, record: TrialRecord) -> Result<FinishedTrial, RecordedTrialError> {
        let mut record = TrialRecord {
            run_id: self.manifest.run_id.clone(),
            ..record
        };
        // Only regular files under the run's `transcripts/`, bounded in size; either form (the
        // transcript log, or a file per trial in older run folders).
        let transcript = TranscriptReader::new(&self.run_dir)
            .read(&record)
            .map_err(RecordedTrialError::Read)?;
        if !regradable(&record) {
            // Kept as recorded, with its transcript when it has one.
            return Ok(match transcript {
                Some(bytes) => FinishedTrial::with_transcript_bytes(record, &bytes),
                None => FinishedTrial::without_transcript(record),
            });
        }
        let relative = record.transcript.clone().unwrap_or_default();
        let path = self.run_dir.join(&relative);
        let bytes =
            transcript.ok_or_else(|| RecordedTrialError::TranscriptMissing(path.clone()))?;
        let document: TranscriptDocument<'static> =
            serde_json::from_slice(&bytes).map_err(|source| {
                RecordedTrialError::NotATranscript {
                    path: path.clone(),
                    source,
                }
            })?;
        let Some(case) = self.cases.iter().find(|c| c.id == record.case_id) else {
            return Err(RecordedTrialError::UnknownCase {
                path,
                case: record.case_id.clone(),
            });
        };
        let decoys: Vec<String> = self
            .manifest
            .decoys
            .skills
            .iter()
            .map(|d| d.name.clone())
            .collect();
        let staged = staged_skill_names(
            &self.manifest.asset.name,
            &decoys,
            self.manifest.arm_design.staging(record.arm),
        );
        // `--keep-workspaces` records the trial folder, which holds `workspace/` and `home/`.
        let kept_workspace = record
            .workspace
            .as_deref()
            .map(|kept| {
                let inner = kept.join("workspace");
                if inner.is_dir() {
                    inner
                } else {
                    kept.to_path_buf()
                }
            })
            .filter(|w| w.is_dir());
        let capabilities = self.manifest.runner.capabilities();
        let facts = TrialFacts {
            case,
            trajectory: &document.trajectory,
            arm: record.arm,
            attempt: record.attempt,
            trial_id: &record.trial_id,
            target_skill: &self.manifest.asset.name,
            staged_skills: &staged,
            activation_observable: capabilities.activation_observable,
            can_run_commands: capabilities.can_run_commands,
            workspace: kept_workspace.as_deref(),
            run_workspace: document.workspace_path.as_deref(),
            run_home: document.home_path.as_deref(),
            recorded_checks: Some(&record.checks),
        };
        let grade = self.graders.grade(&facts).await;
        // Recorded scores went through JSON text: compare them with a tolerance far below any
        // shown digit.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12;
        let same_scores = grade.scores.len() == record.scores.len()
            && grade
                .scores
                .iter()
                .all(|(name, a)| record.scores.get(name).is_some_and(|b| close(*a, *b)));
        let same_composite = match (grade.composite, record.composite) {
            (Some(a), Some(b)) => close(a, b),
            (a, b) => a == b,
        };
        let changed = grade.outcome != record.outcome
            || grade.reason != record.reason
            || grade.decided_by != record.decided_by
            || grade.checks != record.checks
            || !same_scores
            || !same_composite;
        let new_document = TranscriptDocument {
            trial_id: document.trial_id.clone(),
            case_id: document.case_id.clone(),
            arm: document.arm,
            attempt: document.attempt,
            prompt: document.prompt.clone(),
            workspace_path: document.workspace_path.clone(),
            home_path: document.home_path.clone(),
            grade: std::borrow::Cow::Borrowed(&grade),
            trajectory: std::borrow::Cow::Borrowed(&document.trajectory),
        };
        let bytes = serde_json::to_vec(&new_document).expect("transcript serializes");
        record.outcome = grade.outcome;
        record.reason = grade.reason;
        record.decided_by = grade.decided_by;
        record.outcome_score = grade.outcome_score;
        record.checks = grade.checks;
        record.scores = grade.scores;
        record.composite = grade.composite;
        record.metrics = crate::record::MetricDetails::for_record(&grade.metrics);
        record.other_judges = grade.other_judges;
        record.other_judge_errors = grade.other_judge_errors;
        self.regraded.fetch_add(1, Ordering::Relaxed);
        if changed {
            self.changed.fetch_add(1, Ordering::Relaxed);
        }
        Ok(FinishedTrial::with_transcript_bytes(record, &bytes))
    }
}

/// Why a regrade of a run or matrix folder failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegradeError {
    /// The matrix folder's cells cannot be read, or its report written.
    #[error(transparent)]
    Matrix(#[from] super::matrix::MatrixRunError),
    /// The new matrix folder already holds a run.
    #[error("{}: already holds a run; pick another --out", .0.display())]
    OutHoldsRun(PathBuf),
    /// The new matrix folder cannot be created.
    #[error("creating {}", .0.display())]
    CreateOut(PathBuf, #[source] std::io::Error),
    /// The new matrix manifest cannot be written.
    #[error(transparent)]
    WriteManifest(crate::record::RecordError),
    /// A run's regrade failed (its class decides the ending).
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
}

impl Failure for RegradeError {
    /// How a regrade that failed so ends.
    fn ending(&self) -> super::Ending {
        match self {
            RegradeError::Matrix(error) => error.ending(),
            RegradeError::OutHoldsRun(_) => super::Ending::InputError,
            RegradeError::Pipeline(error) => match error.class() {
                super::ErrorClass::Input => super::Ending::InputError,
                super::ErrorClass::Infrastructure => super::Ending::InfrastructureError,
            },
            RegradeError::CreateOut(..) | RegradeError::WriteManifest(_) => {
                super::Ending::InfrastructureError
            }
        }
    }
}

/// Regrade the run folder `run_dir` into `out` (default `RUN_DIR/regrades/<id>`), or every cell
/// of the matrix folder `run_dir` with the matrix report of the regraded cells.
/// `request(run_dir, out, quiet)`: the regrade request of one run folder, built when its turn
/// comes. How the regrade ends (the most severe cell's ending for a matrix).
pub(crate) async fn regrade<E: From<RegradeError>>(
    run_dir: &Path,
    out: Option<PathBuf>,
    quiet: bool,
    request: impl Fn(&Path, Option<PathBuf>, bool) -> Result<RegradeRequest, E>,
) -> Result<super::Ending, E> {
    if !crate::record::is_matrix_folder(run_dir) {
        return Ok(regrade_run(request(run_dir, out, quiet)?, quiet).await?);
    }
    let (manifest, cells) = super::matrix::cell_folders(run_dir).map_err(RegradeError::from)?;
    let run_id = regrade_id(&manifest.run_id);
    let out = out.unwrap_or_else(|| run_dir.join("regrades").join(&run_id));
    let regraded = crate::pipeline::run_matrix::MatrixManifest {
        run_id,
        created_at: Utc::now(),
        ..manifest
    };
    create_matrix_out(&out, &regraded)?;
    let mut endings = Vec::new();
    for (cell, cell_dir) in cells {
        report(Event::Cell {
            label: cell.label(),
        });
        let cell_request = request(&cell_dir, Some(out.join(cell.relative_dir())), true)?;
        endings.push(regrade_run(cell_request, true).await?);
    }
    let ending = super::matrix::conclude_report(&out, &regraded, quiet, endings);
    Ok(ending.map_err(RegradeError::from)?)
}

/// Create the new matrix folder `out` (never over a run) with its cells folder and manifest.
fn create_matrix_out(
    out: &Path,
    manifest: &crate::pipeline::run_matrix::MatrixManifest,
) -> Result<(), RegradeError> {
    if crate::record::is_matrix_folder(out) || out.join("manifest.json").exists() {
        return Err(RegradeError::OutHoldsRun(out.to_path_buf()));
    }
    std::fs::create_dir_all(out.join(crate::pipeline::run_matrix::CELLS_DIR))
        .map_err(|error| RegradeError::CreateOut(out.to_path_buf(), error))?;
    crate::pipeline::run_matrix::write_matrix_manifest(out, manifest)
        .map_err(RegradeError::WriteManifest)
}

/// Regrade one run folder into a new one: prepared, graded, its Markdown summary printed
/// (unless `quiet`), how it ended reported.
async fn regrade_run(request: RegradeRequest, quiet: bool) -> Result<super::Ending, RegradeError> {
    let prepared = prepare_regrade(request)?;
    let finished = execute_regrade(prepared, crate::features::contain::interrupted()).await?;
    let markdown = crate::report::publish::report_markdown(&finished.written, &finished.summary);
    if !quiet {
        crate::values::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    crate::values::reporter::report_written(&finished.written);
    if finished.report.interrupted {
        report(Event::RegradeInterrupted {
            kept: finished.report.recorded,
            planned: finished.planned,
            out_dir: finished.out_dir.clone(),
        });
        return Ok(super::Ending::Interrupted);
    }
    report(Event::Regraded {
        regraded: finished.regraded,
        changed: finished.changed,
        out_dir: finished.out_dir.clone(),
    });
    super::explain(&finished.summary);
    Ok(super::ending_of(&finished.summary))
}
