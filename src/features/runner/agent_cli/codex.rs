//! The `codex` kind (Codex CLI, `codex exec --json`). With a `base_url`, Codex gets a provider
//! of ours (it ignores `OPENAI_BASE_URL` for its built-in one). Everything else is the shared
//! agent-CLI runner.

use super::{AgentCli, DUMMY_KEY_VARIABLE, EnvContext};
use crate::features::runner::RunnerProfile;
use crate::features::runner::endpoint_probe::ProbeWire;
use crate::features::runner::parsers::{StreamParser, codex::CODEX_JSON};

/// Codex CLI.
pub(crate) struct Codex;

impl AgentCli for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn parser(&self, _profile: &RunnerProfile) -> &'static dyn StreamParser {
        &CODEX_JSON
    }

    fn args(&self, _profile: &RunnerProfile) -> Vec<String> {
        [
            "exec",
            "--json",
            "-C",
            "{workspace}",
            "--skip-git-repo-check",
            "-m",
            "{model}",
        ]
        .map(str::to_string)
        .to_vec()
    }

    fn prompt_is_last(&self) -> bool {
        true
    }

    fn provider_args(&self, profile: &RunnerProfile) -> Vec<String> {
        let base = profile.base_url.trim_end_matches('/');
        if base.is_empty() {
            return Vec::new();
        }
        let key_env = profile.api_key_env.as_deref().unwrap_or(DUMMY_KEY_VARIABLE);
        let mut args = Vec::new();
        for setting in [
            "model_provider=\"skilllift\"".to_string(),
            "model_providers.skilllift.name=\"skill-lift\"".to_string(),
            format!("model_providers.skilllift.base_url=\"{base}\""),
            format!("model_providers.skilllift.env_key=\"{key_env}\""),
            "model_providers.skilllift.wire_api=\"responses\"".to_string(),
        ] {
            args.push("-c".to_string());
            args.push(setting);
        }
        args
    }

    fn probe_wire(&self) -> Option<ProbeWire> {
        Some(ProbeWire::OpenAiResponses)
    }

    fn config_variables(&self) -> &'static [(&'static str, &'static str)] {
        &[("CODEX_HOME", ".codex")]
    }

    fn config_folders(&self) -> &'static [&'static str] {
        &[".codex"]
    }

    fn environment(&self, env: &mut Vec<(String, String)>, context: &EnvContext<'_>) {
        if !context.base.is_empty() {
            env.push((DUMMY_KEY_VARIABLE.into(), "skill-lift".into()));
        }
    }
}
