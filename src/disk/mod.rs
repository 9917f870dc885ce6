//! The disk boundary: the only module that writes files. It owns the redaction of what is
//! written ([`redact`]), atomic writes (temporary file in the same folder, fsync, rename), the
//! modes files are created with ([`FileAccess`]) and its own error, [`DiskError`], which names
//! the path. Every other module writes through the functions here: clippy's
//! `disallowed-methods` (`clippy.toml`) refuses `std::fs::write`, `File::create`,
//! `OpenOptions::open`, `std::fs::copy` and tempfile's file creation elsewhere.
//!
//! This module imports nothing from the crate, so every layer can sit on it (see
//! `docs/architecture.md`). It must not decide *what* is written or where a run folder's files
//! go (that is [`crate::record`]'s); it only guarantees *how*: redacted where the caller asks
//! for the boundary, durable where it asks for an atomic write, with the mode asked for.
//!
//! The plain functions ([`write`], [`create`], [`open`], [`copy`]) behave as their `std::fs`
//! namesakes (no redaction, no fsync); their callers write staged workspaces, fixtures of a
//! scaffold and other files that are not run-folder output.
#![allow(clippy::disallowed_methods)]

pub(crate) mod redact;
pub(crate) mod terminal;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// An I/O failure on a named path. Displayed as `PATH: CAUSE`, with the cause as its source.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct DiskError {
    /// The file or folder the operation was about.
    pub path: PathBuf,
    /// What the operating system said.
    pub source: std::io::Error,
}

impl DiskError {
    /// An error on `path`.
    pub fn new(path: &Path, source: std::io::Error) -> Self {
        Self {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The operating system's error, for callers that report the path themselves.
    pub fn into_io(self) -> std::io::Error {
        self.source
    }
}

fn at(path: &Path) -> impl FnOnce(std::io::Error) -> DiskError + '_ {
    move |source| DiskError::new(path, source)
}

/// Prefix of the temporary files skill-lift writes before renaming them into place; a killed
/// process can leave some behind, which `run --resume` removes
/// ([`crate::record::remove_stale_temp_files`]).
pub(crate) const TEMP_PREFIX: &str = ".skill-lift-tmp-";

/// Who may read a file skill-lift writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileAccess {
    /// Exports, transcripts, run folders: mode 0666 less the process umask (0644 under umask
    /// 022), like any file a program creates, so reports can be shared and served.
    Shared,
    /// The state folder's files (registry, baseline store, calibrations, judge cache): 0600.
    Private,
}

impl FileAccess {
    /// The mode asked for at creation (the umask still applies).
    pub(crate) fn mode(self) -> u32 {
        match self {
            FileAccess::Shared => 0o666,
            FileAccess::Private => 0o600,
        }
    }
}

/// A temporary file in `dir` named with [`TEMP_PREFIX`], readable as `access` says once renamed
/// into place (a plain temporary file would be 0600).
pub(crate) fn temp_file_in_with(
    dir: &Path,
    access: FileAccess,
) -> Result<tempfile::NamedTempFile, DiskError> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(std::fs::Permissions::from_mode(access.mode()))
        .tempfile_in(dir)
        .map_err(at(dir))
}

/// A temporary file in `dir` named with [`TEMP_PREFIX`], for a shared file (an export).
pub(crate) fn temp_file_in(dir: &Path) -> Result<tempfile::NamedTempFile, DiskError> {
    temp_file_in_with(dir, FileAccess::Shared)
}

/// Rename a temporary file (from [`temp_file_in`]) into place at `path`.
pub(crate) fn persist(temp: tempfile::NamedTempFile, path: &Path) -> Result<File, DiskError> {
    temp.persist(path)
        .map_err(|e| DiskError::new(path, e.error))
}

/// Write `bytes` to `path` atomically (temporary file in the same folder, fsync, rename), through
/// the redaction boundary ([`redact`]): no credential value or key shape reaches disk.
/// The file is [shared](FileAccess::Shared): 0644 under umask 022.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DiskError> {
    write_atomic_with(path, bytes, FileAccess::Shared)
}

/// [`write_atomic`] with the given access (state files are [`FileAccess::Private`]).
pub(crate) fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    access: FileAccess,
) -> Result<(), DiskError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = temp_file_in_with(dir, access)?;
    temp.write_all(&redact::redact_bytes(bytes))
        .map_err(at(path))?;
    temp.as_file().sync_data().map_err(at(path))?;
    persist(temp, path)?;
    Ok(())
}

/// Write a derived file (one the next command re-renders, as `report` does): a temporary file
/// renamed into place, through the redaction boundary, without an fsync. The file is
/// [shared](FileAccess::Shared).
pub(crate) fn write_derived(path: &Path, bytes: &[u8]) -> Result<(), DiskError> {
    write_derived_with(path, bytes, FileAccess::Shared)
}

/// [`write_derived`] with the given access (the judge cache's entries are
/// [`FileAccess::Private`]).
pub(crate) fn write_derived_with(
    path: &Path,
    bytes: &[u8],
    access: FileAccess,
) -> Result<(), DiskError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = temp_file_in_with(dir, access)?;
    temp.write_all(&redact::redact_bytes(bytes))
        .map_err(at(path))?;
    persist(temp, path)?;
    Ok(())
}

/// `std::fs::write`: create or truncate `path` and write `bytes`, as they are (no redaction, no
/// fsync).
pub(crate) fn write(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> Result<(), DiskError> {
    let path = path.as_ref();
    std::fs::write(path, bytes).map_err(at(path))
}

/// `File::create`: create or truncate `path` for writing.
pub(crate) fn create(path: impl AsRef<Path>) -> Result<File, DiskError> {
    let path = path.as_ref();
    File::create(path).map_err(at(path))
}

/// Open `path` with `options` (appending logs, lock files, files read and written).
pub(crate) fn open(path: impl AsRef<Path>, options: &OpenOptions) -> Result<File, DiskError> {
    let path = path.as_ref();
    options.open(path).map_err(at(path))
}

/// `std::fs::copy`: copy `from`'s bytes and permissions to `to`; an error names `from`.
pub(crate) fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<u64, DiskError> {
    let from = from.as_ref();
    std::fs::copy(from, to).map_err(at(from))
}

/// `path`'s components joined with `/` (lossy UTF-8): a relative path as the run folder, the
/// fingerprint and the exports write it, whatever the platform's separator.
pub(crate) fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
