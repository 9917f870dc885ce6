//! Which history a command reads ([`HistoryRequest`]: the `--host`, `--history-root` and
//! `--since` flags `golden mine`, `usage` and `shadow` share) and the summary of what was read,
//! reported as events ([`report_read_summary`]).

use std::path::PathBuf;

use super::{HistoryError, HistoryHost, HistoryRoots, ReadReport, parse_since, read_history};
use crate::values::reporter::{Event, report};

/// Which history to read, as given.
#[derive(Debug, Clone)]
pub struct HistoryRequest {
    /// The host's name (claude-code, codex, gemini, opencode).
    pub host: String,
    /// A folder standing in for the home folder, when given.
    pub history_root: Option<PathBuf>,
    /// Only sessions started at or after this date (YYYY-MM-DD or RFC 3339).
    pub since: Option<String>,
}

impl HistoryRequest {
    /// Read the history this request names; a summary of what was read is reported.
    pub fn read(&self) -> Result<(HistoryRoots, ReadReport), HistoryError> {
        let host = HistoryHost::parse(&self.host)?;
        let since = self.since.as_deref().map(parse_since).transpose()?;
        let roots = HistoryRoots::resolve(self.history_root.as_deref())?;
        let read = read_history(host, &roots, since)?;
        report_read_summary(host, &read);
        Ok((roots, read))
    }
}

/// Report what was read: sessions, unknown event types, malformed lines (the first 10).
pub fn report_read_summary(host: HistoryHost, read: &ReadReport) {
    let folder =
        crate::features::golden::mine::redact_personal(&read.folder.to_string_lossy(), &[]);
    if !read.folder_exists {
        report(Event::NoHistory {
            host: host.to_string(),
            folder,
        });
        return;
    }
    report(Event::HistoryRead {
        sessions: read.sessions.len(),
        host: host.to_string(),
        folder,
        files: read.files,
        before_since: read.sessions_before_since,
    });
    if !read.unknown_events.is_empty() {
        report(Event::UnknownHistoryEvents {
            kinds: read
                .unknown_events
                .iter()
                .map(|(kind, count)| format!("{kind} ({count})"))
                .collect(),
        });
    }
    for malformed in read.malformed.iter().take(10) {
        report(Event::warning(
            crate::features::golden::mine::redact_personal(&malformed.to_string(), &[]),
        ));
    }
    if read.malformed.len() > 10 {
        report(Event::warning(format!(
            "{} more malformed lines or files",
            read.malformed.len() - 10
        )));
    }
}
