//! `skill-lift usage`: adoption and net value per skill from session history (`crate::features::usage`).

use std::path::PathBuf;

use clap::Args;

use super::golden::HistoryArgs;
use super::{CommandError, Outcome};
use crate::features::usage::{Pricing, UsageSettings, report_usage};

/// Flags of `skill-lift usage`.
#[derive(Debug, Args)]
#[command(
    after_help = "Adoption is read from what the user did next (pushback, rewrite requests, undo, interruptions vs moving on); see docs/history.md. Without activations the verdict is `no evidence`, never a green mark."
)]
pub struct UsageArgs {
    #[command(flatten)]
    pub history: HistoryArgs,
    /// The window: sessions of the last N days (ignored with --since).
    #[arg(long, value_name = "N", default_value_t = 90)]
    pub days: u32,
    /// Only this skill.
    #[arg(long, value_name = "NAME")]
    pub skill: Option<String>,
    /// Value of one adopted activation in USD (for the net value).
    #[arg(long, value_name = "USD")]
    pub value_per_success: Option<f64>,
    /// Price of input tokens, USD per million (for the marginal cost).
    #[arg(long, value_name = "USD")]
    pub input_price: Option<f64>,
    /// Price of output tokens, USD per million (for the marginal cost).
    #[arg(long, value_name = "USD")]
    pub output_price: Option<f64>,
    /// The host's skills folder (installed skills count as available in every session).
    /// Default: the host's user skills folder under the (stand-in) home.
    #[arg(long, value_name = "DIR")]
    pub skills_dir: Option<PathBuf>,
    /// Host log glob (`probe`'s format) whose failure lines are attributed to skills.
    #[arg(long, value_name = "GLOB")]
    pub logs: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `skill-lift usage`.
pub(super) fn usage(args: UsageArgs) -> Result<Outcome, CommandError> {
    let settings = UsageSettings {
        history: args.history.request(),
        days: args.days,
        skill: args.skill,
        pricing: Pricing {
            value_per_success: args.value_per_success,
            input_per_mtok: args.input_price,
            output_per_mtok: args.output_price,
        },
        skills_dir: args.skills_dir,
        logs: args.logs,
        json: args.json,
    };
    report_usage(&settings).map_err(CommandError::input)?;
    Ok(Outcome::Success)
}
