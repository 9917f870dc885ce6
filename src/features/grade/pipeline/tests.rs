use super::*;
use crate::features::grade::checks::Check;
use crate::record::{CustomGraderSpec, OutputMatch};

/// A judge answering from a script: `Ok(score)` or `Err(message)` per metric.
struct ScriptedJudge {
    info: JudgeInfo,
    answers: BTreeMap<String, Result<f64, String>>,
}

#[async_trait]
impl TrialJudge for ScriptedJudge {
    fn info(&self) -> &JudgeInfo {
        &self.info
    }
    fn concurrency(&self) -> usize {
        2
    }
    async fn grade(
        &self,
        metric: &str,
        _case: &GoldenCase,
        _target_skill: &str,
        _trajectory: &Trajectory,
    ) -> Result<MetricResult, JudgeError> {
        match self.answers.get(metric) {
            Some(Ok(score)) => Ok(MetricResult {
                score: Some(*score),
                reason: format!("scripted {score}"),
                source: MetricSource::Judge,
                sub_scores: BTreeMap::new(),
                judge: None,
            }),
            Some(Err(message)) => Err(JudgeError::new(
                JudgeFailure::Request { status: None },
                message.clone(),
            )),
            None => Err(JudgeError::new(
                JudgeFailure::UnknownMetric,
                "no scripted answer",
            )),
        }
    }
}

fn judge(name: &str, answers: &[(&str, Result<f64, String>)]) -> Arc<dyn TrialJudge> {
    Arc::new(ScriptedJudge {
        info: JudgeInfo {
            name: name.to_string(),
            kind: "openai-chat".to_string(),
            model: "judge-model".to_string(),
            base_url: "http://127.0.0.1:1/v1".to_string(),
            profile_path: Default::default(),
            profile_digest: "sha256:00".to_string(),
        },
        answers: answers
            .iter()
            .map(|(metric, answer)| (metric.to_string(), answer.clone()))
            .collect(),
    })
}

fn settings_with_judges(judges: &[&str], metrics: &[&str]) -> GradingSettings {
    let mut settings = GradingSettings::new();
    settings.judges = judges
        .iter()
        .map(|name| JudgeInfo {
            name: name.to_string(),
            kind: "openai-chat".to_string(),
            model: "judge-model".to_string(),
            base_url: "http://127.0.0.1:1/v1".to_string(),
            profile_path: Default::default(),
            profile_digest: "sha256:00".to_string(),
        })
        .collect();
    settings.judge_metrics = metrics.iter().map(|m| m.to_string()).collect();
    settings
}

fn answered(text: &str) -> Trajectory {
    let mut trajectory = Trajectory::new();
    trajectory.final_answer = Some(text.to_string());
    trajectory
}

struct Facts {
    case: GoldenCase,
    trajectory: Trajectory,
    staged: Vec<String>,
}

impl Facts {
    fn new(case: GoldenCase, trajectory: Trajectory) -> Self {
        Self {
            case,
            trajectory,
            staged: vec!["target".to_string()],
        }
    }
    fn facts(&self) -> TrialFacts<'_> {
        TrialFacts {
            case: &self.case,
            trajectory: &self.trajectory,
            arm: Arm::WithSkill,
            attempt: 1,
            trial_id: "c/with_skill/1",
            target_skill: "target",
            staged_skills: &self.staged,
            activation_observable: true,
            can_run_commands: true,
            workspace: None,
            run_workspace: None,
            run_home: None,
            recorded_checks: None,
        }
    }
}

#[tokio::test]
async fn checks_decide_the_outcome_and_count_in_the_composite() {
    let mut case = GoldenCase::new("c", "p");
    case.checks = vec![
        Check::Contains {
            value: "42".into(),
            ignore_case: false,
        },
        Check::Contains {
            value: "km".into(),
            ignore_case: false,
        },
    ];
    let facts = Facts::new(case, answered("42 miles"));
    let graders = GraderSet::new(
        settings_with_judges(&["j"], &["accuracy"]),
        vec![judge("j", &[("accuracy", Ok(1.0))])],
        vec![],
    );
    let grade = graders.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::Fail);
    assert!(grade.reason.as_deref().unwrap().contains("km"));
    assert_eq!(grade.scores["checks"], 0.5);
    assert_eq!(grade.scores["accuracy"], 1.0);
    // The composite is the mean of the applicable metrics, whatever decided the outcome.
    let applicable: Vec<f64> = grade.scores.values().copied().collect();
    let mean = applicable.iter().sum::<f64>() / applicable.len() as f64;
    assert!((grade.composite.unwrap() - mean).abs() < 1e-12);
}

#[tokio::test]
async fn without_checks_the_outcome_score_decides_but_only_with_an_outcome_grader() {
    let facts = Facts::new(GoldenCase::new("c", "p"), answered("anything"));
    let no_outcome_grader = GraderSet::new(GradingSettings::new(), vec![], vec![]);
    let grade = no_outcome_grader.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::NotGradable);
    assert!(grade.reason.unwrap().contains("no outcome grader"));

    let mut settings = settings_with_judges(&["j"], &["accuracy", "goal_accuracy"]);
    settings.deterministic_metrics = false;
    let graders = GraderSet::new(
        settings.clone(),
        vec![judge(
            "j",
            &[("accuracy", Ok(0.4)), ("goal_accuracy", Ok(0.0))],
        )],
        vec![],
    );
    let grade = graders.grade(&facts.facts()).await;
    assert_eq!(grade.composite, Some(0.2));
    assert_eq!(grade.outcome, Outcome::Fail);
    assert!(
        grade
            .reason
            .unwrap()
            .contains("below the pass threshold 0.5")
    );

    settings.weights.insert("goal_accuracy".to_string(), 0.0);
    let weighted = GraderSet::new(
        settings,
        vec![judge(
            "j",
            &[("accuracy", Ok(0.6)), ("goal_accuracy", Ok(0.0))],
        )],
        vec![],
    );
    let grade = weighted.grade(&facts.facts()).await;
    assert_eq!(grade.composite, Some(0.6));
    assert_eq!(grade.outcome, Outcome::Pass);
}

#[tokio::test]
async fn a_failing_primary_judge_makes_the_trial_unscoreable_a_second_judge_does_not() {
    let facts = Facts::new(GoldenCase::new("c", "p"), answered("x"));
    let graders = GraderSet::new(
        settings_with_judges(&["primary", "second"], &["accuracy"]),
        vec![
            judge("primary", &[("accuracy", Err("HTTP 503".to_string()))]),
            judge("second", &[("accuracy", Ok(1.0))]),
        ],
        vec![],
    );
    let grade = graders.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::Unscoreable);
    // The judge's own error names the judge, model and metric; the grader set adds nothing.
    assert_eq!(grade.reason.as_deref(), Some("grader error: HTTP 503"));
    assert!(grade.composite.is_none() && grade.scores.is_empty());

    // Judge metrics only, so the composite is the primary judge's score.
    let mut settings = settings_with_judges(&["primary", "second"], &["accuracy"]);
    settings.deterministic_metrics = false;
    let graders = GraderSet::new(
        settings,
        vec![
            judge("primary", &[("accuracy", Ok(0.8))]),
            judge("second", &[("accuracy", Err("down".to_string()))]),
        ],
        vec![],
    );
    let grade = graders.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::Pass);
    assert!(grade.other_judges.is_empty());
    assert_eq!(
        grade.other_judge_errors["second"],
        vec!["accuracy: down".to_string()]
    );
}

#[tokio::test]
async fn incomplete_trajectories_are_unscoreable_and_never_judged() {
    let mut trajectory = answered("x");
    trajectory.status = TrajectoryStatus::Incomplete {
        reason: "no result event".into(),
    };
    let facts = Facts::new(GoldenCase::new("c", "p"), trajectory);
    let graders = GraderSet::new(
        settings_with_judges(&["j"], &["accuracy"]),
        vec![judge("j", &[])],
        vec![],
    );
    let grade = graders.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::Unscoreable);
    assert_eq!(
        grade.reason.as_deref(),
        Some("incomplete trajectory: no result event")
    );
}

#[tokio::test]
async fn expected_output_modes_add_an_implicit_check() {
    let mut case = GoldenCase::new("c", "p");
    case.expected_output = Some("397.8".into());
    let facts = Facts::new(case.clone(), answered("It is 397.80"));
    let mut settings = GradingSettings::new();
    let judge_mode = GraderSet::new(settings.clone(), vec![], vec![]);
    assert_eq!(
        judge_mode.grade(&facts.facts()).await.outcome,
        Outcome::NotGradable
    );
    settings.expected_output_match = OutputMatch::Numeric;
    let numeric = GraderSet::new(settings, vec![], vec![]);
    let grade = numeric.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::Pass);
    assert_eq!(grade.checks.last().unwrap().check_type, "expected_output");
    // The case's own mode wins over the run default.
    case.expected_output_match = Some(OutputMatch::Exact);
    let facts = Facts::new(case, answered("It is 397.80"));
    assert_eq!(numeric.grade(&facts.facts()).await.outcome, Outcome::Fail);
}

#[tokio::test]
async fn workspace_checks_reuse_recorded_results_when_the_workspace_is_gone() {
    let mut case = GoldenCase::new("c", "p");
    case.checks = vec![Check::FileExists {
        path: "out.txt".into(),
    }];
    let recorded = vec![CheckResult {
        check_type: "file_exists".into(),
        passed: true,
        detail: "out.txt exists".into(),
    }];
    let facts = Facts::new(case, answered("done"));
    let graders = GraderSet::new(GradingSettings::new(), vec![], vec![]);
    let mut trial = facts.facts();
    assert_eq!(graders.grade(&trial).await.outcome, Outcome::Fail);
    trial.recorded_checks = Some(&recorded);
    let grade = graders.grade(&trial).await;
    assert_eq!(grade.outcome, Outcome::Pass);
    assert_eq!(grade.checks, recorded);
}

fn grader(name: &str, command: &str) -> CustomGraderSpec {
    CustomGraderSpec {
        name: name.to_string(),
        command: command.to_string(),
        timeout_s: 20.0,
    }
}

#[tokio::test]
async fn custom_graders_run_in_the_workspace_and_their_failures_are_unscoreable() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("out.txt"), "hello").unwrap();
    let facts = Facts::new(GoldenCase::new("c", "p"), answered("x"));
    let mut trial = facts.facts();
    trial.workspace = Some(workspace.path());
    let mut settings = GradingSettings::new();
    settings.custom_graders = vec![grader(
        "files",
        r#"test -f out.txt && grep -q '"case"' "$SKILL_LIFT_INPUT" && test "$SKILL_LIFT_ARM" = with_skill && echo 'log line' && echo '{"overall": 0.9, "metrics": {"has_output": 1}, "details": {"has_output": "out.txt present"}}'"#,
    )];
    let graders = GraderSet::new(settings.clone(), vec![], vec![]);
    let grade = graders.grade(&trial).await;
    assert_eq!(grade.outcome, Outcome::Pass, "{:?}", grade.reason);
    assert_eq!(grade.scores["has_output"], 1.0);
    assert_eq!(grade.metrics["has_output"].reason, "out.txt present");

    for (command, expected) in [
        ("echo boom >&2; exit 3", "failed (exit code 3): boom"),
        ("echo '{\"metrics\": {\"accuracy\": 1}}'", "reserved"),
        ("echo not json", "no JSON object"),
        ("sleep 30", "exceeded its timeout"),
    ] {
        let mut settings = settings.clone();
        settings.custom_graders = vec![CustomGraderSpec {
            timeout_s: 0.5,
            ..grader("bad", command)
        }];
        let graders = GraderSet::new(settings, vec![], vec![]);
        let grade = graders.grade(&trial).await;
        assert_eq!(grade.outcome, Outcome::Unscoreable, "{command}");
        let reason = grade.reason.unwrap();
        assert!(reason.contains(expected), "{command}: {reason}");
    }
}

/// The issue-11 repro at the trial level: one outcome grader scoring 0, clean process metrics
/// (security 1.0, efficiency 1.0 from one productive tool call). The composite is high; the
/// trial must still fail, decided by the outcome score.
#[tokio::test]
async fn process_metrics_never_lift_a_failed_outcome_into_a_pass() {
    let mut trajectory = answered("wrong answer");
    trajectory
        .tool_calls
        .push(crate::values::trajectory::ToolCall {
            id: "call_1".into(),
            name: "final_answer".into(),
            input: serde_json::json!({"answer": "wrong answer"}),
            output: Some("ok".into()),
            is_error: false,
            duration_s: None,
        });
    let facts = Facts::new(GoldenCase::new("c", "p"), trajectory);
    let mut settings = GradingSettings::new();
    settings.custom_graders = vec![grader("tone", r#"echo '{"overall": 0}'"#)];
    let graders = GraderSet::new(settings, vec![], vec![]);
    // Inject mode: activation and routing are not applicable, efficiency is the one clean call.
    let mut trial = facts.facts();
    trial.activation_observable = false;
    let grade = graders.grade(&trial).await;
    assert_eq!(grade.scores["security"], 1.0);
    assert_eq!(grade.scores["skill_efficiency"], 1.0);
    assert_eq!(grade.scores["tone"], 0.0);
    assert!(grade.composite.unwrap() >= 0.5, "{:?}", grade.composite);
    assert_eq!(grade.outcome, Outcome::Fail, "{:?}", grade.reason);
    assert_eq!(grade.decided_by, Some(PassBasis::OutcomeScore));
    assert_eq!(grade.outcome_score, Some(0.0));
    assert!(grade.reason.unwrap().contains("outcome score 0.0000"));
}

#[tokio::test]
async fn the_outcome_score_is_the_weighted_mean_of_judge_and_custom_metrics_only() {
    let facts = Facts::new(GoldenCase::new("c", "p"), answered("x"));
    let mut settings = settings_with_judges(&["j"], &["accuracy", "goal_accuracy"]);
    settings.custom_graders = vec![grader("tone", r#"echo '{"overall": 1}'"#)];
    settings.weights.insert("tone".to_string(), 2.0);
    let graders = GraderSet::new(
        settings,
        vec![judge(
            "j",
            &[("accuracy", Ok(0.2)), ("goal_accuracy", Ok(0.0))],
        )],
        vec![],
    );
    let grade = graders.grade(&facts.facts()).await;
    // (0.2 + 0.0 + 2 × 1.0) / 4 = 0.55: passes; security (1.0) is not in it.
    assert!((grade.outcome_score.unwrap() - 0.55).abs() < 1e-12);
    assert_eq!(grade.outcome, Outcome::Pass);
    assert_eq!(grade.decided_by, Some(PassBasis::OutcomeScore));
}

#[tokio::test]
async fn a_security_violation_fails_the_trial_even_when_its_checks_pass() {
    let mut case = GoldenCase::new("c", "p");
    case.checks = vec![Check::Contains {
        value: "done".into(),
        ignore_case: false,
    }];
    let trajectory = answered("done; key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD");
    let facts = Facts::new(case, trajectory);
    let graders = GraderSet::new(GradingSettings::new(), vec![], vec![]);
    let grade = graders.grade(&facts.facts()).await;
    assert!(grade.checks.iter().all(|c| c.passed));
    assert_eq!(grade.outcome, Outcome::Fail);
    assert_eq!(grade.decided_by, Some(PassBasis::SecurityGate));
    let reason = grade.reason.unwrap();
    assert!(
        reason.starts_with("security violation: secret_exposure"),
        "{reason}"
    );
    // The violation is named, never the value.
    assert!(!reason.contains("sk-proj"), "{reason}");
}

#[tokio::test]
async fn checks_decide_before_outcome_graders_and_weight_zero_outcome_metrics_decide_nothing() {
    let mut case = GoldenCase::new("c", "p");
    case.checks = vec![Check::Contains {
        value: "42".into(),
        ignore_case: false,
    }];
    let facts = Facts::new(case, answered("42"));
    let mut settings = GradingSettings::new();
    settings.custom_graders = vec![grader("tone", r#"echo '{"overall": 0}'"#)];
    let graders = GraderSet::new(settings.clone(), vec![], vec![]);
    let grade = graders.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::Pass);
    assert_eq!(grade.decided_by, Some(PassBasis::OutputChecks));
    assert_eq!(grade.outcome_score, Some(0.0));

    let facts = Facts::new(GoldenCase::new("c", "p"), answered("x"));
    settings.weights.insert("tone".to_string(), 0.0);
    let graders = GraderSet::new(settings, vec![], vec![]);
    let grade = graders.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::NotGradable);
    assert_eq!(grade.decided_by, None);
    assert!(grade.reason.unwrap().contains("--metric-weight"));
}

/// `style` never decides: a trial whose checks pass passes with style 0, one whose checks fail
/// fails with style 1; without checks, the outcome score ignores style (accuracy 0.5 below a
/// 0.6 threshold fails even with style 1, and 0.7 passes with style 0); style is never in the
/// composite; style alone decides nothing (not gradable).
#[tokio::test]
async fn style_never_decides_a_pass_nor_enters_a_score() {
    let mut case = GoldenCase::new("c", "p");
    case.checks = vec![Check::Contains {
        value: "Aye".into(),
        ignore_case: false,
    }];
    let metrics = ["accuracy", crate::record::STYLE];
    let grade_with = |accuracy: f64, style: f64, case: GoldenCase, answer: &str| {
        let facts = Facts::new(case, answered(answer));
        let mut settings = settings_with_judges(&["j"], &metrics);
        settings.pass_threshold = 0.6;
        let graders = GraderSet::new(
            settings,
            vec![judge(
                "j",
                &[
                    ("accuracy", Ok(accuracy)),
                    (crate::record::STYLE, Ok(style)),
                ],
            )],
            vec![],
        );
        async move { graders.grade(&facts.facts()).await }
    };
    let passing = grade_with(1.0, 0.0, case.clone(), "Aye, 42").await;
    assert_eq!(passing.outcome, Outcome::Pass);
    assert_eq!(passing.scores[crate::record::STYLE], 0.0);
    let failing = grade_with(1.0, 1.0, case, "42").await;
    assert_eq!(failing.outcome, Outcome::Fail);
    assert_eq!(failing.scores[crate::record::STYLE], 1.0);

    let unchecked = GoldenCase::new("c", "p");
    let below = grade_with(0.5, 1.0, unchecked.clone(), "42").await;
    assert_eq!(below.outcome, Outcome::Fail);
    assert_eq!(below.outcome_score, Some(0.5));
    let above = grade_with(0.7, 0.0, unchecked.clone(), "42").await;
    assert_eq!(above.outcome, Outcome::Pass);
    assert_eq!(above.outcome_score, Some(0.7));
    // Accuracy alone makes the composite here (no deterministic metric applies in a bare
    // trajectory, or they are the same in both): style moves it not at all.
    let composite_style_0 = grade_with(0.7, 0.0, unchecked.clone(), "42")
        .await
        .composite;
    let composite_style_1 = grade_with(0.7, 1.0, unchecked.clone(), "42")
        .await
        .composite;
    assert_eq!(composite_style_0, composite_style_1);

    let facts = Facts::new(unchecked, answered("42"));
    let graders = GraderSet::new(
        settings_with_judges(&["j"], &[crate::record::STYLE]),
        vec![judge("j", &[(crate::record::STYLE, Ok(1.0))])],
        vec![],
    );
    let style_only = graders.grade(&facts.facts()).await;
    assert_eq!(style_only.outcome, Outcome::NotGradable);
    assert_eq!(style_only.outcome_score, None);
}

/// A judge failure on `style` leaves the trial's outcome to the other graders: the style
/// metric alone is unscoreable (no score, the error as its reason), never a 0; a failure on
/// another judge metric still makes the trial unscoreable.
#[tokio::test]
async fn a_style_judge_failure_makes_only_the_metric_unscoreable() {
    let mut case = GoldenCase::new("c", "p");
    case.checks = vec![Check::Contains {
        value: "Aye".into(),
        ignore_case: false,
    }];
    let facts = Facts::new(case, answered("Aye, 42"));
    let graders = GraderSet::new(
        settings_with_judges(&["j"], &["accuracy", crate::record::STYLE]),
        vec![judge(
            "j",
            &[
                ("accuracy", Ok(1.0)),
                (crate::record::STYLE, Err("judge down".to_string())),
            ],
        )],
        vec![],
    );
    let grade = graders.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::Pass);
    let style = &grade.metrics[crate::record::STYLE];
    assert_eq!(style.score, None);
    assert_eq!(style.reason, "unscoreable: judge down");
    assert!(!grade.scores.contains_key(crate::record::STYLE));

    let graders = GraderSet::new(
        settings_with_judges(&["j"], &["accuracy", crate::record::STYLE]),
        vec![judge(
            "j",
            &[
                ("accuracy", Err("judge down".to_string())),
                (crate::record::STYLE, Ok(1.0)),
            ],
        )],
        vec![],
    );
    let grade = graders.grade(&facts.facts()).await;
    assert_eq!(grade.outcome, Outcome::Unscoreable);
}
