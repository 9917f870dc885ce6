//! How a command ended ([`Outcome`]) and the one mapping from outcomes to the documented exit
//! codes of `crate::values::exit_codes`. Commands return an `Outcome` (or a [`super::CommandError`]
//! carrying one); [`super::main`] turns it into the process exit code here and nowhere else.

use std::fmt;

use crate::values::exit_codes;

/// How a command ended: the library's [`Ending`] (docs/results.md "Exit codes"), one enum for
/// both, so nothing converts between twins. A matrix picks the most severe of its cells'
/// outcomes with its own rule.
pub(crate) use crate::pipeline::Ending as Outcome;

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
            Outcome::Busy => exit_codes::BUSY,
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
            (Outcome::Busy, 75),
        ];
        for (outcome, code) in codes {
            assert_eq!(outcome.code(), code, "{outcome:?}");
            assert_eq!(outcome.to_string(), code.to_string());
        }
    }
}
