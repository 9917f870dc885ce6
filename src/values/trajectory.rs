//! The normalized trajectory of one trial: what every runner (model API agent loop or agent CLI
//! parser) produces, and what graders and reports read.
//!
//! Absent usage or cost is `None`, never 0 (a missing count is not a zero count).

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of the conversation, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    /// Text content (empty for an assistant message that only calls tools).
    pub content: String,
    /// For `tool` messages: the id of the call answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// One tool call with its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id given by the model or agent.
    pub id: String,
    /// Tool name as the agent named it (`activate_skill`, `Read`, `Bash`, …).
    pub name: String,
    /// Parsed input arguments (a JSON string that failed to parse is kept as a string).
    pub input: serde_json::Value,
    /// The result text returned to the model, when there was one.
    pub output: Option<String>,
    /// Whether the result was an error.
    pub is_error: bool,
    /// Time to execute the tool, in seconds, when measured.
    pub duration_s: Option<f64>,
}

/// How a skill activation was observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivationEvidence {
    /// A dedicated skill tool call (`activate_skill`, `Skill`, …).
    SkillTool,
    /// A read of the skill's `SKILL.md` through a file-read tool.
    FileRead,
    /// A shell command mentioning the skill's `SKILL.md` (weaker evidence).
    ShellCommand,
}

/// A skill activation seen in the trajectory (target or decoy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillActivation {
    /// The skill's name.
    pub skill: String,
    /// How it was seen.
    pub evidence: ActivationEvidence,
    /// Whether the activation succeeded (the tool result was not an error).
    pub ok: bool,
    /// Index into `tool_calls` of the call that activated it, when there is one.
    pub tool_call_index: Option<usize>,
    /// Whether the skill is the target under evaluation (false for decoys and unknown skills).
    #[serde(default)]
    pub target: bool,
    /// Why an activation attempt did not count (`ok == false`), e.g. the tool's error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A run of a file under a staged skill's `scripts/` folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptRun {
    /// The skill owning the script.
    pub skill: String,
    /// Whether that skill is the target under evaluation.
    pub target: bool,
    /// The script's path relative to the skill folder (`scripts/collect.py`).
    pub script: String,
    /// The shell command that ran it.
    pub command: String,
    /// Its exit code, when reported.
    pub exit_code: Option<i32>,
    /// Whether the call succeeded (not an error, exit code 0 when reported).
    pub ok: bool,
    /// Index into `tool_calls` of the shell call that ran it, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_index: Option<usize>,
}

/// How an agent CLI process ended, and what skill-lift made of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessExit {
    /// Exit code, when the process exited normally.
    pub exit_code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
    /// Whether the trial timeout stopped it.
    pub timed_out: bool,
    /// Whether skill-lift stopped it because it lingered after its final event.
    pub stopped_after_final_event: bool,
    /// `ok`, `agent_error`, `infrastructure_error` or `timeout`.
    pub class: String,
    /// Wall time of the process, seconds.
    pub wall_s: f64,
    /// The last few KiB of stderr.
    pub stderr_tail: String,
    /// Bytes of stdout dropped past the profile's `max_stdout_bytes` (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stdout_dropped_bytes: u64,
    /// Bytes of stderr dropped before the kept tail (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stderr_dropped_bytes: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// What a trial's output lost to a size cap (recorded per trial as `truncated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputCut {
    /// The agent's stdout passed `max_stdout_bytes`: later lines are missing.
    Stdout,
    /// The agent's stderr passed `max_stderr_bytes`: only its tail is kept.
    Stderr,
    /// The transcript passed `max_transcript_bytes`: long texts in it were shortened.
    Transcript,
}

/// Why a trial is unscoreable for an infrastructure reason (recorded as `infrastructure`).
/// The first five are reported by the agent CLI or the model server itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InfrastructureCause {
    /// The model API could not be reached (DNS failure, connection refused or reset).
    ApiUnreachable,
    /// The API refused the credentials (HTTP 401/403, invalid key).
    AuthFailure,
    /// The API rate-limited the requests (HTTP 429, a per-minute quota).
    RateLimited,
    /// The account's credit or billing quota is spent (HTTP 402, Anthropic `Credit balance is
    /// too low`, OpenAI `insufficient_quota`): retrying later does not help.
    QuotaExhausted,
    /// The API was overloaded or unavailable (HTTP 529/503).
    Overloaded,
    /// The API failed otherwise (HTTP 5xx).
    ServerError,
    /// The trial ran past its timeout, the agent reported a request timeout (Claude Code
    /// `API Error: Request timed out.`), or no model answer came within `infra_grace_s`.
    Timeout,
    /// The runner failed: the agent program could not start, died, or its stream ended without
    /// its terminal event; or an HTTP runner's requests failed after their retries.
    Runner,
    /// A judge or custom grader failed.
    Grader,
    /// A model API's response body passed the profile's `max_response_bytes` (an endless or
    /// oversized answer; the request was ended rather than held in memory).
    ResponseTooLarge,
    /// The agent CLI ended with an error result or fatal error event that names none of the
    /// causes above (its own text is the message): the trial measured nothing, never a `fail`.
    AgentError,
}

impl InfrastructureCause {
    /// Every cause, in order.
    pub const ALL: [InfrastructureCause; 11] = [
        InfrastructureCause::ApiUnreachable,
        InfrastructureCause::AuthFailure,
        InfrastructureCause::RateLimited,
        InfrastructureCause::QuotaExhausted,
        InfrastructureCause::Overloaded,
        InfrastructureCause::ServerError,
        InfrastructureCause::Timeout,
        InfrastructureCause::Runner,
        InfrastructureCause::Grader,
        InfrastructureCause::ResponseTooLarge,
        InfrastructureCause::AgentError,
    ];

    /// The recorded name (`api_unreachable`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            InfrastructureCause::ApiUnreachable => "api_unreachable",
            InfrastructureCause::AuthFailure => "auth_failure",
            InfrastructureCause::RateLimited => "rate_limited",
            InfrastructureCause::QuotaExhausted => "quota_exhausted",
            InfrastructureCause::Overloaded => "overloaded",
            InfrastructureCause::ServerError => "server_error",
            InfrastructureCause::Timeout => "timeout",
            InfrastructureCause::Runner => "runner",
            InfrastructureCause::Grader => "grader",
            InfrastructureCause::ResponseTooLarge => "response_too_large",
            InfrastructureCause::AgentError => "agent_error",
        }
    }

    /// What the cause means, for reasons and messages.
    pub fn describe(self) -> &'static str {
        match self {
            InfrastructureCause::ApiUnreachable => "agent API unreachable",
            InfrastructureCause::AuthFailure => "agent API authentication failed",
            InfrastructureCause::RateLimited => "agent API rate limit",
            InfrastructureCause::QuotaExhausted => "agent API quota exhausted",
            InfrastructureCause::Overloaded => "agent API overloaded",
            InfrastructureCause::ServerError => "agent API server error",
            InfrastructureCause::Timeout => "timeout",
            InfrastructureCause::Runner => "runner failure",
            InfrastructureCause::Grader => "grader failure",
            InfrastructureCause::ResponseTooLarge => "response body too large",
            InfrastructureCause::AgentError => "agent error",
        }
    }

    /// The cause an HTTP status code names, when it names one.
    pub fn from_status(status: u64) -> Option<Self> {
        match status {
            401 | 403 | 407 => Some(InfrastructureCause::AuthFailure),
            402 => Some(InfrastructureCause::QuotaExhausted),
            408 => Some(InfrastructureCause::Timeout),
            429 => Some(InfrastructureCause::RateLimited),
            503 | 529 => Some(InfrastructureCause::Overloaded),
            500..=599 => Some(InfrastructureCause::ServerError),
            _ => None,
        }
    }

    /// The cause an error message names, recognised from the agent CLIs' and HTTP clients' own
    /// wording (Claude Code `API Error: Can't reach the API server … (ENOTFOUND)`, Codex
    /// `unexpected status 401 Unauthorized`, Gemini `RESOURCE_EXHAUSTED`, Node `ECONNREFUSED`,
    /// reqwest `error sending request`, …). Only ever applied to error text (error events, a
    /// failed result, the stderr of a failed process), never to the agent's answer.
    ///
    /// Codex 0.171.0 reports an HTTP 500 that outlived its retries only as `We’re currently
    /// experiencing high demand, which may cause temporary errors.`: a server error.
    pub fn from_error_text(text: &str) -> Option<Self> {
        use std::sync::LazyLock;
        static PATTERNS: LazyLock<Vec<(InfrastructureCause, regex::Regex)>> = LazyLock::new(|| {
            let pattern = |cause, text: &str| {
                (
                    cause,
                    regex::Regex::new(&format!("(?i){text}")).expect("valid pattern"),
                )
            };
            vec![
                // skill-lift's own word for a body past `max_response_bytes` (runner::http).
                pattern(
                    InfrastructureCause::ResponseTooLarge,
                    r"\bresponse_too_large\b",
                ),
                pattern(
                    InfrastructureCause::QuotaExhausted,
                    r"credit balance|insufficient[_ ]quota|insufficient (credits?|balance|funds)|out of credits|billing|payment required|\b402\b|exceeded your current quota, please check your plan",
                ),
                pattern(
                    InfrastructureCause::AuthFailure,
                    r"\b(401|403)\b|not logged in|please run /login|missing (an? )?api[ _-]?key|no api[ _-]?key|api[ _-]?key (is )?(missing|required|not (set|found|provided))|unauthori[sz]ed|unauthenticated|authentication[ _](error|failed)|invalid (x-)?api[ _-]?key|incorrect api key|api key not valid|invalid_api_key|permission_denied|\bforbidden\b",
                ),
                pattern(
                    InfrastructureCause::RateLimited,
                    r"\b429\b|rate[ _-]?limit|too many requests|resource_exhausted|resource has been exhausted|\bquota\b",
                ),
                pattern(
                    InfrastructureCause::Overloaded,
                    r"\b(529|503)\b|overloaded|service unavailable|\bunavailable\b",
                ),
                pattern(
                    InfrastructureCause::ApiUnreachable,
                    r"enotfound|econnrefused|econnreset|etimedout|eai_again|ehostunreach|enetunreach|can'?t reach|cannot reach|unable to connect|could not connect|connection[ _](refused|reset|error|failed)|error sending request|fetch failed|failed to lookup address|dns error|name or service not known|no route to host|network (error|is unreachable)|stream disconnected|getaddrinfo",
                ),
                pattern(
                    InfrastructureCause::Timeout,
                    r"timed out|request timeout|deadline exceeded|deadline_exceeded",
                ),
                pattern(
                    InfrastructureCause::ServerError,
                    r"\b50[0248]\b|internal server error|bad gateway|gateway time-?out|\bserver_error\b|\bapi_error\b|experiencing high demand",
                ),
            ]
        });
        PATTERNS
            .iter()
            .find(|(_, regex)| regex.is_match(text))
            .map(|(cause, _)| *cause)
    }

    /// The cause of an error that carries an HTTP `status` (when it has one) and a message: a
    /// spent credit or billing quota named in the text wins (providers answer it with 400, 402
    /// or 429), then the status, then the text.
    pub fn of_error(status: Option<u64>, text: &str) -> Option<Self> {
        let named = Self::from_error_text(text);
        if named == Some(InfrastructureCause::QuotaExhausted) {
            return named;
        }
        status.and_then(Self::from_status).or(named)
    }

    /// Whether the cause is the model API's (reported by the agent or the server), so the
    /// same fault reads the same in every arm: not a trial timeout of skill-lift's own, a
    /// runner, grader or unrecognised agent failure.
    pub fn is_api(self) -> bool {
        matches!(
            self,
            InfrastructureCause::ApiUnreachable
                | InfrastructureCause::AuthFailure
                | InfrastructureCause::RateLimited
                | InfrastructureCause::QuotaExhausted
                | InfrastructureCause::Overloaded
                | InfrastructureCause::ServerError
        )
    }
}

/// An infrastructure failure the agent CLI reported in its own output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InfrastructureFailure {
    /// What kind of failure.
    pub cause: InfrastructureCause,
    /// The CLI's own error text (credential values redacted).
    pub message: String,
}

/// A shell command the agent ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRun {
    pub command: String,
    pub exit_code: Option<i32>,
}

/// Token usage and cost. Each field is `None` when the source did not report it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt/input tokens, summed over requests.
    pub input_tokens: Option<u64>,
    /// Completion/output tokens, summed over requests.
    pub output_tokens: Option<u64>,
    /// Cached prompt tokens, summed over requests: tokens read from the prompt cache
    /// (Anthropic `cache_read_input_tokens`, OpenAI `prompt_tokens_details.cached_tokens`);
    /// included in `input_tokens`.
    pub cached_tokens: Option<u64>,
    /// Prompt tokens written to the prompt cache, summed over requests (Anthropic
    /// `cache_creation_input_tokens`); included in `input_tokens`. Absent from the record when
    /// the source does not report it (records written before it existed read as absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_tokens: Option<u64>,
    /// Cost in USD as reported by the agent, when it reports one.
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Add another request's usage; a field stays `None` only when both sides lack it.
    pub fn add(&mut self, other: &Usage) {
        fn add_u64(a: &mut Option<u64>, b: Option<u64>) {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0) + b);
            }
        }
        add_u64(&mut self.input_tokens, other.input_tokens);
        add_u64(&mut self.output_tokens, other.output_tokens);
        add_u64(&mut self.cached_tokens, other.cached_tokens);
        add_u64(&mut self.cache_creation_tokens, other.cache_creation_tokens);
        if let Some(cost) = other.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
    }
}

/// One model request made by an HTTP runner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Wall time of the successful request, in seconds.
    pub latency_s: f64,
    /// The model name the server reported.
    pub model: Option<String>,
    /// The server's finish reason.
    pub finish_reason: Option<String>,
    /// Failed tries before the successful one (infrastructure errors only).
    pub retries: Vec<RetryRecord>,
    /// The sampling seed the request carried (every try of it), when it carried one: a profile
    /// with `seed` on a wire format that takes it (`crate::features::runner::sampling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// One retried failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryRecord {
    /// What failed (`HTTP 429`, `connection refused`, …).
    pub error: String,
    /// Seconds waited before the next try.
    pub waited_s: f64,
}

/// Whether the trajectory ran to its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TrajectoryStatus {
    /// The agent reached its terminal event (a final answer, or the turn limit).
    Complete,
    /// The stream or conversation ended without its terminal event: an infrastructure error.
    Incomplete { reason: String },
}

/// The shape of a trial's trajectory without its content: its model turns and tool calls in
/// order, with what each measured ([`Trajectory::outline`]). Trace export
/// (`crate::report::trace_export`) makes one child span of each step; no prompt, answer, tool
/// input or tool output is in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TrajectoryOutline {
    /// The steps, in the order they happened.
    pub steps: Vec<OutlineStep>,
    /// The agent's session id, when it reported one.
    pub conversation_id: Option<String>,
}

/// One step of a [`TrajectoryOutline`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OutlineStep {
    /// One model turn (an assistant message; a model request on an HTTP runner).
    ModelTurn {
        /// The model the server reported for the request, when it did.
        model: Option<String>,
        /// The server's finish reason, when it gave one.
        finish_reason: Option<String>,
        /// Wall time of the successful request, seconds (HTTP runners only).
        latency_s: Option<f64>,
        /// The sampling seed the request carried, when it carried one.
        seed: Option<u64>,
        /// Failed tries of the request before the successful one.
        retries: usize,
    },
    /// One tool call.
    ToolCall {
        /// The tool's name as the agent named it.
        name: String,
        /// The call id the model or agent gave.
        call_id: String,
        /// Time to execute the tool, seconds, when measured.
        duration_s: Option<f64>,
        /// Whether the tool's result was an error.
        is_error: bool,
    },
}

/// Shortest credential value [`Trajectory::redact_credentials`] replaces, characters.
pub const MIN_REDACTED_CHARS: usize = 8;

/// What replaces the value of the credential variable `name` in recorded text.
pub fn redaction_marker(name: &str) -> String {
    format!("[REDACTED:${name}]")
}

/// The normalized record of one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Messages in order (system prompt included).
    pub messages: Vec<Message>,
    /// Tool calls in order.
    pub tool_calls: Vec<ToolCall>,
    /// Skill activations seen (target and decoys).
    pub skill_activations: Vec<SkillActivation>,
    /// Shell commands run.
    pub commands: Vec<CommandRun>,
    /// Runs of skill scripts (a subset of the commands, attributed to their skill).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script_runs: Vec<ScriptRun>,
    /// Workspace-relative files read.
    pub files_read: Vec<String>,
    /// Workspace-relative files written.
    pub files_written: Vec<String>,
    /// The agent's final answer.
    pub final_answer: Option<String>,
    /// Token usage and cost.
    pub usage: Usage,
    /// The model the server or agent reported (may differ from the requested model).
    pub observed_model: Option<String>,
    /// Session id, for agents that report one.
    pub session_id: Option<String>,
    /// Model requests made (HTTP runners).
    pub requests: Vec<RequestRecord>,
    /// Whether the run reached its terminal event.
    #[serde(flatten)]
    pub status: TrajectoryStatus,
    /// Whether the turn limit ended the conversation before a final answer.
    pub turn_limit_reached: bool,
    /// Events the parser did not understand, kept verbatim.
    pub raw_events: Vec<serde_json::Value>,
    /// The skills the agent said it had available (Claude Code `system/init.skills`), when it
    /// reports them; checked per arm by the scheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_catalogue: Option<Vec<String>>,
    /// How the agent CLI process ended (agent CLI runners only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessExit>,
    /// True when some model requests reported a usage count and others did not (e.g. one of two
    /// requests reported tokens): `usage` then sums only the requests that reported, a lower
    /// bound, not the trial's total.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_partial: bool,
    /// An infrastructure failure the agent reported (API unreachable, authentication, rate
    /// limit, overload): the trial is unscoreable, never failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_error: Option<InfrastructureFailure>,
    /// What the output lost to the profile's size caps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncated: Vec<OutputCut>,
}

impl Trajectory {
    /// An empty, complete trajectory to fill in.
    pub fn new() -> Self {
        Self {
            messages: Vec::new(),
            tool_calls: Vec::new(),
            skill_activations: Vec::new(),
            commands: Vec::new(),
            script_runs: Vec::new(),
            files_read: Vec::new(),
            files_written: Vec::new(),
            final_answer: None,
            usage: Usage::default(),
            observed_model: None,
            session_id: None,
            requests: Vec::new(),
            status: TrajectoryStatus::Complete,
            turn_limit_reached: false,
            raw_events: Vec::new(),
            skill_catalogue: None,
            process: None,
            usage_partial: false,
            infrastructure_error: None,
            truncated: Vec::new(),
        }
    }

    /// Add one model request's usage (the `requests` made before it are already recorded),
    /// setting [`Trajectory::usage_partial`] when this request reports a count the earlier ones
    /// did not, or lacks one they reported.
    pub fn add_request_usage(&mut self, usage: &Usage) {
        if !self.requests.is_empty() {
            let differs = |a: Option<u64>, b: Option<u64>| a.is_some() != b.is_some();
            if differs(self.usage.input_tokens, usage.input_tokens)
                || differs(self.usage.output_tokens, usage.output_tokens)
                || differs(self.usage.cached_tokens, usage.cached_tokens)
            {
                self.usage_partial = true;
            }
        }
        self.usage.add(usage);
    }

    /// The trajectory's steps in order, without their content ([`TrajectoryOutline`]): one
    /// model turn per assistant message (the `i`-th one paired with `requests[i]` when the
    /// runner recorded requests: HTTP runners make one request per assistant message), each
    /// tool call where the tool message answering it stands (`tool_call_id`). Requests past the
    /// last assistant message and tool calls no tool message answered (agent CLIs that report
    /// a call without its result) follow, in their own order.
    pub(crate) fn outline(&self) -> TrajectoryOutline {
        let turn = |index: usize| {
            let request = self.requests.get(index);
            OutlineStep::ModelTurn {
                model: request.and_then(|r| r.model.clone()),
                finish_reason: request.and_then(|r| r.finish_reason.clone()),
                latency_s: request.map(|r| r.latency_s),
                seed: request.and_then(|r| r.seed),
                retries: request.map_or(0, |r| r.retries.len()),
            }
        };
        let tool = |call: &ToolCall| OutlineStep::ToolCall {
            name: call.name.clone(),
            call_id: call.id.clone(),
            duration_s: call.duration_s,
            is_error: call.is_error,
        };
        let mut by_id = std::collections::HashMap::with_capacity(self.tool_calls.len());
        for (index, call) in self.tool_calls.iter().enumerate() {
            by_id.entry(call.id.as_str()).or_insert(index);
        }
        let mut placed = vec![false; self.tool_calls.len()];
        let mut steps = Vec::with_capacity(self.messages.len() + self.requests.len());
        let mut turns = 0;
        for message in &self.messages {
            match message.role {
                Role::Assistant => {
                    steps.push(turn(turns));
                    turns += 1;
                }
                Role::Tool => {
                    if let Some(&index) =
                        message.tool_call_id.as_deref().and_then(|id| by_id.get(id))
                        && !placed[index]
                    {
                        placed[index] = true;
                        steps.push(tool(&self.tool_calls[index]));
                    }
                }
                Role::System | Role::User => {}
            }
        }
        steps.extend((turns..self.requests.len()).map(turn));
        steps.extend(
            self.tool_calls
                .iter()
                .zip(&placed)
                .filter(|(_, placed)| !**placed)
                .map(|(call, _)| tool(call)),
        );
        TrajectoryOutline {
            steps,
            conversation_id: self.session_id.clone(),
        }
    }

    /// Record that the agent reported an infrastructure failure: the trajectory is incomplete
    /// with the CLI's own message as the reason. The first report wins.
    pub fn set_infrastructure_error(&mut self, cause: InfrastructureCause, message: &str) {
        if self.infrastructure_error.is_some() {
            return;
        }
        let message = crate::disk::redact::truncate(message.trim(), 500);
        self.status = TrajectoryStatus::Incomplete {
            reason: format!("{}: {message}", cause.describe()),
        };
        self.infrastructure_error = Some(InfrastructureFailure { cause, message });
    }

    /// Shorten the trajectory's long texts until its JSON form is at most `limit` bytes (or the
    /// texts are down to a few hundred bytes each). Returns whether anything was cut.
    pub fn shrink_to(&mut self, limit: usize) -> bool {
        let size = |t: &Trajectory| serde_json::to_vec(t).map(|v| v.len()).unwrap_or(0);
        if size(self) <= limit {
            return false;
        }
        self.raw_events.clear();
        let mut each = limit / 4;
        while size(self) > limit && each >= 256 {
            let cut = |text: &mut String| {
                if text.len() > each {
                    let dropped = text.len() - each;
                    *text = format!(
                        "{} …[{dropped} bytes cut: max_transcript_bytes]",
                        crate::disk::redact::truncate(text, each).trim_end_matches('…')
                    );
                }
            };
            for message in &mut self.messages {
                cut(&mut message.content);
            }
            for call in &mut self.tool_calls {
                if let Some(output) = call.output.as_mut() {
                    cut(output);
                }
                let input = call.input.to_string();
                if input.len() > each {
                    let mut text = input;
                    cut(&mut text);
                    call.input = serde_json::Value::String(text);
                }
            }
            for command in &mut self.commands {
                cut(&mut command.command);
            }
            if let Some(answer) = self.final_answer.as_mut() {
                cut(answer);
            }
            if let Some(process) = self.process.as_mut() {
                cut(&mut process.stderr_tail);
            }
            each /= 2;
        }
        true
    }

    /// Replace every occurrence of a credential value in the trajectory's text (messages, tool
    /// inputs and outputs, commands, the final answer, raw events, …) by `[REDACTED:$NAME]`.
    /// `credentials` are `(variable name, value)`; values shorter than
    /// [`MIN_REDACTED_CHARS`] are left alone (too likely to match ordinary text). Returns
    /// whether anything was replaced. The marker keeps the fact that a credential leaked (the
    /// `security` metric reports it) without keeping the credential.
    pub fn redact_credentials(&mut self, credentials: &[(String, String)]) -> bool {
        let credentials: Vec<&(String, String)> = credentials
            .iter()
            .filter(|(_, value)| value.chars().count() >= MIN_REDACTED_CHARS)
            .collect();
        if credentials.is_empty() {
            return false;
        }
        let Ok(mut value) = serde_json::to_value(&*self) else {
            return false;
        };
        fn walk(value: &mut serde_json::Value, credentials: &[&(String, String)]) -> bool {
            match value {
                serde_json::Value::String(text) => {
                    let mut changed = false;
                    for (name, secret) in credentials {
                        if text.contains(secret.as_str()) {
                            *text = text.replace(secret.as_str(), &redaction_marker(name));
                            changed = true;
                        }
                    }
                    changed
                }
                serde_json::Value::Array(items) => items
                    .iter_mut()
                    .fold(false, |changed, item| walk(item, credentials) | changed),
                serde_json::Value::Object(map) => map
                    .values_mut()
                    .fold(false, |changed, item| walk(item, credentials) | changed),
                _ => false,
            }
        }
        if !walk(&mut value, &credentials) {
            return false;
        }
        match serde_json::from_value(value) {
            Ok(redacted) => {
                *self = redacted;
                true
            }
            Err(_) => false,
        }
    }

    /// Total retries over all requests.
    pub fn retry_count(&self) -> usize {
        self.requests.iter().map(|r| r.retries.len()).sum()
    }
}

impl Default for Trajectory {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: Role, content: &str, tool_call_id: Option<&str>) -> Message {
        Message {
            role,
            content: content.to_string(),
            tool_call_id: tool_call_id.map(str::to_string),
        }
    }

    fn call(id: &str, name: &str, duration_s: Option<f64>) -> ToolCall {
        ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            input: serde_json::json!({"secret": "input"}),
            output: Some("output text".to_string()),
            is_error: false,
            duration_s,
        }
    }

    fn request(latency_s: f64, finish: &str) -> RequestRecord {
        RequestRecord {
            latency_s,
            model: Some("served-model".to_string()),
            finish_reason: Some(finish.to_string()),
            retries: Vec::new(),
            seed: Some(7),
        }
    }

    #[test]
    fn the_outline_orders_turns_and_tool_calls_as_the_conversation_ran() {
        let mut trajectory = Trajectory::new();
        trajectory.messages = vec![
            message(Role::System, "system", None),
            message(Role::User, "prompt", None),
            message(Role::Assistant, "", None),
            message(Role::Tool, "skill body", Some("c1")),
            message(Role::Assistant, "answer", None),
        ];
        // c2 was reported without a result (an agent CLI's call): it follows the turns.
        trajectory.tool_calls = vec![
            call("c1", "activate_skill", Some(0.25)),
            call("c2", "Bash", None),
        ];
        trajectory.requests = vec![
            request(1.5, "tool_calls"),
            request(0.5, "stop"),
            request(0.1, "length"),
        ];
        trajectory.session_id = Some("session-1".to_string());
        let outline = trajectory.outline();
        assert_eq!(outline.conversation_id.as_deref(), Some("session-1"));
        let shape: Vec<String> = outline
            .steps
            .iter()
            .map(|step| match step {
                OutlineStep::ModelTurn {
                    finish_reason,
                    latency_s,
                    ..
                } => format!(
                    "turn {} {:?}",
                    finish_reason.as_deref().unwrap_or("-"),
                    latency_s
                ),
                OutlineStep::ToolCall {
                    name, duration_s, ..
                } => format!("tool {name} {duration_s:?}"),
            })
            .collect();
        assert_eq!(
            shape,
            [
                "turn tool_calls Some(1.5)",
                "tool activate_skill Some(0.25)",
                "turn stop Some(0.5)",
                // A request past the last assistant message still is a turn.
                "turn length Some(0.1)",
                "tool Bash None",
            ]
        );
        // No content travels in the outline.
        let text = format!("{outline:?}");
        for content in ["prompt", "skill body", "answer", "secret", "output text"] {
            assert!(!text.contains(content), "{content} in {text}");
        }
    }

    #[test]
    fn an_agent_cli_outline_has_turns_without_requests() {
        let mut trajectory = Trajectory::new();
        trajectory.messages = vec![
            message(Role::User, "prompt", None),
            message(Role::Assistant, "answer", None),
        ];
        let outline = trajectory.outline();
        assert_eq!(
            outline.steps,
            [OutlineStep::ModelTurn {
                model: None,
                finish_reason: None,
                latency_s: None,
                seed: None,
                retries: 0,
            }]
        );
    }

    #[test]
    fn partial_usage_is_flagged_not_silently_summed() {
        let mut trajectory = Trajectory::new();
        let reported = Usage {
            input_tokens: Some(10),
            output_tokens: Some(5),
            cached_tokens: None,
            cache_creation_tokens: None,
            cost_usd: None,
        };
        trajectory.add_request_usage(&reported);
        trajectory.requests.push(RequestRecord {
            latency_s: 0.1,
            model: None,
            finish_reason: None,
            retries: vec![],
            seed: None,
        });
        trajectory.add_request_usage(&reported);
        trajectory.requests.push(trajectory.requests[0].clone());
        assert!(!trajectory.usage_partial, "both reported");
        trajectory.add_request_usage(&Usage::default());
        assert!(trajectory.usage_partial, "the third reported nothing");
        assert_eq!(trajectory.usage.input_tokens, Some(20));
    }

    #[test]
    fn usage_addition_keeps_absent_as_none() {
        let mut total = Usage::default();
        total.add(&Usage {
            input_tokens: Some(10),
            output_tokens: None,
            cached_tokens: None,
            cache_creation_tokens: None,
            cost_usd: None,
        });
        total.add(&Usage {
            input_tokens: Some(5),
            output_tokens: Some(3),
            cached_tokens: None,
            cache_creation_tokens: None,
            cost_usd: None,
        });
        assert_eq!(total.input_tokens, Some(15));
        assert_eq!(total.output_tokens, Some(3));
        assert_eq!(total.cached_tokens, None);
    }

    #[test]
    fn credentials_are_redacted_everywhere_with_a_marker() {
        let mut trajectory = Trajectory::new();
        trajectory.final_answer = Some("key sk-secret-123456 leaked".into());
        trajectory.commands.push(CommandRun {
            command: "curl -H 'Authorization: Bearer sk-secret-123456' x".into(),
            exit_code: Some(0),
        });
        trajectory.tool_calls.push(ToolCall {
            id: "1".into(),
            name: "Bash".into(),
            input: serde_json::json!({"command": "echo sk-secret-123456"}),
            output: Some("sk-secret-123456".into()),
            is_error: false,
            duration_s: None,
        });
        let credentials = vec![
            ("API_KEY".to_string(), "sk-secret-123456".to_string()),
            ("SHORT".to_string(), "abc".to_string()),
        ];
        assert!(trajectory.redact_credentials(&credentials));
        let text = serde_json::to_string(&trajectory).unwrap();
        assert!(!text.contains("sk-secret-123456"), "{text}");
        assert_eq!(
            trajectory.final_answer.as_deref(),
            Some("key [REDACTED:$API_KEY] leaked")
        );
        assert!(!trajectory.redact_credentials(&credentials), "nothing left");
    }

    #[test]
    fn status_serializes_flat() {
        let mut trajectory = Trajectory::new();
        trajectory.status = TrajectoryStatus::Incomplete {
            reason: "no result event".into(),
        };
        let json = serde_json::to_value(&trajectory).unwrap();
        assert_eq!(json["status"], "incomplete");
        assert_eq!(json["reason"], "no result event");
        let back: Trajectory = serde_json::from_value(json).unwrap();
        assert_eq!(back, trajectory);
    }
}
