//! Pearson correlation between the two arms' case values, reported as ρ to show how much the
//! pairing gains (statistics.md §1, §6.1).

/// Pearson's product-moment correlation `ρ = Cov(a, b)/(sd(a)·sd(b))` of paired case values
/// (Pearson 1895), in `[-1, 1]`.
///
/// `None` when the slices differ in length, have fewer than 2 cases, contain a non-finite value,
/// or either variance is 0 (e.g. every case passes in one arm). D10: ρ = 0.431794.
pub(crate) fn pearson_correlation(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 2 || a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let n = a.len() as f64;
    let mean_a = a.iter().sum::<f64>() / n;
    let mean_b = b.iter().sum::<f64>() / n;
    let (mut cross, mut squares_a, mut squares_b) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        let (dx, dy) = (x - mean_a, y - mean_b);
        cross += dx * dy;
        squares_a += dx * dx;
        squares_b += dy * dy;
    }
    let all_equal = |values: &[f64]| values.iter().all(|&v| v == values[0]);
    if all_equal(a) || all_equal(b) || squares_a == 0.0 || squares_b == 0.0 {
        return None;
    }
    Some((cross / (squares_a * squares_b).sqrt()).clamp(-1.0, 1.0))
}

/// Ranks of `values` (1-based), ties given the mean of the ranks they span ("fractional"
/// ranking), as Spearman's coefficient needs.
pub(crate) fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end (0-based) share the mean of ranks start+1..=end.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &index in &order[start..end] {
            ranks[index] = rank;
        }
        start = end;
    }
    ranks
}

/// Spearman's rank correlation ρ of paired values (Spearman 1904): Pearson's correlation of the
/// average ranks (ties handled exactly this way, not by the `1 − 6Σd²/(n(n²−1))` shortcut,
/// which is only exact without ties).
///
/// `None` under the same conditions as [`pearson_correlation`] (fewer than 2 pairs, a non-finite
/// value, or all values tied in either list). Example (Wikipedia "Spearman's rank correlation
/// coefficient": IQ vs hours of TV per week, n = 10): ρ = −29/165 ≈ −0.175758.
pub(crate) fn spearman_correlation(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    pearson_correlation(&average_ranks(a), &average_ranks(b))
}

/// Approximate two-sided `1 − alpha` interval for Spearman's ρ from `n` pairs: Fisher's
/// z = atanh(ρ), standard error `sqrt(1.06 / (n − 3))` (Fieller, Hartley & Pearson 1957,
/// Biometrika 44:470), back-transformed with tanh. `None` below n = 4 (the variance is
/// undefined) or for a non-finite ρ. At |ρ| = 1 the interval is the point.
pub(crate) fn spearman_interval(rho: f64, n: usize, alpha: f64) -> Option<(f64, f64)> {
    if n < 4 || !rho.is_finite() || !(0.0..1.0).contains(&alpha) || alpha == 0.0 {
        return None;
    }
    if rho.abs() >= 1.0 {
        return Some((rho, rho));
    }
    let z = rho.atanh();
    let se = (1.06 / (n as f64 - 3.0)).sqrt();
    let normal = statrs::distribution::Normal::new(0.0, 1.0).ok()?;
    let critical = statrs::distribution::ContinuousCDF::inverse_cdf(&normal, 1.0 - alpha / 2.0);
    Some(((z - critical * se).tanh(), (z + critical * se).tanh()))
}

/// Cohen's kappa for two raters' yes/no labels of the same items (Cohen 1960):
/// `κ = (p_o − p_e) / (1 − p_e)`, with `p_o` the observed agreement and `p_e` the agreement
/// expected from the raters' marginal yes rates. `table` = `[both yes, only a yes, only b yes,
/// both no]` (counts of items).
///
/// `None` with no items, or when `p_e = 1` (both raters gave one and the same label to every
/// item: agreement is then total but kappa is undefined). Example (Wikipedia "Cohen's kappa"):
/// `[20, 5, 10, 15]` → p_o = 0.7, p_e = 0.5, κ = 0.4.
pub(crate) fn cohen_kappa(table: [u64; 4]) -> Option<f64> {
    let [both_yes, only_a, only_b, both_no] = table;
    let n = (both_yes + only_a + only_b + both_no) as f64;
    if n == 0.0 {
        return None;
    }
    let observed = (both_yes + both_no) as f64 / n;
    let a_yes = (both_yes + only_a) as f64 / n;
    let b_yes = (both_yes + only_b) as f64 / n;
    let expected = a_yes * b_yes + (1.0 - a_yes) * (1.0 - b_yes);
    if (1.0 - expected).abs() < 1e-12 {
        return None;
    }
    Some((observed - expected) / (1.0 - expected))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_reproduces_the_textbook_example() {
        // Wikipedia "Spearman's rank correlation coefficient", IQ vs TV hours.
        let iq = [
            106.0, 100.0, 86.0, 101.0, 99.0, 103.0, 97.0, 113.0, 112.0, 110.0,
        ];
        let tv = [7.0, 27.0, 2.0, 50.0, 28.0, 29.0, 20.0, 12.0, 6.0, 17.0];
        assert_close(
            spearman_correlation(&iq, &tv).unwrap(),
            -29.0 / 165.0,
            1e-12,
        );
        // Ties get average ranks.
        assert_eq!(
            average_ranks(&[3.0, 1.0, 3.0, 2.0]),
            vec![3.5, 1.0, 3.5, 2.0]
        );
        // Monotone but not linear: ρ = 1.
        assert_close(
            spearman_correlation(&[1.0, 2.0, 3.0, 4.0], &[1.0, 8.0, 27.0, 64.0]).unwrap(),
            1.0,
            1e-12,
        );
        assert_eq!(
            spearman_correlation(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]),
            None
        );
        assert_eq!(spearman_correlation(&[1.0], &[1.0]), None);
    }

    #[test]
    fn spearman_interval_fisher_z() {
        // n = 10, ρ = 0.5: z = 0.549306, se = sqrt(1.06/7) = 0.389138, 1.959964·se = 0.762696.
        let (low, high) = spearman_interval(0.5, 10, 0.05).unwrap();
        assert_close(low, (0.549306144_f64 - 0.762696).tanh(), 1e-5);
        assert_close(high, (0.549306144_f64 + 0.762696).tanh(), 1e-5);
        assert!(low < 0.5 && 0.5 < high);
        assert_eq!(spearman_interval(0.5, 3, 0.05), None);
        assert_eq!(spearman_interval(1.0, 10, 0.05), Some((1.0, 1.0)));
    }

    #[test]
    fn cohen_kappa_reproduces_the_textbook_example() {
        assert_close(cohen_kappa([20, 5, 10, 15]).unwrap(), 0.4, 1e-12);
        assert_eq!(cohen_kappa([10, 0, 0, 0]), None);
        assert_eq!(cohen_kappa([0, 0, 0, 0]), None);
        assert_close(cohen_kappa([5, 0, 0, 5]).unwrap(), 1.0, 1e-12);
        // Systematic disagreement is negative.
        assert!(cohen_kappa([0, 5, 5, 0]).unwrap() < 0.0);
    }
    use crate::analysis::stats::test_data::{self, assert_close};

    /// statistics.md §6.1: D10 ρ = 0.431794, Cov(r_A, r_B) = 0.036444.
    #[test]
    fn reproduces_d10() {
        let (a, b) = (test_data::rates_with(), test_data::rates_without());
        let rho = pearson_correlation(&a, &b).unwrap();
        assert_close(rho, 0.431794, 1e-6);
        let sd = |v: &[f64]| {
            let m = v.iter().sum::<f64>() / 10.0;
            (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 9.0).sqrt()
        };
        assert_close(rho * sd(&a) * sd(&b), 0.036444, 1e-6);
        // §6.1: sd(d)² = Var(a) + Var(b) - 2 Cov.
        let var_d = sd(&a).powi(2) + sd(&b).powi(2) - 2.0 * rho * sd(&a) * sd(&b);
        assert_close(var_d.sqrt(), 0.309839, 1e-6);
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(
            pearson_correlation(&[1.0; 5], &[0.2, 0.4, 0.6, 0.8, 1.0]),
            None
        );
        assert_eq!(pearson_correlation(&[0.0, 1.0], &[0.5, 0.5]), None);
        assert_eq!(pearson_correlation(&[0.5], &[0.5]), None);
        assert_eq!(pearson_correlation(&[], &[]), None);
        assert_eq!(pearson_correlation(&[0.1, 0.2], &[0.1]), None);
        assert_eq!(pearson_correlation(&[0.1, f64::NAN], &[0.1, 0.2]), None);
        assert_close(
            pearson_correlation(&[0.0, 0.5, 1.0], &[1.0, 0.5, 0.0]).unwrap(),
            -1.0,
            1e-12,
        );
        assert_close(
            pearson_correlation(&[0.1, 0.2, 0.4], &[0.2, 0.4, 0.8]).unwrap(),
            1.0,
            1e-12,
        );
    }
}
