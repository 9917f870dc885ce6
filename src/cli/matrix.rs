//! `skill-lift run` over a runner × model matrix (`--runner A --runner B --model X --model Y`)
//! and `run --resume MATRIX_DIR`: each cell's run request from the flags, the matrix run in
//! `crate::pipeline::matrix`.

use std::path::PathBuf;

use super::run::run_settings;
use super::{CommandError, Outcome, RunArgs};
use crate::pipeline::matrix::MatrixSettings;

/// Whether the flags ask for more than one (runner, model) cell.
pub(super) fn is_matrix(args: &RunArgs) -> bool {
    crate::pipeline::run_matrix::is_matrix(&args.agent.runners, &args.agent.models)
}

/// A fresh matrix run; each cell's request is the flags with its runner, model and run id.
pub(super) async fn run(args: RunArgs) -> Result<Outcome, CommandError> {
    let settings = MatrixSettings {
        skill_dir: args.skill_dir.clone(),
        runners: args.agent.runners.clone(),
        models: args.agent.models.clone(),
        run_id: args.run_id.clone(),
        out: args.results.out.clone(),
        quiet: args.quiet,
    };
    crate::pipeline::matrix::run(&settings, |cell| {
        let mut cell_args = args.clone();
        cell_args.agent.runners = vec![cell.runner.clone()];
        cell_args.agent.models = cell.model.iter().cloned().collect();
        cell_args.run_id = Some(cell.run_id.clone());
        run_settings(&cell_args)
    })
    .await
}

/// `run --resume MATRIX_DIR`: every cell resumed, then what is missing run.
pub(super) async fn resume(args: RunArgs, matrix_dir: PathBuf) -> Result<Outcome, CommandError> {
    let settings = run_settings(&args)?;
    Ok(crate::pipeline::matrix::resume(&matrix_dir, &settings, args.quiet).await?)
}
