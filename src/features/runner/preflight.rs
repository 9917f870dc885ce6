//! Pre-flight: before a run spends anything, one cheap check per runner and judge profile
//! proves the program exists and the API answers, so a dead judge or a missing agent program is
//! found in seconds, not after every trial ran.
//!
//! - Agent CLIs: the program is found (in the `PATH` the CLI will get) and is executable; for
//!   the known CLI kinds it also answers `--version` (run in a fresh temporary HOME, under the
//!   same containment as an attempt) within [`VERSION_TIMEOUT`].
//! - HTTP profiles (`openai-chat`, `anthropic-messages`): one `GET {base_url}/models` with the
//!   profile's credentials within [`HTTP_TIMEOUT`]. A connection failure or HTTP 401/403 fails
//!   the check; any other answer (a 404 from a server without `/models` included) proves the
//!   server is there.
//!
//! - Agent CLIs of a known kind, before the first trial ([`probe_agent`]): one tiny real
//!   request through the CLI itself (the prompt [`PROBE_PROMPT`] in an empty workspace and a
//!   fresh HOME, under the same isolation, parser and outage watch as a trial), so refused or
//!   missing credentials, a dead endpoint or a spent quota stop the run before it spends,
//!   with the CLI's own words and the variable the CLI reads its key from.
//!
//! Mechanics only: the CLI decides what a failure means (exit 3, `--no-preflight` skips it).

use std::path::PathBuf;
use std::time::Duration;

use super::{LoadedProfile, RunnerKind};
use crate::values::trajectory::InfrastructureCause;

/// Longest wait for `PROGRAM --version`.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait for the HTTP check.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest wait for the agent probe (less when the profile's `timeout_s` is shorter).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(120);
/// What the agent probe asks.
pub const PROBE_PROMPT: &str = "Reply with the single word OK.";

/// A failed pre-flight check.
#[derive(Debug, thiserror::Error)]
#[error("pre-flight check of `{profile}` ({path}) failed: {cause_text}: {message}")]
pub struct PreflightError {
    /// The profile's name.
    pub profile: String,
    /// The profile file.
    pub path: PathBuf,
    /// What kind of failure.
    pub cause: InfrastructureCause,
    /// `cause` in words.
    pub cause_text: &'static str,
    /// What happened.
    pub message: String,
}

impl PreflightError {
    /// The failure of `loaded`'s check with `cause`, `message` saying what happened.
    fn of(loaded: &LoadedProfile, cause: InfrastructureCause, message: String) -> Self {
        PreflightError {
            profile: loaded.name.clone(),
            path: loaded.path.clone(),
            cause,
            cause_text: cause_text(cause),
            message,
        }
    }
}

/// Why `program --version` gave no version.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VersionError {
    /// The fresh HOME cannot be created.
    #[error("temporary HOME: {0}")]
    TempHome(std::io::Error),
    /// The program cannot be run.
    #[error(transparent)]
    Process(#[from] crate::features::process::ProcessError),
    /// No answer within the time allowed ([`VERSION_TIMEOUT`] for the pre-flight).
    #[error("`{} --version` did not answer within {seconds} s", program.display())]
    Timeout {
        /// The program.
        program: PathBuf,
        /// The timeout, whole seconds.
        seconds: u64,
    },
    /// A non-zero exit or a signal.
    #[error(
        "`{} --version` failed (exit {exit_code:?}, signal {signal:?}): {last_line}",
        program.display()
    )]
    Failed {
        /// The program.
        program: PathBuf,
        /// Its exit code, if it exited.
        exit_code: Option<i32>,
        /// The signal that ended it, if one did.
        signal: Option<i32>,
        /// The last line of its stderr, trimmed.
        last_line: String,
    },
}

/// `cause` in the words of a pre-flight failure.
fn cause_text(cause: InfrastructureCause) -> &'static str {
    match cause {
        InfrastructureCause::ApiUnreachable => "API unreachable",
        InfrastructureCause::AuthFailure => "API authentication failed",
        InfrastructureCause::RateLimited => "API rate limit",
        InfrastructureCause::QuotaExhausted => "API quota exhausted",
        InfrastructureCause::Overloaded => "API overloaded",
        InfrastructureCause::ServerError => "API server error",
        InfrastructureCause::Timeout => "no answer in time",
        InfrastructureCause::AgentError => "the agent failed",
        InfrastructureCause::ResponseTooLarge => "response body too large",
        InfrastructureCause::Runner | InfrastructureCause::Grader => "program unavailable",
    }
}

/// Where the agent CLI of `loaded` reads its credential, for a failure's message: the
/// profile's `api_key_env` and whether it is set, and the variables the CLI itself reads.
fn credential_hint(loaded: &LoadedProfile, cli: &dyn super::agent_cli::AgentCli) -> String {
    let profile = &loaded.profile;
    let read = cli.key_variables();
    let reads = read.map(|names| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(" or ")
    });
    match (&profile.api_key_env, reads) {
        (Some(name), Some(reads)) => format!(
            "{} reads its key from {reads}; the profile hands over `{name}` ({})",
            cli.name(),
            if std::env::var_os(name).is_some() {
                "set"
            } else {
                "not set"
            }
        ),
        (Some(name), None) => format!(
            "the profile hands the key in `{name}` ({}) to {}",
            if std::env::var_os(name).is_some() {
                "set"
            } else {
                "not set"
            },
            cli.name()
        ),
        (None, Some(reads)) => format!(
            "{} reads its key from {reads}; the profile names no `api_key_env` (set `api_key_env = \"{}\"`)",
            cli.name(),
            read.and_then(|names| names.first()).unwrap_or(&"")
        ),
        (None, None) => format!(
            "the profile names no `api_key_env`; {} gets only the variables in `pass_env`",
            cli.name()
        ),
    }
}

/// Send one tiny real request through the agent CLI of `loaded` ([`PROBE_PROMPT`], no skills,
/// a fresh workspace and HOME) and read its answer with the trial's own parser and outage
/// watch. `Ok` with a one-line description when the agent answered (or the profile is not a
/// known agent CLI: `command` runs whatever its template says and is not probed); an error
/// with the CLI's own words, the cause, and where the CLI reads its key otherwise.
pub async fn probe_agent(
    loaded: &LoadedProfile,
    api_key: Option<&str>,
    model: &str,
) -> Result<String, PreflightError> {
    let profile = &loaded.profile;
    let Some(cli) = profile.kind.spec().agent_cli() else {
        return Ok("not an agent CLI".to_string());
    };
    if cli.takes_command_template() {
        return Ok("a `command` template is not probed".to_string());
    }
    let fail =
        |cause: InfrastructureCause, message: String| PreflightError::of(loaded, cause, message);
    let runner =
        super::agent_cli::AgentCliRunner::new(profile.clone(), api_key.map(str::to_string))
            .map_err(|error| fail(InfrastructureCause::Runner, error.to_string()))?;
    let root = tempfile::tempdir().map_err(|error| {
        fail(
            InfrastructureCause::Runner,
            format!("temporary folder: {error}"),
        )
    })?;
    let workspace = root.path().join("workspace");
    let home = root.path().join("home");
    for dir in [&workspace, &home] {
        std::fs::create_dir_all(dir).map_err(|error| {
            fail(
                InfrastructureCause::Runner,
                format!("{}: {error}", dir.display()),
            )
        })?;
    }
    let timeout = PROBE_TIMEOUT.min(Duration::from_secs_f64(profile.timeout_s.max(1.0)));
    let started = std::time::Instant::now();
    let input = super::AttemptInput {
        prompt: PROBE_PROMPT,
        workspace: &workspace,
        home: &home,
        skills: &[],
        model,
        timeout,
        // An agent CLI takes no sampling seed; the probe needs none.
        trial_seed: super::TrialSeed::of_trial(0, "preflight", "probe", 1),
    };
    use super::Runner;
    let trajectory = runner
        .run_attempt(input)
        .await
        .map_err(|error| fail(InfrastructureCause::Runner, error.message))?;
    let hint = || credential_hint(loaded, cli);
    if let Some(failure) = &trajectory.infrastructure_error {
        let message = format!(
            "`{}` answered a one-line request with: {} ({})",
            cli.name(),
            crate::disk::redact::redact_text(&failure.message),
            hint()
        );
        return Err(fail(failure.cause, message));
    }
    if let crate::values::trajectory::TrajectoryStatus::Incomplete { reason } = &trajectory.status {
        let message = format!(
            "`{}` did not finish a one-line request: {} ({})",
            cli.name(),
            crate::disk::redact::redact_text(reason),
            hint()
        );
        return Err(fail(InfrastructureCause::Runner, message));
    }
    Ok(format!(
        "{} answered a one-line request in {:.1} s",
        cli.name(),
        started.elapsed().as_secs_f64()
    ))
}

/// Check `loaded` (runner or judge); `api_key` is the value of its `api_key_env`. Returns a
/// one-line description of what answered.
pub async fn check(
    loaded: &LoadedProfile,
    api_key: Option<&str>,
) -> Result<String, PreflightError> {
    let fail =
        |cause: InfrastructureCause, message: String| PreflightError::of(loaded, cause, message);
    let profile = &loaded.profile;
    if let Some(cli) = profile.kind.spec().agent_cli() {
        let program = cli
            .argv_template(profile)
            .into_iter()
            .next()
            .unwrap_or_default();
        let path_variable = profile
            .env
            .get("PATH")
            .cloned()
            .or_else(|| std::env::var("PATH").ok());
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let Some(resolved) = crate::features::contain::resolve_program(
            std::path::Path::new(&program),
            path_variable.as_deref(),
            &cwd,
        ) else {
            return Err(fail(
                InfrastructureCause::Runner,
                format!(
                    "program `{program}` not found or not executable (PATH searched: {}); install the agent CLI (scripts/install-agent-clis) or set `program` in the profile",
                    path_variable.as_deref().unwrap_or("")
                ),
            ));
        };
        if !cli.version_checked() {
            return Ok(format!("{} exists", resolved.display()));
        }
        return program_version(&resolved, path_variable.as_deref(), VERSION_TIMEOUT)
            .await
            .map(|line| format!("{}: {line}", resolved.display()))
            .map_err(|error| fail(InfrastructureCause::Runner, error.to_string()));
    }
    let url = models_url(profile);
    let client = reqwest::Client::builder()
        .timeout(HTTP_TIMEOUT)
        .build()
        .map_err(|error| fail(InfrastructureCause::Runner, error.to_string()))?;
    match models_request(&client, profile, &url, api_key).send().await {
        Err(error) => {
            let mut message = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(inner) = source {
                message.push_str(&format!(": {inner}"));
                source = inner.source();
            }
            Err(fail(
                InfrastructureCause::ApiUnreachable,
                format!("GET {url}: {message}"),
            ))
        }
        Ok(response) => {
            let status = response.status();
            if matches!(status.as_u16(), 401 | 403) {
                // At most 64 KiB of the body is read, and it is redacted whole before it is
                // cut: a key the server echoes is never split below its recognizable form.
                let mut response = response;
                let mut bytes = Vec::new();
                while bytes.len() < crate::features::runner::http::MAX_ERROR_BODY_BYTES {
                    match response.chunk().await {
                        Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                        _ => break,
                    }
                }
                bytes.truncate(crate::features::runner::http::MAX_ERROR_BODY_BYTES);
                let body = String::from_utf8_lossy(&bytes);
                let body = match api_key {
                    Some(key) if key.len() >= 4 => body.replace(key, "[redacted]"),
                    _ => body.into_owned(),
                };
                let body: String = crate::disk::redact::redact_text(&body)
                    .chars()
                    .take(300)
                    .collect();
                return Err(fail(
                    InfrastructureCause::AuthFailure,
                    format!("GET {url}: HTTP {status}: {body}"),
                ));
            }
            Ok(format!("GET {url}: HTTP {}", status.as_u16()))
        }
    }
}

/// `GET {base_url}/models` of an HTTP profile (the Anthropic default base URL when an
/// `anthropic-messages` profile names none).
fn models_url(profile: &super::RunnerProfile) -> String {
    let base = if profile.base_url.is_empty() && profile.kind == RunnerKind::AnthropicMessages {
        super::anthropic_messages::ANTHROPIC_DEFAULT_BASE_URL.to_string()
    } else {
        profile.base_url.trim_end_matches('/').to_string()
    };
    format!("{base}/models")
}

/// The `GET` of `url` with the profile's credential headers (Anthropic: `x-api-key` and
/// `anthropic-version`; otherwise a bearer token).
fn models_request(
    client: &reqwest::Client,
    profile: &super::RunnerProfile,
    url: &str,
    api_key: Option<&str>,
) -> reqwest::RequestBuilder {
    let request = client.get(url);
    match api_key {
        Some(key) if profile.kind == RunnerKind::AnthropicMessages => {
            request.header("x-api-key", key).header(
                "anthropic-version",
                super::anthropic_messages::ANTHROPIC_VERSION,
            )
        }
        Some(key) => request.bearer_auth(key),
        None => request,
    }
}

/// The models an HTTP runner's server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelListing {
    /// The URL asked.
    pub url: String,
    /// The `id` of each entry of `data` (OpenAI `GET /v1/models`, Anthropic `GET /v1/models`,
    /// vLLM, llama.cpp and Ollama's OpenAI-compatible endpoint share the shape
    /// `{"data": [{"id": …}, …]}`), in the server's order.
    pub ids: Vec<String>,
}

/// Why a server's model list could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelListError {
    /// The profile is an agent CLI: no `GET /models` is asked of it.
    #[error("`{0}` is an agent CLI profile; only HTTP profiles are asked `GET /models`")]
    AgentCli(String),
    /// No answer (connection refused, timeout, TLS, DNS).
    #[error("GET {url}: {message}")]
    Unreachable {
        /// The URL.
        url: String,
        /// What failed, with its causes.
        message: String,
    },
    /// An answer other than 2xx.
    #[error("GET {url}: HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// A 2xx whose body is not `{"data": [{"id": …}]}`.
    #[error("GET {url}: not a model list: {message}")]
    Shape {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
}

/// `GET {base_url}/models` of the HTTP profile `loaded` with its credentials (`api_key`, the
/// value of its `api_key_env`), within [`HTTP_TIMEOUT`]: the model ids the server lists
/// (Anthropic's list is asked with `limit=1000`, its largest page).
pub async fn list_models(
    loaded: &LoadedProfile,
    api_key: Option<&str>,
) -> Result<ModelListing, ModelListError> {
    let profile = &loaded.profile;
    if profile.kind.spec().agent_cli().is_some() {
        return Err(ModelListError::AgentCli(loaded.name.clone()));
    }
    let url = models_url(profile);
    let asked = if profile.kind == RunnerKind::AnthropicMessages {
        format!("{url}?limit=1000")
    } else {
        url.clone()
    };
    let unreachable = |message: String| ModelListError::Unreachable {
        url: url.clone(),
        message,
    };
    let client = reqwest::Client::builder()
        .timeout(HTTP_TIMEOUT)
        .build()
        .map_err(|error| unreachable(error.to_string()))?;
    let response = models_request(&client, profile, &asked, api_key)
        .send()
        .await
        .map_err(|error| {
            let mut message = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(inner) = source {
                message.push_str(&format!(": {inner}"));
                source = inner.source();
            }
            unreachable(message)
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(ModelListError::Status {
            url,
            status: status.as_u16(),
        });
    }
    let shape = |message: String| ModelListError::Shape {
        url: url.clone(),
        message,
    };
    let body: serde_json::Value = response
        .json()
        .await
        .map_err(|error| shape(error.to_string()))?;
    let data = body["data"]
        .as_array()
        .ok_or_else(|| shape("no `data` array".to_string()))?;
    let ids = data
        .iter()
        .filter_map(|entry| entry["id"].as_str())
        .map(str::to_string)
        .collect();
    Ok(ModelListing { url, ids })
}

/// Run `program --version` in a fresh HOME (with `path_variable` as its `PATH`), waiting at most
/// `timeout`; its first non-empty output line, trimmed, or why it failed.
pub(crate) async fn program_version(
    program: &std::path::Path,
    path_variable: Option<&str>,
    timeout: Duration,
) -> Result<String, VersionError> {
    let home = tempfile::tempdir().map_err(VersionError::TempHome)?;
    let home_path = home.path().display().to_string();
    let spec = crate::features::process::ProcessSpec {
        program: program.to_path_buf(),
        args: vec!["--version".to_string()],
        cwd: home.path().to_path_buf(),
        env: vec![
            ("PATH".to_string(), path_variable.unwrap_or("").to_string()),
            ("HOME".to_string(), home_path.clone()),
            (
                "XDG_CONFIG_HOME".to_string(),
                format!("{home_path}/.config"),
            ),
            ("XDG_CACHE_HOME".to_string(), format!("{home_path}/.cache")),
            (
                "XDG_DATA_HOME".to_string(),
                format!("{home_path}/.local/share"),
            ),
            (
                "TMPDIR".to_string(),
                std::env::temp_dir().display().to_string(),
            ),
            ("NO_COLOR".to_string(), "1".to_string()),
            ("TERM".to_string(), "dumb".to_string()),
        ],
    };
    let limits = crate::features::process::ProcessLimits {
        timeout,
        grace: Duration::from_secs(1),
        linger: Duration::from_secs(1),
        max_stdout_bytes: 64 * 1024,
        max_stderr_bytes: 4 * 1024,
    };
    let outcome = crate::features::process::run_process(&spec, limits, |_| false).await?;
    let first_line = outcome
        .stdout_lines
        .iter()
        .find(|line| !line.trim().is_empty())
        .cloned()
        .unwrap_or_default();
    match (outcome.timed_out, outcome.exit_code) {
        (true, _) => Err(VersionError::Timeout {
            program: program.to_path_buf(),
            seconds: timeout.as_secs(),
        }),
        (false, Some(0)) => Ok(first_line.trim().to_string()),
        _ => Err(VersionError::Failed {
            program: program.to_path_buf(),
            exit_code: outcome.exit_code,
            signal: outcome.signal,
            last_line: outcome
                .stderr_tail
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_string(),
        }),
    }
}
