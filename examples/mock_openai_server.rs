//! A scripted OpenAI-compatible mock server for benchmarks and manual testing.
//!
//! `cargo run --release --example mock_openai_server -- [PORT]` prints `listening on
//! http://127.0.0.1:PORT/v1` and answers instantly until killed. Answers begin with "Aye!" when
//! the system prompt holds the text `SKILL-MARKER` (the benchmark skill's body), so a run has a
//! known lift of +100 pp.

// A benchmark helper's own output, not skill-lift's terminal.
#![allow(clippy::disallowed_macros)]

#[path = "../tests/support/mock_openai.rs"]
mod mock_openai;
#[path = "../tests/support/serve.rs"]
mod serve;

use std::sync::Arc;

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let workers: usize = std::env::var("MOCK_WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind loopback");
        println!(
            "listening on http://{}/v1",
            listener.local_addr().expect("address")
        );
        let state = Arc::new(mock_openai::MockState::new(
            mock_openai::MockBehaviour::default(),
        ));
        axum::serve(listener, mock_openai::router(state))
            .await
            .expect("serve");
    });
}
