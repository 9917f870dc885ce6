//! `skill-lift harbor-verify`: the custom grader `run` adds for a SkillsBench / Harbor suite
//! (`crate::features::evalset::harbor::harbor_verify`).

use std::path::PathBuf;

use clap::Args;

use super::{CommandError, Outcome};

/// Flags of `skill-lift harbor-verify`.
#[derive(Debug, Args)]
pub struct HarborVerifyArgs {
    /// The folder holding the task folders (or the task folder's parent).
    #[arg(long, value_name = "DIR")]
    pub tasks: PathBuf,
}

/// `skill-lift harbor-verify --tasks DIR`.
pub(super) fn harbor_verify(args: HarborVerifyArgs) -> Result<Outcome, CommandError> {
    crate::features::evalset::harbor::harbor_verify(&args.tasks).map_err(CommandError::input)?;
    Ok(Outcome::Success)
}
