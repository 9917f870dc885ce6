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
    /// Also find Claude Code plugins (`.claude-plugin/plugin.json`), marketplaces
    /// (`.claude-plugin/marketplace.json`) and the Claude config layout under the root
    /// (`skills/`, `plugins/marketplaces/…`, `plugins/cache/…`). On for `claude-code` and
    /// `generic`; `hosts.json` sets it with `"claude_plugins": true`.
    pub claude_plugins: bool,
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
    #[serde(default)]
    claude_plugins: bool,
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
        claude_plugins: false,
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
    // Claude Code keeps skills in `~/.claude/skills` and plugins in `~/.claude/plugins`; its root
    // is the config folder so both are found.
    let mut claude = builtin("claude-code", HostKind::Skill, Some("~/.claude"), None);
    claude.claude_plugins = true;
    let mut generic = builtin("generic", HostKind::Asset, None, None);
    generic.claude_plugins = true;
    vec![
        claude,
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
        generic,
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
            claude_plugins: entry.claude_plugins,
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

/// A Claude Code plugin's manifest, relative to the plugin folder.
pub const CLAUDE_PLUGIN_MANIFEST: &str = ".claude-plugin/plugin.json";
/// A Claude Code marketplace's manifest, relative to the marketplace folder.
pub const CLAUDE_MARKETPLACE_MANIFEST: &str = ".claude-plugin/marketplace.json";

/// Where a discovered asset was found; decides which copy wins when the same plugin is both
/// installed (`plugins/cache/…`) and available in a marketplace clone.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum AssetOrigin {
    /// An installed copy under `plugins/cache/<marketplace>/<plugin>/<version>/`.
    PluginCache,
    /// A folder directly under the root (or the root itself).
    Root,
    /// A skill under `<root>/skills/` (the Claude config folder layout).
    ConfigSkills,
    /// A plugin listed in the named marketplace's `marketplace.json`.
    Marketplace(String),
}

/// One asset folder found under a host root.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredAsset {
    pub dir: PathBuf,
    /// The manifest that made it an asset (`SKILL.md`, `package.json`,
    /// `.claude-plugin/plugin.json`, or `.claude-plugin/marketplace.json` for a plugin that a
    /// marketplace entry defines without its own manifest).
    pub manifest: String,
    /// Where it was found.
    pub origin: AssetOrigin,
    /// The plugin's entry in its marketplace's `marketplace.json`, when listed there.
    pub marketplace_entry: Option<serde_json::Value>,
    /// The name the host's own record gives it (Claude Code's `<name>@<marketplace>` id), used
    /// when its manifest names none.
    pub name: Option<String>,
    /// How Claude Code recorded the install (`installed_plugins.json`, `enabledPlugins`).
    pub install: Option<super::claude_home::InstallRecord>,
}

impl AssetOrigin {
    /// Preference when two copies carry the same name (lower wins).
    pub fn rank(&self) -> u8 {
        match self {
            Self::PluginCache => 0,
            Self::Root => 1,
            Self::ConfigSkills => 2,
            Self::Marketplace(_) => 3,
        }
    }
}

impl DiscoveredAsset {
    fn new(dir: PathBuf, manifest: impl Into<String>, origin: AssetOrigin) -> Self {
        Self {
            dir,
            manifest: manifest.into(),
            origin,
            marketplace_entry: None,
            name: None,
            install: None,
        }
    }
}

/// Something under a root that looked like an asset but could not be listed (a malformed
/// marketplace, a listed plugin folder that is missing). Reported by `scan`, never fatal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedAsset {
    /// The folder or file involved.
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: String,
}

/// What discovery found under a root.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovery {
    pub assets: Vec<DiscoveredAsset>,
    pub skipped: Vec<SkippedAsset>,
    /// Plugins a Claude Code marketplace clone lists that are not installed.
    pub available: Vec<AvailablePlugin>,
    /// What the reader assumed or could not read, said in every scan report.
    pub notes: Vec<String>,
}

/// A plugin a marketplace clone under `~/.claude/plugins` lists but that is not installed:
/// listed by `scan`, never registered as installed, never asked about by `check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AvailablePlugin {
    pub name: String,
    /// The marketplace's name (the `@marketplace` of Claude Code's plugin ids).
    pub marketplace: String,
    /// Its folder in the clone, when the source is local (remote sources are not on disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The version the marketplace entry gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default)]
    pub description: String,
    /// The root it was found under (set by `scan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
}

/// Asset folders under `root` (see [`discover`]); discovery problems are dropped.
pub fn discover_assets(
    host: &HostProfile,
    root: &Path,
) -> Result<Vec<DiscoveredAsset>, RegistryError> {
    Ok(discover(host, root)?.assets)
}

/// Sub-folders of `dir`, sorted, skipping hidden ones and the fingerprint module's excluded
/// folder names; a missing folder has none.
fn subfolders(dir: &Path) -> Result<Vec<PathBuf>, RegistryError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(RegistryError::io(dir)(error)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(RegistryError::io(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || crate::features::asset::fingerprint::is_excluded_dir(&name) {
            continue;
        }
        let path = entry.path();
        // Follow a symlinked folder (hosts often link installed skills).
        if path.is_dir() {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// Asset folders under `root`: each immediate subfolder (hidden ones and the fingerprint
/// module's excluded folder names skipped) holding one of the host's manifests, plus, for
/// `deps_from_package_json` hosts, `<root>/node_modules/<dep>` for each dependency of
/// `<root>/package.json`, plus, for `claude_plugins` hosts, Claude Code plugins and
/// marketplaces (see [`HostProfile::claude_plugins`]). A missing root gives no assets. Sorted
/// by path.
pub fn discover(host: &HostProfile, root: &Path) -> Result<Discovery, RegistryError> {
    let mut discovery = Discovery::default();
    if !root.exists() {
        return Ok(discovery);
    }
    let claude = host.claude_plugins;
    if claude {
        if root.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
            discovery.assets.push(DiscoveredAsset::new(
                root.to_path_buf(),
                CLAUDE_PLUGIN_MANIFEST,
                AssetOrigin::Root,
            ));
        }
        if root.join(CLAUDE_MARKETPLACE_MANIFEST).is_file() {
            expand_marketplace(root, &mut discovery);
        }
    }
    for path in subfolders(root)? {
        if claude && path.join(CLAUDE_MARKETPLACE_MANIFEST).is_file() {
            expand_marketplace(&path, &mut discovery);
            if !path.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
                continue;
            }
        }
        if claude && path.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
            discovery.assets.push(DiscoveredAsset::new(
                path,
                CLAUDE_PLUGIN_MANIFEST,
                AssetOrigin::Root,
            ));
            continue;
        }
        if let Some(manifest) = host.manifest_in(&path) {
            discovery
                .assets
                .push(DiscoveredAsset::new(path, manifest, AssetOrigin::Root));
        }
    }
    if claude && !root.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
        // The Claude config folder layout: `<root>/skills/<skill>/SKILL.md` and
        // `<root>/plugins/{marketplaces,cache}/…`; or the root is that `plugins` folder.
        let skills = root.join("skills");
        if skills.is_dir() && !skills.join("SKILL.md").is_file() {
            for path in subfolders(&skills)? {
                if path.join("SKILL.md").is_file() {
                    discovery.assets.push(DiscoveredAsset::new(
                        path,
                        "SKILL.md",
                        AssetOrigin::ConfigSkills,
                    ));
                }
            }
        }
        for plugins in [root.join("plugins"), root.to_path_buf()] {
            if plugins.join("cache").is_dir()
                || plugins.join("marketplaces").is_dir()
                || plugins
                    .join(super::claude_home::INSTALLED_PLUGINS)
                    .is_file()
            {
                claude_plugins_folder(&plugins, &mut discovery)?;
            }
        }
    }
    if host.deps_from_package_json {
        let package = root.join("package.json");
        if let Some(value) = read_json::<serde_json::Value>(&package, "package.json")? {
            if let Some(deps) = value.get("dependencies").and_then(|d| d.as_object()) {
                for dep in deps.keys() {
                    let dir = root.join("node_modules").join(dep);
                    if let Some(manifest) = host.manifest_in(&dir)
                        && !discovery.assets.iter().any(|f| f.dir == dir)
                    {
                        discovery.assets.push(DiscoveredAsset::new(
                            dir,
                            manifest,
                            AssetOrigin::Root,
                        ));
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
    discovery.assets.sort_by(|a, b| a.dir.cmp(&b.dir));
    discovery.assets.dedup_by(|a, b| a.dir == b.dir);
    Ok(discovery)
}

/// `~/.claude/plugins`, read as Claude Code reads it (see [`super::claude_home`]): the plugins
/// `installed_plugins.json` records are the installed ones, each at the folder its
/// `installPath` names, with its `enabledPlugins` state; every other plugin a marketplace clone
/// (`marketplaces/<name>/`, or a folder `known_marketplaces.json` names) lists is *available*,
/// not installed. Without an `installed_plugins.json` (older Claude Code), each plugin under
/// `cache/<marketplace>/<plugin>/` is taken as installed at its newest version folder, and a
/// note says so. An unreadable record registers nothing as installed and is listed skipped.
fn claude_plugins_folder(plugins: &Path, discovery: &mut Discovery) -> Result<(), RegistryError> {
    use super::claude_home::{
        INSTALLED_PLUGINS, InstallRecord, enabled_state, known_marketplaces, read_installed,
        resolve_recorded, settings_for,
    };
    // Marketplace listings by the name installed ids use.
    let mut listings: BTreeMap<String, Listing> = BTreeMap::new();
    let mut folders: Vec<(Option<String>, PathBuf)> = subfolders(&plugins.join("marketplaces"))?
        .into_iter()
        .map(|dir| (None, dir))
        .collect();
    match known_marketplaces(plugins) {
        Ok(known) => {
            for (name, dir) in known {
                match folders.iter_mut().find(|(_, d)| *d == dir) {
                    Some(found) => found.0 = Some(name),
                    None => folders.push((Some(name), dir)),
                }
            }
        }
        Err(error) => discovery.skipped.push(SkippedAsset {
            path: plugins.join(super::claude_home::KNOWN_MARKETPLACES),
            reason: error.to_string(),
        }),
    }
    for (known_name, dir) in folders {
        if !dir.join(CLAUDE_MARKETPLACE_MANIFEST).is_file() {
            continue;
        }
        match read_marketplace(&dir) {
            Ok(listing) => {
                let key = known_name.unwrap_or_else(|| listing.name.clone());
                listings.entry(key).or_insert(listing);
            }
            Err(skipped) => discovery.skipped.push(skipped),
        }
    }
    let mut settings_cache = BTreeMap::new();
    let mut installed: std::collections::BTreeSet<(String, String)> = Default::default();
    match read_installed(plugins) {
        Err(error) => discovery.skipped.push(SkippedAsset {
            path: plugins.join(INSTALLED_PLUGINS),
            reason: format!(
                "{}; no plugin was registered as installed",
                skip_text(&plugins.join(INSTALLED_PLUGINS), &error)
            ),
        }),
        Ok(Some((record, list))) => {
            for plugin in list {
                installed.insert((plugin.name.clone(), plugin.marketplace.clone()));
                let Some(dir) = resolve_recorded(plugins, &plugin.install_path) else {
                    discovery.skipped.push(SkippedAsset {
                        path: PathBuf::from(&plugin.install_path),
                        reason: format!(
                            "{} records `{}` installed here, but the folder does not exist (reinstall the plugin, or remove it with `claude plugin uninstall`)",
                            record.display(),
                            plugin.id
                        ),
                    });
                    continue;
                };
                let entry = listings
                    .get(&plugin.marketplace)
                    .and_then(|l| l.find(&plugin.name))
                    .map(|listed| listed.entry.clone());
                let settings = settings_for(plugins, &plugin.scope, plugin.project_path.as_deref());
                let enabled = enabled_state(&mut settings_cache, settings.as_deref(), &plugin.id)
                    .unwrap_or_else(|error| {
                        discovery
                            .notes
                            .push(format!("{error}; enabled state of `{}` unknown", plugin.id));
                        super::claude_home::PluginEnabled::Unknown
                    });
                let manifest = if dir.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
                    CLAUDE_PLUGIN_MANIFEST
                } else {
                    CLAUDE_MARKETPLACE_MANIFEST
                };
                let mut found = DiscoveredAsset::new(dir, manifest, AssetOrigin::PluginCache);
                found.marketplace_entry = entry;
                found.name = Some(plugin.name.clone());
                found.install = Some(InstallRecord {
                    id: plugin.id.clone(),
                    scope: plugin.scope.clone(),
                    project_path: plugin.project_path.clone(),
                    version: plugin.version.clone(),
                    git_commit_sha: plugin.git_commit_sha.clone(),
                    enabled,
                    settings,
                    recorded_in: Some(record.clone()),
                });
                discovery.assets.push(found);
            }
        }
        Ok(None) => {
            let mut taken = 0;
            for marketplace in subfolders(&plugins.join("cache"))? {
                let marketplace_name = marketplace
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                for plugin in subfolders(&marketplace)? {
                    let plugin_name = plugin
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let version = if plugin.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
                        Some(plugin.clone())
                    } else {
                        subfolders(&plugin)?
                            .into_iter()
                            .filter(|version| {
                                version.join(CLAUDE_PLUGIN_MANIFEST).is_file()
                                    || version.join("skills").is_dir()
                                    || version.join("commands").is_dir()
                            })
                            .max_by(|a, b| {
                                compare_versions(
                                    a.file_name().unwrap_or_default(),
                                    b.file_name().unwrap_or_default(),
                                )
                            })
                    };
                    let Some(version) = version else { continue };
                    let manifest = if version.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
                        CLAUDE_PLUGIN_MANIFEST
                    } else {
                        CLAUDE_MARKETPLACE_MANIFEST
                    };
                    let id = format!("{plugin_name}@{marketplace_name}");
                    let settings = settings_for(plugins, "user", None);
                    let enabled = enabled_state(&mut settings_cache, settings.as_deref(), &id)
                        .unwrap_or(super::claude_home::PluginEnabled::Unknown);
                    let mut found =
                        DiscoveredAsset::new(version.clone(), manifest, AssetOrigin::PluginCache);
                    found.marketplace_entry = listings
                        .get(&marketplace_name)
                        .and_then(|l| l.find(&plugin_name))
                        .map(|listed| listed.entry.clone());
                    found.name = Some(plugin_name.clone());
                    found.install = Some(InstallRecord {
                        id,
                        scope: "user".to_string(),
                        project_path: None,
                        version: version
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned()),
                        git_commit_sha: None,
                        enabled,
                        settings,
                        recorded_in: None,
                    });
                    discovery.assets.push(found);
                    installed.insert((plugin_name, marketplace_name.clone()));
                    taken += 1;
                }
            }
            if taken > 0 {
                discovery.notes.push(format!(
                    "{}: no {INSTALLED_PLUGINS}; each of the {taken} plugin(s) under cache/ was taken as installed at its newest version folder (Claude Code records the installed one in {INSTALLED_PLUGINS})",
                    plugins.display()
                ));
            }
        }
    }
    for (marketplace, listing) in &listings {
        for listed in &listing.plugins {
            let Some(name) = &listed.name else { continue };
            if installed.contains(&(name.clone(), marketplace.clone())) {
                continue;
            }
            let text = |key: &str| {
                listed
                    .entry
                    .get(key)
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string)
            };
            discovery.available.push(AvailablePlugin {
                name: name.clone(),
                marketplace: marketplace.clone(),
                path: match &listed.source {
                    ListedSource::Local(dir) => Some(dir.clone()),
                    _ => None,
                },
                version: text("version"),
                description: text("description").unwrap_or_default(),
                root: None,
            });
        }
    }
    Ok(())
}

/// An error's text without the leading path (the skipped entry names it).
fn skip_text(path: &Path, error: &RegistryError) -> String {
    let text = error.to_string();
    text.strip_prefix(&format!("{}: ", path.display()))
        .map(str::to_string)
        .unwrap_or(text)
}

/// Order version folder names: numeric dot-separated parts compare as numbers (`1.10.0` >
/// `1.9.2`), anything else as text.
fn compare_versions(a: &std::ffi::OsStr, b: &std::ffi::OsStr) -> std::cmp::Ordering {
    let key = |name: &std::ffi::OsStr| {
        name.to_string_lossy()
            .split(['.', '-'])
            .map(|part| match part.parse::<u64>() {
                Ok(number) => (0u8, number, String::new()),
                Err(_) => (1u8, 0, part.to_string()),
            })
            .collect::<Vec<_>>()
    };
    key(a).cmp(&key(b))
}

/// Where a marketplace entry's plugin is.
#[derive(Debug, Clone, PartialEq)]
enum ListedSource {
    /// A folder in the marketplace (`"./plugins/x"`, or a bare name under
    /// `metadata.pluginRoot`) that exists.
    Local(PathBuf),
    /// A local source whose folder is missing.
    Missing(String),
    /// A remote source (`{"source": "github", …}`, `{"source": "url", …}`): not on disk.
    Remote,
    /// No `source`.
    Absent,
}

/// One entry of a marketplace's `plugins`.
#[derive(Debug, Clone, PartialEq)]
struct ListedPlugin {
    index: usize,
    name: Option<String>,
    entry: serde_json::Value,
    source: ListedSource,
}

/// A marketplace's `.claude-plugin/marketplace.json`, read.
#[derive(Debug, Clone, PartialEq)]
struct Listing {
    /// `name`, else the folder's name.
    name: String,
    /// The `marketplace.json` path.
    path: PathBuf,
    plugins: Vec<ListedPlugin>,
}

impl Listing {
    fn find(&self, name: &str) -> Option<&ListedPlugin> {
        self.plugins
            .iter()
            .find(|p| p.name.as_deref() == Some(name))
    }
}

/// Read the marketplace in `dir`; a malformed `marketplace.json` is returned as the skipped
/// entry that reports it.
fn read_marketplace(dir: &Path) -> Result<Listing, SkippedAsset> {
    let path = dir.join(CLAUDE_MARKETPLACE_MANIFEST);
    let skip = |reason: String| SkippedAsset {
        path: path.clone(),
        reason,
    };
    let value: serde_json::Value = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| format!("not valid JSON: {e}")))
        .map_err(skip)?;
    let name = value
        .get("name")
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
    let Some(entries) = value.get("plugins").and_then(|p| p.as_array()) else {
        return Err(skip(
            "`plugins` must be an array of plugin entries".to_string(),
        ));
    };
    let plugin_root = value
        .pointer("/metadata/pluginRoot")
        .and_then(|r| r.as_str())
        .unwrap_or("");
    let plugins = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let source = match entry.get("source") {
                Some(serde_json::Value::String(source)) => {
                    let relative = if source.starts_with("./")
                        || source.starts_with("../")
                        || plugin_root.is_empty()
                    {
                        PathBuf::from(source)
                    } else {
                        Path::new(plugin_root).join(source)
                    };
                    let plugin_dir = dir.join(relative);
                    if plugin_dir.is_dir() {
                        ListedSource::Local(plugin_dir)
                    } else {
                        ListedSource::Missing(source.clone())
                    }
                }
                Some(serde_json::Value::Object(_)) => ListedSource::Remote,
                _ => ListedSource::Absent,
            };
            ListedPlugin {
                index,
                name: entry
                    .get("name")
                    .and_then(|n| n.as_str())
                    .map(str::to_string),
                entry: entry.clone(),
                source,
            }
        })
        .collect();
    Ok(Listing {
        name,
        path,
        plugins,
    })
}

/// The plugins a marketplace (a repository or folder being developed, not a clone under
/// `~/.claude/plugins`) lists with a local `source`, as assets. Remote sources are not on disk
/// and are not listed; a malformed `marketplace.json` or a listed folder that is missing is
/// skipped with the reason.
fn expand_marketplace(dir: &Path, discovery: &mut Discovery) {
    let listing = match read_marketplace(dir) {
        Ok(listing) => listing,
        Err(skipped) => return discovery.skipped.push(skipped),
    };
    for listed in &listing.plugins {
        let at = format!("{}: plugins[{}]", listing.path.display(), listed.index);
        match &listed.source {
            ListedSource::Local(plugin_dir) => {
                let manifest = if plugin_dir.join(CLAUDE_PLUGIN_MANIFEST).is_file() {
                    CLAUDE_PLUGIN_MANIFEST
                } else {
                    CLAUDE_MARKETPLACE_MANIFEST
                };
                let mut found = DiscoveredAsset::new(
                    plugin_dir.clone(),
                    manifest,
                    AssetOrigin::Marketplace(listing.name.clone()),
                );
                found.marketplace_entry = Some(listed.entry.clone());
                discovery.assets.push(found);
            }
            ListedSource::Missing(source) => discovery.skipped.push(SkippedAsset {
                path: dir.join(source),
                reason: format!("{at}: listed plugin folder `{source}` does not exist"),
            }),
            ListedSource::Remote => {}
            ListedSource::Absent => discovery.skipped.push(SkippedAsset {
                path: listing.path.clone(),
                reason: format!("plugins[{}]: `source` is missing", listed.index),
            }),
        }
    }
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
        let skill_host = builtin_hosts()
            .into_iter()
            .find(|h| h.name == "codex")
            .unwrap();
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
