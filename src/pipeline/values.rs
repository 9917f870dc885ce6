//! The ranges of a run's numeric settings, as parsers of their text ([`ValueError`] says what
//! is wrong): the command line's value parsers for gates, intervals, progress and stopping
//! (`--min-lift`, `--bootstrap-resamples`, `--progress-interval`, `--equivalence`, …). A
//! message names the value, never the flag: clap adds the flag.

/// A setting's value out of its range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ValueError {
    /// Not a number.
    #[error("`{0}` is not a number")]
    NotANumber(String),
    /// Not a whole number.
    #[error("`{0}` is not a whole number")]
    NotAWholeNumber(String),
    /// Not a positive ratio.
    #[error("`{0}` is not a positive ratio (1.1 = at most 10% more)")]
    Ratio(String),
    /// A lift outside [-1, 1].
    #[error("a lift is a fraction between -1 and 1 (0.05 means 5 percentage points)")]
    Lift,
    /// A fraction outside [0, 1].
    #[error("must be a fraction between 0 and 1 (0.1 means 10%)")]
    UnitFraction,
    /// Not a number of seconds.
    #[error("`{0}` is not a number of seconds")]
    NotSeconds(String),
    /// A progress interval outside [0.01, 86400] seconds.
    #[error("must be between 0.01 and 86400 seconds")]
    Interval,
    /// Bootstrap resamples outside [100, 10,000,000].
    #[error("bootstrap resamples must be between 100 and 10,000,000")]
    Resamples,
    /// An equivalence margin outside (0, 1).
    #[error("`{0}`: expected a fraction in (0, 1), e.g. 0.05 for ±5 pp")]
    Margin(String),
    /// A miscoverage outside (0, 0.5).
    #[error("`{0}`: expected a miscoverage in (0, 0.5), e.g. 0.05")]
    Alpha(String),
    /// Not a positive amount of USD.
    #[error("`{0}`: expected a positive amount of USD")]
    Usd(String),
}

/// A positive, finite ratio (1.1 = at most 10% more).
pub(crate) fn parse_ratio(value: &str) -> Result<f64, ValueError> {
    match value.parse::<f64>() {
        Ok(ratio) if ratio.is_finite() && ratio > 0.0 => Ok(ratio),
        _ => Err(ValueError::Ratio(value.to_string())),
    }
}

/// A lift: a fraction in [-1, 1] (0.05 = 5 percentage points).
pub(crate) fn parse_lift(value: &str) -> Result<f64, ValueError> {
    let fraction = number(value)?;
    if (-1.0..=1.0).contains(&fraction) {
        Ok(fraction)
    } else {
        Err(ValueError::Lift)
    }
}

/// A fraction in [0, 1].
pub(crate) fn parse_unit_fraction(value: &str) -> Result<f64, ValueError> {
    let fraction = number(value)?;
    if (0.0..=1.0).contains(&fraction) {
        Ok(fraction)
    } else {
        Err(ValueError::UnitFraction)
    }
}

/// Seconds between progress lines: 0.01 to 86400.
pub(crate) fn parse_interval(value: &str) -> Result<f64, ValueError> {
    let seconds: f64 = value
        .parse()
        .map_err(|_| ValueError::NotSeconds(value.to_string()))?;
    if seconds.is_finite() && (0.01..=86_400.0).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(ValueError::Interval)
    }
}

/// Bootstrap resamples: 100 to 10,000,000.
pub(crate) fn parse_resamples(value: &str) -> Result<usize, ValueError> {
    let resamples: usize = value
        .parse()
        .map_err(|_| ValueError::NotAWholeNumber(value.to_string()))?;
    if (100..=10_000_000).contains(&resamples) {
        Ok(resamples)
    } else {
        Err(ValueError::Resamples)
    }
}

/// An equivalence margin in (0, 1) (0.05 = ±5 pp).
pub(crate) fn parse_margin(value: &str) -> Result<f64, ValueError> {
    match value.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(ValueError::Margin(value.to_string())),
    }
}

/// A confidence sequence's miscoverage in (0, 0.5).
pub(crate) fn parse_alpha(value: &str) -> Result<f64, ValueError> {
    match value.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 0.5 => Ok(v),
        _ => Err(ValueError::Alpha(value.to_string())),
    }
}

/// A positive, finite amount of USD.
pub(crate) fn parse_usd(value: &str) -> Result<f64, ValueError> {
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(ValueError::Usd(value.to_string())),
    }
}

/// `value` as a number.
fn number(value: &str) -> Result<f64, ValueError> {
    value
        .parse()
        .map_err(|_| ValueError::NotANumber(value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_range_parse_and_others_are_refused_with_their_message() {
        assert_eq!(parse_ratio("1.1"), Ok(1.1));
        assert_eq!(
            parse_ratio("0").unwrap_err().to_string(),
            "`0` is not a positive ratio (1.1 = at most 10% more)"
        );
        assert_eq!(parse_lift("-0.2"), Ok(-0.2));
        assert_eq!(
            parse_lift("x").unwrap_err().to_string(),
            "`x` is not a number"
        );
        assert_eq!(parse_lift("2"), Err(ValueError::Lift));
        assert_eq!(parse_unit_fraction("1.5"), Err(ValueError::UnitFraction));
        assert_eq!(parse_interval("0.001"), Err(ValueError::Interval));
        assert_eq!(parse_interval("2"), Ok(2.0));
        assert_eq!(parse_resamples("99"), Err(ValueError::Resamples));
        assert_eq!(
            parse_resamples("1.5").unwrap_err().to_string(),
            "`1.5` is not a whole number"
        );
        assert_eq!(parse_margin("0.05"), Ok(0.05));
        assert_eq!(parse_alpha("0.5"), Err(ValueError::Alpha("0.5".into())));
        assert_eq!(
            parse_usd("-1").unwrap_err().to_string(),
            "`-1`: expected a positive amount of USD"
        );
    }
}
