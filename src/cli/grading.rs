//! Grading flags shared by `run` and `regrade`, and building the grader set they describe.

use std::path::Path;
use std::sync::Arc;

use anyhow::anyhow;
use clap::Args;

use super::CommandError;
use crate::grade::checks::OutputMatch;
use crate::grade::custom::{DEFAULT_GRADER_TIMEOUT_S, parse_grader_specs};
use crate::grade::judge::{Judge, JudgeMetricKind, JudgeSettings, RUBRIC_VERSION};
use crate::grade::metric::RESERVED_METRIC_NAMES;
use crate::grade::pipeline::{GraderSet, TrialJudge};
use crate::grade::{DEFAULT_PASS_THRESHOLD, GradingSettings, JudgeInfo};
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
    pub judge_scope: crate::grade::JudgeScope,
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

fn judge_info(profile: &LoadedProfile) -> Result<JudgeInfo, CommandError> {
    let digest = profile.digest().map_err(CommandError::input)?;
    Ok(JudgeInfo {
        name: profile.name.clone(),
        kind: profile.profile.kind.name().to_string(),
        model: profile.profile.model.clone(),
        base_url: profile.profile.base_url.clone(),
        profile_path: profile.recorded_path(),
        profile_digest: digest,
    })
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
    let mut judge_profiles = Vec::new();
    for value in &args.judge {
        let path = resolve_profile_path(value).map_err(CommandError::input)?;
        let profile = load_profile(&path).map_err(CommandError::input)?;
        if !matches!(
            profile.profile.kind,
            RunnerKind::OpenaiChat | RunnerKind::AnthropicMessages
        ) {
            return Err(CommandError::input(anyhow!(
                "{}: a judge must be a profile of kind openai-chat or anthropic-messages, not {}",
                profile.path.display(),
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
            eprintln!(
                "warning: --metric-weight names `{name}`, which is not a built-in metric; it applies only if a custom grader returns it"
            );
        }
    }
    Ok(ResolvedGrading {
        settings,
        judge_profiles,
    })
}

/// Check every case's `expected_output` against the mode it will be matched with (the case's
/// `expected_output_match`, else `--expected-output-match`): a regular expression must compile
/// and a numeric mode needs a number. Errors name the eval file and the case.
pub fn validate_expected_outputs(
    eval_path: &Path,
    cases: &[crate::evalset::GoldenCase],
    settings: &GradingSettings,
) -> Result<(), CommandError> {
    for case in cases {
        let mode = case
            .expected_output_match
            .unwrap_or(settings.expected_output_match);
        if let Some(expected) = &case.expected_output
            && let Err(message) = crate::grade::checks::validate_expected_output(mode, expected)
        {
            return Err(CommandError::input(anyhow!(
                "{}: case `{}`: expected_output with --expected-output-match {}: {message}",
                eval_path.display(),
                case.id,
                mode.as_str()
            )));
        }
    }
    Ok(())
}

/// Whether anything can decide pass or fail: a case with output checks (its own `checks`, or a
/// deterministic `expected_output` match), a judge, or a custom grader.
pub fn anything_to_grade_by(
    cases: &[crate::evalset::GoldenCase],
    settings: &GradingSettings,
) -> bool {
    !settings.judges.is_empty()
        || !settings.custom_graders.is_empty()
        || cases.iter().any(|case| {
            !case.checks.is_empty()
                || (case.expected_output.is_some()
                    && case
                        .expected_output_match
                        .unwrap_or(settings.expected_output_match)
                        .is_deterministic())
        })
}

/// Reload the judge profiles recorded in `settings` (resume, regrade without new flags) and
/// refuse a profile that changed.
pub fn recorded_judge_profiles(
    settings: &GradingSettings,
) -> Result<Vec<LoadedProfile>, CommandError> {
    let mut profiles = Vec::new();
    for info in &settings.judges {
        let profile = load_profile(&info.profile_path).map_err(CommandError::input)?;
        let now = judge_info(&profile)?;
        if now.profile_digest != info.profile_digest {
            return Err(CommandError::input(anyhow!(
                "judge profile {} changed since the run started; regrade with --judge to grade with the new one",
                info.profile_path.display()
            )));
        }
        profiles.push(profile);
    }
    Ok(profiles)
}

/// The API key a profile names, from the environment.
pub fn profile_api_key(profile: &LoadedProfile) -> Result<Option<String>, CommandError> {
    match &profile.profile.api_key_env {
        Some(variable) => match std::env::var(variable) {
            Ok(value) if !value.is_empty() => Ok(Some(value)),
            _ => Err(CommandError::input(anyhow!(
                "{}: the profile reads the API key from `{variable}`, which is not set",
                profile.path.display()
            ))),
        },
        None => Ok(None),
    }
}

/// The credentials the runner passes to the agent (`api_key_env`, `pass_env`), with their
/// values, for the secret scan of the `security` metric.
pub fn runner_secrets(runner: &LoadedProfile) -> Vec<(String, String)> {
    runner
        .profile
        .api_key_env
        .iter()
        .chain(runner.profile.pass_env.iter())
        .filter_map(|name| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.is_empty())
                .map(|value| (name.clone(), value))
        })
        .collect()
}

/// Build the grader set: the judges from their profiles, the cache under the state folder.
pub fn build_grader_set(
    settings: GradingSettings,
    judge_profiles: &[LoadedProfile],
    secrets: Vec<(String, String)>,
    format_retries: u32,
    use_cache: bool,
    state_flag: Option<&Path>,
) -> Result<GraderSet, CommandError> {
    let cache_dir = if use_cache && !judge_profiles.is_empty() {
        crate::registry::state::state_dir_from_env(state_flag)
            .ok()
            .map(|state| state.join("judge-cache"))
    } else {
        None
    };
    let mut judges: Vec<Arc<dyn TrialJudge>> = Vec::new();
    for (profile, info) in judge_profiles.iter().zip(&settings.judges) {
        let api_key = profile_api_key(profile)?;
        let judge = Judge::new(
            profile,
            api_key,
            JudgeSettings {
                k: settings.judge_k,
                max_format_retries: format_retries,
                max_trajectory_chars: crate::grade::judge::DEFAULT_MAX_TRAJECTORY_CHARS,
                cache_dir: cache_dir.clone(),
                timeout: std::time::Duration::from_secs_f64(profile.profile.timeout_s),
            },
        )
        .map_err(|e| CommandError::input(anyhow!("{}: {e}", profile.path.display())))?;
        judges.push(Arc::new(crate::grade::judge::RecordedJudge::new(
            judge,
            info.clone(),
            profile.profile.concurrency,
        )));
    }
    Ok(GraderSet::new(settings, judges, secrets))
}

/// Start the model servers of judge profiles that have a `[server]` section and are not
/// answering yet (`log_dir/judge-server-<name>.log`); the caller stops them when grading ends.
pub async fn ensure_judge_servers(
    profiles: &[LoadedProfile],
    log_dir: &Path,
) -> Result<Vec<crate::runner::server::ManagedServer>, CommandError> {
    let mut servers = Vec::new();
    for profile in profiles {
        let Some(config) = &profile.profile.server else {
            continue;
        };
        let profile_dir = profile.profile_dir();
        let log = log_dir.join(format!("judge-server-{}.log", profile.name));
        let started = crate::runner::server::ManagedServer::ensure(
            config,
            profile_dir.as_deref(),
            &profile.profile.base_url,
            &log,
        )
        .await
        .map_err(CommandError::infrastructure)?;
        if let Some(server) = started {
            eprintln!(
                "skill-lift: started the judge's model server ({})",
                config.command.join(" ")
            );
            servers.push(server);
        }
    }
    Ok(servers)
}
