//! A scripted OpenAI-compatible Chat Completions server on loopback, for integration tests and
//! the throughput benchmark. Answers depend on whether the target skill's marker text is in the
//! system prompt (inject mode) or in a tool result (tools mode), so a run has a known lift.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use super::serve::{Served, chat_completion, serve};

/// What the mock does.
#[derive(Debug, Clone)]
pub struct MockBehaviour {
    /// Text whose presence in the system prompt (or a tool result) marks the with-skill arm.
    pub marker: String,
    /// Answer when the marker is present.
    pub with_answer: String,
    /// Answer when it is absent.
    pub without_answer: String,
    /// Answer the first N requests with HTTP 429 (`Retry-After: retry_after`).
    pub fail_first_with_429: usize,
    /// The `Retry-After` value of those 429 answers, seconds (default "0").
    pub retry_after: &'static str,
    /// Answer every request with HTTP 500.
    pub always_500: bool,
    /// Delay before each answer.
    pub delay: Duration,
    /// In tools mode, call `activate_skill` with this name first.
    pub activate: Option<String>,
    /// In tools mode, call `read_file` with this path once (after the activation, if any),
    /// then answer.
    pub read_file: Option<String>,
    /// Require this bearer token (401 otherwise).
    pub require_bearer: Option<String>,
    /// In tools mode, hand the answer in through the `final_answer` tool instead of a plain
    /// reply.
    pub answer_with_final_answer_tool: bool,
    /// A second marker (say, an older version of the skill) and its answer, given when the
    /// marker is absent but this one is present.
    pub partial: Option<(String, String)>,
    /// Models that use the skill only on some prompts: for a request to the first model, the
    /// marker counts only when a user message contains the second string (so each model of a
    /// matrix run has its own designed lift).
    pub model_needs: Vec<(String, String)>,
    /// A model with a position bias: it follows only the skill listed last (inject mode: the
    /// marker counts only in the last `## Skill:` section; tools mode: `activate` is called
    /// only when that skill is the last one listed).
    pub last_listed_only: bool,
    /// End every answer with ` [seed N]`, the request's `seed` (`none` without one): a model
    /// whose answer is a function of the seed it was sent.
    pub echo_seed: bool,
    /// Keep every request body ([`MockServer::bodies`]; off for the throughput benchmark).
    pub record_bodies: bool,
    /// The model the answers name and `/v1/models` lists (`mock-model-1` when `None`).
    pub served_model: Option<String>,
}

impl Default for MockBehaviour {
    fn default() -> Self {
        Self {
            marker: "SKILL-MARKER".to_string(),
            with_answer: "Aye! Here is the answer.".to_string(),
            without_answer: "Here is the answer.".to_string(),
            fail_first_with_429: 0,
            retry_after: "0",
            always_500: false,
            delay: Duration::ZERO,
            activate: None,
            read_file: None,
            require_bearer: None,
            answer_with_final_answer_tool: false,
            partial: None,
            model_needs: Vec::new(),
            last_listed_only: false,
            echo_seed: false,
            record_bodies: false,
            served_model: None,
        }
    }
}

impl MockBehaviour {
    /// The model the server reports.
    fn served(&self) -> &str {
        self.served_model.as_deref().unwrap_or("mock-model-1")
    }

    /// The answer to a conversation whose context reads `text`.
    fn answer_for(&self, text: &str) -> &str {
        if text.contains(&self.marker) {
            return &self.with_answer;
        }
        match &self.partial {
            Some((marker, answer)) if text.contains(marker.as_str()) => answer,
            _ => &self.without_answer,
        }
    }
}

/// Shared state: behaviour and counters.
pub struct MockState {
    pub behaviour: MockBehaviour,
    pub requests: AtomicUsize,
    pub rejected: AtomicUsize,
    /// Every request body received, in arrival order (with `record_bodies`).
    pub bodies: Mutex<Vec<Value>>,
}

impl MockState {
    /// Fresh state for `behaviour`: no request seen.
    pub fn new(behaviour: MockBehaviour) -> Self {
        Self {
            behaviour,
            requests: AtomicUsize::new(0),
            rejected: AtomicUsize::new(0),
            bodies: Mutex::new(Vec::new()),
        }
    }
}

fn completion(
    behaviour: &MockBehaviour,
    content: Option<&str>,
    tool_calls: Option<Value>,
    prompt_tokens: u64,
) -> Value {
    chat_completion(
        ("chatcmpl-mock", behaviour.served()),
        content,
        tool_calls,
        json!({"prompt_tokens": prompt_tokens, "completion_tokens": 7, "total_tokens": prompt_tokens + 7,
               "prompt_tokens_details": {"cached_tokens": 0}}),
    )
}

async fn chat(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let number = state.requests.fetch_add(1, Ordering::SeqCst);
    if state.behaviour.record_bodies {
        state.bodies.lock().unwrap().push(body.clone());
    }
    let behaviour = &state.behaviour;
    if !behaviour.delay.is_zero() {
        tokio::time::sleep(behaviour.delay).await;
    }
    if let Some(token) = &behaviour.require_bearer {
        let expected = format!("Bearer {token}");
        if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
            return (
                StatusCode::UNAUTHORIZED,
                Json(json!({"error": {"message": "bad key"}})),
            )
                .into_response();
        }
    }
    if behaviour.always_500 {
        state.rejected.fetch_add(1, Ordering::SeqCst);
        return (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded").into_response();
    }
    if number < behaviour.fail_first_with_429 {
        state.rejected.fetch_add(1, Ordering::SeqCst);
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", behaviour.retry_after)],
            Json(json!({"error": {"message": "rate limited"}})),
        )
            .into_response();
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .first()
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    let prompt_tokens = (system.len() / 4) as u64;
    let user_text: String = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let model = body["model"].as_str().unwrap_or("");
    // A model that cannot use the skill on this prompt answers as without it.
    let skill_unused = behaviour
        .model_needs
        .iter()
        .any(|(needy, needle)| needy == model && !user_text.contains(needle.as_str()));
    let answer_for = |text: &str| -> String {
        let answer = if skill_unused {
            behaviour.without_answer.clone()
        } else {
            behaviour.answer_for(text).to_string()
        };
        if behaviour.echo_seed {
            match body["seed"].as_u64() {
                Some(seed) => format!("{answer} [seed {seed}]"),
                None => format!("{answer} [seed none]"),
            }
        } else {
            answer
        }
    };
    let has_tools = body.get("tools").is_some();
    if has_tools {
        let tool_results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
        let listed_last = |name: &str| {
            system
                .lines()
                .rfind(|line| line.starts_with("- ") && line.contains(':'))
                .is_some_and(|line| line.starts_with(&format!("- {name}:")))
        };
        if tool_results.is_empty()
            && let Some(name) = &behaviour.activate
            && system.contains(&format!("- {name}:"))
            && (!behaviour.last_listed_only || listed_last(name))
        {
            let calls = json!([{"id": "call_1", "type": "function",
                "function": {"name": "activate_skill", "arguments": json!({"name": name}).to_string()}}]);
            return Json(completion(behaviour, None, Some(calls), prompt_tokens)).into_response();
        }
        let read_already = messages.iter().any(|m| {
            m["tool_calls"]
                .as_array()
                .is_some_and(|calls| calls.iter().any(|c| c["function"]["name"] == "read_file"))
        });
        if let Some(path) = &behaviour.read_file
            && !read_already
        {
            let calls = json!([{"id": format!("call_read_{}", tool_results.len()), "type": "function",
                "function": {"name": "read_file", "arguments": json!({"path": path}).to_string()}}]);
            return Json(completion(behaviour, None, Some(calls), prompt_tokens)).into_response();
        }
        // What the model read: tool results, and the user's own messages (a skill forced into
        // the prompt).
        let read: String = messages
            .iter()
            .filter(|m| m["role"] == "tool" || m["role"] == "user")
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let answer = answer_for(&read);
        let answer = answer.as_str();
        if behaviour.answer_with_final_answer_tool {
            let calls = json!([{"id": format!("call_{}", tool_results.len() + 1), "type": "function",
                "function": {"name": "final_answer", "arguments": json!({"answer": answer}).to_string()}}]);
            return Json(completion(behaviour, None, Some(calls), prompt_tokens)).into_response();
        }
        return Json(completion(behaviour, Some(answer), None, prompt_tokens)).into_response();
    }
    // A position-biased model reads only the last skill section.
    let read = if behaviour.last_listed_only {
        system.rsplit("## Skill:").next().unwrap_or("").to_string()
    } else {
        system
    };
    let answer = answer_for(&read);
    Json(completion(behaviour, Some(&answer), None, prompt_tokens)).into_response()
}

async fn models(State(state): State<Arc<MockState>>) -> Json<Value> {
    let model = state.behaviour.served();
    Json(json!({"object": "list", "data": [{"id": model, "object": "model"}]}))
}

/// The router serving `/v1/chat/completions` and `/v1/models`.
pub fn router(state: Arc<MockState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .with_state(state)
}

/// A running mock server (its runtime lives on a background thread).
pub struct MockServer {
    pub address: SocketAddr,
    pub state: Arc<MockState>,
    served: Served,
}

impl MockServer {
    /// Start on an ephemeral loopback port.
    pub fn start(behaviour: MockBehaviour) -> Self {
        let state = Arc::new(MockState::new(behaviour));
        let served = serve(router(Arc::clone(&state)));
        Self {
            address: served.address,
            state,
            served,
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        self.served.base_url()
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// The bodies of the requests received so far, in arrival order.
    pub fn bodies(&self) -> Vec<Value> {
        self.state.bodies.lock().unwrap().clone()
    }
}
