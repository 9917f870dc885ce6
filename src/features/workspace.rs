//! Staging a trial: a fresh temporary folder holding the agent's workspace (skills folder with
//! the decoys, plus the target in the `with_skill` arm, and the case's fixtures) and a fresh HOME.
//!
//! The leak guard lives here: before a trial whose arm stages no target starts (the baseline;
//! both arms of an A/A control without the target), no staged skill may carry the target's
//! fingerprint, under any name.
//!
//! What an arm stages is decided by the run's [`ArmDesign`]: the paired comparison stages the
//! target in `with_skill` only; an A/A control (`skill-lift calibrate`) stages both arms the
//! same way, so any lift it measures is noise. Staging never copies a skill's `evals/` folder (the
//! golden set must not reach the agent).

use std::path::{Path, PathBuf};

use crate::features::asset::fingerprint::{Calibre, fingerprint};
use crate::features::evalset::{CaseFiles, GoldenCase};
use crate::features::runner::StagedSkill;
use crate::record::{Arm, ArmDesign};

mod slots;
pub(crate) use slots::SlotPool;
use slots::{Layout, LayoutConflict, Lease, Slot, Want};

/// Which skill an arm stages besides the decoys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkillVersion {
    /// The skill under evaluation.
    Current,
    /// Its previous version.
    Previous,
}

/// How an arm exposes its skill to the agent.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Exposure {
    /// The agent finds the staged skill itself (or not).
    Native,
    /// The prompt names the skill and where its instructions are.
    Nudge,
    /// The skill's `SKILL.md` is in the prompt: always in context.
    Forced,
}

impl Exposure {
    /// The recorded name (`--exposure`).
    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Native => "native",
            Exposure::Nudge => "nudge",
            Exposure::Forced => "forced",
        }
    }

    /// The arm of this exposure of the current skill.
    pub fn arm(self) -> Arm {
        match self {
            Exposure::Native => Arm::WithSkill,
            Exposure::Nudge => Arm::WithSkillNudge,
            Exposure::Forced => Arm::WithSkillForced,
        }
    }

    /// The prompt the agent gets for a case prompt: unchanged (native); preceded by a line
    /// naming the skill `name` and its `SKILL.md` under `skills_dir` (nudge); preceded by the
    /// skill's `SKILL.md` text `skill_md` (forced).
    pub fn prompt<'a>(
        self,
        prompt: &'a str,
        name: &str,
        skills_dir: &Path,
        skill_md: &str,
    ) -> std::borrow::Cow<'a, str> {
        match self {
            Exposure::Native => std::borrow::Cow::Borrowed(prompt),
            Exposure::Nudge => std::borrow::Cow::Owned(format!(
                "Use the `{name}` skill for this task; its instructions are in {}.\n\n{prompt}",
                skills_dir.join(name).join("SKILL.md").display()
            )),
            Exposure::Forced => std::borrow::Cow::Owned(format!(
                "Follow the `{name}` skill for this task. Its SKILL.md:\n\n<skill name=\"{name}\">\n{}\n</skill>\n\n{prompt}",
                skill_md.trim_end()
            )),
        }
    }
}

impl std::str::FromStr for Exposure {
    type Err = crate::values::unknown_name::UnknownName;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let known = [Exposure::Native, Exposure::Nudge, Exposure::Forced];
        known
            .into_iter()
            .find(|exposure| exposure.as_str() == text)
            .ok_or_else(|| {
                crate::values::unknown_name::UnknownName::new(
                    "exposure",
                    text,
                    known.map(Exposure::as_str),
                )
            })
    }
}

/// What an arm is: the skill it stages (none for the baseline) and how it is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArmSpec {
    /// The skill staged besides the decoys.
    pub skill: Option<SkillVersion>,
    /// How the staged skill reaches the agent.
    pub exposure: Exposure,
}

impl Arm {
    /// The paired measurement's two arms, with-skill first.
    pub const PAIRED: [Arm; 2] = [Arm::WithSkill, Arm::WithoutSkill];

    /// Every arm kind, in the order a run plans them.
    pub const KINDS: [Arm; 5] = [
        Arm::WithSkill,
        Arm::WithoutSkill,
        Arm::PreviousVersion,
        Arm::WithSkillNudge,
        Arm::WithSkillForced,
    ];

    /// The arm's recorded name.
    pub fn as_str(self) -> &'static str {
        match self {
            Arm::WithSkill => "with_skill",
            Arm::WithoutSkill => "without_skill",
            Arm::PreviousVersion => "previous_version",
            Arm::WithSkillNudge => "with_skill_nudge",
            Arm::WithSkillForced => "with_skill_forced",
        }
    }

    /// The one-letter label of the arm's trials in the HTML report's case table.
    pub fn letter(self) -> &'static str {
        match self {
            Arm::WithSkill => "W",
            Arm::WithoutSkill => "B",
            Arm::PreviousVersion => "P",
            Arm::WithSkillNudge => "N",
            Arm::WithSkillForced => "F",
        }
    }

    /// What the arm stages and how it exposes it.
    pub fn spec(self) -> ArmSpec {
        let (skill, exposure) = match self {
            Arm::WithSkill => (Some(SkillVersion::Current), Exposure::Native),
            Arm::WithoutSkill => (None, Exposure::Native),
            Arm::PreviousVersion => (Some(SkillVersion::Previous), Exposure::Native),
            Arm::WithSkillNudge => (Some(SkillVersion::Current), Exposure::Nudge),
            Arm::WithSkillForced => (Some(SkillVersion::Current), Exposure::Forced),
        };
        ArmSpec { skill, exposure }
    }
}

impl std::fmt::Display for Arm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Arm {
    type Err = crate::values::unknown_name::UnknownName;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Arm::KINDS
            .into_iter()
            .find(|arm| arm.as_str() == text)
            .ok_or_else(|| {
                crate::values::unknown_name::UnknownName::new(
                    "arm",
                    text,
                    Arm::KINDS.map(Arm::as_str),
                )
            })
    }
}

/// Whether a trial's skills folder gets the target skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArmStaging {
    /// Decoys plus the target.
    WithTarget,
    /// Decoys only; the leak guard checks that no staged skill is the target (nor its previous
    /// version).
    WithoutTarget,
    /// Decoys plus the previous version under the target's name; the leak guard checks that no
    /// staged skill is the current target.
    WithPrevious,
}

impl ArmStaging {
    /// Whether a skill named as the target is staged (the target or its previous version).
    pub fn stages_target_name(self) -> bool {
        self != ArmStaging::WithoutTarget
    }
}

impl ArmDesign {
    /// What `arm` stages under this design: its spec in the measurement; the same for every
    /// arm in an A/A control.
    pub fn staging(self, arm: Arm) -> ArmStaging {
        match self {
            ArmDesign::AaWithTarget => ArmStaging::WithTarget,
            ArmDesign::AaWithoutTarget => ArmStaging::WithoutTarget,
            ArmDesign::Paired => match arm.spec().skill {
                None => ArmStaging::WithoutTarget,
                Some(SkillVersion::Current) => ArmStaging::WithTarget,
                Some(SkillVersion::Previous) => ArmStaging::WithPrevious,
            },
        }
    }

    /// Whether this is the paired measurement (not an A/A control).
    pub fn is_paired(&self) -> bool {
        *self == ArmDesign::Paired
    }

    /// The recorded name.
    pub fn as_str(self) -> &'static str {
        match self {
            ArmDesign::Paired => "paired",
            ArmDesign::AaWithoutTarget => "aa_without_target",
            ArmDesign::AaWithTarget => "aa_with_target",
        }
    }
}

/// A skill source to stage: its name in the skills folder, its source folder, and the eval
/// material inside it that its eval set reads (beyond the rule by name, which applies to every
/// skill staged: [`crate::features::asset::eval_material`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct SkillSource {
    pub name: String,
    pub dir: PathBuf,
    /// Paths of the folder that the eval set or its graders read (never staged).
    pub eval_material: crate::features::asset::eval_material::EvalMaterial,
}

/// The previous version of the target, for the `previous_version` arm: its folder (staged
/// under the target's name) and its fingerprint (the baseline must not contain it either).
#[derive(Debug, Clone)]
pub(crate) struct PreviousSkill {
    pub dir: PathBuf,
    pub digest: String,
}

/// Why a trial needs a folder on disk ([`StagingNeed::Folder`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FolderReason {
    /// The runner reads the skills from a folder: an agent CLI (native discovery) or the
    /// model-API kinds' `tools` mode (`activate_skill`, `read_file`).
    RunnerReadsFiles,
    /// The case stages fixture files into the workspace (`files`, or `evals/files/`).
    CaseFiles,
    /// A check of the case reads the workspace (`file_exists`, `file_contains`).
    WorkspaceChecks,
    /// Custom graders get the trial's workspace.
    CustomGraders,
    /// `--keep-workspaces` keeps the trial folders.
    KeptWorkspaces,
}

/// What a trial needs staged: a folder on disk, or nothing but its arm's skills in memory
/// (the `inject` mode, where the model never sees a file system and no grader looks at one).
/// Derived from the runner's capabilities, the case and the run's graders
/// ([`StagingNeed::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StagingNeed {
    /// The arm's skills, staged once per run in memory (with the leak guard run once on them).
    InMemory,
    /// A trial folder (workspace, HOME, skills folder), for the first reason found.
    Folder(FolderReason),
}

impl StagingNeed {
    /// The need of one trial: a folder when the runner reads files (anything but `inject`),
    /// the case stages files (`case_files`: its listed files, or an existing `evals/files/`
    /// when it omits `files`), a check reads the workspace, custom graders run, or workspaces
    /// are kept; else memory.
    pub(crate) fn of(
        delivery: crate::record::SkillDelivery,
        case: &GoldenCase,
        eval_files_exist: bool,
        custom_graders: bool,
        keep_workspaces: bool,
    ) -> Self {
        let case_files = match &case.files {
            CaseFiles::Omitted => eval_files_exist,
            CaseFiles::Listed(files) => !files.is_empty(),
        };
        let reason = if delivery != crate::record::SkillDelivery::Inject {
            FolderReason::RunnerReadsFiles
        } else if keep_workspaces {
            FolderReason::KeptWorkspaces
        } else if case_files {
            FolderReason::CaseFiles
        } else if case.checks.iter().any(|check| check.reads_workspace()) {
            FolderReason::WorkspaceChecks
        } else if custom_graders {
            FolderReason::CustomGraders
        } else {
            return StagingNeed::InMemory;
        };
        StagingNeed::Folder(reason)
    }
}

/// A staged trial: a folder (removed on drop unless kept), or, for [`StagingNeed::InMemory`],
/// only the arm's skills in memory (then `workspace` and `home` are empty paths and
/// [`StagedTrial::has_folder`] is false).
pub(crate) struct StagedTrial {
    root: Option<tempfile::TempDir>,
    /// The job slot's folder the trial runs in ([`stage_trial_in_slot`]), given back on drop.
    lease: Option<Lease>,
    kept_root: Option<PathBuf>,
    /// The agent's working folder.
    pub workspace: PathBuf,
    /// The agent's fresh HOME.
    pub home: PathBuf,
    /// Skills staged, ordered by name.
    pub skills: Vec<StagedSkill>,
}

impl StagedTrial {
    /// A trial without a folder: `skills` staged in memory.
    pub(crate) fn in_memory(skills: Vec<StagedSkill>) -> Self {
        Self {
            root: None,
            lease: None,
            kept_root: None,
            workspace: PathBuf::new(),
            home: PathBuf::new(),
            skills,
        }
    }

    /// Whether the trial has a folder on disk (false for [`StagingNeed::InMemory`]).
    pub(crate) fn has_folder(&self) -> bool {
        !self.workspace.as_os_str().is_empty()
    }

    /// Keep the folder after the trial; returns its path.
    pub(crate) fn keep(&mut self) -> Option<PathBuf> {
        if let Some(root) = self.root.take() {
            self.kept_root = Some(root.keep());
        }
        if let Some(slot) = self.lease.as_mut().and_then(|lease| lease.slot.take()) {
            self.kept_root = Some(slot.keep());
        }
        self.kept_root.clone()
    }
}

impl StagingError {
    /// Whether the error is the leak guard's (which stops the run) rather than an I/O failure
    /// of one trial.
    pub(crate) fn is_leak(&self) -> bool {
        matches!(
            self,
            StagingError::Leak { .. }
                | StagingError::Resembles { .. }
                | StagingError::CaseFileCopiesTarget { .. }
        )
    }
}

/// Why staging failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StagingError {
    #[error("staging I/O error at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "leak guard: staged skill `{name}` in the baseline has the target's fingerprint {digest}; the baseline must not contain the target under any name"
    )]
    Leak { name: String, digest: String },
    #[error(
        "leak guard: {copy} in the baseline is a copy of the target {target}: {why}; the baseline must not contain the target under any name"
    )]
    Resembles {
        copy: PathBuf,
        target: PathBuf,
        why: crate::features::leak_guard::Resemblance,
    },
    #[error(
        "leak guard: case `{case}` lists file {file} in `files`, which would copy the target skill {target} into the baseline workspace"
    )]
    CaseFileCopiesTarget {
        case: String,
        file: PathBuf,
        target: PathBuf,
    },
    #[error("fingerprinting a staged skill failed: {0}")]
    Fingerprint(String),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StagingError + '_ {
    move |source| StagingError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How [`copy_tree`] copies: a task fixture as it is, or a skill, without its eval material
/// ([`SkillCopy::skips`]).
#[derive(Clone, Copy)]
enum TreeCopy<'a> {
    /// A case's files: copied whole.
    Fixture,
    /// A skill folder: its eval material, run output and version control stay behind.
    Skill(SkillCopy<'a>),
}

/// A skill being copied, and where the walk is inside it.
#[derive(Clone, Copy)]
struct SkillCopy<'a> {
    material: &'a crate::features::asset::eval_material::EvalMaterial,
    relative: &'a Path,
}

impl TreeCopy<'_> {
    /// Whether the entry `name` (a folder when `is_dir`) of the folder being walked stays
    /// behind: **the eval-material rule** (`EVAL.md`, `evals/`, Vally `eval.yaml`, the eval
    /// set's own files: no arm ever reads the answer key), plus run output and version control.
    fn skips(&self, name: &str, is_dir: bool) -> bool {
        match self {
            TreeCopy::Fixture => false,
            TreeCopy::Skill(skill) => {
                (is_dir && is_skill_excluded_dir(name))
                    || skill.material.excludes(&skill.relative.join(name), is_dir)
            }
        }
    }
}

/// Copy `source` (file or folder) to `destination`; a skill copy leaves its eval material,
/// run output and version control behind ([`TreeCopy::skips`]). Symbolic links are not
/// followed.
fn copy_tree(source: &Path, destination: &Path, copy: TreeCopy<'_>) -> Result<(), StagingError> {
    let metadata = std::fs::symlink_metadata(source).map_err(io_error(source))?;
    if metadata.is_file() {
        if let Some(parent) = destination.parent() {
            std::fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        crate::disk::copy(source, destination)
            .map_err(crate::disk::DiskError::into_io)
            .map_err(io_error(source))?;
        return Ok(());
    }
    if !metadata.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(destination).map_err(io_error(destination))?;
    for entry in std::fs::read_dir(source).map_err(io_error(source))? {
        let entry = entry.map_err(io_error(source))?;
        let name = entry.file_name();
        let file_type = entry.file_type().map_err(io_error(&entry.path()))?;
        if file_type.is_symlink() {
            continue;
        }
        if copy.skips(&name.to_string_lossy(), file_type.is_dir()) {
            continue;
        }
        let relative;
        let inner = match copy {
            TreeCopy::Fixture => TreeCopy::Fixture,
            TreeCopy::Skill(skill) => {
                relative = skill.relative.join(&name);
                TreeCopy::Skill(SkillCopy {
                    material: skill.material,
                    relative: &relative,
                })
            }
        };
        copy_tree(&entry.path(), &destination.join(&name), inner)?;
    }
    Ok(())
}

/// What staging a skill folder leaves out besides the excluded folders (`evals/`, `results/`,
/// `.git/`): symbolic links (never followed) and entries that are neither a file nor a folder
/// (FIFOs, sockets, devices), each as `path (why)`, so the run can warn about them once instead
/// of dropping them silently.
pub(crate) fn staging_omissions(skill_dir: &Path) -> Vec<String> {
    let mut omitted = Vec::new();
    let mut stack = vec![skill_dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let relative = path.strip_prefix(skill_dir).unwrap_or(&path).display();
            if kind.is_symlink() {
                omitted.push(format!(
                    "{relative} (a symbolic link; links are not staged)"
                ));
            } else if kind.is_dir() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if !(folder == skill_dir
                    && (is_skill_excluded_dir(&name)
                        || crate::features::asset::eval_material::is_eval_material_name(
                            &name, true,
                        )))
                {
                    stack.push(path);
                }
            } else if !kind.is_file() {
                omitted.push(format!("{relative} (not a regular file)"));
            }
        }
    }
    omitted.sort();
    omitted
}

/// Folders of a skill never staged besides its eval material: run output and version
/// control. Everything else is staged as installed, since the body may point to it.
fn is_skill_excluded_dir(name: &str) -> bool {
    matches!(name, "results" | ".git")
}

/// The copy of skill `source` from its root.
fn skill_copy(source: &SkillSource) -> TreeCopy<'_> {
    TreeCopy::Skill(SkillCopy {
        material: &source.eval_material,
        relative: Path::new(""),
    })
}

/// The file a staged trial's folder holds naming the run folder it belongs to, so
/// `run --resume` can remove the folders of trials a killed run left behind
/// ([`remove_orphaned_trial_folders`]).
pub(crate) const OWNER_FILE: &str = ".skill-lift-run";

/// Prefixes of staged trial folders: under the system temporary folder, and under
/// `--workspace-root`.
const TRIAL_PREFIX: &str = "skill-lift-trial-";
const ROOTED_TRIAL_PREFIX: &str = "trial-";

/// Remove the trial folders a killed run left behind: folders under `workspace_root` (else the
/// system temporary folder) whose [`OWNER_FILE`] names `run_dir`, except those in `keep` (kept
/// workspaces recorded in trials). Call only while holding the run's lock. Returns how many
/// were removed.
pub(crate) fn remove_orphaned_trial_folders(
    run_dir: &Path,
    workspace_root: Option<&Path>,
    keep: &std::collections::HashSet<PathBuf>,
) -> usize {
    let (root, prefix) = match workspace_root {
        Some(root) => (root.to_path_buf(), ROOTED_TRIAL_PREFIX),
        None => (std::env::temp_dir(), TRIAL_PREFIX),
    };
    let owner = run_dir
        .canonicalize()
        .unwrap_or_else(|_| run_dir.to_path_buf());
    let Ok(entries) = std::fs::read_dir(&root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let is_trial = entry.file_name().to_string_lossy().starts_with(prefix)
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_trial || keep.iter().any(|kept| kept.starts_with(&path)) {
            continue;
        }
        let named = std::fs::read_to_string(path.join(OWNER_FILE)).ok();
        if named.is_some_and(|named| Path::new(named.trim()) == owner)
            && std::fs::remove_dir_all(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// The leak guard's content check of a baseline workspace: no staged skill and no `SKILL.md`
/// anywhere in the workspace may be the target by frontmatter name, by whitespace-normalized
/// body or as a near-duplicate ([`crate::features::leak_guard`]).
fn check_baseline_content(workspace: &Path, target: &SkillSource) -> Result<(), StagingError> {
    let target_file = target.dir.join("SKILL.md");
    let Some(target_text) = crate::features::leak_guard::SkillText::read(&target.dir) else {
        return Ok(());
    };
    for file in crate::features::leak_guard::skill_files_under(workspace) {
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        let staged =
            crate::features::leak_guard::SkillText::parse(&String::from_utf8_lossy(&bytes));
        if let Some(why) = staged.resembles(&target_text) {
            return Err(StagingError::Resembles {
                copy: file,
                target: target_file,
                why,
            });
        }
    }
    Ok(())
}

/// A case `files` entry that would bring the target (its folder, a folder holding it, or a file
/// of it such as `SKILL.md`) into the baseline workspace.
pub(crate) fn case_file_copying_target(
    case: &GoldenCase,
    target: &SkillSource,
) -> Option<StagingError> {
    let CaseFiles::Listed(files) = &case.files else {
        return None;
    };
    files
        .iter()
        .find(|file| crate::features::leak_guard::copies_target(&file.source, &target.dir))
        .map(|file| StagingError::CaseFileCopiesTarget {
            case: case.id.clone(),
            file: file.source.clone(),
            target: target.dir.clone(),
        })
}

/// The previous version as a skill source staged under the target's name, for
/// [`ArmStaging::WithPrevious`]; an error when that arm has no previous version.
fn previous_source(
    staging: ArmStaging,
    target: &SkillSource,
    previous: Option<&PreviousSkill>,
) -> Result<Option<SkillSource>, StagingError> {
    match (staging, previous) {
        (ArmStaging::WithPrevious, Some(previous)) => Ok(Some(SkillSource {
            name: target.name.clone(),
            dir: previous.dir.clone(),
            // The previous version's eval material by name; the eval set's own files are
            // the current version's.
            eval_material: Default::default(),
        })),
        (ArmStaging::WithPrevious, None) => Err(StagingError::Io {
            path: target.dir.clone(),
            source: std::io::Error::other(
                "the previous_version arm has no previous version to stage",
            ),
        }),
        _ => Ok(None),
    }
}

/// A fresh trial folder under `temp_root` (else the system temporary folder), holding the
/// [`OWNER_FILE`] naming `owner` (so `run --resume` removes it after a crash).
fn trial_folder(
    temp_root: Option<&Path>,
    owner: Option<&Path>,
) -> Result<tempfile::TempDir, StagingError> {
    let root = match temp_root {
        Some(dir) => tempfile::Builder::new()
            .prefix(ROOTED_TRIAL_PREFIX)
            .tempdir_in(dir),
        None => tempfile::Builder::new().prefix(TRIAL_PREFIX).tempdir(),
    }
    .map_err(|source| StagingError::Io {
        path: temp_root
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir),
        source,
    })?;
    if let Some(owner) = owner {
        let owner = owner.canonicalize().unwrap_or_else(|_| owner.to_path_buf());
        let marker = root.path().join(OWNER_FILE);
        crate::disk::write(&marker, owner.to_string_lossy().as_bytes())
            .map_err(crate::disk::DiskError::into_io)
            .map_err(io_error(&marker))?;
    }
    Ok(root)
}

/// The skills an arm stages, ordered by name: the decoys, plus the target
/// ([`ArmStaging::WithTarget`]) or the previous version under its name. The flag says whether
/// the source is the target (or the version standing in for it).
fn arm_sources<'a>(
    staging: ArmStaging,
    target: &'a SkillSource,
    previous_source: Option<&'a SkillSource>,
    decoys: &'a [SkillSource],
) -> Vec<(&'a SkillSource, bool)> {
    let mut sources: Vec<(&SkillSource, bool)> =
        decoys.iter().map(|decoy| (decoy, false)).collect();
    if staging == ArmStaging::WithTarget {
        sources.push((target, true));
    }
    if let Some(source) = previous_source {
        sources.push((source, true));
    }
    sources.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    sources
}

/// The fingerprint half of the leak guard on staged skills: in an arm without the current
/// target, no staged skill may carry its fingerprint (nor, in the baseline, the previous
/// version's).
fn guard_fingerprints(
    skills: &[StagedSkill],
    staging: ArmStaging,
    previous: Option<&PreviousSkill>,
    target_digest: &str,
    calibre: Calibre,
) -> Result<(), StagingError> {
    if staging == ArmStaging::WithTarget {
        return Ok(());
    }
    // No staged skill is the current target under any name; the baseline holds no version of
    // it at all.
    let previous_digest = previous
        .filter(|_| staging == ArmStaging::WithoutTarget)
        .map(|p| p.digest.as_str());
    for skill in skills {
        let staged = fingerprint(&skill.dir, calibre)
            .map_err(|e| StagingError::Fingerprint(e.to_string()))?;
        if staged.digest == target_digest || Some(staged.digest.as_str()) == previous_digest {
            return Err(StagingError::Leak {
                name: skill.name.clone(),
                digest: staged.digest,
            });
        }
    }
    Ok(())
}

/// Copy the arm's skills into `skills_root` (created, empty or not: an absent folder is a
/// difference between arms) and run the fingerprint half of the leak guard
/// ([`guard_fingerprints`]).
#[allow(clippy::too_many_arguments)]
fn stage_skills(
    skills_root: &Path,
    staging: ArmStaging,
    target: &SkillSource,
    previous: Option<&PreviousSkill>,
    previous_source: Option<&SkillSource>,
    decoys: &[SkillSource],
    target_digest: &str,
    calibre: Calibre,
) -> Result<Vec<StagedSkill>, StagingError> {
    std::fs::create_dir_all(skills_root).map_err(io_error(skills_root))?;
    let sources = arm_sources(staging, target, previous_source, decoys);
    let mut skills = Vec::with_capacity(sources.len());
    for (source, is_target) in sources {
        let destination = skills_root.join(&source.name);
        copy_tree(&source.dir, &destination, skill_copy(source))?;
        skills.push(StagedSkill {
            name: source.name.clone(),
            dir: destination,
            target: is_target,
            skill_md: None,
        });
    }
    guard_fingerprints(&skills, staging, previous, target_digest, calibre)?;
    Ok(skills)
}

/// Stage one arm's skills once, in memory, for the trials that need no folder
/// ([`StagingNeed::InMemory`]): the skills are copied as a trial folder would hold them (into
/// a scratch folder under `temp_root` that is removed at once), the whole leak guard runs on
/// that copy (fingerprints, and for the baseline the content check of every `SKILL.md`), and
/// each staged `SKILL.md` is kept as text ([`StagedSkill::skill_md`]; `dir` is then the path
/// the skill would have relative to the workspace). The same guarantees as [`stage_trial`],
/// paid once per arm instead of once per trial.
#[allow(clippy::too_many_arguments)]
pub(crate) fn stage_arm_in_memory(
    staging: ArmStaging,
    target: &SkillSource,
    previous: Option<&PreviousSkill>,
    decoys: &[SkillSource],
    skills_dir: &Path,
    target_digest: &str,
    calibre: Calibre,
    temp_root: Option<&Path>,
    owner: Option<&Path>,
) -> Result<Vec<StagedSkill>, StagingError> {
    let previous_source = previous_source(staging, target, previous)?;
    let root = trial_folder(temp_root, owner)?;
    let workspace = root.path().join("workspace");
    let skills_root = workspace.join(skills_dir);
    let mut skills = stage_skills(
        &skills_root,
        staging,
        target,
        previous,
        previous_source.as_ref(),
        decoys,
        target_digest,
        calibre,
    )?;
    if staging == ArmStaging::WithoutTarget {
        check_baseline_content(&workspace, target)?;
    }
    for skill in &mut skills {
        let path = skill.dir.join("SKILL.md");
        let text = std::fs::read_to_string(&path).map_err(io_error(&path))?;
        skill.skill_md = Some(std::sync::Arc::from(text));
        skill.dir = skills_dir.join(&skill.name);
    }
    root.close().map_err(io_error(&workspace))?;
    Ok(skills)
}

/// What staging one trial takes: the arm's staging rule, the case, the skills, where they go,
/// and what arms the leak guard. The same request for a fresh folder ([`stage_trial`]) and a
/// reused one ([`stage_trial_in_slot`]).
#[derive(Clone, Copy)]
pub(crate) struct TrialStaging<'a> {
    /// What the arm stages: `decoys` always; `target` only with [`ArmStaging::WithTarget`],
    /// `previous` (under the target's name) only with [`ArmStaging::WithPrevious`].
    pub staging: ArmStaging,
    /// The case (its `files`).
    pub case: &'a GoldenCase,
    /// The skill under test.
    pub target: &'a SkillSource,
    /// The previous version of the target, for a `previous_version` arm.
    pub previous: Option<&'a PreviousSkill>,
    /// The decoys staged in every arm.
    pub decoys: &'a [SkillSource],
    /// The runner's skills folder, relative to the workspace.
    pub skills_dir: &'a Path,
    /// `evals/files/` of the skill (staged whole when the case omits `files`).
    pub eval_files_dir: &'a Path,
    /// The target's fingerprint digest (arms the leak guard).
    pub target_digest: &'a str,
    /// The fingerprint calibre of `target_digest`.
    pub calibre: Calibre,
    /// Where trial folders go (default: the system temporary folder).
    pub temp_root: Option<&'a Path>,
    /// The run folder that owns the trial folder (recorded in it for `--resume`'s clean-up).
    pub owner: Option<&'a Path>,
}

impl TrialStaging<'_> {
    /// The checks before anything is staged: a case file must not copy the target into an arm
    /// without it. Returns the previous version's source when the arm stages it.
    fn check(&self) -> Result<Option<SkillSource>, StagingError> {
        if self.staging != ArmStaging::WithTarget
            && let Some(error) = case_file_copying_target(self.case, self.target)
        {
            return Err(error);
        }
        previous_source(self.staging, self.target, self.previous)
    }
}

/// Stage one trial in a fresh folder; the leak guard runs in every arm without the current
/// target.
pub(crate) fn stage_trial(request: &TrialStaging) -> Result<StagedTrial, StagingError> {
    let previous_source = request.check()?;
    let root = trial_folder(request.temp_root, request.owner)?;
    let workspace = root.path().join("workspace");
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).map_err(io_error(&home))?;
    let skills = stage_skills(
        &workspace.join(request.skills_dir),
        request.staging,
        request.target,
        request.previous,
        previous_source.as_ref(),
        request.decoys,
        request.target_digest,
        request.calibre,
    )?;

    match &request.case.files {
        CaseFiles::Omitted => {
            if request.eval_files_dir.is_dir() {
                copy_tree(request.eval_files_dir, &workspace, TreeCopy::Fixture)?;
            }
        }
        CaseFiles::Listed(files) => {
            for file in files {
                copy_tree(
                    &file.source,
                    &workspace.join(&file.destination),
                    TreeCopy::Fixture,
                )?;
            }
        }
    }
    if request.staging == ArmStaging::WithoutTarget {
        check_baseline_content(&workspace, request.target)?;
    }

    Ok(StagedTrial {
        root: Some(root),
        lease: None,
        kept_root: None,
        workspace,
        home,
        skills,
    })
}

/// Stage one trial in a job slot's folder from `pool` (reused, brought back to exactly this
/// trial's staged state; see [`SlotPool`]), or in a fresh folder when the pool has none free or
/// a slot cannot be cleaned. The same staged state, leak guard and errors as [`stage_trial`];
/// the folder goes back to the pool when the [`StagedTrial`] is dropped (unless kept).
pub(crate) fn stage_trial_in_slot(
    pool: &std::sync::Arc<SlotPool>,
    request: &TrialStaging,
) -> Result<StagedTrial, StagingError> {
    let previous_source = request.check()?;
    let sources = arm_sources(
        request.staging,
        request.target,
        previous_source.as_ref(),
        request.decoys,
    );
    let workspace_rel = Path::new("workspace");
    let skills_rel = workspace_rel.join(request.skills_dir);
    let mut layout = Layout::new();
    let conflict = |LayoutConflict(path): LayoutConflict| StagingError::Io {
        path,
        source: std::io::Error::other("a staged file and a staged folder share this path"),
    };
    if let Some(owner) = request.owner {
        let owner = owner.canonicalize().unwrap_or_else(|_| owner.to_path_buf());
        let bytes: std::sync::Arc<[u8]> = owner.to_string_lossy().as_bytes().into();
        slots::put(&mut layout, Path::new(OWNER_FILE), Want::Bytes(bytes)).map_err(conflict)?;
    }
    slots::put(&mut layout, Path::new("home"), Want::Dir).map_err(conflict)?;
    slots::put(&mut layout, &skills_rel, Want::Dir).map_err(conflict)?;
    for (source, _) in &sources {
        plan_tree(
            &source.dir,
            &skills_rel.join(&source.name),
            skill_copy(source),
            &mut layout,
        )?;
    }
    match &request.case.files {
        CaseFiles::Omitted => {
            if request.eval_files_dir.is_dir() {
                plan_tree(
                    request.eval_files_dir,
                    workspace_rel,
                    TreeCopy::Fixture,
                    &mut layout,
                )?;
            }
        }
        CaseFiles::Listed(files) => {
            for file in files {
                plan_tree(
                    &file.source,
                    &workspace_rel.join(&file.destination),
                    TreeCopy::Fixture,
                    &mut layout,
                )?;
            }
        }
    }

    let reused = pool
        .take()
        .and_then(|slot| slot.sync(&layout).ok().map(|()| slot));
    let slot = match reused {
        Some(slot) => slot,
        None => {
            let folder = trial_folder(request.temp_root, None)?;
            let root = folder.keep();
            let slot = Slot::new(root.clone()).map_err(io_error(&root))?;
            slot.sync(&layout).map_err(io_error(slot.root()))?;
            slot
        }
    };
    let workspace = slot.root().join(workspace_rel);
    let home = slot.root().join("home");
    let staged = StagedTrial {
        root: None,
        lease: Some(Lease {
            slot: Some(slot),
            pool: std::sync::Arc::clone(pool),
        }),
        kept_root: None,
        skills: sources
            .iter()
            .map(|(source, is_target)| StagedSkill {
                name: source.name.clone(),
                dir: workspace.join(request.skills_dir).join(&source.name),
                target: *is_target,
                skill_md: None,
            })
            .collect(),
        workspace,
        home,
    };
    guard_fingerprints(
        &staged.skills,
        request.staging,
        request.previous,
        request.target_digest,
        request.calibre,
    )?;
    if request.staging == ArmStaging::WithoutTarget {
        check_baseline_content(&staged.workspace, request.target)?;
    }
    Ok(staged)
}

/// Add to `layout` what [`copy_tree`] would copy from `source` to `destination` (relative to
/// the trial folder): the same files and folders, the same exclusions, no symbolic links.
fn plan_tree(
    source: &Path,
    destination: &Path,
    copy: TreeCopy<'_>,
    layout: &mut Layout,
) -> Result<(), StagingError> {
    let conflict = |LayoutConflict(path): LayoutConflict| StagingError::Io {
        path,
        source: std::io::Error::other("a staged file and a staged folder share this path"),
    };
    let metadata = std::fs::symlink_metadata(source).map_err(io_error(source))?;
    if metadata.is_file() {
        use std::os::unix::fs::MetadataExt;
        let want = Want::File {
            source: source.to_path_buf(),
            len: metadata.len(),
            mode: metadata.mode() & 0o7777,
        };
        return slots::put(layout, destination, want).map_err(conflict);
    }
    if !metadata.is_dir() {
        return Ok(());
    }
    slots::put(layout, destination, Want::Dir).map_err(conflict)?;
    for entry in std::fs::read_dir(source).map_err(io_error(source))? {
        let entry = entry.map_err(io_error(source))?;
        let name = entry.file_name();
        let file_type = entry.file_type().map_err(io_error(&entry.path()))?;
        if file_type.is_symlink() {
            continue;
        }
        if copy.skips(&name.to_string_lossy(), file_type.is_dir()) {
            continue;
        }
        let relative;
        let inner = match copy {
            TreeCopy::Fixture => TreeCopy::Fixture,
            TreeCopy::Skill(skill) => {
                relative = skill.relative.join(&name);
                TreeCopy::Skill(SkillCopy {
                    material: skill.material,
                    relative: &relative,
                })
            }
        };
        plan_tree(&entry.path(), &destination.join(&name), inner, layout)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::evalset::{CaseFile, CaseStatus, ExpectedSkill};

    fn write(path: &Path, content: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn skill(root: &Path, name: &str, body: &str) -> SkillSource {
        let dir = root.join(name);
        write(
            &dir.join("SKILL.md"),
            &format!("---\nname: {name}\ndescription: d\n---\n{body}"),
        );
        SkillSource {
            name: name.to_string(),
            dir,
            ..Default::default()
        }
    }

    fn case(files: CaseFiles) -> GoldenCase {
        GoldenCase {
            id: "c".into(),
            prompt: "p".into(),
            expected_output: None,
            expected_output_match: None,
            assertions: vec![],
            checks: vec![],
            expected_skill: ExpectedSkill::Unspecified,
            expected_script: None,
            acceptable_skills: vec![],
            should_trigger: true,
            files,
            cluster: None,
            status: CaseStatus::Active,
            weight: 1.0,
            label: None,
            timeout_s: None,
        }
    }

    #[test]
    fn arms_differ_only_by_the_target_and_evals_are_never_staged() {
        let sources = tempfile::tempdir().unwrap();
        let target = skill(sources.path(), "target", "target body");
        write(&target.dir.join("evals/evals.json"), "{\"secret\": true}");
        write(&target.dir.join("scripts/run.sh"), "echo");
        let decoy = skill(sources.path(), "decoy", "decoy body");
        write(&sources.path().join("files/data.csv"), "a,b");
        let digest = fingerprint(&target.dir, Calibre::V3AgentSkills)
            .unwrap()
            .digest;
        let skills_dir = Path::new(".agents/skills");
        let with = stage_trial(&TrialStaging {
            staging: ArmStaging::WithTarget,
            case: &case(CaseFiles::Omitted),
            target: &target,
            previous: None,
            decoys: std::slice::from_ref(&decoy),
            skills_dir,
            eval_files_dir: &sources.path().join("files"),
            target_digest: &digest,
            calibre: Calibre::V3AgentSkills,
            temp_root: None,
            owner: None,
        })
        .unwrap();
        assert_eq!(
            with.skills
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            vec!["decoy", "target"]
        );
        assert!(
            with.workspace
                .join(".agents/skills/target/scripts/run.sh")
                .is_file()
        );
        assert!(!with.workspace.join(".agents/skills/target/evals").exists());
        assert!(with.workspace.join("data.csv").is_file());
        assert!(with.home.is_dir());
        // The staged target has the source's fingerprint (evals excluded from both).
        assert_eq!(
            fingerprint(
                &with.workspace.join(".agents/skills/target"),
                Calibre::V3AgentSkills
            )
            .unwrap()
            .digest,
            digest
        );
        let without = stage_trial(&TrialStaging {
            staging: ArmStaging::WithoutTarget,
            case: &case(CaseFiles::Listed(vec![])),
            target: &target,
            previous: None,
            decoys: &[decoy],
            skills_dir,
            eval_files_dir: &sources.path().join("files"),
            target_digest: &digest,
            calibre: Calibre::V3AgentSkills,
            temp_root: None,
            owner: None,
        })
        .unwrap();
        assert_eq!(without.skills.len(), 1);
        assert!(!without.workspace.join("data.csv").exists());
        let path = without.workspace.clone();
        drop(without);
        assert!(!path.exists(), "workspace removed after the trial");
    }

    #[test]
    fn leak_guard_refuses_the_target_under_another_name() {
        let sources = tempfile::tempdir().unwrap();
        let target = skill(sources.path(), "target", "same body");
        let digest = fingerprint(&target.dir, Calibre::V3AgentSkills)
            .unwrap()
            .digest;
        let renamed = SkillSource {
            name: "innocent".into(),
            dir: target.dir.clone(),
            ..Default::default()
        };
        let error = stage_trial(&TrialStaging {
            staging: ArmStaging::WithoutTarget,
            case: &case(CaseFiles::Omitted),
            target: &target,
            previous: None,
            decoys: &[renamed],
            skills_dir: Path::new("skills"),
            eval_files_dir: Path::new("/nonexistent"),
            target_digest: &digest,
            calibre: Calibre::V3AgentSkills,
            temp_root: None,
            owner: None,
        })
        .err()
        .unwrap();
        assert!(matches!(error, StagingError::Leak { .. }), "{error}");
    }

    #[test]
    fn only_inject_trials_without_files_or_file_graders_stage_in_memory() {
        use crate::features::grade::checks::Check;
        use crate::record::SkillDelivery;
        let plain = case(CaseFiles::Listed(vec![]));
        let need = |delivery, case: &GoldenCase, files, custom, keep| {
            StagingNeed::of(delivery, case, files, custom, keep)
        };
        assert_eq!(
            need(SkillDelivery::Inject, &plain, true, false, false),
            StagingNeed::InMemory,
            "listed files (none) win over evals/files/"
        );
        for delivery in [SkillDelivery::Tools, SkillDelivery::Native] {
            assert_eq!(
                need(delivery, &plain, false, false, false),
                StagingNeed::Folder(FolderReason::RunnerReadsFiles)
            );
        }
        assert_eq!(
            need(
                SkillDelivery::Inject,
                &case(CaseFiles::Omitted),
                true,
                false,
                false
            ),
            StagingNeed::Folder(FolderReason::CaseFiles)
        );
        assert_eq!(
            need(
                SkillDelivery::Inject,
                &case(CaseFiles::Omitted),
                false,
                false,
                false
            ),
            StagingNeed::InMemory
        );
        let mut checked = plain.clone();
        checked.checks = vec![Check::FileExists {
            path: "out.txt".into(),
        }];
        assert_eq!(
            need(SkillDelivery::Inject, &checked, false, false, false),
            StagingNeed::Folder(FolderReason::WorkspaceChecks)
        );
        assert_eq!(
            need(SkillDelivery::Inject, &plain, false, true, false),
            StagingNeed::Folder(FolderReason::CustomGraders)
        );
        assert_eq!(
            need(SkillDelivery::Inject, &plain, false, false, true),
            StagingNeed::Folder(FolderReason::KeptWorkspaces)
        );
    }

    #[test]
    fn an_arm_staged_in_memory_holds_its_texts_and_is_leak_guarded_once() {
        let sources = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let target = skill(sources.path(), "target", "the target's body");
        let decoy = skill(sources.path(), "decoy", "a decoy");
        let digest = fingerprint(&target.dir, Calibre::V3AgentSkills)
            .unwrap()
            .digest;
        let stage = |staging, decoys: &[SkillSource]| {
            stage_arm_in_memory(
                staging,
                &target,
                None,
                decoys,
                Path::new(".agents/skills"),
                &digest,
                Calibre::V3AgentSkills,
                Some(scratch.path()),
                Some(sources.path()),
            )
        };
        let with = stage(ArmStaging::WithTarget, std::slice::from_ref(&decoy)).unwrap();
        let names: Vec<(&str, bool)> = with.iter().map(|s| (s.name.as_str(), s.target)).collect();
        assert_eq!(names, [("decoy", false), ("target", true)]);
        assert!(
            with[1]
                .skill_md
                .as_deref()
                .unwrap()
                .contains("the target's body")
        );
        assert_eq!(with[1].dir, Path::new(".agents/skills/target"));
        let without = stage(ArmStaging::WithoutTarget, std::slice::from_ref(&decoy)).unwrap();
        assert_eq!(without.len(), 1);
        assert_eq!(without[0].name, "decoy");
        // A decoy that is the target under another name is refused (fingerprint), and so is one
        // that copies its text (content check).
        let renamed = SkillSource {
            name: "innocent".into(),
            dir: target.dir.clone(),
            ..Default::default()
        };
        let error = stage(ArmStaging::WithoutTarget, &[renamed]).err().unwrap();
        assert!(matches!(error, StagingError::Leak { .. }), "{error}");
        let copy = skill(sources.path(), "copy", "the target's body");
        let error = stage(ArmStaging::WithoutTarget, &[copy]).err().unwrap();
        assert!(error.is_leak(), "{error}");
        // The scratch folders are gone.
        assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
    }

    #[test]
    fn leak_guard_compares_meaning_not_bytes() {
        let sources = tempfile::tempdir().unwrap();
        let body = "Begin every answer with Aye! and then answer the question\nin the voice of a friendly pirate captain.\n\n- Keep it short.\n";
        let target = skill(sources.path(), "target", body);
        let digest = fingerprint(&target.dir, Calibre::V3AgentSkills)
            .unwrap()
            .digest;
        // A renamed copy that differs only by whitespace: CRLF, trailing spaces, blank lines,
        // a tab. Its fingerprint differs; its meaning does not.
        let decoy_dir = sources.path().join("decoys/sea-voice");
        write(
            &decoy_dir.join("SKILL.md"),
            &format!("---\nname: sea-voice\ndescription: d\n---\n\n\n{body}")
                .replace("- Keep", "\t- Keep")
                .replace('\n', "  \r\n"),
        );
        let decoy = SkillSource {
            name: "sea-voice".into(),
            dir: decoy_dir.clone(),
            ..Default::default()
        };
        let stage = |decoys: &[SkillSource], files: CaseFiles| {
            stage_trial(&TrialStaging {
                staging: ArmStaging::WithoutTarget,
                case: &case(files),
                target: &target,
                previous: None,
                decoys,
                skills_dir: Path::new("skills"),
                eval_files_dir: Path::new("/nonexistent"),
                target_digest: &digest,
                calibre: Calibre::V3AgentSkills,
                temp_root: None,
                owner: None,
            })
        };
        let error = stage(std::slice::from_ref(&decoy), CaseFiles::Omitted)
            .err()
            .unwrap();
        let text = error.to_string();
        assert!(matches!(error, StagingError::Resembles { .. }), "{text}");
        assert!(text.contains("skills/sea-voice/SKILL.md"), "{text}");
        assert!(
            text.contains(&target.dir.join("SKILL.md").display().to_string()),
            "{text}"
        );
        // Same frontmatter name, different body.
        write(
            &decoy_dir.join("SKILL.md"),
            "---\nname: target\ndescription: d\n---\nSomething else.\n",
        );
        let error = stage(std::slice::from_ref(&decoy), CaseFiles::Omitted)
            .err()
            .unwrap();
        assert!(error.to_string().contains("frontmatter name"), "{error}");
        // A case file that is the target's SKILL.md (or its folder) is refused.
        for source in [target.dir.join("SKILL.md"), target.dir.clone()] {
            let file = CaseFile {
                source,
                destination: PathBuf::from("notes.md"),
            };
            let error = stage(&[], CaseFiles::Listed(vec![file])).err().unwrap();
            assert!(
                matches!(error, StagingError::CaseFileCopiesTarget { .. }),
                "{error}"
            );
        }
    }

    #[test]
    fn the_previous_version_is_staged_under_the_target_name_and_guarded() {
        let sources = tempfile::tempdir().unwrap();
        let target = skill(sources.path(), "target", "version two");
        let old = skill(sources.path(), "old", "version one");
        // The previous version's folder holds the target's frontmatter name.
        write(
            &old.dir.join("SKILL.md"),
            "---\nname: target\ndescription: d\n---\nversion one",
        );
        let digest = |dir: &Path| fingerprint(dir, Calibre::V3AgentSkills).unwrap().digest;
        let previous = PreviousSkill {
            dir: old.dir.clone(),
            digest: digest(&old.dir),
        };
        let stage = |staging, decoys: &[SkillSource]| {
            stage_trial(&TrialStaging {
                staging,
                case: &case(CaseFiles::Omitted),
                target: &target,
                previous: Some(&previous),
                decoys,
                skills_dir: Path::new("skills"),
                eval_files_dir: Path::new("/nonexistent"),
                target_digest: &digest(&target.dir),
                calibre: Calibre::V3AgentSkills,
                temp_root: None,
                owner: None,
            })
        };
        let staged = stage(ArmStaging::WithPrevious, &[]).unwrap();
        assert_eq!(staged.skills.len(), 1);
        assert_eq!(staged.skills[0].name, "target");
        assert!(staged.skills[0].target);
        assert_eq!(
            std::fs::read_to_string(staged.workspace.join("skills/target/SKILL.md")).unwrap(),
            "---\nname: target\ndescription: d\n---\nversion one"
        );
        // The current target smuggled in as a decoy is a leak in the previous_version arm…
        let copy = SkillSource {
            name: "copy".into(),
            dir: target.dir.clone(),
            ..Default::default()
        };
        let error = stage(ArmStaging::WithPrevious, std::slice::from_ref(&copy))
            .err()
            .unwrap();
        assert!(error.is_leak(), "{error}");
        // …and the previous version is a leak in the baseline.
        let old_copy = SkillSource {
            name: "old-copy".into(),
            dir: old.dir.clone(),
            ..Default::default()
        };
        let error = stage(ArmStaging::WithoutTarget, &[old_copy]).err().unwrap();
        assert!(error.is_leak(), "{error}");
    }

    #[test]
    fn arms_are_data() {
        for arm in Arm::KINDS {
            assert_eq!(arm.as_str().parse::<Arm>().unwrap(), arm);
            assert_eq!(
                serde_json::to_value(arm).unwrap(),
                serde_json::json!(arm.as_str())
            );
        }
        assert_eq!(
            ArmDesign::Paired.staging(Arm::PreviousVersion),
            ArmStaging::WithPrevious
        );
        for exposure in [Exposure::Native, Exposure::Nudge, Exposure::Forced] {
            let arm = exposure.arm();
            assert_eq!(arm.spec().exposure, exposure);
            assert_eq!(ArmDesign::Paired.staging(arm), ArmStaging::WithTarget);
        }
        let skills = Path::new(".agents/skills");
        assert_eq!(Exposure::Native.prompt("Q?", "s", skills, "BODY"), "Q?");
        let nudge = Exposure::Nudge.prompt("Q?", "s", skills, "BODY");
        assert!(nudge.contains(".agents/skills/s/SKILL.md") && nudge.ends_with("Q?"));
        assert!(!nudge.contains("BODY"));
        let forced = Exposure::Forced.prompt("Q?", "s", skills, "BODY\n");
        assert!(forced.contains("BODY") && forced.ends_with("Q?"));
        assert!("nope".parse::<Arm>().is_err());
    }

    #[test]
    fn designs_stage_the_target_where_they_say() {
        use ArmStaging::{WithTarget, WithoutTarget};
        let cases = [
            (ArmDesign::Paired, [WithTarget, WithoutTarget]),
            (ArmDesign::AaWithoutTarget, [WithoutTarget, WithoutTarget]),
            (ArmDesign::AaWithTarget, [WithTarget, WithTarget]),
        ];
        for (design, expected) in cases {
            assert_eq!(
                [
                    design.staging(Arm::WithSkill),
                    design.staging(Arm::WithoutSkill)
                ],
                expected,
                "{design:?}"
            );
        }
    }

    #[test]
    fn orphaned_trial_folders_of_a_run_are_removed() {
        let sources = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let run_dir = sources.path().join("run");
        std::fs::create_dir_all(&run_dir).unwrap();
        let target = skill(sources.path(), "target", "b");
        let stage = |owner: &Path| {
            stage_trial(&TrialStaging {
                staging: ArmStaging::WithTarget,
                case: &case(CaseFiles::Omitted),
                target: &target,
                previous: None,
                decoys: &[],
                skills_dir: Path::new("skills"),
                eval_files_dir: Path::new("/nonexistent"),
                target_digest: "sha256:x",
                calibre: Calibre::V3AgentSkills,
                temp_root: Some(root.path()),
                owner: Some(owner),
            })
            .unwrap()
        };
        let mut mine = stage(&run_dir);
        let mut kept = stage(&run_dir);
        let other_run = sources.path().join("other");
        std::fs::create_dir_all(&other_run).unwrap();
        let mut theirs = stage(&other_run);
        // A kill -9 leaves them all behind.
        let (mine, kept, theirs) = (
            mine.keep().unwrap(),
            kept.keep().unwrap(),
            theirs.keep().unwrap(),
        );
        let keep: std::collections::HashSet<PathBuf> = [kept.join("workspace")].into();
        assert_eq!(
            remove_orphaned_trial_folders(&run_dir, Some(root.path()), &keep),
            1
        );
        assert!(!mine.exists());
        assert!(kept.exists() && theirs.exists());
    }

    #[test]
    fn listed_files_land_at_their_destination_and_kept_workspaces_survive() {
        let sources = tempfile::tempdir().unwrap();
        let target = skill(sources.path(), "target", "b");
        write(&sources.path().join("evals/files/sub/a.txt"), "a");
        let file = CaseFile {
            source: sources.path().join("evals/files/sub/a.txt"),
            destination: PathBuf::from("sub/a.txt"),
        };
        let mut staged = stage_trial(&TrialStaging {
            staging: ArmStaging::WithTarget,
            case: &case(CaseFiles::Listed(vec![file])),
            target: &target,
            previous: None,
            decoys: &[],
            skills_dir: Path::new("skills"),
            eval_files_dir: Path::new("/nonexistent"),
            target_digest: "sha256:x",
            calibre: Calibre::V3AgentSkills,
            temp_root: None,
            owner: None,
        })
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(staged.workspace.join("sub/a.txt")).unwrap(),
            "a"
        );
        let kept = staged.keep().unwrap();
        drop(staged);
        assert!(kept.exists());
        std::fs::remove_dir_all(kept).unwrap();
    }

    /// Every path under `root` (relative), with its kind, without following links.
    fn tree(root: &Path) -> Vec<String> {
        fn walk(dir: &Path, rel: &Path, out: &mut Vec<String>) {
            let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let rel = rel.join(entry.file_name());
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    out.push(format!("{}/", rel.display()));
                    walk(&entry.path(), &rel, out);
                } else {
                    let text = std::fs::read(entry.path()).unwrap_or_default();
                    out.push(format!(
                        "{} {}",
                        rel.display(),
                        String::from_utf8_lossy(&text)
                    ));
                }
            }
        }
        let mut out = Vec::new();
        walk(root, Path::new(""), &mut out);
        out
    }

    #[test]
    fn a_reused_slot_holds_exactly_the_next_trials_staged_state() {
        use std::os::unix::fs::PermissionsExt;
        let sources = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let run_dir = sources.path().join("run");
        std::fs::create_dir_all(&run_dir).unwrap();
        let target = skill(sources.path(), "target", "target body");
        write(&target.dir.join("scripts/run.sh"), "echo");
        write(&target.dir.join("evals/evals.json"), "{}");
        let decoy = skill(sources.path(), "decoy", "decoy body");
        write(&sources.path().join("files/data.csv"), "a,b");
        let digest = fingerprint(&target.dir, Calibre::V3AgentSkills)
            .unwrap()
            .digest;
        let pool = std::sync::Arc::new(SlotPool::default());
        let stage_in = |pool: Option<&std::sync::Arc<SlotPool>>, staging, files: CaseFiles| {
            let case = case(files);
            let files_dir = sources.path().join("files");
            let request = TrialStaging {
                staging,
                case: &case,
                target: &target,
                previous: None,
                decoys: std::slice::from_ref(&decoy),
                skills_dir: Path::new(".claude/skills"),
                eval_files_dir: &files_dir,
                target_digest: digest.as_str(),
                calibre: Calibre::V3AgentSkills,
                temp_root: Some(scratch.path()),
                owner: Some(run_dir.as_path()),
            };
            match pool {
                Some(pool) => stage_trial_in_slot(pool, &request),
                None => stage_trial(&request),
            }
            .unwrap()
        };
        // What a fresh folder holds, for each arm and case shape.
        let fresh = |staging, files: CaseFiles| {
            let staged = stage_in(None, staging, files);
            let root = staged.workspace.parent().unwrap().to_path_buf();
            tree(&root)
        };
        let first = stage_in(Some(&pool), ArmStaging::WithTarget, CaseFiles::Omitted);
        let root = first.workspace.parent().unwrap().to_path_buf();
        assert_eq!(
            tree(&root),
            fresh(ArmStaging::WithTarget, CaseFiles::Omitted)
        );
        // The agent leaves everything it can behind: files and folders in the workspace, in HOME
        // and next to them, a changed staged file (same length), a staged file made read-only,
        // a read-only folder with a file in it, symbolic links (to a folder outside, and one
        // replacing a staged folder), a hard link to a staged file, a fifo.
        let ws = first.workspace.clone();
        write(&ws.join("out/result.txt"), "leftover");
        write(&first.home.join(".claude/settings.json"), "{}");
        write(&root.join("beside.txt"), "x");
        std::fs::write(ws.join(".claude/skills/decoy/SKILL.md"), {
            let text = std::fs::read_to_string(decoy.dir.join("SKILL.md")).unwrap();
            text.replace("decoy body", "DECOY BODY")
        })
        .unwrap();
        let script = ws.join(".claude/skills/target/scripts/run.sh");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o400)).unwrap();
        write(&ws.join("locked/inner/secret.txt"), "target body");
        std::fs::set_permissions(
            ws.join("locked/inner"),
            std::fs::Permissions::from_mode(0o500),
        )
        .unwrap();
        std::fs::set_permissions(ws.join("locked"), std::fs::Permissions::from_mode(0o500))
            .unwrap();
        std::os::unix::fs::symlink(&target.dir, ws.join("link-to-target")).unwrap();
        std::fs::hard_link(
            ws.join(".claude/skills/target/SKILL.md"),
            first.home.join("hard"),
        )
        .unwrap();
        let fifo = std::ffi::CString::new(ws.join("pipe").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo only creates a file system node at a valid C string path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o500)).unwrap();
        drop(first);
        assert_eq!(pool.free_slots(), 1);

        // The next trial (the baseline, another case shape) gets the same folder, holding
        // exactly what a fresh one would, and passes the leak guard.
        let second = stage_in(
            Some(&pool),
            ArmStaging::WithoutTarget,
            CaseFiles::Listed(vec![]),
        );
        assert_eq!(
            second.workspace.parent().unwrap(),
            root,
            "the slot is reused"
        );
        assert_eq!(
            tree(&root),
            fresh(ArmStaging::WithoutTarget, CaseFiles::Listed(vec![]))
        );
        // A staged folder replaced by a symbolic link is a folder again.
        let skills = second.workspace.join(".claude/skills");
        std::fs::remove_dir_all(skills.join("decoy")).unwrap();
        std::os::unix::fs::symlink(&target.dir, skills.join("decoy")).unwrap();
        drop(second);
        let third = stage_in(Some(&pool), ArmStaging::WithTarget, CaseFiles::Omitted);
        assert_eq!(
            tree(&root),
            fresh(ArmStaging::WithTarget, CaseFiles::Omitted)
        );
        assert_eq!(
            std::fs::metadata(third.workspace.join(".claude/skills/target/scripts/run.sh"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            std::fs::metadata(target.dir.join("scripts/run.sh"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        );
        // Two trials at once get two folders; a kept one leaves the pool.
        let mut fourth = stage_in(Some(&pool), ArmStaging::WithTarget, CaseFiles::Omitted);
        assert_ne!(fourth.workspace, third.workspace);
        let kept = fourth.keep().unwrap();
        drop(fourth);
        drop(third);
        assert_eq!(pool.free_slots(), 1);
        assert!(kept.join("workspace/data.csv").is_file());
        // The owner file names the run, so `run --resume` cleans a killed run's slots.
        assert_eq!(
            remove_orphaned_trial_folders(&run_dir, Some(scratch.path()), &Default::default()),
            2
        );
        pool.clear();
        assert_eq!(pool.free_slots(), 0);
        assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_reused_slot_keeps_the_leak_guard() {
        let sources = tempfile::tempdir().unwrap();
        let target = skill(sources.path(), "target", "same body");
        let digest = fingerprint(&target.dir, Calibre::V3AgentSkills)
            .unwrap()
            .digest;
        let renamed = SkillSource {
            name: "innocent".into(),
            dir: target.dir.clone(),
            ..Default::default()
        };
        let pool = std::sync::Arc::new(SlotPool::default());
        let stage = |staging, decoys: &[SkillSource]| {
            stage_trial_in_slot(
                &pool,
                &TrialStaging {
                    staging,
                    case: &case(CaseFiles::Omitted),
                    target: &target,
                    previous: None,
                    decoys,
                    skills_dir: Path::new("skills"),
                    eval_files_dir: Path::new("/nonexistent"),
                    target_digest: &digest,
                    calibre: Calibre::V3AgentSkills,
                    temp_root: None,
                    owner: None,
                },
            )
        };
        // A with-skill trial whose agent copies the target into the workspace under another
        // name: the baseline trial after it in the same slot does not see it.
        let with = stage(ArmStaging::WithTarget, &[]).unwrap();
        let copy = with.workspace.join("notes/SKILL.md");
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(target.dir.join("SKILL.md"), &copy).unwrap();
        drop(with);
        let without = stage(ArmStaging::WithoutTarget, &[]).unwrap();
        assert!(!without.workspace.join("notes").exists());
        drop(without);
        let error = stage(ArmStaging::WithoutTarget, &[renamed]).err().unwrap();
        assert!(matches!(error, StagingError::Leak { .. }), "{error}");
    }
}
