//! `skill-lift report`: re-analyze recorded runs and re-render any subset of their exports,
//! without calling any model. Several runs of one asset are also combined into the pass-rate
//! matrix (`matrix.json`, `matrix.html`) in the output folder; a matrix folder has every cell
//! re-analyzed and its matrix report rewritten.

use std::path::{Path, PathBuf};

use super::Failure;
use super::matrix::{MatrixRunError, cell_folders, combined_ending, write_report};
use super::{Ending, PipelineError, ending_of, explain};
use crate::analysis::Summary;
use crate::disk::{DiskError, write_atomic};
use crate::record::{Manifest, RecordError, read_manifest};
use crate::report::matrix::{matrix_html, matrix_json, pass_rate_matrix};
use crate::report::{Format, export_run};
use crate::values::reporter::{Event, report};

/// What a re-analysis asks for.
pub(crate) struct ReportSettings {
    /// Run folders (or one matrix folder).
    pub run_dirs: Vec<PathBuf>,
    /// The exports to write.
    pub formats: Vec<Format>,
    /// Where they go instead of each run folder (with several runs: one sub-folder per run id,
    /// plus the pass-rate matrix).
    pub out: Option<PathBuf>,
    /// Gates and interval settings given now (a run's recorded ones apply otherwise).
    pub analysis: super::AnalysisOverrides,
    /// Bootstrap seed (default: the run's recorded seed).
    pub seed: Option<u64>,
    /// Print no Markdown summary.
    pub quiet: bool,
}

/// Why recorded runs cannot be re-analyzed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReportError {
    /// A `--format` value names no export.
    #[error("{0}")]
    UnknownFormat(crate::values::unknown_name::UnknownName),
    /// A run folder is not one.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// A run's manifest cannot be read.
    #[error(transparent)]
    Manifest(RecordError),
    /// The output folder cannot be created.
    #[error("creating {}", .0.display())]
    CreateOut(PathBuf, #[source] std::io::Error),
    /// `--method` cannot be used with a run's design.
    #[error(transparent)]
    Method(#[from] crate::analysis::MethodError),
    /// A run's exports cannot be written (or its records read).
    #[error("exporting {} into {}", .run_dir.display(), .out_dir.display())]
    Export {
        /// The run folder.
        run_dir: PathBuf,
        /// Where its exports were to go.
        out_dir: PathBuf,
        /// What failed.
        #[source]
        source: RecordError,
    },
    /// A run holds no recorded trial.
    #[error(
        "{}: no trial is recorded in trials.jsonl; nothing to report (continue the run with `skill-lift run --resume {}`)",
        .0.display(),
        crate::values::shell::shell_path(.0)
    )]
    NothingRecorded(PathBuf),
    /// A matrix folder's cells cannot be read, or its report written.
    #[error(transparent)]
    Matrix(#[from] MatrixRunError),
    /// Several runs without `--out`.
    #[error("several runs are combined into a pass-rate matrix: give --out DIR for it")]
    SeveralWithoutOut,
    /// Runs of different assets.
    #[error(
        "{} is a run of `{first_asset}` but {} is a run of `{other_asset}`: a matrix combines runs of one asset",
        .first_dir.display(),
        .other_dir.display()
    )]
    OtherAsset {
        /// The first run folder.
        first_dir: PathBuf,
        /// Its asset.
        first_asset: String,
        /// The run folder of another asset.
        other_dir: PathBuf,
        /// That asset.
        other_asset: String,
    },
    /// The pass-rate matrix cannot be written.
    #[error(transparent)]
    Write(#[from] DiskError),
}

impl Failure for ReportError {
    /// How a re-analysis that failed so ends: unreadable records are inputs, failed writes
    /// infrastructure.
    fn ending(&self) -> Ending {
        match self {
            ReportError::Pipeline(error) => match error.class() {
                super::ErrorClass::Input => Ending::InputError,
                super::ErrorClass::Infrastructure => Ending::InfrastructureError,
            },
            ReportError::Export { source, .. } => match source {
                RecordError::BadRecord { .. } | RecordError::UnsafePath { .. } => {
                    Ending::InputError
                }
                _ => Ending::InfrastructureError,
            },
            ReportError::Matrix(error) => error.ending(),
            ReportError::Write(_) => Ending::InfrastructureError,
            _ => Ending::InputError,
        }
    }
}

/// Parse `--format` values (`all`, or names from [`Format::name`]/file names), deduplicated, in
/// [`Format::ALL`] order.
pub(crate) fn parse_formats(values: &[String]) -> Result<Vec<Format>, ReportError> {
    if values.is_empty() || values.iter().any(|v| v == "all") {
        return Ok(Format::ALL.to_vec());
    }
    let mut formats = Vec::new();
    for value in values {
        formats.push(value.parse().map_err(ReportError::UnknownFormat)?);
    }
    formats.sort();
    formats.dedup();
    Ok(formats)
}

/// A run folder with its manifest.
struct LoadedRun {
    dir: PathBuf,
    manifest: Manifest,
}

fn load(run_dir: &Path) -> Result<LoadedRun, ReportError> {
    if !run_dir.join("manifest.json").is_file() {
        return Err(PipelineError::NotARunFolder {
            dir: run_dir.to_path_buf(),
            half_created: super::resolve::is_half_created_run_folder(run_dir),
        }
        .into());
    }
    let manifest = read_manifest(run_dir).map_err(ReportError::Manifest)?;
    // Records were redacted when written; loading the run's profiles (when they still exist)
    // registers their credential values, so exports of older runs are redacted too.
    let _ = crate::features::runner::profile::load_profile(&manifest.runner.profile_path);
    for judge in &manifest.grading.judges {
        let _ = crate::features::runner::profile::load_profile(&judge.profile_path);
    }
    Ok(LoadedRun {
        dir: run_dir.to_path_buf(),
        manifest,
    })
}

/// Re-analyze one run and write `settings.formats` into `out_dir`: its summary, ending and
/// Markdown.
fn export_one(
    run: &LoadedRun,
    out_dir: &Path,
    settings: &ReportSettings,
) -> Result<(Summary, Ending, String), ReportError> {
    std::fs::create_dir_all(out_dir)
        .map_err(|error| ReportError::CreateOut(out_dir.to_path_buf(), error))?;
    crate::analysis::check_method(&run.manifest, settings.analysis.method)?;
    // The run's own gates (its manifest) unless a flag is given again.
    let analysis = settings.analysis.settings_over(
        settings.seed.unwrap_or(run.manifest.seed),
        run.manifest.gates.as_ref(),
    );
    let formats = &settings.formats;
    let (summary, written) = export_run(&run.dir, out_dir, &run.manifest, &analysis, formats, true)
        .map_err(|source| ReportError::Export {
            run_dir: run.dir.clone(),
            out_dir: out_dir.to_path_buf(),
            source,
        })?;
    if summary.trials.recorded == 0 {
        return Err(ReportError::NothingRecorded(run.dir.clone()));
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
    crate::values::reporter::report_written(&written);
    let mut ending = ending_of(&summary);
    explain(&summary);
    // A whole run with planned trials missing is not a success (a shard holds only its own).
    if ending == Ending::Success && run.manifest.shard.is_none() && missing > 0 {
        report(Event::PlannedTrialsMissing {
            missing,
            planned: run.manifest.trials_planned,
            run_dir: run.dir.clone(),
        });
        ending = Ending::InfrastructureError;
    }
    Ok((summary, ending, text))
}

/// A matrix folder: every cell re-analyzed (into its own folder, or `OUT/cells/<id>`), then the
/// matrix report rewritten (in the matrix folder, or OUT).
fn report_matrix(settings: &ReportSettings, dir: &Path) -> Result<Ending, ReportError> {
    let (manifest, cells) = cell_folders(dir)?;
    let mut endings = Vec::new();
    let mut summaries = Vec::new();
    for (cell, cell_dir) in cells {
        let run = load(&cell_dir)?;
        let out_dir = match &settings.out {
            Some(out) => out.join(cell.relative_dir()),
            None => cell_dir.clone(),
        };
        let (summary, ending, _) = export_one(&run, &out_dir, settings)?;
        endings.push(ending);
        summaries.push((cell, summary));
    }
    let out = settings.out.clone().unwrap_or_else(|| dir.to_path_buf());
    let files = write_report(&out, &manifest, &summaries, settings.quiet)?;
    crate::values::reporter::report_written(&files);
    Ok(combined_ending(endings))
}

/// Re-analyze the runs (or the matrix folder) of `settings`, print each run's Markdown summary
/// and write the pass-rate matrix of several runs; the first run's ending that is not success.
pub(crate) fn report_runs(settings: &ReportSettings) -> Result<Ending, ReportError> {
    if let [dir] = settings.run_dirs.as_slice()
        && crate::record::is_matrix_folder(dir)
    {
        return report_matrix(settings, dir);
    }
    let several = settings.run_dirs.len() > 1;
    if several && settings.out.is_none() {
        return Err(ReportError::SeveralWithoutOut);
    }
    let runs = load_runs(&settings.run_dirs)?;
    let mut summaries = Vec::new();
    let mut ending = Ending::Success;
    let mut markdown = String::new();
    for run in &runs {
        let out_dir = match &settings.out {
            Some(out) if several => out.join(&run.manifest.run_id),
            Some(out) => out.clone(),
            None => run.dir.clone(),
        };
        let (summary, run_ending, text) = export_one(run, &out_dir, settings)?;
        if !settings.quiet {
            crate::values::reporter::result(&text);
        }
        markdown.push_str(&text);
        if ending == Ending::Success {
            ending = run_ending;
        }
        summaries.push(summary);
    }
    if several && let Some(out) = &settings.out {
        write_pass_rate_matrix(out, &summaries)?;
    }
    if settings.formats.contains(&Format::Markdown) {
        crate::report::step_summary::append_step_summary(&markdown);
    }
    Ok(ending)
}

/// Load every run folder, refusing runs of different assets.
fn load_runs(dirs: &[PathBuf]) -> Result<Vec<LoadedRun>, ReportError> {
    let mut runs = Vec::new();
    for dir in dirs {
        runs.push(load(dir)?);
    }
    if let Some(first) = runs.first()
        && let Some(other) = runs
            .iter()
            .find(|r| r.manifest.asset.name != first.manifest.asset.name)
    {
        return Err(ReportError::OtherAsset {
            first_dir: first.dir.clone(),
            first_asset: first.manifest.asset.name.clone(),
            other_dir: other.dir.clone(),
            other_asset: other.manifest.asset.name.clone(),
        });
    }
    Ok(runs)
}

/// Write the pass-rate matrix of several runs (`matrix.json`, `matrix.html`) into `out`.
fn write_pass_rate_matrix(out: &Path, summaries: &[Summary]) -> Result<(), ReportError> {
    let summaries: Vec<&Summary> = summaries.iter().collect();
    let matrix = pass_rate_matrix(&summaries);
    let paths = [
        (out.join("matrix.json"), matrix_json(&matrix)),
        (out.join("matrix.html"), matrix_html(&matrix).into_bytes()),
    ];
    for (path, bytes) in &paths {
        write_atomic(path, bytes)?;
    }
    crate::values::reporter::report_written(&paths.map(|(p, _)| p));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_parsed_deduplicated_in_order() {
        assert_eq!(parse_formats(&[]).unwrap(), Format::ALL.to_vec());
        let two =
            parse_formats(&["markdown".into(), "summary-json".into(), "markdown".into()]).unwrap();
        assert_eq!(two.len(), 2);
        assert!(two.windows(2).all(|w| w[0] < w[1]));
        let error = parse_formats(&["nope".into()]).unwrap_err();
        assert!(
            error.to_string().starts_with("unknown format `nope`"),
            "{error}"
        );
        assert_eq!(error.ending(), Ending::InputError);
    }
}
