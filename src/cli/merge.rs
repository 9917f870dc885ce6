//! `skill-lift merge`: union the shard folders of one run into a new run folder (manifest,
//! trials.jsonl in plan order, transcripts), then analyze and export it like a single-machine
//! run. The checks live in `crate::shard::merge_shards`.
//!
//! Each argument is a shard folder (it holds `manifest.json`) or a folder of shard folders (a
//! shared volume that every shard of a Kubernetes Indexed Job wrote into): its sub-folders
//! holding a `manifest.json` are taken, in name order.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};

use super::Outcome;
use super::{CommandError, MergeArgs};
use crate::disk::write_atomic;
use crate::record::{
    FinishedTrial, TranscriptLog, TranscriptReader, for_each_planned_trial, read_manifest,
};
use crate::report::{Format, export_run};
use crate::shard::{check_shard_set, merge_shards, missing_shards};

/// Run the command; returns the exit code.
pub fn merge(args: MergeArgs) -> Result<Outcome, CommandError> {
    if let Some(matrices) = matrix_folders(&args.shard_dirs) {
        return merge_matrix(&args, &matrices);
    }
    let folders = shard_folders(&args.shard_dirs).map_err(CommandError::input)?;
    let run_id = match &args.run_id {
        Some(id) => id.clone(),
        None => args
            .out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| CommandError::input(anyhow!("--out must name a folder")))?,
    };
    merge_folders(&folders, &args.out, &run_id, &args, args.quiet)
}

/// Merge the shards of a matrix run: each argument is the matrix folder one shard wrote; the
/// cells are matched by runner and model, each merged into `OUT/cells/<id>` as `merge` merges
/// one run, and the matrix report of the merged cells is written into OUT.
fn merge_matrix(args: &MergeArgs, dirs: &[PathBuf]) -> Result<Outcome, CommandError> {
    let mut matrices = Vec::new();
    for dir in dirs {
        if !crate::record::is_matrix_folder(dir) {
            return Err(CommandError::input(anyhow!(
                "{}: not a matrix folder (no matrix-manifest.json); the other arguments are shards of a matrix run, so every argument must be one",
                dir.display()
            )));
        }
        let manifest = crate::run_matrix::read_matrix_manifest(dir).map_err(CommandError::input)?;
        matrices.push((dir.clone(), manifest));
    }
    let (_, first) = &matrices[0];
    let key = |cell: &crate::run_matrix::MatrixCell| (cell.runner.clone(), cell.model.clone());
    let mut expected: Vec<_> = first.cells.iter().map(key).collect();
    expected.sort();
    for (dir, manifest) in &matrices {
        let mut cells: Vec<_> = manifest.cells.iter().map(key).collect();
        cells.sort();
        if cells != expected || manifest.asset != first.asset {
            return Err(CommandError::input(anyhow!(
                "{}: its cells (runners and models) or skill differ from {}'s; these are not shards of one matrix run",
                dir.display(),
                matrices[0].0.display()
            )));
        }
    }
    let out = &args.out;
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(CommandError::input(anyhow!(
            "{}: already exists and is not empty; merge into a new folder",
            out.display()
        )));
    }
    let run_id = match &args.run_id {
        Some(id) => id.clone(),
        None => out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| CommandError::input(anyhow!("--out must name a folder")))?,
    };
    let cells: Vec<crate::run_matrix::MatrixCell> = first
        .cells
        .iter()
        .map(|cell| {
            let suffix = cell
                .run_id
                .strip_prefix(&format!("{}--", first.run_id))
                .unwrap_or(&cell.run_id);
            crate::run_matrix::MatrixCell {
                run_id: format!("{run_id}--{suffix}"),
                ..cell.clone()
            }
        })
        .collect();
    let merged = crate::run_matrix::MatrixManifest {
        format_version: crate::run_matrix::MATRIX_FORMAT_VERSION,
        run_id: run_id.clone(),
        created_at: chrono::Utc::now(),
        asset: first.asset.clone(),
        cells: cells.clone(),
    };
    std::fs::create_dir_all(out.join(crate::run_matrix::CELLS_DIR))
        .with_context(|| format!("creating {}", out.display()))
        .map_err(CommandError::input)?;
    crate::run_matrix::write_matrix_manifest(out, &merged).map_err(CommandError::infrastructure)?;
    let mut codes = Vec::new();
    for (original, cell) in first.cells.iter().zip(&cells) {
        let folders: Vec<PathBuf> = matrices
            .iter()
            .map(|(dir, manifest)| {
                let found = manifest
                    .cells
                    .iter()
                    .find(|c| key(c) == key(original))
                    .expect("the cell sets are equal");
                found.dir(dir)
            })
            .collect();
        crate::reporter::report(crate::reporter::Event::Cell {
            label: cell.label(),
        });
        codes.push(merge_folders(
            &folders,
            &cell.dir(out),
            &cell.run_id,
            args,
            true,
        )?);
    }
    let summaries = super::matrix::cell_summaries(out, &merged)?;
    let files = super::matrix::write_report(out, &merged, &summaries, args.quiet)?;
    crate::reporter::report_written(&files);
    Ok(super::matrix::combined_code(codes))
}

/// Merge the shard folders `folders` of one run into `out` under `run_id`, analyze and export
/// it; returns the exit code of its analysis.
fn merge_folders(
    folders: &[PathBuf],
    out: &Path,
    run_id: &str,
    args: &MergeArgs,
    quiet: bool,
) -> Result<Outcome, CommandError> {
    let mut shards = Vec::new();
    for dir in folders {
        let manifest = read_manifest(dir).map_err(CommandError::input)?;
        // Records outside the shard's own plan are refused with file:line.
        let mut records = Vec::new();
        for_each_planned_trial(&dir.join("trials.jsonl"), &manifest, |record| {
            records.push(record);
            Ok(())
        })
        .map_err(CommandError::input)?;
        shards.push((dir.clone(), manifest, records));
    }
    let given: Vec<_> = shards
        .iter()
        .map(|(dir, manifest, _)| (dir.as_path(), manifest.shard))
        .collect();
    check_shard_set(&given).map_err(CommandError::input)?;
    let manifests: Vec<_> = shards.iter().map(|(_, m, _)| m).collect();
    let missing = missing_shards(&manifests);
    if !missing.is_empty() && !args.allow_missing {
        return Err(CommandError::input(anyhow!(
            "shards {} are missing; pass every shard folder, or --allow-missing for an incomplete run",
            missing.join(", ")
        )));
    }
    let (manifest, records) = merge_shards(&shards, run_id).map_err(CommandError::input)?;
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(CommandError::input(anyhow!(
            "{}: already exists and is not empty; merge into a new folder",
            out.display()
        )));
    }
    std::fs::create_dir_all(out.join("transcripts"))
        .with_context(|| format!("creating {}", out.display()))
        .map_err(CommandError::input)?;
    if records.is_empty() {
        return Err(CommandError::input(anyhow!(
            "the shard folders hold no recorded trial; nothing to merge"
        )));
    }
    // Each merged trial's transcript, read inside its own shard folder (either form: the
    // shard's transcript log or, in older shards, a file per trial), goes into the merged
    // folder's transcript log (through the redaction boundary), durable before the records.
    let shard_of: std::collections::HashMap<crate::record::TrialKey, usize> = shards
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
    let mut transcripts = TranscriptLog::open(out).map_err(CommandError::infrastructure)?;
    let mut records = records;
    for chunk in records.chunks_mut(256) {
        let mut batch = Vec::with_capacity(chunk.len());
        for record in chunk.iter() {
            let bytes = match shard_of.get(&record.key()) {
                Some(&index) => readers[index].read(record).map_err(CommandError::input)?,
                None => None,
            };
            batch.push(match bytes {
                Some(bytes) => FinishedTrial::with_transcript_bytes(record.clone(), &bytes),
                None => FinishedTrial::without_transcript(record.clone()),
            });
        }
        transcripts
            .append(&mut batch)
            .map_err(CommandError::infrastructure)?;
        for (record, trial) in chunk.iter_mut().zip(batch) {
            *record = trial.record;
        }
    }
    drop(transcripts);
    let bytes = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
    write_atomic(&out.join("manifest.json"), &bytes).map_err(CommandError::infrastructure)?;
    let mut lines = Vec::new();
    for record in &records {
        serde_json::to_writer(&mut lines, record).expect("record serializes");
        lines.push(b'\n');
    }
    write_atomic(&out.join("trials.jsonl"), &lines).map_err(CommandError::infrastructure)?;
    args.analysis.check_method(&manifest)?;
    let settings = args
        .analysis
        .settings_over(manifest.seed, manifest.gates.as_ref());
    let (summary, written) = export_run(out, out, &manifest, &settings, &Format::ALL, true)
        .with_context(|| format!("writing exports into {}", out.display()))
        .map_err(CommandError::infrastructure)?;
    let markdown = crate::report::publish::report_markdown(&written, &summary);
    if !quiet {
        crate::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    crate::reporter::report(crate::reporter::Event::Merged {
        shards: shards.len(),
        trials: records.len(),
        out: out.to_path_buf(),
    });
    crate::reporter::report_written(&written);
    let code = super::run::exit_code_for(&summary);
    crate::pipeline::explain(&summary);
    Ok(code)
}

/// The shard folders the arguments name: each argument that holds `manifest.json` itself, else
/// its sub-folders that do (name order). An argument with neither is an error naming it.
/// The matrix folders the arguments name, when any is one or holds some (a shared volume the
/// shards of a matrix run wrote into, e.g. with `--shard auto`): each argument that is a matrix
/// folder, or the matrix folders inside it, in name order. `None` when no argument is or
/// holds a matrix folder (a single run's shards).
fn matrix_folders(arguments: &[PathBuf]) -> Option<Vec<PathBuf>> {
    let mut folders = Vec::new();
    let mut any = false;
    for argument in arguments {
        if crate::record::is_matrix_folder(argument) {
            any = true;
            folders.push(argument.clone());
            continue;
        }
        let mut inside: Vec<PathBuf> = std::fs::read_dir(argument)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| crate::record::is_matrix_folder(path))
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

fn shard_folders(arguments: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut folders = Vec::new();
    for argument in arguments {
        if argument.join("manifest.json").is_file() {
            folders.push(argument.clone());
            continue;
        }
        let entries = std::fs::read_dir(argument)
            .with_context(|| format!("{}: cannot read the shard folder", argument.display()))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| is_run_folder(path))
            .collect();
        if found.is_empty() {
            return Err(anyhow!(
                "{}: neither a shard folder (no manifest.json) nor a folder of shard folders",
                argument.display()
            ));
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
