//! How a command ended ([`Outcome`]) and the one mapping from outcomes to the documented exit
//! codes of `crate::exit_codes`. Commands return an `Outcome` (or a [`super::CommandError`]
//! carrying one); [`super::main`] turns it into the process exit code here and nowhere else.

use std::fmt;

use crate::exit_codes;
use crate::pipeline::Ending;

/// How a command ended, in the terms of the documented exit codes (docs/results.md "Exit
/// codes"). Ordered by nothing in particular; a matrix picks the most severe of its cells'
/// outcomes with its own rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The command ran and its gate passed (or no gate was set).
    Success,
    /// The command ran but a gate failed, `lint` found an error, `env` found red flags.
    GateFailed,
    /// Usage or input error (bad flags, malformed inputs, a run folder that cannot be used).
    InputError,
    /// Infrastructure error (a runner or server failed, too many unscoreable trials, a write
    /// or transfer failed).
    InfrastructureError,
    /// Nothing to run or nothing gradable.
    NothingToRun,
    /// Completed, with warnings listed (`scan` skipped assets it could not read).
    CompletedWithWarnings,
    /// Interrupted (Ctrl-C / SIGTERM); recorded trials are kept.
    Interrupted,
}

impl Outcome {
    /// The process exit code of this outcome: the one place outcomes become numbers.
    pub const fn code(self) -> i32 {
        match self {
            Outcome::Success => exit_codes::SUCCESS,
            Outcome::GateFailed => exit_codes::GATE_FAILED,
            Outcome::InputError => exit_codes::INPUT_ERROR,
            Outcome::InfrastructureError => exit_codes::INFRASTRUCTURE_ERROR,
            Outcome::NothingToRun => exit_codes::NOTHING_TO_RUN,
            Outcome::CompletedWithWarnings => exit_codes::COMPLETED_WITH_WARNINGS,
            Outcome::Interrupted => exit_codes::INTERRUPTED,
        }
    }
}

impl From<Ending> for Outcome {
    /// The outcome of a library workflow's ending.
    fn from(ending: Ending) -> Self {
        match ending {
            Ending::Success => Outcome::Success,
            Ending::GateFailed => Outcome::GateFailed,
            Ending::InputError => Outcome::InputError,
            Ending::InfrastructureError => Outcome::InfrastructureError,
            Ending::NothingToRun => Outcome::NothingToRun,
            Ending::CompletedWithWarnings => Outcome::CompletedWithWarnings,
            Ending::Interrupted => Outcome::Interrupted,
        }
    }
}

impl From<Outcome> for Ending {
    /// The ending a command's outcome stands for (the paired run `vet` drives).
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Success => Ending::Success,
            Outcome::CompletedWithWarnings => Ending::CompletedWithWarnings,
            Outcome::GateFailed => Ending::GateFailed,
            Outcome::InputError => Ending::InputError,
            Outcome::InfrastructureError => Ending::InfrastructureError,
            Outcome::NothingToRun => Ending::NothingToRun,
            Outcome::Interrupted => Ending::Interrupted,
        }
    }
}

impl fmt::Display for Outcome {
    /// The exit code, as messages quote it (`(exit 3)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_documented_code() {
        let codes = [
            (Outcome::Success, 0),
            (Outcome::GateFailed, 1),
            (Outcome::InputError, 2),
            (Outcome::InfrastructureError, 3),
            (Outcome::NothingToRun, 4),
            (Outcome::CompletedWithWarnings, 5),
            (Outcome::Interrupted, 130),
        ];
        for (outcome, code) in codes {
            assert_eq!(outcome.code(), code, "{outcome:?}");
            assert_eq!(outcome.to_string(), code.to_string());
        }
    }
}
