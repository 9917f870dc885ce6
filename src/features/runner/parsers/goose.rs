//! Goose `run --output-format stream-json`: `message` (content items `text`, `toolRequest`,
//! `toolResponse`, `thinking`), `notification`, `error` and the terminal `complete` with token
//! counts and cost. Tools are named `{extension}__{tool}` (`skills__load_skill`,
//! `developer__shell`).

use std::collections::HashMap;

use serde_json::Value;

use super::{events, message, new_call, str_field, u64_field};
use crate::values::trajectory::{CommandRun, Role, Trajectory, TrajectoryStatus, Usage};

/// Goose `run --output-format stream-json`: ends with `complete`; errors in `error` events.
pub static GOOSE_STREAM_JSON: super::JsonLines = super::JsonLines {
    final_events: &["complete"],
    fold: parse,
    reported,
};

/// Parse a Goose stream.
pub fn parse(lines: &[String]) -> Trajectory {
    let mut trajectory = Trajectory::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut terminal = false;
    let mut error: Option<String> = None;
    for event in events(lines) {
        match str_field(&event, "type").unwrap_or("") {
            "message" => {
                let inner = &event["message"];
                let role = if str_field(inner, "role") == Some("assistant") {
                    Role::Assistant
                } else {
                    Role::User
                };
                for item in inner["content"].as_array().into_iter().flatten() {
                    match str_field(item, "type").unwrap_or("") {
                        "text" => {
                            let text = str_field(item, "text").unwrap_or("");
                            trajectory.messages.push(message(role, text));
                            if role == Role::Assistant {
                                trajectory.final_answer = Some(text.to_string());
                            }
                        }
                        "toolRequest" => {
                            let id = str_field(item, "id").unwrap_or("").to_string();
                            let value = &item["toolCall"]["value"];
                            let full_name = str_field(value, "name").unwrap_or("");
                            let input = value.get("arguments").cloned().unwrap_or(Value::Null);
                            if full_name.ends_with("shell")
                                && let Some(command) = super::command_argument(&input)
                            {
                                trajectory.commands.push(CommandRun {
                                    command,
                                    exit_code: None,
                                });
                            }
                            calls.insert(id.clone(), trajectory.tool_calls.len());
                            trajectory.tool_calls.push(new_call(&id, full_name, input));
                        }
                        "toolResponse" => {
                            let id = str_field(item, "id").unwrap_or("");
                            if let Some(&index) = calls.get(id) {
                                let result = &item["toolResult"];
                                let call = &mut trajectory.tool_calls[index];
                                call.is_error = str_field(result, "status") != Some("success");
                                call.output = Some(super::output_text(
                                    result.get("value").unwrap_or(&Value::Null),
                                ));
                            }
                        }
                        _ => {}
                    }
                }
            }
            "notification" => {}
            "error" => {
                error = Some(
                    event
                        .get("error")
                        .map(super::output_text)
                        .unwrap_or_default(),
                );
                trajectory.raw_events.push(event);
            }
            "complete" => {
                terminal = true;
                let read = u64_field(&event, "cache_read_input_tokens");
                trajectory.usage = Usage {
                    input_tokens: u64_field(&event, "input_tokens"),
                    output_tokens: u64_field(&event, "output_tokens"),
                    cached_tokens: read,
                    cache_creation_tokens: None,
                    cost_usd: event.get("cost_usd").and_then(Value::as_f64),
                };
            }
            _ => trajectory.raw_events.push(event),
        }
    }
    if !terminal {
        trajectory.status = TrajectoryStatus::Incomplete {
            reason: match error {
                Some(error) => format!(
                    "Goose reported an error: {}",
                    crate::disk::redact::truncate(&error, 300)
                ),
                None => "the stream ended without a `complete` event".to_string(),
            },
        };
    }
    trajectory
}

fn reported(event_type: &str, event: &Value) -> Option<super::Reported> {
    if event_type != "error" {
        return None;
    }
    let error = &event["error"];
    Some(super::Reported::Fatal(
        None,
        error
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| error.to_string()),
        Some(crate::values::trajectory::InfrastructureCause::AgentError),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const REFERENCE: &str = r#"{"type":"message","message":{"role":"assistant","created":1767225600,"content":[{"type":"toolRequest","id":"tr_1","toolCall":{"status":"success","value":{"name":"skills__load_skill","arguments":{"name":"release-notes"}}}}]}}
{"type":"message","message":{"role":"user","created":1767225601,"content":[{"type":"toolResponse","id":"tr_1","toolResult":{"status":"success","value":[{"type":"text","text":"Collect commits first."}]}}]}}
{"type":"notification","extension_id":"developer","log":{"message":"running"}}
{"type":"message","message":{"role":"assistant","created":1767225602,"content":[{"type":"thinking","thinking":"…"},{"type":"toolRequest","id":"tr_2","toolCall":{"status":"success","value":{"name":"developer__shell","arguments":{"command":"python3 .goose/skills/release-notes/scripts/collect_commits.py"}}}}]}}
{"type":"message","message":{"role":"user","created":1767225603,"content":[{"type":"toolResponse","id":"tr_2","toolResult":{"status":"success","value":[{"type":"text","text":"14 commits"}]}}]}}
{"type":"message","message":{"role":"assistant","created":1767225604,"content":[{"type":"text","text":"Drafted notes for 14 changes."}]}}
{"type":"complete","total_tokens":12400,"input_tokens":12050,"output_tokens":350,"cost_usd":0.009}"#;

    #[test]
    fn reference_stream_is_normalized() {
        let trajectory = parse_and_detect(parse, ".goose/skills", REFERENCE);
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("Drafted notes for 14 changes.")
        );
        assert_eq!(trajectory.usage.input_tokens, Some(12050));
        assert_eq!(trajectory.usage.cost_usd, Some(0.009));
        assert_eq!(trajectory.skill_activations.len(), 1);
        assert!(trajectory.skill_activations[0].ok && trajectory.skill_activations[0].target);
        assert_eq!(trajectory.script_runs.len(), 1);
        assert_eq!(
            trajectory.tool_calls[1].output.as_deref(),
            Some("14 commits")
        );
    }

    #[test]
    fn error_without_complete_is_incomplete() {
        let text = r#"{"type":"error","error":"provider returned 500"}"#;
        assert!(
            matches!(parse(&lines(text)).status, TrajectoryStatus::Incomplete { reason } if reason.contains("500"))
        );
    }
}
