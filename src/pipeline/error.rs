//! The typed failures of the run pipeline ([`PipelineError`]) and the class each belongs to
//! ([`ErrorClass`]): the command line maps the class to an exit code, the library never does.
//!
//! Messages name the file, flag or run folder involved and what to do next; errors of the
//! modules below (skill, eval set, profile, record) pass through unchanged (`transparent`), so
//! the user reads the same chain whichever command met them.

use std::path::PathBuf;

use crate::record::Arm;

/// Whose fault a failure is: the inputs (exit 2) or the infrastructure (exit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    /// Bad or changed inputs: flags, skill, eval set, profiles, a run folder that cannot be
    /// used, a leak of the target into a baseline.
    Input,
    /// Something failed while running or writing: a server, a pre-flight check, a write to the
    /// run folder, an internal error of the scheduler.
    Infrastructure,
}

/// A failure of the run pipeline (request → prepare → execute → conclude).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PipelineError {
    /// The skill folder (or a decoy's, or the previous version's) cannot be read.
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    /// A skill folder cannot be fingerprinted.
    #[error(transparent)]
    Fingerprint(#[from] crate::features::asset::fingerprint::FingerprintError),
    /// The eval set cannot be read.
    #[error(transparent)]
    EvalSet(#[from] crate::features::evalset::EvalSetError),
    /// A runner or judge profile cannot be found or read.
    #[error(transparent)]
    Profile(#[from] crate::features::runner::profile::ProfileError),
    /// The decoys cannot be prepared.
    #[error(transparent)]
    Decoys(#[from] crate::features::decoys::DecoyError),
    /// `--method` cannot be used with this run's design.
    #[error(transparent)]
    Method(#[from] crate::analysis::MethodError),
    /// The trial keys of a run (for later reuse) cannot be computed.
    #[error(transparent)]
    TrialKeys(#[from] crate::features::reuse::ReuseError),
    /// A calibre name (given, or recorded in a manifest) is unknown.
    #[error(transparent)]
    Calibre(crate::values::unknown_name::UnknownName),
    /// The folder named holds no skill (or several) the layout can choose from.
    #[error(transparent)]
    Layout(#[from] crate::features::evalset::layout::LayoutError),
    /// The grading asked for cannot be resolved.
    #[error(transparent)]
    Grading(#[from] super::grading::GradingError),
    /// `--enforce-version-policy` with versions that give no policy.
    #[error(
        "--enforce-version-policy cannot be honoured: {0}; declare `metadata.version` in both versions' SKILL.md (e.g. 1.4.2), or leave the flag out to report the comparison without a policy"
    )]
    VersionPolicy(crate::analysis::evolution::NoPolicy),
    /// The quality contract (`contract.toml`) cannot be read or is malformed.
    #[error(transparent)]
    Contract(#[from] crate::features::evalset::contract::ContractError),
    /// The eval set file or folder does not exist.
    #[error(
        "{}: eval set not found; put golden cases in <skill>/evals/evals.json or pass --evals FILE (or a Harbor task folder)",
        .0.display()
    )]
    EvalSetNotFound(PathBuf),
    /// A skill's name cannot name a folder.
    #[error(
        "{}: skill name `{}` cannot be used: a skill name names the staged skill folder, so it must be a plain folder name (not empty, `.` or `..`, without `/` or `\\`); set frontmatter `name` to e.g. `my-skill`",
        .skill_md.display(),
        .name.escape_debug()
    )]
    SkillName { skill_md: PathBuf, name: String },
    /// A SKILL.md cannot be read for the leak guard.
    #[error("reading {}", .path.display())]
    ReadSkillMd {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `--previous`, `--exposure` or `--reference` given to an A/A control.
    #[error(
        "an A/A control runs two identical arms: --previous, --previous-ref, --exposure and --reference apply to `skill-lift run`"
    )]
    ArmsOfAnAaControl,
    /// `--reference` names an arm the run does not have.
    #[error(
        "--reference {reference}: the run has no such arm (its arms: {}){}",
        .arms.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", "),
        reference_hint(.reference)
    )]
    NoSuchReference { reference: Arm, arms: Vec<Arm> },
    /// `--previous DIR` holds no SKILL.md.
    #[error("--previous {}: no SKILL.md in this folder", .0.display())]
    PreviousWithoutSkillMd(PathBuf),
    /// `--previous-ref` cannot be extracted.
    #[error(
        "--previous-ref {git_ref}: {detail} (the skill folder {} must be in a git repository that has this revision)",
        .skill_dir.display()
    )]
    PreviousRef {
        git_ref: String,
        detail: String,
        skill_dir: PathBuf,
    },
    /// The previous version is the skill itself.
    #[error(
        "the previous version has the skill's own fingerprint {0}: there is nothing to compare"
    )]
    PreviousIsTheSkill(String),
    /// A case's files would copy the target skill into a workspace.
    #[error("{}: {error}", .eval_path.display())]
    CaseCopiesTarget {
        eval_path: PathBuf,
        error: crate::features::workspace::StagingError,
    },
    /// A decoy has the target's name.
    #[error("decoy `{0}` has the target skill's name; decoys must differ from the target")]
    DecoyNamedAsTarget(String),
    /// The leak guard: a decoy's SKILL.md is a copy of the target's.
    #[error(
        "leak guard: decoy {} is a copy of the target {}: {why}; the baseline would contain the target",
        .decoy.display(),
        .target.display()
    )]
    DecoyCopiesTarget {
        decoy: PathBuf,
        target: PathBuf,
        why: String,
    },
    /// The leak guard: a decoy is the previous version.
    #[error(
        "leak guard: decoy `{name}` has the previous version's fingerprint {fingerprint}; the baseline would contain the skill"
    )]
    DecoyIsPrevious { name: String, fingerprint: String },
    /// The leak guard: a decoy is the target.
    #[error(
        "leak guard: decoy `{name}` has the target's fingerprint {fingerprint}; the baseline would contain the target"
    )]
    DecoyIsTarget { name: String, fingerprint: String },
    /// `--run-id` cannot name a folder.
    #[error("--run-id `{0}` must be a plain folder name")]
    RunIdNotPlain(String),
    /// A custom grader is named like the Harbor tasks' verifier.
    #[error(
        "--grader name `verifier` is taken by the Harbor tasks' verifier; name yours differently"
    )]
    VerifierNameTaken,
    /// The running binary cannot be located (the Harbor verifier runs it).
    #[error("locating the skill-lift binary for the verifier grader")]
    CurrentExe(#[source] std::io::Error),
    /// A case's `expected_output` does not fit its match mode.
    #[error("{}: case `{case}`: expected_output with --expected-output-match {mode}: {message}", .eval_path.display())]
    ExpectedOutput {
        eval_path: PathBuf,
        case: String,
        mode: &'static str,
        message: String,
    },
    /// The judge profile recorded in a run changed.
    #[error(
        "judge profile {} changed since the run started; regrade with --judge to grade with the new one",
        .0.display()
    )]
    JudgeProfileChanged(PathBuf),
    /// A profile's API key variable is not set.
    #[error("{}: the profile reads the API key from `{variable}`, which is not set", .profile.display())]
    ApiKeyMissing { profile: PathBuf, variable: String },
    /// A judge cannot be built from its profile.
    #[error("{}: {message}", .profile.display())]
    Judge { profile: PathBuf, message: String },
    /// `--reuse-baseline PATH` names nothing reusable.
    #[error("--reuse-baseline {}: {error}", .path.display())]
    ReuseSource {
        path: PathBuf,
        error: crate::features::reuse::ReuseError,
    },
    /// `--reuse-baseline` without a path and no state folder.
    #[error("--reuse-baseline: {0}")]
    ReuseState(crate::features::registry::RegistryError),
    /// Reused trials cannot be imported.
    #[error("--reuse-baseline: {0}")]
    ReuseImport(crate::features::reuse::ReuseError),
    /// The stopping flags given to an A/A control.
    #[error(
        "--sequential, --round-cases and the budgets apply to a paired run, not an A/A control"
    )]
    StoppingOfAnAaControl,
    /// `--sequential` with arms besides the classic pair.
    #[error(
        "--sequential decides with_skill against without_skill; it cannot be combined with --previous, --previous-ref, --exposure or --reference (the budgets can)"
    )]
    SequentialArms,
    /// A budget below the first round's projected spend: nothing would run.
    #[error(
        "{0}: the first round does not fit the budget, so nothing would run; raise the budget, or run fewer trials per round (--round-cases, -k)"
    )]
    BudgetBelowFirstRound(String),
    /// `--workspace-root` is not a folder.
    #[error("--workspace-root {}: not a folder", .0.display())]
    WorkspaceRoot(PathBuf),
    /// `--resume` names a folder without a manifest.
    #[error("{}: not a run folder (no manifest.json){}", .dir.display(), run_folder_hint(.half_created))]
    NotARunFolder { dir: PathBuf, half_created: bool },
    /// An input of a resumed run changed since it started.
    #[error(
        "cannot resume {}: the {what} changed since the run started ({detail}); start a new run instead",
        .run_dir.display()
    )]
    ResumeChanged {
        run_dir: PathBuf,
        what: &'static str,
        detail: String,
    },
    /// The run folder to create exists.
    #[error("{}: run folder already exists; pick another --run-id or use --resume", .0.display())]
    RunFolderExists(PathBuf),
    /// The run folder cannot be renamed into place.
    #[error("{}: cannot create the run folder ({error}); pick another --run-id", .dir.display())]
    RunFolderRename { dir: PathBuf, error: std::io::Error },
    /// `--out` names something that is not a folder.
    #[error("--out {}: is a file, not a folder; --out names the folder that receives run folders", .0.display())]
    OutNotAFolder(PathBuf),
    /// A folder the run needs cannot be created (in the results folder the user named).
    #[error("creating {}", .path.display())]
    CreateOut {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A folder inside the run folder cannot be created or removed.
    #[error("{verb} {}", .path.display())]
    RunFolderIo {
        verb: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `regrade` names a shard folder.
    #[error("{}: a shard folder; regrade the merged run (`skill-lift merge`) instead", .0.display())]
    RegradeShard(PathBuf),
    /// The eval set a regrade needs is not where the manifest (or `--evals`) says.
    #[error("{}: the run's eval set is not there any more; pass it with --evals FILE", .0.display())]
    RegradeEvalSetGone(PathBuf),
    /// The eval set changed since the regraded run.
    #[error(
        "{}: the eval set changed since the run ({recorded} is now {now}); regrading would grade against other cases",
        .path.display()
    )]
    RegradeEvalSetChanged {
        path: PathBuf,
        recorded: String,
        now: String,
    },
    /// The regrade's output folder already holds a run.
    #[error("{}: already holds a run; pick another --out", .0.display())]
    RegradeOutExists(PathBuf),
    /// A recorded trial cannot be graded again.
    #[error(transparent)]
    RecordedTrial(#[from] crate::pipeline::execute::RecordedTrialError),
    /// The run folder cannot be used: its lock, manifest or trial log cannot be read.
    #[error(transparent)]
    RunFolder(crate::record::RecordError),
    /// Writing to the run folder failed (manifest, trial log, temporary files).
    #[error(transparent)]
    Record(crate::record::RecordError),
    /// A model server could not be started.
    #[error(transparent)]
    Server(#[from] crate::features::runner::server::ServerError),
    /// The pre-flight check of a runner or judge failed.
    #[error("{0}; nothing was run (skip the check with --no-preflight)")]
    Preflight(crate::features::runner::preflight::PreflightError),
    /// The runner cannot be built from its profile.
    #[error(transparent)]
    BuildRunner(#[from] crate::features::runner::kind::BuildError),
    /// The leak guard found the target where an arm must not have it.
    #[error("{0}")]
    Leak(String),
    /// The scheduler stopped on a record failure or an internal error.
    #[error(transparent)]
    Execute(crate::pipeline::execute::ExecuteError),
    /// The final exports cannot be written.
    #[error("writing exports into {}", .dir.display())]
    Export {
        dir: PathBuf,
        #[source]
        source: crate::record::RecordError,
    },
}

/// What to add for a `--reference` the run does not have.
fn reference_hint(reference: &Arm) -> &'static str {
    if *reference == Arm::PreviousVersion {
        "; add one with --previous DIR or --previous-ref GIT_REF"
    } else {
        ""
    }
}

/// What to do with a folder `--resume` cannot use.
fn run_folder_hint(half_created: &bool) -> &'static str {
    if *half_created {
        "; it is a run folder whose start was interrupted before anything was recorded: start the run again with the same --run-id (the empty folder is replaced)"
    } else {
        "; pass a folder under results/ written by `skill-lift run`"
    }
}

impl PipelineError {
    /// Whose fault the failure is (the command line maps it to an exit code).
    pub(crate) fn class(&self) -> ErrorClass {
        use PipelineError::*;
        match self {
            RunFolderIo { .. }
            | Record(_)
            | Server(_)
            | Preflight(_)
            | BuildRunner(_)
            | Execute(_)
            | Export { .. } => ErrorClass::Infrastructure,
            Skill(_)
            | Fingerprint(_)
            | EvalSet(_)
            | Profile(_)
            | Decoys(_)
            | Method(_)
            | TrialKeys(_)
            | Calibre(_)
            | Layout(_)
            | Grading(_)
            | Contract(_)
            | VersionPolicy(_)
            | EvalSetNotFound(_)
            | SkillName { .. }
            | ReadSkillMd { .. }
            | ArmsOfAnAaControl
            | NoSuchReference { .. }
            | PreviousWithoutSkillMd(_)
            | PreviousRef { .. }
            | PreviousIsTheSkill(_)
            | CaseCopiesTarget { .. }
            | DecoyNamedAsTarget(_)
            | DecoyCopiesTarget { .. }
            | DecoyIsPrevious { .. }
            | DecoyIsTarget { .. }
            | RunIdNotPlain(_)
            | VerifierNameTaken
            | CurrentExe(_)
            | ExpectedOutput { .. }
            | JudgeProfileChanged(_)
            | ApiKeyMissing { .. }
            | Judge { .. }
            | ReuseSource { .. }
            | ReuseState(_)
            | ReuseImport(_)
            | StoppingOfAnAaControl
            | SequentialArms
            | BudgetBelowFirstRound(_)
            | WorkspaceRoot(_)
            | NotARunFolder { .. }
            | ResumeChanged { .. }
            | RunFolderExists(_)
            | RunFolderRename { .. }
            | CreateOut { .. }
            | OutNotAFolder(_)
            | RunFolder(_)
            | RegradeShard(_)
            | RegradeEvalSetGone(_)
            | RegradeEvalSetChanged { .. }
            | RegradeOutExists(_)
            | RecordedTrial(_)
            | Leak(_) => ErrorClass::Input,
        }
    }
}

impl super::Failure for PipelineError {
    /// The class of failure decides: inputs end in an input error, the rest in an
    /// infrastructure error.
    fn ending(&self) -> super::Ending {
        match self.class() {
            ErrorClass::Input => super::Ending::InputError,
            ErrorClass::Infrastructure => super::Ending::InfrastructureError,
        }
    }
}

impl From<crate::pipeline::execute::ExecuteError> for PipelineError {
    /// A leak is the inputs' fault; a failed append or an internal error is not.
    fn from(error: crate::pipeline::execute::ExecuteError) -> Self {
        match error {
            crate::pipeline::execute::ExecuteError::Leak(message) => PipelineError::Leak(message),
            crate::pipeline::execute::ExecuteError::RecordedTrial(error) => {
                PipelineError::RecordedTrial(error)
            }
            other => PipelineError::Execute(other),
        }
    }
}
