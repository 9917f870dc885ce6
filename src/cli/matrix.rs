//! `skill-lift run` over a runner × model matrix (`--runner A --runner B --model X --model Y`).
//! Every cell is a run folder of its own under `RUN_DIR/cells/`, resolved and checked before
//! anything runs, executed through the one run path ([`super::run::execute_with_flags`]), fed to the
//! baseline store and analyzed on its own; the matrix report (`crate::run_matrix`) lays the
//! cells side by side. Cells of one runner run one after another, so the runner's
//! `concurrency` (or `--jobs`) bounds it; cells of different runners run at once, except runners
//! that manage the same model server (`[server]`, one `ready_url`): those run in turn, each cell
//! starting the server when it is not answering and stopping the one it started.
//! `run --resume`, `report`, `regrade` and `merge` take a matrix folder too.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};

use super::Outcome;
use super::run::{PreparedRun, RunFinished, RunOptions};
use super::{CommandError, RunArgs};
use crate::analysis::Summary;
use crate::record::read_manifest;
use crate::run_matrix::{
    CELLS_DIR, MATRIX_FORMAT_VERSION, MatrixCell, MatrixManifest, matrix_markdown, matrix_summary,
    plan_cells, read_matrix_manifest, write_matrix_exports, write_matrix_manifest,
};

/// Whether the flags ask for more than one (runner, model) cell.
pub(super) fn is_matrix(args: &RunArgs) -> bool {
    plan_cells("", &args.agent.runners, &args.agent.models).len() > 1
}

/// The flags of one cell's run: the matrix flags with this cell's runner and model, its run id,
/// and its folder under `cells_dir` (or `resume` to resume it).
fn cell_args(
    args: &RunArgs,
    cell: &MatrixCell,
    cells_dir: &Path,
    resume: Option<PathBuf>,
) -> RunArgs {
    let mut cell_args = args.clone();
    cell_args.agent.runners = vec![cell.runner.clone()];
    cell_args.agent.models = cell.model.iter().cloned().collect();
    cell_args.run_id = Some(cell.run_id.clone());
    cell_args.results.out = cells_dir.to_path_buf();
    cell_args.resume = resume;
    cell_args
}

/// How severe an exit code is when cells end differently: the matrix exits with the most
/// severe one (interrupted, infrastructure, nothing to run, gate failed, success).
fn severity(code: Outcome) -> u8 {
    match code {
        Outcome::Success => 0,
        Outcome::GateFailed => 1,
        Outcome::NothingToRun => 2,
        Outcome::InfrastructureError => 3,
        Outcome::Interrupted => 5,
        _ => 4,
    }
}

/// The most severe of `codes` ([`severity`]); success when empty.
pub(super) fn combined_code(codes: impl IntoIterator<Item = Outcome>) -> Outcome {
    codes
        .into_iter()
        .max_by_key(|code| severity(*code))
        .unwrap_or(Outcome::Success)
}

/// A fresh matrix run: plan the cells, resolve and check each of them, create the matrix folder
/// with every cell's run folder, then run them.
pub(super) async fn run(args: RunArgs) -> Result<Outcome, CommandError> {
    if args
        .run_id
        .as_deref()
        .is_some_and(|id| !crate::pipeline::is_plain_folder_name(id))
    {
        return Err(CommandError::input(anyhow!(
            "--run-id `{}` must be a plain folder name",
            args.run_id.as_deref().unwrap_or_default()
        )));
    }
    let skill_dir = args
        .skill_dir
        .clone()
        .ok_or_else(|| CommandError::input(anyhow!("SKILL_DIR is required")))?;
    let skill = crate::asset::load_skill(&skill_dir).map_err(CommandError::input)?;
    let run_id = args
        .run_id
        .clone()
        .unwrap_or_else(|| super::run::new_run_id(&skill.name));
    let cells = plan_cells(&run_id, &args.agent.runners, &args.agent.models);
    let matrix_dir = args.results.out.join(&run_id);
    if matrix_dir.exists()
        && std::fs::read_dir(&matrix_dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(CommandError::input(anyhow!(
            "{}: run folder already exists; pick another --run-id or use --resume",
            matrix_dir.display()
        )));
    }
    let cells_dir = matrix_dir.join(CELLS_DIR);
    crate::reporter::report(crate::reporter::Event::MatrixPlanned {
        run_id: run_id.to_string(),
        cells: cells.iter().map(MatrixCell::label).collect(),
    });
    // Every cell is resolved and checked before anything is created or spent.
    let mut work = Vec::new();
    for cell in &cells {
        let args = cell_args(&args, cell, &cells_dir, None);
        crate::skill_fit::render::report_red_flags(&skill_dir, &cell.runner, cell.model.as_deref());
        match super::run::prepare_run(&args)? {
            Ok(prepared) => work.push((cell.clone(), args, prepared)),
            Err(code) => return Ok(code),
        }
    }
    std::fs::create_dir_all(&cells_dir)
        .with_context(|| format!("creating {}", cells_dir.display()))
        .map_err(CommandError::input)?;
    let manifest = MatrixManifest {
        format_version: MATRIX_FORMAT_VERSION,
        run_id: run_id.clone(),
        created_at: chrono::Utc::now(),
        asset: skill.name.clone(),
        cells: cells.clone(),
    };
    write_matrix_manifest(&matrix_dir, &manifest).map_err(CommandError::infrastructure)?;
    let mut planned = Vec::new();
    for (cell, args, prepared) in work {
        let dir = super::run::create_run_folder(&cells_dir, &prepared.resolved.manifest)?;
        planned.push(CellWork {
            cell,
            args,
            prepared,
            dir,
        });
    }
    execute_cells(&matrix_dir, &manifest, planned, false, args.quiet).await
}

/// `run --resume MATRIX_DIR`: resume every cell (each checks its own inputs as a resumed run
/// does), then run what is missing.
pub(super) async fn resume(args: RunArgs, matrix_dir: PathBuf) -> Result<Outcome, CommandError> {
    let manifest = read_matrix_manifest(&matrix_dir).map_err(CommandError::input)?;
    let cells_dir = matrix_dir.join(CELLS_DIR);
    let mut planned = Vec::new();
    for cell in &manifest.cells {
        let dir = cell.dir(&matrix_dir);
        let args = cell_args(&args, cell, &cells_dir, Some(dir.clone()));
        match super::run::prepare_run(&args)? {
            Ok(prepared) => planned.push(CellWork {
                cell: cell.clone(),
                args,
                prepared,
                dir,
            }),
            Err(code) => return Ok(code),
        }
    }
    execute_cells(&matrix_dir, &manifest, planned, true, args.quiet).await
}

/// One cell ready to run.
struct CellWork {
    cell: MatrixCell,
    args: RunArgs,
    prepared: PreparedRun,
    dir: PathBuf,
}

/// Run the cells (one runner's cells in turn, runners at once), conclude each like a single
/// run (baseline store, stop messages, exit code), write the matrix report, and return the
/// most severe exit code.
async fn execute_cells(
    matrix_dir: &Path,
    manifest: &MatrixManifest,
    work: Vec<CellWork>,
    resuming: bool,
    quiet: bool,
) -> Result<Outcome, CommandError> {
    // One group per runner, run in turn; cells whose runners manage the same model server
    // (`[server]` with one `ready_url`) share a group too: each cell starts the server when it
    // is not answering and stops the one it started, so two at once would stop each other's.
    let mut groups: Vec<(String, Vec<CellWork>)> = Vec::new();
    for item in work {
        let group = match &item.prepared.resolved.profile.profile.server {
            Some(server) => format!("server {}", server.ready_url),
            None => format!("runner {}", item.cell.runner),
        };
        match groups.iter_mut().find(|(key, _)| *key == group) {
            Some((_, items)) => items.push(item),
            None => groups.push((group, vec![item])),
        }
    }
    // Two runners at once cannot share one redrawn bar: status lines then.
    let progress = (groups.len() > 1)
        .then(|| crate::progress::ProgressDisplay::Lines {
            interval: std::time::Duration::from_secs_f64(groups[0].1[0].args.progress_interval),
            label: None,
        })
        .filter(|_| {
            let first = &groups[0].1[0].args;
            !matches!(first.progress, crate::progress::ProgressMode::Never) && !first.quiet
        });
    let runs = groups.into_iter().map(|(_, items)| async move {
        let mut results = Vec::new();
        for item in items {
            if crate::contain::is_interrupted() {
                results.push((
                    item.cell,
                    item.args,
                    item.dir,
                    Ok(Err(Outcome::Interrupted)),
                ));
                continue;
            }
            crate::reporter::report(crate::reporter::Event::Cell {
                label: item.cell.label(),
            });
            // Status lines name the cell (cells of different runners run at once).
            let progress = Some(
                progress
                    .unwrap_or_else(|| {
                        crate::progress::ProgressDisplay::choose(
                            item.args.progress,
                            item.args.quiet,
                            crate::progress::ProgressDisplay::stderr_is_interactive(),
                            std::time::Duration::from_secs_f64(item.args.progress_interval),
                        )
                    })
                    .labelled(item.cell.label()),
            );
            let options = RunOptions {
                quiet: item.args.quiet,
                manage_server: true,
                resuming,
                progress,
            };
            let outcome =
                super::run::execute_with_flags(item.prepared, &item.dir, &item.args, options).await;
            results.push((item.cell, item.args, item.dir, outcome));
        }
        results
    });
    let finished: Vec<_> = futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect();
    let mut codes = Vec::new();
    let mut first_error = None;
    for (cell, args, dir, outcome) in finished {
        match outcome {
            Ok(Ok(run)) => {
                let RunFinished { summary, .. } = &run;
                crate::reporter::report(crate::reporter::Event::CellRecorded {
                    label: cell.label(),
                    recorded: run.report.recorded,
                    lift: summary.lift.estimate,
                    dir: dir.to_path_buf(),
                });
                codes.push(super::run::conclude(&args, &dir, &run));
            }
            Ok(Err(code)) => codes.push(code),
            Err(error) => {
                crate::reporter::report(crate::reporter::Event::CellFailed {
                    label: cell.label(),
                    error: format!("{:#}", error.error),
                });
                if first_error.is_none() {
                    first_error = Some(error);
                }
            }
        }
    }
    // The matrix report covers every cell with recorded trials (a cell stopped before its
    // first trial has none yet).
    let summaries = cell_summaries(matrix_dir, manifest)?;
    let summary = matrix_summary(manifest, &summaries);
    let files = write_matrix_exports(matrix_dir, &summary).map_err(CommandError::infrastructure)?;
    let markdown = matrix_markdown(&summary);
    if !quiet {
        crate::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    crate::reporter::report_written(&files);
    crate::reporter::report(crate::reporter::Event::MatrixResults {
        dir: matrix_dir.to_path_buf(),
    });
    if let Some(error) = first_error {
        return Err(error);
    }
    Ok(combined_code(codes))
}

/// The summary of each cell of `manifest` that has one written (`summary.json` in its folder).
pub(super) fn cell_summaries(
    matrix_dir: &Path,
    manifest: &MatrixManifest,
) -> Result<Vec<(MatrixCell, Summary)>, CommandError> {
    let mut summaries = Vec::new();
    for cell in &manifest.cells {
        let path = cell.dir(matrix_dir).join("summary.json");
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))
            .map_err(CommandError::input)?;
        let summary: Summary = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a valid summary", path.display()))
            .map_err(CommandError::input)?;
        summaries.push((cell.clone(), summary));
    }
    Ok(summaries)
}

/// Write the matrix report of `manifest` into `out` from summaries already computed (`report`,
/// `regrade`, `merge`); returns the files written.
pub(super) fn write_report(
    out: &Path,
    manifest: &MatrixManifest,
    summaries: &[(MatrixCell, Summary)],
    quiet: bool,
) -> Result<Vec<PathBuf>, CommandError> {
    let summary = matrix_summary(manifest, summaries);
    let files = write_matrix_exports(out, &summary).map_err(CommandError::infrastructure)?;
    let markdown = matrix_markdown(&summary);
    if !quiet {
        crate::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    Ok(files)
}

/// The run manifest of each cell of the matrix folder `dir`, refusing a cell without one.
pub(super) fn cell_folders(
    dir: &Path,
) -> Result<(MatrixManifest, Vec<(MatrixCell, PathBuf)>), CommandError> {
    let manifest = read_matrix_manifest(dir).map_err(CommandError::input)?;
    let mut cells = Vec::new();
    for cell in &manifest.cells {
        let cell_dir = cell.dir(dir);
        read_manifest(&cell_dir).map_err(CommandError::input)?;
        cells.push((cell.clone(), cell_dir));
    }
    Ok((manifest, cells))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_severe_cell_code_wins() {
        assert_eq!(combined_code([]), Outcome::Success);
        assert_eq!(
            combined_code([Outcome::Success, Outcome::GateFailed]),
            Outcome::GateFailed
        );
        assert_eq!(
            combined_code([
                Outcome::GateFailed,
                Outcome::InfrastructureError,
                Outcome::NothingToRun
            ]),
            Outcome::InfrastructureError
        );
        assert_eq!(
            combined_code([Outcome::Interrupted, Outcome::InfrastructureError]),
            Outcome::Interrupted
        );
    }
}
