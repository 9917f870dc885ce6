//! Claude Code `stream-json` (with `--verbose`): `system`, `assistant`, `user`, `stream_event`,
//! `rate_limit_event` and the terminal `result` line.
//!
//! Usage comes from `result.usage` (input = `input_tokens` + cache creation + cache reads), never
//! from summing `assistant` lines, which repeat one response's usage per content block; without
//! a `result` the per-message usage is deduplicated by `message.id` and the trajectory is
//! incomplete. A `Skill` result counts as an error when `is_error` is true or when
//! `tool_use_result.success` is false (the silent failures of several releases).
//!
//! The skill catalogue is `init.skills`, plus any skill the `Skill` tool activated successfully
//! whose name `init.slash_commands` lists (user-invocable skills may appear only there). A
//! `Bash` result's exit code is read from its text (`Exit code 127` on the first line of an
//! error result; 0 for a result that is not an error).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{events, message, new_call, output_text, str_field, timestamp, u64_field};
use crate::values::trajectory::{Role, Trajectory, TrajectoryStatus, Usage};

/// Anthropic usage → normalized usage (input includes cache creation and cache reads).
pub(crate) fn anthropic_usage(usage: &Value) -> Usage {
    let input = u64_field(usage, "input_tokens");
    let creation = u64_field(usage, "cache_creation_input_tokens").unwrap_or(0);
    let read = u64_field(usage, "cache_read_input_tokens");
    Usage {
        input_tokens: input.map(|i| i + creation + read.unwrap_or(0)),
        output_tokens: u64_field(usage, "output_tokens"),
        cached_tokens: read,
        cache_creation_tokens: u64_field(usage, "cache_creation_input_tokens"),
        cost_usd: None,
    }
}

/// Claude Code `--output-format stream-json --verbose`: ends with `result`; errors in a failed
/// `result` (`api_error_status`), `assistant` lines marked `is_api_error_message`, and
/// `system/api_retry` notices.
pub static CLAUDE_STREAM_JSON: super::JsonLines = super::JsonLines {
    final_events: &["result"],
    fold: parse,
    reported,
};

/// Parse a Claude Code stream.
pub fn parse(lines: &[String]) -> Trajectory {
    let mut trajectory = Trajectory::new();
    let mut call_index: HashMap<String, usize> = HashMap::new();
    let mut call_started = HashMap::new();
    let mut usage_by_message: Vec<(String, Usage)> = Vec::new();
    let mut seen_messages = HashSet::new();
    let mut result_seen = false;
    let mut slash_commands: Vec<String> = Vec::new();
    let mut command_of_call: HashMap<String, usize> = HashMap::new();
    let exit_code_line = regex::Regex::new(r"^\s*Exit code (-?\d+)").expect("valid pattern");
    for event in events(lines) {
        let kind = str_field(&event, "type").unwrap_or("");
        if let Some(session) = str_field(&event, "session_id")
            && trajectory.session_id.is_none()
        {
            trajectory.session_id = Some(session.to_string());
        }
        match kind {
            "system" => {
                if str_field(&event, "subtype") == Some("init") {
                    if let Some(model) = str_field(&event, "model") {
                        trajectory.observed_model = Some(model.to_string());
                    }
                    if let Some(commands) = event.get("slash_commands").and_then(Value::as_array) {
                        slash_commands = commands
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|c| c.trim_start_matches('/').to_string())
                            .collect();
                    }
                    if let Some(skills) = event.get("skills").and_then(Value::as_array) {
                        trajectory.skill_catalogue = Some(
                            skills
                                .iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect(),
                        );
                    }
                }
            }
            "assistant" => {
                let message_value = &event["message"];
                if let Some(model) = str_field(message_value, "model")
                    && model != "<synthetic>"
                {
                    trajectory.observed_model = Some(model.to_string());
                }
                if let Some(id) = str_field(message_value, "id")
                    && let Some(usage) = message_value.get("usage")
                    && seen_messages.insert(id.to_string())
                {
                    usage_by_message.push((id.to_string(), anthropic_usage(usage)));
                }
                let blocks = message_value["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                for block in blocks {
                    match str_field(&block, "type") {
                        Some("text") => {
                            let text = str_field(&block, "text").unwrap_or("");
                            trajectory.messages.push(message(Role::Assistant, text));
                        }
                        Some("tool_use") | Some("server_tool_use") => {
                            let id = str_field(&block, "id").unwrap_or("").to_string();
                            let name = str_field(&block, "name").unwrap_or("");
                            let input = block.get("input").cloned().unwrap_or(Value::Null);
                            if name == "Bash"
                                && let Some(command) = super::command_argument(&input)
                            {
                                command_of_call.insert(id.clone(), trajectory.commands.len());
                                trajectory
                                    .commands
                                    .push(crate::values::trajectory::CommandRun {
                                        command,
                                        exit_code: None,
                                    });
                            }
                            call_index.insert(id.clone(), trajectory.tool_calls.len());
                            if let Some(at) = timestamp(&event) {
                                call_started.insert(id.clone(), at);
                            }
                            trajectory.tool_calls.push(new_call(&id, name, input));
                        }
                        _ => {}
                    }
                }
            }
            "user" => {
                let content = &event["message"]["content"];
                let structured_failure = event
                    .get("tool_use_result")
                    .and_then(|r| r.get("success"))
                    .and_then(Value::as_bool)
                    == Some(false);
                match content {
                    Value::String(text) => {
                        trajectory.messages.push(message(Role::User, text));
                    }
                    Value::Array(blocks) => {
                        for block in blocks {
                            match str_field(block, "type") {
                                Some("tool_result") => {
                                    let id = str_field(block, "tool_use_id").unwrap_or("");
                                    let text =
                                        output_text(block.get("content").unwrap_or(&Value::Null));
                                    let is_error = block
                                        .get("is_error")
                                        .and_then(Value::as_bool)
                                        .unwrap_or(false)
                                        || structured_failure;
                                    let recorded = super::record_tool_result(
                                        &mut trajectory,
                                        id,
                                        text,
                                        is_error,
                                        (&call_index, &command_of_call),
                                        &exit_code_line,
                                    );
                                    if let Some(index) = recorded
                                        && let (Some(start), Some(end)) =
                                            (call_started.get(id), timestamp(&event))
                                    {
                                        trajectory.tool_calls[index].duration_s = Some(
                                            (end - *start).num_milliseconds().max(0) as f64
                                                / 1000.0,
                                        );
                                    }
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
                }
            }
            "result" => {
                result_seen = true;
                let is_error = event
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let subtype = str_field(&event, "subtype").unwrap_or("");
                if let Some(usage) = event.get("usage") {
                    trajectory.usage = anthropic_usage(usage);
                }
                trajectory.usage.cost_usd = event.get("total_cost_usd").and_then(Value::as_f64);
                if subtype == "error_max_turns" {
                    trajectory.turn_limit_reached = true;
                }
                if !is_error {
                    trajectory.final_answer = str_field(&event, "result").map(str::to_string);
                } else if event.get("api_error_status").is_some_and(|s| !s.is_null())
                    || subtype == "error_during_execution"
                {
                    trajectory.status = TrajectoryStatus::Incomplete {
                        reason: format!(
                            "Claude Code reported an error ({subtype}, API status {}): {}",
                            event.get("api_error_status").unwrap_or(&Value::Null),
                            crate::disk::redact::truncate(
                                str_field(&event, "result").unwrap_or(""),
                                300
                            )
                        ),
                    };
                }
            }
            // Informational events: partial SSE events and rate-limit notices.
            "stream_event" | "rate_limit_event" => {}
            _ => trajectory.raw_events.push(event),
        }
    }
    // Skills activated through the Skill tool that the init event listed only among the slash
    // commands were discovered all the same.
    if let Some(catalogue) = trajectory.skill_catalogue.as_mut() {
        for call in &trajectory.tool_calls {
            if call.name != "Skill" || call.is_error || call.output.is_none() {
                continue;
            }
            let Some(requested) = call.input.get("skill").and_then(Value::as_str) else {
                continue;
            };
            let requested = requested.trim_start_matches('/');
            if slash_commands.iter().any(|c| c == requested)
                && !catalogue.iter().any(|c| c == requested)
            {
                catalogue.push(requested.to_string());
            }
        }
    }
    if !result_seen {
        for (_, usage) in &usage_by_message {
            trajectory.usage.add(usage);
        }
        super::ended_without(&mut trajectory, "a `result` event");
    }
    trajectory
}

fn reported(event_type: &str, event: &Value) -> Option<super::Reported> {
    use super::{Reported, status_of};
    match event_type {
        "system" if str_field(event, "subtype") == Some("api_retry") => {
            let code = event.get("error_status").and_then(status_of);
            let error = str_field(event, "error").unwrap_or("");
            Some(Reported::Retrying(
                code,
                format!(
                    "retrying the API after: {error}{}",
                    code.map(|c| format!(" (HTTP {c})")).unwrap_or_default()
                ),
                false,
            ))
        }
        "result" => super::failed_result(event),
        "assistant" if event.get("is_api_error_message").and_then(Value::as_bool) == Some(true) => {
            Some(Reported::Fatal(
                event.get("api_error_status").and_then(status_of),
                output_text(&event["message"]["content"]),
                None,
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::OutputFormat;
    use super::super::test_support::*;
    use super::*;
    use crate::values::trajectory::ActivationEvidence;

    /// The reference's example stream (agent-clis.md §4.1).
    const REFERENCE: &str = r#"{"type":"system","subtype":"init","session_id":"9d1e","cwd":"/task","model":"claude-sonnet-4-5","permissionMode":"default","tools":["Bash","Read","Skill"],"skills":["release-notes","csv-tools"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.0"}
{"type":"assistant","message":{"id":"msg_7a","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"tool_use","id":"toolu_11","name":"Skill","input":{"skill":"release-notes"}}],"stop_reason":"tool_use","usage":{"input_tokens":6,"cache_creation_input_tokens":3500,"cache_read_input_tokens":0,"output_tokens":19}},"parent_tool_use_id":null,"session_id":"9d1e"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_11","content":"Launching skill: release-notes"}]},"tool_use_result":{"success":true,"commandName":"release-notes"},"parent_tool_use_id":null,"session_id":"9d1e"}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"Base directory for this skill: /task/.claude/skills/release-notes\n\nCollect commits first."}]},"session_id":"9d1e","isSynthetic":true}
{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1767225600},"session_id":"9d1e"}
{"type":"assistant","message":{"id":"msg_7b","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"Running the script."}],"usage":{"input_tokens":4,"cache_creation_input_tokens":0,"cache_read_input_tokens":3500,"output_tokens":41}},"session_id":"9d1e"}
{"type":"assistant","message":{"id":"msg_7b","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"tool_use","id":"toolu_12","name":"Bash","input":{"command":"python3 .claude/skills/release-notes/scripts/collect_commits.py --since v2.2"}}],"stop_reason":"tool_use","usage":{"input_tokens":4,"cache_creation_input_tokens":0,"cache_read_input_tokens":3500,"output_tokens":41}},"parent_tool_use_id":null,"session_id":"9d1e","timestamp":"2026-09-01T08:00:01.000Z"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_12","content":"14 commits since v2.2","is_error":false}]},"tool_use_result":{"stdout":"14 commits since v2.2","stderr":"","interrupted":false},"parent_tool_use_id":null,"session_id":"9d1e","timestamp":"2026-09-01T08:00:03.500Z"}
{"type":"system","subtype":"api_retry","attempt":1,"session_id":"9d1e"}
{"type":"stream_event","event":{"type":"ping"},"session_id":"9d1e"}
{"type":"brand_new_event","payload":1,"session_id":"9d1e"}
{"type":"result","subtype":"success","is_error":false,"result":"Drafted notes for 14 changes.","num_turns":3,"duration_ms":19800,"duration_api_ms":16100,"session_id":"9d1e","total_cost_usd":0.024,"usage":{"input_tokens":18,"cache_creation_input_tokens":3500,"cache_read_input_tokens":7400,"output_tokens":150},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":18,"outputTokens":150,"cacheReadInputTokens":7400,"cacheCreationInputTokens":3500,"costUSD":0.024}},"permission_denials":[]}"#;

    fn parse_and_detect(text: &str) -> Trajectory {
        super::super::test_support::parse_and_detect(parse, ".claude/skills", text)
    }

    #[test]
    fn reference_stream_is_normalized() {
        let trajectory = parse_and_detect(REFERENCE);
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert_eq!(trajectory.session_id.as_deref(), Some("9d1e"));
        assert_eq!(
            trajectory.observed_model.as_deref(),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("Drafted notes for 14 changes.")
        );
        // Totals from the result line, not the sum of assistant lines.
        assert_eq!(trajectory.usage.input_tokens, Some(18 + 3500 + 7400));
        assert_eq!(trajectory.usage.output_tokens, Some(150));
        assert_eq!(trajectory.usage.cached_tokens, Some(7400));
        assert_eq!(trajectory.usage.cost_usd, Some(0.024));
        assert_eq!(trajectory.tool_calls.len(), 2);
        assert_eq!(trajectory.tool_calls[1].duration_s, Some(2.5));
        assert!(
            trajectory
                .messages
                .iter()
                .any(|m| m.content.starts_with("Base directory for this skill:"))
        );
        let activation = &trajectory.skill_activations[0];
        assert_eq!(activation.skill, "release-notes");
        assert!(activation.ok && activation.target);
        assert_eq!(activation.evidence, ActivationEvidence::SkillTool);
        assert_eq!(trajectory.script_runs.len(), 1);
        assert_eq!(
            trajectory.script_runs[0].script,
            "scripts/collect_commits.py"
        );
        assert!(trajectory.script_runs[0].ok);
        assert_eq!(trajectory.script_runs[0].tool_call_index, Some(1));
        assert_eq!(trajectory.commands.len(), 1);
        // api_retry (unknown system subtype is fine) and the unknown type are kept raw.
        assert_eq!(trajectory.raw_events.len(), 1);
        assert_eq!(trajectory.raw_events[0]["type"], "brand_new_event");
        assert!(OutputFormat::ClaudeStreamJson.is_final_event(REFERENCE.lines().last().unwrap()));
    }

    #[test]
    fn silent_skill_errors_are_not_activations() {
        // #59816 / #77363: `Execute skill` error with exit 0 and subtype success.
        let is_error = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"release-notes"}}]},"session_id":"s"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"<tool_use_error>Execute skill: release-notes</tool_use_error>","is_error":true}]},"session_id":"s"}
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","usage":{"input_tokens":1,"output_tokens":1}}"#;
        // #43855: `Unknown skill` reported through tool_use_result.success = false only.
        let structured = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"csv-tools"}}]},"session_id":"s"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Unknown skill: csv-tools"}]},"tool_use_result":{"success":false},"session_id":"s"}
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}"#;
        // A Skill call whose result never arrived.
        let unanswered = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"plugin:release-notes"}}]},"session_id":"s"}
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}"#;
        for (text, skill, reason) in [
            (is_error, "release-notes", "Execute skill"),
            (structured, "csv-tools", "Unknown skill"),
            (unanswered, "release-notes", "no result"),
        ] {
            let trajectory = parse_and_detect(text);
            assert_eq!(trajectory.status, TrajectoryStatus::Complete);
            assert_eq!(trajectory.skill_activations.len(), 1);
            let activation = &trajectory.skill_activations[0];
            assert_eq!(activation.skill, skill);
            assert!(!activation.ok, "{skill} must not count as activated");
            assert!(
                activation.reason.as_deref().unwrap().contains(reason),
                "{:?}",
                activation.reason
            );
        }
    }

    #[test]
    fn read_of_skill_md_is_a_lower_confidence_activation() {
        let text = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/task/.claude/skills/csv-tools/SKILL.md"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"cat .claude/skills/release-notes/SKILL.md"}}]},"session_id":"s"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"---"},{"type":"tool_result","tool_use_id":"t2","content":"---"}]},"session_id":"s"}
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}"#;
        let trajectory = parse_and_detect(text);
        let evidence: Vec<_> = trajectory
            .skill_activations
            .iter()
            .map(|a| (a.skill.as_str(), a.evidence, a.target))
            .collect();
        assert_eq!(
            evidence,
            vec![
                ("csv-tools", ActivationEvidence::FileRead, false),
                ("release-notes", ActivationEvidence::ShellCommand, true)
            ]
        );
    }

    #[test]
    fn skill_listed_only_in_slash_commands_is_in_the_catalogue() {
        let text = r#"{"type":"system","subtype":"init","session_id":"s","skills":["csv-tools"],"slash_commands":["compact","release-notes","csv-tools"]}
{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"release-notes"}}]},"session_id":"s"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Launching skill: release-notes"}]},"tool_use_result":{"success":true,"commandName":"release-notes"},"session_id":"s"}
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}"#;
        let trajectory = parse_and_detect(text);
        let catalogue = trajectory.skill_catalogue.unwrap();
        assert!(
            catalogue.contains(&"release-notes".to_string()),
            "{catalogue:?}"
        );
        // A built-in slash command that was never activated is not a skill.
        assert!(!catalogue.contains(&"compact".to_string()));
    }

    #[test]
    fn bash_exit_codes_come_from_the_result_text() {
        let text = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"frobnicate --all"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","id":"t3","name":"Bash","input":{"command":"rm -rf x"}}]},"session_id":"s"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Exit code 127\n/bin/bash: line 1: frobnicate: command not found","is_error":true},{"type":"tool_result","tool_use_id":"t2","content":"a\nb","is_error":false},{"type":"tool_result","tool_use_id":"t3","content":"Permission to use Bash has been denied.","is_error":true}]},"session_id":"s"}
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}"#;
        let trajectory = parse(&lines(text));
        let codes: Vec<Option<i32>> = trajectory.commands.iter().map(|c| c.exit_code).collect();
        assert_eq!(codes, vec![Some(127), Some(0), None]);
    }

    #[test]
    fn skill_activated_then_its_skill_md_read_counts_once() {
        let text = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"release-notes"}}]},"session_id":"s"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Launching skill: release-notes"}]},"session_id":"s"}
{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/task/.claude/skills/release-notes/SKILL.md"}}]},"session_id":"s"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"---"}]},"session_id":"s"}
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}"#;
        let trajectory = parse_and_detect(text);
        assert_eq!(trajectory.skill_activations.len(), 1);
        assert_eq!(
            trajectory.skill_activations[0].evidence,
            ActivationEvidence::SkillTool
        );
        assert_eq!(
            trajectory.files_read,
            vec![".claude/skills/release-notes/SKILL.md".to_string()]
        );
    }

    #[test]
    fn incomplete_stream_dedupes_usage_by_message_id() {
        let text = REFERENCE
            .lines()
            .filter(|l| !l.contains("\"type\":\"result\""))
            .collect::<Vec<_>>()
            .join("\n");
        let trajectory = parse(&lines(&text));
        assert!(matches!(
            trajectory.status,
            TrajectoryStatus::Incomplete { .. }
        ));
        assert_eq!(trajectory.final_answer, None);
        // msg_7a once + msg_7b once (it appears on two lines).
        assert_eq!(trajectory.usage.output_tokens, Some(19 + 41));
        assert_eq!(trajectory.usage.input_tokens, Some(6 + 3500 + 4 + 3500));
    }

    #[test]
    fn api_errors_in_the_result_are_infrastructure_errors() {
        let text = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":404,"result":"There's an issue with the selected model","session_id":"s"}"#;
        let trajectory = parse(&lines(text));
        let TrajectoryStatus::Incomplete { reason } = &trajectory.status else {
            panic!("expected incomplete");
        };
        assert!(reason.contains("404"), "{reason}");
        let text = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"result":"","session_id":"s"}"#;
        let trajectory = parse(&lines(text));
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert!(trajectory.turn_limit_reached);
        assert_eq!(trajectory.final_answer, None);
    }

    #[test]
    fn huge_lines_and_garbage_are_handled() {
        let big = format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":"{}"}}]}},"session_id":"s"}}"#,
            "y".repeat(8 * 1024 * 1024)
        );
        let text = format!(
            "not json at all\n{big}\n{}",
            r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}"#
        );
        let trajectory = parse(&lines(&text));
        assert_eq!(trajectory.final_answer.as_deref(), Some("ok"));
        assert!(
            trajectory
                .messages
                .iter()
                .any(|m| m.content.len() == 8 * 1024 * 1024)
        );
    }
}
