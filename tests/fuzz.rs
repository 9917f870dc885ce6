//! Property-based fuzzing (proptest) of every loader and agent output parser: `evals.json` /
//! `.jsonl` / `.yaml`, `SKILL.md` frontmatter, runner profile TOML, `trials.jsonl`,
//! `manifest.json`, `hosts.json`, and the six agent stream parsers.
//!
//! Inputs are arbitrary bytes and structure-aware mutations of valid fixtures written here (cut,
//! duplicate, insert JSON/YAML/TOML punctuation, flip bytes, truncate), so they stay valid with
//! the loaders as those change. Each input must load or fail with an error naming the file —
//! never panic — and take under [`slow_limit`]: 1 s in the campaign (`scripts/fuzz`), 10 s in
//! a `cargo test` build with debug assertions. Every input is under 1 MB. The session-history readers
//! (Claude Code, Codex, Gemini CLI) must never fail on a bad file: they skip it with a warning.
//!
//! `SKILL_LIFT_FUZZ_CASES` sets the cases per target (default 200, a few seconds in
//! `cargo test`); `scripts/fuzz` runs a long campaign and reports the count and time.
#![allow(clippy::disallowed_methods)]
// tests write their fixtures directly, not through src/disk/

// Test diagnostics go to the test harness, not through skill-lift's terminal writer.
#![allow(clippy::disallowed_macros)]

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use skill_lift::features::runner::parsers::OutputFormat;

/// The longest one input may take: `SKILL_LIFT_FUZZ_SLOW_S` seconds when set (the campaign
/// sets 1), else 1 s where the test binary is built without debug assertions, 10 s with them
/// (`cargo test` on a loaded machine).
fn slow_limit() -> Duration {
    if let Some(seconds) = std::env::var("SKILL_LIFT_FUZZ_SLOW_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
    {
        return Duration::from_secs_f64(seconds);
    }
    if cfg!(debug_assertions) {
        Duration::from_secs(10)
    } else {
        Duration::from_secs(1)
    }
}

/// Largest input generated, bytes (the 1 s bound is for inputs under 1 MB).
const MAX_INPUT_BYTES: usize = 1 << 20;

fn cases() -> u32 {
    std::env::var("SKILL_LIFT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Valid inputs of one target, mutated by [`mutated`].
struct Target {
    name: &'static str,
    seeds: &'static [&'static str],
}

const EVALS_JSON: &str = r#"{"skill_name": "pirate-greeting", "evals": [
  {"id": "greet-01", "prompt": "Hi there!", "expected_output": "Aye!", "expected_skill": "pirate-greeting",
   "checks": [{"type": "regex", "pattern": "^Aye"}, {"type": "contains", "value": "ticket", "ignore_case": true},
              {"type": "json_path", "path": "$.status", "equals": "ok"}], "cluster": "a", "weight": 2},
  {"id": "neg-01", "prompt": "Sum 2+2", "expected_skill": null, "should_trigger": false, "files": ["evals/files/a.txt"],
   "assertions": ["mentions 4"], "status": "draft"}]}"#;
const EVALS_FLAT: &str =
    r#"[{"question": "Hi?", "ground_truth": "Aye", "expected_behavior": ["greets"]}]"#;
const EVALS_JSONL: &str = "{\"id\": \"a\", \"prompt\": \"p\", \"checks\": [{\"type\": \"equals\", \"value\": \"42\"}]}\n{\"id\": \"b\", \"prompt\": \"q\", \"expected_output\": \"x\", \"expected_output_match\": \"regex\"}\n";
const EVALS_YAML: &str = "cases:\n  - id: a\n    prompt: \"Hello\"\n    checks:\n      - type: contains\n        value: Aye\n  - id: b\n    prompt: |\n      multi\n      line\n    expected_skill: null\n";
const SKILL_MD: &str = "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\nlicense: MIT\nmetadata:\n  author: me\n  version: \"1.0\"\nallowed-tools: Bash(git:*) Read\n---\n# Pirate\nBegin every answer with Aye!\n";
const PROFILE_TOML: &str = "kind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \"KEY\"\ntemperature = 0.7\nmax_tokens = 64\ntimeout_s = 10\nconcurrency = 2\nskill_mode = \"tools\"\nmax_retries = 3\nretry_base_delay_s = 0.5\nmax_retry_delay_s = 5\n[server]\ncommand = [\"serve\", \"{port}\"]\nready_url = \"http://127.0.0.1:9/v1/models\"\nstartup_timeout_s = 30\n";
const PROFILE_CLI: &str = "kind = \"command\"\nmodel = \"m\"\ncommand = [\"agent\", \"{prompt}\"]\noutput_format = \"claude-stream-json\"\nskills_dir = \".claude/skills\"\npass_env = [\"A\"]\ngrace_s = 1\nlinger_s = 1\nmax_stdout_bytes = 100000\n[env]\nX = \"1\"\n";
const HOSTS_JSON: &str = r#"{"hosts": {"my-host": {"kind": "asset", "root": "/tmp/skills", "manifests": ["SKILL.md"], "logs": ["/tmp/logs/*.jsonl"]}}}"#;
const CLAUDE: &str = r#"{"type":"system","subtype":"init","session_id":"s","model":"m","skills":["a"]}
{"type":"assistant","message":{"id":"m1","model":"m","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"a"}},{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":2}},"session_id":"s"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}],"is_error":false}]},"tool_use_result":{"success":true}}
{"type":"result","subtype":"success","is_error":false,"result":"done","usage":{"input_tokens":3,"output_tokens":2},"total_cost_usd":0.1}
{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"result":"Overloaded"}"#;
const CODEX: &str = r#"{"type":"thread.started","thread_id":"t"}
{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"cat SKILL.md","aggregated_output":"x","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"i2","type":"file_change","changes":[{"path":"a","kind":"add"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"i3","type":"agent_message","text":"done"}}
{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":1,"output_tokens":2}}
{"type":"turn.failed","error":{"message":"unexpected status 401"}}"#;
const GEMINI: &str = r#"{"type":"init","session_id":"g","model":"m"}
{"type":"tool_use","tool_name":"activate_skill","tool_id":"a1","parameters":{"name":"a"}}
{"type":"tool_result","tool_id":"a1","status":"success","output":"ok"}
{"type":"message","role":"assistant","content":"done","delta":true}
{"type":"result","status":"success","stats":{"total_tokens":3,"input_tokens":2,"output_tokens":1}}"#;
const OPENCODE: &str = r#"{"type":"step_start","sessionID":"o","part":{"type":"step-start"}}
{"type":"tool_use","sessionID":"o","part":{"type":"tool","callID":"c","tool":"skill","state":{"status":"completed","input":{"name":"a"},"output":"ok"}}}
{"type":"text","sessionID":"o","part":{"type":"text","text":"done"}}
{"type":"step_finish","sessionID":"o","part":{"type":"step-finish","tokens":{"input":1,"output":1,"cache":{"read":0,"write":0}},"cost":0.1}}
{"type":"error","error":{"name":"APIError","data":{"statusCode":429,"message":"slow"}}}
{"type":"done","reason":"idle"}"#;
const CURSOR: &str = r#"{"type":"system","subtype":"init","session_id":"c","model":"GPT-5"}
{"type":"tool_call","subtype":"started","call_id":"r","tool_call":{"readToolCall":{"args":{"path":"SKILL.md"}}}}
{"type":"tool_call","subtype":"completed","call_id":"r","tool_call":{"readToolCall":{"args":{"path":"SKILL.md"},"result":{"success":{"content":"x"}}}}}
{"type":"result","subtype":"success","is_error":false,"result":"done"}"#;
const GOOSE: &str = r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolRequest","id":"t","toolCall":{"status":"success","value":{"name":"skills__load_skill","arguments":{"name":"a"}}}}]}}
{"type":"message","message":{"role":"user","content":[{"type":"toolResponse","id":"t","toolResult":{"status":"success","value":[{"type":"text","text":"x"}]}}]}}
{"type":"error","error":"Rate limit"}
{"type":"complete","total_tokens":3,"input_tokens":2,"output_tokens":1}"#;

/// Bytes: a seed mutated a few times, or arbitrary bytes.
fn mutated(seeds: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    let punctuation: &[u8] = b"{}[]\":,\n\r\t \\'#=-|>*&!%@`\x00\xff";
    let mutation = (0u8..8, any::<u32>(), any::<u32>(), any::<u8>(), 0usize..64);
    let mutate = (
        prop::sample::select(seeds.to_vec()),
        prop::collection::vec(mutation, 1..8),
    )
        .prop_map(move |(seed, mutations)| {
            let mut bytes = seed.as_bytes().to_vec();
            for (kind, a, b, byte, len) in mutations {
                let n = bytes.len().max(1);
                let at = a as usize % n;
                let to = (at + b as usize % 64).min(bytes.len());
                match kind {
                    0 => {
                        bytes.drain(at.min(bytes.len())..to);
                    }
                    1 => {
                        let piece = bytes[at.min(bytes.len())..to].to_vec();
                        let insert = (b as usize) % (bytes.len() + 1);
                        bytes.splice(insert..insert, piece);
                    }
                    2 => {
                        let p = punctuation[byte as usize % punctuation.len()];
                        let insert = at.min(bytes.len());
                        bytes.insert(insert, p);
                    }
                    3 => {
                        if let Some(slot) = bytes.get_mut(at) {
                            *slot ^= byte | 1;
                        }
                    }
                    4 => bytes.truncate(at),
                    5 => {
                        // Big numbers, deep nesting and long runs.
                        let insert = at.min(bytes.len());
                        let text = match byte % 8 {
                            0 => "1e309".to_string(),
                            1 => "-99999999999999999999999".to_string(),
                            2 => "[".repeat(len * 8),
                            3 => "\u{202e}é\u{0}".repeat(len),
                            // Deep YAML: block mappings, compact sequences, flow mappings.
                            4 => (0..len * 40)
                                .map(|depth| format!("{}a:\n", " ".repeat(depth)))
                                .collect(),
                            5 => "- ".repeat(len * 40),
                            6 => "{a: ".repeat(len * 40),
                            _ => "x".repeat(len * 1000),
                        };
                        bytes.splice(insert..insert, text.into_bytes());
                    }
                    6 => {
                        let piece = bytes.clone();
                        bytes.extend_from_slice(&piece[..piece.len().min(4096)]);
                    }
                    _ => {
                        let p = punctuation[byte as usize % punctuation.len()];
                        if let Some(slot) = bytes.get_mut(at) {
                            *slot = p;
                        }
                    }
                }
            }
            bytes.truncate(MAX_INPUT_BYTES - 1);
            bytes
        });
    prop_oneof![
        4 => mutate,
        1 => prop::collection::vec(any::<u8>(), 0..512),
    ]
}

/// Run `check` on `cases()` inputs of `target`; returns how many ran. Prints the count and the
/// slowest input's time (the campaign's report reads these lines).
fn fuzz(target: &Target, check: impl Fn(&[u8])) -> u32 {
    let count = cases();
    let mut runner = TestRunner::new(Config {
        cases: count,
        failure_persistence: None,
        ..Config::default()
    });
    let slowest = std::cell::Cell::new((Duration::ZERO, 0usize));
    let limit = slow_limit();
    let result = runner.run(&mutated(target.seeds), |bytes| {
        let started = Instant::now();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| check(&bytes)));
        let took = started.elapsed();
        if took > slowest.get().0 {
            slowest.set((took, bytes.len()));
        }
        prop_assert!(
            outcome.is_ok(),
            "{}: panic on input {:?}",
            target.name,
            String::from_utf8_lossy(&bytes)
        );
        prop_assert!(
            took < limit,
            "{}: {:?} (over {:?}) on an input of {} bytes: {:?}",
            target.name,
            took,
            limit,
            bytes.len(),
            String::from_utf8_lossy(&bytes[..bytes.len().min(2000)])
        );
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
    let (took, size) = slowest.get();
    eprintln!(
        "fuzz {}: {count} inputs; slowest {:.1} ms ({size} bytes)",
        target.name,
        took.as_secs_f64() * 1000.0
    );
    count
}

/// An error's text (with its sources) must name the file.
fn assert_names(error: &dyn std::error::Error, file: &Path) {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    let name = file.file_name().unwrap().to_string_lossy();
    assert!(
        text.contains(name.as_ref()),
        "error without the file name `{name}`: {text}"
    );
}

#[test]
fn eval_set_loaders() {
    for (name, file, seeds) in [
        ("evals.json", "evals.json", &[EVALS_JSON, EVALS_FLAT][..]),
        ("evals.jsonl", "evals.jsonl", &[EVALS_JSONL][..]),
        ("evals.yaml", "evals.yaml", &[EVALS_YAML][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("evals/files")).unwrap();
        std::fs::write(dir.path().join("evals/files/a.txt"), "a").unwrap();
        let path = dir.path().join(file);
        let seeds: &'static [&'static str] = Box::leak(seeds.to_vec().into_boxed_slice());
        fuzz(&Target { name, seeds }, |bytes| {
            std::fs::write(&path, bytes).unwrap();
            if let Err(error) = skill_lift::features::evalset::load_eval_set(&path, dir.path()) {
                assert_names(&error, &path);
            }
        });
    }
}

#[test]
fn skill_frontmatter_loader() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("pirate-greeting");
    std::fs::create_dir_all(&skill).unwrap();
    let path = skill.join("SKILL.md");
    fuzz(
        &Target {
            name: "SKILL.md",
            seeds: &[SKILL_MD],
        },
        |bytes| {
            std::fs::write(&path, bytes).unwrap();
            if let Err(error) = skill_lift::features::asset::load_skill(&skill) {
                assert_names(&error, &path);
            }
        },
    );
}

#[test]
fn runner_profile_loader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzzed.toml");
    fuzz(
        &Target {
            name: "runner TOML",
            seeds: &[PROFILE_TOML, PROFILE_CLI],
        },
        |bytes| {
            std::fs::write(&path, bytes).unwrap();
            if let Err(error) = skill_lift::features::runner::profile::load_profile(&path) {
                assert_names(&error, &path);
            }
        },
    );
}

#[test]
fn run_folder_loaders() {
    let recorded = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recorded-run");
    let manifest: &'static str = Box::leak(
        std::fs::read_to_string(recorded.join("manifest.json"))
            .unwrap()
            .into_boxed_str(),
    );
    let trials: &'static str = Box::leak(
        std::fs::read_to_string(recorded.join("trials.jsonl"))
            .unwrap()
            .lines()
            .take(6)
            .collect::<Vec<_>>()
            .join("\n")
            .into_boxed_str(),
    );
    let dir = tempfile::tempdir().unwrap();
    let trials_path = dir.path().join("trials.jsonl");
    let seeds: &'static [&'static str] = Box::leak(vec![trials].into_boxed_slice());
    fuzz(
        &Target {
            name: "trials.jsonl",
            seeds,
        },
        |bytes| {
            std::fs::write(&trials_path, bytes).unwrap();
            if let Err(error) = skill_lift::record::read_trials(&trials_path) {
                assert_names(&error, &trials_path);
            }
        },
    );
    let manifest_path = dir.path().join("manifest.json");
    let seeds: &'static [&'static str] = Box::leak(vec![manifest].into_boxed_slice());
    fuzz(
        &Target {
            name: "manifest.json",
            seeds,
        },
        |bytes| {
            std::fs::write(&manifest_path, bytes).unwrap();
            if let Err(error) = skill_lift::record::read_manifest(dir.path()) {
                assert_names(&error, &manifest_path);
            }
        },
    );
}

#[test]
fn hosts_loader() {
    let dir = tempfile::tempdir().unwrap();
    let path = skill_lift::features::registry::hosts::hosts_file(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    fuzz(
        &Target {
            name: "hosts.json",
            seeds: &[HOSTS_JSON],
        },
        |bytes| {
            std::fs::write(&path, bytes).unwrap();
            if let Err(error) = skill_lift::features::registry::hosts::load_hosts(dir.path()) {
                assert_names(&error, &path);
            }
        },
    );
}

#[test]
fn agent_output_parsers() {
    for (format, seed, name) in [
        (OutputFormat::ClaudeStreamJson, CLAUDE, "claude stream"),
        (OutputFormat::CodexJson, CODEX, "codex stream"),
        (OutputFormat::GeminiStreamJson, GEMINI, "gemini stream"),
        (OutputFormat::OpencodeJson, OPENCODE, "opencode stream"),
        (OutputFormat::CursorStreamJson, CURSOR, "cursor stream"),
        (OutputFormat::GooseStreamJson, GOOSE, "goose stream"),
        (OutputFormat::Text, CLAUDE, "text"),
    ] {
        let seeds: &'static [&'static str] = Box::leak(vec![seed].into_boxed_slice());
        fuzz(&Target { name, seeds }, |bytes| {
            let text = String::from_utf8_lossy(bytes);
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            for line in &lines {
                format.is_final_event(line);
            }
            let trajectory = format.parse(&lines);
            // The parsed trajectory must serialize (it is written as a transcript).
            serde_json::to_vec(&trajectory).unwrap();
        });
    }
}

const CLAUDE_SESSION: &str = r#"{"type":"summary","summary":"Notes","leafUuid":"u9"}
{"parentUuid":null,"cwd":"/home/dev/app","sessionId":"s-1","type":"user","message":{"role":"user","content":"Draft the notes"},"uuid":"u1","timestamp":"2026-03-02T10:00:00.000Z"}
{"parentUuid":"u1","cwd":"/home/dev/app","sessionId":"s-1","type":"assistant","message":{"id":"msg_1","model":"m","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"notes"}}],"usage":{"input_tokens":10,"output_tokens":20}},"uuid":"u2","timestamp":"2026-03-02T10:00:02.000Z"}
{"parentUuid":"u2","cwd":"/home/dev/app","sessionId":"s-1","type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"uuid":"u3","timestamp":"2026-03-02T10:00:03.000Z"}
{"parentUuid":"u3","cwd":"/home/dev/app","sessionId":"s-1","type":"user","message":{"role":"user","content":"thanks"},"uuid":"u4","timestamp":"2026-03-02T10:01:00.000Z"}
"#;
const CODEX_ROLLOUT: &str = r#"{"timestamp":"2026-03-03T09:00:00.000Z","type":"session_meta","payload":{"id":"c-1","timestamp":"2026-03-03T09:00:00.000Z","cwd":"/home/dev/app"}}
{"timestamp":"2026-03-03T09:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the build"}]}}
{"timestamp":"2026-03-03T09:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cat SKILL.md\"]}","call_id":"call_1"}}
{"timestamp":"2026-03-03T09:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"x\"}"}}
{"timestamp":"2026-03-03T09:00:04.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"output_tokens":2}}}}
"#;
const GEMINI_CHAT: &str = r#"{"sessionId": "g-1", "projectHash": "9f2d", "startTime": "2026-03-04T08:00:00.000Z",
 "messages": [
  {"id": "m1", "timestamp": "2026-03-04T08:00:00.000Z", "type": "user", "content": "Summarise sales.csv"},
  {"id": "m2", "timestamp": "2026-03-04T08:00:04.000Z", "type": "gemini", "content": "Done.", "model": "m",
   "tokens": {"input": 9, "output": 4, "total": 13},
   "toolCalls": [{"id": "c1", "name": "activate_skill", "args": {"name": "csv"}, "status": "success"}]},
  {"id": "m3", "timestamp": "2026-03-04T08:01:00.000Z", "type": "user", "content": [{"text": "thanks"}]}]}"#;

/// The session-history readers (`golden mine`, `usage`, `shadow`): whatever one session file
/// holds, reading the history succeeds (a bad line or file is a warning in the report).
#[test]
fn history_readers() {
    use skill_lift::features::history::{HistoryHost, HistoryRoots, read_history};
    for (host, relative, seed, name) in [
        (
            HistoryHost::ClaudeCode,
            ".claude/projects/-home-dev-app/s-1.jsonl",
            CLAUDE_SESSION,
            "claude history",
        ),
        (
            HistoryHost::Codex,
            ".codex/sessions/2026/03/03/rollout-2026-03-03T09-00-00-c-1.jsonl",
            CODEX_ROLLOUT,
            "codex history",
        ),
        (
            HistoryHost::Gemini,
            ".gemini/tmp/9f2d/chats/session-2026-03-04T08-00-g-1.json",
            GEMINI_CHAT,
            "gemini history",
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let roots = HistoryRoots::StandIn(home.path().to_path_buf());
        let seeds: &'static [&'static str] = Box::leak(vec![seed].into_boxed_slice());
        fuzz(&Target { name, seeds }, |bytes| {
            std::fs::write(&path, bytes).unwrap();
            if let Err(error) = read_history(host, &roots, None) {
                panic!("{name}: one bad session file stopped the reading: {error}");
            }
        });
    }
}

const VALLY_EVAL: &str = "scenarios:\n  - name: totals-by-region\n    prompt: \"Summarise data/sales.csv by region.\"\n    setup:\n      files:\n        - path: notes.txt\n          content: \"inline text\"\n    assertions:\n      - type: output_contains\n        value: \"North\"\n      - output_matches: \"\\\\d+\"\n      - file_exists: report.md\n    rubric:\n      - \"Names the region with the highest total\"\n    expect_activation: true\n";
const HARBOR_TASK: &str = "version = \"1.0\"\n[metadata]\ndifficulty = \"easy\"\ncategory = \"data\"\n[verifier]\ntimeout_sec = 120.0\n[agent]\ntimeout_sec = 600.0\n[environment]\ncpus = 1\nmemory_mb = 2048\n";

/// The Vally (`eval.yaml`) and Harbor (task folder) loaders.
#[test]
fn vally_and_harbor_loaders() {
    let dir = tempfile::tempdir().unwrap();
    let vally = dir.path().join("eval.yaml");
    fuzz(
        &Target {
            name: "vally eval.yaml",
            seeds: &[VALLY_EVAL],
        },
        |bytes| {
            std::fs::write(&vally, bytes).unwrap();
            if let Err(error) = skill_lift::features::evalset::load_eval_set(&vally, dir.path()) {
                assert_names(&error, &vally);
            }
        },
    );
    let task = dir.path().join("task-one");
    std::fs::create_dir_all(task.join("environment")).unwrap();
    std::fs::create_dir_all(task.join("tests")).unwrap();
    std::fs::write(
        task.join("instruction.md"),
        "Sum the numbers in data.csv.\n",
    )
    .unwrap();
    std::fs::write(
        task.join("environment/Dockerfile"),
        "FROM ubuntu:24.04\nWORKDIR /app\n",
    )
    .unwrap();
    std::fs::write(task.join("environment/data.csv"), "1\n2\n").unwrap();
    std::fs::write(
        task.join("tests/test.sh"),
        "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n",
    )
    .unwrap();
    let toml = task.join("task.toml");
    fuzz(
        &Target {
            name: "harbor task.toml",
            seeds: &[HARBOR_TASK],
        },
        |bytes| {
            std::fs::write(&toml, bytes).unwrap();
            if let Err(error) =
                skill_lift::features::evalset::harbor::load_harbor(&task, dir.path())
            {
                assert_names(&error, &toml);
            }
        },
    );
    std::fs::write(&toml, HARBOR_TASK).unwrap();
    let dockerfile = task.join("environment/Dockerfile");
    fuzz(
        &Target {
            name: "harbor Dockerfile",
            seeds: &["FROM ubuntu:24.04\nWORKDIR /app\nCOPY . /app\n"],
        },
        |bytes| {
            std::fs::write(&dockerfile, bytes).unwrap();
            if let Err(error) =
                skill_lift::features::evalset::harbor::load_harbor(&task, dir.path())
            {
                assert_names(&error, &dockerfile);
            }
        },
    );
}
