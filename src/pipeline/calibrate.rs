//! The A/A control (`skill-lift calibrate`): run the eval set R times with both arms staged
//! identically, analyze each repeat exactly as a run is analyzed, and record the suite's
//! empirical false-verdict rate (repeats whose verdict is `improved` or `regressed`) and the
//! spread of the lift across repeats in the state folder, where a later run of the same suite
//! finds it (`crate::features::calibration`).
//!
//! Each repeat is an ordinary run folder, `<out>/<calibration id>/repeat-NN/`, executed by
//! [`super::execute_run`]; `calibration.json` beside them holds the plan, so a calibration
//! started again with [`RunStart::Resume`] continues where an interrupted one stopped.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Failure;
use super::{
    Ending, PipelineError, RunOptions, RunSettings, RunStart, absolute, check_before_spending,
    create_run_folder, ending_of, execute_run, explain, prepare, report_nothing_to_run,
    resolve_fresh, resolve_resume, start_model_server,
};
use crate::disk::{DiskError, write_atomic};
use crate::features::calibration::{
    CalibrationError, CalibrationRecord, RepeatResult, record as record_calibration,
};
use crate::record::{CalibrationArm, Manifest};
use crate::report::tables::points;
use crate::values::reporter::{Event, report};

/// Version of `calibration.json`.
const PLAN_FORMAT_VERSION: u32 = 1;
/// The plan file in a calibration folder.
const PLAN_FILE: &str = "calibration.json";
/// The result file in a calibration folder.
const RESULT_FILE: &str = "calibration-result.json";

/// What a calibration asks for.
pub(crate) struct CalibrationSettings {
    /// The run request every repeat shares: a fresh calibration's inputs, or the calibration
    /// folder to resume; execution and analysis settings (stopping settings are refused, see
    /// [`RefusedFlags`]).
    pub run: RunSettings,
    /// A/A repeats (a fresh calibration).
    pub repeats: u32,
    /// Which identical arms run (a fresh calibration).
    pub arm: CalibrationArm,
    /// The folder that receives the calibration folder (a fresh calibration).
    pub out: PathBuf,
    /// Print no Markdown summary on stdout.
    pub quiet: bool,
}

/// Request settings an A/A control cannot honour, as given on the command line; checked in
/// this order by [`RefusedFlags::check`].
pub(crate) struct RefusedFlags {
    /// More than one runner or model (a matrix).
    pub matrix: bool,
    /// Sequential stopping, round scheduling or budgets.
    pub stopping: bool,
    /// `--reuse-baseline`.
    pub reuse_baseline: bool,
    /// `--shard`.
    pub shard: bool,
    /// A lift gate (`--min-lift`, `--fail-on`).
    pub lift_gates: bool,
    /// Grading flags with `--resume`.
    pub grading_on_resume: bool,
}

impl RefusedFlags {
    /// The first refused setting given, as an error naming it.
    pub(crate) fn check(&self) -> Result<(), CalibrateError> {
        let refused = [
            (self.matrix, CalibrateError::Matrix),
            (self.stopping, CalibrateError::Stopping),
            (self.reuse_baseline, CalibrateError::ReuseBaseline),
            (self.shard, CalibrateError::Shard),
            (self.lift_gates, CalibrateError::LiftGates),
            (self.grading_on_resume, CalibrateError::GradingOnResume),
        ];
        match refused.into_iter().find(|(given, _)| *given) {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }
}

/// Why a calibration cannot run or be recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CalibrateError {
    /// Several runners or models.
    #[error(
        "calibrate measures one runner and model: give one --runner and at most one --model (calibrate each cell of a matrix on its own)"
    )]
    Matrix,
    /// Stopping settings.
    #[error(
        "calibrate runs every planned trial of every repeat: --sequential, --round-cases and the budgets (--max-cost-usd, --max-tokens, --max-wall) do not apply to it"
    )]
    Stopping,
    /// `--reuse-baseline`.
    #[error("calibrate measures its own A/A repeats: --reuse-baseline does not apply to it")]
    ReuseBaseline,
    /// `--shard`.
    #[error("--shard does not apply to calibrate: every repeat runs whole")]
    Shard,
    /// `--min-lift`, `--fail-on`.
    #[error(
        "--min-lift and --fail-on do not apply to calibrate: an A/A control has no lift to gate; use them on `run`"
    )]
    LiftGates,
    /// Grading flags with `--resume`.
    #[error("grading flags are not accepted with --resume: a calibration grades as it started")]
    GradingOnResume,
    /// The folder to resume holds no plan.
    #[error(
        "{}: not a calibration folder (no {PLAN_FILE}); pass a folder written by `skill-lift calibrate`",
        .0.display()
    )]
    NoPlan(PathBuf, #[source] std::io::Error),
    /// The plan cannot be parsed.
    #[error("{}: malformed", .0.display())]
    MalformedPlan(PathBuf, #[source] serde_json::Error),
    /// The plan is newer than this build reads.
    #[error(
        "{}: format version {} is newer than this skill-lift reads ({PLAN_FORMAT_VERSION})",
        .0.display(),
        .1
    )]
    PlanTooNew(PathBuf, u32),
    /// The plan's template is not a plausible manifest.
    #[error("{}: `template`: {}", .0.display(), .1)]
    ImplausibleTemplate(PathBuf, String),
    /// The plan's id cannot name a folder.
    #[error("{}: `calibration_id` `{}` is not a plain folder name", .0.display(), .1)]
    IdNotPlain(PathBuf, String),
    /// The new calibration's folder exists already.
    #[error(
        "{}: folder already exists; pick another --run-id or continue it with `skill-lift calibrate --resume {}`",
        .0.display(),
        crate::values::shell::shell_path(.0)
    )]
    FolderExists(PathBuf),
    /// The calibration's id or folder.
    #[error(transparent)]
    Folder(#[from] super::result_folder::ResultFolderError),
    /// The run pipeline failed (its class decides the ending).
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// The runner profile cannot be read.
    #[error(transparent)]
    Profile(#[from] crate::features::runner::profile::ProfileError),
    /// The repeats do not make a calibration record.
    #[error(transparent)]
    Record(CalibrationError),
    /// The state folder cannot be found.
    #[error(transparent)]
    State(#[from] crate::features::registry::RegistryError),
    /// The record cannot be stored in the state folder.
    #[error("recording the calibration in the state folder")]
    Store(#[source] CalibrationError),
    /// A half-created repeat folder cannot be removed.
    #[error("removing {}", .0.display())]
    RemoveRepeat(PathBuf, #[source] std::io::Error),
    /// A calibration file cannot be written.
    #[error(transparent)]
    Write(#[from] DiskError),
    /// `calibration.md` cannot be written.
    #[error("writing {}", .0.display())]
    WriteMarkdown(PathBuf, #[source] std::io::Error),
}

impl Failure for CalibrateError {
    /// How a calibration that failed so ends: its inputs (input error), else the
    /// infrastructure.
    fn ending(&self) -> Ending {
        match self {
            CalibrateError::Pipeline(error) => match error.class() {
                super::ErrorClass::Input => Ending::InputError,
                super::ErrorClass::Infrastructure => Ending::InfrastructureError,
            },
            CalibrateError::Store(_)
            | CalibrateError::RemoveRepeat(..)
            | CalibrateError::Write(_)
            | CalibrateError::WriteMarkdown(..) => Ending::InfrastructureError,
            _ => Ending::InputError,
        }
    }
}

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

fn read_plan(dir: &Path) -> Result<CalibrationPlan, CalibrateError> {
    let path = dir.join(PLAN_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|error| CalibrateError::NoPlan(dir.to_path_buf(), error))?;
    let plan: CalibrationPlan = serde_json::from_str(&text)
        .map_err(|error| CalibrateError::MalformedPlan(path.clone(), error))?;
    if plan.format_version > PLAN_FORMAT_VERSION {
        return Err(CalibrateError::PlanTooNew(path, plan.format_version));
    }
    // The template names every repeat's folder files (case ids): the rules a run folder's
    // manifest is read under hold for it too.
    if let Some(problem) = crate::record::implausible_manifest(&plan.template) {
        return Err(CalibrateError::ImplausibleTemplate(path, problem));
    }
    if !super::is_plain_folder_name(&plan.calibration_id) {
        return Err(CalibrateError::IdNotPlain(path, plan.calibration_id));
    }
    Ok(plan)
}

fn write_json_file<T: Serialize>(path: &Path, value: &T) -> Result<(), CalibrateError> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("calibration files serialize");
    bytes.push(b'\n');
    Ok(write_atomic(path, &bytes)?)
}

/// The run id of repeat `index` (1-based): its folder name.
fn repeat_id(index: u32) -> String {
    format!("repeat-{index:02}")
}

/// Resolve and check a fresh calibration, create its folder and plan. `Ok(Err(ending))` when
/// there is nothing to run or grade.
fn start_fresh(
    settings: &CalibrationSettings,
    fresh: &super::FreshRun,
) -> Result<Result<(PathBuf, CalibrationPlan), Ending>, CalibrateError> {
    let run = &settings.run;
    let resolved = resolve_fresh(
        fresh,
        settings.arm.design(),
        run.analysis.recorded_gates(),
        run.execution.state.as_deref(),
    )?;
    if let Some(nothing) = check_before_spending(&resolved, run.analysis.method, &run.execution)? {
        return Ok(Err(report_nothing_to_run(nothing)));
    }
    // Credentials and graders are checked before any folder exists.
    let prepared = prepare(resolved, &run.execution)?;
    let mut template = prepared.resolved.manifest.clone();
    let calibration_id = super::result_folder::result_folder_id(
        fresh.run_id.as_deref(),
        &template.asset.name,
        "calibrate",
        "--run-id",
    )?;
    template.run_id = calibration_id.clone();
    let dir = settings.out.join(&calibration_id);
    if dir.exists() {
        return Err(CalibrateError::FolderExists(dir));
    }
    std::fs::create_dir_all(&dir).map_err(|error| {
        super::result_folder::ResultFolderError::Create {
            dir: dir.clone(),
            error,
        }
    })?;
    let plan = CalibrationPlan {
        format_version: PLAN_FORMAT_VERSION,
        calibration_id,
        created_at: Utc::now(),
        arm: settings.arm,
        repeats: settings.repeats,
        template,
    };
    write_json_file(&dir.join(PLAN_FILE), &plan)?;
    Ok(Ok((dir, plan)))
}

/// Run (or resume) a calibration: plan, model server, every repeat, then the record (printed,
/// written beside the repeats and stored in the state folder). How it ends: success, an
/// interrupt, a repeat that measured nothing, or no repeat measured at all.
pub(crate) async fn calibrate(settings: &CalibrationSettings) -> Result<Ending, CalibrateError> {
    let (dir, plan) = match &settings.run.start {
        RunStart::Resume(dir) => (dir.clone(), read_plan(dir)?),
        RunStart::Fresh(fresh) => match start_fresh(settings, fresh)? {
            Ok(started) => started,
            Err(ending) => return Ok(ending),
        },
    };
    let dir = absolute(&dir);
    report(Event::CalibrationPlanned {
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
    crate::features::contain::install_interrupt_handler();
    let profile =
        crate::features::runner::profile::load_profile(&plan.template.runner.profile_path)?;
    let Ok(mut server) = start_model_server(&profile, &dir.join("server.log")).await? else {
        report(Event::CalibrationInterruptedStartingServer { dir: dir.clone() });
        return Ok(Ending::Interrupted);
    };
    let outcome = run_repeats(settings, &dir, &plan).await;
    if let Some(server) = server.as_mut() {
        server.stop().await;
    }
    match outcome? {
        Ok((results, last_manifest)) => record(settings, &dir, &plan, results, &last_manifest),
        Err(ending) => Ok(ending),
    }
}

/// Make the calibration record of the repeats' results: written beside them (JSON and
/// Markdown), printed, and stored in the state folder.
fn record(
    settings: &CalibrationSettings,
    dir: &Path,
    plan: &CalibrationPlan,
    results: Vec<RepeatResult>,
    last_manifest: &Manifest,
) -> Result<Ending, CalibrateError> {
    let record = CalibrationRecord::from_repeats(last_manifest, dir, plan.repeats, results)
        .map_err(CalibrateError::Record)?;
    write_json_file(&dir.join(RESULT_FILE), &record)?;
    let markdown = calibration_markdown(plan, &record);
    let path = dir.join("calibration.md");
    crate::disk::write(&path, &markdown)
        .map_err(|error| CalibrateError::WriteMarkdown(path.clone(), error.into_io()))?;
    if !settings.quiet {
        crate::values::reporter::result(&markdown);
    }
    crate::report::step_summary::append_step_summary(&markdown);
    let state = crate::features::registry::state::state_dir_from_env(
        settings.run.execution.state.as_deref(),
    )?;
    let store = record_calibration(&state, &record).map_err(CalibrateError::Store)?;
    report(Event::Calibrated {
        asset: record.asset.clone(),
        headline: record.headline(),
        store,
    });
    if record.repeats == 0 {
        report(Event::NoRepeatMeasured);
        return Ok(Ending::InfrastructureError);
    }
    Ok(Ending::Success)
}

/// Run (or resume) every repeat in order. `Ok(Err(ending))` stops the calibration: an
/// interrupt, or a repeat that measured nothing.
async fn run_repeats(
    settings: &CalibrationSettings,
    dir: &Path,
    plan: &CalibrationPlan,
) -> Result<Result<(Vec<RepeatResult>, Manifest), Ending>, CalibrateError> {
    let mut results = Vec::new();
    let mut last_manifest = plan.template.clone();
    for index in 1..=plan.repeats {
        match run_repeat(settings, dir, plan, index).await? {
            Ok((result, manifest)) => {
                results.push(result);
                last_manifest = manifest;
            }
            Err(ending) => return Ok(Err(ending)),
        }
    }
    Ok(Ok((results, last_manifest)))
}

/// Run (or resume) repeat `index`: its folder (created from the plan's template when it has
/// no manifest yet), its trials, its analysis. `Ok(Err(ending))` stops the calibration.
async fn run_repeat(
    settings: &CalibrationSettings,
    dir: &Path,
    plan: &CalibrationPlan,
    index: u32,
) -> Result<Result<(RepeatResult, Manifest), Ending>, CalibrateError> {
    let run = &settings.run;
    let repeat_dir = dir.join(repeat_id(index));
    if !repeat_dir.join("manifest.json").is_file() {
        create_repeat_folder(dir, &repeat_dir, plan, index)?;
    }
    report(Event::CalibrationRepeat {
        calibration_id: plan.calibration_id.clone(),
        index,
        repeats: plan.repeats,
    });
    let prepared = prepare(resolve_resume(&repeat_dir)?, &run.execution)?;
    let options = RunOptions {
        quiet: settings.quiet,
        manage_server: false,
        resuming: repeat_dir.join("trials.jsonl").exists(),
        progress: None,
    };
    let Ok(finished) = execute_run(
        prepared,
        &repeat_dir,
        &run.execution,
        &run.analysis,
        options,
    )
    .await?
    else {
        return Ok(Err(Ending::Interrupted));
    };
    if finished.report.interrupted {
        report(Event::StoppedByInterrupt {
            command: "calibrate".to_string(),
            dir: dir.to_path_buf(),
        });
        return Ok(Err(Ending::Interrupted));
    }
    if finished.report.missing > 0 {
        // Why the repeat stopped, where the stop is reported (the breaker's own line may
        // have scrolled away in a long log).
        report(Event::RepeatIncomplete {
            missing: finished.report.missing,
            index,
            breaker: finished.report.breaker.clone(),
            dir: dir.to_path_buf(),
        });
        return Ok(Err(Ending::InfrastructureError));
    }
    let ending = ending_of(&finished.summary);
    if matches!(ending, Ending::InfrastructureError | Ending::NothingToRun) {
        explain(&finished.summary);
        report(Event::RepeatMeasuredNothing {
            index,
            repeat_dir: repeat_dir.clone(),
            dir: dir.to_path_buf(),
        });
        return Ok(Err(ending));
    }
    let result = RepeatResult::of_summary(&finished.summary);
    report(Event::RepeatMeasured {
        index,
        lift: points(result.estimate),
        ci: (points(result.ci_low), points(result.ci_high)),
        verdict: result.verdict.as_str().to_string(),
        false_verdict: result.is_false_verdict(),
    });
    Ok(Ok((result, finished.manifest)))
}

/// Create repeat `index`'s run folder from the plan's template (its own run id, seed and start
/// time); a folder created but never given a manifest (a crash in between) starts afresh.
fn create_repeat_folder(
    dir: &Path,
    repeat_dir: &Path,
    plan: &CalibrationPlan,
    index: u32,
) -> Result<(), CalibrateError> {
    if repeat_dir.exists() {
        std::fs::remove_dir_all(repeat_dir)
            .map_err(|error| CalibrateError::RemoveRepeat(repeat_dir.to_path_buf(), error))?;
    }
    let manifest = Manifest {
        run_id: repeat_id(index),
        created_at: Utc::now(),
        seed: plan.template.seed.wrapping_add(u64::from(index - 1)),
        ..plan.template.clone()
    };
    create_run_folder(dir, &manifest)?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_refused_flag_is_named() {
        let none = RefusedFlags {
            matrix: false,
            stopping: false,
            reuse_baseline: false,
            shard: false,
            lift_gates: false,
            grading_on_resume: false,
        };
        assert!(none.check().is_ok());
        let error = RefusedFlags {
            shard: true,
            lift_gates: true,
            ..none
        }
        .check()
        .unwrap_err();
        assert!(matches!(error, CalibrateError::Shard), "{error}");
        assert_eq!(error.ending(), Ending::InputError);
    }

    #[test]
    fn a_folder_without_a_plan_is_refused_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let error = read_plan(tmp.path()).unwrap_err();
        assert!(
            error.to_string().ends_with(
                "not a calibration folder (no calibration.json); pass a folder written by `skill-lift calibrate`"
            ),
            "{error}"
        );
        assert_eq!(error.ending(), Ending::InputError);
    }
}
