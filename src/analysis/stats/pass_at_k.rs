//! Unbiased estimators of pass@k (at least one of k draws passes) and pass^k (all k draws
//! pass) from c passes in n trials of one case. Per-case numbers; averaging over cases is the
//! caller's job.

/// Unbiased pass@k = `1 - C(n-c, k)/C(n, k)` (Chen et al., "Evaluating Large Language Models
/// Trained on Code", arXiv 2107.03374, 2021), computed as `1 - Π_{i=n-c+1..n} (1 - k/i)` to
/// avoid huge binomials. `trials = n`, `passes = c`. Result in `[0, 1]`.
/// `None` when `k = 0`, `k > n`, or `c > n`.
#[cfg(test)]
pub(crate) fn pass_at_k(trials: u64, passes: u64, k: u64) -> Option<f64> {
    if k == 0 || k > trials || passes > trials {
        return None;
    }
    if trials - passes < k {
        return Some(1.0);
    }
    let none_pass: f64 = (trials - passes + 1..=trials)
        .map(|i| 1.0 - k as f64 / i as f64)
        .product();
    Some(1.0 - none_pass)
}

/// Unbiased pass^k = `C(c, k)/C(n, k)`, the chance that k trials drawn without replacement all
/// pass (Yao et al., "τ-bench", arXiv 2406.12045, 2024), computed as `Π_{i=0..k-1} (c-i)/(n-i)`.
/// Result in `[0, 1]`. `None` when `k = 0`, `k > n`, or `c > n`.
#[cfg(test)]
pub(crate) fn pass_hat_k(trials: u64, passes: u64, k: u64) -> Option<f64> {
    if k == 0 || k > trials || passes > trials {
        return None;
    }
    if passes < k {
        return Some(0.0);
    }
    Some(
        (0..k)
            .map(|i| (passes - i) as f64 / (trials - i) as f64)
            .product(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data::assert_close;

    #[test]
    fn small_cases_match_binomial_formulas() {
        // n = 10, c = 3, k = 2: 1 - C(7,2)/C(10,2) = 1 - 21/45; pass^2 = C(3,2)/C(10,2) = 3/45.
        assert_close(pass_at_k(10, 3, 2).unwrap(), 1.0 - 21.0 / 45.0, 1e-12);
        assert_close(pass_hat_k(10, 3, 2).unwrap(), 3.0 / 45.0, 1e-12);
        // k = 1: both equal c/n.
        assert_close(pass_at_k(5, 2, 1).unwrap(), 0.4, 1e-12);
        assert_close(pass_hat_k(5, 2, 1).unwrap(), 0.4, 1e-12);
        // k = n: pass@n = 1 if any pass; pass^n = 1 only if all pass.
        assert_eq!(pass_at_k(5, 1, 5), Some(1.0));
        assert_eq!(pass_hat_k(5, 4, 5), Some(0.0));
        // Large n stays finite and exact-ish: n = 200, c = 10, k = 100.
        let p = pass_at_k(200, 10, 100).unwrap();
        assert!(p > 0.99 && p <= 1.0);
    }

    #[test]
    fn degenerate_counts() {
        // 0/n and n/n.
        assert_eq!(pass_at_k(5, 0, 3), Some(0.0));
        assert_eq!(pass_hat_k(5, 0, 3), Some(0.0));
        assert_eq!(pass_at_k(5, 5, 3), Some(1.0));
        assert_close(pass_hat_k(5, 5, 3).unwrap(), 1.0, 1e-12);
        // Invalid.
        assert_eq!(pass_at_k(0, 0, 1), None, "n = 0");
        assert_eq!(pass_at_k(5, 2, 0), None);
        assert_eq!(pass_at_k(5, 2, 6), None);
        assert_eq!(pass_hat_k(5, 6, 1), None);
        // n = 1.
        assert_eq!(pass_at_k(1, 1, 1), Some(1.0));
        assert_eq!(pass_hat_k(1, 0, 1), Some(0.0));
    }
}
