//! The `cursor` kind (Cursor CLI, `cursor-agent -p … --output-format stream-json`). Everything
//! else is the shared agent-CLI runner.

use super::AgentCli;
use crate::features::runner::RunnerProfile;
use crate::features::runner::parsers::{StreamParser, cursor::CURSOR_STREAM_JSON};

/// Cursor CLI.
pub(crate) struct Cursor;

impl AgentCli for Cursor {
    fn name(&self) -> &'static str {
        "cursor"
    }

    fn program(&self) -> &'static str {
        "cursor-agent"
    }

    fn skills_dir(&self) -> &'static str {
        ".cursor/skills"
    }

    fn parser(&self, _profile: &RunnerProfile) -> &'static dyn StreamParser {
        &CURSOR_STREAM_JSON
    }

    fn args(&self, _profile: &RunnerProfile) -> Vec<String> {
        [
            "-p",
            "{prompt}",
            "--output-format",
            "stream-json",
            "--workspace",
            "{workspace}",
            "--trust",
            "--force",
            "--model",
            "{model}",
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// Cursor CLI takes its key from `CURSOR_API_KEY` (or `--api-key`).
    fn key_variables(&self) -> Option<&'static [&'static str]> {
        Some(&["CURSOR_API_KEY"])
    }
}
