//! Property tests of statistical invariants: intervals contain their point estimate, adjusted
//! p-values are never below raw ones and BH is monotone in the raw order, the bootstrap is
//! reproducible for a seed, permutation p-values lie in (0, 1].

use proptest::prelude::*;

use super::*;

fn rates(max_k: u32) -> impl Strategy<Value = (u32, Vec<(u32, u32)>)> {
    (1..=max_k).prop_flat_map(|k| (Just(k), prop::collection::vec((0..=k, 0..=k), 2..40)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn wilson_and_clopper_pearson_contain_the_estimate(trials in 1u64..500, fraction in 0.0f64..=1.0) {
        let successes = ((trials as f64) * fraction).round() as u64;
        let estimate = successes as f64 / trials as f64;
        for interval in [wilson_interval(successes, trials, 0.95).unwrap(), clopper_pearson_interval(successes, trials, 0.95).unwrap()] {
            prop_assert!(interval.low <= estimate + 1e-12 && estimate <= interval.high + 1e-12, "{interval:?} vs {estimate}");
            prop_assert!(0.0 <= interval.low && interval.high <= 1.0);
        }
    }

    #[test]
    fn newcombe_contains_the_paired_difference(both in 0u64..30, only_a in 0u64..30, only_b in 0u64..30, neither in 0u64..30) {
        let n = both + only_a + only_b + neither;
        prop_assume!(n > 0);
        let estimate = (only_a as f64 - only_b as f64) / n as f64;
        let interval = newcombe_paired_interval(both, only_a, only_b, neither, 0.95).unwrap();
        prop_assert!(interval.low <= estimate + 1e-9 && estimate <= interval.high + 1e-9, "{interval:?} vs {estimate}");
        let test = mcnemar(only_a, only_b);
        prop_assert!(test.mid_p > 0.0 && test.mid_p <= 1.0 && test.mid_p <= test.exact_p + 1e-12);
    }

    #[test]
    fn bootstrap_is_reproducible_and_brackets_the_estimate((k, counts) in rates(5), seed in any::<u64>()) {
        let with: Vec<f64> = counts.iter().map(|(a, _)| *a as f64 / k as f64).collect();
        let without: Vec<f64> = counts.iter().map(|(_, b)| *b as f64 / k as f64).collect();
        let config = BootstrapConfig { resamples: 400, seed, method: BootstrapMethod::Bca, confidence: 0.95 };
        let first = bootstrap_paired_difference(&with, &without, None, &config).unwrap();
        let second = bootstrap_paired_difference(&with, &without, None, &config).unwrap();
        prop_assert_eq!(&first, &second);
        prop_assert!(first.percentile.low <= first.percentile.high);
        let mean = with.iter().zip(&without).map(|(a, b)| a - b).sum::<f64>() / with.len() as f64;
        prop_assert!((first.estimate - mean).abs() < 1e-9);
        prop_assert!(first.percentile.low <= mean + 1e-9 && mean <= first.percentile.high + 1e-9);
    }

    #[test]
    fn permutation_p_is_in_the_unit_interval(differences in prop::collection::vec(-5i64..=5, 1..40), seed in any::<u64>()) {
        let result = sign_flip_test_integer(&differences, 500, seed).unwrap();
        for p in [result.two_sided_p, result.greater_p, result.less_p] {
            prop_assert!(p > 0.0 && p <= 1.0, "{p}");
        }
    }

    #[test]
    fn adjusted_p_values_are_never_below_raw_and_bh_is_monotone(raw in prop::collection::vec(0.0f64..=1.0, 1..30)) {
        let bh = benjamini_hochberg(&raw).unwrap();
        let by = benjamini_yekutieli(&raw).unwrap();
        let holm_adjusted = holm(&raw).unwrap();
        for i in 0..raw.len() {
            prop_assert!(bh[i] >= raw[i] - 1e-12 && bh[i] <= 1.0);
            prop_assert!(by[i] >= bh[i] - 1e-12 && by[i] <= 1.0);
            prop_assert!(holm_adjusted[i] >= raw[i] - 1e-12 && holm_adjusted[i] <= 1.0);
        }
        let mut order: Vec<usize> = (0..raw.len()).collect();
        order.sort_by(|a, b| raw[*a].total_cmp(&raw[*b]));
        for pair in order.windows(2) {
            prop_assert!(bh[pair[0]] <= bh[pair[1]] + 1e-12);
            prop_assert!(holm_adjusted[pair[0]] <= holm_adjusted[pair[1]] + 1e-12);
        }
    }
}
