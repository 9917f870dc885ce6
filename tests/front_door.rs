//! Integration tests of the first things a new user meets, through the real binary: commands
//! that cannot measure anything on the runner they were given say so and exit 4, misspelled flags
//! get a suggestion that names a real flag, a missing path "does not exist", and warnings about
//! the run come only after the checks that can stop it.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::cli::{aye_eval_set, described, openai_profile};
use support::mock_openai::{MockBehaviour, MockServer};

/// `skill-lift ARGS` in the project `dir` with the state folder `state`.
fn skill_lift(state: &Path, dir: &Path, args: &[&str]) -> Output {
    binary(state).current_dir(dir).args(args).output().unwrap()
}

/// A [`project`] answered by a default mock, with a state folder of its own.
struct Front {
    state: tempfile::TempDir,
    server: MockServer,
    dir: tempfile::TempDir,
}

impl Front {
    /// The project with `cases` golden cases, its profiles pointing at a fresh mock.
    fn served(cases: usize) -> Self {
        let server = MockServer::start(MockBehaviour::default());
        let dir = project(&server.base_url(), cases);
        Front {
            state: tempfile::tempdir().unwrap(),
            server,
            dir,
        }
    }

    /// `skill-lift ARGS` in the project.
    fn run(&self, args: &[&str]) -> Output {
        skill_lift(self.state.path(), self.dir.path(), args)
    }
}

fn binary(state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_skill-lift"));
    command
        .env_remove("SKILL_LIFT_RUNNER")
        .env_remove("SKILL_LIFT_RESULTS")
        .env_remove("SKILL_LIFT_HOST")
        .env("SKILL_LIFT_HOME", state)
        .env("CI", "true");
    command
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project: skill `greeter` (marker body) with `cases` golden cases and a trigger set, and
/// runner profiles `mock` (at `base_url`, inject mode), `notools` (the same, `tool_calls =
/// false`, as the local model's) and `down` (nothing listens).
fn project(base_url: &str, cases: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("greeter/SKILL.md"),
        "---\nname: greeter\ndescription: Use when greeting a customer.\n---\nBegin every answer with Aye! SKILL-MARKER\n",
    );
    write(
        &dir.path().join("greeter/evals/evals.json"),
        &aye_eval_set("greeter", cases, |i| format!("case-{i:02}")),
    );
    write(
        &dir.path().join("greeter/evals/triggers.json"),
        &json!({"skill": "greeter", "queries": [
            {"id": "pos", "query": "Say hello to the customer.", "should_trigger": true},
            {"id": "neg", "query": "Debug this HTTP 500.", "should_trigger": false}]})
        .to_string(),
    );
    let profile = |url: &str, extra: &str| openai_profile(url, 4, extra);
    write(
        &dir.path().join("runners/mock.toml"),
        &profile(base_url, ""),
    );
    write(
        &dir.path().join("runners/notools.toml"),
        &profile(base_url, "tool_calls = false\n"),
    );
    // Port 9 (discard) has no HTTP server on loopback.
    write(
        &dir.path().join("runners/down.toml"),
        &profile("http://127.0.0.1:9/v1", ""),
    );
    dir
}

#[test]
fn triggers_on_a_runner_that_cannot_call_tools_is_nothing_to_measure() {
    let front = Front::served(2);
    for runner in ["notools", "local"] {
        let output = front.run(&["triggers", "greeter", "--runner", runner, "-k", "1"]);
        let all = described(&output);
        assert_eq!(output.status.code(), Some(4), "{runner}: {all}");
        assert!(
            all.contains("cannot call tools") && all.contains("nothing to measure"),
            "{runner}: {all}"
        );
        // No rate is printed for what could not be measured.
        assert!(
            !all.contains("recall") && !all.contains("precision"),
            "{runner}: {all}"
        );
    }
    // Refused before any attempt: the mock saw no request.
    assert_eq!(front.server.requests(), 0);
}

#[test]
fn run_in_inject_mode_says_activation_is_not_observable_instead_of_a_rate() {
    let front = Front::served(5);
    let output = front.run(&[
        "run", "greeter", "--runner", "mock", "-k", "2", "--out", "out", "--run-id", "r",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let report = std::fs::read_to_string(front.dir.path().join("out/r/report.md")).unwrap();
    assert!(
        report.contains("activation not observable in inject mode"),
        "{report}"
    );
    let summary: Value = serde_json::from_slice(
        &std::fs::read(front.dir.path().join("out/r/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        summary["lift"]["negative_lift"]["activation_observable"],
        json!(false),
        "{summary}"
    );
}

#[test]
fn the_attempts_flag_is_accepted_as_k_and_misspellings_point_to_it() {
    let state = tempfile::tempdir().unwrap();
    let dir = project("http://127.0.0.1:9/v1", 5);
    // `--k 3` is the same flag as `-k 3` / `--attempts 3`: plan accepts it and counts 3 attempts.
    for flag in ["--k", "-k", "--attempts"] {
        let output = skill_lift(
            state.path(),
            dir.path(),
            &["plan", "greeter", "--runner", "mock", flag, "3"],
        );
        let all = described(&output);
        assert_eq!(output.status.code(), Some(0), "{flag}: {all}");
        assert!(
            all.contains("K=3") || all.contains("K = 3"),
            "{flag}: {all}"
        );
    }
    // A misspelling names a flag that exists, never `-- --attempts`.
    let output = skill_lift(
        state.path(),
        dir.path(),
        &["run", "greeter", "--atempts", "3"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a similar argument exists: '--attempts'"),
        "{stderr}"
    );
    assert!(!stderr.contains("-- --"), "{stderr}");
}

#[test]
fn a_missing_skill_path_does_not_exist() {
    let state = tempfile::tempdir().unwrap();
    let dir = project("http://127.0.0.1:9/v1", 5);
    for command in ["run", "plan", "triggers", "lint"] {
        let mut invocation = binary(state.path());
        invocation
            .current_dir(dir.path())
            .args([command, "no-such-skill"]);
        if command != "lint" {
            invocation.args(["--runner", "mock"]);
        }
        let output = invocation.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("no-such-skill") && stderr.contains("does not exist"),
            "{command}: {stderr}"
        );
        assert!(!stderr.contains("not a folder"), "{command}: {stderr}");
    }
}

#[test]
fn the_calibration_warning_comes_only_after_the_checks_that_can_stop_a_run() {
    let front = Front::served(5);
    // The pre-flight check stops a run on a runner nobody answers: the error is the only news.
    let output = front.run(&[
        "run", "greeter", "--runner", "down", "-k", "1", "--out", "out",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("pre-flight"), "{stderr}");
    assert!(!stderr.contains("uncalibrated"), "{stderr}");
    // A bad eval set stops it too, before any warning about the run.
    write(&front.dir.path().join("bad.json"), "{\"evals\": [");
    let output = front.run(&["run", "greeter", "--runner", "mock", "--evals", "bad.json"]);
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.json"), "{stderr}");
    assert!(!stderr.contains("uncalibrated"), "{stderr}");
    // A run that passes its checks does warn, after the line that starts it.
    let output = front.run(&[
        "run", "greeter", "--runner", "mock", "-k", "1", "--out", "out", "--run-id", "ok",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let warning = stderr.find("uncalibrated").expect(&stderr);
    let start = stderr.find("skill-lift: run ").expect(&stderr);
    assert!(start < warning, "{stderr}");
}
