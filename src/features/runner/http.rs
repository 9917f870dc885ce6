//! JSON POST with bounded retries for infrastructure errors only (connection errors, timeouts,
//! HTTP 408, 429 and 5xx, Anthropic's 529 included), honouring `Retry-After` (seconds) and, when
//! it is absent, the Anthropic rate-limit reset headers (`anthropic-ratelimit-*-reset`, RFC 3339),
//! every retry recorded. Shared by model-API runners and judges.
//!
//! A response body is read in chunks under the request's deadline and at most
//! [`RetryPolicy::max_response_bytes`] of it (an error body at most [`MAX_ERROR_BODY_BYTES`]):
//! an endless or huge body ends the request within the trial timeout and bounded memory, with a
//! message that names [`RESPONSE_TOO_LARGE`]. Error bodies are redacted before they are cut for
//! a message, so a key they echo is never split below its recognizable shape.

use std::time::{Duration, Instant};

use crate::values::trajectory::RetryRecord;

/// Retry policy: bounded by count and by the caller's deadline; each answer's body is bounded
/// by `max_response_bytes`.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Most retries after the first try.
    pub max_retries: u32,
    /// First backoff delay; doubles per retry.
    pub base_delay: Duration,
    /// Longest single wait (also caps `Retry-After`).
    pub max_delay: Duration,
    /// Most bytes of one response body read (the profile's `max_response_bytes`).
    pub max_response_bytes: u64,
}

impl RetryPolicy {
    /// The policy a runner profile configures (`max_retries`, `retry_base_delay_s` floored at 0,
    /// `max_retry_delay_s`); shared by the model-API runners and the judge.
    pub fn of_profile(profile: &crate::features::runner::profile::RunnerProfile) -> Self {
        Self {
            max_retries: profile.max_retries,
            base_delay: Duration::from_secs_f64(profile.retry_base_delay_s.max(0.0)),
            max_delay: Duration::from_secs_f64(profile.max_retry_delay_s),
            max_response_bytes: profile.max_response_bytes,
        }
    }
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
    /// The HTTP status of the last answer, when the server answered (absent for connection
    /// errors and timeouts).
    pub status: Option<u16>,
}

enum TryError {
    Retryable {
        message: String,
        retry_after: Option<Duration>,
        status: Option<u16>,
    },
    Fatal(String, Option<u16>),
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

/// The limit families of Anthropic's rate-limit headers: `anthropic-ratelimit-{family}-reset`
/// (an RFC 3339 time) and `anthropic-ratelimit-{family}-remaining`.
const ANTHROPIC_RATELIMIT_FAMILIES: [&str; 4] =
    ["requests", "tokens", "input-tokens", "output-tokens"];

/// The wait Anthropic's rate-limit headers ask for, from `now`: the latest reset time of the
/// limits whose `remaining` is 0, or, when no header says which limit ran out, the latest reset
/// time given. Times in the past wait nothing; unparsable values are ignored; the wait is
/// bounded by [`MAX_RETRY_AFTER_S`]. `None` when no reset header is usable.
pub fn anthropic_ratelimit_wait(
    header: impl Fn(&str) -> Option<String>,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Duration> {
    let mut exhausted = Vec::new();
    let mut any = Vec::new();
    for family in ANTHROPIC_RATELIMIT_FAMILIES {
        let Some(reset) = header(&format!("anthropic-ratelimit-{family}-reset"))
            .and_then(|value| chrono::DateTime::parse_from_rfc3339(value.trim()).ok())
        else {
            continue;
        };
        let wait = (reset.with_timezone(&chrono::Utc) - now)
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(Duration::from_secs_f64(MAX_RETRY_AFTER_S));
        any.push(wait);
        if header(&format!("anthropic-ratelimit-{family}-remaining"))
            .is_some_and(|remaining| remaining.trim() == "0")
        {
            exhausted.push(wait);
        }
    }
    let chosen = if exhausted.is_empty() { any } else { exhausted };
    chosen.into_iter().max()
}

/// The wait a failed answer's headers ask for: `Retry-After` in seconds, else the Anthropic
/// rate-limit reset headers ([`anthropic_ratelimit_wait`]).
fn requested_wait(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    header(reqwest::header::RETRY_AFTER.as_str())
        .as_deref()
        .and_then(parse_retry_after)
        .or_else(|| anthropic_ratelimit_wait(header, chrono::Utc::now()))
}

/// The word a failure message holds when a response body passed its cap (read by
/// [`crate::values::trajectory::InfrastructureCause::from_error_text`]).
pub const RESPONSE_TOO_LARGE: &str = "response_too_large";

/// Most bytes of an error (non-2xx) body read for its message.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Why a body could not be read whole.
enum BodyError {
    /// It passed the cap (bytes).
    TooLarge(u64),
    /// The deadline passed while it streamed.
    TimedOut,
    /// The connection failed while it streamed.
    Read(reqwest::Error),
}

/// Read `response`'s body in chunks, at most `cap` bytes, before `deadline`. Past the cap:
/// the first `cap` bytes when `keep_head` (an error body read for its message), else
/// [`BodyError::TooLarge`].
async fn read_body_capped(
    response: &mut reqwest::Response,
    cap: u64,
    keep_head: bool,
    deadline: tokio::time::Instant,
) -> Result<Vec<u8>, BodyError> {
    if !keep_head
        && let Some(length) = response.content_length()
        && length > cap
    {
        return Err(BodyError::TooLarge(cap));
    }
    let mut bytes = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(BodyError::TimedOut),
            Ok(Err(error)) => return Err(BodyError::Read(error)),
            Ok(Ok(None)) => return Ok(bytes),
            Ok(Ok(Some(chunk))) => {
                if bytes.len() as u64 + chunk.len() as u64 > cap {
                    if keep_head {
                        let room = (cap as usize).saturating_sub(bytes.len());
                        bytes.extend_from_slice(&chunk[..room.min(chunk.len())]);
                        return Ok(bytes);
                    }
                    return Err(BodyError::TooLarge(cap));
                }
                bytes.extend_from_slice(&chunk);
            }
        }
    }
}

async fn try_once(
    client: &reqwest::Client,
    url: &str,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
    timeout: Duration,
    max_response_bytes: u64,
) -> Result<serde_json::Value, TryError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut request = client.post(url).json(body).timeout(timeout);
    if let Some(key) = bearer {
        request = request.bearer_auth(key);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut response = match request.send().await {
        Ok(response) => response,
        Err(error) => {
            let message = describe_reqwest_error(&error);
            return Err(TryError::Retryable {
                message,
                retry_after: None,
                status: None,
            });
        }
    };
    let status = response.status();
    if status.is_success() {
        let bytes = match read_body_capped(&mut response, max_response_bytes, false, deadline).await
        {
            Ok(bytes) => bytes,
            Err(BodyError::TooLarge(cap)) => {
                return Err(TryError::Fatal(
                    format!(
                        "{RESPONSE_TOO_LARGE}: the response body of HTTP {status} passed the profile's max_response_bytes ({cap} bytes)"
                    ),
                    None,
                ));
            }
            Err(BodyError::TimedOut) => {
                return Err(TryError::Retryable {
                    message: "request timed out while the response body streamed".to_string(),
                    retry_after: None,
                    status: None,
                });
            }
            Err(BodyError::Read(error)) => {
                return Err(TryError::Retryable {
                    message: format!("reading response body: {}", describe_reqwest_error(&error)),
                    retry_after: None,
                    status: Some(status.as_u16()),
                });
            }
        };
        return serde_json::from_slice(&bytes).map_err(|error| {
            TryError::Fatal(
                format!("server answered HTTP {status} with a body that is not JSON: {error}"),
                Some(status.as_u16()),
            )
        });
    }
    let retry_after = requested_wait(response.headers());
    let cap = (MAX_ERROR_BODY_BYTES as u64).min(max_response_bytes);
    let text = match read_body_capped(&mut response, cap, true, deadline).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(BodyError::TooLarge(_) | BodyError::TimedOut | BodyError::Read(_)) => String::new(),
    };
    // Redacted whole before it is cut: a key the body echoes is replaced while its shape is
    // still recognizable.
    let text = crate::disk::redact::redact_text(&text);
    let snippet: String = text.chars().take(300).collect();
    let message = format!("HTTP {}: {}", status.as_u16(), snippet.trim());
    if status.as_u16() == 429 || status.is_server_error() || status.as_u16() == 408 {
        Err(TryError::Retryable {
            message,
            retry_after,
            status: Some(status.as_u16()),
        })
    } else {
        Err(TryError::Fatal(message, Some(status.as_u16())))
    }
}

fn describe_reqwest_error(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "request timed out".to_string();
    }
    if error.is_connect() {
        return format!("connection failed: {error}");
    }
    super::endpoint_probe::error_chain(error)
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
                status: None,
            });
        }
        let started = Instant::now();
        match try_once(
            client,
            url,
            bearer,
            headers,
            body,
            remaining,
            policy.max_response_bytes,
        )
        .await
        {
            Ok(body) => {
                return Ok(PostOutcome {
                    body,
                    latency_s: started.elapsed().as_secs_f64(),
                    retries,
                });
            }
            Err(TryError::Fatal(message, status)) => {
                retries.push(RetryRecord {
                    error: message.clone(),
                    waited_s: 0.0,
                });
                return Err(PostFailure {
                    message,
                    retries,
                    status,
                });
            }
            Err(TryError::Retryable {
                message,
                retry_after,
                status,
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
                        status,
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
                        status,
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

    #[test]
    fn anthropic_reset_headers_give_the_wait_of_the_exhausted_limit() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let headers = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.to_string())
            }
        };
        // Requests ran out (reset in 2 s); tokens did not (reset in 30 s): wait 2 s.
        let wait = anthropic_ratelimit_wait(
            headers(&[
                ("anthropic-ratelimit-requests-remaining", "0"),
                ("anthropic-ratelimit-requests-reset", "2026-01-02T03:04:07Z"),
                ("anthropic-ratelimit-tokens-remaining", "5000"),
                ("anthropic-ratelimit-tokens-reset", "2026-01-02T03:04:35Z"),
            ]),
            now,
        );
        assert_eq!(wait, Some(Duration::from_secs(2)));
        // No `remaining` header says which: the latest reset; offsets other than Z work.
        let wait = anthropic_ratelimit_wait(
            headers(&[
                (
                    "anthropic-ratelimit-input-tokens-reset",
                    "2026-01-02T04:04:06+01:00",
                ),
                (
                    "anthropic-ratelimit-output-tokens-reset",
                    "2026-01-02T03:04:05.5Z",
                ),
            ]),
            now,
        );
        assert_eq!(wait, Some(Duration::from_secs(1)));
        // Past resets wait nothing; garbage and absence are no answer.
        assert_eq!(
            anthropic_ratelimit_wait(
                headers(&[("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:00Z")]),
                now
            ),
            Some(Duration::ZERO)
        );
        assert_eq!(
            anthropic_ratelimit_wait(
                headers(&[("anthropic-ratelimit-requests-reset", "soon")]),
                now
            ),
            None
        );
        assert_eq!(anthropic_ratelimit_wait(headers(&[]), now), None);
        // A reset a century away is bounded.
        assert_eq!(
            anthropic_ratelimit_wait(
                headers(&[("anthropic-ratelimit-tokens-reset", "2126-01-02T03:04:05Z")]),
                now
            ),
            Some(Duration::from_secs_f64(MAX_RETRY_AFTER_S))
        );
    }
}
