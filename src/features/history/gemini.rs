//! Gemini CLI chat recordings: `~/.gemini/tmp/<project-hash>/chats/session-<time>-<id>.json`,
//! one JSON object per session: `sessionId`, `projectHash`, `startTime`, `lastUpdated` and
//! `messages[]`, each `{id, timestamp, type, content}` where `type` is `user`, `gemini`, `info`,
//! `error` or `warning` and `content` is text or a list of parts (`{text}`); `gemini` messages
//! also carry `model`, `tokens {input, output, cached, thoughts, tool, total}`, `thoughts[]` and
//! `toolCalls[{id, name, args, result, status, timestamp, resultDisplay}]` (`status`
//! `success`, `error` or `cancelled`).
//!
//! The `stream-json` output has another shape, so this reader builds the trajectory itself with
//! the tool names as Gemini CLI gives them (`activate_skill`, `read_file`,
//! `run_shell_command`, …), which the shared detection pass knows. A cancelled tool call or an
//! `info` message `Request cancelled.` marks the turn interrupted. The per-project `logs.json`
//! (prompts only) is not read.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    HistoryError, HistoryHost, HistoryReader, HistorySession, ReadReport, SessionRead, Turn,
    files_under, parse_time,
};
use crate::features::runner::parsers::{message, new_call, output_text, str_field, u64_field};
use crate::values::trajectory::{CommandRun, Role, Trajectory, Usage};

/// The Gemini CLI reader.
#[derive(Debug, Clone, Copy)]
pub struct GeminiReader;

/// Text of `content`: a string or parts with `text`.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.as_str().or_else(|| str_field(p, "text")))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(_) => str_field(content, "text").unwrap_or("").to_string(),
        _ => String::new(),
    }
}

/// A tool call's result text: `functionResponse.response.output` (or `.error`) parts, else the
/// display text.
fn result_text(call: &Value) -> Option<String> {
    let mut texts = Vec::new();
    for part in call["result"].as_array().into_iter().flatten() {
        let response = &part["functionResponse"]["response"];
        if let Some(text) = str_field(response, "output").or_else(|| str_field(response, "error")) {
            texts.push(text.to_string());
        }
    }
    if texts.is_empty() {
        return call
            .get("resultDisplay")
            .filter(|v| !v.is_null())
            .map(output_text);
    }
    Some(texts.join("\n"))
}

impl HistoryReader for GeminiReader {
    fn session_files(&self, folder: &Path) -> Result<Vec<PathBuf>, HistoryError> {
        files_under(folder, 2, "json", &|path| {
            path.parent()
                .and_then(Path::file_name)
                .is_some_and(|p| p == "chats")
        })
    }

    fn read_session(&self, _folder: &Path, file: &Path, report: &mut ReadReport) -> SessionRead {
        let Some(record) = crate::features::history::read_json_object(file, report)? else {
            return Ok(None);
        };
        let Some(messages) = record.get("messages").and_then(Value::as_array) else {
            report.malformed(file, None, "`messages` is missing or not a list");
            return Ok(None);
        };
        let mut trajectory = Trajectory::new();
        let mut turns: Vec<Turn> = Vec::new();
        let mut model = None;
        for (index, entry) in messages.iter().enumerate() {
            let kind = str_field(entry, "type").unwrap_or("");
            let at = str_field(entry, "timestamp").and_then(parse_time);
            let text = content_text(entry.get("content").unwrap_or(&Value::Null));
            match kind {
                "user" => {
                    trajectory.messages.push(message(Role::User, &text));
                    if !text.trim().is_empty() {
                        turns.push(Turn::new(
                            text.trim().to_string(),
                            at,
                            trajectory.tool_calls.len(),
                        ));
                    }
                }
                "gemini" => {
                    if let Some(name) = str_field(entry, "model") {
                        model = Some(name.to_string());
                    }
                    for call in entry["toolCalls"].as_array().into_iter().flatten() {
                        let id = str_field(call, "id").unwrap_or("").to_string();
                        let name = str_field(call, "name").unwrap_or("");
                        let input = call.get("args").cloned().unwrap_or(Value::Null);
                        let status = str_field(call, "status").unwrap_or("");
                        if name == "run_shell_command"
                            && let Some(command) = str_field(&input, "command")
                        {
                            trajectory.commands.push(CommandRun {
                                command: command.to_string(),
                                exit_code: None,
                            });
                        }
                        let mut tool = new_call(&id, name, input);
                        tool.output = result_text(call);
                        tool.is_error = status == "error" || status == "cancelled";
                        if let Some(output) = &tool.output {
                            trajectory
                                .messages
                                .push(crate::values::trajectory::Message {
                                    role: Role::Tool,
                                    content: output.clone(),
                                    tool_call_id: Some(id.clone()),
                                });
                        }
                        trajectory.tool_calls.push(tool);
                        if status == "cancelled"
                            && let Some(turn) = turns.last_mut()
                        {
                            turn.interrupted = true;
                        }
                    }
                    if !text.trim().is_empty() {
                        trajectory.messages.push(message(Role::Assistant, &text));
                        trajectory.final_answer = Some(text.clone());
                    }
                    let tokens = &entry["tokens"];
                    let usage = Usage {
                        input_tokens: u64_field(tokens, "input"),
                        output_tokens: u64_field(tokens, "output"),
                        cached_tokens: u64_field(tokens, "cached"),
                        cache_creation_tokens: None,
                        cost_usd: None,
                    };
                    trajectory.usage.add(&usage);
                    if let Some(turn) = turns.last_mut() {
                        turn.tool_calls.end = trajectory.tool_calls.len();
                        turn.usage.add(&usage);
                        if !text.trim().is_empty() {
                            turn.answer = Some(text.trim().to_string());
                        }
                        if at.is_some() {
                            turn.ended = at;
                        }
                    }
                }
                "info" | "error" | "warning" => {
                    if text.contains("Request cancelled")
                        && let Some(turn) = turns.last_mut()
                    {
                        turn.interrupted = true;
                    }
                }
                other => {
                    if !entry.is_object() {
                        report.malformed(
                            file,
                            None,
                            format!("messages[{index}]: not a JSON object"),
                        );
                    } else {
                        report.unknown(HistoryHost::Gemini, other);
                    }
                }
            }
        }
        trajectory.observed_model = model;
        let id = str_field(&record, "sessionId").map(str::to_string);
        let started = str_field(&record, "startTime")
            .and_then(parse_time)
            .or(turns.first().and_then(|turn| turn.at));
        Ok(HistorySession::of_turns(
            HistoryHost::Gemini,
            file,
            id,
            (None, started),
            turns,
            trajectory,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::history::read_stand_in;

    const CHAT: &str = r#"{
  "sessionId": "7c1e-gemini",
  "projectHash": "9f2d0c",
  "startTime": "2026-03-04T08:00:00.000Z",
  "lastUpdated": "2026-03-04T08:05:00.000Z",
  "messages": [
    {"id": "m1", "timestamp": "2026-03-04T08:00:00.000Z", "type": "user", "content": "Summarise sales.csv by region"},
    {"id": "m2", "timestamp": "2026-03-04T08:00:04.000Z", "type": "gemini", "content": "North 150, South 80.", "model": "gemini-2.5-pro",
     "tokens": {"input": 900, "output": 40, "cached": 0, "thoughts": 10, "tool": 0, "total": 950},
     "toolCalls": [{"id": "c1", "name": "activate_skill", "args": {"name": "csv-summary"}, "status": "success", "timestamp": "2026-03-04T08:00:02.000Z",
                    "result": [{"functionResponse": {"id": "c1", "name": "activate_skill", "response": {"output": "<skill>csv-summary</skill>"}}}]}]},
    {"id": "m3", "timestamp": "2026-03-04T08:01:00.000Z", "type": "compression", "content": ""},
    {"id": "m4", "timestamp": "2026-03-04T08:02:00.000Z", "type": "user", "content": [{"text": "perfect, thanks"}]}
  ]
}"#;

    #[test]
    fn reads_chat_turns_tools_and_tokens() {
        let home = tempfile::tempdir().unwrap();
        let path = home
            .path()
            .join(".gemini/tmp/9f2d0c/chats/session-2026-03-04T08-00-7c1e.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, CHAT).unwrap();
        std::fs::write(path.with_file_name("broken.json"), "{\"messages\": [").unwrap();
        let report = read_stand_in(HistoryHost::Gemini, home.path());
        assert_eq!(report.files, 2);
        assert_eq!(report.sessions.len(), 1);
        let session = &report.sessions[0];
        assert_eq!(session.turns.len(), 2);
        assert_eq!(session.turns[0].skills, vec!["csv-summary"]);
        assert_eq!(session.turns[0].tokens(), Some(940));
        assert_eq!(session.turns[1].prompt, "perfect, thanks");
        assert_eq!(report.unknown_events.get("gemini:compression"), Some(&1));
        assert_eq!(report.malformed.len(), 1);
        assert!(report.malformed[0].to_string().contains("broken.json:1:"));
    }
}
