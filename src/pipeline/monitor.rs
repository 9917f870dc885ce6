//! `skill-lift monitor` as a workflow ([`monitor`]): after a model change (the host's last
//! bump, recorded by hand or by `check`), re-run the suites registered for monitoring (by
//! `vet`, or `run --monitor`) that the change left pending, each as a normal `run` under the new
//! model (`--sequential` and a wall-clock budget by default), then read the baseline store those
//! runs fed into the pass-rate matrix (`crate::features::registry::regress`) and roll it up: "N degraded —
//! M to rewrite (…), K model-dependent; L unchanged", each degradation with its cause and
//! evidence.
//!
//! Made to be started by a scheduler (cron, a systemd timer, a scheduled CI job):
//!
//! - one pass per host at a time: `monitor.<host>.json.lock` in the state folder is taken
//!   without waiting; a second pass ends at once as busy ([`MonitorError::Busy`]);
//! - resumable: the pass is recorded in `monitor.<host>.json` (its folder, each suite's run
//!   folder and state) before each suite starts; a pass that was interrupted, ran out of budget
//!   or crashed is continued by the next `monitor` under the same bump — a suite whose run
//!   folder was started is continued with `run --resume` (only its missing trials run);
//! - its result is a document (`monitor.json` in the pass folder, `--json` on stdout), a
//!   Markdown report (`monitor.md`) and one summary line.
//!
//! The suites run through the caller (`run_suite`), which starts a normal `skill-lift run` from
//! the argument list of a [`SuiteRequest`]: the run folder, baseline-store entries and exit
//! codes are `run`'s own. Nothing here prints but through the reporter.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Ending;
use super::result_folder::{ResultFolderError, create_result_folder};
use crate::features::registry::RegistryError;
use crate::features::registry::baseline::read_store;
use crate::features::registry::hosts::find_host;
use crate::features::registry::models::{ModelBump, check, entry_is_under};
use crate::features::registry::observe::{WatchSettings, watch_model};
use crate::features::registry::regress::{
    AssetMatrix, Cause, Comparison, RegressReport, RegressSettings, Remedy, regress, to_table,
};
use crate::features::registry::scan::{AssetEntry, MonitoredSuite, read_registry, registry_path};
use crate::features::registry::state::{
    check_schema, lock_path, read_json, try_lock_for, write_state_json,
};
use crate::features::registry::value::{ValueBook, ValueSettings, refresh_value_cards};
use crate::features::runner::LoadedProfile;
use crate::values::reporter::{Event, report};

/// Version of the pass record `monitor.<host>.json`.
pub(crate) const PASS_SCHEMA_VERSION: u32 = 1;
/// Attempts per case of a suite registered before its run settings were stored.
const LEGACY_K: u32 = 3;

/// The runner of a monitored suite as stored: a built-in profile's name, else the absolute path
/// of the profile's file (a scheduler's working folder must not change which profile is read).
pub(crate) fn suite_runner(profile: &LoadedProfile) -> String {
    let path = profile.path.to_string_lossy();
    if path.starts_with("builtin:") {
        profile.name.clone()
    } else {
        super::absolute(&profile.path).display().to_string()
    }
}

/// What one `monitor` asks for (its flags, checked).
#[derive(Debug, Clone)]
pub(crate) struct MonitorSettings {
    /// The host whose registry, bumps and monitored suites are read.
    pub host: String,
    /// The state folder (resolved).
    pub state: PathBuf,
    /// The folder that receives pass folders.
    pub out: PathBuf,
    /// Only these assets (all monitored assets when empty).
    pub assets: Vec<String>,
    /// Run the suites under this model instead of the last bump's.
    pub model: Option<String>,
    /// Run each suite with `--sequential` (anytime-valid early stopping).
    pub sequential: bool,
    /// The pass's wall-clock budget, seconds: each suite gets what is left.
    pub max_wall_s: f64,
    /// Each suite's cost budget, USD.
    pub max_cost_usd: Option<f64>,
    /// Each suite's token budget.
    pub max_tokens: Option<u64>,
    /// The matrix's DEGRADED threshold (pp) and false-discovery rate.
    pub threshold_pp: f64,
    pub q: f64,
    /// List what would run; run nothing.
    pub dry_run: bool,
    /// Look for a model change first, as `check` does (`watch_model`), and record one as a
    /// detected bump (unless `auto_bump` is off or this is a dry run).
    pub watch: bool,
    /// Record a detected change as a bump.
    pub auto_bump: bool,
    /// The folder standing in for the home folder whose session history and agent settings are
    /// read (`check --history-root`).
    pub history_root: Option<PathBuf>,
    /// Runner profiles whose `GET /models` is read (default: the monitored suites' runners).
    pub runners: Vec<String>,
    /// The value cards refreshed after the pass (`--value-per-success`, `--value-window`).
    pub value: ValueSettings,
    /// The session-history window the value cards' task frequency reads, days (`--days`).
    pub history_days: u32,
}

/// One suite the caller runs as `skill-lift run`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SuiteRequest {
    /// The monitored asset.
    pub asset: String,
    /// `skill-lift run`'s arguments (program name first: `run`).
    pub argv: Vec<String>,
    /// The run folder.
    pub run_dir: PathBuf,
}

/// How a suite's run ended, as the command that ran it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SuiteEnd {
    /// It returned with this ending.
    Exited(Ending),
    /// It ended with an error: its class and its message chain.
    Failed {
        /// The error's class.
        ending: Ending,
        /// The error with its causes.
        error: String,
    },
}

/// Why a pass could not start or be recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MonitorError {
    /// The state folder, host, registry or baseline store cannot be read or written.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The host has no registry yet.
    #[error(
        "{}: no registry for host `{host}`; register a skill with `skill-lift vet SKILL_DIR --host {host}` or `skill-lift run SKILL_DIR --monitor --host {host}`",
        .path.display()
    )]
    NoRegistry {
        /// The host.
        host: String,
        /// The registry file looked for.
        path: PathBuf,
    },
    /// `--asset` names no monitored asset.
    #[error(
        "`{asset}` is not registered for monitoring on host `{host}` (monitored: {monitored}); register it with `skill-lift vet` or `skill-lift run --monitor`"
    )]
    NotMonitored {
        /// The name given.
        asset: String,
        /// The host.
        host: String,
        /// The monitored assets, comma-separated (`none`).
        monitored: String,
    },
    /// Another pass holds the host's lock.
    #[error(
        "another `skill-lift monitor` pass for host `{host}` is running (it holds {}); this one did nothing",
        .lock.display()
    )]
    Busy {
        /// The host.
        host: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// The pass folder cannot be created.
    #[error(transparent)]
    Folder(#[from] ResultFolderError),
    /// `monitor.json` or `monitor.md` cannot be written.
    #[error(transparent)]
    Write(#[from] crate::disk::DiskError),
}

impl super::Failure for MonitorError {
    fn ending(&self) -> Ending {
        match self {
            MonitorError::Busy { .. } => Ending::Busy,
            MonitorError::Write(_) | MonitorError::Registry(RegistryError::Io { .. }) => {
                Ending::InfrastructureError
            }
            MonitorError::Folder(ResultFolderError::Create { .. }) => Ending::InfrastructureError,
            _ => Ending::InputError,
        }
    }
}

/// Where one suite stands in a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SuiteStatus {
    /// Started and not seen to end (the process stopped): the next pass resumes its run.
    Running,
    /// Its run finished; its verdicts are in the baseline store.
    Done,
    /// Its run ended with an error (the reason is kept); the next pass tries again.
    Failed,
    /// Interrupted (Ctrl-C / SIGTERM); the next pass resumes its run.
    Interrupted,
    /// Not started: the pass's budget was spent; the next pass runs it.
    Deferred,
    /// Not started: the registration holds no eval set to run.
    NoSuite,
    /// `--dry-run`: it would run.
    WouldRun,
}

impl SuiteStatus {
    /// The status's word.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SuiteStatus::Running => "running",
            SuiteStatus::Done => "done",
            SuiteStatus::Failed => "failed",
            SuiteStatus::Interrupted => "interrupted",
            SuiteStatus::Deferred => "deferred",
            SuiteStatus::NoSuite => "no suite",
            SuiteStatus::WouldRun => "would run",
        }
    }
}

/// One suite of a pass: its run folder, state and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SuiteState {
    pub asset: String,
    pub status: SuiteStatus,
    /// The run folder (`<pass>/<asset>`); absent for a suite that never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<PathBuf>,
    /// The run's exit code, when it returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// Whether this pass continued an earlier start of the run (`run --resume`).
    #[serde(default)]
    pub resumed: bool,
    /// Why it failed, was deferred or has no suite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// `monitor.<host>.json`: the host's current (or last) pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PassRecord {
    pub schema_version: u32,
    pub host: String,
    /// The model the suites run under.
    pub model: String,
    /// When the bump the pass answers was recorded.
    pub bump_at: DateTime<Utc>,
    pub pass_id: String,
    pub pass_dir: PathBuf,
    pub started_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Set when every pending suite was run (done or failed); a pass left open (interrupted,
    /// deferred) is continued by the next `monitor` under the same bump.
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
    pub suites: BTreeMap<String, SuiteState>,
}

/// The pass record's path in the state folder.
pub(crate) fn pass_path(state: &Path, host: &str) -> PathBuf {
    state.join(format!("monitor.{host}.json"))
}

/// Where a monitored asset stands after the pass, under the current model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Standing {
    /// DEGRADED from the previous model to this one.
    Degraded,
    /// A smaller significant drop, to watch (VOLATILE).
    Volatile,
    /// Compared with the previous model: no significant drop (STABLE) or better.
    Unchanged,
    /// Evaluated under the current model, but nothing to compare with in the same row (first
    /// measurement, or the skill or its eval set changed since: FINGERPRINT-DRIFT).
    NoComparison,
    /// Not evaluated under the current model yet (its suite failed, was deferred or has none).
    NotEvaluated,
}

impl Standing {
    fn as_str(self) -> &'static str {
        match self {
            Standing::Degraded => "DEGRADED",
            Standing::Volatile => "VOLATILE",
            Standing::Unchanged => "unchanged",
            Standing::NoComparison => "no comparison",
            Standing::NotEvaluated => "not evaluated",
        }
    }
}

/// One monitored asset in the roll-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct AssetStanding {
    pub asset: String,
    pub standing: Standing,
    /// The comparison into the current model that decided it (the largest drop of the asset's
    /// rows), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// For a degradation: the cause, what to rewrite (or `model-dependent` / `unattributed`)
    /// and the evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
    /// The signals behind it, or why there is no comparison.
    pub evidence: String,
}

/// The roll-up's counts.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub(crate) struct Rollup {
    pub degraded: usize,
    /// Degradations the skill's owner can fix by rewriting a part of it.
    pub to_rewrite: usize,
    /// Of those, how many per part (`tool description`, `instructions`, `trigger
    /// description`).
    pub rewrite_parts: BTreeMap<String, usize>,
    /// Degradations nothing in the skill explains.
    pub model_dependent: usize,
    /// Degradations whose verdicts carry no signal (manual replays).
    pub unattributed: usize,
    pub volatile: usize,
    pub unchanged: usize,
    pub no_comparison: usize,
    pub not_evaluated: usize,
}

/// The result of a pass: `monitor.json`, and what `--json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct MonitorReport {
    pub host: String,
    /// The last bump (absent when none was recorded: nothing is pending then).
    pub bump: Option<ModelBump>,
    /// The model the suites run under.
    pub model: Option<String>,
    /// The model change this pass noticed itself (`model changed: A → B (seen in …)`), and
    /// whether it recorded it.
    pub model_change: Option<String>,
    pub pass_id: Option<String>,
    pub pass_dir: Option<PathBuf>,
    /// Whether this invocation continued an open pass.
    pub resumed: bool,
    /// The suites of the pass (this invocation's and the pass's earlier ones).
    pub suites: Vec<SuiteState>,
    /// Every monitored asset's standing under the current model.
    pub assets: Vec<AssetStanding>,
    pub rollup: Rollup,
    /// Assets pending under the current model that have no monitored suite (`check` still
    /// lists them).
    pub unmonitored_pending: Vec<String>,
    pub warnings: Vec<String>,
    /// The matrix of the monitored assets.
    pub regress: RegressReport,
    /// The host's value cards, recomputed after the pass and recorded in its dated series
    /// (absent on a dry run or when they could not be computed: a warning says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<ValueBook>,
    /// The one-line summary.
    pub summary: String,
    /// How the pass ended (`success`, `degraded`, …) and its exit code.
    pub ending: String,
    pub exit_code_class: String,
    pub wall_s: f64,
}

/// A finished pass: its report and how the command ends.
pub(crate) struct MonitorFinished {
    pub report: MonitorReport,
    pub ending: Ending,
    /// The Markdown/terminal rendering (matrix, standings, warnings, summary line).
    pub text: String,
}

/// Run one monitor pass (see the module comment). `run_suite` runs one suite as `skill-lift
/// run` does.
pub(crate) async fn monitor<F, Fut>(
    settings: &MonitorSettings,
    mut run_suite: F,
) -> Result<MonitorFinished, MonitorError>
where
    F: FnMut(SuiteRequest) -> Fut,
    Fut: Future<Output = SuiteEnd>,
{
    let started = Instant::now();
    let host = find_host(&settings.state, &settings.host)?;
    let registry_file = registry_path(&settings.state, &host.name);
    let record_path = pass_path(&settings.state, &host.name);
    let Some(_lock) = try_lock_for(&record_path)? else {
        return Err(MonitorError::Busy {
            host: host.name.clone(),
            lock: lock_path(&record_path),
        });
    };
    let registry =
        read_registry(&settings.state, &host.name)?.ok_or_else(|| MonitorError::NoRegistry {
            host: host.name.clone(),
            path: registry_file.clone(),
        })?;
    let monitored: BTreeMap<&String, &AssetEntry> = registry
        .assets
        .iter()
        .filter(|(_, a)| a.monitoring.is_some())
        .collect();
    for asset in &settings.assets {
        if !monitored.contains_key(asset) {
            return Err(MonitorError::NotMonitored {
                asset: asset.clone(),
                host: host.name.clone(),
                monitored: if monitored.is_empty() {
                    "none".to_string()
                } else {
                    monitored
                        .keys()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            });
        }
    }
    let selected: BTreeMap<&String, &AssetEntry> = monitored
        .into_iter()
        .filter(|(name, _)| settings.assets.is_empty() || settings.assets.contains(name))
        .collect();
    let mut warnings = Vec::new();
    let mut model_change = None;
    let registry = if settings.watch {
        let store = read_store(&settings.state)?;
        let runners = if settings.runners.is_empty() {
            let found: BTreeSet<String> = selected
                .values()
                .filter_map(|entry| suite_of(entry).map(|s| s.runner))
                .collect();
            found.into_iter().collect()
        } else {
            settings.runners.clone()
        };
        let watch = watch_model(
            &settings.state,
            &registry,
            &store,
            &WatchSettings {
                history_root: settings.history_root.clone(),
                runners,
                record: settings.auto_bump && !settings.dry_run,
            },
        )
        .await?;
        for source in watch.unreadable() {
            warnings.push(format!(
                "model evidence from {} `{}` could not be read: a model change there would go unnoticed ({})",
                source.source.describe(),
                source.name,
                serde_json::to_string(&source.state).unwrap_or_default()
            ));
        }
        if let Some(change) = watch.change() {
            let line = format!(
                "{}; {}",
                change.line(),
                match &watch.recorded {
                    Some(_) => "recorded as a bump",
                    None if settings.dry_run => "not recorded (dry run)",
                    None if !settings.auto_bump => "not recorded (--no-auto-bump)",
                    None => "already recorded by another process",
                }
            );
            report(Event::Note {
                message: format!("monitor: {line}"),
            });
            model_change = Some(line);
        }
        match watch.recorded {
            Some(_) => read_registry(&settings.state, &host.name)?.unwrap_or(registry.clone()),
            None => registry.clone(),
        }
    } else {
        registry.clone()
    };
    let bump = registry.model_bumps.last().cloned();
    let model = settings
        .model
        .clone()
        .or_else(|| bump.as_ref().map(|b| b.model.clone()));
    let store = read_store(&settings.state)?;
    let standing = check(&registry, &store);
    let pending: BTreeSet<&str> = standing
        .pending()
        .iter()
        .map(|a| a.asset.as_str())
        .collect();
    // With --model, what counts is a verdict under that model since the bump.
    let pending_for = |asset: &str| -> bool {
        match (&settings.model, &bump) {
            (Some(model), Some(bump)) => !store.assets.get(asset).is_some_and(|b| {
                b.entries
                    .iter()
                    .any(|e| entry_is_under(e, model) && e.recorded_at >= bump.at)
            }),
            _ => pending.contains(asset),
        }
    };
    let unmonitored_pending: Vec<String> = pending
        .iter()
        .filter(|a| !selected.contains_key(&a.to_string()) && settings.assets.is_empty())
        .filter(|a| {
            registry
                .assets
                .get(**a)
                .is_some_and(|e| e.monitoring.is_none())
        })
        .map(|a| a.to_string())
        .collect();
    if !unmonitored_pending.is_empty() {
        warnings.push(format!(
            "{} asset(s) pending under the current model have no monitored suite, so this pass cannot re-evaluate them: {} (register with `skill-lift vet` or `run --monitor`, or waive with `skill-lift check --waive`)",
            unmonitored_pending.len(),
            unmonitored_pending.join(", ")
        ));
    }
    let to_run: Vec<(&String, &AssetEntry)> = match (&bump, &model) {
        (Some(_), Some(_)) => selected
            .iter()
            .filter(|(name, _)| pending_for(name))
            .map(|(n, a)| (*n, *a))
            .collect(),
        _ => Vec::new(),
    };

    // The pass: an open one under the same bump and model is continued.
    let previous: Option<PassRecord> = read_json(&record_path, "the monitor pass record")?;
    if let Some(previous) = &previous {
        check_schema(&record_path, previous.schema_version, PASS_SCHEMA_VERSION)?;
    }
    let mut resumed = false;
    let mut pass: Option<PassRecord> = None;
    if let (Some(bump), Some(model)) = (&bump, &model) {
        let open = previous.filter(|p| {
            p.finished_at.is_none()
                && &p.model == model
                && p.bump_at == bump.at
                && p.host == host.name
        });
        if let Some(open) = open {
            resumed = true;
            pass = Some(open);
        } else if !to_run.is_empty() && !settings.dry_run {
            let pass_id = super::new_result_id(&host.name, Some("monitor"));
            let pass_dir = super::absolute(&settings.out).join(&pass_id);
            create_result_folder(&pass_dir, "a new pass id is drawn next time")?;
            pass = Some(PassRecord {
                schema_version: PASS_SCHEMA_VERSION,
                host: host.name.clone(),
                model: model.clone(),
                bump_at: bump.at,
                pass_id,
                pass_dir,
                started_at: Utc::now(),
                updated_at: Utc::now(),
                finished_at: None,
                suites: BTreeMap::new(),
            });
        }
    }

    let mut interrupted = false;
    let mut this_run: Vec<SuiteState> = Vec::new();
    if let (Some(model), Some(pass_record)) = (&model, pass.as_mut()) {
        if resumed {
            report(Event::Note {
                message: format!(
                    "monitor: continuing pass {} (started {}) in {}",
                    pass_record.pass_id,
                    pass_record.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
                    pass_record.pass_dir.display()
                ),
            });
        }
        for (name, entry) in &to_run {
            let elapsed = started.elapsed().as_secs_f64();
            let remaining = settings.max_wall_s - elapsed;
            let suite = suite_of(entry);
            let mut state = SuiteState {
                asset: name.to_string(),
                status: SuiteStatus::Deferred,
                run_dir: None,
                exit: None,
                resumed: false,
                why: None,
            };
            let Some(suite) = suite else {
                state.status = SuiteStatus::NoSuite;
                state.why = Some(
                    "registered without an eval set (vet found no golden set); nothing to re-run"
                        .to_string(),
                );
                report_suite(&state);
                this_run.push(state.clone());
                pass_record.suites.insert(name.to_string(), state);
                continue;
            };
            if interrupted || remaining < 1.0 {
                state.why = Some(if interrupted {
                    "the pass was interrupted before it started".to_string()
                } else {
                    format!(
                        "the pass's wall-clock budget ({}) is spent; the next `monitor` runs it",
                        crate::report::progress::format_duration(
                            std::time::Duration::from_secs_f64(settings.max_wall_s)
                        )
                    )
                });
                report_suite(&state);
                this_run.push(state.clone());
                pass_record.suites.insert(name.to_string(), state);
                continue;
            }
            let run_id = run_folder_name(name, &pass_record.pass_id);
            let run_dir = pass_record.pass_dir.join(&run_id);
            let resuming = run_dir.join("manifest.json").is_file();
            let argv = if resuming {
                resume_argv(&run_dir, &settings.state, remaining, settings)
            } else {
                fresh_argv(
                    entry,
                    &suite,
                    model,
                    &pass_record.pass_dir,
                    &run_id,
                    &settings.state,
                    remaining,
                    settings,
                )
            };
            state.run_dir = Some(run_dir.clone());
            state.resumed = resuming;
            state.status = if settings.dry_run {
                SuiteStatus::WouldRun
            } else {
                SuiteStatus::Running
            };
            report(Event::MonitorSuiteStarted {
                asset: name.to_string(),
                model: model.clone(),
                run_dir: run_dir.clone(),
                resuming,
            });
            if settings.dry_run {
                this_run.push(state);
                continue;
            }
            pass_record.suites.insert(name.to_string(), state.clone());
            pass_record.updated_at = Utc::now();
            write_state_json(&record_path, pass_record)?;
            let end = run_suite(SuiteRequest {
                asset: name.to_string(),
                argv,
                run_dir: run_dir.clone(),
            })
            .await;
            match end {
                SuiteEnd::Exited(ending) => {
                    state.exit = Some(ending.code());
                    match ending {
                        Ending::Success | Ending::GateFailed | Ending::CompletedWithWarnings => {
                            state.status = SuiteStatus::Done;
                        }
                        Ending::Interrupted => {
                            state.status = SuiteStatus::Interrupted;
                            state.why = Some(
                                "interrupted; the next `monitor` resumes this run".to_string(),
                            );
                            interrupted = true;
                        }
                        other => {
                            state.status = SuiteStatus::Failed;
                            state.why = Some(format!(
                                "the run ended {} (exit {}); see its folder",
                                ending_word(other),
                                other.code()
                            ));
                        }
                    }
                }
                SuiteEnd::Failed { ending, error } => {
                    state.exit = Some(ending.code());
                    state.status = if ending == Ending::Interrupted {
                        interrupted = true;
                        SuiteStatus::Interrupted
                    } else {
                        SuiteStatus::Failed
                    };
                    state.why = Some(error);
                }
            }
            report_suite(&state);
            this_run.push(state.clone());
            pass_record.suites.insert(name.to_string(), state);
            pass_record.updated_at = Utc::now();
            write_state_json(&record_path, pass_record)?;
        }
        if !settings.dry_run {
            let open = pass_record.suites.values().any(|s| {
                matches!(
                    s.status,
                    SuiteStatus::Running | SuiteStatus::Interrupted | SuiteStatus::Deferred
                )
            });
            if !open {
                pass_record.finished_at = Some(Utc::now());
            }
            pass_record.updated_at = Utc::now();
            write_state_json(&record_path, pass_record)?;
        }
    } else if settings.dry_run {
        for (name, _) in &to_run {
            this_run.push(SuiteState {
                asset: name.to_string(),
                status: SuiteStatus::WouldRun,
                run_dir: None,
                exit: None,
                resumed: false,
                why: None,
            });
        }
    }

    // The matrix of the monitored assets from the store the runs fed.
    let store = read_store(&settings.state)?;
    let regress_settings = RegressSettings {
        threshold_pp: settings.threshold_pp,
        q: settings.q,
        ..RegressSettings::default()
    };
    let mut matrix = regress(&store, &regress_settings);
    matrix.assets.retain(|a| selected.contains_key(&a.asset));
    let registry_after =
        read_registry(&settings.state, &host.name)?.unwrap_or_else(|| registry.clone());
    let after = check(&registry_after, &store);
    let evaluated_now = |asset: &str| match (&settings.model, &bump) {
        (Some(model), Some(bump)) => store.assets.get(asset).is_some_and(|b| {
            b.entries
                .iter()
                .any(|e| entry_is_under(e, model) && e.recorded_at >= bump.at)
        }),
        _ => after
            .assets
            .iter()
            .any(|a| a.asset == asset && a.state != "pending"),
    };
    let assets: Vec<AssetStanding> = selected
        .iter()
        .map(|(name, entry)| {
            asset_standing(
                name,
                entry,
                matrix.assets.iter().find(|a| &&a.asset == name),
                model.as_deref(),
                evaluated_now(name),
            )
        })
        .collect();
    let rollup = roll_up(&assets);
    let mut suites: Vec<SuiteState> = match &pass {
        Some(p) if !settings.dry_run => p.suites.values().cloned().collect(),
        _ => this_run.clone(),
    };
    suites.sort_by(|a, b| a.asset.cmp(&b.asset));
    if selected.is_empty() {
        warnings.push(format!(
            "no skill on host `{}` is registered for monitoring: `skill-lift vet SKILL_DIR --host {h}` or `skill-lift run SKILL_DIR --monitor --host {h}` registers one",
            host.name,
            h = host.name
        ));
    }
    if bump.is_none() {
        warnings.push(format!(
            "no model change recorded for host `{}`: nothing is pending (record one with `skill-lift bump --host {} --model ID`, or let `skill-lift check` notice it)",
            host.name, host.name
        ));
    }
    for entry in selected.values() {
        if let Some(warning) = eval_set_changed(entry) {
            warnings.push(warning);
        }
    }
    // The value cards follow the store the pass fed (issue: value over time): recomputed and
    // recorded on every pass that is not a dry run; a failure is a warning, never the pass's end.
    let value = if settings.dry_run {
        None
    } else {
        match refresh_value_cards(
            &settings.state,
            &host.name,
            settings.history_root.as_deref(),
            settings.history_days,
            &settings.value,
        ) {
            Ok(book) => Some(book),
            Err(error) => {
                warnings.push(format!("the value cards were not refreshed: {error}"));
                None
            }
        }
    };
    let ending = if interrupted {
        Ending::Interrupted
    } else if suites.iter().any(|s| {
        s.status == SuiteStatus::Failed && s.exit == Some(Ending::InfrastructureError.code())
    }) {
        Ending::InfrastructureError
    } else if suites.iter().any(|s| s.status == SuiteStatus::Failed) {
        Ending::InputError
    } else if rollup.degraded > 0 {
        Ending::GateFailed
    } else if selected.is_empty() {
        Ending::NothingToRun
    } else if suites
        .iter()
        .any(|s| matches!(s.status, SuiteStatus::Deferred | SuiteStatus::NoSuite))
    {
        Ending::CompletedWithWarnings
    } else {
        Ending::Success
    };
    let summary = summary_line(
        &host.name,
        bump.as_ref(),
        model.as_deref(),
        &rollup,
        &suites,
        settings.dry_run,
    );
    let mut report_doc = MonitorReport {
        host: host.name.clone(),
        bump,
        model,
        model_change,
        pass_id: pass.as_ref().map(|p| p.pass_id.clone()),
        pass_dir: pass.as_ref().map(|p| p.pass_dir.clone()),
        resumed,
        suites,
        assets,
        rollup,
        unmonitored_pending,
        warnings,
        regress: matrix,
        value,
        summary,
        ending: ending_word(ending).to_string(),
        exit_code_class: format!("{ending:?}"),
        wall_s: 0.0,
    };
    report_doc.wall_s = started.elapsed().as_secs_f64();
    let text = render(&report_doc);
    if let Some(pass) = &pass
        && !settings.dry_run
        && pass.pass_dir.is_dir()
    {
        let json = serde_json::to_vec_pretty(&report_doc).expect("monitor report serializes");
        crate::disk::write_atomic(&pass.pass_dir.join("monitor.json"), &json)?;
        crate::disk::write_atomic(&pass.pass_dir.join("monitor.md"), text.as_bytes())?;
    }
    Ok(MonitorFinished {
        report: report_doc,
        ending,
        text,
    })
}

/// What `run --monitor` registers: the run's skill, eval set and settings.
#[derive(Debug, Clone)]
pub(crate) struct RunRegistration {
    /// The skill folder.
    pub skill_dir: PathBuf,
    /// The eval set given (`--evals`), else the skill's `evals/evals.json`.
    pub evals: Option<PathBuf>,
    /// The runner profile as given (`--runner`).
    pub runner: String,
    /// The model given (`--model`), else the profile's.
    pub model: Option<String>,
    pub k: u32,
    pub seed: u64,
    /// The calibre's name.
    pub calibre: String,
    pub decoys: Option<PathBuf>,
    pub no_decoys: bool,
    pub allow_draft: bool,
    /// The host whose registry receives the skill.
    pub host: String,
    /// The state folder.
    pub state: PathBuf,
}

/// Why `run --monitor` cannot register the skill.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegisterError {
    /// The state folder, host or registry cannot be read or written.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The skill cannot be read.
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    /// The eval set cannot be read.
    #[error(transparent)]
    EvalSet(#[from] crate::features::evalset::EvalSetError),
    /// The runner profile cannot be found or read.
    #[error(transparent)]
    Profile(#[from] crate::features::runner::profile::ProfileError),
    /// An unknown calibre.
    #[error(transparent)]
    Calibre(#[from] crate::values::unknown_name::UnknownName),
    /// The skill is registered on the host from another folder.
    #[error(
        "asset `{name}` is already registered on host `{host}` from {}; `run --monitor` registers the skill it measures, so pick another --host (e.g. generic) or remove the other copy from the registry",
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
}

impl super::Failure for RegisterError {
    fn ending(&self) -> Ending {
        match self {
            RegisterError::Registry(RegistryError::Io { .. }) => Ending::InfrastructureError,
            _ => Ending::InputError,
        }
    }
}

/// Before `run --monitor` spends anything: the host exists and the skill is not registered on
/// it from another folder.
pub(crate) fn check_registration(registration: &RunRegistration) -> Result<(), RegisterError> {
    let skill = crate::features::asset::load_skill(&registration.skill_dir)?;
    let host = find_host(&registration.state, &registration.host)?;
    if let Some(other) = crate::features::registry::scan::registered_elsewhere(
        &registration.state,
        &host.name,
        &skill.name,
        &registration.skill_dir,
    )? {
        return Err(RegisterError::RegisteredElsewhere {
            name: skill.name,
            host: host.name,
            other,
        });
    }
    Ok(())
}

/// Register the measured skill for monitoring on the host (after its run): its fingerprint,
/// golden set and the run's settings, which `monitor` re-runs after a model change. Returns the
/// asset's name.
pub(crate) fn register_run(registration: &RunRegistration) -> Result<String, RegisterError> {
    let host = find_host(&registration.state, &registration.host)?;
    let calibre: crate::features::asset::fingerprint::Calibre = registration.calibre.parse()?;
    let eval_path = registration
        .evals
        .clone()
        .unwrap_or_else(|| crate::features::evalset::default_eval_path(&registration.skill_dir));
    let set = crate::features::evalset::load_eval_set(&eval_path, &registration.skill_dir)?;
    let path = crate::features::runner::profile::resolve_profile_path(&registration.runner)?;
    let profile = crate::features::runner::profile::load_profile(&path)?;
    let model = registration
        .model
        .clone()
        .unwrap_or_else(|| profile.profile.model.clone());
    let print = crate::features::asset::fingerprint::fingerprint(&registration.skill_dir, calibre)
        .map_err(RegistryError::from)?;
    let monitoring = crate::features::registry::scan::Monitoring {
        registered_at: Utc::now(),
        vetted_fingerprint: print.digest,
        golden_set: Some(crate::features::registry::scan::RegisteredSet {
            path: super::absolute(&set.path),
            digest: set.digest.clone(),
            items: set.runnable_cases(registration.allow_draft).len(),
        }),
        trigger_set: None,
        vet_dir: None,
        decision: "run".to_string(),
        runner: profile.name.clone(),
        model,
        registered_by: crate::features::registry::scan::RegisteredBy::Run,
        suite: Some(MonitoredSuite {
            runner: suite_runner(&profile),
            evals: super::absolute(&set.path),
            k: registration.k,
            seed: registration.seed,
            calibre: registration.calibre.clone(),
            decoys: registration.decoys.as_deref().map(super::absolute),
            no_decoys: registration.no_decoys,
            allow_draft: registration.allow_draft,
        }),
    };
    let (name, _) = crate::features::registry::scan::register_monitored(
        &registration.state,
        &host,
        &registration.skill_dir,
        calibre,
        monitoring,
    )?;
    report(Event::Note {
        message: format!(
            "`{name}` registered for monitoring on host `{}` ({}): after a model change, `skill-lift monitor --host {}` re-runs this eval set with these settings",
            host.name,
            registry_path(&registration.state, &host.name).display(),
            host.name
        ),
    });
    Ok(name)
}

/// The suite to re-run: the registration's stored run settings, else (registrations written
/// before they were stored) the golden set with the registered runner, K = 3 and seed 42.
fn suite_of(entry: &AssetEntry) -> Option<MonitoredSuite> {
    let monitoring = entry.monitoring.as_ref()?;
    if let Some(suite) = &monitoring.suite {
        return Some(suite.clone());
    }
    let golden = monitoring.golden_set.as_ref()?;
    Some(MonitoredSuite {
        runner: monitoring.runner.clone(),
        evals: golden.path.clone(),
        k: LEGACY_K,
        seed: crate::analysis::skill_order::DEFAULT_SEED,
        calibre: entry.calibre.name().to_string(),
        decoys: None,
        no_decoys: false,
        allow_draft: false,
    })
}

/// A warning when the registered eval set's bytes differ from what was registered: its
/// verdicts form a new row of the matrix, never compared with the old one.
fn eval_set_changed(entry: &AssetEntry) -> Option<String> {
    let golden = entry.monitoring.as_ref()?.golden_set.as_ref()?;
    let bytes = std::fs::read(&golden.path).ok();
    let name = entry
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match bytes {
        None => Some(format!(
            "{name}: the registered eval set {} cannot be read; its suite cannot run",
            golden.path.display()
        )),
        Some(bytes)
            if crate::features::asset::fingerprint::sha256_digest(&bytes) != golden.digest
                && golden.path.is_file() =>
        {
            Some(format!(
                "{name}: the eval set {} changed since it was registered; its new verdicts form a row of their own in the matrix and are not compared with the old ones",
                golden.path.display()
            ))
        }
        Some(_) => None,
    }
}

/// The run folder's name — and the run's id in the baseline store — for `asset` in the pass
/// `pass_id`: `<asset>-<pass_id>`, the asset's name made a plain folder name. Unique per pass,
/// so the runs of two passes never share an id: the store's per-run figures (the value card's
/// lift and marginal cost of the latest run) never mix two models' trials.
fn run_folder_name(asset: &str, pass_id: &str) -> String {
    let asset = if super::is_plain_folder_name(asset) {
        asset.to_string()
    } else {
        asset
            .replace(['/', '\\'], "_")
            .trim_start_matches('.')
            .to_string()
    };
    format!("{asset}-{pass_id}")
}

/// `run` continuing the started run folder `run_dir` (its missing trials, and the trials
/// unscoreable for an infrastructure cause), within what is left of the budget.
fn resume_argv(
    run_dir: &Path,
    state: &Path,
    remaining_s: f64,
    settings: &MonitorSettings,
) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "run".into(),
        "--resume".into(),
        run_dir.display().to_string(),
        "--retry-unscoreable".into(),
        "--state".into(),
        state.display().to_string(),
        "--quiet".into(),
        "--max-wall".into(),
        format!("{}", remaining_s.floor()),
    ];
    budgets(&mut argv, settings);
    argv
}

/// `run` of the suite under `model` into `<pass_dir>/<run_id>`.
#[allow(clippy::too_many_arguments)]
fn fresh_argv(
    entry: &AssetEntry,
    suite: &MonitoredSuite,
    model: &str,
    pass_dir: &Path,
    run_id: &str,
    state: &Path,
    remaining_s: f64,
    settings: &MonitorSettings,
) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "run".into(),
        entry.path.display().to_string(),
        "--runner".into(),
        suite.runner.clone(),
        "--model".into(),
        model.to_string(),
        "-k".into(),
        suite.k.to_string(),
        "--seed".into(),
        suite.seed.to_string(),
        "--evals".into(),
        suite.evals.display().to_string(),
        "--calibre".into(),
        suite.calibre.clone(),
        "--out".into(),
        pass_dir.display().to_string(),
        "--run-id".into(),
        run_id.to_string(),
        "--state".into(),
        state.display().to_string(),
        "--quiet".into(),
        "--max-wall".into(),
        format!("{}", remaining_s.floor()),
    ];
    if settings.sequential {
        argv.push("--sequential".into());
    }
    if let Some(decoys) = &suite.decoys {
        argv.extend(["--decoys".into(), decoys.display().to_string()]);
    }
    if suite.no_decoys {
        argv.push("--no-decoys".into());
    }
    if suite.allow_draft {
        argv.push("--allow-draft".into());
    }
    budgets(&mut argv, settings);
    argv
}

/// The per-suite cost and token budgets, when given.
fn budgets(argv: &mut Vec<String>, settings: &MonitorSettings) {
    if let Some(usd) = settings.max_cost_usd {
        argv.extend(["--max-cost-usd".into(), usd.to_string()]);
    }
    if let Some(tokens) = settings.max_tokens {
        argv.extend(["--max-tokens".into(), tokens.to_string()]);
    }
}

fn report_suite(state: &SuiteState) {
    report(Event::MonitorSuiteEnded {
        asset: state.asset.clone(),
        status: state.status.as_str(),
        why: state.why.clone().unwrap_or_else(|| {
            state
                .run_dir
                .as_ref()
                .map_or(String::new(), |d| format!("run folder {}", d.display()))
        }),
    });
}

/// An ending in words (`success`, `degraded`, …), as the report states it.
fn ending_word(ending: Ending) -> &'static str {
    match ending {
        Ending::Success => "success",
        Ending::GateFailed => "degraded",
        Ending::InputError => "input error",
        Ending::InfrastructureError => "infrastructure error",
        Ending::NothingToRun => "nothing to run",
        Ending::CompletedWithWarnings => "completed with warnings",
        Ending::Interrupted => "interrupted",
        Ending::Busy => "busy",
    }
}

/// One monitored asset's standing under `model`, from its matrix.
fn asset_standing(
    name: &str,
    entry: &AssetEntry,
    matrix: Option<&AssetMatrix>,
    model: Option<&str>,
    evaluated: bool,
) -> AssetStanding {
    let into_model: Vec<&Comparison> = matrix
        .map(|m| {
            m.comparisons
                .iter()
                .filter(|c| Some(c.to_model.as_str()) == model)
                .collect()
        })
        .unwrap_or_default();
    let rank = |c: &Comparison| match c.flag.as_str() {
        "DEGRADED" => 0,
        "VOLATILE" => 1,
        _ => 2,
    };
    let worst = into_model
        .iter()
        .copied()
        .min_by(|a, b| rank(a).cmp(&rank(b)).then(b.drop_pp.total_cmp(&a.drop_pp)));
    let Some(comparison) = worst else {
        let drift = matrix.is_some_and(|m| m.flags.iter().any(|f| f == "FINGERPRINT-DRIFT"));
        let (standing, evidence) = if !evaluated {
            (
                Standing::NotEvaluated,
                format!(
                    "no verdict under {} since the model change",
                    model.unwrap_or("the current model")
                ),
            )
        } else if drift {
            (
                Standing::NoComparison,
                "FINGERPRINT-DRIFT: the skill was edited, so the new model's row has no earlier model to compare with".to_string(),
            )
        } else {
            (
                Standing::NoComparison,
                "no earlier model in the same row (fingerprint × runner × eval set) to compare with".to_string(),
            )
        };
        let _ = entry;
        return AssetStanding {
            asset: name.to_string(),
            standing,
            comparison: None,
            cause: None,
            remedy: None,
            evidence,
        };
    };
    let standing = match comparison.flag.as_str() {
        "DEGRADED" => Standing::Degraded,
        "VOLATILE" => Standing::Volatile,
        _ => Standing::Unchanged,
    };
    let numbers = format!(
        "{} → {}: {:.1}% → {:.1}% ({:+.1} pp) over {} cases, {} down / {} up, {} p {} (BH-adjusted {})",
        comparison.from_model,
        comparison.to_model,
        comparison.from_rate * 100.0,
        comparison.to_rate * 100.0,
        -comparison.drop_pp,
        comparison.paired_cases,
        comparison.cases_down,
        comparison.cases_up,
        comparison.test,
        crate::analysis::text::format_p_value(comparison.p),
        crate::analysis::text::format_p_value(comparison.p_adjusted)
    );
    let (cause, remedy, evidence) = match (&comparison.attribution, standing) {
        (Some(attribution), Standing::Degraded) => (
            Some(attribution.target),
            Some(remedy_words(attribution.target.remedy())),
            format!("{numbers}; {}", attribution.evidence),
        ),
        _ => (None, None, numbers),
    };
    AssetStanding {
        asset: name.to_string(),
        standing,
        comparison: Some(comparison.clone()),
        cause,
        remedy,
        evidence,
    }
}

/// A remedy in words: `rewrite the tool description`, `model-dependent`, `unattributed`.
fn remedy_words(remedy: Remedy) -> String {
    match remedy {
        Remedy::Rewrite(part) => format!("rewrite the {part}"),
        Remedy::ModelDependent => "model-dependent".to_string(),
        Remedy::Unattributed => "unattributed".to_string(),
    }
}

/// The roll-up's counts.
fn roll_up(assets: &[AssetStanding]) -> Rollup {
    let mut rollup = Rollup::default();
    for asset in assets {
        match asset.standing {
            Standing::Degraded => {
                rollup.degraded += 1;
                match asset.cause.map(Cause::remedy) {
                    Some(Remedy::Rewrite(part)) => {
                        rollup.to_rewrite += 1;
                        *rollup.rewrite_parts.entry(part.to_string()).or_default() += 1;
                    }
                    Some(Remedy::ModelDependent) => rollup.model_dependent += 1,
                    Some(Remedy::Unattributed) | None => rollup.unattributed += 1,
                }
            }
            Standing::Volatile => rollup.volatile += 1,
            Standing::Unchanged => rollup.unchanged += 1,
            Standing::NoComparison => rollup.no_comparison += 1,
            Standing::NotEvaluated => rollup.not_evaluated += 1,
        }
    }
    rollup
}

/// The one-line summary: `monitor HOST, model M: N degraded — M to rewrite (…), K
/// model-dependent; L unchanged`, then what else a reader must know (volatile, unattributed,
/// not comparable, not evaluated, suites run).
fn summary_line(
    host: &str,
    bump: Option<&ModelBump>,
    model: Option<&str>,
    rollup: &Rollup,
    suites: &[SuiteState],
    dry_run: bool,
) -> String {
    let Some(model) = model.filter(|_| bump.is_some()) else {
        return format!("monitor {host}: no model change recorded; nothing pending");
    };
    let parts: Vec<String> = rollup
        .rewrite_parts
        .iter()
        .map(|(part, n)| format!("{n} {part}"))
        .collect();
    let mut line = format!(
        "monitor {host}, model {model}: {} degraded — {} to rewrite{}, {} model-dependent; {} unchanged",
        rollup.degraded,
        rollup.to_rewrite,
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        },
        rollup.model_dependent,
        rollup.unchanged
    );
    for (n, words) in [
        (
            rollup.unattributed,
            "degraded without signals (unattributed)",
        ),
        (rollup.volatile, "volatile (watch)"),
        (rollup.no_comparison, "without an earlier model to compare"),
        (rollup.not_evaluated, "not evaluated yet"),
    ] {
        if n > 0 {
            line.push_str(&format!("; {n} {words}"));
        }
    }
    let count = |status: SuiteStatus| suites.iter().filter(|s| s.status == status).count();
    if dry_run {
        line.push_str(&format!(
            " (dry run: {} suite(s) would run)",
            count(SuiteStatus::WouldRun)
        ));
    } else if suites.is_empty() {
        line.push_str(" (nothing pending)");
    } else {
        let mut ran = vec![format!("{} suite(s) re-run", count(SuiteStatus::Done))];
        for status in [
            SuiteStatus::Failed,
            SuiteStatus::Interrupted,
            SuiteStatus::Deferred,
            SuiteStatus::NoSuite,
        ] {
            let n = count(status);
            if n > 0 {
                ran.push(format!("{n} {}", status.as_str()));
            }
        }
        line.push_str(&format!(" ({})", ran.join(", ")));
    }
    line
}

/// The report as the terminal and `monitor.md` show it: the matrix of the monitored assets,
/// each asset's standing with its evidence, the suites, the warnings, the summary line last.
pub(crate) fn render(report: &MonitorReport) -> String {
    let mut out = String::new();
    out.push_str(&format!("# skill-lift monitor: host `{}`\n\n", report.host));
    if let Some(change) = &report.model_change {
        out.push_str(&format!("{change}\n"));
    }
    match &report.bump {
        Some(bump) => out.push_str(&format!(
            "model change: {} recorded {}{}; suites run under {}\n",
            bump.model,
            bump.at.format("%Y-%m-%d %H:%M:%S UTC"),
            bump.note
                .as_deref()
                .map_or(String::new(), |n| format!(" ({n})")),
            report.model.as_deref().unwrap_or(&bump.model)
        )),
        None => out.push_str("model change: none recorded\n"),
    }
    if let Some(dir) = &report.pass_dir {
        out.push_str(&format!(
            "pass: {}{}\n",
            dir.display(),
            if report.resumed { " (continued)" } else { "" }
        ));
    }
    out.push('\n');
    if !report.suites.is_empty() {
        out.push_str("suites:\n");
        for suite in &report.suites {
            out.push_str(&format!(
                "  {}: {}{}{}\n",
                suite.asset,
                suite.status.as_str(),
                if suite.resumed { " (resumed)" } else { "" },
                match (&suite.why, &suite.run_dir) {
                    (Some(why), _) => format!(" — {why}"),
                    (None, Some(dir)) => format!(" — {}", dir.display()),
                    (None, None) => String::new(),
                }
            ));
        }
        out.push('\n');
    }
    if !report.regress.assets.is_empty() {
        out.push_str(&to_table(&report.regress));
        out.push('\n');
    }
    if !report.assets.is_empty() {
        out.push_str("standing under the current model:\n");
        for asset in &report.assets {
            out.push_str(&format!(
                "  {} {}{}: {}\n",
                asset.standing.as_str(),
                asset.asset,
                match (&asset.remedy, &asset.cause) {
                    (Some(remedy), Some(cause)) => format!(" — {remedy} (cause: {cause})"),
                    _ => String::new(),
                },
                asset.evidence
            ));
        }
        out.push('\n');
    }
    if let Some(book) = &report.value {
        out.push_str(&crate::features::registry::value::render_value(book));
        out.push('\n');
    }
    for warning in &report.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    if !report.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str(&report.summary);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(name: &str, standing: Standing, cause: Option<Cause>) -> AssetStanding {
        AssetStanding {
            asset: name.into(),
            standing,
            comparison: None,
            cause,
            remedy: None,
            evidence: String::new(),
        }
    }

    #[test]
    fn roll_up_counts_each_remedy_and_the_summary_says_so() {
        let assets = vec![
            standing("a", Standing::Degraded, Some(Cause::ToolDescription)),
            standing("b", Standing::Degraded, Some(Cause::ToolDescriptionFormat)),
            standing("c", Standing::Degraded, Some(Cause::TriggerDescription)),
            standing("d", Standing::Degraded, Some(Cause::ModelInternal)),
            standing("e", Standing::Degraded, Some(Cause::Unknown)),
            standing("f", Standing::Unchanged, None),
            standing("g", Standing::Volatile, None),
            standing("h", Standing::NotEvaluated, None),
        ];
        let rollup = roll_up(&assets);
        assert_eq!(rollup.degraded, 5);
        assert_eq!(rollup.to_rewrite, 3);
        assert_eq!(rollup.rewrite_parts["tool description"], 2);
        assert_eq!(rollup.rewrite_parts["trigger description"], 1);
        assert_eq!(rollup.model_dependent, 1);
        assert_eq!(rollup.unattributed, 1);
        let bump = ModelBump::manual("m-b", Utc::now(), None);
        let suites = vec![SuiteState {
            asset: "a".into(),
            status: SuiteStatus::Done,
            run_dir: None,
            exit: Some(1),
            resumed: false,
            why: None,
        }];
        let line = summary_line("h", Some(&bump), Some("m-b"), &rollup, &suites, false);
        assert_eq!(
            line,
            "monitor h, model m-b: 5 degraded — 3 to rewrite (2 tool description, 1 trigger description), 1 model-dependent; 1 unchanged; 1 degraded without signals (unattributed); 1 volatile (watch); 1 not evaluated yet (1 suite(s) re-run)"
        );
        assert_eq!(
            summary_line("h", None, None, &Rollup::default(), &[], false),
            "monitor h: no model change recorded; nothing pending"
        );
    }

    #[test]
    fn run_folder_names_are_plain() {
        assert_eq!(run_folder_name("pirate", "p1"), "pirate-p1");
        assert_eq!(run_folder_name("a/b", "p1"), "a_b-p1");
        assert_eq!(run_folder_name(".x", "p1"), "x-p1");
    }
}
