//! `skill-lift vet`: the "new skill" workflow's report — one go / no-go per step (lint, env,
//! triggers, a paired run sized by `plan`, registration for monitoring) with the reason, and
//! the overall decision. Owns the report types, the run's sizing rule, the static steps
//! ([`static_steps`]: lint and env) and the Markdown; the triggers step, the paired run and
//! the registration run in `cli::vet`, which calls each step's own library code.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::pipeline::plan::sizing::{VarianceSource, default_components, plan};

/// Version of `vet.json`.
pub(crate) const VET_FORMAT_VERSION: u32 = 1;
/// The lift the paired run is sized to detect when `--mde` is not given (fraction).
pub(crate) const DEFAULT_MDE: f64 = 0.3;
/// The most attempts per case the sizing may choose when `--max-k` is not given.
pub(crate) const DEFAULT_MAX_K: u32 = 5;

/// The steps, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum VetStepKind {
    /// Static authoring checks (`skill-lift lint`).
    Lint,
    /// Environment reconciliation (`skill-lift env`).
    Env,
    /// Trigger precision and recall (`skill-lift triggers`).
    Triggers,
    /// A paired with/without run sized to the stated MDE (`skill-lift run`).
    PairedRun,
    /// Registration of the fingerprint and the golden set for monitoring.
    Register,
}

impl VetStepKind {
    /// The step's name in reports.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            VetStepKind::Lint => "lint",
            VetStepKind::Env => "env",
            VetStepKind::Triggers => "triggers",
            VetStepKind::PairedRun => "paired run",
            VetStepKind::Register => "register",
        }
    }
}

/// A step's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Decision {
    /// The step found nothing against the skill.
    Go,
    /// The step found a reason not to rely on the skill (`why` says which).
    NoGo,
    /// The step could not run (an input or infrastructure error; `why` says which). Later
    /// steps that need it do not run either.
    Error,
    /// The step did not run (an earlier step stopped the vet).
    NotRun,
}

impl Decision {
    /// The decision's name in reports.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Decision::Go => "go",
            Decision::NoGo => "no-go",
            Decision::Error => "error",
            Decision::NotRun => "not run",
        }
    }
}

/// One step's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct VetStep {
    pub step: VetStepKind,
    pub decision: Decision,
    /// Why, in one or two sentences with the numbers.
    pub why: String,
    /// Files the step wrote (its own report, run folder), when any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<PathBuf>,
    /// The step's key numbers (its own report has the rest).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

impl VetStep {
    /// A step that did not run because of an earlier one.
    pub(crate) fn not_run(step: VetStepKind, because: &str) -> Self {
        Self {
            step,
            decision: Decision::NotRun,
            why: because.to_string(),
            artifacts: Vec::new(),
            details: serde_json::Value::Null,
        }
    }
}

/// How the paired run was sized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunSizing {
    /// Active golden cases.
    pub cases: usize,
    /// The lift the run should detect (fraction).
    pub target_mde: f64,
    /// Attempts per case chosen.
    pub k: u32,
    /// The MDE of the chosen design under the plan's default variances (α = 0.05, power 0.8).
    pub planned_mde: Option<f64>,
    /// Whether the chosen design reaches the target.
    pub reaches_target: bool,
    /// Cases needed at the chosen K to reach the target, when it does not.
    pub cases_needed: Option<u64>,
    /// Trials of the run (cases × 2 arms × K).
    pub trials: usize,
}

/// Size the paired run: the smallest K in `1..=max_k` whose planned MDE (the `plan` variance
/// model with its stated defaults: within-case 0.25 per arm, ω² = 0.05) reaches `target_mde`
/// with all `cases`; else `max_k`, stating the cases that would be needed.
pub(crate) fn size_run(cases: usize, target_mde: f64, max_k: u32) -> RunSizing {
    let source = VarianceSource {
        kind: "default".to_string(),
        pilot_run: None,
        pilot_cases: None,
        clamped: false,
    };
    let max_k = max_k.max(1);
    let planned = |k: u32| {
        plan(
            cases,
            k,
            default_components(k),
            source.clone(),
            None,
            Some(target_mde),
        )
    };
    let chosen = (1..=max_k)
        .find(|&k| planned(k).mde.is_some_and(|mde| mde <= target_mde + 1e-12))
        .unwrap_or(max_k);
    let at = planned(chosen);
    let reaches = at.mde.is_some_and(|mde| mde <= target_mde + 1e-12);
    RunSizing {
        cases,
        target_mde,
        k: chosen,
        planned_mde: at.mde,
        reaches_target: reaches,
        cases_needed: (!reaches).then_some(at.cases_needed).flatten(),
        trials: at.trials,
    }
}

/// The vet's report (`vet.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct VetReport {
    pub format_version: u32,
    pub skill_lift_version: String,
    pub vet_id: String,
    pub created_at: DateTime<Utc>,
    pub skill_name: String,
    pub skill_path: PathBuf,
    pub fingerprint: String,
    pub runner: String,
    pub model: String,
    /// The host whose registry the skill was registered in.
    pub host: String,
    /// Every step, in order.
    pub steps: Vec<VetStep>,
    /// `go` when every step is go; `no-go` when a step is no-go and none errored; `error`
    /// when a step could not run.
    pub decision: Decision,
    /// Wall time, seconds.
    pub wall_s: f64,
}

impl VetReport {
    /// The overall decision of `steps`.
    pub(crate) fn decide(steps: &[VetStep]) -> Decision {
        if steps.iter().any(|s| s.decision == Decision::Error) {
            Decision::Error
        } else if steps.iter().all(|s| s.decision == Decision::Go) {
            Decision::Go
        } else {
            Decision::NoGo
        }
    }
}

/// The report as Markdown (`vet.md` and the terminal).
pub(crate) fn vet_markdown(report: &VetReport) -> String {
    let mut out = format!(
        "# skill-lift vet: `{}` — {}\n\n",
        report.skill_name,
        report.decision.as_str().to_uppercase()
    );
    out.push_str(&format!(
        "Skill {} (fingerprint `{}`), runner `{}`, model `{}`, registered on host `{}`.\n\n",
        report.skill_path.display(),
        report.fingerprint,
        report.runner,
        report.model,
        report.host
    ));
    out.push_str("| step | decision | why |\n|---|---|---|\n");
    for step in &report.steps {
        out.push_str(&format!(
            "| {} | **{}** | {} |\n",
            step.step.as_str(),
            step.decision.as_str(),
            step.why.replace('|', "\\|").replace('\n', " ")
        ));
    }
    let artifacts: Vec<String> = report
        .steps
        .iter()
        .flat_map(|s| {
            s.artifacts
                .iter()
                .map(move |a| format!("- {}: {}", s.step.as_str(), a.display()))
        })
        .collect();
    if !artifacts.is_empty() {
        out.push_str("\nReports of the steps:\n\n");
        out.push_str(&artifacts.join("\n"));
        out.push('\n');
    }
    out.push_str(
        "\nlint and env are static and local checks (authoring, this machine); triggers and the paired run are runtime measurements on the runner and model named above.\n",
    );
    out
}

/// The static steps: lint (`crate::features::skill_fit::lint`) and env (`crate::features::skill_fit::environment`,
/// with the runner's context limit), each with its report written into the vet folder `dir`.
/// A step that cannot be taken is an `Error` step, which stops the vet before the triggers.
pub(crate) fn static_steps(
    skill_dir: &Path,
    dir: &Path,
    profile: &crate::features::runner::LoadedProfile,
    model: Option<&str>,
) -> Vec<VetStep> {
    use crate::features::skill_fit::environment::{EnvOptions, reconcile_environment};
    use crate::features::skill_fit::lint::{LintOptions, Severity, lint_skill};
    fn write<T: serde::Serialize>(dir: &Path, name: &str, value: &T) -> Vec<PathBuf> {
        let path = dir.join(name);
        let bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
        match crate::disk::write_atomic(&path, &bytes) {
            Ok(()) => vec![path],
            Err(_) => Vec::new(),
        }
    }
    let lint = match lint_skill(skill_dir, &LintOptions::default()) {
        Ok(report) => {
            let errors: Vec<String> = report
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .take(3)
                .map(|f| format!("{}: {}", f.rule.id(), f.message))
                .collect();
            VetStep {
                step: VetStepKind::Lint,
                decision: if report.passes(false) {
                    Decision::Go
                } else {
                    Decision::NoGo
                },
                why: format!(
                    "static authoring checks: score {:.0}/100, {} errors, {} warnings{}",
                    report.score,
                    report.errors,
                    report.warnings,
                    if errors.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", errors.join("; "))
                    }
                ),
                artifacts: write(dir, "lint.json", &report),
                details: serde_json::json!({"score": report.score, "errors": report.errors, "warnings": report.warnings}),
            }
        }
        Err(error) => VetStep {
            step: VetStepKind::Lint,
            decision: Decision::Error,
            why: error.to_string(),
            artifacts: Vec::new(),
            details: serde_json::Value::Null,
        },
    };
    let options = EnvOptions::from_process().with_runner(&profile.name, &profile.profile, model);
    let env = match reconcile_environment(skill_dir, &options) {
        Ok(report) => {
            let flags: Vec<String> = report
                .red_flags()
                .take(3)
                .map(|f| format!("{} `{}` missing ({})", f.kind.as_str(), f.subject, f.detail))
                .collect();
            VetStep {
                step: VetStepKind::Env,
                decision: if report.passes() {
                    Decision::Go
                } else {
                    Decision::NoGo
                },
                why: format!(
                    "this machine: {} satisfied, {} missing, {} unknown{}",
                    report.satisfied,
                    report.missing,
                    report.unknown,
                    if flags.is_empty() {
                        String::new()
                    } else {
                        format!(" — red flags: {}", flags.join("; "))
                    }
                ),
                artifacts: write(dir, "env.json", &report),
                details: serde_json::json!({"satisfied": report.satisfied, "missing": report.missing, "unknown": report.unknown}),
            }
        }
        Err(error) => VetStep {
            step: VetStepKind::Env,
            decision: Decision::Error,
            why: error.to_string(),
            artifacts: Vec::new(),
            details: serde_json::Value::Null,
        },
    };
    vec![lint, env]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_takes_the_smallest_k_that_reaches_the_mde() {
        // 16 cases, defaults: MDE(K) = 2.8016·√((0.05 + 0.5/K)/16); K = 4 gives 0.2985.
        let sized = size_run(16, 0.3, 5);
        assert_eq!(sized.k, 4);
        assert!(sized.reaches_target);
        assert_eq!(sized.trials, 16 * 2 * 4);
        assert!((sized.planned_mde.unwrap() - 2.801585 * (0.175f64 / 16.0).sqrt()).abs() < 1e-5);
        assert!(size_run(16, 0.3, 3).k == 3 && !size_run(16, 0.3, 3).reaches_target);
        assert!(size_run(16, 0.3, 3).cases_needed.unwrap() > 16);
        // Plenty of cases: K = 1 is enough.
        assert_eq!(size_run(200, 0.3, 5).k, 1);
    }

    #[test]
    fn overall_decision() {
        let step = |decision| VetStep {
            step: VetStepKind::Lint,
            decision,
            why: String::new(),
            artifacts: Vec::new(),
            details: serde_json::Value::Null,
        };
        assert_eq!(
            VetReport::decide(&[step(Decision::Go), step(Decision::Go)]),
            Decision::Go
        );
        assert_eq!(
            VetReport::decide(&[step(Decision::Go), step(Decision::NoGo)]),
            Decision::NoGo
        );
        assert_eq!(
            VetReport::decide(&[
                step(Decision::NoGo),
                step(Decision::Error),
                step(Decision::NotRun)
            ]),
            Decision::Error
        );
    }
}
