//! Planning before spending (`skill-lift plan`): trial count, token and cost estimates, and the
//! power of a paired design — the minimum detectable effect (MDE) for N cases × K attempts and
//! the N or K needed to detect a target lift.
//!
//! Variance model (Miller 2024, statistics.md §2 and §9): a case's paired difference has
//! `Var(dᵢ) = ω² + σ_A²/K + σ_B²/K`, with ω² the between-case variance of the true lift and σ²
//! the within-case (attempt-to-attempt) variance of each arm. From a pilot run the components are
//! estimated from its per-case pass counts; without one, stated defaults are used.

use serde::Serialize;

use crate::analysis::stats::{self, PairedVarianceComponents};
use crate::analysis::{MDE_ALPHA, MDE_POWER, Summary};
use crate::record::Arm;

/// Default within-case variance per arm without a pilot: a pass probability of 0.5 (the largest
/// possible binary variance, 0.25).
pub(crate) const DEFAULT_WITHIN_VARIANCE: f64 = 0.25;
/// Default between-case variance of the true lift without a pilot (a lift that varies across
/// cases with a standard deviation of about 0.22).
pub(crate) const DEFAULT_OMEGA_SQUARED: f64 = 0.05;
/// Largest K searched when asking how many attempts reach a target lift.
pub(crate) const MAX_K_SEARCHED: u32 = 100;

/// Where the variance components came from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct VarianceSource {
    /// `pilot` or `default`.
    pub kind: String,
    /// Pilot run id, when there is one.
    pub pilot_run: Option<String>,
    /// Paired cases in the pilot.
    pub pilot_cases: Option<usize>,
    /// Whether the ω² estimate was negative and clamped at 0.
    pub clamped: bool,
}

/// Estimated tokens and cost.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct UsageEstimate {
    /// Input tokens per trial (mean).
    pub input_tokens_per_trial: f64,
    /// Output tokens per trial (mean).
    pub output_tokens_per_trial: f64,
    /// Total input tokens of the planned run.
    pub input_tokens: f64,
    /// Total output tokens of the planned run.
    pub output_tokens: f64,
    /// Agent cost of the planned run in USD: tokens at the profile's `[price]`, else the
    /// pilot's reported cost per trial; `None` when neither is known.
    pub cost_usd: Option<f64>,
    /// `pilot` or `flag`.
    pub source: String,
    /// Judge input + output tokens per trial (the pilot's judge spend over its trials; 0
    /// without judge metrics); `None` without a pilot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_tokens_per_trial: Option<f64>,
    /// Judge cost of the planned run in USD (the pilot's judge cost per trial × trials);
    /// `None` without a pilot or when the pilot's judge cost is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_cost_usd: Option<f64>,
}

impl UsageEstimate {
    /// Agent plus judge cost, when the agent's is known (a judge cost that is unknown while
    /// judges were asked leaves the total unknown).
    pub(crate) fn total_cost_usd(&self) -> Option<f64> {
        let judged = self.judge_tokens_per_trial.is_some_and(|t| t > 0.0);
        match (self.cost_usd, self.judge_cost_usd) {
            (Some(agent), Some(judge)) => Some(agent + judge),
            (Some(_), None) if judged => None,
            (agent, _) => agent,
        }
    }
}

/// A plan.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Plan {
    pub cases: usize,
    /// The arms each case runs in (the paired two unless [`Plan::with_shape`] says otherwise).
    pub arms: Vec<Arm>,
    /// Runner × model cells of a matrix run (1 for a single runner and model).
    pub cells: usize,
    pub k: u32,
    /// Cases × arms × K × cells.
    pub trials: usize,
    pub usage: Option<UsageEstimate>,
    pub components: PairedVarianceComponents,
    pub variance_source: VarianceSource,
    /// MDE of the planned design (fraction; α = 0.05, power 0.8, normal approximation).
    pub mde: Option<f64>,
    /// The lift to detect, when asked.
    pub target_lift: Option<f64>,
    /// Cases needed at the planned K to detect the target lift.
    pub cases_needed: Option<u64>,
    /// Attempts per case needed at the planned N, when some K ≤ 100 suffices.
    pub k_needed: Option<u32>,
    /// The smallest MDE reachable with the planned N by raising K alone (the ω² floor).
    pub mde_floor_at_cases: Option<f64>,
    /// Fixed-K against `--sequential` for assumed lifts, simulated from the pilot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<crate::pipeline::projection::Projection>,
}

/// Variance components for K attempts per arm from a pilot run's summary. `None` with fewer
/// than two paired cases.
pub(crate) fn components_from_pilot(
    pilot: &Summary,
    k: u32,
) -> Option<(PairedVarianceComponents, bool)> {
    let mut differences = Vec::new();
    let mut within_a = Vec::new();
    let mut within_b = Vec::new();
    let mut trials_a = 0.0;
    let mut trials_b = 0.0;
    for case in &pilot.cases {
        let (Some(a), Some(b)) = (case.with_skill.pass_rate, case.without_skill.pass_rate) else {
            continue;
        };
        let (scored_a, scored_b) = (
            case.with_skill.trials.scored() as u64,
            case.without_skill.trials.scored() as u64,
        );
        differences.push(a - b);
        // Binary within-case variance; with one attempt it is unknown, use p(1 − p) of the case.
        within_a.push(
            stats::binary_within_case_variance(case.with_skill.trials.pass as u64, scored_a)
                .unwrap_or(a * (1.0 - a)),
        );
        within_b.push(
            stats::binary_within_case_variance(case.without_skill.trials.pass as u64, scored_b)
                .unwrap_or(b * (1.0 - b)),
        );
        trials_a += scored_a as f64;
        trials_b += scored_b as f64;
    }
    let n = differences.len();
    if n < 2 {
        return None;
    }
    let (trials_a, trials_b) = (trials_a / n as f64, trials_b / n as f64);
    let decomposition = stats::difference_variance_decomposition(
        &differences,
        &within_a,
        trials_a,
        &within_b,
        trials_b,
    )
    .ok()?;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Some((
        PairedVarianceComponents {
            omega_squared: decomposition.omega_squared,
            within_variance_a: mean(&within_a),
            trials_a: k as f64,
            within_variance_b: mean(&within_b),
            trials_b: k as f64,
        },
        decomposition.clamped,
    ))
}

/// The default components for K attempts per arm.
pub(crate) fn default_components(k: u32) -> PairedVarianceComponents {
    PairedVarianceComponents {
        omega_squared: DEFAULT_OMEGA_SQUARED,
        within_variance_a: DEFAULT_WITHIN_VARIANCE,
        trials_a: k as f64,
        within_variance_b: DEFAULT_WITHIN_VARIANCE,
        trials_b: k as f64,
    }
}

/// Build a plan for `cases` × 2 arms × `k` (see [`Plan::with_shape`] for more arms or cells).
pub(crate) fn plan(
    cases: usize,
    k: u32,
    components: PairedVarianceComponents,
    variance_source: VarianceSource,
    usage: Option<UsageEstimate>,
    target_lift: Option<f64>,
) -> Plan {
    let with_k = |k: u32| PairedVarianceComponents {
        trials_a: k as f64,
        trials_b: k as f64,
        ..components
    };
    let mde_at = |n: usize, k: u32| {
        stats::minimum_detectable_effect(&with_k(k), n as u64, MDE_ALPHA, MDE_POWER)
    };
    let mde = mde_at(cases, k);
    let cases_needed = target_lift
        .and_then(|lift| stats::cases_needed(&with_k(k), lift, MDE_ALPHA, MDE_POWER))
        .map(|size| size.cases);
    let k_needed = target_lift.and_then(|lift| {
        (1..=MAX_K_SEARCHED).find(|&k| mde_at(cases, k).is_some_and(|m| m <= lift.abs()))
    });
    let floor_components = PairedVarianceComponents {
        within_variance_a: 0.0,
        within_variance_b: 0.0,
        ..components
    };
    let mde_floor_at_cases =
        stats::minimum_detectable_effect(&floor_components, cases as u64, MDE_ALPHA, MDE_POWER);
    Plan {
        cases,
        arms: Arm::PAIRED.to_vec(),
        cells: 1,
        k,
        trials: cases * Arm::PAIRED.len() * k as usize,
        usage,
        components: with_k(k),
        variance_source,
        mde,
        target_lift,
        cases_needed,
        k_needed,
        mde_floor_at_cases,
        projection: None,
    }
}

impl Plan {
    /// The same plan for a run with `arms` in each of `cells` runner × model cells: the trial
    /// count follows; the power is that of each comparison in each cell. The usage estimate is
    /// the caller's (built for the same trial count).
    pub(crate) fn with_shape(mut self, arms: Vec<Arm>, cells: usize) -> Plan {
        let cells = cells.max(1);
        self.trials = self.cases * arms.len() * self.k as usize * cells;
        self.arms = arms;
        self.cells = cells;
        self
    }
}

/// The plan as Markdown.
pub(crate) fn plan_markdown(plan: &Plan) -> String {
    let pp = |v: f64| format!("{:.1} pp", v * 100.0);
    let arms = plan
        .arms
        .iter()
        .map(|arm| arm.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let cells = if plan.cells > 1 {
        format!(" × {} runner/model cells", plan.cells)
    } else {
        String::new()
    };
    let mut out = format!(
        "# skill-lift plan\n\n{} cases × {} arms ({arms}) × K = {}{cells} = **{} trials**.\n",
        plan.cases,
        plan.arms.len(),
        plan.k,
        plan.trials
    );
    match &plan.usage {
        Some(usage) => {
            out.push_str(&format!(
                "\nTokens ({}): about {:.0} input + {:.0} output per trial → {:.0} input + {:.0} output in total",
                usage.source, usage.input_tokens_per_trial, usage.output_tokens_per_trial, usage.input_tokens, usage.output_tokens
            ));
            let judged = usage.judge_tokens_per_trial.is_some_and(|t| t > 0.0);
            match (usage.cost_usd, usage.total_cost_usd()) {
                (Some(agent), Some(total)) if judged => out.push_str(&format!(
                    ", about **${total:.2}** (agent ${agent:.2} + judge ${:.2}).\n",
                    total - agent
                )),
                (Some(cost), _) if !judged => out.push_str(&format!(", about **${cost:.2}**.\n")),
                (Some(agent), _) => out.push_str(&format!(
                    ", about ${agent:.2} for the agent; the judge's cost is unknown (no `[price]` in the judge profile).\n"
                )),
                (None, _) => out.push_str(
                    "; no `[price]` table in the runner profile and no reported cost in the pilot, so no cost estimate.\n",
                ),
            }
            if let Some(judge) = usage.judge_tokens_per_trial.filter(|t| *t > 0.0) {
                out.push_str(&format!(
                    "Judge (from the pilot): about {judge:.0} tokens per trial{}.\n",
                    usage
                        .judge_cost_usd
                        .map(|c| format!(", ${c:.2} in total"))
                        .unwrap_or_default()
                ));
            }
        }
        None => out
            .push_str("\nTokens: unknown (give --pilot RUN_DIR or --tokens-per-trial IN[,OUT]).\n"),
    }
    let source = &plan.variance_source;
    let components = &plan.components;
    out.push_str(&format!(
        "\nVariance ({}): ω² = {:.4} between cases, σ² = {:.4} (with) / {:.4} (without) within a case{}.\n",
        match &source.pilot_run {
            Some(run) => format!("from pilot run `{run}`, {} paired cases", source.pilot_cases.unwrap_or(0)),
            None => format!(
                "stated defaults: within-case {DEFAULT_WITHIN_VARIANCE} per arm, ω² = {DEFAULT_OMEGA_SQUARED}; a pilot run gives better numbers"
            ),
        },
        components.omega_squared,
        components.within_variance_a,
        components.within_variance_b,
        if source.clamped { " (ω² estimate was negative and is clamped at 0)" } else { "" }
    ));
    match plan.mde {
        Some(mde) => out.push_str(&format!(
            "\nPlanning MDE (normal quantiles on the variance components; α = 0.05, power 0.8): **{}** with {} cases × K = {}.",
            pp(mde),
            plan.cases,
            plan.k
        )),
        None => out.push_str("\nPlanning MDE: not computable (no cases)."),
    }
    if let Some(floor) = plan.mde_floor_at_cases {
        out.push_str(&format!(
            " Raising K alone cannot go below {} with {} cases.",
            pp(floor),
            plan.cases
        ));
    }
    out.push('\n');
    if let Some(target) = plan.target_lift {
        out.push_str(&format!("\nTo detect a lift of {}:", pp(target)));
        match plan.cases_needed {
            Some(n) => out.push_str(&format!(" about **{n} cases** at K = {};", plan.k)),
            None => out.push_str(" the number of cases is not computable;"),
        }
        match plan.k_needed {
            Some(k) => out.push_str(&format!(
                " or K = **{k}** with the current {} cases.\n",
                plan.cases
            )),
            None => out.push_str(&format!(
                " no K up to {MAX_K_SEARCHED} reaches it with {} cases — add cases.\n",
                plan.cases
            )),
        }
    }
    if let Some(projection) = &plan.projection {
        out.push_str(&crate::pipeline::projection::projection_markdown(
            projection,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> VarianceSource {
        VarianceSource {
            kind: "default".into(),
            pilot_run: None,
            pilot_cases: None,
            clamped: false,
        }
    }

    #[test]
    fn mde_shrinks_with_cases_and_attempts_and_matches_the_formula() {
        let plan_small = plan(20, 1, default_components(1), source(), None, None);
        let plan_more_k = plan(20, 5, default_components(5), source(), None, None);
        let plan_more_n = plan(80, 1, default_components(1), source(), None, None);
        assert_eq!(plan_small.trials, 40);
        assert!(plan_more_k.mde.unwrap() < plan_small.mde.unwrap());
        assert!(plan_more_n.mde.unwrap() < plan_small.mde.unwrap());
        // (1.959964 + 0.841621) · √((0.05 + 0.25 + 0.25) / 20)
        let expected = 2.801585 * (0.55f64 / 20.0).sqrt();
        assert!((plan_small.mde.unwrap() - expected).abs() < 1e-5);
        // Halving the MDE needs four times the cases.
        assert!((plan_more_n.mde.unwrap() * 2.0 - plan_small.mde.unwrap()).abs() < 1e-9);
    }

    #[test]
    fn cases_and_attempts_needed_for_a_target() {
        let p = plan(30, 3, default_components(3), source(), None, Some(0.10));
        let n = p.cases_needed.unwrap();
        let at_n = plan(n as usize, 3, default_components(3), source(), None, None)
            .mde
            .unwrap();
        assert!(at_n <= 0.10 + 1e-9, "{at_n}");
        let at_n_minus_one = plan(
            n as usize - 1,
            3,
            default_components(3),
            source(),
            None,
            None,
        )
        .mde
        .unwrap();
        assert!(at_n_minus_one > 0.10);
        // With 30 cases the ω² floor is 2.8016·√(0.05/30) = 0.114 > 0.10: no K suffices.
        assert_eq!(p.k_needed, None);
        let reachable = plan(200, 1, default_components(1), source(), None, Some(0.10));
        let k = reachable.k_needed.unwrap();
        assert!(
            plan(200, k, default_components(k), source(), None, None)
                .mde
                .unwrap()
                <= 0.10
        );
    }

    #[test]
    fn markdown_states_the_source_of_the_variances() {
        let text = plan_markdown(&plan(
            16,
            3,
            default_components(3),
            source(),
            None,
            Some(0.2),
        ));
        assert!(text.contains("stated defaults"));
        assert!(text.contains("96 trials"));
        assert!(text.contains("To detect a lift of 20.0 pp"));
    }

    #[test]
    fn the_shape_counts_every_arm_and_cell() {
        let shaped = plan(10, 2, default_components(2), source(), None, None).with_shape(
            vec![Arm::WithSkill, Arm::WithoutSkill, Arm::PreviousVersion],
            4,
        );
        assert_eq!(shaped.trials, 10 * 3 * 2 * 4);
        assert!(
            plan_markdown(&shaped).contains(
                "10 cases × 3 arms (with_skill, without_skill, previous_version) × K = 2 × 4 runner/model cells = **240 trials**"
            ),
            "{}",
            plan_markdown(&shaped)
        );
    }
}
