//! The benchmark's reference: the same chat-completion requests a trial sends, fired straight at
//! a server with no harness around them (no staging, grading or recording).
//!
//! `cargo run --release --example raw_load -- URL REQUESTS CONCURRENCY` prints requests per
//! second.

// A benchmark helper's own output, not skill-lift's terminal.
#![allow(clippy::disallowed_macros)]

use std::sync::Arc;
use std::time::Instant;

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("URL");
    let requests: usize = args.next().and_then(|n| n.parse().ok()).expect("REQUESTS");
    let concurrency: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("CONCURRENCY");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .tcp_nodelay(true)
        .build()
        .expect("client");
    let body = serde_json::json!({"model": "m", "messages": [
        {"role": "system", "content": "You are a helpful assistant.\n\n# Skills\n\n## Skill: x\nDescription: d\n\nSKILL-MARKER"},
        {"role": "user", "content": "Question?"}], "max_tokens": 96});
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..requests {
        let permit = Arc::clone(&semaphore)
            .acquire_owned()
            .await
            .expect("semaphore");
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        tasks.spawn(async move {
            let response = client
                .post(format!("{url}/chat/completions"))
                .json(&body)
                .send()
                .await
                .expect("request");
            let _: serde_json::Value = response.json().await.expect("json");
            drop(permit);
        });
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "raw_requests={requests} seconds={seconds:.3} requests_per_s={:.0}",
        requests as f64 / seconds
    );
}
