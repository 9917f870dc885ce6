//! dotnet/skills **Vally** `eval.yaml`: `scenarios` (or the older `stimuli`) with a prompt,
//! setup, assertions, a rubric and constraints, read into [`GoldenCase`]s with the meaning the
//! reference implementation (dotnet/skills `eng/skill-validator`: `EvalSchema.cs`,
//! `AgentRunner.SetupWorkDir`, `AssertionEvaluator.cs`) gives them.
//!
//! Shape (field names as published; values invented):
//!
//! ```yaml
//! scenarios:
//!   - name: "Totals by region"          # free text; the case id is its slug
//!     prompt: "Summarise data/sales.csv by region."
//!     setup:
//!       copy_test_files: true            # the files beside eval.yaml, into the workspace
//!       files:
//!         - path: data/sales.csv         # where it lands in the workspace
//!           source: ../../tests/x/sales.csv  # relative to the skill folder
//!         - path: notes.txt
//!           content: "inline text"
//!     assertions:
//!       - type: output_contains
//!         value: "North"
//!       - type: file_exists
//!         path: "*.md"                   # a glob
//!     rubric:
//!       - "Names the region with the highest total"
//!     expect_tools: [bash]
//!     timeout: 120
//! ```
//!
//! Case ids: a `name` that is a valid id is kept; otherwise the id is its slug (ASCII letters
//! and digits lower-cased, other runs of characters `-`), the name kept as the case's label; a
//! slug already taken gets `-2`, `-3`, … in file order. Assertions become deterministic checks:
//! `output_contains` / `output_not_contains` (ignoring case), `output_matches` /
//! `output_not_matches` (ignoring case), `file_exists`, `file_not_exists`, `file_contains`,
//! `file_not_contains` (globs), `exit_success` (the agent answered); `expect_tools`,
//! `reject_tools`, `max_turns` and `max_tokens` become trajectory checks; `timeout` (default 120
//! s, as in the reference) is the case's trial timeout. Other assertion types (`output_judge`,
//! …) and the rubric become judge assertions (reported once per file). `expect_activation:
//! false` marks a negative case. `setup.commands` cannot be honoured and is refused. Inline
//! `content` files are written once to a content-addressed folder under the system temporary
//! folder and staged from there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{
    CaseFile, CaseFiles, Context, EvalFormat, EvalSet, EvalSetError, EvalSetWarning, ExpectedSkill,
    GoldenCase,
};
use crate::features::asset::fingerprint::sha256_digest;
use crate::features::grade::checks::Check;
use crate::record::{MAX_ID_CHARS, validate_id};

/// Scenario fields the loader reads.
const KNOWN_FIELDS: &[&str] = &[
    "name",
    "id",
    "prompt",
    "setup",
    "environment",
    "assertions",
    "graders",
    "rubric",
    "expect_activation",
    "expected_output",
    "timeout",
    "expect_tools",
    "reject_tools",
    "max_turns",
    "max_tokens",
];

/// The reference's scenario timeout when `timeout` is absent, seconds (`EvalSchema.cs`).
pub const DEFAULT_TIMEOUT_S: f64 = 120.0;

/// Whether a document is a Vally eval: an object with a `scenarios` or `stimuli` list.
pub fn is_vally(document: &Value) -> bool {
    ["scenarios", "stimuli"]
        .iter()
        .any(|key| document.get(*key).is_some_and(Value::is_array))
}

/// Read a Vally document (already parsed) into an eval set.
pub(crate) fn load_vally(
    document: &Value,
    context: &Context,
    digest: String,
) -> Result<EvalSet, EvalSetError> {
    let (list, items) = ["scenarios", "stimuli"]
        .iter()
        .find_map(|key| {
            document
                .get(*key)
                .and_then(Value::as_array)
                .map(|a| (*key, a))
        })
        .expect("is_vally checked");
    let mut unused: BTreeMap<String, usize> = BTreeMap::new();
    let mut for_judge: BTreeMap<String, usize> = BTreeMap::new();
    let mut cases: Vec<(GoldenCase, bool)> = Vec::with_capacity(items.len());
    let mut seen = BTreeSet::new();
    let bounds = source_bounds(context);
    for (index, item) in items.iter().enumerate() {
        let at = format!("{list}[{index}]");
        let Value::Object(object) = item else {
            return Err(context.invalid(&at, "each scenario must be a mapping".to_string()));
        };
        for key in object.keys() {
            if !KNOWN_FIELDS.contains(&key.as_str()) {
                *unused.entry(key.clone()).or_default() += 1;
            }
        }
        let case = read_scenario(object, &at, context, &bounds, &mut for_judge)?;
        // An id derived from a free-text name yields to ids written as such.
        let derived = case.label.is_some() && !object.contains_key("id");
        if !derived && !seen.insert(case.id.clone()) {
            let key = if object.contains_key("id") {
                "id"
            } else {
                "name"
            };
            return Err(context.invalid(
                &format!("{at}.{key}"),
                format!("duplicate scenario name `{}`", case.id),
            ));
        }
        cases.push((case, derived));
    }
    // Derived ids in file order: the slug, else the first free `-2`, `-3`, ….
    let cases: Vec<GoldenCase> = cases
        .into_iter()
        .map(|(mut case, derived)| {
            if derived && !seen.insert(case.id.clone()) {
                let base = case.id.clone();
                let mut n = 2usize;
                loop {
                    let suffix = format!("-{n}");
                    let keep = MAX_ID_CHARS.saturating_sub(suffix.len());
                    let candidate = format!(
                        "{}{suffix}",
                        base[..base.len().min(keep)].trim_end_matches('-')
                    );
                    if seen.insert(candidate.clone()) {
                        case.id = candidate;
                        break;
                    }
                    n += 1;
                }
            }
            case
        })
        .collect();
    if cases.is_empty() {
        return Err(context.invalid(list, "the eval has no scenarios".to_string()));
    }
    let mut warnings = Vec::new();
    if !unused.is_empty() {
        warnings.push(EvalSetWarning::UnusedFields { fields: unused });
    }
    if !for_judge.is_empty() {
        warnings.push(EvalSetWarning::AssertionsForJudge { kinds: for_judge });
    }
    Ok(EvalSet {
        path: context.path.clone(),
        digest,
        format: EvalFormat::Vally,
        skill_name: document
            .get("skill")
            .or_else(|| document.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string),
        cases,
        warnings,
        harbor_tasks: None,
        verifier_timeout_s: None,
    })
}

fn read_scenario(
    object: &Map<String, Value>,
    at: &str,
    context: &Context,
    bounds: &[PathBuf],
    for_judge: &mut BTreeMap<String, usize>,
) -> Result<GoldenCase, EvalSetError> {
    let field = |key: &str| format!("{at}.{key}");
    let (id, label) = match (object.get("id"), object.get("name")) {
        (Some(Value::String(id)), _) => {
            let id = id.trim().to_string();
            validate_id(&id).map_err(|message| context.invalid(&field("id"), message))?;
            let label = match object.get("name") {
                Some(Value::String(name)) if name.trim() != id => Some(name.trim().to_string()),
                _ => None,
            };
            (id, label)
        }
        (Some(Value::Number(n)), _) => (n.to_string(), None),
        (Some(_), _) => {
            return Err(context.invalid(&field("id"), "must be a string".to_string()));
        }
        (None, Some(Value::String(name))) if !name.trim().is_empty() => {
            let name = name.trim();
            if validate_id(name).is_ok() {
                (name.to_string(), None)
            } else {
                (slug(name), Some(name.to_string()))
            }
        }
        (None, Some(Value::Number(n))) => (n.to_string(), None),
        (None, Some(_)) => {
            return Err(context.invalid(&field("name"), "must be a non-blank string".to_string()));
        }
        (None, None) => return Err(context.invalid(&field("name"), "is required".to_string())),
    };
    let prompt = match object.get("prompt") {
        Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
        Some(_) => {
            return Err(context.invalid(&field("prompt"), "must be a non-empty string".to_string()));
        }
        None => return Err(context.invalid(&field("prompt"), "is required".to_string())),
    };
    let mut case = GoldenCase::new(id, prompt);
    case.label = label;
    case.files = CaseFiles::Listed(Vec::new());
    case.timeout_s = Some(match object.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_S,
        Some(Value::Number(n)) if n.as_f64().is_some_and(|s| s.is_finite() && s > 0.0) => {
            n.as_f64().unwrap_or(DEFAULT_TIMEOUT_S)
        }
        Some(_) => {
            return Err(context.invalid(
                &field("timeout"),
                "must be a positive number of seconds".to_string(),
            ));
        }
    });
    if let Some(Value::String(expected)) = object.get("expected_output") {
        case.expected_output = Some(expected.clone());
    }
    match object.get("expect_activation") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(true)) => case.should_trigger = true,
        Some(Value::Bool(false)) => {
            case.should_trigger = false;
            case.expected_skill = ExpectedSkill::None;
        }
        Some(_) => {
            return Err(context.invalid(
                &field("expect_activation"),
                "must be true or false".to_string(),
            ));
        }
    }
    // Setup: `setup` (scenarios) or `environment` (stimuli).
    let setup = object
        .get("setup")
        .map(|s| (s, "setup"))
        .or_else(|| object.get("environment").map(|e| (e, "environment")));
    if let Some((holder, key)) = setup {
        let mut staged = Vec::new();
        match holder {
            Value::Null => {}
            Value::Object(setup) => {
                for inner in setup.keys() {
                    if !["copy_test_files", "files", "commands"].contains(&inner.as_str()) {
                        return Err(context.invalid(
                            &format!("{at}.{key}.{inner}"),
                            "is not a setup field skill-lift knows (the reference reads `copy_test_files`, `files` and `commands`); it would change what the agent sees, so it is refused".to_string(),
                        ));
                    }
                }
                match setup.get("commands") {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(list)) if list.is_empty() => {}
                    Some(_) => {
                        return Err(context.invalid(
                            &format!("{at}.{key}.commands"),
                            "setup commands are not supported: the reference runs each with `/bin/sh -c` in the work folder before the agent starts (120 s each, exit status ignored); skill-lift does not run them, so the agent would see a different workspace; remove the scenario or produce the files it needs with `setup.files`".to_string(),
                        ));
                    }
                }
                match setup.get("copy_test_files") {
                    None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                    Some(Value::Bool(true)) => {
                        staged.extend(test_files(context, &format!("{at}.{key}.copy_test_files"))?);
                    }
                    Some(_) => {
                        return Err(context.invalid(
                            &format!("{at}.{key}.copy_test_files"),
                            "must be true or false".to_string(),
                        ));
                    }
                }
                let files_at = format!("{at}.{key}.files");
                match setup.get("files") {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(entries)) => {
                        for (index, entry) in entries.iter().enumerate() {
                            staged.push(read_setup_file(
                                entry,
                                &format!("{files_at}[{index}]"),
                                context,
                                bounds,
                            )?);
                        }
                    }
                    Some(_) => {
                        return Err(
                            context.invalid(&files_at, "must be a list of files".to_string())
                        );
                    }
                }
            }
            _ => {
                return Err(context.invalid(&field(key), "must be a mapping".to_string()));
            }
        }
        case.files = CaseFiles::Listed(staged);
    }
    for key in ["assertions", "graders"] {
        match object.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    read_assertion(
                        item,
                        &format!("{at}.{key}[{index}]"),
                        context,
                        &mut case,
                        for_judge,
                    )?;
                }
            }
            Some(_) => {
                return Err(context.invalid(&field(key), "must be a list".to_string()));
            }
        }
    }
    read_constraints(object, at, context, &mut case)?;
    match object.get("rubric") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                let text = match item {
                    Value::String(s) => s.clone(),
                    Value::Object(o) => super::assertion_text(o).ok_or_else(|| {
                        context.invalid(
                            &format!("{at}.rubric[{index}]"),
                            "must be text or an object with `text` or `description`".to_string(),
                        )
                    })?,
                    _ => {
                        return Err(context.invalid(
                            &format!("{at}.rubric[{index}]"),
                            "must be text".to_string(),
                        ));
                    }
                };
                *for_judge.entry("rubric".to_string()).or_default() += 1;
                case.assertions.push(text);
            }
        }
        Some(Value::String(text)) => {
            *for_judge.entry("rubric".to_string()).or_default() += 1;
            case.assertions.push(text.clone());
        }
        Some(_) => return Err(context.invalid(&field("rubric"), "must be a list".to_string())),
    }
    Ok(case)
}

/// One setup file: `{path|dest, source|src}` (a file, `source` relative to the skill folder as
/// in the reference) or `{path, content}`.
fn read_setup_file(
    entry: &Value,
    at: &str,
    context: &Context,
    bounds: &[PathBuf],
) -> Result<CaseFile, EvalSetError> {
    let Value::Object(object) = entry else {
        return Err(context.invalid(at, "must be a mapping with `path`".to_string()));
    };
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|key| object.get(*key).and_then(Value::as_str).map(str::to_string))
    };
    let source = text(&["source", "src"]);
    let destination = text(&["path", "dest"])
        .ok_or_else(|| context.invalid(&format!("{at}.path"), "is required".to_string()))?;
    let destination = checked_relative(&destination)
        .ok_or_else(|| {
            context.invalid(
                &format!("{at}.path"),
                format!("`{destination}` must be a relative path inside the workspace (no `..`)"),
            )
        })?
        .to_path_buf();
    if let Some(content) = object.get("content") {
        let Value::String(content) = content else {
            return Err(context.invalid(&format!("{at}.content"), "must be text".to_string()));
        };
        let source = materialize(content).map_err(|error| EvalSetError::Read {
            path: context.path.clone(),
            source: error,
        })?;
        return Ok(CaseFile {
            source,
            destination,
        });
    }
    let Some(source) = source else {
        return Err(context.invalid(
            at,
            "needs `source` (a file) or `content` (text)".to_string(),
        ));
    };
    let trimmed = source.trim();
    if trimmed.is_empty() || Path::new(trimmed).is_absolute() {
        return Err(context.invalid(
            &format!("{at}.source"),
            format!("`{source}` must be a path relative to the skill folder"),
        ));
    }
    // The reference resolves `source` against the skill folder (AgentRunner.SetupWorkDir).
    let joined = context.skill_root.join(trimmed);
    let resolved = joined.canonicalize().map_err(|_| {
        let beside_eval = context.eval_dir.join(trimmed);
        let hint = if beside_eval.exists() {
            format!(
                "; it exists relative to the eval file's folder ({}), but the reference resolves `source` against the skill folder: write it relative to {}",
                beside_eval.display(),
                context.skill_root.display()
            )
        } else {
            String::new()
        };
        context.invalid(
            &format!("{at}.source"),
            format!(
                "`{source}` does not exist (resolved against the skill folder: {}){hint}",
                joined.display()
            ),
        )
    })?;
    if !bounds.iter().any(|bound| resolved.starts_with(bound)) {
        return Err(context.invalid(
            &format!("{at}.source"),
            format!(
                "`{source}` resolves to {}, outside the repository that holds the skill and the eval file ({})",
                resolved.display(),
                bounds
                    .iter()
                    .map(|b| b.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    leak_guard(context, &resolved, &format!("{at}.source"), &source)?;
    Ok(CaseFile {
        source: resolved,
        destination,
    })
}

/// Refuse a staged source that is the target skill's `SKILL.md` or holds the skill folder.
fn leak_guard(
    context: &Context,
    resolved: &Path,
    at: &str,
    shown: &str,
) -> Result<(), EvalSetError> {
    let skill_root = context
        .skill_root
        .canonicalize()
        .unwrap_or(context.skill_root.clone());
    if resolved == skill_root.join("SKILL.md") || skill_root.starts_with(resolved) {
        return Err(context.invalid(
            at,
            format!("leak guard: `{shown}` would copy the target skill into the workspace, where the baseline arm would see it"),
        ));
    }
    Ok(())
}

/// `copy_test_files: true`: every entry beside the eval file (its own file and `eval.yaml`
/// excepted), staged under its name, as the reference's `SetupWorkDir` copies them; sorted by
/// name. Explicit `setup.files` come after and replace a copied file of the same path.
fn test_files(context: &Context, at: &str) -> Result<Vec<CaseFile>, EvalSetError> {
    let dir = if context.eval_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        context.eval_dir.as_path()
    };
    let entries = std::fs::read_dir(dir).map_err(|error| EvalSetError::Read {
        path: dir.to_path_buf(),
        source: error,
    })?;
    let own = context.path.file_name().map(|n| n.to_os_string());
    let mut names: Vec<std::ffi::OsString> = entries
        .flatten()
        .map(|entry| entry.file_name())
        .filter(|name| name != "eval.yaml" && Some(name) != own.as_ref())
        .collect();
    names.sort();
    let mut files = Vec::with_capacity(names.len());
    for name in names {
        let path = dir.join(&name);
        let resolved = path.canonicalize().map_err(|error| EvalSetError::Read {
            path: path.clone(),
            source: error,
        })?;
        leak_guard(context, &resolved, at, &name.to_string_lossy())?;
        files.push(CaseFile {
            source: resolved,
            destination: PathBuf::from(name),
        });
    }
    Ok(files)
}

/// The folders a `setup.files[].source` may resolve into: the repository that holds the skill
/// and the eval file (the nearest folder above both with a `.git`), else the deepest folder
/// holding both; when that is the file-system root, the skill folder and the eval folder only.
fn source_bounds(context: &Context) -> Vec<PathBuf> {
    let canonical = |p: &Path| {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        p.canonicalize().unwrap_or(p.to_path_buf())
    };
    let skill = canonical(&context.skill_root);
    let eval = canonical(&context.eval_dir);
    let common = skill
        .ancestors()
        .find(|a| eval.starts_with(a))
        .map(Path::to_path_buf);
    if let Some(repo) = common
        .as_deref()
        .and_then(|c| c.ancestors().find(|a| a.join(".git").exists()))
    {
        return vec![repo.to_path_buf()];
    }
    match common {
        Some(common) if common.parent().is_some() => vec![common],
        _ => vec![skill, eval],
    }
}

/// The case id of a free-text scenario name: ASCII letters and digits lower-cased, every other
/// run of characters one `-`, no `-` at either end, at most [`MAX_ID_CHARS`] characters;
/// `scenario` when nothing is left.
pub fn slug(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(MAX_ID_CHARS);
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        "scenario".to_string()
    } else {
        trimmed.to_string()
    }
}

/// `expect_tools`, `reject_tools`, `max_turns`, `max_tokens`: checks on the trajectory, as the
/// reference's `EvaluateConstraints`.
fn read_constraints(
    object: &Map<String, Value>,
    at: &str,
    context: &Context,
    case: &mut GoldenCase,
) -> Result<(), EvalSetError> {
    for (key, used) in [("expect_tools", true), ("reject_tools", false)] {
        match object.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(names)) => {
                for (index, name) in names.iter().enumerate() {
                    let Some(name) = name.as_str().filter(|n| !n.trim().is_empty()) else {
                        return Err(context.invalid(
                            &format!("{at}.{key}[{index}]"),
                            "must be a tool name".to_string(),
                        ));
                    };
                    let name = name.trim().to_string();
                    case.checks.push(if used {
                        Check::ToolUsed { name }
                    } else {
                        Check::ToolNotUsed { name }
                    });
                }
            }
            Some(_) => {
                return Err(context.invalid(
                    &format!("{at}.{key}"),
                    "must be a list of tool names".to_string(),
                ));
            }
        }
    }
    for key in ["max_turns", "max_tokens"] {
        match object.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) if n.as_u64().is_some() => {
                let max = n.as_u64().unwrap_or(0);
                case.checks.push(if key == "max_turns" {
                    Check::MaxTurns { max }
                } else {
                    Check::MaxTokens { max }
                });
            }
            Some(_) => {
                return Err(
                    context.invalid(&format!("{at}.{key}"), "must be a whole number".to_string())
                );
            }
        }
    }
    Ok(())
}

/// `path` without a leading `./`, when it is relative and has no `..`.
fn checked_relative(path: &str) -> Option<&Path> {
    let trimmed = path.trim().trim_start_matches("./");
    let relative = Path::new(trimmed);
    let ok = !trimmed.is_empty()
        && !relative.is_absolute()
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    ok.then_some(relative)
}

/// Write inline setup content once to `<tmp>/skill-lift-inline/<sha256>` and return the path.
fn materialize(content: &str) -> std::io::Result<PathBuf> {
    let digest = sha256_digest(content.as_bytes());
    let name = digest.trim_start_matches("sha256:");
    let dir = std::env::temp_dir().join("skill-lift-inline");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(name);
    let current = std::fs::read(&path).ok();
    if current.as_deref() != Some(content.as_bytes()) {
        let temporary = dir.join(format!("{name}.{}", std::process::id()));
        crate::disk::write(&temporary, content).map_err(crate::disk::DiskError::into_io)?;
        std::fs::rename(&temporary, &path)?;
    }
    Ok(path)
}

/// One assertion: `{type: X, value|path|pattern|…}` or the single-key `{X: value}` form.
fn read_assertion(
    item: &Value,
    at: &str,
    context: &Context,
    case: &mut GoldenCase,
    for_judge: &mut BTreeMap<String, usize>,
) -> Result<(), EvalSetError> {
    let (kind, argument) = match item {
        Value::String(text) => {
            // A bare sentence is a judge assertion.
            case.assertions.push(text.clone());
            return Ok(());
        }
        Value::Object(object) => match object.get("type").and_then(Value::as_str) {
            Some(kind) => (kind.to_string(), Value::Object(object.clone())),
            None if object.len() == 1 => {
                let (kind, value) = object.iter().next().expect("one key");
                (kind.clone(), value.clone())
            }
            None => {
                return Err(context.invalid(
                    at,
                    "needs `type` (or a single key naming the assertion type)".to_string(),
                ));
            }
        },
        _ => return Err(context.invalid(at, "must be a mapping".to_string())),
    };
    // The argument: a scalar (single-key form) or the mapping's value/pattern/path fields.
    let scalar = |keys: &[&str]| -> Option<String> {
        match &argument {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Object(o) => keys
                .iter()
                .find_map(|key| o.get(*key).and_then(Value::as_str).map(str::to_string)),
            _ => None,
        }
    };
    let needed = |what: &str| context.invalid(at, format!("`{kind}` needs {what}"));
    // Regular expressions: the reference matches .NET patterns ignoring case.
    let regex = |pattern: String| -> Result<String, EvalSetError> {
        let pattern = format!("(?i){pattern}");
        regex::Regex::new(&pattern).map_err(|error| {
            context.invalid(
                &format!("{at}.pattern"),
                format!("not a regular expression skill-lift can run (Rust `regex` syntax; the reference uses .NET regular expressions, ignoring case): {error}"),
            )
        })?;
        Ok(pattern)
    };
    let object_field = |keys: &[&str]| match &argument {
        Value::Object(o) => keys
            .iter()
            .find_map(|key| o.get(*key).and_then(Value::as_str).map(str::to_string)),
        _ => None,
    };
    let check = match kind.as_str() {
        "output_contains" => json!({"type": "contains", "ignore_case": true,
            "value": scalar(&["value", "text", "needle"]).ok_or_else(|| needed("a value"))?}),
        "output_not_contains" => json!({"type": "not_contains", "ignore_case": true,
            "value": scalar(&["value", "text", "needle"]).ok_or_else(|| needed("a value"))?}),
        "output_matches" => json!({"type": "regex",
            "pattern": regex(scalar(&["pattern", "value", "regex"]).ok_or_else(|| needed("a pattern"))?)?}),
        "output_not_matches" => json!({"type": "not_regex",
            "pattern": regex(scalar(&["pattern", "value", "regex"]).ok_or_else(|| needed("a pattern"))?)?}),
        "file_exists" | "file_not_exists" => json!({"type": kind,
            "path": scalar(&["path", "value", "file"]).ok_or_else(|| needed("a path"))?}),
        "file_contains" | "file_not_contains" => {
            if !matches!(argument, Value::Object(_)) {
                return Err(needed("`path` and `value`"));
            }
            json!({"type": kind,
                "path": object_field(&["path", "file"]).ok_or_else(|| needed("`path`"))?,
                "value": object_field(&["value", "contains", "text"]).ok_or_else(|| needed("`value`"))?})
        }
        "exit_success" => json!({"type": "answered"}),
        other => {
            *for_judge.entry(other.to_string()).or_default() += 1;
            let detail = match &argument {
                Value::Object(o) => {
                    let mut o = o.clone();
                    o.remove("type");
                    super::assertion_text(&o)
                        .or_else(|| {
                            ["rubric", "prompt", "value", "pattern", "path"]
                                .iter()
                                .find_map(|k| o.get(*k).and_then(Value::as_str).map(str::to_string))
                        })
                        .unwrap_or_else(|| Value::Object(o).to_string())
                }
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            case.assertions.push(format!("{other}: {detail}"));
            return Ok(());
        }
    };
    let check: Check =
        serde_json::from_value(check).map_err(|error| context.invalid(at, error.to_string()))?;
    check
        .validate()
        .map_err(|error| context.invalid(at, error.to_string()))?;
    case.checks.push(check);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_of_free_text_names() {
        assert_eq!(
            slug("Build project with /bl flag"),
            "build-project-with-bl-flag"
        );
        assert_eq!(slug(".NET Framework 4.8 app"), "net-framework-4-8-app");
        assert_eq!(slug("¿Qué?"), "qu");
        assert_eq!(slug("!!!"), "scenario");
        assert!(slug(&"a b ".repeat(100)).len() <= MAX_ID_CHARS);
    }

    fn load(dir: &Path, yaml: &str) -> Result<EvalSet, EvalSetError> {
        let path = dir.join("tests/eval.yaml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, yaml).unwrap();
        crate::features::evalset::load_eval_set(&path, &dir.join("skill"))
    }

    #[test]
    fn names_ids_labels_and_sources() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("skill")).unwrap();
        std::fs::write(root.join("skill/SKILL.md"), "---\nname: s\n---\n").unwrap();
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/data.txt"), "x").unwrap();
        let set = load(
            root,
            "scenarios:\n  - name: Build it now\n    prompt: p\n    setup:\n      files:\n        - path: d.txt\n          source: ../tests/data.txt\n  - name: build-it-now\n    prompt: q\n  - name: Build it, now!\n    prompt: r\n",
        )
        .unwrap();
        let ids: Vec<&str> = set.cases.iter().map(|c| c.id.as_str()).collect();
        // The name written as an id keeps it; the slugs take the next free suffixes.
        assert_eq!(
            ids,
            vec!["build-it-now-2", "build-it-now", "build-it-now-3"]
        );
        assert_eq!(set.cases[0].label.as_deref(), Some("Build it now"));
        assert_eq!(set.cases[0].timeout_s, Some(DEFAULT_TIMEOUT_S));
        assert_eq!(set.cases[1].label, None);
        let CaseFiles::Listed(files) = &set.cases[0].files else {
            panic!("listed")
        };
        assert!(files[0].source.ends_with("tests/data.txt"));
        // Two identifier names that collide are an error, as before.
        let error = load(
            root,
            "scenarios:\n  - name: a\n    prompt: p\n  - name: a\n    prompt: q\n",
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("duplicate scenario name `a`"), "{error}");
        // A source relative to the eval file's folder is named as such.
        let error = load(
            root,
            "scenarios:\n  - name: a\n    prompt: p\n    setup:\n      files:\n        - path: d.txt\n          source: data.txt\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("resolves `source` against the skill folder"),
            "{error}"
        );
        // copy_test_files stages the eval file's siblings, not the eval file.
        let set = load(
            root,
            "scenarios:\n  - name: a\n    prompt: p\n    setup:\n      copy_test_files: true\n",
        )
        .unwrap();
        let CaseFiles::Listed(files) = &set.cases[0].files else {
            panic!("listed")
        };
        let names: Vec<_> = files.iter().map(|f| f.destination.clone()).collect();
        assert_eq!(names, vec![PathBuf::from("data.txt")]);
    }

    #[test]
    fn sources_outside_the_repository_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("skill")).unwrap();
        let secret = outside.path().join("secret.txt");
        let relative = format!("../{}", "../".repeat(root.components().count()))
            + secret.strip_prefix("/").unwrap().to_str().unwrap();
        let error = load(
            root,
            &format!("scenarios:\n  - name: a\n    prompt: p\n    setup:\n      files:\n        - path: d.txt\n          source: \"{relative}\"\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("outside the repository that holds the skill and the eval file"),
            "{error}"
        );
    }
}
