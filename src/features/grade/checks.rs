//! Deterministic output checks of a golden case (`checks` in `evals.json`) and their evaluation
//! against a trial's final answer and workspace.
//!
//! Answer checks: `contains`, `not_contains`, `regex`, `not_regex`, `equals` (trimmed),
//! `json_path`, `answered` (the answer is not empty).
//! Workspace checks: `file_exists`, `file_not_exists`, `file_contains`, `file_not_contains`
//! (paths relative to the workspace, `*`, `?`, `[…]`, `{a,b}` and `**` globs allowed; escapes are
//! refused at load time and again at evaluation time).
//! Trajectory checks: `tool_used`, `tool_not_used`, `max_turns`, `max_tokens` (what the agent
//! did, from the recorded trajectory).

use std::collections::HashMap;
use std::path::{Component, Path};
use std::sync::{Arc, LazyLock, Mutex};

use crate::record::{CheckResult, OutputMatch};
use regex::Regex;
use serde::{Deserialize, Serialize};

/// Compiled patterns, shared by every trial: a check's regex is compiled once per process, not
/// once per trial (compilation costs far more than matching a short answer).
/// Shared behind an `Arc`, not cloned: a cloned `Regex` starts with an empty pool of match
/// caches, so each trial would build its matching state anew.
static COMPILED: LazyLock<Mutex<HashMap<String, Arc<Regex>>>> = LazyLock::new(Default::default);

/// Compile `pattern`, or fetch it from the process-wide cache.
fn compiled(pattern: &str) -> Result<Arc<Regex>, regex::Error> {
    let mut cache = COMPILED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(regex) = cache.get(pattern) {
        return Ok(Arc::clone(regex));
    }
    let regex = Arc::new(Regex::new(pattern)?);
    cache.insert(pattern.to_string(), Arc::clone(&regex));
    Ok(regex)
}

/// One deterministic check, as written in `evals.json` (`{"type": "contains", "value": "…"}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The final answer contains `value` (case-sensitive unless `ignore_case`).
    Contains {
        value: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ignore_case: bool,
    },
    /// The final answer does not contain `value`.
    NotContains {
        value: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ignore_case: bool,
    },
    /// The final answer matches the regular expression `pattern` (Rust `regex` syntax; use
    /// `(?i)` for case-insensitive, `^`/`$` anchor the whole answer unless `(?m)`).
    Regex { pattern: String },
    /// The trimmed final answer equals the trimmed `value`.
    Equals {
        value: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ignore_case: bool,
    },
    /// The JSON in the final answer (whole answer, else the first fenced code block, else the
    /// first balanced `{…}`/`[…]`) has at `path` (`$.a.b[0]`) a value equal to `equals`, or a
    /// string matching `matches`.
    JsonPath {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        equals: Option<serde_json::Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        matches: Option<String>,
    },
    /// A file matching `path` (a relative path or glob; `*` stays inside one folder, `**`
    /// crosses folders) exists in the workspace after the trial.
    FileExists { path: String },
    /// No file matching `path` exists in the workspace after the trial.
    FileNotExists { path: String },
    /// Some file matching `path` exists in the workspace after the trial and contains `value`.
    FileContains { path: String, value: String },
    /// Some file matching `path` exists in the workspace after the trial and none of the
    /// matching files contains `value` (no matching file fails, as in dotnet/skills' validator).
    FileNotContains { path: String, value: String },
    /// The final answer does not match the regular expression `pattern`.
    NotRegex { pattern: String },
    /// The final answer is not empty (dotnet/skills Vally `exit_success`: the agent completed
    /// with output).
    Answered,
    /// The agent called a tool named `name` (compared ignoring ASCII case: `bash` matches `Bash`).
    ToolUsed { name: String },
    /// The agent never called a tool named `name` (compared ignoring ASCII case).
    ToolNotUsed { name: String },
    /// The agent sent at most `max` assistant messages.
    MaxTurns { max: u64 },
    /// The trial used at most `max` tokens (input + output as reported; when the runner reports
    /// none, the user and assistant message characters / 4, rounded up, as dotnet/skills does).
    MaxTokens { max: u64 },
}

/// Why a check definition is invalid (an input error in the eval set).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CheckDefinitionError {
    #[error("invalid regular expression: {0}")]
    Regex(String),
    #[error("invalid JSON path `{0}` (expected `$`, `.key`, `[\"key\"]` or `[index]` steps)")]
    JsonPath(String),
    #[error("json_path needs exactly one of `equals` or `matches`")]
    JsonPathExpectation,
    #[error("path `{0}` must be relative and stay inside the workspace")]
    EscapingPath(String),
    #[error("invalid glob `{pattern}`: {detail}")]
    Glob {
        /// The pattern as written.
        pattern: String,
        /// Why it does not compile.
        detail: String,
    },
}

/// Why an `expected_output` cannot be checked under its match mode.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum ExpectedOutputError {
    /// A `regex` mode whose expected output does not compile.
    #[error("invalid regular expression: {0}")]
    Regex(String),
    /// A `numeric` mode whose expected output has no number.
    #[error("expected_output_match is numeric but expected_output has no number")]
    NoNumber,
}

/// Why a file check could not look for its files (the check fails with this as its detail).
#[derive(Debug, thiserror::Error, PartialEq)]
enum FileCheckError {
    /// The path leaves the workspace.
    #[error("{0} escapes the workspace")]
    Escapes(String),
    /// The glob does not compile.
    #[error(transparent)]
    Definition(#[from] CheckDefinitionError),
    /// The workspace is too large to walk.
    #[error("{0}: the workspace has more than {GLOB_WALK_LIMIT} entries; use a literal path")]
    TooManyEntries(String),
}

/// Whether `path` is relative and has no `..`, root or prefix component.
pub(crate) fn is_contained_relative_path(path: &str) -> bool {
    let path = Path::new(path);
    !path.as_os_str().is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// One step of a parsed JSON path.
#[derive(Debug, Clone, PartialEq)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn parse_json_path(path: &str) -> Option<Vec<PathStep>> {
    let rest = path.trim().strip_prefix('$')?;
    let mut steps = Vec::new();
    let bytes: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            '.' => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && bytes[end] != '.' && bytes[end] != '[' {
                    end += 1;
                }
                if end == start {
                    return None;
                }
                steps.push(PathStep::Key(bytes[start..end].iter().collect()));
                i = end;
            }
            '[' => {
                let close = bytes[i..].iter().position(|&c| c == ']')? + i;
                let inner: String = bytes[i + 1..close].iter().collect();
                let inner = inner.trim();
                if let Some(quoted) = inner
                    .strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .or_else(|| inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
                {
                    steps.push(PathStep::Key(quoted.to_string()));
                } else {
                    steps.push(PathStep::Index(inner.parse().ok()?));
                }
                i = close + 1;
            }
            _ => return None,
        }
    }
    Some(steps)
}

impl Check {
    /// Validate the definition (regex compiles, JSON path parses, paths stay inside the workspace).
    pub fn validate(&self) -> Result<(), CheckDefinitionError> {
        match self {
            Check::Regex { pattern } | Check::NotRegex { pattern } => compiled(pattern)
                .map(|_| ())
                .map_err(|e| CheckDefinitionError::Regex(e.to_string())),
            Check::JsonPath {
                path,
                equals,
                matches,
            } => {
                parse_json_path(path)
                    .ok_or_else(|| CheckDefinitionError::JsonPath(path.clone()))?;
                if equals.is_some() == matches.is_some() {
                    return Err(CheckDefinitionError::JsonPathExpectation);
                }
                if let Some(pattern) = matches {
                    compiled(pattern).map_err(|e| CheckDefinitionError::Regex(e.to_string()))?;
                }
                Ok(())
            }
            Check::FileExists { path }
            | Check::FileNotExists { path }
            | Check::FileContains { path, .. }
            | Check::FileNotContains { path, .. } => {
                if !is_contained_relative_path(path) {
                    return Err(CheckDefinitionError::EscapingPath(path.clone()));
                }
                if is_glob(path) {
                    glob_matcher(path)?;
                }
                Ok(())
            }
            Check::Contains { .. }
            | Check::NotContains { .. }
            | Check::Equals { .. }
            | Check::Answered
            | Check::ToolUsed { .. }
            | Check::ToolNotUsed { .. }
            | Check::MaxTurns { .. }
            | Check::MaxTokens { .. } => Ok(()),
        }
    }

    /// The check's `type` name.
    pub fn type_name(&self) -> &'static str {
        match self {
            Check::Contains { .. } => "contains",
            Check::NotContains { .. } => "not_contains",
            Check::Regex { .. } => "regex",
            Check::Equals { .. } => "equals",
            Check::JsonPath { .. } => "json_path",
            Check::FileExists { .. } => "file_exists",
            Check::FileNotExists { .. } => "file_not_exists",
            Check::FileContains { .. } => "file_contains",
            Check::FileNotContains { .. } => "file_not_contains",
            Check::NotRegex { .. } => "not_regex",
            Check::Answered => "answered",
            Check::ToolUsed { .. } => "tool_used",
            Check::ToolNotUsed { .. } => "tool_not_used",
            Check::MaxTurns { .. } => "max_turns",
            Check::MaxTokens { .. } => "max_tokens",
        }
    }

    /// Evaluate against the final answer (empty when the trial gave none) and the workspace,
    /// without a trajectory (trajectory checks fail, saying so).
    pub fn evaluate(&self, answer: &str, workspace: &Path) -> CheckResult {
        self.evaluate_in(answer, workspace, None)
    }

    /// Evaluate against the final answer (empty when the trial gave none), the workspace and
    /// the trial's trajectory (what trajectory checks read).
    pub fn evaluate_in(
        &self,
        answer: &str,
        workspace: &Path,
        trajectory: Option<&crate::values::trajectory::Trajectory>,
    ) -> CheckResult {
        let (passed, detail) = match self {
            Check::Contains { value, ignore_case } => {
                let found = contains(answer, value, *ignore_case);
                (
                    found,
                    format!(
                        "answer {} {value:?}",
                        if found { "contains" } else { "lacks" }
                    ),
                )
            }
            Check::NotContains { value, ignore_case } => {
                let found = contains(answer, value, *ignore_case);
                (
                    !found,
                    format!(
                        "answer {} {value:?}",
                        if found { "contains" } else { "lacks" }
                    ),
                )
            }
            Check::Regex { pattern } => match compiled(pattern) {
                Ok(regex) => {
                    let found = regex.is_match(answer);
                    (
                        found,
                        format!(
                            "answer {} /{pattern}/",
                            if found { "matches" } else { "does not match" }
                        ),
                    )
                }
                Err(error) => (false, format!("invalid regex: {error}")),
            },
            Check::Equals { value, ignore_case } => {
                let (a, b) = (answer.trim(), value.trim());
                let equal = if *ignore_case {
                    a.to_lowercase() == b.to_lowercase()
                } else {
                    a == b
                };
                (
                    equal,
                    format!(
                        "answer {} {b:?}",
                        if equal { "equals" } else { "differs from" }
                    ),
                )
            }
            Check::JsonPath {
                path,
                equals,
                matches,
            } => evaluate_json_path(answer, path, equals.as_ref(), matches.as_deref()),
            Check::FileExists { path } => match matching_files(workspace, path) {
                Ok(files) if !files.is_empty() => (true, format!("{path}: {} found", files[0])),
                Ok(_) => (false, format!("no file matching {path} in the workspace")),
                Err(why) => (false, why.to_string()),
            },
            Check::FileNotExists { path } => match matching_files(workspace, path) {
                Ok(files) if !files.is_empty() => {
                    (false, format!("{path}: {} exists but should not", files[0]))
                }
                Ok(_) => (true, format!("no file matching {path} (expected)")),
                Err(why) => (false, why.to_string()),
            },
            Check::FileContains { path, value } => {
                file_contents_check(workspace, path, value, true)
            }
            Check::FileNotContains { path, value } => {
                file_contents_check(workspace, path, value, false)
            }
            Check::NotRegex { pattern } => match compiled(pattern) {
                Ok(regex) => {
                    let found = regex.is_match(answer);
                    (
                        !found,
                        format!(
                            "answer {} /{pattern}/",
                            if found { "matches" } else { "does not match" }
                        ),
                    )
                }
                Err(error) => (false, format!("invalid regex: {error}")),
            },
            Check::Answered => {
                let answered = !answer.trim().is_empty();
                (
                    answered,
                    if answered {
                        "the agent gave an answer".to_string()
                    } else {
                        "the agent gave no answer".to_string()
                    },
                )
            }
            Check::ToolUsed { name } | Check::ToolNotUsed { name } => match trajectory {
                Some(trajectory) => {
                    let used = trajectory
                        .tool_calls
                        .iter()
                        .any(|call| call.name.eq_ignore_ascii_case(name));
                    let wanted = matches!(self, Check::ToolUsed { .. });
                    let mut names: Vec<&str> = trajectory
                        .tool_calls
                        .iter()
                        .map(|call| call.name.as_str())
                        .collect();
                    names.sort_unstable();
                    names.dedup();
                    let seen = if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    };
                    (
                        used == wanted,
                        format!(
                            "tool {name:?} {} (tools used: {seen})",
                            if used { "was used" } else { "was not used" }
                        ),
                    )
                }
                None => (false, "no trajectory to read tool calls from".to_string()),
            },
            Check::MaxTurns { max } => match trajectory {
                Some(trajectory) => {
                    let turns = trajectory
                        .messages
                        .iter()
                        .filter(|m| m.role == crate::values::trajectory::Role::Assistant)
                        .count() as u64;
                    (
                        turns <= *max,
                        format!("{turns} assistant turn(s), at most {max} allowed"),
                    )
                }
                None => (false, "no trajectory to count turns in".to_string()),
            },
            Check::MaxTokens { max } => match trajectory {
                Some(trajectory) => {
                    let (tokens, how) = trajectory_tokens(trajectory);
                    (
                        tokens <= *max,
                        format!("{tokens} tokens ({how}), at most {max} allowed"),
                    )
                }
                None => (false, "no trajectory to count tokens in".to_string()),
            },
        };
        CheckResult {
            check_type: self.type_name().to_string(),
            passed,
            detail,
        }
    }
}

impl Check {
    /// Whether the check reads the workspace (and so can only be evaluated while the trial's
    /// workspace exists; `regrade` reuses the recorded result of such checks).
    pub fn reads_workspace(&self) -> bool {
        matches!(
            self,
            Check::FileExists { .. }
                | Check::FileNotExists { .. }
                | Check::FileContains { .. }
                | Check::FileNotContains { .. }
        )
    }
}

impl OutputMatch {
    /// The mode's name as written in `evals.json` and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputMatch::Judge => "judge",
            OutputMatch::Exact => "exact",
            OutputMatch::Contains => "contains",
            OutputMatch::Regex => "regex",
            OutputMatch::Numeric => "numeric",
        }
    }

    /// Whether the mode is decided by skill-lift itself (an implicit output check).
    pub fn is_deterministic(self) -> bool {
        self != OutputMatch::Judge
    }
}

impl std::str::FromStr for OutputMatch {
    type Err = crate::values::unknown_name::UnknownName;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "judge" => Ok(OutputMatch::Judge),
            "exact" => Ok(OutputMatch::Exact),
            "contains" => Ok(OutputMatch::Contains),
            "regex" => Ok(OutputMatch::Regex),
            "numeric" => Ok(OutputMatch::Numeric),
            other => Err(crate::values::unknown_name::UnknownName::new(
                "expected-output match",
                other,
                ["judge", "exact", "contains", "regex", "numeric"],
            )),
        }
    }
}

/// Validate `expected_output` for `mode` (the regex compiles; a number is present).
pub(crate) fn validate_expected_output(
    mode: OutputMatch,
    expected: &str,
) -> Result<(), ExpectedOutputError> {
    match mode {
        OutputMatch::Regex => compiled(expected)
            .map(|_| ())
            .map_err(|e| ExpectedOutputError::Regex(e.to_string())),
        OutputMatch::Numeric if numbers_in(expected).is_empty() => {
            Err(ExpectedOutputError::NoNumber)
        }
        _ => Ok(()),
    }
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The decimal numbers in `text`, thousands separators (`2,340`) removed.
fn numbers_in(text: &str) -> Vec<f64> {
    static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
            .expect("number pattern")
    });
    NUMBER
        .find_iter(text)
        .filter_map(|m| m.as_str().replace(',', "").parse::<f64>().ok())
        .collect()
}

/// The implicit output check of a deterministic `expected_output_match` mode; `None` for
/// [`OutputMatch::Judge`]. The result's type is `expected_output`.
pub(crate) fn expected_output_check(
    mode: OutputMatch,
    expected: &str,
    answer: &str,
) -> Option<CheckResult> {
    let (passed, detail) = match mode {
        OutputMatch::Judge => return None,
        OutputMatch::Exact => {
            let equal = collapse_whitespace(answer).to_lowercase()
                == collapse_whitespace(expected).to_lowercase();
            (
                equal,
                format!(
                    "answer {} {:?} (exact)",
                    if equal { "equals" } else { "differs from" },
                    expected.trim()
                ),
            )
        }
        OutputMatch::Contains => {
            let found = collapse_whitespace(answer)
                .to_lowercase()
                .contains(&collapse_whitespace(expected).to_lowercase());
            (
                found,
                format!(
                    "answer {} {:?}",
                    if found { "contains" } else { "lacks" },
                    expected.trim()
                ),
            )
        }
        OutputMatch::Regex => match compiled(expected) {
            Ok(regex) => {
                let found = regex.is_match(answer);
                (
                    found,
                    format!(
                        "answer {} /{expected}/",
                        if found { "matches" } else { "does not match" }
                    ),
                )
            }
            Err(error) => (false, format!("invalid regex: {error}")),
        },
        OutputMatch::Numeric => match numbers_in(expected).first() {
            Some(&target) => {
                let tolerance = (target.abs() * 1e-6).max(1e-9);
                let found = numbers_in(answer)
                    .iter()
                    .any(|value| (value - target).abs() <= tolerance);
                (
                    found,
                    format!(
                        "answer {} the number {target}",
                        if found { "has" } else { "lacks" }
                    ),
                )
            }
            None => (false, "expected_output has no number".to_string()),
        },
    };
    Some(CheckResult {
        check_type: "expected_output".to_string(),
        passed,
        detail,
    })
}

fn contains(haystack: &str, needle: &str, ignore_case: bool) -> bool {
    if ignore_case {
        haystack.to_lowercase().contains(&needle.to_lowercase())
    } else {
        haystack.contains(needle)
    }
}

/// Resolve `relative` inside `workspace`, refusing escapes (also through symbolic links).
fn workspace_file(workspace: &Path, relative: &str) -> Option<std::path::PathBuf> {
    if !is_contained_relative_path(relative) {
        return None;
    }
    let path = workspace.join(relative);
    match (path.canonicalize(), workspace.canonicalize()) {
        (Ok(resolved), Ok(root)) if resolved.starts_with(&root) => Some(resolved),
        (Ok(_), Ok(_)) => None,
        // A file that does not exist: report it as missing, not escaping.
        _ => Some(path),
    }
}

/// Whether a check path is a glob (has `*`, `?`, `[` or `{`) rather than a literal path.
fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '[', '{'])
}

/// The matcher of a glob check path: `*` and `?` stay inside one folder, `**` crosses folders.
fn glob_matcher(pattern: &str) -> Result<globset::GlobMatcher, CheckDefinitionError> {
    let trimmed = pattern.trim_start_matches("./");
    globset::GlobBuilder::new(trimmed)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|error| CheckDefinitionError::Glob {
            pattern: pattern.to_string(),
            detail: error.to_string(),
        })
}

/// Most workspace entries a glob check visits (a runaway workspace must not stall grading).
const GLOB_WALK_LIMIT: usize = 200_000;

/// The workspace files matching `pattern` (workspace-relative, `/`-separated, sorted): the
/// file itself for a literal path, every matching file (symbolic links not followed) for a
/// glob. An error says why nothing could be looked for (an escaping path, a bad glob).
fn matching_files(workspace: &Path, pattern: &str) -> Result<Vec<String>, FileCheckError> {
    if !is_glob(pattern) {
        return match workspace_file(workspace, pattern) {
            Some(file) if file.is_file() => Ok(vec![pattern.to_string()]),
            Some(_) => Ok(Vec::new()),
            None => Err(FileCheckError::Escapes(pattern.to_string())),
        };
    }
    if !is_contained_relative_path(pattern) {
        return Err(FileCheckError::Escapes(pattern.to_string()));
    }
    let matcher = glob_matcher(pattern)?;
    let mut found = Vec::new();
    let mut pending = vec![std::path::PathBuf::new()];
    let mut visited = 0usize;
    while let Some(relative) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(workspace.join(&relative)) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > GLOB_WALK_LIMIT {
                return Err(FileCheckError::TooManyEntries(pattern.to_string()));
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = relative.join(entry.file_name());
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() && matcher.is_match(&path) {
                found.push(path.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `file_contains` (`want` true) or `file_not_contains` (`want` false) over the files matching
/// `path`: no matching file fails either way.
fn file_contents_check(workspace: &Path, path: &str, value: &str, want: bool) -> (bool, String) {
    let files = match matching_files(workspace, path) {
        Ok(files) => files,
        Err(why) => return (false, why.to_string()),
    };
    if files.is_empty() {
        return (false, format!("no file matching {path} in the workspace"));
    }
    for file in &files {
        let Ok(bytes) = std::fs::read(workspace.join(file)) else {
            continue;
        };
        if String::from_utf8_lossy(&bytes).contains(value) {
            return if want {
                (true, format!("{file} contains {value:?}"))
            } else {
                (false, format!("{file} contains {value:?} but should not"))
            };
        }
    }
    if want {
        (false, format!("no file matching {path} contains {value:?}"))
    } else {
        (
            true,
            format!("no file matching {path} contains {value:?} (expected)"),
        )
    }
}

/// The tokens a trial used and how they were counted: input + output as reported, else the
/// user and assistant message characters / 4 (rounded up per message).
fn trajectory_tokens(trajectory: &crate::values::trajectory::Trajectory) -> (u64, &'static str) {
    let usage = &trajectory.usage;
    if usage.input_tokens.is_some() || usage.output_tokens.is_some() {
        let total = usage.input_tokens.unwrap_or(0) + usage.output_tokens.unwrap_or(0);
        return (total, "reported");
    }
    let estimate = trajectory
        .messages
        .iter()
        .filter(|m| {
            matches!(
                m.role,
                crate::values::trajectory::Role::User | crate::values::trajectory::Role::Assistant
            )
        })
        .map(|m| (m.content.chars().count() as u64).div_ceil(4))
        .sum();
    (estimate, "estimated from message characters / 4")
}

/// Extract a JSON value from an answer: the whole trimmed answer, else the first fenced code
/// block, else the first balanced `{…}` or `[…]` span that parses.
pub(crate) fn extract_json(answer: &str) -> Option<serde_json::Value> {
    let trimmed = answer.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    if let Some(start) = trimmed.find("```") {
        let after = &trimmed[start + 3..];
        let after = after
            .split_once('\n')
            .map(|(_, rest)| rest)
            .unwrap_or(after);
        if let Some(end) = after.find("```")
            && let Ok(value) = serde_json::from_str(after[..end].trim())
        {
            return Some(value);
        }
    }
    for (start, open) in trimmed
        .char_indices()
        .filter(|(_, c)| *c == '{' || *c == '[')
    {
        let close = if open == '{' { '}' } else { ']' };
        let mut depth = 0i32;
        let mut in_string = false;
        let mut escaped = false;
        for (offset, c) in trimmed[start..].char_indices() {
            if in_string {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_string = true,
                c if c == open => depth += 1,
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        if let Ok(value) = serde_json::from_str(&trimmed[start..start + offset + 1])
                        {
                            return Some(value);
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    None
}

fn evaluate_json_path(
    answer: &str,
    path: &str,
    equals: Option<&serde_json::Value>,
    matches: Option<&str>,
) -> (bool, String) {
    let Some(steps) = parse_json_path(path) else {
        return (false, format!("invalid JSON path {path}"));
    };
    let Some(document) = extract_json(answer) else {
        return (false, "answer holds no JSON".to_string());
    };
    let mut current = &document;
    for step in &steps {
        let next = match step {
            PathStep::Key(key) => current.get(key.as_str()),
            PathStep::Index(index) => current.get(*index),
        };
        match next {
            Some(value) => current = value,
            None => return (false, format!("{path} not found in the answer's JSON")),
        }
    }
    if let Some(expected) = equals {
        let equal = current == expected;
        return (
            equal,
            format!(
                "{path} is {current} ({} {expected})",
                if equal { "equals" } else { "expected" }
            ),
        );
    }
    if let Some(pattern) = matches {
        let text = match current {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return match compiled(pattern) {
            Ok(regex) => {
                let found = regex.is_match(&text);
                (
                    found,
                    format!(
                        "{path} = {text:?} {} /{pattern}/",
                        if found { "matches" } else { "does not match" }
                    ),
                )
            }
            Err(error) => (false, format!("invalid regex: {error}")),
        };
    }
    (false, "json_path needs `equals` or `matches`".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(value: serde_json::Value) -> Check {
        serde_json::from_value(value).unwrap()
    }

    fn run(value: serde_json::Value, answer: &str) -> bool {
        let check = check(value);
        check.validate().unwrap();
        check.evaluate(answer, Path::new("/nonexistent")).passed
    }

    #[test]
    fn expected_output_modes() {
        let check = |mode, expected: &str, answer: &str| {
            expected_output_check(mode, expected, answer).map(|r| r.passed)
        };
        assert_eq!(check(OutputMatch::Judge, "x", "x"), None);
        assert_eq!(check(OutputMatch::Exact, " 397.8 ", "397.8\n"), Some(true));
        assert_eq!(
            check(OutputMatch::Exact, "Hello  World", "hello world"),
            Some(true)
        );
        assert_eq!(
            check(OutputMatch::Exact, "397.8", "It is 397.8"),
            Some(false)
        );
        assert_eq!(
            check(
                OutputMatch::Contains,
                "app.py uses total",
                "Done: APP.PY uses   total."
            ),
            Some(true)
        );
        assert_eq!(check(OutputMatch::Regex, r"^\d+ km$", "42 km"), Some(true));
        assert_eq!(
            check(OutputMatch::Numeric, "397.8", "17% of 2,340 is 397.80."),
            Some(true)
        );
        assert_eq!(
            check(OutputMatch::Numeric, "2,340", "the total is 2340"),
            Some(true)
        );
        assert_eq!(
            check(OutputMatch::Numeric, "4.828 km", "about 4.83 km"),
            Some(false)
        );
        assert!(validate_expected_output(OutputMatch::Numeric, "no digits").is_err());
        assert!(validate_expected_output(OutputMatch::Regex, "(").is_err());
        assert_eq!("numeric".parse::<OutputMatch>(), Ok(OutputMatch::Numeric));
        assert!("fuzzy".parse::<OutputMatch>().is_err());
    }

    #[test]
    fn answer_checks() {
        assert!(run(
            json!({"type": "contains", "value": "Aye"}),
            "  Aye! matey"
        ));
        assert!(!run(json!({"type": "contains", "value": "aye"}), "Aye"));
        assert!(run(
            json!({"type": "contains", "value": "aye", "ignore_case": true}),
            "AYE"
        ));
        assert!(run(
            json!({"type": "not_contains", "value": "sorry"}),
            "fine"
        ));
        assert!(!run(
            json!({"type": "not_contains", "value": "sorry"}),
            "so sorry"
        ));
        assert!(run(
            json!({"type": "regex", "pattern": "^\\s*\\[TICKET\\]"}),
            "  [TICKET] hi"
        ));
        assert!(!run(
            json!({"type": "regex", "pattern": "^\\[TICKET\\]"}),
            "hi [TICKET]"
        ));
        assert!(run(json!({"type": "equals", "value": "42"}), " 42\n"));
        assert!(!run(json!({"type": "equals", "value": "42"}), "42."));
    }

    #[test]
    fn json_path_checks() {
        let answer = "Here you go:\n```json\n{\"a\": {\"b\": [1, {\"c\": \"x-12\"}]}}\n```";
        assert!(run(
            json!({"type": "json_path", "path": "$.a.b[0]", "equals": 1}),
            answer
        ));
        assert!(run(
            json!({"type": "json_path", "path": "$.a.b[1].c", "matches": "^x-\\d+$"}),
            answer
        ));
        assert!(run(
            json!({"type": "json_path", "path": "$[\"a\"].b[1][\"c\"]", "equals": "x-12"}),
            answer
        ));
        assert!(!run(
            json!({"type": "json_path", "path": "$.a.missing", "equals": 1}),
            answer
        ));
        assert!(!run(
            json!({"type": "json_path", "path": "$.a", "equals": 1}),
            "no json here"
        ));
        assert!(run(
            json!({"type": "json_path", "path": "$.ok", "equals": true}),
            "Result: {\"ok\": true} done"
        ));
    }

    #[test]
    fn invalid_definitions_are_refused() {
        assert!(
            check(json!({"type": "regex", "pattern": "("}))
                .validate()
                .is_err()
        );
        assert!(
            check(json!({"type": "json_path", "path": "a.b", "equals": 1}))
                .validate()
                .is_err()
        );
        assert!(
            check(json!({"type": "json_path", "path": "$.a"}))
                .validate()
                .is_err()
        );
        assert!(
            check(json!({"type": "file_exists", "path": "../x"}))
                .validate()
                .is_err()
        );
        assert!(
            check(json!({"type": "file_exists", "path": "/etc/passwd"}))
                .validate()
                .is_err()
        );
        assert!(serde_json::from_value::<Check>(json!({"type": "shout", "value": "x"})).is_err());
        assert!(serde_json::from_value::<Check>(json!({"type": "contains", "valu": "x"})).is_err());
    }

    #[test]
    fn workspace_checks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("out.csv"), "a,b\n1,2\n").unwrap();
        let exists = check(json!({"type": "file_exists", "path": "out.csv"}));
        assert!(exists.evaluate("", dir.path()).passed);
        let missing = check(json!({"type": "file_exists", "path": "nope.csv"}));
        assert!(!missing.evaluate("", dir.path()).passed);
        let contains = check(json!({"type": "file_contains", "path": "out.csv", "value": "1,2"}));
        assert!(contains.evaluate("", dir.path()).passed);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link")).unwrap();
            let escaping = check(json!({"type": "file_exists", "path": "link"}));
            assert!(!escaping.evaluate("", dir.path()).passed);
        }
    }
}
