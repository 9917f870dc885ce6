//! JSON POST with bounded retries for infrastructure errors only (connection errors, timeouts,
//! HTTP 429 and 5xx), honouring `Retry-After`, every retry recorded. Shared by model-API runners
//! and judges.

use std::time::{Duration, Instant};

use crate::trajectory::RetryRecord;

/// Retry policy: bounded by count and by the caller's deadline.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Most retries after the first try.
    pub max_retries: u32,
    /// First backoff delay; doubles per retry.
    pub base_delay: Duration,
    /// Longest single wait (also caps `Retry-After`).
    pub max_delay: Duration,
}

/// A successful response.
#[derive(Debug)]
pub struct PostOutcome {
    /// Parsed JSON body.
    pub body: serde_json::Value,
    /// Wall time of the successful try, seconds.
    pub latency_s: f64,
    /// Failed tries before it.
    pub retries: Vec<RetryRecord>,
}

/// A request that failed for good.
#[derive(Debug)]
pub struct PostFailure {
    /// What failed last.
    pub message: String,
    /// Failed tries (including the last).
    pub retries: Vec<RetryRecord>,
}

enum TryError {
    Retryable {
        message: String,
        retry_after: Option<Duration>,
    },
    Fatal(String),
}

/// Longest `Retry-After` taken as given, seconds (one day); a larger value (`1e30`) is read as
/// this much, and the caller's `max_delay` caps it further. Never a panic, whatever the header.
pub const MAX_RETRY_AFTER_S: f64 = 86_400.0;

/// Parse a `Retry-After` header value given in seconds (HTTP dates, negative and non-finite
/// values are treated as absent; huge values are bounded by [`MAX_RETRY_AFTER_S`]).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    if !(seconds.is_finite() && seconds >= 0.0) {
        return None;
    }
    Duration::try_from_secs_f64(seconds.min(MAX_RETRY_AFTER_S)).ok()
}

async fn try_once(
    client: &reqwest::Client,
    url: &str,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
    timeout: Duration,
) -> Result<serde_json::Value, TryError> {
    let mut request = client.post(url).json(body).timeout(timeout);
    if let Some(key) = bearer {
        request = request.bearer_auth(key);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) => {
            let message = describe_reqwest_error(&error);
            return Err(TryError::Retryable {
                message,
                retry_after: None,
            });
        }
    };
    let status = response.status();
    if status.is_success() {
        let bytes = response
            .bytes()
            .await
            .map_err(|error| TryError::Retryable {
                message: format!("reading response body: {}", describe_reqwest_error(&error)),
                retry_after: None,
            })?;
        return serde_json::from_slice(&bytes).map_err(|error| {
            TryError::Fatal(format!(
                "server answered HTTP {status} with a body that is not JSON: {error}"
            ))
        });
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let text = response.text().await.unwrap_or_default();
    let snippet: String = text.chars().take(300).collect();
    let message = format!("HTTP {}: {}", status.as_u16(), snippet.trim());
    if status.as_u16() == 429 || status.is_server_error() || status.as_u16() == 408 {
        Err(TryError::Retryable {
            message,
            retry_after,
        })
    } else {
        Err(TryError::Fatal(message))
    }
}

fn describe_reqwest_error(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "request timed out".to_string();
    }
    if error.is_connect() {
        return format!("connection failed: {error}");
    }
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    message
}

/// POST `body` as JSON to `url`, retrying infrastructure errors under `policy` until `deadline`.
pub async fn post_json_with_retries(
    client: &reqwest::Client,
    url: &str,
    bearer: Option<&str>,
    body: &serde_json::Value,
    policy: RetryPolicy,
    deadline: Instant,
) -> Result<PostOutcome, PostFailure> {
    post_json_with_retries_and_headers(client, url, bearer, &[], body, policy, deadline).await
}

/// [`post_json_with_retries`] with extra request headers, `(name, value)` pairs sent on every
/// try (e.g. `x-api-key` and `anthropic-version` for the Anthropic Messages API). Header values
/// may be credentials: they are never logged or recorded, and never appear in failure messages.
pub async fn post_json_with_retries_and_headers(
    client: &reqwest::Client,
    url: &str,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
    policy: RetryPolicy,
    deadline: Instant,
) -> Result<PostOutcome, PostFailure> {
    let mut retries = Vec::new();
    let mut attempt = 0u32;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(PostFailure {
                message: "trial timeout reached before the request could be sent".to_string(),
                retries,
            });
        }
        let started = Instant::now();
        match try_once(client, url, bearer, headers, body, remaining).await {
            Ok(body) => {
                return Ok(PostOutcome {
                    body,
                    latency_s: started.elapsed().as_secs_f64(),
                    retries,
                });
            }
            Err(TryError::Fatal(message)) => {
                retries.push(RetryRecord {
                    error: message.clone(),
                    waited_s: 0.0,
                });
                return Err(PostFailure { message, retries });
            }
            Err(TryError::Retryable {
                message,
                retry_after,
            }) => {
                if attempt >= policy.max_retries {
                    retries.push(RetryRecord {
                        error: message.clone(),
                        waited_s: 0.0,
                    });
                    return Err(PostFailure {
                        message: format!(
                            "{message} (gave up after {} retries)",
                            policy.max_retries
                        ),
                        retries,
                    });
                }
                let backoff = policy
                    .base_delay
                    .saturating_mul(1u32 << attempt.min(16))
                    .min(policy.max_delay);
                // Full jitter on our own backoff; a server's Retry-After is honoured as given.
                let wait = match retry_after {
                    Some(after) => after.min(policy.max_delay),
                    None => backoff.mul_f64(0.5 + 0.5 * rand::random::<f64>()),
                };
                let remaining = deadline.saturating_duration_since(Instant::now());
                if wait >= remaining {
                    retries.push(RetryRecord {
                        error: message.clone(),
                        waited_s: 0.0,
                    });
                    return Err(PostFailure {
                        message: format!("{message} (no time left in the trial timeout to retry)"),
                        retries,
                    });
                }
                retries.push(RetryRecord {
                    error: message,
                    waited_s: wait.as_secs_f64(),
                });
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("inf"), None);
        assert_eq!(
            parse_retry_after("1e30"),
            Some(Duration::from_secs_f64(MAX_RETRY_AFTER_S))
        );
        assert_eq!(
            parse_retry_after("18446744073709551616"),
            Some(Duration::from_secs_f64(MAX_RETRY_AFTER_S))
        );
    }
}
