//! `skill-lift shadow`: replay the recorded prompts a new skill would have been eligible for,
//! with the skill staged, through a real runner, and record what would have happened next to
//! what did. Rules and comparison live in `crate::shadow`; replays go through the trigger
//! evaluation's attempt path (`crate::triggers::run_attempts`: the run's staging into a fresh
//! throwaway workspace, the real runner) in the library's replay stage
//! (`crate::pipeline::shadow`). This file holds flags, the safety checks (consent for
//! write-type skills, the throwaway rule), the folder and the exit code.

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;

use super::CommandError;
use super::Outcome;
use super::flag_groups::RunnerArgs;
use super::golden::HistoryArgs;
use crate::asset::fingerprint::{Calibre, fingerprint};
use crate::asset::load_skill;
use crate::decoys::{DecoySource, prepare_decoys};
use crate::history::HistoryHost;
use crate::pipeline::shadow::{ShadowError, ShadowReplay};
use crate::shadow::{DEFAULT_MIN_TERMS, EligibilityRule, candidates, is_within, write_evidence};

/// Flags of `skill-lift shadow`.
#[derive(Debug, Args)]
#[command(
    mut_arg("runners", |arg| super::flag_groups::RunnerArgs::single(arg).help("Runner profile: a name from runners/ or a .toml path. `openai-chat` profiles run in `tools` mode here (activation is not observable with the skill injected)")),
    mut_arg("models", super::flag_groups::RunnerArgs::single),
    after_help = "Eligible turns: the prompt names the skill, the recorded turn used a skill of the same name, or the prompt holds --min-terms of the skill's trigger terms (see docs/history.md). Every replay runs in a fresh throwaway workspace, never in the recorded session's folder. Exit 4 when no recorded turn is eligible."
)]
pub struct ShadowArgs {
    /// The new skill's folder (holds SKILL.md).
    #[arg(value_name = "SKILL_DIR")]
    pub skill_dir: PathBuf,
    #[command(flatten)]
    pub history: HistoryArgs,
    #[command(flatten)]
    pub agent: RunnerArgs,
    /// Replay at most N distinct prompts (the most recent eligible ones).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    /// Least number of the skill's trigger terms a prompt must hold to be eligible.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MIN_TERMS)]
    pub min_terms: usize,
    /// Replay every recorded turn (the replay alone decides whether the skill activates).
    #[arg(long)]
    pub all_turns: bool,
    /// Replay a write-type skill (one that deletes files, sends mail, runs writing commands)
    /// through a runner that can run commands. Replays still run only in throwaway
    /// workspaces; this is consent to the side effects an agent could have outside them.
    #[arg(long)]
    pub allow_writes: bool,
    /// Folder of skills staged beside the new one as competitors (e.g. the host's installed
    /// skills); default: none.
    #[arg(long, value_name = "DIR")]
    pub decoys: Option<PathBuf>,
    /// Where the shadow folder is created.
    #[arg(long, value_name = "DIR", default_value = "shadow-results")]
    pub out: PathBuf,
    /// The shadow folder's name (default: `<time>-<skill>-shadow-<random>`).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Replays in flight at once (default: the profile's `concurrency`).
    #[arg(long, value_name = "N")]
    pub jobs: Option<u32>,
    /// Folder for the throwaway workspaces (default: the system temporary folder). Refused
    /// when it lies inside a recorded session's folder.
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,
    /// Skip the pre-flight check (the runner answers before the first replay).
    #[arg(long)]
    pub no_preflight: bool,
}

/// `skill-lift shadow`.
pub async fn shadow(args: ShadowArgs) -> Result<Outcome, CommandError> {
    let skill = load_skill(&args.skill_dir).map_err(CommandError::input)?;
    let name = skill.name.as_str();
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(CommandError::input(anyhow!(
            "{}: skill name `{}` cannot name the staged skill folder; set frontmatter `name`",
            args.skill_dir.join("SKILL.md").display(),
            skill.name.escape_debug()
        )));
    }
    if args.limit == 0 {
        return Err(CommandError::input(anyhow!("--limit must be at least 1")));
    }
    let host = HistoryHost::parse(&args.history.host).map_err(CommandError::input)?;
    let (roots, read) = args.history.read()?;
    let homes = vec![roots.home().to_path_buf()];
    let redact = |text: &str| crate::golden::mine::redact_personal(text, &homes);
    let rule = EligibilityRule::new(&skill, args.min_terms, args.all_turns);
    let (chosen, counts) = candidates(&read.sessions, &rule, args.limit, &redact);
    crate::errln!(
        "skill-lift: {} of {} turn(s) eligible for `{}` ({} session(s)); {} distinct prompt(s) to replay{}",
        counts.eligible_turns,
        counts.turns,
        skill.name,
        counts.eligible_sessions,
        chosen.len(),
        if counts.over_limit > 0 {
            format!(" ({} older left out by --limit)", counts.over_limit)
        } else {
            String::new()
        }
    );
    if chosen.is_empty() {
        return Err(CommandError {
            code: Outcome::NothingToRun,
            error: anyhow!(
                "no eligible turn: none of the {} recorded {host} turn(s) names `{}`, used a skill of that name, or holds {} of its trigger terms ({}); nothing replayed (widen --since, lower --min-terms, or pass --all-turns)",
                counts.turns,
                skill.name,
                rule.min_terms,
                rule.terms.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        });
    }

    // The runner: activation must be observable, as for `triggers`.
    let profile = args.agent.observing_profile("shadow", "a replay")?;
    let capabilities = crate::record::RunnerCapabilities::of_profile(&profile.profile);

    // Write-type skills: consent before an agent that can run commands replays them.
    let writes = write_evidence(&skill);
    if !writes.is_empty() {
        let shown: Vec<String> = writes.iter().take(5).map(ToString::to_string).collect();
        if capabilities.can_run_commands && !args.allow_writes {
            return Err(CommandError::input(anyhow!(
                "`{}` is a write-type skill ({}); runner `{}` can run commands, so a replay could act outside its throwaway workspace (mail, remote services, absolute paths). Pass --allow-writes to replay it anyway (still only in throwaway workspaces), or use a model-API runner",
                skill.name,
                shown.join("; "),
                profile.name
            )));
        }
        crate::errln!(
            "skill-lift: `{}` is write-type ({}); every replay runs in a fresh throwaway workspace",
            skill.name,
            shown.join("; ")
        );
    }

    // The throwaway rule: workspaces are fresh folders under the workspace root, which must not
    // lie inside any recorded session's folder. The recorded folder is never used.
    let workspace_root = match &args.workspace_root {
        Some(root) if !root.is_dir() => {
            return Err(CommandError::input(anyhow!(
                "--workspace-root {}: not a folder",
                root.display()
            )));
        }
        Some(root) => super::run::absolute(root),
        None => std::env::temp_dir(),
    };
    for session in &read.sessions {
        if let Some(cwd) = &session.cwd
            && cwd.is_absolute()
            && cwd != std::path::Path::new("/")
            && is_within(&workspace_root, cwd)
        {
            return Err(CommandError::input(anyhow!(
                "workspace root {} lies inside the folder of recorded session {} ({}); replays never run in a user's project: pass --workspace-root elsewhere",
                workspace_root.display(),
                redact(&session.id),
                redact(&cwd.to_string_lossy())
            )));
        }
    }

    let model = args.agent.model_of(&profile);
    let decoys = match &args.decoys {
        Some(dir) => {
            prepare_decoys(&DecoySource::Folder(super::run::absolute(dir)))
                .map_err(CommandError::input)?
                .skills
        }
        None => Vec::new(),
    };
    if decoys.iter().any(|d| d.name == skill.name) {
        return Err(CommandError::input(anyhow!(
            "a decoy has the new skill's name `{}`; decoys must differ from it",
            skill.name
        )));
    }
    let calibre = Calibre::default();
    let print = fingerprint(&args.skill_dir, calibre).map_err(CommandError::input)?;
    let run_id =
        super::result_folder_id(args.run_id.as_deref(), &skill.name, "shadow", "--run-id")?;
    let dir = args.out.join(&run_id);
    super::create_result_folder(&dir, "pick another --run-id")?;
    let finished = crate::pipeline::shadow::replay_shadow(ShadowReplay {
        skill: &skill,
        skill_dir: &args.skill_dir,
        fingerprint: print.digest.clone(),
        calibre,
        dir: &dir,
        run_id: &run_id,
        host,
        read: &read,
        since: args.history.since.as_deref(),
        homes: &homes,
        rule: &rule,
        chosen: &chosen,
        counts,
        limit: args.limit,
        writes: &writes,
        allow_writes: args.allow_writes,
        workspace_root,
        profile: &profile,
        model,
        decoys,
        jobs: args.jobs.map(|j| j as usize),
        no_preflight: args.no_preflight,
    })
    .await
    .map_err(shadow_error)?;
    let summary = finished.summary;
    crate::out!("{}", finished.markdown);
    crate::report::step_summary::append_step_summary(&finished.markdown);
    super::print_written(&finished.written);
    if finished.interrupted {
        crate::errln!("error: interrupted; the report covers the replays recorded");
        return Ok(Outcome::Interrupted);
    }
    if summary.scored == 0 {
        return Err(CommandError::infrastructure(anyhow!(
            "no replay could be scored ({}); see `reason` in {}",
            summary
                .unscored
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            dir.join("records.jsonl").display()
        )));
    }
    Ok(Outcome::Success)
}

/// The exit code of a shadow replay that failed: the credential's class of failure, the replay
/// runner's ([`CommandError::from`]), else infrastructure (3).
fn shadow_error(error: ShadowError) -> CommandError {
    match error {
        ShadowError::Credential(error) => CommandError::from(error),
        ShadowError::Runner(error) => CommandError::from(error),
        error => CommandError::infrastructure(error),
    }
}
