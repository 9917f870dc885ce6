//! Host profiles: where an agent environment keeps its assets and how to recognise one.
//! Built-in profiles cover the common agents; `hosts.json` in the state folder adds or overrides
//! profiles with no code change. This module resolves roots and discovers asset folders; it never
//! reads an asset's contents beyond checking that a manifest file exists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::RegistryError;
use super::state::{expand_home, read_json};

/// What a host installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostKind {
    /// Folders holding `SKILL.md`.
    Skill,
    /// Folders holding a plugin manifest (`package.json`, `plugin.json`, `manifest.json`).
    Plugin,
    /// Either (the first manifest name found decides).
    Asset,
}

impl HostKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skill => "skill",
            Self::Plugin => "plugin",
            Self::Asset => "asset",
        }
    }
}

/// One host profile, resolved (built-in or from `hosts.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostProfile {
    /// The host's name (`claude-code`, `deepseek`, …); names the registry file.
    pub name: String,
    pub kind: HostKind,
    /// Default root (may start with `~`); `None` means `--root` is required.
    pub root: Option<String>,
    /// Manifest file names that make a folder an asset, in priority order.
    pub manifests: Vec<String>,
    /// Glob of the host's log files (may start with `~`), read by `probe`.
    pub logs: Option<String>,
    /// Installed plugins are the `dependencies` of `<root>/package.json`, found under
    /// `<root>/node_modules/<name>` (the DeepSeek desktop profile layout).
    pub deps_from_package_json: bool,
    /// `builtin` or the `hosts.json` path that defined it.
    pub source: String,
}

/// An entry of `hosts.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostEntry {
    kind: HostKind,
    #[serde(default)]
    root: Option<String>,
    #[serde(default)]
    manifests: Option<Vec<String>>,
    #[serde(default)]
    logs: Option<String>,
    #[serde(default)]
    deps_from_package_json: bool,
}

/// `hosts.json`: `{"hosts": {"<name>": {"kind": "plugin", "root": "~/x", "manifests": [...],
/// "logs": "~/x/logs/*.log"}}}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    hosts: BTreeMap<String, HostEntry>,
}

const SKILL_MANIFESTS: [&str; 1] = ["SKILL.md"];
const PLUGIN_MANIFESTS: [&str; 3] = ["plugin.json", "package.json", "manifest.json"];
const ASSET_MANIFESTS: [&str; 4] = ["SKILL.md", "plugin.json", "manifest.json", "package.json"];

fn default_manifests(kind: HostKind) -> Vec<String> {
    let names: &[&str] = match kind {
        HostKind::Skill => &SKILL_MANIFESTS,
        HostKind::Plugin => &PLUGIN_MANIFESTS,
        HostKind::Asset => &ASSET_MANIFESTS,
    };
    names.iter().map(|s| s.to_string()).collect()
}

fn builtin(name: &str, kind: HostKind, root: Option<&str>, logs: Option<&str>) -> HostProfile {
    HostProfile {
        name: name.to_string(),
        kind,
        root: root.map(str::to_string),
        manifests: default_manifests(kind),
        logs: logs.map(str::to_string),
        deps_from_package_json: false,
        source: "builtin".to_string(),
    }
}

/// The built-in host profiles.
pub fn builtin_hosts() -> Vec<HostProfile> {
    let mut deepseek = builtin(
        "deepseek",
        HostKind::Plugin,
        Some("~/.dsh/profiles/desktop"),
        Some("~/.dsh/logs/*.log"),
    );
    deepseek.deps_from_package_json = true;
    vec![
        builtin(
            "claude-code",
            HostKind::Skill,
            Some("~/.claude/skills"),
            None,
        ),
        builtin("codex", HostKind::Skill, Some("~/.codex/skills"), None),
        builtin("agents", HostKind::Skill, Some("~/.agents/skills"), None),
        builtin("gemini", HostKind::Skill, Some("~/.gemini/skills"), None),
        builtin(
            "opencode",
            HostKind::Skill,
            Some("~/.config/opencode/skills"),
            None,
        ),
        builtin("cursor", HostKind::Skill, Some("~/.cursor/skills"), None),
        builtin(
            "goose",
            HostKind::Skill,
            Some("~/.config/goose/skills"),
            None,
        ),
        builtin(
            "workbuddy",
            HostKind::Skill,
            Some("~/.workbuddy-ai/skills"),
            None,
        ),
        deepseek,
        builtin("generic", HostKind::Asset, None, None),
    ]
}

/// All host profiles: built-ins, then `hosts.json` entries (which replace a built-in of the same
/// name). A missing `hosts.json` is fine; a malformed one is an error naming it.
pub fn load_hosts(state_dir: &Path) -> Result<Vec<HostProfile>, RegistryError> {
    let path = hosts_file(state_dir);
    let mut hosts = builtin_hosts();
    let Some(file) = read_json::<HostsFile>(
        &path,
        "hosts.json (expected {\"hosts\": {NAME: {kind, root, manifests, logs}}})",
    )?
    else {
        return Ok(hosts);
    };
    for (name, entry) in file.hosts {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            return Err(RegistryError::Invalid {
                path: path.clone(),
                message: format!(
                    "host name `{name}` must use only letters, digits, `-`, `_` and `.` (it names registry.<host>.json)"
                ),
            });
        }
        let manifests = entry
            .manifests
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| default_manifests(entry.kind));
        let profile = HostProfile {
            name: name.clone(),
            kind: entry.kind,
            root: entry.root,
            manifests,
            logs: entry.logs,
            deps_from_package_json: entry.deps_from_package_json,
            source: path.display().to_string(),
        };
        match hosts.iter_mut().find(|h| h.name == name) {
            Some(existing) => *existing = profile,
            None => hosts.push(profile),
        }
    }
    Ok(hosts)
}

/// `hosts.json` in the state folder.
pub fn hosts_file(state_dir: &Path) -> PathBuf {
    state_dir.join("hosts.json")
}

/// Find a host by name.
pub fn find_host(state_dir: &Path, name: &str) -> Result<HostProfile, RegistryError> {
    let hosts = load_hosts(state_dir)?;
    let known = hosts
        .iter()
        .map(|h| h.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    hosts
        .into_iter()
        .find(|h| h.name == name)
        .ok_or_else(|| RegistryError::UnknownHost {
            name: name.to_string(),
            known,
            hosts_file: hosts_file(state_dir),
        })
}

impl HostProfile {
    /// The root to scan: `--root` when given, else the profile's default.
    pub fn resolve_root(&self, root_flag: Option<&Path>) -> Result<PathBuf, RegistryError> {
        if let Some(root) = root_flag {
            return Ok(root.to_path_buf());
        }
        match &self.root {
            Some(root) => expand_home(root),
            None => Err(RegistryError::NoRoot {
                host: self.name.clone(),
            }),
        }
    }

    /// The first of this host's manifest names present in `dir`.
    pub fn manifest_in(&self, dir: &Path) -> Option<String> {
        self.manifests
            .iter()
            .find(|name| dir.join(name).is_file())
            .cloned()
    }
}

/// One asset folder found under a host root.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredAsset {
    pub dir: PathBuf,
    /// The manifest that made it an asset (`SKILL.md`, `package.json`, …).
    pub manifest: String,
}

/// Asset folders under `root`: each immediate subfolder (hidden ones and the fingerprint
/// module's excluded folder names skipped) holding one of the host's manifests, plus, for
/// `deps_from_package_json` hosts, `<root>/node_modules/<dep>` for each dependency of
/// `<root>/package.json`. A missing root gives no assets. Sorted by path.
pub fn discover_assets(
    host: &HostProfile,
    root: &Path,
) -> Result<Vec<DiscoveredAsset>, RegistryError> {
    let mut found = Vec::new();
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(error) => return Err(RegistryError::io(root)(error)),
    };
    for entry in entries {
        let entry = entry.map_err(RegistryError::io(root))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || crate::asset::fingerprint::is_excluded_dir(&name) {
            continue;
        }
        let path = entry.path();
        // Follow a symlinked skill folder (hosts often link installed skills).
        if !path.is_dir() {
            continue;
        }
        if let Some(manifest) = host.manifest_in(&path) {
            found.push(DiscoveredAsset {
                dir: path,
                manifest,
            });
        }
    }
    if host.deps_from_package_json {
        let package = root.join("package.json");
        if let Some(value) = read_json::<serde_json::Value>(&package, "package.json")? {
            if let Some(deps) = value.get("dependencies").and_then(|d| d.as_object()) {
                for dep in deps.keys() {
                    let dir = root.join("node_modules").join(dep);
                    if let Some(manifest) = host.manifest_in(&dir)
                        && !found.iter().any(|f| f.dir == dir)
                    {
                        found.push(DiscoveredAsset { dir, manifest });
                    }
                }
            } else if value.get("dependencies").is_some_and(|d| !d.is_null()) {
                return Err(RegistryError::Invalid {
                    path: package,
                    message: "`dependencies` must be an object of name → version".to_string(),
                });
            }
        }
    }
    found.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_json_adds_and_overrides_profiles() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("hosts.json"),
            r#"{"hosts": {"my-host": {"kind": "plugin", "root": "/opt/p", "logs": "/opt/p/*.log"},
                          "codex": {"kind": "skill", "root": "/elsewhere"}}}"#,
        )
        .unwrap();
        let hosts = load_hosts(dir.path()).unwrap();
        let mine = hosts.iter().find(|h| h.name == "my-host").unwrap();
        assert_eq!(mine.kind, HostKind::Plugin);
        assert_eq!(mine.manifests, default_manifests(HostKind::Plugin));
        let codex = hosts.iter().find(|h| h.name == "codex").unwrap();
        assert_eq!(codex.root.as_deref(), Some("/elsewhere"));
        assert!(find_host(dir.path(), "nope").is_err());
    }

    #[test]
    fn malformed_hosts_json_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("hosts.json"),
            r#"{"hosts": {"x": {"kind": "robot"}}}"#,
        )
        .unwrap();
        let error = load_hosts(dir.path()).unwrap_err();
        assert!(error.to_string().contains("hosts.json"), "{error}");
    }

    #[test]
    fn discovers_skills_and_package_json_dependencies() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/SKILL.md"), "x").unwrap();
        std::fs::create_dir_all(root.join("not-an-asset")).unwrap();
        std::fs::create_dir_all(root.join("node_modules/@s/p")).unwrap();
        std::fs::write(root.join("node_modules/@s/p/package.json"), "{}").unwrap();
        std::fs::write(
            root.join("package.json"),
            r#"{"dependencies": {"@s/p": "1.0.0", "missing": "1"}}"#,
        )
        .unwrap();
        let skill_host = builtin_hosts().remove(0);
        let found = discover_assets(&skill_host, root).unwrap();
        assert_eq!(found.len(), 1);
        let deepseek = builtin_hosts()
            .into_iter()
            .find(|h| h.name == "deepseek")
            .unwrap();
        let found = discover_assets(&deepseek, root).unwrap();
        assert_eq!(found.len(), 1);
        assert!(found[0].dir.ends_with("node_modules/@s/p"));
        assert!(
            discover_assets(&skill_host, &root.join("missing"))
                .unwrap()
                .is_empty()
        );
    }
}
