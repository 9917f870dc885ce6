//! OpenTelemetry trace export of a run's trials: with `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, every trial the run executes becomes one span,
//! with a child span per model turn and per tool call ([`spans`]), sent over OTLP/HTTP
//! (protobuf) with the maintained `opentelemetry` crates.
//!
//! The scheduler's dispatcher (`crate::pipeline::execute`) hands each finished trial to
//! [`TraceExport::trial_finished`], which builds its spans in memory and queues them; the SDK's
//! batch span processor exports them from its own thread with a bounded queue
//! (`OTEL_BSP_MAX_QUEUE_SIZE`, 2048 spans by default; spans past it are dropped, never waited
//! for). Nothing on the trial path waits for the network, and nothing the collector does
//! changes a trial, a record or the run's exit code: a failed export, a dead collector or a
//! full queue is one warning through the reporter when the run ends ([`TraceExport::finish`],
//! which waits at most [`FLUSH_TIMEOUT`] for the last spans).
//!
//! The environment is read as the OpenTelemetry specification defines it
//! ([`resolve`]): `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`, the endpoint variables (the
//! per-signal one used as is, the general one with `v1/traces` appended),
//! `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` (`http/protobuf` only), `…_TIMEOUT`, `…_HEADERS`
//! (read by `opentelemetry-otlp`; their values are registered with the redactor),
//! `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`, and the SDK's own `OTEL_BSP_*` and
//! `OTEL_TRACES_SAMPLER*`. This module must not print: what it has to say is a reporter event.

mod spans;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::trace::{Span as _, Status, TraceContextExt, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::resource::{EnvResourceDetector, Resource, TelemetryResourceDetector};
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};

pub(crate) use spans::RunIdentity;
use spans::{SEMCONV_VERSION, SpanPlan};

use crate::record::TrialRecord;
use crate::values::reporter::{Event, report};
use crate::values::trajectory::TrajectoryOutline;

/// The longest [`TraceExport::finish`] waits for the last spans to reach the collector.
pub(crate) const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The export timeout when `OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT` does not set one (the
/// specification's default, 10 s).
const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how the spans go, as the environment says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TraceSettings {
    /// The URL spans are posted to (`…/v1/traces` for the general endpoint variable).
    pub endpoint: String,
    /// How long one export request may take.
    pub timeout: Duration,
    /// `OTEL_SERVICE_NAME`, when set (else `service.name` from `OTEL_RESOURCE_ATTRIBUTES`, else
    /// `skill-lift`).
    pub service_name: Option<String>,
    /// The values of the exporter's headers (`OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`), by the
    /// variable that set them: often credentials, registered with the redactor.
    pub header_values: Vec<(String, String)>,
}

/// What the environment asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TraceSetup {
    /// No trace export: no endpoint set, `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`,
    /// or settings skill-lift cannot honour (each said by a [`TraceEnvProblem`]).
    Off,
    /// Export to these settings.
    Export(TraceSettings),
}

/// A setting of the environment that skill-lift cannot honour as given; reported as a warning,
/// never an error (trace export must not stop a run).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum TraceEnvProblem {
    /// A Boolean variable holds neither `true` nor `false` (read as false, as the
    /// specification says).
    #[error("{name}={value:?} is neither `true` nor `false`: read as false")]
    NotABoolean {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
    /// `OTEL_TRACES_EXPORTER` names exporters other than `otlp` (and not `none`).
    #[error(
        "OTEL_TRACES_EXPORTER={value:?}: skill-lift exports traces over OTLP only{}",
        if *.otlp_too { " (the others are ignored)" } else { "; no spans are exported" }
    )]
    UnsupportedExporter {
        /// The variable's value.
        value: String,
        /// Whether `otlp` is among the names (spans are exported to it).
        otlp_too: bool,
    },
    /// The OTLP protocol is not `http/protobuf`.
    #[error(
        "{name}={value:?}: skill-lift exports traces over OTLP http/protobuf only; no spans are exported"
    )]
    UnsupportedProtocol {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
    /// The endpoint is not an `http://` or `https://` URL.
    #[error("{name}={value:?} is not an http:// or https:// URL; no spans are exported")]
    NotHttp {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
    /// A timeout is not a whole number of milliseconds.
    #[error("{name}={value:?} is not a whole number of milliseconds: the default 10000 is used")]
    NotMilliseconds {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
}

/// Why the exporter could not be set up (reported as a warning; the run goes on without it).
#[derive(Debug, thiserror::Error)]
pub(crate) enum TraceExportError {
    /// `opentelemetry-otlp` refused the configuration (an invalid URL, an unsupported
    /// compression).
    #[error("cannot export traces to {endpoint}: {source}")]
    Build {
        /// The endpoint.
        endpoint: String,
        /// The exporter's error.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// The thread building the HTTP client panicked.
    #[error("cannot export traces to {endpoint}: the HTTP client could not be built")]
    Client {
        /// The endpoint.
        endpoint: String,
    },
}

/// A Boolean variable as the specification reads it: only `true` (any case) is true.
fn boolean(
    name: &'static str,
    var: &impl Fn(&str) -> Option<String>,
    problems: &mut Vec<TraceEnvProblem>,
) -> bool {
    let Some(value) = var(name) else {
        return false;
    };
    let trimmed = value.trim();
    if trimmed.eq_ignore_ascii_case("true") {
        return true;
    }
    if !trimmed.is_empty() && !trimmed.eq_ignore_ascii_case("false") {
        problems.push(TraceEnvProblem::NotABoolean { name, value });
    }
    false
}

/// The first of `names` set to a non-empty value, with its name.
fn first_set(
    names: &[&'static str],
    var: &impl Fn(&str) -> Option<String>,
) -> Option<(&'static str, String)> {
    names.iter().find_map(|name| {
        var(name)
            .map(|value| value.trim().to_string())
            .filter(|value| !value.is_empty())
            .map(|value| (*name, value))
    })
}

/// Read the trace-export settings from the environment variable lookup `var` as the
/// OpenTelemetry specification defines them (`specification/configuration/
/// sdk-environment-variables.md`, `specification/protocol/exporter.md`): the setup, and what
/// could not be honoured.
pub(crate) fn resolve(var: impl Fn(&str) -> Option<String>) -> (TraceSetup, Vec<TraceEnvProblem>) {
    let mut problems = Vec::new();
    let disabled = boolean("OTEL_SDK_DISABLED", &var, &mut problems);
    let endpoint = match first_set(&["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], &var) {
        // The per-signal URL is used as it is.
        Some((name, url)) => Some((name, url)),
        // The general one is a base URL: `v1/traces` relative to it.
        None => first_set(&["OTEL_EXPORTER_OTLP_ENDPOINT"], &var).map(|(name, base)| {
            let separator = if base.ends_with('/') { "" } else { "/" };
            (name, format!("{base}{separator}v1/traces"))
        }),
    };
    // Nothing configured: nothing to say.
    let Some((endpoint_var, endpoint)) = endpoint else {
        return (TraceSetup::Off, problems);
    };
    if disabled {
        return (TraceSetup::Off, problems);
    }
    if let Some((_, exporters)) = first_set(&["OTEL_TRACES_EXPORTER"], &var) {
        let names: Vec<String> = exporters
            .split(',')
            .map(|name| name.trim().to_ascii_lowercase())
            .filter(|name| !name.is_empty())
            .collect();
        if names.iter().any(|name| name == "none") {
            return (TraceSetup::Off, problems);
        }
        let otlp_too = names.iter().any(|name| name == "otlp");
        if names.iter().any(|name| name != "otlp") {
            problems.push(TraceEnvProblem::UnsupportedExporter {
                value: exporters.clone(),
                otlp_too,
            });
        }
        if !otlp_too {
            return (TraceSetup::Off, problems);
        }
    }
    if let Some((name, protocol)) = first_set(
        &[
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ],
        &var,
    ) && protocol != "http/protobuf"
    {
        problems.push(TraceEnvProblem::UnsupportedProtocol {
            name,
            value: protocol,
        });
        return (TraceSetup::Off, problems);
    }
    let lower = endpoint.to_ascii_lowercase();
    if !lower.starts_with("http://") && !lower.starts_with("https://") {
        problems.push(TraceEnvProblem::NotHttp {
            name: endpoint_var,
            value: endpoint,
        });
        return (TraceSetup::Off, problems);
    }
    let timeout = match first_set(
        &[
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ],
        &var,
    ) {
        Some((name, value)) => match value.parse::<u64>() {
            Ok(ms) => Duration::from_millis(ms),
            Err(_) => {
                problems.push(TraceEnvProblem::NotMilliseconds { name, value });
                DEFAULT_EXPORT_TIMEOUT
            }
        },
        None => DEFAULT_EXPORT_TIMEOUT,
    };
    let mut header_values = Vec::new();
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        if let Some(headers) = var(name) {
            // `key=value` pairs separated by commas (W3C Baggage form, values percent-encoded).
            for pair in headers.split(',') {
                if let Some((_, value)) = pair.split_once('=') {
                    header_values.push((name.to_string(), value.trim().to_string()));
                }
            }
        }
    }
    let service_name = first_set(&["OTEL_SERVICE_NAME"], &var).map(|(_, name)| name);
    (
        TraceSetup::Export(TraceSettings {
            endpoint,
            timeout,
            service_name,
            header_values,
        }),
        problems,
    )
}

/// What the exports achieved, counted on the batch processor's thread.
#[derive(Debug, Default)]
struct Tally {
    /// Spans the collector accepted.
    delivered: AtomicUsize,
    /// Spans whose export failed.
    failed: AtomicUsize,
    /// The first export error, as the exporter said it.
    first_error: Mutex<Option<String>>,
}

/// The OTLP exporter, counting what each export achieved into a [`Tally`].
#[derive(Debug)]
struct TalliedExporter<E> {
    inner: E,
    tally: Arc<Tally>,
}

impl<E: SpanExporter> SpanExporter for TalliedExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => {
                self.tally.delivered.fetch_add(spans, Ordering::Relaxed);
            }
            Err(error) => {
                self.tally.failed.fetch_add(spans, Ordering::Relaxed);
                let mut first = self
                    .tally
                    .first_error
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                first.get_or_insert_with(|| error.to_string());
            }
        }
        result
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn shutdown(&mut self) -> OTelSdkResult {
        self.inner.shutdown()
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// reqwest's blocking client for `opentelemetry-otlp`, whose errors read as their message
/// chain (the exporter quotes a client error with `{:?}`).
#[derive(Debug)]
struct HttpClient(reqwest::blocking::Client);

/// An HTTP error's message chain, shown the same by `Display` and `Debug`.
struct ChainError(String);

impl std::fmt::Debug for ChainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for ChainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ChainError {}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for HttpClient {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<
        opentelemetry_http::Response<opentelemetry_http::Bytes>,
        opentelemetry_http::HttpError,
    > {
        self.0.send_bytes(request).await.map_err(|error| {
            let mut chain = error.to_string();
            let mut source = error.source();
            while let Some(cause) = source {
                let text = cause.to_string();
                if !chain.contains(&text) {
                    chain.push_str(": ");
                    chain.push_str(&text);
                }
                source = cause.source();
            }
            Box::new(ChainError(chain)) as opentelemetry_http::HttpError
        })
    }
}

/// A run's trace export: the SDK's tracer provider with its batch processor and OTLP exporter,
/// what every span of the run shares, and the counts [`TraceExport::finish`] reports.
pub(crate) struct TraceExport {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    run: RunIdentity,
    endpoint: String,
    tally: Arc<Tally>,
    /// Trials handed over.
    trials: AtomicUsize,
    /// Spans queued for export (sampled ones: the sampler may keep fewer than were built).
    queued: AtomicUsize,
}

impl TraceExport {
    /// The run's trace export as the environment configures it: `None` when it asks for none
    /// or cannot be honoured (each problem reported as a warning).
    pub(crate) fn from_environment(run: RunIdentity) -> Option<Self> {
        let (setup, problems) = resolve(|name| std::env::var(name).ok());
        for problem in problems {
            report(Event::warning(format!("trace export: {problem}")));
        }
        let TraceSetup::Export(settings) = setup else {
            return None;
        };
        match Self::start(run, settings) {
            Ok(export) => Some(export),
            Err(error) => {
                report(Event::warning(error.to_string()));
                None
            }
        }
    }

    /// Start exporting to `settings`: the HTTP client and exporter (built on a thread of their
    /// own: reqwest's blocking client must not be built inside the async runtime), the batch
    /// processor's thread and the tracer.
    pub(crate) fn start(
        run: RunIdentity,
        settings: TraceSettings,
    ) -> Result<Self, TraceExportError> {
        for (name, value) in &settings.header_values {
            crate::disk::redact::register_credential(name, value);
        }
        let endpoint = settings.endpoint.clone();
        let timeout = settings.timeout;
        let built = std::thread::Builder::new()
            .name("skill-lift-otlp-setup".to_string())
            .spawn({
                let endpoint = endpoint.clone();
                move || {
                    let client = reqwest::blocking::Client::builder()
                        .timeout(timeout)
                        .build()
                        .map_err(|_| None)?;
                    opentelemetry_otlp::SpanExporter::builder()
                        .with_http()
                        .with_http_client(HttpClient(client))
                        .with_protocol(Protocol::HttpBinary)
                        .with_endpoint(endpoint)
                        .with_timeout(timeout)
                        .build()
                        .map_err(Some)
                }
            })
            .ok()
            .and_then(|thread| thread.join().ok());
        let exporter = match built {
            Some(Ok(exporter)) => exporter,
            Some(Err(Some(source))) => return Err(TraceExportError::Build { endpoint, source }),
            Some(Err(None)) | None => return Err(TraceExportError::Client { endpoint }),
        };
        let tally = Arc::new(Tally::default());
        let processor = BatchSpanProcessor::builder(TalliedExporter {
            inner: exporter,
            tally: Arc::clone(&tally),
        })
        .build();
        let mut resource = Resource::builder_empty()
            .with_service_name("skill-lift")
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .with_detectors(&[
                Box::new(TelemetryResourceDetector),
                Box::new(EnvResourceDetector::new()),
            ]);
        // `OTEL_SERVICE_NAME` wins over `service.name` in `OTEL_RESOURCE_ATTRIBUTES`.
        if let Some(name) = settings.service_name {
            resource = resource.with_service_name(name);
        }
        // The resource's values (the user's `OTEL_RESOURCE_ATTRIBUTES`) pass the redactor too.
        let resource = Resource::builder_empty()
            .with_attributes(
                resource
                    .build()
                    .iter()
                    .map(|(key, value)| KeyValue::new(key.clone(), spans::redacted(value))),
            )
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        let scope = InstrumentationScope::builder("skill-lift")
            .with_version(env!("CARGO_PKG_VERSION"))
            .with_schema_url(format!(
                "https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
            ))
            .build();
        let tracer = provider.tracer_with_scope(scope);
        Ok(Self {
            provider,
            tracer,
            run,
            endpoint,
            tally,
            trials: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
        })
    }

    /// Queue the spans of a finished trial: its `invoke_agent` span and one child per step of
    /// `outline`. Builds them in memory and hands them to the batch processor's bounded queue;
    /// never waits.
    pub(crate) fn trial_finished(&self, record: &TrialRecord, outline: Option<&TrajectoryOutline>) {
        let plans = spans::trial_spans(&self.run, record, outline);
        self.trials.fetch_add(1, Ordering::Relaxed);
        let trial = self.start_span(&plans.trial, &Context::new());
        let sampled = trial.span_context().is_sampled();
        let parent = Context::new().with_span(trial);
        for child in &plans.children {
            let mut span = self.start_span(child, &parent);
            if let Some(message) = &child.error {
                span.set_status(Status::error(message.clone()));
            }
            span.end_with_timestamp(child.end);
        }
        let trial = parent.span();
        for event in &plans.trial.events {
            trial.add_event_with_timestamp(event.name, plans.trial.end, event.attributes.clone());
        }
        if let Some(message) = &plans.trial.error {
            trial.set_status(Status::error(message.clone()));
        }
        trial.end_with_timestamp(plans.trial.end);
        if sampled {
            self.queued
                .fetch_add(1 + plans.children.len(), Ordering::Relaxed);
        }
    }

    fn start_span(&self, plan: &SpanPlan, parent: &Context) -> opentelemetry_sdk::trace::Span {
        self.tracer
            .span_builder(plan.name.clone())
            .with_kind(plan.kind.clone())
            .with_start_time(plan.start)
            .with_attributes(plan.attributes.clone())
            .start_with_context(&self.tracer, parent)
    }

    /// End the export: flush what is queued (waiting at most [`FLUSH_TIMEOUT`], on a blocking
    /// thread) and report the outcome: how many spans reached the collector, or one warning
    /// saying how many did not and why.
    pub(crate) async fn finish(self: Arc<Self>) {
        let this = Arc::clone(&self);
        let shutdown =
            tokio::task::spawn_blocking(move || this.provider.shutdown_with_timeout(FLUSH_TIMEOUT))
                .await;
        let queued = self.queued.load(Ordering::Relaxed);
        let delivered = self.tally.delivered.load(Ordering::Relaxed);
        let trials = self.trials.load(Ordering::Relaxed);
        if delivered >= queued {
            report(Event::TracesExported {
                endpoint: self.endpoint.clone(),
                spans: delivered,
                trials,
            });
            return;
        }
        let failed = self.tally.failed.load(Ordering::Relaxed);
        let first_error = self
            .tally
            .first_error
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let why = match (first_error, shutdown) {
            (Some(error), _) => error,
            (None, Ok(Err(error))) => error.to_string(),
            (None, Err(join_error)) => join_error.to_string(),
            // Not failed, not delivered: dropped from the full queue.
            (None, Ok(Ok(()))) => "the export queue was full (OTEL_BSP_MAX_QUEUE_SIZE)".into(),
        };
        report(Event::TraceExportIncomplete {
            endpoint: self.endpoint.clone(),
            queued,
            delivered,
            failed,
            error: crate::disk::redact::truncate(&why, 500),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        }
    }

    fn endpoint(pairs: &[(&str, &str)]) -> Option<String> {
        match resolve(env(pairs)).0 {
            TraceSetup::Export(settings) => Some(settings.endpoint),
            TraceSetup::Off => None,
        }
    }

    #[test]
    fn endpoints_follow_the_specifications_url_rules() {
        assert_eq!(endpoint(&[]), None);
        assert_eq!(
            endpoint(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")]).as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(
            endpoint(&[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://collector:4318/mycollector/"
            )])
            .as_deref(),
            Some("http://collector:4318/mycollector/v1/traces")
        );
        // The per-signal variable is used as it is, and wins.
        assert_eq!(
            endpoint(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://b/traces"),
            ])
            .as_deref(),
            Some("https://b/traces")
        );
    }

    #[test]
    fn what_cannot_be_honoured_turns_export_off_with_a_problem() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        assert_eq!(endpoint(&[base, ("OTEL_SDK_DISABLED", "TRUE")]), None);
        assert_eq!(endpoint(&[base, ("OTEL_TRACES_EXPORTER", "none")]), None);
        let (setup, problems) = resolve(env(&[base, ("OTEL_SDK_DISABLED", "yes")]));
        assert!(matches!(setup, TraceSetup::Export(_)));
        assert_eq!(
            problems[0].to_string(),
            "OTEL_SDK_DISABLED=\"yes\" is neither `true` nor `false`: read as false"
        );
        let (setup, problems) = resolve(env(&[base, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]));
        assert_eq!(setup, TraceSetup::Off);
        assert!(problems[0].to_string().contains("http/protobuf only"));
        let (setup, problems) = resolve(env(&[base, ("OTEL_TRACES_EXPORTER", "zipkin")]));
        assert_eq!(setup, TraceSetup::Off);
        assert!(problems[0].to_string().contains("no spans are exported"));
        let (setup, problems) = resolve(env(&[base, ("OTEL_TRACES_EXPORTER", "otlp,console")]));
        assert!(matches!(setup, TraceSetup::Export(_)));
        assert!(problems[0].to_string().contains("others are ignored"));
        let (setup, _) = resolve(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")]));
        assert_eq!(setup, TraceSetup::Off);
    }

    #[test]
    fn timeouts_service_name_and_header_values_are_read() {
        let (setup, problems) = resolve(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "soon"),
            ("OTEL_SERVICE_NAME", "evals"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "api-key=abc123secret,x-team=evals",
            ),
        ]));
        let TraceSetup::Export(settings) = setup else {
            panic!("export expected");
        };
        // The per-signal timeout is not a number: the default, and a problem (the general
        // one is not consulted in its place).
        assert_eq!(settings.timeout, DEFAULT_EXPORT_TIMEOUT);
        assert_eq!(problems.len(), 1);
        assert_eq!(settings.service_name.as_deref(), Some("evals"));
        assert_eq!(
            settings.header_values,
            [
                (
                    "OTEL_EXPORTER_OTLP_HEADERS".to_string(),
                    "abc123secret".to_string()
                ),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS".to_string(),
                    "evals".to_string()
                ),
            ]
        );
    }
}
