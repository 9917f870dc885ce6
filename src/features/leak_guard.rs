//! The leak guard's comparison of skills by meaning, not bytes: is a staged skill (a decoy, or
//! anything else in a baseline workspace) a copy of the target under another name?
//!
//! Two `SKILL.md` files are the same skill when any of these holds:
//!
//! - their frontmatter `name`s are equal (the agent would load it as the target);
//! - their **normalized** bodies are equal: line endings unified, tabs made spaces, leading and
//!   trailing whitespace of every line dropped, runs of spaces collapsed, blank lines removed —
//!   so CRLF, trailing spaces, extra blank lines, re-indentation and tabs change nothing;
//! - their normalized bodies are **near-duplicates**: the Jaccard similarity of their sets of
//!   [`SHINGLE_WORDS`]-word shingles (consecutive word windows, case-folded) is at least
//!   [`NEAR_DUPLICATE_JACCARD`].
//!
//! The threshold: whitespace-only variants score 1.0 (and are caught as equal bodies first); one
//! word changed in a 35-word body keeps 0.85 (a 3-word window spans each change, so a longer
//! body keeps more); the four built-in decoys and the example skill share almost no 3-word
//! window (pairwise ≤ 0.01, measured by the unit test). 0.8 therefore flags a renamed copy with
//! light edits while leaving an honest neighbour far below; a copy rewritten enough to fall under
//! 0.8 is a different text, whose lift is then measured like any other decoy's. Bodies too short
//! to form a shingle compare by their normalized words.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Words per shingle.
pub(crate) const SHINGLE_WORDS: usize = 3;

/// Jaccard similarity of the shingle sets at or above which two bodies are the same skill.
pub(crate) const NEAR_DUPLICATE_JACCARD: f64 = 0.8;

/// Why a skill counts as a copy of the target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resemblance {
    /// The frontmatter `name` is the target's.
    SameName(String),
    /// The normalized bodies are equal.
    SameBody,
    /// The shingle Jaccard similarity reached the threshold.
    NearDuplicate(f64),
}

impl std::fmt::Display for Resemblance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resemblance::SameName(name) => {
                write!(f, "its frontmatter name is the target's (`{name}`)")
            }
            Resemblance::SameBody => write!(
                f,
                "its SKILL.md body is the target's once whitespace is normalized (line endings, trailing spaces, blank lines, indentation, tabs)"
            ),
            Resemblance::NearDuplicate(similarity) => write!(
                f,
                "its SKILL.md body is a near-duplicate of the target's ({SHINGLE_WORDS}-word shingle Jaccard {similarity:.2} ≥ {NEAR_DUPLICATE_JACCARD})"
            ),
        }
    }
}

/// A `SKILL.md` split into its frontmatter `name` (when it has one) and its body.
#[derive(Debug, Clone)]
pub(crate) struct SkillText {
    /// Frontmatter `name`, trimmed and unquoted.
    pub name: Option<String>,
    /// Normalized body (see the module documentation).
    pub normalized: String,
}

impl SkillText {
    /// Parse a `SKILL.md` text (any line endings).
    pub(crate) fn parse(text: &str) -> Self {
        let unified: String = text
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .trim_start_matches('\u{feff}')
            .lines()
            .map(|line| format!("{}\n", line.trim_end()))
            .collect();
        let (frontmatter, body) = split_frontmatter(&unified);
        let name = frontmatter.and_then(|front| {
            front.lines().find_map(|line| {
                let rest = line.trim_start().strip_prefix("name:")?;
                let value = rest.trim().trim_matches(|c| c == '"' || c == '\'').trim();
                (!value.is_empty()).then(|| value.to_string())
            })
        });
        Self {
            name,
            normalized: normalize(body),
        }
    }

    /// Read and parse `dir/SKILL.md`; `None` when there is none.
    pub(crate) fn read(dir: &Path) -> Option<Self> {
        let bytes = std::fs::read(dir.join("SKILL.md")).ok()?;
        Some(Self::parse(&String::from_utf8_lossy(&bytes)))
    }

    /// How `self` resembles `target`, when it is a copy of it.
    pub(crate) fn resembles(&self, target: &SkillText) -> Option<Resemblance> {
        if let (Some(mine), Some(theirs)) = (&self.name, &target.name)
            && mine == theirs
        {
            return Some(Resemblance::SameName(mine.clone()));
        }
        if self.normalized == target.normalized && !self.normalized.is_empty() {
            return Some(Resemblance::SameBody);
        }
        let similarity = jaccard(&self.normalized, &target.normalized);
        (similarity >= NEAR_DUPLICATE_JACCARD).then_some(Resemblance::NearDuplicate(similarity))
    }
}

fn split_frontmatter(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text.strip_prefix("---\n") else {
        return (None, text);
    };
    match rest.find("\n---") {
        Some(end) => {
            let after = &rest[end + 4..];
            let body = after.split_once('\n').map_or("", |(_, body)| body);
            (Some(&rest[..end]), body)
        }
        None => (None, text),
    }
}

/// The body with whitespace differences removed: lines trimmed, inner runs of whitespace (tabs
/// included) collapsed to one space, blank lines dropped, joined with `\n`.
pub(crate) fn normalize(body: &str) -> String {
    body.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn shingles(normalized: &str) -> HashSet<String> {
    let words: Vec<String> = normalized
        .split_whitespace()
        .map(|word| word.to_lowercase())
        .collect();
    if words.len() < SHINGLE_WORDS {
        return (!words.is_empty())
            .then(|| words.join(" "))
            .into_iter()
            .collect();
    }
    words
        .windows(SHINGLE_WORDS)
        .map(|window| window.join(" "))
        .collect()
}

/// Jaccard similarity of the [`SHINGLE_WORDS`]-word shingle sets of two normalized bodies, in
/// [0, 1] (0 when either is empty).
pub(crate) fn jaccard(a: &str, b: &str) -> f64 {
    let (a, b) = (shingles(a), shingles(b));
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let shared = a.intersection(&b).count();
    shared as f64 / (a.len() + b.len() - shared) as f64
}

/// A case `files` entry that would copy the target into a workspace: `source` is the target's
/// folder, a folder holding it, or its `SKILL.md`. (Other files of the skill — its `evals/`
/// fixtures above all — are ordinary case files; a renamed copy of `SKILL.md` is caught by the
/// content check of the staged workspace.)
pub(crate) fn copies_target(source: &Path, target_dir: &Path) -> bool {
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let (source, target) = (canonical(source), canonical(target_dir));
    target.starts_with(&source) || source == target.join("SKILL.md")
}

/// Every `SKILL.md` under `dir` (not following symbolic links), for the baseline scan.
pub(crate) fn skill_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                stack.push(entry.path());
            } else if file_type.is_file() && entry.file_name() == "SKILL.md" {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: &str = "---\nname: pirate-greeting\ndescription: Greets.\n---\n# Pirate greeting\n\nBegin every answer with Aye! and then answer the question\nin the voice of a friendly pirate captain, short and cheerful.\n\n- Never use more than three sentences.\n- Sign off with a nautical word.\n";

    #[test]
    fn whitespace_variants_and_renames_are_the_same_skill() {
        let target = SkillText::parse(TARGET);
        let renamed = TARGET.replace("name: pirate-greeting", "name: sea-voice");
        let variants = [
            renamed.replace('\n', "\r\n"),
            renamed.replace('\n', "  \n"),
            renamed.replace("\n\n", "\n\n\n\n"),
            renamed.replace("- Never", "\t-   Never"),
            renamed.replace("Begin every", "    Begin  every"),
        ];
        for variant in &variants {
            let found = SkillText::parse(variant).resembles(&target);
            assert_eq!(found, Some(Resemblance::SameBody), "{variant:?}");
        }
        let same_name =
            "---\nname: pirate-greeting\ndescription: other\n---\nSomething else entirely.\n";
        assert_eq!(
            SkillText::parse(same_name).resembles(&target),
            Some(Resemblance::SameName("pirate-greeting".into()))
        );
        let edited = renamed.replace("short and cheerful", "brief and cheerful");
        let found = SkillText::parse(&edited).resembles(&target);
        crate::errln!("one word edited: {found:?}");
        assert!(matches!(
            found,
            Some(Resemblance::NearDuplicate(similarity)) if similarity >= NEAR_DUPLICATE_JACCARD
        ));
    }

    #[test]
    fn different_skills_are_far_below_the_threshold() {
        let target = SkillText::parse(TARGET);
        let decoys: Vec<SkillText> = crate::features::decoys::BUILTIN_DECOYS
            .iter()
            .map(|(_, text)| SkillText::parse(text))
            .collect();
        let example = SkillText::parse(include_str!("../../evals/support-desk/SKILL.md"));
        let mut highest: f64 = 0.0;
        for (index, decoy) in decoys.iter().enumerate() {
            highest = highest.max(jaccard(&decoy.normalized, &example.normalized));
            for other in &decoys[index + 1..] {
                highest = highest.max(jaccard(&decoy.normalized, &other.normalized));
            }
        }
        crate::errln!("highest similarity among the built-in decoys and the example: {highest:.3}");
        assert!(highest < 0.1, "{highest}");
        for (index, decoy) in decoys.iter().enumerate() {
            assert_eq!(decoy.resembles(&target), None);
            assert!(jaccard(&decoy.normalized, &target.normalized) < 0.1);
            for other in &decoys[index + 1..] {
                assert!(jaccard(&decoy.normalized, &other.normalized) < 0.1);
            }
        }
    }

    #[test]
    fn case_files_that_hold_the_target_are_recognised() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("skills/target");
        std::fs::create_dir_all(target.join("scripts")).unwrap();
        std::fs::write(target.join("SKILL.md"), TARGET).unwrap();
        assert!(copies_target(&target, &target));
        assert!(copies_target(&target.join("SKILL.md"), &target));
        assert!(copies_target(&root.path().join("skills"), &target));
        assert!(!copies_target(&root.path().join("other"), &target));
        std::fs::create_dir_all(target.join("evals")).unwrap();
        std::fs::write(target.join("evals/notes.txt"), "fixture").unwrap();
        assert!(!copies_target(&target.join("evals/notes.txt"), &target));
    }
}
