//! `skill-lift golden mine` (draft cases from agent session history). Mechanics live in
//! `crate::history` and `crate::golden`; this file holds flags, output and messages.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::{Args, Subcommand};

use super::CommandError;
use super::Outcome;
use crate::golden::mine::{DraftPolarity, MineOptions, MineReport, mine, to_eval_set};
use crate::history::request::HistoryRequest;
use crate::history::{HistoryRoots, ReadReport};

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

    /// Read the history these flags name; a summary is reported on stderr.
    pub fn read(&self) -> Result<(HistoryRoots, ReadReport), CommandError> {
        self.request().read().map_err(CommandError::input)
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

/// Mine drafts from what `args` names, copying files into `files_dir` when given.
pub fn mine_drafts(
    history: &HistoryArgs,
    skill: Option<&str>,
    files_dir: Option<&Path>,
) -> Result<MineReport, CommandError> {
    let (roots, report) = history.read()?;
    let options = MineOptions {
        skill: skill.map(str::to_string),
        copy_files_to: files_dir.map(Path::to_path_buf),
        homes: vec![roots.home().to_path_buf()],
    };
    let mined = mine(&report.sessions, &options).map_err(CommandError::input)?;
    let positive = mined
        .cases
        .iter()
        .filter(|c| c.provenance.polarity == DraftPolarity::Positive)
        .count();
    let signals: Vec<String> = mined
        .signals
        .iter()
        .map(|(signal, count)| format!("{signal} {count}"))
        .collect();
    crate::reporter::report(crate::reporter::Event::DraftsMined {
        activated_turns: mined.activated_turns,
        skill: skill.map(str::to_string),
        drafts: mined.cases.len(),
        positive,
        duplicates: mined.duplicates,
        signals,
    });
    for skipped in &mined.files_skipped {
        crate::reporter::report(crate::reporter::Event::warning(format!(
            "referenced file not copied (missing, over 1 MiB, or another case's file of the same path): {skipped}"
        )));
    }
    Ok(mined)
}

/// `skill-lift golden`.
pub async fn golden(args: GoldenArgs) -> Result<Outcome, CommandError> {
    match args.command {
        GoldenCommand::Mine(args) => golden_mine(args),
        GoldenCommand::Draft(args) => golden_draft(args).await,
    }
}

fn golden_mine(args: MineArgs) -> Result<Outcome, CommandError> {
    if let Some(out) = &args.out
        && out.exists()
    {
        return Err(CommandError::input(anyhow!(
            "{}: exists; golden mine never overwrites (choose another --out, or move it away)",
            out.display()
        )));
    }
    let files_dir = match (&args.out, args.include_files) {
        (Some(out), true) => Some(
            out.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf(),
        ),
        _ => None,
    };
    let mined = mine_drafts(&args.history, args.skill.as_deref(), files_dir.as_deref())?;
    // No drafts: nothing is printed or written (an empty eval set would read as a success).
    if mined.cases.is_empty() {
        return Err(CommandError {
            code: Outcome::NothingToRun,
            error: anyhow!(
                "no drafts: no turn in the history read used {}; nothing written (widen --since, check --host and --skill)",
                args.skill
                    .as_deref()
                    .map(|s| format!("`{s}`"))
                    .unwrap_or("a skill".into())
            ),
        });
    }
    let set = to_eval_set(&mined, args.skill.as_deref());
    let text = crate::scaffold::json_text(&set);
    match &args.out {
        Some(out) => {
            if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| CommandError::input(anyhow!("{}: {e}", parent.display())))?;
            }
            crate::disk::write(out, &text)
                .map_err(crate::disk::DiskError::into_io)
                .map_err(|e| CommandError::input(anyhow!("{}: {e}", out.display())))?;
            crate::reporter::report_written(&[out.to_path_buf()]);
            crate::reporter::result_line(&format!(
                "{} draft case(s) in {}. Review them (edit, delete, or remove `\"status\": \"draft\"` to keep), or run them as they are:\n  skill-lift run SKILL_DIR --evals {} --allow-draft",
                mined.cases.len(),
                out.display(),
                out.display()
            ));
        }
        None => crate::reporter::result(&text),
    }
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

async fn golden_draft(args: DraftArgs) -> Result<Outcome, CommandError> {
    use crate::golden::draft;
    if args.count == 0 || args.count > 50 {
        return Err(CommandError::input(anyhow!(
            "--count must be between 1 and 50"
        )));
    }
    let skill = crate::asset::load_skill(&args.skill_dir).map_err(CommandError::input)?;
    let skill_md_path = args.skill_dir.join("SKILL.md");
    let skill_md = std::fs::read_to_string(&skill_md_path)
        .map_err(|e| CommandError::input(anyhow!("{}: {e}", skill_md_path.display())))?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.skill_dir.join("evals/generated.json"));
    let author_md = args.skill_dir.join(crate::golden::evalmd::EVAL_MD);
    if out.exists() || out == author_md {
        return Err(CommandError::input(anyhow!(
            "{}: exists; golden draft never overwrites (author cases stay as they are; pass another --out)",
            out.display()
        )));
    }
    let existing = crate::evalset::default_eval_path(&args.skill_dir);
    let author = if existing.is_file() {
        crate::evalset::load_eval_set(&existing, &args.skill_dir)
            .map_err(CommandError::input)?
            .cases
    } else {
        Vec::new()
    };
    let path =
        crate::runner::profile::resolve_profile_path(&args.judge).map_err(CommandError::input)?;
    let profile = crate::runner::profile::load_profile(&path).map_err(CommandError::input)?;
    let api_key = super::grading::profile_api_key(&profile)?;
    let user = draft::user_message(&skill_md, &author, args.count);
    let drafts = draft::ask(&profile, api_key.as_deref(), &user)
        .await
        .map_err(CommandError::infrastructure)?;
    let (set, dropped) = draft::to_eval_set(
        &skill.name,
        &author,
        &drafts,
        &profile.name,
        &profile.profile.model,
    );
    let kept = set["evals"].as_array().map(Vec::len).unwrap_or(0);
    if kept == 0 {
        return Err(CommandError {
            code: Outcome::NothingToRun,
            error: anyhow!(
                "the model's {} draft(s) all repeat the author's cases; nothing written",
                drafts.len()
            ),
        });
    }
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| CommandError::input(anyhow!("{}: {e}", parent.display())))?;
    }
    crate::disk::write(&out, crate::scaffold::json_text(&set))
        .map_err(crate::disk::DiskError::into_io)
        .map_err(|e| CommandError::input(anyhow!("{}: {e}", out.display())))?;
    // What was written must load the way `run` loads it.
    if let Err(error) = crate::evalset::load_eval_set(&out, &args.skill_dir) {
        let _ = std::fs::remove_file(&out);
        return Err(CommandError::infrastructure(anyhow!(
            "the drafts did not load and were not kept: {error}"
        )));
    }
    crate::reporter::report_written(&[out.to_path_buf()]);
    crate::reporter::result_line(&format!(
        "{kept} generated draft case(s) in {} ({dropped} dropped as repeats of author cases); author cases ({} in EVAL.md / the eval set) are untouched and take priority. Review them, or run them as they are:\n  skill-lift run {} --evals {} --allow-draft",
        out.display(),
        author.len(),
        crate::shell::shell_path(&args.skill_dir),
        crate::shell::shell_path(&out)
    ));
    Ok(Outcome::Success)
}
