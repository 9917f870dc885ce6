//! A scripted OpenAI-compatible server that routes by query: for each user message it knows, a
//! designed cycle of skills to activate (one entry per attempt, `None` = activate nothing), so a
//! trigger evaluation has a known activation pattern. Attempts of one query take the cycle's
//! entries in arrival order (a per-query counter), so the counts per query are exact whatever
//! the concurrency. After the tool result it answers `Aye! Done.` when the result holds the text
//! `SKILL-MARKER` (the target's body was loaded) and `Done.` otherwise; with nothing to activate
//! it answers plainly.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use super::serve::{Mock, chat_completion, first_user_text};

/// The designed pattern: query text → skills to activate on its 1st, 2nd, … attempt (cycled).
pub type Routes = HashMap<String, Vec<Option<String>>>;

pub struct RouterState {
    routes: Routes,
    seen: Mutex<HashMap<String, usize>>,
    requests: AtomicUsize,
    /// Answer every request with HTTP 500.
    fail: bool,
}

fn completion(content: Option<&str>, tool_calls: Option<Value>) -> Value {
    chat_completion(
        ("chatcmpl-router", "router-model-1"),
        content,
        tool_calls,
        json!({"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}),
    )
}

async fn chat(State(state): State<Arc<RouterState>>, Json(body): Json<Value>) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    if state.fail {
        return (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded").into_response();
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let user = first_user_text(&body);
    let tool_results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    if body.get("tools").is_none() || !tool_results.is_empty() {
        let marked = tool_results.iter().any(|t| t.contains("SKILL-MARKER"));
        let answer = if marked { "Aye! Done." } else { "Done." };
        return Json(completion(Some(answer), None)).into_response();
    }
    let choice = state.routes.get(&user).and_then(|cycle| {
        let mut seen = state.seen.lock().unwrap();
        let count = seen.entry(user.clone()).or_default();
        let pick = cycle[*count % cycle.len()].clone();
        *count += 1;
        pick
    });
    match choice {
        Some(skill) => {
            let calls = json!([{"id": "call_1", "type": "function",
                "function": {"name": "activate_skill", "arguments": json!({"name": skill}).to_string()}}]);
            Json(completion(None, Some(calls))).into_response()
        }
        None => Json(completion(Some("I can answer that directly."), None)).into_response(),
    }
}

async fn models() -> Json<Value> {
    Json(json!({"object": "list", "data": [{"id": "router-model-1", "object": "model"}]}))
}

/// A running routing mock.
pub type RouterServer = Mock<RouterState>;

impl RouterServer {
    /// Start on an ephemeral loopback port with `routes`; `fail` answers HTTP 500 throughout.
    pub fn start(routes: Routes, fail: bool) -> Self {
        let state = RouterState {
            routes,
            seen: Mutex::new(HashMap::new()),
            requests: AtomicUsize::new(0),
            fail,
        };
        let router = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models));
        Mock::serve(state, router)
    }

    /// Chat requests received.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }
}
