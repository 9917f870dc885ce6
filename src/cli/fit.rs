//! `skill-lift lint` and `skill-lift env`: run the static fit checks of `crate::skill_fit`,
//! write what `crate::skill_fit::render` renders (text or JSON) and map them to exit codes.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::CommandError;
use super::Outcome;
use crate::reporter::{Event, report};
use crate::skill_fit::SkillFitError;
use crate::skill_fit::environment::{
    ContextLimit, EnvOptions, context_limit_for, reconcile_environment,
};
use crate::skill_fit::lint::{LintOptions, against, lint_skill};
use crate::skill_fit::render::{render_env, render_lint};

/// Output format of `lint` and `env`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A table for people.
    Text,
    /// One JSON document on stdout.
    Json,
}

/// Flags of `skill-lift lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    /// Skill folders (each holds SKILL.md). With --against a state folder and no folder here:
    /// every skill its registries list.
    #[arg(value_name = "SKILL_DIR")]
    pub skill_dirs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: OutputFormat,
    /// Put each skill's lint score beside its measured lift (same name and fingerprint) from a
    /// state folder (baseline-results.json), a run folder or a results folder, and report
    /// Spearman's rho with a 95% interval over the skills that have both.
    #[arg(long, value_name = "RESULTS_OR_STATE")]
    pub against: Option<PathBuf>,
    /// Warnings fail the lint too (exit 1).
    #[arg(long)]
    pub deny_warnings: bool,
    /// Body budget in estimated tokens (characters/4 for ASCII, 1 per other character).
    #[arg(long, value_name = "N", default_value_t = crate::skill_fit::lint::DEFAULT_MAX_BODY_TOKENS)]
    pub max_body_tokens: usize,
}

/// Flags of `skill-lift env`.
#[derive(Debug, Args)]
#[command(
    mut_arg("runners", |arg| super::flag_groups::RunnerArgs::single(arg).default_value(None).help("Runner profile whose model limit the skill's size is checked against (default: local, when it can be found)")),
    mut_arg("models", |arg| super::flag_groups::RunnerArgs::single(arg).help("Model id (overrides the profile's, for the context limit)"))
)]
pub struct EnvArgs {
    /// The skill folder (holds SKILL.md).
    #[arg(value_name = "SKILL_DIR")]
    pub skill_dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: OutputFormat,
    #[command(flatten)]
    pub agent: super::flag_groups::RunnerArgs,
    /// The model's context window in tokens (overrides the profile and the known limits).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub context_limit: Option<u64>,
    /// Python interpreter to check imports against (default: python3, then python, in PATH).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
}

fn fit_error(error: SkillFitError) -> CommandError {
    CommandError::input(error)
}

/// Run `skill-lift lint`.
pub fn lint(args: LintArgs) -> Result<Outcome, CommandError> {
    let options = LintOptions {
        max_body_tokens: args.max_body_tokens,
        ..LintOptions::default()
    };
    let dirs = if args.skill_dirs.is_empty() {
        match &args.against {
            Some(source) if crate::registry::baseline::baseline_path(source).is_file() => {
                registered_skills(source)?
            }
            _ => {
                return Err(CommandError::input(anyhow::anyhow!(
                    "give at least one SKILL_DIR (or --against a state folder to lint every registered skill)"
                )));
            }
        }
    } else {
        args.skill_dirs.clone()
    };
    let mut reports = Vec::new();
    for dir in &dirs {
        reports.push(lint_skill(dir, &options).map_err(fit_error)?);
    }
    let against_report = match &args.against {
        Some(source) => Some(against(&reports, source).map_err(fit_error)?),
        None => None,
    };
    let text = render_lint(
        &reports,
        against_report.as_ref(),
        args.format == OutputFormat::Json,
    )
    .context("serialize the lint report")
    .map_err(CommandError::infrastructure)?;
    crate::reporter::result(&text);
    let failed = reports
        .iter()
        .filter(|r| !r.passes(args.deny_warnings))
        .count();
    if failed > 0 {
        report(Event::LintFailed {
            failed,
            skills: reports.len(),
            deny_warnings: args.deny_warnings,
        });
        Ok(Outcome::GateFailed)
    } else {
        Ok(Outcome::Success)
    }
}

/// Skill folders listed by the registries of a state folder (`registry.<host>.json`).
fn registered_skills(state: &Path) -> Result<Vec<PathBuf>, CommandError> {
    let mut dirs = Vec::new();
    let entries = std::fs::read_dir(state)
        .with_context(|| format!("{}: cannot list the state folder", state.display()))
        .map_err(CommandError::input)?;
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
    for host in hosts {
        let registry =
            crate::registry::scan::read_registry(state, &host).map_err(CommandError::input)?;
        for entry in registry.into_iter().flat_map(|r| r.assets.into_values()) {
            if entry.kind == crate::registry::surface::AssetKind::Skill
                && entry.path.join("SKILL.md").is_file()
                && !dirs.contains(&entry.path)
            {
                dirs.push(entry.path);
            }
        }
    }
    if dirs.is_empty() {
        return Err(CommandError::input(anyhow::anyhow!(
            "{}: no registered skill folder found (run `skill-lift scan` first, or give SKILL_DIRs)",
            state.display()
        )));
    }
    Ok(dirs)
}

/// The context limit for `env` or `run`: `--context-limit`, else the runner profile's.
fn resolve_context_limit(
    runner: Option<&str>,
    model: Option<&str>,
    explicit: Option<u64>,
) -> Result<Option<ContextLimit>, CommandError> {
    let loaded = match runner {
        Some(name) => Some(
            crate::runner::profile::resolve_profile_path(name)
                .and_then(|path| crate::runner::profile::load_profile(&path))
                .map_err(CommandError::input)?,
        ),
        // The default profile is a convenience: not finding it leaves the limit unknown.
        None => crate::runner::profile::resolve_profile_path("local")
            .and_then(|path| crate::runner::profile::load_profile(&path))
            .ok(),
    };
    if let Some(tokens) = explicit {
        return Ok(Some(ContextLimit {
            tokens,
            source: "--context-limit".to_string(),
            reply_tokens: loaded
                .as_ref()
                .and_then(|l| l.profile.max_tokens)
                .unwrap_or(0),
        }));
    }
    Ok(loaded.and_then(|loaded| context_limit_for(&loaded.name, &loaded.profile, model)))
}

/// Run `skill-lift env`.
pub fn env(args: EnvArgs) -> Result<Outcome, CommandError> {
    let mut options = EnvOptions::from_process();
    options.python = args.python.clone();
    options.context_limit = resolve_context_limit(
        args.agent.given_runner(),
        args.agent.model(),
        args.context_limit,
    )?;
    let report = reconcile_environment(&args.skill_dir, &options).map_err(fit_error)?;
    let text = render_env(&report, args.format == OutputFormat::Json)
        .context("serialize the env report")
        .map_err(CommandError::infrastructure)?;
    crate::reporter::result(&text);
    if report.passes() {
        Ok(Outcome::Success)
    } else {
        crate::reporter::report(Event::EnvRedFlags {
            missing: report.missing,
            skill: report.name.clone(),
        });
        Ok(Outcome::GateFailed)
    }
}
