//! Golden sets from real use and author intent: cases mined from agent session history
//! ([`mine`]).
//!
//! This module drafts cases; it never runs them (`run --allow-draft` does) and never overwrites
//! an author's file.

pub(crate) mod draft;
pub(crate) mod evalmd;
pub(crate) mod mine;

use std::path::{Path, PathBuf};

/// Errors of the golden-set commands.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GoldenError {
    /// The session history cannot be read.
    #[error(transparent)]
    History(#[from] crate::features::history::HistoryError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl GoldenError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> GoldenError + '_ {
        move |source| GoldenError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
