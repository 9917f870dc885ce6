//! The runner-kind registry: what each kind is (its name, its capabilities, how its runner is
//! built, whether it is an agent CLI and how pre-flight checks it), one [`KindSpec`] per kind in
//! the kind's own file. `RunnerKind::spec` (in `crate::features::runner::profile`) is the one list that
//! maps the profile's `kind` to its spec: a new kind is its file plus one line there.

use std::path::PathBuf;

use super::agent_cli::AgentCli;
use super::{Runner, RunnerProfile};
use crate::record::RunnerCapabilities;

/// Why a runner could not be built from its profile.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The profile's `skills_dir` is absolute or leaves the workspace.
    #[error("skills_dir `{}` must be a relative folder inside the workspace", skills_dir.display())]
    SkillsDirOutsideWorkspace {
        /// The configured folder.
        skills_dir: PathBuf,
    },
    /// The HTTP client could not be built (TLS backend).
    #[error("cannot build HTTP client: {0}")]
    HttpClient(#[from] reqwest::Error),
    /// An agent-CLI runner was asked for a kind that is no agent CLI.
    #[error("runner kind `{kind}` is not an agent CLI")]
    NotAnAgentCli {
        /// The kind's name.
        kind: &'static str,
    },
}

/// What a kind asks of its profile, checked when the profile loads (`crate::features::runner::profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProfileNeeds {
    /// `base_url` must be set: the kind talks to a server it has no default address for.
    pub base_url: bool,
    /// `command`, an argv template, is this kind's own setting: required for it, refused for
    /// every other kind (which take `program` and `extra_args`).
    pub command_template: bool,
}

/// One runner kind's behaviour. Agent CLI kinds get it from their [`AgentCli`] implementation;
/// the model-API kinds implement it beside their runners.
pub trait KindSpec: Sync {
    /// The kind's name as written in profiles and recorded in manifests.
    fn name(&self) -> &'static str;

    /// The kind's agent CLI description, when it drives an agent CLI process (`None` for the
    /// model-API kinds).
    fn agent_cli(&self) -> Option<&dyn AgentCli> {
        None
    }

    /// What a runner of this kind, configured by `profile`, can do and what the harness can
    /// observe of it.
    fn capabilities(&self, profile: &RunnerProfile) -> RunnerCapabilities;

    /// What the kind asks of its profile.
    fn profile_needs(&self) -> ProfileNeeds;

    /// Whether a profile of this kind can be an LLM judge (`--judge`): a model API the judge
    /// can ask directly.
    fn can_judge(&self) -> bool {
        false
    }

    /// The capabilities of a run recorded before they were (run-folder format 2 and older),
    /// from the recorded skill mode.
    fn recorded_capabilities(&self, skill_mode: &str) -> RunnerCapabilities;

    /// Build the runner `profile` describes; `api_key` is the value of its `api_key_env`.
    fn build(
        &self,
        profile: RunnerProfile,
        api_key: Option<String>,
    ) -> Result<Box<dyn Runner>, BuildError>;
}

/// The capabilities of the model-API kinds (`openai-chat`, `anthropic-messages`): skills reach
/// the model as the profile's `skill_mode` says, activation is observable unless every body is
/// in the prompt, and there is no shell.
pub(crate) fn model_api_capabilities(skill_mode: super::SkillMode) -> RunnerCapabilities {
    let skill_delivery = match skill_mode {
        super::SkillMode::Inject => crate::record::SkillDelivery::Inject,
        super::SkillMode::Tools => crate::record::SkillDelivery::Tools,
    };
    RunnerCapabilities {
        skills_dir: PathBuf::from(super::model_api::SKILLS_DIR),
        skill_delivery,
        activation_observable: skill_delivery != crate::record::SkillDelivery::Inject,
        can_run_commands: false,
    }
}

/// [`model_api_capabilities`] from a recorded skill mode name (`inject`, `tools`).
pub(crate) fn model_api_recorded_capabilities(skill_mode: &str) -> RunnerCapabilities {
    let mut capabilities = model_api_capabilities(super::SkillMode::Inject);
    match skill_mode {
        "inject" => {}
        "tools" => capabilities = model_api_capabilities(super::SkillMode::Tools),
        // A model-API run recorded with another mode never existed; kept as before: native
        // delivery, observable, still no shell.
        _ => {
            capabilities.skill_delivery = crate::record::SkillDelivery::Native;
            capabilities.activation_observable = true;
        }
    }
    capabilities
}

/// A runner constructor: the profile and the value of its `api_key_env`.
pub(crate) type BuildFn = fn(RunnerProfile, Option<String>) -> Result<Box<dyn Runner>, BuildError>;

/// The kind spec of the model-API runner kinds, generic over the runner's constructor.
pub(crate) struct ModelApiKind {
    /// The kind's name.
    pub name: &'static str,
    /// Builds the runner.
    pub build: BuildFn,
    /// Whether profiles must set `base_url` (no default server).
    pub needs_base_url: bool,
}

impl KindSpec for ModelApiKind {
    fn name(&self) -> &'static str {
        self.name
    }

    fn capabilities(&self, profile: &RunnerProfile) -> RunnerCapabilities {
        model_api_capabilities(profile.skill_mode)
    }

    fn recorded_capabilities(&self, skill_mode: &str) -> RunnerCapabilities {
        model_api_recorded_capabilities(skill_mode)
    }

    fn profile_needs(&self) -> ProfileNeeds {
        ProfileNeeds {
            base_url: self.needs_base_url,
            command_template: false,
        }
    }

    /// A model API answers a judge's request directly.
    fn can_judge(&self) -> bool {
        true
    }

    fn build(
        &self,
        profile: RunnerProfile,
        api_key: Option<String>,
    ) -> Result<Box<dyn Runner>, BuildError> {
        (self.build)(profile, api_key)
    }
}
