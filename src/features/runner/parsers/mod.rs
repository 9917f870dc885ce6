//! Agent CLI output parsers: one per output format, each turning the agent's stdout lines into
//! the normalized [`Trajectory`]; then one shared pass ([`detect`]) that finds skill activations,
//! skill script runs and files read/written from the normalized tool calls.
//!
//! Parsers are pure functions of the lines: no process handling (that is `crate::features::process`) and
//! no grading. Rules common to all of them:
//! - lines that are not JSON objects are skipped (CLIs print banners and warnings on stdout);
//! - event types the parser does not know are kept verbatim in `raw_events`, never errors;
//! - a stream without its terminal event is `TrajectoryStatus::Incomplete` (an infrastructure
//!   error), whatever the exit code;
//! - absent usage is `None`, never 0.

pub mod claude;
pub mod codex;
pub mod copilot;
pub mod cursor;
pub mod gemini;
pub mod goose;
pub mod opencode;
pub mod qwen;

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::disk::redact::truncate;
use crate::features::runner::StagedSkill;
use crate::values::trajectory::{
    ActivationEvidence, InfrastructureCause, Message, Role, ScriptRun, SkillActivation, ToolCall,
    Trajectory,
};

/// An agent CLI's stdout format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// Claude Code `--output-format stream-json --verbose`.
    ClaudeStreamJson,
    /// Codex `exec --json`.
    CodexJson,
    /// Gemini CLI `--output-format stream-json`.
    GeminiStreamJson,
    /// OpenCode `run --format json`.
    OpencodeJson,
    /// Cursor CLI `--output-format stream-json`.
    CursorStreamJson,
    /// Goose `run --output-format stream-json`.
    GooseStreamJson,
    /// GitHub Copilot CLI `--output-format json`.
    CopilotJson,
    /// Qwen Code `-o stream-json`.
    QwenStreamJson,
    /// Plain text: the whole stdout is the final answer; the exit code decides completeness.
    Text,
}

impl OutputFormat {
    /// The parser of this format.
    pub fn parser(self) -> &'static dyn StreamParser {
        match self {
            OutputFormat::ClaudeStreamJson => &claude::CLAUDE_STREAM_JSON,
            OutputFormat::CodexJson => &codex::CODEX_JSON,
            OutputFormat::GeminiStreamJson => &gemini::GEMINI_STREAM_JSON,
            OutputFormat::OpencodeJson => &opencode::OPENCODE_JSON,
            OutputFormat::CursorStreamJson => &cursor::CURSOR_STREAM_JSON,
            OutputFormat::GooseStreamJson => &goose::GOOSE_STREAM_JSON,
            OutputFormat::CopilotJson => &copilot::COPILOT_JSON,
            OutputFormat::QwenStreamJson => &qwen::QWEN_STREAM_JSON,
            OutputFormat::Text => &PlainText,
        }
    }

    /// Whether `line` is the format's terminal event (after which a lingering CLI is stopped).
    pub fn is_final_event(self, line: &str) -> bool {
        self.parser().is_final_event(line)
    }

    /// Parse a whole stream (see [`StreamParser::parse`]).
    pub fn parse(self, lines: &[String]) -> Trajectory {
        self.parser().parse(lines)
    }
}

/// What one error event of a stream reports, for [`reported_infrastructure`].
#[derive(Debug, Clone, PartialEq)]
pub enum Reported {
    /// A failure that ended the run: HTTP status (when the event carries one), message, and
    /// the cause the event's own error type names (when it names one).
    Fatal(Option<u64>, String, Option<InfrastructureCause>),
    /// A failed call the agent retries: status, message, whether the connection itself failed.
    /// Decides the cause only when the stream ends without a terminal event (the agent was
    /// killed while still retrying).
    Retrying(Option<u64>, String, bool),
}

/// One stdout format of an agent CLI: its terminal event, its parser, and how its error
/// events report infrastructure failures. One implementation per format, in the format's own
/// file; [`OutputFormat::parser`] lists the ones a `command` profile can choose by name, and an
/// agent CLI kind names its own (`crate::features::runner::agent_cli::AgentCli::parser`).
pub trait StreamParser: Sync {
    /// Whether an event of this `type` ends the stream.
    fn is_final_event_type(&self, event_type: &str) -> bool;

    /// The normalized trajectory of a whole stream (before error events are read).
    fn parse_events(&self, lines: &[String]) -> Trajectory;

    /// What an event of this `type` reports as an error, or `None` for ordinary events.
    fn reported(&self, _event_type: &str, _event: &Value) -> Option<Reported> {
        None
    }

    /// Whether the whole stdout is the final answer and only the exit code decides
    /// completeness (plain text: no terminal event).
    fn is_plain_text(&self) -> bool {
        false
    }

    /// Whether `line` is the format's terminal event (after which a lingering CLI is stopped).
    fn is_final_event(&self, line: &str) -> bool {
        if self.is_plain_text() {
            return false;
        }
        let Some(event) = parse_line(line) else {
            return false;
        };
        self.is_final_event_type(event.get("type").and_then(Value::as_str).unwrap_or(""))
    }

    /// Parse a whole stream; an infrastructure failure the agent reported in its error events
    /// (see [`reported_infrastructure`]) makes the trajectory incomplete with that cause.
    fn parse(&self, lines: &[String]) -> Trajectory {
        let mut trajectory = self.parse_events(lines);
        if let Some((cause, message)) = reported_infrastructure(self, lines) {
            trajectory.set_infrastructure_error(cause, &message);
        }
        trajectory
    }
}

/// A JSON-lines stream format, as data: the frame every agent-CLI parser shares (reading the
/// lines, decoding each as JSON, finding the terminal event by its `type`, typing the error
/// events) is [`StreamParser`]'s, written once; a format gives its terminal event types, its
/// fold of the decoded events into a trajectory ([`events`] and the helpers below), and what its
/// error events report. One `static` per format, in the format's own file.
pub struct JsonLines {
    /// The event types that end the stream.
    pub final_events: &'static [&'static str],
    /// The normalized trajectory of a whole stream (before error events are read).
    pub fold: fn(&[String]) -> Trajectory,
    /// What an event of this `type` reports as an error, or `None` for ordinary events.
    pub reported: fn(&str, &Value) -> Option<Reported>,
}

impl StreamParser for JsonLines {
    fn is_final_event_type(&self, event_type: &str) -> bool {
        self.final_events.contains(&event_type)
    }

    fn parse_events(&self, lines: &[String]) -> Trajectory {
        (self.fold)(lines)
    }

    fn reported(&self, event_type: &str, event: &Value) -> Option<Reported> {
        (self.reported)(event_type, event)
    }
}

/// The event's `timestamp` (RFC 3339), when it has one.
pub(crate) fn timestamp(event: &Value) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    str_field(event, "timestamp").and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
}

/// Mark a stream that ended without its terminal event incomplete: "the stream ended without
/// {what}".
pub(crate) fn ended_without(trajectory: &mut Trajectory, what: &str) {
    trajectory.status = crate::values::trajectory::TrajectoryStatus::Incomplete {
        reason: format!("the stream ended without {what}"),
    };
}

/// Record the `tool_result` block of a Claude-shaped stream (Claude Code, Qwen Code) answering
/// call `id`: a tool message; the exit code of the command the call ran (`exit_code_line`'s
/// first group in the output, else 0 unless the result is an error); the call's output and
/// error flag. Returns the call's index in `trajectory.tool_calls`, when the call was seen.
pub(crate) fn record_tool_result(
    trajectory: &mut Trajectory,
    id: &str,
    text: String,
    is_error: bool,
    calls: (
        &std::collections::HashMap<String, usize>,
        &std::collections::HashMap<String, usize>,
    ),
    exit_code_line: &regex::Regex,
) -> Option<usize> {
    let (call_index, command_of_call) = calls;
    trajectory.messages.push(Message {
        role: Role::Tool,
        content: text.clone(),
        tool_call_id: Some(id.to_string()),
    });
    if let Some(&command) = command_of_call.get(id) {
        let code = exit_code_line
            .captures(&text)
            .and_then(|c| c[1].parse::<i32>().ok());
        trajectory.commands[command].exit_code = match code {
            Some(code) => Some(code),
            None if !is_error => Some(0),
            None => None,
        };
    }
    let index = *call_index.get(id)?;
    let call = &mut trajectory.tool_calls[index];
    call.output = Some(text);
    call.is_error = is_error;
    Some(index)
}

/// Plain text: the whole stdout is the final answer; the exit code decides completeness.
pub struct PlainText;

impl StreamParser for PlainText {
    fn is_final_event_type(&self, _event_type: &str) -> bool {
        false
    }

    fn parse_events(&self, lines: &[String]) -> Trajectory {
        let mut trajectory = Trajectory::new();
        let text = lines.join("\n").trim().to_string();
        if !text.is_empty() {
            trajectory.messages.push(message(Role::Assistant, &text));
            trajectory.final_answer = Some(text);
        }
        trajectory
    }

    fn is_plain_text(&self) -> bool {
        true
    }
}

/// An HTTP status in an error event, as a number or a numeric string.
pub(crate) fn status_of(value: &Value) -> Option<u64> {
    value
        .as_u64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}

/// Subtypes of a failed `result` that end the agent's own work at one of its limits (the turn
/// limit, the spend limit): graded as they stand, not infrastructure.
const LIMIT_SUBTYPES: [&str; 2] = ["error_max_turns", "error_max_budget_usd"];

/// A failed `result` event (`is_error: true`; Claude Code and Cursor): its text (or its
/// `errors`), with the failure class Claude Code names (`api_error`) when the text names none.
/// A failure whose words name no cause is [`InfrastructureCause::AgentError`]; one that ends at
/// the agent's own limits (turns, budget) is left to the grade.
pub(crate) fn failed_result(event: &Value) -> Option<Reported> {
    if event.get("is_error").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    if str_field(event, "subtype").is_some_and(|subtype| LIMIT_SUBTYPES.contains(&subtype)) {
        return None;
    }
    let text = str_field(event, "result").unwrap_or("").to_string();
    let text = if text.is_empty() {
        event
            .get("errors")
            .map(Value::to_string)
            .unwrap_or_default()
    } else {
        text
    };
    let text = match str_field(event, "api_error") {
        Some(class) if InfrastructureCause::from_error_text(&text).is_none() => {
            format!("{text} ({class})")
        }
        _ => text,
    };
    Some(Reported::Fatal(
        event.get("api_error_status").and_then(status_of),
        text,
        Some(InfrastructureCause::AgentError),
    ))
}

/// The infrastructure failure an agent reported in its own error events, with its message:
/// each format's [`StreamParser::reported`] reads its error events (Claude Code's failed
/// `result` and `api_retry` notices, Codex `turn.failed` and `Reconnecting…`, Gemini CLI's
/// failed `result` and `error` events, OpenCode and Goose `error` events, Cursor's failed
/// `result`, Copilot CLI `session.error` and `model.call_failure`, Qwen Code's failed
/// `result`). The HTTP status decides when the event carries one, else the message's wording
/// ([`InfrastructureCause::from_error_text`]), else the cause the event's own error type names
/// (or, after a retried call whose connection failed, `api_unreachable`). Messages of ordinary
/// agent failures (turn limit, tool errors) name no cause and are left alone.
pub fn reported_infrastructure<P: StreamParser + ?Sized>(
    format: &P,
    lines: &[String],
) -> Option<(InfrastructureCause, String)> {
    let mut found: Option<(InfrastructureCause, String)> = None;
    let mut consider =
        |status: Option<u64>, message: String, named: Option<InfrastructureCause>| {
            let cause = InfrastructureCause::of_error(status, &message).or(named);
            if let Some(cause) = cause {
                // The last reported failure is the one that ended the run, but a failure
                // whose words name no cause never hides one that did (Claude Code repeats an
                // API error in its failed `result`).
                let hides_named = cause == InfrastructureCause::AgentError
                    && found
                        .as_ref()
                        .is_some_and(|(seen, _)| *seen != InfrastructureCause::AgentError);
                if !hides_named {
                    found = Some((cause, message));
                }
            }
        };
    // A CLI killed (by the trial timeout) while it was still retrying never reports a final
    // failure: its last retry notice names the cause (Codex `Reconnecting... waiting for network
    // (Connection failed: error sending request)` forever when the host is unreachable; Claude
    // Code `system/api_retry` with `error_status`).
    let mut pending_retry: Option<(Option<u64>, String)> = None;
    // Whether a retried call failed to connect at all (Copilot CLI `failureKind: transport`).
    let mut connection_failed = false;
    let mut finished = false;
    // Only lines that can be error or terminal events are parsed a second time.
    for line in lines.iter().filter(|line| {
        line.contains("rror") || line.contains("retry") || format.is_final_event(line)
    }) {
        let Some(event) = parse_line(line) else {
            continue;
        };
        let kind = str_field(&event, "type").unwrap_or("");
        if format.is_final_event_type(kind) {
            finished = true;
        }
        match format.reported(kind, &event) {
            Some(Reported::Fatal(code, message, named)) => {
                let named =
                    named.or(connection_failed.then_some(InfrastructureCause::ApiUnreachable));
                consider(code, message, named);
            }
            Some(Reported::Retrying(code, message, transport)) => {
                connection_failed |= transport;
                pending_retry = Some((code, message));
            }
            None => {}
        }
    }
    if found.is_none()
        && !finished
        && let Some((code, message)) = pending_retry
    {
        let cause = InfrastructureCause::of_error(code, &message)
            .or(connection_failed.then_some(InfrastructureCause::ApiUnreachable));
        if let Some(cause) = cause {
            return Some((cause, message));
        }
    }
    found
}

/// A stdout line as a JSON object, or `None` for anything else.
pub(crate) fn parse_line(line: &str) -> Option<Value> {
    let trimmed = line.trim();
    if !trimmed.starts_with('{') {
        return None;
    }
    serde_json::from_str::<Value>(trimmed)
        .ok()
        .filter(Value::is_object)
}

/// Iterate the JSON object lines of a stream.
pub(crate) fn events(lines: &[String]) -> impl Iterator<Item = Value> + '_ {
    lines.iter().filter_map(|line| parse_line(line))
}

pub(crate) fn message(role: Role, content: &str) -> Message {
    Message {
        role,
        content: content.to_string(),
        tool_call_id: None,
    }
}

pub(crate) fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

pub(crate) fn u64_field(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

/// Tool output as text: strings as they are, text blocks joined, anything else as JSON.
pub(crate) fn output_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|block| match block.get("text").and_then(Value::as_str) {
                Some(text) => text.to_string(),
                None => output_text(block),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

pub(crate) fn new_call(id: &str, name: &str, input: Value) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        input,
        output: None,
        is_error: false,
        duration_s: None,
    }
}

/// What the shared detection pass needs to know about the trial.
#[derive(Debug, Clone, Copy)]
pub struct SkillContext<'a> {
    /// The trial's workspace (relative paths resolve against it).
    pub workspace: &'a Path,
    /// The staged skills (target and decoys).
    pub skills: &'a [StagedSkill],
}

/// Dedicated skill tools and the input keys that may name the skill (first present wins):
/// Claude Code `Skill {skill}`, Gemini CLI `activate_skill {name}`, OpenCode `skill {name}`,
/// Copilot CLI and Qwen Code `skill {skill}`, Goose `load_skill {name}`.
pub(crate) const SKILL_TOOLS: &[(&str, &[&str])] = &[
    ("Skill", &["skill"]),
    ("activate_skill", &["name"]),
    ("skill", &["name", "skill"]),
    ("load_skill", &["name"]),
    ("skills__load_skill", &["name"]),
];
/// File-read tools.
pub(crate) const READ_TOOLS: &[&str] = &[
    "Read",
    "read_file",
    "read",
    "readToolCall",
    "read_many_files",
    "view",
];
/// File-write tools.
pub(crate) const WRITE_TOOLS: &[&str] = &[
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "write_file",
    "replace",
    "write",
    "edit",
    "create",
    "writeToolCall",
    "editToolCall",
    "file_change",
];
/// Shell tools.
pub(crate) const SHELL_TOOLS: &[&str] = &[
    "Bash",
    "run_shell_command",
    "bash",
    "shell",
    "shellToolCall",
    "command_execution",
    "developer__shell",
];
const PATH_KEYS: &[&str] = &["file_path", "filePath", "absolute_path", "path"];

/// The path argument of a file tool call.
pub(crate) fn path_argument(input: &Value) -> Option<String> {
    PATH_KEYS
        .iter()
        .find_map(|key| input.get(*key).and_then(Value::as_str))
        .map(str::to_string)
}

/// The command of a shell tool call (string, or argv joined by spaces).
pub(crate) fn command_argument(input: &Value) -> Option<String> {
    match input.get("command")? {
        Value::String(command) => Some(command.clone()),
        Value::Array(argv) => Some(
            argv.iter()
                .map(|a| {
                    a.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| a.to_string())
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// Lexically normalize `path` resolved against `base` (no file-system access).
pub(crate) fn normalize(base: &Path, path: &str) -> PathBuf {
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        base.join(path)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` shown relative to the workspace when inside it.
fn relative_to(workspace: &Path, path: &Path) -> String {
    path.strip_prefix(workspace)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// Whether two paths name the same file (lexically, or after resolving symbolic links).
fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// How the skill's folder may be written in a command: absolute, canonical, workspace-relative.
fn skill_dir_spellings(workspace: &Path, skill: &StagedSkill) -> Vec<String> {
    let mut spellings = vec![skill.dir.display().to_string()];
    if let Ok(canonical) = skill.dir.canonicalize() {
        spellings.push(canonical.display().to_string());
    }
    if let Ok(relative) = skill.dir.strip_prefix(workspace) {
        spellings.push(relative.display().to_string());
    }
    spellings.sort();
    spellings.dedup();
    spellings
}

/// The skill script a shell command runs, as `(skill index, "scripts/<file>")`.
fn script_in_command(context: &SkillContext<'_>, command: &str) -> Option<(usize, String)> {
    for (index, skill) in context.skills.iter().enumerate() {
        for spelling in skill_dir_spellings(context.workspace, skill) {
            let needle = format!("{spelling}/scripts/");
            if let Some(position) = command.find(&needle) {
                let rest = &command[position + needle.len()..];
                let file: String = rest
                    .chars()
                    .take_while(|c| {
                        !c.is_whitespace() && !matches!(c, '\'' | '"' | ';' | '&' | '|' | ')')
                    })
                    .collect();
                if !file.is_empty() {
                    return Some((index, format!("scripts/{file}")));
                }
            }
        }
    }
    None
}

/// Whether a shell command reads the skill's `SKILL.md`.
///
/// Only a *read* counts: the file is an argument of a reading program (`cat`, `head`, `tail`,
/// `less`, `more`, `bat`, `nl`, `sed` without `-i`, `awk`), or the input of a `<` redirection,
/// in any simple command of the line (also inside `bash -c '…'`). A command that only
/// *mentions* the path (`echo`, `grep` of another file, `ls`, `cp`) is not an activation.
fn command_reads_skill(context: &SkillContext<'_>, skill: &StagedSkill, command: &str) -> bool {
    if !command.contains("SKILL.md") {
        return false;
    }
    let mut targets: Vec<String> = skill_dir_spellings(context.workspace, skill)
        .iter()
        .map(|spelling| format!("{spelling}/SKILL.md"))
        .collect();
    targets.push(format!("skills/{}/SKILL.md", skill.name));
    let is_skill_file = |word: &str| targets.iter().any(|target| word.ends_with(target.as_str()));
    shell_reads(command, &is_skill_file, 0)
}

/// Programs whose file arguments are read.
const READING_PROGRAMS: &[&str] = &[
    "cat", "head", "tail", "less", "more", "bat", "batcat", "nl", "sed", "awk", "gawk", "view",
];

/// Whether a simple command of `line` reads a file `is_file` accepts (see
/// [`command_reads_skill`]). `depth` bounds `bash -c` nesting.
fn shell_reads(line: &str, is_file: &dyn Fn(&str) -> bool, depth: usize) -> bool {
    let separated = line
        .replace("&&", "\n")
        .replace("||", "\n")
        .replace([';', '|', '(', ')', '`', '&'], "\n");
    separated.lines().any(|segment| {
        let words: Vec<String> = segment
            .split_whitespace()
            .take_while(|word| !word.starts_with('#'))
            .map(|word| word.trim_matches(|c| c == '"' || c == '\'').to_string())
            .collect();
        // A `<` redirection from the file is a read, whatever the program.
        let redirected = words.iter().enumerate().any(|(index, word)| {
            (word == "<" && words.get(index + 1).is_some_and(|next| is_file(next)))
                || word
                    .strip_prefix('<')
                    .is_some_and(|rest| !rest.is_empty() && is_file(rest))
        });
        if redirected {
            return true;
        }
        let mut rest = words
            .iter()
            .skip_while(|word| {
                (word.contains('=') && !word.starts_with('-'))
                    || matches!(
                        word.as_str(),
                        "sudo" | "env" | "command" | "time" | "nice" | "nohup" | "exec"
                    )
            })
            .map(String::as_str);
        let Some(program) = rest.next() else {
            return false;
        };
        let program = program.rsplit('/').next().unwrap_or(program);
        let arguments: Vec<&str> = rest.collect();
        if matches!(program, "bash" | "sh" | "zsh" | "dash") && depth < 3 {
            if let Some(position) = arguments
                .iter()
                .position(|a| a.starts_with('-') && !a.starts_with("--") && a.ends_with('c'))
            {
                return shell_reads(&arguments[position + 1..].join(" "), is_file, depth + 1);
            }
            return false;
        }
        if !READING_PROGRAMS.contains(&program) {
            return false;
        }
        if program == "sed"
            && arguments
                .iter()
                .any(|a| a.starts_with("-i") || *a == "--in-place")
        {
            return false;
        }
        arguments.iter().any(|argument| is_file(argument))
    })
}

/// Fill `skill_activations`, `script_runs`, `files_read` and `files_written` from the tool calls
/// and commands. Every activation is recorded, target and decoys alike, with how it was seen;
/// a skill-tool call whose result was an error (or that never got a result) counts as not
/// activated, with the reason kept.
pub fn detect(trajectory: &mut Trajectory, context: SkillContext<'_>) {
    let mut activations = Vec::new();
    let mut files_read = Vec::new();
    let mut files_written = Vec::new();
    let mut script_runs = Vec::new();
    let find_skill = |name: &str| context.skills.iter().find(|s| s.name == name);
    for (index, call) in trajectory.tool_calls.iter().enumerate() {
        let name = call.name.as_str();
        if let Some((_, keys)) = SKILL_TOOLS.iter().find(|(tool, _)| *tool == name) {
            let requested = keys
                .iter()
                .find_map(|key| call.input.get(*key).and_then(Value::as_str))
                .unwrap_or("");
            // Plugin skills are `plugin:skill`; Goose accepts `skill/file` for bundled files.
            let requested = requested.rsplit(':').next().unwrap_or(requested);
            let requested = requested.split('/').next().unwrap_or(requested).trim();
            let skill = find_skill(requested);
            let reason = if call.output.is_none() {
                Some("the skill tool call got no result".to_string())
            } else if call.is_error {
                Some(format!(
                    "the skill tool returned an error: {}",
                    truncate(call.output.as_deref().unwrap_or(""), 300)
                ))
            } else {
                None
            };
            activations.push(SkillActivation {
                skill: requested.to_string(),
                evidence: ActivationEvidence::SkillTool,
                ok: reason.is_none(),
                tool_call_index: Some(index),
                target: skill.is_some_and(|s| s.target),
                reason,
            });
            continue;
        }
        if READ_TOOLS.contains(&name) {
            if let Some(path) = path_argument(&call.input) {
                let resolved = normalize(context.workspace, &path);
                files_read.push(relative_to(context.workspace, &resolved));
                for skill in context.skills {
                    // A skill activated and then its SKILL.md read counts once.
                    let already = activations
                        .iter()
                        .chain(trajectory.skill_activations.iter())
                        .any(|a: &SkillActivation| a.ok && a.skill == skill.name);
                    if !already && same_file(&resolved, &skill.dir.join("SKILL.md")) {
                        activations.push(SkillActivation {
                            skill: skill.name.clone(),
                            evidence: ActivationEvidence::FileRead,
                            ok: !call.is_error,
                            tool_call_index: Some(index),
                            target: skill.target,
                            reason: call
                                .is_error
                                .then(|| "the read of SKILL.md failed".to_string()),
                        });
                    }
                }
            }
            continue;
        }
        if WRITE_TOOLS.contains(&name) {
            if let Some(path) = path_argument(&call.input) {
                files_written.push(relative_to(
                    context.workspace,
                    &normalize(context.workspace, &path),
                ));
            }
            if let Some(changes) = call.input.get("changes").and_then(Value::as_array) {
                for change in changes {
                    if let Some(path) = path_argument(change) {
                        files_written.push(relative_to(
                            context.workspace,
                            &normalize(context.workspace, &path),
                        ));
                    }
                }
            }
            continue;
        }
        if SHELL_TOOLS.contains(&name)
            && let Some(command) = command_argument(&call.input)
        {
            for skill in context.skills {
                let already = activations
                    .iter()
                    .chain(trajectory.skill_activations.iter())
                    .any(|a: &SkillActivation| a.ok && a.skill == skill.name);
                if !already && command_reads_skill(&context, skill, &command) {
                    activations.push(SkillActivation {
                        skill: skill.name.clone(),
                        evidence: ActivationEvidence::ShellCommand,
                        ok: !call.is_error,
                        tool_call_index: Some(index),
                        target: skill.target,
                        reason: call
                            .is_error
                            .then(|| "the shell read of SKILL.md failed".to_string()),
                    });
                }
            }
            if let Some((skill_index, script)) = script_in_command(&context, &command) {
                let exit_code = trajectory
                    .commands
                    .iter()
                    .find(|c| c.command == command)
                    .and_then(|c| c.exit_code);
                let skill = &context.skills[skill_index];
                script_runs.push(ScriptRun {
                    skill: skill.name.clone(),
                    target: skill.target,
                    script,
                    command: command.clone(),
                    exit_code,
                    ok: !call.is_error && exit_code.is_none_or(|code| code == 0),
                    tool_call_index: Some(index),
                });
            }
        }
    }
    trajectory.skill_activations.extend(activations);
    trajectory.script_runs.extend(script_runs);
    for file in files_read {
        if !trajectory.files_read.contains(&file) {
            trajectory.files_read.push(file);
        }
    }
    for file in files_written {
        if !trajectory.files_written.contains(&file) {
            trajectory.files_written.push(file);
        }
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// Lines of a JSONL fixture.
    pub(crate) fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    /// `text` parsed by `parse`, with skill activations detected for the [`staged`] skills under
    /// `skills_dir` of a workspace at `/task`.
    pub(crate) fn parse_and_detect(
        parse: impl FnOnce(&[String]) -> Trajectory,
        skills_dir: &str,
        text: &str,
    ) -> Trajectory {
        let workspace = Path::new("/task");
        let skills = staged(workspace, skills_dir);
        let mut trajectory = parse(&lines(text));
        detect(
            &mut trajectory,
            SkillContext {
                workspace,
                skills: &skills,
            },
        );
        trajectory
    }

    /// The trajectory's skill activations as `(skill, evidence, ok, target)` rows.
    pub(crate) fn activation_rows(
        trajectory: &Trajectory,
    ) -> Vec<(&str, ActivationEvidence, bool, bool)> {
        trajectory
            .skill_activations
            .iter()
            .map(|a| (a.skill.as_str(), a.evidence, a.ok, a.target))
            .collect()
    }

    /// A workspace with `release-notes` (target) and `csv-tools` (decoy) staged under `skills_dir`.
    pub(crate) fn staged(workspace: &Path, skills_dir: &str) -> Vec<StagedSkill> {
        vec![
            StagedSkill {
                name: "csv-tools".to_string(),
                dir: workspace.join(skills_dir).join("csv-tools"),
                target: false,
                skill_md: None,
            },
            StagedSkill {
                name: "release-notes".to_string(),
                dir: workspace.join(skills_dir).join("release-notes"),
                target: true,
                skill_md: None,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    /// Error streams in the shapes the real CLIs print (captured from Claude Code 2.1.332, Codex
    /// 0.171.0, Gemini CLI and OpenCode against an unreachable host and a loopback server
    /// answering 401/429/529; values invented), plus Cursor's and Goose's documented shapes.
    #[test]
    fn agent_reported_infrastructure_errors_are_recognised() {
        use InfrastructureCause as Cause;
        let cases: &[(OutputFormat, &str, Cause, &str)] = &[
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}
{"type":"system","subtype":"api_retry","attempt":10,"max_retries":10,"retry_delay_ms":39623,"error_status":null,"error":"unknown","session_id":"s1"}
{"type":"assistant","message":{"id":"a1","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)"}]},"session_id":"s1","error":"server_error","is_api_error_message":true,"api_error":"connection_failed"}
{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"api_error":"connection_failed","terminal_reason":"api_error","result":"API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)","num_turns":1,"session_id":"s1","total_cost_usd":0}"#,
                Cause::ApiUnreachable,
                "ENOTFOUND",
            ),
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":612,"error_status":401,"error":"authentication_failed","session_id":"s2"}
{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"api_error_type":"authentication_error","terminal_reason":"api_error","result":"Invalid API key · Fix external API key","session_id":"s2"}"#,
                Cause::AuthFailure,
                "Invalid API key",
            ),
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"api_error_type":"overloaded_error","result":"API Error: Repeated 529 Overloaded errors","session_id":"s3"}"#,
                Cause::Overloaded,
                "529",
            ),
            (
                OutputFormat::CodexJson,
                r#"{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/5 (unexpected status 401 Unauthorized: Incorrect API key provided: sk-test***., url: http://127.0.0.1:9/v1/responses)"}
{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Incorrect API key provided: sk-test***., url: http://127.0.0.1:9/v1/responses"}}"#,
                Cause::AuthFailure,
                "401 Unauthorized",
            ),
            (
                OutputFormat::CodexJson,
                r#"{"type":"turn.failed","error":{"message":"stream disconnected before completion: error sending request for url (http://api.invalid/v1/responses)"}}"#,
                Cause::ApiUnreachable,
                "error sending request",
            ),
            (
                // Codex 0.171.0 with no route to the host retries forever; the trial timeout
                // ends it.
                OutputFormat::CodexJson,
                r#"{"type":"thread.started","thread_id":"t2"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}
{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}"#,
                Cause::ApiUnreachable,
                "waiting for network",
            ),
            (
                // Claude Code killed by the trial timeout while retrying a 529.
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"system","subtype":"init","session_id":"s4","model":"m"}
{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2044,"error_status":529,"error":"overloaded","session_id":"s4"}"#,
                Cause::Overloaded,
                "HTTP 529",
            ),
            (
                OutputFormat::GeminiStreamJson,
                r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: exception TypeError: fetch failed sending request]"},"stats":{}}"#,
                Cause::ApiUnreachable,
                "fetch failed",
            ),
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"}"#,
                Cause::RateLimited,
                "Request rejected (429)",
            ),
            (
                OutputFormat::CodexJson,
                r#"{"type":"turn.failed","error":{"message":"unexpected status 529 <unknown status code>: The server is overloaded, url: http://127.0.0.1:9/v1/responses"}}"#,
                Cause::Overloaded,
                "overloaded",
            ),
            (
                OutputFormat::GeminiStreamJson,
                r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: Resource has been exhausted (e.g. check quota).]\nPlease wait and try again later."},"stats":{}}"#,
                Cause::RateLimited,
                "exhausted",
            ),
            (
                OutputFormat::OpencodeJson,
                r#"{"type":"error","sessionID":"ses_3","error":{"name":"APIError","data":{"message":"The server is overloaded","statusCode":529,"isRetryable":true}}}"#,
                Cause::Overloaded,
                "overloaded",
            ),
            (
                OutputFormat::CodexJson,
                r#"{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}"#,
                Cause::RateLimited,
                "429",
            ),
            (
                OutputFormat::GeminiStreamJson,
                r#"{"type":"init","timestamp":"2026-12-01T13:09:42.735Z","session_id":"g1","model":"gemini-2.5-pro"}
{"type":"result","timestamp":"2026-12-01T13:09:42.925Z","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":401,\"message\":\"API key not valid. Please pass a valid API key.\",\"status\":\"UNAUTHENTICATED\"}}]"},"stats":{"total_tokens":0}}"#,
                Cause::AuthFailure,
                "API key not valid",
            ),
            (
                OutputFormat::GeminiStreamJson,
                r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check quota).\",\"status\":\"RESOURCE_EXHAUSTED\"}}]"},"stats":{}}"#,
                Cause::RateLimited,
                "RESOURCE_EXHAUSTED",
            ),
            (
                OutputFormat::OpencodeJson,
                r#"{"type":"error","timestamp":1796130589349,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Incorrect API key provided: sk-test***.","statusCode":401,"isRetryable":false,"responseBody":"{\"error\": {\"code\": \"invalid_api_key\"}}"}}}"#,
                Cause::AuthFailure,
                "APIError: Incorrect API key",
            ),
            (
                OutputFormat::OpencodeJson,
                r#"{"type":"error","timestamp":1,"sessionID":"ses_2","error":{"name":"APIError","data":{"message":"Cannot connect to API: Unable to connect. Is the computer able to access the url?","isRetryable":true,"metadata":{"url":"http://api.invalid/v1/chat/completions"}}}}"#,
                Cause::ApiUnreachable,
                "Unable to connect",
            ),
            (
                OutputFormat::CursorStreamJson,
                r#"{"type":"result","subtype":"error","is_error":true,"result":"Connection error: getaddrinfo ENOTFOUND api2.cursor.sh","session_id":"c1"}"#,
                Cause::ApiUnreachable,
                "ENOTFOUND",
            ),
            (
                OutputFormat::GooseStreamJson,
                r#"{"type":"error","error":"Request failed: Rate limit exceeded (429 Too Many Requests)"}"#,
                Cause::RateLimited,
                "Rate limit",
            ),
            // Issue 30: the CLI's own words for a missing login, a request timeout, a spent
            // credit balance (any status), and an error that names no cause.
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","session_id":"s4"}"#,
                Cause::AuthFailure,
                "Not logged in",
            ),
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: Request timed out.","session_id":"s5"}"#,
                Cause::Timeout,
                "timed out",
            ),
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"Credit balance is too low","session_id":"s6"}"#,
                Cause::QuotaExhausted,
                "Credit balance",
            ),
            (
                OutputFormat::CodexJson,
                r#"{"type":"turn.failed","error":{"message":"unexpected status 429 Too Many Requests: You exceeded your current quota, please check your plan and billing details. (insufficient_quota)"}}"#,
                Cause::QuotaExhausted,
                "insufficient_quota",
            ),
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"Something unexpected happened in the session","session_id":"s7"}"#,
                Cause::AgentError,
                "Something unexpected",
            ),
            (
                OutputFormat::CodexJson,
                r#"{"type":"turn.failed","error":{"message":"the model produced an invalid patch"}}"#,
                Cause::AgentError,
                "invalid patch",
            ),
            (
                OutputFormat::QwenStreamJson,
                r#"{"type":"result","subtype":"error_during_execution","is_error":true,"error":{"message":"weird failure"},"session_id":"q"}"#,
                Cause::AgentError,
                "weird failure",
            ),
            // A named cause is not hidden by the failed result that repeats it in other words.
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"assistant","message":{"id":"a","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 500 Internal server error"}]},"is_api_error_message":true,"error":"server_error"}
{"type":"result","subtype":"success","is_error":true,"result":"session ended","session_id":"s8"}"#,
                Cause::ServerError,
                "500",
            ),
        ];
        for (format, stream, cause, needle) in cases {
            let trajectory = format.parse(&lines(stream));
            let failure = trajectory
                .infrastructure_error
                .as_ref()
                .unwrap_or_else(|| panic!("{format:?}: nothing recognised in {stream}"));
            assert_eq!(failure.cause, *cause, "{format:?}: {}", failure.message);
            assert!(failure.message.contains(needle), "{}", failure.message);
            assert!(
                matches!(&trajectory.status, crate::values::trajectory::TrajectoryStatus::Incomplete { reason } if reason.contains(needle))
            );
        }
        // Ordinary agent failures and answers that merely talk about errors name no cause.
        let ordinary: &[(OutputFormat, &str)] = &[
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"result","subtype":"error_max_turns","is_error":true,"result":"","session_id":"s"}"#,
            ),
            (
                OutputFormat::ClaudeStreamJson,
                r#"{"type":"result","subtype":"success","is_error":false,"result":"The API returned 401 Unauthorized and a rate limit error; fix the key.","session_id":"s"}"#,
            ),
            (
                OutputFormat::CodexJson,
                r#"{"type":"error","message":"Reconnecting... 1/5 (unexpected status 503)"}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}"#,
            ),
            (
                OutputFormat::GeminiStreamJson,
                r#"{"type":"error","severity":"warning","message":"Loop detection disabled"}
{"type":"result","status":"success","stats":{}}"#,
            ),
        ];
        for (format, stream) in ordinary {
            let trajectory = format.parse(&lines(stream));
            assert_eq!(trajectory.infrastructure_error, None, "{stream}");
        }
    }

    #[test]
    fn non_json_lines_are_skipped_and_text_format_takes_everything() {
        assert!(parse_line("Loading…").is_none());
        assert!(parse_line("[1,2]").is_none());
        let trajectory = OutputFormat::Text.parse(&lines("Aye!\nsecond line\n"));
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("Aye!\nsecond line")
        );
    }

    #[test]
    fn only_shell_reads_of_skill_md_are_activations_not_mentions() {
        let is_file = |word: &str| word.ends_with(".claude/skills/x/SKILL.md");
        for read in [
            "cat .claude/skills/x/SKILL.md",
            "head -n 40 /task/.claude/skills/x/SKILL.md",
            "sed -n '1,80p' .claude/skills/x/SKILL.md",
            "cd /task && less .claude/skills/x/SKILL.md",
            "/bin/bash -lc 'cat .claude/skills/x/SKILL.md'",
            "while read l; do echo $l; done < .claude/skills/x/SKILL.md",
            "LC_ALL=C tail .claude/skills/x/SKILL.md | wc -l",
        ] {
            assert!(shell_reads(read, &is_file, 0), "{read}");
        }
        for mention in [
            "echo .claude/skills/x/SKILL.md",
            "grep -n '.claude/skills/x/SKILL.md' README.md",
            "ls -l .claude/skills/x/SKILL.md",
            "echo see .claude/skills/x/SKILL.md > notes.txt",
            "sed -i 's/a/b/' .claude/skills/x/SKILL.md",
            "cat notes.txt # .claude/skills/x/SKILL.md",
            "bash -c 'echo .claude/skills/x/SKILL.md'",
        ] {
            assert!(!shell_reads(mention, &is_file, 0), "{mention}");
        }
    }

    #[test]
    fn reads_outside_the_staged_skill_do_not_count() {
        let workspace = Path::new("/task");
        let skills = staged(workspace, ".claude/skills");
        let mut trajectory = Trajectory::new();
        trajectory.tool_calls.push(new_call(
            "1",
            "Read",
            serde_json::json!({"file_path": "/elsewhere/release-notes/SKILL.md"}),
        ));
        trajectory.tool_calls.push(new_call(
            "2",
            "Read",
            serde_json::json!({"file_path": "sub/../.claude/skills/csv-tools/SKILL.md"}),
        ));
        trajectory.tool_calls[0].output = Some(String::new());
        trajectory.tool_calls[1].output = Some(String::new());
        detect(
            &mut trajectory,
            SkillContext {
                workspace,
                skills: &skills,
            },
        );
        assert_eq!(trajectory.skill_activations.len(), 1);
        let activation = &trajectory.skill_activations[0];
        assert_eq!(activation.skill, "csv-tools");
        assert!(!activation.target);
        assert_eq!(activation.evidence, ActivationEvidence::FileRead);
        assert_eq!(
            trajectory.files_read,
            vec![
                "/elsewhere/release-notes/SKILL.md".to_string(),
                ".claude/skills/csv-tools/SKILL.md".to_string()
            ]
        );
    }
}
