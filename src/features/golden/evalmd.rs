//! `EVAL.md`: author cases written in Markdown beside `SKILL.md` (format in
//! `docs/eval-formats.md`). One `## <case id>` section per case, with `### Prompt` (required),
//! `### Expected output`, `### Expected behaviors` (a list), `### Files` (a list) and
//! `### Expected skill` (`none` for a negative case, or a skill name). Text before the first
//! `##` heading is free; headings inside fenced code blocks are text.
//!
//! [`parse`] turns the file into the `evals.json` shape (every case `origin: author`), which the
//! eval-set loader then validates like any other file; structural errors name the file and
//! line. [`with_author_cases`] gives author cases priority over a generated or mined set: an
//! author case replaces a case with the same id or the same prompt.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use crate::features::evalset::{EvalSet, EvalSetError, load_eval_set};

/// The author-cases file name, beside `SKILL.md`.
pub(crate) const EVAL_MD: &str = "EVAL.md";

/// The sections a case may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Prompt,
    ExpectedOutput,
    ExpectedBehaviors,
    Files,
    ExpectedSkill,
}

impl Section {
    fn from_heading(text: &str) -> Option<Self> {
        match text.trim().trim_end_matches(':').to_lowercase().as_str() {
            "prompt" => Some(Section::Prompt),
            "expected output" => Some(Section::ExpectedOutput),
            "expected behaviors" | "expected behaviours" | "assertions" => {
                Some(Section::ExpectedBehaviors)
            }
            "files" => Some(Section::Files),
            "expected skill" => Some(Section::ExpectedSkill),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Section::Prompt => "Prompt",
            Section::ExpectedOutput => "Expected output",
            Section::ExpectedBehaviors => "Expected behaviors",
            Section::Files => "Files",
            Section::ExpectedSkill => "Expected skill",
        }
    }
}

struct Case {
    id: String,
    line: usize,
    sections: Vec<(Section, usize, Vec<String>)>,
}

fn error(path: &Path, line: usize, message: String) -> EvalSetError {
    EvalSetError::Syntax {
        path: path.to_path_buf(),
        line,
        column: 1,
        format: "EVAL.md",
        message,
    }
}

/// A section's text: its lines trimmed of blank lines at both ends.
fn block(lines: &[String]) -> String {
    let start = lines.iter().position(|l| !l.trim().is_empty());
    let end = lines.iter().rposition(|l| !l.trim().is_empty());
    match (start, end) {
        (Some(start), Some(end)) => lines[start..=end].join("\n"),
        _ => String::new(),
    }
}

/// A list section's items (`- item` or `* item`; continuation lines indented).
fn list(
    path: &Path,
    section: Section,
    first_line: usize,
    lines: &[String],
) -> Result<Vec<String>, EvalSetError> {
    let mut items: Vec<String> = Vec::new();
    for (offset, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(item) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
        {
            items.push(item.trim().trim_matches('`').to_string());
        } else if line.starts_with("  ") && !items.is_empty() {
            let last = items.last_mut().expect("non-empty");
            last.push(' ');
            last.push_str(trimmed);
        } else {
            return Err(error(
                path,
                first_line + 1 + offset,
                format!(
                    "`### {}` takes a list (`- item`), found `{}`",
                    section.name(),
                    crate::disk::redact::truncate(trimmed, 60)
                ),
            ));
        }
    }
    Ok(items)
}

/// Parse `EVAL.md` text into the `evals.json` shape.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Value, EvalSetError> {
    let mut cases: Vec<Case> = Vec::new();
    let mut fence: Option<String> = None;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(trimmed[..3].to_string());
        } else if let Some(heading) = line.strip_prefix("## ") {
            let id = heading
                .trim()
                .trim_start_matches("Case:")
                .trim()
                .to_string();
            if id.is_empty() {
                return Err(error(
                    path,
                    number,
                    "a case heading needs an id (`## my-case`)".into(),
                ));
            }
            cases.push(Case {
                id,
                line: number,
                sections: Vec::new(),
            });
            continue;
        } else if let Some(heading) = line.strip_prefix("### ") {
            let Some(case) = cases.last_mut() else {
                return Err(error(
                    path,
                    number,
                    format!(
                        "`### {}` before any case: start a case with `## <case id>`",
                        heading.trim()
                    ),
                ));
            };
            let Some(section) = Section::from_heading(heading) else {
                return Err(error(
                    path,
                    number,
                    format!(
                        "unknown section `### {}` in case `{}`; expected Prompt, Expected output, Expected behaviors, Files or Expected skill",
                        heading.trim(),
                        case.id
                    ),
                ));
            };
            if case.sections.iter().any(|(s, _, _)| *s == section) {
                return Err(error(
                    path,
                    number,
                    format!("case `{}` has a second `### {}`", case.id, section.name()),
                ));
            }
            case.sections.push((section, number, Vec::new()));
            continue;
        } else if line.starts_with("# ") || line.starts_with("#\t") {
            continue;
        }
        if let Some(case) = cases.last_mut() {
            match case.sections.last_mut() {
                Some((_, _, lines)) => lines.push(raw.to_string()),
                None if !trimmed.is_empty() => {
                    return Err(error(
                        path,
                        number,
                        format!(
                            "text in case `{}` outside a section; put it under `### Prompt` (or another `###` section)",
                            case.id
                        ),
                    ));
                }
                None => {}
            }
        }
    }
    if let Some(open) = fence {
        return Err(error(
            path,
            text.lines().count(),
            format!("a `{open}` code fence is never closed"),
        ));
    }
    if cases.is_empty() {
        return Err(error(
            path,
            1,
            "no case: write one `## <case id>` section per case with a `### Prompt`".into(),
        ));
    }
    let mut evals = Vec::with_capacity(cases.len());
    for case in &cases {
        let mut value = json!({"id": case.id, "origin": "author"});
        let mut has_prompt = false;
        for (section, line, lines) in &case.sections {
            match section {
                Section::Prompt => {
                    let prompt = block(lines);
                    if prompt.is_empty() {
                        return Err(error(
                            path,
                            *line,
                            format!("case `{}`: the prompt is empty", case.id),
                        ));
                    }
                    has_prompt = true;
                    value["prompt"] = json!(prompt);
                }
                Section::ExpectedOutput => value["expected_output"] = json!(block(lines)),
                Section::ExpectedBehaviors => {
                    value["assertions"] = json!(list(path, *section, *line, lines)?)
                }
                Section::Files => value["files"] = json!(list(path, *section, *line, lines)?),
                Section::ExpectedSkill => {
                    let skill = block(lines);
                    let skill = skill.trim().trim_matches('`');
                    value["expected_skill"] = match skill.to_lowercase().as_str() {
                        "none" | "null" | "" => Value::Null,
                        _ => json!(skill),
                    };
                }
            }
        }
        if !has_prompt {
            return Err(error(
                path,
                case.line,
                format!("case `{}` has no `### Prompt`", case.id),
            ));
        }
        evals.push(value);
    }
    Ok(json!({"evals": evals}))
}

/// The line of the `index`-th case heading in an `EVAL.md` (for loader errors).
pub(crate) fn case_line(text: &str, index: usize) -> Option<usize> {
    let mut fence = false;
    let mut seen = 0;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = !fence;
        } else if !fence && line.starts_with("## ") {
            if seen == index {
                return Some(number + 1);
            }
            seen += 1;
        }
    }
    None
}

/// Author cases first: the `EVAL.md` beside `SKILL.md` (when there is one and `set` is not that
/// file) loaded and put before `set`'s cases; a case of `set` with an author case's id or
/// prompt is dropped. Returns the merged set and the ids dropped.
pub(crate) fn with_author_cases(
    set: EvalSet,
    skill_dir: &Path,
) -> Result<(EvalSet, Vec<String>), EvalSetError> {
    let author_path = skill_dir.join(EVAL_MD);
    if !author_path.is_file() || set.path == author_path {
        return Ok((set, Vec::new()));
    }
    let author = load_eval_set(&author_path, skill_dir)?;
    let key = super::mine::prompt_key;
    let ids: BTreeSet<&str> = author.cases.iter().map(|c| c.id.as_str()).collect();
    let prompts: BTreeSet<String> = author.cases.iter().map(|c| key(&c.prompt)).collect();
    let mut dropped = Vec::new();
    let mut merged = EvalSet {
        path: set.path.clone(),
        digest: {
            use sha2::Digest;
            let mut hasher = sha2::Sha256::new();
            hasher.update(author.digest.as_bytes());
            hasher.update(set.digest.as_bytes());
            format!("sha256:{}", hex::encode(hasher.finalize()))
        },
        format: set.format,
        skill_name: set.skill_name.clone().or(author.skill_name.clone()),
        cases: author.cases.clone(),
        warnings: author.warnings.clone(),
        harbor_tasks: set.harbor_tasks.clone(),
        verifier_timeout_s: set.verifier_timeout_s,
    };
    for case in set.cases {
        if ids.contains(case.id.as_str()) || prompts.contains(&key(&case.prompt)) {
            dropped.push(case.id);
        } else {
            merged.cases.push(case);
        }
    }
    merged.warnings.extend(set.warnings);
    Ok((merged, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# Evals for release-notes\n\nNotes for humans.\n\n## since-tag\n\n### Prompt\n\nDraft release notes since v2.2.\n\n```text\n## not a heading\n```\n\n### Expected output\n\nA list grouped by component.\n\n### Expected behaviors\n\n- Runs `scripts/collect.py` first\n- Groups entries\n  by component\n\n### Files\n\n- evals/files/CHANGELOG.md\n\n## unrelated\n\n### Prompt\nRename tmp to total.\n\n### Expected skill\nnone\n";

    #[test]
    fn parses_cases_sections_and_fences() {
        let value = parse(GOOD, Path::new("EVAL.md")).unwrap();
        let evals = value["evals"].as_array().unwrap();
        assert_eq!(evals.len(), 2);
        assert_eq!(evals[0]["id"], "since-tag");
        assert!(
            evals[0]["prompt"]
                .as_str()
                .unwrap()
                .contains("## not a heading")
        );
        assert_eq!(evals[0]["expected_output"], "A list grouped by component.");
        assert_eq!(
            evals[0]["assertions"],
            json!([
                "Runs `scripts/collect.py` first",
                "Groups entries by component"
            ])
        );
        assert_eq!(evals[0]["files"], json!(["evals/files/CHANGELOG.md"]));
        assert_eq!(evals[0]["origin"], "author");
        assert_eq!(evals[1]["expected_skill"], Value::Null);
        assert_eq!(case_line(GOOD, 1), Some(29));
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            (
                "## a\n### Prompt\nx\n### Colour\nred\n",
                4,
                "unknown section `### Colour`",
            ),
            ("## a\n### Expected output\ny\n", 1, "has no `### Prompt`"),
            (
                "## a\n### Prompt\nx\n### Files\nnot a list\n",
                5,
                "takes a list",
            ),
            ("### Prompt\nx\n", 1, "before any case"),
            ("## a\nstray text\n", 2, "outside a section"),
            (
                "## a\n### Prompt\nx\n### Prompt\ny\n",
                4,
                "second `### Prompt`",
            ),
            ("## a\n### Prompt\n```\nx\n", 4, "never closed"),
            ("just text\n", 1, "no case"),
        ];
        for (text, line, message) in cases {
            let error = parse(text, Path::new("skill/EVAL.md"))
                .unwrap_err()
                .to_string();
            assert!(
                error.starts_with(&format!("skill/EVAL.md:{line}:")) && error.contains(message),
                "{text:?}: {error}"
            );
        }
    }
}
