//! What both model-API agent loops show the model and do for it: the staged-skill loader, the
//! system prompts of `inject` and `tools` mode, and the tools of `tools` mode (`activate_skill`,
//! `read_file`, `final_answer`). Skills are read from the staged workspace, never from their
//! source folders.

use std::collections::HashMap;
use std::path::{Component, Path};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::asset::parse_skill_text;
use crate::runner::{AttemptInput, StagedSkill};
use crate::trajectory::{ActivationEvidence, SkillActivation, Trajectory};

/// Where the model-API runners stage skills, relative to the workspace.
pub const SKILLS_DIR: &str = ".agents/skills";

/// A staged skill the model-API runners could not load (the attempt ends before any request).
#[derive(Debug, thiserror::Error)]
pub enum SkillLoadError {
    /// Its staged `SKILL.md` could not be read.
    #[error("staged skill unreadable: {}: {source}", path.display())]
    Read {
        /// The staged `SKILL.md`.
        path: std::path::PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// Its staged `SKILL.md` did not parse.
    #[error("staged skill unreadable: {0}")]
    Parse(crate::asset::SkillError),
}

/// Largest file `read_file` returns, in bytes (longer files are cut with a note).
const READ_FILE_LIMIT_BYTES: usize = 100_000;

/// Parsed staged skills keyed by the exact text of their `SKILL.md`: every trial still reads its
/// own staged copy, but identical text is parsed once.
#[derive(Default)]
pub(in crate::runner) struct SkillTexts {
    parsed: Mutex<HashMap<String, Arc<ParsedSkillText>>>,
}

/// The parts of a `SKILL.md` the prompt uses.
struct ParsedSkillText {
    description: String,
    body: String,
}
/// A staged skill as the model sees it.
pub(in crate::runner) struct LoadedSkill {
    pub(in crate::runner) name: String,
    pub(in crate::runner) description: String,
    pub(in crate::runner) body: String,
}

/// The system prompt of `inject` mode: the base prompt, then one section per skill (in the order
/// given: the trial's presentation order) with its description and trimmed body.
pub(in crate::runner) fn inject_system_prompt(base: &str, skills: &[LoadedSkill]) -> String {
    if skills.is_empty() {
        return base.to_string();
    }
    let sections: Vec<String> = skills
        .iter()
        .map(|s| {
            format!(
                "## Skill: {}\nDescription: {}\n\n{}",
                s.name, s.description, s.body
            )
        })
        .collect();
    format!(
        "{base}\n\n# Skills\n\nWhen a request matches a skill's description, follow that skill's instructions exactly.\n\n{}",
        sections.join("\n\n")
    )
}

/// The system prompt of `tools` mode: names and descriptions only.
pub(in crate::runner) fn tools_system_prompt(base: &str, skills: &[LoadedSkill]) -> String {
    let mut prompt = format!(
        "{base}\n\nYou work in a folder that may contain files. Use `read_file` to read a file by its relative path."
    );
    if !skills.is_empty() {
        prompt.push_str(
            "\n\n# Skills\n\nThese skills are available. When a request matches a skill's description, call `activate_skill` with its name to load its instructions, then follow them.\n\n",
        );
        let lines: Vec<String> = skills
            .iter()
            .map(|s| format!("- {}: {}", s.name, s.description))
            .collect();
        prompt.push_str(&lines.join("\n"));
    }
    prompt
        .push_str("\n\nGive your final answer as a normal reply, or with the `final_answer` tool.");
    prompt
}
/// Resolve a model-supplied path inside the workspace; `None` when it escapes.
fn resolve_in_workspace(workspace: &Path, requested: &str) -> Option<(std::path::PathBuf, String)> {
    let relative = Path::new(requested.trim().trim_start_matches("./"));
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    let root = workspace.canonicalize().ok()?;
    let resolved = root.join(relative).canonicalize().ok()?;
    if !resolved.starts_with(&root) {
        return None;
    }
    let shown = resolved
        .strip_prefix(&root)
        .ok()?
        .to_string_lossy()
        .replace('\\', "/");
    Some((resolved, shown))
}

/// Resolve a `read_file` path: inside the workspace first; else, relative to the folder of a
/// skill activated earlier in this attempt (latest first), as the paths in a `SKILL.md` body
/// are written. Only staged skills can be reached (the baseline arm has no target to read),
/// and never anything outside the workspace. The shown path is workspace-relative.
fn resolve_for_read(
    input: &AttemptInput<'_>,
    activations: &[SkillActivation],
    requested: &str,
) -> Option<(std::path::PathBuf, String)> {
    if let Some(found) = resolve_in_workspace(input.workspace, requested)
        && found.0.is_file()
    {
        return Some(found);
    }
    let root = input.workspace.canonicalize().ok()?;
    for activation in activations.iter().rev() {
        if !activation.ok || activation.evidence != ActivationEvidence::SkillTool {
            continue;
        }
        let Some(staged) = input.skills.iter().find(|s| s.name == activation.skill) else {
            continue;
        };
        if let Some((resolved, _)) = resolve_in_workspace(&staged.dir, requested)
            && resolved.is_file()
            && resolved.starts_with(&root)
        {
            let shown = resolved
                .strip_prefix(&root)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            return Some((resolved, shown));
        }
    }
    resolve_in_workspace(input.workspace, requested)
}

/// What a tool call returned.
pub(in crate::runner) struct ToolExecution {
    /// The result text handed back to the model.
    pub(in crate::runner) output: String,
    /// Whether the result is an error.
    pub(in crate::runner) is_error: bool,
    /// The answer of a `final_answer` call.
    pub(in crate::runner) final_answer: Option<String>,
}

/// The tools both agent loops offer in `tools` mode, as `(name, description, JSON schema of the
/// input)`: `activate_skill` (only when skills are staged), `read_file`, `final_answer`.
pub(in crate::runner) fn tool_specs(
    skills: &[LoadedSkill],
) -> Vec<(&'static str, &'static str, Value)> {
    let mut tools = Vec::new();
    if !skills.is_empty() {
        tools.push((
            "activate_skill",
            "Load the full instructions of an available skill by name.",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "The skill's name"}}, "required": ["name"]}),
        ));
    }
    tools.push((
        "read_file",
        "Read a text file in the working folder by its relative path.",
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "Path relative to the working folder"}}, "required": ["path"]}),
    ));
    tools.push((
        "final_answer",
        "Give the final answer to the user and finish.",
        json!({"type": "object", "properties": {
            "answer": {"type": "string"}}, "required": ["answer"]}),
    ));
    tools
}

impl SkillTexts {
    /// Read each staged skill from the workspace, or take its text staged in memory (parsing
    /// identical text only once).
    pub(in crate::runner) fn load(
        &self,
        skills: &[StagedSkill],
    ) -> Result<Vec<LoadedSkill>, SkillLoadError> {
        skills
            .iter()
            .map(|staged| {
                let path = staged.dir.join("SKILL.md");
                // Staged in memory (no trial folder), else read from the staged folder.
                let text: std::borrow::Cow<'_, str> = match &staged.skill_md {
                    Some(text) => std::borrow::Cow::Borrowed(text),
                    None => std::borrow::Cow::Owned(std::fs::read_to_string(&path).map_err(
                        |source| SkillLoadError::Read {
                            path: path.clone(),
                            source,
                        },
                    )?),
                };
                let cached = self
                    .parsed
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .get(text.as_ref())
                    .cloned();
                let parsed = match cached {
                    Some(parsed) => parsed,
                    None => {
                        let skill = parse_skill_text(&text, &path, &staged.dir, &staged.name)
                            .map_err(SkillLoadError::Parse)?;
                        let parsed = Arc::new(ParsedSkillText {
                            description: skill.description,
                            body: skill.body.trim().to_string(),
                        });
                        self.parsed
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner())
                            .insert(text.into_owned(), Arc::clone(&parsed));
                        parsed
                    }
                };
                Ok(LoadedSkill {
                    name: staged.name.clone(),
                    description: parsed.description.clone(),
                    body: parsed.body.clone(),
                })
            })
            .collect()
    }
}

/// Execute one tool call of `tools` mode (`activate_skill`, `read_file`, `final_answer`; any
/// other name is an error result), recording activations and file reads in `trajectory`;
/// `call_index` is the index the call will have in `trajectory.tool_calls`.
pub(in crate::runner) fn execute_tool(
    name: &str,
    arguments: &Value,
    input: &AttemptInput<'_>,
    skills: &[LoadedSkill],
    trajectory: &mut Trajectory,
    call_index: usize,
) -> ToolExecution {
    let text_argument = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let error = |output: String| ToolExecution {
        output,
        is_error: true,
        final_answer: None,
    };
    match name {
        "activate_skill" => {
            let Some(requested) = text_argument("name") else {
                return error("activate_skill needs a `name` argument".to_string());
            };
            match skills.iter().find(|s| s.name == requested.trim()) {
                Some(skill) => {
                    let location = input
                        .skills
                        .iter()
                        .find(|staged| staged.name == skill.name)
                        .map(|staged| {
                            staged
                                .dir
                                .strip_prefix(input.workspace)
                                .unwrap_or(&staged.dir)
                                .to_string_lossy()
                                .replace('\\', "/")
                        })
                        .unwrap_or_default();
                    trajectory.skill_activations.push(SkillActivation {
                        skill: skill.name.clone(),
                        evidence: ActivationEvidence::SkillTool,
                        ok: true,
                        tool_call_index: Some(call_index),
                        target: input
                            .skills
                            .iter()
                            .any(|s| s.target && s.name == skill.name),
                        reason: None,
                    });
                    ToolExecution {
                        output: format!(
                            "Skill `{}` lives in the folder `{location}/` (relative to your working folder). Paths in its instructions (references/, scripts/, assets) are relative to that folder: read them with read_file as written (e.g. `references/guide.md`) or as `{location}/references/guide.md`.\n\n{}",
                            skill.name, skill.body
                        ),
                        is_error: false,
                        final_answer: None,
                    }
                }
                None => {
                    trajectory.skill_activations.push(SkillActivation {
                        skill: requested.clone(),
                        evidence: ActivationEvidence::SkillTool,
                        ok: false,
                        tool_call_index: Some(call_index),
                        target: false,
                        reason: Some("unknown skill".to_string()),
                    });
                    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
                    error(format!(
                        "unknown skill `{requested}`; available: {}",
                        names.join(", ")
                    ))
                }
            }
        }
        "read_file" => {
            let Some(requested) = text_argument("path") else {
                return error("read_file needs a `path` argument".to_string());
            };
            let Some((resolved, shown)) =
                resolve_for_read(input, &trajectory.skill_activations, &requested)
            else {
                return error(format!(
                    "`{requested}` is not a file inside the working folder or an activated skill's folder"
                ));
            };
            match std::fs::read(&resolved) {
                Ok(bytes) => {
                    trajectory.files_read.push(shown.clone());
                    let skills_root = input.workspace.canonicalize().ok();
                    for staged in input.skills {
                        let skill_file = staged.dir.join("SKILL.md").canonicalize().ok();
                        // A skill activated and then its SKILL.md read counts once.
                        let already = trajectory
                            .skill_activations
                            .iter()
                            .any(|a| a.ok && a.skill == staged.name);
                        if skill_file.as_deref() == Some(resolved.as_path())
                            && skills_root.is_some()
                            && !already
                        {
                            trajectory.skill_activations.push(SkillActivation {
                                skill: staged.name.clone(),
                                evidence: ActivationEvidence::FileRead,
                                ok: true,
                                tool_call_index: Some(call_index),
                                target: staged.target,
                                reason: None,
                            });
                        }
                    }
                    let mut text =
                        String::from_utf8_lossy(&bytes[..bytes.len().min(READ_FILE_LIMIT_BYTES)])
                            .into_owned();
                    if bytes.len() > READ_FILE_LIMIT_BYTES {
                        text.push_str(&format!("\n[cut: file is {} bytes]", bytes.len()));
                    }
                    ToolExecution {
                        output: text,
                        is_error: false,
                        final_answer: None,
                    }
                }
                Err(io) => error(format!("cannot read `{requested}`: {io}")),
            }
        }
        "final_answer" => {
            let answer = text_argument("answer").unwrap_or_default();
            ToolExecution {
                output: "ok".to_string(),
                is_error: false,
                final_answer: Some(answer),
            }
        }
        other => error(format!("unknown tool `{other}`")),
    }
}
/// A staged skill `name` for tests: described "Use for {name}.", body "Do {name}.".
#[cfg(test)]
pub(in crate::runner) fn test_skill(name: &str) -> LoadedSkill {
    LoadedSkill {
        name: name.to_string(),
        description: format!("Use for {name}."),
        body: format!("Do {name}."),
    }
}

#[cfg(test)]
mod tests {
    use super::test_skill as skill;
    use super::*;
    use std::time::Duration;

    #[test]
    fn inject_prompt_layout_is_stable() {
        let prompt =
            inject_system_prompt("You are a helpful assistant.", &[skill("a"), skill("b")]);
        assert_eq!(
            prompt,
            "You are a helpful assistant.\n\n# Skills\n\nWhen a request matches a skill's description, follow that skill's instructions exactly.\n\n## Skill: a\nDescription: Use for a.\n\nDo a.\n\n## Skill: b\nDescription: Use for b.\n\nDo b."
        );
        assert_eq!(inject_system_prompt("base", &[]), "base");
    }

    #[test]
    fn tools_prompt_lists_descriptions_not_bodies() {
        let prompt = tools_system_prompt("base", &[skill("a")]);
        assert!(prompt.contains("- a: Use for a."));
        assert!(!prompt.contains("Do a."));
    }

    #[test]
    fn workspace_paths_cannot_escape() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        assert_eq!(
            resolve_in_workspace(dir.path(), "./a.txt").unwrap().1,
            "a.txt"
        );
        assert!(resolve_in_workspace(dir.path(), "../a.txt").is_none());
        assert!(resolve_in_workspace(dir.path(), "/etc/passwd").is_none());
        assert!(resolve_in_workspace(dir.path(), "missing.txt").is_none());
    }

    #[test]
    fn read_file_reaches_an_activated_skills_files_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        let skill_dir = workspace.join(".agents/skills/csv-summary");
        std::fs::create_dir_all(skill_dir.join("references")).unwrap();
        std::fs::write(
            skill_dir.join("SKILL.md"),
            "---\nname: csv-summary\ndescription: d\n---\n",
        )
        .unwrap();
        std::fs::write(skill_dir.join("references/format.md"), "table").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
        let staged = vec![StagedSkill {
            name: "csv-summary".to_string(),
            dir: skill_dir.clone(),
            target: true,
            skill_md: None,
        }];
        let input = AttemptInput {
            prompt: "p",
            workspace: &workspace,
            home: dir.path(),
            skills: &staged,
            model: "m",
            timeout: Duration::from_secs(1),
        };
        let activation = |skill: &str, ok: bool| SkillActivation {
            skill: skill.to_string(),
            evidence: ActivationEvidence::SkillTool,
            ok,
            tool_call_index: Some(0),
            target: true,
            reason: None,
        };
        // Before activation the body's relative path is not a workspace file.
        assert!(resolve_for_read(&input, &[], "references/format.md").is_none());
        let activated = [activation("csv-summary", true)];
        let (path, shown) = resolve_for_read(&input, &activated, "references/format.md").unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), "table");
        assert_eq!(shown, ".agents/skills/csv-summary/references/format.md");
        // The workspace-relative spelling works too; escapes never do.
        assert!(
            resolve_for_read(
                &input,
                &[],
                ".agents/skills/csv-summary/references/format.md"
            )
            .is_some()
        );
        assert!(resolve_for_read(&input, &activated, "../../outside.txt").is_none());
        assert!(resolve_for_read(&input, &activated, "/etc/passwd").is_none());
        // A failed activation, or a skill not staged in this arm (the baseline's target), opens
        // nothing.
        assert!(
            resolve_for_read(
                &input,
                &[activation("csv-summary", false)],
                "references/format.md"
            )
            .is_none()
        );
        let baseline = AttemptInput {
            skills: &[],
            ..input
        };
        assert!(resolve_for_read(&baseline, &activated, "references/format.md").is_none());
    }
}
