//! `skill-lift regress`: the pass-rate matrix and regression flags from the baseline store.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::CommandError;
use super::Outcome;
use super::flag_groups::StateArgs;
use crate::registry::baseline::read_store;
use crate::registry::regress::{RegressSettings, regress, to_csv, to_table};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

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
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
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
pub fn regress_command(args: RegressArgs) -> Result<Outcome, CommandError> {
    if !(0.0..=100.0).contains(&args.threshold_pp) || !(0.0..=1.0).contains(&args.q) {
        return Err(CommandError::input(anyhow::anyhow!(
            "--threshold-pp must be in [0, 100] and --q in [0, 1]"
        )));
    }
    let state = args.state.dir()?;
    let mut store = read_store(&state).map_err(CommandError::input)?;
    if let Some(host) = &args.host {
        crate::registry::hosts::find_host(&state, host).map_err(CommandError::input)?;
        let registry = crate::registry::scan::read_registry(&state, host)
            .map_err(CommandError::input)?
            .ok_or_else(|| {
                CommandError::input(anyhow::anyhow!(
                    "no registry for host `{host}` yet; run `skill-lift scan --host {host}` first"
                ))
            })?;
        store
            .assets
            .retain(|name, _| registry.assets.contains_key(name));
    }
    if let Some(asset) = &args.asset
        && !store.assets.contains_key(asset)
    {
        return Err(CommandError::input(anyhow::anyhow!(
            "{}: no verdicts for asset `{asset}` (known: {})",
            crate::registry::baseline::baseline_path(&state).display(),
            store.assets.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let settings = RegressSettings {
        asset: args.asset.clone(),
        arm: args.arm.clone(),
        threshold_pp: args.threshold_pp,
        q: args.q,
        model_order: args.models.clone(),
        ..RegressSettings::default()
    };
    let report = regress(&store, &settings);
    let json = serde_json::to_string_pretty(&report).map_err(CommandError::infrastructure)?;
    match args.format {
        Format::Table => crate::reporter::result(&to_table(&report)),
        Format::Json => crate::reporter::result_line(&json),
        Format::Csv => crate::reporter::result(&to_csv(&report)),
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| CommandError::infrastructure(anyhow::anyhow!("{}: {e}", dir.display())))?;
        for (name, bytes) in [
            ("regress.json", json.into_bytes()),
            ("regress.csv", to_csv(&report).into_bytes()),
        ] {
            crate::disk::write_atomic(&dir.join(name), &bytes)
                .map_err(CommandError::infrastructure)?;
        }
    }
    Ok(if report.any_degraded() {
        Outcome::GateFailed
    } else {
        Outcome::Success
    })
}
