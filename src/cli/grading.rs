//! Grading flags shared by `run` and `regrade`, and the grading settings they resolve to (the
//! grader set, credentials and judge servers are the run pipeline's: `crate::pipeline::grading`).

use anyhow::anyhow;
use clap::Args;

use super::CommandError;
use crate::grade::DEFAULT_PASS_THRESHOLD;
use crate::grade::custom::{DEFAULT_GRADER_TIMEOUT_S, parse_grader_specs};
use crate::grade::judge::{JudgeMetricKind, RUBRIC_VERSION};
use crate::grade::metric::RESERVED_METRIC_NAMES;
pub use crate::pipeline::grading::judge_info;
use crate::record::{GradingSettings, OutputMatch};
use crate::runner::profile::{load_profile, resolve_profile_path};
use crate::runner::{LoadedProfile, RunnerKind};

/// Judge metrics computed by default.
const DEFAULT_JUDGE_METRICS: &str = "accuracy,goal_accuracy,behavior_check";

/// Grading flags.
#[derive(Debug, Args, Clone)]
pub struct GradingArgs {
    /// LLM judge: a runner profile of kind openai-chat or anthropic-messages (name or .toml
    /// path). Give it twice to report judge agreement; the first decides the scores.
    #[arg(long, value_name = "PROFILE")]
    pub judge: Vec<String>,
    /// Judge repeats per metric per trial (≥ 5 recommended where judge noise matters).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub judge_k: u32,
    /// Judge metrics to compute (comma-separated): accuracy, goal_accuracy, behavior_check.
    #[arg(long, value_name = "LIST", default_value = DEFAULT_JUDGE_METRICS)]
    pub judge_metrics: String,
    /// Re-asks after a malformed judge answer before the trial is unscoreable.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub judge_format_retries: u32,
    /// Do not read or write the judge answer cache.
    #[arg(long)]
    pub no_judge_cache: bool,
    /// Custom grader: `NAME=COMMAND` or `COMMAND` (run with sh -c in the trial's workspace; see
    /// docs/grading.md). Repeatable.
    #[arg(long, value_name = "COMMAND")]
    pub grader: Vec<String>,
    /// Timeout of one custom grader run, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_GRADER_TIMEOUT_S)]
    pub grader_timeout: f64,
    /// Composite score a case without output checks needs to pass.
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_PASS_THRESHOLD, allow_negative_numbers = true)]
    pub pass_threshold: f64,
    /// Weight of a metric in the composite, `NAME=WEIGHT` (default 1; 0 leaves it out). Repeatable.
    #[arg(long, value_name = "NAME=WEIGHT")]
    pub metric_weight: Vec<String>,
    /// How `expected_output` is matched when a case does not say: judge (goal_accuracy only),
    /// exact, contains, regex, numeric.
    #[arg(long, value_name = "MODE", default_value = "judge")]
    pub expected_output_match: OutputMatch,
    /// Which trials the judges grade: `all` (default), or `decisive` — only trials whose
    /// outcome a judge can change, i.e. not in cases whose output checks decide pass or fail
    /// (the judge metrics of those trials are recorded as skipped, and no request is made).
    #[arg(long, value_name = "SCOPE", default_value = "all")]
    pub judge_scope: crate::record::JudgeScope,
}

impl GradingArgs {
    /// Whether any grading flag differs from its default (a resumed run refuses them).
    pub fn any_given(&self) -> bool {
        !self.judge.is_empty()
            || self.judge_k != 1
            || self.judge_metrics != DEFAULT_JUDGE_METRICS
            || !self.grader.is_empty()
            || self.pass_threshold != DEFAULT_PASS_THRESHOLD
            || !self.metric_weight.is_empty()
            || self.expected_output_match != OutputMatch::Judge
            || !self.judge_scope.is_all()
    }
}

/// Grading settings and the judge profiles they name.
pub struct ResolvedGrading {
    pub settings: GradingSettings,
    pub judge_profiles: Vec<LoadedProfile>,
}

/// Resolve the grading flags of a new run (or a regrade).
pub fn resolve_grading(args: &GradingArgs) -> Result<ResolvedGrading, CommandError> {
    let mut settings = GradingSettings::new();
    if !(0.0..=1.0).contains(&args.pass_threshold) {
        return Err(CommandError::input(anyhow!(
            "--pass-threshold must be between 0 and 1"
        )));
    }
    settings.pass_threshold = args.pass_threshold;
    settings.expected_output_match = args.expected_output_match;
    parse_weights(args, &mut settings)?;
    if !args.grader_timeout.is_finite()
        || args.grader_timeout <= 0.0
        || args.grader_timeout > crate::runner::profile::MAX_TIMEOUT_S
    {
        return Err(CommandError::input(anyhow!(
            "--grader-timeout must be a positive number of seconds, at most {}",
            crate::runner::profile::MAX_TIMEOUT_S
        )));
    }
    settings.custom_graders =
        parse_grader_specs(&args.grader, args.grader_timeout).map_err(CommandError::input)?;
    let judge_profiles = load_judges(args, &mut settings)?;
    let mut judge_metrics = Vec::new();
    for name in args.judge_metrics.split(',').map(str::trim) {
        if name.is_empty() {
            continue;
        }
        let kind: JudgeMetricKind = name
            .parse()
            .map_err(|e: String| CommandError::input(anyhow!("--judge-metrics: {e}")))?;
        judge_metrics.push(kind);
    }
    if judge_profiles.is_empty() && args.judge_metrics != DEFAULT_JUDGE_METRICS {
        return Err(CommandError::input(anyhow!(
            "--judge-metrics needs --judge PROFILE (a judge to ask)"
        )));
    }
    if !judge_profiles.is_empty() {
        for kind in judge_metrics {
            let name = kind.name().to_string();
            if !settings.judge_metrics.contains(&name) {
                settings.judge_metrics.push(name);
            }
        }
        if settings.judge_metrics.is_empty() {
            return Err(CommandError::input(anyhow!(
                "--judge-metrics names no metric"
            )));
        }
        settings.judge_k = args.judge_k;
        settings.judge_scope = args.judge_scope;
        settings.rubric_version = Some(RUBRIC_VERSION.to_string());
    }
    for name in settings.weights.keys() {
        let known =
            RESERVED_METRIC_NAMES.contains(&name.as_str()) || !settings.custom_graders.is_empty();
        if !known {
            crate::reporter::report(crate::reporter::Event::warning(format!(
                "--metric-weight names `{name}`, which is not a built-in metric; it applies only if a custom grader returns it"
            )));
        }
    }
    Ok(ResolvedGrading {
        settings,
        judge_profiles,
    })
}

/// `--metric-weight NAME=WEIGHT` into `settings.weights`.
fn parse_weights(args: &GradingArgs, settings: &mut GradingSettings) -> Result<(), CommandError> {
    for value in &args.metric_weight {
        let (name, weight) = value.split_once('=').ok_or_else(|| {
            CommandError::input(anyhow!("--metric-weight `{value}`: write NAME=WEIGHT"))
        })?;
        let weight: f64 = weight
            .trim()
            .parse()
            .ok()
            .filter(|w: &f64| w.is_finite() && *w >= 0.0)
            .ok_or_else(|| {
                CommandError::input(anyhow!(
                    "--metric-weight `{value}`: the weight must be a number ≥ 0"
                ))
            })?;
        settings.weights.insert(name.trim().to_string(), weight);
    }
    Ok(())
}

/// The `--judge` profiles, loaded and checked (each once, each able to judge); their
/// identities go into `settings.judges`.
fn load_judges(
    args: &GradingArgs,
    settings: &mut GradingSettings,
) -> Result<Vec<LoadedProfile>, CommandError> {
    let mut judge_profiles = Vec::new();
    for value in &args.judge {
        let path = resolve_profile_path(value).map_err(CommandError::input)?;
        let profile = load_profile(&path).map_err(CommandError::input)?;
        if !profile.profile.kind.spec().can_judge() {
            return Err(CommandError::input(anyhow!(
                "{}: a judge must be a profile of kind {}, not {}",
                profile.path.display(),
                RunnerKind::ALL
                    .iter()
                    .filter(|kind| kind.spec().can_judge())
                    .map(|kind| kind.name())
                    .collect::<Vec<_>>()
                    .join(" or "),
                profile.profile.kind.name()
            )));
        }
        if judge_profiles
            .iter()
            .any(|p: &LoadedProfile| p.name == profile.name)
        {
            return Err(CommandError::input(anyhow!(
                "--judge `{}` is given twice",
                profile.name
            )));
        }
        settings.judges.push(judge_info(&profile)?);
        judge_profiles.push(profile);
    }
    Ok(judge_profiles)
}
