//! Integration tests of process containment, bounded output, agent-reported infrastructure
//! errors, the pre-flight check and the circuit breaker (issue 12, findings 4, 7 and 8): the
//! real `skill-lift` binary driving the fake agent (`tests/fixtures/fake_agent.py`) through the
//! `command` runner kind, in temporary folders.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::cli::{aye_eval_set, binary, stderr, unscoreable_reasons};
use support::mock_openai::{MockBehaviour, MockServer};

const TARGET: &str = "pirate-greeting";

fn fake_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_agent.py")
}

use support::cli::Project as Fixture;

impl Fixture {
    fn new(cases: usize) -> Self {
        let fixture = Self::with_skill(
            TARGET,
            &aye_eval_set(TARGET, cases, |i| format!("case-{i:02}")),
        );
        std::fs::create_dir_all(fixture.path("trials")).unwrap();
        fixture
    }

    /// A `command` profile running the fake agent in `mode` with `args`.
    fn fake_profile(&self, name: &str, mode: &str, args: &[&str], extra: &str) {
        let mut argv = vec![
            "python3".to_string(),
            fake_agent().display().to_string(),
            mode.to_string(),
        ];
        argv.extend(args.iter().map(|a| a.to_string()));
        self.write(
            &format!("runners/{name}.toml"),
            &format!(
                "kind = \"command\"\nmodel = \"fake-model\"\ncommand = {}\noutput_format = \"claude-stream-json\"\nskills_dir = \".claude/skills\"\ntimeout_s = 120\ngrace_s = 0.5\nlinger_s = 0.5\n{extra}",
                serde_json::to_string(&argv).unwrap()
            ),
        );
    }

    /// `skill-lift run` (not waited for).
    fn run_command(&self, runner: &str, run_id: &str, extra: &[&str]) -> Command {
        let mut command = self.k1_run(&format!("skill/{TARGET}"), runner, run_id);
        command.args(extra);
        command
    }

    fn run(&self, runner: &str, run_id: &str, extra: &[&str]) -> Output {
        self.run_command(runner, run_id, extra).output().unwrap()
    }
}

/// Whether `pid` is a living process (zombies count as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Processes (not zombies) whose working folder lies under `root`.
fn processes_under(root: &Path) -> Vec<u32> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd"))
            && cwd.starts_with(&root)
            && alive(pid)
        {
            found.push(pid);
        }
    }
    found
}

/// Finding 7: `kill -9` of skill-lift with 8 agents in flight, each with a child and a `setsid`
/// double-forked grandchild, leaves no process of the run alive after 5 s.
#[test]
fn kill_9_mid_run_leaves_no_process_of_the_run() {
    let fixture = Fixture::new(8);
    let pid_file = fixture.path("pids");
    fixture.fake_profile(
        "tree",
        "tree",
        &[&pid_file.display().to_string()],
        "concurrency = 8\n",
    );
    let mut child = fixture
        .run_command("tree", "killed", &["--no-preflight"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // 8 trials in flight × (agent, child, setsid grandchild).
    let started = Instant::now();
    while pids(&pid_file).len() < 24 {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "only {} pids recorded",
            pids(&pid_file).len()
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "skill-lift exited early"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let recorded = pids(&pid_file);
    assert!(recorded.iter().all(|pid| alive(*pid)));
    // SAFETY: signalling the process this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
    }
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(5));
    let survivors: Vec<u32> = recorded.iter().copied().filter(|p| alive(*p)).collect();
    let under = processes_under(&fixture.path("trials"));
    assert!(
        survivors.is_empty() && under.is_empty(),
        "alive 5 s after kill -9: recorded {survivors:?}, in the trial folders {under:?}"
    );
}

/// Trial end also kills a `setsid` grandchild: after a run whose agents leave one behind and
/// time out, nothing of the run is left.
#[test]
fn timed_out_trials_leave_no_setsid_grandchild() {
    let fixture = Fixture::new(2);
    let pid_file = fixture.path("pids");
    fixture.fake_profile(
        "tree",
        "tree",
        &[&pid_file.display().to_string()],
        "concurrency = 4\n",
    );
    // A short trial timeout.
    let profile = std::fs::read_to_string(fixture.path("runners/tree.toml"))
        .unwrap()
        .replace("timeout_s = 120", "timeout_s = 2");
    fixture.write("runners/tree.toml", &profile);
    let output = fixture.run("tree", "timeouts", &["--no-preflight", "--breaker", "0"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let recorded = pids(&pid_file);
    assert_eq!(recorded.len(), 12, "{recorded:?}");
    std::thread::sleep(Duration::from_millis(500));
    let survivors: Vec<u32> = recorded.iter().copied().filter(|p| alive(*p)).collect();
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
    unscoreable_reasons(&fixture.records("timeouts"), "timeout");
}

/// Ctrl-C while skill-lift waits for a managed model server stops the server too.
#[test]
fn interrupt_while_waiting_for_the_model_server_stops_it() {
    let fixture = Fixture::new(1);
    let pid_file = fixture.path("server.pid");
    // A "server" that never becomes ready (its ready_url is a closed port).
    fixture.write(
        "serve.py",
        &format!(
            "import os, time\nopen({:?}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n",
            pid_file.display().to_string()
        ),
    );
    fixture.write(
        "runners/slow.toml",
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n[server]\ncommand = [\"python3\", \"{}\"]\nready_url = \"http://127.0.0.1:9/v1/models\"\nstartup_timeout_s = 300\n",
            fixture.path("serve.py").display()
        ),
    );
    let mut child = fixture
        .run_command("slow", "interrupted", &[])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while pids(&pid_file).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "server never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let server = pids(&pid_file)[0];
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling the process this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let waited = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(20),
            "skill-lift did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !alive(server),
        "the model server {server} survived the interrupt"
    );
}

/// Peak resident memory of the largest child this test process has waited for, bytes.
fn children_peak_rss() -> u64 {
    // SAFETY: getrusage fills the zeroed struct.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage.ru_maxrss as u64 * 1024
    }
}

/// Finding 8: two agents printing 100 MB on stdout without a newline: skill-lift keeps at most
/// the cap per trial, records the cut, and its memory stays bounded.
#[test]
fn output_flood_is_capped_and_recorded() {
    let fixture = Fixture::new(1);
    fixture.fake_profile(
        "flood",
        "flood",
        &["100000000"],
        "concurrency = 2\nmax_stdout_bytes = 1048576\nmax_transcript_bytes = 2097152\n",
    );
    let output = fixture.run("flood", "flood", &["--no-preflight"]);
    assert!(
        matches!(output.status.code(), Some(0) | Some(1)),
        "{}",
        stderr(&output)
    );
    let records = fixture.records("flood");
    assert_eq!(records.len(), 2);
    for record in &records {
        let cuts: Vec<&str> = record["truncated"]
            .as_array()
            .unwrap_or_else(|| panic!("no `truncated` in {record}"))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            cuts.contains(&"stdout") && cuts.contains(&"stderr"),
            "{record}"
        );
        let size = record["transcript_span"]["length"].as_u64().unwrap();
        assert!(size <= 2 * 1024 * 1024, "transcript of {size} bytes");
    }
    let trials_csv = std::fs::read_to_string(fixture.path("results/flood/trials.csv")).unwrap();
    assert!(trials_csv.lines().next().unwrap().contains("truncated"));
    // skill-lift itself (the largest child this test waited for besides the agents, which hold
    // 1 MiB blocks) stayed far below the 200 MB printed.
    let peak = children_peak_rss();
    assert!(
        peak < 120 * 1024 * 1024,
        "peak RSS {} MiB",
        peak / (1024 * 1024)
    );
}

/// Finding 4: an agent that reports an unreachable API (Claude Code's real wording) is
/// unscoreable with the typed cause and the CLI's own message, never failed; after 4 such
/// trials in a row the circuit breaker stops the run (exit 3), and `--resume` continues.
#[test]
fn agent_reported_api_errors_are_unscoreable_and_trip_the_breaker() {
    let fixture = Fixture::new(10);
    let healed = fixture.path("healed");
    fixture.fake_profile(
        "offline",
        "api-error",
        &[&healed.display().to_string()],
        "concurrency = 1\n",
    );
    let output = fixture.run("offline", "offline", &["--breaker", "4", "--no-preflight"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("circuit breaker"), "{text}");
    assert!(text.contains("api_unreachable 4"), "{text}");
    assert!(text.contains("16 planned trials not run"), "{text}");
    let records = fixture.records("offline");
    assert_eq!(records.len(), 4);
    for reason in unscoreable_reasons(&records, "api_unreachable") {
        assert!(
            reason.starts_with("agent API unreachable: API Error: Can't reach the API server")
                && reason.contains("ENOTFOUND"),
            "{reason}"
        );
    }
    // The API is back: resume runs the 16 trials that were not run.
    std::fs::write(&healed, "").unwrap();
    let output = binary()
        .current_dir(fixture.dir.path())
        .args(["run", "--resume", "results/offline", "--no-preflight"])
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0) | Some(3)),
        "{}",
        stderr(&output)
    );
    let records = fixture.records("offline");
    assert_eq!(records.len(), 20);
    assert_eq!(
        records.iter().filter(|r| r["outcome"] == "pass").count(),
        16
    );
}

/// The circuit breaker stops scheduling at the trial that completes the streak: against a dead
/// port (every trial fails at once) `--breaker 3` records 3 trials with one job, and at most
/// `jobs` − 1 more (those already in flight) with several.
#[test]
fn the_breaker_stops_scheduling_at_the_streak_plus_the_trials_in_flight() {
    let fixture = Fixture::new(10);
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    fixture.write(
        "runners/dead.toml",
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\ntimeout_s = 5\nmax_retries = 0\nconcurrency = 4\n"
        ),
    );
    // With several jobs the breaker also trips once every job slot's trial failed with the
    // same model-API cause (here `api_unreachable`): 2 in a row with 2 jobs.
    for (jobs, least, most) in [("1", 3, 3), ("2", 2, 3), ("4", 3, 6)] {
        let run_id = format!("dead-{jobs}");
        let output = fixture.run(
            "dead",
            &run_id,
            &["--no-preflight", "--breaker", "3", "--jobs", jobs],
        );
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{text}");
        assert!(text.contains("circuit breaker"), "{text}");
        let recorded = fixture.records(&run_id).len();
        assert!(
            (least..=most).contains(&recorded),
            "--jobs {jobs}: {recorded} trials recorded; {text}"
        );
        if jobs == "1" {
            assert!(text.contains("the last 3 trials"), "{text}");
            assert!(text.contains("17 planned trials not run"), "{text}");
        }
    }
}

/// Pre-flight: a missing agent program or an unreachable HTTP runner stops the run before any
/// trial (exit 3, nothing recorded); `--no-preflight` skips the check.
#[test]
fn preflight_stops_before_spending() {
    let fixture = Fixture::new(2);
    fixture.write(
        "runners/missing.toml",
        "kind = \"claude-code\"\nmodel = \"m\"\nprogram = \"/nonexistent/claude\"\n",
    );
    let started = Instant::now();
    let output = fixture.run("missing", "missing", &[]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("pre-flight") && text.contains("/nonexistent/claude"),
        "{text}"
    );
    assert!(fixture.records("missing").is_empty());
    assert!(started.elapsed() < Duration::from_secs(20));

    fixture.write(
        "runners/down.toml",
        "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
    );
    let output = fixture.run("down", "down", &[]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("pre-flight check of `down`") && text.contains("API unreachable"),
        "{text}"
    );
    assert!(fixture.records("down").is_empty());

    // The fake agent (kind `command`): the program exists, so the check passes.
    fixture.fake_profile("fake", "answer", &["Aye! hello"], "");
    let output = fixture.run("fake", "fake", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("pre-flight fake"));

    // Skipped: the missing program is found only by the trials.
    let output = fixture.run("missing", "skipped", &["--no-preflight", "--breaker", "0"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(fixture.records("skipped").len(), 4);
}

/// `Retry-After: 3600` from a rate-limited server costs at most `max_retry_delay_s` per retry,
/// each trial is recorded `rate_limited`, and the circuit breaker stops the run.
#[test]
fn retry_after_an_hour_is_capped_and_the_breaker_stops_the_run() {
    let server = MockServer::start(MockBehaviour {
        fail_first_with_429: usize::MAX,
        retry_after: "3600",
        ..MockBehaviour::default()
    });
    let fixture = Fixture::new(10);
    fixture.write(
        "runners/limited.toml",
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"m\"\ntimeout_s = 60\nconcurrency = 1\nmax_retries = 2\nmax_retry_delay_s = 0.2\n",
            server.base_url()
        ),
    );
    let started = Instant::now();
    let output = fixture.run("limited", "limited", &["--breaker", "3"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let text = stderr(&output);
    assert!(
        text.contains("circuit breaker") && text.contains("rate_limited 3"),
        "{text}"
    );
    let records = fixture.records("limited");
    assert_eq!(records.len(), 3);
    for record in &records {
        assert_eq!(record["infrastructure"], "rate_limited", "{record}");
        for retry in record["retries"].as_array().unwrap() {
            assert!(retry["waited_s"].as_f64().unwrap() <= 0.2, "{record}");
        }
    }
}

/// An agent CLI with a shell (the fake agent speaking Claude Code's stream) that `cat`s the
/// answer key from the staged skill folder finds nothing in either arm (issue 30, item 1):
/// `EVAL.md` and `evals/` are never staged, so the secret in them reaches no transcript.
#[test]
fn an_agent_cli_cannot_cat_the_answer_key() {
    const SECRET_ANSWER: &str = "ANSWER-KEY-SECRET-c4t";
    let fixture = Fixture::new(2);
    fixture.write(
        &format!("skill/{TARGET}/EVAL.md"),
        &format!("# Evals\n\nKey: {SECRET_ANSWER}\n\n## author-case\n\n### Prompt\n\nQuestion 0?\n\n### Expected output\n\n{SECRET_ANSWER}\n"),
    );
    fixture.fake_profile("cat", "cat-eval", &[".claude/skills", TARGET], "");
    let output = fixture.run("cat", "cat", &["--expected-output-match", "contains"]);
    assert!(
        matches!(output.status.code(), Some(0) | Some(1)),
        "{}",
        stderr(&output)
    );
    let records = fixture.records("cat");
    assert_eq!(records.len(), 4, "{}", stderr(&output));
    let run_dir = fixture.path("results/cat");
    for record in &records {
        // Nothing was read: the answer is "Nothing to read." in both arms, so no case passes.
        assert_eq!(record["outcome"], "fail", "{record}");
        let transcript = support::transcripts::of(&run_dir, record);
        let trajectory = &transcript["trajectory"];
        assert_eq!(
            trajectory["final_answer"], "Nothing to read.",
            "{trajectory}"
        );
        for call in trajectory["tool_calls"].as_array().unwrap() {
            assert_eq!(call["is_error"], true, "{call}");
        }
        assert!(!trajectory.to_string().contains(SECRET_ANSWER));
    }
}
