//! `skill-lift plan`: trials, tokens, cost and power before spending. The request
//! ([`PlanRequest`]) names the skill, the run's shape and an optional pilot run; [`plan_run`]
//! loads the eval set and the runner profile, reads the pilot, estimates usage and variances
//! (`crate::pipeline::plan::sizing`) and projects `run --sequential` against fixed K (`crate::pipeline::projection`);
//! [`render`] gives what the command prints and [`run_plan`] prints it.

pub(crate) mod sizing;

use std::path::PathBuf;

use crate::analysis::{AnalysisSettings, RunAccumulator, Summary};
use crate::features::evalset::{default_eval_path, load_eval_set};
use crate::features::runner::LoadedProfile;
use crate::features::runner::profile::{load_profile, resolve_profile_path};
use crate::pipeline::plan::sizing::{
    Plan, UsageEstimate, VarianceSource, components_from_pilot, default_components, plan,
    plan_markdown,
};
use crate::pipeline::projection::{DEFAULT_ASSUMED_LIFTS, PilotModel, ProjectionSettings, project};
use crate::record::PriceTable;
use crate::record::{Arm, Budgets, SequentialSettings, for_each_trial, read_manifest};
use crate::values::reporter::{Event, report};

/// What `plan` is asked: the skill, the run's shape, the pilot, the projected stopping rule.
#[derive(Debug, Clone)]
pub(crate) struct PlanRequest {
    /// The skill folder (or a folder the layout finds it in).
    pub skill_dir: PathBuf,
    /// `--evals`.
    pub evals: Option<PathBuf>,
    /// The runner whose profile prices the tokens (the first of `runners`).
    pub runner: String,
    /// The runners of a runner matrix.
    pub runners: Vec<String>,
    /// The models of a model matrix.
    pub models: Vec<String>,
    /// Whether a `previous_version` arm is planned.
    pub previous: bool,
    /// Exposure arms besides the native one.
    pub exposure: Vec<crate::features::workspace::Exposure>,
    /// Attempts per case per arm.
    pub k: u32,
    /// A recorded pilot run.
    pub pilot: Option<PathBuf>,
    /// `--tokens-per-trial` as given (INPUT or INPUT,OUTPUT).
    pub tokens_per_trial: Option<String>,
    /// A lift to detect.
    pub target_lift: Option<f64>,
    /// The true lifts to project at (empty: the defaults).
    pub assumed_lift: Vec<f64>,
    /// Simulated runs per assumed lift.
    pub simulations: usize,
    /// Seed of the simulations.
    pub seed: u64,
    /// The projected equivalence margin.
    pub equivalence: Option<f64>,
    /// The projected sequential alpha.
    pub sequential_alpha: f64,
    /// The projected cases per round.
    pub round_cases: Option<u32>,
    /// The projected budgets.
    pub budgets: Budgets,
    /// The projected `--jobs` (default: the profile's concurrency).
    pub jobs: Option<u32>,
    /// Count draft cases too.
    pub allow_draft: bool,
}

/// Why a plan cannot be made (every one an input error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    /// `--target-lift` out of range.
    #[error("--target-lift must be a fraction in (0, 1] (0.1 = 10 pp)")]
    TargetLift,
    /// No single skill in the folder named.
    #[error(transparent)]
    Layout(#[from] crate::features::evalset::layout::LayoutError),
    /// The skill folder is missing.
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    /// The eval set cannot be read.
    #[error(transparent)]
    EvalSet(#[from] crate::features::evalset::EvalSetError),
    /// The runner profile cannot be read.
    #[error(transparent)]
    Profile(#[from] crate::features::runner::profile::ProfileError),
    /// The arms cannot be planned.
    #[error(transparent)]
    Arms(#[from] super::PipelineError),
    /// `--assumed-lift` without `--pilot`.
    #[error("--assumed-lift projects from a pilot run: give --pilot RUN_DIR")]
    AssumedLiftWithoutPilot,
    /// The pilot run folder cannot be read.
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    /// The pilot's records give no model.
    #[error("pilot {}: {error}", .dir.display())]
    Pilot {
        /// The pilot run folder.
        dir: PathBuf,
        /// Why.
        error: crate::pipeline::projection::ProjectionError,
    },
    /// `--tokens-per-trial` is not INPUT or INPUT,OUTPUT.
    #[error("--tokens-per-trial `{0}`: expected INPUT or INPUT,OUTPUT token counts")]
    Tokens(String),
    /// `--assumed-lift` with arms besides the paired two.
    #[error(
        "--assumed-lift projects `run --sequential`, which decides with_skill against without_skill; it cannot be combined with --previous, --previous-ref or --exposure"
    )]
    AssumedLiftWithArms,
    /// The projection failed.
    #[error("--assumed-lift: {0}")]
    Projection(crate::pipeline::projection::ProjectionError),
}

/// A plan made: the plan and the number of active cases it counted.
#[derive(Debug)]
pub(crate) struct PlanMade {
    /// The plan.
    pub plan: Plan,
    /// Active cases (0: nothing would run).
    pub cases: usize,
}

/// What `plan` prints on stdout: the plan as pretty JSON (with a final newline) or Markdown.
pub(crate) fn render(plan: &Plan, json: bool) -> String {
    if json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(plan).expect("plan serializes")
        )
    } else {
        plan_markdown(plan)
    }
}

/// Parse `--tokens-per-trial`: INPUT or INPUT,OUTPUT, finite and not negative.
fn parse_tokens(value: &str) -> Result<(f64, f64), PlanError> {
    let bad = || PlanError::Tokens(value.to_string());
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

/// The eval set's active cases, reporting the loaders' warnings as `run` does.
fn count_cases(request: &PlanRequest) -> Result<usize, PlanError> {
    let (skill_dir, evals) = super::locate_inputs(&request.skill_dir, request.evals.as_deref())?;
    // A mistyped skill path says so, as `run` does, before the eval set it would hold.
    if evals.is_none() && !skill_dir.exists() {
        return Err(crate::features::asset::SkillError::Missing { dir: skill_dir }.into());
    }
    let eval_path = evals.unwrap_or_else(|| default_eval_path(&skill_dir));
    let eval_set = load_eval_set(&eval_path, &skill_dir)?;
    if let Ok(skill) = crate::features::asset::load_skill(&skill_dir) {
        for warning in &skill.warnings {
            report(Event::warning_at(
                skill.dir.join("SKILL.md"),
                warning.to_string(),
            ));
        }
        super::resolve::warn_on_skill_name_mismatch(
            &eval_path,
            eval_set.skill_name.as_deref(),
            &skill.name,
        );
    }
    for warning in &eval_set.warnings {
        report(Event::warning_at(&eval_path, warning.to_string()));
    }
    Ok(eval_set.runnable_cases(request.allow_draft).len())
}

/// A pilot run read: its summary (200 resamples) and its model for the projection.
fn read_pilot(
    run_dir: &std::path::Path,
    price: Option<&PriceTable>,
) -> Result<(Summary, PilotModel), PlanError> {
    let manifest = read_manifest(run_dir)?;
    let mut accumulator = RunAccumulator::new(&manifest);
    let mut records = Vec::new();
    for_each_trial(&run_dir.join("trials.jsonl"), |record| {
        accumulator.add(&record);
        records.push(record);
        Ok(())
    })?;
    let model = PilotModel::from_records(&manifest.run_id, records, price).map_err(|error| {
        PlanError::Pilot {
            dir: run_dir.to_path_buf(),
            error,
        }
    })?;
    let summary = accumulator.finish(&AnalysisSettings {
        resamples: 200,
        ..AnalysisSettings::new(manifest.seed)
    });
    Ok((summary, model))
}

/// The usage estimate: tokens per trial from the flag, else the pilot; priced by `price`, else
/// (from a pilot) by its reported agent cost; the pilot's judge spend per trial.
fn estimate_usage(
    request: &PlanRequest,
    pilot: Option<&(Summary, PilotModel)>,
    price: Option<&PriceTable>,
    arms: &[Arm],
    trials: usize,
) -> Result<Option<UsageEstimate>, PlanError> {
    let pilot_summary = pilot.map(|(summary, _)| summary);
    let per_trial = match (pilot_summary, &request.tokens_per_trial) {
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
    let pilot_mean = pilot.map(|(_, model)| model.mean_trial_spend(arms));
    let judge_per_trial = pilot_summary.map(|summary| {
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
    Ok(per_trial.map(|((input, output), source)| {
        let (input_total, output_total) = (input * trials as f64, output * trials as f64);
        UsageEstimate {
            input_tokens_per_trial: input,
            output_tokens_per_trial: output,
            input_tokens: input_total,
            output_tokens: output_total,
            cost_usd: match price {
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
    }))
}

/// The variance components: the pilot's, else the defaults (warning when a pilot was given
/// but has fewer than two cases scored in both arms).
fn variances(
    pilot: Option<&Summary>,
    k: u32,
) -> (
    crate::analysis::stats::PairedVarianceComponents,
    VarianceSource,
) {
    match pilot.and_then(|s| components_from_pilot(s, k).map(|c| (s, c))) {
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
            if pilot.is_some() {
                report(Event::warning(
                    "the pilot run has fewer than two cases scored in both arms; using the default variances",
                ));
            }
            (
                default_components(k),
                VarianceSource {
                    kind: "default".to_string(),
                    pilot_run: None,
                    pilot_cases: None,
                    clamped: false,
                },
            )
        }
    }
}

/// Project fixed K against `run --sequential` from the pilot's model (paired arms only).
fn projection(
    request: &PlanRequest,
    model: &PilotModel,
    profile: &LoadedProfile,
    cases: usize,
    arms: &[Arm],
    cells: usize,
) -> Result<Option<crate::pipeline::projection::Projection>, PlanError> {
    if arms != Arm::PAIRED.as_slice() {
        if !request.assumed_lift.is_empty() {
            return Err(PlanError::AssumedLiftWithArms);
        }
        return Ok(None);
    }
    let lifts = if request.assumed_lift.is_empty() {
        DEFAULT_ASSUMED_LIFTS.to_vec()
    } else {
        request.assumed_lift.clone()
    };
    let price = profile.profile.price.as_ref();
    let settings = ProjectionSettings {
        cases,
        k: request.k,
        arms: arms.to_vec(),
        round_cases: request.round_cases.map(|n| n as usize),
        sequential: SequentialSettings {
            alpha: request.sequential_alpha,
            equivalence: request.equivalence,
        },
        budgets: request.budgets,
        price_known: price.is_some(),
        trial_floor: crate::pipeline::sequential::TrialFloor::of_reply_cap(
            profile.profile.max_tokens,
            price,
        ),
        jobs: request
            .jobs
            .map(|j| j as usize)
            .unwrap_or(profile.profile.concurrency)
            .max(1),
        simulations: request.simulations,
        seed: request.seed,
    };
    let projected = project(model, &settings, &lifts).map_err(PlanError::Projection)?;
    if cells > 1 {
        report(Event::ProjectionPerCell { cells });
    }
    Ok(Some(projected))
}

/// `skill-lift plan`: make the plan, print it (JSON or Markdown) and say how the command ends:
/// nothing to run when no case is active.
pub(crate) fn run_plan(request: &PlanRequest, json: bool) -> Result<super::Ending, PlanError> {
    let made = plan_run(request)?;
    crate::values::reporter::result(&render(&made.plan, json));
    if made.cases == 0 {
        report(Event::NoActiveCase);
        return Ok(super::Ending::NothingToRun);
    }
    Ok(super::Ending::Success)
}

/// Make the plan: cases from the eval set, arms and cells from the shape, usage and variances
/// from the pilot (or the defaults and `--tokens-per-trial`), the projection from the pilot.
pub(crate) fn plan_run(request: &PlanRequest) -> Result<PlanMade, PlanError> {
    if let Some(lift) = request.target_lift
        && !(lift > 0.0 && lift <= 1.0)
    {
        return Err(PlanError::TargetLift);
    }
    let cases = count_cases(request)?;
    let profile = load_profile(&resolve_profile_path(&request.runner)?)?;
    let (arms, _) = super::planned_arms(
        request.previous,
        &request.exposure,
        None,
        crate::record::ArmDesign::Paired,
    )?;
    let cells =
        crate::pipeline::run_matrix::plan_cells("", &request.runners, &request.models).len();
    let trials = cases * arms.len() * request.k as usize * cells;
    if request.pilot.is_none() && !request.assumed_lift.is_empty() {
        return Err(PlanError::AssumedLiftWithoutPilot);
    }
    let price = profile.profile.price.as_ref();
    let pilot = match &request.pilot {
        Some(run_dir) => Some(read_pilot(run_dir, price)?),
        None => None,
    };
    let usage = estimate_usage(request, pilot.as_ref(), price, &arms, trials)?;
    let (components, source) = variances(pilot.as_ref().map(|(s, _)| s), request.k);
    let mut planned = plan(
        cases,
        request.k,
        components,
        source,
        usage,
        request.target_lift,
    )
    .with_shape(arms.clone(), cells);
    if let Some((_, model)) = &pilot
        && cases > 0
    {
        planned.projection = projection(request, model, &profile, cases, &arms, cells)?;
    }
    Ok(PlanMade {
        plan: planned,
        cases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_per_trial_are_input_or_input_and_output() {
        assert_eq!(parse_tokens("1000").unwrap(), (1000.0, 0.0));
        assert_eq!(parse_tokens("1000, 200").unwrap(), (1000.0, 200.0));
        for bad in ["", "x", "1,2,3", "-1", "1,inf"] {
            let error = parse_tokens(bad).unwrap_err();
            assert!(
                error.to_string().starts_with("--tokens-per-trial `"),
                "{error}"
            );
        }
    }
}
