//! How the analysis's numbers read in text: a p-value and a counted noun. The analysis's own
//! warnings and every report, registry and planning text use these, so a number reads the same
//! everywhere. Pure functions; nothing here prints.

/// A p-value for people: `= 0.0123`, or `< 0.0001` below the shown precision.
pub(crate) fn format_p_value(p: f64) -> String {
    if p < 0.0001 {
        "< 0.0001".to_string()
    } else {
        format!("= {p:.4}")
    }
}

/// `n` and the noun, plural unless `n` is 1: `1 case`, `3 cases` (`noun` takes an `s`).
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
