//! Compatibility files so existing viewers can read a skill-lift run:
//!
//! - skill-creator's `benchmark.json` (anthropics/skills `aggregate_benchmark.py`), with numeric
//!   deltas computed as `with_skill − without_skill` from the arm labels (never from directory
//!   order) and the real `runs_per_configuration`;
//! - NVIDIA SkillEvaluator's (ACES) `lift.json` and `pass_at_k_lift.json`.
//!
//! These are views of the same analysis: the paired lift with its interval stays in
//! `summary.json`, and each file here carries it alongside the fields the viewer expects.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::analysis::Summary;
use crate::record::{Arm, TrialRecord};
use crate::report::RunExport;

/// pass@k: the share of paired cases that passed at least once in their K attempts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PassAtK {
    /// Attempts per case per arm.
    pub k: u32,
    /// Paired cases (scored in both arms).
    pub n_cases: usize,
    pub passed_cases_with_skill: usize,
    pub passed_cases_without_skill: usize,
    /// Fractions in [0,1]; `None` without paired cases.
    pub with_skill: Option<f64>,
    pub without_skill: Option<f64>,
    /// with − without, a fraction in [-1,1].
    pub delta: Option<f64>,
}

/// Compute pass@k over the cases in the paired analysis.
pub(crate) fn pass_at_k(summary: &Summary) -> PassAtK {
    let paired: Vec<_> = summary.cases.iter().filter(|c| c.lift.is_some()).collect();
    let n = paired.len();
    let with = paired
        .iter()
        .filter(|c| c.with_skill.trials.pass > 0)
        .count();
    let without = paired
        .iter()
        .filter(|c| c.without_skill.trials.pass > 0)
        .count();
    let rate = |count: usize| (n > 0).then(|| count as f64 / n as f64);
    PassAtK {
        k: summary.k,
        n_cases: n,
        passed_cases_with_skill: with,
        passed_cases_without_skill: without,
        with_skill: rate(with),
        without_skill: rate(without),
        delta: (n > 0).then(|| (with as f64 - without as f64) / n as f64),
    }
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("json serializes");
    bytes.push(b'\n');
    bytes
}

/// The descriptive direction of a point difference (the verdict, from the interval, is separate).
fn direction(delta: Option<f64>) -> &'static str {
    match delta {
        Some(d) if d > 0.0 => "improved",
        Some(d) if d < 0.0 => "regressed",
        Some(_) => "unchanged",
        None => "unknown",
    }
}

/// ACES-style `lift.json`: one entry per metric `{with_skill, without_skill, delta, direction}`
/// (`pass_rate`, then every graded metric) plus `overall`. `overall` is the composite (the
/// per-trial mean of the metrics, `crate::features::grade`), or the pass rate in runs without metrics.
/// Every entry also carries the interval, method, N and the interval-based verdict; `direction`
/// is descriptive (the sign of the point difference).
pub(crate) fn lift_json(summary: &Summary) -> Vec<u8> {
    let lift = &summary.lift;
    let entry = |with_direction: bool| {
        let mut value = json!({
            "with_skill": summary.arms.with_skill.pass_rate,
            "without_skill": summary.arms.without_skill.pass_rate,
            "delta": lift.estimate,
            "ci_low": lift.ci_low,
            "ci_high": lift.ci_high,
            "method": lift.method,
            "n_cases": lift.n_cases,
            "k": lift.k,
            "verdict": lift.verdict.as_str(),
        });
        if with_direction {
            value["direction"] = json!(direction(lift.estimate));
        } else {
            value["metric"] = json!(lift.metric);
        }
        value
    };
    let mut document = serde_json::Map::new();
    document.insert(lift.metric.clone(), entry(true));
    let metric_entry = |metric: &crate::analysis::MetricLift| {
        json!({
            "with_skill": metric.with_skill,
            "without_skill": metric.without_skill,
            "delta": metric.estimate,
            "direction": direction(metric.estimate),
            "ci_low": metric.ci_low,
            "ci_high": metric.ci_high,
            "method": metric.method,
            "n_cases": metric.n_cases,
            "verdict": metric.verdict.as_str(),
        })
    };
    let mut overall = None;
    for metric in &summary.metric_lifts {
        if metric.metric == crate::analysis::COMPOSITE {
            let mut value = metric_entry(metric);
            value["metric"] = json!(crate::analysis::COMPOSITE);
            overall = Some(value);
        } else {
            document.insert(metric.metric.clone(), metric_entry(metric));
        }
    }
    document.insert(
        "overall".to_string(),
        overall.unwrap_or_else(|| entry(false)),
    );
    pretty(&Value::Object(document))
}

/// ACES-style `pass_at_k_lift.json`: `{with_skill, without_skill, delta, passed_cases_delta}`
/// plus `k`, the case counts and N.
pub(crate) fn pass_at_k_lift_json(summary: &Summary) -> Vec<u8> {
    let at_k = pass_at_k(summary);
    pretty(&json!({
        "k": at_k.k,
        "with_skill": at_k.with_skill,
        "without_skill": at_k.without_skill,
        "delta": at_k.delta,
        "passed_cases_delta": at_k.passed_cases_with_skill as i64 - at_k.passed_cases_without_skill as i64,
        "passed_cases_with_skill": at_k.passed_cases_with_skill,
        "passed_cases_without_skill": at_k.passed_cases_without_skill,
        "total_cases": at_k.n_cases,
    }))
}

/// `{mean, stddev, min, max}` of `values` (sample standard deviation; 0 with one value, as
/// skill-creator writes it), or nulls when empty.
fn statistics(values: &[f64]) -> Value {
    if values.is_empty() {
        return json!({"mean": null, "stddev": null, "min": null, "max": null});
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let stddev = if values.len() > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    json!({"mean": mean, "stddev": stddev, "min": min, "max": max})
}

fn difference(a: &Value, b: &Value) -> Value {
    match (a["mean"].as_f64(), b["mean"].as_f64()) {
        (Some(a), Some(b)) => json!(a - b),
        _ => Value::Null,
    }
}

/// skill-creator's `benchmark.json`. `runs[]` holds every scored trial (one run per attempt;
/// `result.pass_rate` is 1 or 0 by the trial's outcome, `passed`/`failed`/`total` count its
/// checks); unscoreable and not-gradable trials are left out of `runs` and counted in `notes`.
/// `run_summary` is skill-creator's unpaired per-configuration summary with numeric deltas
/// (`with_skill − without_skill`); the paired lift is under `skill_lift`.
pub(crate) fn benchmark_json(run: &RunExport) -> Vec<u8> {
    let manifest = run.manifest;
    let summary = run.summary;
    // Each case id's 1-based place in the eval set (its first, should an id repeat): one map,
    // not a search of the list per record.
    let mut places: HashMap<&str, usize> = HashMap::with_capacity(manifest.eval_set.case_ids.len());
    for (index, case_id) in manifest.eval_set.case_ids.iter().enumerate() {
        places.entry(case_id.as_str()).or_insert(index + 1);
    }
    let case_index = |case_id: &str| places.get(case_id).copied();
    let mut records: Vec<_> = run.records.iter().collect();
    records.sort_by(|a, b| {
        let key = |r: &TrialRecord| {
            (
                case_index(&r.case_id).unwrap_or(usize::MAX),
                r.arm,
                r.attempt,
            )
        };
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then_with(|| a.case_id.cmp(&b.case_id))
            .then(ka.1.cmp(&kb.1))
            .then(ka.2.cmp(&kb.2))
    });
    let mut runs = Vec::new();
    let mut left_out = 0usize;
    let mut per_arm: [(Vec<f64>, Vec<f64>, Vec<f64>); 2] = Default::default();
    for record in records {
        if !record.outcome.is_scored() {
            left_out += 1;
            continue;
        }
        let passed = record.checks.iter().filter(|c| c.passed).count();
        let pass_rate = if record.outcome == crate::record::Outcome::Pass {
            1.0
        } else {
            0.0
        };
        let tokens = match (record.usage.input_tokens, record.usage.output_tokens) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        // The benchmark's two configurations are the classic pair; the other arms are listed
        // as runs of their own configuration only.
        let index = match record.arm {
            Arm::WithSkill => Some(0),
            Arm::WithoutSkill => Some(1),
            _ => None,
        };
        if let Some(index) = index {
            per_arm[index].0.push(pass_rate);
            per_arm[index].1.push(record.wall_s);
            if let Some(tokens) = tokens {
                per_arm[index].2.push(tokens as f64);
            }
        }
        runs.push(json!({
            "eval_id": case_index(&record.case_id),
            "eval_name": record.case_id,
            "configuration": record.arm.as_str(),
            "run_number": record.attempt,
            "result": {
                "pass_rate": pass_rate,
                "passed": passed,
                "failed": record.checks.len() - passed,
                "total": record.checks.len(),
                "time_seconds": record.wall_s,
                "tokens": tokens,
                "tool_calls": record.tool_calls,
                "errors": record.retries.len(),
            },
            "expectations": record.checks.iter().map(|c| json!({
                "text": c.check_type,
                "passed": c.passed,
                "evidence": c.detail,
            })).collect::<Vec<_>>(),
            "notes": record.reason.iter().collect::<Vec<_>>(),
        }));
    }
    let arm_summary = |(rates, times, tokens): &(Vec<f64>, Vec<f64>, Vec<f64>)| {
        json!({
            "pass_rate": statistics(rates),
            "time_seconds": statistics(times),
            "tokens": statistics(tokens),
        })
    };
    let with = arm_summary(&per_arm[0]);
    let without = arm_summary(&per_arm[1]);
    let delta = json!({
        "pass_rate": difference(&with["pass_rate"], &without["pass_rate"]),
        "time_seconds": difference(&with["time_seconds"], &without["time_seconds"]),
        "tokens": difference(&with["tokens"], &without["tokens"]),
    });
    let mut notes = vec![
        "delta is with_skill − without_skill (numbers, not strings); run_summary is unpaired, as skill-creator computes it; the paired case-level lift with its 95% interval is under skill_lift".to_string(),
    ];
    if left_out > 0 {
        notes.push(format!(
            "{left_out} unscoreable or not-gradable trials are not in runs (infrastructure failures are not skill failures)"
        ));
    }
    let lift = &summary.lift;
    pretty(&json!({
        "metadata": {
            "skill_name": summary.asset,
            "skill_path": manifest.asset.path,
            "executor_model": summary.model,
            "analyzer_model": null,
            "timestamp": manifest.created_at.to_rfc3339(),
            "evals_run": manifest.eval_set.case_ids,
            "runs_per_configuration": manifest.k,
        },
        "runs": runs,
        "run_summary": {
            "with_skill": with,
            "without_skill": without,
            "delta": delta,
        },
        "skill_lift": {
            "run_id": summary.run_id,
            "metric": lift.metric,
            "lift": lift.estimate,
            "ci_low": lift.ci_low,
            "ci_high": lift.ci_high,
            "method": lift.method,
            "n_cases": lift.n_cases,
            "k": lift.k,
            "verdict": lift.verdict.as_str(),
        },
        "notes": notes,
    }))
}
