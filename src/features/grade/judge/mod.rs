//! The LLM judge: grades one trial's trajectory on the LLM-judged ACES metrics `accuracy`,
//! `goal_accuracy` and `behavior_check` (NVIDIA SkillEvaluator, metric set
//! `skill-evaluator-default-v2`; `shared/reference/eval-formats.md` §3), and on skill-lift's
//! opt-in `style` metric (the final answer against the user's style reference, built by
//! [`crate::features::grade::style_reference`]; reported only, never part of a pass).
//!
//! A judge is a runner profile of kind `openai-chat` (`POST {base_url}/chat/completions`, bearer
//! key, `response_format: {"type": "json_object"}`) or `anthropic-messages` (`POST
//! {base_url}/messages`, `x-api-key` and `anthropic-version: 2023-06-01` headers; `base_url`
//! defaults to `https://api.anthropic.com/v1`). Per metric and trial it makes `k` repeats
//! ([`JudgeSettings::k`], `--judge-k`), each a separate request (with `seed = profile seed +
//! repeat index` when the profile has a seed). Each answer must be exactly one JSON object of the
//! metric's schema ([`rubric`]); a malformed answer is asked again up to
//! [`JudgeSettings::max_format_retries`] times with a short note naming the problem, and
//! infrastructure errors are retried by [`crate::features::runner::http`] under the profile's
//! `max_retries` / `retry_base_delay_s`. A judge that still fails yields [`JudgeError`]: the
//! caller makes the trial unscoreable (fail closed, never a 0).
//!
//! Scores: accuracy = criteria answered yes / 5; goal_accuracy = 1 when the goal was achieved,
//! else 0 (not applicable without `expected_output`); behavior_check = fraction of assertions
//! held (not applicable without assertions); style = format, language and verbosity items
//! answered yes / 3, against the run's style reference ([`Judge::with_style_reference`]; not
//! applicable to a trial without a final answer). Over repeats the metric score is the mean of the
//! repeat scores, with the spread in [`JudgeSpread`].
//!
//! Validated answers are cached on disk ([`JudgeCache`]); a cached repeat makes no request.
//! API keys are sent only in request headers and are never logged, recorded or cached.

mod answer;
mod cache;
mod render;
pub(crate) mod rubric;
#[cfg(test)]
mod tests;

use crate::values::unknown_name::UnknownName;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::features::evalset::GoldenCase;
use crate::features::grade::pipeline::TrialJudge;
use crate::features::grade::pipeline::{JudgeError, JudgeFailure};
use crate::features::runner::anthropic_messages::{ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_VERSION};
use crate::features::runner::http::{RetryPolicy, post_json_with_retries_and_headers};
use crate::features::runner::{LoadedProfile, RunnerKind};
use crate::record::{JudgeInfo, JudgeItem, JudgeSpread, MetricResult, MetricSource, SubScore};
use crate::values::trajectory::{Trajectory, Usage};
use answer::{ParsedAnswer, canonical_json, parse_answer, validate};
pub(crate) use cache::sha256_hex;
pub(crate) use cache::{CacheEntry, CacheKeyParts, JudgeCache};
pub(crate) use render::DEFAULT_MAX_TRAJECTORY_CHARS;
#[cfg(test)]
pub(crate) use render::render_trajectory;
#[cfg(test)]
pub(crate) use rubric::ACCURACY_CRITERIA;
pub(crate) use rubric::RUBRIC_VERSION;

/// `max_tokens` sent to the Anthropic Messages API (where it is required) when the profile sets
/// none.
pub(crate) const ANTHROPIC_DEFAULT_MAX_TOKENS: u64 = 2048;
/// Longest model text quoted in a reason, characters.
const REASON_QUOTE_CHARS: usize = 300;

/// An LLM-judged metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum JudgeMetricKind {
    /// `accuracy`: five yes/no criteria, score = yes / 5.
    Accuracy,
    /// `goal_accuracy`: the goal against the case's `expected_output`, score 1 or 0.
    GoalAccuracy,
    /// `behavior_check`: one yes/no verdict per assertion, score = fraction yes.
    BehaviorCheck,
    /// `style`: the final answer's format, language and verbosity against the user's style
    /// reference, three yes/no items, score = yes / 3. Reported only: never part of a pass.
    Style,
}

impl JudgeMetricKind {
    /// The judge metrics: the three ACES ones in their order, then `style`.
    pub(crate) const ALL: [JudgeMetricKind; 4] = [
        JudgeMetricKind::Accuracy,
        JudgeMetricKind::GoalAccuracy,
        JudgeMetricKind::BehaviorCheck,
        JudgeMetricKind::Style,
    ];

    /// The metric's recorded name ([`crate::record::ACCURACY`], [`crate::record::GOAL_ACCURACY`],
    /// [`crate::record::BEHAVIOR_CHECK`], [`crate::record::STYLE`]).
    pub(crate) fn name(self) -> &'static str {
        match self {
            JudgeMetricKind::Accuracy => crate::record::ACCURACY,
            JudgeMetricKind::GoalAccuracy => crate::record::GOAL_ACCURACY,
            JudgeMetricKind::BehaviorCheck => crate::record::BEHAVIOR_CHECK,
            JudgeMetricKind::Style => crate::record::STYLE,
        }
    }
}

impl std::str::FromStr for JudgeMetricKind {
    type Err = crate::values::unknown_name::UnknownName;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        JudgeMetricKind::ALL
            .into_iter()
            .find(|kind| kind.name() == value)
            .ok_or_else(|| {
                crate::values::unknown_name::UnknownName::new(
                    "judge metric",
                    value,
                    JudgeMetricKind::ALL.map(JudgeMetricKind::name),
                )
            })
    }
}

/// A [`Judge`] as the grader set uses it: with the [`JudgeInfo`] recorded in the manifest and
/// the number of requests it may have in flight (the profile's `concurrency`).
pub(crate) struct RecordedJudge {
    judge: Judge,
    info: JudgeInfo,
    concurrency: usize,
}

impl RecordedJudge {
    /// Wrap `judge`.
    pub(crate) fn new(judge: Judge, info: JudgeInfo, concurrency: usize) -> Self {
        Self {
            judge,
            info,
            concurrency,
        }
    }
}

#[async_trait::async_trait]
impl TrialJudge for RecordedJudge {
    fn info(&self) -> &JudgeInfo {
        &self.info
    }

    fn concurrency(&self) -> usize {
        self.concurrency
    }

    fn usage_line(&self) -> Option<String> {
        let usage = self.judge.usage();
        let tokens = match (usage.tokens.input_tokens, usage.tokens.output_tokens) {
            (Some(input), Some(output)) => format!(", {input} input / {output} output tokens"),
            _ => String::new(),
        };
        Some(format!(
            "judge `{}` ({}): {} requests ({} re-asks after malformed answers), {} answers from the cache{tokens}",
            self.info.name,
            self.info.model,
            usage.requests,
            usage.format_retries,
            usage.cached_answers
        ))
    }

    async fn grade(
        &self,
        metric: &str,
        case: &GoldenCase,
        target_skill: &str,
        trajectory: &Trajectory,
    ) -> Result<MetricResult, JudgeError> {
        let kind: JudgeMetricKind = metric.parse().map_err(|unknown: UnknownName| {
            JudgeError::new(JudgeFailure::UnknownMetric, unknown.to_string())
        })?;
        self.judge.grade(kind, case, target_skill, trajectory).await
    }
}

/// How a judge runs.
#[derive(Debug, Clone)]
pub(crate) struct JudgeSettings {
    /// Repeats per metric per trial (`--judge-k`), at least 1.
    pub k: u32,
    /// Times a malformed answer is asked again before the judge fails (default 2).
    pub max_format_retries: u32,
    /// Bound of the rendered trajectory in the judge's prompt, characters (default 24,000).
    pub max_trajectory_chars: usize,
    /// Folder of the answer cache (`$SKILL_LIFT_HOME/judge-cache`); `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Wall-clock budget of one repeat: its requests, their infrastructure retries and its
    /// format retries together (default 120 s).
    pub timeout: Duration,
}

impl Default for JudgeSettings {
    fn default() -> Self {
        Self {
            k: 1,
            max_format_retries: 2,
            max_trajectory_chars: DEFAULT_MAX_TRAJECTORY_CHARS,
            cache_dir: None,
            timeout: Duration::from_secs(120),
        }
    }
}

/// A judge profile or setting [`Judge::new`] cannot build a judge from.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JudgeBuildError {
    /// The profile's kind is not a model API.
    #[error(
        "judge profile `{profile}` has kind `{kind}`; a judge needs kind `openai-chat` or `anthropic-messages`"
    )]
    NotAModelApi {
        /// The profile's name.
        profile: String,
        /// Its kind.
        kind: &'static str,
    },
    /// An `openai-chat` profile without `base_url`.
    #[error(
        "judge profile `{profile}` (kind openai-chat) needs a base_url such as https://api.openai.com/v1"
    )]
    NoBaseUrl {
        /// The profile's name.
        profile: String,
    },
    /// A `base_url` that is not HTTP(S).
    #[error("judge profile `{profile}`: base_url `{base_url}` must start with http:// or https://")]
    BaseUrlScheme {
        /// The profile's name.
        profile: String,
        /// The `base_url` given.
        base_url: String,
    },
    /// `--judge-k 0`.
    #[error("judge repeats (--judge-k) must be at least 1")]
    NoRepeats,
    /// A zero timeout.
    #[error("the judge timeout must be positive")]
    NoTimeout,
    /// The HTTP client could not be built.
    #[error("cannot build HTTP client: {0}")]
    Client(reqwest::Error),
}

/// What a judge has spent so far, over all its grades.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct JudgeUsage {
    /// HTTP requests answered (format retries included; infrastructure retries not).
    pub requests: u64,
    /// Requests that re-asked after a malformed answer.
    pub format_retries: u64,
    /// Repeats answered from the cache (no request).
    pub cached_answers: u64,
    /// Tokens the server reported, summed.
    pub tokens: Usage,
}

/// Which API a judge speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JudgeApi {
    OpenAiChat,
    AnthropicMessages,
}

/// An LLM judge built from a runner profile. Cheap to share (`Arc`); grades may run
/// concurrently.
pub(crate) struct Judge {
    name: String,
    model: String,
    api: JudgeApi,
    base_url: String,
    url: String,
    api_key: Option<String>,
    temperature: Option<f64>,
    max_tokens: Option<u64>,
    seed: Option<u64>,
    response_format: crate::features::runner::profile::JudgeResponseFormat,
    /// Canonical JSON of the sampling settings, part of every cache key.
    sampling_key: String,
    policy: RetryPolicy,
    settings: JudgeSettings,
    cache: Option<JudgeCache>,
    client: reqwest::Client,
    usage: Mutex<JudgeUsage>,
    /// One lock per cache key being answered: a repeat asked while an identical one is in
    /// flight waits for it and reads its cached answer instead of asking again.
    in_flight: Mutex<std::collections::HashMap<String, std::sync::Arc<tokio::sync::Mutex<()>>>>,
    /// The judge profile's `[price]` table: the cost of each request's tokens.
    price: Option<crate::record::PriceTable>,
    /// The redacted style reference the `style` metric compares answers with.
    style_reference: Option<String>,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the API key.
        formatter
            .debug_struct("Judge")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("api", &self.api)
            .field("url", &self.url)
            .field("has_api_key", &self.api_key.is_some())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A judge's reply text.
struct Reply {
    text: String,
    /// The server stopped at its token limit (the JSON is likely cut off).
    truncated: bool,
}

impl Judge {
    /// Build a judge from `profile` (kind `openai-chat` or `anthropic-messages`); `api_key` is
    /// the value of the profile's `api_key_env`, when set. Errors: another kind, an
    /// `openai-chat` profile without `base_url`, `k` = 0, a zero timeout.
    pub(crate) fn new(
        profile: &LoadedProfile,
        api_key: Option<String>,
        settings: JudgeSettings,
    ) -> Result<Judge, JudgeBuildError> {
        let settings_profile = &profile.profile;
        let api = match settings_profile.kind {
            RunnerKind::OpenaiChat => JudgeApi::OpenAiChat,
            RunnerKind::AnthropicMessages => JudgeApi::AnthropicMessages,
            other => {
                return Err(JudgeBuildError::NotAModelApi {
                    profile: profile.name.clone(),
                    kind: other.name(),
                });
            }
        };
        let configured = settings_profile.base_url.trim().trim_end_matches('/');
        let base_url = match (api, configured.is_empty()) {
            (JudgeApi::OpenAiChat, true) => {
                return Err(JudgeBuildError::NoBaseUrl {
                    profile: profile.name.clone(),
                });
            }
            (JudgeApi::AnthropicMessages, true) => ANTHROPIC_DEFAULT_BASE_URL.to_string(),
            (_, false) => configured.to_string(),
        };
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(JudgeBuildError::BaseUrlScheme {
                profile: profile.name.clone(),
                base_url,
            });
        }
        if settings.k == 0 {
            return Err(JudgeBuildError::NoRepeats);
        }
        if settings.timeout.is_zero() {
            return Err(JudgeBuildError::NoTimeout);
        }
        let url = match api {
            JudgeApi::OpenAiChat => format!("{base_url}/chat/completions"),
            JudgeApi::AnthropicMessages => format!("{base_url}/messages"),
        };
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .map_err(JudgeBuildError::Client)?;
        Ok(Judge {
            name: profile.name.clone(),
            model: settings_profile.model.clone(),
            api,
            base_url,
            url,
            api_key: api_key.filter(|key| !key.is_empty()),
            temperature: settings_profile.temperature,
            max_tokens: settings_profile.max_tokens,
            seed: settings_profile.seed,
            response_format: settings_profile.response_format,
            sampling_key: json!({
                "temperature": settings_profile.temperature,
                "max_tokens": settings_profile.max_tokens,
                "seed": settings_profile.seed,
                "response_format": settings_profile.response_format,
            })
            .to_string(),
            policy: RetryPolicy::of_profile(settings_profile),
            cache: settings.cache_dir.clone().map(JudgeCache::new),
            settings,
            client,
            usage: Mutex::new(JudgeUsage::default()),
            in_flight: Mutex::new(std::collections::HashMap::new()),
            price: settings_profile.price,
            style_reference: None,
        })
    }

    /// This judge with `reference` (the redacted text of `USER.md` and the sampled past
    /// answers) as the style reference of the `style` metric.
    pub(crate) fn with_style_reference(mut self, reference: String) -> Self {
        self.style_reference = Some(reference);
        self
    }

    /// The judge profile's name.
    #[cfg(test)]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The judge model requested.
    #[cfg(test)]
    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    /// Requests, cache hits and tokens over all grades so far.
    pub(crate) fn usage(&self) -> JudgeUsage {
        self.usage
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn record_usage(&self, update: impl FnOnce(&mut JudgeUsage)) {
        update(
            &mut self
                .usage
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
    }

    fn error(
        &self,
        metric: JudgeMetricKind,
        failure: JudgeFailure,
        message: impl std::fmt::Display,
    ) -> JudgeError {
        JudgeError {
            failure,
            message: format!(
                "judge `{}` ({}) on {}: {message}",
                self.name,
                self.model,
                metric.name()
            ),
        }
    }

    /// Grade `trajectory` on `metric` for `case`, the skill under evaluation being
    /// `target_skill`. Not applicable (score `None`, no request) for goal_accuracy without an
    /// expected output and behavior_check without assertions.
    pub(crate) async fn grade(
        &self,
        metric: JudgeMetricKind,
        case: &GoldenCase,
        target_skill: &str,
        trajectory: &Trajectory,
    ) -> Result<MetricResult, JudgeError> {
        let has_expected = case
            .expected_output
            .as_deref()
            .is_some_and(|e| !e.trim().is_empty());
        match metric {
            JudgeMetricKind::GoalAccuracy if !has_expected => {
                return Ok(not_applicable("the case has no expected_output"));
            }
            JudgeMetricKind::BehaviorCheck if case.assertions.is_empty() => {
                return Ok(not_applicable("the case has no assertions"));
            }
            JudgeMetricKind::Style
                if trajectory
                    .final_answer
                    .as_deref()
                    .is_none_or(|answer| answer.trim().is_empty()) =>
            {
                return Ok(not_applicable("the trial has no final answer"));
            }
            _ => {}
        }
        let style_reference = match (metric, self.style_reference.as_deref()) {
            (JudgeMetricKind::Style, None) => {
                return Err(self.error(
                    metric,
                    JudgeFailure::UnknownMetric,
                    "no style reference was given to the judge",
                ));
            }
            (_, reference) => reference.unwrap_or_default(),
        };
        let assertion_count = match metric {
            JudgeMetricKind::BehaviorCheck => case.assertions.len(),
            _ => 0,
        };
        let system = rubric::system_message(metric);
        let user = match metric {
            JudgeMetricKind::Style => rubric::style_user_message(
                style_reference,
                trajectory.final_answer.as_deref().unwrap_or_default(),
                self.settings.max_trajectory_chars,
            ),
            _ => rubric::user_message(
                metric,
                case,
                target_skill,
                trajectory,
                self.settings.max_trajectory_chars,
            ),
        };
        let messages = json!([
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]);
        let messages_sha256 = sha256_hex(messages.to_string().as_bytes());
        // What grading this metric spends (requests, cache hits, tokens, cost).
        let spent = Mutex::new(crate::record::JudgeSpend::default());
        let repeats = (0..self.settings.k).map(|repeat| {
            self.judge_repeat(
                metric,
                &system,
                &user,
                assertion_count,
                &messages_sha256,
                repeat,
                &spent,
            )
        });
        let outcomes = futures::future::try_join_all(repeats).await?;
        let spent = spent
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let cached = outcomes.iter().filter(|(_, cached)| *cached).count() as u32;
        let answers: Vec<ParsedAnswer> = outcomes.into_iter().map(|(answer, _)| answer).collect();
        let item_names: Vec<String> = match metric {
            JudgeMetricKind::BehaviorCheck => case.assertions.clone(),
            _ => answers
                .first()
                .map(|a| a.items.iter().map(|i| i.name.clone()).collect())
                .unwrap_or_default(),
        };
        let mut result = aggregate(
            metric,
            &self.name,
            &self.model,
            &item_names,
            &answers,
            cached,
        );
        if let Some(spread) = result.judge.as_mut() {
            spread.spent = Some(spent);
        }
        Ok(result)
    }

    /// One repeat: from the cache, or asked (and then cached). Returns the answer and whether
    /// it came from the cache.
    #[allow(clippy::too_many_arguments)]
    async fn judge_repeat(
        &self,
        metric: JudgeMetricKind,
        system: &str,
        user: &str,
        assertion_count: usize,
        messages_sha256: &str,
        repeat: u32,
        spent: &Mutex<crate::record::JudgeSpend>,
    ) -> Result<(ParsedAnswer, bool), JudgeError> {
        let key = CacheKeyParts {
            model: &self.model,
            base_url: &self.base_url,
            rubric_version: RUBRIC_VERSION,
            metric: metric.name(),
            messages_sha256,
            repeat,
            sampling: &self.sampling_key,
        }
        .key();
        let Some(cache) = &self.cache else {
            let answer = self
                .ask(metric, system, user, assertion_count, repeat, spent)
                .await?;
            return Ok((answer, false));
        };
        // Identical trajectories graded at the same time (a case's attempts answered alike) ask
        // once: the others wait for the first answer and read it from the cache.
        let key_lock = std::sync::Arc::clone(
            self.in_flight
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .entry(key.clone())
                .or_default(),
        );
        let guard = key_lock.lock().await;
        let result = self
            .judge_repeat_cached(
                cache,
                metric,
                system,
                user,
                assertion_count,
                repeat,
                spent,
                &key,
            )
            .await;
        drop(guard);
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Only the map and this call hold the key's lock (others clone it under the map's lock,
        // held here): nobody waits for it any more, forget it.
        if std::sync::Arc::strong_count(&key_lock) == 2 {
            in_flight.remove(&key);
        }
        drop(in_flight);
        result
    }

    /// [`Self::judge_repeat`] with its `cache`, under the key's in-flight lock.
    #[allow(clippy::too_many_arguments)]
    async fn judge_repeat_cached(
        &self,
        cache: &JudgeCache,
        metric: JudgeMetricKind,
        system: &str,
        user: &str,
        assertion_count: usize,
        repeat: u32,
        spent: &Mutex<crate::record::JudgeSpend>,
        key: &str,
    ) -> Result<(ParsedAnswer, bool), JudgeError> {
        if let Some(entry) = cache.load(key)
            && let Some(object) = entry.answer.as_object()
            && let Ok(answer) = validate(metric, assertion_count, object)
        {
            self.record_usage(|usage| usage.cached_answers += 1);
            spent
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .cached_answers += 1;
            return Ok((answer, true));
        }
        let answer = self
            .ask(metric, system, user, assertion_count, repeat, spent)
            .await?;
        // A cache that cannot be written only costs a later request; the grade stands.
        let _ = cache.store(&CacheEntry {
            key: key.to_string(),
            rubric_version: RUBRIC_VERSION.to_string(),
            metric: metric.name().to_string(),
            model: self.model.clone(),
            repeat,
            answer: canonical_json(metric, &answer),
        });
        Ok((answer, false))
    }

    /// Ask the judge until it gives a valid answer or the format retries run out.
    async fn ask(
        &self,
        metric: JudgeMetricKind,
        system: &str,
        user: &str,
        assertion_count: usize,
        repeat: u32,
        spent: &Mutex<crate::record::JudgeSpend>,
    ) -> Result<ParsedAnswer, JudgeError> {
        let deadline = Instant::now() + self.settings.timeout;
        let mut turns: Vec<(&'static str, String)> = vec![("user", user.to_string())];
        let mut last_problem = String::new();
        for attempt in 0..=self.settings.max_format_retries {
            if attempt > 0 {
                self.record_usage(|usage| usage.format_retries += 1);
            }
            let reply = self
                .send(
                    metric,
                    system,
                    &turns,
                    assertion_count,
                    repeat,
                    deadline,
                    spent,
                )
                .await?;
            match parse_answer(metric, assertion_count, &reply.text) {
                Ok(answer) => return Ok(answer),
                Err(problem) => {
                    last_problem = if reply.truncated {
                        format!(
                            "{problem} (the answer was cut off at the token limit; keep the reason and evidence short)"
                        )
                    } else {
                        problem.to_string()
                    };
                    let shown = if reply.text.trim().is_empty() {
                        "(empty answer)".to_string()
                    } else {
                        reply.text
                    };
                    turns.push(("assistant", shown));
                    turns.push(("user", rubric::correction_message(metric, &last_problem)));
                }
            }
        }
        Err(self.error(
            metric,
            JudgeFailure::MalformedAnswer,
            format!(
                "no valid answer after {} tries: {last_problem}",
                self.settings.max_format_retries + 1
            ),
        ))
    }

    /// One request (with infrastructure retries) carrying `system` and `turns`.
    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        metric: JudgeMetricKind,
        system: &str,
        turns: &[(&'static str, String)],
        assertion_count: usize,
        repeat: u32,
        deadline: Instant,
        spent: &Mutex<crate::record::JudgeSpend>,
    ) -> Result<Reply, JudgeError> {
        let conversation: Vec<Value> = turns
            .iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let mut headers: Vec<(&str, &str)> = Vec::new();
        let (body, bearer) = match self.api {
            JudgeApi::OpenAiChat => {
                let mut messages = vec![json!({"role": "system", "content": system})];
                messages.extend(conversation);
                let mut body = json!({
                    "model": self.model,
                    "messages": messages,
                });
                use crate::features::runner::profile::JudgeResponseFormat as Format;
                let schema = || rubric::json_schema(metric, assertion_count);
                match self.response_format {
                    Format::JsonObject => {
                        body["response_format"] = json!({"type": "json_object"});
                    }
                    Format::JsonSchema => {
                        body["response_format"] = json!({
                            "type": "json_schema",
                            "json_schema": {"name": metric.name(), "strict": true, "schema": schema()},
                        });
                    }
                    Format::JsonObjectSchema => {
                        body["response_format"] =
                            json!({"type": "json_object", "schema": schema()});
                    }
                    Format::None => {}
                }
                if let Some(temperature) = self.temperature {
                    body["temperature"] = json!(temperature);
                }
                if let Some(max_tokens) = self.max_tokens {
                    body["max_tokens"] = json!(max_tokens);
                }
                if let Some(seed) = self.seed {
                    body["seed"] = json!(seed.wrapping_add(u64::from(repeat)));
                }
                (body, self.api_key.as_deref())
            }
            JudgeApi::AnthropicMessages => {
                let mut body = json!({
                    "model": self.model,
                    "max_tokens": self.max_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
                    "system": system,
                    "messages": conversation,
                });
                if let Some(temperature) = self.temperature {
                    body["temperature"] = json!(temperature);
                }
                if let Some(key) = self.api_key.as_deref() {
                    headers.push(("x-api-key", key));
                }
                headers.push(("anthropic-version", ANTHROPIC_VERSION));
                (body, None)
            }
        };
        let outcome = post_json_with_retries_and_headers(
            &self.client,
            &self.url,
            bearer,
            &headers,
            &body,
            self.policy,
            deadline,
        )
        .await
        .map_err(|failure| {
            self.error(
                metric,
                JudgeFailure::Request {
                    status: failure.status,
                },
                format!("request failed: {}", failure.message),
            )
        })?;
        let value = outcome.body;
        let (reply, tokens) = match self.api {
            JudgeApi::OpenAiChat => {
                let choice = &value["choices"][0];
                if !choice["message"].is_object() {
                    return Err(self.error(
                        metric,
                        JudgeFailure::MalformedResponse,
                        "the server's response has no choices[0].message",
                    ));
                }
                let reply = Reply {
                    text: choice["message"]["content"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    truncated: choice["finish_reason"] == "length",
                };
                let usage = &value["usage"];
                let tokens = Usage {
                    input_tokens: usage["prompt_tokens"].as_u64(),
                    output_tokens: usage["completion_tokens"].as_u64(),
                    cached_tokens: usage["prompt_tokens_details"]["cached_tokens"].as_u64(),
                    cache_creation_tokens: None,
                    cost_usd: None,
                };
                (reply, tokens)
            }
            JudgeApi::AnthropicMessages => {
                let Some(blocks) = value["content"].as_array() else {
                    return Err(self.error(
                        metric,
                        JudgeFailure::MalformedResponse,
                        "the server's response has no content array",
                    ));
                };
                let text: String = blocks
                    .iter()
                    .filter(|block| block["type"] == "text")
                    .filter_map(|block| block["text"].as_str())
                    .collect();
                let reply = Reply {
                    text,
                    truncated: value["stop_reason"] == "max_tokens",
                };
                let usage = &value["usage"];
                let tokens = Usage {
                    input_tokens: usage["input_tokens"].as_u64(),
                    output_tokens: usage["output_tokens"].as_u64(),
                    cached_tokens: usage["cache_read_input_tokens"].as_u64(),
                    cache_creation_tokens: None,
                    cost_usd: None,
                };
                (reply, tokens)
            }
        };
        let mut tokens = tokens;
        tokens.cost_usd = self
            .price
            .as_ref()
            .and_then(|price| price.cost_usd(&tokens));
        self.record_usage(|usage| {
            usage.requests += 1;
            usage.tokens.add(&tokens);
        });
        {
            let mut spent = spent
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            spent.requests += 1;
            spent.usage.add(&tokens);
        }
        Ok(reply)
    }
}

/// A judge metric that does not apply to the case.
fn not_applicable(reason: &str) -> MetricResult {
    MetricResult {
        score: None,
        reason: format!("not applicable: {reason}"),
        source: MetricSource::Judge,
        sub_scores: BTreeMap::new(),
        judge: None,
    }
}

/// `text` on one line (whitespace runs collapsed), cut in the middle to `cap` characters.
fn one_line(text: &str, cap: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    render::truncate_middle(&joined, cap)
}

/// Mean and sample standard deviation (`None` for fewer than two values).
fn mean_and_sd(values: &[f64]) -> (f64, Option<f64>) {
    let count = values.len() as f64;
    let mean = values.iter().sum::<f64>() / count;
    // Identical repeats have no spread (not a rounding residue like 3e-17).
    let identical = values.windows(2).all(|pair| pair[0] == pair[1]);
    let sd = (values.len() > 1).then(|| {
        if identical {
            0.0
        } else {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (count - 1.0)).sqrt()
        }
    });
    (mean, sd)
}

/// Combine the repeats of one metric into its result. `item_names` are the display names of the
/// items (criteria, `goal_achieved`, or the assertion texts), in order; `answers` is non-empty
/// and every answer has one item per name.
fn aggregate(
    metric: JudgeMetricKind,
    judge: &str,
    model: &str,
    item_names: &[String],
    answers: &[ParsedAnswer],
    cached: u32,
) -> MetricResult {
    let repeats: Vec<f64> = answers.iter().map(ParsedAnswer::score).collect();
    let (mean, sd) = mean_and_sd(&repeats);
    let total = answers.len() as u32;
    let first = &answers[0];
    let mut items = Vec::new();
    let mut sub_scores = BTreeMap::new();
    for (index, item) in first.items.iter().enumerate() {
        let yes = answers
            .iter()
            .filter(|a| a.items.get(index).is_some_and(|i| i.yes))
            .count() as u32;
        let evidence = one_line(&item.evidence, REASON_QUOTE_CHARS);
        items.push(JudgeItem {
            name: item_names
                .get(index)
                .cloned()
                .unwrap_or_else(|| item.name.clone()),
            yes,
            total,
            evidence: evidence.clone(),
        });
        let verdict = if total == 1 {
            (if yes == 1 { "yes" } else { "no" }).to_string()
        } else {
            format!("{yes}/{total} repeats yes")
        };
        let reason = match metric {
            // The accuracy reason is shared by the criteria; it is in the metric's reason.
            JudgeMetricKind::Accuracy => verdict,
            _ if evidence.is_empty() => verdict,
            _ => format!("{verdict}: {evidence}"),
        };
        sub_scores.insert(
            item.name.clone(),
            SubScore::scored(f64::from(yes) / f64::from(total), reason),
        );
    }
    let first_reason = one_line(&first.reason, REASON_QUOTE_CHARS);
    let with_reason = |summary: String| {
        if first_reason.is_empty() {
            summary
        } else {
            format!("{summary} — {first_reason}")
        }
    };
    let item_count = first.items.len();
    let not_always: Vec<String> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.yes < total)
        .map(|(index, item)| match metric {
            JudgeMetricKind::BehaviorCheck if total == 1 => format!("{}", index + 1),
            JudgeMetricKind::BehaviorCheck => format!("{} ({}/{total})", index + 1, item.yes),
            _ if total == 1 => first.items[index].name.clone(),
            _ => format!("{} {}/{total}", first.items[index].name, item.yes),
        })
        .collect();
    // `summary`, then `; <label>: <items>` when some item was not always yes.
    let listing = |summary: String, label: &str| {
        if not_always.is_empty() {
            summary
        } else {
            format!("{summary}; {label}: {}", not_always.join(", "))
        }
    };
    let reason = match metric {
        JudgeMetricKind::Accuracy => {
            let summary = if total == 1 {
                let yes = first.items.iter().filter(|i| i.yes).count();
                listing(format!("{yes}/{item_count} criteria yes"), "no")
            } else {
                let summary = format!(
                    "{:.2}/{item_count} criteria yes on average over {total} repeats",
                    mean * item_count as f64
                );
                listing(summary, "not always yes")
            };
            with_reason(summary)
        }
        JudgeMetricKind::GoalAccuracy => {
            let yes = items.first().map(|i| i.yes).unwrap_or(0);
            let summary = if total == 1 {
                (if yes == 1 {
                    "goal achieved"
                } else {
                    "goal not achieved"
                })
                .to_string()
            } else {
                format!("goal achieved in {yes} of {total} repeats")
            };
            with_reason(summary)
        }
        JudgeMetricKind::BehaviorCheck => {
            if total == 1 {
                let held = first.items.iter().filter(|i| i.yes).count();
                listing(
                    format!("{held} of {item_count} assertions held"),
                    "not held",
                )
            } else {
                let summary = format!(
                    "{:.2} of {item_count} assertions held on average over {total} repeats",
                    mean * item_count as f64
                );
                listing(summary, "not always held")
            }
        }
        JudgeMetricKind::Style => {
            if total == 1 {
                let yes = first.items.iter().filter(|i| i.yes).count();
                listing(
                    format!("{yes}/{item_count} style items match the reference"),
                    "no",
                )
            } else {
                let summary = format!(
                    "{:.2}/{item_count} style items match the reference on average over {total} repeats",
                    mean * item_count as f64
                );
                listing(summary, "not always yes")
            }
        }
    };
    MetricResult {
        score: Some(mean.clamp(0.0, 1.0)),
        reason,
        source: MetricSource::Judge,
        sub_scores,
        judge: Some(JudgeSpread {
            judge: judge.to_string(),
            model: model.to_string(),
            repeats,
            sd,
            cached,
            items,
            spent: None,
        }),
    }
}
