//! `skill-lift shadow`: replay the recorded prompts a new skill would have been eligible for,
//! with the skill staged, through a real runner, and record what would have happened next to
//! what did. Rules and comparison live in `crate::shadow`; replays go through the trigger
//! evaluation's attempt path (`crate::triggers::run_attempts`: the run's staging into a fresh
//! throwaway workspace, the real runner). This file holds flags, the safety checks, the folder
//! and the messages.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use chrono::Utc;
use clap::Args;
use serde_json::json;

use super::CommandError;
use super::Outcome;
use super::flag_groups::RunnerArgs;
use super::golden::HistoryArgs;
use crate::asset::fingerprint::{Calibre, fingerprint};
use crate::asset::load_skill;
use crate::decoys::{DecoySource, prepare_decoys};
use crate::history::HistoryHost;
use crate::shadow::{
    DEFAULT_MIN_TERMS, EligibilityRule, MAX_ANSWER_CHARS, Replay, ReplayEnd, SHADOW_FORMAT_VERSION,
    ShadowRecord, candidates, compare, is_within, report_markdown, summarize, write_evidence,
};
use crate::triggers::{AttemptSettings, TriggerContext, TriggerQuery, run_attempts};
use crate::workspace::SkillSource;

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
    let capabilities = crate::runner::RunnerCapabilities::of_profile(&profile.profile);

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
    let api_key = super::grading::profile_api_key(&profile)?;
    let credentials = super::grading::runner_secrets(&profile);
    let write = |name: &str, text: &str| -> Result<PathBuf, CommandError> {
        let path = dir.join(name);
        crate::record::write_atomic(&path, redact(text).as_bytes())
            .map_err(CommandError::infrastructure)?;
        Ok(path)
    };
    let manifest = json!({
        "format_version": SHADOW_FORMAT_VERSION,
        "kind": "shadow",
        "run_id": run_id,
        "created_at": Utc::now().to_rfc3339(),
        "skill_lift_version": env!("CARGO_PKG_VERSION"),
        "skill": {
            "name": skill.name,
            "description": skill.description,
            "path": super::run::absolute(&args.skill_dir),
            "fingerprint": print.digest,
        },
        "history": {
            "host": host,
            "folder": read.folder,
            "since": args.history.since,
            "sessions": read.sessions.len(),
            "files": read.files,
            "unknown_events": read.unknown_events,
            "malformed": read.malformed.len(),
        },
        "eligibility": rule,
        "candidates": counts,
        "limit": args.limit,
        "write_type": {"write_type": !writes.is_empty(), "evidence": writes, "allow_writes": args.allow_writes},
        "workspace": {"mode": "throwaway", "root": workspace_root},
        "runner": {
            "name": profile.name,
            "kind": profile.profile.kind.name(),
            "model": model,
            "skill_mode": capabilities.skill_delivery.as_str(),
            "can_run_commands": capabilities.can_run_commands,
        },
        "decoys": decoys.iter().map(|d| d.name.clone()).collect::<Vec<_>>(),
    });
    write(
        "manifest.json",
        &serde_json::to_string_pretty(&manifest).expect("manifest serializes"),
    )?;
    crate::errln!(
        "skill-lift: shadow {} — {} prompt(s) from {host} history, runner {} ({}), model {}",
        skill.name,
        chosen.len(),
        profile.name,
        profile.profile.kind.name(),
        model
    );

    crate::contain::install_interrupt_handler();
    let (runner, server) = crate::pipeline::replay::start_replay_runner(
        &profile,
        api_key,
        &dir,
        args.no_preflight,
        "replayed",
    )
    .await?;
    let jobs = args
        .jobs
        .map(|j| j as usize)
        .unwrap_or(profile.profile.concurrency);
    let context = Arc::new(TriggerContext {
        dir: dir.clone(),
        runner,
        model,
        target: SkillSource {
            name: skill.name.clone(),
            dir: args.skill_dir.clone(),
            ..Default::default()
        },
        target_digest: print.digest.clone(),
        calibre,
        decoys,
        timeout: Duration::from_secs_f64(profile.profile.timeout_s),
        workspace_root: Some(workspace_root.clone()),
        credentials,
    });
    let queries: Vec<TriggerQuery> = chosen
        .iter()
        .map(|c| TriggerQuery {
            id: c.id.clone(),
            query: c.prompt.clone(),
            should_trigger: true,
            expected_skill: None,
            note: None,
        })
        .collect();
    let settings = AttemptSettings {
        k: 1,
        jobs,
        breaker: 10,
        progress: crate::progress::ProgressDisplay::stderr_is_interactive(),
    };
    let finished = run_attempts(context, Arc::new(queries), settings).await;
    crate::pipeline::replay::stop_replay_server(server).await;
    crate::redact::redact_logs_in(&dir);
    let finished = finished.map_err(CommandError::infrastructure)?;

    let mut records = Vec::with_capacity(chosen.len());
    for candidate in &chosen {
        let attempt = finished.records.iter().find(|r| r.query_id == candidate.id);
        let replay = match attempt {
            None => Replay {
                scored: false,
                skill_activated: None,
                activated: Vec::new(),
                answer: None,
                reason: Some(if finished.interrupted {
                    "not_run: interrupted".to_string()
                } else {
                    "not_run: stopped by the circuit breaker".to_string()
                }),
                wall_s: 0.0,
                tool_calls: 0,
                tokens: None,
                transcript: None,
            },
            Some(attempt) => {
                let answer = attempt.transcript.as_ref().and_then(|relative| {
                    let text = std::fs::read_to_string(dir.join(relative)).ok()?;
                    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
                    value["trajectory"]["final_answer"]
                        .as_str()
                        .map(|a| redact(&a.chars().take(MAX_ANSWER_CHARS).collect::<String>()))
                });
                Replay {
                    scored: attempt.is_scored(),
                    skill_activated: attempt.target_activated,
                    activated: attempt.activated.clone(),
                    answer,
                    reason: attempt.reason.clone(),
                    wall_s: attempt.wall_s,
                    tool_calls: attempt.tool_calls,
                    tokens: match (attempt.input_tokens, attempt.output_tokens) {
                        (None, None) => None,
                        (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
                    },
                    transcript: attempt.transcript.clone(),
                }
            }
        };
        let comparison = compare(&candidate.recorded, &replay);
        records.push(ShadowRecord {
            candidate: candidate.clone(),
            replay,
            comparison,
        });
    }
    let summary = summarize(
        &skill.name,
        host,
        counts,
        &records,
        &read,
        ReplayEnd {
            interrupted: finished.interrupted,
            wall_s: finished.wall_s,
        },
    );
    let mut lines = String::new();
    for record in &records {
        lines.push_str(&serde_json::to_string(record).expect("record serializes"));
        lines.push('\n');
    }
    let markdown = report_markdown(&summary, &rule, &writes, &records);
    let written = [
        write("records.jsonl", &lines)?,
        write(
            "summary.json",
            &serde_json::to_string_pretty(&summary).expect("summary serializes"),
        )?,
        write("report.md", &markdown)?,
    ];
    // The attempt log and transcripts carry the redacted prompts; this pass also catches home
    // folders an answer may have echoed.
    for path in walk(&dir) {
        if let Ok(text) = std::fs::read_to_string(&path) {
            let clean = redact(&text);
            if clean != text {
                let _ = crate::record::write_atomic(&path, clean.as_bytes());
            }
        }
    }
    crate::out!("{}", redact(&markdown));
    super::append_step_summary(&redact(&markdown));
    super::print_written(&written);
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

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
