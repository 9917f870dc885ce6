//! `skill-lift plan`: trials, tokens, cost and power before spending (`crate::pipeline::plan`).

use std::path::PathBuf;

use clap::Args;

use super::CommandError;
use super::Outcome;
use crate::pipeline::plan::PlanRequest;
use crate::record::Budgets;

/// Flags of `skill-lift plan`.
#[derive(Debug, Args)]
#[command(
    mut_arg("runners", |arg| arg.help("Runner profile (its `[price]` table prices the tokens). Repeat it for a runner matrix, as in `run` (the first one prices the tokens)")),
    mut_arg("models", |arg| arg.help("Models of a model matrix, as in `run` (each a cell on every runner)"))
)]
pub struct PlanArgs {
    /// The skill folder (its eval set gives the number of cases).
    pub skill_dir: PathBuf,
    /// Eval set file (default: SKILL_DIR/evals/evals.json).
    #[arg(long, value_name = "FILE")]
    pub evals: Option<PathBuf>,
    #[command(flatten)]
    pub agent: super::flag_groups::RunnerArgs,
    /// Plan a `previous_version` arm, as `run --previous DIR` runs one.
    #[arg(long, value_name = "DIR", conflicts_with = "previous_ref")]
    pub previous: Option<PathBuf>,
    /// Plan a `previous_version` arm, as `run --previous-ref GIT_REF` runs one.
    #[arg(long, value_name = "GIT_REF")]
    pub previous_ref: Option<String>,
    /// Plan exposure arms, as `run --exposure LIST` runs them.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub exposure: Vec<crate::features::workspace::Exposure>,
    /// Attempts per case per arm to plan for.
    #[arg(short = 'k', long = "attempts", alias = "k", value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub k: u32,
    /// A recorded pilot run: its usage and variances replace the defaults.
    #[arg(long, value_name = "RUN_DIR")]
    pub pilot: Option<PathBuf>,
    /// Tokens per trial without a pilot: INPUT or INPUT,OUTPUT.
    #[arg(long, value_name = "IN[,OUT]")]
    pub tokens_per_trial: Option<String>,
    /// A lift to detect (fraction, 0.1 = 10 pp): prints the cases or K needed.
    #[arg(long, value_name = "FRACTION")]
    pub target_lift: Option<f64>,
    /// With --pilot: project fixed-K against `run --sequential` at these true lifts
    /// (fractions; repeat or list: 0,0.1,0.3,0.5 by default).
    #[arg(
        long,
        value_name = "LIFT",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub assumed_lift: Vec<f64>,
    /// Simulated runs per assumed lift.
    #[arg(long, value_name = "N", default_value_t = crate::pipeline::projection::DEFAULT_SIMULATIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub simulations: usize,
    /// Seed of the projection's simulations.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// The projected `run --sequential --equivalence FRACTION`.
    #[arg(long, value_name = "FRACTION", value_parser = crate::pipeline::values::parse_margin)]
    pub equivalence: Option<f64>,
    /// The projected `run --sequential-alpha ALPHA`.
    #[arg(long, value_name = "ALPHA", default_value_t = crate::pipeline::sequential::DEFAULT_ALPHA, value_parser = crate::pipeline::values::parse_alpha)]
    pub sequential_alpha: f64,
    /// The projected `run --round-cases N` (default: a twentieth of the cases).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub round_cases: Option<u32>,
    /// The projected `run --max-cost-usd USD` (both procedures).
    #[arg(long, value_name = "USD", value_parser = crate::pipeline::values::parse_usd)]
    pub max_cost_usd: Option<f64>,
    /// The projected `run --max-tokens N` (both procedures).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// The projected `run --max-wall DURATION` (both procedures).
    #[arg(long, value_name = "DURATION", value_parser = crate::pipeline::sequential::parse_duration_s)]
    pub max_wall: Option<f64>,
    /// The projected `run --jobs N` (wall time; default: the runner profile's concurrency).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Count draft cases too.
    #[arg(long)]
    pub allow_draft: bool,
    /// Print JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

impl PlanArgs {
    /// The request these flags make.
    fn request(&self) -> PlanRequest {
        PlanRequest {
            skill_dir: self.skill_dir.clone(),
            evals: self.evals.clone(),
            runner: self.agent.runner().to_string(),
            runners: self.agent.runners.clone(),
            models: self.agent.models.clone(),
            previous: self.previous.is_some() || self.previous_ref.is_some(),
            exposure: self.exposure.clone(),
            k: self.k,
            pilot: self.pilot.clone(),
            tokens_per_trial: self.tokens_per_trial.clone(),
            target_lift: self.target_lift,
            assumed_lift: self.assumed_lift.clone(),
            simulations: self.simulations,
            seed: self.seed,
            equivalence: self.equivalence,
            sequential_alpha: self.sequential_alpha,
            round_cases: self.round_cases,
            budgets: Budgets {
                max_cost_usd: self.max_cost_usd,
                max_tokens: self.max_tokens,
                max_wall_s: self.max_wall,
            },
            jobs: self.jobs,
            allow_draft: self.allow_draft,
        }
    }
}

/// Run the command; returns the exit code.
pub(super) fn plan_command(args: PlanArgs) -> Result<Outcome, CommandError> {
    crate::pipeline::plan::run_plan(&args.request(), args.json).map_err(CommandError::input)
}
