//! The registry console commands `hosts`, `scan`, `status`, `bump`, `check`: flags mapped to
//! `crate::features::registry::console`'s workflows, which print. Each takes `--host`, `--root`, `--state`.

use std::path::PathBuf;

use clap::Args;

use super::flag_groups::StateArgs;
use super::{CommandError, Outcome};
use crate::features::registry::console::{self, CheckEnding};
use crate::features::registry::hosts::{HostProfile, find_host};
use crate::features::registry::observe::WatchSettings;

/// `--host NAME --root PATH` plus `--state`.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// Host profile: claude-code, codex, agents, gemini, opencode, cursor, goose, workbuddy,
    /// deepseek, generic, or one from hosts.json.
    #[arg(
        long,
        value_name = "NAME",
        env = "SKILL_LIFT_HOST",
        default_value = "claude-code"
    )]
    pub host: String,
    /// Asset root to use instead of the host's default.
    #[arg(long, value_name = "PATH")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub state: StateArgs,
}

impl HostArgs {
    /// The state folder and the host profile these flags name.
    pub fn resolve(&self) -> Result<(PathBuf, HostProfile), CommandError> {
        let state = self.state.dir()?;
        let host = find_host(&state, &self.host).map_err(CommandError::input)?;
        Ok((state, host))
    }
}

/// Flags of `skill-lift hosts`.
#[derive(Debug, Args)]
pub struct HostsArgs {
    /// Only this host.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Root for the selected host (with --host).
    #[arg(long, value_name = "PATH", requires = "host")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub state: StateArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `skill-lift scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Fingerprint calibre: v4-no-eval-material (leaves EVAL.md and eval sets out), v3-agent-skills or v2-capability-surface.
    #[arg(long, value_name = "NAME", default_value = "v4-no-eval-material")]
    pub calibre: String,
    /// Print the change report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `skill-lift status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Per-asset dashboard: latest lift, pass-rate trend, risk (maintenance-surface proxy) and a
    /// heuristic keep / rewrite / retire suggestion; plus use from session history
    /// (recommend / keep / rewrite / retire with the adoption evidence, or "no evidence").
    #[arg(long)]
    pub dashboard: bool,
    /// With --dashboard: a folder standing in for the home folder whose session history is read.
    #[arg(long, value_name = "DIR", env = "SKILL_LIFT_HISTORY_ROOT")]
    pub history_root: Option<PathBuf>,
    /// With --dashboard: the usage window in days.
    #[arg(long, value_name = "N", default_value_t = 90)]
    pub days: u32,
    /// With --dashboard: what one success of a skill is worth, USD; the value card's net
    /// benefit (USD per 30 days) needs it.
    #[arg(long, value_name = "USD", requires = "dashboard")]
    pub value_per_success: Option<f64>,
    /// With --dashboard: consecutive days of negative net value before the card suggests
    /// rewriting or retiring a skill.
    #[arg(
        long,
        value_name = "DAYS",
        requires = "dashboard",
        default_value_t = crate::features::registry::value::DEFAULT_NEGATIVE_WINDOW_DAYS
    )]
    pub value_window: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `skill-lift bump`.
#[derive(Debug, Args)]
pub struct BumpArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// The new model version id.
    #[arg(long, value_name = "ID")]
    pub model: String,
    /// Free-text note.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

/// Flags of `skill-lift check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Report a model change without recording it as a bump (the exit code is still 1).
    #[arg(long)]
    pub no_auto_bump: bool,
    /// An HTTP runner profile whose `GET /models` is read as evidence of the model (repeatable);
    /// when given, only these runners' trial records count.
    #[arg(long, value_name = "PROFILE")]
    pub runner: Vec<String>,
    /// A folder standing in for the home folder whose agent session history and settings are
    /// read.
    #[arg(long, value_name = "DIR", env = "SKILL_LIFT_HISTORY_ROOT")]
    pub history_root: Option<PathBuf>,
    /// Waive these assets under the current model before checking (needs --reason).
    #[arg(long, value_name = "ASSET", requires = "reason")]
    pub waive: Vec<String>,
    /// Why the waived assets need no re-run.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `skill-lift hosts`.
pub(super) fn hosts(args: HostsArgs) -> Result<Outcome, CommandError> {
    let (host, root) = (args.host.as_deref(), args.root.as_deref());
    console::print_hosts(&args.state.dir()?, host, root, args.json).map_err(CommandError::input)?;
    Ok(Outcome::Success)
}

/// `skill-lift scan`: exit 5 when assets were skipped.
pub(super) fn scan_command(args: ScanArgs) -> Result<Outcome, CommandError> {
    let (host, root) = (&args.host.host, args.host.root.as_deref());
    let state = args.host.state.dir()?;
    match console::scan_and_print(&state, host, root, &args.calibre, args.json) {
        Ok(false) => Ok(Outcome::Success),
        Ok(true) => Ok(Outcome::CompletedWithWarnings),
        Err(error) => Err(CommandError::input(error)),
    }
}

/// `skill-lift status`.
pub(super) fn status(args: StatusArgs) -> Result<Outcome, CommandError> {
    let (state, host) = args.host.resolve()?;
    let dashboard = args.dashboard.then(|| console::DashboardSettings {
        history_root: args.history_root.as_deref(),
        days: args.days,
        value: crate::features::registry::value::ValueSettings::new(
            args.value_per_success,
            args.value_window,
        ),
    });
    console::print_status(&state, &host.name, dashboard, args.json).map_err(CommandError::input)?;
    Ok(Outcome::Success)
}

/// `skill-lift bump`.
pub(super) fn bump_command(args: BumpArgs) -> Result<Outcome, CommandError> {
    let (state, host) = args.host.resolve()?;
    let line = console::bump_host(&state, &host.name, &args.model, args.note)
        .map_err(CommandError::input)?;
    crate::values::reporter::result_line(&line);
    Ok(Outcome::Success)
}

/// `skill-lift check`: exit 1 when the model changed or assets are pending under the current
/// model, 5 when otherwise clean but a source of model evidence could not be read.
pub(super) async fn check_command(args: CheckArgs) -> Result<Outcome, CommandError> {
    let (state, host) = args.host.resolve()?;
    let reason = args.reason.unwrap_or_default();
    let watch = WatchSettings {
        history_root: args.history_root,
        runners: args.runner,
        record: !args.no_auto_bump,
    };
    let ending =
        console::check_and_print(&state, &host.name, &args.waive, &reason, &watch, args.json)
            .await
            .map_err(CommandError::input)?;
    Ok(match ending {
        CheckEnding::Clean => Outcome::Success,
        CheckEnding::ChangedOrPending => Outcome::GateFailed,
        CheckEnding::SourceUnreadable => Outcome::CompletedWithWarnings,
    })
}
