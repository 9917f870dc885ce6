//! Run folders in an S3-compatible object store: `skill-lift run --out s3://BUCKET/PREFIX`
//! uploads the finished run folder to `PREFIX/<run-id>/`, and `skill-lift merge s3://BUCKET/PREFIX`
//! downloads the run folders found there. Built on the `object_store` crate (Apache Arrow;
//! feature `aws` only), configured from the standard `AWS_*` variables (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`/`AWS_DEFAULT_REGION`,
//! `AWS_ENDPOINT_URL` for MinIO, Ceph or any S3-compatible server, `AWS_ALLOW_HTTP=true` for a
//! plain-HTTP endpoint, `AWS_WEB_IDENTITY_TOKEN_FILE`/`AWS_ROLE_ARN` for workload identity).
//!
//! A run is recorded locally first (the run folder format is a local folder: appends, fsync,
//! locks) and copied afterwards; `manifest.json` is uploaded last, so a reader that sees it sees
//! a complete folder, and objects under the run's prefix that the folder no longer holds are
//! deleted first, so a retried shard replaces its earlier upload. Credentials never enter a
//! message: errors name the `s3://` location and the store's answer only.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;

use crate::values::reporter::{Event, report};

/// An `s3://BUCKET/PREFIX` location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct S3Location {
    /// The bucket name.
    pub bucket: String,
    /// The key prefix, `/`-separated, without leading or trailing `/` (may be empty).
    pub prefix: String,
}

/// Why an object-store transfer failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ObjectOutError {
    #[error("`{url}` is not an s3://BUCKET/PREFIX location: {reason}")]
    BadUrl { url: String, reason: &'static str },
    #[error("{url}: cannot set up the S3 client: {source}")]
    Config {
        url: String,
        source: object_store::Error,
    },
    #[error("{url}: {action} failed: {source}")]
    Store {
        url: String,
        action: &'static str,
        source: object_store::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{url}: object `{key}` does not map to a safe relative path; not downloaded")]
    UnsafeKey { url: String, key: String },
    #[error("{url}: no run folder (no object named manifest.json) under this prefix")]
    NoRuns { url: String },
}

impl S3Location {
    /// Parse `s3://BUCKET[/PREFIX]`; `None` when `text` does not start with `s3://`.
    pub(crate) fn parse(text: &str) -> Option<Result<Self, ObjectOutError>> {
        let rest = text.strip_prefix("s3://")?;
        let bad = |reason| ObjectOutError::BadUrl {
            url: text.to_string(),
            reason,
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Some(Err(bad("the bucket name is empty")));
        }
        if let Err(reason) = check_bucket_name(bucket) {
            return Some(Err(bad(reason)));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|segment| {
            segment == "." || segment == ".." || (segment.is_empty() && !prefix.is_empty())
        }) {
            return Some(Err(bad("the prefix has an empty, `.` or `..` segment")));
        }
        Some(Ok(Self {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        }))
    }

    /// Parse a path argument (`--out`, a merge argument) that may be an `s3://` location.
    pub(crate) fn from_path(path: &Path) -> Option<Result<Self, ObjectOutError>> {
        path.to_str().and_then(Self::parse)
    }

    /// `s3://bucket/prefix`.
    pub(crate) fn url(&self) -> String {
        if self.prefix.is_empty() {
            format!("s3://{}", self.bucket)
        } else {
            format!("s3://{}/{}", self.bucket, self.prefix)
        }
    }

    /// The location one level below, at `name`.
    pub(crate) fn child(&self, name: &str) -> Self {
        Self {
            bucket: self.bucket.clone(),
            prefix: if self.prefix.is_empty() {
                name.to_string()
            } else {
                format!("{}/{name}", self.prefix)
            },
        }
    }

    fn key(&self, relative: &str) -> ObjectPath {
        ObjectPath::from(if self.prefix.is_empty() {
            relative.to_string()
        } else {
            format!("{}/{relative}", self.prefix)
        })
    }

    fn store_error(
        &self,
        action: &'static str,
    ) -> impl FnOnce(object_store::Error) -> ObjectOutError + '_ {
        move |source| ObjectOutError::Store {
            url: self.url(),
            action,
            source,
        }
    }
}

/// S3's bucket naming rules (which S3-compatible stores share): 3 to 63 characters, lowercase
/// letters, digits, `.` and `-`, a letter or digit first and last, no `..`, not an IPv4 address.
fn check_bucket_name(bucket: &str) -> Result<(), &'static str> {
    if !(3..=63).contains(&bucket.len()) {
        return Err("a bucket name has 3 to 63 characters");
    }
    if !bucket
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return Err("a bucket name has only lowercase letters, digits, `.` and `-`");
    }
    let edge = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !edge(bucket.bytes().next()) || !edge(bucket.bytes().last()) {
        return Err("a bucket name begins and ends with a letter or digit");
    }
    if bucket.contains("..") {
        return Err("a bucket name has no `..`");
    }
    if bucket.parse::<std::net::Ipv4Addr>().is_ok() {
        return Err("a bucket name is not an IP address");
    }
    Ok(())
}

/// The S3 client for `location`'s bucket, configured from the `AWS_*` environment.
pub(crate) fn store(location: &S3Location) -> Result<Arc<dyn ObjectStore>, ObjectOutError> {
    AmazonS3Builder::from_env()
        .with_bucket_name(&location.bucket)
        .build()
        .map(|store| Arc::new(store) as Arc<dyn ObjectStore>)
        .map_err(|source| ObjectOutError::Config {
            url: location.url(),
            source,
        })
}

/// Every file under `dir` as `/`-separated relative paths (no links followed; the run's lock
/// and temporary files skipped).
fn local_files(dir: &Path) -> Result<Vec<String>, ObjectOutError> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|source| ObjectOutError::Io {
            path: folder.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| ObjectOutError::Io {
                path: folder.clone(),
                source,
            })?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            // Temporary export files and the run's lock (`crate::record`) are not part of it.
            if name.starts_with(crate::disk::TEMP_PREFIX) || name == ".lock" {
                continue;
            }
            let kind = entry.file_type().map_err(|source| ObjectOutError::Io {
                path: path.clone(),
                source,
            })?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                let relative = crate::disk::slash_path(path.strip_prefix(dir).unwrap_or(&path));
                files.push(relative);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// What an upload moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Uploaded {
    /// Where the folder now is (`s3://bucket/prefix/<folder name>`).
    pub location: S3Location,
    /// Objects written.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Stale objects deleted (from an earlier upload of the same run id).
    pub deleted: usize,
}

/// Upload the run folder `dir` to `location/<folder name>/`: stale objects under that prefix
/// deleted first, then every file, `manifest.json` last.
pub(crate) async fn upload_run_folder(
    store: &dyn ObjectStore,
    dir: &Path,
    location: &S3Location,
) -> Result<Uploaded, ObjectOutError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let target = location.child(&name);
    let mut files = local_files(dir)?;
    // manifest.json last: its presence marks a complete folder.
    files.sort_by_key(|f| f == "manifest.json");
    let existing: Vec<ObjectPath> = store
        .list(Some(&target.key("")))
        .map_ok(|meta| meta.location)
        .try_collect()
        .await
        .map_err(target.store_error("listing"))?;
    let mut deleted = 0;
    for key in existing {
        let relative = key
            .as_ref()
            .strip_prefix(&format!("{}/", target.prefix))
            .unwrap_or(key.as_ref())
            .to_string();
        if relative == "manifest.json" || !files.contains(&relative) {
            store
                .delete(&key)
                .await
                .map_err(target.store_error("deleting a stale object"))?;
            deleted += 1;
        }
    }
    let mut bytes = 0u64;
    for relative in &files {
        let path = dir.join(relative);
        let content = std::fs::read(&path).map_err(|source| ObjectOutError::Io {
            path: path.clone(),
            source,
        })?;
        bytes += content.len() as u64;
        store
            .put(&target.key(relative), content.into())
            .await
            .map_err(target.store_error("uploading"))?;
    }
    Ok(Uploaded {
        location: target,
        files: files.len(),
        bytes,
        deleted,
    })
}

/// Check, before anything is spent, that an upload to `location` can succeed: a small probe
/// object is written under the prefix and deleted again, and a listing is asked for (the three
/// operations an upload makes; see [`upload_run_folder`]).
pub(crate) async fn check_upload_access(
    store: &dyn ObjectStore,
    location: &S3Location,
) -> Result<(), ObjectOutError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let probe = location.key(&format!(
        ".skill-lift-probe-{}-{nanos:09}",
        std::process::id()
    ));
    store
        .put(
            &probe,
            object_store::PutPayload::from_static(b"skill-lift write check\n"),
        )
        .await
        .map_err(location.store_error("checking write access (writing a probe object)"))?;
    // Listing under the probe's key (object_store lists it as a folder: nothing is under it)
    // checks the permission without walking the prefix.
    let _: Vec<ObjectPath> = store
        .list(Some(&probe))
        .map_ok(|meta| meta.location)
        .try_collect()
        .await
        .map_err(location.store_error("checking list access"))?;
    store
        .delete(&probe)
        .await
        .map_err(location.store_error("checking delete access (deleting the probe object)"))?;
    Ok(())
}

/// A relative object key as a safe local path (no `..`, no root, no empty segment).
fn safe_relative(key: &str) -> Option<PathBuf> {
    let path = PathBuf::from(key);
    let safe = !key.is_empty()
        && !key.split('/').any(|segment| segment.is_empty())
        && path
            .components()
            .all(|component| matches!(component, Component::Normal(_)));
    safe.then_some(path)
}

/// Download every run folder under `location` into `into`: the location itself when it holds a
/// `manifest.json`, else each sub-prefix that does (complete uploads only; see
/// [`upload_run_folder`]). Returns the local folders in name order.
pub(crate) async fn download_run_folders(
    store: &dyn ObjectStore,
    location: &S3Location,
    into: &Path,
) -> Result<Vec<PathBuf>, ObjectOutError> {
    let prefix = if location.prefix.is_empty() {
        None
    } else {
        Some(location.key(""))
    };
    let objects: Vec<ObjectPath> = store
        .list(prefix.as_ref())
        .map_ok(|meta| meta.location)
        .try_collect()
        .await
        .map_err(location.store_error("listing"))?;
    let base = if location.prefix.is_empty() {
        String::new()
    } else {
        format!("{}/", location.prefix)
    };
    let relative: Vec<(String, &ObjectPath)> = objects
        .iter()
        .filter_map(|key| {
            key.as_ref()
                .strip_prefix(&base)
                .map(|rest| (rest.to_string(), key))
        })
        .collect();
    // Run folders: "" when the location itself is one, else the first segment of each
    // `<folder>/manifest.json`.
    let mut runs: Vec<String> = if relative.iter().any(|(r, _)| r == "manifest.json") {
        vec![String::new()]
    } else {
        relative
            .iter()
            .filter_map(|(r, _)| r.strip_suffix("/manifest.json"))
            .filter(|folder| !folder.contains('/'))
            .map(str::to_string)
            .collect()
    };
    runs.sort();
    if runs.is_empty() {
        return Err(ObjectOutError::NoRuns {
            url: location.url(),
        });
    }
    let mut folders = Vec::new();
    for run in &runs {
        let local_name = if run.is_empty() {
            location
                .prefix
                .rsplit('/')
                .next()
                .filter(|n| !n.is_empty())
                .unwrap_or("run")
                .to_string()
        } else {
            run.clone()
        };
        let folder = into.join(&local_name);
        let run_prefix = if run.is_empty() {
            String::new()
        } else {
            format!("{run}/")
        };
        for (key_relative, key) in &relative {
            let Some(inside) = key_relative.strip_prefix(&run_prefix) else {
                continue;
            };
            let safe = safe_relative(inside).ok_or_else(|| ObjectOutError::UnsafeKey {
                url: location.url(),
                key: key.to_string(),
            })?;
            let bytes = store
                .get(key)
                .await
                .map_err(location.store_error("downloading"))?
                .bytes()
                .await
                .map_err(location.store_error("downloading"))?;
            let path = folder.join(safe);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| ObjectOutError::Io {
                    path: parent.to_path_buf(),
                    source,
                })?;
            }
            crate::disk::write(&path, &bytes)
                .map_err(crate::disk::DiskError::into_io)
                .map_err(|source| ObjectOutError::Io {
                    path: path.clone(),
                    source,
                })?;
        }
        folders.push(folder);
    }
    Ok(folders)
}

/// Why an `s3://` run or merge failed around its transfers.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TransferError {
    /// The location or the client's settings are unusable.
    #[error(transparent)]
    Location(Box<ObjectOutError>),
    /// The store refuses the upload before anything ran.
    #[error("the object store cannot take the upload; nothing was run")]
    Access(#[source] Box<ObjectOutError>),
    /// The local staging folder cannot be created.
    #[error("{what}")]
    Staging {
        /// What the folder is for.
        what: &'static str,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// The staging folder cannot be listed.
    #[error("reading {}", .0.display())]
    ReadStaging(PathBuf, #[source] std::io::Error),
    /// An upload failed; the recorded run is kept in `staging`.
    #[error("{}", kept_message(.staging, .location))]
    Upload {
        /// The kept staging folder.
        staging: PathBuf,
        /// Where the folders were to go.
        location: S3Location,
        /// What failed.
        #[source]
        source: Box<ObjectOutError>,
    },
    /// A download failed.
    #[error(transparent)]
    Download(Box<ObjectOutError>),
    /// `merge --out s3://…`.
    #[error("merge --out takes a local folder; upload the merged folder afterwards if needed")]
    RemoteMergeOut,
}

impl TransferError {
    /// Whether the store or the local disk failed (infrastructure), rather than the user's
    /// input (a location, a prefix holding no run).
    pub(crate) fn is_infrastructure(&self) -> bool {
        let input = match self {
            TransferError::Location(_) | TransferError::RemoteMergeOut => true,
            TransferError::Download(error) => matches!(**error, ObjectOutError::NoRuns { .. }),
            _ => false,
        };
        !input
    }
}

/// A run whose `--out` is an `s3://` location: it records into a local staging folder, whose
/// run folders are uploaded afterwards ([`StagedUpload::upload`]).
pub(crate) struct StagedUpload {
    location: S3Location,
    client: Arc<dyn ObjectStore>,
    staging: tempfile::TempDir,
}

impl StagedUpload {
    /// `None` when `out` is a local folder; else the store checked to take the upload (before
    /// any trial is spent) and a local staging folder.
    pub(crate) async fn start(out: &Path) -> Result<Option<Self>, TransferError> {
        let Some(location) = S3Location::from_path(out) else {
            return Ok(None);
        };
        let location = location.map_err(|error| TransferError::Location(Box::new(error)))?;
        let client = store(&location).map_err(|error| TransferError::Location(Box::new(error)))?;
        check_upload_access(client.as_ref(), &location)
            .await
            .map_err(|error| TransferError::Access(Box::new(error)))?;
        let staging = staging_folder("creating a local staging folder for the s3:// run")?;
        Ok(Some(Self {
            location,
            client,
            staging,
        }))
    }

    /// The local folder the run records into.
    pub(crate) fn staging(&self) -> &Path {
        self.staging.path()
    }

    /// Upload every run (or matrix) folder of the staging folder, reporting each; a failed
    /// upload keeps the staging folder (the recorded run is the spend) and says how to upload
    /// it by hand.
    pub(crate) async fn upload(self) -> Result<(), TransferError> {
        let staging = self.staging.path();
        let entries = std::fs::read_dir(staging)
            .map_err(|error| TransferError::ReadStaging(staging.to_path_buf(), error))?;
        let mut folders: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|dir| {
                dir.join("manifest.json").is_file() || crate::record::is_matrix_folder(dir)
            })
            .collect();
        folders.sort();
        if folders.is_empty() {
            report(Event::NothingUploaded {
                url: self.location.url(),
            });
        }
        for dir in folders {
            let uploaded = match upload_run_folder(self.client.as_ref(), &dir, &self.location).await
            {
                Ok(uploaded) => uploaded,
                Err(source) => {
                    return Err(TransferError::Upload {
                        staging: self.staging.keep(),
                        location: self.location,
                        source: Box::new(source),
                    });
                }
            };
            report(Event::Uploaded {
                files: uploaded.files,
                bytes: uploaded.bytes,
                url: uploaded.location.url(),
                replaced: uploaded.deleted,
            });
        }
        Ok(())
    }
}

fn staging_folder(what: &'static str) -> Result<tempfile::TempDir, TransferError> {
    tempfile::Builder::new()
        .prefix("skill-lift-s3-")
        .tempdir()
        .map_err(|source| TransferError::Staging { what, source })
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

/// The shard folders of `merge`'s arguments, with those under `s3://` arguments downloaded
/// into a local folder that lives as long as this value.
pub(crate) struct DownloadedArguments {
    /// The local folders, in argument order.
    pub folders: Vec<PathBuf>,
    _staging: tempfile::TempDir,
}

/// Download the run folders under each `s3://` argument (reporting each download); local
/// arguments are kept as they are. `out` (the merged folder) must be local.
pub(crate) async fn download_arguments(
    arguments: &[PathBuf],
    out: &Path,
) -> Result<DownloadedArguments, TransferError> {
    if S3Location::from_path(out).is_some() {
        return Err(TransferError::RemoteMergeOut);
    }
    let staging = staging_folder("creating a local folder for the downloaded shards")?;
    let mut folders = Vec::new();
    for (index, argument) in arguments.iter().enumerate() {
        let Some(location) = S3Location::from_path(argument) else {
            folders.push(argument.clone());
            continue;
        };
        let location = location.map_err(|error| TransferError::Location(Box::new(error)))?;
        let client = store(&location).map_err(|error| TransferError::Location(Box::new(error)))?;
        let into = staging.path().join(index.to_string());
        let downloaded = download_run_folders(client.as_ref(), &location, &into)
            .await
            .map_err(|error| TransferError::Download(Box::new(error)))?;
        report(Event::Downloaded {
            folders: downloaded.len(),
            url: location.url(),
        });
        folders.extend(downloaded);
    }
    Ok(DownloadedArguments {
        folders,
        _staging: staging,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_refuse_what_is_not_one() {
        assert!(S3Location::parse("results").is_none());
        let location = S3Location::parse("s3://bucket/a/b/").unwrap().unwrap();
        assert_eq!(location.bucket, "bucket");
        assert_eq!(location.prefix, "a/b");
        assert_eq!(location.url(), "s3://bucket/a/b");
        assert_eq!(location.child("run").url(), "s3://bucket/a/b/run");
        assert!(S3Location::parse("s3://my.bucket-1/x").unwrap().is_ok());
        let root = S3Location::parse("s3://bucket").unwrap().unwrap();
        assert_eq!(root.prefix, "");
        assert_eq!(root.child("run").url(), "s3://bucket/run");
        for bad in [
            "s3://",
            "s3:///x",
            "s3://bucket/a/../c",
            "s3://bucket/a//c",
            "s3://bucket with space/x",
            "s3://Bucket/x",
            "s3://b/x",
            "s3://-bucket/x",
            "s3://bucket-/x",
            "s3://my..bucket/x",
            "s3://my_bucket/x",
            "s3://192.168.1.1/x",
        ] {
            assert!(S3Location::parse(bad).unwrap().is_err(), "{bad}");
        }
    }

    #[test]
    fn object_keys_must_be_safe_relative_paths() {
        assert_eq!(
            safe_relative("transcripts/a.json"),
            Some(PathBuf::from("transcripts/a.json"))
        );
        for bad in ["", "../x", "a/../../x", "/etc/passwd", "a//b", "./a"] {
            assert!(safe_relative(bad).is_none(), "{bad}");
        }
    }
}
