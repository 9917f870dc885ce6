//! `skill-lift report`: re-analyze recorded runs and re-render any subset of their exports,
//! without calling any model (`crate::pipeline::reanalyze`).

use super::{CommandError, Outcome, ReportArgs};
use crate::pipeline::reanalyze::{ReportSettings, parse_formats};

/// Run the command; returns the exit code.
pub(super) fn report(args: ReportArgs) -> Result<Outcome, CommandError> {
    let settings = ReportSettings {
        formats: parse_formats(&args.format).map_err(CommandError::failed)?,
        run_dirs: args.run_dirs,
        out: args.out,
        analysis: args.analysis.overrides(),
        seed: args.seed,
        quiet: args.quiet,
    };
    crate::pipeline::reanalyze::report_runs(&settings).map_err(CommandError::failed)
}
