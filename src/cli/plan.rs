//! `skill-lift plan`: trials, tokens, cost and power before spending (see `crate::plan`).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;

use super::CommandError;
use crate::analysis::{AnalysisSettings, RunAccumulator};
use crate::evalset::{default_eval_path, load_eval_set};
use crate::plan::{
    UsageEstimate, VarianceSource, components_from_pilot, default_components, plan, plan_markdown,
};
use crate::record::{for_each_trial, read_manifest};
use crate::runner::profile::{load_profile, resolve_profile_path};

/// Flags of `skill-lift plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The skill folder (its eval set gives the number of cases).
    pub skill_dir: PathBuf,
    /// Eval set file (default: SKILL_DIR/evals/evals.json).
    #[arg(long, value_name = "FILE")]
    pub evals: Option<PathBuf>,
    /// Runner profile (its `[price]` table prices the tokens). Repeat it for a runner matrix,
    /// as in `run` (the first one prices the tokens).
    #[arg(
        long = "runner",
        value_name = "NAME|FILE",
        env = "SKILL_LIFT_RUNNER",
        default_value = "local"
    )]
    pub runners: Vec<String>,
    /// Models of a model matrix, as in `run` (each a cell on every runner).
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
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
    #[arg(short = 'k', long = "attempts", value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
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
pub fn plan_command(args: PlanArgs) -> Result<i32, CommandError> {
    if let Some(lift) = args.target_lift
        && !(lift > 0.0 && lift <= 1.0)
    {
        return Err(CommandError::input(anyhow!(
            "--target-lift must be a fraction in (0, 1] (0.1 = 10 pp)"
        )));
    }
    let eval_path = args
        .evals
        .clone()
        .unwrap_or_else(|| default_eval_path(&args.skill_dir));
    let eval_set = load_eval_set(&eval_path, &args.skill_dir).map_err(CommandError::input)?;
    let cases = eval_set.runnable_cases(args.allow_draft).len();
    let runner = args.runners.first().map(String::as_str).unwrap_or("local");
    let profile = load_profile(&resolve_profile_path(runner).map_err(CommandError::input)?)
        .map_err(CommandError::input)?;
    let (arms, _) = super::run::planned_arms(
        args.previous.is_some() || args.previous_ref.is_some(),
        &args.exposure,
        None,
        crate::workspace::ArmDesign::Paired,
    )?;
    let cells = crate::run_matrix::plan_cells("", &args.runners, &args.models).len();
    let trials = cases * arms.len() * args.k as usize * cells;

    let mut pilot_summary = None;
    if let Some(run_dir) = &args.pilot {
        let manifest = read_manifest(run_dir).map_err(CommandError::input)?;
        let mut accumulator = RunAccumulator::new(&manifest);
        for_each_trial(&run_dir.join("trials.jsonl"), |record| {
            accumulator.add(&record);
            Ok(())
        })
        .map_err(CommandError::input)?;
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
    let usage = per_trial.map(|((input, output), source)| {
        let (input_total, output_total) = (input * trials as f64, output * trials as f64);
        UsageEstimate {
            input_tokens_per_trial: input,
            output_tokens_per_trial: output,
            input_tokens: input_total,
            output_tokens: output_total,
            cost_usd: profile.profile.price.map(|price| {
                (input_total * price.input_usd_per_million_tokens
                    + output_total * price.output_usd_per_million_tokens)
                    / 1e6
            }),
            source: source.to_string(),
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
                eprintln!(
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
    let planned =
        plan(cases, args.k, components, source, usage, args.target_lift).with_shape(arms, cells);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&planned).expect("plan serializes")
        );
    } else {
        print!("{}", plan_markdown(&planned));
    }
    if cases == 0 {
        eprintln!("error: the eval set has no active case (drafts need --allow-draft)");
        return Ok(crate::exit_codes::NOTHING_TO_RUN);
    }
    Ok(crate::exit_codes::SUCCESS)
}
