//! The model-version lifecycle of a host: `bump` records a new model version (time, id), and so
//! does `check` when it observes the model changed ([`record_detected`], with the evidence;
//! `identity.rs` decides, `observe.rs` reads the sources); `check` lists the assets not evaluated
//! under the current model since the last bump (evaluated = the baseline store holds a verdict
//! for the asset under that model — requested or reported by the server — recorded after the
//! bump, or the asset was explicitly waived).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::RegistryError;
use super::baseline::{BaselineEntry, BaselineStore};
use super::identity::{ModelChange, ModelObservation, same_model};
use super::scan::{Registry, update_registry};

/// How a bump came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BumpOrigin {
    /// `skill-lift bump --model ID` (and every bump recorded before `check` detected changes).
    #[default]
    Manual,
    /// `skill-lift check` observed the model change and recorded it.
    Detected,
}

/// A model version marked on a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelBump {
    /// Since when the model is the host's: the time of `bump`, or for a detected bump the first
    /// sighting of the new model after the previous bump.
    pub at: DateTime<Utc>,
    pub model: String,
    #[serde(default)]
    pub note: Option<String>,
    /// Manual or detected.
    #[serde(default)]
    pub origin: BumpOrigin,
    /// A detected bump: when `check` recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected_at: Option<DateTime<Utc>>,
    /// A detected bump: the model before it (`None` when the host had no bump).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// A detected bump: each source's newest sighting of the new model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<ModelObservation>,
    /// A detected bump: each source's newest observation naming another model at the time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreeing: Vec<ModelObservation>,
}

impl ModelBump {
    /// A manual bump of `model` at `at`.
    pub fn manual(model: &str, at: DateTime<Utc>, note: Option<String>) -> Self {
        ModelBump {
            at,
            model: model.to_string(),
            note,
            origin: BumpOrigin::Manual,
            detected_at: None,
            previous: None,
            evidence: Vec::new(),
            disagreeing: Vec::new(),
        }
    }
}

/// Whether `entry` is a verdict under `model`: the model requested or the one the server
/// reported is it ([`same_model`]).
pub fn entry_is_under(entry: &BaselineEntry, model: &str) -> bool {
    same_model(&entry.model, model)
        || entry
            .observed_model
            .as_deref()
            .is_some_and(|observed| same_model(observed, model))
}

/// An asset explicitly excused from re-evaluation under a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waiver {
    pub asset: String,
    pub model: String,
    pub at: DateTime<Utc>,
    pub reason: String,
}

/// Record a new model version for `host`.
pub fn bump(
    state_dir: &Path,
    host: &str,
    model: &str,
    note: Option<String>,
) -> Result<ModelBump, RegistryError> {
    let bump = ModelBump::manual(model, Utc::now(), note);
    update_registry(state_dir, host, |registry| {
        registry.model_bumps.push(bump.clone());
        Ok(())
    })?;
    Ok(bump)
}

/// Record `change` as `host`'s new model (a [`BumpOrigin::Detected`] bump at its first sighting,
/// with its evidence). `None` when, by the time the lock is held, the host's last bump is no
/// longer `expected_last` (another `check` or a `bump` got there first): nothing is recorded
/// twice.
pub fn record_detected(
    state_dir: &Path,
    host: &str,
    expected_last: Option<&ModelBump>,
    change: &ModelChange,
) -> Result<Option<ModelBump>, RegistryError> {
    update_registry(state_dir, host, |registry| {
        if registry.model_bumps.last() != expected_last {
            return Ok(None);
        }
        let bump = ModelBump {
            at: change.first_seen,
            model: change.to.clone(),
            note: Some(format!(
                "detected by `skill-lift check` from {} sighting(s)",
                change.sightings
            )),
            origin: BumpOrigin::Detected,
            detected_at: Some(Utc::now()),
            previous: change.from.clone(),
            evidence: change.evidence.clone(),
            disagreeing: change.disagreeing.clone(),
        };
        registry.model_bumps.push(bump.clone());
        Ok(Some(bump))
    })
}

/// Waive `assets` under the host's current model. Errors when no model was bumped or an asset is
/// not in the registry.
pub fn waive(
    state_dir: &Path,
    host: &str,
    assets: &[String],
    reason: &str,
) -> Result<Vec<Waiver>, RegistryError> {
    let path = super::scan::registry_path(state_dir, host);
    update_registry(state_dir, host, |registry| {
        let current =
            registry
                .model_bumps
                .last()
                .cloned()
                .ok_or_else(|| RegistryError::Invalid {
                    path: path.clone(),
                    message: "no model bump recorded; run `skill-lift bump --model ID` first"
                        .to_string(),
                })?;
        let mut added = Vec::new();
        for asset in assets {
            if !registry.assets.contains_key(asset) {
                return Err(RegistryError::Invalid {
                    path: path.clone(),
                    message: format!("no asset `{asset}` in this registry (run `skill-lift scan`)"),
                });
            }
            let waiver = Waiver {
                asset: asset.clone(),
                model: current.model.clone(),
                at: Utc::now(),
                reason: reason.to_string(),
            };
            registry.waivers.push(waiver.clone());
            added.push(waiver);
        }
        Ok(added)
    })
}

/// Where one asset stands under the current model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssetStanding {
    pub asset: String,
    /// `evaluated`, `waived` or `pending`.
    pub state: &'static str,
    /// Latest verdict time under the current model (after the bump), when evaluated.
    pub evaluated_at: Option<DateTime<Utc>>,
    /// Latest model the asset has any verdict under, for pending assets.
    pub last_model: Option<String>,
}

/// The result of `check`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    pub host: String,
    pub current: Option<ModelBump>,
    pub last_scan: Option<DateTime<Utc>>,
    /// Whether a scan ran after the last bump.
    pub scanned_since_bump: bool,
    pub assets: Vec<AssetStanding>,
}

impl CheckReport {
    /// Assets pending evaluation.
    pub fn pending(&self) -> Vec<&AssetStanding> {
        self.assets
            .iter()
            .filter(|a| a.state == "pending")
            .collect()
    }
}

/// Each registry asset's standing under the current model.
pub fn check(registry: &Registry, baseline: &BaselineStore) -> CheckReport {
    let current = registry.model_bumps.last().cloned();
    let scanned_since_bump = match (&current, registry.last_scan) {
        (Some(bump), Some(scan)) => scan >= bump.at,
        (None, _) => true,
        (Some(_), None) => false,
    };
    let assets = registry
        .assets
        .keys()
        .map(|asset| {
            let entries = baseline
                .assets
                .get(asset)
                .map(|a| a.entries.as_slice())
                .unwrap_or(&[]);
            let last_model = entries
                .iter()
                .max_by_key(|e| e.recorded_at)
                .map(|e| e.model.clone());
            let Some(bump) = &current else {
                return AssetStanding {
                    asset: asset.clone(),
                    state: "evaluated",
                    evaluated_at: None,
                    last_model,
                };
            };
            let evaluated_at = entries
                .iter()
                .filter(|e| entry_is_under(e, &bump.model) && e.recorded_at >= bump.at)
                .map(|e| e.recorded_at)
                .max();
            let waived = registry
                .waivers
                .iter()
                .any(|w| &w.asset == asset && w.model == bump.model && w.at >= bump.at);
            let state = if evaluated_at.is_some() {
                "evaluated"
            } else if waived {
                "waived"
            } else {
                "pending"
            };
            AssetStanding {
                asset: asset.clone(),
                state,
                evaluated_at,
                last_model,
            }
        })
        .collect();
    CheckReport {
        host: registry.host.clone(),
        current,
        last_scan: registry.last_scan,
        scanned_since_bump,
        assets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::registry::baseline::{AssetBaseline, BaselineEntry, EntrySource};
    use crate::features::registry::scan::read_registry;

    fn entry(model: &str, at: DateTime<Utc>) -> BaselineEntry {
        BaselineEntry {
            fingerprint: "sha256:x".into(),
            calibre: "v3-agent-skills".into(),
            model: model.into(),
            observed_model: None,
            trial_at: None,
            runner: "r".into(),
            case_id: "c".into(),
            eval_set: None,
            arm: "with_skill".into(),
            attempt: 1,
            verdict: crate::record::Outcome::Pass,
            source: EntrySource::Run,
            run_id: Some("run".into()),
            recorded_at: at,
            activated: None,
            checks: vec![],
            tool_calls: None,
            tool_call_errors: None,
            reason: None,
            cost_usd: None,
            judge_cost_usd: None,
        }
    }

    #[test]
    fn check_is_pending_after_bump_until_a_verdict_or_waiver() {
        let state = tempfile::tempdir().unwrap();
        update_registry(state.path(), "h", |r| {
            r.assets.insert(
                "a".into(),
                serde_json::from_value(serde_json::json!({
                    "kind": "skill", "path": "/a", "manifest": "SKILL.md", "description": "",
                    "version": null, "fingerprint": "sha256:x", "calibre": "v3-agent-skills",
                    "fingerprint_files": 1, "fingerprint_bytes": 1, "surface": {},
                    "first_seen": "2026-01-01T00:00:00Z", "fingerprint_since": "2026-01-01T00:00:00Z"}))
                .unwrap(),
            );
            Ok(())
        })
        .unwrap();
        let mut store = BaselineStore::default();
        let registry = read_registry(state.path(), "h").unwrap().unwrap();
        assert!(check(&registry, &store).pending().is_empty());
        let bumped = bump(state.path(), "h", "model-2", None).unwrap();
        let registry = read_registry(state.path(), "h").unwrap().unwrap();
        store.assets.insert(
            "a".into(),
            AssetBaseline {
                entries: vec![entry("model-1", bumped.at)],
            },
        );
        let report = check(&registry, &store);
        assert_eq!(report.pending().len(), 1);
        assert_eq!(report.pending()[0].last_model.as_deref(), Some("model-1"));
        store
            .assets
            .get_mut("a")
            .unwrap()
            .entries
            .push(entry("model-2", Utc::now()));
        assert!(check(&registry, &store).pending().is_empty());
        store.assets.clear();
        waive(state.path(), "h", &["a".into()], "unchanged workflow").unwrap();
        let registry = read_registry(state.path(), "h").unwrap().unwrap();
        assert_eq!(check(&registry, &store).assets[0].state, "waived");
        assert!(waive(state.path(), "h", &["zzz".into()], "x").is_err());
    }
}
