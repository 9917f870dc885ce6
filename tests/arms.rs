//! Integration tests of runs with more than two arms: a previous version of the skill, exposure
//! variants, the cost gates of a version comparison. The real `skill-lift` binary against the
//! scripted mock server on loopback, with designed outcomes measured exactly.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::cli::{PIRATE_SKILL_MD, assert_exit, binary, openai_profile, stderr};
use support::mock_openai::{MockBehaviour, MockServer};

const CURRENT: &str = PIRATE_SKILL_MD;
const PREVIOUS: &str = "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\nBegin answers with Arr! PARTIAL-MARKER\n";

// A project: the skill (`CURRENT`), its previous version in `previous/` (`PREVIOUS`), four
// cases — two that only `Aye!` passes, two that `Aye!` or `Arr!` pass — and a runner profile.
use support::cli::Project;

impl Project {
    fn new(base_url: &str, profile_extra: &str, skill_md: &str) -> Self {
        let project = Self::empty();
        project.write("skill/pirate-greeting/SKILL.md", skill_md);
        project.write("previous/SKILL.md", PREVIOUS);
        project.write_aye_cases(4, 2);
        project.write(
            "runners/mock.toml",
            &openai_profile(base_url, 4, profile_extra),
        );
        project
    }

    /// `cases` cases `case-<i>`; the first `aye_only` pass only on `Aye!` (the current
    /// version's opening), the others also on `Arr!` (the previous version's).
    fn write_aye_cases(&self, cases: usize, aye_only: usize) {
        let evals: Vec<Value> = (0..cases)
            .map(|i| {
                let pattern = if i < aye_only {
                    "^\\s*Aye!"
                } else {
                    "^\\s*(Aye|Arr)!"
                };
                json!({"id": format!("case-{i}"), "prompt": format!("Question {i}?"),
                       "checks": [{"type": "regex", "pattern": pattern}]})
            })
            .collect();
        self.write(
            "skill/pirate-greeting/evals/evals.json",
            &json!({"skill_name": "pirate-greeting", "evals": evals}).to_string(),
        );
    }

    fn run(&self, args: &[&str]) -> Output {
        binary()
            .current_dir(self.dir.path())
            .arg("run")
            .arg(self.path("skill/pirate-greeting"))
            .args(["--runner", "mock", "--out", "results", "-k", "1"])
            .args(args)
            .output()
            .unwrap()
    }

    fn summary(&self, id: &str) -> Value {
        let text =
            std::fs::read_to_string(self.path(&format!("results/{id}/summary.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

fn partial() -> MockBehaviour {
    MockBehaviour {
        partial: Some(("PARTIAL-MARKER".into(), "Arr! Here is the answer.".into())),
        ..MockBehaviour::default()
    }
}

/// The comparison of `arm` in a summary.
fn comparison<'a>(summary: &'a Value, arm: &str) -> &'a Value {
    summary["comparisons"]
        .as_array()
        .unwrap_or_else(|| panic!("no comparisons: {summary}"))
        .iter()
        .find(|c| c["arm"] == arm)
        .unwrap_or_else(|| panic!("no comparison of {arm}: {summary}"))
}

fn lift(summary: &Value, arm: &str) -> f64 {
    comparison(summary, arm)["lift"]["estimate"]
        .as_f64()
        .unwrap()
}

#[test]
fn three_arms_measure_each_designed_lift_exactly() {
    let server = MockServer::start(partial());
    let project = Project::new(&server.base_url(), "", CURRENT);
    let output = project.run(&["--previous", "previous", "--run-id", "three"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = project.summary("three");
    // The classic pair: the current version passes all four cases, the baseline none.
    assert_eq!(summary["lift"]["estimate"], 1.0);
    assert_eq!(summary["reference"], "without_skill");
    assert_eq!(summary["trials"]["planned"], 12);
    assert_eq!(summary["trials"]["recorded"], 12);
    assert_eq!(lift(&summary, "with_skill"), 1.0);
    // The previous version passes the two lenient cases only: +50 pp over the baseline.
    assert_eq!(lift(&summary, "previous_version"), 0.5);
    assert_eq!(
        comparison(&summary, "previous_version")["arm_summary"]["pass_rate"],
        0.5
    );
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path("results/three/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["format_version"], 4);
    assert_eq!(
        manifest["arms"],
        json!(["with_skill", "without_skill", "previous_version"])
    );
    assert!(
        manifest["previous"]["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(
        manifest["runner"]["capabilities"]["skill_delivery"],
        "inject"
    );
    // Every trial of the previous_version arm staged the old body under the skill's name.
    let trials = std::fs::read_to_string(project.path("results/three/trials.jsonl")).unwrap();
    assert_eq!(trials.matches("\"arm\":\"previous_version\"").count(), 4);

    // The version comparison: new against old, one row per comparison.
    let output = project.run(&[
        "--previous",
        "previous",
        "--reference",
        "previous_version",
        "--run-id",
        "versus",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = project.summary("versus");
    assert_eq!(summary["reference"], "previous_version");
    assert_eq!(lift(&summary, "with_skill"), 0.5);
    assert_eq!(lift(&summary, "without_skill"), -0.5);
    assert_eq!(summary["comparisons"].as_array().unwrap().len(), 2);
    let markdown = std::fs::read_to_string(project.path("results/versus/report.md")).unwrap();
    assert!(
        markdown.contains("Comparisons against `previous_version`"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| with_skill | 100.0% | 50.0% | +50.0 pp"),
        "{markdown}"
    );
}

#[test]
fn the_headline_verdict_is_the_gated_comparison_against_the_reference() {
    let server = MockServer::start(partial());
    let project = Project::new(&server.base_url(), "", CURRENT);
    // Ten cases: only the first needs `Aye!` (the current version); `Arr!` (the previous
    // version) passes the other nine.
    project.write_aye_cases(10, 1);
    let output = project.run(&[
        "--previous",
        "previous",
        "--reference",
        "previous_version",
        "--fail-on",
        "not-improved",
        "--run-id",
        "gated",
    ]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("gate failed: the verdict is inconclusive, not improved"),
        "{text}"
    );
    // With against without is improved (+100 pp on every case); with against the previous
    // version (+10 pp: one case of ten) is inconclusive, and that is what the gate judges.
    let summary = project.summary("gated");
    assert_eq!(summary["lift"]["verdict"], "improved");
    assert_eq!(
        comparison(&summary, "with_skill")["lift"]["verdict"],
        "inconclusive"
    );
    let markdown = std::fs::read_to_string(project.path("results/gated/report.md")).unwrap();
    assert_eq!(
        markdown.lines().next().unwrap(),
        "# skill-lift: `pirate-greeting` — INCONCLUSIVE (with_skill vs previous_version)",
        "{markdown}"
    );
    let third = markdown.lines().nth(2).unwrap();
    assert!(
        third.starts_with("**Lift (pass rate, with_skill − previous_version): +10.0 pp**"),
        "{markdown}"
    );
    assert!(
        markdown.contains("Gate: **FAILED** — the verdict is inconclusive, not improved."),
        "{markdown}"
    );
    assert!(
        markdown.contains("Verdict of with_skill vs without_skill (not gated): **improved**"),
        "{markdown}"
    );
    let html = std::fs::read_to_string(project.path("results/gated/report.html")).unwrap();
    assert!(html.contains("<title>skill-lift: pirate-greeting — inconclusive</title>"));
    assert!(html.contains("data-verdict=\"inconclusive\""), "{html}");
    assert!(html.contains("Lift (pass rate, with_skill − previous_version): +10.0 pp"));
}

#[test]
fn a_previous_version_from_git_is_staged_and_the_cost_gates_decide() {
    let server = MockServer::start(partial());
    // The current version is much longer than the old one: more prompt tokens per trial.
    let long = format!("{CURRENT}{}\n", "Say it loud and proud. ".repeat(200));
    let project = Project::new(&server.base_url(), "", &long);
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .current_dir(project.path("skill"))
            .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
            .args(args)
            .output()
            .unwrap();
        assert!(status.status.success(), "{}", stderr(&status));
    };
    // History: the old body committed first, the current one second.
    std::fs::write(project.path("skill/pirate-greeting/SKILL.md"), PREVIOUS).unwrap();
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "v1"]);
    std::fs::write(project.path("skill/pirate-greeting/SKILL.md"), &long).unwrap();
    git(&["commit", "-qam", "v2"]);
    let output = project.run(&[
        "--previous-ref",
        "HEAD~1",
        "--reference",
        "previous_version",
        "--max-token-ratio",
        "1.05",
        "--run-id",
        "gated",
    ]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("--max-token-ratio"), "{text}");
    let summary = project.summary("gated");
    let versus = comparison(&summary, "with_skill");
    assert_eq!(versus["lift"]["estimate"], 0.5);
    assert!(
        versus["cost"]["token_ratio"].as_f64().unwrap() > 1.05,
        "{versus}"
    );
    assert!(
        versus["cost"]["latency_ratio"].as_f64().is_some(),
        "{versus}"
    );
    assert_eq!(versus["lift"]["gate"]["passed"], false);
    // Within bounds: the run passes.
    let output = project.run(&[
        "--previous-ref",
        "HEAD~1",
        "--reference",
        "previous_version",
        "--max-token-ratio",
        "100",
        "--max-latency-ratio",
        "1000",
        "--run-id",
        "within",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path("results/within/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["previous"]["git_ref"], "HEAD~1");
    // A revision that does not exist is an input error naming it.
    let output = project.run(&["--previous-ref", "no-such-ref", "--run-id", "bad"]);
    assert_exit(&output, 2, "no-such-ref");
}

#[test]
fn exposure_arms_separate_never_found_from_bad_content() {
    // Tools mode: the model only learns the skill by activating it, which this mock never does
    // unprompted — the skill is never found natively.
    let server = MockServer::start(MockBehaviour::default());
    let never_found = Project::new(&server.base_url(), "skill_mode = \"tools\"\n", CURRENT);
    let output = never_found.run(&["--exposure", "nudge,forced", "--run-id", "never"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = never_found.summary("never");
    assert_eq!(lift(&summary, "with_skill"), 0.0);
    assert_eq!(lift(&summary, "with_skill_nudge"), 0.0);
    assert_eq!(lift(&summary, "with_skill_forced"), 1.0);

    // Bad content: the skill's body does not help even when forced into context.
    let useless = CURRENT.replace("SKILL-MARKER", "nothing useful");
    let bad_content = Project::new(&server.base_url(), "skill_mode = \"tools\"\n", &useless);
    let output = bad_content.run(&["--exposure", "forced", "--run-id", "bad"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = bad_content.summary("bad");
    assert_eq!(lift(&summary, "with_skill"), 0.0);
    assert_eq!(lift(&summary, "with_skill_forced"), 0.0);
    assert_eq!(summary["comparisons"].as_array().unwrap().len(), 2);
}

#[test]
fn arm_flags_are_checked_before_anything_runs() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(&server.base_url(), "", CURRENT);
    let output = project.run(&["--reference", "previous_version", "--run-id", "x"]);
    assert_exit(&output, 2, "--previous");
    let output = project.run(&["--exposure", "sideways", "--run-id", "y"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    // The previous version may not be the skill itself.
    let output = project.run(&["--previous", "skill/pirate-greeting", "--run-id", "z"]);
    assert_exit(&output, 2, "nothing to compare");
    assert!(!project.path("results/x").exists() && !project.path("results/z").exists());
    assert_eq!(
        server
            .state
            .requests
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}

/// Rewrite a run folder's manifest into the shape of run-folder format 2 (no capabilities, no
/// reference, no previous version).
fn downgrade_to_format_2(run_dir: &Path) {
    let path = run_dir.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["format_version"] = json!(2);
    let runner = manifest["runner"].as_object_mut().unwrap();
    assert!(runner.remove("capabilities").is_some());
    let object = manifest.as_object_mut().unwrap();
    object.remove("reference");
    object.remove("previous");
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
}

#[test]
fn format_2_run_folders_still_load_for_report_regrade_merge_and_regress() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(&server.base_url(), "", CURRENT);
    for id in ["old", "shard-1", "shard-2"] {
        let shard = match id {
            "shard-1" => vec!["--shard", "1/2"],
            "shard-2" => vec!["--shard", "2/2"],
            _ => vec![],
        };
        let mut args = vec!["--run-id", id];
        args.extend(shard);
        let output = project.run(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        downgrade_to_format_2(&project.path(&format!("results/{id}")));
    }
    let expected = project.summary("old")["lift"]["estimate"].clone();
    assert_eq!(expected, 1.0);
    let command = |args: &[&str]| {
        binary()
            .current_dir(project.dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    let output = command(&["report", "results/old"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(project.summary("old")["lift"]["estimate"], expected);
    let output = command(&["regrade", "results/old", "--out", "results/old-regraded"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let regraded: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path("results/old-regraded/manifest.json")).unwrap(),
    )
    .unwrap();
    // The regrade writes the current format, capabilities read from the old kind and mode.
    assert_eq!(regraded["format_version"], 4);
    assert_eq!(
        regraded["runner"]["capabilities"]["skill_delivery"],
        "inject"
    );
    assert_eq!(
        regraded["runner"]["capabilities"]["activation_observable"],
        false
    );
    let output = command(&[
        "merge",
        "results/shard-1",
        "results/shard-2",
        "--out",
        "results/merged",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(project.summary("merged")["lift"]["estimate"], expected);
    let state = tempfile::tempdir().unwrap();
    let state_flag = state.path().to_str().unwrap();
    let output = command(&["baseline", "ingest", "results/old", "--state", state_flag]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = command(&["regress", "--state", state_flag, "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("pirate-greeting"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}
