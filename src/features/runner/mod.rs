//! Runners execute one attempt of one golden case in a staged workspace and return its
//! [`Trajectory`]. One trait, one implementation per runner kind.
//!
//! Runners own the mechanics of talking to a model or agent (HTTP, subprocesses, retries of single
//! requests); the scheduler (`crate::pipeline::execute`) owns concurrency, trial timeouts and recording.

pub mod agent_cli;
pub mod anthropic_messages;
pub mod endpoint_probe;
pub mod http;
pub mod kind;
mod model_api;
pub mod openai_chat;
pub mod outage;
pub mod parsers;
pub mod preflight;
pub mod profile;
pub mod sampling;
pub mod server;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;

use crate::record::{RunnerCapabilities, SkillDelivery};
use crate::values::trajectory::Trajectory;
pub use kind::{BuildError, KindSpec};
pub use profile::{LoadedProfile, RunnerKind, RunnerProfile, SkillMode};
pub use sampling::TrialSeed;

impl SkillDelivery {
    /// How trials order the skills they present under this delivery: balanced where
    /// skill-lift builds the prompt or the tool list (`inject`, `tools`), by name for agent
    /// CLIs, which list the skills folder themselves.
    pub fn skill_ordering(self) -> crate::record::SkillOrdering {
        match self {
            SkillDelivery::Native => crate::record::SkillOrdering::ByName,
            SkillDelivery::Inject | SkillDelivery::Tools => crate::record::SkillOrdering::Balanced,
        }
    }

    /// The recorded name (`native`, `inject`, `tools`), as `skill_mode` in the manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            SkillDelivery::Native => "native",
            SkillDelivery::Inject => "inject",
            SkillDelivery::Tools => "tools",
        }
    }
}

impl RunnerCapabilities {
    /// The capabilities of a runner `profile` describes: its kind's rule
    /// ([`RunnerKind::capabilities`]). Agent CLI kinds discover skills natively and run
    /// commands; the model-API kinds (`openai-chat`, `anthropic-messages`) deliver them as their
    /// `skill_mode` says and have no shell.
    pub fn of_profile(profile: &RunnerProfile) -> Self {
        profile.kind.capabilities(profile)
    }

    /// The capabilities of a run recorded before they were (run-folder format 2 and older),
    /// from the recorded runner kind and skill mode: the one place those names are read back.
    /// A kind this version does not know reads as an agent CLI (native delivery, a shell).
    pub fn of_recorded_names(kind: &str, skill_mode: &str) -> Self {
        match RunnerKind::from_name(kind) {
            Some(kind) => kind.spec().recorded_capabilities(skill_mode),
            None => agent_cli::Command.recorded_capabilities(skill_mode),
        }
    }
}

/// One skill as staged in a trial's workspace.
#[derive(Debug, Clone)]
pub struct StagedSkill {
    /// The skill's name (its folder name in the skills folder).
    pub name: String,
    /// The staged folder inside the workspace.
    pub dir: PathBuf,
    /// Whether this is the target skill (false for decoys).
    pub target: bool,
    /// The skill's `SKILL.md` text when it is staged in memory (no trial folder:
    /// [`crate::features::workspace::StagingNeed::InMemory`]); `dir` is then where the skill would lie
    /// relative to the workspace. `None`: read `dir/SKILL.md`.
    pub skill_md: Option<std::sync::Arc<str>>,
}

/// Everything a runner needs for one attempt.
#[derive(Debug, Clone, Copy)]
pub struct AttemptInput<'a> {
    /// The case prompt.
    pub prompt: &'a str,
    /// The trial's workspace (the agent's working folder). Empty for a trial staged in memory
    /// ([`crate::features::workspace::StagingNeed::InMemory`]: only `inject` mode, which reads no file).
    pub workspace: &'a Path,
    /// The trial's fresh HOME (empty, like `workspace`, for a trial staged in memory).
    pub home: &'a Path,
    /// The skills staged in this arm, in the order the trial presents them (`crate::analysis::skill_order`:
    /// a balanced run's seeded order, else by name).
    pub skills: &'a [StagedSkill],
    /// The requested model.
    pub model: &'a str,
    /// Wall-clock budget for the attempt.
    pub timeout: Duration,
    /// What the attempt's sampling seeds derive from (the run's seed and the trial), for a
    /// profile that asks for seeded sampling ([`sampling`]).
    pub trial_seed: TrialSeed,
}

/// An attempt that produced no usable trajectory.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct AttemptError {
    /// What went wrong, for the trial record.
    pub message: String,
    /// What was recorded before the failure (retries, messages), when anything was.
    pub partial: Option<Box<Trajectory>>,
}

/// A runner kind's implementation.
#[async_trait]
pub trait Runner: Send + Sync {
    /// The kind's recorded name.
    fn kind(&self) -> &'static str;

    /// Where staged skills go, relative to the workspace (e.g. `.agents/skills`).
    fn skills_dir(&self) -> &'static Path;

    /// Execute one attempt. Infrastructure failures that survived the runner's own bounded
    /// retries come back as `Err`; a completed conversation with a wrong answer is `Ok`.
    async fn run_attempt(&self, input: AttemptInput<'_>) -> Result<Trajectory, AttemptError>;
}

/// Build the runner a profile describes (its kind's [`kind::KindSpec::build`]).
pub fn build_runner(
    loaded: &LoadedProfile,
    api_key: Option<String>,
) -> Result<Box<dyn Runner>, BuildError> {
    loaded
        .profile
        .kind
        .spec()
        .build(loaded.profile.clone(), api_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_messages_profiles_build_a_model_api_runner() {
        let profile: RunnerProfile = toml::from_str(
            "kind = \"anthropic-messages\"\nmodel = \"claude-test\"\nskill_mode = \"tools\"\n",
        )
        .unwrap();
        assert!(!profile.kind.is_agent_cli());
        assert_eq!(profile.kind.name(), "anthropic-messages");
        let capabilities = RunnerCapabilities::of_profile(&profile);
        assert_eq!(capabilities.skill_delivery, SkillDelivery::Tools);
        assert!(capabilities.activation_observable);
        assert!(!capabilities.can_run_commands);
        assert_eq!(
            RunnerCapabilities::of_recorded_names("anthropic-messages", "tools"),
            capabilities
        );
        let loaded = LoadedProfile {
            name: "anthropic".into(),
            path: PathBuf::from("runners/anthropic.toml"),
            profile,
        };
        let runner = build_runner(&loaded, None).ok().unwrap();
        assert_eq!(runner.kind(), "anthropic-messages");
        assert_eq!(runner.skills_dir(), Path::new(model_api::SKILLS_DIR));
    }
}
