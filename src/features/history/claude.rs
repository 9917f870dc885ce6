//! Claude Code session transcripts: `<config>/projects/<encoded-cwd>/<session-id>.jsonl`, one
//! JSON object a line. Conversation lines carry `type` (`user`, `assistant`), `message` (the
//! Anthropic message, as in `stream-json`), `sessionId`, `cwd`, `timestamp`, `uuid`,
//! `parentUuid`, `isSidechain` (sub-agent lines) and `isMeta` (text the CLI injected, such as a
//! skill's body after `Base directory for this skill:`); a tool result's structured form is
//! `toolUseResult`. Other line types: `summary`, `system`, `file-history-snapshot`.
//!
//! The trajectory comes from the `stream-json` parser ([`crate::features::runner::parsers::claude`]) fed
//! the main-thread conversation lines (the shapes match); sub-agent and meta lines are left
//! out. A transcript has no terminal `result` line, so the trajectory is marked complete here.
//! User turns: a user line whose content is text (not tool results). `[Request interrupted by
//! user…]` marks the current turn interrupted, as does a tool result saying the user rejected
//! the tool use.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    HistoryError, HistoryHost, HistoryReader, HistorySession, ReadReport, SessionRead, Turn,
    files_under, parse_time,
};
use crate::features::runner::parsers::{output_text, str_field};
use crate::values::trajectory::{TrajectoryStatus, Usage};

/// The Claude Code reader.
#[derive(Debug, Clone, Copy)]
pub struct ClaudeReader;

/// Line types a transcript holds besides the conversation.
const KNOWN_OTHER: &[&str] = &["summary", "system", "file-history-snapshot"];

/// What a rejected tool use returns.
const REJECTED: &str = "The user doesn't want to proceed with this tool use";

/// Text the CLI writes as a user line that is not a prompt.
fn is_cli_text(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with("<command-name>")
        || text.starts_with("<command-message>")
        || text.starts_with("<local-command-stdout>")
        || text.starts_with("Caveat: The messages below were generated")
}

/// A transcript's usage: the stream's Anthropic usage, without the cache writes.
fn usage_of(usage: &Value) -> Usage {
    Usage {
        cache_creation_tokens: None,
        ..crate::features::runner::parsers::claude::anthropic_usage(usage)
    }
}

impl HistoryReader for ClaudeReader {
    fn session_files(&self, folder: &Path) -> Result<Vec<PathBuf>, HistoryError> {
        files_under(folder, 1, "jsonl", &|_| true)
    }

    fn read_session(&self, _folder: &Path, file: &Path, report: &mut ReadReport) -> SessionRead {
        let Some(events) = crate::features::history::read_json_lines(file, report)? else {
            return Ok(None);
        };
        let mut conversation: Vec<String> = Vec::new();
        let mut turns: Vec<Turn> = Vec::new();
        let mut calls = 0usize;
        let mut seen_messages = HashSet::new();
        let mut id = None;
        let mut cwd = None;
        let mut started = None;
        for mut event in events {
            let kind = str_field(&event, "type").unwrap_or("").to_string();
            let at = str_field(&event, "timestamp").and_then(parse_time);
            if started.is_none() {
                started = at;
            }
            if let Some(session) = str_field(&event, "sessionId").filter(|_| id.is_none()) {
                id = Some(session.to_string());
            }
            if let Some(dir) = str_field(&event, "cwd").filter(|_| cwd.is_none()) {
                cwd = Some(PathBuf::from(dir));
            }
            if kind != "user" && kind != "assistant" {
                if !KNOWN_OTHER.contains(&kind.as_str()) {
                    report.unknown(HistoryHost::ClaudeCode, &kind);
                }
                continue;
            }
            let flag = |key: &str| event.get(key).and_then(Value::as_bool) == Some(true);
            if flag("isSidechain") || flag("isMeta") {
                continue;
            }
            let content = event["message"]["content"].clone();
            if kind == "user" {
                let blocks: Vec<Value> = match &content {
                    Value::String(text) => {
                        vec![serde_json::json!({"type": "text", "text": text})]
                    }
                    Value::Array(blocks) => blocks.clone(),
                    _ => Vec::new(),
                };
                let mut prompt = String::new();
                for block in &blocks {
                    match str_field(block, "type") {
                        Some("text") => {
                            let text = str_field(block, "text").unwrap_or("");
                            if text
                                .trim_start()
                                .starts_with("[Request interrupted by user")
                            {
                                if let Some(turn) = turns.last_mut() {
                                    turn.interrupted = true;
                                }
                            } else if !is_cli_text(text) {
                                if !prompt.is_empty() {
                                    prompt.push('\n');
                                }
                                prompt.push_str(text);
                            }
                        }
                        Some("tool_result") => {
                            let result = output_text(block.get("content").unwrap_or(&Value::Null));
                            if result.contains(REJECTED)
                                && let Some(turn) = turns.last_mut()
                            {
                                turn.interrupted = true;
                            }
                        }
                        _ => {}
                    }
                }
                if !prompt.trim().is_empty() {
                    turns.push(Turn::new(prompt.trim().to_string(), at, calls));
                } else if let Some(turn) = turns.last_mut()
                    && at.is_some()
                {
                    turn.ended = at;
                }
                // The stream-json parser reads the structured result as `tool_use_result`.
                if let Some(result) = event.get("toolUseResult").cloned()
                    && let Some(object) = event.as_object_mut()
                {
                    object.insert("tool_use_result".into(), result);
                }
            } else {
                let message = &event["message"];
                let new_message = str_field(message, "id")
                    .map(|m| seen_messages.insert(m.to_string()))
                    .unwrap_or(true);
                for block in content.as_array().into_iter().flatten() {
                    match str_field(block, "type") {
                        Some("tool_use") | Some("server_tool_use") => calls += 1,
                        Some("text") => {
                            if let Some(turn) = turns.last_mut() {
                                let text = str_field(block, "text").unwrap_or("").trim();
                                if !text.is_empty() {
                                    turn.answer = Some(text.to_string());
                                }
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(turn) = turns.last_mut() {
                    turn.tool_calls.end = calls;
                    if at.is_some() {
                        turn.ended = at;
                    }
                    if new_message && let Some(usage) = message.get("usage") {
                        turn.usage.add(&usage_of(usage));
                    }
                }
            }
            conversation.push(event.to_string());
        }
        if turns.is_empty() {
            return Ok(None);
        }
        let mut trajectory = crate::features::runner::parsers::claude::parse(&conversation);
        // A transcript never has the stream's terminal `result` line.
        trajectory.status = TrajectoryStatus::Complete;
        Ok(HistorySession::of_turns(
            HistoryHost::ClaudeCode,
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
    use crate::test_support::write;

    const SESSION: &str = r#"{"type":"summary","summary":"Release notes","leafUuid":"u9"}
{"parentUuid":null,"isSidechain":false,"cwd":"/home/dev/app","sessionId":"s-1","version":"2.1.0","type":"user","message":{"role":"user","content":"Draft release notes since v2.2"},"uuid":"u1","timestamp":"2026-03-02T10:00:00.000Z"}
{"parentUuid":"u1","isSidechain":false,"cwd":"/home/dev/app","sessionId":"s-1","type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Skill","input":{"skill":"release-notes"}}],"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":0,"output_tokens":20}},"uuid":"u2","timestamp":"2026-03-02T10:00:02.000Z"}
{"parentUuid":"u2","isSidechain":false,"cwd":"/home/dev/app","sessionId":"s-1","type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"Launching skill: release-notes"}]},"toolUseResult":{"success":true,"commandName":"release-notes"},"uuid":"u3","timestamp":"2026-03-02T10:00:03.000Z"}
{"parentUuid":"u3","isSidechain":false,"isMeta":true,"cwd":"/home/dev/app","sessionId":"s-1","type":"user","message":{"role":"user","content":[{"type":"text","text":"Base directory for this skill: /home/dev/.claude/skills/release-notes"}]},"uuid":"u4","timestamp":"2026-03-02T10:00:03.100Z"}
{"parentUuid":"u4","isSidechain":false,"cwd":"/home/dev/app","sessionId":"s-1","type":"assistant","message":{"id":"msg_2","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"Drafted notes for 14 changes."}],"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":30}},"uuid":"u5","timestamp":"2026-03-02T10:00:09.000Z"}
{"type":"queue-operation","operation":"enqueue","timestamp":"2026-03-02T10:00:10.000Z"}
this is not json
{"parentUuid":"u5","isSidechain":false,"cwd":"/home/dev/app","sessionId":"s-1","type":"user","message":{"role":"user","content":"thanks, now bump the version"},"uuid":"u6","timestamp":"2026-03-02T10:01:00.000Z"}
"#;

    #[test]
    fn reads_turns_usage_and_skill_activations() {
        let home = tempfile::tempdir().unwrap();
        write(
            home.path(),
            ".claude/projects/-home-dev-app/s-1.jsonl",
            SESSION,
        );
        let report = read_stand_in(HistoryHost::ClaudeCode, home.path());
        assert_eq!(report.files, 1);
        assert_eq!(report.sessions.len(), 1);
        let session = &report.sessions[0];
        assert_eq!(session.id, "s-1");
        assert_eq!(session.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(session.turns.len(), 2);
        let first = &session.turns[0];
        assert_eq!(first.prompt, "Draft release notes since v2.2");
        assert_eq!(first.skills, vec!["release-notes"]);
        assert_eq!(
            first.answer.as_deref(),
            Some("Drafted notes for 14 changes.")
        );
        assert_eq!(first.tokens(), Some(110 + 20 + 105 + 30));
        assert_eq!(first.duration_s(), Some(9.0));
        assert!(session.turns[1].skills.is_empty());
        assert_eq!(
            report.unknown_events.get("claude-code:queue-operation"),
            Some(&1)
        );
        assert_eq!(report.malformed.len(), 1);
        assert_eq!(report.malformed[0].line, Some(8));
        assert!(
            report.malformed[0].to_string().contains("s-1.jsonl:8:"),
            "{}",
            report.malformed[0]
        );
        // The meta line (the skill body) is not a turn and not a message.
        assert!(
            !session
                .trajectory
                .messages
                .iter()
                .any(|m| m.content.starts_with("Base directory"))
        );
    }

    #[test]
    fn interruptions_and_rejections_mark_the_turn() {
        let home = tempfile::tempdir().unwrap();
        let text = r#"{"type":"user","sessionId":"s-2","message":{"role":"user","content":"Delete the build folder"},"timestamp":"2026-03-02T10:00:00Z"}
{"type":"assistant","sessionId":"s-2","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"rm -rf build"}}]},"timestamp":"2026-03-02T10:00:01Z"}
{"type":"user","sessionId":"s-2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"The user doesn't want to proceed with this tool use. The tool use was rejected."}]},"timestamp":"2026-03-02T10:00:02Z"}
{"type":"user","sessionId":"s-2","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"timestamp":"2026-03-02T10:00:02Z"}
"#;
        write(home.path(), ".claude/projects/p/s-2.jsonl", text);
        let report = read_stand_in(HistoryHost::ClaudeCode, home.path());
        let session = &report.sessions[0];
        assert_eq!(session.turns.len(), 1);
        assert!(session.turns[0].interrupted);
        assert_eq!(session.turns[0].tool_calls, 0..1);
    }
}
