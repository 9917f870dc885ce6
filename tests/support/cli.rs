//! The command line as the integration tests drive it: the real binary with a state folder of
//! its own and nothing inherited that picks a runner or a results folder, and the project folder
//! most tests build (the `pirate-greeting` skill, its golden cases, an `openai-chat` profile).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{Value, json};

/// A state folder for this test process, so runs never write into the real `~/.skill-lift`.
pub fn state_dir() -> &'static Path {
    static STATE: OnceLock<tempfile::TempDir> = OnceLock::new();
    STATE
        .get_or_init(|| tempfile::tempdir().expect("temporary state folder"))
        .path()
}

/// The `skill-lift` binary with `state` as `SKILL_LIFT_HOME`, no runner, results folder or job
/// summary taken from the environment, and `CI=true`.
pub fn binary_in(state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_skill-lift"));
    command
        .env_remove("SKILL_LIFT_RUNNER")
        .env_remove("SKILL_LIFT_RESULTS")
        .env_remove("GITHUB_STEP_SUMMARY")
        // A developer's or CI's collector must not receive the tests' spans.
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env("SKILL_LIFT_HOME", state)
        .env("CI", "true");
    command
}

/// [`binary_in`] this process's [`state_dir`].
pub fn binary() -> Command {
    binary_in(state_dir())
}

/// Write `text` to `root/relative`, creating the folders it needs.
pub fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Every entry below `dir` that is not a folder (recursively, in no particular order).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A tiny OpenAI-compatible server in Python (run as `python3 FILE PORT`): `GET` lists no
/// models, `POST` answers as `model` with the text of the Python expression `text`, in which
/// `system` is the request's first message.
pub fn python_chat_mock(text: &str, model: &str) -> String {
    format!(
        r#"
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args): pass
    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def do_GET(self): self.reply({{"data": []}})
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        system = body["messages"][0]["content"]
        text = {text}
        self.reply({{"model": "{model}", "choices": [{{"message": {{"role": "assistant", "content": text}}, "finish_reason": "stop"}}]}})
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"#
    )
}

/// The reasons of `records` (`trials.jsonl` lines), each asserted to be unscoreable with the
/// infrastructure cause `cause`.
#[track_caller]
pub fn unscoreable_reasons<'a>(records: &'a [Value], cause: &str) -> Vec<&'a str> {
    records
        .iter()
        .map(|record| {
            assert_eq!(record["outcome"], "unscoreable", "{record}");
            assert_eq!(record["infrastructure"], cause, "{record}");
            record["reason"].as_str().unwrap_or_default()
        })
        .collect()
}

/// The arguments of a run on the `mock` profile into `results` with K = 2.
pub const MOCK_K2: [&str; 6] = ["--runner", "mock", "--out", "results", "-k", "2"];

/// The exit code, stdout and stderr of a run, for an assertion's message.
pub fn described(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// What the binary wrote to stdout and to stderr.
pub fn streams(output: &Output) -> (String, String) {
    (stdout(output), stderr(output))
}

/// What the binary wrote to stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What the binary wrote to stdout.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The `pirate-greeting` skill of most tests: its body carries `SKILL-MARKER`, which the mock
/// servers look for to answer as the skill says.
pub const PIRATE_SKILL_MD: &str = "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\nBegin every answer with Aye! SKILL-MARKER\n";

/// The `pirate-greeting` eval set: `cases` cases `case-00`, `case-01`, … asking `Question i?`,
/// each expecting the skill and checked by `^\s*Aye!`.
pub fn pirate_evals(cases: usize) -> Value {
    let evals: Vec<Value> = (0..cases)
        .map(|i| {
            json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                "expected_skill": "pirate-greeting",
                "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]})
        })
        .collect();
    json!({"skill_name": "pirate-greeting", "evals": evals})
}

/// The `pirate-greeting` eval set with outcomes that differ by case, as JSON text: `case-00`,
/// `case-03`, … pass only with the skill (`^\s*Aye!`); `case-01`, … pass in both arms;
/// `case-02`, … fail in both. Known lift 1/3.
pub fn mixed_eval_set(cases: usize) -> String {
    let evals: Vec<Value> = (0..cases)
        .map(|i| {
            let pattern = match i % 3 {
                0 => "^\\s*Aye!",
                1 => "answer",
                _ => "never-present",
            };
            json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                   "checks": [{"type": "regex", "pattern": pattern}]})
        })
        .collect();
    serde_json::to_string_pretty(&json!({"skill_name": "pirate-greeting", "evals": evals})).unwrap()
}

/// An eval set of `skill` whose `cases` cases (ids `id(i)`) ask `Question i?` and are checked
/// by `^\s*Aye!` (the answer the mock servers give when the skill's marker is staged), as JSON.
pub fn aye_eval_set(skill: &str, cases: usize, id: impl Fn(usize) -> String) -> String {
    let evals: Vec<Value> = (0..cases)
        .map(|i| {
            json!({"id": id(i), "prompt": format!("Question {i}?"),
                   "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]})
        })
        .collect();
    json!({"skill_name": skill, "evals": evals}).to_string()
}

/// An `openai-chat` judge profile for `base_url` (model `judge-model`, 30 s) with a `[price]`
/// of 1 USD per million input tokens and 5 per million output tokens.
pub fn priced_judge_profile(base_url: &str) -> String {
    format!(
        "kind = \"openai-chat\"\nbase_url = \"{base_url}\"\nmodel = \"judge-model\"\ntimeout_s = 30\n\n[price]\ninput_usd_per_million_tokens = 1.0\noutput_usd_per_million_tokens = 5.0\n"
    )
}

/// An `openai-chat` runner profile for `base_url` (model `mock-model`, 30 s trials, quick
/// retries) running `concurrency` trials at once, followed by `extra` lines.
pub fn openai_profile(base_url: &str, concurrency: usize, extra: &str) -> String {
    format!(
        "kind = \"openai-chat\"\nbase_url = \"{base_url}\"\nmodel = \"mock-model\"\ntimeout_s = 30\nconcurrency = {concurrency}\nretry_base_delay_s = 0.01\n{extra}"
    )
}

/// A temporary project folder, run with this process's [`state_dir`] or a state folder of its
/// own.
pub struct Project {
    /// The folder (removed when dropped).
    pub dir: tempfile::TempDir,
    /// The project's own state folder, when it has one.
    own_state: Option<tempfile::TempDir>,
}

impl Project {
    /// An empty project, run with this process's [`state_dir`].
    pub fn empty() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            own_state: None,
        }
    }

    /// An empty project holding the skill `skill/<target>` (the `pirate-greeting` skill's
    /// text, [`PIRATE_SKILL_MD`]) with the eval set `evals` (JSON text).
    pub fn with_skill(target: &str, evals: &str) -> Self {
        let project = Self::empty();
        project.write(&format!("skill/{target}/SKILL.md"), PIRATE_SKILL_MD);
        project.write(&format!("skill/{target}/evals/evals.json"), evals);
        project
    }

    /// An empty project with a state folder of its own.
    pub fn with_own_state() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            own_state: Some(tempfile::tempdir().unwrap()),
        }
    }

    /// The state folder its commands use (`SKILL_LIFT_HOME`).
    pub fn state(&self) -> &Path {
        match &self.own_state {
            Some(own) => own.path(),
            None => state_dir(),
        }
    }

    /// A project holding the `pirate-greeting` skill at `skill/pirate-greeting` with `cases`
    /// golden cases (pretty-printed `evals/evals.json`).
    pub fn pirate(cases: usize) -> Self {
        let project = Self::empty();
        project.write("skill/pirate-greeting/SKILL.md", PIRATE_SKILL_MD);
        project.write(
            "skill/pirate-greeting/evals/evals.json",
            &serde_json::to_string_pretty(&pirate_evals(cases)).unwrap(),
        );
        project
    }

    /// `relative` inside the project.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Write `text` to `relative`, creating the folders it needs.
    pub fn write(&self, relative: &str, text: &str) {
        write(self.dir.path(), relative, text);
    }

    /// Write the runner profile `runners/{name}.toml` ([`openai_profile`], 4 trials at once).
    pub fn write_profile(&self, name: &str, base_url: &str, extra: &str) {
        self.write_profile_with(name, base_url, 4, extra);
    }

    /// Write the runner profile `runners/{name}.toml` ([`openai_profile`], `concurrency`
    /// trials at once).
    pub fn write_profile_with(&self, name: &str, base_url: &str, concurrency: usize, extra: &str) {
        self.write(
            &format!("runners/{name}.toml"),
            &openai_profile(base_url, concurrency, extra),
        );
    }

    /// The `pirate-greeting` skill folder.
    pub fn skill(&self) -> PathBuf {
        self.path("skill/pirate-greeting")
    }

    /// [`binary_in`] the project's state folder, run in the project folder.
    pub fn command(&self) -> Command {
        let mut command = binary_in(self.state());
        command.current_dir(self.dir.path());
        command
    }

    /// `run <target> --runner <runner> --out results -k 1 --run-id <run_id> --no-decoys
    /// --workspace-root trials`, in the project (not started).
    pub fn k1_run(&self, target: &str, runner: &str, run_id: &str) -> Command {
        let mut command = self.command();
        command
            .args(["run", target, "--runner", runner, "--out", "results"])
            .args(["-k", "1", "--run-id", run_id, "--no-decoys"])
            .args(["--workspace-root", "trials"]);
        command
    }

    /// The run folder `results/<run>`.
    pub fn run_dir(&self, run: &str) -> PathBuf {
        self.path(&format!("results/{run}"))
    }

    /// `results/<run>/<file>` as JSON.
    pub fn result_json(&self, run: &str, file: &str) -> Value {
        let path = self.path(&format!("results/{run}/{file}"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    /// The records of `results/<run>/trials.jsonl` in order (none when it does not exist).
    pub fn records(&self, run: &str) -> Vec<Value> {
        std::fs::read_to_string(self.path(&format!("results/{run}/trials.jsonl")))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// Assert that the binary exited with `code` and that its stderr says `text` (stderr is shown
/// when either fails).
#[track_caller]
pub fn assert_exit(output: &Output, code: i32, text: &str) {
    let said = stderr(output);
    assert_eq!(output.status.code(), Some(code), "{said}");
    assert!(said.contains(text), "{said}");
}

/// Waits (up to 60 s, polling every 10 ms) until `ready()` holds — `waiting_for` says what for
/// when it never does — then interrupts `child` with SIGINT, as Ctrl-C would, and returns its
/// output after asserting that it ended interrupted (exit 130).
pub fn interrupt_when(
    child: std::process::Child,
    ready: impl Fn() -> bool,
    waiting_for: &str,
) -> Output {
    let started = std::time::Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{waiting_for}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: signalling the child the calling test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let interrupted = child.wait_with_output().unwrap();
    assert_eq!(
        interrupted.status.code(),
        Some(130),
        "{}",
        stderr(&interrupted)
    );
    interrupted
}
