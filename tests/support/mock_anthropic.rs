//! A scripted Anthropic Messages server with SSE streaming on loopback, enough for Claude Code.
//!
//! The answer is decided from the request, never from call order (Claude Code may send extra
//! requests): when the conversation already holds the skill body's marker, answer `with_answer`;
//! when the target skill is offered (its name appears in the request, i.e. it is installed) and
//! no tool result is in the conversation yet, call `Skill {"skill": target}`; otherwise answer
//! `without_answer`. A paired run therefore has a designed lift of 1.0. With `script_command`,
//! the with-skill conversation runs that skill script through `Bash` before answering.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::serve::{Served, serve};

/// Usage every response reports (so expected totals are known).
pub const INPUT_TOKENS: u64 = 100;
pub const CACHE_READ_TOKENS: u64 = 20;
pub const OUTPUT_TOKENS: u64 = 7;

/// What the mock does.
#[derive(Debug, Clone)]
pub struct AnthropicBehaviour {
    /// The target skill's name.
    pub target: String,
    /// Text of the skill body that marks it as loaded.
    pub marker: String,
    pub with_answer: String,
    pub without_answer: String,
    /// After the skill body arrived, run this shell command (a skill script) with `Bash` before
    /// answering.
    pub script_command: Option<String>,
    /// Call `Skill` with this name instead of the target's (to provoke a refused call).
    pub skill_call_name: Option<String>,
}

pub struct AnthropicState {
    pub behaviour: AnthropicBehaviour,
    pub requests: AtomicUsize,
    /// `x-api-key` values seen (to check credentials reach the CLI).
    pub api_keys: Mutex<Vec<String>>,
}

enum Reply {
    Text(String),
    ToolUse { name: String, input: Value },
}

fn decide(behaviour: &AnthropicBehaviour, body: &Value) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let conversation = Value::Array(messages.clone()).to_string();
    let tool_results = conversation.matches("\"tool_result\"").count();
    if conversation.contains(&behaviour.marker) {
        if let Some(command) = &behaviour.script_command
            && tool_results < 2
        {
            return Reply::ToolUse {
                name: "Bash".to_string(),
                input: json!({"command": command, "description": "Run the skill script"}),
            };
        }
        return Reply::Text(behaviour.with_answer.clone());
    }
    let has_tool_result = tool_results > 0;
    let offers_skill_tool = body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Skill"));
    if offers_skill_tool && !has_tool_result && body.to_string().contains(&behaviour.target) {
        return Reply::ToolUse {
            name: "Skill".to_string(),
            input: json!({"skill": behaviour.skill_call_name.as_ref().unwrap_or(&behaviour.target)}),
        };
    }
    Reply::Text(behaviour.without_answer.clone())
}

fn usage() -> Value {
    json!({"input_tokens": INPUT_TOKENS, "cache_creation_input_tokens": 0,
           "cache_read_input_tokens": CACHE_READ_TOKENS, "output_tokens": OUTPUT_TOKENS})
}

async fn messages(
    State(state): State<Arc<AnthropicState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let number = state.requests.fetch_add(1, Ordering::SeqCst);
    if let Some(key) = headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
        state.api_keys.lock().unwrap().push(key.to_string());
    }
    let model = body["model"].as_str().unwrap_or("mock").to_string();
    let reply = decide(&state.behaviour, &body);
    let id = format!("msg_mock_{number}");
    let (block, stop_reason) = match &reply {
        Reply::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Reply::ToolUse { name, input } => (
            json!({"type": "tool_use", "id": format!("toolu_mock_{number}"), "name": name, "input": input}),
            "tool_use",
        ),
    };
    if body["stream"] != json!(true) {
        return Json(json!({"id": id, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop_reason, "stop_sequence": null, "usage": usage()}))
        .into_response();
    }
    let mut events: Vec<(&str, Value)> = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": INPUT_TOKENS, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": CACHE_READ_TOKENS, "output_tokens": 1}}}),
    )];
    match &reply {
        Reply::Text(text) => {
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ));
            events.push(("ping", json!({"type": "ping"})));
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
            ));
        }
        Reply::ToolUse { input, .. } => {
            let mut start = block.clone();
            start["input"] = json!({});
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": start}),
            ));
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
            ));
        }
    }
    events.push((
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push((
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": OUTPUT_TOKENS}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    (
        [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
        ],
        body,
    )
        .into_response()
}

async fn count_tokens() -> Json<Value> {
    Json(json!({"input_tokens": INPUT_TOKENS}))
}

/// A running mock (its runtime lives on a background thread).
pub struct AnthropicMock {
    pub address: SocketAddr,
    pub state: Arc<AnthropicState>,
    /// Keeps the server running; stopped on drop.
    _served: Served,
}

impl AnthropicMock {
    pub fn start(behaviour: AnthropicBehaviour) -> Self {
        let state = Arc::new(AnthropicState {
            behaviour,
            requests: AtomicUsize::new(0),
            api_keys: Mutex::new(Vec::new()),
        });
        let router = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .with_state(Arc::clone(&state));
        let served = serve(router);
        Self {
            address: served.address,
            state,
            _served: served,
        }
    }

    /// `http://127.0.0.1:PORT` (Claude Code appends `/v1/messages`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }
}
