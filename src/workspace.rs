//! Staging a trial: a fresh temporary folder holding the agent's workspace (skills folder with
//! the decoys, plus the target in the `with_skill` arm, and the case's fixtures) and a fresh HOME.
//!
//! The leak guard lives here: before a baseline trial starts, no staged skill may carry the
//! target's fingerprint, under any name. Staging never copies a skill's `evals/` folder (the
//! golden set must not reach the agent).

use std::path::{Path, PathBuf};

use crate::asset::fingerprint::{Calibre, fingerprint};
use crate::evalset::{CaseFiles, GoldenCase};
use crate::runner::StagedSkill;

/// Which arm a trial belongs to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// Decoys plus the target skill.
    WithSkill,
    /// Decoys only (the baseline).
    WithoutSkill,
}

impl Arm {
    /// Both arms, with-skill first.
    pub const ALL: [Arm; 2] = [Arm::WithSkill, Arm::WithoutSkill];

    /// The arm's recorded name.
    pub fn as_str(self) -> &'static str {
        match self {
            Arm::WithSkill => "with_skill",
            Arm::WithoutSkill => "without_skill",
        }
    }
}

/// A skill source to stage: its name in the skills folder and its source folder.
#[derive(Debug, Clone)]
pub struct SkillSource {
    pub name: String,
    pub dir: PathBuf,
}

/// A staged trial folder; removed on drop unless kept.
pub struct StagedTrial {
    root: Option<tempfile::TempDir>,
    kept_root: Option<PathBuf>,
    /// The agent's working folder.
    pub workspace: PathBuf,
    /// The agent's fresh HOME.
    pub home: PathBuf,
    /// Skills staged, ordered by name.
    pub skills: Vec<StagedSkill>,
}

impl StagedTrial {
    /// Keep the folder after the trial; returns its path.
    pub fn keep(&mut self) -> Option<PathBuf> {
        if let Some(root) = self.root.take() {
            self.kept_root = Some(root.keep());
        }
        self.kept_root.clone()
    }
}

/// Why staging failed.
#[derive(Debug, thiserror::Error)]
pub enum StagingError {
    #[error("staging I/O error at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "leak guard: staged skill `{name}` in the baseline has the target's fingerprint {digest}; the baseline must not contain the target under any name"
    )]
    Leak { name: String, digest: String },
    #[error("fingerprinting a staged skill failed: {0}")]
    Fingerprint(String),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StagingError + '_ {
    move |source| StagingError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Copy `source` (file or folder) to `destination`, skipping `evals/`, `results/` and `.git/` inside skills when
/// `skill_copy` (the golden set never reaches the agent). Symbolic links
/// are not followed.
fn copy_tree(source: &Path, destination: &Path, skill_copy: bool) -> Result<(), StagingError> {
    let metadata = std::fs::symlink_metadata(source).map_err(io_error(source))?;
    if metadata.is_file() {
        if let Some(parent) = destination.parent() {
            std::fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        std::fs::copy(source, destination).map_err(io_error(source))?;
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
        if file_type.is_dir() && skill_copy && is_skill_excluded_dir(&name.to_string_lossy()) {
            continue;
        }
        copy_tree(&entry.path(), &destination.join(&name), skill_copy)?;
    }
    Ok(())
}

/// Folders of a skill never staged: the golden set (it holds the expected answers), run output
/// and version control. Everything else is staged as installed, since the body may point to it.
fn is_skill_excluded_dir(name: &str) -> bool {
    matches!(name, "evals" | "results" | ".git")
}

/// Stage one trial.
///
/// `decoys` are staged in both arms; `target` only when `arm` is `WithSkill`. `skills_dir` is the
/// runner's skills folder relative to the workspace. `eval_files_dir` is `evals/files/` of the
/// skill (staged whole when the case omits `files`). `target_digest` arms the leak guard.
#[allow(clippy::too_many_arguments)]
pub fn stage_trial(
    arm: Arm,
    case: &GoldenCase,
    target: &SkillSource,
    decoys: &[SkillSource],
    skills_dir: &Path,
    eval_files_dir: &Path,
    target_digest: &str,
    calibre: Calibre,
    temp_root: Option<&Path>,
) -> Result<StagedTrial, StagingError> {
    let root = match temp_root {
        Some(dir) => tempfile::Builder::new().prefix("trial-").tempdir_in(dir),
        None => tempfile::Builder::new()
            .prefix("skill-lift-trial-")
            .tempdir(),
    }
    .map_err(|source| StagingError::Io {
        path: temp_root
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir),
        source,
    })?;
    let workspace = root.path().join("workspace");
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).map_err(io_error(&home))?;
    let skills_root = workspace.join(skills_dir);
    // The skills folder exists in both arms, empty or not (an absent folder is a difference).
    std::fs::create_dir_all(&skills_root).map_err(io_error(&skills_root))?;

    let mut sources: Vec<&SkillSource> = decoys.iter().collect();
    if arm == Arm::WithSkill {
        sources.push(target);
    }
    sources.sort_by(|a, b| a.name.cmp(&b.name));
    let mut skills = Vec::with_capacity(sources.len());
    for source in sources {
        let destination = skills_root.join(&source.name);
        copy_tree(&source.dir, &destination, true)?;
        skills.push(StagedSkill {
            name: source.name.clone(),
            dir: destination,
            target: std::ptr::eq(source, target),
        });
    }

    if arm == Arm::WithoutSkill {
        for skill in &skills {
            let staged = fingerprint(&skill.dir, calibre)
                .map_err(|e| StagingError::Fingerprint(e.to_string()))?;
            if staged.digest == target_digest {
                return Err(StagingError::Leak {
                    name: skill.name.clone(),
                    digest: staged.digest,
                });
            }
        }
    }

    match &case.files {
        CaseFiles::Omitted => {
            if eval_files_dir.is_dir() {
                copy_tree(eval_files_dir, &workspace, false)?;
            }
        }
        CaseFiles::Listed(files) => {
            for file in files {
                copy_tree(&file.source, &workspace.join(&file.destination), false)?;
            }
        }
    }

    Ok(StagedTrial {
        root: Some(root),
        kept_root: None,
        workspace,
        home,
        skills,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evalset::{CaseFile, CaseStatus, ExpectedSkill};

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
        let with = stage_trial(
            Arm::WithSkill,
            &case(CaseFiles::Omitted),
            &target,
            std::slice::from_ref(&decoy),
            skills_dir,
            &sources.path().join("files"),
            &digest,
            Calibre::V3AgentSkills,
            None,
        )
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
        let without = stage_trial(
            Arm::WithoutSkill,
            &case(CaseFiles::Listed(vec![])),
            &target,
            &[decoy],
            skills_dir,
            &sources.path().join("files"),
            &digest,
            Calibre::V3AgentSkills,
            None,
        )
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
        };
        let error = stage_trial(
            Arm::WithoutSkill,
            &case(CaseFiles::Omitted),
            &target,
            &[renamed],
            Path::new("skills"),
            Path::new("/nonexistent"),
            &digest,
            Calibre::V3AgentSkills,
            None,
        )
        .err()
        .unwrap();
        assert!(matches!(error, StagingError::Leak { .. }), "{error}");
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
        let mut staged = stage_trial(
            Arm::WithSkill,
            &case(CaseFiles::Listed(vec![file])),
            &target,
            &[],
            Path::new("skills"),
            Path::new("/nonexistent"),
            "sha256:x",
            Calibre::V3AgentSkills,
            None,
        )
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
}
