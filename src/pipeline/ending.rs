//! How a workflow outside a run ended ([`Ending`]), in the classes of the documented exit
//! codes; the command line maps each to its exit code (`cli/outcome.rs`), the library never
//! does. [`error_chain`] words an error with its causes as one line (what `vet` records of a
//! step that failed).

/// How a workflow (or one step of `vet`, or a command: `cli::Outcome` is this type) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ending {
    /// It ran and its gate passed (or no gate was set).
    Success,
    /// It ran but a gate failed.
    GateFailed,
    /// Bad or unusable inputs.
    InputError,
    /// A runner, server, write or transfer failed.
    InfrastructureError,
    /// Nothing to run or nothing gradable.
    NothingToRun,
    /// Completed, with warnings listed.
    CompletedWithWarnings,
    /// Interrupted (Ctrl-C / SIGTERM); what was recorded is kept.
    Interrupted,
}

/// A workflow's failure that knows how the workflow ended; the command line turns the ending
/// into the exit code (`cli::CommandError::failed`).
pub trait Failure: std::error::Error + Send + Sync + 'static {
    /// How the workflow ended (an input, infrastructure, nothing-to-run … failure).
    fn ending(&self) -> Ending;
}

/// `error` and its causes as one line, `outer: cause: cause` (as `anyhow` words `{:#}`).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_reads_as_anyhow_alternate() {
        let io = std::io::Error::other("disk full");
        let error = anyhow::Error::new(io).context("writing x");
        let boxed: Box<dyn std::error::Error + 'static> = error.into();
        assert_eq!(error_chain(boxed.as_ref()), "writing x: disk full");
    }
}
