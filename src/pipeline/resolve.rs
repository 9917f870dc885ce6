//! Resolution of a run's inputs: a fresh run's skill, eval set, runner profile, previous
//! version, arms and decoys (with the leak guard over the decoys) into its manifest; a resumed
//! run's inputs reloaded from its manifest and refused when any of them changed.
//!
//! Nothing here runs a trial or creates the run folder ([`super::prepare`] does).

use std::path::{Path, PathBuf};

use chrono::Utc;

use super::PipelineError;
use super::grading::{ResolvedGrading, resolve_grading};
use super::settings::{FreshRun, PreviousSource, ReuseFrom};
use crate::features::asset::fingerprint::{Calibre, fingerprint};
use crate::features::asset::{Skill, load_skill};
use crate::features::decoys::{DecoySource, prepare_decoys};
use crate::features::evalset::{GoldenCase, default_eval_path, load_eval_set};
use crate::features::runner::LoadedProfile;
use crate::features::runner::profile::{load_profile, resolve_profile_path};
use crate::features::workspace::{Exposure, PreviousSkill, SkillSource};
use crate::record::{Arm, ArmDesign};
use crate::record::{
    AssetInfo, DecoyInfo, DecoysInfo, EvalSetInfo, FORMAT_VERSION, Manifest, PreviousInfo,
    RunnerInfo, read_manifest,
};
use crate::values::reporter::{Event, report};

/// Inputs of a run, resolved and validated.
pub(crate) struct ResolvedRun {
    /// The target skill.
    pub skill: Skill,
    /// Its folder.
    pub skill_dir: PathBuf,
    /// The runnable cases, in eval-set order.
    pub cases: Vec<GoldenCase>,
    /// The runner profile.
    pub profile: LoadedProfile,
    /// The manifest the run records (or recorded).
    pub manifest: Manifest,
    /// Where the decoys come from.
    pub decoy_source: DecoySource,
    /// The fingerprint calibre.
    pub calibre: Calibre,
    /// The judge profiles of the grading settings, in order.
    pub judge_profiles: Vec<LoadedProfile>,
    /// The previous version staged in the `previous_version` arm (with the temporary folder a
    /// `--previous-ref` was extracted into, removed when the run ends).
    pub previous: Option<ResolvedPrevious>,
}

/// The skill folder and eval set for the folder the user named (a skill, a repository root, a
/// plugin; `crate::features::evalset::layout`), reporting which skill and eval file were chosen when the
/// layout chose them. `evals` (`--evals`) wins; `None`: the skill's own default eval set.
pub(crate) fn locate_inputs(
    target: &Path,
    evals: Option<&Path>,
) -> Result<(PathBuf, Option<PathBuf>), crate::features::evalset::layout::LayoutError> {
    let located = crate::features::evalset::layout::locate(target, evals)?;
    if located.skill_chosen {
        report(Event::SkillChosen {
            target: target.to_path_buf(),
            skill_dir: located.skill_dir.clone(),
        });
    }
    let evals = match (evals, &located.eval_path) {
        (Some(given), _) => Some(given.to_path_buf()),
        (None, Some(found)) if located.eval_found_elsewhere => {
            report(Event::EvalSetByLayout {
                path: found.clone(),
            });
            Some(found.clone())
        }
        (None, _) => None,
    };
    Ok((located.skill_dir, evals))
}

/// The previous version of the skill, ready to stage.
pub(crate) struct ResolvedPrevious {
    /// Its folder and fingerprint.
    pub skill: PreviousSkill,
    /// The version it declares (`crate::features::asset::version`; at the git revision for
    /// `--previous-ref`).
    pub version: Option<crate::record::DeclaredVersion>,
    _extracted: Option<tempfile::TempDir>,
}

/// The arms of a run (shared by `run` and `plan`): the paired two, `previous_version` when a
/// previous version is given, one arm per exposure besides `native`, in the arms' kind order;
/// and the reference when it is not `without_skill`. An A/A control (`design` not paired) has
/// the paired two only.
pub(crate) fn planned_arms(
    has_previous: bool,
    exposure: &[Exposure],
    reference: Option<Arm>,
    design: ArmDesign,
) -> Result<(Vec<Arm>, Option<Arm>), PipelineError> {
    let extra = has_previous || !exposure.is_empty() || reference.is_some();
    if !design.is_paired() {
        if extra {
            return Err(PipelineError::ArmsOfAnAaControl);
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
        return Err(PipelineError::NoSuchReference { reference, arms });
    }
    Ok((arms, reference.filter(|r| *r != Arm::WithoutSkill)))
}

/// Extract the skill folder `skill_dir` as it was at `git_ref` into a temporary folder (`git
/// archive` run in the folder: its files at that revision).
fn extract_git_ref(skill_dir: &Path, git_ref: &str) -> Result<tempfile::TempDir, PipelineError> {
    let fail = |detail: String| PipelineError::PreviousRef {
        git_ref: git_ref.to_string(),
        detail,
        skill_dir: skill_dir.to_path_buf(),
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

/// Load the previous version and fingerprint it; `skill_dir` is the target's folder (a git
/// revision is extracted from it).
fn resolve_previous(
    source: &PreviousSource,
    skill_dir: &Path,
    calibre: Calibre,
) -> Result<(ResolvedPrevious, PreviousInfo), PipelineError> {
    let (dir, extracted, recorded_path, git_ref) = match source {
        PreviousSource::Folder(dir) => {
            if !dir.join("SKILL.md").is_file() {
                return Err(PipelineError::PreviousWithoutSkillMd(dir.clone()));
            }
            (absolute(dir), None, absolute(dir), None)
        }
        PreviousSource::GitRef(git_ref) => {
            let extracted = extract_git_ref(skill_dir, git_ref)?;
            (
                extracted.path().to_path_buf(),
                Some(extracted),
                absolute(skill_dir),
                Some(git_ref.clone()),
            )
        }
    };
    let previous_skill = load_skill(&dir)?;
    print_warnings(&previous_skill);
    let version = match &git_ref {
        None => crate::features::asset::version::declared_version(&dir),
        Some(git_ref) => crate::features::asset::version::metadata_version(&dir)
            .or_else(|| plugin_version_at(skill_dir, git_ref)),
    };
    let print = fingerprint(&dir, calibre)?;
    let info = PreviousInfo {
        path: recorded_path,
        git_ref,
        fingerprint: print.digest.clone(),
    };
    Ok((
        ResolvedPrevious {
            skill: PreviousSkill {
                dir,
                digest: print.digest,
            },
            _extracted: extracted,
            version,
        },
        info,
    ))
}

/// The `version` of the plugin `skill_dir` belongs to, as its manifest was at `git_ref` (`git
/// show REV:./path`, the path relative to the skill folder); `None` when the skill is in no
/// plugin or the manifest at that revision has no version.
fn plugin_version_at(skill_dir: &Path, git_ref: &str) -> Option<crate::record::DeclaredVersion> {
    use crate::features::asset::version::{PLUGIN_MANIFEST, plugin_root, plugin_version_of};
    let root = plugin_root(skill_dir)?;
    let skill = skill_dir.canonicalize().ok()?;
    let depth = skill.strip_prefix(&root).ok()?.components().count();
    let relative = if depth == 0 {
        format!("./{PLUGIN_MANIFEST}")
    } else {
        format!("{}{PLUGIN_MANIFEST}", "../".repeat(depth))
    };
    let shown = std::process::Command::new("git")
        .arg("-C")
        .arg(&skill)
        .args(["show", &format!("{git_ref}:{relative}")])
        .output()
        .ok()?;
    if !shown.status.success() {
        return None;
    }
    let text = plugin_version_of(&String::from_utf8_lossy(&shown.stdout))?;
    Some(crate::record::DeclaredVersion {
        text,
        source: format!(
            "{} version at {git_ref}",
            root.join(PLUGIN_MANIFEST).display()
        ),
    })
}

/// `path` made absolute: canonical when it exists, else joined to the current folder.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or(path.to_path_buf())
    })
}

/// A new run id: UTC time, the asset's name and a random suffix.
pub(crate) fn new_run_id(asset: &str) -> String {
    new_result_id(asset, None)
}

/// A new result folder id: UTC time, the asset's name, the command that writes the folder
/// (none for `run`) and a random suffix, e.g. `20260102T030405Z-my-skill-vet-1a2b`.
pub(crate) fn new_result_id(asset: &str, command: Option<&str>) -> String {
    let suffix: u16 = rand::random();
    let time = Utc::now().format("%Y%m%dT%H%M%SZ");
    match command {
        Some(command) => format!("{time}-{asset}-{command}-{suffix:04x}"),
        None => format!("{time}-{asset}-{suffix:04x}"),
    }
}

/// Whether `id` can name a result folder inside the results folder: not empty, no `/`, not
/// starting with `.` (no `.`, `..` or hidden folder).
pub(crate) fn is_plain_folder_name(id: &str) -> bool {
    !(id.is_empty() || id.contains('/') || id.starts_with('.'))
}

fn print_warnings(skill: &Skill) {
    for warning in &skill.warnings {
        report(Event::warning_at(
            skill.dir.join("SKILL.md"),
            warning.to_string(),
        ));
    }
    for omitted in crate::features::workspace::staging_omissions(&skill.dir) {
        report(Event::warning_at(
            &skill.dir,
            format!("not staged: {omitted}"),
        ));
    }
}

/// Refuse a skill whose name cannot name a folder: it names the staged skill folder and is part
/// of the run id, so `""`, `.`, `..` and names with `/`, `\` or NUL would escape or collide.
fn check_skill_name(skill: &Skill) -> Result<(), PipelineError> {
    let name = skill.name.as_str();
    let plain =
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if plain {
        return Ok(());
    }
    Err(PipelineError::SkillName {
        skill_md: skill.dir.join("SKILL.md"),
        name: name.to_string(),
    })
}

/// The text of `dir/SKILL.md` for the leak guard.
pub(crate) fn skill_md_text(dir: &Path) -> Result<String, PipelineError> {
    let path = dir.join("SKILL.md");
    std::fs::read(&path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|source| PipelineError::ReadSkillMd { path, source })
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
/// arms staged as `design` says (the paired measurement, or an A/A control for `calibrate`);
/// `gates` are recorded in it.
pub(crate) fn resolve_fresh(
    request: &FreshRun,
    design: ArmDesign,
    gates: crate::record::RecordedGates,
    state: Option<&Path>,
) -> Result<ResolvedRun, PipelineError> {
    let (skill_dir, evals) = locate_inputs(&request.target, request.evals.as_deref())?;
    let ResolvedGrading {
        settings: mut grading,
        judge_profiles,
    } = resolve_grading(&request.grading)?;
    let skill = load_skill(&skill_dir)?;
    print_warnings(&skill);
    check_skill_name(&skill)?;
    let calibre = request.calibre;
    let eval_path = evals.unwrap_or_else(|| default_eval_path(&skill_dir));
    if !eval_path.is_file() && !eval_path.is_dir() {
        return Err(PipelineError::EvalSetNotFound(eval_path));
    }
    let eval_set = load_eval_set(&eval_path, &skill_dir)?;
    for warning in &eval_set.warnings {
        report(Event::warning_at(&eval_path, warning.to_string()));
    }
    warn_on_skill_name_mismatch(&eval_path, eval_set.skill_name.as_deref(), &skill.name);
    let cases: Vec<GoldenCase> = eval_set
        .runnable_cases(request.allow_draft)
        .into_iter()
        .cloned()
        .collect();
    let quality_contract =
        match crate::features::evalset::contract::contract_path(&eval_path, &skill_dir) {
            Some(path) => crate::features::evalset::contract::load_contract(&absolute(&path))?,
            None => None,
        };
    let profile_path = resolve_profile_path(&request.runner)?;
    let profile = load_profile(&profile_path)?;
    let target_fingerprint = fingerprint(&skill_dir, calibre)?;
    let (arms, reference) = planned_arms(
        request.previous.is_some(),
        &request.exposure,
        request.reference,
        design,
    )?;
    let previous = request
        .previous
        .as_ref()
        .map(|source| resolve_previous(source, &skill_dir, calibre))
        .transpose()?;
    if let Some((_, info)) = &previous
        && info.fingerprint == target_fingerprint.digest
    {
        return Err(PipelineError::PreviousIsTheSkill(info.fingerprint.clone()));
    }
    let version_policy = previous
        .as_ref()
        .map(|(resolved, _)| crate::record::VersionPolicy {
            current: crate::features::asset::version::declared_version(&skill_dir),
            previous: resolved.version.clone(),
            margin: request
                .equivalence
                .unwrap_or(crate::analysis::evolution::DEFAULT_MARGIN),
        });
    if let Some(policy) = &version_policy {
        match crate::analysis::evolution::check_policy(policy) {
            Err(why) if gates.enforce_version_policy => {
                return Err(PipelineError::VersionPolicy(why));
            }
            Err(why) => report(Event::warning(format!(
                "version policy not applied: {why}; the comparison with the previous version is reported without one"
            ))),
            Ok(_) => {}
        }
    }
    let decoy_source = request.decoys.clone();
    let target_source = SkillSource {
        name: skill.name.clone(),
        dir: skill_dir.clone(),
        ..Default::default()
    };
    for case in &cases {
        if let Some(error) =
            crate::features::workspace::case_file_copying_target(case, &target_source)
        {
            return Err(PipelineError::CaseCopiesTarget {
                eval_path: eval_path.clone(),
                error,
            });
        }
    }
    let target_text = crate::features::leak_guard::SkillText::parse(&skill_md_text(&skill_dir)?);
    let decoys = prepare_decoys(&decoy_source)?;
    let mut decoy_infos = Vec::new();
    for decoy in &decoys.skills {
        let print = fingerprint(&decoy.dir, calibre)?;
        if decoy.name == skill.name {
            return Err(PipelineError::DecoyNamedAsTarget(decoy.name.clone()));
        }
        let decoy_skill = load_skill(&decoy.dir)?;
        check_skill_name(&decoy_skill)?;
        let decoy_text = crate::features::leak_guard::SkillText::parse(&skill_md_text(&decoy.dir)?);
        if let Some(why) = decoy_text.resembles(&target_text) {
            return Err(PipelineError::DecoyCopiesTarget {
                decoy: decoy_display_path(&decoy_source, &decoy.name, &decoy.dir),
                target: skill_dir.join("SKILL.md"),
                why: why.to_string(),
            });
        }
        if let Some((previous, _)) = &previous
            && print.digest == previous.skill.digest
        {
            return Err(PipelineError::DecoyIsPrevious {
                name: decoy.name.clone(),
                fingerprint: print.digest,
            });
        }
        if print.digest == target_fingerprint.digest {
            return Err(PipelineError::DecoyIsTarget {
                name: decoy.name.clone(),
                fingerprint: print.digest,
            });
        }
        decoy_infos.push(DecoyInfo {
            name: decoy.name.clone(),
            fingerprint: print.digest,
        });
    }
    let profile_digest = profile.digest()?;
    let model = request
        .model
        .clone()
        .unwrap_or_else(|| profile.profile.model.clone());
    let run_id = match &request.run_id {
        Some(id) => id.clone(),
        None => new_run_id(&skill.name),
    };
    if !is_plain_folder_name(&run_id) {
        return Err(PipelineError::RunIdNotPlain(run_id));
    }
    if let Some(tasks) = &eval_set.harbor_tasks {
        // Each task's verifier grades it, as a custom grader run in the trial workspace.
        if grading.custom_graders.iter().any(|g| g.name == "verifier") {
            return Err(PipelineError::VerifierNameTaken);
        }
        let exe = std::env::current_exe().map_err(PipelineError::CurrentExe)?;
        grading
            .custom_graders
            .push(crate::record::CustomGraderSpec {
                name: "verifier".to_string(),
                command: format!(
                    "{} harbor-verify --tasks {}",
                    crate::values::shell::shell_quote(&exe.display().to_string()),
                    crate::values::shell::shell_quote(&tasks.display().to_string())
                ),
                timeout_s: eval_set
                    .verifier_timeout_s
                    .unwrap_or(request.grading.grader_timeout_s),
            });
        // The task's reward decides, as in SkillsBench: the process metrics are reported (with
        // their own lifts) but weigh 0 in the composite unless --metric-weight says otherwise.
        for name in [
            crate::record::SECURITY,
            crate::record::SKILL_EXECUTION,
            crate::record::SKILL_EFFICIENCY,
        ] {
            grading.weights.entry(name.to_string()).or_insert(0.0);
        }
    }
    super::grading::validate_expected_outputs(&eval_path, &cases, &grading)?;
    let capabilities = crate::record::RunnerCapabilities::of_profile(&profile.profile);
    // Where skill-lift builds the prompt or tool list, it balances the skills' order; an agent
    // CLI lists the skills folder itself.
    let skill_order = capabilities.skill_delivery.skill_ordering();
    let mut manifest = Manifest {
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
            case_labels: cases
                .iter()
                .filter_map(|c| c.label.clone().map(|label| (c.id.clone(), label)))
                .collect(),
            allow_draft: request.allow_draft,
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
        k: request.k,
        seed: request.seed,
        decoys: DecoysInfo {
            source: decoy_source.recorded_name(),
            skills: decoy_infos,
        },
        trials_planned: cases.len() * arms.len() * request.k as usize,
        arms,
        reference,
        previous: previous.as_ref().map(|(_, info)| info.clone()),
        arm_design: design,
        calibration: None,
        grading,
        regraded_from: None,
        shard: request.shard,
        gates: Some(gates),
        stopping: None,
        trial_keys: None,
        reuse: None,
        skill_order,
        equivalence_margin: previous.is_none().then_some(request.equivalence).flatten(),
        version_policy,
        quality_contract,
    };
    // Every run records its trial keys (a later run may reuse its trials); reuse itself only
    // when asked for.
    manifest.trial_keys = Some(crate::features::reuse::trial_keys(
        &manifest,
        &cases,
        &profile.profile,
        &skill_dir.join("evals").join("files"),
    )?);
    manifest.reuse = reuse_request(request.reuse_baseline.as_ref(), &manifest, state)?;
    Ok(ResolvedRun {
        skill,
        skill_dir,
        cases,
        profile,
        manifest,
        decoy_source,
        calibre,
        judge_profiles,
        previous: previous.map(|(resolved, _)| resolved),
    })
}

/// `manifest.reuse` for `--reuse-baseline [PATH]`: the source (a bare flag: the state
/// folder's trial store) and the arm reused (the reference arm); `None` without the flag.
fn reuse_request(
    from: Option<&ReuseFrom>,
    manifest: &Manifest,
    state: Option<&Path>,
) -> Result<Option<crate::record::ReuseRecord>, PipelineError> {
    let Some(from) = from else {
        return Ok(None);
    };
    let source = match from {
        ReuseFrom::Path(path) => {
            crate::record::ReuseSource::of_path(&absolute(path)).map_err(|error| {
                PipelineError::ReuseSource {
                    path: path.clone(),
                    error,
                }
            })?
        }
        ReuseFrom::Store => crate::record::ReuseSource::Store {
            path: absolute(
                &crate::features::registry::state::state_dir_from_env(state)
                    .map_err(PipelineError::ReuseState)?,
            ),
        },
    };
    Ok(Some(crate::record::ReuseRecord {
        source,
        arms: vec![manifest.reference()],
        reused: 0,
        from_runs: Default::default(),
        not_found: 0,
    }))
}

/// Whether `dir` is what a run killed between creating its folder and writing `manifest.json`
/// left (by skill-lift versions that created the folder first): nothing but an empty
/// `transcripts/` and possibly a `.lock`.
pub(crate) fn is_half_created_run_folder(dir: &Path) -> bool {
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

/// Reload the inputs recorded in a run's manifest and refuse if any of them changed.
pub(crate) fn resolve_resume(run_dir: &Path) -> Result<ResolvedRun, PipelineError> {
    if !run_dir.join("manifest.json").is_file() {
        return Err(PipelineError::NotARunFolder {
            dir: run_dir.to_path_buf(),
            half_created: is_half_created_run_folder(run_dir),
        });
    }
    let manifest = read_manifest(run_dir).map_err(PipelineError::RunFolder)?;
    let changed = |what: &'static str, detail: String| PipelineError::ResumeChanged {
        run_dir: run_dir.to_path_buf(),
        what,
        detail,
    };
    let skill_dir = manifest.asset.path.clone();
    let skill = load_skill(&skill_dir)?;
    let calibre: Calibre = manifest
        .asset
        .calibre
        .parse()
        .map_err(PipelineError::Calibre)?;
    let print = fingerprint(&skill_dir, calibre)?;
    if print.digest != manifest.asset.fingerprint {
        return Err(changed(
            "skill",
            format!(
                "fingerprint {} is now {}",
                manifest.asset.fingerprint, print.digest
            ),
        ));
    }
    let eval_set = load_eval_set(&manifest.eval_set.path, &skill_dir)?;
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
    let profile = load_profile(&manifest.runner.profile_path)?;
    if profile.digest()? != manifest.runner.profile_digest {
        return Err(changed(
            "runner profile",
            manifest.runner.profile_path.display().to_string(),
        ));
    }
    let decoy_source = DecoySource::from_recorded(&manifest.decoys.source);
    let decoys = prepare_decoys(&decoy_source)?;
    let mut now: Vec<DecoyInfo> = Vec::new();
    for decoy in &decoys.skills {
        let print = fingerprint(&decoy.dir, calibre)?;
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
            let source = match &info.git_ref {
                Some(git_ref) => PreviousSource::GitRef(git_ref.clone()),
                None => PreviousSource::Folder(info.path.clone()),
            };
            let (resolved, now) = resolve_previous(&source, &info.path, calibre)?;
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

/// Warns (naming the eval file) when the eval set says it is for another skill than the one
/// being measured: its `skill_name` differs from the skill's frontmatter `name`.
pub(crate) fn warn_on_skill_name_mismatch(eval_path: &Path, declared: Option<&str>, skill: &str) {
    if let Some(name) = declared
        && name != skill
    {
        report(Event::warning_at(
            eval_path,
            format!("skill_name `{name}` differs from the skill's name `{skill}`"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_follow_the_kind_order_and_the_reference_must_exist() {
        let (arms, reference) = planned_arms(
            true,
            &[Exposure::Forced, Exposure::Nudge],
            Some(Arm::PreviousVersion),
            ArmDesign::Paired,
        )
        .unwrap();
        let mut sorted = arms.clone();
        sorted.sort_by_key(|arm| Arm::KINDS.iter().position(|kind| kind == arm));
        assert_eq!(arms, sorted);
        assert!(arms.contains(&Arm::PreviousVersion));
        assert_eq!(reference, Some(Arm::PreviousVersion));
        let missing =
            planned_arms(false, &[], Some(Arm::PreviousVersion), ArmDesign::Paired).unwrap_err();
        assert!(matches!(missing, PipelineError::NoSuchReference { .. }));
        assert!(missing.to_string().contains("--previous DIR"), "{missing}");
        assert_eq!(missing.class(), super::super::ErrorClass::Input);
    }

    #[test]
    fn result_ids_name_the_asset_and_command_and_stay_plain_folder_names() {
        let id = new_result_id("my-skill", Some("vet"));
        let (time, rest) = id.split_once('-').unwrap();
        assert_eq!(time.len(), "20260102T030405Z".len(), "{id}");
        let suffix = rest.strip_prefix("my-skill-vet-").unwrap();
        assert_eq!(suffix.len(), 4, "{id}");
        assert!(suffix.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        let run_id = new_run_id("my-skill");
        let run_suffix = run_id.split_once('-').unwrap().1.strip_prefix("my-skill-");
        assert_eq!(run_suffix.map(str::len), Some(4), "{run_id}");
        assert!(is_plain_folder_name(&id));
        for refused in ["", ".", "..", ".hidden", "a/b", "../up"] {
            assert!(!is_plain_folder_name(refused), "{refused:?}");
        }
    }

    #[test]
    fn a_half_created_folder_is_told_apart_from_a_foreign_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("transcripts")).unwrap();
        assert!(is_half_created_run_folder(dir.path()));
        let error = resolve_resume(dir.path()).err().unwrap();
        assert!(error.to_string().contains("start the run again"), "{error}");
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let error = resolve_resume(dir.path()).err().unwrap();
        assert!(error.to_string().contains("results/"), "{error}");
    }
}
