//! `skill-lift triggers` as a workflow ([`measure`]): resolve the skill, trigger set, runner
//! (forced into `tools` mode for `openai-chat`, where activation is observable) and decoys;
//! start the model server when the profile has one; replay every query K times
//! (`crate::features::triggers`); write `triggers.json`, `triggers.md`, `attempts.jsonl` and the
//! transcripts; say how it ended ([`TriggersEnding`]). `vet`'s triggers step calls the same.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::Ending;
use super::replay::{ObservingError, ReplayRunnerError, observing_profile};
use super::result_folder::{ResultFolderError, create_result_folder, result_folder_id};
use crate::features::asset::fingerprint::{Calibre, fingerprint};
use crate::features::asset::{Skill, load_skill};
use crate::features::decoys::{DecoySource, prepare_decoys};
use crate::features::triggers::{
    AttemptSettings, TriggerContext, TriggerError, TriggerGates, TriggerReport, TriggerRunnerInfo,
    TriggerSet, TriggerSetInfo, TriggerSetup, analyze, find_trigger_set, load_triggers,
    report_markdown, run_attempts,
};
use crate::features::workspace::SkillSource;
use crate::values::reporter::{Event, report};

/// What one trigger evaluation asks for (`skill-lift triggers`'s flags, typed).
#[derive(Debug, Clone)]
pub(crate) struct TriggersSettings {
    /// The skill folder (holds SKILL.md).
    pub skill_dir: PathBuf,
    /// The trigger set (default: as [`find_trigger_set`] finds it).
    pub triggers: Option<PathBuf>,
    /// The runner profile: a name from a runners folder or a `.toml` path.
    pub runner: String,
    /// The model, overriding the profile's.
    pub model: Option<String>,
    /// Attempts per query.
    pub k: u32,
    /// Share of a query's scored attempts that must activate the target.
    pub threshold: f64,
    /// Seed of the order each attempt lists the skills in.
    pub seed: u64,
    /// Attempts in flight at once (default: the profile's `concurrency`).
    pub jobs: Option<u32>,
    /// Where the decoys come from (a folder is absolute).
    pub decoys: DecoySource,
    /// Folder that receives the result folder.
    pub out: PathBuf,
    /// The result folder's name (default: time, skill, `triggers`, a random suffix).
    pub run_id: Option<String>,
    /// Folder for attempt workspaces (default: the system temporary folder).
    pub workspace_root: Option<PathBuf>,
    /// The fingerprint calibre's name (checked here, after the skill).
    pub calibre: String,
    /// The precision / recall / F1 gates.
    pub gates: TriggerGates,
    /// Largest share of unscoreable attempts before the evaluation fails (infrastructure).
    pub max_unscoreable: f64,
    /// Skip the pre-flight check.
    pub no_preflight: bool,
    /// Stop after this many infrastructure failures in a row (0: never).
    pub breaker: usize,
    /// Draw a progress bar (on a terminal).
    pub progress: bool,
}

/// Why a trigger evaluation could not run or be recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TriggersError {
    /// The skill cannot be read.
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    /// The skill's name cannot name the staged folder.
    #[error(
        "{}: skill name `{}` cannot name the staged skill folder; set frontmatter `name` to e.g. `my-skill`",
        .skill_md.display(),
        .name.escape_debug()
    )]
    SkillName {
        /// The skill's SKILL.md.
        skill_md: PathBuf,
        /// Its name.
        name: String,
    },
    /// An unknown calibre.
    #[error("{0}")]
    Calibre(String),
    /// `--triggers FILE` does not exist.
    #[error("{}: trigger set not found", .0.display())]
    TriggerSetNotFound(PathBuf),
    /// The trigger set cannot be found or read, or the attempts failed to run.
    #[error(transparent)]
    Triggers(#[from] TriggerError),
    /// The runner cannot show activations (nothing to run) or its profile cannot be read.
    #[error(transparent)]
    Runner(#[from] ObservingError),
    /// The decoys cannot be prepared.
    #[error(transparent)]
    Decoys(#[from] crate::features::decoys::DecoyError),
    /// A decoy has the target's name.
    #[error("decoy `{0}` has the target skill's name; decoys must differ from the target")]
    DecoyNamedAsTarget(String),
    /// The skill cannot be fingerprinted.
    #[error(transparent)]
    Fingerprint(#[from] crate::features::asset::fingerprint::FingerprintError),
    /// The result folder cannot be named or created.
    #[error(transparent)]
    Folder(#[from] ResultFolderError),
    /// `--workspace-root` is not a folder.
    #[error("--workspace-root {}: not a folder", .0.display())]
    WorkspaceRoot(PathBuf),
    /// The runner's credential cannot be read.
    #[error(transparent)]
    Credential(super::PipelineError),
    /// The model server, pre-flight check or runner failed to start.
    #[error(transparent)]
    Replay(#[from] ReplayRunnerError),
    /// The attempts failed to run.
    #[error(transparent)]
    Attempts(TriggerError),
    /// A report file cannot be written.
    #[error(transparent)]
    Write(#[from] crate::disk::DiskError),
}

impl TriggersError {
    /// How the evaluation ended: an interrupt while a server started, nothing to measure with
    /// this runner, the class of an infrastructure failure, else an input error.
    pub(crate) fn ending(&self) -> Ending {
        match self {
            TriggersError::Replay(ReplayRunnerError::Interrupted) => Ending::Interrupted,
            TriggersError::Replay(ReplayRunnerError::Server(error))
            | TriggersError::Credential(error) => match error.class() {
                super::ErrorClass::Input => Ending::InputError,
                super::ErrorClass::Infrastructure => Ending::InfrastructureError,
            },
            TriggersError::Replay(_) | TriggersError::Attempts(_) | TriggersError::Write(_) => {
                Ending::InfrastructureError
            }
            TriggersError::Runner(
                ObservingError::NoToolCalls { .. } | ObservingError::ActivationNotObservable { .. },
            ) => Ending::NothingToRun,
            _ => Ending::InputError,
        }
    }
}

impl super::Failure for TriggersError {
    fn ending(&self) -> Ending {
        TriggersError::ending(self)
    }
}

/// Where the decoys come from: none with `no_decoys`, else the folder given (made absolute),
/// else the built-in four.
pub(crate) fn decoy_source(no_decoys: bool, folder: Option<&Path>) -> DecoySource {
    match folder {
        _ if no_decoys => DecoySource::None,
        Some(dir) => DecoySource::Folder(super::absolute(dir)),
        None => DecoySource::Builtin,
    }
}

/// How a recorded evaluation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TriggersEnding {
    /// Every gate passed (or none was set).
    Passed,
    /// A gate failed (why).
    GateFailed(String),
    /// Stopped by the breaker, too many unscoreable attempts or no query decided (why).
    Infrastructure(String),
    /// Interrupted; the report covers the attempts recorded.
    Interrupted,
}

impl TriggersEnding {
    /// The ending's class.
    pub(crate) fn ending(&self) -> Ending {
        match self {
            TriggersEnding::Passed => Ending::Success,
            TriggersEnding::GateFailed(_) => Ending::GateFailed,
            TriggersEnding::Infrastructure(_) => Ending::InfrastructureError,
            TriggersEnding::Interrupted => Ending::Interrupted,
        }
    }

    /// Report why the evaluation did not pass (when it did not), quoting `exit`, the exit code
    /// of [`Self::ending`].
    pub(crate) fn report_problem(&self, exit: i32) {
        if let Some(problem) = self.problem() {
            report(Event::Failed { problem, exit });
        }
    }

    /// Why the evaluation did not pass, for the terminal and for `vet`.
    pub(crate) fn problem(&self) -> Option<String> {
        match self {
            TriggersEnding::Passed => None,
            TriggersEnding::GateFailed(why) | TriggersEnding::Infrastructure(why) => {
                Some(why.clone())
            }
            TriggersEnding::Interrupted => {
                Some("interrupted; the report covers the attempts recorded".to_string())
            }
        }
    }
}

/// A recorded evaluation: its report, folder and ending.
pub(crate) struct TriggersFinished {
    /// The report (`triggers.json`).
    pub report: TriggerReport,
    /// The result folder.
    pub dir: PathBuf,
    /// How it ended.
    pub ending: TriggersEnding,
}

/// What the evaluation runs on, resolved before the result folder exists.
struct Resolved {
    skill: Skill,
    calibre: Calibre,
    set_path: PathBuf,
    set: TriggerSet,
    warnings: Vec<String>,
    profile: crate::features::runner::LoadedProfile,
    model: String,
    decoys: Vec<SkillSource>,
    digest: String,
    run_id: String,
}

/// Resolve, run and record one trigger evaluation.
pub(crate) async fn measure(
    settings: &TriggersSettings,
) -> Result<TriggersFinished, TriggersError> {
    let resolved = resolve(settings)?;
    let api_key =
        super::grading::profile_api_key(&resolved.profile).map_err(TriggersError::Credential)?;
    let credentials = super::grading::runner_secrets(&resolved.profile);
    let dir = settings.out.join(&resolved.run_id);
    create_result_folder(&dir, "pick another --run-id")?;
    let setup = setup(settings, &resolved);
    report(Event::TriggersPlanned {
        run_id: resolved.run_id.clone(),
        queries: resolved.set.queries.len(),
        positives: resolved.set.positives(),
        negatives: resolved.set.negatives(),
        k: settings.k,
        runner: resolved.profile.name.clone(),
        runner_kind: resolved.profile.profile.kind.name().to_string(),
        model: resolved.model.clone(),
    });
    crate::features::contain::install_interrupt_handler();
    let (runner, server) = super::replay::start_replay_runner(
        &resolved.profile,
        api_key,
        &dir,
        settings.no_preflight,
        "run",
    )
    .await?;
    let capabilities = crate::record::RunnerCapabilities::of_profile(&resolved.profile.profile);
    let jobs = settings
        .jobs
        .map(|j| j as usize)
        .unwrap_or(resolved.profile.profile.concurrency);
    let context = Arc::new(TriggerContext {
        dir: dir.clone(),
        runner,
        model: resolved.model.clone(),
        target: SkillSource {
            name: resolved.skill.name.clone(),
            dir: settings.skill_dir.clone(),
            // The trigger set is eval material: never staged, wherever it lies.
            eval_material: crate::features::asset::eval_material::EvalMaterial::inside(
                &settings.skill_dir,
                [resolved.set_path.clone()],
            ),
        },
        target_digest: resolved.digest.clone(),
        calibre: resolved.calibre,
        decoys: resolved.decoys.clone(),
        skill_order: capabilities.skill_delivery.skill_ordering(),
        seed: settings.seed,
        timeout: Duration::from_secs_f64(resolved.profile.profile.timeout_s),
        workspace_root: settings.workspace_root.clone(),
        credentials,
    });
    let queries = Arc::new(resolved.set.queries.clone());
    let attempt_settings = AttemptSettings {
        k: settings.k,
        jobs,
        breaker: settings.breaker,
        progress: settings.progress
            && crate::report::progress::ProgressDisplay::stderr_is_interactive(),
    };
    let finished = run_attempts(context, Arc::clone(&queries), attempt_settings).await;
    super::replay::stop_replay_server(server).await;
    crate::record::redact_logs_in(&dir);
    let orphans = crate::features::contain::reap_adopted_orphans();
    if orphans > 0 {
        report(Event::OrphanAttemptsStopped { count: orphans });
    }
    let finished = finished.map_err(TriggersError::Attempts)?;
    let trigger_report = analyze(
        setup,
        &queries,
        &finished.records,
        resolved.warnings,
        finished.interrupted,
        finished.wall_s,
    );
    write_report(&trigger_report, &dir)?;
    let ending = ending(&trigger_report, finished.breaker.as_deref());
    Ok(TriggersFinished {
        report: trigger_report,
        dir,
        ending,
    })
}

/// The skill, calibre, trigger set, runner, decoys, fingerprint and folder id, in the order
/// their errors are reported.
fn resolve(settings: &TriggersSettings) -> Result<Resolved, TriggersError> {
    let skill = load_skill(&settings.skill_dir)?;
    for warning in &skill.warnings {
        report(Event::warning_at(
            settings.skill_dir.join("SKILL.md"),
            warning.to_string(),
        ));
    }
    let name = skill.name.as_str();
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(TriggersError::SkillName {
            skill_md: settings.skill_dir.join("SKILL.md"),
            name: skill.name.clone(),
        });
    }
    let calibre: Calibre = settings
        .calibre
        .parse()
        .map_err(|e| TriggersError::Calibre(ToString::to_string(&e)))?;
    let set_path = match &settings.triggers {
        Some(path) if path.is_file() => path.clone(),
        Some(path) => return Err(TriggersError::TriggerSetNotFound(path.clone())),
        None => find_trigger_set(&settings.skill_dir)?,
    };
    let set = load_triggers(&set_path, &settings.skill_dir, &skill.name)?;
    let mut warnings = set.warnings.clone();
    let profile = observing_profile(&settings.runner, "triggers", "an attempt")?;
    let model = settings
        .model
        .clone()
        .unwrap_or_else(|| profile.profile.model.clone());
    let decoys = prepare_decoys(&settings.decoys)?.skills;
    if let Some(decoy) = decoys.iter().find(|d| d.name == skill.name) {
        return Err(TriggersError::DecoyNamedAsTarget(decoy.name.clone()));
    }
    warnings.extend(decoy_warnings(&set, &skill.name, &decoys));
    let digest = fingerprint(&settings.skill_dir, calibre)?.digest;
    let run_id = result_folder_id(
        settings.run_id.as_deref(),
        &skill.name,
        "triggers",
        "--run-id",
    )?;
    if let Some(root) = &settings.workspace_root
        && !root.is_dir()
    {
        return Err(TriggersError::WorkspaceRoot(root.clone()));
    }
    Ok(Resolved {
        skill,
        calibre,
        set_path,
        set,
        warnings,
        profile,
        model,
        decoys,
        digest,
        run_id,
    })
}

/// Warnings about the decoys: a query expecting a skill that is not staged, no decoy at all.
fn decoy_warnings(set: &TriggerSet, target: &str, decoys: &[SkillSource]) -> Vec<String> {
    let decoy_names: Vec<String> = decoys.iter().map(|d| d.name.clone()).collect();
    let mut warnings = Vec::new();
    for query in &set.queries {
        if let Some(expected) = &query.expected_skill
            && expected != target
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
    warnings
}

/// The evaluation's setup, as `triggers.json` records it.
fn setup(settings: &TriggersSettings, resolved: &Resolved) -> TriggerSetup {
    let profile = &resolved.profile;
    let capabilities = crate::record::RunnerCapabilities::of_profile(&profile.profile);
    let set = &resolved.set;
    TriggerSetup {
        run_id: resolved.run_id.clone(),
        created_at: Utc::now(),
        skill_name: resolved.skill.name.clone(),
        description: resolved.skill.description.clone(),
        skill_path: super::absolute(&settings.skill_dir),
        fingerprint: resolved.digest.clone(),
        calibre: resolved.calibre.name().to_string(),
        trigger_set: TriggerSetInfo {
            path: super::absolute(&set.path),
            digest: set.digest.clone(),
            format: set.format,
            queries: set.queries.len(),
            should_trigger: set.positives(),
            should_not_trigger: set.negatives(),
        },
        runner: TriggerRunnerInfo {
            name: profile.name.clone(),
            kind: profile.profile.kind.name().to_string(),
            model: resolved.model.clone(),
            skill_mode: capabilities.skill_delivery.as_str().to_string(),
        },
        decoys: resolved.decoys.iter().map(|d| d.name.clone()).collect(),
        k: settings.k,
        threshold: settings.threshold,
        confidence: crate::features::triggers::CONFIDENCE,
        gates: settings.gates,
        max_unscoreable: settings.max_unscoreable,
    }
}

/// Write `triggers.json` and `triggers.md` into `dir`, append the report to the job summary,
/// report what was written and how many attempts were recorded.
fn write_report(trigger_report: &TriggerReport, dir: &Path) -> Result<(), TriggersError> {
    let json = serde_json::to_vec_pretty(trigger_report).expect("report serializes");
    let markdown = report_markdown(trigger_report);
    for (name, bytes) in [
        ("triggers.json", json.as_slice()),
        ("triggers.md", markdown.as_bytes()),
    ] {
        crate::disk::write_atomic(&dir.join(name), bytes)?;
    }
    crate::report::step_summary::append_step_summary(&markdown);
    crate::values::reporter::report_written(&[dir.join("triggers.json"), dir.join("triggers.md")]);
    report(Event::TriggersRecorded {
        attempts: trigger_report.attempts.recorded,
        wall_s: trigger_report.wall_s,
        dir: dir.to_path_buf(),
    });
    Ok(())
}

/// How a recorded evaluation ended: interrupted, stopped by the breaker, too many unscoreable
/// attempts or no query decided, a failed gate, else passed.
pub(crate) fn ending(report: &TriggerReport, breaker: Option<&str>) -> TriggersEnding {
    if report.interrupted {
        return TriggersEnding::Interrupted;
    }
    if let Some(reason) = breaker {
        return TriggersEnding::Infrastructure(reason.to_string());
    }
    let attempts = &report.attempts;
    if attempts.unscoreable_exceeded {
        return TriggersEnding::Infrastructure(format!(
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
        ));
    }
    if report.summary.total == report.summary.undecided {
        return TriggersEnding::Infrastructure("no query has a scored attempt".to_string());
    }
    if let Some(gate) = &report.gate
        && !gate.passed
    {
        return TriggersEnding::GateFailed(format!("gate failed: {}", gate.failures.join("; ")));
    }
    TriggersEnding::Passed
}

/// What `triggers` prints on stdout: the Markdown report, or `triggers.json` as JSON.
pub(crate) fn render_report(report: &TriggerReport, json: bool) -> String {
    if json {
        let text = serde_json::to_string_pretty(report).expect("report serializes");
        format!("{}\n", crate::disk::redact::redact_text(&text))
    } else {
        report_markdown(report)
    }
}
