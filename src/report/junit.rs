//! `junit.xml`: one test case per golden case, for CI test reporters. A case is
//!
//! - **skipped** when it is not in the paired analysis (no scored attempt in one arm);
//! - **failed** when its lift is negative (the skill made it worse), or — only when the run's
//!   gate says anything short of `improved` fails (`--fail-on not-improved`) — when the
//!   with-skill arm never passed it;
//! - **passed** otherwise: a zero-lift case is not a failure unless a gate says so (its
//!   system-out still says when the with-skill arm never passed).
//!
//! The suite's properties carry the lift summary (estimate, interval, method, N, K, verdict).
//! Times are the sums of the trials' recorded wall times; no generation timestamp is written.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::report::RunExport;

fn fraction(value: Option<f64>) -> String {
    value
        .map(|v| format!("{v:.6}"))
        .unwrap_or_else(|| "null".to_string())
}

/// Render `junit.xml`.
pub(crate) fn junit_xml(run: &RunExport) -> Vec<u8> {
    let summary = run.summary;
    let lift = &summary.lift;
    let mut suite = TestSuite::new(format!("skill-lift {}", summary.asset));
    let properties = [
        ("skill_lift.run_id", summary.run_id.clone()),
        ("skill_lift.asset", summary.asset.clone()),
        ("skill_lift.fingerprint", summary.fingerprint.clone()),
        ("skill_lift.model", summary.model.clone()),
        ("skill_lift.metric", lift.metric.clone()),
        ("skill_lift.lift", fraction(lift.estimate)),
        ("skill_lift.lift_ci_low", fraction(lift.ci_low)),
        ("skill_lift.lift_ci_high", fraction(lift.ci_high)),
        ("skill_lift.method", lift.method.clone()),
        ("skill_lift.n_cases", lift.n_cases.to_string()),
        ("skill_lift.k", lift.k.to_string()),
        ("skill_lift.verdict", lift.verdict.as_str().to_string()),
        (
            "skill_lift.with_skill_pass_rate",
            fraction(summary.arms.with_skill.pass_rate),
        ),
        (
            "skill_lift.without_skill_pass_rate",
            fraction(summary.arms.without_skill.pass_rate),
        ),
    ];
    for (name, value) in properties {
        suite.add_property(Property::new(name, value));
    }
    let strict_gate = summary.headline_lift().0.gate.as_ref().is_some_and(|gate| {
        gate.settings
            .fail_on
            .contains(&crate::record::FailOn::NotImproved)
    });
    let mut total_s = 0.0;
    for case in &summary.cases {
        let records: Vec<_> = run
            .records
            .iter()
            .filter(|r| r.case_id == case.case_id)
            .collect();
        let wall_s: f64 = records.iter().map(|r| r.wall_s).sum();
        total_s += wall_s;
        let counts = format!(
            "with_skill {}/{} passed, without_skill {}/{} passed",
            case.with_skill.trials.pass,
            case.with_skill.trials.scored(),
            case.without_skill.trials.pass,
            case.without_skill.trials.scored()
        );
        let status = match (case.lift, &case.excluded_reason) {
            (None, reason) => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(format!(
                    "not in the paired analysis: {}",
                    reason.as_deref().unwrap_or("no scored attempt")
                ));
                status
            }
            (Some(l), _) if l < 0.0 => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status.set_message(format!("negative lift {:+.1} pp ({counts})", l * 100.0));
                status.set_type("negative-lift");
                status
            }
            (Some(l), _) if case.with_skill.trials.pass == 0 && strict_gate => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let reason = records
                    .iter()
                    .filter(|r| r.arm == crate::record::Arm::WithSkill)
                    .find_map(|r| r.reason.clone())
                    .unwrap_or_else(|| "checks failed".to_string());
                status.set_message(format!(
                    "with_skill never passed (lift {:+.1} pp; {counts}): {reason}",
                    l * 100.0
                ));
                status.set_type("with-skill-failed");
                status
            }
            (Some(_), _) => TestCaseStatus::success(),
        };
        let mut test_case = TestCase::new(case.case_id.clone(), status);
        test_case.set_classname(format!("skill-lift.{}", summary.asset));
        test_case.set_time(Duration::from_secs_f64(wall_s.max(0.0)));
        test_case.add_property(Property::new(
            "lift",
            case.lift
                .map(|l| format!("{l:.6}"))
                .unwrap_or_else(|| "null".to_string()),
        ));
        test_case.set_system_out(counts);
        suite.add_test_case(test_case);
    }
    suite.set_time(Duration::try_from_secs_f64(total_s.max(0.0)).unwrap_or(Duration::MAX));
    let mut report = Report::new("skill-lift");
    report.add_test_suite(suite);
    let mut bytes = report.to_string().expect("junit serializes").into_bytes();
    if bytes.last() != Some(&b'\n') {
        bytes.push(b'\n');
    }
    bytes
}
