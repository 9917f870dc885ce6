//! Runner × model matrices in one run: the real `skill-lift` binary against the scripted mock
//! server on loopback, two runner profiles (inject and tools mode) × two models whose designed
//! lifts differ, measured exactly per cell; then `report`, `run --resume`, `regrade` and
//! `merge` on the matrix folder.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::process::Output;

use serde_json::{Value, json};
use support::cli::{PIRATE_SKILL_MD, assert_exit, binary_in as binary, stderr};
use support::mock_openai::{MockBehaviour, MockServer};

const SKILL: &str = PIRATE_SKILL_MD;

/// The designed lift of each model: `strong` uses the skill on every case (+100 pp), `weak`
/// only on the three `[easy]` cases of six (+50 pp); neither passes a case without it.
const MODELS: [(&str, f64); 2] = [("mock-strong", 1.0), ("mock-weak", 0.5)];

use support::cli::Project;

impl Project {
    fn new(base_url: &str) -> Self {
        let project = Self::with_own_state();
        project.write("skill/pirate-greeting/SKILL.md", SKILL);
        let evals: Vec<Value> = (0..6)
            .map(|i| {
                let easy = if i < 3 { " [easy]" } else { "" };
                json!({"id": format!("case-{i}"), "prompt": format!("Question {i}?{easy}"),
                       "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]})
            })
            .collect();
        project.write(
            "skill/pirate-greeting/evals/evals.json",
            &json!({"skill_name": "pirate-greeting", "evals": evals}).to_string(),
        );
        let profile = |extra: &str| {
            format!(
                "kind = \"openai-chat\"\nbase_url = \"{base_url}\"\nmodel = \"mock-strong\"\ntimeout_s = 30\nconcurrency = 4\nretry_base_delay_s = 0.01\n{extra}"
            )
        };
        project.write("runners/inject.toml", &profile(""));
        project.write(
            "runners/tools.toml",
            &profile("skill_mode = \"tools\"\nmax_turns = 4\n"),
        );
        project
    }

    fn skill_lift(&self, args: &[&str]) -> Output {
        binary(self.state())
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        let skill = self.path("skill/pirate-greeting");
        let mut all = vec![
            "run",
            skill.to_str().unwrap(),
            "--out",
            "results",
            "-k",
            "1",
        ];
        all.extend_from_slice(args);
        self.skill_lift(&all)
    }

    fn json(&self, relative: &str) -> Value {
        let text = std::fs::read_to_string(self.path(relative))
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
        serde_json::from_str(&text).unwrap()
    }
}

/// The matrix's two runners (flags).
const RUNNERS: [&str; 4] = ["--runner", "inject", "--runner", "tools"];

/// The matrix's two models (flags).
const MODEL_FLAGS: [&str; 4] = ["--model", "mock-strong", "--model", "mock-weak"];

/// Each of the four cells of the matrix summary at `relative` has its model's designed lift,
/// baseline level 0 and with-skill level equal to the lift.
fn assert_designed_cells(project: &Project, relative: &str) -> Value {
    let summary = project.json(relative);
    assert_eq!(summary["kind"], "matrix", "{summary}");
    let cells = summary["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "{summary}");
    let mut seen = Vec::new();
    for cell in cells {
        let model = cell["model"].as_str().unwrap();
        let designed = MODELS.iter().find(|(m, _)| *m == model).unwrap().1;
        assert_eq!(cell["lift"]["estimate"], designed, "{cell}");
        assert_eq!(cell["baseline"]["estimate"], 0.0, "{cell}");
        assert_eq!(cell["with_skill"]["estimate"], designed, "{cell}");
        assert_eq!(cell["n_cases"], 6, "{cell}");
        assert_eq!(cell["trials_recorded"], 12, "{cell}");
        assert!(cell["lift"]["ci_low"].is_number(), "{cell}");
        seen.push((
            cell["runner"].as_str().unwrap().to_string(),
            model.to_string(),
        ));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            ("inject".to_string(), "mock-strong".to_string()),
            ("inject".to_string(), "mock-weak".to_string()),
            ("tools".to_string(), "mock-strong".to_string()),
            ("tools".to_string(), "mock-weak".to_string()),
        ]
    );
    summary
}

#[test]
fn a_two_by_two_matrix_reports_each_cells_designed_lift() {
    let server = MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".to_string()),
        model_needs: vec![("mock-weak".to_string(), "[easy]".to_string())],
        ..MockBehaviour::default()
    });
    let project = Project::new(&server.base_url());
    let mut args = [RUNNERS, MODEL_FLAGS].concat();
    args.extend(["--run-id", "m"]);
    let output = project.run(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_designed_cells(&project, "results/m/summary.json");

    // The manifest records the cells; each cell is a complete run folder of its own.
    let manifest = project.json("results/m/matrix-manifest.json");
    let cells = manifest["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    assert_eq!(cells[1]["runner"], "inject");
    assert_eq!(cells[1]["model"], "mock-weak");
    assert_eq!(cells[1]["run_id"], "m--inject--mock-weak");
    let cell = project.json("results/m/cells/m--tools--mock-weak/manifest.json");
    assert_eq!(cell["model"], "mock-weak");
    assert_eq!(cell["runner"]["name"], "tools");
    assert_eq!(cell["runner"]["skill_mode"], "tools");
    let trials =
        std::fs::read_to_string(project.path("results/m/cells/m--tools--mock-weak/trials.jsonl"))
            .unwrap();
    assert_eq!(trials.lines().count(), 12);
    assert!(!project.path("results/m/manifest.json").exists());

    // The matrix report: one row per cell with intervals, in Markdown, HTML and CSV.
    let markdown = std::fs::read_to_string(project.path("results/m/report.md")).unwrap();
    assert!(
        markdown.contains("| tools | mock-weak | 0.0% ["),
        "{markdown}"
    );
    assert!(markdown.contains("+50.0 pp ["), "{markdown}");
    let html = std::fs::read_to_string(project.path("results/m/report.html")).unwrap();
    assert!(
        html.contains("cells/m--inject--mock-strong/report.html"),
        "{html}"
    );
    let csv = std::fs::read_to_string(project.path("results/m/matrix.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 5, "{csv}");
    assert!(
        rows[0].starts_with("runner,model,run_id,arm,reference,baseline_pct,baseline_ci_low_pct,"),
        "{csv}"
    );
    // Percent and percentage points with six decimals, as every CSV export.
    assert!(
        rows.iter().any(|r| r.starts_with(
            "inject,mock-weak,m--inject--mock-weak,with_skill,without_skill,0.000000,"
        ) && r.contains(",50.000000,")),
        "{csv}"
    );

    // The baseline store is fed per cell: each cell's verdicts under its runner and model.
    let store = std::fs::read_to_string(project.state().join("baseline-results.json"))
        .expect("baseline store written");
    for cell in cells {
        assert!(
            store.contains(cell["run_id"].as_str().unwrap()),
            "no entries of {cell} in the store"
        );
    }

    // `report` re-analyzes every cell and rewrites the matrix report; resume finds nothing
    // missing; regrade grades every cell again.
    let output = project.skill_lift(&["report", "results/m", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_designed_cells(&project, "results/m/summary.json");
    let output = project.skill_lift(&["run", "--resume", "results/m", "--quiet"]);
    assert_exit(&output, 0, "(12 already recorded)");
    let output = project.skill_lift(&["regrade", "results/m", "--out", "regraded", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_designed_cells(&project, "regraded/summary.json");

    // Two shards of the same matrix merge cell by cell into the whole run.
    let skill = project.path("skill/pirate-greeting");
    for (shard, out) in [("1/2", "s1"), ("2/2", "s2")] {
        let mut args = vec!["run", skill.to_str().unwrap(), "-k", "1", "--quiet"];
        args.extend(RUNNERS);
        args.extend(MODEL_FLAGS);
        args.extend(["--run-id", "sharded", "--shard", shard, "--out", out]);
        let output = project.skill_lift(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let output = project.skill_lift(&[
        "merge",
        "s1/sharded",
        "s2/sharded",
        "--out",
        "merged",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_designed_cells(&project, "merged/summary.json");
    assert!(
        project
            .path("merged/cells/merged--tools--mock-strong/trials.jsonl")
            .is_file()
    );

    // `--shard auto` (a Kubernetes Indexed Job: JOB_COMPLETION_INDEX, SKILL_LIFT_SHARD_COUNT)
    // over the matrix, both pods writing into one shared folder; `merge` of that folder merges
    // the matrix cell by cell, with the unsharded run's per-cell, per-case results.
    for index in 0..2 {
        let mut args = vec!["run", skill.to_str().unwrap(), "-k", "1", "--quiet"];
        args.extend(RUNNERS);
        args.extend(MODEL_FLAGS);
        let run_id = format!("pod-{index}");
        args.extend(["--run-id", &run_id, "--shard", "auto", "--out", "volume"]);
        let output = binary(project.state())
            .current_dir(project.dir.path())
            .args(&args)
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .env("SKILL_LIFT_SHARD_COUNT", "2")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let cell = project.json(&format!(
            "volume/{run_id}/cells/{run_id}--inject--mock-weak/manifest.json"
        ));
        assert_eq!(cell["shard"], json!({"index": index + 1, "count": 2}));
    }
    let output = project.skill_lift(&["merge", "volume", "--out", "auto", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_designed_cells(&project, "auto/summary.json");
    for cell in [
        "inject--mock-strong",
        "inject--mock-weak",
        "tools--mock-strong",
        "tools--mock-weak",
    ] {
        let whole = project.json(&format!("results/m/cells/m--{cell}/summary.json"));
        let merged = project.json(&format!("auto/cells/auto--{cell}/summary.json"));
        assert_eq!(
            whole["lift"]["estimate"], merged["lift"]["estimate"],
            "{cell}"
        );
        let per_case = |summary: &Value| -> Vec<(String, Value)> {
            summary["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["case_id"].as_str().unwrap().to_string(),
                        c["lift"].clone(),
                    )
                })
                .collect()
        };
        assert_eq!(per_case(&whole), per_case(&merged), "{cell}");
        assert_eq!(merged["trials"]["recorded"], 12, "{cell}");
    }
}

#[test]
fn one_runner_and_one_model_keep_the_single_run_folder() {
    let server = MockServer::start(MockBehaviour::default());
    let project = Project::new(&server.base_url());
    let output = project.run(&[
        "--runner",
        "inject",
        "--model",
        "mock-strong",
        "--run-id",
        "one",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = project.json("results/one/summary.json");
    assert!(summary.get("kind").is_none(), "{summary}");
    assert_eq!(summary["lift"]["estimate"], 1.0);
    assert!(project.path("results/one/manifest.json").is_file());
    assert!(!project.path("results/one/matrix-manifest.json").exists());
}

#[test]
fn matrix_progress_lines_name_their_cell() {
    let server = MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".to_string()),
        delay: std::time::Duration::from_millis(40),
        ..MockBehaviour::default()
    });
    let project = Project::new(&server.base_url());
    let mut args = RUNNERS.to_vec();
    args.extend(["--model", "mock-strong", "--run-id", "lines"]);
    args.extend(["--progress", "always", "--progress-interval", "0.01"]);
    let output = project.run(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let log = stderr(&output);
    for cell in ["inject · mock-strong", "tools · mock-strong"] {
        assert!(
            log.contains(&format!("skill-lift: [{cell}] ")),
            "no status line of {cell}:\n{log}"
        );
    }
}
