//! Writes synthetic recorded runs (manifest.json + trials.jsonl) with a known truth.
//!
//! - Benchmark: `synthetic_run OUT_DIR CASES ATTEMPTS` (default 10,000 cases × 50 attempts × 2
//!   arms = 1,000,000 trials) for `scripts/bench-analysis`; each case has its own difficulty and
//!   the skill adds about 10 pp.
//! - Coverage: `synthetic_run --scenario NAME --runs R [--zero-lift] [--seed S] OUT_DIR` writes
//!   R run folders `OUT_DIR/run-000000 …` of one scenario of `scripts/check-coverage` and
//!   `OUT_DIR/truth.json` (`{"scenario", "zero_lift", "lift", "with_skill", "without_skill",
//!   "runs"}`: the population lift and arm pass rates every interval should cover). Each run
//!   draws fresh cases from the scenario's case distribution, so the truth is the population
//!   mean, not the mean of one run's cases. `--zero-lift` gives the with-skill arm the
//!   baseline's pass probabilities (true lift 0). `--scenario list` prints the scenarios.
//!
//! Outcomes come from a seeded ChaCha20 stream: the same arguments write the same bytes.
#![allow(clippy::disallowed_methods)]
// a fixture generator, not the product: it writes its files directly

// A benchmark helper's own output, not skill-lift's terminal.
#![allow(clippy::disallowed_macros)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use skill_lift::record::{Arm, CheckResult, Outcome};
use skill_lift::record::{
    AssetInfo, DecoysInfo, EvalSetInfo, FORMAT_VERSION, Manifest, RunnerInfo, TrialRecord,
};
use skill_lift::values::trajectory::Usage;

/// How a scenario's cases are drawn: per case, the baseline's and the with-skill arm's pass
/// probabilities, and the case's cluster label.
#[derive(Clone, Copy)]
enum CaseModel {
    /// Every case has the same probabilities.
    Homogeneous { with: f64, without: f64 },
    /// Three equally likely difficulty levels: (baseline, with-skill) probabilities.
    Mixed([(f64, f64); 3]),
    /// Baseline `low + span·Beta(2,2)`, lift `Uniform(0, 2·lift)` per case (mean `lift`).
    Beta { low: f64, span: f64, lift: f64 },
    /// `clusters` clusters of `per_cluster` cases: cluster level `low + span·Beta(2,2)`, case
    /// baseline = level + `Uniform(-jitter, jitter)`, lift `Uniform(0, 2·lift)` per cluster.
    Clustered {
        clusters: usize,
        per_cluster: usize,
        low: f64,
        span: f64,
        jitter: f64,
        lift: f64,
    },
}

/// One scenario of the coverage grid.
struct Scenario {
    name: &'static str,
    /// In the grid (`scripts/check-coverage` runs these by default); the others are
    /// the switch-point study of docs/statistics.md.
    grid: bool,
    cases: usize,
    attempts: u32,
    model: CaseModel,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "k1-n20-50-vs-30",
        grid: true,
        cases: 20,
        attempts: 1,
        model: CaseModel::Homogeneous {
            with: 0.5,
            without: 0.3,
        },
    },
    Scenario {
        name: "k1-n20-mixed",
        grid: true,
        cases: 20,
        attempts: 1,
        model: CaseModel::Mixed([(0.1, 0.2), (0.45, 0.75), (0.85, 0.95)]),
    },
    Scenario {
        name: "k3-n30-beta",
        grid: true,
        cases: 30,
        attempts: 3,
        model: CaseModel::Beta {
            low: 0.05,
            span: 0.6,
            lift: 0.15,
        },
    },
    Scenario {
        name: "k5-n10-beta",
        grid: true,
        cases: 10,
        attempts: 5,
        model: CaseModel::Beta {
            low: 0.05,
            span: 0.6,
            lift: 0.15,
        },
    },
    Scenario {
        name: "clusters-5x6-k3",
        grid: true,
        cases: 30,
        attempts: 3,
        model: CaseModel::Clustered {
            clusters: 5,
            per_cluster: 6,
            low: 0.1,
            span: 0.45,
            jitter: 0.1,
            lift: 0.15,
        },
    },
    Scenario {
        name: "k3-n30-98-vs-90",
        grid: true,
        cases: 30,
        attempts: 3,
        model: CaseModel::Homogeneous {
            with: 0.98,
            without: 0.90,
        },
    },
    // Heavier ties than 0.98 vs 0.90: about five non-zero case differences per run, often
    // one or two.
    Scenario {
        name: "k3-n30-99-vs-95",
        grid: true,
        cases: 30,
        attempts: 3,
        model: CaseModel::Homogeneous {
            with: 0.99,
            without: 0.95,
        },
    },
    Scenario {
        name: "k3-n15-beta",
        grid: false,
        cases: 15,
        attempts: 3,
        model: CaseModel::Beta {
            low: 0.05,
            span: 0.6,
            lift: 0.15,
        },
    },
    Scenario {
        name: "k3-n20-beta",
        grid: false,
        cases: 20,
        attempts: 3,
        model: CaseModel::Beta {
            low: 0.05,
            span: 0.6,
            lift: 0.15,
        },
    },
    Scenario {
        name: "k3-n50-beta",
        grid: false,
        cases: 50,
        attempts: 3,
        model: CaseModel::Beta {
            low: 0.05,
            span: 0.6,
            lift: 0.15,
        },
    },
    Scenario {
        name: "k3-n50-98-vs-90",
        grid: false,
        cases: 50,
        attempts: 3,
        model: CaseModel::Homogeneous {
            with: 0.98,
            without: 0.90,
        },
    },
    Scenario {
        name: "k3-n100-98-vs-90",
        grid: false,
        cases: 100,
        attempts: 3,
        model: CaseModel::Homogeneous {
            with: 0.98,
            without: 0.90,
        },
    },
    Scenario {
        name: "k3-n30-98-vs-95",
        grid: false,
        cases: 30,
        attempts: 3,
        model: CaseModel::Homogeneous {
            with: 0.98,
            without: 0.95,
        },
    },
    Scenario {
        name: "k3-n20-98-vs-90",
        grid: false,
        cases: 20,
        attempts: 3,
        model: CaseModel::Homogeneous {
            with: 0.98,
            without: 0.90,
        },
    },
    Scenario {
        name: "k5-n10-98-vs-90",
        grid: false,
        cases: 10,
        attempts: 5,
        model: CaseModel::Homogeneous {
            with: 0.98,
            without: 0.90,
        },
    },
    Scenario {
        name: "clusters-10x3-k3",
        grid: false,
        cases: 30,
        attempts: 3,
        model: CaseModel::Clustered {
            clusters: 10,
            per_cluster: 3,
            low: 0.1,
            span: 0.45,
            jitter: 0.1,
            lift: 0.15,
        },
    },
    Scenario {
        name: "clusters-20x3-k3",
        grid: false,
        cases: 60,
        attempts: 3,
        model: CaseModel::Clustered {
            clusters: 20,
            per_cluster: 3,
            low: 0.1,
            span: 0.45,
            jitter: 0.1,
            lift: 0.15,
        },
    },
    Scenario {
        name: "clusters-40x2-k3",
        grid: false,
        cases: 80,
        attempts: 3,
        model: CaseModel::Clustered {
            clusters: 40,
            per_cluster: 2,
            low: 0.1,
            span: 0.45,
            jitter: 0.1,
            lift: 0.15,
        },
    },
];

/// Beta(2, 2): the median of three uniforms.
fn beta22(rng: &mut ChaCha20Rng) -> f64 {
    let mut u = [
        rng.random::<f64>(),
        rng.random::<f64>(),
        rng.random::<f64>(),
    ];
    u.sort_by(f64::total_cmp);
    u[1]
}

impl CaseModel {
    /// Population means `(lift, with-skill rate, baseline rate)`.
    fn truth(self, zero_lift: bool) -> (f64, f64, f64) {
        let (with, without) = match self {
            CaseModel::Homogeneous { with, without } => (with, without),
            CaseModel::Mixed(levels) => (
                levels.iter().map(|l| l.1).sum::<f64>() / 3.0,
                levels.iter().map(|l| l.0).sum::<f64>() / 3.0,
            ),
            CaseModel::Beta { low, span, lift }
            | CaseModel::Clustered {
                low, span, lift, ..
            } => (low + span / 2.0 + lift, low + span / 2.0),
        };
        let with = if zero_lift { without } else { with };
        (with - without, with, without)
    }

    /// Draws one run's cases: `(with-skill p, baseline p, cluster)` per case.
    fn draw(
        self,
        cases: usize,
        zero_lift: bool,
        rng: &mut ChaCha20Rng,
    ) -> Vec<(f64, f64, Option<String>)> {
        let mut drawn = Vec::with_capacity(cases);
        match self {
            CaseModel::Homogeneous { with, without } => {
                drawn.resize(cases, (with, without, None));
            }
            CaseModel::Mixed(levels) => {
                for _ in 0..cases {
                    let (without, with) = levels[rng.random_range(0..3usize)];
                    drawn.push((with, without, None));
                }
            }
            CaseModel::Beta { low, span, lift } => {
                for _ in 0..cases {
                    let without = low + span * beta22(rng);
                    let with = without + 2.0 * lift * rng.random::<f64>();
                    drawn.push((with, without, None));
                }
            }
            CaseModel::Clustered {
                clusters,
                per_cluster,
                low,
                span,
                jitter,
                lift,
            } => {
                for cluster in 0..clusters {
                    let level = low + span * beta22(rng);
                    let cluster_lift = 2.0 * lift * rng.random::<f64>();
                    for _ in 0..per_cluster {
                        let jittered = level + jitter * (2.0 * rng.random::<f64>() - 1.0);
                        let without = jittered.clamp(0.0, 1.0);
                        let with = (without + cluster_lift).min(1.0);
                        drawn.push((with, without, Some(format!("cluster-{cluster}"))));
                    }
                }
            }
        }
        if zero_lift {
            for case in &mut drawn {
                case.0 = case.1;
            }
        }
        drawn
    }
}

fn manifest(
    run_id: &str,
    case_ids: &[String],
    clusters: BTreeMap<String, String>,
    attempts: u32,
) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run_id.to_string(),
        created_at: chrono::DateTime::from_timestamp(1_767_225_600, 0).expect("valid time"),
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
            case_ids: case_ids.to_vec(),
            case_clusters: clusters,
            case_labels: Default::default(),
            allow_draft: false,
        },
        runner: RunnerInfo {
            name: "mock".into(),
            kind: "openai-chat".into(),
            profile_path: "/synthetic/mock.toml".into(),
            profile_digest: "sha256:2222".into(),
            skill_mode: "inject".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            capabilities: None,
        },
        model: "mock-model".into(),
        k: attempts,
        seed: 42,
        decoys: DecoysInfo {
            source: "builtin".into(),
            skills: vec![],
        },
        arms: Arm::PAIRED.to_vec(),
        arm_design: Default::default(),
        calibration: None,
        reference: None,
        previous: None,
        trials_planned: case_ids.len() * 2 * attempts as usize,
        grading: Default::default(),
        regraded_from: None,
        shard: None,
        gates: None,
        stopping: None,
        trial_keys: None,
        reuse: None,
        skill_order: Default::default(),
        version_policy: None,
        equivalence_margin: None,
        quality_contract: None,
    }
}

/// A check-graded trial record (the pass decides `checks` and the composite).
fn record(
    run_id: &str,
    case_id: &str,
    arm: Arm,
    attempt: u32,
    passed: bool,
    started: chrono::DateTime<chrono::Utc>,
) -> TrialRecord {
    let score = if passed { 1.0 } else { 0.0 };
    TrialRecord {
        run_id: run_id.into(),
        trial_id: format!("{case_id}/{}/{attempt}", arm.as_str()),
        case_id: case_id.to_string(),
        arm,
        attempt,
        runner: "mock".into(),
        model: "mock-model".into(),
        observed_model: None,
        outcome: if passed { Outcome::Pass } else { Outcome::Fail },
        reason: (!passed).then(|| "contains: answer does not contain `ok`".to_string()),
        decided_by: Some(skill_lift::record::PassBasis::OutputChecks),
        outcome_score: None,
        checks: vec![CheckResult {
            check_type: "contains".into(),
            passed,
            detail: "answer contains `ok`".into(),
        }],
        scores: BTreeMap::from([("checks".to_string(), score)]),
        composite: Some(score),
        metrics: Default::default(),
        other_judges: BTreeMap::new(),
        other_judge_errors: BTreeMap::new(),
        usage: Usage::default(),
        started_at: started,
        wall_s: 0.1,
        model_latency_s: 0.1,
        requests: 1,
        retries: vec![],
        tool_calls: 0,
        tool_call_errors: 0,
        activated_skills: vec![],
        transcript: None,
        transcript_span: None,
        workspace: None,
        supersedes: false,
        unscoreable_cause: None,
        usage_partial: false,
        infrastructure: None,
        truncated: Vec::new(),
        reused_from: None,
        judge_usage: None,
        skill_order: None,
    }
}

fn write_json(path: &Path, value: &impl serde::Serialize) {
    std::fs::write(path, serde_json::to_vec_pretty(value).expect("serializes"))
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// `--scenario` mode: R run folders of one scenario plus `truth.json`.
fn write_scenario(mut args: impl Iterator<Item = String>) {
    let mut name = None;
    let mut runs = 1000usize;
    let mut seed = 1u64;
    let mut zero_lift = false;
    let mut out = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--scenario" => name = args.next(),
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--seed" => seed = args.next().and_then(|v| v.parse().ok()).expect("--seed S"),
            "--zero-lift" => zero_lift = true,
            other => out = Some(std::path::PathBuf::from(other)),
        }
    }
    let name = name.expect("--scenario NAME");
    if name == "list" {
        for scenario in SCENARIOS {
            println!(
                "{} {} (N = {}, K = {})",
                scenario.name,
                if scenario.grid { "grid" } else { "study" },
                scenario.cases,
                scenario.attempts
            );
        }
        return;
    }
    let Some(scenario) = SCENARIOS.iter().find(|s| s.name == name) else {
        eprintln!("unknown scenario `{name}`; `--scenario list` names them");
        std::process::exit(2);
    };
    let out = out.expect("OUT_DIR");
    std::fs::create_dir_all(&out).expect("create out dir");
    // One stream per (scenario, zero-lift, seed): the same arguments give the same runs.
    let stream = scenario
        .name
        .bytes()
        .fold(seed, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let mut rng = ChaCha20Rng::seed_from_u64(stream ^ u64::from(zero_lift));
    let started = chrono::DateTime::from_timestamp(1_767_225_600, 0).expect("valid time");
    let case_ids: Vec<String> = (0..scenario.cases)
        .map(|i| format!("case-{i:03}"))
        .collect();
    for run in 0..runs {
        let run_id = format!("run-{run:06}");
        let dir = out.join(&run_id);
        std::fs::create_dir_all(&dir).expect("create run dir");
        let cases = scenario.model.draw(scenario.cases, zero_lift, &mut rng);
        let clusters: BTreeMap<String, String> = case_ids
            .iter()
            .zip(&cases)
            .filter_map(|(id, case)| case.2.clone().map(|c| (id.clone(), c)))
            .collect();
        write_json(
            &dir.join("manifest.json"),
            &manifest(&run_id, &case_ids, clusters, scenario.attempts),
        );
        let file = std::fs::File::create(dir.join("trials.jsonl")).expect("create trials.jsonl");
        let mut writer = std::io::BufWriter::new(file);
        for (case_id, (with, without, _)) in case_ids.iter().zip(&cases) {
            for attempt in 1..=scenario.attempts {
                for arm in Arm::PAIRED {
                    let p = if arm == Arm::WithSkill {
                        *with
                    } else {
                        *without
                    };
                    let passed = rng.random::<f64>() < p;
                    let trial = record(&run_id, case_id, arm, attempt, passed, started);
                    serde_json::to_writer(&mut writer, &trial).expect("serializes");
                    writer.write_all(b"\n").expect("write trials.jsonl");
                }
            }
        }
        writer.flush().expect("write trials.jsonl");
    }
    let (lift, with, without) = scenario.model.truth(zero_lift);
    write_json(
        &out.join("truth.json"),
        &serde_json::json!({
            "scenario": scenario.name,
            "zero_lift": zero_lift,
            "cases": scenario.cases,
            "k": scenario.attempts,
            "lift": lift,
            "with_skill": with,
            "without_skill": without,
            "runs": runs,
            "seed": seed,
        }),
    );
}

fn main() {
    if std::env::args().any(|a| a == "--scenario") {
        write_scenario(std::env::args().skip(1));
        return;
    }
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
            case_labels: Default::default(),
            allow_draft: false,
        },
        runner: RunnerInfo {
            name: "mock".into(),
            kind: "openai-chat".into(),
            profile_path: "/synthetic/mock.toml".into(),
            profile_digest: "sha256:2222".into(),
            skill_mode: "inject".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            capabilities: None,
        },
        model: "mock-model".into(),
        k: attempts,
        seed: 42,
        decoys: DecoysInfo {
            source: "builtin".into(),
            skills: vec![],
        },
        arms: Arm::PAIRED.to_vec(),
        arm_design: Default::default(),
        calibration: None,
        reference: None,
        previous: None,
        trials_planned: cases * 2 * attempts as usize,
        grading: Default::default(),
        regraded_from: None,
        gates: None,
        stopping: None,
        trial_keys: None,
        reuse: None,
        skill_order: Default::default(),
        version_policy: None,
        equivalence_margin: None,
        quality_contract: None,
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
            for arm in Arm::PAIRED {
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
                    decided_by: Some(skill_lift::record::PassBasis::OutputChecks),
                    outcome_score: None,
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
                        cache_creation_tokens: None,
                        cost_usd: None,
                    },
                    started_at: started,
                    wall_s: 0.5,
                    model_latency_s: 0.4,
                    requests: 1,
                    retries: vec![],
                    tool_calls: 0,
                    tool_call_errors: 0,
                    activated_skills: vec![],
                    transcript: Some(format!(
                        "transcripts/{case_id}.{}.{attempt}.json",
                        arm.as_str()
                    )),
                    transcript_span: None,
                    workspace: None,
                    supersedes: false,
                    unscoreable_cause: None,
                    usage_partial: false,
                    infrastructure: None,
                    truncated: Vec::new(),
                    reused_from: None,
                    judge_usage: None,
                    skill_order: None,
                };
                serde_json::to_writer(&mut writer, &record).unwrap();
                writer.write_all(b"\n").unwrap();
            }
        }
    }
    writer.flush().unwrap();
}
