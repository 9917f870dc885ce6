//! `skill-lift plan`: trials, tokens, cost and power before spending (see `crate::plan`).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;

use super::CommandError;
use super::Outcome;
use crate::analysis::{AnalysisSettings, RunAccumulator};
use crate::evalset::{default_eval_path, load_eval_set};
use crate::plan::{
    UsageEstimate, VarianceSource, components_from_pilot, default_components, plan, plan_markdown,
};
use crate::projection::{DEFAULT_ASSUMED_LIFTS, PilotModel, ProjectionSettings, project};
use crate::record::{Arm, Budgets, SequentialSettings, for_each_trial, read_manifest};
use crate::runner::profile::{load_profile, resolve_profile_path};

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
    pub exposure: Vec<crate::workspace::Exposure>,
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
    #[arg(long, value_name = "N", default_value_t = crate::projection::DEFAULT_SIMULATIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub simulations: usize,
    /// Seed of the projection's simulations.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// The projected `run --sequential --equivalence FRACTION`.
    #[arg(long, value_name = "FRACTION", value_parser = super::stopping::parse_margin)]
    pub equivalence: Option<f64>,
    /// The projected `run --sequential-alpha ALPHA`.
    #[arg(long, value_name = "ALPHA", default_value_t = crate::sequential::DEFAULT_ALPHA, value_parser = super::stopping::parse_alpha)]
    pub sequential_alpha: f64,
    /// The projected `run --round-cases N` (default: a twentieth of the cases).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub round_cases: Option<u32>,
    /// The projected `run --max-cost-usd USD` (both procedures).
    #[arg(long, value_name = "USD", value_parser = super::stopping::parse_usd)]
    pub max_cost_usd: Option<f64>,
    /// The projected `run --max-tokens N` (both procedures).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// The projected `run --max-wall DURATION` (both procedures).
    #[arg(long, value_name = "DURATION", value_parser = crate::sequential::parse_duration_s)]
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

fn parse_tokens(value: &str) -> Result<(f64, f64), CommandError> {
    let bad = || {
        CommandError::input(anyhow!(
            "--tokens-per-trial `{value}`: expected INPUT or INPUT,OUTPUT token counts"
        ))
    };
    let mut parts = value.split(',').map(|p| p.trim().parse::<f64>());
    let input = parts.next().ok_or_else(bad)?.map_err(|_| bad())?;
    let output = match parts.next() {
        Some(part) => part.map_err(|_| bad())?,
        None => 0.0,
    };
    if parts.next().is_some()
        || input < 0.0
        || output < 0.0
        || !input.is_finite()
        || !output.is_finite()
    {
        return Err(bad());
    }
    Ok((input, output))
}

/// Run the command; returns the exit code.
pub fn plan_command(args: PlanArgs) -> Result<Outcome, CommandError> {
    if let Some(lift) = args.target_lift
        && !(lift > 0.0 && lift <= 1.0)
    {
        return Err(CommandError::input(anyhow!(
            "--target-lift must be a fraction in (0, 1] (0.1 = 10 pp)"
        )));
    }
    let (skill_dir, evals) = super::run::locate_inputs(&args.skill_dir, args.evals.as_deref())?;
    // A mistyped skill path says so, as `run` does, before the eval set it would hold.
    if evals.is_none() && !skill_dir.exists() {
        return Err(CommandError::input(crate::asset::SkillError::Missing {
            dir: skill_dir,
        }));
    }
    let eval_path = evals.unwrap_or_else(|| default_eval_path(&skill_dir));
    let eval_set = load_eval_set(&eval_path, &skill_dir).map_err(CommandError::input)?;
    // The loaders' warnings, as `run` prints them.
    if let Ok(skill) = crate::asset::load_skill(&skill_dir) {
        for warning in &skill.warnings {
            crate::errln!(
                "warning: {}: {warning}",
                skill.dir.join("SKILL.md").display()
            );
        }
        if let Some(name) = &eval_set.skill_name
            && name != &skill.name
        {
            crate::errln!(
                "warning: {}: skill_name `{name}` differs from the skill's name `{}`",
                eval_path.display(),
                skill.name
            );
        }
    }
    for warning in &eval_set.warnings {
        crate::errln!("warning: {}: {warning}", eval_path.display());
    }
    let cases = eval_set.runnable_cases(args.allow_draft).len();
    let runner = args.agent.runner();
    let profile = load_profile(&resolve_profile_path(runner).map_err(CommandError::input)?)
        .map_err(CommandError::input)?;
    let (arms, _) = super::run::planned_arms(
        args.previous.is_some() || args.previous_ref.is_some(),
        &args.exposure,
        None,
        crate::record::ArmDesign::Paired,
    )?;
    let cells = crate::run_matrix::plan_cells("", &args.agent.runners, &args.agent.models).len();
    let trials = cases * arms.len() * args.k as usize * cells;

    if args.pilot.is_none() && !args.assumed_lift.is_empty() {
        return Err(CommandError::input(anyhow!(
            "--assumed-lift projects from a pilot run: give --pilot RUN_DIR"
        )));
    }
    let price = profile.profile.price;
    let mut pilot_summary = None;
    let mut pilot_model = None;
    if let Some(run_dir) = &args.pilot {
        let manifest = read_manifest(run_dir).map_err(CommandError::input)?;
        let mut accumulator = RunAccumulator::new(&manifest);
        let mut records = Vec::new();
        for_each_trial(&run_dir.join("trials.jsonl"), |record| {
            accumulator.add(&record);
            records.push(record);
            Ok(())
        })
        .map_err(CommandError::input)?;
        pilot_model = Some(
            PilotModel::from_records(&manifest.run_id, records, price.as_ref())
                .map_err(|e| CommandError::input(anyhow!("pilot {}: {e}", run_dir.display())))?,
        );
        pilot_summary = Some(accumulator.finish(&AnalysisSettings {
            resamples: 200,
            ..AnalysisSettings::new(manifest.seed)
        }));
    }

    let per_trial = match (&pilot_summary, &args.tokens_per_trial) {
        (_, Some(flag)) => Some((parse_tokens(flag)?, "flag")),
        (Some(summary), None) => {
            let recorded = summary.trials.recorded.max(1) as f64;
            let total = |f: fn(&crate::analysis::UsageTotals) -> Option<u64>| {
                (f(&summary.arms.with_skill.usage).unwrap_or(0)
                    + f(&summary.arms.without_skill.usage).unwrap_or(0)) as f64
            };
            let input = total(|u| u.input_tokens);
            let output = total(|u| u.output_tokens);
            (input + output > 0.0).then_some(((input / recorded, output / recorded), "pilot"))
        }
        (None, None) => None,
    };
    // The pilot's judge spend per trial (summary `judge_spend` over its recorded trials), and
    // its reported agent cost per trial for a profile without a `[price]` table.
    let pilot_mean = pilot_model
        .as_ref()
        .map(|model| model.mean_trial_spend(&arms));
    let judge_per_trial = pilot_summary.as_ref().map(|summary| {
        let recorded = summary.trials.recorded.max(1) as f64;
        match &summary.judge_spend {
            Some(judge) => (
                (judge.input_tokens.unwrap_or(0) + judge.output_tokens.unwrap_or(0)) as f64
                    / recorded,
                (judge.unpriced_trials == 0).then(|| judge.cost_usd.unwrap_or(0.0) / recorded),
            ),
            None => (0.0, Some(0.0)),
        }
    });
    let usage = per_trial.map(|((input, output), source)| {
        let (input_total, output_total) = (input * trials as f64, output * trials as f64);
        UsageEstimate {
            input_tokens_per_trial: input,
            output_tokens_per_trial: output,
            input_tokens: input_total,
            output_tokens: output_total,
            cost_usd: match &price {
                Some(price) => Some(
                    (input_total * price.input_usd_per_million_tokens
                        + output_total * price.output_usd_per_million_tokens)
                        / 1e6,
                ),
                None if source == "pilot" => pilot_mean
                    .and_then(|mean| mean.cost_usd)
                    .filter(|cost| *cost > 0.0)
                    .map(|cost| cost * trials as f64),
                None => None,
            },
            source: source.to_string(),
            judge_tokens_per_trial: judge_per_trial.map(|(tokens, _)| tokens),
            judge_cost_usd: judge_per_trial
                .and_then(|(_, cost)| cost)
                .map(|cost| cost * trials as f64),
        }
    });

    let (components, source) = match pilot_summary
        .as_ref()
        .and_then(|s| components_from_pilot(s, args.k).map(|c| (s, c)))
    {
        Some((summary, (components, clamped))) => (
            components,
            VarianceSource {
                kind: "pilot".to_string(),
                pilot_run: Some(summary.run_id.clone()),
                pilot_cases: Some(summary.lift.n_cases),
                clamped,
            },
        ),
        None => {
            if pilot_summary.is_some() {
                crate::errln!(
                    "warning: the pilot run has fewer than two cases scored in both arms; using the default variances"
                );
            }
            (
                default_components(args.k),
                VarianceSource {
                    kind: "default".to_string(),
                    pilot_run: None,
                    pilot_cases: None,
                    clamped: false,
                },
            )
        }
    };
    let mut planned = plan(cases, args.k, components, source, usage, args.target_lift)
        .with_shape(arms.clone(), cells);
    if let Some(model) = &pilot_model
        && cases > 0
    {
        if arms.as_slice() != Arm::PAIRED.as_slice() {
            if !args.assumed_lift.is_empty() {
                return Err(CommandError::input(anyhow!(
                    "--assumed-lift projects `run --sequential`, which decides with_skill against without_skill; it cannot be combined with --previous, --previous-ref or --exposure"
                )));
            }
        } else {
            let lifts = if args.assumed_lift.is_empty() {
                DEFAULT_ASSUMED_LIFTS.to_vec()
            } else {
                args.assumed_lift.clone()
            };
            let settings = ProjectionSettings {
                cases,
                k: args.k,
                arms: arms.clone(),
                round_cases: args.round_cases.map(|n| n as usize),
                sequential: SequentialSettings {
                    alpha: args.sequential_alpha,
                    equivalence: args.equivalence,
                },
                budgets: Budgets {
                    max_cost_usd: args.max_cost_usd,
                    max_tokens: args.max_tokens,
                    max_wall_s: args.max_wall,
                },
                price_known: price.is_some(),
                trial_floor: crate::sequential::TrialFloor::of_reply_cap(
                    profile.profile.max_tokens,
                    price.as_ref(),
                ),
                jobs: args
                    .jobs
                    .map(|j| j as usize)
                    .unwrap_or(profile.profile.concurrency)
                    .max(1),
                simulations: args.simulations,
                seed: args.seed,
            };
            planned.projection = Some(
                project(model, &settings, &lifts)
                    .map_err(|e| CommandError::input(anyhow!("--assumed-lift: {e}")))?,
            );
            if cells > 1 {
                crate::errln!(
                    "note: the projection is per runner/model cell (each cell is a run of its own, with its own budget); {cells} cells spend {cells} times as much"
                );
            }
        }
    }
    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&planned).expect("plan serializes")
        );
    } else {
        crate::out!("{}", plan_markdown(&planned));
    }
    if cases == 0 {
        crate::errln!("error: the eval set has no active case (drafts need --allow-draft)");
        return Ok(Outcome::NothingToRun);
    }
    Ok(Outcome::Success)
}
