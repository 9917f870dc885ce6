//! `skill-lift regress`: the pass-rate matrix and regression flags from the baseline store.

use std::path::PathBuf;

use clap::Args;

use super::flag_groups::StateArgs;
use super::{CommandError, Outcome};
use crate::features::registry::regress::{self, RegressCommand, RegressFormat, RegressSettings};

/// Flags of `skill-lift regress`.
#[derive(Debug, Args)]
pub struct RegressArgs {
    /// Only this asset.
    pub asset: Option<String>,
    /// Minimum drop, in percentage points, for DEGRADED.
    #[arg(long, value_name = "PP", default_value_t = 20.0)]
    pub threshold_pp: f64,
    /// Benjamini–Hochberg false-discovery rate for the paired tests.
    #[arg(long, value_name = "Q", default_value_t = 0.10)]
    pub q: f64,
    /// Arm whose pass rate fills the matrix.
    #[arg(long, value_name = "ARM", default_value = "with_skill")]
    pub arm: String,
    /// Column order of model versions (comma-separated); others follow by first verdict time.
    #[arg(long, value_name = "A,B,…", value_delimiter = ',')]
    pub models: Vec<String>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = RegressFormat::Table)]
    pub format: RegressFormat,
    /// Only assets registered on this host (the store itself is shared across hosts).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Also write regress.json and regress.csv into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub state: StateArgs,
}

/// Run the command: exit 1 when any asset is DEGRADED.
pub(super) fn regress_command(args: RegressArgs) -> Result<Outcome, CommandError> {
    let command = RegressCommand {
        state: args.state.state,
        host: args.host,
        settings: RegressSettings {
            asset: args.asset,
            arm: args.arm,
            threshold_pp: args.threshold_pp,
            q: args.q,
            model_order: args.models,
            ..RegressSettings::default()
        },
        format: args.format,
        out: args.out,
    };
    match regress::regress_command(&command).map_err(CommandError::failed)? {
        report if report.any_degraded() => Ok(Outcome::GateFailed),
        _ => Ok(Outcome::Success),
    }
}
