//! Executing a prepared run in its folder: under the run's lock, clean what a killed run left
//! (on resume), read the recorded trials, import reused ones, start the model and judge servers,
//! pre-flight, build the runner and the trial context, hand everything to the scheduler
//! (`crate::pipeline::execute`, or round scheduling in `crate::pipeline::sequential`), stop the servers, and write
//! the final exports. The one code path of `run`, each matrix cell and each `calibrate` repeat.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::PipelineError;
use super::prepare::{PreparedRun, write_manifest};
use super::resolve::{ResolvedRun, skill_md_text};
use super::settings::{AnalysisOverrides, ExecutionSettings};
use crate::analysis::{AnalysisSettings, Summary};
use crate::features::decoys::prepare_decoys;
use crate::features::runner::build_runner;
use crate::features::workspace::SkillSource;
use crate::pipeline::execute::{
    ExecuteReport, SchedulerSettings, TrialContext, execute, plan_trials,
};
use crate::record::{Manifest, RunLock, TrialKey, TrialLog, TrialRecord};
use crate::report::{Format, export_run};
use crate::values::reporter::{Event, report};

/// How [`execute_run`] behaves besides the run's own settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunOptions {
    /// No progress bar.
    pub quiet: bool,
    /// Start the profile's model server when it does not answer (and stop it after). A caller
    /// running several runs in a row (`calibrate`) starts it once itself instead.
    pub manage_server: bool,
    /// The run folder may hold what a killed run left (temporary files, trial folders):
    /// remove it first.
    pub resuming: bool,
    /// The progress display instead of the one the settings and the terminal choose (a matrix
    /// running several runners at once shows status lines).
    pub progress: Option<crate::report::progress::ProgressDisplay>,
}

/// What [`execute_run`] leaves: the run's manifest, its analysis and the files written.
pub(crate) struct RunFinished {
    /// The manifest (with how the run stopped, for round scheduling).
    pub manifest: Manifest,
    /// The analysis of every recorded trial.
    pub summary: Summary,
    /// How the scheduler ended.
    pub report: ExecuteReport,
    /// The exports written.
    pub written: Vec<PathBuf>,
}

/// An interrupt (SIGINT/SIGTERM) arrived before any trial ran, while a model server started;
/// the server was stopped and nothing was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InterruptedBeforeTrials;

/// Run the missing trials of the run folder `run_dir` (whose manifest `prepared` holds) under
/// the run's lock, then analyze it and write every export. `Ok(Err(_))`: interrupted while a
/// server started, before any trial ran.
///
/// The stages, in the order of a run's lifecycle: [`open_run_folder`] (lock, clean-up after a
/// killed run), [`read_ledger`] (what is recorded, what is planned, what runs again),
/// [`import_reused_trials`], [`announce_run`], [`start_servers`], [`preflight`], the runner and
/// the [`trial_context`], [`schedule`] (the scheduler, or round scheduling), [`wind_down`]
/// (servers stopped, logs redacted, orphans reaped) and the final exports.
pub(crate) async fn execute_run(
    prepared: PreparedRun,
    run_dir: &Path,
    execution: &ExecutionSettings,
    analysis: &AnalysisOverrides,
    options: RunOptions,
) -> Result<Result<RunFinished, InterruptedBeforeTrials>, PipelineError> {
    let PreparedRun {
        resolved,
        graders,
        api_key,
    } = prepared;
    let run_dir = run_dir.to_path_buf();
    let lock = open_run_folder(&run_dir, options.resuming, execution)?;
    let mut manifest = resolved.manifest.clone();
    let Ledger {
        previous,
        mut done,
        retried,
        outside_shard,
        planned,
        valid_len,
    } = read_ledger(
        &run_dir,
        &resolved.cases,
        &manifest,
        execution.retry_unscoreable,
    )?;
    let mut log = TrialLog::open(&run_dir, valid_len, &lock).map_err(PipelineError::RunFolder)?;
    let mut previous = previous;
    if !options.resuming {
        import_reused_trials(&run_dir, &mut manifest, &mut done, &mut previous, &mut log)?;
    }
    announce_run(&manifest, &resolved, done.len() - outside_shard);

    // From the first child on, SIGINT/SIGTERM stop the run cleanly (servers included).
    crate::features::contain::install_interrupt_handler();
    let pending = done.len() < planned;
    let mut servers =
        match start_servers(&resolved, &run_dir, options.manage_server, pending).await? {
            Ok(servers) => servers,
            Err(interrupted) => return Ok(Err(interrupted)),
        };
    if pending
        && execution.preflight
        && let Err(error) = preflight(&resolved, api_key.as_deref(), &manifest.model).await
    {
        servers.stop().await;
        return Err(error);
    }
    let runner = build_runner(&resolved.profile, api_key)?;
    let decoys = prepare_decoys(&resolved.decoy_source)?;
    // Every check that can stop the run has passed: now the suite's calibration line.
    if let Some(found) = &manifest.calibration {
        report(Event::Calibration {
            calibrated: found.is_calibrated(),
            message: found.message.clone(),
        });
    }
    // Settings too weak for judge-scored cases: said before any trial spends (and again in
    // every report).
    if let Some(warning) = planned_judge_warning(&resolved.cases, &manifest) {
        report(Event::WeakJudgeSettings { warning });
    }
    let jobs = execution
        .jobs
        .unwrap_or(resolved.profile.profile.concurrency);
    // The previous version's extracted folder (`--previous-ref`) must outlive the trials.
    let (context, _previous_version) = trial_context(
        resolved,
        &manifest,
        &run_dir,
        execution,
        runner,
        decoys.skills.clone(),
        graders,
        retried,
    )?;
    // A resumed run keeps the gates it started with unless a setting is given again.
    let analysis_settings = analysis.settings_over(manifest.seed, manifest.gates.as_ref());
    // `OTEL_EXPORTER_OTLP_ENDPOINT`: every trial this invocation runs becomes spans.
    let traces = crate::report::trace_export::TraceExport::from_environment(
        crate::report::trace_export::RunIdentity::of(&manifest),
    )
    .map(Arc::new);
    let settings = SchedulerSettings {
        traces: traces.clone(),
        jobs,
        k: manifest.k,
        progress: options
            .progress
            .unwrap_or_else(|| execution.progress_display(options.quiet)),
        breaker: execution.breaker,
        round: None,
        exports: Some(periodic_exports(
            run_dir.clone(),
            manifest.clone(),
            analysis_settings.clone(),
        )),
    };
    let graders_for_usage = Arc::clone(&context.graders);
    let outcome = schedule(context, settings, &mut manifest, &done, &previous, log).await;
    // The last spans are flushed (bounded wait) whatever the outcome; a failure is a warning.
    if let Some(traces) = traces {
        traces.finish().await;
    }
    if manifest.stopping.is_some() {
        // How the run stopped is part of its record (the reports read it from here).
        write_manifest(&run_dir, &manifest)?;
    }
    for line in graders_for_usage.judge_usage_lines() {
        report(Event::JudgeUsage { line });
    }
    wind_down(&mut servers, &run_dir).await;
    // A leak is the inputs' fault; a failed append or an internal error is not.
    let report = outcome?;

    // The transcript pages `report.html` links to, so its links work right after the run; a
    // very large run leaves them to `skill-lift report` (rendering would take most of its time).
    let pages = manifest.trials_planned <= TRANSCRIPT_PAGES_MAX_TRIALS;
    let (summary, written) = write_final_exports(&run_dir, &manifest, &analysis_settings, pages)?;
    // The final export is written: other processes may now open the run.
    drop(lock);
    Ok(Ok(RunFinished {
        manifest,
        summary,
        report,
        written,
    }))
}

/// Create the run folder's `transcripts/`, take the run's lock and, on resume, remove what a
/// killed run left. The lock is taken before `trials.jsonl` is read and held until the final
/// export: two processes on one run never read, truncate and append over each other.
fn open_run_folder(
    run_dir: &Path,
    resuming: bool,
    execution: &ExecutionSettings,
) -> Result<RunLock, PipelineError> {
    let transcripts = run_dir.join("transcripts");
    std::fs::create_dir_all(&transcripts).map_err(|source| PipelineError::RunFolderIo {
        verb: "creating",
        path: run_dir.to_path_buf(),
        source,
    })?;
    let lock = RunLock::acquire(run_dir).map_err(PipelineError::RunFolder)?;
    if resuming {
        clean_up_after_a_killed_run(run_dir, &lock, execution.workspace_root.as_deref())?;
    }
    Ok(lock)
}

/// What the run folder holds against what the run plans ([`read_ledger`]).
struct Ledger {
    /// The recorded trials that count (not superseded by a retry).
    previous: Vec<TrialRecord>,
    /// The planned trials that need not run: recorded, or another shard's.
    done: HashSet<TrialKey>,
    /// Trials recorded unscoreable for an infrastructure cause that run again.
    retried: HashSet<TrialKey>,
    /// Planned trials of other shards (counted in `done`, never recorded here).
    outside_shard: usize,
    /// Trials planned in all.
    planned: usize,
    /// Length of the valid prefix of `trials.jsonl`.
    valid_len: u64,
}

/// Read the recorded trials of the run (under its lock) and decide what remains: with
/// `--retry-unscoreable` the infrastructure failures run again; a shard counts the other
/// shards' trials as done.
fn read_ledger(
    run_dir: &Path,
    cases: &[crate::features::evalset::GoldenCase],
    manifest: &Manifest,
    retry_unscoreable: bool,
) -> Result<Ledger, PipelineError> {
    let mut previous = Vec::new();
    let valid_len =
        crate::record::for_each_planned_trial(&run_dir.join("trials.jsonl"), manifest, |record| {
            previous.push(record);
            Ok(())
        })
        .map_err(PipelineError::RunFolder)?;
    let planned: HashSet<_> = plan_trials(cases, &manifest.arms, manifest.k)
        .into_iter()
        .map(|(_, key)| key)
        .collect();
    // `--retry-unscoreable`: trials whose current record is unscoreable for an infrastructure
    // cause run again; their new records supersede the old ones (kept in the log).
    let retried: HashSet<TrialKey> = if retry_unscoreable {
        previous
            .iter()
            .filter(|record| {
                record
                    .cause()
                    .is_some_and(crate::record::UnscoreableCause::is_infrastructure)
            })
            .map(|record| record.key())
            .collect()
    } else {
        HashSet::new()
    };
    if retry_unscoreable {
        report(Event::RetryingUnscoreable {
            trials: retried.len(),
        });
    }
    let previous: Vec<_> = previous
        .into_iter()
        .filter(|record| !retried.contains(&record.key()))
        .collect();
    let mut done: HashSet<_> = previous
        .iter()
        .map(|r| r.key())
        .filter(|key| planned.contains(key))
        .collect();
    // A shard runs only its own trials: the others count as done here (and are never recorded).
    let mut outside_shard = 0;
    if let Some(shard) = manifest.shard {
        for key in &planned {
            if !shard.contains(&key.trial_id()) && done.insert(key.clone()) {
                outside_shard += 1;
            }
        }
        report(Event::ShardShare {
            shard: shard.to_string(),
            own: planned.len() - outside_shard,
            planned: planned.len(),
        });
    }
    Ok(Ledger {
        previous,
        done,
        retried,
        outside_shard,
        planned: planned.len(),
        valid_len,
    })
}

/// Say what the run is about to do: its size, what is already recorded, runner and model.
fn announce_run(manifest: &Manifest, resolved: &ResolvedRun, recorded: usize) {
    report(Event::RunPlanned {
        run_id: manifest.run_id.clone(),
        cases: resolved.cases.len(),
        arms: manifest
            .arms
            .iter()
            .map(|arm| arm.as_str().to_string())
            .collect(),
        k: manifest.k,
        planned: manifest.trials_planned,
        recorded,
        runner: resolved.profile.name.clone(),
        runner_kind: resolved.profile.profile.kind.name().to_string(),
        model: manifest.model.clone(),
    });
}

/// The model servers a run started (the runner's, the judges'), stopped after it.
struct Servers {
    model: Option<crate::features::runner::server::ManagedServer>,
    judges: Vec<crate::features::runner::server::ManagedServer>,
}

impl Servers {
    /// Stop every server this run started: the runner's first, then the judges'.
    async fn stop(&mut self) {
        if let Some(server) = self.model.as_mut() {
            server.stop().await;
        }
        for server in self.judges.iter_mut() {
            server.stop().await;
        }
    }
}

/// Start the runner's model server (when `manage_server` and trials are `pending`) and the
/// judges' servers that do not answer. `Ok(Err(_))`: an interrupt arrived meanwhile; what
/// started was stopped.
async fn start_servers(
    resolved: &ResolvedRun,
    run_dir: &Path,
    manage_server: bool,
    pending: bool,
) -> Result<Result<Servers, InterruptedBeforeTrials>, PipelineError> {
    let mut model = None;
    if manage_server && pending {
        model = match super::start_model_server(&resolved.profile, &run_dir.join("server.log"))
            .await?
        {
            Ok(server) => server,
            Err(interrupted) => {
                report(Event::InterruptedStartingServer {
                    run_dir: run_dir.to_path_buf(),
                    judge: false,
                });
                return Ok(Err(interrupted));
            }
        };
    }
    let judges = if pending {
        tokio::select! {
            started = super::grading::ensure_judge_servers(&resolved.judge_profiles, run_dir) => started?,
            _ = crate::features::contain::interrupted() => {
                if let Some(server) = model.as_mut() {
                    server.stop().await;
                }
                report(Event::InterruptedStartingServer {
                    run_dir: run_dir.to_path_buf(),
                    judge: true,
                });
                return Ok(Err(InterruptedBeforeTrials));
            }
        }
    } else {
        Vec::new()
    };
    Ok(Ok(Servers { model, judges }))
}

/// Before any trial: the runner's program or endpoint and every judge answer (an agent CLI
/// also answers one tiny real request, proving credentials and endpoint with `model`).
async fn preflight(
    resolved: &ResolvedRun,
    api_key: Option<&str>,
    model: &str,
) -> Result<(), PipelineError> {
    let mut checks = vec![(resolved.profile.clone(), api_key.map(str::to_string))];
    for judge in &resolved.judge_profiles {
        checks.push((judge.clone(), super::grading::profile_api_key(judge)?));
    }
    for (index, (checked, key)) in checks.iter().enumerate() {
        let mut result = crate::features::runner::preflight::check(checked, key.as_deref()).await;
        if index == 0 && result.is_ok() && checked.profile.kind.spec().agent_cli().is_some() {
            // The runner is an agent CLI: one tiny real request through it proves the
            // credentials and the endpoint before the first trial spends anything.
            result =
                crate::features::runner::preflight::probe_agent(checked, key.as_deref(), model)
                    .await;
        }
        match result {
            Ok(line) => report(Event::PreflightPassed {
                profile: checked.name.clone(),
                line,
            }),
            Err(error) => return Err(PipelineError::Preflight(error)),
        }
    }
    Ok(())
}

/// The judge warning as it is known before the first trial: in a run with an LLM judge, the
/// cases whose output checks do not decide their pass (so the judge's outcome score will),
/// graded with fewer judge repeats or attempts than recommended.
fn planned_judge_warning(
    cases: &[crate::features::evalset::GoldenCase],
    manifest: &Manifest,
) -> Option<String> {
    let grading = &manifest.grading;
    if grading.judges.is_empty() {
        return None;
    }
    let judged = cases
        .iter()
        .filter(|case| !crate::features::grade::pipeline::output_checks_decide(case, grading))
        .count();
    crate::analysis::judge_warning_before_trials(judged, grading.judge_k, manifest.k)
}

/// What every trial of the run shares: the runner, the cases, the staged skills, the graders,
/// the run's design and limits; and the previous version, whose temporary folder (a
/// `--previous-ref` extracted) the caller keeps until the trials are done.
#[allow(clippy::too_many_arguments)]
fn trial_context(
    resolved: ResolvedRun,
    manifest: &Manifest,
    run_dir: &Path,
    execution: &ExecutionSettings,
    runner: Box<dyn crate::features::runner::Runner>,
    decoys: Vec<SkillSource>,
    graders: crate::features::grade::pipeline::GraderSet,
    retried: HashSet<TrialKey>,
) -> Result<(Arc<TrialContext>, Option<super::resolve::ResolvedPrevious>), PipelineError> {
    let ResolvedRun {
        skill,
        skill_dir,
        cases,
        profile,
        calibre,
        previous: previous_version,
        ..
    } = resolved;
    let context = Arc::new(TrialContext {
        run_id: manifest.run_id.clone(),
        run_dir: run_dir.to_path_buf(),
        runner_name: profile.name.clone(),
        model: manifest.model.clone(),
        runner,
        cases,
        target: SkillSource {
            name: skill.name.clone(),
            dir: skill_dir.clone(),
            eval_material: eval_material_of(&skill_dir, manifest),
        },
        decoys,
        eval_files_dir: skill_dir.join("evals").join("files"),
        target_digest: manifest.asset.fingerprint.clone(),
        calibre,
        trial_timeout: Duration::from_secs_f64(profile.profile.timeout_s),
        keep_workspaces: execution.keep_workspaces,
        workspace_root: execution.workspace_root.clone(),
        graders: Arc::new(graders),
        decoy_names: manifest
            .decoys
            .skills
            .iter()
            .map(|d| d.name.clone())
            .collect(),
        capabilities: manifest
            .runner
            .capabilities
            .clone()
            .unwrap_or_else(|| crate::record::RunnerCapabilities::of_profile(&profile.profile)),
        retried,
        max_transcript_bytes: usize::try_from(profile.profile.max_transcript_bytes)
            .unwrap_or(usize::MAX),
        design: manifest.arm_design,
        arms: manifest.arms.clone(),
        previous: previous_version.as_ref().map(|p| p.skill.clone()),
        target_skill_md: skill_md_text(&skill_dir)?,
        memory_staging: Default::default(),
        slots: Default::default(),
        skill_order: manifest.skill_order,
        seed: manifest.seed,
    });
    Ok((context, previous_version))
}

/// Hand the pending trials to the scheduler: all at once, or round by round when the run has a
/// stopping plan (`--sequential`, budgets), recording in `manifest` how the rounds stopped.
async fn schedule(
    context: Arc<TrialContext>,
    settings: SchedulerSettings,
    manifest: &mut Manifest,
    done: &HashSet<TrialKey>,
    previous: &[TrialRecord],
    log: TrialLog,
) -> Result<ExecuteReport, crate::pipeline::execute::ExecuteError> {
    match manifest.stopping.clone() {
        // Round scheduling (`--sequential`, budgets): the round planner feeds the scheduler.
        Some(plan) => {
            let wall_before_s = plan.outcome.as_ref().map_or(0.0, |o| o.spent.wall_s);
            crate::pipeline::sequential::execute_rounds(
                context,
                settings,
                &plan,
                done,
                previous,
                log,
                crate::features::contain::interrupted,
                wall_before_s,
            )
            .await
            .map(|(report, stopped)| {
                report_rounds_stopped(&stopped);
                if let Some(plan) = manifest.stopping.as_mut() {
                    plan.outcome = Some(stopped);
                }
                report
            })
        }
        None => {
            execute(
                context,
                settings,
                done,
                previous,
                log,
                crate::features::contain::interrupted(),
            )
            .await
        }
    }
}

/// Report why round scheduling stopped.
fn report_rounds_stopped(stopped: &crate::record::StoppingOutcome) {
    report(Event::RoundsStopped {
        reason: stopped.reason.as_str().to_string(),
        message: stopped.message.clone(),
    });
}

/// After the scheduler: stop the servers, pass the servers' own logs through the redaction
/// boundary, and stop anything re-parented to skill-lift that it did not start (a supervisor
/// killed from outside).
async fn wind_down(servers: &mut Servers, run_dir: &Path) {
    servers.stop().await;
    crate::record::redact_logs_in(run_dir);
    let orphans = crate::features::contain::reap_adopted_orphans();
    if orphans > 0 {
        report(Event::OrphansStopped { count: orphans });
    }
}

/// The largest run (planned trials) whose transcript pages `run` renders at its end; larger
/// runs leave them to `skill-lift report RUN_DIR`.
pub(crate) const TRANSCRIPT_PAGES_MAX_TRIALS: usize = 5_000;

/// Analyze the run folder `run_dir` from its `trials.jsonl` and write every export into it (with
/// `transcript_pages`, one HTML page per transcript too): what `skill-lift report` re-renders
/// byte for byte. Returns the summary and the files written.
pub(crate) fn write_final_exports(
    run_dir: &Path,
    manifest: &Manifest,
    settings: &AnalysisSettings,
    transcript_pages: bool,
) -> Result<(Summary, Vec<PathBuf>), PipelineError> {
    export_run(
        run_dir,
        run_dir,
        manifest,
        settings,
        &Format::ALL,
        transcript_pages,
    )
    .map_err(|source| PipelineError::Export {
        dir: run_dir.to_path_buf(),
        source,
    })
}

/// Take the matching recorded trials of a fresh run that asked for reuse (`manifest.reuse`)
/// into its log before anything runs: appended to `log`, added to `done` and `previous`, the
/// counts written into the manifest.
fn import_reused_trials(
    run_dir: &Path,
    manifest: &mut Manifest,
    done: &mut HashSet<TrialKey>,
    previous: &mut Vec<TrialRecord>,
    log: &mut TrialLog,
) -> Result<(), PipelineError> {
    let Some(request) = manifest.reuse.clone() else {
        return Ok(());
    };
    let imported =
        crate::features::reuse::import(&request.source, &request.arms, manifest, run_dir, done)
            .map_err(PipelineError::ReuseImport)?;
    for warning in &imported.warnings {
        report(Event::warning(format!("--reuse-baseline: {warning}")));
    }
    log.append(&imported.records)
        .map_err(PipelineError::Record)?;
    let mut from_runs = BTreeMap::<String, usize>::new();
    for record in &imported.records {
        if let Some(from) = &record.reused_from {
            *from_runs.entry(from.run_id.clone()).or_default() += 1;
        }
    }
    report(Event::TrialsReused {
        reused: imported.records.len(),
        arms: request
            .arms
            .iter()
            .map(|a| a.as_str().to_string())
            .collect(),
        source: request.source.describe(),
        from_runs: from_runs.clone(),
        not_found: imported.not_found,
    });
    done.extend(imported.records.iter().map(|r| r.key()));
    if let Some(reuse) = manifest.reuse.as_mut() {
        reuse.reused = imported.records.len();
        reuse.from_runs = from_runs;
        reuse.not_found = imported.not_found;
    }
    previous.extend(imported.records);
    write_manifest(run_dir, manifest)
}

/// What a killed run leaves behind and `--resume` removes (under the run's lock): temporary
/// export files in the run folder and the staged folders of the trials that were in flight.
fn clean_up_after_a_killed_run(
    run_dir: &Path,
    lock: &RunLock,
    workspace_root: Option<&Path>,
) -> Result<(), PipelineError> {
    let temp_files =
        crate::record::remove_stale_temp_files(run_dir, lock).map_err(PipelineError::Record)?;
    // Server logs of a killed run were never redacted.
    crate::record::redact_logs_in(run_dir);
    let (records, _) = crate::record::read_all_trial_lines(&run_dir.join("trials.jsonl"))
        .map_err(PipelineError::RunFolder)?;
    let kept: HashSet<PathBuf> = records.into_iter().filter_map(|r| r.workspace).collect();
    let mut folders =
        crate::features::workspace::remove_orphaned_trial_folders(run_dir, None, &kept);
    if let Some(root) = workspace_root {
        folders +=
            crate::features::workspace::remove_orphaned_trial_folders(run_dir, Some(root), &kept);
    }
    if temp_files + folders > 0 {
        report(Event::CleanedUpAfterInterruptedRun {
            temp_files,
            trial_folders: folders,
        });
    }
    Ok(())
}

/// Seconds between the exports rewritten during a run (`SKILL_LIFT_EXPORT_INTERVAL_S`, default
/// 10), so a crash or a kill keeps reports of the trials recorded so far.
fn export_interval() -> Duration {
    std::env::var("SKILL_LIFT_EXPORT_INTERVAL_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(Duration::from_secs(10))
}

/// The exports rewritten during a run: every [`export_interval`], when trials were recorded
/// since the last time, every export (not the transcript pages) from the dispatcher's records
/// in memory, atomically. Failures are ignored here: the final export at the end of the run
/// reports them.
pub(crate) fn periodic_exports(
    run_dir: PathBuf,
    manifest: Manifest,
    settings: AnalysisSettings,
) -> crate::pipeline::execute::PeriodicExports {
    crate::pipeline::execute::PeriodicExports {
        interval: export_interval(),
        export: Arc::new(move |records| {
            let _ = crate::report::export_records(
                &run_dir,
                &manifest,
                &settings,
                &Format::ALL,
                records.iter(),
            );
        }),
    }
}

/// The eval material inside the skill folder that this run's eval set and graders read (beyond
/// the rule by name): the eval set file (or task folder) and the files its cases' graders
/// read (a case's `files` are task fixtures and still go to the workspace), and any file a
/// `--grader` command names. Never staged in any arm.
fn eval_material_of(
    skill_dir: &Path,
    manifest: &crate::record::Manifest,
) -> crate::features::asset::eval_material::EvalMaterial {
    let mut paths = vec![manifest.eval_set.path.clone()];
    for grader in &manifest.grading.custom_graders {
        paths.extend(
            grader
                .command
                .split_whitespace()
                .map(|word| std::path::PathBuf::from(word.trim_matches(['"', '\''])))
                .filter(|path| path.is_file()),
        );
    }
    crate::features::asset::eval_material::EvalMaterial::inside(skill_dir, paths)
}
