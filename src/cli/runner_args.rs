//! The runner and model flags of the commands that drive an agent on their own (`triggers`,
//! `vet`, `shadow`): one flattened [`RunnerArgs`], resolved to a profile in one place. Each
//! command keeps its own help text for `--runner` (`#[command(mut_arg("runner", …))]`).

use anyhow::anyhow;
use clap::Args;

use super::CommandError;
use super::Outcome;
use crate::runner::profile::{load_profile, resolve_profile_path};
use crate::runner::{LoadedProfile, SkillMode};

/// `--runner` and `--model`.
#[derive(Debug, Args, Clone)]
pub struct RunnerArgs {
    /// Runner profile: a name from runners/ or a .toml path.
    #[arg(
        long,
        value_name = "NAME|FILE",
        env = "SKILL_LIFT_RUNNER",
        default_value = "local"
    )]
    pub runner: String,
    /// Model id (overrides the profile's `model`).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
}

impl RunnerArgs {
    /// The `--runner` profile, loaded (errors name the profile; exit 2).
    pub fn profile(&self) -> Result<LoadedProfile, CommandError> {
        let path = resolve_profile_path(&self.runner).map_err(CommandError::input)?;
        load_profile(&path).map_err(CommandError::input)
    }

    /// The model the runs use: `--model`, else the profile's.
    pub fn model_of(&self, profile: &LoadedProfile) -> String {
        self.model
            .clone()
            .unwrap_or_else(|| profile.profile.model.clone())
    }

    /// The `--runner` profile for a command that must see which skill the agent activated
    /// (`command`: `triggers`, `shadow`): a model API profile that injects every skill runs in
    /// `tools` mode instead (said on stderr); a runner that still cannot show activations is
    /// refused, naming what it could not show (`unit`: "an attempt", "a replay").
    pub fn observing_profile(
        &self,
        command: &str,
        unit: &str,
    ) -> Result<LoadedProfile, CommandError> {
        let mut profile = self.profile()?;
        if !profile.profile.kind.is_agent_cli() && profile.profile.skill_mode == SkillMode::Inject {
            crate::errln!(
                "skill-lift: runner `{}` injects every skill into the prompt, where activation cannot be observed; {command} runs it in `tools` mode (activate_skill, read_file)",
                profile.name
            );
            profile.profile.skill_mode = SkillMode::Tools;
        }
        if !profile.profile.tool_calls {
            return Err(CommandError {
                code: Outcome::NothingToRun,
                error: anyhow!(
                    "{}: runner `{}` cannot call tools (its profile says `tool_calls = false`), so no {unit} can activate a skill and {command} has nothing to measure; use a runner whose model calls tools (e.g. --runner openai, --runner anthropic, an agent CLI)",
                    profile.path.display(),
                    profile.name
                ),
            });
        }
        if !crate::runner::RunnerCapabilities::of_profile(&profile.profile).activation_observable {
            return Err(CommandError::input(anyhow!(
                "{}: runner `{}` cannot show which skill {unit} activated",
                profile.path.display(),
                profile.name
            )));
        }
        Ok(profile)
    }
}
