//! The stopping analysis of a round-scheduled run (`run --sequential`, budgets): the per-case
//! tallies of the compared pair, the anytime-valid confidence sequence over the completed cases,
//! and the stopping summary of `summary.json` (`stopping`) that may replace the fixed-n verdict.
//! Scheduling the rounds and deciding when to stop while a run goes on is `crate::pipeline::sequential`'s;
//! this is what the analysis of a recorded run reads back.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::text::count;
use crate::analysis::stats::{LiftSequenceState, PairedLiftSequence};
use crate::record::{Budgets, SequentialSettings, Spend, StopReason, StoppingPlan};

/// The `method` and `test` of a lift the confidence sequence decided.
pub(crate) const SEQUENCE_METHOD: &str = "betting-confidence-sequence";

/// One case's recorded outcomes in the two compared arms.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CaseTally {
    /// with-skill passes, scored attempts, recorded trials.
    pub with: (usize, usize, usize),
    /// without-skill passes, scored attempts, recorded trials.
    pub without: (usize, usize, usize),
}

impl CaseTally {
    /// Whether all K attempts of both arms are recorded.
    pub(crate) fn complete(&self, k: u32) -> bool {
        self.with.2 >= k as usize && self.without.2 >= k as usize
    }

    /// with − without pass rate over the scored attempts, when both arms have one.
    pub(crate) fn difference(&self) -> Option<f64> {
        (self.with.1 > 0 && self.without.1 > 0).then(|| {
            self.with.0 as f64 / self.with.1 as f64 - self.without.0 as f64 / self.without.1 as f64
        })
    }
}

/// The confidence sequence over the completed cases, in the case order, up to the first case
/// that is not complete (later cases were not reached). Cases without a scored attempt in an
/// arm give no observation.
pub(crate) fn lift_sequence(
    order: &[String],
    tallies: &HashMap<String, CaseTally>,
    k: u32,
    alpha: f64,
) -> Option<LiftSequenceState> {
    let mut sequence = PairedLiftSequence::new(alpha).ok()?;
    for case in order {
        let Some(tally) = tallies.get(case).filter(|t| t.complete(k)) else {
            break;
        };
        if let Some(difference) = tally.difference() {
            sequence.push(difference.clamp(-1.0, 1.0)).ok()?;
        }
    }
    Some(sequence.state())
}

/// Which analysis the headline verdict comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum VerdictBasis {
    /// The anytime-valid confidence sequence decided (its interval is the lift's interval).
    ConfidenceSequence,
    /// The ordinary fixed-n analysis of the cases measured.
    FixedN,
}

/// How a round-scheduled run stopped, for `summary.json` (`stopping`) and the reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoppingSummary {
    /// `sequential` or `fixed` (budgets only).
    pub mode: String,
    /// Why the run stopped; `None` while it runs or when it was killed.
    pub stop_reason: Option<StopReason>,
    /// The reason in words.
    pub message: String,
    /// Rounds run and planned, cases per round.
    pub rounds_run: usize,
    pub rounds_planned: usize,
    pub round_cases: usize,
    /// Planned trials, recorded ones and those not run because of the stop.
    pub trials_planned: usize,
    pub trials_recorded: usize,
    pub trials_not_run: usize,
    /// Why the trials not run were not run: `sequential_decision`, `budget`, `interrupted`,
    /// `circuit_breaker`, or `None` when every planned trial ran.
    pub not_run_because: Option<String>,
    /// The settings of the confidence sequence, when sequential.
    pub sequential: Option<SequentialSettings>,
    /// The anytime-valid confidence sequence of the lift over the completed cases (sequential
    /// runs; also when the verdict is fixed-n).
    pub confidence_sequence: Option<LiftSequenceState>,
    /// Where the headline verdict comes from.
    pub verdict_basis: VerdictBasis,
    /// Limits of the latest invocation.
    pub budgets: Budgets,
    /// What the run spent.
    pub spent: Option<Spend>,
}

impl StoppingSummary {
    /// The stopping summary of a run whose manifest has a stopping plan, from its per-case
    /// tallies of the compared pair (`k` attempts per arm planned) and its planned and recorded
    /// trials (every arm).
    pub(crate) fn of_run(
        plan: &StoppingPlan,
        tallies: &HashMap<String, CaseTally>,
        k: u32,
        trials_planned: usize,
        trials_recorded: usize,
    ) -> Self {
        let confidence_sequence = plan
            .sequential
            .and_then(|s| lift_sequence(&plan.case_order, tallies, k, s.alpha));
        let outcome = plan.outcome.as_ref();
        let reason = outcome.map(|o| o.reason);
        let trials_not_run = trials_planned.saturating_sub(trials_recorded);
        let not_run_because = (trials_not_run > 0).then(|| {
            match reason {
                Some(r) if r.is_sequential_decision() => "sequential_decision",
                Some(r) if r.is_budget() => "budget",
                Some(StopReason::Interrupted) => "interrupted",
                Some(StopReason::CircuitBreaker) => "circuit_breaker",
                _ => "not_run",
            }
            .to_string()
        });
        Self {
            mode: if plan.sequential.is_some() {
                "sequential"
            } else {
                "fixed"
            }
            .to_string(),
            stop_reason: reason,
            message: outcome
                .map(|o| o.message.clone())
                .unwrap_or_else(|| "the run has not finished (no stop recorded)".to_string()),
            rounds_run: outcome.map(|o| o.rounds_run).unwrap_or(0),
            rounds_planned: plan.rounds().len(),
            round_cases: plan.round_cases,
            trials_planned,
            trials_recorded,
            trials_not_run,
            not_run_because,
            sequential: plan.sequential,
            confidence_sequence,
            verdict_basis: if reason.is_some_and(StopReason::is_sequential_decision) {
                VerdictBasis::ConfidenceSequence
            } else {
                VerdictBasis::FixedN
            },
            budgets: plan.budgets,
            spent: outcome.map(|o| o.spent),
        }
    }

    /// Whether the run stopped by its own rules (a decision, a budget, or every round run), not
    /// by an interrupt, the circuit breaker or a kill.
    pub(crate) fn stopped_as_planned(&self) -> bool {
        self.stop_reason.is_some_and(|reason| {
            !matches!(reason, StopReason::Interrupted | StopReason::CircuitBreaker)
        })
    }

    /// When the confidence sequence decided, make it the lift's headline: the verdict, the
    /// interval (`method`/`test` `betting-confidence-sequence`), the anytime-valid p-value and
    /// the reasons. When a `--sequential` run ended without a decision of the sequence (every
    /// round run, or a budget), a fixed-n `improved` / `regressed` is not called: the verdict
    /// is inconclusive with reason `sequence_undecided` (the fixed-n interval and p-value stay
    /// beside it), so that the run's false verdicts at zero lift stay within the sequence's α.
    /// Returns whether the lift changed (its gate must be evaluated again). A run with budgets
    /// only (no sequence) keeps its fixed-n verdict.
    pub(crate) fn apply_to(&self, lift: &mut super::LiftSummary) -> bool {
        let (Some(reason), Some(state)) = (self.stop_reason, self.confidence_sequence) else {
            return false;
        };
        if self.verdict_basis != VerdictBasis::ConfidenceSequence {
            let fixed_n_verdict = match lift.verdict {
                super::Verdict::Improved => "improved",
                super::Verdict::Regressed => "regressed",
                _ => return false,
            };
            if self.sequential.is_none() {
                return false;
            }
            lift.verdict = super::Verdict::Inconclusive;
            lift.verdict_reasons = vec![
                super::InconclusiveReason::SequenceUndecided {
                    fixed_n_verdict: fixed_n_verdict.to_string(),
                    p_value: lift.p_value,
                }
                .into(),
            ];
            return true;
        }
        lift.ci_low = Some(state.interval.low);
        lift.ci_high = Some(state.interval.high);
        lift.method = SEQUENCE_METHOD.to_string();
        lift.test = Some(SEQUENCE_METHOD.to_string());
        lift.p_value = Some(state.p_value);
        match reason {
            StopReason::Improved => {
                lift.verdict = super::Verdict::Improved;
                lift.verdict_reasons.clear();
            }
            StopReason::Regressed => {
                lift.verdict = super::Verdict::Regressed;
                lift.verdict_reasons.clear();
            }
            _ => {
                lift.verdict = super::Verdict::Inconclusive;
                lift.verdict_reasons = vec![
                    super::InconclusiveReason::Equivalent {
                        margin: self.sequential.and_then(|s| s.equivalence).unwrap_or(0.0),
                    }
                    .into(),
                ];
            }
        }
        true
    }

    /// One line for the terminal and the reports.
    pub(crate) fn line(&self) -> String {
        let reason = self
            .stop_reason
            .map(StopReason::as_str)
            .unwrap_or("unfinished");
        let basis = match self.verdict_basis {
            VerdictBasis::ConfidenceSequence => {
                "verdict from the anytime-valid confidence sequence"
            }
            VerdictBasis::FixedN if self.sequential.is_some() => {
                "the sequence did not decide: the fixed-n analysis of the cases measured is shown, and an improved or regressed from it is not called"
            }
            VerdictBasis::FixedN => "verdict from the fixed-n analysis of the cases measured",
        };
        let mut line = format!(
            "Stopped: {reason} after {} of {} rounds, {} of {} trials ({} not run{}); {basis}. {}",
            self.rounds_run,
            self.rounds_planned,
            self.trials_recorded,
            self.trials_planned,
            self.trials_not_run,
            self.not_run_because
                .as_deref()
                .map(|why| format!(": {why}"))
                .unwrap_or_default(),
            sentence(&self.message)
        );
        if let (Some(cs), Some(settings)) = (&self.confidence_sequence, &self.sequential)
            && self.verdict_basis == VerdictBasis::FixedN
        {
            line.push_str(&format!(
                " Confidence sequence ({:.0}%, anytime-valid): [{:+.1} pp, {:+.1} pp] over {}.",
                (1.0 - settings.alpha) * 100.0,
                cs.interval.low * 100.0,
                cs.interval.high * 100.0,
                count(cs.n, "case")
            ));
        }
        if let Some(spent) = &self.spent {
            line.push_str(&format!(
                " Spent: ${:.4}{}, {} tokens, {:.1} s.",
                spent.cost_usd,
                if spent.unpriced_trials > 0 {
                    format!(" (+{} trials of unknown cost)", spent.unpriced_trials)
                } else {
                    String::new()
                },
                spent.tokens,
                spent.wall_s
            ));
        }
        line
    }
}

/// `message` as a sentence: its first letter capitalized and a closing period (empty stays
/// empty).
fn sentence(message: &str) -> String {
    let mut chars = message.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let mut text: String = first.to_uppercase().chain(chars).collect();
    if !text.ends_with(['.', '!', '?']) {
        text.push('.');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_message_reads_as_a_sentence() {
        assert_eq!(
            sentence(
                "the 95% confidence sequence [+7.3 pp, +100.0 pp] excludes 0 after 9 cases: improved"
            ),
            "The 95% confidence sequence [+7.3 pp, +100.0 pp] excludes 0 after 9 cases: improved."
        );
        assert_eq!(sentence("every round ran."), "Every round ran.");
        assert_eq!(sentence(""), "");
    }
}
