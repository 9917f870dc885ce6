//! The reference decoy skills staged in every arm. The four defaults (`decoys/` in the
//! repository) are compiled into the binary so `skill-lift run` works from any folder;
//! `--decoys DIR` replaces them and `--no-decoys` disables them.

use std::path::{Path, PathBuf};

use crate::features::asset::load_skill;
use crate::features::workspace::SkillSource;

/// The built-in decoys: (name, SKILL.md text).
pub(crate) const BUILTIN_DECOYS: [(&str, &str); 4] = [
    ("api-debug", include_str!("../../decoys/api-debug/SKILL.md")),
    (
        "config-validator",
        include_str!("../../decoys/config-validator/SKILL.md"),
    ),
    (
        "log-triage",
        include_str!("../../decoys/log-triage/SKILL.md"),
    ),
    (
        "release-planner",
        include_str!("../../decoys/release-planner/SKILL.md"),
    ),
];

/// Where decoys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecoySource {
    /// The compiled-in defaults.
    Builtin,
    /// Every skill folder directly inside a folder.
    Folder(PathBuf),
    /// No decoys.
    None,
}

impl DecoySource {
    /// The name recorded in the manifest.
    pub(crate) fn recorded_name(&self) -> String {
        match self {
            DecoySource::Builtin => "builtin".to_string(),
            DecoySource::Folder(path) => path.display().to_string(),
            DecoySource::None => "none".to_string(),
        }
    }

    /// Parse a recorded name back.
    pub(crate) fn from_recorded(name: &str) -> Self {
        match name {
            "builtin" => DecoySource::Builtin,
            "none" => DecoySource::None,
            path => DecoySource::Folder(PathBuf::from(path)),
        }
    }
}

/// Decoys ready to stage.
pub(crate) struct Decoys {
    /// The decoy skills, ordered by name.
    pub skills: Vec<SkillSource>,
}

/// Why decoys could not be prepared.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecoyError {
    #[error("{path}: cannot prepare decoys: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("decoy {0}")]
    Skill(#[from] crate::features::asset::SkillError),
    #[error("{path}: decoy folder holds no skill folder (a folder with SKILL.md)")]
    Empty { path: PathBuf },
}

/// Prepare the decoys of `source`: built-ins are read from their folder under the system
/// temporary folder ([`builtin_folder`]); a folder is read for its skill subfolders (each must
/// load as a skill).
pub(crate) fn prepare_decoys(source: &DecoySource) -> Result<Decoys, DecoyError> {
    match source {
        DecoySource::None => Ok(Decoys { skills: Vec::new() }),
        DecoySource::Builtin => {
            let dir = builtin_folder(&std::env::temp_dir())?;
            let skills = BUILTIN_DECOYS
                .iter()
                .map(|(name, _)| SkillSource {
                    name: name.to_string(),
                    dir: dir.join(name),
                    ..Default::default()
                })
                .collect();
            Ok(Decoys { skills })
        }
        DecoySource::Folder(path) => {
            let mut skills = Vec::new();
            let entries = std::fs::read_dir(path).map_err(|source| DecoyError::Io {
                path: path.clone(),
                source,
            })?;
            for entry in entries {
                let entry = entry.map_err(|source| DecoyError::Io {
                    path: path.clone(),
                    source,
                })?;
                let dir = entry.path();
                if dir.is_dir() && dir.join("SKILL.md").is_file() {
                    load_skill(&dir)?;
                    skills.push(SkillSource {
                        name: folder_name(&dir),
                        dir,
                        ..Default::default()
                    });
                }
            }
            if skills.is_empty() {
                return Err(DecoyError::Empty { path: path.clone() });
            }
            skills.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(Decoys { skills })
        }
    }
}

/// The built-in decoys as skill folders, in one folder under `temp_root` named by a hash of
/// their content and the user (`skill-lift-decoys-<hash>-<uid>`): every run of this build shares
/// it, so a killed run leaves nothing behind that the next one does not reuse. The folder is
/// created whole (written under a temporary name, then renamed) and reused only when it is this
/// user's, closed to others, and holds exactly the built-ins; otherwise it is replaced.
pub(crate) fn builtin_folder(temp_root: &Path) -> Result<PathBuf, DecoyError> {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for (name, text) in BUILTIN_DECOYS {
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update(text.as_bytes());
        hash.update([0]);
    }
    let digest: String = hash.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let folder = temp_root.join(format!("skill-lift-decoys-{digest}-{}", user_id()));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DecoyError::Io { path, source }
    };
    if holds_exactly_the_builtins(&folder) {
        return Ok(folder);
    }
    let fresh = tempfile::Builder::new()
        .prefix(".skill-lift-decoys-")
        .tempdir_in(temp_root)
        .map_err(io(temp_root))?;
    for (name, text) in BUILTIN_DECOYS {
        let skill_dir = fresh.path().join(name);
        std::fs::create_dir(&skill_dir)
            .and_then(|_| {
                crate::disk::write(skill_dir.join("SKILL.md"), text)
                    .map_err(crate::disk::DiskError::into_io)
            })
            .map_err(io(&skill_dir))?;
    }
    // A folder in the way (another user's, altered, half-removed) is moved aside first; a
    // concurrent run may have renamed its own complete copy into place meanwhile.
    if std::fs::symlink_metadata(&folder).is_ok() && !holds_exactly_the_builtins(&folder) {
        let aside = tempfile::Builder::new()
            .prefix(".skill-lift-decoys-stale-")
            .tempdir_in(temp_root)
            .map_err(io(temp_root))?;
        if std::fs::rename(&folder, aside.path().join("old")).is_err() {
            // Not ours to move (another user's, in a shared temporary folder).
            return Err(DecoyError::Io {
                path: folder,
                source: std::io::Error::other(
                    "this folder is in the way of the built-in decoys and cannot be moved; remove it",
                ),
            });
        }
    }
    let staged = fresh.keep();
    match std::fs::rename(&staged, &folder) {
        Ok(()) => Ok(folder),
        Err(_) if holds_exactly_the_builtins(&folder) => {
            // Another run put the same folder in place first.
            let _ = std::fs::remove_dir_all(&staged);
            Ok(folder)
        }
        Err(source) => {
            let _ = std::fs::remove_dir_all(&staged);
            Err(DecoyError::Io {
                path: folder,
                source,
            })
        }
    }
}

/// Whether `folder` is a real folder of this user, closed to others, holding exactly one
/// folder per built-in decoy with exactly its `SKILL.md`.
fn holds_exactly_the_builtins(folder: &Path) -> bool {
    let Ok(metadata) = std::fs::symlink_metadata(folder) else {
        return false;
    };
    if !metadata.is_dir() || !owned_and_private(&metadata) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(folder) else {
        return false;
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if names != BUILTIN_DECOYS.map(|(name, _)| name.to_string()) {
        return false;
    }
    BUILTIN_DECOYS.iter().all(|(name, text)| {
        let dir = folder.join(name);
        let only_skill_md = std::fs::read_dir(&dir).is_ok_and(|entries| {
            let names: Vec<_> = entries
                .filter_map(Result::ok)
                .map(|e| e.file_name())
                .collect();
            names == ["SKILL.md"]
        });
        let file = dir.join("SKILL.md");
        only_skill_md
            && std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file())
            && std::fs::read(&file).is_ok_and(|bytes| bytes == text.as_bytes())
    })
}

#[cfg(unix)]
fn owned_and_private(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    metadata.uid() == user_id() && metadata.mode() & 0o022 == 0
}

#[cfg(not(unix))]
fn owned_and_private(_: &std::fs::Metadata) -> bool {
    true
}

#[cfg(unix)]
fn user_id() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

#[cfg(not(unix))]
fn user_id() -> u32 {
    0
}

fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::asset::{SkillWarning, is_valid_skill_name};

    #[test]
    fn builtin_decoys_are_spec_valid_skills() {
        let decoys = prepare_decoys(&DecoySource::Builtin).unwrap();
        assert_eq!(decoys.skills.len(), 4);
        for source in &decoys.skills {
            let skill = load_skill(&source.dir).unwrap();
            assert_eq!(skill.name, source.name);
            assert!(is_valid_skill_name(&skill.name));
            assert!(
                skill.warnings.is_empty(),
                "{}: {:?}",
                skill.name,
                skill.warnings
            );
            assert!(skill.description.contains("Use when"), "{}", skill.name);
            assert!(
                !skill
                    .warnings
                    .iter()
                    .any(|w| matches!(w, SkillWarning::FieldTooLong { .. }))
            );
        }
    }

    #[test]
    fn builtins_live_in_one_shared_folder_that_is_replaced_when_altered() {
        let root = tempfile::tempdir().unwrap();
        let first = builtin_folder(root.path()).unwrap();
        assert_eq!(builtin_folder(root.path()).unwrap(), first);
        let entries = |root: &Path| std::fs::read_dir(root).unwrap().count();
        assert_eq!(entries(root.path()), 1, "nothing but the one folder");
        // An altered decoy, or a file added beside one, is not reused.
        std::fs::write(first.join("log-triage/SKILL.md"), "edited").unwrap();
        assert_eq!(builtin_folder(root.path()).unwrap(), first);
        assert_eq!(
            std::fs::read_to_string(first.join("log-triage/SKILL.md")).unwrap(),
            BUILTIN_DECOYS[2].1
        );
        std::fs::write(first.join("api-debug/extra.sh"), "echo").unwrap();
        builtin_folder(root.path()).unwrap();
        assert!(!first.join("api-debug/extra.sh").exists());
        assert_eq!(entries(root.path()), 1);
        let decoys = prepare_decoys(&DecoySource::Builtin).unwrap();
        assert_eq!(
            decoys
                .skills
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            BUILTIN_DECOYS.map(|(name, _)| name)
        );
    }

    #[test]
    fn folder_without_skills_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            prepare_decoys(&DecoySource::Folder(dir.path().to_path_buf())),
            Err(DecoyError::Empty { .. })
        ));
    }
}
