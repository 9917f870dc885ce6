//! The `anthropic-messages` runner: skill-lift's own agent loop over the Anthropic Messages API
//! (`POST {base_url}/messages`, `x-api-key` and `anthropic-version: 2023-06-01` headers;
//! `base_url` defaults to `https://api.anthropic.com/v1`).
//!
//! It mirrors the `openai-chat` loop (`super::openai_chat`, whose prompts, staged-skill loader
//! and tools it shares): `inject` puts every staged skill's body in the top-level `system`
//! prompt and asks once; `tools` lists names and descriptions and offers `activate_skill`,
//! `read_file` and `final_answer` as Messages API tools, answering each `tool_use` block with a
//! `tool_result` block, for at most `max_turns` requests.
//!
//! - **Prompt caching.** The stable prefix carries `cache_control: {"type": "ephemeral"}`
//!   breakpoints: the last tool definition and the `system` block (the injected skills are in
//!   it), and in `tools` mode the newest tool result, so each turn reads the conversation so far
//!   from the cache. Usage records cache reads (`cache_read_input_tokens`) and writes
//!   (`cache_creation_input_tokens`); `input_tokens` counts every prompt token, cached or not.
//! - **Cost.** With a `[price]` table in the profile each request is priced (cache reads and
//!   writes at their own prices when the table has them) and the trial records the sum.
//! - **Stop reasons.** `tool_use` runs the tools and continues; `end_turn`, `stop_sequence`,
//!   `refusal` and `pause_turn` end with the text as the final answer; `max_tokens` ends with
//!   the text cut where it stopped (a `tool_use` block cut by the limit is not run), recorded
//!   as the request's `finish_reason`.
//! - **Failures.** Connection errors, 408, 429, 529 and other 5xx answers are retried (bounded
//!   by `max_retries` and the trial timeout), waiting what `retry-after` or the
//!   `anthropic-ratelimit-*-reset` headers ask ([`super::http`]); every retry is recorded. What
//!   still fails, and any other error status (401/403 authentication, 400), ends the attempt
//!   with a typed [`InfrastructureCause`]: the trial is unscoreable, never failed. The API key
//!   is sent only as a header and never recorded.

use std::path::Path;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::http::{PostFailure, RetryPolicy, post_json_with_retries_and_headers};
use super::openai_chat::{
    LoadedSkill, SkillTexts, execute_tool, inject_system_prompt, tool_specs, tools_system_prompt,
};
use super::{AttemptError, AttemptInput, Runner, RunnerProfile, SkillMode};
use crate::grade::judge::{ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_VERSION};
use crate::trajectory::{
    InfrastructureCause, Message, RequestRecord, Role, ToolCall, Trajectory, TrajectoryStatus,
    Usage,
};

/// `max_tokens` of each request (required by the API) when the profile sets none.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Runner for the Anthropic Messages API.
pub struct AnthropicMessagesRunner {
    profile: RunnerProfile,
    api_key: Option<String>,
    client: reqwest::Client,
    url: String,
    skill_texts: SkillTexts,
}

impl AnthropicMessagesRunner {
    /// Build the runner; `api_key` is the value of the profile's `api_key_env`, when set.
    pub fn new(
        profile: RunnerProfile,
        api_key: Option<String>,
    ) -> Result<Self, super::kind::BuildError> {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .tcp_nodelay(true)
            .build()?;
        let configured = profile.base_url.trim().trim_end_matches('/');
        let base = if configured.is_empty() {
            ANTHROPIC_DEFAULT_BASE_URL
        } else {
            configured
        };
        let url = format!("{base}/messages");
        Ok(Self {
            profile,
            api_key: api_key.filter(|key| !key.is_empty()),
            client,
            url,
            skill_texts: SkillTexts::default(),
        })
    }
}

/// The cache breakpoint marker.
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The Messages API tool definitions of `tools` mode, the last one a cache breakpoint (tools
/// come first in the cached prefix).
fn tool_definitions(skills: &[LoadedSkill]) -> Value {
    let mut tools: Vec<Value> = tool_specs(skills)
        .into_iter()
        .map(|(name, description, schema)| {
            json!({"name": name, "description": description, "input_schema": schema})
        })
        .collect();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = ephemeral();
    }
    Value::Array(tools)
}

/// One request's body: the `system` prompt as one cached text block, the tools (already
/// carrying their breakpoint), and the conversation, whose newest tool result (when the last
/// message holds one) is marked as a breakpoint too. At most three breakpoints (the API allows
/// four).
fn request_body(
    profile: &RunnerProfile,
    model: &str,
    system: &str,
    tools: Option<&Value>,
    messages: &[Value],
) -> Value {
    let mut messages = messages.to_vec();
    if let Some(last) = messages.last_mut()
        && let Some(blocks) = last["content"].as_array_mut()
        && let Some(block) = blocks.last_mut()
        && block["type"] == "tool_result"
    {
        block["cache_control"] = ephemeral();
    }
    let mut body = json!({
        "model": model,
        "max_tokens": profile.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "system": [{"type": "text", "text": system, "cache_control": ephemeral()}],
        "messages": messages,
    });
    if let Some(temperature) = profile.temperature {
        body["temperature"] = json!(temperature);
    }
    if let Some(tools) = tools {
        body["tools"] = tools.clone();
    }
    body
}

/// Messages API usage → normalized usage: `input_tokens` counts every prompt token (the API's
/// uncached `input_tokens` plus cache writes and reads), `cached_tokens` the reads,
/// `cache_creation_tokens` the writes.
fn parse_usage(value: &Value) -> Usage {
    let usage = &value["usage"];
    let written = usage["cache_creation_input_tokens"].as_u64();
    let read = usage["cache_read_input_tokens"].as_u64();
    Usage {
        input_tokens: usage["input_tokens"]
            .as_u64()
            .map(|uncached| uncached + written.unwrap_or(0) + read.unwrap_or(0)),
        output_tokens: usage["output_tokens"].as_u64(),
        cached_tokens: read,
        cache_creation_tokens: written,
        cost_usd: None,
    }
}

/// A `tool_use` block.
struct ToolUse {
    id: String,
    name: String,
    input: Value,
}

/// What one response said.
struct Reply {
    /// The `content` blocks as received (sent back verbatim as the assistant turn).
    blocks: Vec<Value>,
    /// The text blocks, joined by blank lines.
    text: String,
    tool_uses: Vec<ToolUse>,
    stop_reason: Option<String>,
}

/// Read a successful response; `Err` names what is missing.
fn parse_reply(value: &Value) -> Result<Reply, String> {
    let Some(blocks) = value["content"].as_array() else {
        return Err("response has no `content` array".to_string());
    };
    let mut texts = Vec::new();
    let mut tool_uses = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        match block["type"].as_str() {
            Some("text") => {
                if let Some(text) = block["text"].as_str() {
                    texts.push(text.to_string());
                }
            }
            Some("tool_use") => tool_uses.push(ToolUse {
                id: block["id"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("toolu-{index}")),
                name: block["name"].as_str().unwrap_or("").to_string(),
                input: block["input"].clone(),
            }),
            // Thinking and other blocks are kept in `blocks` (sent back as they came).
            _ => {}
        }
    }
    Ok(Reply {
        blocks: blocks.clone(),
        text: texts.join("\n\n"),
        tool_uses,
        stop_reason: value["stop_reason"].as_str().map(str::to_string),
    })
}

/// The typed cause of a request that failed for good: the HTTP status, else the error's
/// wording, else a timeout when the trial's deadline passed, else a runner failure.
fn failure_cause(failure: &PostFailure, deadline: Instant) -> InfrastructureCause {
    failure
        .status
        .and_then(|status| InfrastructureCause::from_status(u64::from(status)))
        .or_else(|| InfrastructureCause::from_error_text(&failure.message))
        .unwrap_or(
            if Instant::now() >= deadline || failure.message.contains("timed out") {
                InfrastructureCause::Timeout
            } else {
                InfrastructureCause::Runner
            },
        )
}

/// End the attempt: `trajectory` is incomplete for `cause`, kept as the partial record.
fn fail(
    mut trajectory: Trajectory,
    cause: InfrastructureCause,
    message: String,
) -> Result<Trajectory, AttemptError> {
    trajectory.set_infrastructure_error(cause, &message);
    Err(AttemptError {
        message,
        partial: Some(Box::new(trajectory)),
    })
}

#[async_trait]
impl Runner for AnthropicMessagesRunner {
    fn kind(&self) -> &'static str {
        "anthropic-messages"
    }

    fn skills_dir(&self) -> &'static Path {
        Path::new(super::openai_chat::SKILLS_DIR)
    }

    async fn run_attempt(&self, input: AttemptInput<'_>) -> Result<Trajectory, AttemptError> {
        let deadline = Instant::now() + input.timeout;
        let mut trajectory = Trajectory::new();
        let skills = self
            .skill_texts
            .load(input.skills)
            .map_err(|message| AttemptError {
                message,
                partial: None,
            })?;
        let mode = self.profile.skill_mode;
        let system = match mode {
            SkillMode::Inject => inject_system_prompt(&self.profile.system_prompt, &skills),
            SkillMode::Tools => tools_system_prompt(&self.profile.system_prompt, &skills),
        };
        let mut wire_messages = vec![json!({"role": "user", "content": input.prompt})];
        trajectory.messages.push(Message {
            role: Role::System,
            content: system.clone(),
            tool_call_id: None,
        });
        trajectory.messages.push(Message {
            role: Role::User,
            content: input.prompt.to_string(),
            tool_call_id: None,
        });
        let tools = (mode == SkillMode::Tools).then(|| tool_definitions(&skills));
        let policy = RetryPolicy::of_profile(&self.profile);
        let max_turns = if mode == SkillMode::Tools {
            self.profile.max_turns
        } else {
            1
        };
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION)];
        if let Some(key) = self.api_key.as_deref() {
            headers.push(("x-api-key", key));
        }

        for _turn in 0..max_turns {
            let body = request_body(
                &self.profile,
                input.model,
                &system,
                tools.as_ref(),
                &wire_messages,
            );
            let response = match post_json_with_retries_and_headers(
                &self.client,
                &self.url,
                None,
                &headers,
                &body,
                policy,
                deadline,
            )
            .await
            {
                Ok(response) => response,
                Err(failure) => {
                    let cause = failure_cause(&failure, deadline);
                    trajectory.requests.push(RequestRecord {
                        latency_s: 0.0,
                        model: None,
                        finish_reason: None,
                        retries: failure.retries,
                    });
                    return fail(trajectory, cause, failure.message);
                }
            };
            let value = response.body;
            if value["type"] == "error" {
                let kind = value["error"]["type"].as_str().unwrap_or("error");
                let message = format!(
                    "API error {kind}: {}",
                    value["error"]["message"].as_str().unwrap_or("")
                );
                let cause = InfrastructureCause::from_error_text(kind)
                    .unwrap_or(InfrastructureCause::Runner);
                return fail(trajectory, cause, message);
            }
            let reply = match parse_reply(&value) {
                Ok(reply) => reply,
                Err(reason) => {
                    trajectory.raw_events.push(value.clone());
                    trajectory.status = TrajectoryStatus::Incomplete {
                        reason: reason.clone(),
                    };
                    return Err(AttemptError {
                        message: reason,
                        partial: Some(Box::new(trajectory)),
                    });
                }
            };
            let observed_model = value["model"].as_str().map(str::to_string);
            if observed_model.is_some() {
                trajectory.observed_model = observed_model.clone();
            }
            let mut usage = parse_usage(&value);
            if let Some(price) = &self.profile.price {
                usage.cost_usd = price.cost_usd(&usage);
            }
            trajectory.add_request_usage(&usage);
            trajectory.requests.push(RequestRecord {
                latency_s: response.latency_s,
                model: observed_model,
                finish_reason: reply.stop_reason.clone(),
                retries: response.retries,
            });
            trajectory.messages.push(Message {
                role: Role::Assistant,
                content: reply.text.clone(),
                tool_call_id: None,
            });
            let cut = reply.stop_reason.as_deref() == Some("max_tokens");
            if reply.tool_uses.is_empty() || mode == SkillMode::Inject || cut {
                trajectory.final_answer = Some(reply.text);
                return Ok(trajectory);
            }
            wire_messages.push(json!({"role": "assistant", "content": reply.blocks}));
            let mut results = Vec::new();
            let mut final_answer = None;
            for call in reply.tool_uses {
                let started = Instant::now();
                let call_index = trajectory.tool_calls.len();
                let execution = execute_tool(
                    &call.name,
                    &call.input,
                    &input,
                    &skills,
                    &mut trajectory,
                    call_index,
                );
                trajectory.tool_calls.push(ToolCall {
                    id: call.id.clone(),
                    name: call.name,
                    input: call.input,
                    output: Some(execution.output.clone()),
                    is_error: execution.is_error,
                    duration_s: Some(started.elapsed().as_secs_f64()),
                });
                trajectory.messages.push(Message {
                    role: Role::Tool,
                    content: execution.output.clone(),
                    tool_call_id: Some(call.id.clone()),
                });
                let mut result = json!({"type": "tool_result", "tool_use_id": call.id,
                    "content": execution.output});
                if execution.is_error {
                    result["is_error"] = json!(true);
                }
                results.push(result);
                if execution.final_answer.is_some() {
                    final_answer = execution.final_answer;
                }
            }
            if let Some(answer) = final_answer {
                trajectory.final_answer = Some(answer);
                return Ok(trajectory);
            }
            wire_messages.push(json!({"role": "user", "content": results}));
        }
        trajectory.turn_limit_reached = true;
        Ok(trajectory)
    }
}

/// The `anthropic-messages` kind: [`AnthropicMessagesRunner`], skills as the profile's `skill_mode` says.
pub(crate) static KIND: super::kind::ModelApiKind = super::kind::ModelApiKind {
    name: "anthropic-messages",
    build: |profile, api_key| Ok(Box::new(AnthropicMessagesRunner::new(profile, api_key)?)),
    // An empty `base_url` is Anthropic's own API.
    needs_base_url: false,
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn profile(extra: &str) -> RunnerProfile {
        toml::from_str(&format!(
            "kind = \"anthropic-messages\"\nmodel = \"claude-test\"\n{extra}"
        ))
        .unwrap()
    }

    fn skill(name: &str) -> LoadedSkill {
        LoadedSkill {
            name: name.to_string(),
            description: format!("Use for {name}."),
            body: format!("Do {name}."),
        }
    }

    #[test]
    fn requests_cache_the_stable_prefix_and_the_newest_tool_result() {
        let tools = tool_definitions(&[skill("a")]);
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["activate_skill", "read_file", "final_answer"]);
        assert_eq!(tools[2]["cache_control"], json!({"type": "ephemeral"}));
        assert!(tools[0].get("cache_control").is_none());
        assert_eq!(tools[0]["input_schema"]["required"], json!(["name"]));
        let first = [json!({"role": "user", "content": "Q?"})];
        let body = request_body(
            &profile("temperature = 0\n"),
            "m",
            "S",
            Some(&tools),
            &first,
        );
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["messages"], json!(first));
        let later = [
            json!({"role": "user", "content": "Q?"}),
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}),
        ];
        let body = request_body(&profile("max_tokens = 99\n"), "m", "S", None, &later);
        assert_eq!(body["max_tokens"], 99);
        assert!(body.get("tools").is_none());
        assert!(body.get("temperature").is_none());
        assert_eq!(
            body["messages"][2]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        // The conversation kept for the next turn carries no breakpoint of its own.
        assert!(later[2]["content"][0].get("cache_control").is_none());
        let text = body.to_string();
        assert_eq!(text.matches("cache_control").count(), 2);
    }

    #[test]
    fn usage_counts_every_prompt_token_and_the_cache_separately() {
        let usage = parse_usage(&json!({"usage": {"input_tokens": 10,
            "cache_creation_input_tokens": 300, "cache_read_input_tokens": 2000,
            "output_tokens": 50}}));
        assert_eq!(usage.input_tokens, Some(2310));
        assert_eq!(usage.cached_tokens, Some(2000));
        assert_eq!(usage.cache_creation_tokens, Some(300));
        assert_eq!(usage.output_tokens, Some(50));
        let bare = parse_usage(&json!({"usage": {"input_tokens": 10, "output_tokens": 5}}));
        assert_eq!(bare.input_tokens, Some(10));
        assert_eq!(bare.cached_tokens, None);
        assert_eq!(bare.cache_creation_tokens, None);
        // Priced with the cache's own prices: 10 × 3 + 2000 × 0.3 + 300 × 3.75 + 50 × 15.
        let price: crate::record::PriceTable = toml::from_str(
            "input_usd_per_million_tokens = 3\noutput_usd_per_million_tokens = 15\ncache_read_usd_per_million_tokens = 0.3\ncache_write_usd_per_million_tokens = 3.75\n",
        )
        .unwrap();
        let cost = price.cost_usd(&usage).unwrap();
        assert!(
            (cost - (30.0 + 600.0 + 1125.0 + 750.0) / 1e6).abs() < 1e-12,
            "{cost}"
        );
        // Without cache prices every prompt token is an input token.
        let plain: crate::record::PriceTable = toml::from_str(
            "input_usd_per_million_tokens = 3\noutput_usd_per_million_tokens = 15\n",
        )
        .unwrap();
        let cost = plain.cost_usd(&usage).unwrap();
        assert!(
            (cost - (2310.0 * 3.0 + 750.0) / 1e6).abs() < 1e-12,
            "{cost}"
        );
    }

    #[test]
    fn replies_join_text_and_keep_tool_uses_in_order() {
        let reply = parse_reply(&json!({"content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}},
            {"type": "text", "text": "And the skill."},
            {"type": "tool_use", "id": "toolu_2", "name": "activate_skill", "input": {"name": "x"}}
        ], "stop_reason": "tool_use"}))
        .unwrap();
        assert_eq!(reply.text, "Let me look.\n\nAnd the skill.");
        assert_eq!(reply.blocks.len(), 5);
        assert_eq!(reply.stop_reason.as_deref(), Some("tool_use"));
        let names: Vec<&str> = reply.tool_uses.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["read_file", "activate_skill"]);
        assert_eq!(reply.tool_uses[0].id, "toolu_1");
        assert!(parse_reply(&json!({"choices": []})).is_err());
    }

    #[test]
    fn failures_get_typed_causes() {
        let failure = |status: Option<u16>, message: &str| PostFailure {
            message: message.to_string(),
            retries: Vec::new(),
            status,
        };
        let later = Instant::now() + Duration::from_secs(60);
        for (status, message, cause) in [
            (Some(401), "HTTP 401: {}", InfrastructureCause::AuthFailure),
            (Some(403), "HTTP 403: {}", InfrastructureCause::AuthFailure),
            (Some(429), "HTTP 429: {}", InfrastructureCause::RateLimited),
            (Some(529), "HTTP 529: {}", InfrastructureCause::Overloaded),
            (Some(500), "HTTP 500: {}", InfrastructureCause::ServerError),
            (Some(400), "HTTP 400: {}", InfrastructureCause::Runner),
            (
                None,
                "connection failed: error sending request",
                InfrastructureCause::ApiUnreachable,
            ),
            (None, "request timed out", InfrastructureCause::Timeout),
        ] {
            assert_eq!(
                failure_cause(&failure(status, message), later),
                cause,
                "{message}"
            );
        }
        assert_eq!(
            failure_cause(
                &failure(
                    None,
                    "trial timeout reached before the request could be sent"
                ),
                Instant::now()
            ),
            InfrastructureCause::Timeout
        );
    }

    #[test]
    fn the_default_base_url_is_anthropics() {
        let runner = AnthropicMessagesRunner::new(profile(""), Some(String::new())).unwrap();
        assert_eq!(runner.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(runner.api_key, None);
        let runner = AnthropicMessagesRunner::new(
            profile("base_url = \"http://127.0.0.1:9/v1/\"\n"),
            Some("k".into()),
        )
        .unwrap();
        assert_eq!(runner.url, "http://127.0.0.1:9/v1/messages");
    }
}
