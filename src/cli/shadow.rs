//! `skill-lift shadow`: replay recorded prompts with a new skill staged (`crate::pipeline::shadow`).

use std::path::PathBuf;

use clap::Args;

use super::flag_groups::RunnerArgs;
use super::golden::HistoryArgs;
use super::{CommandError, Outcome};
use crate::features::shadow::DEFAULT_MIN_TERMS;
use crate::pipeline::shadow::ShadowSettings;

/// Flags of `skill-lift shadow`.
#[derive(Debug, Args)]
#[command(
    mut_arg("runners", |arg| super::flag_groups::RunnerArgs::single(arg).help("Runner profile: a name from runners/ or a .toml path. `openai-chat` profiles run in `tools` mode here (activation is not observable with the skill injected)")),
    mut_arg("models", super::flag_groups::RunnerArgs::single),
    after_help = "Eligible turns: the prompt names the skill, the recorded turn used a skill of the same name, or the prompt holds --min-terms of the skill's trigger terms (see docs/history.md). Every replay runs in a fresh throwaway workspace, never in the recorded session's folder. Exit 4 when no recorded turn is eligible."
)]
pub struct ShadowArgs {
    /// The new skill's folder (holds SKILL.md).
    #[arg(value_name = "SKILL_DIR")]
    pub skill_dir: PathBuf,
    #[command(flatten)]
    pub history: HistoryArgs,
    #[command(flatten)]
    pub agent: RunnerArgs,
    /// Replay at most N distinct prompts (the most recent eligible ones).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    /// Least number of the skill's trigger terms a prompt must hold to be eligible.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MIN_TERMS)]
    pub min_terms: usize,
    /// Replay every recorded turn (the replay alone decides whether the skill activates).
    #[arg(long)]
    pub all_turns: bool,
    /// Replay a write-type skill (one that deletes files, sends mail, runs writing commands)
    /// through a runner that can run commands. Replays still run only in throwaway
    /// workspaces; this is consent to the side effects an agent could have outside them.
    #[arg(long)]
    pub allow_writes: bool,
    /// Folder of skills staged beside the new one as competitors (e.g. the host's installed
    /// skills); default: none.
    #[arg(long, value_name = "DIR")]
    pub decoys: Option<PathBuf>,
    /// Where the shadow folder is created.
    #[arg(long, value_name = "DIR", default_value = "shadow-results")]
    pub out: PathBuf,
    /// The shadow folder's name (default: `<time>-<skill>-shadow-<random>`).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Replays in flight at once (default: the profile's `concurrency`).
    #[arg(long, value_name = "N")]
    pub jobs: Option<u32>,
    /// Folder for the throwaway workspaces (default: the system temporary folder). Refused
    /// when it lies inside a recorded session's folder.
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,
    /// Skip the pre-flight check (the runner answers before the first replay).
    #[arg(long)]
    pub no_preflight: bool,
}

/// The shadow run `args` ask for.
fn settings(args: ShadowArgs) -> ShadowSettings {
    ShadowSettings {
        history: args.history.request(),
        runner: args.agent.runner().to_string(),
        model: args.agent.model().map(str::to_string),
        skill_dir: args.skill_dir,
        limit: args.limit,
        min_terms: args.min_terms,
        all_turns: args.all_turns,
        allow_writes: args.allow_writes,
        decoys: args.decoys,
        out: args.out,
        run_id: args.run_id,
        jobs: args.jobs,
        workspace_root: args.workspace_root,
        no_preflight: args.no_preflight,
    }
}

/// `skill-lift shadow`.
pub(super) async fn shadow(args: ShadowArgs) -> Result<Outcome, CommandError> {
    let finished =
        (crate::pipeline::shadow::shadow(&settings(args)).await).map_err(CommandError::failed)?;
    match finished.interrupted {
        true => Ok(Outcome::Interrupted),
        false => Ok(Outcome::Success),
    }
}
