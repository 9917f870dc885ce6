//! `skill-lift run` for one runner and one model, start to end ([`run_single`]): the red flags
//! of the environment, [`super::prepare_run`], the run folder (a fresh run's, created in the
//! results folder), [`super::execute_run`], the Markdown summary and the written files, and
//! [`super::finish`]. A matrix runs each cell through the same stages.

use std::path::Path;

use super::settings::{RunSettings, RunStart};
use super::{Ending, PipelineError, RunFinished, RunOptions};
use crate::values::reporter::{self, Event};

/// Run `settings` as one run whose fresh run folder goes into `out` (`quiet`: no progress bar
/// and no Markdown summary on stdout), and say how the command ends. A fresh run's folder that
/// recorded no trial before a failure is removed: there is nothing to resume or report.
pub(crate) async fn run_single(
    settings: &RunSettings,
    out: &Path,
    quiet: bool,
) -> Result<Ending, PipelineError> {
    if let RunStart::Fresh(fresh) = &settings.start {
        // Red flags of `skill-lift env` come first: a missing tool explains failures to come.
        crate::features::skill_fit::render::report_red_flags(
            &fresh.target,
            &fresh.runner,
            fresh.model.as_deref(),
        );
    }
    let prepared = match super::prepare_run(settings)? {
        Ok(prepared) => prepared,
        Err(nothing) => return Ok(super::report_nothing_to_run(nothing)),
    };
    let run_dir = match &settings.start {
        RunStart::Resume(dir) => dir.clone(),
        RunStart::Fresh(_) => super::create_run_folder(out, &prepared.resolved.manifest)?,
    };
    let resuming = settings.start.is_resume();
    let options = RunOptions {
        quiet,
        manage_server: true,
        resuming,
        progress: None,
    };
    let executed = super::execute_run(
        prepared,
        &run_dir,
        &settings.execution,
        &settings.analysis,
        options,
    )
    .await;
    let finished = match executed {
        Ok(Ok(finished)) => finished,
        Ok(Err(_)) => return Ok(Ending::Interrupted),
        Err(error) => {
            if !resuming {
                remove_unstarted_run_folder(&run_dir);
            }
            return Err(error);
        }
    };
    publish(&run_dir, &finished, quiet);
    Ok(super::finish(
        &run_dir,
        &finished,
        settings.execution.state.as_deref(),
    ))
}

/// What the user reads when a run's exports are written: the Markdown summary on stdout (not
/// with `quiet`) and in the CI step summary, the written files and the run folder.
fn publish(run_dir: &Path, finished: &RunFinished, quiet: bool) {
    let markdown = crate::report::publish::report_markdown(&finished.written, &finished.summary);
    if !quiet {
        reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    reporter::report_written(&finished.written);
    reporter::report(Event::RunRecorded {
        recorded: finished.report.recorded,
        wall_s: finished.report.wall_s,
        run_dir: run_dir.to_path_buf(),
    });
}

/// Remove the run folder a fresh run created when it failed before recording any trial (a
/// failed pre-flight check, a model server that did not start).
fn remove_unstarted_run_folder(run_dir: &Path) {
    let recorded = std::fs::metadata(run_dir.join("trials.jsonl")).is_ok_and(|m| m.len() > 0);
    if !recorded {
        let _ = std::fs::remove_dir_all(run_dir);
    }
}
