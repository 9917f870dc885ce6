//! Need-based suggestion: does an installed asset already cover a need, or does a catalog hold a
//! candidate? The score is transparent and lexical: the share of the need's words (lower-cased,
//! stop words dropped, a trailing plural `s` removed) found in the asset's name and description.
//! Suggestions are not evidence, and nothing is ever installed.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::RegistryError;
use super::state::read_json;

/// Score at or above which an installed asset counts as "already available".
pub const INSTALLED_THRESHOLD: f64 = 0.5;
/// Score at or above which a catalog entry is suggested.
pub const CATALOG_THRESHOLD: f64 = 0.25;

const STOP_WORDS: [&str; 32] = [
    "the", "and", "for", "with", "that", "this", "from", "into", "when", "what", "how", "use",
    "using", "make", "want", "need", "can", "you", "your", "are", "its", "our", "all", "any",
    "some", "please", "help", "about", "ask", "asks", "user", "skill",
];

/// The words of `text` that count for matching.
pub fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !STOP_WORDS.contains(&w.as_str()))
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if stem.chars().count() >= 4 => stem.to_string(),
            _ => w,
        })
        .collect()
}

/// Share of `need`'s words found in `text`, and the shared words.
pub fn score(need: &BTreeSet<String>, text: &str) -> (f64, Vec<String>) {
    if need.is_empty() {
        return (0.0, Vec::new());
    }
    let have = words(text);
    let shared: Vec<String> = need.intersection(&have).cloned().collect();
    (shared.len() as f64 / need.len() as f64, shared)
}

/// A catalog entry (`--catalog FILE`: a JSON list of these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    pub slug: String,
    pub title: String,
    pub description: String,
    #[serde(default)]
    pub source: Option<String>,
}

/// Read a catalog file.
pub fn read_catalog(path: &Path) -> Result<Vec<CatalogEntry>, RegistryError> {
    read_json(
        path,
        "a catalog (a JSON list of {slug, title, description, source})",
    )?
    .ok_or_else(|| RegistryError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
    })
}

/// An installed asset offered for matching.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub host: String,
    pub name: String,
    pub description: String,
}

/// A scored match.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Match {
    /// `installed` or `catalog`.
    pub origin: String,
    pub name: String,
    pub host: Option<String>,
    pub title: Option<String>,
    pub source: Option<String>,
    pub score: f64,
    pub shared_words: Vec<String>,
}

/// The answer of `suggest`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    pub need: String,
    pub need_words: Vec<String>,
    /// `already-available`, `suggest-new`, or `nothing-found`.
    pub verdict: String,
    pub best: Option<Match>,
    /// Every match with a positive score, best first (at most ten).
    pub ranked: Vec<Match>,
    pub method: String,
}

/// `suggest`: match `need` against the assets every host's registry in `state` lists, then
/// the catalog file when given, and print the verdict (or the JSON answer).
pub fn suggest_from_state(
    state: &Path,
    need: &str,
    catalog_file: Option<&Path>,
    json: bool,
) -> Result<(), RegistryError> {
    let mut installed = Vec::new();
    let mut hosts_with_registry = 0;
    for host in super::hosts::load_hosts(state)? {
        if let Some(registry) = super::scan::read_registry(state, &host.name)? {
            hosts_with_registry += 1;
            for (name, asset) in registry.assets {
                installed.push(Candidate {
                    host: host.name.clone(),
                    name,
                    description: asset.description,
                });
            }
        }
    }
    let catalog = match catalog_file {
        Some(path) => read_catalog(path)?,
        None => Vec::new(),
    };
    let answer = suggest(need, &installed, &catalog);
    if json {
        crate::values::reporter::result(&super::console::to_json(&answer));
        return Ok(());
    }
    let searched = (installed.len(), hosts_with_registry, catalog.len());
    crate::values::reporter::result_line(&verdict_line(&answer, searched, catalog_file.is_some()));
    crate::values::reporter::result_line(&format!("method: {}", answer.method));
    Ok(())
}

/// The verdict as `suggest` prints it; `searched`: installed assets, hosts with a registry and
/// catalog entries.
fn verdict_line(answer: &Suggestion, searched: (usize, usize, usize), catalog: bool) -> String {
    let (assets, hosts, entries) = searched;
    let plural = |n: usize| if n == 1 { "y" } else { "ies" };
    match (answer.verdict.as_str(), &answer.best) {
        ("already-available", Some(best)) => format!(
            "already available: {} (host {}, score {:.2}: {}) — use it, install nothing",
            best.name,
            best.host.as_deref().unwrap_or("-"),
            best.score,
            best.shared_words.join(", ")
        ),
        ("suggest-new", Some(best)) => format!(
            "suggestion: [install:{}] {} (score {:.2}: {}; source {}): not installed — your choice",
            best.name,
            best.title.as_deref().unwrap_or(""),
            best.score,
            best.shared_words.join(", "),
            best.source.as_deref().unwrap_or("catalog")
        ),
        _ => format!(
            "nothing installed ({assets} asset(s) across {hosts} host registr{}) or in the catalog ({entries} entr{}) covers this need{}",
            plural(hosts),
            plural(entries),
            if catalog {
                ""
            } else {
                "; pass --catalog FILE to search a catalog"
            }
        ),
    }
}

/// Match `need` against installed assets first, then the catalog.
pub fn suggest(need: &str, installed: &[Candidate], catalog: &[CatalogEntry]) -> Suggestion {
    let need_words = words(need);
    let mut ranked: Vec<Match> = Vec::new();
    for candidate in installed {
        let (score, shared) = score(
            &need_words,
            &format!("{} {}", candidate.name, candidate.description),
        );
        if score > 0.0 {
            ranked.push(Match {
                origin: "installed".to_string(),
                name: candidate.name.clone(),
                host: Some(candidate.host.clone()),
                title: None,
                source: None,
                score,
                shared_words: shared,
            });
        }
    }
    for entry in catalog {
        let (score, shared) = score(
            &need_words,
            &format!("{} {} {}", entry.slug, entry.title, entry.description),
        );
        if score > 0.0 {
            ranked.push(Match {
                origin: "catalog".to_string(),
                name: entry.slug.clone(),
                host: None,
                title: Some(entry.title.clone()),
                source: entry.source.clone(),
                score,
                shared_words: shared,
            });
        }
    }
    ranked.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then((a.origin != "installed").cmp(&(b.origin != "installed")))
            .then(a.name.cmp(&b.name))
    });
    ranked.truncate(10);
    let installed_best = ranked
        .iter()
        .find(|m| m.origin == "installed" && m.score >= INSTALLED_THRESHOLD)
        .cloned();
    let catalog_best = ranked
        .iter()
        .find(|m| m.origin == "catalog" && m.score >= CATALOG_THRESHOLD)
        .cloned();
    let (verdict, best) = match (installed_best, catalog_best) {
        (Some(best), _) => ("already-available", Some(best)),
        (None, Some(best)) => ("suggest-new", Some(best)),
        (None, None) => ("nothing-found", None),
    };
    Suggestion {
        need: need.to_string(),
        need_words: need_words.into_iter().collect(),
        verdict: verdict.to_string(),
        best,
        ranked,
        method: format!(
            "lexical: share of the need's words in name + description; installed ≥ {INSTALLED_THRESHOLD}, catalog ≥ {CATALOG_THRESHOLD}; heuristic, not evidence"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_found_says_what_was_searched() {
        let answer = suggest("parse invoices", &[], &[]);
        assert_eq!(
            verdict_line(&answer, (0, 1, 0), false),
            "nothing installed (0 asset(s) across 1 host registry) or in the catalog (0 entries) covers this need; pass --catalog FILE to search a catalog"
        );
    }

    fn installed() -> Vec<Candidate> {
        vec![Candidate {
            host: "claude-code".into(),
            name: "quarterly-finance".into(),
            description: "Build quarterly financial reports from ledgers".into(),
        }]
    }

    #[test]
    fn installed_asset_wins_over_catalog() {
        let catalog = vec![CatalogEntry {
            slug: "fin".into(),
            title: "Finance reports".into(),
            description: "quarterly reports".into(),
            source: None,
        }];
        let s = suggest("a quarterly financial report", &installed(), &catalog);
        assert_eq!(s.verdict, "already-available");
        assert_eq!(s.best.unwrap().name, "quarterly-finance");
    }

    #[test]
    fn catalog_suggestion_and_nothing_found() {
        let catalog = vec![CatalogEntry {
            slug: "humanizer".into(),
            title: "Humanizer".into(),
            description: "remove the AI tone from text".into(),
            source: Some("market".into()),
        }];
        let s = suggest("remove AI tone", &installed(), &catalog);
        assert_eq!(s.verdict, "suggest-new");
        assert_eq!(s.best.unwrap().name, "humanizer");
        assert_eq!(
            suggest("a dashboard with charts", &installed(), &[]).verdict,
            "nothing-found"
        );
    }
}
