//! The replay stage of `skill-lift shadow` ([`replay_shadow`]): with the eligible prompts
//! chosen and the shadow folder created (by the command line, which also checks consent and
//! the throwaway rule), write the folder's manifest, replay every prompt once with the new
//! skill staged through the trigger evaluation's attempt path (`crate::triggers::run_attempts`,
//! a fresh throwaway workspace per replay), record each replay next to the recorded turn, and
//! write `records.jsonl`, `summary.json` and `report.md`, every text redacted (secrets and home
//! folders). Rules and comparison live in `crate::shadow`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::json;

use super::PipelineError;
use super::replay::ReplayRunnerError;
use crate::asset::Skill;
use crate::asset::fingerprint::Calibre;
use crate::history::{HistoryHost, ReadReport};
use crate::record::RecordError;
use crate::reporter::{Event, report};
use crate::runner::profile::LoadedProfile;
use crate::shadow::{
    Candidate, CandidateCounts, EligibilityRule, MAX_ANSWER_CHARS, Replay, ReplayEnd,
    SHADOW_FORMAT_VERSION, ShadowRecord, ShadowSummary, WriteEvidence, compare, report_markdown,
    summarize,
};
use crate::triggers::{AttemptSettings, TriggerContext, TriggerError, TriggerQuery, run_attempts};
use crate::workspace::SkillSource;

/// What the replays of one shadow run need, decided before any is spent.
pub struct ShadowReplay<'a> {
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
pub struct ShadowFinished {
    /// The summary (`summary.json`).
    pub summary: ShadowSummary,
    /// `report.md`, redacted.
    pub markdown: String,
    /// The files written: `records.jsonl`, `summary.json`, `report.md`.
    pub written: Vec<PathBuf>,
    /// Whether an interrupt stopped the replays (the report covers those recorded).
    pub interrupted: bool,
}

/// Why the replays could not run or be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
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

/// Replay the chosen prompts and write the shadow folder (see the module's doc).
pub async fn replay_shadow(request: ShadowReplay<'_>) -> Result<ShadowFinished, ShadowError> {
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
    let redact = |text: &str| crate::golden::mine::redact_personal(text, homes);
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

    crate::contain::install_interrupt_handler();
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
        seed: crate::skill_order::DEFAULT_SEED,
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
        progress: crate::progress::ProgressDisplay::stderr_is_interactive(),
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
