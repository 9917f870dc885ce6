//! Property-based fuzzing (proptest) of every loader and agent output parser: `evals.json` /
//! `.jsonl` / `.yaml`, `SKILL.md` frontmatter, runner profile TOML, `trials.jsonl`,
//! `manifest.json`, `hosts.json`, and the six agent stream parsers.
//!
//! Inputs are arbitrary bytes and structure-aware mutations of valid fixtures written here (cut,
//! duplicate, insert JSON/YAML/TOML punctuation, flip bytes, truncate), so they stay valid with
//! the loaders as those change. Each input must load or fail with an error naming the file —
//! never panic — and take under 10 s.
//!
//! `SKILL_LIFT_FUZZ_CASES` sets the cases per target (default 200, a few seconds in
//! `cargo test`); `scripts/fuzz` runs a long campaign and reports the count and time.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use skill_lift::runner::parsers::OutputFormat;

const HANG_LIMIT: Duration = Duration::from_secs(10);

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
                        let text = match byte % 5 {
                            0 => "1e309".to_string(),
                            1 => "-99999999999999999999999".to_string(),
                            2 => "[".repeat(len * 8),
                            3 => "\u{202e}é\u{0}".repeat(len),
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
            bytes
        });
    prop_oneof![
        4 => mutate,
        1 => prop::collection::vec(any::<u8>(), 0..512),
    ]
}

/// Run `check` on `cases()` inputs of `target`; returns how many ran.
fn fuzz(target: &Target, check: impl Fn(&[u8])) -> u32 {
    let count = cases();
    let mut runner = TestRunner::new(Config {
        cases: count,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&mutated(target.seeds), |bytes| {
        let started = Instant::now();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| check(&bytes)));
        prop_assert!(
            outcome.is_ok(),
            "{}: panic on input {:?}",
            target.name,
            String::from_utf8_lossy(&bytes)
        );
        prop_assert!(
            started.elapsed() < HANG_LIMIT,
            "{}: {:?} on input {:?}",
            target.name,
            started.elapsed(),
            String::from_utf8_lossy(&bytes)
        );
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
    eprintln!("fuzz {}: {count} inputs", target.name);
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
            if let Err(error) = skill_lift::evalset::load_eval_set(&path, dir.path()) {
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
            if let Err(error) = skill_lift::asset::load_skill(&skill) {
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
            if let Err(error) = skill_lift::runner::profile::load_profile(&path) {
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
    let path = skill_lift::registry::hosts::hosts_file(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    fuzz(
        &Target {
            name: "hosts.json",
            seeds: &[HOSTS_JSON],
        },
        |bytes| {
            std::fs::write(&path, bytes).unwrap();
            if let Err(error) = skill_lift::registry::hosts::load_hosts(dir.path()) {
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
