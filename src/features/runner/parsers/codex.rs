//! Codex `exec --json`: `thread.started`, `turn.started`, `item.started|updated|completed`,
//! `turn.completed` (cumulative usage: replaced, never summed), `turn.failed`, `error`.
//!
//! Codex has no skill tool: activation is a shell read of `SKILL.md` (found by [`super::detect`]
//! on the `command_execution` calls). Non-fatal `error` events are kept raw; only `turn.failed`
//! or a missing terminal event makes the trajectory incomplete. The stream names no model.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{events, message, new_call, str_field, u64_field};
use crate::values::trajectory::{CommandRun, Role, Trajectory, TrajectoryStatus, Usage};

/// Codex `exec --json`: ends with `turn.completed` or `turn.failed`; errors in `turn.failed`
/// and `Reconnecting…` notices.
pub static CODEX_JSON: super::JsonLines = super::JsonLines {
    final_events: &["turn.completed", "turn.failed"],
    fold: parse,
    reported,
};

/// Parse a Codex stream.
pub fn parse(lines: &[String]) -> Trajectory {
    let mut trajectory = Trajectory::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut terminal = false;
    for event in events(lines) {
        match str_field(&event, "type").unwrap_or("") {
            "thread.started" => {
                trajectory.session_id = str_field(&event, "thread_id").map(str::to_string);
            }
            "turn.started" => {}
            "item.started" | "item.updated" | "item.completed" => {
                let completed = str_field(&event, "type") == Some("item.completed");
                let item = &event["item"];
                let id = str_field(item, "id").unwrap_or("").to_string();
                match str_field(item, "type").unwrap_or("") {
                    "agent_message" => {
                        if completed {
                            let text = str_field(item, "text").unwrap_or("");
                            trajectory.messages.push(message(Role::Assistant, text));
                            trajectory.final_answer = Some(text.to_string());
                        }
                    }
                    "reasoning" | "todo_list" => {}
                    kind @ ("command_execution" | "file_change" | "mcp_tool_call"
                    | "web_search") => {
                        let (name, input) = match kind {
                            "command_execution" => {
                                (kind.to_string(), json!({"command": item["command"]}))
                            }
                            "file_change" => {
                                (kind.to_string(), json!({"changes": item["changes"]}))
                            }
                            "mcp_tool_call" => (
                                format!(
                                    "{}.{}",
                                    str_field(item, "server").unwrap_or(""),
                                    str_field(item, "tool").unwrap_or("")
                                ),
                                item.get("arguments").cloned().unwrap_or(Value::Null),
                            ),
                            _ => (kind.to_string(), json!({"query": item["query"]})),
                        };
                        let index = *calls.entry(id.clone()).or_insert_with(|| {
                            trajectory.tool_calls.push(new_call(&id, &name, input));
                            trajectory.tool_calls.len() - 1
                        });
                        if completed {
                            let status = str_field(item, "status").unwrap_or("completed");
                            let exit_code = item
                                .get("exit_code")
                                .and_then(Value::as_i64)
                                .map(|c| c as i32);
                            let call = &mut trajectory.tool_calls[index];
                            call.output = Some(match kind {
                                "command_execution" => str_field(item, "aggregated_output")
                                    .unwrap_or("")
                                    .to_string(),
                                "mcp_tool_call" => item
                                    .get("result")
                                    .map(|r| super::output_text(&r["content"]))
                                    .unwrap_or_default(),
                                _ => status.to_string(),
                            });
                            call.is_error = status != "completed"
                                || exit_code.is_some_and(|c| c != 0)
                                || item.get("error").is_some_and(|e| !e.is_null());
                            if kind == "command_execution" {
                                trajectory.commands.push(CommandRun {
                                    command: str_field(item, "command").unwrap_or("").to_string(),
                                    exit_code,
                                });
                            }
                        }
                    }
                    _ => {
                        if completed {
                            trajectory.raw_events.push(event.clone());
                        }
                    }
                }
            }
            "turn.completed" => {
                terminal = true;
                let usage = &event["usage"];
                let cached = u64_field(usage, "cached_input_tokens");
                // Cumulative for the thread: replace.
                trajectory.usage = Usage {
                    input_tokens: u64_field(usage, "input_tokens"),
                    output_tokens: u64_field(usage, "output_tokens"),
                    cached_tokens: cached,
                    cache_creation_tokens: None,
                    cost_usd: None,
                };
            }
            "turn.failed" => {
                terminal = true;
                trajectory.status = TrajectoryStatus::Incomplete {
                    reason: format!(
                        "Codex turn failed: {}",
                        str_field(&event["error"], "message").unwrap_or("no message")
                    ),
                };
            }
            _ => trajectory.raw_events.push(event),
        }
    }
    if !terminal {
        super::ended_without(&mut trajectory, "`turn.completed` or `turn.failed`");
    }
    trajectory
}

fn reported(event_type: &str, event: &Value) -> Option<super::Reported> {
    use super::Reported;
    match event_type {
        "error" => {
            let message = str_field(event, "message").unwrap_or("");
            message
                .starts_with("Reconnecting")
                .then(|| Reported::Retrying(None, message.to_string(), false))
        }
        // Only `turn.failed` is fatal: one whose words name no cause is the agent's error.
        "turn.failed" => Some(Reported::Fatal(
            None,
            str_field(&event["error"], "message")
                .unwrap_or("")
                .to_string(),
            Some(crate::values::trajectory::InfrastructureCause::AgentError),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::values::trajectory::ActivationEvidence;

    const REFERENCE: &str = r#"{"type":"thread.started","thread_id":"0199b2c4"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"Checking the release-notes skill"}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'cat .agents/skills/release-notes/SKILL.md'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'cat .agents/skills/release-notes/SKILL.md'","aggregated_output":"---\nname: release-notes\n","exit_code":0,"status":"completed"}}
{"type":"error","message":"Reconnecting... 1/5"}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'python3 .agents/skills/release-notes/scripts/collect_commits.py --since v2.2'","aggregated_output":"boom\n","exit_code":2,"status":"failed"}}
{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"NOTES.md","kind":"add"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":{"content":[{"type":"text","text":"hit"}]},"error":null,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_5","type":"web_search","query":"release notes"}}
{"type":"item.completed","item":{"id":"item_6","type":"todo_list","items":[{"text":"a","completed":true}]}}
{"type":"item.completed","item":{"id":"item_7","type":"error","message":"dropped events"}}
{"type":"item.completed","item":{"id":"item_8","type":"agent_message","text":"Drafted notes for 14 changes."}}
{"type":"turn.completed","usage":{"input_tokens":19850,"cached_input_tokens":17920,"output_tokens":388}}"#;

    #[test]
    fn reference_stream_is_normalized() {
        let trajectory = parse_and_detect(parse, ".agents/skills", REFERENCE);
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert_eq!(trajectory.session_id.as_deref(), Some("0199b2c4"));
        assert_eq!(trajectory.observed_model, None);
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("Drafted notes for 14 changes.")
        );
        assert_eq!(trajectory.usage.input_tokens, Some(19850));
        assert_eq!(trajectory.usage.cached_tokens, Some(17920));
        assert_eq!(trajectory.usage.cost_usd, None);
        assert_eq!(trajectory.tool_calls.len(), 5);
        assert_eq!(trajectory.commands.len(), 2);
        assert_eq!(trajectory.commands[1].exit_code, Some(2));
        assert_eq!(trajectory.files_written, vec!["NOTES.md".to_string()]);
        assert_eq!(trajectory.tool_calls[3].name, "docs.search");
        assert_eq!(trajectory.tool_calls[3].output.as_deref(), Some("hit"));
        let activation = &trajectory.skill_activations[0];
        assert_eq!(activation.evidence, ActivationEvidence::ShellCommand);
        assert!(activation.ok && activation.target);
        assert_eq!(trajectory.script_runs.len(), 1);
        assert_eq!(trajectory.script_runs[0].exit_code, Some(2));
        assert!(!trajectory.script_runs[0].ok);
        // The transient error event and the error item are kept, not fatal.
        assert_eq!(trajectory.raw_events.len(), 2);
    }

    #[test]
    fn failed_and_incomplete_turns() {
        let failed = "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"401 Unauthorized\"}}";
        let trajectory = parse(&lines(failed));
        assert!(
            matches!(&trajectory.status, TrajectoryStatus::Incomplete { reason } if reason.contains("401"))
        );
        let cut: String = REFERENCE.lines().take(5).collect::<Vec<_>>().join("\n");
        let trajectory = parse(&lines(&cut));
        assert!(matches!(
            trajectory.status,
            TrajectoryStatus::Incomplete { .. }
        ));
        // Two turns: usage is the last cumulative value, not the sum.
        let two = "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":10,\"cached_input_tokens\":0,\"output_tokens\":1}}\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":25,\"cached_input_tokens\":5,\"output_tokens\":3}}";
        assert_eq!(parse(&lines(two)).usage.input_tokens, Some(25));
    }
}
