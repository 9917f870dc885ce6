//! Integration tests of baseline reuse (`run --reuse-baseline`): a v1 → v2 comparison reuses
//! the baseline measured for v1 (no baseline request reaches the mock the second time, same
//! verdict as a full run), K above what is stored runs the rest, a changed model or decoy
//! reuses nothing; through the real binary against the scripted OpenAI-compatible mock.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::process::Output;

use serde_json::{Value, json};
use support::cli::{aye_eval_set, described, openai_profile, priced_judge_profile};
use support::mock_openai::{MockBehaviour, MockServer};

// A skill whose marker makes the mock answer "Aye!" (every case's check) in the with-skill
// arm only, with one decoy skill staged in both arms.
use support::cli::Project;

const CASES: usize = 8;

impl Project {
    fn new(base_url: &str) -> Self {
        let project = Self::with_own_state();
        project.write_skill("Begin every answer with Aye! SKILL-MARKER\n");
        project.write(
            "skill/pirate/evals/evals.json",
            &aye_eval_set("pirate", CASES, |i| format!("case-{i}")),
        );
        project.write_decoy("Use for log files.");
        project.write("mock.toml", &openai_profile(base_url, 4, ""));
        project
    }

    fn write_skill(&self, body: &str) {
        self.write(
            "skill/pirate/SKILL.md",
            &format!(
                "---\nname: pirate\ndescription: Use when greeting users in pirate style.\n---\n{body}"
            ),
        );
    }

    fn write_decoy(&self, description: &str) {
        self.write(
            "decoys/log-reader/SKILL.md",
            &format!("---\nname: log-reader\ndescription: {description}\n---\nRead the log.\n"),
        );
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(["run", "skill/pirate", "--runner", "mock.toml"])
            .args(["--out", "results", "--decoys", "decoys"])
            .args(["--progress", "never", "--no-preflight"])
            .args(args)
            .output()
            .unwrap()
    }
}

fn reused(trials: &[Value]) -> Vec<&Value> {
    trials
        .iter()
        .filter(|t| t.get("reused_from").is_some())
        .collect()
}

/// Run `args` and return the output and the chat requests the mock received meanwhile.
fn counted(server: &MockServer, project: &Project, args: &[&str]) -> (Output, usize) {
    let before = server.requests();
    let output = project.run(args);
    (output, server.requests() - before)
}

#[test]
fn a_v2_run_reuses_the_v1_baseline_without_a_request_and_decides_as_a_full_run() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(&server.base_url());
    let (v1, requests) = counted(&server, &project, &["-k", "2", "--run-id", "v1"]);
    assert_eq!(v1.status.code(), Some(0), "{}", described(&v1));
    assert_eq!(requests, 2 * CASES * 2, "one request per trial");
    assert!(
        String::from_utf8_lossy(&v1.stderr).contains("32 reusable trials registered"),
        "{}",
        described(&v1)
    );

    // v2 of the skill: a new fingerprint, the same baseline.
    project.write_skill("Begin every answer with Aye! SKILL-MARKER\nBe brief.\n");
    let (v2, requests) = counted(
        &server,
        &project,
        &["-k", "2", "--run-id", "v2", "--reuse-baseline"],
    );
    assert_eq!(v2.status.code(), Some(0), "{}", described(&v2));
    // Only the with-skill arm ran: zero baseline requests.
    assert_eq!(requests, CASES * 2, "{}", described(&v2));
    let trials = project.records("v2");
    assert_eq!(trials.len(), 2 * CASES * 2);
    let taken = reused(&trials);
    assert_eq!(taken.len(), CASES * 2);
    for trial in &taken {
        assert_eq!(trial["arm"], "without_skill");
        assert_eq!(trial["run_id"], "v2");
        assert_eq!(trial["reused_from"]["run_id"], "v1");
        let transcript = trial["transcript"].as_str().unwrap();
        let document: Value = serde_json::from_str(
            &std::fs::read_to_string(project.path(&format!("results/v2/{transcript}"))).unwrap(),
        )
        .unwrap();
        assert_eq!(document["trial_id"], trial["trial_id"]);
    }
    let summary = project.result_json("v2", "summary.json");
    assert_eq!(summary["reuse"]["reused"], CASES * 2, "{summary}");
    assert_eq!(summary["reuse"]["from_runs"]["v1"], CASES * 2);
    assert_eq!(
        summary["trials"]["recorded"],
        2 * CASES * 2,
        "not double-counted"
    );
    let manifest = project.result_json("v2", "manifest.json");
    assert_eq!(manifest["reuse"]["reused"], CASES * 2, "{manifest}");
    assert_eq!(manifest["reuse"]["source"]["kind"], "store");
    let report = std::fs::read_to_string(project.path("results/v2/report.md")).unwrap();
    assert!(
        report.contains("16 trials reused (16 without_skill) from v1 (16)"),
        "{report}"
    );
    let csv = std::fs::read_to_string(project.path("results/v2/trials.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",reused_from"));
    assert_eq!(csv.matches(",v1/case-").count(), CASES * 2, "{csv}");
    let html = std::fs::read_to_string(project.path("results/v2/report.html")).unwrap();
    assert!(html.contains("16 trials reused"));
    // Per trial: the summary lists each reused trial and its origin; report.md lists them,
    // report.html marks each in the case table with the run and trial it came from.
    let listed = summary["reuse"]["trials"].as_array().unwrap();
    assert_eq!(listed.len(), CASES * 2, "{summary}");
    for trial in listed {
        assert_eq!(trial["from_run"], "v1", "{trial}");
        assert_eq!(trial["arm"], "without_skill", "{trial}");
    }
    assert!(report.contains("- from `v1`: `case-"), "{report}");
    assert!(report.contains("without_skill #1 ← `"), "{report}");
    assert_eq!(html.matches("↺</a>").count(), CASES * 2, "{html}");
    assert!(html.contains("reused from run v1, trial "), "{html}");

    // The same comparison run in full gives the same verdict and lift.
    let (full, requests) = counted(&server, &project, &["-k", "2", "--run-id", "v2-full"]);
    assert_eq!(full.status.code(), Some(0), "{}", described(&full));
    assert_eq!(requests, 2 * CASES * 2);
    let full = project.result_json("v2-full", "summary.json");
    assert_eq!(summary["lift"]["verdict"], full["lift"]["verdict"]);
    assert_eq!(summary["lift"]["verdict"], "improved");
    assert_eq!(summary["lift"]["estimate"], full["lift"]["estimate"]);

    // report and resume read a run with reused trials; resume runs nothing again.
    let report = project
        .command()
        .args(["report", "results/v2", "--format", "summary-json"])
        .output()
        .unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", described(&report));
    let before = server.requests();
    let resumed = project
        .command()
        .args(["run", "--resume", "results/v2", "--progress", "never"])
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", described(&resumed));
    assert_eq!(server.requests(), before);
    assert_eq!(project.records("v2").len(), 2 * CASES * 2);

    // K above what one stored run holds: its 2 attempts per case are reused, the third runs.
    let (more, requests) = counted(
        &server,
        &project,
        &[
            "-k",
            "3",
            "--run-id",
            "k3",
            "--reuse-baseline",
            "results/v1",
        ],
    );
    assert_eq!(more.status.code(), Some(0), "{}", described(&more));
    assert_eq!(reused(&project.records("k3")).len(), CASES * 2);
    assert_eq!(requests, CASES * 3 + CASES, "{}", described(&more));

    // The store gives the newest registered run's trials first: k3 measured one baseline
    // attempt per case, v2-full two; v1 (the oldest) is not needed.
    let (newest, requests) = counted(
        &server,
        &project,
        &["-k", "2", "--run-id", "v3", "--reuse-baseline"],
    );
    assert_eq!(newest.status.code(), Some(0), "{}", described(&newest));
    assert_eq!(requests, CASES * 2, "{}", described(&newest));
    let from_runs = &project.result_json("v3", "summary.json")["reuse"]["from_runs"];
    assert_eq!(from_runs["k3"], CASES, "{from_runs}");
    assert_eq!(from_runs["v2-full"], CASES, "{from_runs}");
    assert!(from_runs.get("v1").is_none(), "{from_runs}");
}

#[test]
fn a_changed_model_or_decoy_reuses_nothing_and_sequential_runs_take_reused_trials() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(&server.base_url());
    let v1 = project.run(&["-k", "1", "--run-id", "v1"]);
    assert_eq!(v1.status.code(), Some(0), "{}", described(&v1));

    let (other_model, requests) = counted(
        &server,
        &project,
        &[
            "-k",
            "1",
            "--run-id",
            "model",
            "--model",
            "other-model",
            "--reuse-baseline",
        ],
    );
    assert_eq!(
        other_model.status.code(),
        Some(0),
        "{}",
        described(&other_model)
    );
    assert_eq!(requests, 2 * CASES);
    assert!(reused(&project.records("model")).is_empty());
    assert_eq!(
        project.result_json("model", "summary.json")["reuse"]["reused"],
        0
    );

    project.write_decoy("Use for log files and traces.");
    let (other_decoy, requests) = counted(
        &server,
        &project,
        &["-k", "1", "--run-id", "decoy", "--reuse-baseline"],
    );
    assert_eq!(
        other_decoy.status.code(),
        Some(0),
        "{}",
        described(&other_decoy)
    );
    assert_eq!(requests, 2 * CASES);
    assert!(reused(&project.records("decoy")).is_empty());

    // Sequential with reuse: the reused baseline counts in the sequence, not in the spend.
    let (sequential, requests) = counted(
        &server,
        &project,
        &[
            "-k",
            "1",
            "--run-id",
            "seq",
            "--reuse-baseline",
            "--sequential",
            "--round-cases",
            "2",
        ],
    );
    assert_eq!(
        sequential.status.code(),
        Some(0),
        "{}",
        described(&sequential)
    );
    let trials = project.records("seq");
    let taken = reused(&trials).len();
    assert_eq!(taken, CASES, "{}", described(&sequential));
    assert_eq!(requests, trials.len() - taken);
    let stopping = &project.result_json("seq", "summary.json")["stopping"];
    assert_eq!(
        stopping["spent"]["trials"].as_u64().unwrap() as usize,
        trials.len() - taken,
        "{stopping}"
    );

    // Bad sources are input errors.
    let bad = project.run(&["-k", "1", "--run-id", "bad", "--reuse-baseline", "skill"]);
    assert_eq!(bad.status.code(), Some(2), "{}", described(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--reuse-baseline skill"));
}

#[test]
fn each_matrix_cell_reuses_its_own_baseline() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(&server.base_url());
    let models = ["--model", "mock-a", "--model", "mock-b"];
    let (first, requests) = counted(
        &server,
        &project,
        &[&["-k", "1", "--run-id", "m1"][..], &models[..]].concat(),
    );
    assert_eq!(first.status.code(), Some(0), "{}", described(&first));
    assert_eq!(requests, 2 * 2 * CASES);

    project.write_skill("Begin every answer with Aye! SKILL-MARKER\nBe brief.\n");
    let (second, requests) = counted(
        &server,
        &project,
        &[
            &["-k", "1", "--run-id", "m2", "--reuse-baseline"][..],
            &models[..],
        ]
        .concat(),
    );
    assert_eq!(second.status.code(), Some(0), "{}", described(&second));
    assert_eq!(
        requests,
        2 * CASES,
        "with-skill trials only: {}",
        described(&second)
    );
    for model in ["mock-a", "mock-b"] {
        let cell = format!("m2/cells/m2--mock--{model}");
        let trials = project.records(&cell);
        let taken = reused(&trials);
        assert_eq!(taken.len(), CASES, "{cell}");
        for trial in taken {
            assert_eq!(trial["model"], model);
            assert_eq!(trial["reused_from"]["run_id"], format!("m1--mock--{model}"));
        }
    }
}

/// The judge spend test's project: the judge profile has a `[price]` table; half of the cases
/// have output checks (the judge cannot change their outcome), half only assertions.
fn judged_project(base_url: &str, judge_url: &str) -> Project {
    let project = Project::new(base_url);
    let evals: Vec<Value> = (0..4)
        .map(|i| {
            if i % 2 == 0 {
                json!({"id": format!("case-{i}"), "prompt": format!("Question {i}?"),
                       "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}],
                       "assertions": ["The answer starts with Aye!"]})
            } else {
                json!({"id": format!("case-{i}"), "prompt": format!("Question {i}?"),
                       "assertions": ["The answer starts with Aye!"]})
            }
        })
        .collect();
    project.write(
        "skill/pirate/evals/evals.json",
        &json!({"skill_name": "pirate", "evals": evals}).to_string(),
    );
    project.write("judge.toml", &priced_judge_profile(judge_url));
    project
}

#[test]
fn judge_spend_is_recorded_per_trial_and_judges_skip_trials_they_cannot_change() {
    use support::mock_judge::{JudgeBehaviour, MockJudge};
    let server = MockServer::start(MockBehaviour::default());
    let judge = MockJudge::start(JudgeBehaviour::default());
    let project = judged_project(&server.base_url(), &judge.base_url());
    let judged = [
        "-k",
        "1",
        "--judge",
        "judge.toml",
        "--judge-metrics",
        "behavior_check",
        "--no-judge-cache",
    ];
    let all = project.run(&[&judged[..], &["--run-id", "all"]].concat());
    assert_eq!(all.status.code(), Some(0), "{}", described(&all));
    // One request per trial (8 trials, one metric); the mock reports 100 + 20 tokens each.
    assert_eq!(judge.requests(), 8);
    for trial in project.records("all") {
        let spent = &trial["judge_usage"];
        assert_eq!(spent["requests"], 1, "{trial}");
        assert_eq!(spent["usage"]["input_tokens"], 100);
        let cost = spent["usage"]["cost_usd"].as_f64().unwrap();
        assert!((cost - 0.0002).abs() < 1e-12, "{cost}");
    }
    let summary = project.result_json("all", "summary.json");
    let spend = &summary["judge_spend"];
    assert_eq!(spend["requests"], 8, "{spend}");
    assert!((spend["cost_usd"].as_f64().unwrap() - 0.0016).abs() < 1e-12);
    let report = std::fs::read_to_string(project.path("results/all/report.md")).unwrap();
    assert!(
        report.contains("Judge spend: 8 trials judged, 8 requests"),
        "{report}"
    );

    // Decisive scope: the four trials of the cases with checks ask no judge.
    let before = judge.requests();
    let decisive = project.run(
        &[
            &judged[..],
            &["--run-id", "decisive", "--judge-scope", "decisive"],
        ]
        .concat(),
    );
    assert_eq!(decisive.status.code(), Some(0), "{}", described(&decisive));
    assert_eq!(judge.requests() - before, 4);
    let trials = project.records("decisive");
    for trial in &trials {
        let checked = trial["case_id"] == "case-0" || trial["case_id"] == "case-2";
        let spent = &trial["judge_usage"];
        if checked {
            assert_eq!(spent["requests"], 0, "{trial}");
            assert!(
                spent["skipped"]
                    .as_str()
                    .unwrap()
                    .contains("output checks decide")
            );
        } else {
            assert_eq!(spent["requests"], 1, "{trial}");
        }
    }
    // The verdict is the full-scope run's: the judge never decided the checked cases.
    let full = project.result_json("all", "summary.json");
    let scoped = project.result_json("decisive", "summary.json");
    assert_eq!(full["lift"]["verdict"], scoped["lift"]["verdict"]);
    assert_eq!(full["lift"]["estimate"], scoped["lift"]["estimate"]);
    assert_eq!(scoped["judge_spend"]["trials_skipped"], 4);
}
