//! Serve an axum router on an ephemeral loopback port from a background thread; stopped on drop.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use serde_json::{Value, json};

pub struct Served {
    pub address: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub fn serve(router: Router) -> Served {
    let (address_sender, address_receiver) = std::sync::mpsc::channel();
    let (shutdown_sender, shutdown_receiver) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("mock runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind loopback");
            address_sender
                .send(listener.local_addr().expect("address"))
                .expect("send address");
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = shutdown_receiver.await;
                })
                .await
                .expect("serve");
        });
    });
    let address = address_receiver.recv().expect("mock address");
    Served {
        address,
        shutdown: Some(shutdown_sender),
        thread: Some(thread),
    }
}

/// A mock server: its shared state and the server answering from it (stopped on drop).
pub struct Mock<S> {
    pub state: Arc<S>,
    served: Served,
}

impl<S: Send + Sync + 'static> Mock<S> {
    /// Serve `routes` over `state` on an ephemeral loopback port.
    pub fn serve(state: S, routes: Router<Arc<S>>) -> Self {
        let state = Arc::new(state);
        let served = serve(routes.with_state(Arc::clone(&state)));
        Self { state, served }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        self.served.base_url()
    }
}

impl Served {
    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }
}

/// A Chat Completions answer with `content` or `tool_calls` (`finish_reason` `tool_calls` when
/// there are any), under the mock's `(id, model)` and with its `usage`.
pub fn chat_completion(
    (id, model): (&str, &str),
    content: Option<&str>,
    tool_calls: Option<Value>,
    usage: Value,
) -> Value {
    let finish = if tool_calls.is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    let mut message = json!({"role": "assistant", "content": content});
    if let Some(calls) = tool_calls {
        message["tool_calls"] = calls;
    }
    json!({
        "id": id,
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage
    })
}

/// The text of the first user message of a Chat Completions request (empty when none).
pub fn first_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(sender) = self.shutdown.take() {
            let _ = sender.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
