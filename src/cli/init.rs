//! `skill-lift init [DIR]`: scaffold a skill folder with an eval set, or add an eval set to an
//! existing skill (`crate::scaffold` builds and validates the files; this prints next steps).

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::Args;

use super::CommandError;
use super::Outcome;
use crate::scaffold::{
    CaseSource, EXAMPLE_FILE, draft_evals, evals_from_triggers, example_evals, is_valid_skill_name,
    next_steps, planned_files, write_scaffold,
};

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

/// The folder's own name, also for `.` and `..`.
fn folder_name(dir: &Path) -> Option<String> {
    let absolute = super::run::absolute(dir);
    absolute
        .file_name()
        .and_then(|name| name.to_str())
        .map(str::to_string)
}

/// `skill-lift init`.
pub fn init(args: InitArgs) -> Result<Outcome, CommandError> {
    let dir = &args.dir;
    let existing = dir.join("SKILL.md").is_file();
    let name = if existing {
        let skill = crate::asset::load_skill(dir).map_err(CommandError::input)?;
        if args.name.as_ref().is_some_and(|n| n != &skill.name) {
            return Err(CommandError::input(anyhow!(
                "{}: the skill is named `{}`; --name only names a new skill",
                dir.join("SKILL.md").display(),
                skill.name
            )));
        }
        skill.name
    } else {
        let name = match &args.name {
            Some(name) => name.clone(),
            None => folder_name(dir).unwrap_or_default(),
        };
        if !is_valid_skill_name(&name) {
            return Err(CommandError::input(
                crate::scaffold::ScaffoldError::BadName { name },
            ));
        }
        name
    };
    let default_eval = crate::evalset::default_eval_path(dir);
    if default_eval.is_file() {
        return Err(CommandError::input(anyhow!(
            "{}: the skill already has an eval set; skill-lift init never overwrites (edit it, or move it away first)",
            default_eval.display()
        )));
    }
    let triggers = match &args.from_triggers {
        Some(path) => Some(crate::evalset::load_trigger_set(path).map_err(CommandError::input)?),
        None => None,
    };
    let mined = mine_for_init(&args, &name)?;
    let evals = match (&triggers, existing) {
        _ if mined.is_some() => {
            crate::golden::mine::to_eval_set(mined.as_ref().expect("checked"), Some(&name))
        }
        (Some(triggers), _) => evals_from_triggers(&name, triggers),
        (None, false) => example_evals(&name),
        (None, true) => draft_evals(&name),
    };
    let fixture = triggers.is_none() && mined.is_none() && !dir.join(EXAMPLE_FILE).exists();
    let files = planned_files(&name, !existing, &evals, fixture);
    let written = write_scaffold(dir, &files).map_err(CommandError::input)?;
    crate::reporter::report_written(&written);
    if !existing && folder_name(dir).is_some_and(|folder| folder != name) {
        crate::reporter::report(crate::reporter::Event::SkillFolderNamedOtherwise {
            name: name.clone(),
            folder: folder_name(dir).unwrap_or_default(),
        });
    }
    let source = match (&mined, &triggers) {
        (Some(mined), _) => CaseSource::History {
            cases: mined.cases.len(),
        },
        (None, Some(triggers)) => CaseSource::Triggers {
            triggers,
            file: args.from_triggers.as_deref().unwrap_or(Path::new("")),
        },
        (None, None) if existing => CaseSource::Drafts,
        (None, None) => CaseSource::Example,
    };
    crate::reporter::result(&next_steps(&source, &name, dir));
    Ok(Outcome::Success)
}

/// With `--from-history`: drafts mined from the history for skill `name` (none is nothing to
/// run); else `None`.
fn mine_for_init(
    args: &InitArgs,
    name: &str,
) -> Result<Option<crate::golden::mine::MineReport>, CommandError> {
    let (Some(host), true) = (&args.host, args.from_history) else {
        return Ok(None);
    };
    let history = crate::history::request::HistoryRequest {
        host: host.clone(),
        history_root: args.history_root.clone().or_else(|| {
            std::env::var_os(crate::history::HISTORY_ROOT_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        }),
        since: args.since.clone(),
    };
    let mined = crate::golden::mine::mine_drafts(&history, Some(name), None)
        .map_err(CommandError::input)?;
    if mined.cases.is_empty() {
        return Err(CommandError {
            code: Outcome::NothingToRun,
            error: anyhow!(
                "no turn in the {host} session history used `{name}`: nothing to draft (write cases by hand, or use --from-triggers)"
            ),
        });
    }
    Ok(Some(mined))
}
