//! Integration tests of the agent CLI runners: the real `skill-lift` binary driving
//! (a) the fake agent (`tests/fixtures/fake_agent.py`) through the `command` kind, always, and
//! (b) the real agent CLIs installed by `scripts/install-agent-clis` against scripted mock model
//! servers on loopback. (b) is skipped with a printed message when the CLIs are not installed,
//! unless `SKILL_LIFT_REQUIRE_AGENT_CLIS` is set (CI sets it), in which case it fails.
//!
//! A separate test binary from `tests/cli.rs` so the agent-CLI suite can be run alone
//! (`cargo test --test agent_clis`).
#![allow(clippy::disallowed_methods)]
// tests write their fixtures directly, not through src/disk/

// Test diagnostics go to the test harness, not through skill-lift's terminal writer.
#![allow(clippy::disallowed_macros)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use support::cli::{binary, files_under, pirate_evals, stderr, unscoreable_reasons};
use support::mock_anthropic::{
    AnthropicBehaviour, AnthropicMock, CACHE_READ_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS,
};
use support::mock_chat_stream::{ChatBehaviour, ChatStreamMock};
use support::mock_fault::{Fault, FaultMock};
use support::mock_gemini::{GeminiBehaviour, GeminiMock};
use support::mock_responses::{ResponsesBehaviour, ResponsesMock};

const TARGET: &str = "pirate-greeting";
const WITH_ANSWER: &str = "Aye! Here is the answer.";
const WITHOUT_ANSWER: &str = "Here is the answer.";
/// A credential value that must never appear in any recorded file.
const SECRET: &str = "sk-skill-lift-test-secret-4f1d";

/// Where `scripts/install-agent-clis` puts the CLIs.
fn agent_clis_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SKILL_LIFT_AGENT_CLIS_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    home.join(".cache/skill-lift/agent-clis")
}

/// The installed CLI `name`, or `None` (after printing why) when the test must be skipped.
fn installed_cli(name: &str) -> Option<PathBuf> {
    let path = agent_clis_dir().join("node_modules/.bin").join(name);
    if path.exists() {
        return Some(path);
    }
    let message = format!(
        "agent CLI `{name}` not found at {}; run scripts/install-agent-clis",
        path.display()
    );
    if std::env::var_os("SKILL_LIFT_REQUIRE_AGENT_CLIS").is_some() {
        panic!("{message} (SKILL_LIFT_REQUIRE_AGENT_CLIS is set)");
    }
    eprintln!("SKIPPED: {message}");
    None
}

/// Whether `program` is on PATH; otherwise skip (or fail when CLIs are required) like
/// [`installed_cli`].
fn on_path(program: &str, why: &str) -> bool {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false);
    if found {
        return true;
    }
    let message = format!("`{program}` is not on PATH ({why})");
    if std::env::var_os("SKILL_LIFT_REQUIRE_AGENT_CLIS").is_some() {
        panic!("{message} (SKILL_LIFT_REQUIRE_AGENT_CLIS is set)");
    }
    eprintln!("SKIPPED: {message}");
    false
}

use support::cli::Project as Fixture;

impl Fixture {
    fn new(cases: usize) -> Self {
        let fixture = Self::with_skill(
            TARGET,
            &serde_json::to_string_pretty(&pirate_evals(cases)).unwrap(),
        );
        // The "real" HOME of skill-lift, with the same skill planted at user level for every
        // agent: isolation must keep it out of both arms.
        for user_dir in [
            ".claude/skills",
            ".agents/skills",
            ".codex/skills",
            ".gemini/skills",
            ".config/opencode/skills",
            ".copilot/skills",
            ".qwen/skills",
        ] {
            fixture.write(
                &format!("real-home/{user_dir}/{TARGET}/SKILL.md"),
                &format!("---\nname: {TARGET}\ndescription: Use when greeting users in pirate style.\n---\nBegin every answer with Aye! SKILL-MARKER\n"),
            );
        }
        std::fs::create_dir_all(fixture.path("trials")).unwrap();
        fixture
    }

    /// `skill-lift run` with the profile `runners/<runner>.toml`, HOME pointing at the planted
    /// real home, trials under `trials/`.
    fn run(&self, runner: &str, run_id: &str, extra_env: &[(&str, &str)]) -> Output {
        self.run_with(runner, run_id, extra_env, &[])
    }

    /// [`Fixture::run`] with more arguments.
    fn run_with(
        &self,
        runner: &str,
        run_id: &str,
        extra_env: &[(&str, &str)],
        extra_args: &[&str],
    ) -> Output {
        let real_home = self.path("real-home");
        let mut command = binary();
        command
            .current_dir(self.dir.path())
            .env("HOME", &real_home)
            .env("CLAUDE_CONFIG_DIR", real_home.join(".claude"))
            .env("CODEX_HOME", real_home.join(".codex"))
            .env("XDG_CONFIG_HOME", real_home.join(".config"))
            .env("COPILOT_HOME", real_home.join(".copilot"))
            .env("QWEN_HOME", real_home.join(".qwen"))
            .arg("run")
            .arg(self.path(&format!("skill/{TARGET}")))
            .args([
                "--runner", runner, "--out", "results", "-k", "1", "--run-id", run_id,
            ])
            .arg("--workspace-root")
            .arg(self.path("trials"))
            .args(extra_args);
        for (name, value) in extra_env {
            command.env(name, value);
        }
        command.output().unwrap()
    }
}

fn summary(run_dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap()).unwrap()
}

/// Every transcript of a run as (arm, trajectory, grade).
fn transcripts(run_dir: &Path) -> Vec<(String, Value, Value)> {
    support::transcripts::all(run_dir)
        .into_iter()
        .map(|document| {
            (
                document["arm"].as_str().unwrap().to_string(),
                document["trajectory"].clone(),
                document["grade"].clone(),
            )
        })
        .collect()
}

/// No process is left whose working folder lies under `root`.
fn assert_no_processes_under(root: &Path) {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut survivors = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd"))
            && cwd.starts_with(&root)
        {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            if !zombie {
                survivors.push((pid, cwd));
            }
        }
    }
    assert!(
        survivors.is_empty(),
        "processes left running: {survivors:?}"
    );
}

/// No file of the run contains the credential value.
fn assert_secret_never_recorded(run_dir: &Path) {
    for entry in files_under(run_dir) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(SECRET),
            "{} contains the credential value",
            entry.display()
        );
    }
}

#[test]
fn command_runner_with_fake_agent_measures_the_designed_lift() {
    let fixture = Fixture::new(3);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_agent.py");
    fixture.write(
        "runners/fake.toml",
        &format!(
            "kind = \"command\"\nmodel = \"fake-model\"\ncommand = [\"python3\", \"{}\", \"skill-aware\", \"{{skills_dir}}\", \"{TARGET}\"]\noutput_format = \"claude-stream-json\"\nskills_dir = \".claude/skills\"\ntimeout_s = 30\nconcurrency = 2\n",
            script.display()
        ),
    );
    let output = fixture.run("fake", "fake", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("fake");
    let summary = summary(&run_dir);
    assert_eq!(summary["arms"]["with_skill"]["pass_rate"], 1.0, "{summary}");
    assert_eq!(summary["arms"]["without_skill"]["pass_rate"], 0.0);
    assert_eq!(summary["lift"]["estimate"], 1.0);
    let transcripts = transcripts(&run_dir);
    assert_eq!(transcripts.len(), 6);
    for (arm, trajectory, _) in &transcripts {
        let activations = trajectory["skill_activations"].as_array().unwrap();
        // The decoy read is recorded in both arms, as a non-target file read.
        assert!(activations.iter().any(|a| a["skill"] == "api-debug"
            && a["evidence"] == "file_read"
            && a["target"] == false));
        let target_hits: Vec<_> = activations
            .iter()
            .filter(|a| a["skill"] == TARGET)
            .collect();
        if arm == "with_skill" {
            assert_eq!(target_hits.len(), 1);
            assert_eq!(target_hits[0]["ok"], true);
            assert_eq!(target_hits[0]["target"], true);
        } else {
            assert!(target_hits.is_empty());
        }
        assert_eq!(trajectory["process"]["class"], "ok");
    }
    assert_no_processes_under(&fixture.path("trials"));
}

#[test]
fn command_runner_timeouts_and_incomplete_streams_are_unscoreable() {
    let fixture = Fixture::new(1);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_agent.py");
    for (name, mode, arg, timeout) in [
        ("hang", "ignore-term", "pids", 1),
        ("cut", "no-final", "x", 30),
        ("orphan", "grandchild", "pids", 30),
    ] {
        // The hanging agent ignores SIGTERM from its first instruction: `sh` sets the ignored
        // disposition, which `exec` keeps, so a slow Python start-up on a loaded machine cannot
        // end it by SIGTERM before its own handler is in place (the test is about SIGKILL).
        let launcher = if name == "hang" {
            "\"sh\", \"-c\", \"trap '' TERM; exec python3 \\\"$0\\\" \\\"$@\\\"\", "
        } else {
            "\"python3\", "
        };
        fixture.write(
            &format!("runners/{name}.toml"),
            &format!(
                "kind = \"command\"\nmodel = \"fake-model\"\ncommand = [{launcher}\"{}\", \"{mode}\", \"{arg}\"]\noutput_format = \"claude-stream-json\"\ntimeout_s = {timeout}\ngrace_s = 0.5\nconcurrency = 2\n",
                script.display()
            ),
        );
        let output = fixture.run(name, name, &[]);
        let run_dir = fixture.run_dir(name);
        let transcripts = transcripts(&run_dir);
        assert_eq!(transcripts.len(), 2, "{name}: {}", stderr(&output));
        for (_, trajectory, grade) in &transcripts {
            match name {
                "hang" => {
                    assert_eq!(grade["outcome"], "unscoreable");
                    assert_eq!(trajectory["process"]["class"], "timeout");
                    assert_eq!(trajectory["process"]["signal"], 9);
                }
                "cut" => {
                    assert_eq!(grade["outcome"], "unscoreable");
                    assert_eq!(trajectory["status"], "incomplete");
                    assert!(
                        trajectory["reason"]
                            .as_str()
                            .unwrap()
                            .contains("without a `result`")
                    );
                }
                _ => {
                    // Completed stream ("done" answer fails the check); the grandchild is gone.
                    assert_eq!(grade["outcome"], "fail");
                    assert_eq!(trajectory["process"]["class"], "ok");
                }
            }
        }
    }
    assert_no_processes_under(&fixture.path("trials"));
}

#[test]
fn claude_code_paired_run_against_anthropic_mock() {
    let Some(claude) = installed_cli("claude") else {
        return;
    };
    let mock = AnthropicMock::start(AnthropicBehaviour {
        target: TARGET.to_string(),
        marker: "SKILL-MARKER".to_string(),
        with_answer: WITH_ANSWER.to_string(),
        without_answer: WITHOUT_ANSWER.to_string(),
        script_command: Some(format!("sh .claude/skills/{TARGET}/scripts/greet.sh")),
        skill_call_name: None,
    });
    let fixture = Fixture::new(3);
    fixture.write(
        &format!("skill/{TARGET}/scripts/greet.sh"),
        "echo GREETING-SCRIPT-RAN\n",
    );
    fixture.write(
        "runners/claude.toml",
        &format!(
            "kind = \"claude-code\"\nprogram = \"{}\"\nbase_url = \"{}\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"ANTHROPIC_API_KEY\"\nextra_args = [\"--allowedTools\", \"Bash(sh .claude/skills/*)\"]\ntimeout_s = 90\nconcurrency = 2\n",
            claude.display(),
            mock.base_url()
        ),
    );
    let output = fixture.run("claude", "claude", &[("ANTHROPIC_API_KEY", SECRET)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("claude");
    let summary = summary(&run_dir);
    assert_eq!(summary["arms"]["with_skill"]["pass_rate"], 1.0, "{summary}");
    assert_eq!(
        summary["arms"]["without_skill"]["pass_rate"], 0.0,
        "{summary}"
    );
    assert_eq!(summary["lift"]["estimate"], 1.0);
    let transcripts = transcripts(&run_dir);
    assert_eq!(transcripts.len(), 6);
    for (arm, trajectory, grade) in &transcripts {
        assert_eq!(trajectory["status"], "complete", "{trajectory}");
        assert_eq!(trajectory["process"]["class"], "ok");
        assert_eq!(trajectory["process"]["exit_code"], 0);
        assert_eq!(trajectory["observed_model"], "claude-sonnet-4-5");
        // The agent's own catalogue: decoys in both arms, the target only with the skill.
        let catalogue: Vec<&str> = trajectory["skill_catalogue"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(catalogue.contains(&"api-debug"), "{catalogue:?}");
        assert_eq!(
            catalogue.contains(&TARGET),
            arm == "with_skill",
            "{catalogue:?}"
        );
        assert!(
            trajectory["session_id"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        );
        let requests: u64 = if arm == "with_skill" { 3 } else { 1 };
        let usage = &trajectory["usage"];
        assert_eq!(
            usage["input_tokens"],
            requests * (INPUT_TOKENS + CACHE_READ_TOKENS),
            "{usage}"
        );
        assert_eq!(usage["cached_tokens"], requests * CACHE_READ_TOKENS);
        assert_eq!(usage["output_tokens"], requests * OUTPUT_TOKENS);
        assert!(usage["cost_usd"].as_f64().is_some());
        let target_hits: Vec<&Value> = trajectory["skill_activations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["skill"] == TARGET)
            .collect();
        if arm == "with_skill" {
            assert_eq!(grade["outcome"], "pass");
            assert_eq!(trajectory["final_answer"], WITH_ANSWER);
            assert_eq!(target_hits.len(), 1, "{trajectory}");
            assert_eq!(target_hits[0]["evidence"], "skill_tool");
            assert_eq!(target_hits[0]["ok"], true);
            assert_eq!(target_hits[0]["target"], true);
            // The skill script ran through Claude Code's Bash tool and is attributed to it.
            let scripts = trajectory["script_runs"].as_array().unwrap();
            assert_eq!(scripts.len(), 1, "{trajectory}");
            assert_eq!(scripts[0]["skill"], TARGET);
            assert_eq!(scripts[0]["script"], "scripts/greet.sh");
            assert_eq!(scripts[0]["ok"], true);
            let bash = trajectory["tool_calls"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == "Bash")
                .unwrap();
            assert!(
                bash["output"]
                    .as_str()
                    .unwrap()
                    .contains("GREETING-SCRIPT-RAN"),
                "{bash}"
            );
            assert_eq!(trajectory["commands"].as_array().unwrap().len(), 1);
            assert!(trajectory["messages"].as_array().unwrap().iter().any(|m| {
                m["content"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("Base directory for this skill:")
            }));
            // The skill metrics read the same trajectory: activated through the Skill tool,
            // before its script ran, nothing failed (recovery not applicable, not 1.0).
            let execution = &grade["metrics"]["skill_execution"]["sub_scores"];
            assert_eq!(execution["activation"]["score"], 1.0, "{grade}");
            assert_eq!(execution["workflow_order"]["score"], 1.0, "{grade}");
            assert!(execution["error_recovery"]["score"].is_null(), "{grade}");
            assert_eq!(grade["metrics"]["security"]["score"], 1.0, "{grade}");
        } else {
            // The planted user-level skill in the real HOME never reached the baseline.
            assert_eq!(grade["outcome"], "fail");
            assert_eq!(trajectory["final_answer"], WITHOUT_ANSWER);
            assert!(target_hits.is_empty(), "{trajectory}");
            let execution = &grade["metrics"]["skill_execution"]["sub_scores"];
            assert_eq!(execution["activation"]["score"], 0.0, "{grade}");
        }
    }
    let skill_execution = summary["metric_lifts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "skill_execution")
        .unwrap();
    assert!(
        skill_execution["estimate"].as_f64().unwrap() > 0.5,
        "{skill_execution}"
    );
    let keys = mock.state.api_keys.lock().unwrap().clone();
    assert!(!keys.is_empty() && keys.iter().all(|k| k == SECRET));
    assert_secret_never_recorded(&run_dir);
    assert_no_processes_under(&fixture.path("trials"));
}

#[test]
fn codex_paired_run_against_responses_mock() {
    let Some(codex) = installed_cli("codex") else {
        return;
    };
    let mock = ResponsesMock::start(ResponsesBehaviour {
        target: TARGET.to_string(),
        skills_dir: ".agents/skills".to_string(),
        marker: "SKILL-MARKER".to_string(),
        with_answer: WITH_ANSWER.to_string(),
        without_answer: WITHOUT_ANSWER.to_string(),
    });
    let fixture = Fixture::new(3);
    fixture.write(
        "runners/codex.toml",
        &format!(
            "kind = \"codex\"\nprogram = \"{}\"\nbase_url = \"{}\"\nmodel = \"gpt-5-codex\"\napi_key_env = \"MOCK_OPENAI_KEY\"\ntimeout_s = 90\nconcurrency = 2\n",
            codex.display(),
            mock.base_url()
        ),
    );
    let output = fixture.run("codex", "codex", &[("MOCK_OPENAI_KEY", SECRET)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("codex");
    let summary = summary(&run_dir);
    assert_eq!(summary["arms"]["with_skill"]["pass_rate"], 1.0, "{summary}");
    assert_eq!(
        summary["arms"]["without_skill"]["pass_rate"], 0.0,
        "{summary}"
    );
    assert_eq!(summary["lift"]["estimate"], 1.0);
    let transcripts = transcripts(&run_dir);
    assert_eq!(transcripts.len(), 6);
    for (arm, trajectory, grade) in &transcripts {
        assert_eq!(trajectory["status"], "complete", "{trajectory}");
        assert_eq!(trajectory["process"]["class"], "ok");
        assert!(
            trajectory["session_id"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        );
        // Codex names no model in its stream: recorded as unknown, not guessed.
        assert_eq!(trajectory["observed_model"], Value::Null);
        let requests: u64 = if arm == "with_skill" { 2 } else { 1 };
        let usage = &trajectory["usage"];
        assert_eq!(
            usage["input_tokens"],
            requests * support::mock_responses::INPUT_TOKENS,
            "{usage}"
        );
        assert_eq!(
            usage["cached_tokens"],
            requests * support::mock_responses::CACHED_TOKENS
        );
        assert_eq!(
            usage["output_tokens"],
            requests * support::mock_responses::OUTPUT_TOKENS
        );
        let target_hits: Vec<&Value> = trajectory["skill_activations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["skill"] == TARGET)
            .collect();
        if arm == "with_skill" {
            assert_eq!(grade["outcome"], "pass");
            assert_eq!(trajectory["final_answer"], WITH_ANSWER);
            assert_eq!(target_hits.len(), 1, "{trajectory}");
            assert_eq!(target_hits[0]["evidence"], "shell_command");
            assert_eq!(target_hits[0]["ok"], true);
            assert_eq!(target_hits[0]["target"], true);
            let commands = trajectory["commands"].as_array().unwrap();
            assert_eq!(commands.len(), 1);
            assert_eq!(commands[0]["exit_code"], 0);
            assert!(
                commands[0]["command"]
                    .as_str()
                    .unwrap()
                    .contains("SKILL.md")
            );
        } else {
            assert_eq!(grade["outcome"], "fail");
            assert_eq!(trajectory["final_answer"], WITHOUT_ANSWER);
            assert!(target_hits.is_empty(), "{trajectory}");
        }
    }
    assert_secret_never_recorded(&run_dir);
    assert_no_processes_under(&fixture.path("trials"));
}

#[test]
fn opencode_paired_run_against_streaming_chat_mock() {
    let Some(opencode) = installed_cli("opencode") else {
        return;
    };
    if !on_path(
        "rg",
        "OpenCode's skill tool lists skill files with ripgrep and fails without it",
    ) {
        return;
    }
    let mock = ChatStreamMock::start(ChatBehaviour {
        target: TARGET.to_string(),
        marker: "SKILL-MARKER".to_string(),
        with_answer: WITH_ANSWER.to_string(),
        without_answer: WITHOUT_ANSWER.to_string(),
        skill_argument: "name".to_string(),
        call_name: None,
    });
    let fixture = Fixture::new(2);
    fixture.write(
        "runners/opencode.toml",
        &format!(
            "kind = \"opencode\"\nprogram = \"{}\"\nbase_url = \"{}\"\nmodel = \"m1\"\napi_key_env = \"MOCK_CHAT_KEY\"\ntimeout_s = 120\nconcurrency = 2\n",
            opencode.display(),
            mock.base_url()
        ),
    );
    let output = fixture.run("opencode", "opencode", &[("MOCK_CHAT_KEY", SECRET)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("opencode");
    let summary = summary(&run_dir);
    let transcripts = transcripts(&run_dir);
    assert_eq!(
        summary["arms"]["with_skill"]["pass_rate"], 1.0,
        "{summary} {transcripts:?}"
    );
    assert_eq!(
        summary["arms"]["without_skill"]["pass_rate"], 0.0,
        "{summary}"
    );
    assert_eq!(summary["lift"]["estimate"], 1.0);
    assert_eq!(transcripts.len(), 4);
    for (arm, trajectory, grade) in &transcripts {
        assert_eq!(trajectory["status"], "complete", "{trajectory}");
        assert_eq!(trajectory["process"]["class"], "ok");
        assert!(
            trajectory["session_id"]
                .as_str()
                .is_some_and(|s| s.starts_with("ses_"))
        );
        let steps: u64 = if arm == "with_skill" { 2 } else { 1 };
        let usage = &trajectory["usage"];
        // OpenCode reports input without cached tokens; skill-lift's input includes them.
        assert_eq!(
            usage["input_tokens"],
            steps * support::mock_chat_stream::PROMPT_TOKENS,
            "{usage}"
        );
        assert_eq!(
            usage["cached_tokens"],
            steps * support::mock_chat_stream::CACHED_TOKENS
        );
        assert_eq!(
            usage["output_tokens"],
            steps * support::mock_chat_stream::COMPLETION_TOKENS
        );
        let target_hits: Vec<&Value> = trajectory["skill_activations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["skill"] == TARGET)
            .collect();
        if arm == "with_skill" {
            assert_eq!(grade["outcome"], "pass");
            assert_eq!(trajectory["final_answer"], WITH_ANSWER);
            assert_eq!(target_hits.len(), 1, "{trajectory}");
            assert_eq!(target_hits[0]["evidence"], "skill_tool");
            assert_eq!(target_hits[0]["ok"], true, "{trajectory}");
            assert_eq!(target_hits[0]["target"], true);
        } else {
            assert_eq!(grade["outcome"], "fail");
            assert_eq!(trajectory["final_answer"], WITHOUT_ANSWER);
            assert!(target_hits.is_empty(), "{trajectory}");
        }
    }
    assert_secret_never_recorded(&run_dir);
    assert_no_processes_under(&fixture.path("trials"));
}

#[test]
fn gemini_paired_run_against_gemini_api_mock() {
    let Some(gemini) = installed_cli("gemini") else {
        return;
    };
    let mock = GeminiMock::start(GeminiBehaviour {
        target: TARGET.to_string(),
        marker: "SKILL-MARKER".to_string(),
        with_answer: WITH_ANSWER.to_string(),
        without_answer: WITHOUT_ANSWER.to_string(),
    });
    let fixture = Fixture::new(2);
    fixture.write(
        "runners/gemini.toml",
        &format!(
            "kind = \"gemini\"\nprogram = \"{}\"\nbase_url = \"{}\"\nmodel = \"gemini-2.5-pro\"\napi_key_env = \"GEMINI_API_KEY\"\ntimeout_s = 120\nconcurrency = 2\n",
            gemini.display(),
            mock.base_url()
        ),
    );
    let output = fixture.run("gemini", "gemini", &[("GEMINI_API_KEY", SECRET)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir("gemini");
    let summary = summary(&run_dir);
    let transcripts = transcripts(&run_dir);
    assert_eq!(
        summary["arms"]["with_skill"]["pass_rate"], 1.0,
        "{summary} {transcripts:?}"
    );
    assert_eq!(
        summary["arms"]["without_skill"]["pass_rate"], 0.0,
        "{summary}"
    );
    assert_eq!(summary["lift"]["estimate"], 1.0);
    assert_eq!(transcripts.len(), 4);
    for (arm, trajectory, grade) in &transcripts {
        assert_eq!(trajectory["status"], "complete", "{trajectory}");
        assert_eq!(trajectory["process"]["class"], "ok");
        assert_eq!(trajectory["observed_model"], "gemini-2.5-pro");
        let requests: u64 = if arm == "with_skill" { 2 } else { 1 };
        let usage = &trajectory["usage"];
        assert_eq!(
            usage["input_tokens"],
            requests * support::mock_gemini::PROMPT_TOKENS,
            "{usage}"
        );
        assert_eq!(
            usage["cached_tokens"],
            requests * support::mock_gemini::CACHED_TOKENS
        );
        assert_eq!(
            usage["output_tokens"],
            requests * support::mock_gemini::CANDIDATE_TOKENS
        );
        let target_hits: Vec<&Value> = trajectory["skill_activations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["skill"] == TARGET)
            .collect();
        if arm == "with_skill" {
            assert_eq!(grade["outcome"], "pass");
            assert_eq!(trajectory["final_answer"], WITH_ANSWER);
            assert_eq!(target_hits.len(), 1, "{trajectory}");
            assert_eq!(target_hits[0]["evidence"], "skill_tool");
            assert_eq!(target_hits[0]["ok"], true);
            assert_eq!(target_hits[0]["target"], true);
        } else {
            assert_eq!(grade["outcome"], "fail");
            assert_eq!(trajectory["final_answer"], WITHOUT_ANSWER);
            assert!(target_hits.is_empty(), "{trajectory}");
        }
    }
    assert_secret_never_recorded(&run_dir);
    assert_no_processes_under(&fixture.path("trials"));
}

/// The Claude Code silent failure: the `Skill` call fails (here: the model names a skill that
/// does not exist) while the run still ends `subtype: success` with exit 0. The call must read as
/// *not activated*, with the CLI's error kept as the reason.
#[test]
fn claude_code_failed_skill_call_is_not_an_activation() {
    let Some(claude) = installed_cli("claude") else {
        return;
    };
    let mock = AnthropicMock::start(AnthropicBehaviour {
        target: TARGET.to_string(),
        marker: "SKILL-MARKER".to_string(),
        with_answer: WITH_ANSWER.to_string(),
        without_answer: WITHOUT_ANSWER.to_string(),
        script_command: None,
        skill_call_name: Some("pirate-greting".to_string()),
    });
    let fixture = Fixture::new(1);
    fixture.write(
        "runners/claude.toml",
        &format!(
            "kind = \"claude-code\"\nprogram = \"{}\"\nbase_url = \"{}\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"ANTHROPIC_API_KEY\"\ntimeout_s = 90\n",
            claude.display(),
            mock.base_url()
        ),
    );
    let output = fixture.run("claude", "failed-call", &[("ANTHROPIC_API_KEY", SECRET)]);
    let run_dir = fixture.run_dir("failed-call");
    let transcripts = transcripts(&run_dir);
    assert_eq!(transcripts.len(), 2, "{}", stderr(&output));
    let (_, trajectory, grade) = transcripts
        .iter()
        .find(|(arm, _, _)| arm == "with_skill")
        .unwrap();
    assert_eq!(trajectory["process"]["exit_code"], 0, "{trajectory}");
    assert_eq!(trajectory["status"], "complete");
    let activations = trajectory["skill_activations"].as_array().unwrap();
    assert_eq!(activations.len(), 1, "{trajectory}");
    assert_eq!(activations[0]["skill"], "pirate-greting");
    assert_eq!(activations[0]["ok"], false, "{trajectory}");
    assert_eq!(activations[0]["target"], false);
    assert!(
        activations[0]["reason"]
            .as_str()
            .unwrap()
            .contains("the skill tool returned an error"),
        "{trajectory}"
    );
    assert_eq!(grade["outcome"], "fail");
    assert_no_processes_under(&fixture.path("trials"));
}

/// The behaviour of the streaming chat mock for the CLIs whose skill tool is `skill {skill}`
/// (Copilot CLI, Qwen Code); `call_name` makes the model name another skill than the target.
fn skill_argument_mock(call_name: Option<&str>) -> ChatStreamMock {
    ChatStreamMock::start(ChatBehaviour {
        target: TARGET.to_string(),
        marker: "SKILL-MARKER".to_string(),
        with_answer: WITH_ANSWER.to_string(),
        without_answer: WITHOUT_ANSWER.to_string(),
        skill_argument: "skill".to_string(),
        call_name: call_name.map(str::to_string),
    })
}

/// A paired run of `kind` (program `cli`) against the streaming chat mock: the designed lift
/// is measured exactly, the with-skill arm shows the target's activation through the skill
/// tool and the baseline never does (the target is planted in every personal skill folder of
/// the real HOME), usage is the mock's per-request counts times the requests, the mock saw the
/// key and no recorded file holds it, and no process is left.
fn paired_run_against_chat_mock(kind: &str, cli: &Path, reports_catalogue: bool) {
    let mock = skill_argument_mock(None);
    let fixture = Fixture::new(2);
    fixture.write(
        &format!("runners/{kind}.toml"),
        &format!(
            "kind = \"{kind}\"\nprogram = \"{}\"\nbase_url = \"{}\"\nmodel = \"m1\"\napi_key_env = \"MOCK_CHAT_KEY\"\ntimeout_s = 240\nconcurrency = 2\n",
            cli.display(),
            mock.base_url()
        ),
    );
    let output = fixture.run(kind, kind, &[("MOCK_CHAT_KEY", SECRET)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_dir = fixture.run_dir(kind);
    let summary = summary(&run_dir);
    let transcripts = transcripts(&run_dir);
    assert_eq!(
        summary["arms"]["with_skill"]["pass_rate"], 1.0,
        "{summary} {transcripts:?}"
    );
    assert_eq!(
        summary["arms"]["without_skill"]["pass_rate"], 0.0,
        "{summary}"
    );
    assert_eq!(summary["lift"]["estimate"], 1.0);
    assert_eq!(transcripts.len(), 4);
    for (arm, trajectory, grade) in &transcripts {
        assert_eq!(trajectory["status"], "complete", "{trajectory}");
        assert_eq!(trajectory["process"]["class"], "ok");
        assert_eq!(trajectory["process"]["exit_code"], 0);
        assert_eq!(trajectory["observed_model"], "m1");
        assert!(
            trajectory["session_id"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "{trajectory}"
        );
        if reports_catalogue {
            // The agent's own catalogue: the target only with the skill, never from the
            // planted personal folders.
            let catalogue: Vec<&str> = trajectory["skill_catalogue"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(
                catalogue.contains(&TARGET),
                arm == "with_skill",
                "{catalogue:?}"
            );
        }
        let requests: u64 = if arm == "with_skill" { 2 } else { 1 };
        let usage = &trajectory["usage"];
        assert_eq!(
            usage["input_tokens"],
            requests * support::mock_chat_stream::PROMPT_TOKENS,
            "{usage}"
        );
        assert_eq!(
            usage["cached_tokens"],
            requests * support::mock_chat_stream::CACHED_TOKENS
        );
        assert_eq!(
            usage["output_tokens"],
            requests * support::mock_chat_stream::COMPLETION_TOKENS
        );
        assert_eq!(usage["cost_usd"], Value::Null);
        let target_hits: Vec<&Value> = trajectory["skill_activations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["skill"] == TARGET)
            .collect();
        if arm == "with_skill" {
            assert_eq!(grade["outcome"], "pass");
            assert_eq!(trajectory["final_answer"], WITH_ANSWER);
            assert_eq!(target_hits.len(), 1, "{trajectory}");
            assert_eq!(target_hits[0]["evidence"], "skill_tool");
            assert_eq!(target_hits[0]["ok"], true, "{trajectory}");
            assert_eq!(target_hits[0]["target"], true);
        } else {
            assert_eq!(grade["outcome"], "fail");
            assert_eq!(trajectory["final_answer"], WITHOUT_ANSWER);
            assert!(target_hits.is_empty(), "{trajectory}");
        }
    }
    let keys = mock.state.api_keys.lock().unwrap().clone();
    assert!(
        !keys.is_empty() && keys.iter().all(|k| k == SECRET),
        "{keys:?}"
    );
    assert_secret_never_recorded(&run_dir);
    assert_no_processes_under(&fixture.path("trials"));
}

/// The model names a skill that does not exist: the CLI's skill tool fails while the run ends
/// normally (exit 0). The call must read as *not activated*, with the CLI's error kept.
fn failed_skill_call_against_chat_mock(kind: &str, cli: &Path, error_text: &str) {
    let mock = skill_argument_mock(Some("pirate-greting"));
    let fixture = Fixture::new(1);
    fixture.write(
        &format!("runners/{kind}.toml"),
        &format!(
            "kind = \"{kind}\"\nprogram = \"{}\"\nbase_url = \"{}\"\nmodel = \"m1\"\napi_key_env = \"MOCK_CHAT_KEY\"\ntimeout_s = 240\nconcurrency = 2\n",
            cli.display(),
            mock.base_url()
        ),
    );
    let output = fixture.run(kind, "failed-call", &[("MOCK_CHAT_KEY", SECRET)]);
    let run_dir = fixture.run_dir("failed-call");
    let transcripts = transcripts(&run_dir);
    assert_eq!(transcripts.len(), 2, "{}", stderr(&output));
    let (_, trajectory, grade) = transcripts
        .iter()
        .find(|(arm, _, _)| arm == "with_skill")
        .unwrap();
    assert_eq!(trajectory["process"]["exit_code"], 0, "{trajectory}");
    assert_eq!(trajectory["status"], "complete");
    let activations = trajectory["skill_activations"].as_array().unwrap();
    assert_eq!(activations.len(), 1, "{trajectory}");
    assert_eq!(activations[0]["skill"], "pirate-greting");
    assert_eq!(activations[0]["ok"], false, "{trajectory}");
    assert_eq!(activations[0]["target"], false);
    let reason = activations[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("the skill tool returned an error") && reason.contains(error_text),
        "{reason}"
    );
    assert_eq!(grade["outcome"], "fail");
    assert_secret_never_recorded(&run_dir);
    assert_no_processes_under(&fixture.path("trials"));
}

/// The provider is unreachable (a loopback port nothing listens on): every trial is
/// unscoreable with the typed cause and the CLI's own error as the reason, never `fail`.
fn unreachable_provider(kind: &str, cli: &Path, message: &str) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let fixture = Fixture::new(1);
    fixture.write(
        &format!("runners/{kind}.toml"),
        &format!(
            "kind = \"{kind}\"\nprogram = \"{}\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m1\"\napi_key_env = \"MOCK_CHAT_KEY\"\ntimeout_s = 300\nconcurrency = 2\n",
            cli.display()
        ),
    );
    // Without the pre-flight probe (which would stop the run before any trial).
    let output = fixture.run_with(
        kind,
        "offline",
        &[("MOCK_CHAT_KEY", SECRET)],
        &["--no-preflight"],
    );
    let run_dir = fixture.run_dir("offline");
    let records = fixture.records("offline");
    assert_eq!(records.len(), 2, "{}", stderr(&output));
    for reason in unscoreable_reasons(&records, "api_unreachable") {
        // The CLI's own final error; or, when the outage watch stops the CLI while it is still
        // retrying (as on a loaded machine), the retry it announced (the refused connection)
        // or the stop with the address that refused: the same typed cause each way.
        assert!(
            reason.starts_with("agent API unreachable: ")
                && (reason.contains(message)
                    || reason.contains("no model answer within")
                    || reason.contains("Connection refused")),
            "{reason}"
        );
    }
    for (_, trajectory, grade) in transcripts(&run_dir) {
        assert_eq!(grade["outcome"], "unscoreable", "{grade}");
        assert_eq!(trajectory["process"]["class"], "infrastructure_error");
        // The CLI exits 1 with its error, or is stopped by the outage watch (no exit code).
        let exit_code = &trajectory["process"]["exit_code"];
        assert!(*exit_code == 1 || exit_code.is_null(), "{trajectory}");
    }
    assert_secret_never_recorded(&run_dir);
    assert_no_processes_under(&fixture.path("trials"));
}

#[test]
fn copilot_paired_run_against_streaming_chat_mock() {
    let Some(copilot) = installed_cli("copilot") else {
        return;
    };
    paired_run_against_chat_mock("copilot", &copilot, true);
}

#[test]
fn copilot_failed_skill_call_is_not_an_activation() {
    let Some(copilot) = installed_cli("copilot") else {
        return;
    };
    failed_skill_call_against_chat_mock("copilot", &copilot, "Skill not found: pirate-greting");
}

#[test]
fn copilot_unreachable_provider_is_unscoreable() {
    let Some(copilot) = installed_cli("copilot") else {
        return;
    };
    unreachable_provider(
        "copilot",
        &copilot,
        "Could not connect to local model provider",
    );
}

#[test]
fn qwen_code_paired_run_against_streaming_chat_mock() {
    let Some(qwen) = installed_cli("qwen") else {
        return;
    };
    paired_run_against_chat_mock("qwen-code", &qwen, false);
}

#[test]
fn qwen_code_failed_skill_call_is_not_an_activation() {
    let Some(qwen) = installed_cli("qwen") else {
        return;
    };
    failed_skill_call_against_chat_mock("qwen-code", &qwen, "not found");
}

#[test]
fn qwen_code_unreachable_provider_is_unscoreable() {
    let Some(qwen) = installed_cli("qwen") else {
        return;
    };
    unreachable_provider("qwen-code", &qwen, "Connection error");
}

#[test]
fn a_reused_trial_folder_holds_nothing_from_the_trial_before() {
    // One job slot, six trials of both arms through the same folder. The fake agent lists what
    // its folder holds, then litters it (files, folders, read-only ones, symbolic links, a fifo,
    // changed and planted skills, HOME files); the next trial must find exactly the staged
    // state. Each case checks a file the agent writes only when the target is staged, so a
    // leftover would also turn a baseline trial into a pass.
    let fixture = Fixture::new(3);
    let evals: Vec<Value> = (0..3)
        .map(|i| {
            json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                   "checks": [{"type": "file_exists", "path": "answer.txt"}]})
        })
        .collect();
    fixture.write(
        &format!("skill/{TARGET}/evals/evals.json"),
        &serde_json::to_string(&json!({"skill_name": TARGET, "evals": evals})).unwrap(),
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_agent.py");
    let log = fixture.path("listings.jsonl");
    fixture.write(
        "runners/litter.toml",
        &format!(
            "kind = \"command\"\nmodel = \"fake-model\"\ncommand = [\"python3\", \"{}\", \"litter\", \"{{skills_dir}}\", \"{TARGET}\", \"{}\"]\noutput_format = \"claude-stream-json\"\nskills_dir = \".claude/skills\"\ntimeout_s = 30\nconcurrency = 1\n",
            script.display(),
            log.display()
        ),
    );
    let output = fixture.run("litter", "litter", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = summary(&fixture.run_dir("litter"));
    assert_eq!(summary["arms"]["with_skill"]["pass_rate"], 1.0, "{summary}");
    assert_eq!(
        summary["arms"]["without_skill"]["pass_rate"], 0.0,
        "{summary}"
    );
    let trials: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(trials.len(), 6);
    assert!(
        trials.iter().all(|t| t["cwd"] == trials[0]["cwd"]),
        "one slot, one folder: {:?}",
        trials.iter().map(|t| &t["cwd"]).collect::<Vec<_>>()
    );
    for staged in [true, false] {
        let arm: Vec<&Value> = trials.iter().filter(|t| t["staged"] == staged).collect();
        assert_eq!(arm.len(), 3);
        for trial in &arm {
            assert_eq!(trial["workspace"], arm[0]["workspace"], "staged {staged}");
            assert_eq!(trial["home"], arm[0]["home"], "staged {staged}");
            let text = format!("{}{}", trial["workspace"], trial["home"]);
            for litter in [
                "litter",
                "read-only",
                "link-",
                "fifo",
                "planted",
                "answer.txt",
                "projects",
            ] {
                assert!(!text.contains(litter), "{litter} leaked: {text}");
            }
        }
    }
    // The slot folders are gone once the run ends.
    let left: Vec<_> = std::fs::read_dir(fixture.path("trials"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// How one agent CLI kind reaches a model server: its model name, the variable holding the
/// key, and the `base_url` of a server at `root` (`http://127.0.0.1:PORT`).
struct CliTarget {
    kind: &'static str,
    model: &'static str,
    key_env: &'static str,
    /// Whether `base_url` ends in `/v1` (OpenAI-style servers) or is the bare root.
    v1: bool,
}

impl CliTarget {
    fn base_url(&self, root: &str) -> String {
        if self.v1 {
            format!("{root}/v1")
        } else {
            root.to_string()
        }
    }
}

/// Grace for the outage watch in these tests: the default. Node CLIs on a loaded machine can
/// take tens of seconds before their first request, and silence counts from the first output.
const TEST_INFRA_GRACE_S: f64 = 30.0;

/// One fault scenario against `cli`: a profile whose `base_url` is `base`, a run of one case
/// (both arms) with `--no-preflight` unless `preflight`; returns the output, the run folder and
/// the wall time.
fn fault_run(
    target: &CliTarget,
    cli: &Path,
    base: &str,
    name: &str,
    key_env: Option<&str>,
    preflight: bool,
) -> (Output, PathBuf, std::time::Duration, Fixture) {
    let fixture = Fixture::new(1);
    let key_line = key_env
        .map(|key| format!("api_key_env = \"{key}\"\n"))
        .unwrap_or_default();
    fixture.write(
        &format!("runners/{}.toml", target.kind),
        &format!(
            "kind = \"{}\"\nprogram = \"{}\"\nbase_url = \"{base}\"\nmodel = \"{}\"\n{key_line}timeout_s = 120\nconcurrency = 2\ninfra_grace_s = {TEST_INFRA_GRACE_S}\n",
            target.kind,
            cli.display(),
            target.model,
        ),
    );
    let args: &[&str] = if preflight { &[] } else { &["--no-preflight"] };
    let started = std::time::Instant::now();
    let env: Vec<(&str, &str)> = key_env.map(|key| (key, SECRET)).into_iter().collect();
    let output = fixture.run_with(target.kind, name, &env, args);
    let elapsed = started.elapsed();
    let run_dir = fixture.run_dir(name);
    (output, run_dir, elapsed, fixture)
}

/// The cause skill-lift records for `fault` with agent CLI `kind`: the fault's own, for every
/// CLI. Where the pinned CLI retries without a word on stdout or stderr (OpenCode 1.18.33: 401,
/// 429 and 500; Qwen Code 0.24.4: 429 and 500), the outage watch stops it for silence and the
/// cause comes from the CLI's own failure record (Qwen Code's chat file) or skill-lift's probe
/// of the endpoint (OpenCode). Alternatives would be separated by `|`.
fn expected_cause(_kind: &str, fault: Fault) -> &'static str {
    fault.cause()
}

/// Where a CLI retries a fault silently, the reason of every trial shows where the cause came
/// from: Qwen Code's own chat-file record, or skill-lift's probe of the endpoint (OpenCode).
fn assert_silent_retry_evidence(kind: &str, fault: Fault, run_dir: &Path, what: &str) {
    let evidence = match (kind, fault) {
        ("qwen-code", Fault::RateLimited | Fault::ServerError) => "Qwen Code recorded an API error",
        ("opencode", Fault::RateLimited | Fault::ServerError) => "skill-lift's probe POST",
        _ => return,
    };
    let records = std::fs::read_to_string(run_dir.join("trials.jsonl")).unwrap_or_default();
    for line in records.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        let reason = record["reason"].as_str().unwrap_or("");
        assert!(reason.contains(evidence), "{what}: {record}");
    }
}

/// Every trial of a fault run: unscoreable with `cause`, in both arms, and the run exits 3.
fn assert_every_trial_typed(output: &Output, run_dir: &Path, cause: &str, what: &str) {
    assert_eq!(output.status.code(), Some(3), "{what}: {}", stderr(output));
    let records: Vec<Value> = std::fs::read_to_string(run_dir.join("trials.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{what}: {}", stderr(output));
    let mut arms: Vec<&str> = records.iter().map(|r| r["arm"].as_str().unwrap()).collect();
    arms.sort();
    assert_eq!(arms, ["with_skill", "without_skill"], "{what}");
    for record in &records {
        assert_eq!(record["outcome"], "unscoreable", "{what}: {record}");
        let recorded = record["infrastructure"].as_str().unwrap_or("");
        assert!(
            cause.split('|').any(|c| c == recorded),
            "{what}: expected {cause}: {record}"
        );
    }
    assert_secret_never_recorded(run_dir);
}

/// One agent CLI against a server answering 401, 429, 500, a credit-exhausted 400, or never,
/// and against an unreachable port: every trial unscoreable with the typed cause in both arms,
/// exit 3, the outage watch (`infra_grace_s`) ending retry storms; and the pre-flight probe
/// stops a run against a refused key before any trial, naming the key's variable. The
/// scenarios run side by side; each one's wall time is printed.
fn faults_are_typed(target: &CliTarget, cli: &Path) {
    let unreachable = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    type Scenario<'a> = Box<dyn FnOnce() + Send + 'a>;
    let mut scenarios: Vec<Scenario<'_>> = Vec::new();
    for fault in Fault::ALL {
        scenarios.push(Box::new(move || {
            let mock = FaultMock::start(fault);
            let base = target.base_url(&mock.root_url());
            let name = fault.name();
            let (output, run_dir, elapsed, fixture) =
                fault_run(target, cli, &base, name, Some(target.key_env), false);
            let what = format!("{} {name}", target.kind);
            eprintln!(
                "{what}: {:.1} s, {} requests",
                elapsed.as_secs_f64(),
                mock.requests()
            );
            assert_every_trial_typed(&output, &run_dir, expected_cause(target.kind, fault), &what);
            assert_silent_retry_evidence(target.kind, fault, &run_dir, &what);
            assert_no_processes_under(&fixture.path("trials"));
        }));
    }
    let unreachable = &unreachable;
    scenarios.push(Box::new(move || {
        let base = target.base_url(unreachable);
        let (output, run_dir, elapsed, _fixture) = fault_run(
            target,
            cli,
            &base,
            "unreachable",
            Some(target.key_env),
            false,
        );
        let what = format!("{} unreachable", target.kind);
        eprintln!("{what}: {:.1} s", elapsed.as_secs_f64());
        assert_every_trial_typed(&output, &run_dir, "api_unreachable", &what);
    }));
    scenarios.push(Box::new(move || {
        let mock = FaultMock::start(Fault::Unauthorized);
        let base = target.base_url(&mock.root_url());
        let (output, run_dir, elapsed, _fixture) =
            fault_run(target, cli, &base, "preflight", Some(target.key_env), true);
        let what = format!("{} pre-flight 401", target.kind);
        eprintln!("{what}: {:.1} s", elapsed.as_secs_f64());
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{what}: {text}");
        assert!(
            text.contains("pre-flight check") && text.contains("API authentication failed"),
            "{what}: {text}"
        );
        assert!(text.contains(target.key_env), "{what}: {text}");
        assert!(!text.contains(SECRET), "{what}: {text}");
        assert!(!run_dir.join("trials.jsonl").exists(), "{what}");
    }));
    // Four scenarios (eight agent processes) at a time: more starve each other on a small
    // machine, and silence counts against the outage watch.
    let mut scenarios = scenarios.into_iter();
    loop {
        let batch: Vec<Scenario<'_>> = scenarios.by_ref().take(4).collect();
        if batch.is_empty() {
            break;
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = batch.into_iter().map(|run| scope.spawn(run)).collect();
            for handle in handles {
                if let Err(panic) = handle.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        });
    }
}

#[test]
fn claude_code_faults_are_unscoreable_with_their_cause() {
    let Some(claude) = installed_cli("claude") else {
        return;
    };
    let target = CliTarget {
        kind: "claude-code",
        model: "claude-sonnet-4-5",
        key_env: "ANTHROPIC_API_KEY",
        v1: false,
    };
    faults_are_typed(&target, &claude);
    // No key at all: Claude Code says it is not logged in; the probe names the variable it
    // reads, and without the probe every trial is `auth_failure`.
    let mock = FaultMock::start(Fault::ServerError);
    let (output, _, _, _fixture) = fault_run(
        &target,
        &claude,
        &mock.root_url(),
        "nokey-preflight",
        None,
        true,
    );
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert!(text.contains("ANTHROPIC_API_KEY"), "{text}");
    let (output, run_dir, _, _fixture) =
        fault_run(&target, &claude, &mock.root_url(), "nokey", None, false);
    assert_every_trial_typed(
        &output,
        &run_dir,
        "auth_failure",
        "claude-code not logged in",
    );
    // A profile naming a variable Claude Code never reads is refused at load.
    let fixture = Fixture::new(1);
    fixture.write(
        "runners/misnamed.toml",
        &format!(
            "kind = \"claude-code\"\nprogram = \"{}\"\nmodel = \"m\"\napi_key_env = \"MY_ANTHROPIC_KEY\"\n",
            claude.display()
        ),
    );
    let output = fixture.run("misnamed", "misnamed", &[("MY_ANTHROPIC_KEY", SECRET)]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(
        text.contains("api_key_env") && text.contains("ANTHROPIC_API_KEY"),
        "{text}"
    );
}

#[test]
fn codex_faults_are_unscoreable_with_their_cause() {
    let Some(codex) = installed_cli("codex") else {
        return;
    };
    let target = CliTarget {
        kind: "codex",
        model: "gpt-5-codex",
        key_env: "MOCK_OPENAI_KEY",
        v1: true,
    };
    faults_are_typed(&target, &codex);
}

#[test]
fn gemini_faults_are_unscoreable_with_their_cause() {
    let Some(gemini) = installed_cli("gemini") else {
        return;
    };
    let target = CliTarget {
        kind: "gemini",
        model: "gemini-2.5-pro",
        key_env: "GEMINI_API_KEY",
        v1: false,
    };
    faults_are_typed(&target, &gemini);
}

#[test]
fn opencode_faults_are_unscoreable_with_their_cause() {
    let Some(opencode) = installed_cli("opencode") else {
        return;
    };
    let target = CliTarget {
        kind: "opencode",
        model: "m1",
        key_env: "MOCK_CHAT_KEY",
        v1: true,
    };
    faults_are_typed(&target, &opencode);
}

#[test]
fn copilot_faults_are_unscoreable_with_their_cause() {
    let Some(copilot) = installed_cli("copilot") else {
        return;
    };
    let target = CliTarget {
        kind: "copilot",
        model: "m1",
        key_env: "MOCK_CHAT_KEY",
        v1: true,
    };
    faults_are_typed(&target, &copilot);
}

#[test]
fn qwen_code_faults_are_unscoreable_with_their_cause() {
    let Some(qwen) = installed_cli("qwen") else {
        return;
    };
    let target = CliTarget {
        kind: "qwen-code",
        model: "m1",
        key_env: "MOCK_CHAT_KEY",
        v1: true,
    };
    faults_are_typed(&target, &qwen);
}
