//! The result folder of a command that records something outside a run (`triggers`,
//! `shadow`, `vet`, …): its id ([`result_folder_id`]) and its creation
//! ([`create_result_folder`]); a result folder is never written over.

use std::path::{Path, PathBuf};

/// Why a result folder cannot be named or created (an input error: the user picks another
/// name or place).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResultFolderError {
    /// The id given is not a plain folder name.
    #[error("{flag} `{id}` must be a plain folder name")]
    IdNotPlain {
        /// The flag that named it (`--run-id`, `--vet-id`).
        flag: &'static str,
        /// The id given.
        id: String,
    },
    /// The folder exists already.
    #[error("{}: folder already exists; {refusal}", .dir.display())]
    Exists {
        /// The folder.
        dir: PathBuf,
        /// What to do instead.
        refusal: &'static str,
    },
    /// The folder cannot be created.
    #[error("creating {}: {error}", .dir.display())]
    Create {
        /// The folder.
        dir: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
}

/// The id of a command's new result folder: `given` (the `flag` that names it), else a new one
/// naming the asset and the command ([`super::new_result_id`]). An id that is not a plain
/// folder name is refused.
pub(crate) fn result_folder_id(
    given: Option<&str>,
    asset: &str,
    command: &str,
    flag: &'static str,
) -> Result<String, ResultFolderError> {
    let id = match given {
        Some(id) => id.to_string(),
        None => super::new_result_id(asset, Some(command)),
    };
    if !super::is_plain_folder_name(&id) {
        return Err(ResultFolderError::IdNotPlain { flag, id });
    }
    Ok(id)
}

/// Create the new result folder `dir` (and the folders above it). A folder already there is
/// refused with `refusal` (what to do instead).
pub(crate) fn create_result_folder(
    dir: &Path,
    refusal: &'static str,
) -> Result<(), ResultFolderError> {
    if dir.exists() {
        return Err(ResultFolderError::Exists {
            dir: dir.to_path_buf(),
            refusal,
        });
    }
    std::fs::create_dir_all(dir).map_err(|error| ResultFolderError::Create {
        dir: dir.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_must_be_plain_and_folders_new() {
        assert_eq!(
            result_folder_id(Some("a/b"), "s", "triggers", "--run-id")
                .unwrap_err()
                .to_string(),
            "--run-id `a/b` must be a plain folder name"
        );
        let id = result_folder_id(None, "my-skill", "vet", "--vet-id").unwrap();
        assert!(id.contains("my-skill") && id.contains("vet"), "{id}");
        let tmp = tempfile::tempdir().unwrap();
        let error = create_result_folder(tmp.path(), "pick another --run-id").unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: folder already exists; pick another --run-id",
                tmp.path().display()
            )
        );
        create_result_folder(&tmp.path().join("new/run"), "x").unwrap();
        assert!(tmp.path().join("new/run").is_dir());
    }
}
