//! `skill-lift formats check DIR...`: the conformance check of `scripts/check-formats`
//! ([`crate::formats_check`]): every skill, eval file, trigger set, Harbor task, plugin and
//! marketplace under the folders through the loaders, counted per kind as loaded or refused
//! with the reason. Exit 0 when everything loaded, 1 when something was refused.

use std::path::PathBuf;

use anyhow::anyhow;
use clap::{Args, Subcommand};

use super::CommandError;
use super::Outcome;

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

/// Run the command; returns the exit code.
pub fn formats(args: FormatsArgs) -> Result<Outcome, CommandError> {
    match args.command {
        FormatsCommand::Check { dirs, json } => {
            for dir in &dirs {
                if !dir.is_dir() {
                    return Err(CommandError::input(anyhow!(
                        "{}: not a folder",
                        dir.display()
                    )));
                }
            }
            let reports: Vec<_> = dirs
                .iter()
                .map(|dir| crate::formats_check::check_folder(dir))
                .collect();
            if json {
                let text = serde_json::to_string_pretty(&reports)
                    .map_err(|e| CommandError::input(anyhow!(e)))?;
                crate::reporter::result_line(&text);
            } else {
                crate::reporter::result(&crate::formats_check::render(&reports));
            }
            let refused = reports.iter().map(|r| r.totals().1).sum::<usize>();
            Ok(if refused == 0 {
                Outcome::Success
            } else {
                Outcome::GateFailed
            })
        }
    }
}
