//! The `openai-chat` runner: skill-lift's own agent loop ([`super::model_api`]) over any
//! OpenAI-compatible Chat Completions server (OpenAI, vLLM, llama.cpp, Ollama).
//!
//! Skill modes (see [`super::SkillMode`]): `inject` puts every staged skill's body in the system
//! prompt, so the arms differ only by the target's body; `tools` lists names and descriptions and
//! offers `activate_skill`, `read_file` and `final_answer` tools, with bounded turns. Skills are
//! read from the staged workspace, never from their source folders.
//!
//! This file is the Chat Completions wire format: the system prompt is the first message, the
//! API key a bearer token, tool calls come as `choices[0].message.tool_calls` (arguments as JSON
//! text) and each result goes back as a `tool` message. A request that failed for good leaves
//! the attempt incomplete with the failure's message.

use std::time::Instant;

use serde_json::{Value, json};

use super::RunnerProfile;
use super::http::PostFailure;
use super::model_api::{LoadedSkill, tool_specs};
use super::model_api::{MalformedReply, ModelApiRunner, Reply, Request, ToolUse, WireFormat};
use crate::values::trajectory::{InfrastructureCause, Trajectory, TrajectoryStatus, Usage};

/// The Chat Completions wire format.
pub(super) struct ChatCompletions;

/// Runner for OpenAI-compatible Chat Completions servers.
pub(super) type OpenAiChatRunner = ModelApiRunner<ChatCompletions>;

impl OpenAiChatRunner {
    /// Build the runner; `api_key` is the value of the profile's `api_key_env`.
    pub(super) fn new(
        profile: RunnerProfile,
        api_key: Option<String>,
    ) -> Result<Self, super::kind::BuildError> {
        let url = format!(
            "{}/chat/completions",
            profile.base_url.trim_end_matches('/')
        );
        Self::with_url(profile, api_key, url, ChatCompletions)
    }
}

fn tool_definitions(skills: &[LoadedSkill]) -> Value {
    tool_specs(skills)
        .into_iter()
        .map(|(name, description, parameters)| {
            json!({"type": "function", "function": {
                "name": name, "description": description, "parameters": parameters}})
        })
        .collect()
}

fn parse_usage(value: &Value) -> Usage {
    let usage = &value["usage"];
    Usage {
        input_tokens: usage["prompt_tokens"].as_u64(),
        output_tokens: usage["completion_tokens"].as_u64(),
        cached_tokens: usage["prompt_tokens_details"]["cached_tokens"].as_u64(),
        cache_creation_tokens: None,
        cost_usd: None,
    }
}

impl WireFormat for ChatCompletions {
    fn kind(&self) -> &'static str {
        "openai-chat"
    }

    fn auth<'a>(
        &self,
        api_key: Option<&'a str>,
    ) -> (Option<&'a str>, Vec<(&'static str, &'a str)>) {
        (api_key, Vec::new())
    }

    fn tool_definitions(&self, skills: &[LoadedSkill]) -> Value {
        tool_definitions(skills)
    }

    fn first_messages(&self, system: &str, prompt: &str) -> Vec<Value> {
        vec![
            json!({"role": "system", "content": system}),
            json!({"role": "user", "content": prompt}),
        ]
    }

    fn request_body(&self, request: Request<'_>) -> Value {
        let Request {
            profile,
            model,
            tools,
            messages,
            seed,
            ..
        } = request;
        let mut body = json!({"model": model, "messages": messages});
        if let Some(temperature) = profile.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(max_tokens) = profile.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if let Some(seed) = seed {
            body["seed"] = json!(seed);
        }
        if let Some(tools) = tools {
            body["tools"] = tools.clone();
            body["tool_choice"] = json!("auto");
        }
        body
    }

    fn takes_seed(&self) -> bool {
        true
    }

    fn record_failure(
        &self,
        trajectory: &mut Trajectory,
        failure: &PostFailure,
        _deadline: Instant,
    ) {
        trajectory.status = TrajectoryStatus::Incomplete {
            reason: failure.message.clone(),
        };
    }

    fn api_error(&self, _body: &Value) -> Option<(InfrastructureCause, String)> {
        None
    }

    fn parse_reply(&self, value: &Value) -> Result<Reply, MalformedReply> {
        let choice = &value["choices"][0];
        let message = &choice["message"];
        if !message.is_object() {
            return Err(MalformedReply("response has no choices[0].message"));
        }
        let tool_uses = message["tool_calls"]
            .as_array()
            .map(|calls| {
                calls
                    .iter()
                    .enumerate()
                    .map(|(index, call)| {
                        let arguments = match &call["function"]["arguments"] {
                            Value::String(text) => serde_json::from_str(text)
                                .unwrap_or_else(|_| Value::String(text.clone())),
                            other => other.clone(),
                        };
                        ToolUse {
                            id: call["id"]
                                .as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| format!("call-{index}")),
                            name: call["function"]["name"].as_str().unwrap_or("").to_string(),
                            input: arguments,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Reply {
            text: message["content"].as_str().unwrap_or("").to_string(),
            tool_uses,
            finish_reason: choice["finish_reason"].as_str().map(str::to_string),
            // A reply cut by `max_tokens` (`length`) still runs the calls it holds.
            cut: false,
        })
    }

    fn usage(&self, value: &Value) -> Usage {
        parse_usage(value)
    }

    fn assistant_turn(&self, value: &Value, reply: &Reply) -> Value {
        let content = if reply.text.is_empty() {
            Value::Null
        } else {
            json!(reply.text)
        };
        let mut assistant = json!({"role": "assistant", "content": content});
        assistant["tool_calls"] = value["choices"][0]["message"]["tool_calls"].clone();
        assistant
    }

    fn tool_result(&self, id: &str, output: String, _is_error: bool) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": output})
    }

    fn push_tool_results(&self, messages: &mut Vec<Value>, results: Vec<Value>) {
        messages.extend(results);
    }
}

/// The `openai-chat` kind: [`OpenAiChatRunner`], skills as the profile's `skill_mode` says.
pub(crate) static KIND: super::kind::ModelApiKind = super::kind::ModelApiKind {
    name: "openai-chat",
    build: |profile, api_key| Ok(Box::new(OpenAiChatRunner::new(profile, api_key)?)),
    // Any OpenAI-compatible server: there is no default address.
    needs_base_url: true,
};
