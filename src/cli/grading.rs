//! Grading flags shared by `run` and `regrade`, mapped to the [`GradingRequest`] that
//! `crate::pipeline::grading` resolves (judge profiles, graders, metrics and weights).

use clap::Args;

use crate::features::grade::DEFAULT_PASS_THRESHOLD;
use crate::features::grade::custom::DEFAULT_GRADER_TIMEOUT_S;
use crate::pipeline::grading::{DEFAULT_JUDGE_METRICS, GradingRequest};
use crate::record::OutputMatch;

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
    /// Judge metrics to compute (comma-separated): accuracy, goal_accuracy, behavior_check,
    /// style (opt-in: the answer's format, language and verbosity against the user's USER.md
    /// and past answers; reported only, never deciding a pass).
    #[arg(long, value_name = "LIST", default_value = DEFAULT_JUDGE_METRICS)]
    pub judge_metrics: String,
    /// Re-asks after a malformed judge answer before the trial is unscoreable.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub judge_format_retries: u32,
    /// The user's USER.md for the style metric (default: ~/.openclaw/workspace/USER.md; see
    /// docs/grading.md).
    #[arg(long, value_name = "FILE")]
    pub style_reference: Option<std::path::PathBuf>,
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
        self.request().any_given()
    }

    /// The grading these flags ask for (resolved by `crate::pipeline::grading`).
    pub fn request(&self) -> GradingRequest {
        GradingRequest {
            judges: self.judge.clone(),
            judge_k: self.judge_k,
            judge_metrics: self.judge_metrics.clone(),
            graders: self.grader.clone(),
            grader_timeout_s: self.grader_timeout,
            pass_threshold: self.pass_threshold,
            metric_weights: self.metric_weight.clone(),
            expected_output_match: self.expected_output_match,
            judge_scope: self.judge_scope,
            style_reference: self.style_reference.clone(),
        }
    }
}
