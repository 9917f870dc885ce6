//! Names in and around a run folder: which folder is a matrix folder, and the rule every case
//! id follows (ids become folder and file names). Eval sets check their ids with the same rule
//! when they load (`crate::features::evalset`); the run folder checks them again when it is read.

use std::path::Path;

/// Whether `dir` is a matrix folder (it holds `matrix-manifest.json`).
pub fn is_matrix_folder(dir: &Path) -> bool {
    dir.join(MATRIX_MANIFEST).is_file()
}

/// The matrix folder's manifest file.
pub const MATRIX_MANIFEST: &str = "matrix-manifest.json";

/// The plain-name rule of a case id (also a folder and file-name part: transcripts, staged
/// workspaces, report pages): not empty, starting with an ASCII letter or digit, at most
/// [`MAX_ID_CHARS`] characters of ASCII letters, digits, `.`, `_` and `-` (so never `..`, a
/// `/` or a hidden name). Checked where a case is loaded and again where a recorded run is read
/// ([`crate::record::implausible_manifest`]).
pub fn validate_id(id: &str) -> Result<(), IdError> {
    let mut chars = id.chars();
    let Some(first) = chars.next() else {
        return Err(IdError::Empty);
    };
    if !first.is_ascii_alphanumeric() {
        return Err(IdError::First(id.to_string()));
    }
    if id.chars().count() > MAX_ID_CHARS {
        return Err(IdError::TooLong(id.to_string()));
    }
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(IdError::Character {
            id: id.to_string(),
            bad,
        });
    }
    Ok(())
}

/// Why a case id breaks the plain-name rule ([`validate_id`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The empty id.
    #[error("must not be empty")]
    Empty,
    /// An id that does not start with an ASCII letter or digit.
    #[error("`{0}` must start with a letter or digit")]
    First(String),
    /// An id over [`MAX_ID_CHARS`] characters.
    #[error("`{0}` is longer than {MAX_ID_CHARS} characters")]
    TooLong(String),
    /// An id with a character outside the rule.
    #[error("`{id}` contains {bad:?}; use ASCII letters, digits, `.`, `_`, `-`")]
    Character {
        /// The id.
        id: String,
        /// The first character outside the rule.
        bad: char,
    },
}

/// Longest case id accepted, in characters.
pub const MAX_ID_CHARS: usize = 128;
