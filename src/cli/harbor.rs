//! `skill-lift harbor-verify`: the custom grader `run` adds for a SkillsBench / Harbor suite.
//! It runs under the custom-grader contract (`crate::grade::custom`): reads the case id,
//! workspace and trajectory from the `SKILL_LIFT_*` variables, runs the task's `tests/test.sh`
//! (`crate::evalset::harbor::verify_task`) and prints `{"overall": reward, "details": …}`.

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use clap::Args;

use super::CommandError;
use super::Outcome;
use crate::evalset::harbor::verify_task;

/// Flags of `skill-lift harbor-verify`.
#[derive(Debug, Args)]
pub struct HarborVerifyArgs {
    /// The folder holding the task folders (or the task folder's parent).
    #[arg(long, value_name = "DIR")]
    pub tasks: PathBuf,
}

fn env_path(name: &str) -> Result<PathBuf, CommandError> {
    std::env::var_os(name).map(PathBuf::from).ok_or_else(|| {
        CommandError::input(anyhow!(
            "{name} is not set: harbor-verify runs as a custom grader of `skill-lift run`"
        ))
    })
}

/// `skill-lift harbor-verify --tasks DIR`.
pub fn harbor_verify(args: HarborVerifyArgs) -> Result<Outcome, CommandError> {
    let read_json = |name: &str| -> Result<serde_json::Value, CommandError> {
        let path = env_path(name)?;
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))
            .map_err(CommandError::input)?;
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not JSON", path.display()))
            .map_err(CommandError::input)
    };
    let case = read_json("SKILL_LIFT_CASE")?;
    let case_id = case["id"]
        .as_str()
        .ok_or_else(|| CommandError::input(anyhow!("SKILL_LIFT_CASE has no `id`")))?
        .to_string();
    let trajectory = read_json("SKILL_LIFT_TRAJECTORY")?;
    let workspace = env_path("SKILL_LIFT_WORKSPACE")?;
    let verdict = verify_task(
        &args.tasks,
        &case_id,
        &workspace,
        trajectory["final_answer"].as_str(),
    )
    .map_err(|error| CommandError::input(anyhow!("task `{case_id}`: {error}")))?;
    let exit = verdict
        .exit_code
        .map_or("a signal".to_string(), |c| format!("exit code {c}"));
    crate::reporter::result_line(&format!(
        "{}",
        serde_json::json!({
            "overall": verdict.reward,
            "details": {"verifier": format!("reward {} from tests/test.sh ({exit})", verdict.reward)},
        })
    ));
    Ok(Outcome::Success)
}
