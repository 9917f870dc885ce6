//! The `claude-code` kind (Claude Code, `claude -p … --output-format stream-json --verbose`).
//! Everything else is the shared agent-CLI runner.

use super::{AgentCli, EnvContext};
use crate::features::runner::RunnerProfile;
use crate::features::runner::endpoint_probe::ProbeWire;
use crate::features::runner::parsers::{StreamParser, claude::CLAUDE_STREAM_JSON};

/// Claude Code.
pub(crate) struct ClaudeCode;

impl AgentCli for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn program(&self) -> &'static str {
        "claude"
    }

    fn skills_dir(&self) -> &'static str {
        ".claude/skills"
    }

    fn parser(&self, _profile: &RunnerProfile) -> &'static dyn StreamParser {
        &CLAUDE_STREAM_JSON
    }

    fn args(&self, _profile: &RunnerProfile) -> Vec<String> {
        [
            "-p",
            "{prompt}",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "{model}",
            "--allowedTools",
            "Skill,Read,Glob,Grep",
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// Claude Code reads an API key (`x-api-key`), a bearer token, or a subscription token.
    fn key_variables(&self) -> Option<&'static [&'static str]> {
        Some(&[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ])
    }

    fn config_variables(&self) -> &'static [(&'static str, &'static str)] {
        &[("CLAUDE_CONFIG_DIR", ".claude")]
    }

    fn config_folders(&self) -> &'static [&'static str] {
        &[".claude"]
    }

    fn probe_wire(&self) -> Option<ProbeWire> {
        Some(ProbeWire::AnthropicMessages)
    }

    fn environment(&self, env: &mut Vec<(String, String)>, context: &EnvContext<'_>) {
        env.push(("DISABLE_TELEMETRY".into(), "1".into()));
        env.push(("DISABLE_AUTOUPDATER".into(), "1".into()));
        env.push((
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ));
        if !context.base.is_empty() {
            // Claude Code appends `/v1/messages` itself.
            env.push((
                "ANTHROPIC_BASE_URL".into(),
                context.base.trim_end_matches("/v1").to_string(),
            ));
        }
    }
}
