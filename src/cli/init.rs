//! `skill-lift init [DIR]`: scaffold a skill folder with an eval set, or add an eval set to an
//! existing skill (`crate::features::scaffold::init`).

use std::path::PathBuf;

use clap::Args;

use super::{CommandError, Outcome};
use crate::features::history::request::HistoryRequest;
use crate::features::scaffold::InitSettings;

/// Flags of `skill-lift init`.
#[derive(Debug, Args)]
#[command(
    after_help = "--from-history drafts the cases from agent session history (the same as `skill-lift golden mine --host H --skill NAME`): turns that used the skill, positive when the user adopted the result, negative when they pushed back; every case `status: draft` with its provenance."
)]
pub struct InitArgs {
    /// The skill folder: created with SKILL.md, evals/evals.json and a fixture file when it has
    /// no SKILL.md; when it has one, only evals/evals.json (and the fixture) are added.
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Skill name for a new SKILL.md (default: the folder's name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Draft the cases from a trigger set (`[{"query", "should_trigger"}]`): should-trigger
    /// queries become positive cases, the others negative cases. They carry no output checks:
    /// add `checks`, or grade with --judge.
    #[arg(long, value_name = "FILE", conflicts_with = "from_history")]
    pub from_triggers: Option<PathBuf>,
    /// Draft the cases from agent session history (turns that used the skill; `golden mine`).
    /// Needs --host.
    #[arg(long, requires = "host")]
    pub from_history: bool,
    /// With --from-history: whose history (claude-code, codex, gemini, opencode).
    #[arg(long, value_name = "HOST", requires = "from_history")]
    pub host: Option<String>,
    /// With --from-history: a folder standing in for the home folder.
    #[arg(long, value_name = "DIR", requires = "from_history")]
    pub history_root: Option<PathBuf>,
    /// With --from-history: only sessions started at or after this date.
    #[arg(long, value_name = "DATE", requires = "from_history")]
    pub since: Option<String>,
}

/// `skill-lift init`.
pub(super) fn init(args: InitArgs) -> Result<Outcome, CommandError> {
    let from_history = (args.host.filter(|_| args.from_history)).map(|host| HistoryRequest {
        host,
        history_root: args.history_root,
        since: args.since,
    });
    let settings = InitSettings {
        dir: args.dir,
        name: args.name,
        from_triggers: args.from_triggers,
        from_history,
    };
    crate::features::scaffold::init(&settings).map_err(CommandError::failed)?;
    Ok(Outcome::Success)
}
