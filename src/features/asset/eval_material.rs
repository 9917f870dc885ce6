//! Eval material: the files of a skill folder that hold its answer key (author cases with their
//! expected outputs, eval sets, grader inputs). The rule here is applied wherever a skill is
//! copied into a trial workspace (`crate::features::workspace`, every arm: the target, a previous
//! version, decoys) and by the `v4-no-eval-material` fingerprint calibre
//! ([`super::fingerprint`]), so no agent can read the answers and editing a test case never
//! reads as a skill edit.
//!
//! Two parts: a rule by name that needs no eval set ([`is_eval_material_name`]: `EVAL.md`,
//! `evals/`, Vally `eval.yaml`, `evals.json` and its kin, at any depth), and the paths a loaded
//! eval set or its graders read inside the skill folder ([`EvalMaterial`]: the eval set or
//! trigger set file given with `--evals`/`--triggers`, files its cases read for grading),
//! excluded from staging only (the fingerprint is a function of the folder alone). Files an
//! eval set stages into the workspace on purpose (a case's `files`) are task fixtures, not
//! eval material: they still reach the workspace as the case says.

use std::path::{Component, Path, PathBuf};

/// Folder names that are eval material wherever they appear in a skill folder.
pub const EVAL_MATERIAL_DIRS: [&str; 1] = ["evals"];

/// File names that are eval material wherever they appear in a skill folder: the author's
/// cases (`EVAL.md`), Vally's `eval.yaml`, and the eval-set files skill-lift reads by default.
pub const EVAL_MATERIAL_FILES: [&str; 7] = [
    "EVAL.md",
    "eval.yaml",
    "eval.yml",
    "evals.json",
    "evals.jsonl",
    "evals.yaml",
    "evals.yml",
];

/// Whether an entry of a skill folder named `name` is eval material by name alone.
pub fn is_eval_material_name(name: &str, is_dir: bool) -> bool {
    if is_dir {
        EVAL_MATERIAL_DIRS.contains(&name)
    } else {
        EVAL_MATERIAL_FILES
            .iter()
            .any(|file| file.eq_ignore_ascii_case(name))
    }
}

/// Paths inside one skill folder that an eval set or its graders read, relative to the
/// folder, beyond the rule by name. Empty for decoys and skills without a loaded eval set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvalMaterial {
    relative: Vec<PathBuf>,
}

impl EvalMaterial {
    /// The eval material among `paths` (files or folders read by the eval set and its
    /// graders) that lies inside `skill_dir`; paths elsewhere are not the skill's and ignored.
    pub fn inside(skill_dir: &Path, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        let root = skill_dir
            .canonicalize()
            .unwrap_or_else(|_| skill_dir.to_path_buf());
        let mut relative: Vec<PathBuf> = paths
            .into_iter()
            .filter_map(|path| {
                let path = path.canonicalize().unwrap_or(path);
                let inside = path.strip_prefix(&root).ok()?;
                (!inside.as_os_str().is_empty()).then(|| inside.to_path_buf())
            })
            .collect();
        relative.sort();
        relative.dedup();
        Self { relative }
    }

    /// Whether the entry at `relative` (to the skill folder) is eval material: by name, or
    /// one of the eval set's own paths (or inside one).
    pub fn excludes(&self, relative: &Path, is_dir: bool) -> bool {
        let name = relative
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        is_eval_material_name(&name, is_dir)
            || self.relative.iter().any(|path| relative.starts_with(path))
    }

    /// The eval set's own paths, relative to the skill folder.
    pub fn paths(&self) -> &[PathBuf] {
        &self.relative
    }
}

/// Whether a `/`-separated path relative to a skill folder passes through eval material by
/// name (a folder on its way, or the file itself).
pub fn is_eval_material_path(relative: &str) -> bool {
    let path = Path::new(relative);
    let parts: Vec<_> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy()),
            _ => None,
        })
        .collect();
    let Some((file, dirs)) = parts.split_last() else {
        return false;
    };
    dirs.iter().any(|dir| is_eval_material_name(dir, true)) || is_eval_material_name(file, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_paths_and_eval_set_files() {
        assert!(is_eval_material_name("EVAL.md", false));
        assert!(is_eval_material_name("eval.md", false));
        assert!(is_eval_material_name("eval.yaml", false));
        assert!(is_eval_material_name("evals", true));
        assert!(!is_eval_material_name("evals", false));
        assert!(!is_eval_material_name("SKILL.md", false));
        assert!(!is_eval_material_name("references", true));
        assert!(is_eval_material_path("EVAL.md"));
        assert!(is_eval_material_path("nested/EVAL.md"));
        assert!(is_eval_material_path("evals/files/x.csv"));
        assert!(!is_eval_material_path("scripts/eval.py"));

        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("skill");
        std::fs::create_dir_all(skill.join("graders")).unwrap();
        std::fs::write(skill.join("cases.json"), "[]").unwrap();
        std::fs::write(skill.join("graders/check.py"), "").unwrap();
        std::fs::write(dir.path().join("outside.json"), "[]").unwrap();
        let material = EvalMaterial::inside(
            &skill,
            [
                skill.join("cases.json"),
                skill.join("graders"),
                dir.path().join("outside.json"),
            ],
        );
        assert_eq!(
            material.paths(),
            &[PathBuf::from("cases.json"), PathBuf::from("graders")]
        );
        assert!(material.excludes(Path::new("cases.json"), false));
        assert!(material.excludes(Path::new("graders/check.py"), false));
        assert!(material.excludes(Path::new("EVAL.md"), false));
        assert!(!material.excludes(Path::new("SKILL.md"), false));
        assert!(!material.excludes(Path::new("scripts/run.py"), false));
    }
}
