//! Claude Code's own record of what is installed under `~/.claude/plugins/`, read as Claude Code
//! reads it:
//!
//! - `installed_plugins.json`: `{"version": 2, "plugins": {"<name>@<marketplace>": [{"scope",
//!   "installPath", "version", "installedAt", "lastUpdated", "gitCommitSha", "projectPath",
//!   "isLocal"}]}}` (one entry per scope), or the older `{"version": 1, "plugins": {"<id>":
//!   {"version", "installPath", …}}}` (one object per plugin, user scope). The installed copy is
//!   the folder `installPath` names, not the newest folder under `cache/<marketplace>/<plugin>/`
//!   (Claude Code names those folders by the manifest's `version`, or by commit sha when there is
//!   none, so folder order says nothing). An `installed_plugins_v2.json` beside it is read when
//!   `installed_plugins.json` is missing (a transitional name some versions wrote).
//! - `known_marketplaces.json`: `{"<marketplace>": {"source", "installLocation", "lastUpdated"}}`:
//!   where each marketplace's clone (or local folder) is.
//! - `enabledPlugins` in `settings.json` (user scope: the `settings.json` beside `plugins/`;
//!   project and local scopes: `<projectPath>/.claude/settings.json` / `settings.local.json`):
//!   `{"<id>": true | false}`. Claude Code loads a plugin only when an `enabledPlugins` entry
//!   turns it on; an installed plugin set to `false` (or not listed) stays on disk, not loaded.
//!
//! Recorded paths are absolute on the machine that wrote them; a recorded path under a
//! `plugins/` folder is looked up under the scanned `plugins/` folder first, so a copied or
//! mounted `~/.claude` reads the same. This module reads files only; discovery
//! (`super::hosts`) decides what is registered.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RegistryError;

/// `installed_plugins.json`, relative to the `plugins/` folder.
pub const INSTALLED_PLUGINS: &str = "installed_plugins.json";
/// The transitional name of the v2 file, read when [`INSTALLED_PLUGINS`] is missing.
pub const INSTALLED_PLUGINS_V2: &str = "installed_plugins_v2.json";
/// `known_marketplaces.json`, relative to the `plugins/` folder.
pub const KNOWN_MARKETPLACES: &str = "known_marketplaces.json";

/// Whether Claude Code loads an installed plugin, from `enabledPlugins`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginEnabled {
    /// `enabledPlugins` sets it to `true`.
    Enabled,
    /// `enabledPlugins` sets it to `false`: installed, not loaded.
    Disabled,
    /// The settings file was read and does not list it: installed, not loaded.
    NotListed,
    /// No settings file to read (or no install record): not known.
    Unknown,
}

impl PluginEnabled {
    /// Whether Claude Code loads the plugin (`None` when not known).
    pub fn loads(self) -> Option<bool> {
        match self {
            Self::Enabled => Some(true),
            Self::Disabled | Self::NotListed => Some(false),
            Self::Unknown => None,
        }
    }

    /// A short phrase for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Enabled => "enabled",
            Self::Disabled => "disabled (enabledPlugins: false)",
            Self::NotListed => "not enabled (not in enabledPlugins)",
            Self::Unknown => "enabled state unknown (no settings file)",
        }
    }
}

/// How Claude Code recorded one installed plugin, kept on its registry entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallRecord {
    /// `<name>@<marketplace>`.
    pub id: String,
    /// `user`, `managed`, `project` or `local` (v1 files: `user`).
    pub scope: String,
    /// The project of a `project` / `local` install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_path: Option<PathBuf>,
    /// The version Claude Code recorded (a semver, or a commit sha).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The commit Claude Code recorded, when the source was git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit_sha: Option<String>,
    /// Whether `enabledPlugins` turns it on.
    pub enabled: PluginEnabled,
    /// The settings file `enabled` was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<PathBuf>,
    /// The record file (`installed_plugins.json`), or `None` when no record existed and the
    /// cache folder was taken as installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_in: Option<PathBuf>,
}

/// One installed plugin as `installed_plugins.json` records it (the scope chosen, see
/// [`read_installed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct InstalledPlugin {
    /// `<name>@<marketplace>`.
    pub id: String,
    pub name: String,
    pub marketplace: String,
    pub scope: String,
    pub project_path: Option<PathBuf>,
    /// `installPath` as recorded.
    pub install_path: String,
    pub version: Option<String>,
    pub git_commit_sha: Option<String>,
}

/// Scope preference when a plugin is installed in several: the user's own first.
const SCOPE_ORDER: [&str; 4] = ["user", "managed", "local", "project"];

fn text(entry: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    entry.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Read `plugins/installed_plugins.json` (or `installed_plugins_v2.json`): `Ok(None)` when
/// neither exists. A plugin installed in several scopes is returned once, in the first of
/// user, managed, local, project. A file that is not JSON, has a `version` other than 1 or 2,
/// or an entry without `installPath` is an error naming the file (nothing is then taken as
/// installed: fail closed).
pub fn read_installed(
    plugins: &Path,
) -> Result<Option<(PathBuf, Vec<InstalledPlugin>)>, RegistryError> {
    let mut path = plugins.join(INSTALLED_PLUGINS);
    if !path.is_file() && plugins.join(INSTALLED_PLUGINS_V2).is_file() {
        path = plugins.join(INSTALLED_PLUGINS_V2);
    }
    let text_of_file = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(RegistryError::io(&path)(error)),
    };
    let value: Value = serde_json::from_str(&text_of_file).map_err(|e| RegistryError::BadJson {
        path: path.clone(),
        what: "Claude Code's installed-plugins record",
        message: e.to_string(),
    })?;
    let invalid = |message: String| RegistryError::Invalid {
        path: path.clone(),
        message,
    };
    match value.get("version") {
        None | Some(Value::Null) => {}
        Some(version) if version.as_u64().is_some_and(|v| v == 1 || v == 2) => {}
        Some(other) => {
            return Err(invalid(format!(
                "`version` {other} is not one skill-lift reads (1, 2); nothing was taken as installed"
            )));
        }
    }
    let Some(plugins_map) = value.get("plugins").and_then(Value::as_object) else {
        return Err(invalid(
            "`plugins` must be an object of `<name>@<marketplace>` → install entries".to_string(),
        ));
    };
    let mut found = Vec::new();
    for (id, entries) in plugins_map {
        // v1: one object; v2: an array of objects, one per scope.
        let entries: Vec<&serde_json::Map<String, Value>> = match entries {
            Value::Object(object) => vec![object],
            Value::Array(items) => items.iter().filter_map(Value::as_object).collect(),
            _ => {
                return Err(invalid(format!(
                    "plugins[\"{id}\"] must be an install entry or a list of them"
                )));
            }
        };
        let Some(chosen) = entries.iter().min_by_key(|entry| {
            let scope = text(entry, "scope").unwrap_or_else(|| "user".to_string());
            SCOPE_ORDER
                .iter()
                .position(|s| *s == scope)
                .unwrap_or(SCOPE_ORDER.len())
        }) else {
            continue;
        };
        let Some(install_path) = text(chosen, "installPath") else {
            return Err(invalid(format!(
                "plugins[\"{id}\"]: `installPath` is missing"
            )));
        };
        let (name, marketplace) = id.rsplit_once('@').unwrap_or((id.as_str(), ""));
        found.push(InstalledPlugin {
            id: id.clone(),
            name: name.to_string(),
            marketplace: marketplace.to_string(),
            scope: text(chosen, "scope").unwrap_or_else(|| "user".to_string()),
            project_path: text(chosen, "projectPath").map(PathBuf::from),
            install_path,
            version: text(chosen, "version"),
            git_commit_sha: text(chosen, "gitCommitSha"),
        });
    }
    Ok(Some((path, found)))
}

/// A path Claude Code recorded (absolute on the machine that wrote it, possibly `~/…`),
/// resolved on this machine: when it runs through a `plugins/` folder (`…/plugins/cache/…`,
/// `…/plugins/marketplaces/…`), the same place under the scanned `plugins` folder first; else
/// the path itself (with `~` expanded). `None` when neither exists.
pub fn resolve_recorded(plugins: &Path, recorded: &str) -> Option<PathBuf> {
    let normal = recorded.replace('\\', "/");
    for marker in ["/plugins/cache/", "/plugins/marketplaces/"] {
        if let Some(at) = normal.find(marker) {
            let inside = &normal[at + "/plugins/".len()..];
            let candidate = plugins.join(inside.trim_end_matches('/'));
            if candidate.exists() {
                return Some(candidate);
            }
        }
    }
    let own = super::state::expand_home(recorded).ok()?;
    own.exists().then_some(own)
}

/// `known_marketplaces.json`: marketplace name → its folder on this machine (see
/// [`resolve_recorded`]); entries whose folder is not found are left out. `Ok(empty)` when the
/// file is missing.
pub fn known_marketplaces(plugins: &Path) -> Result<BTreeMap<String, PathBuf>, RegistryError> {
    let path = plugins.join(KNOWN_MARKETPLACES);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(error) => return Err(RegistryError::io(&path)(error)),
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| RegistryError::BadJson {
        path: path.clone(),
        what: "Claude Code's known-marketplaces record",
        message: e.to_string(),
    })?;
    let Some(map) = value.as_object() else {
        return Err(RegistryError::Invalid {
            path,
            message: "must be an object of marketplace name → {source, installLocation}"
                .to_string(),
        });
    };
    Ok(map
        .iter()
        .filter_map(|(name, entry)| {
            let location = entry.get("installLocation")?.as_str()?;
            Some((name.clone(), resolve_recorded(plugins, location)?))
        })
        .collect())
}

/// `enabledPlugins` of one settings file: `Ok(None)` when the file is missing; an error when it
/// is not JSON. `true` (or any non-`false` value, as Claude Code's version-constraint forms)
/// enables, `false` disables.
pub fn enabled_plugins(settings: &Path) -> Result<Option<BTreeMap<String, bool>>, RegistryError> {
    let text = match std::fs::read_to_string(settings) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(RegistryError::io(settings)(error)),
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| RegistryError::BadJson {
        path: settings.to_path_buf(),
        what: "Claude Code settings",
        message: e.to_string(),
    })?;
    let map = match value.get("enabledPlugins") {
        Some(Value::Object(map)) => map
            .iter()
            .map(|(id, on)| (id.clone(), !matches!(on, Value::Bool(false) | Value::Null)))
            .collect(),
        // An older list form: the ids listed are enabled.
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(|id| (id.to_string(), true))
            .collect(),
        _ => BTreeMap::new(),
    };
    Ok(Some(map))
}

/// The settings file that decides whether a plugin installed in `scope` loads: the user's
/// `settings.json` beside `plugins/` for `user` (and `managed`, whose policy file is not under
/// `~/.claude`), `<project>/.claude/settings.json` for `project`,
/// `<project>/.claude/settings.local.json` for `local`.
pub fn settings_for(plugins: &Path, scope: &str, project: Option<&Path>) -> Option<PathBuf> {
    match (scope, project) {
        ("project", Some(project)) => Some(project.join(".claude/settings.json")),
        ("local", Some(project)) => Some(project.join(".claude/settings.local.json")),
        _ => plugins.parent().map(|claude| claude.join("settings.json")),
    }
}

/// Whether `id` loads according to `settings` (read once per file by the caller's cache).
pub fn enabled_state(
    cache: &mut BTreeMap<PathBuf, Option<BTreeMap<String, bool>>>,
    settings: Option<&Path>,
    id: &str,
) -> Result<PluginEnabled, RegistryError> {
    let Some(settings) = settings else {
        return Ok(PluginEnabled::Unknown);
    };
    if !cache.contains_key(settings) {
        let read = enabled_plugins(settings)?;
        cache.insert(settings.to_path_buf(), read);
    }
    Ok(match cache.get(settings).and_then(Option::as_ref) {
        None => PluginEnabled::Unknown,
        Some(map) => match map.get(id) {
            Some(true) => PluginEnabled::Enabled,
            Some(false) => PluginEnabled::Disabled,
            None => PluginEnabled::NotListed,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::write_file as write;

    #[test]
    fn reads_v1_and_v2_records_and_prefers_the_user_scope() {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        write(
            &plugins.join(INSTALLED_PLUGINS),
            r#"{"version": 1, "plugins": {"a@m": {"version": "1.0.0", "installedAt": "2025-10-01T00:00:00Z", "installPath": "/x/a"}}}"#,
        );
        let (_, found) = read_installed(&plugins).unwrap().unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].name.as_str(), found[0].marketplace.as_str()),
            ("a", "m")
        );
        assert_eq!(found[0].scope, "user");
        write(
            &plugins.join(INSTALLED_PLUGINS),
            r#"{"version": 2, "plugins": {"a@m": [
                {"scope": "project", "projectPath": "/p", "installPath": "/x/a/old", "version": "0.9"},
                {"scope": "user", "installPath": "/x/a/new", "version": "1.0", "gitCommitSha": "abc"}]}}"#,
        );
        let (_, found) = read_installed(&plugins).unwrap().unwrap();
        assert_eq!(found[0].install_path, "/x/a/new");
        assert_eq!(found[0].git_commit_sha.as_deref(), Some("abc"));
    }

    #[test]
    fn an_unknown_version_or_a_missing_install_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().to_path_buf();
        assert!(read_installed(&plugins).unwrap().is_none());
        write(
            &plugins.join(INSTALLED_PLUGINS),
            r#"{"version": 3, "plugins": {}}"#,
        );
        let error = read_installed(&plugins).unwrap_err().to_string();
        assert!(error.contains("installed_plugins.json") && error.contains("version"));
        write(
            &plugins.join(INSTALLED_PLUGINS),
            r#"{"version": 2, "plugins": {"a@m": [{"scope": "user"}]}}"#,
        );
        let error = read_installed(&plugins).unwrap_err().to_string();
        assert!(error.contains("installPath"), "{error}");
    }

    #[test]
    fn recorded_paths_are_found_under_the_scanned_plugins_folder() {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("copy/plugins");
        std::fs::create_dir_all(plugins.join("cache/m/a/1.0.0")).unwrap();
        assert_eq!(
            resolve_recorded(&plugins, "/Users/someone/.claude/plugins/cache/m/a/1.0.0"),
            Some(plugins.join("cache/m/a/1.0.0"))
        );
        assert_eq!(
            resolve_recorded(&plugins, "/Users/someone/.claude/plugins/cache/m/a/2.0.0"),
            None
        );
    }

    #[test]
    fn enabled_plugins_decide_loading() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        write(
            &settings,
            r#"{"enabledPlugins": {"a@m": true, "b@m": false}}"#,
        );
        let mut cache = BTreeMap::new();
        let state = |cache: &mut _, id| enabled_state(cache, Some(&settings), id).unwrap();
        assert_eq!(state(&mut cache, "a@m"), PluginEnabled::Enabled);
        assert_eq!(state(&mut cache, "b@m"), PluginEnabled::Disabled);
        assert_eq!(state(&mut cache, "c@m"), PluginEnabled::NotListed);
        let missing = dir.path().join("none.json");
        assert_eq!(
            enabled_state(&mut cache, Some(&missing), "a@m").unwrap(),
            PluginEnabled::Unknown
        );
    }
}
