//! `skill-lift runners` (which runner profiles `--runner NAME` can name, and from where),
//! `skill-lift setup local-model` and `skill-lift serve local-model` (the zero-key local model,
//! from any folder: `crate::features::local_model`).

use clap::{Args, Subcommand};

use super::{CommandError, Outcome};
use crate::features::local_model::SetupEnd;
use crate::features::runner::profile::{print_profiles, show_profile};

/// Flags of `skill-lift runners`.
#[derive(Debug, Args)]
pub struct RunnersArgs {
    /// Print this profile's TOML (as `--runner NAME` would read it) instead of the list; copy
    /// it into runners/NAME.toml to customize a built-in profile.
    #[arg(value_name = "NAME|FILE")]
    pub name: Option<String>,
    /// Print the list as JSON.
    #[arg(long, conflicts_with = "name")]
    pub json: bool,
}

/// `skill-lift runners`.
pub(super) fn runners(args: RunnersArgs) -> Result<Outcome, CommandError> {
    match &args.name {
        Some(name) => show_profile(name).map_err(CommandError::input)?,
        None => print_profiles(args.json),
    }
    Ok(Outcome::Success)
}

/// Flags of `skill-lift setup`.
#[derive(Debug, Args)]
pub struct SetupArgs {
    #[command(subcommand)]
    pub what: SetupTarget,
}

/// What `setup` sets up.
#[derive(Debug, Subcommand)]
pub enum SetupTarget {
    /// The zero-key local model (SmolLM2-135M-Instruct with llama-cpp-python[server]) in a
    /// cached Python environment under $SKILL_LIFT_CACHE (default ~/.cache/skill-lift): about
    /// 5 minutes the first time (llama.cpp is compiled), instant afterwards. Needs Python 3.9+
    /// with venv and a C/C++ compiler. Interrupted (Ctrl-C, SIGTERM), it stops with every
    /// process it started, and the next setup starts over.
    LocalModel,
}

/// `skill-lift setup local-model`.
pub(super) async fn setup(args: SetupArgs) -> Result<Outcome, CommandError> {
    let SetupTarget::LocalModel = args.what;
    match crate::features::local_model::setup().await {
        Ok(SetupEnd::Ready) => Ok(Outcome::Success),
        Ok(SetupEnd::MissingPrerequisite) => Ok(Outcome::InputError),
        Ok(SetupEnd::Interrupted) => Ok(Outcome::Interrupted),
        Err(error) => Err(CommandError::infrastructure(error)),
    }
}

/// Flags of `skill-lift serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(subcommand)]
    pub what: ServeTarget,
}

/// What `serve` serves.
#[derive(Debug, Subcommand)]
pub enum ServeTarget {
    /// Serve the local model on 127.0.0.1 with an OpenAI-compatible API, in the foreground
    /// (the `local` and `local-judge` profiles start this themselves when it is not running).
    LocalModel {
        /// Port on 127.0.0.1.
        #[arg(long, default_value_t = crate::features::local_model::DEFAULT_PORT)]
        port: u16,
    },
}

/// `skill-lift serve local-model`: replaces this process with the server.
pub(super) fn serve(args: ServeArgs) -> Result<Outcome, CommandError> {
    let ServeTarget::LocalModel { port } = args.what;
    let error = crate::features::local_model::serve(port);
    Err(CommandError::infrastructure(error))
}
