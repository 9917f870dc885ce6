//! Declared assumptions: the requirements a skill *states* about the model and the machine it
//! runs on — a context window, an output language, an operating system, a model capability
//! (vision, tool use, code execution), a tool permission — read from its frontmatter
//! (`description`, `compatibility`, `metadata`, `allowed-tools`) and the prose of its body, each
//! with the sentence it came from ([`DeclaredAssumption::quote`]).
//!
//! This module only reads the skill: [`declared_assumptions`] is a pure function of the parsed
//! skill and its `SKILL.md` text. Setting the assumptions against a runner profile and this
//! machine is `super::runner_fit`'s job; `super::environment` puts the results beside its other
//! findings.
//!
//! The rules favour precision over recall: a skill that *mentions* Japanese, a context window or
//! a vision model is not one that *requires* them. A sentence counts only when it states a
//! requirement (`requires`, `needs`, `must`, `only works on`, an imperative "answer in …"), is
//! not negated ("does not require", "optional") and, for languages, not conditional ("if the
//! user writes in Chinese, reply in Chinese"). Fenced code, inline code and table rows are not
//! prose and are never read. The measured precision on public skills is in docs/skill-fit.md.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::environment::OperatingSystem;
use super::{Evidence, body_first_line, fenced_blocks};

/// The context window a skill asking for "long context" without a number is taken to need,
/// tokens: 100k, the window Anthropic introduced as long context (Claude, May 2023) and the
/// smallest window commonly sold under that name since.
pub(crate) const LONG_CONTEXT_TOKENS: u64 = 100_000;

/// What kind of requirement a declared assumption is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AssumptionKind {
    /// A minimum context window of the model.
    ContextWindow,
    /// The language every answer must be in.
    OutputLanguage,
    /// The operating systems the skill runs on.
    OperatingSystem,
    /// The model must accept images.
    Vision,
    /// The model must call tools.
    ToolUse,
    /// The agent must run commands or code.
    CodeExecution,
    /// A tool `allowed-tools` names must be available to the agent.
    ToolPermission,
}

/// What a tool named in `allowed-tools` gives the agent access to. Names follow Claude Code's
/// tools (the names the Agent Skills specification's examples use: `Bash(git:*) Read`), with the
/// usual equivalents of other agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolAccess {
    /// Reading and searching files (`Read`, `Glob`, `Grep`, `LS`, `NotebookRead`).
    ReadFiles,
    /// Writing and editing files (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`).
    WriteFiles,
    /// Running shell commands (`Bash`, `Bash(…)`, `Shell`).
    Shell,
    /// Fetching from and searching the web (`WebFetch`, `WebSearch`).
    Web,
    /// Loading skills (`Skill`).
    Skill,
    /// Starting sub-agents (`Task`, `Agent`).
    Subagents,
    /// Keeping a to-do list (`TodoWrite`, `TodoRead`): the agent's own state, no permission.
    Todo,
}

impl ToolAccess {
    /// What the access is, in words.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::ReadFiles => "reading files",
            Self::WriteFiles => "writing files",
            Self::Shell => "running shell commands",
            Self::Web => "web access",
            Self::Skill => "loading skills",
            Self::Subagents => "starting sub-agents",
            Self::Todo => "a to-do list",
        }
    }

    /// The access a tool name of `allowed-tools` gives; `None` for a name not known here (an
    /// MCP tool `mcp__…` is checked as an MCP server instead).
    pub(crate) fn of_tool(tool: &str) -> Option<Self> {
        let head = tool.split('(').next().unwrap_or(tool).trim();
        match head.to_ascii_lowercase().as_str() {
            "read"
            | "glob"
            | "grep"
            | "ls"
            | "notebookread"
            | "read_file"
            | "list_directory"
            | "search_file_content"
            | "view" => Some(Self::ReadFiles),
            "write" | "edit" | "multiedit" | "notebookedit" | "write_file" | "replace"
            | "apply_patch" => Some(Self::WriteFiles),
            "bash" | "shell" | "run_shell_command" | "terminal" | "bashoutput" | "killshell"
            | "killbash" => Some(Self::Shell),
            "webfetch" | "websearch" | "web_fetch" | "google_web_search" => Some(Self::Web),
            "skill" | "activate_skill" => Some(Self::Skill),
            "task" | "agent" => Some(Self::Subagents),
            "todowrite" | "todoread" => Some(Self::Todo),
            _ => None,
        }
    }
}

/// What the skill requires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Requirement {
    /// A context window of at least `tokens`.
    ContextWindow {
        /// Tokens.
        tokens: u64,
    },
    /// Answers in `language` (ISO 639-1).
    OutputLanguage {
        /// ISO 639-1 code, e.g. `ja`.
        language: &'static str,
    },
    /// One of these operating systems.
    OperatingSystem {
        /// Any of them will do.
        any_of: Vec<OperatingSystem>,
    },
    /// A model that accepts images.
    Vision,
    /// A model that calls tools.
    ToolUse,
    /// An agent that runs commands or code.
    CodeExecution,
    /// The tool `tool` of `allowed-tools`, giving `access`.
    ToolPermission {
        /// The entry as written (`Bash(git:*)`).
        tool: String,
        /// What it gives access to.
        access: ToolAccess,
    },
}

impl Requirement {
    /// The kind of the requirement.
    pub(crate) fn kind(&self) -> AssumptionKind {
        match self {
            Self::ContextWindow { .. } => AssumptionKind::ContextWindow,
            Self::OutputLanguage { .. } => AssumptionKind::OutputLanguage,
            Self::OperatingSystem { .. } => AssumptionKind::OperatingSystem,
            Self::Vision => AssumptionKind::Vision,
            Self::ToolUse => AssumptionKind::ToolUse,
            Self::CodeExecution => AssumptionKind::CodeExecution,
            Self::ToolPermission { .. } => AssumptionKind::ToolPermission,
        }
    }
}

/// Where in the skill the requirement is stated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DeclaredIn {
    /// The frontmatter `description`.
    Description,
    /// The frontmatter `compatibility`.
    Compatibility,
    /// The frontmatter `metadata` (free text, or an OpenClaw-style `os` list).
    Metadata,
    /// The frontmatter `allowed-tools`.
    AllowedTools,
    /// The prose of the body.
    Body,
    /// Implied by the body: it runs a script the skill ships.
    BodyRunsScript,
}

/// One requirement a skill states, with the sentence that states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DeclaredAssumption {
    /// What is required.
    pub requirement: Requirement,
    /// Where it is stated.
    pub declared_in: DeclaredIn,
    /// The sentence, at its file and 1-based line (redacted, at most 200 characters).
    pub quote: Evidence,
}

/// A sentence of the skill's text and the 1-based line of `SKILL.md` it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sentence {
    declared_in: DeclaredIn,
    line: usize,
    text: String,
}

/// The requirements the skill in `skill_md` (its whole `SKILL.md` text, parsed as `skill`)
/// states, in the order they appear (frontmatter first), one per requirement and sentence.
/// `runs_own_script` is the first line (1-based, `SKILL.md`) where the body runs a script the
/// skill ships, when it does: that implies code execution.
pub(crate) fn declared_assumptions(
    skill: &crate::features::asset::Skill,
    skill_md: &str,
    runs_own_script: Option<(usize, String)>,
) -> Vec<DeclaredAssumption> {
    let mut sentences = Vec::new();
    let lines: Vec<&str> = skill_md.lines().collect();
    let frontmatter_end = frontmatter_end(&lines);
    for (declared_in, key, value) in [
        (
            DeclaredIn::Description,
            "description",
            Some(skill.description.as_str()),
        ),
        (
            DeclaredIn::Compatibility,
            "compatibility",
            skill.compatibility.as_deref(),
        ),
    ] {
        let Some(value) = value else { continue };
        let key_line = key_line(&lines[..frontmatter_end], key);
        for (_, text) in split_sentences(value) {
            let line = locate(&lines[..frontmatter_end], &text).unwrap_or(key_line);
            sentences.push(Sentence {
                declared_in,
                line,
                text,
            });
        }
    }
    let metadata_lines = metadata_lines(&lines[..frontmatter_end]);
    for (line, text) in &metadata_lines {
        for (_, text) in split_sentences(text) {
            sentences.push(Sentence {
                declared_in: DeclaredIn::Metadata,
                line: *line,
                text,
            });
        }
    }
    let first_line = body_first_line(skill_md, &skill.body);
    sentences.extend(body_sentences(&skill.body, first_line));

    let mut out: Vec<DeclaredAssumption> = Vec::new();
    let mut push = |requirement: Requirement, declared_in: DeclaredIn, quote: Evidence| {
        if !out
            .iter()
            .any(|a| a.requirement == requirement && a.quote == quote)
        {
            out.push(DeclaredAssumption {
                requirement,
                declared_in,
                quote,
            });
        }
    };
    for sentence in &sentences {
        let quote = Evidence::at("SKILL.md", sentence.line, &sentence.text);
        for requirement in sentence_requirements(&sentence.text, sentence.declared_in) {
            push(requirement, sentence.declared_in, quote.clone());
        }
    }
    // OpenClaw-style structured metadata: `{"openclaw": {"os": ["darwin", "linux"]}}`.
    for (key, value) in &skill.metadata {
        if let Some(any_of) = metadata_os_list(key, value) {
            let line = metadata_lines
                .iter()
                .find(|(_, text)| text.contains("\"os\"") || text.trim_start().starts_with("os:"))
                .map(|(line, _)| *line)
                .unwrap_or_else(|| key_line(&lines[..frontmatter_end], "metadata"));
            let text = lines.get(line.saturating_sub(1)).copied().unwrap_or("");
            push(
                Requirement::OperatingSystem { any_of },
                DeclaredIn::Metadata,
                Evidence::at("SKILL.md", line, text),
            );
        }
    }
    let tools_line = key_line(&lines[..frontmatter_end], "allowed-tools");
    let tools_quote = Evidence::at(
        "SKILL.md",
        tools_line,
        lines
            .get(tools_line.saturating_sub(1))
            .copied()
            .unwrap_or(""),
    );
    for tool in &skill.allowed_tools {
        let Some(access) = ToolAccess::of_tool(tool) else {
            continue;
        };
        if access == ToolAccess::Shell {
            push(
                Requirement::CodeExecution,
                DeclaredIn::AllowedTools,
                tools_quote.clone(),
            );
        }
        push(
            Requirement::ToolPermission {
                tool: tool.clone(),
                access,
            },
            DeclaredIn::AllowedTools,
            tools_quote.clone(),
        );
    }
    if let Some((line, text)) = runs_own_script {
        push(
            Requirement::CodeExecution,
            DeclaredIn::BodyRunsScript,
            Evidence::at("SKILL.md", line, &text),
        );
    }
    out
}

/// The 0-based index of the line after the frontmatter's closing `---` (0 without frontmatter).
fn frontmatter_end(lines: &[&str]) -> usize {
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return 0;
    }
    lines
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, l)| l.trim_end() == "---")
        .map(|(i, _)| i + 1)
        .unwrap_or(0)
}

/// The 1-based line of a top-level frontmatter key (0 when absent).
fn key_line(frontmatter: &[&str], key: &str) -> usize {
    frontmatter
        .iter()
        .position(|l| {
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|i| i + 1)
        .unwrap_or(0)
}

/// The 1-based frontmatter line where `sentence` starts (its first 40 characters found on it).
fn locate(frontmatter: &[&str], sentence: &str) -> Option<usize> {
    let head: String = sentence.chars().take(40).collect();
    let head = head.trim();
    if head.is_empty() {
        return None;
    }
    frontmatter
        .iter()
        .position(|l| l.contains(head))
        .map(|i| i + 1)
}

/// The lines of the frontmatter's `metadata` (its own line when it is inline, else the indented
/// lines under it), 1-based, with their text after the key.
fn metadata_lines(frontmatter: &[&str]) -> Vec<(usize, String)> {
    let start = key_line(frontmatter, "metadata");
    if start == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let own = frontmatter[start - 1]
        .split_once(':')
        .map(|(_, v)| v.trim())
        .unwrap_or("");
    if !own.is_empty() {
        out.push((start, own.to_string()));
    }
    for (index, line) in frontmatter.iter().enumerate().skip(start) {
        if !line.starts_with([' ', '\t']) && !line.trim().is_empty() {
            break;
        }
        if line.trim() == "---" {
            break;
        }
        let text = line.trim();
        if !text.is_empty() {
            out.push((index + 1, text.to_string()));
        }
    }
    out
}

/// The operating systems an OpenClaw / Clawdbot / Moltbot `metadata` entry restricts the skill
/// to (`{"os": ["darwin", "linux"]}`, Node's `process.platform` names); `None` when it names none
/// or every one.
fn metadata_os_list(key: &str, value: &str) -> Option<Vec<OperatingSystem>> {
    let parsed: serde_json::Value = serde_json::from_str(value).ok()?;
    let list = if key == "os" {
        parsed
    } else {
        parsed.get("os")?.clone()
    };
    let names: Vec<String> = match list {
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_ascii_lowercase))
            .collect(),
        serde_json::Value::String(text) => text
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(str::to_ascii_lowercase)
            .collect(),
        _ => return None,
    };
    let mut any_of: Vec<OperatingSystem> = names
        .iter()
        .filter_map(|name| match name.as_str() {
            "darwin" | "macos" | "mac" | "osx" => Some(OperatingSystem::Macos),
            "linux" => Some(OperatingSystem::Linux),
            "win32" | "windows" | "win" => Some(OperatingSystem::Windows),
            _ => None,
        })
        .collect();
    any_of.sort();
    any_of.dedup();
    (!any_of.is_empty() && any_of.len() < 3).then_some(any_of)
}

/// The prose sentences of the body: paragraphs joined across their wrapped lines, outside fenced
/// code, table rows and HTML comments, with inline code removed; each with the line it starts on.
fn body_sentences(body: &str, first_line: usize) -> Vec<Sentence> {
    let code: std::collections::BTreeSet<usize> = fenced_blocks(body, first_line)
        .iter()
        .flat_map(|b| b.lines.iter().map(|(n, _)| *n))
        .collect();
    static INLINE_CODE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`[^`]*`").expect("inline"));
    let mut out = Vec::new();
    // A paragraph: its text and, for each of its lines, (byte offset in the text, line number).
    let mut paragraph: Option<(String, Vec<(usize, usize)>)> = None;
    let flush = |paragraph: &mut Option<(String, Vec<(usize, usize)>)>, out: &mut Vec<Sentence>| {
        if let Some((text, starts)) = paragraph.take() {
            for (offset, sentence) in split_sentences(&text) {
                let line = starts
                    .iter()
                    .take_while(|(start, _)| *start <= offset)
                    .last()
                    .map_or(0, |(_, line)| *line);
                out.push(Sentence {
                    declared_in: DeclaredIn::Body,
                    line,
                    text: sentence,
                });
            }
        }
    };
    let mut in_comment = false;
    for (index, raw) in body.lines().enumerate() {
        let number = first_line + index;
        let trimmed = raw.trim();
        let is_fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if code.contains(&number) || is_fence {
            flush(&mut paragraph, &mut out);
            continue;
        }
        if in_comment || trimmed.starts_with("<!--") {
            in_comment = !trimmed.contains("-->");
            flush(&mut paragraph, &mut out);
            continue;
        }
        let heading = trimmed.starts_with('#');
        let starts_block = trimmed.is_empty()
            || heading
            || trimmed.starts_with('|')
            || trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed.starts_with("+ ")
            || trimmed.starts_with('>')
            || trimmed.split_once(". ").is_some_and(|(n, _)| {
                !n.is_empty() && n.len() <= 3 && n.chars().all(|c| c.is_ascii_digit())
            });
        if starts_block {
            flush(&mut paragraph, &mut out);
        }
        if trimmed.is_empty() || trimmed.starts_with('|') {
            continue;
        }
        let text = INLINE_CODE.replace_all(trimmed, " ").into_owned();
        let text = text.trim_start_matches(['#', '-', '*', '+', '>']).trim();
        let (joined, starts) = paragraph.get_or_insert_with(|| (String::new(), Vec::new()));
        if !joined.is_empty() {
            joined.push(' ');
        }
        starts.push((joined.len(), number));
        joined.push_str(text);
        if heading {
            // A heading is a paragraph of its own.
            flush(&mut paragraph, &mut out);
        }
    }
    flush(&mut paragraph, &mut out);
    out
}

/// `text` cut into sentences: after `.`, `!`, `?` followed by white space (not after a one- or
/// two-letter abbreviation such as `e.g.`), after `。`, `！`, `？` and at line ends; each with
/// the byte offset where it starts in `text`.
fn split_sentences(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut chars = text.char_indices().peekable();
    let push = |from: usize, to: usize, out: &mut Vec<(usize, String)>| {
        let piece = &text[from..to];
        let trimmed = piece.trim_start();
        let offset = from + (piece.len() - trimmed.len());
        let sentence = trimmed.trim_end();
        if !sentence.is_empty() {
            out.push((offset, sentence.to_string()));
        }
    };
    while let Some((index, c)) = chars.next() {
        let end = index + c.len_utf8();
        let ends = match c {
            '。' | '！' | '？' | '\n' => true,
            '.' | '!' | '?' => {
                chars.peek().is_none_or(|(_, n)| n.is_whitespace()) && {
                    let word = text[start..index]
                        .rsplit(|ch: char| ch.is_whitespace())
                        .next()
                        .unwrap_or("");
                    // `e.g.`, `i.e.`, `vs.`: not the end of a sentence.
                    !(c == '.' && (word.contains('.') || matches!(word, "vs" | "etc" | "approx")))
                }
            }
            _ => false,
        };
        if ends {
            push(start, end, &mut out);
            start = end;
        }
    }
    push(start, text.len(), &mut out);
    out
}

/// Words that state a requirement.
static REQUIRES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:requires?|required|requirements?|needs?|needed|must|at least|minimum|only (?:works?|runs?|supported|available)|(?:works?|runs?) only|depends on)\b|必须|需要|必要|要求")
        .expect("requires")
});
/// Words that negate or weaken a requirement in the same sentence.
static NEGATED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:not|never|no|don'?t|doesn'?t|isn'?t|without|optional(?:ly)?|unless|instead of)\b|不需要|不必|不要|不用|必要ありません|不要")
        .expect("negated")
});
/// Conditions and preferences: "when the task needs long context", "if you need Windows",
/// "prefer a model with vision" state when something helps, not what the skill requires.
static CONDITIONAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:if|when|whenever|prefer|preferably|best with|recommended)\b|如果|若|もし|場合",
    )
    .expect("conditional")
});
/// A limit from above ("keep it under 6,000 tokens"): a budget, not a minimum window.
static MAXIMUM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:keep (?:it |the \w+ )?under|under|below|at most|up to|no more than|max(?:imum)?|limit(?:ed)? to)\b")
        .expect("maximum")
});
/// Words that require a capability, followed within 40 characters (no clause break) by it.
const CAPABILITY_REQUIRES: &str = r"(?i)\b(?:requires?|required|needs?|must (?:have|support)|only works with|depends on)\b[^.;:()\[\]]{0,40}?";
/// A context window named in the sentence.
static CONTEXT_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bcontext(?:[- ]window| length| size)?\b|\btoken window\b|上下文|コンテキスト")
        .expect("context")
});
/// A token count: `200k`, `200K-token`, `1M`, `128,000 tokens`, `32768 tokens`.
static TOKEN_COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(\d+(?:\.\d+)?)\s?([km])\b(?:[- ]?tokens?)?|\b(\d{1,3}(?:,\d{3})+|\d{4,})\s?[- ]?tokens?\b")
        .expect("token count")
});
static LONG_CONTEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"{CAPABILITY_REQUIRES}\b(?:long|large|extended)[- ]context (?:window|model|llm)\b"
    ))
    .expect("long context")
});
/// An imperative to answer in a language: `always answer in Japanese`, `respond only in German`,
/// `all responses must be in French`, `write your answers in Korean`.
static ANSWER_IN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:answer|respond|reply|output|communicate|converse|speak|talk|write (?:your |all |every )?(?:answers?|responses?|replies|output)|(?:your |all |every )?(?:answers?|responses?|replies|output|outputs) (?:must|should|shall|will) be(?: written)?)(?:s|ed|ing)?(?: only| always| exclusively| strictly)?\s+in\s+(?:(?:simplified|traditional|plain|fluent|natural|formal|polite)\s+)?([a-z]+)\b")
        .expect("answer in")
});
/// An English imperative sentence start or a strong marker, which makes `answer in …` a rule.
static IMPERATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:\W*)(?:always |only |please |you must |you should |must )?(?:answer|respond|reply|output|communicate|converse|speak|talk|write)\b|\b(?:always|must|only|exclusively|strictly|should)\b")
        .expect("imperative")
});
/// Conditions that make a language rule follow the user rather than fix a language.
static CONDITIONAL_LANGUAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:if|when|whenever|unless|depending|otherwise|default|defaults)\b|user'?s (?:own |preferred |chosen |input )?language|same language|language (?:of|as|that) the (?:user|request|question|input|conversation|prompt)|match(?:es|ing)? the (?:user|language|input)|--\w|如果|若|もし|場合|根据|跟随|一致|匹配|对应|相应|用户使用|用户用|→")
        .expect("conditional language")
});
/// Native-language rules: `日本語で回答`, `必ず日本語で`, `用中文回答`, `한국어로 답`.
static NATIVE_ANSWER_IN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(日本語)で(?:回答|応答|返答|出力|答え|返信|記述|書い|書く|会話|対話)|(?:必ず|常に)(日本語)|(?:用|使用|以)(?:简体|繁體|繁体)?(中文)(?:回答|回复|输出|撰写|交流|作答|书写|答复)|(?:回答|回复|输出|答复)(?:必须|请|都|一律|始终)(?:使用|用)(?:简体|繁體|繁体)?(中文)|(한국어)로\s?(?:답|응답|대답|작성)")
        .expect("native answer in")
});
/// An OS stated as a requirement: `requires macOS`, `macOS only`, `only works on Linux`.
static OS_REQUIRED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:requires?|needs?|only (?:works?|runs?|supported|available) on|(?:works?|runs?) only on|supported only on|must (?:run|be run) on)\s+(?:an?\s+|the\s+)?(macos|mac os x?|os x|osx|linux|windows|ubuntu|debian)\b|\b(macos|mac|linux|windows)[- ]only\b")
        .expect("os required")
});
/// Every OS named in a sentence.
static OS_NAMES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(macos|mac os x?|os x|osx|linux|windows|ubuntu|debian)\b").expect("os names")
});
static VISION_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"{CAPABILITY_REQUIRES}(?:\bvision\b|\bmulti-?modal (?:model|llm|capabilit(?:y|ies)|input|support)\b|\bimage (?:input|understanding) (?:support|capabilit(?:y|ies))\b|\bable to (?:see|view|read) images\b|\bsupports? (?:images|vision)\b)|(?:需要|必须)[^。，,]{{0,10}}(?:视觉能力|多模态模型)"))
        .expect("vision")
});
static VISION_BARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bvision\b|\bmulti-?modal\b|\bimage input\b").expect("vision bare")
});
static TOOL_USE_BARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:tool[- ]use|tool[- ]calling|function[- ]calling)\b").expect("tool bare")
});
static CODE_EXECUTION_BARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bcode[- ]execution\b|\bcode interpreter\b|\b(?:shell|terminal) access\b")
        .expect("code bare")
});
static VISION_DIRECT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\byou (?:can|are able to) see images\b|\byou are a (?:multi-?modal|vision)")
        .expect("vision direct")
});
static TOOL_USE_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"{CAPABILITY_REQUIRES}\b(?:tool[- ]use|tool[- ]calling|function[- ]calling)\b"
    ))
    .expect("tool use")
});
static CODE_EXECUTION_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"{CAPABILITY_REQUIRES}(?:\bcode[- ]execution\b|\bcode interpreter\b|\b(?:shell|terminal|bash|command[- ]line) access\b|\bability to (?:run|execute) (?:commands|code|scripts|shell commands)\b)"))
        .expect("code execution")
});

/// The ISO 639-1 code of an English language name.
fn language_code(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "english" => "en",
        "japanese" => "ja",
        "chinese" | "mandarin" | "cantonese" => "zh",
        "korean" => "ko",
        "german" => "de",
        "french" => "fr",
        "spanish" => "es",
        "italian" => "it",
        "portuguese" => "pt",
        "dutch" => "nl",
        "russian" => "ru",
        "arabic" => "ar",
        "hebrew" => "he",
        "greek" => "el",
        "hindi" => "hi",
        "thai" => "th",
        "vietnamese" => "vi",
        "indonesian" => "id",
        "turkish" => "tr",
        "polish" => "pl",
        "ukrainian" => "uk",
        "swedish" => "sv",
        "danish" => "da",
        "norwegian" => "no",
        "finnish" => "fi",
        "czech" => "cs",
        _ => return None,
    })
}

fn native_language_code(name: &str) -> Option<&'static str> {
    match name {
        "日本語" => Some("ja"),
        "中文" => Some("zh"),
        "한국어" => Some("ko"),
        _ => None,
    }
}

/// The requirements one sentence states.
fn sentence_requirements(sentence: &str, declared_in: DeclaredIn) -> Vec<Requirement> {
    let mut out = Vec::new();
    let negated = NEGATED.is_match(sentence) || CONDITIONAL.is_match(sentence);
    // `compatibility` states environment requirements by definition: no `requires` needed.
    let compatibility = declared_in == DeclaredIn::Compatibility;
    let requires = compatibility || REQUIRES.is_match(sentence);
    if requires && !negated {
        if CONTEXT_WORDS.is_match(sentence) && !MAXIMUM.is_match(sentence) {
            let counted = TOKEN_COUNT.captures_iter(sentence).find_map(|c| {
                if let (Some(number), Some(unit)) = (c.get(1), c.get(2)) {
                    let value: f64 = number.as_str().parse().ok()?;
                    let scale = match unit.as_str().to_ascii_lowercase().as_str() {
                        "k" => 1_000.0,
                        _ => 1_000_000.0,
                    };
                    Some((value * scale).round() as u64)
                } else {
                    c.get(3)?.as_str().replace(',', "").parse().ok()
                }
            });
            match counted {
                Some(tokens) if tokens >= 1_000 => {
                    out.push(Requirement::ContextWindow { tokens });
                }
                _ if LONG_CONTEXT.is_match(sentence) => out.push(Requirement::ContextWindow {
                    tokens: LONG_CONTEXT_TOKENS,
                }),
                _ => {}
            }
        }
        // In `compatibility` the requirement word may be the field itself.
        let capability = |regex: &Regex, bare: &Regex| {
            regex.is_match(sentence) || (compatibility && bare.is_match(sentence))
        };
        if capability(&VISION_WORDS, &VISION_BARE) {
            out.push(Requirement::Vision);
        }
        if capability(&TOOL_USE_WORDS, &TOOL_USE_BARE) {
            out.push(Requirement::ToolUse);
        }
        if capability(&CODE_EXECUTION_WORDS, &CODE_EXECUTION_BARE) {
            out.push(Requirement::CodeExecution);
        }
        if let Some(any_of) = required_systems(sentence, declared_in) {
            out.push(Requirement::OperatingSystem { any_of });
        }
    }
    if VISION_DIRECT.is_match(sentence) && !negated && !out.contains(&Requirement::Vision) {
        out.push(Requirement::Vision);
    }
    if let Some(language) = required_language(sentence) {
        out.push(Requirement::OutputLanguage { language });
    }
    out
}

/// The operating systems a sentence requires (not for `compatibility`, whose OS names the
/// environment check reads already).
fn required_systems(sentence: &str, declared_in: DeclaredIn) -> Option<Vec<OperatingSystem>> {
    if declared_in == DeclaredIn::Compatibility || !OS_REQUIRED.is_match(sentence) {
        return None;
    }
    let mut any_of: Vec<OperatingSystem> = OS_NAMES
        .captures_iter(sentence)
        .map(|c| {
            let name = c[1].to_ascii_lowercase();
            if name.contains("mac") || name.contains("os x") || name == "osx" {
                OperatingSystem::Macos
            } else if name == "windows" {
                OperatingSystem::Windows
            } else {
                OperatingSystem::Linux
            }
        })
        .collect();
    any_of.sort();
    any_of.dedup();
    (!any_of.is_empty() && any_of.len() < 3).then_some(any_of)
}

/// The language a sentence fixes every answer to, when it does unconditionally.
fn required_language(sentence: &str) -> Option<&'static str> {
    // "even when the ticket is in English" concedes; it sets no condition.
    static CONCESSIVE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\beven (?:if|when|whenever)\b").expect("concessive"));
    if CONDITIONAL_LANGUAGE.is_match(&CONCESSIVE.replace_all(sentence, "even")) {
        return None;
    }
    if let Some(captures) = NATIVE_ANSWER_IN.captures(sentence) {
        let name = captures.iter().skip(1).flatten().next()?.as_str();
        return native_language_code(name);
    }
    let captures = ANSWER_IN.captures(sentence)?;
    let language = language_code(&captures[1])?;
    // "Do not answer in English", "never reply in French": a prohibition, not a requirement.
    let before = &sentence[..captures.get(0).map_or(0, |m| m.start())];
    static PROHIBITION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:not|never|don'?t|avoid)\b\W*\w*\W*$").expect("prohibition")
    });
    if PROHIBITION.is_match(before) {
        return None;
    }
    IMPERATIVE.is_match(sentence).then_some(language)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirements(sentence: &str) -> Vec<Requirement> {
        sentence_requirements(sentence, DeclaredIn::Body)
    }

    #[test]
    fn context_windows_stated_as_requirements() {
        for (sentence, tokens) in [
            ("This skill requires a 200k-token context window.", 200_000),
            ("Needs at least 128,000 tokens of context.", 128_000),
            ("Minimum context window: 32K tokens.", 32_000),
            ("Requires a model with a 1M context window.", 1_000_000),
            ("Requires a long-context model.", LONG_CONTEXT_TOKENS),
        ] {
            assert_eq!(
                requirements(sentence),
                vec![Requirement::ContextWindow { tokens }],
                "{sentence}"
            );
        }
    }

    #[test]
    fn context_windows_merely_mentioned_are_not_requirements() {
        for sentence in [
            "Understanding the finite context window prevents degraded responses.",
            "A full cycle can consume 50k-150k tokens depending on complexity.",
            "Larger context windows do not uniformly improve performance.",
            "This does not require a 200k context window.",
            "Use snapshot for reading page content (~3k tokens).",
            "Prefer a frontier model when the task needs strong reasoning, long context or care.",
            "SKILL.md body (loaded on trigger; keep under ~6,000 tokens) needs to stay in context.",
            "如果需要处理较长上下文，选择较大的模型。",
        ] {
            assert_eq!(requirements(sentence), vec![], "{sentence}");
        }
    }

    #[test]
    fn output_languages_stated_as_rules() {
        for (sentence, language) in [
            ("Always answer in Japanese.", "ja"),
            (
                "Always answer in Japanese, even when the ticket is in English.",
                "ja",
            ),
            ("Output in Chinese.", "zh"),
            ("Respond only in German, whatever the question.", "de"),
            ("All responses must be in French.", "fr"),
            ("Answer in Chinese.", "zh"),
            ("Write your answers in simplified Chinese.", "zh"),
            ("必ず日本語で回答してください。", "ja"),
            ("请始终用中文回答。", "zh"),
        ] {
            assert_eq!(
                requirements(sentence),
                vec![Requirement::OutputLanguage { language }],
                "{sentence}"
            );
        }
    }

    #[test]
    fn languages_mentioned_or_following_the_user_are_not_rules() {
        for sentence in [
            "The skill translates Japanese documents into English summaries.",
            "If the user writes in Chinese, reply in Chinese.",
            "Always reply in the same language as the user.",
            "Respond in the user's language.",
            "Do not answer in English.",
            "--lang en — Output in English (default: Chinese)",
            "如果用户用中文提问，用中文回答。",
            "用户使用中文 → 用简体中文回复",
            "使用与问题语言相匹配的回复格式：英文问题用英文回复，中文问题用中文回复。",
            "Supports Japanese, Korean and Chinese input.",
        ] {
            assert_eq!(requirements(sentence), vec![], "{sentence}");
        }
    }

    #[test]
    fn operating_systems_and_capabilities() {
        assert_eq!(
            requirements("This skill only works on macOS."),
            vec![Requirement::OperatingSystem {
                any_of: vec![OperatingSystem::Macos]
            }]
        );
        assert_eq!(
            requirements("Requires macOS or Linux."),
            vec![Requirement::OperatingSystem {
                any_of: vec![OperatingSystem::Macos, OperatingSystem::Linux]
            }]
        );
        assert_eq!(
            requirements("Requires a vision-capable model to read the screenshots."),
            vec![Requirement::Vision]
        );
        assert_eq!(
            requirements("You are a multimodal AI — you can see images."),
            vec![Requirement::Vision]
        );
        assert_eq!(
            requirements("Needs a model with tool calling."),
            vec![Requirement::ToolUse]
        );
        assert_eq!(
            requirements("Model: Opus 4.6 (needs strong judgment + tool use)."),
            vec![Requirement::ToolUse]
        );
        assert_eq!(
            sentence_requirements("Requires a vision-capable model", DeclaredIn::Compatibility),
            vec![Requirement::Vision]
        );
        assert_eq!(
            sentence_requirements("Multimodal models only", DeclaredIn::Compatibility),
            vec![Requirement::Vision]
        );
        assert_eq!(
            requirements("Requires code execution to run the analysis."),
            vec![Requirement::CodeExecution]
        );
        for sentence in [
            "Hand each panel to a vision model for description.",
            "Works on macOS, Linux and Windows.",
            "No vision support is required.",
            "Curating multi-modal datasets (text, images, video, audio).",
            "On Windows, use the PowerShell script instead.",
            "All image inputs must be public HTTPS URLs.",
            "Instructions must produce tool-calling patterns that scale.",
            "Confirm the model supports multiple tool calls, provide all required fields.",
            "When investigating incidents that require analyzing windows prefetch files.",
            "Use this when users need Linux/macOS download links.",
            "Best with local shell access (Claude Code or a similar runtime).",
        ] {
            assert_eq!(requirements(sentence), vec![], "{sentence}");
        }
    }

    #[test]
    fn sentences_split_and_abbreviations_kept() {
        let texts = |text: &str| -> Vec<String> {
            split_sentences(text).into_iter().map(|(_, s)| s).collect()
        };
        assert_eq!(
            texts("Use tools, e.g. grep. Then stop! Done?"),
            vec!["Use tools, e.g. grep.", "Then stop!", "Done?"]
        );
        assert_eq!(texts("一つ。二つ。"), vec!["一つ。", "二つ。"]);
        assert_eq!(split_sentences("A b.  C d.")[1], (6, "C d.".to_string()));
    }

    #[test]
    fn quotes_come_with_file_and_line_from_every_field() {
        let text = "---\nname: a\ndescription: Drafts replies. Requires a 200k-token context window.\ncompatibility: Requires a vision-capable model\nmetadata:\n  openclaw: {\"os\": [\"darwin\"]}\nallowed-tools: Bash(git:*) Read Write\n---\n# A\n\nThe agent reads the ticket\nand always answers in Japanese. Keep it short. Always\nanswer in English.\n\n| Always answer in German. | table rows are not prose |\n\n```\nAlways answer in Korean.\n```\n";
        let skill = crate::features::asset::parse_skill_text(
            text,
            Path::new("a/SKILL.md"),
            Path::new("a"),
            "a",
        )
        .unwrap();
        let found = declared_assumptions(&skill, text, None);
        let summary: Vec<(AssumptionKind, usize, &str)> = found
            .iter()
            .map(|a| (a.requirement.kind(), a.quote.line, a.quote.text.as_str()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    AssumptionKind::ContextWindow,
                    3,
                    "Requires a 200k-token context window."
                ),
                (AssumptionKind::Vision, 4, "Requires a vision-capable model"),
                (
                    AssumptionKind::OutputLanguage,
                    11,
                    "The agent reads the ticket and always answers in Japanese."
                ),
                (
                    AssumptionKind::OutputLanguage,
                    12,
                    "Always answer in English."
                ),
                (
                    AssumptionKind::OperatingSystem,
                    6,
                    "openclaw: {\"os\": [\"darwin\"]}"
                ),
                (
                    AssumptionKind::CodeExecution,
                    7,
                    "allowed-tools: Bash(git:*) Read Write"
                ),
                (
                    AssumptionKind::ToolPermission,
                    7,
                    "allowed-tools: Bash(git:*) Read Write"
                ),
                (
                    AssumptionKind::ToolPermission,
                    7,
                    "allowed-tools: Bash(git:*) Read Write"
                ),
                (
                    AssumptionKind::ToolPermission,
                    7,
                    "allowed-tools: Bash(git:*) Read Write"
                ),
            ]
        );
    }

    use std::path::Path;
}
