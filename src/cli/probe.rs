//! `skill-lift probe` (passive runtime evidence) and `skill-lift suggest` (need-based suggestion).

use std::path::PathBuf;

use clap::Args;

use super::flag_groups::StateArgs;
use super::registry::HostArgs;
use super::{CommandError, Outcome};
use crate::features::registry::probe::{ProbeSettings, probe_host};
use crate::features::registry::suggest::suggest_from_state;

/// Flags of `skill-lift probe`.
#[derive(Debug, Args)]
#[command(
    after_help = "Blind spots: an asset that logs nothing is invisible; log rotation erases old failures; an asset nobody used has no evidence; failures logged at info level are found by keyword only, so misses and false alarms are possible. Absence of evidence is not evidence of health."
)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Log glob instead of the host profile's `logs` (wildcards in the file name only).
    #[arg(long, value_name = "GLOB")]
    pub logs: Option<String>,
    /// Claude Code projects folder with session transcripts (default for claude-code:
    /// ~/.claude/projects).
    #[arg(long, value_name = "DIR")]
    pub transcripts: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `skill-lift suggest`.
#[derive(Debug, Args)]
pub struct SuggestArgs {
    /// The need, in the user's words.
    #[arg(long, value_name = "TEXT")]
    pub need: String,
    /// Catalog file: a JSON list of {slug, title, description, source}.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    #[command(flatten)]
    pub state: StateArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `skill-lift probe`.
pub(super) fn probe(args: ProbeArgs) -> Result<Outcome, CommandError> {
    let (state, host) = args.host.resolve()?;
    let settings = ProbeSettings {
        root: args.host.root,
        logs: args.logs,
        transcripts: args.transcripts,
        json: args.json,
    };
    probe_host(&state, &host, &settings).map_err(CommandError::input)?;
    Ok(Outcome::Success)
}

/// `skill-lift suggest`.
pub(super) fn suggest_command(args: SuggestArgs) -> Result<Outcome, CommandError> {
    let state = args.state.dir()?;
    suggest_from_state(&state, &args.need, args.catalog.as_deref(), args.json)
        .map_err(CommandError::input)?;
    Ok(Outcome::Success)
}
