//! `--out s3://BUCKET/PREFIX` for `run`: the run records into a local staging folder as usual
//! and its folder is uploaded after it (`crate::report::object_out::StagedUpload`).

use super::{CommandError, Outcome, RunArgs};
use crate::report::object_out::StagedUpload;

/// `skill-lift run`, uploading the run folder when `--out` is an `s3://` location.
pub(super) async fn run(mut args: RunArgs) -> Result<Outcome, CommandError> {
    let Some(upload) = StagedUpload::start(&args.results.out).await? else {
        return super::run::run(args).await;
    };
    args.results.out = upload.staging().to_path_buf();
    let code = super::run::run(args).await?;
    upload.upload().await?;
    Ok(code)
}
