//! Eval sets: every accepted golden-case format (agentskills / skill-creator `evals.json`, the
//! ACES extensions, the legacy flat list, `{"cases": [...]}`, BenchFlow, dotnet/skills Vally
//! `eval.yaml` ([`vally`]), SkillsBench / Harbor task folders ([`harbor`])) read into one
//! [`GoldenCase`] model, and trigger sets ([`TriggerCase`]) recognised and validated. See
//! `docs/eval-formats.md`.
//!
//! Errors name the file and the JSON path (`evals[3].prompt`), or the line for syntax errors.
//! Fields skill-lift does not use are reported once per file ([`EvalSetWarning`]), never
//! dropped silently. This module does not stage files; it only resolves and validates their
//! paths (and refuses a fixture that would copy the target skill into the baseline).

pub(crate) mod contract;
pub mod harbor;
pub mod layout;
pub mod vally;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::features::asset::fingerprint::sha256_digest;
use crate::features::grade::checks::Check;
use crate::record::validate_id;

/// What skill a case expects the agent to use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "skill", rename_all = "snake_case")]
pub enum ExpectedSkill {
    /// The field is absent.
    Unspecified,
    /// `expected_skill: null`: a negative case; the target must not be activated.
    None,
    /// The named skill should be used.
    Named(String),
}

/// Whether a case is active or a draft (drafts are skipped unless `--allow-draft`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    #[default]
    Active,
    Draft,
}

/// The fixtures a case stages into the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "paths", rename_all = "snake_case")]
pub enum CaseFiles {
    /// `files` omitted: the whole `evals/files/` folder, when it exists.
    Omitted,
    /// Explicit list (possibly empty; `null` reads as empty). Each entry is resolved to a
    /// source path and the path it gets inside the workspace.
    Listed(Vec<CaseFile>),
}

/// One fixture file or folder of a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseFile {
    /// Absolute source path (checked to exist and to stay inside the eval folder).
    pub source: PathBuf,
    /// Relative destination inside the workspace.
    pub destination: PathBuf,
}

/// One golden case, whatever format it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldenCase {
    /// Case id (integers canonicalised to strings); unique in the set.
    pub id: String,
    /// The task prompt (`prompt` or `question`).
    pub prompt: String,
    /// Expected output (`expected_output` or `ground_truth`), for judges and reports.
    pub expected_output: Option<String>,
    /// How `expected_output` is compared with the answer (`expected_output_match`); `None`
    /// means the run's default (`--expected-output-match`, default `judge`).
    pub expected_output_match: Option<crate::record::OutputMatch>,
    /// Natural-language assertions (`assertions`, `expectations` or `expected_behavior`), graded
    /// by LLM judges.
    pub assertions: Vec<String>,
    /// Deterministic checks (`checks`).
    pub checks: Vec<Check>,
    /// `expected_skill`.
    pub expected_skill: ExpectedSkill,
    /// `expected_script`: a script file name expected in an executed command.
    pub expected_script: Option<String>,
    /// `acceptable_skills` (legacy `acceptable_alternates`): partial credit in routing.
    pub acceptable_skills: Vec<String>,
    /// `should_trigger`; defaults to `expected_skill != null`.
    pub should_trigger: bool,
    /// Fixtures.
    pub files: CaseFiles,
    /// Cluster label for clustered intervals.
    pub cluster: Option<String>,
    /// Draft or active.
    pub status: CaseStatus,
    /// Relative weight (default 1.0), recorded for reports.
    pub weight: f64,
    /// The case's name as the file gives it, when the id had to be derived from it (a Vally
    /// scenario name in free text); shown beside the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The case's own trial timeout in seconds (a Vally scenario's `timeout`); `None`: the
    /// runner profile's `timeout_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
}

impl GoldenCase {
    /// A case with only an id and a prompt: no expectations, no fixtures, should trigger.
    pub fn new(id: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            prompt: prompt.into(),
            expected_output: None,
            expected_output_match: None,
            assertions: Vec::new(),
            checks: Vec::new(),
            expected_skill: ExpectedSkill::Unspecified,
            expected_script: None,
            acceptable_skills: Vec::new(),
            should_trigger: true,
            files: CaseFiles::Listed(Vec::new()),
            cluster: None,
            status: CaseStatus::Active,
            weight: 1.0,
            label: None,
            timeout_s: None,
        }
    }
}

/// Which input format a file was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvalFormat {
    /// `{"skill_name", "evals": [...]}` (agentskills, skill-creator, ACES).
    Agentskills,
    /// A top-level array of `{question, ground_truth, ...}`.
    LegacyFlat,
    /// `{"cases": [...]}` (SkillEvaluator wrapper).
    CasesWrapper,
    /// `{"version"|"defaults", "cases": [...]}` (BenchFlow).
    Benchflow,
    /// dotnet/skills Vally `eval.yaml`: `scenarios` (or `stimuli`) with prompts, assertions,
    /// rubrics and setup files.
    Vally,
    /// A SkillsBench / Harbor task folder (`task.toml`, `instruction.md`, `environment/`,
    /// `tests/test.sh`) or a folder of them; graded by each task's verifier.
    Harbor,
}

/// One query of a trigger (description) eval set: skill-creator's `{query, should_trigger}`,
/// with skill-lift's optional `id`, `expected_skill` and `note` (`triggers.json`,
/// docs/triggers.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerCase {
    /// `id` (integers canonicalised to strings), when the file gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The user query.
    pub query: String,
    /// Whether the skill should trigger on it (`false`: a negative, graded as negative).
    pub should_trigger: bool,
    /// `expected_skill`: the skill that should handle the query instead (e.g. a decoy for a
    /// near-miss negative), when the file names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_skill: Option<String>,
    /// `note`: free text (why the query is a near miss), shown in reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Something in an eval file that loaded but deserves the user's attention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EvalSetWarning {
    /// Case fields skill-lift does not use: name → number of cases carrying it.
    UnusedFields { fields: BTreeMap<String, usize> },
    /// A `files` entry stages a file of the target skill itself (outside its `evals/`) into
    /// both arms' workspaces.
    StagesSkillFile { case: String, entry: String },
    /// Assertions of a kind with no deterministic check here, kept as judge assertions.
    AssertionsForJudge { kinds: BTreeMap<String, usize> },
    /// Cases left out because an author case in `EVAL.md` has the same id or prompt.
    AuthorCasesReplace { cases: Vec<String> },
}

impl std::fmt::Display for EvalSetWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counted = |map: &BTreeMap<String, usize>| {
            map.iter()
                .map(|(name, count)| format!("`{name}` ({count})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Self::UnusedFields { fields } => write!(
                f,
                "fields skill-lift does not use (ignored; field and how many cases have it, 1 for a top-level field): {}",
                counted(fields)
            ),
            Self::StagesSkillFile { case, entry } => write!(
                f,
                "case `{case}`: files entry `{entry}` is part of the target skill; it is staged in both arms, so the baseline sees it"
            ),
            Self::AssertionsForJudge { kinds } => write!(
                f,
                "assertion types with no deterministic check, kept as judge assertions (graded only with --judge): {}",
                counted(kinds)
            ),
            Self::AuthorCasesReplace { cases } => write!(
                f,
                "EVAL.md author cases take priority: left out {} case(s) with the same id or prompt: {}",
                cases.len(),
                cases.join(", ")
            ),
        }
    }
}

/// A loaded eval set.
#[derive(Debug, Clone, Serialize)]
pub struct EvalSet {
    /// The file read.
    pub path: PathBuf,
    /// `sha256:<hex>` of the file's bytes.
    pub digest: String,
    /// Detected format.
    pub format: EvalFormat,
    /// `skill_name`, when the file gives one.
    pub skill_name: Option<String>,
    /// All cases, drafts included, in file order.
    pub cases: Vec<GoldenCase>,
    /// Warnings about the file (unused fields, skill files staged), to print.
    pub warnings: Vec<EvalSetWarning>,
    /// For a Harbor suite: the folder holding the task folders (the verifier grader's input).
    pub harbor_tasks: Option<PathBuf>,
    /// For a Harbor suite: the longest `[verifier] timeout_sec` of its tasks, seconds.
    pub verifier_timeout_s: Option<f64>,
}

impl EvalSet {
    /// The cases to run: active ones, plus drafts when `allow_draft`.
    pub fn runnable_cases(&self, allow_draft: bool) -> Vec<&GoldenCase> {
        self.cases
            .iter()
            .filter(|c| allow_draft || c.status == CaseStatus::Active)
            .collect()
    }
}

/// Why an eval set could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum EvalSetError {
    #[error("{path}: cannot read eval set: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: not valid {format}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        format: &'static str,
        message: String,
    },
    #[error("{path}: {json_path}: {message}")]
    Invalid {
        path: PathBuf,
        json_path: String,
        message: String,
    },
    #[error("{path}: unrecognised eval-set shape: {message}")]
    UnknownShape { path: PathBuf, message: String },
    #[error(
        "{path}: this is a trigger set ({total} queries: {positive} should trigger, {negative} should not), not golden cases; measure them with `skill-lift triggers SKILL_DIR --triggers {path}`; `run` needs golden cases (evals.json, eval.yaml or a task folder)"
    )]
    TriggerSet {
        path: PathBuf,
        total: usize,
        positive: usize,
        negative: usize,
    },
}

/// Load a trigger (description) eval set: skill-creator's `[{"query", "should_trigger"}]`
/// (also under `{"evals": [...]}` or `{"queries": [...]}`), ACES items carrying `query` with
/// `should_trigger` or `expected_trigger`. Errors name the file and the JSON path.
pub fn load_trigger_set(path: &Path) -> Result<Vec<TriggerCase>, EvalSetError> {
    let document = read_document(path)?;
    let context = Context {
        path: path.to_path_buf(),
        eval_dir: PathBuf::new(),
        skill_root: PathBuf::new(),
    };
    let (items, list) = match &document {
        Value::Array(items) => (items, "$".to_string()),
        Value::Object(object) => match ["evals", "queries", "triggers"].iter().find_map(|key| {
            object
                .get(*key)
                .and_then(Value::as_array)
                .map(|a| (a, *key))
        }) {
            Some((items, key)) => (items, key.to_string()),
            None => {
                return Err(EvalSetError::UnknownShape {
                    path: path.to_path_buf(),
                    message: "a trigger set is an array of {query, should_trigger}".to_string(),
                });
            }
        },
        _ => {
            return Err(EvalSetError::UnknownShape {
                path: path.to_path_buf(),
                message: "a trigger set is an array of {query, should_trigger}".to_string(),
            });
        }
    };
    read_triggers(items, &list, &context)
}

fn read_triggers(
    items: &[Value],
    list: &str,
    context: &Context,
) -> Result<Vec<TriggerCase>, EvalSetError> {
    let mut triggers = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = format!("{list}[{index}]");
        let Value::Object(object) = item else {
            return Err(context.invalid(&at, "each query must be an object".to_string()));
        };
        let query = match object.get("query").or_else(|| object.get("prompt")) {
            Some(Value::String(q)) if !q.trim().is_empty() => q.clone(),
            Some(_) => {
                return Err(context.invalid(
                    &format!("{at}.query"),
                    "must be a non-empty string".to_string(),
                ));
            }
            None => return Err(context.invalid(&format!("{at}.query"), "is required".to_string())),
        };
        let should_trigger = match trigger_flag(object) {
            Ok(Some(flag)) => flag,
            Ok(None) => {
                return Err(context.invalid(
                    &format!("{at}.should_trigger"),
                    "is required (true or false)".to_string(),
                ));
            }
            Err((key, message)) => return Err(context.invalid(&format!("{at}.{key}"), message)),
        };
        let id = match object.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if !id.trim().is_empty() => Some(id.clone()),
            Some(Value::Number(number)) if number.is_u64() || number.is_i64() => {
                Some(number.to_string())
            }
            Some(_) => {
                return Err(context.invalid(
                    &format!("{at}.id"),
                    "must be a non-empty string or an integer".to_string(),
                ));
            }
        };
        if let Some(id) = &id
            && triggers
                .iter()
                .any(|t: &TriggerCase| t.id.as_ref() == Some(id))
        {
            return Err(context.invalid(
                &format!("{at}.id"),
                format!("duplicate id `{id}`; ids must be unique in the set"),
            ));
        }
        let optional_text = |key: &str| match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if !text.trim().is_empty() => Ok(Some(text.clone())),
            Some(_) => Err(context.invalid(
                &format!("{at}.{key}"),
                "must be a non-empty string or null".to_string(),
            )),
        };
        let expected_skill = optional_text("expected_skill")?;
        let note = optional_text("note")?;
        triggers.push(TriggerCase {
            id,
            query,
            should_trigger,
            expected_skill,
            note,
        });
    }
    if triggers.is_empty() {
        return Err(context.invalid(list, "the trigger set has no queries".to_string()));
    }
    Ok(triggers)
}

/// `should_trigger`, or its ACES alias `expected_trigger` (they must agree when both are set).
fn trigger_flag(object: &Map<String, Value>) -> Result<Option<bool>, (&'static str, String)> {
    let read = |key: &'static str| match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err((key, "must be true or false".to_string())),
    };
    let should = read("should_trigger")?;
    let expected = read("expected_trigger")?;
    match (should, expected) {
        (Some(a), Some(b)) if a != b => Err((
            "expected_trigger",
            "disagrees with `should_trigger`; keep one".to_string(),
        )),
        (Some(a), _) | (None, Some(a)) => Ok(Some(a)),
        (None, None) => Ok(None),
    }
}

/// Whether a list of items is a trigger set: every item has `query` and a trigger flag and
/// none has a `prompt` or `question`.
fn is_trigger_list(items: &[Value]) -> bool {
    !items.is_empty()
        && items.iter().all(|item| {
            item.get("query").is_some()
                && (item.get("should_trigger").is_some() || item.get("expected_trigger").is_some())
                && item.get("prompt").is_none()
                && item.get("question").is_none()
        })
}

/// Case fields the loaders read; anything else is reported as unused. `provenance` (where a
/// mined or generated draft came from) and `origin` (`author`, `generated`, `history`) are kept
/// for people and reports, never graded.
const KNOWN_CASE_FIELDS: &[&str] = &[
    "id",
    "prompt",
    "question",
    "expected_output",
    "ground_truth",
    "expected_output_match",
    "assertions",
    "expectations",
    "expected_behavior",
    "checks",
    "expected_skill",
    "expected_script",
    "acceptable_skills",
    "acceptable_alternates",
    "should_trigger",
    "expected_trigger",
    "files",
    "cluster",
    "status",
    "weight",
    "provenance",
    "origin",
];

/// Read the file at `path` as a JSON value (`.jsonl` lines as an array; `.yaml`/`.yml` as YAML).
fn read_document(path: &Path) -> Result<Value, EvalSetError> {
    let bytes = std::fs::read(path).map_err(|source| EvalSetError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_document(&bytes, path)
}

/// The file's text; invalid UTF-8 is an error naming the file, line and column of the first
/// bad byte (never silently replaced: a replaced byte would change prompts and expectations).
fn utf8_text<'b>(bytes: &'b [u8], path: &Path) -> Result<&'b str, EvalSetError> {
    std::str::from_utf8(bytes).map_err(|error| {
        let valid = &bytes[..error.valid_up_to()];
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        let line_start = valid.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&valid[line_start..])
            .chars()
            .count()
            + 1;
        EvalSetError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            format: "UTF-8",
            message: format!(
                "invalid UTF-8 byte sequence at byte offset {}; save the file as UTF-8",
                error.valid_up_to()
            ),
        }
    })
}

fn parse_document(bytes: &[u8], path: &Path) -> Result<Value, EvalSetError> {
    let text = utf8_text(bytes, path)?;
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "jsonl" => parse_jsonl(text, path),
        "md" => crate::features::golden::evalmd::parse(text, path),
        "yaml" | "yml" => {
            serde_norway::from_str::<Value>(text).map_err(|error| EvalSetError::Syntax {
                path: path.to_path_buf(),
                line: error.location().map(|l| l.line()).unwrap_or(0),
                column: error.location().map(|l| l.column()).unwrap_or(0),
                format: "YAML",
                message: error.to_string(),
            })
        }
        _ => serde_json::from_str::<Value>(text).map_err(|error| EvalSetError::Syntax {
            path: path.to_path_buf(),
            line: error.line(),
            column: error.column(),
            format: "JSON",
            message: json_message(&error),
        }),
    }
}

/// Load the eval set at `path`: a file (`.json`, `.jsonl`, `.yaml`/`.yml`; Vally `eval.yaml`
/// is recognised by its `scenarios`/`stimuli`), or a folder (a Harbor task folder or a folder of
/// them).
///
/// `skill_root` is the skill folder: `files` entries starting with `evals/` resolve against it,
/// others against the eval file's folder and then the skill folder (eval-formats.md §1.2). A
/// trigger set is recognised, validated and refused with [`EvalSetError::TriggerSet`].
pub fn load_eval_set(path: &Path, skill_root: &Path) -> Result<EvalSet, EvalSetError> {
    let loaded = load_eval_file(path, skill_root);
    // An `EVAL.md` case is named by its heading's line, not only its place in the list.
    match loaded {
        Err(EvalSetError::Invalid {
            path,
            json_path,
            message,
        }) if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md")) =>
        {
            let line = json_path
                .strip_prefix("evals[")
                .and_then(|rest| rest.split(']').next())
                .and_then(|index| index.parse::<usize>().ok())
                .and_then(|index| {
                    let text = std::fs::read_to_string(&path).ok()?;
                    crate::features::golden::evalmd::case_line(&text, index)
                });
            Err(EvalSetError::Invalid {
                json_path: match line {
                    Some(line) => format!("line {line}: {json_path}"),
                    None => json_path,
                },
                path,
                message,
            })
        }
        Ok(set) if is_default_location(path, skill_root) => {
            // The author's EVAL.md beside SKILL.md has priority over the skill's other sets.
            let (mut merged, replaced) =
                crate::features::golden::evalmd::with_author_cases(set, skill_root)?;
            if !replaced.is_empty() {
                merged
                    .warnings
                    .push(EvalSetWarning::AuthorCasesReplace { cases: replaced });
            }
            Ok(merged)
        }
        other => other,
    }
}

/// Whether `path` is an eval file of the skill's own `evals/` folder (`evals.json`, a
/// `golden draft` or `golden mine` output saved there), where the author's `EVAL.md` applies.
fn is_default_location(path: &Path, skill_root: &Path) -> bool {
    let evals_dir = skill_root.join("evals");
    path.is_file() && path.parent().is_some_and(|p| p == evals_dir)
}

fn load_eval_file(path: &Path, skill_root: &Path) -> Result<EvalSet, EvalSetError> {
    if path.is_dir() {
        return harbor::load_harbor(path, skill_root);
    }
    let bytes = std::fs::read(path).map_err(|source| EvalSetError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let digest = sha256_digest(&bytes);
    let document = parse_document(&bytes, path)?;
    let eval_dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let context = Context {
        path: path.to_path_buf(),
        eval_dir,
        skill_root: skill_root.to_path_buf(),
    };
    if vally::is_vally(&document) {
        return vally::load_vally(&document, &context, digest);
    }
    // A trigger set wrapped as `{"skill_name", "queries": [...]}` (or `triggers`).
    if let Value::Object(object) = &document
        && !object.contains_key("evals")
        && !object.contains_key("cases")
        && let Some((key, items)) = ["queries", "triggers"].iter().find_map(|key| {
            object
                .get(*key)
                .and_then(Value::as_array)
                .map(|items| (*key, items))
        })
        && is_trigger_list(items)
    {
        let triggers = read_triggers(items, key, &context)?;
        let positive = triggers.iter().filter(|t| t.should_trigger).count();
        return Err(EvalSetError::TriggerSet {
            path: path.to_path_buf(),
            total: triggers.len(),
            positive,
            negative: triggers.len() - positive,
        });
    }
    let (format, skill_name, items, list_name) = detect_shape(&document, &context)?;
    if is_trigger_list(items) {
        let triggers = read_triggers(items, &list_name, &context)?;
        let positive = triggers.iter().filter(|t| t.should_trigger).count();
        return Err(EvalSetError::TriggerSet {
            path: path.to_path_buf(),
            total: triggers.len(),
            positive,
            negative: triggers.len() - positive,
        });
    }
    let mut cases = Vec::with_capacity(items.len());
    let mut seen = BTreeSet::new();
    let mut unused: BTreeMap<String, usize> = BTreeMap::new();
    let mut warnings = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("{list_name}[{index}]");
        let case = context.read_case(item, &at, &mut warnings)?;
        if let Value::Object(object) = item {
            for key in object.keys() {
                if !KNOWN_CASE_FIELDS.contains(&key.as_str()) {
                    *unused.entry(key.clone()).or_default() += 1;
                }
            }
        }
        if !seen.insert(case.id.clone()) {
            return Err(context.invalid(
                &format!("{at}.id"),
                format!("duplicate case id `{}`", case.id),
            ));
        }
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(context.invalid(&list_name, "the eval set has no cases".to_string()));
    }
    // Top-level keys beside the case list: `skill_name` and BenchFlow's `version` are read; its
    // `defaults` are run settings (timeout, judge model, mount folder) that come from flags and
    // runner profiles here, so each is reported like an unused case field.
    if let Value::Object(top) = &document {
        for (key, value) in top {
            match (key.as_str(), value) {
                (key, _) if key == list_name || key == "skill_name" || key == "version" => {}
                ("defaults", Value::Object(defaults)) => {
                    for inner in defaults.keys() {
                        *unused.entry(format!("defaults.{inner}")).or_default() += 1;
                    }
                }
                _ => *unused.entry(key.clone()).or_default() += 1,
            }
        }
    }
    if !unused.is_empty() {
        warnings.insert(0, EvalSetWarning::UnusedFields { fields: unused });
    }
    if context.evals_outside_skill() {
        // `files` omitted means the whole `evals/files/` beside this eval file, not the skill's.
        let shared = context.files_base().join("evals").join("files");
        for case in &mut cases {
            if case.files == CaseFiles::Omitted {
                case.files = CaseFiles::Listed(folder_entries(&shared).map_err(|source| {
                    EvalSetError::Read {
                        path: shared.clone(),
                        source,
                    }
                })?);
            }
        }
    }
    Ok(EvalSet {
        path: path.to_path_buf(),
        digest,
        format,
        skill_name,
        cases,
        warnings,
        harbor_tasks: None,
        verifier_timeout_s: None,
    })
}

/// The entries of `dir` (none when it does not exist), each staged under its name, sorted.
fn folder_entries(dir: &Path) -> std::io::Result<Vec<CaseFile>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        files.push(CaseFile {
            source: entry.path().canonicalize()?,
            destination: PathBuf::from(entry.file_name()),
        });
    }
    files.sort_by(|a, b| a.destination.cmp(&b.destination));
    Ok(files)
}

/// A JSON parse error's message without serde_json's ` at line L column C` (the error names
/// the position once, as `path:line:column`; in JSON Lines serde's line is always 1).
fn json_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&position) {
        Some(message) => message.to_string(),
        None => text,
    }
}

fn parse_jsonl(text: &str, path: &Path) -> Result<Value, EvalSetError> {
    let mut items = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(line).map_err(|error| EvalSetError::Syntax {
            path: path.to_path_buf(),
            line: index + 1,
            column: error.column(),
            format: "JSON Lines",
            message: json_message(&error),
        })?;
        items.push(value);
    }
    Ok(Value::Array(items))
}

type Shape<'a> = (EvalFormat, Option<String>, &'a Vec<Value>, String);

fn detect_shape<'a>(document: &'a Value, context: &Context) -> Result<Shape<'a>, EvalSetError> {
    match document {
        Value::Array(items) => Ok((EvalFormat::LegacyFlat, None, items, "$".to_string())),
        Value::Object(object) => {
            let skill_name = match object.get("skill_name") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    return Err(context.invalid("skill_name", "must be a string".to_string()));
                }
            };
            if let Some(evals) = object.get("evals") {
                let Value::Array(items) = evals else {
                    return Err(context.invalid("evals", "must be an array of cases".to_string()));
                };
                return Ok((
                    EvalFormat::Agentskills,
                    skill_name,
                    items,
                    "evals".to_string(),
                ));
            }
            if let Some(cases) = object.get("cases") {
                let Value::Array(items) = cases else {
                    return Err(context.invalid("cases", "must be an array of cases".to_string()));
                };
                let format = if object.contains_key("version") || object.contains_key("defaults") {
                    EvalFormat::Benchflow
                } else {
                    EvalFormat::CasesWrapper
                };
                return Ok((format, skill_name, items, "cases".to_string()));
            }
            Err(EvalSetError::UnknownShape {
                path: context.path.clone(),
                message: "expected an object with `evals` or `cases`, or an array of cases"
                    .to_string(),
            })
        }
        _ => Err(EvalSetError::UnknownShape {
            path: context.path.clone(),
            message: "expected an object with `evals` or `cases`, or an array of cases".to_string(),
        }),
    }
}

/// Where an eval file lives, for resolving its paths and naming it in errors.
pub(crate) struct Context {
    pub(crate) path: PathBuf,
    pub(crate) eval_dir: PathBuf,
    pub(crate) skill_root: PathBuf,
}

impl Context {
    /// The folder `files` entries are relative to: the one holding the eval file's `evals/`
    /// folder (the skill folder in skill-creator's layout, the repository root when the root
    /// holds `evals/` and the skill sits in `skills/NAME/`), else the skill folder.
    fn files_base(&self) -> PathBuf {
        let in_evals = self.eval_dir.file_name().is_some_and(|n| n == "evals");
        match self.eval_dir.parent() {
            Some(holder) if in_evals && !holder.as_os_str().is_empty() => holder.to_path_buf(),
            Some(_) if in_evals => PathBuf::from("."),
            _ => self.skill_root.clone(),
        }
    }

    /// Whether the eval file sits in an `evals/` folder outside the skill folder (the
    /// repository-root layout).
    fn evals_outside_skill(&self) -> bool {
        let base = self.files_base();
        let canonical = |p: &Path| p.canonicalize().unwrap_or(p.to_path_buf());
        canonical(&base) != canonical(&self.skill_root)
    }
}

/// Why a case field's value is not of its type (the message after the field's JSON path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum FieldError {
    /// A value that must be a string.
    #[error("must be a string")]
    NotAString,
    /// A list item that is an object with no text.
    #[error("list items must be strings or objects with `text` or `description`")]
    ItemWithoutText,
    /// A list item of another kind.
    #[error("list items must be strings")]
    ItemNotAString,
    /// A value that is neither a string nor a list.
    #[error("must be a list of strings")]
    NotAList,
}

fn optional_string(object: &Map<String, Value>, key: &str) -> Result<Option<String>, FieldError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(FieldError::NotAString),
    }
}

fn string_list(value: &Value) -> Result<Vec<String>, FieldError> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                // Assertions as objects: `{"text"}` (skill-creator's grading format) or
                // `{"name", "description"}`.
                Value::Object(o) => assertion_text(o).ok_or(FieldError::ItemWithoutText),
                _ => Err(FieldError::ItemNotAString),
            })
            .collect(),
        _ => Err(FieldError::NotAList),
    }
}

/// The text of an assertion object: `text`, else `description` (prefixed with `name:`), else
/// `name`.
fn assertion_text(object: &Map<String, Value>) -> Option<String> {
    let get = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    if let Some(text) = get("text") {
        return Some(text.to_string());
    }
    match (get("name"), get("description")) {
        (Some(name), Some(description)) => Some(format!("{name}: {description}")),
        (None, Some(description)) => Some(description.to_string()),
        (Some(name), None) => Some(name.to_string()),
        (None, None) => None,
    }
}

impl Context {
    pub(crate) fn invalid(&self, json_path: &str, message: impl ToString) -> EvalSetError {
        EvalSetError::Invalid {
            path: self.path.clone(),
            json_path: json_path.to_string(),
            message: message.to_string(),
        }
    }

    fn read_case(
        &self,
        item: &Value,
        at: &str,
        warnings: &mut Vec<EvalSetWarning>,
    ) -> Result<GoldenCase, EvalSetError> {
        let Value::Object(object) = item else {
            return Err(self.invalid(at, "each case must be a JSON object".to_string()));
        };
        let field = |key: &str| format!("{at}.{key}");

        let id = match object.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
            Some(_) => {
                return Err(
                    self.invalid(&field("id"), "must be a string or an integer".to_string())
                );
            }
            None => return Err(self.invalid(&field("id"), "is required".to_string())),
        };
        validate_id(&id).map_err(|message| self.invalid(&field("id"), message))?;

        let (prompt_key, prompt) = match (object.get("prompt"), object.get("question")) {
            (Some(p), _) => ("prompt", p),
            (None, Some(q)) => ("question", q),
            (None, None) => {
                return Err(
                    self.invalid(&field("prompt"), "is required (or `question`)".to_string())
                );
            }
        };
        let prompt = match prompt {
            Value::String(s) if !s.trim().is_empty() => s.clone(),
            Value::String(_) => {
                return Err(self.invalid(&field(prompt_key), "must not be empty".to_string()));
            }
            _ => return Err(self.invalid(&field(prompt_key), "must be a string".to_string())),
        };

        let expected_output = match optional_string(object, "expected_output") {
            Ok(Some(s)) => Some(s),
            Ok(None) => optional_string(object, "ground_truth")
                .map_err(|m| self.invalid(&field("ground_truth"), m))?,
            Err(m) => return Err(self.invalid(&field("expected_output"), m)),
        };

        let expected_output_match = match object.get("expected_output_match") {
            None | Some(Value::Null) => None,
            Some(Value::String(mode)) => {
                let mode: crate::record::OutputMatch = mode
                    .parse()
                    .map_err(|m| self.invalid(&field("expected_output_match"), m))?;
                match &expected_output {
                    Some(expected) => {
                        crate::features::grade::checks::validate_expected_output(mode, expected)
                            .map_err(|m| self.invalid(&field("expected_output"), m))?;
                    }
                    None if mode.is_deterministic() => {
                        return Err(self.invalid(
                            &field("expected_output_match"),
                            "is set but the case has no expected_output".to_string(),
                        ));
                    }
                    None => {}
                }
                Some(mode)
            }
            Some(_) => {
                return Err(self.invalid(
                    &field("expected_output_match"),
                    "must be one of judge, exact, contains, regex, numeric".to_string(),
                ));
            }
        };

        let mut assertion_lists = Vec::new();
        for key in ["assertions", "expectations", "expected_behavior"] {
            if let Some(value) = object.get(key) {
                let list = string_list(value).map_err(|m| self.invalid(&field(key), m))?;
                assertion_lists.push((key, list));
            }
        }
        if let [(first_key, first), rest @ ..] = assertion_lists.as_slice()
            && let Some((other_key, _)) = rest.iter().find(|(_, list)| list != first)
        {
            return Err(self.invalid(
                at,
                format!(
                    "`{first_key}` and `{other_key}` are both present and differ; keep one list"
                ),
            ));
        }
        let assertions = assertion_lists
            .into_iter()
            .next()
            .map(|(_, l)| l)
            .unwrap_or_default();

        let checks = match object.get("checks") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut checks = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let check_at = format!("{at}.checks[{index}]");
                    let check: Check = serde_json::from_value(item.clone())
                        .map_err(|error| self.invalid(&check_at, error.to_string()))?;
                    check
                        .validate()
                        .map_err(|error| self.invalid(&check_at, error.to_string()))?;
                    checks.push(check);
                }
                checks
            }
            Some(_) => {
                return Err(self.invalid(
                    &field("checks"),
                    "must be an array of check objects".to_string(),
                ));
            }
        };

        let expected_skill = match object.get("expected_skill") {
            None => ExpectedSkill::Unspecified,
            Some(Value::Null) => ExpectedSkill::None,
            Some(Value::String(s)) => ExpectedSkill::Named(s.clone()),
            Some(_) => {
                return Err(self.invalid(
                    &field("expected_skill"),
                    "must be a string or null".to_string(),
                ));
            }
        };
        let expected_script = optional_string(object, "expected_script")
            .map_err(|m| self.invalid(&field("expected_script"), m))?;
        let acceptable_skills = match object
            .get("acceptable_skills")
            .or_else(|| object.get("acceptable_alternates"))
        {
            None => Vec::new(),
            Some(value) => {
                string_list(value).map_err(|m| self.invalid(&field("acceptable_skills"), m))?
            }
        };
        // `expected_trigger` is ACES's name for `should_trigger`; `false` makes a negative case.
        let should_trigger = match trigger_flag(object) {
            // `expected_skill: null` says no skill should be used: a case that must trigger one
            // contradicts it.
            Ok(Some(true)) if expected_skill == ExpectedSkill::None => {
                let key = if object.get("should_trigger") == Some(&Value::Bool(true)) {
                    "should_trigger"
                } else {
                    "expected_trigger"
                };
                return Err(self.invalid(
                    &field(key),
                    "is true but `expected_skill` is null (no skill should be used); name the expected skill or set it to false".to_string(),
                ));
            }
            Ok(Some(flag)) => flag,
            Ok(None) => expected_skill != ExpectedSkill::None,
            Err((key, message)) => return Err(self.invalid(&field(key), message)),
        };
        let cluster = match object.get("cluster") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(_) => return Err(self.invalid(&field("cluster"), "must be a string".to_string())),
        };
        let status = match object.get("status") {
            None | Some(Value::Null) => CaseStatus::Active,
            Some(Value::String(s)) if s == "active" => CaseStatus::Active,
            Some(Value::String(s)) if s == "draft" => CaseStatus::Draft,
            Some(_) => {
                return Err(self.invalid(
                    &field("status"),
                    "must be \"active\" or \"draft\"".to_string(),
                ));
            }
        };
        // Every estimate weights cases equally (statistics.md §1; docs/statistics.md): a
        // weight other than 1 would silently not be used, so it is refused.
        let weight = match object.get("weight") {
            None | Some(Value::Null) => 1.0,
            Some(Value::Number(n)) => match n.as_f64() {
                Some(w) if w == 1.0 => w,
                Some(w) if w.is_finite() && w > 0.0 => {
                    return Err(self.invalid(
                        &field("weight"),
                        format!(
                            "case weights are not supported: every case counts equally in the pass rates, intervals and tests (docs/statistics.md); remove `weight` ({w}) or set it to 1 (copy the case under another id if it must count more)"
                        ),
                    ));
                }
                _ => {
                    return Err(
                        self.invalid(&field("weight"), "must be a positive number".to_string())
                    );
                }
            },
            Some(_) => {
                return Err(self.invalid(&field("weight"), "must be a positive number".to_string()));
            }
        };
        let files = self.read_files(object.get("files"), &field("files"), &id, warnings)?;

        Ok(GoldenCase {
            id,
            prompt,
            expected_output,
            expected_output_match,
            assertions,
            checks,
            expected_skill,
            expected_script,
            acceptable_skills,
            should_trigger,
            files,
            cluster,
            status,
            weight,
            label: None,
            timeout_s: None,
        })
    }

    /// Resolve a case's `files`. Each entry is staged at the path as written (so the prompt's
    /// path and the workspace agree). An entry starting with `evals/` is relative to the skill
    /// folder; others to the eval file's folder, else to the skill folder. Refused: absolute
    /// paths, `..`, symbolic links leading out of that folder, missing files, and anything that
    /// would copy the target skill itself (its folder or its `SKILL.md`) into the workspace,
    /// where the baseline arm would see it.
    fn read_files(
        &self,
        value: Option<&Value>,
        at: &str,
        case_id: &str,
        warnings: &mut Vec<EvalSetWarning>,
    ) -> Result<CaseFiles, EvalSetError> {
        let entries = match value {
            None => return Ok(CaseFiles::Omitted),
            Some(value) => string_list(value).map_err(|m| self.invalid(at, m))?,
        };
        let skill_root = self
            .skill_root
            .canonicalize()
            .unwrap_or(self.skill_root.clone());
        let skill_file = skill_root.join("SKILL.md");
        let mut files = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            let entry_at = format!("{at}[{index}]");
            let trimmed = entry.trim().trim_start_matches("./");
            let relative = Path::new(trimmed);
            if trimmed.is_empty()
                || relative.is_absolute()
                || relative.components().any(|c| {
                    matches!(
                        c,
                        Component::ParentDir | Component::RootDir | Component::Prefix(_)
                    )
                })
            {
                return Err(self.invalid(
                    &entry_at,
                    format!("`{entry}` must be a relative path inside the eval folder (no `..`, no absolute path)"),
                ));
            }
            let files_base = self.files_base();
            let bases: Vec<&Path> = if trimmed.starts_with("evals/") {
                vec![&files_base]
            } else if files_base != self.skill_root {
                vec![&self.eval_dir, &files_base, &self.skill_root]
            } else {
                vec![&self.eval_dir, &self.skill_root]
            };
            let Some((base, resolved)) = bases.iter().find_map(|base| {
                base.join(relative)
                    .canonicalize()
                    .ok()
                    .map(|resolved| (*base, resolved))
            }) else {
                let looked: Vec<String> = bases
                    .iter()
                    .map(|b| b.join(relative).display().to_string())
                    .collect();
                return Err(self.invalid(
                    &entry_at,
                    format!(
                        "`{entry}` does not exist (looked for {})",
                        looked.join(" and ")
                    ),
                ));
            };
            let base_resolved = base.canonicalize().unwrap_or(base.to_path_buf());
            if !resolved.starts_with(&base_resolved) {
                return Err(self.invalid(
                    &entry_at,
                    format!(
                        "`{entry}` resolves outside the eval folder (symbolic link to {})",
                        resolved.display()
                    ),
                ));
            }
            if resolved == skill_file || skill_root.starts_with(&resolved) {
                return Err(self.invalid(
                    &entry_at,
                    format!(
                        "leak guard: `{entry}` would copy the target skill ({}) into the workspace, where the baseline arm would see it; list only fixture files",
                        if resolved == skill_file { "its SKILL.md" } else { "its folder" }
                    ),
                ));
            }
            if resolved.starts_with(&skill_root) && !resolved.starts_with(skill_root.join("evals"))
            {
                warnings.push(EvalSetWarning::StagesSkillFile {
                    case: case_id.to_string(),
                    entry: entry.clone(),
                });
            }
            files.push(CaseFile {
                source: resolved,
                destination: relative.to_path_buf(),
            });
        }
        Ok(CaseFiles::Listed(files))
    }
}

/// The default eval-set location for a skill: `<skill>/evals/evals.json`, else `.jsonl`,
/// `.yaml`, `.yml` beside it, else the author's `<skill>/EVAL.md`. Returns the `.json` path
/// when none exists (for the error message).
pub fn default_eval_path(skill_dir: &Path) -> PathBuf {
    let dir = skill_dir.join("evals");
    for name in ["evals.json", "evals.jsonl", "evals.yaml", "evals.yml"] {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return candidate;
        }
    }
    let author = skill_dir.join(crate::features::golden::evalmd::EVAL_MD);
    if author.is_file() {
        return author;
    }
    dir.join("evals.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<EvalSet, EvalSetError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evals.json");
        std::fs::write(&path, text).unwrap();
        load_eval_set(&path, dir.path())
    }

    #[test]
    fn agentskills_format_with_aces_extensions() {
        let set = load(
            r#"{"skill_name": "calc", "evals": [
            {"id": 1, "prompt": "p1", "expected_output": "o", "files": [], "assertions": ["a"],
             "expected_skill": "calc", "expected_script": "calc.py", "acceptable_skills": ["u"],
             "checks": [{"type": "contains", "value": "397.8"}], "cluster": "c1", "weight": 1},
            {"id": "neg-1", "prompt": "p2", "expected_skill": null, "status": "draft"},
            {"id": "x", "prompt": "p3", "expectations": ["e"], "acceptable_alternates": ["z"]}]}"#,
        )
        .unwrap();
        assert_eq!(set.format, EvalFormat::Agentskills);
        assert_eq!(set.skill_name.as_deref(), Some("calc"));
        let first = &set.cases[0];
        assert_eq!(first.id, "1");
        assert_eq!(first.expected_skill, ExpectedSkill::Named("calc".into()));
        assert_eq!(first.files, CaseFiles::Listed(vec![]));
        assert_eq!(first.checks.len(), 1);
        assert_eq!(first.weight, 1.0);
        assert!(first.should_trigger);
        let negative = &set.cases[1];
        assert_eq!(negative.expected_skill, ExpectedSkill::None);
        assert!(!negative.should_trigger);
        assert_eq!(negative.files, CaseFiles::Omitted);
        assert_eq!(set.cases[2].assertions, vec!["e"]);
        assert_eq!(set.cases[2].acceptable_skills, vec!["z"]);
        assert_eq!(set.runnable_cases(false).len(), 2);
        assert_eq!(set.runnable_cases(true).len(), 3);
        assert!(set.digest.starts_with("sha256:"));
    }

    /// Case weights other than 1 are refused with the file and JSON path (they would not be
    /// used by any estimate).
    #[test]
    fn case_weights_other_than_one_are_refused() {
        let error = load(r#"{"evals": [{"id": "a", "prompt": "p", "weight": 2}]}"#).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("evals[0].weight"), "{message}");
        assert!(message.contains("not supported"), "{message}");
        let error = load(r#"{"evals": [{"id": "a", "prompt": "p", "weight": -1}]}"#).unwrap_err();
        assert!(error.to_string().contains("positive number"));
    }

    #[test]
    fn legacy_flat_and_wrappers() {
        let flat = load(
            r#"[{"id": "a", "question": "q", "ground_truth": "g", "expected_behavior": ["b"]}]"#,
        )
        .unwrap();
        assert_eq!(flat.format, EvalFormat::LegacyFlat);
        assert_eq!(flat.cases[0].prompt, "q");
        assert_eq!(flat.cases[0].expected_output.as_deref(), Some("g"));
        assert_eq!(flat.cases[0].assertions, vec!["b"]);
        let wrapped = load(r#"{"cases": [{"id": "a", "prompt": "q"}]}"#).unwrap();
        assert_eq!(wrapped.format, EvalFormat::CasesWrapper);
        let benchflow =
            load(r#"{"version": "1", "cases": [{"id": "a", "question": "q"}]}"#).unwrap();
        assert_eq!(benchflow.format, EvalFormat::Benchflow);
    }

    #[test]
    fn errors_name_file_and_json_path() {
        let error = load(
            r#"{"evals": [{"id": "a", "prompt": "p"}, {"id": "b", "prompt": "p"}, {"id": "c"}]}"#,
        )
        .unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("evals.json: evals[2].prompt: is required"),
            "{text}"
        );
        let error = load(r#"{"evals": [{"id": "a", "prompt": "p"}, {"id": "a", "prompt": "q"}]}"#)
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("evals[1].id: duplicate case id `a`"),
            "{error}"
        );
        let error =
            load(r#"{"evals": [{"id": "a", "prompt": "p", "checks": [{"type": "shout"}]}]}"#)
                .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("evals[0].checks[0]: unknown variant `shout`"),
            "{error}"
        );
        let error = load("{\"evals\": [\n{\"id\": \"a\",,}]}").unwrap_err();
        assert!(error.to_string().contains("evals.json:2:"), "{error}");
        let error = load(r#"{"evals": [{"id": "a", "prompt": "p", "assertions": ["x"], "expectations": ["y"]}]}"#).unwrap_err();
        assert!(
            error.to_string().contains("both present and differ"),
            "{error}"
        );
        let error = load(r#"{"evals": [{"id": "a b", "prompt": "p"}]}"#).unwrap_err();
        assert!(error.to_string().contains("evals[0].id"), "{error}");
        let error = load(r#"{"evals": []}"#).unwrap_err();
        assert!(error.to_string().contains("no cases"), "{error}");
        let error = load(r#"[{"query": "q", "should_trigger": true}]"#).unwrap_err();
        assert!(error.to_string().contains("trigger set"), "{error}");
        assert!(error.to_string().contains("skill-lift triggers"), "{error}");
    }

    #[test]
    fn files_resolution_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path();
        std::fs::create_dir_all(skill.join("evals/files")).unwrap();
        std::fs::write(skill.join("evals/files/data.csv"), "a").unwrap();
        std::fs::write(skill.join("secret.txt"), "s").unwrap();
        let path = skill.join("evals/evals.json");
        let write_and_load = |files: &str| {
            std::fs::write(
                &path,
                format!(r#"{{"evals": [{{"id": "a", "prompt": "p", "files": {files}}}]}}"#),
            )
            .unwrap();
            load_eval_set(&path, skill)
        };
        let set = write_and_load(r#"["evals/files/data.csv", "files/data.csv"]"#).unwrap();
        let CaseFiles::Listed(files) = &set.cases[0].files else {
            panic!()
        };
        // Staged at the path the entry (and so the prompt) names.
        assert_eq!(files[0].destination, PathBuf::from("evals/files/data.csv"));
        assert_eq!(files[1].destination, PathBuf::from("files/data.csv"));
        assert_eq!(files[0].source, files[1].source);
        // Skill-root relative when not beside the eval file; a skill file is staged with a
        // warning; the skill's SKILL.md or folder is refused.
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: s\ndescription: d\n---\n",
        )
        .unwrap();
        let set = write_and_load(r#"["secret.txt"]"#).unwrap();
        assert!(matches!(
            set.warnings.as_slice(),
            [EvalSetWarning::StagesSkillFile { .. }]
        ));
        for leak in [r#"["SKILL.md"]"#, r#"["evals/../SKILL.md"]"#] {
            let error = write_and_load(leak).unwrap_err().to_string();
            assert!(
                error.contains("target skill") || error.contains("files[0]"),
                "{leak}: {error}"
            );
        }
        assert!(
            write_and_load(r#"["SKILL.md"]"#)
                .unwrap_err()
                .to_string()
                .contains("would copy the target skill (its SKILL.md)")
        );
        assert!(
            write_and_load(r#"["../secret.txt"]"#)
                .unwrap_err()
                .to_string()
                .contains("files[0]")
        );
        assert!(write_and_load(r#"["/etc/passwd"]"#).is_err());
        assert!(
            write_and_load(r#"["files/missing.csv"]"#)
                .unwrap_err()
                .to_string()
                .contains("does not exist")
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(
                skill.join("secret.txt"),
                skill.join("evals/files/link.txt"),
            )
            .unwrap();
            let error = write_and_load(r#"["files/link.txt"]"#).unwrap_err();
            assert!(
                error.to_string().contains("outside the eval folder"),
                "{error}"
            );
        }
    }

    #[test]
    fn jsonl_and_yaml() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("evals.jsonl");
        std::fs::write(
            &jsonl,
            "{\"id\": \"a\", \"prompt\": \"p\"}\n\n{\"id\": \"b\", \"prompt\": \"q\"}\n",
        )
        .unwrap();
        assert_eq!(load_eval_set(&jsonl, dir.path()).unwrap().cases.len(), 2);
        // A syntax error names its position once: the file's line, the column in it.
        std::fs::write(
            &jsonl,
            "{\"id\": \"a\", \"prompt\": \"p\"}\n{\"id\": \"b\" \"x\"}\n",
        )
        .unwrap();
        let error = load_eval_set(&jsonl, dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("evals.jsonl:2:12: not valid JSON Lines: expected"),
            "{error}"
        );
        assert!(!error.contains("at line"), "{error}");
        let json = dir.path().join("evals.json");
        std::fs::write(&json, "{\n  \"evals\": [,]\n}\n").unwrap();
        let error = load_eval_set(&json, dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("evals.json:2:13: not valid JSON: expected value"),
            "{error}"
        );
        assert!(!error.contains("at line"), "{error}");
        let yaml = dir.path().join("evals.yaml");
        std::fs::write(&yaml, "evals:\n  - id: a\n    prompt: p\n    checks:\n      - type: contains\n        value: x\n").unwrap();
        assert_eq!(
            load_eval_set(&yaml, dir.path()).unwrap().cases[0]
                .checks
                .len(),
            1
        );
    }
}
