//! Qwen Code `-o stream-json` (shapes observed with 0.24.4 against a recording loopback
//! server): Claude-Code-like lines `system/init`, `assistant`, `user`, `stream_event` and the
//! terminal `result`, each with `session_id`.
//!
//! - `system/init`: `session_id`, `model`, `tools`, `slash_commands` (built-in commands and
//!   skills mixed, so no skill catalogue is taken from it), `qwen_code_version`.
//! - `assistant.message.content[]`: `text` and `tool_use {id, name, input}` blocks; per-message
//!   `usage`.
//! - `user.message.content[]`: `tool_result {tool_use_id, is_error, content}`. The skill tool is
//!   `skill {"skill": name}`; its result is the skill's body (`Base directory for this skill:
//!   …`), and an unknown name is `is_error: true` (`Skill "x" not found. Available skills: …`):
//!   not an activation. `run_shell_command` results with a non-zero exit are `is_error: true`
//!   and end with `Exit Code: N` lines; a successful result is the bare output (exit 0).
//! - `result`: `subtype` (`success`, `error_during_execution`, …), `is_error`, `result` (the
//!   final answer), `usage {input_tokens, output_tokens, cache_read_input_tokens}` and, on
//!   failure, `error.message` (`[API Error: Connection error. (cause: fetch failed)]`).
//!
//! Usage: with OpenAI-compatible providers Qwen Code's `input_tokens` is the provider's prompt
//! tokens, which already include the cached ones, so input is taken as reported (unlike
//! Claude Code's Anthropic counts). Totals come from `result.usage`; without a `result` the
//! per-message usage is summed once per message id and the trajectory is incomplete.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{events, message, new_call, output_text, str_field, u64_field};
use crate::values::trajectory::{CommandRun, Role, Trajectory, TrajectoryStatus, Usage};

/// The Qwen Code tool that runs shell commands.
const SHELL_TOOL: &str = "run_shell_command";

fn usage_of(value: &Value) -> Usage {
    Usage {
        input_tokens: u64_field(value, "input_tokens"),
        output_tokens: u64_field(value, "output_tokens"),
        cached_tokens: u64_field(value, "cache_read_input_tokens"),
        cache_creation_tokens: None,
        cost_usd: None,
    }
}

/// Qwen Code `-o stream-json`: ends with `result`; errors in a failed `result`.
pub static QWEN_STREAM_JSON: super::JsonLines = super::JsonLines {
    final_events: &["result"],
    fold: parse,
    reported,
};

/// Parse a Qwen Code stream.
pub fn parse(lines: &[String]) -> Trajectory {
    let mut trajectory = Trajectory::new();
    let mut call_index: HashMap<String, usize> = HashMap::new();
    let mut command_of_call: HashMap<String, usize> = HashMap::new();
    let mut message_usage: Vec<Usage> = Vec::new();
    let mut seen_messages = HashSet::new();
    let mut result_seen = false;
    let exit_code_line = regex::Regex::new(r"(?m)^Exit Code: (-?\d+)\s*$").expect("valid pattern");
    for event in events(lines) {
        if trajectory.session_id.is_none()
            && let Some(session) = str_field(&event, "session_id")
        {
            trajectory.session_id = Some(session.to_string());
        }
        match str_field(&event, "type").unwrap_or("") {
            "system" => {
                if str_field(&event, "subtype") == Some("init")
                    && let Some(model) = str_field(&event, "model")
                {
                    trajectory.observed_model = Some(model.to_string());
                } else if str_field(&event, "subtype") != Some("init") {
                    trajectory.raw_events.push(event);
                }
            }
            "assistant" => {
                let body = &event["message"];
                if let Some(model) = str_field(body, "model") {
                    trajectory.observed_model = Some(model.to_string());
                }
                if let Some(usage) = body.get("usage") {
                    let id = str_field(body, "id").unwrap_or("").to_string();
                    if id.is_empty() || seen_messages.insert(id) {
                        message_usage.push(usage_of(usage));
                    }
                }
                for block in body["content"].as_array().into_iter().flatten() {
                    match str_field(block, "type") {
                        Some("text") => {
                            let text = str_field(block, "text").unwrap_or("");
                            trajectory.messages.push(message(Role::Assistant, text));
                        }
                        Some("tool_use") => {
                            let id = str_field(block, "id").unwrap_or("").to_string();
                            let name = str_field(block, "name").unwrap_or("");
                            let input = block.get("input").cloned().unwrap_or(Value::Null);
                            if name == SHELL_TOOL
                                && let Some(command) = super::command_argument(&input)
                            {
                                command_of_call.insert(id.clone(), trajectory.commands.len());
                                trajectory.commands.push(CommandRun {
                                    command,
                                    exit_code: None,
                                });
                            }
                            call_index.insert(id.clone(), trajectory.tool_calls.len());
                            trajectory.tool_calls.push(new_call(&id, name, input));
                        }
                        _ => {}
                    }
                }
            }
            "user" => match &event["message"]["content"] {
                Value::String(text) => trajectory.messages.push(message(Role::User, text)),
                Value::Array(blocks) => {
                    for block in blocks {
                        match str_field(block, "type") {
                            Some("tool_result") => {
                                let id = str_field(block, "tool_use_id").unwrap_or("");
                                let text =
                                    output_text(block.get("content").unwrap_or(&Value::Null));
                                let is_error =
                                    block.get("is_error").and_then(Value::as_bool) == Some(true);
                                super::record_tool_result(
                                    &mut trajectory,
                                    id,
                                    text,
                                    is_error,
                                    (&call_index, &command_of_call),
                                    &exit_code_line,
                                );
                            }
                            Some("text") => {
                                let text = str_field(block, "text").unwrap_or("");
                                trajectory.messages.push(message(Role::User, text));
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            },
            "result" => {
                result_seen = true;
                if let Some(usage) = event.get("usage") {
                    trajectory.usage = usage_of(usage);
                }
                let subtype = str_field(&event, "subtype").unwrap_or("");
                if subtype == "error_max_turns" {
                    trajectory.turn_limit_reached = true;
                }
                if event.get("is_error").and_then(Value::as_bool) == Some(true) {
                    if subtype != "error_max_turns" {
                        let error = str_field(&event["error"], "message")
                            .or_else(|| str_field(&event, "result"))
                            .unwrap_or("");
                        trajectory.status = TrajectoryStatus::Incomplete {
                            reason: format!(
                                "Qwen Code reported an error ({subtype}): {}",
                                crate::disk::redact::truncate(error, 300)
                            ),
                        };
                    }
                } else {
                    trajectory.final_answer = str_field(&event, "result")
                        .map(str::trim)
                        .filter(|answer| !answer.is_empty())
                        .map(str::to_string);
                }
            }
            // Partial-message and goal-state notices.
            "stream_event" => {}
            _ => trajectory.raw_events.push(event),
        }
    }
    if !result_seen {
        for usage in &message_usage {
            trajectory.usage.add(usage);
        }
        super::ended_without(&mut trajectory, "a `result` event");
    }
    trajectory
}

/// The failure a Qwen Code `result` line reports (`is_error: true`, not the turn limit), for
/// [`super::reported_infrastructure`].
pub(super) fn reported_error(event: &Value) -> Option<String> {
    if str_field(event, "type") != Some("result")
        || event.get("is_error").and_then(Value::as_bool) != Some(true)
        || str_field(event, "subtype") == Some("error_max_turns")
    {
        return None;
    }
    Some(
        str_field(&event["error"], "message")
            .or_else(|| str_field(event, "result"))
            .unwrap_or("")
            .to_string(),
    )
}

fn reported(event_type: &str, event: &Value) -> Option<super::Reported> {
    if event_type != "result" {
        return None;
    }
    reported_error(event).map(|message| {
        super::Reported::Fatal(
            None,
            message,
            Some(crate::values::trajectory::InfrastructureCause::AgentError),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::OutputFormat;
    use super::super::test_support::*;
    use super::*;
    use crate::values::trajectory::{ActivationEvidence, InfrastructureCause};

    /// A with-skill run in the shapes Qwen Code 0.24.4 printed (ids and values invented): the
    /// skill tool, a failed skill call, a `read_file` of a decoy's SKILL.md, a skill script
    /// that exits 3 and one that succeeds, and the final answer.
    const STREAM: &str = r#"{"type":"system","subtype":"init","uuid":"q1","session_id":"q1","cwd":"/task","tools":["read_file","skill","run_shell_command"],"mcp_servers":[],"model":"qwen3-coder-plus","permission_mode":"yolo","slash_commands":["init","release-notes","csv-tools","review"],"qwen_code_version":"0.24.4","agents":["general-purpose"]}
{"type":"stream_event","uuid":"x1","session_id":"q1","parent_tool_use_id":null,"event":{"type":"goal_state","goal_state":{"v":2,"goal":null,"activity":"idle"}}}
{"type":"assistant","uuid":"m1","session_id":"q1","parent_tool_use_id":null,"message":{"id":"m1","type":"message","role":"assistant","model":"qwen3-coder-plus","content":[{"type":"text","text":"Loading the skill."},{"type":"tool_use","id":"call_1","name":"skill","input":{"skill":"release-notes"}}],"stop_reason":"tool_use","usage":{"input_tokens":900,"output_tokens":12,"cache_read_input_tokens":0,"total_tokens":912}}}
{"type":"user","uuid":"u1","session_id":"q1","parent_tool_use_id":null,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","is_error":false,"content":"Base directory for this skill: /task/.qwen/skills/release-notes\nImportant: ALWAYS resolve absolute paths from this base directory when working with skills.\n\nCollect commits first.\n"}]}}
{"type":"assistant","uuid":"m2","session_id":"q1","parent_tool_use_id":null,"message":{"id":"m2","type":"message","role":"assistant","model":"qwen3-coder-plus","content":[{"type":"tool_use","id":"call_2","name":"skill","input":{"skill":"csv-tool"}}],"stop_reason":"tool_use","usage":{"input_tokens":1000,"output_tokens":8,"cache_read_input_tokens":800,"total_tokens":1008}}}
{"type":"user","uuid":"u2","session_id":"q1","parent_tool_use_id":null,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_2","is_error":true,"content":"Skill \"csv-tool\" not found. Available skills: csv-tools, release-notes, review"}]}}
{"type":"assistant","uuid":"m3","session_id":"q1","parent_tool_use_id":null,"message":{"id":"m3","type":"message","role":"assistant","model":"qwen3-coder-plus","content":[{"type":"tool_use","id":"call_3","name":"read_file","input":{"file_path":"/task/.qwen/skills/csv-tools/SKILL.md"}},{"type":"tool_use","id":"call_4","name":"run_shell_command","input":{"command":"python3 .qwen/skills/release-notes/scripts/collect_commits.py --since v2.2","description":"collect"}},{"type":"tool_use","id":"call_5","name":"run_shell_command","input":{"command":"git tag --list","description":"tags"}}],"stop_reason":"tool_use","usage":{"input_tokens":1100,"output_tokens":30,"cache_read_input_tokens":900,"total_tokens":1130}}}
{"type":"user","uuid":"u3","session_id":"q1","parent_tool_use_id":null,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_3","is_error":false,"content":"---\nname: csv-tools\n---\nUse csvkit.\n"},{"type":"tool_result","tool_use_id":"call_4","is_error":true,"content":"Command: python3 .qwen/skills/release-notes/scripts/collect_commits.py --since v2.2\nDirectory: (root)\nOutput: no tags found\nError: (none)\nExit Code: 3\nSignal: (none)\nProcess Group PGID: (none)"},{"type":"tool_result","tool_use_id":"call_5","is_error":false,"content":"v2.2\nv2.3"}]}}
{"type":"system","subtype":"compact_boundary","uuid":"c1","session_id":"q1"}
{"type":"assistant","uuid":"m4","session_id":"q1","parent_tool_use_id":null,"message":{"id":"m4","type":"message","role":"assistant","model":"qwen3-coder-plus","content":[{"type":"text","text":"Drafted notes for 14 changes."}],"stop_reason":null,"usage":{"input_tokens":1200,"output_tokens":9,"cache_read_input_tokens":1000,"total_tokens":1209}}}
{"type":"result","subtype":"success","uuid":"r1","session_id":"q1","is_error":false,"duration_ms":9100,"duration_api_ms":8000,"num_turns":4,"result":"Drafted notes for 14 changes.","usage":{"input_tokens":4200,"output_tokens":59,"cache_read_input_tokens":2700,"total_tokens":4259},"permission_denials":[]}"#;

    fn parse_and_detect(text: &str) -> Trajectory {
        super::super::test_support::parse_and_detect(
            |lines: &[String]| OutputFormat::QwenStreamJson.parse(lines),
            ".qwen/skills",
            text,
        )
    }

    #[test]
    fn stream_is_normalized() {
        let trajectory = parse_and_detect(STREAM);
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert_eq!(trajectory.session_id.as_deref(), Some("q1"));
        assert_eq!(
            trajectory.observed_model.as_deref(),
            Some("qwen3-coder-plus")
        );
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("Drafted notes for 14 changes.")
        );
        // Totals from the result line; input already includes the cached tokens.
        assert_eq!(trajectory.usage.input_tokens, Some(4200));
        assert_eq!(trajectory.usage.output_tokens, Some(59));
        assert_eq!(trajectory.usage.cached_tokens, Some(2700));
        assert_eq!(trajectory.usage.cost_usd, None);
        assert_eq!(trajectory.skill_catalogue, None);
        let activations = activation_rows(&trajectory);
        assert_eq!(
            activations,
            vec![
                ("release-notes", ActivationEvidence::SkillTool, true, true),
                // A failed skill call is not an activation.
                ("csv-tool", ActivationEvidence::SkillTool, false, false),
                ("csv-tools", ActivationEvidence::FileRead, true, false),
            ]
        );
        assert!(
            trajectory.skill_activations[1]
                .reason
                .as_deref()
                .unwrap()
                .contains("not found")
        );
        let commands: Vec<_> = trajectory
            .commands
            .iter()
            .map(|c| (c.command.as_str(), c.exit_code))
            .collect();
        assert_eq!(
            commands,
            vec![
                (
                    "python3 .qwen/skills/release-notes/scripts/collect_commits.py --since v2.2",
                    Some(3)
                ),
                ("git tag --list", Some(0)),
            ]
        );
        assert_eq!(trajectory.script_runs.len(), 1);
        assert!(!trajectory.script_runs[0].ok);
        assert_eq!(trajectory.script_runs[0].exit_code, Some(3));
        assert!(
            trajectory
                .messages
                .iter()
                .any(|m| m.role == Role::Tool && m.content.starts_with("Base directory"))
        );
        // The unknown system subtype is kept.
        assert_eq!(trajectory.raw_events.len(), 1);
    }

    #[test]
    fn cut_stream_sums_message_usage_and_is_incomplete() {
        let cut: String = STREAM.lines().take(6).collect::<Vec<_>>().join("\n");
        let trajectory = parse(&lines(&cut));
        assert!(
            matches!(&trajectory.status, TrajectoryStatus::Incomplete { reason } if reason.contains("without a `result`"))
        );
        assert_eq!(trajectory.usage.input_tokens, Some(1900));
        assert_eq!(trajectory.usage.cached_tokens, Some(800));
        assert_eq!(trajectory.final_answer, None);
    }

    #[test]
    fn turn_limit_is_complete_without_an_answer() {
        let stream = r#"{"type":"result","subtype":"error_max_turns","session_id":"q2","is_error":true,"num_turns":3,"usage":{"input_tokens":10,"output_tokens":1}}"#;
        let trajectory = OutputFormat::QwenStreamJson.parse(&lines(stream));
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert!(trajectory.turn_limit_reached);
        assert_eq!(trajectory.infrastructure_error, None);
    }

    /// Error streams in the shapes Qwen Code 0.24.4 printed against a closed port and a
    /// loopback server answering 401 (values invented).
    #[test]
    fn reported_errors_are_infrastructure_failures() {
        use InfrastructureCause as Cause;
        let cases: &[(&str, Cause, &str)] = &[
            (
                r#"{"type":"system","subtype":"init","session_id":"q3","model":"m1"}
{"type":"assistant","uuid":"a","session_id":"q3","parent_tool_use_id":null,"message":{"id":"a","type":"message","role":"assistant","model":"m1","content":[{"type":"text","text":"[API Error: Connection error. (cause: fetch failed)]"}],"stop_reason":null,"usage":{"input_tokens":0,"output_tokens":0}}}
{"type":"result","subtype":"error_during_execution","session_id":"q3","is_error":true,"duration_ms":4457,"num_turns":1,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0},"permission_denials":[],"error":{"message":"[API Error: Connection error. (cause: fetch failed)]"}}"#,
                Cause::ApiUnreachable,
                "Connection error",
            ),
            (
                r#"{"type":"result","subtype":"error_during_execution","session_id":"q4","is_error":true,"num_turns":1,"usage":{"input_tokens":0,"output_tokens":0},"error":{"message":"[API Error: 401 Incorrect API key provided: sk-te***]"}}"#,
                Cause::AuthFailure,
                "401 Incorrect API key",
            ),
            (
                r#"{"type":"result","subtype":"error_during_execution","session_id":"q5","is_error":true,"num_turns":1,"usage":{"input_tokens":0,"output_tokens":0},"error":{"message":"[API Error: 429 Rate limit exceeded]"}}"#,
                Cause::RateLimited,
                "429",
            ),
        ];
        for (stream, cause, needle) in cases {
            let trajectory = OutputFormat::QwenStreamJson.parse(&lines(stream));
            let failure = trajectory
                .infrastructure_error
                .as_ref()
                .unwrap_or_else(|| panic!("nothing recognised in {stream}"));
            assert_eq!(failure.cause, *cause, "{}", failure.message);
            assert!(failure.message.contains(needle), "{}", failure.message);
            assert!(failure.message.starts_with("[API Error"));
        }
        // An answer that talks about a 401 is not an error event.
        let stream = r#"{"type":"result","subtype":"success","session_id":"q6","is_error":false,"result":"The API returned 401 Unauthorized; fix the key.","usage":{"input_tokens":5,"output_tokens":5}}"#;
        assert_eq!(
            OutputFormat::QwenStreamJson
                .parse(&lines(stream))
                .infrastructure_error,
            None
        );
    }
}
