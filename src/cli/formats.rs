//! `skill-lift formats check DIR...`: the conformance check of `scripts/check-formats`
//! ([`crate::features::formats_check`]). Exit 0 when everything loaded, 1 when something was refused.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{CommandError, Outcome};

/// Flags of `skill-lift formats`.
#[derive(Debug, Args)]
pub struct FormatsArgs {
    #[command(subcommand)]
    pub command: FormatsCommand,
}

/// `skill-lift formats` subcommands.
#[derive(Debug, Subcommand)]
pub enum FormatsCommand {
    /// Run the loaders over every input under the folders and count loaded / refused.
    Check {
        /// Folders to check (repositories, skill folders, plugin folders).
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Run the command: exit 1 when an input was refused.
pub(super) fn formats(args: FormatsArgs) -> Result<Outcome, CommandError> {
    let FormatsCommand::Check { dirs, json } = args.command;
    match crate::features::formats_check::check_command(&dirs, json).map_err(CommandError::input)? {
        0 => Ok(Outcome::Success),
        _ => Ok(Outcome::GateFailed),
    }
}
