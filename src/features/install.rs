//! `skill-lift install`: skill-lift's own Agent Skill (`assets/skill-lift/SKILL.md`, built into
//! the binary) copied into the skills folder of every agent host found on the machine, each copy
//! verified by fingerprint; and `--uninstall`.
//!
//! Hosts are the skill-taking host profiles of `crate::features::registry::hosts` (built-in ones such as
//! `~/.claude/skills`, `~/.agents/skills`, `~/.codex/skills`, `~/.gemini/skills`, plus
//! `hosts.json`). A host is *found* when its own folder exists (`~/.claude`, `~/.codex`, …);
//! skill-lift never creates a host's folder, only the `skills/` folder inside it.
//!
//! An install is all or nothing: each copy is written into a hidden staging folder beside its
//! target, verified, then renamed into place (a previous copy is kept aside); when any host
//! fails, every host done so far is rolled back (previous copies restored) and every folder
//! this install created is removed, so a failure never leaves an empty or partial folder.
//! Only the bundled files are written: nothing is read from the user's files into them.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::features::asset::fingerprint::{Calibre, fingerprint};
use crate::features::registry::hosts::{HostKind, HostProfile};

/// The installed folder's name (and the skill's `name`).
pub(crate) const SKILL_NAME: &str = "skill-lift";

/// The files of the bundled skill: (relative path, bytes).
pub(crate) const BUNDLED_FILES: [(&str, &str); 1] =
    [("SKILL.md", include_str!("../../assets/skill-lift/SKILL.md"))];

/// Prefix of the staging and set-aside folders an install creates beside a target.
const STAGING_PREFIX: &str = ".skill-lift-install-";
const PREVIOUS_PREFIX: &str = ".skill-lift-previous-";

/// Why an install or uninstall failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: the copy's fingerprint {found} is not the bundled skill's {expected}")]
    Verification {
        path: PathBuf,
        expected: String,
        found: String,
    },
    #[error(
        "{path}: holds a different skill named `{SKILL_NAME}` (not skill-lift's own); not replaced (remove it, skip the host with --host, or pass --force)"
    )]
    Foreign { path: PathBuf },
    #[error(
        "{path}: holds files that are not part of skill-lift's skill ({files}); not touched, so they are not lost (move them elsewhere, or pass --force to replace the folder with them)"
    )]
    UserFiles { path: PathBuf, files: String },
    #[error(transparent)]
    Fingerprint(#[from] crate::features::asset::fingerprint::FingerprintError),
    #[error(transparent)]
    Registry(#[from] crate::features::registry::RegistryError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |source| InstallError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One host the skill goes into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct InstallTarget {
    /// Host profile name (`claude-code`, `codex`, …).
    pub host: String,
    /// The host's own folder, whose existence means the host is installed (`~/.claude`).
    pub host_dir: PathBuf,
    /// Its skills folder (`~/.claude/skills`).
    pub skills_dir: PathBuf,
    /// The skill's folder (`~/.claude/skills/skill-lift`).
    pub target: PathBuf,
}

/// A host profile that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SkippedHost {
    pub host: String,
    pub reason: String,
}

/// The skills folder and host folder of a skill-taking host profile: a root ending in `skills`
/// is the skills folder (its parent the host's); otherwise `<root>/skills` (Claude Code's
/// `~/.claude`).
fn host_folders(host: &HostProfile) -> Result<Option<(PathBuf, PathBuf)>, InstallError> {
    let Some(root) = &host.root else {
        return Ok(None);
    };
    let root = crate::features::registry::state::expand_home(root)?;
    if root.file_name().is_some_and(|n| n == "skills") {
        let parent = root
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| root.clone());
        Ok(Some((parent, root)))
    } else {
        Ok(Some((root.clone(), root.join("skills"))))
    }
}

/// The hosts to install into: skill-taking profiles (`hosts` from
/// [`crate::features::registry::hosts::load_hosts`]) whose host folder exists, optionally only those named
/// in `only`; one target per distinct skills folder.
pub(crate) fn discover_targets(
    hosts: &[HostProfile],
    only: &[String],
) -> Result<(Vec<InstallTarget>, Vec<SkippedHost>), InstallError> {
    let mut targets: Vec<InstallTarget> = Vec::new();
    let mut skipped = Vec::new();
    for host in hosts {
        if !only.is_empty() && !only.contains(&host.name) {
            continue;
        }
        let skip = |reason: String| SkippedHost {
            host: host.name.clone(),
            reason,
        };
        if host.kind == HostKind::Plugin {
            skipped.push(skip("installs plugins, not skills".to_string()));
            continue;
        }
        let Some((host_dir, skills_dir)) = host_folders(host)? else {
            skipped.push(skip("has no default folder".to_string()));
            continue;
        };
        if !host_dir.is_dir() {
            skipped.push(skip(format!(
                "not found ({} does not exist)",
                host_dir.display()
            )));
            continue;
        }
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if let Some(first) = targets
            .iter()
            .find(|t| canonical(&t.skills_dir) == canonical(&skills_dir))
        {
            skipped.push(skip(format!(
                "shares {} with {}",
                skills_dir.display(),
                first.host
            )));
            continue;
        }
        targets.push(InstallTarget {
            host: host.name.clone(),
            target: skills_dir.join(SKILL_NAME),
            host_dir,
            skills_dir,
        });
    }
    Ok((targets, skipped))
}

/// Write the bundled files into `dir` (which must exist), each fsync'd, mode 0644.
fn write_bundle(dir: &Path) -> Result<(), InstallError> {
    for (relative, text) in BUNDLED_FILES {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let mut file = crate::disk::create(&path)
            .map_err(crate::disk::DiskError::into_io)
            .map_err(io(&path))?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(io(&path))?;
        file.sync_all().map_err(io(&path))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
                .map_err(io(&path))?;
        }
    }
    Ok(())
}

/// The fingerprint (calibre v3-agent-skills) every installed copy must have: the bundled files
/// written into a private temporary folder and fingerprinted with the same function as any skill.
pub(crate) fn bundled_fingerprint() -> Result<String, InstallError> {
    let temp = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
    let dir = temp.path().join(SKILL_NAME);
    std::fs::create_dir(&dir).map_err(io(&dir))?;
    write_bundle(&dir)?;
    Ok(fingerprint(&dir, Calibre::V3AgentSkills)?.digest)
}

/// Whether `dir` holds skill-lift's own skill (any version): its `SKILL.md` names `skill-lift`
/// and its description is skill-lift's. Only the frontmatter of that one file is read.
pub(crate) fn is_own_copy(dir: &Path) -> bool {
    match crate::features::asset::load_skill(dir) {
        Ok(skill) => {
            skill.name == SKILL_NAME && skill.description.contains("paired runs with and without")
        }
        Err(_) => false,
    }
}

/// The entries under an installed copy `dir` that the bundle does not hold (files a user
/// added), relative, sorted; symbolic links are listed, never followed.
pub(crate) fn added_files(dir: &Path) -> Vec<String> {
    let bundled: std::collections::BTreeSet<&str> = BUNDLED_FILES
        .iter()
        .map(|(relative, _)| *relative)
        .collect();
    let mut added = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let relative = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => stack.push(path),
                _ if bundled.contains(relative.as_str()) => {}
                _ => added.push(relative),
            }
        }
    }
    added.sort();
    added
}

/// The refusal for an installed copy holding files the user added (unless `force`).
fn refuse_added_files(dir: &Path, force: bool) -> Result<(), InstallError> {
    if force || dir.symlink_metadata().is_err() {
        return Ok(());
    }
    let added = added_files(dir);
    if added.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = added.iter().take(5).map(String::as_str).collect();
    let more = added.len().saturating_sub(shown.len());
    Err(InstallError::UserFiles {
        path: dir.to_path_buf(),
        files: if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        },
    })
}

/// What happened (or, with `--dry-run`, would happen) at one host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum InstallAction {
    /// A new copy.
    Installed,
    /// An older or different copy of skill-lift's skill was replaced.
    Updated,
    /// The same copy was already there (fingerprint equal).
    Unchanged,
    /// Removed (`--uninstall`).
    Removed,
    /// Nothing to remove.
    Absent,
    /// A different skill named `skill-lift` is there; left alone (`--uninstall`).
    KeptForeign,
    /// Undone because another host failed.
    RolledBack,
    /// This host failed.
    Failed,
}

impl InstallAction {
    /// Snake-case name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Installed => "installed",
            Self::Updated => "updated",
            Self::Unchanged => "unchanged",
            Self::Removed => "removed",
            Self::Absent => "absent",
            Self::KeptForeign => "kept (not skill-lift's)",
            Self::RolledBack => "rolled back",
            Self::Failed => "FAILED",
        }
    }
}

/// One host's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct HostOutcome {
    pub host: String,
    pub target: PathBuf,
    pub action: InstallAction,
    /// The verified fingerprint of the copy (installs).
    pub fingerprint: Option<String>,
    /// The error, for a failed host.
    pub error: Option<String>,
}

/// The outcome of an install or uninstall over all targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct InstallReport {
    /// The bundled skill's fingerprint.
    pub fingerprint: String,
    pub dry_run: bool,
    pub outcomes: Vec<HostOutcome>,
    pub skipped: Vec<SkippedHost>,
    /// Whether every host succeeded (an install is all or nothing).
    pub succeeded: bool,
}

/// Undo record of one host's install.
struct Done {
    target: PathBuf,
    /// Where the previous copy was set aside (restored on rollback, removed on success).
    previous: Option<PathBuf>,
    /// Folders this install created, deepest last.
    created: Vec<PathBuf>,
    /// Whether the target was replaced (false: unchanged, nothing to undo).
    changed: bool,
}

/// Create `dir` and any missing parents up to (not including) an existing ancestor; returns the
/// folders created, shallowest first.
fn create_dirs(dir: &Path) -> Result<Vec<PathBuf>, InstallError> {
    let mut missing = Vec::new();
    let mut current = dir.to_path_buf();
    while !current.exists() {
        missing.push(current.clone());
        match current.parent() {
            Some(parent) => current = parent.to_path_buf(),
            None => break,
        }
    }
    missing.reverse();
    let mut created = Vec::new();
    for folder in missing {
        if let Err(error) = std::fs::create_dir(&folder) {
            remove_created(&created);
            return Err(io(&folder)(error));
        }
        created.push(folder);
    }
    Ok(created)
}

/// Remove folders an install created, deepest first, only while empty.
fn remove_created(created: &[PathBuf]) {
    for folder in created.iter().rev() {
        let _ = std::fs::remove_dir(folder);
    }
}

fn install_one(
    target: &InstallTarget,
    expected: &str,
    force: bool,
) -> Result<(Done, InstallAction), InstallError> {
    let exists = target.target.symlink_metadata().is_ok();
    if exists && !force && !is_own_copy(&target.target) {
        return Err(InstallError::Foreign {
            path: target.target.clone(),
        });
    }
    if exists {
        refuse_added_files(&target.target, force)?;
    }
    if exists
        && fingerprint(&target.target, Calibre::V3AgentSkills).is_ok_and(|f| f.digest == expected)
    {
        let done = Done {
            target: target.target.clone(),
            previous: None,
            created: Vec::new(),
            changed: false,
        };
        return Ok((done, InstallAction::Unchanged));
    }
    let created = create_dirs(&target.skills_dir)?;
    let result = (|| -> Result<Done, InstallError> {
        let staging = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(&target.skills_dir)
            .map_err(io(&target.skills_dir))?;
        write_bundle(staging.path())?;
        let staged = fingerprint(staging.path(), Calibre::V3AgentSkills)?.digest;
        if staged != expected {
            return Err(InstallError::Verification {
                path: staging.path().to_path_buf(),
                expected: expected.to_string(),
                found: staged,
            });
        }
        let previous = if exists {
            let aside = tempfile::Builder::new()
                .prefix(PREVIOUS_PREFIX)
                .tempdir_in(&target.skills_dir)
                .map_err(io(&target.skills_dir))?
                .keep();
            let aside = aside.join(SKILL_NAME);
            std::fs::rename(&target.target, &aside).map_err(io(&target.target))?;
            Some(aside)
        } else {
            None
        };
        let staging_path = staging.keep();
        if let Err(error) = std::fs::rename(&staging_path, &target.target) {
            let _ = std::fs::remove_dir_all(&staging_path);
            if let Some(aside) = &previous {
                let _ = std::fs::rename(aside, &target.target);
                let _ = std::fs::remove_dir(aside.parent().unwrap_or(aside));
            }
            return Err(io(&target.target)(error));
        }
        let done = Done {
            target: target.target.clone(),
            previous,
            created: Vec::new(),
            changed: true,
        };
        let installed = fingerprint(&target.target, Calibre::V3AgentSkills)?.digest;
        if installed != expected {
            rollback(&done);
            return Err(InstallError::Verification {
                path: target.target.clone(),
                expected: expected.to_string(),
                found: installed,
            });
        }
        Ok(done)
    })();
    match result {
        Ok(mut done) => {
            done.created = created;
            let action = if done.previous.is_some() {
                InstallAction::Updated
            } else {
                InstallAction::Installed
            };
            Ok((done, action))
        }
        Err(error) => {
            remove_created(&created);
            Err(error)
        }
    }
}

/// Undo one host's install: remove the new copy, restore the previous one, remove created
/// folders.
fn rollback(done: &Done) {
    if done.changed {
        let _ = std::fs::remove_dir_all(&done.target);
        if let Some(aside) = &done.previous {
            let _ = std::fs::rename(aside, &done.target);
            if let Some(holder) = aside.parent() {
                let _ = std::fs::remove_dir(holder);
            }
        }
    }
    remove_created(&done.created);
}

/// Install into every target, all or nothing. With `dry_run`, only say what would happen.
pub(crate) fn install(
    targets: &[InstallTarget],
    skipped: Vec<SkippedHost>,
    dry_run: bool,
    force: bool,
) -> Result<InstallReport, InstallError> {
    let expected = bundled_fingerprint()?;
    let mut outcomes = Vec::new();
    if dry_run {
        for target in targets {
            let exists = target.target.symlink_metadata().is_ok();
            let (action, error) = if !exists {
                (InstallAction::Installed, None)
            } else if !force && !is_own_copy(&target.target) {
                (
                    InstallAction::Failed,
                    Some(
                        InstallError::Foreign {
                            path: target.target.clone(),
                        }
                        .to_string(),
                    ),
                )
            } else if let Err(refused) = refuse_added_files(&target.target, force) {
                (InstallAction::Failed, Some(refused.to_string()))
            } else if fingerprint(&target.target, Calibre::V3AgentSkills)
                .is_ok_and(|f| f.digest == expected)
            {
                (InstallAction::Unchanged, None)
            } else {
                (InstallAction::Updated, None)
            };
            outcomes.push(HostOutcome {
                host: target.host.clone(),
                target: target.target.clone(),
                action,
                fingerprint: Some(expected.clone()),
                error,
            });
        }
        let succeeded = outcomes.iter().all(|o| o.action != InstallAction::Failed);
        return Ok(InstallReport {
            fingerprint: expected,
            dry_run,
            outcomes,
            skipped,
            succeeded,
        });
    }
    let mut done: Vec<Done> = Vec::new();
    let mut failed = false;
    for target in targets {
        if failed {
            break;
        }
        match install_one(target, &expected, force) {
            Ok((record, action)) => {
                done.push(record);
                outcomes.push(HostOutcome {
                    host: target.host.clone(),
                    target: target.target.clone(),
                    action,
                    fingerprint: Some(expected.clone()),
                    error: None,
                });
            }
            Err(error) => {
                failed = true;
                outcomes.push(HostOutcome {
                    host: target.host.clone(),
                    target: target.target.clone(),
                    action: InstallAction::Failed,
                    fingerprint: None,
                    error: Some(error.to_string()),
                });
            }
        }
    }
    if failed {
        for (record, outcome) in done.iter().zip(outcomes.iter_mut()).rev() {
            rollback(record);
            if record.changed {
                outcome.action = InstallAction::RolledBack;
            }
        }
    } else {
        for record in &done {
            if let Some(aside) = &record.previous
                && let Some(holder) = aside.parent()
            {
                let _ = std::fs::remove_dir_all(holder);
            }
        }
    }
    Ok(InstallReport {
        fingerprint: expected,
        dry_run,
        outcomes,
        skipped,
        succeeded: !failed,
    })
}

/// Remove skill-lift's own skill from every target (a different skill named `skill-lift` is
/// kept, unless `force`). With `dry_run`, only say what would happen.
pub(crate) fn uninstall(
    targets: &[InstallTarget],
    skipped: Vec<SkippedHost>,
    dry_run: bool,
    force: bool,
) -> Result<InstallReport, InstallError> {
    let expected = bundled_fingerprint()?;
    let mut outcomes = Vec::new();
    let mut succeeded = true;
    for target in targets {
        let exists = target.target.symlink_metadata().is_ok();
        let (action, error) = if !exists {
            (InstallAction::Absent, None)
        } else if !force && !is_own_copy(&target.target) {
            (InstallAction::KeptForeign, None)
        } else if let Err(refused) = refuse_added_files(&target.target, force) {
            succeeded = false;
            (InstallAction::Failed, Some(refused.to_string()))
        } else if dry_run {
            (InstallAction::Removed, None)
        } else {
            match std::fs::remove_dir_all(&target.target) {
                Ok(()) => (InstallAction::Removed, None),
                Err(error) => {
                    succeeded = false;
                    (
                        InstallAction::Failed,
                        Some(io(&target.target)(error).to_string()),
                    )
                }
            }
        };
        outcomes.push(HostOutcome {
            host: target.host.clone(),
            target: target.target.clone(),
            action,
            fingerprint: None,
            error,
        });
    }
    Ok(InstallReport {
        fingerprint: expected,
        dry_run,
        outcomes,
        skipped,
        succeeded,
    })
}

/// What `skill-lift install` does, and where.
#[derive(Debug, Clone)]
pub(crate) struct InstallSettings {
    /// The state folder holding `hosts.json`.
    pub state: PathBuf,
    /// Only these hosts (empty: every host found).
    pub hosts: Vec<String>,
    /// Remove skill-lift's skill instead of installing it.
    pub uninstall: bool,
    /// Say what would happen; change nothing.
    pub dry_run: bool,
    /// Replace (or remove) a folder named skill-lift that is not skill-lift's own or holds
    /// files a user added.
    pub force: bool,
}

/// Why `skill-lift install` stopped: the hosts cannot be read, named or found (input errors), or the
/// install or uninstall failed ([`InstallCommandError::is_infrastructure`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallCommandError {
    /// The host profiles cannot be read, or `--host` names none of them.
    #[error(transparent)]
    Hosts(#[from] crate::features::registry::RegistryError),
    /// The hosts' folders cannot be resolved.
    #[error(transparent)]
    Targets(InstallError),
    /// The install or uninstall itself failed.
    #[error(transparent)]
    Failed(InstallError),
}

impl InstallCommandError {
    /// Whether the failure is the infrastructure's (writing into a host) rather than the
    /// inputs'.
    pub(crate) fn is_infrastructure(&self) -> bool {
        matches!(self, Self::Failed(_))
    }
}

/// Run `skill-lift install` (or `--uninstall`): choose the hosts found, install into (or
/// remove from) every one and print what was done at each on stdout. `None` when no agent host
/// was found (each skipped host and the absence reported).
pub(crate) fn install_command(
    settings: &InstallSettings,
) -> Result<Option<InstallReport>, InstallCommandError> {
    let hosts = crate::features::registry::hosts::load_hosts(&settings.state)?;
    if let Some(name) = settings
        .hosts
        .iter()
        .find(|n| !hosts.iter().any(|h| &h.name == *n))
    {
        let known: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
        return Err(crate::features::registry::RegistryError::UnknownHost {
            name: name.clone(),
            known: known.join(", "),
            hosts_file: crate::features::registry::hosts::hosts_file(&settings.state),
        }
        .into());
    }
    let (targets, skipped) =
        discover_targets(&hosts, &settings.hosts).map_err(InstallCommandError::Targets)?;
    if targets.is_empty() {
        for host in &skipped {
            crate::values::reporter::report(crate::values::reporter::Event::HostSkipped {
                host: host.host.to_string(),
                reason: host.reason.to_string(),
            });
        }
        crate::values::reporter::report(crate::values::reporter::Event::NoAgentHost);
        return Ok(None);
    }
    let report = if settings.uninstall {
        uninstall(&targets, skipped, settings.dry_run, settings.force)
    } else {
        install(&targets, skipped, settings.dry_run, settings.force)
    }
    .map_err(InstallCommandError::Failed)?;
    crate::values::reporter::result(&render_report(&report, settings.uninstall));
    Ok(Some(report))
}

/// What an install or uninstall did (or would do) at each host, one line each, as printed.
pub(crate) fn render_report(report: &InstallReport, uninstalling: bool) -> String {
    let verb = match (uninstalling, report.dry_run) {
        (false, false) => "install",
        (false, true) => "install (dry run: nothing written)",
        (true, false) => "uninstall",
        (true, true) => "uninstall (dry run: nothing removed)",
    };
    let mut text = format!(
        "skill-lift {verb}: skill `{SKILL_NAME}` {}\n",
        report.fingerprint
    );
    for outcome in &report.outcomes {
        text.push_str(&render_outcome(outcome, report.dry_run));
    }
    for host in &report.skipped {
        text.push_str(&format!(
            "  {:<12} {:<16} {}\n",
            host.host, "skipped", host.reason
        ));
    }
    if !report.succeeded && !uninstalling && !report.dry_run {
        text.push_str(
            "Nothing was installed: every host done before the failure was rolled back.\n",
        );
    }
    text
}

/// One host's line (and its error's, redacted).
fn render_outcome(outcome: &HostOutcome, dry_run: bool) -> String {
    let verified = match (outcome.action, &outcome.fingerprint) {
        (InstallAction::Installed | InstallAction::Updated | InstallAction::Unchanged, Some(_))
            if !dry_run =>
        {
            " (fingerprint verified)"
        }
        _ => "",
    };
    let action = match (dry_run, outcome.action) {
        (true, InstallAction::Installed) => "would install",
        (true, InstallAction::Updated) => "would update",
        (true, InstallAction::Removed) => "would remove",
        (_, other) => other.as_str(),
    };
    let mut text = format!(
        "  {:<12} {:<16} {}{verified}\n",
        outcome.host,
        action,
        outcome.target.display()
    );
    if let Some(error) = &outcome.error {
        let error = crate::disk::redact::redact_text(error);
        text.push_str(&format!("               {error}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_skill_lints_clean_of_errors() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join(SKILL_NAME);
        std::fs::create_dir(&dir).unwrap();
        write_bundle(&dir).unwrap();
        let report = crate::features::skill_fit::lint::lint_skill(
            &dir,
            &crate::features::skill_fit::lint::LintOptions::default(),
        )
        .unwrap();
        assert!(report.passes(true), "{:#?}", report.findings);
        assert!(is_own_copy(&dir));
        assert_eq!(
            bundled_fingerprint().unwrap(),
            fingerprint(&dir, Calibre::V3AgentSkills).unwrap().digest
        );
    }

    #[test]
    fn create_dirs_reports_only_what_it_made() {
        let temp = tempfile::tempdir().unwrap();
        let deep = temp.path().join("a/b/c");
        let created = create_dirs(&deep).unwrap();
        assert_eq!(
            created,
            vec![temp.path().join("a"), temp.path().join("a/b"), deep.clone()]
        );
        remove_created(&created);
        assert!(!temp.path().join("a").exists());
    }

    #[test]
    fn a_dry_run_report_says_what_would_happen_at_each_host() {
        let report = InstallReport {
            fingerprint: "fp".into(),
            dry_run: true,
            outcomes: vec![HostOutcome {
                host: "codex".into(),
                target: PathBuf::from("/h/.codex/skills/skill-lift"),
                action: InstallAction::Installed,
                fingerprint: Some("fp".into()),
                error: None,
            }],
            skipped: vec![SkippedHost {
                host: "gemini".into(),
                reason: "not found".into(),
            }],
            succeeded: true,
        };
        assert_eq!(
            render_report(&report, false),
            "skill-lift install (dry run: nothing written): skill `skill-lift` fp\n\
             \x20 codex        would install    /h/.codex/skills/skill-lift\n\
             \x20 gemini       skipped          not found\n"
        );
    }
}
