//! The one reporter of the library: the run pipeline, the exporters, the shard and history
//! readers and the interrupt handler do not print; they report what happens as an [`Event`]
//! to [`report`], and this module alone decides the words, the stream and the advice the user
//! reads (as nextest's dispatcher owns its terminal and receives events from the workers).
//!
//! Events are reported synchronously, in the order they happen, on stderr (through the
//! redaction boundary of `crate::disk::terminal`); a command's result on stdout (a table, JSON,
//! markdown), rendered by the library, is written by [`result`] / [`result_line`]. Only this
//! module and the progress display (`crate::report::progress`, whose status lines are the reporter's
//! too) use the print macros; a test (`tests/architecture_prints.rs`) checks it.
//!
//! This module must not decide what a command does; it only says what happened.

use std::fmt;
use std::path::PathBuf;

/// Something a workflow tells the user while it works: progress of a run's lifecycle,
/// warnings about inputs it accepted, what it wrote besides the run folder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// `--retry-unscoreable`: this many trials recorded unscoreable run again.
    RetryingUnscoreable {
        /// Trials that run again.
        trials: usize,
    },
    /// A shard of a run: how many of the planned trials it runs.
    ShardShare {
        /// The shard, `i/n`.
        shard: String,
        /// Trials of this shard.
        own: usize,
        /// Trials of the whole run.
        planned: usize,
    },
    /// `--shard auto` found its shard in the environment.
    ShardFromEnvironment {
        /// The shard, `i/n`.
        shard: String,
        /// The CI system or scheduler it came from.
        source: String,
        /// The variable holding the index.
        index_var: String,
        /// The variable holding the count.
        count_var: String,
    },
    /// A run starts executing: its size and where it runs.
    RunPlanned {
        /// The run id.
        run_id: String,
        /// Cases of the run.
        cases: usize,
        /// The arms' names, in order.
        arms: Vec<String>,
        /// Attempts per case per arm.
        k: u32,
        /// Trials planned.
        planned: usize,
        /// Trials already recorded (a resumed run).
        recorded: usize,
        /// The runner profile's name.
        runner: String,
        /// The runner's kind.
        runner_kind: String,
        /// The model.
        model: String,
    },
    /// `--reuse-baseline` imported recorded trials instead of running them.
    TrialsReused {
        /// Trials reused.
        reused: usize,
        /// The arms reused.
        arms: Vec<String>,
        /// Where they came from (the store, a folder).
        source: String,
        /// Trials reused per source run id.
        from_runs: std::collections::BTreeMap<String, usize>,
        /// Trials with no match, which run.
        not_found: usize,
    },
    /// `--resume` removed what a killed run left.
    CleanedUpAfterInterruptedRun {
        /// Temporary export files removed.
        temp_files: usize,
        /// Trial folders removed.
        trial_folders: usize,
    },
    /// `shadow` starts replaying the chosen prompts.
    ShadowPlanned {
        /// The new skill.
        skill: String,
        /// Prompts to replay.
        prompts: usize,
        /// The host whose history they come from.
        host: String,
        /// The runner profile's name.
        runner: String,
        /// The runner's kind.
        runner_kind: String,
        /// The model.
        model: String,
    },
    /// An interrupt arrived while a model server started; it was stopped, nothing ran.
    InterruptedStartingServer {
        /// The run folder (to resume).
        run_dir: PathBuf,
        /// Whether it was a judge's server (else the runner's).
        judge: bool,
    },
    /// Waiting for a model server to answer.
    CheckingModelServer {
        /// The URL polled.
        ready_url: String,
    },
    /// A model server already answered the profile's `ready_url` (another run's, or one the
    /// user started): the run uses it and does not stop it.
    ModelServerInUse {
        /// The URL that answered.
        ready_url: String,
    },
    /// A model server was started (and is stopped after the run).
    ModelServerStarted {
        /// Its command line.
        command: String,
        /// Whether it serves a judge (else the runner).
        judge: bool,
    },
    /// A pre-flight check passed.
    PreflightPassed {
        /// The profile checked.
        profile: String,
        /// What the check found.
        line: String,
    },
    /// The suite's calibration, found in the state folder.
    Calibration {
        /// Whether the suite is calibrated on this runner and model (else a warning).
        calibrated: bool,
        /// What the calibration says.
        message: String,
    },
    /// Before the first trial: judge-scored cases run with fewer judge repeats or attempts
    /// than recommended (the same warning is in every report).
    WeakJudgeSettings {
        /// The warning (worded by `crate::analysis::judge_warning_before_trials`).
        warning: String,
    },
    /// Round scheduling stopped the run.
    RoundsStopped {
        /// The stopping rule that decided.
        reason: String,
        /// Why.
        message: String,
    },
    /// A judge's usage line (requests, cache hits, retries).
    JudgeUsage {
        /// The line.
        line: String,
    },
    /// Processes re-parented to skill-lift by killed trials were stopped.
    OrphansStopped {
        /// How many.
        count: usize,
    },
    /// A run folder holding neither manifest nor trial (a killed start) is started again.
    RestartingEmptyRunFolder {
        /// The folder.
        dir: PathBuf,
    },
    /// The baseline store was not fed, and why.
    BaselineStoreSkipped {
        /// Why not.
        why: BaselineSkip,
    },
    /// The run's verdicts were recorded in the baseline store.
    BaselineStoreRecorded {
        /// Verdicts recorded.
        entries: usize,
        /// The asset.
        asset: String,
        /// The store's file.
        store: PathBuf,
    },
    /// The baseline store could not be fed.
    BaselineStoreFailed {
        /// Why.
        error: String,
        /// The run folder (to ingest later).
        run_dir: PathBuf,
    },
    /// The run's trials were registered in the trial store for reuse.
    TrialStoreRegistered {
        /// Trials registered.
        count: usize,
        /// The store's file.
        store: PathBuf,
    },
    /// The trial store could not be fed.
    TrialStoreFailed {
        /// Why.
        error: String,
    },
    /// A regrade starts.
    Regrading {
        /// Recorded trials graded again.
        trials: usize,
        /// The run regraded.
        from_run_id: String,
        /// The new run folder.
        out_dir: PathBuf,
    },
    /// An interrupt arrived: the first stops the run cleanly, the second exits at once.
    Interrupted {
        /// Whether this is the second interrupt.
        again: bool,
    },
    /// `triggers`/`shadow`: a model API runner that injects every skill runs in `tools` mode,
    /// where activation is observable.
    ToolsModeToObserve {
        /// The runner profile's name.
        runner: String,
        /// The command.
        command: &'static str,
    },
    /// `triggers` starts its attempts.
    TriggersPlanned {
        /// The result folder's id.
        run_id: String,
        /// Queries of the trigger set.
        queries: usize,
        /// Queries that should trigger.
        positives: usize,
        /// Queries that should not.
        negatives: usize,
        /// Attempts per query.
        k: u32,
        /// The runner profile's name.
        runner: String,
        /// The runner's kind.
        runner_kind: String,
        /// The model.
        model: String,
    },
    /// Processes re-parented to skill-lift by killed attempts (`triggers`) were stopped.
    OrphanAttemptsStopped {
        /// How many.
        count: usize,
    },
    /// `triggers` finished recording its attempts.
    TriggersRecorded {
        /// Attempts recorded.
        attempts: usize,
        /// Seconds it took.
        wall_s: f64,
        /// The result folder.
        dir: PathBuf,
    },
    /// `vet` decided one of its steps.
    VetStepDecided {
        /// The step's name.
        step: &'static str,
        /// Its decision's name.
        decision: &'static str,
        /// Why.
        why: String,
    },
    /// `vet` sized its paired run.
    VetPairedRunSized {
        /// Active golden cases.
        cases: usize,
        /// Attempts per case chosen.
        k: u32,
        /// Trials of the run.
        trials: usize,
        /// The planned MDE of the chosen design (fraction).
        planned_mde: Option<f64>,
        /// The stated MDE (fraction).
        mde: f64,
        /// Whether the design reaches it within `--max-k`.
        reaches_target: bool,
    },
    /// `vet` ended no-go: the steps that were not go.
    VetNoGo {
        /// Their names.
        steps: Vec<&'static str>,
        /// The exit code.
        exit: i32,
    },
    /// No session history of the host where it was looked for.
    NoHistory {
        /// The host.
        host: String,
        /// The folder looked in (personal parts redacted).
        folder: String,
    },
    /// Session history was read.
    HistoryRead {
        /// Sessions read.
        sessions: usize,
        /// The host.
        host: String,
        /// The folder read (personal parts redacted).
        folder: String,
        /// Files read.
        files: usize,
        /// Sessions left out by `--since`.
        before_since: usize,
    },
    /// History events of kinds not understood were skipped.
    UnknownHistoryEvents {
        /// Each kind with its count, `kind (n)`.
        kinds: Vec<String>,
    },
    /// `shadow`: which recorded turns are eligible for the new skill.
    ShadowEligible {
        /// Eligible turns.
        eligible_turns: usize,
        /// Turns read.
        turns: usize,
        /// The skill.
        skill: String,
        /// Sessions with an eligible turn.
        eligible_sessions: usize,
        /// Distinct prompts chosen.
        chosen: usize,
        /// Older eligible prompts left out by `--limit`.
        over_limit: usize,
    },
    /// `shadow`: the skill is write-type; replays run in throwaway workspaces.
    ShadowWriteType {
        /// The skill.
        skill: String,
        /// The evidence (at most 5 items).
        evidence: Vec<String>,
    },
    /// An interrupt stopped the command; its report covers what was recorded.
    InterruptedReportCovers {
        /// What was recorded ("replays").
        what: &'static str,
    },
    /// A red flag of the skill on this machine (`run`'s preamble), as a line.
    RedFlag {
        /// The line.
        line: String,
    },
    /// `lint`: skills failed.
    LintFailed {
        /// Skills that failed.
        failed: usize,
        /// Skills linted.
        skills: usize,
        /// Whether warnings fail too.
        deny_warnings: bool,
    },
    /// `env`: the skill assumes what this machine does not meet.
    EnvRedFlags {
        /// Assumptions not met.
        missing: usize,
        /// The skill.
        skill: String,
    },
    /// `golden mine`: drafts were mined from session history.
    DraftsMined {
        /// Turns that activated the skill (or any skill).
        activated_turns: usize,
        /// The skill mined for, when one was named.
        skill: Option<String>,
        /// Drafts written.
        drafts: usize,
        /// Positive drafts among them.
        positive: usize,
        /// Duplicate prompts folded.
        duplicates: usize,
        /// Signals found, `signal n`.
        signals: Vec<String>,
    },
    /// `init`: the skill's name differs from its folder's.
    SkillFolderNamedOtherwise {
        /// The skill's name.
        name: String,
        /// The folder's name.
        folder: String,
    },
    /// `changed --format json`: a skill moved (not listed).
    SkillMoved {
        /// Its old folder.
        from: String,
        /// Its new folder.
        to: String,
    },
    /// `changed --format json`: a skill was deleted (not listed).
    SkillDeleted {
        /// Its folder.
        path: String,
        /// Its name.
        name: String,
    },
    /// `changed`: what changed between two revisions.
    SkillsChanged {
        /// Skills to evaluate.
        evaluate: usize,
        /// Changed skills.
        changed: usize,
        /// Added skills.
        added: usize,
        /// Deleted skills.
        deleted: usize,
        /// Moved skills.
        moved: usize,
        /// Unchanged skills.
        unchanged: usize,
        /// The base revision (short).
        base: String,
        /// The head revision (short).
        head: String,
        /// The fingerprint calibre.
        calibre: String,
    },
    /// `install`: a host was skipped, and why.
    HostSkipped {
        /// The host.
        host: String,
        /// Why.
        reason: String,
    },
    /// `install`: no agent host on this machine.
    NoAgentHost,
    /// `runners NAME`: where the profile shown comes from.
    RunnerProfileShown {
        /// The profile's name.
        name: String,
        /// Where it comes from ("built in", a path).
        from: String,
    },
    /// `runners`: how `--runner` finds a profile.
    RunnerLookupRule,
    /// `setup local-model` was interrupted.
    LocalModelSetupInterrupted,
    /// A command ended with a failure or a failed gate after writing its result (`error: … (exit
    /// N)`).
    Failed {
        /// What failed.
        problem: String,
        /// The exit code it ends with.
        exit: i32,
    },
    /// A command wrote this file (the terminal summary ends with what was written).
    /// The folder named is not a skill folder; the layout chose the skill in `skill_dir`.
    SkillChosen {
        /// The folder the user named.
        target: PathBuf,
        /// The skill folder used.
        skill_dir: PathBuf,
    },
    /// The eval set was found by the repository layout (not the skill's own, not `--evals`).
    EvalSetByLayout {
        /// The eval file or folder used.
        path: PathBuf,
    },
    /// `plan --pilot` for a matrix: the projection is per runner/model cell.
    ProjectionPerCell {
        /// Cells of the matrix.
        cells: usize,
    },
    /// `plan`: the eval set has no active case (the plan is printed; nothing would run).
    NoActiveCase,
    /// `monitor`: a monitored suite's run starts (or continues).
    MonitorSuiteStarted {
        /// The monitored asset.
        asset: String,
        /// The model it runs under.
        model: String,
        /// Its run folder.
        run_dir: PathBuf,
        /// Whether an earlier start of the run is continued (`run --resume`).
        resuming: bool,
    },
    /// `monitor`: a monitored suite's run ended, or it was not started.
    MonitorSuiteEnded {
        /// The monitored asset.
        asset: String,
        /// `done`, `failed`, `interrupted`, `deferred`, `no suite`.
        status: &'static str,
        /// Why, or where its run folder is.
        why: String,
    },
    /// Something worth knowing that is no warning (`note: …`).
    Note {
        /// The note.
        message: String,
    },
    /// `scan`: assets that could not be registered (the others were).
    AssetsSkipped {
        /// Each skipped folder or file, and why.
        skipped: Vec<(PathBuf, String)>,
    },
    /// `check --waive`: an asset waived under the current model.
    Waived {
        /// The asset.
        asset: String,
        /// The model it is waived under.
        model: String,
        /// Why.
        reason: String,
    },
    /// Nothing to run (exit 4), and why.
    NothingToRun {
        /// Why (the pipeline's `NothingToRun`, worded).
        why: String,
    },
    /// An analyzed run: no trial could be graded (exit 4).
    NothingGradable,
    /// An analyzed run: more unscoreable trials than `--max-unscoreable` allows (exit 3).
    TooManyUnscoreable {
        /// Unscoreable trials.
        unscoreable: usize,
        /// Recorded trials.
        recorded: usize,
        /// Their fraction.
        fraction: f64,
        /// The limit.
        limit: f64,
        /// The causes, e.g. `grader error 3, runner error 1`.
        causes: String,
    },
    /// An analyzed run: a gate failed (exit 1).
    GateFailed {
        /// What failed.
        failures: Vec<String>,
    },
    /// The circuit breaker stopped a run (exit 3).
    BreakerStopped {
        /// Why it tripped.
        reason: String,
        /// Planned trials not run.
        missing: usize,
        /// The run folder (to resume).
        run_dir: PathBuf,
    },
    /// An interrupt stopped a command; recorded trials are kept (`command --resume DIR`
    /// continues).
    StoppedByInterrupt {
        /// The command that continues it (`run`, `calibrate`).
        command: String,
        /// The folder to resume.
        dir: PathBuf,
    },
    /// Trials a run was to run left no record (exit 3).
    TrialsMissing {
        /// How many.
        missing: usize,
        /// The run folder (to resume).
        run_dir: PathBuf,
    },
    /// A run's trials are recorded and its exports written.
    RunRecorded {
        /// Trials recorded by this invocation.
        recorded: usize,
        /// Its wall time in seconds.
        wall_s: f64,
        /// The run folder.
        run_dir: PathBuf,
    },
    /// A command wrote this file (the terminal summary ends with what was written).
    Wrote {
        /// The file.
        path: PathBuf,
    },
    /// A matrix run starts: its cells.
    MatrixPlanned {
        /// The matrix run id.
        run_id: String,
        /// Each cell's label (runner, model).
        cells: Vec<String>,
    },
    /// A cell of a matrix starts (run, merge, regrade).
    Cell {
        /// The cell's label.
        label: String,
    },
    /// A cell of a matrix run finished.
    CellRecorded {
        /// The cell's label.
        label: String,
        /// Trials recorded.
        recorded: usize,
        /// Its lift, when measured.
        lift: Option<f64>,
        /// Its run folder.
        dir: PathBuf,
    },
    /// A cell of a matrix run failed (the others go on).
    CellFailed {
        /// The cell's label.
        label: String,
        /// The error with its causes.
        error: String,
    },
    /// A matrix run's folder.
    MatrixResults {
        /// The matrix folder.
        dir: PathBuf,
    },
    /// A run folder was uploaded to object storage.
    Uploaded {
        /// Files uploaded.
        files: usize,
        /// Their bytes.
        bytes: u64,
        /// Where.
        url: String,
        /// Objects of an earlier upload replaced.
        replaced: usize,
    },
    /// No run folder was created, so nothing was uploaded.
    NothingUploaded {
        /// Where it would have gone.
        url: String,
    },
    /// Run folders were downloaded from object storage.
    Downloaded {
        /// How many.
        folders: usize,
        /// From where.
        url: String,
    },
    /// A regrade was interrupted; the trials graded again so far are kept.
    RegradeInterrupted {
        /// Trials kept.
        kept: usize,
        /// Trials planned.
        planned: usize,
        /// The new run folder.
        out_dir: PathBuf,
    },
    /// A regrade finished.
    Regraded {
        /// Trials graded again.
        regraded: usize,
        /// Of those, with a different grade.
        changed: usize,
        /// The new run folder.
        out_dir: PathBuf,
    },
    /// Shards were merged into one run folder.
    Merged {
        /// Shards merged.
        shards: usize,
        /// Trials in the merged run.
        trials: usize,
        /// The merged run folder.
        out: PathBuf,
    },
    /// `report`: a whole run with planned trials not recorded (exit 3).
    PlannedTrialsMissing {
        /// Trials not recorded.
        missing: usize,
        /// Trials planned.
        planned: usize,
        /// The run folder.
        run_dir: PathBuf,
    },
    /// A calibration starts (or resumes): its plan.
    CalibrationPlanned {
        /// The calibration id.
        calibration_id: String,
        /// The identical arms, described.
        arm: String,
        /// A/A repeats.
        repeats: u32,
        /// Cases.
        cases: usize,
        /// Attempts per case per arm.
        k: u32,
        /// Trials per repeat.
        trials_per_repeat: usize,
        /// The calibration folder.
        dir: PathBuf,
    },
    /// An interrupt arrived while a calibration's model server started; nothing ran.
    CalibrationInterruptedStartingServer {
        /// The calibration folder (to resume).
        dir: PathBuf,
    },
    /// A calibration repeat starts.
    CalibrationRepeat {
        /// The calibration id.
        calibration_id: String,
        /// The repeat (1-based).
        index: u32,
        /// Repeats in all.
        repeats: u32,
    },
    /// A calibration repeat measured its A/A lift.
    RepeatMeasured {
        /// The repeat (1-based).
        index: u32,
        /// The lift, in points.
        lift: String,
        /// Its confidence interval, in points.
        ci: (String, String),
        /// The verdict.
        verdict: String,
        /// Whether the verdict is a false one (improved or regressed).
        false_verdict: bool,
    },
    /// A calibration repeat left planned trials unrecorded (exit 3).
    RepeatIncomplete {
        /// Trials not recorded.
        missing: usize,
        /// The repeat (1-based).
        index: u32,
        /// The breaker's reason, when it stopped the repeat.
        breaker: Option<String>,
        /// The calibration folder (to resume).
        dir: PathBuf,
    },
    /// A calibration repeat measured no lift.
    RepeatMeasuredNothing {
        /// The repeat (1-based).
        index: u32,
        /// The repeat's folder.
        repeat_dir: PathBuf,
        /// The calibration folder (to resume).
        dir: PathBuf,
    },
    /// A calibration is recorded in the state folder.
    Calibrated {
        /// The asset.
        asset: String,
        /// The headline (false-verdict rate).
        headline: String,
        /// The file it is recorded in.
        store: PathBuf,
    },
    /// No calibration repeat measured a lift (exit 3).
    NoRepeatMeasured,
    /// A command failed: the error and its causes (each not already said by the ones before).
    CommandFailed {
        /// The error.
        message: String,
        /// Its causes.
        causes: Vec<String>,
    },
    /// The run's trials reached the OpenTelemetry collector (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    TracesExported {
        /// The URL the spans were posted to.
        endpoint: String,
        /// Spans the collector accepted.
        spans: usize,
        /// Trials they describe.
        trials: usize,
    },
    /// Some of the run's spans did not reach the OpenTelemetry collector (it is down, refused
    /// them, or the export queue was full): the run, its records and its exit code are as they
    /// would be without trace export.
    TraceExportIncomplete {
        /// The URL the spans were posted to.
        endpoint: String,
        /// Spans queued for export.
        queued: usize,
        /// Spans the collector accepted.
        delivered: usize,
        /// Spans whose export failed.
        failed: usize,
        /// Why (the first export error, redacted).
        error: String,
    },
    /// Something accepted that the user should know about (`warning: …`), naming the file it
    /// concerns when there is one.
    Warning {
        /// The file or folder concerned.
        path: Option<PathBuf>,
        /// What is wrong and what was done instead.
        message: String,
    },
}

/// Why a run did not feed the baseline store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BaselineSkip {
    /// A repeat of an A/A control.
    AaControl,
    /// The run measured no lift.
    NoLift,
}

impl Event {
    /// A warning about `path`.
    pub(crate) fn warning_at(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Event::Warning {
            path: Some(path.into()),
            message: message.into(),
        }
    }

    /// A warning about no file in particular.
    pub(crate) fn warning(message: impl Into<String>) -> Self {
        Event::Warning {
            path: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Event {
    /// The line the user reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::RetryingUnscoreable { trials } => write!(
                f,
                "skill-lift: --retry-unscoreable: {trials} trials recorded unscoreable for an infrastructure cause run again (their old records are kept, superseded)"
            ),
            Event::ShardShare {
                shard,
                own,
                planned,
            } => write!(
                f,
                "skill-lift: shard {shard}: {own} of {planned} trials belong to this shard; merge the shard folders with `skill-lift merge`"
            ),
            Event::ShardFromEnvironment {
                shard,
                source,
                index_var,
                count_var,
            } => write!(
                f,
                "skill-lift: --shard auto: shard {shard} from {source} ({index_var}, {count_var})"
            ),
            Event::RunPlanned {
                run_id,
                cases,
                arms,
                k,
                planned,
                recorded,
                runner,
                runner_kind,
                model,
            } => write!(
                f,
                "skill-lift: run {run_id} — {cases} cases × {} arms ({}) × K={k} = {planned} trials ({recorded} already recorded), runner {runner} ({runner_kind}), model {model}",
                arms.len(),
                arms.join(", ")
            ),
            Event::TrialsReused {
                reused,
                arms,
                source,
                from_runs,
                not_found,
            } => write!(
                f,
                "skill-lift: --reuse-baseline: {reused} {} trials reused from {source} ({}); {not_found} with no matching recorded trial run",
                arms.join("/"),
                if from_runs.is_empty() {
                    "none".to_string()
                } else {
                    from_runs
                        .iter()
                        .map(|(run, n)| format!("{run}: {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
            Event::CleanedUpAfterInterruptedRun {
                temp_files,
                trial_folders,
            } => write!(
                f,
                "skill-lift: removed {temp_files} temporary files and {trial_folders} trial folders left by an interrupted run"
            ),
            Event::ShadowPlanned {
                skill,
                prompts,
                host,
                runner,
                runner_kind,
                model,
            } => write!(
                f,
                "skill-lift: shadow {skill} — {prompts} prompt(s) from {host} history, runner {runner} ({runner_kind}), model {model}"
            ),
            Event::InterruptedStartingServer { run_dir, judge } => write!(
                f,
                "skill-lift: interrupted while waiting for the {}model server; it was stopped. Continue with: skill-lift run --resume {}",
                if *judge { "judge's " } else { "" },
                crate::values::shell::shell_path(run_dir)
            ),
            Event::CheckingModelServer { ready_url } => {
                write!(f, "skill-lift: checking model server at {ready_url}")
            }
            Event::ModelServerInUse { ready_url } => write!(
                f,
                "skill-lift: a model server already answers {ready_url}; this run uses it and leaves it running (another run asking it at the same time changes the sampled answers)"
            ),
            Event::ModelServerStarted { command, judge } => write!(
                f,
                "skill-lift: started {}model server ({command})",
                if *judge { "the judge's " } else { "" }
            ),
            Event::PreflightPassed { profile, line } => {
                write!(f, "skill-lift: pre-flight {profile}: {line}")
            }
            Event::Calibration {
                calibrated: true,
                message,
            } => write!(f, "skill-lift: {message}"),
            Event::Calibration {
                calibrated: false,
                message,
            } => write!(f, "warning: {message}"),
            Event::WeakJudgeSettings { warning } => write!(f, "warning: {warning}"),
            Event::RoundsStopped { reason, message } => {
                write!(f, "skill-lift: stopped: {reason}: {message}")
            }
            Event::JudgeUsage { line } => write!(f, "skill-lift: {line}"),
            Event::OrphansStopped { count } => write!(
                f,
                "skill-lift: stopped {count} orphaned processes left by killed trials"
            ),
            Event::RestartingEmptyRunFolder { dir } => write!(
                f,
                "skill-lift: {} holds no manifest and no trial (a start that was killed); starting the run in it again",
                dir.display()
            ),
            Event::BaselineStoreSkipped {
                why: BaselineSkip::AaControl,
            } => write!(
                f,
                "skill-lift: baseline store not updated: an A/A repeat of `skill-lift calibrate` is no evaluation of the skill"
            ),
            Event::BaselineStoreSkipped {
                why: BaselineSkip::NoLift,
            } => write!(
                f,
                "skill-lift: baseline store not updated: this run measured no lift"
            ),
            Event::BaselineStoreRecorded {
                entries,
                asset,
                store,
            } => write!(
                f,
                "skill-lift: baseline store: {entries} verdicts for {asset} ({})",
                store.display()
            ),
            Event::BaselineStoreFailed { error, run_dir } => write!(
                f,
                "warning: baseline store not updated ({error}); run `skill-lift baseline ingest {}` later",
                run_dir.display()
            ),
            Event::TrialStoreRegistered { count, store } => write!(
                f,
                "skill-lift: trial store: {count} reusable trials registered ({})",
                store.display()
            ),
            Event::TrialStoreFailed { error } => {
                write!(f, "warning: trial store not updated ({error})")
            }
            Event::Regrading {
                trials,
                from_run_id,
                out_dir,
            } => write!(
                f,
                "skill-lift: regrading {trials} recorded trials of {from_run_id} into {}",
                out_dir.display()
            ),
            Event::Interrupted { again: false } => write!(
                f,
                "skill-lift: interrupted; stopping (press Ctrl-C again to exit at once)"
            ),
            Event::Interrupted { again: true } => {
                write!(f, "skill-lift: interrupted twice; exiting now")
            }
            Event::ToolsModeToObserve { runner, command } => write!(
                f,
                "skill-lift: runner `{runner}` injects every skill into the prompt, where activation cannot be observed; {command} runs it in `tools` mode (activate_skill, read_file)"
            ),
            Event::TriggersPlanned {
                run_id,
                queries,
                positives,
                negatives,
                k,
                runner,
                runner_kind,
                model,
            } => write!(
                f,
                "skill-lift: triggers {run_id} — {queries} queries ({positives} should trigger, {negatives} should not) × K={k} = {} attempts, runner {runner} ({runner_kind}), model {model}",
                queries * *k as usize
            ),
            Event::OrphanAttemptsStopped { count } => write!(
                f,
                "skill-lift: stopped {count} orphaned processes left by killed attempts"
            ),
            Event::TriggersRecorded {
                attempts,
                wall_s,
                dir,
            } => write!(
                f,
                "skill-lift: {attempts} attempts recorded in {wall_s:.1} s; results in {}",
                dir.display()
            ),
            Event::VetStepDecided {
                step,
                decision,
                why,
            } => write!(f, "skill-lift: vet {step}: {decision} — {why}"),
            Event::VetPairedRunSized {
                cases,
                k,
                trials,
                planned_mde,
                mde,
                reaches_target,
            } => write!(
                f,
                "skill-lift: vet paired run: {cases} cases × 2 arms × K = {k} = {trials} trials (planned MDE {} for a stated MDE of {:.1} pp{})",
                planned_mde.map_or("n/a".to_string(), |m| format!("{:.1} pp", m * 100.0)),
                mde * 100.0,
                if *reaches_target {
                    ""
                } else {
                    "; not reached within --max-k"
                }
            ),
            Event::VetNoGo { steps, exit } => write!(
                f,
                "skill-lift: vet: NO-GO ({}) (exit {exit})",
                steps.join(", ")
            ),
            Event::NoHistory { host, folder } => {
                write!(f, "skill-lift: no {host} session history at {folder}")
            }
            Event::HistoryRead {
                sessions,
                host,
                folder,
                files,
                before_since,
            } => write!(
                f,
                "skill-lift: {sessions} {host} session(s) read from {folder} ({files} file(s){})",
                if *before_since > 0 {
                    format!(", {before_since} before --since left out")
                } else {
                    String::new()
                }
            ),
            Event::UnknownHistoryEvents { kinds } => write!(
                f,
                "skill-lift: event types not understood (skipped): {}",
                kinds.join(", ")
            ),
            Event::ShadowEligible {
                eligible_turns,
                turns,
                skill,
                eligible_sessions,
                chosen,
                over_limit,
            } => write!(
                f,
                "skill-lift: {eligible_turns} of {turns} turn(s) eligible for `{skill}` ({eligible_sessions} session(s)); {chosen} distinct prompt(s) to replay{}",
                if *over_limit > 0 {
                    format!(" ({over_limit} older left out by --limit)")
                } else {
                    String::new()
                }
            ),
            Event::ShadowWriteType { skill, evidence } => write!(
                f,
                "skill-lift: `{skill}` is write-type ({}); every replay runs in a fresh throwaway workspace",
                evidence.join("; ")
            ),
            Event::InterruptedReportCovers { what } => write!(
                f,
                "error: interrupted; the report covers the {what} recorded"
            ),
            Event::RedFlag { line } => write!(f, "{line}"),
            Event::LintFailed {
                failed,
                skills,
                deny_warnings,
            } => write!(
                f,
                "skill-lift lint: {failed} of {skills} skill(s) failed ({})",
                if *deny_warnings {
                    "errors or warnings"
                } else {
                    "errors"
                }
            ),
            Event::EnvRedFlags { missing, skill } => write!(
                f,
                "skill-lift env: {missing} red flag(s): assumptions of `{skill}` this machine does not meet"
            ),
            Event::DraftsMined {
                activated_turns,
                skill,
                drafts,
                positive,
                duplicates,
                signals,
            } => write!(
                f,
                "skill-lift: {activated_turns} turn(s) used {}; {drafts} draft(s): {positive} positive, {} negative{}{}",
                skill
                    .as_ref()
                    .map_or("a skill".to_string(), |s| format!("`{s}`")),
                drafts - positive,
                if *duplicates > 0 {
                    format!(" ({duplicates} duplicate prompt(s) folded)")
                } else {
                    String::new()
                },
                if signals.is_empty() {
                    String::new()
                } else {
                    format!("; signals: {}", signals.join(", "))
                }
            ),
            Event::SkillFolderNamedOtherwise { name, folder } => write!(
                f,
                "skill-lift: note: the skill is named `{name}` but its folder is `{folder}`; agents key skills by folder or by name inconsistently, so rename the folder to `{name}` (every run warns until they match)"
            ),
            Event::SkillMoved { from, to } => write!(
                f,
                "skill-lift: moved (fingerprint unchanged, not listed): {from} -> {to}"
            ),
            Event::SkillDeleted { path, name } => {
                write!(f, "skill-lift: deleted (not listed): {path} ({name})")
            }
            Event::SkillsChanged {
                evaluate,
                changed,
                added,
                deleted,
                moved,
                unchanged,
                base,
                head,
                calibre,
            } => write!(
                f,
                "skill-lift: {evaluate} skill(s) to evaluate ({changed} changed, {added} added); {deleted} deleted, {moved} moved, {unchanged} unchanged between {base} and {head} (calibre {calibre})"
            ),
            Event::HostSkipped { host, reason } => write!(f, "  {host}: {reason}"),
            Event::NoAgentHost => write!(
                f,
                "skill-lift install: no agent host found on this machine (nothing to do)"
            ),
            Event::RunnerProfileShown { name, from } => {
                write!(f, "skill-lift: runner profile `{name}` ({from})")
            }
            Event::RunnerLookupRule => write!(
                f,
                "skill-lift: `--runner NAME` reads runners/NAME.toml in the current folder, then SKILL_LIFT_RUNNERS folders, then the built-in profile; `--runner path/to/file.toml` reads that file"
            ),
            Event::LocalModelSetupInterrupted => write!(
                f,
                "skill-lift: interrupted; the setup was stopped and the local model is not set up. Run `skill-lift setup local-model` again to start over."
            ),
            Event::Failed { problem, exit } => write!(f, "error: {problem} (exit {exit})"),
            Event::Wrote { path } => write!(f, "skill-lift: wrote {}", path.display()),
            Event::SkillChosen { target, skill_dir } => write!(
                f,
                "skill-lift: {} is not a skill folder; using the skill in {}",
                target.display(),
                skill_dir.display()
            ),
            Event::EvalSetByLayout { path } => write!(
                f,
                "skill-lift: eval set {} (found by the repository layout; --evals overrides)",
                path.display()
            ),
            Event::ProjectionPerCell { cells } => write!(
                f,
                "note: the projection is per runner/model cell (each cell is a run of its own, with its own budget); {cells} cells spend {cells} times as much"
            ),
            Event::NoActiveCase => write!(
                f,
                "error: the eval set has no active case (drafts need --allow-draft)"
            ),
            Event::MonitorSuiteStarted {
                asset,
                model,
                run_dir,
                resuming,
            } => write!(
                f,
                "skill-lift: monitor {asset}: {} its suite under {model} in {}",
                if *resuming {
                    "continuing"
                } else {
                    "re-running"
                },
                run_dir.display()
            ),
            Event::MonitorSuiteEnded { asset, status, why } => {
                write!(f, "skill-lift: monitor {asset}: {status}")?;
                if !why.is_empty() {
                    write!(f, " — {why}")?;
                }
                Ok(())
            }
            Event::Note { message } => write!(f, "note: {message}"),
            Event::AssetsSkipped { skipped } => {
                write!(
                    f,
                    "warning: skipped {} asset(s) that could not be registered (the others were):",
                    skipped.len()
                )?;
                for (path, reason) in skipped {
                    write!(f, "\n  {}: {reason}", path.display())?;
                }
                Ok(())
            }
            Event::Waived {
                asset,
                model,
                reason,
            } => write!(f, "waived {asset} under {model}: {reason}"),
            Event::NothingToRun { why } => write!(
                f,
                "error: {why} (exit {})",
                crate::values::exit_codes::NOTHING_TO_RUN
            ),
            Event::NothingGradable => write!(
                f,
                "error: no trial could be graded: the cases have no output checks (`checks` or an `expected_output_match`) and no --judge or --grader scored them (exit {})",
                crate::values::exit_codes::NOTHING_TO_RUN
            ),
            Event::TooManyUnscoreable {
                unscoreable,
                recorded,
                fraction,
                limit,
                causes,
            } => write!(
                f,
                "error: {unscoreable} of {recorded} trials are unscoreable ({:.2}%, limit {:.2}% — --max-unscoreable); causes: {causes}; see `reason` in trials.jsonl (exit {})",
                fraction * 100.0,
                limit * 100.0,
                crate::values::exit_codes::INFRASTRUCTURE_ERROR
            ),
            Event::GateFailed { failures } => write!(
                f,
                "error: gate failed: {} (exit {})",
                failures.join("; "),
                crate::values::exit_codes::GATE_FAILED
            ),
            Event::BreakerStopped {
                reason,
                missing,
                run_dir,
            } => f.write_str(&breaker_stop_message(reason, *missing, run_dir)),
            Event::StoppedByInterrupt { command, dir } => write!(
                f,
                "skill-lift: interrupted; recorded trials are kept. Continue with: skill-lift {command} --resume {}",
                crate::values::shell::shell_path(dir)
            ),
            Event::TrialsMissing { missing, run_dir } => write!(
                f,
                "error: {missing} of the trials this run was to run were not recorded; continue with `skill-lift run --resume {}` (exit {})",
                crate::values::shell::shell_path(run_dir),
                crate::values::exit_codes::INFRASTRUCTURE_ERROR
            ),
            Event::RunRecorded {
                recorded,
                wall_s,
                run_dir,
            } => write!(
                f,
                "skill-lift: {recorded} trials recorded in {wall_s:.1} s; results in {}",
                run_dir.display()
            ),
            Event::MatrixPlanned { run_id, cells } => write!(
                f,
                "skill-lift: matrix run {run_id}: {} cells ({})",
                cells.len(),
                cells.join("; ")
            ),
            Event::Cell { label } => write!(f, "skill-lift: cell {label}"),
            Event::CellRecorded {
                label,
                recorded,
                lift,
                dir,
            } => write!(
                f,
                "skill-lift: cell {label}: {recorded} trials recorded; lift {}; results in {}",
                lift.map_or("n/a".to_string(), |l| format!("{:+.1} pp", l * 100.0)),
                dir.display()
            ),
            Event::CellFailed { label, error } => write!(f, "error: cell {label}: {error}"),
            Event::MatrixResults { dir } => {
                write!(f, "skill-lift: matrix results in {}", dir.display())
            }
            Event::Uploaded {
                files,
                bytes,
                url,
                replaced,
            } => {
                write!(
                    f,
                    "skill-lift: uploaded {files} files ({bytes} bytes) to {url}"
                )?;
                if *replaced > 0 {
                    write!(f, " (replacing {replaced} objects of an earlier upload)")?;
                }
                Ok(())
            }
            Event::NothingUploaded { url } => write!(
                f,
                "skill-lift: no run folder was created; nothing uploaded to {url}"
            ),
            Event::Downloaded { folders, url } => write!(
                f,
                "skill-lift: downloaded {folders} run folder(s) from {url}"
            ),
            Event::RegradeInterrupted {
                kept,
                planned,
                out_dir,
            } => write!(
                f,
                "skill-lift: interrupted; {kept} of {planned} trials graded again are kept in {} (its analysis covers those only); regrade again into a new --out for all of them",
                out_dir.display()
            ),
            Event::Regraded {
                regraded,
                changed,
                out_dir,
            } => write!(
                f,
                "skill-lift: {regraded} trials regraded ({changed} with a different grade), the others kept as recorded; results in {}",
                out_dir.display()
            ),
            Event::Merged {
                shards,
                trials,
                out,
            } => write!(
                f,
                "skill-lift: merged {shards} shards ({trials} trials) into {}",
                out.display()
            ),
            Event::PlannedTrialsMissing {
                missing,
                planned,
                run_dir,
            } => write!(
                f,
                "error: {missing} of {planned} planned trials are not recorded; finish the run with `skill-lift run --resume {}` (exit {})",
                crate::values::shell::shell_path(run_dir),
                crate::values::exit_codes::INFRASTRUCTURE_ERROR
            ),
            Event::CalibrationPlanned {
                calibration_id,
                arm,
                repeats,
                cases,
                k,
                trials_per_repeat,
                dir,
            } => write!(
                f,
                "skill-lift: calibrate {calibration_id} — A/A control, {arm}: {repeats} repeats × {cases} cases × 2 arms × K={k} ({trials_per_repeat} trials per repeat); results in {}",
                dir.display()
            ),
            Event::CalibrationInterruptedStartingServer { dir } => write!(
                f,
                "skill-lift: interrupted while waiting for the model server; it was stopped. Continue with: skill-lift calibrate --resume {}",
                crate::values::shell::shell_path(dir)
            ),
            Event::CalibrationRepeat {
                calibration_id,
                index,
                repeats,
            } => write!(
                f,
                "skill-lift: calibrate {calibration_id}: repeat {index} of {repeats}"
            ),
            Event::RepeatMeasured {
                index,
                lift,
                ci,
                verdict,
                false_verdict,
            } => write!(
                f,
                "skill-lift: repeat {index}: lift {lift} [{}, {}], verdict {verdict}{}",
                ci.0,
                ci.1,
                if *false_verdict {
                    " (a false verdict: the arms are identical)"
                } else {
                    ""
                }
            ),
            Event::RepeatIncomplete {
                missing,
                index,
                breaker,
                dir,
            } => write!(
                f,
                "error: {missing} planned trials of repeat {index} were not recorded{}; continue with `skill-lift calibrate --resume {}` (exit {})",
                match breaker {
                    Some(reason) => format!(" because the run stopped early ({reason})"),
                    None => String::new(),
                },
                crate::values::shell::shell_path(dir),
                crate::values::exit_codes::INFRASTRUCTURE_ERROR
            ),
            Event::RepeatMeasuredNothing {
                index,
                repeat_dir,
                dir,
            } => write!(
                f,
                "error: repeat {index} ({}) measured no lift; fix the cause and continue with `skill-lift calibrate --resume {}`",
                repeat_dir.display(),
                crate::values::shell::shell_path(dir)
            ),
            Event::Calibrated {
                asset,
                headline,
                store,
            } => write!(
                f,
                "skill-lift: calibrated {asset}: {headline}; recorded in {} (a later `run` of this suite on this runner, model, decoys, K and grading shows it)",
                store.display()
            ),
            Event::NoRepeatMeasured => write!(
                f,
                "error: no repeat measured a lift (no case scored in both arms)"
            ),
            Event::CommandFailed { message, causes } => {
                write!(f, "error: {message}")?;
                for cause in causes {
                    write!(f, "\n  caused by: {cause}")?;
                }
                Ok(())
            }
            Event::TracesExported {
                endpoint,
                spans,
                trials,
            } => write!(
                f,
                "skill-lift: exported {spans} spans of {trials} trials to {endpoint} (OpenTelemetry)"
            ),
            Event::TraceExportIncomplete {
                endpoint,
                queued,
                delivered,
                failed,
                error,
            } => write!(
                f,
                "warning: trace export: {delivered} of {queued} spans reached {endpoint} ({failed} failed to export: {error}); the run and its records are not affected"
            ),
            Event::Warning {
                path: Some(path),
                message,
            } => write!(f, "warning: {}: {message}", path.display()),
            Event::Warning {
                path: None,
                message,
            } => write!(f, "warning: {message}"),
        }
    }
}

/// What the circuit breaker's stop says, worded for the number of planned trials it left
/// unrun (none when it tripped on the run's last trial: then only the unscoreable trials are
/// worth running again).
fn breaker_stop_message(reason: &str, missing: usize, run_dir: &std::path::Path) -> String {
    let folder = crate::values::shell::shell_path(run_dir);
    let exit = crate::values::exit_codes::INFRASTRUCTURE_ERROR;
    match missing {
        0 => format!(
            "error: {reason}; the breaker tripped on the run's last planned trial, so every trial was run, but the unscoreable ones are not scored. Fix the cause, then run them again with: skill-lift run --resume {folder} --retry-unscoreable (exit {exit})"
        ),
        1 => format!(
            "error: {reason}; stopped with 1 planned trial not run (it is not scored). Fix the cause, then continue with: skill-lift run --resume {folder} (exit {exit})"
        ),
        _ => format!(
            "error: {reason}; stopped with {missing} planned trials not run (they are not scored). Fix the cause, then continue with: skill-lift run --resume {folder} (exit {exit})"
        ),
    }
}

impl Event {
    /// A command's failure: `error`'s message and each cause its text does not already hold
    /// (thiserror messages often embed their source), through the redaction boundary (error
    /// text can quote a server's answer).
    pub(crate) fn failed(error: &anyhow::Error) -> Self {
        let redact = |text: &str| crate::disk::redact::redact_text(text).into_owned();
        let mut shown = error.to_string();
        let mut causes = Vec::new();
        for cause in error.chain().skip(1) {
            let text = cause.to_string();
            if !shown.contains(&text) {
                causes.push(redact(&text));
                shown.push_str(&text);
            }
        }
        Event::CommandFailed {
            message: redact(&error.to_string()),
            causes,
        }
    }
}

/// Report `event`: its line on stderr, now.
pub(crate) fn report(event: Event) {
    crate::errln!("{event}");
}

/// Report each of `paths` as written ([`Event::Wrote`]), in order.
pub(crate) fn report_written(paths: &[PathBuf]) {
    for path in paths {
        report(Event::Wrote { path: path.clone() });
    }
}

/// Write a command's result on stdout exactly as given: a table, JSON document or markdown that
/// the library rendered (the command line renders nothing itself). Nothing is appended; use
/// [`result_line`] for a result that ends its line.
pub(crate) fn result(text: &str) {
    crate::out!("{text}");
}

/// Write one line of a command's result on stdout: `text` and a newline.
pub(crate) fn result_line(text: &str) {
    crate::outln!("{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breaker_stop_is_worded_for_every_count_of_trials_left() {
        let dir = std::path::Path::new("results/r1");
        let none = breaker_stop_message("3 trials failed", 0, dir);
        assert!(!none.contains("0 planned"), "{none}");
        assert!(none.contains("every trial was run"), "{none}");
        assert!(
            none.contains("--resume results/r1 --retry-unscoreable"),
            "{none}"
        );
        let one = breaker_stop_message("3 trials failed", 1, dir);
        assert!(one.contains("1 planned trial not run (it is"), "{one}");
        let many = breaker_stop_message("3 trials failed", 7, dir);
        assert!(
            many.contains("7 planned trials not run (they are"),
            "{many}"
        );
        assert!(many.ends_with("(exit 3)"), "{many}");
    }

    #[test]
    fn events_read_as_the_lines_they_replace() {
        assert_eq!(
            Event::WeakJudgeSettings {
                warning: "1 judge-scored case".into()
            }
            .to_string(),
            "warning: 1 judge-scored case"
        );
        let planned = Event::RunPlanned {
            run_id: "r1".into(),
            cases: 2,
            arms: vec!["with_skill".into(), "without_skill".into()],
            k: 3,
            planned: 12,
            recorded: 0,
            runner: "local".into(),
            runner_kind: "openai-chat".into(),
            model: "m".into(),
        };
        assert_eq!(
            planned.to_string(),
            "skill-lift: run r1 — 2 cases × 2 arms (with_skill, without_skill) × K=3 = 12 trials (0 already recorded), runner local (openai-chat), model m"
        );
        assert_eq!(
            Event::ModelServerStarted {
                command: "llama-server -m x".into(),
                judge: true
            }
            .to_string(),
            "skill-lift: started the judge's model server (llama-server -m x)"
        );
        assert_eq!(
            Event::InterruptedStartingServer {
                run_dir: PathBuf::from("/tmp/run 1"),
                judge: false
            }
            .to_string(),
            "skill-lift: interrupted while waiting for the model server; it was stopped. Continue with: skill-lift run --resume '/tmp/run 1'"
        );
        assert_eq!(
            Event::warning_at("/x/SKILL.md", "odd").to_string(),
            "warning: /x/SKILL.md: odd"
        );
        assert_eq!(
            Event::Calibration {
                calibrated: false,
                message: "not calibrated".into()
            }
            .to_string(),
            "warning: not calibrated"
        );
    }
}
