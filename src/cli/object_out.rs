//! `--out s3://BUCKET/PREFIX` for `run` and `s3://` arguments of `merge`: the command runs on
//! a local staging folder as usual, and the transfer happens before (`merge`: download) or
//! after (`run`: upload) it. The transfers live in `crate::object_out`.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::Outcome;
use super::{CommandError, MergeArgs, RunArgs};
use crate::object_out::{
    S3Location, check_upload_access, download_run_folders, store, upload_run_folder,
};

/// `skill-lift run`, uploading the run folder when `--out` is an `s3://` location.
pub async fn run(mut args: RunArgs) -> Result<Outcome, CommandError> {
    let Some(location) = S3Location::from_path(&args.results.out) else {
        return super::run::run(args).await;
    };
    let location = location.map_err(CommandError::input)?;
    let client = store(&location).map_err(CommandError::input)?;
    // The store is checked before any trial is spent.
    check_upload_access(client.as_ref(), &location)
        .await
        .context("the object store cannot take the upload; nothing was run")
        .map_err(CommandError::infrastructure)?;
    let staging = tempfile::Builder::new()
        .prefix("skill-lift-s3-")
        .tempdir()
        .context("creating a local staging folder for the s3:// run")
        .map_err(CommandError::infrastructure)?;
    args.results.out = staging.path().to_path_buf();
    let code = super::run::run(args).await?;
    let mut uploaded_any = false;
    let entries = std::fs::read_dir(staging.path())
        .with_context(|| format!("reading {}", staging.path().display()))
        .map_err(CommandError::infrastructure)?;
    let mut folders: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|dir| dir.join("manifest.json").is_file() || crate::record::is_matrix_folder(dir))
        .collect();
    folders.sort();
    for dir in folders {
        let uploaded = match upload_run_folder(client.as_ref(), &dir, &location).await {
            Ok(uploaded) => uploaded,
            Err(error) => {
                // The recorded run is the spend: its folder stays for a later upload.
                let kept = staging.keep();
                return Err(CommandError::infrastructure(
                    anyhow::Error::new(error).context(kept_message(&kept, &location)),
                ));
            }
        };
        crate::reporter::report(crate::reporter::Event::Uploaded {
            files: uploaded.files,
            bytes: uploaded.bytes,
            url: uploaded.location.url(),
            replaced: uploaded.deleted,
        });
        uploaded_any = true;
    }
    if !uploaded_any {
        crate::reporter::report(crate::reporter::Event::NothingUploaded {
            url: location.url(),
        });
    }
    Ok(code)
}

/// Where the run folders stay after a failed upload, and how to upload them by hand
/// (`manifest.json` last, as [`upload_run_folder`] does).
fn kept_message(staging: &Path, location: &S3Location) -> String {
    let folders: Vec<String> = std::fs::read_dir(staging)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    let commands = folders
        .iter()
        .map(|name| {
            let dir = staging.join(name);
            let target = location.child(name).url();
            format!(
                "`aws s3 sync '{dir}' '{target}' --exclude manifest.json --exclude .lock && aws s3 cp '{dir}/manifest.json' '{target}/manifest.json'`",
                dir = dir.display()
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "the upload failed; the recorded run is kept in {} (nothing was deleted). Upload it once the store is reachable, manifest.json last: {commands}",
        staging.display()
    )
}

/// `skill-lift merge`, downloading the run folders under each `s3://` argument first.
pub async fn merge(mut args: MergeArgs) -> Result<Outcome, CommandError> {
    if S3Location::from_path(&args.out).is_some() {
        return Err(CommandError::input(anyhow::anyhow!(
            "merge --out takes a local folder; upload the merged folder afterwards if needed"
        )));
    }
    let staging = tempfile::Builder::new()
        .prefix("skill-lift-s3-")
        .tempdir()
        .context("creating a local folder for the downloaded shards")
        .map_err(CommandError::infrastructure)?;
    let mut local = Vec::new();
    for (index, argument) in args.shard_dirs.iter().enumerate() {
        match S3Location::from_path(argument) {
            None => local.push(argument.clone()),
            Some(location) => {
                let location = location.map_err(CommandError::input)?;
                let client = store(&location).map_err(CommandError::input)?;
                let into = staging.path().join(index.to_string());
                let folders = download_run_folders(client.as_ref(), &location, &into)
                    .await
                    .map_err(|error| match error {
                        crate::object_out::ObjectOutError::NoRuns { .. } => {
                            CommandError::input(error)
                        }
                        other => CommandError::infrastructure(other),
                    })?;
                crate::reporter::report(crate::reporter::Event::Downloaded {
                    folders: folders.len(),
                    url: location.url(),
                });
                local.extend(folders);
            }
        }
    }
    args.shard_dirs = local;
    super::merge::merge(args)
}
