//! The endpoint probe: one small typed request that skill-lift itself sends to the model
//! endpoint an agent CLI was given, when the outage watch stopped that CLI for silence and
//! nothing in its own output or files named a cause. Some CLIs retry a refused key, a rate limit
//! or a failing server without a word (OpenCode 1.18, Qwen Code 0.24): the probe asks the same
//! endpoint with the same credentials and reads the answer's HTTP status.
//!
//! The probe never guesses: 401/403 → `auth_failure`, 429 → `rate_limited` (billing or credit
//! wording → `quota_exhausted`), 5xx → `server_error` (503/529 → `overloaded`), a refused
//! connection or an unknown host → `api_unreachable`; an answer that names nothing (a 2xx, a 404)
//! and a probe that gets no answer leave the cause `timeout`. The evidence (request, status and
//! the first bytes of the body, redacted) goes into the trial's cause detail.
//!
//! Mechanics only: which wire a CLI speaks and when to probe is `super::agent_cli`'s.

use std::time::Duration;

use serde_json::json;

use crate::values::trajectory::InfrastructureCause;

/// Most time the probe waits for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Most time the probe waits for the whole answer (status and the first bytes of the body).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes of the answer's body read.
const MAX_BODY_BYTES: usize = 4096;
/// Most characters of the body kept as evidence.
const EVIDENCE_CHARS: usize = 200;

/// The wire format of the endpoint an agent CLI was pointed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeWire {
    /// OpenAI Chat Completions: `POST {base}/chat/completions`, `Authorization: Bearer`.
    OpenAiChat,
    /// OpenAI Responses: `POST {base}/responses`, `Authorization: Bearer`.
    OpenAiResponses,
    /// Anthropic Messages: `POST {root}/v1/messages`, `x-api-key` (a `base_url` ending in `/v1`
    /// is taken as the root, as Claude Code's `ANTHROPIC_BASE_URL` is).
    AnthropicMessages,
    /// Gemini API: `POST {root}/v1beta/models/{model}:generateContent`, `x-goog-api-key`.
    GeminiGenerateContent,
}

/// One probe to send: where, how, with which model and key.
#[derive(Debug, Clone)]
pub struct ProbeRequest<'a> {
    /// The wire format.
    pub wire: ProbeWire,
    /// The profile's `base_url` (as written; a trailing `/` is ignored).
    pub base_url: &'a str,
    /// The model as the endpoint knows it.
    pub model: &'a str,
    /// The key the CLI was given (`None`: no credential header).
    pub api_key: Option<&'a str>,
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeFinding {
    /// The cause the answer names; `None` when it names none (the cause stays `timeout`).
    pub cause: Option<InfrastructureCause>,
    /// What was sent and what came back (no credential; the body redacted and cut).
    pub evidence: String,
}

impl ProbeRequest<'_> {
    /// The URL, the body and the credential headers of the request.
    fn parts(&self) -> (String, serde_json::Value, Vec<(&'static str, String)>) {
        let base = self.base_url.trim_end_matches('/');
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let key = self.api_key.unwrap_or_default();
        let bearer = || {
            self.api_key
                .map(|key| vec![("authorization", format!("Bearer {key}"))])
                .unwrap_or_default()
        };
        match self.wire {
            ProbeWire::OpenAiChat => (
                format!("{base}/chat/completions"),
                json!({"model": self.model, "messages": [{"role": "user", "content": "ping"}],
                       "max_tokens": 1, "stream": false}),
                bearer(),
            ),
            ProbeWire::OpenAiResponses => (
                format!("{base}/responses"),
                json!({"model": self.model, "input": "ping", "max_output_tokens": 16,
                       "stream": false}),
                bearer(),
            ),
            ProbeWire::AnthropicMessages => (
                format!("{root}/v1/messages"),
                json!({"model": self.model, "max_tokens": 1,
                       "messages": [{"role": "user", "content": "ping"}]}),
                vec![
                    ("x-api-key", key.to_string()),
                    ("anthropic-version", "2023-06-01".to_string()),
                ],
            ),
            ProbeWire::GeminiGenerateContent => (
                format!("{root}/v1beta/models/{}:generateContent", self.model),
                json!({"contents": [{"role": "user", "parts": [{"text": "ping"}]}],
                       "generationConfig": {"maxOutputTokens": 1}}),
                vec![("x-goog-api-key", key.to_string())],
            ),
        }
    }
}

/// The cause an answer of HTTP `status` with body `text` names: only error statuses count,
/// and of those only what the status or the body's billing wording says
/// ([`InfrastructureCause::of_error`]); a 2xx, a redirect or a 4xx naming nothing is `None`.
pub fn cause_of_answer(status: u16, text: &str) -> Option<InfrastructureCause> {
    if !(400..600).contains(&status) {
        return None;
    }
    let named = InfrastructureCause::from_error_text(text);
    if named == Some(InfrastructureCause::QuotaExhausted) {
        return named;
    }
    InfrastructureCause::from_status(u64::from(status))
        // A timeout status (408) from a server that answered is no new information.
        .filter(|cause| *cause != InfrastructureCause::Timeout)
}

/// Send the probe and classify the answer (see the module documentation).
pub async fn probe(request: &ProbeRequest<'_>) -> ProbeFinding {
    let (url, body, headers) = request.parts();
    let what = format!("skill-lift's probe POST {url}");
    let client = match reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(PROBE_TIMEOUT)
        .build()
    {
        Ok(client) => client,
        Err(error) => {
            return ProbeFinding {
                cause: None,
                evidence: format!("{what} could not be sent ({error})"),
            };
        }
    };
    let mut builder = client.post(&url).json(&body);
    for (name, value) in &headers {
        builder = builder.header(*name, value);
    }
    let deadline = tokio::time::Instant::now() + PROBE_TIMEOUT;
    let mut response = match builder.send().await {
        Ok(response) => response,
        Err(error) if error.is_timeout() => {
            return ProbeFinding {
                cause: None,
                evidence: format!("{what} got no answer within {} s", PROBE_TIMEOUT.as_secs()),
            };
        }
        Err(error) if error.is_connect() || error.is_request() => {
            let cause = connection_failure(&error);
            return ProbeFinding {
                evidence: format!("{what} failed: {}", error_chain(&error)),
                cause,
            };
        }
        Err(error) => {
            return ProbeFinding {
                cause: None,
                evidence: format!("{what} failed: {}", error_chain(&error)),
            };
        }
    };
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    while bytes.len() < MAX_BODY_BYTES {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    bytes.truncate(MAX_BODY_BYTES);
    let body = String::from_utf8_lossy(&bytes).into_owned();
    let text = crate::disk::redact::redact_text(&body).into_owned();
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let first: String = joined.chars().take(EVIDENCE_CHARS).collect();
    ProbeFinding {
        cause: cause_of_answer(status, &text),
        evidence: format!("{what} answered HTTP {status}: {first}"),
    }
}

/// A connection that could not be made: the host is unknown or refuses it (`api_unreachable`).
/// Anything else (a TLS failure, a reset after connecting) names no cause.
fn connection_failure(error: &reqwest::Error) -> Option<InfrastructureCause> {
    let text = error_chain(error).to_lowercase();
    let unreachable = [
        "connection refused",
        "dns error",
        "failed to lookup address",
        "name or service not known",
        "no route to host",
        "network is unreachable",
        "tcp connect error",
    ];
    unreachable
        .iter()
        .any(|words| text.contains(words))
        .then_some(InfrastructureCause::ApiUnreachable)
}

/// The error and its sources, joined with `: ` (also [`super::http`]'s words for a failed
/// request: it lives here because `http` sits above the probe in the runner's imports).
pub(crate) fn error_chain(error: &reqwest::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_name_a_cause_only_by_status_or_billing_wording() {
        use InfrastructureCause as C;
        assert_eq!(cause_of_answer(401, "{}"), Some(C::AuthFailure));
        assert_eq!(cause_of_answer(403, "forbidden"), Some(C::AuthFailure));
        assert_eq!(cause_of_answer(429, "slow down"), Some(C::RateLimited));
        assert_eq!(
            cause_of_answer(
                429,
                "You exceeded your current quota, please check your plan"
            ),
            Some(C::QuotaExhausted)
        );
        assert_eq!(
            cause_of_answer(400, "Your credit balance is too low"),
            Some(C::QuotaExhausted)
        );
        assert_eq!(cause_of_answer(500, "oops"), Some(C::ServerError));
        assert_eq!(cause_of_answer(503, ""), Some(C::Overloaded));
        // Never a guess: a success, a redirect, an unknown path or a timeout status.
        assert_eq!(cause_of_answer(200, "rate limit"), None);
        assert_eq!(cause_of_answer(302, ""), None);
        assert_eq!(cause_of_answer(404, "not found"), None);
        assert_eq!(cause_of_answer(400, "unavailable model"), None);
        assert_eq!(cause_of_answer(408, ""), None);
    }

    #[test]
    fn each_wire_has_its_path_and_credential_header() {
        let request = |wire, base| ProbeRequest {
            wire,
            base_url: base,
            model: "m1",
            api_key: Some("k"),
        };
        let (url, body, headers) = request(ProbeWire::OpenAiChat, "http://h:1/v1/").parts();
        assert_eq!(url, "http://h:1/v1/chat/completions");
        assert_eq!(body["max_tokens"], 1);
        assert_eq!(headers, vec![("authorization", "Bearer k".to_string())]);
        let (url, _, _) = request(ProbeWire::OpenAiResponses, "http://h:1/v1").parts();
        assert_eq!(url, "http://h:1/v1/responses");
        let (url, _, headers) = request(ProbeWire::AnthropicMessages, "http://h:1/v1").parts();
        assert_eq!(url, "http://h:1/v1/messages");
        assert_eq!(headers[0], ("x-api-key", "k".to_string()));
        let (url, _, headers) = request(ProbeWire::AnthropicMessages, "http://h:1").parts();
        assert_eq!(url, "http://h:1/v1/messages");
        assert_eq!(headers.len(), 2);
        let (url, _, headers) = request(ProbeWire::GeminiGenerateContent, "http://h:1").parts();
        assert_eq!(url, "http://h:1/v1beta/models/m1:generateContent");
        assert_eq!(headers[0], ("x-goog-api-key", "k".to_string()));
        let mut no_key = request(ProbeWire::OpenAiChat, "http://h:1/v1");
        no_key.api_key = None;
        assert!(no_key.parts().2.is_empty());
    }

    /// A server on loopback that answers every connection with `status` and `body`, or never.
    async fn answering(status: Option<u16>, body: &'static str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 16 * 1024];
                    let _ = socket.read(&mut buffer).await;
                    let Some(status) = status else {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        return;
                    };
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        format!("http://{address}/v1")
    }

    async fn probe_of(base: &str) -> ProbeFinding {
        probe(&ProbeRequest {
            wire: ProbeWire::OpenAiChat,
            base_url: base,
            model: "m1",
            api_key: Some("sk-probe-secret-value"),
        })
        .await
    }

    #[tokio::test]
    async fn the_answer_status_names_the_cause_with_its_evidence() {
        let base = answering(
            Some(429),
            r#"{"error":{"type":"rate_limit_error","message":"Rate limit reached"}}"#,
        )
        .await;
        let finding = probe_of(&base).await;
        assert_eq!(finding.cause, Some(InfrastructureCause::RateLimited));
        assert!(
            finding.evidence.contains("answered HTTP 429: {\"error\""),
            "{}",
            finding.evidence
        );
        let base = answering(Some(401), "{}").await;
        assert_eq!(
            probe_of(&base).await.cause,
            Some(InfrastructureCause::AuthFailure)
        );
        let base = answering(Some(500), "Internal server error").await;
        assert_eq!(
            probe_of(&base).await.cause,
            Some(InfrastructureCause::ServerError)
        );
        // An endpoint that answers: no cause, whatever the text says.
        let base = answering(Some(200), r#"{"note":"rate limit"}"#).await;
        let finding = probe_of(&base).await;
        assert_eq!(finding.cause, None);
        assert!(
            finding.evidence.contains("HTTP 200"),
            "{}",
            finding.evidence
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_unreachable_and_the_key_is_never_evidence() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let base = format!("http://127.0.0.1:{port}/v1");
        let finding = probe(&ProbeRequest {
            wire: ProbeWire::OpenAiChat,
            base_url: &base,
            model: "m1",
            api_key: Some("sk-probe-secret-value"),
        })
        .await;
        assert_eq!(finding.cause, Some(InfrastructureCause::ApiUnreachable));
        assert!(finding.evidence.contains("/v1/chat/completions"));
        assert!(!finding.evidence.contains("sk-probe-secret-value"));
    }
}
