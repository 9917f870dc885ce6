//! Skills whose fingerprint changed between two git commits (`skill-lift changed`).
//!
//! Git is driven as a subprocess (`git rev-parse`, `git ls-tree -r -z`, `git cat-file --batch`)
//! rather than through a library: these three plumbing commands are git's stable scripting
//! interface, they honour the repository exactly as the user's own git does (alternates,
//! partial clones, sha256 object format, worktrees), and they add no dependency to the build.
//! Nothing is checked out: the fingerprint is computed from the committed blobs with
//! `crate::features::asset::fingerprint` (same selection rule, same hash layout), so a skill's `changed`
//! fingerprint equals `skill-lift fingerprint` of a clean checkout of that commit (unless
//! `.gitattributes` filters such as LFS or end-of-line conversion change files on checkout).
//!
//! A *skill* is a folder holding a regular file named `SKILL.md` (outside `node_modules/`).
//! Only the files the calibre selects count, so a README-only edit changes nothing; a skill
//! present only at the head is added, one present only at the base is deleted, and an added
//! skill whose fingerprint equals a deleted one's is reported as moved (same content, new path).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

use crate::features::asset::fingerprint::{Calibre, FingerprintHasher, selects};

/// Why the comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChangedError {
    #[error("cannot run `git` ({source}); install git and put it on PATH")]
    GitMissing { source: std::io::Error },
    #[error("{dir}: not inside a git repository ({message})")]
    NotARepository { dir: PathBuf, message: String },
    #[error("`{rev}` is not a commit in {repo}{hint} ({message})")]
    UnknownRevision {
        rev: String,
        repo: PathBuf,
        hint: &'static str,
        message: String,
    },
    #[error("`git {args}` failed in {repo}: {message}")]
    Git {
        args: String,
        repo: PathBuf,
        message: String,
    },
    #[error("`git {args}` printed output this version cannot read: {message}")]
    Unreadable { args: String, message: String },
    #[error("{path}: not inside the repository {repo}")]
    OutsideRepository { path: PathBuf, repo: PathBuf },
}

/// A git repository, driven through the `git` program.
#[derive(Debug, Clone)]
pub(crate) struct GitRepo {
    /// The top folder of the working tree (`git rev-parse --show-toplevel`).
    pub root: PathBuf,
}

/// One file of a tree: its object id and whether it is a regular file (mode 100644/100755).
#[derive(Debug, Clone, PartialEq, Eq)]
struct TreeFile {
    oid: String,
    regular: bool,
}

impl GitRepo {
    /// The repository holding `dir`.
    pub(crate) fn discover(dir: &Path) -> Result<Self, ChangedError> {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["rev-parse", "--show-toplevel"])
            .stdin(Stdio::null())
            .output()
            .map_err(|source| ChangedError::GitMissing { source })?;
        if !output.status.success() {
            return Err(ChangedError::NotARepository {
                dir: dir.to_path_buf(),
                message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        let root = String::from_utf8_lossy(&output.stdout).trim().to_string();
        Ok(Self {
            root: PathBuf::from(root),
        })
    }

    fn command(&self) -> Command {
        let mut command = Command::new("git");
        command
            .arg("-C")
            .arg(&self.root)
            // Never ask for credentials or paginate; plumbing output is stable.
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE");
        command
    }

    fn run(&self, args: &[&str]) -> Result<Vec<u8>, ChangedError> {
        let output = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|source| ChangedError::GitMissing { source })?;
        if !output.status.success() {
            return Err(ChangedError::Git {
                args: args.join(" "),
                repo: self.root.clone(),
                message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        Ok(output.stdout)
    }

    /// The full object id of the commit `rev` names (a branch, tag, sha, `HEAD~1`, ...).
    pub(crate) fn resolve_commit(&self, rev: &str) -> Result<String, ChangedError> {
        let spec = format!("{rev}^{{commit}}");
        let output = self
            .command()
            .args([
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|source| ChangedError::GitMissing { source })?;
        if !output.status.success() || rev.starts_with('-') {
            let shallow = self
                .run(&["rev-parse", "--is-shallow-repository"])
                .map(|out| out.starts_with(b"true"))
                .unwrap_or(false);
            return Err(ChangedError::UnknownRevision {
                rev: rev.to_string(),
                repo: self.root.clone(),
                hint: if shallow {
                    "; this clone is shallow: fetch the base (actions/checkout with `fetch-depth: 0`, or `git fetch origin REF`)"
                } else {
                    "; check the name, or fetch it first"
                },
                message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// The best common ancestor of two commits (`git merge-base`).
    pub(crate) fn merge_base(&self, a: &str, b: &str) -> Result<String, ChangedError> {
        let out = self.run(&["merge-base", a, b])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// Every blob of the commit's tree by repository-relative path.
    fn tree(&self, commit: &str) -> Result<BTreeMap<String, TreeFile>, ChangedError> {
        let args = ["ls-tree", "-r", "-z", "--full-tree", commit];
        let out = self.run(&args)?;
        let mut files = BTreeMap::new();
        for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            // `<mode> SP <type> SP <object> TAB <path>`
            let unreadable = || ChangedError::Unreadable {
                args: args.join(" "),
                message: format!("record `{}`", String::from_utf8_lossy(record)),
            };
            let tab = record
                .iter()
                .position(|b| *b == b'\t')
                .ok_or_else(unreadable)?;
            let meta = std::str::from_utf8(&record[..tab]).map_err(|_| unreadable())?;
            let path = String::from_utf8_lossy(&record[tab + 1..]).into_owned();
            let mut fields = meta.split(' ');
            let (Some(mode), Some(kind), Some(oid)) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(unreadable());
            };
            if kind != "blob" {
                continue; // submodules (commits) carry no bytes of this repository
            }
            files.insert(
                path,
                TreeFile {
                    oid: oid.to_string(),
                    regular: mode == "100644" || mode == "100755",
                },
            );
        }
        Ok(files)
    }
}

/// What happened to a skill between the two commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ChangeKind {
    /// Present at both commits with different fingerprints: to evaluate.
    Changed,
    /// Present only at the head: to evaluate.
    Added,
    /// Present only at the head, with the fingerprint of a skill deleted from another path.
    Moved,
    /// Present only at the base.
    Deleted,
}

impl ChangeKind {
    /// Whether a skill with this change is to be evaluated (a matrix entry).
    pub(crate) fn to_evaluate(self) -> bool {
        matches!(self, Self::Changed | Self::Added)
    }

    /// The lowercase name used in output.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Changed => "changed",
            Self::Added => "added",
            Self::Moved => "moved",
            Self::Deleted => "deleted",
        }
    }
}

/// One skill that differs between the commits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SkillChange {
    /// The skill folder, relative to the repository root, `/`-separated (at the head; at the
    /// base for a deleted skill).
    pub path: String,
    /// `name` from the frontmatter of `SKILL.md`, else the folder name.
    pub name: String,
    pub status: ChangeKind,
    /// Fingerprint at the base commit (absent when added).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_fingerprint: Option<String>,
    /// Fingerprint at the head commit (absent when deleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_fingerprint: Option<String>,
    /// For a moved skill: the folder it had at the base.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
}

/// The comparison of two commits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ChangedReport {
    pub base: String,
    pub head: String,
    pub calibre: Calibre,
    /// Every differing skill: changed and added first (in path order), then moved, then deleted.
    pub changes: Vec<SkillChange>,
    /// Skills present at both commits with the same fingerprint.
    pub unchanged: usize,
}

impl ChangedReport {
    /// The skills to evaluate (changed and added).
    pub(crate) fn to_evaluate(&self) -> impl Iterator<Item = &SkillChange> {
        self.changes.iter().filter(|c| c.status.to_evaluate())
    }
}

/// A skill at one commit: its selected files (path relative to the skill folder, object id),
/// in byte-wise ascending path order, and the object id of its `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SkillTree {
    files: Vec<(String, String)>,
    skill_md: String,
}

/// The skills of a tree, by folder (`""` for a skill at the repository root), limited to those
/// under one of `under` (repository-relative folders; empty means everywhere).
fn skills_in(
    tree: &BTreeMap<String, TreeFile>,
    calibre: Calibre,
    under: &[String],
) -> BTreeMap<String, SkillTree> {
    let mut skills = BTreeMap::new();
    for (path, file) in tree {
        let (folder, name) = match path.rsplit_once('/') {
            Some((folder, name)) => (folder, name),
            None => ("", path.as_str()),
        };
        if name != "SKILL.md" || !file.regular || folder.split('/').any(|d| d == "node_modules") {
            continue;
        }
        if !under.is_empty() && !under.iter().any(|u| is_within(folder, u)) {
            continue;
        }
        skills.insert(
            folder.to_string(),
            SkillTree {
                files: Vec::new(),
                skill_md: file.oid.clone(),
            },
        );
    }
    for (folder, skill) in skills.iter_mut() {
        let prefix = if folder.is_empty() {
            String::new()
        } else {
            format!("{folder}/")
        };
        // BTreeMap order is byte-wise on the full path, so the relative paths stay sorted.
        for (path, file) in tree.range(prefix.clone()..) {
            let Some(relative) = path.strip_prefix(&prefix) else {
                break;
            };
            // The walk over a checkout does not follow links: symbolic links never count.
            if file.regular && selects(relative, calibre) {
                skill.files.push((relative.to_string(), file.oid.clone()));
            }
        }
    }
    skills
}

/// Whether the repository-relative `folder` is `parent` or lies below it.
fn is_within(folder: &str, parent: &str) -> bool {
    parent.is_empty()
        || folder == parent
        || folder
            .strip_prefix(parent)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Reads blobs through one `git cat-file --batch` process, in the order asked.
struct BlobReader {
    child: std::process::Child,
    stdout: BufReader<std::process::ChildStdout>,
    stdin: Option<std::process::ChildStdin>,
}

impl BlobReader {
    fn start(repo: &GitRepo) -> Result<Self, ChangedError> {
        let mut child = repo
            .command()
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| ChangedError::GitMissing { source })?;
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let stdin = child.stdin.take();
        Ok(Self {
            child,
            stdout,
            stdin,
        })
    }

    /// The bytes of blob `oid`.
    fn read(&mut self, oid: &str) -> Result<Vec<u8>, ChangedError> {
        let unreadable = |message: String| ChangedError::Unreadable {
            args: "cat-file --batch".to_string(),
            message,
        };
        let stdin = self.stdin.as_mut().expect("open until drop");
        stdin
            .write_all(format!("{oid}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| unreadable(format!("writing to git: {e}")))?;
        let mut header = String::new();
        self.stdout
            .read_line(&mut header)
            .map_err(|e| unreadable(format!("reading from git: {e}")))?;
        // `<oid> SP <type> SP <size> LF`, or `<object> SP missing LF`.
        let fields: Vec<&str> = header.trim_end().split(' ').collect();
        let size: usize = match fields.as_slice() {
            [_, "blob", size] => size
                .parse()
                .map_err(|_| unreadable(format!("header `{}`", header.trim_end())))?,
            _ => {
                return Err(unreadable(format!(
                    "object {oid}: `{}` (a partial clone may need the object fetched)",
                    header.trim_end()
                )));
            }
        };
        let mut content = vec![0u8; size];
        let mut newline = [0u8; 1];
        self.stdout
            .read_exact(&mut content)
            .and_then(|_| self.stdout.read_exact(&mut newline))
            .map_err(|e| unreadable(format!("object {oid}: {e}")))?;
        Ok(content)
    }
}

impl Drop for BlobReader {
    fn drop(&mut self) {
        drop(self.stdin.take()); // EOF ends git
        let _ = self.child.wait();
    }
}

/// The fingerprint digest of a skill from its blobs.
fn digest(
    reader: &mut BlobReader,
    skill: &SkillTree,
    calibre: Calibre,
) -> Result<String, ChangedError> {
    let mut hasher = FingerprintHasher::new(calibre);
    for (relative, oid) in &skill.files {
        hasher.add(relative, &reader.read(oid)?);
    }
    Ok(hasher.finish().digest)
}

/// The skill's name: `name` from the frontmatter of its `SKILL.md`, else the folder name.
fn skill_name(
    reader: &mut BlobReader,
    folder: &str,
    skill: &SkillTree,
) -> Result<String, ChangedError> {
    let folder_name = folder.rsplit('/').next().unwrap_or(folder).to_string();
    let bytes = reader.read(&skill.skill_md)?;
    let text = String::from_utf8_lossy(&bytes);
    let path = Path::new(folder).join("SKILL.md");
    Ok(
        crate::features::asset::parse_skill_text(&text, &path, Path::new(folder), &folder_name)
            .map(|skill| skill.name)
            .unwrap_or(folder_name),
    )
}

/// Compare the skills of commit `base` with those of commit `head` (full object ids, see
/// [`GitRepo::resolve_commit`]), restricted to skill folders under `under`.
pub(crate) fn compare(
    repo: &GitRepo,
    base: &str,
    head: &str,
    calibre: Calibre,
    under: &[String],
) -> Result<ChangedReport, ChangedError> {
    let base_skills = skills_in(&repo.tree(base)?, calibre, under);
    let head_skills = skills_in(&repo.tree(head)?, calibre, under);
    let mut reader = BlobReader::start(repo)?;
    let mut changes = Vec::new();
    let mut unchanged = 0;
    for (folder, head_skill) in &head_skills {
        match base_skills.get(folder) {
            // Same paths and blob ids: the same bytes, so the same fingerprint (computing it
            // would only read every file again).
            Some(base_skill) if base_skill.files == head_skill.files => unchanged += 1,
            base_skill => {
                let head_print = digest(&mut reader, head_skill, calibre)?;
                let base_print = match base_skill {
                    Some(skill) => Some(digest(&mut reader, skill, calibre)?),
                    None => None,
                };
                if base_print.as_deref() == Some(head_print.as_str()) {
                    unchanged += 1;
                    continue;
                }
                changes.push(SkillChange {
                    path: folder.clone(),
                    name: skill_name(&mut reader, folder, head_skill)?,
                    status: if base_print.is_some() {
                        ChangeKind::Changed
                    } else {
                        ChangeKind::Added
                    },
                    base_fingerprint: base_print,
                    head_fingerprint: Some(head_print),
                    moved_from: None,
                });
            }
        }
    }
    let mut deleted = Vec::new();
    for (folder, base_skill) in &base_skills {
        if head_skills.contains_key(folder) {
            continue;
        }
        let base_print = digest(&mut reader, base_skill, calibre)?;
        // A deleted skill whose fingerprint reappears at an added path has moved.
        if let Some(added) = changes.iter_mut().find(|c| {
            c.status == ChangeKind::Added && c.head_fingerprint.as_deref() == Some(&base_print)
        }) {
            added.status = ChangeKind::Moved;
            added.base_fingerprint = Some(base_print);
            added.moved_from = Some(folder.clone());
            continue;
        }
        deleted.push(SkillChange {
            path: folder.clone(),
            name: skill_name(&mut reader, folder, base_skill)?,
            status: ChangeKind::Deleted,
            base_fingerprint: Some(base_print),
            head_fingerprint: None,
            moved_from: None,
        });
    }
    // Changed, added, moved (the enum's order), each by path; deleted last.
    changes.sort_by(|a, b| (a.status, &a.path).cmp(&(b.status, &b.path)));
    changes.extend(deleted);
    Ok(ChangedReport {
        base: base.to_string(),
        head: head.to_string(),
        calibre,
        changes,
        unchanged,
    })
}

/// `under` folders given on the command line (relative to the current folder, or absolute)
/// as repository-relative `/`-separated paths.
pub(crate) fn repository_relative(
    repo: &GitRepo,
    paths: &[PathBuf],
) -> Result<Vec<String>, ChangedError> {
    let root = repo
        .root
        .canonicalize()
        .unwrap_or_else(|_| repo.root.clone());
    let cwd = std::env::current_dir().unwrap_or_default();
    paths
        .iter()
        .map(|path| {
            let absolute = if path.is_absolute() {
                path.clone()
            } else {
                cwd.join(path)
            };
            let absolute = absolute.canonicalize().unwrap_or(absolute);
            let relative =
                absolute
                    .strip_prefix(&root)
                    .map_err(|_| ChangedError::OutsideRepository {
                        path: path.clone(),
                        repo: repo.root.clone(),
                    })?;
            Ok(crate::disk::slash_path(relative))
        })
        .collect()
}

/// How `skill-lift changed` prints the differing skills on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ChangedFormat {
    /// One line per differing skill (status, path, name, fingerprints) and a count line.
    Text,
    /// One line: a JSON array of the skills to evaluate (changed and added), each
    /// `{path, name, status, base_fingerprint, head_fingerprint}` (no `base_fingerprint` for an
    /// added skill); `[]` when none.
    Json,
}

/// What `skill-lift changed` compares and how it prints the result.
#[derive(Debug, Clone)]
pub(crate) struct ChangedSettings {
    /// The repository (any folder inside it).
    pub repo: PathBuf,
    /// The base commit (a branch, tag or sha).
    pub base: String,
    /// The head commit.
    pub head: String,
    /// Compare against the merge base of `base` and `head` instead of `base` itself.
    pub merge_base: bool,
    /// Only skill folders under these folders (empty: the whole repository).
    pub paths: Vec<PathBuf>,
    /// The fingerprint calibre.
    pub calibre: Calibre,
    /// The output format.
    pub format: ChangedFormat,
}

impl ChangedError {
    /// Whether the failure is the infrastructure's (git cannot be run or read) rather than the
    /// inputs' (an unknown commit, a folder outside the repository).
    pub(crate) fn is_infrastructure(&self) -> bool {
        matches!(self, Self::GitMissing { .. } | Self::Unreadable { .. })
    }
}

/// Run `skill-lift changed`: compare the two commits `settings` names, print the differing
/// skills on stdout in its format (deleted and moved ones left out of the JSON matrix are
/// reported on stderr) and report the counts.
pub(crate) fn report_changes(settings: &ChangedSettings) -> Result<ChangedReport, ChangedError> {
    let repo = GitRepo::discover(&settings.repo)?;
    let head = repo.resolve_commit(&settings.head)?;
    let mut base = repo.resolve_commit(&settings.base)?;
    if settings.merge_base {
        base = repo.merge_base(&base, &head)?;
    }
    let under = repository_relative(&repo, &settings.paths)?;
    let report = compare(&repo, &base, &head, settings.calibre, &under)?;
    match settings.format {
        ChangedFormat::Json => {
            let evaluate: Vec<_> = report.to_evaluate().collect();
            crate::values::reporter::result_line(
                &serde_json::to_string(&evaluate).expect("changes serialize"),
            );
            report_left_out(&report);
        }
        ChangedFormat::Text => crate::values::reporter::result(&render_text(&report)),
    }
    report_counts(&report);
    Ok(report)
}

/// The text listing: one line per differing skill (status, path, name, fingerprints).
pub(crate) fn render_text(report: &ChangedReport) -> String {
    let mut text = String::new();
    for change in &report.changes {
        let base = change.base_fingerprint.as_deref().unwrap_or_default();
        let head = change.head_fingerprint.as_deref().unwrap_or_default();
        let fingerprints = match change.status {
            ChangeKind::Changed => format!("{base} -> {head}"),
            ChangeKind::Added => head.to_string(),
            ChangeKind::Moved => format!(
                "from {} (same fingerprint {head})",
                change.moved_from.as_deref().unwrap_or_default()
            ),
            ChangeKind::Deleted => format!("was {base}"),
        };
        text.push_str(&format!(
            "{:<8} {}  ({})  {}\n",
            change.status.name(),
            display_path(&change.path),
            change.name,
            fingerprints
        ));
    }
    text
}

/// Report the deleted and moved skills, which the JSON matrix leaves out.
fn report_left_out(report: &ChangedReport) {
    use crate::values::reporter::{Event, report as emit};
    for change in report.changes.iter().filter(|c| !c.status.to_evaluate()) {
        match change.status {
            ChangeKind::Moved => emit(Event::SkillMoved {
                from: display_path(change.moved_from.as_deref().unwrap_or_default()).to_string(),
                to: display_path(&change.path).to_string(),
            }),
            _ => emit(Event::SkillDeleted {
                path: display_path(&change.path).to_string(),
                name: change.name.clone(),
            }),
        }
    }
}

/// Report how many skills are to evaluate, changed, added, deleted, moved and unchanged.
fn report_counts(report: &ChangedReport) {
    let count = |kind: ChangeKind| report.changes.iter().filter(|c| c.status == kind).count();
    let short = |oid: &str| oid[..oid.len().min(12)].to_string();
    crate::values::reporter::report(crate::values::reporter::Event::SkillsChanged {
        evaluate: report.to_evaluate().count(),
        changed: count(ChangeKind::Changed),
        added: count(ChangeKind::Added),
        deleted: count(ChangeKind::Deleted),
        moved: count(ChangeKind::Moved),
        unchanged: report.unchanged,
        base: short(&report.base),
        head: short(&report.head),
        calibre: report.calibre.to_string(),
    });
}

/// A repository-relative folder for display (`.` for the root).
fn display_path(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(oid: &str) -> TreeFile {
        TreeFile {
            oid: oid.to_string(),
            regular: true,
        }
    }

    #[test]
    fn skills_are_folders_with_skill_md_and_their_selected_files() {
        let mut tree = BTreeMap::new();
        tree.insert("skills/a/SKILL.md".to_string(), file("1"));
        tree.insert("skills/a/README.md".to_string(), file("2"));
        tree.insert("skills/a/scripts/x.py".to_string(), file("3"));
        tree.insert("skills/a/evals/evals.json".to_string(), file("4"));
        tree.insert("skills/ab/SKILL.md".to_string(), file("5"));
        tree.insert(
            "skills/a/link.md".to_string(),
            TreeFile {
                oid: "6".into(),
                regular: false,
            },
        );
        tree.insert("node_modules/p/SKILL.md".to_string(), file("7"));
        tree.insert("other/b/SKILL.md".to_string(), file("8"));
        let skills = skills_in(&tree, Calibre::V3AgentSkills, &[]);
        assert_eq!(
            skills.keys().collect::<Vec<_>>(),
            vec!["other/b", "skills/a", "skills/ab"]
        );
        assert_eq!(
            skills["skills/a"].files,
            vec![
                ("SKILL.md".to_string(), "1".to_string()),
                ("scripts/x.py".to_string(), "3".to_string())
            ]
        );
        assert_eq!(
            skills["skills/ab"].files.len(),
            1,
            "a sibling prefix is not a child"
        );
        let only = skills_in(&tree, Calibre::V3AgentSkills, &["skills".to_string()]);
        assert_eq!(
            only.keys().collect::<Vec<_>>(),
            vec!["skills/a", "skills/ab"]
        );
        assert!(is_within("skills/a", "skills"));
        assert!(!is_within("skillset/a", "skills"));
    }

    #[test]
    fn the_text_listing_has_one_line_per_change_in_its_own_words() {
        let change =
            |path: &str, status: ChangeKind, base: Option<&str>, head: Option<&str>| SkillChange {
                path: path.to_string(),
                name: format!("n-{path}"),
                status,
                base_fingerprint: base.map(str::to_string),
                head_fingerprint: head.map(str::to_string),
                moved_from: (status == ChangeKind::Moved).then(|| "old".to_string()),
            };
        let report = ChangedReport {
            base: "b".into(),
            head: "h".into(),
            calibre: Calibre::V3AgentSkills,
            changes: vec![
                change("a", ChangeKind::Changed, Some("f1"), Some("f2")),
                change("", ChangeKind::Added, None, Some("f3")),
                change("m", ChangeKind::Moved, Some("f4"), Some("f4")),
                change("d", ChangeKind::Deleted, Some("f5"), None),
            ],
            unchanged: 0,
        };
        assert_eq!(
            render_text(&report),
            "changed  a  (n-a)  f1 -> f2\n\
             added    .  (n-)  f3\n\
             moved    m  (n-m)  from old (same fingerprint f4)\n\
             deleted  d  (n-d)  was f5\n"
        );
    }
}
