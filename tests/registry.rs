//! Integration tests of the registry console: the real `skill-lift` binary in temporary HOME and
//! state folders (never the real `~`), fake host trees, and runs against a scripted mock server.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::cli::{PIRATE_SKILL_MD, pirate_evals, stderr, stdout};
use support::mock_openai::{MockBehaviour, MockServer};

/// A temporary world: a HOME, a state folder and free space for host trees.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let world = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(world.home()).unwrap();
        world
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn home(&self) -> PathBuf {
        self.path("home")
    }

    fn state(&self) -> PathBuf {
        self.path("state")
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// The binary with HOME in the world, no inherited skill-lift variables, state = world/state.
    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_skill-lift"));
        command
            .current_dir(self.dir.path())
            .env("HOME", self.home())
            .env("SKILL_LIFT_HOME", self.state())
            .env_remove("SKILL_LIFT_HOST")
            .env_remove("SKILL_LIFT_RUNNER")
            .env_remove("SKILL_LIFT_RESULTS")
            .env("CI", "true");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    fn registry(&self, host: &str) -> Value {
        read_json(&self.state().join(format!("registry.{host}.json")))
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
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

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nDo the thing.\n")
}

/// A plugin host tree under `plugins/` and a Claude Code skills folder under HOME.
fn build_hosts(world: &World) {
    world.write(
        "state/hosts.json",
        &json!({"hosts": {"plugs": {"kind": "plugin", "root": world.path("plugins"),
                                    "logs": world.path("logs/*.log")}}})
        .to_string(),
    );
    world.write(
        "plugins/plug-a/package.json",
        &json!({"name": "plug-a", "version": "1.0.0", "main": "dist/index.js",
                "dependencies": {"left-pad": "^1.3.0"}})
        .to_string(),
    );
    // A large bundled file and a node_modules tree.
    let bundle = "x".repeat(2 * 1024 * 1024);
    world.write("plugins/plug-a/dist/index.js", &bundle);
    world.write("plugins/plug-a/dist/index.js.map", "{}");
    for i in 0..200 {
        world.write(
            &format!("plugins/plug-a/node_modules/left-pad/f{i}.js"),
            "module.exports = 1;",
        );
    }
    world.write("plugins/plug-a/README.md", &"docs ".repeat(10_000));
    world.write("plugins/plug-a/scripts/setup.sh", "echo setup");
    world.write(
        "home/.claude/skills/pdf-tools/SKILL.md",
        &skill_md("pdf-tools", "Fill and merge PDF forms"),
    );
    world.write("home/.claude/skills/pdf-tools/scripts/fill.py", "print(1)");
    world.write("home/.claude/skills/pdf-tools/README.md", "readme");
    world.write(
        "home/.claude/skills/finance/SKILL.md",
        &skill_md("finance", "Build quarterly financial reports from ledgers"),
    );
}

#[test]
fn hosts_lists_profiles_with_resolved_roots_and_counts() {
    let world = World::new();
    build_hosts(&world);
    let output = world.run(&["hosts", "--json"]);
    assert_code(&output, 0);
    let value: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let hosts = value["hosts"].as_array().unwrap();
    let find = |name: &str| hosts.iter().find(|h| h["name"] == name).unwrap().clone();
    let claude = find("claude-code");
    assert_eq!(claude["assets"], 2);
    assert_eq!(claude["root"], json!(world.home().join(".claude")));
    assert_eq!(find("plugs")["assets"], 1);
    assert_eq!(find("plugs")["kind"], "plugin");
    assert_eq!(find("generic")["root"], Value::Null);
    assert_eq!(find("deepseek")["logs"], "~/.dsh/logs/*.log");
    let text = world.run(&["hosts"]);
    assert_code(&text, 0);
    assert!(stdout(&text).contains("(no default: pass --root)"));
}

#[test]
fn scan_fingerprints_ignore_docs_track_scripts_and_report_caps() {
    let world = World::new();
    build_hosts(&world);
    let first = world.run(&["scan", "--host", "plugs"]);
    assert_code(&first, 0);
    assert!(stdout(&first).contains("1 new"), "{}", stdout(&first));
    let registry = world.registry("plugs");
    let plug = &registry["assets"]["plug-a"];
    assert_eq!(plug["kind"], "plugin");
    assert_eq!(plug["calibre"], "v4-no-eval-material");
    assert_eq!(plug["surface"]["deps"], json!(["left-pad"]));
    assert_eq!(plug["surface"]["main"], json!(["main=dist/index.js"]));
    // node_modules, README and the source map are not hashed.
    assert_eq!(plug["fingerprint_files"], 3);
    let digest = plug["fingerprint"].clone();

    // README-only edit: same fingerprint, nothing changed.
    world.write("plugins/plug-a/README.md", "rewritten docs");
    world.write("plugins/plug-a/node_modules/left-pad/new.js", "x");
    let second = world.run(&["scan", "--host", "plugs", "--json"]);
    assert_code(&second, 0);
    let summary: Value = serde_json::from_str(&stdout(&second)).unwrap();
    assert_eq!(summary["fingerprint_changed"], json!([]));
    assert_eq!(summary["caps_changed"], json!({}));
    assert_eq!(
        world.registry("plugs")["assets"]["plug-a"]["fingerprint"],
        digest
    );

    // Script edit: new fingerprint. New bin: [caps] names it.
    world.write("plugins/plug-a/scripts/setup.sh", "echo setup v2");
    world.write(
        "plugins/plug-a/package.json",
        &json!({"name": "plug-a", "version": "1.1.0", "main": "dist/index.js",
                "bin": {"plug": "bin/plug.js"}, "dependencies": {"left-pad": "^1.3.0"}})
        .to_string(),
    );
    let third = world.run(&["scan", "--host", "plugs"]);
    assert_code(&third, 0);
    let text = stdout(&third);
    assert!(text.contains("fingerprint changed"), "{text}");
    assert!(text.contains("[caps] 1 asset(s)"), "{text}");
    assert!(text.contains("  plug-a +bin"), "{text}");
    assert!(text.contains("unrelated to pass rate"), "{text}");
    let registry = world.registry("plugs");
    assert_ne!(registry["assets"]["plug-a"]["fingerprint"], digest);
    assert_eq!(
        registry["assets"]["plug-a"]["previous_fingerprints"],
        json!([digest])
    );
    assert_eq!(registry["scans"].as_array().unwrap().len(), 3);
}

#[test]
fn two_hosts_keep_separate_registries() {
    let world = World::new();
    build_hosts(&world);
    assert_code(&world.run(&["scan", "--host", "plugs"]), 0);
    let plugs_before = std::fs::read(world.state().join("registry.plugs.json")).unwrap();
    assert_code(&world.run(&["scan"]), 0);
    assert_code(&world.run(&["bump", "--model", "m2"]), 0);
    let claude = world.registry("claude-code");
    assert_eq!(
        claude["assets"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        vec!["finance", "pdf-tools"]
    );
    assert_eq!(
        std::fs::read(world.state().join("registry.plugs.json")).unwrap(),
        plugs_before,
        "scanning and bumping claude-code must not touch the plugs registry"
    );
    assert_eq!(world.registry("plugs")["model_bumps"], json!([]));
    // README edit in a skill: no change; a script edit: changed.
    world.write("home/.claude/skills/pdf-tools/README.md", "new readme");
    let output = world.run(&["scan", "--json"]);
    let summary: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(summary["fingerprint_changed"], json!([]));
    world.write("home/.claude/skills/pdf-tools/scripts/fill.py", "print(2)");
    let output = world.run(&["scan", "--json"]);
    let summary: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(summary["fingerprint_changed"], json!(["pdf-tools"]));
}

#[test]
fn state_folder_flag_beats_environment_and_home_default() {
    let world = World::new();
    build_hosts(&world);
    let other = world.path("other-state");
    let output = world.run(&["scan", "--state", other.to_str().unwrap()]);
    assert_code(&output, 0);
    assert!(other.join("registry.claude-code.json").is_file());
    assert!(!world.state().join("registry.claude-code.json").exists());
    // Without flag or variable: ~/.skill-lift under the (temporary) HOME.
    let output = world
        .command()
        .env_remove("SKILL_LIFT_HOME")
        .args(["scan"])
        .output()
        .unwrap();
    assert_code(&output, 0);
    assert!(
        world
            .home()
            .join(".skill-lift/registry.claude-code.json")
            .is_file()
    );
}

#[test]
fn malformed_inputs_exit_2_naming_the_file() {
    let world = World::new();
    build_hosts(&world);
    // plugin.json
    // A malformed manifest skips that asset (listed with its reason, exit 5); the rest are
    // registered.
    world.write("plugins/plug-b/plugin.json", "{\"name\": ");
    let output = world.run(&["scan", "--host", "plugs"]);
    assert_code(&output, 5);
    assert!(
        stderr(&output).contains("plug-b: plugin.json: not valid JSON"),
        "{}",
        stderr(&output)
    );
    assert!(world.registry("plugs")["assets"]["plug-a"].is_object());
    std::fs::remove_dir_all(world.path("plugins/plug-b")).unwrap();
    // package.json
    world.write("plugins/plug-a/package.json", "[1, 2");
    let output = world.run(&["scan", "--host", "plugs"]);
    assert_code(&output, 5);
    assert!(
        stderr(&output).contains("plug-a: package.json"),
        "{}",
        stderr(&output)
    );
    // registry
    world.write("state/registry.claude-code.json", "{\"schema_version\": 1");
    for args in [
        vec!["status"],
        vec!["scan"],
        vec!["check"],
        vec!["bump", "--model", "x"],
    ] {
        let output = world.run(&args);
        assert_code(&output, 2);
        assert!(
            stderr(&output).contains("registry.claude-code.json"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    assert_eq!(
        std::fs::read_to_string(world.state().join("registry.claude-code.json")).unwrap(),
        "{\"schema_version\": 1",
        "a malformed registry is never overwritten"
    );
    // baseline store
    world.write("state/baseline-results.json", "nope");
    let output = world.run(&["regress"]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("baseline-results.json"),
        "{}",
        stderr(&output)
    );
    // hosts.json
    world.write(
        "state/hosts.json",
        "{\"hosts\": {\"x\": {\"kind\": \"robot\"}}}",
    );
    let output = world.run(&["hosts"]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("hosts.json"),
        "{}",
        stderr(&output)
    );
    // unknown host, missing root
    std::fs::remove_file(world.state().join("hosts.json")).unwrap();
    let output = world.run(&["scan", "--host", "nope"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("unknown host `nope`"));
    let output = world.run(&["scan", "--host", "generic"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("--root"));
}

#[test]
fn probe_reads_logs_and_transcripts_and_never_claims_health() {
    let world = World::new();
    build_hosts(&world);
    world.write(
        "logs/host.log",
        "2026-03-01T10:00:00Z [warn] [plug-a] probe bsk failed (spawn bsk ENOENT)\n\
         2026-03-01T10:00:01Z [info] [plug-a] registered 4 tools\n",
    );
    assert_code(&world.run(&["scan", "--host", "plugs"]), 0);
    let output = world.run(&["probe", "--host", "plugs"]);
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(
        text.contains("plug-a: 2 log line(s), 1 failure hint(s)"),
        "{text}"
    );
    assert!(text.contains("ENOENT"), "{text}");
    assert!(!text.contains('✓'));
    // Claude Code: transcripts under ~/.claude/projects; the silent skill gets the absence line.
    world.write(
        "home/.claude/projects/p1/session.jsonl",
        &[
            json!({"message": {"content": [{"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "pdf-tools"}}]}}),
            json!({"message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": "boom"}]}}),
        ]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect::<String>(),
    );
    assert_code(&world.run(&["scan"]), 0);
    let output = world.run(&["probe"]);
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(
        text.contains(
            "pdf-tools: 0 log line(s), 0 failure hint(s); 1 skill activation(s), 1 returned errors"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "no evidence for 1 asset(s): finance — absence of evidence is not evidence of health"
        ),
        "{text}"
    );
    let help = world.run(&["probe", "--help"]);
    assert!(stdout(&help).contains("Blind spots"));
}

#[test]
fn suggest_prefers_installed_assets_then_catalog() {
    let world = World::new();
    build_hosts(&world);
    assert_code(&world.run(&["scan"]), 0);
    let output = world.run(&["suggest", "--need", "quarterly financial reports"]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("already available: finance"),
        "{}",
        stdout(&output)
    );
    world.write(
        "catalog.json",
        &json!([{"slug": "humanizer", "title": "Humanizer", "description": "remove the AI tone from text", "source": "marketplace"}]).to_string(),
    );
    let output = world.run(&[
        "suggest",
        "--need",
        "remove the AI tone",
        "--catalog",
        "catalog.json",
    ]);
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(text.contains("[install:humanizer]"), "{text}");
    assert!(text.contains("not installed — your choice"), "{text}");
    world.write("bad-catalog.json", "{}");
    let output = world.run(&["suggest", "--need", "x", "--catalog", "bad-catalog.json"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("bad-catalog.json"));
}

#[test]
fn fingerprint_report_matches_scan_and_never_touches_the_registry() {
    let world = World::new();
    build_hosts(&world);
    let skill = world.home().join(".claude/skills/pdf-tools");
    let output = world.run(&["fingerprint", skill.to_str().unwrap(), "--out", "report"]);
    assert_code(&output, 0);
    let report = read_json(&world.path("report/fingerprint-report.json"));
    assert!(world.path("report/fingerprint-report.md").is_file());
    let state_files: Vec<String> = std::fs::read_dir(world.state())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        state_files,
        vec!["hosts.json"],
        "fingerprint never writes the registry"
    );
    // Same hashing as scan.
    assert_code(&world.run(&["scan"]), 0);
    assert_eq!(
        report["entries"][0]["fingerprint"],
        world.registry("claude-code")["assets"]["pdf-tools"]["fingerprint"]
    );
}

#[test]
fn baseline_checklist_template_and_merge() {
    let world = World::new();
    world.write(
        "skills/greeter/SKILL.md",
        &skill_md("greeter", "Greets users"),
    );
    world.write(
        "skills/greeter/evals/evals.json",
        &json!({"skill_name": "greeter", "evals": [
            {"id": "c1", "prompt": "Say hi", "expected_output": "Hi"},
            {"id": "c2", "prompt": "Say bye", "status": "draft"}
        ]})
        .to_string(),
    );
    let output = world.run(&[
        "baseline",
        "checklist",
        "skills/greeter",
        "--model",
        "m1",
        "--template",
        "replay.json",
    ]);
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(text.contains("## [ ] 1. c1"), "{text}");
    assert!(
        !text.contains("c2"),
        "drafts are not in the checklist: {text}"
    );
    let mut template = read_json(&world.path("replay.json"));
    assert_eq!(template["asset"], "greeter");
    assert!(
        template["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    template["verdicts"][0]["verdict"] = json!("pass");
    template["verdicts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"case_id": "c2", "verdict": "fail", "status": "draft"}));
    world.write("replay.json", &template.to_string());
    let output = world.run(&["baseline", "merge", "replay.json"]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("1 verdict(s) merged, 0 replaced, 1 draft skipped"),
        "{}",
        stdout(&output)
    );
    let store = read_json(&world.state().join("baseline-results.json"));
    assert_eq!(store["schema_version"], 1);
    assert_eq!(
        store["assets"]["greeter"]["entries"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let output = world.run(&[
        "baseline",
        "merge",
        "replay.json",
        "--allow-draft",
        "--replace",
    ]);
    assert_code(&output, 0);
    let store = read_json(&world.state().join("baseline-results.json"));
    assert_eq!(
        store["assets"]["greeter"]["entries"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // No model anywhere: a clear error.
    let output = world.run(&["baseline", "checklist", "skills/greeter"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("--model"));
}

/// A skill with `cases` golden cases checked by `^Aye!`, a runner profile, and helpers to run
/// `skill-lift run` and ingest the run into the baseline store.
fn write_pirate(world: &World, cases: usize) {
    world.write("skills/pirate-greeting/SKILL.md", PIRATE_SKILL_MD);
    world.write(
        "skills/pirate-greeting/evals/evals.json",
        &pirate_evals(cases).to_string(),
    );
}

fn run_and_ingest(world: &World, server: &MockServer, model: &str, run_id: &str) {
    world.write(
        "runners/mock.toml",
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"x\"\ntimeout_s = 30\nconcurrency = 4\nretry_base_delay_s = 0.01\nskill_mode = \"tools\"\nmax_turns = 4\n",
            server.base_url()
        ),
    );
    let output = world.run(&[
        "run",
        "skills/pirate-greeting",
        "--runner",
        "mock",
        "--out",
        "results",
        "--model",
        model,
        "-k",
        "1",
        "--run-id",
        run_id,
        "--quiet",
        "--no-decoys",
    ]);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    let output = world.run(&["baseline", "ingest", &format!("results/{run_id}")]);
    assert_code(&output, 0);
}

#[test]
fn runs_feed_check_and_regress_flags_degraded_then_drift() {
    let world = World::new();
    write_pirate(&world, 8);
    let good = MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        served_model: Some("model-a".into()),
        ..MockBehaviour::default()
    });
    // The second model never activates the skill: a designed drop.
    let bad = MockServer::start(MockBehaviour {
        served_model: Some("model-b".into()),
        ..MockBehaviour::default()
    });

    assert_code(
        &world.run(&["scan", "--host", "generic", "--root", "skills"]),
        0,
    );
    run_and_ingest(&world, &good, "model-a", "a");
    assert_code(
        &world.run(&["bump", "--host", "generic", "--model", "model-b"]),
        0,
    );
    let output = world.run(&["check", "--host", "generic"]);
    assert_code(&output, 1);
    assert!(
        stdout(&output).contains("pirate-greeting  (last evaluated under: model-a)"),
        "{}",
        stdout(&output)
    );
    run_and_ingest(&world, &bad, "model-b", "b");
    let output = world.run(&["check", "--host", "generic"]);
    assert_code(&output, 0);
    // Re-ingesting a run is idempotent.
    let output = world.run(&["baseline", "ingest", "results/b"]);
    assert!(
        stdout(&output).contains("16 verdict(s) (16 replaced)"),
        "{}",
        stdout(&output)
    );

    let output = world.run(&["regress", "pirate-greeting", "--format", "json"]);
    assert_code(&output, 1);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let asset = &report["assets"][0];
    assert_eq!(asset["models"], json!(["model-a", "model-b"]));
    assert_eq!(asset["flags"], json!(["DEGRADED"]));
    let comparison = &asset["comparisons"][0];
    assert_eq!(comparison["flag"], "DEGRADED");
    assert_eq!(comparison["drop_pp"], 100.0);
    assert_eq!(comparison["attribution"]["target"], "trigger description");
    let cell = &asset["rows"][0]["cells"][0];
    assert_eq!(cell["n_cases"], 8);
    assert_eq!(cell["method"], "wilson");
    let output = world.run(&["regress", "--host", "generic", "--format", "json"]);
    assert_code(&output, 1);
    let output = world.run(&["regress", "--host", "claude-code"]);
    assert_code(&output, 2);
    let table = world.run(&["regress"]);
    assert_code(&table, 1);
    assert!(
        stdout(&table).contains("attribution: trigger description"),
        "{}",
        stdout(&table)
    );
    let csv = world.run(&["regress", "--format", "csv", "--out", "regress-out"]);
    assert!(stdout(&csv).lines().count() == 3, "{}", stdout(&csv));
    assert!(world.path("regress-out/regress.json").is_file());

    // The skill is edited; the new fingerprint runs under model-c and fails: FINGERPRINT-DRIFT,
    // and the new row is never compared with the old one.
    world.write(
        "skills/pirate-greeting/SKILL.md",
        "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\nAnswer plainly. SKILL-MARKER-GONE\n",
    );
    run_and_ingest(&world, &bad, "model-c", "c");
    let output = world.run(&["regress", "--format", "json"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let asset = &report["assets"][0];
    assert!(
        asset["flags"]
            .as_array()
            .unwrap()
            .contains(&json!("FINGERPRINT-DRIFT")),
        "{asset}"
    );
    assert_eq!(asset["rows"].as_array().unwrap().len(), 2);
    assert_eq!(asset["comparisons"].as_array().unwrap().len(), 1);
    assert!(asset["drift"].as_str().unwrap().contains("edited"));
    // The dashboard reads the same store.
    let output = world.run(&["status", "--host", "generic", "--dashboard"]);
    assert_code(&output, 0);
    assert!(stdout(&output).contains("heuristic"), "{}", stdout(&output));
}

#[test]
fn deepseek_layout_reads_plugins_from_package_json_dependencies() {
    let world = World::new();
    world.write(
        "home/.dsh/profiles/desktop/package.json",
        &json!({"dependencies": {"@wxg/browser-skill": "1.0.0", "not-installed": "1"}}).to_string(),
    );
    world.write(
        "home/.dsh/profiles/desktop/node_modules/@wxg/browser-skill/package.json",
        &json!({"name": "@wxg/browser-skill", "main": "dist/index.js",
                "dsh": {"bundle": {"patch": "patch.js"}}})
        .to_string(),
    );
    world.write(
        "home/.dsh/profiles/desktop/node_modules/left-pad/package.json",
        &json!({"name": "left-pad"}).to_string(),
    );
    world.write(
        "home/.dsh/logs/main.log",
        "2026-03-01T10:00:00Z [warn] [@wxg/browser-skill] probe bsk failed (spawn bsk ENOENT)\n",
    );
    let output = world.run(&["scan", "--host", "deepseek", "--json"]);
    assert_code(&output, 0);
    let summary: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(summary["new"], json!(["@wxg/browser-skill"]));
    let registry = world.registry("deepseek");
    assert_eq!(
        registry["assets"]["@wxg/browser-skill"]["surface"]["patch"],
        json!(["patch.js"])
    );
    let output = world.run(&["probe", "--host", "deepseek"]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("@wxg/browser-skill: 1 log line(s), 1 failure hint(s)"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn concurrent_scans_of_one_host_serialise_on_the_lock() {
    let world = World::new();
    build_hosts(&world);
    let children: Vec<_> = (0..4)
        .map(|_| {
            world
                .command()
                .args(["scan", "--json"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let registry = world.registry("claude-code");
    assert_eq!(registry["scans"].as_array().unwrap().len(), 4);
    assert_eq!(registry["assets"].as_object().unwrap().len(), 2);
}

// ------------------------------------------------ model identity: `check` notices a change

/// `check`'s bumps of `host`: (model, origin) in order.
fn bumps(world: &World, host: &str) -> Vec<(String, String)> {
    world.registry(host)["model_bumps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["model"].as_str().unwrap().to_string(),
                b["origin"].as_str().unwrap_or("manual").to_string(),
            )
        })
        .collect()
}

/// `check` with `args`, `--no-auto-bump` first: exit 1 naming the change and its evidence, no
/// bump recorded; then without it: exit 1 again, the change recorded as a detected bump with its
/// evidence from `source`; then a third `check`: the change is no news (exit `settled`).
fn assert_detected(
    world: &World,
    host: &str,
    args: &[&str],
    evidence: &str,
    source: &str,
    settled: i32,
) {
    let before = bumps(world, host);
    let mut command = vec!["check", "--host", host];
    command.extend_from_slice(args);
    let mut only_report = command.clone();
    only_report.push("--no-auto-bump");
    let output = world.run(&only_report);
    assert_code(&output, 1);
    let text = stdout(&output);
    assert!(
        text.contains(&format!(
            "model changed: model-a → model-b (seen in {evidence}"
        )),
        "{text}"
    );
    assert!(text.contains("not recorded (--no-auto-bump)"), "{text}");
    assert_eq!(bumps(world, host), before, "--no-auto-bump records nothing");

    let mut json = command.clone();
    json.push("--json");
    let output = world.run(&json);
    assert_code(&output, 1);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        report["model_watch"]["change"]["to"], "model-b",
        "{report:#}"
    );
    assert_eq!(report["model_watch"]["recorded"]["model"], "model-b");
    let mut after = before.clone();
    after.push(("model-b".to_string(), "detected".to_string()));
    assert_eq!(bumps(world, host), after);
    let registry = world.registry(host);
    let bump = registry["model_bumps"].as_array().unwrap().last().unwrap();
    assert_eq!(bump["previous"], "model-a");
    assert_eq!(bump["evidence"][0]["source"], source, "{bump:#}");
    assert_eq!(
        report["current"]["model"], "model-b",
        "check reads the new bump"
    );

    let output = world.run(&command);
    assert_code(&output, settled);
    assert!(
        !stdout(&output).contains("model changed"),
        "{}",
        stdout(&output)
    );
    assert_eq!(bumps(world, host).len(), after.len());
}

#[test]
fn check_notices_a_model_change_in_trial_records() {
    let world = World::new();
    write_pirate(&world, 2);
    assert_code(
        &world.run(&["scan", "--host", "generic", "--root", "skills"]),
        0,
    );
    assert_code(
        &world.run(&["bump", "--host", "generic", "--model", "model-a"]),
        0,
    );
    // The run asks for model-a; the server answers as model-b (a silent swap behind the name).
    let swapped = MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        served_model: Some("model-b".into()),
        ..MockBehaviour::default()
    });
    run_and_ingest(&world, &swapped, "model-a", "swapped");
    // The run's verdicts count as evaluated under model-b once recorded: exit 0 after.
    assert_detected(
        &world,
        "generic",
        &[],
        "trial records run swapped (pirate-greeting",
        "trial-record",
        0,
    );
}

#[test]
fn check_notices_a_model_change_at_get_models_and_says_when_it_cannot_read_it() {
    let world = World::new();
    assert_code(
        &world.run(&["bump", "--host", "generic", "--model", "model-a"]),
        0,
    );
    let server = MockServer::start(MockBehaviour {
        served_model: Some("model-b".into()),
        ..MockBehaviour::default()
    });
    world.write(
        "runners/served.toml",
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"x\"\n",
            server.base_url()
        ),
    );
    let evidence = format!("GET /models {}/models", server.base_url());
    assert_detected(
        &world,
        "generic",
        &["--runner", "served"],
        &evidence,
        "models-endpoint",
        0,
    );

    // A runner whose server does not answer: not silently green.
    world.write(
        "runners/dead.toml",
        "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"x\"\n",
    );
    let output = world.run(&["check", "--host", "generic", "--runner", "dead"]);
    assert_code(&output, 5);
    assert!(
        stdout(&output).contains("UNREADABLE: GET http://127.0.0.1:9/v1/models"),
        "{}",
        stdout(&output)
    );
    assert!(
        stderr(&output).contains("could not be read"),
        "{}",
        stderr(&output)
    );
}

/// A fake `claude` on PATH that prints a version.
fn fake_claude(world: &World) -> String {
    world.write("bin/claude", "#!/bin/sh\necho '9.9.9 (Claude Code)'\n");
    let path = world.path("bin/claude");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:/usr/bin:/bin", world.path("bin").display())
}

#[test]
fn check_notices_a_model_change_in_the_agent_settings() {
    let world = World::new();
    let path = fake_claude(&world);
    let home = world.home().display().to_string();
    let run = |args: &[&str]| {
        world
            .command()
            .env("PATH", &path)
            .args(args)
            .output()
            .unwrap()
    };
    assert_code(
        &run(&["bump", "--host", "claude-code", "--model", "model-a"]),
        0,
    );
    // Settings written before the bump say nothing about a change since.
    world.write("home/.claude/settings.json", r#"{"model": "model-old"}"#);
    let settings = world.path("home/.claude/settings.json");
    let set_mtime = |offset_s: i64| {
        let when = std::time::SystemTime::now()
            .checked_add(std::time::Duration::from_secs(offset_s.unsigned_abs()))
            .unwrap();
        let when = if offset_s < 0 {
            std::time::SystemTime::now() - std::time::Duration::from_secs(offset_s.unsigned_abs())
        } else {
            when
        };
        std::fs::File::options()
            .write(true)
            .open(&settings)
            .unwrap()
            .set_modified(when)
            .unwrap();
    };
    set_mtime(-3600);
    let output = run(&["check", "--host", "claude-code", "--history-root", &home]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("claude --version: 9.9.9 (Claude Code)"),
        "{}",
        stdout(&output)
    );
    // The user switches the configured model after the bump.
    world.write(
        "home/.claude/settings.json",
        r#"{"model": "model-b", "env": {}}"#,
    );
    set_mtime(5);
    let before = bumps(&world, "claude-code");
    let output = run(&[
        "check",
        "--host",
        "claude-code",
        "--history-root",
        &home,
        "--no-auto-bump",
    ]);
    assert_code(&output, 1);
    let text = stdout(&output);
    assert!(
        text.contains(&format!(
            "model changed: model-a → model-b (seen in agent config {}",
            settings.display()
        )),
        "{text}"
    );
    assert_eq!(bumps(&world, "claude-code"), before);
    let output = run(&["check", "--host", "claude-code", "--history-root", &home]);
    assert_code(&output, 1);
    let registry = world.registry("claude-code");
    let bump = registry["model_bumps"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(bump["model"], "model-b");
    assert_eq!(bump["origin"], "detected");
    assert_eq!(bump["evidence"][0]["source"], "agent-config");
    assert!(
        bump["evidence"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("9.9.9"),
        "{bump:#}"
    );
    let output = run(&["check", "--host", "claude-code", "--history-root", &home]);
    assert_code(&output, 0);
}

/// A Claude Code session whose answers report `model`, at `at` (RFC 3339).
fn claude_session(model: &str, at: &str) -> String {
    format!(
        "{}\n{}\n",
        json!({"type": "user", "sessionId": "s", "cwd": "/w", "uuid": "u1", "timestamp": at,
               "message": {"role": "user", "content": "hello"}}),
        json!({"type": "assistant", "sessionId": "s", "cwd": "/w", "uuid": "u2", "parentUuid": "u1",
               "timestamp": at, "message": {"id": "m1", "model": model, "role": "assistant",
               "content": [{"type": "text", "text": "hi"}]}})
    )
}

#[test]
fn check_notices_a_model_change_in_session_history_but_not_in_history_before_the_bump() {
    let world = World::new();
    let home = world.home().display().to_string();
    let run = |args: &[&str]| {
        world
            .command()
            .env("PATH", "/usr/bin:/bin")
            .args(args)
            .output()
            .unwrap()
    };
    assert_code(
        &run(&["bump", "--host", "claude-code", "--model", "model-a"]),
        0,
    );
    // A model seen only in history older than the bump never triggers.
    world.write(
        "home/.claude/projects/-w/old.jsonl",
        &claude_session("model-c", "2020-01-01T00:00:00Z"),
    );
    let output = run(&["check", "--host", "claude-code", "--history-root", &home]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("no new observation since the bump"),
        "{}",
        stdout(&output)
    );
    // A session after the bump under model-b does.
    let later = (chrono::Utc::now() + chrono::Duration::minutes(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let session = world.path("home/.claude/projects/-w/new.jsonl");
    world.write(
        "home/.claude/projects/-w/new.jsonl",
        &claude_session("model-b", &later),
    );
    let evidence = format!("session history {}", session.display());
    let output = run(&[
        "check",
        "--host",
        "claude-code",
        "--history-root",
        &home,
        "--no-auto-bump",
    ]);
    assert_code(&output, 1);
    assert!(!stdout(&output).contains("model-c"), "{}", stdout(&output));
    let before = bumps(&world, "claude-code");
    assert_detected_with(&world, &run, &["--history-root", &home], &evidence, before);
}

/// [`assert_detected`] for a world whose commands need their own environment (`run`).
fn assert_detected_with(
    world: &World,
    run: &dyn Fn(&[&str]) -> Output,
    args: &[&str],
    evidence: &str,
    before: Vec<(String, String)>,
) {
    let mut command = vec!["check", "--host", "claude-code"];
    command.extend_from_slice(args);
    let output = run(&command);
    assert_code(&output, 1);
    assert!(
        stdout(&output).contains(&format!(
            "model changed: model-a → model-b (seen in {evidence}"
        )),
        "{}",
        stdout(&output)
    );
    let mut after = before;
    after.push(("model-b".to_string(), "detected".to_string()));
    assert_eq!(bumps(world, "claude-code"), after);
    let output = run(&command);
    assert_code(&output, 0);
}

/// Issue 34: a run on a priced runner records each trial's cost in the baseline store, and the
/// value card's marginal cost is the paired difference between the arms, as computed here from
/// the run's own `trials.jsonl`.
#[test]
fn a_priced_run_gives_the_value_card_its_marginal_cost() {
    let world = World::new();
    write_pirate(&world, 6);
    let server = MockServer::start(MockBehaviour {
        activate: Some("pirate-greeting".into()),
        ..MockBehaviour::default()
    });
    assert_code(
        &world.run(&["scan", "--host", "generic", "--root", "skills"]),
        0,
    );
    world.write(
        "runners/priced.toml",
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"x\"\ntimeout_s = 30\nconcurrency = 4\nretry_base_delay_s = 0.01\nskill_mode = \"tools\"\nmax_turns = 4\n\n[price]\ninput_usd_per_million_tokens = 3.0\noutput_usd_per_million_tokens = 15.0\n",
            server.base_url()
        ),
    );
    let output = world.run(&[
        "run",
        "skills/pirate-greeting",
        "--runner",
        "priced",
        "--out",
        "results",
        "-k",
        "2",
        "--run-id",
        "priced",
        "--quiet",
        "--no-decoys",
    ]);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    assert_code(&world.run(&["baseline", "ingest", "results/priced"]), 0);
    // By hand: per case, the mean cost of its with-skill trials − that of its without-skill
    // trials, averaged over the cases.
    let mut per_case: std::collections::BTreeMap<String, [(f64, f64); 2]> = Default::default();
    let trials = std::fs::read_to_string(world.path("results/priced/trials.jsonl")).unwrap();
    for line in trials.lines() {
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
        assert!(
            (usage["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-12,
            "{record}"
        );
        let slot = &mut per_case
            .entry(record["case_id"].as_str().unwrap().to_string())
            .or_default()[side];
        slot.0 += cost;
        slot.1 += 1.0;
    }
    let differences: Vec<f64> = per_case
        .values()
        .map(|[with, without]| with.0 / with.1 - without.0 / without.1)
        .collect();
    assert_eq!(differences.len(), 6);
    let expected = differences.iter().sum::<f64>() / 6.0;
    assert!(
        expected > 0.0,
        "activating the skill costs a tool round trip: {expected}"
    );
    let store = read_json(&world.state().join("baseline-results.json"));
    let entries = store["assets"]["pirate-greeting"]["entries"]
        .as_array()
        .unwrap();
    assert_eq!(entries.len(), 24);
    assert!(entries.iter().all(|e| e["cost_usd"].is_f64()), "{store}");
    let output = world.run(&[
        "status",
        "--host",
        "generic",
        "--dashboard",
        "--json",
        "--value-per-success",
        "1",
    ]);
    assert_code(&output, 0);
    let status: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let card = &status["value"]["cards"][0];
    assert_eq!(card["skill"], "pirate-greeting");
    assert_eq!(card["cost_cases"], 6, "{card}");
    let measured = card["marginal_cost_usd"].as_f64().unwrap();
    assert!(
        (measured - expected).abs() < 1e-12,
        "{measured} vs {expected}"
    );
    // No history is read for this host: the task frequency is unknown (not zero), so the
    // net benefit is not computed, and the card says why.
    assert_eq!(card["frequency_per_30d"], Value::Null, "{card}");
    assert_eq!(card["net"], Value::Null, "{card}");
    assert_eq!(card["missing"], json!(["frequency"]), "{card}");
    let output = world.run(&["status", "--host", "generic", "--dashboard"]);
    assert!(
        stdout(&output).contains("pirate-greeting: no task frequency"),
        "{}",
        stdout(&output)
    );
}
