//! The one error of parsing a name the product defines — an export format, an arm, a lift
//! method, a calibre — when the text is none of the known names.

/// A name that is none of the known ones. Displays as
/// ``unknown {what} `{given}` (known: {known, …})``; clap shows it under the flag it parses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{given}` (known: {})", known.join(", "))]
pub struct UnknownName {
    /// What was being named, e.g. `"format"`, `"arm"`, `"--fail-on value"`.
    pub what: &'static str,
    /// The text given.
    pub given: String,
    /// The names accepted, in the order to show them.
    pub known: Vec<&'static str>,
}

impl UnknownName {
    /// The error for `given`, which is none of `known`.
    pub fn new(
        what: &'static str,
        given: &str,
        known: impl IntoIterator<Item = &'static str>,
    ) -> Self {
        Self {
            what,
            given: given.to_owned(),
            known: known.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::UnknownName;

    #[test]
    fn names_what_was_given_and_what_is_known() {
        let error = UnknownName::new("arm", "sideways", ["with_skill", "without_skill"]);
        assert_eq!(
            error.to_string(),
            "unknown arm `sideways` (known: with_skill, without_skill)"
        );
    }
}
