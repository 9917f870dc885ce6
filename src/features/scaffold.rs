//! `skill-lift init`: scaffolds a skill folder (`SKILL.md`, `evals/evals.json` and a fixture
//! file) whose eval set has every documented kind of case — eight positive cases with output
//! checks, a negative case (`expected_skill: null`) and a case that stages a file: enough for a
//! verdict on the first run — or adds an eval set to an existing skill (one draft case of each
//! kind, or cases drafted from a trigger set, `[{"query", "should_trigger"}]`).
//!
//! Everything written is validated by loading it with the same loaders `run` uses
//! ([`crate::features::asset::load_skill`], [`crate::features::evalset::load_eval_set`]) before it is put in place;
//! nothing existing is overwritten. This module builds texts, writes files and words what to
//! do next ([`next_steps`]); [`init`] is the command's workflow.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::features::evalset::TriggerCase;
use crate::features::golden::mine::MineReport;
use crate::features::history::request::HistoryRequest;

/// The fixture file the file case stages, relative to the skill folder.
pub(crate) const EXAMPLE_FILE: &str = "evals/files/notes.txt";

/// The opening phrase the example skill asks for (short and early: even the 135M local model
/// follows it, so a fresh scaffold measures a real lift).
pub(crate) const EXAMPLE_OPENING: &str = "Status update:";

/// Why a scaffold could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScaffoldError {
    #[error(
        "`{name}` cannot name a skill: use lowercase letters, digits and single hyphens (at most 64 characters, e.g. `my-skill`); pass --name NAME"
    )]
    BadName { name: String },
    #[error(
        "{path}: already exists; skill-lift init never overwrites (remove it or pick another folder)"
    )]
    Exists { path: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the scaffold does not load (a skill-lift bug): {0}")]
    Invalid(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ScaffoldError + '_ {
    move |source| ScaffoldError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether `name` is a valid Agent Skills name: 1–64 of `a-z`, `0-9` and `-`, no leading,
/// trailing or doubled hyphen.
pub(crate) fn is_valid_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The example skill's `SKILL.md`.
pub(crate) fn example_skill_md(name: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: Writes short, friendly status updates about work in progress. Use when someone asks for a status update, a progress note or where a piece of work stands. Every reply starts with \"{EXAMPLE_OPENING}\".\n---\n\n# Status updates\n\nStart every reply with \"{EXAMPLE_OPENING}\", then say in one or two short sentences where the work stands and what happens next.\n\nUser: How is the report going?\nAssistant: {EXAMPLE_OPENING} the draft is written and goes to review tomorrow.\n"
    )
}

/// The example fixture staged by the file case.
pub(crate) fn example_file() -> &'static str {
    "Website redesign notes\n- Home page: done\n- Checkout page: in review\n- Launch: planned for Friday\n"
}

fn opening_check() -> Value {
    json!({"type": "regex", "pattern": format!("^\\s*{}", regex::escape(EXAMPLE_OPENING))})
}

/// The prompts of the example's positive cases: requests for a status update on one piece of
/// work each.
const EXAMPLE_POSITIVE_PROMPTS: [(&str, &str); 8] = [
    (
        "Give me a status update on the website redesign.",
        "where the redesign stands",
    ),
    (
        "Where does the database migration stand?",
        "what happens next with the migration",
    ),
    (
        "How is the mobile app release going?",
        "where the release stands",
    ),
    (
        "What is the status of the quarterly report?",
        "where the report stands",
    ),
    ("Any progress on the login bug?", "where the fix stands"),
    (
        "Give me a progress note on the office move.",
        "where the move stands",
    ),
    (
        "Where are we with the customer survey?",
        "where the survey stands",
    ),
    (
        "How far along is the new onboarding guide?",
        "where the guide stands",
    ),
];

/// The example eval set of the example skill: eight positive cases with checks, a negative case
/// and a file case (skill-creator `evals.json` shape with skill-lift's `checks`) — ten cases,
/// enough for a verdict (at least five scored cases) on the first run.
pub(crate) fn example_evals(name: &str) -> Value {
    let mut evals: Vec<Value> = EXAMPLE_POSITIVE_PROMPTS
        .iter()
        .enumerate()
        .map(|(index, (prompt, says))| {
            let mut checks = vec![opening_check()];
            if index == 1 {
                checks.push(json!({"type": "not_contains", "value": "As an AI"}));
            }
            json!({
                "id": format!("positive-{:02}", index + 1),
                "prompt": prompt,
                "expected_output": format!("A reply that starts with \"{EXAMPLE_OPENING}\" and says {says}."),
                "expected_skill": name,
                "checks": checks
            })
        })
        .collect();
    evals.push(json!({
        "id": "negative-01",
        "prompt": "What is the capital of France?",
        "expected_output": "Paris, without a status update.",
        "expected_skill": null,
        "checks": [
            {"type": "contains", "value": "Paris", "ignore_case": true},
            {"type": "not_contains", "value": EXAMPLE_OPENING}
        ]
    }));
    evals.push(json!({
        "id": "file-01",
        "prompt": format!("Read {EXAMPLE_FILE} and give me a status update on the launch."),
        "expected_output": format!("A reply that starts with \"{EXAMPLE_OPENING}\" and says the launch is planned for Friday."),
        "expected_skill": name,
        "files": [EXAMPLE_FILE],
        "checks": [opening_check()]
    }));
    json!({"skill_name": name, "evals": evals})
}

/// An eval set to fill in for an existing skill whose behaviour skill-lift cannot know: one case
/// of each kind with `REPLACE:` placeholders, all `status: draft` (so `run` refuses them until
/// they are edited and the status removed).
pub(crate) fn draft_evals(name: &str) -> Value {
    json!({
        "skill_name": name,
        "evals": [
            {
                "id": "positive-01",
                "status": "draft",
                "prompt": format!("REPLACE: a request `{name}` should handle"),
                "expected_output": "REPLACE: what a good answer says",
                "expected_skill": name,
                "checks": [{"type": "contains", "value": "REPLACE: a phrase every good answer contains", "ignore_case": true}]
            },
            {
                "id": "negative-01",
                "status": "draft",
                "prompt": format!("REPLACE: a nearby request `{name}` should NOT handle"),
                "expected_output": "REPLACE: what a good answer says without the skill",
                "expected_skill": null
            },
            {
                "id": "file-01",
                "status": "draft",
                "prompt": format!("REPLACE: a request about {EXAMPLE_FILE}"),
                "expected_output": "REPLACE: what a good answer says about the file",
                "expected_skill": name,
                "files": [EXAMPLE_FILE]
            }
        ]
    })
}

/// Golden cases from a trigger set: `should_trigger: true` → a positive case
/// (`expected_skill` = the skill), `false` → a negative case (`expected_skill: null`). Trigger
/// sets carry no expected answers, so the cases have no output checks: add `checks`, or grade
/// with `--judge`.
pub(crate) fn evals_from_triggers(name: &str, triggers: &[TriggerCase]) -> Value {
    let width = triggers.len().to_string().len().max(2);
    let cases: Vec<Value> = triggers
        .iter()
        .enumerate()
        .map(|(index, trigger)| {
            let kind = if trigger.should_trigger {
                "positive"
            } else {
                "negative"
            };
            json!({
                "id": format!("{kind}-{:0width$}", index + 1),
                "prompt": trigger.query,
                "expected_skill": if trigger.should_trigger { json!(name) } else { Value::Null },
                "should_trigger": trigger.should_trigger
            })
        })
        .collect();
    json!({"skill_name": name, "evals": cases})
}

/// One file to write, relative to the skill folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlannedFile {
    pub relative: PathBuf,
    pub text: String,
}

/// Write `files` under `dir` (creating folders), refusing to overwrite anything; then check that
/// `dir` loads as a skill and `evals/evals.json` as its eval set. On a failed check the files
/// written are removed again. Returns the paths written.
pub(crate) fn write_scaffold(
    dir: &Path,
    files: &[PlannedFile],
) -> Result<Vec<PathBuf>, ScaffoldError> {
    for file in files {
        let path = dir.join(&file.relative);
        if path.exists() {
            return Err(ScaffoldError::Exists { path });
        }
    }
    let mut written = Vec::new();
    let result = (|| {
        for file in files {
            let path = dir.join(&file.relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            crate::disk::write(&path, &file.text)
                .map_err(crate::disk::DiskError::into_io)
                .map_err(io(&path))?;
            written.push(path);
        }
        crate::features::asset::load_skill(dir)
            .map_err(|e| ScaffoldError::Invalid(e.to_string()))?;
        crate::features::evalset::load_eval_set(&dir.join("evals/evals.json"), dir)
            .map_err(|e| ScaffoldError::Invalid(e.to_string()))?;
        Ok(())
    })();
    if let Err(error) = result {
        for path in &written {
            let _ = std::fs::remove_file(path);
        }
        return Err(error);
    }
    Ok(written)
}

/// `value` as the pretty JSON text of an eval file (trailing newline).
pub(crate) fn json_text(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("JSON values serialize");
    text.push('\n');
    text
}

/// Where the cases `init` wrote come from (what its next steps say).
pub(crate) enum CaseSource<'a> {
    /// Drafts mined from session history: how many.
    History {
        /// Draft cases written.
        cases: usize,
    },
    /// A trigger set: its cases and the file they came from.
    Triggers {
        /// The trigger cases.
        triggers: &'a [TriggerCase],
        /// The trigger set's file.
        file: &'a Path,
    },
    /// The example skill and its ten cases (a new skill).
    Example,
    /// Three draft cases with placeholders (an existing skill).
    Drafts,
}

/// The files `init` writes into a skill folder: a new skill's example SKILL.md, the eval set
/// `evals`, and the example fixture when `fixture` (the cases are the example's or drafts, and
/// the fixture is not there yet).
pub(crate) fn planned_files(
    name: &str,
    new_skill: bool,
    evals: &Value,
    fixture: bool,
) -> Vec<PlannedFile> {
    let mut files = Vec::new();
    if new_skill {
        files.push(PlannedFile {
            relative: "SKILL.md".into(),
            text: example_skill_md(name),
        });
    }
    files.push(PlannedFile {
        relative: "evals/evals.json".into(),
        text: json_text(evals),
    });
    if fixture {
        files.push(PlannedFile {
            relative: EXAMPLE_FILE.into(),
            text: example_file().to_string(),
        });
    }
    files
}

/// What `init` prints on stdout once the files are written into `dir`: what was written and
/// the command to run next.
pub(crate) fn next_steps(source: &CaseSource<'_>, name: &str, dir: &Path) -> String {
    let shown = crate::values::shell::shell_path(dir);
    let text = match source {
        CaseSource::History { cases } => format!(
            "{cases} draft case(s) from session history in {}: review them (each keeps its provenance), remove `\"status\": \"draft\"` from those you keep, or run them as they are:\n  skill-lift run {shown} --allow-draft",
            dir.join("evals/evals.json").display()
        ),
        CaseSource::Triggers { triggers, file } => {
            let positive = triggers.iter().filter(|t| t.should_trigger).count();
            format!(
                "{} cases from {} ({positive} positive, {} negative). Trigger sets carry no expected answers, so the cases have no output checks: add `checks` to each case (docs/running.md: Checks), or grade with --judge:\n  skill-lift run {shown} --judge local-judge",
                triggers.len(),
                file.display(),
                triggers.len() - positive,
            )
        }
        CaseSource::Example => format!(
            "New skill `{name}` in {shown}: an example skill (replies start with \"{}\") and ten cases — eight positive with checks, a negative case and a file case ({EXAMPLE_FILE}).\nMeasure it now (the local model; set it up once with `skill-lift setup local-model`):\n  skill-lift run {shown}\nThen replace SKILL.md with your skill and evals/evals.json with real cases (docs/eval-formats.md).",
            EXAMPLE_OPENING
        ),
        CaseSource::Drafts => format!(
            "Added {} to `{name}`: three draft cases (positive with a check, negative, file) with REPLACE: placeholders. Edit them, delete each `\"status\": \"draft\"`, then:\n  skill-lift run {shown}",
            dir.join("evals/evals.json").display()
        ),
    };
    format!("{text}\n")
}

/// What `skill-lift init` scaffolds, and from what.
#[derive(Debug, Clone)]
pub(crate) struct InitSettings {
    /// The skill folder (a new skill when it has no `SKILL.md`).
    pub dir: PathBuf,
    /// The name of a new skill (default: the folder's name).
    pub name: Option<String>,
    /// Draft the cases from this trigger set.
    pub from_triggers: Option<PathBuf>,
    /// Draft the cases from this session history (turns that used the skill).
    pub from_history: Option<HistoryRequest>,
}

/// Why `skill-lift init` wrote nothing: an input error, or no drafts from the history
/// ([`InitError::NothingToDraft`], nothing to run).
#[derive(Debug, thiserror::Error)]
pub(crate) enum InitError {
    /// The existing skill cannot be read.
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    /// `--name` differs from the existing skill's name.
    #[error("{}: the skill is named `{name}`; --name only names a new skill", .skill_md.display())]
    NameOfExistingSkill {
        /// The existing `SKILL.md`.
        skill_md: PathBuf,
        /// Its name.
        name: String,
    },
    /// The skill already has an eval set.
    #[error(
        "{}: the skill already has an eval set; skill-lift init never overwrites (edit it, or move it away first)",
        .0.display()
    )]
    EvalSetExists(PathBuf),
    /// The trigger set cannot be read.
    #[error(transparent)]
    Triggers(#[from] crate::features::evalset::EvalSetError),
    /// The session history cannot be read or mined.
    #[error(transparent)]
    History(#[from] crate::features::golden::GoldenError),
    /// No turn of the history used the skill.
    #[error(
        "no turn in the {host} session history used `{name}`: nothing to draft (write cases by hand, or use --from-triggers)"
    )]
    NothingToDraft {
        /// The history's host.
        host: String,
        /// The skill.
        name: String,
    },
    /// The files cannot be written (or the name is not a skill name).
    #[error(transparent)]
    Scaffold(#[from] ScaffoldError),
}

/// Run `skill-lift init`: scaffold a new skill with an example eval set, or add an eval set to
/// an existing skill (drafts, or cases from a trigger set or the session history); report the
/// files written and print the next steps on stdout.
pub(crate) fn init(settings: &InitSettings) -> Result<Vec<PathBuf>, InitError> {
    let dir = &settings.dir;
    let existing = dir.join("SKILL.md").is_file();
    let name = skill_name(settings, existing)?;
    let default_eval = crate::features::evalset::default_eval_path(dir);
    if default_eval.is_file() {
        return Err(InitError::EvalSetExists(default_eval));
    }
    let triggers = match &settings.from_triggers {
        Some(path) => Some(crate::features::evalset::load_trigger_set(path)?),
        None => None,
    };
    let mined = match &settings.from_history {
        Some(history) => Some(mine_for_init(history, &name)?),
        None => None,
    };
    let source = match (&mined, &triggers, &settings.from_triggers) {
        (Some(mined), _, _) => CaseSource::History {
            cases: mined.cases.len(),
        },
        (None, Some(triggers), Some(file)) => CaseSource::Triggers { triggers, file },
        _ if existing => CaseSource::Drafts,
        _ => CaseSource::Example,
    };
    let evals = match (&source, &mined) {
        (_, Some(mined)) => crate::features::golden::mine::to_eval_set(mined, Some(&name)),
        (CaseSource::Triggers { triggers, .. }, _) => evals_from_triggers(&name, triggers),
        (CaseSource::Drafts, _) => draft_evals(&name),
        _ => example_evals(&name),
    };
    let fixture = triggers.is_none() && mined.is_none() && !dir.join(EXAMPLE_FILE).exists();
    let written = write_scaffold(dir, &planned_files(&name, !existing, &evals, fixture))?;
    crate::values::reporter::report_written(&written);
    if let Some(folder) = folder_name(dir).filter(|folder| !existing && *folder != name) {
        crate::values::reporter::report(
            crate::values::reporter::Event::SkillFolderNamedOtherwise {
                name: name.clone(),
                folder,
            },
        );
    }
    crate::values::reporter::result(&next_steps(&source, &name, dir));
    Ok(written)
}

/// The skill's name: an existing skill's own (which `--name` may only repeat), else `--name`
/// or the folder's name, which must be a valid skill name.
fn skill_name(settings: &InitSettings, existing: bool) -> Result<String, InitError> {
    if existing {
        let skill = crate::features::asset::load_skill(&settings.dir)?;
        if settings.name.as_ref().is_some_and(|n| n != &skill.name) {
            return Err(InitError::NameOfExistingSkill {
                skill_md: settings.dir.join("SKILL.md"),
                name: skill.name,
            });
        }
        return Ok(skill.name);
    }
    let name =
        (settings.name.clone()).unwrap_or_else(|| folder_name(&settings.dir).unwrap_or_default());
    if !is_valid_skill_name(&name) {
        return Err(ScaffoldError::BadName { name }.into());
    }
    Ok(name)
}

/// Drafts mined from `history` for skill `name`; none is nothing to draft.
fn mine_for_init(history: &HistoryRequest, name: &str) -> Result<MineReport, InitError> {
    let mined = crate::features::golden::mine::mine_drafts(history, Some(name), None)?;
    if mined.cases.is_empty() {
        return Err(InitError::NothingToDraft {
            host: history.host.clone(),
            name: name.to_string(),
        });
    }
    Ok(mined)
}

/// The folder's own name, also for `.` and `..` (canonical when it exists, else joined to the
/// current folder).
fn folder_name(dir: &Path) -> Option<String> {
    let absolute = dir.canonicalize().unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(dir))
            .unwrap_or(dir.to_path_buf())
    });
    absolute.file_name()?.to_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_example(name: &str) -> Vec<PlannedFile> {
        vec![
            PlannedFile {
                relative: "SKILL.md".into(),
                text: example_skill_md(name),
            },
            PlannedFile {
                relative: "evals/evals.json".into(),
                text: json_text(&example_evals(name)),
            },
            PlannedFile {
                relative: EXAMPLE_FILE.into(),
                text: example_file().to_string(),
            },
        ]
    }

    #[test]
    fn names() {
        for good in ["my-skill", "a", "csv2json", "x-1-y"] {
            assert!(is_valid_skill_name(good), "{good}");
        }
        for bad in [
            "",
            "My-Skill",
            "-a",
            "a-",
            "a--b",
            "a b",
            "a/b",
            "a_b",
            &"x".repeat(65),
        ] {
            assert!(!is_valid_skill_name(bad), "{bad}");
        }
    }

    #[test]
    fn example_scaffold_loads_with_each_kind_of_case() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("my-skill");
        write_scaffold(&skill, &plan_example("my-skill")).unwrap();
        let loaded = crate::features::asset::load_skill(&skill).unwrap();
        assert_eq!(loaded.name, "my-skill");
        let set = crate::features::evalset::load_eval_set(&skill.join("evals/evals.json"), &skill)
            .unwrap();
        let cases = set.runnable_cases(false);
        // Enough cases for a verdict on the first run.
        assert_eq!(cases.len(), 10);
        assert!(cases.iter().any(|c| !c.checks.is_empty()
            && c.expected_skill
                == crate::features::evalset::ExpectedSkill::Named("my-skill".into())));
        assert!(
            cases
                .iter()
                .any(|c| c.expected_skill == crate::features::evalset::ExpectedSkill::None)
        );
        assert!(cases.iter().any(
            |c| matches!(&c.files, crate::features::evalset::CaseFiles::Listed(files) if !files.is_empty())
        ));
        // The checks accept the skill's own example answer and refuse a plain one.
        let positive = cases.iter().find(|c| c.id == "positive-01").unwrap();
        let pattern = positive.checks[0].clone();
        let text = serde_json::to_value(&pattern).unwrap();
        let regex = regex::Regex::new(text["pattern"].as_str().unwrap()).unwrap();
        assert!(regex.is_match("Status update: the draft is written."));
        assert!(!regex.is_match("The draft is written."));
    }

    #[test]
    fn never_overwrites_and_cleans_up_nothing_it_did_not_write() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("evals")).unwrap();
        std::fs::write(dir.path().join("evals/evals.json"), "[]").unwrap();
        let error = write_scaffold(dir.path(), &plan_example("x")).unwrap_err();
        assert!(matches!(error, ScaffoldError::Exists { .. }), "{error}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("evals/evals.json")).unwrap(),
            "[]"
        );
        assert!(!dir.path().join("SKILL.md").exists());
    }

    #[test]
    fn drafts_load_as_drafts_and_triggers_as_cases() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("s");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: s\ndescription: Does s things.\n---\nBody.\n",
        )
        .unwrap();
        write_scaffold(
            &skill,
            &[
                PlannedFile {
                    relative: "evals/evals.json".into(),
                    text: json_text(&draft_evals("s")),
                },
                PlannedFile {
                    relative: EXAMPLE_FILE.into(),
                    text: example_file().to_string(),
                },
            ],
        )
        .unwrap();
        let set = crate::features::evalset::load_eval_set(&skill.join("evals/evals.json"), &skill)
            .unwrap();
        assert_eq!(set.cases.len(), 3);
        assert!(set.runnable_cases(false).is_empty());

        let triggers = vec![
            TriggerCase {
                id: None,
                query: "total this csv".into(),
                should_trigger: true,
                expected_skill: None,
                note: None,
            },
            TriggerCase {
                id: None,
                query: "what time is it".into(),
                should_trigger: false,
                expected_skill: None,
                note: None,
            },
        ];
        let value = evals_from_triggers("s", &triggers);
        let path = dir.path().join("t.json");
        std::fs::write(&path, json_text(&value)).unwrap();
        let set = crate::features::evalset::load_eval_set(&path, &skill).unwrap();
        assert_eq!(set.cases[0].id, "positive-01");
        assert_eq!(set.cases[0].prompt, "total this csv");
        assert_eq!(set.cases[1].id, "negative-02");
        assert_eq!(
            set.cases[1].expected_skill,
            crate::features::evalset::ExpectedSkill::None
        );
    }
}
