//! Adjusted p-values for many simultaneous tests (per-case regression flags): Benjamini–Hochberg
//! and Benjamini–Yekutieli (FDR) and Holm (FWER), returned in the input order
//! (statistics.md §8). Which procedure gates what is policy for the caller.

use super::StatsError;

/// Benjamini–Hochberg adjusted p-values (Benjamini & Hochberg, JRSS B 57:289, 1995):
/// `p̃₍ᵢ₎ = min_{j ≥ i} min(1, m·p₍ⱼ₎/j)`; reject where `p̃ ≤ q`. Valid under independence or
/// positive dependence. Output is in the input order; an empty input gives an empty output.
/// Errors: a p-value that is NaN or outside `[0, 1]`.
pub(crate) fn benjamini_hochberg(p_values: &[f64]) -> Result<Vec<f64>, StatsError> {
    step_up(p_values, 1.0)
}

/// Benjamini–Yekutieli adjusted p-values (Benjamini & Yekutieli, Ann. Stat. 29:1165, 2001):
/// BH multiplied by `H_m = Σ_{j=1..m} 1/j`, valid under any dependence. Same order and errors
/// as [`benjamini_hochberg`].
#[cfg(test)]
pub(crate) fn benjamini_yekutieli(p_values: &[f64]) -> Result<Vec<f64>, StatsError> {
    let harmonic: f64 = (1..=p_values.len()).map(|j| 1.0 / j as f64).sum();
    step_up(p_values, harmonic)
}

/// Holm step-down adjusted p-values (Holm, Scand. J. Stat. 6:65, 1979):
/// `p̃₍ᵢ₎ = max_{j ≤ i} min(1, (m - j + 1)·p₍ⱼ₎)`; reject where `p̃ ≤ α` (controls FWER).
/// Same order and errors as [`benjamini_hochberg`].
#[cfg(test)]
pub(crate) fn holm(p_values: &[f64]) -> Result<Vec<f64>, StatsError> {
    let order = ascending_order(p_values)?;
    let m = p_values.len();
    let mut adjusted = vec![0.0; m];
    let mut running_max: f64 = 0.0;
    for (rank, &index) in order.iter().enumerate() {
        let value = ((m - rank) as f64 * p_values[index]).min(1.0);
        running_max = running_max.max(value);
        adjusted[index] = running_max;
    }
    Ok(adjusted)
}

fn step_up(p_values: &[f64], factor: f64) -> Result<Vec<f64>, StatsError> {
    let order = ascending_order(p_values)?;
    let m = p_values.len();
    let mut adjusted = vec![0.0; m];
    let mut running_min: f64 = 1.0;
    for (rank, &index) in order.iter().enumerate().rev() {
        let value = (factor * m as f64 * p_values[index] / (rank + 1) as f64).min(1.0);
        running_min = running_min.min(value);
        adjusted[index] = running_min;
    }
    Ok(adjusted)
}

/// Indices of `p_values` in ascending order of p (stable for ties).
fn ascending_order(p_values: &[f64]) -> Result<Vec<usize>, StatsError> {
    if let Some(index) = p_values.iter().position(|p| !(0.0..=1.0).contains(p)) {
        return Err(StatsError::InvalidPValue {
            index,
            value: p_values[index],
        });
    }
    let mut order: Vec<usize> = (0..p_values.len()).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data::assert_close;

    /// statistics.md §8 worked example, m = 6, in case order.
    const P: [f64; 6] = [0.041, 0.001, 0.74, 0.012, 0.20, 0.008];

    fn check(actual: Vec<f64>, expected: [f64; 6]) {
        for (a, e) in actual.into_iter().zip(expected) {
            assert_close(a, e, 1e-9);
        }
    }

    fn flags(adjusted: &[f64], level: f64) -> Vec<usize> {
        (0..adjusted.len())
            .filter(|&i| adjusted[i] <= level)
            .map(|i| i + 1)
            .collect()
    }

    #[test]
    fn benjamini_hochberg_reproduces_worked_example() {
        let adjusted = benjamini_hochberg(&P).unwrap();
        assert_eq!(flags(&adjusted, 0.10), vec![1, 2, 4, 6]);
        assert_eq!(flags(&adjusted, 0.05), vec![2, 4, 6]);
        check(adjusted, [0.0615, 0.006, 0.74, 0.024, 0.24, 0.024]);
    }

    #[test]
    fn benjamini_yekutieli_reproduces_worked_example() {
        let adjusted = benjamini_yekutieli(&P).unwrap();
        assert_eq!(flags(&adjusted, 0.10), vec![2, 4, 6]);
        check(adjusted, [0.150675, 0.0147, 1.0, 0.0588, 0.588, 0.0588]);
    }

    #[test]
    fn holm_reproduces_worked_example() {
        let adjusted = holm(&P).unwrap();
        assert_eq!(flags(&adjusted, 0.05), vec![2, 4, 6]);
        check(adjusted, [0.123, 0.006, 0.74, 0.048, 0.40, 0.04]);
    }

    #[test]
    fn degenerate_inputs() {
        for f in [benjamini_hochberg, benjamini_yekutieli, holm] {
            assert_eq!(f(&[]).unwrap(), Vec::<f64>::new());
            assert_eq!(f(&[0.03]).unwrap(), vec![0.03]);
            assert_eq!(f(&[1.0, 1.0]).unwrap(), vec![1.0, 1.0]);
            assert!(matches!(
                f(&[0.1, f64::NAN]),
                Err(StatsError::InvalidPValue { index: 1, .. })
            ));
            assert!(f(&[1.5]).is_err());
            assert!(f(&[-0.1]).is_err());
        }
        // Ties: BH of identical p-values is the p-value itself.
        assert_eq!(benjamini_hochberg(&[0.2; 4]).unwrap(), vec![0.2; 4]);
        assert_eq!(holm(&[0.2; 4]).unwrap(), vec![0.8; 4]);
    }
}
