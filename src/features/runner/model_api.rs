//! The one agent loop of the model-API runners (`openai-chat`, `anthropic-messages`): the wire
//! formats differ, the loop does not.
//!
//! [`ModelApiRunner`] loads the staged skills, builds the system prompt of the profile's skill
//! mode, and asks the model at most `max_turns` times (once in `inject` mode): each request is
//! posted with bounded retries under the trial's deadline, its usage priced and recorded with
//! its latency, finish reason and retries; each tool call of `tools` mode is run
//! ([`execute_tool`]) and recorded, and its result handed back. The attempt ends with a
//! reply that calls no tool, a `final_answer` call, a reply cut by the token limit, a request
//! that failed for good (the partial trajectory is kept), or the turn limit.
//!
//! A [`WireFormat`] is the small adapter of one API: the request body, the headers, where the
//! system prompt goes, how a reply's text, tool calls, usage and finish reason are read, how
//! tool results go back, and how a failed request is typed.
//!
//! Both APIs show the model the same things, written once below: the staged-skill loader, the
//! system prompts of `inject` and `tools` mode, and the tools of `tools` mode (`activate_skill`,
//! `read_file`, `final_answer`). Skills are read from the staged workspace, never from their
//! source folders.

use std::collections::HashMap;
use std::path::{Component, Path};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::http::{PostFailure, RetryPolicy, post_json_with_retries_and_headers};
use super::{AttemptError, AttemptInput, Runner, RunnerProfile, SkillMode, StagedSkill};
use crate::features::asset::parse_skill_text;
use crate::values::trajectory::{
    ActivationEvidence, InfrastructureCause, Message, RequestRecord, Role, SkillActivation,
    ToolCall, Trajectory, TrajectoryStatus, Usage,
};

/// A tool call the model asked for.
pub(in crate::features::runner) struct ToolUse {
    /// The call's id (the API's, else one made from its position).
    pub(in crate::features::runner) id: String,
    /// The tool's name (empty when the reply gave none).
    pub(in crate::features::runner) name: String,
    /// The call's input (decoded JSON where the API sends it as text and it parses).
    pub(in crate::features::runner) input: Value,
}

/// What one successful response said.
pub(in crate::features::runner) struct Reply {
    /// The reply's text (the final answer when no tool is called).
    pub(in crate::features::runner) text: String,
    /// The tool calls, in order.
    pub(in crate::features::runner) tool_uses: Vec<ToolUse>,
    /// Why the model stopped, as the API names it (recorded per request).
    pub(in crate::features::runner) finish_reason: Option<String>,
    /// Whether the reply was cut by the token limit (its tool calls are then not run).
    pub(in crate::features::runner) cut: bool,
}

/// What one request carries.
#[derive(Clone, Copy)]
pub(in crate::features::runner) struct Request<'a> {
    /// The runner's profile (sampling settings, token limit).
    pub(in crate::features::runner) profile: &'a RunnerProfile,
    /// The model asked.
    pub(in crate::features::runner) model: &'a str,
    /// The system prompt.
    pub(in crate::features::runner) system: &'a str,
    /// The tool definitions (`tools` mode).
    pub(in crate::features::runner) tools: Option<&'a Value>,
    /// The conversation so far.
    pub(in crate::features::runner) messages: &'a [Value],
    /// The request's sampling seed, when the profile asks for seeded sampling and the format
    /// takes one ([`WireFormat::takes_seed`]).
    pub(in crate::features::runner) seed: Option<u64>,
}

/// A successful response that is not a reply: what it lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(in crate::features::runner) struct MalformedReply(pub(in crate::features::runner) &'static str);

/// One model API's wire format: everything the loop needs to know of it.
pub(in crate::features::runner) trait WireFormat: Send + Sync {
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

    /// Whether a request can carry a sampling seed (Chat Completions' `seed`; the Anthropic
    /// Messages API has none).
    fn takes_seed(&self) -> bool;

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
pub(in crate::features::runner) struct ModelApiRunner<W> {
    pub(in crate::features::runner) profile: RunnerProfile,
    pub(in crate::features::runner) api_key: Option<String>,
    client: reqwest::Client,
    pub(in crate::features::runner) url: String,
    skill_texts: SkillTexts,
    wire: W,
}

impl<W: WireFormat> ModelApiRunner<W> {
    /// The runner posting to `url`; `api_key` is the value of the profile's `api_key_env`.
    pub(in crate::features::runner) fn with_url(
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

        for turn in 0..max_turns {
            // Each request's own seed (crate::features::runner::sampling): a function of the run's seed,
            // the trial and the request's index, never of what the server answered before.
            let seed = self
                .profile
                .seed
                .filter(|_| self.wire.takes_seed())
                .map(|profile_seed| {
                    input
                        .trial_seed
                        .request_seed(profile_seed, u32::try_from(turn).unwrap_or(u32::MAX))
                });
            let body = self.wire.request_body(Request {
                profile: &self.profile,
                model: input.model,
                system: &system,
                tools: tools.as_ref(),
                messages: &wire_messages,
                seed,
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
                        seed,
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
                seed,
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

/// Where the model-API runners stage skills, relative to the workspace.
pub(super) const SKILLS_DIR: &str = ".agents/skills";

/// A staged skill the model-API runners could not load (the attempt ends before any request).
#[derive(Debug, thiserror::Error)]
pub(super) enum SkillLoadError {
    /// Its staged `SKILL.md` could not be read.
    #[error("staged skill unreadable: {}: {source}", path.display())]
    Read {
        /// The staged `SKILL.md`.
        path: std::path::PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// Its staged `SKILL.md` did not parse.
    #[error("staged skill unreadable: {0}")]
    Parse(crate::features::asset::SkillError),
}

/// Largest file `read_file` returns, in bytes (longer files are cut with a note).
const READ_FILE_LIMIT_BYTES: usize = 100_000;

/// Parsed staged skills keyed by the exact text of their `SKILL.md`: every trial still reads its
/// own staged copy, but identical text is parsed once.
#[derive(Default)]
pub(in crate::features::runner) struct SkillTexts {
    parsed: Mutex<HashMap<String, Arc<ParsedSkillText>>>,
}

/// The parts of a `SKILL.md` the prompt uses.
struct ParsedSkillText {
    description: String,
    body: String,
}
/// A staged skill as the model sees it.
pub(in crate::features::runner) struct LoadedSkill {
    pub(in crate::features::runner) name: String,
    pub(in crate::features::runner) description: String,
    pub(in crate::features::runner) body: String,
}

/// The system prompt of `inject` mode: the base prompt, then one section per skill (in the order
/// given: the trial's presentation order) with its description and trimmed body.
pub(in crate::features::runner) fn inject_system_prompt(
    base: &str,
    skills: &[LoadedSkill],
) -> String {
    if skills.is_empty() {
        return base.to_string();
    }
    let sections: Vec<String> = skills
        .iter()
        .map(|s| {
            format!(
                "## Skill: {}\nDescription: {}\n\n{}",
                s.name, s.description, s.body
            )
        })
        .collect();
    format!(
        "{base}\n\n# Skills\n\nWhen a request matches a skill's description, follow that skill's instructions exactly.\n\n{}",
        sections.join("\n\n")
    )
}

/// The system prompt of `tools` mode: names and descriptions only.
pub(in crate::features::runner) fn tools_system_prompt(
    base: &str,
    skills: &[LoadedSkill],
) -> String {
    let mut prompt = format!(
        "{base}\n\nYou work in a folder that may contain files. Use `read_file` to read a file by its relative path."
    );
    if !skills.is_empty() {
        prompt.push_str(
            "\n\n# Skills\n\nThese skills are available. When a request matches a skill's description, call `activate_skill` with its name to load its instructions, then follow them.\n\n",
        );
        let lines: Vec<String> = skills
            .iter()
            .map(|s| format!("- {}: {}", s.name, s.description))
            .collect();
        prompt.push_str(&lines.join("\n"));
    }
    prompt
        .push_str("\n\nGive your final answer as a normal reply, or with the `final_answer` tool.");
    prompt
}
/// Resolve a model-supplied path inside the workspace; `None` when it escapes.
fn resolve_in_workspace(workspace: &Path, requested: &str) -> Option<(std::path::PathBuf, String)> {
    let relative = Path::new(requested.trim().trim_start_matches("./"));
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    let root = workspace.canonicalize().ok()?;
    let resolved = root.join(relative).canonicalize().ok()?;
    if !resolved.starts_with(&root) {
        return None;
    }
    let shown = resolved
        .strip_prefix(&root)
        .ok()?
        .to_string_lossy()
        .replace('\\', "/");
    Some((resolved, shown))
}

/// Resolve a `read_file` path: inside the workspace first; else, relative to the folder of a
/// skill activated earlier in this attempt (latest first), as the paths in a `SKILL.md` body
/// are written. Only staged skills can be reached (the baseline arm has no target to read),
/// and never anything outside the workspace. The shown path is workspace-relative.
fn resolve_for_read(
    input: &AttemptInput<'_>,
    activations: &[SkillActivation],
    requested: &str,
) -> Option<(std::path::PathBuf, String)> {
    if let Some(found) = resolve_in_workspace(input.workspace, requested)
        && found.0.is_file()
    {
        return Some(found);
    }
    let root = input.workspace.canonicalize().ok()?;
    for activation in activations.iter().rev() {
        if !activation.ok || activation.evidence != ActivationEvidence::SkillTool {
            continue;
        }
        let Some(staged) = input.skills.iter().find(|s| s.name == activation.skill) else {
            continue;
        };
        if let Some((resolved, _)) = resolve_in_workspace(&staged.dir, requested)
            && resolved.is_file()
            && resolved.starts_with(&root)
        {
            let shown = resolved
                .strip_prefix(&root)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            return Some((resolved, shown));
        }
    }
    resolve_in_workspace(input.workspace, requested)
}

/// What a tool call returned.
pub(in crate::features::runner) struct ToolExecution {
    /// The result text handed back to the model.
    pub(in crate::features::runner) output: String,
    /// Whether the result is an error.
    pub(in crate::features::runner) is_error: bool,
    /// The answer of a `final_answer` call.
    pub(in crate::features::runner) final_answer: Option<String>,
}

/// The tools both agent loops offer in `tools` mode, as `(name, description, JSON schema of the
/// input)`: `activate_skill` (only when skills are staged), `read_file`, `final_answer`.
pub(in crate::features::runner) fn tool_specs(
    skills: &[LoadedSkill],
) -> Vec<(&'static str, &'static str, Value)> {
    let mut tools = Vec::new();
    if !skills.is_empty() {
        tools.push((
            "activate_skill",
            "Load the full instructions of an available skill by name.",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "The skill's name"}}, "required": ["name"]}),
        ));
    }
    tools.push((
        "read_file",
        "Read a text file in the working folder by its relative path.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "Path relative to the working folder"}}, "required": ["path"]}),
    ));
    tools.push((
        "final_answer",
        "Give the final answer to the user and finish.",
        json!({"type": "object", "properties": {
            "answer": {"type": "string"}}, "required": ["answer"]}),
    ));
    tools
}

impl SkillTexts {
    /// Read each staged skill from the workspace, or take its text staged in memory (parsing
    /// identical text only once).
    pub(in crate::features::runner) fn load(
        &self,
        skills: &[StagedSkill],
    ) -> Result<Vec<LoadedSkill>, SkillLoadError> {
        skills
            .iter()
            .map(|staged| {
                let path = staged.dir.join("SKILL.md");
                // Staged in memory (no trial folder), else read from the staged folder.
                let text: std::borrow::Cow<'_, str> = match &staged.skill_md {
                    Some(text) => std::borrow::Cow::Borrowed(text),
                    None => std::borrow::Cow::Owned(std::fs::read_to_string(&path).map_err(
                        |source| SkillLoadError::Read {
                            path: path.clone(),
                            source,
                        },
                    )?),
                };
                let cached = self
                    .parsed
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .get(text.as_ref())
                    .cloned();
                let parsed = match cached {
                    Some(parsed) => parsed,
                    None => {
                        let skill = parse_skill_text(&text, &path, &staged.dir, &staged.name)
                            .map_err(SkillLoadError::Parse)?;
                        let parsed = Arc::new(ParsedSkillText {
                            description: skill.description,
                            body: skill.body.trim().to_string(),
                        });
                        self.parsed
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner())
                            .insert(text.into_owned(), Arc::clone(&parsed));
                        parsed
                    }
                };
                Ok(LoadedSkill {
                    name: staged.name.clone(),
                    description: parsed.description.clone(),
                    body: parsed.body.clone(),
                })
            })
            .collect()
    }
}

/// Execute one tool call of `tools` mode (`activate_skill`, `read_file`, `final_answer`; any
/// other name is an error result), recording activations and file reads in `trajectory`;
/// `call_index` is the index the call will have in `trajectory.tool_calls`.
pub(in crate::features::runner) fn execute_tool(
    name: &str,
    arguments: &Value,
    input: &AttemptInput<'_>,
    skills: &[LoadedSkill],
    trajectory: &mut Trajectory,
    call_index: usize,
) -> ToolExecution {
    let text_argument = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let error = |output: String| ToolExecution {
        output,
        is_error: true,
        final_answer: None,
    };
    match name {
        "activate_skill" => {
            let Some(requested) = text_argument("name") else {
                return error("activate_skill needs a `name` argument".to_string());
            };
            match skills.iter().find(|s| s.name == requested.trim()) {
                Some(skill) => {
                    let location = input
                        .skills
                        .iter()
                        .find(|staged| staged.name == skill.name)
                        .map(|staged| {
                            staged
                                .dir
                                .strip_prefix(input.workspace)
                                .unwrap_or(&staged.dir)
                                .to_string_lossy()
                                .replace('\\', "/")
                        })
                        .unwrap_or_default();
                    trajectory.skill_activations.push(SkillActivation {
                        skill: skill.name.clone(),
                        evidence: ActivationEvidence::SkillTool,
                        ok: true,
                        tool_call_index: Some(call_index),
                        target: input
                            .skills
                            .iter()
                            .any(|s| s.target && s.name == skill.name),
                        reason: None,
                    });
                    ToolExecution {
                        output: format!(
                            "Skill `{}` lives in the folder `{location}/` (relative to your working folder). Paths in its instructions (references/, scripts/, assets) are relative to that folder: read them with read_file as written (e.g. `references/guide.md`) or as `{location}/references/guide.md`.\n\n{}",
                            skill.name, skill.body
                        ),
                        is_error: false,
                        final_answer: None,
                    }
                }
                None => {
                    trajectory.skill_activations.push(SkillActivation {
                        skill: requested.clone(),
                        evidence: ActivationEvidence::SkillTool,
                        ok: false,
                        tool_call_index: Some(call_index),
                        target: false,
                        reason: Some("unknown skill".to_string()),
                    });
                    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
                    error(format!(
                        "unknown skill `{requested}`; available: {}",
                        names.join(", ")
                    ))
                }
            }
        }
        "read_file" => {
            let Some(requested) = text_argument("path") else {
                return error("read_file needs a `path` argument".to_string());
            };
            let Some((resolved, shown)) =
                resolve_for_read(input, &trajectory.skill_activations, &requested)
            else {
                return error(format!(
                    "`{requested}` is not a file inside the working folder or an activated skill's folder"
                ));
            };
            match std::fs::read(&resolved) {
                Ok(bytes) => {
                    trajectory.files_read.push(shown.clone());
                    let skills_root = input.workspace.canonicalize().ok();
                    for staged in input.skills {
                        let skill_file = staged.dir.join("SKILL.md").canonicalize().ok();
                        // A skill activated and then its SKILL.md read counts once.
                        let already = trajectory
                            .skill_activations
                            .iter()
                            .any(|a| a.ok && a.skill == staged.name);
                        if skill_file.as_deref() == Some(resolved.as_path())
                            && skills_root.is_some()
                            && !already
                        {
                            trajectory.skill_activations.push(SkillActivation {
                                skill: staged.name.clone(),
                                evidence: ActivationEvidence::FileRead,
                                ok: true,
                                tool_call_index: Some(call_index),
                                target: staged.target,
                                reason: None,
                            });
                        }
                    }
                    let mut text =
                        String::from_utf8_lossy(&bytes[..bytes.len().min(READ_FILE_LIMIT_BYTES)])
                            .into_owned();
                    if bytes.len() > READ_FILE_LIMIT_BYTES {
                        text.push_str(&format!("\n[cut: file is {} bytes]", bytes.len()));
                    }
                    ToolExecution {
                        output: text,
                        is_error: false,
                        final_answer: None,
                    }
                }
                Err(io) => error(format!("cannot read `{requested}`: {io}")),
            }
        }
        "final_answer" => {
            let answer = text_argument("answer").unwrap_or_default();
            ToolExecution {
                output: "ok".to_string(),
                is_error: false,
                final_answer: Some(answer),
            }
        }
        other => error(format!("unknown tool `{other}`")),
    }
}

/// A staged skill `name` for tests: described "Use for {name}.", body "Do {name}.".
#[cfg(test)]
pub(in crate::features::runner) fn test_skill(name: &str) -> LoadedSkill {
    LoadedSkill {
        name: name.to_string(),
        description: format!("Use for {name}."),
        body: format!("Do {name}."),
    }
}

#[cfg(test)]
mod tests {
    use super::test_skill as skill;
    use super::*;
    use std::time::Duration;

    #[test]
    fn inject_prompt_layout_is_stable() {
        let prompt =
            inject_system_prompt("You are a helpful assistant.", &[skill("a"), skill("b")]);
        assert_eq!(
            prompt,
            "You are a helpful assistant.\n\n# Skills\n\nWhen a request matches a skill's description, follow that skill's instructions exactly.\n\n## Skill: a\nDescription: Use for a.\n\nDo a.\n\n## Skill: b\nDescription: Use for b.\n\nDo b."
        );
        assert_eq!(inject_system_prompt("base", &[]), "base");
    }

    #[test]
    fn tools_prompt_lists_descriptions_not_bodies() {
        let prompt = tools_system_prompt("base", &[skill("a")]);
        assert!(prompt.contains("- a: Use for a."));
        assert!(!prompt.contains("Do a."));
    }

    #[test]
    fn workspace_paths_cannot_escape() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        assert_eq!(
            resolve_in_workspace(dir.path(), "./a.txt").unwrap().1,
            "a.txt"
        );
        assert!(resolve_in_workspace(dir.path(), "../a.txt").is_none());
        assert!(resolve_in_workspace(dir.path(), "/etc/passwd").is_none());
        assert!(resolve_in_workspace(dir.path(), "missing.txt").is_none());
    }

    #[test]
    fn read_file_reaches_an_activated_skills_files_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        let skill_dir = workspace.join(".agents/skills/csv-summary");
        std::fs::create_dir_all(skill_dir.join("references")).unwrap();
        std::fs::write(
            skill_dir.join("SKILL.md"),
            "---\nname: csv-summary\ndescription: d\n---\n",
        )
        .unwrap();
        std::fs::write(skill_dir.join("references/format.md"), "table").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
        let staged = vec![StagedSkill {
            name: "csv-summary".to_string(),
            dir: skill_dir.clone(),
            target: true,
            skill_md: None,
        }];
        let input = AttemptInput {
            prompt: "p",
            workspace: &workspace,
            home: dir.path(),
            skills: &staged,
            model: "m",
            timeout: Duration::from_secs(1),
            trial_seed: crate::features::runner::TrialSeed::of_trial(1, "c", "with_skill", 1),
        };
        let activation = |skill: &str, ok: bool| SkillActivation {
            skill: skill.to_string(),
            evidence: ActivationEvidence::SkillTool,
            ok,
            tool_call_index: Some(0),
            target: true,
            reason: None,
        };
        // Before activation the body's relative path is not a workspace file.
        assert!(resolve_for_read(&input, &[], "references/format.md").is_none());
        let activated = [activation("csv-summary", true)];
        let (path, shown) = resolve_for_read(&input, &activated, "references/format.md").unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), "table");
        assert_eq!(shown, ".agents/skills/csv-summary/references/format.md");
        // The workspace-relative spelling works too; escapes never do.
        assert!(
            resolve_for_read(
                &input,
                &[],
                ".agents/skills/csv-summary/references/format.md"
            )
            .is_some()
        );
        assert!(resolve_for_read(&input, &activated, "../../outside.txt").is_none());
        assert!(resolve_for_read(&input, &activated, "/etc/passwd").is_none());
        // A failed activation, or a skill not staged in this arm (the baseline's target), opens
        // nothing.
        assert!(
            resolve_for_read(
                &input,
                &[activation("csv-summary", false)],
                "references/format.md"
            )
            .is_none()
        );
        let baseline = AttemptInput {
            skills: &[],
            ..input
        };
        assert!(resolve_for_read(&baseline, &activated, "references/format.md").is_none());
    }
}
