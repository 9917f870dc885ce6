//! `skill-lift lint` and `skill-lift env`: render the static fit checks of `crate::skill_fit`
//! (text or JSON) and map them to exit codes; also the red-flag preamble `run` prints.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::CommandError;
use super::Outcome;
use crate::skill_fit::environment::{
    ContextLimit, EnvOptions, EnvironmentReport, FitStatus, context_limit_for,
    reconcile_environment,
};
use crate::skill_fit::lint::{
    AgainstReport, LintOptions, LintReport, RuleStatus, against, lint_skill,
};
use crate::skill_fit::{STATIC_NOTICE, SkillFitError};

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
    match args.format {
        OutputFormat::Json => {
            let document = serde_json::json!({
                "notice": STATIC_NOTICE,
                "skills": reports,
                "against": against_report,
            });
            let text = serde_json::to_string_pretty(&document)
                .context("serialize the lint report")
                .map_err(CommandError::infrastructure)?;
            crate::outln!("{}", crate::disk::redact::redact_text(&text));
        }
        OutputFormat::Text => {
            crate::outln!("skill-lift lint: {STATIC_NOTICE}\n");
            for report in &reports {
                crate::out!("{}", lint_text(report));
            }
            if let Some(against) = &against_report {
                crate::out!("{}", against_text(against));
            }
        }
    }
    let failed = reports
        .iter()
        .filter(|r| !r.passes(args.deny_warnings))
        .count();
    if failed > 0 {
        crate::errln!(
            "skill-lift lint: {failed} of {} skill(s) failed ({})",
            reports.len(),
            if args.deny_warnings {
                "errors or warnings"
            } else {
                "errors"
            }
        );
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

fn lint_text(report: &LintReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} ({}): score {:.1}/100: {} error(s), {} warning(s), {} info; body ~{} tokens\n",
        report.name.as_deref().unwrap_or("(unparsed)"),
        report.skill_dir.display(),
        report.score,
        report.errors,
        report.warnings,
        report.infos,
        report.body_tokens
    ));
    out.push_str(&format!(
        "  {:<23} {:<8} {:<6} {}\n",
        "rule", "severity", "result", "checks"
    ));
    for rule in &report.rules {
        let status = match rule.status {
            RuleStatus::Passed => "pass",
            RuleStatus::Failed => "FAIL",
            RuleStatus::NotApplicable => "n/a",
        };
        out.push_str(&format!(
            "  {:<23} {:<8} {:<6} {}\n",
            rule.rule.id(),
            rule.severity.as_str(),
            status,
            rule.summary
        ));
    }
    if !report.findings.is_empty() {
        out.push_str("  findings:\n");
        for finding in &report.findings {
            out.push_str(&format!(
                "  - {} {}: {}\n",
                finding.severity.as_str(),
                finding.rule.id(),
                finding.message
            ));
            if let Some(evidence) = &finding.evidence {
                if evidence.text.is_empty() {
                    out.push_str(&format!("      at {}\n", evidence.location()));
                } else {
                    out.push_str(&format!(
                        "      at {}: {}\n",
                        evidence.location(),
                        evidence.text
                    ));
                }
            }
        }
    }
    out.push('\n');
    out
}

/// `model M, runner R, eval set E` (the digest's first 8 hex digits; "no eval set" for manual
/// verdicts).
fn group_label(model: &str, runner: &str, eval_set: Option<&str>) -> String {
    let eval_set = eval_set.map_or("no eval set".to_string(), |digest| {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        format!("eval set {}", &hex[..hex.len().min(8)])
    });
    format!("model {model}, runner {runner}, {eval_set}")
}

fn against_text(report: &AgainstReport) -> String {
    let mut out = format!(
        "Lint score vs measured lift ({}):\n  {:<28} {:>6} {:>9} {:>6}  note\n",
        report.source.display(),
        "skill",
        "score",
        "lift",
        "cases"
    );
    for row in &report.rows {
        let name = row
            .name
            .clone()
            .unwrap_or_else(|| row.skill_dir.display().to_string());
        if row.measured.is_empty() {
            out.push_str(&format!(
                "  {:<28} {:>6.1} {:>9} {:>6}  {}\n",
                name,
                row.lint_score,
                "-",
                "-",
                row.note.as_deref().unwrap_or("")
            ));
        }
        for measured in &row.measured {
            out.push_str(&format!(
                "  {:<28} {:>6.1} {:>+8.1}pp {:>6}  {}, {} run(s)\n",
                name,
                row.lint_score,
                100.0 * measured.lift,
                measured.cases,
                group_label(
                    &measured.model,
                    &measured.runner,
                    measured.eval_set.as_deref()
                ),
                measured.runs.len(),
            ));
        }
    }
    if report.groups.is_empty() {
        out.push_str("Spearman rho: no skill has a measured lift.\n");
    }
    for group in &report.groups {
        let label = group_label(&group.model, &group.runner, group.eval_set.as_deref());
        match (group.spearman_rho, group.interval_95) {
            (Some(rho), Some((low, high))) => out.push_str(&format!(
                "Spearman rho ({label}) = {rho:+.3}, 95% CI [{low:+.3}, {high:+.3}] (Fisher z), over {} skill(s) with both.\n",
                group.paired
            )),
            (Some(rho), None) => out.push_str(&format!(
                "Spearman rho ({label}) = {rho:+.3} over {} skill(s) with both; an interval needs at least 4.\n",
                group.paired
            )),
            (None, _) => out.push_str(&format!(
                "Spearman rho ({label}): not defined over {} skill(s) with both (needs 2 or more, with differing scores and lifts).\n",
                group.paired
            )),
        }
    }
    if report.groups.len() > 1 {
        out.push_str("One rho per model, runner and eval set: lifts measured under different ones are not pooled.\n");
    }
    out.push_str(&format!("Reference: {}.\n", report.aces_reference));
    out
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
    match args.format {
        OutputFormat::Json => {
            let document = serde_json::json!({
                "notice": ENV_NOTICE,
                "report": report,
            });
            let text = serde_json::to_string_pretty(&document)
                .context("serialize the env report")
                .map_err(CommandError::infrastructure)?;
            crate::outln!("{}", crate::disk::redact::redact_text(&text));
        }
        OutputFormat::Text => {
            crate::outln!("skill-lift env: {ENV_NOTICE}\n");
            crate::out!("{}", env_text(&report));
        }
    }
    if report.passes() {
        Ok(Outcome::Success)
    } else {
        crate::errln!(
            "skill-lift env: {} red flag(s): assumptions of `{}` this machine does not meet",
            report.missing,
            report.name
        );
        Ok(Outcome::GateFailed)
    }
}

/// What `env` is.
const ENV_NOTICE: &str = "Static reading of the skill's files against this machine (PATH, \
interpreters, packages, MCP configuration, OS, locale, model limit); nothing from the skill is \
run. A satisfied check is no evidence the skill works: measure that with `skill-lift run`.";

fn env_text(report: &EnvironmentReport) -> String {
    let mut out = format!(
        "{} ({}): {} missing, {} unknown, {} satisfied\n",
        report.name,
        report.skill_dir.display(),
        report.missing,
        report.unknown,
        report.satisfied
    );
    for finding in &report.findings {
        let status = match finding.status {
            FitStatus::Missing => "MISSING",
            FitStatus::Unknown => "unknown",
            FitStatus::Satisfied => "ok",
        };
        out.push_str(&format!(
            "  {:<8} {:<20} {}: {}\n",
            status,
            finding.kind.as_str(),
            finding.subject,
            finding.detail
        ));
        for evidence in &finding.evidence {
            out.push_str(&format!(
                "           at {}: {}\n",
                evidence.location(),
                evidence.text
            ));
        }
    }
    out
}

/// The red flags of `skill_dir` on this machine, as lines for the terminal; empty when none
/// (or when the skill cannot be read: `run` reports that itself). What `run` prints first.
pub fn red_flag_lines(
    skill_dir: &Path,
    profile_name: &str,
    profile: &crate::runner::profile::RunnerProfile,
    model: Option<&str>,
) -> Vec<String> {
    let mut options = EnvOptions::from_process();
    options.context_limit = context_limit_for(profile_name, profile, model);
    let Ok(report) = reconcile_environment(skill_dir, &options) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for finding in report.red_flags() {
        let at = finding
            .evidence
            .first()
            .map(|e| format!(" (at {}: {})", e.location(), e.text))
            .unwrap_or_default();
        lines.push(format!(
            "red flag: {} {}: {}{at}",
            finding.kind.as_str(),
            finding.subject,
            finding.detail
        ));
    }
    if !lines.is_empty() {
        lines.push(format!(
            "red flags: {} assumption(s) of `{}` this machine does not meet (`skill-lift env {}` for all)",
            report.missing,
            report.name,
            skill_dir.display()
        ));
    }
    lines
}

/// Print the red flags of `skill_dir` for a run with runner profile `runner` on stderr (nothing
/// when there are none, or when the skill or profile cannot be read: the run reports those).
pub fn print_red_flags(skill_dir: &Path, runner: &str, model: Option<&str>) {
    let Ok(loaded) = crate::runner::profile::resolve_profile_path(runner)
        .and_then(|path| crate::runner::profile::load_profile(&path))
    else {
        return;
    };
    for line in red_flag_lines(skill_dir, &loaded.name, &loaded.profile, model) {
        crate::errln!("{}", crate::disk::redact::redact_text(&line));
    }
}
