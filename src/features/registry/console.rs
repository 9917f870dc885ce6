//! The registry console commands' workflows and what they print: `hosts` ([`hosts_listing`],
//! [`render_hosts`]), `scan` ([`scan_host`], [`render_scan`]), `status` ([`host_status`],
//! [`render_status`]), `bump` ([`bump_host`]) and `check` ([`check_host`], which watches the
//! model through `observe.rs`, [`render_check`]).
//! The command line maps flags to these calls and their results to exit codes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::RegistryError;
use super::baseline::read_store;
use super::hosts::{HostProfile, discover_assets, find_host, hosts_file, load_hosts};
use super::identity::{SourceState, same_model};
use super::models::{CheckReport, ModelBump, bump, check, waive};
use super::observe::{ModelWatch, WatchSettings, watch_model};
use super::scan::{Registry, ScanSummary, read_registry, registry_path, scan};
use super::surface::AssetKind;
use crate::features::asset::fingerprint::Calibre;
use crate::values::reporter::{Event, report};

/// A failure of a console command (every one an input error).
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The state folder, a host profile or a registry cannot be read or written.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The session history cannot be read (`status --dashboard`).
    #[error(transparent)]
    History(#[from] crate::features::history::HistoryError),
    /// The value cards cannot be computed or their series kept (`status --dashboard`).
    #[error(transparent)]
    Value(#[from] super::value::ValueError),
    /// The host has no registry yet.
    #[error(
        "{}: no registry for host `{host}` yet; run `skill-lift scan --host {host}` first",
        .path.display()
    )]
    NoRegistry {
        /// The registry file expected.
        path: PathBuf,
        /// The host.
        host: String,
    },
    /// The host's root is not a folder.
    #[error("{}: host `{host}` root does not exist; pass --root PATH", .root.display())]
    RootMissing {
        /// The root.
        root: PathBuf,
        /// The host.
        host: String,
    },
    /// `bump --model` is empty.
    #[error("--model must not be empty")]
    EmptyModel,
}

/// `value` as pretty JSON with a final newline (an error object if it cannot serialize).
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    let json =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    format!("{json}\n")
}

/// A timestamp as the console prints it (RFC 3339, seconds, `Z`).
fn stamp(at: &chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The root of `host`: `flag` (`--root`), else the profile default, else the root of its last
/// scan.
pub fn resolve_root(
    state: &Path,
    host: &HostProfile,
    flag: Option<&Path>,
) -> Result<PathBuf, RegistryError> {
    match host.resolve_root(flag) {
        Ok(root) => Ok(root),
        Err(error) => match read_registry(state, &host.name)?.and_then(|r| r.root) {
            Some(root) => Ok(root),
            None => Err(error),
        },
    }
}

/// The registry of `host`, which must exist.
pub fn require_registry(state: &Path, host: &str) -> Result<Registry, ConsoleError> {
    read_registry(state, host)?.ok_or_else(|| ConsoleError::NoRegistry {
        path: registry_path(state, host),
        host: host.to_string(),
    })
}

/// The host profiles `hosts` lists: one JSON row each (name, kind, root, assets found, …).
#[derive(Debug)]
pub struct HostsListing {
    /// The state folder.
    pub state: PathBuf,
    /// One row per host.
    pub rows: Vec<serde_json::Value>,
}

/// List the host profiles (only `host` when given, with `root` as its root).
pub fn hosts_listing(
    state: &Path,
    host: Option<&str>,
    root: Option<&Path>,
) -> Result<HostsListing, RegistryError> {
    let mut profiles = load_hosts(state)?;
    if let Some(name) = host {
        profiles.retain(|h| h.name == name);
        if profiles.is_empty() {
            find_host(state, name)?;
        }
    }
    let mut rows = Vec::new();
    for profile in &profiles {
        let root = profile.resolve_root(root).ok();
        let (exists, assets, error) = match &root {
            Some(root) if root.is_dir() => match discover_assets(profile, root) {
                Ok(found) => (true, Some(found.len()), None),
                Err(error) => (true, None, Some(error.to_string())),
            },
            _ => (false, None, None),
        };
        rows.push(serde_json::json!({
            "name": profile.name, "kind": profile.kind.as_str(), "source": profile.source,
            "root": root, "root_exists": exists, "assets": assets, "manifests": profile.manifests,
            "logs": profile.logs, "deps_from_package_json": profile.deps_from_package_json,
            "error": error,
        }));
    }
    Ok(HostsListing {
        state: state.to_path_buf(),
        rows,
    })
}

/// What `hosts` prints: JSON, or a table with the state folder below it.
pub fn render_hosts(listing: &HostsListing, json: bool) -> String {
    let state = &listing.state;
    if json {
        return to_json(
            &serde_json::json!({"state": state, "hosts_file": hosts_file(state), "hosts": listing.rows}),
        );
    }
    let mut out = format!("{:<13} {:<7} {:>6}  root\n", "host", "kind", "assets");
    for row in &listing.rows {
        let root = match row["root"].as_str() {
            Some(root) if row["root_exists"] == true => root.to_string(),
            Some(root) => format!("{root} (missing)"),
            None => "(no default: pass --root)".to_string(),
        };
        let assets = match (&row["assets"], &row["error"]) {
            (serde_json::Value::Number(n), _) => n.to_string(),
            (_, serde_json::Value::String(_)) => "error".to_string(),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            out,
            "{:<13} {:<7} {:>6}  {}",
            row["name"].as_str().unwrap_or(""),
            row["kind"].as_str().unwrap_or(""),
            assets,
            root
        );
        if let Some(error) = row["error"].as_str() {
            let _ = writeln!(out, "              error: {error}");
        }
    }
    let _ = writeln!(
        out,
        "\nstate folder {}; custom hosts go in {}",
        state.display(),
        hosts_file(state).display()
    );
    out
}

/// A host scanned: its change report and the plugins registered under its root.
#[derive(Debug)]
pub struct HostScan {
    /// The host.
    pub host: String,
    /// The root scanned (absolute).
    pub root: PathBuf,
    /// The calibre of the fingerprints.
    pub calibre: Calibre,
    /// The change report.
    pub summary: ScanSummary,
    /// One line per plugin under the root: name, version, install, surface.
    pub plugins: Vec<String>,
    /// The registry file.
    pub registry: PathBuf,
}

/// Scan `host` at `root` under `calibre` and update its registry.
pub fn scan_host(
    state: &Path,
    host: &HostProfile,
    root: PathBuf,
    calibre: Calibre,
) -> Result<HostScan, ConsoleError> {
    let root = std::path::absolute(&root).unwrap_or(root);
    if !root.is_dir() {
        return Err(ConsoleError::RootMissing {
            root,
            host: host.name.clone(),
        });
    }
    let summary = scan(state, host, &root, calibre)?;
    let plugins = match read_registry(state, &host.name) {
        Ok(Some(registry)) => plugin_lines(&registry, &root),
        _ => Vec::new(),
    };
    Ok(HostScan {
        host: host.name.clone(),
        root,
        calibre,
        summary,
        plugins,
        registry: registry_path(state, &host.name),
    })
}

/// The plugins of `registry` under `root`, one line each.
fn plugin_lines(registry: &Registry, root: &Path) -> Vec<String> {
    registry
        .assets
        .iter()
        .filter(|(_, a)| a.kind == AssetKind::Plugin && a.root.as_deref() == Some(root))
        .map(|(name, asset)| {
            let surface: Vec<String> = asset
                .surface
                .iter()
                .map(|(category, items)| format!("{category}({})", items.join(", ")))
                .collect();
            let install = asset
                .install
                .as_ref()
                .map(|i| format!(" [{}, {} scope, {}]", i.id, i.scope, i.enabled.describe()))
                .unwrap_or_default();
            format!(
                "  {name}{}{install}: {}",
                asset
                    .version
                    .as_deref()
                    .map(|v| format!(" {v}"))
                    .unwrap_or_default(),
                if surface.is_empty() {
                    "no declared surface".to_string()
                } else {
                    surface.join(" ")
                }
            )
        })
        .collect()
}

/// What `scan` prints on stdout before its notes and warnings (stderr, [`report_scan_notes`]):
/// the change report; the registry's path follows them ([`HostScan::registry_line`]).
pub fn render_scan(done: &HostScan) -> String {
    let summary = &done.summary;
    let calibre = done.calibre;
    let mut out = format!(
        "scanned {} at {}: {} asset(s) ({} new, {} removed, {} fingerprint changed) in {:.2} s, calibre {}\n",
        done.host,
        done.root.display(),
        summary.assets,
        summary.new.len(),
        summary.removed.len(),
        summary.fingerprint_changed.len(),
        summary.elapsed_ms as f64 / 1000.0,
        calibre
    );
    let mut list = |label: &str, names: &[String]| {
        if !names.is_empty() {
            let _ = writeln!(out, "{label}: {}", names.join(", "));
        }
    };
    list("new", &summary.new);
    list("removed", &summary.removed);
    list(
        "fingerprint changed (the asset was edited; old and new rows stay apart in regress)",
        &summary.fingerprint_changed,
    );
    list(
        &format!("recalibrated (fingerprint recomputed under calibre {calibre}, not an edit)"),
        &summary.recalibrated,
    );
    if !summary.caps_changed.is_empty() {
        let _ = writeln!(
            out,
            "[caps] {} asset(s) changed their capability surface (what it offers changed; unrelated to pass rate):",
            summary.caps_changed.len()
        );
        for (asset, tokens) in &summary.caps_changed {
            let _ = writeln!(out, "  {asset} {}", tokens.join(" "));
        }
    }
    if !done.plugins.is_empty() {
        let _ = writeln!(out, "plugins ({}):", done.plugins.len());
        for line in &done.plugins {
            let _ = writeln!(out, "{line}");
        }
    }
    if !summary.not_loaded.is_empty() {
        let _ = writeln!(
            out,
            "installed but not loaded by the host ({}; registered, and still checked): {}",
            summary.not_loaded.len(),
            summary.not_loaded.join(", ")
        );
    }
    if !summary.available.is_empty() {
        let _ = writeln!(
            out,
            "available, not installed ({} listed by marketplace clones; not registered, not checked): {}",
            summary.available.len(),
            summary.available.join(", ")
        );
    }
    out
}

/// Report the scan's notes and the assets it skipped (stderr).
pub fn report_scan_notes(done: &HostScan) {
    for note in &done.summary.notes {
        report(Event::Note {
            message: note.clone(),
        });
    }
    if !done.summary.skipped.is_empty() {
        report(Event::AssetsSkipped {
            skipped: done
                .summary
                .skipped
                .iter()
                .map(|s| (s.path.clone(), s.reason.clone()))
                .collect(),
        });
    }
}

impl HostScan {
    /// The last line `scan` prints: the registry's path.
    pub fn registry_line(&self) -> String {
        format!("registry: {}", self.registry.display())
    }
}

/// What `status --dashboard` reads and computes beyond the registry.
#[derive(Debug, Clone, Copy)]
pub struct DashboardSettings<'a> {
    /// A folder standing in for the home folder whose session history is read.
    pub history_root: Option<&'a Path>,
    /// The history window in days.
    pub days: u32,
    /// The value cards' settings (value of one success, the rule's window, today).
    pub value: super::value::ValueSettings,
}

/// A host's standing for `status`: its registry, what is pending, the dashboard.
#[derive(Debug)]
pub struct HostStatus {
    /// The host.
    pub host: String,
    /// The registry file.
    pub path: PathBuf,
    /// The registry.
    pub registry: Registry,
    /// What is pending under the current model.
    pub report: CheckReport,
    /// `--dashboard`: one row per asset.
    pub dashboard: Option<Vec<super::dashboard::DashboardRow>>,
    /// `--dashboard`: use from session history, and the window in days.
    pub usage: Option<(crate::features::usage::UsageReport, u32)>,
    /// `--dashboard`: the value card of every skill, as recorded in the series today.
    pub value: Option<super::value::ValueBook>,
}

/// The standing of `host`; with `dashboard`, the dashboard, the use from session history and
/// the value cards (recorded as today's points of the host's value series).
pub fn host_status(
    state: &Path,
    host: &str,
    dashboard: Option<DashboardSettings<'_>>,
) -> Result<HostStatus, ConsoleError> {
    let registry = require_registry(state, host)?;
    let store = read_store(state)?;
    let report = check(&registry, &store);
    let mut status = HostStatus {
        host: host.to_string(),
        path: registry_path(state, host),
        registry,
        report,
        dashboard: None,
        usage: None,
        value: None,
    };
    let Some(settings) = dashboard else {
        return Ok(status);
    };
    settings.value.check()?;
    let rows = super::dashboard::dashboard(&status.registry, &store);
    let roots = crate::features::history::HistoryRoots::resolve(settings.history_root)?;
    let (since, sessions) =
        crate::features::usage::dashboard_sessions(host, &roots, settings.days)?;
    let names = status
        .registry
        .assets
        .iter()
        .filter(|(_, a)| a.kind == AssetKind::Skill)
        .map(|(name, _)| name.clone())
        .collect();
    let usage = crate::features::usage::dashboard_usage(host, since, &sessions, &names);
    let sources = super::value::ValueSources {
        registry: &status.registry,
        store: &store,
        rows: &rows,
        usage: &usage,
        sessions: &sessions,
        history_days: settings.days,
    };
    status.value = Some(super::value::value_book(
        state,
        host,
        sources,
        &settings.value,
    )?);
    status.dashboard = Some(rows);
    status.usage = Some((usage, settings.days));
    Ok(status)
}

impl HostStatus {
    /// Skills among the assets.
    fn skills(&self) -> usize {
        self.registry
            .assets
            .values()
            .filter(|a| a.kind == AssetKind::Skill)
            .count()
    }

    /// The installed assets the host does not load, with why.
    fn not_loaded(&self) -> Vec<String> {
        self.registry
            .assets
            .iter()
            .filter_map(|(name, a)| {
                let install = a.install.as_ref()?;
                (install.enabled.loads() == Some(false))
                    .then(|| format!("{name} ({})", install.enabled.describe()))
            })
            .collect()
    }

    /// The monitored assets, one line each.
    fn monitored(&self) -> Vec<String> {
        self.registry
            .assets
            .iter()
            .filter_map(|(name, asset)| {
                let m = asset.monitoring.as_ref()?;
                let golden = m
                    .golden_set
                    .as_ref()
                    .map_or("no golden set".to_string(), |g| {
                        format!("golden set {} ({} cases)", g.path.display(), g.items)
                    });
                let drift = if asset.fingerprint != m.vetted_fingerprint {
                    ", fingerprint changed since vetting"
                } else {
                    ""
                };
                let how = match m.registered_by {
                    super::scan::RegisteredBy::Vet => {
                        format!("vetted {} ({})", stamp(&m.registered_at), m.decision)
                    }
                    super::scan::RegisteredBy::Run => {
                        format!("registered by run {}", stamp(&m.registered_at))
                    }
                };
                Some(format!(
                    "  {name}: {how} on {} with {}, {golden}{drift}",
                    m.runner, m.model
                ))
            })
            .collect()
    }

    /// The JSON document of `status --json`.
    fn json(&self) -> serde_json::Value {
        let registry = &self.registry;
        let skills = self.skills();
        serde_json::json!({
            "host": self.host, "registry": self.path, "root": registry.root,
            "last_scan": registry.last_scan, "last_bump": registry.model_bumps.last(),
            "assets": registry.assets.len(), "skills": skills,
            "plugins": registry.assets.len() - skills,
            "pending": self.report.pending().iter().map(|a| &a.asset).collect::<Vec<_>>(),
            "monitored": registry.assets.iter()
                .filter_map(|(name, a)| a.monitoring.as_ref().map(|m| serde_json::json!({
                    "asset": name, "path": a.path, "fingerprint": a.fingerprint,
                    "changed_since_vetting": a.fingerprint != m.vetted_fingerprint,
                    "monitoring": m})))
                .collect::<Vec<_>>(),
            "scans": registry.scans.len(), "dashboard": self.dashboard,
            "usage": self.usage.as_ref().map(|(usage, _)| usage),
            "value": self.value,
            "not_loaded": self.not_loaded(), "available": registry.available.len(),
        })
    }
}

/// What `status` prints: JSON, or the host's standing line by line.
pub fn render_status(status: &HostStatus, json: bool) -> String {
    if json {
        return to_json(&status.json());
    }
    let registry = &status.registry;
    let skills = status.skills();
    let mut out = format!("host {} ({})\n", status.host, status.path.display());
    let _ = writeln!(
        out,
        "root {}",
        registry
            .root
            .as_ref()
            .map_or("-".to_string(), |r| r.display().to_string())
    );
    let _ = writeln!(
        out,
        "last scan {}",
        registry
            .last_scan
            .as_ref()
            .map_or("never".to_string(), stamp)
    );
    let _ = match registry.model_bumps.last() {
        Some(bump) => match bump.origin {
            super::models::BumpOrigin::Manual => {
                writeln!(out, "last bump {} at {}", bump.model, stamp(&bump.at))
            }
            super::models::BumpOrigin::Detected => writeln!(
                out,
                "last bump {} at {} (detected by `check`{})",
                bump.model,
                stamp(&bump.at),
                bump.previous
                    .as_deref()
                    .map(|p| format!(", was {p}"))
                    .unwrap_or_default()
            ),
        },
        None => writeln!(
            out,
            "last bump none (`skill-lift check` records the model it observes; `skill-lift bump --model ID` marks one)"
        ),
    };
    let _ = writeln!(
        out,
        "assets {} ({} skills, {} plugins)",
        registry.assets.len(),
        skills,
        registry.assets.len() - skills
    );
    let not_loaded = status.not_loaded();
    if !not_loaded.is_empty() {
        let _ = writeln!(
            out,
            "installed but not loaded {}: {}",
            not_loaded.len(),
            not_loaded.join(", ")
        );
    }
    if !registry.available.is_empty() {
        let _ = writeln!(
            out,
            "available, not installed {} (listed by marketplace clones; not registered, not checked)",
            registry.available.len()
        );
    }
    let monitored = status.monitored();
    if monitored.is_empty() {
        out.push_str("monitored 0 (register a skill with `skill-lift vet SKILL_DIR`)\n");
    } else {
        let _ = writeln!(out, "monitored {}:", monitored.len());
        for line in monitored {
            let _ = writeln!(out, "{line}");
        }
    }
    let pending = status.report.pending();
    if registry.model_bumps.is_empty() {
        out.push_str("pending - (no bump recorded)\n");
    } else if pending.is_empty() {
        out.push_str("pending 0\n");
    } else {
        let names: Vec<&str> = pending.iter().map(|a| a.asset.as_str()).collect();
        let _ = writeln!(out, "pending {}: {}", pending.len(), names.join(", "));
    }
    if let Some(rows) = &status.dashboard {
        out.push('\n');
        out.push_str(&super::dashboard::to_table(rows));
    }
    if let Some((usage, days)) = &status.usage {
        out.push('\n');
        out.push_str(&crate::features::usage::dashboard_lines(usage, *days));
    }
    if let Some(book) = &status.value {
        out.push('\n');
        out.push_str(&super::value::render_value(book));
    }
    out
}

/// Record `model` as the host's new model version; returns the line `bump` prints.
pub fn bump_host(
    state: &Path,
    host: &str,
    model: &str,
    note: Option<String>,
) -> Result<String, ConsoleError> {
    if model.trim().is_empty() {
        return Err(ConsoleError::EmptyModel);
    }
    let bumped: ModelBump = bump(state, host, model.trim(), note)?;
    let registry = require_registry(state, host)?;
    Ok(format!(
        "host {host}: model {} marked at {}; {} asset(s) pending until run under it or waived (`skill-lift check`)",
        bumped.model,
        stamp(&bumped.at),
        registry.assets.len()
    ))
}

/// What `check` found: the model watch (did the model change since the last bump, from what
/// evidence, and which sources could not be read) and each asset's standing under the host's
/// model — the new one when the change was recorded.
#[derive(Debug, serde::Serialize)]
pub struct CheckOutcome {
    /// Each asset's standing (the JSON keys `check --json` always had).
    #[serde(flatten)]
    pub report: CheckReport,
    /// The model watch.
    pub model_watch: ModelWatch,
}

/// How `check` ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckEnding {
    /// No model change, nothing pending, every source read (or absent).
    Clean,
    /// The model changed, or assets are pending under the current model (exit 1).
    ChangedOrPending,
    /// Nothing changed or pending, but a source could not be read (exit 5).
    SourceUnreadable,
}

impl CheckOutcome {
    /// How the check ended.
    pub fn ending(&self) -> CheckEnding {
        if self.model_watch.change().is_some() || !self.report.pending().is_empty() {
            CheckEnding::ChangedOrPending
        } else if !self.model_watch.unreadable().is_empty() {
            CheckEnding::SourceUnreadable
        } else {
            CheckEnding::Clean
        }
    }
}

/// Waive `waive` (with `reason`) under the current model, reporting each waiver; watch the
/// host's model ([`watch_model`]: a change is recorded as a bump unless `watch.record` is off);
/// then check which assets are pending under the host's model.
pub async fn check_host(
    state: &Path,
    host: &str,
    waive_assets: &[String],
    reason: &str,
    watch: &WatchSettings,
) -> Result<CheckOutcome, ConsoleError> {
    require_registry(state, host)?;
    if !waive_assets.is_empty() {
        for waiver in waive(state, host, waive_assets, reason)? {
            report(Event::Waived {
                asset: waiver.asset,
                model: waiver.model,
                reason: waiver.reason,
            });
        }
    }
    let registry = require_registry(state, host)?;
    let store = read_store(state)?;
    let model_watch = watch_model(state, &registry, &store, watch).await?;
    let registry = if model_watch.recorded.is_some() {
        require_registry(state, host)?
    } else {
        registry
    };
    Ok(CheckOutcome {
        report: check(&registry, &store),
        model_watch,
    })
}

/// One line per evidence source: what it gave, or why nothing.
fn source_lines(watch: &ModelWatch) -> String {
    let mut out = String::new();
    for source in &watch.sources {
        let what = match &source.state {
            SourceState::Read { observations } => format!("{observations} observation(s)"),
            SourceState::Absent { reason } => format!("none ({reason})"),
            SourceState::Unreadable { reason } => format!("UNREADABLE: {reason}"),
        };
        let detail = source
            .detail
            .as_deref()
            .map(|d| format!(" [{d}]"))
            .unwrap_or_default();
        let _ = writeln!(out, "  {} ({}): {what}{detail}", source.source, source.name);
    }
    out
}

/// The model part of `check`'s text: the change (or the model identified) with its evidence
/// and what was recorded, or that nothing changed; then the sources read.
fn render_model_watch(host: &str, watch: &ModelWatch) -> String {
    let mut out = String::new();
    match &watch.decision.change {
        Some(change) => {
            let _ = writeln!(out, "{}", change.line());
            for other in &change.disagreeing {
                let _ = writeln!(
                    out,
                    "  disagreeing: {} names {}",
                    other.describe(),
                    other.model
                );
            }
            match &watch.recorded {
                Some(bump) => {
                    let _ = writeln!(
                        out,
                        "recorded as host {host}'s model since {} (its first sighting), with its evidence",
                        stamp(&bump.at)
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "not recorded (--no-auto-bump): `skill-lift bump --host {host} --model {}` records it",
                        change.to
                    );
                }
            }
        }
        None => {
            let seen = watch.decision.current.len();
            match &watch.last_bump {
                Some(bump) if seen > 0 => {
                    let _ = writeln!(
                        out,
                        "model {}: every source that saw a model since the bump at {} saw it",
                        bump.model,
                        stamp(&bump.at)
                    );
                    for other in watch
                        .decision
                        .current
                        .iter()
                        .filter(|o| !same_model(&o.model, &bump.model))
                    {
                        let _ = writeln!(
                            out,
                            "  disagreeing (what answered decides): {} names {}",
                            other.describe(),
                            other.model
                        );
                    }
                }
                Some(bump) => {
                    let _ = writeln!(
                        out,
                        "model {}: no new observation since the bump at {} ({} before it, {} already recorded with it)",
                        bump.model,
                        stamp(&bump.at),
                        watch.decision.before_bump,
                        watch.decision.already_recorded
                    );
                }
                None => out.push_str("model: none observed\n"),
            }
        }
    }
    out.push_str("model evidence:\n");
    out.push_str(&source_lines(watch));
    out
}

/// What `check` prints: JSON, or the model watch, then what is pending under the current model
/// and what to do.
pub fn render_check(host: &str, outcome: &CheckOutcome, json: bool) -> String {
    if json {
        return to_json(outcome);
    }
    let report = &outcome.report;
    let mut out = render_model_watch(host, &outcome.model_watch);
    let Some(current) = &report.current else {
        let _ = writeln!(
            out,
            "host {host}: no model bump recorded, nothing pending. `skill-lift bump --model ID` records one; `check` records the model it observes"
        );
        return out;
    };
    if !report.scanned_since_bump {
        out.push_str(
            "note: no scan since the bump; run `skill-lift scan` to catch new or edited assets\n",
        );
    }
    let pending = report.pending();
    if pending.is_empty() {
        let _ = writeln!(
            out,
            "host {host}: every asset ({}) was evaluated or waived under {} since {}",
            report.assets.len(),
            current.model,
            stamp(&current.at)
        );
    } else {
        let _ = writeln!(
            out,
            "host {host}: {} of {} asset(s) not evaluated under {} since the bump at {}:",
            pending.len(),
            report.assets.len(),
            current.model,
            stamp(&current.at)
        );
        for asset in pending {
            let _ = writeln!(
                out,
                "  {}  (last evaluated under: {})",
                asset.asset,
                asset.last_model.as_deref().unwrap_or("never")
            );
        }
        out.push_str(
            "run `skill-lift run` for each, or `skill-lift check --waive ASSET --reason TEXT`\n",
        );
    }
    out
}

/// `hosts`: print the host profiles (only `host` when given, with `root` as its root), as a
/// table or JSON.
pub fn print_hosts(
    state: &Path,
    host: Option<&str>,
    root: Option<&Path>,
    json: bool,
) -> Result<(), ConsoleError> {
    let listing = hosts_listing(state, host, root)?;
    crate::values::reporter::result(&render_hosts(&listing, json));
    Ok(())
}

/// `scan`: scan host `host` of `state` at its root (`root`, else the profile default, else
/// the last scan's) under the calibre named, and print the change report (text with its notes
/// and the registry's path, or JSON); true when assets were skipped.
pub fn scan_and_print(
    state: &Path,
    host: &str,
    root: Option<&Path>,
    calibre: &str,
    json: bool,
) -> Result<bool, ConsoleError> {
    let calibre: Calibre = calibre.parse().map_err(RegistryError::Calibre)?;
    let host = find_host(state, host)?;
    let root = resolve_root(state, &host, root)?;
    let done = scan_host(state, &host, root, calibre)?;
    if json {
        crate::values::reporter::result(&to_json(&done.summary));
    } else {
        crate::values::reporter::result(&render_scan(&done));
        report_scan_notes(&done);
        crate::values::reporter::result_line(&done.registry_line());
    }
    Ok(!done.summary.skipped.is_empty())
}

/// `status`: print the standing of `host` (`dashboard`: with the per-asset dashboard, the use
/// from session history and the value cards), as text or JSON.
pub fn print_status(
    state: &Path,
    host: &str,
    dashboard: Option<DashboardSettings<'_>>,
    json: bool,
) -> Result<(), ConsoleError> {
    let status = host_status(state, host, dashboard)?;
    crate::values::reporter::result(&render_status(&status, json));
    Ok(())
}

/// `check`: waive `waive_assets` (with `reason`), watch the host's model (`watch`), check and
/// print what changed and what is pending under the host's model; each unreadable source is
/// also a warning on stderr. Returns how the check ended.
pub async fn check_and_print(
    state: &Path,
    host: &str,
    waive_assets: &[String],
    reason: &str,
    watch: &WatchSettings,
    json: bool,
) -> Result<CheckEnding, ConsoleError> {
    let outcome = check_host(state, host, waive_assets, reason, watch).await?;
    for source in outcome.model_watch.unreadable() {
        if let SourceState::Unreadable { reason } = &source.state {
            report(Event::warning(format!(
                "model evidence from {} ({}) could not be read: {reason}",
                source.source, source.name
            )));
        }
    }
    crate::values::reporter::result(&render_check(host, &outcome, json));
    Ok(outcome.ending())
}
