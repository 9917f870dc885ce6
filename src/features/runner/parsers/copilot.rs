//! GitHub Copilot CLI `--output-format json` (JSONL; shapes observed with 1.0.102 against a
//! recording loopback server). Every event is `{type, data, id, timestamp, parentId}`, some
//! marked `ephemeral: true`; the terminal event is `result` (`sessionId`, `exitCode`, `usage`
//! with premium requests and durations but **no tokens**).
//!
//! - `session.skills_loaded` `data.skills[{name, source, enabled, path}]`: the skill catalogue
//!   (built-in skills included; disabled ones left out).
//! - `user.message` `data.content`; `assistant.message` `data.{model, content, toolRequests}`
//!   (empty `content` when the turn only calls tools). The final answer is the last non-empty
//!   assistant content.
//! - `tool.execution_start` `data.{toolCallId, toolName, arguments}` and
//!   `tool.execution_complete` `data.{toolCallId, success, result.content | error.message}`,
//!   joined by `toolCallId`. `bash` results carry `shellExecution.exitCode`; a non-zero exit is
//!   still `success: true` (the command ran), so the exit code decides script success.
//! - The skill tool is `skill {"skill": name}`; an unknown name is `success: false` with
//!   `error.message` `Skill not found: …` (not an activation). After a successful call the CLI
//!   sends the body to the model as a `<skill-context>` user message that stdout does not show.
//! - `session.error` `data.{errorType, message, statusCode?}`: a fatal error (the CLI then exits
//!   1); `model.call_failure` `data.{failureKind, statusCode?, errorMessage}` precedes each
//!   retry.
//!
//! Token usage is not in the stream: `--usage-output-file` writes it at the end
//! ([`usage_from_file`]); without that file usage stays unknown (`None`), never 0.

use std::collections::HashMap;

use serde_json::Value;

use super::{events, message, new_call, output_text, str_field, timestamp, u64_field};
use crate::values::trajectory::{
    CommandRun, InfrastructureCause, Message, Role, Trajectory, TrajectoryStatus, Usage,
};

/// The Copilot tool that runs shell commands.
const SHELL_TOOL: &str = "bash";

/// Events that carry nothing the trajectory keeps: streaming deltas, per-call telemetry,
/// turn bookkeeping and retry notices (retries are read by
/// [`super::reported_infrastructure`]).
const INFORMATIONAL: &[&str] = &[
    "session.start",
    "session.mcp_servers_loaded",
    "session.tools_updated",
    "session.info",
    "session.model_change",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.turn_retry",
    "assistant.message_start",
    "assistant.message_delta",
    "assistant.tool_call_delta",
    "assistant.reasoning_delta",
    "assistant.idle",
    "model.call_start",
    "model.call_finished",
    "model.call_failure",
    "model.call_final_result",
];

/// GitHub Copilot CLI `--output-format json`: ends with `result`; errors in `session.error`
/// and `model.call_failure` events.
pub static COPILOT_JSON: super::JsonLines = super::JsonLines {
    final_events: &["result"],
    fold: parse,
    reported: |_, event| reported(event),
};

/// Parse a Copilot CLI stream.
pub fn parse(lines: &[String]) -> Trajectory {
    let mut trajectory = Trajectory::new();
    let mut call_index: HashMap<String, usize> = HashMap::new();
    let mut call_started = HashMap::new();
    let mut command_of_call: HashMap<String, usize> = HashMap::new();
    let mut answer: Option<String> = None;
    let mut session_error: Option<String> = None;
    let mut result_seen = false;
    for event in events(lines) {
        let kind = str_field(&event, "type").unwrap_or("");
        let data = &event["data"];
        match kind {
            "session.skills_loaded" => {
                let skills = data["skills"].as_array().cloned().unwrap_or_default();
                trajectory.skill_catalogue = Some(
                    skills
                        .iter()
                        .filter(|skill| {
                            skill.get("enabled").and_then(Value::as_bool) != Some(false)
                        })
                        .filter_map(|skill| str_field(skill, "name").map(str::to_string))
                        .collect(),
                );
            }
            "user.message" => {
                if let Some(content) = str_field(data, "content") {
                    trajectory.messages.push(message(Role::User, content));
                }
            }
            "assistant.message" => {
                if let Some(model) = str_field(data, "model") {
                    trajectory.observed_model = Some(model.to_string());
                }
                let content = str_field(data, "content").unwrap_or("");
                if !content.trim().is_empty() {
                    trajectory.messages.push(message(Role::Assistant, content));
                    answer = Some(content.trim().to_string());
                }
            }
            "tool.execution_start" => {
                let id = str_field(data, "toolCallId").unwrap_or("").to_string();
                let name = str_field(data, "toolName").unwrap_or("");
                let input = data.get("arguments").cloned().unwrap_or(Value::Null);
                if name == SHELL_TOOL
                    && let Some(command) = super::command_argument(&input)
                {
                    command_of_call.insert(id.clone(), trajectory.commands.len());
                    trajectory.commands.push(CommandRun {
                        command,
                        exit_code: None,
                    });
                }
                if let Some(at) = timestamp(&event) {
                    call_started.insert(id.clone(), at);
                }
                call_index.insert(id.clone(), trajectory.tool_calls.len());
                trajectory.tool_calls.push(new_call(&id, name, input));
            }
            "tool.execution_complete" => {
                let id = str_field(data, "toolCallId").unwrap_or("");
                let success = data.get("success").and_then(Value::as_bool) == Some(true);
                let output = if success {
                    output_text(&data["result"]["content"])
                } else {
                    str_field(&data["error"], "message")
                        .map(str::to_string)
                        .unwrap_or_else(|| output_text(&data["result"]["content"]))
                };
                trajectory.messages.push(Message {
                    role: Role::Tool,
                    content: output.clone(),
                    tool_call_id: Some(id.to_string()),
                });
                if let Some(&command) = command_of_call.get(id) {
                    trajectory.commands[command].exit_code = data["shellExecution"]
                        .get("exitCode")
                        .or_else(|| data["toolTelemetry"]["metrics"].get("exit_code"))
                        .and_then(Value::as_i64)
                        .and_then(|code| i32::try_from(code).ok());
                }
                if let Some(&index) = call_index.get(id) {
                    let call = &mut trajectory.tool_calls[index];
                    call.output = Some(output);
                    call.is_error = !success;
                    if let (Some(start), Some(end)) = (call_started.get(id), timestamp(&event)) {
                        call.duration_s =
                            Some((end - *start).num_milliseconds().max(0) as f64 / 1000.0);
                    }
                }
            }
            "session.error" => {
                session_error = Some(format!(
                    "Copilot CLI reported an error ({}): {}",
                    str_field(data, "errorType").unwrap_or("unknown"),
                    crate::disk::redact::truncate(str_field(data, "message").unwrap_or(""), 300)
                ));
            }
            "result" => {
                result_seen = true;
                if let Some(session) = str_field(&event, "sessionId") {
                    trajectory.session_id = Some(session.to_string());
                }
            }
            kind if INFORMATIONAL.contains(&kind) => {}
            _ => trajectory.raw_events.push(event),
        }
    }
    if let Some(reason) = session_error {
        trajectory.status = TrajectoryStatus::Incomplete { reason };
    } else if !result_seen {
        super::ended_without(&mut trajectory, "a `result` event");
    } else {
        trajectory.final_answer = answer;
    }
    trajectory
}

/// Read one Copilot event as an error report, or `None` for any other event.
pub(super) fn reported(event: &Value) -> Option<super::Reported> {
    use super::Reported;
    let data = &event["data"];
    let status = data.get("statusCode").and_then(Value::as_u64);
    match str_field(event, "type")? {
        "session.error" => {
            let cause = match str_field(data, "errorType") {
                Some("authentication") => Some(InfrastructureCause::AuthFailure),
                Some("rate_limit") => Some(InfrastructureCause::RateLimited),
                Some("quota") => Some(InfrastructureCause::QuotaExhausted),
                _ => Some(InfrastructureCause::AgentError),
            };
            Some(Reported::Fatal(
                status,
                str_field(data, "message").unwrap_or("").to_string(),
                cause,
            ))
        }
        "model.call_failure" => Some(Reported::Retrying(
            status,
            format!(
                "retrying the model call after: {}",
                str_field(data, "errorMessage").unwrap_or("")
            ),
            str_field(data, "failureKind") == Some("transport"),
        )),
        _ => None,
    }
}

/// Token usage from the file `--usage-output-file` writes at the end of a run: the sum over
/// `modelMetrics.<model>.usage` of `inputTokens` (the provider's prompt tokens, cached ones
/// included), `outputTokens` and `cacheReadTokens`. `None` when the text is not that shape.
/// Copilot prices in premium requests, not money: `cost_usd` stays `None`.
pub fn usage_from_file(text: &str) -> Option<Usage> {
    let document: Value = serde_json::from_str(text).ok()?;
    let models = document.get("modelMetrics")?.as_object()?;
    let mut usage = Usage::default();
    for metrics in models.values() {
        let counts = &metrics["usage"];
        usage.add(&Usage {
            input_tokens: u64_field(counts, "inputTokens"),
            output_tokens: u64_field(counts, "outputTokens"),
            cached_tokens: u64_field(counts, "cacheReadTokens"),
            cache_creation_tokens: None,
            cost_usd: None,
        });
    }
    (usage != Usage::default()).then_some(usage)
}

#[cfg(test)]
mod tests {
    use super::super::OutputFormat;
    use super::super::test_support::*;
    use super::*;
    use crate::values::trajectory::ActivationEvidence;

    /// A with-skill run in the shapes Copilot CLI 1.0.102 printed (ids and values invented):
    /// the skill tool, a failed skill call, a `view` of a decoy's SKILL.md, a skill script run
    /// through `bash` that exits 3, and the final answer.
    const STREAM: &str = r#"{"type":"session.skills_loaded","data":{"skills":[{"name":"release-notes","source":"project","enabled":true,"path":"/task/.github/skills/release-notes/SKILL.md"},{"name":"csv-tools","source":"project","enabled":true,"path":"/task/.github/skills/csv-tools/SKILL.md"},{"name":"github-pr-media","source":"builtin","enabled":true},{"name":"old-skill","source":"personal","enabled":false}]},"ephemeral":true,"id":"e1","timestamp":"2026-09-01T08:00:00.000Z","parentId":"e0"}
{"type":"session.tools_updated","data":{"model":"gpt-4.1"},"ephemeral":true,"id":"e2","timestamp":"2026-09-01T08:00:00.010Z","parentId":"e0"}
{"type":"user.message","data":{"content":"Draft release notes for v2.3","transformedContent":"<current_datetime>2026-09-01T08:00:00Z</current_datetime>\n\nDraft release notes for v2.3","messageId":"u1","turnId":"0"},"id":"e3","timestamp":"2026-09-01T08:00:00.020Z","parentId":"e0"}
{"type":"assistant.turn_start","data":{"turnId":"0"},"id":"e4","timestamp":"2026-09-01T08:00:00.030Z","parentId":"e3"}
{"type":"assistant.message","data":{"messageId":"a1","model":"gpt-4.1","content":"","toolRequests":[{"toolCallId":"call_1","name":"skill","arguments":{"skill":"release-notes"},"type":"function"}],"turnId":"0"},"id":"e5","timestamp":"2026-09-01T08:00:01.000Z","parentId":"e4"}
{"type":"tool.execution_start","data":{"toolCallId":"call_1","toolName":"skill","arguments":{"skill":"release-notes"},"turnId":"0","model":"gpt-4.1"},"id":"e6","timestamp":"2026-09-01T08:00:01.000Z","parentId":"e5"}
{"type":"tool.execution_complete","data":{"toolCallId":"call_1","model":"gpt-4.1","turnId":"0","success":true,"result":{"content":"Skill \"release-notes\" loaded successfully. Follow the instructions in the skill context.","detailedContent":"Skill \"release-notes\" loaded successfully."},"toolTelemetry":{"properties":{"skillSource":"project","found":"true"}}},"id":"e7","timestamp":"2026-09-01T08:00:01.250Z","parentId":"e6"}
{"type":"assistant.message","data":{"messageId":"a2","model":"gpt-4.1","content":"Checking the other skills.","toolRequests":[{"toolCallId":"call_2","name":"skill","arguments":{"skill":"csv-tool"},"type":"function"}],"turnId":"1"},"id":"e8","timestamp":"2026-09-01T08:00:02.000Z","parentId":"e7"}
{"type":"tool.execution_start","data":{"toolCallId":"call_2","toolName":"skill","arguments":{"skill":"csv-tool"},"turnId":"1"},"id":"e9","timestamp":"2026-09-01T08:00:02.000Z","parentId":"e8"}
{"type":"tool.execution_complete","data":{"toolCallId":"call_2","turnId":"1","success":false,"error":{"message":"Skill not found: csv-tool","code":"failure"},"toolTelemetry":{"properties":{"found":"false"}}},"id":"e10","timestamp":"2026-09-01T08:00:02.100Z","parentId":"e9"}
{"type":"tool.execution_start","data":{"toolCallId":"call_3","toolName":"view","arguments":{"path":"/task/.github/skills/csv-tools/SKILL.md"},"turnId":"2"},"id":"e11","timestamp":"2026-09-01T08:00:03.000Z","parentId":"e10"}
{"type":"tool.execution_complete","data":{"toolCallId":"call_3","turnId":"2","success":true,"result":{"content":"---\nname: csv-tools\n---\nUse csvkit.\n"}},"id":"e12","timestamp":"2026-09-01T08:00:03.050Z","parentId":"e11"}
{"type":"tool.execution_start","data":{"toolCallId":"call_4","toolName":"bash","arguments":{"command":"python3 .github/skills/release-notes/scripts/collect_commits.py --since v2.2","description":"Collect commits"},"turnId":"3","shellToolInfo":{"possiblePaths":[],"hasWriteFileRedirection":false}},"id":"e13","timestamp":"2026-09-01T08:00:04.000Z","parentId":"e12"}
{"type":"model.call_failure","data":{"model":"gpt-4.1","statusCode":500,"failureKind":"api","retryAttempt":0,"errorMessage":"{\"message\":\"internal\"}"},"ephemeral":true,"id":"e14","timestamp":"2026-09-01T08:00:04.500Z","parentId":"e13"}
{"type":"tool.execution_complete","data":{"toolCallId":"call_4","turnId":"3","shellExecution":{"exitCode":3},"success":true,"result":{"content":"no tags found\n<shellId: 0 completed with exit code 3>"},"toolTelemetry":{"metrics":{"exit_code":3}}},"id":"e15","timestamp":"2026-09-01T08:00:05.500Z","parentId":"e13"}
{"type":"subagent.started","data":{"agentName":"explore"},"id":"e16","timestamp":"2026-09-01T08:00:05.600Z","parentId":"e15"}
{"type":"assistant.message_delta","data":{"messageId":"a3","deltaContent":"Drafted notes "},"ephemeral":true,"id":"e17","timestamp":"2026-09-01T08:00:06.000Z","parentId":"e15"}
{"type":"assistant.message","data":{"messageId":"a3","model":"gpt-4.1","content":"Drafted notes for 14 changes.","toolRequests":[],"turnId":"4"},"id":"e18","timestamp":"2026-09-01T08:00:06.100Z","parentId":"e15"}
{"type":"assistant.idle","data":{},"ephemeral":true,"id":"e19","timestamp":"2026-09-01T08:00:06.200Z","parentId":"e18"}
{"type":"result","timestamp":"2026-09-01T08:00:06.300Z","sessionId":"5a6b7c8d-0000-4e1f-9a2b-3c4d5e6f7a8b","exitCode":0,"usage":{"premiumRequests":0,"totalApiDurationMs":4200,"sessionDurationMs":6300,"codeChanges":{"linesAdded":0,"linesRemoved":0,"filesModified":[]}}}"#;

    fn parse_and_detect(text: &str) -> Trajectory {
        super::super::test_support::parse_and_detect(
            |lines: &[String]| OutputFormat::CopilotJson.parse(lines),
            ".github/skills",
            text,
        )
    }

    #[test]
    fn stream_is_normalized() {
        let trajectory = parse_and_detect(STREAM);
        assert_eq!(trajectory.status, TrajectoryStatus::Complete);
        assert_eq!(trajectory.infrastructure_error, None);
        assert_eq!(
            trajectory.session_id.as_deref(),
            Some("5a6b7c8d-0000-4e1f-9a2b-3c4d5e6f7a8b")
        );
        assert_eq!(trajectory.observed_model.as_deref(), Some("gpt-4.1"));
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("Drafted notes for 14 changes.")
        );
        // No tokens in the stream: unknown, not 0.
        assert_eq!(trajectory.usage, Usage::default());
        assert_eq!(
            trajectory.skill_catalogue,
            Some(vec![
                "release-notes".to_string(),
                "csv-tools".to_string(),
                "github-pr-media".to_string()
            ])
        );
        assert_eq!(trajectory.tool_calls.len(), 4);
        assert_eq!(trajectory.tool_calls[0].duration_s, Some(0.25));
        assert!(trajectory.tool_calls[1].is_error);
        assert_eq!(
            trajectory.tool_calls[1].output.as_deref(),
            Some("Skill not found: csv-tool")
        );
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
                .contains("Skill not found")
        );
        assert_eq!(trajectory.commands.len(), 1);
        assert_eq!(trajectory.commands[0].exit_code, Some(3));
        // The script ran (the call succeeded) but exited 3: not ok.
        assert_eq!(trajectory.script_runs.len(), 1);
        assert_eq!(trajectory.script_runs[0].exit_code, Some(3));
        assert!(!trajectory.script_runs[0].ok);
        assert_eq!(
            trajectory.files_read,
            vec![".github/skills/csv-tools/SKILL.md".to_string()]
        );
        // The unknown event is kept; informational ones are not.
        assert_eq!(trajectory.raw_events.len(), 1);
        assert_eq!(trajectory.raw_events[0]["type"], "subagent.started");
        let roles: Vec<Role> = trajectory.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles.first(), Some(&Role::User));
        assert_eq!(roles.iter().filter(|r| **r == Role::Tool).count(), 4);
    }

    #[test]
    fn missing_result_or_session_error_is_incomplete() {
        let cut: String = STREAM.lines().take(12).collect::<Vec<_>>().join("\n");
        let trajectory = parse(&lines(&cut));
        assert!(
            matches!(&trajectory.status, TrajectoryStatus::Incomplete { reason } if reason.contains("without a `result`"))
        );
        assert_eq!(trajectory.final_answer, None);
        assert!(OutputFormat::CopilotJson.is_final_event(STREAM.lines().last().unwrap()));
        assert!(!OutputFormat::CopilotJson.is_final_event(STREAM.lines().next().unwrap()));
    }

    /// Error streams in the shapes Copilot CLI 1.0.102 printed against a closed port and a
    /// loopback server answering 401 and 429 (values invented).
    #[test]
    fn reported_errors_are_infrastructure_failures() {
        use InfrastructureCause as Cause;
        let cases: &[(&str, Cause, &str)] = &[
            (
                r#"{"type":"user.message","data":{"content":"Hi"},"id":"e1","timestamp":"2026-09-01T08:00:00.000Z","parentId":"e0"}
{"type":"model.call_failure","data":{"model":"m1","durationMs":15,"apiEndpoint":"/chat/completions","transport":"http","retryAttempt":0,"failureKind":"transport","isByok":true,"errorMessage":"\"Failed native model HTTP request: error sending request for url (http://127.0.0.1:9/v1/chat/completions): client error (Connect): tcp connect error: Connection refused (os error 111) [ECONNREFUSED]\""},"ephemeral":true,"id":"e2","timestamp":"2026-09-01T08:00:00.100Z","parentId":"e1"}
{"type":"session.info","data":{"infoType":"model_retry","message":"Response was interrupted due to a server error. Retrying..."},"ephemeral":true,"id":"e3","timestamp":"2026-09-01T08:00:01.100Z","parentId":"e1"}
{"type":"session.error","data":{"errorType":"query","message":"Could not connect to local model provider at http://127.0.0.1:9/v1.\n  Check that the service is running and the port is correct.","originatingMessageId":"u1"},"id":"e4","timestamp":"2026-09-01T08:00:23.000Z","parentId":"e1"}
{"type":"result","timestamp":"2026-09-01T08:00:23.100Z","sessionId":"s1","exitCode":1,"usage":{"premiumRequests":0,"totalApiDurationMs":0,"sessionDurationMs":23000}}"#,
                Cause::ApiUnreachable,
                "Could not connect to local model provider",
            ),
            (
                r#"{"type":"model.call_failure","data":{"model":"m1","statusCode":401,"failureKind":"api","retryAttempt":0,"errorMessage":"{\"message\":\"Incorrect API key provided\",\"code\":\"invalid_api_key\"}"},"ephemeral":true,"id":"e2","timestamp":"2026-09-01T08:00:00.100Z","parentId":"e1"}
{"type":"session.error","data":{"errorType":"authentication","message":"Authentication failed with provider at http://127.0.0.1:4000/v1 (HTTP 401).\n  Check your COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_API_KEY_COMMAND, or COPILOT_PROVIDER_BEARER_TOKEN.","statusCode":401},"id":"e3","timestamp":"2026-09-01T08:00:02.000Z","parentId":"e1"}
{"type":"result","timestamp":"2026-09-01T08:00:02.100Z","sessionId":"s2","exitCode":1,"usage":{"premiumRequests":0}}"#,
                Cause::AuthFailure,
                "Authentication failed with provider",
            ),
            (
                r#"{"type":"session.error","data":{"errorType":"rate_limit","message":"Failed to get response from the AI model; retried 5 times (total retry wait time: 61.05 seconds) Last error: 429 Rate limit exceeded","statusCode":429},"id":"e3","timestamp":"2026-09-01T08:01:02.000Z","parentId":"e1"}
{"type":"result","timestamp":"2026-09-01T08:01:02.100Z","sessionId":"s3","exitCode":1,"usage":{"premiumRequests":0}}"#,
                Cause::RateLimited,
                "429 Rate limit exceeded",
            ),
            (
                // Killed by the trial timeout while still retrying a refused connection.
                r#"{"type":"user.message","data":{"content":"Hi"},"id":"e1","timestamp":"2026-09-01T08:00:00.000Z","parentId":"e0"}
{"type":"model.call_failure","data":{"model":"m1","failureKind":"transport","retryAttempt":2,"errorMessage":"\"Failed native model HTTP request: error sending request for url (http://api.invalid/v1/chat/completions): dns error: failed to lookup address information\""},"ephemeral":true,"id":"e2","timestamp":"2026-09-01T08:00:00.100Z","parentId":"e1"}"#,
                Cause::ApiUnreachable,
                "failed to lookup address",
            ),
        ];
        for (stream, cause, needle) in cases {
            let trajectory = OutputFormat::CopilotJson.parse(&lines(stream));
            let failure = trajectory
                .infrastructure_error
                .as_ref()
                .unwrap_or_else(|| panic!("nothing recognised in {stream}"));
            assert_eq!(failure.cause, *cause, "{}", failure.message);
            assert!(failure.message.contains(needle), "{}", failure.message);
            assert!(
                matches!(&trajectory.status, TrajectoryStatus::Incomplete { reason } if reason.contains(needle))
            );
        }
        // A retried failure followed by a normal ending names no cause.
        let trajectory = OutputFormat::CopilotJson.parse(&lines(STREAM));
        assert_eq!(trajectory.infrastructure_error, None);
    }

    #[test]
    fn usage_file_is_summed_over_models() {
        let text = r#"{"totalPremiumRequestCost":0,"totalUserRequests":1,"modelMetrics":{"gpt-4.1":{"requests":{"count":2,"cost":0},"usage":{"inputTokens":200,"outputTokens":14,"cacheReadTokens":40,"cacheWriteTokens":0}},"gpt-4.1-mini":{"requests":{"count":1,"cost":0},"usage":{"inputTokens":50,"outputTokens":3,"cacheReadTokens":0,"cacheWriteTokens":0}}},"currentModel":"gpt-4.1"}"#;
        let usage = usage_from_file(text).unwrap();
        assert_eq!(usage.input_tokens, Some(250));
        assert_eq!(usage.output_tokens, Some(17));
        assert_eq!(usage.cached_tokens, Some(40));
        assert_eq!(usage.cost_usd, None);
        assert_eq!(usage_from_file("{}"), None);
        assert_eq!(usage_from_file("not json"), None);
        assert_eq!(usage_from_file(r#"{"modelMetrics":{}}"#), None);
    }
}
