//! Integration tests of round scheduling: `run --sequential` (anytime-valid early stopping) and
//! the budgets `--max-cost-usd`, `--max-tokens`, `--max-wall`, through the real binary against
//! the scripted OpenAI-compatible mock on loopback.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::process::Output;

use serde_json::{Value, json};
use support::cli::binary_in as binary;
use support::cli::{aye_eval_set, described, openai_profile, priced_judge_profile};
use support::mock_openai::{MockBehaviour, MockServer};

// A skill whose marker makes the mock answer "Aye!" (every case's check) in the with-skill arm
// only: a known lift of +100 pp.
use support::cli::Project;

impl Project {
    fn new(base_url: &str, cases: usize, profile_extra: &str) -> Self {
        let project = Self::with_own_state();
        project.write(
            "skill/pirate/SKILL.md",
            "---\nname: pirate\ndescription: Use when greeting users in pirate style.\n---\nBegin every answer with Aye! SKILL-MARKER\n",
        );
        project.write(
            "skill/pirate/evals/evals.json",
            &aye_eval_set("pirate", cases, |i| format!("case-{i:02}")),
        );
        project.write("mock.toml", &openai_profile(base_url, 4, profile_extra));
        project
    }

    fn run(&self, args: &[&str]) -> Output {
        binary(self.state())
            .current_dir(self.dir.path())
            .args([
                "run",
                "skill/pirate",
                "--runner",
                "mock.toml",
                "--out",
                "results",
            ])
            .args(["--no-decoys", "--progress", "never"])
            .args(args)
            .output()
            .unwrap()
    }
}

#[test]
fn a_sequential_run_stops_at_the_decision_and_records_every_trial_it_started() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(&server.base_url(), 30, "");
    let output = project.run(&[
        "--sequential",
        "-k",
        "2",
        "--round-cases",
        "3",
        "--run-id",
        "seq",
        "--jobs",
        "4",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let summary = project.result_json("seq", "summary.json");
    let stopping = &summary["stopping"];
    assert_eq!(stopping["mode"], "sequential", "{stopping}");
    assert_eq!(stopping["stop_reason"], "improved", "{stopping}");
    assert_eq!(stopping["verdict_basis"], "confidence_sequence");
    let recorded = stopping["trials_recorded"].as_u64().unwrap();
    assert_eq!(stopping["trials_planned"], 120);
    // Every difference is +1: the sequence excludes 0 after about ten cases (four rounds).
    assert!(
        (24..=60).contains(&recorded),
        "stopped after {recorded} trials: {stopping}"
    );
    assert_eq!(stopping["trials_not_run"].as_u64().unwrap(), 120 - recorded);
    assert_eq!(stopping["not_run_because"], "sequential_decision");
    assert_eq!(
        stopping["rounds_run"].as_u64().unwrap() * 12,
        recorded,
        "whole rounds only"
    );
    let cs = &stopping["confidence_sequence"];
    assert!(cs["interval"]["low"].as_f64().unwrap() > 0.0, "{cs}");
    // The headline is the sequence's: its interval, method and verdict.
    let lift = &summary["lift"];
    assert_eq!(lift["verdict"], "improved");
    assert_eq!(lift["method"], "betting-confidence-sequence");
    assert_eq!(lift["ci_low"], cs["interval"]["low"]);
    assert!(lift["p_value"].as_f64().unwrap() < 0.05);
    assert_eq!(summary["complete"], true);
    // Every trial that was started is recorded: one request per trial, no more.
    let lines = project.records("seq");
    assert_eq!(lines.len() as u64, recorded);
    assert_eq!(
        server
            .state
            .requests
            .load(std::sync::atomic::Ordering::SeqCst) as u64,
        recorded
    );
    // The manifest records the plan and the outcome; the outputs show the stop reason.
    let manifest = project.result_json("seq", "manifest.json");
    assert_eq!(manifest["stopping"]["outcome"]["reason"], "improved");
    assert_eq!(
        manifest["stopping"]["case_order"].as_array().unwrap().len(),
        30
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Stopped: improved"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("stopped: improved"), "{stderr}");
    let report = std::fs::read_to_string(project.path("results/seq/report.md")).unwrap();
    assert!(report.contains("Stopped: improved"), "{report}");
    // The stop message is a sentence of its own between the basis and the spend.
    assert!(
        report.contains("confidence sequence. The 95% confidence sequence [")
            && report.contains(" cases: improved. Spent: $"),
        "{report}"
    );
    let html = std::fs::read_to_string(project.path("results/seq/report.html")).unwrap();
    assert!(html.contains("Stopped: improved"));
    // `report` on the folder reproduces the decision from the records and the manifest.
    let again = binary(project.state())
        .current_dir(project.dir.path())
        .args([
            "report",
            "results/seq",
            "--out",
            "again",
            "--format",
            "summary-json",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", described(&again));
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path("again/summary.json")).unwrap())
            .unwrap();
    assert_eq!(again["stopping"], summary["stopping"]);
    assert_eq!(again["lift"]["verdict"], "improved");
}

/// Six cases, all +1, in one round: too few for the sequence to decide, while the fixed-n
/// analysis (McNemar mid-p 1/64) would say improved. The run does not call that direction: it
/// would spend a second α (issue 30: 7.1% false verdicts at zero lift).
#[test]
fn a_sequential_run_without_a_decision_does_not_call_the_fixed_n_direction() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(&server.base_url(), 6, "");
    let output = project.run(&[
        "--sequential",
        "-k",
        "1",
        "--round-cases",
        "6",
        "--run-id",
        "undecided",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let summary = project.result_json("undecided", "summary.json");
    let stopping = &summary["stopping"];
    assert_eq!(stopping["stop_reason"], "completed", "{stopping}");
    assert_eq!(stopping["verdict_basis"], "fixed_n");
    let lift = &summary["lift"];
    assert_eq!(lift["verdict"], "inconclusive", "{lift}");
    let reason = &lift["verdict_reasons"][0];
    assert_eq!(reason["code"], "sequence_undecided", "{lift}");
    assert_eq!(reason["fixed_n_verdict"], "improved");
    assert!(reason["p_value"].as_f64().unwrap() < 0.05, "{reason}");
    // The fixed-n analysis stays beside it.
    assert_eq!(lift["method"], "newcombe");
    assert!(lift["ci_low"].as_f64().unwrap() > 0.0, "{lift}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("is not called"), "{stdout}");
    assert!(stdout.contains("did not decide"), "{stdout}");
}

#[test]
fn a_cost_budget_stops_within_one_round_and_resume_with_more_continues() {
    let server = MockServer::start(MockBehaviour::default());
    // 1 USD per thousand tokens: every trial costs its tokens / 1000.
    let project = Project::new(
        &server.base_url(),
        12,
        "[price]\ninput_usd_per_million_tokens = 1000.0\noutput_usd_per_million_tokens = 1000.0\n",
    );
    // Learn one trial's cost from a one-case run.
    let probe = project.run(&["-k", "1", "--run-id", "probe", "--quiet"]);
    assert_eq!(probe.status.code(), Some(0), "{}", described(&probe));
    let tokens = |line: &Value| {
        line["usage"]["input_tokens"].as_u64().unwrap()
            + line["usage"]["output_tokens"].as_u64().unwrap()
    };
    let probe_lines = project.records("probe");
    let per_trial =
        probe_lines.iter().map(tokens).sum::<u64>() as f64 / probe_lines.len() as f64 / 1000.0;
    // Rounds of 2 cases × 2 arms = 4 trials; a budget of 2.5 rounds.
    let round_cost = 4.0 * per_trial;
    let limit = 2.5 * round_cost;
    let output = project.run(&[
        "-k",
        "1",
        "--round-cases",
        "2",
        "--run-id",
        "budget",
        "--max-cost-usd",
        &format!("{limit}"),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let summary = project.result_json("budget", "summary.json");
    let stopping = &summary["stopping"];
    assert_eq!(stopping["mode"], "fixed");
    assert_eq!(stopping["stop_reason"], "budget_cost", "{stopping}");
    assert_eq!(stopping["not_run_because"], "budget");
    assert_eq!(stopping["verdict_basis"], "fixed_n");
    let spent = stopping["spent"]["cost_usd"].as_f64().unwrap();
    assert!(
        spent <= limit + 1e-9,
        "spent {spent} over the limit {limit}"
    );
    assert!(
        spent + round_cost > limit,
        "stopped more than one round before the limit: spent {spent}, limit {limit}"
    );
    assert_eq!(stopping["trials_recorded"], 8);
    assert_eq!(stopping["trials_not_run"], 16);
    assert_eq!(project.records("budget").len(), 8);
    assert_eq!(summary["trials"]["recorded"], 8);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Stopped: budget_cost"), "{stdout}");
    assert!(stdout.contains("--max-cost-usd"), "{stdout}");
    // A resume with a larger budget runs the rest.
    let resumed = binary(project.state())
        .current_dir(project.dir.path())
        .args(["run", "--resume", "results/budget", "--progress", "never"])
        .args(["--max-cost-usd", "1000"])
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", described(&resumed));
    let summary = project.result_json("budget", "summary.json");
    assert_eq!(summary["stopping"]["stop_reason"], "completed");
    assert_eq!(summary["stopping"]["trials_recorded"], 24);
    assert_eq!(summary["stopping"]["budgets"]["max_cost_usd"], 1000.0);
    assert_eq!(project.records("budget").len(), 24);
}

#[test]
fn a_token_budget_stops_and_cost_without_prices_is_never_guessed() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(&server.base_url(), 8, "");
    let output = project.run(&[
        "-k",
        "1",
        "--round-cases",
        "2",
        "--run-id",
        "tokens",
        "--max-tokens",
        "1",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let stopping = &project.result_json("tokens", "summary.json")["stopping"];
    // No max_tokens in the profile: nothing projects the first round, so it runs; then the
    // budget is spent.
    assert_eq!(stopping["stop_reason"], "budget_tokens", "{stopping}");
    assert_eq!(stopping["trials_recorded"], 4);
    // No [price] table and no reported cost: the cost budget stops rather than guessing.
    let output = project.run(&["-k", "1", "--run-id", "cost", "--max-cost-usd", "5"]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no [price] table"), "{stderr}");
    let stopping = &project.result_json("cost", "summary.json")["stopping"];
    assert_eq!(stopping["stop_reason"], "cost_unknown", "{stopping}");
}

#[test]
fn a_budget_the_first_round_cannot_fit_is_refused_before_spending() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(
        &server.base_url(),
        8,
        "max_tokens = 64\n[price]\ninput_usd_per_million_tokens = 1.0\noutput_usd_per_million_tokens = 2.0\n",
    );
    // Rounds of 1 case × 2 arms × K = 3: 6 trials projected at the reply cap, 6 × 64 = 384
    // tokens, 384 × 2 USD / million = 0.000768 USD.
    for (budget, value, id) in [
        ("--max-tokens", "383", "tokens"),
        ("--max-cost-usd", "0.0007", "cost"),
    ] {
        let output = project.run(&[
            "-k",
            "3",
            "--round-cases",
            "1",
            "--run-id",
            id,
            budget,
            value,
        ]);
        assert_eq!(output.status.code(), Some(2), "{}", described(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(budget), "{stderr}");
        assert!(
            stderr.contains("the first round does not fit the budget"),
            "{stderr}"
        );
        assert!(!project.path(&format!("results/{id}")).exists());
    }
    assert_eq!(
        server
            .state
            .requests
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    // A budget the first round fits at the reply cap: it runs, and no later round starts that
    // its projection (the larger of the mean so far and the cap) would take past the budget.
    let output = project.run(&[
        "-k",
        "3",
        "--round-cases",
        "1",
        "--run-id",
        "fits",
        "--max-tokens",
        "384",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let stopping = &project.result_json("fits", "summary.json")["stopping"];
    assert_eq!(stopping["stop_reason"], "budget_tokens", "{stopping}");
    assert_eq!(stopping["trials_recorded"], 6);
}

#[test]
fn stopping_flags_are_checked() {
    let project = Project::new("http://127.0.0.1:9/v1", 2, "");
    for args in [
        &["--equivalence", "0"][..],
        &["--sequential", "--equivalence", "2"],
        &["--max-wall", "soon"],
        &["--max-cost-usd", "-1"],
        &["--max-cost-usd", "0"],
        &["--max-tokens", "0"],
        &["--sequential", "--shard", "1/2"],
        &["--round-cases", "0"],
    ] {
        let output = project.run(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            described(&output)
        );
    }
    // calibrate runs every planned trial: the stopping flags are refused, not ignored.
    for args in [&["--sequential"][..], &["--max-tokens", "1000"]] {
        let output = binary(project.state())
            .current_dir(project.dir.path())
            .args(["calibrate", "skill/pirate", "--runner", "mock.toml"])
            .args(["--out", "results", "--no-decoys", "--progress", "never"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            described(&output)
        );
        assert!(
            described(&output).contains("do not apply"),
            "{args:?}: {}",
            described(&output)
        );
        assert!(!project.dir.path().join("results").exists());
    }
}

/// The number between `prefix` (the first after `anchor`) and `suffix` in `text`.
fn number_after(text: &str, anchor: &str, prefix: &str, suffix: &str) -> f64 {
    let from = text
        .find(anchor)
        .unwrap_or_else(|| panic!("no `{anchor}` in {text}"));
    let rest = &text[from..];
    let rest = &rest[rest.find(prefix).unwrap() + prefix.len()..];
    rest[..rest.find(suffix).unwrap()]
        .trim_matches(|c: char| c == '*' || c.is_whitespace())
        .parse()
        .unwrap()
}

/// A report names its two MDEs apart: the run's (t quantiles at its N, the headline) and the
/// planning MDE (normal quantiles on the variance components, the variance section), and the
/// planning MDE is the number `plan --pilot` prints for the same N and K. At the same data the
/// run's MDE is the planning one × the ratio of the t to the normal quantile sums.
#[test]
fn the_run_mde_and_the_planning_mde_are_named_apart_and_plan_agrees() {
    // The skill helps only on prompts with a 1 in them (cases 1, 10, 11 of 12): lifts vary.
    let server = MockServer::start(MockBehaviour {
        model_needs: vec![("mock-model".to_string(), "1".to_string())],
        ..MockBehaviour::default()
    });
    let project = Project::new(&server.base_url(), 12, "");
    let output = project.run(&["-k", "2", "--run-id", "pilot"]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let report = std::fs::read_to_string(project.path("results/pilot/report.md")).unwrap();
    let run_mde = number_after(
        &report,
        "minimum detectable effect ",
        "minimum detectable effect ",
        " pp (t quantiles at N = 12; α = 0.05, power 0.8)",
    );
    let planning = number_after(
        &report,
        "Planning MDE of the pass-rate lift",
        "power 0.8): ",
        " pp now",
    );
    // (t_{11,0.975} + t_{11,0.8}) / (z_{0.975} + z_{0.8}) = (2.2010 + 0.8755) / 2.8016.
    let ratio = (2.2010 + 0.8755) / 2.8016;
    assert!(
        (run_mde / planning - ratio).abs() < 0.01,
        "run MDE {run_mde}, planning MDE {planning}: {report}"
    );
    let plan = binary(project.state())
        .current_dir(project.dir.path())
        .args(["plan", "skill/pirate", "--runner", "mock.toml", "-k", "2"])
        .args(["--pilot", "results/pilot"])
        .output()
        .unwrap();
    assert_eq!(plan.status.code(), Some(0), "{}", described(&plan));
    let stdout = String::from_utf8_lossy(&plan.stdout);
    let planned = number_after(&stdout, "Planning MDE (", "power 0.8): ", " pp");
    assert_eq!(planned, planning, "{stdout}");
}

/// `plan --pilot` projects fixed-K against `--sequential` from a recorded pilot (judge spend
/// included), and its cost lines carry the pilot's judge cost per trial.
#[test]
fn plan_projects_fixed_k_against_sequential_from_a_pilot() {
    use support::mock_judge::{JudgeBehaviour, MockJudge};
    let server = MockServer::start(MockBehaviour::default());
    let judge = MockJudge::start(JudgeBehaviour::default());
    let project = Project::new(
        &server.base_url(),
        8,
        "\n[price]\ninput_usd_per_million_tokens = 3.0\noutput_usd_per_million_tokens = 15.0\n",
    );
    let evals: Vec<Value> = (0..8)
        .map(|i| {
            json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                   "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}],
                   "assertions": ["The answer starts with Aye!"]})
        })
        .collect();
    project.write(
        "skill/pirate/evals/evals.json",
        &json!({"skill_name": "pirate", "evals": evals}).to_string(),
    );
    project.write("judge.toml", &priced_judge_profile(&judge.base_url()));
    let pilot = project.run(&[
        "-k",
        "2",
        "--run-id",
        "pilot",
        "--judge",
        "judge.toml",
        "--judge-metrics",
        "behavior_check",
        "--no-judge-cache",
    ]);
    assert!(
        matches!(pilot.status.code(), Some(0 | 1)),
        "{}",
        described(&pilot)
    );
    let plan = |args: &[&str]| {
        binary(project.state())
            .current_dir(project.dir.path())
            .args(["plan", "skill/pirate", "--runner", "mock.toml", "-k", "2"])
            .args(args)
            .output()
            .unwrap()
    };
    let output = plan(&[
        "--pilot",
        "results/pilot",
        "--assumed-lift",
        "0,0.5",
        "--simulations",
        "300",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let planned: Value = serde_json::from_slice(&output.stdout).unwrap();
    // Judge cost: one request per trial, 100 + 20 tokens at 1 / 5 USD per million = $0.0002.
    let usage = &planned["usage"];
    assert_eq!(usage["judge_tokens_per_trial"], 120.0, "{usage}");
    let judge_cost = usage["judge_cost_usd"].as_f64().unwrap();
    assert!((judge_cost - 32.0 * 0.0002).abs() < 1e-12, "{usage}");
    let projection = &planned["projection"];
    let lifts = projection["lifts"].as_array().unwrap();
    assert_eq!(lifts.len(), 2, "{projection}");
    for lift in lifts {
        let fixed = &lift["fixed_k"];
        assert_eq!(fixed["mean_trials"], 32.0, "{lift}");
        assert_eq!(fixed["stop_reasons"]["completed"], 1.0, "{lift}");
        // Every pilot trial was judged at $0.0002: the judge's share is exact.
        let fixed_judge = fixed["mean_judge_cost_usd"].as_f64().unwrap();
        assert!((fixed_judge - 32.0 * 0.0002).abs() < 1e-9, "{lift}");
        assert!(fixed["mean_cost_usd"].as_f64().unwrap() > fixed_judge);
        let sequential = &lift["sequential"];
        assert!(sequential["mean_trials"].as_f64().unwrap() <= 32.0);
        let shares: f64 = sequential["stop_reasons"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert!((shares - 1.0).abs() < 1e-9, "{sequential}");
    }
    // No lift: the sequence seldom decides (its false-decision rate is at most α).
    let none = &lifts[0]["sequential"]["stop_reasons"];
    let false_decisions =
        none["improved"].as_f64().unwrap_or(0.0) + none["regressed"].as_f64().unwrap_or(0.0);
    assert!(false_decisions <= 0.05, "{none}");
    // Eight cases × K = 2 are too few for any anytime-valid sequence to decide a lift of +0.5
    // often: at that lift its capital against "no lift" grows, with the largest bet it allows
    // from the first case on, by a factor of about 1.4 per case (geometric mean; 1.4⁸ ≈ 16),
    // and it must reach 1/α = 20. Measured through `run --sequential` (scripts/check-sequential
    // --cases 8 --attempts 2, 100 runs): 12 % decided, 31.8 of 32 trials spent. A projection
    // claiming a clear early stop here would be wrong.
    let small = &lifts[1];
    let decided = small["sequential"]["stop_reasons"]["improved"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(decided < 0.3, "{small}");
    assert!(small["trials_share"].as_f64().unwrap() > 0.9, "{small}");

    // The Markdown names both procedures and the judge cost.
    let output = plan(&[
        "--pilot",
        "results/pilot",
        "--assumed-lift",
        "0.3",
        "--simulations",
        "50",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let markdown = String::from_utf8_lossy(&output.stdout);
    assert!(markdown.contains("+ judge $0.01)"), "{markdown}");
    assert!(
        markdown.contains("## Fixed-K or `--sequential`: expected spend"),
        "{markdown}"
    );
    assert!(markdown.contains("| +0.30 | sequential |"), "{markdown}");

    // Bad input: a projection needs a pilot; lifts are fractions.
    for args in [
        &["--assumed-lift", "0.3"][..],
        &["--pilot", "results/pilot", "--assumed-lift", "1.5"],
        &["--pilot", "results/pilot", "--simulations", "0"],
    ] {
        let output = plan(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            described(&output)
        );
    }

    // Against a measured run where a decision is reachable: 20 cases, the skill always passes,
    // the baseline never does (as in the pilot). Rounds of one case (a twentieth); the real
    // `run --sequential` stops at a fixed round. The projection at an assumed lift of +1 runs
    // the same rounds and rule on baseline rates drawn from the pilot's posterior (near 0, not
    // exactly 0: an occasional baseline pass delays a simulated decision), so its mean lies at
    // the measured count or a little above, within half a round (2 trials; 28 measured and
    // 28.05 projected when written). A projection deciding a round early or late is off by 4.
    let evals: Vec<Value> = (0..20)
        .map(|i| {
            json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                   "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]})
        })
        .collect();
    project.write(
        "skill/pirate/evals/evals.json",
        &json!({"skill_name": "pirate", "evals": evals}).to_string(),
    );
    let output = plan(&[
        "--pilot",
        "results/pilot",
        "--assumed-lift",
        "1",
        "--simulations",
        "300",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let planned: Value = serde_json::from_slice(&output.stdout).unwrap();
    let clear = &planned["projection"]["lifts"][0];
    assert_eq!(clear["fixed_k"]["mean_trials"], 80.0, "{clear}");
    let measured = project.run(&["--sequential", "-k", "2", "--run-id", "seq"]);
    assert_eq!(measured.status.code(), Some(0), "{}", described(&measured));
    let stopping = project.result_json("seq", "summary.json")["stopping"].clone();
    assert_eq!(stopping["stop_reason"], "improved", "{stopping}");
    let measured_trials = stopping["trials_recorded"].as_f64().unwrap();
    assert!(measured_trials < 80.0, "{stopping}");
    let projected = &clear["sequential"];
    assert!(
        projected["stop_reasons"]["improved"].as_f64().unwrap() > 0.9,
        "{projected}"
    );
    let projected_trials = projected["mean_trials"].as_f64().unwrap();
    assert!(
        (measured_trials..measured_trials + 2.0).contains(&projected_trials),
        "projected {projected_trials} trials, measured {measured_trials}: {clear}"
    );
    let share = clear["trials_share"].as_f64().unwrap();
    assert!((share - projected_trials / 80.0).abs() < 1e-9, "{clear}");
}
