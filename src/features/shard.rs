//! Sharding a run across machines (`skill-lift run --shard i/n`) and merging the shards back
//! (`skill-lift merge`).
//!
//! A trial belongs to shard `i` of `n` when `fnv1a64(trial_id) mod n = i − 1`. The hash is
//! FNV-1a 64-bit, written out here and pinned for the run-format version (like nextest's
//! `hash:M/N` partitioning): changing it would move trials between shards of a resumed run.
//! The assignment depends only on the trial id (`<case>/<arm>/<attempt>`), never on the order
//! or the machine. Merging is the inverse: shards whose manifests describe the same run are
//! unioned, duplicates refused, and the merged folder is analyzed like a single-machine run.
//!
//! `--shard auto` ([`auto_shard`]) reads the shard from the environment of a Kubernetes
//! Indexed Job, a CI system's parallel jobs, or an explicit variable pair, and resolves to the
//! same [`Shard`] before anything else sees it.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::record::{Manifest, Shard, TrialKey, TrialRecord};

/// FNV-1a, 64 bit (offset basis 0xcbf29ce484222325, prime 0x100000001b3). Pinned: do not change.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
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

/// A `--shard` value that is not `i/n` with 1 ≤ i ≤ n.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a shard: write i/n with 1 ≤ i ≤ n, e.g. 2/3")]
pub struct ShardSyntaxError(pub String);

impl FromStr for Shard {
    type Err = ShardSyntaxError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let error = || ShardSyntaxError(value.to_string());
        let (index, count) = value.split_once('/').ok_or_else(error)?;
        let index: u32 = index.trim().parse().map_err(|_| error())?;
        let count: u32 = count.trim().parse().map_err(|_| error())?;
        if count == 0 || index == 0 || index > count {
            return Err(error());
        }
        Ok(Shard { index, count })
    }
}

/// Environment variables `--shard auto` reads, in the order it tries them.
///
/// | source | index variable | count variable | index base |
/// |---|---|---|---|
/// | explicit | `SKILL_LIFT_SHARD_INDEX` | `SKILL_LIFT_SHARD_COUNT` | 0 |
/// | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX` | `SKILL_LIFT_SHARD_COUNT` | 0 |
/// | GitLab CI `parallel:` | `CI_NODE_INDEX` | `CI_NODE_TOTAL` | 1 |
/// | CircleCI `parallelism` | `CIRCLE_NODE_INDEX` | `CIRCLE_NODE_TOTAL` | 0 |
/// | Buildkite `parallelism` | `BUILDKITE_PARALLEL_JOB` | `BUILDKITE_PARALLEL_JOB_COUNT` | 0 |
///
/// Kubernetes sets only the index (`JOB_COMPLETION_INDEX`, from the pod annotation
/// `batch.kubernetes.io/job-completion-index`), never the Job's `spec.completions`, so the count
/// comes from `SKILL_LIFT_SHARD_COUNT`. GitHub Actions has no such variable at all: its
/// `strategy.job-index` / `strategy.job-total` exist only as expression contexts, so a workflow
/// passes them (or a matrix value) through the explicit pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShardSource {
    /// `SKILL_LIFT_SHARD_INDEX` (0-based) and `SKILL_LIFT_SHARD_COUNT`.
    Explicit,
    /// `JOB_COMPLETION_INDEX` (0-based) and `SKILL_LIFT_SHARD_COUNT`.
    KubernetesIndexedJob,
    /// `CI_NODE_INDEX` (1-based) and `CI_NODE_TOTAL`.
    GitLab,
    /// `CIRCLE_NODE_INDEX` (0-based) and `CIRCLE_NODE_TOTAL`.
    CircleCi,
    /// `BUILDKITE_PARALLEL_JOB` (0-based) and `BUILDKITE_PARALLEL_JOB_COUNT`.
    Buildkite,
}

/// The explicit count variable, also the count of a Kubernetes Indexed Job.
pub(crate) const SHARD_COUNT_VAR: &str = "SKILL_LIFT_SHARD_COUNT";
/// The explicit (0-based) index variable.
pub(crate) const SHARD_INDEX_VAR: &str = "SKILL_LIFT_SHARD_INDEX";
/// The index Kubernetes sets in each pod of an Indexed Job (0-based).
pub(crate) const JOB_COMPLETION_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

impl ShardSource {
    /// Every source, in the order `--shard auto` tries them.
    pub(crate) const ALL: [ShardSource; 5] = [
        Self::Explicit,
        Self::KubernetesIndexedJob,
        Self::GitLab,
        Self::CircleCi,
        Self::Buildkite,
    ];

    /// The variable holding the index.
    pub(crate) fn index_var(self) -> &'static str {
        match self {
            Self::Explicit => SHARD_INDEX_VAR,
            Self::KubernetesIndexedJob => JOB_COMPLETION_INDEX_VAR,
            Self::GitLab => "CI_NODE_INDEX",
            Self::CircleCi => "CIRCLE_NODE_INDEX",
            Self::Buildkite => "BUILDKITE_PARALLEL_JOB",
        }
    }

    /// The variable holding the number of shards.
    pub(crate) fn count_var(self) -> &'static str {
        match self {
            Self::Explicit | Self::KubernetesIndexedJob => SHARD_COUNT_VAR,
            Self::GitLab => "CI_NODE_TOTAL",
            Self::CircleCi => "CIRCLE_NODE_TOTAL",
            Self::Buildkite => "BUILDKITE_PARALLEL_JOB_COUNT",
        }
    }

    /// The index of the first shard in this source's numbering (0 or 1).
    pub(crate) fn first_index(self) -> u32 {
        match self {
            Self::GitLab => 1,
            _ => 0,
        }
    }

    /// A short name for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Explicit => "explicit",
            Self::KubernetesIndexedJob => "Kubernetes Indexed Job",
            Self::GitLab => "GitLab CI",
            Self::CircleCi => "CircleCI",
            Self::Buildkite => "Buildkite",
        }
    }
}

/// Why `--shard auto` found no shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AutoShardError {
    #[error(
        "--shard auto found no shard index in the environment: set {SHARD_INDEX_VAR} (0-based) and {SHARD_COUNT_VAR}, or run it as a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with {SHARD_COUNT_VAR} set to the Job's completions), or under GitLab CI / CircleCI / Buildkite parallelism"
    )]
    NotFound,
    #[error(
        "--shard auto: {index_var} is set but {count_var} is not; set {count_var} to the number of shards{hint}"
    )]
    MissingCount {
        index_var: &'static str,
        count_var: &'static str,
        hint: &'static str,
    },
    #[error("--shard auto: {var}=`{value}` is not a whole number")]
    NotANumber { var: &'static str, value: String },
    #[error(
        "--shard auto: {index_var}={index} is outside the {count} shards of {count_var}={count} (valid: {first}..={last})"
    )]
    OutOfRange {
        index_var: &'static str,
        count_var: &'static str,
        index: u64,
        count: u64,
        first: u64,
        last: u64,
    },
    #[error(
        "--shard auto: {SHARD_INDEX_VAR}={explicit} and JOB_COMPLETION_INDEX={kubernetes} disagree; unset one"
    )]
    Conflict {
        explicit: String,
        kubernetes: String,
    },
}

/// A shard found by `--shard auto`, with where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AutoShard {
    pub shard: Shard,
    pub source: ShardSource,
}

/// Resolve `--shard auto` from the environment (`env` looks a variable up; empty values count
/// as unset). Sources are tried in [`ShardSource::ALL`] order; the first whose index variable is
/// set decides, and its count must be set too. The result is the 1-based [`Shard`].
pub(crate) fn auto_shard(
    env: impl Fn(&str) -> Option<String>,
) -> Result<AutoShard, AutoShardError> {
    let get = |var: &str| {
        env(var)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if let (Some(explicit), Some(kubernetes)) =
        (get(SHARD_INDEX_VAR), get(JOB_COMPLETION_INDEX_VAR))
        && explicit != kubernetes
    {
        return Err(AutoShardError::Conflict {
            explicit,
            kubernetes,
        });
    }
    for source in ShardSource::ALL {
        let Some(index) = get(source.index_var()) else {
            continue;
        };
        let number = |var: &'static str, value: String| {
            value
                .parse::<u64>()
                .map_err(|_| AutoShardError::NotANumber { var, value })
        };
        let index = number(source.index_var(), index)?;
        let count = match get(source.count_var()) {
            Some(count) => number(source.count_var(), count)?,
            None => {
                return Err(AutoShardError::MissingCount {
                    index_var: source.index_var(),
                    count_var: source.count_var(),
                    hint: if source == ShardSource::KubernetesIndexedJob {
                        " (Kubernetes does not expose the Job's completions to its pods; set it in the pod's env)"
                    } else {
                        ""
                    },
                });
            }
        };
        let first = u64::from(source.first_index());
        let out_of_range = || AutoShardError::OutOfRange {
            index_var: source.index_var(),
            count_var: source.count_var(),
            index,
            count,
            first,
            last: (count + first).saturating_sub(1),
        };
        if count == 0 || count > u64::from(u32::MAX) || index < first || index - first >= count {
            return Err(out_of_range());
        }
        return Ok(AutoShard {
            shard: Shard {
                index: (index - first + 1) as u32,
                count: count as u32,
            },
            source,
        });
    }
    Err(AutoShardError::NotFound)
}

/// The value of `--shard`: `i/n`, or `auto` resolved from the environment at parse time (see
/// [`auto_shard`]); either way the run sees a plain [`Shard`]. For clap's `value_parser`.
pub(crate) fn parse_shard_flag(value: &str) -> Result<Shard, ShardFlagError> {
    if value.trim() == "auto" {
        let found = auto_shard(|var| std::env::var(var).ok())?;
        crate::values::reporter::report(crate::values::reporter::Event::ShardFromEnvironment {
            shard: found.shard.to_string(),
            source: found.source.name().to_string(),
            index_var: found.source.index_var().to_string(),
            count_var: found.source.count_var().to_string(),
        });
        return Ok(found.shard);
    }
    Ok(value.parse()?)
}

/// Why a `--shard` value gives no shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ShardFlagError {
    /// `auto` found no shard in the environment.
    #[error(transparent)]
    Auto(#[from] AutoShardError),
    /// Not `i/n`.
    #[error(transparent)]
    Syntax(#[from] ShardSyntaxError),
}

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
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
    #[error("{second}: shard {shard} is given twice (also {first}); pass each shard folder once")]
    SameShard {
        shard: Shard,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(
        "{path}: not a shard (its run did not use --shard), while {shard_path} is one; merge takes the shard folders of one run"
    )]
    NotAShard { path: PathBuf, shard_path: PathBuf },
    #[error(
        "{path}: shard {shard} is of a run split {count} ways, {first} of one split {first_count} ways"
    )]
    ShardCount {
        path: PathBuf,
        shard: Shard,
        count: u32,
        first: PathBuf,
        first_count: u32,
    },
}

/// Check that the folders given to `merge` are distinct shards of one split (or, together,
/// no shard at all), before any missing shard is reported.
pub(crate) fn check_shard_set(shards: &[(&Path, Option<Shard>)]) -> Result<(), MergeError> {
    let Some((first_path, first)) = shards
        .iter()
        .find_map(|(path, shard)| shard.map(|shard| (*path, shard)))
    else {
        return Ok(());
    };
    let mut seen: std::collections::BTreeMap<Shard, &Path> = Default::default();
    for (path, shard) in shards {
        let Some(shard) = *shard else {
            return Err(MergeError::NotAShard {
                path: path.to_path_buf(),
                shard_path: first_path.to_path_buf(),
            });
        };
        if shard.count != first.count {
            return Err(MergeError::ShardCount {
                path: path.to_path_buf(),
                shard,
                count: shard.count,
                first: first_path.to_path_buf(),
                first_count: first.count,
            });
        }
        if let Some(previous) = seen.insert(shard, path) {
            return Err(MergeError::SameShard {
                shard,
                first: previous.to_path_buf(),
                second: path.to_path_buf(),
            });
        }
    }
    Ok(())
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
pub(crate) fn merge_shards(
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
    // Case id → its position in the plan, built once (a lookup per record, not a scan).
    let case_positions: std::collections::HashMap<&str, usize> = first
        .eval_set
        .case_ids
        .iter()
        .enumerate()
        .map(|(position, case_id)| (case_id.as_str(), position))
        .collect();
    let case_order = |case_id: &str| case_positions.get(case_id).copied();
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
pub(crate) fn missing_shards(manifests: &[&Manifest]) -> Vec<String> {
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
    fn a_shard_given_twice_or_beside_a_whole_run_is_named() {
        let one = Some(Shard { index: 1, count: 2 });
        let two = Some(Shard { index: 2, count: 2 });
        let (a, b) = (Path::new("sh/sh1"), Path::new("sh/sh2"));
        assert!(check_shard_set(&[(a, one), (b, two)]).is_ok());
        assert!(
            check_shard_set(&[(a, one)]).is_ok(),
            "missing shards are reported later"
        );
        assert!(check_shard_set(&[(a, None), (b, None)]).is_ok());
        let error = check_shard_set(&[(a, one), (a, one)]).unwrap_err();
        assert!(matches!(error, MergeError::SameShard { .. }), "{error}");
        assert!(
            error.to_string().contains("shard 1/2 is given twice"),
            "{error}"
        );
        let error = check_shard_set(&[(a, one), (b, None)]).unwrap_err();
        assert!(matches!(error, MergeError::NotAShard { .. }), "{error}");
        let error = check_shard_set(&[(a, None), (b, two)]).unwrap_err();
        assert!(
            error.to_string().starts_with("sh/sh1: not a shard"),
            "{error}"
        );
        let error = check_shard_set(&[(a, one), (b, Some(Shard { index: 2, count: 3 }))]);
        assert!(matches!(error, Err(MergeError::ShardCount { .. })));
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

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |var| map.get(var).cloned()
    }

    #[test]
    fn auto_shard_reads_each_source_in_its_numbering() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Shard, ShardSource);
        let cases: [Case; 5] = [
            (
                &[
                    ("SKILL_LIFT_SHARD_INDEX", "0"),
                    ("SKILL_LIFT_SHARD_COUNT", "4"),
                ],
                Shard { index: 1, count: 4 },
                ShardSource::Explicit,
            ),
            (
                &[
                    ("JOB_COMPLETION_INDEX", "3"),
                    ("SKILL_LIFT_SHARD_COUNT", "4"),
                ],
                Shard { index: 4, count: 4 },
                ShardSource::KubernetesIndexedJob,
            ),
            (
                &[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "3")],
                Shard { index: 2, count: 3 },
                ShardSource::GitLab,
            ),
            (
                &[("CIRCLE_NODE_INDEX", "2"), ("CIRCLE_NODE_TOTAL", "3")],
                Shard { index: 3, count: 3 },
                ShardSource::CircleCi,
            ),
            (
                &[
                    ("BUILDKITE_PARALLEL_JOB", "0"),
                    ("BUILDKITE_PARALLEL_JOB_COUNT", "2"),
                ],
                Shard { index: 1, count: 2 },
                ShardSource::Buildkite,
            ),
        ];
        for (env, shard, source) in cases {
            assert_eq!(
                auto_shard(env_of(env)).unwrap(),
                AutoShard { shard, source },
                "{env:?}"
            );
        }
        // The explicit pair wins over a CI system's own variables; the same index twice is fine.
        let found = auto_shard(env_of(&[
            ("SKILL_LIFT_SHARD_INDEX", "1"),
            ("JOB_COMPLETION_INDEX", "1"),
            ("SKILL_LIFT_SHARD_COUNT", "2"),
            ("CI_NODE_INDEX", "1"),
            ("CI_NODE_TOTAL", "5"),
        ]))
        .unwrap();
        assert_eq!(found.shard, Shard { index: 2, count: 2 });
    }

    #[test]
    fn auto_shard_refuses_what_it_cannot_trust() {
        let error = |pairs: &[(&str, &str)]| auto_shard(env_of(pairs)).unwrap_err();
        assert_eq!(error(&[]), AutoShardError::NotFound);
        assert_eq!(
            error(&[("SKILL_LIFT_SHARD_INDEX", " ")]),
            AutoShardError::NotFound
        );
        assert!(matches!(
            error(&[("JOB_COMPLETION_INDEX", "1")]),
            AutoShardError::MissingCount {
                index_var: "JOB_COMPLETION_INDEX",
                ..
            }
        ));
        assert!(
            error(&[("JOB_COMPLETION_INDEX", "1")])
                .to_string()
                .contains("SKILL_LIFT_SHARD_COUNT")
        );
        assert!(matches!(
            error(&[
                ("JOB_COMPLETION_INDEX", "4"),
                ("SKILL_LIFT_SHARD_COUNT", "4")
            ]),
            AutoShardError::OutOfRange {
                index: 4,
                count: 4,
                ..
            }
        ));
        assert!(matches!(
            error(&[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "4")]),
            AutoShardError::OutOfRange {
                first: 1,
                last: 4,
                ..
            }
        ));
        assert!(matches!(
            error(&[
                ("JOB_COMPLETION_INDEX", "0"),
                ("SKILL_LIFT_SHARD_COUNT", "0")
            ]),
            AutoShardError::OutOfRange { .. }
        ));
        assert!(matches!(
            error(&[
                ("JOB_COMPLETION_INDEX", "-1"),
                ("SKILL_LIFT_SHARD_COUNT", "4")
            ]),
            AutoShardError::NotANumber {
                var: "JOB_COMPLETION_INDEX",
                ..
            }
        ));
        assert!(matches!(
            error(&[
                ("SKILL_LIFT_SHARD_INDEX", "0"),
                ("SKILL_LIFT_SHARD_COUNT", "four")
            ]),
            AutoShardError::NotANumber {
                var: "SKILL_LIFT_SHARD_COUNT",
                ..
            }
        ));
        assert!(matches!(
            error(&[
                ("SKILL_LIFT_SHARD_INDEX", "0"),
                ("JOB_COMPLETION_INDEX", "2"),
                ("SKILL_LIFT_SHARD_COUNT", "4")
            ]),
            AutoShardError::Conflict { .. }
        ));
    }
}
