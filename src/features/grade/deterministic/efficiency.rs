//! `skill_efficiency`: did the agent route to the right skill, and how much of its tool use was
//! productive.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use super::shell::{self, SimpleCommand};
use super::{
    Expectation, ShellView, activation_is_of, expectation, is_shell_call, is_staged, is_write_call,
    target_used,
};
use crate::features::evalset::GoldenCase;
use crate::features::grade::metric::MetricContext;
use crate::record::{MetricResult, MetricSource, SubScore};
use crate::values::trajectory::Trajectory;

/// Credit for activating an acceptable alternative instead of the expected skill.
const ACCEPTABLE_CREDIT: f64 = 0.75;
/// Deducted per distinct other skill activated.
const OTHER_SKILL_PENALTY: f64 = 0.25;

/// The `skill_efficiency` metric: the mean of `routing` and `tool_efficiency` where applicable.
///
/// - `routing`, positive cases: 1 when the expected skill was activated (ok); else 0.75 when a
///   skill of `acceptable_skills` was; else 0. Then 0.25 is deducted per distinct other skill
///   activated (neither expected nor acceptable: decoys, unrelated skills), floored at 0 — a
///   decoy activated instead of the target scores 0. When the expected skill is not staged in
///   this arm (the baseline arm), the same rule applies but a trial that activated no skill at
///   all is not applicable (it could not have routed). Not applicable when activation is not
///   observable (inject mode).
/// - `routing`, negative cases: 1 when the target was not activated, 0 when it was; not
///   applicable when activation is not observable (inject mode, both arms).
/// - `tool_efficiency`: productive calls / all tool calls. Waste is a shell call that is only a
///   help, version or lookup probe (`--help`, `-h`, `--version`, `-V`, `version` as the last
///   word; `which`, `type`, `whereis`, `command -v`; possibly piped into `head`/`grep`/…), and
///   a call repeating an earlier call exactly (same tool name and input) when that earlier call
///   succeeded and no call that may change the workspace (a file write, a shell command other
///   than a probe) came between — so re-running tests after an edit, or retrying a failed
///   call, is not waste. Skill-tool activations are productive (a repeated identical one is a
///   repeat). Not applicable when there are no tool calls.
pub(crate) fn skill_efficiency(
    case: &GoldenCase,
    trajectory: &Trajectory,
    context: &MetricContext<'_>,
) -> MetricResult {
    let view = ShellView::new(trajectory);
    let mut sub_scores = BTreeMap::new();
    sub_scores.insert("routing".to_string(), routing(case, trajectory, context));
    sub_scores.insert(
        "tool_efficiency".to_string(),
        tool_efficiency(trajectory, &view),
    );
    MetricResult::from_sub_scores(MetricSource::Deterministic, sub_scores)
}

fn routing(case: &GoldenCase, trajectory: &Trajectory, context: &MetricContext<'_>) -> SubScore {
    let skill = match expectation(case, context) {
        Expectation::Negative => return negative_routing(trajectory, context),
        Expectation::Positive(skill) => skill,
    };
    if !context.activation_observable {
        return SubScore::not_applicable("activation not observable (inject mode)");
    }
    let ok = || trajectory.skill_activations.iter().filter(|found| found.ok);
    let expected_hit = ok().any(|found| activation_is_of(found, skill, context));
    let is_acceptable = |name: &str| {
        case.acceptable_skills
            .iter()
            .any(|accepted| accepted == name)
    };
    let acceptable: BTreeSet<&str> = ok()
        .filter(|found| !activation_is_of(found, skill, context))
        .map(|found| found.skill.as_str())
        .filter(|name| is_acceptable(name))
        .collect();
    let others: BTreeSet<&str> = ok()
        .filter(|found| !activation_is_of(found, skill, context))
        .map(|found| found.skill.as_str())
        .filter(|name| !name.is_empty() && !is_acceptable(name))
        .collect();
    if !is_staged(context, skill) && !expected_hit && acceptable.is_empty() && others.is_empty() {
        return SubScore::not_applicable(format!(
            "expected skill `{skill}` not staged in this arm and no skill activated"
        ));
    }
    let (base, found) = if expected_hit {
        (1.0, format!("`{skill}` activated"))
    } else if let Some(alternative) = acceptable.first() {
        (
            ACCEPTABLE_CREDIT,
            format!("acceptable `{alternative}` activated instead of `{skill}`"),
        )
    } else {
        (0.0, format!("`{skill}` not activated"))
    };
    let score = (base - OTHER_SKILL_PENALTY * others.len() as f64).max(0.0);
    if others.is_empty() {
        SubScore::scored(score, found)
    } else {
        let names: Vec<&str> = others.iter().copied().collect();
        SubScore::scored(
            score,
            format!(
                "{found}; {} other skills activated ({}), -0.25 each",
                others.len(),
                names.join(", ")
            ),
        )
    }
}

fn negative_routing(trajectory: &Trajectory, context: &MetricContext<'_>) -> SubScore {
    let target = context.target_skill;
    if !context.activation_observable {
        return SubScore::not_applicable("negative case: activation not observable (inject mode)");
    }
    if target_used(trajectory, context).activated {
        SubScore::scored(
            0.0,
            format!("negative case: the target `{target}` was activated"),
        )
    } else {
        SubScore::scored(
            1.0,
            format!("negative case: the target `{target}` was not activated"),
        )
    }
}

fn tool_efficiency(trajectory: &Trajectory, view: &ShellView<'_>) -> SubScore {
    let calls = &trajectory.tool_calls;
    if calls.is_empty() {
        return SubScore::not_applicable("no tool calls");
    }
    let probe: Vec<bool> = view
        .per_call
        .iter()
        .map(|shell| shell.as_ref().is_some_and(|(command, _)| is_probe(command)))
        .collect();
    let may_change_workspace = |index: usize| {
        is_write_call(&calls[index]) || (is_shell_call(&calls[index]) && !probe[index])
    };
    let mut probes = 0;
    let mut repeats = 0;
    for (index, call) in calls.iter().enumerate() {
        if probe[index] {
            probes += 1;
            continue;
        }
        let earlier = (0..index).rev().find(|&earlier| {
            calls[earlier].name == call.name && calls[earlier].input == call.input
        });
        let Some(earlier) = earlier else {
            continue;
        };
        let repeated =
            !view.failed(trajectory, earlier) && !(earlier + 1..index).any(may_change_workspace);
        if repeated {
            repeats += 1;
        }
    }
    let productive = calls.len() - probes - repeats;
    SubScore::scored(
        productive as f64 / calls.len() as f64,
        format!(
            "{productive} of {} calls productive ({probes} help/version probes, {repeats} repeated calls)",
            calls.len()
        ),
    )
}

/// Whether a command only probes for help, versions or where a program is.
fn is_probe(command: &str) -> bool {
    let commands = shell::parse(command);
    commands.iter().any(is_probe_command)
        && commands
            .iter()
            .all(|simple| is_probe_command(simple) || is_filter(simple))
}

fn is_probe_command(simple: &SimpleCommand) -> bool {
    const PROBE_WORDS: &[&str] = &["--help", "-h", "--version", "-V", "version"];
    /// Programs whose `-h` means "human-readable", and ones that only print their arguments.
    const NOT_PROBES: &[&str] = &[
        "df", "du", "free", "ls", "sort", "ps", "echo", "printf", "cat", "grep", "rg",
    ];
    let words = simple.program_words();
    let program = simple.program();
    match program {
        "which" | "type" | "whereis" => return true,
        "command" => {
            return words
                .get(1)
                .is_some_and(|flag| flag == "-v" || flag == "-V");
        }
        "" => return false,
        _ => {}
    }
    if NOT_PROBES.contains(&program) || words.len() < 2 {
        return false;
    }
    words
        .last()
        .is_some_and(|last| PROBE_WORDS.contains(&last.as_str()))
}

/// A command that only filters piped output (`| head`, `| grep x`).
fn is_filter(simple: &SimpleCommand) -> bool {
    simple.piped
        && matches!(
            simple.program(),
            "head" | "tail" | "grep" | "less" | "more" | "cat" | "wc" | "sed" | "awk" | "cut"
        )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::*;
    use super::*;
    use crate::features::evalset::ExpectedSkill;

    fn run(case: &GoldenCase, trial: Trial, setting: &Setting) -> MetricResult {
        skill_efficiency(case, &trial.build(), &setting.context())
    }

    fn sub(result: &MetricResult, name: &str) -> Option<f64> {
        result.sub_scores[name].score
    }

    #[test]
    fn routing_to_the_expected_acceptable_or_a_decoy() {
        let setting = Setting::with_skill();
        let hit = run(&positive(), Trial::new().activate(TARGET), &setting);
        assert_eq!(sub(&hit, "routing"), Some(1.0));

        let decoy = run(&positive(), Trial::new().activate(DECOY), &setting);
        assert_eq!(sub(&decoy, "routing"), Some(0.0));
        assert_eq!(
            decoy.sub_scores["routing"].reason,
            "`release-notes` not activated; 1 other skills activated (csv-tools), -0.25 each"
        );

        let mut case = positive();
        case.acceptable_skills = vec!["changelog".into()];
        let acceptable = run(&case, Trial::new().activate("changelog"), &setting);
        assert_eq!(sub(&acceptable, "routing"), Some(0.75));

        let both = run(
            &positive(),
            Trial::new()
                .activate(TARGET)
                .activate(DECOY)
                .activate(DECOY),
            &setting,
        );
        assert_eq!(sub(&both, "routing"), Some(0.75));
        let shell_read = run(
            &positive(),
            Trial::new().activate_by(
                TARGET,
                crate::values::trajectory::ActivationEvidence::ShellCommand,
            ),
            &setting,
        );
        assert_eq!(sub(&shell_read, "routing"), Some(1.0));
    }

    #[test]
    fn routing_in_the_baseline_arm() {
        let setting = Setting::without_skill();
        let nothing = run(&positive(), Trial::new().shell("ls", 0), &setting);
        assert_eq!(sub(&nothing, "routing"), None);
        assert_eq!(
            nothing.sub_scores["routing"].reason,
            "expected skill `release-notes` not staged in this arm and no skill activated"
        );
        assert_eq!(nothing.score, Some(1.0));
        let decoy = run(&positive(), Trial::new().activate(DECOY), &setting);
        assert_eq!(sub(&decoy, "routing"), Some(0.0));
        let mut case = positive();
        case.acceptable_skills = vec![DECOY.into()];
        let acceptable = run(&case, Trial::new().activate(DECOY), &setting);
        assert_eq!(sub(&acceptable, "routing"), Some(0.75));
    }

    #[test]
    fn routing_not_applicable_in_inject_mode_and_for_negative_cases() {
        let mut inject = Setting::with_skill();
        inject.observable = false;
        let result = run(&positive(), Trial::new(), &inject);
        assert_eq!(sub(&result, "routing"), None);
        assert_eq!(result.score, None);
        let result = run(&negative(), Trial::new().activate(TARGET), &inject);
        assert_eq!(sub(&result, "routing"), None);
        let mut inject_baseline = Setting::without_skill();
        inject_baseline.observable = false;
        let result = run(&negative(), Trial::new(), &inject_baseline);
        assert_eq!(
            sub(&result, "routing"),
            None,
            "no free credit for the baseline"
        );

        let setting = Setting::with_skill();
        let result = run(&negative(), Trial::new().activate(TARGET), &setting);
        assert_eq!(sub(&result, "routing"), Some(0.0));
        let result = run(&negative(), Trial::new().activate(DECOY), &setting);
        assert_eq!(sub(&result, "routing"), Some(1.0));
        let mut not_triggering = case(ExpectedSkill::Unspecified);
        not_triggering.should_trigger = false;
        let result = run(&not_triggering, Trial::new().activate(TARGET), &setting);
        assert_eq!(sub(&result, "routing"), Some(0.0));
    }

    #[test]
    fn help_probes_and_repeated_calls_are_waste() {
        let setting = Setting::with_skill();
        let result = run(
            &positive(),
            Trial::new()
                .activate(TARGET)
                .shell("jq --help", 0)
                .read("data.csv")
                .read("data.csv")
                .shell("python report.py", 0),
            &setting,
        );
        assert_eq!(sub(&result, "tool_efficiency"), Some(3.0 / 5.0));
        assert_eq!(
            result.sub_scores["tool_efficiency"].reason,
            "3 of 5 calls productive (1 help/version probes, 1 repeated calls)"
        );
        assert_eq!(result.score, Some((1.0 + 0.6) / 2.0));
    }

    #[test]
    fn reruns_after_a_change_and_retries_are_productive() {
        let setting = Setting::with_skill();
        let result = run(
            &positive(),
            Trial::new()
                .shell("pytest -q", 1)
                .call(
                    "Edit",
                    json!({"file_path": "app.py", "old_string": "a", "new_string": "b"}),
                )
                .shell("pytest -q", 0)
                .failed_call("Read", json!({"file_path": "notes.md"}))
                .call("Read", json!({"file_path": "notes.md"}))
                .shell("which python3 || which python", 0)
                .shell("python3 --version 2>&1 | head -1", 0)
                .shell("df -h", 0)
                .shell("pytest -q", 0),
            &setting,
        );
        // Waste: the two probes only. The last `pytest -q` is no repeat: `df -h`, a shell
        // command that is not a probe, came between.
        assert_eq!(sub(&result, "tool_efficiency"), Some(7.0 / 9.0));
        let empty = run(&positive(), Trial::new().answer("hi"), &setting);
        assert_eq!(sub(&empty, "tool_efficiency"), None);
    }

    #[test]
    fn probe_detection() {
        for probe in [
            "jq --help",
            "python3 -m pytest -h",
            "node --version",
            "go version",
            "python -V",
            "which jq",
            "type -a python",
            "command -v rg",
            "git --help | head -20",
        ] {
            assert!(is_probe(probe), "{probe}");
        }
        for work in [
            "df -h",
            "ls -h",
            "echo --version",
            "python report.py",
            "jq --help; jq . data.json",
            "command ls",
        ] {
            assert!(!is_probe(work), "{work}");
        }
    }
}
