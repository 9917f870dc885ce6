//! The outage watch of an agent CLI attempt: reads the agent's stdout events and stderr while it
//! runs and declares it stalled when it shows no model answer for `infra_grace_s`: from its
//! start (an agent that never got an answer: an unreachable API retried silently, a server that
//! never replies), or since a retry or API-error notice that no answer followed (a retry storm
//! against a 429, a 5xx or a refused key). The stalled attempt is stopped at once and recorded
//! `unscoreable` with the cause seen, instead of costing the whole trial timeout.
//!
//! Mechanics of stopping are `crate::features::process`'s ([`ProcessWatch`]); what counts as an answer
//! and as an error notice is the format's parser (`super::parsers`). Plain-text output has no
//! events before its end, so it is only watched for retry notices on stderr.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::parsers::{Reported, StreamParser, parse_line, str_field};
use crate::features::process::ProcessWatch;
use crate::values::trajectory::{InfrastructureCause, Role};

/// What the watch saw when it stopped an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Stall {
    /// The cause seen (the last retry or error notice), or [`InfrastructureCause::Timeout`]
    /// when the agent showed nothing but silence.
    pub cause: InfrastructureCause,
    /// What the agent said, or what skill-lift saw.
    pub message: String,
}

/// Watches one attempt's output (see the module documentation).
pub struct OutageWatch {
    format: &'static dyn StreamParser,
    grace: Option<Duration>,
    started: Instant,
    /// When the agent first printed anything (stdout or stderr): the silence clock starts
    /// there, so a slow start on a loaded machine is not taken for an outage.
    first_output: Option<Instant>,
    /// When the model last answered (`None`: not yet).
    last_answer: Option<Instant>,
    /// The last infrastructure notice since the last answer: cause and message.
    seen: Option<(InfrastructureCause, String)>,
    /// When the first notice since the last answer came.
    seen_since: Option<Instant>,
    /// An unfinished stderr line.
    stderr_line: Vec<u8>,
}

impl OutageWatch {
    /// A watch of output in `format`; `grace` `None` turns the stall check off (the final event
    /// is still recognised).
    pub fn new(format: &'static dyn StreamParser, grace: Option<Duration>) -> Self {
        Self {
            format,
            grace,
            started: Instant::now(),
            first_output: None,
            last_answer: None,
            seen: None,
            seen_since: None,
            stderr_line: Vec::new(),
        }
    }

    /// What the watch saw, for an attempt it stopped: the cause seen, else a timeout with
    /// the silence described.
    pub fn stall(&self) -> Stall {
        let grace = self.grace.map_or(0.0, |g| g.as_secs_f64());
        match &self.seen {
            Some((cause, message)) => Stall {
                cause: *cause,
                message: format!(
                    "{message} (no model answer followed for {grace:.0} s, infra_grace_s; stopped)"
                ),
            },
            None => Stall {
                cause: InfrastructureCause::Timeout,
                message: format!(
                    "no model answer within {grace:.0} s (infra_grace_s) and no error reported; stopped"
                ),
            },
        }
    }

    /// The cause of an infrastructure notice in a stdout event, when it is one.
    fn notice(&self, event: &Value) -> Option<(InfrastructureCause, String)> {
        let kind = str_field(event, "type").unwrap_or("");
        match self.format.reported(kind, event)? {
            Reported::Fatal(status, message, _) => {
                InfrastructureCause::of_error(status, &message).map(|cause| (cause, message))
            }
            Reported::Retrying(status, message, transport) => {
                InfrastructureCause::of_error(status, &message)
                    .or(transport.then_some(InfrastructureCause::ApiUnreachable))
                    .map(|cause| (cause, message))
            }
        }
    }

    /// Whether a stdout event is a model answer: an assistant message with text, a tool call,
    /// or a final answer, as the format's parser reads it (an agent's synthetic error message,
    /// Claude Code's `error` or `<synthetic>` model, is not one).
    fn is_answer(&self, line: &str, event: &Value) -> bool {
        if event.get("error").is_some_and(|error| !error.is_null())
            || event["message"]["model"].as_str() == Some("<synthetic>")
            || event.get("is_api_error_message").and_then(Value::as_bool) == Some(true)
        {
            return false;
        }
        let trajectory = self.format.parse_events(&[line.to_string()]);
        !trajectory.tool_calls.is_empty()
            || trajectory.final_answer.is_some()
            || trajectory
                .messages
                .iter()
                .any(|m| m.role == Role::Assistant && !m.content.trim().is_empty())
    }

    /// The moment the stall condition holds, when it can: `grace` after the agent's first
    /// output (twice `grace` after its start when it printed nothing at all) when nothing
    /// answered yet (structured output only), or `grace` after the first retry or error
    /// notice that no answer followed.
    fn stall_at(&self) -> Option<Instant> {
        let grace = self.grace?;
        let silence_from = self.first_output.unwrap_or(self.started + grace);
        let silence = (self.last_answer.is_none() && !self.format.is_plain_text())
            .then_some(silence_from + grace);
        let storm = self.seen_since.map(|since| since + grace);
        match (silence, storm) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Note an infrastructure notice.
    fn note(&mut self, notice: (InfrastructureCause, String)) {
        self.seen = Some(notice);
        self.seen_since.get_or_insert_with(Instant::now);
    }
}

impl ProcessWatch for OutageWatch {
    fn line(&mut self, line: &str) -> bool {
        self.first_output.get_or_insert_with(Instant::now);
        let is_final = self.format.is_final_event(line);
        if self.grace.is_some()
            && !self.format.is_plain_text()
            && let Some(event) = parse_line(line)
        {
            if self.is_answer(line, &event) {
                self.last_answer = Some(Instant::now());
                self.seen = None;
                self.seen_since = None;
            } else if let Some(notice) = self.notice(&event) {
                self.note(notice);
            }
        }
        is_final
    }

    fn stderr(&mut self, bytes: &[u8]) {
        if self.grace.is_none() {
            return;
        }
        self.first_output.get_or_insert_with(Instant::now);
        self.stderr_line.extend_from_slice(bytes);
        while let Some(end) = self.stderr_line.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.stderr_line.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line);
            if let Some(cause) = InfrastructureCause::from_error_text(&text) {
                self.note((cause, crate::disk::redact::truncate(text.trim(), 300)));
            }
        }
        if self.stderr_line.len() > 64 * 1024 {
            self.stderr_line.clear();
        }
    }

    fn next_check(&self) -> Option<Instant> {
        self.stall_at()
    }

    fn stalled(&mut self, now: Instant) -> bool {
        self.stall_at().is_some_and(|at| now >= at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::runner::parsers::OutputFormat;

    fn watch(format: OutputFormat, grace_ms: u64) -> OutageWatch {
        OutageWatch::new(format.parser(), Some(Duration::from_millis(grace_ms)))
    }

    #[test]
    fn silence_past_the_grace_is_a_stall_with_timeout_cause() {
        let mut watch = watch(OutputFormat::ClaudeStreamJson, 1000);
        let quiet = watch.next_check().unwrap();
        assert!(
            quiet >= watch.started + Duration::from_secs(2),
            "no output: twice the grace"
        );
        assert!(!watch.line(r#"{"type":"system","subtype":"init","session_id":"s"}"#));
        let at = watch.next_check().unwrap();
        assert!(!watch.stalled(at - Duration::from_millis(1)));
        assert!(watch.stalled(at));
        assert_eq!(watch.stall().cause, InfrastructureCause::Timeout);
        assert!(watch.stall().message.contains("no model answer within 1 s"));
        assert!(
            watch.line(r#"{"type":"result","subtype":"success","is_error":false,"result":"x"}"#)
        );
    }

    #[test]
    fn an_answer_ends_the_no_answer_rule_and_a_retry_notice_starts_a_storm() {
        let mut watch = watch(OutputFormat::ClaudeStreamJson, 1000);
        watch.line(r#"{"type":"assistant","message":{"id":"m","model":"c","role":"assistant","content":[{"type":"text","text":"Hi"}]}}"#);
        assert_eq!(
            watch.next_check(),
            None,
            "answered, no notice: nothing to check"
        );
        assert!(!watch.stalled(Instant::now() + Duration::from_secs(3600)));
        let before = Instant::now();
        watch.line(r#"{"type":"system","subtype":"api_retry","error_status":429,"error":"rate_limit_error"}"#);
        let at = watch.next_check().unwrap();
        assert!(
            at >= before + Duration::from_secs(1),
            "a storm counts from its start"
        );
        assert!(!watch.stalled(before));
        assert!(watch.stalled(at));
        assert_eq!(watch.stall().cause, InfrastructureCause::RateLimited);
        // A later answer ends the storm.
        watch.line(r#"{"type":"assistant","message":{"id":"m2","model":"c","role":"assistant","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}]}}"#);
        assert_eq!(watch.next_check(), None);
    }

    #[test]
    fn a_synthetic_error_message_is_no_answer() {
        let mut watch = watch(OutputFormat::ClaudeStreamJson, 1000);
        watch.line(r#"{"type":"assistant","message":{"id":"m","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 401 invalid x-api-key"}]},"error":"authentication_failed"}"#);
        assert!(watch.next_check().is_some());
    }

    #[test]
    fn stderr_retry_lines_name_the_cause_and_plain_text_is_exempt_from_silence() {
        let mut watch = watch(OutputFormat::Text, 1000);
        assert_eq!(watch.next_check(), None, "plain text: silence is no stall");
        watch.stderr(b"Attempt 1 failed with status 503. Retrying with backoff...\n");
        assert!(watch.stalled(watch.next_check().unwrap()));
        assert_eq!(watch.stall().cause, InfrastructureCause::Overloaded);
    }

    #[test]
    fn no_grace_never_stalls() {
        let mut watch = OutageWatch::new(OutputFormat::ClaudeStreamJson.parser(), None);
        watch.stderr(b"HTTP 429 rate limit\n");
        assert_eq!(watch.next_check(), None);
        assert!(!watch.stalled(Instant::now() + Duration::from_secs(3600)));
    }
}
