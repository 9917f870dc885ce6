//! Integration tests of the `style` judge metric through the real binary: a scripted agent, a
//! scripted judge with designed style answers, a stand-in home folder holding `USER.md` and
//! agent session history. What they prove: the metric rows in every output, the manifest's
//! record of the reference (hashes and counts, not the text), the reference reaching the judge
//! redacted, style never deciding a pass or the verdict, the refusal when there is no
//! reference, and compare's tie-break line.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use sha2::Digest;
use support::cli::{Project, mixed_eval_set, stderr, stdout};
use support::mock_judge::{JudgeBehaviour, MockJudge};
use support::mock_openai::{MockBehaviour, MockServer};

/// A key-shaped string planted in USER.md: it must never reach the judge.
fn planted_key() -> String {
    format!("sk-ant-api03-{}", "q".repeat(90))
}

const USER_MD: &str = "# About me\n\n- Name: Riley\n- Prefers calm plain sentences, no exclamation marks.\n- Writes in English.\n";

/// Write `USER.md` (with the planted key) at OpenClaw's default place under `home`, and one
/// Claude Code session whose two turns answered in plain sentences.
fn plant_home(home: &Path) {
    let user_md = home.join(".openclaw/workspace/USER.md");
    std::fs::create_dir_all(user_md.parent().unwrap()).unwrap();
    std::fs::write(&user_md, format!("{USER_MD}- token {}\n", planted_key())).unwrap();
    let base = json!({"sessionId": "s1", "cwd": "/home/riley/app", "isSidechain": false, "version": "2.1.0"});
    let with = |extra: Value| {
        let mut line = base.clone();
        for (key, value) in extra.as_object().unwrap() {
            line[key] = value.clone();
        }
        line
    };
    let turns = [
        ("Where is the config?", "It is in the settings folder."),
        ("And the logs?", "They rotate daily under the logs folder."),
    ];
    let mut lines = Vec::new();
    for (index, (prompt, answer)) in turns.iter().enumerate() {
        lines.push(with(
            json!({"type": "user", "timestamp": format!("2026-11-02T10:0{index}:00.000Z"),
            "message": {"role": "user", "content": prompt}}),
        ));
        lines.push(with(json!({"type": "assistant", "timestamp": format!("2026-11-02T10:0{index}:05.000Z"),
            "message": {"id": format!("m{index}"), "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": answer}],
                "usage": {"input_tokens": 10, "output_tokens": 5}}})));
    }
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    let file = home.join(".claude/projects/-home-riley-app/s1.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text.join("\n") + "\n").unwrap();
}

/// The pirate project with the mixed eval set (lift 1/3), its own state folder, the runner
/// profile `mock` and the judge profile `judge`.
fn project(agent_url: &str, judge_url: &str) -> Project {
    let project = Project::with_own_state();
    project.write(
        "skill/pirate-greeting/SKILL.md",
        support::cli::PIRATE_SKILL_MD,
    );
    project.write("skill/pirate-greeting/evals/evals.json", &mixed_eval_set(6));
    project.write_profile("mock", agent_url, "");
    project.write_profile("judge", judge_url, "max_retries = 0\n");
    project
}

fn run(project: &Project, home: &Path, skill: &str, run_id: &str, extra: &[&str]) -> Output {
    let mut command = project.command();
    command
        .env("SKILL_LIFT_HISTORY_ROOT", home)
        .args(["run", skill, "--runner", "mock", "--out", "results"])
        .args(["-k", "1", "--run-id", run_id, "--no-decoys"])
        .args(extra);
    command.output().unwrap()
}

fn metric_row<'a>(summary: &'a Value, metric: &str) -> &'a Value {
    summary["metric_lifts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} row in {}", summary["metric_lifts"]))
}

/// The judge says every style item is no when the answer holds "Aye!" (the with-skill answer)
/// and yes otherwise: with-skill trials pass their checks with style 0, baseline trials fail
/// theirs with style 1, and the lift and verdict are those of the same run without style.
#[test]
fn style_is_reported_recorded_and_never_decides_a_pass() {
    let agent = MockServer::start(MockBehaviour::default());
    let judge = MockJudge::start(JudgeBehaviour {
        style_no_marker: Some("Aye!".to_string()),
        ..JudgeBehaviour::default()
    });
    let project = project(&agent.base_url(), &judge.base_url());
    let home = tempfile::tempdir().unwrap();
    plant_home(home.path());
    let judged = ["--judge", "judge", "--judge-metrics", "accuracy,style"];
    let output = run(
        &project,
        home.path(),
        "skill/pirate-greeting",
        "styled",
        &judged,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let plain = run(
        &project,
        home.path(),
        "skill/pirate-greeting",
        "plain",
        &["--judge", "judge", "--judge-metrics", "accuracy"],
    );
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));

    // Never deciding: every with-skill trial of an "Aye!" case passes with style 0, every
    // baseline trial of it fails with style 1.
    let records = project.records("styled");
    assert_eq!(records.len(), 12);
    for record in &records {
        let style = record["metrics"]["style"]["score"].as_f64().unwrap();
        let case = record["case_id"].as_str().unwrap();
        let outcome = record["outcome"].as_str().unwrap();
        let with_skill = record["arm"] == "with_skill";
        assert_eq!(style, if with_skill { 0.0 } else { 1.0 }, "{record}");
        if case == "case-00" || case == "case-03" {
            let expected = if with_skill { "pass" } else { "fail" };
            assert_eq!(outcome, expected, "{record}");
        }
        assert_eq!(record["metrics"]["style"]["source"], "judge");
    }
    // The headline lift and verdict are those of the run without style.
    let summary = project.result_json("styled", "summary.json");
    let without_style = project.result_json("plain", "summary.json");
    for key in ["estimate", "ci_low", "ci_high", "verdict", "p_value"] {
        assert_eq!(summary["lift"][key], without_style["lift"][key], "{key}");
    }
    // Nor does style enter the composite.
    assert_eq!(
        metric_row(&summary, "composite")["estimate"],
        metric_row(&without_style, "composite")["estimate"]
    );

    // The style row, beside the others: means per arm, the difference, no weight.
    let style = metric_row(&summary, "style");
    assert_eq!(style["with_skill"], 0.0);
    assert_eq!(style["without_skill"], 1.0);
    assert_eq!(style["estimate"], -1.0);
    assert!(style.get("weight").is_none(), "{style}");
    let report = std::fs::read_to_string(project.run_dir("styled").join("report.md")).unwrap();
    assert!(report.contains("| style | — | 0.0% | 100.0% |"), "{report}");
    assert!(report.contains("style (the answer's format, language and verbosity"));
    assert!(
        stdout(&output).contains("| style | — |"),
        "{}",
        stdout(&output)
    );
    let html = std::fs::read_to_string(project.run_dir("styled").join("report.html")).unwrap();
    assert!(
        html.contains("<td>style</td>"),
        "no style row in report.html"
    );
    let lift_csv = std::fs::read_to_string(project.run_dir("styled").join("lift.csv")).unwrap();
    assert!(
        lift_csv
            .lines()
            .any(|line| line.contains(",style,0.000000,") && line.contains(",-100.000000,")),
        "{lift_csv}"
    );

    let trials_csv = std::fs::read_to_string(project.run_dir("styled").join("trials.csv")).unwrap();
    assert!(trials_csv.contains("style=0"), "{trials_csv}");
    assert!(trials_csv.contains("style=1"), "{trials_csv}");

    // The manifest records what the reference was made of, not its text.
    let manifest_text =
        std::fs::read_to_string(project.run_dir("styled").join("manifest.json")).unwrap();
    let manifest: Value = serde_json::from_str(&manifest_text).unwrap();
    let reference = &manifest["grading"]["style_reference"];
    let user_md = home.path().join(".openclaw/workspace/USER.md");
    let bytes = std::fs::read(&user_md).unwrap();
    assert_eq!(
        reference["user_md"]["sha256"],
        hex::encode(sha2::Sha256::digest(&bytes))
    );
    assert!(
        reference["user_md"]["path"]
            .as_str()
            .unwrap()
            .ends_with(".openclaw/workspace/USER.md")
    );
    assert_eq!(reference["user_md_explicit"], false);
    assert_eq!(reference["history_answers"], 2);
    assert!(reference["history_chars"].as_u64().unwrap() > 40);
    assert_eq!(reference["reference_sha256"].as_str().unwrap().len(), 64);
    assert!(!manifest_text.contains("calm plain sentences"));
    assert!(!manifest_text.contains("logs folder"));
    assert!(
        project
            .result_json("plain", "manifest.json")
            .pointer("/grading/style_reference")
            .is_none()
    );

    // A regrade with the recorded settings builds the same reference again (every answer
    // from the judge cache); once USER.md has changed it refuses, naming the change.
    let before = judge.requests();
    let regrade = |out: &str| {
        project
            .command()
            .env("SKILL_LIFT_HISTORY_ROOT", "/nonexistent-history-root")
            .args(["regrade", "results/styled", "--out", out, "--quiet"])
            .output()
            .unwrap()
    };
    let again = regrade("results/styled-again");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(
        judge.requests(),
        before,
        "regrade answered from the judge cache"
    );
    std::fs::write(&user_md, "Long formal answers with headings.\n").unwrap();
    let changed = regrade("results/styled-changed");
    assert_eq!(changed.status.code(), Some(2), "{}", stderr(&changed));
    assert!(
        stderr(&changed).contains("the style reference changed since the run was recorded"),
        "{}",
        stderr(&changed)
    );

    // The judge saw USER.md and the past answers (latest first), redacted.
    let prompts = judge.style_prompts();
    assert!(!prompts.is_empty());
    for prompt in &prompts {
        assert!(prompt.contains("calm plain sentences"), "{prompt}");
        let latest = prompt.find("They rotate daily").unwrap();
        let earlier = prompt.find("It is in the settings folder").unwrap();
        assert!(latest < earlier, "{prompt}");
        assert!(!prompt.contains(&planted_key()), "{prompt}");
    }
}

/// `style` with no USER.md and no past answer stops before any trial runs, with exit 2 and
/// what to do; `--style-reference` naming a missing file is named; `--style-reference`
/// without the style metric is refused.
#[test]
fn style_without_a_reference_stops_before_any_trial() {
    let agent = MockServer::start(MockBehaviour::default());
    let judge = MockJudge::start(JudgeBehaviour::default());
    let project = project(&agent.base_url(), &judge.base_url());
    let empty_home = tempfile::tempdir().unwrap();
    let style = ["--judge", "judge", "--judge-metrics", "style"];
    let output = run(
        &project,
        empty_home.path(),
        "skill/pirate-greeting",
        "none",
        &style,
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("needs a style reference"), "{message}");
    assert!(message.contains("--style-reference FILE"), "{message}");
    assert!(message.contains(".openclaw/workspace/USER.md"), "{message}");
    assert_eq!(agent.requests(), 0);
    assert_eq!(judge.requests(), 0);
    assert!(!project.run_dir("none").exists());

    let mut named = style.to_vec();
    named.extend(["--style-reference", "missing-USER.md"]);
    let output = run(
        &project,
        empty_home.path(),
        "skill/pirate-greeting",
        "named",
        &named,
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("missing-USER.md"),
        "{}",
        stderr(&output)
    );

    // A named USER.md alone is a reference.
    project.write("me/USER.md", USER_MD);
    let mut named = style.to_vec();
    named.extend(["--style-reference", "me/USER.md"]);
    let output = run(
        &project,
        empty_home.path(),
        "skill/pirate-greeting",
        "mine",
        &named,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let manifest = project.result_json("mine", "manifest.json");
    assert_eq!(
        manifest["grading"]["style_reference"]["user_md_explicit"],
        true
    );
    assert_eq!(manifest["grading"]["style_reference"]["history_answers"], 0);

    let output = run(
        &project,
        empty_home.path(),
        "skill/pirate-greeting",
        "stray",
        &["--judge", "judge", "--style-reference", "me/USER.md"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("add `style` to --judge-metrics"));
}

/// Two versions of the skill with the same lift (the mixed eval set: lift 1/3 in both) whose
/// answers differ in style: compare says style breaks the tie for the version whose answers
/// match the user's style, and changes no verdict or exit code.
#[test]
fn compare_breaks_a_tie_with_style() {
    let agent = MockServer::start(MockBehaviour {
        partial: Some((
            "LOUD-MARKER".to_string(),
            "Aye! HERE IS THE answer!!!".to_string(),
        )),
        ..MockBehaviour::default()
    });
    let judge = MockJudge::start(JudgeBehaviour {
        style_no_marker: Some("!!!".to_string()),
        ..JudgeBehaviour::default()
    });
    let project = project(&agent.base_url(), &judge.base_url());
    project.write(
        "loud/pirate-greeting/SKILL.md",
        &support::cli::PIRATE_SKILL_MD.replace("SKILL-MARKER", "LOUD-MARKER"),
    );
    project.write("loud/pirate-greeting/evals/evals.json", &mixed_eval_set(6));
    let home = tempfile::tempdir().unwrap();
    plant_home(home.path());
    let judged = ["--judge", "judge", "--judge-metrics", "accuracy,style"];
    for (skill, run_id) in [
        ("skill/pirate-greeting", "calm"),
        ("loud/pirate-greeting", "loud"),
    ] {
        let output = run(&project, home.path(), skill, run_id, &judged);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let calm = project.result_json("calm", "summary.json");
    let loud = project.result_json("loud", "summary.json");
    assert_eq!(calm["lift"]["estimate"], loud["lift"]["estimate"]);

    let output = project
        .command()
        .args(["compare", "results/calm", "results/loud", "--out", "cmp"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("style breaks the tie: A 1.00 vs B 0.00 — A's answers match the user's style reference better"),
        "{text}"
    );
    assert!(
        text.contains("| style (with skill, mean score) | 1.00 | 0.00 | -1.00 |"),
        "{text}"
    );
    let comparison: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path("cmp/compare.json")).unwrap())
            .unwrap();
    assert_eq!(comparison["style_tie_break"]["prefers"], "A");
    assert_eq!(
        comparison["style_tie_break"]["lifts_indistinguishable"],
        true
    );
    // Each run keeps its own verdict.
    let verdicts: Vec<&Value> = comparison["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["field"] == "verdict")
        .collect();
    assert_eq!(verdicts[0]["a"], calm["lift"]["verdict"]);
    assert_eq!(verdicts[0]["b"], loud["lift"]["verdict"]);
}
