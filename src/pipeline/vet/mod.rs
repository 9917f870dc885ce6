//! `skill-lift vet` as a workflow ([`vet`]): lint → env → triggers → a paired run sized by
//! `plan` to a stated MDE → registration of the fingerprint and the golden set for monitoring,
//! in one report (`crate::pipeline::vet::report`). Each step calls its own command's library code; the paired run
//! is a normal `run`, which the caller starts from a [`PairedRunRequest`] (its folder, summary
//! and baseline-store entries are the same as `run`'s).

pub(crate) mod report;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::Utc;

use super::Ending;
use super::ending::error_chain;
use super::result_folder::{ResultFolderError, create_result_folder, result_folder_id};
use super::triggers::{TriggersEnding, TriggersSettings, measure};
use crate::features::asset::fingerprint::{Calibre, fingerprint, sha256_digest};
use crate::features::asset::{Skill, load_skill};
use crate::features::evalset::{EvalSet, default_eval_path, load_eval_set};
use crate::features::registry::hosts::{HostProfile, find_host};
use crate::features::registry::scan::{
    MonitoredSuite, Monitoring, RegisteredBy, RegisteredSet, register_monitored,
    registered_elsewhere, registry_path,
};
use crate::features::runner::LoadedProfile;
use crate::pipeline::vet::report::{
    Decision, RunSizing, VET_FORMAT_VERSION, VetReport, VetStep, VetStepKind, size_run,
    vet_markdown,
};
use crate::values::reporter::{Event, report};

/// What one vet asks for (`skill-lift vet`'s flags, checked).
#[derive(Debug, Clone)]
pub(crate) struct VetSettings {
    /// The skill folder (holds SKILL.md).
    pub skill_dir: PathBuf,
    /// The runner profile of the triggers step and the paired run.
    pub runner: String,
    /// The model, overriding the profile's.
    pub model: Option<String>,
    /// The golden set of the paired run (default: the skill's `evals/evals.json`).
    pub evals: Option<PathBuf>,
    /// The trigger set (default: as `skill-lift triggers` finds it).
    pub triggers: Option<PathBuf>,
    /// Attempts per trigger query.
    pub trigger_attempts: u32,
    /// The triggers step is go from this precision.
    pub min_precision: f64,
    /// The triggers step is go from this recall.
    pub min_recall: f64,
    /// The lift the paired run is sized to detect.
    pub mde: f64,
    /// The most attempts per case the sizing may choose.
    pub max_k: u32,
    /// A folder of decoys replacing the built-in ones.
    pub decoys: Option<PathBuf>,
    /// Stage no decoys.
    pub no_decoys: bool,
    /// Folder that receives the vet folder.
    pub out: PathBuf,
    /// The vet folder's name (default: time, skill, `vet`, a random suffix).
    pub vet_id: Option<String>,
    /// The host whose registry receives the skill.
    pub host: String,
    /// The state folder given (`--state`), else `$SKILL_LIFT_HOME` or `~/.skill-lift`.
    pub state: Option<PathBuf>,
    /// The fingerprint calibre's name.
    pub calibre: String,
    /// Draw progress bars.
    pub progress: bool,
    /// Write the result on stdout: `Some(true)` as JSON (`vet.json`), `Some(false)` as
    /// Markdown, `None`: nothing.
    pub stdout_json: Option<bool>,
}

/// The paired run the caller starts as a normal `skill-lift run` (quiet).
#[derive(Debug, Clone)]
pub(crate) struct PairedRunRequest {
    /// The skill folder.
    pub skill_dir: PathBuf,
    /// The runner profile.
    pub runner: String,
    /// The model, when given.
    pub model: Option<String>,
    /// Attempts per case, as sized.
    pub k: u32,
    /// The folder that receives the run folder.
    pub out: PathBuf,
    /// The run folder's name.
    pub run_id: String,
    /// The calibre's name.
    pub calibre: String,
    /// The golden set.
    pub evals: PathBuf,
    /// The state folder.
    pub state: PathBuf,
    /// A folder of decoys, when given.
    pub decoys: Option<PathBuf>,
    /// Stage no decoys.
    pub no_decoys: bool,
}

impl PairedRunRequest {
    /// The paired run as `skill-lift run` arguments (program name first), quiet.
    pub(crate) fn run_argv(&self) -> Vec<String> {
        let mut argv: Vec<String> = vec![
            "run".into(),
            self.skill_dir.display().to_string(),
            "--runner".into(),
            self.runner.clone(),
            "-k".into(),
            self.k.to_string(),
            "--out".into(),
            self.out.display().to_string(),
            "--run-id".into(),
            self.run_id.clone(),
            "--calibre".into(),
            self.calibre.clone(),
            "--evals".into(),
            self.evals.display().to_string(),
            "--state".into(),
            self.state.display().to_string(),
            "--quiet".into(),
        ];
        if let Some(model) = &self.model {
            argv.extend(["--model".into(), model.clone()]);
        }
        if let Some(decoys) = &self.decoys {
            argv.extend(["--decoys".into(), decoys.display().to_string()]);
        }
        if self.no_decoys {
            argv.push("--no-decoys".into());
        }
        argv
    }
}

/// How the paired run ended, as the command that ran it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PairedRunEnd {
    /// It returned: its ending and exit code.
    Exited {
        /// How it ended.
        ending: Ending,
        /// Its exit code (quoted in the step's `why`).
        exit: i32,
    },
    /// It ended with an error: its class and its message chain.
    Failed {
        /// The error's class.
        ending: Ending,
        /// The error with its causes.
        error: String,
    },
}

/// Why a vet could not start, go on or be recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VetError {
    /// The skill cannot be read.
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    /// An unknown calibre.
    #[error("{0}")]
    Calibre(String),
    /// The skill cannot be fingerprinted.
    #[error(transparent)]
    Fingerprint(#[from] crate::features::asset::fingerprint::FingerprintError),
    /// The state folder, host or registry cannot be read.
    #[error(transparent)]
    Registry(#[from] crate::features::registry::RegistryError),
    /// The skill is registered on the host from another folder.
    #[error(
        "asset `{name}` is already registered on host `{host}` from {}; vet registers the skill it measured, so pick another --host (e.g. generic) or remove the other copy from the registry",
        .other.display()
    )]
    RegisteredElsewhere {
        /// The skill's name.
        name: String,
        /// The host.
        host: String,
        /// The folder registered.
        other: PathBuf,
    },
    /// The vet folder cannot be named or created.
    #[error(transparent)]
    Folder(#[from] ResultFolderError),
    /// The runner profile cannot be found or read.
    #[error(transparent)]
    Profile(#[from] crate::features::runner::profile::ProfileError),
    /// The golden set cannot be read.
    #[error(transparent)]
    EvalSet(#[from] crate::features::evalset::EvalSetError),
    /// The paired run's flags cannot be built.
    #[error("building the paired run: {0}")]
    PairedRunFlags(String),
    /// `vet.json` or `vet.md` cannot be written.
    #[error(transparent)]
    Write(#[from] crate::disk::DiskError),
    /// A fraction setting (named by its flag) is not in (0, 1].
    #[error("{0} must be a fraction in (0, 1] (0.3 means 30 pp)")]
    Fraction(&'static str),
}

impl VetError {
    /// The error's class: a write that failed is infrastructure, the rest input.
    pub(crate) fn ending(&self) -> Ending {
        match self {
            VetError::Write(_) => Ending::InfrastructureError,
            _ => Ending::InputError,
        }
    }
}

impl super::Failure for VetError {
    fn ending(&self) -> Ending {
        VetError::ending(self)
    }
}

/// Why the vet stopped before its last step: the class of the failure and what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VetStop {
    /// How the vet ends.
    pub ending: Ending,
    /// What stopped it (`triggers: …`, `paired run: …`).
    pub why: String,
}

/// A recorded vet: its report and, when a step stopped it, why.
pub(crate) struct VetFinished {
    /// The report (`vet.json`).
    pub report: VetReport,
    /// What stopped the vet, when something did.
    pub stop: Option<VetStop>,
}

impl VetFinished {
    /// How the vet ended: a step's stop, else go (success) or no-go (a failed gate).
    pub(crate) fn ending(&self) -> Ending {
        match &self.stop {
            Some(stop) => stop.ending,
            None if self.report.decision == Decision::Go => Ending::Success,
            None => Ending::GateFailed,
        }
    }

    /// Report why the vet did not end go (what stopped it, or the steps that were not go),
    /// quoting `exit`, the exit code of [`Self::ending`].
    pub(crate) fn report_ending(&self, exit: i32) {
        if let Some(stop) = &self.stop {
            let problem = format!("vet stopped: {}", stop.why);
            report(Event::Failed { problem, exit });
        } else if self.report.decision != Decision::Go {
            let steps = steps_not_go(&self.report);
            report(Event::VetNoGo { steps, exit });
        }
    }
}

/// What the vet runs on, resolved before its folder exists.
struct Setup {
    skill: Skill,
    calibre: Calibre,
    digest: String,
    state: PathBuf,
    host: HostProfile,
    vet_id: String,
    dir: PathBuf,
    profile: LoadedProfile,
    model: String,
}

/// The steps so far and what stopped the vet, reporting each step as it is decided.
#[derive(Default)]
struct Steps {
    steps: Vec<VetStep>,
    stop: Option<VetStop>,
}

impl Steps {
    fn push(&mut self, step: VetStep) {
        report(Event::VetStepDecided {
            step: step.step.as_str(),
            decision: step.decision.as_str(),
            why: step.why.clone(),
        });
        self.steps.push(step);
    }

    fn stop(&mut self, ending: Ending, why: String) {
        self.stop = Some(VetStop { ending, why });
    }

    fn stopped(&self) -> Option<String> {
        self.stop.as_ref().map(|s| format!("stopped: {}", s.why))
    }
}

/// Run the vet: its steps, its report (`vet.json`, `vet.md`, the result on stdout as asked,
/// the job summary). `paired_run` runs the paired run as `skill-lift run` does.
pub(crate) async fn vet<F, Fut>(
    settings: &VetSettings,
    paired_run: F,
) -> Result<VetFinished, VetError>
where
    F: FnOnce(PairedRunRequest) -> Fut,
    Fut: Future<Output = Result<PairedRunEnd, VetError>>,
{
    let started = Instant::now();
    for (flag, value) in [
        ("--mde", settings.mde),
        ("--min-precision", settings.min_precision),
        ("--min-recall", settings.min_recall),
    ] {
        if !(value > 0.0 && value <= 1.0) {
            return Err(VetError::Fraction(flag));
        }
    }
    let setup = set_up(settings)?;
    let mut steps = Steps::default();
    for step in crate::pipeline::vet::report::static_steps(
        &settings.skill_dir,
        &setup.dir,
        &setup.profile,
        settings.model.as_deref(),
    ) {
        if step.decision == Decision::Error && steps.stop.is_none() {
            let why = format!("{}: {}", step.step.as_str(), step.why);
            steps.stop(Ending::InputError, why);
        }
        steps.push(step);
    }
    let trigger_set = match &settings.triggers {
        Some(path) => Some(path.clone()),
        None => crate::features::triggers::find_trigger_set(&settings.skill_dir).ok(),
    };
    let step = triggers_step(settings, &setup, trigger_set.is_some(), &mut steps).await;
    steps.push(step);
    let eval_path = settings
        .evals
        .clone()
        .unwrap_or_else(|| default_eval_path(&settings.skill_dir));
    let golden = if eval_path.is_file() || eval_path.is_dir() {
        Some(load_eval_set(&eval_path, &settings.skill_dir)?)
    } else {
        None
    };
    let step = match (steps.stopped(), &golden) {
        (Some(why), _) => VetStep::not_run(VetStepKind::PairedRun, &why),
        (None, None) => no_golden_set(&eval_path),
        (None, Some(set)) => {
            run_step(settings, &setup, set, &eval_path, &mut steps, paired_run).await?
        }
    };
    steps.push(step);
    let step = match steps.stopped() {
        Some(why) => VetStep::not_run(VetStepKind::Register, &why),
        None => register_step(settings, &setup, golden.as_ref(), trigger_set, &mut steps),
    };
    steps.push(step);
    let report = record(settings, setup, steps.steps, started)?;
    Ok(VetFinished {
        report,
        stop: steps.stop,
    })
}

/// Everything checked before anything is spent: the skill, calibre, fingerprint, state
/// folder, host, that the registration at the end is possible, the vet folder (created) and
/// the runner profile.
fn set_up(settings: &VetSettings) -> Result<Setup, VetError> {
    let skill = load_skill(&settings.skill_dir)?;
    let calibre: Calibre = settings
        .calibre
        .parse()
        .map_err(|e| VetError::Calibre(ToString::to_string(&e)))?;
    let digest = fingerprint(&settings.skill_dir, calibre)?.digest;
    let state = crate::features::registry::state::state_dir_from_env(settings.state.as_deref())?;
    let host = find_host(&state, &settings.host)?;
    // Before spending anything: the registration at the end must be possible.
    if let Some(other) = registered_elsewhere(&state, &host.name, &skill.name, &settings.skill_dir)?
    {
        return Err(VetError::RegisteredElsewhere {
            name: skill.name.clone(),
            host: host.name.clone(),
            other,
        });
    }
    let vet_id = result_folder_id(settings.vet_id.as_deref(), &skill.name, "vet", "--vet-id")?;
    let dir = settings.out.join(&vet_id);
    create_result_folder(&dir, "pick another --vet-id")?;
    let path = crate::features::runner::profile::resolve_profile_path(&settings.runner)?;
    let profile = crate::features::runner::profile::load_profile(&path)?;
    let model = settings
        .model
        .clone()
        .unwrap_or_else(|| profile.profile.model.clone());
    Ok(Setup {
        skill,
        calibre,
        digest,
        state,
        host,
        vet_id,
        dir,
        profile,
        model,
    })
}

/// The triggers step: `skill-lift triggers` into `<vet>/triggers`, go when precision and recall
/// reach the thresholds; a failure that is not a gate stops the vet.
async fn triggers_step(
    settings: &VetSettings,
    setup: &Setup,
    has_set: bool,
    steps: &mut Steps,
) -> VetStep {
    if let Some(why) = steps.stopped() {
        return VetStep::not_run(VetStepKind::Triggers, &why);
    }
    if !has_set {
        return VetStep {
            step: VetStepKind::Triggers,
            decision: Decision::NoGo,
            why: "no trigger set: write evals/triggers.json with should-trigger and near-miss should-not-trigger queries (docs/triggers.md), or pass --triggers FILE".to_string(),
            artifacts: Vec::new(),
            details: serde_json::Value::Null,
        };
    }
    let finished = match measure(&triggers_settings(settings, &setup.dir)).await {
        Ok(finished) => finished,
        Err(error) => {
            let why = error_chain(&error);
            steps.stop(error.ending(), format!("triggers: {why}"));
            return VetStep {
                step: VetStepKind::Triggers,
                decision: Decision::Error,
                why,
                artifacts: Vec::new(),
                details: serde_json::Value::Null,
            };
        }
    };
    let report = &finished.report;
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
    let (decision, why) = match &finished.ending {
        TriggersEnding::Passed => (
            Decision::Go,
            format!(
                "{numbers}; at least {:.0}% / {:.0}% required",
                settings.min_precision * 100.0,
                settings.min_recall * 100.0
            ),
        ),
        TriggersEnding::GateFailed(_) => (
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
        ending => {
            let problem = ending.problem().unwrap_or_default();
            steps.stop(ending.ending(), format!("triggers: {problem}"));
            (Decision::Error, format!("{numbers}; {problem}"))
        }
    };
    VetStep {
        step: VetStepKind::Triggers,
        decision,
        why,
        artifacts: vec![finished.dir.join("triggers.md")],
        details: serde_json::json!({
            "precision": report.precision, "recall": report.recall, "f1": report.f1,
            "counts": report.counts,
        }),
    }
}

/// The trigger evaluation of the triggers step.
fn triggers_settings(settings: &VetSettings, dir: &Path) -> TriggersSettings {
    TriggersSettings {
        skill_dir: settings.skill_dir.clone(),
        triggers: settings.triggers.clone(),
        runner: settings.runner.clone(),
        model: settings.model.clone(),
        k: settings.trigger_attempts,
        threshold: crate::features::triggers::DEFAULT_THRESHOLD,
        seed: crate::analysis::skill_order::DEFAULT_SEED,
        jobs: None,
        decoys: super::triggers::decoy_source(settings.no_decoys, settings.decoys.as_deref()),
        out: dir.to_path_buf(),
        run_id: Some("triggers".to_string()),
        workspace_root: None,
        calibre: settings.calibre.clone(),
        gates: crate::features::triggers::TriggerGates {
            min_precision: Some(settings.min_precision),
            min_recall: Some(settings.min_recall),
            min_f1: None,
        },
        max_unscoreable: 0.1,
        no_preflight: false,
        breaker: 8,
        progress: settings.progress,
    }
}

/// The paired-run step when there is no golden set.
fn no_golden_set(eval_path: &Path) -> VetStep {
    VetStep {
        step: VetStepKind::PairedRun,
        decision: Decision::NoGo,
        why: format!(
            "no golden set at {}: without cases there is no lift to measure (write evals/evals.json, docs/eval-formats.md)",
            eval_path.display()
        ),
        artifacts: Vec::new(),
        details: serde_json::Value::Null,
    }
}

/// The paired-run step: size the run, run it through `paired_run` into `<vet>/run`, decide
/// from its `summary.json`.
async fn run_step<F, Fut>(
    settings: &VetSettings,
    setup: &Setup,
    set: &EvalSet,
    eval_path: &Path,
    steps: &mut Steps,
    paired_run: F,
) -> Result<VetStep, VetError>
where
    F: FnOnce(PairedRunRequest) -> Fut,
    Fut: Future<Output = Result<PairedRunEnd, VetError>>,
{
    let cases = set.runnable_cases(false).len();
    let sizing = size_run(cases, settings.mde, settings.max_k);
    report(Event::VetPairedRunSized {
        cases,
        k: sizing.k,
        trials: sizing.trials,
        planned_mde: sizing.planned_mde,
        mde: settings.mde,
        reaches_target: sizing.reaches_target,
    });
    let request = PairedRunRequest {
        skill_dir: settings.skill_dir.clone(),
        runner: settings.runner.clone(),
        model: settings.model.clone(),
        k: sizing.k,
        out: setup.dir.clone(),
        run_id: "run".to_string(),
        calibre: settings.calibre.clone(),
        evals: eval_path.to_path_buf(),
        state: setup.state.clone(),
        decoys: settings.decoys.clone(),
        no_decoys: settings.no_decoys,
    };
    let exit = match paired_run(request).await? {
        PairedRunEnd::Exited { ending, exit } => Some((ending, exit)),
        PairedRunEnd::Failed { ending, error } => {
            steps.stop(ending, format!("paired run: {error}"));
            None
        }
    };
    Ok(paired_step(&setup.dir.join("run"), exit, &sizing, steps))
}

/// The paired run's step from its folder's `summary.json` (the documented export) and how it
/// exited (`None`: the run ended with an error): go when the verdict is `improved`; an
/// infrastructure or input failure stops the vet.
fn paired_step(
    folder: &Path,
    exit: Option<(Ending, i32)>,
    sizing: &RunSizing,
    steps: &mut Steps,
) -> VetStep {
    let summary: Option<serde_json::Value> = std::fs::read(folder.join("summary.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let sizing_text = sizing_text(sizing);
    let Some(summary) = summary else {
        if steps.stop.is_none() {
            let ending = match exit {
                Some((ending, _)) if ending != Ending::Success => ending,
                _ => Ending::InfrastructureError,
            };
            steps.stop(
                ending,
                format!("paired run: no summary.json in {}", folder.display()),
            );
        }
        return VetStep {
            step: VetStepKind::PairedRun,
            decision: Decision::Error,
            why: format!(
                "{sizing_text}; the run did not finish (exit {}): {}",
                exit.map_or(-1, |(_, code)| code),
                steps.stop.as_ref().map(|s| s.why.as_str()).unwrap_or("")
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
    let (decision, why) = match exit {
        Some((
            ending @ (Ending::InfrastructureError | Ending::NothingToRun | Ending::Interrupted),
            code,
        )) => {
            steps.stop(ending, format!("paired run exited {code}"));
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

/// How the paired run was sized, in words.
fn sizing_text(sizing: &RunSizing) -> String {
    format!(
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
    )
}

/// The registration step: the skill, its fingerprint, golden set and trigger set registered on
/// the host for monitoring.
fn register_step(
    settings: &VetSettings,
    setup: &Setup,
    golden: Option<&EvalSet>,
    trigger_set: Option<PathBuf>,
    steps: &mut Steps,
) -> VetStep {
    let golden_set = golden.map(|set| RegisteredSet {
        path: super::absolute(&set.path),
        digest: set.digest.clone(),
        items: set.runnable_cases(false).len(),
    });
    let trigger_registered = trigger_set.as_ref().and_then(|path| {
        let bytes = std::fs::read(path).ok()?;
        let items =
            crate::features::triggers::load_triggers(path, &settings.skill_dir, &setup.skill.name)
                .map(|s| s.queries.len())
                .unwrap_or(0);
        Some(RegisteredSet {
            path: super::absolute(path),
            digest: sha256_digest(&bytes),
            items,
        })
    });
    let monitoring = Monitoring {
        registered_at: Utc::now(),
        vetted_fingerprint: setup.digest.clone(),
        golden_set,
        trigger_set: trigger_registered,
        vet_dir: Some(super::absolute(&setup.dir)),
        decision: VetReport::decide(&steps.steps).as_str().to_string(),
        runner: setup.profile.name.clone(),
        model: setup.model.clone(),
        registered_by: RegisteredBy::Vet,
        // The paired run as it ran (its K as sized, the default seed), for `monitor`.
        suite: golden.map(|set| MonitoredSuite {
            runner: super::monitor::suite_runner(&setup.profile),
            evals: super::absolute(&set.path),
            k: size_run(
                set.runnable_cases(false).len(),
                settings.mde,
                settings.max_k,
            )
            .k,
            seed: crate::analysis::skill_order::DEFAULT_SEED,
            calibre: settings.calibre.clone(),
            decoys: settings.decoys.as_deref().map(super::absolute),
            no_decoys: settings.no_decoys,
            allow_draft: false,
        }),
    };
    let registry = registry_path(&setup.state, &setup.host.name);
    match register_monitored(
        &setup.state,
        &setup.host,
        &settings.skill_dir,
        setup.calibre,
        monitoring,
    ) {
        Ok((name, entry)) => VetStep {
            step: VetStepKind::Register,
            decision: Decision::Go,
            why: format!(
                "`{name}` registered on host `{}` ({}) with fingerprint {}{}; `skill-lift status` lists it, `check` and `regress` read the paired run's verdicts",
                setup.host.name,
                registry.display(),
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
            artifacts: vec![registry],
            details: serde_json::Value::Null,
        },
        Err(error) => {
            steps.stop(Ending::InputError, format!("register: {error}"));
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

/// The report: `vet.json` and `vet.md` written, the result on stdout as asked, the job
/// summary appended, the files reported.
fn record(
    settings: &VetSettings,
    setup: Setup,
    steps: Vec<VetStep>,
    started: Instant,
) -> Result<VetReport, VetError> {
    let decision = VetReport::decide(&steps);
    let report = VetReport {
        format_version: VET_FORMAT_VERSION,
        skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
        vet_id: setup.vet_id,
        created_at: Utc::now(),
        skill_name: setup.skill.name.clone(),
        skill_path: super::absolute(&settings.skill_dir),
        fingerprint: setup.digest,
        runner: setup.profile.name.clone(),
        model: setup.model,
        host: setup.host.name.clone(),
        steps,
        decision,
        wall_s: started.elapsed().as_secs_f64(),
    };
    let json = serde_json::to_vec_pretty(&report).expect("vet report serializes");
    let markdown = vet_markdown(&report);
    let dir = &setup.dir;
    crate::disk::write_atomic(&dir.join("vet.json"), &json)?;
    crate::disk::write_atomic(&dir.join("vet.md"), markdown.as_bytes())?;
    match settings.stdout_json {
        Some(false) => crate::values::reporter::result(&markdown),
        Some(true) => crate::values::reporter::result_line(&String::from_utf8_lossy(&json)),
        None => {}
    }
    crate::report::step_summary::append_step_summary(&markdown);
    crate::values::reporter::report_written(&[dir.join("vet.json"), dir.join("vet.md")]);
    Ok(report)
}

/// The steps that were not go, by name (what a no-go vet names).
pub(crate) fn steps_not_go(report: &VetReport) -> Vec<&'static str> {
    report
        .steps
        .iter()
        .filter(|s| s.decision != Decision::Go)
        .map(|s| s.step.as_str())
        .collect()
}
