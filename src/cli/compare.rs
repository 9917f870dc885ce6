//! `skill-lift compare RUN_A RUN_B`: two recorded runs side by side (`crate::report::compare`).

use std::path::PathBuf;

use clap::Args;

use super::{CommandError, Outcome};
use crate::report::compare::{CompareSettings, compare_runs};

/// Flags of `skill-lift compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first run folder (A).
    #[arg(value_name = "RUN_A")]
    pub run_a: PathBuf,
    /// The second run folder (B): the same skill and eval set, on another runner, model or
    /// skill version.
    #[arg(value_name = "RUN_B")]
    pub run_b: PathBuf,
    /// Folder for compare.md, compare.csv, compare-cases.csv, compare.json and compare.html
    /// (default: compare-<A>-vs-<B> beside RUN_A).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not print the Markdown table.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `skill-lift compare`.
pub(super) fn compare(args: CompareArgs) -> Result<Outcome, CommandError> {
    let settings = CompareSettings {
        run_a: args.run_a,
        run_b: args.run_b,
        out: args.out,
        quiet: args.quiet,
    };
    compare_runs(&settings).map_err(CommandError::failed)?;
    Ok(Outcome::Success)
}
