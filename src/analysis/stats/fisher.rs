//! Two-sided Fisher exact test for a per-case regression flag: one case's pass/fail counts
//! under an old and a new model or skill version (statistics.md §7). Multiplicity control over
//! many cases is `multiplicity`'s job.

use statrs::stats_tests::{Alternative, fisher::fishers_exact};

/// Two-sided Fisher exact p for the 2×2 table `[[a, b], [c, d]]` given row-major as
/// `[a, b, c, d]` (Fisher 1922; statrs' scipy-aligned `fishers_exact`, which sums the
/// probabilities of all tables no more likely than the observed one, with a relative tolerance).
///
/// A table with an all-zero row or column gives 1. The result is a probability in `[0, 1]`.
pub(crate) fn fisher_exact_two_sided(table: [u64; 4]) -> f64 {
    fishers_exact(&table, Alternative::TwoSided)
        .expect("any 2×2 table of counts defines a hypergeometric distribution")
        .clamp(0.0, 1.0)
}

/// Regression flag p-value for one case: `old_passes` of `old_trials` versus `new_passes` of
/// `new_trials`, i.e. [`fisher_exact_two_sided`] on `[[pass_old, fail_old], [pass_new, fail_new]]`.
///
/// Returns `None` when passes exceed trials. With K < 10 trials the test has little power
/// (3/3 → 0/3 gives p = 0.1): label such flags "low power".
pub(crate) fn regression_fisher_p(
    old_passes: u64,
    old_trials: u64,
    new_passes: u64,
    new_trials: u64,
) -> Option<f64> {
    if old_passes > old_trials || new_passes > new_trials {
        return None;
    }
    Some(fisher_exact_two_sided([
        old_passes,
        old_trials - old_passes,
        new_passes,
        new_trials - new_passes,
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data::assert_close;

    /// statistics.md §7 table (every row) and §11.
    #[test]
    fn reproduces_reference_table() {
        let rows: [(u64, u64, u64, f64); 13] = [
            (3, 3, 0, 0.100000),
            (5, 5, 2, 0.166667),
            (5, 5, 1, 0.047619),
            (5, 5, 0, 0.007937),
            (10, 10, 5, 0.032508),
            (10, 9, 4, 0.057276),
            (15, 15, 10, 0.042146),
            (15, 15, 11, 0.099617),
            (20, 20, 15, 0.047124),
            (20, 20, 14, 0.020196),
            (20, 19, 12, 0.019656),
            (30, 30, 24, 0.023721),
            (30, 30, 25, 0.052186),
        ];
        for (trials, old, new, expected) in rows {
            let p = regression_fisher_p(old, trials, new, trials).unwrap();
            assert_close(p, expected, 1e-6);
        }
    }

    #[test]
    fn degenerate_tables() {
        // No change, all pass / all fail: a zero column → p = 1.
        assert_eq!(regression_fisher_p(5, 5, 5, 5), Some(1.0));
        assert_eq!(regression_fisher_p(0, 5, 0, 5), Some(1.0));
        // No trials at all.
        assert_eq!(regression_fisher_p(0, 0, 0, 0), Some(1.0));
        // K = 1: never significant.
        assert_eq!(regression_fisher_p(1, 1, 0, 1), Some(1.0));
        assert_eq!(regression_fisher_p(6, 5, 0, 5), None);
        // Symmetric in the direction of change.
        assert_close(
            fisher_exact_two_sided([5, 0, 2, 3]),
            fisher_exact_two_sided([2, 3, 5, 0]),
            1e-12,
        );
    }
}
