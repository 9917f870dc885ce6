//! `golden mine`: draft golden cases from session history ([`crate::features::history`]).
//!
//! Every user turn that activated a skill is a candidate; the user's next move decides its
//! polarity ([`crate::features::history::signals`]): adopted → a **positive** draft whose expected output
//! is the answer the user kept; overridden (pushed back, asked for a rewrite, undid it,
//! interrupted) → a **negative** draft whose assertion names what the user objected to. With a
//! skill named, a turn whose prompt named the skill (`/name`, `$name`, `name skill`) but did not
//! activate it is a positive draft too (signal `named_not_activated`: it should have been used).
//!
//! Drafts are de-duplicated by normalized prompt and polarity (the earliest kept, the others
//! counted in `provenance.occurrences`). Every text is redacted: secrets through
//! [`crate::disk::redact::redact_text`], home folders (`/home/<user>`, `/Users/<user>`,
//! `C:\Users\<user>` and the history root) replaced by `~`. Referenced files (files the turn
//! read, and paths in the prompt that exist in the session's folder) are listed in provenance;
//! they are copied only when the caller asks ([`MineOptions::copy_files_to`]).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::{Value, json};

use crate::features::history::signals::{Polarity, Signal, classify};
use crate::features::history::{HistoryHost, HistorySession};

/// Longest expected output kept from an adopted answer, characters.
pub(crate) const MAX_EXPECTED_CHARS: usize = 4000;
/// Largest referenced file copied with `--include-files`, bytes.
pub(crate) const MAX_COPIED_FILE_BYTES: u64 = 1024 * 1024;

/// Whether a draft is a positive or a negative case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DraftPolarity {
    /// The user kept the result (or the skill should have been used): replay should succeed
    /// the same way.
    Positive,
    /// The user overrode the result: replay should avoid what they objected to.
    Negative,
}

/// Where a draft came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Provenance {
    /// Always `history`.
    pub source: &'static str,
    pub host: HistoryHost,
    pub session: String,
    /// 1-based turn number in the session.
    pub turn: usize,
    /// When the prompt was sent (RFC 3339), when recorded.
    pub timestamp: Option<String>,
    /// The adoption signal (`moved_on`, `pushed_back`, …, or `named_not_activated`).
    pub signal: String,
    pub polarity: DraftPolarity,
    /// For negative drafts: the user's objection (redacted), or what happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How many turns had the same prompt and polarity (this draft is the earliest).
    pub occurrences: usize,
    /// Files the turn referenced, relative to the session's folder (redacted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub referenced_files: Vec<String>,
}

/// One drafted case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DraftCase {
    pub id: String,
    pub prompt: String,
    pub skill: String,
    pub expected_output: Option<String>,
    pub assertions: Vec<String>,
    /// Files copied into the eval folder (relative paths), with `--include-files`.
    pub files: Vec<String>,
    pub provenance: Provenance,
}

/// What `mine` was asked to do.
#[derive(Debug, Clone, Default)]
pub(crate) struct MineOptions {
    /// Only this skill.
    pub skill: Option<String>,
    /// Copy referenced files into this folder (the eval file's folder); `None` lists them only.
    pub copy_files_to: Option<PathBuf>,
    /// Home folders to redact besides the generic `/home/<user>` shapes.
    pub homes: Vec<PathBuf>,
}

/// What mining found.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct MineReport {
    pub cases: Vec<DraftCase>,
    /// Turns that activated a (matching) skill.
    pub activated_turns: usize,
    /// Drafts folded into an earlier one with the same prompt and polarity.
    pub duplicates: usize,
    /// Per signal, how many candidate turns had it.
    pub signals: BTreeMap<String, usize>,
    /// Referenced files not copied (missing, outside the session folder, too large, or a path
    /// another draft already uses with different content).
    pub files_skipped: Vec<String>,
}

static HOME_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(/home/|/Users/|[A-Za-z]:\\Users\\)[^/\\\s'`]+").expect("valid pattern")
});
static PROMPT_PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9_.\-/]+\.[A-Za-z0-9]{1,8}\b").expect("valid pattern"));

/// `text` with secrets and home folders redacted.
pub(crate) fn redact_personal(text: &str, homes: &[PathBuf]) -> String {
    let mut out = crate::disk::redact::redact_text(text).into_owned();
    for home in homes {
        let home = home.to_string_lossy();
        if home.len() > 1 {
            out = out.replace(home.trim_end_matches('/'), "~");
        }
    }
    HOME_PATH.replace_all(&out, "~").into_owned()
}

/// `text` cut to at most `max` characters, marked ` …[truncated]` when cut.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut} …[truncated]")
}

/// The normalized prompt used for de-duplication.
pub(crate) fn prompt_key(prompt: &str) -> String {
    prompt
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// A case id: `<host>-<session prefix>-t<turn>`.
fn case_id(host: HistoryHost, session: &str, turn: usize) -> String {
    let session: String = session
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(12)
        .collect();
    format!("hist-{}-{session}-t{turn}", host.as_str())
}

/// A path relative to `base`, when it is inside it.
fn inside(base: &Path, path: &Path) -> Option<PathBuf> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    let relative = joined.strip_prefix(base).ok()?.to_path_buf();
    if relative.as_os_str().is_empty()
        || relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
    {
        return None;
    }
    Some(relative)
}

/// Files the turn referenced, relative to the session folder: files read by its tool calls and
/// paths in the prompt that exist there.
fn referenced_files(session: &HistorySession, turn_index: usize) -> Vec<PathBuf> {
    let Some(cwd) = &session.cwd else {
        return Vec::new();
    };
    let turn = &session.turns[turn_index];
    let mut found: Vec<PathBuf> = Vec::new();
    let mut add = |relative: PathBuf| {
        let text = relative.to_string_lossy();
        if !text.contains("/skills/") && !text.starts_with("skills/") && !found.contains(&relative)
        {
            found.push(relative);
        }
    };
    let calls = session
        .trajectory
        .tool_calls
        .get(turn.tool_calls.clone())
        .unwrap_or(&[]);
    for call in calls {
        if crate::features::runner::parsers::READ_TOOLS.contains(&call.name.as_str())
            && let Some(path) = crate::features::runner::parsers::path_argument(&call.input)
            && let Some(relative) = inside(cwd, Path::new(&path))
        {
            add(relative);
        }
    }
    for candidate in PROMPT_PATH.find_iter(&turn.prompt) {
        if let Some(relative) = inside(cwd, Path::new(candidate.as_str()))
            && cwd.join(&relative).is_file()
        {
            add(relative);
        }
    }
    found
}

/// Whether a prompt names `skill` explicitly (`/skill`, `$skill`, `skill skill`).
fn names_skill(prompt: &str, skill: &str) -> bool {
    let lower = prompt.to_lowercase();
    let skill = skill.to_lowercase();
    lower.contains(&format!("/{skill}"))
        || lower.contains(&format!("${skill}"))
        || lower.contains(&format!("{skill} skill"))
}

/// Copy `relative` from the session folder into `dir`; `Ok(false)` when it was skipped.
fn copy_file(
    cwd: &Path,
    relative: &Path,
    dir: &Path,
) -> Result<bool, crate::features::golden::GoldenError> {
    let source = cwd.join(relative);
    // A symbolic link (on the way or at the end) may point out of the session folder: what it
    // resolves to must still be inside, or nothing is copied.
    let (Ok(real_cwd), Ok(real_source)) = (cwd.canonicalize(), source.canonicalize()) else {
        return Ok(false);
    };
    if !real_source.starts_with(&real_cwd) {
        crate::values::reporter::report(crate::values::reporter::Event::warning_at(
            &source,
            format!(
                "a symbolic link leads out of the session folder (to {}); not copied",
                real_source.display()
            ),
        ));
        return Ok(false);
    }
    let Ok(meta) = std::fs::metadata(&real_source) else {
        return Ok(false);
    };
    if !meta.is_file() || meta.len() > MAX_COPIED_FILE_BYTES {
        return Ok(false);
    }
    let bytes = std::fs::read(&real_source)
        .map_err(crate::features::golden::GoldenError::io(&real_source))?;
    let bytes = crate::disk::redact::redact_bytes(&bytes).into_owned();
    let target = dir.join(relative);
    if let Ok(existing) = std::fs::read(&target) {
        return Ok(existing == bytes);
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .map_err(crate::features::golden::GoldenError::io(parent))?;
    }
    crate::disk::write(&target, bytes)
        .map_err(crate::disk::DiskError::into_io)
        .map_err(crate::features::golden::GoldenError::io(&target))?;
    Ok(true)
}

/// Read the history `request` names and mine drafts from it (only turns of `skill` when given),
/// copying referenced files into `files_dir` when given; what was mined is reported.
pub(crate) fn mine_drafts(
    request: &crate::features::history::request::HistoryRequest,
    skill: Option<&str>,
    files_dir: Option<&Path>,
) -> Result<MineReport, crate::features::golden::GoldenError> {
    let (roots, read) = request.read()?;
    let options = MineOptions {
        skill: skill.map(str::to_string),
        copy_files_to: files_dir.map(Path::to_path_buf),
        homes: vec![roots.home().to_path_buf()],
    };
    let mined = mine(&read.sessions, &options)?;
    let positive = mined
        .cases
        .iter()
        .filter(|c| c.provenance.polarity == DraftPolarity::Positive)
        .count();
    let signals: Vec<String> = mined
        .signals
        .iter()
        .map(|(signal, count)| format!("{signal} {count}"))
        .collect();
    crate::values::reporter::report(crate::values::reporter::Event::DraftsMined {
        activated_turns: mined.activated_turns,
        skill: skill.map(str::to_string),
        drafts: mined.cases.len(),
        positive,
        duplicates: mined.duplicates,
        signals,
    });
    for skipped in &mined.files_skipped {
        crate::values::reporter::report(crate::values::reporter::Event::warning(format!(
            "referenced file not copied (missing, over 1 MiB, or another case's file of the same path): {skipped}"
        )));
    }
    Ok(mined)
}

/// Draft cases from `sessions`.
pub(crate) fn mine(
    sessions: &[HistorySession],
    options: &MineOptions,
) -> Result<MineReport, crate::features::golden::GoldenError> {
    let mut report = MineReport::default();
    let mut seen: BTreeMap<(String, DraftPolarity), usize> = BTreeMap::new();
    let redact = |text: &str| redact_personal(text, &options.homes);
    for session in sessions {
        for (index, turn) in session.turns.iter().enumerate() {
            let skills: Vec<String> = match &options.skill {
                Some(skill) if turn.skills.contains(skill) => vec![skill.clone()],
                Some(_) => Vec::new(),
                None => turn.skills.clone(),
            };
            let mut candidates: Vec<(String, Signal, Option<String>, bool)> = Vec::new();
            if !skills.is_empty() {
                report.activated_turns += 1;
                let outcome = classify(session, index);
                *report
                    .signals
                    .entry(outcome.signal.as_str().to_string())
                    .or_default() += 1;
                for skill in skills {
                    candidates.push((skill, outcome.signal, outcome.evidence.clone(), false));
                }
            } else if let Some(skill) = &options.skill
                && names_skill(&turn.prompt, skill)
            {
                *report
                    .signals
                    .entry("named_not_activated".to_string())
                    .or_default() += 1;
                candidates.push((skill.clone(), Signal::MovedOn, None, true));
            }
            for (skill, signal, evidence, named) in candidates {
                let polarity = match signal.polarity() {
                    Polarity::Adopted => DraftPolarity::Positive,
                    Polarity::Overridden => DraftPolarity::Negative,
                };
                let prompt = redact(&turn.prompt);
                let key = (format!("{skill}\u{0}{}", prompt_key(&prompt)), polarity);
                if let Some(&existing) = seen.get(&key) {
                    report.cases[existing].provenance.occurrences += 1;
                    report.duplicates += 1;
                    continue;
                }
                let reason = match (polarity, &evidence) {
                    (DraftPolarity::Negative, Some(text)) => Some(redact(text)),
                    (DraftPolarity::Negative, None) => Some(
                        "the user interrupted the turn or rejected one of its tool calls"
                            .to_string(),
                    ),
                    (DraftPolarity::Positive, _) => None,
                };
                let (expected_output, assertions) = match polarity {
                    DraftPolarity::Positive if named => (
                        None,
                        vec![format!(
                            "Uses the {skill} skill the user asked for (the recorded session did not)"
                        )],
                    ),
                    DraftPolarity::Positive => (
                        turn.answer
                            .as_deref()
                            .map(|a| truncate_chars(&redact(a), MAX_EXPECTED_CHARS)),
                        Vec::new(),
                    ),
                    DraftPolarity::Negative => (
                        None,
                        vec![format!(
                            "Avoids what the user objected to in the recorded session ({}): {}",
                            signal.as_str(),
                            reason.as_deref().unwrap_or("")
                        )],
                    ),
                };
                let referenced = referenced_files(session, index);
                let mut files = Vec::new();
                if let (Some(dir), Some(cwd)) = (&options.copy_files_to, &session.cwd) {
                    for relative in &referenced {
                        if copy_file(cwd, relative, dir)? {
                            files.push(relative.to_string_lossy().into_owned());
                        } else {
                            report
                                .files_skipped
                                .push(redact(&cwd.join(relative).to_string_lossy()));
                        }
                    }
                }
                let provenance = Provenance {
                    source: "history",
                    host: session.host,
                    session: session.id.clone(),
                    turn: index + 1,
                    timestamp: turn.at.map(|t| t.to_rfc3339()),
                    signal: if named {
                        "named_not_activated".to_string()
                    } else {
                        signal.as_str().to_string()
                    },
                    polarity,
                    reason,
                    occurrences: 1,
                    referenced_files: referenced
                        .iter()
                        .map(|p| redact(&p.to_string_lossy()))
                        .collect(),
                };
                seen.insert(key, report.cases.len());
                report.cases.push(DraftCase {
                    id: case_id(session.host, &session.id, index + 1),
                    prompt,
                    skill,
                    expected_output,
                    assertions,
                    files,
                    provenance,
                });
            }
        }
    }
    Ok(report)
}

/// The drafts as an eval set in the `evals.json` format: every case `status: draft`, with
/// `expected_skill`, `files` (`[]` unless copied) and `provenance`.
pub(crate) fn to_eval_set(report: &MineReport, skill_name: Option<&str>) -> Value {
    let evals: Vec<Value> = report
        .cases
        .iter()
        .map(|case| {
            let mut value = json!({
                "id": case.id,
                "prompt": case.prompt,
                "expected_skill": case.skill,
                "status": "draft",
                "files": case.files,
                "provenance": case.provenance,
            });
            if let Some(expected) = &case.expected_output {
                value["expected_output"] = json!(expected);
            }
            if !case.assertions.is_empty() {
                value["assertions"] = json!(case.assertions);
            }
            value
        })
        .collect();
    let mut set = json!({"evals": evals});
    if let Some(name) = skill_name {
        set["skill_name"] = json!(name);
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn personal_paths_and_secrets_are_redacted() {
        let text = "read /home/alice/app/.env with sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345 and /Users/bob/x and /srv/stand-in/home/y";
        let out = redact_personal(text, &[PathBuf::from("/srv/stand-in/home")]);
        assert!(!out.contains("alice"), "{out}");
        assert!(!out.contains("bob"), "{out}");
        assert!(!out.contains("stand-in"), "{out}");
        assert!(!out.contains("abcdefghijklmnop"), "{out}");
        assert!(out.contains("~/app/.env"), "{out}");
    }

    #[test]
    fn ids_are_stable_and_short() {
        assert_eq!(
            case_id(HistoryHost::ClaudeCode, "9d1e6b2a-4c1f-4e0a", 3),
            "hist-claude-code-9d1e6b2a-4c1-t3"
        );
    }

    #[test]
    fn naming_a_skill_is_recognised() {
        assert!(names_skill("/release-notes for v2", "release-notes"));
        assert!(names_skill("use the release-notes skill", "release-notes"));
        assert!(!names_skill("write release notes", "release-notes"));
    }
}
