//! `skill-lift run`: resolve the inputs (fresh or from a run's manifest on `--resume`), record
//! the manifest, start the model server when the profile has one, execute, analyze, export.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};
use chrono::Utc;

use super::{CommandError, RunArgs};
use crate::analysis::{AnalysisSettings, Summary};
use crate::asset::fingerprint::{Calibre, fingerprint};
use crate::asset::{Skill, load_skill};
use crate::decoys::{DecoySource, prepare_decoys};
use crate::evalset::{GoldenCase, default_eval_path, load_eval_set};
use crate::execute::{ExecuteSettings, TrialContext, execute, plan_trials};
use crate::exit_codes;
use crate::record::{
    AssetInfo, DecoyInfo, DecoysInfo, EvalSetInfo, FORMAT_VERSION, Manifest, RunLock, RunnerInfo,
    TrialLog, read_manifest, write_atomic,
};
use crate::report::{Format, export_run, markdown::summary_markdown};
use crate::runner::profile::{load_profile, resolve_profile_path};
use crate::runner::server::ManagedServer;
use crate::runner::{LoadedProfile, build_runner};
use crate::workspace::{Arm, ArmDesign, SkillSource};

/// Inputs of a run, resolved and validated.
pub(super) struct ResolvedRun {
    skill: Skill,
    skill_dir: PathBuf,
    cases: Vec<GoldenCase>,
    profile: LoadedProfile,
    pub(super) manifest: Manifest,
    decoy_source: DecoySource,
    calibre: Calibre,
    judge_profiles: Vec<LoadedProfile>,
    /// The previous version staged in the `previous_version` arm (with the temporary folder a
    /// `--previous-ref` was extracted into, removed when the run ends).
    previous: Option<ResolvedPrevious>,
}

/// The previous version of the skill, ready to stage.
struct ResolvedPrevious {
    skill: crate::workspace::PreviousSkill,
    _extracted: Option<tempfile::TempDir>,
}

/// The arms a fresh run plans: the paired two, `previous_version` with a previous version,
/// one arm per `--exposure` besides `native`; and the reference they are compared against.
fn plan_arms(args: &RunArgs, design: ArmDesign) -> Result<(Vec<Arm>, Option<Arm>), CommandError> {
    planned_arms(
        args.previous.is_some() || args.previous_ref.is_some(),
        &args.exposure,
        args.reference,
        design,
    )
}

/// The arms of a run with these flags (shared by `run` and `plan`): the paired two,
/// `previous_version` when a previous version is given, one arm per exposure besides `native`,
/// in the arms' kind order; and the reference when it is not `without_skill`.
pub(super) fn planned_arms(
    has_previous: bool,
    exposure: &[crate::workspace::Exposure],
    reference: Option<Arm>,
    design: ArmDesign,
) -> Result<(Vec<Arm>, Option<Arm>), CommandError> {
    let extra = has_previous || !exposure.is_empty() || reference.is_some();
    if !design.is_paired() {
        if extra {
            return Err(CommandError::input(anyhow!(
                "an A/A control runs two identical arms: --previous, --previous-ref, --exposure and --reference apply to `skill-lift run`"
            )));
        }
        return Ok((Arm::PAIRED.to_vec(), None));
    }
    let mut arms = Arm::PAIRED.to_vec();
    if has_previous {
        arms.push(Arm::PreviousVersion);
    }
    for exposure in exposure {
        let arm = exposure.arm();
        if !arms.contains(&arm) {
            arms.push(arm);
        }
    }
    // Planning order is the arms' kind order (stable whatever the flag order).
    arms.sort_by_key(|arm| Arm::KINDS.iter().position(|kind| kind == arm));
    if let Some(reference) = reference
        && !arms.contains(&reference)
    {
        return Err(CommandError::input(anyhow!(
            "--reference {reference}: the run has no such arm (its arms: {}){}",
            arms.iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if reference == Arm::PreviousVersion {
                "; add one with --previous DIR or --previous-ref GIT_REF"
            } else {
                ""
            }
        )));
    }
    Ok((arms, reference.filter(|r| *r != Arm::WithoutSkill)))
}

/// Extract the skill folder `skill_dir` as it was at `git_ref` into a temporary folder (`git
/// archive` run in the folder: its files at that revision).
fn extract_git_ref(skill_dir: &Path, git_ref: &str) -> Result<tempfile::TempDir, CommandError> {
    let fail = |detail: String| {
        CommandError::input(anyhow!(
            "--previous-ref {git_ref}: {detail} (the skill folder {} must be in a git repository that has this revision)",
            skill_dir.display()
        ))
    };
    if git_ref.starts_with('-') {
        return Err(fail("a revision cannot start with `-`".to_string()));
    }
    let dir = tempfile::Builder::new()
        .prefix("skill-lift-previous-")
        .tempdir()
        .map_err(|e| fail(format!("creating a temporary folder: {e}")))?;
    let archive = std::process::Command::new("git")
        .arg("-C")
        .arg(skill_dir)
        // Run inside the skill folder, `git archive` takes that folder's files only, paths
        // relative to it.
        .args(["archive", "--format=tar", git_ref])
        .output()
        .map_err(|e| fail(format!("running git: {e}")))?;
    if !archive.status.success() {
        return Err(fail(
            String::from_utf8_lossy(&archive.stderr).trim().to_string(),
        ));
    }
    let mut untar = std::process::Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dir.path())
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("running tar: {e}")))?;
    {
        use std::io::Write;
        let mut stdin = untar.stdin.take().expect("piped stdin");
        stdin
            .write_all(&archive.stdout)
            .map_err(|e| fail(format!("extracting: {e}")))?;
    }
    let untarred = untar
        .wait_with_output()
        .map_err(|e| fail(format!("extracting: {e}")))?;
    if !untarred.status.success() {
        return Err(fail(format!(
            "extracting: {}",
            String::from_utf8_lossy(&untarred.stderr).trim()
        )));
    }
    if !dir.path().join("SKILL.md").is_file() {
        return Err(fail(
            "the folder has no SKILL.md at that revision".to_string(),
        ));
    }
    Ok(dir)
}

/// Load the previous version (`--previous DIR` or `--previous-ref REF`) and check it against
/// the target: a different fingerprint, and no copy of it among the decoys.
fn resolve_previous(
    folder: Option<&Path>,
    git_ref: Option<&str>,
    skill_dir: &Path,
    calibre: Calibre,
) -> Result<Option<(ResolvedPrevious, crate::record::PreviousInfo)>, CommandError> {
    let (dir, extracted, recorded_path) = match (folder, git_ref) {
        (Some(dir), _) => {
            if !dir.join("SKILL.md").is_file() {
                return Err(CommandError::input(anyhow!(
                    "--previous {}: no SKILL.md in this folder",
                    dir.display()
                )));
            }
            (absolute(dir), None, absolute(dir))
        }
        (None, Some(git_ref)) => {
            let extracted = extract_git_ref(skill_dir, git_ref)?;
            (
                extracted.path().to_path_buf(),
                Some(extracted),
                absolute(skill_dir),
            )
        }
        (None, None) => return Ok(None),
    };
    let previous_skill = load_skill(&dir).map_err(CommandError::input)?;
    print_warnings(&previous_skill);
    let print = fingerprint(&dir, calibre).map_err(CommandError::input)?;
    let info = crate::record::PreviousInfo {
        path: recorded_path,
        git_ref: git_ref.filter(|_| folder.is_none()).map(str::to_string),
        fingerprint: print.digest.clone(),
    };
    Ok(Some((
        ResolvedPrevious {
            skill: crate::workspace::PreviousSkill {
                dir,
                digest: print.digest,
            },
            _extracted: extracted,
        },
        info,
    )))
}

/// `path` made absolute: canonical when it exists, else joined to the current folder.
pub(super) fn absolute(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or(path.to_path_buf())
    })
}

pub(super) fn new_run_id(asset: &str) -> String {
    let suffix: u16 = rand::random();
    format!(
        "{}-{asset}-{suffix:04x}",
        Utc::now().format("%Y%m%dT%H%M%SZ")
    )
}

fn print_warnings(skill: &Skill) {
    for warning in &skill.warnings {
        eprintln!(
            "warning: {}: {warning}",
            skill.dir.join("SKILL.md").display()
        );
    }
}

/// Refuse a skill whose name cannot name a folder: it names the staged skill folder and is part
/// of the run id, so `""`, `.`, `..` and names with `/`, `\` or NUL would escape or collide.
fn check_skill_name(skill: &Skill) -> Result<(), CommandError> {
    let name = skill.name.as_str();
    let plain =
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if plain {
        return Ok(());
    }
    Err(CommandError::input(anyhow!(
        "{}: skill name `{}` cannot be used: a skill name names the staged skill folder, so it must be a plain folder name (not empty, `.` or `..`, without `/` or `\\`); set frontmatter `name` to e.g. `my-skill`",
        skill.dir.join("SKILL.md").display(),
        name.escape_debug()
    )))
}

/// The text of `dir/SKILL.md` for the leak guard.
fn skill_md_text(dir: &Path) -> Result<String, CommandError> {
    let path = dir.join("SKILL.md");
    std::fs::read(&path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .with_context(|| format!("reading {}", path.display()))
        .map_err(CommandError::input)
}

/// Where a decoy's SKILL.md is, as the user knows it (the built-ins are materialized in a
/// temporary folder; name them by their repository path).
fn decoy_display_path(source: &DecoySource, name: &str, dir: &Path) -> PathBuf {
    match source {
        DecoySource::Builtin => PathBuf::from(format!("decoys/{name}/SKILL.md (built in)")),
        _ => dir.join("SKILL.md"),
    }
}

/// Load skill, eval set, profile and decoys for a fresh run and build its manifest, with the
/// arms staged as `design` says (the paired measurement, or an A/A control for `calibrate`).
pub(super) fn resolve_fresh(
    args: &RunArgs,
    design: ArmDesign,
) -> Result<ResolvedRun, CommandError> {
    let skill_dir = args
        .skill_dir
        .clone()
        .ok_or_else(|| CommandError::input(anyhow!("SKILL_DIR is required")))?;
    let skill = load_skill(&skill_dir).map_err(CommandError::input)?;
    print_warnings(&skill);
    check_skill_name(&skill)?;
    let calibre: Calibre = args
        .calibre
        .parse()
        .map_err(|e: String| CommandError::input(anyhow!(e)))?;
    let eval_path = args
        .evals
        .clone()
        .unwrap_or_else(|| default_eval_path(&skill_dir));
    if !eval_path.is_file() && !eval_path.is_dir() {
        return Err(CommandError::input(anyhow!(
            "{}: eval set not found; put golden cases in <skill>/evals/evals.json or pass --evals FILE (or a Harbor task folder)",
            eval_path.display()
        )));
    }
    let eval_set = load_eval_set(&eval_path, &skill_dir).map_err(CommandError::input)?;
    for warning in &eval_set.warnings {
        eprintln!("warning: {}: {warning}", eval_path.display());
    }
    if let Some(name) = &eval_set.skill_name
        && name != &skill.name
    {
        eprintln!(
            "warning: {}: skill_name `{name}` differs from the skill's name `{}`",
            eval_path.display(),
            skill.name
        );
    }
    let cases: Vec<GoldenCase> = eval_set
        .runnable_cases(args.allow_draft)
        .into_iter()
        .cloned()
        .collect();
    let profile_path = resolve_profile_path(args.runner()).map_err(CommandError::input)?;
    let profile = load_profile(&profile_path).map_err(CommandError::input)?;
    let target_fingerprint = fingerprint(&skill_dir, calibre).map_err(CommandError::input)?;
    let (arms, reference) = plan_arms(args, design)?;
    let previous = resolve_previous(
        args.previous.as_deref(),
        args.previous_ref.as_deref(),
        &skill_dir,
        calibre,
    )?;
    if let Some((_, info)) = &previous
        && info.fingerprint == target_fingerprint.digest
    {
        return Err(CommandError::input(anyhow!(
            "the previous version has the skill's own fingerprint {}: there is nothing to compare",
            info.fingerprint
        )));
    }
    let decoy_source = if args.no_decoys {
        DecoySource::None
    } else if let Some(dir) = &args.decoys {
        DecoySource::Folder(absolute(dir))
    } else {
        DecoySource::Builtin
    };
    let target_source = SkillSource {
        name: skill.name.clone(),
        dir: skill_dir.clone(),
    };
    for case in &cases {
        if let Some(error) = crate::workspace::case_file_copying_target(case, &target_source) {
            return Err(CommandError::input(anyhow!(
                "{}: {error}",
                eval_path.display()
            )));
        }
    }
    let target_text = crate::leak_guard::SkillText::parse(&skill_md_text(&skill_dir)?);
    let decoys = prepare_decoys(&decoy_source).map_err(CommandError::input)?;
    let mut decoy_infos = Vec::new();
    for decoy in &decoys.skills {
        let print = fingerprint(&decoy.dir, calibre).map_err(CommandError::input)?;
        if decoy.name == skill.name {
            return Err(CommandError::input(anyhow!(
                "decoy `{}` has the target skill's name; decoys must differ from the target",
                decoy.name
            )));
        }
        let decoy_skill = load_skill(&decoy.dir).map_err(CommandError::input)?;
        check_skill_name(&decoy_skill)?;
        let decoy_text = crate::leak_guard::SkillText::parse(&skill_md_text(&decoy.dir)?);
        if let Some(why) = decoy_text.resembles(&target_text) {
            return Err(CommandError::input(anyhow!(
                "leak guard: decoy {} is a copy of the target {}: {why}; the baseline would contain the target",
                decoy_display_path(&decoy_source, &decoy.name, &decoy.dir).display(),
                skill_dir.join("SKILL.md").display()
            )));
        }
        if let Some((previous, _)) = &previous
            && print.digest == previous.skill.digest
        {
            return Err(CommandError::input(anyhow!(
                "leak guard: decoy `{}` has the previous version's fingerprint {}; the baseline would contain the skill",
                decoy.name,
                print.digest
            )));
        }
        if print.digest == target_fingerprint.digest {
            return Err(CommandError::input(anyhow!(
                "leak guard: decoy `{}` has the target's fingerprint {}; the baseline would contain the target",
                decoy.name,
                print.digest
            )));
        }
        decoy_infos.push(DecoyInfo {
            name: decoy.name.clone(),
            fingerprint: print.digest,
        });
    }
    let profile_digest = profile.digest().map_err(CommandError::input)?;
    let model = args
        .model()
        .map(str::to_string)
        .unwrap_or_else(|| profile.profile.model.clone());
    let run_id = match &args.run_id {
        Some(id) => id.clone(),
        None => new_run_id(&skill.name),
    };
    if run_id.is_empty() || run_id.contains('/') || run_id.starts_with('.') {
        return Err(CommandError::input(anyhow!(
            "--run-id `{run_id}` must be a plain folder name"
        )));
    }
    let mut grading = super::grading::resolve_grading(&args.grading)?;
    if let Some(tasks) = &eval_set.harbor_tasks {
        // Each task's verifier grades it, as a custom grader run in the trial workspace.
        if grading
            .settings
            .custom_graders
            .iter()
            .any(|g| g.name == "verifier")
        {
            return Err(CommandError::input(anyhow!(
                "--grader name `verifier` is taken by the Harbor tasks' verifier; name yours differently"
            )));
        }
        let exe = std::env::current_exe()
            .context("locating the skill-lift binary for the verifier grader")
            .map_err(CommandError::input)?;
        grading
            .settings
            .custom_graders
            .push(crate::grade::custom::CustomGraderSpec {
                name: "verifier".to_string(),
                command: format!(
                    "{} harbor-verify --tasks {}",
                    super::harbor::shell_quote(&exe.display().to_string()),
                    super::harbor::shell_quote(&tasks.display().to_string())
                ),
                timeout_s: eval_set
                    .verifier_timeout_s
                    .unwrap_or(args.grading.grader_timeout),
            });
        // The task's reward decides, as in SkillsBench: the process metrics are reported (with
        // their own lifts) but weigh 0 in the composite unless --metric-weight says otherwise.
        for name in [
            crate::grade::metric::SECURITY,
            crate::grade::metric::SKILL_EXECUTION,
            crate::grade::metric::SKILL_EFFICIENCY,
        ] {
            grading
                .settings
                .weights
                .entry(name.to_string())
                .or_insert(0.0);
        }
    }
    super::grading::validate_expected_outputs(&eval_path, &cases, &grading.settings)?;
    let capabilities = crate::runner::RunnerCapabilities::of_profile(&profile.profile);
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        skill_lift_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id,
        created_at: Utc::now(),
        asset: AssetInfo {
            name: skill.name.clone(),
            path: absolute(&skill_dir),
            fingerprint: target_fingerprint.digest.clone(),
            calibre: calibre.name().to_string(),
            fingerprint_files: target_fingerprint.files.clone(),
            warnings: skill.warnings.iter().map(ToString::to_string).collect(),
        },
        eval_set: EvalSetInfo {
            path: absolute(&eval_path),
            digest: eval_set.digest.clone(),
            format: serde_json::to_value(eval_set.format)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            case_ids: cases.iter().map(|c| c.id.clone()).collect(),
            case_clusters: cases
                .iter()
                .filter_map(|c| c.cluster.clone().map(|cl| (c.id.clone(), cl)))
                .collect(),
            allow_draft: args.allow_draft,
        },
        runner: RunnerInfo {
            name: profile.name.clone(),
            kind: profile.profile.kind.name().to_string(),
            profile_path: profile.recorded_path(),
            profile_digest,
            // Agent CLIs discover staged skills themselves: `skill_mode` applies to
            // `openai-chat` only.
            skill_mode: capabilities.skill_delivery.as_str().to_string(),
            base_url: profile.profile.base_url.clone(),
            capabilities: Some(capabilities),
        },
        model,
        k: args.k,
        seed: args.seed,
        decoys: DecoysInfo {
            source: decoy_source.recorded_name(),
            skills: decoy_infos,
        },
        trials_planned: cases.len() * arms.len() * args.k as usize,
        arms,
        reference,
        previous: previous.as_ref().map(|(_, info)| info.clone()),
        arm_design: design,
        calibration: None,
        grading: grading.settings,
        regraded_from: None,
        shard: args.shard,
        gates: Some(args.analysis.recorded_gates()),
        stopping: None,
        trial_keys: None,
        reuse: None,
    };
    let mut manifest = manifest;
    // Every run records its trial keys (a later run may reuse its trials); reuse itself only
    // when asked for.
    manifest.trial_keys = Some(
        crate::reuse::trial_keys(
            &manifest,
            &cases,
            &profile.profile,
            &skill_dir.join("evals").join("files"),
        )
        .map_err(CommandError::input)?,
    );
    manifest.reuse = reuse_request(args, &manifest)?;
    Ok(ResolvedRun {
        skill,
        skill_dir,
        cases,
        profile,
        manifest,
        decoy_source,
        calibre,
        judge_profiles: grading.judge_profiles,
        previous: previous.map(|(resolved, _)| resolved),
    })
}

/// `manifest.reuse` for `--reuse-baseline [PATH]`: the source (a bare flag: the state
/// folder's trial store) and the arm reused (the reference arm); `None` without the flag.
fn reuse_request(
    args: &RunArgs,
    manifest: &Manifest,
) -> Result<Option<crate::reuse::ReuseRecord>, CommandError> {
    let Some(path) = &args.reuse_baseline else {
        return Ok(None);
    };
    let source = match path {
        Some(path) => crate::reuse::ReuseSource::of_path(&absolute(path)).map_err(|e| {
            CommandError::input(anyhow!("--reuse-baseline {}: {e}", path.display()))
        })?,
        None => crate::reuse::ReuseSource::Store {
            path: absolute(
                &crate::registry::state::state_dir_from_env(args.state.as_deref())
                    .map_err(|e| CommandError::input(anyhow!("--reuse-baseline: {e}")))?,
            ),
        },
    };
    Ok(Some(crate::reuse::ReuseRecord {
        source,
        arms: vec![manifest.reference()],
        reused: 0,
        from_runs: Default::default(),
        not_found: 0,
    }))
}

/// Take the matching recorded trials of a fresh run that asked for reuse (`manifest.reuse`)
/// into its log before anything runs: appended to `log`, added to `done` and `previous`, the
/// counts written into the manifest.
fn import_reused_trials(
    run_dir: &Path,
    manifest: &mut Manifest,
    done: &mut HashSet<crate::record::TrialKey>,
    previous: &mut Vec<crate::record::TrialRecord>,
    log: &mut TrialLog,
) -> Result<(), CommandError> {
    let Some(request) = manifest.reuse.clone() else {
        return Ok(());
    };
    let imported = crate::reuse::import(&request.source, &request.arms, manifest, run_dir, done)
        .map_err(|e| CommandError::input(anyhow!("--reuse-baseline: {e}")))?;
    for warning in &imported.warnings {
        eprintln!("warning: --reuse-baseline: {warning}");
    }
    log.append(&imported.records)
        .map_err(CommandError::infrastructure)?;
    let mut from_runs = std::collections::BTreeMap::<String, usize>::new();
    for record in &imported.records {
        if let Some(from) = &record.reused_from {
            *from_runs.entry(from.run_id.clone()).or_default() += 1;
        }
    }
    eprintln!(
        "skill-lift: --reuse-baseline: {} {} trials reused from {} ({}); {} with no matching recorded trial run",
        imported.records.len(),
        request
            .arms
            .iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join("/"),
        request.source.describe(),
        if from_runs.is_empty() {
            "none".to_string()
        } else {
            from_runs
                .iter()
                .map(|(run, n)| format!("{run}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        },
        imported.not_found
    );
    done.extend(imported.records.iter().map(|r| r.key()));
    if let Some(reuse) = manifest.reuse.as_mut() {
        reuse.reused = imported.records.len();
        reuse.from_runs = from_runs;
        reuse.not_found = imported.not_found;
    }
    previous.extend(imported.records);
    let bytes = serde_json::to_vec_pretty(&*manifest).expect("manifest serializes");
    write_atomic(&run_dir.join("manifest.json"), &bytes).map_err(CommandError::infrastructure)?;
    Ok(())
}

/// Reload the inputs recorded in a run's manifest and refuse if any of them changed.
pub(super) fn resolve_resume(run_dir: &Path) -> Result<ResolvedRun, CommandError> {
    if !run_dir.join("manifest.json").is_file() {
        let hint = if is_half_created_run_folder(run_dir) {
            "; it is a run folder whose start was interrupted before anything was recorded: start the run again with the same --run-id (the empty folder is replaced)"
        } else {
            "; pass a folder under results/ written by `skill-lift run`"
        };
        return Err(CommandError::input(anyhow!(
            "{}: not a run folder (no manifest.json){hint}",
            run_dir.display()
        )));
    }
    let manifest = read_manifest(run_dir).map_err(CommandError::input)?;
    let changed = |what: &str, detail: String| {
        CommandError::input(anyhow!(
            "cannot resume {}: the {what} changed since the run started ({detail}); start a new run instead",
            run_dir.display()
        ))
    };
    let skill_dir = manifest.asset.path.clone();
    let skill = load_skill(&skill_dir).map_err(CommandError::input)?;
    let calibre: Calibre = manifest
        .asset
        .calibre
        .parse()
        .map_err(|e: String| CommandError::input(anyhow!(e)))?;
    let print = fingerprint(&skill_dir, calibre).map_err(CommandError::input)?;
    if print.digest != manifest.asset.fingerprint {
        return Err(changed(
            "skill",
            format!(
                "fingerprint {} is now {}",
                manifest.asset.fingerprint, print.digest
            ),
        ));
    }
    let eval_set =
        load_eval_set(&manifest.eval_set.path, &skill_dir).map_err(CommandError::input)?;
    if eval_set.digest != manifest.eval_set.digest {
        return Err(changed(
            "eval set",
            format!("{} digest differs", manifest.eval_set.path.display()),
        ));
    }
    let cases: Vec<GoldenCase> = eval_set
        .runnable_cases(manifest.eval_set.allow_draft)
        .into_iter()
        .cloned()
        .collect();
    let ids: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    if ids != manifest.eval_set.case_ids {
        return Err(changed("case list", "case ids differ".to_string()));
    }
    let profile = load_profile(&manifest.runner.profile_path).map_err(CommandError::input)?;
    if profile.digest().map_err(CommandError::input)? != manifest.runner.profile_digest {
        return Err(changed(
            "runner profile",
            manifest.runner.profile_path.display().to_string(),
        ));
    }
    let decoy_source = DecoySource::from_recorded(&manifest.decoys.source);
    let decoys = prepare_decoys(&decoy_source).map_err(CommandError::input)?;
    let mut now: Vec<DecoyInfo> = Vec::new();
    for decoy in &decoys.skills {
        let print = fingerprint(&decoy.dir, calibre).map_err(CommandError::input)?;
        now.push(DecoyInfo {
            name: decoy.name.clone(),
            fingerprint: print.digest,
        });
    }
    if now != manifest.decoys.skills {
        return Err(changed("decoys", manifest.decoys.source.clone()));
    }
    let judge_profiles = super::grading::recorded_judge_profiles(&manifest.grading)?;
    let previous = match &manifest.previous {
        None => None,
        Some(info) => {
            let (folder, git_ref) = match &info.git_ref {
                Some(git_ref) => (None, Some(git_ref.as_str())),
                None => (Some(info.path.as_path()), None),
            };
            let (resolved, now) = resolve_previous(folder, git_ref, &info.path, calibre)?
                .expect("a folder or a revision");
            if now.fingerprint != info.fingerprint {
                return Err(changed(
                    "previous version",
                    format!(
                        "fingerprint {} is now {}",
                        info.fingerprint, now.fingerprint
                    ),
                ));
            }
            Some(resolved)
        }
    };
    Ok(ResolvedRun {
        previous,
        skill,
        skill_dir,
        cases,
        profile,
        manifest,
        decoy_source,
        calibre,
        judge_profiles,
    })
}

/// The exit code a finished run's summary maps to: nothing gradable (4), more unscoreable
/// trials than `--max-unscoreable` allows or no case scored in both arms (3), a failed gate
/// (1), else 0.
pub fn exit_code_for(summary: &Summary) -> i32 {
    let outcomes = &summary.trials.outcomes;
    if summary.trials.recorded > 0 && outcomes.not_gradable == summary.trials.recorded {
        return exit_codes::NOTHING_TO_RUN;
    }
    if summary.trials.recorded > 0 && (summary.lift.n_cases == 0 || summary.unscoreable.exceeded) {
        return exit_codes::INFRASTRUCTURE_ERROR;
    }
    if summary.gates().any(|gate| !gate.passed) {
        return exit_codes::GATE_FAILED;
    }
    exit_codes::SUCCESS
}

/// Explain a non-zero exit code on stderr.
pub fn explain_exit(summary: &Summary, code: i32) {
    match code {
        exit_codes::NOTHING_TO_RUN => eprintln!(
            "error: no trial could be graded: the cases have no output checks (`checks` or an `expected_output_match`) and no --judge or --grader scored them (exit {code})"
        ),
        exit_codes::INFRASTRUCTURE_ERROR => eprintln!(
            "error: {} of {} trials are unscoreable ({:.2}%, limit {:.2}% — --max-unscoreable); causes: {}; see `reason` in trials.jsonl (exit {code})",
            summary.trials.outcomes.unscoreable,
            summary.trials.recorded,
            summary.unscoreable.fraction * 100.0,
            summary.unscoreable.limit * 100.0,
            unscoreable_causes(summary)
        ),
        exit_codes::GATE_FAILED => {
            let failures = summary
                .gates()
                .flat_map(|g| g.failures.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("; ");
            eprintln!("error: gate failed: {failures} (exit {code})");
        }
        _ => {}
    }
}

/// The unscoreable causes of both arms, e.g. `grader error 3, runner error 1`.
fn unscoreable_causes(summary: &Summary) -> String {
    let mut causes: std::collections::BTreeMap<&str, usize> = Default::default();
    let extra = summary
        .comparisons
        .iter()
        .filter(|c| !Arm::PAIRED.contains(&c.arm))
        .map(|c| &c.arm_summary);
    for arm in [&summary.arms.with_skill, &summary.arms.without_skill]
        .into_iter()
        .chain(extra)
    {
        for (cause, count) in &arm.unscoreable_causes {
            *causes.entry(cause.as_str()).or_default() += count;
        }
    }
    if causes.is_empty() {
        return "none recorded".to_string();
    }
    causes
        .iter()
        .map(|(cause, count)| format!("{cause} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Seconds between the exports rewritten during a run (`SKILL_LIFT_EXPORT_INTERVAL_S`, default
/// 10), so a crash or a kill keeps reports of the trials recorded so far.
fn export_interval() -> Duration {
    std::env::var("SKILL_LIFT_EXPORT_INTERVAL_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(Duration::from_secs(10))
}

/// The exports rewritten during a run: every [`export_interval`], when trials were recorded
/// since the last time, every export (not the transcript pages) from the dispatcher's records
/// in memory, atomically. Failures are ignored here: the final export at the end of the run
/// reports them.
fn periodic_exports(
    run_dir: PathBuf,
    manifest: Manifest,
    settings: AnalysisSettings,
) -> crate::execute::PeriodicExports {
    crate::execute::PeriodicExports {
        interval: export_interval(),
        export: Arc::new(move |records| {
            let _ = crate::report::export_records(
                &run_dir,
                &manifest,
                &settings,
                &Format::ALL,
                records,
            );
        }),
    }
}

/// Feed the run's verdicts to the baseline store (`baseline-results.json` in the state folder),
/// which `regress` and `check` read. A failure is a warning: the run itself is recorded, and
/// `skill-lift baseline ingest RUN_DIR` repeats this later.
pub(super) fn record_in_baseline_store(
    run_dir: &Path,
    manifest: &Manifest,
    state_flag: Option<&Path>,
) {
    let result = crate::record::read_trials(&run_dir.join("trials.jsonl"))
        .map_err(|e| e.to_string())
        .and_then(|(records, _)| {
            crate::registry::state::state_dir_from_env(state_flag)
                .and_then(|state| crate::registry::baseline::record_run(&state, manifest, &records))
                .map_err(|e| e.to_string())
        });
    match result {
        Ok(recorded) => eprintln!(
            "skill-lift: baseline store: {} verdicts for {} ({})",
            recorded.entries,
            recorded.asset,
            recorded.store.display()
        ),
        Err(error) => eprintln!(
            "warning: baseline store not updated ({error}); run `skill-lift baseline ingest {}` later",
            run_dir.display()
        ),
    }
}

/// Register the run's measured trials in the state folder's trial store, so a later
/// `--reuse-baseline` finds them. A failure is a warning (the run itself is recorded).
pub(super) fn register_reusable_trials(
    run_dir: &Path,
    manifest: &Manifest,
    state_flag: Option<&Path>,
) {
    if manifest.trial_keys.is_none() {
        return;
    }
    let result = crate::record::read_trials(&run_dir.join("trials.jsonl"))
        .map_err(|e| e.to_string())
        .and_then(|(records, _)| {
            let state = crate::registry::state::state_dir_from_env(state_flag)
                .map_err(|e| e.to_string())?;
            crate::reuse::register_run(&state, run_dir, manifest, &records)
                .map(|n| (n, state))
                .map_err(|e| e.to_string())
        });
    match result {
        Ok((count, state)) => eprintln!(
            "skill-lift: trial store: {count} reusable trials registered ({})",
            state.join(crate::reuse::STORE_FILE).display()
        ),
        Err(error) => eprintln!("warning: trial store not updated ({error})"),
    }
}

/// Run the command; returns the exit code. Several runners or models make a matrix run
/// (`super::matrix`); one of each is the single run below.
pub async fn run(args: RunArgs) -> Result<i32, CommandError> {
    if args.resume.is_some() && args.grading.any_given() {
        return Err(CommandError::input(anyhow!(
            "grading flags are not accepted with --resume: a run grades as it started (its judges and graders are in its manifest); grade recorded trials differently with `skill-lift regrade RUN_DIR`"
        )));
    }
    if let Some(dir) = &args.resume
        && crate::run_matrix::is_matrix_folder(dir)
    {
        let dir = dir.clone();
        return super::matrix::resume(args, dir).await;
    }
    if args.resume.is_none() && super::matrix::is_matrix(&args) {
        return super::matrix::run(args).await;
    }
    if args.resume.is_none()
        && let Some(skill_dir) = &args.skill_dir
    {
        // Red flags of `skill-lift env` come first: a missing tool explains failures to come.
        super::fit::print_red_flags(skill_dir, args.runner(), args.model());
    }
    let prepared = match prepare_run(&args)? {
        Ok(prepared) => prepared,
        Err(code) => return Ok(code),
    };
    let run_dir = match &args.resume {
        Some(dir) => dir.clone(),
        None => create_run_folder(&args.out, &prepared.resolved.manifest)?,
    };
    let options = RunOptions {
        quiet: args.quiet,
        manage_server: true,
        resuming: args.resume.is_some(),
        progress: None,
    };
    let finished = match execute_run(prepared, &run_dir, &args, options).await? {
        Ok(finished) => finished,
        Err(code) => return Ok(code),
    };
    let markdown = summary_markdown(&finished.summary);
    if !args.quiet {
        print!("{markdown}");
    }
    super::append_step_summary(&markdown);
    super::print_written(&finished.written);
    eprintln!(
        "skill-lift: {} trials recorded in {:.1} s; results in {}",
        finished.report.recorded,
        finished.report.wall_s,
        run_dir.display()
    );
    Ok(conclude(&args, &run_dir, &finished))
}

/// The run request in one step: resolve the inputs (fresh, or the manifest of `--resume`),
/// check them before anything is spent, look the suite's calibration up (fresh runs), read
/// the credential and build the graders. `Ok(Err(code))`: nothing to run, with the exit code.
pub(super) fn prepare_run(args: &RunArgs) -> Result<Result<PreparedRun, i32>, CommandError> {
    let mut resolved = match &args.resume {
        Some(run_dir) => resolve_resume(run_dir)?,
        None => resolve_fresh(args, ArmDesign::Paired)?,
    };
    super::stopping::apply(
        &mut resolved.manifest,
        &args.stopping,
        resolved.profile.profile.price,
        args.resume.is_some(),
    )?;
    if let Some(code) = preflight(&resolved, args)? {
        return Ok(Err(code));
    }
    if args.resume.is_none() {
        let manifest = &resolved.manifest;
        let found = match crate::registry::state::state_dir_from_env(args.state.as_deref()) {
            Ok(state) => crate::calibration::lookup(&state, manifest),
            Err(error) => crate::calibration::unavailable(
                manifest,
                &format!("no state folder to look the calibration up in ({error})"),
            ),
        };
        resolved.manifest.calibration = Some(found);
    }
    match &resolved.manifest.calibration {
        Some(found) if found.is_calibrated() => eprintln!("skill-lift: {}", found.message),
        Some(found) => eprintln!("warning: {}", found.message),
        None => {}
    }
    Ok(Ok(prepare(resolved, args)?))
}

/// After a run's trials ran and its exports are written: feed the baseline store (a complete,
/// measured, paired, unsharded run), explain a stop (breaker, interrupt, missing trials), and
/// map the outcome to the exit code.
pub(super) fn conclude(args: &RunArgs, run_dir: &Path, finished: &RunFinished) -> i32 {
    let RunFinished {
        manifest,
        summary,
        report,
        ..
    } = finished;
    // Only a run that measured something counts as an evaluation (a run whose trials were
    // mostly unscoreable or not gradable must not clear `check` after a model bump).
    let measured = !matches!(
        exit_code_for(summary),
        exit_codes::INFRASTRUCTURE_ERROR | exit_codes::NOTHING_TO_RUN
    );
    let stopped_early = report.interrupted || report.breaker.is_some();
    if manifest.arm_design.is_paired() {
        register_reusable_trials(run_dir, manifest, args.state.as_deref());
    }
    if !manifest.arm_design.is_paired() {
        eprintln!(
            "skill-lift: baseline store not updated: an A/A repeat of `skill-lift calibrate` is no evaluation of the skill"
        );
    } else if manifest.shard.is_none() && !stopped_early && measured {
        record_in_baseline_store(run_dir, manifest, args.state.as_deref());
    } else if manifest.shard.is_none() && !stopped_early {
        eprintln!("skill-lift: baseline store not updated: this run measured no lift");
    }
    if let Some(reason) = &report.breaker {
        let remaining = report.missing;
        eprintln!(
            "error: {reason}; stopped with {remaining} planned trials not run (they are not scored). Fix the cause, then continue with: skill-lift run --resume {} (exit {})",
            run_dir.display(),
            exit_codes::INFRASTRUCTURE_ERROR
        );
        return exit_codes::INFRASTRUCTURE_ERROR;
    }
    if report.interrupted {
        eprintln!(
            "skill-lift: interrupted; recorded trials are kept. Continue with: skill-lift run --resume {}",
            run_dir.display()
        );
        return exit_codes::INTERRUPTED;
    }
    if report.missing > 0 {
        // Every planned trial is accounted for: a trial that was to run and left no record
        // makes the run an error, never a success.
        eprintln!(
            "error: {} of the trials this run was to run were not recorded; continue with `skill-lift run --resume {}` (exit {})",
            report.missing,
            run_dir.display(),
            exit_codes::INFRASTRUCTURE_ERROR
        );
        return exit_codes::INFRASTRUCTURE_ERROR;
    }
    if manifest.shard.is_some() {
        // A shard alone is no analysis: its pairs may be split across shards. Gates apply to
        // the merged run.
        return exit_codes::SUCCESS;
    }
    let code = exit_code_for(summary);
    explain_exit(summary, code);
    code
}

/// Checks before spending (and before a run folder exists): an exit code when there is
/// nothing to run or grade, an error for a bad `--workspace-root`.
pub(super) fn preflight(
    resolved: &ResolvedRun,
    args: &RunArgs,
) -> Result<Option<i32>, CommandError> {
    // Before any trial runs: a --method the design cannot use is an input error.
    args.analysis.check_method(&resolved.manifest)?;
    if resolved.cases.is_empty() {
        eprintln!("error: the eval set has no active case to run (drafts need --allow-draft)");
        return Ok(Some(exit_codes::NOTHING_TO_RUN));
    }
    if !super::grading::anything_to_grade_by(&resolved.cases, &resolved.manifest.grading) {
        eprintln!(
            "error: nothing would decide pass or fail: no case has output checks (`checks`, or an `expected_output_match` with an `expected_output`) and no --judge or --grader is given (exit {})",
            exit_codes::NOTHING_TO_RUN
        );
        return Ok(Some(exit_codes::NOTHING_TO_RUN));
    }
    if let Some(root) = &args.workspace_root
        && !root.is_dir()
    {
        return Err(CommandError::input(anyhow!(
            "--workspace-root {}: not a folder",
            root.display()
        )));
    }
    Ok(None)
}

/// A resolved run with its credentials and grader set: everything that can fail on input is
/// checked before a run folder is created.
pub(super) struct PreparedRun {
    pub resolved: ResolvedRun,
    graders: crate::grade::pipeline::GraderSet,
    api_key: Option<String>,
}

/// Read the runner's credential and build the grader set (judges, custom graders) of
/// `resolved`.
pub(super) fn prepare(resolved: ResolvedRun, args: &RunArgs) -> Result<PreparedRun, CommandError> {
    let api_key = super::grading::profile_api_key(&resolved.profile)?;
    let graders = super::grading::build_grader_set(
        resolved.manifest.grading.clone(),
        &resolved.judge_profiles,
        super::grading::runner_secrets(&resolved.profile),
        args.grading.judge_format_retries,
        !args.grading.no_judge_cache,
        args.state.as_deref(),
    )?;
    Ok(PreparedRun {
        resolved,
        graders,
        api_key,
    })
}

/// How [`execute_run`] behaves besides the run's own flags.
#[derive(Debug, Clone, Copy)]
pub(super) struct RunOptions {
    /// No progress bar.
    pub quiet: bool,
    /// Start the profile's model server when it does not answer (and stop it after). A caller
    /// running several runs in a row (`calibrate`) starts it once itself instead.
    pub manage_server: bool,
    /// The run folder may hold what a killed run left (temporary files, trial folders):
    /// remove it first.
    pub resuming: bool,
    /// The progress display instead of the one `--progress` and the terminal choose (a matrix
    /// running several runners at once shows status lines).
    pub progress: Option<crate::progress::ProgressDisplay>,
}

/// What [`execute_run`] leaves: the run's manifest, its analysis and the files written.
pub(super) struct RunFinished {
    pub manifest: Manifest,
    pub summary: Summary,
    pub report: crate::execute::ExecuteReport,
    pub written: Vec<PathBuf>,
}

/// Run the missing trials of the run folder `run_dir` (whose manifest `prepared` holds) under
/// the run's lock, then analyze it and write every export. The one code path of `run` and of
/// each `calibrate` repeat. `Ok(Err(code))`: stopped before any trial ran (an interrupt while
/// a server started, a failed pre-flight check), with the exit code to return.
pub(super) async fn execute_run(
    prepared: PreparedRun,
    run_dir: &Path,
    args: &RunArgs,
    options: RunOptions,
) -> Result<Result<RunFinished, i32>, CommandError> {
    let PreparedRun {
        resolved,
        graders,
        api_key,
    } = prepared;
    let ResolvedRun {
        skill,
        skill_dir,
        cases,
        profile,
        manifest,
        decoy_source,
        calibre,
        judge_profiles,
        previous: previous_version,
    } = resolved;
    let run_dir = run_dir.to_path_buf();
    std::fs::create_dir_all(run_dir.join("transcripts"))
        .with_context(|| format!("creating {}", run_dir.display()))
        .map_err(CommandError::infrastructure)?;

    // The lock is taken before `trials.jsonl` is read and held until the final export: two
    // processes on one run never read, truncate and append over each other.
    let lock = RunLock::acquire(&run_dir).map_err(CommandError::input)?;
    if options.resuming {
        clean_up_after_a_killed_run(&run_dir, &lock, args.workspace_root.as_deref())?;
    }
    let mut previous = Vec::new();
    let valid_len =
        crate::record::for_each_planned_trial(&run_dir.join("trials.jsonl"), &manifest, |record| {
            previous.push(record);
            Ok(())
        })
        .map_err(CommandError::input)?;
    let planned: HashSet<_> = plan_trials(&cases, &manifest.arms, manifest.k)
        .into_iter()
        .map(|(_, key)| key)
        .collect();
    // `--retry-unscoreable`: trials whose current record is unscoreable for an infrastructure
    // cause run again; their new records supersede the old ones (kept in the log).
    let retried: HashSet<crate::record::TrialKey> = if args.retry_unscoreable {
        previous
            .iter()
            .filter(|record| {
                record
                    .cause()
                    .is_some_and(crate::grade::UnscoreableCause::is_infrastructure)
            })
            .map(|record| record.key())
            .collect()
    } else {
        HashSet::new()
    };
    if args.retry_unscoreable {
        eprintln!(
            "skill-lift: --retry-unscoreable: {} trials recorded unscoreable for an infrastructure cause run again (their old records are kept, superseded)",
            retried.len()
        );
    }
    let previous: Vec<_> = previous
        .into_iter()
        .filter(|record| !retried.contains(&record.key()))
        .collect();
    let mut done: HashSet<_> = previous
        .iter()
        .map(|r| r.key())
        .filter(|key| planned.contains(key))
        .collect();
    // A shard runs only its own trials: the others count as done here (and are never recorded).
    let mut outside_shard = 0;
    if let Some(shard) = manifest.shard {
        for key in &planned {
            if !shard.contains(&key.trial_id()) && done.insert(key.clone()) {
                outside_shard += 1;
            }
        }
        eprintln!(
            "skill-lift: shard {shard}: {} of {} trials belong to this shard; merge the shard folders with `skill-lift merge`",
            planned.len() - outside_shard,
            planned.len()
        );
    }
    let mut log = TrialLog::open(&run_dir, valid_len, &lock).map_err(CommandError::input)?;
    let mut manifest = manifest;
    let mut previous = previous;
    if !options.resuming {
        import_reused_trials(&run_dir, &mut manifest, &mut done, &mut previous, &mut log)?;
    }
    eprintln!(
        "skill-lift: run {} — {} cases × {} arms ({}) × K={} = {} trials ({} already recorded), runner {} ({}), model {}",
        manifest.run_id,
        cases.len(),
        manifest.arms.len(),
        manifest
            .arms
            .iter()
            .map(|arm| arm.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        manifest.k,
        manifest.trials_planned,
        done.len() - outside_shard,
        profile.name,
        profile.profile.kind.name(),
        manifest.model
    );

    // From the first child on, SIGINT/SIGTERM stop the run cleanly (servers included).
    crate::contain::install_interrupt_handler();
    let mut server = None;
    if options.manage_server
        && done.len() < planned.len()
        && let Some(config) = &profile.profile.server
    {
        let profile_dir = profile.profile_dir();
        eprintln!("skill-lift: checking model server at {}", config.ready_url);
        // Dropping the start-up on an interrupt stops the server it started (SIGKILL of its
        // process group).
        let server_log = run_dir.join("server.log");
        server = tokio::select! {
            started = ManagedServer::ensure(
                config,
                profile_dir.as_deref(),
                &profile.profile.base_url,
                &server_log,
            ) => started.map_err(CommandError::infrastructure)?,
            _ = crate::contain::interrupted() => {
                eprintln!("skill-lift: interrupted while waiting for the model server; it was stopped. Continue with: skill-lift run --resume {}", run_dir.display());
                return Ok(Err(exit_codes::INTERRUPTED));
            }
        };
        if server.is_some() {
            eprintln!(
                "skill-lift: started model server ({})",
                config.command.join(" ")
            );
        }
    }

    let mut judge_servers = if done.len() < planned.len() {
        tokio::select! {
            started = super::grading::ensure_judge_servers(&judge_profiles, &run_dir) => started?,
            _ = crate::contain::interrupted() => {
                if let Some(server) = server.as_mut() {
                    server.stop().await;
                }
                eprintln!("skill-lift: interrupted while waiting for the judge's model server; it was stopped. Continue with: skill-lift run --resume {}", run_dir.display());
                return Ok(Err(exit_codes::INTERRUPTED));
            }
        }
    } else {
        Vec::new()
    };
    if done.len() < planned.len() && !args.no_preflight {
        let mut checks = vec![(profile.clone(), api_key.clone())];
        for judge in &judge_profiles {
            checks.push((judge.clone(), super::grading::profile_api_key(judge)?));
        }
        for (checked, key) in &checks {
            match crate::runner::preflight::check(checked, key.as_deref()).await {
                Ok(line) => eprintln!("skill-lift: pre-flight {}: {line}", checked.name),
                Err(error) => {
                    if let Some(server) = server.as_mut() {
                        server.stop().await;
                    }
                    for server in judge_servers.iter_mut() {
                        server.stop().await;
                    }
                    return Err(CommandError::infrastructure(anyhow!(
                        "{error}; nothing was run (skip the check with --no-preflight)"
                    )));
                }
            }
        }
    }
    let runner =
        build_runner(&profile, api_key).map_err(|e| CommandError::infrastructure(anyhow!(e)))?;
    let decoys = prepare_decoys(&decoy_source).map_err(CommandError::input)?;
    let jobs = args
        .jobs
        .map(|j| j as usize)
        .unwrap_or(profile.profile.concurrency);
    let context = Arc::new(TrialContext {
        run_id: manifest.run_id.clone(),
        run_dir: run_dir.clone(),
        runner_name: profile.name.clone(),
        model: manifest.model.clone(),
        runner,
        cases,
        target: SkillSource {
            name: skill.name.clone(),
            dir: skill_dir.clone(),
        },
        decoys: decoys.skills.clone(),
        eval_files_dir: skill_dir.join("evals").join("files"),
        target_digest: manifest.asset.fingerprint.clone(),
        calibre,
        trial_timeout: Duration::from_secs_f64(profile.profile.timeout_s),
        keep_workspaces: args.keep_workspaces,
        workspace_root: args.workspace_root.clone(),
        graders: Arc::new(graders),
        decoy_names: manifest
            .decoys
            .skills
            .iter()
            .map(|d| d.name.clone())
            .collect(),
        capabilities: manifest
            .runner
            .capabilities
            .clone()
            .unwrap_or_else(|| crate::runner::RunnerCapabilities::of_profile(&profile.profile)),
        retried,
        max_transcript_bytes: usize::try_from(profile.profile.max_transcript_bytes)
            .unwrap_or(usize::MAX),
        design: manifest.arm_design,
        arms: manifest.arms.clone(),
        previous: previous_version.as_ref().map(|p| p.skill.clone()),
        target_skill_md: skill_md_text(&skill_dir)?,
        memory_staging: Default::default(),
    });
    // A resumed run keeps the gates it started with unless a flag is given again.
    let analysis_settings = args
        .analysis
        .settings_over(manifest.seed, manifest.gates.as_ref());
    let settings = ExecuteSettings {
        jobs,
        k: manifest.k,
        progress: options.progress.unwrap_or_else(|| {
            crate::progress::ProgressDisplay::choose(
                args.progress,
                options.quiet,
                crate::progress::ProgressDisplay::stderr_is_interactive(),
                Duration::from_secs_f64(args.progress_interval),
            )
        }),
        breaker: args.breaker,
        round: None,
        exports: Some(periodic_exports(
            run_dir.clone(),
            manifest.clone(),
            analysis_settings.clone(),
        )),
    };
    let graders_for_usage = Arc::clone(&context.graders);
    let outcome = match manifest.stopping.clone() {
        // Round scheduling (`--sequential`, budgets): the round planner feeds the scheduler.
        Some(plan) => {
            let wall_before_s = plan.outcome.as_ref().map_or(0.0, |o| o.spent.wall_s);
            crate::sequential::execute_rounds(
                context,
                settings,
                &plan,
                &done,
                &previous,
                log,
                crate::contain::interrupted,
                wall_before_s,
            )
            .await
            .map(|(report, stopped)| {
                eprintln!(
                    "skill-lift: stopped: {}: {}",
                    stopped.reason.as_str(),
                    stopped.message
                );
                if let Some(plan) = manifest.stopping.as_mut() {
                    plan.outcome = Some(stopped);
                }
                report
            })
        }
        None => {
            execute(
                context,
                settings,
                &done,
                &previous,
                log,
                crate::contain::interrupted(),
            )
            .await
        }
    };
    if manifest.stopping.is_some() {
        // How the run stopped is part of its record (the reports read it from here).
        let bytes = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
        write_atomic(&run_dir.join("manifest.json"), &bytes)
            .map_err(CommandError::infrastructure)?;
    }
    for line in graders_for_usage.judge_usage_lines() {
        eprintln!("skill-lift: {line}");
    }
    if let Some(server) = server.as_mut() {
        server.stop().await;
    }
    for server in judge_servers.iter_mut() {
        server.stop().await;
    }
    // The servers wrote their logs themselves: they pass the redaction boundary now.
    crate::redact::redact_logs_in(&run_dir);
    // Anything re-parented to skill-lift that it did not start (a supervisor was killed from
    // outside) goes now.
    let orphans = crate::contain::reap_adopted_orphans();
    if orphans > 0 {
        eprintln!("skill-lift: stopped {orphans} orphaned processes left by killed trials");
    }
    let report = match outcome {
        Ok(report) => report,
        // A leak is the inputs' fault (exit 2); a failed append or an internal error is not.
        Err(crate::execute::ExecuteError::Leak(message)) => {
            return Err(CommandError::input(anyhow!("{message}")));
        }
        Err(error) => return Err(CommandError::infrastructure(error)),
    };

    // Transcript pages are derived and rendered by `skill-lift report` (one page per trial is
    // most of a fast run's cost).
    let (summary, written) = export_run(
        &run_dir,
        &run_dir,
        &manifest,
        &analysis_settings,
        &Format::ALL,
        false,
    )
    .with_context(|| format!("writing exports into {}", run_dir.display()))
    .map_err(CommandError::infrastructure)?;
    // The final export is written: other processes may now open the run.
    drop(lock);
    Ok(Ok(RunFinished {
        manifest,
        summary,
        report,
        written,
    }))
}

/// Whether `dir` is what a run killed between creating its folder and writing `manifest.json`
/// left (by skill-lift versions that created the folder first): nothing but an empty
/// `transcripts/` and possibly a `.lock`.
fn is_half_created_run_folder(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().all(|entry| {
        let name = entry.file_name();
        (name == "transcripts"
            && std::fs::read_dir(entry.path()).is_ok_and(|mut inner| inner.next().is_none()))
            || name == ".lock"
    })
}

/// Create the run folder `out/<run id>` with its `manifest.json` atomically: both are written
/// into a temporary folder beside it, which is then renamed into place, so a kill at any moment
/// leaves either no run folder or a complete one (never a folder without a manifest). A half
/// folder left by an older version is replaced.
pub(super) fn create_run_folder(out: &Path, manifest: &Manifest) -> Result<PathBuf, CommandError> {
    let dir = out.join(&manifest.run_id);
    if dir.exists() {
        if is_half_created_run_folder(&dir) {
            eprintln!(
                "skill-lift: {} holds no manifest and no trial (a start that was killed); starting the run in it again",
                dir.display()
            );
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("removing {}", dir.display()))
                .map_err(CommandError::infrastructure)?;
        } else {
            return Err(CommandError::input(anyhow!(
                "{}: run folder already exists; pick another --run-id or use --resume",
                dir.display()
            )));
        }
    }
    std::fs::create_dir_all(out)
        .with_context(|| format!("creating {}", out.display()))
        .map_err(CommandError::input)?;
    let staging = tempfile::Builder::new()
        .prefix(crate::record::TEMP_PREFIX)
        .tempdir_in(out)
        .with_context(|| format!("creating a folder in {}", out.display()))
        .map_err(CommandError::input)?;
    std::fs::create_dir_all(staging.path().join("transcripts"))
        .with_context(|| format!("creating {}", staging.path().display()))
        .map_err(CommandError::infrastructure)?;
    let bytes = serde_json::to_vec_pretty(manifest).expect("manifest serializes");
    write_atomic(&staging.path().join("manifest.json"), &bytes)
        .map_err(CommandError::infrastructure)?;
    let staged = staging.keep();
    if let Err(error) = std::fs::rename(&staged, &dir) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(CommandError::input(anyhow!(
            "{}: cannot create the run folder ({error}); pick another --run-id",
            dir.display()
        )));
    }
    Ok(dir)
}

/// What a killed run leaves behind and `--resume` removes (under the run's lock): temporary
/// export files in the run folder and the staged folders of the trials that were in flight.
fn clean_up_after_a_killed_run(
    run_dir: &Path,
    lock: &RunLock,
    workspace_root: Option<&Path>,
) -> Result<(), CommandError> {
    let temp_files = crate::record::remove_stale_temp_files(run_dir, lock)
        .map_err(CommandError::infrastructure)?;
    // Server logs of a killed run were never redacted.
    crate::redact::redact_logs_in(run_dir);
    let (records, _) = crate::record::read_all_trial_lines(&run_dir.join("trials.jsonl"))
        .map_err(CommandError::input)?;
    let kept: HashSet<PathBuf> = records.into_iter().filter_map(|r| r.workspace).collect();
    let mut folders = crate::workspace::remove_orphaned_trial_folders(run_dir, None, &kept);
    if let Some(root) = workspace_root {
        folders += crate::workspace::remove_orphaned_trial_folders(run_dir, Some(root), &kept);
    }
    if temp_files + folders > 0 {
        eprintln!(
            "skill-lift: removed {temp_files} temporary files and {folders} trial folders left by an interrupted run"
        );
    }
    Ok(())
}
