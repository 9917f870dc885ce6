//! The `gemini` kind (Gemini CLI, `gemini -p … --output-format stream-json`): its argv,
//! environment and the auth choice its fresh config folder needs. Everything else is the shared
//! agent-CLI runner.

use std::path::Path;

use super::{AgentCli, EnvContext};
use crate::features::runner::RunnerProfile;
use crate::features::runner::endpoint_probe::ProbeWire;
use crate::features::runner::parsers::{StreamParser, gemini::GEMINI_STREAM_JSON};

/// Gemini CLI.
pub(crate) struct Gemini;

impl AgentCli for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn skills_dir(&self) -> &'static str {
        ".gemini/skills"
    }

    fn parser(&self, _profile: &RunnerProfile) -> &'static dyn StreamParser {
        &GEMINI_STREAM_JSON
    }

    fn args(&self, _profile: &RunnerProfile) -> Vec<String> {
        [
            "-p",
            "{prompt}",
            "--output-format",
            "stream-json",
            "--approval-mode",
            "yolo",
            "-m",
            "{model}",
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// The fresh home selects API-key auth (`gemini-api-key`), which reads only
    /// `GEMINI_API_KEY` (gemini-cli `validateAuthMethod`).
    fn key_variables(&self) -> Option<&'static [&'static str]> {
        Some(&["GEMINI_API_KEY"])
    }

    fn config_variables(&self) -> &'static [(&'static str, &'static str)] {
        &[("GEMINI_CLI_HOME", "")]
    }

    fn config_folders(&self) -> &'static [&'static str] {
        &[".gemini"]
    }

    fn probe_wire(&self) -> Option<ProbeWire> {
        Some(ProbeWire::GeminiGenerateContent)
    }

    fn environment(&self, env: &mut Vec<(String, String)>, context: &EnvContext<'_>) {
        env.push(("GEMINI_CLI_TRUST_WORKSPACE".into(), "true".into()));
        if !context.base.is_empty() {
            env.push(("GOOGLE_GEMINI_BASE_URL".into(), context.base.to_string()));
        }
    }

    /// A fresh home has no auth choice; headless runs then exit 41. API-key auth (the key
    /// comes from the passed-through GEMINI_API_KEY / GOOGLE_API_KEY).
    fn prepare_home(&self, home: &Path) -> std::io::Result<()> {
        let settings = home.join(".gemini/settings.json");
        std::fs::create_dir_all(home.join(".gemini"))?;
        if !settings.exists() {
            crate::disk::write(
                &settings,
                r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
            )
            .map_err(crate::disk::DiskError::into_io)?;
        }
        Ok(())
    }
}
