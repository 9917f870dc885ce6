//! `skill-lift golden mine|draft`: flags mapped to `crate::pipeline::golden`'s settings.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{CommandError, Outcome};
use crate::features::history::request::HistoryRequest;
use crate::pipeline::golden::{DraftSettings, MineSettings, draft_cases, mine_to_eval_set};

/// Flags of `skill-lift golden`.
#[derive(Debug, Args)]
pub struct GoldenArgs {
    #[command(subcommand)]
    pub command: GoldenCommand,
}

/// `golden` subcommands.
#[derive(Debug, Subcommand)]
pub enum GoldenCommand {
    /// Draft golden cases from agent session history: turns where a skill was used and the
    /// user adopted the result → positive drafts; pushed back, asked for a rewrite, undid it
    /// or interrupted → negative drafts with the reason. Output: an eval set (evals.json
    /// format), every case `status: draft` with provenance; secrets and home paths redacted.
    Mine(MineArgs),
    /// Ask a model (a judge profile) for draft cases that fill the gaps the author's cases
    /// leave: positive, near-miss negative and edge cases, marked `draft` and `generated`;
    /// EVAL.md and the eval set are never overwritten and keep priority.
    Draft(DraftArgs),
}

/// Where session history is read from (`--host`, `--history-root`, `--since`).
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// Whose history: claude-code, codex, gemini or opencode.
    #[arg(long, value_name = "HOST")]
    pub host: String,
    /// A folder standing in for the home folder (holds .claude/, .codex/, .gemini/,
    /// .local/share/opencode/): fixtures, a copied profile. Default: the real home folder,
    /// with CLAUDE_CONFIG_DIR, CODEX_HOME and XDG_DATA_HOME honoured.
    #[arg(long, value_name = "DIR", env = "SKILL_LIFT_HISTORY_ROOT")]
    pub history_root: Option<PathBuf>,
    /// Only sessions started at or after this date (YYYY-MM-DD or RFC 3339).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
}

impl HistoryArgs {
    /// The history these flags name.
    pub fn request(&self) -> HistoryRequest {
        HistoryRequest {
            host: self.host.clone(),
            history_root: self.history_root.clone(),
            since: self.since.clone(),
        }
    }
}

/// Flags of `skill-lift golden mine`.
#[derive(Debug, Args)]
pub struct MineArgs {
    #[command(flatten)]
    pub history: HistoryArgs,
    /// Only turns that used this skill (and turns that named it without using it).
    #[arg(long, value_name = "NAME")]
    pub skill: Option<String>,
    /// Copy the files each case referenced (from the session's folder, as they are now, at most
    /// 1 MiB each, secrets redacted) beside --out, so `run` stages them. Off by default:
    /// personal files are copied only when you ask.
    #[arg(long, requires = "out")]
    pub include_files: bool,
    /// Write the eval set here (never overwrites); default: print it on stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `skill-lift golden`.
pub(super) async fn golden(args: GoldenArgs) -> Result<Outcome, CommandError> {
    let done = match args.command {
        GoldenCommand::Mine(args) => mine_to_eval_set(&MineSettings {
            history: args.history.request(),
            skill: args.skill,
            include_files: args.include_files,
            out: args.out,
        }),
        GoldenCommand::Draft(args) => {
            let settings = DraftSettings {
                skill_dir: args.skill_dir,
                judge: args.judge,
                count: args.count,
                out: args.out,
            };
            draft_cases(&settings).await
        }
    };
    done.map_err(CommandError::failed)?;
    Ok(Outcome::Success)
}

/// Flags of `skill-lift golden draft`.
#[derive(Debug, Args)]
pub struct DraftArgs {
    /// The skill folder (holds SKILL.md; its EVAL.md and eval set are the author's cases).
    #[arg(value_name = "SKILL_DIR")]
    pub skill_dir: PathBuf,
    /// The model to ask: a judge profile (kind openai-chat or anthropic-messages), by name or
    /// path.
    #[arg(long, value_name = "PROFILE")]
    pub judge: String,
    /// How many cases to ask for.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub count: usize,
    /// Where to write the drafts (never overwrites); default SKILL_DIR/evals/generated.json.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}
