//! `skill-lift changed`: the skills whose fingerprint differs between two git commits
//! (`crate::features::changed`, which compares and prints).

use crate::values::unknown_name::UnknownName;
use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;

use super::{CommandError, Outcome};
use crate::features::changed::{ChangedFormat, ChangedSettings, report_changes};

/// Flags of `skill-lift changed`.
#[derive(Debug, Args)]
pub struct ChangedArgs {
    /// Base commit (a branch, tag or sha), e.g. the pull request's base.
    #[arg(long, value_name = "REF")]
    pub base: String,
    /// Head commit.
    #[arg(long, value_name = "REF", default_value = "HEAD")]
    pub head: String,
    /// Compare against the merge base of --base and --head (what a pull request adds), not
    /// --base itself.
    #[arg(long)]
    pub merge_base: bool,
    /// Only skill folders under these folders (default: the whole repository).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The repository (any folder inside it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Fingerprint calibre: v4-no-eval-material (leaves EVAL.md and eval sets out), v3-agent-skills or v2-capability-surface.
    #[arg(long, value_name = "NAME", default_value = "v4-no-eval-material")]
    pub calibre: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ChangedFormat::Text)]
    pub format: ChangedFormat,
}

/// Run the command.
pub(super) fn changed(args: ChangedArgs) -> Result<Outcome, CommandError> {
    let settings = ChangedSettings {
        calibre: args
            .calibre
            .parse()
            .map_err(|e: UnknownName| CommandError::input(anyhow!(e)))?,
        repo: args.repo,
        base: args.base,
        head: args.head,
        merge_base: args.merge_base,
        paths: args.paths,
        format: args.format,
    };
    report_changes(&settings).map_err(CommandError::failed)?;
    Ok(Outcome::Success)
}
