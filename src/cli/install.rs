//! `skill-lift install`: render `crate::install` (skill-lift's own skill into every agent host
//! found) and map its outcome to an exit code.

use clap::Args;

use super::CommandError;
use super::Outcome;
use crate::install::{InstallAction, InstallReport, discover_targets, install, uninstall};

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
pub fn install_command(args: InstallArgs) -> Result<Outcome, CommandError> {
    let state = crate::registry::state::state_dir_from_env(args.state.flag())
        .map_err(CommandError::input)?;
    let hosts = crate::registry::hosts::load_hosts(&state).map_err(CommandError::input)?;
    for name in &args.hosts {
        if !hosts.iter().any(|h| &h.name == name) {
            return Err(CommandError::input(anyhow::anyhow!(
                "unknown host `{name}` (known: {}); add it to {}",
                hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                crate::registry::hosts::hosts_file(&state).display()
            )));
        }
    }
    let (targets, skipped) = discover_targets(&hosts, &args.hosts).map_err(CommandError::input)?;
    if targets.is_empty() {
        for host in &skipped {
            crate::reporter::report(crate::reporter::Event::HostSkipped {
                host: host.host.to_string(),
                reason: host.reason.to_string(),
            });
        }
        crate::reporter::report(crate::reporter::Event::NoAgentHost);
        return Ok(Outcome::NothingToRun);
    }
    let report = if args.uninstall {
        uninstall(&targets, skipped, args.dry_run, args.force)
    } else {
        install(&targets, skipped, args.dry_run, args.force)
    }
    .map_err(CommandError::infrastructure)?;
    print_report(&report, args.uninstall);
    if report.succeeded {
        Ok(Outcome::Success)
    } else {
        Ok(Outcome::InfrastructureError)
    }
}

fn print_report(report: &InstallReport, uninstalling: bool) {
    let verb = match (uninstalling, report.dry_run) {
        (false, false) => "install",
        (false, true) => "install (dry run: nothing written)",
        (true, false) => "uninstall",
        (true, true) => "uninstall (dry run: nothing removed)",
    };
    crate::reporter::result_line(&format!(
        "skill-lift {verb}: skill `{}` {}",
        crate::install::SKILL_NAME,
        report.fingerprint
    ));
    for outcome in &report.outcomes {
        let verified = match (outcome.action, &outcome.fingerprint) {
            (
                InstallAction::Installed | InstallAction::Updated | InstallAction::Unchanged,
                Some(_),
            ) if !report.dry_run => " (fingerprint verified)",
            _ => "",
        };
        let action = if report.dry_run {
            match outcome.action {
                InstallAction::Installed => "would install",
                InstallAction::Updated => "would update",
                InstallAction::Removed => "would remove",
                other => other.as_str(),
            }
        } else {
            outcome.action.as_str()
        };
        crate::reporter::result_line(&format!(
            "  {:<12} {:<16} {}{verified}",
            outcome.host,
            action,
            outcome.target.display()
        ));
        if let Some(error) = &outcome.error {
            crate::reporter::result_line(&format!(
                "               {}",
                crate::disk::redact::redact_text(error)
            ));
        }
    }
    for host in &report.skipped {
        crate::reporter::result_line(&format!(
            "  {:<12} {:<16} {}",
            host.host, "skipped", host.reason
        ));
    }
    if !report.succeeded && !uninstalling && !report.dry_run {
        crate::reporter::result_line(
            "Nothing was installed: every host done before the failure was rolled back.",
        );
    }
}
