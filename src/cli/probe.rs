//! `skill-lift probe` (passive runtime evidence) and `skill-lift suggest` (need-based suggestion).

use std::path::PathBuf;

use clap::Args;

use super::CommandError;
use super::Outcome;
use super::flag_groups::StateArgs;
use super::registry::HostArgs;
use crate::registry::hosts::{discover_assets, load_hosts};
use crate::registry::probe::{
    AssetEvidence, BLIND_SPOTS, ProbeReport, glob_files, probe_logs, probe_transcripts, render_text,
};
use crate::registry::scan::read_registry;
use crate::registry::state::expand_home;
use crate::registry::suggest::{Candidate, read_catalog, suggest};
use crate::registry::surface::load_asset;

/// Flags of `skill-lift probe`.
#[derive(Debug, Args)]
#[command(
    after_help = "Blind spots: an asset that logs nothing is invisible; log rotation erases old failures; an asset nobody used has no evidence; failures logged at info level are found by keyword only, so misses and false alarms are possible. Absence of evidence is not evidence of health."
)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Log glob instead of the host profile's `logs` (wildcards in the file name only).
    #[arg(long, value_name = "GLOB")]
    pub logs: Option<String>,
    /// Claude Code projects folder with session transcripts (default for claude-code:
    /// ~/.claude/projects).
    #[arg(long, value_name = "DIR")]
    pub transcripts: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `skill-lift suggest`.
#[derive(Debug, Args)]
pub struct SuggestArgs {
    /// The need, in the user's words.
    #[arg(long, value_name = "TEXT")]
    pub need: String,
    /// Catalog file: a JSON list of {slug, title, description, source}.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    #[command(flatten)]
    pub state: StateArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `skill-lift probe`.
pub fn probe(args: ProbeArgs) -> Result<Outcome, CommandError> {
    let (state, host) = args.host.resolve()?;
    let mut report = ProbeReport {
        host: host.name.clone(),
        blind_spots: BLIND_SPOTS.iter().map(|s| s.to_string()).collect(),
        ..ProbeReport::default()
    };
    // Installed assets: the registry when scanned, else discovered now (names only, no hashing).
    match read_registry(&state, &host.name).map_err(CommandError::input)? {
        Some(registry) if args.host.root.is_none() => {
            for name in registry.assets.keys() {
                report.assets.insert(name.clone(), AssetEvidence::default());
            }
        }
        _ => {
            if let Ok(root) = args.host.root(&state, &host) {
                for found in discover_assets(&host, &root).map_err(CommandError::input)? {
                    let loaded = load_asset(&found.dir, &found.manifest, host.kind)
                        .map_err(CommandError::input)?;
                    report.assets.insert(loaded.name, AssetEvidence::default());
                }
            }
        }
    }
    report.logs_glob = args.logs.clone().or_else(|| host.logs.clone());
    if let Some(glob) = &report.logs_glob {
        let files = glob_files(&expand_home(glob).map_err(CommandError::input)?)
            .map_err(CommandError::input)?;
        probe_logs(&mut report, &files).map_err(CommandError::input)?;
    }
    let transcripts = match &args.transcripts {
        Some(dir) => Some(dir.clone()),
        None if host.name == "claude-code" => expand_home("~/.claude/projects").ok(),
        None => None,
    };
    if let Some(dir) = &transcripts {
        probe_transcripts(&mut report, dir).map_err(CommandError::input)?;
    }
    if args.json {
        crate::reporter::result_line(
            &serde_json::to_string_pretty(&report).map_err(CommandError::infrastructure)?,
        );
        return Ok(Outcome::Success);
    }
    crate::reporter::result(&render_text(&report, transcripts.as_deref()));
    Ok(Outcome::Success)
}

/// `skill-lift suggest`.
pub fn suggest_command(args: SuggestArgs) -> Result<Outcome, CommandError> {
    let state = args.state.dir()?;
    let mut installed = Vec::new();
    let mut hosts_with_registry = 0;
    for host in load_hosts(&state).map_err(CommandError::input)? {
        if let Some(registry) = read_registry(&state, &host.name).map_err(CommandError::input)? {
            hosts_with_registry += 1;
            for (name, asset) in registry.assets {
                installed.push(Candidate {
                    host: host.name.clone(),
                    name,
                    description: asset.description,
                });
            }
        }
    }
    let catalog = match &args.catalog {
        Some(path) => read_catalog(path).map_err(CommandError::input)?,
        None => Vec::new(),
    };
    let answer = suggest(&args.need, &installed, &catalog);
    if args.json {
        crate::reporter::result_line(
            &serde_json::to_string_pretty(&answer).map_err(CommandError::infrastructure)?,
        );
        return Ok(Outcome::Success);
    }
    match (answer.verdict.as_str(), &answer.best) {
        ("already-available", Some(best)) => crate::reporter::result_line(&format!(
            "already available: {} (host {}, score {:.2}: {}) — use it, install nothing",
            best.name,
            best.host.as_deref().unwrap_or("-"),
            best.score,
            best.shared_words.join(", ")
        )),
        ("suggest-new", Some(best)) => crate::reporter::result_line(&format!(
            "suggestion: [install:{}] {} (score {:.2}: {}; source {}): not installed — your choice",
            best.name,
            best.title.as_deref().unwrap_or(""),
            best.score,
            best.shared_words.join(", "),
            best.source.as_deref().unwrap_or("catalog")
        )),
        _ => crate::reporter::result_line(&format!(
            "nothing installed ({} asset(s) across {} host registr{}) or in the catalog ({} entr{}) covers this need{}",
            installed.len(),
            hosts_with_registry,
            if hosts_with_registry == 1 { "y" } else { "ies" },
            catalog.len(),
            if catalog.len() == 1 { "y" } else { "ies" },
            if args.catalog.is_none() {
                "; pass --catalog FILE to search a catalog"
            } else {
                ""
            }
        )),
    }
    crate::reporter::result_line(&format!("method: {}", answer.method));
    Ok(Outcome::Success)
}
