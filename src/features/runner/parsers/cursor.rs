//! Cursor CLI `stream-json`: `system/init`, `user`, `assistant`, `tool_call` (`started` and
//! `completed`, the tool named by its single key such as `readToolCall`/`shellToolCall`, or
//! `function.name`) and the terminal `result`. No usage is reported (left `None`).

use std::collections::HashMap;

use serde_json::Value;

use super::{events, message, new_call, str_field};
use crate::values::trajectory::{CommandRun, Role, Trajectory, TrajectoryStatus};

/// The tool's name and payload inside `tool_call`.
fn tool_of(event: &Value) -> Option<(String, &Value)> {
    let object = event.get("tool_call")?.as_object()?;
    let (key, payload) = object.iter().next()?;
    let name = if key == "function" {
        str_field(payload, "name").unwrap_or("function").to_string()
    } else {
        key.clone()
    };
    Some((name, payload))
}

/// Cursor CLI `--output-format stream-json`: ends with `result`; errors in a failed `result`.
pub static CURSOR_STREAM_JSON: super::JsonLines = super::JsonLines {
    final_events: &["result"],
    fold: parse,
    reported,
};

/// Parse a Cursor CLI stream.
pub fn parse(lines: &[String]) -> Trajectory {
    let mut trajectory = Trajectory::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut terminal = false;
    for event in events(lines) {
        if trajectory.session_id.is_none() {
            trajectory.session_id = str_field(&event, "session_id").map(str::to_string);
        }
        match str_field(&event, "type").unwrap_or("") {
            "system" => {
                if let Some(model) = str_field(&event, "model") {
                    trajectory.observed_model = Some(model.to_string());
                }
            }
            kind @ ("user" | "assistant") => {
                let role = if kind == "user" {
                    Role::User
                } else {
                    Role::Assistant
                };
                let text = super::output_text(&event["message"]["content"]);
                trajectory.messages.push(message(role, &text));
            }
            "tool_call" => {
                let Some((name, payload)) = tool_of(&event) else {
                    trajectory.raw_events.push(event);
                    continue;
                };
                let id = str_field(&event, "call_id").unwrap_or("").to_string();
                let args = payload
                    .get("args")
                    .or_else(|| payload.get("arguments"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let index = *calls.entry(id.clone()).or_insert_with(|| {
                    trajectory.tool_calls.push(new_call(&id, &name, args));
                    trajectory.tool_calls.len() - 1
                });
                if str_field(&event, "subtype") == Some("completed") {
                    let result = payload.get("result").cloned().unwrap_or(Value::Null);
                    let success = result.get("success");
                    let call = &mut trajectory.tool_calls[index];
                    call.is_error = success.is_none();
                    call.output = Some(match success {
                        Some(success) => success
                            .get("content")
                            .or_else(|| success.get("output"))
                            .map(super::output_text)
                            .unwrap_or_else(|| success.to_string()),
                        None => result.to_string(),
                    });
                    if name == "shellToolCall"
                        && let Some(command) = super::command_argument(&call.input)
                    {
                        let exit_code = success
                            .and_then(|s| s.get("exitCode"))
                            .and_then(Value::as_i64)
                            .map(|c| c as i32);
                        trajectory.commands.push(CommandRun { command, exit_code });
                    }
                }
            }
            "result" => {
                terminal = true;
                if event.get("is_error").and_then(Value::as_bool) == Some(true) {
                    trajectory.status = TrajectoryStatus::Incomplete {
                        reason: format!(
                            "Cursor reported an error: {}",
                            crate::disk::redact::truncate(
                                str_field(&event, "result").unwrap_or(""),
                                300
                            )
                        ),
                    };
                } else {
                    trajectory.final_answer = str_field(&event, "result").map(str::to_string);
                }
            }
            _ => trajectory.raw_events.push(event),
        }
    }
    if !terminal {
        super::ended_without(&mut trajectory, "a `result` event");
    }
    trajectory
}

fn reported(event_type: &str, event: &Value) -> Option<super::Reported> {
    match event_type {
        "result" => super::failed_result(event),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::values::trajectory::ActivationEvidence;

    const REFERENCE: &str = r#"{"type":"system","subtype":"init","apiKeySource":"env","cwd":"/task","session_id":"4f2a","model":"GPT-5","permissionMode":"default"}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"Draft release notes"}]},"session_id":"4f2a"}
{"type":"tool_call","subtype":"started","call_id":"call_r1","tool_call":{"readToolCall":{"args":{"path":".cursor/skills/release-notes/SKILL.md"}}},"session_id":"4f2a"}
{"type":"tool_call","subtype":"completed","call_id":"call_r1","tool_call":{"readToolCall":{"args":{"path":".cursor/skills/release-notes/SKILL.md"},"result":{"success":{"content":"---\nname: release-notes\n","totalLines":38}}}},"session_id":"4f2a"}
{"type":"tool_call","subtype":"completed","call_id":"call_s2","tool_call":{"shellToolCall":{"args":{"command":"python3 .cursor/skills/release-notes/scripts/collect_commits.py --since v2.2"},"result":{"success":{"exitCode":0,"output":"14 commits since v2.2\n"}}}},"session_id":"4f2a"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Drafted notes for 14 changes."}]},"session_id":"4f2a"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":14800,"duration_api_ms":14800,"result":"Drafted notes for 14 changes.","session_id":"4f2a"}"#;

    #[test]
    fn reference_stream_is_normalized() {
        let trajectory = parse_and_detect(parse, ".cursor/skills", REFERENCE);
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert_eq!(trajectory.observed_model.as_deref(), Some("GPT-5"));
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("Drafted notes for 14 changes.")
        );
        assert_eq!(trajectory.usage.input_tokens, None);
        assert_eq!(trajectory.tool_calls.len(), 2);
        assert_eq!(
            trajectory.skill_activations[0].evidence,
            ActivationEvidence::FileRead
        );
        assert!(trajectory.skill_activations[0].target);
        assert_eq!(trajectory.script_runs[0].exit_code, Some(0));
        assert!(
            super::super::OutputFormat::CursorStreamJson
                .is_final_event(REFERENCE.lines().last().unwrap())
        );
    }

    #[test]
    fn no_result_is_incomplete() {
        let cut: String = REFERENCE.lines().take(4).collect::<Vec<_>>().join("\n");
        assert!(matches!(
            parse(&lines(&cut)).status,
            TrajectoryStatus::Incomplete { .. }
        ));
    }
}
