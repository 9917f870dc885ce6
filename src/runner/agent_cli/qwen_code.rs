//! The `qwen-code` kind (Qwen Code, verified with 0.24.4): its argv, environment and the
//! settings its fresh config folder gets. Everything else is the shared agent-CLI runner.
//!
//! With a `base_url` the CLI uses OpenAI-compatible auth (`--auth-type openai`,
//! `OPENAI_BASE_URL`, `OPENAI_API_KEY`). `--safe-mode` and `--bare` would drop skills: never
//! passed.

use std::path::Path;

use super::{AgentCli, EnvContext};
use crate::runner::RunnerProfile;
use crate::runner::parsers::{StreamParser, qwen::QWEN_STREAM_JSON};

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
