//! Adoption signals: what the user did after a turn, read from the next turn of the same
//! session. This is the rule `golden mine` and `usage` share (documented in
//! `docs/history.md`); it is a heuristic on the user's words and actions, not a grade.
//!
//! In order (the first that applies wins):
//!
//! | signal | polarity | when |
//! |---|---|---|
//! | `interrupted` | overridden | the user interrupted the turn or rejected one of its tool calls |
//! | `undone` | overridden | the next prompt asks to undo/revert/roll back, or the next turn runs `git checkout -- …`, `git restore`, `git reset --hard`, `git revert` or `git stash` |
//! | `rewrite_requested` | overridden | the next prompt asks to rewrite, redo, start over or try again |
//! | `pushed_back` | overridden | the next prompt objects: starts with "no"/"nope"/"wrong", or says "that's wrong", "not what I asked", "doesn't work", "you broke", "still broken", "why did you", "please fix", … |
//! | `approved` | adopted | the next prompt thanks or approves ("thanks", "perfect", "looks good", "lgtm", …) |
//! | `moved_on` | adopted | the next prompt is about something else (none of the above) |
//! | `no_follow_up` | adopted | the turn is the session's last (weakest evidence; kept apart in provenance) |

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::{HistorySession, Turn};
use crate::features::runner::parsers::{SHELL_TOOLS, command_argument};

/// What the user's next move says about a turn's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    Interrupted,
    Undone,
    RewriteRequested,
    PushedBack,
    Approved,
    MovedOn,
    NoFollowUp,
}

impl Signal {
    /// The recorded name (`pushed_back`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Interrupted => "interrupted",
            Signal::Undone => "undone",
            Signal::RewriteRequested => "rewrite_requested",
            Signal::PushedBack => "pushed_back",
            Signal::Approved => "approved",
            Signal::MovedOn => "moved_on",
            Signal::NoFollowUp => "no_follow_up",
        }
    }

    /// Whether the signal means the user kept the result.
    pub fn polarity(self) -> Polarity {
        match self {
            Signal::Approved | Signal::MovedOn | Signal::NoFollowUp => Polarity::Adopted,
            _ => Polarity::Overridden,
        }
    }
}

/// Whether the user kept the result (adopted) or overrode it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Polarity {
    Adopted,
    Overridden,
}

/// A turn's signal with the evidence it was read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnOutcome {
    pub signal: Signal,
    /// The follow-up prompt or command the signal came from (absent for `no_follow_up` and
    /// `interrupted`).
    pub evidence: Option<String>,
}

static UNDO_PROMPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(undo|revert|roll ?back|put (it|that|them) back|restore the (old|original|previous))\b")
        .expect("valid pattern")
});
static UNDO_COMMAND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\bgit\s+(checkout\s+(--\s|HEAD\b)|restore\b|reset\s+--hard\b|revert\b|stash\b)",
    )
    .expect("valid pattern")
});
static REWRITE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(rewrite|re-write|redo|re-do|start over|try again|do it again|from scratch)\b",
    )
    .expect("valid pattern")
});
static PUSHBACK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*(no|nope|wrong)\b|\b(that'?s|this is|it'?s|is|are) (wrong|incorrect|not (right|correct|it))\b|\bnot what i (asked|wanted|meant|said)\b|\b(doesn'?t|didn'?t|does not|did not|won'?t) (work|compile|run|build)\b|\byou broke\b|\bstill (wrong|broken|failing|fails)\b|\bwhy did you\b|\bplease fix\b|\bthat'?s not\b|\bdon'?t do that\b",
    )
    .expect("valid pattern")
});
static APPROVAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(thanks|thank you|thx|perfect|great|looks good|lgtm|exactly|awesome|well done|nice)\b")
        .expect("valid pattern")
});

/// The signal in a follow-up prompt alone (no commands considered).
pub fn prompt_signal(prompt: &str) -> Signal {
    let prompt = prompt.replace(['\u{2019}', '\u{2018}'], "'");
    if UNDO_PROMPT.is_match(&prompt) {
        Signal::Undone
    } else if REWRITE.is_match(&prompt) {
        Signal::RewriteRequested
    } else if PUSHBACK.is_match(&prompt) {
        Signal::PushedBack
    } else if APPROVAL.is_match(&prompt) {
        Signal::Approved
    } else {
        Signal::MovedOn
    }
}

/// An undo command the turn ran, if any.
fn undo_command(session: &HistorySession, turn: &Turn) -> Option<String> {
    session
        .trajectory
        .tool_calls
        .get(turn.tool_calls.clone())
        .unwrap_or(&[])
        .iter()
        .filter(|call| SHELL_TOOLS.contains(&call.name.as_str()))
        .filter_map(|call| command_argument(&call.input))
        .find(|command| UNDO_COMMAND.is_match(command))
}

/// The outcome of turn `index` of `session`.
pub fn classify(session: &HistorySession, index: usize) -> TurnOutcome {
    let turn = &session.turns[index];
    if turn.interrupted {
        return TurnOutcome {
            signal: Signal::Interrupted,
            evidence: None,
        };
    }
    let Some(next) = session.turns.get(index + 1) else {
        return TurnOutcome {
            signal: Signal::NoFollowUp,
            evidence: None,
        };
    };
    let signal = prompt_signal(&next.prompt);
    if signal != Signal::Undone
        && let Some(command) = undo_command(session, next)
    {
        return TurnOutcome {
            signal: Signal::Undone,
            evidence: Some(command),
        };
    }
    TurnOutcome {
        signal,
        evidence: Some(next.prompt.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_map_to_the_documented_signals() {
        let cases = [
            ("No, that's wrong: group by component", Signal::PushedBack),
            ("this is not what I asked for", Signal::PushedBack),
            ("It doesn\u{2019}t work anymore", Signal::PushedBack),
            (
                "please rewrite it in plain English",
                Signal::RewriteRequested,
            ),
            ("try again with fewer bullets", Signal::RewriteRequested),
            ("undo that change", Signal::Undone),
            ("revert the notes", Signal::Undone),
            ("thanks, perfect", Signal::Approved),
            ("looks good. Now bump the version", Signal::Approved),
            ("Now bump the version in Cargo.toml", Signal::MovedOn),
            ("Notice the failing test in ci.yml", Signal::MovedOn),
        ];
        for (prompt, expected) in cases {
            assert_eq!(prompt_signal(prompt), expected, "{prompt}");
        }
    }

    #[test]
    fn undo_commands_are_recognised() {
        for command in [
            "git checkout -- NOTES.md",
            "git restore NOTES.md",
            "git reset --hard HEAD~1",
            "bash -lc 'git revert HEAD'",
        ] {
            assert!(UNDO_COMMAND.is_match(command), "{command}");
        }
        assert!(!UNDO_COMMAND.is_match("git checkout -b feature"));
        assert!(!UNDO_COMMAND.is_match("git status"));
    }

    #[test]
    fn polarity_splits_adopted_from_overridden() {
        assert_eq!(Signal::MovedOn.polarity(), Polarity::Adopted);
        assert_eq!(Signal::NoFollowUp.polarity(), Polarity::Adopted);
        assert_eq!(Signal::Undone.polarity(), Polarity::Overridden);
        assert_eq!(Signal::Interrupted.polarity(), Polarity::Overridden);
    }
}
