//! `skill-lift calibrate SKILL_DIR [run flags]`: the A/A control. Runs the eval set R times
//! with both arms staged identically (both without the target by default, `--arm with-skill`
//! for both with it) and records the suite's false-verdict rate and run-to-run spread
//! (`crate::pipeline::calibrate`); `calibrate --resume DIR` continues a calibration.

use clap::Args;

use super::run::run_settings;
use super::{CommandError, Outcome, RunArgs};
use crate::features::calibration::DEFAULT_REPEATS;
use crate::pipeline::calibrate::{CalibrationSettings, RefusedFlags};
use crate::record::CalibrationArm;

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

/// Run the command: refuse what an A/A control cannot honour, then calibrate.
pub(super) async fn calibrate(args: CalibrateArgs) -> Result<Outcome, CommandError> {
    let run = &args.run;
    if run.monitor {
        return Err(CommandError::input(anyhow::anyhow!(
            "--monitor is not accepted by calibrate: an A/A control measures no suite to monitor; register the skill with `skill-lift run SKILL_DIR --monitor` or `skill-lift vet`"
        )));
    }
    RefusedFlags {
        matrix: crate::pipeline::run_matrix::is_matrix(&run.agent.runners, &run.agent.models),
        stopping: run.stopping.any_given(),
        reuse_baseline: run.reuse_baseline.is_some(),
        shard: run.shard.is_some(),
        lift_gates: run.analysis.min_lift.is_some() || !run.analysis.fail_on.is_empty(),
        grading_on_resume: run.resume.is_some() && run.grading.any_given(),
    }
    .check()
    .map_err(CommandError::failed)?;
    let settings = CalibrationSettings {
        run: run_settings(run)?,
        repeats: args.repeats,
        arm: args.arm,
        out: run.results.out.clone(),
        quiet: run.quiet,
    };
    crate::pipeline::calibrate::calibrate(&settings)
        .await
        .map_err(CommandError::failed)
}
