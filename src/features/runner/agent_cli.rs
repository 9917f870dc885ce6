//! Agent CLI runners: Claude Code, Codex, Gemini CLI, OpenCode, Cursor, Goose, GitHub Copilot
//! CLI, Qwen Code and the generic `command` template. Each kind knows its headless argv, its project skills folder, its
//! config-dir variables and how it takes a model and a base URL; the attempt itself is one child
//! process (`crate::features::process`) whose stdout is parsed by the kind's parser (`super::parsers`).
//!
//! Isolation: the child's environment is built from nothing. HOME is the trial's fresh home, the
//! XDG folders and every agent's config-dir variable point inside it (so no user-level skill of
//! the machine can reach either arm), and only `PATH`, the profile's `pass_env` names and its
//! fixed `env` are added. Credential values are never written to the trajectory: they are
//! redacted from the recorded stderr tail.

mod claude_code;
mod codex;
mod command;
mod copilot;
mod cursor;
mod gemini;
mod goose;
mod opencode;
mod qwen_code;

pub(crate) use claude_code::ClaudeCode;
pub(crate) use codex::Codex;
pub(crate) use command::Command;
pub(crate) use copilot::Copilot;
pub(crate) use cursor::Cursor;
pub(crate) use gemini::Gemini;
pub(crate) use goose::Goose;
pub(crate) use opencode::Opencode;
pub(crate) use qwen_code::QwenCode;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;

use super::endpoint_probe::{ProbeRequest, ProbeWire, probe};
use super::kind::{BuildError, KindSpec, ProfileNeeds};
use super::parsers::{self, SkillContext, StreamParser};
use super::{AttemptError, AttemptInput, Runner, RunnerKind, RunnerProfile};
use crate::features::process::{ProcessLimits, ProcessOutcome, ProcessSpec, run_watched_process};
use crate::record::{RunnerCapabilities, SkillDelivery};
use crate::values::trajectory::{
    InfrastructureCause, OutputCut, ProcessExit, Trajectory, TrajectoryStatus,
};

/// The variable holding a placeholder key for local servers when the profile names none.
pub(crate) const DUMMY_KEY_VARIABLE: &str = "SKILL_LIFT_DUMMY_KEY";

/// What a kind's environment hook can read: the profile, its base URL without a trailing `/`,
/// the value of its `api_key_env` (when set) and the requested model.
pub struct EnvContext<'a> {
    /// The runner profile.
    pub profile: &'a RunnerProfile,
    /// `base_url` without a trailing `/` (empty when the profile has none).
    pub base: &'a str,
    /// The value of the profile's `api_key_env`, when it names one that is set.
    pub api_key: Option<&'a str>,
    /// The requested model.
    pub model: &'a str,
}

/// One agent CLI kind: everything that differs between CLIs (program, headless argv, skills
/// folder, stdout format, config folders and variables). The process handling, isolation,
/// parsing pass, activation detection and outcome classification are shared
/// ([`AgentCliRunner`]). A new agent CLI is one file implementing this trait plus one line in
/// the kind list (`crate::features::runner::profile`); everything else (the kind's name, capabilities,
/// building, pre-flight) follows from it.
pub trait AgentCli: Sync + 'static {
    /// The kind's name as written in profiles (`claude-code`).
    fn name(&self) -> &'static str;

    /// The usual command name (`claude`); empty for `command`, whose argv is the profile's.
    /// The kind's name unless the CLI says otherwise.
    fn program(&self) -> &'static str {
        self.name()
    }

    /// The project skills folder, relative to the workspace.
    fn skills_dir(&self) -> &'static str {
        ".agents/skills"
    }

    /// The parser of the stdout the kind's argv asks for.
    fn parser(&self, profile: &RunnerProfile) -> &'static dyn StreamParser;

    /// The kind's own headless arguments; `{…}` placeholders are filled in later.
    fn args(&self, profile: &RunnerProfile) -> Vec<String>;

    /// The argv template, program first: `program` (or the profile's) and [`AgentCli::args`].
    fn argv_template(&self, profile: &RunnerProfile) -> Vec<String> {
        let program = profile
            .program
            .clone()
            .unwrap_or_else(|| self.program().to_string());
        std::iter::once(program).chain(self.args(profile)).collect()
    }

    /// Whether the prompt goes last, after `--` and the profile's `extra_args`.
    fn prompt_is_last(&self) -> bool {
        false
    }

    /// The model as the CLI expects it.
    fn model_argument(&self, _profile: &RunnerProfile, model: &str) -> String {
        model.to_string()
    }

    /// Arguments after the kind's own, before the profile's `extra_args` (a provider for the
    /// profile's `base_url`).
    fn provider_args(&self, _profile: &RunnerProfile) -> Vec<String> {
        Vec::new()
    }

    /// The kind's config-folder variables and their folders relative to the fresh home (`""`:
    /// the home itself). Every kind's are set in every attempt, whichever kind runs, so no
    /// user-level configuration of the machine reaches either arm.
    fn config_variables(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Folders made in every fresh home (some CLIs refuse a missing config folder).
    fn config_folders(&self) -> &'static [&'static str] {
        &[]
    }

    /// The kind's own variables (telemetry off, base URL, provider key).
    fn environment(&self, _env: &mut Vec<(String, String)>, _context: &EnvContext<'_>) {}

    /// Settings the kind needs in its fresh config folder.
    fn prepare_home(&self, _home: &Path) -> std::io::Result<()> {
        Ok(())
    }

    /// Complete the trajectory from what the CLI left in the home (a usage file).
    fn finish(&self, _home: &Path, _trajectory: &mut Trajectory) {}

    /// An API failure the CLI recorded in its own files under the fresh home (a chat log)
    /// while it retried without a word on stdout or stderr, with no model answer after it:
    /// read when the outage watch stopped the CLI for silence. `None`: none recorded, or the
    /// CLI keeps no such record.
    fn recorded_failure(&self, _home: &Path) -> Option<(InfrastructureCause, String)> {
        None
    }

    /// The wire format of the endpoint the CLI is given through the profile's `base_url`, for
    /// skill-lift's own probe of a silent stall (`super::endpoint_probe`); `None`: only a TCP
    /// connection is tried.
    fn probe_wire(&self) -> Option<ProbeWire> {
        None
    }

    /// The model as the endpoint knows it (the CLI may name it with a provider prefix).
    fn probe_model<'m>(&self, model: &'m str) -> &'m str {
        model
    }

    /// The variables the CLI itself reads its credential from, when the profile's
    /// `api_key_env` is handed over under its own name (Claude Code, Gemini CLI, Cursor): a
    /// profile naming another variable is refused at load, since the CLI would never see the
    /// key. `None`: the kind hands the key over under the name its CLI reads (Codex, OpenCode,
    /// Copilot CLI, Qwen Code map it; Goose and `command` read whatever their configuration
    /// says), so any name works.
    fn key_variables(&self) -> Option<&'static [&'static str]> {
        None
    }

    /// Whether pre-flight runs `PROGRAM --version` (false: only checks that it exists).
    fn version_checked(&self) -> bool {
        true
    }

    /// Whether the profile's `command` (an argv template) is the kind's argv, instead of
    /// `program` and `extra_args`.
    fn takes_command_template(&self) -> bool {
        false
    }
}

impl<T: AgentCli> KindSpec for T {
    fn name(&self) -> &'static str {
        AgentCli::name(self)
    }

    fn agent_cli(&self) -> Option<&dyn AgentCli> {
        Some(self)
    }

    /// Agent CLIs discover skills natively and run commands.
    fn capabilities(&self, profile: &RunnerProfile) -> RunnerCapabilities {
        RunnerCapabilities {
            skills_dir: PathBuf::from(
                profile
                    .skills_dir
                    .as_deref()
                    .unwrap_or(AgentCli::skills_dir(self)),
            ),
            skill_delivery: SkillDelivery::Native,
            activation_observable: true,
            can_run_commands: true,
        }
    }

    /// An agent CLI finds its own endpoint; only a kind whose argv is the profile's needs it.
    fn profile_needs(&self) -> ProfileNeeds {
        ProfileNeeds {
            base_url: false,
            command_template: AgentCli::takes_command_template(self),
        }
    }

    fn recorded_capabilities(&self, _skill_mode: &str) -> RunnerCapabilities {
        RunnerCapabilities {
            skills_dir: PathBuf::from(".agents/skills"),
            skill_delivery: SkillDelivery::Native,
            activation_observable: true,
            can_run_commands: true,
        }
    }

    fn build(
        &self,
        profile: RunnerProfile,
        api_key: Option<String>,
    ) -> Result<Box<dyn Runner>, BuildError> {
        Ok(Box::new(AgentCliRunner::new(profile, api_key)?))
    }
}

/// The project skills folder of a kind.
pub fn default_skills_dir(kind: RunnerKind) -> &'static str {
    kind.spec()
        .agent_cli()
        .map_or(".agents/skills", |cli| cli.skills_dir())
}

/// The runner for every agent CLI kind.
pub struct AgentCliRunner {
    profile: RunnerProfile,
    cli: &'static dyn AgentCli,
    skills_dir: &'static Path,
    format: &'static dyn StreamParser,
    /// Variables taken from skill-lift's environment at start (name, value).
    passed: Vec<(String, String)>,
}

impl AgentCliRunner {
    /// Build the runner; `api_key` is the value of the profile's `api_key_env`, if any.
    pub fn new(profile: RunnerProfile, api_key: Option<String>) -> Result<Self, BuildError> {
        let Some(cli) = profile.kind.spec().agent_cli() else {
            return Err(BuildError::NotAnAgentCli {
                kind: profile.kind.name(),
            });
        };
        let skills_dir: &'static Path = match &profile.skills_dir {
            // One leaked path per runner (one runner per run).
            Some(dir) => Box::leak(PathBuf::from(dir).into_boxed_path()),
            None => Path::new(cli.skills_dir()),
        };
        if skills_dir.is_absolute() || skills_dir.components().any(|c| c.as_os_str() == "..") {
            return Err(BuildError::SkillsDirOutsideWorkspace {
                skills_dir: skills_dir.to_path_buf(),
            });
        }
        let mut passed = Vec::new();
        if let (Some(name), Some(value)) = (&profile.api_key_env, api_key) {
            passed.push((name.clone(), value));
        }
        for name in &profile.pass_env {
            if passed.iter().any(|(n, _)| n == name) {
                continue;
            }
            if let Ok(value) = std::env::var(name) {
                passed.push((name.clone(), value));
            }
        }
        Ok(Self {
            format: cli.parser(&profile),
            cli,
            profile,
            skills_dir,
            passed,
        })
    }

    fn fill(&self, template: &str, input: &AttemptInput<'_>) -> String {
        template
            .replace("{workspace}", &input.workspace.display().to_string())
            .replace("{home}", &input.home.display().to_string())
            .replace("{skills_dir}", &self.skills_dir.display().to_string())
            .replace(
                "{model}",
                &self.cli.model_argument(&self.profile, input.model),
            )
            .replace("{prompt}", input.prompt)
    }

    /// The argv (program first): the kind's template with its placeholders filled, the
    /// provider arguments, the profile's `extra_args`, and the prompt when it goes last.
    fn argv(&self, input: &AttemptInput<'_>) -> (String, Vec<String>) {
        let mut template = self.cli.argv_template(&self.profile).into_iter();
        let program = self.fill(&template.next().unwrap_or_default(), input);
        let mut args: Vec<String> = template.map(|a| self.fill(&a, input)).collect();
        args.extend(self.cli.provider_args(&self.profile));
        args.extend(self.profile.extra_args.iter().map(|a| self.fill(a, input)));
        if self.cli.prompt_is_last() {
            args.push("--".to_string());
            args.push(input.prompt.to_string());
        }
        (program, args)
    }

    /// The child's whole environment.
    fn environment(&self, input: &AttemptInput<'_>) -> Vec<(String, String)> {
        let home = input.home;
        let at = |relative: &str| {
            if relative.is_empty() {
                home.display().to_string()
            } else {
                home.join(relative).display().to_string()
            }
        };
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), home.display().to_string()),
            ("USERPROFILE".into(), home.display().to_string()),
            ("XDG_CONFIG_HOME".into(), at(".config")),
            ("XDG_DATA_HOME".into(), at(".local/share")),
            ("XDG_CACHE_HOME".into(), at(".cache")),
            ("XDG_STATE_HOME".into(), at(".local/state")),
            ("TMPDIR".into(), at("tmp")),
            ("LANG".into(), "C.UTF-8".into()),
            ("TERM".into(), "dumb".into()),
            ("NO_COLOR".into(), "1".into()),
        ];
        // Every agent's config folder inside the fresh home, whichever kind runs.
        for cli in RunnerKind::ALL.iter().filter_map(|k| k.spec().agent_cli()) {
            for (variable, relative) in cli.config_variables() {
                env.push(((*variable).to_string(), at(relative)));
            }
        }
        self.cli.environment(
            &mut env,
            &EnvContext {
                profile: &self.profile,
                base: self.profile.base_url.trim_end_matches('/'),
                api_key: self.api_key(),
                model: input.model,
            },
        );
        for (name, value) in &self.profile.env {
            env.retain(|(n, _)| n != name);
            env.push((name.clone(), self.fill(value, input)));
        }
        for (name, value) in &self.passed {
            env.retain(|(n, _)| n != name);
            env.push((name.clone(), value.clone()));
        }
        env
    }

    /// The value of the profile's `api_key_env`, when it names one that is set.
    fn api_key(&self) -> Option<&str> {
        let name = self.profile.api_key_env.as_deref()?;
        self.passed
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value.as_str())
    }

    /// Replace every passed-through value in `text`.
    fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (_, value) in &self.passed {
            if value.len() >= 4 {
                text = text.replace(value.as_str(), "[redacted]");
            }
        }
        text
    }
}

impl AgentCliRunner {
    /// The cause of a stall the outage watch saw as silence (cause `timeout`), from what is
    /// left to read: the CLI's own record of a failure it retried quietly
    /// ([`AgentCli::recorded_failure`]), else skill-lift's probe of the endpoint the profile
    /// gave the CLI ([`AgentCli::probe_wire`]; a TCP connection for CLIs without one). What was
    /// found is put before the watch's message; an answer naming nothing leaves `timeout`.
    async fn diagnose_silence(
        &self,
        mut stall: super::outage::Stall,
        input: &AttemptInput<'_>,
    ) -> super::outage::Stall {
        if stall.cause != InfrastructureCause::Timeout {
            return stall;
        }
        if let Some((cause, message)) = self.cli.recorded_failure(input.home) {
            stall.cause = cause;
            stall.message = format!("{message}; {}", stall.message);
            return stall;
        }
        if self.profile.base_url.trim().is_empty() {
            return stall;
        }
        match self.cli.probe_wire() {
            Some(wire) => {
                let finding = probe(&ProbeRequest {
                    wire,
                    base_url: &self.profile.base_url,
                    model: self.cli.probe_model(input.model),
                    api_key: self.probe_key(),
                })
                .await;
                if let Some(cause) = finding.cause {
                    stall.cause = cause;
                }
                stall.message = format!("{}; {}", finding.evidence, stall.message);
            }
            None => {
                if let Some(refused) = unreachable_endpoint(&self.profile.base_url).await {
                    stall.cause = InfrastructureCause::ApiUnreachable;
                    stall.message = format!("{refused}; {}", stall.message);
                }
            }
        }
        stall
    }

    /// The key the CLI was given for the profile's `base_url`: the value of `api_key_env`, else
    /// the placeholder the kinds hand a keyless local server.
    fn probe_key(&self) -> Option<&str> {
        self.api_key().or(Some("skill-lift"))
    }
}

/// Make the folders the environment names (some CLIs refuse a missing config dir), plus the
/// settings the running kind needs in its fresh config folder.
fn prepare_home(home: &Path, cli: &dyn AgentCli) -> std::io::Result<()> {
    cli.prepare_home(home)?;
    for relative in [".local/share", ".local/state", ".cache", "tmp"] {
        std::fs::create_dir_all(home.join(relative))?;
    }
    for other in RunnerKind::ALL.iter().filter_map(|k| k.spec().agent_cli()) {
        for relative in other.config_folders() {
            std::fs::create_dir_all(home.join(relative))?;
        }
    }
    Ok(())
}

/// The last stderr line that names an infrastructure failure (an unreachable API, refused
/// credentials, a rate limit, an overload), for CLIs that report fatal errors on stderr.
fn stderr_infrastructure(stderr: &str) -> Option<(InfrastructureCause, String)> {
    stderr.lines().rev().take(200).find_map(|line| {
        InfrastructureCause::from_error_text(line).map(|cause| (cause, line.trim().to_string()))
    })
}

/// Price the trajectory's tokens with the profile's `[price]` when the agent reported tokens
/// but no cost of its own (Codex, Gemini CLI, Qwen Code, Cursor report none); a cost the agent
/// reports itself (Claude Code, OpenCode, Goose) is kept.
fn price_usage(trajectory: &mut Trajectory, price: Option<&crate::record::PriceTable>) {
    if trajectory.usage.cost_usd.is_none()
        && let Some(price) = price
    {
        trajectory.usage.cost_usd = price.cost_usd(&trajectory.usage);
    }
}

/// Why the model server at `base_url` cannot be reached (a TCP connection to its host and
/// port fails or takes over 3 s), or `None` when it can, or when the profile names no server.
async fn unreachable_endpoint(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?.to_string();
    let port = url.port_or_known_default()?;
    let connect = tokio::net::TcpStream::connect((host.as_str(), port));
    match tokio::time::timeout(Duration::from_secs(3), connect).await {
        Ok(Ok(_)) => None,
        Ok(Err(error)) => Some(format!("{host}:{port} is unreachable ({error})")),
        Err(_) => Some(format!(
            "{host}:{port} is unreachable (no connection within 3 s)"
        )),
    }
}

/// Classify a finished process and fold the result into the trajectory.
fn classify(
    trajectory: &mut Trajectory,
    outcome: &ProcessOutcome,
    format: &dyn StreamParser,
    timeout: Duration,
) -> &'static str {
    if trajectory.infrastructure_error.is_some() {
        // The agent itself reported an unreachable API, refused credentials, a rate limit or
        // an overload: unscoreable, whatever the exit code.
        return "infrastructure_error";
    }
    let failed = outcome.timed_out
        || outcome.signal.is_some()
        || outcome.exit_code.is_some_and(|code| code != 0)
        || !(outcome.final_event_seen || format.is_plain_text());
    if failed
        && !outcome.stopped_after_final_event
        && let Some((cause, message)) = stderr_infrastructure(&outcome.stderr_tail)
    {
        trajectory.set_infrastructure_error(cause, &message);
        return "infrastructure_error";
    }
    if outcome.timed_out {
        trajectory.status = TrajectoryStatus::Incomplete {
            reason: format!(
                "the agent did not finish within the trial timeout of {:.0} s",
                timeout.as_secs_f64()
            ),
        };
        return "timeout";
    }
    // The parser may accept another ending than the terminal event (OpenCode builds that emit
    // no `done` end with a final `step_finish`).
    let finished = outcome.final_event_seen
        || format.is_plain_text()
        || matches!(trajectory.status, TrajectoryStatus::Complete);
    if !finished {
        if let TrajectoryStatus::Incomplete { reason } = &mut trajectory.status {
            let ended = match (outcome.exit_code, outcome.signal) {
                (_, Some(signal)) => format!("killed by signal {signal}"),
                (Some(code), None) => format!("exit code {code}"),
                (None, None) => "unknown exit".to_string(),
            };
            *reason = format!("{reason} ({ended})");
        }
        return "infrastructure_error";
    }
    if matches!(trajectory.status, TrajectoryStatus::Incomplete { .. }) {
        // The agent's own terminal event reported an API or infrastructure failure.
        return "infrastructure_error";
    }
    if outcome.stopped_after_final_event {
        return "ok";
    }
    match (outcome.exit_code, outcome.signal) {
        (Some(0), _) => "ok",
        (_, Some(signal)) => {
            trajectory.status = TrajectoryStatus::Incomplete {
                reason: format!("the agent was killed by signal {signal}"),
            };
            "infrastructure_error"
        }
        (Some(code), None) if format.is_plain_text() => {
            trajectory.status = TrajectoryStatus::Incomplete {
                reason: format!("the command exited with code {code}"),
            };
            "agent_error"
        }
        // A terminal event and a non-zero exit: the agent's own error, graded as it stands.
        _ => "agent_error",
    }
}

#[async_trait]
impl Runner for AgentCliRunner {
    fn kind(&self) -> &'static str {
        self.cli.name()
    }

    fn skills_dir(&self) -> &'static Path {
        self.skills_dir
    }

    async fn run_attempt(&self, input: AttemptInput<'_>) -> Result<Trajectory, AttemptError> {
        prepare_home(input.home, self.cli).map_err(|error| AttemptError {
            message: format!("preparing {}: {error}", input.home.display()),
            partial: None,
        })?;
        let (program, args) = self.argv(&input);
        let spec = ProcessSpec {
            program: PathBuf::from(&program),
            args,
            cwd: input.workspace.to_path_buf(),
            env: self.environment(&input),
        };
        let limits = ProcessLimits {
            timeout: input.timeout,
            grace: Duration::from_secs_f64(self.profile.grace_s),
            linger: Duration::from_secs_f64(self.profile.linger_s),
            max_stdout_bytes: usize::try_from(self.profile.max_stdout_bytes).unwrap_or(usize::MAX),
            max_stderr_bytes: usize::try_from(self.profile.max_stderr_bytes).unwrap_or(usize::MAX),
        };
        let format = self.format;
        let mut watch = super::outage::OutageWatch::new(format, self.profile.infra_grace());
        let outcome = run_watched_process(&spec, limits, &mut watch)
            .await
            .map_err(|error| AttemptError {
                message: format!(
                    "{error} (install the agent CLI, e.g. with scripts/install-agent-clis, or set `program` in the profile)"
                ),
                partial: None,
            })?;
        let mut trajectory = format.parse(&outcome.stdout_lines);
        self.cli.finish(input.home, &mut trajectory);
        price_usage(&mut trajectory, self.profile.price.as_ref());
        if outcome.stdout_dropped_bytes > 0 {
            trajectory.truncated.push(OutputCut::Stdout);
        }
        if outcome.stderr_dropped_bytes > 0 {
            trajectory.truncated.push(OutputCut::Stderr);
        }
        parsers::detect(
            &mut trajectory,
            SkillContext {
                workspace: input.workspace,
                skills: input.skills,
            },
        );
        if outcome.stalled && trajectory.infrastructure_error.is_none() {
            // Stopped by the outage watch: the cause it saw, not the one a stream cut short
            // might suggest; silence with nothing reported is looked into.
            let stall = self.diagnose_silence(watch.stall(), &input).await;
            trajectory.set_infrastructure_error(stall.cause, &stall.message);
        }
        let class = classify(&mut trajectory, &outcome, format, input.timeout);
        trajectory.process = Some(ProcessExit {
            exit_code: outcome.exit_code,
            signal: outcome.signal,
            timed_out: outcome.timed_out,
            stopped_after_final_event: outcome.stopped_after_final_event,
            class: class.to_string(),
            wall_s: outcome.wall_s,
            stderr_tail: self.redact(&outcome.stderr_tail),
            stdout_dropped_bytes: outcome.stdout_dropped_bytes,
            stderr_dropped_bytes: outcome.stderr_dropped_bytes,
        });
        if let Some(failure) = trajectory.infrastructure_error.as_mut() {
            failure.message = self.redact(&failure.message);
            if let TrajectoryStatus::Incomplete { reason } = &mut trajectory.status {
                *reason = self.redact(reason);
            }
        }
        Ok(trajectory)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::runner::StagedSkill;

    fn profile(kind: &str, extra: &str) -> RunnerProfile {
        toml::from_str(&format!("kind = \"{kind}\"\nmodel = \"m1\"\n{extra}")).unwrap()
    }

    fn input<'a>(
        workspace: &'a Path,
        home: &'a Path,
        skills: &'a [StagedSkill],
    ) -> AttemptInput<'a> {
        AttemptInput {
            prompt: "Say hi",
            workspace,
            home,
            skills,
            model: "m1",
            timeout: Duration::from_secs(20),
            trial_seed: crate::features::runner::TrialSeed::of_trial(1, "c", "with_skill", 1),
        }
    }

    #[test]
    fn argv_and_environment_per_kind() {
        let workspace = Path::new("/w");
        let home = Path::new("/h");
        let runner = AgentCliRunner::new(
            profile("claude-code", "base_url = \"http://127.0.0.1:9/v1\"\nextra_args = [\"--max-turns\", \"3\"]\npass_env = [\"SKILL_LIFT_TEST_UNSET_VARIABLE\"]\n"),
            None,
        )
        .unwrap();
        let (program, args) = runner.argv(&input(workspace, home, &[]));
        assert_eq!(program, "claude");
        assert_eq!(&args[..2], &["-p", "Say hi"]);
        assert!(args.ends_with(&["--max-turns".to_string(), "3".to_string()]));
        let env = runner.environment(&input(workspace, home, &[]));
        let get = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        assert_eq!(get("HOME").as_deref(), Some("/h"));
        assert_eq!(get("CLAUDE_CONFIG_DIR").as_deref(), Some("/h/.claude"));
        assert_eq!(get("CODEX_HOME").as_deref(), Some("/h/.codex"));
        assert_eq!(get("GEMINI_CLI_HOME").as_deref(), Some("/h"));
        assert_eq!(
            get("OPENCODE_CONFIG_DIR").as_deref(),
            Some("/h/.config/opencode")
        );
        assert_eq!(get("XDG_CONFIG_HOME").as_deref(), Some("/h/.config"));
        assert_eq!(
            get("ANTHROPIC_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(get("SKILL_LIFT_TEST_UNSET_VARIABLE"), None);
        assert_eq!(runner.skills_dir(), Path::new(".claude/skills"));

        let runner = AgentCliRunner::new(profile("codex", ""), Some("sk-secret".into())).unwrap();
        let (program, args) = runner.argv(&input(workspace, home, &[]));
        assert_eq!(program, "codex");
        assert_eq!(args.last().map(String::as_str), Some("Say hi"));
        assert!(args.contains(&"/w".to_string()));
        assert_eq!(runner.skills_dir(), Path::new(".agents/skills"));

        let runner = AgentCliRunner::new(
            profile(
                "opencode",
                "base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"MOCK_KEY\"\n",
            ),
            Some("sk-secret-value".into()),
        )
        .unwrap();
        let (_, args) = runner.argv(&input(workspace, home, &[]));
        assert!(args.contains(&"skilllift/m1".to_string()));
        let env = runner.environment(&input(workspace, home, &[]));
        let config = env
            .iter()
            .find(|(n, _)| n == "OPENCODE_CONFIG_CONTENT")
            .unwrap();
        assert!(config.1.contains("127.0.0.1:9/v1") && config.1.contains("{env:MOCK_KEY}"));
        assert!(!config.1.contains("sk-secret-value"));
        assert!(env.contains(&("MOCK_KEY".to_string(), "sk-secret-value".to_string())));
        assert_eq!(runner.redact("key=sk-secret-value!"), "key=[redacted]!");
    }

    #[test]
    fn copilot_and_qwen_code_argv_environment_and_home() {
        let workspace = Path::new("/w");
        let home = Path::new("/h");
        let get = |env: &[(String, String)], name: &str| {
            env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
        };
        let runner = AgentCliRunner::new(
            profile(
                "copilot",
                "base_url = \"http://127.0.0.1:9/v1/\"\napi_key_env = \"MOCK_KEY\"\npass_env = [\"GH_TOKEN\"]\n",
            ),
            Some("sk-secret-value".into()),
        )
        .unwrap();
        let mut attempt = input(workspace, home, &[]);
        attempt.prompt = "-v is not a flag here";
        let (program, args) = runner.argv(&attempt);
        assert_eq!(program, "copilot");
        assert_eq!(args[0], "--prompt=-v is not a flag here");
        for expected in [
            "--allow-all-tools",
            "--no-auto-update",
            "/h/copilot-usage.json",
            "--secret-env-vars=COPILOT_PROVIDER_API_KEY,GH_TOKEN,MOCK_KEY",
        ] {
            assert!(args.iter().any(|a| a == expected), "{expected}: {args:?}");
        }
        assert!(args.windows(2).any(|w| w == ["--model", "m1"]));
        assert!(!args.iter().any(|a| a.contains("sk-secret-value")));
        let env = runner.environment(&attempt);
        assert_eq!(get(&env, "COPILOT_HOME").as_deref(), Some("/h/.copilot"));
        assert_eq!(get(&env, "COPILOT_OFFLINE").as_deref(), Some("true"));
        assert_eq!(
            get(&env, "COPILOT_PROVIDER_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(
            get(&env, "COPILOT_PROVIDER_API_KEY").as_deref(),
            Some("sk-secret-value")
        );
        assert_eq!(runner.skills_dir(), Path::new(".github/skills"));
        // Without a base URL: GitHub's routing, no provider variables.
        let runner = AgentCliRunner::new(profile("copilot", ""), None).unwrap();
        let env = runner.environment(&input(workspace, home, &[]));
        assert_eq!(get(&env, "COPILOT_OFFLINE"), None);
        assert_eq!(get(&env, "COPILOT_PROVIDER_BASE_URL"), None);

        let runner = AgentCliRunner::new(
            profile(
                "qwen-code",
                "base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"MOCK_KEY\"\n",
            ),
            Some("sk-secret-value".into()),
        )
        .unwrap();
        let (program, args) = runner.argv(&attempt);
        assert_eq!(program, "qwen");
        assert_eq!(args[0], "--prompt=-v is not a flag here");
        assert!(args.windows(2).any(|w| w == ["-o", "stream-json"]));
        assert!(args.windows(2).any(|w| w == ["--approval-mode", "yolo"]));
        assert!(args.windows(2).any(|w| w == ["--auth-type", "openai"]));
        assert!(!args.iter().any(|a| a == "--safe-mode" || a == "--bare"));
        let env = runner.environment(&attempt);
        assert_eq!(get(&env, "QWEN_HOME").as_deref(), Some("/h/.qwen"));
        assert_eq!(
            get(&env, "OPENAI_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(
            get(&env, "OPENAI_API_KEY").as_deref(),
            Some("sk-secret-value")
        );
        assert_eq!(runner.skills_dir(), Path::new(".qwen/skills"));
        let runner = AgentCliRunner::new(profile("qwen-code", ""), None).unwrap();
        let (_, args) = runner.argv(&input(workspace, home, &[]));
        assert!(!args.iter().any(|a| a == "--auth-type"));

        let dir = tempfile::tempdir().unwrap();
        prepare_home(dir.path(), &QwenCode).unwrap();
        let settings: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(".qwen/settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(settings["memory"]["enableManagedAutoMemory"], false);
        assert_eq!(settings["privacy"]["usageStatisticsEnabled"], false);
    }

    #[test]
    fn copilot_usage_comes_from_its_usage_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut trajectory = Trajectory::new();
        copilot::finish(dir.path(), &mut trajectory);
        assert_eq!(
            trajectory.usage,
            crate::values::trajectory::Usage::default()
        );
        std::fs::write(
            dir.path().join("copilot-usage.json"),
            r#"{"modelMetrics":{"m1":{"usage":{"inputTokens":200,"outputTokens":14,"cacheReadTokens":40,"cacheWriteTokens":0}}}}"#,
        )
        .unwrap();
        copilot::finish(dir.path(), &mut trajectory);
        assert_eq!(trajectory.usage.input_tokens, Some(200));
        assert_eq!(trajectory.usage.output_tokens, Some(14));
        assert_eq!(trajectory.usage.cached_tokens, Some(40));
    }

    #[test]
    fn command_template_fills_placeholders() {
        let runner = AgentCliRunner::new(
            profile(
                "command",
                "command = [\"agent\", \"--cwd\", \"{workspace}\", \"--skills\", \"{skills_dir}\", \"--model={model}\", \"{prompt}\"]\nskills_dir = \"skills\"\n",
            ),
            None,
        )
        .unwrap();
        let (program, args) = runner.argv(&input(Path::new("/w"), Path::new("/h"), &[]));
        assert_eq!(program, "agent");
        assert_eq!(
            args,
            vec!["--cwd", "/w", "--skills", "skills", "--model=m1", "Say hi"]
        );
        assert!(
            AgentCliRunner::new(
                profile("command", "command = [\"a\"]\nskills_dir = \"../x\"\n"),
                None
            )
            .is_err()
        );
    }

    fn fake_runner(mode: &str, format: &str) -> AgentCliRunner {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_agent.py");
        AgentCliRunner::new(
            profile(
                "command",
                &format!(
                    "command = [\"python3\", \"{}\", \"{mode}\", \"{{prompt}}\"]\noutput_format = \"{format}\"\ngrace_s = 0.3\nlinger_s = 0.3\n",
                    script.display()
                ),
            ),
            None,
        )
        .unwrap()
    }

    async fn attempt(runner: &AgentCliRunner, timeout: Duration) -> Trajectory {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("workspace");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let mut input = input(&workspace, &home, &[]);
        input.timeout = timeout;
        runner.run_attempt(input).await.unwrap()
    }

    #[tokio::test]
    async fn outcomes_are_classified() {
        let cases = [
            ("answer", "claude-stream-json", "ok", true),
            (
                "no-final",
                "claude-stream-json",
                "infrastructure_error",
                false,
            ),
            (
                "signal",
                "claude-stream-json",
                "infrastructure_error",
                false,
            ),
            ("exit", "claude-stream-json", "infrastructure_error", false),
            ("linger", "claude-stream-json", "ok", true),
            ("answer", "text", "ok", true),
        ];
        for (mode, format, class, complete) in cases {
            let runner = fake_runner(mode, format);
            let trajectory = attempt(&runner, Duration::from_secs(20)).await;
            let process = trajectory.process.as_ref().unwrap();
            assert_eq!(process.class, class, "{mode} {format}: {trajectory:?}");
            assert_eq!(
                matches!(trajectory.status, TrajectoryStatus::Complete),
                complete,
                "{mode} {format}: {:?}",
                trajectory.status
            );
        }
        let runner = fake_runner("hang", "claude-stream-json");
        let trajectory = attempt(&runner, Duration::from_millis(500)).await;
        assert_eq!(trajectory.process.as_ref().unwrap().class, "timeout");
        assert!(
            matches!(trajectory.status, TrajectoryStatus::Incomplete { reason } if reason.contains("timeout"))
        );
    }
}
