//! Integration tests of `skill-lift monitor` as a user (or a scheduler) runs it: the real binary
//! in a temporary HOME and state folder, a skill registered with `run --monitor`, and scripted
//! mock model servers standing for a model before and after a version change.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::cli::{PIRATE_SKILL_MD, interrupt_when, pirate_evals, stderr, stdout};
use support::mock_openai::{MockBehaviour, MockServer};

/// A temporary world: a HOME, a state folder, a skill and a runner profile.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let world = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(world.path("home")).unwrap();
        world.write("skills/pirate-greeting/SKILL.md", PIRATE_SKILL_MD);
        world.write(
            "skills/pirate-greeting/evals/evals.json",
            &pirate_evals(8).to_string(),
        );
        world
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Point the runner profile `mock` at `server` (the model the endpoint serves changes).
    fn serve(&self, server: &MockServer) {
        self.write(
            "runners/mock.toml",
            &format!(
                "kind = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"x\"\ntimeout_s = 30\nconcurrency = 4\nretry_base_delay_s = 0.01\nskill_mode = \"tools\"\nmax_turns = 4\n\n[price]\ninput_usd_per_million_tokens = 3.0\noutput_usd_per_million_tokens = 15.0\n",
                server.base_url()
            ),
        );
    }

    /// The binary with HOME in the world, no inherited skill-lift variables, state =
    /// world/state, run from a folder other than the world's (as cron would: the registered
    /// suite must not depend on the working folder).
    fn command(&self, cwd: &Path) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_skill-lift"));
        command
            .current_dir(cwd)
            .env("HOME", self.path("home"))
            .env("SKILL_LIFT_HOME", self.path("state"))
            .env("SKILL_LIFT_RESULTS", self.path("results"))
            .env_remove("SKILL_LIFT_HOST")
            .env_remove("SKILL_LIFT_RUNNER")
            .env("CI", "true");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(self.dir.path()).args(args).output().unwrap()
    }

    /// `monitor` started from the home folder, as a scheduler would.
    fn monitor(&self, args: &[&str]) -> Output {
        self.command(&self.path("home"))
            .arg("monitor")
            .args(args)
            .output()
            .unwrap()
    }

    /// Register the skill: a normal run under `model-a` on the current server, with --monitor.
    fn register(&self) {
        self.register_on("generic");
    }

    /// [`World::register`] on `host`.
    fn register_on(&self, host: &str) {
        let output = self.run(&[
            "run",
            "skills/pirate-greeting",
            "--runner",
            "mock",
            "--model",
            "model-a",
            "-k",
            "1",
            "--run-id",
            "baseline-a",
            "--no-decoys",
            "--quiet",
            "--monitor",
            "--host",
            host,
        ]);
        assert_code(&output, 0);
        assert!(
            stderr(&output).contains(&format!("registered for monitoring on host `{host}`")),
            "{}",
            stderr(&output)
        );
    }
}

fn assert_code(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

/// Model A uses the skill well; model B still activates it, but then calls a tool that fails
/// (`read_file` of a file that does not exist) and loses the skill's format: a designed
/// degradation whose cause is the tool description.
fn model_a() -> MockServer {
    MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        served_model: Some("model-a".into()),
        ..MockBehaviour::default()
    })
}

fn model_b(delay: Duration) -> MockServer {
    MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        read_file: Some("templates/greeting.txt".into()),
        with_answer: "Here is the answer.".into(),
        served_model: Some("model-b".into()),
        delay,
        ..MockBehaviour::default()
    })
}

#[test]
fn monitor_reruns_the_monitored_suite_after_a_model_change_and_attributes_the_degradation() {
    let world = World::new();
    let a = model_a();
    world.serve(&a);
    world.register();
    let status = world.run(&["status", "--host", "generic", "--json"]);
    assert_code(&status, 0);
    let status: Value = serde_json::from_str(&stdout(&status)).unwrap();
    let monitoring = &status["monitored"][0]["monitoring"];
    assert_eq!(monitoring["registered_by"], "run");
    assert_eq!(monitoring["suite"]["k"], 1);
    assert_eq!(monitoring["suite"]["no_decoys"], true);
    assert!(
        Path::new(monitoring["suite"]["runner"].as_str().unwrap()).is_absolute(),
        "{monitoring}"
    );

    // No change yet: the monitor identifies the served model (model-a; recorded as the host's
    // first model), finds nothing pending and re-runs nothing.
    let chats = a.requests();
    let output = world.monitor(&["--host", "generic", "--summary"]);
    assert_code(&output, 0);
    assert_eq!(
        stdout(&output).trim(),
        "monitor generic, model model-a: 0 degraded — 0 to rewrite, 0 model-dependent; 0 unchanged; 1 without an earlier model to compare (nothing pending)"
    );
    assert_eq!(a.requests(), chats, "nothing re-run");

    // The endpoint now serves model B. `check` sees it at GET /models, but the trial records
    // since the last bump (what answered) still say model-a, which decides: it reports the
    // disagreement and records nothing. Until a trial or a session is seen under model-b, the
    // change is recorded by hand.
    let b = model_b(Duration::ZERO);
    world.serve(&b);
    let output = world.run(&["check", "--host", "generic", "--runner", "mock"]);
    assert!(
        stdout(&output).contains("names model-b"),
        "{}",
        stdout(&output)
    );
    assert_code(
        &world.run(&["bump", "--host", "generic", "--model", "model-b"]),
        0,
    );
    assert_code(&world.run(&["check", "--host", "generic"]), 1);
    let dry = world.monitor(&["--host", "generic", "--dry-run", "--summary"]);
    assert_code(&dry, 0);
    assert!(
        stdout(&dry).contains("(dry run: 1 suite(s) would run)"),
        "{}",
        stdout(&dry)
    );
    assert_eq!(b.requests(), 0, "a dry run runs nothing");

    let output = world.monitor(&["--host", "generic", "--json"]);
    assert_code(&output, 1);
    assert!(b.requests() > 0);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["ending"], "degraded");
    assert_eq!(report["suites"][0]["status"], "done", "{report}");
    assert_eq!(
        report["rollup"],
        json!({"degraded": 1, "to_rewrite": 1, "rewrite_parts": {"tool description": 1},
               "model_dependent": 0, "unattributed": 0, "volatile": 0, "unchanged": 0,
               "no_comparison": 0, "not_evaluated": 0})
    );
    let asset = &report["assets"][0];
    assert_eq!(asset["asset"], "pirate-greeting");
    assert_eq!(asset["standing"], "degraded");
    assert_eq!(asset["cause"], "tool description");
    assert_eq!(asset["remedy"], "rewrite the tool description");
    let evidence = asset["evidence"].as_str().unwrap();
    assert!(
        evidence.contains("model-a → model-b: 100.0% → 0.0% (-100.0 pp) over 8 cases")
            && evidence.contains("a tool call that returned an error rose from 0% to 100%")
            && evidence.contains("(0 of 8 tool calls errored before, 8 of 16 after)"),
        "{evidence}"
    );
    assert_eq!(
        report["summary"],
        "monitor generic, model model-b: 1 degraded — 1 to rewrite (1 tool description), 0 model-dependent; 0 unchanged (1 suite(s) re-run)"
    );
    // The suite ran as a normal run under the new model, sequential, into the pass folder,
    // and fed the baseline store: `check` is green again.
    let pass_dir = PathBuf::from(report["pass_dir"].as_str().unwrap());
    assert!(pass_dir.starts_with(world.path("results")), "{pass_dir:?}");
    let run_dir = PathBuf::from(report["suites"][0]["run_dir"].as_str().unwrap());
    assert_eq!(
        run_dir,
        pass_dir.join(format!(
            "pirate-greeting-{}",
            report["pass_id"].as_str().unwrap()
        ))
    );
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    assert!(manifest["stopping"].is_object(), "{}", manifest["stopping"]);
    assert!(pass_dir.join("monitor.json").is_file());
    assert!(pass_dir.join("monitor.md").is_file());
    assert_code(&world.run(&["check", "--host", "generic"]), 0);

    // The next tick: nothing pending, nothing re-run; the degradation still stands (exit 1)
    // until the skill is fixed or the model changes again. The table shows the matrix and the
    // cause; the summary is the last line.
    let requests = b.requests();
    let output = world.monitor(&["--host", "generic"]);
    assert_code(&output, 1);
    assert_eq!(b.requests(), requests);
    let text = stdout(&output);
    assert!(
        text.contains("attribution: tool description")
            && text.contains(
                "DEGRADED pirate-greeting — rewrite the tool description (cause: tool description)"
            ),
        "{text}"
    );
    assert!(
        text.trim_end()
            .ends_with("0 model-dependent; 0 unchanged (nothing pending)"),
        "{text}"
    );
}

/// A Claude Code session file: one user turn per prompt, each answered by `model`, the turns
/// a minute apart, the last at `end`.
fn claude_session(model: &str, prompts: &[&str], end: chrono::DateTime<chrono::Utc>) -> String {
    let mut lines = String::new();
    for (i, prompt) in prompts.iter().enumerate() {
        let at = (end - chrono::Duration::minutes((prompts.len() - 1 - i) as i64))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let (user, answer) = (format!("u{i}"), format!("a{i}"));
        lines.push_str(&format!(
            "{}\n{}\n",
            json!({"type": "user", "sessionId": "s", "cwd": "/w", "uuid": user, "timestamp": at,
                   "message": {"role": "user", "content": prompt}}),
            json!({"type": "assistant", "sessionId": "s", "cwd": "/w", "uuid": answer,
                   "parentUuid": user, "timestamp": at,
                   "message": {"id": format!("m{i}"), "model": model, "role": "assistant",
                               "content": [{"type": "text", "text": "Aye!"}]}})
        ));
    }
    lines
}

/// The per-case paired marginal cost of a run, by hand from its `trials.jsonl` and the mock
/// profile's prices (3 and 15 USD per million input and output tokens): per case, the mean
/// with-skill cost − the mean without-skill cost, averaged over the cases priced in both arms.
fn marginal_cost_by_hand(trials: &Path) -> f64 {
    let mut per_case: std::collections::BTreeMap<String, [(f64, f64); 2]> = Default::default();
    for line in std::fs::read_to_string(trials).unwrap().lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        let side = match record["arm"].as_str().unwrap() {
            "with_skill" => 0,
            "without_skill" => 1,
            _ => continue,
        };
        let usage = &record["usage"];
        let cost = (usage["input_tokens"].as_f64().unwrap() * 3.0
            + usage["output_tokens"].as_f64().unwrap() * 15.0)
            / 1e6;
        let slot = &mut per_case
            .entry(record["case_id"].as_str().unwrap().to_string())
            .or_default()[side];
        slot.0 += cost;
        slot.1 += 1.0;
    }
    let differences: Vec<f64> = per_case
        .values()
        .filter(|[with, without]| with.1 > 0.0 && without.1 > 0.0)
        .map(|[with, without]| with.0 / with.1 - without.0 / without.1)
        .collect();
    assert!(!differences.is_empty());
    differences.iter().sum::<f64>() / differences.len() as f64
}

/// The user's scenario of issue 34, end to end on one host with session history: history,
/// runs and a baseline under model A; then the history and the served model switch to B.
/// `check` notices the change with no bump, `monitor` re-runs the monitored suite and flags the
/// designed degradation with its cause, and the value card it refreshes shows the designed net
/// benefit (lift × task frequency × value per success − task frequency × marginal cost), first
/// positive under A, then negative under B.
#[test]
fn a_model_change_seen_in_history_is_noticed_rerun_attributed_and_priced() {
    let world = World::new();
    let now = chrono::Utc::now();
    // Ten days of history under model-a: three turns that match the skill's description and
    // one that does not.
    world.write(
        "home/.claude/projects/-w/week-one.jsonl",
        &claude_session(
            "model-a",
            &[
                "Greet the new users in pirate style",
                "What is the weather?",
            ],
            now - chrono::Duration::days(10),
        ),
    );
    world.write(
        "home/.claude/projects/-w/week-two.jsonl",
        &claude_session(
            "model-a",
            &[
                "Please greet these users in pirate style",
                "Greeting users pirate style again",
            ],
            now - chrono::Duration::days(2),
        ),
    );
    let a = model_a();
    world.serve(&a);
    let cwd = world.dir.path().to_path_buf();
    // No agent CLI on PATH: the configured-model source reads settings files only.
    let run = |args: &[&str]| {
        world
            .command(&cwd)
            .env("PATH", "/usr/bin:/bin")
            .args(args)
            .output()
            .unwrap()
    };
    world.register_on("claude-code");
    let baseline_run = world.path("results/baseline-a");

    // Under model A: the first tick records model-a as the host's model and re-runs nothing;
    // the value card it refreshes has lift +100 pp (100% with, 0% without), 3 matching turns
    // in 10 days of history (9 tasks per 30 days) and the run's marginal cost.
    let output = world.monitor(&[
        "--host",
        "claude-code",
        "--json",
        "--value-per-success",
        "1",
    ]);
    assert_code(&output, 0);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["model"], "model-a", "{report}");
    assert!(a.requests() > 0);
    let card = &report["value"]["cards"][0];
    assert_eq!(card["skill"], "pirate-greeting", "{card}");
    assert_eq!(card["matching_turns"], 3, "{card}");
    let days = card["history_days"].as_f64().unwrap();
    assert!((days - 10.0).abs() < 0.01, "{card}");
    assert_eq!(card["lift"]["estimate"], 1.0, "{card}");
    let cost_a = marginal_cost_by_hand(&baseline_run.join("trials.jsonl"));
    assert!(
        (card["marginal_cost_usd"].as_f64().unwrap() - cost_a).abs() < 1e-12,
        "{card} vs {cost_a}"
    );
    let frequency = 3.0 * 30.0 / days;
    let expected = frequency * (1.0 * 1.0 - cost_a);
    let net = card["net"]["net_usd_per_30d"]["estimate"].as_f64().unwrap();
    assert!((net - expected).abs() < 1e-9, "{net} vs {expected}");
    assert!(net > 0.0);

    // The switch: the endpoint serves model-b and a new session answers under model-b.
    let b = model_b(Duration::ZERO);
    world.serve(&b);
    let session = world.path("home/.claude/projects/-w/after.jsonl");
    world.write(
        "home/.claude/projects/-w/after.jsonl",
        &claude_session(
            "model-b",
            &["Greet users in pirate style"],
            now + chrono::Duration::minutes(1),
        ),
    );
    let output = run(&["check", "--host", "claude-code", "--runner", "mock"]);
    assert_code(&output, 1);
    assert!(
        stdout(&output).contains(&format!(
            "model changed: model-a → model-b (seen in session history {}",
            session.display()
        )),
        "{}",
        stdout(&output)
    );

    // The next tick re-runs the suite under model-b, flags the degradation with its cause
    // and refreshes the card: lift 0 (the skill no longer helps), 4 matching turns (12 tasks
    // per 30 days), so the net value is −12 × the new run's marginal cost.
    let output = world.monitor(&[
        "--host",
        "claude-code",
        "--json",
        "--value-per-success",
        "1",
    ]);
    assert_code(&output, 1);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["model"], "model-b", "{report}");
    assert_eq!(report["rollup"]["degraded"], 1, "{report}");
    assert_eq!(report["assets"][0]["cause"], "tool description", "{report}");
    let pass_dir = PathBuf::from(report["pass_dir"].as_str().unwrap());
    let card = &report["value"]["cards"][0];
    assert_eq!(card["matching_turns"], 4, "{card}");
    assert_eq!(card["lift"]["estimate"], 0.0, "{card}");
    let run_dir = PathBuf::from(report["suites"][0]["run_dir"].as_str().unwrap());
    assert!(run_dir.starts_with(&pass_dir), "{run_dir:?}");
    assert_eq!(
        card["latest_run"].as_str(),
        run_dir.file_name().and_then(|n| n.to_str()),
        "{card}"
    );
    let cost_b = marginal_cost_by_hand(&run_dir.join("trials.jsonl"));
    assert!(
        (card["marginal_cost_usd"].as_f64().unwrap() - cost_b).abs() < 1e-12,
        "{card} vs {cost_b}"
    );
    let days = card["history_days"].as_f64().unwrap();
    let expected = -(4.0 * 30.0 / days) * cost_b;
    let net = card["net"]["net_usd_per_30d"]["estimate"].as_f64().unwrap();
    assert!((net - expected).abs() < 1e-9, "{net} vs {expected}");
    assert!(net < 0.0, "{card}");
    // The dated series holds today's point (a day keeps the latest), negative, driven by the
    // lift; the table shows the card.
    let series = std::fs::read_to_string(report["value"]["series"].as_str().unwrap()).unwrap();
    let points: Vec<Value> = series
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(points.len(), 1, "{series}");
    assert_eq!(points[0]["negative"], true, "{series}");
    assert_eq!(points[0]["driver"], "lift", "{series}");
    assert_eq!(points[0]["run"], card["latest_run"], "{series}");
    let output = world.monitor(&["--host", "claude-code", "--value-per-success", "1"]);
    let text = stdout(&output);
    assert!(
        text.contains("value per skill") && text.contains("pirate-greeting"),
        "{text}"
    );
}

#[test]
fn a_second_pass_is_busy_and_an_interrupted_pass_resumes_its_run() {
    let world = World::new();
    let a = model_a();
    world.serve(&a);
    world.register();
    let b = model_b(Duration::from_millis(150));
    world.serve(&b);
    assert_code(
        &world.run(&["bump", "--host", "generic", "--model", "model-b"]),
        0,
    );

    // Another pass holds the host's lock: this one does nothing and exits 75.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(world.path("state/monitor.generic.json.lock"))
        .unwrap();
    lock.lock().unwrap();
    let output = world.monitor(&["--host", "generic"]);
    assert_code(&output, 75);
    assert!(
        stderr(&output).contains("another `skill-lift monitor` pass for host `generic`"),
        "{}",
        stderr(&output)
    );
    assert_eq!(b.requests(), 0);
    drop(lock);

    // Interrupted while its suite runs (Ctrl-C, or a scheduler's stop): exit 130.
    let child = world
        .command(&world.path("home"))
        .args(["monitor", "--host", "generic", "--no-sequential"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let trials = || {
        glob_trials(&world.path("results"))
            .is_some_and(|path| std::fs::read_to_string(path).is_ok_and(|t| t.lines().count() >= 2))
    };
    interrupt_when(
        child,
        trials,
        "the monitored suite's run never recorded a trial",
    );
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(world.path("state/monitor.generic.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["suites"]["pirate-greeting"]["status"], "interrupted");
    assert!(record["finished_at"].is_null());
    let recorded = std::fs::read_to_string(glob_trials(&world.path("results")).unwrap())
        .unwrap()
        .lines()
        .count();
    assert!(recorded < 16, "the run was cut short ({recorded} trials)");

    // The next pass continues the same pass folder and the same run: only its missing trials.
    let output = world.monitor(&["--host", "generic", "--json"]);
    assert_code(&output, 1);
    assert!(
        stderr(&output).contains("continuing pass"),
        "{}",
        stderr(&output)
    );
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["resumed"], true);
    assert_eq!(report["suites"][0]["status"], "done");
    assert_eq!(report["suites"][0]["resumed"], true);
    assert_eq!(report["rollup"]["degraded"], 1);
    let trials_path = glob_trials(&world.path("results")).unwrap();
    let ids: Vec<String> = std::fs::read_to_string(trials_path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["trial_id"].to_string())
        .collect();
    let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), 16, "every trial once: {ids:?}");
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(world.path("state/monitor.generic.json")).unwrap(),
    )
    .unwrap();
    assert!(record["finished_at"].is_string(), "{record}");
}

/// The monitored suite's `trials.jsonl` in the (only) pass folder under `results`.
fn glob_trials(results: &Path) -> Option<PathBuf> {
    std::fs::read_dir(results)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|pass| std::fs::read_dir(pass.path()).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|run| run.path().join("trials.jsonl"))
        .find(|path| path.is_file())
}
