//! `skill-lift regrade RUN_DIR`: grade the recorded trajectories again — with the run's own
//! graders, or with new ones (`--judge`, `--grader`, weights, threshold) — without calling any
//! agent, and write a new run folder with its own analysis beside the old one
//! (`RUN_DIR/regrades/<id>/`, or `--out`). The grading runs on the run pipeline
//! (`crate::pipeline::regrade`), through the same dispatcher as `run`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::grading::GradingArgs;
use super::{AnalysisArgs, CommandError, Outcome};
use crate::pipeline::regrade::RegradeRequest;
use crate::report::progress::{DEFAULT_LINE_INTERVAL_S, ProgressDisplay, ProgressMode};

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

/// Run the command: each run folder's request from the flags, the regrade in the library.
pub(super) async fn regrade(args: RegradeArgs) -> Result<Outcome, CommandError> {
    let request = |run_dir: &Path, out: Option<PathBuf>, quiet: bool| {
        let grading = match args.grading.any_given() {
            true => crate::pipeline::grading::resolve_grading(&args.grading.request())
                .map(|r| Some((r.settings, r.judge_profiles))),
            false => Ok(None),
        };
        Ok::<_, CommandError>(RegradeRequest {
            run_dir: run_dir.to_path_buf(),
            evals: args.evals.clone(),
            out,
            jobs: args.jobs as usize,
            grading: grading?,
            judge_format_retries: args.grading.judge_format_retries,
            judge_cache: !args.grading.no_judge_cache,
            state: args.state.state.clone(),
            analysis: args.analysis.overrides(),
            progress: ProgressDisplay::choose(
                ProgressMode::Auto,
                quiet,
                ProgressDisplay::stderr_is_interactive(),
                Duration::from_secs_f64(DEFAULT_LINE_INTERVAL_S),
            ),
        })
    };
    crate::pipeline::regrade::regrade(&args.run_dir, args.out.clone(), args.quiet, request).await
}
