//! `skill-lift report`: re-analyze recorded runs and re-render any subset of their exports,
//! without calling any model. Several runs of one asset are also combined into the pass-rate
//! matrix (`matrix.json`, `matrix.html`) in `--out`.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};

use super::Outcome;
use super::{CommandError, ReportArgs};
use crate::analysis::Summary;
use crate::disk::write_atomic;
use crate::record::{Manifest, read_manifest};
use crate::report::matrix::{matrix_html, matrix_json, pass_rate_matrix};
use crate::report::{Format, export_run};

/// Parse `--format` values (`all`, or names from [`Format::name`]/file names), deduplicated, in
/// [`Format::ALL`] order.
pub fn parse_formats(values: &[String]) -> Result<Vec<Format>, CommandError> {
    if values.is_empty() || values.iter().any(|v| v == "all") {
        return Ok(Format::ALL.to_vec());
    }
    let mut formats = Vec::new();
    for value in values {
        let format: Format = value
            .parse()
            .map_err(|e: String| CommandError::input(anyhow!(e)))?;
        formats.push(format);
    }
    formats.sort();
    formats.dedup();
    Ok(formats)
}

struct LoadedRun {
    dir: PathBuf,
    manifest: Manifest,
}

fn load(run_dir: &Path) -> Result<LoadedRun, CommandError> {
    if !run_dir.join("manifest.json").is_file() {
        return Err(crate::pipeline::PipelineError::NotARunFolder {
            dir: run_dir.to_path_buf(),
            half_created: crate::pipeline::resolve::is_half_created_run_folder(run_dir),
        }
        .into());
    }
    let manifest = read_manifest(run_dir).map_err(CommandError::input)?;
    // Records were redacted when written; loading the run's profiles (when they still exist)
    // registers their credential values, so exports of older runs are redacted too.
    let _ = crate::runner::profile::load_profile(&manifest.runner.profile_path);
    for judge in &manifest.grading.judges {
        let _ = crate::runner::profile::load_profile(&judge.profile_path);
    }
    Ok(LoadedRun {
        dir: run_dir.to_path_buf(),
        manifest,
    })
}

/// Re-analyze one run and write `formats` into `out_dir`: its summary, exit code and Markdown.
fn export_one(
    run: &LoadedRun,
    out_dir: &Path,
    args: &ReportArgs,
    formats: &[Format],
) -> Result<(Summary, Outcome, String), CommandError> {
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("creating {}", out_dir.display()))
        .map_err(CommandError::input)?;
    args.analysis.check_method(&run.manifest)?;
    // The run's own gates (its manifest) unless a flag is given again.
    let settings = args.analysis.settings_over(
        args.seed.unwrap_or(run.manifest.seed),
        run.manifest.gates.as_ref(),
    );
    let (summary, written) = export_run(&run.dir, out_dir, &run.manifest, &settings, formats, true)
        .with_context(|| format!("exporting {} into {}", run.dir.display(), out_dir.display()))
        .map_err(
            |error| match error.downcast_ref::<crate::record::RecordError>() {
                Some(
                    crate::record::RecordError::BadRecord { .. }
                    | crate::record::RecordError::UnsafePath { .. },
                ) => CommandError::input(error),
                _ => CommandError::infrastructure(error),
            },
        )?;
    if summary.trials.recorded == 0 {
        return Err(CommandError::input(anyhow!(
            "{}: no trial is recorded in trials.jsonl; nothing to report (continue the run with `skill-lift run --resume {}`)",
            run.dir.display(),
            crate::shell::shell_path(&run.dir)
        )));
    }
    // Trials a round-scheduled run did not run by its own rules (a sequential decision, a
    // budget) are accounted for in `stopping`, not missing.
    let missing = if summary
        .stopping
        .as_ref()
        .is_some_and(|s| s.stopped_as_planned())
    {
        0
    } else {
        run.manifest
            .trials_planned
            .saturating_sub(summary.trials.recorded)
    };
    let text = crate::report::publish::report_markdown(&written, &summary);
    crate::reporter::report_written(&written);
    let mut code = super::run::exit_code_for(&summary);
    crate::pipeline::explain(&summary);
    // A whole run with planned trials missing is not a success (a shard holds only its own).
    if code == Outcome::Success && run.manifest.shard.is_none() && missing > 0 {
        crate::reporter::report(crate::reporter::Event::PlannedTrialsMissing {
            missing,
            planned: run.manifest.trials_planned,
            run_dir: run.dir.clone(),
        });
        code = Outcome::InfrastructureError;
    }
    Ok((summary, code, text))
}

/// `report MATRIX_DIR`: re-analyze every cell (into its own folder, or `--out/cells/<id>`),
/// then rewrite the matrix report (in the matrix folder, or `--out`).
fn report_matrix(
    args: &ReportArgs,
    dir: &Path,
    formats: &[Format],
) -> Result<Outcome, CommandError> {
    let (manifest, cells) = super::matrix::cell_folders(dir)?;
    let mut codes = Vec::new();
    let mut summaries = Vec::new();
    for (cell, cell_dir) in cells {
        let run = load(&cell_dir)?;
        let out_dir = match &args.out {
            Some(out) => out.join(cell.relative_dir()),
            None => cell_dir.clone(),
        };
        let (summary, code, _) = export_one(&run, &out_dir, args, formats)?;
        codes.push(code);
        summaries.push((cell, summary));
    }
    let out = args.out.clone().unwrap_or_else(|| dir.to_path_buf());
    let files = super::matrix::write_report(&out, &manifest, &summaries, args.quiet)?;
    crate::reporter::report_written(&files);
    Ok(super::matrix::combined_code(codes))
}

/// Run the command; returns the exit code.
pub fn report(args: ReportArgs) -> Result<Outcome, CommandError> {
    let formats = parse_formats(&args.format)?;
    if let [dir] = args.run_dirs.as_slice()
        && crate::record::is_matrix_folder(dir)
    {
        return report_matrix(&args, dir, &formats);
    }
    let several = args.run_dirs.len() > 1;
    if several && args.out.is_none() {
        return Err(CommandError::input(anyhow!(
            "several runs are combined into a pass-rate matrix: give --out DIR for it"
        )));
    }
    let mut runs = Vec::new();
    for dir in &args.run_dirs {
        runs.push(load(dir)?);
    }
    if let Some(first) = runs.first()
        && let Some(other) = runs
            .iter()
            .find(|r| r.manifest.asset.name != first.manifest.asset.name)
    {
        return Err(CommandError::input(anyhow!(
            "{} is a run of `{}` but {} is a run of `{}`: a matrix combines runs of one asset",
            first.dir.display(),
            first.manifest.asset.name,
            other.dir.display(),
            other.manifest.asset.name
        )));
    }
    let mut summaries = Vec::new();
    let mut code = Outcome::Success;
    let mut markdown = String::new();
    for run in &runs {
        let out_dir = match &args.out {
            Some(out) if several => out.join(&run.manifest.run_id),
            Some(out) => out.clone(),
            None => run.dir.clone(),
        };
        let (summary, run_code, text) = export_one(run, &out_dir, &args, &formats)?;
        if !args.quiet {
            crate::reporter::result(&text);
        }
        markdown.push_str(&text);
        if code == Outcome::Success {
            code = run_code;
        }
        summaries.push(summary);
    }
    if several && let Some(out) = &args.out {
        let summaries: Vec<&Summary> = summaries.iter().collect();
        let matrix = pass_rate_matrix(&summaries);
        let paths = [
            (out.join("matrix.json"), matrix_json(&matrix)),
            (out.join("matrix.html"), matrix_html(&matrix).into_bytes()),
        ];
        for (path, bytes) in &paths {
            write_atomic(path, bytes).map_err(CommandError::infrastructure)?;
        }
        crate::reporter::report_written(&paths.map(|(p, _)| p));
    }
    if formats.contains(&Format::Markdown) {
        crate::report::step_summary::append_step_summary(&markdown);
    }
    Ok(code)
}
