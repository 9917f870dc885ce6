//! The trial pipeline's scheduler: runs the planned trials with bounded concurrency through the
//! typed stages of one trial ([`stage`] → [`drive`] → [`grade_trial`] → [`record_trial`]), and
//! owns the one dispatcher every worker reports to.
//!
//! Workers send typed [`TrialEvent`]s (started, retried, finished, fatal); the dispatcher alone
//! touches the terminal (progress: a bar, or status lines where stderr is a log —
//! `crate::report::progress`), the trial log (through a [`RecordSink`] on a recorder
//! thread: one write and one fsync per batch of finished trials, group commit) and the live
//! record store the periodic exports are written from (memory, never a re-read of
//! `trials.jsonl`). A fatal event (a leak, a panicked scheduler task, a failed append) stops the
//! run with its own [`ExecuteError`].
//!
//! Order: attempts outermost, then cases, then arms, so a partial run stays balanced between
//! arms. Interrupts stop new trials and drop the ones in flight (they are re-run on resume).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::features::asset::fingerprint::Calibre;
use crate::features::evalset::GoldenCase;
use crate::features::grade::pipeline::{GraderSet, RemoteGrades, TrialFacts, staged_skill_names};
use crate::features::runner::StagedSkill;
use crate::features::runner::{AttemptError, AttemptInput, Runner};
use crate::features::workspace::{
    ArmStaging, SkillSource, StagedTrial, StagingNeed, TrialStaging, stage_arm_in_memory,
    stage_trial_in_slot,
};
use crate::record::{
    Arm, ArmDesign, FinishedTrial, Grade, Outcome, RecordError, TrialKey, TrialLog, TrialRecord,
    UnscoreableCause,
};
use crate::values::trajectory::{Trajectory, TrajectoryStatus};

/// Extra time past the runner's own budget before the scheduler abandons an attempt.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// Everything the trials of one run share.
pub(crate) struct TrialContext {
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
    /// What the runner can do (skills folder, observability, shell), as the manifest records.
    pub capabilities: crate::record::RunnerCapabilities,
    /// Trials re-run by `--retry-unscoreable`: their new records supersede the recorded ones.
    pub retried: HashSet<TrialKey>,
    /// Bytes of one transcript file at most (the runner profile's `max_transcript_bytes`).
    pub max_transcript_bytes: usize,
    /// What each arm stages (the paired comparison, or an A/A control).
    pub design: ArmDesign,
    /// The run's arms, in planning order (the manifest's `arms`).
    pub arms: Vec<Arm>,
    /// The previous version of the target, when the run has a `previous_version` arm.
    pub previous: Option<crate::features::workspace::PreviousSkill>,
    /// The target's `SKILL.md` text (the `forced` exposure puts it in the prompt).
    pub target_skill_md: String,
    /// Each arm's skills staged in memory, once per run, for the trials that need no folder
    /// ([`StagingNeed::InMemory`]); starts empty.
    pub memory_staging: MemoryStaging,
    /// The trial folders reused per job slot, for the trials that need one
    /// ([`crate::features::workspace::SlotPool`]); starts empty, emptied when the run ends.
    pub slots: Arc<crate::features::workspace::SlotPool>,
    /// How trials order the skills they present (the manifest's `skill_order`).
    pub skill_order: crate::record::SkillOrdering,
    /// The run's seed (the manifest's `seed`): with the case and attempt, it fixes a balanced
    /// trial's skill order; with the case, arm and attempt, a seeded profile's sampling seeds
    /// ([`crate::features::runner::sampling`]).
    pub seed: u64,
}

/// What went wrong staging an arm in memory (kept, so every trial of the arm reports it).
#[derive(Debug, Clone)]
enum ArmStagingFailure {
    /// The leak guard's finding: the run stops.
    Leak(String),
    /// An I/O failure: the arm's trials are unscoreable.
    Io(String),
}

type ArmSkills = Result<Arc<[StagedSkill]>, ArmStagingFailure>;

/// Each arm's skills staged once per run in memory ([`stage_arm_in_memory`]: the leak guard
/// runs once per arm, not per trial), and whether the skill has `evals/files/` (which a case
/// without `files` stages into a folder).
#[derive(Default)]
pub(crate) struct MemoryStaging {
    arms: [std::sync::OnceLock<ArmSkills>; 3],
    eval_files_exist: std::sync::OnceLock<bool>,
}

impl MemoryStaging {
    fn cell(&self, staging: ArmStaging) -> &std::sync::OnceLock<ArmSkills> {
        &self.arms[match staging {
            ArmStaging::WithTarget => 0,
            ArmStaging::WithoutTarget => 1,
            ArmStaging::WithPrevious => 2,
        }]
    }
}

/// Writes the exports of a run's current records.
pub(crate) type ExportFn = dyn Fn(&LiveRecords) + Send + Sync;

/// The run's current records as the dispatcher keeps them for the periodic exports: the records
/// read at the start and every batch committed since, each batch shared, so the snapshot an
/// export is written from copies one pointer per batch, never a record.
#[derive(Clone, Default)]
pub(crate) struct LiveRecords {
    batches: Vec<Arc<[TrialRecord]>>,
    len: usize,
}

impl LiveRecords {
    /// Add a batch after those already held (an empty one adds nothing).
    fn push(&mut self, batch: Vec<TrialRecord>) {
        if !batch.is_empty() {
            self.len += batch.len();
            self.batches.push(Arc::from(batch));
        }
    }

    /// The records held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether no record is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The records, in the order they were added.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &TrialRecord> {
        self.batches.iter().flat_map(|batch| batch.iter())
    }
}

/// The exports rewritten during a run, from the dispatcher's records in memory.
#[derive(Clone)]
pub(crate) struct PeriodicExports {
    /// Time between two exports (one is skipped when nothing was recorded since the last).
    pub interval: Duration,
    /// Writes the exports of the run's current records (failures are the callee's to ignore:
    /// the final export at the end of the run reports them).
    pub export: Arc<ExportFn>,
}

/// How the scheduler runs the planned trials (jobs, K, progress, breaker, periodic exports, one
/// round of a sequential run); built by the run pipeline from its `ExecutionSettings`.
#[derive(Clone)]
pub(crate) struct SchedulerSettings {
    /// Trials in flight at once.
    pub jobs: usize,
    /// Attempts per case per arm.
    pub k: u32,
    /// How progress is shown (a bar on a terminal, status lines in logs, or nothing).
    pub progress: crate::report::progress::ProgressDisplay,
    /// The circuit breaker: stop scheduling once this many trials in a row (in recording order)
    /// failed for infrastructure reasons; 0 disables it. A trial's job slot is freed only after
    /// the dispatcher has counted it, so no trial starts after the one that trips the breaker:
    /// only the trials already in flight then (at most `jobs` − 1) may still be recorded.
    pub breaker: usize,
    /// Exports rewritten during the run, when any.
    pub exports: Option<PeriodicExports>,
    /// Run only these of the pending trials (one round of `crate::pipeline::sequential`); progress still
    /// counts against the whole plan. `None`: every pending trial.
    pub round: Option<Arc<HashSet<TrialKey>>>,
    /// Where finished trials go as OpenTelemetry spans (`OTEL_EXPORTER_OTLP_ENDPOINT`), when
    /// anywhere: the dispatcher hands each finished trial to it as the trial goes to the
    /// recorder; the export runs on its own thread and never stops or slows a trial.
    pub traces: Option<Arc<crate::report::trace_export::TraceExport>>,
}

/// How execution ended.
#[derive(Debug)]
pub(crate) struct ExecuteReport {
    /// Trials recorded by this invocation.
    pub recorded: usize,
    /// Whether an interrupt stopped the run early.
    pub interrupted: bool,
    /// Trials this invocation was to run that were not recorded (0 unless interrupted or
    /// something failed: the caller must not report success when it is not 0).
    pub missing: usize,
    /// Why the circuit breaker stopped the run early, when it did.
    pub breaker: Option<String>,
    /// Model requests of this invocation's trials that were retried (rate limits, 5xx).
    pub retried_requests: usize,
    /// Wall time, seconds.
    pub wall_s: f64,
}

/// A failure that stops the whole run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExecuteError {
    /// Appending to the trial log failed (the run folder is no longer trustworthy to extend).
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The leak guard found the target where an arm must not have it (an input problem).
    #[error("{0}")]
    Leak(String),
    /// skill-lift itself failed: a scheduler or recorder task panicked. An internal error,
    /// never reported as the input error a leak is.
    #[error("internal error: {0}")]
    Internal(String),
    /// A recorded trial cannot be graded again (regrade; an input problem).
    #[error(transparent)]
    RecordedTrial(#[from] RecordedTrialError),
}

/// Why a recorded trial cannot be graded again (`regrade`): the run folder or the eval set no
/// longer holds what the record points at.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordedTrialError {
    /// The transcript cannot be read from the run folder.
    #[error(transparent)]
    Read(RecordError),
    /// The record names a transcript the run folder does not hold.
    #[error("{}: transcript not found", .0.display())]
    TranscriptMissing(PathBuf),
    /// The transcript is not a transcript document.
    #[error("{}: not a transcript", .path.display())]
    NotATranscript {
        /// The transcript's path.
        path: PathBuf,
        /// What the JSON parser found.
        #[source]
        source: serde_json::Error,
    },
    /// The record's case is not in the eval set.
    #[error("{}: case `{case}` is not in the eval set", .path.display())]
    UnknownCase {
        /// The transcript's path.
        path: PathBuf,
        /// The recorded case id.
        case: String,
    },
}

/// What ends a run early, as a worker or the recorder reports it.
#[derive(Debug)]
pub(crate) enum Fatal {
    /// The leak guard's finding.
    Leak(String),
    /// A scheduler task panicked (a trial's own panic is a recorded unscoreable trial instead).
    TaskPanicked(String),
    /// The trial log refused a batch.
    Record(RecordError),
    /// A recorded trial cannot be graded again (regrade).
    RecordedTrial(RecordedTrialError),
}

/// What a worker reports to the dispatcher.
#[derive(Debug)]
pub(crate) enum TrialEvent {
    /// The trial was taken from the queue and is being staged.
    Started,
    /// The trial's model requests were retried this many times (reported with its record).
    Retried { requests: usize },
    /// The trial is graded; its record and transcript go to the log.
    Finished {
        /// The trial's place among the pending ones (the order an in-order dispatch commits in).
        seq: usize,
        /// Its record and transcript.
        trial: Box<FinishedTrial>,
        /// Its job slot, held until the dispatcher has fed the trial to the circuit breaker (no
        /// trial starts in its slot before the breaker has seen it) and, when the dispatch is
        /// in order, until the trial is committed (so at most `jobs` trials wait in memory).
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
    },
    /// The run must stop.
    Fatal(Fatal),
}

/// Where the dispatcher's recorder thread commits finished trials (the run's `trials.jsonl`
/// and transcript log; tests may fail on purpose).
pub(crate) trait RecordSink: Send + 'static {
    /// Commit one batch durably, in order: transcripts before the records that point at them
    /// (the sink sets each record's `transcript` and `transcript_span`).
    fn append(&mut self, batch: &mut [FinishedTrial]) -> Result<(), RecordError>;
}

impl RecordSink for TrialLog {
    fn append(&mut self, batch: &mut [FinishedTrial]) -> Result<(), RecordError> {
        TrialLog::commit(self, batch)
    }
}

/// The planned trial keys in execution order: attempts, then cases, then `arms`.
pub(crate) fn plan_trials(cases: &[GoldenCase], arms: &[Arm], k: u32) -> Vec<(usize, TrialKey)> {
    let mut trials = Vec::with_capacity(cases.len() * arms.len() * k as usize);
    for attempt in 1..=k {
        for (index, case) in cases.iter().enumerate() {
            for &arm in arms {
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

/// Running per-case pass counts for the live lift estimate on the progress bar.
#[derive(Default)]
struct RunningLift {
    cases: HashMap<String, [(u32, u32); 2]>,
    /// The run has arms besides the classic pair: the message names the pair it estimates.
    labelled: bool,
}

impl RunningLift {
    fn add(&mut self, record: &TrialRecord) {
        if !record.outcome.is_scored() {
            return;
        }
        // The live estimate is the classic pair's; other arms are in the exports.
        let index = match record.arm {
            Arm::WithSkill => 0,
            Arm::WithoutSkill => 1,
            _ => return,
        };
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
        let label = if self.labelled {
            " (with_skill vs without_skill)"
        } else {
            ""
        };
        if differences.is_empty() {
            return format!("lift{label}: n/a");
        }
        let lift = differences.iter().sum::<f64>() / differences.len() as f64;
        format!(
            "lift{label} {:+.1} pp over {} cases",
            lift * 100.0,
            differences.len()
        )
    }
}

/// The one owner of the run's terminal output, trial log, live records and stop decisions.
struct Dispatcher {
    progress: crate::report::progress::Progress,
    running: RunningLift,
    /// The run's current records (those read at the start plus every committed one): the
    /// periodic exports are written from a snapshot of them.
    live: LiveRecords,
    /// Whether `live` is kept (periodic exports are set).
    keep_live: bool,
    /// `live.len()` at the last periodic export.
    exported: Option<usize>,
    recorded: usize,
    started: usize,
    retried_requests: usize,
    breaker_limit: usize,
    /// Trials in a row with the same model-API cause that trip the breaker before
    /// `breaker_limit`: one per job slot (at most `breaker_limit`), i.e. every trial that was in
    /// flight saw the same fault. With one job the streak rule alone applies (`usize::MAX`).
    same_cause_limit: usize,
    breaker: Option<String>,
    /// The infrastructure causes of the trailing run of infrastructure failures (in the order
    /// trials go to the recorder).
    failing_streak: Vec<crate::values::trajectory::InfrastructureCause>,
    /// The reason of the latest trial in the streak.
    last_failure: Option<String>,
    fatal: Option<Fatal>,
    interrupted: bool,
}

impl Dispatcher {
    /// Feed a finished trial, as it goes to the recorder, to the circuit breaker. Returns
    /// whether the run must stop scheduling (the breaker tripped on this trial).
    fn breaker_sees(&mut self, record: &TrialRecord) -> bool {
        match record.infrastructure {
            Some(cause) if record.outcome == Outcome::Unscoreable => {
                self.failing_streak.push(cause);
                self.last_failure = record.reason.clone();
            }
            _ => self.failing_streak.clear(),
        }
        let same_cause = self.failing_streak.len() >= self.same_cause_limit
            && self.failing_streak[self.failing_streak.len() - self.same_cause_limit..]
                .windows(2)
                .all(|pair| pair[0] == pair[1])
            && self
                .failing_streak
                .last()
                .is_some_and(|cause| cause.is_api());
        let trip = self.breaker_limit > 0
            && (self.failing_streak.len() >= self.breaker_limit || same_cause)
            && self.breaker.is_none()
            && !self.interrupted
            && self.fatal.is_none();
        if trip {
            self.breaker = Some(breaker_reason(
                &self.failing_streak,
                self.last_failure.as_deref(),
            ));
        }
        trip
    }

    /// Take a committed batch: count it and feed the live lift.
    fn committed(&mut self, batch: Vec<TrialRecord>) {
        self.recorded += batch.len();
        for record in &batch {
            self.running.add(record);
        }
        let count = batch.len() as u64;
        if self.keep_live {
            self.live.push(batch);
        }
        self.progress.advance(count, self.message());
    }

    fn message(&self) -> String {
        let mut message = self.running.message();
        if self.retried_requests > 0 {
            message.push_str(&format!(", {} requests retried", self.retried_requests));
        }
        message
    }

    /// Take a fatal event (the first one wins). Returns whether it is the first.
    fn fatal(&mut self, fatal: Fatal) -> bool {
        if self.fatal.is_some() {
            return false;
        }
        self.fatal = Some(fatal);
        true
    }
}

/// The work the dispatcher schedules, one item per trial: `run` stages, drives and grades a
/// planned trial ([`TrialContext`]); `regrade` grades a recorded trajectory again. Every kind
/// reports through the same [`TrialEvent`]s to the same dispatcher ([`dispatch`]).
pub(crate) trait TrialWork: Send + Sync + 'static {
    /// One trial's input (a planned key with its case, a recorded trial).
    type Item: Clone + Send + 'static;
    /// Do the trial: its finished record and transcript, or what stops the whole run.
    fn run(
        self: Arc<Self>,
        item: Self::Item,
    ) -> impl Future<Output = Result<FinishedTrial, Fatal>> + Send + 'static;
    /// The trial's task panicked with `message`: its record (a run records it unscoreable), or
    /// what stops the whole run.
    fn panicked(
        &self,
        item: &Self::Item,
        started: TrialClock,
        message: String,
    ) -> Result<FinishedTrial, Fatal>;
    /// Every trial has ended (a run removes its reused trial folders).
    fn ended(&self) {}
}

impl TrialWork for TrialContext {
    type Item = (usize, TrialKey);

    async fn run(self: Arc<Self>, (case_index, key): Self::Item) -> Result<FinishedTrial, Fatal> {
        run_trial(&self, case_index, &key).await
    }

    fn panicked(
        &self,
        (_, key): &Self::Item,
        started: TrialClock,
        message: String,
    ) -> Result<FinishedTrial, Fatal> {
        // Recorded as an unscoreable trial (cause `internal_error`), never lost.
        let grade =
            UnscoreableCause::InternalError.grade(format!("the trial's task panicked: {message}"));
        Ok(FinishedTrial::without_transcript(record_trial(
            self, key, started, grade, None, None,
        )))
    }

    fn ended(&self) {
        // Every trial has ended: the reused trial folders go.
        self.slots.clear();
    }
}

/// Run the trials not yet in `done`, appending each finished one to `sink`; `interrupt`
/// resolving stops the run (Ctrl-C in production: [`crate::features::contain::interrupted`]).
///
/// Records go to a dedicated recorder thread that appends and fsyncs them; while one fsync is in
/// progress the next finished trials queue up and are committed together (group commit), so the
/// async workers never block on the disk.
pub(crate) async fn execute(
    context: Arc<TrialContext>,
    settings: SchedulerSettings,
    done: &HashSet<TrialKey>,
    previous: &[TrialRecord],
    sink: impl RecordSink,
    interrupt: impl Future<Output = ()>,
) -> Result<ExecuteReport, ExecuteError> {
    let planned = plan_trials(&context.cases, &context.arms, settings.k);
    let total = planned.len() as u64;
    let pending: Vec<(usize, TrialKey)> = planned
        .into_iter()
        .filter(|(_, key)| !done.contains(key))
        .collect();
    let already_done = total - pending.len() as u64;
    // A round runs its own share of the pending trials.
    let pending: Vec<(usize, TrialKey)> = match &settings.round {
        Some(round) => pending
            .into_iter()
            .filter(|(_, key)| round.contains(key))
            .collect(),
        None => pending,
    };
    let labelled = context.arms.iter().any(|arm| !Arm::PAIRED.contains(arm));
    let progress = Planned {
        total,
        already_done,
        labelled,
        in_order: false,
    };
    dispatch(
        context, pending, progress, &settings, previous, sink, interrupt,
    )
    .await
}

/// What the progress display counts against: the whole plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Planned {
    /// Trials of the whole plan.
    pub total: u64,
    /// Trials of the plan recorded before this invocation.
    pub already_done: u64,
    /// The run has arms besides the classic pair (the live lift names the pair it estimates).
    pub labelled: bool,
    /// Commit the trials in the order of `pending` (a regrade keeps the recorded order), not
    /// in the order they finish.
    pub in_order: bool,
}

/// The one dispatcher: runs `pending` through `work` with `settings.jobs` in flight, owns the
/// progress display, the live lift, the recorder thread committing to `sink`, the live records
/// the periodic exports are written from (starting from `previous`), the circuit breaker and
/// the fatal events; `interrupt` resolving stops new trials and drops those in flight.
pub(crate) async fn dispatch<W: TrialWork>(
    work: Arc<W>,
    pending: Vec<W::Item>,
    planned: Planned,
    settings: &SchedulerSettings,
    previous: &[TrialRecord],
    sink: impl RecordSink,
    interrupt: impl Future<Output = ()>,
) -> Result<ExecuteReport, ExecuteError> {
    let started = Instant::now();
    let pending_count = pending.len();
    let mut running = RunningLift {
        labelled: planned.labelled,
        ..RunningLift::default()
    };
    for record in previous {
        running.add(record);
    }
    let mut dispatcher = Dispatcher {
        progress: crate::report::progress::Progress::start(
            settings.progress,
            planned.total,
            planned.already_done,
            running.message(),
        ),
        running,
        // Kept only when something exports from it.
        live: {
            let mut live = LiveRecords::default();
            if settings.exports.is_some() {
                live.push(previous.to_vec());
            }
            live
        },
        keep_live: settings.exports.is_some(),
        exported: None,
        recorded: 0,
        started: 0,
        retried_requests: 0,
        breaker_limit: settings.breaker,
        same_cause_limit: if settings.jobs >= 2 {
            settings.jobs.min(settings.breaker.max(1))
        } else {
            usize::MAX
        },
        breaker: None,
        failing_streak: Vec::new(),
        last_failure: None,
        fatal: None,
        interrupted: false,
    };

    // Recorder thread: owns the sink; reports each committed batch back.
    let (record_sender, record_receiver) = std::sync::mpsc::channel::<FinishedTrial>();
    let (committed_sender, mut committed_receiver) =
        mpsc::unbounded_channel::<Result<Vec<TrialRecord>, RecordError>>();
    let recorder = std::thread::Builder::new()
        .name("skill-lift-recorder".to_string())
        .spawn(move || {
            let mut sink = sink;
            while let Ok(first) = record_receiver.recv() {
                let mut batch = vec![first];
                while let Ok(more) = record_receiver.try_recv() {
                    batch.push(more);
                }
                let result = sink
                    .append(&mut batch)
                    .map(|()| batch.into_iter().map(|trial| trial.record).collect());
                let failed = result.is_err();
                if committed_sender.send(result).is_err() || failed {
                    break;
                }
            }
        })
        .map_err(|error| ExecuteError::Internal(format!("cannot start the recorder: {error}")))?;

    let mut record_sender = Some(record_sender);
    let (event_sender, mut event_receiver) = mpsc::unbounded_channel::<TrialEvent>();
    let semaphore = Arc::new(Semaphore::new(settings.jobs.max(1)));
    let spawner_work = Arc::clone(&work);
    let in_order = planned.in_order;
    let spawner = tokio::spawn(async move {
        let mut tasks = JoinSet::new();
        for (seq, item) in pending.into_iter().enumerate() {
            let Ok(permit) = Arc::clone(&semaphore).acquire_owned().await else {
                break;
            };
            let work = Arc::clone(&spawner_work);
            let events = event_sender.clone();
            tasks.spawn(async move {
                let _ = events.send(TrialEvent::Started);
                // The trial runs in its own task so a panic anywhere in it is caught here and
                // handed to the work ([`TrialWork::panicked`]), never lost.
                let clock = TrialClock {
                    started_at: Utc::now(),
                    clock: Instant::now(),
                };
                let trial = tokio::spawn(Arc::clone(&work).run(item.clone()));
                let result = match trial.await {
                    Ok(result) => result,
                    Err(join_error) if join_error.is_panic() => {
                        work.panicked(&item, clock, panic_text(join_error))
                    }
                    // Cancelled: the run is stopping (interrupt or fatal error); re-run on resume.
                    Err(_) => return,
                };
                // A finished trial's slot goes with it to the dispatcher, which frees it once the
                // circuit breaker has counted the trial.
                let (event, permit) = match result {
                    Ok(record) => (
                        TrialEvent::Finished {
                            seq,
                            trial: Box::new(record),
                            permit: Some(permit),
                        },
                        None,
                    ),
                    Err(fatal) => (TrialEvent::Fatal(fatal), Some(permit)),
                };
                if let TrialEvent::Finished { trial, .. } = &event
                    && !trial.record.retries.is_empty()
                {
                    let _ = events.send(TrialEvent::Retried {
                        requests: trial.record.retries.len(),
                    });
                }
                let _ = events.send(event);
                drop(permit);
            });
            // Reap finished tasks so the set stays small.
            while tasks.try_join_next().is_some() {}
        }
        while tasks.join_next().await.is_some() {}
    });
    let abort = spawner.abort_handle();
    // The spawner's own end: a panic there is fatal (an internal error, never a leak).
    let mut spawner = Some(spawner);

    let mut export_tick = settings.exports.as_ref().map(|exports| {
        tokio::time::interval_at(
            tokio::time::Instant::now() + exports.interval,
            exports.interval,
        )
    });
    let mut export_job: Option<tokio::task::JoinHandle<()>> = None;
    tokio::pin!(interrupt);
    let mut committed_open = true;
    let mut events_open = true;
    // In-order dispatch: finished trials (with their job slots) waiting for an earlier one.
    let mut held = InOrder::<(
        Box<FinishedTrial>,
        Option<tokio::sync::OwnedSemaphorePermit>,
    )>::default();
    while committed_open || events_open {
        tokio::select! {
            event = event_receiver.recv(), if events_open => match event {
                // Every worker and the spawner are gone: no more records will come. Closing the
                // recorder's queue lets it commit the last batch and end.
                None => {
                    events_open = false;
                    // Trials held behind one that never finished (interrupted, dropped) are
                    // committed in order past the gap.
                    if let Some(sender) = &record_sender {
                        for (trial, _permit) in held.rest() {
                            let _ = sender.send(*trial);
                        }
                    }
                    record_sender = None;
                }
                Some(TrialEvent::Started) => dispatcher.started += 1,
                Some(TrialEvent::Retried { requests }) => {
                    dispatcher.retried_requests += requests;
                }
                Some(TrialEvent::Finished { seq, trial, permit }) => {
                    if !in_order {
                        // The breaker sees the trial before its slot is freed: a trip stops the
                        // spawner before it can start another trial in that slot.
                        if dispatcher.breaker_sees(&trial.record) {
                            abort.abort();
                        }
                        if let Some(traces) = &settings.traces {
                            traces.trial_finished(&trial.record, trial.outline());
                        }
                        if let Some(sender) = &record_sender {
                            let _ = sender.send(*trial);
                        }
                        drop(permit);
                    } else {
                        // Release the trials now next in order (their job slots with them).
                        for (trial, permit) in held.finished(seq, (trial, permit)) {
                            if dispatcher.breaker_sees(&trial.record) {
                                abort.abort();
                            }
                            if let Some(traces) = &settings.traces {
                                traces.trial_finished(&trial.record, trial.outline());
                            }
                            if let Some(sender) = &record_sender {
                                let _ = sender.send(*trial);
                            }
                            drop(permit);
                        }
                    }
                }
                Some(TrialEvent::Fatal(fatal)) => {
                    if dispatcher.fatal(fatal) {
                        abort.abort();
                    }
                }
            },
            committed = committed_receiver.recv(), if committed_open => match committed {
                None => {
                    committed_open = false;
                    // The recorder ended while trials may still finish: it panicked (a failed
                    // append reported itself first). Nothing more can be recorded.
                    if events_open && dispatcher.fatal(Fatal::TaskPanicked("the recorder stopped".to_string())) {
                        abort.abort();
                    }
                }
                Some(Ok(batch)) => dispatcher.committed(batch),
                Some(Err(error)) => {
                    if dispatcher.fatal(Fatal::Record(error)) {
                        abort.abort();
                    }
                }
            },
            ended = async { spawner.as_mut().expect("spawner present").await }, if spawner.is_some() => {
                spawner = None;
                if let Err(join_error) = ended
                    && join_error.is_panic()
                    && dispatcher.fatal(Fatal::TaskPanicked(panic_text(join_error)))
                {
                    abort.abort();
                }
            },
            _ = async { export_tick.as_mut().expect("exports set").tick().await }, if export_tick.is_some() => {
                let running = export_job.as_ref().is_some_and(|job| !job.is_finished());
                if !running && dispatcher.exported != Some(dispatcher.live.len()) && !dispatcher.live.is_empty()
                    && let Some(exports) = &settings.exports
                {
                    dispatcher.exported = Some(dispatcher.live.len());
                    // A snapshot: the batches are shared, no record is copied.
                    let records = dispatcher.live.clone();
                    let export = Arc::clone(&exports.export);
                    export_job = Some(tokio::task::spawn_blocking(move || export(&records)));
                }
            },
            _ = &mut interrupt, if !dispatcher.interrupted => {
                // Stop new trials and drop those in flight (re-run on resume); what already
                // finished is still committed before the loop ends.
                dispatcher.interrupted = true;
                abort.abort();
            }
        }
    }
    work.ended();
    if let Err(payload) = recorder.join() {
        // The recorder's own panic message replaces the placeholder.
        let message = panic_payload_text(payload.as_ref());
        dispatcher.fatal = match dispatcher.fatal {
            None | Some(Fatal::TaskPanicked(_)) => Some(Fatal::TaskPanicked(format!(
                "the recorder panicked: {message}"
            ))),
            other => other,
        };
    }
    // An export in progress finishes before the caller writes the final exports.
    if let Some(job) = export_job {
        let _ = job.await;
    }
    dispatcher.progress.finish();
    match dispatcher.fatal {
        Some(Fatal::Record(error)) => return Err(ExecuteError::Record(error)),
        Some(Fatal::Leak(message)) => return Err(ExecuteError::Leak(message)),
        Some(Fatal::RecordedTrial(error)) => return Err(ExecuteError::RecordedTrial(error)),
        Some(Fatal::TaskPanicked(message)) => {
            return Err(ExecuteError::Internal(format!(
                "a scheduler task panicked: {message}"
            )));
        }
        None => {}
    }
    Ok(ExecuteReport {
        recorded: dispatcher.recorded,
        interrupted: dispatcher.interrupted,
        missing: pending_count.saturating_sub(dispatcher.recorded),
        breaker: dispatcher.breaker,
        retried_requests: dispatcher.retried_requests,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// The in-order commit of a dispatch ([`Planned::in_order`]): a finished trial waits here until
/// every trial before it (by its place among the pending ones, `seq`) has been handed on.
struct InOrder<T> {
    held: std::collections::BTreeMap<usize, T>,
    next: usize,
}

impl<T> Default for InOrder<T> {
    fn default() -> Self {
        Self {
            held: Default::default(),
            next: 0,
        }
    }
}

impl<T> InOrder<T> {
    /// Take the trial at place `seq`: returns, in order, the trials now next (none while an
    /// earlier one has not finished).
    fn finished(&mut self, seq: usize, trial: T) -> Vec<T> {
        self.held.insert(seq, trial);
        let mut ready = Vec::new();
        while let Some(trial) = self.held.remove(&self.next) {
            self.next += 1;
            ready.push(trial);
        }
        ready
    }

    /// No further trial will finish: the held ones, in order, past the gaps of those that never
    /// did (interrupted, dropped).
    fn rest(&mut self) -> Vec<T> {
        std::mem::take(&mut self.held).into_values().collect()
    }
}

/// The message of a panicked task, when it carried one.
fn panic_text(error: tokio::task::JoinError) -> String {
    panic_payload_text(error.into_panic().as_ref())
}

/// The message a panic payload carries, when it carries one.
fn panic_payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// Why the circuit breaker tripped: the streak's length, its causes and the last message.
fn breaker_reason(
    streak: &[crate::values::trajectory::InfrastructureCause],
    last: Option<&str>,
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
    let last = last.unwrap_or("no reason recorded");
    let what = if streak
        .first()
        .is_some_and(|first| first.is_api() && streak.iter().all(|cause| cause == first))
    {
        "all failed with the same model-API cause"
    } else {
        "all failed for infrastructure reasons"
    };
    format!(
        "circuit breaker: the last {} trials {what} ({causes}); last: {}",
        streak.len(),
        crate::disk::redact::truncate(last, 300)
    )
}

/// Why a trial stops the whole run, as [`run_trial`] reports it.
type TrialResult = Result<FinishedTrial, Fatal>;

/// When a trial started, for its record.
#[derive(Clone, Copy)]
pub(crate) struct TrialClock {
    /// The wall-clock start.
    pub started_at: chrono::DateTime<Utc>,
    /// The monotonic start (the trial's duration).
    pub clock: Instant,
}

/// What driving the runner produced.
enum Driven {
    /// The agent finished (its answer may still be wrong).
    Completed(Box<Trajectory>),
    /// The runner gave up (after its own bounded retries).
    Failed(AttemptError),
    /// The trial ran past its timeout.
    TimedOut,
}

/// Run one trial through its stages: [`stage`] what it needs (a folder, or its arm's skills
/// in memory), [`drive`] the runner under the trial timeout, [`grade_trial`], serialize the
/// transcript and [`record_trial`]; the recorder commits both. File-system work (staging,
/// grading workspace checks, clean-up) runs on the blocking pool so slow file systems never
/// stall the async workers; a trial staged in memory touches no file system. `Err` only for a
/// leak-guard violation, which stops the run; a panic in a blocking step is an unscoreable
/// record (cause `internal_error`).
async fn run_trial(context: &Arc<TrialContext>, case_index: usize, key: &TrialKey) -> TrialResult {
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
    let time = TrialClock {
        started_at: Utc::now(),
        clock: Instant::now(),
    };
    let staging = context.design.staging(key.arm);
    let staged = match stage(context, case_index, staging).await {
        Ok(staged) => staged,
        Err(StageFailure::Fatal(fatal)) => return Err(fatal),
        Err(StageFailure::Unscoreable(grade)) => {
            return Ok(FinishedTrial::without_transcript(record_trial(
                context, key, time, grade, None, None,
            )));
        }
    };
    let case = &context.cases[case_index];
    let prompt = exposed_prompt(context, case, key.arm);
    let presented = presented_skills(context, key, &staged.skills);
    let driven = drive(context, key, case, &prompt, &staged, &presented).await;
    // Judges and custom graders run here, on the async workers, while the workspace exists.
    let staged_names = staged_skill_names(&context.target.name, &context.decoy_names, staging);
    let trial_id = key.trial_id();
    let remote = match &driven {
        Driven::Completed(trajectory)
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
                &staged,
            );
            context.graders.grade_remote(&facts).await
        }
        _ => RemoteGrades::default(),
    };
    let blocking = staged.has_folder();
    let finish = {
        let context = Arc::clone(context);
        let key = key.clone();
        move || {
            let context = &context;
            let key = &key;
            let mut staged = staged;
            let case = &context.cases[case_index];
            let (trajectory, grade) = grade_trial(
                context,
                case,
                key,
                staging,
                &staged,
                &staged_names,
                driven,
                remote,
            );
            let workspace = if context.keep_workspaces {
                staged.keep()
            } else {
                None
            };
            let paths = staged.has_folder().then(|| TrialPaths {
                workspace: staged.workspace.clone(),
                home: staged.home.clone(),
            });
            // Dropping the staged trial removes its folder (unless kept).
            drop(staged);
            finish_trial(
                context, key, case, &prompt, time, trajectory, grade, paths, workspace,
            )
        }
    };
    // A trial without a folder has no file-system work left: it finishes on the async worker.
    let finished = if blocking {
        tokio::task::spawn_blocking(finish).await
    } else {
        Ok(finish())
    };
    match finished {
        Ok(trial) => Ok(trial),
        Err(join_error) => {
            let grade = UnscoreableCause::InternalError
                .grade(format!("the grading task failed: {join_error}"));
            Ok(FinishedTrial::without_transcript(record_trial(
                context, key, time, grade, None, None,
            )))
        }
    }
}

/// The trial's record and transcript: the transcript is serialized here (in parallel, on the
/// worker) and committed by the recorder; a transcript over the profile's cap gets its long
/// texts shortened (and `transcript` added to `trajectory.truncated`, which the record
/// repeats). A transcript that cannot be serialized makes the trial unscoreable and says why.
#[allow(clippy::too_many_arguments)]
fn finish_trial(
    context: &TrialContext,
    key: &TrialKey,
    case: &GoldenCase,
    prompt: &str,
    time: TrialClock,
    trajectory: Option<Trajectory>,
    mut grade: Grade,
    paths: Option<TrialPaths>,
    workspace: Option<PathBuf>,
) -> FinishedTrial {
    let Some(mut trajectory) = trajectory else {
        return FinishedTrial::without_transcript(record_trial(
            context, key, time, grade, None, workspace,
        ));
    };
    let serialize = |trajectory: &Trajectory, grade: &Grade| {
        serde_json::to_vec(&transcript_document(
            key,
            case,
            prompt,
            trajectory,
            grade,
            paths.as_ref(),
        ))
    };
    // Serialized first: a document this far under the cap holds a trajectory that
    // `shrink_transcript` would leave as it is (the document is at least trajectory + grade +
    // prompt), so the usual trial is serialized once instead of measured twice more.
    let mut serialized = serialize(&trajectory, &grade);
    let fits = matches!(&serialized, Ok(bytes)
        if bytes.len() + prompt.len() + 4096 <= context.max_transcript_bytes);
    if !fits {
        shrink_transcript(
            &mut trajectory,
            &grade,
            prompt,
            context.max_transcript_bytes,
        );
        serialized = serialize(&trajectory, &grade);
    }
    match serialized {
        Ok(bytes) => {
            let record = record_trial(context, key, time, grade, Some(&trajectory), workspace);
            FinishedTrial::with_transcript_vec(record, bytes).with_outline(trajectory.outline())
        }
        // A trial whose transcript is lost cannot be audited or re-graded: it is
        // unscoreable, and says why (never silently recorded without it).
        Err(error) => {
            let was = grade.outcome.as_str();
            grade = UnscoreableCause::TranscriptWriteFailed.grade(format!(
                "{}: {error} (graded {was} before)",
                crate::record::TRANSCRIPTS_FILE
            ));
            FinishedTrial::without_transcript(record_trial(
                context,
                key,
                time,
                grade,
                Some(&trajectory),
                workspace,
            ))
            .with_outline(trajectory.outline())
        }
    }
}

/// What the trial of `case_index` needs staged ([`StagingNeed::of`]).
fn staging_need(context: &TrialContext, case_index: usize) -> StagingNeed {
    let eval_files_exist = *context
        .memory_staging
        .eval_files_exist
        .get_or_init(|| context.eval_files_dir.is_dir());
    StagingNeed::of(
        context.capabilities.skill_delivery,
        &context.cases[case_index],
        eval_files_exist,
        !context.graders.settings.custom_graders.is_empty(),
        context.keep_workspaces,
    )
}

/// The prompt of `case` in `arm`: the arm's exposure decides (the case's own, naming the
/// skill, or with its SKILL.md); an A/A control exposes nothing.
fn exposed_prompt(context: &TrialContext, case: &GoldenCase, arm: Arm) -> String {
    let exposure = if context.design.is_paired() {
        arm.spec().exposure
    } else {
        crate::features::workspace::Exposure::Native
    };
    exposure
        .prompt(
            &case.prompt,
            &context.target.name,
            &context.capabilities.skills_dir,
            &context.target_skill_md,
        )
        .into_owned()
}

/// Why staging produced no trial folder.
enum StageFailure {
    /// The leak guard's finding: the run stops.
    Fatal(Fatal),
    /// This trial is unscoreable (an I/O failure, a panicked staging task).
    Unscoreable(Grade),
}

/// Stage what the trial needs ([`StagingNeed`]): its arm's skills in memory (staged and
/// leak-guarded once per run, on the blocking pool the first time), or a trial folder as its
/// arm says (on the blocking pool).
async fn stage(
    context: &Arc<TrialContext>,
    case_index: usize,
    staging: ArmStaging,
) -> Result<StagedTrial, StageFailure> {
    if staging_need(context, case_index) == StagingNeed::InMemory {
        let cell = context.memory_staging.cell(staging);
        let skills = match cell.get() {
            Some(skills) => skills.clone(),
            None => {
                let staging_context = Arc::clone(context);
                let staged = tokio::task::spawn_blocking(move || {
                    let context = &staging_context;
                    context
                        .memory_staging
                        .cell(staging)
                        .get_or_init(|| stage_arm(context, staging))
                        .clone()
                })
                .await;
                match staged {
                    Ok(skills) => skills,
                    Err(join_error) => {
                        return Err(StageFailure::Unscoreable(
                            UnscoreableCause::InternalError
                                .grade(format!("the staging task failed: {join_error}")),
                        ));
                    }
                }
            }
        };
        return match skills {
            Ok(skills) => Ok(StagedTrial::in_memory(skills.to_vec())),
            Err(ArmStagingFailure::Leak(message)) => Err(StageFailure::Fatal(Fatal::Leak(message))),
            Err(ArmStagingFailure::Io(message)) => Err(StageFailure::Unscoreable(
                UnscoreableCause::StagingFailed.grade(message),
            )),
        };
    }
    let staging_context = Arc::clone(context);
    let staged = tokio::task::spawn_blocking(move || {
        let context = &staging_context;
        stage_trial_in_slot(
            &context.slots,
            &TrialStaging {
                staging,
                case: &context.cases[case_index],
                target: &context.target,
                previous: context.previous.as_ref(),
                decoys: &context.decoys,
                skills_dir: &context.capabilities.skills_dir,
                eval_files_dir: &context.eval_files_dir,
                target_digest: &context.target_digest,
                calibre: context.calibre,
                temp_root: context.workspace_root.as_deref(),
                owner: Some(&context.run_dir),
            },
        )
    })
    .await;
    match staged {
        Ok(Ok(staged)) => Ok(staged),
        Ok(Err(error)) if error.is_leak() => {
            Err(StageFailure::Fatal(Fatal::Leak(error.to_string())))
        }
        Ok(Err(error)) => Err(StageFailure::Unscoreable(
            UnscoreableCause::StagingFailed.grade(error),
        )),
        Err(join_error) => Err(StageFailure::Unscoreable(
            UnscoreableCause::InternalError.grade(format!("the staging task failed: {join_error}")),
        )),
    }
}

/// The names of the trial's staged skills in the order it presents them: a balanced run's
/// seeded order ([`crate::analysis::skill_order::presentation_order`]: the decoys' order the same in
/// every arm of the attempt, the target's position rotating over the attempts), else by name.
fn presented_names(context: &TrialContext, key: &TrialKey) -> Vec<String> {
    let staging = context.design.staging(key.arm);
    if context.skill_order != crate::record::SkillOrdering::Balanced {
        return staged_skill_names(&context.target.name, &context.decoy_names, staging);
    }
    crate::analysis::skill_order::presentation_order(
        context.seed,
        &key.case_id,
        key.attempt,
        &context.decoy_names,
        staging
            .stages_target_name()
            .then_some(context.target.name.as_str()),
    )
}

/// The staged skills in the order the trial presents them ([`presented_names`]). Nothing is
/// dropped: a staged skill the order does not name (none should) goes last.
fn presented_skills(
    context: &TrialContext,
    key: &TrialKey,
    staged: &[StagedSkill],
) -> Vec<StagedSkill> {
    let mut presented: Vec<StagedSkill> = presented_names(context, key)
        .iter()
        .filter_map(|name| staged.iter().find(|s| &s.name == name).cloned())
        .collect();
    for skill in staged {
        if !presented.iter().any(|s| s.name == skill.name) {
            presented.push(skill.clone());
        }
    }
    presented
}

/// The order a trial's record keeps ([`TrialRecord::skill_order`]) once the runner was driven:
/// the order skill-lift presented (`inject`, `tools`), or the skill catalogue an agent CLI's
/// stream reported (none when it reports none).
fn recorded_order(
    context: &TrialContext,
    key: &TrialKey,
    trajectory: &Trajectory,
) -> Option<Vec<String>> {
    match context.capabilities.skill_delivery {
        crate::record::SkillDelivery::Native => trajectory.skill_catalogue.clone(),
        crate::record::SkillDelivery::Inject | crate::record::SkillDelivery::Tools => {
            Some(presented_names(context, key))
        }
    }
}

/// Stage one arm's skills in memory ([`stage_arm_in_memory`], with the whole leak guard).
fn stage_arm(context: &TrialContext, staging: ArmStaging) -> ArmSkills {
    stage_arm_in_memory(
        staging,
        &context.target,
        context.previous.as_ref(),
        &context.decoys,
        &context.capabilities.skills_dir,
        &context.target_digest,
        context.calibre,
        context.workspace_root.as_deref(),
        Some(&context.run_dir),
    )
    .map(Arc::from)
    .map_err(|error| {
        if error.is_leak() {
            ArmStagingFailure::Leak(error.to_string())
        } else {
            ArmStagingFailure::Io(format!(
                "{}: {error}",
                UnscoreableCause::StagingFailed.prefix()
            ))
        }
    })
}

/// The trial timeout of `case`: its own (a Vally scenario's `timeout`), else the run's.
fn case_timeout(context: &TrialContext, case: &GoldenCase) -> Duration {
    case.timeout_s
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(context.trial_timeout)
}

/// Drive the runner on the staged trial under the trial timeout. Credential values never reach
/// a transcript, a judge or a custom grader: they are replaced by a marker the `security`
/// metric still reports.
async fn drive(
    context: &TrialContext,
    key: &TrialKey,
    case: &GoldenCase,
    prompt: &str,
    staged: &StagedTrial,
    presented: &[StagedSkill],
) -> Driven {
    let timeout = case_timeout(context, case);
    let input = AttemptInput {
        prompt,
        workspace: &staged.workspace,
        home: &staged.home,
        skills: presented,
        model: &context.model,
        timeout,
        trial_seed: crate::features::runner::TrialSeed::of_trial(
            context.seed,
            &key.case_id,
            key.arm.as_str(),
            key.attempt,
        ),
    };
    let outcome =
        tokio::time::timeout(timeout + TIMEOUT_MARGIN, context.runner.run_attempt(input)).await;
    match outcome {
        Ok(Ok(mut trajectory)) => {
            trajectory.redact_credentials(context.graders.credentials());
            Driven::Completed(Box::new(trajectory))
        }
        Ok(Err(mut error)) => {
            if let Some(partial) = error.partial.as_mut() {
                partial.redact_credentials(context.graders.credentials());
            }
            Driven::Failed(error)
        }
        Err(_) => Driven::TimedOut,
    }
}

/// Grade what driving produced (synchronous: output checks, workspace checks, deterministic
/// metrics); returns the trajectory to record, when there is one, and the grade.
#[allow(clippy::too_many_arguments)]
fn grade_trial(
    context: &TrialContext,
    case: &GoldenCase,
    key: &TrialKey,
    staging: ArmStaging,
    staged: &StagedTrial,
    staged_names: &[String],
    driven: Driven,
    remote: RemoteGrades,
) -> (Option<Trajectory>, Grade) {
    match driven {
        Driven::Completed(trajectory) => {
            let grade = match catalogue_problem(&trajectory, staging, &context.target.name) {
                Some(grade) => grade,
                None => {
                    let trial_id = key.trial_id();
                    let facts = trial_facts(
                        context,
                        case,
                        &trajectory,
                        key,
                        &trial_id,
                        staged_names,
                        staged,
                    );
                    context.graders.finish(&facts, remote)
                }
            };
            (Some(*trajectory), grade)
        }
        Driven::Failed(error) => {
            let grade = UnscoreableCause::RunnerError.grade(&error.message);
            (error.partial.map(|t| *t), grade)
        }
        Driven::TimedOut => {
            let mut trajectory = Trajectory::new();
            trajectory.status = TrajectoryStatus::Incomplete {
                reason: "trial timeout".to_string(),
            };
            let grade = Grade::unscoreable(
                UnscoreableCause::Timeout,
                format!(
                    "{} of {:.0} s",
                    UnscoreableCause::Timeout.prefix(),
                    case_timeout(context, case).as_secs_f64()
                ),
            );
            (Some(trajectory), grade)
        }
    }
}

/// When the agent reports its skill catalogue: an arm without the target must not list it (a
/// leak from outside the workspace) and an arm with it must (else the target was not
/// discovered, and the trial measures nothing about it). Either makes the trial unscoreable.
fn catalogue_problem(trajectory: &Trajectory, staging: ArmStaging, target: &str) -> Option<Grade> {
    let catalogue = trajectory.skill_catalogue.as_ref()?;
    // A target the skill tool activated successfully was discovered, whatever the catalogue says.
    let activated = trajectory.skill_activations.iter().any(|a| {
        a.ok && a.evidence == crate::values::trajectory::ActivationEvidence::SkillTool
            && a.skill == target
    });
    let listed = catalogue
        .iter()
        .any(|name| name == target || name.rsplit(':').next() == Some(target))
        || (staging.stages_target_name() && activated);
    match (staging, listed) {
        (ArmStaging::WithoutTarget, true) => Some(UnscoreableCause::IsolationFailure.grade(
            format!("the agent's skill catalogue lists the target `{target}` in an arm without it"),
        )),
        (ArmStaging::WithTarget | ArmStaging::WithPrevious, false) => {
            Some(UnscoreableCause::DiscoveryFailure.grade(format!(
                "the agent's skill catalogue does not list the staged target `{target}`"
            )))
        }
        _ => None,
    }
}

/// The grading facts of a trial during the run (no workspace for a trial staged in memory).
fn trial_facts<'a>(
    context: &'a TrialContext,
    case: &'a GoldenCase,
    trajectory: &'a Trajectory,
    key: &TrialKey,
    trial_id: &'a str,
    staged_names: &'a [String],
    staged: &'a StagedTrial,
) -> TrialFacts<'a> {
    let (workspace, home) = if staged.has_folder() {
        (
            Some(staged.workspace.as_path()),
            Some(staged.home.as_path()),
        )
    } else {
        (None, None)
    };
    TrialFacts {
        case,
        trajectory,
        arm: key.arm,
        attempt: key.attempt,
        trial_id,
        target_skill: &context.target.name,
        staged_skills: staged_names,
        activation_observable: context.capabilities.activation_observable,
        can_run_commands: context.capabilities.can_run_commands,
        workspace,
        run_workspace: workspace,
        run_home: home,
        recorded_checks: None,
    }
}

/// Where a trial ran (recorded in its transcript, so `regrade` judges paths the same way);
/// absent for a trial staged in memory.
struct TrialPaths {
    workspace: PathBuf,
    home: PathBuf,
}

/// Shorten the trajectory's long texts when its transcript would exceed `max_bytes` (and add
/// `transcript` to `trajectory.truncated`, which the trial record repeats).
fn shrink_transcript(trajectory: &mut Trajectory, grade: &Grade, prompt: &str, max_bytes: usize) {
    // The grade and prompt take their share of the cap.
    let others = serde_json::to_vec(grade).map(|v| v.len()).unwrap_or(0) + prompt.len() * 2;
    if trajectory.shrink_to(max_bytes.saturating_sub(others + 4096).max(max_bytes / 4))
        && !trajectory
            .truncated
            .contains(&crate::values::trajectory::OutputCut::Transcript)
    {
        trajectory
            .truncated
            .push(crate::values::trajectory::OutputCut::Transcript);
    }
}

/// The trial's transcript document.
fn transcript_document<'a>(
    key: &TrialKey,
    case: &GoldenCase,
    prompt: &str,
    trajectory: &'a Trajectory,
    grade: &'a Grade,
    paths: Option<&TrialPaths>,
) -> crate::record::TranscriptDocument<'a> {
    crate::record::TranscriptDocument {
        trial_id: key.trial_id(),
        case_id: case.id.clone(),
        arm: key.arm,
        attempt: key.attempt,
        // The prompt the agent got (an exposure arm's differs from the case's).
        prompt: prompt.to_string(),
        workspace_path: paths.map(|p| p.workspace.clone()),
        home_path: paths.map(|p| p.home.clone()),
        grade: std::borrow::Cow::Borrowed(grade),
        trajectory: std::borrow::Cow::Borrowed(trajectory),
    }
}

/// The trial's record: its grade with the cause typed as graded and what the trajectory
/// measured (usage, latency, retries, activations); where its transcript lies is set when the
/// recorder commits it.
fn record_trial(
    context: &TrialContext,
    key: &TrialKey,
    time: TrialClock,
    grade: Grade,
    trajectory: Option<&Trajectory>,
    workspace: Option<PathBuf>,
) -> TrialRecord {
    let tool_call_errors =
        trajectory.map_or(0, |t| t.tool_calls.iter().filter(|c| c.is_error).count());
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
        .then(|| grade.cause.unwrap_or(UnscoreableCause::Other));
    let infrastructure = unscoreable_cause
        .and_then(|cause| infrastructure_cause(trajectory, cause, grade.reason.as_deref()));
    let truncated = trajectory.map(|t| t.truncated.clone()).unwrap_or_default();
    let judge_usage = crate::record::JudgeSpend::of_metrics(
        grade
            .metrics
            .values()
            .chain(grade.other_judges.values().flat_map(|m| m.values())),
    );
    TrialRecord {
        skill_order: trajectory.and_then(|t| recorded_order(context, key, t)),
        judge_usage,
        infrastructure,
        truncated,
        reused_from: None,
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
        started_at: time.started_at,
        wall_s: time.clock.elapsed().as_secs_f64(),
        model_latency_s,
        requests,
        retries,
        tool_calls,
        tool_call_errors,
        activated_skills,
        transcript: None,
        transcript_span: None,
        workspace,
        supersedes: context.retried.contains(key),
        unscoreable_cause,
        usage_partial: trajectory.is_some_and(|t| t.usage_partial),
    }
}

/// The infrastructure cause of an unscoreable trial: what the agent reported, else what its
/// typed cause says (a runner error's HTTP status or wording, a timeout, an incomplete stream, a
/// grader error). `None` for causes that are not infrastructure (an isolation or discovery
/// failure, a staging error).
fn infrastructure_cause(
    trajectory: Option<&Trajectory>,
    cause: UnscoreableCause,
    reason: Option<&str>,
) -> Option<crate::values::trajectory::InfrastructureCause> {
    use crate::values::trajectory::InfrastructureCause as Cause;
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
    match cause {
        UnscoreableCause::RunnerError => {
            // The runner's own message (an HTTP status, a connection error) says which.
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
        use crate::values::trajectory::InfrastructureCause as Cause;
        use UnscoreableCause as U;
        let mut trajectory = Trajectory::new();
        assert_eq!(
            infrastructure_cause(Some(&trajectory), U::IsolationFailure, None),
            None
        );
        assert_eq!(
            infrastructure_cause(
                None,
                U::RunnerError,
                Some("runner error: HTTP 429: slow down (gave up after 4 retries)")
            ),
            Some(Cause::RateLimited)
        );
        assert_eq!(
            infrastructure_cause(
                None,
                U::RunnerError,
                Some("runner error: error sending request for url")
            ),
            Some(Cause::ApiUnreachable)
        );
        assert_eq!(
            infrastructure_cause(None, U::Timeout, Some("trial exceeded its timeout of 5 s")),
            Some(Cause::Timeout)
        );
        assert_eq!(
            infrastructure_cause(
                None,
                U::GraderError,
                Some("grader error: judge unavailable")
            ),
            Some(Cause::Grader)
        );
        // The cause decides, not the text: a reason that reads like a runner error but was
        // graded as a discovery failure is no infrastructure failure.
        assert_eq!(
            infrastructure_cause(
                None,
                U::DiscoveryFailure,
                Some("runner error: HTTP 429: slow down")
            ),
            None
        );
        trajectory.set_infrastructure_error(
            Cause::ApiUnreachable,
            "API Error: Can't reach the API server (ENOTFOUND)",
        );
        assert_eq!(
            infrastructure_cause(
                Some(&trajectory),
                U::IncompleteTrajectory,
                Some("incomplete trajectory: x")
            ),
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
        let isolation = catalogue_problem(&trajectory, ArmStaging::WithoutTarget, "t").unwrap();
        assert_eq!(isolation.cause, Some(UnscoreableCause::IsolationFailure));
        assert!(isolation.reason.unwrap().starts_with("isolation failure: "));
        assert_eq!(
            catalogue_problem(&trajectory, ArmStaging::WithTarget, "t"),
            None
        );
        trajectory.skill_catalogue = Some(vec!["decoy".into()]);
        let discovery = catalogue_problem(&trajectory, ArmStaging::WithTarget, "t").unwrap();
        assert_eq!(discovery.cause, Some(UnscoreableCause::DiscoveryFailure));
        assert_eq!(
            catalogue_problem(&trajectory, ArmStaging::WithoutTarget, "t"),
            None
        );
    }
}

/// Scheduler tests on a fake runner: interrupt, leak abort, record failure, panics.
#[cfg(test)]
mod scheduler_tests {
    use super::*;
    use crate::features::evalset::{CaseFiles, CaseStatus, ExpectedSkill};
    use crate::features::grade::checks::Check;
    use crate::record::GradingSettings;
    use std::path::Path;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// What the fake runner does on an attempt.
    #[derive(Clone, Copy, PartialEq)]
    enum Script {
        /// Answer at once: `Aye` when the target is staged, else not.
        Answer,
        /// Never answer (until the trial timeout).
        Hang,
        /// Panic inside the attempt.
        Panic,
    }

    struct FakeRunner {
        script: Script,
        attempts: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl Runner for FakeRunner {
        fn kind(&self) -> &'static str {
            "fake"
        }
        fn skills_dir(&self) -> &'static Path {
            Path::new(".agents/skills")
        }
        async fn run_attempt(
            &self,
            input: AttemptInput<'_>,
        ) -> Result<Trajectory, crate::features::runner::AttemptError> {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            match self.script {
                Script::Answer => {}
                Script::Hang => std::future::pending::<()>().await,
                Script::Panic => panic!("fake runner panicked"),
            }
            let mut trajectory = Trajectory::new();
            let with = input.skills.iter().any(|s| s.target);
            trajectory.final_answer = Some(if with { "Aye" } else { "No" }.to_string());
            Ok(trajectory)
        }
    }

    /// A sink that keeps the records, or refuses every batch.
    #[derive(Clone, Default)]
    struct MemorySink {
        records: Arc<Mutex<Vec<TrialRecord>>>,
        fail: bool,
    }

    impl RecordSink for MemorySink {
        fn append(&mut self, batch: &mut [FinishedTrial]) -> Result<(), RecordError> {
            if self.fail {
                return Err(RecordError::Io {
                    path: PathBuf::from("trials.jsonl"),
                    source: std::io::Error::other("disk full"),
                });
            }
            self.records
                .lock()
                .unwrap()
                .extend(batch.iter().map(|trial| trial.record.clone()));
            Ok(())
        }
    }

    impl MemorySink {
        /// The trial ids committed so far, in commit order.
        fn trial_ids(&self) -> Vec<String> {
            let records = self.records.lock().unwrap();
            records
                .iter()
                .map(|record| record.trial_id.clone())
                .collect()
        }
    }

    fn case(id: &str) -> GoldenCase {
        GoldenCase {
            id: id.into(),
            prompt: "p".into(),
            expected_output: None,
            expected_output_match: None,
            assertions: vec![],
            checks: vec![Check::Contains {
                value: "Aye".into(),
                ignore_case: false,
            }],
            expected_skill: ExpectedSkill::Unspecified,
            expected_script: None,
            acceptable_skills: vec![],
            should_trigger: true,
            files: CaseFiles::Omitted,
            cluster: None,
            status: CaseStatus::Active,
            weight: 1.0,
            label: None,
            timeout_s: None,
        }
    }

    /// A run of `cases` cases on the fake runner; `leaky` stages a copy of the target as a decoy.
    fn setup(script: Script, cases: usize, leaky: bool) -> (tempfile::TempDir, Arc<TrialContext>) {
        let dir = tempfile::tempdir().unwrap();
        let write_skill = |name: &str, body: &str| {
            let skill = dir.path().join("skills").join(name);
            std::fs::create_dir_all(&skill).unwrap();
            std::fs::write(
                skill.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: d\n---\n{body}\n"),
            )
            .unwrap();
            SkillSource {
                name: name.into(),
                dir: skill,
                ..Default::default()
            }
        };
        let target = write_skill("target", "Answer Aye.");
        let mut decoys = vec![write_skill("decoy", "Something else entirely.")];
        if leaky {
            let copy = dir.path().join("skills").join("copy");
            std::fs::create_dir_all(&copy).unwrap();
            std::fs::copy(target.dir.join("SKILL.md"), copy.join("SKILL.md")).unwrap();
            decoys.push(SkillSource {
                name: "copy".into(),
                dir: copy,
                ..Default::default()
            });
        }
        let run_dir = dir.path().join("run");
        std::fs::create_dir_all(run_dir.join("transcripts")).unwrap();
        let calibre = Calibre::default();
        let target_digest = crate::features::asset::fingerprint::fingerprint(&target.dir, calibre)
            .unwrap()
            .digest;
        let context = Arc::new(TrialContext {
            run_id: "r".into(),
            run_dir,
            runner_name: "fake".into(),
            model: "m".into(),
            runner: Box::new(FakeRunner {
                script,
                attempts: AtomicUsize::new(0),
            }),
            cases: (0..cases).map(|i| case(&format!("c{i}"))).collect(),
            eval_files_dir: target.dir.join("evals/files"),
            target,
            decoy_names: decoys.iter().map(|d| d.name.clone()).collect(),
            decoys,
            target_digest,
            calibre,
            trial_timeout: Duration::from_secs(30),
            keep_workspaces: false,
            workspace_root: Some(dir.path().to_path_buf()),
            graders: Arc::new(GraderSet::new(GradingSettings::new(), vec![], vec![])),
            capabilities: crate::record::RunnerCapabilities {
                skills_dir: PathBuf::from(".agents/skills"),
                skill_delivery: crate::record::SkillDelivery::Native,
                activation_observable: true,
                can_run_commands: true,
            },
            retried: HashSet::new(),
            max_transcript_bytes: 1 << 20,
            design: ArmDesign::Paired,
            arms: Arm::PAIRED.to_vec(),
            previous: None,
            target_skill_md: "Answer Aye.".into(),
            memory_staging: Default::default(),
            slots: Default::default(),
            skill_order: Default::default(),
            seed: 42,
        });
        (dir, context)
    }

    fn settings(exports: Option<PeriodicExports>) -> SchedulerSettings {
        SchedulerSettings {
            jobs: 4,
            k: 1,
            progress: crate::report::progress::ProgressDisplay::Hidden,
            breaker: 0,
            exports,
            round: None,
            traces: None,
        }
    }

    #[tokio::test]
    async fn every_trial_is_recorded_and_exports_come_from_memory() {
        let (_dir, context) = setup(Script::Answer, 3, false);
        let sink = MemorySink::default();
        let exported = Arc::new(Mutex::new(Vec::<usize>::new()));
        let seen = Arc::clone(&exported);
        let exports = PeriodicExports {
            interval: Duration::from_millis(1),
            export: Arc::new(move |records| seen.lock().unwrap().push(records.len())),
        };
        let report = execute(
            context,
            settings(Some(exports)),
            &HashSet::new(),
            &[],
            sink.clone(),
            std::future::pending(),
        )
        .await
        .unwrap();
        assert_eq!((report.recorded, report.missing), (6, 0));
        let records = sink.records.lock().unwrap();
        assert_eq!(records.len(), 6);
        for record in records.iter() {
            let expected = if record.arm == Arm::WithSkill {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            assert_eq!(record.outcome, expected, "{}", record.trial_id);
        }
        // Every periodic export saw records only from memory, never more than were committed.
        assert!(exported.lock().unwrap().iter().all(|n| *n <= 6));
    }

    #[tokio::test]
    async fn an_interrupt_stops_the_run_and_keeps_what_finished() {
        let (_dir, context) = setup(Script::Hang, 4, false);
        let sink = MemorySink::default();
        let report = execute(
            context,
            settings(None),
            &HashSet::new(),
            &[],
            sink.clone(),
            tokio::time::sleep(Duration::from_millis(200)),
        )
        .await
        .unwrap();
        assert!(report.interrupted);
        assert_eq!(report.recorded, 0);
        assert_eq!(report.missing, 8, "the trials in flight were dropped");
        assert!(sink.records.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_leak_aborts_the_run_as_a_leak() {
        let (_dir, context) = setup(Script::Answer, 3, true);
        let error = execute(
            context,
            settings(None),
            &HashSet::new(),
            &[],
            MemorySink::default(),
            std::future::pending(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&error, ExecuteError::Leak(message) if message.contains("leak guard")),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_failed_append_stops_the_run_with_a_record_error() {
        let (_dir, context) = setup(Script::Answer, 3, false);
        let sink = MemorySink {
            fail: true,
            ..Default::default()
        };
        let error = execute(
            context,
            settings(None),
            &HashSet::new(),
            &[],
            sink,
            std::future::pending(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&error, ExecuteError::Record(_)),
            "{error}: a failed append is no leak"
        );
        assert!(error.to_string().contains("disk full"), "{error}");
    }

    #[tokio::test]
    async fn a_panicking_trial_is_an_internal_error_record_not_a_leak() {
        let (_dir, context) = setup(Script::Panic, 2, false);
        let sink = MemorySink::default();
        let report = execute(
            context,
            settings(None),
            &HashSet::new(),
            &[],
            sink.clone(),
            std::future::pending(),
        )
        .await
        .unwrap();
        assert_eq!((report.recorded, report.missing), (4, 0));
        for record in sink.records.lock().unwrap().iter() {
            assert_eq!(record.outcome, Outcome::Unscoreable);
            assert_eq!(
                record.unscoreable_cause,
                Some(UnscoreableCause::InternalError)
            );
            assert!(
                record
                    .reason
                    .as_deref()
                    .unwrap()
                    .contains("fake runner panicked"),
                "{:?}",
                record.reason
            );
            assert!(UnscoreableCause::InternalError.is_infrastructure());
        }
    }

    #[test]
    fn in_order_commit_hands_trials_on_by_place_and_past_gaps_at_the_end() {
        let mut queue = InOrder::default();
        // Finished in reverse: nothing is handed on until the first one is there.
        assert!(queue.finished(3, 'd').is_empty());
        assert!(queue.finished(2, 'c').is_empty());
        assert!(queue.finished(1, 'b').is_empty());
        assert_eq!(queue.finished(0, 'a'), ['a', 'b', 'c', 'd']);
        assert_eq!(queue.finished(4, 'e'), ['e']);
        // Trial 5 never finishes (interrupted): 6 and 8 wait, then go in order past the gaps.
        assert!(queue.finished(8, 'i').is_empty());
        assert!(queue.finished(6, 'g').is_empty());
        assert_eq!(queue.rest(), ['g', 'i']);
        assert!(queue.rest().is_empty());
    }

    /// Work whose trials finish in reverse order: trial `i` waits until trial `i + 1` has
    /// finished its work (the last one starts the chain), or forever for the ones in `hang`.
    struct ReverseWork {
        context: Arc<TrialContext>,
        gates: Vec<Semaphore>,
        hang: HashSet<usize>,
        finished: Mutex<Vec<usize>>,
        /// Notified when every trial not in `hang` has finished its work.
        all_finished: tokio::sync::Notify,
    }

    impl ReverseWork {
        fn new(context: Arc<TrialContext>, trials: usize, hang: &[usize]) -> Arc<Self> {
            Arc::new(Self {
                context,
                gates: (0..trials).map(|_| Semaphore::new(0)).collect(),
                hang: hang.iter().copied().collect(),
                finished: Mutex::new(Vec::new()),
                all_finished: tokio::sync::Notify::new(),
            })
        }
    }

    impl TrialWork for ReverseWork {
        type Item = (usize, TrialKey);

        async fn run(self: Arc<Self>, (seq, key): Self::Item) -> Result<FinishedTrial, Fatal> {
            if self.hang.contains(&seq) {
                std::future::pending::<()>().await;
            }
            if seq + 1 < self.gates.len() {
                self.gates[seq].acquire().await.unwrap().forget();
            }
            let clock = TrialClock {
                started_at: Utc::now(),
                clock: Instant::now(),
            };
            let grade = UnscoreableCause::Other.grade(format!("trial {seq}"));
            let record = record_trial(&self.context, &key, clock, grade, None, None);
            let count = {
                let mut finished = self.finished.lock().unwrap();
                finished.push(seq);
                finished.len()
            };
            if count + self.hang.len() == self.gates.len() {
                self.all_finished.notify_one();
            }
            if seq > 0 {
                self.gates[seq - 1].add_permits(1);
            }
            Ok(FinishedTrial::without_transcript(record))
        }

        fn panicked(
            &self,
            _item: &Self::Item,
            _started: TrialClock,
            message: String,
        ) -> Result<FinishedTrial, Fatal> {
            Err(Fatal::TaskPanicked(message))
        }
    }

    /// The pending trials of a 4-case paired run with K = 1, in plan order.
    fn eight_trials(context: &TrialContext) -> Vec<(usize, TrialKey)> {
        plan_trials(&context.cases, &context.arms, 1)
            .into_iter()
            .enumerate()
            .map(|(seq, (_, key))| (seq, key))
            .collect()
    }

    fn in_order() -> Planned {
        Planned {
            total: 8,
            already_done: 0,
            labelled: false,
            in_order: true,
        }
    }

    #[tokio::test]
    async fn in_order_dispatch_commits_trials_finished_in_reverse_in_their_order() {
        let (_dir, context) = setup(Script::Answer, 4, false);
        let pending = eight_trials(&context);
        let expected: Vec<String> = pending.iter().map(|(_, key)| key.trial_id()).collect();
        let work = ReverseWork::new(Arc::clone(&context), pending.len(), &[]);
        let sink = MemorySink::default();
        let mut settings = settings(None);
        settings.jobs = pending.len();
        let report = dispatch(
            Arc::clone(&work),
            pending,
            in_order(),
            &settings,
            &[],
            sink.clone(),
            std::future::pending(),
        )
        .await
        .unwrap();
        assert_eq!((report.recorded, report.missing), (8, 0));
        // The trials did finish last to first...
        assert_eq!(*work.finished.lock().unwrap(), [7, 6, 5, 4, 3, 2, 1, 0]);
        // ...and were committed first to last, none lost, none twice.
        assert_eq!(sink.trial_ids(), expected);
    }

    #[tokio::test]
    async fn in_order_dispatch_commits_the_trials_behind_an_unfinished_one_when_interrupted() {
        let (_dir, context) = setup(Script::Answer, 4, false);
        let pending = eight_trials(&context);
        let expected: Vec<String> = pending
            .iter()
            .filter(|(seq, _)| *seq != 5)
            .map(|(_, key)| key.trial_id())
            .collect();
        // Trial 5 never finishes, so 0..=4 wait for nothing else; 6 and 7 finish behind it.
        let work = ReverseWork::new(Arc::clone(&context), pending.len(), &[5]);
        work.gates[4].add_permits(1);
        let sink = MemorySink::default();
        let mut settings = settings(None);
        settings.jobs = pending.len();
        let watched = Arc::clone(&work);
        let interrupt = async move {
            watched.all_finished.notified().await;
            // Let the workers hand their last results to the dispatcher.
            for _ in 0..100 {
                tokio::task::yield_now().await;
            }
        };
        let report = dispatch(
            Arc::clone(&work),
            pending,
            in_order(),
            &settings,
            &[],
            sink.clone(),
            interrupt,
        )
        .await
        .unwrap();
        assert!(report.interrupted);
        assert_eq!((report.recorded, report.missing), (7, 1));
        assert_eq!(sink.trial_ids(), expected);
    }

    #[tokio::test]
    async fn a_panicking_sink_is_an_internal_error_not_a_leak() {
        struct PanickingSink;
        impl RecordSink for PanickingSink {
            fn append(&mut self, _batch: &mut [FinishedTrial]) -> Result<(), RecordError> {
                panic!("sink exploded")
            }
        }
        let (_dir, context) = setup(Script::Answer, 2, false);
        let error = execute(
            context,
            settings(None),
            &HashSet::new(),
            &[],
            PanickingSink,
            std::future::pending(),
        )
        .await
        .unwrap_err();
        assert!(matches!(error, ExecuteError::Internal(_)), "{error}");
    }
}
