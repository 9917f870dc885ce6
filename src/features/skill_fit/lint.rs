//! `skill-lift lint`: static authoring checks of one skill folder, a rule table and a score.
//!
//! The checks read files only (no agent, no model, no network): Agent Skills specification
//! conformance (name rules, description and compatibility lengths, frontmatter keys and types),
//! declared tools, a Limitations section, author/tags metadata, broken relative links and
//! missing referenced files, scripts without a run bit, oversized bodies, and secrets in any
//! file (the key shapes of `crate::disk::redact`, one pattern list for the whole program).
//!
//! The score is the weighted share of applicable rules that pass (error rules weigh 3, warning
//! rules 2, info rules 1), 0–100; a `SKILL.md` that cannot be parsed scores 0. It measures
//! authoring hygiene, not value: [`against`] puts it beside measured lift so the user can see
//! the (lack of) correlation on their own skills. This module never prints.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::{
    Evidence, SkillFile, SkillFitError, body_first_line, commands_in_shell_line, estimate_tokens,
    fenced_blocks, is_shell_lang, skill_files,
};
use crate::features::asset::{SkillError, SkillWarning};

/// Body size the specification recommends staying under, estimated tokens ("< 5000 tokens
/// recommended" for the SKILL.md body; agentskills.io/specification, progressive disclosure).
pub(crate) const DEFAULT_MAX_BODY_TOKENS: usize = 5000;
/// Body lines the specification recommends staying under ("keep SKILL.md under 500 lines").
pub(crate) const DEFAULT_MAX_BODY_LINES: usize = 500;

/// How severe a failed rule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Severity {
    /// Breaks the specification or the skill (a host may refuse or mis-load it); fails `lint`.
    Error,
    /// Likely to hurt routing or use; fails `lint` only with `--deny-warnings`.
    Warning,
    /// A recommendation (registry listings, licensing).
    Info,
}

impl Severity {
    fn weight(self) -> f64 {
        match self {
            Self::Error => 3.0,
            Self::Warning => 2.0,
            Self::Info => 1.0,
        }
    }

    /// `error`, `warning` or `info`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
        }
    }
}

/// One lint rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LintRule {
    /// `SKILL.md` exists and its frontmatter parses as a YAML mapping.
    Frontmatter,
    /// `name`: present, 1–64 characters, lowercase letters, digits and single inner hyphens.
    NameFormat,
    /// `name` equals the folder name.
    NameMatchesFolder,
    /// `description`: present, 1–1024 characters.
    DescriptionLength,
    /// The description says when to use the skill (agents route on it).
    DescriptionSaysWhen,
    /// `compatibility`, when present: at most 500 characters.
    CompatibilityLength,
    /// Only the specification's frontmatter keys.
    FrontmatterKeys,
    /// Frontmatter values of the specification's types (`metadata` string → string, …).
    FrontmatterTypes,
    /// Tools in `allowed-tools` are tools a host defines, scripts they name exist, and a body that
    /// runs shell commands grants a shell tool.
    DeclaredTools,
    /// The body has a Limitations (or "When not to use") section.
    LimitationsSection,
    /// `metadata.author` and `metadata.tags`, which skill registries list.
    AuthorAndTags,
    /// A `license` field.
    License,
    /// Relative Markdown links resolve to files inside the skill.
    BrokenLinks,
    /// Files the body references (`scripts/…`, `references/…`, `assets/…`) exist.
    ReferencedFiles,
    /// Scripts with a `#!` line have an execute bit.
    ScriptRunBit,
    /// The body is non-empty and under the recommended size.
    BodySize,
    /// No credential-shaped string and no credential file in the skill.
    Secrets,
}

impl LintRule {
    /// Every rule, in report order.
    pub(crate) const ALL: [LintRule; 17] = [
        Self::Frontmatter,
        Self::NameFormat,
        Self::NameMatchesFolder,
        Self::DescriptionLength,
        Self::DescriptionSaysWhen,
        Self::CompatibilityLength,
        Self::FrontmatterKeys,
        Self::FrontmatterTypes,
        Self::DeclaredTools,
        Self::LimitationsSection,
        Self::AuthorAndTags,
        Self::License,
        Self::BrokenLinks,
        Self::ReferencedFiles,
        Self::ScriptRunBit,
        Self::BodySize,
        Self::Secrets,
    ];

    /// The rule's id, as in the JSON report (`name-format`).
    pub(crate) fn id(self) -> &'static str {
        match self {
            Self::Frontmatter => "frontmatter",
            Self::NameFormat => "name-format",
            Self::NameMatchesFolder => "name-matches-folder",
            Self::DescriptionLength => "description-length",
            Self::DescriptionSaysWhen => "description-says-when",
            Self::CompatibilityLength => "compatibility-length",
            Self::FrontmatterKeys => "frontmatter-keys",
            Self::FrontmatterTypes => "frontmatter-types",
            Self::DeclaredTools => "declared-tools",
            Self::LimitationsSection => "limitations-section",
            Self::AuthorAndTags => "author-and-tags",
            Self::License => "license",
            Self::BrokenLinks => "broken-links",
            Self::ReferencedFiles => "referenced-files",
            Self::ScriptRunBit => "script-run-bit",
            Self::BodySize => "body-size",
            Self::Secrets => "secrets",
        }
    }

    /// The severity of a failure of this rule.
    pub(crate) fn severity(self) -> Severity {
        match self {
            Self::Frontmatter
            | Self::NameFormat
            | Self::NameMatchesFolder
            | Self::DescriptionLength
            | Self::CompatibilityLength
            | Self::BrokenLinks
            | Self::ReferencedFiles
            | Self::Secrets => Severity::Error,
            Self::DescriptionSaysWhen
            | Self::FrontmatterKeys
            | Self::FrontmatterTypes
            | Self::DeclaredTools
            | Self::LimitationsSection
            | Self::ScriptRunBit
            | Self::BodySize => Severity::Warning,
            Self::AuthorAndTags | Self::License => Severity::Info,
        }
    }

    /// What the rule checks, one line.
    pub(crate) fn summary(self) -> &'static str {
        match self {
            Self::Frontmatter => "SKILL.md exists with YAML frontmatter that parses",
            Self::NameFormat => "name: 1-64 lowercase letters, digits, single inner hyphens",
            Self::NameMatchesFolder => "name equals the folder name",
            Self::DescriptionLength => "description: 1-1024 characters",
            Self::DescriptionSaysWhen => "description says when to use the skill",
            Self::CompatibilityLength => "compatibility: at most 500 characters",
            Self::FrontmatterKeys => "only the specification's frontmatter keys",
            Self::FrontmatterTypes => "frontmatter values have the specification's types",
            Self::DeclaredTools => "allowed-tools names real tools and existing scripts",
            Self::LimitationsSection => "body has a Limitations section",
            Self::AuthorAndTags => "metadata.author and metadata.tags for registries",
            Self::License => "license field present",
            Self::BrokenLinks => "relative links resolve inside the skill",
            Self::ReferencedFiles => "referenced scripts/references/assets exist",
            Self::ScriptRunBit => "scripts with #! are executable",
            Self::BodySize => "body non-empty, under the token and line budget",
            Self::Secrets => "no credentials in any file",
        }
    }
}

/// Whether a rule held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RuleStatus {
    Passed,
    Failed,
    /// The rule had nothing to check (no `compatibility`, or the frontmatter did not parse).
    NotApplicable,
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct LintFinding {
    pub rule: LintRule,
    pub severity: Severity,
    /// What is wrong and what to do.
    pub message: String,
    /// Where it was seen, when a line can be named.
    pub evidence: Option<Evidence>,
}

/// One row of the rule table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RuleResult {
    pub rule: LintRule,
    pub severity: Severity,
    pub status: RuleStatus,
    /// Findings of this rule.
    pub findings: usize,
    /// What the rule checks.
    pub summary: &'static str,
}

/// Settings of [`lint_skill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LintOptions {
    /// Body budget, estimated tokens ([`super::estimate_tokens`]).
    pub max_body_tokens: usize,
    /// Body budget, lines.
    pub max_body_lines: usize,
}

impl Default for LintOptions {
    fn default() -> Self {
        Self {
            max_body_tokens: DEFAULT_MAX_BODY_TOKENS,
            max_body_lines: DEFAULT_MAX_BODY_LINES,
        }
    }
}

/// The lint of one skill folder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct LintReport {
    /// The folder as given.
    pub skill_dir: PathBuf,
    /// `name` from the frontmatter (the folder name when it has none); `None` when `SKILL.md`
    /// could not be parsed.
    pub name: Option<String>,
    /// `sha256:…` fingerprint (calibre v3-agent-skills) of the folder.
    pub fingerprint: String,
    /// Weighted share of applicable rules passed, 0–100 (see the module documentation).
    pub score: f64,
    /// Findings by severity.
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// Estimated tokens of the body (0 when it could not be read).
    pub body_tokens: usize,
    /// The rule table, in [`LintRule::ALL`] order.
    pub rules: Vec<RuleResult>,
    /// Every finding, in rule order.
    pub findings: Vec<LintFinding>,
}

impl LintReport {
    /// Go / no-go: no error-severity finding (with `deny_warnings`, no warning either).
    pub(crate) fn passes(&self, deny_warnings: bool) -> bool {
        self.errors == 0 && (!deny_warnings || self.warnings == 0)
    }
}

/// Host tool names `allowed-tools` may grant (Claude Code, Codex, Gemini CLI, OpenCode, Goose
/// built-ins), compared case-insensitively. MCP tools (`mcp__server__tool`) are accepted too.
const KNOWN_TOOLS: [&str; 44] = [
    "read",
    "write",
    "edit",
    "multiedit",
    "bash",
    "grep",
    "glob",
    "ls",
    "webfetch",
    "websearch",
    "task",
    "todowrite",
    "todoread",
    "notebookedit",
    "notebookread",
    "bashoutput",
    "killshell",
    "slashcommand",
    "skill",
    "askuserquestion",
    "exitplanmode",
    "shell",
    "apply_patch",
    "read_file",
    "write_file",
    "replace",
    "list_directory",
    "glob_tool",
    "search_file_content",
    "run_shell_command",
    "web_fetch",
    "google_web_search",
    "save_memory",
    "read_many_files",
    "patch",
    "list",
    "todo",
    "webfetch_tool",
    "fetch",
    "computer",
    "text_editor",
    "str_replace_editor",
    "view",
    "update_plan",
];

/// Shell-running tools: a body that runs commands needs one of these granted.
const SHELL_TOOLS: [&str; 4] = ["bash", "shell", "run_shell_command", "computer"];

/// Files that are credentials by name.
fn is_credential_file(relative: &str) -> bool {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    name == ".env"
        || (name.starts_with(".env.") && !name.ends_with(".example") && !name.ends_with(".sample"))
        || matches!(
            name,
            "id_rsa"
                | "id_ed25519"
                | "id_ecdsa"
                | ".netrc"
                | ".pypirc"
                | ".npmrc"
                | "credentials.json"
        )
        || name.ends_with(".pem")
        || name.ends_with(".p12")
        || name.ends_with(".pfx")
}

static LINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+["'][^"']*["'])?\s*\)"#).expect("link")
});
static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s`'(\[=:])((?:\./)?(?:scripts|references|assets|templates|examples)/[A-Za-z0-9_./\-]*[A-Za-z0-9_\-])")
        .expect("reference")
});
static INLINE_CODE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`[^`]*`").expect("inline code"));
static HEADING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s{0,3}#{1,6}\s+(.*)$").expect("heading"));
static LIMITATIONS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)limitation|\blimits\b|caveat|known issues|when not to use|do not use|don't use|not for\b|out of scope|constraints")
        .expect("limitations")
});
static SAYS_WHEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\buse (it |this )?(when|for|to|if|whenever)\b|\bwhen (the )?(user|you|asked|working|handling|a |an )|\bwhenever\b|\btrigger|\bapplies (when|to)\b|\bfor (tasks|requests|questions) (about|involving|that)")
        .expect("says when")
});

/// The variables Claude Code replaces in a skill's text with the skill's own folder
/// (`${CLAUDE_SKILL_DIR}`) and, for a skill inside a plugin, the plugin's folder
/// (`${CLAUDE_PLUGIN_ROOT}`); both written with or without braces.
const SKILL_DIR_VARIABLES: [&str; 2] = ["${CLAUDE_SKILL_DIR}", "$CLAUDE_SKILL_DIR"];
const PLUGIN_ROOT_VARIABLES: [&str; 2] = ["${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT"];

/// Where a skill's paths lead once the host expands its variables.
#[derive(Debug, Clone)]
struct HostPaths {
    /// The skill folder (canonical when it can be).
    skill_dir: PathBuf,
    /// The plugin the skill belongs to: the nearest ancestor (up to four levels) holding
    /// `.claude-plugin/plugin.json`, else the folder above `skills/` when the skill sits in one.
    plugin_root: Option<PathBuf>,
    /// What is installed with the skill: the plugin of a `plugin.json`, else the skill folder.
    installed_with: PathBuf,
}

/// A path as the host sees it.
#[derive(Debug, Clone, PartialEq)]
enum HostPath {
    /// No variable in it.
    Plain(String),
    /// Variables expanded to an absolute path; `through_plugin` when `${CLAUDE_PLUGIN_ROOT}`
    /// was one of them.
    Expanded { path: String, through_plugin: bool },
    /// A template (`references/x-{platform}.md`, `<name>`, `*`, another variable, `...`): an
    /// example of a path, not a path.
    Template,
}

impl HostPaths {
    fn of(dir: &Path) -> Self {
        let skill_dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let manifest_root = skill_dir
            .ancestors()
            .skip(1)
            .take(4)
            .find(|a| a.join(".claude-plugin/plugin.json").is_file())
            .map(Path::to_path_buf);
        let skills_parent = skill_dir
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "skills"))
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        Self {
            installed_with: manifest_root.clone().unwrap_or_else(|| skill_dir.clone()),
            plugin_root: manifest_root.or(skills_parent),
            skill_dir,
        }
    }

    fn expand(&self, target: &str) -> HostPath {
        let mut path = target.to_string();
        let mut expanded = false;
        let mut through_plugin = false;
        for variable in SKILL_DIR_VARIABLES {
            if path.contains(variable) {
                path = path.replace(variable, &self.skill_dir.to_string_lossy());
                expanded = true;
            }
        }
        for variable in PLUGIN_ROOT_VARIABLES {
            if path.contains(variable) {
                let Some(root) = &self.plugin_root else {
                    return HostPath::Template;
                };
                path = path.replace(variable, &root.to_string_lossy());
                expanded = true;
                through_plugin = true;
            }
        }
        if is_template_path(&path) {
            HostPath::Template
        } else if expanded {
            HostPath::Expanded {
                path,
                through_plugin,
            }
        } else {
            HostPath::Plain(path)
        }
    }
}

/// Whether a path is written as a template rather than a path: a placeholder in braces or angle
/// brackets, a glob, an unexpanded variable, or an ellipsis.
fn is_template_path(path: &str) -> bool {
    path.contains('{')
        || path.contains('<')
        || path.contains('*')
        || path.contains('$')
        || path.contains("...")
        || path.contains('\u{2026}')
}

/// Whether a key-shaped string is a documented example or a placeholder rather than a key: the
/// example keys providers publish (AWS's `AKIAIOSFODNN7EXAMPLE` and
/// `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`), and values that say they stand for a key
/// (`example`, `your…`, `xxxx`, `placeholder`, `dummy`, `fake`, `sample`, `redacted`,
/// `changeme`, `replace`, `...`, or a `-key` / `_token` / `-secret` segment) or count up
/// (`1234567890`, `abcdef…`) or use three characters or fewer after the prefix.
fn is_placeholder_key(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    const WORDS: [&str; 15] = [
        "example",
        "your",
        "xxxx",
        "placeholder",
        "dummy",
        "fake",
        "sample",
        "redacted",
        "changeme",
        "replace",
        "insert",
        "here",
        "...",
        "1234567890",
        "abcdefghij",
    ];
    if WORDS.iter().any(|w| lower.contains(w)) {
        return true;
    }
    // A segment that names what the value stands for (`sk-or-v1-project1-key`).
    if lower
        .split(['-', '_'])
        .any(|part| matches!(part, "key" | "token" | "secret" | "apikey"))
    {
        return true;
    }
    // After the prefix, one character repeated (`sk-aaaaaaaa…1`) or only a few distinct ones.
    let tail: Vec<char> = value
        .rsplit(['-', '_'])
        .next()
        .unwrap_or(value)
        .chars()
        .collect();
    let distinct: BTreeSet<char> = tail.iter().copied().collect();
    tail.len() >= 12 && distinct.len() <= 3
}

struct Collector {
    findings: Vec<LintFinding>,
}

impl Collector {
    fn add(&mut self, rule: LintRule, message: impl Into<String>, evidence: Option<Evidence>) {
        self.findings.push(LintFinding {
            rule,
            severity: rule.severity(),
            message: message.into(),
            evidence,
        });
    }
}

/// Lint the skill in `dir`.
///
/// A `SKILL.md` that is missing or does not parse is a finding (rule `frontmatter`, score 0),
/// not an error: the file checks (links in other files, run bits, secrets) still run. Errors
/// only when `dir` is not a folder or a file cannot be read.
pub(crate) fn lint_skill(dir: &Path, options: &LintOptions) -> Result<LintReport, SkillFitError> {
    let files = skill_files(dir)?;
    let fingerprint = crate::features::asset::fingerprint::fingerprint(
        dir,
        crate::features::asset::fingerprint::Calibre::V3AgentSkills,
    )?;
    let mut collector = Collector {
        findings: Vec::new(),
    };
    let mut applicable: BTreeSet<LintRule> = [
        LintRule::Frontmatter,
        LintRule::BrokenLinks,
        LintRule::ScriptRunBit,
        LintRule::Secrets,
    ]
    .into_iter()
    .collect();

    let skill_md_text = files
        .iter()
        .find(|f| f.relative == "SKILL.md")
        .and_then(|f| f.text.clone());
    let loaded = crate::features::asset::load_skill(dir);
    let mut name = None;
    let mut body_tokens = 0;
    let mut direct_invocations = BTreeSet::new();
    match &loaded {
        Ok(skill) => {
            name = Some(skill.name.clone());
            let text = skill_md_text.clone().unwrap_or_default();
            applicable.extend([
                LintRule::NameFormat,
                LintRule::NameMatchesFolder,
                LintRule::DescriptionLength,
                LintRule::DescriptionSaysWhen,
                LintRule::FrontmatterKeys,
                LintRule::FrontmatterTypes,
                LintRule::DeclaredTools,
                LintRule::LimitationsSection,
                LintRule::AuthorAndTags,
                LintRule::License,
                LintRule::ReferencedFiles,
                LintRule::BodySize,
            ]);
            if skill.compatibility.is_some() {
                applicable.insert(LintRule::CompatibilityLength);
            }
            check_frontmatter(skill, &text, &mut collector);
            let first = body_first_line(&text, &skill.body);
            body_tokens = estimate_tokens(&skill.body);
            check_body(skill, first, body_tokens, options, &mut collector);
            direct_invocations = check_tools_and_references(skill, first, &files, &mut collector);
        }
        Err(error) => check_load_error(error, &skill_md_text, &mut collector),
    }
    check_links(dir, &files, &mut collector);
    check_run_bits(&files, &direct_invocations, &mut collector);
    check_secrets(&files, &mut collector);

    let findings = collector.findings;
    let rules: Vec<RuleResult> = LintRule::ALL
        .iter()
        .map(|&rule| {
            let count = findings.iter().filter(|f| f.rule == rule).count();
            let status = if !applicable.contains(&rule) {
                RuleStatus::NotApplicable
            } else if count > 0 {
                RuleStatus::Failed
            } else {
                RuleStatus::Passed
            };
            RuleResult {
                rule,
                severity: rule.severity(),
                status,
                findings: count,
                summary: rule.summary(),
            }
        })
        .collect();
    let score = if loaded.is_err() {
        0.0
    } else {
        let (passed, total) = rules
            .iter()
            .filter(|r| r.status != RuleStatus::NotApplicable)
            .fold((0.0, 0.0), |(passed, total), r| {
                let weight = r.severity.weight();
                let gained = if r.status == RuleStatus::Passed {
                    weight
                } else {
                    0.0
                };
                (passed + gained, total + weight)
            });
        if total > 0.0 {
            (1000.0 * passed / total).round() / 10.0
        } else {
            0.0
        }
    };
    let count = |severity| findings.iter().filter(|f| f.severity == severity).count();
    Ok(LintReport {
        skill_dir: dir.to_path_buf(),
        name,
        fingerprint: fingerprint.digest,
        score,
        errors: count(Severity::Error),
        warnings: count(Severity::Warning),
        infos: count(Severity::Info),
        body_tokens,
        rules,
        findings,
    })
}

/// The line of `SKILL.md` holding frontmatter key `key` (0 when not found).
fn key_line(text: &str, key: &str) -> (usize, String) {
    text.lines()
        .enumerate()
        .skip(1)
        .take_while(|(_, line)| line.trim_end() != "---")
        .find(|(_, line)| line.starts_with(&format!("{key}:")))
        .map(|(index, line)| (index + 1, line.to_string()))
        .unwrap_or((0, String::new()))
}

fn key_evidence(text: &str, key: &str) -> Option<Evidence> {
    let (line, content) = key_line(text, key);
    Some(Evidence::at("SKILL.md", line, &content))
}

fn check_load_error(error: &SkillError, text: &Option<String>, out: &mut Collector) {
    match error {
        SkillError::MissingDescription { .. } => {
            out.add(
                LintRule::DescriptionLength,
                "`description` is missing or empty (required, 1-1024 characters: what the skill does and when to use it)",
                Some(Evidence::at("SKILL.md", 0, "")),
            );
        }
        SkillError::WrongType {
            field, expected, ..
        } => {
            let evidence = text.as_deref().and_then(|t| key_evidence(t, field));
            out.add(
                LintRule::FrontmatterTypes,
                format!("frontmatter field `{field}` must be {expected}"),
                evidence,
            );
        }
        SkillError::InvalidYaml { line, message, .. } => {
            let content = text
                .as_deref()
                .and_then(|t| t.lines().nth(line.saturating_sub(1)))
                .unwrap_or("");
            out.add(
                LintRule::Frontmatter,
                format!("frontmatter YAML does not parse: {message}"),
                Some(Evidence::at("SKILL.md", *line, content)),
            );
        }
        other => out.add(
            LintRule::Frontmatter,
            other.to_string(),
            Some(Evidence::at("SKILL.md", 0, "")),
        ),
    }
}

fn check_frontmatter(skill: &crate::features::asset::Skill, text: &str, out: &mut Collector) {
    for warning in &skill.warnings {
        match warning {
            SkillWarning::NameMismatch { .. } => out.add(
                LintRule::NameMatchesFolder,
                format!("{warning} (the specification requires them equal)"),
                key_evidence(text, "name"),
            ),
            SkillWarning::InvalidName { .. } | SkillWarning::MissingName { .. } => out.add(
                LintRule::NameFormat,
                warning.to_string(),
                key_evidence(text, "name"),
            ),
            SkillWarning::FieldTooLong { field, .. } => {
                let rule = match field.as_str() {
                    "name" => LintRule::NameFormat,
                    "description" => LintRule::DescriptionLength,
                    _ => LintRule::CompatibilityLength,
                };
                out.add(rule, warning.to_string(), key_evidence(text, field));
            }
            SkillWarning::UnknownKey { key } => out.add(
                LintRule::FrontmatterKeys,
                warning.to_string(),
                key_evidence(text, key),
            ),
            SkillWarning::RepairedYaml => {
                out.add(LintRule::FrontmatterTypes, warning.to_string(), None)
            }
            SkillWarning::NonStringMetadata { key } => out.add(
                LintRule::FrontmatterTypes,
                warning.to_string(),
                metadata_evidence(text, key),
            ),
            SkillWarning::MetadataNotMapping => out.add(
                LintRule::FrontmatterTypes,
                warning.to_string(),
                key_evidence(text, "metadata"),
            ),
        }
    }
    if !SAYS_WHEN.is_match(&skill.description) {
        out.add(
            LintRule::DescriptionSaysWhen,
            "the description does not say when to use the skill (e.g. \"Use when …\"); agents pick skills by their description",
            key_evidence(text, "description"),
        );
    }
    let has = |key: &str| {
        skill
            .metadata
            .get(key)
            .is_some_and(|v| !v.trim().is_empty())
    };
    let mut missing = Vec::new();
    if !has("author") {
        missing.push("metadata.author");
    }
    if !has("tags") && !has("keywords") {
        missing.push("metadata.tags");
    }
    if !missing.is_empty() {
        out.add(
            LintRule::AuthorAndTags,
            format!(
                "no {}: skill registries and marketplaces list skills by author and tags",
                missing.join(" and ")
            ),
            None,
        );
    }
    if skill.license.as_deref().is_none_or(|l| l.trim().is_empty()) {
        out.add(
            LintRule::License,
            "no `license`: say under which terms the skill may be shared",
            None,
        );
    }
}

fn metadata_evidence(text: &str, key: &str) -> Option<Evidence> {
    text.lines()
        .enumerate()
        .find(|(_, line)| {
            line.trim_start().starts_with(&format!("{key}:")) && line.starts_with(' ')
        })
        .map(|(index, line)| Evidence::at("SKILL.md", index + 1, line))
}

fn check_body(
    skill: &crate::features::asset::Skill,
    first_line: usize,
    body_tokens: usize,
    options: &LintOptions,
    out: &mut Collector,
) {
    let lines = skill.body.lines().count();
    if skill.body.trim().is_empty() {
        out.add(
            LintRule::BodySize,
            "the body is empty: the instructions the agent follows once the skill is activated go there",
            Some(Evidence::at("SKILL.md", first_line, "")),
        );
    }
    if body_tokens > options.max_body_tokens {
        out.add(
            LintRule::BodySize,
            format!(
                "the body is about {body_tokens} tokens (estimated), over the {} the specification recommends; move detail into references/ files loaded on demand",
                options.max_body_tokens
            ),
            Some(Evidence::at("SKILL.md", first_line, "")),
        );
    }
    if lines > options.max_body_lines {
        out.add(
            LintRule::BodySize,
            format!(
                "the body is {lines} lines, over the {} the specification recommends",
                options.max_body_lines
            ),
            Some(Evidence::at("SKILL.md", first_line, "")),
        );
    }
    let has_section = skill.body.lines().any(|line| {
        HEADING
            .captures(line)
            .is_some_and(|c| LIMITATIONS.is_match(&c[1]))
    });
    if !has_section {
        out.add(
            LintRule::LimitationsSection,
            "no Limitations section (a heading such as \"## Limitations\" or \"## When not to use\"): say what the skill does not do, so agents do not over-apply it",
            None,
        );
    }
}

/// The program of an `allowed-tools` entry such as `Bash(git add:*)` → `git`.
pub(crate) fn bash_pattern_program(tool: &str) -> Option<(String, String)> {
    let open = tool.find('(')?;
    let head = tool[..open].trim();
    let inner = tool[open + 1..].trim_end_matches(')').trim();
    // Leading `NAME=value` environment assignments are not the program
    // (`Bash(GIT_TERMINAL_PROMPT=0 git *)` runs git).
    let is_assignment = |word: &str| {
        word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        })
    };
    let program = inner
        .split(' ')
        .find(|word| !word.is_empty() && !is_assignment(word))
        .unwrap_or("")
        .split(':')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches(['"', '\''])
        .to_string();
    (!program.is_empty() && program != "*").then(|| (head.to_string(), program))
}

/// Declared tools and referenced files; returns the skill-relative scripts the body runs
/// directly (`./scripts/x.sh`), which need a run bit.
fn check_tools_and_references(
    skill: &crate::features::asset::Skill,
    first_line: usize,
    files: &[SkillFile],
    out: &mut Collector,
) -> BTreeSet<String> {
    let text = files
        .iter()
        .find(|f| f.relative == "SKILL.md")
        .and_then(|f| f.text.clone())
        .unwrap_or_default();
    let tools_evidence = key_evidence(&text, "allowed-tools");
    let paths = HostPaths::of(&skill.dir);
    // Whether a path the skill names exists once the host expands it (templates count as
    // existing: they name no one file).
    let exists = |written: &str| match paths.expand(written) {
        HostPath::Template => true,
        HostPath::Expanded { path, .. } => Path::new(&path).exists(),
        HostPath::Plain(relative) => {
            let relative = relative.trim_start_matches("./");
            skill.dir.join(relative).exists()
        }
    };
    for tool in &skill.allowed_tools {
        let head = tool.split('(').next().unwrap_or(tool).trim();
        let lower = head.to_ascii_lowercase();
        if !(lower.starts_with("mcp__") || KNOWN_TOOLS.contains(&lower.as_str())) {
            out.add(
                LintRule::DeclaredTools,
                format!("allowed-tools names `{head}`, a tool no known host defines (a typo?)"),
                tools_evidence.clone(),
            );
        }
        if let Some((_, program)) = bash_pattern_program(tool)
            && program.contains('/')
            && !program.starts_with('/')
            && !exists(&program)
        {
            out.add(
                LintRule::DeclaredTools,
                format!(
                    "allowed-tools grants `{tool}`, but `{program}` is not in the skill folder"
                ),
                tools_evidence.clone(),
            );
        }
    }

    // Commands in the body's shell blocks.
    let blocks = fenced_blocks(&skill.body, first_line);
    let mut shell_lines = Vec::new();
    let mut direct = BTreeSet::new();
    for block in &blocks {
        if is_shell_lang(&block.lang) {
            for (number, line) in &block.lines {
                let programs = commands_in_shell_line(line);
                if !programs.is_empty() {
                    shell_lines.push((*number, line.clone()));
                }
                for program in programs {
                    // `${CLAUDE_SKILL_DIR}/scripts/x.sh` runs the skill's own file.
                    if let HostPath::Expanded { path, .. } = paths.expand(&program)
                        && let Ok(inside) = Path::new(&path).strip_prefix(&paths.skill_dir)
                    {
                        direct.insert(inside.to_string_lossy().into_owned());
                        continue;
                    }
                    if program.contains('/')
                        && !program.starts_with('/')
                        && !program.starts_with('~')
                        && !program.starts_with('$')
                    {
                        direct.insert(program.trim_start_matches("./").to_string());
                    }
                }
            }
        }
    }
    let grants_shell = skill.allowed_tools.iter().any(|t| {
        let head = t.split('(').next().unwrap_or(t).trim().to_ascii_lowercase();
        SHELL_TOOLS.contains(&head.as_str())
    });
    if !skill.allowed_tools.is_empty()
        && !grants_shell
        && let Some((number, line)) = shell_lines.first()
    {
        out.add(
            LintRule::DeclaredTools,
            "the body runs shell commands but allowed-tools grants no shell tool (Bash)",
            Some(Evidence::at("SKILL.md", *number, line)),
        );
    }

    // Referenced files, outside links (links are checked by `broken-links`).
    let mut reported = BTreeSet::new();
    for (index, line) in skill.body.lines().enumerate() {
        let number = first_line + index;
        let without_links = LINK.replace_all(line, "");
        for captures in REFERENCE.captures_iter(&without_links) {
            let whole = captures.get(1).expect("group 1");
            let reference = whole.as_str().trim_end_matches('.').to_string();
            // `references/x-{platform}.md`, `scripts/<name>.py`, `assets/*`: a template.
            let next = without_links[whole.end()..].chars().next();
            if reference.contains('*')
                || reference.ends_with('/')
                || next.is_some_and(|c| matches!(c, '{' | '<' | '*' | '$' | '[' | '\u{2026}'))
            {
                continue;
            }
            if !exists(&reference) && reported.insert(reference.clone()) {
                out.add(
                    LintRule::ReferencedFiles,
                    format!("the body references `{reference}`, which is not in the skill folder"),
                    Some(Evidence::at("SKILL.md", number, line)),
                );
            }
        }
    }
    direct
}

fn check_links(dir: &Path, files: &[SkillFile], out: &mut Collector) {
    let paths = HostPaths::of(dir);
    for file in files.iter().filter(|f| f.relative.ends_with(".md")) {
        let Some(text) = &file.text else { continue };
        let in_code: BTreeSet<usize> = fenced_blocks(text, 1)
            .iter()
            .flat_map(|b| b.lines.iter().map(|(n, _)| *n))
            .collect();
        let folder = file.path.parent().unwrap_or(dir);
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            if in_code.contains(&number) {
                continue;
            }
            // A link written inside an inline code span is an example, not a link.
            let outside_code = INLINE_CODE.replace_all(line, "");
            for captures in LINK.captures_iter(&outside_code) {
                let target = &captures[1];
                let is_external = target.starts_with('#')
                    || target.starts_with("//")
                    || target.split_once(':').is_some_and(|(scheme, _)| {
                        !scheme.is_empty()
                            && scheme
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                    });
                if is_external {
                    continue;
                }
                let path_part = target.split(['#', '?']).next().unwrap_or(target);
                let decoded = path_part
                    .replace("%20", " ")
                    .replace("%7B", "{")
                    .replace("%7D", "}");
                if decoded.is_empty() {
                    continue;
                }
                // Claude Code expands `${CLAUDE_SKILL_DIR}` / `${CLAUDE_PLUGIN_ROOT}`; a
                // template path is an example, not a link to check.
                let (resolved, boundary) = match paths.expand(&decoded) {
                    HostPath::Template => continue,
                    HostPath::Expanded {
                        path,
                        through_plugin,
                    } => {
                        let boundary = match (&paths.plugin_root, through_plugin) {
                            (Some(root), true) => root.clone(),
                            _ => paths.installed_with.clone(),
                        };
                        (PathBuf::from(path), boundary)
                    }
                    HostPath::Plain(decoded) if decoded.starts_with('/') => {
                        (PathBuf::from(&decoded), paths.installed_with.clone())
                    }
                    HostPath::Plain(decoded) => {
                        // Relative to the linking file; the Agent Skills specification writes
                        // file references relative to the skill root, so a link in
                        // `references/a.md` to `references/b.md` resolves there too.
                        let beside = folder.join(&decoded);
                        let from_root = paths.skill_dir.join(&decoded);
                        let resolved = if beside.exists() || !from_root.exists() {
                            beside
                        } else {
                            from_root
                        };
                        (resolved, paths.installed_with.clone())
                    }
                };
                let evidence = Some(Evidence::at(&file.relative, number, line));
                match resolved.canonicalize() {
                    Err(_) => out.add(
                        LintRule::BrokenLinks,
                        format!("link target `{target}` does not exist"),
                        evidence,
                    ),
                    Ok(found) if !found.starts_with(&boundary) => out.add(
                        LintRule::BrokenLinks,
                        format!("link target `{target}` is outside the skill folder (it is not installed with the skill)"),
                        evidence,
                    ),
                    Ok(_) => {}
                }
            }
        }
    }
}

fn check_run_bits(files: &[SkillFile], direct: &BTreeSet<String>, out: &mut Collector) {
    for file in files {
        if file.executable {
            continue;
        }
        if let Some(shebang) = file.shebang() {
            out.add(
                LintRule::ScriptRunBit,
                format!(
                    "`{}` starts with `{shebang}` but has no execute bit (chmod +x)",
                    file.relative
                ),
                Some(Evidence::at(&file.relative, 1, shebang)),
            );
        } else if direct.contains(&file.relative) {
            out.add(
                LintRule::ScriptRunBit,
                format!(
                    "the body runs `{}` directly, but it has no execute bit and no #! line",
                    file.relative
                ),
                Some(Evidence::at(&file.relative, 0, "")),
            );
        }
    }
}

fn check_secrets(files: &[SkillFile], out: &mut Collector) {
    for file in files {
        if is_credential_file(&file.relative) {
            out.add(
                LintRule::Secrets,
                format!(
                    "`{}` is a credential file by its name; never ship it inside a skill",
                    file.relative
                ),
                Some(Evidence::at(&file.relative, 0, "")),
            );
        }
        let Some(text) = &file.text else { continue };
        for (index, line) in text.lines().enumerate() {
            let found = crate::disk::redact::find_key_shapes(line);
            // Documented example keys and placeholders are not secrets.
            let kinds: BTreeSet<&str> = found
                .iter()
                .filter(|m| !is_placeholder_key(&line[m.range.clone()]))
                .map(|m| m.kind)
                .collect();
            for kind in kinds {
                out.add(
                    LintRule::Secrets,
                    format!("credential-shaped string ({kind}) in `{}` (value not shown); remove it and rotate the key", file.relative),
                    Some(Evidence::at(&file.relative, index + 1, line)),
                );
            }
        }
    }
}

/// Measured lift of one skill (one fingerprint) under one model, runner and eval set, from the
/// baseline store or run folders.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct MeasuredLift {
    /// The model version measured.
    pub model: String,
    /// The runner profile.
    pub runner: String,
    /// The eval set's `sha256:` digest (`None` for manual verdicts and older entries).
    pub eval_set: Option<String>,
    /// Mean over cases of (with-skill pass rate − without-skill pass rate), in [-1, 1].
    pub lift: f64,
    /// Cases with scored trials in both arms.
    pub cases: usize,
    /// Scored (pass/fail) trials counted.
    pub trials: usize,
    /// Runs that contributed (run ids; manual replays count as `manual`).
    pub runs: Vec<String>,
}

/// One skill of an [`AgainstReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct AgainstRow {
    pub skill_dir: PathBuf,
    pub name: Option<String>,
    pub fingerprint: String,
    pub lint_score: f64,
    /// The lifts measured for this name *and* fingerprint, one per (model, runner, eval set);
    /// empty when there is none.
    pub measured: Vec<MeasuredLift>,
    /// Why there is no measured lift (no entries, only under other fingerprints).
    pub note: Option<String>,
}

/// Spearman's ρ of lint score against measured lift over the skills measured under one
/// (model, runner, eval set): lifts of different models, runners or eval sets are never pooled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct AgainstGroup {
    pub model: String,
    pub runner: String,
    pub eval_set: Option<String>,
    /// Skills with both a lint score and a lift measured in this group.
    pub paired: usize,
    /// Spearman's ρ (average ranks); `None` below 2 pairs or when either list is constant.
    pub spearman_rho: Option<f64>,
    /// 95% interval of ρ (Fisher z, Fieller–Hartley–Pearson standard error); `None` below 4
    /// pairs.
    pub interval_95: Option<(f64, f64)>,
}

/// Lint score against measured lift over the skills that have both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct AgainstReport {
    /// The results folder, run folder or state folder read.
    pub source: PathBuf,
    pub rows: Vec<AgainstRow>,
    /// Skills with a lint score and at least one measured lift.
    pub paired: usize,
    /// One correlation per (model, runner, eval set) with a measured skill, largest first.
    pub groups: Vec<AgainstGroup>,
    /// The one group's ρ when every measurement shares one (model, runner, eval set); `None`
    /// otherwise (read `groups`: a ρ pooled over models, runners or eval sets is never given).
    pub spearman_rho: Option<f64>,
    /// The one group's interval, likewise.
    pub interval_95: Option<(f64, f64)>,
    /// The ACES reference values, for comparison.
    pub aces_reference: &'static str,
}

/// The ACES finding `--against` reproduces.
pub(crate) const ACES_REFERENCE: &str = "ACES: Spearman rho = -0.018 (structural scores) and -0.027 (LLM-judged scores) against measured lift over 64 skills";

/// Verdicts per (asset name, fingerprint) read from `source`: a state folder (holding
/// `baseline-results.json`), one run folder (`manifest.json` + `trials.jsonl`), or a folder of
/// run folders (e.g. `results/`).
pub(crate) fn read_measurements(
    source: &Path,
) -> Result<BTreeMap<String, Vec<crate::features::registry::baseline::BaselineEntry>>, SkillFitError>
{
    use crate::features::registry::baseline;
    let read_run =
        |run_dir: &Path| -> Result<Option<(String, Vec<baseline::BaselineEntry>)>, SkillFitError> {
            let manifest =
                crate::record::read_manifest(run_dir).map_err(|error| SkillFitError::Invalid {
                    path: run_dir.to_path_buf(),
                    message: error.to_string(),
                })?;
            if !manifest.arm_design.is_paired() {
                // A/A calibration repeats measure no lift.
                return Ok(None);
            }
            let (records, _) =
                crate::record::read_trials(&run_dir.join("trials.jsonl")).map_err(|error| {
                    SkillFitError::Invalid {
                        path: run_dir.join("trials.jsonl"),
                        message: error.to_string(),
                    }
                })?;
            let entries = baseline::entries_from_run(&manifest, &records, chrono::Utc::now());
            Ok(Some((manifest.asset.name.clone(), entries)))
        };
    let mut by_asset: BTreeMap<String, Vec<baseline::BaselineEntry>> = BTreeMap::new();
    if baseline::baseline_path(source).is_file() {
        let store = baseline::read_store(source)?;
        for (asset, slot) in store.assets {
            by_asset.entry(asset).or_default().extend(slot.entries);
        }
    } else if source.join("manifest.json").is_file() {
        if let Some((asset, entries)) = read_run(source)? {
            by_asset.entry(asset).or_default().extend(entries);
        }
    } else if source.is_dir() {
        let mut run_dirs: Vec<PathBuf> = std::fs::read_dir(source)
            .map_err(|source_error| SkillFitError::Read {
                path: source.to_path_buf(),
                source: source_error,
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("manifest.json").is_file() && p.join("trials.jsonl").is_file())
            .collect();
        run_dirs.sort();
        if run_dirs.is_empty() {
            return Err(SkillFitError::Invalid {
                path: source.to_path_buf(),
                message: "holds no baseline-results.json, no manifest.json and no run folders; pass a state folder, a run folder or a results folder".to_string(),
            });
        }
        for run_dir in run_dirs {
            if let Some((asset, entries)) = read_run(&run_dir)? {
                by_asset.entry(asset).or_default().extend(entries);
            }
        }
    } else {
        return Err(SkillFitError::NotAFolder {
            dir: source.to_path_buf(),
        });
    }
    Ok(by_asset)
}

/// The case-level lift of `entries` (one asset, one fingerprint) per (model, runner, eval
/// set): for each case with scored trials in both the with-skill and the without-skill arm of
/// that group, the difference of the two pass rates; their mean. Groups where no case has both
/// arms are left out.
pub(crate) fn measured_lifts(
    entries: &[&crate::features::registry::baseline::BaselineEntry],
) -> Vec<MeasuredLift> {
    type Group<'a> = (&'a str, &'a str, Option<&'a str>);
    let mut groups: BTreeMap<Group<'_>, Vec<&crate::features::registry::baseline::BaselineEntry>> =
        BTreeMap::new();
    for entry in entries {
        groups
            .entry((
                entry.model.as_str(),
                entry.runner.as_str(),
                entry.eval_set.as_deref(),
            ))
            .or_default()
            .push(entry);
    }
    groups
        .into_iter()
        .filter_map(|((model, runner, eval_set), entries)| {
            let mut measured = measured_lift(&entries)?;
            measured.model = model.to_string();
            measured.runner = runner.to_string();
            measured.eval_set = eval_set.map(str::to_string);
            Some(measured)
        })
        .collect()
}

/// The case-level lift of `entries` taken as one group (the caller groups them; the returned
/// `model`, `runner` and `eval_set` are those of the first entry). `None` when no case has both
/// arms.
fn measured_lift(
    entries: &[&crate::features::registry::baseline::BaselineEntry],
) -> Option<MeasuredLift> {
    let mut cases: BTreeMap<&str, [(usize, usize); 2]> = BTreeMap::new();
    let mut runs = BTreeSet::new();
    let mut trials = 0;
    for entry in entries {
        let arm = match entry.arm.as_str() {
            "with_skill" => 0,
            "without_skill" => 1,
            _ => continue,
        };
        if !entry.verdict.is_scored() {
            continue;
        }
        let slot = &mut cases.entry(entry.case_id.as_str()).or_default()[arm];
        slot.1 += 1;
        if entry.verdict == crate::record::Outcome::Pass {
            slot.0 += 1;
        }
        trials += 1;
        runs.insert(entry.run_id.clone().unwrap_or_else(|| "manual".to_string()));
    }
    let differences: Vec<f64> = cases
        .values()
        .filter(|[with, without]| with.1 > 0 && without.1 > 0)
        .map(|[with, without]| with.0 as f64 / with.1 as f64 - without.0 as f64 / without.1 as f64)
        .collect();
    if differences.is_empty() {
        return None;
    }
    let first = entries.first()?;
    Some(MeasuredLift {
        model: first.model.clone(),
        runner: first.runner.clone(),
        eval_set: first.eval_set.clone(),
        lift: differences.iter().sum::<f64>() / differences.len() as f64,
        cases: differences.len(),
        trials,
        runs: runs.into_iter().collect(),
    })
}

/// Put each linted skill's score beside its measured lift (same name, same fingerprint under the
/// calibre the measurement recorded) from `source`, and compute Spearman's ρ with a 95% interval
/// over the skills that have both, separately for each (model, runner, eval set).
pub(crate) fn against(
    reports: &[LintReport],
    source: &Path,
) -> Result<AgainstReport, SkillFitError> {
    let measurements = read_measurements(source)?;
    let mut rows = Vec::new();
    for report in reports {
        let mut row = AgainstRow {
            skill_dir: report.skill_dir.clone(),
            name: report.name.clone(),
            fingerprint: report.fingerprint.clone(),
            lint_score: report.score,
            measured: Vec::new(),
            note: None,
        };
        let Some(name) = &report.name else {
            row.note = Some("SKILL.md does not parse: no name to match".to_string());
            rows.push(row);
            continue;
        };
        let Some(entries) = measurements.get(name) else {
            row.note = Some(format!(
                "no measured verdicts for `{name}` in {}",
                source.display()
            ));
            rows.push(row);
            continue;
        };
        // The skill's fingerprint under each calibre the entries used.
        let mut own: BTreeMap<String, Option<String>> = BTreeMap::new();
        for calibre in entries
            .iter()
            .map(|e| e.calibre.clone())
            .collect::<BTreeSet<_>>()
        {
            let digest = calibre
                .parse::<crate::features::asset::fingerprint::Calibre>()
                .ok()
                .and_then(|c| {
                    crate::features::asset::fingerprint::fingerprint(&report.skill_dir, c).ok()
                })
                .map(|f| f.digest);
            own.insert(calibre, digest);
        }
        let matching: Vec<_> = entries
            .iter()
            .filter(|e| {
                own.get(&e.calibre).cloned().flatten().as_deref() == Some(e.fingerprint.as_str())
            })
            .collect();
        if matching.is_empty() {
            let others: BTreeSet<&str> = entries.iter().map(|e| e.fingerprint.as_str()).collect();
            row.note = Some(format!(
                "measured only under {} other fingerprint(s): the files changed since; run it again to pair",
                others.len()
            ));
        } else {
            row.measured = measured_lifts(&matching);
            if row.measured.is_empty() {
                row.note = Some("no case scored in both arms".to_string());
            }
        }
        rows.push(row);
    }
    type Key = (String, String, Option<String>);
    let mut by_group: BTreeMap<Key, Vec<(f64, f64)>> = BTreeMap::new();
    for row in &rows {
        for measured in &row.measured {
            by_group
                .entry((
                    measured.model.clone(),
                    measured.runner.clone(),
                    measured.eval_set.clone(),
                ))
                .or_default()
                .push((row.lint_score, measured.lift));
        }
    }
    let mut groups: Vec<AgainstGroup> = by_group
        .into_iter()
        .map(|((model, runner, eval_set), pairs)| {
            let (scores, lifts): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
            let rho = crate::analysis::stats::spearman_correlation(&scores, &lifts);
            AgainstGroup {
                model,
                runner,
                eval_set,
                paired: pairs.len(),
                spearman_rho: rho,
                interval_95: rho.and_then(|rho| {
                    crate::analysis::stats::spearman_interval(rho, pairs.len(), 0.05)
                }),
            }
        })
        .collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.paired));
    let single = (groups.len() == 1).then(|| &groups[0]);
    Ok(AgainstReport {
        source: source.to_path_buf(),
        paired: rows.iter().filter(|r| !r.measured.is_empty()).count(),
        spearman_rho: single.and_then(|g| g.spearman_rho),
        interval_95: single.and_then(|g| g.interval_95),
        rows,
        groups,
        aces_reference: ACES_REFERENCE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::write;

    fn rule_failed(report: &LintReport, rule: LintRule) -> bool {
        report
            .rules
            .iter()
            .any(|r| r.rule == rule && r.status == RuleStatus::Failed)
    }

    #[test]
    fn clean_skill_passes_every_rule() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("pdf-tools");
        write(
            &dir,
            "SKILL.md",
            "---\nname: pdf-tools\ndescription: Fills PDF forms. Use when the user asks to fill a PDF.\nlicense: MIT\nmetadata:\n  author: someone\n  tags: pdf, forms\nallowed-tools: Bash(python3:*) Read\n---\n# PDF\n\nRun [the filler](scripts/fill.py):\n\n```bash\npython3 scripts/fill.py in.pdf\n```\n\n## Limitations\n\nNo scanned PDFs.\n",
        );
        write(&dir, "scripts/fill.py", "print('x')\n");
        let report = lint_skill(&dir, &LintOptions::default()).unwrap();
        assert_eq!(report.findings, vec![], "{:#?}", report.findings);
        assert_eq!(report.score, 100.0);
        assert!(report.passes(true));
    }

    #[test]
    fn host_variables_are_expanded_and_templates_are_not_links() {
        let root = tempfile::tempdir().unwrap();
        let plugin = root.path().join("plug");
        write(&plugin, ".claude-plugin/plugin.json", r#"{"name": "plug"}"#);
        write(&plugin, "scripts/shared.sh", "#!/bin/sh\n");
        let dir = plugin.join("skills/helper");
        write(
            &dir,
            "SKILL.md",
            "---\nname: helper\ndescription: Helps. Use when asked.\nallowed-tools: Bash(${CLAUDE_SKILL_DIR}/scripts/run.sh:*) Bash(GIT_TERMINAL_PROMPT=0 git *)\n---\n# Helper\n\nRead [the spec](${CLAUDE_SKILL_DIR}/specs/spec.md), [shared](${CLAUDE_PLUGIN_ROOT}/scripts/shared.sh), [sibling](../other/SKILL.md), [per platform](references/x-{platform}.md), [a name](references/<name>.md) and [all](references/*.md).\n\nSee `references/install-{platform}.md` and `scripts/<tool>.py`.\n\n[gone](${CLAUDE_SKILL_DIR}/specs/missing.md)\n",
        );
        write(&dir, "specs/spec.md", "spec\n");
        write(
            &dir,
            "references/details.md",
            "See [more](references/more.md); a link is written `[text](references/name.md)`.\n",
        );
        write(&dir, "references/more.md", "more\n");
        write(&dir, "scripts/run.sh", "#!/bin/sh\n");
        write(
            &plugin,
            "skills/other/SKILL.md",
            "---\nname: other\ndescription: d\n---\n",
        );
        let report = lint_skill(&dir, &LintOptions::default()).unwrap();
        let messages: Vec<&str> = report
            .findings
            .iter()
            .filter(|f| {
                matches!(
                    f.rule,
                    LintRule::BrokenLinks | LintRule::ReferencedFiles | LintRule::DeclaredTools
                )
            })
            .map(|f| f.message.as_str())
            .collect();
        // Only the link to a file that really is missing.
        assert_eq!(
            messages,
            vec!["link target `${CLAUDE_SKILL_DIR}/specs/missing.md` does not exist"]
        );
        // Outside a plugin, a sibling is not installed with the skill.
        let lone = root.path().join("lone/skill");
        write(
            &lone,
            "SKILL.md",
            "---\nname: skill\ndescription: d\n---\n[sibling](../x/SKILL.md) [root](${CLAUDE_PLUGIN_ROOT}/a.md)\n",
        );
        write(&root.path().join("lone/x"), "SKILL.md", "x");
        let report = lint_skill(&lone, &LintOptions::default()).unwrap();
        let broken: Vec<&str> = report
            .findings
            .iter()
            .filter(|f| f.rule == LintRule::BrokenLinks)
            .map(|f| f.message.as_str())
            .collect();
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(broken[0].contains("outside the skill folder"));
    }

    #[test]
    fn documented_example_keys_and_placeholders_are_not_secrets() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("keys");
        write(
            &dir,
            "SKILL.md",
            "---\nname: keys\ndescription: d\n---\n```bash\nexport AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nexport OPENROUTER_API_KEY='sk-or-v1-your-key-here'\nexport OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxx1\ncurl -H 'Authorization: Bearer sk-abc123...'\nexport OPENAI_API_KEY=sk-1234567890abcdef1234567890abcdef\n```\n",
        );
        let report = lint_skill(&dir, &LintOptions::default()).unwrap();
        assert!(
            !rule_failed(&report, LintRule::Secrets),
            "{:#?}",
            report.findings
        );
        write(
            &dir,
            "notes.md",
            "AKIAQ3EGRP7VXN2KLM5T and sk-proj-R2d9Xk4LmQ7vTz1Bn8Wc5Hy3Jf6Pa0Se\n",
        );
        let report = lint_skill(&dir, &LintOptions::default()).unwrap();
        let kinds: Vec<&str> = report
            .findings
            .iter()
            .filter(|f| f.rule == LintRule::Secrets)
            .map(|f| f.message.as_str())
            .collect();
        assert_eq!(kinds.len(), 2, "{kinds:?}");
    }

    #[test]
    fn planted_problems_are_found() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("planted");
        let long = "word ".repeat(230);
        write(
            &dir,
            "SKILL.md",
            &format!(
                "---\nname: Planted_Skill\ndescription: {long}\nmodel: opus\nallowed-tools: Read, Frobnicate, Bash(scripts/gone.sh:*)\n---\n# Body\n\nSee [guide](references/guide.md) and `scripts/missing.py`.\n\n```bash\n./scripts/run.sh\n```\n"
            ),
        );
        write(&dir, "scripts/run.sh", "#!/bin/sh\necho hi\n");
        write(
            &dir,
            "notes.txt",
            "token: ghp_R2d9Xk4LmQ7vTz1Bn8Wc5Hy3Jf6Pa0Se9Ug2\n",
        );
        let report = lint_skill(&dir, &LintOptions::default()).unwrap();
        for rule in [
            LintRule::NameFormat,
            LintRule::NameMatchesFolder,
            LintRule::DescriptionLength,
            LintRule::DescriptionSaysWhen,
            LintRule::FrontmatterKeys,
            LintRule::DeclaredTools,
            LintRule::LimitationsSection,
            LintRule::BrokenLinks,
            LintRule::ReferencedFiles,
            LintRule::ScriptRunBit,
            LintRule::Secrets,
        ] {
            assert!(
                rule_failed(&report, rule),
                "{rule:?} not failed: {:#?}",
                report.findings
            );
        }
        assert!(!report.passes(false));
        assert!(report.score < 50.0, "{}", report.score);
        // The secret is never quoted.
        let json = serde_json::to_string(&report).unwrap();
        assert!(!json.contains("ghp_abcdefghij"), "{json}");
        let secret = report
            .findings
            .iter()
            .find(|f| f.rule == LintRule::Secrets)
            .unwrap();
        assert_eq!(secret.evidence.as_ref().unwrap().location(), "notes.txt:1");
    }

    #[test]
    fn unparseable_frontmatter_scores_zero_and_still_checks_files() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("broken");
        write(
            &dir,
            "SKILL.md",
            "---\nname: broken\ndescription: [unclosed\n---\nbody\n",
        );
        write(&dir, "README.md", "[x](nowhere.md)\n");
        let report = lint_skill(&dir, &LintOptions::default()).unwrap();
        assert_eq!(report.score, 0.0);
        assert!(report.name.is_none());
        assert!(rule_failed(&report, LintRule::Frontmatter));
        assert!(rule_failed(&report, LintRule::BrokenLinks));
        let frontmatter = report
            .findings
            .iter()
            .find(|f| f.rule == LintRule::Frontmatter)
            .unwrap();
        let line = frontmatter.evidence.as_ref().unwrap().line;
        assert!((3..=4).contains(&line), "{line}");
    }

    #[test]
    fn body_size_budget() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("big");
        write(
            &dir,
            "SKILL.md",
            &format!(
                "---\nname: big\ndescription: Use when big.\n---\n{}",
                "abcd ".repeat(5000)
            ),
        );
        let report = lint_skill(&dir, &LintOptions::default()).unwrap();
        assert!(rule_failed(&report, LintRule::BodySize));
        assert_eq!(report.body_tokens, 6250);
    }

    #[test]
    fn lift_from_entries() {
        use crate::features::registry::baseline::{BaselineEntry, EntrySource};
        let entry = |case: &str, arm: &str, pass: bool| BaselineEntry {
            fingerprint: "sha256:x".into(),
            calibre: "v3-agent-skills".into(),
            model: "m".into(),
            observed_model: None,
            trial_at: None,
            runner: "r".into(),
            case_id: case.into(),
            eval_set: None,
            arm: arm.into(),
            attempt: 1,
            verdict: if pass {
                crate::record::Outcome::Pass
            } else {
                crate::record::Outcome::Fail
            },
            source: EntrySource::Manual,
            run_id: None,
            recorded_at: chrono::Utc::now(),
            activated: None,
            checks: vec![],
            tool_calls: None,
            tool_call_errors: None,
            reason: None,
            cost_usd: None,
            judge_cost_usd: None,
        };
        let entries = [
            entry("a", "with_skill", true),
            entry("a", "with_skill", false),
            entry("a", "without_skill", false),
            entry("b", "with_skill", true),
            entry("b", "without_skill", true),
            entry("c", "with_skill", true),
        ];
        let refs: Vec<_> = entries.iter().collect();
        let lift = measured_lift(&refs).unwrap();
        // a: 0.5 − 0, b: 1 − 1; c has one arm only.
        assert_eq!(lift.cases, 2);
        assert!((lift.lift - 0.25).abs() < 1e-12);
        // The same cases under a second model are a group of their own, never pooled.
        let mut other: Vec<_> = entries.to_vec();
        for e in &mut other {
            e.model = "m2".into();
            e.verdict = crate::record::Outcome::Fail;
        }
        let all: Vec<_> = entries.iter().chain(other.iter()).collect();
        let lifts = measured_lifts(&all);
        assert_eq!(lifts.len(), 2);
        assert_eq!((lifts[0].model.as_str(), lifts[0].lift), ("m", 0.25));
        assert_eq!((lifts[1].model.as_str(), lifts[1].lift), ("m2", 0.0));
        assert!(lifts.iter().all(|l| l.runner == "r" && l.cases == 2));
    }
}
