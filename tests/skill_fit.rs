//! Integration tests of `skill-lift lint`, `skill-lift env` (and the red flags `run` prints
//! first) and `skill-lift install`: the real binary on the bundled example, the decoys and
//! skills written here with planted problems, in temporary folders.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use support::cli::streams;
use support::cli::write;

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn binary(state: &Path) -> Command {
    let mut command = support::cli::binary_in(state);
    command
        .env("LANG", "en_US.UTF-8")
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES");
    command
}

/// A skill with the four planted problems of the issue: a missing tool, a macOS-only command,
/// a broken link and an over-long description.
fn planted_skill(root: &Path) -> PathBuf {
    let dir = root.join("planted-skill");
    let description = format!(
        "Formats release notes. Use when asked for release notes. {}",
        "Very detailed. ".repeat(70)
    );
    write(
        &dir,
        "SKILL.md",
        &format!(
            "---\nname: planted-skill\ndescription: {description}\n---\n# Release notes\n\nRead [the style guide](references/style.md) first.\n\n```bash\nfrobnicate-cli --notes CHANGELOG.md\npbcopy < notes.md\n```\n\n## Limitations\n\nThe notes are written in English only, and the skill does not translate them when the user asks for another language.\n"
        ),
    );
    dir
}

fn lint_json(state: &Path, dirs: &[&Path], extra: &[&str]) -> (Value, i32, String) {
    let output = binary(state)
        .arg("lint")
        .args(dirs)
        .args(["--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    let value: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("lint JSON: {e}\n{stdout}\n{stderr}"));
    (value, output.status.code().unwrap(), stderr)
}

fn failed_rules(skill: &Value) -> Vec<String> {
    skill["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "failed")
        .map(|r| r["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn lint_passes_the_example_and_the_decoys_and_says_it_is_static() {
    let state = tempfile::tempdir().unwrap();
    let root = repository();
    let mut command = binary(state.path());
    command.arg("lint").arg(root.join("evals/support-desk"));
    for decoy in [
        "api-debug",
        "log-triage",
        "config-validator",
        "release-planner",
    ] {
        command.arg(root.join("decoys").join(decoy));
    }
    let output = command.output().unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("not runtime evidence"), "{stdout}");
    assert!(stdout.contains("Spearman rho = -0.018"), "{stdout}");
    assert_eq!(stdout.matches("score ").count(), 5, "{stdout}");
    // The bundled skill-lift skill lints clean, warnings included.
    let output = binary(state.path())
        .args(["lint", "--deny-warnings"])
        .arg(root.join("assets/skill-lift"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{:?}", streams(&output));
}

#[test]
fn lint_finds_the_planted_problems_with_file_and_line() {
    let state = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = planted_skill(root.path());
    let (value, code, stderr) = lint_json(state.path(), &[&dir], &[]);
    assert_eq!(code, 1, "errors fail the lint: {stderr}");
    assert!(
        value["notice"]
            .as_str()
            .unwrap()
            .contains("not runtime evidence")
    );
    let skill = &value["skills"][0];
    let failed = failed_rules(skill);
    for rule in ["description-length", "broken-links", "author-and-tags"] {
        assert!(
            failed.contains(&rule.to_string()),
            "{rule} not failed: {failed:?}"
        );
    }
    let link = skill["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "broken-links")
        .unwrap();
    assert_eq!(link["evidence"]["file"], "SKILL.md");
    assert_eq!(link["evidence"]["line"], 7);
    assert!(skill["score"].as_f64().unwrap() < 100.0);
    // A folder that does not exist is an input error.
    let output = binary(state.path())
        .args(["lint", "/nonexistent/skill-folder"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(streams(&output).1.contains("/nonexistent/skill-folder"));
}

#[test]
fn lint_never_prints_a_planted_secret() {
    let state = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("leaky");
    let secret = format!("sk-ant-{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4");
    write(
        &dir,
        "SKILL.md",
        "---\nname: leaky\ndescription: Use when leaking.\n---\nbody\n",
    );
    write(
        &dir,
        "scripts/config.py",
        &format!("API_KEY = \"{secret}\"\n"),
    );
    for format in ["text", "json"] {
        let output = binary(state.path())
            .args(["lint", "--format", format])
            .arg(&dir)
            .output()
            .unwrap();
        let (stdout, stderr) = streams(&output);
        assert_eq!(output.status.code(), Some(1));
        assert!(stdout.contains("anthropic-key"), "{stdout}");
        let location = if format == "json" {
            "\"file\": \"scripts/config.py\""
        } else {
            "scripts/config.py:1"
        };
        assert!(stdout.contains(location), "{stdout}");
        assert!(
            !stdout.contains(&secret) && !stderr.contains(&secret),
            "{stdout}{stderr}"
        );
    }
}

#[test]
fn env_reports_red_flags_with_evidence_and_run_prints_them_first() {
    let state = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = planted_skill(root.path());
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let output = binary(state.path())
        .env("PATH", &bin)
        .args(["env", "--format", "json", "--context-limit", "100"])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "red flags fail env: {stdout}\n{stderr}"
    );
    let findings = serde_json::from_str::<Value>(&stdout).unwrap()["report"]["findings"]
        .as_array()
        .unwrap()
        .clone();
    let find = |subject: &str| {
        findings
            .iter()
            .find(|f| f["subject"] == subject)
            .unwrap_or_else(|| panic!("no finding {subject}: {findings:#?}"))
            .clone()
    };
    let tool = find("frobnicate-cli");
    assert_eq!(tool["status"], "missing");
    assert_eq!(tool["evidence"][0]["line"], 10);
    assert_eq!(
        tool["evidence"][0]["text"],
        "frobnicate-cli --notes CHANGELOG.md"
    );
    if cfg!(target_os = "linux") {
        let mac = find("pbcopy (macOS)");
        assert_eq!(mac["status"], "missing");
        assert_eq!(mac["kind"], "operating_system");
    }
    let context = findings
        .iter()
        .find(|f| f["kind"] == "context_size")
        .unwrap();
    assert_eq!(context["status"], "missing", "{context}");
    let locale = findings.iter().find(|f| f["kind"] == "locale").unwrap();
    assert_eq!(locale["status"], "satisfied");
    // With the tool present, that finding is satisfied.
    write(&bin, "frobnicate-cli", "#!/bin/sh\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            bin.join("frobnicate-cli"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    let output = binary(state.path())
        .env("PATH", &bin)
        .args(["env"])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, _) = streams(&output);
    assert!(
        stdout.contains("ok       command              frobnicate-cli: found"),
        "{stdout}"
    );

    // `run` prints the red flags before anything else (here the runner is unreachable, so the
    // run stops at its pre-flight check, after the flags).
    write(
        &dir,
        "evals/evals.json",
        r#"{"skill_name": "planted-skill", "evals": [{"id": "a", "prompt": "Notes?", "checks": [{"type": "contains", "value": "x"}]}]}"#,
    );
    write(
        root.path(),
        "runners/dead.toml",
        "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\ncontext_tokens = 50\n",
    );
    let output = binary(state.path())
        .env("PATH", root.path().join("empty-bin"))
        .current_dir(root.path())
        .args(["run", "--runner", "runners/dead.toml", "-k", "1", "--out"])
        .arg(root.path().join("results"))
        .arg(&dir)
        .output()
        .unwrap();
    let (_, stderr) = streams(&output);
    assert_ne!(output.status.code(), Some(0));
    let first = stderr.lines().next().unwrap_or("");
    assert!(first.starts_with("red flag: "), "{stderr}");
    assert!(stderr.contains("frobnicate-cli"), "{stderr}");
    assert!(stderr.contains("context_size"), "{stderr}");
}

#[test]
fn env_on_the_example_and_decoys_has_no_red_flags() {
    let state = tempfile::tempdir().unwrap();
    let root = repository();
    for dir in [
        "evals/support-desk",
        "decoys/api-debug",
        "decoys/log-triage",
        "decoys/config-validator",
        "decoys/release-planner",
    ] {
        let output = binary(state.path())
            .args(["env", "--context-limit", "8192"])
            .arg(root.join(dir))
            .output()
            .unwrap();
        let (stdout, stderr) = streams(&output);
        assert_eq!(output.status.code(), Some(0), "{dir}: {stdout}\n{stderr}");
        assert!(stdout.contains("context_size"), "{stdout}");
    }
}

/// Five skills with distinct lint scores; measured lifts designed so that the lift ranks, in
/// ascending score order, are 2, 1, 4, 3, 5: Spearman rho = 1 − 6·4/(5·24) = 0.8 exactly.
#[test]
fn lint_against_the_baseline_store_reports_the_designed_spearman_rho() {
    let state = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let frontmatter = |name: &str, when: bool, license: bool| {
        format!(
            "---\nname: {name}\ndescription: Helps with {name}.{}\n{}metadata:\n  author: me\n  tags: x\n---\n",
            if when {
                " Use when the user asks about it."
            } else {
                ""
            },
            if license { "license: MIT\n" } else { "" }
        )
    };
    let limitations = "\n## Limitations\n\nNone known.\n";
    let skills = [
        (
            "s-clean",
            format!("{}# Body{limitations}", frontmatter("s-clean", true, true)),
        ),
        (
            "s-nolicense",
            format!(
                "{}# Body{limitations}",
                frontmatter("s-nolicense", true, false)
            ),
        ),
        (
            "s-nolimits",
            format!("{}# Body\n", frontmatter("s-nolimits", true, false)),
        ),
        (
            "s-nowhen",
            format!("{}# Body\n", frontmatter("s-nowhen", false, false)),
        ),
        (
            "s-broken",
            format!(
                "{}# Body\n[x](missing.md)\n",
                frontmatter("s-broken", false, false)
            ),
        ),
    ];
    let mut dirs = Vec::new();
    for (name, text) in &skills {
        let dir = root.path().join(name);
        write(&dir, "SKILL.md", text);
        dirs.push(dir);
    }
    let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let (value, _, _) = lint_json(state.path(), &refs, &[]);
    let mut scored: Vec<(f64, String, String)> = value["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["score"].as_f64().unwrap(),
                s["name"].as_str().unwrap().to_string(),
                s["fingerprint"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    for pair in scored.windows(2) {
        assert!(pair[0].0 < pair[1].0, "scores must differ: {scored:?}");
    }
    let lift_ranks = [2, 1, 4, 3, 5];
    let mut assets = serde_json::Map::new();
    for ((_, name, fingerprint), rank) in scored.iter().zip(lift_ranks) {
        let mut entries = Vec::new();
        for case in 0..5 {
            for (arm, pass) in [("with_skill", case < rank), ("without_skill", false)] {
                entries.push(json!({
                    "fingerprint": fingerprint, "calibre": "v3-agent-skills", "model": "m",
                    "runner": "r", "case_id": format!("c{case}"), "arm": arm, "attempt": 1,
                    "verdict": if pass { "pass" } else { "fail" }, "source": "manual",
                    "run_id": null, "recorded_at": "2026-01-01T00:00:00Z"
                }));
            }
        }
        assets.insert(name.clone(), json!({"entries": entries}));
    }
    // A measurement of an older version of one skill is not paired with the current files.
    assets.insert(
        "s-old".to_string(),
        json!({"entries": [{"fingerprint": "sha256:0000", "calibre": "v3-agent-skills", "model": "m",
            "runner": "r", "case_id": "c0", "arm": "with_skill", "attempt": 1, "verdict": "pass",
            "source": "manual", "run_id": null, "recorded_at": "2026-01-01T00:00:00Z"}]}),
    );
    let old = root.path().join("s-old");
    write(&old, "SKILL.md", &frontmatter("s-old", true, true));
    std::fs::write(
        state.path().join("baseline-results.json"),
        serde_json::to_string(&json!({"schema_version": 1, "assets": assets})).unwrap(),
    )
    .unwrap();
    let mut all = refs.clone();
    all.push(&old);
    let (value, _, stderr) = lint_json(
        state.path(),
        &all,
        &["--against", state.path().to_str().unwrap()],
    );
    let against = &value["against"];
    assert_eq!(against["paired"], 5, "{against:#}\n{stderr}");
    let rho = against["spearman_rho"].as_f64().unwrap();
    assert!((rho - 0.8).abs() < 1e-12, "{rho}");
    let interval = against["interval_95"].as_array().unwrap();
    // Fisher z: atanh(0.8) ± 1.959964·sqrt(1.06/2).
    let half = 1.959964 * (1.06f64 / 2.0).sqrt();
    let z = 0.8f64.atanh();
    assert!(
        (interval[0].as_f64().unwrap() - (z - half).tanh()).abs() < 1e-5,
        "{interval:?}"
    );
    assert!(
        (interval[1].as_f64().unwrap() - (z + half).tanh()).abs() < 1e-5,
        "{interval:?}"
    );
    let old_row = against["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "s-old")
        .unwrap();
    assert!(old_row["measured"].as_array().unwrap().is_empty());
    let groups = against["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0]["model"], "m");
    assert_eq!(groups[0]["paired"], 5);
    assert!(
        old_row["note"]
            .as_str()
            .unwrap()
            .contains("other fingerprint"),
        "{old_row}"
    );
    // The text form states the result and the ACES reference.
    let output = binary(state.path())
        .arg("lint")
        .args(&all)
        .arg("--against")
        .arg(state.path())
        .output()
        .unwrap();
    let (stdout, _) = streams(&output);
    assert!(
        stdout.contains("Spearman rho (model m, runner r, no eval set) = +0.800, 95% CI ["),
        "{stdout}"
    );
    assert!(stdout.contains("ACES"), "{stdout}");

    // The same skills measured under a second model with the lift ranks reversed (5, 4, 3, 2, 1
    // in score order: rho = −1): one rho per model, never a pooled one.
    let mut store: Value = serde_json::from_str(
        &std::fs::read_to_string(state.path().join("baseline-results.json")).unwrap(),
    )
    .unwrap();
    for ((_, name, fingerprint), rank) in scored.iter().zip([5, 4, 3, 2, 1]) {
        let entries = store["assets"][name.as_str()]["entries"]
            .as_array_mut()
            .unwrap();
        for case in 0..5 {
            for (arm, pass) in [("with_skill", case < rank), ("without_skill", false)] {
                entries.push(json!({
                    "fingerprint": fingerprint, "calibre": "v3-agent-skills", "model": "m2",
                    "runner": "r", "case_id": format!("c{case}"), "arm": arm, "attempt": 1,
                    "verdict": if pass { "pass" } else { "fail" }, "source": "manual",
                    "run_id": null, "recorded_at": "2026-02-01T00:00:00Z"
                }));
            }
        }
    }
    std::fs::write(
        state.path().join("baseline-results.json"),
        serde_json::to_string(&store).unwrap(),
    )
    .unwrap();
    let (value, _, stderr) = lint_json(
        state.path(),
        &all,
        &["--against", state.path().to_str().unwrap()],
    );
    let against = &value["against"];
    assert_eq!(against["paired"], 5, "{against:#}\n{stderr}");
    assert!(against["spearman_rho"].is_null(), "{against:#}");
    let groups = against["groups"].as_array().unwrap();
    let rho = |model: &str| {
        groups.iter().find(|g| g["model"] == model).unwrap()["spearman_rho"]
            .as_f64()
            .unwrap()
    };
    assert!((rho("m") - 0.8).abs() < 1e-12, "{groups:?}");
    assert!((rho("m2") + 1.0).abs() < 1e-12, "{groups:?}");
    let row = against["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "s-clean")
        .unwrap();
    assert_eq!(row["measured"].as_array().unwrap().len(), 2, "{row}");
}

/// Every path under `root` (relative, sorted) with its file bytes: a snapshot of a folder tree.
fn tree(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            if path.is_dir() {
                out.push((relative, None));
                stack.push(path);
            } else {
                out.push((relative, Some(std::fs::read(&path).unwrap())));
            }
        }
    }
    out.sort();
    out
}

/// A fake HOME with three agent hosts: Claude Code, Codex and the shared `.agents`.
fn fake_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    for host in [".claude", ".codex", ".agents"] {
        std::fs::create_dir_all(home.path().join(host)).unwrap();
    }
    // Personal data next to the skills folders, which must never be copied.
    write(
        home.path(),
        ".claude/settings.json",
        "{\"apiKeyHelper\": \"personal\"}",
    );
    home
}

fn install_cmd(home: &Path, state: &Path) -> Command {
    let mut command = binary(state);
    command.env("HOME", home).arg("install");
    command
}

#[test]
fn install_into_three_hosts_verified_then_uninstall() {
    let home = fake_home();
    let state = tempfile::tempdir().unwrap();
    let bundled = std::fs::read(repository().join("assets/skill-lift/SKILL.md")).unwrap();

    let before = tree(home.path());
    let output = install_cmd(home.path(), state.path())
        .arg("--dry-run")
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.matches("would install").count(), 3, "{stdout}");
    assert_eq!(tree(home.path()), before, "--dry-run wrote something");

    let output = install_cmd(home.path(), state.path()).output().unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.matches("(fingerprint verified)").count(),
        3,
        "{stdout}"
    );
    assert!(
        stdout.contains("gemini") && stdout.contains("skipped"),
        "{stdout}"
    );
    let home_text = home.path().display().to_string();
    for skills in [".claude/skills", ".codex/skills", ".agents/skills"] {
        let dir = home.path().join(skills);
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["skill-lift"], "{skills}: staging leftovers?");
        let installed = tree(&dir.join("skill-lift"));
        assert_eq!(
            installed,
            vec![("SKILL.md".to_string(), Some(bundled.clone()))]
        );
        let copied = String::from_utf8(bundled.clone()).unwrap();
        assert!(!copied.contains(&home_text) && !copied.contains("personal"));
    }
    assert!(
        !home.path().join(".gemini").exists(),
        "a host folder was created"
    );

    // Again: unchanged.
    let output = install_cmd(home.path(), state.path()).output().unwrap();
    assert_eq!(
        streams(&output).0.matches("unchanged").count(),
        3,
        "{:?}",
        streams(&output)
    );

    // Uninstall (dry run first).
    let before = tree(home.path());
    let output = install_cmd(home.path(), state.path())
        .args(["--uninstall", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(streams(&output).0.matches("would remove").count(), 3);
    assert_eq!(tree(home.path()), before);
    let output = install_cmd(home.path(), state.path())
        .arg("--uninstall")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    for skills in [".claude/skills", ".codex/skills", ".agents/skills"] {
        assert!(!home.path().join(skills).join("skill-lift").exists());
    }
    assert!(home.path().join(".claude/settings.json").is_file());
}

#[test]
fn install_failing_half_way_leaves_nothing_behind() {
    let home = fake_home();
    let state = tempfile::tempdir().unwrap();
    // An older copy of skill-lift's own skill in the first host: restored on rollback.
    let old = "---\nname: skill-lift\ndescription: Measures whether a skill helps with paired runs with and without it. Use when asked.\n---\nold body\n";
    write(home.path(), ".claude/skills/skill-lift/SKILL.md", old);
    // The second host (codex) cannot take it: its skills folder is read-only. Running as root
    // ignores permissions, so then a file stands where the folder should be.
    let codex_skills = home.path().join(".codex/skills");
    std::fs::create_dir_all(&codex_skills).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&codex_skills, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let privileged = std::fs::write(codex_skills.join("probe"), "x").is_ok();
    if privileged {
        std::fs::remove_file(codex_skills.join("probe")).unwrap();
        std::fs::remove_dir(&codex_skills).unwrap();
        std::fs::write(&codex_skills, "not a folder").unwrap();
    }
    let before = tree(home.path());
    let output = install_cmd(home.path(), state.path()).output().unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stdout.contains("FAILED"), "{stdout}");
    assert!(stdout.contains("rolled back"), "{stdout}");
    assert!(
        stdout.contains(".codex/skills"),
        "the error names the folder: {stdout}"
    );
    // Byte for byte as before: the old copy restored, no staging folder, no empty skills folder.
    assert_eq!(tree(home.path()), before, "{stdout}");
    assert!(!home.path().join(".agents/skills").exists());

    // The same with the failing host first in line is also clean (nothing created anywhere).
    let output = install_cmd(home.path(), state.path())
        .args(["--host", "codex", "--host", "agents"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(tree(home.path()), before);
    #[cfg(unix)]
    if !privileged {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&codex_skills, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn install_refuses_a_foreign_skill_and_reports_no_host() {
    let home = fake_home();
    let state = tempfile::tempdir().unwrap();
    write(
        home.path(),
        ".agents/skills/skill-lift/SKILL.md",
        "---\nname: skill-lift\ndescription: Someone else's skill.\n---\nmine\n",
    );
    let before = tree(home.path());
    let output = install_cmd(home.path(), state.path()).output().unwrap();
    let (stdout, _) = streams(&output);
    assert_eq!(output.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("different skill"), "{stdout}");
    assert_eq!(tree(home.path()), before);
    // Uninstall keeps it too.
    let output = install_cmd(home.path(), state.path())
        .arg("--uninstall")
        .output()
        .unwrap();
    assert!(
        streams(&output).0.contains("kept"),
        "{:?}",
        streams(&output)
    );
    assert!(
        home.path()
            .join(".agents/skills/skill-lift/SKILL.md")
            .is_file()
    );

    let empty = tempfile::tempdir().unwrap();
    let output = install_cmd(empty.path(), state.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(4));
    assert!(streams(&output).1.contains("no agent host found"));
}

/// `--against` a results folder: the recorded run fixture (7 cases scored in both arms, lift
/// 3/7) is paired with a skill of the same name once the manifest carries that skill's
/// fingerprint; with any other fingerprint it is listed, unpaired.
#[test]
fn lint_against_a_results_folder_reads_run_folders() {
    let state = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let skill = root.path().join("pirate-greeting");
    write(
        &skill,
        "SKILL.md",
        "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\nBegin every answer with Aye!\n",
    );
    let results = root.path().join("results");
    let run = results.join("run-1");
    let fixture = repository().join("tests/fixtures/recorded-run");
    for entry in tree(&fixture) {
        match entry {
            (relative, None) => std::fs::create_dir_all(run.join(relative)).unwrap(),
            (relative, Some(bytes)) => {
                std::fs::create_dir_all(run.join(&relative).parent().unwrap()).unwrap();
                std::fs::write(run.join(relative), bytes).unwrap();
            }
        }
    }
    let against = ["--against", results.to_str().unwrap()];
    let (value, _, stderr) = lint_json(state.path(), &[&skill], &against);
    let row = &value["against"]["rows"][0];
    assert!(
        row["measured"].as_array().unwrap().is_empty(),
        "{row}\n{stderr}"
    );
    assert!(
        row["note"].as_str().unwrap().contains("other fingerprint"),
        "{row}"
    );

    let fingerprint = value["skills"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let manifest_path = run.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest["asset"]["fingerprint"] = json!(fingerprint);
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let (value, _, stderr) = lint_json(state.path(), &[&skill], &against);
    let measured = &value["against"]["rows"][0]["measured"][0];
    assert_eq!(measured["cases"], 7, "{value:#}\n{stderr}");
    assert!(
        (measured["lift"].as_f64().unwrap() - 3.0 / 7.0).abs() < 1e-12,
        "{measured}"
    );
    assert_eq!(value["against"]["paired"], 1);
    assert!(
        value["against"]["spearman_rho"].is_null(),
        "one skill has no rho"
    );
}

/// A skill folder `name` with `frontmatter` lines, `body`, and one eval case (so `run` can be
/// asked to run it).
fn declaring_skill(root: &Path, name: &str, frontmatter: &str, body: &str) -> PathBuf {
    let dir = root.join(name);
    write(
        &dir,
        "SKILL.md",
        &format!("---\nname: {name}\n{frontmatter}\n---\n# {name}\n\n{body}\n"),
    );
    write(
        &dir,
        "evals/evals.json",
        &format!(
            r#"{{"skill_name": "{name}", "evals": [{{"id": "a", "prompt": "Help?", "checks": [{{"type": "contains", "value": "x"}}]}}]}}"#
        ),
    );
    dir
}

/// `env --format json` of `dir` against the runner profile file `runner`: the exit code and
/// the findings.
fn env_findings(state: &Path, dir: &Path, runner: &Path) -> (i32, Vec<Value>) {
    let output = binary(state)
        .args(["env", "--format", "json", "--runner"])
        .arg(runner)
        .arg(dir)
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    let value: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("env JSON: {e}\n{stdout}\n{stderr}"));
    (
        output.status.code().unwrap(),
        value["report"]["findings"].as_array().unwrap().clone(),
    )
}

fn finding_of<'a>(findings: &'a [Value], kind: &str) -> &'a Value {
    findings
        .iter()
        .find(|f| f["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} finding: {findings:#?}"))
}

/// The lines `run` prints on stderr before it stops at the dead runner's pre-flight check.
fn run_stderr(state: &Path, root: &Path, dir: &Path, runner: &Path) -> String {
    let output = binary(state)
        .current_dir(root)
        .args(["run", "-k", "1", "--runner"])
        .arg(runner)
        .arg("--out")
        .arg(root.join("results"))
        .arg(dir)
        .output()
        .unwrap();
    let (_, stderr) = streams(&output);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr
            .lines()
            .next()
            .unwrap_or("")
            .starts_with("red flag: "),
        "red flags come first: {stderr}"
    );
    stderr
}

/// Issue 35's first acceptance point: a skill declaring a 200k context window on an 8k-context
/// profile, one that always answers in Japanese on an English locale, and one needing vision on
/// a text-only runner each get their red flag, quoting the sentence, in `env` and before `run`.
#[test]
fn declared_assumptions_are_red_flags_quoted_in_env_and_before_run() {
    let state = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let runner = root.path().join("small.toml");
    write(
        root.path(),
        "small.toml",
        "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\ncontext_tokens = 8192\n",
    );
    let cases = [
        (
            declaring_skill(
                root.path(),
                "long-reader",
                "description: Summarises whole books. Requires a 200k-token context window.",
                "Read the whole book before you summarise it, chapter by chapter, and keep the summary short.",
            ),
            "context_window",
            3,
            "Requires a 200k-token context window.",
            "the model's is 8192 tokens",
        ),
        (
            declaring_skill(
                root.path(),
                "japanese-support",
                "description: Answers support tickets. Use when a ticket arrives.",
                "Read the ticket and the customer's history first.\nAlways answer in Japanese, even when the ticket is in English.",
            ),
            "output_language",
            8,
            "Always answer in Japanese, even when the ticket is in English.",
            "your locale is en_US.UTF-8 (English)",
        ),
        (
            declaring_skill(
                root.path(),
                "screenshot-review",
                "description: Reviews UI screenshots. Use when a screenshot is attached.\ncompatibility: Requires a vision-capable model",
                "Look at the screenshot and list every misaligned element with its position on the page.",
            ),
            "vision",
            4,
            "Requires a vision-capable model",
            "sends text only",
        ),
    ];
    for (dir, kind, line, quote, why) in &cases {
        let (code, findings) = env_findings(state.path(), dir, &runner);
        assert_eq!(code, 1, "a red flag fails env: {findings:#?}");
        let finding = finding_of(&findings, kind);
        assert_eq!(finding["status"], "missing", "{finding:#}");
        assert_eq!(finding["evidence"][0]["file"], "SKILL.md");
        assert_eq!(finding["evidence"][0]["line"], *line, "{finding:#}");
        assert_eq!(finding["evidence"][0]["text"], *quote);
        assert!(
            finding["detail"].as_str().unwrap().contains(why),
            "{finding:#}"
        );
        // The text report quotes it too.
        let output = binary(state.path())
            .args(["env", "--runner"])
            .arg(&runner)
            .arg(dir)
            .output()
            .unwrap();
        let (stdout, _) = streams(&output);
        assert!(
            stdout.contains(&format!("at SKILL.md:{line}: {quote}")),
            "{stdout}"
        );
        let stderr = run_stderr(state.path(), root.path(), dir, &runner);
        let flag = stderr
            .lines()
            .find(|l| l.starts_with(&format!("red flag: {kind} ")))
            .unwrap_or_else(|| panic!("no {kind} red flag before the run: {stderr}"));
        assert!(
            flag.ends_with(&format!("(at SKILL.md:{line}: {quote})")),
            "{flag}"
        );
    }
}

/// The other side of each check: a profile that meets the declaration gives no red flag, and
/// a profile that says nothing gives "unknown", never a guess.
#[test]
fn declared_assumptions_met_or_unknown_are_not_red_flags() {
    let state = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "big.toml",
        "kind = \"claude-code\"\nmodel = \"claude-sonnet-4-5\"\ncontext_tokens = 200000\n",
    );
    write(
        root.path(),
        "blind.toml",
        "kind = \"claude-code\"\nmodel = \"claude-sonnet-4-5\"\nvision = false\n",
    );
    write(
        root.path(),
        "mystery.toml",
        "kind = \"command\"\nmodel = \"m\"\ncommand = [\"my-agent\", \"{prompt}\"]\n",
    );
    let dir = declaring_skill(
        root.path(),
        "screenshot-review",
        "description: Reviews UI screenshots. Requires a 200k-token context window.\ncompatibility: Requires a vision-capable model\nallowed-tools: Read Write",
        "Look at the screenshot and list every misaligned element with its position on the page.\nIf the user writes in Japanese, answer in Japanese.",
    );
    let (code, findings) = env_findings(state.path(), &dir, &root.path().join("big.toml"));
    assert_eq!(code, 0, "{findings:#?}");
    for kind in ["context_window", "vision", "tool_permission"] {
        assert_eq!(finding_of(&findings, kind)["status"], "satisfied", "{kind}");
    }
    assert!(
        findings.iter().all(|f| f["kind"] != "output_language"),
        "a conditional language rule is not a requirement: {findings:#?}"
    );
    let (code, findings) = env_findings(state.path(), &dir, &root.path().join("blind.toml"));
    assert_eq!(code, 1);
    assert_eq!(finding_of(&findings, "vision")["status"], "missing");
    let (code, findings) = env_findings(state.path(), &dir, &root.path().join("mystery.toml"));
    assert_eq!(code, 0, "{findings:#?}");
    for kind in ["context_window", "vision", "tool_permission"] {
        let finding = finding_of(&findings, kind);
        assert_eq!(finding["status"], "unknown", "{finding:#}");
    }
    assert!(
        finding_of(&findings, "context_window")["detail"]
            .as_str()
            .unwrap()
            .contains("context_tokens"),
        "says which profile key would tell"
    );
}
