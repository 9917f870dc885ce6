//! OpenCode `run --format json`: `step_start`, `tool_use` (one event when the tool finished),
//! `text`, `reasoning`, `step_finish` (tokens and cost, summed over steps), `error`, `done`.
//!
//! The terminal event is `done`; builds that do not emit it end with a `step_finish` whose
//! reason is not `tool-calls`, which also counts as complete. No model is in the stream.

use serde_json::Value;

use super::{events, message, new_call, str_field, u64_field};
use crate::values::trajectory::{CommandRun, Role, Trajectory, TrajectoryStatus, Usage};

/// OpenCode `run --format json`: ends with `done`; errors in `error` events
/// (`error.data.statusCode`).
pub static OPENCODE_JSON: super::JsonLines = super::JsonLines {
    final_events: &["done"],
    fold: parse,
    reported,
};

/// Parse an OpenCode stream.
pub fn parse(lines: &[String]) -> Trajectory {
    let mut trajectory = Trajectory::new();
    let mut done = false;
    let mut last_step_reason: Option<String> = None;
    let mut error: Option<String> = None;
    for event in events(lines) {
        if trajectory.session_id.is_none() {
            trajectory.session_id = str_field(&event, "sessionID").map(str::to_string);
        }
        let part = &event["part"];
        match str_field(&event, "type").unwrap_or("") {
            "step_start" | "reasoning" => {}
            "tool_use" => {
                let state = &part["state"];
                let id = str_field(part, "callID").unwrap_or("");
                let name = str_field(part, "tool").unwrap_or("");
                let mut call =
                    new_call(id, name, state.get("input").cloned().unwrap_or(Value::Null));
                call.is_error = str_field(state, "status") != Some("completed");
                call.output = Some(match state.get("output") {
                    Some(Value::String(output)) => output.clone(),
                    _ => str_field(state, "error").unwrap_or("").to_string(),
                });
                if let (Some(start), Some(end)) = (
                    state["time"].get("start").and_then(Value::as_f64),
                    state["time"].get("end").and_then(Value::as_f64),
                ) {
                    call.duration_s = Some(((end - start) / 1000.0).max(0.0));
                }
                if name == "bash"
                    && let Some(command) = super::command_argument(&call.input)
                {
                    // `metadata.exit` (sst/opencode's bash tool), or `metadata.exitCode`
                    // (the name other OpenCode builds and clients write).
                    let metadata = &state["metadata"];
                    let exit_code = metadata
                        .get("exit")
                        .and_then(Value::as_i64)
                        .or_else(|| metadata.get("exitCode").and_then(Value::as_i64))
                        .map(|c| c as i32);
                    trajectory.commands.push(CommandRun { command, exit_code });
                }
                trajectory.tool_calls.push(call);
            }
            "text" => {
                let text = str_field(part, "text").unwrap_or("");
                trajectory.messages.push(message(Role::Assistant, text));
                trajectory.final_answer = Some(text.to_string());
            }
            "step_finish" => {
                last_step_reason = str_field(part, "reason").map(str::to_string);
                let tokens = &part["tokens"];
                let cache_read = u64_field(&tokens["cache"], "read");
                let cache_write = u64_field(&tokens["cache"], "write").unwrap_or(0);
                trajectory.usage.add(&Usage {
                    input_tokens: u64_field(tokens, "input")
                        .map(|i| i + cache_read.unwrap_or(0) + cache_write),
                    output_tokens: u64_field(tokens, "output"),
                    cached_tokens: cache_read,
                    cache_creation_tokens: None,
                    cost_usd: part.get("cost").and_then(Value::as_f64),
                });
            }
            "error" => {
                error = Some(
                    event
                        .get("error")
                        .map(|e| match e.get("data").and_then(|d| d.get("message")) {
                            Some(Value::String(m)) => m.clone(),
                            _ => e.to_string(),
                        })
                        .unwrap_or_default(),
                );
                trajectory.raw_events.push(event);
            }
            "done" => done = true,
            _ => trajectory.raw_events.push(event),
        }
    }
    let finished = done
        || last_step_reason
            .as_deref()
            .is_some_and(|r| r != "tool-calls");
    if let Some(error) = error {
        trajectory.status = TrajectoryStatus::Incomplete {
            reason: format!(
                "OpenCode reported an error: {}",
                crate::disk::redact::truncate(&error, 300)
            ),
        };
    } else if !finished {
        super::ended_without(&mut trajectory, "`done` or a final `step_finish`");
    }
    trajectory
}

fn reported(event_type: &str, event: &Value) -> Option<super::Reported> {
    if event_type != "error" {
        return None;
    }
    let error = &event["error"];
    let data = &error["data"];
    let message = str_field(data, "message")
        .or_else(|| str_field(error, "message"))
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string());
    let name = str_field(error, "name").unwrap_or("");
    Some(super::Reported::Fatal(
        data.get("statusCode").and_then(super::status_of),
        format!("{name}: {message}"),
        Some(crate::values::trajectory::InfrastructureCause::AgentError),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const REFERENCE: &str = r#"{"type":"step_start","timestamp":1767225600000,"sessionID":"ses_01J9X","part":{"id":"prt_a","messageID":"msg_a","sessionID":"ses_01J9X","type":"step-start"}}
{"type":"tool_use","timestamp":1767225601800,"sessionID":"ses_01J9X","part":{"id":"prt_b","type":"tool","callID":"call_1","tool":"skill","state":{"status":"completed","input":{"name":"release-notes"},"output":"<skill_content name=\"release-notes\">Collect commits first.</skill_content>","title":"Loaded skill: release-notes","metadata":{"name":"release-notes","dir":"/task/.opencode/skills/release-notes"},"time":{"start":1767225601500,"end":1767225601700}}}}
{"type":"tool_use","timestamp":1767225603900,"sessionID":"ses_01J9X","part":{"id":"prt_c","type":"tool","callID":"call_2","tool":"bash","state":{"status":"completed","input":{"command":"python3 .opencode/skills/release-notes/scripts/collect_commits.py --since v2.2","description":"Collect commits"},"output":"14 commits since v2.2\n","time":{"start":1767225602900,"end":1767225603800}}}}
{"type":"tool_use","timestamp":1767225603950,"sessionID":"ses_01J9X","part":{"id":"prt_d","type":"tool","callID":"call_3","tool":"read","state":{"status":"error","input":{"filePath":"/task/.opencode/skills/csv-tools/SKILL.md"},"error":"permission denied","time":{"start":1,"end":2}}}}
{"type":"step_finish","timestamp":1767225604000,"sessionID":"ses_01J9X","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":10800,"output":140,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.0068}}
{"type":"reasoning","timestamp":1767225604500,"sessionID":"ses_01J9X","part":{"type":"reasoning","text":"…"}}
{"type":"text","timestamp":1767225606000,"sessionID":"ses_01J9X","part":{"type":"text","text":"Drafted notes for 14 changes.","time":{"start":1767225605000,"end":1767225606000}}}
{"type":"step_finish","timestamp":1767225606100,"sessionID":"ses_01J9X","part":{"type":"step-finish","reason":"stop","tokens":{"input":11200,"output":18,"reasoning":0,"cache":{"read":10700,"write":0}},"cost":0.0011}}
{"type":"done","timestamp":1767225606200,"sessionID":"ses_01J9X","reason":"idle","rejected":[]}"#;

    #[test]
    fn reference_stream_is_normalized() {
        let trajectory = parse_and_detect(parse, ".opencode/skills", REFERENCE);
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert_eq!(trajectory.session_id.as_deref(), Some("ses_01J9X"));
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("Drafted notes for 14 changes.")
        );
        assert_eq!(trajectory.usage.input_tokens, Some(10800 + 11200 + 10700));
        assert_eq!(trajectory.usage.output_tokens, Some(158));
        assert_eq!(trajectory.usage.cached_tokens, Some(10700));
        assert!((trajectory.usage.cost_usd.unwrap() - 0.0079).abs() < 1e-9);
        assert_eq!(trajectory.tool_calls[0].duration_s, Some(0.2));
        let activations: Vec<_> = trajectory
            .skill_activations
            .iter()
            .map(|a| (a.skill.as_str(), a.ok, a.target))
            .collect();
        assert_eq!(
            activations,
            vec![("release-notes", true, true), ("csv-tools", false, false)]
        );
        assert_eq!(trajectory.script_runs.len(), 1);
        assert!(trajectory.script_runs[0].ok);
        assert!(trajectory.raw_events.is_empty());
    }

    #[test]
    fn bash_exit_status_is_read_from_exit_or_exit_code() {
        let stream = r#"{"type":"tool_use","timestamp":1,"sessionID":"s","part":{"type":"tool","callID":"c1","tool":"bash","state":{"status":"completed","input":{"command":"make"},"output":"","metadata":{"output":"","exit":2,"description":"build"}}}}
{"type":"tool_use","timestamp":2,"sessionID":"s","part":{"type":"tool","callID":"c2","tool":"bash","state":{"status":"completed","input":{"command":"make test"},"output":"","metadata":{"output":"","exitCode":1}}}}
{"type":"tool_use","timestamp":3,"sessionID":"s","part":{"type":"tool","callID":"c3","tool":"bash","state":{"status":"completed","input":{"command":"true"},"output":""}}}"#;
        let trajectory = parse(&lines(stream));
        let codes: Vec<Option<i32>> = trajectory.commands.iter().map(|c| c.exit_code).collect();
        assert_eq!(codes, vec![Some(2), Some(1), None]);
    }

    #[test]
    fn error_or_cut_stream_is_incomplete() {
        let cut: String = REFERENCE.lines().take(5).collect::<Vec<_>>().join("\n");
        assert!(matches!(
            parse(&lines(&cut)).status,
            TrajectoryStatus::Incomplete { .. }
        ));
        let error = r#"{"type":"error","timestamp":1,"sessionID":"s","error":{"name":"APIError","data":{"message":"connection refused"}}}"#;
        assert!(
            matches!(parse(&lines(error)).status, TrajectoryStatus::Incomplete { reason } if reason.contains("connection refused"))
        );
        // Builds without `done`: a final step_finish completes the stream.
        let no_done: String = REFERENCE.lines().take(8).collect::<Vec<_>>().join("\n");
        assert_eq!(parse(&lines(&no_done)).status, TrajectoryStatus::Complete);
    }
}
