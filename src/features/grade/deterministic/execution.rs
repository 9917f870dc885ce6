//! `skill_execution`: was the expected skill activated, its script run, in the right order, and
//! were failures recovered from — or, for a negative case, was the target left alone.

use std::collections::BTreeMap;

use super::{
    Expectation, ShellView, expectation, file_name_of, mentions_file, ok_activations_of,
    target_used,
};
use crate::features::evalset::GoldenCase;
use crate::features::grade::metric::MetricContext;
use crate::record::{MetricResult, MetricSource, SubScore};
use crate::values::trajectory::{ActivationEvidence, Trajectory};

/// Credit for an activation seen only through a shell command (`cat …/SKILL.md`).
const SHELL_ACTIVATION_CREDIT: f64 = 0.75;

/// The `skill_execution` metric: the mean of its applicable sub-checks.
///
/// Positive cases (a skill is expected) have four sub-checks:
/// - `activation` — an ok activation of the expected skill through the skill tool or a file
///   read of its `SKILL.md` scores 1; one seen only through a shell command scores 0.75; none
///   (or only failed attempts) scores 0. Not applicable when activation is not observable
///   (inject mode).
/// - `script_execution` — with `expected_script` set: 1 when a shell command (tool call or
///   `commands` entry) names the script's file name as a whole word, or a recorded script run
///   has that file name; else 0. Not applicable without `expected_script`, or when the runner
///   cannot run shell commands.
/// - `workflow_order` — when a script of the expected skill ran (a script run attributed to it,
///   or a shell call naming `expected_script`): 1 when an ok activation of the skill came at
///   or before the first such call (same call counts: `cat SKILL.md && python scripts/x.py`),
///   else 0. Not applicable when no such script ran, when the run's position is unknown, or
///   when activation is not observable.
/// - `error_recovery` — failures are tool calls with an error result and shell calls whose
///   matching `commands` entry exited non-zero; a failure is recovered when any later tool call
///   other than `final_answer` (handing in the answer) succeeded — answered without an error
///   (a call with no result, e.g. cut by the end of the trajectory, is not a success). Score = recovered / failures, so a failure never followed by a success scores
///   0 (unlike NVIDIA/SkillEvaluator #149). Not applicable when nothing failed. `commands`
///   entries with no shell tool call cannot be ordered and are not counted.
///
/// Negative cases have one sub-check, `negative_case`: 0 when a script of the target ran
/// (observable in every mode); otherwise not applicable when activation is not observable
/// (inject mode — in both arms, so the baseline never earns credit the with-skill arm cannot);
/// otherwise 0 when the target was activated (any evidence, ok) and 1 when it was not.
pub(crate) fn skill_execution(
    case: &GoldenCase,
    trajectory: &Trajectory,
    context: &MetricContext<'_>,
) -> MetricResult {
    let view = ShellView::new(trajectory);
    let mut sub_scores = BTreeMap::new();
    match expectation(case, context) {
        Expectation::Positive(skill) => {
            sub_scores.insert(
                "activation".to_string(),
                activation(trajectory, skill, context),
            );
            sub_scores.insert(
                "script_execution".to_string(),
                script_execution(case, trajectory, &view, context),
            );
            sub_scores.insert(
                "workflow_order".to_string(),
                workflow_order(case, trajectory, skill, &view, context),
            );
            sub_scores.insert(
                "error_recovery".to_string(),
                error_recovery(trajectory, &view),
            );
        }
        Expectation::Negative => {
            sub_scores.insert(
                "negative_case".to_string(),
                negative_case(trajectory, context),
            );
        }
    }
    MetricResult::from_sub_scores(MetricSource::Deterministic, sub_scores)
}

fn activation(trajectory: &Trajectory, skill: &str, context: &MetricContext<'_>) -> SubScore {
    if !context.activation_observable {
        return SubScore::not_applicable(
            "activation not observable: skill bodies are in the prompt (inject mode)",
        );
    }
    let mut shell_only = false;
    for found in ok_activations_of(trajectory, skill, context) {
        match found.evidence {
            ActivationEvidence::SkillTool => {
                return SubScore::scored(
                    1.0,
                    format!("`{skill}` activated through the skill tool"),
                );
            }
            ActivationEvidence::FileRead => {
                return SubScore::scored(1.0, format!("`{skill}` SKILL.md read with a file tool"));
            }
            ActivationEvidence::ShellCommand => shell_only = true,
        }
    }
    if shell_only {
        return SubScore::scored(
            SHELL_ACTIVATION_CREDIT,
            format!("`{skill}` SKILL.md only read through a shell command (capped at 0.75)"),
        );
    }
    let attempted = trajectory
        .skill_activations
        .iter()
        .any(|found| super::activation_is_of(found, skill, context));
    if attempted {
        SubScore::scored(0.0, format!("`{skill}` activation attempted but failed"))
    } else {
        SubScore::scored(0.0, format!("`{skill}` not activated"))
    }
}

fn script_execution(
    case: &GoldenCase,
    trajectory: &Trajectory,
    view: &ShellView<'_>,
    context: &MetricContext<'_>,
) -> SubScore {
    let Some(script) = case.expected_script.as_deref() else {
        return SubScore::not_applicable("no expected_script");
    };
    if !context.can_run_commands {
        return SubScore::not_applicable("the runner cannot run shell commands");
    }
    let name = file_name_of(script);
    let in_command = view
        .all_commands()
        .any(|command| mentions_file(command, name));
    let in_runs = trajectory
        .script_runs
        .iter()
        .any(|run| file_name_of(&run.script) == name);
    if in_command || in_runs {
        SubScore::scored(1.0, format!("`{name}` ran"))
    } else {
        SubScore::scored(0.0, format!("`{name}` never ran"))
    }
}

fn workflow_order(
    case: &GoldenCase,
    trajectory: &Trajectory,
    skill: &str,
    view: &ShellView<'_>,
    context: &MetricContext<'_>,
) -> SubScore {
    if !context.activation_observable {
        return SubScore::not_applicable("activation not observable (inject mode)");
    }
    let expected_name = case.expected_script.as_deref().map(file_name_of);
    let skill_runs: Vec<_> = trajectory
        .script_runs
        .iter()
        .filter(|run| run.skill == skill || (run.target && skill == context.target_skill))
        .collect();
    let named_calls = view
        .per_call
        .iter()
        .enumerate()
        .filter_map(|(index, shell)| {
            let (command, _) = shell.as_ref()?;
            expected_name
                .is_some_and(|name| mentions_file(command, name))
                .then_some(index)
        });
    let first_run = skill_runs
        .iter()
        .filter_map(|run| run.tool_call_index)
        .chain(named_calls)
        .min();
    let Some(first_run) = first_run else {
        let unplaced = !skill_runs.is_empty()
            || view
                .extra
                .iter()
                .any(|run| expected_name.is_some_and(|name| mentions_file(&run.command, name)));
        return SubScore::not_applicable(if unplaced {
            format!("`{skill}`'s script ran but its position is unknown")
        } else {
            format!("no script of `{skill}` ran")
        });
    };
    let activated_before = ok_activations_of(trajectory, skill, context)
        .filter_map(|found| found.tool_call_index)
        .filter(|&index| index <= first_run)
        .min();
    match activated_before {
        Some(index) => SubScore::scored(
            1.0,
            format!(
                "`{skill}` activated (call #{}) before its first script run (call #{})",
                index + 1,
                first_run + 1
            ),
        ),
        None => SubScore::scored(
            0.0,
            format!(
                "`{skill}`'s script ran (call #{}) before the skill was activated",
                first_run + 1
            ),
        ),
    }
}

/// Tools that end an attempt rather than act (the `openai-chat` runner's answer tool).
const TERMINAL_TOOLS: &[&str] = &["final_answer"];

fn is_terminal_call(name: &str) -> bool {
    TERMINAL_TOOLS.contains(&name)
}

fn error_recovery(trajectory: &Trajectory, view: &ShellView<'_>) -> SubScore {
    let failed: Vec<bool> = (0..trajectory.tool_calls.len())
        .map(|index| view.failed(trajectory, index))
        .collect();
    let failures: Vec<usize> = (0..failed.len()).filter(|&index| failed[index]).collect();
    if failures.is_empty() {
        return SubScore::not_applicable("no failed calls: recovery not observable");
    }
    // Handing in the answer (`final_answer`) is not a recovery: it ends the attempt. Neither is
    // a call that never got an answer (no result: the trajectory was cut, or the tool never
    // replied): nothing shows it succeeded.
    let answered = |index: usize| {
        trajectory.tool_calls[index].output.is_some()
            || view.per_call[index]
                .as_ref()
                .is_some_and(|(_, exit_code)| *exit_code == Some(0))
    };
    let last_success = (0..failed.len()).rev().find(|&index| {
        !failed[index] && answered(index) && !is_terminal_call(&trajectory.tool_calls[index].name)
    });
    let recovered = |index: usize| last_success.is_some_and(|success| success > index);
    let recovered_count = failures.iter().filter(|&&index| recovered(index)).count();
    let score = recovered_count as f64 / failures.len() as f64;
    let reason = match failures.iter().find(|&&index| !recovered(index)) {
        None => format!(
            "{} failed calls, each followed by a successful call",
            failures.len()
        ),
        Some(&index) => format!(
            "{recovered_count} of {} failed calls followed by a successful call; call #{} ({}) never was",
            failures.len(),
            index + 1,
            super::truncate(&trajectory.tool_calls[index].name, 40)
        ),
    };
    SubScore::scored(score, reason)
}

fn negative_case(trajectory: &Trajectory, context: &MetricContext<'_>) -> SubScore {
    let target = context.target_skill;
    let used = target_used(trajectory, context);
    if let Some(script) = used.script {
        return SubScore::scored(
            0.0,
            format!("negative case: the target `{target}`'s {script} ran"),
        );
    }
    // In inject mode neither arm can be told (the baseline's "not activated" would be free
    // credit the with-skill arm cannot earn).
    if !context.activation_observable {
        return SubScore::not_applicable("negative case: activation not observable (inject mode)");
    }
    if used.activated {
        SubScore::scored(
            0.0,
            format!("negative case: the target `{target}` was activated"),
        )
    } else {
        SubScore::scored(
            1.0,
            format!("negative case: the target `{target}` was neither activated nor run"),
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::*;
    use super::*;

    fn run(case: &GoldenCase, trial: Trial, setting: &Setting) -> MetricResult {
        skill_execution(case, &trial.build(), &setting.context())
    }

    fn sub(result: &MetricResult, name: &str) -> Option<f64> {
        result.sub_scores[name].score
    }

    #[test]
    fn failed_command_never_followed_by_success_scores_zero_not_one() {
        let setting = Setting::with_skill();
        let result = run(
            &positive(),
            Trial::new().activate(TARGET).shell("python calc.py", 1),
            &setting,
        );
        assert_eq!(sub(&result, "error_recovery"), Some(0.0));
        assert_eq!(
            result.sub_scores["error_recovery"].reason,
            "0 of 1 failed calls followed by a successful call; call #2 (Bash) never was"
        );
        // activation 1, error_recovery 0; script_execution and workflow_order n/a.
        assert_eq!(result.score, Some(0.5));
    }

    #[test]
    fn handing_in_the_answer_after_a_failure_is_not_a_recovery() {
        let setting = Setting::with_skill();
        let result = run(
            &positive(),
            Trial::new()
                .failed_call("activate_skill", json!({"name": "nonexistent-skill"}))
                .call("final_answer", json!({"answer": "done"})),
            &setting,
        );
        assert_eq!(sub(&result, "error_recovery"), Some(0.0));
    }

    #[test]
    fn a_failure_followed_only_by_an_unanswered_call_is_not_recovered() {
        let setting = Setting::with_skill();
        let mut trial = Trial::new()
            .activate(TARGET)
            .failed_call("Read", json!({"file_path": "missing.txt"}))
            .call("Read", json!({"file_path": "other.txt"}));
        trial.trajectory.tool_calls.last_mut().unwrap().output = None;
        let result = run(&positive(), trial, &setting);
        assert_eq!(sub(&result, "error_recovery"), Some(0.0));
    }

    #[test]
    fn no_failures_leaves_error_recovery_out_of_the_mean() {
        let setting = Setting::with_skill();
        let result = run(
            &positive(),
            Trial::new().activate(TARGET).shell("ls", 0),
            &setting,
        );
        assert_eq!(sub(&result, "error_recovery"), None);
        assert_eq!(
            result.sub_scores["error_recovery"].reason,
            "no failed calls: recovery not observable"
        );
        assert_eq!(result.score, Some(1.0));
    }

    #[test]
    fn failure_then_success_is_recovered() {
        let setting = Setting::with_skill();
        let result = run(
            &positive(),
            Trial::new()
                .activate(TARGET)
                .shell("python calc.py", 2)
                .failed_call("Read", json!({"file_path": "missing.md"}))
                .shell("python3 calc.py", 0),
            &setting,
        );
        assert_eq!(sub(&result, "error_recovery"), Some(1.0));
        // Two failures, only the first recovered.
        let result = run(
            &positive(),
            Trial::new()
                .activate(TARGET)
                .shell("python calc.py", 2)
                .shell("ls", 0)
                .failed_call("Read", json!({"file_path": "missing.md"})),
            &setting,
        );
        assert_eq!(sub(&result, "error_recovery"), Some(0.5));
    }

    #[test]
    fn activation_evidence_and_shell_cap() {
        let setting = Setting::with_skill();
        let read = run(
            &positive(),
            Trial::new().activate_by(TARGET, ActivationEvidence::FileRead),
            &setting,
        );
        assert_eq!(sub(&read, "activation"), Some(1.0));
        let shell = run(
            &positive(),
            Trial::new().activate_by(TARGET, ActivationEvidence::ShellCommand),
            &setting,
        );
        assert_eq!(sub(&shell, "activation"), Some(0.75));
        assert_eq!(shell.score, Some(0.75));
        let none = run(&positive(), Trial::new().activate(DECOY), &setting);
        assert_eq!(sub(&none, "activation"), Some(0.0));
        let mut failed = Trial::new().activate(TARGET);
        failed.trajectory.skill_activations[0].ok = false;
        let failed = run(&positive(), failed, &setting);
        assert_eq!(sub(&failed, "activation"), Some(0.0));
        assert_eq!(
            failed.sub_scores["activation"].reason,
            "`release-notes` activation attempted but failed"
        );
        let mut inject = Setting::with_skill();
        inject.observable = false;
        let result = run(&positive(), Trial::new(), &inject);
        assert_eq!(sub(&result, "activation"), None);
        assert_eq!(result.score, None);
    }

    #[test]
    fn script_execution_matches_the_file_name() {
        let setting = Setting::with_skill();
        let mut case = positive();
        case.expected_script = Some("scripts/calc.py".into());
        let ran = run(
            &case,
            Trial::new().activate(TARGET).run_script(TARGET, "calc.py"),
            &setting,
        );
        assert_eq!(sub(&ran, "script_execution"), Some(1.0));
        assert_eq!(sub(&ran, "workflow_order"), Some(1.0));
        assert_eq!(ran.score, Some(1.0));
        let other = run(
            &case,
            Trial::new().activate(TARGET).shell("python mycalc.py", 0),
            &setting,
        );
        assert_eq!(sub(&other, "script_execution"), Some(0.0));
        assert_eq!(sub(&other, "workflow_order"), None);
        let mut no_shell = Setting::with_skill();
        no_shell.can_run_commands = false;
        let result = run(&case, Trial::new().activate(TARGET), &no_shell);
        assert_eq!(sub(&result, "script_execution"), None);
        assert_eq!(sub(&positive_result(&setting), "script_execution"), None);
    }

    fn positive_result(setting: &Setting) -> MetricResult {
        run(&positive(), Trial::new().activate(TARGET), setting)
    }

    #[test]
    fn reading_the_skill_after_its_script_ran_is_out_of_order() {
        let setting = Setting::with_skill();
        let mut case = positive();
        case.expected_script = Some("calc.py".into());
        let result = run(
            &case,
            Trial::new()
                .run_script(TARGET, "calc.py")
                .activate_by(TARGET, ActivationEvidence::FileRead),
            &setting,
        );
        assert_eq!(sub(&result, "workflow_order"), Some(0.0));
        assert_eq!(
            result.sub_scores["workflow_order"].reason,
            "`release-notes`'s script ran (call #1) before the skill was activated"
        );
        assert_eq!(sub(&result, "activation"), Some(1.0));
        assert_eq!(sub(&result, "script_execution"), Some(1.0));
        assert_eq!(result.score, Some(2.0 / 3.0));
        // A script named only by expected_script (no attributed run) is ordered too.
        let result = run(
            &case,
            Trial::new().shell("python calc.py", 0).activate(TARGET),
            &setting,
        );
        assert_eq!(sub(&result, "workflow_order"), Some(0.0));
    }

    #[test]
    fn negative_case_scores_whether_the_target_was_left_alone() {
        let setting = Setting::with_skill();
        let activated = run(&negative(), Trial::new().activate(TARGET), &setting);
        assert_eq!(activated.sub_scores.len(), 1);
        assert_eq!(sub(&activated, "negative_case"), Some(0.0));
        assert_eq!(activated.score, Some(0.0));

        let untouched = run(
            &negative(),
            Trial::new().activate(DECOY).shell("python x.py", 1),
            &setting,
        );
        assert_eq!(sub(&untouched, "negative_case"), Some(1.0));
        assert_eq!(untouched.score, Some(1.0));

        let script = run(
            &negative(),
            Trial::new().run_script(TARGET, "calc.py"),
            &setting,
        );
        assert_eq!(sub(&script, "negative_case"), Some(0.0));
    }

    #[test]
    fn negative_case_in_inject_mode() {
        let mut with_skill = Setting::with_skill();
        with_skill.observable = false;
        let result = run(&negative(), Trial::new().answer("done"), &with_skill);
        assert_eq!(sub(&result, "negative_case"), None);
        assert_eq!(result.score, None);
        // Not in the baseline either: its "never activated" would be credit the with-skill arm
        // cannot earn.
        let mut without_skill = Setting::without_skill();
        without_skill.observable = false;
        let result = run(&negative(), Trial::new().answer("done"), &without_skill);
        assert_eq!(sub(&result, "negative_case"), None);
        // A script of the target running is seen even in inject mode.
        let result = run(
            &negative(),
            Trial::new().run_script(TARGET, "calc.py"),
            &with_skill,
        );
        assert_eq!(sub(&result, "negative_case"), Some(0.0));
    }
}
