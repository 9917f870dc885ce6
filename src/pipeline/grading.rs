//! Grading inputs of a run (or a regrade): the grading asked for ([`GradingRequest`]) resolved
//! into settings with its judge profiles loaded ([`resolve_grading`]), the checks of the grading
//! settings against the eval set, the judge profiles a run recorded, credentials, the grader
//! set, and the judges' model servers. The flags that describe grading are `cli`'s; this is
//! what they resolve to.

use std::path::Path;
use std::sync::Arc;

use super::PipelineError;
use crate::features::evalset::GoldenCase;
use crate::features::grade::DEFAULT_PASS_THRESHOLD;
use crate::features::grade::custom::{GraderSpecError, parse_grader_specs};
use crate::features::grade::judge::{Judge, JudgeMetricKind, JudgeSettings, RUBRIC_VERSION};
use crate::features::grade::metric::RESERVED_METRIC_NAMES;
use crate::features::grade::pipeline::{GraderSet, TrialJudge};
use crate::features::runner::profile::{MAX_TIMEOUT_S, load_profile, resolve_profile_path};
use crate::features::runner::{LoadedProfile, RunnerKind};
use crate::record::{GradingSettings, JudgeInfo, JudgeScope, OutputMatch};

/// Judge metrics computed by default.
pub(crate) const DEFAULT_JUDGE_METRICS: &str = "accuracy,goal_accuracy,behavior_check";

/// The grading a new run (or a regrade) asks for, as given: judge profiles by name, metric
/// names and weights as written. [`resolve_grading`] checks it and loads the judges.
#[derive(Debug, Clone)]
pub struct GradingRequest {
    /// Judge profiles (names or `.toml` paths); the first decides the scores.
    pub judges: Vec<String>,
    /// Judge repeats per metric per trial.
    pub judge_k: u32,
    /// Judge metrics to compute, comma-separated.
    pub judge_metrics: String,
    /// Custom graders, `NAME=COMMAND` or `COMMAND`.
    pub graders: Vec<String>,
    /// Timeout of one custom grader run, seconds.
    pub grader_timeout_s: f64,
    /// Composite score a case without output checks needs to pass.
    pub pass_threshold: f64,
    /// Metric weights, `NAME=WEIGHT`.
    pub metric_weights: Vec<String>,
    /// How `expected_output` is matched when a case does not say.
    pub expected_output_match: OutputMatch,
    /// Which trials the judges grade.
    pub judge_scope: JudgeScope,
    /// The user's `USER.md` for the `style` metric (`--style-reference FILE`); `None`: the
    /// default lookup.
    pub style_reference: Option<std::path::PathBuf>,
}

impl GradingRequest {
    /// Whether anything differs from the default grading (a resumed run refuses it).
    pub fn any_given(&self) -> bool {
        !self.judges.is_empty()
            || self.judge_k != 1
            || self.judge_metrics != DEFAULT_JUDGE_METRICS
            || !self.graders.is_empty()
            || self.pass_threshold != DEFAULT_PASS_THRESHOLD
            || !self.metric_weights.is_empty()
            || self.expected_output_match != OutputMatch::Judge
            || !self.judge_scope.is_all()
            || self.style_reference.is_some()
    }
}

/// Why a [`GradingRequest`] cannot be resolved (an input error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum GradingError {
    /// The pass threshold is not a fraction.
    #[error("--pass-threshold must be between 0 and 1")]
    PassThreshold,
    /// The grader timeout is not a positive number of seconds within the limit.
    #[error(
        "--grader-timeout must be a positive number of seconds, at most {}",
        MAX_TIMEOUT_S
    )]
    GraderTimeout,
    /// A custom grader cannot be read.
    #[error(transparent)]
    GraderSpec(#[from] GraderSpecError),
    /// A metric weight is not `NAME=WEIGHT`.
    #[error("--metric-weight `{0}`: write NAME=WEIGHT")]
    WeightSyntax(String),
    /// A metric weight is not a number ≥ 0.
    #[error("--metric-weight `{0}`: the weight must be a number ≥ 0")]
    WeightValue(String),
    /// A judge profile's kind cannot judge.
    #[error(
        "{}: a judge must be a profile of kind {}, not {kind}",
        .path.display(),
        RunnerKind::ALL
            .iter()
            .filter(|kind| kind.spec().can_judge())
            .map(|kind| kind.name())
            .collect::<Vec<_>>()
            .join(" or ")
    )]
    NotAJudge {
        /// The profile.
        path: std::path::PathBuf,
        /// Its kind.
        kind: &'static str,
    },
    /// The same judge is named twice.
    #[error("--judge `{0}` is given twice")]
    JudgeTwice(String),
    /// A judge metric name is unknown.
    #[error("--judge-metrics: {0}")]
    UnknownMetric(crate::values::unknown_name::UnknownName),
    /// Judge metrics without a judge.
    #[error("--judge-metrics needs --judge PROFILE (a judge to ask)")]
    MetricsWithoutJudge,
    /// The judge metrics name nothing.
    #[error("--judge-metrics names no metric")]
    NoMetric,
    /// `--style-reference` without the `style` metric.
    #[error(
        "--style-reference is the reference of the style metric: add `style` to --judge-metrics (e.g. --judge-metrics accuracy,style)"
    )]
    StyleReferenceWithoutStyle,
    /// A weight for `style`, which never counts toward a score.
    #[error(
        "--metric-weight `{0}`: style is reported beside the other metrics and breaks ties in compare; it never counts toward the composite or a pass, so it takes no weight"
    )]
    StyleWeight(String),
    /// A custom grader named `style` beside the judge's style metric.
    #[error(
        "a custom grader is named `style`, and --judge-metrics asks for the judge's style metric: rename the grader (NAME=COMMAND)"
    )]
    StyleGraderName,
    /// The style reference cannot be built.
    #[error(transparent)]
    StyleReference(#[from] crate::features::grade::style_reference::StyleReferenceError),
    /// The style reference differs from the one the run recorded (resume, regrade).
    #[error(
        "the style reference changed since the run was recorded (USER.md or the session history): recorded {recorded}, now {now}; regrade with --judge-metrics to grade against today's reference"
    )]
    StyleReferenceChanged {
        /// The recorded `reference_sha256`.
        recorded: String,
        /// Today's.
        now: String,
    },
}

/// Grading settings and the judge profiles they name.
pub(crate) struct ResolvedGrading {
    /// The grading settings a manifest records.
    pub settings: GradingSettings,
    /// The judge profiles of `settings.judges`, in order.
    pub judge_profiles: Vec<LoadedProfile>,
}

/// Resolve the grading of a new run (or a regrade): check the threshold, weights and grader
/// timeout, read the custom graders, load the judges and pick their metrics. A weight naming no
/// built-in metric is a warning (a custom grader may return it).
pub(crate) fn resolve_grading(request: &GradingRequest) -> Result<ResolvedGrading, PipelineError> {
    let mut settings = GradingSettings::new();
    if !(0.0..=1.0).contains(&request.pass_threshold) {
        return Err(GradingError::PassThreshold.into());
    }
    settings.pass_threshold = request.pass_threshold;
    settings.expected_output_match = request.expected_output_match;
    parse_weights(request, &mut settings)?;
    let timeout = request.grader_timeout_s;
    if !timeout.is_finite() || timeout <= 0.0 || timeout > MAX_TIMEOUT_S {
        return Err(GradingError::GraderTimeout.into());
    }
    settings.custom_graders =
        parse_grader_specs(&request.graders, timeout).map_err(GradingError::from)?;
    let judge_profiles = load_judges(request, &mut settings)?;
    choose_judge_metrics(request, &judge_profiles, &mut settings)?;
    choose_style_reference(request, &mut settings)?;
    for name in settings.weights.keys() {
        let known =
            RESERVED_METRIC_NAMES.contains(&name.as_str()) || !settings.custom_graders.is_empty();
        if !known {
            crate::values::reporter::report(crate::values::reporter::Event::warning(format!(
                "--metric-weight names `{name}`, which is not a built-in metric; it applies only if a custom grader returns it"
            )));
        }
    }
    Ok(ResolvedGrading {
        settings,
        judge_profiles,
    })
}

/// The judge metrics, repeats, scope and rubric of `settings` when there are judges; metrics
/// other than the default without a judge are refused.
fn choose_judge_metrics(
    request: &GradingRequest,
    judge_profiles: &[LoadedProfile],
    settings: &mut GradingSettings,
) -> Result<(), GradingError> {
    let mut judge_metrics = Vec::new();
    for name in request.judge_metrics.split(',').map(str::trim) {
        if name.is_empty() {
            continue;
        }
        let kind: JudgeMetricKind = name.parse().map_err(GradingError::UnknownMetric)?;
        judge_metrics.push(kind);
    }
    if judge_profiles.is_empty() && request.judge_metrics != DEFAULT_JUDGE_METRICS {
        return Err(GradingError::MetricsWithoutJudge);
    }
    if !judge_profiles.is_empty() {
        for kind in judge_metrics {
            let name = kind.name().to_string();
            if !settings.judge_metrics.contains(&name) {
                settings.judge_metrics.push(name);
            }
        }
        if settings.judge_metrics.is_empty() {
            return Err(GradingError::NoMetric);
        }
        settings.judge_k = request.judge_k;
        settings.judge_scope = request.judge_scope;
        settings.rubric_version = Some(RUBRIC_VERSION.to_string());
    }
    Ok(())
}

/// With the `style` metric, build its reference (before any trial runs: none found is an
/// input error) and record what it was made of; `--style-reference` without it is refused.
fn choose_style_reference(
    request: &GradingRequest,
    settings: &mut GradingSettings,
) -> Result<(), GradingError> {
    let style = settings
        .judge_metrics
        .iter()
        .any(|m| m == crate::record::STYLE);
    if !style {
        return match request.style_reference {
            Some(_) => Err(GradingError::StyleReferenceWithoutStyle),
            None => Ok(()),
        };
    }
    if let Some(weight) = request.metric_weights.iter().find(|w| {
        w.split_once('=')
            .is_some_and(|(name, _)| name.trim() == crate::record::STYLE)
    }) {
        return Err(GradingError::StyleWeight(weight.clone()));
    }
    if settings
        .custom_graders
        .iter()
        .any(|g| g.name == crate::record::STYLE)
    {
        return Err(GradingError::StyleGraderName);
    }
    let reference = crate::features::grade::style_reference::build_style_reference(
        request.style_reference.as_deref(),
        None,
    )?;
    settings.style_reference = Some(reference.info);
    Ok(())
}

/// The style reference text of `settings` (built again from what it records), checked to be
/// the one recorded; `None` without the `style` metric.
fn style_reference_text(settings: &GradingSettings) -> Result<Option<String>, GradingError> {
    let style = settings
        .judge_metrics
        .iter()
        .any(|m| m == crate::record::STYLE);
    let Some(recorded) = settings.style_reference.as_ref().filter(|_| style) else {
        return Ok(None);
    };
    let now = crate::features::grade::style_reference::rebuild_style_reference(recorded)?;
    if now.info.reference_sha256 != recorded.reference_sha256 {
        return Err(GradingError::StyleReferenceChanged {
            recorded: recorded.reference_sha256.clone(),
            now: now.info.reference_sha256,
        });
    }
    Ok(Some(now.text))
}

/// `NAME=WEIGHT` metric weights into `settings.weights`.
fn parse_weights(
    request: &GradingRequest,
    settings: &mut GradingSettings,
) -> Result<(), GradingError> {
    for value in &request.metric_weights {
        let (name, weight) = value
            .split_once('=')
            .ok_or_else(|| GradingError::WeightSyntax(value.clone()))?;
        let weight: f64 = weight
            .trim()
            .parse()
            .ok()
            .filter(|w: &f64| w.is_finite() && *w >= 0.0)
            .ok_or_else(|| GradingError::WeightValue(value.clone()))?;
        settings.weights.insert(name.trim().to_string(), weight);
    }
    Ok(())
}

/// The judge profiles, loaded and checked (each once, each able to judge); their identities go
/// into `settings.judges`.
fn load_judges(
    request: &GradingRequest,
    settings: &mut GradingSettings,
) -> Result<Vec<LoadedProfile>, PipelineError> {
    let mut judge_profiles: Vec<LoadedProfile> = Vec::new();
    for value in &request.judges {
        let profile = load_profile(&resolve_profile_path(value)?)?;
        if !profile.profile.kind.spec().can_judge() {
            return Err(GradingError::NotAJudge {
                path: profile.path.clone(),
                kind: profile.profile.kind.name(),
            }
            .into());
        }
        if judge_profiles.iter().any(|p| p.name == profile.name) {
            return Err(GradingError::JudgeTwice(profile.name.clone()).into());
        }
        settings.judges.push(judge_info(&profile)?);
        judge_profiles.push(profile);
    }
    Ok(judge_profiles)
}

/// What the manifest records about a judge profile (its digest checks it on resume).
pub(crate) fn judge_info(profile: &LoadedProfile) -> Result<JudgeInfo, PipelineError> {
    let digest = profile.digest()?;
    Ok(JudgeInfo {
        name: profile.name.clone(),
        kind: profile.profile.kind.name().to_string(),
        model: profile.profile.model.clone(),
        base_url: profile.profile.base_url.clone(),
        profile_path: profile.recorded_path(),
        profile_digest: digest,
    })
}

/// Check every case's `expected_output` against the mode it will be matched with (the case's
/// `expected_output_match`, else `--expected-output-match`): a regular expression must compile
/// and a numeric mode needs a number. Errors name the eval file and the case.
pub(crate) fn validate_expected_outputs(
    eval_path: &Path,
    cases: &[GoldenCase],
    settings: &GradingSettings,
) -> Result<(), PipelineError> {
    for case in cases {
        let mode = case
            .expected_output_match
            .unwrap_or(settings.expected_output_match);
        if let Some(expected) = &case.expected_output
            && let Err(message) =
                crate::features::grade::checks::validate_expected_output(mode, expected)
        {
            return Err(PipelineError::ExpectedOutput {
                eval_path: eval_path.to_path_buf(),
                case: case.id.clone(),
                mode: mode.as_str(),
                message: message.to_string(),
            });
        }
    }
    Ok(())
}

/// Whether anything can decide pass or fail: a case with output checks (its own `checks`, or a
/// deterministic `expected_output` match), a judge, or a custom grader.
pub(crate) fn anything_to_grade_by(cases: &[GoldenCase], settings: &GradingSettings) -> bool {
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
pub(crate) fn recorded_judge_profiles(
    settings: &GradingSettings,
) -> Result<Vec<LoadedProfile>, PipelineError> {
    let mut profiles = Vec::new();
    for info in &settings.judges {
        let profile = load_profile(&info.profile_path)?;
        let now = judge_info(&profile)?;
        if now.profile_digest != info.profile_digest {
            return Err(PipelineError::JudgeProfileChanged(
                info.profile_path.clone(),
            ));
        }
        profiles.push(profile);
    }
    Ok(profiles)
}

/// The API key a profile names, from the environment.
pub(crate) fn profile_api_key(profile: &LoadedProfile) -> Result<Option<String>, PipelineError> {
    match &profile.profile.api_key_env {
        Some(variable) => match std::env::var(variable) {
            Ok(value) if !value.is_empty() => Ok(Some(value)),
            _ => Err(PipelineError::ApiKeyMissing {
                profile: profile.path.clone(),
                variable: variable.clone(),
            }),
        },
        None => Ok(None),
    }
}

/// The credentials the runner passes to the agent (`api_key_env`, `pass_env`), with their
/// values, for the secret scan of the `security` metric.
pub(crate) fn runner_secrets(runner: &LoadedProfile) -> Vec<(String, String)> {
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
pub(crate) fn build_grader_set(
    settings: GradingSettings,
    judge_profiles: &[LoadedProfile],
    secrets: Vec<(String, String)>,
    format_retries: u32,
    use_cache: bool,
    state_flag: Option<&Path>,
) -> Result<GraderSet, PipelineError> {
    let cache_dir = if use_cache && !judge_profiles.is_empty() {
        crate::features::registry::state::state_dir_from_env(state_flag)
            .ok()
            .map(|state| state.join("judge-cache"))
    } else {
        None
    };
    let style_reference = style_reference_text(&settings)?;
    let mut judges: Vec<Arc<dyn TrialJudge>> = Vec::new();
    for (profile, info) in judge_profiles.iter().zip(&settings.judges) {
        let api_key = profile_api_key(profile)?;
        let judge = Judge::new(
            profile,
            api_key,
            JudgeSettings {
                k: settings.judge_k,
                max_format_retries: format_retries,
                max_trajectory_chars: crate::features::grade::judge::DEFAULT_MAX_TRAJECTORY_CHARS,
                cache_dir: cache_dir.clone(),
                timeout: std::time::Duration::from_secs_f64(profile.profile.timeout_s),
            },
        )
        .map_err(|error| PipelineError::Judge {
            profile: profile.path.clone(),
            message: error.to_string(),
        })?;
        let judge = match &style_reference {
            Some(reference) => judge.with_style_reference(reference.clone()),
            None => judge,
        };
        judges.push(Arc::new(crate::features::grade::judge::RecordedJudge::new(
            judge,
            info.clone(),
            profile.profile.concurrency,
        )));
    }
    Ok(GraderSet::new(settings, judges, secrets))
}

/// Start the model servers of judge profiles that have a `[server]` section and are not
/// answering yet (`log_dir/judge-server-<name>.log`); the caller stops them when grading ends.
pub(crate) async fn ensure_judge_servers(
    profiles: &[LoadedProfile],
    log_dir: &Path,
) -> Result<Vec<crate::features::runner::server::ManagedServer>, PipelineError> {
    let mut servers = Vec::new();
    for profile in profiles {
        let Some(config) = &profile.profile.server else {
            continue;
        };
        let profile_dir = profile.profile_dir();
        let log = log_dir.join(format!("judge-server-{}.log", profile.name));
        let started = crate::features::runner::server::ManagedServer::ensure(
            config,
            profile_dir.as_deref(),
            &profile.profile.base_url,
            &log,
        )
        .await?;
        if let Some(server) = started {
            crate::values::reporter::report(crate::values::reporter::Event::ModelServerStarted {
                command: config.command.join(" "),
                judge: true,
            });
            servers.push(server);
        }
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> GradingRequest {
        GradingRequest {
            judges: Vec::new(),
            judge_k: 1,
            judge_metrics: DEFAULT_JUDGE_METRICS.to_string(),
            graders: Vec::new(),
            grader_timeout_s: 60.0,
            pass_threshold: DEFAULT_PASS_THRESHOLD,
            metric_weights: Vec::new(),
            expected_output_match: OutputMatch::Judge,
            judge_scope: JudgeScope::default(),
            style_reference: None,
        }
    }

    fn refusal(request: GradingRequest) -> String {
        match resolve_grading(&request) {
            Ok(_) => panic!("resolved"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn the_default_request_resolves_to_the_default_settings_without_judges() {
        assert!(!request().any_given());
        let resolved = resolve_grading(&request()).unwrap();
        assert!(resolved.judge_profiles.is_empty());
        assert!(resolved.settings.judges.is_empty());
        assert_eq!(resolved.settings.pass_threshold, DEFAULT_PASS_THRESHOLD);
    }

    #[test]
    fn weights_thresholds_and_metrics_are_checked_with_the_flag_named() {
        let mut weighted = request();
        weighted.metric_weights = vec!["accuracy=2".into(), " security = 0 ".into()];
        assert!(weighted.any_given());
        let settings = resolve_grading(&weighted).unwrap().settings;
        assert_eq!(settings.weights.get("accuracy"), Some(&2.0));
        assert_eq!(settings.weights.get("security"), Some(&0.0));
        let mut bad = request();
        bad.metric_weights = vec!["accuracy".into()];
        assert_eq!(
            refusal(bad),
            "--metric-weight `accuracy`: write NAME=WEIGHT"
        );
        let mut bad = request();
        bad.metric_weights = vec!["accuracy=-1".into()];
        assert_eq!(
            refusal(bad),
            "--metric-weight `accuracy=-1`: the weight must be a number ≥ 0"
        );
        let mut bad = request();
        bad.pass_threshold = 1.5;
        assert_eq!(refusal(bad), "--pass-threshold must be between 0 and 1");
        let mut bad = request();
        bad.grader_timeout_s = 0.0;
        assert_eq!(
            refusal(bad),
            "--grader-timeout must be a positive number of seconds, at most 604800"
        );
        let mut bad = request();
        bad.judge_metrics = "accuracy".into();
        assert_eq!(
            refusal(bad),
            "--judge-metrics needs --judge PROFILE (a judge to ask)"
        );
        let mut bad = request();
        bad.judge_metrics = "nonsense".into();
        assert!(refusal(bad).starts_with("--judge-metrics: "));
    }
}
