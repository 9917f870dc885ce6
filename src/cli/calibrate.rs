//! `skill-lift calibrate SKILL_DIR [run flags]`: the A/A control. Runs the eval set R times
//! with both arms staged identically (both without the target by default, `--arm with-skill`
//! for both with it), analyzes each repeat exactly as `run` would, and records the suite's
//! empirical false-verdict rate (repeats whose verdict is `improved` or `regressed`) and the
//! spread of the lift across repeats in the state folder, where a later `run` on the same suite
//! finds it (`crate::calibration`).
//!
//! Each repeat is an ordinary run folder, `<out>/<calibration id>/repeat-NN/`, executed by the
//! same code as `run` (`crate::pipeline::execute_run`); `calibration.json` beside them holds the plan, so
//! `calibrate --resume DIR` continues where an interrupted calibration stopped.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use chrono::{DateTime, Utc};
use clap::Args;
use serde::{Deserialize, Serialize};

use super::Outcome;
use super::run::{
    RunOptions, create_run_folder, execute_with_flags, execution_settings, exit_code_for,
    fresh_request, nothing_to_run,
};
use super::{CommandError, RunArgs};
use crate::calibration::{
    CalibrationRecord, DEFAULT_REPEATS, RepeatResult, record as record_calibration,
};
use crate::disk::write_atomic;
use crate::record::{CalibrationArm, Manifest};
use crate::report::tables::points;
use crate::runner::profile::load_profile;

/// Flags of `skill-lift calibrate`: every flag of `run`, plus the repeats and the arm.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// A/A repeats: each is a whole run of the eval set with both arms identical.
    #[arg(long, value_name = "R", default_value_t = DEFAULT_REPEATS, value_parser = clap::value_parser!(u32).range(1..=1000), conflicts_with = "resume")]
    pub repeats: u32,
    /// Which identical arms to run: without-skill (both arms without the target; the default)
    /// or with-skill (both with it).
    #[arg(
        long,
        value_name = "ARM",
        default_value = "without-skill",
        conflicts_with = "resume"
    )]
    pub arm: CalibrationArm,
}

/// Version of `calibration.json`.
const PLAN_FORMAT_VERSION: u32 = 1;
/// The plan file in a calibration folder.
const PLAN_FILE: &str = "calibration.json";
/// The result file in a calibration folder.
const RESULT_FILE: &str = "calibration-result.json";

/// `calibration.json`: what a calibration runs. Every repeat's manifest is `template` with its
/// own run id, seed and start time.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CalibrationPlan {
    format_version: u32,
    calibration_id: String,
    created_at: DateTime<Utc>,
    arm: CalibrationArm,
    repeats: u32,
    template: Manifest,
}

fn read_plan(dir: &Path) -> Result<CalibrationPlan, CommandError> {
    let path = dir.join(PLAN_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| {
            format!(
                "{}: not a calibration folder (no {PLAN_FILE}); pass a folder written by `skill-lift calibrate`",
                dir.display()
            )
        })
        .map_err(CommandError::input)?;
    let plan: CalibrationPlan = serde_json::from_str(&text)
        .with_context(|| format!("{}: malformed", path.display()))
        .map_err(CommandError::input)?;
    if plan.format_version > PLAN_FORMAT_VERSION {
        return Err(CommandError::input(anyhow!(
            "{}: format version {} is newer than this skill-lift reads ({PLAN_FORMAT_VERSION})",
            path.display(),
            plan.format_version
        )));
    }
    // The template names every repeat's folder files (case ids): the rules a run folder's
    // manifest is read under hold for it too.
    if let Some(problem) = crate::record::implausible_manifest(&plan.template) {
        return Err(CommandError::input(anyhow!(
            "{}: `template`: {problem}",
            path.display()
        )));
    }
    if !crate::pipeline::is_plain_folder_name(&plan.calibration_id) {
        return Err(CommandError::input(anyhow!(
            "{}: `calibration_id` `{}` is not a plain folder name",
            path.display(),
            plan.calibration_id
        )));
    }
    Ok(plan)
}

fn write_json_file<T: Serialize>(path: &Path, value: &T) -> Result<(), CommandError> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("calibration files serialize");
    bytes.push(b'\n');
    write_atomic(path, &bytes).map_err(CommandError::infrastructure)
}

/// The run id of repeat `index` (1-based): its folder name.
fn repeat_id(index: u32) -> String {
    format!("repeat-{index:02}")
}

/// Refuse flags that mean nothing for an A/A control.
fn check_flags(args: &CalibrateArgs) -> Result<(), CommandError> {
    let run = &args.run;
    if run.shard.is_some() {
        return Err(CommandError::input(anyhow!(
            "--shard does not apply to calibrate: every repeat runs whole"
        )));
    }
    if run.analysis.min_lift.is_some() || !run.analysis.fail_on.is_empty() {
        return Err(CommandError::input(anyhow!(
            "--min-lift and --fail-on do not apply to calibrate: an A/A control has no lift to gate; use them on `run`"
        )));
    }
    if run.resume.is_some() && run.grading.any_given() {
        return Err(CommandError::input(anyhow!(
            "grading flags are not accepted with --resume: a calibration grades as it started"
        )));
    }
    Ok(())
}

/// Resolve and check a fresh calibration, create its folder and plan. `Ok(Err(code))` when
/// there is nothing to run or grade.
fn start_fresh(
    args: &CalibrateArgs,
) -> Result<Result<(PathBuf, CalibrationPlan), Outcome>, CommandError> {
    let run = &args.run;
    let execution = execution_settings(run);
    let resolved = crate::pipeline::resolve_fresh(
        &fresh_request(run)?,
        args.arm.design(),
        run.analysis.recorded_gates(),
        execution.state.as_deref(),
    )?;
    if let Some(nothing) =
        crate::pipeline::check_before_spending(&resolved, run.analysis.method, &execution)?
    {
        return Ok(Err(nothing_to_run(nothing)));
    }
    // Credentials and graders are checked before any folder exists.
    let prepared = crate::pipeline::prepare(resolved, &execution)?;
    let mut template = prepared.resolved.manifest.clone();
    let calibration_id = super::result_folder_id(
        run.run_id.as_deref(),
        &template.asset.name,
        "calibrate",
        "--run-id",
    )?;
    template.run_id = calibration_id.clone();
    let dir = run.results.out.join(&calibration_id);
    super::create_result_folder(
        &dir,
        &format!(
            "pick another --run-id or continue it with `skill-lift calibrate --resume {}`",
            crate::shell::shell_path(&dir)
        ),
    )?;
    let plan = CalibrationPlan {
        format_version: PLAN_FORMAT_VERSION,
        calibration_id,
        created_at: Utc::now(),
        arm: args.arm,
        repeats: args.repeats,
        template,
    };
    write_json_file(&dir.join(PLAN_FILE), &plan)?;
    Ok(Ok((dir, plan)))
}

/// Run the command; returns the exit code.
pub async fn calibrate(args: CalibrateArgs) -> Result<Outcome, CommandError> {
    if super::matrix::is_matrix(&args.run) {
        return Err(CommandError::input(anyhow!(
            "calibrate measures one runner and model: give one --runner and at most one --model (calibrate each cell of a matrix on its own)"
        )));
    }
    if args.run.stopping.any_given() {
        return Err(CommandError::input(anyhow!(
            "calibrate runs every planned trial of every repeat: --sequential, --round-cases and the budgets (--max-cost-usd, --max-tokens, --max-wall) do not apply to it"
        )));
    }
    if args.run.reuse_baseline.is_some() {
        return Err(CommandError::input(anyhow!(
            "calibrate measures its own A/A repeats: --reuse-baseline does not apply to it"
        )));
    }
    check_flags(&args)?;
    let run = &args.run;
    let (dir, plan) = match &run.resume {
        Some(dir) => (dir.clone(), read_plan(dir)?),
        None => match start_fresh(&args)? {
            Ok(started) => started,
            Err(code) => return Ok(code),
        },
    };
    let dir = super::run::absolute(&dir);
    crate::reporter::report(crate::reporter::Event::CalibrationPlanned {
        calibration_id: plan.calibration_id.clone(),
        arm: plan.arm.describe().to_string(),
        repeats: plan.repeats,
        cases: plan.template.eval_set.case_ids.len(),
        k: plan.template.k,
        trials_per_repeat: plan.template.trials_planned,
        dir: dir.clone(),
    });

    // The model server is started once for all repeats (each repeat finds it running); from
    // then on SIGINT/SIGTERM stop the calibration cleanly (the server included).
    crate::contain::install_interrupt_handler();
    let profile = load_profile(&plan.template.runner.profile_path).map_err(CommandError::input)?;
    let mut server = match crate::pipeline::start_model_server(&profile, &dir.join("server.log"))
        .await?
    {
        Ok(server) => server,
        Err(_) => {
            crate::reporter::report(
                crate::reporter::Event::CalibrationInterruptedStartingServer { dir: dir.clone() },
            );
            return Ok(Outcome::Interrupted);
        }
    };
    let outcome = run_repeats(&args, &dir, &plan).await;
    if let Some(server) = server.as_mut() {
        server.stop().await;
    }
    let (results, last_manifest) = match outcome? {
        Ok(done) => done,
        Err(code) => return Ok(code),
    };

    let record = CalibrationRecord::from_repeats(&last_manifest, &dir, plan.repeats, results)
        .map_err(CommandError::input)?;
    write_json_file(&dir.join(RESULT_FILE), &record)?;
    let markdown = calibration_markdown(&plan, &record);
    crate::disk::write(dir.join("calibration.md"), &markdown)
        .map_err(crate::disk::DiskError::into_io)
        .with_context(|| format!("writing {}", dir.join("calibration.md").display()))
        .map_err(CommandError::infrastructure)?;
    if !run.quiet {
        crate::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    let state = crate::registry::state::state_dir_from_env(run.state.flag())
        .map_err(CommandError::input)?;
    let store = record_calibration(&state, &record)
        .with_context(|| "recording the calibration in the state folder".to_string())
        .map_err(CommandError::infrastructure)?;
    crate::reporter::report(crate::reporter::Event::Calibrated {
        asset: record.asset.clone(),
        headline: record.headline(),
        store,
    });
    if record.repeats == 0 {
        crate::reporter::report(crate::reporter::Event::NoRepeatMeasured);
        return Ok(Outcome::InfrastructureError);
    }
    Ok(Outcome::Success)
}

/// Run (or resume) every repeat in order. `Ok(Err(code))` stops the calibration: an
/// interrupt (130) or a repeat that measured nothing (3, 4).
async fn run_repeats(
    args: &CalibrateArgs,
    dir: &Path,
    plan: &CalibrationPlan,
) -> Result<Result<(Vec<RepeatResult>, Manifest), Outcome>, CommandError> {
    let run = &args.run;
    let mut results = Vec::new();
    let mut last_manifest = plan.template.clone();
    for index in 1..=plan.repeats {
        let id = repeat_id(index);
        let repeat_dir = dir.join(&id);
        if !repeat_dir.join("manifest.json").is_file() {
            if repeat_dir.exists() {
                // Created but never given a manifest (a crash in between): start it afresh.
                std::fs::remove_dir_all(&repeat_dir)
                    .with_context(|| format!("removing {}", repeat_dir.display()))
                    .map_err(CommandError::infrastructure)?;
            }
            let manifest = Manifest {
                run_id: id.clone(),
                created_at: Utc::now(),
                seed: plan.template.seed.wrapping_add(u64::from(index - 1)),
                ..plan.template.clone()
            };
            create_run_folder(dir, &manifest)?;
        }
        crate::reporter::report(crate::reporter::Event::CalibrationRepeat {
            calibration_id: plan.calibration_id.clone(),
            index,
            repeats: plan.repeats,
        });
        let resolved = crate::pipeline::resolve_resume(&repeat_dir)?;
        let prepared = crate::pipeline::prepare(resolved, &execution_settings(run))?;
        let options = RunOptions {
            quiet: run.quiet,
            manage_server: false,
            resuming: repeat_dir.join("trials.jsonl").exists(),
            progress: None,
        };
        let finished = match execute_with_flags(prepared, &repeat_dir, run, options).await? {
            Ok(finished) => finished,
            Err(code) => return Ok(Err(code)),
        };
        if finished.report.interrupted {
            crate::reporter::report(crate::reporter::Event::StoppedByInterrupt {
                command: "calibrate".to_string(),
                dir: dir.to_path_buf(),
            });
            return Ok(Err(Outcome::Interrupted));
        }
        if finished.report.missing > 0 {
            // Why the repeat stopped, where the stop is reported (the breaker's own line may
            // have scrolled away in a long log).
            crate::reporter::report(crate::reporter::Event::RepeatIncomplete {
                missing: finished.report.missing,
                index,
                breaker: finished.report.breaker.clone(),
                dir: dir.to_path_buf(),
            });
            return Ok(Err(Outcome::InfrastructureError));
        }
        let code = exit_code_for(&finished.summary);
        if matches!(code, Outcome::InfrastructureError | Outcome::NothingToRun) {
            crate::pipeline::explain(&finished.summary);
            crate::reporter::report(crate::reporter::Event::RepeatMeasuredNothing {
                index,
                repeat_dir: repeat_dir.clone(),
                dir: dir.to_path_buf(),
            });
            return Ok(Err(code));
        }
        let result = RepeatResult::of_summary(&finished.summary);
        crate::reporter::report(crate::reporter::Event::RepeatMeasured {
            index,
            lift: points(result.estimate),
            ci: (points(result.ci_low), points(result.ci_high)),
            verdict: result.verdict.as_str().to_string(),
            false_verdict: result.is_false_verdict(),
        });
        results.push(result);
        last_manifest = finished.manifest;
    }
    Ok(Ok((results, last_manifest)))
}

/// The calibration's Markdown summary (printed and written as `calibration.md`).
fn calibration_markdown(plan: &CalibrationPlan, record: &CalibrationRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# skill-lift calibrate: `{}` — A/A false-verdict rate {:.1}%\n",
        record.asset,
        record.false_verdict_rate * 100.0
    );
    let _ = writeln!(
        out,
        "**{}**: {} of {} repeats said `improved` or `regressed` although the arms were identical ({}; runner `{}`, model `{}`, K = {}, {} cases).\n",
        record.headline(),
        record.false_verdicts,
        record.repeats,
        record.arm.describe(),
        record.key.runner,
        record.key.model,
        record.key.k,
        plan.template.eval_set.case_ids.len()
    );
    if let Some(spread) = &record.lift_spread {
        let _ = writeln!(
            out,
            "Mean A/A lift {} (0 expected); run-to-run sd {}. A verdict from one run of this suite is trustworthy to about this rate; a lift smaller than about 2 × sd is within this runner's noise.\n",
            points(Some(spread.mean)),
            spread
                .sd
                .map(|sd| format!("{:.1} pp", sd * 100.0))
                .unwrap_or_else(|| "n/a (one repeat)".to_string())
        );
    }
    let _ = writeln!(out, "| repeat | lift | 95% CI | method | p | verdict |");
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for repeat in &record.repeat_results {
        let _ = writeln!(
            out,
            "| {} | {} | [{}, {}] | {} | {} | {} |",
            repeat.run_id,
            points(repeat.estimate),
            points(repeat.ci_low),
            points(repeat.ci_high),
            repeat.method,
            repeat
                .p_value
                .map(|p| format!("{p:.4}"))
                .unwrap_or_else(|| "n/a".to_string()),
            repeat.verdict.as_str()
        );
    }
    if !record.metric_spread.is_empty() {
        let _ = writeln!(out, "\n| metric | mean A/A lift | sd across repeats |");
        let _ = writeln!(out, "|---|---|---|");
        for (metric, spread) in &record.metric_spread {
            let _ = writeln!(
                out,
                "| {metric} | {} | {} |",
                points(Some(spread.mean)),
                spread
                    .sd
                    .map(|sd| format!("{:.1} pp", sd * 100.0))
                    .unwrap_or_else(|| "n/a".to_string())
            );
        }
    }
    let _ = writeln!(
        out,
        "\nRepeats are run folders under `{}` (inspect them with `skill-lift report`).",
        record.calibration_dir.display()
    );
    out
}
