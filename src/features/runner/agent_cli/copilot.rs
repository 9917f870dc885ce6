//! The `copilot` kind (GitHub Copilot CLI, verified with 1.0.102): its argv, environment and
//! the usage file it writes. Everything else is the shared agent-CLI runner.
//!
//! With a `base_url` the CLI runs bring-your-own-model against that OpenAI-compatible server
//! (`COPILOT_PROVIDER_BASE_URL`) in offline mode (`COPILOT_OFFLINE=true`: no GitHub
//! authentication, telemetry, web tools, GitHub MCP server or update traffic); no GitHub token is
//! needed or passed. Without one it uses GitHub's own model routing and needs a GitHub token
//! (`COPILOT_GITHUB_TOKEN`, `GH_TOKEN` or `GITHUB_TOKEN` in the profile's `pass_env`).

use std::path::Path;

use super::{AgentCli, EnvContext};
use crate::features::runner::RunnerProfile;
use crate::features::runner::endpoint_probe::ProbeWire;
use crate::features::runner::parsers::StreamParser;
use crate::features::runner::parsers::copilot::{COPILOT_JSON, usage_from_file};
use crate::values::trajectory::Trajectory;

/// GitHub Copilot CLI.
pub(crate) struct Copilot;

impl AgentCli for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn program(&self) -> &'static str {
        PROGRAM
    }

    fn skills_dir(&self) -> &'static str {
        SKILLS_DIR
    }

    fn parser(&self, _profile: &RunnerProfile) -> &'static dyn StreamParser {
        &COPILOT_JSON
    }

    fn args(&self, profile: &RunnerProfile) -> Vec<String> {
        args(profile)
    }

    fn config_variables(&self) -> &'static [(&'static str, &'static str)] {
        &[("COPILOT_HOME", ".copilot")]
    }

    fn config_folders(&self) -> &'static [&'static str] {
        &[".copilot"]
    }

    fn probe_wire(&self) -> Option<ProbeWire> {
        Some(ProbeWire::OpenAiChat)
    }

    fn environment(&self, env: &mut Vec<(String, String)>, context: &EnvContext<'_>) {
        environment(env, context.base, context.api_key);
    }

    fn finish(&self, home: &Path, trajectory: &mut Trajectory) {
        finish(home, trajectory);
    }
}

/// The command name.
const PROGRAM: &str = "copilot";
/// Copilot's own project skills folder (it also reads `.agents/skills` and `.claude/skills`).
const SKILLS_DIR: &str = ".github/skills";
/// The variable Copilot reads the provider key from.
const KEY_VARIABLE: &str = "COPILOT_PROVIDER_API_KEY";
/// Where `--usage-output-file` writes the token counts, relative to the trial's home.
const USAGE_FILE: &str = "copilot-usage.json";

/// The headless arguments (placeholders filled by the runner). `--prompt=` keeps a prompt
/// that starts with `-` a value; `--secret-env-vars` strips the credential variables from the
/// shells the agent starts and redacts their values from its output.
fn args(profile: &RunnerProfile) -> Vec<String> {
    let mut secrets = vec![KEY_VARIABLE.to_string()];
    secrets.extend(profile.api_key_env.iter().cloned());
    secrets.extend(profile.pass_env.iter().cloned());
    secrets.sort();
    secrets.dedup();
    [
        "--prompt={prompt}",
        "--output-format",
        "json",
        "--allow-all-tools",
        "--trust-folder",
        "--no-auto-update",
        "--disable-client-telemetry",
        "--model",
        "{model}",
        "--usage-output-file",
    ]
    .iter()
    .map(|a| a.to_string())
    .chain([
        format!("{{home}}/{USAGE_FILE}"),
        format!("--secret-env-vars={}", secrets.join(",")),
    ])
    .collect()
}

/// The kind's variables; `key` is the value of the profile's `api_key_env`, when set.
fn environment(env: &mut Vec<(String, String)>, base: &str, key: Option<&str>) {
    env.push(("COPILOT_AUTO_UPDATE".into(), "false".into()));
    if base.is_empty() {
        return;
    }
    env.push(("COPILOT_OFFLINE".into(), "true".into()));
    env.push(("COPILOT_PROVIDER_BASE_URL".into(), base.to_string()));
    if let Some(key) = key {
        env.push((KEY_VARIABLE.into(), key.to_string()));
    }
}

/// Fill the usage from the file the CLI wrote at the end of the run (the stream has no token
/// counts); left unknown when the file is missing or unreadable.
pub(super) fn finish(home: &Path, trajectory: &mut Trajectory) {
    if trajectory.usage != crate::values::trajectory::Usage::default() {
        return;
    }
    if let Some(usage) = std::fs::read_to_string(home.join(USAGE_FILE))
        .ok()
        .as_deref()
        .and_then(usage_from_file)
    {
        trajectory.usage = usage;
    }
}
