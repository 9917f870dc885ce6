//! `skill-lift merge`: union the shard folders of one run into a new run folder (manifest,
//! trials.jsonl in plan order, transcripts), then analyze and export it like a single-machine
//! run. The checks live in `crate::shard::merge_shards`.
//!
//! Each argument is a shard folder (it holds `manifest.json`) or a folder of shard folders (a
//! shared volume that every shard of a Kubernetes Indexed Job wrote into): its sub-folders
//! holding a `manifest.json` are taken, in name order.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};

use super::{CommandError, MergeArgs};
use crate::record::{for_each_planned_trial, read_manifest, read_run_file, write_atomic};
use crate::report::{Format, export_run, markdown::summary_markdown};
use crate::shard::{merge_shards, missing_shards};

/// Run the command; returns the exit code.
pub fn merge(args: MergeArgs) -> Result<i32, CommandError> {
    let mut shards = Vec::new();
    for dir in &shard_folders(&args.shard_dirs).map_err(CommandError::input)? {
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
    let manifests: Vec<_> = shards.iter().map(|(_, m, _)| m).collect();
    let missing = missing_shards(&manifests);
    if !missing.is_empty() && !args.allow_missing {
        return Err(CommandError::input(anyhow!(
            "shards {} are missing; pass every shard folder, or --allow-missing for an incomplete run",
            missing.join(", ")
        )));
    }
    let run_id = match &args.run_id {
        Some(id) => id.clone(),
        None => args
            .out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| CommandError::input(anyhow!("--out must name a folder")))?,
    };
    let (manifest, records) = merge_shards(&shards, &run_id).map_err(CommandError::input)?;
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
    std::fs::create_dir_all(out.join("transcripts"))
        .with_context(|| format!("creating {}", out.display()))
        .map_err(CommandError::input)?;
    if records.is_empty() {
        return Err(CommandError::input(anyhow!(
            "the shard folders hold no recorded trial; nothing to merge"
        )));
    }
    for (dir, _, shard_records) in &shards {
        for record in shard_records {
            if let Some(relative) = &record.transcript {
                // Read inside the shard folder only; written through the redaction boundary.
                if let Some(bytes) = read_run_file(dir, relative).map_err(CommandError::input)? {
                    write_atomic(&out.join(relative), &bytes)
                        .map_err(CommandError::infrastructure)?;
                }
            }
        }
    }
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
    let markdown = summary_markdown(&summary);
    if !args.quiet {
        print!("{markdown}");
    }
    super::append_step_summary(&markdown);
    eprintln!(
        "skill-lift: merged {} shards ({} trials) into {}",
        shards.len(),
        records.len(),
        out.display()
    );
    super::print_written(&written);
    let code = super::run::exit_code_for(&summary);
    super::run::explain_exit(&summary, code);
    Ok(code)
}

/// The shard folders the arguments name: each argument that holds `manifest.json` itself, else
/// its sub-folders that do (name order). An argument with neither is an error naming it.
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
        .is_some_and(|n| n.to_string_lossy().starts_with(crate::record::TEMP_PREFIX));
    !staging && path.join("manifest.json").is_file()
}
