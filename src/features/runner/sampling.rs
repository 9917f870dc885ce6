//! The sampling seeds of a trial's model requests, when its runner profile asks for seeded
//! sampling (`seed = N`).
//!
//! A server that draws its sampling randomness from one stream advancing with every request it
//! answers (llama-cpp-python without a request seed) gives answers that depend on request
//! order: a resumed run, or two runs sharing the server, get other answers. A seed fixed per
//! profile and sent unchanged with every request has the opposite fault: the K attempts of a
//! case whose prompt does not change sample identically, so K attempts are one and the
//! within-case variance is zero. So each request gets its own seed, a function only of:
//!
//! - the run's `--seed` and the profile's `seed` (either changes every request's seed);
//! - the trial: its case, **arm** and attempt (the arm is in it, so the two identical arms of an
//!   A/A calibration do not sample identically);
//! - the request's index within the trial (0 for the first; `tools` mode asks several times).
//!
//! The derivation is SHA-256 of those parts, cut to 31 bits: every server takes it (llama.cpp
//! reads a 32-bit seed and treats `0xFFFFFFFF` as "random"; others an `int`). This module owns
//! only the derivation; the model-API loop (`super::model_api`) sends it where the wire format
//! takes a seed (Chat Completions; the Anthropic Messages API has none) and records it per
//! request.

use sha2::{Digest, Sha256};

/// The part of a trial that its sampling seeds derive from: the run's seed and the trial's
/// identity, hashed once ([`TrialSeed::of_trial`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TrialSeed(u64);

/// The largest seed sent: seeds are in `0..=SEED_MASK` (31 bits), a value every server takes.
const SEED_MASK: u64 = 0x7FFF_FFFF;

impl TrialSeed {
    /// The trial `attempt` (1-based) of `case_id` in the arm recorded as `arm`, in a run with
    /// seed `run_seed`.
    pub fn of_trial(run_seed: u64, case_id: &str, arm: &str, attempt: u32) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"skill-lift trial sampling v1\0");
        hasher.update(run_seed.to_le_bytes());
        hasher.update(case_id.as_bytes());
        hasher.update([0]);
        hasher.update(arm.as_bytes());
        hasher.update([0]);
        hasher.update(attempt.to_le_bytes());
        Self(first_u64(hasher))
    }

    /// The seed of request `request_index` (0-based, within the trial) under a profile whose
    /// `seed` is `profile_seed`: in `0..2^31`.
    pub fn request_seed(self, profile_seed: u64, request_index: u32) -> u64 {
        let mut hasher = Sha256::new();
        hasher.update(b"skill-lift request seed v1\0");
        hasher.update(self.0.to_le_bytes());
        hasher.update(profile_seed.to_le_bytes());
        hasher.update(request_index.to_le_bytes());
        first_u64(hasher) & SEED_MASK
    }
}

/// The first 8 bytes of the digest, little-endian.
fn first_u64(hasher: Sha256) -> u64 {
    let digest = hasher.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_of_the_trial_and_the_request_moves_the_seed() {
        let base = TrialSeed::of_trial(42, "case-01", "with_skill", 1).request_seed(0, 0);
        let variants = [
            TrialSeed::of_trial(7, "case-01", "with_skill", 1).request_seed(0, 0),
            TrialSeed::of_trial(42, "case-02", "with_skill", 1).request_seed(0, 0),
            TrialSeed::of_trial(42, "case-01", "without_skill", 1).request_seed(0, 0),
            TrialSeed::of_trial(42, "case-01", "with_skill", 2).request_seed(0, 0),
            TrialSeed::of_trial(42, "case-01", "with_skill", 1).request_seed(1, 0),
            TrialSeed::of_trial(42, "case-01", "with_skill", 1).request_seed(0, 1),
        ];
        for (index, variant) in variants.iter().enumerate() {
            assert_ne!(*variant, base, "variant {index}");
        }
        // A function of its inputs only, and within the 31 bits every server takes.
        assert_eq!(
            TrialSeed::of_trial(42, "case-01", "with_skill", 1).request_seed(0, 0),
            base
        );
        // Parts are separated: ("ab", "c") is not ("a", "bc").
        assert_ne!(
            TrialSeed::of_trial(1, "ab", "c", 1),
            TrialSeed::of_trial(1, "a", "bc", 1)
        );
        for attempt in 1..200 {
            let seed = TrialSeed::of_trial(3, "c", "with_skill", attempt).request_seed(9, 0);
            assert!(seed <= SEED_MASK);
        }
    }
}
