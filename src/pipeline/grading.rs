//! Grading inputs of a run (or a regrade): the checks of the grading settings against the eval
//! set, the judge profiles a run recorded, credentials, the grader set, and the judges' model
//! servers. The flags that describe grading are `cli`'s; this is what they resolve to.

use std::path::Path;
use std::sync::Arc;

use super::PipelineError;
use crate::evalset::GoldenCase;
use crate::grade::judge::{Judge, JudgeSettings};
use crate::grade::pipeline::{GraderSet, TrialJudge};
use crate::record::{GradingSettings, JudgeInfo};
use crate::runner::LoadedProfile;
use crate::runner::profile::load_profile;

/// What the manifest records about a judge profile (its digest checks it on resume).
pub fn judge_info(profile: &LoadedProfile) -> Result<JudgeInfo, PipelineError> {
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
pub fn validate_expected_outputs(
    eval_path: &Path,
    cases: &[GoldenCase],
    settings: &GradingSettings,
) -> Result<(), PipelineError> {
    for case in cases {
        let mode = case
            .expected_output_match
            .unwrap_or(settings.expected_output_match);
        if let Some(expected) = &case.expected_output
            && let Err(message) = crate::grade::checks::validate_expected_output(mode, expected)
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
pub fn anything_to_grade_by(cases: &[GoldenCase], settings: &GradingSettings) -> bool {
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
pub fn profile_api_key(profile: &LoadedProfile) -> Result<Option<String>, PipelineError> {
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
) -> Result<GraderSet, PipelineError> {
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
        .map_err(|error| PipelineError::Judge {
            profile: profile.path.clone(),
            message: error.to_string(),
        })?;
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
) -> Result<Vec<crate::runner::server::ManagedServer>, PipelineError> {
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
        .await?;
        if let Some(server) = started {
            crate::reporter::report(crate::reporter::Event::ModelServerStarted {
                command: config.command.join(" "),
                judge: true,
            });
            servers.push(server);
        }
    }
    Ok(servers)
}
