//! The spans of one finished trial, as plain data: a pure function of the trial's record, the
//! outline of its trajectory and the run it belongs to ([`trial_spans`]), which
//! [`super::TraceExport`] hands to the OpenTelemetry SDK. Nothing here talks to the network.
//!
//! Names and attributes follow the OpenTelemetry GenAI semantic conventions as of semantic
//! conventions v1.41.0 (`docs/gen-ai/gen-ai-spans.md`, `gen-ai-agent-spans.md`,
//! `gen-ai-events.md` of `open-telemetry/semantic-conventions`, the last release that holds
//! them before they moved to `open-telemetry/semantic-conventions-genai`): the trial is an
//! `invoke_agent` span, each model turn a `chat` span, each tool call an `execute_tool` span,
//! both children of the trial's; the grade is a `gen_ai.evaluation.result` event on the trial's
//! span. skill-lift's own attributes are under `skill_lift.`.
//!
//! Every string passes the crate's one redactor (`crate::disk::redact::redact_text`) here, so
//! no credential reaches a collector; no prompt, answer, tool input or tool output is exported.

use std::time::{Duration, SystemTime};

use opentelemetry::trace::SpanKind;
use opentelemetry::{Array, KeyValue, StringValue, Value};

use crate::record::{Outcome, TrialRecord};
use crate::values::trajectory::{OutlineStep, TrajectoryOutline};

/// The semantic-conventions release the names and attributes follow (its schema URL is
/// `https://opentelemetry.io/schemas/<version>`).
pub(crate) const SEMCONV_VERSION: &str = "1.41.0";

/// Longest status message (the reason of an unscoreable trial), characters.
const MAX_STATUS_CHARS: usize = 500;

/// What every trial of a run shares (from its manifest).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunIdentity {
    /// The run id.
    pub run_id: String,
    /// The skill under evaluation.
    pub skill: String,
    /// The runner profile's name (`gen_ai.agent.name`).
    pub runner: String,
    /// The runner's kind (`openai-chat`, `claude-code`, …).
    pub runner_kind: String,
    /// `gen_ai.provider.name` ([`provider_name`]).
    pub provider: String,
}

impl RunIdentity {
    /// The identity of the run `manifest` describes.
    pub(crate) fn of(manifest: &crate::record::Manifest) -> Self {
        Self {
            run_id: manifest.run_id.clone(),
            skill: manifest.asset.name.clone(),
            runner: manifest.runner.name.clone(),
            runner_kind: manifest.runner.kind.clone(),
            provider: provider_name(&manifest.runner.kind, &manifest.runner.base_url),
        }
    }
}

/// `gen_ai.provider.name` for a runner of `kind` talking to `base_url`: the convention's
/// well-known value where the kind or the host names one (`anthropic`, `openai`, `gcp.gemini`,
/// `groq`, `deepseek`, `mistral_ai`, `x_ai`, `perplexity`); an OpenAI-compatible server on any
/// other host is `openai` (the wire format, as the convention's note on compatible servers
/// says); an agent CLI that may use any provider is named by its kind (a custom value).
pub(crate) fn provider_name(kind: &str, base_url: &str) -> String {
    match kind {
        "anthropic-messages" | "claude-code" => "anthropic".to_string(),
        "codex" => "openai".to_string(),
        "gemini" => "gcp.gemini".to_string(),
        "openai-chat" => {
            let host = base_url
                .split_once("://")
                .map_or(base_url, |(_, rest)| rest)
                .split(['/', ':'])
                .next()
                .unwrap_or("");
            let known = [
                ("groq.com", "groq"),
                ("deepseek.com", "deepseek"),
                ("mistral.ai", "mistral_ai"),
                ("x.ai", "x_ai"),
                ("perplexity.ai", "perplexity"),
            ];
            known
                .iter()
                .find(|(domain, _)| host == *domain || host.ends_with(&format!(".{domain}")))
                .map_or("openai", |(_, name)| name)
                .to_string()
        }
        other => other.to_string(),
    }
}

/// One span to emit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpanPlan {
    /// The span's name.
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// When it started.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// Its attributes (every string value redacted).
    pub attributes: Vec<KeyValue>,
    /// Its events, at `end`.
    pub events: Vec<EventPlan>,
    /// The error status message, when the operation failed.
    pub error: Option<String>,
}

/// One span event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventPlan {
    /// The event's name.
    pub name: &'static str,
    /// Its attributes.
    pub attributes: Vec<KeyValue>,
}

/// A trial's spans: the trial's own and its children, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrialSpans {
    /// The `invoke_agent` span of the trial.
    pub trial: SpanPlan,
    /// The `chat` and `execute_tool` spans of its steps (children of `trial`).
    pub children: Vec<SpanPlan>,
}

/// A string attribute value through the redactor.
fn text(value: &str) -> Value {
    Value::String(crate::disk::redact::redact_text(value).into_owned().into())
}

/// `value` with every string in it through the redactor (numbers and Booleans as they are).
pub(super) fn redacted(value: &Value) -> Value {
    let redact =
        |text: &str| -> StringValue { crate::disk::redact::redact_text(text).into_owned().into() };
    match value {
        Value::String(text) => Value::String(redact(text.as_str())),
        Value::Array(Array::String(texts)) => Value::Array(Array::String(
            texts.iter().map(|text| redact(text.as_str())).collect(),
        )),
        other => other.clone(),
    }
}

/// A redacted string attribute.
fn string(key: &'static str, value: &str) -> KeyValue {
    KeyValue::new(key, text(value))
}

/// A count as an OTLP int attribute (saturating at `i64::MAX`).
fn count(key: &'static str, value: u64) -> KeyValue {
    KeyValue::new(key, i64::try_from(value).unwrap_or(i64::MAX))
}

/// Seconds as a duration (0 for a negative or non-finite value).
fn seconds(value: f64) -> Duration {
    Duration::try_from_secs_f64(value).unwrap_or_default()
}

/// The snake_case name serde records for `value` (an enum of unit variants).
fn recorded_name<T: serde::Serialize>(value: &T) -> Option<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => Some(name),
        _ => None,
    }
}

/// The spans of the trial `record` of `run`, with one child per step of `outline` (none
/// without one: a trial that failed before its agent ran).
///
/// The trial's span starts at `started_at` and lasts `wall_s` (staging, the agent and grading).
/// skill-lift records how long each step took, not when it began: the children are laid end to
/// end from the trial's start, each as long as it measured (a model request's latency, a tool's
/// execution time; no length where none was measured), and never past the trial's end.
pub(crate) fn trial_spans(
    run: &RunIdentity,
    record: &TrialRecord,
    outline: Option<&TrajectoryOutline>,
) -> TrialSpans {
    let start = SystemTime::from(record.started_at);
    let end = start + seconds(record.wall_s);
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        string("gen_ai.provider.name", &run.provider),
        string("gen_ai.agent.name", &run.runner),
        string("gen_ai.request.model", &record.model),
    ];
    if let Some(model) = &record.observed_model {
        attributes.push(string("gen_ai.response.model", model));
    }
    if let Some(id) = outline.and_then(|o| o.conversation_id.as_deref()) {
        attributes.push(string("gen_ai.conversation.id", id));
    }
    let usage = &record.usage;
    for (key, value) in [
        ("gen_ai.usage.input_tokens", usage.input_tokens),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens),
        (
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_creation_tokens,
        ),
    ] {
        if let Some(value) = value {
            attributes.push(count(key, value));
        }
    }
    attributes.extend([
        string("skill_lift.run.id", &record.run_id),
        string("skill_lift.skill.name", &run.skill),
        string("skill_lift.case.id", &record.case_id),
        KeyValue::new("skill_lift.arm", record.arm.as_str()),
        KeyValue::new("skill_lift.attempt", i64::from(record.attempt)),
        string("skill_lift.trial.id", &record.trial_id),
        string("skill_lift.runner.name", &run.runner),
        string("skill_lift.runner.kind", &run.runner_kind),
        KeyValue::new("skill_lift.trial.outcome", record.outcome.as_str()),
        count("skill_lift.trial.requests", record.requests as u64),
        count("skill_lift.trial.tool_calls", record.tool_calls as u64),
        KeyValue::new("skill_lift.trial.model_latency_s", record.model_latency_s),
    ]);
    if let Some(basis) = record.decided_by {
        attributes.push(KeyValue::new("skill_lift.trial.decided_by", basis.as_str()));
    }
    if let Some(score) = record.outcome_score {
        attributes.push(KeyValue::new("skill_lift.trial.outcome_score", score));
    }
    if let Some(composite) = record.composite {
        attributes.push(KeyValue::new("skill_lift.trial.composite", composite));
    }
    if let Some(cost) = usage.cost_usd {
        attributes.push(KeyValue::new("skill_lift.trial.cost_usd", cost));
    }
    if record.usage_partial {
        attributes.push(KeyValue::new("skill_lift.trial.usage_partial", true));
    }
    if !record.activated_skills.is_empty() {
        let skills: Vec<StringValue> = record
            .activated_skills
            .iter()
            .map(|skill| crate::disk::redact::redact_text(skill).into_owned().into())
            .collect();
        attributes.push(KeyValue::new(
            "skill_lift.trial.activated_skills",
            Value::Array(Array::String(skills)),
        ));
    }
    if record.supersedes {
        attributes.push(KeyValue::new("skill_lift.trial.supersedes", true));
    }
    let mut error = None;
    if record.outcome == Outcome::Unscoreable {
        let cause = record.cause().and_then(|cause| recorded_name(&cause));
        let infrastructure = record.infrastructure.map(|cause| cause.as_str());
        if let Some(cause) = &cause {
            attributes.push(string("skill_lift.trial.unscoreable_cause", cause));
        }
        if let Some(infrastructure) = infrastructure {
            attributes.push(KeyValue::new(
                "skill_lift.trial.infrastructure_cause",
                infrastructure,
            ));
        }
        // `error.type`: a low-cardinality class (the convention's rule), never the message.
        let class = infrastructure
            .map(str::to_string)
            .or(cause)
            .unwrap_or_else(|| "_OTHER".to_string());
        attributes.push(string("error.type", &class));
        let reason = record.reason.as_deref().unwrap_or("unscoreable");
        // `truncate` redacts before it cuts.
        error = Some(crate::disk::redact::truncate(reason, MAX_STATUS_CHARS));
    }
    let trial = SpanPlan {
        name: format!(
            "invoke_agent {}",
            crate::disk::redact::redact_text(&run.runner)
        ),
        kind: SpanKind::Internal,
        start,
        end,
        attributes,
        events: evaluation_events(record),
        error,
    };
    let children = outline
        .map(|outline| step_spans(run, record, outline, start, end))
        .unwrap_or_default();
    TrialSpans { trial, children }
}

/// The trial's grade as `gen_ai.evaluation.result` events: the outcome (`skill_lift.outcome`,
/// labelled `pass` / `fail` / `unscoreable` / `not_gradable`, valued 1 or 0 when scored), then
/// one per metric score in [0,1], by metric name.
fn evaluation_events(record: &TrialRecord) -> Vec<EventPlan> {
    let mut outcome = vec![
        KeyValue::new("gen_ai.evaluation.name", "skill_lift.outcome"),
        KeyValue::new("gen_ai.evaluation.score.label", record.outcome.as_str()),
    ];
    match record.outcome {
        Outcome::Pass => outcome.push(KeyValue::new("gen_ai.evaluation.score.value", 1.0)),
        Outcome::Fail => outcome.push(KeyValue::new("gen_ai.evaluation.score.value", 0.0)),
        Outcome::Unscoreable | Outcome::NotGradable => {}
    }
    let mut events = vec![EventPlan {
        name: "gen_ai.evaluation.result",
        attributes: outcome,
    }];
    events.extend(record.scores.iter().map(|(metric, score)| EventPlan {
        name: "gen_ai.evaluation.result",
        attributes: vec![
            string("gen_ai.evaluation.name", metric),
            KeyValue::new("gen_ai.evaluation.score.value", *score),
        ],
    }));
    events
}

/// The child spans of the outline's steps, laid end to end from `start`, none past `end`.
fn step_spans(
    run: &RunIdentity,
    record: &TrialRecord,
    outline: &TrajectoryOutline,
    start: SystemTime,
    end: SystemTime,
) -> Vec<SpanPlan> {
    let mut cursor = start;
    let mut turn = 0_i64;
    let mut spans = Vec::with_capacity(outline.steps.len());
    for step in &outline.steps {
        let (measured, mut span) = match step {
            OutlineStep::ModelTurn {
                model,
                finish_reason,
                latency_s,
                seed,
                retries,
            } => {
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    string("gen_ai.provider.name", &run.provider),
                    string("gen_ai.request.model", &record.model),
                    KeyValue::new("skill_lift.turn.index", turn),
                ];
                if let Some(model) = model {
                    attributes.push(string("gen_ai.response.model", model));
                }
                if let Some(reason) = finish_reason {
                    attributes.push(KeyValue::new(
                        "gen_ai.response.finish_reasons",
                        Value::Array(Array::String(vec![
                            crate::disk::redact::redact_text(reason).into_owned().into(),
                        ])),
                    ));
                }
                if let Some(seed) = seed {
                    attributes.push(count("gen_ai.request.seed", *seed));
                }
                if *retries > 0 {
                    attributes.push(count("skill_lift.request.retries", *retries as u64));
                }
                turn += 1;
                let span = SpanPlan {
                    name: format!("chat {}", crate::disk::redact::redact_text(&record.model)),
                    kind: SpanKind::Client,
                    start,
                    end,
                    attributes,
                    events: Vec::new(),
                    error: None,
                };
                (*latency_s, span)
            }
            OutlineStep::ToolCall {
                name,
                call_id,
                duration_s,
                is_error,
            } => {
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    string("gen_ai.tool.name", name),
                ];
                if !call_id.is_empty() {
                    attributes.push(string("gen_ai.tool.call.id", call_id));
                }
                let error = is_error.then(|| {
                    attributes.push(KeyValue::new("error.type", "_OTHER"));
                    "the tool's result was an error".to_string()
                });
                let span = SpanPlan {
                    name: format!("execute_tool {}", crate::disk::redact::redact_text(name)),
                    kind: SpanKind::Internal,
                    start,
                    end,
                    attributes,
                    events: Vec::new(),
                    error,
                };
                (*duration_s, span)
            }
        };
        span.start = cursor.min(end);
        span.end = (cursor + seconds(measured.unwrap_or(0.0))).min(end);
        cursor = span.end;
        spans.push(span);
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_are_the_conventions_well_known_names() {
        assert_eq!(provider_name("claude-code", ""), "anthropic");
        assert_eq!(
            provider_name("anthropic-messages", "https://api.anthropic.com/v1"),
            "anthropic"
        );
        assert_eq!(provider_name("codex", ""), "openai");
        assert_eq!(provider_name("gemini", ""), "gcp.gemini");
        assert_eq!(
            provider_name("openai-chat", "https://api.openai.com/v1"),
            "openai"
        );
        assert_eq!(
            provider_name("openai-chat", "https://api.groq.com/openai/v1"),
            "groq"
        );
        assert_eq!(provider_name("openai-chat", "https://api.x.ai/v1"), "x_ai");
        // `x.ai` is a domain, not a suffix of any host.
        assert_eq!(
            provider_name("openai-chat", "http://box.ai:8000/v1"),
            "openai"
        );
        assert_eq!(
            provider_name("openai-chat", "http://127.0.0.1:18765/v1"),
            "openai"
        );
        assert_eq!(provider_name("opencode", ""), "opencode");
    }

    #[test]
    fn steps_are_laid_end_to_end_and_never_past_the_trial() {
        let run = RunIdentity {
            run_id: "r".into(),
            skill: "s".into(),
            runner: "mock".into(),
            runner_kind: "openai-chat".into(),
            provider: "openai".into(),
        };
        let record: TrialRecord = serde_json::from_value(serde_json::json!({
            "run_id": "r", "trial_id": "c/with_skill/1", "case_id": "c", "arm": "with_skill",
            "attempt": 1, "runner": "mock", "model": "m", "observed_model": null,
            "outcome": "pass", "reason": null, "checks": [], "scores": {"checks": 1.0},
            "usage": {"input_tokens": 10, "output_tokens": null, "cached_tokens": null,
                      "cost_usd": null},
            "started_at": "2026-01-01T00:00:00Z", "wall_s": 2.0, "model_latency_s": 1.5,
            "requests": 2, "retries": [], "tool_calls": 1, "activated_skills": ["s"],
            "transcript": null, "workspace": null
        }))
        .unwrap();
        let turn = |latency_s| OutlineStep::ModelTurn {
            model: None,
            finish_reason: None,
            latency_s: Some(latency_s),
            seed: None,
            retries: 0,
        };
        let outline = TrajectoryOutline {
            steps: vec![
                turn(1.0),
                OutlineStep::ToolCall {
                    name: "activate_skill".into(),
                    call_id: "c1".into(),
                    duration_s: None,
                    is_error: true,
                },
                turn(1.5),
            ],
            conversation_id: None,
        };
        let spans = trial_spans(&run, &record, Some(&outline));
        let at = |span: &SpanPlan| {
            (
                span.start.duration_since(spans.trial.start).unwrap(),
                span.end.duration_since(spans.trial.start).unwrap(),
            )
        };
        assert_eq!(
            spans.children.iter().map(at).collect::<Vec<_>>(),
            [
                (Duration::ZERO, Duration::from_secs(1)),
                (Duration::from_secs(1), Duration::from_secs(1)),
                // Cut at the trial's end.
                (Duration::from_secs(1), Duration::from_secs(2)),
            ]
        );
        let names: Vec<&str> = spans.children.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["chat m", "execute_tool activate_skill", "chat m"]);
        assert_eq!(
            spans.children[1].error.as_deref(),
            Some("the tool's result was an error")
        );
        assert_eq!(spans.trial.name, "invoke_agent mock");
        assert!(spans.trial.error.is_none());
        // The outcome and the one metric.
        assert_eq!(spans.trial.events.len(), 2);
        let output_tokens = spans
            .trial
            .attributes
            .iter()
            .any(|kv| kv.key.as_str() == "gen_ai.usage.output_tokens");
        assert!(!output_tokens, "an absent count is not exported as 0");
    }
}
