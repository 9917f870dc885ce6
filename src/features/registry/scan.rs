//! `registry.<host>.json`: one file per host, holding each installed asset's fingerprint (with
//! its calibre), capability surface and history, the scan history, and the host's model bumps.
//! [`scan`] walks a host root, fingerprints every asset with `crate::features::asset::fingerprint` (the same
//! code `run` records), and reports what changed since the previous scan. One bad asset never
//! aborts a scan: malformed or duplicate-named assets are listed in [`ScanSummary::skipped`]
//! with the reason, and the registry is written for the rest. Assets remember the root they
//! were scanned from, so scanning another root never marks them removed. Writes are atomic and
//! under an exclusive lock; another host's registry is never touched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::RegistryError;
use super::claude_home::InstallRecord;
use super::hosts::{
    AssetOrigin, AvailablePlugin, CLAUDE_MARKETPLACE_MANIFEST, DiscoveredAsset, HostProfile,
    SkippedAsset, discover,
};
use super::models::{ModelBump, Waiver};
use super::state::{check_schema, lock_for, read_json, write_state_json};
use super::surface::{AssetKind, Surface, diff_tokens, load_discovered};
use crate::features::asset::fingerprint::{
    Calibre, Fingerprint, FingerprintHasher, fingerprint, selected_files,
};

/// Version of the registry file format.
pub const REGISTRY_SCHEMA_VERSION: u32 = 1;
/// Scan summaries kept in the history.
pub const SCAN_HISTORY_LIMIT: usize = 200;

/// One asset as last scanned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssetEntry {
    pub kind: AssetKind,
    /// The asset folder.
    pub path: PathBuf,
    /// The manifest that identified it.
    pub manifest: String,
    pub description: String,
    pub version: Option<String>,
    /// `sha256:<hex>` under `calibre`.
    pub fingerprint: String,
    pub calibre: Calibre,
    /// Number of files hashed and their total bytes.
    pub fingerprint_files: usize,
    pub fingerprint_bytes: u64,
    /// Declared capability surface.
    pub surface: Surface,
    /// First scan that saw the asset.
    pub first_seen: DateTime<Utc>,
    /// First scan that saw the current fingerprint.
    pub fingerprint_since: DateTime<Utc>,
    /// Earlier fingerprints, oldest first.
    #[serde(default)]
    pub previous_fingerprints: Vec<String>,
    /// The root the asset was scanned from (absent in registries written before roots were
    /// recorded: then the registry's `root`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// Registered for monitoring by `skill-lift vet`: the vetted fingerprint and the golden
    /// set that later runs replay (kept across scans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring: Option<Monitoring>,
    /// How the host recorded the install (Claude Code plugins: `installed_plugins.json`'s id,
    /// scope, version, commit, and whether `enabledPlugins` turns it on); absent for assets found
    /// as folders and in registries written before this was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<InstallRecord>,
}

/// What `skill-lift vet` registered for monitoring.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Monitoring {
    /// When it was registered.
    pub registered_at: DateTime<Utc>,
    /// The fingerprint that was vetted (compare with `fingerprint` for drift since).
    pub vetted_fingerprint: String,
    /// The golden set replayed by `run` (absent when the skill has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub golden_set: Option<RegisteredSet>,
    /// The trigger set replayed by `triggers`, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_set: Option<RegisteredSet>,
    /// The vet's folder (absent when `run --monitor` registered the skill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vet_dir: Option<PathBuf>,
    /// The vet's overall decision (`go` / `no-go`), or `run` for `run --monitor`.
    pub decision: String,
    /// The runner and model the registration measured with.
    pub runner: String,
    pub model: String,
    /// Which command registered it (absent in registries written before `run --monitor`:
    /// `vet`).
    #[serde(default)]
    pub registered_by: RegisteredBy,
    /// How `skill-lift monitor` re-runs the suite after a model change (absent in registries
    /// written before it was stored: then the golden set, the runner above, K = 3 and seed 42).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<MonitoredSuite>,
}

/// The command that registered a skill for monitoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegisteredBy {
    /// `skill-lift vet` (its register step).
    #[default]
    Vet,
    /// `skill-lift run --monitor`.
    Run,
}

impl RegisteredBy {
    /// The command's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RegisteredBy::Vet => "vet",
            RegisteredBy::Run => "run",
        }
    }
}

/// The run settings of a monitored suite: what `skill-lift monitor` passes to `run` (with the
/// new model and its own `--sequential` and budget) when a model change leaves it pending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitoredSuite {
    /// The runner profile: a built-in profile's name, or the absolute path of its `.toml` file
    /// (so a scheduler's working folder does not change which profile is read).
    pub runner: String,
    /// The eval set file (absolute).
    pub evals: PathBuf,
    /// Attempts per case per arm.
    pub k: u32,
    /// The run's seed.
    pub seed: u64,
    /// The fingerprint calibre's name.
    pub calibre: String,
    /// A folder of decoys replacing the built-in ones (absolute), when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoys: Option<PathBuf>,
    /// No decoys staged.
    #[serde(default)]
    pub no_decoys: bool,
    /// Draft cases included.
    #[serde(default)]
    pub allow_draft: bool,
}

/// An eval or trigger set as registered: where, which bytes, how many items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisteredSet {
    pub path: PathBuf,
    /// `sha256:<hex>` of the file.
    pub digest: String,
    /// Active cases (golden set) or queries (trigger set).
    pub items: usize,
}

/// Register (or re-register) the skill in `dir` under `host`'s registry, with `monitoring`:
/// its fingerprint, surface and the sets to replay. The asset's root is its parent folder, so
/// a later `scan` of the host's own root never reports it removed. A same-named asset already
/// registered from another folder is refused (names are unique within a host).
pub fn register_monitored(
    state_dir: &Path,
    host: &HostProfile,
    dir: &Path,
    calibre: Calibre,
    monitoring: Monitoring,
) -> Result<(String, AssetEntry), RegistryError> {
    let dir = dir.canonicalize().map_err(RegistryError::io(dir))?;
    let loaded = super::surface::load_asset(&dir, "SKILL.md", host.kind)?;
    let print = fingerprint(&dir, calibre)?;
    let now = monitoring.registered_at;
    update_registry(state_dir, &host.name, |registry| {
        if let Some(old) = registry.assets.get(&loaded.name)
            && old.path != dir
        {
            return Err(RegistryError::Invalid {
                path: registry_path(state_dir, &host.name),
                message: format!(
                    "asset `{}` is already registered from {}; names must be unique within a host (register under another --host, e.g. generic)",
                    loaded.name,
                    old.path.display()
                ),
            });
        }
        let mut entry = AssetEntry {
            kind: loaded.kind,
            path: dir.clone(),
            manifest: "SKILL.md".to_string(),
            description: loaded.description.clone(),
            version: loaded.version.clone(),
            fingerprint: print.digest.clone(),
            calibre,
            fingerprint_files: print.files.len(),
            fingerprint_bytes: print.bytes,
            surface: loaded.surface.clone(),
            first_seen: now,
            fingerprint_since: now,
            previous_fingerprints: Vec::new(),
            root: dir.parent().map(Path::to_path_buf),
            monitoring: Some(monitoring),
            install: None,
        };
        if let Some(old) = registry.assets.get(&loaded.name) {
            entry.first_seen = old.first_seen;
            entry.previous_fingerprints = old.previous_fingerprints.clone();
            if old.fingerprint == entry.fingerprint {
                entry.fingerprint_since = old.fingerprint_since;
            } else if old.calibre == entry.calibre {
                entry.previous_fingerprints.push(old.fingerprint.clone());
            }
        }
        registry.assets.insert(loaded.name.clone(), entry.clone());
        Ok((loaded.name.clone(), entry))
    })
}

/// The same-named asset registered from another folder than `dir`, when there is one (the
/// check `vet` makes before spending anything).
pub fn registered_elsewhere(
    state_dir: &Path,
    host: &str,
    name: &str,
    dir: &Path,
) -> Result<Option<PathBuf>, RegistryError> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    Ok(read_registry(state_dir, host)?
        .and_then(|registry| registry.assets.get(name).map(|a| a.path.clone()))
        .filter(|path| *path != dir))
}

/// What one scan found changed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ScanSummary {
    pub at: DateTime<Utc>,
    pub root: PathBuf,
    pub calibre: Calibre,
    /// Assets found.
    pub assets: usize,
    pub new: Vec<String>,
    pub removed: Vec<String>,
    /// Fingerprint changed under the same calibre: the asset was edited.
    pub fingerprint_changed: Vec<String>,
    /// Fingerprint recomputed under a different calibre (not an edit).
    #[serde(default)]
    pub recalibrated: Vec<String>,
    /// Capability-surface changes per asset (`+bin`, `deps(+a)`).
    pub caps_changed: BTreeMap<String, Vec<String>>,
    /// Assets that could not be registered (malformed manifest, duplicate name), with why.
    #[serde(default)]
    pub skipped: Vec<SkippedAsset>,
    /// Installed plugins the host does not load (Claude Code: `enabledPlugins` sets them
    /// `false` or does not list them), as `name (why)`. They are registered and checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_loaded: Vec<String>,
    /// Plugins a marketplace clone lists that are not installed (`name@marketplace`): listed,
    /// not registered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub available: Vec<String>,
    /// What the scan assumed or could not read (e.g. no `installed_plugins.json`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Wall time of the scan, milliseconds.
    pub elapsed_ms: u64,
}

/// `registry.<host>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    pub schema_version: u32,
    pub host: String,
    pub root: Option<PathBuf>,
    pub last_scan: Option<DateTime<Utc>>,
    pub assets: BTreeMap<String, AssetEntry>,
    #[serde(default)]
    pub scans: Vec<ScanSummary>,
    #[serde(default)]
    pub model_bumps: Vec<ModelBump>,
    #[serde(default)]
    pub waivers: Vec<Waiver>,
    /// Plugins that marketplace clones under the scanned roots list but that are not installed
    /// (replaced per root at each scan). Never assets: `check` does not ask about them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub available: Vec<AvailablePlugin>,
}

impl Registry {
    /// An empty registry for `host`.
    pub fn new(host: &str) -> Self {
        Self {
            schema_version: REGISTRY_SCHEMA_VERSION,
            host: host.to_string(),
            root: None,
            last_scan: None,
            assets: BTreeMap::new(),
            scans: Vec::new(),
            model_bumps: Vec::new(),
            waivers: Vec::new(),
            available: Vec::new(),
        }
    }
}

/// `registry.<host>.json` in the state folder.
pub fn registry_path(state_dir: &Path, host: &str) -> PathBuf {
    state_dir.join(format!("registry.{host}.json"))
}

/// Read a host's registry; `Ok(None)` when it was never written.
pub fn read_registry(state_dir: &Path, host: &str) -> Result<Option<Registry>, RegistryError> {
    let path = registry_path(state_dir, host);
    let registry: Option<Registry> = read_json(&path, "a registry")?;
    if let Some(registry) = &registry {
        check_schema(&path, registry.schema_version, REGISTRY_SCHEMA_VERSION)?;
        if registry.host != host {
            return Err(RegistryError::Invalid {
                path,
                message: format!(
                    "holds host `{}`, not `{host}`; registries are one file per host",
                    registry.host
                ),
            });
        }
    }
    Ok(registry)
}

/// Read-modify-write a host's registry under its lock.
pub fn update_registry<T>(
    state_dir: &Path,
    host: &str,
    change: impl FnOnce(&mut Registry) -> Result<T, RegistryError>,
) -> Result<T, RegistryError> {
    let path = registry_path(state_dir, host);
    let _lock = lock_for(&path)?;
    let mut registry = read_registry(state_dir, host)?.unwrap_or_else(|| Registry::new(host));
    let result = change(&mut registry)?;
    write_state_json(&path, &registry)?;
    Ok(result)
}

/// One asset freshly scanned.
struct Scanned {
    name: String,
    origin: AssetOrigin,
    entry: AssetEntry,
}

fn scan_one(
    host: &HostProfile,
    found: &DiscoveredAsset,
    root: &Path,
    calibre: Calibre,
    now: DateTime<Utc>,
) -> Result<Scanned, RegistryError> {
    let dir = found.dir.as_path();
    let loaded = load_discovered(found, host.kind)?;
    let print = match (&found.marketplace_entry, found.manifest.as_str()) {
        (Some(entry), CLAUDE_MARKETPLACE_MANIFEST) => entry_fingerprint(dir, calibre, entry)?,
        _ => fingerprint(dir, calibre)?,
    };
    if print.files.is_empty() {
        return Err(RegistryError::Invalid {
            path: dir.to_path_buf(),
            message: "nothing to fingerprint: no manifest, no marketplace entry that defines it, and no file the calibre selects".to_string(),
        });
    }
    let version = loaded
        .version
        .clone()
        .or_else(|| found.install.as_ref().and_then(|i| i.version.clone()));
    Ok(Scanned {
        name: loaded.name,
        origin: found.origin.clone(),
        entry: AssetEntry {
            kind: loaded.kind,
            path: dir.to_path_buf(),
            manifest: found.manifest.clone(),
            description: loaded.description,
            version,
            fingerprint: print.digest,
            calibre,
            fingerprint_files: print.files.len(),
            fingerprint_bytes: print.bytes,
            surface: loaded.surface,
            first_seen: now,
            fingerprint_since: now,
            previous_fingerprints: Vec::new(),
            root: Some(root.to_path_buf()),
            monitoring: None,
            install: found.install.clone(),
        },
    })
}

/// The relative path under which a marketplace entry enters the fingerprint of the plugin it
/// defines (no file has this name: `#` marks it as the entry, not a file).
pub const ENTRY_FINGERPRINT_PATH: &str = ".claude-plugin/marketplace.json#entry";

/// The fingerprint of a plugin that its marketplace entry defines (`strict: false`, no
/// `plugin.json`): the entry's canonical JSON (keys sorted, so reordering is not an edit) as
/// [`ENTRY_FINGERPRINT_PATH`], plus the plugin folder's files as `calibre` selects them, plus any
/// file the entry names (see [`super::surface::entry_named_files`]), in the module's hash layout.
/// A change to the entry (an LSP server's command, a listed command file) changes it.
pub fn entry_fingerprint(
    dir: &Path,
    calibre: Calibre,
    entry: &serde_json::Value,
) -> Result<Fingerprint, RegistryError> {
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut relatives = selected_files(dir, calibre)?;
    relatives.extend(super::surface::entry_named_files(dir, entry, calibre)?);
    for relative in relatives {
        if files.contains_key(&relative) {
            continue;
        }
        let path = dir.join(&relative);
        let bytes = std::fs::read(&path).map_err(RegistryError::io(&path))?;
        files.insert(relative, bytes);
    }
    files.insert(
        ENTRY_FINGERPRINT_PATH.to_string(),
        super::surface::canonical_json(entry).into_bytes(),
    );
    let mut hasher = FingerprintHasher::new(calibre);
    for (relative, bytes) in &files {
        hasher.add(relative, bytes);
    }
    Ok(hasher.finish())
}

/// Fingerprint the assets on up to `available_parallelism` threads, keeping input order; each
/// asset's own error is kept beside it.
fn scan_all(
    host: &HostProfile,
    found: &[DiscoveredAsset],
    root: &Path,
    calibre: Calibre,
    now: DateTime<Utc>,
) -> Vec<(PathBuf, Result<Scanned, RegistryError>)> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
        .min(found.len().max(1));
    let chunk = found.len().div_ceil(threads).max(1);
    type Part = Vec<(PathBuf, Result<Scanned, RegistryError>)>;
    let results: Vec<Part> = std::thread::scope(|scope| {
        let handles: Vec<_> = found
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|asset| (asset.dir.clone(), scan_one(host, asset, root, calibre, now)))
                        .collect::<Part>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("scan worker panicked"))
            .collect()
    });
    results.into_iter().flatten().collect()
}

/// The reason an asset was skipped, without the asset's folder (the summary lists the path
/// beside it): `SKILL.md: …`, `plugin.json: …`.
fn skip_reason(path: &Path, error: &RegistryError) -> String {
    let text = error.to_string();
    let folder = path.display().to_string();
    text.strip_prefix(&format!("{folder}/"))
        .or_else(|| text.strip_prefix(&format!("{folder}: ")))
        .map(str::to_string)
        .unwrap_or(text)
}

/// Scan `root` for `host`'s assets, update `registry.<host>.json`, and return what changed.
///
/// An asset that cannot be loaded (malformed manifest or `SKILL.md`, unreadable file) or whose
/// name another asset already has is skipped and listed in [`ScanSummary::skipped`]; the rest
/// are registered. When the same Claude Code plugin is both installed (`plugins/cache/…`) and in
/// a marketplace clone, the installed copy is registered and the other is not a duplicate.
/// Only assets recorded from this `root` can be reported removed. Errors only for the registry
/// file itself or an unreadable root.
pub fn scan(
    state_dir: &Path,
    host: &HostProfile,
    root: &Path,
    calibre: Calibre,
) -> Result<ScanSummary, RegistryError> {
    let started = Instant::now();
    let now = Utc::now();
    let discovery = discover(host, root)?;
    let mut skipped = discovery.skipped;
    let notes = discovery.notes;
    let available: Vec<AvailablePlugin> = discovery
        .available
        .into_iter()
        .map(|mut plugin| {
            plugin.root = Some(root.to_path_buf());
            plugin
        })
        .collect();
    let mut loaded = Vec::new();
    for (path, result) in scan_all(host, &discovery.assets, root, calibre, now) {
        match result {
            Ok(item) => loaded.push(item),
            Err(error) => skipped.push(SkippedAsset {
                reason: skip_reason(&path, &error),
                path,
            }),
        }
    }
    // The preferred copy first (installed plugins, then root folders, then marketplace clones;
    // then the one whose folder has the asset's name), then by path, so duplicates are reported
    // against the copy that was kept.
    let key = |item: &Scanned| {
        let renamed = item
            .entry
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            != Some(item.name.clone());
        (item.origin.rank(), renamed, item.entry.path.clone())
    };
    loaded.sort_by_key(key);
    let mut fresh: BTreeMap<String, AssetEntry> = BTreeMap::new();
    let mut kept_origin: BTreeMap<String, AssetOrigin> = BTreeMap::new();
    for item in loaded {
        if let Some(other) = fresh.get(&item.name) {
            let shadowed_plugin_copy = item.entry.kind == AssetKind::Plugin
                && kept_origin
                    .get(&item.name)
                    .is_some_and(|o| *o == AssetOrigin::PluginCache)
                && matches!(item.origin, AssetOrigin::Marketplace(_));
            if !shadowed_plugin_copy {
                skipped.push(SkippedAsset {
                    reason: format!(
                        "asset name `{}` is also used by {}; names must be unique within a host",
                        item.name,
                        other.path.display()
                    ),
                    path: item.entry.path.clone(),
                });
            }
            continue;
        }
        kept_origin.insert(item.name.clone(), item.origin);
        fresh.insert(item.name, item.entry);
    }
    update_registry(state_dir, &host.name, |registry| {
        let previous_root = registry.root.clone();
        let root_of = |entry: &AssetEntry| entry.root.clone().or_else(|| previous_root.clone());
        // A name already registered from another root, at another path, is a clash: keep the
        // registered one and skip this one.
        let clashes: Vec<String> = fresh
            .iter()
            .filter(|(name, entry)| {
                registry.assets.get(*name).is_some_and(|old| {
                    root_of(old).as_deref() != Some(root) && old.path != entry.path
                })
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in clashes {
            let entry = fresh.remove(&name).expect("listed above");
            let old = &registry.assets[&name];
            skipped.push(SkippedAsset {
                reason: format!(
                    "asset name `{name}` is registered from another root ({}, at {}); names must be unique within a host",
                    root_of(old).map(|r| r.display().to_string()).unwrap_or_default(),
                    old.path.display()
                ),
                path: entry.path,
            });
        }
        let mut summary = ScanSummary {
            at: now,
            root: root.to_path_buf(),
            calibre,
            assets: fresh.len(),
            notes,
            available: available
                .iter()
                .map(|p| format!("{}@{}", p.name, p.marketplace))
                .collect(),
            not_loaded: fresh
                .iter()
                .filter_map(|(name, entry)| {
                    let install = entry.install.as_ref()?;
                    (install.enabled.loads() == Some(false))
                        .then(|| format!("{name} ({})", install.enabled.describe()))
                })
                .collect(),
            ..ScanSummary::default()
        };
        for (name, entry) in fresh.iter_mut() {
            match registry.assets.get(name) {
                None => summary.new.push(name.clone()),
                Some(old) => {
                    entry.first_seen = old.first_seen;
                    entry.previous_fingerprints = old.previous_fingerprints.clone();
                    entry.monitoring = old.monitoring.clone();
                    if old.fingerprint == entry.fingerprint {
                        entry.fingerprint_since = old.fingerprint_since;
                    } else if old.calibre != entry.calibre {
                        summary.recalibrated.push(name.clone());
                    } else {
                        summary.fingerprint_changed.push(name.clone());
                        entry.previous_fingerprints.push(old.fingerprint.clone());
                    }
                    let tokens = diff_tokens(&old.surface, &entry.surface);
                    if !tokens.is_empty() {
                        summary.caps_changed.insert(name.clone(), tokens);
                    }
                }
            }
        }
        let mut kept = BTreeMap::new();
        for (name, mut old) in std::mem::take(&mut registry.assets) {
            if fresh.contains_key(&name) {
                continue;
            }
            let old_root = root_of(&old);
            if old_root.as_deref() == Some(root) {
                summary.removed.push(name);
            } else {
                // Another root's asset: kept as it was, with its root made explicit.
                old.root = old_root;
                kept.insert(name, old);
            }
        }
        summary.elapsed_ms = started.elapsed().as_millis() as u64;
        summary.skipped = std::mem::take(&mut skipped);
        kept.append(&mut fresh);
        registry.assets = kept;
        registry
            .available
            .retain(|plugin| plugin.root.as_deref() != Some(root));
        registry.available.extend(available);
        registry.root = Some(root.to_path_buf());
        registry.last_scan = Some(now);
        registry.scans.push(summary.clone());
        if registry.scans.len() > SCAN_HISTORY_LIMIT {
            let excess = registry.scans.len() - SCAN_HISTORY_LIMIT;
            registry.scans.drain(..excess);
        }
        Ok(summary)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::registry::hosts::builtin_hosts;
    use crate::test_support::write;

    fn generic() -> HostProfile {
        builtin_hosts()
            .into_iter()
            .find(|h| h.name == "generic")
            .unwrap()
    }

    #[test]
    fn scan_reports_new_changed_removed_and_caps() {
        let state = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        write(
            root.path(),
            "s/SKILL.md",
            "---\nname: s\ndescription: d\n---\n",
        );
        write(root.path(), "plug-a/package.json", r#"{"name": "plug-a"}"#);
        write(
            root.path(),
            "gone/SKILL.md",
            "---\nname: gone\ndescription: d\n---\n",
        );
        let first = scan(
            state.path(),
            &generic(),
            root.path(),
            Calibre::V3AgentSkills,
        )
        .unwrap();
        assert_eq!(first.new, vec!["gone", "plug-a", "s"]);
        write(root.path(), "s/README.md", "only docs");
        write(
            root.path(),
            "plug-a/package.json",
            r#"{"name": "plug-a", "bin": "x.js"}"#,
        );
        std::fs::remove_dir_all(root.path().join("gone")).unwrap();
        let second = scan(
            state.path(),
            &generic(),
            root.path(),
            Calibre::V3AgentSkills,
        )
        .unwrap();
        assert!(second.new.is_empty());
        assert_eq!(second.removed, vec!["gone"]);
        assert_eq!(second.fingerprint_changed, vec!["plug-a"]);
        assert_eq!(second.caps_changed["plug-a"], vec!["+bin"]);
        let registry = read_registry(state.path(), "generic").unwrap().unwrap();
        assert_eq!(registry.scans.len(), 2);
        assert_eq!(registry.assets["plug-a"].previous_fingerprints.len(), 1);
        assert_eq!(registry.assets["s"].first_seen, first.at);
    }

    #[test]
    fn malformed_and_duplicate_assets_are_skipped_not_fatal() {
        let state = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        write(root.path(), "p/plugin.json", "{oops");
        write(root.path(), "bare/SKILL.md", "# no frontmatter\n");
        write(
            root.path(),
            "a/SKILL.md",
            "---\nname: same\ndescription: d\n---\n",
        );
        write(
            root.path(),
            "b/SKILL.md",
            "---\nname: same\ndescription: d\n---\n",
        );
        write(
            root.path(),
            "good/SKILL.md",
            "---\nname: good\ndescription: d\n---\n",
        );
        let summary = scan(
            state.path(),
            &generic(),
            root.path(),
            Calibre::V3AgentSkills,
        )
        .unwrap();
        assert_eq!(summary.new, vec!["good", "same"]);
        let reasons: Vec<(String, &str)> = summary
            .skipped
            .iter()
            .map(|s| {
                (
                    s.path.file_name().unwrap().to_string_lossy().into_owned(),
                    s.reason.as_str(),
                )
            })
            .collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(
            reasons
                .iter()
                .any(|(p, r)| p == "p" && r.contains("plugin.json"))
        );
        assert!(
            reasons
                .iter()
                .any(|(p, r)| p == "bare" && r.contains("frontmatter"))
        );
        assert!(
            reasons
                .iter()
                .any(|(p, r)| p == "b" && r.contains("also used by"))
        );
        let registry = read_registry(state.path(), "generic").unwrap().unwrap();
        assert_eq!(registry.assets.len(), 2);
    }

    #[test]
    fn another_root_does_not_remove_the_first_roots_assets() {
        let state = tempfile::tempdir().unwrap();
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        write(
            first.path(),
            "a/SKILL.md",
            "---\nname: a\ndescription: d\n---\n",
        );
        write(
            second.path(),
            "b/SKILL.md",
            "---\nname: b\ndescription: d\n---\n",
        );
        write(
            second.path(),
            "a/SKILL.md",
            "---\nname: a\ndescription: other\n---\n",
        );
        scan(
            state.path(),
            &generic(),
            first.path(),
            Calibre::V3AgentSkills,
        )
        .unwrap();
        let summary = scan(
            state.path(),
            &generic(),
            second.path(),
            Calibre::V3AgentSkills,
        )
        .unwrap();
        assert!(summary.removed.is_empty(), "{summary:?}");
        assert_eq!(summary.new, vec!["b"]);
        assert_eq!(summary.skipped.len(), 1);
        assert!(summary.skipped[0].reason.contains("another root"));
        let registry = read_registry(state.path(), "generic").unwrap().unwrap();
        assert_eq!(registry.assets.len(), 2);
        assert_eq!(registry.assets["a"].root.as_deref(), Some(first.path()));
        // Removing `a` from the first root shows up when the first root is scanned again.
        std::fs::remove_dir_all(first.path().join("a")).unwrap();
        let again = scan(
            state.path(),
            &generic(),
            first.path(),
            Calibre::V3AgentSkills,
        )
        .unwrap();
        assert_eq!(again.removed, vec!["a"]);
        assert!(
            read_registry(state.path(), "generic")
                .unwrap()
                .unwrap()
                .assets
                .contains_key("b")
        );
    }

    #[test]
    fn a_registry_written_before_install_records_still_reads() {
        let state = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        write(
            root.path(),
            "s/SKILL.md",
            "---\nname: s\ndescription: d\n---\n",
        );
        scan(
            state.path(),
            &generic(),
            root.path(),
            Calibre::V3AgentSkills,
        )
        .unwrap();
        // Strip what newer scans write: `install`, `available`, and the summary's new lists.
        let path = registry_path(state.path(), "generic");
        let mut value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let object = value.as_object_mut().unwrap();
        object.remove("available");
        for asset in object["assets"].as_object_mut().unwrap().values_mut() {
            asset.as_object_mut().unwrap().remove("install");
        }
        for scan in object["scans"].as_array_mut().unwrap() {
            for key in ["not_loaded", "available", "notes"] {
                scan.as_object_mut().unwrap().remove(key);
            }
        }
        std::fs::write(&path, value.to_string()).unwrap();
        let registry = read_registry(state.path(), "generic").unwrap().unwrap();
        assert!(registry.available.is_empty());
        assert_eq!(registry.assets["s"].install, None);
        let again = scan(
            state.path(),
            &generic(),
            root.path(),
            Calibre::V3AgentSkills,
        )
        .unwrap();
        assert!(again.new.is_empty() && again.fingerprint_changed.is_empty());
    }

    #[test]
    fn registry_of_another_host_is_refused() {
        let state = tempfile::tempdir().unwrap();
        let mut registry = Registry::new("a");
        registry.host = "b".into();
        super::super::state::write_json(&registry_path(state.path(), "a"), &registry).unwrap();
        assert!(read_registry(state.path(), "a").is_err());
    }
}
