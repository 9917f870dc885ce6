//! `skill-lift env`: environment reconciliation. What a skill assumes about the machine it runs
//! on, read from its files, set against this machine:
//!
//! - **commands** the body's fenced shell blocks, the skill's shell scripts, `subprocess` /
//!   `os.system` calls in its Python and `Bash(…)` entries of `allowed-tools` run, looked up in
//!   `PATH` (scripts of the skill itself: in the folder);
//! - **interpreters** named by `#!` lines and implied by Python files and `package.json`;
//! - **Python imports** (of `.py` files and `python` blocks) against the interpreter found (one
//!   `python3 -c` probe with `importlib.util.find_spec`, standard library left out) and
//!   `requirements.txt` distributions (`importlib.metadata`); **`package.json` dependencies**
//!   against `node_modules/`;
//! - **MCP servers** named (`mcp__server__tool`, a shipped `.mcp.json`) against the MCP
//!   configuration of the agent hosts under `HOME` (names only are read);
//! - **OS assumptions**: macOS-, Linux- and Windows-only tools and paths, and OS names in
//!   `compatibility`;
//! - **environment variables** the scripts read (value never read back, only set / unset);
//! - **locale**: the body's language (script, then stop-word counts) against `LC_ALL` /
//!   `LC_MESSAGES` / `LANG`;
//! - **context size**: estimated tokens of description + body (see `super::estimate_tokens`)
//!   against the runner's model limit;
//! - **network use** (URLs, `curl`, `wget`, HTTP client libraries), reported *unknown*:
//!   reachability is not tested.
//!
//! Each finding is *satisfied*, *missing* (a red flag) or *unknown*, with the evidence line.
//! Nothing is installed, executed from the skill, or sent anywhere; the only process started is
//! the Python probe (importlib lookups, no import of the modules themselves).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde::Serialize;

use super::{
    Evidence, SkillFile, SkillFitError, body_first_line, commands_in_shell_line, estimate_tokens,
    fenced_blocks, is_shell_lang, skill_files,
};

/// Evidence lines kept per finding.
const MAX_EVIDENCE: usize = 3;
/// Longest wait for the Python probe.
const PYTHON_PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FindingKind {
    /// A program the skill runs.
    Command,
    /// A script of the skill itself that the skill runs.
    Script,
    /// An interpreter (`#!` line, Python files, `package.json`).
    Interpreter,
    /// A Python module the skill imports.
    PythonModule,
    /// A distribution listed in `requirements.txt`.
    PythonPackage,
    /// A `package.json` dependency.
    NodePackage,
    /// An MCP server the skill uses.
    McpServer,
    /// An operating-system assumption (OS-only tools, paths, `compatibility`).
    OperatingSystem,
    /// An environment variable a script reads.
    EnvironmentVariable,
    /// The body's language vs the user's locale.
    Locale,
    /// The tokens the skill needs vs the runner's model limit.
    ContextSize,
    /// Network use.
    Network,
    /// A context window the skill declares it needs vs the runner's model limit.
    ContextWindow,
    /// A language the skill declares every answer is in vs the user's locale.
    OutputLanguage,
    /// Image input the skill declares it needs vs the runner.
    Vision,
    /// Tool calls the skill declares it needs vs the runner.
    ToolUse,
    /// Running commands, which the skill declares (`Bash` in `allowed-tools`, a requirement
    /// sentence) or implies (its body runs a script it ships), vs the runner.
    CodeExecution,
    /// A tool of `allowed-tools` vs what the runner grants.
    ToolPermission,
}

impl FindingKind {
    /// Snake-case name, as in the JSON report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Command => "command",
            Self::Script => "script",
            Self::Interpreter => "interpreter",
            Self::PythonModule => "python_module",
            Self::PythonPackage => "python_package",
            Self::NodePackage => "node_package",
            Self::McpServer => "mcp_server",
            Self::OperatingSystem => "operating_system",
            Self::EnvironmentVariable => "environment_variable",
            Self::Locale => "locale",
            Self::ContextSize => "context_size",
            Self::Network => "network",
            Self::ContextWindow => "context_window",
            Self::OutputLanguage => "output_language",
            Self::Vision => "vision",
            Self::ToolUse => "tool_use",
            Self::CodeExecution => "code_execution",
            Self::ToolPermission => "tool_permission",
        }
    }
}

impl From<super::assumptions::AssumptionKind> for FindingKind {
    fn from(kind: super::assumptions::AssumptionKind) -> Self {
        use super::assumptions::AssumptionKind;
        match kind {
            AssumptionKind::ContextWindow => Self::ContextWindow,
            AssumptionKind::OutputLanguage => Self::OutputLanguage,
            AssumptionKind::OperatingSystem => Self::OperatingSystem,
            AssumptionKind::Vision => Self::Vision,
            AssumptionKind::ToolUse => Self::ToolUse,
            AssumptionKind::CodeExecution => Self::CodeExecution,
            AssumptionKind::ToolPermission => Self::ToolPermission,
        }
    }
}

/// Whether this machine meets an assumption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FitStatus {
    /// Missing here: a red flag.
    Missing,
    /// Could not be told (no interpreter to ask, reachability untested, no model limit known).
    Unknown,
    /// Present.
    Satisfied,
}

impl FitStatus {}

/// One assumption and how this machine meets it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EnvFinding {
    pub kind: FindingKind,
    /// What is assumed: a program, a module, a server, `macOS`, `de`, …
    pub subject: String,
    pub status: FitStatus,
    /// Why this status (where it was found, what to do).
    pub detail: String,
    /// Where the skill makes the assumption (up to three lines).
    pub evidence: Vec<Evidence>,
}

/// The operating systems an assumption can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OperatingSystem {
    Macos,
    Linux,
    Windows,
}

impl OperatingSystem {
    /// The OS skill-lift runs on (`None` for others, e.g. the BSDs).
    pub(crate) fn current() -> Option<Self> {
        match std::env::consts::OS {
            "macos" => Some(Self::Macos),
            "linux" => Some(Self::Linux),
            "windows" => Some(Self::Windows),
            _ => None,
        }
    }

    /// Display name.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Macos => "macOS",
            Self::Linux => "Linux",
            Self::Windows => "Windows",
        }
    }
}

/// The model context limit the skill is checked against, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ContextLimit {
    /// Tokens.
    pub tokens: u64,
    /// `--context-limit`, `runner profile local (context_tokens)`, `known limit of model X`.
    pub source: String,
    /// Tokens the runner reserves for the reply (`max_tokens`), counted as needed too.
    pub reply_tokens: u64,
}

/// Settings of [`reconcile_environment`]; [`EnvOptions::from_process`] fills them from this
/// process's environment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EnvOptions {
    /// `PATH` searched for programs.
    pub path: Option<OsString>,
    /// The Python interpreter to check imports against (default: `python3`, then `python`, in
    /// `PATH`).
    pub python: Option<PathBuf>,
    /// The user's locale (`de_DE.UTF-8`); `None`: unset.
    pub locale: Option<String>,
    /// The home folder whose agent hosts' MCP configuration is read.
    pub home: Option<PathBuf>,
    /// Working folder (a project `.mcp.json` there counts as configured).
    pub cwd: Option<PathBuf>,
    /// The model limit; `None`: the context-size finding is unknown.
    pub context_limit: Option<ContextLimit>,
    /// The OS to check against (default: this one).
    pub os: Option<OperatingSystem>,
    /// Names of environment variables that are set (values are never kept).
    pub set_variables: BTreeSet<String>,
    /// The runner the skill's declared assumptions (vision, tool use, code execution, tool
    /// permissions) are checked against; `None`: those findings are unknown.
    pub runner: Option<super::runner_fit::RunnerFacts>,
}

impl EnvOptions {
    /// Options from this process: `PATH`, `LC_ALL`/`LC_MESSAGES`/`LANG`, `HOME`, the working
    /// folder, this OS and the names of the set variables; no context limit.
    pub(crate) fn from_process() -> Self {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"]
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .find(|value| !value.is_empty());
        Self {
            path: std::env::var_os("PATH"),
            python: None,
            locale,
            home: crate::features::registry::state::home_dir(),
            cwd: std::env::current_dir().ok(),
            context_limit: None,
            os: OperatingSystem::current(),
            set_variables: std::env::vars_os()
                .filter(|(_, value)| !value.is_empty())
                .map(|(name, _)| name.to_string_lossy().into_owned())
                .collect(),
            runner: None,
        }
    }

    /// These options checked against runner profile `profile` (named `profile_name`), for
    /// `model` when given instead of the profile's: its context limit ([`context_limit_for`])
    /// and what it offers skills ([`super::runner_fit::RunnerFacts`]).
    pub(crate) fn with_runner(
        mut self,
        profile_name: &str,
        profile: &crate::features::runner::profile::RunnerProfile,
        model: Option<&str>,
    ) -> Self {
        self.context_limit = context_limit_for(profile_name, profile, model);
        self.runner = Some(super::runner_fit::RunnerFacts::of_profile(
            profile_name,
            profile,
            model,
        ));
        self
    }
}

/// The reconciliation of one skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EnvironmentReport {
    pub skill_dir: PathBuf,
    /// `name` of the skill.
    pub name: String,
    /// The OS checked against.
    pub os: Option<OperatingSystem>,
    /// Findings: missing first, then unknown, then satisfied; by kind and subject within.
    pub findings: Vec<EnvFinding>,
    pub satisfied: usize,
    pub missing: usize,
    pub unknown: usize,
}

impl EnvironmentReport {
    /// The red flags: findings whose status is missing.
    pub(crate) fn red_flags(&self) -> impl Iterator<Item = &EnvFinding> {
        self.findings
            .iter()
            .filter(|f| f.status == FitStatus::Missing)
    }

    /// Go / no-go: no red flag.
    pub(crate) fn passes(&self) -> bool {
        self.missing == 0
    }
}

/// Model families whose context window is documented by their vendor, tokens; matched on the
/// lowercased model id's prefix. A profile's `context_tokens` or `--context-limit` wins.
const KNOWN_CONTEXT_LIMITS: [(&str, u64); 9] = [
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini-2", 1_048_576),
    ("gemini-1.5-pro", 2_097_152),
    ("llama-3.1", 131_072),
];

/// The documented context window of `model`, when its family is known.
pub(crate) fn known_context_limit(model: &str) -> Option<u64> {
    let lower = model.to_ascii_lowercase();
    let lower = lower.rsplit('/').next().unwrap_or(&lower);
    KNOWN_CONTEXT_LIMITS
        .iter()
        .find(|(prefix, _)| lower.starts_with(prefix))
        .map(|(_, tokens)| *tokens)
}

/// The context limit of a runner profile: its `context_tokens`, else the documented window of
/// the model family ([`known_context_limit`]); `model` overrides the profile's model id.
/// The reply reserve is the profile's `max_tokens` (0 when unset).
pub(crate) fn context_limit_for(
    profile_name: &str,
    profile: &crate::features::runner::profile::RunnerProfile,
    model: Option<&str>,
) -> Option<ContextLimit> {
    let model = model.unwrap_or(&profile.model);
    let reply_tokens = profile.max_tokens.unwrap_or(0);
    if let Some(tokens) = profile.context_tokens {
        return Some(ContextLimit {
            tokens,
            source: format!("runner profile {profile_name}: context_tokens"),
            reply_tokens,
        });
    }
    known_context_limit(model).map(|tokens| ContextLimit {
        tokens,
        source: format!("documented window of model {model}"),
        reply_tokens,
    })
}

/// Tools that exist only on one OS (by default installation).
const MACOS_ONLY: [&str; 26] = [
    "pbcopy",
    "pbpaste",
    "osascript",
    "defaults",
    "launchctl",
    "sw_vers",
    "diskutil",
    "mdfind",
    "mdls",
    "say",
    "security",
    "plutil",
    "ditto",
    "hdiutil",
    "xcrun",
    "xcodebuild",
    "system_profiler",
    "caffeinate",
    "scutil",
    "networksetup",
    "softwareupdate",
    "pmset",
    "codesign",
    "spctl",
    "screencapture",
    "open",
];
const LINUX_ONLY: [&str; 12] = [
    "apt-get",
    "apt",
    "dpkg",
    "systemctl",
    "journalctl",
    "xdg-open",
    "yum",
    "dnf",
    "pacman",
    "xclip",
    "xsel",
    "update-alternatives",
];
const WINDOWS_ONLY: [&str; 6] = [
    "powershell",
    "powershell.exe",
    "cmd.exe",
    "winget",
    "choco",
    "reg.exe",
];

fn os_only(program: &str) -> Option<OperatingSystem> {
    if MACOS_ONLY.contains(&program) {
        Some(OperatingSystem::Macos)
    } else if LINUX_ONLY.contains(&program) {
        Some(OperatingSystem::Linux)
    } else if WINDOWS_ONLY.contains(&program.to_ascii_lowercase().as_str()) {
        Some(OperatingSystem::Windows)
    } else {
        None
    }
}

static PYTHON_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*)|from\s+([A-Za-z_][\w.]*)\s+import\b)")
        .expect("python import")
});
static PYTHON_SUBPROCESS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?:subprocess\.\w+|os\.exec\w*|shutil\.which)\(\s*\[?\s*["']([A-Za-z0-9_.+\-/]+)["']"#,
    )
    .expect("subprocess")
});
static PYTHON_SYSTEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"os\.(?:system|popen)\(\s*f?["']([^"']+)["']"#).expect("system"));
static MCP_TOOL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bmcp__([A-Za-z0-9_\-]+?)__[A-Za-z0-9_\-]+").expect("mcp"));
static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"\bhttps?://([A-Za-z0-9.\-]+)"#).expect("url"));
static NETWORK_CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:import requests|from requests|urllib\.request|import httpx|import aiohttp|requests\.(?:get|post|put|delete)\(|fetch\(|axios|http\.request\()")
        .expect("network code")
});
static MACOS_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s'`(=])((?:/Users/[A-Za-z0-9._\-]+|~/Library|/Applications|/System/Library|/Volumes)(?:/[^\s'`)]*)?)")
        .expect("macos path")
});
static WINDOWS_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s'`(=])([A-Za-z]:\\[^\s'`)]*|%(?:APPDATA|USERPROFILE|LOCALAPPDATA|PROGRAMFILES)%[^\s'`)]*)")
        .expect("windows path")
});
static ENV_REQUIRED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"os\.environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]|\$\{([A-Z][A-Z0-9_]*):\?|process\.env\.([A-Z][A-Z0-9_]*)"#)
        .expect("env required")
});
static ENV_OPTIONAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"os\.(?:environ\.get|getenv)\(\s*["']([A-Z][A-Z0-9_]*)["']"#)
        .expect("env optional")
});

/// Variables every shell has; never reported.
const COMMON_VARIABLES: [&str; 12] = [
    "HOME", "PATH", "PWD", "USER", "SHELL", "TMPDIR", "LANG", "TERM", "OLDPWD", "HOSTNAME",
    "LOGNAME", "EDITOR",
];

/// Accumulates findings keyed by (kind, subject), merging evidence.
#[derive(Default)]
struct Findings {
    by_key: BTreeMap<(FindingKind, String), EnvFinding>,
}

impl Findings {
    fn add(
        &mut self,
        kind: FindingKind,
        subject: &str,
        status: FitStatus,
        detail: String,
        evidence: Option<Evidence>,
    ) {
        let entry = self
            .by_key
            .entry((kind, subject.to_string()))
            .or_insert_with(|| EnvFinding {
                kind,
                subject: subject.to_string(),
                status,
                detail,
                evidence: Vec::new(),
            });
        if let Some(evidence) = evidence
            && entry.evidence.len() < MAX_EVIDENCE
            && !entry.evidence.contains(&evidence)
        {
            entry.evidence.push(evidence);
        }
    }

    fn contains(&self, kind: FindingKind, subject: &str) -> bool {
        self.by_key.contains_key(&(kind, subject.to_string()))
    }
}

/// A program the skill runs, where it was seen.
struct Usage {
    program: String,
    evidence: Evidence,
}

/// Reconcile the skill in `dir` with the machine described by `options`.
///
/// Errors when `dir` is not a skill folder (`SKILL.md` missing or unparseable) or a file cannot
/// be read; everything the machine lacks is a finding, not an error.
pub(crate) fn reconcile_environment(
    dir: &Path,
    options: &EnvOptions,
) -> Result<EnvironmentReport, SkillFitError> {
    let skill = crate::features::asset::load_skill(dir)?;
    let files = skill_files(dir)?;
    let skill_md = files
        .iter()
        .find(|f| f.relative == "SKILL.md")
        .and_then(|f| f.text.clone())
        .unwrap_or_default();
    let first_line = body_first_line(&skill_md, &skill.body);
    let blocks = fenced_blocks(&skill.body, first_line);
    let mut findings = Findings::default();
    let os = options.os;

    // Where commands are used, and code lines to scan for network, paths and variables.
    let mut usages: Vec<Usage> = Vec::new();
    let mut code_lines: Vec<(String, usize, String)> = Vec::new();
    let mut python_lines: Vec<(String, usize, String)> = Vec::new();
    let tools_line = skill_md
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("allowed-tools:"))
        .map(|(i, l)| Evidence::at("SKILL.md", i + 1, l));
    for tool in &skill.allowed_tools {
        if let Some((_, program)) = super::lint::bash_pattern_program(tool) {
            usages.push(Usage {
                program,
                evidence: tools_line
                    .clone()
                    .unwrap_or_else(|| Evidence::at("SKILL.md", 0, "")),
            });
        }
    }
    for block in &blocks {
        let shell = is_shell_lang(&block.lang);
        let python = matches!(block.lang.as_str(), "python" | "py" | "python3");
        for (number, line) in &block.lines {
            let prompt = block.lang.is_empty() && line.trim_start().starts_with("$ ");
            if shell || prompt {
                for program in commands_in_shell_line(line) {
                    usages.push(Usage {
                        program,
                        evidence: Evidence::at("SKILL.md", *number, line),
                    });
                }
            }
            if python {
                python_lines.push(("SKILL.md".to_string(), *number, line.clone()));
            }
            code_lines.push(("SKILL.md".to_string(), *number, line.clone()));
        }
    }
    // Inline `commands` in the body's prose are not parsed: prose names tools it does not run.
    let mut has_python_files = false;
    for file in &files {
        let Some(text) = &file.text else { continue };
        if file.relative == "SKILL.md" || file.relative.starts_with("evals/") {
            continue;
        }
        let kind = script_kind(file);
        if kind == ScriptKind::Other {
            continue;
        }
        if let Some(shebang) = file.shebang() {
            shebang_interpreter(shebang, file, &mut usages);
        }
        let functions = shell_functions(text);
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            if number == 1 && line.starts_with("#!") {
                continue;
            }
            code_lines.push((file.relative.clone(), number, line.to_string()));
            match kind {
                ScriptKind::Shell => {
                    for program in commands_in_shell_line(line) {
                        if !functions.contains(&program) {
                            usages.push(Usage {
                                program,
                                evidence: Evidence::at(&file.relative, number, line),
                            });
                        }
                    }
                }
                ScriptKind::Python => {
                    has_python_files = true;
                    python_lines.push((file.relative.clone(), number, line.to_string()));
                    for captures in PYTHON_SUBPROCESS.captures_iter(line) {
                        usages.push(Usage {
                            program: captures[1].to_string(),
                            evidence: Evidence::at(&file.relative, number, line),
                        });
                    }
                    for captures in PYTHON_SYSTEM.captures_iter(line) {
                        for program in commands_in_shell_line(&captures[1]) {
                            usages.push(Usage {
                                program,
                                evidence: Evidence::at(&file.relative, number, line),
                            });
                        }
                    }
                }
                ScriptKind::JavaScript | ScriptKind::Other => {}
            }
        }
    }

    check_commands(dir, &usages, options, &mut findings);
    check_python(
        &files,
        &python_lines,
        has_python_files,
        options,
        &mut findings,
    );
    check_node(dir, &files, options, &mut findings);
    check_mcp(&files, options, &mut findings);
    check_os(&skill, &skill_md, &code_lines, os, options, &mut findings);
    check_variables(&code_lines, options, &mut findings);
    check_locale(&skill.body, first_line, options, &mut findings);
    check_context(&skill, first_line, options, &mut findings);
    check_network(&usages, &code_lines, &mut findings);
    check_declared(&skill, &skill_md, dir, &usages, options, &mut findings);

    let mut findings: Vec<EnvFinding> = findings.by_key.into_values().collect();
    findings.sort_by(|a, b| (a.status, a.kind, &a.subject).cmp(&(b.status, b.kind, &b.subject)));
    let count = |status| findings.iter().filter(|f| f.status == status).count();
    Ok(EnvironmentReport {
        skill_dir: dir.to_path_buf(),
        name: skill.name.clone(),
        os,
        satisfied: count(FitStatus::Satisfied),
        missing: count(FitStatus::Missing),
        unknown: count(FitStatus::Unknown),
        findings,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScriptKind {
    Shell,
    Python,
    JavaScript,
    Other,
}

fn script_kind(file: &SkillFile) -> ScriptKind {
    let name = file.relative.rsplit('/').next().unwrap_or(&file.relative);
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("sh" | "bash" | "zsh") => return ScriptKind::Shell,
        Some("py") => return ScriptKind::Python,
        Some("js" | "mjs" | "cjs" | "ts") => return ScriptKind::JavaScript,
        _ => {}
    }
    match file.shebang() {
        Some(line) if line.contains("python") => ScriptKind::Python,
        Some(line) if line.contains("node") || line.contains("deno") || line.contains("bun") => {
            ScriptKind::JavaScript
        }
        Some(line) if line.contains("sh") => ScriptKind::Shell,
        _ => ScriptKind::Other,
    }
}

/// The interpreter of a `#!` line: `/usr/bin/env python3` → `python3`, `/bin/bash` → `/bin/bash`.
fn shebang_interpreter(shebang: &str, file: &SkillFile, usages: &mut Vec<Usage>) {
    let mut words = shebang.trim_start_matches("#!").split_whitespace();
    let Some(first) = words.next() else { return };
    let program = if first.ends_with("/env") {
        words.find(|w| !w.starts_with('-')).unwrap_or("")
    } else {
        first
    };
    if !program.is_empty() {
        usages.push(Usage {
            program: program.to_string(),
            evidence: Evidence::at(&file.relative, 1, shebang),
        });
    }
}

/// Names of functions a shell script defines (`name() {`, `function name`).
fn shell_functions(text: &str) -> BTreeSet<String> {
    static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^\s*(?:function\s+([A-Za-z_][\w\-]*)|([A-Za-z_][\w\-]*)\s*\(\s*\))")
            .expect("function")
    });
    text.lines()
        .filter_map(|line| DEFINITION.captures(line))
        .filter_map(|c| c.get(1).or(c.get(2)).map(|m| m.as_str().to_string()))
        .collect()
}

fn is_interpreter(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    name.starts_with("python")
        || matches!(
            name,
            "node"
                | "deno"
                | "bun"
                | "ruby"
                | "perl"
                | "bash"
                | "sh"
                | "zsh"
                | "php"
                | "Rscript"
                | "java"
                | "uv"
                | "uvx"
                | "npx"
        )
}

fn check_commands(dir: &Path, usages: &[Usage], options: &EnvOptions, out: &mut Findings) {
    let path_variable = options
        .path
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned());
    let cwd = options.cwd.clone().unwrap_or_else(|| PathBuf::from("/"));
    for usage in usages {
        let program = usage.program.as_str();
        let evidence = Some(usage.evidence.clone());
        // A script of the skill itself.
        if program.contains('/') && !program.starts_with('/') && !program.starts_with('~') {
            let relative = program.trim_start_matches("./");
            let (status, detail) = if dir.join(relative).is_file() {
                (FitStatus::Satisfied, "in the skill folder".to_string())
            } else {
                (
                    FitStatus::Missing,
                    "not in the skill folder (relative to the skill)".to_string(),
                )
            };
            out.add(FindingKind::Script, relative, status, detail, evidence);
            continue;
        }
        let program_path = if let Some(rest) = program.strip_prefix("~/") {
            match &options.home {
                Some(home) => home.join(rest),
                None => PathBuf::from(program),
            }
        } else {
            PathBuf::from(program)
        };
        let name = program.rsplit('/').next().unwrap_or(program);
        let kind = if is_interpreter(program) {
            FindingKind::Interpreter
        } else {
            FindingKind::Command
        };
        let only = os_only(name);
        let found = crate::features::contain::resolve_program(
            &program_path,
            path_variable.as_deref(),
            &cwd,
        );
        match (only, options.os) {
            (Some(needed), Some(here)) if needed != here && found.is_none() => {
                out.add(
                    FindingKind::OperatingSystem,
                    &format!("{name} ({})", needed.label()),
                    FitStatus::Missing,
                    format!(
                        "`{name}` is a {}-only tool; this machine runs {}",
                        needed.label(),
                        here.label()
                    ),
                    evidence,
                );
            }
            _ => {
                let (status, detail) = match found {
                    Some(path) => (FitStatus::Satisfied, format!("found: {}", path.display())),
                    None => (
                        FitStatus::Missing,
                        if program_path.is_absolute() {
                            "no executable at this path".to_string()
                        } else {
                            "not found in PATH".to_string()
                        },
                    ),
                };
                out.add(kind, program, status, detail, evidence);
            }
        }
    }
}

/// The interpreter Python imports are checked against.
fn python_interpreter(options: &EnvOptions) -> Option<PathBuf> {
    if let Some(python) = &options.python {
        return Some(python.clone());
    }
    let path_variable = options
        .path
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned());
    let cwd = options.cwd.clone().unwrap_or_else(|| PathBuf::from("/"));
    ["python3", "python"].iter().find_map(|name| {
        crate::features::contain::resolve_program(Path::new(name), path_variable.as_deref(), &cwd)
    })
}

/// The probe run by the interpreter: for each argument `m:NAME` (a top-level module) prints
/// `stdlib`, `found` or `missing`; for `d:NAME` (a distribution) `found` or `missing`.
const PYTHON_PROBE: &str = r#"
import sys, importlib.util
try:
    import importlib.metadata as md
except Exception:
    md = None
std = getattr(sys, "stdlib_module_names", set()) | set(sys.builtin_module_names)
for arg in sys.argv[1:]:
    kind, name = arg.split(":", 1)
    if kind == "m":
        if name in std:
            state = "stdlib"
        else:
            try:
                state = "found" if importlib.util.find_spec(name) is not None else "missing"
            except Exception:
                state = "missing"
    else:
        try:
            md.distribution(name)
            state = "found"
        except Exception:
            state = "missing"
    print(arg + "\t" + state)
"#;

/// Run the probe; `None` when the interpreter could not be run or timed out.
fn run_python_probe(python: &Path, arguments: &[String]) -> Option<BTreeMap<String, String>> {
    let mut child = std::process::Command::new(python)
        .arg("-I")
        .arg("-c")
        .arg(PYTHON_PROBE)
        .args(arguments)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::BufReader::new(stdout), &mut text).ok();
        text
    });
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < PYTHON_PROBE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let text = reader.join().ok()?;
    Some(
        text.lines()
            .filter_map(|line| line.split_once('\t'))
            .map(|(arg, state)| (arg.to_string(), state.to_string()))
            .collect(),
    )
}

/// Top-level module names of the skill's own Python files and packages (imports of these are
/// local, not dependencies).
fn local_python_modules(files: &[SkillFile]) -> BTreeSet<String> {
    let mut local = BTreeSet::new();
    for file in files {
        let parts: Vec<&str> = file.relative.split('/').collect();
        if let Some(stem) = parts.last().and_then(|n| n.strip_suffix(".py")) {
            local.insert(stem.to_string());
        }
        for part in &parts[..parts.len().saturating_sub(1)] {
            local.insert(part.to_string());
        }
    }
    local
}

fn check_python(
    files: &[SkillFile],
    python_lines: &[(String, usize, String)],
    has_python_files: bool,
    options: &EnvOptions,
    out: &mut Findings,
) {
    let local = local_python_modules(files);
    let mut imports: BTreeMap<String, Vec<Evidence>> = BTreeMap::new();
    for (file, number, line) in python_lines {
        let Some(captures) = PYTHON_IMPORT.captures(line) else {
            continue;
        };
        let names: Vec<String> = if let Some(list) = captures.get(1) {
            list.as_str()
                .split(',')
                .filter_map(|item| item.split_whitespace().next())
                .map(|name| name.split('.').next().unwrap_or(name).to_string())
                .collect()
        } else {
            let module = &captures[2];
            vec![module.split('.').next().unwrap_or(module).to_string()]
        };
        for name in names {
            if name == "__future__" || local.contains(&name) {
                continue;
            }
            let slot = imports.entry(name).or_default();
            if slot.len() < MAX_EVIDENCE {
                slot.push(Evidence::at(file, *number, line));
            }
        }
    }
    let mut requirements: BTreeMap<String, Evidence> = BTreeMap::new();
    for file in files
        .iter()
        .filter(|f| f.relative.rsplit('/').next() == Some("requirements.txt"))
    {
        let Some(text) = &file.text else { continue };
        for (index, line) in text.lines().enumerate() {
            let line_text = line.split('#').next().unwrap_or("").trim();
            if line_text.is_empty() || line_text.starts_with('-') {
                continue;
            }
            let name: String = line_text
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
                .collect();
            if !name.is_empty() {
                requirements
                    .entry(name)
                    .or_insert_with(|| Evidence::at(&file.relative, index + 1, line));
            }
        }
    }
    if imports.is_empty() && requirements.is_empty() && !has_python_files {
        return;
    }
    let interpreter = python_interpreter(options);
    let Some(interpreter) = interpreter else {
        out.add(
            FindingKind::Interpreter,
            "python3",
            FitStatus::Missing,
            "the skill has Python code but no python3 or python is in PATH".to_string(),
            imports
                .values()
                .flatten()
                .next()
                .cloned()
                .or_else(|| requirements.values().next().cloned()),
        );
        for (name, evidence) in &imports {
            for e in evidence {
                out.add(
                    FindingKind::PythonModule,
                    name,
                    FitStatus::Unknown,
                    "no Python interpreter to check against".to_string(),
                    Some(e.clone()),
                );
            }
        }
        return;
    };
    let mut arguments: Vec<String> = imports.keys().map(|n| format!("m:{n}")).collect();
    arguments.extend(requirements.keys().map(|n| format!("d:{n}")));
    let answers = run_python_probe(&interpreter, &arguments);
    let shown = interpreter.display().to_string();
    for (name, evidence) in &imports {
        let answer = answers
            .as_ref()
            .and_then(|a| a.get(&format!("m:{name}")).cloned());
        let (status, detail) = match answer.as_deref() {
            Some("stdlib") => continue,
            Some("found") => (FitStatus::Satisfied, format!("importable by {shown}")),
            Some(_) => (
                FitStatus::Missing,
                format!(
                    "not importable by {shown} (install it, e.g. `{shown} -m pip install {name}`; the distribution name may differ)"
                ),
            ),
            None => (
                FitStatus::Unknown,
                format!("{shown} did not answer the import probe"),
            ),
        };
        for e in evidence {
            out.add(
                FindingKind::PythonModule,
                name,
                status,
                detail.clone(),
                Some(e.clone()),
            );
        }
    }
    for (name, evidence) in &requirements {
        let answer = answers
            .as_ref()
            .and_then(|a| a.get(&format!("d:{name}")).cloned());
        let (status, detail) = match answer.as_deref() {
            Some("found") => (FitStatus::Satisfied, format!("installed for {shown}")),
            Some(_) => (
                FitStatus::Missing,
                format!("not installed for {shown} (`{shown} -m pip install -r requirements.txt`)"),
            ),
            None => (
                FitStatus::Unknown,
                format!("{shown} did not answer the package probe"),
            ),
        };
        out.add(
            FindingKind::PythonPackage,
            name,
            status,
            detail,
            Some(evidence.clone()),
        );
    }
}

fn check_node(dir: &Path, files: &[SkillFile], options: &EnvOptions, out: &mut Findings) {
    for file in files
        .iter()
        .filter(|f| f.relative.rsplit('/').next() == Some("package.json"))
    {
        let Some(text) = &file.text else { continue };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
            out.add(
                FindingKind::NodePackage,
                &file.relative,
                FitStatus::Unknown,
                "package.json is not valid JSON; its dependencies could not be read".to_string(),
                Some(Evidence::at(&file.relative, 0, "")),
            );
            continue;
        };
        let folder = file.path.parent().unwrap_or(dir);
        let Some(dependencies) = value.get("dependencies").and_then(|d| d.as_object()) else {
            continue;
        };
        if !dependencies.is_empty() && !out.contains(FindingKind::Interpreter, "node") {
            let path_variable = options
                .path
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned());
            let cwd = options.cwd.clone().unwrap_or_else(|| PathBuf::from("/"));
            let (status, detail) = match crate::features::contain::resolve_program(
                Path::new("node"),
                path_variable.as_deref(),
                &cwd,
            ) {
                Some(path) => (FitStatus::Satisfied, format!("found: {}", path.display())),
                None => (
                    FitStatus::Missing,
                    "package.json has dependencies but node is not in PATH".to_string(),
                ),
            };
            out.add(
                FindingKind::Interpreter,
                "node",
                status,
                detail,
                Some(Evidence::at(&file.relative, 0, "")),
            );
        }
        for name in dependencies.keys() {
            let line = text
                .lines()
                .position(|l| l.contains(&format!("\"{name}\"")))
                .map(|i| i + 1)
                .unwrap_or(0);
            let line_text = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
            let installed = folder.join("node_modules").join(name).join("package.json");
            let (status, detail) = if installed.is_file() {
                (
                    FitStatus::Satisfied,
                    format!("installed in {}", folder.join("node_modules").display()),
                )
            } else {
                (
                    FitStatus::Missing,
                    format!("not installed (run `npm install` in {})", folder.display()),
                )
            };
            out.add(
                FindingKind::NodePackage,
                name,
                status,
                detail,
                Some(Evidence::at(&file.relative, line, line_text)),
            );
        }
    }
}

/// MCP server names configured for the agent hosts under `home` (and a project `.mcp.json` in
/// `cwd`), with the file that names each.
pub(crate) fn configured_mcp_servers(
    home: Option<&Path>,
    cwd: Option<&Path>,
) -> (BTreeMap<String, PathBuf>, Vec<PathBuf>) {
    let mut json_files: Vec<PathBuf> = Vec::new();
    if let Some(home) = home {
        for relative in [
            ".claude.json",
            ".claude/settings.json",
            ".claude/.mcp.json",
            ".cursor/mcp.json",
            ".gemini/settings.json",
            ".config/opencode/opencode.json",
            ".codeium/windsurf/mcp_config.json",
        ] {
            json_files.push(home.join(relative));
        }
    }
    if let Some(cwd) = cwd {
        json_files.push(cwd.join(".mcp.json"));
    }
    let mut servers = BTreeMap::new();
    let mut read = Vec::new();
    for path in json_files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        read.push(path.clone());
        let mut tables = vec![value.get("mcpServers"), value.get("mcp")];
        if let Some(projects) = value.get("projects").and_then(|p| p.as_object()) {
            tables.extend(projects.values().map(|p| p.get("mcpServers")));
        }
        for table in tables.into_iter().flatten() {
            if let Some(map) = table.as_object() {
                for name in map.keys() {
                    servers.entry(name.clone()).or_insert_with(|| path.clone());
                }
            }
        }
    }
    if let Some(home) = home {
        let path = home.join(".codex/config.toml");
        if let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(value) = toml::from_str::<toml::Table>(&text)
        {
            read.push(path.clone());
            if let Some(table) = value.get("mcp_servers").and_then(|t| t.as_table()) {
                for name in table.keys() {
                    servers.entry(name.clone()).or_insert_with(|| path.clone());
                }
            }
        }
    }
    (servers, read)
}

fn check_mcp(files: &[SkillFile], options: &EnvOptions, out: &mut Findings) {
    let mut named: BTreeMap<String, Vec<Evidence>> = BTreeMap::new();
    for file in files {
        let Some(text) = &file.text else { continue };
        if file.relative.starts_with("evals/") {
            continue;
        }
        for (index, line) in text.lines().enumerate() {
            for captures in MCP_TOOL.captures_iter(line) {
                named
                    .entry(captures[1].to_string())
                    .or_default()
                    .push(Evidence::at(&file.relative, index + 1, line));
            }
        }
        if file.relative.rsplit('/').next() == Some(".mcp.json")
            && let Ok(value) = serde_json::from_str::<serde_json::Value>(text)
            && let Some(map) = value.get("mcpServers").and_then(|m| m.as_object())
        {
            for name in map.keys() {
                let line = text
                    .lines()
                    .position(|l| l.contains(&format!("\"{name}\"")))
                    .unwrap_or(0);
                named.entry(name.clone()).or_default().push(Evidence::at(
                    &file.relative,
                    line + 1,
                    text.lines().nth(line).unwrap_or(""),
                ));
            }
        }
    }
    if named.is_empty() {
        return;
    }
    let (configured, read) =
        configured_mcp_servers(options.home.as_deref(), options.cwd.as_deref());
    for (name, evidence) in named {
        let (status, detail) = match configured.get(&name) {
            Some(path) => (FitStatus::Satisfied, format!("configured in {}", path.display())),
            None if read.is_empty() => (
                FitStatus::Missing,
                "no agent host's MCP configuration was found under HOME (looked for ~/.claude.json, ~/.claude/settings.json, ~/.cursor/mcp.json, ~/.gemini/settings.json, ~/.codex/config.toml, ~/.config/opencode/opencode.json, ./.mcp.json)".to_string(),
            ),
            None => (
                FitStatus::Missing,
                format!(
                    "no MCP configuration names it (read: {})",
                    read.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
                ),
            ),
        };
        for e in evidence.into_iter().take(MAX_EVIDENCE) {
            out.add(
                FindingKind::McpServer,
                &name,
                status,
                detail.clone(),
                Some(e),
            );
        }
    }
}

fn check_os(
    skill: &crate::features::asset::Skill,
    skill_md: &str,
    code_lines: &[(String, usize, String)],
    os: Option<OperatingSystem>,
    options: &EnvOptions,
    out: &mut Findings,
) {
    let Some(here) = os else { return };
    if let Some(compatibility) = &skill.compatibility {
        let lower = compatibility.to_ascii_lowercase();
        let named: Vec<OperatingSystem> = [
            (
                OperatingSystem::Macos,
                ["macos", "mac os", "osx"].as_slice(),
            ),
            (
                OperatingSystem::Linux,
                ["linux", "ubuntu", "debian"].as_slice(),
            ),
            (OperatingSystem::Windows, ["windows"].as_slice()),
        ]
        .iter()
        .filter(|(_, words)| words.iter().any(|w| lower.contains(w)))
        .map(|(os, _)| *os)
        .collect();
        if !named.is_empty() {
            let line = skill_md
                .lines()
                .position(|l| l.starts_with("compatibility:"))
                .map(|i| i + 1)
                .unwrap_or(0);
            let evidence = Evidence::at(
                "SKILL.md",
                line,
                skill_md.lines().nth(line.saturating_sub(1)).unwrap_or(""),
            );
            let labels = named
                .iter()
                .map(|o| o.label())
                .collect::<Vec<_>>()
                .join(" / ");
            let (status, detail) = if named.contains(&here) {
                (
                    FitStatus::Satisfied,
                    format!(
                        "compatibility names {labels}; this machine runs {}",
                        here.label()
                    ),
                )
            } else {
                (
                    FitStatus::Missing,
                    format!(
                        "compatibility names {labels}; this machine runs {}",
                        here.label()
                    ),
                )
            };
            out.add(
                FindingKind::OperatingSystem,
                &format!("compatibility: {labels}"),
                status,
                detail,
                Some(evidence),
            );
        }
    }
    for (file, number, line) in code_lines {
        for (regex, needed) in [
            (&*MACOS_PATH, OperatingSystem::Macos),
            (&*WINDOWS_PATH, OperatingSystem::Windows),
        ] {
            for captures in regex.captures_iter(line) {
                let path = captures[1].trim_end_matches(['.', ',', ';', '"']);
                let evidence = Some(Evidence::at(file, *number, line));
                if needed != here {
                    out.add(
                        FindingKind::OperatingSystem,
                        &format!("{} path", needed.label()),
                        FitStatus::Missing,
                        format!(
                            "uses {} paths such as `{path}`; this machine runs {}",
                            needed.label(),
                            here.label()
                        ),
                        evidence,
                    );
                } else {
                    let expanded = match (path.strip_prefix("~/"), &options.home) {
                        (Some(rest), Some(home)) => home.join(rest),
                        _ => PathBuf::from(path),
                    };
                    let (status, detail) = if expanded.exists() {
                        (FitStatus::Satisfied, "exists here".to_string())
                    } else {
                        (
                            FitStatus::Missing,
                            "hard-coded path that does not exist on this machine".to_string(),
                        )
                    };
                    out.add(FindingKind::OperatingSystem, path, status, detail, evidence);
                }
            }
        }
    }
}

fn check_variables(
    code_lines: &[(String, usize, String)],
    options: &EnvOptions,
    out: &mut Findings,
) {
    for (file, number, line) in code_lines {
        for (regex, required) in [(&*ENV_REQUIRED, true), (&*ENV_OPTIONAL, false)] {
            for captures in regex.captures_iter(line) {
                let Some(name) = captures.iter().skip(1).flatten().next().map(|m| m.as_str())
                else {
                    continue;
                };
                if COMMON_VARIABLES.contains(&name) {
                    continue;
                }
                let set = options.set_variables.contains(name);
                let (status, detail) = match (set, required) {
                    (true, _) => (FitStatus::Satisfied, "set (value not read)".to_string()),
                    (false, true) => (
                        FitStatus::Missing,
                        "read as required but not set".to_string(),
                    ),
                    (false, false) => (
                        FitStatus::Unknown,
                        "read with a fallback; not set".to_string(),
                    ),
                };
                out.add(
                    FindingKind::EnvironmentVariable,
                    name,
                    status,
                    detail,
                    Some(Evidence::at(file, *number, line)),
                );
            }
        }
    }
}

/// The language of `text`: an ISO 639-1 code, or `None` when too little text says.
/// Non-Latin scripts decide by character counts; Latin text by the most frequent stop words of
/// English, German, French, Spanish, Italian, Portuguese and Dutch (at least 5 hits, and 1.5×
/// the runner-up).
pub(crate) fn detect_language(text: &str) -> Option<&'static str> {
    let mut scripts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut letters = 0usize;
    for c in text.chars() {
        if !c.is_alphabetic() {
            continue;
        }
        letters += 1;
        let script = match c as u32 {
            0x3040..=0x30FF => "ja",
            0xAC00..=0xD7AF | 0x1100..=0x11FF => "ko",
            0x4E00..=0x9FFF => "zh",
            0x0400..=0x04FF => "ru",
            0x0600..=0x06FF => "ar",
            0x0590..=0x05FF => "he",
            0x0370..=0x03FF => "el",
            0x0900..=0x097F => "hi",
            0x0E00..=0x0E7F => "th",
            _ => continue,
        };
        *scripts.entry(script).or_default() += 1;
    }
    if letters == 0 {
        return None;
    }
    let non_latin: usize = scripts.values().sum();
    if non_latin * 3 > letters {
        // Kana marks Japanese even among many Han characters.
        if scripts.get("ja").copied().unwrap_or(0) > 0 {
            return Some("ja");
        }
        return scripts.into_iter().max_by_key(|(_, n)| *n).map(|(s, _)| s);
    }
    const STOP_WORDS: [(&str, &[&str]); 7] = [
        (
            "en",
            &[
                "the", "and", "is", "to", "of", "with", "when", "this", "you", "for", "a", "in",
                "it", "that",
            ],
        ),
        (
            "de",
            &[
                "der", "die", "das", "und", "ist", "nicht", "mit", "wenn", "ein", "eine", "zu",
                "den", "für", "sie",
            ],
        ),
        (
            "fr",
            &[
                "le", "la", "les", "et", "est", "des", "une", "pour", "avec", "dans", "que",
                "vous", "pas", "du",
            ],
        ),
        (
            "es",
            &[
                "el", "los", "las", "y", "es", "una", "para", "con", "que", "por", "del", "cuando",
                "usted", "se",
            ],
        ),
        (
            "it",
            &[
                "il", "gli", "e", "è", "di", "che", "per", "con", "una", "non", "sono", "quando",
                "della", "lo",
            ],
        ),
        (
            "pt",
            &[
                "o", "os", "as", "e", "é", "um", "uma", "para", "com", "não", "que", "quando",
                "você", "do",
            ],
        ),
        (
            "nl",
            &[
                "de", "het", "een", "en", "is", "niet", "met", "voor", "van", "als", "je", "dat",
                "wanneer", "op",
            ],
        ),
    ];
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect();
    let mut scores: Vec<(&str, usize)> = STOP_WORDS
        .iter()
        .map(|(lang, list)| {
            (
                *lang,
                words.iter().filter(|w| list.contains(&w.as_str())).count(),
            )
        })
        .collect();
    scores.sort_by_key(|(_, hits)| std::cmp::Reverse(*hits));
    let (best, hits) = scores[0];
    let runner_up = scores[1].1;
    (hits >= 5 && hits as f64 >= 1.5 * runner_up as f64).then_some(best)
}

/// The English name of an ISO 639-1 code (the code itself when not known here).
pub(crate) fn language_name(code: &str) -> &str {
    match code {
        "en" => "English",
        "de" => "German",
        "fr" => "French",
        "es" => "Spanish",
        "it" => "Italian",
        "pt" => "Portuguese",
        "nl" => "Dutch",
        "ja" => "Japanese",
        "ko" => "Korean",
        "zh" => "Chinese",
        "ru" => "Russian",
        "ar" => "Arabic",
        "he" => "Hebrew",
        "el" => "Greek",
        "hi" => "Hindi",
        "th" => "Thai",
        "vi" => "Vietnamese",
        "id" => "Indonesian",
        "tr" => "Turkish",
        "pl" => "Polish",
        "uk" => "Ukrainian",
        "sv" => "Swedish",
        "da" => "Danish",
        "no" => "Norwegian",
        "fi" => "Finnish",
        "cs" => "Czech",
        other => other,
    }
}

/// The language of a locale string (`de_DE.UTF-8` → `de`; `C`/`POSIX` → `en`).
pub(crate) fn locale_language(locale: &str) -> Option<String> {
    let base = locale.split(['.', '@']).next().unwrap_or("");
    if base == "C" || base == "POSIX" {
        return Some("en".to_string());
    }
    let language = base
        .split(['_', '-'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    (language.len() == 2 || language.len() == 3).then_some(language)
}

fn check_locale(body: &str, first_line: usize, options: &EnvOptions, out: &mut Findings) {
    // Prose only: fenced blocks and inline code are left out.
    let code: BTreeSet<usize> = fenced_blocks(body, first_line)
        .iter()
        .flat_map(|b| b.lines.iter().map(|(n, _)| *n))
        .collect();
    static INLINE_CODE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`[^`]*`").expect("inline"));
    let prose: String = body
        .lines()
        .enumerate()
        .filter(|(i, _)| !code.contains(&(first_line + i)))
        .map(|(_, l)| INLINE_CODE.replace_all(l, " ").into_owned() + "\n")
        .collect();
    let Some(body_language) = detect_language(&prose) else {
        out.add(
            FindingKind::Locale,
            "body language",
            FitStatus::Unknown,
            "too little prose to tell the body's language".to_string(),
            None,
        );
        return;
    };
    let evidence = body
        .lines()
        .enumerate()
        .find(|(i, l)| !code.contains(&(first_line + i)) && l.split_whitespace().count() >= 4)
        .map(|(i, l)| Evidence::at("SKILL.md", first_line + i, l));
    let subject = format!("body in {}", language_name(body_language));
    let Some(locale) = options.locale.as_deref() else {
        out.add(
            FindingKind::Locale,
            &subject,
            FitStatus::Unknown,
            "no locale set (LC_ALL, LC_MESSAGES, LANG)".to_string(),
            evidence,
        );
        return;
    };
    let Some(user_language) = locale_language(locale) else {
        out.add(
            FindingKind::Locale,
            &subject,
            FitStatus::Unknown,
            format!("locale `{locale}` names no language"),
            evidence,
        );
        return;
    };
    let (status, detail) = if user_language == body_language {
        (FitStatus::Satisfied, format!("matches the locale {locale}"))
    } else if body_language == "en" {
        (
            FitStatus::Unknown,
            format!(
                "your locale is {locale} ({}); agents read English skills well, but check that its examples and fixed phrases suit replies in {}",
                language_name(&user_language),
                language_name(&user_language)
            ),
        )
    } else {
        (
            FitStatus::Missing,
            format!(
                "your locale is {locale} ({}); the skill's instructions and examples are in {} and may pull replies into it",
                language_name(&user_language),
                language_name(body_language)
            ),
        )
    };
    out.add(FindingKind::Locale, &subject, status, detail, evidence);
}

fn check_context(
    skill: &crate::features::asset::Skill,
    first_line: usize,
    options: &EnvOptions,
    out: &mut Findings,
) {
    let needed = (estimate_tokens(&skill.body) + estimate_tokens(&skill.description)) as u64;
    let evidence = Some(Evidence::at(
        "SKILL.md",
        first_line,
        &format!("(body: {} lines)", skill.body.lines().count()),
    ));
    let subject = format!("~{needed} tokens (description + body)");
    match &options.context_limit {
        None => out.add(
            FindingKind::ContextSize,
            &subject,
            FitStatus::Unknown,
            "no model limit known: set `context_tokens` in the runner profile or pass --context-limit".to_string(),
            evidence,
        ),
        Some(limit) => {
            let total = needed + limit.reply_tokens;
            let share = 100.0 * total as f64 / limit.tokens.max(1) as f64;
            let (status, detail) = if total <= limit.tokens {
                (
                    FitStatus::Satisfied,
                    format!("{total} tokens with the {}-token reply: {share:.0}% of the {}-token limit ({})", limit.reply_tokens, limit.tokens, limit.source),
                )
            } else {
                (
                    FitStatus::Missing,
                    format!("{total} tokens with the {}-token reply exceed the {}-token limit ({}); the runner truncates or rejects it", limit.reply_tokens, limit.tokens, limit.source),
                )
            };
            out.add(FindingKind::ContextSize, &subject, status, detail, evidence);
        }
    }
}

/// The requirements the skill declares ([`super::assumptions`]) against the runner, its model
/// limit, the locale and the OS ([`super::runner_fit`]), each quoting its sentence.
fn check_declared(
    skill: &crate::features::asset::Skill,
    skill_md: &str,
    dir: &Path,
    usages: &[Usage],
    options: &EnvOptions,
    out: &mut Findings,
) {
    // The body runs a script the skill ships: code execution is implied.
    let runs_own_script = usages
        .iter()
        .filter(|u| u.evidence.file == "SKILL.md" && u.evidence.line > 0)
        .find(|u| {
            let program = u.program.as_str();
            program.contains('/')
                && !program.starts_with('/')
                && !program.starts_with('~')
                && dir.join(program.trim_start_matches("./")).is_file()
        })
        .map(|u| (u.evidence.line, u.evidence.text.clone()));
    let context = super::runner_fit::DeclaredContext {
        runner: options.runner.as_ref(),
        context_limit: options.context_limit.as_ref(),
        locale: options.locale.as_deref(),
        os: options.os,
    };
    for assumption in super::assumptions::declared_assumptions(skill, skill_md, runs_own_script) {
        let finding = super::runner_fit::reconcile_declared(&assumption, &context);
        for evidence in finding.evidence {
            out.add(
                finding.kind,
                &finding.subject,
                finding.status,
                finding.detail.clone(),
                Some(evidence),
            );
        }
    }
}

fn check_network(usages: &[Usage], code_lines: &[(String, usize, String)], out: &mut Findings) {
    let mut hosts: BTreeMap<String, Vec<Evidence>> = BTreeMap::new();
    for usage in usages {
        let name = usage.program.rsplit('/').next().unwrap_or(&usage.program);
        if matches!(
            name,
            "curl"
                | "wget"
                | "http"
                | "https"
                | "gh"
                | "aws"
                | "gcloud"
                | "az"
                | "ssh"
                | "scp"
                | "rsync"
        ) {
            hosts
                .entry(format!("via {name}"))
                .or_default()
                .push(usage.evidence.clone());
        }
    }
    for (file, number, line) in code_lines {
        for captures in URL.captures_iter(line) {
            let host = captures[1].to_ascii_lowercase();
            if matches!(host.as_str(), "localhost" | "127.0.0.1" | "0.0.0.0") {
                continue;
            }
            hosts
                .entry(host)
                .or_default()
                .push(Evidence::at(file, *number, line));
        }
        if NETWORK_CODE.is_match(line) {
            hosts
                .entry("HTTP client code".to_string())
                .or_default()
                .push(Evidence::at(file, *number, line));
        }
    }
    for (host, evidence) in hosts {
        for e in evidence.into_iter().take(MAX_EVIDENCE) {
            out.add(
                FindingKind::Network,
                &host,
                FitStatus::Unknown,
                "the skill uses the network; reachability from this machine (and from a sandboxed agent) is not tested".to_string(),
                Some(e),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::write;

    fn options(bin: &Path, home: &Path) -> EnvOptions {
        EnvOptions {
            path: Some(bin.as_os_str().to_owned()),
            python: None,
            locale: Some("en_US.UTF-8".into()),
            home: Some(home.to_path_buf()),
            cwd: Some(home.to_path_buf()),
            context_limit: Some(ContextLimit {
                tokens: 4096,
                source: "test".into(),
                reply_tokens: 96,
            }),
            os: Some(OperatingSystem::Linux),
            set_variables: ["PRESENT_TOKEN".to_string()].into_iter().collect(),
            runner: None,
        }
    }

    fn fake_program(bin: &Path, name: &str) {
        use std::os::unix::fs::PermissionsExt;
        write(bin, name, "#!/bin/sh\n");
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn status_of<'a>(
        report: &'a EnvironmentReport,
        kind: FindingKind,
        subject: &str,
    ) -> &'a EnvFinding {
        report
            .findings
            .iter()
            .find(|f| f.kind == kind && f.subject == subject)
            .unwrap_or_else(|| panic!("no {kind:?} {subject}: {:#?}", report.findings))
    }

    #[test]
    fn reconciles_planted_assumptions() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        let home = root.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        fake_program(&bin, "git");
        write(
            &home,
            ".claude.json",
            r#"{"mcpServers": {"github": {"command": "x"}}}"#,
        );
        let dir = root.path().join("planted");
        write(
            &dir,
            "SKILL.md",
            "---\nname: planted\ndescription: Use when testing.\nallowed-tools: Bash(git:*) mcp__github__create_issue mcp__jira__search\n---\n# Planted\n\n```bash\ngit status && frobnicate --all\npbcopy < out.txt\ncurl https://api.example.com/v1\n./scripts/run.sh\n```\n",
        );
        write(
            &dir,
            "scripts/run.sh",
            "#!/bin/sh\nhelper() { echo; }\nhelper\ncat ~/Library/Preferences/x.plist\necho ${NEEDED_TOKEN:?set it}\n",
        );
        let report = reconcile_environment(&dir, &options(&bin, &home)).unwrap();
        assert_eq!(
            status_of(&report, FindingKind::Command, "git").status,
            FitStatus::Satisfied
        );
        let missing = status_of(&report, FindingKind::Command, "frobnicate");
        assert_eq!(missing.status, FitStatus::Missing);
        assert_eq!(missing.evidence[0].location(), "SKILL.md:9");
        assert_eq!(
            status_of(&report, FindingKind::OperatingSystem, "pbcopy (macOS)").status,
            FitStatus::Missing
        );
        assert_eq!(
            status_of(&report, FindingKind::OperatingSystem, "macOS path").status,
            FitStatus::Missing
        );
        assert_eq!(
            status_of(&report, FindingKind::McpServer, "github").status,
            FitStatus::Satisfied
        );
        assert_eq!(
            status_of(&report, FindingKind::McpServer, "jira").status,
            FitStatus::Missing
        );
        assert_eq!(
            status_of(&report, FindingKind::Network, "api.example.com").status,
            FitStatus::Unknown
        );
        assert_eq!(
            status_of(&report, FindingKind::Script, "scripts/run.sh").status,
            FitStatus::Satisfied
        );
        assert_eq!(
            status_of(&report, FindingKind::EnvironmentVariable, "NEEDED_TOKEN").status,
            FitStatus::Missing
        );
        assert!(
            report.findings.iter().all(|f| f.subject != "helper"),
            "shell functions are not programs"
        );
        assert_eq!(
            report.findings[0].status,
            FitStatus::Missing,
            "red flags first"
        );
        assert!(!report.passes());
    }

    #[test]
    fn context_limit_and_locale() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("deutsch");
        write(
            &dir,
            "SKILL.md",
            &format!(
                "---\nname: deutsch\ndescription: Use when asked.\n---\n# Hilfe\n\nDie Antwort ist immer kurz und nicht länger als zwei Sätze. Wenn der Kunde fragt, dann antworte mit einer Lösung für das Problem und den nächsten Schritt.\n{}",
                "Wort ".repeat(20_000)
            ),
        );
        let report = reconcile_environment(&dir, &options(root.path(), root.path())).unwrap();
        let locale = report
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::Locale)
            .unwrap();
        assert_eq!(locale.subject, "body in German");
        assert_eq!(locale.status, FitStatus::Missing);
        let context = report
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::ContextSize)
            .unwrap();
        assert_eq!(context.status, FitStatus::Missing, "{context:?}");
    }

    #[test]
    fn languages() {
        assert_eq!(
            detect_language("The skill answers the question when you ask it, and it is short."),
            Some("en")
        );
        assert_eq!(
            detect_language("これはテストです。日本語の文章"),
            Some("ja")
        );
        assert_eq!(detect_language("Привет, как дела?"), Some("ru"));
        assert_eq!(detect_language("ok"), None);
        assert_eq!(locale_language("de_DE.UTF-8").as_deref(), Some("de"));
        assert_eq!(locale_language("C.UTF-8").as_deref(), Some("en"));
        assert_eq!(known_context_limit("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_context_limit("mystery"), None);
    }

    #[test]
    fn python_imports_checked_against_the_interpreter() {
        let Some(python) = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
        else {
            return;
        };
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("py");
        write(
            &dir,
            "SKILL.md",
            "---\nname: py\ndescription: Use when.\n---\nRun `python3 scripts/a.py`.\n",
        );
        write(
            &dir,
            "scripts/a.py",
            "import os, json\nimport surely_not_installed_xyz\nfrom helpers import x\n",
        );
        write(&dir, "scripts/helpers.py", "x = 1\n");
        let mut opts = options(root.path(), root.path());
        opts.python = Some(python);
        let report = reconcile_environment(&dir, &opts).unwrap();
        assert_eq!(
            status_of(
                &report,
                FindingKind::PythonModule,
                "surely_not_installed_xyz"
            )
            .status,
            FitStatus::Missing
        );
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.subject != "os" && f.subject != "helpers"),
            "{:#?}",
            report.findings
        );
    }
}
