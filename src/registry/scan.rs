//! `registry.<host>.json`: one file per host, holding each installed asset's fingerprint (with
//! its calibre), capability surface and history, the scan history, and the host's model bumps.
//! [`scan`] walks a host root, fingerprints every asset with `crate::asset::fingerprint` (the same
//! code `run` records), and reports what changed since the previous scan. Writes are atomic and
//! under an exclusive lock; another host's registry is never touched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::RegistryError;
use super::hosts::{HostProfile, discover_assets};
use super::models::{ModelBump, Waiver};
use super::state::{check_schema, lock_for, read_json, write_json};
use super::surface::{AssetKind, Surface, diff_tokens, load_asset};
use crate::asset::fingerprint::{Calibre, fingerprint};

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
    write_json(&path, &registry)?;
    Ok(result)
}

/// One asset freshly scanned.
struct Scanned {
    name: String,
    entry: AssetEntry,
}

fn scan_one(
    host: &HostProfile,
    dir: &Path,
    manifest: &str,
    calibre: Calibre,
    now: DateTime<Utc>,
) -> Result<Scanned, RegistryError> {
    let loaded = load_asset(dir, manifest, host.kind)?;
    let print = fingerprint(dir, calibre)?;
    Ok(Scanned {
        name: loaded.name,
        entry: AssetEntry {
            kind: loaded.kind,
            path: dir.to_path_buf(),
            manifest: manifest.to_string(),
            description: loaded.description,
            version: loaded.version,
            fingerprint: print.digest,
            calibre,
            fingerprint_files: print.files.len(),
            fingerprint_bytes: print.bytes,
            surface: loaded.surface,
            first_seen: now,
            fingerprint_since: now,
            previous_fingerprints: Vec::new(),
        },
    })
}

/// Fingerprint the assets on up to `available_parallelism` threads, keeping input order.
fn scan_all(
    host: &HostProfile,
    found: &[super::hosts::DiscoveredAsset],
    calibre: Calibre,
    now: DateTime<Utc>,
) -> Result<Vec<Scanned>, RegistryError> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
        .min(found.len().max(1));
    let chunk = found.len().div_ceil(threads).max(1);
    let results: Vec<Result<Vec<Scanned>, RegistryError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = found
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|asset| scan_one(host, &asset.dir, &asset.manifest, calibre, now))
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("scan worker panicked"))
            .collect()
    });
    let mut scanned = Vec::with_capacity(found.len());
    for part in results {
        scanned.extend(part?);
    }
    Ok(scanned)
}

/// Scan `root` for `host`'s assets, update `registry.<host>.json`, and return what changed.
/// On any error (malformed manifest, unreadable file) nothing is written.
pub fn scan(
    state_dir: &Path,
    host: &HostProfile,
    root: &Path,
    calibre: Calibre,
) -> Result<ScanSummary, RegistryError> {
    let started = Instant::now();
    let now = Utc::now();
    let found = discover_assets(host, root)?;
    let scanned = scan_all(host, &found, calibre, now)?;
    let mut fresh: BTreeMap<String, AssetEntry> = BTreeMap::new();
    for item in scanned {
        if let Some(other) = fresh.get(&item.name) {
            return Err(RegistryError::Invalid {
                path: item.entry.path.clone(),
                message: format!(
                    "asset name `{}` is also used by {}; names must be unique within a host",
                    item.name,
                    other.path.display()
                ),
            });
        }
        fresh.insert(item.name, item.entry);
    }
    update_registry(state_dir, &host.name, |registry| {
        let mut summary = ScanSummary {
            at: now,
            root: root.to_path_buf(),
            calibre,
            assets: fresh.len(),
            ..ScanSummary::default()
        };
        for (name, entry) in fresh.iter_mut() {
            match registry.assets.get(name) {
                None => summary.new.push(name.clone()),
                Some(old) => {
                    entry.first_seen = old.first_seen;
                    entry.previous_fingerprints = old.previous_fingerprints.clone();
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
        summary.removed = registry
            .assets
            .keys()
            .filter(|name| !fresh.contains_key(*name))
            .cloned()
            .collect();
        summary.elapsed_ms = started.elapsed().as_millis() as u64;
        registry.assets = std::mem::take(&mut fresh);
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
    use crate::registry::hosts::builtin_hosts;

    fn write(root: &Path, relative: &str, content: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

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
    fn malformed_manifest_writes_nothing() {
        let state = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        write(root.path(), "p/plugin.json", "{oops");
        let error = scan(
            state.path(),
            &generic(),
            root.path(),
            Calibre::V3AgentSkills,
        )
        .unwrap_err();
        assert!(error.to_string().contains("plugin.json"), "{error}");
        assert!(!registry_path(state.path(), "generic").exists());
    }

    #[test]
    fn registry_of_another_host_is_refused() {
        let state = tempfile::tempdir().unwrap();
        let mut registry = Registry::new("a");
        registry.host = "b".into();
        write_json(&registry_path(state.path(), "a"), &registry).unwrap();
        assert!(read_registry(state.path(), "a").is_err());
    }
}
