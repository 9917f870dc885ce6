//! Publishing a finished report: the Markdown a command prints and appends to the job summary
//! (`super::step_summary`), [`report_markdown`].

use std::path::PathBuf;

/// The Markdown report as written (`report.md` among `written`: the summary and the per-case
/// table with sample answers), else the summary alone: what is printed and appended to the job
/// summary, byte for byte the file.
pub(crate) fn report_markdown(written: &[PathBuf], summary: &crate::analysis::Summary) -> String {
    written
        .iter()
        .find(|path| path.file_name().is_some_and(|name| name == "report.md"))
        .and_then(|path| std::fs::read_to_string(path).ok())
        .unwrap_or_else(|| super::markdown::summary_markdown(summary))
}
