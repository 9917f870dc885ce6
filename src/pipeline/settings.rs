//! The validated run request: what one run asks for, in typed values. The command line builds
//! a [`RunSettings`] from its raw flags in one step (`cli::run::run_settings`, as ripgrep
//! turns low-level arguments into high-level settings); everything after it — [`super::prepare`]
//! (which locates the skill and resolves the grading), [`super::execute_run`],
//! [`super::conclude`] — reads these settings, never the flags.

use std::path::PathBuf;
use std::time::Duration;

use super::grading::GradingRequest;
use crate::analysis::AnalysisSettings;
use crate::features::asset::fingerprint::Calibre;
use crate::features::decoys::DecoySource;
use crate::features::workspace::Exposure;
use crate::record::{Arm, Budgets, FailOn, LiftMethod, RecordedGates, SequentialSettings};
use crate::report::progress::{ProgressDisplay, ProgressMode};

/// One run's request: how it starts (fresh or resumed), how it executes, how it is analyzed
/// and when it stops.
#[derive(Clone)]
pub(crate) struct RunSettings {
    /// A fresh run's inputs, or the run folder to resume.
    pub start: RunStart,
    /// How the trials execute (same for a fresh and a resumed run).
    pub execution: ExecutionSettings,
    /// Gates and interval settings given now (a resumed run keeps its recorded ones for any
    /// flag not given again).
    pub analysis: AnalysisOverrides,
    /// Round scheduling, sequential stopping and budgets.
    pub stopping: StoppingRequest,
}

/// How a run starts.
#[derive(Clone)]
pub(crate) enum RunStart {
    /// A new run folder from these inputs.
    Fresh(Box<FreshRun>),
    /// Continue the run recorded in this folder (its manifest holds the inputs).
    Resume(PathBuf),
}

impl RunStart {
    /// Whether the run continues a recorded one.
    pub(crate) fn is_resume(&self) -> bool {
        matches!(self, RunStart::Resume(_))
    }
}

/// The inputs of a fresh run, as asked for: [`super::resolve_fresh`] locates the skill in
/// `target` and resolves the grading.
#[derive(Clone)]
pub(crate) struct FreshRun {
    /// The folder named: a skill folder (holds SKILL.md), or a folder the eval-set layout
    /// chooses the skill and eval set in (`crate::features::evalset::layout`).
    pub target: PathBuf,
    /// The eval set (default: the layout's, else `<skill>/evals/evals.json`).
    pub evals: Option<PathBuf>,
    /// The runner profile: a name from a runners folder or a `.toml` path.
    pub runner: String,
    /// The model, overriding the profile's.
    pub model: Option<String>,
    /// Attempts per case per arm, ≥ 1.
    pub k: u32,
    /// The run id (default: time, asset and a random suffix).
    pub run_id: Option<String>,
    /// Seed of the bootstrap and of any seeded sampling.
    pub seed: u64,
    /// Include draft cases.
    pub allow_draft: bool,
    /// Where the decoys come from (a folder is absolute).
    pub decoys: DecoySource,
    /// The fingerprint calibre.
    pub calibre: Calibre,
    /// The grading asked for (its grader timeout is also the Harbor verifier's default).
    pub grading: GradingRequest,
    /// The previous version for a `previous_version` arm.
    pub previous: Option<PreviousSource>,
    /// `--equivalence`: the version policy's margin (with a previous version; default
    /// `crate::analysis::evolution::DEFAULT_MARGIN`).
    pub equivalence: Option<f64>,
    /// Exposure arms besides the native one.
    pub exposure: Vec<Exposure>,
    /// The arm the others are compared against (default `without_skill`).
    pub reference: Option<Arm>,
    /// Take the reference arm's trials from earlier runs.
    pub reuse_baseline: Option<ReuseFrom>,
    /// Run only one shard of the trials.
    pub shard: Option<crate::record::Shard>,
}

/// Where the previous version of the skill comes from.
#[derive(Debug, Clone)]
pub(crate) enum PreviousSource {
    /// A folder holding it (`--previous DIR`).
    Folder(PathBuf),
    /// The skill folder as it was at a git revision (`--previous-ref GIT_REF`).
    GitRef(String),
}

/// Where `--reuse-baseline` looks for trials.
#[derive(Debug, Clone)]
pub(crate) enum ReuseFrom {
    /// The state folder's trial store (a bare `--reuse-baseline`).
    Store,
    /// A run folder, matrix folder or state folder.
    Path(PathBuf),
}

/// How the trials of a run execute.
#[derive(Debug, Clone)]
pub(crate) struct ExecutionSettings {
    /// Trials in flight at once (default: the profile's `concurrency`).
    pub jobs: Option<usize>,
    /// Keep each trial's workspace folder.
    pub keep_workspaces: bool,
    /// Folder for trial workspaces (default: the system temporary folder).
    pub workspace_root: Option<PathBuf>,
    /// When progress is shown.
    pub progress: ProgressMode,
    /// Time between two progress status lines.
    pub progress_interval: Duration,
    /// Trials in a row failing for infrastructure reasons that stop the run; 0: never.
    pub breaker: usize,
    /// Check the runner and judges answer before any trial.
    pub preflight: bool,
    /// With a resume: run the trials recorded unscoreable for an infrastructure cause again.
    pub retry_unscoreable: bool,
    /// The state folder (`--state`; default `$SKILL_LIFT_HOME`, else `~/.skill-lift`).
    pub state: Option<PathBuf>,
    /// Re-asks after a malformed judge answer.
    pub judge_format_retries: u32,
    /// Read and write the judge answer cache.
    pub judge_cache: bool,
}

impl ExecutionSettings {
    /// The progress display these settings choose on this terminal (`quiet` for a caller that
    /// prints its own summary).
    pub(crate) fn progress_display(&self, quiet: bool) -> ProgressDisplay {
        ProgressDisplay::choose(
            self.progress,
            quiet,
            ProgressDisplay::stderr_is_interactive(),
            self.progress_interval,
        )
    }
}

/// Analysis and gate settings given for this invocation; `None` (and an empty `fail_on`) is
/// "not given": a recorded run's own value applies, else the default.
#[derive(Debug, Clone)]
pub struct AnalysisOverrides {
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Lift interval method.
    pub method: Option<LiftMethod>,
    /// Gate: the lift interval's lower bound must exceed this fraction.
    pub min_lift: Option<f64>,
    /// Gate: verdicts that fail the run.
    pub fail_on: Vec<FailOn>,
    /// Largest tolerated fraction of unscoreable trials.
    pub max_unscoreable: Option<f64>,
    /// Gate: P95 trial wall time of `with_skill` over the reference arm's.
    pub max_latency_ratio: Option<f64>,
    /// Gate: tokens per trial of `with_skill` over the reference arm's.
    pub max_token_ratio: Option<f64>,
    /// Gate: the evolution contract (`--enforce-version-policy`).
    pub enforce_version_policy: bool,
}

impl AnalysisOverrides {
    /// Analysis settings with `seed`: each setting given wins, else the run's `recorded` gates
    /// (its manifest), else the default. `report` and `--resume` keep a run's gates this way.
    pub fn settings_over(&self, seed: u64, recorded: Option<&RecordedGates>) -> AnalysisSettings {
        let fail_on = match recorded {
            Some(gates) if self.fail_on.is_empty() => gates.fail_on.clone(),
            _ => self.fail_on.clone(),
        };
        AnalysisSettings {
            resamples: self.resamples,
            seed,
            method: self.method.or(recorded.and_then(|gates| gates.method)),
            gate: crate::analysis::GateSettings {
                min_lift: self.min_lift.or(recorded.and_then(|gates| gates.min_lift)),
                fail_on,
                max_latency_ratio: self
                    .max_latency_ratio
                    .or(recorded.and_then(|gates| gates.max_latency_ratio)),
                max_token_ratio: self
                    .max_token_ratio
                    .or(recorded.and_then(|gates| gates.max_token_ratio)),
                enforce_version_policy: self.enforce_version_policy
                    || recorded.is_some_and(|gates| gates.enforce_version_policy),
            },
            max_unscoreable: self
                .max_unscoreable
                .or(recorded.map(|gates| gates.max_unscoreable))
                .unwrap_or(crate::analysis::DEFAULT_MAX_UNSCOREABLE),
        }
    }

    /// The gates to record in a new run's manifest.
    pub fn recorded_gates(&self) -> RecordedGates {
        RecordedGates {
            min_lift: self.min_lift,
            fail_on: self.fail_on.clone(),
            max_unscoreable: self
                .max_unscoreable
                .unwrap_or(crate::analysis::DEFAULT_MAX_UNSCOREABLE),
            method: self.method,
            max_latency_ratio: self.max_latency_ratio,
            max_token_ratio: self.max_token_ratio,
            enforce_version_policy: self.enforce_version_policy,
        }
    }
}

/// Round scheduling, anytime-valid stopping and budgets asked for (`crate::pipeline::sequential`).
#[derive(Debug, Clone, Default)]
pub struct StoppingRequest {
    /// Stop early with an anytime-valid decision.
    pub sequential: Option<SequentialSettings>,
    /// Cases per round.
    pub round_cases: Option<usize>,
    /// Spending limits.
    pub budgets: Budgets,
}

impl StoppingRequest {
    /// Whether anything was asked for.
    pub fn any_given(&self) -> bool {
        self.sequential.is_some() || self.round_cases.is_some() || self.budgets.any()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides() -> AnalysisOverrides {
        AnalysisOverrides {
            resamples: 1000,
            method: None,
            min_lift: None,
            fail_on: Vec::new(),
            max_unscoreable: None,
            max_latency_ratio: None,
            max_token_ratio: None,
            enforce_version_policy: false,
        }
    }

    #[test]
    fn a_given_setting_wins_over_the_recorded_one_and_the_recorded_over_the_default() {
        let recorded = RecordedGates {
            min_lift: Some(0.1),
            fail_on: vec![FailOn::Regressed],
            max_unscoreable: 0.3,
            method: None,
            max_latency_ratio: Some(1.5),
            max_token_ratio: None,
            enforce_version_policy: false,
        };
        let mut given = overrides();
        given.min_lift = Some(0.2);
        let settings = given.settings_over(7, Some(&recorded));
        assert_eq!(settings.seed, 7);
        assert_eq!(settings.gate.min_lift, Some(0.2));
        assert_eq!(settings.gate.fail_on, vec![FailOn::Regressed]);
        assert_eq!(settings.max_unscoreable, 0.3);
        assert_eq!(settings.gate.max_latency_ratio, Some(1.5));
        let fresh = overrides().settings_over(7, None);
        assert_eq!(
            fresh.max_unscoreable,
            crate::analysis::DEFAULT_MAX_UNSCOREABLE
        );
        assert_eq!(overrides().recorded_gates().min_lift, None);
    }
}
