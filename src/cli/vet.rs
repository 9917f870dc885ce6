//! `skill-lift vet`: its flags, mapped to [`VetSettings`]; the vet itself is
//! `crate::pipeline::vet::vet`, whose paired run is a normal `run` started here from its
//! request, and its ending maps to the exit code here.

use std::path::PathBuf;

use clap::{Args, Parser};

use super::flag_groups::RunnerArgs;
use super::triggers::OutputFormat;
use super::{CommandError, Outcome};
use crate::pipeline::vet::report::{DEFAULT_MAX_K, DEFAULT_MDE};
use crate::pipeline::vet::{PairedRunEnd, PairedRunRequest, VetError, VetSettings, vet as run_vet};

/// Flags of `skill-lift vet`.
#[derive(Debug, Args)]
#[command(
    mut_arg("runners", |arg| super::flag_groups::RunnerArgs::single(arg).help("Runner profile for the triggers step and the paired run: a name from runners/ or a .toml path")),
    mut_arg("models", super::flag_groups::RunnerArgs::single),
    mut_arg("state", |arg| arg.help("State folder (registry and baseline store; default: $SKILL_LIFT_HOME, else ~/.skill-lift)")),
    mut_arg("out", |arg| arg.help("Folder that receives the vet folder (which holds the triggers and run folders)"))
)]
pub struct VetArgs {
    /// The skill folder (holds SKILL.md).
    pub skill_dir: PathBuf,
    #[command(flatten)]
    pub agent: RunnerArgs,
    /// Golden set of the paired run (default: SKILL_DIR/evals/evals.json).
    #[arg(long, value_name = "FILE")]
    pub evals: Option<PathBuf>,
    /// Trigger set (default: as `skill-lift triggers` finds it).
    #[arg(long, value_name = "FILE")]
    pub triggers: Option<PathBuf>,
    /// Attempts per trigger query.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trigger_attempts: u32,
    /// The triggers step is go when precision reaches this fraction (point estimate).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.8)]
    pub min_precision: f64,
    /// The triggers step is go when recall reaches this fraction (point estimate).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.8)]
    pub min_recall: f64,
    /// The lift the paired run is sized to detect (fraction, 0.3 = 30 pp; α = 0.05, power
    /// 0.8, the `plan` variance defaults).
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_MDE)]
    pub mde: f64,
    /// The most attempts per case the sizing may choose.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_K, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_k: u32,
    /// Folder of decoy skills replacing the built-in four (triggers and the paired run).
    #[arg(long, value_name = "DIR", conflicts_with = "no_decoys")]
    pub decoys: Option<PathBuf>,
    /// Stage no decoys.
    #[arg(long)]
    pub no_decoys: bool,
    #[command(flatten)]
    pub results: super::flag_groups::ResultsArgs,
    /// The vet folder's name (default: time, skill, `vet` and a random suffix).
    #[arg(long, value_name = "ID")]
    pub vet_id: Option<String>,
    /// Host whose registry receives the skill (what `status` shows).
    #[arg(
        long,
        value_name = "NAME",
        env = "SKILL_LIFT_HOST",
        default_value = "claude-code"
    )]
    pub host: String,
    #[command(flatten)]
    pub state: super::flag_groups::StateArgs,
    /// Fingerprint calibre: v4-no-eval-material (leaves EVAL.md and eval sets out), v3-agent-skills or v2-capability-surface.
    #[arg(long, value_name = "NAME", default_value = "v4-no-eval-material")]
    pub calibre: String,
    /// What to print on stdout: markdown (the report) or json (vet.json).
    #[arg(long, value_name = "FORMAT", default_value = "markdown")]
    pub format: OutputFormat,
    /// No progress bars and no report on stdout.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `skill-lift run`'s flags parsed from an argument list (the paired step runs a normal run).
#[derive(Debug, Parser)]
#[command(name = "run")]
struct RunLine {
    #[command(flatten)]
    run: super::RunArgs,
}

/// The vet `args` ask for.
fn settings(args: VetArgs) -> VetSettings {
    VetSettings {
        runner: args.agent.runner().to_string(),
        model: args.agent.model().map(str::to_string),
        skill_dir: args.skill_dir,
        evals: args.evals,
        triggers: args.triggers,
        trigger_attempts: args.trigger_attempts,
        min_precision: args.min_precision,
        min_recall: args.min_recall,
        mde: args.mde,
        max_k: args.max_k,
        decoys: args.decoys,
        no_decoys: args.no_decoys,
        out: args.results.out,
        vet_id: args.vet_id,
        host: args.host,
        state: args.state.flag().map(PathBuf::from),
        calibre: args.calibre,
        progress: !args.quiet,
        stdout_json: (!args.quiet).then_some(args.format == OutputFormat::Json),
    }
}

/// Run the command; returns the exit code.
pub(super) async fn vet(args: VetArgs) -> Result<Outcome, CommandError> {
    let finished = run_vet(&settings(args), paired_run)
        .await
        .map_err(CommandError::failed)?;
    let ending = finished.ending();
    finished.report_ending(ending.code());
    Ok(ending)
}

/// The paired run: `skill-lift run` with the flags the request stands for, quiet.
async fn paired_run(request: PairedRunRequest) -> Result<PairedRunEnd, VetError> {
    let line = RunLine::try_parse_from(request.run_argv())
        .map_err(|e| VetError::PairedRunFlags(e.to_string()))?;
    Ok(match super::run::run(line.run).await {
        Ok(ending) => PairedRunEnd::Exited {
            ending,
            exit: ending.code(),
        },
        Err(error) => PairedRunEnd::Failed {
            ending: error.code,
            error: format!("{:#}", error.error),
        },
    })
}
