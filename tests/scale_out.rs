//! Integration tests of the scale-out paths, through the real binary: `skill-lift changed` on
//! real git repositories, `--shard auto` shards launched as a Kubernetes Indexed Job launches
//! them (against the loopback mock model server) and merged from their shared folder, and the
//! shipped Kubernetes manifest and GitHub workflow files.
#![allow(clippy::disallowed_methods)]
// tests write their fixtures directly, not through src/disk/

// Test diagnostics go to the test harness, not through skill-lift's terminal writer.
#![allow(clippy::disallowed_macros)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::cli::{
    PIRATE_SKILL_MD, assert_exit, mixed_eval_set, openai_profile, state_dir as test_state_dir,
    stderr, stdout, write,
};
use support::mock_openai::{MockBehaviour, MockServer};

/// Variables `--shard auto` reads; cleared so the machine running the tests cannot leak in.
const SHARD_VARS: [&str; 9] = [
    "SKILL_LIFT_SHARD_INDEX",
    "SKILL_LIFT_SHARD_COUNT",
    "JOB_COMPLETION_INDEX",
    "CI_NODE_INDEX",
    "CI_NODE_TOTAL",
    "CIRCLE_NODE_INDEX",
    "CIRCLE_NODE_TOTAL",
    "BUILDKITE_PARALLEL_JOB",
    "BUILDKITE_PARALLEL_JOB_COUNT",
];

fn binary() -> Command {
    let mut command = support::cli::binary();
    for var in SHARD_VARS {
        command.env_remove(var);
    }
    command
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// skill-lift changed

/// A git repository in a temporary folder, committed through the real `git`.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        let repo = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        let output = Command::new("git")
            .current_dir(self.path())
            .args([
                "-c",
                "user.name=test",
                "-c",
                "user.email=test@example.invalid",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .expect("git runs");
        assert!(output.status.success(), "git {args:?}: {}", stderr(&output));
        stdout(&output).trim().to_string()
    }

    fn write(&self, relative: &str, text: &str) {
        write(self.path(), relative, text);
    }

    fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    fn skill(&self, folder: &str, name: &str, body: &str) {
        self.write(
            &format!("{folder}/SKILL.md"),
            &format!("---\nname: {name}\ndescription: Use for {name}.\n---\n{body}\n"),
        );
    }

    fn changed(&self, args: &[&str]) -> Output {
        binary()
            .current_dir(self.path())
            .arg("changed")
            .args(args)
            .output()
            .unwrap()
    }
}

fn fingerprint_of(dir: &Path) -> String {
    let out = tempfile::tempdir().unwrap();
    let output = binary()
        .arg("fingerprint")
        .arg(dir)
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("fingerprint-report.json")).unwrap(),
    )
    .unwrap();
    report["entries"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn changed_lists_exactly_the_skills_whose_fingerprint_changed() {
    let repo = Repo::new();
    repo.skill("skills/readme-only", "readme-only", "Body A.");
    repo.write("skills/readme-only/README.md", "# About\n");
    repo.write("skills/readme-only/evals/evals.json", "{\"evals\": []}");
    repo.skill("skills/edited", "edited", "Body B.");
    repo.write("skills/edited/scripts/run.py", "print(1)\n");
    repo.write("README.md", "repository readme\n");
    let base = repo.commit("base");

    // A README-only edit (and an eval-set edit: evals/ is not part of the fingerprint), a
    // SKILL.md edit, and a new skill.
    repo.write("skills/readme-only/README.md", "# About, reworded\n");
    repo.write("skills/readme-only/evals/evals.json", "{\"evals\": [1]}");
    repo.skill("skills/edited", "edited", "Body B, sharper.");
    repo.skill("skills/brand-new", "brand-new", "Body C.");
    repo.write("README.md", "repository readme, edited\n");
    let head = repo.commit("head");

    let output = repo.changed(&["--base", &base, "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(
        text.lines().count(),
        1,
        "one line for $GITHUB_OUTPUT: {text}"
    );
    let matrix: Value = serde_json::from_str(&text).unwrap();
    let paths: Vec<&str> = matrix
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["skills/edited", "skills/brand-new"], "{text}");
    assert_eq!(matrix[0]["status"], "changed");
    assert_eq!(matrix[0]["name"], "edited");
    assert_eq!(matrix[1]["status"], "added");
    assert_eq!(matrix[1]["base_fingerprint"], Value::Null);
    assert!(
        stderr(&output).contains(
            "2 skill(s) to evaluate (1 changed, 1 added); 0 deleted, 0 moved, 1 unchanged"
        ),
        "{}",
        stderr(&output)
    );
    // The fingerprints are the ones `skill-lift fingerprint` computes on a checkout.
    assert_eq!(
        matrix[0]["head_fingerprint"].as_str().unwrap(),
        fingerprint_of(&repo.path().join("skills/edited"))
    );
    assert_eq!(
        matrix[1]["head_fingerprint"].as_str().unwrap(),
        fingerprint_of(&repo.path().join("skills/brand-new"))
    );
    repo.git(&["checkout", "-q", &base]);
    assert_eq!(
        matrix[0]["base_fingerprint"].as_str().unwrap(),
        fingerprint_of(&repo.path().join("skills/edited"))
    );
    repo.git(&["checkout", "-q", "main"]);

    // The same through explicit refs and as text.
    let output = repo.changed(&["--base", "HEAD~1", "--head", &head]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<String> = stdout(&output).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("changed  skills/edited  (edited)  sha256:"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("added    skills/brand-new  (brand-new)  sha256:"),
        "{lines:?}"
    );

    // Deleted and moved skills are reported apart and never enter the matrix.
    repo.git(&["rm", "-q", "-r", "skills/edited"]);
    repo.git(&["mv", "skills/brand-new", "skills/renamed"]);
    repo.commit("delete and move");
    let output = repo.changed(&["--base", &head, "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "[]");
    let err = stderr(&output);
    assert!(
        err.contains("deleted (not listed): skills/edited (edited)"),
        "{err}"
    );
    assert!(
        err.contains(
            "moved (fingerprint unchanged, not listed): skills/brand-new -> skills/renamed"
        ),
        "{err}"
    );
    let output = repo.changed(&["--base", &head]);
    let text = stdout(&output);
    assert!(
        text.contains("moved    skills/renamed  (brand-new)  from skills/brand-new"),
        "{text}"
    );
    assert!(
        text.contains("deleted  skills/edited  (edited)  was sha256:"),
        "{text}"
    );

    // Limiting to a folder; a skill outside it is not looked at.
    let output = repo.changed(&["--base", &base, "--format", "json", "skills/readme-only"]);
    assert_eq!(stdout(&output).trim(), "[]", "{}", stderr(&output));
}

#[test]
fn changed_merge_base_ignores_what_the_base_branch_did_meanwhile() {
    let repo = Repo::new();
    repo.skill("skills/a", "a", "A.");
    repo.skill("skills/b", "b", "B.");
    repo.commit("start");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.skill("skills/a", "a", "A, changed on the branch.");
    repo.commit("branch work");
    repo.git(&["checkout", "-q", "main"]);
    repo.skill("skills/b", "b", "B, changed on main meanwhile.");
    repo.commit("main work");
    let direct = repo.changed(&["--base", "main", "--head", "feature", "--format", "json"]);
    let paths = |output: &Output| -> Vec<String> {
        serde_json::from_slice::<Vec<Value>>(&output.stdout)
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(paths(&direct), vec!["skills/a", "skills/b"]);
    let merge_base = repo.changed(&[
        "--base",
        "main",
        "--head",
        "feature",
        "--merge-base",
        "--format",
        "json",
    ]);
    assert_eq!(
        paths(&merge_base),
        vec!["skills/a"],
        "{}",
        stderr(&merge_base)
    );
}

#[test]
fn changed_refuses_unknown_refs_and_non_repositories() {
    let repo = Repo::new();
    repo.skill("s", "s", "S.");
    repo.commit("one");
    let output = repo.changed(&["--base", "no-such-branch"]);
    assert_exit(&output, 2, "`no-such-branch` is not a commit");
    let output = repo.changed(&["--base=--output=x"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let elsewhere = tempfile::tempdir().unwrap();
    let output = binary()
        .current_dir(elsewhere.path())
        .args(["changed", "--base", "HEAD"])
        .output()
        .unwrap();
    assert_exit(&output, 2, "not inside a git repository");
}

// ---------------------------------------------------------------------------------------------
// --shard auto as a Kubernetes Indexed Job, merged from the shared folder

/// A project folder with a skill, a mixed eval set (known lift 1/3) and a mock runner profile.
fn project(base_url: &str, cases: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "skill/pirate-greeting/SKILL.md",
        PIRATE_SKILL_MD,
    );
    write(
        dir.path(),
        "skill/pirate-greeting/evals/evals.json",
        &mixed_eval_set(cases),
    );
    write(
        dir.path(),
        "runners/mock.toml",
        &openai_profile(base_url, 4, ""),
    );
    dir
}

fn run_in(project: &Path) -> Command {
    let mut command = binary();
    command
        .current_dir(project)
        .args([
            "run",
            "skill/pirate-greeting",
            "--runner",
            "mock",
            "-k",
            "2",
        ])
        .args(["--seed", "7", "--bootstrap-resamples", "2000", "--quiet"]);
    command
}

/// `summary.json` without the fields that measure this machine's clock.
fn summary_without_timings(run_dir: &Path) -> Value {
    let mut summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    for arm in ["with_skill", "without_skill"] {
        summary["arms"][arm]["mean_wall_s"] = Value::Null;
        summary["arms"][arm]["mean_model_latency_s"] = Value::Null;
    }
    summary
}

#[test]
fn indexed_job_shards_merge_to_the_unsharded_analysis() {
    let server = MockServer::start(MockBehaviour::default());
    let dir = project(&server.base_url(), 12);
    let output = run_in(dir.path())
        .args(["--out", "results", "--run-id", "whole"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // Four pods of one Indexed Job: Kubernetes sets JOB_COMPLETION_INDEX; the manifest sets
    // SKILL_LIFT_SHARD_COUNT. All four run at once and write into one shared folder.
    let shared = dir.path().join("volume/run/shards");
    let pods: Vec<_> = (0..4)
        .map(|index| {
            run_in(dir.path())
                .args(["--shard", "auto", "--out"])
                .arg(&shared)
                .args(["--run-id", &format!("shard-{index}")])
                .env("JOB_COMPLETION_INDEX", index.to_string())
                .env("SKILL_LIFT_SHARD_COUNT", "4")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut trials = 0;
    for (index, pod) in pods.into_iter().enumerate() {
        let output = pod.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "pod {index}: {}",
            stderr(&output)
        );
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(shared.join(format!("shard-{index}/manifest.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(manifest["shard"], json!({"index": index + 1, "count": 4}));
        trials += std::fs::read_to_string(shared.join(format!("shard-{index}/trials.jsonl")))
            .unwrap()
            .lines()
            .count();
    }
    assert_eq!(trials, 48, "the shards partition the 12 × 2 × 2 trials");

    // The merge Job: the shared folder as a whole.
    let merged = dir.path().join("volume/run/merged");
    let output = binary()
        .arg("merge")
        .arg(&shared)
        .arg("--out")
        .arg(&merged)
        .args([
            "--run-id",
            "whole",
            "--bootstrap-resamples",
            "2000",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_exit(&output, 0, "merged 4 shards (48 trials)");
    let whole = dir.path().join("results/whole");
    for file in ["lift.json", "lift.csv", "cases.csv"] {
        assert_eq!(
            std::fs::read(merged.join(file)).unwrap(),
            std::fs::read(whole.join(file)).unwrap(),
            "{file} differs between the merged shards and the unsharded run"
        );
    }
    let summary = summary_without_timings(&whole);
    assert_eq!(summary_without_timings(&merged), summary);
    assert!((summary["lift"]["estimate"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);

    // A missing pod's shard is named; a folder holding no shard is refused.
    std::fs::rename(shared.join("shard-2"), dir.path().join("volume/run/aside")).unwrap();
    let output = binary()
        .arg("merge")
        .arg(&shared)
        .arg("--out")
        .arg(dir.path().join("volume/run/partial"))
        .output()
        .unwrap();
    assert_exit(&output, 2, "shards 3/4 are missing");
    let empty = dir.path().join("volume/empty");
    std::fs::create_dir_all(&empty).unwrap();
    let output = binary()
        .arg("merge")
        .arg(&empty)
        .arg("--out")
        .arg(dir.path().join("volume/none"))
        .output()
        .unwrap();
    assert_exit(&output, 2, "neither a shard folder");
}

#[test]
fn shard_auto_without_an_index_is_an_input_error() {
    let server = MockServer::start(MockBehaviour::default());
    let dir = project(&server.base_url(), 3);
    let output = run_in(dir.path())
        .args(["--shard", "auto", "--out", "results"])
        .output()
        .unwrap();
    assert_exit(&output, 2, "found no shard index");
    let output = run_in(dir.path())
        .args(["--shard", "auto", "--out", "results"])
        .env("JOB_COMPLETION_INDEX", "1")
        .output()
        .unwrap();
    assert_exit(
        &output,
        2,
        "JOB_COMPLETION_INDEX is set but SKILL_LIFT_SHARD_COUNT is not",
    );
    assert!(!dir.path().join("results").exists(), "nothing ran");
}

// ---------------------------------------------------------------------------------------------
// Shipped deployment files

fn yaml_documents(path: &Path) -> Vec<serde_norway::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_norway::Deserializer::from_str(&text)
        .map(|document| serde::Deserialize::deserialize(document).unwrap())
        .collect()
}

fn find<'a>(docs: &'a [serde_norway::Value], kind: &str, name: &str) -> &'a serde_norway::Value {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn env_value<'a>(container: &'a serde_norway::Value, name: &str) -> &'a str {
    container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str() == Some(name))
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("no env {name}"))
}

/// The fields the manifest relies on, checked on the file itself; the full schema check is
/// `kubernetes-validate --strict` (PyPI) below and in `.ci/run`.
#[test]
fn kubernetes_manifest_is_an_indexed_job_with_a_merge() {
    let path = repo_root().join("deploy/k8s/indexed-job.yaml");
    let docs = yaml_documents(&path);
    let shards = find(&docs, "Job", "skill-lift-shards");
    assert_eq!(shards["apiVersion"].as_str(), Some("batch/v1"));
    let spec = &shards["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let completions = spec["completions"].as_u64().unwrap();
    assert!(spec["backoffLimitPerIndex"].as_u64().unwrap() >= 1);
    let pod = &spec["template"]["spec"];
    assert_eq!(
        pod["restartPolicy"].as_str(),
        Some("Never"),
        "required by podFailurePolicy"
    );
    let container = &pod["containers"][0];
    assert_eq!(
        env_value(container, "SKILL_LIFT_SHARD_COUNT"),
        completions.to_string(),
        "the shard count must equal the Job's completions"
    );
    let script = container["args"][0].as_str().unwrap();
    assert!(
        script.contains("--shard auto") && script.contains("--resume"),
        "{script}"
    );
    let claim = pod["volumes"][0]["persistentVolumeClaim"]["claimName"]
        .as_str()
        .unwrap();
    let pvc = find(&docs, "PersistentVolumeClaim", claim);
    assert_eq!(
        pvc["spec"]["accessModes"][0].as_str(),
        Some("ReadWriteMany")
    );

    let merge = find(&docs, "Job", "skill-lift-merge");
    let merge_pod = &merge["spec"]["template"]["spec"];
    assert_eq!(
        merge_pod["volumes"][0]["persistentVolumeClaim"]["claimName"].as_str(),
        Some(claim)
    );
    let merge_container = &merge_pod["containers"][0];
    assert!(
        merge_container["args"][0]
            .as_str()
            .unwrap()
            .contains("skill-lift merge")
    );
    assert_eq!(
        env_value(merge_container, "RUN_NAME"),
        env_value(container, "RUN_NAME"),
        "both Jobs must name the same run folder"
    );
    let wait = merge_pod["initContainers"][0]["command"]
        .as_sequence()
        .unwrap();
    assert!(
        wait.iter()
            .any(|a| a.as_str() == Some("job/skill-lift-shards"))
    );
    let account = merge_pod["serviceAccountName"].as_str().unwrap();
    find(&docs, "ServiceAccount", account);
    find(&docs, "RoleBinding", account);

    // Schema check against the Kubernetes OpenAPI schemas (oldest and newest supported).
    match tool("kubernetes-validate") {
        Some(validate) => {
            for version in ["1.29.0", "1.37.0"] {
                let output = Command::new(&validate)
                    .args(["--strict", "--quiet", "-k", version])
                    .arg(&path)
                    .output()
                    .unwrap();
                assert!(
                    output.status.success(),
                    "kubernetes-validate {version}: {}{}",
                    stdout(&output),
                    stderr(&output)
                );
            }
        }
        None => skip("kubernetes-validate"),
    }
}

/// A CI tool from `.venv-tools/bin` (scripts/install-ci-tools) or PATH.
fn tool(name: &str) -> Option<PathBuf> {
    let local = repo_root().join(".venv-tools/bin").join(name);
    if local.is_file() {
        return Some(local);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// Skip a tool-dependent check with a message, unless CI requires the tools.
fn skip(name: &str) {
    assert!(
        std::env::var_os("SKILL_LIFT_REQUIRE_CI_TOOLS").is_none(),
        "{name} is required (SKILL_LIFT_REQUIRE_CI_TOOLS is set); run scripts/install-ci-tools"
    );
    eprintln!("skipped: {name} is not installed (scripts/install-ci-tools installs it)");
}

/// The workflow in docs/github-actions.md is the file the linter checks, byte for byte.
#[test]
fn documented_workflow_is_the_linted_file() {
    let doc = std::fs::read_to_string(repo_root().join("docs/github-actions.md")).unwrap();
    let file = std::fs::read_to_string(repo_root().join("docs/examples/skill-lift.yml")).unwrap();
    let block = doc
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```\n").next())
        .expect("a yaml block in docs/github-actions.md");
    assert_eq!(
        block, file,
        "docs/github-actions.md and docs/examples/skill-lift.yml differ"
    );
    match tool("actionlint") {
        Some(actionlint) => {
            let output = Command::new(actionlint)
                .current_dir(repo_root())
                .args(["-oneline", "docs/examples/skill-lift.yml"])
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{}{}",
                stdout(&output),
                stderr(&output)
            );
        }
        None => skip("actionlint"),
    }
}

// ---------------------------------------------------------------------------------------------
// The composite action's scripts, run as GitHub runs them (bash, env, GITHUB_OUTPUT)

/// The `run` script and `env` names of the action step called `name`.
fn action_step(name: &str) -> String {
    let action: serde_norway::Value =
        serde_norway::from_str(&std::fs::read_to_string(repo_root().join("action.yml")).unwrap())
            .unwrap();
    action["runs"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|step| step["name"].as_str() == Some(name))
        .and_then(|step| step["run"].as_str())
        .unwrap_or_else(|| panic!("no step {name}"))
        .to_string()
}

/// Run an action step's script with bash, `env`, skill-lift on PATH and fresh GITHUB_OUTPUT;
/// returns the exit code and the outputs it wrote.
fn run_step(
    cwd: &Path,
    name: &str,
    env: &[(&str, &str)],
    summary: &Path,
) -> (Option<i32>, std::collections::BTreeMap<String, String>) {
    let output_file = tempfile::NamedTempFile::new().unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_skill-lift"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("bash");
    command
        .current_dir(cwd)
        .args(["--noprofile", "--norc", "-e", "-o", "pipefail", "-c"])
        .arg(action_step(name))
        .env("PATH", path)
        .env("GITHUB_OUTPUT", output_file.path())
        .env("GITHUB_STEP_SUMMARY", summary)
        .env("SKILL_LIFT_HOME", test_state_dir())
        .env_remove("SKILL_LIFT_RUNNER")
        .env_remove("SKILL_LIFT_RESULTS")
        .env("CI", "true");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    eprintln!("{name}: {}{}", stdout(&output), stderr(&output));
    let outputs = std::fs::read_to_string(output_file.path())
        .unwrap()
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (output.status.code(), outputs)
}

#[test]
fn action_detects_evaluates_and_gates_the_changed_skill() {
    let improving = MockServer::start(MockBehaviour::default());
    let repo = Repo::new();
    let project = project(&improving.base_url(), 1);
    for relative in [
        "skill/pirate-greeting/SKILL.md",
        "skill/pirate-greeting/evals/evals.json",
        "runners/mock.toml",
    ] {
        repo.write(
            relative,
            &std::fs::read_to_string(project.path().join(relative)).unwrap(),
        );
    }
    // Every case passes only with the skill's opening line: lift +1 (or −1 against `worse`).
    let evals: Vec<Value> = (0..6)
        .map(|i| {
            json!({"id": format!("case-{i}"), "prompt": format!("Question {i}?"),
                        "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]})
        })
        .collect();
    repo.write(
        "skill/pirate-greeting/evals/evals.json",
        &json!({"skill_name": "pirate-greeting", "evals": evals}).to_string(),
    );
    repo.skill("skill/untouched", "untouched", "Never edited.");
    let base = repo.commit("base");
    repo.write(
        "skill/pirate-greeting/SKILL.md",
        "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\nBegin every answer with Aye! SKILL-MARKER (always)\n",
    );
    repo.write("skill/untouched/README.md", "docs only\n");
    repo.commit("edit");
    let summary_file = repo.path().join("summary.md");

    let (code, outputs) = run_step(
        repo.path(),
        "Find the skills to evaluate",
        &[("SKILLS", ""), ("BASE", &base), ("SKILL_PATHS", "")],
        &summary_file,
    );
    assert_eq!(code, Some(0));
    let skills: Value = serde_json::from_str(&outputs["skills"]).unwrap();
    assert_eq!(skills.as_array().unwrap().len(), 1, "{skills}");
    assert_eq!(skills[0]["path"], "skill/pirate-greeting");

    let evaluate = |skills_json: &str, results: &str| {
        run_step(
            repo.path(),
            "Evaluate",
            &[
                ("SKILLS_JSON", skills_json),
                ("RUNNER", "mock"),
                ("ATTEMPTS", "1"),
                ("FAIL_ON", "regressed"),
                ("ARGS", "--jobs 2"),
                ("RESULTS", results),
            ],
            &summary_file,
        )
    };
    let (code, outputs) = evaluate(&outputs["skills"], "results");
    assert_eq!(code, Some(0), "the step itself never fails");
    assert_eq!(outputs["exit-code"], "0");
    let summary = std::fs::read_to_string(&summary_file).unwrap();
    assert!(summary.contains("## `skill/pirate-greeting`"), "{summary}");
    assert!(summary.contains("IMPROVED"), "{summary}");
    let runs: Vec<_> = std::fs::read_dir(repo.path().join("results"))
        .unwrap()
        .collect();
    assert_eq!(runs.len(), 1, "one run folder to upload");
    // The uploaded folder holds the transcript pages report.html links to.
    let run_dir = runs[0].as_ref().unwrap().path();
    let pages = std::fs::read_dir(run_dir.join("transcripts"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "html"))
        .count();
    assert!(pages > 0, "no transcript page in {}", run_dir.display());

    // The same skill against a model the skill makes worse: the gate fails the job.
    let worse = MockServer::start(MockBehaviour {
        with_answer: "Here is the answer.".to_string(),
        without_answer: "Aye! Here is the answer.".to_string(),
        ..MockBehaviour::default()
    });
    repo.write(
        "runners/mock.toml",
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"mock-model\"\ntimeout_s = 30\nconcurrency = 4\nretry_base_delay_s = 0.01\n",
            worse.base_url()
        ),
    );
    let given = r#"[{"path":"skill/pirate-greeting","name":"pirate-greeting","status":"given"}]"#;
    let (code, outputs) = evaluate(given, "results-worse");
    assert_eq!(code, Some(0));
    assert_eq!(outputs["exit-code"], "1");
    for (exit, expected) in [
        ("0", Some(0)),
        ("1", Some(1)),
        ("3", Some(3)),
        ("4", Some(0)),
    ] {
        let (code, _) = run_step(repo.path(), "Gate", &[("CODE", exit)], &summary_file);
        assert_eq!(code, expected, "gate on exit {exit}");
    }

    // Given skills, one per line, skip detection.
    let (code, outputs) = run_step(
        repo.path(),
        "Find the skills to evaluate",
        &[
            ("SKILLS", "skill/a\nskill/b\n"),
            ("BASE", ""),
            ("SKILL_PATHS", ""),
        ],
        &summary_file,
    );
    assert_eq!(code, Some(0));
    let given: Value = serde_json::from_str(&outputs["skills"]).unwrap();
    assert_eq!(given[1]["path"], "skill/b");
    assert_eq!(given[1]["name"], "b");
}

// ---------------------------------------------------------------------------------------------
// Shards through an S3-compatible object store (moto's server on a free loopback port)

/// moto's S3-compatible server, stopped on drop.
struct Moto {
    child: std::process::Child,
    endpoint: String,
}

impl Moto {
    /// Start `moto_server` on 127.0.0.1 with a port the system picks; `None` when moto is not
    /// installed (scripts/install-ci-tools installs it).
    fn start() -> Option<Self> {
        use std::io::BufRead;
        let program = tool("moto_server")?;
        let mut child = Command::new(program)
            .args(["-H", "127.0.0.1", "-p", "0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("moto_server starts");
        // werkzeug prints ` * Running on http://127.0.0.1:PORT` on stderr.
        let stderr = child.stderr.take().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(address) = line.split("Running on ").nth(1) {
                    let _ = sender.send(address.trim().to_string());
                }
            }
        });
        let endpoint = receiver
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("moto_server reports its address");
        Some(Self { child, endpoint })
    }

    /// Create a bucket (moto accepts unsigned requests).
    fn create_bucket(&self, bucket: &str) {
        use std::io::{Read, Write};
        let address = self.endpoint.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(
            stream,
            "PUT /{bucket} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A secret planted in the S3 credentials: it must appear in no file the runs wrote.
const PLANTED_SECRET: &str = "PLANTEDs3SECRETkey0123456789abcdefXYZ";

fn with_s3_env(command: &mut Command, endpoint: &str) {
    command
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", PLANTED_SECRET)
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE");
}

#[test]
fn indexed_job_shards_through_s3_merge_to_the_unsharded_analysis() {
    let Some(moto) = Moto::start() else {
        skip("moto_server");
        return;
    };
    moto.create_bucket("evals");
    let server = MockServer::start(MockBehaviour::default());
    let dir = project(&server.base_url(), 9);
    let output = run_in(dir.path())
        .args(["--out", "results", "--run-id", "whole"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let pods: Vec<_> = (0..4)
        .map(|index| {
            let mut command = run_in(dir.path());
            command
                .args(["--shard", "auto", "--out", "s3://evals/runs/eval-1/shards"])
                .args(["--run-id", &format!("shard-{index}")])
                .env("JOB_COMPLETION_INDEX", index.to_string())
                .env("SKILL_LIFT_SHARD_COUNT", "4")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            with_s3_env(&mut command, &moto.endpoint);
            command.spawn().unwrap()
        })
        .collect();
    let mut logs = String::new();
    for (index, pod) in pods.into_iter().enumerate() {
        let output = pod.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "pod {index}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(&format!("to s3://evals/runs/eval-1/shards/shard-{index}")),
            "{}",
            stderr(&output)
        );
        logs.push_str(&stderr(&output));
    }

    // A retried pod uploads again over its earlier upload.
    let mut retry = run_in(dir.path());
    retry
        .args([
            "--shard",
            "auto",
            "--out",
            "s3://evals/runs/eval-1/shards",
            "--run-id",
            "shard-1",
        ])
        .env("JOB_COMPLETION_INDEX", "1")
        .env("SKILL_LIFT_SHARD_COUNT", "4");
    with_s3_env(&mut retry, &moto.endpoint);
    let output = retry.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("replacing"), "{}", stderr(&output));

    let merged = dir.path().join("merged");
    let mut merge = binary();
    merge
        .arg("merge")
        .arg("s3://evals/runs/eval-1/shards")
        .arg("--out")
        .arg(&merged)
        .args([
            "--run-id",
            "whole",
            "--bootstrap-resamples",
            "2000",
            "--quiet",
        ]);
    with_s3_env(&mut merge, &moto.endpoint);
    let output = merge.output().unwrap();
    assert_exit(&output, 0, "downloaded 4 run folder(s)");
    let whole = dir.path().join("results/whole");
    for file in ["lift.json", "lift.csv", "cases.csv"] {
        assert_eq!(
            std::fs::read(merged.join(file)).unwrap(),
            std::fs::read(whole.join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(
        summary_without_timings(&merged),
        summary_without_timings(&whole)
    );

    // A prefix holding no run is an input error naming it; a bad location too.
    let mut empty = binary();
    empty
        .args(["merge", "s3://evals/nothing-here", "--out"])
        .arg(dir.path().join("none"));
    with_s3_env(&mut empty, &moto.endpoint);
    let output = empty.output().unwrap();
    assert_exit(&output, 2, "s3://evals/nothing-here: no run folder");
    logs.push_str(&stderr(&output));

    // The planted credential is in no log and no file the runs wrote.
    assert!(!logs.contains(PLANTED_SECRET));
    let mut pending = vec![dir.path().to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(folder).unwrap().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(PLANTED_SECRET),
                    "{} holds the planted secret",
                    path.display()
                );
            }
        }
    }
}

/// A loopback S3 endpoint that accepts skill-lift's write-access probe (and, with
/// `accept_uploads`, everything) and refuses every other write with `403 AccessDenied`: a store
/// whose credentials are wrong, or whose policy lets the probe through but not the run.
struct RefusingStore {
    endpoint: String,
}

impl RefusingStore {
    fn start(accept_probe: bool) -> Self {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming().filter_map(Result::ok) {
                let mut reader = BufReader::new(stream);
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let mut length = 0usize;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let mut parts = request_line.split_whitespace();
                let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let probe = accept_probe && target.contains(".skill-lift-probe-");
                let (status, body) = match method {
                    "PUT" | "DELETE" if probe => ("200 OK", String::new()),
                    "GET" if probe => {
                        // A listing of the probe's own key: the prefix asked for.
                        let prefix = target
                            .split(['?', '&'])
                            .find_map(|p| p.strip_prefix("prefix="))
                            .unwrap_or("")
                            .replace("%2F", "/");
                        (
                            "200 OK",
                            format!(
                                "<ListBucketResult><Contents><Key>{prefix}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><Size>23</Size><ETag>\"e\"</ETag></Contents><IsTruncated>false</IsTruncated></ListBucketResult>"
                            ),
                        )
                    }
                    _ => (
                        "403 Forbidden",
                        "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
                            .to_string(),
                    ),
                };
                let mut stream = reader.into_inner();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nETag: \"e\"\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { endpoint }
    }
}

#[test]
fn an_s3_store_that_refuses_is_found_before_the_run_and_a_failed_upload_keeps_the_run() {
    let server = MockServer::start(MockBehaviour::default());
    let dir = project(&server.base_url(), 3);

    // A store refusing the probe: exit 3 before any trial is spent.
    let refusing = RefusingStore::start(false);
    let mut run = run_in(dir.path());
    run.args(["--out", "s3://evals/runs"]);
    with_s3_env(&mut run, &refusing.endpoint);
    let output = run.output().unwrap();
    assert_exit(&output, 3, "nothing was run");
    assert!(
        stderr(&output).contains("AccessDenied"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        server.requests(),
        0,
        "no trial ran before the store was checked"
    );

    // A malformed bucket name is an input error, also before any trial.
    let mut run = run_in(dir.path());
    run.args(["--out", "s3://bucket with space/x"]);
    let output = run.output().unwrap();
    assert_exit(&output, 2, "bucket name");
    assert_eq!(server.requests(), 0);

    // A store taking the probe but refusing the upload: the recorded run stays on disk, named.
    let partial = RefusingStore::start(true);
    let mut run = run_in(dir.path());
    run.args(["--out", "s3://evals/runs", "--run-id", "kept"]);
    with_s3_env(&mut run, &partial.endpoint);
    let output = run.output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(server.requests() > 0);
    let message = stderr(&output);
    let kept = message
        .split("the recorded run is kept in ")
        .nth(1)
        .and_then(|rest| rest.split(" (nothing was deleted)").next())
        .unwrap_or_else(|| panic!("no kept folder named: {message}"));
    let run_dir = Path::new(kept).join("kept");
    assert!(run_dir.join("manifest.json").is_file(), "{message}");
    assert!(run_dir.join("trials.jsonl").is_file(), "{message}");
    assert!(
        message.contains("aws s3 cp") && message.contains("s3://evals/runs/kept/manifest.json"),
        "{message}"
    );
    std::fs::remove_dir_all(kept).unwrap();
}
