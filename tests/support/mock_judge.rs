//! A scripted LLM judge on loopback (OpenAI-compatible Chat Completions): says yes to every
//! criterion when the rendered trajectory contains `yes_marker`, no otherwise; can answer
//! malformed JSON first; counts requests. Asked about style, it says no to the three style
//! items when the new answer contains `style_no_marker`, yes otherwise, and keeps the prompts.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::serve::Mock;

/// What the judge does.
#[derive(Debug, Clone)]
pub struct JudgeBehaviour {
    /// Text in the judge's prompt that makes every answer yes.
    pub yes_marker: String,
    /// Answer this many requests with text that is not JSON first.
    pub malformed_first: usize,
    /// Always answer malformed.
    pub always_malformed: bool,
    /// Text in the new answer that makes every style item no (none: every style item yes).
    pub style_no_marker: Option<String>,
}

impl Default for JudgeBehaviour {
    fn default() -> Self {
        Self {
            yes_marker: "Aye!".to_string(),
            malformed_first: 0,
            always_malformed: false,
            style_no_marker: None,
        }
    }
}

pub struct JudgeState {
    behaviour: JudgeBehaviour,
    requests: AtomicUsize,
    style_prompts: std::sync::Mutex<Vec<String>>,
}

/// The number of assertions listed in the prompt (`1. …`, `2. …` lines after "Assertions").
fn assertion_count(text: &str) -> usize {
    let mut count = 0;
    for number in 1..100 {
        if text.contains(&format!("\n{number}. ")) {
            count = number;
        } else {
            break;
        }
    }
    count.max(1)
}

async fn complete(State(state): State<Arc<JudgeState>>, Json(request): Json<Value>) -> Json<Value> {
    let index = state.requests.fetch_add(1, Ordering::SeqCst);
    let system = request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Judge only the first user message (later ones are format corrections).
    let user = request["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    // The verdict depends on the agent's final answer only (the expectations may quote the
    // marker too).
    let final_answer = user.rsplit("## Final answer").next().unwrap_or_default();
    let yes = if final_answer.contains(&state.behaviour.yes_marker) {
        "yes"
    } else {
        "no"
    };
    let content = if state.behaviour.always_malformed || index < state.behaviour.malformed_first {
        "I think the answer is mostly fine.".to_string()
    } else if system.contains("format_reason") {
        state.style_prompts.lock().unwrap().push(user.to_string());
        let answer = user.rsplit("# The new answer").next().unwrap_or_default();
        let no = state
            .behaviour
            .style_no_marker
            .as_deref()
            .is_some_and(|marker| answer.contains(marker));
        let word = if no { "no" } else { "yes" };
        json!({"format": word, "format_reason": "scripted format", "language": word,
               "language_reason": "scripted language", "verbosity": word,
               "verbosity_reason": "scripted verbosity"})
        .to_string()
    } else if system.contains("goal_achieved") {
        json!({"goal_achieved": yes, "reason": "scripted"}).to_string()
    } else if system.contains("verdicts") {
        let verdicts: Vec<Value> = (1..=assertion_count(user))
            .map(|n| json!({"assertion": n, "verdict": yes, "evidence": "scripted"}))
            .collect();
        json!({ "verdicts": verdicts }).to_string()
    } else {
        json!({"skill_identified": yes, "action_correct": yes, "factually_accurate": yes,
               "task_addressed": yes, "actionable": yes, "reason": "scripted"})
        .to_string()
    };
    Json(json!({
        "id": "chatcmpl-judge",
        "object": "chat.completion",
        "model": "judge-model-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))
}

/// A running mock judge.
pub type MockJudge = Mock<JudgeState>;

impl MockJudge {
    pub fn start(behaviour: JudgeBehaviour) -> Self {
        let state = JudgeState {
            behaviour,
            requests: AtomicUsize::new(0),
            style_prompts: std::sync::Mutex::new(Vec::new()),
        };
        Mock::serve(
            state,
            Router::new().route("/v1/chat/completions", post(complete)),
        )
    }

    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// The user messages of the style requests, in arrival order.
    pub fn style_prompts(&self) -> Vec<String> {
        self.state.style_prompts.lock().unwrap().clone()
    }
}
