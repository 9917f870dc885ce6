//! dotnet/skills **Vally** `eval.yaml`: `scenarios` (or the older `stimuli`) with a prompt,
//! setup files, assertions and a rubric, read into [`GoldenCase`]s.
//!
//! Shape (field names as published; values invented):
//!
//! ```yaml
//! scenarios:
//!   - name: totals-by-region
//!     prompt: "Summarise data/sales.csv by region."
//!     setup:
//!       files:
//!         - path: data/sales.csv        # where it lands in the workspace
//!           source: fixtures/sales.csv  # relative to eval.yaml's folder
//!         - path: notes.txt
//!           content: "inline text"
//!     assertions:
//!       - type: output_contains
//!         value: "North"
//!       - output_matches: "\\d+"        # the single-key form
//!       - file_exists: report.md
//!     rubric:
//!       - "Names the region with the highest total"
//!     expect_activation: true
//! ```
//!
//! Assertions map to checks: `output_contains` → `contains`, `output_not_contains` →
//! `not_contains`, `output_matches` → `regex`, `file_exists` → `file_exists`, `file_contains`
//! → `file_contains`; other assertion types (`output_judge`, `file_judge`, …) and the rubric
//! become judge assertions (reported once per file). `expect_activation: false` marks a
//! negative case. Inline `content` files are written once to a content-addressed folder under
//! the system temporary folder and staged from there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{
    CaseFile, CaseFiles, Context, EvalFormat, EvalSet, EvalSetError, EvalSetWarning, ExpectedSkill,
    GoldenCase, validate_id,
};
use crate::asset::fingerprint::sha256_digest;
use crate::grade::checks::Check;

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
];

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
    let mut cases = Vec::with_capacity(items.len());
    let mut seen = BTreeSet::new();
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
        let case = read_scenario(object, &at, context, &mut for_judge)?;
        if !seen.insert(case.id.clone()) {
            return Err(context.invalid(
                &format!("{at}.name"),
                format!("duplicate scenario name `{}`", case.id),
            ));
        }
        cases.push(case);
    }
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
    for_judge: &mut BTreeMap<String, usize>,
) -> Result<GoldenCase, EvalSetError> {
    let field = |key: &str| format!("{at}.{key}");
    let id = match object.get("name").or_else(|| object.get("id")) {
        Some(Value::String(name)) => name.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Err(context.invalid(&field("name"), "must be a string".to_string())),
        None => return Err(context.invalid(&field("name"), "is required".to_string())),
    };
    validate_id(&id).map_err(|message| context.invalid(&field("name"), message))?;
    let prompt = match object.get("prompt") {
        Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
        Some(_) => {
            return Err(context.invalid(&field("prompt"), "must be a non-empty string".to_string()));
        }
        None => return Err(context.invalid(&field("prompt"), "is required".to_string())),
    };
    let mut case = GoldenCase::new(id, prompt);
    case.files = CaseFiles::Listed(Vec::new());
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
    // Setup files: `setup.files` (scenarios) or `environment.files` (stimuli).
    let files = object
        .get("setup")
        .map(|s| (s, "setup"))
        .or_else(|| object.get("environment").map(|e| (e, "environment")));
    if let Some((holder, key)) = files {
        let files_at = format!("{at}.{key}.files");
        match holder.get("files") {
            None | Some(Value::Null) => {}
            Some(Value::Array(entries)) => {
                let mut staged = Vec::with_capacity(entries.len());
                for (index, entry) in entries.iter().enumerate() {
                    staged.push(read_setup_file(
                        entry,
                        &format!("{files_at}[{index}]"),
                        context,
                    )?);
                }
                case.files = CaseFiles::Listed(staged);
            }
            Some(_) => {
                return Err(context.invalid(&files_at, "must be a list of files".to_string()));
            }
        }
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

/// One setup file: `{path|dest, source|src}` (a file next to eval.yaml) or `{path, content}`.
fn read_setup_file(entry: &Value, at: &str, context: &Context) -> Result<CaseFile, EvalSetError> {
    let Value::Object(object) = entry else {
        return Err(context.invalid(at, "must be a mapping with `path`".to_string()));
    };
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|key| object.get(*key).and_then(Value::as_str).map(str::to_string))
    };
    let source = text(&["source", "src"]);
    let destination = text(&["path", "dest"])
        .or_else(|| source.clone())
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
    let Some(relative) = checked_relative(&source) else {
        return Err(context.invalid(
            &format!("{at}.source"),
            format!("`{source}` must be a relative path inside the eval folder (no `..`)"),
        ));
    };
    let joined = context.eval_dir.join(relative);
    let resolved = joined.canonicalize().map_err(|_| {
        context.invalid(
            &format!("{at}.source"),
            format!(
                "`{source}` does not exist (looked for {})",
                joined.display()
            ),
        )
    })?;
    let base = context
        .eval_dir
        .canonicalize()
        .unwrap_or(context.eval_dir.clone());
    if !resolved.starts_with(&base) {
        return Err(context.invalid(
            &format!("{at}.source"),
            format!(
                "`{source}` resolves outside the eval folder ({})",
                resolved.display()
            ),
        ));
    }
    let skill_root = context
        .skill_root
        .canonicalize()
        .unwrap_or(context.skill_root.clone());
    if resolved == skill_root.join("SKILL.md") || skill_root.starts_with(&resolved) {
        return Err(context.invalid(
            &format!("{at}.source"),
            format!("leak guard: `{source}` would copy the target skill into the workspace, where the baseline arm would see it"),
        ));
    }
    Ok(CaseFile {
        source: resolved,
        destination,
    })
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
        std::fs::write(&temporary, content)?;
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
    let check = match kind.as_str() {
        "output_contains" => json!({"type": "contains",
            "value": scalar(&["value", "text", "needle"]).ok_or_else(|| needed("a value"))?}),
        "output_not_contains" => json!({"type": "not_contains",
            "value": scalar(&["value", "text", "needle"]).ok_or_else(|| needed("a value"))?}),
        "output_matches" => json!({"type": "regex",
            "pattern": scalar(&["pattern", "value", "regex"]).ok_or_else(|| needed("a pattern"))?}),
        "file_exists" => json!({"type": "file_exists",
            "path": scalar(&["path", "value", "file"]).ok_or_else(|| needed("a path"))?}),
        "file_contains" => {
            let Value::Object(o) = &argument else {
                return Err(needed("`path` and `value`"));
            };
            let get = |keys: &[&str]| {
                keys.iter()
                    .find_map(|key| o.get(*key).and_then(Value::as_str).map(str::to_string))
            };
            json!({"type": "file_contains",
                "path": get(&["path", "file"]).ok_or_else(|| needed("`path`"))?,
                "value": get(&["value", "contains", "text"]).ok_or_else(|| needed("`value`"))?})
        }
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
