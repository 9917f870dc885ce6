//! Integration tests of shipping skill-lift (issue 18): an installed binary that works from an
//! empty folder (built-in runner profiles, `init`, `setup`/`serve local-model`), files people can
//! share (0644 under umask 022, a private state folder), progress lines on a pipe, and
//! `compare`. The real binary, copied out of the build folder as `cargo install` would, against
//! loopback mock servers.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use support::cli::{described, python_chat_mock};
use support::mock_openai::{MockBehaviour, MockServer};

/// The binary copied into `<root>/bin/skill-lift`, away from the repository (as
/// `cargo install --path . --root <root>` leaves it).
fn install(root: &Path) -> PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let installed = bin.join("skill-lift");
    // Copied by `cp`, not `std::fs::copy`: while this process holds the new file open for
    // writing, a child another test thread forks inherits that descriptor until it execs, and
    // executing the copy then fails with ETXTBSY ("Text file busy"). `cp` writes it in a process
    // of its own, so no descriptor of it ever exists here.
    let copied = Command::new("cp")
        .arg(env!("CARGO_BIN_EXE_skill-lift"))
        .arg(&installed)
        .status()
        .unwrap();
    assert!(copied.success(), "cp of the binary failed");
    installed
}

/// `skill-lift ARGS` under umask 022 in `cwd`, with its own state folder and no inherited
/// skill-lift settings.
fn skill_lift(binary: &Path, cwd: &Path, state: &Path, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("umask 022; exec \"$@\"")
        .arg("sh")
        .arg(binary)
        .args(args)
        .current_dir(cwd)
        .env_remove("SKILL_LIFT_RUNNER")
        .env_remove("SKILL_LIFT_RESULTS")
        .env_remove("SKILL_LIFT_RUNNERS")
        .env_remove("SKILL_LIFT_PROGRESS")
        .env_remove("SKILL_LIFT_PROGRESS_INTERVAL")
        .env("SKILL_LIFT_HOME", state)
        .env("CI", "true")
        .output()
        .unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Every file and folder under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

/// A runner profile for the mock, outside the working folder (so only `--runner FILE` finds it).
fn mock_profile(dir: &Path, base_url: &str, extra: &str) -> PathBuf {
    let path = dir.join("mock.toml");
    std::fs::write(
        &path,
        format!(
            "kind = \"openai-chat\"\nbase_url = \"{base_url}\"\nmodel = \"mock-model\"\ntimeout_s = 30\nretry_base_delay_s = 0.01\n{extra}"
        ),
    )
    .unwrap();
    path
}

/// The mock answers with the example skill's opening phrase when the skill is in the prompt.
fn status_update_mock(delay_ms: u64) -> MockServer {
    MockServer::start(MockBehaviour {
        marker: "Every reply starts with \"Status update:\"".to_string(),
        with_answer: "Status update: the work is on track.".to_string(),
        without_answer: "The work is on track.".to_string(),
        delay: std::time::Duration::from_millis(delay_ms),
        ..MockBehaviour::default()
    })
}

#[test]
fn installed_binary_inits_runs_and_compares_from_an_empty_folder_with_shareable_files() {
    let root = tempfile::tempdir().unwrap();
    let binary = install(&root.path().join("install"));
    let work = root.path().join("empty");
    std::fs::create_dir_all(&work).unwrap();
    let state = root.path().join("state/skill-lift-home");
    let elsewhere = root.path().join("profiles");
    std::fs::create_dir_all(&elsewhere).unwrap();

    // The shipped profiles are built in: listed from an empty folder, with where they come from.
    let output = skill_lift(&binary, &work, &state, &["runners"]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let listing = String::from_utf8_lossy(&output.stdout).into_owned();
    for name in ["local", "local-judge", "openai", "claude-code"] {
        let line = listing
            .lines()
            .find(|line| line.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{listing}"));
        assert!(line.ends_with("built-in"), "{line}");
    }
    // A runners/ folder in the working folder overrides a built-in, and the listing says so.
    let project = root.path().join("project");
    std::fs::create_dir_all(project.join("runners")).unwrap();
    std::fs::write(
        project.join("runners/openai.toml"),
        "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"mine\"\n",
    )
    .unwrap();
    let output = skill_lift(&binary, &project, &state, &["runners", "--json"]);
    let listed: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let openai: Vec<&Value> = listed.iter().filter(|p| p["name"] == "openai").collect();
    assert_eq!(openai.len(), 2, "{listed:?}");
    assert_eq!(openai[0]["origin"], "folder");
    assert_eq!(openai[0]["model"], "mine");
    assert_eq!(openai[0]["active"], true);
    assert_eq!(openai[1]["origin"], "builtin");
    assert_eq!(openai[1]["active"], false);
    // `runners NAME` prints the built-in profile's text, which now names the binary, not a
    // repository script.
    let output = skill_lift(&binary, &work, &state, &["runners", "local"]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let local = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        local.contains("\"{skill_lift}\", \"serve\", \"local-model\""),
        "{local}"
    );

    // init scaffolds a skill whose eval set loads and runs.
    let output = skill_lift(&binary, &work, &state, &["init", "my-skill"]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    assert!(work.join("my-skill/SKILL.md").is_file());
    let evals: Value = serde_json::from_str(
        &std::fs::read_to_string(work.join("my-skill/evals/evals.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(evals["skill_name"], "my-skill");
    assert_eq!(evals["evals"].as_array().unwrap().len(), 10);
    assert!(work.join("my-skill/evals/files/notes.txt").is_file());
    // An unknown runner names where it looked, built-ins included.
    let output = skill_lift(
        &binary,
        &work,
        &state,
        &["run", "my-skill", "--runner", "nope"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", described(&output));
    assert!(
        described(&output).contains("the built-in profiles ("),
        "{}",
        described(&output)
    );
    // A second init never overwrites.
    let output = skill_lift(&binary, &work, &state, &["init", "my-skill"]);
    assert_eq!(output.status.code(), Some(2), "{}", described(&output));
    assert!(
        described(&output).contains("already has an eval set"),
        "{}",
        described(&output)
    );

    let server = status_update_mock(0);
    let profile = mock_profile(&elsewhere, &server.base_url(), "");
    let profile_arg = profile.to_str().unwrap();
    let output = skill_lift(
        &binary,
        &work,
        &state,
        &[
            "run",
            "my-skill",
            "--runner",
            profile_arg,
            "-k",
            "2",
            "--run-id",
            "a",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let run_a = work.join("results/a");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run_a.join("summary.json")).unwrap())
            .unwrap();
    // Nine cases ask for the opening phrase (0 → 100%), the negative case fails in both arms.
    assert_eq!(summary["lift"]["estimate"], 0.9, "{summary}");
    assert_eq!(summary["trials"]["recorded"], 40);

    // Reports and transcripts are 0644 (folders 0755) under umask 022.
    let files = walk(&run_a);
    assert!(files.iter().any(|p| p.ends_with("report.html")));
    assert!(
        files
            .iter()
            .any(|p| p.to_string_lossy().contains("transcripts/"))
    );
    for path in &files {
        let expected = if path.is_dir() { 0o755 } else { 0o644 };
        assert_eq!(mode(path), expected, "{}", path.display());
    }
    assert_eq!(mode(&run_a), 0o755);
    // The state folder (baseline store) stays private.
    assert_eq!(mode(&state), 0o700, "{}", state.display());
    let state_files: Vec<PathBuf> = walk(&state).into_iter().filter(|p| p.is_file()).collect();
    assert!(
        state_files
            .iter()
            .any(|p| p.ends_with("baseline-results.json"))
    );
    for path in &state_files {
        assert_eq!(mode(path), 0o600, "{}", path.display());
    }

    // The same suite on another model, then compare: one table, four files, per-case changes.
    let output = skill_lift(
        &binary,
        &work,
        &state,
        &[
            "run",
            "my-skill",
            "--runner",
            profile_arg,
            "-k",
            "1",
            "--run-id",
            "b",
            "--model",
            "other-model",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let output = skill_lift(
        &binary,
        &work,
        &state,
        &["compare", "results/a", "results/b", "--out", "cmp"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let table = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        table.contains("| model | mock-model | other-model | differs |"),
        "{table}"
    );
    assert!(table.contains("| K | 2 | 1 | differs |"), "{table}");
    // Equal numbers are `same`; a difference that rounds to nothing is never shown as ±0.
    assert!(
        table.contains("| paired cases (N) | 10 | 10 | same |"),
        "{table}"
    );
    assert!(
        !table.contains("+0.000") && !table.contains("-0.000"),
        "{table}"
    );
    assert!(
        table.contains("| lift (pass rate, with − without) | +90.0 pp"),
        "{table}"
    );
    assert!(table.contains("| positive-01 |"), "{table}");
    for name in [
        "compare.md",
        "compare.csv",
        "compare-cases.csv",
        "compare.json",
        "compare.html",
    ] {
        let path = work.join("cmp").join(name);
        assert_eq!(mode(&path), 0o644, "{}", path.display());
    }
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("cmp/compare.json")).unwrap())
            .unwrap();
    assert_eq!(json["cases"].as_array().unwrap().len(), 10);
    let html = std::fs::read_to_string(work.join("cmp/compare.html")).unwrap();
    assert!(html.contains("<td>other-model</td>"), "{html}");
    let csv = std::fs::read_to_string(work.join("cmp/compare-cases.csv")).unwrap();
    assert!(csv.starts_with("case_id,a_with,a_without,a_lift,"), "{csv}");

    // A run of another eval set is refused, naming the field.
    let evals_path = work.join("my-skill/evals/evals.json");
    let mut changed = evals.clone();
    changed["evals"].as_array_mut().unwrap().pop();
    std::fs::write(&evals_path, serde_json::to_string_pretty(&changed).unwrap()).unwrap();
    let output = skill_lift(
        &binary,
        &work,
        &state,
        &[
            "run",
            "my-skill",
            "--runner",
            profile_arg,
            "-k",
            "1",
            "--run-id",
            "c",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let output = skill_lift(
        &binary,
        &work,
        &state,
        &["compare", "results/a", "results/c"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", described(&output));
    let error = described(&output);
    assert!(error.contains("`eval_set.digest` differs"), "{error}");
    assert!(error.contains("only in A: [file-01]"), "{error}");
}

#[test]
fn a_piped_run_prints_progress_lines_and_never_silences_them() {
    let root = tempfile::tempdir().unwrap();
    let binary = install(&root.path().join("install"));
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let state = root.path().join("state");
    let output = skill_lift(&binary, &work, &state, &["init", "s"]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let server = status_update_mock(150);
    let profile = mock_profile(root.path(), &server.base_url(), "concurrency = 1\n");
    let profile_arg = profile.to_str().unwrap();
    // 10 cases × 2 arms × K = 2 = 40 trials at ≥ 0.15 s each, one at a time: ≥ 6 s.
    let output = skill_lift(
        &binary,
        &work,
        &state,
        &[
            "run",
            "s",
            "--runner",
            profile_arg,
            "-k",
            "2",
            "--run-id",
            "lines",
            "--progress-interval",
            "0.4",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("skill-lift: ") && line.contains("/40 trials ("))
        .collect();
    assert!(lines.len() >= 3, "{stderr}");
    for line in &lines {
        assert!(line.contains(" elapsed · ETA "), "{line}");
        assert!(line.contains("lift"), "{line}");
    }
    let done: Vec<u64> = lines
        .iter()
        .map(|line| {
            line.trim_start_matches("skill-lift: ")
                .split('/')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(done.windows(2).all(|w| w[0] <= w[1]), "{done:?}");
    assert!(done.iter().any(|&d| d > 0 && d < 40), "{done:?}");
    // --progress never: no status line.
    let output = skill_lift(
        &binary,
        &work,
        &state,
        &[
            "run",
            "s",
            "--runner",
            profile_arg,
            "-k",
            "2",
            "--run-id",
            "quiet",
            "--progress-interval",
            "0.4",
            "--progress",
            "never",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("/16 trials ("),
        "{}",
        described(&output)
    );
}

/// A stand-in for the local model's Python environment: `python -c …` prints a model path,
/// `python -m llama_cpp.server … --port P` serves an OpenAI-compatible mock on P.
const FAKE_PYTHON: &str = r#"#!/bin/sh
if [ "$1" = "-c" ]; then
  case "$2" in
    *gguf*) echo /fake/SmolLM2.gguf ;;
  esac
  exit 0
fi
port=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--port" ]; then port="$2"; fi
  shift
done
exec python3 "$(dirname "$0")/mock_server.py" "$port"
"#;

#[test]
fn the_local_profile_sets_up_and_serves_its_model_from_any_folder() {
    let root = tempfile::tempdir().unwrap();
    let binary = install(&root.path().join("install"));
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let state = root.path().join("state");
    let cache = root.path().join("cache");
    let venv_bin = cache.join("local-model/venv/bin");
    std::fs::create_dir_all(&venv_bin).unwrap();
    std::fs::write(venv_bin.join("python"), FAKE_PYTHON).unwrap();
    std::fs::set_permissions(
        venv_bin.join("python"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    // The mock server the fake Python runs: the opening phrase when the skill is in the prompt.
    let mock = python_chat_mock(
        r#""Status update: fine." if 'Every reply starts with "Status update:"' in system else "Fine.""#,
        "smollm2-135m-instruct",
    );
    std::fs::write(venv_bin.join("mock_server.py"), mock).unwrap();
    let with_cache = |args: &[&str]| {
        Command::new(&binary)
            .args(args)
            .current_dir(&work)
            .env("SKILL_LIFT_CACHE", &cache)
            .env("SKILL_LIFT_HOME", &state)
            .env("CI", "true")
            .env_remove("SKILL_LIFT_RUNNERS")
            .output()
            .unwrap()
    };
    // The embedded setup script finds the (fake) environment ready.
    let output = with_cache(&["setup", "local-model"]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    assert!(
        described(&output).contains("local model: ready"),
        "{}",
        described(&output)
    );
    // Without an environment, serve says what to run.
    let output = Command::new(&binary)
        .args(["serve", "local-model", "--port", "1"])
        .env("SKILL_LIFT_CACHE", root.path().join("no-cache"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", described(&output));
    assert!(
        described(&output).contains("skill-lift setup local-model"),
        "{}",
        described(&output)
    );

    // The built-in `local` profile on a free port (a fixed port is not for tests): its managed
    // server is `skill-lift serve local-model`, started and stopped by the run.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let output = with_cache(&["runners", "local"]);
    let profile = String::from_utf8_lossy(&output.stdout).replace("18765", &port.to_string());
    let profile_path = root.path().join("local-free-port.toml");
    std::fs::write(&profile_path, profile).unwrap();
    let output = with_cache(&["init", "my-skill"]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    let output = with_cache(&[
        "run",
        "my-skill",
        "--runner",
        profile_path.to_str().unwrap(),
        "-k",
        "1",
        "--run-id",
        "local",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", described(&output));
    assert!(
        described(&output).contains("started model server"),
        "{}",
        described(&output)
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(work.join("results/local/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["lift"]["estimate"], 0.9, "{summary}");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "server stopped after the run"
    );
}
