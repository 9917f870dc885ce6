//! Detection of a common denominator K for case values `k/K`, so that bootstrap and permutation
//! sums can be computed exactly in integers (statistics.md §6.2: float means make `<` versus `=`
//! unstable on the lattice and misclassify ties). Owns no statistics.

/// Largest denominator tried for a single value (covers any realistic trials-per-case count).
pub(crate) const MAX_CASE_DENOMINATOR: u64 = 1_000;
/// Largest common denominator accepted (the lcm of the per-value denominators).
pub(crate) const MAX_COMMON_DENOMINATOR: u64 = 1_000_000;
/// Largest `|value·K|` accepted, so sums over millions of cases stay far inside `i64`.
const MAX_LATTICE_MAGNITUDE: f64 = (1u64 << 40) as f64;
/// Relative tolerance for "`value·K` is an integer".
const INTEGRAL_TOLERANCE: f64 = 1e-9;

/// The smallest `K ≥ 1` such that every `value·K` is an integer (to a relative 1e-9), e.g. 5
/// for pass rates out of 5 trials, or the lcm when cases used different trial counts.
///
/// Returns `None` when some value has no denominator ≤ [`MAX_CASE_DENOMINATOR`], the lcm exceeds
/// [`MAX_COMMON_DENOMINATOR`], a value is not finite, or `|value·K|` exceeds 2⁴⁰; callers then
/// fall back to floating point. An empty slice gives `Some(1)`.
pub(crate) fn common_denominator(values: &[f64]) -> Option<u64> {
    let mut common = 1u64;
    for &value in values {
        if !value.is_finite() {
            return None;
        }
        if is_integral(value * common as f64) {
            continue;
        }
        let own = (2..=MAX_CASE_DENOMINATOR).find(|&q| is_integral(value * q as f64))?;
        common = lcm(common, own);
        if common > MAX_COMMON_DENOMINATOR {
            return None;
        }
    }
    if values
        .iter()
        .any(|v| (v * common as f64).abs() > MAX_LATTICE_MAGNITUDE)
    {
        return None;
    }
    Some(common)
}

/// `round(value·K)` for each value; only meaningful after [`common_denominator`] returned `K`.
pub(crate) fn to_lattice(values: &[f64], denominator: u64) -> Vec<i64> {
    values
        .iter()
        .map(|v| (v * denominator as f64).round() as i64)
        .collect()
}

fn is_integral(x: f64) -> bool {
    (x - x.round()).abs() <= INTEGRAL_TOLERANCE * x.abs().max(1.0)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::test_data;

    #[test]
    fn detects_pass_rate_denominators() {
        assert_eq!(common_denominator(&test_data::rates_with()), Some(5));
        assert_eq!(common_denominator(&test_data::differences()), Some(5));
        assert_eq!(common_denominator(&[0.0, 1.0]), Some(1));
        assert_eq!(common_denominator(&[]), Some(1));
        // Cases with 3 and 4 usable trials: lcm 12.
        assert_eq!(common_denominator(&[1.0 / 3.0, 0.75, 0.5]), Some(12));
        assert_eq!(common_denominator(&[2.0 / 7.0, 0.1]), Some(70));
    }

    #[test]
    fn general_values_fall_back() {
        assert_eq!(common_denominator(&[0.5, std::f64::consts::PI / 4.0]), None);
        assert_eq!(common_denominator(&[1.0 / 1009.0]), None);
        assert_eq!(common_denominator(&[f64::NAN]), None);
        assert_eq!(common_denominator(&[1e15]), None);
    }

    #[test]
    fn lattice_values_round_exactly() {
        let d = test_data::differences();
        assert_eq!(to_lattice(&d, 5), test_data::count_differences());
    }
}
