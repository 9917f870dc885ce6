//! `skill-lift merge`: union the shard folders of one run into a new run folder (manifest,
//! trials.jsonl in plan order, transcripts), then analyze and export it like a single-machine
//! run. The checks live in `crate::features::shard`. Shards of a matrix run (each argument a matrix
//! folder, or a folder holding them) are merged cell by cell into a new matrix folder.
//!
//! Each argument is a shard folder (it holds `manifest.json`) or a folder of shard folders (a
//! shared volume that every shard of a Kubernetes Indexed Job wrote into): its sub-folders
//! holding a `manifest.json` are taken, in name order.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::Failure;
use super::matrix::{MatrixRunError, conclude_report};
use super::{AnalysisOverrides, Ending, ending_of, explain};
use crate::disk::{DiskError, write_atomic};
use crate::features::shard::{
    MergeError as ShardMergeError, check_shard_set, merge_shards, missing_shards,
};
use crate::pipeline::run_matrix::{MatrixCell, MatrixManifest};
use crate::record::{
    FinishedTrial, Manifest, RecordError, TranscriptLog, TranscriptReader, TrialKey, TrialRecord,
    for_each_planned_trial, is_matrix_folder, read_manifest,
};
use crate::report::{Format, export_run};
use crate::values::reporter::{Event, report};

/// What a merge asks for.
pub(crate) struct MergeSettings {
    /// Shard folders, folders holding them, or matrix folders (already local).
    pub shard_dirs: Vec<PathBuf>,
    /// The merged run folder to create (must not exist, or be empty).
    pub out: PathBuf,
    /// Run id of the merged run (default: the folder name of `out`).
    pub run_id: Option<String>,
    /// Merge even when some shards of i/n are missing.
    pub allow_missing: bool,
    /// Gates and interval settings given now.
    pub analysis: AnalysisOverrides,
    /// Print no Markdown summary.
    pub quiet: bool,
}

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    /// An argument of a matrix merge is no matrix folder.
    #[error(
        "{}: not a matrix folder (no matrix-manifest.json); the other arguments are shards of a matrix run, so every argument must be one",
        .0.display()
    )]
    NotAMatrix(PathBuf),
    /// Matrix folders of different runs.
    #[error(
        "{}: its cells (runners and models) or skill differ from {}'s; these are not shards of one matrix run",
        .dir.display(),
        .first.display()
    )]
    OtherMatrix {
        /// The matrix folder that differs.
        dir: PathBuf,
        /// The first matrix folder.
        first: PathBuf,
    },
    /// A matrix folder cannot be read, or the merged matrix report cannot be written.
    #[error(transparent)]
    Matrix(#[from] MatrixRunError),
    /// The merged folder exists and is not empty.
    #[error("{}: already exists and is not empty; merge into a new folder", .0.display())]
    OutNotEmpty(PathBuf),
    /// `--out` has no folder name to take the run id from.
    #[error("--out must name a folder")]
    OutUnnamed,
    /// The merged folder cannot be created.
    #[error("creating {}", .0.display())]
    CreateOut(PathBuf, #[source] std::io::Error),
    /// An argument cannot be read.
    #[error("{}: cannot read the shard folder", .0.display())]
    ReadArgument(PathBuf, #[source] std::io::Error),
    /// An argument holds no shard folder.
    #[error(
        "{}: neither a shard folder (no manifest.json) nor a folder of shard folders",
        .0.display()
    )]
    NoShards(PathBuf),
    /// A shard's manifest, records or transcripts cannot be read.
    #[error(transparent)]
    Shard(RecordError),
    /// The shards do not make one run.
    #[error(transparent)]
    Set(#[from] ShardMergeError),
    /// Shards of i/n are missing (without `--allow-missing`).
    #[error(
        "shards {} are missing; pass every shard folder, or --allow-missing for an incomplete run",
        .0.join(", ")
    )]
    Missing(Vec<String>),
    /// No shard holds a recorded trial.
    #[error("the shard folders hold no recorded trial; nothing to merge")]
    NoTrials,
    /// `--method` cannot be used with the merged run's design.
    #[error(transparent)]
    Method(#[from] crate::analysis::MethodError),
    /// The merged matrix manifest or the transcripts cannot be written.
    #[error(transparent)]
    Write(RecordError),
    /// The merged manifest or records cannot be written.
    #[error(transparent)]
    Disk(#[from] DiskError),
    /// The exports cannot be written.
    #[error("writing exports into {}", .0.display())]
    Export(PathBuf, #[source] RecordError),
}

impl Failure for MergeError {
    /// How a merge that failed so ends: writes are infrastructure, the rest inputs.
    fn ending(&self) -> Ending {
        match self {
            MergeError::Matrix(error) => error.ending(),
            MergeError::Write(_) | MergeError::Disk(_) | MergeError::Export(..) => {
                Ending::InfrastructureError
            }
            _ => Ending::InputError,
        }
    }
}

/// Merge the shards the arguments name (a matrix run's cell by cell); how the merged run's
/// analysis ends.
pub(crate) fn merge(settings: &MergeSettings) -> Result<Ending, MergeError> {
    if let Some(matrices) = matrix_folders(&settings.shard_dirs) {
        return merge_matrix(settings, &matrices);
    }
    let folders = shard_folders(&settings.shard_dirs)?;
    let run_id = run_id(settings)?;
    merge_folders(&folders, &settings.out, &run_id, settings, settings.quiet)
}

/// The merged run's id: `--run-id`, else the folder name of `--out`.
fn run_id(settings: &MergeSettings) -> Result<String, MergeError> {
    match &settings.run_id {
        Some(id) => Ok(id.clone()),
        None => settings
            .out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or(MergeError::OutUnnamed),
    }
}

/// Refuse an `out` that exists and is not empty.
fn check_out_is_new(out: &Path) -> Result<(), MergeError> {
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(MergeError::OutNotEmpty(out.to_path_buf()));
    }
    Ok(())
}

/// The matrix folders `dirs` with their manifests, refusing an argument that is none and
/// matrices of different runs.
fn read_matrices(dirs: &[PathBuf]) -> Result<Vec<(PathBuf, MatrixManifest)>, MergeError> {
    let mut matrices = Vec::new();
    for dir in dirs {
        if !is_matrix_folder(dir) {
            return Err(MergeError::NotAMatrix(dir.clone()));
        }
        let manifest =
            crate::pipeline::run_matrix::read_matrix_manifest(dir).map_err(MatrixRunError::from)?;
        matrices.push((dir.clone(), manifest));
    }
    let (first_dir, first) = &matrices[0];
    let mut expected: Vec<_> = first.cells.iter().map(cell_key).collect();
    expected.sort();
    for (dir, manifest) in &matrices {
        let mut cells: Vec<_> = manifest.cells.iter().map(cell_key).collect();
        cells.sort();
        if cells != expected || manifest.asset != first.asset {
            return Err(MergeError::OtherMatrix {
                dir: dir.clone(),
                first: first_dir.clone(),
            });
        }
    }
    Ok(matrices)
}

/// What matches a cell across the shards of a matrix run: its runner and model.
fn cell_key(cell: &MatrixCell) -> (String, Option<String>) {
    (cell.runner.clone(), cell.model.clone())
}

/// Merge the shards of a matrix run: each argument is the matrix folder one shard wrote; the
/// cells are matched by runner and model, each merged into `OUT/cells/<id>` as one run is
/// merged, and the matrix report of the merged cells is written into OUT.
fn merge_matrix(settings: &MergeSettings, dirs: &[PathBuf]) -> Result<Ending, MergeError> {
    let matrices = read_matrices(dirs)?;
    let first = &matrices[0].1;
    let out = &settings.out;
    check_out_is_new(out)?;
    let run_id = run_id(settings)?;
    let cells: Vec<MatrixCell> = first
        .cells
        .iter()
        .map(|cell| {
            let prefix = format!("{}--", first.run_id);
            let suffix = cell.run_id.strip_prefix(&prefix).unwrap_or(&cell.run_id);
            MatrixCell {
                run_id: format!("{run_id}--{suffix}"),
                ..cell.clone()
            }
        })
        .collect();
    let merged = MatrixManifest {
        format_version: crate::pipeline::run_matrix::MATRIX_FORMAT_VERSION,
        run_id: run_id.clone(),
        created_at: chrono::Utc::now(),
        asset: first.asset.clone(),
        cells: cells.clone(),
    };
    std::fs::create_dir_all(out.join(crate::pipeline::run_matrix::CELLS_DIR))
        .map_err(|error| MergeError::CreateOut(out.clone(), error))?;
    crate::pipeline::run_matrix::write_matrix_manifest(out, &merged).map_err(MergeError::Write)?;
    let mut endings = Vec::new();
    for (original, cell) in first.cells.iter().zip(&cells) {
        let folders: Vec<PathBuf> = matrices
            .iter()
            .map(|(dir, manifest)| {
                let found = manifest
                    .cells
                    .iter()
                    .find(|c| cell_key(c) == cell_key(original))
                    .expect("the cell sets are equal");
                found.dir(dir)
            })
            .collect();
        report(Event::Cell {
            label: cell.label(),
        });
        let cell_dir = cell.dir(out);
        endings.push(merge_folders(
            &folders,
            &cell_dir,
            &cell.run_id,
            settings,
            true,
        )?);
    }
    Ok(conclude_report(out, &merged, settings.quiet, endings)?)
}

/// One shard folder read: its folder, manifest and records.
type Shard = (PathBuf, Manifest, Vec<TrialRecord>);

/// Read each shard folder's manifest and records (records outside the shard's own plan are
/// refused with file:line).
fn read_shards(folders: &[PathBuf]) -> Result<Vec<Shard>, MergeError> {
    let mut shards = Vec::new();
    for dir in folders {
        let manifest = read_manifest(dir).map_err(MergeError::Shard)?;
        let mut records = Vec::new();
        for_each_planned_trial(&dir.join("trials.jsonl"), &manifest, |record| {
            records.push(record);
            Ok(())
        })
        .map_err(MergeError::Shard)?;
        shards.push((dir.clone(), manifest, records));
    }
    Ok(shards)
}

/// Merge the shard folders `folders` of one run into `out` under `run_id`, analyze and export
/// it; how its analysis ends.
fn merge_folders(
    folders: &[PathBuf],
    out: &Path,
    run_id: &str,
    settings: &MergeSettings,
    quiet: bool,
) -> Result<Ending, MergeError> {
    let shards = read_shards(folders)?;
    let given: Vec<_> = shards
        .iter()
        .map(|(dir, manifest, _)| (dir.as_path(), manifest.shard))
        .collect();
    check_shard_set(&given)?;
    let manifests: Vec<_> = shards.iter().map(|(_, m, _)| m).collect();
    let missing = missing_shards(&manifests);
    if !missing.is_empty() && !settings.allow_missing {
        return Err(MergeError::Missing(missing));
    }
    let (manifest, records) = merge_shards(&shards, run_id)?;
    check_out_is_new(out)?;
    std::fs::create_dir_all(out.join("transcripts"))
        .map_err(|error| MergeError::CreateOut(out.to_path_buf(), error))?;
    if records.is_empty() {
        return Err(MergeError::NoTrials);
    }
    let records = copy_transcripts(&shards, records, out)?;
    let bytes = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
    write_atomic(&out.join("manifest.json"), &bytes)?;
    let mut lines = Vec::new();
    for record in &records {
        serde_json::to_writer(&mut lines, record).expect("record serializes");
        lines.push(b'\n');
    }
    write_atomic(&out.join("trials.jsonl"), &lines)?;
    crate::analysis::check_method(&manifest, settings.analysis.method)?;
    let analysis = settings
        .analysis
        .settings_over(manifest.seed, manifest.gates.as_ref());
    let (summary, written) = export_run(out, out, &manifest, &analysis, &Format::ALL, true)
        .map_err(|error| MergeError::Export(out.to_path_buf(), error))?;
    let markdown = crate::report::publish::report_markdown(&written, &summary);
    if !quiet {
        crate::values::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    report(Event::Merged {
        shards: shards.len(),
        trials: records.len(),
        out: out.to_path_buf(),
    });
    crate::values::reporter::report_written(&written);
    explain(&summary);
    Ok(ending_of(&summary))
}

/// Each merged trial's transcript, read inside its own shard folder (either form: the shard's
/// transcript log or, in older shards, a file per trial), goes into the merged folder's
/// transcript log (through the redaction boundary), durable before the records; the records
/// pointing at their new place.
fn copy_transcripts(
    shards: &[Shard],
    mut records: Vec<TrialRecord>,
    out: &Path,
) -> Result<Vec<TrialRecord>, MergeError> {
    let shard_of: HashMap<TrialKey, usize> = shards
        .iter()
        .enumerate()
        .flat_map(|(index, (_, _, shard_records))| {
            shard_records
                .iter()
                .map(move |record| (record.key(), index))
        })
        .collect();
    let mut readers: Vec<TranscriptReader> = shards
        .iter()
        .map(|(dir, _, _)| TranscriptReader::new(dir))
        .collect();
    let mut transcripts = TranscriptLog::open(out).map_err(MergeError::Write)?;
    for chunk in records.chunks_mut(256) {
        let mut batch = Vec::with_capacity(chunk.len());
        for record in chunk.iter() {
            let bytes = match shard_of.get(&record.key()) {
                Some(&index) => readers[index].read(record).map_err(MergeError::Shard)?,
                None => None,
            };
            batch.push(match bytes {
                Some(bytes) => FinishedTrial::with_transcript_bytes(record.clone(), &bytes),
                None => FinishedTrial::without_transcript(record.clone()),
            });
        }
        transcripts.append(&mut batch).map_err(MergeError::Write)?;
        for (record, trial) in chunk.iter_mut().zip(batch) {
            *record = trial.record;
        }
    }
    Ok(records)
}

/// The matrix folders the arguments name, when any is one or holds some (a shared volume the
/// shards of a matrix run wrote into, e.g. with `--shard auto`): each argument that is a matrix
/// folder, or the matrix folders inside it, in name order. `None` when no argument is or
/// holds a matrix folder (a single run's shards).
fn matrix_folders(arguments: &[PathBuf]) -> Option<Vec<PathBuf>> {
    let mut folders = Vec::new();
    let mut any = false;
    for argument in arguments {
        if is_matrix_folder(argument) {
            any = true;
            folders.push(argument.clone());
            continue;
        }
        let mut inside: Vec<PathBuf> = std::fs::read_dir(argument)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| is_matrix_folder(path))
            .collect();
        if inside.is_empty() {
            // Not a matrix: `merge_matrix` names it if other arguments are matrices.
            folders.push(argument.clone());
        } else {
            any = true;
            inside.sort();
            folders.extend(inside);
        }
    }
    any.then_some(folders)
}

/// The shard folders the arguments name: each argument that holds `manifest.json` itself, else
/// its sub-folders that do (name order). An argument with neither is an error naming it.
fn shard_folders(arguments: &[PathBuf]) -> Result<Vec<PathBuf>, MergeError> {
    let mut folders = Vec::new();
    for argument in arguments {
        if argument.join("manifest.json").is_file() {
            folders.push(argument.clone());
            continue;
        }
        let entries = std::fs::read_dir(argument)
            .map_err(|error| MergeError::ReadArgument(argument.clone(), error))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| is_run_folder(path))
            .collect();
        if found.is_empty() {
            return Err(MergeError::NoShards(argument.clone()));
        }
        found.sort();
        folders.extend(found);
    }
    Ok(folders)
}

/// Whether `path` is a folder holding a run's `manifest.json` (temporary staging folders of a
/// run being created are skipped).
fn is_run_folder(path: &Path) -> bool {
    let staging = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(crate::disk::TEMP_PREFIX));
    !staging && path.join("manifest.json").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_without_shards_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let error = shard_folders(&[tmp.path().to_path_buf()]).unwrap_err();
        assert!(
            error.to_string().ends_with(
                "neither a shard folder (no manifest.json) nor a folder of shard folders"
            ),
            "{error}"
        );
        assert_eq!(error.ending(), Ending::InputError);
        assert!(matrix_folders(&[tmp.path().to_path_buf()]).is_none());
    }
}
