//! Does this skill fit? The *static* half of the answer, computed from the skill folder and this
//! machine without running any agent:
//!
//! | file | owns |
//! |---|---|
//! | `lint.rs` | authoring checks (Agent Skills spec conformance, links, scripts, size, secrets), a score per skill, and `--against`: lint score vs measured lift (Spearman ρ) |
//! | `environment.rs` | environment reconciliation: what the skill assumes (commands, interpreters, packages, MCP servers, OS, locale, context size, network, and what it declares) vs this machine and the runner |
//! | `assumptions.rs` | declared assumptions: the context window, output language, OS, model capabilities and tool permissions a skill states, each with its sentence |
//! | `runner_fit.rs` | what a runner profile offers (tool use, code execution, vision, the tools it grants) and each declared assumption set against it |
//! | `render.rs` | the lint and env reports as text or JSON |
//! | `workflow.rs` | `lint` and `env` as workflows: which folders, which context limit, the report printed, passed or not |
//!
//! This module holds what both share: reading the skill's files, fenced code blocks, the
//! commands a shell line runs, evidence lines, and the token estimate. Only `workflow.rs` prints
//! (through the reporter); `crate::cli` maps passed / not passed to exit codes. Lint is never runtime
//! evidence: the ACES study found static scores uncorrelated with measured lift (Spearman
//! ρ = −0.018 for structural scores over 64 skills), which is why `lint --against` exists.

pub(crate) mod assumptions;
pub(crate) mod environment;
pub(crate) mod lint;
pub(crate) mod render;
pub(crate) mod runner_fit;
pub(crate) mod workflow;

use std::path::{Path, PathBuf};

use serde::Serialize;

/// The statement every lint and env report carries: what these checks are, and are not.
pub(crate) const STATIC_NOTICE: &str = "Static authoring checks of the skill's files, not runtime evidence: \
the ACES study found static scores uncorrelated with measured lift (Spearman rho = -0.018 for \
structural scores, -0.027 for LLM-judged scores, over 64 skills). Measure lift with `skill-lift run`.";

/// Largest file read as text, bytes; bigger files are listed but not searched.
pub(crate) const MAX_TEXT_BYTES: u64 = 1024 * 1024;

/// Folders never read inside a skill (vendored dependencies, caches, VCS data).
const SKIPPED_DIRS: [&str; 8] = [
    ".git",
    "node_modules",
    "__pycache__",
    ".venv",
    "venv",
    "target",
    ".mypy_cache",
    ".pytest_cache",
];

/// Why a skill folder could not be checked at all.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SkillFitError {
    #[error("{dir}: does not exist")]
    Missing { dir: PathBuf },
    #[error("{dir}: not a folder")]
    NotAFolder { dir: PathBuf },
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: cannot walk the folder: {message}")]
    Walk { path: PathBuf, message: String },
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    #[error(transparent)]
    Fingerprint(#[from] crate::features::asset::fingerprint::FingerprintError),
    #[error(transparent)]
    Registry(#[from] crate::features::registry::RegistryError),
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// One file of a skill folder.
#[derive(Debug, Clone)]
pub(crate) struct SkillFile {
    /// Path relative to the skill folder, `/`-separated.
    pub relative: String,
    /// Full path.
    pub path: PathBuf,
    /// The text, when the file is UTF-8 and at most [`MAX_TEXT_BYTES`].
    pub text: Option<String>,
    /// Whether any execute bit is set (always true off Unix).
    pub executable: bool,
}

impl SkillFile {
    /// The first line when it is a `#!` line.
    pub(crate) fn shebang(&self) -> Option<&str> {
        self.text
            .as_deref()
            .and_then(|t| t.lines().next())
            .filter(|l| l.starts_with("#!"))
    }
}

/// The files of the skill folder `dir`, sorted by relative path. Symbolic links are not
/// followed; vendored and cache folders ([`SKIPPED_DIRS`]) are skipped.
pub(crate) fn skill_files(dir: &Path) -> Result<Vec<SkillFile>, SkillFitError> {
    if !dir.exists() {
        return Err(SkillFitError::Missing {
            dir: dir.to_path_buf(),
        });
    }
    if !dir.is_dir() {
        return Err(SkillFitError::NotAFolder {
            dir: dir.to_path_buf(),
        });
    }
    let walker = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir
                && entry.depth() > 0
                && SKIPPED_DIRS.contains(&entry.file_name().to_string_lossy().as_ref()))
        })
        .build();
    let mut files = Vec::new();
    for entry in walker {
        let entry = entry.map_err(|error| SkillFitError::Walk {
            path: dir.to_path_buf(),
            message: error.to_string(),
        })?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path().to_path_buf();
        let relative = crate::disk::slash_path(path.strip_prefix(dir).unwrap_or(&path));
        let metadata = std::fs::metadata(&path).map_err(|source| SkillFitError::Read {
            path: path.clone(),
            source,
        })?;
        let text = if metadata.len() <= MAX_TEXT_BYTES {
            let bytes = std::fs::read(&path).map_err(|source| SkillFitError::Read {
                path: path.clone(),
                source,
            })?;
            String::from_utf8(bytes).ok()
        } else {
            None
        };
        files.push(SkillFile {
            relative,
            path,
            text,
            executable: is_executable(&metadata),
        });
    }
    files.sort_by(|a, b| a.relative.cmp(&b.relative));
    Ok(files)
}

#[cfg(unix)]
fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_metadata: &std::fs::Metadata) -> bool {
    true
}

/// Where a finding was seen: a file, a 1-based line (0: the file as a whole) and the line's text
/// (redacted, at most 200 characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Evidence {
    /// Path relative to the skill folder (or an absolute path outside it, e.g. a host config).
    pub file: String,
    /// 1-based line; 0 when the finding is about the file as a whole.
    pub line: usize,
    /// The line's text, trimmed, redacted and shortened.
    pub text: String,
}

impl Evidence {
    /// Evidence at `file:line` quoting `text`.
    pub(crate) fn at(file: &str, line: usize, text: &str) -> Self {
        let redacted = crate::disk::redact::redact_text(text.trim()).into_owned();
        let text = if redacted.chars().count() > 200 {
            let cut: String = redacted.chars().take(199).collect();
            format!("{cut}…")
        } else {
            redacted
        };
        Self {
            file: file.to_string(),
            line,
            text,
        }
    }

    /// `file:line` (or `file` when the line is 0).
    pub(crate) fn location(&self) -> String {
        if self.line == 0 {
            self.file.clone()
        } else {
            format!("{}:{}", self.file, self.line)
        }
    }
}

/// The 1-based line of `SKILL.md` where the body starts (after the frontmatter), given the whole
/// file text and the body the loader returned.
pub(crate) fn body_first_line(skill_md: &str, body: &str) -> usize {
    let head = skill_md.len().saturating_sub(body.len());
    skill_md[..head.min(skill_md.len())].matches('\n').count() + 1
}

/// A fenced code block of a Markdown text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodeBlock {
    /// The info string's first word, lowercased (`bash`, `python`, `` for none).
    pub lang: String,
    /// `(1-based line in the text, line)` of each content line.
    pub lines: Vec<(usize, String)>,
}

/// Fenced code blocks (``` or ~~~, CommonMark) of `text`; `first_line` is the line number of the
/// text's first line in its file. An unclosed fence runs to the end of the text.
pub(crate) fn fenced_blocks(text: &str, first_line: usize) -> Vec<CodeBlock> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, usize, CodeBlock)> = None;
    for (index, line) in text.lines().enumerate() {
        let number = first_line + index;
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut open {
            None => {
                if indent <= 3 && (trimmed.starts_with("```") || trimmed.starts_with("~~~")) {
                    let marker_char = trimmed.chars().next().expect("non-empty");
                    let length = trimmed.chars().take_while(|c| *c == marker_char).count();
                    let info = trimmed[length..].trim();
                    let lang = info
                        .split(|c: char| c.is_whitespace() || c == '{' || c == ',')
                        .next()
                        .unwrap_or("")
                        .to_ascii_lowercase();
                    open = Some((
                        marker_char.to_string().repeat(length),
                        indent,
                        CodeBlock {
                            lang,
                            lines: Vec::new(),
                        },
                    ));
                }
            }
            Some((fence, _, block)) => {
                if indent <= 3
                    && trimmed.starts_with(fence.as_str())
                    && trimmed.trim_end().chars().all(|c| fence.starts_with(c))
                {
                    let (_, _, block) = open.take().expect("open");
                    blocks.push(block);
                } else {
                    block.lines.push((number, line.to_string()));
                }
            }
        }
    }
    if let Some((_, _, block)) = open {
        blocks.push(block);
    }
    blocks
}

/// Whether a fenced block's language marks shell commands.
pub(crate) fn is_shell_lang(lang: &str) -> bool {
    matches!(
        lang,
        "sh" | "bash" | "shell" | "zsh" | "console" | "shell-session" | "terminal" | "fish"
    )
}

/// Shell words that are not programs looked up in `PATH` (builtins, keywords, grouping).
const SHELL_BUILTINS: [&str; 52] = [
    "cd", "echo", "export", "set", "unset", "if", "then", "else", "elif", "fi", "for", "in", "do",
    "done", "while", "until", "case", "esac", "function", "source", ".", "true", "false", "test",
    "[", "[[", "]]", "]", "read", "printf", "exit", "return", "local", "alias", "shift", "eval",
    "trap", "wait", "{", "}", "(", ")", "!", "declare", "readonly", "pushd", "popd", "let", "type",
    "command", "builtin", "exec",
];

/// Prefix words after which the next word is the program (`sudo make`, `env X=1 node`).
const COMMAND_PREFIXES: [&str; 7] = ["sudo", "env", "time", "nohup", "nice", "xargs", "exec"];

/// The programs one shell line starts: the first word of each pipeline element and list item
/// (`|`, `&&`, `||`, `;`), after variable assignments and prefixes such as `sudo`; a leading
/// `$ ` or `% ` prompt is dropped. Builtins and keywords are left out; comments end the line.
/// Quoting is honoured well enough for documentation lines, not for arbitrary scripts.
pub(crate) fn commands_in_shell_line(line: &str) -> Vec<String> {
    let mut text = line.trim();
    for prompt in ["$ ", "% ", "> "] {
        if let Some(rest) = text.strip_prefix(prompt) {
            text = rest.trim_start();
        }
    }
    if text.starts_with('#') {
        return Vec::new();
    }
    // Split into segments on unquoted separators, dropping comments.
    let mut segments = vec![String::new()];
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                segments.last_mut().expect("segment").push(c);
            }
            None => match c {
                '\'' | '"' | '`' => {
                    quote = Some(c);
                    segments.last_mut().expect("segment").push(c);
                }
                '#' if previous.is_whitespace() => break,
                '|' | ';' | '&' => {
                    if matches!(chars.peek(), Some('|') | Some('&')) {
                        chars.next();
                    }
                    segments.push(String::new());
                }
                '(' if previous == '$' => {
                    // `$(cmd)`: the command substitution starts a new segment.
                    segments.last_mut().expect("segment").pop();
                    segments.push(String::new());
                }
                ')' => segments.push(String::new()),
                _ => segments.last_mut().expect("segment").push(c),
            },
        }
        previous = c;
    }
    let mut programs = Vec::new();
    for segment in segments {
        let mut words = segment.split_whitespace().peekable();
        while let Some(word) = words.next() {
            let word = word.trim_matches(|c| c == '"' || c == '\'');
            if word.is_empty() {
                continue;
            }
            let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            if is_assignment {
                continue;
            }
            if COMMAND_PREFIXES.contains(&word) {
                // Skip the prefix's own options (`sudo -u x cmd`, `env -i cmd`).
                while words.peek().is_some_and(|w| w.starts_with('-')) {
                    words.next();
                }
                continue;
            }
            if word.starts_with('-')
                || word.starts_with('<')
                || word.starts_with('>')
                || word.starts_with('$')
                || SHELL_BUILTINS.contains(&word)
                || !word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-/+~".contains(c))
            {
                break;
            }
            programs.push(word.to_string());
            break;
        }
    }
    programs
}

/// Estimated tokens of `text`: one per 4 ASCII characters (OpenAI's published rule of thumb for
/// English, "1 token ≈ 4 characters") plus one per non-ASCII character (CJK and other scripts
/// tokenize near one token per character), rounded up. An estimate, not any model's tokenizer:
/// within about ±25% for English prose and code.
pub(crate) fn estimate_tokens(text: &str) -> usize {
    let (ascii, other) = text.chars().fold((0usize, 0usize), |(a, o), c| {
        if c.is_ascii() { (a + 1, o) } else { (a, o + 1) }
    });
    ascii.div_ceil(4) + other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_of_shell_lines() {
        assert_eq!(
            commands_in_shell_line("$ git status | grep x && jq . f"),
            ["git", "grep", "jq"]
        );
        assert_eq!(
            commands_in_shell_line("FOO=1 sudo -E make install"),
            ["make"]
        );
        assert_eq!(
            commands_in_shell_line("cd src; ./scripts/run.sh --x"),
            ["./scripts/run.sh"]
        );
        assert_eq!(commands_in_shell_line("# a comment"), Vec::<String>::new());
        assert_eq!(
            commands_in_shell_line("echo 'a | b' # pbcopy"),
            Vec::<String>::new()
        );
        assert_eq!(commands_in_shell_line("x=$(date +%s)"), ["date"]);
        assert_eq!(
            commands_in_shell_line("python3 scripts/a.py 2>/dev/null || true"),
            ["python3"]
        );
    }

    #[test]
    fn fenced_blocks_with_line_numbers() {
        let text = "intro\n```bash\nls -la\n```\n~~~\nplain\n~~~\n````python\nimport os\n```\nstill\n````\n";
        let blocks = fenced_blocks(text, 10);
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0].lang, "bash");
        assert_eq!(blocks[0].lines, vec![(12, "ls -la".to_string())]);
        assert_eq!(blocks[1].lang, "");
        assert_eq!(blocks[2].lang, "python");
        assert_eq!(blocks[2].lines.len(), 3);
    }

    #[test]
    fn token_estimate() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("日本語"), 3);
    }

    #[test]
    fn body_line() {
        let text = "---\nname: a\ndescription: d\n---\n# Body\n";
        assert_eq!(body_first_line(text, "# Body\n"), 5);
    }
}
