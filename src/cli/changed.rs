//! `skill-lift changed`: the skills whose fingerprint differs between two git commits, as text
//! or as a JSON array for a CI matrix. The comparison lives in `crate::changed`.

use std::path::PathBuf;

use anyhow::anyhow;
use clap::{Args, ValueEnum};

use super::CommandError;
use super::Outcome;
use crate::asset::fingerprint::Calibre;
use crate::changed::{ChangeKind, ChangedError, GitRepo, compare, repository_relative};

/// Output format of `skill-lift changed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChangedFormat {
    /// One line per differing skill (status, path, name, fingerprints) and a count line.
    Text,
    /// One line: a JSON array of the skills to evaluate (changed and added), each
    /// `{path, name, status, base_fingerprint, head_fingerprint}` (no `base_fingerprint` for an
    /// added skill); `[]` when none.
    Json,
}

/// Flags of `skill-lift changed`.
#[derive(Debug, Args)]
pub struct ChangedArgs {
    /// Base commit (a branch, tag or sha), e.g. the pull request's base.
    #[arg(long, value_name = "REF")]
    pub base: String,
    /// Head commit.
    #[arg(long, value_name = "REF", default_value = "HEAD")]
    pub head: String,
    /// Compare against the merge base of --base and --head (what a pull request adds), not
    /// --base itself.
    #[arg(long)]
    pub merge_base: bool,
    /// Only skill folders under these folders (default: the whole repository).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The repository (any folder inside it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Fingerprint calibre: v4-no-eval-material (leaves EVAL.md and eval sets out), v3-agent-skills or v2-capability-surface.
    #[arg(long, value_name = "NAME", default_value = "v4-no-eval-material")]
    pub calibre: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ChangedFormat::Text)]
    pub format: ChangedFormat,
}

fn map_error(error: ChangedError) -> CommandError {
    match error {
        ChangedError::GitMissing { .. } | ChangedError::Unreadable { .. } => {
            CommandError::infrastructure(error)
        }
        _ => CommandError::input(error),
    }
}

fn short(oid: &str) -> &str {
    &oid[..oid.len().min(12)]
}

/// Run the command.
pub fn changed(args: ChangedArgs) -> Result<Outcome, CommandError> {
    let calibre: Calibre = args
        .calibre
        .parse()
        .map_err(|e: String| CommandError::input(anyhow!(e)))?;
    let repo = GitRepo::discover(&args.repo).map_err(map_error)?;
    let head = repo.resolve_commit(&args.head).map_err(map_error)?;
    let mut base = repo.resolve_commit(&args.base).map_err(map_error)?;
    if args.merge_base {
        base = repo.merge_base(&base, &head).map_err(map_error)?;
    }
    let under = repository_relative(&repo, &args.paths).map_err(map_error)?;
    let report = compare(&repo, &base, &head, calibre, &under).map_err(map_error)?;
    let evaluate: Vec<_> = report.to_evaluate().collect();
    match args.format {
        ChangedFormat::Json => {
            crate::reporter::result_line(
                &serde_json::to_string(&evaluate).expect("changes serialize"),
            );
        }
        ChangedFormat::Text => {
            for change in &report.changes {
                let fingerprints = match change.status {
                    ChangeKind::Changed => format!(
                        "{} -> {}",
                        change.base_fingerprint.as_deref().unwrap_or_default(),
                        change.head_fingerprint.as_deref().unwrap_or_default()
                    ),
                    ChangeKind::Added => change.head_fingerprint.clone().unwrap_or_default(),
                    ChangeKind::Moved => format!(
                        "from {} (same fingerprint {})",
                        change.moved_from.as_deref().unwrap_or_default(),
                        change.head_fingerprint.as_deref().unwrap_or_default()
                    ),
                    ChangeKind::Deleted => format!(
                        "was {}",
                        change.base_fingerprint.as_deref().unwrap_or_default()
                    ),
                };
                crate::reporter::result_line(&format!(
                    "{:<8} {}  ({})  {}",
                    change.status.name(),
                    display_path(&change.path),
                    change.name,
                    fingerprints
                ));
            }
        }
    }
    // Deleted and moved skills are not in the JSON matrix; say so on stderr.
    if args.format == ChangedFormat::Json {
        for change in report.changes.iter().filter(|c| !c.status.to_evaluate()) {
            match change.status {
                ChangeKind::Moved => crate::reporter::report(crate::reporter::Event::SkillMoved {
                    from: display_path(change.moved_from.as_deref().unwrap_or_default())
                        .to_string(),
                    to: display_path(&change.path).to_string(),
                }),
                _ => crate::reporter::report(crate::reporter::Event::SkillDeleted {
                    path: display_path(&change.path).to_string(),
                    name: change.name.clone(),
                }),
            }
        }
    }
    let count = |kind: ChangeKind| report.changes.iter().filter(|c| c.status == kind).count();
    crate::reporter::report(crate::reporter::Event::SkillsChanged {
        evaluate: evaluate.len(),
        changed: count(ChangeKind::Changed),
        added: count(ChangeKind::Added),
        deleted: count(ChangeKind::Deleted),
        moved: count(ChangeKind::Moved),
        unchanged: report.unchanged,
        base: short(&report.base).to_string(),
        head: short(&report.head).to_string(),
        calibre: report.calibre.to_string(),
    });
    Ok(Outcome::Success)
}

/// A repository-relative folder for display (`.` for the root).
fn display_path(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}
