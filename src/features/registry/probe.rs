//! Passive runtime evidence: read what hosts already log, never start a host.
//!
//! Host logs (`logs` glob of the profile; the file-name part may hold `*`/`?`): lines
//! `<iso-time> [level] [source] message` are attributed to an installed asset when `source`
//! names it, and flagged when they match the failure vocabulary. Claude Code session transcripts
//! (`~/.claude/projects/*/*.jsonl`): `Skill` tool calls are counted per skill, with the calls
//! whose tool result came back as an error.
//!
//! Blind spots: an asset that logs nothing is invisible; log rotation erases old failures; an
//! asset nobody used has no evidence; failures logged at info level are found only by keyword,
//! so both misses and false alarms are possible. Absence of evidence is not evidence of health.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::RegistryError;

/// The sentence printed wherever a probe finds nothing.
pub const ABSENCE: &str = "absence of evidence is not evidence of health";

/// The blind spots, listed in help text and reports.
pub const BLIND_SPOTS: [&str; 4] = [
    "an asset that logs nothing is invisible",
    "log rotation erases old failures",
    "an asset nobody used has no evidence",
    "failures logged at info level are found by keyword only: misses and false alarms are possible",
];

static LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\S+)\s+\[([^\]]*)\]\s+\[([^\]]+)\]\s?(.*)$").expect("valid pattern")
});

/// The failure vocabulary.
pub static FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(fail(s|ed|ure|ing)?|errors?|ENOENT|EACCES|EPERM|ECONNREFUSED|unavailable|time(d)? ?out|timeout|crash(ed)?|exception|panic(ked)?|refused|not found|cannot|unable)\b")
        .expect("valid pattern")
});

/// One parsed log line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogLine {
    pub at: String,
    pub level: String,
    pub source: String,
    pub message: String,
}

/// Parse `<iso-time> [level] [source] message`.
pub fn parse_line(line: &str) -> Option<LogLine> {
    let captures = LINE.captures(line.trim_end())?;
    Some(LogLine {
        at: captures[1].to_string(),
        level: captures[2].to_string(),
        source: captures[3].to_string(),
        message: captures[4].to_string(),
    })
}

/// Whether a log source names `asset`.
fn source_matches(source: &str, asset: &str) -> bool {
    let (source, asset) = (source.to_ascii_lowercase(), asset.to_ascii_lowercase());
    if source == asset {
        return true;
    }
    let (short, long) = if source.len() < asset.len() {
        (&source, &asset)
    } else {
        (&asset, &source)
    };
    short.len() >= 4
        && (long.ends_with(&format!("/{short}"))
            || long.starts_with(&format!("{short}:"))
            || long.starts_with(&format!("{short}/")))
}

/// Evidence for one asset.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct AssetEvidence {
    /// Log lines attributed to it.
    pub lines: usize,
    /// Of which matched the failure vocabulary (or level error/fatal).
    pub failure_lines: usize,
    /// Up to five failure lines, newest last.
    pub examples: Vec<String>,
    /// Skill activations found in transcripts.
    pub activations: usize,
    /// Of which returned an error.
    pub activation_errors: usize,
}

/// What `probe` found.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ProbeReport {
    pub host: String,
    pub logs_glob: Option<String>,
    pub log_files: Vec<PathBuf>,
    pub log_lines: usize,
    pub transcript_files: usize,
    /// Per installed asset (every asset listed, with or without evidence).
    pub assets: BTreeMap<String, AssetEvidence>,
    /// Failure lines whose source names no installed asset.
    pub unattributed_failures: usize,
    pub blind_spots: Vec<String>,
}

/// What `probe` reads besides the host's registry.
#[derive(Debug, Clone, Default)]
pub struct ProbeSettings {
    /// The asset root (`--root`): assets are then discovered there, not read from the registry.
    pub root: Option<PathBuf>,
    /// A log glob instead of the host profile's `logs`.
    pub logs: Option<String>,
    /// A Claude Code projects folder with session transcripts (default for claude-code:
    /// `~/.claude/projects`).
    pub transcripts: Option<PathBuf>,
    /// Print JSON instead of text.
    pub json: bool,
}

/// `probe`: the host's installed assets with the evidence its logs and transcripts hold,
/// printed as text or JSON.
pub fn probe_host(
    state: &Path,
    host: &super::hosts::HostProfile,
    settings: &ProbeSettings,
) -> Result<(), RegistryError> {
    let mut report = ProbeReport {
        host: host.name.clone(),
        blind_spots: BLIND_SPOTS.iter().map(|s| s.to_string()).collect(),
        ..ProbeReport::default()
    };
    installed_assets(&mut report, state, host, settings.root.as_deref())?;
    report.logs_glob = settings.logs.clone().or_else(|| host.logs.clone());
    if let Some(glob) = &report.logs_glob {
        let files = glob_files(&super::state::expand_home(glob)?)?;
        probe_logs(&mut report, &files)?;
    }
    let transcripts = match &settings.transcripts {
        Some(dir) => Some(dir.clone()),
        None if host.name == "claude-code" => super::state::expand_home("~/.claude/projects").ok(),
        None => None,
    };
    if let Some(dir) = &transcripts {
        probe_transcripts(&mut report, dir)?;
    }
    crate::values::reporter::result(&match settings.json {
        true => super::console::to_json(&report),
        false => render_text(&report, transcripts.as_deref()),
    });
    Ok(())
}

/// List the installed assets in `report`: the registry's when scanned and no `root` is given,
/// else those discovered now (names only, no hashing); none when the host has no root.
fn installed_assets(
    report: &mut ProbeReport,
    state: &Path,
    host: &super::hosts::HostProfile,
    root: Option<&Path>,
) -> Result<(), RegistryError> {
    match super::scan::read_registry(state, &host.name)? {
        Some(registry) if root.is_none() => {
            for name in registry.assets.keys() {
                report.assets.insert(name.clone(), AssetEvidence::default());
            }
        }
        _ => {
            if let Ok(root) = super::console::resolve_root(state, host, root) {
                for found in super::hosts::discover_assets(host, &root)? {
                    let loaded =
                        super::surface::load_asset(&found.dir, &found.manifest, host.kind)?;
                    report.assets.insert(loaded.name, AssetEvidence::default());
                }
            }
        }
    }
    Ok(())
}

/// Files matching `glob`, whose wildcards may appear only in the last component.
pub fn glob_files(glob: &Path) -> Result<Vec<PathBuf>, RegistryError> {
    let dir = glob.parent().unwrap_or(Path::new("."));
    let pattern = glob
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let matcher = globset::Glob::new(&pattern)
        .map_err(|error| RegistryError::Invalid {
            path: glob.to_path_buf(),
            message: format!("not a valid glob: {error}"),
        })?
        .compile_matcher();
    let mut files = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(error) => return Err(RegistryError::io(dir)(error)),
    };
    for entry in entries.flatten() {
        if matcher.is_match(entry.file_name()) && entry.path().is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// Read host logs and attribute them to `assets`.
pub fn probe_logs(report: &mut ProbeReport, files: &[PathBuf]) -> Result<(), RegistryError> {
    let names: Vec<String> = report.assets.keys().cloned().collect();
    for file in files {
        report.log_files.push(file.clone());
        let handle = std::fs::File::open(file).map_err(RegistryError::io(file))?;
        for line in BufReader::new(handle).split(b'\n') {
            let line = line.map_err(RegistryError::io(file))?;
            let line = String::from_utf8_lossy(&line);
            let Some(parsed) = parse_line(&line) else {
                continue;
            };
            report.log_lines += 1;
            let failure = FAILURE.is_match(&parsed.message)
                || matches!(
                    parsed.level.to_ascii_lowercase().as_str(),
                    "error" | "fatal"
                );
            match names
                .iter()
                .find(|name| source_matches(&parsed.source, name))
            {
                Some(name) => {
                    let evidence = report.assets.get_mut(name).expect("listed asset");
                    evidence.lines += 1;
                    if failure {
                        evidence.failure_lines += 1;
                        evidence.examples.push(line.trim_end().to_string());
                        if evidence.examples.len() > 5 {
                            evidence.examples.remove(0);
                        }
                    }
                }
                None if failure => report.unattributed_failures += 1,
                None => {}
            }
        }
    }
    Ok(())
}

/// Count `Skill` tool calls and their errors in Claude Code transcripts (`<dir>/*/*.jsonl`).
/// Skills not in `report.assets` are added (they were used, so they exist somewhere).
pub fn probe_transcripts(
    report: &mut ProbeReport,
    projects_dir: &Path,
) -> Result<(), RegistryError> {
    let Ok(projects) = std::fs::read_dir(projects_dir) else {
        return Ok(());
    };
    let mut files = Vec::new();
    for project in projects.flatten() {
        if let Ok(entries) = std::fs::read_dir(project.path()) {
            files.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "jsonl")),
            );
        }
    }
    files.sort();
    for file in files {
        report.transcript_files += 1;
        let handle = std::fs::File::open(&file).map_err(RegistryError::io(&file))?;
        let mut calls: HashMap<String, String> = HashMap::new();
        for line in BufReader::new(handle).lines() {
            let Ok(line) = line else { break };
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let Some(content) = value["message"]["content"].as_array() else {
                continue;
            };
            for item in content {
                match item["type"].as_str() {
                    Some("tool_use") if item["name"] == "Skill" => {
                        let skill = item["input"]["skill"]
                            .as_str()
                            .or_else(|| item["input"]["command"].as_str())
                            .or_else(|| item["input"]["name"].as_str())
                            .unwrap_or("?")
                            .to_string();
                        report.assets.entry(skill.clone()).or_default().activations += 1;
                        if let Some(id) = item["id"].as_str() {
                            calls.insert(id.to_string(), skill);
                        }
                    }
                    Some("tool_result") if item["is_error"] == true => {
                        if let Some(skill) =
                            item["tool_use_id"].as_str().and_then(|id| calls.get(id))
                        {
                            report
                                .assets
                                .entry(skill.clone())
                                .or_default()
                                .activation_errors += 1;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// `probe`'s text result: what was read, the evidence per asset (assets with none listed
/// together), failures no asset claims, and the blind spots; `transcripts` is the transcript
/// folder read, when one was.
pub fn render_text(report: &ProbeReport, transcripts: Option<&std::path::Path>) -> String {
    let mut lines: Vec<String> = Vec::new();
    lines.push(format!(
        "probe {}: {} log file(s) ({} parsed lines) from {}; {} transcript file(s){}",
        report.host,
        report.log_files.len(),
        report.log_lines,
        report
            .logs_glob
            .as_deref()
            .unwrap_or("no logs glob for this host"),
        report.transcript_files,
        transcripts.map_or(String::new(), |d| format!(" from {}", d.display()))
    ));
    let mut silent = Vec::new();
    for (asset, evidence) in &report.assets {
        if evidence.lines == 0 && evidence.activations == 0 {
            silent.push(asset.as_str());
            continue;
        }
        lines.push(format!(
            "{asset}: {} log line(s), {} failure hint(s); {} skill activation(s), {} returned errors",
            evidence.lines,
            evidence.failure_lines,
            evidence.activations,
            evidence.activation_errors
        ));
        for example in &evidence.examples {
            lines.push(format!("    {example}"));
        }
        if evidence.failure_lines == 0 && evidence.activation_errors == 0 {
            lines.push(format!(
                "    no failure found in what was logged — {ABSENCE}"
            ));
        }
    }
    if report.unattributed_failures > 0 {
        lines.push(format!(
            "{} failure line(s) from sources that name no installed asset",
            report.unattributed_failures
        ));
    }
    if !silent.is_empty() {
        lines.push(format!(
            "no evidence for {} asset(s): {} — {ABSENCE}",
            silent.len(),
            silent.join(", ")
        ));
    }
    if report.assets.is_empty() {
        lines.push(format!(
            "no installed assets known for this host; run `skill-lift scan` — {ABSENCE}"
        ));
    }
    lines.push(format!("blind spots: {}", BLIND_SPOTS.join("; ")));
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_attributes_failures() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("main.log");
        std::fs::write(
            &log,
            "2026-01-01T00:00:00Z [warn] [@wxg/browser-skill] probe bsk failed (spawn bsk ENOENT)\n\
             2026-01-01T00:00:01Z [info] [@wxg/browser-skill] registered 4 tools\n\
             2026-01-01T00:00:02Z [error] [core] something else\n\
             not a log line\n",
        )
        .unwrap();
        let mut report = ProbeReport::default();
        report
            .assets
            .insert("@wxg/browser-skill".into(), AssetEvidence::default());
        report
            .assets
            .insert("quiet".into(), AssetEvidence::default());
        let files = glob_files(&dir.path().join("*.log")).unwrap();
        assert_eq!(files.len(), 1);
        probe_logs(&mut report, &files).unwrap();
        let evidence = &report.assets["@wxg/browser-skill"];
        assert_eq!((evidence.lines, evidence.failure_lines), (2, 1));
        assert!(evidence.examples[0].contains("ENOENT"));
        assert_eq!(report.unattributed_failures, 1);
        assert_eq!(report.log_lines, 3);
        assert_eq!(report.assets["quiet"].lines, 0);
    }

    #[test]
    fn counts_skill_activations_and_errors_in_transcripts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("p")).unwrap();
        std::fs::write(
            dir.path().join("p/s.jsonl"),
            concat!(
                r#"{"message": {"content": [{"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "pdf"}}]}}"#, "\n",
                r#"{"message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true}]}}"#, "\n",
                r#"{"message": {"content": [{"type": "tool_use", "id": "t2", "name": "Skill", "input": {"skill": "pdf"}}]}}"#, "\n",
            ),
        )
        .unwrap();
        let mut report = ProbeReport::default();
        probe_transcripts(&mut report, dir.path()).unwrap();
        assert_eq!(report.assets["pdf"].activations, 2);
        assert_eq!(report.assets["pdf"].activation_errors, 1);
    }

    #[test]
    fn source_matching_is_not_too_loose() {
        assert!(source_matches("@s/plug-a", "plug-a"));
        assert!(source_matches("Plug-A", "plug-a"));
        assert!(!source_matches("core", "score"));
    }
}
