//! `skill-lift fingerprint`: the standalone fingerprint report; never touches a registry.

use crate::values::unknown_name::UnknownName;
use std::path::PathBuf;

use clap::Args;

use super::{CommandError, Outcome};
use crate::features::asset::fingerprint::Calibre;
use crate::features::registry::fingerprint_report::fingerprint_command;

/// Flags of `skill-lift fingerprint`.
#[derive(Debug, Args)]
pub struct FingerprintArgs {
    /// Asset folders.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Folder receiving fingerprint-report.json and fingerprint-report.md.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// Fingerprint calibre: v4-no-eval-material (leaves EVAL.md and eval sets out), v3-agent-skills or v2-capability-surface.
    #[arg(long, value_name = "NAME", default_value = "v4-no-eval-material")]
    pub calibre: String,
}

/// Run the command.
pub(super) fn fingerprint(args: FingerprintArgs) -> Result<Outcome, CommandError> {
    let calibre: Calibre =
        (args.calibre.parse()).map_err(|e: UnknownName| CommandError::input(anyhow::anyhow!(e)))?;
    fingerprint_command(&args.paths, calibre, &args.out).map_err(CommandError::input)?;
    Ok(Outcome::Success)
}
