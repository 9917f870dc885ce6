//! `skill-lift run`: the command-line side of the run pipeline (`crate::pipeline`). The raw
//! flags become a validated [`RunSettings`] in one step ([`run_settings`]); the pipeline then
//! prepares (fresh or resumed inputs, leak guard, checks before spending), creates the run
//! folder with its manifest, executes and concludes. This file maps each outcome to its
//! documented exit code and prints what the user reads at the end.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::anyhow;

use super::Outcome;
use super::{CommandError, RunArgs};
use crate::analysis::Summary;
use crate::asset::fingerprint::Calibre;
use crate::decoys::DecoySource;
use crate::pipeline::{
    ExecutionSettings, FreshRun, NothingToRun, PreviousSource, ReuseFrom, RunConclusion,
    RunSettings, RunStart, SummaryOutcome,
};
use crate::reporter::Event;

pub(super) use crate::pipeline::{
    PreparedRun, RunFinished, RunOptions, absolute, create_run_folder,
};

/// The inputs of a fresh run from its flags: the skill folder, the calibre, the grading flags
/// resolved (judge profiles loaded), decoys, previous version and reuse source typed.
pub(super) fn fresh_request(args: &RunArgs) -> Result<FreshRun, CommandError> {
    let target = args
        .skill_dir
        .clone()
        .ok_or_else(|| CommandError::input(anyhow!("SKILL_DIR is required")))?;
    let (skill_dir, evals) = crate::pipeline::locate_inputs(&target, args.evals.as_deref())
        .map_err(CommandError::input)?;
    let calibre: Calibre = args
        .calibre
        .parse()
        .map_err(|e: String| CommandError::input(anyhow!(e)))?;
    let grading = super::grading::resolve_grading(&args.grading)?;
    let decoys = if args.no_decoys {
        DecoySource::None
    } else if let Some(dir) = &args.decoys {
        DecoySource::Folder(absolute(dir))
    } else {
        DecoySource::Builtin
    };
    let previous = match (&args.previous, &args.previous_ref) {
        (Some(dir), _) => Some(PreviousSource::Folder(dir.clone())),
        (None, Some(git_ref)) => Some(PreviousSource::GitRef(git_ref.clone())),
        (None, None) => None,
    };
    Ok(FreshRun {
        skill_dir,
        evals,
        runner: args.runner().to_string(),
        model: args.model().map(str::to_string),
        k: args.k,
        run_id: args.run_id.clone(),
        seed: args.seed,
        allow_draft: args.allow_draft,
        decoys,
        calibre,
        grading: grading.settings,
        judge_profiles: grading.judge_profiles,
        grader_timeout_s: args.grading.grader_timeout,
        previous,
        exposure: args.exposure.clone(),
        reference: args.reference,
        reuse_baseline: args.reuse_baseline.as_ref().map(|path| match path {
            Some(path) => ReuseFrom::Path(path.clone()),
            None => ReuseFrom::Store,
        }),
        shard: args.shard,
    })
}

/// How the trials execute, from the flags (the same for a fresh and a resumed run).
pub(super) fn execution_settings(args: &RunArgs) -> ExecutionSettings {
    ExecutionSettings {
        jobs: args.jobs.map(|j| j as usize),
        keep_workspaces: args.keep_workspaces,
        workspace_root: args.workspace_root.clone(),
        progress: args.progress,
        progress_interval: Duration::from_secs_f64(args.progress_interval),
        breaker: args.breaker,
        preflight: !args.no_preflight,
        retry_unscoreable: args.retry_unscoreable,
        state: args.state.state.clone(),
        judge_format_retries: args.grading.judge_format_retries,
        judge_cache: !args.grading.no_judge_cache,
    }
}

/// The run request in one step: raw flags → validated, typed settings.
pub(super) fn run_settings(args: &RunArgs) -> Result<RunSettings, CommandError> {
    let start = match &args.resume {
        Some(run_dir) => RunStart::Resume(run_dir.clone()),
        None => RunStart::Fresh(Box::new(fresh_request(args)?)),
    };
    Ok(RunSettings {
        start,
        execution: execution_settings(args),
        analysis: args.analysis.overrides(),
        stopping: args.stopping.request(),
    })
}

/// Report why there is nothing to run; returns its exit code (4).
pub(super) fn nothing_to_run(nothing: NothingToRun) -> Outcome {
    crate::reporter::report(Event::NothingToRun {
        why: nothing.to_string(),
    });
    Outcome::NothingToRun
}

/// The run request prepared: settings from the flags, inputs resolved (fresh, or the manifest
/// of `--resume`) and checked before anything is spent, calibration looked up, credential read,
/// graders built. `Ok(Err(code))`: nothing to run, with the exit code.
pub(super) fn prepare_run(args: &RunArgs) -> Result<Result<PreparedRun, Outcome>, CommandError> {
    let settings = run_settings(args)?;
    Ok(crate::pipeline::prepare_run(&settings)?.map_err(nothing_to_run))
}

/// `crate::pipeline::execute_run` with the execution and analysis settings of `args` (the flags):
/// run the missing trials of the run folder `run_dir`, analyze it and write every export.
/// `Ok(Err(code))`: stopped before any trial ran (an interrupt while a server started).
pub(super) async fn execute_with_flags(
    prepared: PreparedRun,
    run_dir: &Path,
    args: &RunArgs,
    options: RunOptions,
) -> Result<Result<RunFinished, Outcome>, CommandError> {
    let finished = crate::pipeline::execute_run(
        prepared,
        run_dir,
        &execution_settings(args),
        &args.analysis.overrides(),
        options,
    )
    .await?;
    Ok(finished.map_err(|_| Outcome::Interrupted))
}

/// Run the command; returns the exit code. Several runners or models make a matrix run
/// (`super::matrix`); one of each is the single run below.
pub async fn run(args: RunArgs) -> Result<Outcome, CommandError> {
    if args.resume.is_some() && args.grading.any_given() {
        return Err(CommandError::input(anyhow!(
            "grading flags are not accepted with --resume: a run grades as it started (its judges and graders are in its manifest); grade recorded trials differently with `skill-lift regrade RUN_DIR`"
        )));
    }
    if let Some(dir) = &args.resume
        && crate::record::is_matrix_folder(dir)
    {
        let dir = dir.clone();
        return super::matrix::resume(args, dir).await;
    }
    if args.resume.is_none() && super::matrix::is_matrix(&args) {
        return super::matrix::run(args).await;
    }
    if args.resume.is_none()
        && let Some(skill_dir) = &args.skill_dir
    {
        // Red flags of `skill-lift env` come first: a missing tool explains failures to come.
        crate::skill_fit::render::report_red_flags(skill_dir, args.runner(), args.model());
    }
    let prepared = match prepare_run(&args)? {
        Ok(prepared) => prepared,
        Err(code) => return Ok(code),
    };
    let run_dir: PathBuf = match &args.resume {
        Some(dir) => dir.clone(),
        None => create_run_folder(&args.results.out, &prepared.resolved.manifest)?,
    };
    let options = RunOptions {
        quiet: args.quiet,
        manage_server: true,
        resuming: args.resume.is_some(),
        progress: None,
    };
    let finished = match execute_with_flags(prepared, &run_dir, &args, options).await {
        Ok(Ok(finished)) => finished,
        Ok(Err(code)) => return Ok(code),
        Err(error) => {
            if args.resume.is_none() {
                remove_unstarted_run_folder(&run_dir);
            }
            return Err(error);
        }
    };
    let markdown = crate::report::publish::report_markdown(&finished.written, &finished.summary);
    if !args.quiet {
        crate::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    crate::reporter::report_written(&finished.written);
    crate::reporter::report(Event::RunRecorded {
        recorded: finished.report.recorded,
        wall_s: finished.report.wall_s,
        run_dir: run_dir.clone(),
    });
    Ok(conclude(&args, &run_dir, &finished))
}

/// Remove the run folder this command created when the run failed before recording any trial
/// (a failed pre-flight check, a model server that did not start): nothing was run, so there is
/// nothing to resume or report.
fn remove_unstarted_run_folder(run_dir: &Path) {
    let recorded = std::fs::metadata(run_dir.join("trials.jsonl")).is_ok_and(|m| m.len() > 0);
    if !recorded {
        let _ = std::fs::remove_dir_all(run_dir);
    }
}

/// After a run's trials ran and its exports are written: feed the state folder
/// (`crate::pipeline::conclude`), explain a stop (breaker, interrupt, missing trials), and map
/// the outcome to the exit code.
pub(super) fn conclude(args: &RunArgs, run_dir: &Path, finished: &RunFinished) -> Outcome {
    let event = match crate::pipeline::conclude(run_dir, finished, args.state.flag()) {
        RunConclusion::Breaker { reason, missing } => Event::BreakerStopped {
            reason,
            missing,
            run_dir: run_dir.to_path_buf(),
        },
        RunConclusion::Interrupted => Event::StoppedByInterrupt {
            command: "run".to_string(),
            dir: run_dir.to_path_buf(),
        },
        RunConclusion::Missing(missing) => Event::TrialsMissing {
            missing,
            run_dir: run_dir.to_path_buf(),
        },
        RunConclusion::ShardDone => return Outcome::Success,
        RunConclusion::Analyzed(_) => {
            crate::pipeline::explain(&finished.summary);
            return exit_code_for(&finished.summary);
        }
    };
    let code = match &event {
        Event::StoppedByInterrupt { .. } => Outcome::Interrupted,
        _ => Outcome::InfrastructureError,
    };
    crate::reporter::report(event);
    code
}

/// The exit code a finished run's summary maps to: nothing gradable (4), more unscoreable
/// trials than `--max-unscoreable` allows or no case scored in both arms (3), a failed gate
/// (1), else 0.
pub fn exit_code_for(summary: &Summary) -> Outcome {
    match SummaryOutcome::of(summary) {
        SummaryOutcome::NothingGradable => Outcome::NothingToRun,
        SummaryOutcome::Unscoreable => Outcome::InfrastructureError,
        SummaryOutcome::GateFailed => Outcome::GateFailed,
        SummaryOutcome::Passed => Outcome::Success,
    }
}
