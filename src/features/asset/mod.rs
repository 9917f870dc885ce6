//! Assets under evaluation: loading a skill folder (`SKILL.md` frontmatter and body) per the
//! Agent Skills specification (agentskills.io/specification), leniently with warnings.
//!
//! This module owns parsing and validation of one skill folder. Hashing lives in
//! [`fingerprint`]; staging a skill into a workspace lives in `crate::features::workspace`.

pub mod eval_material;
pub mod fingerprint;
pub mod version;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Longest `name` the specification allows, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest `description` the specification allows, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility` the specification allows, in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;

/// Frontmatter keys defined by the Agent Skills specification.
const KNOWN_KEYS: [&str; 6] = [
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

/// A loaded skill: its folder, parsed frontmatter and Markdown body.
#[derive(Debug, Clone, Serialize)]
pub struct Skill {
    /// The skill folder (as given, not canonicalised).
    pub dir: PathBuf,
    /// `name` from the frontmatter, or the folder name when the frontmatter has none.
    pub name: String,
    /// `description` from the frontmatter (required).
    pub description: String,
    /// `license`, when present.
    pub license: Option<String>,
    /// `compatibility`, when present.
    pub compatibility: Option<String>,
    /// `metadata` map (string to string; scalars are rendered as strings, nested maps and lists
    /// as compact JSON, with a [`SkillWarning::NonStringMetadata`] warning).
    pub metadata: BTreeMap<String, String>,
    /// `allowed-tools`, split into tool names: a YAML list, or a string separated by commas
    /// and/or whitespace, with parentheses kept whole (`Read, Bash(git add:*)` → two tools).
    pub allowed_tools: Vec<String>,
    /// Markdown body after the frontmatter, unmodified.
    pub body: String,
    /// Problems that did not stop loading (spec violations clients tolerate).
    pub warnings: Vec<SkillWarning>,
}

/// A tolerated deviation from the Agent Skills specification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkillWarning {
    /// `name` differs from the folder name; clients key skills by folder or by name inconsistently.
    NameMismatch { name: String, folder: String },
    /// `name` breaks the character rules (lowercase letters, digits, single inner hyphens).
    InvalidName { name: String },
    /// The frontmatter had no `name`; the folder name is used.
    MissingName { folder: String },
    /// A field is longer than the specification allows.
    FieldTooLong {
        field: String,
        chars: usize,
        limit: usize,
    },
    /// A top-level key the specification does not define (the reference validator rejects it).
    UnknownKey { key: String },
    /// The YAML only parsed after quoting values that contain `": "` (lenient client behaviour).
    RepairedYaml,
    /// A `metadata` value is not a string (a nested map, a list); it is kept as compact JSON.
    NonStringMetadata { key: String },
    /// `metadata` is not a map; it is ignored.
    MetadataNotMapping,
}

impl fmt::Display for SkillWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NameMismatch { name, folder } => write!(
                f,
                "name `{name}` differs from its folder `{folder}`; rename one so they match"
            ),
            Self::InvalidName { name } => write!(
                f,
                "name `{name}` should use only lowercase letters, digits and single inner hyphens"
            ),
            Self::MissingName { folder } => {
                write!(
                    f,
                    "frontmatter has no `name`; using the folder name `{folder}`"
                )
            }
            Self::FieldTooLong {
                field,
                chars,
                limit,
            } => write!(
                f,
                "`{field}` is {chars} characters, over the specification's {limit}; some clients truncate or reject it"
            ),
            Self::UnknownKey { key } => write!(
                f,
                "frontmatter key `{key}` is not in the Agent Skills specification (strict validators reject it)"
            ),
            Self::RepairedYaml => write!(
                f,
                "frontmatter YAML needed quoting of values containing \": \" to parse; quote them"
            ),
            Self::NonStringMetadata { key } => write!(
                f,
                "`metadata.{key}` is not a string (the specification maps strings to strings); kept as JSON"
            ),
            Self::MetadataNotMapping => {
                write!(f, "`metadata` is not a map of keys to values; ignored")
            }
        }
    }
}

/// Why a skill folder could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("{dir}: does not exist")]
    Missing { dir: PathBuf },
    #[error("{dir}: not a folder")]
    NotAFolder { dir: PathBuf },
    #[error("{dir}: no SKILL.md in this folder (a skill is a folder with SKILL.md)")]
    MissingSkillFile { dir: PathBuf },
    #[error("{path}: is not a regular file (SKILL.md must be a file)")]
    SkillFileNotAFile { path: PathBuf },
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: SKILL.md must start with YAML frontmatter between `---` lines")]
    MissingFrontmatter { path: PathBuf },
    #[error("{path}:{line}: frontmatter YAML does not parse: {message}")]
    InvalidYaml {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: frontmatter must be a YAML mapping of keys to values")]
    FrontmatterNotMapping { path: PathBuf },
    #[error(
        "{path}: frontmatter has no `description` (required: what the skill does and when to use it)"
    )]
    MissingDescription { path: PathBuf },
    #[error("{path}: frontmatter field `{field}` must be {expected}")]
    WrongType {
        path: PathBuf,
        field: String,
        expected: &'static str,
    },
}

/// Load the skill in `dir`.
///
/// Errors when `dir` has no `SKILL.md`, the frontmatter is missing or unparseable YAML, or
/// `description` is missing or empty. Other specification violations become [`SkillWarning`]s.
pub fn load_skill(dir: &Path) -> Result<Skill, SkillError> {
    if !dir.exists() {
        return Err(SkillError::Missing {
            dir: dir.to_path_buf(),
        });
    }
    if !dir.is_dir() {
        return Err(SkillError::NotAFolder {
            dir: dir.to_path_buf(),
        });
    }
    let path = dir.join("SKILL.md");
    if !path.is_file() {
        if path.exists() {
            return Err(SkillError::SkillFileNotAFile { path });
        }
        return Err(SkillError::MissingSkillFile {
            dir: dir.to_path_buf(),
        });
    }
    let text = std::fs::read_to_string(&path).map_err(|source| SkillError::Read {
        path: path.clone(),
        source,
    })?;
    let folder = folder_name(dir);
    parse_skill_text(&text, &path, dir, &folder)
}

fn folder_name(dir: &Path) -> String {
    let resolved = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Split `SKILL.md` text into (frontmatter YAML, body, line number where the YAML starts).
fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    // Find a line that is exactly `---` (allowing trailing whitespace / CR).
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            return Some((yaml, body));
        }
        offset += line.len();
    }
    // Frontmatter that runs to end of file with a closing `---` without newline.
    if rest.trim_end().ends_with("\n---") {
        let end = rest.trim_end().len() - 3;
        return Some((&rest[..end], ""));
    }
    None
}

/// Quote plain scalar values that contain `": "`, the repair the Agent Skills integration guide
/// asks clients to try before giving up on a frontmatter.
fn quote_colon_values(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len() + 16);
    for line in yaml.lines() {
        let is_top_key =
            !line.starts_with(' ') && !line.starts_with('\t') && !line.starts_with('#');
        if is_top_key && let Some((key, value)) = line.split_once(": ") {
            let value = value.trim();
            let already_quoted = value.starts_with('"')
                || value.starts_with('\'')
                || value.starts_with('|')
                || value.starts_with('>')
                || value.starts_with('[')
                || value.starts_with('{');
            if !already_quoted && value.contains(": ") {
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                out.push_str(&format!("{key}: \"{escaped}\"\n"));
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Largest frontmatter parsed, bytes: an Agent Skills frontmatter is a few short keys (the
/// spec bounds `description` at 1024 characters); a larger one is refused before parsing.
pub const MAX_FRONTMATTER_BYTES: usize = 256 * 1024;

/// Deepest nesting of a frontmatter parsed (flow `[`/`{` levels, block indentation levels and
/// compact `- - ` sequence levels): the YAML parser's time grows faster than the input with
/// depth (40 KB of nesting took 25 s), so depth is bounded before parsing.
pub const MAX_FRONTMATTER_DEPTH: usize = 64;

/// Why `yaml` is refused before parsing, with the 1-based line of the frontmatter where it
/// passes a bound: larger than [`MAX_FRONTMATTER_BYTES`] or nested deeper than
/// [`MAX_FRONTMATTER_DEPTH`]. One linear pass.
fn frontmatter_beyond_bounds(yaml: &str) -> Option<(usize, String)> {
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Some((
            1,
            format!(
                "the frontmatter is {} bytes, more than the {MAX_FRONTMATTER_BYTES} skill-lift parses",
                yaml.len()
            ),
        ));
    }
    let too_deep = |line: usize| {
        Some((
            line,
            format!("the frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels"),
        ))
    };
    // Flow nesting, outside quoted scalars (a quote opens only where a scalar can start).
    let mut flow = 0usize;
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    let mut line = 1usize;
    for c in yaml.chars() {
        if c == '\n' {
            line += 1;
        }
        match quote {
            Some(open) => {
                if c == open {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' if matches!(previous, ' ' | '\t' | '\n' | '[' | '{' | ',' | ':') => {
                    quote = Some(c);
                }
                '[' | '{' => {
                    flow += 1;
                    if flow > MAX_FRONTMATTER_DEPTH {
                        return too_deep(line);
                    }
                }
                ']' | '}' => flow = flow.saturating_sub(1),
                _ => {}
            },
        }
        previous = c;
    }
    // Block nesting: the stack of increasing indentations, plus compact `- - -` levels.
    let mut indents: Vec<usize> = Vec::new();
    for (index, text) in yaml.lines().enumerate() {
        let trimmed = text.trim_start_matches(' ');
        if trimmed.trim().is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = text.len() - trimmed.len();
        while indents.last().is_some_and(|&last| last >= indent) {
            indents.pop();
        }
        indents.push(indent);
        let mut dashes = 0usize;
        let mut rest = trimmed;
        while let Some(after) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("-\t")) {
            dashes += 1;
            rest = after.trim_start();
        }
        if indents.len() + dashes > MAX_FRONTMATTER_DEPTH {
            return too_deep(index + 1);
        }
    }
    None
}

fn parse_yaml_mapping(
    yaml: &str,
    path: &Path,
) -> Result<(serde_norway::Mapping, bool), SkillError> {
    if let Some((line, message)) = frontmatter_beyond_bounds(yaml) {
        return Err(SkillError::InvalidYaml {
            path: path.to_path_buf(),
            // +1: the opening `---` line precedes the YAML.
            line: line + 1,
            message: format!("{message}; refused before parsing"),
        });
    }
    match serde_norway::from_str::<serde_norway::Value>(yaml) {
        Ok(value) => Ok((into_mapping(value, path)?, false)),
        Err(first_error) => {
            let repaired = quote_colon_values(yaml);
            match serde_norway::from_str::<serde_norway::Value>(&repaired) {
                Ok(value) => Ok((into_mapping(value, path)?, true)),
                Err(_) => Err(SkillError::InvalidYaml {
                    path: path.to_path_buf(),
                    // +1: the opening `---` line precedes the YAML.
                    line: first_error.location().map(|l| l.line() + 1).unwrap_or(2),
                    message: shift_yaml_lines(&first_error.to_string()),
                }),
            }
        }
    }
}

/// Rewrite `line N` in a YAML error (counted from the frontmatter's first line) to the line of
/// `SKILL.md` (one more, for the opening `---`).
fn shift_yaml_lines(message: &str) -> String {
    let pattern = regex::Regex::new(r"line (\d+)").expect("valid pattern");
    pattern
        .replace_all(message, |captures: &regex::Captures<'_>| {
            let line: usize = captures[1].parse().unwrap_or(0);
            format!("line {}", line + 1)
        })
        .into_owned()
}

fn into_mapping(
    value: serde_norway::Value,
    path: &Path,
) -> Result<serde_norway::Mapping, SkillError> {
    match value {
        serde_norway::Value::Mapping(mapping) => Ok(mapping),
        serde_norway::Value::Null => Ok(serde_norway::Mapping::new()),
        _ => Err(SkillError::FrontmatterNotMapping {
            path: path.to_path_buf(),
        }),
    }
}

fn scalar_to_string(value: &serde_norway::Value) -> Option<String> {
    match value {
        serde_norway::Value::String(s) => Some(s.clone()),
        serde_norway::Value::Bool(b) => Some(b.to_string()),
        serde_norway::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Parse the text of a `SKILL.md` (exposed for tests and for callers holding the bytes already).
pub fn parse_skill_text(
    text: &str,
    path: &Path,
    dir: &Path,
    folder: &str,
) -> Result<Skill, SkillError> {
    let (yaml, body) = split_frontmatter(text).ok_or_else(|| SkillError::MissingFrontmatter {
        path: path.to_path_buf(),
    })?;
    let (mapping, repaired) = parse_yaml_mapping(yaml, path)?;
    let mut warnings = Vec::new();
    if repaired {
        warnings.push(SkillWarning::RepairedYaml);
    }
    let get = |key: &str| mapping.get(serde_norway::Value::String(key.to_string()));
    let wrong_type = |field: &str, expected: &'static str| SkillError::WrongType {
        path: path.to_path_buf(),
        field: field.to_string(),
        expected,
    };

    for key in mapping.keys() {
        let key = scalar_to_string(key).unwrap_or_else(|| format!("{key:?}"));
        if !KNOWN_KEYS.contains(&key.as_str()) {
            warnings.push(SkillWarning::UnknownKey { key });
        }
    }

    let description = match get("description") {
        None | Some(serde_norway::Value::Null) => None,
        Some(value) => {
            Some(scalar_to_string(value).ok_or_else(|| wrong_type("description", "a string"))?)
        }
    };
    let description = description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or_else(|| SkillError::MissingDescription {
            path: path.to_path_buf(),
        })?;

    let name = match get("name") {
        None | Some(serde_norway::Value::Null) => {
            warnings.push(SkillWarning::MissingName {
                folder: folder.to_string(),
            });
            folder.to_string()
        }
        Some(value) => scalar_to_string(value)
            .ok_or_else(|| wrong_type("name", "a string"))?
            .trim()
            .to_string(),
    };
    if !is_valid_skill_name(&name) {
        warnings.push(SkillWarning::InvalidName { name: name.clone() });
    }
    if name != folder && !folder.is_empty() {
        warnings.push(SkillWarning::NameMismatch {
            name: name.clone(),
            folder: folder.to_string(),
        });
    }
    let mut check_length = |field: &str, value: &str, limit: usize| {
        let chars = value.chars().count();
        if chars > limit {
            warnings.push(SkillWarning::FieldTooLong {
                field: field.to_string(),
                chars,
                limit,
            });
        }
    };
    check_length("name", &name, MAX_NAME_CHARS);
    check_length("description", &description, MAX_DESCRIPTION_CHARS);

    let license = match get("license") {
        None | Some(serde_norway::Value::Null) => None,
        Some(value) => {
            Some(scalar_to_string(value).ok_or_else(|| wrong_type("license", "a string"))?)
        }
    };
    let compatibility = match get("compatibility") {
        None | Some(serde_norway::Value::Null) => None,
        Some(value) => {
            Some(scalar_to_string(value).ok_or_else(|| wrong_type("compatibility", "a string"))?)
        }
    };
    if let Some(compatibility) = &compatibility {
        check_length("compatibility", compatibility, MAX_COMPATIBILITY_CHARS);
    }

    let mut metadata = BTreeMap::new();
    match get("metadata") {
        None | Some(serde_norway::Value::Null) => {}
        Some(serde_norway::Value::Mapping(map)) => {
            for (key, value) in map {
                let key = scalar_to_string(key).unwrap_or_else(|| yaml_as_json(key));
                let value = match scalar_to_string(value) {
                    Some(value) => value,
                    None if matches!(value, serde_norway::Value::Null) => String::new(),
                    None => {
                        warnings.push(SkillWarning::NonStringMetadata { key: key.clone() });
                        yaml_as_json(value)
                    }
                };
                metadata.insert(key, value);
            }
        }
        Some(_) => warnings.push(SkillWarning::MetadataNotMapping),
    }

    let allowed_tools = match get("allowed-tools") {
        None | Some(serde_norway::Value::Null) => Vec::new(),
        Some(serde_norway::Value::String(s)) => split_tool_list(s),
        Some(serde_norway::Value::Sequence(items)) => {
            let mut tools = Vec::new();
            for item in items {
                let item = scalar_to_string(item)
                    .ok_or_else(|| wrong_type("allowed-tools", "a string or a list of strings"))?;
                tools.extend(split_tool_list(&item));
            }
            tools
        }
        Some(_) => return Err(wrong_type("allowed-tools", "a string or a list of strings")),
    };

    Ok(Skill {
        dir: dir.to_path_buf(),
        name,
        description,
        license,
        compatibility,
        metadata,
        allowed_tools,
        body: body.to_string(),
        warnings,
    })
}

/// A YAML value rendered as compact JSON (for metadata values that are not strings).
fn yaml_as_json(value: &serde_norway::Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| format!("{value:?}"))
}

/// Split an `allowed-tools` string into tool names: separators are commas and whitespace outside
/// parentheses, so `Read, Bash(git add:*) Grep` gives `Read`, `Bash(git add:*)`, `Grep`.
pub fn split_tool_list(text: &str) -> Vec<String> {
    let mut tools = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                if !current.trim().is_empty() {
                    tools.push(current.trim().to_string());
                }
                current.clear();
            }
            c => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        tools.push(current.trim().to_string());
    }
    tools
}

/// Whether `name` follows the specification's character rules: 1–64 characters, lowercase
/// alphanumerics and `-`, no leading, trailing or doubled hyphen.
pub fn is_valid_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c == '-' || (c.is_alphanumeric() && !c.is_uppercase()))
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, folder: &str) -> Result<Skill, SkillError> {
        parse_skill_text(text, Path::new("x/SKILL.md"), Path::new("x"), folder)
    }

    #[test]
    fn parses_all_spec_fields() {
        let skill = parse(
            "---\nname: pdf-tools\ndescription: Use when handling PDFs.\nlicense: MIT\ncompatibility: needs python3\nmetadata:\n  author: me\n  version: 1.0\nallowed-tools: Bash(git:*) Read\n---\n# Body\n",
            "pdf-tools",
        )
        .unwrap();
        assert_eq!(skill.name, "pdf-tools");
        assert_eq!(skill.description, "Use when handling PDFs.");
        assert_eq!(skill.license.as_deref(), Some("MIT"));
        assert_eq!(skill.metadata["version"], "1.0");
        assert_eq!(skill.allowed_tools, vec!["Bash(git:*)", "Read"]);
        assert_eq!(skill.body, "# Body\n");
        assert!(skill.warnings.is_empty(), "{:?}", skill.warnings);
    }

    #[test]
    fn allowed_tools_as_list() {
        let skill = parse(
            "---\nname: a\ndescription: d\nallowed-tools:\n  - Read\n  - Bash\n---\n",
            "a",
        )
        .unwrap();
        assert_eq!(skill.allowed_tools, vec!["Read", "Bash"]);
    }

    #[test]
    fn warns_on_name_mismatch_unknown_key_and_long_description() {
        let long = "x".repeat(1100);
        let skill = parse(
            &format!("---\nname: Other_Name\ndescription: {long}\nmodel: opus\n---\nbody"),
            "folder",
        )
        .unwrap();
        let kinds: Vec<String> = skill.warnings.iter().map(|w| format!("{w:?}")).collect();
        assert!(kinds.iter().any(|k| k.contains("NameMismatch")));
        assert!(kinds.iter().any(|k| k.contains("InvalidName")));
        assert!(kinds.iter().any(|k| k.contains("UnknownKey")));
        assert!(kinds.iter().any(|k| k.contains("FieldTooLong")));
    }

    #[test]
    fn repairs_unquoted_colon_values() {
        let skill = parse(
            "---\nname: a\ndescription: Use when: the user asks\n---\n",
            "a",
        )
        .unwrap();
        assert_eq!(skill.description, "Use when: the user asks");
        assert!(skill.warnings.contains(&SkillWarning::RepairedYaml));
    }

    #[test]
    fn refuses_missing_description_and_bad_yaml_and_no_frontmatter() {
        assert!(matches!(
            parse("---\nname: a\n---\n", "a"),
            Err(SkillError::MissingDescription { .. })
        ));
        assert!(matches!(
            parse("---\nname: a\ndescription: \"\"\n---\n", "a"),
            Err(SkillError::MissingDescription { .. })
        ));
        let error = parse("---\nname: a\ndescription: [unclosed\n---\n", "a").unwrap_err();
        assert!(matches!(error, SkillError::InvalidYaml { .. }), "{error}");
        assert!(error.to_string().contains("x/SKILL.md:"), "{error}");
        assert!(matches!(
            parse("# no frontmatter", "a"),
            Err(SkillError::MissingFrontmatter { .. })
        ));
        assert!(matches!(
            parse("---\nname: a\ndescription: d\n", "a"),
            Err(SkillError::MissingFrontmatter { .. })
        ));
    }

    #[test]
    fn allowed_tools_comma_string_keeps_parentheses_whole() {
        let skill = parse(
            "---\nname: a\ndescription: d\nallowed-tools: Read, Bash(git add:*), Grep\n---\n",
            "a",
        )
        .unwrap();
        assert_eq!(skill.allowed_tools, vec!["Read", "Bash(git add:*)", "Grep"]);
        assert_eq!(
            split_tool_list("Bash(python3 scripts/x.py:*) , Write,Edit"),
            vec!["Bash(python3 scripts/x.py:*)", "Write", "Edit"]
        );
    }

    #[test]
    fn nested_metadata_loads_with_a_warning() {
        let skill = parse(
            "---\nname: a\ndescription: d\nmetadata:\n  openclaw:\n    emoji: \"x\"\n    requires: [git]\n  tags: [a, b]\n  version: 2\n---\n",
            "a",
        )
        .unwrap();
        assert_eq!(skill.metadata["version"], "2");
        assert_eq!(
            skill.metadata["openclaw"],
            r#"{"emoji":"x","requires":["git"]}"#
        );
        assert!(skill.warnings.contains(&SkillWarning::NonStringMetadata {
            key: "openclaw".into()
        }));
        let skill = parse(
            "---\nname: a\ndescription: d\nmetadata: just text\n---\n",
            "a",
        )
        .unwrap();
        assert!(skill.metadata.is_empty());
        assert!(skill.warnings.contains(&SkillWarning::MetadataNotMapping));
    }

    #[test]
    fn missing_name_uses_folder() {
        let skill = parse("---\ndescription: d\n---\n", "my-skill").unwrap();
        assert_eq!(skill.name, "my-skill");
        assert!(matches!(
            skill.warnings[0],
            SkillWarning::MissingName { .. }
        ));
    }

    #[test]
    fn name_rules() {
        assert!(is_valid_skill_name("a-b-3"));
        assert!(!is_valid_skill_name("-a"));
        assert!(!is_valid_skill_name("a--b"));
        assert!(!is_valid_skill_name("A"));
        assert!(!is_valid_skill_name(""));
    }

    #[test]
    fn load_skill_requires_skill_md() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_skill(dir.path()),
            Err(SkillError::MissingSkillFile { .. })
        ));
        std::fs::create_dir(dir.path().join("SKILL.md")).unwrap();
        let error = load_skill(dir.path()).unwrap_err();
        assert!(matches!(error, SkillError::SkillFileNotAFile { .. }));
        assert!(
            error.to_string().contains("SKILL.md must be a file"),
            "{error}"
        );
    }
}
