//! Integration tests of the second hardening round (issue 31), tried as an attacker would: a
//! key echoed by every server error, searched for on stdout, stderr and in every file written;
//! tampered run folders; a server streaming an endless body; undecodable session history; a
//! symbolic link out of a session folder; files a user added to the installed skill; deeply
//! nested frontmatter. The real `skill-lift` binary against loopback servers, in temporary
//! folders.
#![allow(clippy::disallowed_methods)]
// tests write their fixtures directly, not through src/disk/

// Test diagnostics go to the test harness, not through skill-lift's terminal writer.
#![allow(clippy::disallowed_macros)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use support::cli::{PIRATE_SKILL_MD, pirate_evals, stderr};
use support::mock_openai::{MockBehaviour, MockServer};
use support::serve::serve;

/// The profile's key: no well-known shape (only its registered value can redact it).
const KEY: &str = "sklcanaryPlain-q8w7e6r5t4y3u2i1";
/// What the key contains (searched for case-insensitively).
const CANARY: &str = "sklcanary";

fn terminal(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(output)
    )
}

// A skill with `cases` golden cases and runner profiles, in a temporary folder.
use support::cli::Project as Fixture;

impl Fixture {
    fn new(cases: usize) -> Self {
        let fixture = Self::with_own_state();
        fixture.write("skill/pirate-greeting/SKILL.md", PIRATE_SKILL_MD);
        fixture.write(
            "skill/pirate-greeting/evals/evals.json",
            &pirate_evals(cases).to_string(),
        );
        fixture
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command()
            .arg("run")
            .arg(self.skill())
            .args(["--out", "results"])
            .args(args)
            .output()
            .unwrap()
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Every file under `dirs` holding the key's canary, as `path: excerpt`.
fn files_with_the_key(dirs: &[&Path]) -> Vec<String> {
    let mut found = Vec::new();
    for dir in dirs {
        for file in walk(dir) {
            let text =
                String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).to_lowercase();
            if let Some(at) = text.find(CANARY) {
                let start = at.saturating_sub(80);
                found.push(format!(
                    "{}: …{}…",
                    file.display(),
                    text.get(start..(at + 40).min(text.len())).unwrap_or("")
                ));
            }
        }
    }
    found
}

/// The error body every answer of the hostile server carries: the request's `Authorization`
/// header echoed, and the raw key again (in the middle of a long body, past 300 characters, so
/// a message cut there would split it).
fn echo_body(headers: &HeaderMap) -> String {
    let presented = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let raw = presented.trim_start_matches("Bearer ");
    format!(
        "{{\"error\": {{\"message\": \"invalid credentials; your request carried Authorization: {presented}\", \"padding\": \"{}\", \"key\": \"{raw}\"}}}}",
        "x".repeat(250)
    )
}

async fn unauthorized(headers: HeaderMap) -> Response {
    (StatusCode::UNAUTHORIZED, echo_body(&headers)).into_response()
}

/// A server that answers every request (model list, chat completion) with HTTP 401 echoing the
/// credentials it was sent.
fn hostile_server() -> support::serve::Served {
    serve(
        Router::new()
            .route("/v1/models", get(unauthorized))
            .route("/v1/chat/completions", post(unauthorized)),
    )
}

#[test]
fn a_key_echoed_by_every_error_body_reaches_no_terminal_and_no_file() {
    let hostile = hostile_server();
    let good = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(3);
    let hostile_url = format!("http://{}/v1", hostile.address);
    let key_env = "api_key_env = \"SKL_ATTACK_KEY\"\nmax_retries = 0\n";
    fixture.write_profile_with("hostile", &hostile_url, 2, key_env);
    fixture.write_profile_with("judge", &hostile_url, 2, key_env);
    fixture.write_profile_with("good", &good.base_url(), 2, "");
    let summary = fixture.path("step-summary.md");
    let with_key = |mut command: Command| {
        command
            .env("SKL_ATTACK_KEY", KEY)
            .env("GITHUB_STEP_SUMMARY", &summary);
        command.output().unwrap()
    };
    let mut outputs: Vec<(&str, Output)> = Vec::new();
    // The pre-flight check sees the 401 first.
    let mut command = fixture.command();
    command
        .arg("run")
        .arg(fixture.skill())
        .args(["--out", "results", "--runner", "hostile", "--run-id", "pre"]);
    outputs.push(("pre-flight", with_key(command)));
    // Without it, every trial fails and the circuit breaker stops the run with the last error.
    let mut command = fixture.command();
    command.arg("run").arg(fixture.skill()).args([
        "--out",
        "results",
        "--runner",
        "hostile",
        "--no-preflight",
        "--breaker",
        "2",
        "--jobs",
        "1",
        "--run-id",
        "breaker",
    ]);
    outputs.push(("runner breaker", with_key(command)));
    // A matrix: once per cell.
    let mut command = fixture.command();
    command.arg("run").arg(fixture.skill()).args([
        "--out",
        "results",
        "--runner",
        "hostile",
        "--model",
        "m1",
        "--model",
        "m2",
        "--no-preflight",
        "--breaker",
        "2",
        "--jobs",
        "1",
        "--run-id",
        "matrix",
    ]);
    outputs.push(("matrix", with_key(command)));
    // The judge's 401 (the agent answers well).
    let mut command = fixture.command();
    command.arg("run").arg(fixture.skill()).args([
        "--out",
        "results",
        "--runner",
        "good",
        "--judge",
        "judge",
        "--judge-metrics",
        "goal_accuracy",
        "--no-judge-cache",
        "--no-preflight",
        "--breaker",
        "2",
        "--jobs",
        "1",
        "--run-id",
        "judged",
    ]);
    outputs.push(("judge breaker", with_key(command)));
    // calibrate stopped by the breaker says why.
    let mut command = fixture.command();
    command.arg("calibrate").arg(fixture.skill()).args([
        "--out",
        "results",
        "--runner",
        "hostile",
        "--no-preflight",
        "--breaker",
        "2",
        "--jobs",
        "1",
        "--repeats",
        "2",
        "--run-id",
        "cal",
    ]);
    outputs.push(("calibrate", with_key(command)));
    // Re-rendering and regrading the recorded failures.
    let mut command = fixture.command();
    command.args(["report", "results/breaker", "--out", "report-out"]);
    outputs.push(("report", with_key(command)));
    let mut command = fixture.command();
    command.args([
        "regrade",
        "results/judged",
        "--out",
        "results/regraded",
        "--judge",
        "judge",
        "--judge-metrics",
        "goal_accuracy",
        "--no-judge-cache",
    ]);
    outputs.push(("regrade", with_key(command)));

    let mut shown_redacted = 0;
    for (what, output) in &outputs {
        let text = terminal(output);
        assert!(
            !text.to_lowercase().contains(CANARY),
            "{what}: the key on the terminal:\n{text}"
        );
        shown_redacted += text.matches("[REDACTED:$SKL_ATTACK_KEY]").count();
    }
    // The echoed bodies were really shown (redacted), so the test saw what an attacker would.
    assert!(shown_redacted > 0, "no echoed body reached the terminal");
    let breaker = terminal(&outputs[1].1);
    assert!(breaker.contains("circuit breaker"), "{breaker}");
    let calibrate = stderr(&outputs[4].1);
    assert!(
        calibrate.contains("were not recorded because the run stopped early (circuit breaker"),
        "{calibrate}"
    );
    let leaks = files_with_the_key(&[fixture.dir.path(), fixture.state()]);
    assert!(leaks.is_empty(), "the key on disk:\n{}", leaks.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Tampered run folders

/// A finished two-case run `id` against the mock server.
fn finished_run(fixture: &Fixture, id: &str, extra: &[&str]) -> PathBuf {
    let output = fixture.run(&[&["--runner", "good", "--run-id", id], extra].concat());
    let dir = fixture.path(&format!("results/{id}"));
    assert!(dir.join("trials.jsonl").is_file(), "{}", terminal(&output));
    dir
}

/// Rename case `case-00` to `to` in a run folder's manifest and records.
fn tamper_case_id(run_dir: &Path, to: &str) {
    let manifest_path = run_dir.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    for id in manifest["eval_set"]["case_ids"].as_array_mut().unwrap() {
        if id == "case-00" {
            *id = json!(to);
        }
    }
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let trials = run_dir.join("trials.jsonl");
    let text: String = std::fs::read_to_string(&trials)
        .unwrap()
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            if record["case_id"] == "case-00" {
                record["case_id"] = json!(to);
                let trial_id = record["trial_id"]
                    .as_str()
                    .unwrap()
                    .replacen("case-00", to, 1);
                record["trial_id"] = json!(trial_id);
            }
            format!("{record}\n")
        })
        .collect();
    std::fs::write(trials, text).unwrap();
}

/// Every path under `root` whose name holds `needle`.
fn named(root: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.file_name().unwrap().to_string_lossy().contains(needle) {
                found.push(path.clone());
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    found
}

#[test]
fn tampered_run_folders_write_nothing_outside_and_exit_2_naming_the_field() {
    let server = MockServer::start(MockBehaviour::default());
    let fixture = Fixture::new(2);
    fixture.write_profile_with("good", &server.base_url(), 2, "");
    let clean = finished_run(&fixture, "clean", &[]);
    let tampered = finished_run(&fixture, "tampered", &[]);
    let shard = finished_run(&fixture, "shard-1", &["--shard", "1/2"]);
    finished_run(&fixture, "shard-2", &["--shard", "2/2"]);
    let escape = "../../../escaped-by-case-id";
    for dir in [&tampered, &shard] {
        tamper_case_id(dir, escape);
    }
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("report", vec!["report".into(), "results/tampered".into()]),
        (
            "report --out",
            vec![
                "report".into(),
                "results/tampered".into(),
                "--out".into(),
                "out/report".into(),
            ],
        ),
        (
            "merge",
            vec![
                "merge".into(),
                "results/shard-1".into(),
                "results/shard-2".into(),
                "--out".into(),
                "out/merged".into(),
            ],
        ),
        (
            "regrade",
            vec![
                "regrade".into(),
                "results/tampered".into(),
                "--out".into(),
                "out/regraded".into(),
            ],
        ),
        (
            "compare",
            vec![
                "compare".into(),
                "results/tampered".into(),
                "results/clean".into(),
                "--out".into(),
                "out/compare".into(),
            ],
        ),
    ];
    for (what, args) in &cases {
        let output = fixture.command().args(args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{what}: {}",
            terminal(&output)
        );
        assert!(
            stderr(&output).contains("eval_set.case_ids[0]"),
            "{what} does not name the field: {}",
            stderr(&output)
        );
    }
    // A tampered run id (compare names its default folder after the run ids).
    let manifest_path = clean.join("manifest.json");
    let original = std::fs::read_to_string(&manifest_path).unwrap();
    let mut manifest: Value = serde_json::from_str(&original).unwrap();
    manifest["run_id"] = json!("../../../escaped-by-run-id");
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let output = fixture
        .command()
        .args(["compare", "results/clean", "results/clean"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", terminal(&output));
    assert!(stderr(&output).contains("run_id"), "{}", stderr(&output));
    std::fs::write(&manifest_path, &original).unwrap();

    // calibrate --resume of a plan whose template names such a case.
    let output = fixture
        .command()
        .arg("calibrate")
        .arg(fixture.skill())
        .args([
            "--out",
            "results",
            "--runner",
            "good",
            "--repeats",
            "1",
            "--run-id",
            "cal",
        ])
        .output()
        .unwrap();
    assert!(
        fixture.path("results/cal/calibration.json").is_file(),
        "{}",
        terminal(&output)
    );
    let plan_path = fixture.path("results/cal/calibration.json");
    let mut plan: Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    plan["template"]["eval_set"]["case_ids"][0] = json!(escape);
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let output = fixture
        .command()
        .args(["calibrate", "--resume", "results/cal"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", terminal(&output));
    assert!(
        stderr(&output).contains("eval_set.case_ids[0]"),
        "{}",
        stderr(&output)
    );

    // A matrix folder whose cell's run folder was tampered with.
    let output = fixture.run(&[
        "--runner", "good", "--model", "m1", "--model", "m2", "--run-id", "matrix",
    ]);
    let cells = fixture.path("results/matrix/cells");
    let cell = std::fs::read_dir(&cells)
        .unwrap_or_else(|_| panic!("no matrix cells: {}", terminal(&output)))
        .flatten()
        .next()
        .unwrap()
        .path();
    tamper_case_id(&cell, escape);
    let output = fixture
        .command()
        .args(["report", "results/matrix"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", terminal(&output));
    assert!(
        stderr(&output).contains("eval_set.case_ids[0]"),
        "{}",
        stderr(&output)
    );

    // Nothing was written outside: no file or folder named after the escape, anywhere above
    // the run folders.
    let root = fixture.dir.path().parent().unwrap();
    let escaped = named(root, "escaped-by");
    assert!(escaped.is_empty(), "written outside: {escaped:?}");
}

// ---------------------------------------------------------------------------------------------
// Hostile bodies

/// Peak resident memory of the largest child process waited for so far, bytes.
fn children_peak_memory() -> u64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct given.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as u64 * 1024
}

/// An answer whose body never ends: `chunk` bytes of JSON-looking text every `pause`, forever.
fn endless(chunk: usize, pause: Duration) -> Response {
    let piece = axum::body::Bytes::from(format!("{{\"choices\": [\"{}", "a".repeat(chunk)));
    let stream = futures::stream::unfold(piece, move |piece| async move {
        tokio::time::sleep(pause).await;
        Some((Ok::<_, std::io::Error>(piece.clone()), piece))
    });
    (
        [("content-type", "application/json")],
        axum::body::Body::from_stream(stream),
    )
        .into_response()
}

/// An answer of 40 MiB, larger than the default cap (32 MiB), with its length announced.
async fn huge() -> Response {
    let body = format!(
        "{{\"choices\": [{{\"message\": {{\"role\": \"assistant\", \"content\": \"{}\"}}}}]}}",
        "a".repeat(40 << 20)
    );
    ([("content-type", "application/json")], body).into_response()
}

#[test]
fn endless_and_huge_bodies_end_the_trial_in_time_and_bounded_memory() {
    let models = || async { Json(json!({"data": []})) };
    let server = serve(
        Router::new()
            .route(
                "/trickle/v1/chat/completions",
                post(|| async { endless(1024, Duration::from_millis(10)) }),
            )
            .route(
                "/flood/v1/chat/completions",
                post(|| async { endless(64 * 1024, Duration::ZERO) }),
            )
            .route("/huge/v1/chat/completions", post(huge))
            .route("/trickle/v1/models", get(models))
            .route("/flood/v1/models", get(models))
            .route("/huge/v1/models", get(models)),
    );
    let fixture = Fixture::new(1);
    for name in ["trickle", "flood", "huge"] {
        fixture.write(
            &format!("runners/{name}.toml"),
            &format!(
                "kind = \"openai-chat\"\nbase_url = \"http://{}/{name}/v1\"\nmodel = \"m\"\ntimeout_s = 4\nmax_retries = 0\n",
                server.address
            ),
        );
    }
    let mut report = Vec::new();
    for (name, cause) in [
        // A body still streaming when the trial timeout ends it: the trial's timeout.
        ("trickle", Some("timeout")),
        ("flood", Some("response_too_large")),
        ("huge", Some("response_too_large")),
    ] {
        let started = Instant::now();
        let output = fixture.run(&[
            "--runner",
            name,
            "--run-id",
            name,
            "--breaker",
            "0",
            "-k",
            "1",
        ]);
        let took = started.elapsed();
        // One case, two arms, run at once: each trial ends by its 4 s timeout (+ 5 s).
        assert!(
            took < Duration::from_secs(4 + 5),
            "{name}: took {took:?}: {}",
            terminal(&output)
        );
        let peak = children_peak_memory();
        assert!(peak < 100 << 20, "{name}: peak memory {} MiB", peak >> 20);
        let records =
            std::fs::read_to_string(fixture.path(&format!("results/{name}/trials.jsonl")))
                .unwrap_or_else(|_| panic!("{name}: {}", terminal(&output)));
        assert_eq!(records.lines().count(), 2, "{name}: {records}");
        for line in records.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            assert_eq!(record["outcome"], "unscoreable", "{name}: {record}");
            if let Some(cause) = cause {
                assert_eq!(record["infrastructure"], cause, "{name}: {record}");
            }
        }
        report.push(format!(
            "{name}: {:.1} s, children's peak {} MiB",
            took.as_secs_f64(),
            peak >> 20
        ));
    }
    eprintln!("hostile bodies (timeout_s 4): {}", report.join("; "));
}

// ---------------------------------------------------------------------------------------------
// History, install, frontmatter

const SESSION_HEAD: &str = r#"{"parentUuid":null,"cwd":"CWD","sessionId":"s-1","type":"user","message":{"role":"user","content":"Summarise notes.txt and link.txt please"},"uuid":"u1","timestamp":"2026-03-02T10:00:00.000Z"}
{"parentUuid":"u1","cwd":"CWD","sessionId":"s-1","type":"assistant","message":{"id":"msg_1","model":"m","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"notes"}},{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"CWD/link.txt"}}],"usage":{"input_tokens":10,"output_tokens":20}},"uuid":"u2","timestamp":"2026-03-02T10:00:02.000Z"}
"#;
const SESSION_TAIL: &str = r#"{"parentUuid":"u2","cwd":"CWD","sessionId":"s-1","type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"uuid":"u3","timestamp":"2026-03-02T10:00:03.000Z"}
{"parentUuid":"u3","cwd":"CWD","sessionId":"s-1","type":"user","message":{"role":"user","content":"thanks, perfect"},"uuid":"u4","timestamp":"2026-03-02T10:01:00.000Z"}
"#;

#[test]
fn history_readers_skip_undecodable_lines_and_links_out_of_the_session() {
    let fixture = Fixture::new(1);
    let home = fixture.path("home");
    let project = fixture.path("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "notes\n").unwrap();
    std::fs::write(fixture.path("private.txt"), "private data\n").unwrap();
    std::os::unix::fs::symlink(fixture.path("private.txt"), project.join("link.txt")).unwrap();
    let cwd = project.to_string_lossy();
    let mut bytes = SESSION_HEAD.replace("CWD", &cwd).into_bytes();
    bytes.extend_from_slice(b"{\"type\":\"user\",\"message\":\"\xff\xfe broken\"}\n");
    bytes.extend_from_slice(SESSION_TAIL.replace("CWD", &cwd).as_bytes());
    let session = home.join(".claude/projects/-project/s-1.jsonl");
    std::fs::create_dir_all(session.parent().unwrap()).unwrap();
    std::fs::write(&session, &bytes).unwrap();
    // A second, wholly undecodable Gemini chat: skipped as a file.
    let mined = fixture.path("mined");
    let output = fixture
        .command()
        .args(["golden", "mine", "--host", "claude-code", "--include-files"])
        .arg("--history-root")
        .arg(&home)
        .arg("--out")
        .arg(mined.join("evals.json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", terminal(&output));
    let text = stderr(&output);
    assert!(text.contains("s-1.jsonl:3: not valid UTF-8"), "{text}");
    assert!(
        text.contains("symbolic link leads out of the session folder"),
        "{text}"
    );
    for file in walk(&mined) {
        let content = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!content.contains("private data"), "{}", file.display());
    }
    let output = fixture
        .command()
        .args(["usage", "--host", "claude-code"])
        .arg("--history-root")
        .arg(&home)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", terminal(&output));
    assert!(
        stderr(&output).contains("s-1.jsonl:3: not valid UTF-8"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn reinstall_refuses_to_delete_files_the_user_added() {
    let fixture = Fixture::new(1);
    let home = fixture.path("home");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    let install = |extra: &[&str]| {
        fixture
            .command()
            .env("HOME", &home)
            .args(["install", "--host", "claude-code"])
            .args(extra)
            .output()
            .unwrap()
    };
    let output = install(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", terminal(&output));
    let installed = home.join(".claude/skills/skill-lift");
    assert!(
        installed.join("SKILL.md").is_file(),
        "{}",
        terminal(&output)
    );
    std::fs::write(installed.join("my-notes.md"), "mine").unwrap();
    let output = install(&[]);
    assert_ne!(output.status.code(), Some(0), "{}", terminal(&output));
    assert!(
        terminal(&output).contains("my-notes.md"),
        "{}",
        terminal(&output)
    );
    assert_eq!(
        std::fs::read_to_string(installed.join("my-notes.md")).unwrap(),
        "mine"
    );
}

#[test]
fn deeply_nested_frontmatter_fails_fast_naming_the_file() {
    let fixture = Fixture::new(1);
    let nested: String = (0..400)
        .map(|depth| format!("{}a:\n", " ".repeat(depth)))
        .collect();
    let flow = "{a: ".repeat(10_000);
    for (name, yaml) in [("block", nested), ("flow", flow)] {
        fixture.write(
            &format!("{name}/SKILL.md"),
            &format!("---\nname: {name}\ndescription: x\nmetadata:\n{yaml}\n---\nbody\n"),
        );
        let started = Instant::now();
        let output = fixture
            .command()
            .arg("lint")
            .arg(fixture.path(name))
            .output()
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{name}: {:?}",
            started.elapsed()
        );
        assert_ne!(output.status.code(), Some(0), "{}", terminal(&output));
        let text = terminal(&output);
        assert!(text.contains("SKILL.md"), "{name}: {text}");
        assert!(text.contains("nests deeper than"), "{name}: {text}");
    }
}
