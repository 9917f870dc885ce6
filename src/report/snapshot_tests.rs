//! Snapshot tests of every export format on a fixture run with known numbers, and a test that
//! the composite lift agrees across all formats. Times, paths and run ids are redacted in the
//! snapshots (`insta` filters), so a snapshot changes only when a format changes.
//!
//! The fixture: 8 cases, K = 2. Case lifts +1, +0.5, 0, 0, −0.5, +1 and (one with-skill attempt
//! unscoreable) +1, so the composite lift over the 7 paired cases is 3/7; the eighth case has no
//! scored with-skill attempt and is excluded (JUnit: skipped).

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Value, json};

use super::{Format, RunExport, render};
use crate::analysis::{AnalysisSettings, Summary, analyze};
use crate::record::{Arm, CheckResult, Outcome};
use crate::record::{
    AssetInfo, DecoyInfo, DecoysInfo, EvalSetInfo, FORMAT_VERSION, Manifest, RunnerInfo,
    TrialRecord,
};
use crate::values::trajectory::Usage;

const RUN_ID: &str = "20261129T120000Z-pirate-greeting-1a2b";
const LIFT: f64 = 3.0 / 7.0;

fn time(second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, second).unwrap()
}

fn manifest(case_ids: &[&str]) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        skill_lift_version: "0.1.0".to_string(),
        run_id: RUN_ID.to_string(),
        created_at: time(0),
        asset: AssetInfo {
            name: "pirate-greeting".to_string(),
            path: PathBuf::from("/home/ci/skills/pirate-greeting"),
            fingerprint: format!("sha256:{}", "ab".repeat(32)),
            calibre: "v3-agent-skills".to_string(),
            fingerprint_files: vec!["SKILL.md".to_string()],
            warnings: vec![],
        },
        eval_set: EvalSetInfo {
            path: PathBuf::from("/home/ci/skills/pirate-greeting/evals/evals.json"),
            digest: format!("sha256:{}", "cd".repeat(32)),
            format: "skill-lift".to_string(),
            case_ids: case_ids.iter().map(|c| c.to_string()).collect(),
            case_clusters: BTreeMap::new(),
            case_labels: BTreeMap::new(),
            allow_draft: false,
        },
        runner: RunnerInfo {
            name: "local".to_string(),
            kind: "openai-chat".to_string(),
            profile_path: PathBuf::from("/home/ci/runners/local.toml"),
            profile_digest: format!("sha256:{}", "ef".repeat(32)),
            skill_mode: "inject".to_string(),
            base_url: "http://127.0.0.1:8080/v1".to_string(),
            capabilities: None,
        },
        model: "qwen2.5-0.5b-instruct".to_string(),
        k: 2,
        seed: 42,
        decoys: DecoysInfo {
            source: "builtin".to_string(),
            skills: vec![DecoyInfo {
                name: "api-debug".to_string(),
                fingerprint: format!("sha256:{}", "01".repeat(32)),
            }],
        },
        trials_planned: case_ids.len() * 4,
        grading: crate::record::GradingSettings::new(),
        // Paired arms, no calibration, reference, gates, stopping, reuse or shard.
        ..crate::test_support::manifest(&[], 2)
    }
}

fn record(case_id: &str, arm: Arm, attempt: u32, outcome: Outcome, index: u32) -> TrialRecord {
    let passed = outcome == Outcome::Pass;
    let scored = outcome.is_scored();
    TrialRecord {
        run_id: RUN_ID.to_string(),
        runner: "local".to_string(),
        model: "qwen2.5-0.5b-instruct".to_string(),
        observed_model: Some("qwen2.5-0.5b-instruct-q4".to_string()),
        outcome,
        reason: match outcome {
            Outcome::Pass => None,
            Outcome::Fail => Some("regex `^\\s*Aye!` did not match".to_string()),
            _ => Some("HTTP 503 after 3 retries".to_string()),
        },
        decided_by: scored.then_some(crate::record::PassBasis::OutputChecks),
        outcome_score: None,
        checks: if scored {
            vec![CheckResult {
                check_type: "regex".to_string(),
                passed,
                detail: format!(
                    "regex `^\\s*Aye!` {}",
                    if passed { "matched" } else { "did not match" }
                ),
            }]
        } else {
            vec![]
        },
        // Grading v2 metrics: checks, security, and a skill_execution that is higher with the
        // skill (target activated) than without.
        scores: if scored {
            BTreeMap::from([
                ("checks".to_string(), if passed { 1.0 } else { 0.0 }),
                ("security".to_string(), 1.0),
                (
                    "skill_execution".to_string(),
                    if arm == Arm::WithSkill { 0.75 } else { 0.0 },
                ),
            ])
        } else {
            BTreeMap::new()
        },
        composite: scored.then(|| {
            let checks = if passed { 1.0 } else { 0.0 };
            let execution = if arm == Arm::WithSkill { 0.75 } else { 0.0 };
            (checks + 1.0 + execution) / 3.0
        }),
        usage: Usage {
            input_tokens: Some(1000 + u64::from(index) * 10),
            output_tokens: Some(50 + u64::from(index)),
            cached_tokens: Some(0),
            cache_creation_tokens: None,
            cost_usd: None,
        },
        started_at: time(index),
        wall_s: 1.0 + f64::from(index) * 0.25,
        model_latency_s: 0.5 + f64::from(index) * 0.125,
        transcript: Some(format!(
            "transcripts/{case_id}.{}.{attempt}.json",
            arm.as_str()
        )),
        ..crate::test_support::trial_record(case_id, arm, attempt, outcome)
    }
}

/// The fixture run: manifest, records and summary.
pub(crate) fn fixture() -> (Manifest, Vec<TrialRecord>, Summary) {
    use Outcome::{Fail as F, Pass as P, Unscoreable as U};
    let cases: [(&str, [Outcome; 2], [Outcome; 2]); 8] = [
        ("greet-basic", [P, P], [F, F]),
        ("greet-formal", [P, P], [P, F]),
        ("greet-question", [P, F], [F, P]),
        ("greet-emoji", [P, P], [P, P]),
        ("greet-multiline", [F, F], [P, F]),
        ("greet-long", [P, P], [F, F]),
        ("greet-flaky", [P, U], [F, F]),
        ("greet-down", [U, U], [P, F]),
    ];
    let ids: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let manifest = manifest(&ids);
    let mut records = Vec::new();
    let mut index = 0;
    for attempt in 1..=2u32 {
        for (case_id, with, without) in &cases {
            for (arm, outcomes) in [(Arm::WithSkill, with), (Arm::WithoutSkill, without)] {
                records.push(record(
                    case_id,
                    arm,
                    attempt,
                    outcomes[attempt as usize - 1],
                    index,
                ));
                index += 1;
            }
        }
    }
    let summary = analyze(
        &manifest,
        &records,
        &AnalysisSettings {
            resamples: 2000,
            ..AnalysisSettings::new(42)
        },
    );
    (manifest, records, summary)
}

fn rendered(format: Format) -> String {
    let (manifest, records, summary) = fixture();
    let run = RunExport {
        manifest: &manifest,
        summary: &summary,
        records: &records,
        missing_transcripts: &Default::default(),
        answers: &[],
    };
    String::from_utf8(render(format, &run)).expect("exports are UTF-8")
}

macro_rules! assert_redacted_snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({
            prepend_module_to_snapshot => false,
            filters => vec![
                (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", "[TIME]"),
                (r"\d{8}T\d{6}Z-pirate-greeting-[0-9a-f]{4}", "[RUN_ID]"),
                (r"/home/ci/[A-Za-z0-9_./-]+", "[PATH]"),
            ],
        }, {
            insta::assert_snapshot!($name, $value);
        });
    };
}

#[test]
fn snapshot_every_format() {
    for format in Format::ALL {
        assert_redacted_snapshot!(format.file_name(), rendered(format));
    }
}

#[test]
fn snapshot_transcript_page() {
    let (_, records, _) = fixture();
    let document = json!({
        "trial_id": "greet-basic/with_skill/1",
        "prompt": "Say hello <to> the user",
        "trajectory": {
            "messages": [
                {"role": "system", "content": "You have skills."},
                {"role": "user", "content": "Say hello <to> the user"},
                {"role": "assistant", "content": "Aye! Hello."}
            ],
            "tool_calls": [{"id": "t1", "name": "activate_skill", "input": {"name": "pirate-greeting"}, "output": "ok", "is_error": false}],
            "skill_activations": [{"skill": "pirate-greeting", "evidence": "skill_tool", "ok": true}],
            "final_answer": "Aye! Hello.",
            "usage": {"input_tokens": 1000, "output_tokens": 50}
        }
    });
    assert_redacted_snapshot!(
        "transcript.html",
        super::html::transcript_html(&records[0], &document)
    );
}

#[test]
fn fixture_has_the_known_numbers() {
    let (_, _, summary) = fixture();
    assert!((summary.lift.estimate.unwrap() - LIFT).abs() < 1e-12);
    assert_eq!(summary.lift.n_cases, 7);
    assert_eq!(summary.arms.with_skill.trials.unscoreable, 3);
    assert!(summary.cases[7].excluded_reason.is_some());
}

fn close(a: f64, b: f64, tolerance: f64, what: &str) {
    assert!(
        (a - b).abs() <= tolerance,
        "{what}: {a} differs from the composite lift {b}"
    );
}

#[test]
fn pass_rate_lift_agrees_across_formats() {
    let (_, _, summary) = fixture();
    let lift = summary.lift.estimate.unwrap();
    close(lift, LIFT, 1e-12, "analysis");
    let json = |format| -> Value { serde_json::from_str(&rendered(format)).unwrap() };
    close(
        json(Format::SummaryJson)["lift"]["estimate"]
            .as_f64()
            .unwrap(),
        lift,
        1e-12,
        "summary.json",
    );
    close(
        json(Format::LiftJson)["pass_rate"]["delta"]
            .as_f64()
            .unwrap(),
        lift,
        1e-12,
        "lift.json pass_rate",
    );
    close(
        json(Format::Benchmark)["skill_lift"]["lift"]
            .as_f64()
            .unwrap(),
        lift,
        1e-12,
        "benchmark.json skill_lift",
    );
    // lift.csv: lift_pp of the pass-rate row, 6 decimals.
    let csv = rendered(Format::LiftCsv);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let column = headers.iter().position(|h| h == "lift_pp").unwrap();
    let row = reader.records().next().unwrap().unwrap();
    assert_eq!(&row[4], "pass_rate");
    close(
        row[column].parse::<f64>().unwrap() / 100.0,
        lift,
        1e-8,
        "lift.csv",
    );
    // cases.csv: the mean of the case lifts (with_skill rows).
    let csv = rendered(Format::CasesCsv);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let lifts: Vec<f64> = reader
        .records()
        .map(|r| r.unwrap())
        .filter(|r| &r[1] == "with_skill" && !r[9].is_empty())
        .map(|r| r[9].parse().unwrap())
        .collect();
    close(
        lifts.iter().sum::<f64>() / lifts.len() as f64,
        lift,
        1e-6,
        "cases.csv",
    );
    // junit.xml property.
    let xml = rendered(Format::Junit);
    let value = xml
        .split("name=\"skill_lift.lift\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    close(value.parse().unwrap(), lift, 1e-6, "junit.xml");
    // report.md headline, one decimal in percentage points.
    let markdown = rendered(Format::Markdown);
    assert!(
        markdown.contains(&format!("with − without): {:+.1} pp**", lift * 100.0)),
        "{markdown}"
    );
    // report.html: data attribute and headline.
    let html = rendered(Format::Html);
    assert!(html.contains(&format!("data-lift=\"{lift:.6}\"")));
    assert!(html.contains(&format!("with − without): {:+.1} pp", lift * 100.0)));
}

/// Regenerate `tests/fixtures/recorded-run/` (manifest, trials.jsonl, transcripts) from the
/// fixture: `cargo test --lib write_recorded_fixture_run -- --ignored`. The folder is the
/// recorded run `scripts/check-html-report` and the integration tests re-render.
#[test]
#[ignore]
fn write_recorded_fixture_run() {
    let (manifest, records, _) = fixture();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recorded-run");
    std::fs::create_dir_all(dir.join("transcripts")).unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let mut lines = String::new();
    for record in &records {
        lines.push_str(&serde_json::to_string(record).unwrap());
        lines.push('\n');
        let answer = if record.outcome == Outcome::Pass {
            "Aye! Hello there."
        } else {
            "Hello there."
        };
        let document = json!({
            "trial_id": record.trial_id,
            "case_id": record.case_id,
            "arm": record.arm,
            "attempt": record.attempt,
            "prompt": format!("Greet the user ({})", record.case_id),
            "grade": {"outcome": record.outcome, "reason": record.reason, "checks": record.checks, "scores": {}},
            "trajectory": {
                "messages": [
                    {"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": format!("Greet the user ({})", record.case_id)},
                    {"role": "assistant", "content": answer}
                ],
                "tool_calls": [],
                "skill_activations": [],
                "final_answer": answer,
                "usage": record.usage,
                "status": "complete"
            }
        });
        std::fs::write(
            dir.join(record.transcript.as_ref().unwrap()),
            serde_json::to_vec(&document).unwrap(),
        )
        .unwrap();
    }
    std::fs::write(dir.join("trials.jsonl"), lines).unwrap();
}

#[test]
fn snapshot_matrix() {
    let (_, _, first) = fixture();
    let mut second = first.clone();
    second.run_id = format!("{RUN_ID}-b");
    second.model = "qwen2.5-1.5b-instruct".to_string();
    let mut third = first.clone();
    third.run_id = format!("{RUN_ID}-c");
    third.fingerprint = format!("sha256:{}", "99".repeat(32));
    let matrix = super::matrix::pass_rate_matrix(&[&first, &second, &third]);
    assert_eq!(matrix.fingerprints.len(), 2);
    assert_eq!(matrix.models.len(), 2);
    assert_eq!(matrix.cells.len(), 3);
    assert_redacted_snapshot!(
        "matrix.json",
        String::from_utf8(super::matrix::matrix_json(&matrix)).unwrap()
    );
    assert_redacted_snapshot!("matrix.html", super::matrix::matrix_html(&matrix));
}

#[test]
fn merged_shards_analyze_exactly_like_the_whole_run() {
    use crate::features::shard::merge_shards;
    use crate::record::Shard;
    let (manifest, records, summary) = fixture();
    let shards: Vec<(PathBuf, Manifest, Vec<TrialRecord>)> = (1..=3)
        .map(|index| {
            let shard = Shard { index, count: 3 };
            let mut shard_manifest = manifest.clone();
            shard_manifest.shard = Some(shard);
            shard_manifest.run_id = format!("shard-{index}");
            let mine: Vec<TrialRecord> = records
                .iter()
                .filter(|r| shard.contains(&r.trial_id))
                .cloned()
                .collect();
            (
                PathBuf::from(format!("shard-{index}")),
                shard_manifest,
                mine,
            )
        })
        .collect();
    assert!(shards.iter().all(|(_, _, r)| !r.is_empty()));
    // Shards given in any order merge to the same run.
    let reversed: Vec<_> = shards.iter().rev().cloned().collect();
    for input in [&shards, &reversed] {
        let (merged_manifest, merged) = merge_shards(input, RUN_ID).unwrap();
        assert_eq!(merged_manifest, manifest);
        assert_eq!(merged, records);
        let again = analyze(
            &merged_manifest,
            &merged,
            &AnalysisSettings {
                resamples: 2000,
                ..AnalysisSettings::new(42)
            },
        );
        assert_eq!(again, summary);
    }
    // A trial in two shards is refused.
    let mut overlapping = shards.clone();
    overlapping[1].2.push(shards[0].2[0].clone());
    assert!(matches!(
        merge_shards(&overlapping, RUN_ID),
        Err(crate::features::shard::MergeError::Duplicate { .. })
    ));
    // So is a shard of another run.
    let mut other = shards.clone();
    other[2].1.k = 3;
    assert!(matches!(
        merge_shards(&other, RUN_ID),
        Err(crate::features::shard::MergeError::ManifestMismatch { field: "k", .. })
    ));
}

#[test]
fn composite_lift_agrees_across_formats() {
    let (_, _, summary) = fixture();
    let composite = summary
        .metric_lifts
        .iter()
        .find(|m| m.metric == crate::analysis::COMPOSITE)
        .unwrap();
    let lift = composite.estimate.unwrap();
    // The fixture's composite: (checks + security + skill_execution) / 3 per trial.
    let json = |format| -> Value { serde_json::from_str(&rendered(format)).unwrap() };
    close(
        json(Format::SummaryJson)["metric_lifts"][0]["estimate"]
            .as_f64()
            .unwrap(),
        lift,
        1e-12,
        "summary.json metric_lifts",
    );
    close(
        json(Format::LiftJson)["overall"]["delta"].as_f64().unwrap(),
        lift,
        1e-12,
        "lift.json overall",
    );
    let csv = rendered(Format::LiftCsv);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let column = headers.iter().position(|h| h == "lift_pp").unwrap();
    let row = reader
        .records()
        .map(|r| r.unwrap())
        .find(|r| &r[4] == "composite")
        .unwrap();
    let from_csv = row[column].parse::<f64>().unwrap();
    close(from_csv / 100.0, lift, 5e-9, "lift.csv");
    let shown = format!("{:+.1}", lift * 100.0);
    assert_eq!(format!("{from_csv:+.1}"), shown);
    let markdown = rendered(Format::Markdown);
    assert!(
        markdown.contains(&format!(
            "(mean of the metrics, with − without): {shown} pp**"
        )),
        "{markdown}"
    );
    assert!(markdown.contains("| composite | — | "));
    // cases.csv: paired mean of the case composites.
    let csv = rendered(Format::CasesCsv);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let column = headers.iter().position(|h| h == "composite").unwrap();
    let mut by_case: std::collections::BTreeMap<String, [Option<f64>; 2]> = Default::default();
    for row in reader.records().map(|r| r.unwrap()) {
        let arm = usize::from(&row[1] == "without_skill");
        by_case.entry(row[0].to_string()).or_default()[arm] = row[column].parse().ok();
    }
    let differences: Vec<f64> = by_case
        .values()
        .filter_map(|[a, b]| Some((*a)? - (*b)?))
        .collect();
    close(
        differences.iter().sum::<f64>() / differences.len() as f64,
        lift,
        1e-6,
        "cases.csv",
    );
    let html = rendered(Format::Html);
    assert!(
        html.contains(&format!("data-composite-lift=\"{lift:.6}\"")),
        "html"
    );
}

/// The records `for_each_planned_view` visits in `run_dir` (each as its debug text) or the error,
/// next to what `for_each_planned_trial` visits.
fn planned_reads(
    run_dir: &std::path::Path,
    manifest: &Manifest,
) -> [Result<Vec<String>, String>; 2] {
    let path = run_dir.join("trials.jsonl");
    let views = crate::record::for_each_planned_view(&path, manifest, Vec::new, |seen, record| {
        seen.push(format!("{record:?}"));
        Ok(())
    })
    .map(|(seen, _)| seen)
    .map_err(|e| e.to_string());
    let mut full = Vec::new();
    let records = crate::record::for_each_planned_trial(&path, manifest, |record| {
        full.push(format!("{:?}", record.view()));
        Ok(())
    })
    .map(|_| full)
    .map_err(|e| e.to_string());
    [views, records]
}

#[test]
fn planned_views_are_read_once_or_again_like_whole_records() {
    let (manifest, records, _) = fixture();
    let dir = tempfile::tempdir().unwrap();
    let line = |record: &TrialRecord| serde_json::to_string(record).unwrap() + "\n";
    let write =
        |lines: &[String]| std::fs::write(dir.path().join("trials.jsonl"), lines.concat()).unwrap();
    let mut lines: Vec<String> = records.iter().map(line).collect();
    // No record supersedes another: read in one pass.
    write(&lines);
    let [views, full] = planned_reads(dir.path(), &manifest);
    assert_eq!(views, full);
    assert_eq!(views.unwrap().len(), records.len());
    // A later record supersedes the first: the first is skipped.
    let retried = TrialRecord {
        supersedes: true,
        outcome: Outcome::Fail,
        ..records[0].clone()
    };
    lines.push(line(&retried));
    write(&lines);
    let [views, full] = planned_reads(dir.path(), &manifest);
    assert_eq!(views, full);
    let views = views.unwrap();
    assert_eq!(views.len(), records.len());
    assert_eq!(views.last().unwrap(), &format!("{:?}", retried.view()));
    // A superseded record outside the plan is skipped, not refused, whatever comes first.
    let mut outside = records[0].clone();
    outside.case_id = "not-planned".into();
    outside.trial_id = format!("not-planned/{}/{}", outside.arm.as_str(), outside.attempt);
    let mut superseded_outside = lines.clone();
    superseded_outside[0] = line(&outside);
    superseded_outside.push(line(&TrialRecord {
        supersedes: true,
        ..outside.clone()
    }));
    write(&superseded_outside);
    let [views, full] = planned_reads(dir.path(), &manifest);
    assert_eq!(views, full);
    // Refused lines: outside the plan, malformed; the first error is the same.
    for (at, bad) in [(3, line(&outside)), (2, "{\"run_id\":1}\n".to_string())] {
        for with_retry in [false, true] {
            let mut bad_lines = lines.clone();
            if !with_retry {
                bad_lines.pop();
            }
            bad_lines[at] = bad.clone();
            write(&bad_lines);
            let [views, full] = planned_reads(dir.path(), &manifest);
            assert!(full.is_err(), "{bad}");
            assert_eq!(views, full);
        }
    }
}
