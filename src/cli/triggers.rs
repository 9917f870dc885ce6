//! `skill-lift triggers`: resolve the skill, trigger set, runner (forced into `tools` mode for
//! `openai-chat`, where activation is observable) and decoys; start the model server when the
//! profile has one; replay every query K times (`crate::triggers`); write `triggers.json`,
//! `triggers.md`, `attempts.jsonl` and the transcripts; map the result to an exit code.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use chrono::Utc;
use clap::Args;

use super::CommandError;
use super::Outcome;
use super::flag_groups::RunnerArgs;
use crate::asset::fingerprint::{Calibre, fingerprint};
use crate::asset::load_skill;
use crate::decoys::{DecoySource, prepare_decoys};
use crate::triggers::{
    AttemptSettings, DEFAULT_THRESHOLD, TriggerContext, TriggerGates, TriggerReport,
    TriggerRunnerInfo, TriggerSetInfo, TriggerSetup, analyze, find_trigger_set, load_triggers,
    report_markdown, run_attempts,
};
use crate::workspace::SkillSource;

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
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_THRESHOLD, value_parser = parse_threshold)]
    pub threshold: f64,
    /// Seed of the order each attempt lists the skills in (the target's position balanced over
    /// a query's attempts, as in `run`; `inject` and `tools` modes).
    #[arg(long, value_name = "S", default_value_t = crate::skill_order::DEFAULT_SEED)]
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
    #[arg(long, value_name = "FRACTION", value_parser = parse_threshold)]
    pub min_precision: Option<f64>,
    /// Gate: exit 1 when recall is below this fraction (point estimate).
    #[arg(long, value_name = "FRACTION", value_parser = parse_threshold)]
    pub min_recall: Option<f64>,
    /// Gate: exit 1 when F1 is below this fraction (point estimate).
    #[arg(long, value_name = "FRACTION", value_parser = parse_threshold)]
    pub min_f1: Option<f64>,
    /// Exit 3 (infrastructure error) when more than this fraction of the attempts is
    /// unscoreable.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.1, value_parser = parse_threshold)]
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

fn parse_threshold(value: &str) -> Result<f64, String> {
    let fraction: f64 = value
        .parse()
        .map_err(|_| format!("`{value}` is not a number"))?;
    if (0.0..=1.0).contains(&fraction) {
        Ok(fraction)
    } else {
        Err("must be a fraction between 0 and 1 (0.8 means 80%)".to_string())
    }
}

/// A finished evaluation: its report, folder and exit code.
pub struct TriggersOutcome {
    pub report: TriggerReport,
    pub dir: PathBuf,
    pub code: Outcome,
    /// Why the exit code is not 0, for the terminal and for `vet`.
    pub problem: Option<String>,
}

/// Run the command; returns the exit code.
pub async fn triggers(args: TriggersArgs) -> Result<Outcome, CommandError> {
    let outcome = measure(&args, !args.quiet).await?;
    let json = serde_json::to_string_pretty(&outcome.report).expect("report serializes");
    if !args.quiet {
        match args.format {
            OutputFormat::Markdown => crate::out!("{}", report_markdown(&outcome.report)),
            OutputFormat::Json => crate::outln!("{}", crate::disk::redact::redact_text(&json)),
        }
    }
    if let Some(problem) = &outcome.problem {
        crate::errln!("error: {problem} (exit {})", outcome.code);
    }
    Ok(outcome.code)
}

/// Resolve, run and record one trigger evaluation; the library entry of `triggers` and of
/// `vet`'s triggers step. `progress`: draw a progress bar (on a terminal).
pub async fn measure(args: &TriggersArgs, progress: bool) -> Result<TriggersOutcome, CommandError> {
    let skill = load_skill(&args.skill_dir).map_err(CommandError::input)?;
    for warning in &skill.warnings {
        crate::errln!(
            "warning: {}: {warning}",
            args.skill_dir.join("SKILL.md").display()
        );
    }
    let name = skill.name.as_str();
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(CommandError::input(anyhow!(
            "{}: skill name `{}` cannot name the staged skill folder; set frontmatter `name` to e.g. `my-skill`",
            args.skill_dir.join("SKILL.md").display(),
            skill.name.escape_debug()
        )));
    }
    let calibre: Calibre = args
        .calibre
        .parse()
        .map_err(|e: String| CommandError::input(anyhow!(e)))?;
    let set_path = match &args.triggers {
        Some(path) if path.is_file() => path.clone(),
        Some(path) => {
            return Err(CommandError::input(anyhow!(
                "{}: trigger set not found",
                path.display()
            )));
        }
        None => find_trigger_set(&args.skill_dir).map_err(CommandError::input)?,
    };
    let set =
        load_triggers(&set_path, &args.skill_dir, &skill.name).map_err(CommandError::input)?;
    let mut warnings = set.warnings.clone();
    let profile = args.agent.observing_profile("triggers", "an attempt")?;
    let kind = profile.profile.kind;
    let capabilities = crate::record::RunnerCapabilities::of_profile(&profile.profile);
    let skill_mode = capabilities.skill_delivery.as_str().to_string();
    let model = args.agent.model_of(&profile);
    let decoy_source = if args.no_decoys {
        DecoySource::None
    } else if let Some(dir) = &args.decoys {
        DecoySource::Folder(super::run::absolute(dir))
    } else {
        DecoySource::Builtin
    };
    let decoys = prepare_decoys(&decoy_source).map_err(CommandError::input)?;
    if let Some(decoy) = decoys.skills.iter().find(|d| d.name == skill.name) {
        return Err(CommandError::input(anyhow!(
            "decoy `{}` has the target skill's name; decoys must differ from the target",
            decoy.name
        )));
    }
    let decoy_names: Vec<String> = decoys.skills.iter().map(|d| d.name.clone()).collect();
    for query in &set.queries {
        if let Some(expected) = &query.expected_skill
            && expected != &skill.name
            && !decoy_names.contains(expected)
        {
            warnings.push(format!(
                "query `{}` expects skill `{expected}`, which is not staged (decoys: {}); it can only be missed",
                query.id,
                if decoy_names.is_empty() { "none".to_string() } else { decoy_names.join(", ") }
            ));
        }
    }
    if decoy_names.is_empty() {
        warnings.push(
            "no decoys staged: nothing competes with the target, so precision is measured against doing nothing only"
                .to_string(),
        );
    }
    let print = fingerprint(&args.skill_dir, calibre).map_err(CommandError::input)?;
    let run_id =
        super::result_folder_id(args.run_id.as_deref(), &skill.name, "triggers", "--run-id")?;
    if let Some(root) = &args.workspace_root
        && !root.is_dir()
    {
        return Err(CommandError::input(anyhow!(
            "--workspace-root {}: not a folder",
            root.display()
        )));
    }
    let api_key = super::grading::profile_api_key(&profile)?;
    let credentials = super::grading::runner_secrets(&profile);
    let dir = args.results.out.join(&run_id);
    super::create_result_folder(&dir, "pick another --run-id")?;
    let setup = TriggerSetup {
        run_id: run_id.clone(),
        created_at: Utc::now(),
        skill_name: skill.name.clone(),
        description: skill.description.clone(),
        skill_path: super::run::absolute(&args.skill_dir),
        fingerprint: print.digest.clone(),
        calibre: calibre.name().to_string(),
        trigger_set: TriggerSetInfo {
            path: super::run::absolute(&set.path),
            digest: set.digest.clone(),
            format: set.format,
            queries: set.queries.len(),
            should_trigger: set.positives(),
            should_not_trigger: set.negatives(),
        },
        runner: TriggerRunnerInfo {
            name: profile.name.clone(),
            kind: kind.name().to_string(),
            model: model.clone(),
            skill_mode,
        },
        decoys: decoy_names,
        k: args.k,
        threshold: args.threshold,
        confidence: crate::triggers::CONFIDENCE,
        gates: TriggerGates {
            min_precision: args.min_precision,
            min_recall: args.min_recall,
            min_f1: args.min_f1,
        },
        max_unscoreable: args.max_unscoreable,
    };
    crate::errln!(
        "skill-lift: triggers {} — {} queries ({} should trigger, {} should not) × K={} = {} attempts, runner {} ({}), model {}",
        run_id,
        set.queries.len(),
        set.positives(),
        set.negatives(),
        args.k,
        set.queries.len() * args.k as usize,
        profile.name,
        kind.name(),
        model
    );

    crate::contain::install_interrupt_handler();
    let (runner, server) = crate::pipeline::replay::start_replay_runner(
        &profile,
        api_key,
        &dir,
        args.no_preflight,
        "run",
    )
    .await?;
    let jobs = args
        .jobs
        .map(|j| j as usize)
        .unwrap_or(profile.profile.concurrency);
    let context = Arc::new(TriggerContext {
        dir: dir.clone(),
        runner,
        model,
        target: SkillSource {
            name: skill.name.clone(),
            dir: args.skill_dir.clone(),
            // The trigger set is eval material: never staged, wherever it lies.
            eval_material: crate::asset::eval_material::EvalMaterial::inside(
                &args.skill_dir,
                [set_path.clone()],
            ),
        },
        target_digest: print.digest.clone(),
        calibre,
        decoys: decoys.skills.clone(),
        skill_order: capabilities.skill_delivery.skill_ordering(),
        seed: args.seed,
        timeout: Duration::from_secs_f64(profile.profile.timeout_s),
        workspace_root: args.workspace_root.clone(),
        credentials,
    });
    let queries = Arc::new(set.queries.clone());
    let settings = AttemptSettings {
        k: args.k,
        jobs,
        breaker: args.breaker,
        progress: progress && crate::progress::ProgressDisplay::stderr_is_interactive(),
    };
    let finished = run_attempts(context, Arc::clone(&queries), settings).await;
    crate::pipeline::replay::stop_replay_server(server).await;
    crate::record::redact_logs_in(&dir);
    let orphans = crate::contain::reap_adopted_orphans();
    if orphans > 0 {
        crate::errln!("skill-lift: stopped {orphans} orphaned processes left by killed attempts");
    }
    let finished = finished.map_err(CommandError::infrastructure)?;
    let report = analyze(
        setup,
        &queries,
        &finished.records,
        warnings,
        finished.interrupted,
        finished.wall_s,
    );
    let json = serde_json::to_vec_pretty(&report).expect("report serializes");
    let markdown = report_markdown(&report);
    for (name, bytes) in [
        ("triggers.json", json.as_slice()),
        ("triggers.md", markdown.as_bytes()),
    ] {
        crate::disk::write_atomic(&dir.join(name), bytes).map_err(CommandError::infrastructure)?;
    }
    super::append_step_summary(&markdown);
    super::print_written(&[dir.join("triggers.json"), dir.join("triggers.md")]);
    crate::errln!(
        "skill-lift: {} attempts recorded in {:.1} s; results in {}",
        report.attempts.recorded,
        report.wall_s,
        dir.display()
    );
    let (code, problem) = exit_code(&report, finished.breaker.as_deref());
    Ok(TriggersOutcome {
        report,
        dir,
        code,
        problem,
    })
}

/// The exit code of a finished evaluation and why it is not 0: interrupted (130), stopped by
/// the breaker, too many unscoreable attempts or no query decided (3), a failed gate (1).
pub fn exit_code(report: &TriggerReport, breaker: Option<&str>) -> (Outcome, Option<String>) {
    if report.interrupted {
        return (
            Outcome::Interrupted,
            Some("interrupted; the report covers the attempts recorded".to_string()),
        );
    }
    if let Some(reason) = breaker {
        return (Outcome::InfrastructureError, Some(reason.to_string()));
    }
    let attempts = &report.attempts;
    if attempts.unscoreable_exceeded {
        return (
            Outcome::InfrastructureError,
            Some(format!(
                "{} of {} attempts are unscoreable ({:.1}%, limit {:.1}% — --max-unscoreable); causes: {}; see `reason` in attempts.jsonl",
                attempts.unscoreable,
                attempts.recorded,
                attempts.unscoreable_fraction * 100.0,
                report.setup.max_unscoreable * 100.0,
                attempts
                    .causes
                    .iter()
                    .map(|(cause, n)| format!("{cause} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    }
    if report.summary.total == report.summary.undecided {
        return (
            Outcome::InfrastructureError,
            Some("no query has a scored attempt".to_string()),
        );
    }
    if let Some(gate) = &report.gate
        && !gate.passed
    {
        return (
            Outcome::GateFailed,
            Some(format!("gate failed: {}", gate.failures.join("; "))),
        );
    }
    (Outcome::Success, None)
}
