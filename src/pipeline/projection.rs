//! What a run would spend, fixed-K against `run --sequential`, for an assumed true lift
//! (`skill-lift plan --pilot RUN_DIR --assumed-lift L`): a seeded Monte Carlo simulation of the
//! run's own round procedure on case truths drawn from a pilot run.
//!
//! **The world.** The pilot's per-case `without_skill` pass counts `(xᵢ, nᵢ)` fit a beta-binomial
//! prior `Beta(a, b)` by the method of moments (between-case variance of the rates beyond the
//! binomial noise). A simulated case resamples a pilot case `j` uniformly and draws its true
//! baseline rate `p₀ ~ Beta(a + xⱼ, b + nⱼ − xⱼ)` (its posterior: observed rates of 0/3 or 3/3
//! are not taken as certain); the skill adds the assumed lift, `p₁ = clamp(p₀ + L, 0, 1)`. An
//! attempt is not scored with the pilot's per-arm share of unscoreable or not-gradable trials,
//! else passes with its arm's rate. Each trial's tokens, cost (agent: reported, else tokens at
//! the planned profile's `[price]`; judges: their recorded cost) and wall time are those of a
//! pilot trial of the same arm drawn at random.
//!
//! **The procedure** is the one `run` follows ([`crate::pipeline::sequential`]): rounds of
//! `round_cases` cases (default [`default_round_cases`]), every arm × K attempts per case; before
//! each round the sequential [`decision`] on the confidence sequence of the completed cases
//! ([`PairedLiftSequence`], pushed in order, as [`crate::analysis::lift_sequence`] builds it)
//! and the [`budget_stop`] check on the spend so far; after the last round one more decision.
//! Fixed-K is the same run without `--sequential` (with a budget it runs in rounds too; without
//! one it runs every trial at once). Wall time is the makespan of the trials' durations on `jobs`
//! slots (greedy list scheduling), summed over rounds (a round waits for its slowest trial).
//! Both procedures run on the same simulated cases and attempts (common random numbers), so
//! their difference is measured with less noise than either.
//!
//! Every simulation draws from its own ChaCha20 stream (seed, lift, index), so the result does
//! not depend on the number of threads.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use serde::Serialize;

use crate::analysis::stats::{PairedLiftSequence, seeded_rng};
use crate::pipeline::sequential::{
    TrialFloor, TrialSpend, budget_stop, decision, default_round_cases,
};
use crate::record::{
    Arm, Budgets, Outcome, PriceTable, SequentialSettings, Spend, StopReason, TrialKey, TrialRecord,
};

/// Default simulations per assumed lift: the mean trials spent has a standard error of about
/// 0.5 % of fixed-K at N = 40, K = 3.
pub(crate) const DEFAULT_SIMULATIONS: usize = 2000;
/// Simulations a projection worker takes at a time from the shared counter.
const JOB_BLOCK: usize = 16;
/// The assumed lifts projected when none is given.
pub(crate) const DEFAULT_ASSUMED_LIFTS: [f64; 4] = [0.0, 0.1, 0.3, 0.5];

/// Why a projection cannot be made.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum ProjectionError {
    /// The pilot has no recorded trial.
    #[error("the pilot run has no recorded trial")]
    NoTrials,
    /// The pilot has no case with a scored `without_skill` attempt.
    #[error("the pilot run has no case with a scored without_skill attempt")]
    NoBaseline,
    /// An assumed lift outside [−1, 1].
    #[error("assumed lift {0} is outside [-1, 1]")]
    LiftOutOfRange(f64),
    /// Nothing to simulate.
    #[error("the projection needs at least one case, one attempt, one job and one simulation")]
    Empty,
    /// The confidence sequence rejected its settings.
    #[error(transparent)]
    Stats(#[from] crate::analysis::stats::StatsError),
}

/// A pilot trial's spend and duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PilotTrial {
    /// Tokens and cost (agent and judges).
    pub spend: TrialSpend,
    /// Wall time of the trial, seconds.
    pub wall_s: f64,
}

/// What the projection takes from a pilot run.
#[derive(Debug, Clone)]
pub(crate) struct PilotModel {
    /// The pilot's run id.
    pub run_id: String,
    /// Per pilot case: `without_skill` passes and scored attempts (cases with one scored).
    pub baseline_cases: Vec<(u32, u32)>,
    /// The fitted beta-binomial prior `Beta(a, b)` of the baseline rate.
    pub prior: (f64, f64),
    /// Pooled `without_skill` pass rate.
    pub baseline_rate: f64,
    /// Per arm: the share of recorded trials not scored (unscoreable or not gradable).
    pub unscored: HashMap<Arm, f64>,
    /// Per arm: the recorded trials' spend and duration.
    pub trials: HashMap<Arm, Vec<PilotTrial>>,
}

impl PilotModel {
    /// The model of a pilot's records (a later record of a trial replaces an earlier one);
    /// agent tokens without a reported cost are priced at `price` (the planned profile's).
    pub(crate) fn from_records(
        run_id: &str,
        records: impl IntoIterator<Item = TrialRecord>,
        price: Option<&PriceTable>,
    ) -> Result<Self, ProjectionError> {
        let mut latest: HashMap<TrialKey, TrialRecord> = HashMap::new();
        for record in records {
            latest.insert(record.key(), record);
        }
        if latest.is_empty() {
            return Err(ProjectionError::NoTrials);
        }
        let mut by_case: BTreeMap<String, (u32, u32)> = BTreeMap::new();
        let mut recorded: HashMap<Arm, (usize, usize)> = HashMap::new();
        let mut trials: HashMap<Arm, Vec<PilotTrial>> = HashMap::new();
        // A stable order (the samples are drawn by index).
        let mut keys: Vec<&TrialKey> = latest.keys().collect();
        keys.sort_by(|a, b| {
            (&a.case_id, a.arm.as_str(), a.attempt).cmp(&(&b.case_id, b.arm.as_str(), b.attempt))
        });
        for key in keys {
            let record = &latest[key];
            let counts = recorded.entry(record.arm).or_default();
            counts.0 += 1;
            if !record.outcome.is_scored() {
                counts.1 += 1;
            }
            if record.arm == Arm::WithoutSkill && record.outcome.is_scored() {
                let case = by_case.entry(record.case_id.clone()).or_default();
                case.1 += 1;
                if record.outcome == Outcome::Pass {
                    case.0 += 1;
                }
            }
            trials.entry(record.arm).or_default().push(PilotTrial {
                spend: TrialSpend::of(record, price),
                wall_s: record.wall_s.max(0.0),
            });
        }
        let baseline_cases: Vec<(u32, u32)> = by_case.into_values().collect();
        if baseline_cases.is_empty() {
            return Err(ProjectionError::NoBaseline);
        }
        let (prior, baseline_rate) = fit_beta_binomial(&baseline_cases);
        Ok(Self {
            run_id: run_id.to_string(),
            baseline_cases,
            prior,
            baseline_rate,
            unscored: recorded
                .into_iter()
                .map(|(arm, (all, unscored))| (arm, unscored as f64 / all.max(1) as f64))
                .collect(),
            trials,
        })
    }

    /// The pilot trials a simulated trial of `arm` draws from: the arm's own, else the
    /// `with_skill` arm's (the nearest for an arm the pilot did not run), else any.
    fn samples(&self, arm: Arm) -> &[PilotTrial] {
        [arm, Arm::WithSkill, Arm::WithoutSkill]
            .iter()
            .filter_map(|a| self.trials.get(a))
            .find(|v| !v.is_empty())
            .or_else(|| self.trials.values().find(|v| !v.is_empty()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The mean spend of one trial over the pilot's trials of `arms` (each arm weighted
    /// equally, as a run plans them): `(agent tokens, agent cost, judge tokens, judge cost)`;
    /// a cost is `None` when some trial's is unknown.
    pub(crate) fn mean_trial_spend(&self, arms: &[Arm]) -> MeanTrialSpend {
        let mut mean = MeanTrialSpend {
            tokens: 0.0,
            cost_usd: Some(0.0),
            judge_tokens: 0.0,
            judge_cost_usd: Some(0.0),
            judged_share: 0.0,
        };
        let arms = if arms.is_empty() {
            &Arm::PAIRED[..]
        } else {
            arms
        };
        for &arm in arms {
            let samples = self.samples(arm);
            let n = samples.len().max(1) as f64;
            let weight = 1.0 / arms.len() as f64;
            let sum = |f: &dyn Fn(&PilotTrial) -> f64| samples.iter().map(f).sum::<f64>() / n;
            mean.tokens += weight * sum(&|t| t.spend.tokens as f64);
            mean.judge_tokens += weight * sum(&|t| t.spend.judge_tokens as f64);
            mean.judged_share += weight * sum(&|t| f64::from(u8::from(t.spend.judge_requests > 0)));
            let agent_known = samples.iter().all(|t| t.spend.cost_usd.is_some());
            let judge_known = samples
                .iter()
                .all(|t| t.spend.judge_cost_usd.is_some() || t.spend.judge_requests == 0);
            mean.cost_usd = mean
                .cost_usd
                .filter(|_| agent_known)
                .map(|c| c + weight * sum(&|t| t.spend.cost_usd.unwrap_or(0.0)));
            mean.judge_cost_usd = mean
                .judge_cost_usd
                .filter(|_| judge_known)
                .map(|c| c + weight * sum(&|t| t.spend.judge_cost_usd.unwrap_or(0.0)));
        }
        mean
    }
}

/// The mean spend of one trial of a pilot (see [`PilotModel::mean_trial_spend`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct MeanTrialSpend {
    /// Agent input + output tokens.
    pub tokens: f64,
    /// Agent USD; `None` when some pilot trial's cost is unknown.
    pub cost_usd: Option<f64>,
    /// Judge input + output tokens.
    pub judge_tokens: f64,
    /// Judge USD; `None` when some judged pilot trial's judge cost is unknown.
    pub judge_cost_usd: Option<f64>,
    /// Share of trials a judge was asked about.
    pub judged_share: f64,
}

/// Method-of-moments fit of a beta-binomial prior to `(passes, attempts)` per case, with
/// unequal attempts: pooled rate `p̄ = (Σx + ½)/(Σn + 1)`, between-case variance of the true rate
/// `v = S² − p̄(1 − p̄)·mean(1/nᵢ)` (S² the variance of the observed rates), clamped to
/// `[10⁻⁴, 0.99]·p̄(1 − p̄)`; `a + b = p̄(1 − p̄)/v − 1`. Returns `((a, b), p̄)`.
pub(crate) fn fit_beta_binomial(cases: &[(u32, u32)]) -> ((f64, f64), f64) {
    let passes: f64 = cases.iter().map(|c| f64::from(c.0)).sum();
    let attempts: f64 = cases.iter().map(|c| f64::from(c.1)).sum();
    let rate = (passes + 0.5) / (attempts + 1.0);
    let bernoulli = rate * (1.0 - rate);
    let rates: Vec<f64> = cases
        .iter()
        .map(|c| f64::from(c.0) / f64::from(c.1.max(1)))
        .collect();
    let n = rates.len() as f64;
    let between = if rates.len() >= 2 {
        let mean = rates.iter().sum::<f64>() / n;
        let s2 = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let noise = bernoulli
            * cases
                .iter()
                .map(|c| 1.0 / f64::from(c.1.max(1)))
                .sum::<f64>()
            / n;
        s2 - noise
    } else {
        0.0
    };
    let between = between.clamp(1e-4 * bernoulli, 0.99 * bernoulli);
    let total = bernoulli / between - 1.0;
    ((rate * total, (1.0 - rate) * total), rate)
}

/// What to project.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ProjectionSettings {
    /// Cases of the planned run.
    pub cases: usize,
    /// Attempts per case per arm.
    pub k: u32,
    /// The planned arms (the sequential procedure needs exactly the paired two).
    pub arms: Vec<Arm>,
    /// Cases per round (`None`: [`default_round_cases`], as `run`).
    pub round_cases: Option<usize>,
    /// The sequential rule (`--sequential-alpha`, `--equivalence`).
    pub sequential: SequentialSettings,
    /// Budgets applied to both procedures.
    pub budgets: Budgets,
    /// Whether the planned profile has a `[price]` table (as `run` passes it to the budget).
    pub price_known: bool,
    /// The least spend per trial a round is projected at (the planned profile's reply cap, as
    /// `run` projects it).
    pub trial_floor: TrialFloor,
    /// Concurrent trials (`--jobs`).
    pub jobs: usize,
    /// Simulated runs per assumed lift.
    pub simulations: usize,
    /// Seed of the simulation streams.
    pub seed: u64,
}

/// The expected spend of one procedure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ProcedureProjection {
    /// Mean trials run.
    pub mean_trials: f64,
    /// Standard error of the mean trials.
    pub trials_standard_error: f64,
    /// Mean rounds run (1 for fixed-K without a budget).
    pub mean_rounds: f64,
    /// Mean tokens (agent + judges).
    pub mean_tokens: f64,
    /// Mean USD of the trials whose cost is known (agent + judges).
    pub mean_cost_usd: f64,
    /// Mean USD of the judges alone.
    pub mean_judge_cost_usd: f64,
    /// Whether every simulated trial had a known cost (else `mean_cost_usd` is a lower bound).
    pub cost_complete: bool,
    /// Mean wall time, seconds.
    pub mean_wall_s: f64,
    /// Share of runs per stop reason (snake_case names, as in `summary.json`).
    pub stop_reasons: BTreeMap<String, f64>,
}

/// Fixed-K and sequential at one assumed lift.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct LiftProjection {
    /// The assumed true lift (added to every case's baseline rate).
    pub assumed_lift: f64,
    /// The mean lift of the simulated cases (below the assumed one where rates hit 0 or 1).
    pub realised_lift: f64,
    /// The run without `--sequential`.
    pub fixed_k: ProcedureProjection,
    /// The run with `--sequential`.
    pub sequential: ProcedureProjection,
    /// Sequential mean trials ÷ fixed-K mean trials.
    pub trials_share: f64,
    /// Standard error of `trials_share` (paired over the simulations).
    pub trials_share_standard_error: f64,
}

/// The projection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Projection {
    pub settings: ProjectionSettings,
    /// Cases per round used.
    pub round_cases: usize,
    /// The pilot it was drawn from.
    pub pilot_run: String,
    /// Pilot cases with a scored baseline.
    pub pilot_cases: usize,
    /// Pooled pilot baseline pass rate and the fitted Beta prior.
    pub baseline_rate: f64,
    pub prior: (f64, f64),
    /// One entry per assumed lift.
    pub lifts: Vec<LiftProjection>,
}

/// One simulated run of one procedure.
#[derive(Debug, Clone, Copy)]
struct SimulatedRun {
    trials: usize,
    rounds: usize,
    spend: Spend,
    judge_cost_usd: f64,
    reason: StopReason,
}

/// One simulated attempt: whether it was scored, whether it passed, which pilot trial's
/// spend and duration it has.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    scored: bool,
    passed: bool,
    sample: usize,
}

/// Project fixed-K and sequential for each assumed lift.
pub(crate) fn project(
    pilot: &PilotModel,
    settings: &ProjectionSettings,
    assumed_lifts: &[f64],
) -> Result<Projection, ProjectionError> {
    if settings.cases == 0 || settings.k == 0 || settings.jobs == 0 || settings.simulations == 0 {
        return Err(ProjectionError::Empty);
    }
    if let Some(&bad) = assumed_lifts.iter().find(|l| !(-1.0..=1.0).contains(*l)) {
        return Err(ProjectionError::LiftOutOfRange(bad));
    }
    // Fail early on bad settings (the workers unwrap nothing).
    PairedLiftSequence::new(settings.sequential.alpha)?;
    let round_cases = settings
        .round_cases
        .unwrap_or_else(|| default_round_cases(settings.cases))
        .max(1);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(settings.simulations * assumed_lifts.len())
        .max(1);
    // Every (lift, simulation) of the projection is one job; the workers take blocks of jobs
    // from a shared counter (the slow ones do not hold up the rest), and each job's result goes
    // to its own slot: the same results whatever the number of threads or their timing.
    let jobs = settings.simulations * assumed_lifts.len();
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<(SimulatedRun, SimulatedRun, f64)>> = vec![None; jobs];
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let next = &next;
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let start = next.fetch_add(JOB_BLOCK, Ordering::Relaxed);
                        if start >= jobs {
                            break done;
                        }
                        for job in start..(start + JOB_BLOCK).min(jobs) {
                            let (lift_index, index) =
                                (job / settings.simulations, job % settings.simulations);
                            let seed = stream_seed(settings.seed, lift_index as u64, index);
                            let lift = assumed_lifts[lift_index];
                            done.push((
                                job,
                                simulate_pair(pilot, settings, round_cases, lift, seed),
                            ));
                        }
                    }
                })
            })
            .collect();
        for handle in handles {
            for (job, result) in handle.join().expect("a projection worker panicked") {
                results[job] = Some(result);
            }
        }
    });
    let mut lifts = Vec::new();
    for (lift_index, &lift) in assumed_lifts.iter().enumerate() {
        let runs: Vec<(SimulatedRun, SimulatedRun, f64)> = results
            [lift_index * settings.simulations..(lift_index + 1) * settings.simulations]
            .iter()
            .map(|r| r.expect("every job ran"))
            .collect();
        let fixed: Vec<SimulatedRun> = runs.iter().map(|r| r.0).collect();
        let sequential: Vec<SimulatedRun> = runs.iter().map(|r| r.1).collect();
        let realised = runs.iter().map(|r| r.2).sum::<f64>() / runs.len() as f64;
        let fixed_k = summarize(&fixed);
        let sequential = summarize(&sequential);
        let share = sequential.mean_trials / fixed_k.mean_trials.max(f64::MIN_POSITIVE);
        // Delta method on the paired ratio of means.
        let n = runs.len() as f64;
        let residual_variance = if runs.len() > 1 {
            runs.iter()
                .map(|(f, s, _)| (s.trials as f64 - share * f.trials as f64).powi(2))
                .sum::<f64>()
                / (n - 1.0)
        } else {
            0.0
        };
        let share_se = (residual_variance / n).sqrt() / fixed_k.mean_trials.max(f64::MIN_POSITIVE);
        lifts.push(LiftProjection {
            assumed_lift: lift,
            realised_lift: realised,
            fixed_k,
            sequential,
            trials_share: share,
            trials_share_standard_error: share_se,
        });
    }
    Ok(Projection {
        settings: settings.clone(),
        round_cases,
        pilot_run: pilot.run_id.clone(),
        pilot_cases: pilot.baseline_cases.len(),
        baseline_rate: pilot.baseline_rate,
        prior: pilot.prior,
        lifts,
    })
}

/// The seed of simulation `index` at lift `lift_index` (SplitMix64 finalizer of the mix).
fn stream_seed(seed: u64, lift_index: u64, index: usize) -> u64 {
    let mut z = seed
        ^ lift_index.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (index as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn summarize(runs: &[SimulatedRun]) -> ProcedureProjection {
    let n = runs.len() as f64;
    let mean = |f: &dyn Fn(&SimulatedRun) -> f64| runs.iter().map(f).sum::<f64>() / n;
    let mean_trials = mean(&|r| r.trials as f64);
    let variance = if runs.len() > 1 {
        runs.iter()
            .map(|r| (r.trials as f64 - mean_trials).powi(2))
            .sum::<f64>()
            / (n - 1.0)
    } else {
        0.0
    };
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for run in runs {
        *counts.entry(run.reason.as_str().to_string()).or_default() += 1;
    }
    let stop_reasons = counts
        .into_iter()
        .map(|(reason, count)| (reason, count as f64 / n))
        .collect();
    ProcedureProjection {
        mean_trials,
        trials_standard_error: (variance / n).sqrt(),
        mean_rounds: mean(&|r| r.rounds as f64),
        mean_tokens: mean(&|r| r.spend.tokens as f64),
        mean_cost_usd: mean(&|r| r.spend.cost_usd),
        mean_judge_cost_usd: mean(&|r| r.judge_cost_usd),
        cost_complete: runs.iter().all(|r| r.spend.unpriced_trials == 0),
        mean_wall_s: mean(&|r| r.spend.wall_s),
        stop_reasons,
    }
}

/// A uniform draw in (0, 1).
fn uniform(rng: &mut ChaCha20Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut ChaCha20Rng) -> f64 {
    let (u, v) = (uniform(rng), uniform(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A Gamma(shape, 1) draw: Marsaglia & Tsang, "A simple method for generating gamma
/// variables", ACM TOMS 26(3), 2000; shapes below 1 by `Gamma(shape + 1) · U^{1/shape}`.
fn gamma(rng: &mut ChaCha20Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = uniform(rng);
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = uniform(rng);
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A Beta(a, b) draw (two gamma draws).
fn beta(rng: &mut ChaCha20Rng, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    let y = gamma(rng, b);
    if x + y > 0.0 { x / (x + y) } else { 0.5 }
}

/// Draw one world (cases and attempts) and run both procedures on it; returns (fixed-K,
/// sequential, the cases' mean lift).
fn simulate_pair(
    pilot: &PilotModel,
    settings: &ProjectionSettings,
    round_cases: usize,
    lift: f64,
    seed: u64,
) -> (SimulatedRun, SimulatedRun, f64) {
    let mut rng = seeded_rng(seed);
    let arms = &settings.arms;
    let k = settings.k as usize;
    let (a, b) = pilot.prior;
    let mut realised = 0.0;
    // attempts[case][arm][attempt]
    let mut world: Vec<Vec<Vec<Attempt>>> = Vec::with_capacity(settings.cases);
    for _ in 0..settings.cases {
        let j = (uniform(&mut rng) * pilot.baseline_cases.len() as f64) as usize;
        let (x, n) = pilot.baseline_cases[j.min(pilot.baseline_cases.len() - 1)];
        let p0 = beta(&mut rng, a + f64::from(x), b + f64::from(n - x));
        let p1 = (p0 + lift).clamp(0.0, 1.0);
        realised += p1 - p0;
        let case = arms
            .iter()
            .map(|&arm| {
                let rate = if arm == Arm::WithoutSkill { p0 } else { p1 };
                let unscored = pilot.unscored.get(&arm).copied().unwrap_or(0.0);
                let samples = pilot.samples(arm).len().max(1);
                (0..k)
                    .map(|_| {
                        let scored = uniform(&mut rng) >= unscored;
                        let passed = scored && uniform(&mut rng) < rate;
                        let sample =
                            ((uniform(&mut rng) * samples as f64) as usize).min(samples - 1);
                        Attempt {
                            scored,
                            passed,
                            sample,
                        }
                    })
                    .collect()
            })
            .collect();
        world.push(case);
    }
    let fixed = run_procedure(pilot, settings, round_cases, &world, false);
    let sequential = run_procedure(pilot, settings, round_cases, &world, true);
    (fixed, sequential, realised / settings.cases as f64)
}

/// Run one procedure on a simulated world, as `run` would (see the module comment).
fn run_procedure(
    pilot: &PilotModel,
    settings: &ProjectionSettings,
    round_cases: usize,
    world: &[Vec<Vec<Attempt>>],
    sequential: bool,
) -> SimulatedRun {
    let arms = &settings.arms;
    let mut spend = Spend::default();
    let mut judge_cost = 0.0;
    let mut executed = 0usize;
    let mut rounds_run = 0usize;
    let mut sequence =
        PairedLiftSequence::new(settings.sequential.alpha).expect("alpha checked by project");
    let rules = settings.sequential;
    let with = arms.iter().position(|&a| a == Arm::WithSkill);
    let without = arms.iter().position(|&a| a == Arm::WithoutSkill);
    // Run a group of cases: add their spend, return the makespan.
    let mut run_cases = |cases: &[Vec<Vec<Attempt>>], spend: &mut Spend| -> f64 {
        let mut durations = Vec::new();
        for case in cases {
            for (arm_index, attempts) in case.iter().enumerate() {
                let samples = pilot.samples(arms[arm_index]);
                for attempt in attempts {
                    let Some(trial) = samples.get(attempt.sample) else {
                        durations.push(0.0);
                        spend.add_trial(&TrialSpend::default());
                        continue;
                    };
                    spend.add_trial(&trial.spend);
                    judge_cost += trial.spend.judge_cost_usd.unwrap_or(0.0);
                    durations.push(trial.wall_s);
                }
            }
        }
        makespan(&durations, settings.jobs)
    };
    let rounded = sequential || settings.budgets.any();
    let mut reason = None;
    if !rounded {
        let wall = run_cases(world, &mut spend);
        spend.wall_s = wall;
        executed = spend.trials;
        rounds_run = 1;
    } else {
        for (index, round) in world.chunks(round_cases).enumerate() {
            if sequential && let Some(found) = decision(&sequence.state(), &rules) {
                reason = Some(found);
                break;
            }
            let trials = round.len() * arms.len() * settings.k as usize;
            let wall_per_trial = (executed > 0).then(|| spend.wall_s / executed as f64);
            if let Some((found, _)) = budget_stop(
                &settings.budgets,
                &spend,
                trials,
                wall_per_trial,
                settings.price_known,
                settings.trial_floor,
            ) {
                reason = Some(found);
                break;
            }
            let wall = run_cases(round, &mut spend);
            spend.wall_s += wall;
            executed += trials;
            rounds_run = index + 1;
            if sequential && let (Some(w), Some(wo)) = (with, without) {
                for case in round {
                    let tally = |attempts: &[Attempt]| {
                        (
                            attempts.iter().filter(|a| a.passed).count(),
                            attempts.iter().filter(|a| a.scored).count(),
                        )
                    };
                    let (with_pass, with_scored) = tally(&case[w]);
                    let (without_pass, without_scored) = tally(&case[wo]);
                    if with_scored > 0 && without_scored > 0 {
                        let difference = with_pass as f64 / with_scored as f64
                            - without_pass as f64 / without_scored as f64;
                        sequence
                            .push(difference.clamp(-1.0, 1.0))
                            .expect("a difference of two rates is in [-1, 1]");
                    }
                }
            }
        }
        if reason.is_none() && sequential {
            reason = decision(&sequence.state(), &rules);
        }
    }
    SimulatedRun {
        trials: executed,
        rounds: rounds_run,
        spend,
        judge_cost_usd: judge_cost,
        reason: reason.unwrap_or(StopReason::Completed),
    }
}

/// The makespan of `durations` run in order on `jobs` slots, each trial on the slot free first.
fn makespan(durations: &[f64], jobs: usize) -> f64 {
    let mut slots = vec![0.0_f64; jobs.clamp(1, durations.len().max(1))];
    for &duration in durations {
        let (index, _) = slots
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .expect("at least one slot");
        slots[index] += duration;
    }
    slots.into_iter().fold(0.0, f64::max)
}

/// The projection as Markdown (appended to `plan`'s).
pub(crate) fn projection_markdown(projection: &Projection) -> String {
    let settings = &projection.settings;
    let fixed_trials = settings.cases * settings.arms.len() * settings.k as usize;
    let rules = match settings.sequential.equivalence {
        Some(margin) => format!(
            "{:.0}% confidence sequence, equivalence ±{:.1} pp",
            (1.0 - settings.sequential.alpha) * 100.0,
            margin * 100.0
        ),
        None => format!(
            "{:.0}% confidence sequence, no equivalence margin",
            (1.0 - settings.sequential.alpha) * 100.0
        ),
    };
    let mut budgets = Vec::new();
    if let Some(usd) = settings.budgets.max_cost_usd {
        budgets.push(format!("--max-cost-usd {usd}"));
    }
    if let Some(tokens) = settings.budgets.max_tokens {
        budgets.push(format!("--max-tokens {tokens}"));
    }
    if let Some(wall) = settings.budgets.max_wall_s {
        budgets.push(format!("--max-wall {wall}s"));
    }
    let mut out = format!(
        "\n## Fixed-K or `--sequential`: expected spend\n\n{} simulated runs per assumed lift (seed {}) of {} cases × K = {} in rounds of {} ({rules}{}; {} jobs), on baseline rates drawn from pilot `{}` ({} cases, pooled baseline {:.1} %, Beta({:.2}, {:.2}) between cases). Fixed-K runs {fixed_trials} trials{}.\n\n",
        settings.simulations,
        settings.seed,
        settings.cases,
        settings.k,
        crate::analysis::text::count(projection.round_cases, "case"),
        if budgets.is_empty() {
            String::new()
        } else {
            format!("; budgets {}", budgets.join(", "))
        },
        settings.jobs,
        projection.pilot_run,
        projection.pilot_cases,
        projection.baseline_rate * 100.0,
        projection.prior.0,
        projection.prior.1,
        if settings.budgets.any() {
            " unless a budget stops it"
        } else {
            ""
        }
    );
    out.push_str("| assumed lift | procedure | trials | share of fixed-K | tokens | cost (judge) | wall | stop reasons |\n|---|---|---|---|---|---|---|---|\n");
    for lift in &projection.lifts {
        for (name, procedure, share) in [
            ("fixed-K", &lift.fixed_k, None),
            (
                "sequential",
                &lift.sequential,
                Some((lift.trials_share, lift.trials_share_standard_error)),
            ),
        ] {
            let cost = if procedure.cost_complete {
                format!(
                    "${:.2} (${:.2})",
                    procedure.mean_cost_usd, procedure.mean_judge_cost_usd
                )
            } else if procedure.mean_cost_usd > 0.0 {
                format!(
                    "≥ ${:.2} (${:.2}; some costs unknown)",
                    procedure.mean_cost_usd, procedure.mean_judge_cost_usd
                )
            } else {
                "unknown (no [price])".to_string()
            };
            let reasons = procedure
                .stop_reasons
                .iter()
                .map(|(reason, share)| format!("{reason} {:.1}%", share * 100.0))
                .collect::<Vec<_>>()
                .join(", ");
            out.push_str(&format!(
                "| {:+.2}{} | {name} | {:.1} ± {:.1} | {} | {:.0} | {cost} | {} | {reasons} |\n",
                lift.assumed_lift,
                if (lift.realised_lift - lift.assumed_lift).abs() > 0.005 {
                    format!(" (realised {:+.3})", lift.realised_lift)
                } else {
                    String::new()
                },
                procedure.mean_trials,
                procedure.trials_standard_error,
                match share {
                    Some((share, se)) => format!("**{:.1} %** ± {:.1}", share * 100.0, se * 100.0),
                    None => "100 %".to_string(),
                },
                procedure.mean_tokens,
                format_duration(procedure.mean_wall_s),
            ));
        }
    }
    out.push_str("\nTrials, tokens, cost and wall are means over the simulations (± one standard error); wall is the trials' pilot durations scheduled on the jobs, without grading or start-up time. The sequence's `improved`/`regressed` share at lift 0 is its false-decision rate (≤ α by construction); runs it does not decide end `completed` with the fixed-n verdict.\n");
    out
}

fn format_duration(seconds: f64) -> String {
    if seconds >= 3600.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else if seconds >= 60.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{seconds:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(arm: Arm, case: usize, attempt: u32, outcome: Outcome) -> TrialRecord {
        let mut record: TrialRecord = serde_json::from_value(serde_json::json!({
            "run_id": "pilot", "trial_id": "x", "case_id": format!("c{case}"), "arm": arm.as_str(),
            "attempt": attempt, "runner": "mock", "model": "m", "outcome": outcome.as_str(),
            "started_at": "2026-01-01T00:00:00Z", "wall_s": 2.0,
            "usage": {"input_tokens": 1000, "output_tokens": 100}, "observed_model": null,
            "reason": null, "checks": [], "scores": {}, "model_latency_s": 0.5, "requests": 1,
            "retries": [], "tool_calls": 0, "activated_skills": [], "transcript": null,
            "workspace": null
        }))
        .unwrap();
        record.trial_id = record.key().trial_id();
        record
    }

    fn pilot(cases: usize, baseline_passes: impl Fn(usize) -> u32) -> PilotModel {
        let mut records = Vec::new();
        for case in 0..cases {
            for attempt in 1..=3 {
                let pass = attempt <= baseline_passes(case);
                records.push(trial(
                    Arm::WithoutSkill,
                    case,
                    attempt,
                    if pass { Outcome::Pass } else { Outcome::Fail },
                ));
                records.push(trial(Arm::WithSkill, case, attempt, Outcome::Pass));
            }
        }
        let price = PriceTable {
            input_usd_per_million_tokens: 3.0,
            output_usd_per_million_tokens: 15.0,
            cache_read_usd_per_million_tokens: None,
            cache_write_usd_per_million_tokens: None,
        };
        PilotModel::from_records("pilot", records, Some(&price)).unwrap()
    }

    fn settings(simulations: usize) -> ProjectionSettings {
        ProjectionSettings {
            cases: 40,
            k: 3,
            arms: Arm::PAIRED.to_vec(),
            round_cases: None,
            sequential: SequentialSettings {
                alpha: 0.05,
                equivalence: None,
            },
            budgets: Budgets::default(),
            price_known: true,
            trial_floor: TrialFloor::default(),
            jobs: 4,
            simulations,
            seed: 7,
        }
    }

    #[test]
    fn the_beta_fit_recovers_the_pooled_rate_and_spread() {
        // Every case at 1 of 3: no spread beyond the binomial noise → a tight prior.
        let ((a, b), rate) = fit_beta_binomial(&[(1, 3); 50]);
        assert!((rate - 50.5 / 151.0).abs() < 1e-12);
        assert!(a + b > 100.0, "{a} {b}");
        // Half the cases always pass, half never: a U-shaped prior (a + b small).
        let mut split = vec![(0, 3); 25];
        split.extend(vec![(3, 3); 25]);
        let ((a, b), _) = fit_beta_binomial(&split);
        assert!(a + b < 1.0, "{a} {b}");
    }

    #[test]
    fn the_gamma_and_beta_draws_have_their_means() {
        let mut rng = seeded_rng(1);
        let n = 20_000;
        for shape in [0.3, 1.0, 4.5] {
            let mean = (0..n).map(|_| gamma(&mut rng, shape)).sum::<f64>() / n as f64;
            assert!(
                (mean - shape).abs() < 0.05 * shape.max(1.0),
                "{shape}: {mean}"
            );
        }
        let mean = (0..n).map(|_| beta(&mut rng, 2.0, 6.0)).sum::<f64>() / n as f64;
        assert!((mean - 0.25).abs() < 0.01, "{mean}");
    }

    #[test]
    fn the_makespan_schedules_on_the_free_slot() {
        assert_eq!(makespan(&[3.0, 1.0, 1.0, 1.0], 2), 3.0);
        assert_eq!(makespan(&[1.0; 8], 4), 2.0);
        assert_eq!(makespan(&[2.0; 3], 16), 2.0);
        assert_eq!(makespan(&[], 2), 0.0);
    }

    #[test]
    fn sequential_spends_less_at_a_clear_lift_and_stays_honest_at_none() {
        let model = pilot(40, |case| (case % 3 == 0) as u32);
        let projection = project(&model, &settings(300), &[0.0, 0.5]).unwrap();
        let none = &projection.lifts[0];
        let clear = &projection.lifts[1];
        // Fixed-K always runs 240 trials.
        assert_eq!(none.fixed_k.mean_trials, 240.0);
        assert_eq!(none.fixed_k.stop_reasons["completed"], 1.0);
        // No lift: the sequence seldom decides wrongly.
        let false_decisions = none.sequential.stop_reasons.get("improved").unwrap_or(&0.0)
            + none
                .sequential
                .stop_reasons
                .get("regressed")
                .unwrap_or(&0.0);
        assert!(false_decisions <= 0.05, "{false_decisions}");
        // A clear lift: decided early, well under half of fixed-K.
        assert!(clear.sequential.stop_reasons["improved"] > 0.95);
        assert!(clear.trials_share < 0.5, "{}", clear.trials_share);
        assert!(clear.sequential.mean_cost_usd < clear.fixed_k.mean_cost_usd);
        // 240 trials × (1000 × 3 + 100 × 15) / 1e6 USD.
        assert!((none.fixed_k.mean_cost_usd - 240.0 * 0.0045).abs() < 1e-9);
        assert_eq!(none.fixed_k.mean_tokens, 240.0 * 1100.0);
        // 240 trials of 2 s on 4 jobs.
        assert!((none.fixed_k.mean_wall_s - 120.0).abs() < 1e-9);
        let text = projection_markdown(&projection);
        assert!(text.contains("| +0.50 | sequential |"), "{text}");
    }

    #[test]
    fn the_projection_is_reproducible_and_independent_of_threads() {
        let model = pilot(20, |case| (case % 2) as u32);
        let a = project(&model, &settings(40), &[0.3]).unwrap();
        let b = project(&model, &settings(40), &[0.3]).unwrap();
        assert_eq!(a, b);
        // One simulation's stream depends only on (seed, lift, index).
        let one = simulate_pair(&model, &settings(1), 2, 0.3, stream_seed(7, 0, 5));
        let again = simulate_pair(&model, &settings(1), 2, 0.3, stream_seed(7, 0, 5));
        assert_eq!(one.1.trials, again.1.trials);
    }

    #[test]
    fn a_budget_stops_both_procedures_within_a_round() {
        let model = pilot(40, |_| 1);
        let mut budgeted = settings(50);
        // 0.0045 USD per trial; 12 trials per round: 0.5 USD allows 111 trials → 9 rounds.
        budgeted.budgets.max_cost_usd = Some(0.5);
        let projection = project(&model, &budgeted, &[0.0]).unwrap();
        let fixed = &projection.lifts[0].fixed_k;
        assert_eq!(fixed.stop_reasons["budget_cost"], 1.0);
        assert_eq!(fixed.mean_trials, 108.0);
        assert!(fixed.mean_cost_usd <= 0.5);
    }

    #[test]
    fn bad_settings_are_errors() {
        let model = pilot(5, |_| 1);
        assert_eq!(
            project(&model, &settings(10), &[1.5]).unwrap_err(),
            ProjectionError::LiftOutOfRange(1.5)
        );
        let mut empty = settings(10);
        empty.cases = 0;
        assert_eq!(
            project(&model, &empty, &[0.1]).unwrap_err(),
            ProjectionError::Empty
        );
        assert_eq!(
            PilotModel::from_records("p", Vec::new(), None).unwrap_err(),
            ProjectionError::NoTrials
        );
    }
}
