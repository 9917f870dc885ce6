//! Helpers the unit tests of several modules share (test builds only).

use std::path::Path;

/// Write `content` to `root/relative`, creating the folders it needs.
pub(crate) fn write(root: &Path, relative: &str, content: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Write `text` to the file `path`, creating the folders it needs.
pub(crate) fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A scored trial record of `case_id` / `arm` / `attempt` with `outcome` and nothing else
/// recorded (run `r`, runner `x`, model `m`, no usage, 0.1 s): the base that tests override
/// with struct update syntax.
pub(crate) fn trial_record(
    case_id: &str,
    arm: crate::record::Arm,
    attempt: u32,
    outcome: crate::record::Outcome,
) -> crate::record::TrialRecord {
    crate::record::TrialRecord {
        run_id: "r".into(),
        trial_id: format!("{case_id}/{}/{attempt}", arm.as_str()),
        case_id: case_id.into(),
        arm,
        attempt,
        runner: "x".into(),
        model: "m".into(),
        observed_model: None,
        outcome,
        reason: None,
        decided_by: None,
        outcome_score: None,
        checks: vec![],
        scores: Default::default(),
        composite: None,
        metrics: Default::default(),
        other_judges: Default::default(),
        other_judge_errors: Default::default(),
        usage: Default::default(),
        started_at: chrono::Utc::now(),
        wall_s: 0.1,
        model_latency_s: 0.05,
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

/// A paired run's manifest over `case_ids` with K = `k` (run `run`, asset `target` at `/x`,
/// the mock runner `openai-chat` in `inject` mode, model `m`, seed 7, built-in decoys): the base
/// that tests override with struct update syntax.
pub(crate) fn manifest(case_ids: &[String], k: u32) -> crate::record::Manifest {
    use crate::record::{Arm, AssetInfo, DecoysInfo, EvalSetInfo, Manifest, RunnerInfo};
    Manifest {
        format_version: crate::record::FORMAT_VERSION,
        skill_lift_version: "test".into(),
        run_id: "run".into(),
        created_at: chrono::Utc::now(),
        asset: AssetInfo {
            name: "target".into(),
            path: "/x".into(),
            fingerprint: "sha256:x".into(),
            calibre: "v3-agent-skills".into(),
            fingerprint_files: vec![],
            warnings: vec![],
        },
        eval_set: EvalSetInfo {
            path: "/x/evals.json".into(),
            digest: "sha256:y".into(),
            format: "agentskills".into(),
            case_ids: case_ids.to_vec(),
            case_clusters: Default::default(),
            case_labels: Default::default(),
            allow_draft: false,
        },
        runner: RunnerInfo {
            name: "mock".into(),
            kind: "openai-chat".into(),
            profile_path: "/x/mock.toml".into(),
            profile_digest: "sha256:z".into(),
            skill_mode: "inject".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            capabilities: None,
        },
        model: "m".into(),
        k,
        seed: 7,
        decoys: DecoysInfo {
            source: "builtin".into(),
            skills: vec![],
        },
        arms: Arm::PAIRED.to_vec(),
        arm_design: Default::default(),
        calibration: None,
        reference: None,
        previous: None,
        trials_planned: case_ids.len() * 2 * k as usize,
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
    }
}
