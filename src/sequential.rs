//! Spending less per decision (`run --sequential`, `--max-cost-usd`, `--max-tokens`,
//! `--max-wall`): the round planner that feeds the scheduler, the budget gate, the anytime-valid
//! stopping rule, and how the run stopped as the manifest records it and the summary shows it.
//!
//! **Rounds.** The eval set's cases are put in a random order fixed by the run's seed
//! ([`case_order`]) and cut into rounds of [`StoppingPlan::round_cases`] cases; a round runs
//! every arm × K attempts of its cases (case-balanced), through the ordinary scheduler
//! ([`crate::execute::execute`] with [`crate::execute::SchedulerSettings::round`]). Decisions are
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

use serde::{Deserialize, Serialize};

use crate::execute::{
    ExecuteError, ExecuteReport, RecordSink, SchedulerSettings, TrialContext, execute,
};
use crate::grade::Outcome;
use crate::record::{FinishedTrial, RecordError, TrialKey, TrialRecord};
use crate::report::tables::count;
use crate::runner::profile::PriceTable;
use crate::stats::{Interval, LiftSequenceState, PairedLiftSequence};
use crate::workspace::Arm;

/// Default miscoverage of the confidence sequence (a 95 % sequence).
pub const DEFAULT_ALPHA: f64 = 0.05;
/// The `method` and `test` of a lift the confidence sequence decided.
pub const SEQUENCE_METHOD: &str = "betting-confidence-sequence";
/// Default number of rounds a run is cut into (rounds hold at least one case): fine rounds stop
/// closer to the decision; each round waits for its slowest trial.
pub const DEFAULT_ROUNDS: usize = 20;

/// Anytime-valid stopping settings (`--sequential`, `--equivalence`, `--sequential-alpha`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SequentialSettings {
    /// Miscoverage of the confidence sequence (0.05: 95 %).
    pub alpha: f64,
    /// Equivalence margin δ (a fraction): stop with "no meaningful effect" once the sequence
    /// lies inside [−δ, +δ].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<f64>,
}

/// Spending limits of a run; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Budgets {
    /// USD, over the run's recorded trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Input + output tokens, over the run's recorded trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Wall time of the run's trial execution, seconds (over every invocation of the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall_s: Option<f64>,
}

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

/// Why a round-scheduled run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every round ran (no sequential decision fell, no budget ran out).
    Completed,
    /// The confidence sequence excluded 0 upward.
    Improved,
    /// The confidence sequence excluded 0 downward.
    Regressed,
    /// The confidence sequence lies inside ±equivalence: no meaningful effect.
    Equivalent,
    /// The next round would have exceeded `--max-cost-usd`.
    BudgetCost,
    /// The next round would have exceeded `--max-tokens`.
    BudgetTokens,
    /// The next round would have exceeded `--max-wall`.
    BudgetWall,
    /// `--max-cost-usd` cannot be checked: trials report no cost and the profile has no
    /// `[price]` table.
    CostUnknown,
    /// Ctrl-C / SIGTERM.
    Interrupted,
    /// The circuit breaker (infrastructure failures in a row).
    CircuitBreaker,
}

impl StopReason {
    /// The snake_case name (as in `summary.json`).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::Improved => "improved",
            StopReason::Regressed => "regressed",
            StopReason::Equivalent => "equivalent",
            StopReason::BudgetCost => "budget_cost",
            StopReason::BudgetTokens => "budget_tokens",
            StopReason::BudgetWall => "budget_wall",
            StopReason::CostUnknown => "cost_unknown",
            StopReason::Interrupted => "interrupted",
            StopReason::CircuitBreaker => "circuit_breaker",
        }
    }

    /// Whether the confidence sequence decided (the verdict is the sequence's, not fixed-n).
    pub fn is_sequential_decision(self) -> bool {
        matches!(
            self,
            StopReason::Improved | StopReason::Regressed | StopReason::Equivalent
        )
    }

    /// Whether a budget stopped the run (its unscheduled trials are "not run: budget").
    pub fn is_budget(self) -> bool {
        matches!(
            self,
            StopReason::BudgetCost
                | StopReason::BudgetTokens
                | StopReason::BudgetWall
                | StopReason::CostUnknown
        )
    }
}

/// What a run spent, from its recorded trials (and the wall time of its invocations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// USD of the trials whose cost is known (reported, or priced from tokens).
    pub cost_usd: f64,
    /// Trials whose cost is unknown (no reported cost, no tokens or no `[price]` table).
    pub unpriced_trials: usize,
    /// Input + output tokens.
    pub tokens: u64,
    /// Trials counted.
    pub trials: usize,
    /// Wall time of trial execution, seconds.
    pub wall_s: f64,
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
pub fn trial_cost_usd(record: &TrialRecord, price: Option<&PriceTable>) -> Option<f64> {
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

/// How a run stopped (`manifest.json` `stopping.outcome`; rewritten when the run ends).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppingOutcome {
    pub reason: StopReason,
    /// The reason in words, with the numbers behind it.
    pub message: String,
    /// Rounds whose trials ran (or were recorded before).
    pub rounds_run: usize,
    /// Trials recorded when the run stopped.
    pub trials_recorded: usize,
    /// Planned trials not run because of the stop.
    pub trials_not_run: usize,
    /// What the run had spent.
    pub spent: Spend,
}

/// How a run schedules and stops (`manifest.json` `stopping`; absent for an ordinary run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppingPlan {
    /// Anytime-valid stopping, when `--sequential` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialSettings>,
    /// Spending limits (those of the latest invocation).
    #[serde(default)]
    pub budgets: Budgets,
    /// Cases per round.
    pub round_cases: usize,
    /// Case ids in the order the rounds take them (a shuffle seeded by the run's seed).
    pub case_order: Vec<String>,
    /// The runner profile's token prices, for trials that report no cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<PriceTable>,
    /// The runner profile's `max_tokens` (the reply cap): the least spend per trial a round is
    /// projected at ([`TrialFloor`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_cap_tokens: Option<u64>,
    /// How the run stopped; absent while it runs (or when it was killed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<StoppingOutcome>,
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

    /// The rounds: the case order cut into groups of `round_cases`.
    pub fn rounds(&self) -> Vec<&[String]> {
        self.case_order.chunks(self.round_cases.max(1)).collect()
    }
}

/// Cases per round by default: a twentieth of the cases (at least one).
pub fn default_round_cases(cases: usize) -> usize {
    cases.div_ceil(DEFAULT_ROUNDS).max(1)
}

/// The case ids in the random order fixed by `seed` (ChaCha20, Fisher–Yates): the confidence
/// sequence needs exchangeable observations, so the eval set's own order (often easy cases
/// first) is never used as is.
pub fn case_order(case_ids: &[String], seed: u64) -> Vec<String> {
    let mut order = case_ids.to_vec();
    // A stream of its own, distinct from the bootstrap's.
    crate::stats::seeded_shuffle(&mut order, seed ^ 0x5e9u64.rotate_left(48));
    order
}

/// One case's recorded outcomes in the two compared arms.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CaseTally {
    /// with-skill passes, scored attempts, recorded trials.
    pub with: (usize, usize, usize),
    /// without-skill passes, scored attempts, recorded trials.
    pub without: (usize, usize, usize),
}

impl CaseTally {
    /// Whether all K attempts of both arms are recorded.
    pub fn complete(&self, k: u32) -> bool {
        self.with.2 >= k as usize && self.without.2 >= k as usize
    }

    /// with − without pass rate over the scored attempts, when both arms have one.
    pub fn difference(&self) -> Option<f64> {
        (self.with.1 > 0 && self.without.1 > 0).then(|| {
            self.with.0 as f64 / self.with.1 as f64 - self.without.0 as f64 / self.without.1 as f64
        })
    }
}

/// Tally records by case (a later record of the same trial replaces an earlier one).
pub fn tally(records: &[TrialRecord]) -> HashMap<String, CaseTally> {
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

/// The confidence sequence over the completed cases, in the case order, up to the first case
/// that is not complete (later cases were not reached). Cases without a scored attempt in an
/// arm give no observation.
pub fn lift_sequence(
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

/// The sequential decision a state allows, if any.
pub fn decision(state: &LiftSequenceState, settings: &SequentialSettings) -> Option<StopReason> {
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
pub fn budget_stop(
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
pub async fn execute_rounds<S, F, Fut>(
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

/// Which analysis the headline verdict comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictBasis {
    /// The anytime-valid confidence sequence decided (its interval is the lift's interval).
    ConfidenceSequence,
    /// The ordinary fixed-n analysis of the cases measured.
    FixedN,
}

/// How a round-scheduled run stopped, for `summary.json` (`stopping`) and the reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppingSummary {
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
    pub fn of_run(
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
    pub fn stopped_as_planned(&self) -> bool {
        self.stop_reason.is_some_and(|reason| {
            !matches!(reason, StopReason::Interrupted | StopReason::CircuitBreaker)
        })
    }

    /// The interval the headline shows when the sequence decided.
    pub fn decided_interval(&self) -> Option<Interval> {
        (self.verdict_basis == VerdictBasis::ConfidenceSequence)
            .then(|| self.confidence_sequence.map(|s| s.interval))
            .flatten()
    }

    /// When the confidence sequence decided, make it the lift's headline: the verdict, the
    /// interval (`method`/`test` `betting-confidence-sequence`), the anytime-valid p-value and
    /// the reasons. When a `--sequential` run ended without a decision of the sequence (every
    /// round run, or a budget), a fixed-n `improved` / `regressed` is not called: the verdict
    /// is inconclusive with reason `sequence_undecided` (the fixed-n interval and p-value stay
    /// beside it), so that the run's false verdicts at zero lift stay within the sequence's α.
    /// Returns whether the lift changed (its gate must be evaluated again). A run with budgets
    /// only (no sequence) keeps its fixed-n verdict.
    pub fn apply_to(&self, lift: &mut crate::analysis::LiftSummary) -> bool {
        let (Some(reason), Some(state)) = (self.stop_reason, self.confidence_sequence) else {
            return false;
        };
        if self.verdict_basis != VerdictBasis::ConfidenceSequence {
            let fixed_n_verdict = match lift.verdict {
                crate::analysis::Verdict::Improved => "improved",
                crate::analysis::Verdict::Regressed => "regressed",
                _ => return false,
            };
            if self.sequential.is_none() {
                return false;
            }
            lift.verdict = crate::analysis::Verdict::Inconclusive;
            lift.verdict_reasons = vec![
                crate::analysis::InconclusiveReason::SequenceUndecided {
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
                lift.verdict = crate::analysis::Verdict::Improved;
                lift.verdict_reasons.clear();
            }
            StopReason::Regressed => {
                lift.verdict = crate::analysis::Verdict::Regressed;
                lift.verdict_reasons.clear();
            }
            _ => {
                lift.verdict = crate::analysis::Verdict::Inconclusive;
                lift.verdict_reasons = vec![
                    crate::analysis::InconclusiveReason::Equivalent {
                        margin: self.sequential.and_then(|s| s.equivalence).unwrap_or(0.0),
                    }
                    .into(),
                ];
            }
        }
        true
    }

    /// One line for the terminal and the reports.
    pub fn line(&self) -> String {
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

/// Parse a duration: `90`, `90s`, `15m`, `1.5h` (seconds when no unit).
pub fn parse_duration_s(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let (number, scale) = match text.chars().last() {
        Some('s') => (&text[..text.len() - 1], 1.0),
        Some('m') => (&text[..text.len() - 1], 60.0),
        Some('h') => (&text[..text.len() - 1], 3600.0),
        _ => (text, 1.0),
    };
    match number.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value * scale),
        _ => Err(format!(
            "`{text}`: expected a positive duration such as 90s, 15m or 1.5h"
        )),
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
