//! A scripted OpenAI Responses server (`POST /v1/responses`, SSE), enough for Codex `exec`.
//!
//! Codex has no skill tool: it lists installed skills by name and path in its instructions and
//! the model reads `SKILL.md` with a shell command. The mock does the same, decided from the
//! request: marker text in a function-call output → `with_answer`; the target offered and no
//! function-call output yet → `exec_command {"cmd": "cat <skills_dir>/<target>/SKILL.md"}`;
//! otherwise `without_answer`. Designed lift: 1.0.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use super::serve::{Served, serve};

pub const INPUT_TOKENS: u64 = 100;
pub const CACHED_TOKENS: u64 = 20;
pub const OUTPUT_TOKENS: u64 = 7;

#[derive(Debug, Clone)]
pub struct ResponsesBehaviour {
    pub target: String,
    pub skills_dir: String,
    pub marker: String,
    pub with_answer: String,
    pub without_answer: String,
}

pub struct ResponsesState {
    pub behaviour: ResponsesBehaviour,
    pub requests: AtomicUsize,
}

async fn responses(State(state): State<Arc<ResponsesState>>, Json(body): Json<Value>) -> Response {
    let number = state.requests.fetch_add(1, Ordering::SeqCst);
    let behaviour = &state.behaviour;
    let input = body["input"].to_string();
    let has_output = input.contains("function_call_output");
    let item = if has_output && input.contains(&behaviour.marker) {
        message_item(&behaviour.with_answer)
    } else if !has_output && body.to_string().contains(&format!("{}:", behaviour.target)) {
        json!({"type": "function_call", "id": format!("fc_{number}"), "call_id": format!("call_{number}"),
               "name": "exec_command", "status": "completed",
               "arguments": json!({"cmd": format!("cat {}/{}/SKILL.md", behaviour.skills_dir, behaviour.target)}).to_string()})
    } else {
        message_item(&behaviour.without_answer)
    };
    let model = body["model"].clone();
    let response = json!({"id": format!("resp_{number}"), "object": "response", "created_at": 1,
                          "status": "in_progress", "model": model, "output": []});
    let mut completed = response.clone();
    completed["status"] = json!("completed");
    completed["output"] = json!([item]);
    completed["usage"] = json!({"input_tokens": INPUT_TOKENS, "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
        "output_tokens": OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS});
    let events = [
        (
            "response.created",
            json!({"type": "response.created", "sequence_number": 0, "response": response}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "sequence_number": 3, "response": completed}),
        ),
    ];
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    ([("content-type", "text/event-stream")], body).into_response()
}

fn message_item(text: &str) -> Value {
    json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

async fn models() -> Json<Value> {
    Json(json!({"object": "list", "data": []}))
}

pub struct ResponsesMock {
    pub state: Arc<ResponsesState>,
    served: Served,
}

impl ResponsesMock {
    pub fn start(behaviour: ResponsesBehaviour) -> Self {
        let state = Arc::new(ResponsesState {
            behaviour,
            requests: AtomicUsize::new(0),
        });
        let router = Router::new()
            .route("/v1/responses", post(responses))
            .route("/v1/models", get(models))
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

    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }
}
