//! The `qwen-code` kind (Qwen Code, verified with 0.24.4): its argv, environment and the
//! settings its fresh config folder gets. Everything else is the shared agent-CLI runner.
//!
//! With a `base_url` the CLI uses OpenAI-compatible auth (`--auth-type openai`,
//! `OPENAI_BASE_URL`, `OPENAI_API_KEY`). `--safe-mode` and `--bare` would drop skills: never
//! passed.

use std::path::Path;

use super::{AgentCli, EnvContext};
use crate::features::runner::RunnerProfile;
use crate::features::runner::endpoint_probe::ProbeWire;
use crate::features::runner::parsers::{StreamParser, qwen::QWEN_STREAM_JSON};
use crate::values::trajectory::InfrastructureCause;

/// Qwen Code.
pub(crate) struct QwenCode;

impl AgentCli for QwenCode {
    fn name(&self) -> &'static str {
        "qwen-code"
    }

    fn program(&self) -> &'static str {
        PROGRAM
    }

    fn skills_dir(&self) -> &'static str {
        SKILLS_DIR
    }

    fn parser(&self, _profile: &RunnerProfile) -> &'static dyn StreamParser {
        &QWEN_STREAM_JSON
    }

    fn args(&self, profile: &RunnerProfile) -> Vec<String> {
        args(&profile.base_url)
    }

    fn config_variables(&self) -> &'static [(&'static str, &'static str)] {
        &[("QWEN_HOME", ".qwen")]
    }

    fn config_folders(&self) -> &'static [&'static str] {
        &[".qwen"]
    }

    fn environment(&self, env: &mut Vec<(String, String)>, context: &EnvContext<'_>) {
        environment(env, context.base, context.api_key);
    }

    fn prepare_home(&self, home: &Path) -> std::io::Result<()> {
        prepare_home(home)
    }

    fn recorded_failure(&self, home: &Path) -> Option<(InfrastructureCause, String)> {
        recorded_api_error(home)
    }

    fn probe_wire(&self) -> Option<ProbeWire> {
        Some(ProbeWire::OpenAiChat)
    }
}

/// The command name.
const PROGRAM: &str = "qwen";
/// Qwen Code's own project skills folder (it also reads `.agents/skills`).
const SKILLS_DIR: &str = ".qwen/skills";
/// The variable Qwen Code reads the OpenAI-compatible key from.
const KEY_VARIABLE: &str = "OPENAI_API_KEY";

/// Settings of the fresh `~/.qwen`: no background memory-extraction agent (a second model
/// call after the answer that writes memory files: not part of the task), no usage statistics
/// and no auto-update.
const SETTINGS: &str = r#"{"general":{"enableAutoUpdate":false},"privacy":{"usageStatisticsEnabled":false},"memory":{"enableManagedAutoMemory":false}}"#;

/// The headless arguments (placeholders filled by the runner). `--prompt=` (deprecated in
/// favour of the positional prompt, still accepted by the pinned version) keeps a prompt that
/// starts with `-` a value; the positional form cannot (`qwen -- "…"` reads stdin instead).
fn args(base: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "--prompt={prompt}",
        "-o",
        "stream-json",
        "--approval-mode",
        "yolo",
        "-m",
        "{model}",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    if !base.is_empty() {
        args.extend(["--auth-type".to_string(), "openai".to_string()]);
    }
    args
}

/// The kind's variables; `key` is the value of the profile's `api_key_env`, when set.
fn environment(env: &mut Vec<(String, String)>, base: &str, key: Option<&str>) {
    env.push(("QWEN_CODE_SUPPRESS_YOLO_WARNING".into(), "1".into()));
    env.push(("QWEN_USAGE_STATISTICS_ENABLED".into(), "false".into()));
    if base.is_empty() {
        return;
    }
    env.push(("OPENAI_BASE_URL".into(), base.to_string()));
    // A local server without keys still needs a non-empty one.
    env.push((KEY_VARIABLE.into(), key.unwrap_or("skill-lift").to_string()));
}

/// Write the settings of the fresh config folder (`$QWEN_HOME` = `<home>/.qwen`).
fn prepare_home(home: &Path) -> std::io::Result<()> {
    let folder = home.join(".qwen");
    std::fs::create_dir_all(&folder)?;
    let settings = folder.join("settings.json");
    if !settings.exists() {
        crate::disk::write(settings, SETTINGS).map_err(crate::disk::DiskError::into_io)?;
    }
    Ok(())
}

/// The last API failure Qwen Code recorded in its chat files under the fresh home
/// (`$QWEN_HOME/projects/<project>/chats/<session>.jsonl`), when no model answer was recorded
/// after it: its `qwen-code.api_error` telemetry record carries the HTTP status and the error
/// text of a request it is retrying without a word on stdout or stderr (a 429 or a 5xx).
/// Files over 16 MiB and unreadable lines are skipped.
fn recorded_api_error(home: &Path) -> Option<(InfrastructureCause, String)> {
    const MAX_CHAT_BYTES: u64 = 16 << 20;
    let projects = home.join(".qwen/projects");
    let mut last: Option<(String, Option<(InfrastructureCause, String)>)> = None;
    for project in std::fs::read_dir(projects).ok()?.flatten() {
        let Ok(chats) = std::fs::read_dir(project.path().join("chats")) else {
            continue;
        };
        for chat in chats.flatten() {
            let path = chat.path();
            if path.extension().is_none_or(|e| e != "jsonl")
                || chat.metadata().is_ok_and(|m| m.len() > MAX_CHAT_BYTES)
            {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for line in text.lines() {
                let Ok(record) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                let timestamp = record["timestamp"].as_str().unwrap_or("").to_string();
                if last.as_ref().is_some_and(|(at, _)| *at > timestamp) {
                    continue;
                }
                if let Some(found) = api_record(&record) {
                    last = Some((timestamp, found));
                }
            }
        }
    }
    last.and_then(|(_, found)| found)
}

/// What one chat record says about the API: `Some(None)` for a model answer (an assistant
/// turn, an `api_response`), `Some(Some(cause))` for an `api_error` naming a cause, `None` for
/// anything else.
fn api_record(record: &serde_json::Value) -> Option<Option<(InfrastructureCause, String)>> {
    if record["type"] == "assistant" {
        return Some(None);
    }
    if record["type"] != "system" || record["subtype"] != "ui_telemetry" {
        return None;
    }
    let event = &record["systemPayload"]["uiEvent"];
    match event["event.name"].as_str()? {
        "qwen-code.api_response" => Some(None),
        "qwen-code.api_error" => {
            let status = event["status_code"].as_u64();
            let message = event["error_message"].as_str().unwrap_or("");
            let cause = InfrastructureCause::of_error(status, message)?;
            let status = status.map_or_else(String::new, |s| format!("HTTP {s}: "));
            let text = crate::disk::redact::truncate(message.trim(), 300);
            Some(Some((
                cause,
                format!("Qwen Code recorded an API error it was retrying ({status}{text})"),
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(home: &Path, lines: &[&str]) {
        let folder = home.join(".qwen/projects/-w/chats");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("s.jsonl"), lines.join("\n")).unwrap();
    }

    const ERROR_429: &str = r#"{"timestamp":"2026-12-05T18:33:32.064Z","type":"system","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_error","model":"m1","error_message":"429 Rate limit reached for requests.","error_type":"RateLimitError","status_code":429}}}"#;
    const ANSWER: &str = r#"{"timestamp":"2026-12-05T18:33:40.000Z","type":"assistant","model":"m1","message":{"role":"model","parts":[{"text":"hi"}]}}"#;

    #[test]
    fn the_last_recorded_api_error_names_the_cause_unless_an_answer_followed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(recorded_api_error(dir.path()), None);
        chat(dir.path(), &["not json", ERROR_429]);
        let (cause, message) = recorded_api_error(dir.path()).unwrap();
        assert_eq!(cause, InfrastructureCause::RateLimited);
        assert!(message.contains("HTTP 429"), "{message}");
        chat(dir.path(), &[ERROR_429, ANSWER]);
        assert_eq!(recorded_api_error(dir.path()), None);
        let server = ERROR_429
            .replace(
                "429 Rate limit reached for requests.",
                "500 Internal server error",
            )
            .replace("\"status_code\":429", "\"status_code\":500")
            .replace("18:33:32", "18:33:50");
        chat(dir.path(), &[ANSWER, &server]);
        assert_eq!(
            recorded_api_error(dir.path()).map(|(cause, _)| cause),
            Some(InfrastructureCause::ServerError)
        );
    }
}
