//! The runner of the commands that replay prompts outside a run (`triggers`, `shadow`): the
//! profile's model server when it does not answer, the pre-flight check, the runner itself
//! ([`start_replay_runner`]), and the server stopped afterwards ([`stop_replay_server`]).
//! Failures are typed ([`ReplayRunnerError`]); the command line maps each to an exit code.

use std::path::Path;

use super::{Failure, PipelineError};
use crate::features::runner::preflight::PreflightError;
use crate::features::runner::profile::LoadedProfile;
use crate::features::runner::profile::{ProfileError, load_profile, resolve_profile_path};
use crate::features::runner::server::ManagedServer;
use crate::features::runner::{BuildError, Runner, SkillMode, build_runner};
use crate::values::reporter::{Event, report};

/// Why a runner cannot serve a command that must see which skill the agent activated
/// (`triggers`, `shadow`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ObservingError {
    /// The profile cannot be found or read (an input error).
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The runner's model calls no tools: nothing to measure.
    #[error(
        "{}: runner `{name}` cannot call tools (its profile says `tool_calls = false`), so no skill activation can be observed in {unit} and {command} has nothing to measure; use a runner whose model calls tools (e.g. --runner openai, --runner anthropic, an agent CLI)",
        .path.display()
    )]
    NoToolCalls {
        /// The profile's file.
        path: std::path::PathBuf,
        /// The profile's name.
        name: String,
        /// The command (`triggers`, `shadow`).
        command: &'static str,
        /// What it replays ("an attempt", "a replay").
        unit: &'static str,
    },
    /// The runner cannot show which skill was activated: nothing to measure.
    #[error(
        "{}: runner `{name}` cannot show which skill {unit} activated, so {command} has nothing to measure",
        .path.display()
    )]
    ActivationNotObservable {
        /// The profile's file.
        path: std::path::PathBuf,
        /// The profile's name.
        name: String,
        /// The command (`triggers`, `shadow`).
        command: &'static str,
        /// What it replays ("an attempt", "a replay").
        unit: &'static str,
    },
}

/// The profile `runner` (a name from a runners folder or a `.toml` path) for a `command` that
/// must see which skill the agent activated: a model API profile that injects every skill runs
/// in `tools` mode instead (reported), a runner that still cannot show activations is refused,
/// naming what it could not show in one `unit` ("an attempt", "a replay").
pub(crate) fn observing_profile(
    runner: &str,
    command: &'static str,
    unit: &'static str,
) -> Result<LoadedProfile, ObservingError> {
    let mut profile = load_profile(&resolve_profile_path(runner)?)?;
    if !profile.profile.kind.is_agent_cli() && profile.profile.skill_mode == SkillMode::Inject {
        report(Event::ToolsModeToObserve {
            runner: profile.name.clone(),
            command,
        });
        profile.profile.skill_mode = SkillMode::Tools;
    }
    if !profile.profile.tool_calls {
        return Err(ObservingError::NoToolCalls {
            path: profile.path.clone(),
            name: profile.name.clone(),
            command,
            unit,
        });
    }
    if !crate::record::RunnerCapabilities::of_profile(&profile.profile).activation_observable {
        return Err(ObservingError::ActivationNotObservable {
            path: profile.path.clone(),
            name: profile.name.clone(),
            command,
            unit,
        });
    }
    Ok(profile)
}

/// Why the replay runner could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplayRunnerError {
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

impl Failure for ReplayRunnerError {
    /// Interrupted while the server started, the model server's own class of failure, else an
    /// infrastructure error.
    fn ending(&self) -> super::Ending {
        match self {
            ReplayRunnerError::Interrupted => super::Ending::Interrupted,
            ReplayRunnerError::Server(error) => error.ending(),
            _ => super::Ending::InfrastructureError,
        }
    }
}

/// Start what the replays of `profile` need under `dir`: its model server when it does not
/// answer (its log in `dir/server.log`), the pre-flight check unless `no_preflight`, and the
/// runner. `not_done` completes the failed check's message ("nothing was {not_done}"). Stop the
/// returned server with [`stop_replay_server`] once the replays are done; on an error, what was
/// started is stopped already.
pub(crate) async fn start_replay_runner(
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
        match crate::features::runner::preflight::check(profile, api_key.as_deref()).await {
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
pub(crate) async fn stop_replay_server(server: Option<ManagedServer>) {
    if let Some(mut server) = server {
        server.stop().await;
    }
}
