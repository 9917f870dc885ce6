//! The model server a runner profile manages (`[server]`): started unless it already answers,
//! its log in the run's folder, dropped (and so stopped) when an interrupt arrives while it
//! starts. One function for every command that runs a profile's agent: `run`, `calibrate`,
//! `triggers`, `shadow`.

use std::path::Path;

use super::PipelineError;
use super::run::InterruptedBeforeTrials;
use crate::features::runner::LoadedProfile;
use crate::features::runner::server::ManagedServer;
use crate::values::reporter::{Event, report};

/// Start `profile`'s managed model server unless it already answers (`log`: its output). Returns
/// the server to stop later (`None`: the profile has none, or one was already running), or
/// [`InterruptedBeforeTrials`] when SIGINT/SIGTERM arrived while waiting (the server started is
/// stopped: dropping its start-up kills its process group).
pub(crate) async fn start_model_server(
    profile: &LoadedProfile,
    log: &Path,
) -> Result<Result<Option<ManagedServer>, InterruptedBeforeTrials>, PipelineError> {
    let Some(config) = &profile.profile.server else {
        return Ok(Ok(None));
    };
    let profile_dir = profile.profile_dir();
    report(Event::CheckingModelServer {
        ready_url: config.ready_url.clone(),
    });
    let server = tokio::select! {
        started = ManagedServer::ensure(
            config,
            profile_dir.as_deref(),
            &profile.profile.base_url,
            log,
        ) => started?,
        _ = crate::features::contain::interrupted() => return Ok(Err(InterruptedBeforeTrials)),
    };
    if server.is_some() {
        report(Event::ModelServerStarted {
            command: config.command.join(" "),
            judge: false,
        });
    } else {
        report(Event::ModelServerInUse {
            ready_url: config.ready_url.clone(),
        });
    }
    Ok(Ok(server))
}
