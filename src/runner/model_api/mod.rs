//! The one agent loop of the model-API runners (`openai-chat`, `anthropic-messages`): the wire
//! formats differ, the loop does not.
//!
//! [`ModelApiRunner`] loads the staged skills, builds the system prompt of the profile's skill
//! mode, and asks the model at most `max_turns` times (once in `inject` mode): each request is
//! posted with bounded retries under the trial's deadline, its usage priced and recorded with
//! its latency, finish reason and retries; each tool call of `tools` mode is run
//! ([`tools::execute_tool`]) and recorded, and its result handed back. The attempt ends with a
//! reply that calls no tool, a `final_answer` call, a reply cut by the token limit, a request
//! that failed for good (the partial trajectory is kept), or the turn limit.
//!
//! A [`WireFormat`] is the small adapter of one API: the request body, the headers, where the
//! system prompt goes, how a reply's text, tool calls, usage and finish reason are read, how
//! tool results go back, and how a failed request is typed.

pub(in crate::runner) mod tools;

use std::path::Path;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;

use super::http::{PostFailure, RetryPolicy, post_json_with_retries_and_headers};
use super::{AttemptError, AttemptInput, Runner, RunnerProfile, SkillMode};
use crate::trajectory::{
    InfrastructureCause, Message, RequestRecord, Role, ToolCall, Trajectory, TrajectoryStatus,
    Usage,
};
pub use tools::SKILLS_DIR;
use tools::{LoadedSkill, SkillTexts, execute_tool, inject_system_prompt, tools_system_prompt};

/// A tool call the model asked for.
pub(in crate::runner) struct ToolUse {
    /// The call's id (the API's, else one made from its position).
    pub(in crate::runner) id: String,
    /// The tool's name (empty when the reply gave none).
    pub(in crate::runner) name: String,
    /// The call's input (decoded JSON where the API sends it as text and it parses).
    pub(in crate::runner) input: Value,
}

/// What one successful response said.
pub(in crate::runner) struct Reply {
    /// The reply's text (the final answer when no tool is called).
    pub(in crate::runner) text: String,
    /// The tool calls, in order.
    pub(in crate::runner) tool_uses: Vec<ToolUse>,
    /// Why the model stopped, as the API names it (recorded per request).
    pub(in crate::runner) finish_reason: Option<String>,
    /// Whether the reply was cut by the token limit (its tool calls are then not run).
    pub(in crate::runner) cut: bool,
}

/// What one request carries.
#[derive(Clone, Copy)]
pub(in crate::runner) struct Request<'a> {
    /// The runner's profile (sampling settings, token limit).
    pub(in crate::runner) profile: &'a RunnerProfile,
    /// The model asked.
    pub(in crate::runner) model: &'a str,
    /// The system prompt.
    pub(in crate::runner) system: &'a str,
    /// The tool definitions (`tools` mode).
    pub(in crate::runner) tools: Option<&'a Value>,
    /// The conversation so far.
    pub(in crate::runner) messages: &'a [Value],
}

/// A successful response that is not a reply: what it lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(in crate::runner) struct MalformedReply(pub(in crate::runner) &'static str);

/// One model API's wire format: everything the loop needs to know of it.
pub(in crate::runner) trait WireFormat: Send + Sync {
    /// The kind's recorded name.
    fn kind(&self) -> &'static str;

    /// The extra headers of every request (credentials among them: never recorded) and the
    /// bearer token, from the profile's API key.
    fn auth<'a>(&self, api_key: Option<&'a str>)
    -> (Option<&'a str>, Vec<(&'static str, &'a str)>);

    /// The `tools` of `tools` mode.
    fn tool_definitions(&self, skills: &[LoadedSkill]) -> Value;

    /// The conversation's first messages: the user's prompt (and the system prompt where the
    /// API carries it as a message).
    fn first_messages(&self, system: &str, prompt: &str) -> Vec<Value>;

    /// One request's body.
    fn request_body(&self, request: Request<'_>) -> Value;

    /// Record a request that failed for good on `trajectory` (its status, and the typed cause
    /// where the format types it).
    fn record_failure(&self, trajectory: &mut Trajectory, failure: &PostFailure, deadline: Instant);

    /// An error the API reported in a successful answer's body: its cause and message.
    fn api_error(&self, body: &Value) -> Option<(InfrastructureCause, String)>;

    /// Read a successful response.
    fn parse_reply(&self, body: &Value) -> Result<Reply, MalformedReply>;

    /// The response's token usage (unpriced).
    fn usage(&self, body: &Value) -> Usage;

    /// The assistant turn that goes back on the wire before its tool results.
    fn assistant_turn(&self, body: &Value, reply: &Reply) -> Value;

    /// One tool result as the API takes it.
    fn tool_result(&self, id: &str, output: String, is_error: bool) -> Value;

    /// Append a turn's tool results to the conversation.
    fn push_tool_results(&self, messages: &mut Vec<Value>, results: Vec<Value>);
}

/// A model-API runner: the shared loop over one [`WireFormat`].
pub(in crate::runner) struct ModelApiRunner<W> {
    pub(in crate::runner) profile: RunnerProfile,
    pub(in crate::runner) api_key: Option<String>,
    client: reqwest::Client,
    pub(in crate::runner) url: String,
    skill_texts: SkillTexts,
    wire: W,
}

impl<W: WireFormat> ModelApiRunner<W> {
    /// The runner posting to `url`; `api_key` is the value of the profile's `api_key_env`.
    pub(in crate::runner) fn with_url(
        profile: RunnerProfile,
        api_key: Option<String>,
        url: String,
        wire: W,
    ) -> Result<Self, super::kind::BuildError> {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .tcp_nodelay(true)
            .build()?;
        Ok(Self {
            profile,
            api_key,
            client,
            url,
            skill_texts: SkillTexts::default(),
            wire,
        })
    }
}

/// End the attempt: `trajectory` is the partial record.
fn end(trajectory: Trajectory, message: String) -> Result<Trajectory, AttemptError> {
    Err(AttemptError {
        message,
        partial: Some(Box::new(trajectory)),
    })
}

#[async_trait]
impl<W: WireFormat> Runner for ModelApiRunner<W> {
    fn kind(&self) -> &'static str {
        self.wire.kind()
    }

    fn skills_dir(&self) -> &'static Path {
        Path::new(SKILLS_DIR)
    }

    async fn run_attempt(&self, input: AttemptInput<'_>) -> Result<Trajectory, AttemptError> {
        let deadline = Instant::now() + input.timeout;
        let mut trajectory = Trajectory::new();
        let skills = self
            .skill_texts
            .load(input.skills)
            .map_err(|error| AttemptError {
                message: error.to_string(),
                partial: None,
            })?;
        let mode = self.profile.skill_mode;
        let system = match mode {
            SkillMode::Inject => inject_system_prompt(&self.profile.system_prompt, &skills),
            SkillMode::Tools => tools_system_prompt(&self.profile.system_prompt, &skills),
        };
        let mut wire_messages = self.wire.first_messages(&system, input.prompt);
        trajectory.messages.push(Message {
            role: Role::System,
            content: system.clone(),
            tool_call_id: None,
        });
        trajectory.messages.push(Message {
            role: Role::User,
            content: input.prompt.to_string(),
            tool_call_id: None,
        });
        let tools = (mode == SkillMode::Tools).then(|| self.wire.tool_definitions(&skills));
        let policy = RetryPolicy::of_profile(&self.profile);
        let max_turns = if mode == SkillMode::Tools {
            self.profile.max_turns
        } else {
            1
        };
        let (bearer, headers) = self.wire.auth(self.api_key.as_deref());

        for _turn in 0..max_turns {
            let body = self.wire.request_body(Request {
                profile: &self.profile,
                model: input.model,
                system: &system,
                tools: tools.as_ref(),
                messages: &wire_messages,
            });
            let response = match post_json_with_retries_and_headers(
                &self.client,
                &self.url,
                bearer,
                &headers,
                &body,
                policy,
                deadline,
            )
            .await
            {
                Ok(response) => response,
                Err(failure) => {
                    self.wire
                        .record_failure(&mut trajectory, &failure, deadline);
                    trajectory.requests.push(RequestRecord {
                        latency_s: 0.0,
                        model: None,
                        finish_reason: None,
                        retries: failure.retries,
                    });
                    return end(trajectory, failure.message);
                }
            };
            let value = response.body;
            if let Some((cause, message)) = self.wire.api_error(&value) {
                trajectory.set_infrastructure_error(cause, &message);
                return end(trajectory, message);
            }
            let reply = match self.wire.parse_reply(&value) {
                Ok(reply) => reply,
                Err(malformed) => {
                    trajectory.raw_events.push(value.clone());
                    trajectory.status = TrajectoryStatus::Incomplete {
                        reason: malformed.to_string(),
                    };
                    return end(trajectory, malformed.to_string());
                }
            };
            let observed_model = value["model"].as_str().map(str::to_string);
            if observed_model.is_some() {
                trajectory.observed_model = observed_model.clone();
            }
            let mut usage = self.wire.usage(&value);
            if let Some(price) = &self.profile.price {
                usage.cost_usd = price.cost_usd(&usage);
            }
            trajectory.add_request_usage(&usage);
            trajectory.requests.push(RequestRecord {
                latency_s: response.latency_s,
                model: observed_model,
                finish_reason: reply.finish_reason.clone(),
                retries: response.retries,
            });
            trajectory.messages.push(Message {
                role: Role::Assistant,
                content: reply.text.clone(),
                tool_call_id: None,
            });
            if reply.tool_uses.is_empty() || mode == SkillMode::Inject || reply.cut {
                trajectory.final_answer = Some(reply.text);
                return Ok(trajectory);
            }
            wire_messages.push(self.wire.assistant_turn(&value, &reply));
            let mut results = Vec::with_capacity(reply.tool_uses.len());
            let mut final_answer = None;
            for call in reply.tool_uses {
                let started = Instant::now();
                let call_index = trajectory.tool_calls.len();
                let execution = execute_tool(
                    &call.name,
                    &call.input,
                    &input,
                    &skills,
                    &mut trajectory,
                    call_index,
                );
                trajectory.tool_calls.push(ToolCall {
                    id: call.id.clone(),
                    name: call.name,
                    input: call.input,
                    output: Some(execution.output.clone()),
                    is_error: execution.is_error,
                    duration_s: Some(started.elapsed().as_secs_f64()),
                });
                trajectory.messages.push(Message {
                    role: Role::Tool,
                    content: execution.output.clone(),
                    tool_call_id: Some(call.id.clone()),
                });
                results.push(
                    self.wire
                        .tool_result(&call.id, execution.output, execution.is_error),
                );
                if execution.final_answer.is_some() {
                    final_answer = execution.final_answer;
                }
            }
            if let Some(answer) = final_answer {
                trajectory.final_answer = Some(answer);
                return Ok(trajectory);
            }
            self.wire.push_tool_results(&mut wire_messages, results);
        }
        trajectory.turn_limit_reached = true;
        Ok(trajectory)
    }
}
