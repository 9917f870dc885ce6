//! Custom graders: a command in any language that grades one trial.
//!
//! Contract (docs/grading.md, "Custom graders"):
//! - `--grader 'NAME=COMMAND'` (NAME lower-case `[a-z][a-z0-9_-]*`; without it the name is
//!   `custom`, `custom2`, …). COMMAND runs through `sh -c` in the trial's workspace (after the
//!   agent finished, before the workspace is removed), with the caller's environment plus:
//!   `SKILL_LIFT_INPUT` (a JSON file `{trial_id, arm, attempt, target_skill, workspace, case,
//!   trajectory}`), `SKILL_LIFT_TRAJECTORY` (the trajectory alone), `SKILL_LIFT_CASE` (the case
//!   alone), `SKILL_LIFT_WORKSPACE`, `SKILL_LIFT_ARM` (`with_skill` | `without_skill`) and
//!   `SKILL_LIFT_WORKSPACE_AVAILABLE` (`1`, or `0` under `regrade` when the trial's workspace was
//!   not kept: the command then runs in an empty folder).
//! - It prints one JSON object on stdout (the last line that parses as an object, or the whole
//!   output): `{"overall": 0.8, "metrics": {"name": 0.9, …}, "details": {…}}`. Scores are
//!   numbers in [0, 1]; `metrics` may be empty or absent, then `overall` is recorded as the
//!   metric `NAME`. `details` is free-form; `details[name]` (a string, or an object with
//!   `reason`) becomes that metric's reason.
//! - Metric names must be `[a-z][a-z0-9_.-]*` and not reserved
//!   ([`crate::features::grade::metric::RESERVED_METRIC_NAMES`]).
//! - A non-zero exit, a timeout, or output outside the contract is a grader error: the trial is
//!   unscoreable (never failed) with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::features::evalset::GoldenCase;
use crate::features::grade::metric::RESERVED_METRIC_NAMES;
use crate::features::process::{ProcessLimits, ProcessSpec, run_process};
use crate::record::{CustomGraderSpec, MetricResult, MetricSource};
use crate::values::trajectory::Trajectory;

/// Default per-trial timeout of a custom grader, seconds.
pub(crate) const DEFAULT_GRADER_TIMEOUT_S: f64 = 120.0;

/// Why a `--grader` value is invalid.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("invalid --grader `{value}`: {message}")]
pub(crate) struct GraderSpecError {
    pub value: String,
    pub message: String,
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c))
}

/// Parse `--grader` values (`NAME=COMMAND` or `COMMAND`) into specs with unique names.
pub(crate) fn parse_grader_specs(
    values: &[String],
    timeout_s: f64,
) -> Result<Vec<CustomGraderSpec>, GraderSpecError> {
    let mut specs: Vec<CustomGraderSpec> = Vec::new();
    for value in values {
        let error = |message: &str| GraderSpecError {
            value: value.clone(),
            message: message.to_string(),
        };
        if value.trim_start().starts_with('=') {
            return Err(error(
                "the name before `=` is empty (write NAME=COMMAND or just COMMAND)",
            ));
        }
        let (name, command) = match value.split_once('=') {
            Some((name, command))
                if is_metric_name(name) && !name.contains('.') && !command.trim().is_empty() =>
            {
                (name.to_string(), command.trim().to_string())
            }
            _ => {
                let name = if specs.iter().any(|s| s.name == "custom") {
                    format!("custom{}", specs.len() + 1)
                } else {
                    "custom".to_string()
                };
                (name, value.trim().to_string())
            }
        };
        if command.is_empty() {
            return Err(error("the command is empty"));
        }
        if RESERVED_METRIC_NAMES.contains(&name.as_str()) {
            return Err(error("the name is reserved (a built-in metric or key)"));
        }
        if specs.iter().any(|s| s.name == name) {
            return Err(error("two graders have the same name"));
        }
        specs.push(CustomGraderSpec {
            name,
            command,
            timeout_s,
        });
    }
    Ok(specs)
}

/// Why a grader run gave no metrics: the reason the trial is unscoreable (recorded as it reads).
#[derive(Debug, thiserror::Error)]
pub(crate) enum GraderError {
    /// The scratch folder for the grader's input files cannot be created.
    #[error("grader `{grader}`: cannot create a scratch folder: {source}")]
    Scratch {
        /// The grader's name.
        grader: String,
        /// The failure.
        source: std::io::Error,
    },
    /// The case or the trajectory cannot be encoded as JSON.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
    /// An input file cannot be written.
    #[error("grader `{grader}`: cannot write {file}: {source}")]
    Write {
        /// The grader's name.
        grader: String,
        /// The file's name.
        file: String,
        /// The failure.
        source: std::io::Error,
    },
    /// The empty folder a grader runs in when the workspace is gone cannot be created.
    #[error("{0}")]
    EmptyWorkspace(std::io::Error),
    /// The grader's process cannot be run.
    #[error("grader `{grader}`: {source}")]
    Process {
        /// The grader's name.
        grader: String,
        /// The failure.
        source: crate::features::process::ProcessError,
    },
    /// The grader printed more than the limit on stdout.
    #[error("grader `{grader}` printed more than {limit} bytes on stdout")]
    StdoutOverflow {
        /// The grader's name.
        grader: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The grader ran past its timeout.
    #[error("grader `{grader}` exceeded its timeout of {timeout_s} s")]
    Timeout {
        /// The grader's name.
        grader: String,
        /// The timeout in seconds.
        timeout_s: f64,
    },
    /// The grader exited non-zero or was killed.
    #[error("grader `{grader}` failed ({status}): {last_line}")]
    Failed {
        /// The grader's name.
        grader: String,
        /// `exit code N`, `signal N` or `unknown status`.
        status: String,
        /// The last non-empty line of its stderr (redacted, cut).
        last_line: String,
    },
    /// The grader's output breaks the contract.
    #[error("grader `{grader}`: {source}")]
    Output {
        /// The grader's name.
        grader: String,
        /// What is wrong with the output.
        source: GraderOutputError,
    },
}

/// What is wrong with a grader's stdout under the contract (see the module documentation).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum GraderOutputError {
    /// No line, nor the whole output, is a JSON object.
    #[error(
        "printed no JSON object (expected {{\"overall\": …, \"metrics\": {{…}}, \"details\": …}}); last line: {last_line:?}"
    )]
    NoObject {
        /// The last non-empty line (redacted, cut).
        last_line: String,
    },
    /// A top-level key other than `overall`, `metrics` and `details`.
    #[error("unknown key `{key}` (expected overall, metrics, details)")]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// A score outside [0, 1] or not a number.
    #[error("{what} must be a number in [0, 1], got {value}")]
    NotAScore {
        /// `overall` or `metrics.<name>`.
        what: String,
        /// The value given, as JSON.
        value: String,
    },
    /// A metric name outside `[a-z][a-z0-9_.-]*`.
    #[error("metric name `{metric}` must match [a-z][a-z0-9_.-]*")]
    BadMetricName {
        /// The name.
        metric: String,
    },
    /// A built-in metric's or key's name.
    #[error("metric name `{metric}` is reserved (built-in metrics and keys cannot be overridden)")]
    ReservedMetric {
        /// The name.
        metric: String,
    },
    /// `metrics` is not an object.
    #[error("`metrics` must be an object, got {value}")]
    MetricsNotObject {
        /// The value given, as JSON.
        value: String,
    },
    /// Neither `overall` nor any metric.
    #[error("gave neither `overall` nor any `metrics`")]
    NoScore,
}

/// What one grader run sees of its trial.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GraderInput<'a> {
    pub trial_id: &'a str,
    pub arm: &'a str,
    pub attempt: u32,
    pub target_skill: &'a str,
    pub case: &'a GoldenCase,
    pub trajectory: &'a Trajectory,
    /// The trial's workspace, when it still exists.
    pub workspace: Option<&'a Path>,
}

/// Run one grader on one trial. `Ok` holds its metrics (source `custom`); `Err` the reason the
/// trial is unscoreable.
pub(crate) async fn run_grader(
    spec: &CustomGraderSpec,
    input: &GraderInput<'_>,
) -> Result<BTreeMap<String, MetricResult>, GraderError> {
    let scratch = tempfile::Builder::new()
        .prefix("skill-lift-grader-")
        .tempdir()
        .map_err(|source| GraderError::Scratch {
            grader: spec.name.clone(),
            source,
        })?;
    let write = |file: &str, value: &Value| -> Result<PathBuf, GraderError> {
        let path = scratch.path().join(file);
        let bytes = serde_json::to_vec(value)?;
        crate::disk::write(&path, bytes)
            .map_err(crate::disk::DiskError::into_io)
            .map_err(|source| GraderError::Write {
                grader: spec.name.clone(),
                file: file.to_string(),
                source,
            })?;
        Ok(path)
    };
    let case_json = serde_json::to_value(case_document(input.case))?;
    let trajectory_json = serde_json::to_value(input.trajectory)?;
    let workspace_value = input
        .workspace
        .map(|w| Value::String(w.display().to_string()))
        .unwrap_or(Value::Null);
    let input_path = write(
        "input.json",
        &serde_json::json!({
            "trial_id": input.trial_id,
            "arm": input.arm,
            "attempt": input.attempt,
            "target_skill": input.target_skill,
            "workspace": workspace_value,
            "case": case_json,
            "trajectory": trajectory_json,
        }),
    )?;
    let trajectory_path = write("trajectory.json", &trajectory_json)?;
    let case_path = write("case.json", &case_json)?;
    let empty = scratch.path().join("workspace");
    let cwd = match input.workspace {
        Some(workspace) if workspace.is_dir() => workspace.to_path_buf(),
        _ => {
            std::fs::create_dir_all(&empty).map_err(GraderError::EmptyWorkspace)?;
            empty
        }
    };
    let available = input.workspace.is_some_and(Path::is_dir);
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    env.extend([
        (
            "SKILL_LIFT_INPUT".to_string(),
            input_path.display().to_string(),
        ),
        (
            "SKILL_LIFT_TRAJECTORY".to_string(),
            trajectory_path.display().to_string(),
        ),
        (
            "SKILL_LIFT_CASE".to_string(),
            case_path.display().to_string(),
        ),
        (
            "SKILL_LIFT_WORKSPACE".to_string(),
            cwd.display().to_string(),
        ),
        ("SKILL_LIFT_ARM".to_string(), input.arm.to_string()),
        (
            "SKILL_LIFT_WORKSPACE_AVAILABLE".to_string(),
            if available { "1" } else { "0" }.to_string(),
        ),
    ]);
    let process = ProcessSpec {
        program: PathBuf::from("sh"),
        args: vec!["-c".to_string(), spec.command.clone()],
        cwd,
        env,
    };
    let limits = ProcessLimits {
        timeout: Duration::try_from_secs_f64(spec.timeout_s.clamp(0.001, 7.0 * 86_400.0))
            .unwrap_or(Duration::from_secs(300)),
        grace: Duration::from_secs(2),
        linger: Duration::from_secs(3600),
        max_stdout_bytes: crate::features::process::DEFAULT_MAX_STDOUT_BYTES,
        max_stderr_bytes: crate::features::process::DEFAULT_MAX_STDERR_BYTES,
    };
    let outcome = run_process(&process, limits, |_| false)
        .await
        .map_err(|source| GraderError::Process {
            grader: spec.name.clone(),
            source,
        })?;
    if outcome.stdout_dropped_bytes > 0 {
        return Err(GraderError::StdoutOverflow {
            grader: spec.name.clone(),
            limit: crate::features::process::DEFAULT_MAX_STDOUT_BYTES,
        });
    }
    if outcome.timed_out {
        return Err(GraderError::Timeout {
            grader: spec.name.clone(),
            timeout_s: spec.timeout_s,
        });
    }
    if outcome.exit_code != Some(0) {
        let status = match (outcome.exit_code, outcome.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            _ => "unknown status".to_string(),
        };
        return Err(GraderError::Failed {
            grader: spec.name.clone(),
            status,
            last_line: last_line(&outcome.stderr_tail),
        });
    }
    parse_grader_output(&spec.name, &outcome.stdout_lines).map_err(|source| GraderError::Output {
        grader: spec.name.clone(),
        source,
    })
}

/// The case as a grader sees it (the fields of `evals.json`, normalized).
fn case_document(case: &GoldenCase) -> Value {
    let expected_skill = match &case.expected_skill {
        crate::features::evalset::ExpectedSkill::Unspecified => None,
        crate::features::evalset::ExpectedSkill::None => Some(Value::Null),
        crate::features::evalset::ExpectedSkill::Named(name) => Some(Value::String(name.clone())),
    };
    let mut document = serde_json::json!({
        "id": case.id,
        "prompt": case.prompt,
        "expected_output": case.expected_output,
        "assertions": case.assertions,
        "checks": case.checks,
        "expected_script": case.expected_script,
        "acceptable_skills": case.acceptable_skills,
        "should_trigger": case.should_trigger,
        "cluster": case.cluster,
        "weight": case.weight,
    });
    if let (Some(expected), Value::Object(map)) = (expected_skill, &mut document) {
        map.insert("expected_skill".to_string(), expected);
    }
    document
}

fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    crate::disk::redact::truncate(line.trim(), 300)
}

/// Parse a grader's stdout under the contract (see the module documentation).
pub(crate) fn parse_grader_output(
    name: &str,
    lines: &[String],
) -> Result<BTreeMap<String, MetricResult>, GraderOutputError> {
    let whole = lines.join("\n");
    let object = serde_json::from_str::<Value>(whole.trim())
        .ok()
        .filter(Value::is_object)
        .or_else(|| {
            lines.iter().rev().find_map(|line| {
                serde_json::from_str::<Value>(line.trim())
                    .ok()
                    .filter(Value::is_object)
            })
        })
        .ok_or_else(|| GraderOutputError::NoObject {
            last_line: lines
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| crate::disk::redact::truncate(l, 200))
                .unwrap_or_default(),
        })?;
    let Value::Object(map) = object else {
        unreachable!("filtered to objects")
    };
    for key in map.keys() {
        if !matches!(key.as_str(), "overall" | "metrics" | "details") {
            return Err(GraderOutputError::UnknownKey { key: key.clone() });
        }
    }
    let score = |value: &Value, what: &str| -> Result<f64, GraderOutputError> {
        match value.as_f64() {
            Some(score) if (0.0..=1.0).contains(&score) => Ok(score),
            _ => Err(GraderOutputError::NotAScore {
                what: what.to_string(),
                value: value.to_string(),
            }),
        }
    };
    let details = map.get("details").cloned().unwrap_or(Value::Null);
    let reason_for = |metric: &str| -> String {
        let text = match details.get(metric) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Object(object)) => object
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_default(),
            _ => String::new(),
        };
        let text = if text.is_empty() {
            format!("custom grader `{name}`")
        } else {
            text
        };
        crate::disk::redact::truncate(text.lines().next().unwrap_or(""), 300)
    };
    let mut metrics = BTreeMap::new();
    match map.get("metrics") {
        None | Some(Value::Null) => {}
        Some(Value::Object(entries)) => {
            for (metric, value) in entries {
                if !is_metric_name(metric) {
                    return Err(GraderOutputError::BadMetricName {
                        metric: metric.clone(),
                    });
                }
                if RESERVED_METRIC_NAMES.contains(&metric.as_str()) {
                    return Err(GraderOutputError::ReservedMetric {
                        metric: metric.clone(),
                    });
                }
                let value = score(value, &format!("metrics.{metric}"))?;
                metrics.insert(
                    metric.clone(),
                    MetricResult {
                        score: Some(value),
                        reason: reason_for(metric),
                        source: MetricSource::Custom,
                        sub_scores: BTreeMap::new(),
                        judge: None,
                    },
                );
            }
        }
        Some(other) => {
            return Err(GraderOutputError::MetricsNotObject {
                value: other.to_string(),
            });
        }
    }
    let overall = match map.get("overall") {
        None | Some(Value::Null) => None,
        Some(value) => Some(score(value, "overall")?),
    };
    if metrics.is_empty() {
        let overall = overall.ok_or(GraderOutputError::NoScore)?;
        metrics.insert(
            name.to_string(),
            MetricResult {
                score: Some(overall),
                reason: reason_for(name),
                source: MetricSource::Custom,
                sub_scores: BTreeMap::new(),
                judge: None,
            },
        );
    }
    Ok(metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn specs_are_named_and_reserved_names_refused() {
        let specs = parse_grader_specs(
            &[
                "style=python3 grade.py".to_string(),
                "./check.sh --strict".to_string(),
                "FOO=1 ./other.sh".to_string(),
            ],
            30.0,
        )
        .unwrap();
        assert_eq!(specs[0].name, "style");
        assert_eq!(specs[0].command, "python3 grade.py");
        assert_eq!(specs[1].name, "custom");
        assert_eq!(specs[2].name, "custom3");
        assert_eq!(specs[2].command, "FOO=1 ./other.sh");
        assert!(parse_grader_specs(&["security=./x".to_string()], 1.0).is_err());
        assert!(parse_grader_specs(&["=echo hi".to_string()], 1.0).is_err());
        assert!(parse_grader_specs(&["a=./x".to_string(), "a=./y".to_string()], 1.0).is_err());
    }

    #[test]
    fn output_contract() {
        let metrics = parse_grader_output(
            "style",
            &lines("some log\n{\"overall\": 0.5, \"metrics\": {\"tone\": 1, \"length\": 0.25}, \"details\": {\"tone\": \"polite\"}}"),
        )
        .unwrap();
        assert_eq!(metrics.len(), 2);
        assert_eq!(metrics["tone"].score, Some(1.0));
        assert_eq!(metrics["tone"].reason, "polite");
        assert_eq!(metrics["length"].source, MetricSource::Custom);
        let overall_only = parse_grader_output("style", &lines("{\"overall\": 0.75}")).unwrap();
        assert_eq!(overall_only["style"].score, Some(0.75));
        let pretty = parse_grader_output("g", &lines("{\n  \"overall\": 1\n}")).unwrap();
        assert_eq!(pretty["g"].score, Some(1.0));
    }

    #[test]
    fn contract_violations_are_errors() {
        let error = |text: &str| {
            parse_grader_output("g", &lines(text))
                .unwrap_err()
                .to_string()
        };
        assert!(error("no json here").contains("no JSON object"));
        assert!(error("{\"metrics\": {\"accuracy\": 1}}").contains("reserved"));
        assert!(error("{\"metrics\": {\"overall\": 1}}").contains("reserved"));
        assert!(error("{\"overall\": 1.5}").contains("[0, 1]"));
        assert!(error("{\"overall\": 1, \"score\": 2}").contains("unknown key"));
        assert!(error("{\"details\": {}}").contains("neither"));
        assert!(error("{\"metrics\": {\"Bad Name\": 1}}").contains("must match"));
    }
}
