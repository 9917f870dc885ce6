//! The reference decoy skills staged in every arm. The four defaults (`decoys/` in the
//! repository) are compiled into the binary so `skill-lift run` works from any folder;
//! `--decoys DIR` replaces them and `--no-decoys` disables them.

use std::path::{Path, PathBuf};

use crate::asset::load_skill;
use crate::workspace::SkillSource;

/// The built-in decoys: (name, SKILL.md text).
pub const BUILTIN_DECOYS: [(&str, &str); 4] = [
    ("api-debug", include_str!("../decoys/api-debug/SKILL.md")),
    (
        "config-validator",
        include_str!("../decoys/config-validator/SKILL.md"),
    ),
    ("log-triage", include_str!("../decoys/log-triage/SKILL.md")),
    (
        "release-planner",
        include_str!("../decoys/release-planner/SKILL.md"),
    ),
];

/// Where decoys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecoySource {
    /// The compiled-in defaults.
    Builtin,
    /// Every skill folder directly inside a folder.
    Folder(PathBuf),
    /// No decoys.
    None,
}

impl DecoySource {
    /// The name recorded in the manifest.
    pub fn recorded_name(&self) -> String {
        match self {
            DecoySource::Builtin => "builtin".to_string(),
            DecoySource::Folder(path) => path.display().to_string(),
            DecoySource::None => "none".to_string(),
        }
    }

    /// Parse a recorded name back.
    pub fn from_recorded(name: &str) -> Self {
        match name {
            "builtin" => DecoySource::Builtin,
            "none" => DecoySource::None,
            path => DecoySource::Folder(PathBuf::from(path)),
        }
    }
}

/// Decoys ready to stage. Holds the temporary folder of materialized built-ins.
pub struct Decoys {
    _materialized: Option<tempfile::TempDir>,
    /// The decoy skills, ordered by name.
    pub skills: Vec<SkillSource>,
}

/// Why decoys could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum DecoyError {
    #[error("{path}: cannot prepare decoys: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("decoy {0}")]
    Skill(#[from] crate::asset::SkillError),
    #[error("{path}: decoy folder holds no skill folder (a folder with SKILL.md)")]
    Empty { path: PathBuf },
}

/// Prepare the decoys of `source`: built-ins are written to a temporary folder; a folder is read
/// for its skill subfolders (each must load as a skill).
pub fn prepare_decoys(source: &DecoySource) -> Result<Decoys, DecoyError> {
    match source {
        DecoySource::None => Ok(Decoys {
            _materialized: None,
            skills: Vec::new(),
        }),
        DecoySource::Builtin => {
            let dir = tempfile::Builder::new()
                .prefix("skill-lift-decoys-")
                .tempdir()
                .map_err(|source| DecoyError::Io {
                    path: std::env::temp_dir(),
                    source,
                })?;
            let mut skills = Vec::new();
            for (name, text) in BUILTIN_DECOYS {
                let skill_dir = dir.path().join(name);
                std::fs::create_dir_all(&skill_dir)
                    .and_then(|_| std::fs::write(skill_dir.join("SKILL.md"), text))
                    .map_err(|source| DecoyError::Io {
                        path: skill_dir.clone(),
                        source,
                    })?;
                skills.push(SkillSource {
                    name: name.to_string(),
                    dir: skill_dir,
                });
            }
            Ok(Decoys {
                _materialized: Some(dir),
                skills,
            })
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
                    });
                }
            }
            if skills.is_empty() {
                return Err(DecoyError::Empty { path: path.clone() });
            }
            skills.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(Decoys {
                _materialized: None,
                skills,
            })
        }
    }
}

fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asset::{SkillWarning, is_valid_skill_name};

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
    fn folder_without_skills_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            prepare_decoys(&DecoySource::Folder(dir.path().to_path_buf())),
            Err(DecoyError::Empty { .. })
        ));
    }
}
