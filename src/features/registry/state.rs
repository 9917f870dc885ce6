//! The state folder holding `hosts.json`, `registry.<host>.json` and `baseline-results.json`:
//! `--state DIR`, else `SKILL_LIFT_HOME`, else `~/.skill-lift/`. Also the two write disciplines
//! every state file follows: an exclusive lock file beside it, and atomic replacement. The state
//! folder is private: folders skill-lift creates for it are 0700 and its files 0600
//! ([`write_state_json`]), unlike run folders and exports, which follow the umask.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::RegistryError;
use crate::disk::{FileAccess, write_atomic_with};

/// Environment variable naming the state folder.
pub const STATE_ENV: &str = "SKILL_LIFT_HOME";

/// The user's home folder from `HOME` (`USERPROFILE` on Windows).
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Expand a leading `~` or `~/` with the home folder.
pub fn expand_home(path: &str) -> Result<PathBuf, RegistryError> {
    if path == "~" {
        return home_dir().ok_or(RegistryError::NoHome);
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return Ok(home_dir().ok_or(RegistryError::NoHome)?.join(rest));
    }
    Ok(PathBuf::from(path))
}

/// Resolve the state folder: the flag, else `SKILL_LIFT_HOME` (passed in by the CLI, which reads
/// the environment), else `~/.skill-lift`. The folder is not created here.
pub fn resolve_state_dir(
    flag: Option<&Path>,
    env_value: Option<&str>,
) -> Result<PathBuf, RegistryError> {
    if let Some(flag) = flag {
        return Ok(flag.to_path_buf());
    }
    if let Some(value) = env_value.filter(|v| !v.is_empty()) {
        return expand_home(value);
    }
    Ok(home_dir().ok_or(RegistryError::NoHome)?.join(".skill-lift"))
}

/// The state folder as every command resolves it: `flag`, else the `SKILL_LIFT_HOME`
/// environment variable, else `~/.skill-lift`. For callers outside the registry CLI (e.g. `run`
/// feeding the baseline store).
pub fn state_dir_from_env(flag: Option<&Path>) -> Result<PathBuf, RegistryError> {
    let env_value = std::env::var(STATE_ENV).ok();
    resolve_state_dir(flag, env_value.as_deref())
}

/// Create `dir` (and missing parents) with mode 0700, for state that is nobody else's business.
/// An existing folder is left as it is.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// An exclusive advisory lock on `<file>.lock`, released on drop.
pub struct StateLock {
    _file: File,
}

/// Take the exclusive lock for the state file `path`, creating its folder (private). Blocks
/// while another skill-lift process holds it (writers are short: read, merge, atomic write).
pub fn lock_for(path: &Path) -> Result<StateLock, RegistryError> {
    let (lock_path, file) = open_lock_file(path)?;
    file.lock().map_err(RegistryError::io(&lock_path))?;
    Ok(StateLock { _file: file })
}

/// The lock file of the state file `path` (`<path>.lock`): where [`lock_for`] and
/// [`try_lock_for`] lock.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    path.parent().unwrap_or(Path::new(".")).join(name)
}

/// Take the exclusive lock for `path` without waiting: `Ok(None)` while another process holds
/// it (a long job such as a `monitor` pass, which a second one must not join). The lock is the
/// operating system's (`flock`): it goes with the process that held it, so a killed holder
/// never leaves a stale lock behind.
pub fn try_lock_for(path: &Path) -> Result<Option<StateLock>, RegistryError> {
    let (lock_path, file) = open_lock_file(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(StateLock { _file: file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(error)) => Err(RegistryError::io(&lock_path)(error)),
    }
}

/// Open (creating, 0600, its folder 0700) the lock file of `path`.
fn open_lock_file(path: &Path) -> Result<(PathBuf, File), RegistryError> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(RegistryError::io(dir))?;
    let lock_path = lock_path(path);
    let file = crate::disk::open(
        &lock_path,
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600),
    )
    .map_err(crate::disk::DiskError::into_io)
    .map_err(RegistryError::io(&lock_path))?;
    Ok((lock_path, file))
}

/// Read a JSON state file; `Ok(None)` when it does not exist. Malformed JSON is an error naming
/// the file (nothing is overwritten).
pub fn read_json<T: DeserializeOwned>(
    path: &Path,
    what: &'static str,
) -> Result<Option<T>, RegistryError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(RegistryError::io(path)(error)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|error| RegistryError::BadJson {
            path: path.to_path_buf(),
            what,
            message: error.to_string(),
        })
}

/// Write `value` as pretty JSON atomically (temporary file, fsync, rename), as a shared file
/// (an export such as a fingerprint report or a checklist template: 0644 under umask 022).
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RegistryError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(RegistryError::io(dir))?;
    write_json_with(path, value, FileAccess::Shared)
}

/// Write a state file (registry, baseline store, calibrations) as pretty JSON atomically,
/// private: mode 0600, its folder created 0700.
pub fn write_state_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RegistryError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(RegistryError::io(dir))?;
    write_json_with(path, value, FileAccess::Private)
}

fn write_json_with<T: Serialize>(
    path: &Path,
    value: &T,
    access: FileAccess,
) -> Result<(), RegistryError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|error| RegistryError::Invalid {
        path: path.to_path_buf(),
        message: error.to_string(),
    })?;
    bytes.push(b'\n');
    write_atomic_with(path, &bytes, access).map_err(|error| RegistryError::Io {
        path: error.path,
        source: error.source,
    })
}

/// Refuse a file whose `schema_version` is newer than `supported`.
pub fn check_schema(path: &Path, found: u32, supported: u32) -> Result<(), RegistryError> {
    if found > supported {
        return Err(RegistryError::SchemaVersion {
            path: path.to_path_buf(),
            found,
            supported,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_beats_environment() {
        let resolved = resolve_state_dir(Some(Path::new("/x")), Some("/y")).unwrap();
        assert_eq!(resolved, PathBuf::from("/x"));
        let resolved = resolve_state_dir(None, Some("/y")).unwrap();
        assert_eq!(resolved, PathBuf::from("/y"));
    }

    #[test]
    fn malformed_json_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry.x.json");
        std::fs::write(&path, "{not json").unwrap();
        let error = read_json::<serde_json::Value>(&path, "a registry").unwrap_err();
        assert!(error.to_string().contains("registry.x.json"), "{error}");
        assert!(
            read_json::<serde_json::Value>(&dir.path().join("none.json"), "x")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn try_lock_refuses_while_held_and_succeeds_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("monitor.h.json");
        let held = try_lock_for(&path).unwrap();
        assert!(held.is_some());
        assert!(try_lock_for(&path).unwrap().is_none(), "a second holder");
        drop(held);
        assert!(try_lock_for(&path).unwrap().is_some());
        assert!(lock_path(&path).ends_with("monitor.h.json.lock"));
    }

    #[test]
    fn write_then_read_round_trips_under_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/state.json");
        let _lock = lock_for(&path).unwrap();
        write_json(&path, &serde_json::json!({"a": 1})).unwrap();
        let value: serde_json::Value = read_json(&path, "x").unwrap().unwrap();
        assert_eq!(value["a"], 1);
    }
}
