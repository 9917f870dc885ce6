//! `skill-lift triggers`: its flags, mapped to [`TriggersSettings`]; the evaluation itself is
//! `crate::pipeline::triggers::measure`, and its ending maps to the exit code here.

use std::path::PathBuf;

use clap::Args;

use super::flag_groups::RunnerArgs;
use super::{CommandError, Outcome};
use crate::features::triggers::{DEFAULT_THRESHOLD, TriggerGates};
use crate::pipeline::triggers::{TriggersSettings, decoy_source, measure, render_report};

/// Flags of `skill-lift triggers`.
#[derive(Debug, Args, Clone)]
#[command(
    mut_arg("runners", |arg| super::flag_groups::RunnerArgs::single(arg).help("Runner profile: a name from runners/ or a .toml path. `openai-chat` profiles run in `tools` mode here (activation is not observable with every skill injected)")),
    mut_arg("models", super::flag_groups::RunnerArgs::single),
)]
pub struct TriggersArgs {
    /// The skill folder (holds SKILL.md).
    pub skill_dir: PathBuf,
    /// Trigger set: a trigger list `[{"query", "should_trigger"}]` (skill-creator, or
    /// skill-lift's triggers.json) or golden cases with `should_trigger` (default: the first of
    /// SKILL_DIR/evals/triggers.json, trigger-eval.json, trigger_eval.json,
    /// trigger-evals.json, trigger_evals.json, then evals.json).
    #[arg(long, value_name = "FILE")]
    pub triggers: Option<PathBuf>,
    #[command(flatten)]
    pub agent: RunnerArgs,
    /// Attempts per query.
    #[arg(short = 'k', long = "attempts", alias = "k", value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub k: u32,
    /// A query counts as triggered when the target was activated in at least this share of
    /// its scored attempts.
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_THRESHOLD, value_parser = crate::features::triggers::parse_fraction)]
    pub threshold: f64,
    /// Seed of the order each attempt lists the skills in (the target's position balanced over
    /// a query's attempts, as in `run`; `inject` and `tools` modes).
    #[arg(long, value_name = "S", default_value_t = crate::analysis::skill_order::DEFAULT_SEED)]
    pub seed: u64,
    /// Attempts in flight at once (default: the profile's `concurrency`).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub jobs: Option<u32>,
    /// Folder of decoy skills replacing the built-in four.
    #[arg(long, value_name = "DIR", conflicts_with = "no_decoys")]
    pub decoys: Option<PathBuf>,
    /// Stage no decoys (then nothing competes with the target).
    #[arg(long)]
    pub no_decoys: bool,
    #[command(flatten)]
    pub results: super::flag_groups::ResultsArgs,
    /// Result folder name (default: time, skill, `triggers` and a random suffix).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Folder for attempt workspaces (default: the system temporary folder).
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,
    /// Fingerprint calibre: v4-no-eval-material (leaves EVAL.md and eval sets out), v3-agent-skills or v2-capability-surface.
    #[arg(long, value_name = "NAME", default_value = "v4-no-eval-material")]
    pub calibre: String,
    /// Gate: exit 1 when precision is below this fraction (point estimate).
    #[arg(long, value_name = "FRACTION", value_parser = crate::features::triggers::parse_fraction)]
    pub min_precision: Option<f64>,
    /// Gate: exit 1 when recall is below this fraction (point estimate).
    #[arg(long, value_name = "FRACTION", value_parser = crate::features::triggers::parse_fraction)]
    pub min_recall: Option<f64>,
    /// Gate: exit 1 when F1 is below this fraction (point estimate).
    #[arg(long, value_name = "FRACTION", value_parser = crate::features::triggers::parse_fraction)]
    pub min_f1: Option<f64>,
    /// Exit 3 (infrastructure error) when more than this fraction of the attempts is
    /// unscoreable.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.1, value_parser = crate::features::triggers::parse_fraction)]
    pub max_unscoreable: f64,
    /// Skip the pre-flight check (the runner answers before the first attempt).
    #[arg(long)]
    pub no_preflight: bool,
    /// Circuit breaker: stop after N attempts in a row failed for infrastructure reasons
    /// (exit 3); 0 disables it.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub breaker: usize,
    /// What to print on stdout: markdown (the report) or json (triggers.json).
    #[arg(long, value_name = "FORMAT", default_value = "markdown")]
    pub format: OutputFormat,
    /// No progress bar and no report on stdout.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// What `triggers` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Markdown,
    Json,
}

/// The evaluation `args` ask for.
fn settings(args: &TriggersArgs) -> TriggersSettings {
    TriggersSettings {
        skill_dir: args.skill_dir.clone(),
        triggers: args.triggers.clone(),
        runner: args.agent.runner().to_string(),
        model: args.agent.model().map(str::to_string),
        k: args.k,
        threshold: args.threshold,
        seed: args.seed,
        jobs: args.jobs,
        decoys: decoy_source(args.no_decoys, args.decoys.as_deref()),
        out: args.results.out.clone(),
        run_id: args.run_id.clone(),
        workspace_root: args.workspace_root.clone(),
        calibre: args.calibre.clone(),
        gates: TriggerGates {
            min_precision: args.min_precision,
            min_recall: args.min_recall,
            min_f1: args.min_f1,
        },
        max_unscoreable: args.max_unscoreable,
        no_preflight: args.no_preflight,
        breaker: args.breaker,
        progress: !args.quiet,
    }
}

/// Run the command; returns the exit code.
pub(super) async fn triggers(args: TriggersArgs) -> Result<Outcome, CommandError> {
    let finished = measure(&settings(&args))
        .await
        .map_err(CommandError::failed)?;
    if !args.quiet {
        let json = args.format == OutputFormat::Json;
        crate::values::reporter::result(&render_report(&finished.report, json));
    }
    let ending = finished.ending.ending();
    finished.ending.report_problem(ending.code());
    Ok(ending)
}
