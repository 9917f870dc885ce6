//! How a workflow outside a run ended ([`Ending`]), in the classes of the documented exit
//! codes; the command line maps each to its exit code (`cli/outcome.rs`), the library never
//! does. A typed failure says its ending through [`Failure`] (implemented here for the
//! failures of the commands whose workflows live in the features). [`error_chain`] words an
//! error with its causes as one line (what `vet` records of a step that failed).

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
    /// Another process holds the lock this workflow needs (`monitor`: another pass of the same
    /// host); nothing was done. A scheduler tries again at its next tick.
    Busy,
}

/// A workflow's failure that knows how the workflow ended; the command line turns the ending
/// into the exit code (`cli::CommandError::failed`).
pub trait Failure: std::error::Error + Send + Sync + 'static {
    /// How the workflow ended (an input, infrastructure, nothing-to-run … failure).
    fn ending(&self) -> Ending;
}

/// An input error, or an infrastructure error when `infrastructure`.
fn input_or_infrastructure(infrastructure: bool) -> Ending {
    if infrastructure {
        Ending::InfrastructureError
    } else {
        Ending::InputError
    }
}

// The failures of commands whose workflows live below the pipeline (they cannot name
// `Ending`): each says whether it is the infrastructure's, and ends in that class.

impl Failure for crate::features::changed::ChangedError {
    fn ending(&self) -> Ending {
        input_or_infrastructure(self.is_infrastructure())
    }
}

impl Failure for crate::report::compare::CompareError {
    fn ending(&self) -> Ending {
        input_or_infrastructure(self.is_infrastructure())
    }
}

impl Failure for crate::features::install::InstallCommandError {
    fn ending(&self) -> Ending {
        input_or_infrastructure(self.is_infrastructure())
    }
}

impl Failure for crate::features::registry::regress::RegressCommandError {
    fn ending(&self) -> Ending {
        input_or_infrastructure(self.is_infrastructure())
    }
}

impl Failure for crate::report::object_out::TransferError {
    fn ending(&self) -> Ending {
        input_or_infrastructure(self.is_infrastructure())
    }
}

impl Failure for crate::features::scaffold::InitError {
    /// No drafts from the history is nothing to run; every other failure is the inputs'.
    fn ending(&self) -> Ending {
        match self {
            crate::features::scaffold::InitError::NothingToDraft { .. } => Ending::NothingToRun,
            _ => Ending::InputError,
        }
    }
}

/// `error` and its causes as one line, `outer: cause: cause` (as `anyhow` words `{:#}`).
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
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
