//! Integration tests of the data side of hardening (issue 12): no secret on disk, no trial
//! silently lost, no baseline leak by whitespace, run folders as a trust boundary, locking and
//! resume. The real `skill-lift` binary against scripted loopback servers, in temporary folders.
//!
//! Run folders of the secret tests are copied under `$CARGO_TARGET_TMPDIR/secret-scan/`, which
//! `scripts/check-no-secrets` (run by `.ci/run` after `cargo test`) greps for the test keys.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use support::cli::{MOCK_K2, assert_exit, state_dir, stderr};
use support::mock_openai::{MockBehaviour, MockServer};
use support::serve::{Served, first_user_text, serve};

/// The runner's API key in these tests: OpenAI-shaped, with a distinctive canary.
const RUNNER_KEY: &str = "sk-proj-SKLCANARY7f3a9b2c1d0e4f5a6b7c8d9e";
/// The judge's API key: no well-known shape (only its registered value can redact it).
const JUDGE_KEY: &str = "sklcanaryjudge-0f9e8d7c6b5a4f3e";
/// What every secret test key contains (the CI check greps for it, case-insensitively).
const CANARY: &str = "sklcanary";

// A skill with a marker body, `cases` golden cases, and a runner profile `mock`.
use support::cli::Project as Fixture;

impl Fixture {
    fn new(base_url: &str, cases: usize) -> Self {
        let fixture = Self::empty();
        fixture.write(
            "skill/pirate-greeting/SKILL.md",
            "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\nBegin every answer with Aye! SKILL-MARKER\n\nKeep the greeting short and cheerful, in the voice of a friendly captain.\n",
        );
        fixture.write_cases(cases, None);
        fixture.write_profile("mock", base_url, "");
        fixture
    }

    fn write_cases(&self, cases: usize, files: Option<Value>) {
        let evals: Vec<Value> = (0..cases)
            .map(|i| {
                let mut case = json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                    "expected_skill": "pirate-greeting",
                    "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]});
                if let Some(files) = &files {
                    case["files"] = files.clone();
                }
                case
            })
            .collect();
        self.write(
            "skill/pirate-greeting/evals/evals.json",
            &serde_json::to_string_pretty(
                &json!({"skill_name": "pirate-greeting", "evals": evals}),
            )
            .unwrap(),
        );
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command()
            .arg("run")
            .arg(self.skill())
            .args(["--runner", "mock", "--out", "results"])
            .args(args)
            .output()
            .unwrap()
    }

    fn resume(&self, id: &str, args: &[&str]) -> Output {
        self.command()
            .args(["run", "--resume"])
            .arg(self.run_dir(id))
            .args(args)
            .output()
            .unwrap()
    }

    fn report(&self, id: &str, args: &[&str]) -> Output {
        self.command()
            .arg("report")
            .arg(self.run_dir(id))
            .args(args)
            .output()
            .unwrap()
    }
}

fn trial_lines(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("trials.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Copy `dir` under `$CARGO_TARGET_TMPDIR/secret-scan/<name>` for the CI secret check.
fn keep_for_secret_scan(name: &str, dir: &Path) {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("secret-scan")
        .join(name);
    let _ = std::fs::remove_dir_all(&target);
    for file in walk(dir) {
        let relative = file.strip_prefix(dir).unwrap();
        let destination = target.join(relative);
        std::fs::create_dir_all(destination.parent().unwrap()).unwrap();
        std::fs::copy(&file, destination).unwrap();
    }
}

/// Every file under `dirs` that holds a test key (or its canary), as `path: excerpt`.
fn files_with_secrets(dirs: &[&Path]) -> Vec<String> {
    let mut found = Vec::new();
    for dir in dirs {
        for file in walk(dir) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes).to_lowercase();
            if let Some(at) = text.find(CANARY) {
                let start = at.saturating_sub(60);
                let end = (at + 60).min(text.len());
                found.push(format!(
                    "{}: …{}…",
                    file.display(),
                    text.get(start..end).unwrap_or("")
                ));
            }
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// 1. Redaction as a boundary

/// An agent server that echoes the runner's key everywhere a server can: a 429 error body with
/// a `Retry-After`, a 401 error body (fatal), a tool call reading a file that holds it, the
/// final answer. Case 1 always gets the 401; the first request of all gets the 429.
struct EchoState {
    requests: AtomicUsize,
}

async fn echo_agent(
    State(state): State<Arc<EchoState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let number = state.requests.fetch_add(1, Ordering::SeqCst);
    let presented = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let user = first_user_text(&body);
    if number == 0 {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "0"), ("x-echo", presented.as_str())],
            Json(json!({"error": {"message": format!("Rate limited for key {presented}")}})),
        )
            .into_response();
    }
    if user.contains("Question 1?") {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": {"message": format!("Incorrect API key: {presented}")}})),
        )
            .into_response();
    }
    let tool_results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    let completion = |message: Value| {
        Json(json!({
            "id": "chatcmpl-echo", "object": "chat.completion", "model": "mock-model-1",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        }))
        .into_response()
    };
    if tool_results.is_empty() && body.get("tools").is_some() {
        let calls = json!([{"id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": json!({"path": "notes.txt"}).to_string()}}]);
        return completion(json!({"role": "assistant", "content": null, "tool_calls": calls}));
    }
    let key = presented.trim_start_matches("Bearer ");
    completion(
        json!({"role": "assistant", "content": format!("Aye! The key is {key}. Also {presented}.")}),
    )
}

/// A judge that echoes its own bearer token (raw, without `Bearer`) in its reason, and answers
/// every fourth request with HTTP 401 echoing it.
async fn echo_judge(
    State(state): State<Arc<EchoState>>,
    headers: HeaderMap,
    Json(_body): Json<Value>,
) -> Response {
    let number = state.requests.fetch_add(1, Ordering::SeqCst);
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim_start_matches("Bearer ")
        .to_string();
    if number % 4 == 3 {
        return (
            StatusCode::UNAUTHORIZED,
            format!("judge says: token {token} is not valid"),
        )
            .into_response();
    }
    let content =
        json!({"goal_achieved": "yes", "reason": format!("the answer used token {token}")});
    Json(json!({
        "id": "chatcmpl-judge", "object": "chat.completion", "model": "judge-model-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content.to_string()}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
    .into_response()
}

fn echo_servers() -> (Served, Served) {
    let agent = serve(
        Router::new()
            .route("/v1/chat/completions", post(echo_agent))
            .with_state(Arc::new(EchoState {
                requests: AtomicUsize::new(0),
            })),
    );
    let judge = serve(
        Router::new()
            .route("/v1/chat/completions", post(echo_judge))
            .with_state(Arc::new(EchoState {
                requests: AtomicUsize::new(0),
            })),
    );
    (agent, judge)
}

#[test]
fn planted_keys_reach_no_file_of_the_run_regrade_or_report() {
    let (agent, judge) = echo_servers();
    let fixture = Fixture::new(&format!("http://{}/v1", agent.address), 3);
    fixture.write_profile(
        "mock",
        &format!("http://{}/v1", agent.address),
        "api_key_env = \"SKL_TEST_RUNNER_KEY\"\nskill_mode = \"tools\"\nmax_retries = 2\n",
    );
    fixture.write_profile(
        "judge",
        &format!("http://{}/v1", judge.address),
        "api_key_env = \"SKL_TEST_JUDGE_KEY\"\nmax_retries = 0\n",
    );
    // A workspace file holding the key: the agent reads it, so a tool output carries it.
    fixture.write(
        "skill/pirate-greeting/evals/notes.txt",
        &format!("deploy key: {RUNNER_KEY}\n"),
    );
    fixture.write_cases(3, Some(json!(["notes.txt"])));
    // A grader that prints the key on stdout (in its reason) and stderr, and fails on case-02.
    fixture.write(
        "grader.sh",
        "echo \"grader saw $SKL_TEST_RUNNER_KEY and $SKL_TEST_JUDGE_KEY\" >&2\n\
         if grep -q case-02 \"$SKILL_LIFT_INPUT\"; then echo \"crash with $SKL_TEST_RUNNER_KEY\" >&2; exit 3; fi\n\
         echo \"{\\\"overall\\\": 1, \\\"details\\\": {\\\"leak\\\": \\\"key $SKL_TEST_RUNNER_KEY / $SKL_TEST_JUDGE_KEY\\\"}}\"\n",
    );
    let grader = format!("leak=sh {}", fixture.path("grader.sh").display());
    let output = fixture
        .command()
        .env("SKL_TEST_RUNNER_KEY", RUNNER_KEY)
        .env("SKL_TEST_JUDGE_KEY", JUDGE_KEY)
        .arg("run")
        .arg(fixture.skill())
        .args(MOCK_K2)
        .args([
            "--run-id",
            "echo",
            "--judge",
            "judge",
            "--judge-metrics",
            "goal_accuracy",
            "--no-judge-cache",
            "--grader",
            &grader,
            "--max-unscoreable",
            "1",
        ])
        .output()
        .unwrap();
    let run_dir = fixture.run_dir("echo");
    assert!(
        run_dir.join("trials.jsonl").is_file(),
        "{}",
        stderr(&output)
    );
    let records = trial_lines(&run_dir);
    assert_eq!(records.len(), 12, "{}", stderr(&output));
    // The key was really echoed: into runner errors, retries, final answers, tool output,
    // judge reasons and errors, grader output and errors.
    let all = records
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    for marker in [
        "[REDACTED:$SKL_TEST_RUNNER_KEY]",
        "[REDACTED:$SKL_TEST_JUDGE_KEY]",
    ] {
        assert!(
            all.contains(marker),
            "{marker} missing from the records: {all}"
        );
    }
    assert!(
        records.iter().any(|r| r["retries"]
            .as_array()
            .is_some_and(|retries| !retries.is_empty())),
        "no retry recorded"
    );
    assert!(
        records
            .iter()
            .any(|r| r["reason"].as_str().unwrap_or("").contains("HTTP 401")),
        "no runner error recorded: {all}"
    );
    // regrade and report write elsewhere: they pass the boundary too.
    let regrade = fixture
        .command()
        .env("SKL_TEST_RUNNER_KEY", RUNNER_KEY)
        .env("SKL_TEST_JUDGE_KEY", JUDGE_KEY)
        .args(["regrade", "results/echo", "--out", "results/echo-regraded"])
        .args([
            "--judge",
            "judge",
            "--judge-metrics",
            "goal_accuracy",
            "--no-judge-cache",
        ])
        .args(["--grader", &grader, "--max-unscoreable", "1"])
        .output()
        .unwrap();
    assert!(
        fixture
            .run_dir("echo-regraded")
            .join("trials.jsonl")
            .is_file(),
        "{}",
        stderr(&regrade)
    );
    let report = fixture
        .command()
        .args(["report", "results/echo", "--out", "report-out"])
        .output()
        .unwrap();
    assert!(
        fixture.path("report-out/report.html").is_file(),
        "{}",
        stderr(&report)
    );
    let dirs = [
        run_dir.as_path(),
        &fixture.run_dir("echo-regraded"),
        &fixture.path("report-out"),
        &state_dir().join("judge-cache"),
    ];
    let leaks = files_with_secrets(&dirs);
    assert!(leaks.is_empty(), "secrets on disk:\n{}", leaks.join("\n"));
    for output in [&output, &regrade, &report] {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            stderr(output)
        )
        .to_lowercase();
        assert!(!text.contains(CANARY), "secret on the terminal: {text}");
    }
    keep_for_secret_scan("echo-run", &run_dir);
    keep_for_secret_scan("echo-regraded", &fixture.run_dir("echo-regraded"));
    keep_for_secret_scan("echo-report", &fixture.path("report-out"));
}

// ---------------------------------------------------------------------------------------------
// 2. Leak guard on meaning

#[test]
fn a_whitespace_variant_of_the_target_under_another_name_is_refused() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    // The target's body with CRLF line endings, trailing spaces, extra blank lines and a tab.
    let decoy = "---\r\nname: sea-voice\r\ndescription: Use when greeting users in pirate style.\r\n---\r\n\r\n\r\nBegin every answer with Aye! SKILL-MARKER  \r\n\r\n\r\n\tKeep  the greeting short and cheerful, in the voice of a friendly captain.  \r\n";
    fixture.write("decoys/sea-voice/SKILL.md", decoy);
    let output = fixture.run(&["-k", "1", "--run-id", "leak", "--decoys", "decoys"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("leak guard"), "{text}");
    assert!(text.contains("decoys/sea-voice/SKILL.md"), "{text}");
    assert!(text.contains("pirate-greeting/SKILL.md"), "{text}");
    assert!(!fixture.run_dir("leak").exists());
    assert_eq!(server.state.requests.load(Ordering::SeqCst), 0);
    // The frontmatter name alone is enough.
    fixture.write(
        "decoys/sea-voice/SKILL.md",
        "---\nname: pirate-greeting\ndescription: Something else.\n---\nTotally different text about tides.\n",
    );
    let output = fixture.run(&["-k", "1", "--run-id", "leak2", "--decoys", "decoys"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

#[test]
fn a_case_file_that_copies_the_target_is_refused() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    // An eval file outside the skill (`--evals`) may list any file below its own folder,
    // the target's SKILL.md included.
    fixture.write(
        "evals.json",
        &json!({"evals": [{"id": "c", "prompt": "Hi", "checks": [{"type": "contains", "value": "Aye"}],
            "files": ["skill/pirate-greeting/SKILL.md"]}]})
        .to_string(),
    );
    let output = fixture.run(&["-k", "1", "--run-id", "copies", "--evals", "evals.json"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("leak guard"), "{text}");
    assert_eq!(server.state.requests.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------
// 3. Every planned trial is accounted for

/// A server answering every request with HTTP 429 and `Retry-After: 1e30`.
async fn huge_retry_after() -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [("retry-after", "1e30")],
        "slow down",
    )
        .into_response()
}

#[test]
fn a_huge_retry_after_is_bounded_and_every_trial_is_recorded() {
    let served = serve(Router::new().route("/v1/chat/completions", post(huge_retry_after)));
    let fixture = Fixture::new(&format!("http://{}/v1", served.address), 2);
    fixture.write_profile(
        "mock",
        &format!("http://{}/v1", served.address),
        "max_retries = 3\n",
    );
    // A short trial timeout: the bounded wait (30 s) does not fit, the trial gives up.
    let profile = std::fs::read_to_string(fixture.path("runners/mock.toml"))
        .unwrap()
        .replace("timeout_s = 30", "timeout_s = 2");
    fixture.write("runners/mock.toml", &profile);
    let output = fixture.run(&["-k", "1", "--run-id", "retry"]);
    let records = trial_lines(&fixture.run_dir("retry"));
    assert_eq!(records.len(), 4, "{}", stderr(&output));
    assert!(
        records
            .iter()
            .all(|r| r["outcome"] == "unscoreable" && r["unscoreable_cause"] == "runner_error"),
        "{records:?}"
    );
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
}

#[test]
fn out_of_range_profile_numbers_are_input_errors_naming_file_and_key() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 1);
    for (setting, key) in [
        ("timeout_s = 1e30", "timeout_s"),
        ("retry_base_delay_s = inf", "retry_base_delay_s"),
        ("grace_s = 1e300", "grace_s"),
        ("linger_s = 1e300", "linger_s"),
        ("concurrency = 18446744073709551615", "concurrency"),
    ] {
        let profile = std::fs::read_to_string(fixture.path("runners/mock.toml")).unwrap();
        let profile: String = profile
            .lines()
            .filter(|line| !line.starts_with(key))
            .map(|line| format!("{line}\n"))
            .collect();
        fixture.write("runners/bad.toml", &format!("{profile}{setting}\n"));
        let output = fixture
            .command()
            .arg("run")
            .arg(fixture.skill())
            .args(["--runner", "bad", "--out", "results", "-k", "1"])
            .output()
            .unwrap();
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{setting}: {text}");
        assert!(text.contains("bad.toml:"), "{setting}: {text}");
        assert!(text.contains(key), "{setting}: {text}");
        assert!(!text.contains("panicked"), "{setting}: {text}");
    }
}

#[test]
fn a_panicking_trial_is_recorded_unscoreable_and_the_run_does_not_succeed() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    let output = fixture
        .command()
        .env("SKILL_LIFT_FAULT_PANIC_TRIAL", "case-01/without_skill/1")
        .arg("run")
        .arg(fixture.skill())
        .args([
            "--runner", "mock", "--out", "results", "-k", "1", "--run-id", "panic",
        ])
        .output()
        .unwrap();
    let records = trial_lines(&fixture.run_dir("panic"));
    assert_eq!(records.len(), 4, "{}", stderr(&output));
    let panicked = records
        .iter()
        .find(|r| r["trial_id"] == "case-01/without_skill/1")
        .unwrap();
    assert_eq!(panicked["outcome"], "unscoreable");
    assert_eq!(panicked["unscoreable_cause"], "internal_error");
    assert!(
        panicked["reason"]
            .as_str()
            .unwrap()
            .contains("fault injection"),
        "{panicked}"
    );
    // 1 of 4 unscoreable is beyond the 10% default: exit 3, not 0 and not a leak's 2.
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        !stderr(&output).contains("leak guard"),
        "{}",
        stderr(&output)
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Run folders are a trust boundary

fn finished_run(server: &MockServer, id: &str, extra: &[&str]) -> Fixture {
    let fixture = Fixture::new(&server.base_url(), 2);
    let mut args = vec!["-k", "2", "--run-id", id];
    args.extend_from_slice(extra);
    let output = fixture.run(&args);
    assert!(
        matches!(output.status.code(), Some(0) | Some(1)),
        "{}",
        stderr(&output)
    );
    fixture
}

fn rewrite_trials(run_dir: &Path, edit: impl Fn(&mut Vec<Value>)) {
    let mut records = trial_lines(run_dir);
    edit(&mut records);
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(run_dir.join("trials.jsonl"), text).unwrap();
}

#[test]
fn report_reads_only_inside_the_run_folder() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = finished_run(&server, "paths", &[]);
    let run_dir = fixture.run_dir("paths");
    let original = std::fs::read_to_string(run_dir.join("trials.jsonl")).unwrap();
    let outside = fixture.path("outside.json");
    std::fs::write(&outside, "{}").unwrap();
    std::os::unix::fs::symlink(&outside, run_dir.join("transcripts/link.json")).unwrap();
    for (transcript, expected) in [
        ("../outside.json", "trials.jsonl:1:"),
        (outside.to_str().unwrap(), "trials.jsonl:1:"),
        ("/dev/zero", "trials.jsonl:1:"),
        ("transcripts/../../outside.json", "trials.jsonl:1:"),
        ("transcripts/link.json", "symbolic link"),
    ] {
        std::fs::write(run_dir.join("trials.jsonl"), &original).unwrap();
        rewrite_trials(&run_dir, |records| {
            records[0]["transcript"] = json!(transcript);
        });
        let output = fixture.report("paths", &[]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{transcript}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(expected),
            "{transcript}: {}",
            stderr(&output)
        );
        assert!(!fixture.path("outside.html").exists());
    }
    // A span past the end of the transcript log is an error naming the log, never a panic.
    std::fs::write(run_dir.join("trials.jsonl"), &original).unwrap();
    rewrite_trials(&run_dir, |records| {
        records[0]["transcript_span"] = json!({"offset": 1u64 << 40, "length": 10});
    });
    let output = fixture.report("paths", &[]);
    assert_exit(&output, 2, "transcripts/transcripts.jsonl");
}

/// An edit of a run's records.
type RecordEdit<'a> = Box<dyn Fn(&mut Vec<Value>) + 'a>;

#[test]
fn report_refuses_records_outside_the_plan_and_implausible_values() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = finished_run(&server, "plan", &[]);
    let run_dir = fixture.run_dir("plan");
    let original = std::fs::read_to_string(run_dir.join("trials.jsonl")).unwrap();
    let first = trial_lines(&run_dir)[0].clone();
    let invented = |case: &str, attempt: u32, run_id: &str| {
        let mut record = first.clone();
        record["case_id"] = json!(case);
        record["attempt"] = json!(attempt);
        record["run_id"] = json!(run_id);
        record["trial_id"] = json!(format!(
            "{case}/{}/{attempt}",
            first["arm"].as_str().unwrap()
        ));
        record
    };
    let edits: Vec<(&str, RecordEdit)> = vec![
        (
            "unknown case",
            Box::new(|r: &mut Vec<Value>| r.push(invented("invented", 1, "plan"))),
        ),
        (
            "attempt 3",
            Box::new(|r: &mut Vec<Value>| r.push(invented("case-00", 3, "plan"))),
        ),
        (
            "another run",
            Box::new(|r: &mut Vec<Value>| r.push(invented("case-00", 1, "other-run"))),
        ),
        (
            "composite",
            Box::new(|r: &mut Vec<Value>| r[2]["composite"] = json!(2.5)),
        ),
        (
            "wall_s",
            Box::new(|r: &mut Vec<Value>| r[2]["wall_s"] = json!(-1.0)),
        ),
        (
            "arm",
            Box::new(|r: &mut Vec<Value>| r[2]["arm"] = json!("previous_version")),
        ),
    ];
    for (what, edit) in &edits {
        std::fs::write(run_dir.join("trials.jsonl"), &original).unwrap();
        rewrite_trials(&run_dir, edit);
        let output = fixture.report("plan", &[]);
        assert_eq!(output.status.code(), Some(2), "{what}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("trials.jsonl:"),
            "{what}: {}",
            stderr(&output)
        );
    }
    std::fs::write(run_dir.join("trials.jsonl"), &original).unwrap();
    let manifest_text = std::fs::read_to_string(run_dir.join("manifest.json")).unwrap();
    for (what, key, value) in [
        ("k = 0", "k", json!(0)),
        ("no arms", "arms", json!([])),
        ("shard 5/2", "shard", json!({"index": 5, "count": 2})),
    ] {
        let mut manifest: Value = serde_json::from_str(&manifest_text).unwrap();
        manifest[key] = value;
        std::fs::write(run_dir.join("manifest.json"), manifest.to_string()).unwrap();
        let output = fixture.report("plan", &[]);
        assert_eq!(output.status.code(), Some(2), "{what}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("manifest.json"),
            "{what}: {}",
            stderr(&output)
        );
    }
    // A value of the wrong type is named by its key.
    let mut manifest: Value = serde_json::from_str(&manifest_text).unwrap();
    manifest["k"] = json!("three");
    std::fs::write(run_dir.join("manifest.json"), manifest.to_string()).unwrap();
    let output = fixture.report("plan", &[]);
    assert_exit(
        &output,
        2,
        "not a valid manifest: `k`: invalid type: string \"three\"",
    );
    std::fs::write(run_dir.join("manifest.json"), &manifest_text).unwrap();
    // An empty trials.jsonl is no success either.
    std::fs::write(run_dir.join("trials.jsonl"), "").unwrap();
    let output = fixture.report("plan", &[]);
    assert_ne!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("no trial"), "{}", stderr(&output));
}

#[test]
fn report_keeps_the_run_gates() {
    let server = MockServer::start(MockBehaviour::default());
    // The lift is +1.0: a min-lift above 1 cannot pass. Five cases: below five no interval is
    // reported (docs/statistics.md), so no --min-lift could pass.
    let fixture = Fixture::new(&server.base_url(), 5);
    let output = fixture.run(&["-k", "2", "--run-id", "gated", "--min-lift", "1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report = fixture.report("gated", &[]);
    assert_eq!(report.status.code(), Some(1), "{}", stderr(&report));
    // A flag given again wins. Five differences of +1 take the few-differences interval (the
    // wider of t and padded t, docs/statistics.md), whose lower bound is +19 pp: 0.1 passes.
    let report = fixture.report("gated", &["--min-lift", "0.1"]);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
}

// ---------------------------------------------------------------------------------------------
// 5 and 6. Locking and resume

#[test]
fn concurrent_resumes_never_lose_recorded_trials() {
    let server = MockServer::start(MockBehaviour {
        delay: std::time::Duration::from_millis(150),
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 4);
    let output = fixture.run(&["-k", "2", "--run-id", "race", "--jobs", "4"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("race");
    for round in 0..3 {
        // Keep the first 4 records: 12 trials are missing.
        let kept: Vec<Value> = trial_lines(&run_dir).into_iter().take(4).collect();
        let kept_ids: HashSet<String> = kept
            .iter()
            .map(|r| r["trial_id"].as_str().unwrap().to_string())
            .collect();
        let text: String = kept.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(run_dir.join("trials.jsonl"), text).unwrap();
        let spawn = || {
            fixture
                .command()
                .args(["run", "--resume"])
                .arg(&run_dir)
                .args(["--jobs", "2", "--quiet"])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (first, second) = (spawn(), spawn());
        let codes = [
            first.wait_with_output().unwrap().status.code(),
            second.wait_with_output().unwrap().status.code(),
        ];
        let records = trial_lines(&run_dir);
        let ids: Vec<String> = records
            .iter()
            .map(|r| r["trial_id"].as_str().unwrap().to_string())
            .collect();
        let unique: HashSet<&String> = ids.iter().collect();
        assert_eq!(
            unique.len(),
            ids.len(),
            "round {round}: duplicate trials {ids:?}"
        );
        assert!(
            kept_ids.iter().all(|id| unique.contains(id)),
            "round {round}: a recorded trial was deleted ({codes:?})"
        );
        assert_eq!(ids.len(), 16, "round {round}: {codes:?}");
        assert!(codes.contains(&Some(0)), "round {round}: {codes:?}");
    }
}

#[test]
fn resume_retries_infrastructure_unscoreable_trials_without_double_counting() {
    // The first 3 requests fail (HTTP 429, no retries): 3 trials are unscoreable.
    let server = MockServer::start(MockBehaviour {
        fail_first_with_429: 3,
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(&server.base_url(), 2);
    let profile = std::fs::read_to_string(fixture.path("runners/mock.toml")).unwrap();
    fixture.write("runners/mock.toml", &format!("{profile}max_retries = 0\n"));
    let output = fixture.run(&["-k", "2", "--run-id", "flaky", "--jobs", "1"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let run_dir = fixture.run_dir("flaky");
    let before = trial_lines(&run_dir);
    assert_eq!(before.len(), 8);
    let unscoreable = before
        .iter()
        .filter(|r| r["outcome"] == "unscoreable")
        .count();
    assert_eq!(unscoreable, 3);
    // A plain resume has nothing to run.
    let output = fixture.resume("flaky", &[]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(trial_lines(&run_dir).len(), 8);
    let output = fixture.resume("flaky", &["--retry-unscoreable"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let after = trial_lines(&run_dir);
    // Old lines kept, new ones supersede them.
    assert_eq!(after.len(), 11);
    assert_eq!(after[..8], before[..]);
    assert!(
        after[8..]
            .iter()
            .all(|r| r["supersedes"] == true && r["outcome"] != "unscoreable"),
        "{after:?}"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["trials"]["recorded"], 8, "{summary}");
    assert_eq!(summary["trials"]["unscoreable"], 0, "{summary}");
    let csv = std::fs::read_to_string(run_dir.join("trials.csv")).unwrap();
    assert_eq!(csv.lines().count(), 9, "{csv}");
    // Re-reporting agrees.
    let report = fixture.report("flaky", &[]);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
}

#[test]
fn resume_cleans_up_after_a_killed_run_and_a_half_folder_can_be_rerun() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    let root = fixture.path("workspaces");
    std::fs::create_dir_all(&root).unwrap();
    let output = fixture.run(&[
        "-k",
        "1",
        "--run-id",
        "killed",
        "--workspace-root",
        root.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("killed");
    // What kill -9 leaves: export temp files and the folders of trials in flight.
    std::fs::write(run_dir.join(".skill-lift-tmp-AbC123"), "partial export").unwrap();
    std::fs::write(run_dir.join(".tmpXy12Zq"), "partial export").unwrap();
    let orphan = root.join("trial-orphan1");
    std::fs::create_dir_all(orphan.join("workspace")).unwrap();
    std::fs::write(
        orphan.join(".skill-lift-run"),
        run_dir.canonicalize().unwrap().to_str().unwrap(),
    )
    .unwrap();
    let foreign = root.join("trial-foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join(".skill-lift-run"), "/some/other/run").unwrap();
    let output = fixture.resume("killed", &["--workspace-root", root.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!run_dir.join(".skill-lift-tmp-AbC123").exists());
    assert!(!run_dir.join(".tmpXy12Zq").exists());
    assert!(!orphan.exists(), "{}", stderr(&output));
    assert!(foreign.exists());
    // A kill between folder creation and manifest.json (older versions): the same run id runs.
    std::fs::create_dir_all(fixture.run_dir("half/transcripts")).unwrap();
    let output = fixture.resume("half", &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--run-id"), "{}", stderr(&output));
    let output = fixture.run(&["-k", "1", "--run-id", "half"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(trial_lines(&fixture.run_dir("half")).len(), 4);
    // No temporary folder is left in results/.
    let leftovers: Vec<_> = std::fs::read_dir(fixture.path("results"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_transcript_log_that_cannot_be_written_stops_the_run_and_loses_no_trial() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    let output = fixture.run(&["-k", "1", "--run-id", "tw"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("tw");
    // Forget case-01's two trials, and put a folder where the transcript log goes.
    rewrite_trials(&run_dir, |records| {
        records.retain(|r| r["case_id"] != "case-01")
    });
    let log = run_dir.join("transcripts/transcripts.jsonl");
    let saved = std::fs::read(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    std::fs::create_dir_all(log.join("x")).unwrap();
    let output = fixture.resume("tw", &[]);
    assert_ne!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("transcripts/transcripts.jsonl"),
        "{}",
        stderr(&output)
    );
    // Nothing was recorded without its transcript; with the log back, resume runs them.
    assert_eq!(trial_lines(&run_dir).len(), 2);
    std::fs::remove_dir_all(&log).unwrap();
    std::fs::write(&log, saved).unwrap();
    let output = fixture.resume("tw", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let records = trial_lines(&run_dir);
    assert_eq!(records.len(), 4);
    for record in &records {
        let transcript = support::transcripts::of(&run_dir, record);
        assert_eq!(transcript["trial_id"], record["trial_id"]);
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Smaller items

#[test]
fn invalid_utf8_in_the_eval_set_is_an_error_naming_the_file() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 1);
    let path = fixture.path("skill/pirate-greeting/evals/evals.json");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.windows(9).position(|w| w == b"Question ").unwrap();
    bytes[at] = 0xff;
    std::fs::write(&path, bytes).unwrap();
    let output = fixture.run(&["-k", "1"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("evals.json:"), "{text}");
    assert!(text.contains("UTF-8"), "{text}");
}

#[test]
fn skill_names_that_cannot_name_a_folder_are_refused() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 1);
    let original = std::fs::read_to_string(fixture.skill().join("SKILL.md")).unwrap();
    for name in ["..", ".", "a/b", "\"\""] {
        fixture.write(
            "skill/pirate-greeting/SKILL.md",
            &original.replace("name: pirate-greeting", &format!("name: {name}")),
        );
        let output = fixture.run(&["-k", "1"]);
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {text}");
        assert!(text.contains("name"), "{name}: {text}");
        assert!(!text.contains("--run-id"), "{name}: {text}");
    }
    assert_eq!(server.state.requests.load(Ordering::SeqCst), 0);
}

#[test]
fn a_reader_the_shell_forked_before_exec_outlives_the_run() {
    // `skill-lift run … > >(tee log)` or a script that ends in `exec skill-lift …`: the shell
    // forks the reader, then execs skill-lift, which inherits the reader as its child. It is the
    // user's, not an orphan: killing it lost the run's whole output (SIGPIPE, exit 141).
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(&server.base_url(), 2);
    let inner = fixture.command();
    let pid_file = fixture.path("reader.pid");
    let mut outer = std::process::Command::new("bash");
    outer
        .arg("-c")
        .arg("sleep 120 > /dev/null 2>&1 & echo $! > \"$READER_PID_FILE\"; exec \"$@\"")
        .arg("bash")
        .arg(inner.get_program())
        .args(inner.get_args())
        .arg("run")
        .arg(fixture.skill())
        .args(["--runner", "mock", "--out", "results", "-k", "1"])
        .args(["--run-id", "inherited"])
        .env("READER_PID_FILE", &pid_file);
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => outer.env(key, value),
            None => outer.env_remove(key),
        };
    }
    if let Some(dir) = inner.get_current_dir() {
        outer.current_dir(dir);
    }
    let output = outer.output().unwrap();
    let reader: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = std::fs::read_to_string(format!("/proc/{reader}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    });
    let _ = std::process::Command::new("kill")
        .arg(reader.to_string())
        .status();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        alive,
        "skill-lift killed the child it inherited from the shell: {}",
        stderr(&output)
    );
    assert!(!stderr(&output).contains("orphan"), "{}", stderr(&output));
}
