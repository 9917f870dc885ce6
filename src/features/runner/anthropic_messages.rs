//! The `anthropic-messages` runner: skill-lift's own agent loop ([`super::model_api`]) over the
//! Anthropic Messages API
//! (`POST {base_url}/messages`, `x-api-key` and `anthropic-version: 2023-06-01` headers;
//! `base_url` defaults to `https://api.anthropic.com/v1`).
//!
//! The loop, prompts, staged-skill loader and tools are the `openai-chat` runner's; this file is
//! the Messages wire format. `inject` puts every staged skill's body in the top-level `system`
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

use std::time::Instant;

use serde_json::{Value, json};

use super::RunnerProfile;
use super::http::PostFailure;
use super::model_api::{LoadedSkill, tool_specs};
use super::model_api::{MalformedReply, ModelApiRunner, Reply, Request, ToolUse, WireFormat};
use crate::values::trajectory::{InfrastructureCause, Trajectory, Usage};

/// The Messages API base URL used when an `anthropic-messages` profile (runner or judge) has
/// none.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The `anthropic-version` header sent to the Messages API.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` of each request (required by the API) when the profile sets none.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The Messages API wire format.
pub(super) struct Messages;

/// Runner for the Anthropic Messages API.
pub(super) type AnthropicMessagesRunner = ModelApiRunner<Messages>;

impl AnthropicMessagesRunner {
    /// Build the runner; `api_key` is the value of the profile's `api_key_env`, when set.
    pub(super) fn new(
        profile: RunnerProfile,
        api_key: Option<String>,
    ) -> Result<Self, super::kind::BuildError> {
        let configured = profile.base_url.trim().trim_end_matches('/');
        let base = if configured.is_empty() {
            ANTHROPIC_DEFAULT_BASE_URL
        } else {
            configured
        };
        let url = format!("{base}/messages");
        let api_key = api_key.filter(|key| !key.is_empty());
        Self::with_url(profile, api_key, url, Messages)
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
fn request_body(request: Request<'_>) -> Value {
    let Request {
        profile,
        model,
        system,
        tools,
        messages,
        ..
    } = request;
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

/// Read a successful response: the text blocks joined by blank lines, the `tool_use` blocks in
/// order (thinking and other blocks go back on the wire as they came).
fn parse_reply(value: &Value) -> Result<Reply, MalformedReply> {
    let Some(blocks) = value["content"].as_array() else {
        return Err(MalformedReply("response has no `content` array"));
    };
    let mut texts = Vec::new();
    let mut tool_uses = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        match block["type"].as_str() {
            Some("text") => {
                if let Some(text) = block["text"].as_str() {
                    texts.push(text);
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
            _ => {}
        }
    }
    let finish_reason = value["stop_reason"].as_str().map(str::to_string);
    Ok(Reply {
        text: texts.join("\n\n"),
        tool_uses,
        // A `tool_use` block cut by the limit is not run.
        cut: finish_reason.as_deref() == Some("max_tokens"),
        finish_reason,
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

impl WireFormat for Messages {
    fn kind(&self) -> &'static str {
        "anthropic-messages"
    }

    fn auth<'a>(
        &self,
        api_key: Option<&'a str>,
    ) -> (Option<&'a str>, Vec<(&'static str, &'a str)>) {
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION)];
        if let Some(key) = api_key {
            headers.push(("x-api-key", key));
        }
        (None, headers)
    }

    fn tool_definitions(&self, skills: &[LoadedSkill]) -> Value {
        tool_definitions(skills)
    }

    fn first_messages(&self, _system: &str, prompt: &str) -> Vec<Value> {
        vec![json!({"role": "user", "content": prompt})]
    }

    fn request_body(&self, request: Request<'_>) -> Value {
        request_body(request)
    }

    /// The Messages API has no sampling seed: a profile's `seed` is not sent.
    fn takes_seed(&self) -> bool {
        false
    }

    fn record_failure(
        &self,
        trajectory: &mut Trajectory,
        failure: &PostFailure,
        deadline: Instant,
    ) {
        trajectory.set_infrastructure_error(failure_cause(failure, deadline), &failure.message);
    }

    fn api_error(&self, value: &Value) -> Option<(InfrastructureCause, String)> {
        if value["type"] != "error" {
            return None;
        }
        let kind = value["error"]["type"].as_str().unwrap_or("error");
        let message = format!(
            "API error {kind}: {}",
            value["error"]["message"].as_str().unwrap_or("")
        );
        let cause =
            InfrastructureCause::from_error_text(kind).unwrap_or(InfrastructureCause::Runner);
        Some((cause, message))
    }

    fn parse_reply(&self, value: &Value) -> Result<Reply, MalformedReply> {
        parse_reply(value)
    }

    fn usage(&self, value: &Value) -> Usage {
        parse_usage(value)
    }

    fn assistant_turn(&self, value: &Value, _reply: &Reply) -> Value {
        // The `content` blocks as received, thinking blocks included.
        json!({"role": "assistant", "content": value["content"].clone()})
    }

    fn tool_result(&self, id: &str, output: String, is_error: bool) -> Value {
        let mut result = json!({"type": "tool_result", "tool_use_id": id, "content": output});
        if is_error {
            result["is_error"] = json!(true);
        }
        result
    }

    fn push_tool_results(&self, messages: &mut Vec<Value>, results: Vec<Value>) {
        messages.push(json!({"role": "user", "content": results}));
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
    use super::super::model_api::test_skill as skill;
    use super::*;
    use std::time::Duration;

    fn profile(extra: &str) -> RunnerProfile {
        toml::from_str(&format!(
            "kind = \"anthropic-messages\"\nmodel = \"claude-test\"\n{extra}"
        ))
        .unwrap()
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
        let profile_t0 = profile("temperature = 0\n");
        let body = request_body(Request {
            profile: &profile_t0,
            model: "m",
            system: "S",
            tools: Some(&tools),
            messages: &first,
            seed: None,
        });
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
        let profile_99 = profile("max_tokens = 99\n");
        let body = request_body(Request {
            profile: &profile_99,
            model: "m",
            system: "S",
            tools: None,
            messages: &later,
            seed: None,
        });
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
        let value = json!({"content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}},
            {"type": "text", "text": "And the skill."},
            {"type": "tool_use", "id": "toolu_2", "name": "activate_skill", "input": {"name": "x"}}
        ], "stop_reason": "tool_use"});
        let reply = parse_reply(&value).unwrap();
        assert_eq!(reply.text, "Let me look.\n\nAnd the skill.");
        assert_eq!(
            Messages.assistant_turn(&value, &reply)["content"]
                .as_array()
                .unwrap()
                .len(),
            5
        );
        assert!(!reply.cut);
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_use"));
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
