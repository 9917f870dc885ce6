//! A scripted Gemini API server (`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`),
//! enough for Gemini CLI.
//!
//! Decided from the request: marker text after a `functionResponse` → `with_answer`; the
//! `activate_skill` tool offered, the target named in the request (installed) and no function
//! response yet → call `activate_skill {"name": target}`; otherwise `without_answer`.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::serve::{Served, serve};

pub const PROMPT_TOKENS: u64 = 100;
pub const CACHED_TOKENS: u64 = 20;
pub const CANDIDATE_TOKENS: u64 = 7;

#[derive(Debug, Clone)]
pub struct GeminiBehaviour {
    pub target: String,
    pub marker: String,
    pub with_answer: String,
    pub without_answer: String,
}

pub struct GeminiState {
    pub behaviour: GeminiBehaviour,
    pub requests: AtomicUsize,
}

async fn generate(
    State(state): State<Arc<GeminiState>>,
    Path(rest): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let behaviour = &state.behaviour;
    let (model, method) = rest.split_once(':').unwrap_or((rest.as_str(), ""));
    if method == "countTokens" {
        return Json(json!({"totalTokens": PROMPT_TOKENS})).into_response();
    }
    let contents = body["contents"].to_string();
    let has_response = contents.contains("functionResponse");
    let offers_skill = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| {
            t["functionDeclarations"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .any(|d| d["name"] == "activate_skill");
    let parts = if has_response && contents.contains(&behaviour.marker) {
        json!([{"text": behaviour.with_answer}])
    } else if offers_skill && !has_response && body.to_string().contains(&behaviour.target) {
        json!([{"functionCall": {"name": "activate_skill", "args": {"name": behaviour.target}}}])
    } else {
        json!([{"text": behaviour.without_answer}])
    };
    let response = json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": PROMPT_TOKENS, "candidatesTokenCount": CANDIDATE_TOKENS,
                          "totalTokenCount": PROMPT_TOKENS + CANDIDATE_TOKENS, "cachedContentTokenCount": CACHED_TOKENS},
        "modelVersion": model,
    });
    if method == "streamGenerateContent" {
        (
            [("content-type", "text/event-stream")],
            format!("data: {response}\r\n\r\n"),
        )
            .into_response()
    } else {
        Json(response).into_response()
    }
}

pub struct GeminiMock {
    pub state: Arc<GeminiState>,
    served: Served,
}

impl GeminiMock {
    pub fn start(behaviour: GeminiBehaviour) -> Self {
        let state = Arc::new(GeminiState {
            behaviour,
            requests: AtomicUsize::new(0),
        });
        let router = Router::new()
            .route("/v1beta/models/{*rest}", post(generate))
            .with_state(Arc::clone(&state));
        Self {
            state,
            served: serve(router),
        }
    }

    /// `http://127.0.0.1:PORT` (Gemini CLI appends `/v1beta/models/…`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.served.address)
    }
}
