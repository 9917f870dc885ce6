//! Reading a host's model identity from the four places it can be seen, and the workflow that
//! compares it with the host's last bump: [`watch_model`], which `check` and `monitor` call.
//!
//! | source | read from | observation time |
//! |---|---|---|
//! | trial records | the baseline store's run verdicts of the host's assets: `observed_model` (what the server or agent CLI reported), else the model requested | the trial's start (`recorded_at` for entries stored before it was kept) |
//! | session history | `crate::features::history` of the host's agent (claude-code, codex, gemini, opencode): each session's model | the session's last event |
//! | `GET /models` | each HTTP runner profile named with `--runner` | the read |
//! | agent config | the agent's settings file (`~/.claude/settings.json` `model`, `$CODEX_HOME/config.toml` `model`, `~/.gemini/settings.json` `model.name`, `~/.config/opencode/opencode.json[c]` `model`) and `PROGRAM --version` | the file's modification time |
//!
//! Nothing here fails because a source cannot be read: each source ends in a [`SourceReport`]
//! saying it was read, absent, or unreadable (and why); only the state folder's own files are
//! errors. A model set only through an environment variable or `--model` is not in any
//! settings file: trial records and history see it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::RegistryError;
use super::baseline::{BaselineStore, EntrySource};
use super::identity::{
    Decision, EvidenceSource, ModelChange, ModelObservation, SourceReport, SourceState, decide,
    same_model,
};
use super::models::{ModelBump, record_detected};
use super::scan::Registry;
use crate::features::history::{HistoryHost, HistoryRoots};

/// Longest wait for an agent CLI's `--version` during `check`.
pub const CHECK_VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// What [`watch_model`] reads and whether it records what it finds.
#[derive(Debug, Clone, Default)]
pub struct WatchSettings {
    /// A folder standing in for the home folder whose session history and agent settings are
    /// read (`--history-root`); `None`: `SKILL_LIFT_HISTORY_ROOT`, else the real home with the
    /// agents' own variables (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `XDG_CONFIG_HOME`).
    pub history_root: Option<PathBuf>,
    /// Runner profiles (names or paths) whose `GET /models` is read; when given, only their
    /// trial records count. Empty: every runner's trial records, no endpoint.
    pub runners: Vec<String>,
    /// Record a detected change as a bump (`check`'s default; `--no-auto-bump` turns it off).
    pub record: bool,
}

/// What [`watch_model`] found on one host.
#[derive(Debug, Clone, Serialize)]
pub struct ModelWatch {
    /// The host.
    pub host: String,
    /// The last bump before this check.
    pub last_bump: Option<ModelBump>,
    /// The decision over every observation ([`decide`]).
    #[serde(flatten)]
    pub decision: Decision,
    /// The bump recorded for the change (`None` with `--no-auto-bump`, without a change, or
    /// when another process recorded one first).
    pub recorded: Option<ModelBump>,
    /// What each source gave, in [`EvidenceSource`] order.
    pub sources: Vec<SourceReport>,
}

impl ModelWatch {
    /// The change from a bumped model to another (not the identification of a host's first
    /// model, which has nothing to change from).
    pub fn change(&self) -> Option<&ModelChange> {
        self.decision
            .change
            .as_ref()
            .filter(|change| change.from.is_some())
    }

    /// The sources that exist but could not be read.
    pub fn unreadable(&self) -> Vec<&SourceReport> {
        self.sources.iter().filter(|s| s.is_unreadable()).collect()
    }
}

/// Observe `registry`'s host (its assets' verdicts in `store`, its agent's history and
/// settings, the runners of `settings`), decide whether its model changed since the last bump,
/// and record the change as a detected bump when `settings.record` says so. This is the whole of
/// the model watch of `skill-lift check`; `skill-lift monitor` calls it to learn what a change
/// left pending.
pub async fn watch_model(
    state: &Path,
    registry: &Registry,
    store: &BaselineStore,
    settings: &WatchSettings,
) -> Result<ModelWatch, RegistryError> {
    let host = registry.host.as_str();
    let last_bump = registry.model_bumps.last().cloned();
    let mut observations = Vec::new();
    let mut sources = Vec::new();
    let (found, report) = trial_records(registry, store, &settings.runners);
    observations.extend(found);
    sources.push(report);
    let roots = HistoryRoots::resolve(settings.history_root.as_deref());
    let agent = HistoryHost::parse(host).ok();
    let (found, report) = session_history(host, agent, roots.as_ref());
    observations.extend(found);
    sources.push(report);
    let bumped = last_bump.as_ref().map(|b| b.model.as_str());
    for runner in &settings.runners {
        let (found, report) = models_endpoint(runner, bumped).await;
        observations.extend(found);
        sources.push(report);
    }
    let (found, report) = agent_config(host, agent, roots.as_ref()).await;
    observations.extend(found);
    sources.push(report);
    let decision = decide(last_bump.as_ref(), &observations);
    let recorded = match (&decision.change, settings.record) {
        (Some(change), true) => record_detected(state, host, last_bump.as_ref(), change)?,
        _ => None,
    };
    Ok(ModelWatch {
        host: host.to_string(),
        last_bump,
        decision,
        recorded,
        sources,
    })
}

/// A source report.
fn report(
    source: EvidenceSource,
    name: &str,
    state: SourceState,
    detail: Option<String>,
) -> SourceReport {
    SourceReport {
        source,
        name: name.to_string(),
        state,
        detail,
    }
}

/// Source (a): the run verdicts of the host's assets (of `runners` only, when given).
fn trial_records(
    registry: &Registry,
    store: &BaselineStore,
    runners: &[String],
) -> (Vec<ModelObservation>, SourceReport) {
    let runner_names: Vec<String> = runners
        .iter()
        .map(|r| {
            Path::new(r)
                .file_stem()
                .map_or(r.clone(), |s| s.to_string_lossy().into_owned())
        })
        .collect();
    let mut observations = Vec::new();
    for asset in registry.assets.keys() {
        let Some(baseline) = store.assets.get(asset) else {
            continue;
        };
        for entry in &baseline.entries {
            if entry.source != EntrySource::Run
                || (!runner_names.is_empty() && !runner_names.contains(&entry.runner))
            {
                continue;
            }
            let model = entry.observed_model.as_ref().unwrap_or(&entry.model);
            let detail = match &entry.observed_model {
                Some(observed) if !same_model(observed, &entry.model) => {
                    Some(format!("requested {}", entry.model))
                }
                Some(_) => None,
                None => Some("the model requested; the server reported none".to_string()),
            };
            observations.push(ModelObservation {
                source: EvidenceSource::TrialRecord,
                model: model.clone(),
                at: entry.trial_at.unwrap_or(entry.recorded_at),
                seen_in: format!(
                    "run {} ({asset} {}/{}/{}, runner {})",
                    entry.run_id.as_deref().unwrap_or("-"),
                    entry.case_id,
                    entry.arm,
                    entry.attempt,
                    entry.runner
                ),
                detail,
            });
        }
    }
    let state = if observations.is_empty() {
        SourceState::Absent {
            reason: "no run verdict of the host's assets in the baseline store".to_string(),
        }
    } else {
        SourceState::Read {
            observations: observations.len(),
        }
    };
    let name = if runner_names.is_empty() {
        "baseline store".to_string()
    } else {
        format!("baseline store, runners {}", runner_names.join(", "))
    };
    (
        observations,
        report(EvidenceSource::TrialRecord, &name, state, None),
    )
}

/// Source (d): the model of each session in the host agent's history.
fn session_history(
    host: &str,
    agent: Option<HistoryHost>,
    roots: Result<&HistoryRoots, &crate::features::history::HistoryError>,
) -> (Vec<ModelObservation>, SourceReport) {
    let source = EvidenceSource::SessionHistory;
    let Some(agent) = agent else {
        let reason = format!(
            "skill-lift reads no session history of host `{host}` (claude-code, codex, gemini, opencode)"
        );
        return (
            Vec::new(),
            report(source, host, SourceState::Absent { reason }, None),
        );
    };
    let roots = match roots {
        Ok(roots) => roots,
        Err(error) => {
            let reason = error.to_string();
            return (
                Vec::new(),
                report(source, host, SourceState::Unreadable { reason }, None),
            );
        }
    };
    let read = match crate::features::history::read_history(agent, roots, None) {
        Ok(read) => read,
        Err(error) => {
            let reason = error.to_string();
            return (
                Vec::new(),
                report(source, host, SourceState::Unreadable { reason }, None),
            );
        }
    };
    if !read.folder_exists {
        let reason = format!("no history folder {}", read.folder.display());
        return (
            Vec::new(),
            report(source, host, SourceState::Absent { reason }, None),
        );
    }
    let mut observations = Vec::new();
    for session in &read.sessions {
        let (Some(model), Some(at)) = (
            &session.model,
            session
                .turns
                .iter()
                .filter_map(|t| t.ended.or(t.at))
                .max()
                .or(session.started),
        ) else {
            continue;
        };
        observations.push(ModelObservation {
            source,
            model: model.clone(),
            at,
            seen_in: session.file.display().to_string(),
            detail: None,
        });
    }
    let detail = format!(
        "{} session(s) in {}, {} naming a model{}",
        read.sessions.len(),
        read.folder.display(),
        observations.len(),
        if read.malformed.is_empty() {
            String::new()
        } else {
            format!("; {} line(s) or file(s) unreadable", read.malformed.len())
        }
    );
    let state = SourceState::Read {
        observations: observations.len(),
    };
    (observations, report(source, host, state, Some(detail)))
}

/// Source (b): `GET /models` of the runner profile `runner`, and which model it says is served:
/// the bumped model when listed, the only model listed, or the profile's own model when listed;
/// otherwise it cannot tell (unreadable, naming what it lists).
async fn models_endpoint(
    runner: &str,
    bumped: Option<&str>,
) -> (Vec<ModelObservation>, SourceReport) {
    let source = EvidenceSource::ModelsEndpoint;
    let unreadable = |reason: String| {
        (
            Vec::new(),
            report(source, runner, SourceState::Unreadable { reason }, None),
        )
    };
    let loaded = match crate::features::runner::profile::locate_profile(runner)
        .and_then(|location| crate::features::runner::profile::load_profile(&location.path))
    {
        Ok(loaded) => loaded,
        Err(error) => return unreadable(error.to_string()),
    };
    if loaded.profile.kind.is_agent_cli() {
        let reason = format!(
            "`{}` is an agent CLI profile: its model shows in trial records, not in GET /models",
            loaded.name
        );
        return (
            Vec::new(),
            report(source, &loaded.name, SourceState::Absent { reason }, None),
        );
    }
    let api_key = loaded
        .profile
        .api_key_env
        .as_deref()
        .and_then(|name| std::env::var(name).ok())
        .filter(|key| !key.is_empty());
    let listing =
        match crate::features::runner::preflight::list_models(&loaded, api_key.as_deref()).await {
            Ok(listing) => listing,
            Err(error) => return unreadable(error.to_string()),
        };
    let ids = &listing.ids;
    let listed = |model: &str| ids.iter().find(|id| same_model(id, model)).cloned();
    let preview = || {
        let mut shown: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
        if ids.len() > 5 {
            shown.push("…");
        }
        shown.join(", ")
    };
    let (model, detail) = if let Some(model) = bumped.and_then(listed) {
        (model, format!("listed among {} model(s)", ids.len()))
    } else if ids.len() == 1 {
        (ids[0].clone(), "the only model listed".to_string())
    } else if let Some(model) = listed(&loaded.profile.model) {
        (
            model,
            format!(
                "the profile's model, listed among {}; {} is not",
                ids.len(),
                bumped.unwrap_or("no bumped model")
            ),
        )
    } else if ids.is_empty() {
        return unreadable(format!("{} lists no model", listing.url));
    } else {
        return unreadable(format!(
            "{} lists {} model(s) ({}), neither {} nor the profile's `{}`: which one answers cannot be told",
            listing.url,
            ids.len(),
            preview(),
            bumped.unwrap_or("a bumped model"),
            loaded.profile.model
        ));
    };
    let observation = ModelObservation {
        source,
        model,
        at: Utc::now(),
        seen_in: listing.url.clone(),
        detail: Some(detail),
    };
    (
        vec![observation],
        report(
            source,
            &loaded.name,
            SourceState::Read { observations: 1 },
            Some(format!("{} model(s) listed", ids.len())),
        ),
    )
}

/// The settings file of `agent` under `roots` (the agents' own variables apply to the real home
/// only), and the program that answers `--version`.
fn agent_settings(agent: HistoryHost, roots: &HistoryRoots) -> (Vec<PathBuf>, &'static str) {
    let env = |name: &str| match roots {
        HistoryRoots::Home(_) => std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        HistoryRoots::StandIn(_) => None,
    };
    let home = roots.home();
    match agent {
        HistoryHost::ClaudeCode => (
            vec![
                env("CLAUDE_CONFIG_DIR")
                    .unwrap_or_else(|| home.join(".claude"))
                    .join("settings.json"),
            ],
            "claude",
        ),
        HistoryHost::Codex => (
            vec![
                env("CODEX_HOME")
                    .unwrap_or_else(|| home.join(".codex"))
                    .join("config.toml"),
            ],
            "codex",
        ),
        HistoryHost::Gemini => (vec![home.join(".gemini/settings.json")], "gemini"),
        HistoryHost::Opencode => {
            let dir = env("XDG_CONFIG_HOME")
                .unwrap_or_else(|| home.join(".config"))
                .join("opencode");
            (
                vec![dir.join("opencode.json"), dir.join("opencode.jsonc")],
                "opencode",
            )
        }
    }
}

/// Why a settings file gave no model.
#[derive(Debug, thiserror::Error)]
enum SettingsError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not valid {format}: {message}", path.display())]
    Parse {
        path: PathBuf,
        format: &'static str,
        message: String,
    },
}

/// The model a settings file of `agent` sets (`None`: it sets none), and the file's
/// modification time.
fn configured_model(
    agent: HistoryHost,
    path: &Path,
) -> Result<(Option<String>, DateTime<Utc>), SettingsError> {
    let io = |source| SettingsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = std::fs::read_to_string(path).map_err(io)?;
    let modified: DateTime<Utc> = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(io)?
        .into();
    let parse = |format: &'static str, message: String| SettingsError::Parse {
        path: path.to_path_buf(),
        format,
        message,
    };
    let model = match agent {
        HistoryHost::Codex => {
            let table: toml::Table = text
                .parse()
                .map_err(|e: toml::de::Error| parse("TOML", e.message().to_string()))?;
            table
                .get("model")
                .and_then(toml::Value::as_str)
                .map(str::to_string)
        }
        _ => {
            let text = if path.extension().is_some_and(|e| e == "jsonc") {
                strip_jsonc(&text)
            } else {
                text
            };
            let value: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| parse("JSON", e.to_string()))?;
            let model = &value["model"];
            // Gemini CLI's settings since 09/2025 nest it (`model.name`); before, a string.
            model
                .as_str()
                .or_else(|| model["name"].as_str())
                .map(str::to_string)
        }
    };
    Ok((model.filter(|m| !m.trim().is_empty()), modified))
}

/// JSON with comments (`//`, `/* */`) and trailing commas, as OpenCode's `opencode.jsonc`
/// allows, made plain JSON. Strings are left alone.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for next in chars.by_ref() {
                    if next == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for next in chars.by_ref() {
                    if last == '*' && next == '/' {
                        break;
                    }
                    last = next;
                }
            }
            (',', _) => {
                // A comma followed only by whitespace and a closing bracket is dropped.
                let rest: String = chars.clone().collect();
                let next = rest.trim_start().chars().next();
                if !matches!(next, Some('}' | ']')) {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Source (c): the agent CLI's configured model and its version.
async fn agent_config(
    host: &str,
    agent: Option<HistoryHost>,
    roots: Result<&HistoryRoots, &crate::features::history::HistoryError>,
) -> (Vec<ModelObservation>, SourceReport) {
    let source = EvidenceSource::AgentConfig;
    let Some(agent) = agent else {
        let reason = format!(
            "skill-lift reads no agent settings of host `{host}` (claude-code, codex, gemini, opencode)"
        );
        return (
            Vec::new(),
            report(source, host, SourceState::Absent { reason }, None),
        );
    };
    let roots = match roots {
        Ok(roots) => roots,
        Err(error) => {
            let reason = error.to_string();
            return (
                Vec::new(),
                report(source, host, SourceState::Unreadable { reason }, None),
            );
        }
    };
    let (files, program) = agent_settings(agent, roots);
    let version = cli_version(program).await;
    let mut state = SourceState::Absent {
        reason: format!(
            "no settings file ({})",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut observations = Vec::new();
    let mut notes = vec![version.clone()];
    for file in files.iter().filter(|f| f.is_file()) {
        match configured_model(agent, file) {
            Ok((Some(model), at)) => {
                observations.push(ModelObservation {
                    source,
                    model,
                    at,
                    seen_in: file.display().to_string(),
                    detail: Some(version.clone()),
                });
                state = SourceState::Read { observations: 1 };
                break;
            }
            Ok((None, _)) => {
                notes.push(format!(
                    "{} sets no model (the CLI's default applies)",
                    file.display()
                ));
                state = SourceState::Read { observations: 0 };
            }
            Err(error) => {
                state = SourceState::Unreadable {
                    reason: error.to_string(),
                };
                break;
            }
        }
    }
    (
        observations,
        report(source, agent.as_str(), state, Some(notes.join("; "))),
    )
}

/// `PROGRAM --version` of the agent CLI on `PATH`, in words (a version, or why there is none).
async fn cli_version(program: &str) -> String {
    let path_variable = std::env::var("PATH").ok();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let Some(resolved) = crate::features::contain::resolve_program(
        Path::new(program),
        path_variable.as_deref(),
        &cwd,
    ) else {
        return format!("`{program}` not on PATH");
    };
    match crate::features::runner::preflight::program_version(
        &resolved,
        path_variable.as_deref(),
        CHECK_VERSION_TIMEOUT,
    )
    .await
    {
        Ok(line) => format!("{program} --version: {line}"),
        Err(error) => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_loses_comments_and_trailing_commas_but_not_strings() {
        let text = "{\n  // the default\n  \"model\": \"anthropic/claude-sonnet-4-5\", /* x */\n  \"url\": \"http://a//b\",\n}\n";
        let value: serde_json::Value = serde_json::from_str(&strip_jsonc(text)).unwrap();
        assert_eq!(value["model"], "anthropic/claude-sonnet-4-5");
        assert_eq!(value["url"], "http://a//b");
    }

    #[test]
    fn each_agent_settings_file_gives_its_model() {
        let home = tempfile::tempdir().unwrap();
        let roots = HistoryRoots::StandIn(home.path().to_path_buf());
        let write = |relative: &str, text: &str| {
            let path = home.path().join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        };
        write(".claude/settings.json", r#"{"model": "opus", "env": {}}"#);
        write(
            ".codex/config.toml",
            "model = \"gpt-5-codex\"\n[x]\ny = 1\n",
        );
        write(
            ".gemini/settings.json",
            r#"{"model": {"name": "gemini-2.5-pro"}}"#,
        );
        write(
            ".config/opencode/opencode.jsonc",
            "{ // c\n \"model\": \"anthropic/claude-sonnet-4-5\",\n}",
        );
        for (agent, model) in [
            (HistoryHost::ClaudeCode, "opus"),
            (HistoryHost::Codex, "gpt-5-codex"),
            (HistoryHost::Gemini, "gemini-2.5-pro"),
            (HistoryHost::Opencode, "anthropic/claude-sonnet-4-5"),
        ] {
            let (files, _) = agent_settings(agent, &roots);
            let file = files.iter().find(|f| f.is_file()).unwrap();
            let (found, _) = configured_model(agent, file).unwrap();
            assert_eq!(found.as_deref(), Some(model), "{agent}");
        }
        write(".claude/settings.json", r#"{"env": {}}"#);
        let (files, _) = agent_settings(HistoryHost::ClaudeCode, &roots);
        assert_eq!(
            configured_model(HistoryHost::ClaudeCode, &files[0])
                .unwrap()
                .0,
            None
        );
        write(".claude/settings.json", "{not json");
        let error = configured_model(HistoryHost::ClaudeCode, &files[0]).unwrap_err();
        assert!(error.to_string().contains("settings.json"), "{error}");
    }
}
