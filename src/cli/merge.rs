//! `skill-lift merge`: the shard folders of one run (or of a matrix run) merged into a new run
//! folder and analyzed as a whole (`crate::pipeline::merge`); `s3://` arguments are downloaded
//! first (`crate::report::object_out::download_arguments`).

use super::{CommandError, MergeArgs, Outcome};
use crate::pipeline::merge::MergeSettings;

/// Run the command: download, merge, analyze.
pub(super) async fn merge(args: MergeArgs) -> Result<Outcome, CommandError> {
    let downloaded =
        crate::report::object_out::download_arguments(&args.shard_dirs, &args.out).await?;
    let settings = MergeSettings {
        shard_dirs: downloaded.folders.clone(),
        out: args.out,
        run_id: args.run_id,
        allow_missing: args.allow_missing,
        analysis: args.analysis.overrides(),
        quiet: args.quiet,
    };
    crate::pipeline::merge::merge(&settings).map_err(CommandError::failed)
}
