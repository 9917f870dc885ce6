//! Conformance suite for the formats people publish: each loader on a fixture written in that
//! shape (`tests/fixtures/formats/`), its malformed variants (errors naming file and path), and
//! the real binary on a Claude config folder, a 100+ skill host with a plugin marketplace, and a
//! Vally-style and a SkillsBench-style suite run end to end against the mock OpenAI server.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use skill_lift::features::asset::{SkillWarning, load_skill};
use skill_lift::features::evalset::{
    CaseFiles, EvalFormat, EvalSetError, EvalSetWarning, ExpectedSkill, load_eval_set,
    load_trigger_set,
};
use skill_lift::features::registry::hosts::builtin_hosts;
use skill_lift::features::registry::scan::scan;
use support::cli::MOCK_K2;
use support::mock_openai::{MockBehaviour, MockServer};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats")
}

fn fixture(relative: &str) -> PathBuf {
    fixtures().join(relative)
}

fn error_text(result: Result<skill_lift::features::evalset::EvalSet, EvalSetError>) -> String {
    match result {
        Ok(set) => panic!("expected an error, loaded {} cases", set.cases.len()),
        Err(error) => error.to_string(),
    }
}

// ---------------------------------------------------------------- skills

#[test]
fn skills_with_nested_metadata_and_comma_tools_load_with_warnings() {
    let skill = load_skill(&fixture("skills/openclaw-weather")).unwrap();
    assert_eq!(
        skill.allowed_tools,
        vec!["Read", "Bash(curl -s wttr.in:*)", "Grep"]
    );
    assert_eq!(skill.metadata["version"], "1.4");
    assert!(skill.metadata["openclaw"].contains("\"emoji\":\"sun\""));
    assert!(skill.warnings.contains(&SkillWarning::NonStringMetadata {
        key: "openclaw".into()
    }));
    assert!(skill.warnings.contains(&SkillWarning::UnknownKey {
        key: "homepage".into()
    }));
    let listed = load_skill(&fixture("skills/list-tools")).unwrap();
    assert_eq!(listed.allowed_tools, vec!["Read", "Edit"]);
    let error = load_skill(&fixture("skills/no-frontmatter"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("no-frontmatter/SKILL.md"), "{error}");
    assert!(error.contains("frontmatter"), "{error}");
}

// ---------------------------------------------------------------- skill-creator

#[test]
fn skill_creator_evals_resolve_files_from_the_skill_root_and_stage_them_where_the_prompt_says() {
    let skill = fixture("skill-creator/csv-summary");
    let set = load_eval_set(&skill.join("evals/evals.json"), &skill).unwrap();
    assert_eq!(set.format, EvalFormat::Agentskills);
    assert_eq!(set.skill_name.as_deref(), Some("csv-summary"));
    let first = &set.cases[0];
    assert_eq!(first.id, "1");
    let CaseFiles::Listed(files) = &first.files else {
        panic!("files listed")
    };
    // The prompt names `evals/files/sales.csv`; that is where the file lands.
    assert!(first.prompt.contains("evals/files/sales.csv"));
    assert_eq!(files[0].destination, PathBuf::from("evals/files/sales.csv"));
    assert!(files[0].source.ends_with("evals/files/sales.csv"));
    assert_eq!(
        first.assertions,
        vec![
            "largest-first: North (150) is listed before South (80)",
            "Totals are correct",
            "The answer is a table"
        ]
    );
    // Relative to the eval file's folder (SkillEvaluator's rule) works too.
    let CaseFiles::Listed(files) = &set.cases[1].files else {
        panic!("files listed")
    };
    assert_eq!(files[0].destination, PathBuf::from("files/sales.csv"));
    assert_eq!(set.cases[1].assertions, vec!["says 80"]);
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
}

#[test]
fn skill_creator_malformed_variants_name_file_and_path() {
    let skill = fixture("skill-creator/csv-summary");
    let leak = error_text(load_eval_set(
        &fixture("skill-creator/malformed/leak.json"),
        &skill,
    ));
    assert!(leak.contains("leak.json: evals[0].files[0]"), "{leak}");
    assert!(leak.contains("would copy the target skill"), "{leak}");
    let assertion = error_text(load_eval_set(
        &fixture("skill-creator/malformed/bad-assertion.json"),
        &skill,
    ));
    assert!(
        assertion.contains("bad-assertion.json: evals[0].assertions"),
        "{assertion}"
    );
    let missing = error_text(load_eval_set(
        &fixture("skill-creator/malformed/missing-file.json"),
        &skill,
    ));
    assert!(
        missing.contains("missing-file.json: evals[0].files[0]")
            && missing.contains("does not exist"),
        "{missing}"
    );
}

#[test]
fn trigger_sets_load_as_trigger_cases_and_run_says_which_command_takes_them() {
    let path = fixture("skill-creator/csv-summary/evals/trigger-eval.json");
    let triggers = load_trigger_set(&path).unwrap();
    assert_eq!(triggers.len(), 4);
    assert_eq!(triggers.iter().filter(|t| t.should_trigger).count(), 2);
    assert!(!triggers[2].should_trigger);
    let error = error_text(load_eval_set(&path, &fixture("skill-creator/csv-summary")));
    assert!(
        error.contains("trigger set (4 queries: 2 should trigger, 2 should not)"),
        "{error}"
    );
    assert!(error.contains("skill-lift triggers"), "{error}");
    let bad = load_trigger_set(&fixture("skill-creator/malformed/bad-trigger.json"))
        .unwrap_err()
        .to_string();
    assert!(
        bad.contains("bad-trigger.json: $[0].should_trigger: must be true or false"),
        "{bad}"
    );
}

// ---------------------------------------------------------------- ACES

#[test]
fn aces_fields_load_and_expected_trigger_false_is_a_negative_case() {
    let path = fixture("aces/evals.json");
    let set = load_eval_set(&path, &fixture("aces")).unwrap();
    let by_id: BTreeMap<&str, _> = set.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let positive = by_id["calc-001"];
    assert_eq!(
        positive.expected_skill,
        ExpectedSkill::Named("calculator".into())
    );
    assert_eq!(positive.expected_script.as_deref(), Some("calc.py"));
    let negative = by_id["calc-neg-001"];
    assert!(
        !negative.should_trigger,
        "expected_trigger: false is a negative case"
    );
    assert_eq!(negative.files, CaseFiles::Listed(vec![]));
    assert_eq!(
        by_id["calc-alt-001"].acceptable_skills,
        vec!["unit-convert"]
    );
    // Unused fields are reported once per file, with counts.
    let unused = set
        .warnings
        .iter()
        .find_map(|w| match w {
            EvalSetWarning::UnusedFields { fields } => Some(fields.clone()),
            _ => None,
        })
        .expect("an unused-fields warning");
    assert_eq!(unused["category"], 2);
    assert_eq!(unused["difficulty"], 1);
    let conflict = error_text(load_eval_set(
        &fixture("aces/conflicting-trigger.json"),
        &fixture("aces"),
    ));
    assert!(
        conflict.contains("evals[0].expected_trigger: disagrees with `should_trigger`"),
        "{conflict}"
    );
}

/// `expected_skill: null` with `should_trigger: true` contradicts itself: `run` refuses the
/// eval set before anything runs (exit 2), naming the file and the JSON path.
#[test]
fn a_case_that_must_trigger_no_skill_is_refused_by_run() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("pirate");
    std::fs::create_dir_all(skill.join("evals")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: pirate\ndescription: Use when greeting users in pirate style.\n---\nSay Aye!\n",
    )
    .unwrap();
    let evals = serde_json::json!({"skill_name": "pirate", "evals": [
        {"id": "fine", "prompt": "Hi?", "checks": [{"type": "contains", "value": "Aye"}]},
        {"id": "contradiction", "prompt": "Hello?", "expected_skill": null,
         "should_trigger": true, "checks": [{"type": "contains", "value": "Aye"}]}
    ]});
    std::fs::write(skill.join("evals/evals.json"), evals.to_string()).unwrap();
    let profile = dir.path().join("dead.toml");
    std::fs::write(
        &profile,
        "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_skill-lift"))
        .current_dir(dir.path())
        .env("SKILL_LIFT_HOME", dir.path().join("state"))
        .env("CI", "true")
        .args(["run", "pirate", "--runner"])
        .arg(&profile)
        .args(["--out", "results", "--no-preflight", "--no-decoys"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("evals.json"), "{stderr}");
    assert!(
        stderr.contains("evals[1].should_trigger: is true but `expected_skill` is null"),
        "{stderr}"
    );
    assert!(!dir.path().join("results").exists());
}

// ---------------------------------------------------------------- BenchFlow

#[test]
fn benchflow_cases_load_and_its_run_defaults_are_reported_not_dropped() {
    let path = fixture("benchflow/evals.json");
    let set = load_eval_set(&path, &fixture("benchflow")).unwrap();
    assert_eq!(set.format, EvalFormat::Benchflow);
    assert_eq!(set.skill_name.as_deref(), Some("calculator"));
    let first = &set.cases[0];
    assert_eq!(first.prompt, "What is 17% of 2,340?");
    assert_eq!(first.expected_output.as_deref(), Some("397.8"));
    assert_eq!(first.assertions, vec!["shows the percentage step"]);
    assert!(
        !set.cases[1].should_trigger,
        "expected_skill: null is negative"
    );
    let unused = set
        .warnings
        .iter()
        .find_map(|w| match w {
            EvalSetWarning::UnusedFields { fields } => Some(fields.clone()),
            _ => None,
        })
        .expect("an unused-fields warning");
    let names: Vec<&str> = unused.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        vec![
            "defaults.judge_model",
            "defaults.skill_mount_dir",
            "defaults.timeout_sec",
            "environment",
            "owner"
        ]
    );
}

// ---------------------------------------------------------------- Vally

#[test]
fn vally_eval_yaml_loads_scenarios_assertions_rubrics_and_setup_files() {
    let path = fixture("vally/eval.yaml");
    let set = load_eval_set(&path, &fixture("vally")).unwrap();
    assert_eq!(set.format, EvalFormat::Vally);
    assert_eq!(set.cases.len(), 2);
    let first = &set.cases[0];
    assert_eq!(first.id, "greet-with-data");
    let kinds: Vec<&str> = first.checks.iter().map(|c| c.type_name()).collect();
    assert_eq!(
        kinds,
        vec![
            "contains",
            "not_contains",
            "file_exists",
            "file_contains",
            "tool_used"
        ]
    );
    assert_eq!(first.timeout_s, Some(120.0));
    assert_eq!(
        first.assertions,
        vec![
            "output_judge: The reply is friendly",
            "Greets like a pirate"
        ]
    );
    let CaseFiles::Listed(files) = &first.files else {
        panic!("files listed")
    };
    assert_eq!(files[0].destination, PathBuf::from("data/sales.csv"));
    assert_eq!(files[1].destination, PathBuf::from("notes.txt"));
    assert_eq!(
        std::fs::read_to_string(&files[1].source).unwrap(),
        "Remember: greet first.\n"
    );
    assert_eq!(set.cases[1].checks[0].type_name(), "regex");
    assert_eq!(set.cases[1].checks[1].type_name(), "max_turns");
    let text: Vec<String> = set.warnings.iter().map(ToString::to_string).collect();
    assert!(
        !text.iter().any(|w| w.contains("`expect_tools`")
            || w.contains("`max_turns`")
            || w.contains("`timeout`")),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|w| w.contains("`output_judge` (1)") && w.contains("`rubric` (1)")),
        "{text:?}"
    );
}

#[test]
fn vally_malformed_variants_name_file_and_path() {
    let base = fixture("vally-malformed");
    let no_prompt = error_text(load_eval_set(&base.join("no-prompt.yaml"), &base));
    assert!(
        no_prompt.contains("no-prompt.yaml: scenarios[0].prompt: is required"),
        "{no_prompt}"
    );
    let assertion = error_text(load_eval_set(&base.join("bad-assertion.yaml"), &base));
    assert!(
        assertion.contains(
            "bad-assertion.yaml: scenarios[0].assertions[0]: `file_contains` needs `value`"
        ),
        "{assertion}"
    );
    let escaping = error_text(load_eval_set(&base.join("escaping-file.yaml"), &base));
    assert!(
        escaping.contains("escaping-file.yaml: scenarios[0].setup.files[0].source"),
        "{escaping}"
    );
}

// ---------------------------------------------------------------- Harbor / SkillsBench

#[test]
fn harbor_task_folders_become_cases_graded_by_their_verifier() {
    let tasks = fixture("harbor");
    let set = load_eval_set(&tasks, &fixture("vally")).unwrap();
    assert_eq!(set.format, EvalFormat::Harbor);
    let ids: Vec<&str> = set.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, vec!["greet-csv", "plain-hello"]);
    assert!(set.cases[0].prompt.starts_with("Greet me"));
    let CaseFiles::Listed(files) = &set.cases[0].files else {
        panic!("files listed")
    };
    // The container recipe and the task-bundled skills are never staged.
    let staged: Vec<String> = files
        .iter()
        .map(|f| f.destination.display().to_string())
        .collect();
    assert_eq!(staged, vec!["data.csv"]);
    assert_eq!(set.verifier_timeout_s, Some(60.0));
    assert_eq!(
        set.harbor_tasks.as_deref(),
        Some(tasks.canonicalize().unwrap().as_path())
    );
    let text: Vec<String> = set.warnings.iter().map(ToString::to_string).collect();
    assert!(
        text.iter()
            .any(|w| w.contains("`task.toml: metadata.difficulty` (2)")),
        "{text:?}"
    );
    // One task folder alone is a suite of one.
    let one = load_eval_set(&tasks.join("plain-hello"), &fixture("vally")).unwrap();
    assert_eq!(one.cases.len(), 1);

    // The verifier, with its absolute paths mapped.
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("data.csv"), "x").unwrap();
    let verdict = skill_lift::features::evalset::harbor::verify_task(
        &tasks,
        "greet-csv",
        workspace.path(),
        Some("Aye! 2 rows."),
    )
    .unwrap();
    assert_eq!(verdict.reward, 1.0);
    let verdict = skill_lift::features::evalset::harbor::verify_task(
        &tasks,
        "greet-csv",
        workspace.path(),
        Some("Two rows."),
    )
    .unwrap();
    assert_eq!(verdict.reward, 0.0);
    let verdict = skill_lift::features::evalset::harbor::verify_task(
        &tasks,
        "plain-hello",
        workspace.path(),
        Some("Aye!"),
    )
    .unwrap();
    assert_eq!(verdict.reward, 1.0);
}

#[test]
fn harbor_malformed_variants_name_the_file() {
    let base = fixture("harbor-malformed");
    let no_verifier = error_text(load_eval_set(&base.join("no-verifier"), &base));
    assert!(
        no_verifier.contains("no-verifier: tests/test.sh: is required"),
        "{no_verifier}"
    );
    let bad_toml = error_text(load_eval_set(&base.join("bad-toml"), &base));
    assert!(bad_toml.contains("bad-toml/task.toml:2:"), "{bad_toml}");
    let not_tasks = error_text(load_eval_set(&fixture("vally"), &base));
    assert!(not_tasks.contains("Harbor task folder"), "{not_tasks}");
}

// ---------------------------------------------------------------- registry: plugins and scale

fn host(name: &str) -> skill_lift::features::registry::hosts::HostProfile {
    builtin_hosts()
        .into_iter()
        .find(|h| h.name == name)
        .unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn claude_config_folder_scans_skills_and_plugins_with_their_surfaces() {
    let state = tempfile::tempdir().unwrap();
    let root = fixture("claude-home/.claude");
    let summary = scan(
        state.path(),
        &host("claude-code"),
        &root,
        skill_lift::features::asset::fingerprint::Calibre::V3AgentSkills,
    )
    .unwrap();
    assert!(summary.skipped.is_empty(), "{:?}", summary.skipped);
    // db-tools is listed by the marketplace clone but not installed: available, not registered.
    assert_eq!(summary.new, vec!["git-helper", "meeting-notes", "pdf-fill"]);
    assert_eq!(
        summary.available,
        vec!["db-tools@acme-tools", "remote-thing@acme-tools"]
    );
    let registry = skill_lift::features::registry::scan::read_registry(state.path(), "claude-code")
        .unwrap()
        .unwrap();
    let git = &registry.assets["git-helper"];
    // The installed copy (the one installed_plugins.json names) is the one registered.
    assert!(
        git.path.ends_with("cache/acme-tools/git-helper/1.2.0"),
        "{:?}",
        git.path
    );
    assert_eq!(git.version.as_deref(), Some("1.2.0"));
    let surface = |name: &str, category: &str| -> Vec<String> {
        registry.assets[name]
            .surface
            .get(category)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        surface("git-helper", "commands"),
        vec!["commit", "pr/describe"]
    );
    assert_eq!(surface("git-helper", "agents"), vec!["reviewer"]);
    // `"skills": "./skills/"` is a folder of skills.
    assert_eq!(surface("git-helper", "skills"), vec!["commit-message"]);
    assert_eq!(
        surface("git-helper", "hooks"),
        vec!["PreToolUse", "SessionStart"]
    );
    assert_eq!(surface("git-helper", "mcp"), vec!["git-server"]);
    assert_eq!(surface("git-helper", "scripts"), vec!["scripts/check.sh"]);
    assert_eq!(
        surface("pdf-fill", "tools"),
        vec!["Bash(python3 scripts/fill.py:*)", "Read"]
    );
}

#[test]
fn scan_of_a_large_host_registers_every_good_asset_and_lists_each_bad_one() {
    let world = tempfile::tempdir().unwrap();
    let root = world.path().join("assets");
    for i in 0..120 {
        let dir = root.join(format!("skill-{i:03}"));
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        let metadata = if i % 3 == 0 {
            "metadata:\n  openclaw:\n    emoji: x\n"
        } else {
            ""
        };
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: skill-{i:03}\ndescription: Use when doing task {i}.\nallowed-tools: Read, Bash(git add:*)\n{metadata}---\nBody {i}.\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.join("scripts/run.sh"), format!("echo {i}\n")).unwrap();
    }
    let bad = [
        ("bad-no-frontmatter", "# no frontmatter\n".to_string()),
        (
            "bad-yaml",
            "---\nname: x\ndescription: [unclosed\n---\n".to_string(),
        ),
        (
            "bad-no-description",
            "---\nname: bad-no-description\n---\n".to_string(),
        ),
        (
            "dup-of-skill-007",
            "---\nname: skill-007\ndescription: d\n---\n".to_string(),
        ),
    ];
    for (name, text) in &bad {
        std::fs::create_dir_all(root.join(name)).unwrap();
        std::fs::write(root.join(name).join("SKILL.md"), text).unwrap();
    }
    std::fs::create_dir_all(root.join("broken-plugin/.claude-plugin")).unwrap();
    std::fs::write(
        root.join("broken-plugin/.claude-plugin/plugin.json"),
        "{oops",
    )
    .unwrap();
    copy_tree(
        &fixture("claude-home/.claude/plugins/marketplaces/acme-tools"),
        &root.join("acme-tools"),
    );
    let state = world.path().join("state");
    let output = Command::new(env!("CARGO_BIN_EXE_skill-lift"))
        .args(["scan", "--host", "generic", "--root"])
        .arg(&root)
        .arg("--json")
        .env("SKILL_LIFT_HOME", &state)
        .env("HOME", world.path())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(skill_lift::values::exit_codes::COMPLETED_WITH_WARNINGS),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    // 120 skills + git-helper + db-tools.
    assert_eq!(summary["assets"], 122, "{summary:#}");
    let skipped: Vec<String> = summary["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(skipped.len(), 5, "{skipped:?}");
    for name in [
        "bad-no-frontmatter",
        "bad-yaml",
        "bad-no-description",
        "dup-of-skill-007",
        "broken-plugin",
    ] {
        assert!(
            skipped.iter().any(|p| p.ends_with(name)),
            "{name}: {skipped:?}"
        );
    }
    // A plugin defined by its marketplace entry only (strict: false), in a marketplace
    // repository: registered with the surface its entry declares.
    let registry = skill_lift::features::registry::scan::read_registry(&state, "generic")
        .unwrap()
        .unwrap();
    let db = &registry.assets["db-tools"].surface;
    assert_eq!(db["commands"], vec!["query"]);
    assert_eq!(db["lsp"], vec!["sql-lsp"]);
    assert_eq!(db["mcp"], vec!["db"]);
    assert_eq!(db["scripts"], vec!["bin/db-cli"]);
    // status and check keep working on the written registry.
    for command in [
        ["status", "--host", "generic"],
        ["check", "--host", "generic"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_skill-lift"))
            .args(command)
            .env("SKILL_LIFT_HOME", &state)
            .env("HOME", world.path())
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{command:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

// ---------------------------------------------------------------- end to end against the mock

struct Suite {
    dir: tempfile::TempDir,
}

impl Suite {
    fn new(base_url: &str) -> Self {
        let suite = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        let skill = suite.dir.path().join("pirate-greeting");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\nBegin every answer with Aye! SKILL-MARKER\n",
        )
        .unwrap();
        std::fs::create_dir_all(suite.dir.path().join("runners")).unwrap();
        std::fs::write(
            suite.dir.path().join("runners/mock.toml"),
            format!(
                "kind = \"openai-chat\"\nbase_url = \"{base_url}\"\nmodel = \"mock-model\"\ntimeout_s = 30\nconcurrency = 4\nretry_base_delay_s = 0.01\n"
            ),
        )
        .unwrap();
        suite
    }

    fn run(&self, evals: &Path, run_id: &str) -> Output {
        Command::new(env!("CARGO_BIN_EXE_skill-lift"))
            .current_dir(self.dir.path())
            .env("SKILL_LIFT_HOME", self.dir.path().join("state"))
            .env("CI", "true")
            .env_remove("SKILL_LIFT_RUNNER")
            .args(["run", "pirate-greeting"])
            .args(MOCK_K2)
            .arg("--evals")
            .arg(evals)
            .args(["--run-id", run_id])
            .output()
            .unwrap()
    }

    fn summary(&self, run_id: &str) -> Value {
        let path = self
            .dir
            .path()
            .join("results")
            .join(run_id)
            .join("summary.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }
}

#[test]
fn vally_suite_runs_end_to_end_against_the_mock_server() {
    let server = MockServer::start(MockBehaviour::default());
    let suite = Suite::new(&server.base_url());
    let evals = suite.dir.path().join("vally");
    copy_tree(&fixture("vally"), &evals);
    // Beside a skill of its own, `source` is relative to the skill folder (the reference's
    // rule), and `expect_tools` would ask for a tool call the chat model never makes.
    let yaml = std::fs::read_to_string(evals.join("eval.yaml"))
        .unwrap()
        .replace(
            "source: fixtures/sales.csv",
            "source: ../vally/fixtures/sales.csv",
        )
        .replace("    expect_tools: [read_file]\n", "");
    std::fs::write(evals.join("eval.yaml"), yaml).unwrap();
    let output = suite.run(&evals.join("eval.yaml"), "vally");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("assertion types with no deterministic check"),
        "{stderr}"
    );
    let summary = suite.summary("vally");
    assert_eq!(summary["lift"]["n_cases"], 2, "{summary:#}");
    assert_eq!(
        summary["arms"]["with_skill"]["pass_rate"], 1.0,
        "{summary:#}"
    );
    assert_eq!(
        summary["arms"]["without_skill"]["pass_rate"], 0.0,
        "{summary:#}"
    );
}

#[test]
fn skillsbench_suite_runs_end_to_end_graded_by_the_task_verifiers() {
    let server = MockServer::start(MockBehaviour::default());
    let suite = Suite::new(&server.base_url());
    let tasks = suite.dir.path().join("tasks");
    copy_tree(&fixture("harbor"), &tasks);
    let output = suite.run(&tasks, "bench");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let summary = suite.summary("bench");
    assert_eq!(summary["lift"]["n_cases"], 2, "{summary:#}");
    // The verifier's reward decides the outcome, not the process metrics.
    assert_eq!(
        summary["arms"]["with_skill"]["pass_rate"], 1.0,
        "{summary:#}"
    );
    assert_eq!(
        summary["arms"]["without_skill"]["pass_rate"], 0.0,
        "{summary:#}"
    );
    let trials: Vec<Value> =
        std::fs::read_to_string(suite.dir.path().join("results/bench/trials.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(trials.len(), 8);
    for trial in &trials {
        let expected = if trial["arm"] == "with_skill" {
            1.0
        } else {
            0.0
        };
        assert_eq!(trial["scores"]["verifier"], expected, "{trial}");
    }
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(suite.dir.path().join("results/bench/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["eval_set"]["format"], "harbor");
    assert!(
        manifest["grading"]["custom_graders"][0]["command"]
            .as_str()
            .unwrap()
            .contains("harbor-verify")
    );
}
