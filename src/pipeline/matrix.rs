//! A run over a runner × model matrix (`--runner A --runner B --model X --model Y`). Every cell
//! is a run folder of its own under `RUN_DIR/cells/`, resolved and checked before anything
//! runs, executed through the one run path ([`super::execute_run`]), fed to the state folder
//! and analyzed on its own; the matrix report (`crate::pipeline::run_matrix`) lays the cells side by
//! side. Cells of one runner run one after another, so the runner's `concurrency` (or `--jobs`)
//! bounds it; cells of different runners run at once, except runners that manage the same
//! model server (`[server]`, one `ready_url`): those run in turn, each cell starting the server
//! when it is not answering and stopping the one it started.
//!
//! `report`, `regrade` and `merge` of a matrix folder read its cells and rewrite its report
//! with [`cell_folders`], [`cell_summaries`] and [`write_report`].

use std::path::{Path, PathBuf};

use super::Failure;
use super::{
    Ending, PipelineError, PreparedRun, RunFinished, RunOptions, RunSettings, RunStart,
    create_run_folder, finish, new_run_id, prepare_run, report_nothing_to_run,
};
use crate::analysis::Summary;
use crate::pipeline::run_matrix::{
    CELLS_DIR, MATRIX_FORMAT_VERSION, MatrixCell, MatrixError, MatrixManifest, matrix_markdown,
    matrix_summary, plan_cells, read_matrix_manifest, write_matrix_exports, write_matrix_manifest,
};
use crate::record::{RecordError, read_manifest};
use crate::report::progress::{ProgressDisplay, ProgressMode};
use crate::values::reporter::{Event, report};

/// What a matrix run asks for besides each cell's run request.
pub(crate) struct MatrixSettings {
    /// The skill folder as given (a fresh matrix).
    pub skill_dir: Option<PathBuf>,
    /// The runners (`--runner`, in flag order).
    pub runners: Vec<String>,
    /// The models (`--model`, in flag order; empty: each runner's profile model).
    pub models: Vec<String>,
    /// The matrix's run id (default: time, asset and a random suffix).
    pub run_id: Option<String>,
    /// The folder that receives the matrix folder.
    pub out: PathBuf,
    /// Print no Markdown summary on stdout and no progress bar.
    pub quiet: bool,
}

/// Why a matrix run, or a matrix folder's report, failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MatrixRunError {
    /// `--run-id` cannot name a folder.
    #[error("--run-id `{0}` must be a plain folder name")]
    RunIdNotPlain(String),
    /// A fresh matrix without a skill folder.
    #[error("SKILL_DIR is required")]
    NoSkillDir,
    /// The skill folder cannot be read.
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    /// The matrix folder exists and is not empty.
    #[error("{}: run folder already exists; pick another --run-id or use --resume", .0.display())]
    Exists(PathBuf),
    /// The cells folder cannot be created.
    #[error("creating {}", .0.display())]
    CreateCells(PathBuf, #[source] std::io::Error),
    /// The matrix manifest or report cannot be written.
    #[error(transparent)]
    Write(RecordError),
    /// The matrix manifest cannot be read.
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    /// A cell's run manifest cannot be read.
    #[error(transparent)]
    CellManifest(RecordError),
    /// A cell's summary cannot be read.
    #[error("reading {}", .0.display())]
    ReadSummary(PathBuf, #[source] std::io::Error),
    /// A cell's summary cannot be parsed.
    #[error("{}: not a valid summary", .0.display())]
    BadSummary(PathBuf, #[source] serde_json::Error),
    /// A cell's run failed (its class decides the ending).
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
}

impl Failure for MatrixRunError {
    /// How a matrix that failed so ends: its inputs (input error), else the infrastructure.
    fn ending(&self) -> Ending {
        match self {
            MatrixRunError::Pipeline(error) => match error.class() {
                super::ErrorClass::Input => Ending::InputError,
                super::ErrorClass::Infrastructure => Ending::InfrastructureError,
            },
            MatrixRunError::Write(_) => Ending::InfrastructureError,
            _ => Ending::InputError,
        }
    }
}

/// How severe an ending is when cells end differently: the matrix ends with the most severe
/// one (interrupted, infrastructure, nothing to run, gate failed, success).
fn severity(ending: Ending) -> u8 {
    match ending {
        Ending::Success => 0,
        Ending::GateFailed => 1,
        Ending::NothingToRun => 2,
        Ending::InfrastructureError => 3,
        Ending::Interrupted => 5,
        _ => 4,
    }
}

/// The most severe of `endings` ([`severity`]); success when empty.
pub(crate) fn combined_ending(endings: impl IntoIterator<Item = Ending>) -> Ending {
    endings
        .into_iter()
        .max_by_key(|ending| severity(*ending))
        .unwrap_or(Ending::Success)
}

/// One cell ready to run.
struct CellWork {
    cell: MatrixCell,
    settings: RunSettings,
    prepared: PreparedRun,
    dir: PathBuf,
}

/// A fresh matrix run: plan the cells, resolve and check each of them (`cell_request`: the run
/// request of a cell, built when its turn comes), create the matrix folder with every cell's
/// run folder, then run them.
pub(crate) async fn run<E: From<MatrixRunError>>(
    settings: &MatrixSettings,
    cell_request: impl Fn(&MatrixCell) -> Result<RunSettings, E>,
) -> Result<Ending, E> {
    if let Some(id) = &settings.run_id
        && !super::is_plain_folder_name(id)
    {
        return Err(MatrixRunError::RunIdNotPlain(id.clone()).into());
    }
    let skill_dir = settings
        .skill_dir
        .as_deref()
        .ok_or(MatrixRunError::NoSkillDir)?;
    let skill = crate::features::asset::load_skill(skill_dir).map_err(MatrixRunError::from)?;
    let run_id = settings
        .run_id
        .clone()
        .unwrap_or_else(|| new_run_id(&skill.name));
    let cells = plan_cells(&run_id, &settings.runners, &settings.models);
    let matrix_dir = settings.out.join(&run_id);
    if matrix_dir.exists()
        && std::fs::read_dir(&matrix_dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(MatrixRunError::Exists(matrix_dir).into());
    }
    report(Event::MatrixPlanned {
        run_id: run_id.to_string(),
        cells: cells.iter().map(MatrixCell::label).collect(),
    });
    // Every cell is resolved and checked before anything is created or spent.
    let mut work = Vec::new();
    for cell in &cells {
        crate::features::skill_fit::render::report_red_flags(
            skill_dir,
            &cell.runner,
            cell.model.as_deref(),
        );
        let request = cell_request(cell)?;
        match prepare_run(&request).map_err(MatrixRunError::from)? {
            Ok(prepared) => work.push((cell.clone(), request, prepared)),
            Err(nothing) => return Ok(report_nothing_to_run(nothing)),
        }
    }
    let manifest = MatrixManifest {
        format_version: MATRIX_FORMAT_VERSION,
        run_id: run_id.clone(),
        created_at: chrono::Utc::now(),
        asset: skill.name.clone(),
        cells: cells.clone(),
    };
    let planned = create_matrix_folder(&matrix_dir, &manifest, work)?;
    Ok(execute_cells(&matrix_dir, &manifest, planned, false, settings.quiet).await?)
}

/// Create the matrix folder: its cells folder, its manifest and every cell's run folder.
fn create_matrix_folder(
    matrix_dir: &Path,
    manifest: &MatrixManifest,
    work: Vec<(MatrixCell, RunSettings, PreparedRun)>,
) -> Result<Vec<CellWork>, MatrixRunError> {
    let cells_dir = matrix_dir.join(CELLS_DIR);
    std::fs::create_dir_all(&cells_dir)
        .map_err(|error| MatrixRunError::CreateCells(cells_dir.clone(), error))?;
    write_matrix_manifest(matrix_dir, manifest).map_err(MatrixRunError::Write)?;
    let mut planned = Vec::new();
    for (cell, settings, prepared) in work {
        let dir = create_run_folder(&cells_dir, &prepared.resolved.manifest)?;
        planned.push(CellWork {
            cell,
            settings,
            prepared,
            dir,
        });
    }
    Ok(planned)
}

/// Resume the matrix folder `matrix_dir`: resume every cell (each checks its own inputs as a
/// resumed run does; `settings`: the request each cell's resume starts from), then run what is
/// missing.
pub(crate) async fn resume(
    matrix_dir: &Path,
    settings: &RunSettings,
    quiet: bool,
) -> Result<Ending, MatrixRunError> {
    let manifest = read_matrix_manifest(matrix_dir)?;
    let mut planned = Vec::new();
    for cell in &manifest.cells {
        let dir = cell.dir(matrix_dir);
        let request = RunSettings {
            start: RunStart::Resume(dir.clone()),
            ..settings.clone()
        };
        match prepare_run(&request)? {
            Ok(prepared) => planned.push(CellWork {
                cell: cell.clone(),
                settings: request,
                prepared,
                dir,
            }),
            Err(nothing) => return Ok(report_nothing_to_run(nothing)),
        }
    }
    execute_cells(matrix_dir, &manifest, planned, true, quiet).await
}

/// The cells in groups that run at once, each group's cells in turn: one group per runner;
/// cells whose runners manage the same model server (`[server]` with one `ready_url`) share a
/// group too: each cell starts the server when it is not answering and stops the one it
/// started, so two at once would stop each other's.
fn group_cells(work: Vec<CellWork>) -> Vec<Vec<CellWork>> {
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
    groups.into_iter().map(|(_, items)| items).collect()
}

/// The progress display every cell shares: with two groups at once, status lines (they cannot
/// share one redrawn bar); `None`: each cell's own.
fn shared_progress(groups: &[Vec<CellWork>], quiet: bool) -> Option<ProgressDisplay> {
    let first = &groups.first()?.first()?.settings.execution;
    (groups.len() > 1 && !matches!(first.progress, ProgressMode::Never) && !quiet).then_some(
        ProgressDisplay::Lines {
            interval: first.progress_interval,
            label: None,
        },
    )
}

/// A cell's run as it ended.
type CellRun = (
    MatrixCell,
    RunSettings,
    PathBuf,
    Result<Result<RunFinished, Ending>, PipelineError>,
);

/// Run the groups at once, each group's cells in turn.
async fn run_groups(groups: Vec<Vec<CellWork>>, resuming: bool, quiet: bool) -> Vec<CellRun> {
    let progress = shared_progress(&groups, quiet);
    let runs = groups.into_iter().map(|items| async move {
        let mut results = Vec::new();
        for item in items {
            if crate::features::contain::is_interrupted() {
                let ended = Ok(Err(Ending::Interrupted));
                results.push((item.cell, item.settings, item.dir, ended));
                continue;
            }
            report(Event::Cell {
                label: item.cell.label(),
            });
            // Status lines name the cell (cells of different runners run at once).
            let execution = &item.settings.execution;
            let display = progress.unwrap_or_else(|| execution.progress_display(quiet));
            let options = RunOptions {
                quiet,
                manage_server: true,
                resuming,
                progress: Some(display.labelled(item.cell.label())),
            };
            let analysis = &item.settings.analysis;
            let outcome =
                super::execute_run(item.prepared, &item.dir, execution, analysis, options)
                    .await
                    .map(|finished| finished.map_err(|_| Ending::Interrupted));
            results.push((item.cell, item.settings, item.dir, outcome));
        }
        results
    });
    futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Run the cells, conclude each like a single run (state folder, stop messages, ending), write
/// the matrix report, and return the most severe ending (or the first cell's error).
async fn execute_cells(
    matrix_dir: &Path,
    manifest: &MatrixManifest,
    work: Vec<CellWork>,
    resuming: bool,
    quiet: bool,
) -> Result<Ending, MatrixRunError> {
    let finished = run_groups(group_cells(work), resuming, quiet).await;
    let mut endings = Vec::new();
    let mut first_error = None;
    for (cell, settings, dir, outcome) in finished {
        match outcome {
            Ok(Ok(run)) => {
                report(Event::CellRecorded {
                    label: cell.label(),
                    recorded: run.report.recorded,
                    lift: run.summary.lift.estimate,
                    dir: dir.to_path_buf(),
                });
                endings.push(finish(&dir, &run, settings.execution.state.as_deref()));
            }
            Ok(Err(ending)) => endings.push(ending),
            Err(error) => {
                report(Event::CellFailed {
                    label: cell.label(),
                    error: super::ending::error_chain(&error),
                });
                first_error.get_or_insert(error);
            }
        }
    }
    // The matrix report covers every cell with recorded trials (a cell stopped before its
    // first trial has none yet).
    let summaries = cell_summaries(matrix_dir, manifest)?;
    let files = write_report(matrix_dir, manifest, &summaries, quiet)?;
    crate::values::reporter::report_written(&files);
    report(Event::MatrixResults {
        dir: matrix_dir.to_path_buf(),
    });
    match first_error {
        Some(error) => Err(error.into()),
        None => Ok(combined_ending(endings)),
    }
}

/// The summary of each cell of `manifest` that has one written (`summary.json` in its folder).
pub(crate) fn cell_summaries(
    matrix_dir: &Path,
    manifest: &MatrixManifest,
) -> Result<Vec<(MatrixCell, Summary)>, MatrixRunError> {
    let mut summaries = Vec::new();
    for cell in &manifest.cells {
        let path = cell.dir(matrix_dir).join("summary.json");
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|error| MatrixRunError::ReadSummary(path.clone(), error))?;
        let summary: Summary = serde_json::from_str(&text)
            .map_err(|error| MatrixRunError::BadSummary(path.clone(), error))?;
        summaries.push((cell.clone(), summary));
    }
    Ok(summaries)
}

/// Write the matrix report of `manifest` into `out` from the cells' summaries, print it
/// (unless `quiet`) and add it to the CI step summary; returns the files written.
pub(crate) fn write_report(
    out: &Path,
    manifest: &MatrixManifest,
    summaries: &[(MatrixCell, Summary)],
    quiet: bool,
) -> Result<Vec<PathBuf>, MatrixRunError> {
    let summary = matrix_summary(manifest, summaries);
    let files = write_matrix_exports(out, &summary).map_err(MatrixRunError::Write)?;
    let markdown = matrix_markdown(&summary);
    if !quiet {
        crate::values::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    Ok(files)
}

/// Rewrite the matrix report of `manifest` into `out` from its cells' summaries there, report
/// the files written; the most severe of the cells' `endings`.
pub(crate) fn conclude_report(
    out: &Path,
    manifest: &MatrixManifest,
    quiet: bool,
    endings: Vec<Ending>,
) -> Result<Ending, MatrixRunError> {
    let summaries = cell_summaries(out, manifest)?;
    let files = write_report(out, manifest, &summaries, quiet)?;
    crate::values::reporter::report_written(&files);
    Ok(combined_ending(endings))
}

/// The matrix manifest of the matrix folder `dir` and each cell's run folder, refusing a cell
/// without a run manifest.
pub(crate) fn cell_folders(
    dir: &Path,
) -> Result<(MatrixManifest, Vec<(MatrixCell, PathBuf)>), MatrixRunError> {
    let manifest = read_matrix_manifest(dir)?;
    let mut cells = Vec::new();
    for cell in &manifest.cells {
        let cell_dir = cell.dir(dir);
        read_manifest(&cell_dir).map_err(MatrixRunError::CellManifest)?;
        cells.push((cell.clone(), cell_dir));
    }
    Ok((manifest, cells))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_severe_cell_ending_wins() {
        assert_eq!(combined_ending([]), Ending::Success);
        assert_eq!(
            combined_ending([Ending::Success, Ending::GateFailed]),
            Ending::GateFailed
        );
        assert_eq!(
            combined_ending([
                Ending::GateFailed,
                Ending::InfrastructureError,
                Ending::NothingToRun
            ]),
            Ending::InfrastructureError
        );
        assert_eq!(
            combined_ending([Ending::Interrupted, Ending::InfrastructureError]),
            Ending::Interrupted
        );
    }
}
