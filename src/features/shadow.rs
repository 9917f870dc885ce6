//! Shadow mode (`skill-lift shadow`): measure a new skill on the prompts users really sent,
//! before it is installed. Owns the eligibility rule (which recorded turns the new skill's
//! trigger would have fired on), the write-type detection, the candidate list (redacted,
//! de-duplicated, limited), the comparison of a replay with what was recorded, and the summary
//! and report. Replays themselves go through the trigger evaluation's attempt path
//! ([`crate::features::triggers::run_attempts`]: the run's own staging into a throwaway workspace and the
//! real runner); `crate::pipeline::shadow` wires it together. Rules (also in `docs/history.md`):
//!
//! - **Eligible** turn (the trigger would have fired): the prompt names the skill (`/name`,
//!   `$name`, `name skill`, golden mine's rule), or the recorded turn activated a skill of the
//!   same name (an older version), or the prompt holds at least `min_terms` distinct
//!   **trigger terms**: words of four or more letters from the skill's `name` and `description`,
//!   stop words left out, compared after a light suffix strip (`drafting` = `draft`). With
//!   `all_turns`, every turn is eligible and the replay alone decides activation.
//! - **Write-type** skill: `allowed-tools` names a tool that writes or runs commands
//!   (`Bash…`, `Write`, `Edit`, `run_shell_command`, an MCP tool whose name sends, deletes,
//!   creates, writes, posts or updates, …), or the skill bundles scripts, or its Markdown names
//!   an action with side effects (`rm`, delete, `git push`, send mail, `curl -X POST`, deploy, …).
//!   Deliberately over-inclusive: a false "write" only asks for consent.
//! - **Comparison**: the replayed answer against the recorded one by word-set Jaccard
//!   similarity (lowercase words of letters and digits); the replay **differs** below
//!   [`DIFFERS_BELOW`]. For an adopted turn a similar replay agrees with what the user kept;
//!   for an overridden turn a differing replay avoids what the user rejected. Lexical, not a
//!   grade.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::analysis::stats::{Interval, wilson_interval};
use crate::features::asset::Skill;
use crate::features::golden::mine::{prompt_key, truncate_chars};
use crate::features::history::signals::{Polarity, classify};
use crate::features::history::{HistoryHost, HistorySession, ReadReport};

/// Version of the shadow folder's files (`manifest.json`, `records.jsonl`, `summary.json`).
pub(crate) const SHADOW_FORMAT_VERSION: u32 = 1;
/// Two-sided level of every interval.
pub(crate) const CONFIDENCE: f64 = 0.95;
/// A replay differs from the recorded answer when their word-set Jaccard similarity is below
/// this.
pub(crate) const DIFFERS_BELOW: f64 = 0.5;
/// Default least number of distinct trigger terms a prompt must hold.
pub(crate) const DEFAULT_MIN_TERMS: usize = 2;
/// Longest answer kept in a record, characters.
pub(crate) const MAX_ANSWER_CHARS: usize = 2000;

/// Why a recorded turn is eligible for the new skill.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub(crate) enum Eligibility {
    /// The prompt names the skill (`/name`, `$name`, `name skill`).
    Named,
    /// The recorded turn activated a skill of the same name.
    RecordedUse,
    /// The prompt holds these trigger terms (at least the minimum).
    Terms { terms: Vec<String> },
    /// `--all-turns`: every turn.
    AllTurns,
}

/// The eligibility rule of one shadow run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct EligibilityRule {
    /// The skill's name.
    pub skill: String,
    /// Trigger terms (stems) from the name and description.
    pub terms: BTreeSet<String>,
    /// Least number of distinct terms a prompt must hold.
    pub min_terms: usize,
    /// Every turn eligible.
    pub all_turns: bool,
}

/// Words never used as trigger terms.
const STOP_WORDS: [&str; 58] = [
    "about", "after", "also", "always", "another", "been", "before", "being", "both", "cannot",
    "could", "does", "doing", "each", "every", "from", "have", "having", "help", "helps", "here",
    "into", "just", "like", "made", "make", "many", "more", "most", "must", "need", "needs",
    "only", "other", "over", "should", "some", "such", "than", "that", "their", "them", "then",
    "there", "these", "they", "this", "those", "through", "under", "used", "user", "uses", "using",
    "when", "whenever", "with", "your",
];

static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z][A-Za-z0-9]*").expect("valid pattern"));

/// A word's stem: lowercase, a trailing `ing`, `ed`, `es` or `s` stripped when at least four
/// letters remain.
pub(crate) fn stem(word: &str) -> String {
    let word = word.to_lowercase();
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(base) = word.strip_suffix(suffix)
            && base.chars().count() >= 4
        {
            return base.to_string();
        }
    }
    word
}

fn stems(text: &str) -> BTreeSet<String> {
    WORD.find_iter(text)
        .map(|m| m.as_str())
        .filter(|w| w.len() >= 4 && !STOP_WORDS.contains(&w.to_lowercase().as_str()))
        .map(stem)
        .collect()
}

impl EligibilityRule {
    /// The rule for `skill`: its trigger terms from `name` (split at `-`, `_`) and
    /// `description`.
    pub(crate) fn new(skill: &Skill, min_terms: usize, all_turns: bool) -> Self {
        Self::of_name(&skill.name, &skill.description, min_terms, all_turns)
    }

    /// The rule for a skill known by its `name` and `description` only (a registered asset).
    pub(crate) fn of_name(
        name: &str,
        description: &str,
        min_terms: usize,
        all_turns: bool,
    ) -> Self {
        let mut terms = stems(&name.replace(['-', '_'], " "));
        terms.extend(stems(description));
        EligibilityRule {
            skill: name.to_string(),
            terms,
            min_terms: min_terms.max(1),
            all_turns,
        }
    }

    /// Why a turn with `prompt`, which activated `recorded_skills`, is eligible; empty when it
    /// is not.
    pub(crate) fn eligibility(&self, prompt: &str, recorded_skills: &[String]) -> Vec<Eligibility> {
        let mut reasons = Vec::new();
        let lower = prompt.to_lowercase();
        let name = self.skill.to_lowercase();
        if lower.contains(&format!("/{name}"))
            || lower.contains(&format!("${name}"))
            || lower.contains(&format!("{name} skill"))
        {
            reasons.push(Eligibility::Named);
        }
        if recorded_skills.iter().any(|s| s == &self.skill) {
            reasons.push(Eligibility::RecordedUse);
        }
        let found: Vec<String> = stems(prompt)
            .into_iter()
            .filter(|s| self.terms.contains(s))
            .collect();
        if found.len() >= self.min_terms {
            reasons.push(Eligibility::Terms { terms: found });
        }
        if reasons.is_empty() && self.all_turns {
            reasons.push(Eligibility::AllTurns);
        }
        reasons
    }
}

/// What makes a skill write-type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum WriteEvidence {
    /// `allowed-tools` names a tool that writes or runs commands.
    AllowedTool { tool: String },
    /// The skill bundles a script (any file with a script extension or an executable bit).
    Script { file: String },
    /// A Markdown file names an action with side effects.
    Keyword {
        file: String,
        line: usize,
        keyword: String,
    },
}

impl std::fmt::Display for WriteEvidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteEvidence::AllowedTool { tool } => write!(f, "allowed-tools names `{tool}`"),
            WriteEvidence::Script { file } => write!(f, "bundles the script {file}"),
            WriteEvidence::Keyword {
                file,
                line,
                keyword,
            } => write!(f, "{file}:{line} says `{keyword}`"),
        }
    }
}

static WRITE_TOOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(bash|shell|sh|terminal|exec|run_shell_command|run_command|command_execution|write|write_file|edit|edit_file|multiedit|notebookedit|replace|apply_patch|file_change|delete|delete_file|computer)\b|^mcp__.*(send|delete|remove|create|write|post|update|put|push|publish|deploy)")
        .expect("valid pattern")
});
static WRITE_KEYWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(\brm\s+-|\brm\s+[A-Za-z0-9_./~$]|\brmdir\b|\bunlink\b|\bdelete\b|\bdeletes\b|\bdeleting\b|\bremove (the |a |all |any )?(files?|folders?|director(y|ies)|branch(es)?)\b|\bgit (push|commit|reset|clean|rebase)\b|\bsend(s|ing)? (an? )?(e-?mail|mail|message)s?\b|\bsendmail\b|\bsmtp\b|\bcurl\b[^\n]*-X\s*(POST|PUT|PATCH|DELETE)\b|\bkubectl (apply|delete)\b|\bterraform (apply|destroy)\b|\b(npm|cargo|twine) publish\b|\bdeploy(s|ing)?\b|\bdrop (table|database)\b|\boverwrit(e|es|ing)\b|\btruncate\b|\bshutil\.rmtree\b|\bos\.remove\b)")
        .expect("valid pattern")
});
const SCRIPT_EXTENSIONS: [&str; 10] = [
    "sh", "bash", "zsh", "py", "js", "mjs", "ts", "rb", "pl", "ps1",
];
const SKIPPED_DIRS: [&str; 5] = [".git", "node_modules", "__pycache__", ".venv", "evals"];

/// Why `skill` is write-type (empty: it is not). Reads the skill folder: `allowed-tools`,
/// bundled scripts (outside `evals/`), and every Markdown file up to 1 MiB.
pub(crate) fn write_evidence(skill: &Skill) -> Vec<WriteEvidence> {
    let mut evidence: Vec<WriteEvidence> = skill
        .allowed_tools
        .iter()
        .filter(|tool| WRITE_TOOL.is_match(tool.trim()))
        .map(|tool| WriteEvidence::AllowedTool { tool: tool.clone() })
        .collect();
    let mut stack = vec![skill.dir.clone()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            if kind.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if kind.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    for path in files {
        let relative = path
            .strip_prefix(&skill.dir)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let extension = path
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let executable = {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(&path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
        };
        if SCRIPT_EXTENSIONS.contains(&extension.as_str()) || executable {
            evidence.push(WriteEvidence::Script { file: relative });
            continue;
        }
        if extension != "md" || std::fs::metadata(&path).map_or(true, |m| m.len() > 1 << 20) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (index, line) in text.lines().enumerate() {
            if let Some(found) = WRITE_KEYWORD.find(line) {
                evidence.push(WriteEvidence::Keyword {
                    file: relative.clone(),
                    line: index + 1,
                    keyword: found.as_str().trim().to_string(),
                });
            }
        }
    }
    evidence
}

/// What the recorded session shows for one turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RecordedTurn {
    /// Skills the turn activated.
    pub skills: Vec<String>,
    /// The agent's last text (redacted, shortened to [`MAX_ANSWER_CHARS`]).
    pub answer: Option<String>,
    /// The adoption signal ([`crate::features::history::signals`]).
    pub signal: String,
    pub polarity: Polarity,
    /// The follow-up the signal came from (redacted).
    pub evidence: Option<String>,
    /// Tokens and seconds of the turn, when recorded.
    pub tokens: Option<u64>,
    pub seconds: Option<f64>,
}

/// One eligible turn to replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Candidate {
    /// `q001`, `q002`, … in replay order.
    pub id: String,
    pub host: HistoryHost,
    pub session: String,
    /// 1-based turn number in the session.
    pub turn: usize,
    /// When the prompt was sent (RFC 3339).
    pub timestamp: Option<String>,
    /// The prompt, redacted (this is what is replayed).
    pub prompt: String,
    pub eligibility: Vec<Eligibility>,
    /// Other turns with the same prompt folded into this one.
    pub occurrences: usize,
    pub recorded: RecordedTurn,
}

/// What choosing the candidates found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct CandidateCounts {
    pub sessions: usize,
    pub turns: usize,
    /// Turns the rule made eligible (before de-duplication and the limit).
    pub eligible_turns: usize,
    /// Sessions with at least one eligible turn.
    pub eligible_sessions: usize,
    /// Eligible turns folded into another with the same prompt.
    pub duplicates: usize,
    /// Eligible distinct prompts left out by the limit (the most recent are kept).
    pub over_limit: usize,
}

/// The eligible turns of `sessions` under `rule`, redacted with `redact` (secrets and home
/// folders), de-duplicated by prompt (the most recent turn kept), at most `limit` (the most
/// recent), in time order.
pub(crate) fn candidates(
    sessions: &[HistorySession],
    rule: &EligibilityRule,
    limit: usize,
    redact: &dyn Fn(&str) -> String,
) -> (Vec<Candidate>, CandidateCounts) {
    let mut counts = CandidateCounts {
        sessions: sessions.len(),
        ..CandidateCounts::default()
    };
    let mut found: Vec<Candidate> = Vec::new();
    let mut by_prompt: BTreeMap<String, usize> = BTreeMap::new();
    for session in sessions {
        let mut session_eligible = false;
        for (index, turn) in session.turns.iter().enumerate() {
            counts.turns += 1;
            let eligibility = rule.eligibility(&turn.prompt, &turn.skills);
            if eligibility.is_empty() {
                continue;
            }
            counts.eligible_turns += 1;
            session_eligible = true;
            let outcome = classify(session, index);
            let candidate = Candidate {
                id: String::new(),
                host: session.host,
                session: redact(&session.id),
                turn: index + 1,
                timestamp: turn.at.map(|t| t.to_rfc3339()),
                prompt: redact(&turn.prompt),
                eligibility,
                occurrences: 1,
                recorded: RecordedTurn {
                    skills: turn.skills.clone(),
                    answer: turn
                        .answer
                        .as_deref()
                        .map(|a| truncate_chars(&redact(a), MAX_ANSWER_CHARS)),
                    signal: outcome.signal.as_str().to_string(),
                    polarity: outcome.signal.polarity(),
                    evidence: outcome
                        .evidence
                        .as_deref()
                        .map(|e| truncate_chars(&redact(e), 500)),
                    tokens: turn.tokens(),
                    seconds: turn.duration_s(),
                },
            };
            let key = prompt_key(&turn.prompt);
            match by_prompt.get(&key) {
                Some(&position) => {
                    counts.duplicates += 1;
                    let occurrences = found[position].occurrences + 1;
                    // Sessions come in time order: the later turn replaces the earlier one.
                    found[position] = Candidate {
                        occurrences,
                        ..candidate
                    };
                }
                None => {
                    by_prompt.insert(key, found.len());
                    found.push(candidate);
                }
            }
        }
        if session_eligible {
            counts.eligible_sessions += 1;
        }
    }
    found.sort_by(|a, b| {
        a.timestamp
            .cmp(&b.timestamp)
            .then_with(|| a.session.cmp(&b.session))
            .then_with(|| a.turn.cmp(&b.turn))
    });
    if found.len() > limit {
        counts.over_limit = found.len() - limit;
        found.drain(..found.len() - limit);
    }
    for (index, candidate) in found.iter_mut().enumerate() {
        candidate.id = format!("q{:03}", index + 1);
    }
    (found, counts)
}

/// Word-set Jaccard similarity of two texts (lowercase words of letters and digits), in
/// [0, 1]; 1 when both have no word.
pub(crate) fn similarity(a: &str, b: &str) -> f64 {
    let words = |text: &str| -> BTreeSet<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (a, b) = (words(a), words(b));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = a.intersection(&b).count();
    shared as f64 / (a.len() + b.len() - shared) as f64
}

/// What the replay of one candidate did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Replay {
    /// Whether the replay has a trajectory the activation can be read from.
    pub scored: bool,
    /// Whether the new skill was activated (absent when unscored).
    pub skill_activated: Option<bool>,
    /// Every skill activated.
    pub activated: Vec<String>,
    /// The replay's final answer (shortened).
    pub answer: Option<String>,
    /// Why it is unscored.
    pub reason: Option<String>,
    pub wall_s: f64,
    pub tool_calls: usize,
    pub tokens: Option<u64>,
    /// The transcript, relative to the shadow folder.
    pub transcript: Option<String>,
}

/// The replayed answer next to the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Comparison {
    /// Word-set Jaccard similarity of the answers.
    pub similarity: f64,
    /// `similarity < DIFFERS_BELOW`.
    pub differs: bool,
    /// For an adopted turn: the replay agrees with what the user kept (`!differs`); for an
    /// overridden turn: it avoids what the user rejected (`differs`).
    pub consistent_with_user: bool,
}

/// One line of `records.jsonl`: what happened next to what would have.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ShadowRecord {
    #[serde(flatten)]
    pub candidate: Candidate,
    pub replay: Replay,
    /// Absent when the replay is unscored or either answer is missing.
    pub comparison: Option<Comparison>,
}

/// Compare a replay with its recorded turn.
pub(crate) fn compare(recorded: &RecordedTurn, replay: &Replay) -> Option<Comparison> {
    if !replay.scored {
        return None;
    }
    let (Some(kept), Some(answer)) = (&recorded.answer, &replay.answer) else {
        return None;
    };
    let similarity = similarity(kept, answer);
    let differs = similarity < DIFFERS_BELOW;
    Some(Comparison {
        similarity,
        differs,
        consistent_with_user: match recorded.polarity {
            Polarity::Adopted => !differs,
            Polarity::Overridden => differs,
        },
    })
}

/// A proportion with its Wilson interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Rate {
    pub successes: u64,
    pub trials: u64,
    pub rate: Option<f64>,
    pub interval: Option<Interval>,
}

impl Rate {
    /// `successes` of `trials` with a Wilson [`CONFIDENCE`] interval.
    pub(crate) fn of(successes: u64, trials: u64) -> Self {
        Rate {
            successes,
            trials,
            rate: (trials > 0).then(|| successes as f64 / trials as f64),
            interval: wilson_interval(successes, trials, CONFIDENCE),
        }
    }

    fn show(&self) -> String {
        match (self.rate, self.interval) {
            (Some(rate), Some(interval)) => format!(
                "{:.0}% ({}/{}; 95% CI {:.0}–{:.0}%)",
                rate * 100.0,
                self.successes,
                self.trials,
                interval.low * 100.0,
                interval.high * 100.0
            ),
            _ => "no evidence (0 replays)".to_string(),
        }
    }
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ShadowSummary {
    pub format_version: u32,
    pub skill: String,
    pub host: HistoryHost,
    pub counts: CandidateCounts,
    pub replayed: usize,
    /// Replays with a trajectory the activation could be read from.
    pub scored: usize,
    /// Unscored replays per reason prefix.
    pub unscored: BTreeMap<String, usize>,
    /// Scored replays that activated the new skill.
    pub activation: Rate,
    /// Compared replays whose answer differs from the recorded one.
    pub differs: Rate,
    /// Adopted turns: replays that agree with the answer the user kept.
    pub agrees_with_kept: Rate,
    /// Overridden turns: replays that differ from the answer the user rejected.
    pub avoids_rejected: Rate,
    /// Recorded turns that had activated a skill of the same name / any skill.
    pub recorded_same_skill: usize,
    /// Event types the history readers did not know, with their counts.
    pub unknown_events: BTreeMap<String, u64>,
    pub malformed: usize,
    pub interrupted: bool,
    pub wall_s: f64,
}

/// How the replays ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ReplayEnd {
    pub interrupted: bool,
    /// Wall time of the replays, seconds.
    pub wall_s: f64,
}

/// Summarize the records of one shadow run; `read` is what the history readers found.
pub(crate) fn summarize(
    skill: &str,
    host: HistoryHost,
    counts: CandidateCounts,
    records: &[ShadowRecord],
    read: &ReadReport,
    end: ReplayEnd,
) -> ShadowSummary {
    let scored: Vec<&ShadowRecord> = records.iter().filter(|r| r.replay.scored).collect();
    let mut unscored = BTreeMap::new();
    for record in records.iter().filter(|r| !r.replay.scored) {
        let reason = record
            .replay
            .reason
            .as_deref()
            .and_then(|r| r.split(':').next())
            .unwrap_or("unknown")
            .to_string();
        *unscored.entry(reason).or_default() += 1;
    }
    let count =
        |filter: &dyn Fn(&ShadowRecord) -> bool| scored.iter().filter(|r| filter(r)).count() as u64;
    let activated = count(&|r| r.replay.skill_activated == Some(true));
    let compared = count(&|r| r.comparison.is_some());
    let differs = count(&|r| r.comparison.is_some_and(|c| c.differs));
    let polar = |polarity: Polarity| {
        let of = count(&|r| r.comparison.is_some() && r.candidate.recorded.polarity == polarity);
        let consistent = count(&|r| {
            r.candidate.recorded.polarity == polarity
                && r.comparison.is_some_and(|c| c.consistent_with_user)
        });
        Rate::of(consistent, of)
    };
    ShadowSummary {
        format_version: SHADOW_FORMAT_VERSION,
        skill: skill.to_string(),
        host,
        counts,
        replayed: records.len(),
        scored: scored.len(),
        unscored,
        activation: Rate::of(activated, scored.len() as u64),
        differs: Rate::of(differs, compared),
        agrees_with_kept: polar(Polarity::Adopted),
        avoids_rejected: polar(Polarity::Overridden),
        recorded_same_skill: records
            .iter()
            .filter(|r| r.candidate.recorded.skills.iter().any(|s| s == skill))
            .count(),
        unknown_events: read.unknown_events.clone(),
        malformed: read.malformed.len(),
        interrupted: end.interrupted,
        wall_s: end.wall_s,
    }
}

fn cell(text: &str, max: usize) -> String {
    truncate_chars(&text.replace(['\n', '\r'], " ").replace('|', "\\|"), max)
}

/// `report.md`: the rule, the rates, and one row per replayed prompt.
pub(crate) fn report_markdown(
    summary: &ShadowSummary,
    rule: &EligibilityRule,
    write: &[WriteEvidence],
    records: &[ShadowRecord],
) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# Shadow replay of `{}` on {} history\n\n",
        summary.skill, summary.host
    ));
    out.push_str(&format!(
        "Eligibility: the prompt names the skill, the recorded turn used a skill of the same name, or it holds at least {} of the trigger terms {}{}.\n\n",
        rule.min_terms,
        rule.terms
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", "),
        if rule.all_turns { " (--all-turns: every turn replayed)" } else { "" }
    ));
    let c = &summary.counts;
    out.push_str(&format!(
        "History: {} session(s), {} turn(s); {} eligible turn(s) in {} session(s); {} duplicate prompt(s) folded; {} left out by --limit.\n\n",
        c.sessions, c.turns, c.eligible_turns, c.eligible_sessions, c.duplicates, c.over_limit
    ));
    if write.is_empty() {
        out.push_str("Write-type: no (replays ran in throwaway workspaces all the same).\n\n");
    } else {
        out.push_str(&format!(
            "Write-type: yes ({}); replays ran only in throwaway workspaces.\n\n",
            write
                .iter()
                .take(5)
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    out.push_str("| measure | value |\n|---|---|\n");
    out.push_str(&format!(
        "| replayed | {} ({} scored) |\n",
        summary.replayed, summary.scored
    ));
    out.push_str(&format!(
        "| activation rate | {} |\n",
        summary.activation.show()
    ));
    out.push_str(&format!(
        "| replay differs from the recorded answer | {} |\n",
        summary.differs.show()
    ));
    out.push_str(&format!(
        "| adopted turns: replay agrees with what the user kept | {} |\n",
        summary.agrees_with_kept.show()
    ));
    out.push_str(&format!(
        "| overridden turns: replay differs from what the user rejected | {} |\n",
        summary.avoids_rejected.show()
    ));
    if !summary.unscored.is_empty() {
        out.push_str(&format!(
            "| unscored | {} |\n",
            summary
                .unscored
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !summary.unknown_events.is_empty() {
        out.push_str(&format!(
            "| unknown history events (skipped) | {} |\n",
            summary
                .unknown_events
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out.push_str(&format!(
        "\nA replay differs when the word-set Jaccard similarity of the answers is below {DIFFERS_BELOW}: a lexical comparison, not a grade.\n\n"
    ));
    out.push_str("| id | session | turn | prompt | recorded (signal) | replay: skill | similarity |\n|---|---|---|---|---|---|---|\n");
    for record in records {
        let c = &record.candidate;
        let recorded = format!(
            "{} ({})",
            c.recorded
                .answer
                .as_deref()
                .map_or("—".to_string(), |a| cell(a, 60)),
            c.recorded.signal
        );
        let replay = match (record.replay.scored, record.replay.skill_activated) {
            (true, Some(true)) => "activated".to_string(),
            (true, _) => "not activated".to_string(),
            (false, _) => format!(
                "unscored: {}",
                cell(record.replay.reason.as_deref().unwrap_or(""), 60)
            ),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            c.id,
            cell(&c.session, 24),
            c.turn,
            cell(&c.prompt, 80),
            recorded,
            replay,
            record
                .comparison
                .map_or("—".to_string(), |x| format!("{:.2}", x.similarity))
        ));
    }
    out
}

/// Whether `inner` is `outer` or lies inside it (both made absolute and canonical where they
/// exist).
pub(crate) fn is_within(inner: &Path, outer: &Path) -> bool {
    let canonical = |path: &Path| -> PathBuf {
        path.canonicalize().unwrap_or_else(|_| {
            if path.is_absolute() {
                path.to_path_buf()
            } else {
                std::env::current_dir()
                    .map(|d| d.join(path))
                    .unwrap_or_else(|_| path.to_path_buf())
            }
        })
    };
    canonical(inner).starts_with(canonical(outer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(dir: &Path, body: &str, tools: &[&str]) -> Skill {
        std::fs::write(dir.join("SKILL.md"), body).unwrap();
        Skill {
            dir: dir.to_path_buf(),
            name: "release-notes".into(),
            description: "Use when drafting release notes from the git history.".into(),
            license: None,
            compatibility: None,
            metadata: BTreeMap::new(),
            allowed_tools: tools.iter().map(|t| t.to_string()).collect(),
            body: String::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn eligibility_rules_name_terms_and_recorded_use() {
        let dir = tempfile::tempdir().unwrap();
        let rule = EligibilityRule::new(&skill(dir.path(), "x", &[]), 2, false);
        assert!(rule.terms.contains("draft") && rule.terms.contains("note"));
        assert!(!rule.terms.contains("when") && !rule.terms.contains("from"));
        assert_eq!(
            rule.eligibility("Draft release notes since v2.2", &[]),
            vec![Eligibility::Terms {
                terms: vec!["draft".into(), "note".into(), "release".into()]
            }]
        );
        assert_eq!(
            rule.eligibility("run /release-notes please", &[])[0],
            Eligibility::Named
        );
        assert_eq!(
            EligibilityRule::new(&skill(dir.path(), "x", &[]), 9, false)
                .eligibility("use the release-notes skill", &[]),
            vec![Eligibility::Named]
        );
        assert_eq!(
            rule.eligibility("go", &["release-notes".to_string()]),
            vec![Eligibility::RecordedUse]
        );
        // One term is not enough at min_terms 2.
        assert!(
            rule.eligibility("What does this regex do? notes", &[])
                .is_empty()
        );
        let all = EligibilityRule::new(&skill(dir.path(), "x", &[]), 2, true);
        assert_eq!(all.eligibility("hello", &[]), vec![Eligibility::AllTurns]);
    }

    #[test]
    fn write_type_detection_is_conservative_and_names_its_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let read_only = skill(
            dir.path(),
            "# Notes\nSummarise the commits.\n",
            &["Read", "Grep"],
        );
        assert!(write_evidence(&read_only).is_empty());
        let writes = skill(
            dir.path(),
            "# Cleanup\nFirst list files.\nThen `rm -rf build/` and send an email to the team.\n",
            &["Read", "Bash(git:*)", "mcp__gmail__send_message"],
        );
        let evidence = write_evidence(&writes);
        let shown: Vec<String> = evidence.iter().map(ToString::to_string).collect();
        assert!(
            shown.contains(&"allowed-tools names `Bash(git:*)`".to_string()),
            "{shown:?}"
        );
        assert!(shown.contains(&"allowed-tools names `mcp__gmail__send_message`".to_string()));
        assert!(
            shown.iter().any(|s| s.starts_with("SKILL.md:3 says `rm -")),
            "{shown:?}"
        );
        std::fs::create_dir(dir.path().join("scripts")).unwrap();
        std::fs::write(dir.path().join("scripts/run.py"), "print(1)").unwrap();
        let with_script = skill(dir.path(), "# Notes\n", &[]);
        assert_eq!(
            write_evidence(&with_script),
            vec![WriteEvidence::Script {
                file: "scripts/run.py".into()
            }]
        );
    }

    #[test]
    fn similarity_and_comparison_follow_the_recorded_polarity() {
        assert_eq!(similarity("Aye! Notes.", "aye notes"), 1.0);
        assert_eq!(similarity("a b", "c d"), 0.0);
        assert!((similarity("a b c", "a b d") - 0.5).abs() < 1e-12);
        let recorded = |polarity| RecordedTurn {
            skills: vec![],
            answer: Some("A flat list.".into()),
            signal: "x".into(),
            polarity,
            evidence: None,
            tokens: None,
            seconds: None,
        };
        let replay = |answer: &str| Replay {
            scored: true,
            skill_activated: Some(true),
            activated: vec![],
            answer: Some(answer.into()),
            reason: None,
            wall_s: 0.0,
            tool_calls: 0,
            tokens: None,
            transcript: None,
        };
        let kept = compare(&recorded(Polarity::Adopted), &replay("a flat list")).unwrap();
        assert!(!kept.differs && kept.consistent_with_user);
        let rejected = compare(
            &recorded(Polarity::Overridden),
            &replay("Grouped by component"),
        )
        .unwrap();
        assert!(rejected.differs && rejected.consistent_with_user);
        let mut unscored = replay("x");
        unscored.scored = false;
        assert!(compare(&recorded(Polarity::Adopted), &unscored).is_none());
    }

    #[test]
    fn rates_carry_wilson_intervals() {
        let rate = Rate::of(3, 4);
        assert_eq!(rate.rate, Some(0.75));
        let interval = rate.interval.unwrap();
        assert!((interval.low - 0.3006).abs() < 1e-3 && (interval.high - 0.9544).abs() < 1e-3);
        assert_eq!(Rate::of(0, 0).show(), "no evidence (0 replays)");
    }

    #[test]
    fn within_checks_nesting() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("a/b");
        std::fs::create_dir_all(&inner).unwrap();
        assert!(is_within(&inner, dir.path()));
        assert!(is_within(dir.path(), dir.path()));
        assert!(!is_within(dir.path(), &inner));
    }
}
