//! Capability surfaces: what an asset *declares* it offers, read from its manifests, and the diff
//! between two scans. A surface is declared, not observed: a manifest that lies is not caught here
//! (that is `probe`'s and `run`'s job).
//!
//! Plugins: `patch` (`dsh.bundle.patch`, `cordis.patch.yml`), `main` (`main`/`module`), `bin`,
//! `exports`, `deps`, `skills`, `mcp`, `hooks`, `insert` (cordis rows), `scripts`.
//! Claude Code plugins (`.claude-plugin/plugin.json`, or an entry of a marketplace's
//! `.claude-plugin/marketplace.json`): `commands`, `agents`, `skills`, `hooks` (event names),
//! `mcp` (server names), `lsp` (server names), `scripts` (bundled files under `scripts/`, `bin/`).
//! Skills: `tools` (allowed-tools), `scripts` (files under `scripts/`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RegistryError;
use super::hosts::{
    CLAUDE_MARKETPLACE_MANIFEST, CLAUDE_PLUGIN_MANIFEST, DiscoveredAsset, HostKind,
};
use crate::features::asset::fingerprint::{Calibre, selected_files};

/// Category → sorted item names. Empty categories are omitted.
pub type Surface = BTreeMap<String, Vec<String>>;

/// The plugin surface categories, in report order.
pub const PLUGIN_CATEGORIES: [&str; 13] = [
    "patch", "main", "bin", "exports", "deps", "commands", "agents", "skills", "mcp", "lsp",
    "hooks", "insert", "scripts",
];
/// The skill surface categories.
pub const SKILL_CATEGORIES: [&str; 2] = ["tools", "scripts"];

/// Whether an asset is a skill or a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssetKind {
    Skill,
    Plugin,
}

/// An asset's identity and declared surface, read from its manifests (no hashing).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedAsset {
    pub name: String,
    pub kind: AssetKind,
    pub description: String,
    pub version: Option<String>,
    pub surface: Surface,
}

fn read_object(path: &Path) -> Result<Option<serde_json::Map<String, Value>>, RegistryError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(RegistryError::io(path)(error)),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(RegistryError::Invalid {
            path: path.to_path_buf(),
            message: "a plugin manifest must be a JSON object".to_string(),
        }),
        Err(error) => Err(RegistryError::BadJson {
            path: path.to_path_buf(),
            what: "a plugin manifest",
            message: error.to_string(),
        }),
    }
}

/// Names declared by a JSON value: object keys, array items (strings, or objects' `name`/`id`),
/// or a single string.
fn names_of(value: &Value, single: &str) -> Vec<String> {
    match value {
        Value::Object(map) => map.keys().cloned().collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(|item| match item {
                Value::String(s) => Some(s.clone()),
                Value::Object(map) => map
                    .get("name")
                    .or_else(|| map.get("id"))
                    .or_else(|| map.get("path"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                _ => None,
            })
            .collect(),
        Value::String(s) if single.is_empty() => vec![s.clone()],
        Value::String(_) => vec![single.to_string()],
        Value::Null => vec![],
        other => vec![other.to_string()],
    }
}

fn insert(surface: &mut Surface, category: &str, items: impl IntoIterator<Item = String>) {
    let entry = surface.entry(category.to_string()).or_default();
    entry.extend(items);
    let set: BTreeSet<String> = entry.drain(..).collect();
    entry.extend(set);
    if entry.is_empty() {
        surface.remove(category);
    }
}

/// Files under `dir/scripts/`, with the fingerprint module's exclusions.
fn script_files(dir: &Path) -> Result<Vec<String>, RegistryError> {
    let scripts = dir.join("scripts");
    if !scripts.is_dir() {
        return Ok(Vec::new());
    }
    Ok(selected_files(&scripts, Calibre::V3AgentSkills)?)
}

/// Load a discovered asset (Claude Code plugins listed by a marketplace carry its entry).
pub fn load_discovered(
    found: &DiscoveredAsset,
    host_kind: HostKind,
) -> Result<LoadedAsset, RegistryError> {
    if found.manifest == CLAUDE_PLUGIN_MANIFEST || found.manifest == CLAUDE_MARKETPLACE_MANIFEST {
        return load_claude_plugin(
            &found.dir,
            found.marketplace_entry.as_ref(),
            found.name.as_deref(),
        );
    }
    load_asset(&found.dir, &found.manifest, host_kind)
}

/// Load the asset in `dir`, recognised by `manifest` (the host decides which manifest counts).
pub fn load_asset(
    dir: &Path,
    manifest: &str,
    host_kind: HostKind,
) -> Result<LoadedAsset, RegistryError> {
    let is_skill =
        manifest == "SKILL.md" || (host_kind == HostKind::Skill && dir.join("SKILL.md").is_file());
    if manifest == CLAUDE_PLUGIN_MANIFEST || manifest == CLAUDE_MARKETPLACE_MANIFEST {
        return load_claude_plugin(dir, None, None);
    }
    if is_skill {
        let skill = crate::features::asset::load_skill(dir)?;
        let mut surface = Surface::new();
        insert(&mut surface, "tools", skill.allowed_tools.iter().cloned());
        insert(&mut surface, "scripts", script_files(dir)?);
        return Ok(LoadedAsset {
            name: skill.name,
            kind: AssetKind::Skill,
            description: skill.description,
            version: skill.metadata.get("version").cloned(),
            surface,
        });
    }
    load_plugin(dir)
}

fn load_plugin(dir: &Path) -> Result<LoadedAsset, RegistryError> {
    let package = read_object(&dir.join("package.json"))?.unwrap_or_default();
    let plugin = read_object(&dir.join("plugin.json"))?.unwrap_or_default();
    let manifest = read_object(&dir.join("manifest.json"))?.unwrap_or_default();
    let field = |key: &str| {
        plugin
            .get(key)
            .or_else(|| manifest.get(key))
            .or_else(|| package.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = field("name").unwrap_or(folder);
    let mut surface = Surface::new();

    if let Some(patch) = package
        .get("dsh")
        .and_then(|d| d.get("bundle"))
        .and_then(|b| b.get("patch"))
    {
        insert(&mut surface, "patch", names_of(patch, ""));
    }
    if dir.join("cordis.patch.yml").is_file() {
        insert(&mut surface, "patch", ["cordis.patch.yml".to_string()]);
        insert(
            &mut surface,
            "insert",
            cordis_rows(&dir.join("cordis.patch.yml"))?,
        );
    }
    for key in ["main", "module"] {
        if let Some(value) = package.get(key).and_then(Value::as_str) {
            insert(&mut surface, "main", [format!("{key}={value}")]);
        }
    }
    if let Some(bin) = package.get("bin") {
        insert(&mut surface, "bin", names_of(bin, &name));
    }
    if let Some(exports) = package.get("exports") {
        let items = match exports {
            Value::Object(map) if map.keys().any(|k| k.starts_with('.')) => {
                map.keys().cloned().collect()
            }
            Value::Null => vec![],
            _ => vec![".".to_string()],
        };
        insert(&mut surface, "exports", items);
    }
    if let Some(deps) = package.get("dependencies") {
        insert(&mut surface, "deps", names_of(deps, ""));
    }
    for source in [&plugin, &manifest, &package] {
        if let Some(skills) = source.get("skills") {
            insert(&mut surface, "skills", names_of(skills, ""));
        }
        for key in ["mcpServers", "mcp"] {
            if let Some(mcp) = source.get(key) {
                insert(&mut surface, "mcp", names_of(mcp, key));
            }
        }
        if let Some(hooks) = source.get("hooks") {
            insert(&mut surface, "hooks", names_of(hooks, "hooks"));
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("skills")) {
        let found = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join("SKILL.md").is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned());
        insert(&mut surface, "skills", found);
    }
    if let Some(mcp) = read_object(&dir.join(".mcp.json"))? {
        let servers = mcp.get("mcpServers").cloned().unwrap_or(Value::Object(mcp));
        insert(&mut surface, "mcp", names_of(&servers, ""));
    }
    if let Some(hooks) = read_object(&dir.join("hooks/hooks.json"))? {
        let events = hooks.get("hooks").cloned().unwrap_or(Value::Object(hooks));
        insert(&mut surface, "hooks", names_of(&events, ""));
    }
    if let Some(scripts) = package.get("scripts") {
        insert(&mut surface, "scripts", names_of(scripts, ""));
    }
    insert(
        &mut surface,
        "scripts",
        script_files(dir)?
            .into_iter()
            .map(|f| format!("scripts/{f}")),
    );
    Ok(LoadedAsset {
        name,
        kind: AssetKind::Plugin,
        description: field("description").unwrap_or_default(),
        version: field("version"),
        surface,
    })
}

/// Markdown files directly in `dir` (or one level of sub-folders, `commands/git/commit.md`
/// → `git/commit`), without the `.md` extension.
fn markdown_names(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return names;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() && !name.starts_with('.') {
            for inner in markdown_names(&path) {
                names.push(format!("{name}/{inner}"));
            }
        } else if let Some(stem) = name.strip_suffix(".md") {
            names.push(stem.to_string());
        }
    }
    names
}

/// A manifest value naming plugin-relative paths: a string or a list of strings.
fn declared_paths(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(path)) => vec![path.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// A plugin-relative path (`./skills/`) resolved inside `dir`; `None` when it leaves it.
fn inside(dir: &Path, relative: &str) -> Option<std::path::PathBuf> {
    let relative = relative.replace("${CLAUDE_PLUGIN_ROOT}", ".");
    let path = Path::new(&relative);
    if path.is_absolute()
        || path
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return None;
    }
    Some(dir.join(path))
}

/// Files (relative to `dir`, `/`-separated, sorted) that a marketplace entry names through its
/// component keys (`commands`, `agents`, `skills`, `hooks`, `mcpServers`, `lspServers`,
/// `outputStyles`): a named file, or the files of a named folder as `calibre` selects them.
/// Paths that leave `dir` or do not exist name nothing.
pub fn entry_named_files(
    dir: &Path,
    entry: &Value,
    calibre: Calibre,
) -> Result<Vec<String>, RegistryError> {
    const KEYS: [&str; 7] = [
        "commands",
        "agents",
        "skills",
        "hooks",
        "mcpServers",
        "lspServers",
        "outputStyles",
    ];
    let mut found = BTreeSet::new();
    for key in KEYS {
        for declared in declared_paths(entry.get(key)) {
            let Some(path) = inside(dir, &declared) else {
                continue;
            };
            let relative: Vec<String> = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .components()
                .filter_map(|c| match c {
                    std::path::Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
                    _ => None,
                })
                .collect();
            let relative = relative.join("/");
            if path.is_file() {
                found.insert(relative);
            } else if path.is_dir() {
                for file in selected_files(&path, calibre)? {
                    found.insert(if relative.is_empty() {
                        file
                    } else {
                        format!("{relative}/{file}")
                    });
                }
            }
        }
    }
    Ok(found.into_iter().collect())
}

/// `value` as JSON with every object's keys sorted and no whitespace: the same bytes for the
/// same meaning, whatever order the file wrote the keys in.
pub fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|key| {
                    format!(
                        "{}:{}",
                        Value::String(key.clone()),
                        canonical_json(&map[key])
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(canonical_json)
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => other.to_string(),
    }
}

/// Skills declared by a path: the folder itself when it holds `SKILL.md`, else its sub-folders
/// that do (`"skills": "./skills/"` is a folder of skills, not a skill named `./skills/`).
fn skills_at(path: &Path) -> Vec<String> {
    if path.join("SKILL.md").is_file() {
        return crate::features::asset::load_skill(path)
            .map(|skill| skill.name)
            .ok()
            .or_else(|| path.file_name().map(|n| n.to_string_lossy().into_owned()))
            .into_iter()
            .collect();
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("SKILL.md").is_file())
        .map(|p| {
            crate::features::asset::load_skill(&p)
                .map(|skill| skill.name)
                .unwrap_or_else(|_| {
                    p.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned()
                })
        })
        .collect()
}

/// Hook event names of a `hooks` value: an inline `{"hooks": {Event: […]}}` / `{Event: […]}`
/// object, or a path to such a JSON file.
fn hook_events(dir: &Path, value: &Value) -> Result<Vec<String>, RegistryError> {
    let mut events = Vec::new();
    let mut from_object = |object: &serde_json::Map<String, Value>| {
        let inner = object
            .get("hooks")
            .and_then(Value::as_object)
            .unwrap_or(object);
        events.extend(inner.keys().filter(|k| *k != "description").cloned());
    };
    match value {
        Value::Object(object) => from_object(object),
        other => {
            for path in declared_paths(Some(other)) {
                if let Some(path) = inside(dir, &path)
                    && let Some(object) = read_object(&path)?
                {
                    from_object(&object);
                }
            }
        }
    }
    Ok(events)
}

/// Server names of an `mcpServers` / `lspServers` value: an inline object (optionally wrapped
/// in `{"mcpServers": …}`), or a path to such a JSON file.
fn server_names(dir: &Path, value: &Value, wrapper: &str) -> Result<Vec<String>, RegistryError> {
    let unwrap = |object: serde_json::Map<String, Value>| match object.get(wrapper) {
        Some(Value::Object(inner)) => inner.keys().cloned().collect::<Vec<_>>(),
        _ => object.keys().cloned().collect(),
    };
    match value {
        Value::Object(object) => Ok(unwrap(object.clone())),
        other => {
            let mut names = Vec::new();
            for path in declared_paths(Some(other)) {
                if let Some(path) = inside(dir, &path)
                    && let Some(object) = read_object(&path)?
                {
                    names.extend(unwrap(object));
                }
            }
            Ok(names)
        }
    }
}

/// A Claude Code plugin: `.claude-plugin/plugin.json` (optional when a marketplace entry
/// defines the plugin) plus the default folders `commands/`, `agents/`, `skills/`,
/// `hooks/hooks.json`, `.mcp.json`, `.lsp.json`, and bundled `scripts/` / `bin/` files.
/// Paths declared in the manifest (`"skills": "./skills/"`, `"commands": ["./extra/x.md"]`)
/// add to the defaults. The name is the manifest's, else the entry's, else `fallback_name` (the
/// host's record), else the folder's.
fn load_claude_plugin(
    dir: &Path,
    entry: Option<&Value>,
    fallback_name: Option<&str>,
) -> Result<LoadedAsset, RegistryError> {
    let manifest = read_object(&dir.join(CLAUDE_PLUGIN_MANIFEST))?.unwrap_or_default();
    let entry = entry
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let field = |key: &str| manifest.get(key).or_else(|| entry.get(key));
    let text = |key: &str| field(key).and_then(Value::as_str).map(str::to_string);
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = text("name")
        .or_else(|| fallback_name.map(str::to_string))
        .unwrap_or(folder);
    let mut surface = Surface::new();

    let mut commands = markdown_names(&dir.join("commands"));
    let mut agents = markdown_names(&dir.join("agents"));
    let mut skills = skills_at(&dir.join("skills"));
    for (key, list) in [("commands", &mut commands), ("agents", &mut agents)] {
        for path in declared_paths(field(key)) {
            let Some(path) = inside(dir, &path) else {
                continue;
            };
            if path.is_dir() {
                list.extend(markdown_names(&path));
            } else if let Some(stem) = path.file_stem() {
                list.push(stem.to_string_lossy().into_owned());
            }
        }
    }
    for path in declared_paths(field("skills")) {
        if let Some(path) = inside(dir, &path) {
            skills.extend(skills_at(&path));
        }
    }
    insert(&mut surface, "commands", commands);
    insert(&mut surface, "agents", agents);
    insert(&mut surface, "skills", skills);

    let mut hooks = Vec::new();
    if let Some(object) = read_object(&dir.join("hooks/hooks.json"))? {
        hooks.extend(hook_events(dir, &Value::Object(object))?);
    }
    if let Some(value) = field("hooks") {
        hooks.extend(hook_events(dir, value)?);
    }
    insert(&mut surface, "hooks", hooks);

    let mut mcp = Vec::new();
    if let Some(object) = read_object(&dir.join(".mcp.json"))? {
        mcp.extend(server_names(dir, &Value::Object(object), "mcpServers")?);
    }
    if let Some(value) = field("mcpServers") {
        mcp.extend(server_names(dir, value, "mcpServers")?);
    }
    insert(&mut surface, "mcp", mcp);

    let mut lsp = Vec::new();
    if let Some(object) = read_object(&dir.join(".lsp.json"))? {
        lsp.extend(server_names(dir, &Value::Object(object), "lspServers")?);
    }
    if let Some(value) = field("lspServers") {
        lsp.extend(server_names(dir, value, "lspServers")?);
    }
    insert(&mut surface, "lsp", lsp);

    let mut scripts: Vec<String> = script_files(dir)?
        .into_iter()
        .map(|f| format!("scripts/{f}"))
        .collect();
    if dir.join("bin").is_dir() {
        scripts.extend(
            selected_files(&dir.join("bin"), Calibre::V3AgentSkills)?
                .into_iter()
                .map(|f| format!("bin/{f}")),
        );
    }
    insert(&mut surface, "scripts", scripts);

    Ok(LoadedAsset {
        name,
        kind: AssetKind::Plugin,
        description: text("description").unwrap_or_default(),
        version: text("version"),
        surface,
    })
}

/// Rows of the `insert` list of a `cordis.patch.yml` (each row's `id`/`name`/`table`, else the
/// row rendered compactly).
fn cordis_rows(path: &Path) -> Result<Vec<String>, RegistryError> {
    let text = std::fs::read_to_string(path).map_err(RegistryError::io(path))?;
    let value: serde_norway::Value =
        serde_norway::from_str(&text).map_err(|error| RegistryError::Invalid {
            path: path.to_path_buf(),
            message: format!("not valid YAML: {error}"),
        })?;
    let rows = match value.get("insert") {
        Some(serde_norway::Value::Sequence(rows)) => rows.clone(),
        _ => return Ok(Vec::new()),
    };
    Ok(rows
        .iter()
        .enumerate()
        .map(|(index, row)| {
            ["id", "name", "table", "key"]
                .iter()
                .find_map(|key| row.get(*key).and_then(|v| v.as_str()).map(str::to_string))
                .unwrap_or_else(|| format!("row-{}", index + 1))
        })
        .collect())
}

/// One category's change between two surfaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CategoryChange {
    pub category: String,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl CategoryChange {
    /// Compact form: `+bin` (category appeared), `-bin` (disappeared), `deps(+a -b)`.
    pub fn compact(&self, old_empty: bool, new_empty: bool) -> String {
        if old_empty && !new_empty {
            format!("+{}", self.category)
        } else if new_empty && !old_empty {
            format!("-{}", self.category)
        } else {
            let items: Vec<String> = self
                .added
                .iter()
                .map(|a| format!("+{a}"))
                .chain(self.removed.iter().map(|r| format!("-{r}")))
                .collect();
            format!("{}({})", self.category, items.join(" "))
        }
    }
}

/// Category changes from `old` to `new`, in category name order.
pub fn diff(old: &Surface, new: &Surface) -> Vec<CategoryChange> {
    let categories: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let empty = Vec::new();
    categories
        .into_iter()
        .filter_map(|category| {
            let before: BTreeSet<&String> = old.get(category).unwrap_or(&empty).iter().collect();
            let after: BTreeSet<&String> = new.get(category).unwrap_or(&empty).iter().collect();
            let added: Vec<String> = after.difference(&before).map(|s| s.to_string()).collect();
            let removed: Vec<String> = before.difference(&after).map(|s| s.to_string()).collect();
            (!added.is_empty() || !removed.is_empty()).then(|| CategoryChange {
                category: category.clone(),
                added,
                removed,
            })
        })
        .collect()
}

/// The compact tokens of a diff (`+bin`, `deps(+a)`), as printed in the `[caps]` block.
pub fn diff_tokens(old: &Surface, new: &Surface) -> Vec<String> {
    diff(old, new)
        .iter()
        .map(|change| {
            change.compact(
                !old.contains_key(&change.category),
                !new.contains_key(&change.category),
            )
        })
        .collect()
}

/// Total declared items: the "size" of the surface (a maintenance-surface proxy).
pub fn surface_size(surface: &Surface) -> usize {
    surface.values().map(Vec::len).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::write;

    #[test]
    fn plugin_surface_reads_every_category() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("plug-a");
        write(
            &root,
            "package.json",
            r#"{"name": "plug-a", "version": "1.1.0", "main": "dist/index.js",
                "bin": {"plug": "bin/plug.js"}, "exports": {".": "./dist/index.js", "./x": "./x.js"},
                "dependencies": {"left-pad": "1"}, "scripts": {"build": "tsc"},
                "dsh": {"bundle": {"patch": ["p1"]}}}"#,
        );
        write(
            &root,
            "plugin.json",
            r#"{"skills": ["s1"], "mcpServers": {"srv": {}}, "hooks": {"PreToolUse": []}}"#,
        );
        write(
            &root,
            "cordis.patch.yml",
            "insert:\n  - id: row-a\n  - name: row-b\n",
        );
        write(&root, "scripts/go.sh", "echo");
        let asset = load_asset(&root, "package.json", HostKind::Plugin).unwrap();
        assert_eq!(asset.name, "plug-a");
        assert_eq!(asset.kind, AssetKind::Plugin);
        let s = &asset.surface;
        assert_eq!(s["bin"], vec!["plug"]);
        assert_eq!(s["exports"], vec![".", "./x"]);
        assert_eq!(s["deps"], vec!["left-pad"]);
        assert_eq!(s["main"], vec!["main=dist/index.js"]);
        assert_eq!(s["patch"], vec!["cordis.patch.yml", "p1"]);
        assert_eq!(s["insert"], vec!["row-a", "row-b"]);
        assert_eq!(s["skills"], vec!["s1"]);
        assert_eq!(s["mcp"], vec!["srv"]);
        assert_eq!(s["hooks"], vec!["PreToolUse"]);
        assert_eq!(s["scripts"], vec!["build", "scripts/go.sh"]);
    }

    #[test]
    fn malformed_package_json_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "package.json", "{\"name\": ");
        let error = load_asset(dir.path(), "package.json", HostKind::Plugin).unwrap_err();
        assert!(error.to_string().contains("package.json"), "{error}");
        write(dir.path(), "package.json", "[1]");
        assert!(load_asset(dir.path(), "package.json", HostKind::Plugin).is_err());
    }

    #[test]
    fn diff_tokens_name_appearing_and_changed_categories() {
        let mut old = Surface::new();
        old.insert("deps".into(), vec!["a".into()]);
        old.insert("hooks".into(), vec!["h".into()]);
        let mut new = old.clone();
        new.insert("bin".into(), vec!["plug".into()]);
        new.insert("deps".into(), vec!["b".into()]);
        new.remove("hooks");
        assert_eq!(
            diff_tokens(&old, &new),
            vec!["+bin", "deps(+b -a)", "-hooks"]
        );
        assert!(diff_tokens(&old, &old).is_empty());
    }

    #[test]
    fn skill_surface_counts_tools_and_scripts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("s");
        write(
            &root,
            "SKILL.md",
            "---\nname: s\ndescription: d\nallowed-tools: Read Bash\n---\n",
        );
        write(&root, "scripts/a.py", "1");
        write(&root, "scripts/README.md", "excluded");
        let asset = load_asset(&root, "SKILL.md", HostKind::Skill).unwrap();
        assert_eq!(asset.surface["tools"], vec!["Bash", "Read"]);
        assert_eq!(asset.surface["scripts"], vec!["a.py"]);
    }
}
