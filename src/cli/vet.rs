//! `skill-lift vet`: lint → env → triggers → a paired run sized by `plan` to a stated MDE →
//! registration of the fingerprint and the golden set for monitoring, in one command with one
//! report (`crate::vet`). Each step calls its own command's library code; the paired run is a
//! normal `run` (its folder, summary and baseline-store entries are the same as `run`'s).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::anyhow;
use chrono::Utc;
use clap::{Args, Parser};

use super::CommandError;
use super::Outcome;
use super::flag_groups::RunnerArgs;
use super::triggers::{OutputFormat, TriggersArgs, measure};
use crate::asset::fingerprint::{Calibre, fingerprint, sha256_digest};
use crate::asset::load_skill;
use crate::evalset::{default_eval_path, load_eval_set};
use crate::registry::hosts::find_host;
use crate::registry::scan::{Monitoring, RegisteredSet, register_monitored, registered_elsewhere};
use crate::vet::{
    DEFAULT_MAX_K, DEFAULT_MDE, Decision, VET_FORMAT_VERSION, VetReport, VetStep, VetStepKind,
    size_run, vet_markdown,
};

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

fn fraction(name: &str, value: f64) -> Result<f64, CommandError> {
    if value > 0.0 && value <= 1.0 {
        Ok(value)
    } else {
        Err(CommandError::input(anyhow!(
            "{name} must be a fraction in (0, 1] (0.3 means 30 pp)"
        )))
    }
}

/// Run the command; returns the exit code.
pub async fn vet(args: VetArgs) -> Result<Outcome, CommandError> {
    let started = Instant::now();
    fraction("--mde", args.mde)?;
    fraction("--min-precision", args.min_precision)?;
    fraction("--min-recall", args.min_recall)?;
    let skill = load_skill(&args.skill_dir).map_err(CommandError::input)?;
    let calibre: Calibre = args
        .calibre
        .parse()
        .map_err(|e: String| CommandError::input(anyhow!(e)))?;
    let print = fingerprint(&args.skill_dir, calibre).map_err(CommandError::input)?;
    let state = crate::registry::state::state_dir_from_env(args.state.flag())
        .map_err(CommandError::input)?;
    let host = find_host(&state, &args.host).map_err(CommandError::input)?;
    // Before spending anything: the registration at the end must be possible.
    if let Some(other) = registered_elsewhere(&state, &host.name, &skill.name, &args.skill_dir)
        .map_err(CommandError::input)?
    {
        return Err(CommandError::input(anyhow!(
            "asset `{}` is already registered on host `{}` from {}; vet registers the skill it measured, so pick another --host (e.g. generic) or remove the other copy from the registry",
            skill.name,
            host.name,
            other.display()
        )));
    }
    let vet_id = super::result_folder_id(args.vet_id.as_deref(), &skill.name, "vet", "--vet-id")?;
    let dir = args.results.out.join(&vet_id);
    super::create_result_folder(&dir, "pick another --vet-id")?;
    let profile = args.agent.profile()?;
    let model = args.agent.model_of(&profile);
    let progress = !args.quiet;

    let mut steps = Vec::new();
    let mut stop: Option<(Outcome, String)> = None;
    let say = |step: &VetStep| {
        crate::errln!(
            "skill-lift: vet {}: {} — {}",
            step.step.as_str(),
            step.decision.as_str(),
            step.why
        );
    };

    for step in crate::vet::static_steps(&args.skill_dir, &dir, &profile, args.agent.model()) {
        if step.decision == Decision::Error && stop.is_none() {
            stop = Some((
                Outcome::InputError,
                format!("{}: {}", step.step.as_str(), step.why),
            ));
        }
        say(&step);
        steps.push(step);
    }

    // Triggers.
    let trigger_args = TriggersArgs {
        skill_dir: args.skill_dir.clone(),
        triggers: args.triggers.clone(),
        agent: args.agent.clone(),
        k: args.trigger_attempts,
        threshold: crate::triggers::DEFAULT_THRESHOLD,
        seed: crate::skill_order::DEFAULT_SEED,
        jobs: None,
        decoys: args.decoys.clone(),
        no_decoys: args.no_decoys,
        results: super::flag_groups::ResultsArgs { out: dir.clone() },
        run_id: Some("triggers".to_string()),
        workspace_root: None,
        calibre: args.calibre.clone(),
        min_precision: Some(args.min_precision),
        min_recall: Some(args.min_recall),
        min_f1: None,
        max_unscoreable: 0.1,
        no_preflight: false,
        breaker: 8,
        format: OutputFormat::Markdown,
        quiet: true,
    };
    let trigger_set = match &args.triggers {
        Some(path) => Some(path.clone()),
        None => crate::triggers::find_trigger_set(&args.skill_dir).ok(),
    };
    let triggers_step = match &trigger_set {
        _ if stop.is_some() => VetStep::not_run(
            VetStepKind::Triggers,
            &format!("stopped: {}", stop.as_ref().map(|s| s.1.as_str()).unwrap_or("")),
        ),
        None => VetStep {
            step: VetStepKind::Triggers,
            decision: Decision::NoGo,
            why: "no trigger set: write evals/triggers.json with should-trigger and near-miss should-not-trigger queries (docs/triggers.md), or pass --triggers FILE".to_string(),
            artifacts: Vec::new(),
            details: serde_json::Value::Null,
        },
        Some(_) => match measure(&trigger_args, progress).await {
            Ok(outcome) => {
                let report = &outcome.report;
                let value = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{:.1}%", v * 100.0));
                let numbers = format!(
                    "precision {}, recall {}, F1 {} over {} queries × K = {} ({} confusions)",
                    value(report.precision.map(|p| p.value)),
                    value(report.recall.map(|r| r.value)),
                    value(report.f1.as_ref().map(|f| f.value)),
                    report.results.len(),
                    report.setup.k,
                    report.confusions.len()
                );
                let (decision, why) = match outcome.code {
                    Outcome::Success => (
                        Decision::Go,
                        format!(
                            "{numbers}; at least {:.0}% / {:.0}% required",
                            args.min_precision * 100.0,
                            args.min_recall * 100.0
                        ),
                    ),
                    Outcome::GateFailed => (
                        Decision::NoGo,
                        format!(
                            "{numbers}; {}",
                            report
                                .gate
                                .as_ref()
                                .map(|g| g.failures.join("; "))
                                .unwrap_or_default()
                        ),
                    ),
                    code => {
                        let problem = outcome.problem.clone().unwrap_or_default();
                        stop = Some((code, format!("triggers: {problem}")));
                        (Decision::Error, format!("{numbers}; {problem}"))
                    }
                };
                VetStep {
                    step: VetStepKind::Triggers,
                    decision,
                    why,
                    artifacts: vec![outcome.dir.join("triggers.md")],
                    details: serde_json::json!({
                        "precision": report.precision, "recall": report.recall, "f1": report.f1,
                        "counts": report.counts,
                    }),
                }
            }
            Err(error) => {
                stop = Some((error.code, format!("triggers: {:#}", error.error)));
                VetStep {
                    step: VetStepKind::Triggers,
                    decision: Decision::Error,
                    why: format!("{:#}", error.error),
                    artifacts: Vec::new(),
                    details: serde_json::Value::Null,
                }
            }
        },
    };
    say(&triggers_step);
    steps.push(triggers_step);

    // The paired run.
    let eval_path = args
        .evals
        .clone()
        .unwrap_or_else(|| default_eval_path(&args.skill_dir));
    let golden = if eval_path.is_file() || eval_path.is_dir() {
        Some(load_eval_set(&eval_path, &args.skill_dir).map_err(CommandError::input)?)
    } else {
        None
    };
    let mut run_dir = None;
    let run_step = match (&stop, &golden) {
        (Some((_, why)), _) => VetStep::not_run(VetStepKind::PairedRun, &format!("stopped: {why}")),
        (None, None) => VetStep {
            step: VetStepKind::PairedRun,
            decision: Decision::NoGo,
            why: format!(
                "no golden set at {}: without cases there is no lift to measure (write evals/evals.json, docs/eval-formats.md)",
                eval_path.display()
            ),
            artifacts: Vec::new(),
            details: serde_json::Value::Null,
        },
        (None, Some(set)) => {
            let cases = set.runnable_cases(false).len();
            let sizing = size_run(cases, args.mde, args.max_k);
            crate::errln!(
                "skill-lift: vet paired run: {} cases × 2 arms × K = {} = {} trials (planned MDE {} for a stated MDE of {:.1} pp{})",
                cases,
                sizing.k,
                sizing.trials,
                sizing
                    .planned_mde
                    .map_or("n/a".to_string(), |m| format!("{:.1} pp", m * 100.0)),
                args.mde * 100.0,
                if sizing.reaches_target {
                    ""
                } else {
                    "; not reached within --max-k"
                }
            );
            let mut argv: Vec<String> = vec![
                "run".into(),
                args.skill_dir.display().to_string(),
                "--runner".into(),
                args.agent.runner().to_string(),
                "-k".into(),
                sizing.k.to_string(),
                "--out".into(),
                dir.display().to_string(),
                "--run-id".into(),
                "run".into(),
                "--calibre".into(),
                args.calibre.clone(),
                "--evals".into(),
                eval_path.display().to_string(),
                "--state".into(),
                state.display().to_string(),
                "--quiet".into(),
            ];
            if let Some(model) = args.agent.model() {
                argv.extend(["--model".into(), model.to_string()]);
            }
            if let Some(decoys) = &args.decoys {
                argv.extend(["--decoys".into(), decoys.display().to_string()]);
            }
            if args.no_decoys {
                argv.push("--no-decoys".into());
            }
            let run_args = RunLine::try_parse_from(&argv)
                .map_err(|e| CommandError::input(anyhow!("building the paired run: {e}")))?
                .run;
            let code = match super::run::run(run_args).await {
                Ok(code) => Some(code),
                Err(error) => {
                    stop = Some((error.code, format!("paired run: {:#}", error.error)));
                    None
                }
            };
            let folder = dir.join("run");
            run_dir = folder
                .join("summary.json")
                .is_file()
                .then(|| folder.clone());
            paired_step(&folder, code, &sizing, &mut stop)
        }
    };
    say(&run_step);
    steps.push(run_step);

    // Registration.
    let register_step = match &stop {
        Some((_, why)) => VetStep::not_run(VetStepKind::Register, &format!("stopped: {why}")),
        None => {
            let golden_set = golden.as_ref().map(|set| RegisteredSet {
                path: super::run::absolute(&set.path),
                digest: set.digest.clone(),
                items: set.runnable_cases(false).len(),
            });
            let trigger_registered = trigger_set.as_ref().and_then(|path| {
                let bytes = std::fs::read(path).ok()?;
                let items = crate::triggers::load_triggers(path, &args.skill_dir, &skill.name)
                    .map(|s| s.queries.len())
                    .unwrap_or(0);
                Some(RegisteredSet {
                    path: super::run::absolute(path),
                    digest: sha256_digest(&bytes),
                    items,
                })
            });
            let decision_so_far = VetReport::decide(&steps);
            let monitoring = Monitoring {
                registered_at: Utc::now(),
                vetted_fingerprint: print.digest.clone(),
                golden_set,
                trigger_set: trigger_registered,
                vet_dir: super::run::absolute(&dir),
                decision: decision_so_far.as_str().to_string(),
                runner: profile.name.clone(),
                model: model.clone(),
            };
            match register_monitored(&state, &host, &args.skill_dir, calibre, monitoring) {
                Ok((name, entry)) => VetStep {
                    step: VetStepKind::Register,
                    decision: Decision::Go,
                    why: format!(
                        "`{name}` registered on host `{}` ({}) with fingerprint {}{}; `skill-lift status` lists it, `check` and `regress` read the paired run's verdicts",
                        host.name,
                        crate::registry::scan::registry_path(&state, &host.name).display(),
                        entry.fingerprint,
                        match entry
                            .monitoring
                            .as_ref()
                            .and_then(|m| m.golden_set.as_ref())
                        {
                            Some(set) => format!(
                                " and golden set {} ({} cases)",
                                set.path.display(),
                                set.items
                            ),
                            None => " (no golden set)".to_string(),
                        }
                    ),
                    artifacts: vec![crate::registry::scan::registry_path(&state, &host.name)],
                    details: serde_json::Value::Null,
                },
                Err(error) => {
                    stop = Some((Outcome::InputError, format!("register: {error}")));
                    VetStep {
                        step: VetStepKind::Register,
                        decision: Decision::Error,
                        why: error.to_string(),
                        artifacts: Vec::new(),
                        details: serde_json::Value::Null,
                    }
                }
            }
        }
    };
    say(&register_step);
    steps.push(register_step);
    let _ = run_dir;

    let decision = VetReport::decide(&steps);
    let report = VetReport {
        format_version: VET_FORMAT_VERSION,
        skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
        vet_id,
        created_at: Utc::now(),
        skill_name: skill.name.clone(),
        skill_path: super::run::absolute(&args.skill_dir),
        fingerprint: print.digest.clone(),
        runner: profile.name.clone(),
        model,
        host: host.name.clone(),
        steps,
        decision,
        wall_s: started.elapsed().as_secs_f64(),
    };
    let json = serde_json::to_vec_pretty(&report).expect("vet report serializes");
    let markdown = vet_markdown(&report);
    crate::disk::write_atomic(&dir.join("vet.json"), &json)
        .map_err(CommandError::infrastructure)?;
    crate::disk::write_atomic(&dir.join("vet.md"), markdown.as_bytes())
        .map_err(CommandError::infrastructure)?;
    if !args.quiet {
        match args.format {
            OutputFormat::Markdown => crate::out!("{markdown}"),
            OutputFormat::Json => crate::outln!("{}", String::from_utf8_lossy(&json)),
        }
    }
    super::append_step_summary(&markdown);
    super::print_written(&[dir.join("vet.json"), dir.join("vet.md")]);
    if let Some((code, why)) = stop {
        crate::errln!("error: vet stopped: {why} (exit {code})");
        return Ok(code);
    }
    Ok(match decision {
        Decision::Go => Outcome::Success,
        _ => {
            crate::errln!(
                "skill-lift: vet: NO-GO ({}) (exit {})",
                report
                    .steps
                    .iter()
                    .filter(|s| s.decision != Decision::Go)
                    .map(|s| s.step.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                Outcome::GateFailed
            );
            Outcome::GateFailed
        }
    })
}

/// The paired run's step from its folder's `summary.json` (the documented export) and exit
/// code (`None`: the run ended with an error): go when the verdict is `improved`; an
/// infrastructure or input failure stops the vet.
fn paired_step(
    folder: &Path,
    code: Option<Outcome>,
    sizing: &crate::vet::RunSizing,
    stop: &mut Option<(Outcome, String)>,
) -> VetStep {
    let summary: Option<serde_json::Value> = std::fs::read(folder.join("summary.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let sizing_text = format!(
        "{} cases × K = {} sized for an MDE of {:.0} pp (planned {}){}",
        sizing.cases,
        sizing.k,
        sizing.target_mde * 100.0,
        sizing
            .planned_mde
            .map_or("n/a".to_string(), |m| format!("{:.1} pp", m * 100.0)),
        match sizing.cases_needed {
            Some(n) if !sizing.reaches_target => format!(", not reached: about {n} cases needed"),
            _ => String::new(),
        }
    );
    let Some(summary) = summary else {
        if stop.is_none() {
            *stop = Some((
                match code {
                    Some(code) if code != Outcome::Success => code,
                    _ => Outcome::InfrastructureError,
                },
                format!("paired run: no summary.json in {}", folder.display()),
            ));
        }
        return VetStep {
            step: VetStepKind::PairedRun,
            decision: Decision::Error,
            why: format!(
                "{sizing_text}; the run did not finish (exit {}): {}",
                code.map_or(-1, Outcome::code),
                stop.as_ref().map(|s| s.1.as_str()).unwrap_or("")
            ),
            artifacts: Vec::new(),
            details: serde_json::Value::Null,
        };
    };
    let lift = &summary["lift"];
    let verdict = lift["verdict"].as_str().unwrap_or("unknown").to_string();
    let pp = |v: &serde_json::Value| {
        v.as_f64()
            .map_or("n/a".to_string(), |v| format!("{:+.1} pp", v * 100.0))
    };
    let numbers = format!(
        "lift {} [{}, {}] ({}), verdict {verdict}; {sizing_text}",
        pp(&lift["estimate"]),
        pp(&lift["ci_low"]),
        pp(&lift["ci_high"]),
        lift["method"].as_str().unwrap_or("-")
    );
    let (decision, why) = match code {
        Some(
            code @ (Outcome::InfrastructureError | Outcome::NothingToRun | Outcome::Interrupted),
        ) => {
            *stop = Some((code, format!("paired run exited {code}")));
            (Decision::Error, format!("{numbers}; the run exited {code}"))
        }
        _ if verdict == "improved" => (Decision::Go, numbers),
        _ => {
            let reasons: Vec<&str> = lift["verdict_reasons"]
                .as_array()
                .map(|r| r.iter().filter_map(|r| r["message"].as_str()).collect())
                .unwrap_or_default();
            (
                Decision::NoGo,
                if reasons.is_empty() {
                    numbers
                } else {
                    format!("{numbers} ({})", reasons.join("; "))
                },
            )
        }
    };
    VetStep {
        step: VetStepKind::PairedRun,
        decision,
        why,
        artifacts: vec![folder.join("report.md")],
        details: serde_json::json!({"lift": lift, "sizing": sizing}),
    }
}
