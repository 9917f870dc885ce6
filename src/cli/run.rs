//! `skill-lift run`: the raw flags become a validated [`RunSettings`] in one step
//! ([`run_settings`]); a matrix goes to `super::matrix`, one runner and model to
//! [`crate::pipeline::run_single`].

use std::time::Duration;

use anyhow::anyhow;

use super::Outcome;
use super::{CommandError, RunArgs};
use crate::features::decoys::DecoySource;
use crate::pipeline::{
    ExecutionSettings, FreshRun, PipelineError, PreviousSource, ReuseFrom, RunSettings, RunStart,
};

/// The inputs of a fresh run from its flags (the pipeline locates the skill and resolves the
/// grading).
pub(super) fn fresh_request(args: &RunArgs) -> Result<FreshRun, CommandError> {
    let target = args
        .skill_dir
        .clone()
        .ok_or_else(|| CommandError::input(anyhow!("SKILL_DIR is required")))?;
    let decoys = match (&args.decoys, args.no_decoys) {
        (_, true) => DecoySource::None,
        (Some(dir), false) => DecoySource::Folder(crate::pipeline::absolute(dir)),
        (None, false) => DecoySource::Builtin,
    };
    let previous = match (&args.previous, &args.previous_ref) {
        (Some(dir), _) => Some(PreviousSource::Folder(dir.clone())),
        (None, Some(git_ref)) => Some(PreviousSource::GitRef(git_ref.clone())),
        (None, None) => None,
    };
    if previous.is_none() && args.analysis.enforce_version_policy {
        return Err(CommandError::input(anyhow!(
            "--enforce-version-policy needs a previous version to compare with: --previous DIR or --previous-ref GIT_REF"
        )));
    }
    Ok(FreshRun {
        target,
        evals: args.evals.clone(),
        runner: args.agent.runner().to_string(),
        model: args.agent.model().map(str::to_string),
        k: args.k,
        run_id: args.run_id.clone(),
        seed: args.seed,
        allow_draft: args.allow_draft,
        decoys,
        calibre: args.calibre.parse().map_err(PipelineError::Calibre)?,
        grading: args.grading.request(),
        previous,
        equivalence: args.stopping.equivalence,
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

/// Run the command; returns the exit code. Several runners or models (or a matrix folder to
/// resume) make a matrix run (`super::matrix`); one of each is a single run.
pub(super) async fn run(args: RunArgs) -> Result<Outcome, CommandError> {
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
    if args.monitor && super::matrix::is_matrix(&args) {
        return Err(CommandError::input(anyhow!(
            "--monitor registers one suite (one runner and model); run the matrix without it, or register each cell with its own `run --monitor`"
        )));
    }
    if args.resume.is_none() && super::matrix::is_matrix(&args) {
        return super::matrix::run(args).await;
    }
    let registration = match args.monitor {
        true => {
            let registration = monitor_registration(&args)?;
            crate::pipeline::monitor::check_registration(&registration)?;
            Some(registration)
        }
        false => None,
    };
    let settings = run_settings(&args)?;
    let ending = crate::pipeline::run_single(&settings, &args.results.out, args.quiet).await?;
    if let Some(registration) = registration
        && matches!(
            ending,
            Outcome::Success | Outcome::GateFailed | Outcome::CompletedWithWarnings
        )
    {
        crate::pipeline::monitor::register_run(&registration)?;
    }
    Ok(ending)
}

/// What `--monitor` registers after the run: the skill, its eval set and the run's settings.
fn monitor_registration(
    args: &RunArgs,
) -> Result<crate::pipeline::monitor::RunRegistration, CommandError> {
    let skill_dir = args
        .skill_dir
        .clone()
        .ok_or_else(|| CommandError::input(anyhow!("SKILL_DIR is required")))?;
    Ok(crate::pipeline::monitor::RunRegistration {
        skill_dir,
        evals: args.evals.clone(),
        runner: args.agent.runner().to_string(),
        model: args.agent.model().map(str::to_string),
        k: args.k,
        seed: args.seed,
        calibre: args.calibre.clone(),
        decoys: args.decoys.clone(),
        no_decoys: args.no_decoys,
        allow_draft: args.allow_draft,
        host: args.host.clone(),
        state: args.state.dir()?,
    })
}
