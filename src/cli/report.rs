//! `skill-lift report`: re-analyze a recorded run and rewrite its exports.

use anyhow::Context;

use super::{CommandError, ReportArgs};
use crate::analysis::{AnalysisSettings, analyze};
use crate::record::{read_manifest, read_trials};
use crate::report::{markdown::summary_markdown, write_exports};

/// Run the command; returns the exit code.
pub fn report(args: ReportArgs) -> Result<i32, CommandError> {
    let manifest = read_manifest(&args.run_dir).map_err(CommandError::input)?;
    let (records, _) =
        read_trials(&args.run_dir.join("trials.jsonl")).map_err(CommandError::input)?;
    let settings = AnalysisSettings {
        resamples: args.bootstrap_resamples,
        seed: args.seed.unwrap_or(manifest.seed),
    };
    let summary = analyze(&manifest, &records, settings);
    write_exports(&args.run_dir, &summary, &records)
        .with_context(|| format!("writing exports into {}", args.run_dir.display()))
        .map_err(CommandError::infrastructure)?;
    if !args.quiet {
        print!("{}", summary_markdown(&summary));
    }
    Ok(super::run::exit_code_for(&summary))
}
