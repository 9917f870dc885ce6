//! Integration tests of the `anthropic-messages` runner: the real `skill-lift` binary against a
//! scripted Anthropic Messages API on loopback (`support::mock_messages`), in temporary folders.
//! The mock's answers give a designed lift of exactly 1.0 in both skill modes and fixed usage
//! per answer, so lift, usage (cache reads and writes included) and cost are known exactly.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::cli::{PIRATE_SKILL_MD, assert_exit, files_under, pirate_evals, stderr};
use support::mock_messages::{
    CACHE_READ_TOKENS, CACHE_WRITE_TOKENS, INPUT_TOKENS, MessagesBehaviour, MessagesMock,
    OUTPUT_TOKENS,
};

/// The planted key: it must reach the mock as `x-api-key` and never any file.
const SECRET: &str = "sk-ant-api03-planted-Q7v9XwZ2-never-on-disk";
/// The variable the profile names.
const KEY_VARIABLE: &str = "SKILL_LIFT_TEST_ANTHROPIC_KEY";

fn behaviour() -> MessagesBehaviour {
    MessagesBehaviour {
        target: "pirate-greeting".to_string(),
        marker: "SKILL-MARKER".to_string(),
        with_answer: "Aye! Here is the answer.".to_string(),
        without_answer: "Here is the answer.".to_string(),
        api_key: SECRET.to_string(),
        rate_limited_first: 0,
        retry_after_s: 0,
    }
}

// A temporary project (skill with a marker body, `cases` golden cases, an `anthropic`
// profile pointing at the mock) with its own state folder.
use support::cli::Project as Fixture;

impl Fixture {
    fn new(base_url: &str, cases: usize, extra: &str) -> Self {
        let fixture = Self::with_own_state();
        fixture.write("skill/pirate-greeting/SKILL.md", PIRATE_SKILL_MD);
        fixture.write(
            "skill/pirate-greeting/evals/evals.json",
            &pirate_evals(cases).to_string(),
        );
        fixture.profile(base_url, extra);
        fixture
    }

    fn profile(&self, base_url: &str, extra: &str) {
        self.write(
            "runners/anthropic.toml",
            &format!(
                "kind = \"anthropic-messages\"\nbase_url = \"{base_url}\"\nmodel = \"claude-mock\"\napi_key_env = \"{KEY_VARIABLE}\"\ntimeout_s = 30\nretry_base_delay_s = 0.01\n{extra}\n[price]\ninput_usd_per_million_tokens = 3\noutput_usd_per_million_tokens = 15\ncache_read_usd_per_million_tokens = 0.3\ncache_write_usd_per_million_tokens = 3.75\n"
            ),
        );
    }

    fn keyed(&self, key: &str) -> Command {
        let mut command = self.command();
        command.env(KEY_VARIABLE, key);
        command
    }

    /// `skill-lift run skill --runner anthropic --out results --run-id ID ARGS…` with `key`.
    fn run(&self, key: &str, id: &str, args: &[&str]) -> Output {
        self.keyed(key)
            .arg("run")
            .arg(self.dir.path().join("skill/pirate-greeting"))
            .args(["--runner", "anthropic", "--out", "results", "--run-id", id])
            .args(args)
            .output()
            .unwrap()
    }

    /// No file the runs wrote (run folders, state folder, the project) holds `secret`.
    fn assert_never_written(&self, secret: &str) {
        let mut checked = 0;
        for root in [self.dir.path(), self.state()] {
            for file in files_under(root).into_iter().filter(|f| f.is_file()) {
                let bytes = std::fs::read(&file).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(secret),
                    "the API key reached {}",
                    file.display()
                );
                checked += 1;
            }
        }
        assert!(checked > 10, "only {checked} files checked");
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn trial_lines(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The usage `requests` answers of the mock add up to, and their cost under the profile's
/// prices (USD per million: input 3, output 15, cache reads 0.3, cache writes 3.75).
fn expected_usage(requests: u64) -> (Value, f64) {
    let usage = json!({
        "input_tokens": requests * (INPUT_TOKENS + CACHE_WRITE_TOKENS + CACHE_READ_TOKENS),
        "output_tokens": requests * OUTPUT_TOKENS,
        "cached_tokens": requests * CACHE_READ_TOKENS,
        "cache_creation_tokens": requests * CACHE_WRITE_TOKENS,
    });
    let cost = requests as f64
        * (INPUT_TOKENS as f64 * 3.0
            + OUTPUT_TOKENS as f64 * 15.0
            + CACHE_READ_TOKENS as f64 * 0.3
            + CACHE_WRITE_TOKENS as f64 * 3.75)
        / 1e6;
    (usage, cost)
}

#[test]
fn the_designed_lift_is_measured_exactly_in_both_skill_modes_with_cache_usage() {
    let mock = MessagesMock::start(behaviour());
    let fixture = Fixture::new(&mock.base_url(), 6, "");
    for (mode, k) in [("inject", 2), ("tools", 1)] {
        fixture.profile(
            &mock.base_url(),
            &format!("skill_mode = \"{mode}\"\nmax_turns = 4\n"),
        );
        let before = mock.bodies().len();
        let output = fixture.run(SECRET, mode, &["-k", &k.to_string(), "--jobs", "4"]);
        assert_eq!(output.status.code(), Some(0), "{mode}: {}", stderr(&output));
        let run_dir = fixture.run_dir(mode);
        let summary = read_json(&run_dir.join("summary.json"));
        assert_eq!(summary["arms"]["with_skill"]["pass_rate"], 1.0, "{mode}");
        assert_eq!(summary["arms"]["without_skill"]["pass_rate"], 0.0, "{mode}");
        assert_eq!(summary["lift"]["estimate"], 1.0, "{mode}");
        assert_eq!(summary["lift"]["verdict"], "improved", "{mode}");
        assert_eq!(summary["trials"]["recorded"], 6 * 2 * k, "{mode}");
        assert_eq!(summary["observed_models"], json!(["claude-mock-20990101"]));
        let manifest = read_json(&run_dir.join("manifest.json"));
        assert_eq!(manifest["runner"]["kind"], "anthropic-messages");
        assert_eq!(manifest["runner"]["skill_mode"], mode);
        assert_eq!(manifest["runner"]["capabilities"]["skill_delivery"], mode);

        let mut total_requests = 0;
        for record in trial_lines(&run_dir) {
            let with_skill = record["arm"] == "with_skill";
            assert_eq!(
                record["outcome"],
                if with_skill { "pass" } else { "fail" },
                "{record}"
            );
            // Tools mode, with the skill: activate_skill, then final_answer (two requests).
            let requests = if mode == "tools" && with_skill { 2 } else { 1 };
            assert_eq!(record["requests"], requests, "{record}");
            total_requests += requests;
            let (usage, cost) = expected_usage(requests);
            for (key, value) in usage.as_object().unwrap() {
                assert_eq!(&record["usage"][key], value, "{mode} {key}: {record}");
            }
            let recorded_cost = record["usage"]["cost_usd"].as_f64().unwrap();
            assert!(
                (recorded_cost - cost).abs() < 1e-12,
                "{recorded_cost} {cost}"
            );
            if mode == "tools" && with_skill {
                assert_eq!(record["activated_skills"], json!(["pirate-greeting"]));
                assert_eq!(record["tool_calls"], 2, "activate_skill and final_answer");
            } else {
                assert_eq!(record["activated_skills"], json!([]));
            }
            let transcript = support::transcripts::of(&run_dir, &record);
            let system = transcript["trajectory"]["messages"][0]["content"]
                .as_str()
                .unwrap();
            // Inject: the body is in the prompt of the with-skill arm only; tools: never.
            assert_eq!(
                system.contains("SKILL-MARKER"),
                mode == "inject" && with_skill,
                "{mode}"
            );
        }
        // The arm totals are the sums of the mock's numbers.
        let (usage, _) = expected_usage(total_requests);
        let with = &summary["arms"]["with_skill"]["usage"];
        let without = &summary["arms"]["without_skill"]["usage"];
        for key in ["input_tokens", "output_tokens", "cached_tokens"] {
            assert_eq!(
                with[key].as_u64().unwrap() + without[key].as_u64().unwrap(),
                usage[key].as_u64().unwrap(),
                "{mode} {key}"
            );
        }

        // What went over the wire: system as a cached block, tools (tools mode) with a
        // breakpoint on the last one, the newest tool result cached, the version header.
        let bodies = mock.bodies();
        let bodies = &bodies[before..];
        assert_eq!(bodies.len() as u64, total_requests, "{mode}");
        for body in bodies {
            assert_eq!(body["model"], "claude-mock");
            assert!(body["max_tokens"].as_u64().unwrap() > 0);
            assert_eq!(body["system"][0]["type"], "text");
            assert_eq!(
                body["system"][0]["cache_control"],
                json!({"type": "ephemeral"})
            );
            let messages = body["messages"].as_array().unwrap();
            assert_eq!(messages[0]["role"], "user");
            if mode == "tools" {
                let tools = body["tools"].as_array().unwrap();
                assert_eq!(tools.last().unwrap()["name"], "final_answer");
                assert_eq!(
                    tools.last().unwrap()["cache_control"],
                    json!({"type": "ephemeral"})
                );
                assert!(tools.iter().all(|t| t["input_schema"]["type"] == "object"));
                if messages.len() > 1 {
                    // activate_skill's tool_use, answered by a tool_result block.
                    assert_eq!(messages[1]["content"][0]["type"], "tool_use");
                    let result = &messages[2]["content"][0];
                    assert_eq!(result["type"], "tool_result");
                    assert_eq!(result["tool_use_id"], messages[1]["content"][0]["id"]);
                    assert_eq!(result["cache_control"], json!({"type": "ephemeral"}));
                    assert!(result["content"].as_str().unwrap().contains("SKILL-MARKER"));
                }
            } else {
                assert!(body.get("tools").is_none());
                assert_eq!(messages.len(), 1);
            }
        }
    }
    assert!(
        mock.state
            .versions
            .lock()
            .unwrap()
            .iter()
            .all(|v| v == "2023-06-01")
    );
    assert_eq!(
        mock.state
            .unauthorised
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    fixture.assert_never_written(SECRET);

    // `skill-lift runners` lists the built-in profile and the folder's override.
    let listed = fixture.keyed(SECRET).arg("runners").output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let anthropic: Vec<&str> = listed
        .lines()
        .filter(|line| line.starts_with("anthropic "))
        .collect();
    assert_eq!(anthropic.len(), 2, "{listed}");
    assert!(
        anthropic
            .iter()
            .all(|line| line.contains("anthropic-messages"))
    );
    assert!(anthropic[1].contains("built-in"), "{listed}");
}

#[test]
fn rate_limits_are_retried_as_the_headers_ask_and_recorded() {
    let mock = MessagesMock::start(MessagesBehaviour {
        rate_limited_first: 2,
        retry_after_s: 1,
        ..behaviour()
    });
    let fixture = Fixture::new(&mock.base_url(), 1, "skill_mode = \"inject\"\n");
    let output = fixture.run(SECRET, "limited", &["-k", "1", "--jobs", "1"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let records = trial_lines(&fixture.run_dir("limited"));
    assert_eq!(records.len(), 2);
    let retries: Vec<&Value> = records
        .iter()
        .flat_map(|r| r["retries"].as_array().unwrap())
        .collect();
    assert_eq!(retries.len(), 2, "{records:?}");
    for retry in &retries {
        assert!(
            retry["error"].as_str().unwrap().contains("HTTP 429"),
            "{retry}"
        );
    }
    // `retry-after: 1` is waited as given; the reset header 1 s ahead is waited (not the
    // profile's 0.01 s backoff).
    assert_eq!(retries[0]["waited_s"], 1.0);
    let reset_wait = retries[1]["waited_s"].as_f64().unwrap();
    assert!((0.5..=1.0).contains(&reset_wait), "{reset_wait}");
    assert!(
        records
            .iter()
            .all(|r| r["outcome"] == "pass" || r["outcome"] == "fail")
    );
    let summary = read_json(&fixture.run_dir("limited").join("summary.json"));
    assert_eq!(summary["lift"]["estimate"], 1.0);
    assert_eq!(mock.requests(), 2 + 2);
}

#[test]
fn a_refused_key_is_unscoreable_with_its_cause_and_never_written() {
    let mock = MessagesMock::start(behaviour());
    let fixture = Fixture::new(&mock.base_url(), 2, "skill_mode = \"tools\"\n");
    let wrong = "sk-ant-api03-wrong-key-R4nd0m-also-secret";
    // The pre-flight check finds it before any trial runs.
    let output = fixture.run(wrong, "preflight", &["-k", "1"]);
    assert_exit(&output, 3, "authentication");
    assert_eq!(mock.requests(), 0);
    // Past it, every trial is unscoreable for the typed cause, none failed, never retried.
    let output = fixture.run(wrong, "refused", &["-k", "1", "--no-preflight"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let run_dir = fixture.run_dir("refused");
    let records = trial_lines(&run_dir);
    assert_eq!(records.len(), 4);
    for record in &records {
        assert_eq!(record["outcome"], "unscoreable", "{record}");
        assert_eq!(record["unscoreable_cause"], "runner_error", "{record}");
        assert_eq!(record["infrastructure"], "auth_failure", "{record}");
        assert!(
            record["reason"].as_str().unwrap().contains("HTTP 401"),
            "{record}"
        );
        assert_eq!(record["retries"].as_array().unwrap().len(), 1, "{record}");
    }
    let summary = read_json(&run_dir.join("summary.json"));
    assert_eq!(summary["trials"]["unscoreable"], 4);
    assert_eq!(summary["trials"]["fail"], 0);
    assert_eq!(mock.requests(), 4);
    fixture.assert_never_written(wrong);
}
