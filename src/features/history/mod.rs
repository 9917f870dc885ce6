//! Agent session history: the transcripts agent CLIs already write on disk, read through one
//! interface ([`HistoryReader`]) into [`HistorySession`]s — the same normalized
//! [`Trajectory`] the runners produce, split into user [`Turn`]s with the skills each turn
//! activated.
//!
//! Formats (one reader each): Claude Code `~/.claude/projects/<project>/<session>.jsonl`
//! ([`claude`]), Codex `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` ([`codex`]), Gemini CLI
//! `~/.gemini/tmp/<project-hash>/chats/session-*.json` ([`gemini`]) and OpenCode's storage
//! folder `~/.local/share/opencode/storage/{session,message,part}/…` ([`opencode`]).
//!
//! Rules common to every reader:
//! - event types a reader does not know are counted per type ([`ReadReport::unknown_events`]),
//!   never fatal;
//! - a malformed line or file is recorded with its file and line ([`Malformed`]) and skipped;
//! - nothing is written: this module only reads. Personal data stays in memory; whoever writes
//!   a derived file (`golden mine`, `usage`) redacts it and writes only where the user said.
//!
//! [`HistoryRoots`] says where each host's history lives: the agents' own conventions
//! (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `XDG_DATA_HOME`), or a stand-in home folder
//! (`--history-root DIR` / `SKILL_LIFT_HISTORY_ROOT`) holding the same layout.

pub mod claude;
pub mod codex;
pub mod gemini;
pub mod opencode;
pub mod request;
pub mod signals;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::features::runner::parsers::{SkillContext, detect};
use crate::values::trajectory::{Trajectory, Usage};

/// Environment variable naming a stand-in home folder for session history.
pub const HISTORY_ROOT_ENV: &str = "SKILL_LIFT_HISTORY_ROOT";

/// An agent whose session history skill-lift reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HistoryHost {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI Codex CLI.
    Codex,
    /// Google Gemini CLI.
    Gemini,
    /// OpenCode.
    Opencode,
}

impl HistoryHost {
    /// Every host, in order.
    pub const ALL: [HistoryHost; 4] = [
        HistoryHost::ClaudeCode,
        HistoryHost::Codex,
        HistoryHost::Gemini,
        HistoryHost::Opencode,
    ];

    /// The host's name as the CLI spells it (`claude-code`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryHost::ClaudeCode => "claude-code",
            HistoryHost::Codex => "codex",
            HistoryHost::Gemini => "gemini",
            HistoryHost::Opencode => "opencode",
        }
    }

    /// Read a host name (`claude-code` or `claude`, `codex`, `gemini`, `opencode`).
    pub fn parse(name: &str) -> Result<Self, HistoryError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "claude-code" | "claude" => Ok(HistoryHost::ClaudeCode),
            "codex" => Ok(HistoryHost::Codex),
            "gemini" | "gemini-cli" => Ok(HistoryHost::Gemini),
            "opencode" => Ok(HistoryHost::Opencode),
            _ => Err(HistoryError::UnknownHost {
                name: name.to_string(),
            }),
        }
    }

    /// The reader of this host's format.
    pub fn reader(self) -> &'static dyn HistoryReader {
        match self {
            HistoryHost::ClaudeCode => &claude::ClaudeReader,
            HistoryHost::Codex => &codex::CodexReader,
            HistoryHost::Gemini => &gemini::GeminiReader,
            HistoryHost::Opencode => &opencode::OpencodeReader,
        }
    }

    /// The folder under a home folder where the host keeps its skills (`.claude/skills`, …).
    pub fn skills_dir_in(self, home: &Path) -> PathBuf {
        match self {
            HistoryHost::ClaudeCode => home.join(".claude/skills"),
            HistoryHost::Codex => home.join(".codex/skills"),
            HistoryHost::Gemini => home.join(".gemini/skills"),
            HistoryHost::Opencode => home.join(".config/opencode/skills"),
        }
    }
}

impl std::fmt::Display for HistoryHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors of the history readers. Bad content inside a file is never an error (it is a
/// [`Malformed`] entry); these are the failures that stop reading altogether.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(
        "unknown history host `{name}`: skill-lift reads claude-code, codex, gemini and opencode session history"
    )]
    UnknownHost { name: String },
    #[error("no home folder (HOME is not set): pass --history-root DIR")]
    NoHome,
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--since `{value}`: expected a date YYYY-MM-DD or an RFC 3339 time")]
    BadDate { value: String },
}

impl HistoryError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HistoryError + '_ {
        move |source| HistoryError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Where session history is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryRoots {
    /// The agents' own locations under the real home folder (with their environment overrides).
    Home(PathBuf),
    /// A stand-in home folder holding the same layout (`--history-root`).
    StandIn(PathBuf),
}

impl HistoryRoots {
    /// `--history-root` when given, else [`HISTORY_ROOT_ENV`], else the real home folder.
    pub fn resolve(flag: Option<&Path>) -> Result<Self, HistoryError> {
        if let Some(dir) = flag {
            return Ok(HistoryRoots::StandIn(dir.to_path_buf()));
        }
        if let Some(dir) = std::env::var_os(HISTORY_ROOT_ENV).filter(|v| !v.is_empty()) {
            return Ok(HistoryRoots::StandIn(PathBuf::from(dir)));
        }
        crate::features::registry::state::home_dir()
            .map(HistoryRoots::Home)
            .ok_or(HistoryError::NoHome)
    }

    /// The home folder (real or stand-in).
    pub fn home(&self) -> &Path {
        match self {
            HistoryRoots::Home(home) | HistoryRoots::StandIn(home) => home,
        }
    }

    /// The folder a host's reader starts from: Claude Code `<home>/.claude/projects`
    /// (`$CLAUDE_CONFIG_DIR/projects`), Codex `<home>/.codex/sessions` (`$CODEX_HOME/sessions`),
    /// Gemini CLI `<home>/.gemini/tmp`, OpenCode `<home>/.local/share/opencode/storage`
    /// (`$XDG_DATA_HOME/opencode/storage`). Environment overrides apply to the real home only.
    pub fn folder(&self, host: HistoryHost) -> PathBuf {
        let env = |name: &str| match self {
            HistoryRoots::Home(_) => std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            HistoryRoots::StandIn(_) => None,
        };
        let home = self.home();
        match host {
            HistoryHost::ClaudeCode => env("CLAUDE_CONFIG_DIR")
                .unwrap_or_else(|| home.join(".claude"))
                .join("projects"),
            HistoryHost::Codex => env("CODEX_HOME")
                .unwrap_or_else(|| home.join(".codex"))
                .join("sessions"),
            HistoryHost::Gemini => home.join(".gemini/tmp"),
            HistoryHost::Opencode => env("XDG_DATA_HOME")
                .unwrap_or_else(|| home.join(".local/share"))
                .join("opencode/storage"),
        }
    }
}

/// One user turn: a prompt and everything the agent did until the next prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Turn {
    /// The user's prompt text.
    pub prompt: String,
    /// When the prompt was sent.
    pub at: Option<DateTime<Utc>>,
    /// The last event of the turn.
    pub ended: Option<DateTime<Utc>>,
    /// The turn's tool calls: indices into the session trajectory's `tool_calls`.
    pub tool_calls: Range<usize>,
    /// The agent's last text in the turn.
    pub answer: Option<String>,
    /// Tokens the turn used, when the format records them.
    pub usage: Usage,
    /// Whether the user interrupted the turn, or rejected one of its tool calls.
    pub interrupted: bool,
    /// Skills the turn activated successfully (filled by [`read_history`]), in order, unique.
    pub skills: Vec<String>,
}

impl Turn {
    /// A turn starting with `prompt` at `at`, whose tool calls start at `first_call`.
    pub fn new(prompt: String, at: Option<DateTime<Utc>>, first_call: usize) -> Self {
        Turn {
            prompt,
            at,
            ended: at,
            tool_calls: first_call..first_call,
            answer: None,
            usage: Usage::default(),
            interrupted: false,
            skills: Vec::new(),
        }
    }

    /// Seconds from the prompt to the turn's last event, when both are known.
    pub fn duration_s(&self) -> Option<f64> {
        match (self.at, self.ended) {
            (Some(start), Some(end)) if end >= start => {
                Some((end - start).num_milliseconds() as f64 / 1000.0)
            }
            _ => None,
        }
    }

    /// Total tokens (input + output) of the turn, when recorded.
    pub fn tokens(&self) -> Option<u64> {
        match (self.usage.input_tokens, self.usage.output_tokens) {
            (None, None) => None,
            (input, output) => Some(input.unwrap_or(0) + output.unwrap_or(0)),
        }
    }
}

/// One recorded session, normalized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistorySession {
    /// Which agent wrote it.
    pub host: HistoryHost,
    /// The agent's session id.
    pub id: String,
    /// The file it was read from (for OpenCode, the session's metadata file).
    pub file: PathBuf,
    /// The working folder of the session, when recorded.
    pub cwd: Option<PathBuf>,
    /// When the session started (its first recorded event).
    pub started: Option<DateTime<Utc>>,
    /// The model the agent reported.
    pub model: Option<String>,
    /// The user turns, in order.
    pub turns: Vec<Turn>,
    /// The whole session as the normalized trajectory runners produce.
    pub trajectory: Trajectory,
}

impl HistorySession {
    /// The end every reader shares: `None` when the session has no user turn; else the session
    /// of `host` read from `file`, its id the one the agent recorded or else the file's stem (set
    /// on the trajectory too), its working folder and start `(cwd, started)` as recorded, its
    /// model the trajectory's observed model.
    pub(crate) fn of_turns(
        host: HistoryHost,
        file: &Path,
        id: Option<String>,
        (cwd, started): (Option<PathBuf>, Option<DateTime<Utc>>),
        turns: Vec<Turn>,
        mut trajectory: Trajectory,
    ) -> Option<Self> {
        if turns.is_empty() {
            return None;
        }
        let id = id.unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        trajectory.session_id = Some(id.clone());
        Some(Self {
            host,
            id,
            file: file.to_path_buf(),
            cwd,
            started,
            model: trajectory.observed_model.clone(),
            turns,
            trajectory,
        })
    }
}

/// A line or file a reader could not use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Malformed {
    pub file: PathBuf,
    /// 1-based line, for line-oriented formats.
    pub line: Option<usize>,
    pub error: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.error),
            None => write!(f, "{}: {}", self.file.display(), self.error),
        }
    }
}

/// What reading one host's history found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReadReport {
    /// The folder read.
    pub folder: PathBuf,
    /// Whether the folder exists.
    pub folder_exists: bool,
    /// Session files seen.
    pub files: usize,
    /// Sessions read (within `--since`).
    pub sessions: Vec<HistorySession>,
    /// Sessions left out by `--since`.
    pub sessions_before_since: usize,
    /// Event types no reader rule knows, with their counts (`claude-code:queue-operation`, …).
    pub unknown_events: BTreeMap<String, u64>,
    /// Lines or files that could not be read.
    pub malformed: Vec<Malformed>,
}

impl ReadReport {
    /// Count one event of an unknown type.
    pub fn unknown(&mut self, host: HistoryHost, kind: &str) {
        let kind = if kind.is_empty() { "(no type)" } else { kind };
        *self
            .unknown_events
            .entry(format!("{host}:{kind}"))
            .or_default() += 1;
    }

    /// Record a malformed line (or file, without a line).
    pub fn malformed(&mut self, file: &Path, line: Option<usize>, error: impl Into<String>) {
        self.malformed.push(Malformed {
            file: file.to_path_buf(),
            line,
            error: error.into(),
        });
    }
}

/// What reading one session file gives: the session, `None` when the file holds no user turn.
pub type SessionRead = Result<Option<HistorySession>, HistoryError>;

/// One host's session-history format (the host is the one whose [`HistoryHost::reader`] it is).
pub trait HistoryReader: Sync {
    /// The session files (or per-session entry files) under the host's folder, sorted.
    fn session_files(&self, folder: &Path) -> Result<Vec<PathBuf>, HistoryError>;
    /// Read one session of the host's `folder` from `file`. Bad lines go to `report`.
    fn read_session(&self, folder: &Path, file: &Path, report: &mut ReadReport) -> SessionRead;
}

/// Largest session file read, bytes (1 GiB); a larger one is skipped with a warning.
pub const MAX_SESSION_FILE_BYTES: u64 = 1 << 30;

/// How a session file's text is split for [`read_session_text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextShape {
    /// JSON Lines: a line that is not UTF-8 is skipped alone (left empty, so line numbers hold).
    Lines,
    /// One JSON document: a file that is not UTF-8 is skipped whole.
    Document,
}

/// The text of a session file, or `None` when it is skipped: larger than
/// [`MAX_SESSION_FILE_BYTES`], or (a [`TextShape::Document`]) not valid UTF-8. Each skip is a
/// `file:line` entry in `report.malformed`, never an error: one undecodable file or line does
/// not stop the reading of the others.
pub(crate) fn read_session_text(
    file: &Path,
    shape: TextShape,
    report: &mut ReadReport,
) -> Result<Option<String>, HistoryError> {
    let size = std::fs::metadata(file)
        .map_err(HistoryError::io(file))?
        .len();
    if size > MAX_SESSION_FILE_BYTES {
        report.malformed(
            file,
            None,
            format!("{size} bytes, more than the {MAX_SESSION_FILE_BYTES} a session file may hold; skipped"),
        );
        return Ok(None);
    }
    let bytes = std::fs::read(file).map_err(HistoryError::io(file))?;
    let error = match String::from_utf8(bytes) {
        Ok(text) => return Ok(Some(text)),
        Err(error) => error,
    };
    let valid_up_to = error.utf8_error().valid_up_to();
    let bytes = error.into_bytes();
    if shape == TextShape::Document {
        let line = memchr::memchr_iter(b'\n', &bytes[..valid_up_to]).count() + 1;
        report.malformed(
            file,
            Some(line),
            format!("not valid UTF-8 (byte {valid_up_to}); file skipped"),
        );
        return Ok(None);
    }
    let mut text = String::with_capacity(bytes.len());
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if index > 0 {
            text.push('\n');
        }
        match std::str::from_utf8(line) {
            Ok(line) => text.push_str(line),
            Err(_) => report.malformed(file, Some(index + 1), "not valid UTF-8; line skipped"),
        }
    }
    Ok(Some(text))
}

/// The frame of every JSON Lines reader: the lines of a session file decoded as JSON objects,
/// or `None` when the file is skipped ([`read_session_text`]). Blank lines are passed over; a
/// line that is not a JSON object is a `file:line` entry in `report.malformed`, and skipped.
pub(crate) fn read_json_lines(
    file: &Path,
    report: &mut ReadReport,
) -> Result<Option<Vec<serde_json::Value>>, HistoryError> {
    let Some(text) = read_session_text(file, TextShape::Lines, report)? else {
        return Ok(None);
    };
    let mut events = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(value @ serde_json::Value::Object(_)) => events.push(value),
            Ok(_) => report.malformed(file, Some(number + 1), "not a JSON object"),
            Err(error) => {
                report.malformed(file, Some(number + 1), format!("invalid JSON: {error}"))
            }
        }
    }
    Ok(Some(events))
}

/// The frame of every JSON document reader: the JSON object a session file holds, or `None`
/// when the file is skipped ([`read_session_text`]) or holds no JSON object (recorded in
/// `report.malformed` with the line of the JSON error).
pub(crate) fn read_json_object(
    file: &Path,
    report: &mut ReadReport,
) -> Result<Option<serde_json::Value>, HistoryError> {
    let Some(text) = read_session_text(file, TextShape::Document, report)? else {
        return Ok(None);
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(Some(value)),
        Ok(_) => {
            report.malformed(file, None, "not a JSON object");
            Ok(None)
        }
        Err(error) => {
            report.malformed(file, Some(error.line()), format!("invalid JSON: {error}"));
            Ok(None)
        }
    }
}

/// Files under `dir` (recursively, at most `depth` levels) with the `extension` whose path
/// satisfies `keep`, sorted.
pub(crate) fn files_under(
    dir: &Path,
    depth: usize,
    extension: &str,
    keep: &dyn Fn(&Path) -> bool,
) -> Result<Vec<PathBuf>, HistoryError> {
    let mut found = Vec::new();
    if !dir.is_dir() {
        return Ok(found);
    }
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((folder, level)) = stack.pop() {
        for entry in std::fs::read_dir(&folder).map_err(HistoryError::io(&folder))? {
            let entry = entry.map_err(HistoryError::io(&folder))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(HistoryError::io(&path))?;
            if kind.is_dir() {
                if level < depth {
                    stack.push((path, level + 1));
                }
            } else if kind.is_file()
                && path.extension().is_some_and(|e| e == extension)
                && keep(&path)
            {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Parse an RFC 3339 time.
pub(crate) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A time in milliseconds since the epoch.
pub(crate) fn millis_time(value: &serde_json::Value) -> Option<DateTime<Utc>> {
    value.as_i64().and_then(DateTime::from_timestamp_millis)
}

/// Read `--since`: a date (midnight UTC) or an RFC 3339 time.
pub fn parse_since(value: &str) -> Result<DateTime<Utc>, HistoryError> {
    if let Some(time) = parse_time(value) {
        return Ok(time);
    }
    chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| HistoryError::BadDate {
            value: value.to_string(),
        })
}

/// A `SKILL.md` path under a skills folder: `…/skills/<name>/SKILL.md`.
static SKILL_FILE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?:^|[/\\\s'])skills[/\\]([A-Za-z0-9._-]+)[/\\]SKILL\.md\b")
        .expect("valid pattern")
});

/// Fill the trajectory's skill activations (the shared detection pass of the runners: skill
/// tools, files read and written), plus reads of any `…/skills/<name>/SKILL.md` (a read tool
/// or a shell command): in history the skills folder is not known in advance. Then each
/// turn's `skills` from the activations whose tool call falls in the turn.
pub fn attribute_skills(session: &mut HistorySession) {
    let workspace = session.cwd.clone().unwrap_or_default();
    detect(
        &mut session.trajectory,
        SkillContext {
            workspace: &workspace,
            skills: &[],
        },
    );
    let mut extra = Vec::new();
    for (index, call) in session.trajectory.tool_calls.iter().enumerate() {
        if session
            .trajectory
            .skill_activations
            .iter()
            .any(|a| a.tool_call_index == Some(index))
        {
            continue;
        }
        let name = call.name.as_str();
        let (text, evidence) = if crate::features::runner::parsers::READ_TOOLS.contains(&name) {
            (
                crate::features::runner::parsers::path_argument(&call.input),
                crate::values::trajectory::ActivationEvidence::FileRead,
            )
        } else if crate::features::runner::parsers::SHELL_TOOLS.contains(&name) {
            (
                crate::features::runner::parsers::command_argument(&call.input),
                crate::values::trajectory::ActivationEvidence::ShellCommand,
            )
        } else {
            continue;
        };
        let Some(text) = text else { continue };
        if let Some(found) = SKILL_FILE.captures(&text) {
            extra.push(crate::values::trajectory::SkillActivation {
                skill: found[1].to_string(),
                evidence,
                ok: !call.is_error,
                tool_call_index: Some(index),
                target: false,
                reason: call
                    .is_error
                    .then(|| "the read of SKILL.md failed".to_string()),
            });
        }
    }
    session.trajectory.skill_activations.extend(extra);
    for turn in &mut session.turns {
        turn.skills.clear();
    }
    for activation in session.trajectory.skill_activations.iter().filter(|a| a.ok) {
        let Some(index) = activation.tool_call_index else {
            continue;
        };
        if let Some(turn) = session
            .turns
            .iter_mut()
            .find(|t| t.tool_calls.contains(&index))
            && !turn.skills.contains(&activation.skill)
        {
            turn.skills.push(activation.skill.clone());
        }
    }
}

/// [`read_history`] of `host` in a stand-in home folder `home`, all sessions (unit tests).
#[cfg(test)]
pub(crate) fn read_stand_in(host: HistoryHost, home: &Path) -> ReadReport {
    read_history(host, &HistoryRoots::StandIn(home.to_path_buf()), None).unwrap()
}

/// Read every session of `host` under `roots`, started at or after `since` when given.
/// A missing folder is an empty history (with `folder_exists: false`), not an error.
pub fn read_history(
    host: HistoryHost,
    roots: &HistoryRoots,
    since: Option<DateTime<Utc>>,
) -> Result<ReadReport, HistoryError> {
    let reader = host.reader();
    let folder = roots.folder(host);
    let mut report = ReadReport {
        folder_exists: folder.is_dir(),
        folder: folder.clone(),
        ..ReadReport::default()
    };
    let files = reader.session_files(&folder)?;
    report.files = files.len();
    for file in files {
        // A file that cannot be read is skipped with a warning, like a malformed one: the
        // other sessions are still read.
        let mut session = match reader.read_session(&folder, &file, &mut report) {
            Ok(Some(session)) => session,
            Ok(None) => continue,
            Err(error) => {
                report.malformed(&file, None, format!("skipped: {error}"));
                continue;
            }
        };
        if let (Some(since), Some(started)) = (since, session.started)
            && started < since
        {
            report.sessions_before_since += 1;
            continue;
        }
        attribute_skills(&mut session);
        report.sessions.push(session);
    }
    report
        .sessions
        .sort_by(|a, b| a.started.cmp(&b.started).then_with(|| a.id.cmp(&b.id)));
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_round_trip() {
        for host in HistoryHost::ALL {
            assert_eq!(HistoryHost::parse(host.as_str()).unwrap(), host);
        }
        assert_eq!(
            HistoryHost::parse("claude").unwrap(),
            HistoryHost::ClaudeCode
        );
        let error = HistoryHost::parse("cursor").unwrap_err().to_string();
        assert!(error.contains("unknown history host `cursor`"), "{error}");
    }

    #[test]
    fn stand_in_home_ignores_agent_environment() {
        let roots = HistoryRoots::StandIn(PathBuf::from("/fixture"));
        for (host, folder) in [
            (HistoryHost::ClaudeCode, "/fixture/.claude/projects"),
            (HistoryHost::Codex, "/fixture/.codex/sessions"),
            (HistoryHost::Gemini, "/fixture/.gemini/tmp"),
            (
                HistoryHost::Opencode,
                "/fixture/.local/share/opencode/storage",
            ),
        ] {
            assert_eq!(roots.folder(host), PathBuf::from(folder), "{host}");
        }
    }

    #[test]
    fn since_reads_dates_and_times() {
        assert_eq!(
            parse_since("2026-03-01").unwrap().to_rfc3339(),
            "2026-03-01T00:00:00+00:00"
        );
        assert!(parse_since("2026-03-01T10:00:00+02:00").is_ok());
        assert!(parse_since("last week").is_err());
    }

    #[test]
    fn skill_file_pattern_names_the_skill() {
        let found = SKILL_FILE
            .captures("/bin/bash -lc 'cat /home/u/.agents/skills/release-notes/SKILL.md'")
            .unwrap();
        assert_eq!(&found[1], "release-notes");
        assert!(SKILL_FILE.captures("cat docs/SKILL.md").is_none());
    }
}
