//! `skill-lift shadow` as a workflow ([`shadow`]): choose the eligible prompts of the history,
//! check the runner, consent for write-type skills and the throwaway rule, create the shadow
//! folder, then the replay stage ([`replay_shadow`]): write the folder's manifest, replay every prompt once with the new
//! skill staged through the trigger evaluation's attempt path (`crate::features::triggers::run_attempts`,
//! a fresh throwaway workspace per replay), record each replay next to the recorded turn, and
//! write `records.jsonl`, `summary.json` and `report.md`, every text redacted (secrets and home
//! folders). Rules and comparison live in `crate::features::shadow`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::json;

use super::PipelineError;
use super::replay::ReplayRunnerError;
use crate::features::asset::Skill;
use crate::features::asset::fingerprint::Calibre;
use crate::features::history::{HistoryHost, ReadReport};
use crate::features::runner::profile::LoadedProfile;
use crate::features::shadow::{
    Candidate, CandidateCounts, EligibilityRule, MAX_ANSWER_CHARS, Replay, ReplayEnd,
    SHADOW_FORMAT_VERSION, ShadowRecord, ShadowSummary, WriteEvidence, compare, report_markdown,
    summarize,
};
use crate::features::triggers::{
    AttemptSettings, TriggerContext, TriggerError, TriggerQuery, run_attempts,
};
use crate::features::workspace::SkillSource;
use crate::record::RecordError;
use crate::values::reporter::{Event, report};

/// What the replays of one shadow run need, decided before any is spent.
pub(crate) struct ShadowReplay<'a> {
    /// The new skill.
    pub skill: &'a Skill,
    /// Its folder (absolute or as given).
    pub skill_dir: &'a Path,
    /// Its fingerprint digest.
    pub fingerprint: String,
    /// The calibre of that fingerprint.
    pub calibre: Calibre,
    /// The shadow folder (created, empty).
    pub dir: &'a Path,
    /// The shadow run's id (the folder's name).
    pub run_id: &'a str,
    /// The host whose history was read.
    pub host: HistoryHost,
    /// What the history readers found.
    pub read: &'a ReadReport,
    /// `--since`, as given.
    pub since: Option<&'a str>,
    /// Home folders whose paths are redacted from every text written.
    pub homes: &'a [PathBuf],
    /// The eligibility rule.
    pub rule: &'a EligibilityRule,
    /// The prompts to replay, in time order.
    pub chosen: &'a [Candidate],
    /// What choosing them found.
    pub counts: CandidateCounts,
    /// `--limit`.
    pub limit: usize,
    /// Why the skill is write-type (empty: it is not).
    pub writes: &'a [WriteEvidence],
    /// `--allow-writes`.
    pub allow_writes: bool,
    /// The root of the throwaway workspaces.
    pub workspace_root: PathBuf,
    /// The runner's profile (activation observable).
    pub profile: &'a LoadedProfile,
    /// The model.
    pub model: String,
    /// Skills staged beside the new one.
    pub decoys: Vec<SkillSource>,
    /// Replays in flight at once (default: the profile's `concurrency`).
    pub jobs: Option<usize>,
    /// Skip the pre-flight check.
    pub no_preflight: bool,
}

/// What the replays left.
pub(crate) struct ShadowFinished {
    /// The summary (`summary.json`).
    pub summary: ShadowSummary,
    /// `report.md`, redacted.
    pub markdown: String,
    /// The files written: `records.jsonl`, `summary.json`, `report.md`.
    pub written: Vec<PathBuf>,
    /// Whether an interrupt stopped the replays (the report covers those recorded).
    pub interrupted: bool,
}

/// What one shadow run asks for (`skill-lift shadow`'s flags, typed).
#[derive(Debug, Clone)]
pub(crate) struct ShadowSettings {
    /// The new skill's folder.
    pub skill_dir: PathBuf,
    /// The history to read.
    pub history: crate::features::history::request::HistoryRequest,
    /// The runner profile: a name from a runners folder or a `.toml` path.
    pub runner: String,
    /// The model, overriding the profile's.
    pub model: Option<String>,
    /// Replay at most this many distinct prompts.
    pub limit: usize,
    /// Least number of the skill's trigger terms a prompt must hold.
    pub min_terms: usize,
    /// Replay every recorded turn.
    pub all_turns: bool,
    /// Consent to replay a write-type skill through a runner that can run commands.
    pub allow_writes: bool,
    /// Folder of skills staged beside the new one.
    pub decoys: Option<PathBuf>,
    /// Where the shadow folder is created.
    pub out: PathBuf,
    /// The shadow folder's name.
    pub run_id: Option<String>,
    /// Replays in flight at once.
    pub jobs: Option<u32>,
    /// Folder for the throwaway workspaces.
    pub workspace_root: Option<PathBuf>,
    /// Skip the pre-flight check.
    pub no_preflight: bool,
}

/// Why the replays could not run or be recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShadowError {
    /// The skill cannot be read.
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    /// The skill's name cannot name the staged folder.
    #[error(
        "{}: skill name `{}` cannot name the staged skill folder; set frontmatter `name`",
        .skill_md.display(),
        .name.escape_debug()
    )]
    SkillName {
        /// The skill's SKILL.md.
        skill_md: PathBuf,
        /// Its name.
        name: String,
    },
    /// `--limit 0`.
    #[error("--limit must be at least 1")]
    ZeroLimit,
    /// The history cannot be read.
    #[error(transparent)]
    History(#[from] crate::features::history::HistoryError),
    /// No recorded turn is eligible: nothing to replay.
    #[error(
        "no eligible turn: none of the {turns} recorded {host} turn(s) names `{skill}`, used a skill of that name, or holds {min_terms} of its trigger terms ({terms}); nothing replayed (widen --since, lower --min-terms, or pass --all-turns)"
    )]
    NoEligibleTurn {
        /// Turns read.
        turns: usize,
        /// The host.
        host: HistoryHost,
        /// The skill.
        skill: String,
        /// The least number of trigger terms.
        min_terms: usize,
        /// The trigger terms, joined.
        terms: String,
    },
    /// The runner cannot show activations (nothing to run) or its profile cannot be read.
    #[error(transparent)]
    Observing(#[from] super::replay::ObservingError),
    /// A write-type skill and a runner that can run commands, without `--allow-writes`.
    #[error(
        "`{skill}` is a write-type skill ({evidence}); runner `{runner}` can run commands, so a replay could act outside its throwaway workspace (mail, remote services, absolute paths). Pass --allow-writes to replay it anyway (still only in throwaway workspaces), or use a model-API runner"
    )]
    WritesWithoutConsent {
        /// The skill.
        skill: String,
        /// Why it is write-type (at most 5 items, joined).
        evidence: String,
        /// The runner.
        runner: String,
    },
    /// `--workspace-root` is not a folder.
    #[error("--workspace-root {}: not a folder", .0.display())]
    WorkspaceRoot(PathBuf),
    /// The workspace root lies inside a recorded session's folder.
    #[error(
        "workspace root {} lies inside the folder of recorded session {session} ({cwd}); replays never run in a user's project: pass --workspace-root elsewhere",
        .root.display()
    )]
    WorkspaceInsideSession {
        /// The workspace root.
        root: PathBuf,
        /// The session (redacted).
        session: String,
        /// Its folder (redacted).
        cwd: String,
    },
    /// The decoys cannot be prepared.
    #[error(transparent)]
    Decoys(#[from] crate::features::decoys::DecoyError),
    /// A decoy has the new skill's name.
    #[error("a decoy has the new skill's name `{0}`; decoys must differ from it")]
    DecoyNamedAsSkill(String),
    /// The skill cannot be fingerprinted.
    #[error(transparent)]
    Fingerprint(#[from] crate::features::asset::fingerprint::FingerprintError),
    /// The shadow folder cannot be named or created.
    #[error(transparent)]
    Folder(#[from] super::result_folder::ResultFolderError),
    /// Not one replay could be scored.
    #[error("no replay could be scored ({causes}); see `reason` in {}", .records.display())]
    NothingScored {
        /// The causes, `cause n` joined.
        causes: String,
        /// `records.jsonl`.
        records: PathBuf,
    },
    /// The runner's credential cannot be read.
    #[error(transparent)]
    Credential(#[from] PipelineError),
    /// The replay runner could not start.
    #[error(transparent)]
    Runner(#[from] ReplayRunnerError),
    /// The replays failed (not one of them: the attempt path itself).
    #[error(transparent)]
    Replays(#[from] TriggerError),
    /// A file of the shadow folder cannot be written.
    #[error(transparent)]
    Write(#[from] RecordError),
}

impl ShadowError {
    /// How the shadow run ended: the credential's or the replay runner's class, nothing to run
    /// (no eligible turn, a runner that cannot show activations), an input error, else an
    /// infrastructure failure.
    pub(crate) fn ending(&self) -> super::Ending {
        use super::Ending;
        use super::replay::ObservingError;
        let class = |error: &PipelineError| match error.class() {
            super::ErrorClass::Input => Ending::InputError,
            super::ErrorClass::Infrastructure => Ending::InfrastructureError,
        };
        match self {
            ShadowError::Credential(error)
            | ShadowError::Runner(ReplayRunnerError::Server(error)) => class(error),
            ShadowError::Runner(ReplayRunnerError::Interrupted) => Ending::Interrupted,
            ShadowError::NoEligibleTurn { .. }
            | ShadowError::Observing(
                ObservingError::NoToolCalls { .. } | ObservingError::ActivationNotObservable { .. },
            ) => Ending::NothingToRun,
            ShadowError::Runner(_)
            | ShadowError::Replays(_)
            | ShadowError::Write(_)
            | ShadowError::NothingScored { .. } => Ending::InfrastructureError,
            _ => Ending::InputError,
        }
    }
}

impl super::Failure for ShadowError {
    fn ending(&self) -> super::Ending {
        ShadowError::ending(self)
    }
}

/// Run `skill-lift shadow`: choose, check, replay, record; the report is written on stdout.
/// An interrupt ends it with `interrupted` set (and says that the report covers the replays
/// recorded); a run where no replay could be scored is an error once everything is written.
pub(crate) async fn shadow(settings: &ShadowSettings) -> Result<ShadowFinished, ShadowError> {
    let skill = crate::features::asset::load_skill(&settings.skill_dir)?;
    let name = skill.name.as_str();
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(ShadowError::SkillName {
            skill_md: settings.skill_dir.join("SKILL.md"),
            name: skill.name.clone(),
        });
    }
    if settings.limit == 0 {
        return Err(ShadowError::ZeroLimit);
    }
    let host = HistoryHost::parse(&settings.history.host)?;
    let (roots, read) = settings.history.read()?;
    let homes = vec![roots.home().to_path_buf()];
    let rule = EligibilityRule::new(&skill, settings.min_terms, settings.all_turns);
    let (chosen, counts) = choose(&skill, host, &read, &rule, settings.limit, &homes)?;
    // The runner: activation must be observable, as for `triggers`.
    let profile = super::replay::observing_profile(&settings.runner, "shadow", "a replay")?;
    let writes = write_consent(&skill, &profile, settings.allow_writes)?;
    let workspace_root = throwaway_root(settings.workspace_root.as_deref(), &read, &homes)?;
    let model = settings
        .model
        .clone()
        .unwrap_or_else(|| profile.profile.model.clone());
    let decoys = match &settings.decoys {
        Some(dir) => {
            crate::features::decoys::prepare_decoys(&crate::features::decoys::DecoySource::Folder(
                super::absolute(dir),
            ))?
            .skills
        }
        None => Vec::new(),
    };
    if decoys.iter().any(|d| d.name == skill.name) {
        return Err(ShadowError::DecoyNamedAsSkill(skill.name.clone()));
    }
    let calibre = Calibre::default();
    let print = crate::features::asset::fingerprint::fingerprint(&settings.skill_dir, calibre)?;
    let run_id = super::result_folder::result_folder_id(
        settings.run_id.as_deref(),
        &skill.name,
        "shadow",
        "--run-id",
    )?;
    let dir = settings.out.join(&run_id);
    super::result_folder::create_result_folder(&dir, "pick another --run-id")?;
    let finished = replay_shadow(ShadowReplay {
        skill: &skill,
        skill_dir: &settings.skill_dir,
        fingerprint: print.digest.clone(),
        calibre,
        dir: &dir,
        run_id: &run_id,
        host,
        read: &read,
        since: settings.history.since.as_deref(),
        homes: &homes,
        rule: &rule,
        chosen: &chosen,
        counts,
        limit: settings.limit,
        writes: &writes,
        allow_writes: settings.allow_writes,
        workspace_root,
        profile: &profile,
        model,
        decoys,
        jobs: settings.jobs.map(|j| j as usize),
        no_preflight: settings.no_preflight,
    })
    .await?;
    crate::values::reporter::result(&finished.markdown);
    crate::report::step_summary::append_step_summary(&finished.markdown);
    crate::values::reporter::report_written(&finished.written);
    if !finished.interrupted && finished.summary.scored == 0 {
        return Err(ShadowError::NothingScored {
            causes: finished
                .summary
                .unscored
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            records: dir.join("records.jsonl"),
        });
    }
    if finished.interrupted {
        report(Event::InterruptedReportCovers { what: "replays" });
    }
    Ok(finished)
}

/// The eligible prompts to replay (reported); none is an error.
fn choose(
    skill: &Skill,
    host: HistoryHost,
    read: &ReadReport,
    rule: &EligibilityRule,
    limit: usize,
    homes: &[PathBuf],
) -> Result<(Vec<Candidate>, CandidateCounts), ShadowError> {
    let redact = |text: &str| crate::features::golden::mine::redact_personal(text, homes);
    let (chosen, counts) =
        crate::features::shadow::candidates(&read.sessions, rule, limit, &redact);
    report(Event::ShadowEligible {
        eligible_turns: counts.eligible_turns,
        turns: counts.turns,
        skill: skill.name.clone(),
        eligible_sessions: counts.eligible_sessions,
        chosen: chosen.len(),
        over_limit: counts.over_limit,
    });
    if chosen.is_empty() {
        return Err(ShadowError::NoEligibleTurn {
            turns: counts.turns,
            host,
            skill: skill.name.clone(),
            min_terms: rule.min_terms,
            terms: rule.terms.iter().cloned().collect::<Vec<_>>().join(", "),
        });
    }
    Ok((chosen, counts))
}

/// Write-type skills: consent before an agent that can run commands replays them (reported
/// when given or not needed). Returns why the skill is write-type (empty: it is not).
fn write_consent(
    skill: &Skill,
    profile: &LoadedProfile,
    allow_writes: bool,
) -> Result<Vec<WriteEvidence>, ShadowError> {
    let writes = crate::features::shadow::write_evidence(skill);
    if writes.is_empty() {
        return Ok(writes);
    }
    let shown: Vec<String> = writes.iter().take(5).map(ToString::to_string).collect();
    let capabilities = crate::record::RunnerCapabilities::of_profile(&profile.profile);
    if capabilities.can_run_commands && !allow_writes {
        return Err(ShadowError::WritesWithoutConsent {
            skill: skill.name.clone(),
            evidence: shown.join("; "),
            runner: profile.name.clone(),
        });
    }
    report(Event::ShadowWriteType {
        skill: skill.name.clone(),
        evidence: shown,
    });
    Ok(writes)
}

/// The throwaway rule: workspaces are fresh folders under the workspace root, which must not
/// lie inside any recorded session's folder. The recorded folder is never used.
fn throwaway_root(
    given: Option<&Path>,
    read: &ReadReport,
    homes: &[PathBuf],
) -> Result<PathBuf, ShadowError> {
    let redact = |text: &str| crate::features::golden::mine::redact_personal(text, homes);
    let workspace_root = match given {
        Some(root) if !root.is_dir() => return Err(ShadowError::WorkspaceRoot(root.to_path_buf())),
        Some(root) => super::absolute(root),
        None => std::env::temp_dir(),
    };
    for session in &read.sessions {
        if let Some(cwd) = &session.cwd
            && cwd.is_absolute()
            && cwd != Path::new("/")
            && crate::features::shadow::is_within(&workspace_root, cwd)
        {
            return Err(ShadowError::WorkspaceInsideSession {
                root: workspace_root,
                session: redact(&session.id),
                cwd: redact(&cwd.to_string_lossy()),
            });
        }
    }
    Ok(workspace_root)
}

/// Replay the chosen prompts and write the shadow folder (see the module's doc).
pub(crate) async fn replay_shadow(
    request: ShadowReplay<'_>,
) -> Result<ShadowFinished, ShadowError> {
    let ShadowReplay {
        skill,
        skill_dir,
        fingerprint,
        calibre,
        dir,
        run_id,
        host,
        read,
        since,
        homes,
        rule,
        chosen,
        counts,
        limit,
        writes,
        allow_writes,
        workspace_root,
        profile,
        model,
        decoys,
        jobs,
        no_preflight,
    } = request;
    let redact = |text: &str| crate::features::golden::mine::redact_personal(text, homes);
    let capabilities = crate::record::RunnerCapabilities::of_profile(&profile.profile);
    let api_key = super::grading::profile_api_key(profile)?;
    let credentials = super::grading::runner_secrets(profile);
    let write = |name: &str, text: &str| -> Result<PathBuf, ShadowError> {
        let path = dir.join(name);
        crate::disk::write_atomic(&path, redact(text).as_bytes()).map_err(RecordError::from)?;
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
            "path": super::absolute(skill_dir),
            "fingerprint": fingerprint,
        },
        "history": {
            "host": host,
            "folder": read.folder,
            "since": since,
            "sessions": read.sessions.len(),
            "files": read.files,
            "unknown_events": read.unknown_events,
            "malformed": read.malformed.len(),
        },
        "eligibility": rule,
        "candidates": counts,
        "limit": limit,
        "write_type": {"write_type": !writes.is_empty(), "evidence": writes, "allow_writes": allow_writes},
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
    report(Event::ShadowPlanned {
        skill: skill.name.clone(),
        prompts: chosen.len(),
        host: host.to_string(),
        runner: profile.name.clone(),
        runner_kind: profile.profile.kind.name().to_string(),
        model: model.clone(),
    });

    crate::features::contain::install_interrupt_handler();
    let (runner, server) =
        super::replay::start_replay_runner(profile, api_key, dir, no_preflight, "replayed").await?;
    let context = Arc::new(TriggerContext {
        dir: dir.to_path_buf(),
        runner,
        model,
        target: SkillSource {
            name: skill.name.clone(),
            dir: skill_dir.to_path_buf(),
            ..Default::default()
        },
        target_digest: fingerprint,
        calibre,
        decoys,
        skill_order: capabilities.skill_delivery.skill_ordering(),
        seed: crate::analysis::skill_order::DEFAULT_SEED,
        timeout: Duration::from_secs_f64(profile.profile.timeout_s),
        workspace_root: Some(workspace_root),
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
        jobs: jobs.unwrap_or(profile.profile.concurrency),
        breaker: 10,
        progress: crate::report::progress::ProgressDisplay::stderr_is_interactive(),
    };
    let finished = run_attempts(context, Arc::new(queries), settings).await;
    super::replay::stop_replay_server(server).await;
    crate::record::redact_logs_in(dir);
    let finished = finished?;

    let records: Vec<ShadowRecord> = chosen
        .iter()
        .map(|candidate| {
            let attempt = finished.records.iter().find(|r| r.query_id == candidate.id);
            let replay = match attempt {
                None => not_replayed(finished.interrupted),
                Some(attempt) => Replay {
                    scored: attempt.is_scored(),
                    skill_activated: attempt.target_activated,
                    activated: attempt.activated.clone(),
                    answer: attempt.transcript.as_ref().and_then(|relative| {
                        final_answer(&dir.join(relative)).map(|answer| redact(&answer))
                    }),
                    reason: attempt.reason.clone(),
                    wall_s: attempt.wall_s,
                    tool_calls: attempt.tool_calls,
                    tokens: match (attempt.input_tokens, attempt.output_tokens) {
                        (None, None) => None,
                        (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
                    },
                    transcript: attempt.transcript.clone(),
                },
            };
            let comparison = compare(&candidate.recorded, &replay);
            ShadowRecord {
                candidate: candidate.clone(),
                replay,
                comparison,
            }
        })
        .collect();
    let summary = summarize(
        &skill.name,
        host,
        counts,
        &records,
        read,
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
    let markdown = report_markdown(&summary, rule, writes, &records);
    let written = vec![
        write("records.jsonl", &lines)?,
        write(
            "summary.json",
            &serde_json::to_string_pretty(&summary).expect("summary serializes"),
        )?,
        write("report.md", &markdown)?,
    ];
    // The attempt log and transcripts carry the redacted prompts; this pass also catches home
    // folders an answer may have echoed.
    for path in walk(dir) {
        if let Ok(text) = std::fs::read_to_string(&path) {
            let clean = redact(&text);
            if clean != text {
                let _ = crate::disk::write_atomic(&path, clean.as_bytes());
            }
        }
    }
    Ok(ShadowFinished {
        summary,
        markdown: redact(&markdown),
        written,
        interrupted: finished.interrupted,
    })
}

/// The replay of a prompt that was never replayed: interrupted, or stopped by the breaker.
fn not_replayed(interrupted: bool) -> Replay {
    Replay {
        scored: false,
        skill_activated: None,
        activated: Vec::new(),
        answer: None,
        reason: Some(if interrupted {
            "not_run: interrupted".to_string()
        } else {
            "not_run: stopped by the circuit breaker".to_string()
        }),
        wall_s: 0.0,
        tool_calls: 0,
        tokens: None,
        transcript: None,
    }
}

/// The final answer in a replay's transcript, at most [`MAX_ANSWER_CHARS`] characters.
fn final_answer(transcript: &Path) -> Option<String> {
    let text = std::fs::read_to_string(transcript).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["trajectory"]["final_answer"]
        .as_str()
        .map(|a| a.chars().take(MAX_ANSWER_CHARS).collect::<String>())
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
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
