//! The `command` kind: any program, from the profile's argv template (`command`, placeholders
//! filled like every kind's) and the output format it names (`output_format`, default plain
//! text). Everything else is the shared agent-CLI runner.

use super::AgentCli;
use crate::features::runner::RunnerProfile;
use crate::features::runner::parsers::{OutputFormat, StreamParser};

/// Any program.
pub(crate) struct Command;

impl AgentCli for Command {
    fn name(&self) -> &'static str {
        "command"
    }

    fn program(&self) -> &'static str {
        ""
    }

    fn parser(&self, profile: &RunnerProfile) -> &'static dyn StreamParser {
        profile.output_format.unwrap_or(OutputFormat::Text).parser()
    }

    fn args(&self, profile: &RunnerProfile) -> Vec<String> {
        profile.command.iter().skip(1).cloned().collect()
    }

    /// The profile's `command`, program first.
    fn argv_template(&self, profile: &RunnerProfile) -> Vec<String> {
        profile.command.clone()
    }

    /// Any program: pre-flight only checks that it exists.
    fn version_checked(&self) -> bool {
        false
    }

    /// The profile's `command` is the argv.
    fn takes_command_template(&self) -> bool {
        true
    }
}
