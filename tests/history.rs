//! Session history end to end through the real binary: fixtures written here in each agent's
//! on-disk shape (Claude Code, Codex, Gemini CLI, OpenCode) with planted adopted and
//! pushed-back sessions; `golden mine`, `init --from-history`, `usage`, `status --dashboard`,
//! `EVAL.md` and `golden draft` against loopback mocks.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use support::cli::streams;
use support::mock_judge::{JudgeBehaviour, MockJudge};
use support::mock_openai::{MockBehaviour, MockServer};

/// The secret planted in a prompt; it must never reach a written file.
const SECRET: &str = "sk-ant-api03-PlantedSecretValue0123456789abcdefXYZ";

fn binary(state: &Path) -> Command {
    let mut command = support::cli::binary_in(state);
    command.env_remove("SKILL_LIFT_HISTORY_ROOT");
    command
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// One planted turn: the prompt, the skill it activated, the answer.
struct Turn<'a> {
    prompt: &'a str,
    skill: Option<&'a str>,
    answer: &'a str,
}

/// One planted session.
struct Session<'a> {
    id: &'a str,
    day: &'a str,
    turns: Vec<Turn<'a>>,
}

fn at(day: &str, minute: usize, second: usize) -> String {
    format!("{day}T10:{minute:02}:{second:02}.000Z")
}

fn millis(day: &str, minute: usize, second: usize) -> i64 {
    chrono::DateTime::parse_from_rfc3339(&at(day, minute, second))
        .unwrap()
        .timestamp_millis()
}

const CWD: &str = "/home/alice/app";

fn write_claude(home: &Path, session: &Session) {
    let mut lines = vec![json!({"type": "summary", "summary": "planted", "leafUuid": "x"})];
    for (index, turn) in session.turns.iter().enumerate() {
        let base =
            json!({"sessionId": session.id, "cwd": CWD, "isSidechain": false, "version": "2.1.0"});
        let with = |extra: Value| {
            let mut line = base.clone();
            for (key, value) in extra.as_object().unwrap() {
                line[key] = value.clone();
            }
            line
        };
        lines.push(with(
            json!({"type": "user", "timestamp": at(session.day, index, 0),
            "message": {"role": "user", "content": turn.prompt}}),
        ));
        if let Some(skill) = turn.skill {
            lines.push(with(json!({"type": "assistant", "timestamp": at(session.day, index, 1),
                "message": {"id": format!("m{index}a"), "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "tool_use", "id": format!("t{index}"), "name": "Skill", "input": {"skill": skill}}],
                    "usage": {"input_tokens": 1000, "output_tokens": 100}}})));
            lines.push(with(json!({"type": "user", "timestamp": at(session.day, index, 2),
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{index}"), "content": format!("Launching skill: {skill}")}]},
                "toolUseResult": {"success": true, "commandName": skill}})));
            lines.push(with(json!({"type": "user", "isMeta": true, "timestamp": at(session.day, index, 2),
                "message": {"role": "user", "content": [{"type": "text", "text": format!("Base directory for this skill: /home/alice/.claude/skills/{skill}")}]}})));
        }
        lines.push(with(json!({"type": "assistant", "timestamp": at(session.day, index, 5),
            "message": {"id": format!("m{index}b"), "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": turn.answer}],
                "usage": {"input_tokens": 500, "output_tokens": 50}}})));
    }
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    write(
        &home.join(format!(
            ".claude/projects/-home-alice-app/{}.jsonl",
            session.id
        )),
        &(text.join("\n") + "\n"),
    );
}

fn write_codex(home: &Path, session: &Session) {
    let mut lines = vec![
        json!({"timestamp": at(session.day, 0, 0), "type": "session_meta", "payload": {"id": session.id, "cwd": CWD, "cli_version": "0.60.0"}}),
        json!({"timestamp": at(session.day, 0, 0), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n</environment_context>"}]}}),
    ];
    let mut total = 0u64;
    for (index, turn) in session.turns.iter().enumerate() {
        lines.push(json!({"timestamp": at(session.day, index, 0), "type": "event_msg", "payload": {"type": "user_message", "message": turn.prompt}}));
        lines.push(json!({"timestamp": at(session.day, index, 0), "type": "turn_context", "payload": {"cwd": CWD, "model": "gpt-5-codex"}}));
        if let Some(skill) = turn.skill {
            let arguments = json!({"command": ["bash", "-lc", format!("cat /home/alice/.codex/skills/{skill}/SKILL.md")]}).to_string();
            lines.push(json!({"timestamp": at(session.day, index, 1), "type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": format!("c{index}")}}));
            lines.push(json!({"timestamp": at(session.day, index, 2), "type": "response_item", "payload": {"type": "function_call_output", "call_id": format!("c{index}"), "output": json!({"output": "---\nname: x\n", "metadata": {"exit_code": 0}}).to_string()}}));
        }
        total += 1650;
        lines.push(json!({"timestamp": at(session.day, index, 4), "type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": {"input_tokens": total, "cached_input_tokens": 0, "output_tokens": 0}}}}));
        lines.push(json!({"timestamp": at(session.day, index, 5), "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": turn.answer}]}}));
    }
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    let date = session.day.replace('-', "/");
    write(
        &home.join(format!(
            ".codex/sessions/{date}/rollout-{}T10-00-00-{}.jsonl",
            session.day, session.id
        )),
        &(text.join("\n") + "\n"),
    );
}

fn write_gemini(home: &Path, session: &Session) {
    let mut messages = Vec::new();
    for (index, turn) in session.turns.iter().enumerate() {
        messages.push(json!({"id": format!("u{index}"), "timestamp": at(session.day, index, 0), "type": "user", "content": turn.prompt}));
        let calls: Vec<Value> = turn
            .skill
            .map(|skill| vec![json!({"id": format!("c{index}"), "name": "activate_skill", "args": {"name": skill}, "status": "success",
                "timestamp": at(session.day, index, 1),
                "result": [{"functionResponse": {"id": format!("c{index}"), "name": "activate_skill", "response": {"output": "ok"}}}]})])
            .unwrap_or_default();
        messages.push(json!({"id": format!("g{index}"), "timestamp": at(session.day, index, 5), "type": "gemini", "content": turn.answer,
            "model": "gemini-2.5-pro", "tokens": {"input": 1500, "output": 150, "cached": 0, "total": 1650}, "toolCalls": calls}));
    }
    let record = json!({"sessionId": session.id, "projectHash": "abc123", "startTime": at(session.day, 0, 0),
        "lastUpdated": at(session.day, 9, 0), "messages": messages});
    write(
        &home.join(format!(
            ".gemini/tmp/abc123/chats/session-{}-{}.json",
            session.day, session.id
        )),
        &record.to_string(),
    );
}

fn write_opencode(home: &Path, session: &Session) {
    let storage = home.join(".local/share/opencode/storage");
    let put = |relative: String, value: Value| write(&storage.join(relative), &value.to_string());
    let id = format!("ses_{}", session.id);
    put(
        format!("session/global/{id}.json"),
        json!({"id": id, "projectID": "global", "directory": CWD, "title": "t",
            "time": {"created": millis(session.day, 0, 0), "updated": millis(session.day, 9, 0)}}),
    );
    for (index, turn) in session.turns.iter().enumerate() {
        let user = format!("msg_{}{index}0", session.id);
        let assistant = format!("msg_{}{index}1", session.id);
        put(
            format!("message/{id}/{user}.json"),
            json!({"id": user, "sessionID": id, "role": "user", "time": {"created": millis(session.day, index, 0)}}),
        );
        put(
            format!("part/{user}/prt_{index}0.json"),
            json!({"id": format!("prt_{index}0"), "messageID": user, "type": "text", "text": turn.prompt}),
        );
        put(
            format!("message/{id}/{assistant}.json"),
            json!({"id": assistant, "sessionID": id, "role": "assistant", "modelID": "gpt-5", "providerID": "openai",
            "time": {"created": millis(session.day, index, 1), "completed": millis(session.day, index, 5)}}),
        );
        if let Some(skill) = turn.skill {
            put(
                format!("part/{assistant}/prt_{index}1.json"),
                json!({"id": format!("prt_{index}1"), "messageID": assistant, "type": "tool", "callID": format!("c{index}"),
                "tool": "skill", "state": {"status": "completed", "input": {"name": skill}, "output": "<skill_content/>", "time": {"start": 1, "end": 2}}}),
            );
        }
        put(
            format!("part/{assistant}/prt_{index}2.json"),
            json!({"id": format!("prt_{index}2"), "messageID": assistant, "type": "text", "text": turn.answer}),
        );
        put(
            format!("part/{assistant}/prt_{index}3.json"),
            json!({"id": format!("prt_{index}3"), "messageID": assistant, "type": "step-finish", "reason": "stop",
            "tokens": {"input": 1500, "output": 150, "reasoning": 0, "cache": {"read": 0, "write": 0}}, "cost": 0.0}),
        );
    }
}

/// The planted history: with `--skill notes --since 2026-01-01`, exactly three drafts:
/// `s1` turn 1 positive (approved; `s3` repeats its prompt and folds into it), `s2` turn 1
/// negative (pushed back), `s4` turn 1 negative (undone). `s5` used another skill, `s6` none,
/// `s7` predates --since.
fn planted() -> Vec<Session<'static>> {
    let notes = Some("notes");
    let prompt_one: &'static str =
        Box::leak(format!("Draft release notes since v2.2 (token {SECRET})").into_boxed_str());
    vec![
        Session {
            id: "s1",
            day: "2026-03-01",
            turns: vec![
                Turn {
                    prompt: prompt_one,
                    skill: notes,
                    answer: "Notes written to /home/alice/app/NOTES.md",
                },
                Turn {
                    prompt: "thanks, now bump the version",
                    skill: None,
                    answer: "Bumped.",
                },
            ],
        },
        Session {
            id: "s2",
            day: "2026-03-02",
            turns: vec![
                Turn {
                    prompt: "Write release notes for 3.0",
                    skill: notes,
                    answer: "A flat list.",
                },
                Turn {
                    prompt: "No, that's wrong: group them by component",
                    skill: None,
                    answer: "Grouped.",
                },
            ],
        },
        Session {
            id: "s3",
            day: "2026-03-03",
            turns: vec![
                Turn {
                    prompt: prompt_one,
                    skill: notes,
                    answer: "Notes again.",
                },
                Turn {
                    prompt: "Now look at the flaky test in ci.yml",
                    skill: None,
                    answer: "Fixed.",
                },
            ],
        },
        Session {
            id: "s4",
            day: "2026-03-04",
            turns: vec![
                Turn {
                    prompt: "Release notes for the hotfix",
                    skill: notes,
                    answer: "Hotfix notes.",
                },
                Turn {
                    prompt: "undo that, please",
                    skill: None,
                    answer: "Reverted.",
                },
            ],
        },
        Session {
            id: "s5",
            day: "2026-03-05",
            turns: vec![Turn {
                prompt: "Summarise sales.csv by region",
                skill: Some("csv-tools"),
                answer: "North 150.",
            }],
        },
        Session {
            id: "s6",
            day: "2026-03-06",
            turns: vec![Turn {
                prompt: "What does this regex do?",
                skill: None,
                answer: "It matches digits.",
            }],
        },
        Session {
            id: "s7",
            day: "2025-12-01",
            turns: vec![Turn {
                prompt: "Release notes for 1.0",
                skill: notes,
                answer: "Old notes.",
            }],
        },
    ]
}

fn plant(home: &Path, host: &str) {
    for session in planted() {
        match host {
            "claude-code" => write_claude(home, &session),
            "codex" => write_codex(home, &session),
            "gemini" => write_gemini(home, &session),
            "opencode" => write_opencode(home, &session),
            other => panic!("{other}"),
        }
    }
}

const HOSTS: [&str; 4] = ["claude-code", "codex", "gemini", "opencode"];

fn every_file(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(every_file(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn golden_mine_drafts_exactly_the_planted_sessions_on_every_host() {
    let state = tempfile::tempdir().unwrap();
    for host in HOSTS {
        let home = tempfile::tempdir().unwrap();
        plant(home.path(), host);
        let out_dir = tempfile::tempdir().unwrap();
        let out = out_dir.path().join("drafts.json");
        let output = binary(state.path())
            .args([
                "golden",
                "mine",
                "--host",
                host,
                "--skill",
                "notes",
                "--since",
                "2026-01-01",
            ])
            .arg("--history-root")
            .arg(home.path())
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let (stdout, stderr) = streams(&output);
        assert_eq!(output.status.code(), Some(0), "{host}: {stderr}");
        assert!(
            stderr.contains("1 before --since left out"),
            "{host}: {stderr}"
        );
        assert!(
            stderr.contains("3 draft(s): 1 positive, 2 negative (1 duplicate prompt(s) folded)"),
            "{host}: {stderr}"
        );
        assert!(stdout.contains("--allow-draft"), "{stdout}");
        let set: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let evals = set["evals"].as_array().unwrap();
        let summary: Vec<(String, String, String, u64)> = evals
            .iter()
            .map(|case| {
                let p = &case["provenance"];
                (
                    p["session"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("ses_")
                        .to_string(),
                    p["polarity"].as_str().unwrap().to_string(),
                    p["signal"].as_str().unwrap().to_string(),
                    p["occurrences"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("s1".into(), "positive".into(), "approved".into(), 2),
                ("s2".into(), "negative".into(), "pushed_back".into(), 1),
                ("s4".into(), "negative".into(), "undone".into(), 1),
            ],
            "{host}"
        );
        for case in evals {
            assert_eq!(case["status"], "draft");
            assert_eq!(case["expected_skill"], "notes");
            assert_eq!(case["provenance"]["host"], host);
            assert_eq!(case["provenance"]["turn"], 1);
            assert!(
                case["provenance"]["timestamp"]
                    .as_str()
                    .unwrap()
                    .starts_with("2026-03-0")
            );
        }
        assert_eq!(
            evals[0]["expected_output"],
            "Notes written to ~/app/NOTES.md"
        );
        assert!(
            evals[0]["prompt"]
                .as_str()
                .unwrap()
                .contains("[REDACTED:anthropic-key]"),
            "{}",
            evals[0]["prompt"]
        );
        assert_eq!(
            evals[1]["provenance"]["reason"],
            "No, that's wrong: group them by component"
        );
        assert!(
            evals[1]["assertions"][0]
                .as_str()
                .unwrap()
                .contains("group them by component")
        );
        assert!(evals[1].get("expected_output").is_none());
        // Nothing written holds the secret or the user's home folder.
        for file in every_file(out_dir.path()) {
            let written = std::fs::read_to_string(&file).unwrap();
            assert!(!written.contains(SECRET), "{}", file.display());
            assert!(!written.contains("alice"), "{}", file.display());
        }
        // Never overwrites.
        let again = binary(state.path())
            .args(["golden", "mine", "--host", host, "--skill", "notes"])
            .arg("--history-root")
            .arg(home.path())
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(again.status.code(), Some(2));
        assert!(streams(&again).1.contains("never overwrites"));
    }
}

#[test]
fn unknown_events_and_malformed_lines_are_reported_not_fatal() {
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    plant(home.path(), "claude-code");
    let file = home
        .path()
        .join(".claude/projects/-home-alice-app/s2.jsonl");
    let mut body = std::fs::read_to_string(&file).unwrap();
    body.push_str(
        "{\"type\":\"mystery-event\",\"timestamp\":\"2026-03-02T11:00:00Z\"}\nnot json at all\n",
    );
    std::fs::write(&file, body).unwrap();
    let output = binary(state.path())
        .args(["golden", "mine", "--host", "claude", "--skill", "notes"])
        .arg("--history-root")
        .arg(home.path())
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("claude-code:mystery-event (1)"), "{stderr}");
    let lines = std::fs::read_to_string(&file).unwrap().lines().count();
    assert!(
        stderr.contains(&format!("s2.jsonl:{lines}: invalid JSON")),
        "{stderr}"
    );
    let set: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(set["evals"].as_array().unwrap().len(), 4);
    // No history at all: nothing to draft, said plainly.
    let empty = tempfile::tempdir().unwrap();
    let output = binary(state.path())
        .args(["golden", "mine", "--host", "codex"])
        .arg("--history-root")
        .arg(empty.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4));
    assert!(streams(&output).1.contains("no codex session history at"));
    assert_eq!(streams(&output).0, "", "no empty eval set on stdout");
    // Sessions, but none used the skill: exit 4, a plain message, nothing printed or written.
    let out = empty.path().join("none.json");
    for with_out in [false, true] {
        let mut command = binary(state.path());
        command
            .args(["golden", "mine", "--host", "claude", "--skill", "absent"])
            .arg("--history-root")
            .arg(home.path());
        if with_out {
            command.arg("--out").arg(&out);
        }
        let output = command.output().unwrap();
        let (stdout, stderr) = streams(&output);
        assert_eq!(output.status.code(), Some(4), "{stderr}");
        assert_eq!(stdout, "");
        assert!(
            stderr
                .contains("no drafts: no turn in the history read used `absent`; nothing written"),
            "{stderr}"
        );
    }
    assert!(!out.exists());
    // Unknown host, bad date: input errors.
    let output = binary(state.path())
        .args(["golden", "mine", "--host", "cursor"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let output = binary(state.path())
        .args(["golden", "mine", "--host", "codex", "--since", "yesterday"])
        .arg("--history-root")
        .arg(empty.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(streams(&output).1.contains("--since `yesterday`"));
}

/// A skill folder named `notes` with a runner profile and a judge profile on the mocks.
fn skill_project(agent_url: &str, judge_url: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("notes/SKILL.md"),
        "---\nname: notes\ndescription: Use when writing release notes.\n---\nBegin every answer with Aye! SKILL-MARKER\n",
    );
    write(
        &dir.path().join("runners/mock.toml"),
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"{agent_url}\"\nmodel = \"mock-model\"\ntimeout_s = 30\nconcurrency = 4\nretry_base_delay_s = 0.01\n"
        ),
    );
    write(
        &dir.path().join("runners/judge.toml"),
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"{judge_url}\"\nmodel = \"judge-model\"\ntimeout_s = 30\nmax_retries = 0\n"
        ),
    );
    dir
}

#[test]
fn mined_drafts_run_end_to_end_with_allow_draft_and_files() {
    let state = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockBehaviour::default());
    let judge = MockJudge::start(JudgeBehaviour::default());
    let project = skill_project(&server.base_url(), &judge.base_url());
    // A session in a real folder, whose turn read a file: --include-files copies it.
    let home = tempfile::tempdir().unwrap();
    let workdir = tempfile::tempdir().unwrap();
    write(&workdir.path().join("docs/CHANGELOG.md"), "## 2.2\n- fix\n");
    let cwd = workdir.path().to_string_lossy().to_string();
    let lines = [
        json!({"type": "user", "sessionId": "f1", "cwd": cwd, "timestamp": "2026-03-10T10:00:00Z", "message": {"role": "user", "content": "Release notes from docs/CHANGELOG.md"}}),
        json!({"type": "assistant", "sessionId": "f1", "cwd": cwd, "timestamp": "2026-03-10T10:00:01Z", "message": {"id": "a1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "notes"}},
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": format!("{cwd}/docs/CHANGELOG.md")}}]}}),
        json!({"type": "user", "sessionId": "f1", "cwd": cwd, "timestamp": "2026-03-10T10:00:02Z", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "Launching skill: notes"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "## 2.2"}]}}),
        json!({"type": "assistant", "sessionId": "f1", "cwd": cwd, "timestamp": "2026-03-10T10:00:05Z", "message": {"id": "a2", "role": "assistant", "content": [{"type": "text", "text": "Aye! Notes for 2.2."}]}}),
    ];
    let body: Vec<String> = lines.iter().map(Value::to_string).collect();
    write(
        &home.path().join(".claude/projects/p/f1.jsonl"),
        &body.join("\n"),
    );
    plant(home.path(), "claude-code");
    let drafts = project.path().join("drafts/notes.json");
    let output = binary(state.path())
        .current_dir(project.path())
        .args([
            "golden",
            "mine",
            "--host",
            "claude-code",
            "--skill",
            "notes",
            "--since",
            "2026-01-01",
            "--include-files",
        ])
        .arg("--history-root")
        .arg(home.path())
        .arg("--out")
        .arg(&drafts)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", streams(&output).1);
    let set: Value = serde_json::from_str(&std::fs::read_to_string(&drafts).unwrap()).unwrap();
    let evals = set["evals"].as_array().unwrap();
    assert_eq!(evals.len(), 4);
    let with_file = evals
        .iter()
        .find(|c| c["provenance"]["session"] == "f1")
        .unwrap();
    assert_eq!(with_file["files"], json!(["docs/CHANGELOG.md"]));
    assert_eq!(
        with_file["provenance"]["referenced_files"],
        json!(["docs/CHANGELOG.md"])
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("drafts/docs/CHANGELOG.md")).unwrap(),
        "## 2.2\n- fix\n"
    );
    // Drafts are skipped without --allow-draft.
    let run = |extra: &[&str]| {
        binary(state.path())
            .current_dir(project.path())
            .args([
                "run", "notes", "--runner", "mock", "--judge", "judge", "-k", "1", "--out",
                "results", "--evals",
            ])
            .arg(&drafts)
            .args(extra)
            .output()
            .unwrap()
    };
    let skipped = run(&["--run-id", "skipped"]);
    assert_eq!(skipped.status.code(), Some(4), "{}", streams(&skipped).1);
    let output = run(&["--run-id", "drafts", "--allow-draft"]);
    assert_eq!(output.status.code(), Some(0), "{}", streams(&output).1);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("results/drafts/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["trials"]["recorded"], 8, "{summary}");
    assert_eq!(summary["arms"]["with_skill"]["pass_rate"], 1.0, "{summary}");
    // The run folder holds neither the planted secret nor the user's home folder.
    for file in every_file(&project.path().join("results/drafts")) {
        let bytes = std::fs::read(&file).unwrap();
        let written = String::from_utf8_lossy(&bytes);
        assert!(!written.contains(SECRET), "{}", file.display());
        assert!(!written.contains("/home/alice"), "{}", file.display());
    }
}

#[test]
fn init_from_history_writes_the_drafts_for_the_skill() {
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    plant(home.path(), "gemini");
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("notes");
    write(
        &skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Use when writing release notes.\n---\nBody\n",
    );
    let output = binary(state.path())
        .arg("init")
        .arg(&skill)
        .args([
            "--from-history",
            "--host",
            "gemini",
            "--since",
            "2026-01-01",
        ])
        .env("SKILL_LIFT_HISTORY_ROOT", home.path())
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("3 draft case(s) from session history"),
        "{stdout}"
    );
    let set: Value =
        serde_json::from_str(&std::fs::read_to_string(skill.join("evals/evals.json")).unwrap())
            .unwrap();
    assert_eq!(set["skill_name"], "notes");
    assert_eq!(set["evals"].as_array().unwrap().len(), 3);
    // A skill nobody used: exit 4, nothing written.
    let other = dir.path().join("unused");
    write(
        &other.join("SKILL.md"),
        "---\nname: unused\ndescription: Never used.\n---\nBody\n",
    );
    let output = binary(state.path())
        .arg("init")
        .arg(&other)
        .args(["--from-history", "--host", "gemini"])
        .env("SKILL_LIFT_HISTORY_ROOT", home.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", streams(&output).1);
    assert!(!other.join("evals").exists());
}

#[test]
fn usage_reports_the_planted_adoption_rates_and_no_evidence_without_history() {
    let state = tempfile::tempdir().unwrap();
    for host in HOSTS {
        let home = tempfile::tempdir().unwrap();
        plant(home.path(), host);
        let output = binary(state.path())
            .args(["usage", "--host", host, "--since", "2026-01-01", "--json"])
            .args([
                "--value-per-success",
                "1",
                "--input-price",
                "100",
                "--output-price",
                "100",
            ])
            .arg("--history-root")
            .arg(home.path())
            .output()
            .unwrap();
        let (stdout, stderr) = streams(&output);
        assert_eq!(output.status.code(), Some(0), "{host}: {stderr}");
        let report: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(report["sessions"], 6, "{host}");
        let skills = report["skills"].as_array().unwrap();
        let notes = skills.iter().find(|s| s["skill"] == "notes").unwrap();
        assert_eq!(notes["activations"], 4, "{host}");
        assert_eq!(notes["adopted"], 2, "{host}");
        assert_eq!(notes["overridden"], 2, "{host}");
        assert_eq!(notes["adoption_rate"], 0.5, "{host}");
        // Wilson 95% for 2/4.
        let interval = &notes["adoption_interval"];
        assert!(
            (interval["low"].as_f64().unwrap() - 0.1500).abs() < 1e-3,
            "{interval}"
        );
        assert!(
            (interval["high"].as_f64().unwrap() - 0.8500).abs() < 1e-3,
            "{interval}"
        );
        assert_eq!(
            notes["signals"],
            json!({"approved": 1, "moved_on": 1, "pushed_back": 1, "undone": 1})
        );
        assert_eq!(notes["sessions_used"], 4);
        assert_eq!(notes["sessions_available_unused"], 2, "{host}");
        let csv = skills.iter().find(|s| s["skill"] == "csv-tools").unwrap();
        assert_eq!(csv["adopted"], 1);
        assert_eq!(csv["overridden"], 0);
        assert_eq!(csv["verdict"], "keep");
        // Claude Code: an activated turn holds two responses (1100 + 550 tokens), every other
        // turn one (550), and the comparable turns include `csv-tools`'s (1650):
        // (5 × 550 + 1650) / 6. Marginal cost at 100 USD/Mtok: (1500 − 666.67 input + 150 −
        // 66.67 output) / 1e6 × 100 = 0.091667 USD; net = 2 × 1 − 4 × 0.091667.
        if host == "claude-code" {
            assert_eq!(notes["tokens_per_activation"]["mean"], 1650.0);
            let comparable = notes["tokens_comparable"]["mean"].as_f64().unwrap();
            assert!((comparable - 4400.0 / 6.0).abs() < 1e-9, "{comparable}");
            let net = notes["net_value_usd"].as_f64().unwrap();
            assert!(
                (net - (2.0 - 4.0 * (2750.0 / 3.0) * 100.0 / 1e6)).abs() < 1e-9,
                "{net}"
            );
        }
        assert!(!stdout.contains(SECRET));
    }
    let empty = tempfile::tempdir().unwrap();
    write(
        &empty.path().join(".claude/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: x\n---\n",
    );
    let output = binary(state.path())
        .args(["usage", "--host", "claude-code"])
        .arg("--history-root")
        .arg(empty.path())
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("| notes | 0 | 0 | 0 |"), "{stdout}");
    assert!(stdout.contains("**notes**: no evidence"), "{stdout}");
}

#[test]
fn status_dashboard_shows_use_or_no_evidence() {
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    plant(home.path(), "claude-code");
    let root = tempfile::tempdir().unwrap();
    for name in ["notes", "csv-tools", "never-used"] {
        write(
            &root.path().join(format!("{name}/SKILL.md")),
            &format!("---\nname: {name}\ndescription: Use for {name}.\n---\nBody\n"),
        );
    }
    let scan = binary(state.path())
        .args(["scan", "--host", "claude-code", "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    assert_eq!(scan.status.code(), Some(0), "{}", streams(&scan).1);
    let output = binary(state.path())
        .args([
            "status",
            "--host",
            "claude-code",
            "--dashboard",
            "--days",
            "100000",
        ])
        .arg("--history-root")
        .arg(home.path())
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("notes: keep — adopted 3/5 (60%"),
        "{stdout}"
    );
    assert!(
        stdout.contains("csv-tools: keep — adopted 1/1 (100%"),
        "{stdout}"
    );
    assert!(stdout.contains("never-used: no evidence"), "{stdout}");
    // No history at all: every skill says so.
    let empty = tempfile::tempdir().unwrap();
    let output = binary(state.path())
        .args(["status", "--host", "claude-code", "--dashboard"])
        .arg("--history-root")
        .arg(empty.path())
        .output()
        .unwrap();
    let (stdout, _) = streams(&output);
    for name in ["notes", "csv-tools", "never-used"] {
        assert!(stdout.contains(&format!("{name}: no evidence")), "{stdout}");
    }
}

#[test]
fn eval_md_author_cases_take_priority_and_errors_name_the_line() {
    let state = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockBehaviour::default());
    let judge = MockJudge::start(JudgeBehaviour::default());
    let project = skill_project(&server.base_url(), &judge.base_url());
    let skill = project.path().join("notes");
    write(
        &skill.join("EVAL.md"),
        "# Author cases\n\n## since-tag\n\n### Prompt\n\nDraft release notes since v2.2.\n\n### Expected behaviors\n\n- starts with Aye!\n\n## explain\n\n### Prompt\nExplain what a changelog is.\n\n### Expected skill\nnone\n",
    );
    // A generated set with one case repeating an author prompt and one new.
    write(
        &skill.join("evals/evals.json"),
        &json!({"evals": [
            {"id": "g1", "prompt": "draft release notes   since v2.2.", "assertions": ["x"], "expected_skill": "notes"},
            {"id": "g2", "prompt": "Notes for 3.0", "assertions": ["starts with Aye!"], "expected_skill": "notes"}]})
        .to_string(),
    );
    let output = binary(state.path())
        .current_dir(project.path())
        .args([
            "run", "notes", "--runner", "mock", "--judge", "judge", "-k", "1", "--out", "results",
            "--run-id", "author",
        ])
        .output()
        .unwrap();
    let (_, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "EVAL.md author cases take priority: left out 1 case(s) with the same id or prompt: g1"
        ),
        "{stderr}"
    );
    let trials =
        std::fs::read_to_string(project.path().join("results/author/trials.jsonl")).unwrap();
    let cases: std::collections::BTreeSet<String> = trials
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["case_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        cases,
        ["explain", "g2", "since-tag"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    // A broken EVAL.md names the file and the line.
    write(
        &skill.join("EVAL.md"),
        "## a\n### Prompt\nx\n### Colour\nred\n",
    );
    let output = binary(state.path())
        .current_dir(project.path())
        .args([
            "run", "notes", "--runner", "mock", "-k", "1", "--out", "results",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        streams(&output)
            .1
            .contains("EVAL.md:4:1: not valid EVAL.md: unknown section `### Colour`"),
        "{}",
        streams(&output).1
    );
}

#[test]
fn golden_draft_adds_generated_drafts_without_touching_author_cases() {
    use axum::routing::post;
    use axum::{Json, Router};
    let state = tempfile::tempdir().unwrap();
    // A scripted model: first a reply that is not JSON (corrected once), then three drafts, one
    // repeating the author's prompt.
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&calls);
    let router = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(request): Json<Value>| {
            let counter = std::sync::Arc::clone(&counter);
            async move {
                let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let user = request["messages"][1]["content"].as_str().unwrap_or("").to_string();
                assert!(user.contains("Draft release notes since v2.2."), "{user}");
                let content = if n == 0 {
                    "Here are some cases!".to_string()
                } else {
                    json!({"cases": [
                        {"kind": "positive", "prompt": "Draft release notes since v2.2.", "expected_behaviors": ["x"]},
                        {"kind": "near_miss", "prompt": "What is a changelog for?", "why": "explanation, not notes"},
                        {"kind": "edge", "prompt": "Release notes for a tag with no commits", "expected_output": "Nothing to report.", "expected_behaviors": ["says there is nothing to report"]}]})
                    .to_string()
                };
                Json(json!({"id": "c", "object": "chat.completion", "model": "drafter",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}))
            }
        }),
    );
    let served = support::serve::serve(router);
    let url = format!("http://{}/v1", served.address);
    let project = skill_project(&url, &url);
    let skill = project.path().join("notes");
    let author = "## since-tag\n\n### Prompt\n\nDraft release notes since v2.2.\n";
    write(&skill.join("EVAL.md"), author);
    let output = binary(state.path())
        .current_dir(project.path())
        .args([
            "golden", "draft", "notes", "--judge", "judge", "--count", "3",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(stdout.contains("2 generated draft case(s)"), "{stdout}");
    assert!(
        stdout.contains("1 dropped as repeats of author cases"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(skill.join("EVAL.md")).unwrap(),
        author
    );
    let set: Value =
        serde_json::from_str(&std::fs::read_to_string(skill.join("evals/generated.json")).unwrap())
            .unwrap();
    let evals = set["evals"].as_array().unwrap();
    assert_eq!(evals.len(), 2);
    assert_eq!(evals[0]["id"], "gen-near-miss-1");
    assert_eq!(evals[0]["expected_skill"], Value::Null);
    assert_eq!(evals[1]["expected_output"], "Nothing to report.");
    for case in evals {
        assert_eq!(case["status"], "draft");
        assert_eq!(case["origin"], "generated");
        assert_eq!(case["provenance"]["profile"], "judge");
    }
    // The drafts load the way `run` loads them, author case first.
    let plan = binary(state.path())
        .current_dir(project.path())
        .args([
            "plan",
            "notes",
            "--runner",
            "mock",
            "-k",
            "1",
            "--allow-draft",
            "--evals",
            "notes/evals/generated.json",
        ])
        .output()
        .unwrap();
    assert_eq!(plan.status.code(), Some(0), "{}", streams(&plan).1);
    assert!(streams(&plan).0.contains("3 case"), "{}", streams(&plan).0);
    // A second draft never overwrites.
    let again = binary(state.path())
        .current_dir(project.path())
        .args(["golden", "draft", "notes", "--judge", "judge"])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
}

/// A new skill `release-notes` (not in the planted history under that name) with a runner
/// profile on `agent_url`; `extra_frontmatter` and `body` shape its write-type evidence.
fn shadow_project(agent_url: &str, extra_frontmatter: &str, body: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("release-notes/SKILL.md"),
        &format!(
            "---\nname: release-notes\ndescription: Use when drafting release notes for a version or a hotfix.\n{extra_frontmatter}---\n{body}\n"
        ),
    );
    write(
        &dir.path().join("runners/mock.toml"),
        &format!(
            "kind = \"openai-chat\"\nbase_url = \"{agent_url}\"\nmodel = \"mock-model\"\ntimeout_s = 30\nconcurrency = 4\nretry_base_delay_s = 0.01\n"
        ),
    );
    dir
}

#[test]
fn shadow_replays_the_eligible_prompts_and_records_them_next_to_what_happened() {
    let state = tempfile::tempdir().unwrap();
    // The replayed answer equals the answer kept in s3, and differs from the rejected ones.
    let server = MockServer::start(MockBehaviour {
        activate: Some("release-notes".into()),
        with_answer: "Notes again.".into(),
        ..MockBehaviour::default()
    });
    let project = shadow_project(
        &server.base_url(),
        "",
        "Group the changes by component. SKILL-MARKER",
    );
    let home = tempfile::tempdir().unwrap();
    plant(home.path(), "claude-code");
    let file = home
        .path()
        .join(".claude/projects/-home-alice-app/s2.jsonl");
    let mut body = std::fs::read_to_string(&file).unwrap();
    body.push_str("{\"type\":\"mystery-event\",\"timestamp\":\"2026-03-02T11:00:00Z\"}\n");
    std::fs::write(&file, body).unwrap();
    let output = binary(state.path())
        .current_dir(project.path())
        .args([
            "shadow",
            "release-notes",
            "--host",
            "claude-code",
            "--since",
            "2026-01-01",
            "--runner",
            "mock",
            "--out",
            "shadow",
            "--run-id",
            "s",
        ])
        .arg("--history-root")
        .arg(home.path())
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("4 of 10 turn(s) eligible for `release-notes` (4 session(s)); 3 distinct prompt(s) to replay"),
        "{stderr}"
    );
    assert!(stderr.contains("claude-code:mystery-event (1)"), "{stderr}");
    let dir = project.path().join("shadow/s");
    let records: Vec<Value> = std::fs::read_to_string(dir.join("records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // s1's prompt folds into s3 (same prompt, the later kept); s2 pushed back; s4 undone.
    let summary: Vec<(String, usize, String, bool, bool)> = records
        .iter()
        .map(|r| {
            (
                r["session"].as_str().unwrap().to_string(),
                r["turn"].as_u64().unwrap() as usize,
                r["recorded"]["signal"].as_str().unwrap().to_string(),
                r["replay"]["skill_activated"].as_bool().unwrap(),
                r["comparison"]["differs"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("s2".into(), 1, "pushed_back".into(), true, true),
            ("s3".into(), 1, "moved_on".into(), true, false),
            ("s4".into(), 1, "undone".into(), true, true),
        ]
    );
    assert_eq!(records[1]["occurrences"], 2);
    assert_eq!(records[1]["recorded"]["answer"], "Notes again.");
    assert_eq!(records[1]["replay"]["answer"], "Notes again.");
    assert_eq!(records[1]["eligibility"][0]["rule"], "terms");
    assert!(
        records[1]["prompt"].as_str().unwrap().contains("[REDACTED"),
        "{}",
        records[1]["prompt"]
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["counts"]["eligible_turns"], 4);
    assert_eq!(summary["counts"]["duplicates"], 1);
    assert_eq!(summary["activation"]["successes"], 3);
    assert_eq!(summary["activation"]["trials"], 3);
    // Wilson 95% for 3/3: [0.4385, 1].
    let low = summary["activation"]["interval"]["low"].as_f64().unwrap();
    assert!((low - 0.4385).abs() < 1e-3, "{low}");
    assert_eq!(summary["differs"]["successes"], 2);
    assert_eq!(summary["agrees_with_kept"]["successes"], 1);
    assert_eq!(summary["agrees_with_kept"]["trials"], 1);
    assert_eq!(summary["avoids_rejected"]["successes"], 2);
    assert_eq!(summary["unknown_events"]["claude-code:mystery-event"], 1);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["kind"], "shadow");
    assert_eq!(manifest["write_type"]["write_type"], false);
    assert_eq!(manifest["workspace"]["mode"], "throwaway");
    assert!(
        stdout.contains("| activation rate | 100% (3/3; 95% CI 44–100%) |"),
        "{stdout}"
    );
    assert!(dir.join("report.md").is_file());
    // The planted secret and the home folder reach no written file, nor the model server.
    for path in every_file(&dir) {
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(SECRET), "{}", path.display());
        assert!(!text.contains("/home/alice"), "{}", path.display());
    }
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));

    // No eligible turn: a distinct exit code, a plain message, nothing written.
    write(
        &project.path().join("tax/SKILL.md"),
        "---\nname: tax-forms\ndescription: Use when filing quarterly tax forms.\n---\nBody\n",
    );
    let output = binary(state.path())
        .current_dir(project.path())
        .args(["shadow", "tax", "--host", "claude-code", "--runner", "mock"])
        .args(["--out", "none"])
        .arg("--history-root")
        .arg(home.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", streams(&output).1);
    assert!(
        streams(&output).1.contains("no eligible turn"),
        "{}",
        streams(&output).1
    );
    assert!(!project.path().join("none").exists());
}

/// A runner that cannot call tools (the local model's `tool_calls = false`) cannot show which
/// skill a replay activated: `shadow` says so and exits 4 before replaying anything.
#[test]
fn shadow_on_a_runner_that_cannot_call_tools_is_nothing_to_measure() {
    let state = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockBehaviour::default());
    let project = shadow_project(&server.base_url(), "", "Group the changes. SKILL-MARKER");
    let mock = std::fs::read_to_string(project.path().join("runners/mock.toml")).unwrap();
    write(
        &project.path().join("runners/notools.toml"),
        &format!("{mock}tool_calls = false\n"),
    );
    let home = tempfile::tempdir().unwrap();
    plant(home.path(), "claude-code");
    let output = binary(state.path())
        .current_dir(project.path())
        .args([
            "shadow",
            "release-notes",
            "--host",
            "claude-code",
            "--since",
            "2026-01-01",
        ])
        .args(["--runner", "notools", "--out", "shadow"])
        .arg("--history-root")
        .arg(home.path())
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(4), "{stdout}{stderr}");
    assert!(
        stderr.contains("cannot call tools") && stderr.contains("nothing to measure"),
        "{stderr}"
    );
    assert!(!stdout.contains("activation rate"), "{stdout}");
    assert_eq!(server.requests(), 0);
    assert!(!project.path().join("shadow").exists());
}

#[test]
fn shadow_replays_write_type_skills_only_in_throwaway_workspaces() {
    let state = tempfile::tempdir().unwrap();
    // The user's real project, as the recorded sessions' folder.
    let real = tempfile::tempdir().unwrap();
    write(&real.path().join("keep.txt"), "original\n");
    write(&real.path().join("NOTES.md"), "original notes\n");
    let home = tempfile::tempdir().unwrap();
    plant(home.path(), "claude-code");
    for path in every_file(home.path()) {
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replace("/home/alice/app", &real.path().to_string_lossy()),
        )
        .unwrap();
    }
    // A fake agent that writes and deletes in its working folder, then uses the skill.
    let project = shadow_project(
        "http://127.0.0.1:9",
        "allowed-tools: Read Write Bash\n",
        "Delete the old NOTES.md and write a new one. SKILL-MARKER",
    );
    let log = project.path().join("cwds.log");
    let agent = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_agent.py");
    write(
        &project.path().join("runners/writer.toml"),
        &format!(
            "kind = \"command\"\nmodel = \"fake-model\"\ncommand = [\"sh\", \"-c\", \"echo REPLAYED > NOTES.md; rm -f keep.txt; pwd >> \\\"$0\\\"; exec python3 \\\"$1\\\" skill-aware \\\"$2\\\" release-notes\", \"{}\", \"{}\", \"{{skills_dir}}\"]\noutput_format = \"claude-stream-json\"\nskills_dir = \".claude/skills\"\ntimeout_s = 30\nconcurrency = 2\n",
            log.display(),
            agent.display()
        ),
    );
    let shadow = |extra: &[&str]| {
        binary(state.path())
            .current_dir(project.path())
            .args([
                "shadow",
                "release-notes",
                "--host",
                "claude",
                "--runner",
                "writer",
            ])
            .args(["--since", "2026-01-01", "--out", "shadow", "--no-preflight"])
            .args(extra)
            .arg("--history-root")
            .arg(home.path())
            .output()
            .unwrap()
    };
    // Write-type with a runner that runs commands: consent first.
    let output = shadow(&[]);
    assert_eq!(output.status.code(), Some(2), "{}", streams(&output).1);
    let stderr = streams(&output).1;
    assert!(stderr.contains("is a write-type skill"), "{stderr}");
    assert!(stderr.contains("allowed-tools names `Write`"), "{stderr}");
    assert!(stderr.contains("--allow-writes"), "{stderr}");
    // A workspace root inside the recorded project is refused, --allow-writes or not.
    let inside = real.path().join("tmp");
    std::fs::create_dir(&inside).unwrap();
    let output = shadow(&[
        "--allow-writes",
        "--workspace-root",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", streams(&output).1);
    assert!(
        streams(&output)
            .1
            .contains("replays never run in a user's project")
    );
    std::fs::remove_dir(&inside).unwrap();
    // With consent: replayed, each in a fresh folder; the real project is untouched.
    let output = shadow(&["--allow-writes", "--run-id", "w"]);
    assert_eq!(output.status.code(), Some(0), "{}", streams(&output).1);
    assert_eq!(
        std::fs::read_to_string(real.path().join("keep.txt")).unwrap(),
        "original\n"
    );
    assert_eq!(
        std::fs::read_to_string(real.path().join("NOTES.md")).unwrap(),
        "original notes\n"
    );
    let cwds = std::fs::read_to_string(&log).unwrap();
    let cwds: Vec<&str> = cwds.lines().collect();
    assert_eq!(cwds.len(), 3, "{cwds:?}");
    for cwd in &cwds {
        assert!(!Path::new(cwd).starts_with(real.path()), "{cwd}");
        assert!(
            !Path::new(cwd).exists(),
            "workspace {cwd} was not thrown away"
        );
    }
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("shadow/w/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["activation"]["successes"], 3, "{summary}");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("shadow/w/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["write_type"]["write_type"], true);
    assert_eq!(manifest["write_type"]["allow_writes"], true);
}

/// One Claude Code session of `turns` (prompt, skill activated) starting at `start`, one minute
/// apart.
fn write_claude_at(
    home: &Path,
    id: &str,
    start: chrono::DateTime<chrono::Utc>,
    turns: &[(&str, bool)],
) {
    let stamp = |minute: usize, second: i64| {
        (start + chrono::Duration::minutes(minute as i64) + chrono::Duration::seconds(second))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    let base = json!({"sessionId": id, "cwd": CWD, "isSidechain": false, "version": "2.1.0"});
    let with = |extra: Value| {
        let mut line = base.clone();
        for (key, value) in extra.as_object().unwrap() {
            line[key] = value.clone();
        }
        line
    };
    let mut lines = Vec::new();
    for (index, (prompt, activated)) in turns.iter().enumerate() {
        lines.push(with(json!({"type": "user", "timestamp": stamp(index, 0),
            "message": {"role": "user", "content": prompt}})));
        if *activated {
            lines.push(with(json!({"type": "assistant", "timestamp": stamp(index, 1),
                "message": {"id": format!("m{index}a"), "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "tool_use", "id": format!("t{index}"), "name": "Skill", "input": {"skill": "notes"}}],
                    "usage": {"input_tokens": 1000, "output_tokens": 100}}})));
            lines.push(with(json!({"type": "user", "timestamp": stamp(index, 2),
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{index}"), "content": "Launching skill: notes"}]},
                "toolUseResult": {"success": true, "commandName": "notes"}})));
        }
        lines.push(with(json!({"type": "assistant", "timestamp": stamp(index, 5),
            "message": {"id": format!("m{index}b"), "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "Done."}],
                "usage": {"input_tokens": 500, "output_tokens": 50}}})));
    }
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    write(
        &home.join(format!(".claude/projects/-home-alice-app/{id}.jsonl")),
        &(text.join("\n") + "\n"),
    );
}

/// A value-series line for `notes` on `date` with net value `net` (USD per 30 days).
fn series_line(date: chrono::NaiveDate, net: f64) -> String {
    json!({"date": date, "skill": "notes", "net_usd_per_30d": net, "negative": net < 0.0,
        "driver": if net < 0.0 { json!("cost") } else { Value::Null }, "lift": 0.5,
        "frequency_per_30d": 18.0, "marginal_cost_usd": 0.03, "judge_usd_per_30d": 0.08,
        "value_per_success_usd": 0.01, "run": "run-1"})
    .to_string()
}

/// Issue 34: the value card nets the measured lift, the task frequency from session history
/// and the priced marginal cost, keeps a dated series, and suggests rewrite/retire only after
/// 90 consecutive days of negative value.
#[test]
fn status_dashboard_value_card_nets_lift_frequency_and_cost_over_time() {
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        &root.path().join("notes/SKILL.md"),
        "---\nname: notes\ndescription: Drafts release notes from the git history.\n---\nBody\n",
    );
    let scan = binary(state.path())
        .args(["scan", "--host", "claude-code", "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    assert_eq!(scan.status.code(), Some(0), "{}", streams(&scan).1);
    let registry: Value = serde_json::from_str(
        &std::fs::read_to_string(state.path().join("registry.claude-code.json")).unwrap(),
    )
    .unwrap();
    let fingerprint = registry["assets"]["notes"]["fingerprint"].as_str().unwrap();
    // The recorded run: 4 cases, K = 1. With the skill: pass, pass, pass, fail; without:
    // pass, fail, fail, fail → lift (0 + 1 + 1 + 0) / 4 = 0.5 successes per task. Each
    // with-skill trial cost 0.05 USD, each without-skill trial 0.02 → C = 0.03 USD per task;
    // the judge spent 0.01 USD on each of the 8 trials → J = 0.08 USD in the last 30 days.
    let now = chrono::Utc::now();
    let mut entries = Vec::new();
    for (case, with, without) in [
        ("c1", "pass", "pass"),
        ("c2", "pass", "fail"),
        ("c3", "pass", "fail"),
        ("c4", "fail", "fail"),
    ] {
        for (arm, verdict, cost) in [("with_skill", with, 0.05), ("without_skill", without, 0.02)] {
            entries.push(
                json!({"fingerprint": fingerprint, "calibre": "v4-no-eval-material",
                "model": "m", "runner": "r", "case_id": case, "arm": arm, "attempt": 1,
                "verdict": verdict, "source": "run", "run_id": "run-1", "recorded_at": now,
                "cost_usd": cost, "judge_cost_usd": 0.01}),
            );
        }
    }
    write(
        &state.path().join("baseline-results.json"),
        &json!({"schema_version": 1, "assets": {"notes": {"entries": entries}}}).to_string(),
    );
    // The history: 6 matching turns over the 10 days it covers (5 activated the skill, one
    // names the task in two trigger terms), plus 2 turns that do not match → F = 6 × 30 / 10
    // = 18 tasks per 30 days.
    write_claude_at(
        home.path(),
        "old",
        now - chrono::Duration::days(10),
        &[
            ("Draft it", true),
            ("again", true),
            ("what is the weather", false),
        ],
    );
    write_claude_at(
        home.path(),
        "new",
        now - chrono::Duration::days(1),
        &[
            ("go", true),
            ("go on", true),
            ("and once more", true),
            ("please draft the release notes for 2.0", false),
            ("thanks, bye", false),
        ],
    );
    let status = |value: &str| {
        binary(state.path())
            .args(["status", "--host", "claude-code", "--dashboard", "--json"])
            .args(["--value-per-success", value, "--history-root"])
            .arg(home.path())
            .output()
            .unwrap()
    };
    let card_of = |output: &std::process::Output| {
        let (stdout, stderr) = streams(output);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        let status: Value = serde_json::from_str(&stdout).unwrap();
        status["value"]["cards"][0].clone()
    };
    // 0.10 USD per success: F × L × V − (F × C + J) = 18 × 0.5 × 0.10 − (18 × 0.03 + 0.08)
    // = 0.90 − 0.62 = +0.28 USD per 30 days.
    let card = card_of(&status("0.10"));
    let close = |value: &Value, expected: f64| {
        let value = value.as_f64().unwrap_or(f64::NAN);
        (value - expected).abs() < 1e-3
    };
    assert_eq!(card["skill"], "notes");
    assert_eq!(card["matching_turns"], 6, "{card}");
    assert!(
        close(&card["frequency_per_30d"]["estimate"], 18.0),
        "{card}"
    );
    assert!(close(&card["lift"]["estimate"], 0.5), "{card}");
    assert!(close(&card["marginal_cost_usd"], 0.03), "{card}");
    assert!(close(&card["judge_usd_per_30d"], 0.08), "{card}");
    assert!(
        close(&card["net"]["net_usd_per_30d"]["estimate"], 0.28),
        "{card}"
    );
    assert!(
        close(&card["net"]["extra_successes_per_30d"]["estimate"], 9.0),
        "{card}"
    );
    assert!(close(&card["success_rate"], 0.75), "{card}");
    assert_eq!(card["calls"], 5, "{card}");
    assert!(
        card["net"]["net_usd_per_30d"]["interval"]["low"].is_f64(),
        "{card}"
    );
    assert_eq!(card["suggestion"], Value::Null);
    // One point per skill and day: a second computation today replaces the first.
    let series_file = state.path().join("value-series.claude-code.jsonl");
    let card = card_of(&status("0.10"));
    assert!(
        close(&card["net"]["net_usd_per_30d"]["estimate"], 0.28),
        "{card}"
    );
    assert_eq!(
        std::fs::read_to_string(&series_file)
            .unwrap()
            .lines()
            .count(),
        1
    );

    // 0.01 USD per success: 0.09 − 0.62 = −0.53, driven by cost (0.5 × 0.01 < 0.03).
    // 88 negative days before today after a positive one: today is day 89 — no suggestion.
    let today = now.date_naive();
    let mut lines = vec![series_line(today - chrono::Duration::days(89), 1.0)];
    lines.extend(
        (1..=88)
            .rev()
            .map(|n| series_line(today - chrono::Duration::days(n), -0.5)),
    );
    write(&series_file, &(lines.join("\n") + "\n"));
    let card = card_of(&status("0.01"));
    assert!(
        close(&card["net"]["net_usd_per_30d"]["estimate"], -0.53),
        "{card}"
    );
    assert_eq!(card["net"]["driver"], "cost");
    assert_eq!(card["negative_streak"]["days"], 89, "{card}");
    assert_eq!(card["suggestion"], Value::Null, "{card}");
    // The 90th consecutive negative day: the suggestion fires and names its driver.
    lines[0] = series_line(today - chrono::Duration::days(89), -0.5);
    write(&series_file, &(lines.join("\n") + "\n"));
    let output = binary(state.path())
        .args(["status", "--host", "claude-code", "--dashboard"])
        .args(["--value-per-success", "0.01", "--history-root"])
        .arg(home.path())
        .output()
        .unwrap();
    let (stdout, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("notes: rewrite or retire — net value negative for 90 consecutive days")
            && stdout.contains("driven by cost"),
        "{stdout}"
    );
    assert!(
        stdout.contains("avg tokens") && stdout.contains("success"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&series_file)
            .unwrap()
            .lines()
            .count(),
        90
    );
    // A positive day resets it.
    let card = card_of(&status("0.10"));
    assert_eq!(card["negative_streak"], Value::Null, "{card}");
    assert_eq!(card["suggestion"], Value::Null, "{card}");
    // A malformed series: a clear error naming the file and line, and the file is kept.
    let mut text = std::fs::read_to_string(&series_file).unwrap();
    text.push_str("{not json\n");
    std::fs::write(&series_file, &text).unwrap();
    let output = status("0.10");
    let (_, stderr) = streams(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("value-series.claude-code.jsonl:91: not a value-series point"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&series_file).unwrap(), text);
}
