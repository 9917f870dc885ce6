//! A model server that only fails, for every wire format at once (any method, any path): a
//! fixed HTTP status with an error body in the providers' shared shape (`error.message`,
//! `error.type`, `error.code`, `error.status`), or a connection that never answers. Used to
//! check that each agent CLI's failure is recorded `unscoreable` with its typed cause.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::serve::{Served, serve};

/// What the server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 401: the key is refused.
    Unauthorized,
    /// 429: rate-limited.
    RateLimited,
    /// 500: the server failed.
    ServerError,
    /// 400 with the providers' credit/billing wording (Anthropic `credit balance is too low`,
    /// OpenAI `insufficient_quota`).
    CreditExhausted,
    /// Accepts the request and never answers.
    Hang,
}

impl Fault {
    /// Every fault, in order.
    pub const ALL: [Fault; 5] = [
        Fault::Unauthorized,
        Fault::RateLimited,
        Fault::ServerError,
        Fault::CreditExhausted,
        Fault::Hang,
    ];

    /// The short name used in run ids.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Unauthorized => "401",
            Fault::RateLimited => "429",
            Fault::ServerError => "500",
            Fault::CreditExhausted => "credit",
            Fault::Hang => "hang",
        }
    }

    /// The `infrastructure` cause skill-lift must record.
    pub fn cause(self) -> &'static str {
        match self {
            Fault::Unauthorized => "auth_failure",
            Fault::RateLimited => "rate_limited",
            Fault::ServerError => "server_error",
            Fault::CreditExhausted => "quota_exhausted",
            Fault::Hang => "timeout",
        }
    }
}

pub struct FaultState {
    pub fault: Fault,
    pub requests: AtomicUsize,
    /// Set when the mock stops: hanging requests then end (a graceful shutdown waits for them).
    pub released: std::sync::atomic::AtomicBool,
}

async fn answer(State(state): State<Arc<FaultState>>) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let (status, kind, code, message) = match state.fault {
        Fault::Unauthorized => (
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "UNAUTHENTICATED",
            "Incorrect API key provided: invalid x-api-key",
        ),
        Fault::RateLimited => (
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "RESOURCE_EXHAUSTED",
            "Rate limit reached for requests. Please try again later.",
        ),
        Fault::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "INTERNAL",
            "Internal server error",
        ),
        Fault::CreditExhausted => (
            StatusCode::BAD_REQUEST,
            "insufficient_quota",
            "FAILED_PRECONDITION",
            "Your credit balance is too low to access the API. Please go to Plans & Billing to purchase credits.",
        ),
        Fault::Hang => {
            while !state.released.load(Ordering::SeqCst) {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
    };
    (
        status,
        axum::Json(json!({
            "type": "error",
            "error": {"type": kind, "code": status.as_u16(), "status": code, "message": message}
        })),
    )
        .into_response()
}

pub struct FaultMock {
    served: Served,
    pub state: Arc<FaultState>,
}

impl FaultMock {
    pub fn start(fault: Fault) -> Self {
        let state = Arc::new(FaultState {
            fault,
            requests: AtomicUsize::new(0),
            released: std::sync::atomic::AtomicBool::new(false),
        });
        let router = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&state));
        Self {
            served: serve(router),
            state,
        }
    }

    /// The server root (`http://127.0.0.1:PORT`).
    pub fn root_url(&self) -> String {
        format!("http://{}", self.served.address)
    }

    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }
}

impl Drop for FaultMock {
    fn drop(&mut self) {
        self.state.released.store(true, Ordering::SeqCst);
    }
}
