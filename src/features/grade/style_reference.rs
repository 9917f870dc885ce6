//! The reference of the `style` judge metric: what the user's answers look like, built from
//! their `USER.md` and a bounded sample of the answers their agents gave them in past sessions.
//!
//! - `USER.md`: the file named with `--style-reference FILE`, else `.openclaw/workspace/USER.md`
//!   under the history home folder (OpenClaw's default agent workspace, where it keeps the
//!   user's profile; `SKILL_LIFT_HISTORY_ROOT` replaces the home folder). At most
//!   [`STYLE_USER_MD_CHARS`] bytes of it are used.
//! - Past answers: the agent's last text of each user turn in the session history
//!   ([`crate::features::history`], every host), interrupted turns left out; the
//!   [`STYLE_HISTORY_ANSWERS`] most recent by the turn's start time (ties and turns without a
//!   time broken by host, session id and turn index, so the choice is deterministic), each cut
//!   to [`STYLE_ANSWER_CHARS`] bytes.
//!
//! Every text passes through the redactor ([`crate::disk::redact::truncate`]) before it is
//! part of the reference. The reference text reaches only the judge; what the manifest records
//! is [`StyleReferenceInfo`]: paths, counts and hashes. This module reads files; it writes
//! nothing.

use std::path::{Path, PathBuf};

use crate::features::history::{HistoryError, HistoryHost, HistoryRoots, read_history};
use crate::record::{StyleReferenceFile, StyleReferenceInfo};

/// Past answers in the sample.
pub(crate) const STYLE_HISTORY_ANSWERS: usize = 5;
/// Longest past answer in the sample, bytes (cut at the end, on a character boundary).
pub(crate) const STYLE_ANSWER_CHARS: usize = 1_500;
/// Longest `USER.md` used, bytes.
pub(crate) const STYLE_USER_MD_CHARS: usize = 8_000;
/// Where `USER.md` is looked for under the home folder when `--style-reference` is not given.
pub(crate) const DEFAULT_USER_MD: &str = ".openclaw/workspace/USER.md";

/// A built style reference: the text the judge sees, and what the manifest records of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StyleReference {
    /// The reference as sent to the judge (redacted, bounded).
    pub text: String,
    /// Its record.
    pub info: StyleReferenceInfo,
}

/// Why no style reference could be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StyleReferenceError {
    /// `--style-reference FILE` cannot be read.
    #[error("--style-reference {}: {source}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Neither a `USER.md` nor a past answer was found.
    #[error(
        "the style metric needs a style reference, and none was found: no USER.md at {} and no past assistant answer in the session history under {}; name your USER.md with --style-reference FILE, set SKILL_LIFT_HISTORY_ROOT to a home folder holding agent session history, or leave `style` out of --judge-metrics",
        .user_md.display(),
        .home.display()
    )]
    Nothing {
        /// Where `USER.md` was looked for.
        user_md: PathBuf,
        /// The home folder whose session history was read.
        home: PathBuf,
    },
    /// No home folder to look in, and no `--style-reference`.
    #[error(
        "the style metric needs a style reference, and HOME is not set, so neither ~/{DEFAULT_USER_MD} nor the session history can be found; name your USER.md with --style-reference FILE, set SKILL_LIFT_HISTORY_ROOT to a home folder holding agent session history, or leave `style` out of --judge-metrics"
    )]
    NoHome,
    /// The session history cannot be read.
    #[error("the style reference: {0}")]
    History(#[from] HistoryError),
}

/// One past answer of the sample, before it is cut.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PastAnswer {
    /// When its turn started.
    pub at: Option<chrono::DateTime<chrono::Utc>>,
    /// Which agent gave it.
    pub host: HistoryHost,
    /// The session's id.
    pub session: String,
    /// The turn's index in the session.
    pub turn: usize,
    /// The answer.
    pub text: String,
}

/// The [`STYLE_HISTORY_ANSWERS`] most recent of `answers` (latest first; ties and answers
/// without a time broken by host, session id and turn index; those without a time last).
pub(crate) fn most_recent(mut answers: Vec<PastAnswer>) -> Vec<PastAnswer> {
    answers.retain(|answer| !answer.text.trim().is_empty());
    answers.sort_by(|a, b| {
        b.at.is_some()
            .cmp(&a.at.is_some())
            .then(b.at.cmp(&a.at))
            .then(a.host.cmp(&b.host))
            .then(a.session.cmp(&b.session))
            .then(a.turn.cmp(&b.turn))
    });
    answers.truncate(STYLE_HISTORY_ANSWERS);
    answers
}

/// Every past answer in the session history under `roots` (every host; interrupted turns
/// left out). Unreadable sessions are skipped, as the history readers do.
fn past_answers(roots: &HistoryRoots) -> Result<Vec<PastAnswer>, HistoryError> {
    let mut answers = Vec::new();
    for host in HistoryHost::ALL {
        let report = read_history(host, roots, None)?;
        for session in report.sessions {
            for (index, turn) in session.turns.iter().enumerate() {
                if turn.interrupted {
                    continue;
                }
                if let Some(text) = &turn.answer {
                    answers.push(PastAnswer {
                        at: turn.at,
                        host,
                        session: session.id.clone(),
                        turn: index,
                        text: text.clone(),
                    });
                }
            }
        }
    }
    Ok(answers)
}

/// The reference text of `user_md` (its redacted, bounded text) and `answers` (already the
/// sample, latest first), and the text of the answers' section alone.
pub(crate) fn compose(user_md: Option<&str>, answers: &[PastAnswer]) -> (String, String) {
    let mut text = String::new();
    if let Some(user_md) = user_md {
        text.push_str("## The user's USER.md\n");
        text.push_str(user_md.trim());
        text.push_str("\n\n");
    }
    let mut section = String::new();
    if !answers.is_empty() {
        section.push_str(&format!(
            "## {} answers the user received in past sessions, most recent first\n",
            answers.len()
        ));
        for (index, answer) in answers.iter().enumerate() {
            section.push_str(&format!(
                "### Past answer {} ({})\n{}\n\n",
                index + 1,
                answer.host,
                crate::disk::redact::truncate(answer.text.trim(), STYLE_ANSWER_CHARS)
            ));
        }
    }
    text.push_str(&section);
    (text.trim_end().to_string(), section)
}

/// Build the style reference: `USER.md` from `explicit` (which must be readable) or the
/// default place under the history home folder, and the sample of past answers from the
/// session history under `history_root` (a stand-in home folder; `None`: the
/// `SKILL_LIFT_HISTORY_ROOT` variable, else the real home folder). An error when neither
/// gives anything.
pub(crate) fn build_style_reference(
    explicit: Option<&Path>,
    history_root: Option<&Path>,
) -> Result<StyleReference, StyleReferenceError> {
    // Without a home folder, a named USER.md is still a reference (with no past answers).
    let roots = match HistoryRoots::resolve(history_root) {
        Ok(roots) => Some(roots),
        Err(HistoryError::NoHome) if explicit.is_some() => None,
        Err(HistoryError::NoHome) => return Err(StyleReferenceError::NoHome),
        Err(other) => return Err(other.into()),
    };
    let user_md_path = match (explicit, &roots) {
        (Some(path), _) => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        (None, Some(roots)) => roots.home().join(DEFAULT_USER_MD),
        (None, None) => return Err(StyleReferenceError::NoHome),
    };
    let bytes = match std::fs::read(&user_md_path) {
        Ok(bytes) => Some(bytes),
        Err(source) if explicit.is_some() => {
            return Err(StyleReferenceError::Unreadable {
                path: user_md_path,
                source,
            });
        }
        Err(_) => None,
    };
    let user_md = bytes
        .as_ref()
        .map(|bytes| {
            let text = String::from_utf8_lossy(bytes);
            (
                crate::disk::redact::truncate(text.trim(), STYLE_USER_MD_CHARS),
                bytes,
            )
        })
        .filter(|(text, _)| !text.trim().is_empty());
    let answers = match &roots {
        Some(roots) => most_recent(past_answers(roots)?),
        None => Vec::new(),
    };
    if user_md.is_none() && answers.is_empty() {
        return Err(StyleReferenceError::Nothing {
            user_md: user_md_path,
            home: roots.map(|r| r.home().to_path_buf()).unwrap_or_default(),
        });
    }
    let (text, section) = compose(user_md.as_ref().map(|(text, _)| text.as_str()), &answers);
    let sha = |bytes: &[u8]| crate::features::grade::judge::sha256_hex(bytes);
    let info = StyleReferenceInfo {
        user_md: user_md.as_ref().map(|(text, bytes)| StyleReferenceFile {
            path: user_md_path.clone(),
            sha256: sha(bytes),
            chars: text.chars().count(),
        }),
        user_md_explicit: explicit.is_some(),
        history_root: match &roots {
            Some(HistoryRoots::StandIn(dir)) => {
                Some(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()))
            }
            _ => None,
        },
        history_answers: answers.len(),
        history_chars: section.chars().count(),
        history_sha256: (!answers.is_empty()).then(|| sha(section.as_bytes())),
        reference_sha256: sha(text.as_bytes()),
    };
    Ok(StyleReference { text, info })
}

/// Build the reference again from what `recorded` says it was made of (the same `USER.md`
/// when it was named, the same history folder), for a resumed run or a regrade with the
/// recorded settings.
pub(crate) fn rebuild_style_reference(
    recorded: &StyleReferenceInfo,
) -> Result<StyleReference, StyleReferenceError> {
    let explicit = recorded
        .user_md
        .as_ref()
        .filter(|_| recorded.user_md_explicit)
        .map(|file| file.path.as_path());
    build_style_reference(explicit, recorded.history_root.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn answer(at: Option<i64>, session: &str, turn: usize, text: &str) -> PastAnswer {
        PastAnswer {
            at: at.map(|s| chrono::Utc.timestamp_opt(s, 0).unwrap()),
            host: HistoryHost::Codex,
            session: session.to_string(),
            turn,
            text: text.to_string(),
        }
    }

    /// The sample is the five latest non-empty answers, latest first; answers without a time
    /// come last, and ties are broken by session and turn, whatever the input order.
    #[test]
    fn the_sample_is_the_five_most_recent_answers_in_a_fixed_order() {
        let answers = vec![
            answer(Some(10), "s1", 0, "ten"),
            answer(None, "s0", 0, "untimed"),
            answer(Some(30), "s2", 1, "thirty-b"),
            answer(Some(30), "s2", 0, "thirty-a"),
            answer(Some(20), "s1", 1, "   "),
            answer(Some(50), "s3", 0, "fifty"),
            answer(Some(40), "s3", 1, "forty"),
            answer(Some(5), "s4", 0, "five"),
        ];
        let mut reversed = answers.clone();
        reversed.reverse();
        let texts = |sample: Vec<PastAnswer>| -> Vec<String> {
            sample.into_iter().map(|a| a.text).collect()
        };
        let expected = ["fifty", "forty", "thirty-a", "thirty-b", "ten"];
        assert_eq!(texts(most_recent(answers)), expected);
        assert_eq!(texts(most_recent(reversed)), expected);
    }

    /// Each past answer is cut to its bound and redacted; USER.md comes first.
    #[test]
    fn the_reference_is_bounded_and_redacted() {
        let key = format!("sk-ant-api03-{}", "a".repeat(90));
        let long = format!("{key} {}", "x".repeat(STYLE_ANSWER_CHARS * 2));
        let (text, section) = compose(
            Some("Prefers short answers in Spanish."),
            &[answer(Some(1), "s", 0, &long)],
        );
        assert!(text.starts_with("## The user's USER.md\nPrefers short answers in Spanish."));
        assert!(!text.contains(&key), "{text}");
        assert!(
            section.len() < STYLE_ANSWER_CHARS + 200,
            "{}",
            section.len()
        );
        assert!(text.contains("### Past answer 1 (codex)"));
    }

    /// A folder with neither USER.md nor history gives the error that says how to provide one;
    /// a named USER.md that is missing is named.
    #[test]
    fn no_reference_is_an_error_saying_what_is_missing() {
        let home = tempfile::tempdir().unwrap();
        let error = build_style_reference(None, Some(home.path())).unwrap_err();
        let message = error.to_string();
        assert!(message.contains(".openclaw/workspace/USER.md"), "{message}");
        assert!(message.contains("--style-reference FILE"), "{message}");
        let missing = home.path().join("nope.md");
        let error = build_style_reference(Some(&missing), Some(home.path())).unwrap_err();
        assert!(
            error.to_string().starts_with("--style-reference "),
            "{error}"
        );
        std::fs::create_dir_all(home.path().join(".openclaw/workspace")).unwrap();
        std::fs::write(home.path().join(DEFAULT_USER_MD), "Terse. Bullet lists.\n").unwrap();
        let built = build_style_reference(None, Some(home.path())).unwrap();
        assert_eq!(built.info.history_answers, 0);
        assert!(!built.info.user_md_explicit);
        let file = built.info.user_md.as_ref().unwrap();
        assert_eq!(file.chars, "Terse. Bullet lists.".len());
        assert_eq!(rebuild_style_reference(&built.info).unwrap(), built);
    }
}
