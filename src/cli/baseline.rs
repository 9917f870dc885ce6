//! `skill-lift baseline checklist|merge|ingest`: the baseline store fed by hand (manual replays
//! for hosts with no headless entry point) or from recorded run folders.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::flag_groups::StateArgs;
use super::registry::HostArgs;
use super::{CommandError, Outcome};
use crate::features::registry::baseline::{
    ChecklistSettings, ingest_runs, merge_replays, print_checklist,
};

/// `skill-lift baseline …`.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    #[command(subcommand)]
    pub command: BaselineCommand,
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Print a replay checklist of an asset's active golden cases, and optionally a merge template.
    Checklist(ChecklistArgs),
    /// Merge recorded verdicts (a replay file) into baseline-results.json.
    Merge(MergeArgs),
    /// Add the trials of recorded run folders to baseline-results.json (what `run` does itself).
    Ingest(IngestArgs),
}

/// Flags of `baseline checklist`.
#[derive(Debug, Args)]
pub struct ChecklistArgs {
    /// A skill folder, or an asset name from the host's registry.
    pub asset: String,
    #[command(flatten)]
    pub host: HostArgs,
    /// Eval set file (default: ASSET/evals/evals.json).
    #[arg(long, value_name = "FILE")]
    pub evals: Option<PathBuf>,
    /// Model the replay runs under (default: the host's current bump).
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Fingerprint calibre.
    #[arg(long, value_name = "NAME", default_value = "v4-no-eval-material")]
    pub calibre: String,
    /// Include draft cases.
    #[arg(long)]
    pub allow_draft: bool,
    /// Write a merge template (verdict: null per case) to FILE.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
}

/// Flags of `baseline merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Replay file: {asset, fingerprint, calibre, model, runner, verdicts: [{case_id, verdict, status, arm, attempt}]} or a list.
    pub file: PathBuf,
    /// Replace every stored entry of each asset in the file.
    #[arg(long)]
    pub replace: bool,
    /// Merge draft cases too.
    #[arg(long)]
    pub allow_draft: bool,
    #[command(flatten)]
    pub state: StateArgs,
}

/// Flags of `baseline ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Run folders (hold manifest.json and trials.jsonl).
    #[arg(required = true)]
    pub run_dirs: Vec<PathBuf>,
    #[command(flatten)]
    pub state: StateArgs,
}

/// Run the subcommand.
pub(super) fn baseline(args: BaselineArgs) -> Result<Outcome, CommandError> {
    let done = match args.command {
        BaselineCommand::Checklist(args) => {
            let state = args.host.state.dir()?;
            let settings = ChecklistSettings {
                asset: args.asset,
                evals: args.evals,
                model: args.model,
                calibre: args.calibre,
                allow_draft: args.allow_draft,
                template: args.template,
            };
            print_checklist(&state, &args.host.host, &settings)
        }
        BaselineCommand::Merge(args) => merge_replays(
            &args.state.dir()?,
            &args.file,
            args.replace,
            args.allow_draft,
        ),
        BaselineCommand::Ingest(args) => ingest_runs(&args.state.dir()?, &args.run_dirs),
    };
    done.map_err(CommandError::input)?;
    Ok(Outcome::Success)
}
