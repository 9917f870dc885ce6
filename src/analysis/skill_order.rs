//! The order in which a trial presents its staged skills to the model, when skill-lift builds
//! the prompt or the tool list itself (`inject` and `tools` delivery).
//!
//! Models weigh what they read by where it sits (first or last in a prompt, in a tool list), so
//! a harness that always lists skills in one order (say, by name) confounds "the skill's content
//! helps" with "the skill sorts into a favoured position". A balanced run therefore presents the
//! skills in a seeded order per trial:
//!
//! - the decoys in a seeded permutation per (seed, case, attempt), the **same in every arm** of
//!   that attempt, so the arms of an attempt differ only by the target;
//! - the target (or the version standing in for it) inserted at position
//!   `(offset + attempt − 1) mod P`, where `P` is the number of skills staged with it and
//!   `offset` a seeded draw per (seed, case): across a case's K attempts the target takes each
//!   position equally often (K positions all different when K ≤ P; every position ⌊K/P⌋ or
//!   ⌈K/P⌉ times otherwise).
//!
//! Staging on disk is unaffected (a folder has no order); agent CLIs list the skills folder
//! themselves, so for them the order is what their stream shows, when it does. This module
//! owns only the order; `crate::pipeline::execute` applies it and `crate::analysis` reads it back from
//! the trial records.

use crate::record::SkillOrdering;

/// The seed of the order where a command has no `--seed` of its own (`shadow`): the default
/// seed of `run` and `triggers`.
pub(crate) const DEFAULT_SEED: u64 = 42;

impl SkillOrdering {
    /// True for [`SkillOrdering::ByName`] (the manifest then omits the field).
    pub fn is_by_name(&self) -> bool {
        *self == SkillOrdering::ByName
    }
}

/// A stable 64-bit seed for one (seed, case, attempt) stream: SHA-256 of the parts, so the order
/// never depends on the platform, the run's sharding or the order trials are scheduled in.
fn stream_seed(seed: u64, case_id: &str, attempt: Option<u32>) -> u64 {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(b"skill-lift skill order v1\0");
    hasher.update(seed.to_le_bytes());
    hasher.update(case_id.as_bytes());
    hasher.update([0]);
    if let Some(attempt) = attempt {
        hasher.update(attempt.to_le_bytes());
    }
    let digest = hasher.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

/// The 0-based position of the target among `positions` presented skills in `attempt`
/// (1-based) of `case_id`: a seeded offset per case, rotated by one per attempt.
pub(crate) fn target_position(seed: u64, case_id: &str, attempt: u32, positions: usize) -> usize {
    if positions <= 1 {
        return 0;
    }
    let offset = (stream_seed(seed, case_id, None) % positions as u64) as usize;
    (offset + attempt.saturating_sub(1) as usize) % positions
}

/// The names in the order one trial presents them: `decoys` in the attempt's seeded
/// permutation, and `target` (when the arm stages it) at [`target_position`] among them. The
/// decoys' order is the same whether or not `target` is given.
pub(crate) fn presentation_order(
    seed: u64,
    case_id: &str,
    attempt: u32,
    decoys: &[String],
    target: Option<&str>,
) -> Vec<String> {
    let mut order: Vec<String> = decoys.to_vec();
    order.sort();
    crate::analysis::stats::seeded_shuffle(&mut order, stream_seed(seed, case_id, Some(attempt)));
    if let Some(target) = target {
        let position = target_position(seed, case_id, attempt, decoys.len() + 1);
        order.insert(position, target.to_string());
    }
    order
}

/// The 1-based position of `target` in a recorded order, when it is there.
pub(crate) fn position_in(order: &[String], target: &str) -> Option<usize> {
    order.iter().position(|name| name == target).map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoys() -> Vec<String> {
        [
            "api-debug",
            "config-validator",
            "log-triage",
            "release-planner",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn four_attempts_put_the_target_in_four_positions_and_decoys_match_between_arms() {
        for case in ["greet-01", "refund-02", "x"] {
            let mut positions = std::collections::BTreeSet::new();
            for attempt in 1..=4 {
                let with = presentation_order(42, case, attempt, &decoys(), Some("support-desk"));
                let without = presentation_order(42, case, attempt, &decoys(), None);
                assert_eq!(with.len(), 5);
                let decoys_in_with: Vec<&String> =
                    with.iter().filter(|n| *n != "support-desk").collect();
                let decoys_in_without: Vec<&String> = without.iter().collect();
                assert_eq!(
                    decoys_in_with, decoys_in_without,
                    "{case} attempt {attempt}"
                );
                positions.insert(position_in(&with, "support-desk").unwrap());
            }
            assert_eq!(positions.len(), 4, "{case}: {positions:?}");
        }
    }

    #[test]
    fn positions_are_balanced_over_many_attempts_and_the_order_is_seeded() {
        let mut counts = [0usize; 5];
        for attempt in 1..=10 {
            counts[target_position(7, "case", attempt, 5)] += 1;
        }
        assert_eq!(counts, [2; 5]);
        assert_eq!(
            presentation_order(1, "c", 1, &decoys(), Some("t")),
            presentation_order(1, "c", 1, &decoys(), Some("t"))
        );
        // Some seed moves the decoys' order.
        let first = presentation_order(1, "c", 1, &decoys(), None);
        assert!((2..40).any(|seed| presentation_order(seed, "c", 1, &decoys(), None) != first));
        // Without decoys the target is alone.
        assert_eq!(presentation_order(3, "c", 2, &[], Some("t")), vec!["t"]);
    }
}
