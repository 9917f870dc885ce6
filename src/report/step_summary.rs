//! The GitHub Actions job summary: a command's Markdown report appended to the file named by
//! `GITHUB_STEP_SUMMARY` ([`append_step_summary`]).

use std::path::PathBuf;

use crate::values::reporter::{Event, report};

/// Append `markdown` to the file named by `GITHUB_STEP_SUMMARY`, when that variable is set (a
/// GitHub Actions job summary), through the redaction boundary. A failure is a warning, never
/// an error.
pub(crate) fn append_step_summary(markdown: &str) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let result = crate::disk::open(&path, std::fs::OpenOptions::new().create(true).append(true))
        .map_err(crate::disk::DiskError::into_io)
        .and_then(|mut file| {
            std::io::Write::write_all(
                &mut file,
                crate::disk::redact::redact_text(markdown).as_bytes(),
            )
        });
    if let Err(error) = result {
        report(Event::warning(format!(
            "cannot append the report to GITHUB_STEP_SUMMARY ({}): {error}",
            PathBuf::from(path).display()
        )));
    }
}
