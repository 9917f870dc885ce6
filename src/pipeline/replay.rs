//! The runner of the commands that replay prompts outside a run (`triggers`, `shadow`): the
//! profile's model server when it does not answer, the pre-flight check, the runner itself
//! ([`start_replay_runner`]), and the server stopped afterwards ([`stop_replay_server`]).
//! Failures are typed ([`ReplayRunnerError`]); the command line maps each to an exit code.

use std::path::Path;

use super::PipelineError;
use crate::reporter::{Event, report};
use crate::runner::preflight::PreflightError;
use crate::runner::profile::LoadedProfile;
use crate::runner::server::ManagedServer;
use crate::runner::{BuildError, Runner, build_runner};

/// Why the replay runner could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplayRunnerError {
    /// An interrupt arrived while the model server started; it was stopped.
    #[error("interrupted while waiting for the model server; it was stopped")]
    Interrupted,
    /// The model server could not be started.
    #[error(transparent)]
    Server(#[from] PipelineError),
    /// The pre-flight check failed; nothing was replayed.
    #[error("{error}; nothing was {not_done} (skip the check with --no-preflight)")]
    Preflight {
        /// What the check found.
        error: PreflightError,
        /// What was not done ("run", "replayed").
        not_done: &'static str,
    },
    /// The runner could not be built from its profile.
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// Start what the replays of `profile` need under `dir`: its model server when it does not
/// answer (its log in `dir/server.log`), the pre-flight check unless `no_preflight`, and the
/// runner. `not_done` completes the failed check's message ("nothing was {not_done}"). Stop the
/// returned server with [`stop_replay_server`] once the replays are done; on an error, what was
/// started is stopped already.
pub async fn start_replay_runner(
    profile: &LoadedProfile,
    api_key: Option<String>,
    dir: &Path,
    no_preflight: bool,
    not_done: &'static str,
) -> Result<(Box<dyn Runner>, Option<ManagedServer>), ReplayRunnerError> {
    let server = match super::start_model_server(profile, &dir.join("server.log")).await? {
        Ok(server) => server,
        Err(_) => return Err(ReplayRunnerError::Interrupted),
    };
    if !no_preflight {
        match crate::runner::preflight::check(profile, api_key.as_deref()).await {
            Ok(line) => report(Event::PreflightPassed {
                profile: profile.name.clone(),
                line,
            }),
            Err(error) => {
                stop_replay_server(server).await;
                crate::record::redact_logs_in(dir);
                return Err(ReplayRunnerError::Preflight { error, not_done });
            }
        }
    }
    match build_runner(profile, api_key) {
        Ok(runner) => Ok((runner, server)),
        Err(error) => {
            stop_replay_server(server).await;
            Err(ReplayRunnerError::Build(error))
        }
    }
}

/// Stop a model server [`start_replay_runner`] started (nothing when it found one running).
pub async fn stop_replay_server(server: Option<ManagedServer>) {
    if let Some(mut server) = server {
        server.stop().await;
    }
}
