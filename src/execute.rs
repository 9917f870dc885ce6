//! The scheduler: runs the planned trials with bounded concurrency, grades each, and hands
//! finished records to the single recorder loop, which appends them to `trials.jsonl` (group
//! commit: one write and one fsync per batch of finished trials) and drives the progress bar.
//!
//! Order: attempts outermost, then cases, then arms, so a partial run stays balanced between
//! arms. Interrupts stop new trials and drop the ones in flight (they are re-run on resume).

use std::collections::{HashMap, HashSet};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::asset::fingerprint::Calibre;
use crate::evalset::GoldenCase;
use crate::grade::pipeline::{GraderSet, RemoteGrades, TrialFacts, staged_skill_names};
use crate::grade::{self, Grade, Outcome, UnscoreableCause};
use crate::record::{RecordError, TrialKey, TrialLog, TrialRecord};
use crate::runner::{AttemptInput, Runner};
use crate::trajectory::{Trajectory, TrajectoryStatus};
use crate::workspace::{Arm, ArmDesign, ArmStaging, SkillSource, stage_trial};

/// Extra time past the runner's own budget before the scheduler abandons an attempt.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// Everything the trials of one run share.
pub struct TrialContext {
    pub run_id: String,
    pub run_dir: PathBuf,
    pub runner_name: String,
    pub model: String,
    pub runner: Box<dyn Runner>,
    pub cases: Vec<GoldenCase>,
    pub target: SkillSource,
    pub decoys: Vec<SkillSource>,
    pub eval_files_dir: PathBuf,
    pub target_digest: String,
    pub calibre: Calibre,
    pub trial_timeout: Duration,
    pub keep_workspaces: bool,
    pub workspace_root: Option<PathBuf>,
    /// The grader set (checks, metrics, judges, custom graders).
    pub graders: Arc<GraderSet>,
    /// Names of the decoys staged in both arms.
    pub decoy_names: Vec<String>,
    /// False in `inject` mode (every staged skill is in the prompt).
    pub activation_observable: bool,
    /// False for runners without a shell (`openai-chat`).
    pub can_run_commands: bool,
    /// Trials re-run by `--retry-unscoreable`: their new records supersede the recorded ones.
    pub retried: HashSet<TrialKey>,
    /// Bytes of one transcript file at most (the runner profile's `max_transcript_bytes`).
    pub max_transcript_bytes: usize,
    /// What each arm stages (the paired comparison, or an A/A control).
    pub design: ArmDesign,
}

/// Scheduler settings.
#[derive(Debug, Clone, Copy)]
pub struct ExecuteSettings {
    /// Trials in flight at once.
    pub jobs: usize,
    /// Attempts per case per arm.
    pub k: u32,
    /// Whether to draw a progress bar (only on a terminal, never in CI).
    pub progress: bool,
    /// The circuit breaker: stop scheduling once this many trials in a row (in recording order)
    /// failed for infrastructure reasons; 0 disables it.
    pub breaker: usize,
}

/// How execution ended.
#[derive(Debug)]
pub struct ExecuteReport {
    /// Trials recorded by this invocation.
    pub recorded: usize,
    /// Whether an interrupt stopped the run early.
    pub interrupted: bool,
    /// Trials this invocation was to run that were not recorded (0 unless interrupted or
    /// something failed: the caller must not report success when it is not 0).
    pub missing: usize,
    /// Why the circuit breaker stopped the run early, when it did.
    pub breaker: Option<String>,
    /// Wall time, seconds.
    pub wall_s: f64,
}

/// A failure that stops the whole run.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("{0}")]
    Leak(String),
}

/// The planned trial keys in execution order.
pub fn plan_trials(cases: &[GoldenCase], k: u32) -> Vec<(usize, TrialKey)> {
    let mut trials = Vec::with_capacity(cases.len() * 2 * k as usize);
    for attempt in 1..=k {
        for (index, case) in cases.iter().enumerate() {
            for arm in Arm::ALL {
                trials.push((
                    index,
                    TrialKey {
                        case_id: case.id.clone(),
                        arm,
                        attempt,
                    },
                ));
            }
        }
    }
    trials
}

/// Whether a progress bar may be drawn: stderr is a terminal and `CI` is not set.
pub fn progress_allowed() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

/// Running per-case pass counts for the live lift estimate on the progress bar.
#[derive(Default)]
struct RunningLift {
    cases: HashMap<String, [(u32, u32); 2]>,
}

impl RunningLift {
    fn add(&mut self, record: &TrialRecord) {
        if !record.outcome.is_scored() {
            return;
        }
        let index = if record.arm == Arm::WithSkill { 0 } else { 1 };
        let entry = self.cases.entry(record.case_id.clone()).or_default();
        entry[index].1 += 1;
        if record.outcome == Outcome::Pass {
            entry[index].0 += 1;
        }
    }

    fn message(&self) -> String {
        let differences: Vec<f64> = self
            .cases
            .values()
            .filter(|arms| arms[0].1 > 0 && arms[1].1 > 0)
            .map(|arms| arms[0].0 as f64 / arms[0].1 as f64 - arms[1].0 as f64 / arms[1].1 as f64)
            .collect();
        if differences.is_empty() {
            return "lift: n/a".to_string();
        }
        let lift = differences.iter().sum::<f64>() / differences.len() as f64;
        format!(
            "lift {:+.1} pp over {} cases",
            lift * 100.0,
            differences.len()
        )
    }
}

/// Run the trials not yet in `done`, appending each finished one to `log`.
///
/// Records go to a dedicated recorder thread that appends and fsyncs them; while one fsync is in
/// progress the next finished trials queue up and are committed together (group commit), so the
/// async workers never block on the disk.
pub async fn execute(
    context: Arc<TrialContext>,
    settings: ExecuteSettings,
    done: &HashSet<TrialKey>,
    previous: &[TrialRecord],
    log: TrialLog,
) -> Result<ExecuteReport, ExecuteError> {
    let started = Instant::now();
    let planned = plan_trials(&context.cases, settings.k);
    let total = planned.len() as u64;
    let pending: Vec<(usize, TrialKey)> = planned
        .into_iter()
        .filter(|(_, key)| !done.contains(key))
        .collect();
    let pending_count = pending.len();

    let bar = if settings.progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(8));
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials  {msg}",
            )
            .expect("valid template"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    bar.set_position(total - pending.len() as u64);
    let mut running = RunningLift::default();
    for record in previous {
        running.add(record);
    }
    bar.set_message(running.message());

    // Recorder thread: owns the log; reports each committed batch back.
    let (record_sender, record_receiver) = std::sync::mpsc::channel::<TrialRecord>();
    let (committed_sender, mut committed_receiver) =
        mpsc::unbounded_channel::<Result<Vec<TrialRecord>, RecordError>>();
    let recorder = std::thread::Builder::new()
        .name("skill-lift-recorder".to_string())
        .spawn(move || {
            let mut log = log;
            while let Ok(first) = record_receiver.recv() {
                let mut batch = vec![first];
                while let Ok(more) = record_receiver.try_recv() {
                    batch.push(more);
                }
                let result = log.append(&batch).map(|()| batch);
                let failed = result.is_err();
                if committed_sender.send(result).is_err() || failed {
                    break;
                }
            }
        })
        .map_err(|source| {
            ExecuteError::Record(RecordError::Io {
                path: context.run_dir.clone(),
                source,
            })
        })?;

    let (fatal_sender, mut fatal_receiver) = mpsc::unbounded_channel::<String>();
    let semaphore = Arc::new(Semaphore::new(settings.jobs.max(1)));
    let spawner_context = Arc::clone(&context);
    let spawner = tokio::spawn(async move {
        let mut tasks = JoinSet::new();
        for (case_index, key) in pending {
            let Ok(permit) = Arc::clone(&semaphore).acquire_owned().await else {
                break;
            };
            let context = Arc::clone(&spawner_context);
            let record_sender = record_sender.clone();
            let fatal_sender = fatal_sender.clone();
            tasks.spawn(async move {
                // The trial runs in its own task so a panic anywhere in it is caught here and
                // recorded as an unscoreable trial (cause `internal_error`), never lost.
                let started_at = Utc::now();
                let clock = Instant::now();
                let trial = {
                    let context = Arc::clone(&context);
                    let key = key.clone();
                    tokio::spawn(async move { run_trial(&context, case_index, &key).await })
                };
                match trial.await {
                    Ok(Ok(record)) => {
                        let _ = record_sender.send(record);
                    }
                    Ok(Err(TrialFatal::Leak(message))) => {
                        let _ = fatal_sender.send(message);
                    }
                    Err(join_error) if join_error.is_panic() => {
                        let grade = UnscoreableCause::InternalError.grade(format!(
                            "the trial's task panicked: {}",
                            panic_text(join_error)
                        ));
                        let _ = record_sender.send(build_record(
                            &context, &key, started_at, clock, grade, None, None, None,
                        ));
                    }
                    // Cancelled: the run is stopping (interrupt or fatal error); re-run on resume.
                    Err(_) => {}
                }
                drop(permit);
            });
            // Reap finished tasks so the set stays small.
            while tasks.try_join_next().is_some() {}
        }
        while tasks.join_next().await.is_some() {}
    });
    let abort = spawner.abort_handle();

    let mut recorded = 0usize;
    let mut interrupted = false;
    let mut breaker = None;
    // The infrastructure causes of the trailing run of infrastructure failures.
    let mut failing_streak: Vec<crate::trajectory::InfrastructureCause> = Vec::new();
    let mut fatal = None;
    let mut record_error = None;
    let interrupt = wait_for_interrupt();
    tokio::pin!(interrupt);
    loop {
        tokio::select! {
            committed = committed_receiver.recv() => {
                match committed {
                    None => break,
                    Some(Ok(batch)) => {
                        recorded += batch.len();
                        for record in &batch {
                            running.add(record);
                            match record.infrastructure {
                                Some(cause) if record.outcome == Outcome::Unscoreable => {
                                    failing_streak.push(cause)
                                }
                                _ => failing_streak.clear(),
                            }
                        }
                        if settings.breaker > 0
                            && failing_streak.len() >= settings.breaker
                            && breaker.is_none()
                            && !interrupted
                        {
                            // Stop scheduling; trials in flight are dropped (re-run on resume).
                            breaker = Some(breaker_reason(&failing_streak, &batch));
                            abort.abort();
                        }
                        bar.inc(batch.len() as u64);
                        bar.set_message(running.message());
                    }
                    Some(Err(error)) => {
                        record_error = Some(error);
                        abort.abort();
                    }
                }
            }
            Some(error) = fatal_receiver.recv(), if fatal.is_none() => {
                fatal = Some(error);
                abort.abort();
            }
            _ = &mut interrupt, if !interrupted => {
                // Stop new trials and drop those in flight (re-run on resume); what already
                // finished is still committed before the loop ends.
                interrupted = true;
                abort.abort();
            }
        }
    }
    let _ = spawner.await;
    let _ = recorder.join();
    bar.finish_and_clear();
    if let Some(error) = record_error {
        return Err(ExecuteError::Record(error));
    }
    if let Some(error) = fatal {
        return Err(ExecuteError::Leak(error));
    }
    Ok(ExecuteReport {
        recorded,
        interrupted,
        missing: pending_count.saturating_sub(recorded),
        breaker,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// Why a trial stops the whole run.
#[derive(Debug)]
enum TrialFatal {
    /// The leak guard found the target in the baseline.
    Leak(String),
}

/// The message of a panicked task, when it carried one.
fn panic_text(error: tokio::task::JoinError) -> String {
    let payload = error.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// Resolves on Ctrl-C or SIGTERM (the process-wide handler of `crate::contain`).
async fn wait_for_interrupt() {
    crate::contain::interrupted().await;
}

/// Why the circuit breaker tripped: the streak's length, its causes and the last message.
fn breaker_reason(
    streak: &[crate::trajectory::InfrastructureCause],
    batch: &[TrialRecord],
) -> String {
    let mut causes: std::collections::BTreeMap<&str, usize> = Default::default();
    for cause in streak {
        *causes.entry(cause.as_str()).or_default() += 1;
    }
    let causes = causes
        .iter()
        .map(|(cause, count)| format!("{cause} {count}"))
        .collect::<Vec<_>>()
        .join(", ");
    let last = batch
        .iter()
        .rev()
        .find_map(|record| record.reason.as_deref())
        .unwrap_or("no reason recorded");
    format!(
        "circuit breaker: the last {} trials all failed for infrastructure reasons ({causes}); last: {}",
        streak.len(),
        crate::runner::parsers::truncate(last, 300)
    )
}

/// Run one trial: stage, drive the runner under the trial timeout, grade, write the transcript.
/// File-system work (staging, grading workspace checks, transcript, clean-up) runs on the
/// blocking pool so slow file systems never stall the async workers.
/// `Err` only for a leak-guard violation, which stops the run; a panic in a blocking step is an
/// unscoreable record (cause `internal_error`).
async fn run_trial(
    context: &Arc<TrialContext>,
    case_index: usize,
    key: &TrialKey,
) -> Result<TrialRecord, TrialFatal> {
    // Fault injection for the tests (debug builds only): a panic inside a trial must become an
    // unscoreable record, never a lost trial.
    if cfg!(debug_assertions)
        && std::env::var("SKILL_LIFT_FAULT_PANIC_TRIAL").is_ok_and(|id| id == key.trial_id())
    {
        panic!(
            "fault injection: SKILL_LIFT_FAULT_PANIC_TRIAL={}",
            key.trial_id()
        );
    }
    let started_at = Utc::now();
    let clock = Instant::now();
    let staging_context = Arc::clone(context);
    let staging = context.design.staging(key.arm);
    let staged = tokio::task::spawn_blocking(move || {
        let context = &staging_context;
        stage_trial(
            staging,
            &context.cases[case_index],
            &context.target,
            &context.decoys,
            context.runner.skills_dir(),
            &context.eval_files_dir,
            &context.target_digest,
            context.calibre,
            context.workspace_root.as_deref(),
            Some(&context.run_dir),
        )
    })
    .await;
    let staged = match staged {
        Ok(Ok(staged)) => staged,
        Ok(Err(error)) if error.is_leak() => {
            return Err(TrialFatal::Leak(error.to_string()));
        }
        Ok(Err(error)) => {
            let grade = UnscoreableCause::StagingFailed.grade(error);
            return Ok(build_record(
                context, key, started_at, clock, grade, None, None, None,
            ));
        }
        Err(join_error) => {
            let grade = UnscoreableCause::InternalError
                .grade(format!("the staging task failed: {join_error}"));
            return Ok(build_record(
                context, key, started_at, clock, grade, None, None, None,
            ));
        }
    };
    let case = &context.cases[case_index];
    let input = AttemptInput {
        prompt: &case.prompt,
        workspace: &staged.workspace,
        home: &staged.home,
        skills: &staged.skills,
        model: &context.model,
        timeout: context.trial_timeout,
    };
    let outcome = tokio::time::timeout(
        context.trial_timeout + TIMEOUT_MARGIN,
        context.runner.run_attempt(input),
    )
    .await;
    // Credential values never reach a transcript, a judge or a custom grader: they are
    // replaced by a marker the `security` metric still reports.
    let outcome = match outcome {
        Ok(Ok(mut trajectory)) => {
            trajectory.redact_credentials(context.graders.credentials());
            Ok(Ok(trajectory))
        }
        Ok(Err(mut error)) => {
            if let Some(partial) = error.partial.as_mut() {
                partial.redact_credentials(context.graders.credentials());
            }
            Ok(Err(error))
        }
        timeout => timeout,
    };
    // Judges and custom graders run here, on the async workers, while the workspace exists.
    let staged_names = staged_skill_names(&context.target.name, &context.decoy_names, staging);
    let trial_id = key.trial_id();
    let remote = match &outcome {
        Ok(Ok(trajectory))
            if context.graders.has_remote()
                && catalogue_problem(trajectory, staging, &context.target.name).is_none() =>
        {
            let facts = trial_facts(
                context,
                case,
                trajectory,
                key,
                &trial_id,
                &staged_names,
                &staged.workspace,
                &staged.home,
            );
            context.graders.grade_remote(&facts).await
        }
        _ => RemoteGrades::default(),
    };
    let finishing_context = Arc::clone(context);
    let finishing_key = key.clone();
    let finished = tokio::task::spawn_blocking(move || {
        let context = &finishing_context;
        let key = &finishing_key;
        let mut staged = staged;
        let case = &context.cases[case_index];
        let (trajectory, grade): (Option<Trajectory>, Grade) = match outcome {
            Ok(Ok(trajectory)) => {
                let grade = match catalogue_problem(&trajectory, staging, &context.target.name) {
                    Some(reason) => grade::unscoreable(reason),
                    None => {
                        let facts = trial_facts(
                            context,
                            case,
                            &trajectory,
                            key,
                            &trial_id,
                            &staged_names,
                            &staged.workspace,
                            &staged.home,
                        );
                        context.graders.finish(&facts, remote)
                    }
                };
                (Some(trajectory), grade)
            }
            Ok(Err(error)) => {
                let grade = UnscoreableCause::RunnerError.grade(&error.message);
                (error.partial.map(|t| *t), grade)
            }
            Err(_) => {
                let mut trajectory = Trajectory::new();
                trajectory.status = TrajectoryStatus::Incomplete {
                    reason: "trial timeout".to_string(),
                };
                let grade = grade::unscoreable(format!(
                    "{} of {:.0} s",
                    UnscoreableCause::Timeout.prefix(),
                    context.trial_timeout.as_secs_f64()
                ));
                (Some(trajectory), grade)
            }
        };
        let mut grade = grade;
        let mut trajectory = trajectory;
        let transcript = match trajectory.as_mut() {
            Some(trajectory) => {
                let paths = TrialPaths {
                    workspace: &staged.workspace,
                    home: &staged.home,
                };
                match write_transcript(
                    &context.run_dir,
                    key,
                    case,
                    trajectory,
                    &grade,
                    paths,
                    context.max_transcript_bytes,
                ) {
                    Ok(relative) => Some(relative),
                    // A trial whose transcript is lost cannot be audited or re-graded: it is
                    // unscoreable, and says why (never silently recorded without it).
                    Err(error) => {
                        let was = grade.outcome.as_str();
                        grade = UnscoreableCause::TranscriptWriteFailed.grade(format!(
                            "{}: {error} (graded {was} before)",
                            context.run_dir.join(key.transcript_path()).display()
                        ));
                        None
                    }
                }
            }
            None => None,
        };
        let workspace = if context.keep_workspaces {
            staged.keep()
        } else {
            None
        };
        // Dropping the staged trial removes its folder (unless kept).
        drop(staged);
        build_record(
            context,
            key,
            started_at,
            clock,
            grade,
            trajectory.as_ref(),
            transcript,
            workspace,
        )
    })
    .await;
    match finished {
        Ok(record) => Ok(record),
        Err(join_error) => {
            let grade = UnscoreableCause::InternalError
                .grade(format!("the grading task failed: {join_error}"));
            Ok(build_record(
                context, key, started_at, clock, grade, None, None, None,
            ))
        }
    }
}

/// When the agent reports its skill catalogue: an arm without the target must not list it (a
/// leak from outside the workspace) and an arm with it must (else the target was not
/// discovered, and the trial measures nothing about it). Either makes the trial unscoreable.
fn catalogue_problem(trajectory: &Trajectory, staging: ArmStaging, target: &str) -> Option<String> {
    let catalogue = trajectory.skill_catalogue.as_ref()?;
    // A target the skill tool activated successfully was discovered, whatever the catalogue says.
    let activated = trajectory.skill_activations.iter().any(|a| {
        a.ok && a.evidence == crate::trajectory::ActivationEvidence::SkillTool && a.skill == target
    });
    let listed = catalogue
        .iter()
        .any(|name| name == target || name.rsplit(':').next() == Some(target))
        || (staging == ArmStaging::WithTarget && activated);
    match (staging, listed) {
        (ArmStaging::WithoutTarget, true) => Some(format!(
            "isolation failure: the agent's skill catalogue lists the target `{target}` in an arm without it"
        )),
        (ArmStaging::WithTarget, false) => Some(format!(
            "discovery failure: the agent's skill catalogue does not list the staged target `{target}`"
        )),
        _ => None,
    }
}

/// The grading facts of a trial during the run.
#[allow(clippy::too_many_arguments)]
fn trial_facts<'a>(
    context: &'a TrialContext,
    case: &'a GoldenCase,
    trajectory: &'a Trajectory,
    key: &TrialKey,
    trial_id: &'a str,
    staged_names: &'a [String],
    workspace: &'a Path,
    home: &'a Path,
) -> TrialFacts<'a> {
    TrialFacts {
        case,
        trajectory,
        arm: key.arm,
        attempt: key.attempt,
        trial_id,
        target_skill: &context.target.name,
        staged_skills: staged_names,
        activation_observable: context.activation_observable,
        can_run_commands: context.can_run_commands,
        workspace: Some(workspace),
        run_workspace: Some(workspace),
        run_home: Some(home),
        recorded_checks: None,
    }
}

/// Where a trial ran (recorded in its transcript, so `regrade` judges paths the same way).
#[derive(Clone, Copy)]
struct TrialPaths<'a> {
    workspace: &'a Path,
    home: &'a Path,
}

/// Write the trial's transcript; a transcript over `max_bytes` gets its long texts shortened
/// (and `transcript` added to `trajectory.truncated`, which the trial record repeats).
fn write_transcript(
    run_dir: &Path,
    key: &TrialKey,
    case: &GoldenCase,
    trajectory: &mut Trajectory,
    grade: &Grade,
    paths: TrialPaths<'_>,
    max_bytes: usize,
) -> std::io::Result<String> {
    // The grade and prompt take their share of the cap.
    let others = serde_json::to_vec(grade).map(|v| v.len()).unwrap_or(0) + case.prompt.len() * 2;
    if trajectory.shrink_to(max_bytes.saturating_sub(others + 4096).max(max_bytes / 4))
        && !trajectory
            .truncated
            .contains(&crate::trajectory::OutputCut::Transcript)
    {
        trajectory
            .truncated
            .push(crate::trajectory::OutputCut::Transcript);
    }
    let relative = key.transcript_path();
    let document = crate::record::TranscriptDocument {
        trial_id: key.trial_id(),
        case_id: case.id.clone(),
        arm: key.arm,
        attempt: key.attempt,
        prompt: case.prompt.clone(),
        workspace_path: Some(paths.workspace.to_path_buf()),
        home_path: Some(paths.home.to_path_buf()),
        grade: std::borrow::Cow::Borrowed(grade),
        trajectory: std::borrow::Cow::Borrowed(trajectory),
    };
    let bytes = serde_json::to_vec(&document).map_err(std::io::Error::other)?;
    // The redaction boundary: no credential value or key shape reaches the transcript.
    std::fs::write(run_dir.join(&relative), crate::redact::redact_bytes(&bytes))?;
    Ok(relative)
}

#[allow(clippy::too_many_arguments)]
fn build_record(
    context: &TrialContext,
    key: &TrialKey,
    started_at: chrono::DateTime<Utc>,
    clock: Instant,
    grade: Grade,
    trajectory: Option<&Trajectory>,
    transcript: Option<String>,
    workspace: Option<PathBuf>,
) -> TrialRecord {
    let (usage, observed_model, model_latency_s, requests, retries, tool_calls, activated_skills) =
        match trajectory {
            Some(t) => (
                t.usage.clone(),
                t.observed_model.clone(),
                // Not `sum()`: an empty float sum is -0.0.
                t.requests.iter().fold(0.0, |total, r| total + r.latency_s),
                t.requests
                    .iter()
                    .filter(|r| r.model.is_some() || r.finish_reason.is_some())
                    .count(),
                t.requests
                    .iter()
                    .flat_map(|r| r.retries.iter().cloned())
                    .collect(),
                t.tool_calls.len(),
                t.skill_activations
                    .iter()
                    .filter(|a| a.ok)
                    .map(|a| a.skill.clone())
                    .collect(),
            ),
            None => Default::default(),
        };
    let unscoreable_cause = (grade.outcome == Outcome::Unscoreable)
        .then(|| UnscoreableCause::of_reason(grade.reason.as_deref().unwrap_or_default()));
    let infrastructure = (grade.outcome == Outcome::Unscoreable)
        .then(|| infrastructure_cause(trajectory, grade.reason.as_deref()))
        .flatten();
    let truncated = trajectory.map(|t| t.truncated.clone()).unwrap_or_default();
    TrialRecord {
        infrastructure,
        truncated,
        run_id: context.run_id.clone(),
        trial_id: key.trial_id(),
        case_id: key.case_id.clone(),
        arm: key.arm,
        attempt: key.attempt,
        runner: context.runner_name.clone(),
        model: context.model.clone(),
        observed_model,
        outcome: grade.outcome,
        reason: grade.reason,
        decided_by: grade.decided_by,
        outcome_score: grade.outcome_score,
        checks: grade.checks,
        scores: grade.scores,
        composite: grade.composite,
        metrics: crate::record::MetricDetails::for_record(&grade.metrics),
        other_judges: grade.other_judges,
        other_judge_errors: grade.other_judge_errors,
        usage,
        started_at,
        wall_s: clock.elapsed().as_secs_f64(),
        model_latency_s,
        requests,
        retries,
        tool_calls,
        activated_skills,
        transcript,
        workspace,
        supersedes: context.retried.contains(key),
        unscoreable_cause,
        usage_partial: trajectory.is_some_and(|t| t.usage_partial),
    }
}

/// The infrastructure cause of an unscoreable trial: what the agent reported, else what the
/// reason's class says (a runner error's HTTP status or wording, a timeout, an incomplete
/// stream, a grader error). `None` for causes that are not infrastructure (an isolation or
/// discovery failure, a staging error).
fn infrastructure_cause(
    trajectory: Option<&Trajectory>,
    reason: Option<&str>,
) -> Option<crate::trajectory::InfrastructureCause> {
    use crate::trajectory::InfrastructureCause as Cause;
    if let Some(failure) = trajectory.and_then(|t| t.infrastructure_error.as_ref()) {
        return Some(failure.cause);
    }
    if trajectory
        .and_then(|t| t.process.as_ref())
        .is_some_and(|p| p.timed_out)
    {
        return Some(Cause::Timeout);
    }
    let reason = reason.unwrap_or("");
    match UnscoreableCause::of_reason(reason) {
        UnscoreableCause::RunnerError => {
            let message = reason
                .strip_prefix(UnscoreableCause::RunnerError.prefix())
                .unwrap_or(reason);
            Some(Cause::from_error_text(message).unwrap_or(Cause::Runner))
        }
        UnscoreableCause::Timeout => Some(Cause::Timeout),
        UnscoreableCause::IncompleteTrajectory | UnscoreableCause::InternalError => {
            Some(Cause::Runner)
        }
        UnscoreableCause::GraderError => Some(Cause::Grader),
        UnscoreableCause::AgentApiError => Some(
            Cause::ALL
                .into_iter()
                .find(|cause| reason.starts_with(cause.describe()))
                .unwrap_or(Cause::Runner),
        ),
        UnscoreableCause::StagingFailed
        | UnscoreableCause::TranscriptWriteFailed
        | UnscoreableCause::IsolationFailure
        | UnscoreableCause::DiscoveryFailure
        | UnscoreableCause::Other => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infrastructure_causes_are_typed() {
        use crate::trajectory::InfrastructureCause as Cause;
        let mut trajectory = Trajectory::new();
        assert_eq!(infrastructure_cause(Some(&trajectory), None), None);
        assert_eq!(
            infrastructure_cause(
                None,
                Some("runner error: HTTP 429: slow down (gave up after 4 retries)")
            ),
            Some(Cause::RateLimited)
        );
        assert_eq!(
            infrastructure_cause(None, Some("runner error: error sending request for url")),
            Some(Cause::ApiUnreachable)
        );
        assert_eq!(
            infrastructure_cause(None, Some("trial exceeded its timeout of 5 s")),
            Some(Cause::Timeout)
        );
        assert_eq!(
            infrastructure_cause(None, Some("grader error: judge unavailable")),
            Some(Cause::Grader)
        );
        assert_eq!(
            infrastructure_cause(
                None,
                Some("isolation failure: the agent's skill catalogue lists the target")
            ),
            None
        );
        trajectory.set_infrastructure_error(
            Cause::ApiUnreachable,
            "API Error: Can't reach the API server (ENOTFOUND)",
        );
        assert_eq!(
            infrastructure_cause(Some(&trajectory), Some("incomplete trajectory: x")),
            Some(Cause::ApiUnreachable)
        );
    }

    #[test]
    fn catalogue_is_checked_per_arm() {
        let mut trajectory = Trajectory::new();
        assert_eq!(
            catalogue_problem(&trajectory, ArmStaging::WithoutTarget, "t"),
            None
        );
        trajectory.skill_catalogue = Some(vec!["decoy".into(), "plugin:t".into()]);
        assert!(
            catalogue_problem(&trajectory, ArmStaging::WithoutTarget, "t")
                .unwrap()
                .contains("isolation failure")
        );
        assert_eq!(
            catalogue_problem(&trajectory, ArmStaging::WithTarget, "t"),
            None
        );
        trajectory.skill_catalogue = Some(vec!["decoy".into()]);
        assert!(
            catalogue_problem(&trajectory, ArmStaging::WithTarget, "t")
                .unwrap()
                .contains("discovery failure")
        );
        assert_eq!(
            catalogue_problem(&trajectory, ArmStaging::WithoutTarget, "t"),
            None
        );
    }
}
