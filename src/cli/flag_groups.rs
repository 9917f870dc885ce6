//! The flag groups several commands share, each declared once and flattened into the
//! commands' flags (`#[command(flatten)]`), each environment variable bound in one place:
//! [`RunnerArgs`] (`--runner`, `--model`; `SKILL_LIFT_RUNNER`), [`ResultsArgs`] (`--out` of the
//! commands that create result folders; `SKILL_LIFT_RESULTS`) and [`StateArgs`] (`--state`;
//! `SKILL_LIFT_HOME`, read by `crate::features::registry::state::state_dir_from_env`).
//!
//! A command adapts a group with `#[command(mut_arg(…))]`: its own help text for `--runner`, a
//! single `--runner` (`ArgAction::Set`) where a matrix makes no sense, no default runner for
//! `env`, `conflicts_with = "resume"` for `run`.

use std::path::{Path, PathBuf};

use clap::Args;

use super::CommandError;

/// The runner when no `--runner` is given and `SKILL_LIFT_RUNNER` is not set.
pub(super) const DEFAULT_RUNNER: &str = "local";

/// `--runner` and `--model`. `run` and `plan` accept each repeated (a runner × model matrix);
/// the commands that measure one runner take one of each (`ArgAction::Set`, see
/// [`RunnerArgs::single`]).
#[derive(Debug, Args, Clone)]
pub struct RunnerArgs {
    /// Runner profile: a name from runners/ or a .toml path.
    #[arg(
        long = "runner",
        value_name = "NAME|FILE",
        env = "SKILL_LIFT_RUNNER",
        default_value = DEFAULT_RUNNER
    )]
    pub runners: Vec<String>,
    /// Model id (overrides the profile's `model`).
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
}

/// `--out` of the commands that create a result folder in a results folder (`run`, `calibrate`,
/// `triggers`, `vet`).
#[derive(Debug, Clone, Args)]
pub struct ResultsArgs {
    /// Folder that receives result folders.
    #[arg(
        long,
        value_name = "DIR",
        env = "SKILL_LIFT_RESULTS",
        default_value = "results"
    )]
    pub out: PathBuf,
}

/// `--state`: the state folder (registries, `hosts.json`, the baseline and trial stores, the
/// judge cache, calibrations). `SKILL_LIFT_HOME` is read where the folder is resolved
/// (`crate::features::registry::state::state_dir_from_env`), so every command expands it the same way.
#[derive(Debug, Clone, Args)]
pub struct StateArgs {
    /// State folder (default: $SKILL_LIFT_HOME, else ~/.skill-lift).
    #[arg(long, value_name = "DIR", global = true)]
    pub state: Option<PathBuf>,
}

impl StateArgs {
    /// The `--state` flag as given.
    pub fn flag(&self) -> Option<&Path> {
        self.state.as_deref()
    }

    /// The resolved state folder: `--state`, else `SKILL_LIFT_HOME`, else `~/.skill-lift`.
    pub fn dir(&self) -> Result<PathBuf, CommandError> {
        crate::features::registry::state::state_dir_from_env(self.flag())
            .map_err(CommandError::input)
    }
}

impl RunnerArgs {
    /// Makes `--runner` and `--model` single-valued (a repeat is a clap usage error), for the
    /// commands that measure one runner: `#[command(mut_arg("runner", RunnerArgs::single))]`.
    pub fn single(arg: clap::Arg) -> clap::Arg {
        arg.action(clap::ArgAction::Set)
    }

    /// The runner of a single run: the first `--runner`, else [`DEFAULT_RUNNER`].
    pub fn runner(&self) -> &str {
        self.runners
            .first()
            .map(String::as_str)
            .unwrap_or(DEFAULT_RUNNER)
    }

    /// The runner when one was given (`--runner` or `SKILL_LIFT_RUNNER`), for a command
    /// without a default runner (`env`).
    pub fn given_runner(&self) -> Option<&str> {
        self.runners.first().map(String::as_str)
    }

    /// The model of a single run (the first `--model`), if one is given.
    pub fn model(&self) -> Option<&str> {
        self.models.first().map(String::as_str)
    }
}
