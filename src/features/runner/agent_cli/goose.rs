//! The `goose` kind (Goose, `goose run --output-format stream-json`). Everything else is the
//! shared agent-CLI runner.

use super::{AgentCli, EnvContext};
use crate::features::runner::RunnerProfile;
use crate::features::runner::parsers::{StreamParser, goose::GOOSE_STREAM_JSON};

/// Goose.
pub(crate) struct Goose;

impl AgentCli for Goose {
    fn name(&self) -> &'static str {
        "goose"
    }

    fn skills_dir(&self) -> &'static str {
        ".goose/skills"
    }

    fn parser(&self, _profile: &RunnerProfile) -> &'static dyn StreamParser {
        &GOOSE_STREAM_JSON
    }

    fn args(&self, _profile: &RunnerProfile) -> Vec<String> {
        [
            "run",
            "-t",
            "{prompt}",
            "--output-format",
            "stream-json",
            "--no-session",
            "--model",
            "{model}",
        ]
        .map(str::to_string)
        .to_vec()
    }

    fn environment(&self, env: &mut Vec<(String, String)>, _context: &EnvContext<'_>) {
        env.push(("GOOSE_MODE".into(), "auto".into()));
    }
}
