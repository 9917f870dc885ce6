//! Test fixtures only: the reference dataset D10 of statistics.md §1.1 (n = 10 cases, K = 5
//! trials per arm, four clusters). Owns no logic.

/// Passes of arm A (with the skill) per case, out of [`TRIALS`].
pub(super) const PASSES_WITH: [u64; 10] = [5, 5, 4, 5, 3, 5, 2, 3, 1, 5];
/// Passes of arm B (baseline) per case, out of [`TRIALS`].
pub(super) const PASSES_WITHOUT: [u64; 10] = [5, 2, 4, 3, 2, 1, 1, 4, 1, 3];
/// Trials per case per arm.
pub(super) const TRIALS: u64 = 5;
/// Cluster label per case.
pub(super) const CLUSTERS: [&str; 10] = ["c", "a", "c", "b", "d", "a", "d", "d", "c", "b"];

/// Case means of arm A, `k_A / K`.
pub(super) fn rates_with() -> Vec<f64> {
    PASSES_WITH
        .iter()
        .map(|&k| k as f64 / TRIALS as f64)
        .collect()
}

/// Case means of arm B, `k_B / K`.
pub(super) fn rates_without() -> Vec<f64> {
    PASSES_WITHOUT
        .iter()
        .map(|&k| k as f64 / TRIALS as f64)
        .collect()
}

/// Paired differences `d_i = r_A - r_B`.
pub(super) fn differences() -> Vec<f64> {
    rates_with()
        .iter()
        .zip(rates_without())
        .map(|(a, b)| a - b)
        .collect()
}

/// Integer differences `k_A - k_B`.
pub(super) fn count_differences() -> Vec<i64> {
    PASSES_WITH
        .iter()
        .zip(PASSES_WITHOUT)
        .map(|(&a, b)| a as i64 - b as i64)
        .collect()
}

/// Asserts `|actual - expected| <= tolerance` with a readable message.
#[track_caller]
pub(super) fn assert_close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "expected {expected} ± {tolerance}, got {actual}"
    );
}
