//! Integration tests of skills as contracts: the quality contract a skill declares in
//! `evals/contract.toml` (absolute bounds gated with the run's own intervals) and the
//! evolution contract of a release against its previous version (`--previous`,
//! `--enforce-version-policy`). The real `skill-lift` binary against the scripted mock server
//! on loopback.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::time::Duration;

use serde_json::Value;
use support::cli::{Project, assert_exit, stderr, stdout};
use support::mock_openai::{MockBehaviour, MockServer};

/// The `pirate-greeting` project with `cases` cases and the mock runner profile `mock`.
fn project(server: &MockServer, cases: usize) -> Project {
    let project = Project::pirate(cases);
    project.write_profile("mock", &server.base_url(), "");
    project
}

fn run(project: &Project, run_id: &str, k: &str, extra: &[&str]) -> std::process::Output {
    project
        .command()
        .args([
            "run",
            "skill/pirate-greeting",
            "--runner",
            "mock",
            "--out",
            "results",
        ])
        .args(["-k", k, "--run-id", run_id, "--no-decoys"])
        .args(extra)
        .output()
        .unwrap()
}

fn check<'a>(summary: &'a Value, bound: &str) -> &'a Value {
    summary["quality_contract"]["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no quality contract: {summary}"))
        .iter()
        .find(|c| c["bound"] == bound)
        .unwrap_or_else(|| panic!("no check of {bound}: {summary}"))
}

#[test]
fn a_violated_p95_bound_fails_the_run_with_the_bound_the_value_and_its_interval() {
    // Every answer takes at least 150 ms: 20 with_skill trials whose 17th smallest wall time
    // (the lower end of the P95's order-statistic interval) cannot be under 0.15 s.
    let server = MockServer::start(MockBehaviour {
        delay: Duration::from_millis(150),
        ..MockBehaviour::default()
    });
    let project = project(&server, 10);
    project.write(
        "skill/pirate-greeting/evals/contract.toml",
        "[quality]\nmax_p95_wall_s = 0.05\nmin_pass_rate = 0.5\n",
    );
    let output = run(&project, "slow", "2", &[]);
    let text = stderr(&output);
    assert_exit(&output, 1, &text);
    assert!(text.contains("gate failed"), "{text}");
    assert!(
        text.contains("max_p95_wall_s 0.050 s")
            && text.contains("P95 trial wall time of with_skill")
            && text.contains("95% interval [")
            && text.contains("order-statistic, 20 trials")
            && text.contains("violated"),
        "{text}"
    );
    let summary = project.result_json("slow", "summary.json");
    let p95 = check(&summary, "max_p95_wall_s");
    assert_eq!(p95["status"], "violated", "{p95}");
    assert_eq!(p95["limit"], 0.05);
    assert_eq!(p95["n"], 20);
    assert!(p95["measured"].as_f64().unwrap() >= 0.15, "{p95}");
    assert!(p95["ci_low"].as_f64().unwrap() >= 0.15, "{p95}");
    // 20 draws cannot bound a 95th percentile from above at 95 %: the upper end is open.
    assert!(p95["ci_high"].is_null(), "{p95}");
    // The pass rate (10 of 10 cases, Wilson [0.72, 1]) clears 0.5: met.
    assert_eq!(check(&summary, "min_pass_rate")["status"], "met");
    assert_eq!(summary["quality_contract"]["passed"], false);
    let markdown = std::fs::read_to_string(project.run_dir("slow").join("report.md")).unwrap();
    assert!(
        markdown.contains("Quality contract (`")
            && markdown.contains("| `max_p95_wall_s` | 0.050 s |")
            && markdown.contains("**violated**"),
        "{markdown}"
    );
    assert!(stdout(&output).contains("| `max_p95_wall_s` | 0.050 s |"));
    let html = std::fs::read_to_string(project.run_dir("slow").join("report.html")).unwrap();
    assert!(
        html.contains("id=\"quality-contract\""),
        "html has no contract table"
    );
    // The bounds are recorded: `report` checks the same contract again.
    let manifest = project.result_json("slow", "manifest.json");
    assert_eq!(
        manifest["quality_contract"]["bounds"]["max_p95_wall_s"],
        0.05
    );
    let report = project
        .command()
        .args(["report", "results/slow", "--out", "again", "--quiet"])
        .output()
        .unwrap();
    assert_exit(&report, 1, &stderr(&report));
}

#[test]
fn bounds_the_run_clears_pass_and_bounds_it_cannot_decide_are_warnings() {
    let server = MockServer::start(MockBehaviour::default());
    let project = project(&server, 6);
    project.write(
        "skill/pirate-greeting/evals/contract.toml",
        "[quality]\nmin_pass_rate = 0.5\nmax_tokens_per_trial = 100000\nmax_p95_wall_s = 600\nmax_cost_usd_per_trial = 1.0\nmax_unscoreable = 0.5\n",
    );
    let output = run(&project, "clear", "1", &[]);
    assert_exit(&output, 0, &stderr(&output));
    let summary = project.result_json("clear", "summary.json");
    assert_eq!(summary["quality_contract"]["passed"], true);
    assert_eq!(check(&summary, "min_pass_rate")["status"], "met");
    assert_eq!(check(&summary, "max_tokens_per_trial")["status"], "met");
    assert_eq!(check(&summary, "max_unscoreable")["status"], "met");
    // Six trials cannot bound a P95 from above, and the mock reports no cost.
    assert_eq!(check(&summary, "max_p95_wall_s")["status"], "not_shown");
    assert_eq!(
        check(&summary, "max_cost_usd_per_trial")["status"],
        "not_measured"
    );
    let warnings = summary["warnings"].to_string();
    assert!(
        warnings.contains("quality contract: max_p95_wall_s") && warnings.contains("not measured"),
        "{warnings}"
    );
}

#[test]
fn an_unknown_contract_key_is_an_input_error_naming_the_file_and_the_key() {
    let server = MockServer::start(MockBehaviour::default());
    let project = project(&server, 6);
    project.write(
        "skill/pirate-greeting/evals/contract.toml",
        "[quality]\nmax_p95_latency_s = 20\n",
    );
    let output = run(&project, "typo", "1", &[]);
    let text = stderr(&output);
    assert_exit(&output, 2, &text);
    assert!(
        text.contains("contract.toml") && text.contains("max_p95_latency_s"),
        "{text}"
    );
    assert_eq!(server.requests(), 0, "nothing may run");
}

// ---- The evolution contract ----

const AYE: &str = "Begin every answer with Aye! SKILL-MARKER";
const ARR: &str = "Begin answers with Arr! PARTIAL-MARKER";

/// A `pirate-greeting` SKILL.md declaring `version` whose body is `body`.
fn versioned(version: &str, body: &str) -> String {
    format!(
        "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\nmetadata:\n  version: {version}\n---\n{body}\n"
    )
}

/// A project whose skill (`current`) and previous version (`previous/`, `previous_md`) answer
/// as the mock's markers say: `SKILL-MARKER` → `Aye!`, `PARTIAL-MARKER` → `Arr!`. `cases`
/// cases checked by `pattern`.
fn versions(
    server: &MockServer,
    cases: usize,
    current: &str,
    previous: &str,
    pattern: &str,
) -> Project {
    let project = Project::empty();
    project.write("skill/pirate-greeting/SKILL.md", current);
    project.write("previous/SKILL.md", previous);
    let evals: Vec<Value> = (0..cases)
        .map(|i| {
            serde_json::json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                "checks": [{"type": "regex", "pattern": pattern}]})
        })
        .collect();
    project.write(
        "skill/pirate-greeting/evals/evals.json",
        &serde_json::json!({"skill_name": "pirate-greeting", "evals": evals}).to_string(),
    );
    project.write_profile("mock", &server.base_url(), "");
    project
}

fn partial_mock() -> MockServer {
    MockServer::start(MockBehaviour {
        partial: Some(("PARTIAL-MARKER".into(), "Arr! Here is the answer.".into())),
        ..MockBehaviour::default()
    })
}

#[test]
fn a_patch_that_changes_behaviour_fails_the_enforced_version_policy() {
    let server = partial_mock();
    // 1.0.0 answers Arr!, 1.0.1 answers Aye!: every Aye-only case passes only with the patch.
    let project = versions(
        &server,
        10,
        &versioned("1.0.1", AYE),
        &versioned("1.0.0", ARR),
        "^\\s*Aye!",
    );
    let output = run(
        &project,
        "patch",
        "1",
        &["--previous", "previous", "--enforce-version-policy"],
    );
    let text = stderr(&output);
    assert_exit(&output, 1, "gate failed");
    assert!(
        text.contains(
            "version policy: patch release 1.0.0 → 1.0.1 must be equivalent to the previous version"
        ) && text.contains("with_skill − previous_version +100.0 pp")
            && text.contains("margin ±10.0 pp")
            && text.contains("not shown equivalent"),
        "{text}"
    );
    let summary = project.result_json("patch", "summary.json");
    let contract = &summary["version_contract"];
    assert_eq!(contract["verdict"], "not_shown_equivalent", "{contract}");
    assert_eq!(contract["bump"], "patch");
    assert_eq!(contract["policy"], "equivalence");
    assert_eq!(contract["confidence"], 0.9);
    assert_eq!(contract["estimate"], 1.0);
    assert_eq!(contract["current"]["text"], "1.0.1");
    assert_eq!(contract["previous"]["source"], "SKILL.md metadata.version");
    let manifest = project.result_json("patch", "manifest.json");
    assert_eq!(manifest["version_policy"]["margin"], 0.1);
    assert_eq!(manifest["gates"]["enforce_version_policy"], true);
    let markdown = std::fs::read_to_string(project.run_dir("patch").join("report.md")).unwrap();
    assert!(
        markdown.contains("Version policy: **not shown equivalent**"),
        "{markdown}"
    );
    let html = std::fs::read_to_string(project.run_dir("patch").join("report.html")).unwrap();
    assert!(html.contains("class=\"version-contract\""));
    // Not enforced, the same verdict is reported and the run passes.
    let output = run(&project, "patch-free", "1", &["--previous", "previous"]);
    assert_exit(&output, 0, "");
    assert!(stdout(&output).contains("Version policy: **not shown equivalent**"));
}

#[test]
fn a_patch_that_keeps_behaviour_passes_as_equivalent() {
    let server = partial_mock();
    // Both versions answer Aye! on every case: 30 concordant cases, 90% Newcombe [−8.3, +8.3] pp.
    let project = versions(
        &server,
        30,
        &versioned("1.0.1", AYE),
        &versioned(
            "1.0.0",
            "Start each reply with Aye!, as a pirate would. SKILL-MARKER",
        ),
        "^\\s*Aye!",
    );
    let output = run(
        &project,
        "same",
        "1",
        &["--previous", "previous", "--enforce-version-policy"],
    );
    assert_exit(&output, 0, "");
    let contract = &project.result_json("same", "summary.json")["version_contract"];
    assert_eq!(contract["verdict"], "equivalent", "{contract}");
    assert_eq!(contract["estimate"], 0.0);
    assert!(contract["ci_low"].as_f64().unwrap() > -0.1, "{contract}");
    assert!(contract["ci_high"].as_f64().unwrap() < 0.1, "{contract}");
    assert!(stdout(&output).contains("Version policy: **equivalent**"));
    // A tighter margin than the data can show: not shown equivalent, exit 1.
    let output = run(
        &project,
        "tight",
        "1",
        &[
            "--previous",
            "previous",
            "--enforce-version-policy",
            "--equivalence",
            "0.05",
        ],
    );
    assert_exit(&output, 1, "not shown equivalent");
    assert_eq!(
        project.result_json("tight", "manifest.json")["version_policy"]["margin"],
        0.05
    );
}

#[test]
fn a_minor_must_be_non_inferior_and_a_major_is_reported_only() {
    let server = partial_mock();
    // Cases pass on Aye! or Arr!: the minor (Aye!) is as good as 1.0.0 (Arr!).
    let project = versions(
        &server,
        30,
        &versioned("1.1.0", AYE),
        &versioned("1.0.0", ARR),
        "^\\s*(Aye|Arr)!",
    );
    let output = run(
        &project,
        "minor",
        "1",
        &["--previous", "previous", "--enforce-version-policy"],
    );
    assert_exit(&output, 0, "");
    let contract = &project.result_json("minor", "summary.json")["version_contract"];
    assert_eq!(contract["verdict"], "non_inferior", "{contract}");
    assert_eq!(contract["policy"], "non_inferiority");

    // A minor that loses every case the previous version passed: inferior, exit 1.
    let worse = versions(
        &server,
        10,
        &versioned("1.1.0", ARR),
        &versioned("1.0.0", AYE),
        "^\\s*Aye!",
    );
    let output = run(
        &worse,
        "worse",
        "1",
        &["--previous", "previous", "--enforce-version-policy"],
    );
    assert_exit(&output, 1, "must be non-inferior");
    assert_eq!(
        worse.result_json("worse", "summary.json")["version_contract"]["verdict"],
        "inferior"
    );

    // The same loss in a major release is reported, not gated.
    worse.write("skill/pirate-greeting/SKILL.md", &versioned("2.0.0", ARR));
    let output = run(
        &worse,
        "major",
        "1",
        &["--previous", "previous", "--enforce-version-policy"],
    );
    assert_exit(&output, 0, "");
    let contract = &worse.result_json("major", "summary.json")["version_contract"];
    assert_eq!(contract["verdict"], "reported_only", "{contract}");
    assert_eq!(contract["bump"], "major");
    assert_eq!(contract["estimate"], -1.0);
    assert!(
        stdout(&output).contains("Version policy: **reported only** — major release 1.0.0 → 2.0.0")
    );
}

#[test]
fn versions_that_give_no_policy_are_said_and_refused_when_enforced() {
    let server = partial_mock();
    let project = versions(
        &server,
        6,
        &versioned("1.0.1", AYE),
        "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\nBegin answers with Arr! PARTIAL-MARKER\n",
        "^\\s*Aye!",
    );
    let output = run(
        &project,
        "refused",
        "1",
        &["--previous", "previous", "--enforce-version-policy"],
    );
    let text = stderr(&output);
    assert_exit(&output, 2, "--enforce-version-policy cannot be honoured");
    assert!(
        text.contains("the previous version declares no version"),
        "{text}"
    );
    assert!(!project.run_dir("refused").exists());
    // Without the flag: a warning before the run and in every report, never a guessed policy.
    let output = run(&project, "unversioned", "1", &["--previous", "previous"]);
    assert_exit(&output, 0, "version policy not applied");
    let summary = project.result_json("unversioned", "summary.json");
    assert_eq!(summary["version_contract"]["verdict"], "no_policy");
    assert!(summary["version_contract"]["bump"].is_null());
    assert!(
        summary["warnings"]
            .to_string()
            .contains("version policy not applied"),
        "{summary}"
    );
    // --enforce-version-policy needs a previous version (a lone --equivalence is the no-effect
    // test: `equivalence_on_a_fixed_n_run_tests_for_no_meaningful_effect`).
    let output = run(&project, "nothing", "1", &["--enforce-version-policy"]);
    assert_exit(
        &output,
        2,
        "--enforce-version-policy needs a previous version",
    );
}

#[test]
fn a_plugin_version_from_git_history_gives_the_policy_of_a_previous_ref() {
    let server = partial_mock();
    let project = Project::empty();
    let plugin_json =
        |version: &str| format!("{{\"name\": \"pirates\", \"version\": \"{version}\"}}");
    let unversioned = |body: &str| {
        format!(
            "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\n{body}\n"
        )
    };
    // A plugin whose skill declares no version of its own: the plugin's version is the skill's.
    project.write("plugin/.claude-plugin/plugin.json", &plugin_json("1.0.0"));
    project.write("plugin/skills/pirate-greeting/SKILL.md", &unversioned(ARR));
    project.write(
        "plugin/skills/pirate-greeting/evals/evals.json",
        &support::cli::aye_eval_set("pirate-greeting", 8, |i| format!("case-{i}")),
    );
    project.write_profile("mock", &server.base_url(), "");
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .current_dir(project.path("plugin"))
            .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "1.0.0"]);
    project.write("plugin/.claude-plugin/plugin.json", &plugin_json("1.0.1"));
    project.write("plugin/skills/pirate-greeting/SKILL.md", &unversioned(AYE));
    git(&["commit", "-qam", "1.0.1"]);
    let output = project
        .command()
        .args(["run", "plugin/skills/pirate-greeting", "--runner", "mock"])
        .args([
            "--out",
            "results",
            "-k",
            "1",
            "--run-id",
            "plugin",
            "--no-decoys",
        ])
        .args(["--previous-ref", "HEAD~1", "--enforce-version-policy"])
        .output()
        .unwrap();
    assert_exit(&output, 1, "patch release 1.0.0 → 1.0.1 must be equivalent");
    let contract = &project.result_json("plugin", "summary.json")["version_contract"];
    assert_eq!(contract["verdict"], "not_shown_equivalent", "{contract}");
    assert_eq!(contract["current"]["text"], "1.0.1");
    assert_eq!(contract["previous"]["text"], "1.0.0");
    let source = contract["previous"]["source"].as_str().unwrap();
    assert!(
        source.ends_with(".claude-plugin/plugin.json version at HEAD~1"),
        "{source}"
    );
}

/// `--equivalence` on a fixed-n run without a previous version: the no-effect test. One case of
/// 30 passes only with the skill (lift 1/30), the others pass in both arms: within ±20 pp the
/// skill is shown to make no meaningful difference; within ±2 pp it is not. Neither changes
/// the verdict or the exit code.
#[test]
fn equivalence_on_a_fixed_n_run_tests_for_no_meaningful_effect() {
    let server = MockServer::start(MockBehaviour::default());
    let project = project(&server, 30);
    let evals: Vec<Value> = (0..30)
        .map(|i| {
            let pattern = if i == 0 { "^\\s*Aye!" } else { "answer" };
            serde_json::json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                               "checks": [{"type": "regex", "pattern": pattern}]})
        })
        .collect();
    project.write(
        "skill/pirate-greeting/evals/evals.json",
        &serde_json::json!({"skill_name": "pirate-greeting", "evals": evals}).to_string(),
    );
    let output = run(&project, "wide", "1", &["--equivalence", "0.2"]);
    assert_exit(&output, 0, "");
    let summary = project.result_json("wide", "summary.json");
    let test = &summary["equivalence"];
    assert_eq!(test["verdict"], "equivalent", "{test}");
    assert_eq!(test["margin"], 0.2);
    assert_eq!(test["confidence"], 0.9);
    assert_eq!(test["n_cases"], 30);
    assert!(
        (test["estimate"].as_f64().unwrap() - 1.0 / 30.0).abs() < 1e-12,
        "{test}"
    );
    assert!(
        test["ci_low"].as_f64().unwrap() > -0.2 && test["ci_high"].as_f64().unwrap() < 0.2,
        "{test}"
    );
    assert_eq!(summary["lift"]["verdict"], "inconclusive");
    let codes: Vec<&str> = summary["lift"]["verdict_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"equivalent_within_margin"), "{codes:?}");
    assert_eq!(
        project.result_json("wide", "manifest.json")["equivalence_margin"],
        0.2
    );
    let markdown = std::fs::read_to_string(project.run_dir("wide").join("report.md")).unwrap();
    assert!(
        markdown.contains("No-effect test (`--equivalence`): **equivalent**")
            && markdown.contains("inside ±20.0 pp: the skill makes no meaningful difference"),
        "{markdown}"
    );
    // A margin narrower than the interval: not shown equivalent, no extra reason, same exit.
    let output = run(&project, "narrow", "1", &["--equivalence", "0.02"]);
    assert_exit(&output, 0, "");
    let summary = project.result_json("narrow", "summary.json");
    assert_eq!(summary["equivalence"]["verdict"], "not_shown_equivalent");
    assert!(
        !summary["lift"]["verdict_reasons"]
            .to_string()
            .contains("equivalent_within_margin")
    );
    assert!(
        stdout(&output).contains("No-effect test (`--equivalence`): **not shown equivalent**"),
        "{}",
        stdout(&output)
    );
    // Without the flag, no test and no manifest field.
    let output = run(&project, "plain", "1", &[]);
    assert_exit(&output, 0, "");
    assert!(project.result_json("plain", "summary.json")["equivalence"].is_null());
    assert!(project.result_json("plain", "manifest.json")["equivalence_margin"].is_null());
}
