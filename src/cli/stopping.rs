//! The flags of `run` that spend less per decision (`--sequential`, `--equivalence`,
//! `--round-cases`, `--max-cost-usd`, `--max-tokens`, `--max-wall`) and how they become the
//! manifest's stopping plan (`crate::sequential`).

use anyhow::anyhow;
use clap::Args;

use super::CommandError;
use crate::record::Manifest;
use crate::sequential::{Budgets, SequentialSettings, StoppingPlan};

/// Round scheduling, anytime-valid stopping and budgets.
#[derive(Debug, Args, Clone, Default)]
pub struct StoppingArgs {
    /// Stop early with an anytime-valid decision: run case-balanced rounds (cases in a random
    /// order fixed by --seed) and stop once the betting confidence sequence of the lift
    /// excludes 0, lies inside ±--equivalence, or the cases or a budget run out (then the
    /// fixed-n verdict). See docs/statistics.md.
    #[arg(long, conflicts_with_all = ["resume", "shard"])]
    pub sequential: bool,
    /// With --sequential: stop with "no meaningful effect" once the confidence sequence lies
    /// inside ±FRACTION (0.05 = 5 pp).
    #[arg(long, value_name = "FRACTION", requires = "sequential", value_parser = parse_margin)]
    pub equivalence: Option<f64>,
    /// With --sequential: miscoverage of the confidence sequence (0.05: a 95% sequence).
    #[arg(long, value_name = "ALPHA", requires = "sequential", default_value_t = crate::sequential::DEFAULT_ALPHA, value_parser = parse_alpha)]
    pub sequential_alpha: f64,
    /// Cases per round with --sequential or a budget (default: a twentieth of the cases).
    #[arg(long, value_name = "N", conflicts_with_all = ["resume", "shard"], value_parser = clap::value_parser!(u32).range(1..))]
    pub round_cases: Option<u32>,
    /// Budget: do not start a round that would take the run's cost past USD (reported costs,
    /// else tokens at the runner profile's [price]); the trials left are recorded as not run.
    #[arg(long, value_name = "USD", conflicts_with = "shard", value_parser = parse_usd)]
    pub max_cost_usd: Option<f64>,
    /// Budget: do not start a round that would take the run past N input + output tokens.
    #[arg(long, value_name = "N", conflicts_with = "shard")]
    pub max_tokens: Option<u64>,
    /// Budget: do not start a round that would take the run's trial execution past DURATION
    /// (90s, 15m, 1.5h; plain numbers are seconds).
    #[arg(long, value_name = "DURATION", conflicts_with = "shard", value_parser = crate::sequential::parse_duration_s)]
    pub max_wall: Option<f64>,
}

impl StoppingArgs {
    /// The budgets given on the command line.
    pub fn budgets(&self) -> Budgets {
        Budgets {
            max_cost_usd: self.max_cost_usd,
            max_tokens: self.max_tokens,
            max_wall_s: self.max_wall,
        }
    }

    /// Whether any of these flags was given.
    pub fn any_given(&self) -> bool {
        self.sequential || self.round_cases.is_some() || self.budgets().any()
    }
}

fn parse_margin(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "`{value}`: expected a fraction in (0, 1), e.g. 0.05 for ±5 pp"
        )),
    }
}

fn parse_alpha(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 0.5 => Ok(v),
        _ => Err(format!(
            "`{value}`: expected a miscoverage in (0, 0.5), e.g. 0.05"
        )),
    }
}

fn parse_usd(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{value}`: expected a positive amount of USD")),
    }
}

/// Put the stopping plan the flags ask for into `manifest`: a fresh run gets a new plan; a
/// resumed run keeps its recorded plan (its case order and rules), with the budgets given now
/// replacing the recorded ones (a resume may raise a budget that stopped the run). Warns when
/// a cost budget has no `[price]` table to fall back on.
pub fn apply(
    manifest: &mut Manifest,
    args: &StoppingArgs,
    price: Option<crate::runner::profile::PriceTable>,
    resuming: bool,
) -> Result<(), CommandError> {
    if !args.any_given() && manifest.stopping.is_none() {
        return Ok(());
    }
    if !manifest.arm_design.is_paired() {
        return Err(CommandError::input(anyhow!(
            "--sequential, --round-cases and the budgets apply to a paired run, not an A/A control"
        )));
    }
    if args.sequential
        && (manifest.arms.as_slice() != crate::workspace::Arm::PAIRED.as_slice()
            || manifest.reference() != crate::workspace::Arm::WithoutSkill)
    {
        return Err(CommandError::input(anyhow!(
            "--sequential decides with_skill against without_skill; it cannot be combined with --previous, --previous-ref, --exposure or --reference (the budgets can)"
        )));
    }
    if args.max_cost_usd.is_some() && price.is_none() {
        eprintln!(
            "warning: --max-cost-usd: the runner profile `{}` has no [price] table; only costs the agent reports count, and the run stops before a round once a trial reports none",
            manifest.runner.name
        );
    }
    match manifest.stopping.as_mut() {
        Some(plan) if resuming => {
            plan.budgets = plan.budgets.overridden_by(&args.budgets());
            if price.is_some() {
                plan.price = price;
            }
        }
        _ => {
            let sequential = args.sequential.then_some(SequentialSettings {
                alpha: args.sequential_alpha,
                equivalence: args.equivalence,
            });
            manifest.stopping = Some(StoppingPlan::new(
                &manifest.eval_set.case_ids,
                manifest.seed,
                args.round_cases.map(|n| n as usize),
                sequential,
                args.budgets(),
                price,
            ));
        }
    }
    Ok(())
}
