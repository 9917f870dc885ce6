//! Eval sets in the shapes and repository layouts public skill repositories use, through the
//! real binary with a `command` runner whose fake agent lists the workspace and writes a file:
//! Vally `eval.yaml` with the reference's meaning (free-text names, `copy_test_files`, `source`
//! relative to the skill folder, glob file checks, constraints), a repository root holding
//! `evals/` with the skill in `skills/NAME/`, a wrapped trigger set, and `plan` printing the
//! loader's warnings. Every fixture is written here, in the published shapes.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::process::Output;

use serde_json::Value;
use support::cli::{binary, stderr};

/// A fake agent (Claude Code stream-json): calls `Bash` once, writes `build.binlog`, and
/// answers with the sorted list of the workspace's files (hidden folders left out).
const AGENT: &str = r#"
import json, os, sys
S = "fake-session"
def emit(e):
    sys.stdout.write(json.dumps(e) + "\n"); sys.stdout.flush()
emit({"type": "system", "subtype": "init", "session_id": S, "model": "fake-model", "cwd": os.getcwd()})
files = []
for root, dirs, names in os.walk("."):
    dirs[:] = [d for d in dirs if not d.startswith(".")]
    for n in names:
        files.append(os.path.relpath(os.path.join(root, n), ".").replace(os.sep, "/"))
files.sort()
with open("build.binlog", "w") as f:
    f.write("binlog")
usage = {"input_tokens": 5, "output_tokens": 2}
emit({"type": "assistant", "session_id": S, "message": {"id": "m1", "model": "fake-model", "role": "assistant",
      "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls -R"}}], "usage": usage}})
emit({"type": "user", "session_id": S, "message": {"role": "user",
      "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "\n".join(files)}]}})
text = "Files: " + ", ".join(files)
emit({"type": "assistant", "session_id": S, "message": {"id": "m2", "model": "fake-model", "role": "assistant",
      "content": [{"type": "text", "text": text}], "usage": usage}})
emit({"type": "result", "subtype": "success", "is_error": False, "result": text, "session_id": S,
      "usage": {"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}})
"#;

use support::cli::Project as Fixture;

impl Fixture {
    fn new() -> Self {
        let fixture = Self::empty();
        fixture.write("agent.py", AGENT);
        let argv = serde_json::to_string(&[
            "python3".to_string(),
            fixture.path("agent.py").display().to_string(),
        ])
        .unwrap();
        fixture.write(
            "runners/lister.toml",
            &format!(
                "kind = \"command\"\nmodel = \"fake-model\"\ncommand = {argv}\noutput_format = \"claude-stream-json\"\nskills_dir = \".claude/skills\"\ntimeout_s = 120\ngrace_s = 0.5\nlinger_s = 0.5\n"
            ),
        );
        std::fs::create_dir_all(fixture.path("trials")).unwrap();
        fixture
    }

    fn add_skill(&self, relative: &str, name: &str) {
        self.write(
            &format!("{relative}/SKILL.md"),
            &format!("---\nname: {name}\ndescription: Use when building {name} projects.\n---\nRun the build with a binary log.\n"),
        );
    }

    fn run(&self, target: &str, run_id: &str, extra: &[&str]) -> Output {
        self.k1_run(target, "lister", run_id)
            .args(extra)
            .output()
            .unwrap()
    }

    fn plan(&self, target: &str, extra: &[&str]) -> Output {
        binary()
            .current_dir(self.dir.path())
            .args(["plan", target, "--runner", "lister"])
            .args(extra)
            .output()
            .unwrap()
    }

    fn manifest(&self, run_id: &str) -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(self.path(&format!("results/{run_id}/manifest.json")))
                .unwrap(),
        )
        .unwrap()
    }
}

/// The Vally layout of dotnet/skills: the skill in `plugins/<plugin>/skills/<skill>/`, its
/// `eval.yaml` and project files in `tests/<plugin>/<skill>/`, setup `source` paths relative
/// to the skill folder.
const VALLY_EVAL: &str = r#"scenarios:
  - name: "Build project with /bl flag"
    prompt: "Build the project and produce a binary log."
    setup:
      copy_test_files: true
      files:
        - path: "input/data.txt"
          source: "../../../../tests/demo/builder/fixtures/data.txt"
    assertions:
      - type: "output_contains"
        value: "app.csproj"
      - type: "output_contains"
        value: "src/Program.cs"
      - type: "output_contains"
        value: "input/data.txt"
      - type: "file_exists"
        path: "*.binlog"
      - type: "file_contains"
        path: "**/*.cs"
        value: "Main"
      - type: "exit_success"
    expect_tools: ["bash"]
    timeout: 60
  - name: ".NET Framework: no log files"
    prompt: "Check the project for log files."
    setup:
      files:
        - path: "notes.txt"
          content: "Nothing to see."
    assertions:
      - type: "file_not_exists"
        path: "**/*.log"
      - type: "output_not_matches"
        pattern: "error|warning"
      - type: "file_not_contains"
        path: "notes.txt"
        value: "secret"
      - type: "output_contains"
        value: "notes.txt"
    reject_tools: ["Write"]
    max_turns: 5
  - name: "Build project with /bl flag?"
    prompt: "Build again without the project files."
    assertions:
      - type: "output_not_contains"
        value: "App.csproj"
      - type: "file_exists"
        path: "build.binlog"
"#;

#[test]
fn vally_scenarios_stage_test_files_and_pass_glob_and_constraint_checks() {
    let fixture = Fixture::new();
    std::fs::create_dir_all(fixture.path("repo/.git")).unwrap();
    fixture.add_skill("repo/plugins/demo/skills/builder", "builder");
    fixture.write("repo/tests/demo/builder/eval.yaml", VALLY_EVAL);
    fixture.write("repo/tests/demo/builder/App.csproj", "<Project />\n");
    fixture.write(
        "repo/tests/demo/builder/src/Program.cs",
        "class P { static void Main() {} }\n",
    );
    fixture.write("repo/tests/demo/builder/fixtures/data.txt", "42\n");

    let output = fixture.run("repo/plugins/demo/skills/builder", "vally", &[]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains("tests/demo/builder/eval.yaml (found by the repository layout"),
        "{err}"
    );
    let manifest = fixture.manifest("vally");
    assert_eq!(
        manifest["eval_set"]["case_ids"],
        serde_json::json!([
            "build-project-with-bl-flag",
            "net-framework-no-log-files",
            "build-project-with-bl-flag-2"
        ])
    );
    assert_eq!(
        manifest["eval_set"]["case_labels"]["net-framework-no-log-files"],
        ".NET Framework: no log files"
    );
    let records = fixture.records("vally");
    assert_eq!(records.len(), 6, "{records:?}");
    for record in &records {
        assert_eq!(record["outcome"], "pass", "{record}");
    }
    let first = records
        .iter()
        .find(|r| r["case_id"] == "build-project-with-bl-flag")
        .expect("first scenario recorded");
    let kinds: Vec<&str> = first["checks"]
        .as_array()
        .expect("checks recorded")
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"file_exists") && kinds.contains(&"answered"),
        "{kinds:?}"
    );
    assert!(kinds.contains(&"tool_used"), "{kinds:?}");
}

#[test]
fn vally_setup_commands_are_refused_naming_the_field() {
    let fixture = Fixture::new();
    fixture.add_skill("skill", "builder");
    fixture.write(
        "skill/tests/eval.yaml",
        "scenarios:\n  - name: Build it\n    prompt: p\n    setup:\n      commands:\n        - \"dotnet build -bl\"\n",
    );
    let output = fixture.plan("skill", &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("scenarios[0].setup.commands: setup commands are not supported"),
        "{err}"
    );
}

#[test]
fn repository_root_evals_with_the_skill_in_skills_name() {
    let fixture = Fixture::new();
    std::fs::create_dir_all(fixture.path("repo/.git")).unwrap();
    fixture.add_skill("repo/skills/notes", "notes");
    fixture.write("repo/commands/review.md", "Review the diff.\n");
    fixture.write("repo/evals/files/shared.txt", "shared\n");
    fixture.write(
        "repo/evals/evals.json",
        r#"{"skill_name": "notes", "evals": [
  {"id": 1, "prompt": "Use the review command.", "expected_output": "done",
   "files": ["commands/review.md"],
   "checks": [{"type": "contains", "value": "commands/review.md"},
              {"type": "not_contains", "value": "shared.txt"}]},
  {"id": 2, "prompt": "What is in the shared files?", "expected_output": "shared",
   "checks": [{"type": "contains", "value": "shared.txt"}]}
]}"#,
    );
    let output = fixture.run("repo", "root", &[]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("using the skill in"), "{err}");
    assert!(err.contains("repo/evals/evals.json"), "{err}");
    let records = fixture.records("root");
    assert_eq!(records.len(), 4, "{records:?}");
    for record in &records {
        assert_eq!(record["outcome"], "pass", "{record}");
    }

    // Two skills and no skill_name naming one: an error listing them.
    fixture.add_skill("repo/skills/other", "other");
    fixture.write(
        "repo/evals/evals.json",
        r#"{"evals": [{"id": 1, "prompt": "p", "expected_output": "x"}]}"#,
    );
    let output = fixture.plan("repo", &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds 2 skills")
            && err.contains("skills/notes")
            && err.contains("skills/other"),
        "{err}"
    );
}

#[test]
fn wrapped_trigger_sets_are_named_and_plan_prints_loader_warnings() {
    let fixture = Fixture::new();
    fixture.add_skill("skill", "notes");
    fixture.write(
        "skill/evals/triggers.json",
        r#"{"skill_name": "notes", "queries": [
  {"query": "take notes on this meeting", "should_trigger": true},
  {"query": "what is the capital of France", "should_trigger": false}
]}"#,
    );
    for output in [
        fixture.plan("skill", &["--evals", "skill/evals/triggers.json"]),
        fixture.run(
            "skill",
            "triggers",
            &["--evals", "skill/evals/triggers.json"],
        ),
    ] {
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{err}");
        assert!(
            err.contains("this is a trigger set (2 queries: 1 should trigger, 1 should not)"),
            "{err}"
        );
    }

    fixture.write(
        "skill/evals/evals.json",
        r#"{"skill_name": "notes", "owner": "someone", "evals": [{"id": 1, "prompt": "p", "expected_output": "x", "tags": ["a"]}]}"#,
    );
    let output = fixture.plan("skill", &[]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains("warning:")
            && err.contains("fields skill-lift does not use")
            && err.contains("`tags` (1)"),
        "{err}"
    );
}
