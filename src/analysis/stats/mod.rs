//! Statistics for a paired, K-repeat skill evaluation: intervals, paired tests, the case/cluster
//! bootstrap, sign-flip permutation, Fisher exact, multiplicity control, power and pass@k.
//!
//! This module owns the *mechanics* only: every function takes case-level numbers (pass counts,
//! case means `r = k/K`, paired differences `d = r_A - r_B`) and returns plain, serialisable
//! results. It must not read records, choose a primary method, print, or decide a verdict; that
//! policy lives in the analysis layer. Nothing here refers to anything outside `crate::analysis::stats`.
//!
//! The formulas and the worked numbers used by the unit tests come from
//! `shared/reference/statistics.md` (sections cited as "§n" in the doc comments). Items marked
//! *test-only* below are compiled for the tests alone: no report uses them, but they reproduce
//! the reference's worked numbers or serve as oracles for the methods reports do use.
//!
//! | file | owns |
//! |---|---|
//! | `proportion.rs` | Wilson interval for one rate (Clopper–Pearson test-only); effective-count Wilson for a mean of case rates; Garwood's exact interval of a Poisson count |
//! | `paired_binary.rs` | K = 1 paired binary: Newcombe method 10 interval, McNemar tests |
//! | `mean_t.rs` | t interval / paired t on case values, clustered standard error |
//! | `bootstrap.rs` | seeded case/cluster bootstrap (percentile, BCa) and the exact (ideal) case bootstrap (test-only: the oracle of the seeded one) |
//! | `permutation.rs` | sign-flip permutation test (exact and Monte Carlo) |
//! | `fisher.rs` | two-sided Fisher exact test for per-case regression flags |
//! | `multiplicity.rs` | Benjamini–Hochberg adjusted p-values (Benjamini–Yekutieli and Holm test-only) |
//! | `power.rs` | Miller's variance decomposition, MDE, cases needed (the per-arm decomposition, the observed MDE and Connor's McNemar n test-only) |
//! | `pass_at_k.rs` | unbiased pass@k and pass^k estimators (test-only; reports give pass@K as the share of cases passed at least once) |
//! | `confidence_sequence.rs` | the anytime-valid betting confidence sequence of a bounded mean and of a paired lift (Waudby-Smith & Ramdas) |
//! | `correlation.rs` | Pearson correlation between the arms' case values; Spearman ρ with a Fisher-z interval; Cohen's kappa |
//! | `lattice.rs` | detection of a common denominator K so sums can be exact integers |
//! | `sampling.rs` | the seeded ChaCha20 generator and the portable bounded-integer rule |

mod bootstrap;
mod confidence_sequence;
mod correlation;
mod fisher;
mod lattice;
mod mean_t;
mod multiplicity;
mod paired_binary;
mod pass_at_k;
mod permutation;
mod power;
mod proportion;
mod quantile;
mod sampling;

#[cfg(test)]
mod property_tests;
#[cfg(test)]
mod test_data;

use std::collections::HashMap;
use std::hash::Hash;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

pub(crate) use bootstrap::{
    BootstrapConfig, BootstrapMethod, DEFAULT_RESAMPLES, bootstrap_mean_interval,
    bootstrap_paired_difference,
};
pub(crate) use confidence_sequence::{LiftSequenceState, PairedLiftSequence};
pub(crate) use correlation::{
    cohen_kappa, pearson_correlation, spearman_correlation, spearman_interval,
};
pub(crate) use fisher::regression_fisher_p;
pub(crate) use mean_t::{clustered_standard_error, one_sample_t, paired_t};
pub(crate) use multiplicity::benjamini_hochberg;
pub(crate) use paired_binary::{mcnemar, newcombe_paired_interval};

#[cfg(test)]
pub(crate) use multiplicity::{benjamini_yekutieli, holm};
pub(crate) use permutation::sign_flip_test;
#[cfg(test)]
pub(crate) use permutation::sign_flip_test_integer;
pub(crate) use power::{
    PairedVarianceComponents, binary_within_case_variance, cases_needed,
    difference_variance_decomposition, minimum_detectable_effect,
};
#[cfg(test)]
pub(crate) use proportion::clopper_pearson_interval;
pub(crate) use proportion::{
    EffectiveCountWilson, effective_count_wilson_interval, poisson_interval, wilson_interval,
};
pub(crate) use quantile::{nearest_rank, quantile_interval};
pub(crate) use sampling::uniform_below;
pub(crate) use sampling::{seeded_rng, seeded_shuffle};

/// A two-sided confidence interval `[low, high]` in the units of the estimate it belongs to
/// (a rate in `[0, 1]`, or a lift in `[-1, 1]`; multiply by 100 for percentage points).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound (`>= low`).
    pub high: f64,
}

impl Interval {
    /// Width `high - low`.
    pub fn width(&self) -> f64 {
        self.high - self.low
    }

    /// Whether `value` lies inside the closed interval.
    pub fn contains(&self, value: f64) -> bool {
        self.low <= value && value <= self.high
    }
}

/// Errors of the statistics functions: always a caller mistake in the inputs, never a numerical
/// accident (degenerate-but-valid data gives `None` fields instead).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum StatsError {
    /// The confidence level is not strictly between 0 and 1.
    #[error("confidence level {0} is outside (0, 1); pass e.g. 0.95 for a 95 % interval")]
    InvalidConfidence(f64),
    /// Two per-case inputs (values, labels) have different lengths.
    #[error("{what}: expected {expected} entries (one per case) but got {found}")]
    LengthMismatch {
        /// Which input is off.
        what: &'static str,
        /// Number of cases implied by the primary input.
        expected: usize,
        /// Length actually given.
        found: usize,
    },
    /// An input value is NaN or infinite.
    #[error("{what}[{index}] = {value} is not a finite number")]
    NonFinite {
        /// Which input.
        what: &'static str,
        /// Position (0-based case index).
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A value that must be a rate/score in `[0, 1]` is outside it.
    #[error("{what}[{index}] = {value} is outside [0, 1]; pass case means k/K, not counts")]
    OutsideUnitInterval {
        /// Which input.
        what: &'static str,
        /// Position (0-based case index).
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A p-value is NaN or outside `[0, 1]`.
    #[error("p-value #{index} = {value} is not a probability in [0, 1]")]
    InvalidPValue {
        /// Position in the input slice.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// Not enough cases for the requested quantity.
    #[error("{what} needs at least {needed} cases but got {found}")]
    TooFewCases {
        /// The quantity being computed.
        what: &'static str,
        /// Minimum number of cases.
        needed: usize,
        /// Number given.
        found: usize,
    },
    /// The bootstrap needs at least two resamples.
    #[error("the bootstrap needs at least 2 resamples but got {0}; the default is 10000")]
    TooFewResamples(usize),
    /// A count of trials per case must be positive.
    #[error("trials per case must be > 0 but got {0}")]
    InvalidTrials(f64),
    /// A value is NaN or outside the range its input allows.
    #[error("{what} = {value} is outside [{low}, {high}]")]
    OutOfRange {
        /// Which input.
        what: &'static str,
        /// The offending value.
        value: f64,
        /// Smallest allowed value.
        low: f64,
        /// Largest allowed value.
        high: f64,
    },
}

/// Cluster membership of the cases (cases that share a scenario, repository or template).
///
/// Built from any labels; clusters are numbered densely in order of first appearance, so
/// results that depend on cluster order (the cluster bootstrap's draws) are reproducible for
/// the same label sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Clusters {
    cluster_of_case: Vec<usize>,
    cluster_count: usize,
}

impl Clusters {
    /// Assigns case `i` to the cluster named `labels[i]`.
    pub(crate) fn from_labels<L: Eq + Hash>(labels: &[L]) -> Self {
        let mut index_of_label: HashMap<&L, usize> = HashMap::new();
        let cluster_of_case = labels
            .iter()
            .map(|label| {
                let next = index_of_label.len();
                *index_of_label.entry(label).or_insert(next)
            })
            .collect();
        Self {
            cluster_of_case,
            cluster_count: index_of_label.len(),
        }
    }

    /// Every case its own cluster (the unclustered case, written explicitly).
    #[cfg(test)]
    pub(crate) fn singletons(cases: usize) -> Self {
        Self {
            cluster_of_case: (0..cases).collect(),
            cluster_count: cases,
        }
    }

    /// Number of cases labelled.
    pub(crate) fn case_count(&self) -> usize {
        self.cluster_of_case.len()
    }

    /// Number of distinct clusters `C`.
    pub(crate) fn cluster_count(&self) -> usize {
        self.cluster_count
    }

    /// Dense cluster index (0-based) of each case.
    pub(crate) fn cluster_of_case(&self) -> &[usize] {
        &self.cluster_of_case
    }

    pub(crate) fn check_cases(&self, cases: usize) -> Result<(), StatsError> {
        if self.case_count() == cases {
            Ok(())
        } else {
            Err(StatsError::LengthMismatch {
                what: "cluster labels",
                expected: cases,
                found: self.case_count(),
            })
        }
    }
}

/// `z_{1-(1-confidence)/2}`, the two-sided normal quantile (1.959964 at 0.95).
pub(crate) fn two_sided_normal_quantile(confidence: f64) -> Option<f64> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    Some(Normal::standard().inverse_cdf(1.0 - (1.0 - confidence) / 2.0))
}

pub(crate) fn check_confidence(confidence: f64) -> Result<f64, StatsError> {
    two_sided_normal_quantile(confidence).ok_or(StatsError::InvalidConfidence(confidence))
}

pub(crate) fn check_finite(what: &'static str, values: &[f64]) -> Result<(), StatsError> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(StatsError::NonFinite {
            what,
            index,
            value: values[index],
        }),
    }
}

pub(crate) fn check_unit_interval(what: &'static str, values: &[f64]) -> Result<(), StatsError> {
    check_finite(what, values)?;
    match values.iter().position(|v| !(0.0..=1.0).contains(v)) {
        None => Ok(()),
        Some(index) => Err(StatsError::OutsideUnitInterval {
            what,
            index,
            value: values[index],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_are_numbered_in_order_of_first_appearance() {
        let clusters = Clusters::from_labels(&["c", "a", "c", "b", "d", "a"]);
        assert_eq!(clusters.cluster_of_case(), &[0, 1, 0, 2, 3, 1]);
        assert_eq!(clusters.cluster_count(), 4);
        assert_eq!(clusters.case_count(), 6);
        assert!(clusters.check_cases(5).is_err());
        assert_eq!(Clusters::from_labels::<u8>(&[]).cluster_count(), 0);
        assert_eq!(Clusters::singletons(3).cluster_of_case(), &[0, 1, 2]);
    }

    #[test]
    fn normal_quantile_matches_reference_and_rejects_bad_levels() {
        let z = two_sided_normal_quantile(0.95).unwrap();
        assert!((z - 1.959964).abs() < 1e-6);
        assert!(two_sided_normal_quantile(0.0).is_none());
        assert!(two_sided_normal_quantile(1.0).is_none());
        assert!(two_sided_normal_quantile(f64::NAN).is_none());
        assert_eq!(
            check_confidence(1.5),
            Err(StatsError::InvalidConfidence(1.5))
        );
    }

    #[test]
    fn interval_helpers_and_serde_shape() {
        let interval = Interval {
            low: 0.25,
            high: 0.75,
        };
        assert_eq!(interval.width(), 0.5);
        assert!(interval.contains(0.25) && !interval.contains(0.8));
    }
}
