//! The flags of `run` that spend less per decision (`--sequential`, `--equivalence`,
//! `--round-cases`, `--max-cost-usd`, `--max-tokens`, `--max-wall`) and the
//! [`StoppingRequest`] the run pipeline turns into the manifest's stopping plan
//! (`crate::pipeline::prepare::apply_stopping`, `crate::pipeline::sequential`).

use clap::Args;

use crate::pipeline::StoppingRequest;
use crate::record::{Budgets, SequentialSettings};

/// Round scheduling, anytime-valid stopping and budgets.
#[derive(Debug, Args, Clone, Default)]
pub struct StoppingArgs {
    /// Stop early with an anytime-valid decision: run case-balanced rounds (cases in a random
    /// order fixed by --seed) and stop once the betting confidence sequence of the lift
    /// excludes 0, lies inside ±--equivalence, or the cases or a budget run out (then the
    /// fixed-n verdict). See docs/statistics.md.
    #[arg(long, conflicts_with_all = ["resume", "shard"])]
    pub sequential: bool,
    /// Equivalence margin ±FRACTION (0.05 = 5 pp). With --sequential: stop with "no
    /// meaningful effect" once the confidence sequence lies inside it. With --previous or
    /// --previous-ref: the margin of the version policy — a patch must be equivalent (two
    /// one-sided tests: the 90% interval of with_skill − previous_version inside ±FRACTION), a
    /// minor non-inferior (its lower end above −FRACTION) [default: 0.10]. Otherwise (fixed-n):
    /// test that the skill makes no meaningful difference — the lift's 90% interval inside
    /// ±FRACTION — reported beside the verdict.
    #[arg(long, value_name = "FRACTION", value_parser = crate::pipeline::values::parse_margin)]
    pub equivalence: Option<f64>,
    /// With --sequential: miscoverage of the confidence sequence (0.05: a 95% sequence).
    #[arg(long, value_name = "ALPHA", requires = "sequential", default_value_t = crate::pipeline::sequential::DEFAULT_ALPHA, value_parser = crate::pipeline::values::parse_alpha)]
    pub sequential_alpha: f64,
    /// Cases per round with --sequential or a budget (default: a twentieth of the cases).
    #[arg(long, value_name = "N", conflicts_with_all = ["resume", "shard"], value_parser = clap::value_parser!(u32).range(1..))]
    pub round_cases: Option<u32>,
    /// Budget: do not start a round whose projected cost would take the run's cost past USD
    /// (reported costs, else tokens at the runner profile's [price]); the trials left are
    /// recorded as not run. A round is projected at its trials × the larger of the mean cost
    /// per trial so far and the profile's max_tokens at its output price; a run whose first
    /// round does not fit is refused before spending (exit 2).
    #[arg(long, value_name = "USD", conflicts_with = "shard", value_parser = crate::pipeline::values::parse_usd)]
    pub max_cost_usd: Option<f64>,
    /// Budget: do not start a round whose projected tokens would take the run past N input +
    /// output tokens. A round is projected at its trials × the larger of the mean tokens per
    /// trial so far and the profile's max_tokens; a run whose first round does not fit is
    /// refused before spending (exit 2).
    #[arg(long, value_name = "N", conflicts_with = "shard", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Budget: do not start a round that would take the run's trial execution past DURATION
    /// (90s, 15m, 1.5h; plain numbers are seconds).
    #[arg(long, value_name = "DURATION", conflicts_with = "shard", value_parser = crate::pipeline::sequential::parse_duration_s)]
    pub max_wall: Option<f64>,
}

impl StoppingArgs {
    /// Whether any of these flags was given.
    pub fn any_given(&self) -> bool {
        self.request().any_given()
    }

    /// What these flags ask for, as the run pipeline reads it.
    pub fn request(&self) -> StoppingRequest {
        StoppingRequest {
            sequential: self.sequential.then_some(SequentialSettings {
                alpha: self.sequential_alpha,
                equivalence: self.equivalence,
            }),
            round_cases: self.round_cases.map(|n| n as usize),
            budgets: Budgets {
                max_cost_usd: self.max_cost_usd,
                max_tokens: self.max_tokens,
                max_wall_s: self.max_wall,
            },
        }
    }
}
