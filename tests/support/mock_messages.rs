//! A scripted Anthropic Messages API (non-streaming) on loopback, for the `anthropic-messages`
//! runner: `POST /v1/messages` and the pre-flight `GET /v1/models`.
//!
//! The answer is decided from the request, never from call order, so a paired run has a
//! designed lift of 1.0 in both skill modes: when the skill body's marker is in the `system`
//! prompt (inject mode) or in a `tool_result` (tools mode, after `activate_skill`), answer
//! `with_answer` (in tools mode through the `final_answer` tool); when the `activate_skill`
//! tool is offered and the target is listed in the system prompt and nothing was activated yet,
//! call `activate_skill`; otherwise answer `without_answer` as text. Every answer reports the
//! same usage ([`INPUT_TOKENS`] …), so expected totals are known. The first
//! `rate_limited_first` requests get HTTP 429, alternately with `retry-after` and with only
//! the `anthropic-ratelimit-requests-*` headers. A wrong or missing `x-api-key` gets 401.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use super::serve::{Served, serve};

/// Uncached prompt tokens every answer reports (the API's `input_tokens`).
pub const INPUT_TOKENS: u64 = 40;
/// Prompt tokens written to the cache, per answer.
pub const CACHE_WRITE_TOKENS: u64 = 300;
/// Prompt tokens read from the cache, per answer.
pub const CACHE_READ_TOKENS: u64 = 2000;
/// Output tokens, per answer.
pub const OUTPUT_TOKENS: u64 = 9;

/// What the mock does.
#[derive(Debug, Clone)]
pub struct MessagesBehaviour {
    /// The target skill's name.
    pub target: String,
    /// Text of the skill body that marks it as loaded.
    pub marker: String,
    pub with_answer: String,
    pub without_answer: String,
    /// The `x-api-key` required (401 otherwise).
    pub api_key: String,
    /// Answer this many requests first with HTTP 429: odd ones (1st, 3rd, …) with
    /// `retry-after: {retry_after_s}`, even ones with only `anthropic-ratelimit-requests-reset`
    /// (`retry_after_s` from now) and `anthropic-ratelimit-requests-remaining: 0`.
    pub rate_limited_first: usize,
    pub retry_after_s: u64,
}

pub struct MessagesState {
    pub behaviour: MessagesBehaviour,
    pub requests: AtomicUsize,
    /// Every `POST /v1/messages` body, in arrival order.
    pub bodies: Mutex<Vec<Value>>,
    /// `anthropic-version` values seen.
    pub versions: Mutex<Vec<String>>,
    /// Requests refused for their key.
    pub unauthorised: AtomicUsize,
}

fn authorised(state: &MessagesState, headers: &HeaderMap) -> bool {
    let ok = headers.get("x-api-key").and_then(|v| v.to_str().ok())
        == Some(state.behaviour.api_key.as_str());
    if !ok {
        state.unauthorised.fetch_add(1, Ordering::SeqCst);
    }
    ok
}

fn unauthorised() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        Json(
            json!({"type": "error", "error": {"type": "authentication_error",
            "message": "invalid x-api-key"}}),
        ),
    )
        .into_response()
}

enum Reply {
    Text(String),
    ToolUse { name: &'static str, input: Value },
}

fn decide(behaviour: &MessagesBehaviour, body: &Value) -> Reply {
    let system = body["system"].to_string();
    let messages = body["messages"].to_string();
    let offers_activate = body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "activate_skill"));
    if system.contains(&behaviour.marker) {
        return Reply::Text(behaviour.with_answer.clone());
    }
    if messages.contains(&behaviour.marker) {
        return Reply::ToolUse {
            name: "final_answer",
            input: json!({"answer": behaviour.with_answer}),
        };
    }
    if offers_activate
        && system.contains(&format!("- {}:", behaviour.target))
        && !messages.contains("tool_result")
    {
        return Reply::ToolUse {
            name: "activate_skill",
            input: json!({"name": behaviour.target}),
        };
    }
    Reply::Text(behaviour.without_answer.clone())
}

async fn messages(
    State(state): State<Arc<MessagesState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let number = state.requests.fetch_add(1, Ordering::SeqCst);
    if let Some(version) = headers
        .get("anthropic-version")
        .and_then(|v| v.to_str().ok())
    {
        state.versions.lock().unwrap().push(version.to_string());
    }
    if !authorised(&state, &headers) {
        return unauthorised();
    }
    if number < state.behaviour.rate_limited_first {
        let error = Json(
            json!({"type": "error", "error": {"type": "rate_limit_error",
            "message": "Number of requests has exceeded your per-minute rate limit"}}),
        );
        let wait = state.behaviour.retry_after_s;
        return if number % 2 == 0 {
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", wait.to_string())],
                error,
            )
                .into_response()
        } else {
            let reset = (chrono::Utc::now() + chrono::Duration::seconds(wait as i64))
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            (
                StatusCode::TOO_MANY_REQUESTS,
                [
                    ("anthropic-ratelimit-requests-remaining", "0".to_string()),
                    ("anthropic-ratelimit-requests-reset", reset),
                ],
                error,
            )
                .into_response()
        };
    }
    state.bodies.lock().unwrap().push(body.clone());
    let model = body["model"].as_str().unwrap_or("mock").to_string();
    let (block, stop_reason) = match decide(&state.behaviour, &body) {
        Reply::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Reply::ToolUse { name, input } => (
            json!({"type": "tool_use", "id": format!("toolu_mock_{number}"), "name": name,
                   "input": input}),
            "tool_use",
        ),
    };
    Json(json!({
        "id": format!("msg_mock_{number}"), "type": "message", "role": "assistant",
        "model": format!("{model}-20990101"), "content": [block],
        "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": INPUT_TOKENS, "cache_creation_input_tokens": CACHE_WRITE_TOKENS,
                  "cache_read_input_tokens": CACHE_READ_TOKENS, "output_tokens": OUTPUT_TOKENS}
    }))
    .into_response()
}

async fn models(State(state): State<Arc<MessagesState>>, headers: HeaderMap) -> Response {
    if !authorised(&state, &headers) {
        return unauthorised();
    }
    Json(json!({"data": [{"type": "model", "id": "claude-mock"}], "has_more": false}))
        .into_response()
}

/// A running mock (its runtime lives on a background thread).
pub struct MessagesMock {
    pub address: SocketAddr,
    pub state: Arc<MessagesState>,
    _served: Served,
}

impl MessagesMock {
    pub fn start(behaviour: MessagesBehaviour) -> Self {
        let state = Arc::new(MessagesState {
            behaviour,
            requests: AtomicUsize::new(0),
            bodies: Mutex::new(Vec::new()),
            versions: Mutex::new(Vec::new()),
            unauthorised: AtomicUsize::new(0),
        });
        let router = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/models", get(models))
            .with_state(Arc::clone(&state));
        let served = serve(router);
        Self {
            address: served.address,
            state,
            _served: served,
        }
    }

    /// `http://127.0.0.1:PORT/v1`, a profile's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    pub fn bodies(&self) -> Vec<Value> {
        self.state.bodies.lock().unwrap().clone()
    }
}
