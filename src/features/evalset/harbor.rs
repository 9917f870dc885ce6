//! SkillsBench / Harbor task folders as golden cases, and running a task's verifier.
//!
//! A task folder holds `task.toml`, `instruction.md` (the prompt), `environment/` (its
//! `Dockerfile` and the files the image is built from), `tests/test.sh` (the verifier, which
//! writes a reward to `/logs/verifier/reward.txt` or `reward.json`) and optionally `solution/`.
//! `--evals` may name one task folder or a folder of them; each task becomes one case whose id is
//! the folder name. Its files are the contents of `environment/` except the container recipe
//! (`Dockerfile`, `docker-compose*.y*ml`, `.dockerignore`) and `environment/skills/` (skills
//! bundled with the task are never staged: the arms decide which skills are present).
//! `solution/` is never read.
//!
//! Grading: `run` adds a custom grader named `verifier` that calls `skill-lift harbor-verify`
//! ([`verify_task`]) in each trial's workspace. Outside a container, the verifier's absolute
//! paths are mapped: its `tests/` is copied to a scratch folder, and in the copied text files
//! `/tests` becomes that copy, `/logs` the scratch logs folder (`/logs/agent/final_answer.txt`
//! holds the agent's final answer) and the Dockerfile's last `WORKDIR` the trial workspace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{CaseFile, CaseFiles, EvalFormat, EvalSet, EvalSetError, EvalSetWarning, GoldenCase};

/// `task.toml` keys skill-lift reads (others are reported as unused).
const USED_TASK_KEYS: &[&str] = &["version", "verifier.timeout_sec"];
/// Files of `environment/` that describe the container, not the workspace.
fn is_container_recipe(name: &str) -> bool {
    name == "Dockerfile"
        || name == ".dockerignore"
        || name == "skills"
        || (name.starts_with("docker-compose")
            && (name.ends_with(".yml") || name.ends_with(".yaml")))
}

/// Whether `dir` is a Harbor task folder.
pub fn is_task_folder(dir: &Path) -> bool {
    dir.join("task.toml").is_file() && dir.join("instruction.md").is_file()
}

/// Load one task folder, or every task folder directly inside `dir`.
pub fn load_harbor(dir: &Path, skill_root: &Path) -> Result<EvalSet, EvalSetError> {
    let _ = skill_root;
    let invalid = |path: &Path, json_path: &str, message: String| EvalSetError::Invalid {
        path: path.to_path_buf(),
        json_path: json_path.to_string(),
        message,
    };
    let (tasks_root, task_dirs) = if dir.join("task.toml").is_file() {
        (
            dir.parent().unwrap_or(Path::new(".")).to_path_buf(),
            vec![dir.to_path_buf()],
        )
    } else {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|source| EvalSetError::Read {
                path: dir.to_path_buf(),
                source,
            })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("task.toml").is_file())
            .collect();
        found.sort();
        if found.is_empty() {
            return Err(EvalSetError::UnknownShape {
                path: dir.to_path_buf(),
                message: "a folder given as the eval set must be a Harbor task folder (task.toml, instruction.md, tests/test.sh) or hold such folders".to_string(),
            });
        }
        (dir.to_path_buf(), found)
    };
    let mut hasher = Sha256::new();
    let mut cases = Vec::with_capacity(task_dirs.len());
    let mut unused: BTreeMap<String, usize> = BTreeMap::new();
    let mut verifier_timeout: Option<f64> = None;
    for task in &task_dirs {
        let id = task
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        crate::record::validate_id(&id)
            .map_err(|message| invalid(task, "task folder name", message.to_string()))?;
        let toml_path = task.join("task.toml");
        let toml_text =
            std::fs::read_to_string(&toml_path).map_err(|source| EvalSetError::Read {
                path: toml_path.clone(),
                source,
            })?;
        let table: toml::Table = toml_text.parse().map_err(|error: toml::de::Error| {
            let (line, column) = error
                .span()
                .map(|span| line_column(&toml_text, span.start))
                .unwrap_or((0, 0));
            EvalSetError::Syntax {
                path: toml_path.clone(),
                line,
                column,
                format: "TOML",
                message: error.message().to_string(),
            }
        })?;
        let mut keys = Vec::new();
        flatten_keys("", &table, &mut keys);
        for key in keys {
            if !USED_TASK_KEYS.contains(&key.as_str()) {
                *unused.entry(format!("task.toml: {key}")).or_default() += 1;
            }
        }
        if let Some(value) = table.get("verifier").and_then(|v| v.get("timeout_sec")) {
            let seconds = value
                .as_float()
                .or_else(|| value.as_integer().map(|i| i as f64))
                .filter(|s| s.is_finite() && *s > 0.0)
                .ok_or_else(|| {
                    invalid(
                        &toml_path,
                        "verifier.timeout_sec",
                        "must be a positive number of seconds".to_string(),
                    )
                })?;
            verifier_timeout = Some(verifier_timeout.map_or(seconds, |t: f64| t.max(seconds)));
        }
        let instruction_path = task.join("instruction.md");
        let prompt =
            std::fs::read_to_string(&instruction_path).map_err(|source| EvalSetError::Read {
                path: instruction_path.clone(),
                source,
            })?;
        if prompt.trim().is_empty() {
            return Err(invalid(
                &instruction_path,
                "instruction.md",
                "is empty (it is the task's prompt)".to_string(),
            ));
        }
        if !task.join("tests/test.sh").is_file() {
            return Err(invalid(
                task,
                "tests/test.sh",
                "is required (the task's verifier, which writes /logs/verifier/reward.txt)"
                    .to_string(),
            ));
        }
        let mut files = Vec::new();
        let environment = task.join("environment");
        if environment.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&environment)
                .map_err(|source| EvalSetError::Read {
                    path: environment.clone(),
                    source,
                })?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .collect();
            entries.sort();
            for entry in entries {
                let name = entry
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if is_container_recipe(&name) {
                    continue;
                }
                let source = entry.canonicalize().map_err(|source| EvalSetError::Read {
                    path: entry.clone(),
                    source,
                })?;
                files.push(CaseFile {
                    source,
                    destination: PathBuf::from(name),
                });
            }
        }
        hash_tree(&mut hasher, task, task).map_err(|source| EvalSetError::Read {
            path: task.clone(),
            source,
        })?;
        let mut case = GoldenCase::new(id, prompt.trim().to_string());
        case.files = CaseFiles::Listed(files);
        cases.push(case);
    }
    let mut warnings = Vec::new();
    if !unused.is_empty() {
        warnings.push(EvalSetWarning::UnusedFields { fields: unused });
    }
    Ok(EvalSet {
        path: dir.to_path_buf(),
        digest: format!("sha256:{}", hex::encode(hasher.finalize())),
        format: EvalFormat::Harbor,
        skill_name: None,
        cases,
        warnings,
        harbor_tasks: Some(tasks_root.canonicalize().unwrap_or(tasks_root)),
        verifier_timeout_s: verifier_timeout,
    })
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Dotted leaf keys of a TOML table (`verifier.timeout_sec`, `metadata.tags`).
fn flatten_keys(prefix: &str, table: &toml::Table, out: &mut Vec<String>) {
    for (key, value) in table {
        let name = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => flatten_keys(&name, inner, out),
            _ => out.push(name),
        }
    }
}

/// Hash a task's files (relative path and bytes, sorted), except `solution/`.
fn hash_tree(hasher: &mut Sha256, root: &Path, dir: &Path) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let relative = path.strip_prefix(root).unwrap_or(&path);
        if relative == Path::new("solution") {
            continue;
        }
        if path.is_dir() {
            hash_tree(hasher, root, &path)?;
        } else if path.is_file() {
            hasher.update(relative.to_string_lossy().as_bytes());
            hasher.update([0]);
            hasher.update(std::fs::read(&path)?);
            hasher.update([0]);
        }
    }
    Ok(())
}

/// Why a verifier run produced no reward.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("no task `{case}` under {tasks}")]
    NoTask { case: String, tasks: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the verifier wrote no reward (expected /logs/verifier/reward.txt or reward.json); exit code {exit}; last output: {tail}"
    )]
    NoReward { exit: String, tail: String },
    #[error("{path}: reward `{text}` is not a number in [0, 1]")]
    BadReward { path: PathBuf, text: String },
}

/// What a verifier run found.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The reward in [0, 1].
    pub reward: f64,
    /// The verifier's exit code (`None` when killed by a signal).
    pub exit_code: Option<i32>,
}

/// Run the verifier of task `case_id` (a folder under `tasks_root`) against `workspace`, with
/// the agent's `final_answer` placed at `/logs/agent/final_answer.txt` (see the module
/// documentation for the path mapping). Blocks until the verifier exits.
pub fn verify_task(
    tasks_root: &Path,
    case_id: &str,
    workspace: &Path,
    final_answer: Option<&str>,
) -> Result<Verdict, VerifyError> {
    let task = [tasks_root.join(case_id), tasks_root.to_path_buf()]
        .into_iter()
        .find(|dir| {
            dir.join("tests/test.sh").is_file()
                && dir
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy() == case_id)
        })
        .ok_or_else(|| VerifyError::NoTask {
            case: case_id.to_string(),
            tasks: tasks_root.to_path_buf(),
        })?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| VerifyError::Io { path, source }
    };
    let scratch = tempfile::Builder::new()
        .prefix("skill-lift-verifier-")
        .tempdir()
        .map_err(io(Path::new("(temporary folder)")))?;
    let tests = scratch.path().join("tests");
    let logs = scratch.path().join("logs");
    std::fs::create_dir_all(logs.join("verifier")).map_err(io(&logs))?;
    std::fs::create_dir_all(logs.join("agent")).map_err(io(&logs))?;
    crate::disk::write(
        logs.join("agent/final_answer.txt"),
        final_answer.unwrap_or(""),
    )
    .map_err(crate::disk::DiskError::into_io)
    .map_err(io(&logs))?;
    let workdir = dockerfile_workdir(&task.join("environment/Dockerfile"));
    let workspace = workspace.canonicalize().unwrap_or(workspace.to_path_buf());
    let mut mapping = vec![
        ("/tests".to_string(), tests.display().to_string()),
        ("/logs".to_string(), logs.display().to_string()),
    ];
    if let Some(workdir) = workdir.filter(|w| w != "/" && w.starts_with('/')) {
        mapping.push((workdir, workspace.display().to_string()));
    }
    copy_rewritten(&task.join("tests"), &tests, &mapping)?;
    let output = std::process::Command::new("bash")
        .arg(tests.join("test.sh"))
        .current_dir(&workspace)
        .env("TESTS_DIR", &tests)
        .env("LOGS_DIR", &logs)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(io(&tests.join("test.sh")))?;
    let reward = read_reward(&logs.join("verifier"))?;
    match reward {
        Some(reward) => Ok(Verdict {
            reward,
            exit_code: output.status.code(),
        }),
        None => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            let tail = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string();
            Err(VerifyError::NoReward {
                exit: output
                    .status
                    .code()
                    .map_or("none (signal)".to_string(), |c| c.to_string()),
                tail: crate::disk::redact::truncate(&tail, 300),
            })
        }
    }
}

/// The last absolute `WORKDIR` of a Dockerfile.
fn dockerfile_workdir(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().rev().find_map(|line| {
        let line = line.trim();
        let (instruction, rest) = line.split_once(char::is_whitespace)?;
        instruction.eq_ignore_ascii_case("WORKDIR").then(|| {
            rest.trim()
                .trim_matches('"')
                .trim_end_matches('/')
                .to_string()
        })
    })
}

/// Copy `from` to `to`, rewriting each mapped absolute path prefix in text files (only where it
/// starts a path: after a quote, space, `=`, `(`, `:` or a line start, and followed by `/`, a
/// quote, space or the end).
fn copy_rewritten(from: &Path, to: &Path, mapping: &[(String, String)]) -> Result<(), VerifyError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| VerifyError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        if source.is_dir() {
            copy_rewritten(&source, &target, mapping)?;
            continue;
        }
        let bytes = std::fs::read(&source).map_err(io(&source))?;
        let bytes = match String::from_utf8(bytes) {
            Ok(text) => rewrite_paths(&text, mapping).into_bytes(),
            Err(error) => error.into_bytes(),
        };
        crate::disk::write(&target, bytes)
            .map_err(crate::disk::DiskError::into_io)
            .map_err(io(&target))?;
    }
    Ok(())
}

/// Replace mapped absolute path prefixes where they begin a path.
pub fn rewrite_paths(text: &str, mapping: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (from, to) in mapping {
        let pattern = format!(
            r#"(^|[\s"'=(:,\[])({})([/\s"';:,)\]]|$)"#,
            regex::escape(from)
        );
        let regex = regex::Regex::new(&format!("(?m){pattern}")).expect("escaped pattern");
        // Replace until stable: adjacent matches share a delimiter.
        loop {
            let next = regex
                .replace_all(&out, |captures: &regex::Captures<'_>| {
                    format!("{}{}{}", &captures[1], to, &captures[3])
                })
                .into_owned();
            if next == out {
                break;
            }
            out = next;
        }
    }
    out
}

/// `reward.txt` (a number) or `reward.json` (`{"reward": x}`, `{"overall": x}`, or an object
/// with one number) under the verifier logs folder; `None` when neither exists.
fn read_reward(dir: &Path) -> Result<Option<f64>, VerifyError> {
    let in_range = |value: f64| value.is_finite() && (0.0..=1.0).contains(&value);
    let text_path = dir.join("reward.txt");
    if let Ok(text) = std::fs::read_to_string(&text_path) {
        return match text.trim().parse::<f64>() {
            Ok(value) if in_range(value) => Ok(Some(value)),
            _ => Err(VerifyError::BadReward {
                path: text_path,
                text: text.trim().to_string(),
            }),
        };
    }
    let json_path = dir.join("reward.json");
    if let Ok(text) = std::fs::read_to_string(&json_path) {
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|_| VerifyError::BadReward {
                path: json_path.clone(),
                text: text.trim().to_string(),
            })?;
        let number = value
            .get("reward")
            .or_else(|| value.get("overall"))
            .and_then(serde_json::Value::as_f64)
            .or_else(|| value.as_f64())
            .or_else(|| {
                let numbers: Vec<f64> = value
                    .as_object()
                    .map(|o| o.values().filter_map(serde_json::Value::as_f64).collect())
                    .unwrap_or_default();
                (numbers.len() == 1).then(|| numbers[0])
            });
        return match number {
            Some(value) if in_range(value) => Ok(Some(value)),
            _ => Err(VerifyError::BadReward {
                path: json_path,
                text: text.trim().to_string(),
            }),
        };
    }
    Ok(None)
}

/// Why `skill-lift harbor-verify` could not grade (every one an input error).
#[derive(Debug, thiserror::Error)]
pub enum HarborVerifyError {
    /// A `SKILL_LIFT_*` variable of the custom-grader contract is not set.
    #[error("{0} is not set: harbor-verify runs as a custom grader of `skill-lift run`")]
    NotSet(&'static str),
    /// A file the contract names cannot be read.
    #[error("reading {}", .0.display())]
    Read(PathBuf, #[source] std::io::Error),
    /// A file the contract names is not JSON.
    #[error("{}: not JSON", .0.display())]
    NotJson(PathBuf, #[source] serde_json::Error),
    /// The case has no id.
    #[error("SKILL_LIFT_CASE has no `id`")]
    NoCaseId,
    /// The task's verifier could not run.
    #[error("task `{case_id}`: {error}")]
    Verify {
        /// The case (task) id.
        case_id: String,
        /// What failed.
        error: VerifyError,
    },
}

/// Run `skill-lift harbor-verify`: as a custom grader (`crate::features::grade::custom`), read the case
/// id, workspace and trajectory from the `SKILL_LIFT_*` variables, run the task's
/// `tests/test.sh` from `tasks_root` ([`verify_task`]) and print the grade on stdout as
/// `{"overall": reward, "details": {"verifier": …}}`.
pub fn harbor_verify(tasks_root: &Path) -> Result<Verdict, HarborVerifyError> {
    let case = read_contract_json("SKILL_LIFT_CASE")?;
    let case_id = case["id"]
        .as_str()
        .ok_or(HarborVerifyError::NoCaseId)?
        .to_string();
    let trajectory = read_contract_json("SKILL_LIFT_TRAJECTORY")?;
    let workspace = contract_path("SKILL_LIFT_WORKSPACE")?;
    let final_answer = trajectory["final_answer"].as_str();
    let verdict = verify_task(tasks_root, &case_id, &workspace, final_answer)
        .map_err(|error| HarborVerifyError::Verify { case_id, error })?;
    let exit = verdict
        .exit_code
        .map_or("a signal".to_string(), |c| format!("exit code {c}"));
    let details = format!("reward {} from tests/test.sh ({exit})", verdict.reward);
    let grade = serde_json::json!({"overall": verdict.reward, "details": {"verifier": details}});
    crate::values::reporter::result_line(&grade.to_string());
    Ok(verdict)
}

/// The path in the contract's variable `name`.
fn contract_path(name: &'static str) -> Result<PathBuf, HarborVerifyError> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .ok_or(HarborVerifyError::NotSet(name))
}

/// The JSON file the contract's variable `name` names.
fn read_contract_json(name: &'static str) -> Result<serde_json::Value, HarborVerifyError> {
    let path = contract_path(name)?;
    let text =
        std::fs::read_to_string(&path).map_err(|e| HarborVerifyError::Read(path.clone(), e))?;
    serde_json::from_str(&text).map_err(|e| HarborVerifyError::NotJson(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_rewritten_only_where_they_start_a_path() {
        let mapping = vec![
            ("/tests".to_string(), "/s/tests".to_string()),
            ("/logs".to_string(), "/s/logs".to_string()),
            ("/app".to_string(), "/w".to_string()),
        ];
        let text = "pytest /tests/test_outputs.py\necho 1 > /logs/verifier/reward.txt\ncd /app && cat \"/app/out.txt\"\nls /application /tmp/tests x/tests\n";
        assert_eq!(
            rewrite_paths(text, &mapping),
            "pytest /s/tests/test_outputs.py\necho 1 > /s/logs/verifier/reward.txt\ncd /w && cat \"/w/out.txt\"\nls /application /tmp/tests x/tests\n"
        );
    }

    #[test]
    fn workdir_is_the_last_absolute_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Dockerfile");
        std::fs::write(
            &path,
            "FROM ubuntu:24.04\nWORKDIR /root\nCOPY x /app/x\nworkdir /app/\n",
        )
        .unwrap();
        assert_eq!(dockerfile_workdir(&path).as_deref(), Some("/app"));
    }
}
