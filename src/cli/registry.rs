//! The registry console commands: `hosts`, `scan`, `status`, `bump`, `check`. Flags live here;
//! mechanics live in `crate::registry`. Every command takes `--host`, `--root` and `--state`.

use std::path::{Path, PathBuf};

use clap::Args;

use super::CommandError;
use super::Outcome;
use super::flag_groups::StateArgs;
use crate::asset::fingerprint::Calibre;
use crate::registry::baseline::read_store;
use crate::registry::hosts::{HostProfile, discover_assets, find_host, hosts_file, load_hosts};
use crate::registry::models::{bump, check, waive};
use crate::registry::scan::{Registry, read_registry, registry_path, scan};

/// `--host NAME --root PATH` plus `--state`.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// Host profile: claude-code, codex, agents, gemini, opencode, cursor, goose, workbuddy,
    /// deepseek, generic, or one from hosts.json.
    #[arg(
        long,
        value_name = "NAME",
        env = "SKILL_LIFT_HOST",
        default_value = "claude-code"
    )]
    pub host: String,
    /// Asset root to use instead of the host's default.
    #[arg(long, value_name = "PATH")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub state: StateArgs,
}

impl HostArgs {
    pub fn resolve(&self) -> Result<(PathBuf, HostProfile), CommandError> {
        let state = self.state.dir()?;
        let host = find_host(&state, &self.host).map_err(CommandError::input)?;
        Ok((state, host))
    }

    /// Root: `--root`, else the profile default, else the root of the last scan.
    pub fn root(&self, state: &Path, host: &HostProfile) -> Result<PathBuf, CommandError> {
        match host.resolve_root(self.root.as_deref()) {
            Ok(root) => Ok(root),
            Err(error) => match read_registry(state, &host.name)
                .map_err(CommandError::input)?
                .and_then(|r| r.root)
            {
                Some(root) => Ok(root),
                None => Err(CommandError::input(error)),
            },
        }
    }
}

/// Flags of `skill-lift hosts`.
#[derive(Debug, Args)]
pub struct HostsArgs {
    /// Only this host.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Root for the selected host (with --host).
    #[arg(long, value_name = "PATH", requires = "host")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub state: StateArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `skill-lift scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Fingerprint calibre: v4-no-eval-material (leaves EVAL.md and eval sets out), v3-agent-skills or v2-capability-surface.
    #[arg(long, value_name = "NAME", default_value = "v4-no-eval-material")]
    pub calibre: String,
    /// Print the change report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `skill-lift status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Per-asset dashboard: latest lift, pass-rate trend, risk (maintenance-surface proxy) and a
    /// heuristic keep / rewrite / retire suggestion; plus use from session history
    /// (recommend / keep / rewrite / retire with the adoption evidence, or "no evidence").
    #[arg(long)]
    pub dashboard: bool,
    /// With --dashboard: a folder standing in for the home folder whose session history is read.
    #[arg(long, value_name = "DIR", env = "SKILL_LIFT_HISTORY_ROOT")]
    pub history_root: Option<PathBuf>,
    /// With --dashboard: the usage window in days.
    #[arg(long, value_name = "N", default_value_t = 90)]
    pub days: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `skill-lift bump`.
#[derive(Debug, Args)]
pub struct BumpArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// The new model version id.
    #[arg(long, value_name = "ID")]
    pub model: String,
    /// Free-text note.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

/// Flags of `skill-lift check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Waive these assets under the current model before checking (needs --reason).
    #[arg(long, value_name = "ASSET", requires = "reason")]
    pub waive: Vec<String>,
    /// Why the waived assets need no re-run.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn print_json<T: serde::Serialize>(value: &T) {
    crate::outln!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    );
}

/// `skill-lift hosts`.
pub fn hosts(args: HostsArgs) -> Result<Outcome, CommandError> {
    let state = args.state.dir()?;
    let mut profiles = load_hosts(&state).map_err(CommandError::input)?;
    if let Some(name) = &args.host {
        profiles.retain(|h| &h.name == name);
        if profiles.is_empty() {
            find_host(&state, name).map_err(CommandError::input)?;
        }
    }
    let mut rows = Vec::new();
    for profile in &profiles {
        let root = profile.resolve_root(args.root.as_deref()).ok();
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
    if args.json {
        print_json(
            &serde_json::json!({"state": state, "hosts_file": hosts_file(&state), "hosts": rows}),
        );
        return Ok(Outcome::Success);
    }
    crate::outln!("{:<13} {:<7} {:>6}  root", "host", "kind", "assets");
    for row in &rows {
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
        crate::outln!(
            "{:<13} {:<7} {:>6}  {}",
            row["name"].as_str().unwrap_or(""),
            row["kind"].as_str().unwrap_or(""),
            assets,
            root
        );
        if let Some(error) = row["error"].as_str() {
            crate::outln!("              error: {error}");
        }
    }
    crate::outln!(
        "\nstate folder {}; custom hosts go in {}",
        state.display(),
        hosts_file(&state).display()
    );
    Ok(Outcome::Success)
}

/// `skill-lift scan`.
pub fn scan_command(args: ScanArgs) -> Result<Outcome, CommandError> {
    let calibre: Calibre = args
        .calibre
        .parse()
        .map_err(|e: String| CommandError::input(anyhow::anyhow!(e)))?;
    let (state, host) = args.host.resolve()?;
    let root = args.host.root(&state, &host)?;
    let root = std::path::absolute(&root).unwrap_or(root);
    if !root.is_dir() {
        return Err(CommandError::input(anyhow::anyhow!(
            "{}: host `{}` root does not exist; pass --root PATH",
            root.display(),
            host.name
        )));
    }
    let summary = scan(&state, &host, &root, calibre).map_err(CommandError::input)?;
    let code = if summary.skipped.is_empty() {
        Outcome::Success
    } else {
        Outcome::CompletedWithWarnings
    };
    if args.json {
        print_json(&summary);
        return Ok(code);
    }
    crate::outln!(
        "scanned {} at {}: {} asset(s) ({} new, {} removed, {} fingerprint changed) in {:.2} s, calibre {}",
        host.name,
        root.display(),
        summary.assets,
        summary.new.len(),
        summary.removed.len(),
        summary.fingerprint_changed.len(),
        summary.elapsed_ms as f64 / 1000.0,
        calibre
    );
    if !summary.new.is_empty() {
        crate::outln!("new: {}", summary.new.join(", "));
    }
    if !summary.removed.is_empty() {
        crate::outln!("removed: {}", summary.removed.join(", "));
    }
    if !summary.fingerprint_changed.is_empty() {
        crate::outln!(
            "fingerprint changed (the asset was edited; old and new rows stay apart in regress): {}",
            summary.fingerprint_changed.join(", ")
        );
    }
    if !summary.recalibrated.is_empty() {
        crate::outln!(
            "recalibrated (fingerprint recomputed under calibre {calibre}, not an edit): {}",
            summary.recalibrated.join(", ")
        );
    }
    if !summary.caps_changed.is_empty() {
        crate::outln!(
            "[caps] {} asset(s) changed their capability surface (what it offers changed; unrelated to pass rate):",
            summary.caps_changed.len()
        );
        for (asset, tokens) in &summary.caps_changed {
            crate::outln!("  {asset} {}", tokens.join(" "));
        }
    }
    if let Ok(Some(registry)) = read_registry(&state, &host.name) {
        let plugins: Vec<_> = registry
            .assets
            .iter()
            .filter(|(_, a)| {
                a.kind == crate::registry::surface::AssetKind::Plugin
                    && a.root.as_deref() == Some(root.as_path())
            })
            .collect();
        if !plugins.is_empty() {
            crate::outln!("plugins ({}):", plugins.len());
            for (name, asset) in plugins {
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
                crate::outln!(
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
                );
            }
        }
    }
    if !summary.not_loaded.is_empty() {
        crate::outln!(
            "installed but not loaded by the host ({}; registered, and still checked): {}",
            summary.not_loaded.len(),
            summary.not_loaded.join(", ")
        );
    }
    if !summary.available.is_empty() {
        crate::outln!(
            "available, not installed ({} listed by marketplace clones; not registered, not checked): {}",
            summary.available.len(),
            summary.available.join(", ")
        );
    }
    for note in &summary.notes {
        crate::errln!("note: {note}");
    }
    if !summary.skipped.is_empty() {
        crate::errln!(
            "warning: skipped {} asset(s) that could not be registered (the others were):",
            summary.skipped.len()
        );
        for skipped in &summary.skipped {
            crate::errln!("  {}: {}", skipped.path.display(), skipped.reason);
        }
    }
    crate::outln!("registry: {}", registry_path(&state, &host.name).display());
    Ok(code)
}

fn require_registry(state: &Path, host: &str) -> Result<Registry, CommandError> {
    read_registry(state, host)
        .map_err(CommandError::input)?
        .ok_or_else(|| {
            CommandError::input(anyhow::anyhow!(
                "{}: no registry for host `{host}` yet; run `skill-lift scan --host {host}` first",
                registry_path(state, host).display()
            ))
        })
}

/// `skill-lift status`.
pub fn status(args: StatusArgs) -> Result<Outcome, CommandError> {
    let (state, host) = args.host.resolve()?;
    let registry = require_registry(&state, &host.name)?;
    let store = read_store(&state).map_err(CommandError::input)?;
    let report = check(&registry, &store);
    let skills = registry
        .assets
        .values()
        .filter(|a| a.kind == crate::registry::surface::AssetKind::Skill)
        .count();
    let dashboard = if args.dashboard {
        Some(crate::registry::dashboard::dashboard(&registry, &store))
    } else {
        None
    };
    let usage = if args.dashboard {
        let roots = crate::history::HistoryRoots::resolve(args.history_root.as_deref())
            .map_err(CommandError::input)?;
        let names = registry
            .assets
            .iter()
            .filter(|(_, a)| a.kind == crate::registry::surface::AssetKind::Skill)
            .map(|(name, _)| name.clone())
            .collect();
        Some(
            crate::usage::dashboard_usage(&host.name, &roots, args.days, &names)
                .map_err(CommandError::input)?,
        )
    } else {
        None
    };
    let not_loaded: Vec<String> = registry
        .assets
        .iter()
        .filter_map(|(name, a)| {
            let install = a.install.as_ref()?;
            (install.enabled.loads() == Some(false))
                .then(|| format!("{name} ({})", install.enabled.describe()))
        })
        .collect();
    if args.json {
        print_json(&serde_json::json!({
            "host": host.name, "registry": registry_path(&state, &host.name), "root": registry.root,
            "last_scan": registry.last_scan, "last_bump": registry.model_bumps.last(),
            "assets": registry.assets.len(), "skills": skills,
            "plugins": registry.assets.len() - skills,
            "pending": report.pending().iter().map(|a| &a.asset).collect::<Vec<_>>(),
            "monitored": registry.assets.iter()
                .filter_map(|(name, a)| a.monitoring.as_ref().map(|m| serde_json::json!({
                    "asset": name, "path": a.path, "fingerprint": a.fingerprint,
                    "changed_since_vetting": a.fingerprint != m.vetted_fingerprint,
                    "monitoring": m})))
                .collect::<Vec<_>>(),
            "scans": registry.scans.len(), "dashboard": dashboard, "usage": usage,
            "not_loaded": not_loaded, "available": registry.available.len(),
        }));
        return Ok(Outcome::Success);
    }
    crate::outln!(
        "host {} ({})",
        host.name,
        registry_path(&state, &host.name).display()
    );
    crate::outln!(
        "root {}",
        registry
            .root
            .as_ref()
            .map_or("-".to_string(), |r| r.display().to_string())
    );
    crate::outln!(
        "last scan {}",
        registry.last_scan.map_or("never".to_string(), |t| t
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    );
    match registry.model_bumps.last() {
        Some(bump) => crate::outln!(
            "last bump {} at {}",
            bump.model,
            bump.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
        None => crate::outln!(
            "last bump none (the model-change event source is manual: `skill-lift bump --model ID`)"
        ),
    }
    crate::outln!(
        "assets {} ({} skills, {} plugins)",
        registry.assets.len(),
        skills,
        registry.assets.len() - skills
    );
    if !not_loaded.is_empty() {
        crate::outln!(
            "installed but not loaded {}: {}",
            not_loaded.len(),
            not_loaded.join(", ")
        );
    }
    if !registry.available.is_empty() {
        crate::outln!(
            "available, not installed {} (listed by marketplace clones; not registered, not checked)",
            registry.available.len()
        );
    }
    let monitored: Vec<String> = registry
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
            Some(format!(
                "  {name}: vetted {} ({}) on {} with {}, {golden}{drift}",
                m.registered_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                m.decision,
                m.runner,
                m.model
            ))
        })
        .collect();
    if monitored.is_empty() {
        crate::outln!("monitored 0 (register a skill with `skill-lift vet SKILL_DIR`)");
    } else {
        crate::outln!("monitored {}:", monitored.len());
        for line in monitored {
            crate::outln!("{line}");
        }
    }
    let pending = report.pending();
    if registry.model_bumps.is_empty() {
        crate::outln!("pending - (no bump recorded)");
    } else if pending.is_empty() {
        crate::outln!("pending 0");
    } else {
        let names: Vec<&str> = pending.iter().map(|a| a.asset.as_str()).collect();
        crate::outln!("pending {}: {}", pending.len(), names.join(", "));
    }
    if let Some(rows) = dashboard {
        crate::outln!();
        crate::out!("{}", crate::registry::dashboard::to_table(&rows));
    }
    if let Some(usage) = &usage {
        crate::outln!();
        crate::out!("{}", crate::usage::dashboard_lines(usage, args.days));
    }
    Ok(Outcome::Success)
}

/// `skill-lift bump`.
pub fn bump_command(args: BumpArgs) -> Result<Outcome, CommandError> {
    let (state, host) = args.host.resolve()?;
    if args.model.trim().is_empty() {
        return Err(CommandError::input(anyhow::anyhow!(
            "--model must not be empty"
        )));
    }
    let bumped =
        bump(&state, &host.name, args.model.trim(), args.note).map_err(CommandError::input)?;
    let registry = require_registry(&state, &host.name)?;
    crate::outln!(
        "host {}: model {} marked at {}; {} asset(s) pending until run under it or waived (`skill-lift check`)",
        host.name,
        bumped.model,
        bumped.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        registry.assets.len()
    );
    Ok(Outcome::Success)
}

/// `skill-lift check`: exit 1 while assets are pending under the current model.
pub fn check_command(args: CheckArgs) -> Result<Outcome, CommandError> {
    let (state, host) = args.host.resolve()?;
    require_registry(&state, &host.name)?;
    if !args.waive.is_empty() {
        let reason = args.reason.clone().unwrap_or_default();
        let waived =
            waive(&state, &host.name, &args.waive, &reason).map_err(CommandError::input)?;
        for waiver in waived {
            crate::errln!(
                "waived {} under {}: {}",
                waiver.asset,
                waiver.model,
                waiver.reason
            );
        }
    }
    let registry = require_registry(&state, &host.name)?;
    let store = read_store(&state).map_err(CommandError::input)?;
    let report = check(&registry, &store);
    let pending = report.pending();
    let code = if pending.is_empty() {
        Outcome::Success
    } else {
        Outcome::GateFailed
    };
    if args.json {
        print_json(&report);
        return Ok(code);
    }
    let Some(current) = &report.current else {
        crate::outln!(
            "host {}: no model bump recorded, nothing to check. The event source is manual: run `skill-lift bump --model ID` when the model changes (until then a scheduled check stays green).",
            host.name
        );
        return Ok(code);
    };
    if !report.scanned_since_bump {
        crate::outln!(
            "note: no scan since the bump; run `skill-lift scan` to catch new or edited assets"
        );
    }
    if pending.is_empty() {
        crate::outln!(
            "host {}: every asset ({}) was evaluated or waived under {} since {}",
            host.name,
            report.assets.len(),
            current.model,
            current
                .at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
    } else {
        crate::outln!(
            "host {}: {} of {} asset(s) not evaluated under {} since the bump at {}:",
            host.name,
            pending.len(),
            report.assets.len(),
            current.model,
            current
                .at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
        for asset in pending {
            crate::outln!(
                "  {}  (last evaluated under: {})",
                asset.asset,
                asset.last_model.as_deref().unwrap_or("never")
            );
        }
        crate::outln!(
            "run `skill-lift run` for each, or `skill-lift check --waive ASSET --reason TEXT`"
        );
    }
    Ok(code)
}
