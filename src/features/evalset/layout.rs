//! Where a skill and its eval set are, from the folder the user names: the layouts public
//! skill repositories use (docs/eval-formats.md, "Repository layouts").
//!
//! - a skill folder (it holds `SKILL.md`): its `evals/evals.json` (or `.jsonl`, `.yaml`,
//!   `.yml`, or `EVAL.md`), else its Vally `tests/eval.yaml`, else an `evals/` folder of the
//!   repository above it (the nearest folder up to the repository root, at most
//!   [`MAX_LEVELS_UP`] levels), else a Vally `tests/<group>/<skill>/eval.yaml` there;
//! - a repository root or plugin folder (no `SKILL.md`): its one skill under `skills/` (or a
//!   direct subfolder); with several, the one the root `evals/evals.json` names in
//!   `skill_name`, else an error listing them.
//!
//! `--evals` always wins for the eval set, and a folder holding `SKILL.md` is always the skill.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Levels above a skill folder searched for a repository's `evals/` or `tests/` folder.
pub const MAX_LEVELS_UP: usize = 4;

/// The skill and eval set chosen for a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The skill folder (holds `SKILL.md`).
    pub skill_dir: PathBuf,
    /// The eval file or folder; `None` when none was found (the caller names the default).
    pub eval_path: Option<PathBuf>,
    /// Whether the skill was chosen among the folder's skills (not named by the user).
    pub skill_chosen: bool,
    /// Whether the eval set was found by the layout rules (not given with `--evals` and not
    /// the skill's own `evals/`).
    pub eval_found_elsewhere: bool,
}

/// Why no single skill could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error(
        "{dir}: no SKILL.md here, under skills/, or in a direct subfolder; name a skill folder"
    )]
    NoSkill { dir: PathBuf },
    #[error(
        "{dir} holds {count} skills; name one of them (or give --evals with a skill_name that names one):\n{list}",
        count = skills.len(),
        list = skills.iter().map(|s| format!("  {}", s.display())).collect::<Vec<_>>().join("\n")
    )]
    Ambiguous { dir: PathBuf, skills: Vec<PathBuf> },
}

/// The skill and eval set for `target`, with `evals` (the `--evals` flag) winning.
pub fn locate(target: &Path, evals: Option<&Path>) -> Result<Located, LayoutError> {
    if target.join("SKILL.md").is_file() || !target.is_dir() {
        // A skill folder (or something that is not a folder: the skill loader names it).
        let found = match evals {
            Some(path) => Some(path.to_path_buf()),
            None => eval_for_skill(target),
        };
        let own = super::default_eval_path(target);
        let elsewhere = evals.is_none() && found.as_ref().is_some_and(|f| *f != own);
        return Ok(Located {
            skill_dir: target.to_path_buf(),
            eval_path: found,
            skill_chosen: false,
            eval_found_elsewhere: elsewhere,
        });
    }
    let skills = skills_under(target);
    let root_evals = evals
        .map(Path::to_path_buf)
        .or_else(|| evals_folder_file(target));
    let skill_dir = match skills.as_slice() {
        [] => {
            return Err(LayoutError::NoSkill {
                dir: target.to_path_buf(),
            });
        }
        [one] => one.clone(),
        several => {
            let named = root_evals.as_deref().and_then(skill_name_of);
            match named.and_then(|name| {
                several
                    .iter()
                    .find(|dir| skill_has_name(dir, &name))
                    .cloned()
            }) {
                Some(dir) => dir,
                None => {
                    return Err(LayoutError::Ambiguous {
                        dir: target.to_path_buf(),
                        skills: several.to_vec(),
                    });
                }
            }
        }
    };
    let eval_path = root_evals.or_else(|| eval_for_skill(&skill_dir));
    let own = super::default_eval_path(&skill_dir);
    let elsewhere = evals.is_none() && eval_path.as_ref().is_some_and(|f| *f != own);
    Ok(Located {
        skill_dir,
        eval_path,
        skill_chosen: true,
        eval_found_elsewhere: elsewhere,
    })
}

/// The eval set of a skill folder: its own `evals/` (or `EVAL.md`), its Vally
/// `tests/eval.yaml`, else a repository `evals/` folder or Vally `tests/*/<name>/eval.yaml`
/// above it.
fn eval_for_skill(skill: &Path) -> Option<PathBuf> {
    let own = super::default_eval_path(skill);
    if own.is_file() {
        return Some(own);
    }
    let in_tree = skill.join("tests").join("eval.yaml");
    if in_tree.is_file() {
        return Some(in_tree);
    }
    let absolute = skill.canonicalize().ok()?;
    let name = absolute.file_name()?.to_os_string();
    for ancestor in absolute.ancestors().skip(1).take(MAX_LEVELS_UP) {
        if let Some(file) = evals_folder_file(ancestor) {
            return Some(file);
        }
        let tests = ancestor.join("tests");
        let flat = tests.join(&name).join("eval.yaml");
        if flat.is_file() {
            return Some(flat);
        }
        if let Ok(groups) = std::fs::read_dir(&tests) {
            let mut groups: Vec<PathBuf> = groups.flatten().map(|e| e.path()).collect();
            groups.sort();
            if let Some(nested) = groups
                .iter()
                .map(|g| g.join(&name).join("eval.yaml"))
                .find(|p| p.is_file())
            {
                return Some(nested);
            }
        }
        if ancestor.join(".git").exists() {
            break;
        }
    }
    None
}

/// `dir/evals/evals.json` (or `.jsonl`, `.yaml`, `.yml`) when it exists.
fn evals_folder_file(dir: &Path) -> Option<PathBuf> {
    ["evals.json", "evals.jsonl", "evals.yaml", "evals.yml"]
        .iter()
        .map(|name| dir.join("evals").join(name))
        .find(|p| p.is_file())
}

/// The skill folders under `dir`: `skills/*/SKILL.md`, else direct subfolders with `SKILL.md`;
/// sorted.
pub fn skills_under(dir: &Path) -> Vec<PathBuf> {
    let with_skill = |parent: &Path| -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(parent) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.join("SKILL.md").is_file()
                    && !p
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        found.sort();
        found
    };
    let under_skills = with_skill(&dir.join("skills"));
    if !under_skills.is_empty() {
        return under_skills;
    }
    with_skill(dir)
}

/// `skill_name` of an eval file, when it is JSON with one.
fn skill_name_of(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    value
        .get("skill_name")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Whether the skill in `dir` is called `name` (its folder name or its `name:` line).
fn skill_has_name(dir: &Path, name: &str) -> bool {
    if dir.file_name().is_some_and(|n| n == name) {
        return true;
    }
    std::fs::read_to_string(dir.join("SKILL.md")).is_ok_and(|text| {
        text.lines()
            .take(30)
            .any(|line| line.trim() == format!("name: {name}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::write_file as write;

    #[test]
    fn layouts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(
            &root.join("skills/alpha/SKILL.md"),
            "---\nname: alpha\n---\n",
        );
        write(
            &root.join("evals/evals.json"),
            r#"{"skill_name": "beta", "evals": []}"#,
        );
        // One skill: chosen, with the root evals.
        let one = locate(root, None).unwrap();
        assert_eq!(one.skill_dir, root.join("skills/alpha"));
        assert_eq!(one.eval_path, Some(root.join("evals/evals.json")));
        assert!(one.skill_chosen && one.eval_found_elsewhere);
        // Named skill folder: the repository's evals/ above it.
        let named = locate(&root.join("skills/alpha"), None).unwrap();
        assert_eq!(
            named.eval_path.unwrap().canonicalize().unwrap(),
            root.join("evals/evals.json").canonicalize().unwrap()
        );
        // Several skills: skill_name decides, else an error lists them.
        write(&root.join("skills/beta/SKILL.md"), "---\nname: beta\n---\n");
        assert_eq!(
            locate(root, None).unwrap().skill_dir,
            root.join("skills/beta")
        );
        write(&root.join("evals/evals.json"), r#"{"evals": []}"#);
        let error = locate(root, None).unwrap_err().to_string();
        assert!(
            error.contains("holds 2 skills") && error.contains("skills/alpha"),
            "{error}"
        );
        // --evals wins.
        let given = root.join("other.json");
        let chosen = locate(&root.join("skills/alpha"), Some(&given)).unwrap();
        assert_eq!(chosen.eval_path, Some(given));
        assert!(!chosen.eval_found_elsewhere);
        // Vally: tests/<group>/<skill>/eval.yaml at the repository root.
        let vally = tempfile::tempdir().unwrap();
        let root = vally.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(
            &root.join("plugins/p/skills/gamma/SKILL.md"),
            "---\nname: gamma\n---\n",
        );
        write(&root.join("tests/p/gamma/eval.yaml"), "scenarios: []\n");
        let found = locate(&root.join("plugins/p/skills/gamma"), None).unwrap();
        assert!(
            found
                .eval_path
                .unwrap()
                .ends_with("tests/p/gamma/eval.yaml")
        );
        // A plugin folder with skills/ inside.
        let plugin = locate(&root.join("plugins/p"), None).unwrap();
        assert_eq!(plugin.skill_dir, root.join("plugins/p/skills/gamma"));
    }
}
