//! `skill-lift report`: re-analyze a recorded run and rewrite its exports.

use anyhow::Context;

use super::{CommandError, ReportArgs};
use crate::record::read_manifest;
use crate::report::{export_run, markdown::summary_markdown};

/// Run the command; returns the exit code.
pub fn report(args: ReportArgs) -> Result<i32, CommandError> {
    let manifest = read_manifest(&args.run_dir).map_err(CommandError::input)?;
    let settings = args.analysis.settings(args.seed.unwrap_or(manifest.seed));
    let summary = export_run(&args.run_dir, &manifest, &settings)
        .with_context(|| format!("exporting {}", args.run_dir.display()))
        .map_err(
            |error| match error.downcast_ref::<crate::record::RecordError>() {
                Some(crate::record::RecordError::BadRecord { .. }) => CommandError::input(error),
                _ => CommandError::infrastructure(error),
            },
        )?;
    if !args.quiet {
        print!("{}", summary_markdown(&summary));
    }
    let code = super::run::exit_code_for(&summary);
    super::run::explain_exit(&summary, code);
    Ok(code)
}
