//! Writes a synthetic recorded run (manifest.json + trials.jsonl) for the analysis benchmark:
//! `cargo run --release --example synthetic_run -- OUT_DIR CASES ATTEMPTS` (default 10,000 cases
//! × 50 attempts × 2 arms = 1,000,000 trials). Outcomes are drawn from a seeded ChaCha stream:
//! each case has its own difficulty and the skill adds about 10 pp.

use std::collections::BTreeMap;
use std::io::Write;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use skill_lift::grade::Outcome;
use skill_lift::grade::checks::CheckResult;
use skill_lift::record::{
    AssetInfo, DecoysInfo, EvalSetInfo, FORMAT_VERSION, Manifest, RunnerInfo, TrialRecord,
};
use skill_lift::trajectory::Usage;
use skill_lift::workspace::Arm;

fn main() {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().expect("OUT_DIR"));
    let cases: usize = args.next().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let attempts: u32 = args.next().and_then(|v| v.parse().ok()).unwrap_or(50);
    std::fs::create_dir_all(&out).expect("create out dir");
    let case_ids: Vec<String> = (0..cases).map(|i| format!("case-{i:06}")).collect();
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: "synthetic".to_string(),
        created_at: chrono::Utc::now(),
        asset: AssetInfo {
            name: "synthetic-skill".into(),
            path: "/synthetic".into(),
            fingerprint: "sha256:0000".into(),
            calibre: "v3-agent-skills".into(),
            fingerprint_files: vec!["SKILL.md".into()],
            warnings: vec![],
        },
        eval_set: EvalSetInfo {
            path: "/synthetic/evals/evals.json".into(),
            digest: "sha256:1111".into(),
            format: "agentskills".into(),
            case_ids: case_ids.clone(),
            case_clusters: BTreeMap::new(),
            allow_draft: false,
        },
        runner: RunnerInfo {
            name: "mock".into(),
            kind: "openai-chat".into(),
            profile_path: "/synthetic/mock.toml".into(),
            profile_digest: "sha256:2222".into(),
            skill_mode: "inject".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
        },
        model: "mock-model".into(),
        k: attempts,
        seed: 42,
        decoys: DecoysInfo {
            source: "builtin".into(),
            skills: vec![],
        },
        arms: Arm::ALL.to_vec(),
        trials_planned: cases * 2 * attempts as usize,
        grading: Default::default(),
        regraded_from: None,
        gates: None,
        shard: None,
    };
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_vec_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let file = std::fs::File::create(out.join("trials.jsonl")).unwrap();
    let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let started = chrono::Utc::now();
    for attempt in 1..=attempts {
        for (index, case_id) in case_ids.iter().enumerate() {
            let difficulty = (index as f64 * 0.618_033_988_7).fract() * 0.8;
            for arm in Arm::ALL {
                let p = difficulty + if arm == Arm::WithSkill { 0.1 } else { 0.0 };
                let passed = rng.random::<f64>() < p;
                let record = TrialRecord {
                    run_id: "synthetic".into(),
                    trial_id: format!("{case_id}/{}/{attempt}", arm.as_str()),
                    case_id: case_id.clone(),
                    arm,
                    attempt,
                    runner: "mock".into(),
                    model: "mock-model".into(),
                    observed_model: Some("mock-model-1".into()),
                    outcome: if passed { Outcome::Pass } else { Outcome::Fail },
                    reason: (!passed)
                        .then(|| "regex: answer does not match /^\\s*Aye!/".to_string()),
                    checks: vec![CheckResult {
                        check_type: "regex".into(),
                        passed,
                        detail: "answer matches /^\\s*Aye!/".into(),
                    }],
                    scores: BTreeMap::from([
                        ("checks".to_string(), if passed { 1.0 } else { 0.0 }),
                        ("security".to_string(), 1.0),
                        ("skill_efficiency".to_string(), p.min(1.0)),
                    ]),
                    composite: Some((if passed { 1.0 } else { 0.0 } + 1.0 + p.min(1.0)) / 3.0),
                    metrics: Default::default(),
                    other_judges: BTreeMap::new(),
                    other_judge_errors: BTreeMap::new(),
                    usage: Usage {
                        input_tokens: Some(900),
                        output_tokens: Some(50),
                        cached_tokens: Some(0),
                        cost_usd: None,
                    },
                    started_at: started,
                    wall_s: 0.5,
                    model_latency_s: 0.4,
                    requests: 1,
                    retries: vec![],
                    tool_calls: 0,
                    activated_skills: vec![],
                    transcript: Some(format!(
                        "transcripts/{case_id}.{}.{attempt}.json",
                        arm.as_str()
                    )),
                    workspace: None,
                    supersedes: false,
                    unscoreable_cause: None,
                    usage_partial: false,
                    infrastructure: None,
                    truncated: Vec::new(),
                };
                serde_json::to_writer(&mut writer, &record).unwrap();
                writer.write_all(b"\n").unwrap();
            }
        }
    }
    writer.flush().unwrap();
}
