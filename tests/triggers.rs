//! Integration tests of `skill-lift triggers` (and `vet`): the real binary against a routing mock
//! server whose activation pattern is designed, so precision and recall are known exactly.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::cli::described;
use support::mock_router::{RouterServer, Routes};

fn binary(state: &Path) -> Command {
    let mut command = support::cli::binary_in(state);
    command.env_remove("SKILL_LIFT_HOST");
    command
}

/// The designed set: (query, should_trigger, expected_skill, activations per attempt).
/// K = 3. Positives: two always-triggered, one 2-of-3 (triggered at threshold 0.5), one 1-of-3
/// with `api-debug` instead (missed), one `log-triage` every time (missed). Negatives: a near
/// miss triggered 2 of 3 (false positive), a correct decoy, nothing at all, a wrong decoy
/// (misrouted), and a 1-of-3 (not triggered). TP 3, FN 2, FP 1, TN 4: precision 3/4, recall 3/5.
/// One designed query: text, should_trigger, expected_skill, the skill activated per attempt.
type Designed = (
    &'static str,
    bool,
    Option<&'static str>,
    [Option<&'static str>; 3],
);

fn designed() -> Vec<Designed> {
    let t = Some("refund-desk");
    vec![
        (
            "Refund my order 1234, it arrived broken.",
            true,
            None,
            [t, t, t],
        ),
        ("I was charged twice for one order.", true, None, [t, t, t]),
        (
            "My package never arrived; I want my money back.",
            true,
            None,
            [t, t, None],
        ),
        (
            "Cancel my order and return the payment.",
            true,
            None,
            [t, Some("api-debug"), Some("api-debug")],
        ),
        (
            "Where is the refund for invoice 77?",
            true,
            None,
            [Some("log-triage"); 3],
        ),
        (
            "Explain what a refund policy is, in general terms.",
            false,
            None,
            [t, t, None],
        ),
        (
            "The payments API returns HTTP 500; debug it.",
            false,
            Some("api-debug"),
            [Some("api-debug"); 3],
        ),
        ("What is the capital of France?", false, None, [None; 3]),
        (
            "Plan the next release of the app.",
            false,
            Some("release-planner"),
            [Some("config-validator"); 3],
        ),
        (
            "Summarize this paragraph about bugs.",
            false,
            None,
            [None, None, t],
        ),
    ]
}

use support::cli::Project;

impl Project {
    fn new(base_url: &str) -> Self {
        let project = Self::empty();
        project.write(
            "skill/refund-desk/SKILL.md",
            "---\nname: refund-desk\ndescription: Use when a customer asks for a refund, a chargeback or money back for an order.\n---\nApologise, then open a refund ticket.\n",
        );
        let queries: Vec<Value> = designed()
            .iter()
            .enumerate()
            .map(|(i, (query, should, expected, _))| {
                json!({"id": format!("t{:02}", i + 1), "query": query, "should_trigger": should,
                       "expected_skill": expected})
            })
            .collect();
        project.write(
            "skill/refund-desk/evals/triggers.json",
            &serde_json::to_string_pretty(&json!({"skill": "refund-desk", "queries": queries}))
                .unwrap(),
        );
        // `inject` on purpose: triggers must switch to `tools` mode.
        project.write(
            "runners/router.toml",
            &format!(
                "kind = \"openai-chat\"\nbase_url = \"{base_url}\"\nmodel = \"router-model\"\nskill_mode = \"inject\"\ntimeout_s = 30\nconcurrency = 4\nmax_retries = 1\nretry_base_delay_s = 0.01\nmax_turns = 3\n"
            ),
        );
        project
    }

    /// `triggers` on the skill with the router profile into `results/` (run id `t1` unless
    /// `extra` gives one).
    fn triggers(&self, extra: &[&str]) -> Output {
        let mut command = binary(&self.path("state"));
        command
            .current_dir(self.dir.path())
            .args([
                "triggers",
                "skill/refund-desk",
                "--runner",
                "runners/router.toml",
            ])
            .args(["--out", "results"]);
        if !extra.contains(&"--run-id") {
            command.args(["--run-id", "t1"]);
        }
        command.args(extra).output().unwrap()
    }
}

fn routes() -> Routes {
    designed()
        .into_iter()
        .map(|(query, _, _, cycle)| {
            (
                query.to_string(),
                cycle.iter().map(|s| s.map(str::to_string)).collect(),
            )
        })
        .collect()
}

#[test]
fn triggers_reports_the_designed_precision_and_recall_exactly() {
    let server = RouterServer::start(routes(), false);
    let project = Project::new(&server.base_url());
    let output = project.triggers(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`tools` mode"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("precision 75.0% · recall 60.0% · F1 66.7%"),
        "{stdout}"
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(project.path("results/t1/triggers.json")).unwrap())
            .unwrap();
    assert_eq!(
        report["counts"],
        json!({"true_positive": 3, "false_positive": 1, "false_negative": 2, "true_negative": 4, "undecided": 0})
    );
    assert_eq!(report["precision"]["value"], json!(0.75));
    assert_eq!(report["precision"]["successes"], json!(3));
    assert_eq!(report["precision"]["trials"], json!(4));
    assert_eq!(report["recall"]["value"], json!(0.6));
    assert!((report["f1"]["value"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    // Wilson 95% of 3/4: [0.3006, 0.9544].
    let low = report["precision"]["interval"]["low"].as_f64().unwrap();
    let high = report["precision"]["interval"]["high"].as_f64().unwrap();
    assert!(
        (low - 0.30064).abs() < 1e-4 && (high - 0.95440).abs() < 1e-4,
        "{low} {high}"
    );
    // skill-creator's result shape per query.
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 10);
    assert_eq!(results[2]["triggers"], json!(2));
    assert_eq!(results[2]["runs"], json!(3));
    assert_eq!(results[2]["pass"], json!(true));
    assert_eq!(report["summary"]["passed"], json!(7));
    assert_eq!(report["summary"]["failed"], json!(3));
    // Confusions: which skill was activated instead.
    let confusions = report["confusions"].as_array().unwrap();
    let by_id = |id: &str| {
        confusions
            .iter()
            .find(|c| c["query_id"] == id)
            .unwrap_or_else(|| panic!("no confusion for {id}: {confusions:?}"))
    };
    assert_eq!(by_id("t04")["kind"], "missed");
    assert_eq!(by_id("t04")["instead"], json!({"api-debug": 2}));
    assert_eq!(by_id("t05")["instead"], json!({"log-triage": 3}));
    assert_eq!(by_id("t06")["kind"], "false_trigger");
    assert_eq!(by_id("t09")["kind"], "misrouted");
    assert_eq!(by_id("t09")["instead"], json!({"config-validator": 3}));
    assert_eq!(confusions.len(), 4);
    assert_eq!(report["setup"]["runner"]["skill_mode"], "tools");
    assert_eq!(
        report["setup"]["decoys"],
        json!([
            "api-debug",
            "config-validator",
            "log-triage",
            "release-planner"
        ])
    );
    assert_eq!(report["attempts"]["recorded"], json!(30));
    // Every attempt recorded, with its transcript.
    let attempts = std::fs::read_to_string(project.path("results/t1/attempts.jsonl")).unwrap();
    assert_eq!(attempts.lines().count(), 30);
    for line in attempts.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        let transcript = record["transcript"].as_str().unwrap();
        assert!(project.path("results/t1").join(transcript).is_file());
    }
    // Tools mode lists the skills in the balanced order of `run`: per query, the target takes a
    // different position of the five in each of the K = 3 attempts, and each attempt records
    // its order.
    let mut positions: std::collections::BTreeMap<String, std::collections::BTreeSet<usize>> =
        Default::default();
    for line in attempts.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        let order: Vec<&str> = record["skill_order"]
            .as_array()
            .unwrap_or_else(|| panic!("no skill_order: {record}"))
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            [
                "api-debug",
                "config-validator",
                "log-triage",
                "refund-desk",
                "release-planner"
            ],
            "{record}"
        );
        let at = order.iter().position(|n| *n == "refund-desk").unwrap();
        positions
            .entry(record["query_id"].as_str().unwrap().to_string())
            .or_default()
            .insert(at);
    }
    assert_eq!(positions.len(), 10);
    for (query, at) in &positions {
        assert_eq!(at.len(), 3, "{query}: {at:?}");
    }
    let markdown = std::fs::read_to_string(project.path("results/t1/triggers.md")).unwrap();
    assert!(markdown.contains("`api-debug` 2/3"), "{markdown}");
    // 30 attempts; each triggering one takes two requests.
    assert!(server.requests() >= 30);
}

#[test]
fn trigger_gates_fail_with_exit_1_and_json_goes_to_stdout() {
    let server = RouterServer::start(routes(), false);
    let project = Project::new(&server.base_url());
    let output = project.triggers(&["--min-recall", "0.7", "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", described(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["gate"]["passed"], json!(false));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("recall 60.0% is below --min-recall 70.0%"),
        "{stderr}"
    );
}

#[test]
fn triggers_with_a_failing_runner_are_an_infrastructure_error() {
    let server = RouterServer::start(routes(), true);
    let project = Project::new(&server.base_url());
    // The circuit breaker stops it after 8 infrastructure failures in a row.
    let output = project.triggers(&["--no-preflight", "-k", "1"]);
    assert_eq!(output.status.code(), Some(3), "{}", described(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("circuit breaker"), "{stderr}");
    // Without it, every attempt is unscoreable, counted by cause.
    let output = project.triggers(&[
        "--no-preflight",
        "-k",
        "1",
        "--breaker",
        "0",
        "--run-id",
        "t9",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", described(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("10 of 10 attempts are unscoreable") && stderr.contains("runner error 10"),
        "{stderr}"
    );
}

#[test]
fn trigger_set_problems_are_input_errors_naming_the_file() {
    let server = RouterServer::start(routes(), false);
    let project = Project::new(&server.base_url());
    std::fs::remove_file(project.path("skill/refund-desk/evals/triggers.json")).unwrap();
    let output = project.triggers(&[]);
    assert_eq!(output.status.code(), Some(2), "{}", described(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no trigger set found"),
        "{}",
        described(&output)
    );
    project.write(
        "bad.json",
        r#"{"queries": [{"query": "a", "should_trigger": true}, {"query": "b", "should_trigger": "no"}]}"#,
    );
    let output = project.triggers(&["--triggers", "bad.json"]);
    assert_eq!(output.status.code(), Some(2), "{}", described(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.json") && stderr.contains("queries[1].should_trigger"),
        "{stderr}"
    );
    project.write(
        "contradiction.json",
        r#"[{"id": "x", "query": "a", "should_trigger": false, "expected_skill": "refund-desk"}]"#,
    );
    let output = project.triggers(&["--triggers", "contradiction.json"]);
    assert_eq!(output.status.code(), Some(2), "{}", described(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("query `x`"),
        "{}",
        described(&output)
    );
    assert_eq!(server.requests(), 0);
}

#[test]
fn aces_golden_cases_are_read_for_should_trigger_and_skill_creator_lists_too() {
    let server = RouterServer::start(routes(), false);
    let project = Project::new(&server.base_url());
    std::fs::remove_file(project.path("skill/refund-desk/evals/triggers.json")).unwrap();
    // ACES golden cases: `expected_skill: null` is a negative; a named other skill too.
    project.write(
        "skill/refund-desk/evals/evals.json",
        &json!({"skill_name": "refund-desk", "evals": [
            {"id": "a1", "prompt": "Refund my order 1234, it arrived broken.", "expected_skill": "refund-desk"},
            {"id": "a2", "prompt": "Where is the refund for invoice 77?", "expected_skill": "refund-desk"},
            {"id": "a3", "prompt": "What is the capital of France?", "expected_skill": null},
            {"id": "a4", "prompt": "Explain what a refund policy is, in general terms.", "should_trigger": false}
        ]})
        .to_string(),
    );
    let output = project.triggers(&["--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["setup"]["trigger_set"]["format"], "golden-cases");
    // a1 TP, a2 FN (log-triage), a3 TN, a4 FP: precision 1/2, recall 1/2.
    assert_eq!(report["precision"]["value"], json!(0.5));
    assert_eq!(report["recall"]["value"], json!(0.5));
    // A skill-creator list (bare array) in another file.
    project.write(
        "list.json",
        r#"[{"query": "I was charged twice for one order.", "should_trigger": true},
            {"query": "What is the capital of France?", "should_trigger": false}]"#,
    );
    let output = binary(&project.path("state"))
        .current_dir(project.dir.path())
        .args([
            "triggers",
            "skill/refund-desk",
            "--runner",
            "runners/router.toml",
        ])
        .args([
            "--out",
            "results",
            "--run-id",
            "t2",
            "-k",
            "2",
            "--triggers",
            "list.json",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["setup"]["trigger_set"]["format"], "trigger-list");
    assert_eq!(report["results"][0]["id"], "q01");
    assert_eq!(report["precision"]["value"], json!(1.0));
    assert_eq!(report["recall"]["value"], json!(1.0));
}

/// A project for `vet`: triggers that are all right but one missed positive, and 20 golden
/// cases the skill passes (its body holds the marker the router answers `Aye!` to) and the
/// baseline fails.
fn vet_project(server_url: &str) -> Project {
    let project = Project::new(server_url);
    project.write(
        "skill/refund-desk/SKILL.md",
        "---\nname: refund-desk\ndescription: Use when a customer asks for a refund, a chargeback or money back for an order.\n---\n# Refund desk\n\nStart with Aye! and open a refund ticket. SKILL-MARKER\n\n## Limitations\n\nNot for questions about refund law in general.\n",
    );
    let evals: Vec<Value> = (0..20)
        .map(|i| {
            json!({"id": format!("case-{i:02}"), "prompt": format!("Refund request number {i}."),
                   "expected_skill": "refund-desk",
                   "checks": [{"type": "regex", "pattern": "^Aye!"}]})
        })
        .collect();
    project.write(
        "skill/refund-desk/evals/evals.json",
        &json!({"skill_name": "refund-desk", "evals": evals}).to_string(),
    );
    // The paired run uses the profile as written: tools mode, so the router sees the skill.
    project.write(
        "runners/router.toml",
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"{server_url}\"\nmodel = \"router-model\"\nskill_mode = \"tools\"\ntimeout_s = 30\nconcurrency = 4\nmax_retries = 1\nretry_base_delay_s = 0.01\nmax_turns = 3\n"
        ),
    );
    project.write(
        "skill/refund-desk/evals/triggers.json",
        &json!([
            {"query": "Refund my order 1234, it arrived broken.", "should_trigger": true},
            {"query": "I was charged twice for one order.", "should_trigger": true},
            {"query": "My package never arrived; I want my money back.", "should_trigger": true},
            {"query": "Where is the refund for invoice 77?", "should_trigger": true},
            {"query": "What is the capital of France?", "should_trigger": false},
            {"query": "The payments API returns HTTP 500; debug it.", "should_trigger": false}
        ])
        .to_string(),
    );
    project
}

fn vet_routes() -> Routes {
    let mut routes = routes();
    for i in 0..20 {
        routes.insert(
            format!("Refund request number {i}."),
            vec![Some("refund-desk".to_string())],
        );
    }
    routes
}

#[test]
fn vet_runs_every_step_registers_the_skill_and_status_shows_it() {
    let server = RouterServer::start(vet_routes(), false);
    let project = vet_project(&server.base_url());
    let vet = |id: &str, extra: &[&str]| {
        binary(&project.path("state"))
            .current_dir(project.dir.path())
            .args([
                "vet",
                "skill/refund-desk",
                "--runner",
                "runners/router.toml",
            ])
            .args(["--out", "results", "--vet-id", id, "--host", "generic"])
            .args(["--mde", "0.5", "--max-k", "3"])
            .args(extra)
            .output()
            .unwrap()
    };
    // Recall 3/4 is below the default 80%: the triggers step is no-go, the vet says NO-GO
    // (exit 1), and the skill is registered all the same.
    let output = vet("v1", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", described(&output));
    let report: Value =
        serde_json::from_slice(&std::fs::read(project.path("results/v1/vet.json")).unwrap())
            .unwrap();
    let steps = report["steps"].as_array().unwrap();
    let step = |name: &str| {
        steps
            .iter()
            .find(|s| s["step"] == name)
            .unwrap_or_else(|| panic!("no step {name}: {steps:?}"))
    };
    assert_eq!(step("triggers")["decision"], "no-go", "{report}");
    assert!(
        step("triggers")["why"]
            .as_str()
            .unwrap()
            .contains("recall 75.0%"),
        "{report}"
    );
    // 20 cases: K = 1 reaches an MDE of 50 pp (2.8016·√(0.55/20) = 46.5 pp).
    assert_eq!(step("paired_run")["decision"], "go", "{report}");
    assert_eq!(step("paired_run")["details"]["sizing"]["k"], json!(1));
    assert!(
        step("paired_run")["why"]
            .as_str()
            .unwrap()
            .contains("verdict improved"),
        "{report}"
    );
    assert_eq!(step("register")["decision"], "go", "{report}");
    assert_eq!(report["decision"], "no-go");
    assert!(project.path("results/v1/run/summary.json").is_file());
    assert!(project.path("results/v1/triggers/triggers.json").is_file());
    // With a recall bar the skill meets, every runtime step is go.
    let output = vet("v2", &["--min-recall", "0.7", "--format", "json"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let decisions: Vec<(&str, &str)> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_str().unwrap(), s["decision"].as_str().unwrap()))
        .collect();
    assert!(
        decisions.contains(&("triggers", "go")) && decisions.contains(&("register", "go")),
        "{decisions:?}\n{}",
        described(&output)
    );
    // `status` shows the registered skill with its golden set.
    let status = binary(&project.path("state"))
        .args(["status", "--host", "generic"])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", described(&status));
    let stdout = String::from_utf8_lossy(&status.stdout);
    assert!(stdout.contains("monitored 1:"), "{stdout}");
    assert!(stdout.contains("refund-desk: vetted"), "{stdout}");
    assert!(stdout.contains("(20 cases)"), "{stdout}");
    let json_status = binary(&project.path("state"))
        .args(["status", "--host", "generic", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&json_status.stdout).unwrap();
    assert_eq!(status["monitored"][0]["asset"], "refund-desk");
    assert_eq!(
        status["monitored"][0]["changed_since_vetting"],
        json!(false)
    );
    // The paired run fed the baseline store, so `regress` has the skill.
    let store: Value = serde_json::from_slice(
        &std::fs::read(project.path("state/baseline-results.json")).unwrap(),
    )
    .unwrap();
    assert!(store["assets"]["refund-desk"].is_object(), "{store}");
}
