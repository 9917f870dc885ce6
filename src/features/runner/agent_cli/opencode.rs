//! The `opencode` kind (OpenCode, `opencode run --format json`). With a `base_url`, OpenCode
//! gets a provider of ours through `OPENCODE_CONFIG_CONTENT` (the key stays in its variable) and
//! the model is named through it. Everything else is the shared agent-CLI runner.

use super::{AgentCli, DUMMY_KEY_VARIABLE, EnvContext};
use crate::features::runner::RunnerProfile;
use crate::features::runner::endpoint_probe::ProbeWire;
use crate::features::runner::parsers::{StreamParser, opencode::OPENCODE_JSON};

/// OpenCode.
pub(crate) struct Opencode;

impl AgentCli for Opencode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn skills_dir(&self) -> &'static str {
        ".opencode/skills"
    }

    fn parser(&self, _profile: &RunnerProfile) -> &'static dyn StreamParser {
        &OPENCODE_JSON
    }

    fn args(&self, _profile: &RunnerProfile) -> Vec<String> {
        [
            "run",
            "--format",
            "json",
            "--dir",
            "{workspace}",
            "-m",
            "{model}",
        ]
        .map(str::to_string)
        .to_vec()
    }

    fn prompt_is_last(&self) -> bool {
        true
    }

    /// With a base URL: the mock provider's id.
    fn model_argument(&self, profile: &RunnerProfile, model: &str) -> String {
        if !profile.base_url.is_empty() && !model.contains('/') {
            format!("skilllift/{model}")
        } else {
            model.to_string()
        }
    }

    fn probe_wire(&self) -> Option<ProbeWire> {
        Some(ProbeWire::OpenAiChat)
    }

    /// The provider's model id (the part after `provider/`), as its configuration names it.
    fn probe_model<'m>(&self, model: &'m str) -> &'m str {
        model.rsplit('/').next().unwrap_or(model)
    }

    fn config_variables(&self) -> &'static [(&'static str, &'static str)] {
        &[("OPENCODE_CONFIG_DIR", ".config/opencode")]
    }

    fn config_folders(&self) -> &'static [&'static str] {
        &[".config/opencode"]
    }

    fn environment(&self, env: &mut Vec<(String, String)>, context: &EnvContext<'_>) {
        env.push(("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into()));
        let base = context.base;
        if base.is_empty() {
            return;
        }
        let key_env = context
            .profile
            .api_key_env
            .clone()
            .unwrap_or_else(|| DUMMY_KEY_VARIABLE.to_string());
        let model = context.model;
        let config = serde_json::json!({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"skilllift": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "skill-lift",
                "options": {"baseURL": base, "apiKey": format!("{{env:{key_env}}}")},
                "models": {model.rsplit('/').next().unwrap_or(model): {}}
            }},
            "autoupdate": false,
            "share": "disabled"
        });
        env.push(("OPENCODE_CONFIG_CONTENT".into(), config.to_string()));
        env.push((DUMMY_KEY_VARIABLE.into(), "skill-lift".into()));
    }
}
