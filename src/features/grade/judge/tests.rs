use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::routing::post;
use serde_json::{Value, json};

use super::answer::{ParsedAnswer, canonical_json, extract_object, parse_answer, validate};
use super::*;
use crate::features::evalset::{ExpectedSkill, GoldenCase};
use crate::features::runner::{LoadedProfile, RunnerProfile};
use crate::values::trajectory::{
    ActivationEvidence, CommandRun, Message, Role, SkillActivation, ToolCall, Trajectory,
};

// ---------------------------------------------------------------- fixtures

fn case(expected_output: Option<&str>, assertions: &[&str]) -> GoldenCase {
    GoldenCase {
        expected_output: expected_output.map(str::to_string),
        assertions: assertions.iter().map(|a| a.to_string()).collect(),
        expected_skill: ExpectedSkill::Named("calculator".into()),
        ..GoldenCase::new("c1", "Add 2 and 3 with the calculator.")
    }
}

fn trajectory() -> Trajectory {
    let mut trajectory = Trajectory::new();
    trajectory.messages = vec![
        Message {
            role: Role::System,
            content: "SYSTEM PROMPT SECRET SAUCE".into(),
            tool_call_id: None,
        },
        Message {
            role: Role::User,
            content: "Add 2 and 3 with the calculator.".into(),
            tool_call_id: None,
        },
        Message {
            role: Role::Assistant,
            content: String::new(),
            tool_call_id: None,
        },
        Message {
            role: Role::Tool,
            content: "---\nname: calculator\n".into(),
            tool_call_id: Some("t1".into()),
        },
        Message {
            role: Role::Assistant,
            content: "The sum is 5.".into(),
            tool_call_id: None,
        },
    ];
    trajectory.tool_calls = vec![
        ToolCall {
            id: "t1".into(),
            name: "activate_skill".into(),
            input: json!({"name": "calculator"}),
            output: Some("---\nname: calculator\n".into()),
            is_error: false,
            duration_s: None,
        },
        ToolCall {
            id: "t2".into(),
            name: "Bash".into(),
            input: json!({"command": "python scripts/add.py 2 3"}),
            output: Some("5".into()),
            is_error: false,
            duration_s: None,
        },
    ];
    trajectory.skill_activations = vec![SkillActivation {
        skill: "calculator".into(),
        evidence: ActivationEvidence::SkillTool,
        ok: true,
        tool_call_index: Some(0),
        target: true,
        reason: None,
    }];
    trajectory.commands = vec![CommandRun {
        command: "python scripts/add.py 2 3".into(),
        exit_code: Some(0),
    }];
    trajectory.final_answer = Some("The sum is 5.".into());
    trajectory
}

const VALID_ACCURACY: &str = r#"{"skill_identified":"yes","action_correct":"yes","factually_accurate":"no","task_addressed":"yes","actionable":"no","reason":"wrong sum"}"#;

// ---------------------------------------------------------------- parsing

#[test]
fn parses_a_valid_accuracy_answer() {
    let answer = parse_answer(JudgeMetricKind::Accuracy, 0, VALID_ACCURACY).unwrap();
    assert_eq!(answer.items.len(), 5);
    assert_eq!(answer.items[2].name, "factually_accurate");
    assert!(!answer.items[2].yes);
    assert_eq!(answer.score(), 0.6);
    assert_eq!(answer.reason, "wrong sum");
    // Case-insensitive verdicts.
    let upper = VALID_ACCURACY.replace("\"yes\"", "\"YES\"");
    assert_eq!(
        parse_answer(JudgeMetricKind::Accuracy, 0, &upper)
            .unwrap()
            .score(),
        0.6
    );
}

#[test]
fn raw_line_breaks_inside_strings_are_repaired_not_rejected() {
    let answer = "{\"goal_achieved\": \"yes\", \"reason\": \"first line\nsecond\tline\"}";
    let parsed = parse_answer(JudgeMetricKind::GoalAccuracy, 0, answer).unwrap();
    assert!(parsed.items[0].yes);
    assert_eq!(parsed.reason, "first line\nsecond\tline");
    // Line breaks between tokens were always fine; a broken structure still is not.
    assert!(
        parse_answer(
            JudgeMetricKind::GoalAccuracy,
            0,
            "{\n\"goal_achieved\": \"no\",\n\"reason\": \"r\"\n}"
        )
        .is_ok()
    );
    assert!(
        parse_answer(
            JudgeMetricKind::GoalAccuracy,
            0,
            "{\"goal_achieved\": \"no\"\n\"reason\": \"r\"}"
        )
        .is_err()
    );
}

#[test]
fn parses_one_json_fence_and_nothing_else() {
    let fenced = format!("```json\n{VALID_ACCURACY}\n```\n");
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, &fenced).is_ok());
    let plain_fence = format!("```\n{VALID_ACCURACY}\n```");
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, &plain_fence).is_ok());
    let prose = format!("Here is my verdict:\n```json\n{VALID_ACCURACY}\n```");
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, &prose).is_err());
    let after = format!("```json\n{VALID_ACCURACY}\n```\nHope this helps");
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, &after).is_err());
    let two = format!("```json\n{VALID_ACCURACY}\n```\n```json\n{VALID_ACCURACY}\n```");
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, &two).is_err());
    let python = format!("```python\n{VALID_ACCURACY}\n```");
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, &python).is_err());
    let trailing = format!("{VALID_ACCURACY} done");
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, &trailing).is_err());
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, "").is_err());
    assert!(extract_object("[1, 2]").is_err());
}

#[test]
fn rejects_extra_and_missing_keys_and_non_yes_no_values() {
    let extra = VALID_ACCURACY.replace("\"reason\"", "\"score\":0.6,\"reason\"");
    let problem = parse_answer(JudgeMetricKind::Accuracy, 0, &extra)
        .unwrap_err()
        .to_string();
    assert!(problem.contains("unexpected key `score`"), "{problem}");
    let missing = r#"{"skill_identified":"yes","action_correct":"yes","factually_accurate":"no","task_addressed":"yes","reason":"r"}"#;
    let problem = parse_answer(JudgeMetricKind::Accuracy, 0, missing)
        .unwrap_err()
        .to_string();
    assert!(
        problem.contains("missing the key `actionable`"),
        "{problem}"
    );
    let maybe = VALID_ACCURACY.replacen("\"yes\"", "\"maybe\"", 1);
    let problem = parse_answer(JudgeMetricKind::Accuracy, 0, &maybe)
        .unwrap_err()
        .to_string();
    assert!(problem.contains("\"yes\" or \"no\""), "{problem}");
    let boolean = VALID_ACCURACY.replacen("\"yes\"", "true", 1);
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, &boolean).is_err());
    let padded = VALID_ACCURACY.replacen("\"yes\"", "\" yes\"", 1);
    assert!(parse_answer(JudgeMetricKind::Accuracy, 0, &padded).is_err());
    let goal = r#"{"goal_achieved":"No","reason":"missing the total"}"#;
    let answer = parse_answer(JudgeMetricKind::GoalAccuracy, 0, goal).unwrap();
    assert_eq!(answer.score(), 0.0);
    let goal_extra = r#"{"goal_achieved":"yes","reason":"ok","confidence":"high"}"#;
    assert!(parse_answer(JudgeMetricKind::GoalAccuracy, 0, goal_extra).is_err());
}

#[test]
fn behavior_verdicts_need_exactly_one_per_assertion() {
    let two = r#"{"verdicts":[{"assertion":2,"verdict":"no","evidence":"b"},{"assertion":1,"verdict":"yes","evidence":"a"}]}"#;
    let answer = parse_answer(JudgeMetricKind::BehaviorCheck, 2, two).unwrap();
    assert_eq!(answer.items[0].name, "assertion_1");
    assert!(answer.items[0].yes);
    assert_eq!(answer.items[1].evidence, "b");
    assert_eq!(answer.score(), 0.5);
    let problem = parse_answer(JudgeMetricKind::BehaviorCheck, 3, two)
        .unwrap_err()
        .to_string();
    assert!(problem.contains("2 entries; there are 3"), "{problem}");
    let duplicate = r#"{"verdicts":[{"assertion":1,"verdict":"no","evidence":"b"},{"assertion":1,"verdict":"yes","evidence":"a"}]}"#;
    assert!(parse_answer(JudgeMetricKind::BehaviorCheck, 2, duplicate).is_err());
    let out_of_range = r#"{"verdicts":[{"assertion":0,"verdict":"no","evidence":"b"}]}"#;
    assert!(parse_answer(JudgeMetricKind::BehaviorCheck, 1, out_of_range).is_err());
    let extra = r#"{"verdicts":[{"assertion":1,"verdict":"no","evidence":"b","score":0}]}"#;
    assert!(parse_answer(JudgeMetricKind::BehaviorCheck, 1, extra).is_err());
    let missing_evidence = r#"{"verdicts":[{"assertion":1,"verdict":"no"}]}"#;
    assert!(parse_answer(JudgeMetricKind::BehaviorCheck, 1, missing_evidence).is_err());
    let maybe = r#"{"verdicts":[{"assertion":1,"verdict":"partly","evidence":"x"}]}"#;
    assert!(parse_answer(JudgeMetricKind::BehaviorCheck, 1, maybe).is_err());
}

#[test]
fn canonical_answers_validate_again() {
    for (metric, count, text) in [
        (JudgeMetricKind::Accuracy, 0, VALID_ACCURACY.to_string()),
        (
            JudgeMetricKind::GoalAccuracy,
            0,
            r#"{"goal_achieved":"YES","reason":"r"}"#.to_string(),
        ),
        (
            JudgeMetricKind::BehaviorCheck,
            2,
            r#"{"verdicts":[{"assertion":2,"verdict":"No","evidence":"b"},{"assertion":1,"verdict":"yes","evidence":"a"}]}"#.to_string(),
        ),
    ] {
        let answer = parse_answer(metric, count, &text).unwrap();
        let canonical = canonical_json(metric, &answer);
        let again = validate(metric, count, canonical.as_object().unwrap()).unwrap();
        assert_eq!(again, answer);
    }
}

// ---------------------------------------------------------------- rendering

#[test]
fn rendering_is_faithful_and_leaves_out_the_system_prompt() {
    let text = render_trajectory(&trajectory(), DEFAULT_MAX_TRAJECTORY_CHARS);
    assert!(!text.contains("SYSTEM PROMPT"), "{text}");
    assert!(text.contains("[user]\nAdd 2 and 3"), "{text}");
    assert!(text.contains("[tool call 1: activate_skill]"), "{text}");
    assert!(text.contains(r#"input: {"name":"calculator"}"#), "{text}");
    assert!(text.contains("[tool call 2: Bash]"), "{text}");
    assert!(
        text.contains("calculator (skill under evaluation) via a skill tool call: succeeded"),
        "{text}"
    );
    assert!(
        text.contains("- `python scripts/add.py 2 3` → exit code 0"),
        "{text}"
    );
    assert!(text.ends_with("## Final answer\nThe sum is 5.\n"), "{text}");
    // The last assistant message is the final answer: shown once.
    assert_eq!(text.matches("The sum is 5.").count(), 1, "{text}");
}

#[test]
fn rendering_stays_in_bounds_and_keeps_the_final_answer() {
    let mut long = trajectory();
    for index in 0..200 {
        long.tool_calls.push(ToolCall {
            id: format!("x{index}"),
            name: "Read".into(),
            input: json!({"path": format!("file{index}.txt")}),
            output: Some(format!("{index}:").repeat(5_000)),
            is_error: index % 7 == 0,
            duration_s: None,
        });
        long.commands.push(CommandRun {
            command: format!("cat file{index}.txt"),
            exit_code: None,
        });
    }
    long.final_answer = Some(format!("FINAL-START {} FINAL-END", "z".repeat(3_000)));
    for max in [24_000, 8_000, 3_000] {
        let text = render_trajectory(&long, max);
        let length = text.chars().count();
        assert!(length <= max, "{length} > {max}");
        assert!(text.contains("FINAL-START"), "{max}");
        assert!(text.contains("FINAL-END"), "{max}");
        assert!(text.contains("entries omitted …]"), "{max}");
        assert!(text.contains("## Shell commands"), "{max}");
    }
    // A single huge output is cut in the middle, not dropped.
    let mut one = trajectory();
    one.tool_calls[1].output = Some(format!("HEAD{}TAIL", "y".repeat(100_000)));
    let text = render_trajectory(&one, 24_000);
    assert!(text.chars().count() <= 24_000);
    assert!(text.contains("HEAD") && text.contains("TAIL"), "{text}");
    assert!(text.contains("characters omitted …]"));
    // A final answer larger than the whole budget is cut in the middle, never dropped.
    let mut huge = trajectory();
    huge.final_answer = Some(format!("BEGIN{}END", "q".repeat(50_000)));
    let text = render_trajectory(&huge, 10_000);
    assert!(text.chars().count() <= 10_000);
    assert!(text.contains("BEGIN") && text.contains("END"));
    // Tiny budgets still hold.
    assert!(render_trajectory(&huge, 50).chars().count() <= 50);
    // No final answer is said so.
    let mut none = trajectory();
    none.final_answer = None;
    assert!(render_trajectory(&none, 24_000).contains("(the agent gave no final answer)"));
}

#[test]
fn truncation_keeps_both_ends_within_the_cap() {
    let text: String = "abcdefghij".repeat(100);
    let cut = render::truncate_middle(&text, 100);
    assert!(cut.chars().count() <= 100, "{cut}");
    assert!(cut.starts_with("abc") && cut.ends_with("hij"), "{cut}");
    assert!(cut.contains("characters omitted …]"));
    assert_eq!(render::truncate_middle("short", 100), "short");
    let unicode = "é".repeat(500);
    assert!(render::truncate_middle(&unicode, 80).chars().count() <= 80);
}

// ---------------------------------------------------------------- aggregation

#[test]
fn repeats_aggregate_to_mean_sd_and_item_counts() {
    let answers: Vec<ParsedAnswer> = [
        VALID_ACCURACY.to_string(),
        VALID_ACCURACY.replace("\"no\"", "\"yes\""),
        VALID_ACCURACY.replacen("\"yes\"", "\"no\"", 1),
    ]
    .iter()
    .map(|text| parse_answer(JudgeMetricKind::Accuracy, 0, text).unwrap())
    .collect();
    let names: Vec<String> = ACCURACY_CRITERIA.iter().map(|c| c.to_string()).collect();
    let result = aggregate(JudgeMetricKind::Accuracy, "judge", "m", &names, &answers, 1);
    // Repeat scores 0.6, 1.0, 0.4.
    let spread = result.judge.as_ref().unwrap();
    assert_eq!(spread.repeats, vec![0.6, 1.0, 0.4]);
    let score = result.score.unwrap();
    assert!((score - 2.0 / 3.0).abs() < 1e-12, "{score}");
    let sd = spread.sd.unwrap();
    assert!((sd - 0.305_505_046_330_388_8).abs() < 1e-9, "{sd}");
    assert_eq!(spread.cached, 1);
    assert_eq!(spread.items.len(), 5);
    assert_eq!(spread.items[0].name, "skill_identified");
    assert_eq!((spread.items[0].yes, spread.items[0].total), (2, 3));
    assert_eq!(spread.items[2].yes, 1);
    assert_eq!(spread.items[1].yes, 3);
    assert_eq!(spread.items[0].evidence, "wrong sum");
    assert_eq!(
        result.sub_scores["factually_accurate"].score,
        Some(1.0 / 3.0)
    );
    assert_eq!(result.sub_scores["action_correct"].score, Some(1.0));
    assert_eq!(result.source, MetricSource::Judge);
    assert!(
        result
            .reason
            .starts_with("3.33/5 criteria yes on average over 3 repeats"),
        "{}",
        result.reason
    );
    assert!(!result.reason.contains('\n'));

    let single = aggregate(
        JudgeMetricKind::Accuracy,
        "judge",
        "m",
        &names,
        &answers[..1],
        0,
    );
    assert_eq!(single.judge.as_ref().unwrap().sd, None);
    assert_eq!(
        single.reason,
        "3/5 criteria yes; no: factually_accurate, actionable — wrong sum"
    );

    let behavior = parse_answer(
        JudgeMetricKind::BehaviorCheck,
        3,
        r#"{"verdicts":[{"assertion":1,"verdict":"yes","evidence":"ran add.py"},{"assertion":2,"verdict":"no","evidence":"said 6"},{"assertion":3,"verdict":"yes","evidence":"x"}]}"#,
    )
    .unwrap();
    let texts = vec![
        "runs add.py".to_string(),
        "answers 5".into(),
        "polite".into(),
    ];
    let result = aggregate(
        JudgeMetricKind::BehaviorCheck,
        "judge",
        "m",
        &texts,
        &[behavior],
        0,
    );
    assert_eq!(result.reason, "2 of 3 assertions held; not held: 2");
    assert_eq!(result.judge.as_ref().unwrap().items[1].name, "answers 5");
    assert_eq!(result.sub_scores["assertion_2"].score, Some(0.0));
    assert_eq!(result.sub_scores["assertion_2"].reason, "no: said 6");
}

// ---------------------------------------------------------------- mock judge server

#[derive(Debug, Clone)]
struct Recorded {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

#[derive(Default)]
struct MockState {
    replies: Mutex<VecDeque<String>>,
    /// Answer given once `replies` runs out.
    fallback: Mutex<String>,
    requests: Mutex<Vec<Recorded>>,
}

struct MockJudge {
    address: SocketAddr,
    state: Arc<MockState>,
}

impl MockJudge {
    fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }
}

async fn answer(
    State(state): State<Arc<MockState>>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> axum::Json<Value> {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    state.requests.lock().unwrap().push(Recorded {
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_string(),
                    value.to_str().unwrap_or("").to_string(),
                )
            })
            .collect(),
        body,
    });
    let text = state
        .replies
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| state.fallback.lock().unwrap().clone());
    if uri.path().ends_with("/messages") {
        // Anthropic: the text split over two blocks, with a non-text block between.
        let middle = text.len() / 2;
        let (first, second) = text.split_at(middle);
        axum::Json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-judge",
            "content": [
                {"type": "text", "text": first},
                {"type": "thinking", "thinking": "IGNORED"},
                {"type": "text", "text": second}
            ],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "output_tokens": 20}
        }))
    } else {
        axum::Json(json!({
            "id": "c1", "model": "gpt-judge",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20}
        }))
    }
}

async fn start_mock(replies: &[&str], fallback: &str) -> MockJudge {
    let state = Arc::new(MockState::default());
    state
        .replies
        .lock()
        .unwrap()
        .extend(replies.iter().map(|r| r.to_string()));
    *state.fallback.lock().unwrap() = fallback.to_string();
    let router = Router::new()
        .route("/v1/chat/completions", post(answer))
        .route("/v1/messages", post(answer))
        .with_state(Arc::clone(&state));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    MockJudge { address, state }
}

fn profile(kind: &str, base_url: &str, extra: &str) -> LoadedProfile {
    let text = format!(
        "kind = \"{kind}\"\nbase_url = \"{base_url}\"\nmodel = \"judge-model\"\nmax_retries = 1\nretry_base_delay_s = 0.01\n{extra}"
    );
    let profile: RunnerProfile = toml::from_str(&text).unwrap();
    LoadedProfile {
        name: "test-judge".into(),
        path: PathBuf::from("runners/test-judge.toml"),
        profile,
    }
}

fn settings(cache_dir: Option<PathBuf>) -> JudgeSettings {
    JudgeSettings {
        cache_dir,
        timeout: Duration::from_secs(20),
        ..JudgeSettings::default()
    }
}

#[tokio::test]
async fn malformed_then_valid_answer_succeeds_with_two_calls() {
    let mock = start_mock(&["I think it is fine.", VALID_ACCURACY], VALID_ACCURACY).await;
    let judge = Judge::new(
        &profile(
            "openai-chat",
            &format!("http://{}/v1", mock.address),
            "seed = 7\ntemperature = 0.0\n",
        ),
        Some("sk-test-secret".into()),
        settings(None),
    )
    .unwrap();
    let result = judge
        .grade(
            JudgeMetricKind::Accuracy,
            &case(Some("5"), &[]),
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap();
    assert_eq!(result.score, Some(0.6));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(first["model"], "judge-model");
    assert_eq!(first["response_format"], json!({"type": "json_object"}));
    assert_eq!(first["seed"], 7);
    assert_eq!(first["temperature"], 0.0);
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains(rubric::ACCURACY_SCHEMA)
    );
    let user = first["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("Add 2 and 3"), "{user}");
    assert!(user.contains("`calculator`"), "{user}");
    assert!(user.contains("# Expected output\n5"), "{user}");
    assert!(user.contains("## Final answer\nThe sum is 5."), "{user}");
    let authorization = requests[0]
        .headers
        .iter()
        .find(|(name, _)| name == "authorization")
        .map(|(_, value)| value.clone());
    assert_eq!(authorization.as_deref(), Some("Bearer sk-test-secret"));
    // The retry carries the bad answer and a correction naming the problem.
    let second = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(second.len(), 4);
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(second[2]["content"], "I think it is fine.");
    assert_eq!(second[3]["role"], "user");
    assert!(
        second[3]["content"]
            .as_str()
            .unwrap()
            .contains("could not be used"),
        "{}",
        second[3]["content"]
    );
    let usage = judge.usage();
    assert_eq!(usage.requests, 2);
    assert_eq!(usage.format_retries, 1);
    assert_eq!(usage.tokens.input_tokens, Some(200));
    // The key never shows in Debug.
    assert!(!format!("{judge:?}").contains("sk-test-secret"));
}

#[tokio::test]
async fn always_malformed_fails_after_the_format_retries() {
    let mock = start_mock(&[], r#"{"goal_achieved":"maybe","reason":"unsure"}"#).await;
    let judge = Judge::new(
        &profile("openai-chat", &format!("http://{}/v1", mock.address), ""),
        None,
        settings(None),
    )
    .unwrap();
    let error = judge
        .grade(
            JudgeMetricKind::GoalAccuracy,
            &case(Some("5"), &[]),
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap_err();
    assert_eq!(mock.requests().len(), 3);
    assert!(
        error.message.contains("no valid answer after 3 tries"),
        "{error}"
    );
    assert!(error.message.contains("test-judge"), "{error}");
    assert!(error.message.contains("goal_accuracy"), "{error}");
}

#[tokio::test]
async fn unreachable_server_is_a_judge_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let judge = Judge::new(
        &profile("openai-chat", &format!("http://{address}/v1"), ""),
        Some("sk-never-shown".into()),
        settings(None),
    )
    .unwrap();
    let error = judge
        .grade(
            JudgeMetricKind::Accuracy,
            &case(None, &[]),
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap_err();
    assert!(error.message.contains("request failed"), "{error}");
    assert!(!error.message.contains("sk-never-shown"), "{error}");
}

#[tokio::test]
async fn cached_repeats_make_no_request() {
    let behavior = r#"{"verdicts":[{"assertion":1,"verdict":"yes","evidence":"ran it"},{"assertion":2,"verdict":"no","evidence":"said 6"}]}"#;
    let mock = start_mock(&[], behavior).await;
    let cache_dir = tempfile::tempdir().unwrap();
    let judge_settings = JudgeSettings {
        k: 2,
        ..settings(Some(cache_dir.path().join("judge-cache")))
    };
    let judge = Judge::new(
        &profile(
            "openai-chat",
            &format!("http://{}/v1", mock.address),
            "seed = 10\n",
        ),
        Some("sk-cache-secret".into()),
        judge_settings.clone(),
    )
    .unwrap();
    let the_case = case(None, &["runs add.py", "answers 5"]);
    let first = judge
        .grade(
            JudgeMetricKind::BehaviorCheck,
            &the_case,
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap();
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let mut seeds: Vec<u64> = requests
        .iter()
        .map(|r| r.body["seed"].as_u64().unwrap())
        .collect();
    seeds.sort();
    assert_eq!(seeds, vec![10, 11]);
    assert_eq!(first.score, Some(0.5));
    assert_eq!(first.judge.as_ref().unwrap().cached, 0);
    assert_eq!(
        first.reason,
        "1.00 of 2 assertions held on average over 2 repeats; not always held: 2 (0/2)"
    );
    // Two cache files, no secret in them.
    let files: Vec<_> = std::fs::read_dir(cache_dir.path().join("judge-cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 2);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(!text.contains("sk-cache-secret"));
        let entry: CacheEntry = serde_json::from_str(&text).unwrap();
        assert_eq!(entry.rubric_version, RUBRIC_VERSION);
        assert_eq!(
            file.file_name().unwrap().to_string_lossy(),
            format!("{}.json", entry.key)
        );
    }
    // A second judge on the same cache: the same grade from the cache, no request.
    let again_judge = Judge::new(
        &profile(
            "openai-chat",
            &format!("http://{}/v1", mock.address),
            "seed = 10\n",
        ),
        None,
        judge_settings,
    )
    .unwrap();
    let again = again_judge
        .grade(
            JudgeMetricKind::BehaviorCheck,
            &the_case,
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap();
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(again.score, first.score);
    assert_eq!(again.judge.as_ref().unwrap().cached, 2);
    assert_eq!(again_judge.usage().cached_answers, 2);
    // A different trajectory misses.
    let mut other = trajectory();
    other.final_answer = Some("The sum is 6.".into());
    again_judge
        .grade(
            JudgeMetricKind::BehaviorCheck,
            &the_case,
            "calculator",
            &other,
        )
        .await
        .unwrap();
    assert_eq!(mock.requests().len(), 4);
}

#[tokio::test]
async fn anthropic_requests_carry_its_headers_and_join_text_blocks() {
    let mock = start_mock(&[], r#"{"goal_achieved":"yes","reason":"sum is 5"}"#).await;
    let judge = Judge::new(
        &profile(
            "anthropic-messages",
            &format!("http://{}/v1", mock.address),
            "temperature = 0.0\n",
        ),
        Some("sk-ant-test".into()),
        settings(None),
    )
    .unwrap();
    let result = judge
        .grade(
            JudgeMetricKind::GoalAccuracy,
            &case(Some("5"), &[]),
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap();
    assert_eq!(result.score, Some(1.0));
    assert_eq!(result.reason, "goal achieved — sum is 5");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/messages");
    let header = |wanted: &str| {
        request
            .headers
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.clone())
    };
    assert_eq!(header("x-api-key").as_deref(), Some("sk-ant-test"));
    assert_eq!(
        header("anthropic-version").as_deref(),
        Some(ANTHROPIC_VERSION)
    );
    assert_eq!(header("authorization"), None);
    let body = &request.body;
    assert_eq!(body["model"], "judge-model");
    assert_eq!(body["max_tokens"], ANTHROPIC_DEFAULT_MAX_TOKENS);
    assert_eq!(body["temperature"], 0.0);
    assert!(body["system"].as_str().unwrap().contains("goal_achieved"));
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(judge.usage().tokens.output_tokens, Some(20));
}

#[tokio::test]
async fn not_applicable_metrics_make_no_request() {
    let mock = start_mock(&[], VALID_ACCURACY).await;
    let judge = Judge::new(
        &profile("openai-chat", &format!("http://{}/v1", mock.address), ""),
        None,
        settings(None),
    )
    .unwrap();
    let no_expectations = case(None, &[]);
    let goal = judge
        .grade(
            JudgeMetricKind::GoalAccuracy,
            &no_expectations,
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap();
    assert_eq!(goal.score, None);
    assert!(goal.reason.contains("expected_output"));
    let behavior = judge
        .grade(
            JudgeMetricKind::BehaviorCheck,
            &no_expectations,
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap();
    assert_eq!(behavior.score, None);
    assert!(behavior.reason.contains("assertions"));
    assert!(mock.requests().is_empty());
}

// ---------------------------------------------------------------- construction

#[test]
fn judges_need_a_model_api_profile() {
    let error = Judge::new(
        &profile("claude-code", "", ""),
        None,
        JudgeSettings::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("openai-chat` or `anthropic-messages"),
        "{error}"
    );
    let error = Judge::new(
        &profile("openai-chat", "", ""),
        None,
        JudgeSettings::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("base_url"), "{error}");
    let judge = Judge::new(
        &profile("anthropic-messages", "", ""),
        None,
        JudgeSettings::default(),
    )
    .unwrap();
    assert_eq!(judge.url, "https://api.anthropic.com/v1/messages");
    assert_eq!(judge.name(), "test-judge");
    assert_eq!(judge.model(), "judge-model");
    let error = Judge::new(
        &profile("anthropic-messages", "", ""),
        None,
        JudgeSettings {
            k: 0,
            ..JudgeSettings::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("at least 1"), "{error}");
    assert_eq!(JudgeMetricKind::BehaviorCheck.name(), "behavior_check");
}

#[test]
fn cache_keys_depend_on_every_part() {
    let base = CacheKeyParts {
        model: "m",
        base_url: "http://x/v1",
        rubric_version: RUBRIC_VERSION,
        metric: "accuracy",
        messages_sha256: "abc",
        repeat: 0,
        sampling: "{\"temperature\":0.0}",
    };
    let key = base.key();
    assert_eq!(key.len(), 64);
    assert_eq!(key, base.key());
    for changed in [
        CacheKeyParts { model: "n", ..base },
        CacheKeyParts {
            base_url: "http://y/v1",
            ..base
        },
        CacheKeyParts {
            rubric_version: "other",
            ..base
        },
        CacheKeyParts {
            metric: "goal_accuracy",
            ..base
        },
        CacheKeyParts {
            messages_sha256: "abd",
            ..base
        },
        CacheKeyParts { repeat: 1, ..base },
        CacheKeyParts {
            sampling: "{\"temperature\":0.7}",
            ..base
        },
    ] {
        assert_ne!(changed.key(), key);
    }
}

#[tokio::test]
async fn response_format_follows_the_profile_and_carries_the_rubric_schema() {
    let verdicts = r#"{"verdicts": [{"assertion": 1, "verdict": "yes", "evidence": "e"}, {"assertion": 2, "verdict": "no", "evidence": "e"}]}"#;
    for (setting, expected) in [
        ("json_object", Some("json_object")),
        ("json_schema", Some("json_schema")),
        ("json_object_schema", Some("json_object")),
        ("none", None),
    ] {
        let mock = start_mock(&[], verdicts).await;
        let judge = Judge::new(
            &profile(
                "openai-chat",
                &format!("http://{}/v1", mock.address),
                &format!("response_format = \"{setting}\"\n"),
            ),
            None,
            settings(None),
        )
        .unwrap();
        let result = judge
            .grade(
                JudgeMetricKind::BehaviorCheck,
                &case(None, &["adds", "explains"]),
                "calculator",
                &trajectory(),
            )
            .await
            .unwrap();
        assert_eq!(result.score, Some(0.5), "{setting}");
        let body = &mock.requests()[0].body;
        assert_eq!(
            body["response_format"]["type"].as_str(),
            expected,
            "{setting}"
        );
        let schema = match setting {
            "json_schema" => body["response_format"]["json_schema"]["schema"].clone(),
            "json_object_schema" => body["response_format"]["schema"].clone(),
            _ => Value::Null,
        };
        if !schema.is_null() {
            let verdicts = &schema["properties"]["verdicts"];
            assert_eq!(verdicts["minItems"], 2, "{setting}");
            assert_eq!(verdicts["maxItems"], 2, "{setting}");
            assert_eq!(
                verdicts["items"]["properties"]["verdict"]["enum"],
                json!(["yes", "no"])
            );
        }
    }
}

// ---------------------------------------------------------------- style

const VALID_STYLE: &str = r#"{"format": "yes", "format_reason": "plain prose, like the past answers", "language": "Yes", "language_reason": "English", "verbosity": "no", "verbosity_reason": "three times longer than usual"}"#;

/// A style answer needs the three items and their reasons, nothing else; it scores yes / 3
/// and survives the cache's canonical form.
#[test]
fn style_answers_are_validated_item_by_item() {
    let answer = parse_answer(JudgeMetricKind::Style, 0, VALID_STYLE).unwrap();
    let names: Vec<&str> = answer.items.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["format", "language", "verbosity"]);
    assert!((answer.score() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(answer.items[2].evidence, "three times longer than usual");
    let canonical = canonical_json(JudgeMetricKind::Style, &answer);
    let again = validate(JudgeMetricKind::Style, 0, canonical.as_object().unwrap()).unwrap();
    assert_eq!(again, answer);
    let missing = r#"{"format": "yes", "format_reason": "", "language": "yes", "language_reason": "", "verbosity": "no"}"#;
    assert_eq!(
        parse_answer(JudgeMetricKind::Style, 0, missing)
            .unwrap_err()
            .to_string(),
        "the object is missing the key `verbosity_reason`"
    );
    let extra = r#"{"format": "yes", "format_reason": "", "language": "yes", "language_reason": "", "verbosity": "no", "verbosity_reason": "", "reason": "x"}"#;
    assert!(
        parse_answer(JudgeMetricKind::Style, 0, extra)
            .unwrap_err()
            .to_string()
            .contains("unexpected key `reason`")
    );
    let not_yes_no = VALID_STYLE.replace("\"Yes\"", "\"partly\"");
    assert!(
        parse_answer(JudgeMetricKind::Style, 0, &not_yes_no)
            .unwrap_err()
            .to_string()
            .starts_with("`language` must be \"yes\" or \"no\"")
    );
    assert_eq!(
        "style".parse::<JudgeMetricKind>().unwrap(),
        JudgeMetricKind::Style
    );
}

/// The style request carries the reference and the final answer only (not the task or the
/// trajectory); the result has one sub-score per item with its reason. A trial without a
/// final answer is not applicable (no request); a judge without a reference fails, never 0.
#[tokio::test]
async fn style_is_judged_on_the_reference_and_the_final_answer() {
    let mock = start_mock(&[], VALID_STYLE).await;
    let base_url = format!("http://{}/v1", mock.address);
    let judge = Judge::new(&profile("openai-chat", &base_url, ""), None, settings(None))
        .unwrap()
        .with_style_reference("## The user's USER.md\nShort plain answers.".into());
    let result = judge
        .grade(
            JudgeMetricKind::Style,
            &case(Some("5"), &[]),
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap();
    assert!((result.score.unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert!(
        result
            .reason
            .starts_with("2/3 style items match the reference; no: verbosity"),
        "{}",
        result.reason
    );
    assert_eq!(
        result.sub_scores["verbosity"].reason,
        "no: three times longer than usual"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains(rubric::STYLE_SCHEMA), "{system}");
    let user = requests[0].body["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("Short plain answers."), "{user}");
    assert!(user.contains("# The new answer\nThe sum is 5."), "{user}");
    assert!(!user.contains("Add 2 and 3"), "{user}");
    assert!(!user.contains("# Expected output"), "{user}");

    let mut silent = trajectory();
    silent.final_answer = None;
    let not_applicable = judge
        .grade(
            JudgeMetricKind::Style,
            &case(None, &[]),
            "calculator",
            &silent,
        )
        .await
        .unwrap();
    assert_eq!(not_applicable.score, None);
    assert_eq!(mock.requests().len(), 1);

    let without_reference =
        Judge::new(&profile("openai-chat", &base_url, ""), None, settings(None)).unwrap();
    let error = without_reference
        .grade(
            JudgeMetricKind::Style,
            &case(None, &[]),
            "calculator",
            &trajectory(),
        )
        .await
        .unwrap_err();
    assert!(error.message.contains("no style reference"), "{error}");
}
