//! Sharding a run across machines (`skill-lift run --shard i/n`) and merging the shards back
//! (`skill-lift merge`).
//!
//! A trial belongs to shard `i` of `n` when `fnv1a64(trial_id) mod n = i − 1`. The hash is
//! FNV-1a 64-bit, written out here and pinned for the run-format version (like nextest's
//! `hash:M/N` partitioning): changing it would move trials between shards of a resumed run.
//! The assignment depends only on the trial id (`<case>/<arm>/<attempt>`), never on the order
//! or the machine. Merging is the inverse: shards whose manifests describe the same run are
//! unioned, duplicates refused, and the merged folder is analyzed like a single-machine run.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::record::{Manifest, TrialKey, TrialRecord};

/// FNV-1a, 64 bit (offset basis 0xcbf29ce484222325, prime 0x100000001b3). Pinned: do not change.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether the trial with this id belongs to the shard.
    pub fn contains(&self, trial_id: &str) -> bool {
        fnv1a64(trial_id.as_bytes()) % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let error = || format!("`{value}` is not a shard: write i/n with 1 ≤ i ≤ n, e.g. 2/3");
        let (index, count) = value.split_once('/').ok_or_else(error)?;
        let index: u32 = index.trim().parse().map_err(|_| error())?;
        let count: u32 = count.trim().parse().map_err(|_| error())?;
        if count == 0 || index == 0 || index > count {
            return Err(error());
        }
        Ok(Shard { index, count })
    }
}

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no shard folder given")]
    Empty,
    #[error(
        "{path}: its manifest differs from {first}'s in {field}; only shards of one run can be merged"
    )]
    ManifestMismatch {
        path: PathBuf,
        first: PathBuf,
        field: &'static str,
    },
    #[error("trial {trial_id} is recorded in both {first} and {second}; shards must not overlap")]
    Duplicate {
        trial_id: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("{path}: trial {trial_id} was not planned in this run")]
    Unplanned { path: PathBuf, trial_id: String },
}

/// The fields of a manifest that define the run; shards must agree on all of them. Run id,
/// creation time, paths, the server URL and the shard itself may differ between machines.
fn identity(manifest: &Manifest) -> [(&'static str, serde_json::Value); 13] {
    use serde_json::json;
    [
        ("asset name", json!(manifest.asset.name)),
        ("asset fingerprint", json!(manifest.asset.fingerprint)),
        ("calibre", json!(manifest.asset.calibre)),
        ("eval set digest", json!(manifest.eval_set.digest)),
        (
            "cases",
            json!([
                &manifest.eval_set.case_ids,
                &manifest.eval_set.case_clusters
            ]),
        ),
        (
            "runner",
            json!([&manifest.runner.kind, &manifest.runner.skill_mode]),
        ),
        ("runner profile", json!(manifest.runner.profile_digest)),
        ("model", json!(manifest.model)),
        ("k", json!(manifest.k)),
        ("seed", json!(manifest.seed)),
        ("decoys", json!(manifest.decoys.skills)),
        (
            "arms and plan",
            json!([&manifest.arms, manifest.trials_planned]),
        ),
        ("arm design", json!(manifest.arm_design)),
    ]
}

/// Merge shards: check the manifests describe one run, refuse duplicate and unplanned trials,
/// and return the merged manifest (the first shard's, without a shard, with `run_id`) and the
/// records in plan order (attempt, case order, arm), their `run_id` set to `run_id`.
pub fn merge_shards(
    shards: &[(PathBuf, Manifest, Vec<TrialRecord>)],
    run_id: &str,
) -> Result<(Manifest, Vec<TrialRecord>), MergeError> {
    let (first_path, first, _) = shards.first().ok_or(MergeError::Empty)?;
    let expected = identity(first);
    for (path, manifest, _) in &shards[1..] {
        for ((field, a), (_, b)) in expected.iter().zip(identity(manifest)) {
            if *a != b {
                return Err(MergeError::ManifestMismatch {
                    path: path.clone(),
                    first: first_path.clone(),
                    field,
                });
            }
        }
    }
    let case_order = |case_id: &str| first.eval_set.case_ids.iter().position(|c| c == case_id);
    let mut seen: std::collections::BTreeMap<TrialKey, &Path> = Default::default();
    let mut merged = Vec::new();
    for (path, _, records) in shards {
        for record in records {
            if case_order(&record.case_id).is_none()
                || record.attempt == 0
                || record.attempt > first.k
                || !first.arms.contains(&record.arm)
            {
                return Err(MergeError::Unplanned {
                    path: path.clone(),
                    trial_id: record.trial_id.clone(),
                });
            }
            if let Some(previous) = seen.insert(record.key(), path) {
                return Err(MergeError::Duplicate {
                    trial_id: record.trial_id.clone(),
                    first: previous.to_path_buf(),
                    second: path.clone(),
                });
            }
            let mut record = record.clone();
            record.run_id = run_id.to_string();
            merged.push(record);
        }
    }
    merged.sort_by_key(|r| (r.attempt, case_order(&r.case_id), r.arm));
    let mut manifest = first.clone();
    manifest.run_id = run_id.to_string();
    manifest.shard = None;
    Ok((manifest, merged))
}

/// The shards named in `shards` that are missing, as `i/n` strings (empty when complete or when
/// the shard folders carry no shard).
pub fn missing_shards(manifests: &[&Manifest]) -> Vec<String> {
    let present: BTreeSet<Shard> = manifests.iter().filter_map(|m| m.shard).collect();
    let Some(count) = present.iter().next().map(|s| s.count) else {
        return Vec::new();
    };
    (1..=count)
        .map(|index| Shard { index, count })
        .filter(|s| !present.contains(s))
        .map(|s| s.to_string())
        .collect()
}

impl PartialOrd for Shard {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Shard {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.count, self.index).cmp(&(other.count, other.index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_published_vectors() {
        // Test vectors from the FNV reference (isthe.com/chongo/tech/comp/fnv).
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn shards_partition_trial_ids() {
        let ids: Vec<String> = (0..200).map(|i| format!("case-{i}/with_skill/1")).collect();
        let shards: Vec<Shard> = (1..=3).map(|index| Shard { index, count: 3 }).collect();
        for id in &ids {
            assert_eq!(shards.iter().filter(|s| s.contains(id)).count(), 1);
        }
        for shard in &shards {
            let size = ids.iter().filter(|id| shard.contains(id)).count();
            assert!(size > 40, "shard {shard} holds {size} of 200");
        }
    }

    #[test]
    fn shard_syntax() {
        assert_eq!(
            "2/3".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 3 }
        );
        for bad in ["0/3", "4/3", "1/0", "3", "a/b"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
