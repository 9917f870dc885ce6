//! Spending less per decision (`run --sequential`, `--max-cost-usd`, `--max-tokens`,
//! `--max-wall`): the round planner that feeds the scheduler, the budget gate, the anytime-valid
//! stopping rule, and how the run stopped as the manifest records it and the summary shows it.
//!
//! **Rounds.** The eval set's cases are put in a random order fixed by the run's seed
//! ([`case_order`]) and cut into rounds of [`StoppingPlan::round_cases`] cases; a round runs
//! every arm × K attempts of its cases (case-balanced), through the ordinary scheduler
//! ([`crate::pipeline::execute::execute`] with [`crate::pipeline::execute::SchedulerSettings::round`]). Decisions are
//! taken between rounds, when no trial is in flight: every trial that was started is recorded.
//!
//! **Sequential decisions.** After each round the case differences `d = with − without` (pass
//! rates over the scored attempts) of the completed cases, in the round order, feed the betting
//! confidence sequence of Waudby-Smith & Ramdas (arXiv 2010.09686; [`PairedLiftSequence`]),
//! valid at every round at once. The run stops when it excludes 0 (`improved`/`regressed`),
//! when it lies inside ±`equivalence` (no meaningful effect), or when the cases or a budget run
//! out — then the ordinary fixed-n analysis of what was measured is shown, stated as such, but an
//! `improved` / `regressed` from it is not called (`sequence_undecided`): after a look at every
//! round it would spend a second α (measured: 7.1% false verdicts at zero lift, K = 1).
//!
//! **Budgets.** Before each round, the spend so far (recorded usage: a trial's reported cost,
//! else its tokens at the profile's `[price]`; tokens; wall time) plus the next round's projected
//! spend is compared with each limit; a round that would exceed one is not started, and its
//! trials and the later ones are recorded as not run because of that budget. A round's
//! projection is its trials × the larger of the mean per trial so far and the
//! [`TrialFloor`] (the runner profile's `max_tokens`, the most one reply may produce, at its
//! output `[price]`), so the first round is projected too; a run whose first round cannot fit is
//! refused before anything is spent ([`StoppingPlan::first_round_refusal`]).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

use crate::analysis::stats::LiftSequenceState;
use crate::analysis::text::count;
use crate::analysis::{CaseTally, lift_sequence};
use crate::pipeline::execute::{
    ExecuteError, ExecuteReport, RecordSink, SchedulerSettings, TrialContext, execute,
};
use crate::record::{
    Arm, Budgets, FinishedTrial, Outcome, PriceTable, RecordError, SequentialSettings, Spend,
    StopReason, StoppingOutcome, StoppingPlan, TrialKey, TrialRecord,
};

/// Default miscoverage of the confidence sequence (a 95 % sequence).
pub(crate) const DEFAULT_ALPHA: f64 = 0.05;
/// Default number of rounds a run is cut into (rounds hold at least one case): fine rounds stop
/// closer to the decision; each round waits for its slowest trial.
pub(crate) const DEFAULT_ROUNDS: usize = 20;

impl Budgets {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.max_cost_usd.is_some() || self.max_tokens.is_some() || self.max_wall_s.is_some()
    }

    /// These limits, each replaced by `other`'s where `other` sets it (a resume's flags).
    pub fn overridden_by(&self, other: &Budgets) -> Budgets {
        Budgets {
            max_cost_usd: other.max_cost_usd.or(self.max_cost_usd),
            max_tokens: other.max_tokens.or(self.max_tokens),
            max_wall_s: other.max_wall_s.or(self.max_wall_s),
        }
    }
}

/// One trial's spend as [`Spend`] counts it: the agent's tokens and cost, and the judges'.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TrialSpend {
    /// The agent's input + output tokens.
    pub tokens: u64,
    /// The agent's cost in USD ([`trial_cost_usd`]); `None` when unknown.
    pub cost_usd: Option<f64>,
    /// The judges' input + output tokens.
    pub judge_tokens: u64,
    /// The judges' cost in USD (from the judge profile's `[price]`); `None` when unknown.
    pub judge_cost_usd: Option<f64>,
    /// Judge requests answered (a judge cost is unknown only when a request was made).
    pub judge_requests: u64,
}

impl TrialSpend {
    /// A recorded trial's spend (agent cost: reported, else its tokens at `price`).
    pub fn of(record: &TrialRecord, price: Option<&PriceTable>) -> Self {
        let input = record.usage.input_tokens.unwrap_or(0);
        let output = record.usage.output_tokens.unwrap_or(0);
        let mut spend = TrialSpend {
            tokens: input + output,
            cost_usd: trial_cost_usd(record, price),
            ..TrialSpend::default()
        };
        if let Some(judge) = &record.judge_usage {
            let usage = &judge.usage;
            spend.judge_tokens = usage.input_tokens.unwrap_or(0) + usage.output_tokens.unwrap_or(0);
            spend.judge_cost_usd = usage.cost_usd;
            spend.judge_requests = judge.requests;
        }
        spend
    }
}

impl Spend {
    /// Add one trial's usage (cost: reported, else tokens × `price`).
    pub fn add(&mut self, record: &TrialRecord, price: Option<&PriceTable>) {
        self.add_trial(&TrialSpend::of(record, price));
    }

    /// Add one trial's spend. The judges' spend on the trial counts too (judge tokens without
    /// a price leave the cost unknown).
    pub fn add_trial(&mut self, trial: &TrialSpend) {
        self.trials += 1;
        self.tokens += trial.tokens + trial.judge_tokens;
        match trial.cost_usd {
            Some(cost) => self.cost_usd += cost,
            None => self.unpriced_trials += 1,
        }
        match trial.judge_cost_usd {
            Some(cost) => self.cost_usd += cost,
            None if trial.judge_requests > 0 => self.unpriced_trials += 1,
            None => {}
        }
    }

    /// The spend of `records`: the trials this run measured (a trial reused from an earlier run
    /// by `--reuse-baseline` cost nothing here and is not counted).
    pub fn of<'a>(
        records: impl IntoIterator<Item = &'a TrialRecord>,
        price: Option<&PriceTable>,
    ) -> Spend {
        let mut spend = Spend::default();
        for record in records.into_iter().filter(|r| r.reused_from.is_none()) {
            spend.add(record, price);
        }
        spend
    }
}

/// A trial's cost in USD: what the agent reported, else its tokens at `price` (USD per million
/// input / output tokens), else `None`. A trial without any usage (it failed before a request)
/// costs 0.
pub(crate) fn trial_cost_usd(record: &TrialRecord, price: Option<&PriceTable>) -> Option<f64> {
    if let Some(cost) = record.usage.cost_usd {
        return Some(cost);
    }
    let usage = &record.usage;
    if usage.input_tokens.is_none() && usage.output_tokens.is_none() {
        return (record.requests == 0).then_some(0.0);
    }
    price.map(|price| {
        (usage.input_tokens.unwrap_or(0) as f64 * price.input_usd_per_million_tokens
            + usage.output_tokens.unwrap_or(0) as f64 * price.output_usd_per_million_tokens)
            / 1e6
    })
}

impl StoppingPlan {
    /// A plan for `case_ids` (eval-set order) shuffled by `seed`; `round_cases` `None` picks
    /// [`default_round_cases`].
    pub fn new(
        case_ids: &[String],
        seed: u64,
        round_cases: Option<usize>,
        sequential: Option<SequentialSettings>,
        budgets: Budgets,
        price: Option<PriceTable>,
        reply_cap_tokens: Option<u64>,
    ) -> Self {
        let case_order = case_order(case_ids, seed);
        let round_cases = round_cases
            .unwrap_or_else(|| default_round_cases(case_ids.len()))
            .max(1);
        Self {
            sequential,
            budgets,
            round_cases,
            case_order,
            price,
            reply_cap_tokens,
            outcome: None,
        }
    }

    /// The least spend per trial a round is projected at.
    pub fn trial_floor(&self) -> TrialFloor {
        TrialFloor::of_reply_cap(self.reply_cap_tokens, self.price.as_ref())
    }

    /// Why a fresh run cannot start: its first round (`arms` × `k` attempts of its cases),
    /// projected at the [`TrialFloor`], already exceeds a token or cost budget. `None` when it
    /// fits (or nothing projects it: a profile without `max_tokens`).
    pub fn first_round_refusal(&self, arms: usize, k: u32) -> Option<String> {
        let first = self.rounds().first().map_or(0, |round| round.len());
        let trials = first * arms * k as usize;
        match budget_stop(
            &self.budgets,
            &Spend::default(),
            trials,
            None,
            self.price.is_some(),
            self.trial_floor(),
        ) {
            Some((StopReason::BudgetCost | StopReason::BudgetTokens, message)) => Some(message),
            _ => None,
        }
    }
}

/// Cases per round by default: a twentieth of the cases (at least one).
pub(crate) fn default_round_cases(cases: usize) -> usize {
    cases.div_ceil(DEFAULT_ROUNDS).max(1)
}

/// The case ids in the random order fixed by `seed` (ChaCha20, Fisher–Yates): the confidence
/// sequence needs exchangeable observations, so the eval set's own order (often easy cases
/// first) is never used as is.
pub(crate) fn case_order(case_ids: &[String], seed: u64) -> Vec<String> {
    let mut order = case_ids.to_vec();
    // A stream of its own, distinct from the bootstrap's.
    crate::analysis::stats::seeded_shuffle(&mut order, seed ^ 0x5e9u64.rotate_left(48));
    order
}

/// Tally records by case (a later record of the same trial replaces an earlier one).
pub(crate) fn tally(records: &[TrialRecord]) -> HashMap<String, CaseTally> {
    let mut latest: HashMap<TrialKey, Outcome> = HashMap::new();
    for record in records {
        latest.insert(record.key(), record.outcome);
    }
    let mut cases: HashMap<String, CaseTally> = HashMap::new();
    for (key, outcome) in latest {
        let entry = cases.entry(key.case_id).or_default();
        // The compared pair: with the skill against without it.
        let arm = if key.arm == Arm::WithSkill {
            &mut entry.with
        } else if key.arm == Arm::WithoutSkill {
            &mut entry.without
        } else {
            continue;
        };
        arm.2 += 1;
        if outcome.is_scored() {
            arm.1 += 1;
        }
        if outcome == Outcome::Pass {
            arm.0 += 1;
        }
    }
    cases
}

/// The sequential decision a state allows, if any.
pub(crate) fn decision(
    state: &LiftSequenceState,
    settings: &SequentialSettings,
) -> Option<StopReason> {
    let interval = state.interval;
    if state.n == 0 {
        return None;
    }
    if interval.low > 0.0 {
        Some(StopReason::Improved)
    } else if interval.high < 0.0 {
        Some(StopReason::Regressed)
    } else if settings
        .equivalence
        .is_some_and(|delta| interval.low >= -delta && interval.high <= delta)
    {
        Some(StopReason::Equivalent)
    } else {
        None
    }
}

/// The least a trial is projected to spend before a round: the reply cap (the runner
/// profile's `max_tokens`: the most output tokens one reply may produce) and its cost at the
/// profile's output price. Input tokens are unknown until trials report them, so this is a
/// floor: the mean per trial so far replaces it once it is larger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TrialFloor {
    /// Tokens per trial.
    pub tokens: u64,
    /// USD per trial.
    pub cost_usd: f64,
}

impl TrialFloor {
    /// The floor of a profile with reply cap `max_tokens` and prices `price` (zero without a
    /// cap; zero cost without a price).
    pub fn of_reply_cap(max_tokens: Option<u64>, price: Option<&PriceTable>) -> Self {
        let tokens = max_tokens.unwrap_or(0);
        TrialFloor {
            tokens,
            cost_usd: price.map_or(0.0, |p| {
                tokens as f64 * p.output_usd_per_million_tokens / 1_000_000.0
            }),
        }
    }
}

/// Whether the next round (of `trials` trials) would exceed a budget, given the spend so far
/// and the wall time of the rounds run so far in this invocation; `None` when it may run. The
/// round's tokens and cost are projected at the larger of the mean per trial so far and
/// `floor`.
pub(crate) fn budget_stop(
    budgets: &Budgets,
    spent: &Spend,
    trials: usize,
    wall_per_trial: Option<f64>,
    price_known: bool,
    floor: TrialFloor,
) -> Option<(StopReason, String)> {
    let per_trial = |total: f64, counted: usize| (counted > 0).then(|| total / counted as f64);
    if let Some(limit) = budgets.max_cost_usd {
        if spent.unpriced_trials > 0 && !price_known {
            return Some((
                StopReason::CostUnknown,
                format!(
                    "--max-cost-usd {limit:.4} cannot be checked: {} recorded trials report no cost and the runner profile has no [price] table",
                    spent.unpriced_trials
                ),
            ));
        }
        let priced = spent.trials - spent.unpriced_trials;
        let next = per_trial(spent.cost_usd, priced)
            .unwrap_or(0.0)
            .max(floor.cost_usd)
            * trials as f64;
        if spent.cost_usd >= limit || spent.cost_usd + next > limit {
            return Some((
                StopReason::BudgetCost,
                format!(
                    "cost budget: spent ${:.4} of --max-cost-usd ${limit:.4}; the next round ({trials} trials) would cost about ${next:.4}",
                    spent.cost_usd
                ),
            ));
        }
    }
    if let Some(limit) = budgets.max_tokens {
        let next = per_trial(spent.tokens as f64, spent.trials)
            .unwrap_or(0.0)
            .max(floor.tokens as f64)
            * trials as f64;
        if spent.tokens >= limit || spent.tokens as f64 + next > limit as f64 {
            return Some((
                StopReason::BudgetTokens,
                format!(
                    "token budget: spent {} of --max-tokens {limit}; the next round ({trials} trials) would use about {next:.0}",
                    spent.tokens
                ),
            ));
        }
    }
    if let Some(limit) = budgets.max_wall_s {
        let next = wall_per_trial.unwrap_or(0.0) * trials as f64;
        if spent.wall_s >= limit || spent.wall_s + next > limit {
            return Some((
                StopReason::BudgetWall,
                format!(
                    "wall-time budget: {:.1} s of --max-wall {limit:.1} s used; the next round ({trials} trials) would take about {next:.1} s",
                    spent.wall_s
                ),
            ));
        }
    }
    None
}

/// A sink shared by the rounds: appends to the run's log and keeps a copy of every record
/// (the budget and the confidence sequence read them between rounds).
struct RoundSink<S> {
    inner: Arc<Mutex<S>>,
    recorded: Arc<Mutex<Vec<TrialRecord>>>,
}

impl<S: RecordSink> RecordSink for RoundSink<S> {
    fn append(&mut self, batch: &mut [FinishedTrial]) -> Result<(), RecordError> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .append(batch)?;
        self.recorded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend(batch.iter().map(|trial| trial.record.clone()));
        Ok(())
    }
}

/// Run the trials of `context` round by round as `plan` says (see the module comment): before
/// each round, stop on a sequential decision or a budget; run the round's trials not in `done`
/// through [`execute`]; stop on an interrupt or the circuit breaker. `interrupt` makes the
/// future each round's execution stops on. Returns the combined execution report and how the
/// run stopped (`wall_before_s`: wall time spent by earlier invocations of the run).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn execute_rounds<S, F, Fut>(
    context: Arc<TrialContext>,
    settings: SchedulerSettings,
    plan: &StoppingPlan,
    done: &HashSet<TrialKey>,
    previous: &[TrialRecord],
    sink: S,
    interrupt: F,
    wall_before_s: f64,
) -> Result<(ExecuteReport, StoppingOutcome), ExecuteError>
where
    S: RecordSink,
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let started = Instant::now();
    let k = settings.k;
    let arms = context.arms.clone();
    let trials_planned = plan.case_order.len() * arms.len() * k as usize;
    let shared = Arc::new(Mutex::new(sink));
    let recorded = Arc::new(Mutex::new(Vec::<TrialRecord>::new()));
    let mut records: Vec<TrialRecord> = previous.to_vec();
    let mut report = ExecuteReport {
        recorded: 0,
        interrupted: false,
        missing: 0,
        breaker: None,
        retried_requests: 0,
        wall_s: 0.0,
    };
    let mut done = done.clone();
    let mut rounds_run = 0;
    let mut executed_trials = 0usize;
    let mut stop: Option<(StopReason, String)> = None;
    let rounds = plan.rounds();
    for (index, round) in rounds.iter().enumerate() {
        // A decision on the rounds so far ends the run before this round.
        if let Some(sequential) = &plan.sequential {
            let state = lift_sequence(&plan.case_order, &tally(&records), k, sequential.alpha);
            if let Some(state) = state
                && let Some(reason) = decision(&state, sequential)
            {
                stop = Some((reason, decision_message(reason, &state, sequential)));
                break;
            }
        }
        let keys: HashSet<TrialKey> = round
            .iter()
            .flat_map(|case| {
                arms.iter().flat_map(move |&arm| {
                    (1..=k).map(move |attempt| TrialKey {
                        case_id: case.clone(),
                        arm,
                        attempt,
                    })
                })
            })
            .filter(|key| !done.contains(key))
            .collect();
        if keys.is_empty() {
            rounds_run = index + 1;
            continue;
        }
        let mut spent = Spend::of(&records, plan.price.as_ref());
        spent.wall_s = wall_before_s + started.elapsed().as_secs_f64();
        let wall_per_trial =
            (executed_trials > 0).then(|| started.elapsed().as_secs_f64() / executed_trials as f64);
        if let Some(found) = budget_stop(
            &plan.budgets,
            &spent,
            keys.len(),
            wall_per_trial,
            plan.price.is_some(),
            plan.trial_floor(),
        ) {
            stop = Some(found);
            break;
        }
        let round_settings = SchedulerSettings {
            round: Some(Arc::new(keys.clone())),
            ..settings.clone()
        };
        let round_sink = RoundSink {
            inner: Arc::clone(&shared),
            recorded: Arc::clone(&recorded),
        };
        let round_report = execute(
            Arc::clone(&context),
            round_settings,
            &done,
            &records,
            round_sink,
            interrupt(),
        )
        .await?;
        executed_trials += keys.len();
        let new: Vec<TrialRecord> = std::mem::take(
            &mut *recorded
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        done.extend(new.iter().map(TrialRecord::key));
        records.extend(new);
        report.recorded += round_report.recorded;
        report.missing += round_report.missing;
        report.retried_requests += round_report.retried_requests;
        report.interrupted |= round_report.interrupted;
        if round_report.breaker.is_some() {
            report.breaker = round_report.breaker.clone();
        }
        rounds_run = index + 1;
        if let Some(reason) = &round_report.breaker {
            stop = Some((StopReason::CircuitBreaker, reason.clone()));
            break;
        }
        if round_report.interrupted {
            stop = Some((
                StopReason::Interrupted,
                "interrupted; recorded trials are kept".to_string(),
            ));
            break;
        }
    }
    // After the last round: its data may decide.
    if stop.is_none()
        && let Some(sequential) = &plan.sequential
        && let Some(state) = lift_sequence(&plan.case_order, &tally(&records), k, sequential.alpha)
        && let Some(reason) = decision(&state, sequential)
    {
        stop = Some((reason, decision_message(reason, &state, sequential)));
    }
    let (reason, message) = stop.unwrap_or_else(|| {
        (
            StopReason::Completed,
            match &plan.sequential {
                Some(_) => "every round ran without a sequential decision: the fixed-n analysis of all cases is shown, its direction not called".to_string(),
                None => "every round ran".to_string(),
            },
        )
    });
    report.wall_s = started.elapsed().as_secs_f64();
    let planned_keys: HashSet<TrialKey> = plan
        .case_order
        .iter()
        .flat_map(|case| {
            arms.iter().flat_map(move |&arm| {
                (1..=k).map(move |attempt| TrialKey {
                    case_id: case.clone(),
                    arm,
                    attempt,
                })
            })
        })
        .collect();
    let recorded_keys: HashSet<TrialKey> = records
        .iter()
        .map(TrialRecord::key)
        .filter(|key| planned_keys.contains(key))
        .collect();
    let mut spent = Spend::of(&records, plan.price.as_ref());
    spent.wall_s = wall_before_s + report.wall_s;
    let outcome = StoppingOutcome {
        reason,
        message,
        rounds_run,
        trials_recorded: recorded_keys.len(),
        trials_not_run: trials_planned.saturating_sub(recorded_keys.len()),
        spent,
    };
    Ok((report, outcome))
}

/// The words of a sequential decision.
fn decision_message(
    reason: StopReason,
    state: &LiftSequenceState,
    settings: &SequentialSettings,
) -> String {
    let interval = format!(
        "[{:+.1} pp, {:+.1} pp]",
        state.interval.low * 100.0,
        state.interval.high * 100.0
    );
    let confidence = (1.0 - settings.alpha) * 100.0;
    match reason {
        StopReason::Improved => format!(
            "the {confidence:.0}% confidence sequence {interval} excludes 0 after {}: improved",
            count(state.n, "case")
        ),
        StopReason::Regressed => format!(
            "the {confidence:.0}% confidence sequence {interval} excludes 0 after {}: regressed",
            count(state.n, "case")
        ),
        StopReason::Equivalent => format!(
            "the {confidence:.0}% confidence sequence {interval} lies inside ±{:.1} pp after {}: no meaningful effect",
            settings.equivalence.unwrap_or(0.0) * 100.0,
            count(state.n, "case")
        ),
        _ => String::new(),
    }
}

/// A duration that is not a positive number of seconds, minutes or hours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: expected a positive duration such as 90s, 15m or 1.5h")]
pub(crate) struct DurationError(pub String);

/// Parse a duration: `90`, `90s`, `15m`, `1.5h` (seconds when no unit).
pub(crate) fn parse_duration_s(text: &str) -> Result<f64, DurationError> {
    let text = text.trim();
    let (number, scale) = match text.chars().last() {
        Some('s') => (&text[..text.len() - 1], 1.0),
        Some('m') => (&text[..text.len() - 1], 60.0),
        Some('h') => (&text[..text.len() - 1], 3600.0),
        _ => (text, 1.0),
    };
    match number.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value * scale),
        _ => Err(DurationError(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(case: &str, arm: Arm, attempt: u32, outcome: Outcome) -> TrialRecord {
        let mut record: TrialRecord = serde_json::from_value(serde_json::json!({
            "run_id": "r", "trial_id": "x", "case_id": case, "arm": arm.as_str(),
            "attempt": attempt, "runner": "mock", "model": "m", "outcome": outcome.as_str(),
            "started_at": "2026-01-01T00:00:00Z", "wall_s": 1.0,
            "usage": {"input_tokens": 1000, "output_tokens": 100}, "observed_model": null,
            "reason": null, "checks": [], "scores": {}, "model_latency_s": 0.5, "requests": 1,
            "retries": [], "tool_calls": 0, "activated_skills": [], "transcript": null,
            "workspace": null
        }))
        .unwrap();
        record.trial_id = record.key().trial_id();
        record
    }

    #[test]
    fn the_case_order_is_a_seeded_permutation() {
        let ids: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
        let a = case_order(&ids, 42);
        assert_eq!(a, case_order(&ids, 42));
        assert_ne!(a, ids);
        assert_ne!(a, case_order(&ids, 43));
        let mut sorted = a.clone();
        sorted.sort();
        let mut expected = ids.clone();
        expected.sort();
        assert_eq!(sorted, expected);
        let plan = StoppingPlan::new(&ids, 42, None, None, Budgets::default(), None, None);
        assert_eq!(plan.round_cases, 2);
        assert_eq!(plan.rounds().len(), 15);
    }

    #[test]
    fn costs_come_from_reports_else_prices() {
        let price = PriceTable {
            input_usd_per_million_tokens: 3.0,
            output_usd_per_million_tokens: 15.0,
            cache_read_usd_per_million_tokens: None,
            cache_write_usd_per_million_tokens: None,
        };
        let mut r = record("a", Arm::WithSkill, 1, Outcome::Pass);
        assert_eq!(trial_cost_usd(&r, None), None);
        let priced = trial_cost_usd(&r, Some(&price)).unwrap();
        assert!((priced - (1000.0 * 3.0 + 100.0 * 15.0) / 1e6).abs() < 1e-12);
        r.usage.cost_usd = Some(0.5);
        assert_eq!(trial_cost_usd(&r, Some(&price)), Some(0.5));
        let spend = Spend::of([&r, &record("b", Arm::WithSkill, 1, Outcome::Fail)], None);
        assert_eq!(
            (spend.trials, spend.unpriced_trials, spend.tokens),
            (2, 1, 2200)
        );
    }

    #[test]
    fn budgets_stop_before_a_round_that_would_exceed_them() {
        let spent = Spend {
            cost_usd: 0.8,
            unpriced_trials: 0,
            tokens: 8_000,
            trials: 8,
            wall_s: 10.0,
        };
        let budgets = Budgets {
            max_cost_usd: Some(1.0),
            ..Default::default()
        };
        // 0.1 per trial: 2 more fit, 3 do not.
        assert!(budget_stop(&budgets, &spent, 2, None, true, TrialFloor::default()).is_none());
        let (reason, message) =
            budget_stop(&budgets, &spent, 3, None, true, TrialFloor::default()).unwrap();
        assert_eq!(reason, StopReason::BudgetCost);
        assert!(message.contains("--max-cost-usd"), "{message}");
        let tokens = Budgets {
            max_tokens: Some(10_000),
            ..Default::default()
        };
        assert_eq!(
            budget_stop(&tokens, &spent, 3, None, true, TrialFloor::default())
                .unwrap()
                .0,
            StopReason::BudgetTokens
        );
        let wall = Budgets {
            max_wall_s: Some(12.0),
            ..Default::default()
        };
        assert!(budget_stop(&wall, &spent, 1, Some(1.0), true, TrialFloor::default()).is_none());
        assert_eq!(
            budget_stop(&wall, &spent, 3, Some(1.0), true, TrialFloor::default())
                .unwrap()
                .0,
            StopReason::BudgetWall
        );
        let unknown = Spend {
            unpriced_trials: 2,
            ..spent
        };
        assert_eq!(
            budget_stop(&budgets, &unknown, 1, None, false, TrialFloor::default())
                .unwrap()
                .0,
            StopReason::CostUnknown
        );
    }

    #[test]
    fn the_reply_cap_projects_the_first_round_and_floors_later_ones() {
        let price = PriceTable {
            input_usd_per_million_tokens: 1.0,
            output_usd_per_million_tokens: 2.0,
            cache_read_usd_per_million_tokens: None,
            cache_write_usd_per_million_tokens: None,
        };
        let floor = TrialFloor::of_reply_cap(Some(64), Some(&price));
        assert_eq!(floor.tokens, 64);
        assert!((floor.cost_usd - 64.0 * 2.0 / 1e6).abs() < 1e-15);
        assert_eq!(
            TrialFloor::of_reply_cap(None, Some(&price)),
            TrialFloor::default()
        );
        let tokens = Budgets {
            max_tokens: Some(100),
            ..Default::default()
        };
        // Nothing spent: one trial (64) fits 100, two (128) do not.
        let nothing = Spend::default();
        assert!(budget_stop(&tokens, &nothing, 1, None, true, floor).is_none());
        assert_eq!(
            budget_stop(&tokens, &nothing, 2, None, true, floor)
                .unwrap()
                .0,
            StopReason::BudgetTokens
        );
        // The mean so far (10 per trial) is below the floor: the floor projects.
        let cheap = Spend {
            tokens: 20,
            trials: 2,
            ..Spend::default()
        };
        assert!(budget_stop(&tokens, &cheap, 1, None, true, floor).is_none());
        assert!(budget_stop(&tokens, &cheap, 2, None, true, floor).is_some());
        let ids: Vec<String> = (0..13).map(|i| format!("c{i}")).collect();
        let plan = StoppingPlan::new(&ids, 1, None, None, tokens, Some(price), Some(64));
        // One case per round × 2 arms × K = 3: 6 × 64 = 384 tokens > 100.
        let refusal = plan.first_round_refusal(2, 3).unwrap();
        assert!(refusal.contains("--max-tokens 100"), "{refusal}");
        assert!(plan.first_round_refusal(1, 1).is_none());
        let uncapped = StoppingPlan::new(&ids, 1, None, None, tokens, Some(price), None);
        assert!(uncapped.first_round_refusal(2, 3).is_none());
    }

    #[test]
    fn the_sequence_decides_on_complete_cases_in_order() {
        let ids: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
        let order = case_order(&ids, 1);
        let mut records = Vec::new();
        for case in &order {
            for attempt in 1..=2 {
                records.push(record(case, Arm::WithSkill, attempt, Outcome::Pass));
                records.push(record(case, Arm::WithoutSkill, attempt, Outcome::Fail));
            }
        }
        let settings = SequentialSettings {
            alpha: 0.05,
            equivalence: None,
        };
        let state = lift_sequence(&order, &tally(&records), 2, 0.05).unwrap();
        assert_eq!(state.n, 30);
        assert_eq!(decision(&state, &settings), Some(StopReason::Improved));
        // Only the prefix of complete cases counts: drop one trial of the third case.
        let third = order[2].clone();
        let partial: Vec<TrialRecord> = records
            .iter()
            .filter(|r| !(r.case_id == third && r.attempt == 2 && r.arm == Arm::WithoutSkill))
            .cloned()
            .collect();
        let state = lift_sequence(&order, &tally(&partial), 2, 0.05).unwrap();
        assert_eq!(state.n, 2);
        assert_eq!(decision(&state, &settings), None);
        // No effect at all, with a margin: equivalence once the sequence is narrow enough.
        let mut flat = Vec::new();
        for case in &order {
            for (attempt, outcome) in [(1, Outcome::Pass), (2, Outcome::Fail)] {
                flat.push(record(case, Arm::WithSkill, attempt, outcome));
                flat.push(record(case, Arm::WithoutSkill, attempt, outcome));
            }
        }
        let state = lift_sequence(&order, &tally(&flat), 2, 0.05).unwrap();
        let margin = SequentialSettings {
            alpha: 0.05,
            equivalence: Some(0.3),
        };
        assert_eq!(
            decision(&state, &margin),
            Some(StopReason::Equivalent),
            "{state:?}"
        );
        assert_eq!(decision(&state, &settings), None);
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration_s("90").unwrap(), 90.0);
        assert_eq!(parse_duration_s("90s").unwrap(), 90.0);
        assert_eq!(parse_duration_s("15m").unwrap(), 900.0);
        assert_eq!(parse_duration_s("1.5h").unwrap(), 5400.0);
        assert!(parse_duration_s("0").is_err());
        assert!(parse_duration_s("soon").is_err());
    }
}
