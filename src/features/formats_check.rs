//! The conformance check behind `scripts/check-formats` (`skill-lift formats check DIR...`):
//! every skill, eval file, trigger set, Harbor task, Claude Code plugin and marketplace under
//! the given folders, run through the loaders `run`, `triggers` and `scan` use, and counted as
//! loaded or refused with the loader's reason.
//!
//! What counts as what:
//! - skill: a folder holding `SKILL.md`;
//! - eval file: a `.json`, `.jsonl`, `.yaml` or `.yml` file directly inside a folder named
//!   `evals`, and every Vally `eval.yaml`; one the loader names a trigger set is read again as
//!   a trigger set and counted there;
//! - Harbor task: a folder holding `task.toml` and `instruction.md`;
//! - plugin: a folder holding `.claude-plugin/plugin.json`;
//! - marketplace: a folder holding `.claude-plugin/marketplace.json` (each plugin it lists
//!   with a local `source` must exist; a plugin without its own manifest is defined by its
//!   entry).
//!
//! An eval file is loaded against the skill it belongs to: the skill folder that holds its
//! `evals/`; for a Vally file at `tests/<group>/<name>/eval.yaml` (or `<skill>/tests/`), the
//! skill called `<name>`; for a repository's `evals/`, the skill `crate::features::evalset::layout`
//! chooses; else the folder that holds `evals/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::features::evalset::{EvalSetError, load_eval_set, load_trigger_set};
use crate::features::registry::hosts::{
    CLAUDE_MARKETPLACE_MANIFEST, CLAUDE_PLUGIN_MANIFEST, HostKind,
};

/// Folders never descended into.
const SKIPPED_FOLDERS: &[&str] = &[".git", "node_modules", "target", "__pycache__", ".venv"];

/// The kinds of input counted, in report order.
pub(crate) const KINDS: &[&str] = &[
    "skill",
    "eval file",
    "trigger set",
    "harbor task",
    "plugin",
    "marketplace",
];

/// One refused input and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The file or folder.
    pub path: PathBuf,
    /// The loader's message.
    pub reason: String,
}

/// Counts of one kind.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub(crate) struct KindTally {
    /// Inputs that loaded.
    pub loaded: usize,
    /// Inputs refused, with the reasons.
    pub refused: Vec<Refusal>,
    /// Cases (eval files, Harbor tasks) or queries (trigger sets) in the loaded inputs.
    pub items: usize,
    /// Loaded inputs with loader warnings.
    pub with_warnings: usize,
    /// Loader warnings of the loaded inputs by kind (`unused_fields`, `unknown_key`, …): how
    /// many inputs carry each.
    pub warning_kinds: BTreeMap<String, usize>,
}

impl KindTally {
    /// Count one loaded input's warnings (each serialized with its `kind`).
    fn warned<W: Serialize>(&mut self, warnings: &[W]) {
        if warnings.is_empty() {
            return;
        }
        self.with_warnings += 1;
        let mut kinds: Vec<String> = warnings
            .iter()
            .filter_map(|w| {
                serde_json::to_value(w)
                    .ok()?
                    .get("kind")?
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        kinds.sort();
        kinds.dedup();
        for kind in kinds {
            *self.warning_kinds.entry(kind).or_default() += 1;
        }
    }
}

/// The check of one folder.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub(crate) struct FolderReport {
    /// The folder checked.
    pub dir: PathBuf,
    /// Counts per kind ([`KINDS`]).
    pub kinds: BTreeMap<String, KindTally>,
}

impl FolderReport {
    fn tally(&mut self, kind: &str) -> &mut KindTally {
        self.kinds.entry(kind.to_string()).or_default()
    }

    /// Inputs loaded and refused, all kinds together.
    pub(crate) fn totals(&self) -> (usize, usize) {
        self.kinds
            .values()
            .fold((0, 0), |(l, r), t| (l + t.loaded, r + t.refused.len()))
    }
}

/// What was found under a folder, before loading.
#[derive(Default)]
struct Found {
    skills: Vec<PathBuf>,
    eval_files: Vec<PathBuf>,
    tasks: Vec<PathBuf>,
    plugins: Vec<PathBuf>,
    marketplaces: Vec<PathBuf>,
}

fn walk(dir: &Path, found: &mut Found) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    if dir.join("SKILL.md").is_file() {
        found.skills.push(dir.to_path_buf());
    }
    if dir.join("task.toml").is_file() && dir.join("instruction.md").is_file() {
        found.tasks.push(dir.to_path_buf());
    }
    if dir.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
        found.plugins.push(dir.to_path_buf());
    }
    if dir.join(CLAUDE_MARKETPLACE_MANIFEST).is_file() {
        found.marketplaces.push(dir.to_path_buf());
    }
    let in_evals = dir.file_name().is_some_and(|n| n == "evals");
    for entry in entries {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if kind.is_dir() {
            if !SKIPPED_FOLDERS.contains(&name.as_str()) {
                walk(&path, found);
            }
        } else if kind.is_file() {
            let extension = path
                .extension()
                .map(|e| e.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            let data = matches!(extension.as_str(), "json" | "jsonl" | "yaml" | "yml");
            if (in_evals && data) || name == "eval.yaml" {
                found.eval_files.push(path);
            }
        }
    }
}

/// The skill an eval file belongs to (see the module documentation).
fn skill_for(eval: &Path, skills: &[PathBuf]) -> PathBuf {
    let parent = eval.parent().unwrap_or(Path::new("."));
    if parent.file_name().is_some_and(|n| n == "evals") {
        let holder = parent.parent().unwrap_or(Path::new("."));
        if holder.join("SKILL.md").is_file() {
            return holder.to_path_buf();
        }
        return crate::features::evalset::layout::locate(holder, None)
            .map(|l| l.skill_dir)
            .unwrap_or_else(|_| holder.to_path_buf());
    }
    if eval.file_name().is_some_and(|n| n == "eval.yaml") {
        // `<skill>/tests/eval.yaml`, or `tests/<group>/<name>/eval.yaml`.
        if parent.file_name().is_some_and(|n| n == "tests")
            && let Some(skill) = parent.parent()
            && skill.join("SKILL.md").is_file()
        {
            return skill.to_path_buf();
        }
        if let Some(name) = parent.file_name()
            && let Some(skill) = skills.iter().find(|s| s.file_name() == Some(name))
        {
            return skill.clone();
        }
    }
    parent.to_path_buf()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Check every input under `dir`.
pub(crate) fn check_folder(dir: &Path) -> FolderReport {
    let mut found = Found::default();
    walk(dir, &mut found);
    let mut report = FolderReport {
        dir: dir.to_path_buf(),
        kinds: KINDS
            .iter()
            .map(|k| (k.to_string(), KindTally::default()))
            .collect(),
    };
    for skill in &found.skills {
        match crate::features::asset::load_skill(skill) {
            Ok(loaded) => {
                let tally = report.tally("skill");
                tally.loaded += 1;
                tally.warned(&loaded.warnings);
            }
            Err(error) => report.tally("skill").refused.push(Refusal {
                path: skill.join("SKILL.md"),
                reason: one_line(&error.to_string()),
            }),
        }
    }
    for eval in &found.eval_files {
        let skill = skill_for(eval, &found.skills);
        match load_eval_set(eval, &skill) {
            Ok(set) => {
                let tally = report.tally("eval file");
                tally.loaded += 1;
                tally.items += set.cases.len();
                tally.warned(&set.warnings);
            }
            Err(EvalSetError::TriggerSet { .. }) => match load_trigger_set(eval) {
                Ok(queries) => {
                    let tally = report.tally("trigger set");
                    tally.loaded += 1;
                    tally.items += queries.len();
                }
                Err(error) => report.tally("trigger set").refused.push(Refusal {
                    path: eval.clone(),
                    reason: one_line(&error.to_string()),
                }),
            },
            Err(error) => report.tally("eval file").refused.push(Refusal {
                path: eval.clone(),
                reason: one_line(&error.to_string()),
            }),
        }
    }
    for task in &found.tasks {
        match load_eval_set(task, task) {
            Ok(set) => {
                let tally = report.tally("harbor task");
                tally.loaded += 1;
                tally.items += set.cases.len();
                tally.warned(&set.warnings);
            }
            Err(error) => report.tally("harbor task").refused.push(Refusal {
                path: task.clone(),
                reason: one_line(&error.to_string()),
            }),
        }
    }
    for plugin in &found.plugins {
        match crate::features::registry::surface::load_asset(
            plugin,
            CLAUDE_PLUGIN_MANIFEST,
            HostKind::Plugin,
        ) {
            Ok(_) => report.tally("plugin").loaded += 1,
            Err(error) => report.tally("plugin").refused.push(Refusal {
                path: plugin.join(CLAUDE_PLUGIN_MANIFEST),
                reason: one_line(&error.to_string()),
            }),
        }
    }
    for marketplace in &found.marketplaces {
        match check_marketplace(marketplace) {
            Ok(listed) => {
                let tally = report.tally("marketplace");
                tally.loaded += 1;
                tally.items += listed;
            }
            Err(reason) => report.tally("marketplace").refused.push(Refusal {
                path: marketplace.join(CLAUDE_MARKETPLACE_MANIFEST),
                reason: reason.to_string(),
            }),
        }
    }
    report
}

/// Why a marketplace is refused (the refusal's reason, one line).
#[derive(Debug, thiserror::Error)]
enum MarketplaceError {
    /// The manifest cannot be read.
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    /// The manifest is not JSON.
    #[error("not valid JSON: {0}")]
    Json(serde_json::Error),
    /// No `plugins` array.
    #[error("`plugins` must be an array of plugin entries")]
    NoPlugins,
    /// An entry without a name.
    #[error("plugins[{0}].name: is required")]
    NoName(usize),
    /// An entry whose local source folder does not exist.
    #[error("plugins[{index}].source: local folder `{folder}` does not exist")]
    MissingSource {
        /// The entry's index.
        index: usize,
        /// The source as written.
        folder: String,
    },
    /// An entry whose plugin is refused by its loader (the loader's message, one line).
    #[error("plugins[{index}]: {message}")]
    Plugin {
        /// The entry's index.
        index: usize,
        /// The loader's message, one line.
        message: String,
    },
    /// An entry without a source.
    #[error("plugins[{0}].source: is missing")]
    NoSource(usize),
}

/// Read a marketplace: `plugins` is a list of entries with a `name` and a `source` (a local
/// folder, which must exist, or a remote source object); returns the number of entries.
fn check_marketplace(dir: &Path) -> Result<usize, MarketplaceError> {
    let path = dir.join(CLAUDE_MARKETPLACE_MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(MarketplaceError::Read)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(MarketplaceError::Json)?;
    let plugins = value
        .get("plugins")
        .and_then(|p| p.as_array())
        .ok_or(MarketplaceError::NoPlugins)?;
    let root = value
        .pointer("/metadata/pluginRoot")
        .and_then(|r| r.as_str())
        .unwrap_or("");
    for (index, entry) in plugins.iter().enumerate() {
        if entry.get("name").and_then(|n| n.as_str()).is_none() {
            return Err(MarketplaceError::NoName(index));
        }
        match entry.get("source") {
            Some(serde_json::Value::String(source)) => {
                let relative =
                    if source.starts_with("./") || source.starts_with("../") || root.is_empty() {
                        PathBuf::from(source)
                    } else {
                        Path::new(root).join(source)
                    };
                let plugin = dir.join(relative);
                if !plugin.is_dir() {
                    return Err(MarketplaceError::MissingSource {
                        index,
                        folder: source.clone(),
                    });
                }
                if plugin.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
                    crate::features::registry::surface::load_asset(
                        &plugin,
                        CLAUDE_PLUGIN_MANIFEST,
                        HostKind::Plugin,
                    )
                    .map_err(|e| MarketplaceError::Plugin {
                        index,
                        message: one_line(&e.to_string()),
                    })?;
                }
            }
            Some(serde_json::Value::Object(_)) => {}
            _ => return Err(MarketplaceError::NoSource(index)),
        }
    }
    Ok(plugins.len())
}

/// The report of several folders as text: per folder, per kind loaded / refused (with each
/// refusal's reason), then the totals per kind and overall.
pub(crate) fn render(reports: &[FolderReport]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let mut totals: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for report in reports {
        let _ = writeln!(out, "{}", report.dir.display());
        for kind in KINDS {
            let tally = &report.kinds[*kind];
            let entry = totals.entry(kind).or_default();
            entry.0 += tally.loaded;
            entry.1 += tally.refused.len();
            entry.2 += tally.items;
            if tally.loaded + tally.refused.len() == 0 {
                continue;
            }
            let items = match *kind {
                "eval file" | "harbor task" => format!(", {} cases", tally.items),
                "trigger set" => format!(", {} queries", tally.items),
                "marketplace" => format!(", {} plugins listed", tally.items),
                _ => String::new(),
            };
            let warned = if tally.with_warnings > 0 {
                let kinds: Vec<String> = tally
                    .warning_kinds
                    .iter()
                    .map(|(kind, count)| format!("{kind} {count}"))
                    .collect();
                format!(
                    " ({} with warnings: {})",
                    tally.with_warnings,
                    kinds.join(", ")
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  {kind}: {} loaded{warned}, {} refused{items}",
                tally.loaded,
                tally.refused.len()
            );
            for refusal in &tally.refused {
                let _ = writeln!(
                    out,
                    "    refused {}: {}",
                    refusal.path.display(),
                    refusal.reason
                );
            }
        }
        let (loaded, refused) = report.totals();
        let _ = writeln!(out, "  total: {loaded} loaded, {refused} refused\n");
    }
    let _ = writeln!(out, "Total over {} folder(s):", reports.len());
    let (mut all_loaded, mut all_refused) = (0, 0);
    for kind in KINDS {
        let (loaded, refused, _) = totals.get(kind).copied().unwrap_or_default();
        all_loaded += loaded;
        all_refused += refused;
        let _ = writeln!(out, "  {kind}: {loaded} loaded, {refused} refused");
    }
    let _ = writeln!(out, "  all: {all_loaded} loaded, {all_refused} refused");
    out
}

/// A folder given to `skill-lift formats check` that is not a folder (an input error).
#[derive(Debug, thiserror::Error)]
#[error("{}: not a folder", .0.display())]
pub(crate) struct NotAFolder(pub PathBuf);

/// Run `skill-lift formats check`: check every folder of `dirs` ([`check_folder`]) and print
/// the counts on stdout, as text ([`render`]) or pretty JSON. Returns how many inputs were
/// refused.
pub(crate) fn check_command(dirs: &[PathBuf], json: bool) -> Result<usize, NotAFolder> {
    if let Some(dir) = dirs.iter().find(|dir| !dir.is_dir()) {
        return Err(NotAFolder(dir.clone()));
    }
    let reports: Vec<_> = dirs.iter().map(|dir| check_folder(dir)).collect();
    if json {
        let text = serde_json::to_string_pretty(&reports).expect("folder reports serialize");
        crate::values::reporter::result_line(&text);
    } else {
        crate::values::reporter::result(&render(&reports));
    }
    Ok(reports.iter().map(|r| r.totals().1).sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::write_file as write;

    #[test]
    fn counts_each_kind_and_names_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            &root.join("skills/a/SKILL.md"),
            "---\nname: a\ndescription: Does a.\n---\nBody\n",
        );
        write(
            &root.join("skills/a/evals/evals.json"),
            r#"{"skill_name": "a", "evals": [{"id": 1, "prompt": "p", "expected_output": "x"}]}"#,
        );
        write(
            &root.join("skills/a/evals/triggers.json"),
            r#"{"skill_name": "a", "queries": [{"query": "q", "should_trigger": true}]}"#,
        );
        write(&root.join("skills/a/evals/broken.json"), r#"{"evals": 3}"#);
        let report = check_folder(root);
        assert_eq!(report.kinds["skill"].loaded, 1);
        assert_eq!(report.kinds["eval file"].loaded, 1);
        assert_eq!(report.kinds["trigger set"].loaded, 1);
        assert_eq!(report.kinds["trigger set"].items, 1);
        assert_eq!(report.kinds["eval file"].refused.len(), 1);
        assert!(
            report.kinds["eval file"].refused[0]
                .reason
                .contains("evals: must be an array")
        );
        let text = render(&[report]);
        assert!(text.contains("all: 3 loaded, 1 refused"), "{text}");
    }

    #[test]
    fn a_path_that_is_not_a_folder_is_refused_before_any_check() {
        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let error = check_command(&[temp.path().to_path_buf(), file.clone()], true).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{}: not a folder", file.display())
        );
    }
}
