//! `prepare`: a run request made ready to execute. Resolves the inputs (fresh, or the manifest
//! of a resumed run), puts the stopping plan in the manifest, checks everything that can fail on
//! input before anything is spent (nothing to run, nothing to grade, a bad `--method` or
//! `--workspace-root`), looks the suite's calibration up, reads the credential and builds the
//! grader set. [`create_run_folder`] then creates the run folder with its manifest atomically.

use std::path::{Path, PathBuf};

use super::PipelineError;
use super::resolve::{ResolvedRun, is_half_created_run_folder, resolve_fresh, resolve_resume};
use super::settings::{ExecutionSettings, RunSettings, RunStart, StoppingRequest};
use crate::disk::write_atomic;
use crate::features::grade::pipeline::GraderSet;
use crate::record::{Arm, ArmDesign, Manifest, StoppingPlan};
use crate::values::reporter::{Event, report};

/// Why a prepared run has nothing to do (exit 4 on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NothingToRun {
    /// The eval set has no runnable case.
    #[error("the eval set has no active case to run (drafts need --allow-draft)")]
    NoActiveCase,
    /// No case has output checks and no judge or grader is given.
    #[error(
        "nothing would decide pass or fail: no case has output checks (`checks`, or an `expected_output_match` with an `expected_output`) and no --judge or --grader is given"
    )]
    NothingToGrade,
}

/// Report why there is nothing to run; the ending it is.
pub(crate) fn report_nothing_to_run(nothing: NothingToRun) -> super::Ending {
    report(Event::NothingToRun {
        why: nothing.to_string(),
    });
    super::Ending::NothingToRun
}

/// A resolved run with its credential and grader set: everything that can fail on input is
/// checked before a run folder is created.
pub(crate) struct PreparedRun {
    /// The resolved inputs and the manifest.
    pub resolved: ResolvedRun,
    /// The graders (judges, custom graders, deterministic checks).
    pub graders: GraderSet,
    /// The runner's API key, when its profile names one.
    pub api_key: Option<String>,
}

/// The whole preparation of `settings`: resolve (fresh as a paired run, or resumed), apply the
/// stopping plan, check before spending, look the calibration up (fresh runs) and
/// [`prepare`]. `Ok(Err(_))`: nothing to run.
pub(crate) fn prepare_run(
    settings: &RunSettings,
) -> Result<Result<PreparedRun, NothingToRun>, PipelineError> {
    let resuming = settings.start.is_resume();
    let mut resolved = match &settings.start {
        RunStart::Resume(run_dir) => resolve_resume(run_dir)?,
        RunStart::Fresh(fresh) => resolve_fresh(
            fresh,
            ArmDesign::Paired,
            settings.analysis.recorded_gates(),
            settings.execution.state.as_deref(),
        )?,
    };
    apply_stopping(
        &mut resolved.manifest,
        &settings.stopping,
        resolved.profile.profile.price,
        resolved.profile.profile.max_tokens,
        resuming,
    )?;
    if let Some(nothing) =
        check_before_spending(&resolved, settings.analysis.method, &settings.execution)?
    {
        return Ok(Err(nothing));
    }
    if !resuming {
        resolved.manifest.calibration = Some(look_up_calibration(
            &resolved.manifest,
            settings.execution.state.as_deref(),
        ));
    }
    // The calibration line is printed once the run is under way (`super::run`), after the
    // checks that can still stop it: a warning before an error that ends the run misleads.
    Ok(Ok(prepare(resolved, &settings.execution)?))
}

/// The A/A calibration of the suite `manifest` describes, from the state folder (`state`: the
/// `--state` flag), or why there is none (a fresh run and a regrade with new grading record it).
pub(crate) fn look_up_calibration(
    manifest: &Manifest,
    state: Option<&Path>,
) -> crate::record::CalibrationLookup {
    match crate::features::registry::state::state_dir_from_env(state) {
        Ok(state) => crate::features::calibration::lookup(&state, manifest),
        Err(error) => crate::features::calibration::unavailable(
            manifest,
            &format!("no state folder to look the calibration up in ({error})"),
        ),
    }
}

/// Put the stopping plan `request` asks for into `manifest`: a fresh run gets a new plan; a
/// resumed run keeps its recorded plan (its case order and rules), with the budgets given now
/// replacing the recorded ones (a resume may raise a budget that stopped the run). Warns when
/// a cost budget has no `[price]` table to fall back on.
pub(crate) fn apply_stopping(
    manifest: &mut Manifest,
    request: &StoppingRequest,
    price: Option<crate::record::PriceTable>,
    reply_cap_tokens: Option<u64>,
    resuming: bool,
) -> Result<(), PipelineError> {
    if request.sequential.is_some() {
        // With --sequential, --equivalence is the stopping rule's margin, not a fixed-n test.
        manifest.equivalence_margin = None;
    }
    if !request.any_given() && manifest.stopping.is_none() {
        return Ok(());
    }
    if !manifest.arm_design.is_paired() {
        return Err(PipelineError::StoppingOfAnAaControl);
    }
    if request.sequential.is_some()
        && (manifest.arms.as_slice() != Arm::PAIRED.as_slice()
            || manifest.reference() != Arm::WithoutSkill)
    {
        return Err(PipelineError::SequentialArms);
    }
    if request.budgets.max_cost_usd.is_some() && price.is_none() {
        report(Event::warning(format!(
            "--max-cost-usd: the runner profile `{}` has no [price] table; only costs the agent reports count, and the run stops before a round once a trial reports none",
            manifest.runner.name
        )));
    }
    match manifest.stopping.as_mut() {
        Some(plan) if resuming => {
            plan.budgets = plan.budgets.overridden_by(&request.budgets);
            if price.is_some() {
                plan.price = price;
            }
            if reply_cap_tokens.is_some() {
                plan.reply_cap_tokens = reply_cap_tokens;
            }
        }
        _ => {
            manifest.stopping = Some(StoppingPlan::new(
                &manifest.eval_set.case_ids,
                manifest.seed,
                request.round_cases,
                request.sequential,
                request.budgets,
                price,
                reply_cap_tokens,
            ));
        }
    }
    if !resuming
        && let Some(plan) = &manifest.stopping
        && let Some(message) = plan.first_round_refusal(manifest.arms.len(), manifest.k)
    {
        return Err(PipelineError::BudgetBelowFirstRound(message));
    }
    Ok(())
}

/// Checks before spending (and before a run folder exists): what makes the run pointless, an
/// error for a `--method` the design cannot use or a bad `--workspace-root`.
pub(crate) fn check_before_spending(
    resolved: &ResolvedRun,
    method: Option<crate::record::LiftMethod>,
    execution: &ExecutionSettings,
) -> Result<Option<NothingToRun>, PipelineError> {
    // Before any trial runs: a --method the design cannot use is an input error.
    crate::analysis::check_method(&resolved.manifest, method)?;
    if resolved.cases.is_empty() {
        return Ok(Some(NothingToRun::NoActiveCase));
    }
    if !super::grading::anything_to_grade_by(&resolved.cases, &resolved.manifest.grading) {
        return Ok(Some(NothingToRun::NothingToGrade));
    }
    if let Some(root) = &execution.workspace_root
        && !root.is_dir()
    {
        return Err(PipelineError::WorkspaceRoot(root.clone()));
    }
    Ok(None)
}

/// Read the runner's credential and build the grader set (judges, custom graders) of
/// `resolved`.
pub(crate) fn prepare(
    resolved: ResolvedRun,
    execution: &ExecutionSettings,
) -> Result<PreparedRun, PipelineError> {
    let api_key = super::grading::profile_api_key(&resolved.profile)?;
    let graders = super::grading::build_grader_set(
        resolved.manifest.grading.clone(),
        &resolved.judge_profiles,
        super::grading::runner_secrets(&resolved.profile),
        execution.judge_format_retries,
        execution.judge_cache,
        execution.state.as_deref(),
    )?;
    Ok(PreparedRun {
        resolved,
        graders,
        api_key,
    })
}

/// Create the run folder `out/<run id>` with its `manifest.json` atomically: both are written
/// into a temporary folder beside it, which is then renamed into place, so a kill at any moment
/// leaves either no run folder or a complete one (never a folder without a manifest). A half
/// folder left by an older version is replaced.
pub(crate) fn create_run_folder(out: &Path, manifest: &Manifest) -> Result<PathBuf, PipelineError> {
    if out.exists() && !out.is_dir() {
        return Err(PipelineError::OutNotAFolder(out.to_path_buf()));
    }
    let dir = out.join(&manifest.run_id);
    if dir.exists() {
        if is_half_created_run_folder(&dir) {
            report(Event::RestartingEmptyRunFolder { dir: dir.clone() });
            std::fs::remove_dir_all(&dir).map_err(|source| PipelineError::RunFolderIo {
                verb: "removing",
                path: dir.clone(),
                source,
            })?;
        } else {
            return Err(PipelineError::RunFolderExists(dir));
        }
    }
    std::fs::create_dir_all(out).map_err(|source| PipelineError::CreateOut {
        path: out.to_path_buf(),
        source,
    })?;
    let staging = tempfile::Builder::new()
        .prefix(crate::disk::TEMP_PREFIX)
        .tempdir_in(out)
        .map_err(|source| PipelineError::CreateOut {
            path: out.to_path_buf(),
            source,
        })?;
    std::fs::create_dir_all(staging.path().join("transcripts")).map_err(|source| {
        PipelineError::RunFolderIo {
            verb: "creating",
            path: staging.path().to_path_buf(),
            source,
        }
    })?;
    write_manifest(staging.path(), manifest)?;
    let staged = staging.keep();
    if let Err(error) = std::fs::rename(&staged, &dir) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(PipelineError::RunFolderRename { dir, error });
    }
    Ok(dir)
}

/// Write `manifest` into `run_dir/manifest.json` atomically.
pub(crate) fn write_manifest(run_dir: &Path, manifest: &Manifest) -> Result<(), PipelineError> {
    let bytes = serde_json::to_vec_pretty(manifest).expect("manifest serializes");
    write_atomic(&run_dir.join("manifest.json"), &bytes)
        .map_err(|error| PipelineError::Record(error.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_to_run_says_what_is_missing() {
        assert!(
            NothingToRun::NoActiveCase
                .to_string()
                .contains("--allow-draft")
        );
        assert!(
            NothingToRun::NothingToGrade
                .to_string()
                .contains("no --judge or --grader")
        );
    }
}
