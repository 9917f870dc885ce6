//! Runner profiles: `runners/*.toml` files describing how attempts are executed.
//!
//! Resolution of `--runner` ([`locate_profile`]): a value containing `/`, ending in `.toml` or
//! naming an existing file is that file; otherwise it names `<name>.toml` in `runners/` under the
//! current folder, then in each folder of `SKILL_LIFT_RUNNERS`, then the profiles shipped in
//! `runners/` of the repository, which are compiled into the binary ([`BUILTIN_PROFILES`]) so a
//! copied or `cargo install`ed skill-lift works from any folder. A built-in profile is recorded
//! as `builtin:<name>` where a file's path would be. Unknown keys are errors (a typo must not
//! silently fall back to a default).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::features::runner::agent_cli;
use crate::features::runner::kind::KindSpec;
use crate::record::PriceTable;

/// Declares [`RunnerKind`] from the kind list: each entry is a variant (its profile name is the
/// variant in kebab-case) and the [`KindSpec`] that implements it.
macro_rules! runner_kinds {
    ($($(#[doc = $doc:literal])* $variant:ident => $spec:expr,)+) => {
        /// Which runner implementation a profile selects.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum RunnerKind {
            $($(#[doc = $doc])* $variant,)+
        }

        impl RunnerKind {
            /// Every kind, in the order of the list.
            pub const ALL: &'static [RunnerKind] = &[$(RunnerKind::$variant,)+];

            /// The kind's behaviour: name, capabilities, runner, agent CLI description.
            pub fn spec(self) -> &'static dyn KindSpec {
                match self {
                    $(RunnerKind::$variant => &$spec,)+
                }
            }
        }
    };
}

// The kind list: a new runner kind is one entry here plus the file that implements it.
runner_kinds! {
    /// Any OpenAI-compatible Chat Completions server, driven by skill-lift's own agent loop.
    OpenaiChat => crate::features::runner::openai_chat::KIND,
    /// Claude Code (`claude -p … --output-format stream-json --verbose`).
    ClaudeCode => agent_cli::ClaudeCode,
    /// Codex CLI (`codex exec --json`).
    Codex => agent_cli::Codex,
    /// Gemini CLI (`gemini -p … --output-format stream-json`).
    Gemini => agent_cli::Gemini,
    /// OpenCode (`opencode run --format json`).
    Opencode => agent_cli::Opencode,
    /// Cursor CLI (`cursor-agent -p … --output-format stream-json`).
    Cursor => agent_cli::Cursor,
    /// Goose (`goose run --output-format stream-json`).
    Goose => agent_cli::Goose,
    /// GitHub Copilot CLI (`copilot --prompt=… --output-format json`).
    Copilot => agent_cli::Copilot,
    /// Qwen Code (`qwen --prompt=… -o stream-json`).
    QwenCode => agent_cli::QwenCode,
    /// Any program: an argv template and a chosen output parser.
    Command => agent_cli::Command,
    /// The Anthropic Messages API (`POST {base_url}/messages`), driven by skill-lift's own
    /// agent loop (a runner) or used as a judge (`--judge`); `base_url` defaults to
    /// `https://api.anthropic.com/v1` when empty.
    AnthropicMessages => crate::features::runner::anthropic_messages::KIND,
}

impl RunnerKind {
    /// The kind's name as written in profiles.
    pub fn name(self) -> &'static str {
        self.spec().name()
    }

    /// The kind a recorded name (a manifest's `runner.kind`) names, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.name() == name)
    }

    /// Whether the kind drives an agent CLI process (rather than a model API).
    pub fn is_agent_cli(self) -> bool {
        self.spec().agent_cli().is_some()
    }

    /// What a runner of this kind, configured by `profile`, can do and what the harness can
    /// observe of it.
    pub fn capabilities(self, profile: &RunnerProfile) -> crate::record::RunnerCapabilities {
        self.spec().capabilities(profile)
    }
}

/// How staged skills reach a model-API runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SkillMode {
    /// Every staged skill's body is placed in the system prompt.
    #[default]
    Inject,
    /// Progressive disclosure: names and descriptions in the system prompt, bodies through an
    /// `activate_skill` tool, workspace files through `read_file`.
    Tools,
}

/// How a judge asks an OpenAI-compatible server for JSON (`response_format` in a judge
/// profile). The answer is validated against the rubric's schema either way; constraining the
/// server only makes malformed answers (and their re-asks) rarer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum JudgeResponseFormat {
    /// `{"type": "json_object"}` (OpenAI JSON mode; most servers).
    #[default]
    JsonObject,
    /// `{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}` (OpenAI
    /// structured outputs, vLLM).
    JsonSchema,
    /// `{"type": "json_object", "schema": …}` (llama.cpp's llama-cpp-python server, Anyscale):
    /// grammar-constrained to the rubric's schema.
    JsonObjectSchema,
    /// No `response_format` (servers that reject it).
    None,
}

/// A model server skill-lift starts when `ready_url` does not answer, and stops after the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// argv; placeholders `{profile_dir}` (the profile file's folder; not in built-in profiles),
    /// `{skill_lift}` (this skill-lift binary) and `{port}` (from `base_url`).
    pub command: Vec<String>,
    /// URL polled until it answers 2xx.
    pub ready_url: String,
    /// Seconds to wait for `ready_url` after starting the command.
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout_s: f64,
}

fn default_startup_timeout() -> f64 {
    120.0
}

/// A parsed runner profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerProfile {
    /// Runner kind.
    pub kind: RunnerKind,
    /// Base URL including the API prefix, e.g. `http://127.0.0.1:8080/v1`. Required for
    /// `openai-chat`; for `anthropic-messages`, optional (default `https://api.anthropic.com/v1`);
    /// for agent CLIs, optional: handed to the CLI through its base-URL variable.
    #[serde(default)]
    pub base_url: String,
    /// Model id sent in requests (`--model` overrides).
    pub model: String,
    /// Name of the environment variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Maximum completion tokens per request.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The model's context window, tokens (what `skill-lift env` checks a skill's size
    /// against); unset: the documented window of known model families, else unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// Whether the model receives images (what `skill-lift env` checks a skill that declares
    /// it needs vision against); unset: known for model families documented to accept images,
    /// else unknown. The model-API kinds never send images, whatever this says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
    /// Seeded sampling: with `seed = N`, every request of an `openai-chat` runner carries a
    /// seed of its own, derived from N, the run's `--seed`, the trial (case, arm, attempt) and
    /// the request's index in the trial ([`super::sampling`]), so answers do not depend on
    /// request order (resume, a shared server) and a case's attempts still differ. Without it
    /// no seed is sent. Not sent by the Anthropic Messages API (it has none) nor to agent CLIs.
    /// A judge profile's seed is sent as N plus the judge repeat's index.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Wall-clock limit of one trial (all its requests), seconds.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Trials in flight at once (`--jobs` overrides).
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// How skills reach the model.
    #[serde(default)]
    pub skill_mode: SkillMode,
    /// Whether the model can call tools (default true). A model that cannot (the bundled
    /// 135M local model) never activates a skill through a tool, so what depends on observing
    /// activation (`triggers`, `shadow`, `vet`'s trigger step) is refused as not measurable.
    #[serde(default = "default_tool_calls", skip_serializing_if = "is_true")]
    pub tool_calls: bool,
    /// Most model turns in `tools` mode before the conversation is cut.
    #[serde(default = "default_max_turns")]
    pub max_turns: usize,
    /// Most retries of one request after infrastructure errors (connection, 429, 5xx).
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// First backoff delay in seconds (doubles per retry, capped at `max_retry_delay_s`;
    /// `Retry-After` wins, within the same cap).
    #[serde(default = "default_retry_base_delay")]
    pub retry_base_delay_s: f64,
    /// Longest single wait before a retry, seconds, whatever `Retry-After` asks (default 30): a
    /// server asking for an hour costs at most `max_retries` × this per request, and the run's
    /// circuit breaker stops the run when every trial fails.
    #[serde(default = "default_max_retry_delay")]
    pub max_retry_delay_s: f64,
    /// Optional managed model server.
    #[serde(default)]
    pub server: Option<ServerConfig>,
    /// System prompt placed before the skills section.
    #[serde(default = "default_system_prompt")]
    pub system_prompt: String,
    /// Prices, USD per million tokens: cost estimates (`skill-lift plan`) and the recorded cost
    /// of `anthropic-messages` trials (cache reads and writes priced when the table has them).
    #[serde(default)]
    pub price: Option<PriceTable>,
    /// Agent CLIs: the program to run (default: the kind's usual command name, looked up in
    /// `PATH`). For `command`, the program is the first element of `command` instead.
    #[serde(default)]
    pub program: Option<String>,
    /// `command` kind: argv template; placeholders `{prompt}`, `{workspace}`, `{model}`,
    /// `{skills_dir}`, `{home}`.
    #[serde(default)]
    pub command: Vec<String>,
    /// Agent CLIs: arguments appended to the kind's own (same placeholders as `command`).
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// `command` kind: how stdout is parsed (default `text`).
    #[serde(default)]
    pub output_format: Option<crate::features::runner::parsers::OutputFormat>,
    /// `command` kind: the skills folder relative to the workspace (default `.agents/skills`).
    #[serde(default)]
    pub skills_dir: Option<String>,
    /// Agent CLIs: names of variables passed through from skill-lift's environment when set
    /// (credentials, proxies). Their values are never recorded.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Agent CLIs: fixed variables set for the CLI (not secrets: profiles are recorded).
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Judge profiles (`openai-chat`): how JSON answers are requested.
    #[serde(default)]
    pub response_format: JudgeResponseFormat,
    /// Agent CLIs: seconds between SIGTERM and SIGKILL when a trial is stopped.
    #[serde(default = "default_grace")]
    pub grace_s: f64,
    /// Agent CLIs: seconds a CLI may keep running after its final event before it is stopped.
    #[serde(default = "default_linger")]
    pub linger_s: f64,
    /// Agent CLIs: seconds an agent may go without a model answer (from its start, or since a
    /// retry or API error notice) before the trial is stopped as `unscoreable` with the cause
    /// seen (default 30; 0 turns the check off). Plain-text `command` output is exempt from the
    /// no-answer rule (it has no events before its end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra_grace_s: Option<f64>,
    /// Agent CLIs and custom graders: bytes of stdout kept per trial (default 16 MiB); past it
    /// lines are dropped and the trial is flagged `truncated: ["stdout"]`.
    #[serde(default = "default_max_stdout_bytes")]
    pub max_stdout_bytes: u64,
    /// Agent CLIs: bytes of stderr kept per trial, the tail (default 64 KiB).
    #[serde(default = "default_max_stderr_bytes")]
    pub max_stderr_bytes: u64,
    /// Bytes of one transcript file at most (default 16 MiB); longer texts in it are shortened
    /// and the trial is flagged `truncated: ["transcript"]`.
    #[serde(default = "default_max_transcript_bytes")]
    pub max_transcript_bytes: u64,
    /// Model-API runners and judges: bytes of one HTTP response body read at most (default 32
    /// MiB); a longer body ends the request and the trial is unscoreable with cause
    /// `response_too_large` (an endless body never fills memory).
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: u64,
}

fn default_tool_calls() -> bool {
    true
}
fn is_true(value: &bool) -> bool {
    *value
}
fn default_max_retry_delay() -> f64 {
    30.0
}
fn default_max_stdout_bytes() -> u64 {
    crate::features::process::DEFAULT_MAX_STDOUT_BYTES as u64
}
fn default_max_stderr_bytes() -> u64 {
    crate::features::process::DEFAULT_MAX_STDERR_BYTES as u64
}
/// The default cap on one transcript file, bytes (16 MiB).
pub const DEFAULT_MAX_TRANSCRIPT_BYTES: u64 = 16 * 1024 * 1024;
fn default_max_transcript_bytes() -> u64 {
    DEFAULT_MAX_TRANSCRIPT_BYTES
}
/// The default cap on one HTTP response body, bytes (32 MiB).
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;
fn default_max_response_bytes() -> u64 {
    DEFAULT_MAX_RESPONSE_BYTES
}

fn default_grace() -> f64 {
    3.0
}
/// Default of `infra_grace_s`, seconds.
pub const DEFAULT_INFRA_GRACE_S: f64 = 30.0;

fn default_linger() -> f64 {
    2.0
}

fn default_timeout() -> f64 {
    300.0
}
fn default_concurrency() -> usize {
    4
}
fn default_max_turns() -> usize {
    8
}
fn default_max_retries() -> u32 {
    4
}
fn default_retry_base_delay() -> f64 {
    0.5
}
/// The default system prompt of model-API runners.
pub fn default_system_prompt() -> String {
    "You are a helpful assistant.".to_string()
}

impl RunnerProfile {
    /// `infra_grace_s` as set, else [`DEFAULT_INFRA_GRACE_S`]; `None` when set to 0 (off).
    pub fn infra_grace(&self) -> Option<std::time::Duration> {
        let seconds = self.infra_grace_s.unwrap_or(DEFAULT_INFRA_GRACE_S);
        (seconds > 0.0).then(|| std::time::Duration::from_secs_f64(seconds))
    }
}

impl PriceTable {
    /// The cost of `usage` in USD, `None` when it lacks an input or output count. Input tokens
    /// count every prompt token (cache reads and writes included, as [`crate::values::trajectory::Usage`]
    /// records them): uncached ones at the input price, cache reads and writes at their own
    /// prices when the table has them.
    pub fn cost_usd(&self, usage: &crate::values::trajectory::Usage) -> Option<f64> {
        let input = usage.input_tokens? as f64;
        let output = usage.output_tokens? as f64;
        let read = usage.cached_tokens.unwrap_or(0) as f64;
        let written = usage.cache_creation_tokens.unwrap_or(0) as f64;
        let uncached = (input - read - written).max(0.0);
        let read_price = self
            .cache_read_usd_per_million_tokens
            .unwrap_or(self.input_usd_per_million_tokens);
        let write_price = self
            .cache_write_usd_per_million_tokens
            .unwrap_or(self.input_usd_per_million_tokens);
        Some(
            (uncached * self.input_usd_per_million_tokens
                + read * read_price
                + written * write_price
                + output * self.output_usd_per_million_tokens)
                / 1_000_000.0,
        )
    }
}

include!(concat!(env!("OUT_DIR"), "/builtin_runners.rs"));

/// Prefix of a built-in profile's recorded path (`builtin:local`): manifests and judge settings
/// record it where a file profile's absolute path would be.
pub const BUILTIN_PREFIX: &str = "builtin:";

/// The text of the built-in profile `name`, when there is one.
pub fn builtin_profile(name: &str) -> Option<&'static str> {
    BUILTIN_PROFILES
        .iter()
        .find(|(builtin, _)| *builtin == name)
        .map(|(_, text)| *text)
}

/// The built-in profile a recorded path names (`builtin:<name>`), when it names one.
pub fn builtin_name(path: &Path) -> Option<&str> {
    path.to_str()?.strip_prefix(BUILTIN_PREFIX)
}

/// The recorded path of the built-in profile `name`.
pub fn builtin_path(name: &str) -> PathBuf {
    PathBuf::from(format!("{BUILTIN_PREFIX}{name}"))
}

/// Where a profile was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "origin", content = "folder", rename_all = "snake_case")]
pub enum ProfileOrigin {
    /// Compiled into the binary (the repository's `runners/`).
    Builtin,
    /// A runners folder: `runners/` under the current folder, or one of `SKILL_LIFT_RUNNERS`.
    Folder(PathBuf),
    /// A file named on the command line (`--runner path/to/x.toml`).
    File,
}

impl ProfileOrigin {
    /// How listings name the origin: `built-in`, `folder runners/`, `file`.
    pub fn describe(&self) -> String {
        match self {
            ProfileOrigin::Builtin => "built-in".to_string(),
            ProfileOrigin::Folder(dir) => format!("folder {}", dir.display()),
            ProfileOrigin::File => "file".to_string(),
        }
    }
}

/// A located profile: the path to load ([`load_profile`]; `builtin:<name>` for a built-in) and
/// where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileLocation {
    pub path: PathBuf,
    pub origin: ProfileOrigin,
}

/// A profile plus where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct LoadedProfile {
    /// The profile's name (file stem).
    pub name: String,
    /// The file it was read from, or `builtin:<name>` for a built-in profile.
    pub path: PathBuf,
    /// The settings.
    pub profile: RunnerProfile,
}

/// Why a profile could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "runner profile `{name}` not found (looked for {looked}); pass a profile name (`skill-lift runners` lists them) or a .toml path"
    )]
    NotFound { name: String, looked: String },
    #[error(
        "{path}: is a folder, not a runner profile file; pass a profile's .toml file or its name (`skill-lift runners` lists them)"
    )]
    NotAFile { path: PathBuf },
    #[error("{path}: cannot read runner profile: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: invalid runner profile: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Semantic { path: PathBuf, message: String },
}

/// The runners folders searched by name, in order: `runners/` under the current folder, then
/// each folder of `SKILL_LIFT_RUNNERS` (a `PATH`-style list).
pub fn profile_folders() -> Vec<PathBuf> {
    let mut folders = vec![PathBuf::from("runners")];
    if let Some(dirs) = std::env::var_os("SKILL_LIFT_RUNNERS") {
        folders.extend(std::env::split_paths(&dirs).filter(|d| !d.as_os_str().is_empty()));
    }
    folders
}

/// Locate `--runner` (name or path): a file, a profile in a runners folder, or a built-in.
pub fn locate_profile(value: &str) -> Result<ProfileLocation, ProfileError> {
    let as_path = Path::new(value);
    if value.contains('/') || value.ends_with(".toml") || as_path.is_file() {
        if as_path.is_file() {
            return Ok(ProfileLocation {
                path: as_path.to_path_buf(),
                origin: ProfileOrigin::File,
            });
        }
        if as_path.exists() {
            return Err(ProfileError::NotAFile {
                path: as_path.to_path_buf(),
            });
        }
        return Err(ProfileError::NotFound {
            name: value.to_string(),
            looked: as_path.display().to_string(),
        });
    }
    let file = format!("{value}.toml");
    let folders = profile_folders();
    for folder in &folders {
        let candidate = folder.join(&file);
        if candidate.is_file() {
            return Ok(ProfileLocation {
                path: candidate,
                origin: ProfileOrigin::Folder(folder.clone()),
            });
        }
    }
    if builtin_profile(value).is_some() {
        return Ok(ProfileLocation {
            path: builtin_path(value),
            origin: ProfileOrigin::Builtin,
        });
    }
    if as_path.is_dir() {
        return Err(ProfileError::NotAFile {
            path: as_path.to_path_buf(),
        });
    }
    let mut looked: Vec<String> = folders
        .iter()
        .map(|folder| folder.join(&file).display().to_string())
        .collect();
    looked.push(format!(
        "the built-in profiles ({})",
        BUILTIN_PROFILES
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Err(ProfileError::NotFound {
        name: value.to_string(),
        looked: looked.join(", "),
    })
}

/// Resolve `--runner` (name or path) to the path [`load_profile`] reads (`builtin:<name>` for a
/// built-in profile).
pub fn resolve_profile_path(value: &str) -> Result<PathBuf, ProfileError> {
    locate_profile(value).map(|location| location.path)
}

/// The text of the profile at `path` (a file, or `builtin:<name>`).
pub fn profile_text(path: &Path) -> Result<std::borrow::Cow<'static, str>, ProfileError> {
    if let Some(name) = builtin_name(path) {
        return builtin_profile(name)
            .map(std::borrow::Cow::Borrowed)
            .ok_or_else(|| ProfileError::NotFound {
                name: name.to_string(),
                looked: format!(
                    "the built-in profiles of skill-lift {}",
                    env!("CARGO_PKG_VERSION")
                ),
            });
    }
    std::fs::read_to_string(path)
        .map(std::borrow::Cow::Owned)
        .map_err(|source| ProfileError::Read {
            path: path.to_path_buf(),
            source,
        })
}

/// One profile a `skill-lift runners` listing shows.
#[derive(Debug, Clone, Serialize)]
pub struct ListedProfile {
    /// The name `--runner` takes.
    pub name: String,
    /// The path [`load_profile`] reads (`builtin:<name>` for a built-in).
    pub path: PathBuf,
    #[serde(flatten)]
    pub origin: ProfileOrigin,
    /// False when a profile of the same name earlier in the search order wins.
    pub active: bool,
    /// The profile's kind and model, or why it does not load.
    pub kind: Option<String>,
    pub model: Option<String>,
    pub error: Option<String>,
}

/// Every profile `--runner NAME` can name, in search order (runners folders, then built-ins),
/// each marked active or shadowed by an earlier one of the same name.
pub fn list_profiles() -> Vec<ListedProfile> {
    let mut found: Vec<(String, PathBuf, ProfileOrigin)> = Vec::new();
    for folder in profile_folders() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        let mut names: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == "toml"))
            .filter_map(|path| Some((path.file_stem()?.to_str()?.to_string(), path.clone())))
            .collect();
        names.sort();
        for (name, path) in names {
            found.push((name, path, ProfileOrigin::Folder(folder.clone())));
        }
    }
    for (name, _) in BUILTIN_PROFILES {
        found.push((name.to_string(), builtin_path(name), ProfileOrigin::Builtin));
    }
    let mut seen = std::collections::HashSet::new();
    found
        .into_iter()
        .map(|(name, path, origin)| {
            let active = seen.insert(name.clone());
            let (kind, model, error) = match load_profile_quietly(&path) {
                Ok(profile) => (
                    Some(profile.kind.name().to_string()),
                    Some(profile.model),
                    None,
                ),
                Err(error) => (None, None, Some(error.to_string())),
            };
            ListedProfile {
                name,
                path,
                origin,
                active,
                kind,
                model,
                error,
            }
        })
        .collect()
}

/// Parse and check a profile without registering its credential variables.
fn load_profile_quietly(path: &Path) -> Result<RunnerProfile, ProfileError> {
    let text = profile_text(path)?;
    parse_profile(path, &text)
}

/// Load and validate the profile at `path` (a file, or `builtin:<name>`).
pub fn load_profile(path: &Path) -> Result<LoadedProfile, ProfileError> {
    let text = profile_text(path)?;
    let profile = parse_profile(path, &text)?;
    // Whatever these variables hold never reaches disk (the redaction boundary).
    crate::disk::redact::register_credentials_of(
        profile.api_key_env.iter().chain(profile.pass_env.iter()),
    );
    let name = match builtin_name(path) {
        Some(name) => name.to_string(),
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "runner".to_string()),
    };
    Ok(LoadedProfile {
        name,
        path: path.to_path_buf(),
        profile,
    })
}

impl LoadedProfile {
    /// Whether the profile is compiled into the binary.
    pub fn is_builtin(&self) -> bool {
        builtin_name(&self.path).is_some()
    }

    /// The path a manifest records: `builtin:<name>`, or the file's absolute path.
    pub fn recorded_path(&self) -> PathBuf {
        if self.is_builtin() {
            return self.path.clone();
        }
        self.path.canonicalize().unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|dir| dir.join(&self.path))
                .unwrap_or_else(|_| self.path.clone())
        })
    }

    /// The folder of the profile file (`{profile_dir}` in a `[server]` command); none for a
    /// built-in profile.
    pub fn profile_dir(&self) -> Option<PathBuf> {
        if self.is_builtin() {
            return None;
        }
        let recorded = self.recorded_path();
        recorded.parent().map(Path::to_path_buf)
    }

    /// `sha256:<hex>` of the profile's text (resume refuses a changed profile).
    pub fn digest(&self) -> Result<String, ProfileError> {
        let text = profile_text(&self.path)?;
        Ok(crate::features::asset::fingerprint::sha256_digest(
            text.as_bytes(),
        ))
    }
}

/// Parse and check a profile's `text` (read from `path`, named in errors).
fn parse_profile(path: &Path, text: &str) -> Result<RunnerProfile, ProfileError> {
    let profile: RunnerProfile = toml::from_str(text).map_err(|error| {
        let line = error
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(0);
        ProfileError::Invalid {
            path: path.to_path_buf(),
            line,
            message: error.message().to_string(),
        }
    })?;
    let semantic = |message: String| ProfileError::Semantic {
        path: path.to_path_buf(),
        message,
    };
    // What the profile must hold is the kind's to say (`KindSpec::profile_needs`).
    let needs = profile.kind.spec().profile_needs();
    let needs_url = needs.base_url || !profile.base_url.is_empty();
    if needs_url
        && !(profile.base_url.starts_with("http://") || profile.base_url.starts_with("https://"))
    {
        return Err(semantic(format!(
            "base_url `{}` must start with http:// or https://",
            profile.base_url
        )));
    }
    if let Some((key, message)) = out_of_bounds(&profile) {
        return Err(ProfileError::Invalid {
            path: path.to_path_buf(),
            line: key_line(text, key),
            message: format!("`{key}` {message}"),
        });
    }
    // Only Chat Completions requests carry a sampling seed: a `seed` elsewhere would be
    // silently unused, and the run taken for reproducible when it is not.
    if profile.seed.is_some() && profile.kind != RunnerKind::OpenaiChat {
        let why = if profile.kind.is_agent_cli() {
            "an agent CLI samples on its own; skill-lift cannot hand it a seed"
        } else {
            "the Anthropic Messages API has no sampling seed"
        };
        return Err(ProfileError::Invalid {
            path: path.to_path_buf(),
            line: key_line(text, "seed"),
            message: format!(
                "`seed` cannot be honoured by kind `{}`: {why}. Remove it; this runner's answers vary from run to run (docs/runner-profiles.md)",
                profile.kind.name()
            ),
        });
    }
    if let (Some(name), Some(cli)) = (&profile.api_key_env, profile.kind.spec().agent_cli())
        && let Some(read) = cli.key_variables()
        && !read.contains(&name.as_str())
    {
        return Err(ProfileError::Invalid {
            path: path.to_path_buf(),
            line: key_line(text, "api_key_env"),
            message: format!(
                "`api_key_env = \"{name}\"`: {} never reads `{name}` (it is handed over under its own name); it reads its key from {}. Name one of those, e.g. `api_key_env = \"{}\"`",
                cli.name(),
                read.iter()
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                read[0]
            ),
        });
    }
    if needs.command_template && profile.command.is_empty() {
        return Err(semantic(format!(
            "kind `{}` needs `command`, an argv template such as [\"my-agent\", \"{{prompt}}\"]",
            profile.kind.name()
        )));
    }
    if !needs.command_template && !profile.command.is_empty() {
        return Err(semantic(format!(
            "`command` is only for kind {}; kind `{}` takes `program` and `extra_args`",
            RunnerKind::ALL
                .iter()
                .filter(|kind| kind.spec().profile_needs().command_template)
                .map(|kind| format!("`{}`", kind.name()))
                .collect::<Vec<_>>()
                .join(", "),
            profile.kind.name()
        )));
    }
    if let Some(server) = &profile.server
        && server.command.is_empty()
    {
        return Err(semantic("[server] command must name a program".to_string()));
    }
    if builtin_name(path).is_some()
        && let Some(server) = &profile.server
        && server
            .command
            .iter()
            .any(|arg| arg.contains("{profile_dir}"))
    {
        return Err(semantic(
            "a built-in profile has no folder: its [server] command cannot use {profile_dir} (use {skill_lift})"
                .to_string(),
        ));
    }
    Ok(profile)
}

/// Longest trial (`timeout_s`) a profile may ask for: one week, seconds.
pub const MAX_TIMEOUT_S: f64 = 7.0 * 86_400.0;
/// Longest backoff, grace, linger or server start-up a profile may ask for: one day, seconds.
pub const MAX_DELAY_S: f64 = 86_400.0;
/// Most trials in flight a profile may ask for.
pub const MAX_CONCURRENCY: usize = 1024;
/// Most model turns per trial a profile may ask for.
pub const MAX_TURNS: usize = 10_000;
/// Most retries of one request a profile may ask for.
pub const MAX_RETRIES: u32 = 100;
/// Largest output cap (`max_stdout_bytes`, `max_stderr_bytes`, `max_transcript_bytes`): 16 GiB.
pub const MAX_CAP_BYTES: u64 = 1 << 34;

/// The first numeric setting outside its bounds, as `(key, what is wrong)`. Bounds keep every
/// later conversion (durations, semaphores, backoff doubling) far from overflow: a profile
/// that says `timeout_s = 1e30` is an input error, not a panic.
fn out_of_bounds(profile: &RunnerProfile) -> Option<(&'static str, String)> {
    let seconds = |key: &'static str, value: f64, positive: bool, max: f64| {
        let low_ok = if positive { value > 0.0 } else { value >= 0.0 };
        (!(value.is_finite() && low_ok && value <= max)).then(|| {
            (
                key,
                format!(
                    "= {value} must be a {} number of seconds, at most {max}",
                    if positive { "positive" } else { "non-negative" }
                ),
            )
        })
    };
    let count = |key: &'static str, value: u64, min: u64, max: u64| {
        (!(min..=max).contains(&value))
            .then(|| (key, format!("= {value} must be between {min} and {max}")))
    };
    seconds("timeout_s", profile.timeout_s, true, MAX_TIMEOUT_S)
        .or_else(|| {
            seconds(
                "retry_base_delay_s",
                profile.retry_base_delay_s,
                false,
                MAX_DELAY_S,
            )
        })
        .or_else(|| {
            seconds(
                "max_retry_delay_s",
                profile.max_retry_delay_s,
                false,
                MAX_DELAY_S,
            )
        })
        .or_else(|| seconds("grace_s", profile.grace_s, false, MAX_DELAY_S))
        .or_else(|| seconds("linger_s", profile.linger_s, false, MAX_DELAY_S))
        .or_else(|| {
            profile
                .infra_grace_s
                .and_then(|value| seconds("infra_grace_s", value, false, MAX_DELAY_S))
        })
        .or_else(|| {
            profile.server.as_ref().and_then(|server| {
                seconds(
                    "startup_timeout_s",
                    server.startup_timeout_s,
                    true,
                    MAX_DELAY_S,
                )
            })
        })
        .or_else(|| {
            count(
                "concurrency",
                profile.concurrency as u64,
                1,
                MAX_CONCURRENCY as u64,
            )
        })
        .or_else(|| count("max_turns", profile.max_turns as u64, 1, MAX_TURNS as u64))
        // The output caps bound what one trial may hold in memory.
        .or_else(|| {
            count(
                "max_stdout_bytes",
                profile.max_stdout_bytes,
                1024,
                MAX_CAP_BYTES,
            )
        })
        .or_else(|| {
            count(
                "max_stderr_bytes",
                profile.max_stderr_bytes,
                0,
                MAX_CAP_BYTES,
            )
        })
        .or_else(|| {
            count(
                "max_transcript_bytes",
                profile.max_transcript_bytes,
                64 * 1024,
                MAX_CAP_BYTES,
            )
        })
        .or_else(|| {
            count(
                "max_response_bytes",
                profile.max_response_bytes,
                1024,
                MAX_CAP_BYTES,
            )
        })
        .or_else(|| {
            count(
                "max_retries",
                u64::from(profile.max_retries),
                0,
                u64::from(MAX_RETRIES),
            )
        })
        .or_else(|| {
            profile
                .max_tokens
                .and_then(|tokens| count("max_tokens", tokens, 1, 100_000_000))
        })
        .or_else(|| {
            profile
                .context_tokens
                .and_then(|tokens| count("context_tokens", tokens, 1, 100_000_000))
        })
        .or_else(|| {
            profile
                .temperature
                .filter(|t| !(t.is_finite() && (0.0..=10.0).contains(t)))
                .map(|t| {
                    (
                        "temperature",
                        format!("= {t} must be a number between 0 and 10"),
                    )
                })
        })
        .or_else(|| {
            profile.price.and_then(|price| {
                [
                    (
                        "input_usd_per_million_tokens",
                        price.input_usd_per_million_tokens,
                    ),
                    (
                        "output_usd_per_million_tokens",
                        price.output_usd_per_million_tokens,
                    ),
                    (
                        "cache_read_usd_per_million_tokens",
                        price.cache_read_usd_per_million_tokens.unwrap_or(0.0),
                    ),
                    (
                        "cache_write_usd_per_million_tokens",
                        price.cache_write_usd_per_million_tokens.unwrap_or(0.0),
                    ),
                ]
                .into_iter()
                .find(|(_, usd)| !(usd.is_finite() && *usd >= 0.0))
                .map(|(key, usd)| (key, format!("= {usd} must be a non-negative price")))
            })
        })
}

/// The 1-based line where `key = …` is set in a profile's text (0 when it is not: a default).
fn key_line(text: &str, key: &str) -> usize {
    text.lines()
        .position(|line| {
            line.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or(0, |index| index + 1)
}

/// The port of a URL (explicit, else 80/443 by scheme), for the `{port}` placeholder.
pub fn url_port(url: &str) -> Option<u16> {
    let parsed = reqwest::Url::parse(url).ok()?;
    parsed.port_or_known_default()
}

/// `runners NAME`: print the TOML of the profile `name` names (as `--runner NAME` reads it),
/// reporting where it comes from.
pub fn show_profile(name: &str) -> Result<(), ProfileError> {
    let location = locate_profile(name)?;
    let text = profile_text(&location.path)?;
    let from = match &location.origin {
        ProfileOrigin::Builtin => "built in".to_string(),
        ProfileOrigin::Folder(_) | ProfileOrigin::File => location.path.display().to_string(),
    };
    let name = name.to_string();
    crate::values::reporter::report(crate::values::reporter::Event::RunnerProfileShown {
        name,
        from,
    });
    crate::values::reporter::result(&text);
    Ok(())
}

/// `runners`: print every profile `--runner NAME` can name, as JSON or an aligned table
/// followed by the lookup rule.
pub fn print_profiles(json: bool) {
    let listed = list_profiles();
    if json {
        let json = serde_json::to_string_pretty(&listed).expect("listing serializes");
        crate::values::reporter::result_line(&json);
        return;
    }
    crate::values::reporter::result(&render_profiles(&listed));
    crate::values::reporter::report(crate::values::reporter::Event::RunnerLookupRule);
}

/// The listing as a table: name, kind, model (or why it does not load) and where it comes from.
pub fn render_profiles(listed: &[ListedProfile]) -> String {
    let mut out = String::from("name\tkind\tmodel\tfrom\n");
    for profile in listed {
        let from = match (&profile.origin, profile.active) {
            (ProfileOrigin::Builtin, true) => "built-in".to_string(),
            (ProfileOrigin::Builtin, false) => {
                "built-in (overridden by the folder above)".to_string()
            }
            (_, true) if builtin_profile(&profile.name).is_some() => {
                format!("{} (overrides the built-in)", profile.path.display())
            }
            (_, true) => profile.path.display().to_string(),
            (_, false) => format!("{} (shadowed by an earlier folder)", profile.path.display()),
        };
        let kind = profile.kind.as_deref().unwrap_or("invalid");
        let model = profile
            .model
            .clone()
            .or_else(|| profile.error.clone())
            .unwrap_or_default();
        out.push_str(&format!("{}\t{kind}\t{model}\t{from}\n", profile.name));
    }
    aligned(&out)
}

/// Tab-separated rows as columns padded to their widest cell (two spaces between; the last
/// cell of a row and trailing blanks not padded), one line each.
fn aligned(text: &str) -> String {
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|line| line.split('\t').collect())
        .collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_aligned_in_columns_without_trailing_blanks() {
        let text = aligned("name\tkind\tfrom\nlocal\topenai-chat\tbuilt-in\nx\t\t\n");
        assert_eq!(
            text,
            "name   kind         from\nlocal  openai-chat  built-in\nx\n"
        );
    }

    #[test]
    fn the_kind_list_names_every_kind_once_as_profiles_spell_it() {
        let mut names = std::collections::HashSet::new();
        for &kind in RunnerKind::ALL {
            let spelled = serde_json::to_value(kind).unwrap();
            assert_eq!(spelled.as_str(), Some(kind.name()), "{kind:?}");
            assert!(names.insert(kind.name()), "{} twice", kind.name());
            assert_eq!(RunnerKind::from_name(kind.name()), Some(kind));
            let profile: RunnerProfile = toml::from_str(&format!(
                "kind = \"{}\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\ncommand = [\"agent\"]\n",
                kind.name()
            ))
            .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
            let capabilities = kind.capabilities(&profile);
            // The capability rule is the kind's: agent CLIs run commands and are observed,
            // model APIs have no shell.
            assert_eq!(
                capabilities.can_run_commands,
                kind.is_agent_cli(),
                "{kind:?}"
            );
            assert_eq!(
                crate::record::RunnerCapabilities::of_recorded_names(kind.name(), "native")
                    .can_run_commands,
                kind.is_agent_cli()
            );
        }
        assert_eq!(RunnerKind::from_name("no-such-kind"), None);
        assert!(!RunnerKind::OpenaiChat.is_agent_cli());
        assert!(!RunnerKind::AnthropicMessages.is_agent_cli());
        assert!(RunnerKind::QwenCode.is_agent_cli());
    }

    #[test]
    fn what_a_profile_must_hold_is_the_kinds_to_say() {
        for &kind in RunnerKind::ALL {
            let needs = kind.spec().profile_needs();
            // Only model APIs judge; only `command` takes an argv template; only openai-chat
            // has no default server.
            assert_eq!(kind.spec().can_judge(), !kind.is_agent_cli(), "{kind:?}");
            assert_eq!(
                needs.command_template,
                kind == RunnerKind::Command,
                "{kind:?}"
            );
            assert_eq!(needs.base_url, kind == RunnerKind::OpenaiChat, "{kind:?}");
            let without_url = format!(
                "kind = \"{}\"\nmodel = \"m\"\ncommand = [\"a\"]\n",
                kind.name()
            );
            match load_text(&without_url) {
                Ok(_) => assert!(!needs.base_url && needs.command_template, "{kind:?}"),
                Err(error) if needs.base_url => {
                    assert!(error.to_string().contains("base_url"), "{kind:?}: {error}")
                }
                Err(error) => assert!(
                    error.to_string().contains("only for kind `command`"),
                    "{kind:?}: {error}"
                ),
            }
        }
    }

    fn load_text(text: &str) -> Result<LoadedProfile, ProfileError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, text).unwrap();
        load_profile(&path)
    }

    #[test]
    fn loads_full_profile() {
        let loaded = load_text(
            "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \"KEY\"\ntemperature = 0.7\nmax_tokens = 64\ntimeout_s = 10\nconcurrency = 2\nskill_mode = \"tools\"\n[server]\ncommand = [\"serve\", \"{port}\"]\nready_url = \"http://127.0.0.1:9/v1/models\"\n",
        )
        .unwrap();
        assert_eq!(loaded.name, "p");
        assert_eq!(loaded.profile.skill_mode, SkillMode::Tools);
        assert_eq!(loaded.profile.server.unwrap().startup_timeout_s, 120.0);
    }

    #[test]
    fn errors_name_file_and_line() {
        let error = load_text(
            "kind = \"openai-chat\"\nbase_url = \"http://x/v1\"\nmodel = \"m\"\ntemprature = 1\n",
        )
        .unwrap_err();
        let text = error.to_string();
        assert!(text.contains("p.toml:4:"), "{text}");
        assert!(text.contains("temprature"), "{text}");
        let error =
            load_text("kind = \"nope\"\nbase_url = \"http://x\"\nmodel = \"m\"\n").unwrap_err();
        assert!(error.to_string().contains("p.toml:1:"), "{error}");
        let error = load_text("kind = \"openai-chat\"\nbase_url = \"ftp://x\"\nmodel = \"m\"\n")
            .unwrap_err();
        assert!(error.to_string().contains("base_url"), "{error}");
    }

    #[test]
    fn agent_cli_profiles_load_and_are_checked() {
        let loaded = load_text(
            "kind = \"claude-code\"\nmodel = \"claude-sonnet-4-5\"\npass_env = [\"ANTHROPIC_API_KEY\"]\nextra_args = [\"--max-turns\", \"5\"]\n[env]\nAPI_TIMEOUT_MS = \"60000\"\n",
        )
        .unwrap();
        assert_eq!(loaded.profile.kind, RunnerKind::ClaudeCode);
        assert!(loaded.profile.kind.is_agent_cli());
        assert_eq!(loaded.profile.base_url, "");
        let loaded = load_text(
            "kind = \"command\"\nmodel = \"m\"\ncommand = [\"agent\", \"{prompt}\"]\noutput_format = \"claude-stream-json\"\n",
        )
        .unwrap();
        assert_eq!(
            loaded.profile.output_format,
            Some(crate::features::runner::parsers::OutputFormat::ClaudeStreamJson)
        );
        let error = load_text("kind = \"command\"\nmodel = \"m\"\n").unwrap_err();
        assert!(error.to_string().contains("argv template"), "{error}");
        let error = load_text("kind = \"codex\"\nmodel = \"m\"\nprogramm = \"x\"\n").unwrap_err();
        assert!(error.to_string().contains("p.toml:3:"), "{error}");
        let error =
            load_text("kind = \"gemini\"\nmodel = \"m\"\noutput_format = \"yaml\"\n").unwrap_err();
        assert!(error.to_string().contains("p.toml:3:"), "{error}");
    }

    #[test]
    fn anthropic_messages_profiles_load_without_base_url() {
        let loaded = load_text(
            "kind = \"anthropic-messages\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"ANTHROPIC_API_KEY\"\nmax_tokens = 1024\n",
        )
        .unwrap();
        assert_eq!(loaded.profile.kind, RunnerKind::AnthropicMessages);
        assert_eq!(loaded.profile.base_url, "");
        let error = load_text(
            "kind = \"anthropic-messages\"\nbase_url = \"api.anthropic.com\"\nmodel = \"m\"\n",
        )
        .unwrap_err();
        assert!(error.to_string().contains("base_url"), "{error}");
    }

    #[test]
    fn shipped_profiles_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("runners");
        let mut kinds = std::collections::HashSet::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let loaded = load_profile(&path)
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
                kinds.insert(loaded.profile.kind.name());
            }
        }
        for kind in [
            "claude-code",
            "codex",
            "gemini",
            "opencode",
            "cursor",
            "goose",
            "copilot",
            "qwen-code",
            "command",
            "anthropic-messages",
        ] {
            assert!(kinds.contains(kind), "no profile for {kind} in runners/");
        }
    }

    #[test]
    fn every_shipped_profile_is_built_in_and_loads_without_a_folder() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("runners");
        let mut shipped: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "toml"))
            .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        shipped.sort();
        let built_in: Vec<String> = BUILTIN_PROFILES
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
        assert_eq!(built_in, shipped);
        for (name, text) in BUILTIN_PROFILES {
            assert_eq!(
                std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap(),
                *text
            );
            let loaded = load_profile(&builtin_path(name))
                .unwrap_or_else(|error| panic!("built-in {name}: {error}"));
            assert_eq!(loaded.name, *name);
            assert!(loaded.is_builtin());
            assert_eq!(
                loaded.recorded_path(),
                PathBuf::from(format!("builtin:{name}"))
            );
            assert_eq!(loaded.profile_dir(), None);
            assert_eq!(
                loaded.digest().unwrap(),
                crate::features::asset::fingerprint::sha256_digest(text.as_bytes())
            );
        }
        // The local model's server is the binary itself, not a script beside the profile.
        let local = load_profile(&builtin_path("local")).unwrap();
        assert_eq!(
            local.profile.server.unwrap().command[..3],
            ["{skill_lift}", "serve", "local-model"]
        );
    }

    #[test]
    fn built_in_profiles_refuse_profile_dir_and_unknown_names() {
        let error = parse_profile(
            &builtin_path("x"),
            "kind = \"openai-chat\"\nbase_url = \"http://x/v1\"\nmodel = \"m\"\n[server]\ncommand = [\"{profile_dir}/serve\"]\nready_url = \"http://x\"\n",
        )
        .unwrap_err();
        assert!(error.to_string().contains("{skill_lift}"), "{error}");
        let error = load_profile(&builtin_path("no-such-profile")).unwrap_err();
        assert!(error.to_string().contains("built-in profiles"), "{error}");
        // A file profile keeps its folder for {profile_dir}.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(
            &path,
            "kind = \"openai-chat\"\nbase_url = \"http://x/v1\"\nmodel = \"m\"\n",
        )
        .unwrap();
        let loaded = load_profile(&path).unwrap();
        assert!(!loaded.is_builtin());
        assert_eq!(
            loaded.profile_dir().unwrap(),
            dir.path().canonicalize().unwrap()
        );
        let location = locate_profile(path.to_str().unwrap()).unwrap();
        assert_eq!(location.origin, ProfileOrigin::File);
        // A folder is named as one, not as a profile that was not found.
        let error = locate_profile(dir.path().to_str().unwrap()).unwrap_err();
        assert!(matches!(error, ProfileError::NotAFile { .. }), "{error}");
    }

    #[test]
    fn numeric_settings_are_bounded_with_file_line_and_key() {
        let base = "kind = \"openai-chat\"\nbase_url = \"http://x/v1\"\nmodel = \"m\"\n";
        for (setting, key) in [
            ("timeout_s = 1.5e19", "timeout_s"),
            ("timeout_s = 1e30", "timeout_s"),
            ("timeout_s = 0", "timeout_s"),
            ("retry_base_delay_s = inf", "retry_base_delay_s"),
            ("retry_base_delay_s = nan", "retry_base_delay_s"),
            ("grace_s = 1e300", "grace_s"),
            ("linger_s = -1", "linger_s"),
            ("concurrency = 18446744073709551615", "concurrency"),
            ("concurrency = 0", "concurrency"),
            ("max_turns = 0", "max_turns"),
            ("max_retries = 4000000000", "max_retries"),
            ("temperature = inf", "temperature"),
        ] {
            let error = load_text(&format!("{base}{setting}\n")).unwrap_err();
            let text = error.to_string();
            assert!(text.contains("p.toml:4:"), "{setting}: {text}");
            assert!(text.contains(key), "{setting}: {text}");
        }
        let error = load_text(&format!(
            "{base}[server]\ncommand = [\"x\"]\nready_url = \"http://x\"\nstartup_timeout_s = 1e30\n"
        ))
        .unwrap_err();
        assert!(error.to_string().contains("startup_timeout_s"), "{error}");
        load_text(&format!("{base}timeout_s = 604800\nconcurrency = 1024\n")).unwrap();
    }

    #[test]
    fn a_seed_is_refused_where_no_request_can_carry_it() {
        let ok = "kind = \"openai-chat\"\nbase_url = \"http://x/v1\"\nmodel = \"m\"\nseed = 3\n";
        assert_eq!(load_text(ok).unwrap().profile.seed, Some(3));
        for (kind, why) in [
            ("anthropic-messages", "has no sampling seed"),
            ("claude-code", "samples on its own"),
        ] {
            let text = format!("kind = \"{kind}\"\nmodel = \"m\"\nseed = 3\n");
            let error = load_text(&text).unwrap_err().to_string();
            assert!(error.contains("p.toml:3:"), "{kind}: {error}");
            assert!(error.contains(why), "{kind}: {error}");
        }
    }

    #[test]
    fn ports() {
        assert_eq!(url_port("http://127.0.0.1:8765/v1"), Some(8765));
        assert_eq!(url_port("https://api.openai.com/v1"), Some(443));
    }
}
