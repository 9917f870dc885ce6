//! Gemini CLI `stream-json`: `init`, `message` (assistant text as deltas), `tool_use`,
//! `tool_result` (joined by `tool_id`; no tool name), `error` (warnings are not fatal) and the
//! terminal `result` with `stats`.

use std::collections::HashMap;

use serde_json::Value;

use super::{events, message, new_call, str_field, u64_field};
use crate::values::trajectory::{CommandRun, Role, Trajectory, TrajectoryStatus, Usage};

/// Gemini CLI `--output-format stream-json`: ends with `result`; errors in a `result` whose
/// status is not `success` and in `error` events of severity `error`.
pub static GEMINI_STREAM_JSON: super::JsonLines = super::JsonLines {
    final_events: &["result"],
    fold: parse,
    reported,
};

/// Parse a Gemini CLI stream.
pub fn parse(lines: &[String]) -> Trajectory {
    let mut trajectory = Trajectory::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    // Assistant text since the last tool call (the final answer when the stream ends).
    let mut segment = String::new();
    let mut in_assistant_message = false;
    let mut terminal = false;
    for event in events(lines) {
        match str_field(&event, "type").unwrap_or("") {
            "init" => {
                trajectory.session_id = str_field(&event, "session_id").map(str::to_string);
                trajectory.observed_model = str_field(&event, "model").map(str::to_string);
            }
            "message" => {
                let content = str_field(&event, "content").unwrap_or("");
                if str_field(&event, "role") == Some("assistant") {
                    if in_assistant_message && let Some(last) = trajectory.messages.last_mut() {
                        last.content.push_str(content);
                    } else {
                        trajectory.messages.push(message(Role::Assistant, content));
                        in_assistant_message = true;
                    }
                    segment.push_str(content);
                } else {
                    trajectory.messages.push(message(Role::User, content));
                    in_assistant_message = false;
                }
            }
            "tool_use" => {
                in_assistant_message = false;
                segment.clear();
                let id = str_field(&event, "tool_id").unwrap_or("").to_string();
                let name = str_field(&event, "tool_name").unwrap_or("");
                let input = event.get("parameters").cloned().unwrap_or(Value::Null);
                calls.insert(id.clone(), trajectory.tool_calls.len());
                trajectory.tool_calls.push(new_call(&id, name, input));
            }
            "tool_result" => {
                in_assistant_message = false;
                let id = str_field(&event, "tool_id").unwrap_or("");
                if let Some(&index) = calls.get(id) {
                    let ok = str_field(&event, "status") == Some("success");
                    let call = &mut trajectory.tool_calls[index];
                    call.is_error = !ok;
                    call.output = Some(match str_field(&event, "output") {
                        Some(output) => output.to_string(),
                        None => str_field(&event["error"], "message")
                            .unwrap_or("")
                            .to_string(),
                    });
                    if call.name == "run_shell_command"
                        && let Some(command) = super::command_argument(&call.input)
                    {
                        trajectory.commands.push(CommandRun {
                            command,
                            exit_code: None,
                        });
                    }
                }
            }
            "result" => {
                terminal = true;
                let stats = &event["stats"];
                trajectory.usage = Usage {
                    input_tokens: u64_field(stats, "input_tokens"),
                    output_tokens: u64_field(stats, "output_tokens"),
                    cached_tokens: u64_field(stats, "cached"),
                    cache_creation_tokens: None,
                    cost_usd: None,
                };
                if str_field(&event, "status") == Some("success") {
                    let answer = segment.trim();
                    trajectory.final_answer = (!answer.is_empty()).then(|| answer.to_string());
                } else {
                    trajectory.status = TrajectoryStatus::Incomplete {
                        reason: format!(
                            "Gemini CLI result status {}: {}",
                            str_field(&event, "status").unwrap_or("missing"),
                            event.get("error").map(Value::to_string).unwrap_or_default()
                        ),
                    };
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
    use super::{Reported, status_of};
    match event_type {
        "result" if str_field(event, "status") != Some("success") => {
            let error = &event["error"];
            Some(Reported::Fatal(
                error.get("code").and_then(status_of),
                str_field(error, "message")
                    .map(str::to_string)
                    .unwrap_or_else(|| error.to_string()),
                Some(crate::values::trajectory::InfrastructureCause::AgentError),
            ))
        }
        "error" if str_field(event, "severity") == Some("error") => Some(Reported::Fatal(
            None,
            str_field(event, "message").unwrap_or("").to_string(),
            None,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const REFERENCE: &str = r#"{"type":"init","timestamp":"2026-09-01T08:00:00.000Z","session_id":"b7e0","model":"gemini-2.5-pro"}
{"type":"message","timestamp":"2026-09-01T08:00:00.100Z","role":"user","content":"Draft release notes for v2.3"}
{"type":"message","timestamp":"2026-09-01T08:00:01.000Z","role":"assistant","content":"Let me look.","delta":true}
{"type":"tool_use","timestamp":"2026-09-01T08:00:02.000Z","tool_name":"activate_skill","tool_id":"activate_skill-1","parameters":{"name":"release-notes"}}
{"type":"tool_result","timestamp":"2026-09-01T08:00:02.200Z","tool_id":"activate_skill-1","status":"success","output":"Skill release-notes activated"}
{"type":"tool_use","timestamp":"2026-09-01T08:00:03.000Z","tool_name":"activate_skill","tool_id":"activate_skill-2","parameters":{"name":"csv-tools"}}
{"type":"tool_result","timestamp":"2026-09-01T08:00:03.200Z","tool_id":"activate_skill-2","status":"error","error":{"type":"policy","message":"denied by policy"}}
{"type":"tool_use","timestamp":"2026-09-01T08:00:04.000Z","tool_name":"run_shell_command","tool_id":"run_shell_command-2","parameters":{"command":"python3 .agents/skills/release-notes/scripts/collect_commits.py --since v2.2"}}
{"type":"tool_result","timestamp":"2026-09-01T08:00:05.000Z","tool_id":"run_shell_command-2","status":"success","output":"14 commits since v2.2"}
{"type":"error","timestamp":"2026-09-01T08:00:05.500Z","severity":"warning","message":"Loop detection disabled"}
{"type":"message","timestamp":"2026-09-01T08:00:07.000Z","role":"assistant","content":"Drafted notes ","delta":true}
{"type":"message","timestamp":"2026-09-01T08:00:07.100Z","role":"assistant","content":"for 14 changes.","delta":true}
{"type":"result","timestamp":"2026-09-01T08:00:07.100Z","status":"success","stats":{"total_tokens":14620,"input_tokens":14250,"output_tokens":370,"cached":8800,"input":5450,"duration_ms":7100,"tool_calls":2,"models":{"gemini-2.5-pro":{"total_tokens":14620}}}}"#;

    #[test]
    fn reference_stream_is_normalized() {
        let trajectory = parse_and_detect(parse, ".agents/skills", REFERENCE);
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert_eq!(trajectory.observed_model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(trajectory.session_id.as_deref(), Some("b7e0"));
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("Drafted notes for 14 changes.")
        );
        assert_eq!(trajectory.usage.input_tokens, Some(14250));
        assert_eq!(trajectory.usage.cached_tokens, Some(8800));
        let activations: Vec<_> = trajectory
            .skill_activations
            .iter()
            .map(|a| (a.skill.as_str(), a.ok, a.target))
            .collect();
        assert_eq!(
            activations,
            vec![("release-notes", true, true), ("csv-tools", false, false)]
        );
        assert!(
            trajectory.skill_activations[1]
                .reason
                .as_deref()
                .unwrap()
                .contains("denied by policy")
        );
        assert_eq!(trajectory.script_runs.len(), 1);
        assert_eq!(trajectory.raw_events.len(), 1);
        assert!(
            trajectory
                .messages
                .iter()
                .any(|m| m.content == "Drafted notes for 14 changes.")
        );
    }

    #[test]
    fn missing_or_failed_result_is_incomplete() {
        let cut: String = REFERENCE.lines().take(4).collect::<Vec<_>>().join("\n");
        assert!(matches!(
            parse(&lines(&cut)).status,
            TrajectoryStatus::Incomplete { .. }
        ));
        let failed = r#"{"type":"result","status":"error","error":{"type":"FatalAuthenticationError","message":"no key"},"stats":{}}"#;
        assert!(
            matches!(parse(&lines(failed)).status, TrajectoryStatus::Incomplete { reason } if reason.contains("no key"))
        );
    }
}
