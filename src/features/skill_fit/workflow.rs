//! `lint` and `env` as workflows: which skill folders are checked ([`lint_skills`], with the
//! registered skills of a state folder under `--against`), which runner profile and context
//! limit the environment is checked against (`env_profile`, `env_context_limit`), the report
//! printed through the reporter and whether the checks passed. The command line maps passed / not passed to exit codes.

use std::path::{Path, PathBuf};

use super::SkillFitError;
use super::environment::{ContextLimit, EnvOptions, context_limit_for, reconcile_environment};
use super::lint::{LintOptions, against, lint_skill};
use super::render::{render_env, render_lint};
use crate::features::registry::RegistryError;
use crate::features::runner::profile::{
    LoadedProfile, ProfileError, load_profile, resolve_profile_path,
};
use crate::values::reporter::{Event, report, result};

/// What `lint` checks and prints.
#[derive(Debug, Clone)]
pub(crate) struct LintSettings {
    /// Skill folders; empty with `against` a state folder: every skill its registries list.
    pub skill_dirs: Vec<PathBuf>,
    /// Print one JSON document instead of a table.
    pub json: bool,
    /// A state folder, run folder or results folder whose measured lifts the scores are put
    /// beside.
    pub against: Option<PathBuf>,
    /// Warnings fail the lint too.
    pub deny_warnings: bool,
    /// Body budget in estimated tokens.
    pub max_body_tokens: usize,
}

/// What `env` checks and prints.
#[derive(Debug, Clone)]
pub(crate) struct EnvSettings {
    /// The skill folder.
    pub skill_dir: PathBuf,
    /// Print one JSON document instead of a table.
    pub json: bool,
    /// The runner profile whose model limit is checked against (default: `local`, when found).
    pub runner: Option<String>,
    /// The model id (overrides the profile's, for the context limit).
    pub model: Option<String>,
    /// The context window in tokens (overrides the profile and the known limits).
    pub context_limit: Option<u64>,
    /// The Python interpreter imports are checked against.
    pub python: Option<PathBuf>,
}

/// A failure of `lint` or `env`: every one an input error, except a report that cannot be
/// rendered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FitCommandError {
    /// A skill folder cannot be checked.
    #[error(transparent)]
    Fit(#[from] SkillFitError),
    /// No skill folder was given and `--against` names no state folder.
    #[error(
        "give at least one SKILL_DIR (or --against a state folder to lint every registered skill)"
    )]
    NoSkillDirs,
    /// The state folder cannot be listed.
    #[error("{}: cannot list the state folder", .path.display())]
    ListState {
        /// The state folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A registry of the state folder cannot be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The state folder's registries list no skill folder.
    #[error(
        "{}: no registered skill folder found (run `skill-lift scan` first, or give SKILL_DIRs)",
        .0.display()
    )]
    NoRegisteredSkills(PathBuf),
    /// The runner profile named cannot be found or read.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The report cannot be rendered as JSON (which report).
    #[error("serialize the {0} report")]
    Serialize(&'static str, #[source] serde_json::Error),
}

/// `lint`: check each skill folder, print the report (with the lint score beside measured lift
/// under `--against`) and report the failures; true when every skill passes.
pub(crate) fn lint_skills(settings: &LintSettings) -> Result<bool, FitCommandError> {
    let options = LintOptions {
        max_body_tokens: settings.max_body_tokens,
        ..LintOptions::default()
    };
    let dirs = match &settings.against {
        _ if !settings.skill_dirs.is_empty() => settings.skill_dirs.clone(),
        Some(source) if crate::features::registry::baseline::baseline_path(source).is_file() => {
            registered_skills(source)?
        }
        _ => return Err(FitCommandError::NoSkillDirs),
    };
    let reports = dirs
        .iter()
        .map(|dir| lint_skill(dir, &options))
        .collect::<Result<Vec<_>, _>>()?;
    let against_report = settings
        .against
        .as_ref()
        .map(|source| against(&reports, source))
        .transpose()?;
    let text = render_lint(&reports, against_report.as_ref(), settings.json)
        .map_err(|e| FitCommandError::Serialize("lint", e))?;
    result(&text);
    let failed = reports
        .iter()
        .filter(|r| !r.passes(settings.deny_warnings))
        .count();
    if failed > 0 {
        report(Event::LintFailed {
            failed,
            skills: reports.len(),
            deny_warnings: settings.deny_warnings,
        });
    }
    Ok(failed == 0)
}

/// Skill folders listed by the registries of a state folder (`registry.<host>.json`), hosts in
/// name order, each folder once.
fn registered_skills(state: &Path) -> Result<Vec<PathBuf>, FitCommandError> {
    let entries = std::fs::read_dir(state).map_err(|source| FitCommandError::ListState {
        path: state.to_path_buf(),
        source,
    })?;
    let mut hosts: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("registry.")
                .and_then(|n| n.strip_suffix(".json"))
                .map(str::to_string)
        })
        .collect();
    hosts.sort();
    let mut dirs = Vec::new();
    for host in hosts {
        let registry = crate::features::registry::scan::read_registry(state, &host)?;
        for entry in registry.into_iter().flat_map(|r| r.assets.into_values()) {
            if entry.kind == crate::features::registry::surface::AssetKind::Skill
                && entry.path.join("SKILL.md").is_file()
                && !dirs.contains(&entry.path)
            {
                dirs.push(entry.path);
            }
        }
    }
    if dirs.is_empty() {
        return Err(FitCommandError::NoRegisteredSkills(state.to_path_buf()));
    }
    Ok(dirs)
}

/// The runner profile `env` checks against: the one named, else the `local` profile when it can
/// be found (`None` when not: the runner's findings are then unknown).
fn env_profile(runner: Option<&str>) -> Result<Option<LoadedProfile>, ProfileError> {
    let load = |name: &str| -> Result<LoadedProfile, ProfileError> {
        load_profile(&resolve_profile_path(name)?)
    };
    Ok(match runner {
        Some(name) => Some(load(name)?),
        // The default profile is a convenience: not finding it leaves the runner unknown.
        None => load("local").ok(),
    })
}

/// The context limit for `env`: `explicit` (`--context-limit`, with the profile's reply
/// reserve), else the profile's ([`context_limit_for`]), for `model` when given.
fn env_context_limit(
    loaded: Option<&LoadedProfile>,
    model: Option<&str>,
    explicit: Option<u64>,
) -> Option<ContextLimit> {
    if let Some(tokens) = explicit {
        return Some(ContextLimit {
            tokens,
            source: "--context-limit".to_string(),
            reply_tokens: loaded.and_then(|l| l.profile.max_tokens).unwrap_or(0),
        });
    }
    loaded.and_then(|loaded| context_limit_for(&loaded.name, &loaded.profile, model))
}

/// `env`: reconcile what the skill assumes with this machine and the runner profile, print the
/// report and report the red flags; true when nothing is missing.
pub(crate) fn check_environment(settings: &EnvSettings) -> Result<bool, FitCommandError> {
    let loaded = env_profile(settings.runner.as_deref())?;
    let model = settings.model.as_deref();
    let mut options = match &loaded {
        Some(loaded) => {
            EnvOptions::from_process().with_runner(&loaded.name, &loaded.profile, model)
        }
        None => EnvOptions::from_process(),
    };
    options.python = settings.python.clone();
    options.context_limit = env_context_limit(loaded.as_ref(), model, settings.context_limit);
    let env = reconcile_environment(&settings.skill_dir, &options)?;
    let text = render_env(&env, settings.json).map_err(|e| FitCommandError::Serialize("env", e))?;
    result(&text);
    let passes = env.passes();
    if !passes {
        report(Event::EnvRedFlags {
            missing: env.missing,
            skill: env.name.clone(),
        });
    }
    Ok(passes)
}
