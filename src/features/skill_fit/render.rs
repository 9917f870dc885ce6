//! What `lint` and `env` print: their reports as text or JSON ([`render_lint`],
//! [`render_env`]), and the red flags `run` reports before it starts ([`report_red_flags`]).

use std::path::Path;

use super::STATIC_NOTICE;
use super::environment::{EnvOptions, EnvironmentReport, FitStatus, reconcile_environment};
use super::lint::{AgainstReport, LintReport, RuleStatus};
use crate::values::reporter::{Event, report};

/// `lint`'s result on stdout: the reports (and the `--against` comparison) as text, or as one
/// JSON document when `json`.
pub(crate) fn render_lint(
    reports: &[LintReport],
    against: Option<&AgainstReport>,
    json: bool,
) -> Result<String, serde_json::Error> {
    if json {
        let document = serde_json::json!({
            "notice": STATIC_NOTICE,
            "skills": reports,
            "against": against,
        });
        let text = serde_json::to_string_pretty(&document)?;
        return Ok(format!("{}\n", crate::disk::redact::redact_text(&text)));
    }
    let mut out = format!("skill-lift lint: {STATIC_NOTICE}\n\n");
    for report in reports {
        out.push_str(&lint_text(report));
    }
    if let Some(against) = against {
        out.push_str(&against_text(against));
    }
    Ok(out)
}

/// `env`'s result on stdout: the report as text, or as one JSON document when `json`.
pub(crate) fn render_env(
    report: &EnvironmentReport,
    json: bool,
) -> Result<String, serde_json::Error> {
    if json {
        let document = serde_json::json!({
            "notice": ENV_NOTICE,
            "report": report,
        });
        let text = serde_json::to_string_pretty(&document)?;
        return Ok(format!("{}\n", crate::disk::redact::redact_text(&text)));
    }
    Ok(format!(
        "skill-lift env: {ENV_NOTICE}\n\n{}",
        env_text(report)
    ))
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
pub(crate) fn red_flag_lines(
    skill_dir: &Path,
    profile_name: &str,
    profile: &crate::features::runner::profile::RunnerProfile,
    model: Option<&str>,
) -> Vec<String> {
    let options = EnvOptions::from_process().with_runner(profile_name, profile, model);
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

/// Report the red flags of `skill_dir` for a run with runner profile `runner` (nothing when
/// there are none, or when the skill or profile cannot be read: the run reports those).
pub(crate) fn report_red_flags(skill_dir: &Path, runner: &str, model: Option<&str>) {
    let Ok(loaded) = crate::features::runner::profile::resolve_profile_path(runner)
        .and_then(|path| crate::features::runner::profile::load_profile(&path))
    else {
        return;
    };
    for line in red_flag_lines(skill_dir, &loaded.name, &loaded.profile, model) {
        report(Event::RedFlag { line });
    }
}
