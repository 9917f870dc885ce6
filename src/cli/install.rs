//! `skill-lift install`: skill-lift's own skill into every agent host found (`crate::features::install`).

use clap::Args;

use super::{CommandError, Outcome};
use crate::features::install::InstallSettings;

/// Flags of `skill-lift install`.
#[derive(Debug, Args)]
#[command(mut_arg("state", |arg| arg.help("State folder holding hosts.json (default: $SKILL_LIFT_HOME, else ~/.skill-lift)")))]
pub struct InstallArgs {
    /// Say what would be installed or removed; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove skill-lift's skill from every host found instead.
    #[arg(long)]
    pub uninstall: bool,
    /// Only these hosts (repeatable; names as `skill-lift hosts` lists them).
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
    /// Replace (or remove) a folder named skill-lift even when it is not skill-lift's own skill,
    /// or when it holds files a user added (without it, such a folder is left as it is).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub state: super::flag_groups::StateArgs,
}

/// Run `skill-lift install`.
pub(super) fn install_command(args: InstallArgs) -> Result<Outcome, CommandError> {
    let settings = InstallSettings {
        state: args.state.dir()?,
        hosts: args.hosts,
        uninstall: args.uninstall,
        dry_run: args.dry_run,
        force: args.force,
    };
    match crate::features::install::install_command(&settings).map_err(CommandError::failed)? {
        None => Ok(Outcome::NothingToRun),
        Some(report) if report.succeeded => Ok(Outcome::Success),
        Some(_) => Ok(Outcome::InfrastructureError),
    }
}
