//! OpenTelemetry trace export: the real `skill-lift` binary runs on the scripted OpenAI mock
//! with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at an OTLP/HTTP receiver on loopback, which
//! decodes every request's protobuf with `opentelemetry-proto`; and with the endpoint pointing
//! at a port nothing listens on, where the run must be the same as without trace export but for
//! one warning.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::{Value, json};
use support::cli::{Project, stderr};
use support::mock_openai::{MockBehaviour, MockServer};
use support::serve::{Served, serve};

/// A credential value the runner profile names (`api_key_env`), planted in the model name the
/// server reports (which the spans carry), a prompt and a resource attribute: no exported
/// string may hold it.
const SECRET: &str = "tr4ce-s3cret-value-4242";
/// The collector's own credential (`OTEL_EXPORTER_OTLP_HEADERS`): sent as a header, never
/// exported as an attribute.
const HEADER_SECRET: &str = "c0llector-key-77231";
/// Prompt text that must not be exported (no content by default).
const PROMPT_CANARY: &str = "PROMPT-CANARY-9931";

/// What the receiver got: every decoded export request, and the content types they came with.
#[derive(Default)]
struct Received {
    requests: Mutex<Vec<ExportTraceServiceRequest>>,
    content_types: Mutex<Vec<String>>,
    /// The `x-collector-key` header of each request.
    collector_keys: Mutex<Vec<String>>,
}

/// An OTLP/HTTP trace receiver on loopback (`POST /v1/traces`, binary protobuf).
fn receiver() -> (Served, Arc<Received>) {
    async fn traces(
        State(received): State<Arc<Received>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> (StatusCode, [(&'static str, &'static str); 1], Vec<u8>) {
        let request = match ExportTraceServiceRequest::decode(body) {
            Ok(request) => request,
            Err(_) => {
                return (
                    StatusCode::BAD_REQUEST,
                    [("content-type", "text/plain")],
                    vec![],
                );
            }
        };
        received.content_types.lock().unwrap().push(
            headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
        );
        received.collector_keys.lock().unwrap().push(
            headers
                .get("x-collector-key")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
        );
        received.requests.lock().unwrap().push(request);
        (
            StatusCode::OK,
            [("content-type", "application/x-protobuf")],
            ExportTraceServiceResponse::default().encode_to_vec(),
        )
    }
    let received = Arc::new(Received::default());
    let router = Router::new()
        .route("/v1/traces", post(traces))
        .with_state(Arc::clone(&received));
    (serve(router), received)
}

/// A project whose skill is `pirate-greeting` in `tools` mode on the mock (which activates the
/// skill with a tool call, then answers), with two cases, one whose prompt holds [`SECRET`] and
/// [`PROMPT_CANARY`].
fn project(mock: &MockServer) -> Project {
    let evals = json!({"skill_name": "pirate-greeting", "evals": [
        {"id": "case-a",
         "prompt": format!("Question {PROMPT_CANARY} {SECRET}?"),
         "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]},
        {"id": "case-b", "prompt": "Question b?",
         "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]}
    ]});
    let project = Project::with_skill("pirate-greeting", &evals.to_string());
    project.write_profile(
        "mock",
        &mock.base_url(),
        "skill_mode = \"tools\"\nmax_turns = 4\napi_key_env = \"TRACE_TEST_KEY\"\n",
    );
    project
}

fn mock() -> MockServer {
    MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        served_model: Some(format!("served-{SECRET}")),
        ..MockBehaviour::default()
    })
}

/// `skill-lift run` of the project's skill, K = 1, with `env` set.
fn run(project: &Project, run_id: &str, env: &[(&str, &str)]) -> std::process::Output {
    std::fs::create_dir_all(project.path("trials")).unwrap();
    let mut command = project.k1_run("skill/pirate-greeting", "mock", run_id);
    command
        .env("TRACE_TEST_KEY", SECRET)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_TRACES_EXPORTER")
        .env_remove("OTEL_TRACES_SAMPLER");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn string_of(value: &Option<AnyValue>) -> Option<String> {
    match value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(text) => Some(text.clone()),
        any_value::Value::IntValue(number) => Some(number.to_string()),
        any_value::Value::DoubleValue(number) => Some(number.to_string()),
        any_value::Value::BoolValue(flag) => Some(flag.to_string()),
        any_value::Value::ArrayValue(array) => Some(
            array
                .values
                .iter()
                .filter_map(|v| string_of(&Some(v.clone())))
                .collect::<Vec<_>>()
                .join(","),
        ),
        _ => None,
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .filter_map(|kv| Some((kv.key.clone(), string_of(&kv.value)?)))
        .collect()
}

/// Every string a collector received: span names, attribute keys and values, event names and
/// attributes, status messages, resource attributes.
fn every_string(requests: &[ExportTraceServiceRequest]) -> Vec<String> {
    let mut strings = Vec::new();
    for request in requests {
        for resource_spans in &request.resource_spans {
            if let Some(resource) = &resource_spans.resource {
                strings.extend(
                    attributes(&resource.attributes)
                        .into_iter()
                        .map(|(k, v)| k + "=" + &v),
                );
            }
            for scope_spans in &resource_spans.scope_spans {
                for span in &scope_spans.spans {
                    strings.push(span.name.clone());
                    strings.extend(
                        attributes(&span.attributes)
                            .into_iter()
                            .map(|(k, v)| k + "=" + &v),
                    );
                    for event in &span.events {
                        strings.push(event.name.clone());
                        strings.extend(
                            attributes(&event.attributes)
                                .into_iter()
                                .map(|(k, v)| k + "=" + &v),
                        );
                    }
                    if let Some(status) = &span.status {
                        strings.push(status.message.clone());
                    }
                }
            }
        }
    }
    strings
}

#[test]
fn every_trial_is_a_genai_span_with_its_turns_and_tool_calls_as_children() {
    let mock = mock();
    let project = project(&mock);
    let (collector, received) = receiver();
    let endpoint = format!("http://{}", collector.address);
    let output = run(
        &project,
        "traced",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "skill-evals"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                &format!("deployment.environment.name=ci,team.token={SECRET}"),
            ),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                &format!("x-collector-key={HEADER_SECRET}"),
            ),
        ],
    );
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("to {endpoint}/v1/traces (OpenTelemetry)")),
        "{said}"
    );
    assert!(!said.contains("warning: trace export"), "{said}");

    let records = project.records("traced");
    assert_eq!(records.len(), 4, "2 cases × 2 arms × K = 1");
    let requests = received.requests.lock().unwrap().clone();
    assert!(!requests.is_empty());
    assert!(
        received
            .content_types
            .lock()
            .unwrap()
            .iter()
            .all(|t| t == "application/x-protobuf")
    );
    let mut spans: Vec<Span> = Vec::new();
    for request in &requests {
        for resource_spans in &request.resource_spans {
            let resource = attributes(&resource_spans.resource.as_ref().unwrap().attributes);
            assert_eq!(resource["service.name"], "skill-evals");
            assert_eq!(resource["deployment.environment.name"], "ci");
            assert!(resource.contains_key("service.version"));
            for scope_spans in &resource_spans.scope_spans {
                let scope = scope_spans.scope.as_ref().unwrap();
                assert_eq!(scope.name, "skill-lift");
                assert_eq!(
                    scope_spans.schema_url,
                    "https://opentelemetry.io/schemas/1.41.0"
                );
                spans.extend(scope_spans.spans.iter().cloned());
            }
        }
    }

    // One `invoke_agent` span per trial, and one child per model request and per tool call.
    let trials: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(trials.len(), records.len());
    let expected_children: u64 = records
        .iter()
        .map(|r| r["requests"].as_u64().unwrap() + r["tool_calls"].as_u64().unwrap())
        .sum();
    assert_eq!(spans.len() as u64, records.len() as u64 + expected_children);

    for record in &records {
        let trial_id = record["trial_id"].as_str().unwrap();
        let trial = trials
            .iter()
            .find(|s| attributes(&s.attributes)["skill_lift.trial.id"] == trial_id)
            .unwrap_or_else(|| panic!("no span for {trial_id}"));
        assert_eq!(trial.name, "invoke_agent mock");
        assert_eq!(trial.kind, SpanKind::Internal as i32);
        let attrs = attributes(&trial.attributes);
        assert_eq!(attrs["gen_ai.operation.name"], "invoke_agent");
        assert_eq!(attrs["gen_ai.provider.name"], "openai");
        assert_eq!(attrs["gen_ai.agent.name"], "mock");
        assert_eq!(attrs["gen_ai.request.model"], "mock-model");
        // The served model's name held the credential.
        assert_eq!(
            attrs["gen_ai.response.model"],
            "served-[REDACTED:$TRACE_TEST_KEY]"
        );
        assert_eq!(
            attrs["gen_ai.usage.input_tokens"],
            record["usage"]["input_tokens"].to_string()
        );
        assert_eq!(
            attrs["gen_ai.usage.output_tokens"],
            record["usage"]["output_tokens"].to_string()
        );
        assert_eq!(attrs["skill_lift.run.id"], "traced");
        assert_eq!(attrs["skill_lift.skill.name"], "pirate-greeting");
        assert_eq!(
            attrs["skill_lift.case.id"],
            record["case_id"].as_str().unwrap()
        );
        assert_eq!(attrs["skill_lift.arm"], record["arm"].as_str().unwrap());
        assert_eq!(attrs["skill_lift.attempt"], record["attempt"].to_string());
        assert_eq!(
            attrs["skill_lift.trial.outcome"],
            record["outcome"].as_str().unwrap()
        );
        // The verdict is the trial's evaluation event.
        let evaluation = trial
            .events
            .iter()
            .map(|e| (e.name.as_str(), attributes(&e.attributes)))
            .find(|(_, a)| a["gen_ai.evaluation.name"] == "skill_lift.outcome")
            .expect("the outcome's evaluation event");
        assert_eq!(evaluation.0, "gen_ai.evaluation.result");
        assert_eq!(
            evaluation.1["gen_ai.evaluation.score.label"],
            record["outcome"].as_str().unwrap()
        );
        // Timing: the trial span lasts the recorded wall time.
        let lasted = (trial.end_time_unix_nano - trial.start_time_unix_nano) as f64 / 1e9;
        assert!((lasted - record["wall_s"].as_f64().unwrap()).abs() < 1e-3);

        // Its children: in the trial's trace, under its span, inside its time.
        let children: Vec<&Span> = spans
            .iter()
            .filter(|s| s.parent_span_id == trial.span_id)
            .collect();
        assert!(children.iter().all(|c| c.trace_id == trial.trace_id));
        assert!(
            children
                .iter()
                .all(|c| c.start_time_unix_nano >= trial.start_time_unix_nano
                    && c.end_time_unix_nano <= trial.end_time_unix_nano)
        );
        let chats: Vec<&&Span> = children
            .iter()
            .filter(|c| c.name == "chat mock-model")
            .collect();
        let tools: Vec<&&Span> = children
            .iter()
            .filter(|c| c.name.starts_with("execute_tool "))
            .collect();
        assert_eq!(
            chats.len() as u64,
            record["requests"].as_u64().unwrap(),
            "{trial_id}"
        );
        assert_eq!(
            tools.len() as u64,
            record["tool_calls"].as_u64().unwrap(),
            "{trial_id}"
        );
        assert_eq!(children.len(), chats.len() + tools.len());
        for chat in &chats {
            let a = attributes(&chat.attributes);
            assert_eq!(chat.kind, SpanKind::Client as i32);
            assert_eq!(a["gen_ai.operation.name"], "chat");
            assert_eq!(a["gen_ai.provider.name"], "openai");
            assert_eq!(a["gen_ai.request.model"], "mock-model");
            assert_eq!(
                a["gen_ai.response.model"],
                "served-[REDACTED:$TRACE_TEST_KEY]"
            );
            assert!(a.contains_key("gen_ai.response.finish_reasons"));
        }
        for tool in &tools {
            let a = attributes(&tool.attributes);
            assert_eq!(a["gen_ai.operation.name"], "execute_tool");
            assert_eq!(tool.name, format!("execute_tool {}", a["gen_ai.tool.name"]));
            assert!(a.contains_key("gen_ai.tool.call.id"));
        }
        if record["arm"] == "with_skill" {
            // The mock activates the skill, then answers: two turns around one tool call.
            assert_eq!(chats.len(), 2);
            assert_eq!(tools.len(), 1);
            assert_eq!(
                attributes(&tools[0].attributes)["gen_ai.tool.name"],
                "activate_skill"
            );
            // Laid in the order they ran: turn, tool, turn.
            let mut ordered = children.clone();
            ordered.sort_by_key(|s| (s.start_time_unix_nano, s.end_time_unix_nano));
            let names: Vec<&str> = ordered.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(
                names,
                [
                    "chat mock-model",
                    "execute_tool activate_skill",
                    "chat mock-model"
                ]
            );
        }
    }
    // One trace per trial.
    let traces: std::collections::BTreeSet<&Vec<u8>> = trials.iter().map(|s| &s.trace_id).collect();
    assert_eq!(traces.len(), records.len());

    // Redacted like everything else: the planted credential is nowhere, the case id that held
    // it carries the marker instead; no prompt text is exported.
    let strings = every_string(&requests);
    for text in &strings {
        assert!(!text.contains(SECRET), "the secret was exported: {text}");
        assert!(
            !text.contains(PROMPT_CANARY),
            "prompt text was exported: {text}"
        );
    }
    for text in &strings {
        assert!(
            !text.contains(HEADER_SECRET),
            "a header value was exported: {text}"
        );
    }
    assert!(
        strings
            .iter()
            .any(|t| t == "team.token=[REDACTED:$TRACE_TEST_KEY]"),
        "{strings:?}"
    );
    // The headers reached the collector.
    assert!(
        received
            .collector_keys
            .lock()
            .unwrap()
            .iter()
            .all(|key| key == HEADER_SECRET)
    );
}

/// The records of `run` with what is measured per trial, without times and the run id.
fn comparable(project: &Project, run_id: &str) -> Vec<Value> {
    let mut records: Vec<Value> = project
        .records(run_id)
        .into_iter()
        .map(|r| {
            json!({
                "trial_id": r["trial_id"], "outcome": r["outcome"], "reason": r["reason"],
                "requests": r["requests"], "tool_calls": r["tool_calls"],
                "activated_skills": r["activated_skills"], "usage": r["usage"],
            })
        })
        .collect();
    records.sort_by(|a, b| a["trial_id"].as_str().cmp(&b["trial_id"].as_str()));
    records
}

#[test]
fn a_dead_collector_changes_nothing_but_one_warning() {
    let mock = mock();
    let project = project(&mock);
    // A loopback port nothing listens on.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let endpoint = format!("http://{dead}");
    let untraced = run(&project, "untraced", &[]);
    let traced = run(
        &project,
        "dead-collector",
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    );
    let (plain, warned) = (stderr(&untraced), stderr(&traced));
    assert_eq!(untraced.status.code(), Some(0), "{plain}");
    assert_eq!(traced.status.code(), untraced.status.code(), "{warned}");
    assert_eq!(
        comparable(&project, "dead-collector"),
        comparable(&project, "untraced")
    );
    let summary = |run_id: &str| {
        let summary = project.result_json(run_id, "summary.json");
        (summary["verdict"].clone(), summary["lift"].clone())
    };
    assert_eq!(summary("dead-collector"), summary("untraced"));
    let warnings: Vec<&str> = warned
        .lines()
        .filter(|line| line.contains("trace export"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warned}");
    assert!(
        warnings[0].starts_with("warning: trace export: 0 of "),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains(&format!("{endpoint}/v1/traces")),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains("the run and its records are not affected"));
    assert!(!plain.contains("trace export"), "{plain}");
}

#[test]
fn a_collector_that_never_answers_costs_one_warning_after_the_export_timeout() {
    let mock = mock();
    let project = project(&mock);
    // A loopback port that accepts connections (the kernel's backlog) but never answers.
    let hung = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", hung.local_addr().unwrap());
    let output = run(
        &project,
        "hung-collector",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "300"),
        ],
    );
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert_eq!(project.records("hung-collector").len(), 4);
    let warnings: Vec<&str> = said
        .lines()
        .filter(|line| line.contains("trace export"))
        .collect();
    assert_eq!(warnings.len(), 1, "{said}");
    assert!(warnings[0].contains("timed out"), "{}", warnings[0]);
    drop(hung);
}
