//! OpenCode's storage folder (`$XDG_DATA_HOME/opencode/storage`, default
//! `~/.local/share/opencode/storage`): one JSON file per record.
//!
//! - `session/<project-id>/<session-id>.json`: `{id, projectID, directory, title, time:
//!   {created, updated}, parentID?}` (times in ms; a `parentID` marks a sub-agent session, left
//!   out);
//! - `message/<session-id>/<message-id>.json`: `{id, sessionID, role, time: {created,
//!   completed?}, modelID, providerID, tokens, cost}`;
//! - `part/<message-id>/<part-id>.json`: `{id, messageID, type, …}` with `type` `text` (`text`,
//!   `synthetic`), `tool` (`tool`, `callID`, `state {status, input, output, error, time}`),
//!   `step-start`, `step-finish` (`tokens`, `cost`), `reasoning`, `file`, `patch`, `snapshot`,
//!   `agent`, `compaction`, `subtask`, `retry`.
//!
//! An assistant part has the same shape as the `part` of a `run --format json` event, so each
//! turn's assistant parts are replayed as that stream (`tool` → `tool_use`, `text` → `text`,
//! `step-finish` → `step_finish`) through the OpenCode stream parser
//! ([`crate::features::runner::parsers::opencode`]), and the turns are joined into one trajectory. A tool
//! part whose state is `error` with an abort message marks the turn interrupted.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    HistoryError, HistoryHost, HistoryReader, HistorySession, ReadReport, SessionRead, Turn,
    files_under, millis_time,
};
use crate::features::runner::parsers::{message, str_field};
use crate::values::trajectory::{Role, Trajectory};

/// The OpenCode reader.
#[derive(Debug, Clone, Copy)]
pub struct OpencodeReader;

const KNOWN_PARTS: &[&str] = &[
    "text",
    "tool",
    "step-start",
    "step-finish",
    "reasoning",
    "file",
    "patch",
    "snapshot",
    "agent",
    "compaction",
    "subtask",
    "retry",
];

/// The JSON files directly in `dir`, sorted by name (OpenCode ids sort in creation order).
fn json_files(dir: &Path) -> Result<Vec<PathBuf>, HistoryError> {
    files_under(dir, 0, "json", &|_| true)
}

impl HistoryReader for OpencodeReader {
    fn session_files(&self, folder: &Path) -> Result<Vec<PathBuf>, HistoryError> {
        files_under(&folder.join("session"), 1, "json", &|_| true)
    }

    fn read_session(&self, folder: &Path, file: &Path, report: &mut ReadReport) -> SessionRead {
        let Some(info) = crate::features::history::read_json_object(file, report)? else {
            return Ok(None);
        };
        if info.get("parentID").is_some_and(|p| !p.is_null()) {
            return Ok(None);
        }
        let Some(id) = str_field(&info, "id").map(str::to_string) else {
            report.malformed(file, None, "`id` is missing");
            return Ok(None);
        };
        let mut messages = Vec::new();
        for path in json_files(&folder.join("message").join(&id))? {
            if let Some(value) = crate::features::history::read_json_object(&path, report)? {
                messages.push(value);
            }
        }
        messages.sort_by(|a, b| {
            let created = |v: &Value| v["time"]["created"].as_i64().unwrap_or(0);
            created(a)
                .cmp(&created(b))
                .then_with(|| str_field(a, "id").cmp(&str_field(b, "id")))
        });
        let mut trajectory = Trajectory::new();
        let mut turns: Vec<Turn> = Vec::new();
        let mut stream: Vec<String> = Vec::new();
        let mut model = None;
        let flush =
            |stream: &mut Vec<String>, turns: &mut Vec<Turn>, trajectory: &mut Trajectory| {
                let Some(turn) = turns.last_mut() else {
                    stream.clear();
                    return;
                };
                let part = crate::features::runner::parsers::opencode::parse(stream);
                stream.clear();
                let offset = trajectory.tool_calls.len();
                turn.tool_calls = offset..offset + part.tool_calls.len();
                turn.usage = part.usage.clone();
                turn.answer = part.final_answer.clone().map(|a| a.trim().to_string());
                trajectory.messages.extend(part.messages);
                trajectory.tool_calls.extend(part.tool_calls);
                trajectory.commands.extend(part.commands);
                trajectory.usage.add(&part.usage);
                if part.final_answer.is_some() {
                    trajectory.final_answer = part.final_answer;
                }
            };
        for entry in &messages {
            let Some(message_id) = str_field(entry, "id") else {
                continue;
            };
            let role = str_field(entry, "role").unwrap_or("");
            let created = millis_time(&entry["time"]["created"]);
            let mut parts = Vec::new();
            for path in json_files(&folder.join("part").join(message_id))? {
                if let Some(value) = crate::features::history::read_json_object(&path, report)? {
                    parts.push(value);
                }
            }
            match role {
                "user" => {
                    flush(&mut stream, &mut turns, &mut trajectory);
                    let prompt = parts
                        .iter()
                        .filter(|p| str_field(p, "type") == Some("text"))
                        .filter(|p| p.get("synthetic").and_then(Value::as_bool) != Some(true))
                        .filter_map(|p| str_field(p, "text"))
                        .collect::<Vec<_>>()
                        .join("\n");
                    if !prompt.trim().is_empty() {
                        trajectory.messages.push(message(Role::User, prompt.trim()));
                        turns.push(Turn::new(
                            prompt.trim().to_string(),
                            created,
                            trajectory.tool_calls.len(),
                        ));
                    }
                }
                "assistant" => {
                    if let Some(name) = str_field(entry, "modelID") {
                        model = Some(match str_field(entry, "providerID") {
                            Some(provider) => format!("{provider}/{name}"),
                            None => name.to_string(),
                        });
                    }
                    let ended = millis_time(&entry["time"]["completed"]).or(created);
                    if let Some(turn) = turns.last_mut()
                        && ended.is_some()
                    {
                        turn.ended = ended;
                    }
                    for part in parts {
                        let kind = str_field(&part, "type").unwrap_or("").to_string();
                        let event = match kind.as_str() {
                            "tool" => {
                                let state = &part["state"];
                                if str_field(state, "status") == Some("error")
                                    && str_field(state, "error")
                                        .is_some_and(|e| e.to_lowercase().contains("abort"))
                                    && let Some(turn) = turns.last_mut()
                                {
                                    turn.interrupted = true;
                                }
                                "tool_use"
                            }
                            "text"
                                if part.get("synthetic").and_then(Value::as_bool) != Some(true) =>
                            {
                                "text"
                            }
                            "step-start" => "step_start",
                            "step-finish" => "step_finish",
                            known if KNOWN_PARTS.contains(&known) => continue,
                            other => {
                                report.unknown(HistoryHost::Opencode, &format!("part/{other}"));
                                continue;
                            }
                        };
                        stream.push(
                            serde_json::json!({"type": event, "sessionID": id, "part": part})
                                .to_string(),
                        );
                    }
                }
                other => report.unknown(HistoryHost::Opencode, &format!("message/{other}")),
            }
        }
        flush(&mut stream, &mut turns, &mut trajectory);
        trajectory.observed_model = model;
        let cwd = str_field(&info, "directory").map(PathBuf::from);
        let started =
            millis_time(&info["time"]["created"]).or(turns.first().and_then(|turn| turn.at));
        Ok(HistorySession::of_turns(
            HistoryHost::Opencode,
            file,
            Some(id),
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

    fn put(storage: &Path, relative: &str, value: Value) {
        let path = storage.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, value.to_string()).unwrap();
    }

    #[test]
    fn reads_storage_turns_through_the_stream_parser() {
        let home = tempfile::tempdir().unwrap();
        let storage = home.path().join(".local/share/opencode/storage");
        put(
            &storage,
            "session/global/ses_A.json",
            serde_json::json!({"id": "ses_A", "projectID": "global", "directory": "/home/dev/app",
                "title": "notes", "time": {"created": 1772524800000i64, "updated": 1772524900000i64}}),
        );
        put(
            &storage,
            "message/ses_A/msg_1.json",
            serde_json::json!({"id": "msg_1", "sessionID": "ses_A", "role": "user",
                "time": {"created": 1772524800000i64}}),
        );
        put(
            &storage,
            "part/msg_1/prt_1.json",
            serde_json::json!({"id": "prt_1", "messageID": "msg_1", "type": "text",
                "text": "Write release notes"}),
        );
        put(
            &storage,
            "message/ses_A/msg_2.json",
            serde_json::json!({"id": "msg_2", "sessionID": "ses_A", "role": "assistant",
                "modelID": "gpt-5", "providerID": "openai",
                "time": {"created": 1772524801000i64, "completed": 1772524806000i64}}),
        );
        put(
            &storage,
            "part/msg_2/prt_2.json",
            serde_json::json!({"id": "prt_2", "messageID": "msg_2", "type": "tool", "callID": "c1",
                "tool": "skill", "state": {"status": "completed", "input": {"name": "release-notes"},
                "output": "<skill_content/>", "time": {"start": 1, "end": 2}}}),
        );
        put(
            &storage,
            "part/msg_2/prt_3.json",
            serde_json::json!({"id": "prt_3", "messageID": "msg_2", "type": "text", "text": "Done."}),
        );
        put(
            &storage,
            "part/msg_2/prt_4.json",
            serde_json::json!({"id": "prt_4", "messageID": "msg_2", "type": "step-finish",
                "reason": "stop", "tokens": {"input": 500, "output": 20, "reasoning": 0,
                "cache": {"read": 100, "write": 0}}, "cost": 0.01}),
        );
        put(
            &storage,
            "part/msg_2/prt_5.json",
            serde_json::json!({"id": "prt_5", "messageID": "msg_2", "type": "hologram"}),
        );
        let report = read_stand_in(HistoryHost::Opencode, home.path());
        assert_eq!(report.sessions.len(), 1, "{report:?}");
        let session = &report.sessions[0];
        assert_eq!(session.model.as_deref(), Some("openai/gpt-5"));
        assert_eq!(session.turns.len(), 1);
        let turn = &session.turns[0];
        assert_eq!(turn.skills, vec!["release-notes"]);
        assert_eq!(turn.answer.as_deref(), Some("Done."));
        assert_eq!(turn.usage.input_tokens, Some(600));
        assert_eq!(turn.duration_s(), Some(6.0));
        assert_eq!(
            report.unknown_events.get("opencode:part/hologram"),
            Some(&1)
        );
    }
}
