//! Codex CLI rollout files: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, one
//! `{timestamp, type, payload}` object a line. `type` is `session_meta` (`payload.id`, `cwd`),
//! `turn_context` (`payload.model`), `response_item` (`payload.type`: `message` with `role` and
//! `content[{type: input_text|output_text, text}]`, `function_call {name, arguments, call_id}`,
//! `function_call_output {call_id, output}`, `custom_tool_call` (`apply_patch`),
//! `custom_tool_call_output`, `local_shell_call`, `reasoning`, `web_search_call`), `event_msg`
//! (`payload.type`: `user_message`, `agent_message`, `token_count` with cumulative
//! `info.total_token_usage`, `turn_aborted`, …) or `compacted`.
//!
//! The exec `--json` stream has another shape, so this reader builds the trajectory itself, with
//! the tool names the `codex` stream parser gives: shell calls become `command_execution`
//! (`input.command`), patches `file_change` (`input.changes[].path`). Turns start at
//! `event_msg/user_message` (at user `message` items that are not `<environment_context>` or
//! `<user_instructions>` boilerplate when a file has no `user_message` events); usage per turn is
//! the difference of the cumulative totals; `turn_aborted` marks the turn interrupted.
//!
//! A turn ends at its own completion event, `event_msg/task_complete` (`turn_complete` in newer
//! files; codex-rs `EventMsg::TurnComplete`) or `turn_aborted`: the time until the next prompt is
//! the user's, not the agent's. Older rollouts do not persist the completion event; there a turn
//! ends at its last line before the next prompt's lines (`turn_context`, user `message`,
//! `user_message`, `task_started`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    HistoryError, HistoryHost, HistoryReader, HistorySession, ReadReport, SessionRead, Turn,
    files_under, parse_time,
};
use crate::features::runner::parsers::{message, new_call, str_field, u64_field};
use crate::values::trajectory::{CommandRun, Role, Trajectory, Usage};

/// The Codex reader.
#[derive(Debug, Clone, Copy)]
pub struct CodexReader;

const KNOWN_RESPONSE_ITEMS: &[&str] = &[
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "reasoning",
    "web_search_call",
];

const KNOWN_EVENTS: &[&str] = &[
    "user_message",
    "agent_message",
    "token_count",
    "agent_reasoning",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "task_started",
    "task_complete",
    "turn_started",
    "turn_complete",
    "turn_aborted",
    "exec_command_begin",
    "exec_command_end",
    "exec_command_output_delta",
    "patch_apply_begin",
    "patch_apply_end",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
    "turn_diff",
    "error",
    "stream_error",
    "background_event",
    "plan_update",
    "session_configured",
    "entered_review_mode",
    "exited_review_mode",
];

/// User `message` items Codex writes itself.
fn is_boilerplate(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with("<environment_context>")
        || text.starts_with("<user_instructions>")
        || text.starts_with("# AGENTS.md instructions")
}

fn message_text(payload: &Value) -> String {
    payload["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| str_field(part, "text"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Total usage from a `token_count` event's cumulative totals.
fn total_usage(payload: &Value) -> Option<Usage> {
    let total = payload.get("info")?.get("total_token_usage")?;
    Some(Usage {
        input_tokens: u64_field(total, "input_tokens"),
        output_tokens: u64_field(total, "output_tokens"),
        cached_tokens: u64_field(total, "cached_input_tokens"),
        cache_creation_tokens: None,
        cost_usd: None,
    })
}

fn minus(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a.map(|a| a.saturating_sub(b.unwrap_or(0)))
}

/// Files an `apply_patch` patch touches.
fn patched_files(patch: &str) -> Vec<Value> {
    patch
        .lines()
        .filter_map(|line| {
            ["*** Update File: ", "*** Add File: ", "*** Delete File: "]
                .iter()
                .find_map(|prefix| line.strip_prefix(prefix))
        })
        .map(|path| serde_json::json!({"path": path.trim()}))
        .collect()
}

/// A function call's arguments: a JSON string in the file, parsed when it parses.
fn arguments(payload: &Value) -> Value {
    match payload.get("arguments") {
        Some(Value::String(text)) => {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        }
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

/// A shell call's command: `command` (argv or string) or `cmd`.
fn shell_command(input: &Value) -> Option<String> {
    crate::features::runner::parsers::command_argument(input)
        .or_else(|| str_field(input, "cmd").map(str::to_string))
}

/// A function output: plain text, or a JSON string `{output, metadata: {exit_code}}`.
fn function_output(payload: &Value) -> (String, Option<i32>) {
    let raw = match payload.get("output") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Object(object)) => {
            return (
                object
                    .get("content")
                    .or_else(|| object.get("output"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                None,
            );
        }
        Some(other) => other.to_string(),
        None => String::new(),
    };
    if let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(&raw) {
        let code = parsed["metadata"]["exit_code"].as_i64().map(|c| c as i32);
        let text = str_field(&parsed, "output").unwrap_or("").to_string();
        return (text, code);
    }
    (raw, None)
}

impl HistoryReader for CodexReader {
    fn session_files(&self, folder: &Path) -> Result<Vec<PathBuf>, HistoryError> {
        files_under(folder, 4, "jsonl", &|path| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"))
        })
    }

    fn read_session(&self, _folder: &Path, file: &Path, report: &mut ReadReport) -> SessionRead {
        let Some(lines) = crate::features::history::read_json_lines(file, report)? else {
            return Ok(None);
        };
        let has_user_events = lines.iter().any(|l| {
            str_field(l, "type") == Some("event_msg")
                && str_field(&l["payload"], "type") == Some("user_message")
        });
        let mut trajectory = Trajectory::new();
        let mut turns: Vec<Turn> = Vec::new();
        let mut calls: HashMap<String, usize> = HashMap::new();
        let mut command_of_call: HashMap<String, usize> = HashMap::new();
        let mut id = None;
        let mut cwd = None;
        let mut started = None;
        let mut model = None;
        let mut total = Usage::default();
        let mut total_at_turn_start = Usage::default();
        // The current turn reached its own end (`task_complete` / `turn_complete` /
        // `turn_aborted`).
        let mut turn_closed = false;
        for event in &lines {
            let kind = str_field(event, "type").unwrap_or("");
            let at = str_field(event, "timestamp").and_then(parse_time);
            if started.is_none() {
                started = at;
            }
            let payload = &event["payload"];
            let inner = str_field(payload, "type").unwrap_or("");
            // Lines that open the next turn (its context, its prompt) are not part of the
            // current one; once the current turn completed or was aborted, nothing extends it.
            let opens_next_turn = kind == "turn_context"
                || (kind == "event_msg"
                    && matches!(inner, "user_message" | "task_started" | "turn_started"))
                || (kind == "response_item"
                    && inner == "message"
                    && str_field(payload, "role") == Some("user"));
            if let Some(turn) = turns.last_mut()
                && at.is_some()
                && !turn_closed
                && !opens_next_turn
            {
                turn.ended = at;
            }
            let mut start_turn = |turns: &mut Vec<Turn>, prompt: String, calls_so_far: usize| {
                if !prompt.trim().is_empty() {
                    turns.push(Turn::new(prompt.trim().to_string(), at, calls_so_far));
                    turn_closed = false;
                }
            };
            match kind {
                "session_meta" => {
                    id = str_field(payload, "id").map(str::to_string);
                    cwd = str_field(payload, "cwd").map(PathBuf::from);
                }
                "turn_context" => {
                    if let Some(name) = str_field(payload, "model") {
                        model = Some(name.to_string());
                    }
                    if cwd.is_none() {
                        cwd = str_field(payload, "cwd").map(PathBuf::from);
                    }
                }
                "compacted" => {}
                "event_msg" => match inner {
                    "user_message" => {
                        let prompt = str_field(payload, "message").unwrap_or("").to_string();
                        trajectory.messages.push(message(Role::User, &prompt));
                        total_at_turn_start = total.clone();
                        start_turn(&mut turns, prompt, trajectory.tool_calls.len());
                    }
                    "token_count" => {
                        if let Some(usage) = total_usage(payload) {
                            total = usage;
                            if let Some(turn) = turns.last_mut() {
                                turn.usage = Usage {
                                    input_tokens: minus(
                                        total.input_tokens,
                                        total_at_turn_start.input_tokens,
                                    ),
                                    output_tokens: minus(
                                        total.output_tokens,
                                        total_at_turn_start.output_tokens,
                                    ),
                                    cached_tokens: minus(
                                        total.cached_tokens,
                                        total_at_turn_start.cached_tokens,
                                    ),
                                    cache_creation_tokens: None,
                                    cost_usd: None,
                                };
                            }
                        }
                    }
                    "turn_aborted" => {
                        if let Some(turn) = turns.last_mut() {
                            turn.interrupted = true;
                        }
                        turn_closed = true;
                    }
                    // The turn's own end (`task_complete`, `turn_complete` in newer files):
                    // its time was taken above; later lines until the next prompt are idle time.
                    "task_complete" | "turn_complete" => {
                        if let Some(turn) = turns.last_mut()
                            && turn.answer.is_none()
                            && let Some(last) = str_field(payload, "last_agent_message")
                            && !last.trim().is_empty()
                        {
                            turn.answer = Some(last.trim().to_string());
                        }
                        turn_closed = true;
                    }
                    known if KNOWN_EVENTS.contains(&known) => {}
                    other => report.unknown(HistoryHost::Codex, &format!("event_msg/{other}")),
                },
                "response_item" => match inner {
                    "message" => {
                        let text = message_text(payload);
                        match str_field(payload, "role") {
                            Some("user") if !has_user_events && !is_boilerplate(&text) => {
                                trajectory.messages.push(message(Role::User, &text));
                                total_at_turn_start = total.clone();
                                start_turn(&mut turns, text, trajectory.tool_calls.len());
                            }
                            Some("assistant") => {
                                trajectory.messages.push(message(Role::Assistant, &text));
                                if !text.trim().is_empty() {
                                    trajectory.final_answer = Some(text.clone());
                                    if let Some(turn) = turns.last_mut() {
                                        turn.answer = Some(text.trim().to_string());
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                    "function_call" | "local_shell_call" | "custom_tool_call" => {
                        let call_id = str_field(payload, "call_id")
                            .or_else(|| str_field(payload, "id"))
                            .unwrap_or("")
                            .to_string();
                        let name = str_field(payload, "name").unwrap_or("");
                        let (tool, input) = if inner == "local_shell_call" {
                            let command = shell_command(&payload["action"]).unwrap_or_default();
                            (
                                "command_execution".to_string(),
                                serde_json::json!({"command": command}),
                            )
                        } else if inner == "custom_tool_call" || name == "apply_patch" {
                            let patch = str_field(payload, "input")
                                .map(str::to_string)
                                .or_else(|| {
                                    let args = arguments(payload);
                                    str_field(&args, "input").map(str::to_string)
                                })
                                .unwrap_or_default();
                            if name == "apply_patch" {
                                (
                                    "file_change".to_string(),
                                    serde_json::json!({"changes": patched_files(&patch)}),
                                )
                            } else {
                                (name.to_string(), Value::String(patch))
                            }
                        } else {
                            let args = arguments(payload);
                            match (name, shell_command(&args)) {
                                (
                                    "shell" | "container.exec" | "exec_command" | "local_shell",
                                    Some(command),
                                ) => (
                                    "command_execution".to_string(),
                                    serde_json::json!({"command": command}),
                                ),
                                _ => (name.to_string(), args),
                            }
                        };
                        if tool == "command_execution"
                            && let Some(command) = str_field(&input, "command")
                        {
                            command_of_call.insert(call_id.clone(), trajectory.commands.len());
                            trajectory.commands.push(CommandRun {
                                command: command.to_string(),
                                exit_code: None,
                            });
                        }
                        calls.insert(call_id.clone(), trajectory.tool_calls.len());
                        trajectory.tool_calls.push(new_call(&call_id, &tool, input));
                        if let Some(turn) = turns.last_mut() {
                            turn.tool_calls.end = trajectory.tool_calls.len();
                        }
                    }
                    "function_call_output" | "custom_tool_call_output" => {
                        let call_id = str_field(payload, "call_id").unwrap_or("");
                        let (output, code) = function_output(payload);
                        if let Some(&index) = calls.get(call_id) {
                            let call = &mut trajectory.tool_calls[index];
                            call.is_error = code.is_some_and(|c| c != 0);
                            call.output = Some(output.clone());
                        }
                        if let Some(&command) = command_of_call.get(call_id) {
                            trajectory.commands[command].exit_code = code;
                        }
                        trajectory
                            .messages
                            .push(crate::values::trajectory::Message {
                                role: Role::Tool,
                                content: output,
                                tool_call_id: Some(call_id.to_string()),
                            });
                    }
                    known if KNOWN_RESPONSE_ITEMS.contains(&known) => {}
                    other => report.unknown(HistoryHost::Codex, &format!("response_item/{other}")),
                },
                other => report.unknown(HistoryHost::Codex, other),
            }
        }
        trajectory.usage = total;
        trajectory.observed_model = model;
        Ok(HistorySession::of_turns(
            HistoryHost::Codex,
            file,
            id,
            (cwd, started),
            turns,
            trajectory,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::history::read_stand_in;

    const ROLLOUT: &str = r#"{"timestamp":"2026-03-03T09:00:00.000Z","type":"session_meta","payload":{"id":"0199-codex","timestamp":"2026-03-03T09:00:00.000Z","cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.60.0"}}
{"timestamp":"2026-03-03T09:00:00.100Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/dev/app</cwd>\n</environment_context>"}]}}
{"timestamp":"2026-03-03T09:00:00.200Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Write release notes since v2.2"}]}}
{"timestamp":"2026-03-03T09:00:00.200Z","type":"event_msg","payload":{"type":"user_message","message":"Write release notes since v2.2","images":[]}}
{"timestamp":"2026-03-03T09:00:00.300Z","type":"turn_context","payload":{"cwd":"/home/dev/app","approval_policy":"on-request","model":"gpt-5-codex"}}
{"timestamp":"2026-03-03T09:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cat /home/dev/.codex/skills/release-notes/SKILL.md\"],\"workdir\":\"/home/dev/app\"}","call_id":"call_1"}}
{"timestamp":"2026-03-03T09:00:02.500Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"---\\nname: release-notes\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"}}
{"timestamp":"2026-03-03T09:00:04.000Z","type":"response_item","payload":{"type":"custom_tool_call","status":"completed","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch\n*** Add File: NOTES.md\n+## v2.3\n*** End Patch"}}
{"timestamp":"2026-03-03T09:00:04.200Z","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"call_2","output":"Success. Updated the following files:\nA NOTES.md"}}
{"timestamp":"2026-03-03T09:00:05.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1200,"cached_input_tokens":800,"output_tokens":90,"total_tokens":1290}}}}
{"timestamp":"2026-03-03T09:00:06.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Wrote NOTES.md."}]}}
{"timestamp":"2026-03-03T09:00:06.100Z","type":"event_msg","payload":{"type":"mystery_event"}}
{"timestamp":"2026-03-03T09:00:06.200Z","type":"ghost_line","payload":{}}
{"timestamp":"2026-03-03T09:02:00.000Z","type":"event_msg","payload":{"type":"user_message","message":"no, that's wrong: the notes must group by component"}}
{"timestamp":"2026-03-03T09:02:05.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":2000,"cached_input_tokens":1500,"output_tokens":150,"total_tokens":2150}}}}
"#;

    #[test]
    fn reads_rollout_turns_tools_and_cumulative_usage() {
        let home = tempfile::tempdir().unwrap();
        let path = home
            .path()
            .join(".codex/sessions/2026/03/03/rollout-2026-03-03T09-00-00-0199-codex.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, ROLLOUT).unwrap();
        let report = read_stand_in(HistoryHost::Codex, home.path());
        assert_eq!(report.sessions.len(), 1, "{report:?}");
        let session = &report.sessions[0];
        assert_eq!(session.id, "0199-codex");
        assert_eq!(session.model.as_deref(), Some("gpt-5-codex"));
        assert_eq!(session.turns.len(), 2);
        let first = &session.turns[0];
        assert_eq!(first.prompt, "Write release notes since v2.2");
        assert_eq!(first.skills, vec!["release-notes"]);
        assert_eq!(first.answer.as_deref(), Some("Wrote NOTES.md."));
        assert_eq!(first.usage.input_tokens, Some(1200));
        assert_eq!(session.turns[1].usage.input_tokens, Some(800));
        assert_eq!(session.trajectory.files_written, vec!["NOTES.md"]);
        assert_eq!(session.trajectory.commands[0].exit_code, Some(0));
        assert_eq!(
            report.unknown_events.get("codex:event_msg/mystery_event"),
            Some(&1)
        );
        assert_eq!(report.unknown_events.get("codex:ghost_line"), Some(&1));
    }

    fn read_one(rollout: &str) -> HistorySession {
        let home = tempfile::tempdir().unwrap();
        let path = home
            .path()
            .join(".codex/sessions/2026/03/04/rollout-2026-03-04T10-00-00-0199-turns.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, rollout).unwrap();
        let report = read_stand_in(HistoryHost::Codex, home.path());
        report.sessions.into_iter().next().unwrap()
    }

    fn seconds(turn: &Turn) -> f64 {
        (turn.ended.unwrap() - turn.at.unwrap()).num_milliseconds() as f64 / 1000.0
    }

    #[test]
    fn a_turn_ends_at_its_task_complete_not_at_the_next_prompt() {
        // The shape codex-rs writes: task_started, the turn's items, token_count,
        // task_complete; the next prompt comes a minute later.
        let rollout = r#"{"timestamp":"2026-03-04T10:00:00.000Z","type":"session_meta","payload":{"id":"0199-turns","cwd":"/w"}}
{"timestamp":"2026-03-04T10:00:00.000Z","type":"event_msg","payload":{"type":"task_started","model_context_window":272000}}
{"timestamp":"2026-03-04T10:00:00.000Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5-codex"}}
{"timestamp":"2026-03-04T10:00:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]}}
{"timestamp":"2026-03-04T10:00:00.000Z","type":"event_msg","payload":{"type":"user_message","message":"list the files"}}
{"timestamp":"2026-03-04T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}
{"timestamp":"2026-03-04T10:00:02.300Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"a\\n\",\"metadata\":{\"exit_code\":0}}"}}
{"timestamp":"2026-03-04T10:00:04.600Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"output_tokens":10}}}}
{"timestamp":"2026-03-04T10:00:04.800Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"One file: a."}}
{"timestamp":"2026-03-04T10:00:59.700Z","type":"event_msg","payload":{"type":"task_started"}}
{"timestamp":"2026-03-04T10:00:59.700Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5-codex"}}
{"timestamp":"2026-03-04T10:00:59.700Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"thanks"}]}}
{"timestamp":"2026-03-04T10:00:59.700Z","type":"event_msg","payload":{"type":"user_message","message":"thanks"}}
{"timestamp":"2026-03-04T10:01:01.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"You're welcome."}]}}
{"timestamp":"2026-03-04T10:01:01.200Z","type":"event_msg","payload":{"type":"turn_complete","last_agent_message":"You're welcome."}}
{"timestamp":"2026-03-04T10:01:30.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":180,"output_tokens":20}}}}
"#;
        let session = read_one(rollout);
        assert_eq!(session.turns.len(), 2);
        assert_eq!(seconds(&session.turns[0]), 4.8);
        // The answer comes from task_complete when no assistant message was recorded.
        assert_eq!(session.turns[0].answer.as_deref(), Some("One file: a."));
        // `turn_complete` (newer name) closes the turn too; a late token_count still counts
        // toward its usage but not its duration.
        assert_eq!(seconds(&session.turns[1]), 1.5);
        assert_eq!(session.turns[1].usage.input_tokens, Some(80));
    }

    #[test]
    fn without_a_completion_event_a_turn_ends_at_its_last_line_before_the_next_prompt() {
        let session = read_one(ROLLOUT);
        // Last line of the first turn: the ghost line at 09:00:06.200, not the next prompt
        // (09:02:00).
        assert_eq!(seconds(&session.turns[0]), 6.0);
    }
}
