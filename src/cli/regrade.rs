//! `skill-lift regrade RUN_DIR`: grade the recorded trajectories again — with the run's own
//! graders, or with new ones (`--judge`, `--grader`, weights, threshold) — without calling any
//! agent, and write a new run folder with its own analysis beside the old one
//! (`RUN_DIR/regrades/<id>/`, or `--out`). The flags and exit codes are here; the grading runs
//! on the run pipeline (`crate::pipeline::regrade`), through the same dispatcher as `run`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, anyhow};
use chrono::Utc;
use clap::Args;

use super::Outcome;
use super::grading::{GradingArgs, resolve_grading};
use super::{AnalysisArgs, CommandError};
use crate::pipeline::{RegradeRequest, execute_regrade, prepare_regrade};
use crate::progress::{DEFAULT_LINE_INTERVAL_S, ProgressDisplay, ProgressMode};

/// Flags of `skill-lift regrade`.
#[derive(Debug, Args, Clone)]
#[command(mut_arg("state", |arg| arg.help("State folder (judge cache; default: $SKILL_LIFT_HOME, else ~/.skill-lift)")))]
pub struct RegradeArgs {
    /// The run folder whose trajectories are graded again (or a matrix folder: every cell).
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
    /// The eval set, when it is no longer at the path the manifest records (a run folder moved
    /// from another machine); its digest must match the recorded one.
    #[arg(long, value_name = "FILE")]
    pub evals: Option<PathBuf>,
    /// Where the new run folder goes (default: RUN_DIR/regrades/<id>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Trials graded at once.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: u32,
    #[command(flatten)]
    pub grading: GradingArgs,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Print nothing but errors (the summary is still written).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub state: super::flag_groups::StateArgs,
}

/// Run the command; returns the exit code.
pub async fn regrade(args: RegradeArgs) -> Result<Outcome, CommandError> {
    if crate::record::is_matrix_folder(&args.run_dir) {
        return regrade_matrix(args).await;
    }
    regrade_run(args).await
}

/// `regrade MATRIX_DIR`: every cell regraded into `OUT/cells/<id>` (default OUT:
/// `MATRIX_DIR/regrades/<id>`), with the matrix report of the regraded cells in OUT.
async fn regrade_matrix(args: RegradeArgs) -> Result<Outcome, CommandError> {
    let dir = args.run_dir.clone();
    let (manifest, cells) = super::matrix::cell_folders(&dir)?;
    let run_id = crate::pipeline::regrade_id(&manifest.run_id);
    let out = match &args.out {
        Some(out) => out.clone(),
        None => dir.join("regrades").join(&run_id),
    };
    if crate::record::is_matrix_folder(&out) || out.join("manifest.json").exists() {
        return Err(CommandError::input(anyhow!(
            "{}: already holds a run; pick another --out",
            out.display()
        )));
    }
    std::fs::create_dir_all(out.join(crate::run_matrix::CELLS_DIR))
        .with_context(|| format!("creating {}", out.display()))
        .map_err(CommandError::infrastructure)?;
    let regraded = crate::run_matrix::MatrixManifest {
        run_id,
        created_at: Utc::now(),
        ..manifest
    };
    crate::run_matrix::write_matrix_manifest(&out, &regraded)
        .map_err(CommandError::infrastructure)?;
    let mut codes = Vec::new();
    for (cell, cell_dir) in cells {
        crate::reporter::report(crate::reporter::Event::Cell {
            label: cell.label(),
        });
        let cell_args = RegradeArgs {
            run_dir: cell_dir,
            out: Some(out.join(cell.relative_dir())),
            quiet: true,
            ..args.clone()
        };
        codes.push(regrade_run(cell_args).await?);
    }
    let summaries = super::matrix::cell_summaries(&out, &regraded)?;
    let files = super::matrix::write_report(&out, &regraded, &summaries, args.quiet)?;
    crate::reporter::report_written(&files);
    Ok(super::matrix::combined_code(codes))
}

/// Regrade one run folder into a new one: the flags mapped to a
/// [`crate::pipeline::RegradeRequest`], the pipeline run, its outcome mapped to the exit code.
async fn regrade_run(args: RegradeArgs) -> Result<Outcome, CommandError> {
    let grading = if args.grading.any_given() {
        let resolved = resolve_grading(&args.grading)?;
        Some((resolved.settings, resolved.judge_profiles))
    } else {
        None
    };
    let request = RegradeRequest {
        run_dir: args.run_dir.clone(),
        evals: args.evals.clone(),
        out: args.out.clone(),
        jobs: args.jobs as usize,
        grading,
        judge_format_retries: args.grading.judge_format_retries,
        judge_cache: !args.grading.no_judge_cache,
        state: args.state.state.clone(),
        analysis: args.analysis.overrides(),
        progress: ProgressDisplay::choose(
            ProgressMode::Auto,
            args.quiet,
            ProgressDisplay::stderr_is_interactive(),
            Duration::from_secs_f64(DEFAULT_LINE_INTERVAL_S),
        ),
    };
    let prepared = prepare_regrade(request)?;
    let finished = execute_regrade(prepared, crate::contain::interrupted()).await?;
    let markdown = crate::report::publish::report_markdown(&finished.written, &finished.summary);
    if !args.quiet {
        crate::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    crate::reporter::report_written(&finished.written);
    if finished.report.interrupted {
        crate::reporter::report(crate::reporter::Event::RegradeInterrupted {
            kept: finished.report.recorded,
            planned: finished.planned,
            out_dir: finished.out_dir.clone(),
        });
        return Ok(Outcome::Interrupted);
    }
    crate::reporter::report(crate::reporter::Event::Regraded {
        regraded: finished.regraded,
        changed: finished.changed,
        out_dir: finished.out_dir.clone(),
    });
    let code = super::run::exit_code_for(&finished.summary);
    crate::pipeline::explain(&finished.summary);
    Ok(code)
}
