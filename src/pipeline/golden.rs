//! `golden mine` and `golden draft` as workflows: draft cases mined from session history
//! ([`mine_to_eval_set`]) or asked of a judge model ([`draft_cases`]), written as an eval set
//! that never overwrites a file, with the next step printed. The mechanics live in
//! `crate::features::golden`.

use std::path::{Path, PathBuf};

use super::{Ending, ErrorClass, Failure, PipelineError};
use crate::features::golden::mine::{mine_drafts, to_eval_set};
use crate::features::golden::{GoldenError, draft};
use crate::features::history::request::HistoryRequest;
use crate::features::scaffold::json_text;
use crate::values::reporter::{report_written, result, result_line};

/// What `golden mine` reads and writes.
#[derive(Debug, Clone)]
pub(crate) struct MineSettings {
    /// The session history to read.
    pub history: HistoryRequest,
    /// Only turns that used this skill (and turns that named it without using it).
    pub skill: Option<String>,
    /// Copy the files each case referenced beside `out`.
    pub include_files: bool,
    /// Where the eval set is written (never overwritten); `None` prints it on stdout.
    pub out: Option<PathBuf>,
}

/// What `golden draft` asks for.
#[derive(Debug, Clone)]
pub(crate) struct DraftSettings {
    /// The skill folder (its EVAL.md and eval set are the author's cases).
    pub skill_dir: PathBuf,
    /// The judge profile asked, by name or path.
    pub judge: String,
    /// How many cases to ask for (1 to 50).
    pub count: usize,
    /// Where the drafts are written (never overwritten); default
    /// `SKILL_DIR/evals/generated.json`.
    pub out: Option<PathBuf>,
}

/// A failure of `golden mine` or `golden draft`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GoldenCommandError {
    /// `golden mine --out` names an existing file.
    #[error(
        "{}: exists; golden mine never overwrites (choose another --out, or move it away)",
        .0.display()
    )]
    MineOutExists(PathBuf),
    /// The history holds no turn to draft from (the skill mined for, when named).
    #[error(
        "no drafts: no turn in the history read used {}; nothing written (widen --since, check --host and --skill)",
        .0.as_deref().map(|s| format!("`{s}`")).unwrap_or("a skill".into())
    )]
    NoDrafts(Option<String>),
    /// `golden draft --count` is out of range.
    #[error("--count must be between 1 and 50")]
    Count,
    /// `golden draft`'s output file exists (or is the author's EVAL.md).
    #[error(
        "{}: exists; golden draft never overwrites (author cases stay as they are; pass another --out)",
        .0.display()
    )]
    DraftOutExists(PathBuf),
    /// Every draft the model returned repeats an author case (how many it returned).
    #[error("the model's {0} draft(s) all repeat the author's cases; nothing written")]
    AllRepeats(usize),
    /// The written drafts do not load as an eval set; they were removed.
    #[error("the drafts did not load and were not kept: {0}")]
    DraftsDidNotLoad(crate::features::evalset::EvalSetError),
    /// The history, a file read or a write failed.
    #[error(transparent)]
    Golden(#[from] GoldenError),
    /// The skill folder cannot be read.
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    /// The author's eval set cannot be read.
    #[error(transparent)]
    EvalSet(#[from] crate::features::evalset::EvalSetError),
    /// The judge profile cannot be found or read.
    #[error(transparent)]
    Profile(#[from] crate::features::runner::profile::ProfileError),
    /// The judge's credential cannot be read.
    #[error(transparent)]
    Credential(PipelineError),
    /// The model could not be asked, or gave no usable drafts.
    #[error(transparent)]
    Ask(draft::DraftError),
}

impl Failure for GoldenCommandError {
    fn ending(&self) -> Ending {
        match self {
            GoldenCommandError::NoDrafts(_) | GoldenCommandError::AllRepeats(_) => {
                Ending::NothingToRun
            }
            GoldenCommandError::Ask(_) | GoldenCommandError::DraftsDidNotLoad(_) => {
                Ending::InfrastructureError
            }
            GoldenCommandError::Credential(error)
                if error.class() == ErrorClass::Infrastructure =>
            {
                Ending::InfrastructureError
            }
            _ => Ending::InputError,
        }
    }
}

/// `golden mine`: drafts mined from the history, written to `settings.out` (never overwritten;
/// with the referenced files beside it when asked) or printed on stdout. No draft is an error:
/// nothing is printed or written (an empty eval set would read as a success).
pub(crate) fn mine_to_eval_set(settings: &MineSettings) -> Result<(), GoldenCommandError> {
    if let Some(out) = settings.out.as_ref().filter(|out| out.exists()) {
        return Err(GoldenCommandError::MineOutExists(out.clone()));
    }
    let files_dir = match (&settings.out, settings.include_files) {
        (Some(out), true) => Some(
            out.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf(),
        ),
        _ => None,
    };
    let skill = settings.skill.as_deref();
    let mined = mine_drafts(&settings.history, skill, files_dir.as_deref())?;
    if mined.cases.is_empty() {
        return Err(GoldenCommandError::NoDrafts(settings.skill.clone()));
    }
    let text = json_text(&to_eval_set(&mined, skill));
    let Some(out) = &settings.out else {
        result(&text);
        return Ok(());
    };
    write_new(out, &text)?;
    report_written(&[out.to_path_buf()]);
    result_line(&format!(
        "{} draft case(s) in {}. Review them (edit, delete, or remove `\"status\": \"draft\"` to keep), or run them as they are:\n  skill-lift run SKILL_DIR --evals {} --allow-draft",
        mined.cases.len(),
        out.display(),
        out.display()
    ));
    Ok(())
}

/// `golden draft`: ask the judge model for cases that fill the gaps the author's cases leave,
/// write the ones that repeat no author case to a new file, check that it loads as `run` loads
/// it, and print the next step.
pub(crate) async fn draft_cases(settings: &DraftSettings) -> Result<(), GoldenCommandError> {
    if settings.count == 0 || settings.count > 50 {
        return Err(GoldenCommandError::Count);
    }
    let skill_dir = &settings.skill_dir;
    let skill = crate::features::asset::load_skill(skill_dir)?;
    let skill_md_path = skill_dir.join("SKILL.md");
    let skill_md =
        std::fs::read_to_string(&skill_md_path).map_err(GoldenError::io(&skill_md_path))?;
    let out = settings
        .out
        .clone()
        .unwrap_or_else(|| skill_dir.join("evals/generated.json"));
    if out.exists() || out == skill_dir.join(crate::features::golden::evalmd::EVAL_MD) {
        return Err(GoldenCommandError::DraftOutExists(out));
    }
    let existing = crate::features::evalset::default_eval_path(skill_dir);
    let author = if existing.is_file() {
        crate::features::evalset::load_eval_set(&existing, skill_dir)?.cases
    } else {
        Vec::new()
    };
    let profile = crate::features::runner::profile::load_profile(
        &crate::features::runner::profile::resolve_profile_path(&settings.judge)?,
    )?;
    let api_key =
        super::grading::profile_api_key(&profile).map_err(GoldenCommandError::Credential)?;
    let user = draft::user_message(&skill_md, &author, settings.count);
    let drafts = draft::ask(&profile, api_key.as_deref(), &user)
        .await
        .map_err(GoldenCommandError::Ask)?;
    let (name, model) = (&profile.name, &profile.profile.model);
    let (set, dropped) = draft::to_eval_set(&skill.name, &author, &drafts, name, model);
    let kept = set["evals"].as_array().map(Vec::len).unwrap_or(0);
    if kept == 0 {
        return Err(GoldenCommandError::AllRepeats(drafts.len()));
    }
    write_new(&out, &json_text(&set))?;
    // What was written must load the way `run` loads it.
    if let Err(error) = crate::features::evalset::load_eval_set(&out, skill_dir) {
        let _ = std::fs::remove_file(&out);
        return Err(GoldenCommandError::DraftsDidNotLoad(error));
    }
    report_written(std::slice::from_ref(&out));
    result_line(&format!(
        "{kept} generated draft case(s) in {} ({dropped} dropped as repeats of author cases); author cases ({} in EVAL.md / the eval set) are untouched and take priority. Review them, or run them as they are:\n  skill-lift run {} --evals {} --allow-draft",
        out.display(),
        author.len(),
        crate::values::shell::shell_path(skill_dir),
        crate::values::shell::shell_path(&out)
    ));
    Ok(())
}

/// Write `text` to `out`, creating its folder.
fn write_new(out: &Path, text: &str) -> Result<(), GoldenError> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(GoldenError::io(parent))?;
    }
    crate::disk::write(out, text)
        .map_err(crate::disk::DiskError::into_io)
        .map_err(GoldenError::io(out))
}
