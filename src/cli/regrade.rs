//! `skill-lift regrade RUN_DIR`: grade the recorded trajectories again — with the run's own
//! graders, or with new ones (`--judge`, `--grader`, weights, threshold) — without calling any
//! agent, and write a new run folder with its own analysis beside the old one
//! (`RUN_DIR/regrades/<id>/`, or `--out`).
//!
//! Kept as recorded: trials without a transcript (staging failures) and trials unscoreable for
//! a reason other than a grader error (runner errors, timeouts, isolation failures): those are
//! facts about the run, not about grading. Trials unscoreable because a grader failed are graded
//! again. Workspace checks reuse their recorded result unless the workspace was kept
//! (`--keep-workspaces`); custom graders then run in an empty folder with
//! `SKILL_LIFT_WORKSPACE_AVAILABLE=0`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow};
use chrono::Utc;
use clap::Args;
use futures::StreamExt;

use super::grading::{
    GradingArgs, build_grader_set, recorded_judge_profiles, resolve_grading, runner_secrets,
};
use super::{AnalysisArgs, CommandError};
use crate::evalset::{GoldenCase, load_eval_set};
use crate::grade::pipeline::{GraderSet, TrialFacts, staged_skill_names};
use crate::grade::{GradingSettings, Outcome};
use crate::record::{
    FORMAT_VERSION, FinishedTrial, Manifest, RunLock, TranscriptDocument, TranscriptReader,
    TrialLog, TrialRecord, read_manifest,
};
use crate::report::markdown::summary_markdown;
use crate::runner::profile::load_profile;

/// Flags of `skill-lift regrade`.
#[derive(Debug, Args, Clone)]
pub struct RegradeArgs {
    /// The run folder whose trajectories are graded again (or a matrix folder: every cell).
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
    /// The eval set, when it is no longer at the path the manifest records (a run folder moved
    /// from another machine); its digest must match the recorded one.
    #[arg(long, value_name = "FILE")]
    pub evals: Option<PathBuf>,
    /// Where the new run folder goes (default: RUN_DIR/regrades/<id>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Trials graded at once.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: u32,
    #[command(flatten)]
    pub grading: GradingArgs,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Print nothing but errors (the summary is still written).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// State folder (judge cache; default: $SKILL_LIFT_HOME or ~/.local/state/skill-lift).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}

/// Whether a recorded trial is graded again: it has a transcript, and it is not unscoreable for
/// a reason outside grading.
fn regradable(record: &TrialRecord) -> bool {
    record.transcript.is_some()
        && (record.outcome != Outcome::Unscoreable
            || record
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with("grader error")))
}

/// Run the command; returns the exit code.
pub async fn regrade(args: RegradeArgs) -> Result<i32, CommandError> {
    if crate::run_matrix::is_matrix_folder(&args.run_dir) {
        return regrade_matrix(args).await;
    }
    regrade_run(args).await
}

/// `regrade MATRIX_DIR`: every cell regraded into `OUT/cells/<id>` (default OUT:
/// `MATRIX_DIR/regrades/<id>`), with the matrix report of the regraded cells in OUT.
async fn regrade_matrix(args: RegradeArgs) -> Result<i32, CommandError> {
    let dir = args.run_dir.clone();
    let (manifest, cells) = super::matrix::cell_folders(&dir)?;
    let suffix: u16 = rand::random();
    let run_id = format!(
        "{}-regrade-{}-{suffix:04x}",
        manifest.run_id,
        Utc::now().format("%Y%m%dT%H%M%SZ")
    );
    let out = match &args.out {
        Some(out) => out.clone(),
        None => dir.join("regrades").join(&run_id),
    };
    if crate::run_matrix::is_matrix_folder(&out) || out.join("manifest.json").exists() {
        return Err(CommandError::input(anyhow!(
            "{}: already holds a run; pick another --out",
            out.display()
        )));
    }
    std::fs::create_dir_all(out.join(crate::run_matrix::CELLS_DIR))
        .with_context(|| format!("creating {}", out.display()))
        .map_err(CommandError::infrastructure)?;
    let regraded = crate::run_matrix::MatrixManifest {
        run_id,
        created_at: Utc::now(),
        ..manifest
    };
    crate::run_matrix::write_matrix_manifest(&out, &regraded)
        .map_err(CommandError::infrastructure)?;
    let mut codes = Vec::new();
    for (cell, cell_dir) in cells {
        eprintln!("skill-lift: cell {}", cell.label());
        let cell_args = RegradeArgs {
            run_dir: cell_dir,
            out: Some(out.join(cell.relative_dir())),
            quiet: true,
            ..args.clone()
        };
        codes.push(regrade_run(cell_args).await?);
    }
    let summaries = super::matrix::cell_summaries(&out, &regraded)?;
    let files = super::matrix::write_report(&out, &regraded, &summaries, args.quiet)?;
    super::print_written(&files);
    Ok(super::matrix::combined_code(codes))
}

/// Regrade one run folder into a new one.
async fn regrade_run(args: RegradeArgs) -> Result<i32, CommandError> {
    let run_dir = args.run_dir.clone();
    if !run_dir.join("manifest.json").is_file() {
        return Err(CommandError::input(anyhow!(
            "{}: not a run folder (no manifest.json)",
            run_dir.display()
        )));
    }
    let original = read_manifest(&run_dir).map_err(CommandError::input)?;
    if original.shard.is_some() {
        return Err(CommandError::input(anyhow!(
            "{}: a shard folder; regrade the merged run (`skill-lift merge`) instead",
            run_dir.display()
        )));
    }
    let eval_path = args
        .evals
        .clone()
        .unwrap_or_else(|| original.eval_set.path.clone());
    if !eval_path.is_file() && !eval_path.is_dir() {
        return Err(CommandError::input(anyhow!(
            "{}: the run's eval set is not there any more; pass it with --evals FILE",
            eval_path.display()
        )));
    }
    // Fixture paths resolve against the skill folder: the recorded one, or (for a moved run)
    // the folder holding the eval file's `evals/` folder.
    let skill_root = if original.asset.path.is_dir() {
        original.asset.path.clone()
    } else {
        eval_path
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    };
    let eval_set = load_eval_set(&eval_path, &skill_root).map_err(CommandError::input)?;
    if eval_set.digest != original.eval_set.digest {
        return Err(CommandError::input(anyhow!(
            "{}: the eval set changed since the run ({} is now {}); regrading would grade against other cases",
            eval_path.display(),
            original.eval_set.digest,
            eval_set.digest
        )));
    }
    let cases: Vec<GoldenCase> = eval_set.cases.clone();
    let (settings, judge_profiles) = if args.grading.any_given() {
        let resolved = resolve_grading(&args.grading)?;
        (resolved.settings, resolved.judge_profiles)
    } else if original.format_version < 2 {
        // Runs recorded before grading settings existed: grade with today's defaults.
        (GradingSettings::new(), Vec::new())
    } else {
        let profiles = recorded_judge_profiles(&original.grading)?;
        (original.grading.clone(), profiles)
    };
    super::grading::validate_expected_outputs(&eval_path, &cases, &settings)?;
    let secrets = match load_profile(&original.runner.profile_path) {
        Ok(runner) => runner_secrets(&runner),
        Err(_) => {
            eprintln!(
                "warning: runner profile {} not found: the secret scan checks key patterns only, not the runner's credential values",
                original.runner.profile_path.display()
            );
            Vec::new()
        }
    };
    let graders = build_grader_set(
        settings.clone(),
        &judge_profiles,
        secrets,
        args.grading.judge_format_retries,
        !args.grading.no_judge_cache,
        args.state.as_deref(),
    )?;

    let suffix: u16 = rand::random();
    let run_id = format!(
        "{}-regrade-{}-{suffix:04x}",
        original.run_id,
        Utc::now().format("%Y%m%dT%H%M%SZ")
    );
    let out_dir = match &args.out {
        Some(dir) => dir.clone(),
        None => run_dir.join("regrades").join(&run_id),
    };
    if out_dir.join("manifest.json").exists() {
        return Err(CommandError::input(anyhow!(
            "{}: already holds a run; pick another --out",
            out_dir.display()
        )));
    }
    std::fs::create_dir_all(out_dir.join("transcripts"))
        .with_context(|| format!("creating {}", out_dir.display()))
        .map_err(CommandError::infrastructure)?;
    let mut manifest = Manifest {
        format_version: FORMAT_VERSION,
        skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run_id.clone(),
        created_at: Utc::now(),
        grading: settings,
        regraded_from: Some(run_dir.canonicalize().unwrap_or(run_dir.clone())),
        // A folder of an older format gets its capabilities written out.
        runner: crate::record::RunnerInfo {
            capabilities: Some(original.runner.capabilities()),
            ..original.runner.clone()
        },
        ..original.clone()
    };
    // The trial keys cover the grading: with new grading settings the original keys no longer
    // describe these records, so a regraded folder offers nothing to `--reuse-baseline`.
    if manifest.grading != original.grading {
        manifest.trial_keys = None;
    }
    // New grading settings make another suite: look its calibration up again (the regrade's
    // manifest records what it found, like a run's).
    if manifest.arm_design.is_paired() && manifest.grading != original.grading {
        manifest.calibration = Some(crate::pipeline::prepare::look_up_calibration(
            &manifest,
            args.state.as_deref(),
        ));
    }
    crate::pipeline::prepare::write_manifest(&out_dir, &manifest)?;

    // Only the recorded run's own planned trials are regraded (file:line errors otherwise).
    let mut records = Vec::new();
    crate::record::for_each_planned_trial(&run_dir.join("trials.jsonl"), &original, |record| {
        records.push(record);
        Ok(())
    })
    .map_err(CommandError::input)?;
    eprintln!(
        "skill-lift: regrading {} recorded trials of {} into {}",
        records.len(),
        original.run_id,
        out_dir.display()
    );
    let context = Arc::new(RegradeContext {
        graders,
        cases,
        manifest: manifest.clone(),
        run_dir: run_dir.clone(),
    });
    let mut judge_servers = super::grading::ensure_judge_servers(&judge_profiles, &out_dir).await?;
    let lock = RunLock::acquire(&out_dir).map_err(CommandError::input)?;
    let mut log = TrialLog::open(&out_dir, 0, &lock).map_err(CommandError::input)?;
    let mut regraded = 0usize;
    let mut changed = 0usize;
    let mut stream = futures::stream::iter(records.into_iter().map(|record| {
        let context = Arc::clone(&context);
        async move { context.regrade_one(record).await }
    }))
    .buffered(args.jobs as usize);
    let mut batch = Vec::new();
    while let Some(result) = stream.next().await {
        let (trial, was_regraded, was_changed) = result?;
        regraded += usize::from(was_regraded);
        changed += usize::from(was_changed);
        batch.push(trial);
        if batch.len() >= 64 {
            log.commit(&mut batch)
                .map_err(CommandError::infrastructure)?;
            batch.clear();
        }
    }
    log.commit(&mut batch)
        .map_err(CommandError::infrastructure)?;
    drop(log);
    drop(stream);
    for line in context.graders.judge_usage_lines() {
        eprintln!("skill-lift: {line}");
    }
    for server in judge_servers.iter_mut() {
        server.stop().await;
    }
    crate::redact::redact_logs_in(&out_dir);

    args.analysis.check_method(&manifest)?;
    let settings = args
        .analysis
        .settings_over(manifest.seed, manifest.gates.as_ref());
    let (summary, written) =
        crate::pipeline::run::write_final_exports(&out_dir, &manifest, &settings, true)?;
    drop(lock);
    let markdown = summary_markdown(&summary);
    if !args.quiet {
        print!("{markdown}");
    }
    super::append_step_summary(&markdown);
    super::print_written(&written);
    eprintln!(
        "skill-lift: {regraded} trials regraded ({changed} with a different grade), the others kept as recorded; results in {}",
        out_dir.display()
    );
    let code = super::run::exit_code_for(&summary);
    super::run::explain_exit(&summary, code);
    Ok(code)
}

struct RegradeContext {
    graders: GraderSet,
    cases: Vec<GoldenCase>,
    manifest: Manifest,
    run_dir: PathBuf,
}

impl RegradeContext {
    /// Grade one record again; returns the new record with its transcript (committed into the
    /// new folder's transcript log), whether it was regraded, and whether its grade changed.
    async fn regrade_one(
        &self,
        record: TrialRecord,
    ) -> Result<(FinishedTrial, bool, bool), CommandError> {
        let mut record = TrialRecord {
            run_id: self.manifest.run_id.clone(),
            ..record
        };
        // Only regular files under the run's `transcripts/`, bounded in size; either form (the
        // transcript log, or a file per trial in older run folders).
        let transcript = TranscriptReader::new(&self.run_dir)
            .read(&record)
            .map_err(CommandError::input)?;
        if !regradable(&record) {
            // Kept as recorded, with its transcript when it has one.
            return Ok((
                match transcript {
                    Some(bytes) => FinishedTrial::with_transcript_bytes(record, &bytes),
                    None => FinishedTrial::without_transcript(record),
                },
                false,
                false,
            ));
        }
        let relative = record.transcript.clone().unwrap_or_default();
        let path = self.run_dir.join(&relative);
        let bytes = transcript
            .ok_or_else(|| anyhow!("{}: transcript not found", path.display()))
            .map_err(CommandError::input)?;
        let document: TranscriptDocument<'static> = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: not a transcript", path.display()))
            .map_err(CommandError::input)?;
        let Some(case) = self.cases.iter().find(|c| c.id == record.case_id) else {
            return Err(CommandError::input(anyhow!(
                "{}: case `{}` is not in the eval set",
                path.display(),
                record.case_id
            )));
        };
        let decoys: Vec<String> = self
            .manifest
            .decoys
            .skills
            .iter()
            .map(|d| d.name.clone())
            .collect();
        let staged = staged_skill_names(
            &self.manifest.asset.name,
            &decoys,
            self.manifest.arm_design.staging(record.arm),
        );
        // `--keep-workspaces` records the trial folder, which holds `workspace/` and `home/`.
        let kept_workspace = record
            .workspace
            .as_deref()
            .map(|kept| {
                let inner = kept.join("workspace");
                if inner.is_dir() {
                    inner
                } else {
                    kept.to_path_buf()
                }
            })
            .filter(|w| w.is_dir());
        let capabilities = self.manifest.runner.capabilities();
        let facts = TrialFacts {
            case,
            trajectory: &document.trajectory,
            arm: record.arm,
            attempt: record.attempt,
            trial_id: &record.trial_id,
            target_skill: &self.manifest.asset.name,
            staged_skills: &staged,
            activation_observable: capabilities.activation_observable,
            can_run_commands: capabilities.can_run_commands,
            workspace: kept_workspace.as_deref(),
            run_workspace: document.workspace_path.as_deref(),
            run_home: document.home_path.as_deref(),
            recorded_checks: Some(&record.checks),
        };
        let grade = self.graders.grade(&facts).await;
        // Recorded scores went through JSON text: compare them with a tolerance far below any
        // shown digit.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12;
        let same_scores = grade.scores.len() == record.scores.len()
            && grade
                .scores
                .iter()
                .all(|(name, a)| record.scores.get(name).is_some_and(|b| close(*a, *b)));
        let same_composite = match (grade.composite, record.composite) {
            (Some(a), Some(b)) => close(a, b),
            (a, b) => a == b,
        };
        let changed = grade.outcome != record.outcome
            || grade.reason != record.reason
            || grade.decided_by != record.decided_by
            || grade.checks != record.checks
            || !same_scores
            || !same_composite;
        let new_document = TranscriptDocument {
            trial_id: document.trial_id.clone(),
            case_id: document.case_id.clone(),
            arm: document.arm,
            attempt: document.attempt,
            prompt: document.prompt.clone(),
            workspace_path: document.workspace_path.clone(),
            home_path: document.home_path.clone(),
            grade: std::borrow::Cow::Borrowed(&grade),
            trajectory: std::borrow::Cow::Borrowed(&document.trajectory),
        };
        let bytes = serde_json::to_vec(&new_document).expect("transcript serializes");
        record.outcome = grade.outcome;
        record.reason = grade.reason;
        record.decided_by = grade.decided_by;
        record.outcome_score = grade.outcome_score;
        record.checks = grade.checks;
        record.scores = grade.scores;
        record.composite = grade.composite;
        record.metrics = crate::record::MetricDetails::for_record(&grade.metrics);
        record.other_judges = grade.other_judges;
        record.other_judge_errors = grade.other_judge_errors;
        Ok((
            FinishedTrial::with_transcript_bytes(record, &bytes),
            true,
            changed,
        ))
    }
}
