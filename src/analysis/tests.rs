//! Tests of the analysis layer against the statistics reference's worked examples, degenerate
//! runs, negative-lift classes, gates, and a coverage simulation.

use std::collections::BTreeMap;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::*;
use crate::values::trajectory::Usage;

fn manifest(
    case_ids: &[String],
    k: u32,
    clusters: BTreeMap<String, String>,
    skill_mode: &str,
) -> Manifest {
    let mut manifest = crate::test_support::manifest(case_ids, k);
    manifest.eval_set.case_clusters = clusters;
    manifest.runner.skill_mode = skill_mode.into();
    manifest
}

pub(super) fn record(case_id: &str, arm: Arm, attempt: u32, outcome: Outcome) -> TrialRecord {
    TrialRecord {
        run_id: "run".into(),
        runner: "mock".into(),
        observed_model: Some("m".into()),
        usage: Usage {
            input_tokens: Some(10),
            output_tokens: Some(2),
            cached_tokens: None,
            cache_creation_tokens: None,
            cost_usd: None,
        },
        wall_s: 1.0,
        model_latency_s: 0.5,
        ..crate::test_support::trial_record(case_id, arm, attempt, outcome)
    }
}

/// Records for cases with (passes with, passes without) out of K each.
fn records_from_counts(counts: &[(u32, u32)], k: u32) -> (Vec<String>, Vec<TrialRecord>) {
    let ids: Vec<String> = (0..counts.len()).map(|i| format!("c{i:02}")).collect();
    let mut records = Vec::new();
    for (id, (with, without)) in ids.iter().zip(counts) {
        for attempt in 1..=k {
            let outcome = |passes: u32| {
                if attempt <= passes {
                    Outcome::Pass
                } else {
                    Outcome::Fail
                }
            };
            records.push(record(id, Arm::WithSkill, attempt, outcome(*with)));
            records.push(record(id, Arm::WithoutSkill, attempt, outcome(*without)));
        }
    }
    (ids, records)
}

fn close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} vs {expected}"
    );
}

/// D10 of statistics.md §1.1: n = 10, K = 5.
const D10: [(u32, u32); 10] = [
    (5, 5),
    (5, 2),
    (4, 4),
    (5, 3),
    (3, 2),
    (5, 1),
    (2, 1),
    (3, 4),
    (1, 1),
    (5, 3),
];

/// D10 has 10 cases: below the bootstrap switch point the default is the paired t interval,
/// tested by the same paired t (statistics.md §6.1: CI [0.018355, 0.461645], p 0.036787).
#[test]
fn d10_small_n_uses_the_paired_t_interval_and_test() {
    let (ids, records) = records_from_counts(&D10, 5);
    let summary = analyze(
        &manifest(&ids, 5, BTreeMap::new(), "inject"),
        &records,
        &AnalysisSettings::new(7),
    );
    let lift = &summary.lift;
    assert_eq!(lift.method, "paired-t");
    assert_eq!(lift.test.as_deref(), Some("paired-t"));
    close(lift.ci_low.unwrap(), 0.018355, 1e-6);
    close(lift.ci_high.unwrap(), 0.461645, 1e-6);
    close(lift.p_value.unwrap(), 0.036787, 1e-6);
    assert_eq!(lift.verdict, Verdict::Improved);
    assert!(lift.verdict_reasons.is_empty());
    close(lift.mde.unwrap(), 0.3082, 1e-4);
    // Per-arm: effective-count Wilson, never the bootstrap's degenerate interval.
    assert_eq!(
        summary.arms.with_skill.interval_method.as_deref(),
        Some("wilson-effective-count")
    );
    let arm = &summary.arms.with_skill;
    assert!(arm.ci_low.unwrap() < 0.76 && 0.76 < arm.ci_high.unwrap());
    // Noise decomposition (statistics.md §2): D10's between-case and within-case parts.
    let pass = &summary.noise.scores[0];
    assert_eq!(pass.score, "pass_rate");
    let with = pass.with_skill.as_ref().unwrap();
    close(with.case_variance, 0.061111, 1e-6);
    close(with.attempt_variance.unwrap(), 0.13, 1e-9);
    let without = pass.without_skill.as_ref().unwrap();
    close(without.case_variance, 0.037778, 1e-6);
    let projection = summary.noise.mde_projection.as_ref().unwrap();
    close(projection.omega_squared, 0.026, 1e-9);
}

#[test]
fn d10_lift_uses_bca_with_permutation_test_and_paired_t_cross_check() {
    let (ids, records) = records_from_counts(&D10, 5);
    let summary = analyze(
        &manifest(&ids, 5, BTreeMap::new(), "inject"),
        &records,
        &AnalysisSettings {
            method: Some(LiftMethod::Bca),
            ..AnalysisSettings::new(7)
        },
    );
    let lift = &summary.lift;
    close(lift.estimate.unwrap(), 0.24, 1e-12);
    assert_eq!(lift.method, "case-bootstrap-bca");
    assert_eq!(lift.test.as_deref(), Some("sign-flip-permutation"));
    close(lift.p_value.unwrap(), 0.0625, 1e-12);
    close(lift.paired_t.p_value.unwrap(), 0.036787, 1e-6);
    close(lift.paired_t.ci_low.unwrap(), 0.018355, 1e-6);
    close(lift.mde.unwrap(), 0.3082, 1e-4);
    // Monte Carlo BCa within one lattice step (0.02) of the ideal [0.08, 0.44].
    close(lift.ci_low.unwrap(), 0.08, 0.02 + 1e-9);
    close(lift.ci_high.unwrap(), 0.44, 0.02 + 1e-9);
    // The BCa interval excludes 0 but the permutation test (p 0.0625) does not agree: the
    // verdict never contradicts its own test.
    assert_eq!(lift.verdict, Verdict::Inconclusive);
    assert!(matches!(
        lift.verdict_reasons[0].reason,
        InconclusiveReason::TestDisagrees {
            test: LiftTest::SignFlipPermutation,
            ..
        }
    ));
    assert_eq!(lift.n_cases, 10);
    close(lift.correlation.unwrap(), 0.431794, 1e-6);
    assert_eq!(lift.case_lifts.positive, 6);
    assert_eq!(lift.case_lifts.negative, 1);
    close(summary.arms.with_skill.pass_rate.unwrap(), 0.76, 1e-12);
    // Reproducible for a seed.
    let again = analyze(
        &manifest(&ids, 5, BTreeMap::new(), "inject"),
        &records,
        &AnalysisSettings {
            method: Some(LiftMethod::Bca),
            ..AnalysisSettings::new(7)
        },
    );
    assert_eq!(again, summary);
}

#[test]
fn d10_clusters_use_the_cluster_t_interval() {
    let (ids, records) = records_from_counts(&D10, 5);
    let labels = ["c", "a", "c", "b", "d", "a", "d", "d", "c", "b"];
    let clusters: BTreeMap<String, String> = ids
        .iter()
        .cloned()
        .zip(labels.iter().map(|l| l.to_string()))
        .collect();
    let summary = analyze(
        &manifest(&ids, 5, clusters, "inject"),
        &records,
        &AnalysisSettings::new(7),
    );
    // Four clusters: the cluster-robust t (statistics.md §3: CI [−0.2444, 0.7244]).
    assert_eq!(summary.lift.method, "cluster-t");
    assert_eq!(summary.lift.n_clusters, Some(4));
    close(summary.lift.ci_low.unwrap(), -0.2444, 1e-4);
    close(summary.lift.ci_high.unwrap(), 0.7244, 1e-4);
    close(summary.lift.paired_t.ci_low.unwrap(), -0.2444, 1e-4);
    assert_eq!(summary.lift.test.as_deref(), Some("cluster-t"));
    assert_eq!(summary.lift.verdict, Verdict::Inconclusive);
    // The MDE uses the clustered SE (0.152210) with C − 1 = 3 df.
    let t3 = 3.182446 + 0.978472;
    close(summary.lift.mde.unwrap(), t3 * 0.152210, 1e-4);
    assert_eq!(
        summary.arms.with_skill.interval_method.as_deref(),
        Some("wilson-effective-count")
    );
}

#[test]
fn newcombe_is_refused_for_k_above_one_and_for_clusters() {
    let ids: Vec<String> = vec!["a".into()];
    let k3 = manifest(&ids, 3, BTreeMap::new(), "inject");
    assert_eq!(
        check_method(&k3, Some(LiftMethod::Newcombe)),
        Err(MethodError::NewcombeNeedsSingleAttempt { k: 3 })
    );
    assert!(check_method(&k3, Some(LiftMethod::T)).is_ok());
    assert!(check_method(&k3, None).is_ok());
    let clustered = manifest(
        &ids,
        1,
        BTreeMap::from([("a".to_string(), "x".to_string())]),
        "inject",
    );
    assert!(matches!(
        check_method(&clustered, Some(LiftMethod::Newcombe)),
        Err(MethodError::NewcombeIgnoresClusters { clusters: 1 })
    ));
    let k1 = manifest(&ids, 1, BTreeMap::new(), "inject");
    assert!(check_method(&k1, Some(LiftMethod::Newcombe)).is_ok());
}

#[test]
fn k1_binary_uses_newcombe_and_mcnemar_mid_p() {
    // statistics.md §5: a = 10 both pass, b = 8 only with, c = 2 only without, d = 10 neither.
    let mut counts = Vec::new();
    counts.extend(std::iter::repeat_n((1, 1), 10));
    counts.extend(std::iter::repeat_n((1, 0), 8));
    counts.extend(std::iter::repeat_n((0, 1), 2));
    counts.extend(std::iter::repeat_n((0, 0), 10));
    let (ids, records) = records_from_counts(&counts, 1);
    let summary = analyze(
        &manifest(&ids, 1, BTreeMap::new(), "inject"),
        &records,
        &AnalysisSettings::new(7),
    );
    let lift = &summary.lift;
    assert_eq!(lift.method, "newcombe");
    assert_eq!(lift.test.as_deref(), Some("mcnemar-mid-p"));
    close(lift.estimate.unwrap(), 0.2, 1e-12);
    close(lift.ci_low.unwrap(), -0.006262, 1e-6);
    close(lift.ci_high.unwrap(), 0.379776, 1e-6);
    close(lift.p_value.unwrap(), 67.0 / 1024.0, 1e-9);
    assert_eq!(lift.verdict, Verdict::Inconclusive);
    assert_eq!(
        lift.verdict_reasons[0].reason,
        InconclusiveReason::IntervalSpansZero
    );
    assert_eq!(
        summary.arms.with_skill.interval_method.as_deref(),
        Some("wilson")
    );
    close(summary.arms.with_skill.ci_low.unwrap(), 0.423204, 1e-6);
    // --method overrides.
    let settings = AnalysisSettings {
        method: Some(LiftMethod::T),
        ..AnalysisSettings::new(7)
    };
    let overridden = analyze(
        &manifest(&ids, 1, BTreeMap::new(), "inject"),
        &records,
        &settings,
    );
    assert_eq!(overridden.lift.method, "paired-t");
}

#[test]
fn unscoreable_trials_are_excluded_not_failed_and_classified() {
    let ids: Vec<String> = vec!["a".into(), "b".into(), "c".into()];
    let records = vec![
        record("a", Arm::WithSkill, 1, Outcome::Pass),
        record("a", Arm::WithoutSkill, 1, Outcome::Fail),
        record("b", Arm::WithSkill, 1, Outcome::Unscoreable),
        record("b", Arm::WithoutSkill, 1, Outcome::Pass),
        record("c", Arm::WithSkill, 1, Outcome::Fail),
        record("c", Arm::WithoutSkill, 1, Outcome::Pass),
        // A duplicate key is ignored.
        record("c", Arm::WithoutSkill, 1, Outcome::Fail),
    ];
    let summary = analyze(
        &manifest(&ids, 1, BTreeMap::new(), "tools"),
        &records,
        &AnalysisSettings::new(1),
    );
    assert_eq!(summary.trials.duplicates_ignored, 1);
    assert_eq!(summary.trials.outcomes.unscoreable, 1);
    assert_eq!(summary.lift.n_cases, 2);
    let b = summary.cases.iter().find(|c| c.case_id == "b").unwrap();
    assert_eq!(b.lift, None);
    assert_eq!(
        b.negative_lift_class,
        Some(NegativeLiftClass::ExecutionInstability)
    );
    let c = summary.cases.iter().find(|c| c.case_id == "c").unwrap();
    assert_eq!(
        c.negative_lift_class,
        Some(NegativeLiftClass::NeverDiscovered)
    );
    assert_eq!(summary.lift.negative_lift.never_discovered, 1);
    assert_eq!(summary.lift.negative_lift.execution_instability, 1);
    // The same case with the target activated reads as misused.
    let mut activated = records.clone();
    activated[4].activated_skills = vec!["target".into()];
    let summary = analyze(
        &manifest(&ids, 1, BTreeMap::new(), "tools"),
        &activated,
        &AnalysisSettings::new(1),
    );
    assert_eq!(summary.lift.negative_lift.discovered_but_misused, 1);
}

#[test]
fn degenerate_runs_are_inconclusive_with_a_reason() {
    let ids: Vec<String> = vec!["a".into()];
    let empty = analyze(
        &manifest(&ids, 1, BTreeMap::new(), "inject"),
        &[],
        &AnalysisSettings::new(1),
    );
    assert_eq!(empty.lift.verdict, Verdict::Inconclusive);
    assert_eq!(empty.lift.estimate, None);
    assert_eq!(
        empty.lift.verdict_reasons[0].reason,
        InconclusiveReason::NoPairedCases
    );
    let one = analyze(
        &manifest(&ids, 1, BTreeMap::new(), "inject"),
        &[
            record("a", Arm::WithSkill, 1, Outcome::Pass),
            record("a", Arm::WithoutSkill, 1, Outcome::Fail),
        ],
        &AnalysisSettings::new(1),
    );
    assert_eq!(one.lift.verdict, Verdict::Inconclusive);
    assert!(one.lift.verdict_reasons[0].message.contains("too few"));
    // Fewer than 5 paired cases: no interval is reported beside "too few scored cases".
    assert_eq!((one.lift.ci_low, one.lift.ci_high), (None, None));
    assert_eq!(one.arms.with_skill.ci_low, None);
    // Small n with a large but uncertain lift names the MDE.
    let (ids, records) = records_from_counts(&[(1, 0), (0, 0), (1, 1), (0, 1), (1, 0), (0, 0)], 1);
    let small = analyze(
        &manifest(&ids, 1, BTreeMap::new(), "inject"),
        &records,
        &AnalysisSettings::new(1),
    );
    assert_eq!(small.lift.verdict, Verdict::Inconclusive);
    assert!(
        small
            .lift
            .verdict_reasons
            .iter()
            .any(|r| r.message.contains("spans 0")),
        "{:?}",
        small.lift.verdict_reasons
    );
}

#[test]
fn gates() {
    let (ids, records) = records_from_counts(&D10, 5);
    let gated = |gate: GateSettings| {
        let settings = AnalysisSettings {
            gate,
            ..AnalysisSettings::new(7)
        };
        analyze(
            &manifest(&ids, 5, BTreeMap::new(), "inject"),
            &records,
            &settings,
        )
        .lift
        .gate
    };
    assert_eq!(gated(GateSettings::default()), None);
    assert!(
        gated(GateSettings {
            min_lift: Some(0.01),
            fail_on: vec![],
            ..Default::default()
        })
        .unwrap()
        .passed
    );
    let failed = gated(GateSettings {
        min_lift: Some(0.2),
        fail_on: vec![FailOn::Regressed],
        ..Default::default()
    })
    .unwrap();
    assert!(!failed.passed);
    assert!(failed.failures[0].contains("--min-lift"));
    let (ids, records) = records_from_counts(&[(0, 5), (1, 5), (0, 4), (2, 5), (0, 3), (1, 5)], 5);
    let settings = AnalysisSettings {
        gate: GateSettings {
            min_lift: None,
            fail_on: vec![FailOn::Regressed],
            ..Default::default()
        },
        ..AnalysisSettings::new(7)
    };
    let summary = analyze(
        &manifest(&ids, 5, BTreeMap::new(), "inject"),
        &records,
        &settings,
    );
    assert_eq!(summary.lift.verdict, Verdict::Regressed);
    assert!(!summary.lift.gate.unwrap().passed);
}

/// The default interval covers a known lift in about 95% of simulated runs (n = 30, K = 3; the
/// full grid through the binary is `scripts/check-coverage`).
#[test]
fn default_interval_coverage_is_close_to_nominal() {
    let mut rng = ChaCha20Rng::seed_from_u64(2026);
    let (n, k, runs) = (30usize, 3u32, 1000usize);
    let true_lift = 0.15;
    let ids: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
    let manifest = manifest(&ids, k, BTreeMap::new(), "inject");
    let settings = AnalysisSettings {
        resamples: 2000,
        ..AnalysisSettings::new(3)
    };
    let mut covered = 0;
    for run in 0..runs {
        // Case difficulty varies; the skill adds a fixed 0.15 to each case's pass probability.
        let mut counts = Vec::with_capacity(n);
        for _ in 0..n {
            let base: f64 = 0.15 + 0.6 * rng.random::<f64>();
            let draw = |p: f64, rng: &mut ChaCha20Rng| {
                (0..k).filter(|_| rng.random::<f64>() < p).count() as u32
            };
            let without = draw(base, &mut rng);
            let with = draw(base + true_lift, &mut rng);
            counts.push((with, without));
        }
        let (_, records) = records_from_counts(&counts, k);
        let settings = AnalysisSettings {
            seed: run as u64,
            ..settings.clone()
        };
        let lift = analyze(&manifest, &records, &settings).lift;
        if lift.ci_low.unwrap() <= true_lift && true_lift <= lift.ci_high.unwrap() {
            covered += 1;
        }
    }
    let coverage = covered as f64 / runs as f64;
    assert!((0.93..=0.97).contains(&coverage), "coverage {coverage}");
}

#[test]
fn weak_judge_settings_are_warned_only_for_judge_scored_cases() {
    assert_eq!(judge_warning(0, 1, 1), None, "no judge-scored case");
    assert_eq!(judge_warning(3, 5, 3), None, "recommended settings");
    let both = judge_warning(1, 1, 1).unwrap();
    assert!(
        both.starts_with("1 judge-scored case (")
            && both.contains(
                "1 judge repeat (--judge-k; at least 5 recommended) and 1 attempt per case and arm"
            ),
        "{both}"
    );
    let attempts_only = judge_warning(7, 5, 2).unwrap();
    assert!(
        attempts_only.starts_with("7 judge-scored cases")
            && !attempts_only.contains("--judge-k")
            && attempts_only.contains("2 attempts per case and arm (-k; at least 3 recommended)"),
        "{attempts_only}"
    );
}

/// `compare` and `report` without flags analyse a run with every gate it recorded, the cost
/// ratios included.
#[test]
fn recorded_settings_keep_every_recorded_gate() {
    let mut manifest = crate::test_support::manifest(&["c1".to_string()], 1);
    manifest.gates = Some(crate::record::RecordedGates {
        min_lift: Some(0.05),
        fail_on: Vec::new(),
        max_unscoreable: 0.2,
        method: None,
        max_latency_ratio: Some(1.5),
        max_token_ratio: Some(2.0),
        enforce_version_policy: true,
    });
    let settings = AnalysisSettings::recorded(&manifest);
    assert_eq!(settings.gate.min_lift, Some(0.05));
    assert_eq!(settings.max_unscoreable, 0.2);
    assert_eq!(settings.gate.max_latency_ratio, Some(1.5));
    assert_eq!(settings.gate.max_token_ratio, Some(2.0));
    assert!(settings.gate.enforce_version_policy);
}
