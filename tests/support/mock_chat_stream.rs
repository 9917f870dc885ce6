//! A scripted OpenAI Chat Completions server with SSE streaming (`stream: true`), enough for
//! OpenCode's `@ai-sdk/openai-compatible` provider, GitHub Copilot CLI's BYOK provider and
//! Qwen Code's OpenAI auth.
//!
//! Decided from the request: marker text (the skill's body) in a `tool` or `user` message →
//! `with_answer` (OpenCode and Qwen Code return the body as the skill tool's result; Copilot
//! sends it as a `<skill-context>` user message); a `skill` tool offered, the target named in the
//! request (i.e. installed) and no tool message yet → call `skill {skill_argument: target}`;
//! otherwise `without_answer`. Requests without tools (OpenCode's title generation) get a short
//! title. Designed lift: 1.0. Every request's bearer token is recorded.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::serve::{Served, serve};

pub const PROMPT_TOKENS: u64 = 100;
pub const CACHED_TOKENS: u64 = 20;
pub const COMPLETION_TOKENS: u64 = 7;

#[derive(Debug, Clone)]
pub struct ChatBehaviour {
    pub target: String,
    pub marker: String,
    pub with_answer: String,
    pub without_answer: String,
    /// The skill tool's argument naming the skill: `name` (OpenCode) or `skill` (Copilot CLI,
    /// Qwen Code).
    pub skill_argument: String,
    /// The skill name the model asks for (default: the target); another name makes the CLI's
    /// skill tool fail.
    pub call_name: Option<String>,
}

pub struct ChatState {
    pub behaviour: ChatBehaviour,
    pub requests: AtomicUsize,
    /// The `Authorization: Bearer` value of every request.
    pub api_keys: std::sync::Mutex<Vec<String>>,
}

async fn completions(
    State(state): State<Arc<ChatState>>,
    headers: axum::http::HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let number = state.requests.fetch_add(1, Ordering::SeqCst);
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim_start_matches("Bearer ").to_string())
        .unwrap_or_default();
    state.api_keys.lock().unwrap().push(bearer);
    let behaviour = &state.behaviour;
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tool_messages: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    let (delta, finish) = if tools.is_empty() {
        (json!({"role": "assistant", "content": "Greeting"}), "stop")
    } else if messages.iter().any(|m| {
        (m["role"] == "tool" || m["role"] == "user")
            && m["content"].to_string().contains(&behaviour.marker)
    }) {
        (
            json!({"role": "assistant", "content": behaviour.with_answer}),
            "stop",
        )
    } else if tool_messages.is_empty()
        && tools.contains(&"skill")
        && body.to_string().contains(&behaviour.target)
    {
        (
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_{number}"), "type": "function",
                "function": {"name": "skill", "arguments": json!({behaviour.skill_argument.as_str(): behaviour.call_name.as_deref().unwrap_or(&behaviour.target)}).to_string()}}]}),
            "tool_calls",
        )
    } else {
        (
            json!({"role": "assistant", "content": behaviour.without_answer}),
            "stop",
        )
    };
    let model = body["model"].clone();
    let usage = json!({"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS, "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS}});
    if body["stream"] != json!(true) {
        let mut message = delta.clone();
        if message.get("content").is_none() {
            message["content"] = Value::Null;
        }
        return Json(json!({"id": format!("chatcmpl-{number}"), "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}))
        .into_response();
    }
    let chunks = [
        json!({"id": format!("chatcmpl-{number}"), "object": "chat.completion.chunk", "created": 1, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
        json!({"id": format!("chatcmpl-{number}"), "object": "chat.completion.chunk", "created": 1, "model": model,
               "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        json!({"id": format!("chatcmpl-{number}"), "object": "chat.completion.chunk", "created": 1, "model": model,
               "choices": [], "usage": usage}),
    ];
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    ([("content-type", "text/event-stream")], text).into_response()
}

pub struct ChatStreamMock {
    pub state: Arc<ChatState>,
    served: Served,
}

impl ChatStreamMock {
    pub fn start(behaviour: ChatBehaviour) -> Self {
        let state = Arc::new(ChatState {
            behaviour,
            requests: AtomicUsize::new(0),
            api_keys: std::sync::Mutex::new(Vec::new()),
        });
        let router = Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(Arc::clone(&state));
        Self {
            state,
            served: serve(router),
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.served.address)
    }
}
