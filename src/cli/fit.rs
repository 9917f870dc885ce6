//! `skill-lift lint` and `skill-lift env`: flags mapped to `crate::features::skill_fit::workflow`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{CommandError, Outcome};
use crate::features::skill_fit::workflow::{
    EnvSettings, FitCommandError, LintSettings, check_environment, lint_skills,
};

/// Output format of `lint` and `env`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A table for people.
    Text,
    /// One JSON document on stdout.
    Json,
}

/// Flags of `skill-lift lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    /// Skill folders (each holds SKILL.md). With --against a state folder and no folder here:
    /// every skill its registries list.
    #[arg(value_name = "SKILL_DIR")]
    pub skill_dirs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: OutputFormat,
    /// Put each skill's lint score beside its measured lift (same name and fingerprint) from a
    /// state folder (baseline-results.json), a run folder or a results folder, and report
    /// Spearman's rho with a 95% interval over the skills that have both.
    #[arg(long, value_name = "RESULTS_OR_STATE")]
    pub against: Option<PathBuf>,
    /// Warnings fail the lint too (exit 1).
    #[arg(long)]
    pub deny_warnings: bool,
    /// Body budget in estimated tokens (characters/4 for ASCII, 1 per other character).
    #[arg(long, value_name = "N", default_value_t = crate::features::skill_fit::lint::DEFAULT_MAX_BODY_TOKENS)]
    pub max_body_tokens: usize,
}

/// Flags of `skill-lift env`.
#[derive(Debug, Args)]
#[command(
    mut_arg("runners", |arg| super::flag_groups::RunnerArgs::single(arg).default_value(None).help("Runner profile whose model limit the skill's size is checked against (default: local, when it can be found)")),
    mut_arg("models", |arg| super::flag_groups::RunnerArgs::single(arg).help("Model id (overrides the profile's, for the context limit)"))
)]
pub struct EnvArgs {
    /// The skill folder (holds SKILL.md).
    #[arg(value_name = "SKILL_DIR")]
    pub skill_dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: OutputFormat,
    #[command(flatten)]
    pub agent: super::flag_groups::RunnerArgs,
    /// The model's context window in tokens (overrides the profile and the known limits).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub context_limit: Option<u64>,
    /// Python interpreter to check imports against (default: python3, then python, in PATH).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
}

/// Run `skill-lift lint`.
pub(super) fn lint(args: LintArgs) -> Result<Outcome, CommandError> {
    gate(lint_skills(&LintSettings {
        skill_dirs: args.skill_dirs,
        json: args.format == OutputFormat::Json,
        against: args.against,
        deny_warnings: args.deny_warnings,
        max_body_tokens: args.max_body_tokens,
    }))
}

/// Run `skill-lift env`.
pub(super) fn env(args: EnvArgs) -> Result<Outcome, CommandError> {
    gate(check_environment(&EnvSettings {
        json: args.format == OutputFormat::Json,
        runner: args.agent.given_runner().map(str::to_string),
        model: args.agent.model().map(str::to_string),
        skill_dir: args.skill_dir,
        context_limit: args.context_limit,
        python: args.python,
    }))
}

/// Checks that passed are a success, others a failed gate; a report that cannot be rendered is
/// an infrastructure error, any other failure an input error.
fn gate(passed: Result<bool, FitCommandError>) -> Result<Outcome, CommandError> {
    match passed {
        Ok(true) => Ok(Outcome::Success),
        Ok(false) => Ok(Outcome::GateFailed),
        Err(error @ FitCommandError::Serialize(..)) => Err(CommandError::infrastructure(error)),
        Err(error) => Err(CommandError::input(error)),
    }
}
