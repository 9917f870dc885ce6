//! Adoption and net value from real use (`skill-lift usage`, `status --dashboard`): per skill,
//! from the session history [`crate::features::history`] reads.
//!
//! Definitions (also in `docs/history.md`):
//! - **activation**: a user turn that activated the skill (skill tool, or a read of its
//!   `SKILL.md`);
//! - **available**: a session in the window in which the skill could have been used — every
//!   session when the skill is installed in the host's skills folder now, else the sessions from
//!   the first one that activated it (earlier sessions may predate the install);
//! - **adoption**: of the activations with a follow-up signal ([`crate::features::history::signals`]),
//!   the share the user adopted, with a Wilson 95% interval ([`crate::analysis::stats::wilson_interval`]);
//! - **tokens / time per activation** vs **comparable turns**: the mean over activated turns
//!   and over the other turns of the sessions where the skill was available;
//! - **net value** (the seeds' card): `successes × value_per_success − activations ×
//!   marginal_cost`, with `marginal_cost` the extra input and output tokens of an activated turn
//!   over a comparable turn, priced per million tokens. Computed only when the value, the prices
//!   and both token means are known; never guessed.
//!
//! Verdict: `no evidence` without an activation that has an outcome. With a net value:
//! negative → `retire` when the adoption interval lies below 50%, else `rewrite`;
//! non-negative → `recommend` when the adoption interval lies above 50%, else `keep`. Without
//! one, adoption alone: `recommend` above 50%, `rewrite` below, `keep` otherwise. Suggestions
//! are heuristic, never evidence of quality.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::analysis::stats::{Interval, wilson_interval};
use crate::features::history::signals::{Polarity, classify};
use crate::features::history::{HistoryHost, HistorySession, parse_since};
use crate::features::registry::probe::ProbeReport;

/// Confidence level of the adoption interval.
pub(crate) const ADOPTION_CONFIDENCE: f64 = 0.95;

/// What the user supplied to price a skill.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Pricing {
    /// Value of one adopted activation, in USD (`--value-per-success`).
    pub value_per_success: Option<f64>,
    /// USD per million input tokens.
    pub input_per_mtok: Option<f64>,
    /// USD per million output tokens.
    pub output_per_mtok: Option<f64>,
}

/// The usage suggestion for one skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageVerdict {
    Recommend,
    Keep,
    Rewrite,
    Retire,
    NoEvidence,
}

impl UsageVerdict {
    /// As printed (`no evidence` with a space).
    pub fn as_str(self) -> &'static str {
        match self {
            UsageVerdict::Recommend => "recommend",
            UsageVerdict::Keep => "keep",
            UsageVerdict::Rewrite => "rewrite",
            UsageVerdict::Retire => "retire",
            UsageVerdict::NoEvidence => "no evidence",
        }
    }
}

/// Mean of the known values, with how many there were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Mean {
    pub mean: Option<f64>,
    pub n: usize,
}

impl Mean {
    fn of(values: impl Iterator<Item = Option<f64>>) -> Self {
        let known: Vec<f64> = values.flatten().collect();
        Mean {
            mean: (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64),
            n: known.len(),
        }
    }
}

/// The net value card of one skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillUsage {
    pub skill: String,
    /// Turns that activated it.
    pub activations: usize,
    /// Sessions with at least one activation.
    pub sessions_used: usize,
    /// Sessions where it was available and not used.
    pub sessions_available_unused: usize,
    /// Whether it is installed in the host's skills folder now.
    pub installed: bool,
    /// Activations the user adopted / overrode.
    pub adopted: u64,
    pub overridden: u64,
    /// Per signal, how many activations had it.
    pub signals: BTreeMap<String, usize>,
    /// `adopted / (adopted + overridden)`.
    pub adoption_rate: Option<f64>,
    /// Wilson interval of the adoption rate.
    pub adoption_interval: Option<Interval>,
    /// Tokens (input + output) per activated turn, and per comparable turn without it.
    pub tokens_per_activation: Mean,
    pub tokens_comparable: Mean,
    /// Seconds per activated turn, and per comparable turn.
    pub seconds_per_activation: Mean,
    pub seconds_comparable: Mean,
    /// Extra cost of one activation in USD, when prices and both token means are known.
    pub marginal_cost_usd: Option<f64>,
    /// `adopted × value − activations × marginal cost`, USD, when computable.
    pub net_value_usd: Option<f64>,
    pub verdict: UsageVerdict,
    /// Why, in one sentence, with the evidence.
    pub reason: String,
}

/// The usage report of one host over a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageReport {
    pub host: String,
    /// Start of the window.
    pub since: Option<DateTime<Utc>>,
    pub sessions: usize,
    pub skills: Vec<SkillUsage>,
    pub pricing: Pricing,
}

/// Skills installed in `skills_dir` now (folders holding `SKILL.md`).
pub(crate) fn installed_skills(skills_dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(skills_dir) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().join("SKILL.md").is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect()
}

fn fmt_interval(interval: Option<Interval>) -> String {
    interval
        .map(|i| format!("95% CI {:.0}–{:.0}%", i.low * 100.0, i.high * 100.0))
        .unwrap_or_default()
}

/// Build the card of `skill` from `sessions`.
pub(crate) fn skill_usage(
    skill: &str,
    sessions: &[HistorySession],
    installed: bool,
    pricing: Pricing,
) -> SkillUsage {
    let first_use = sessions
        .iter()
        .position(|s| s.turns.iter().any(|t| t.skills.iter().any(|k| k == skill)));
    let mut usage = SkillUsage {
        skill: skill.to_string(),
        activations: 0,
        sessions_used: 0,
        sessions_available_unused: 0,
        installed,
        adopted: 0,
        overridden: 0,
        signals: BTreeMap::new(),
        adoption_rate: None,
        adoption_interval: None,
        tokens_per_activation: Mean::default(),
        tokens_comparable: Mean::default(),
        seconds_per_activation: Mean::default(),
        seconds_comparable: Mean::default(),
        marginal_cost_usd: None,
        net_value_usd: None,
        verdict: UsageVerdict::NoEvidence,
        reason: String::new(),
    };
    let mut with_turns = Vec::new();
    let mut without_turns = Vec::new();
    for (position, session) in sessions.iter().enumerate() {
        let available = installed || first_use.is_some_and(|first| position >= first);
        let mut used = false;
        for (index, turn) in session.turns.iter().enumerate() {
            if turn.skills.iter().any(|k| k == skill) {
                used = true;
                usage.activations += 1;
                let outcome = classify(session, index);
                *usage
                    .signals
                    .entry(outcome.signal.as_str().to_string())
                    .or_default() += 1;
                match outcome.signal.polarity() {
                    Polarity::Adopted => usage.adopted += 1,
                    Polarity::Overridden => usage.overridden += 1,
                }
                with_turns.push(turn);
            } else if available {
                without_turns.push(turn);
            }
        }
        if used {
            usage.sessions_used += 1;
        } else if available {
            usage.sessions_available_unused += 1;
        }
    }
    let tokens = |turn: &&crate::features::history::Turn| turn.tokens().map(|t| t as f64);
    let seconds = |turn: &&crate::features::history::Turn| turn.duration_s();
    usage.tokens_per_activation = Mean::of(with_turns.iter().map(tokens));
    usage.tokens_comparable = Mean::of(without_turns.iter().map(tokens));
    usage.seconds_per_activation = Mean::of(with_turns.iter().map(seconds));
    usage.seconds_comparable = Mean::of(without_turns.iter().map(seconds));
    let decided = usage.adopted + usage.overridden;
    usage.adoption_rate = (decided > 0).then(|| usage.adopted as f64 / decided as f64);
    usage.adoption_interval = wilson_interval(usage.adopted, decided, ADOPTION_CONFIDENCE);
    // Marginal cost: the extra input and output tokens of an activated turn, priced.
    let side = |turns: &[&crate::features::history::Turn], input: bool| {
        Mean::of(turns.iter().map(|t| {
            if input {
                t.usage.input_tokens.map(|v| v as f64)
            } else {
                t.usage.output_tokens.map(|v| v as f64)
            }
        }))
        .mean
    };
    if let (Some(input_price), Some(output_price)) =
        (pricing.input_per_mtok, pricing.output_per_mtok)
        && let (Some(in_with), Some(in_without), Some(out_with), Some(out_without)) = (
            side(&with_turns, true),
            side(&without_turns, true),
            side(&with_turns, false),
            side(&without_turns, false),
        )
    {
        usage.marginal_cost_usd = Some(
            ((in_with - in_without) * input_price + (out_with - out_without) * output_price)
                / 1_000_000.0,
        );
    }
    if let (Some(value), Some(cost)) = (pricing.value_per_success, usage.marginal_cost_usd) {
        usage.net_value_usd = Some(usage.adopted as f64 * value - usage.activations as f64 * cost);
    }
    let interval = usage.adoption_interval;
    let evidence = match usage.adoption_rate {
        Some(rate) => format!(
            "adopted {}/{} ({:.0}%, {})",
            usage.adopted,
            decided,
            rate * 100.0,
            fmt_interval(interval)
        ),
        None => String::new(),
    };
    (usage.verdict, usage.reason) = match (interval, usage.net_value_usd) {
        (None, _) => (
            UsageVerdict::NoEvidence,
            format!(
                "no activation in the sessions read ({} session(s) where it was available went unused); absence of evidence is not evidence of health",
                usage.sessions_available_unused
            ),
        ),
        (Some(i), Some(net)) if net < 0.0 && i.high < 0.5 => (
            UsageVerdict::Retire,
            format!("net value {net:.2} USD and users override it: {evidence}"),
        ),
        (Some(_), Some(net)) if net < 0.0 => (
            UsageVerdict::Rewrite,
            format!("net value {net:.2} USD (costs more than it returns): {evidence}"),
        ),
        (Some(i), Some(net)) if i.low > 0.5 => (
            UsageVerdict::Recommend,
            format!("net value {net:.2} USD, {evidence}"),
        ),
        (Some(_), Some(net)) => (
            UsageVerdict::Keep,
            format!("net value {net:.2} USD, {evidence}"),
        ),
        (Some(i), None) if i.low > 0.5 => (
            UsageVerdict::Recommend,
            format!("{evidence}; net value not computed"),
        ),
        (Some(i), None) if i.high < 0.5 => (
            UsageVerdict::Rewrite,
            format!("{evidence}; net value not computed"),
        ),
        (Some(_), None) => (
            UsageVerdict::Keep,
            format!("{evidence}; net value not computed"),
        ),
    };
    usage
}

/// The report for every skill activated in `sessions` or installed.
pub(crate) fn usage_report(
    host: &str,
    since: Option<DateTime<Utc>>,
    sessions: &[HistorySession],
    installed: &BTreeSet<String>,
    only: Option<&str>,
    pricing: Pricing,
) -> UsageReport {
    let mut names: BTreeSet<String> = installed.clone();
    for session in sessions {
        for turn in &session.turns {
            names.extend(turn.skills.iter().cloned());
        }
    }
    if let Some(only) = only {
        names = BTreeSet::from([only.to_string()]);
    }
    UsageReport {
        host: host.to_string(),
        since,
        sessions: sessions.len(),
        skills: names
            .iter()
            .map(|name| skill_usage(name, sessions, installed.contains(name), pricing))
            .collect(),
        pricing,
    }
}

fn fmt_mean(mean: Mean, unit: &str) -> String {
    match mean.mean {
        Some(value) => format!("{value:.0}{unit} (n={})", mean.n),
        None => "—".to_string(),
    }
}

/// The report as a Markdown table plus one line per skill.
pub(crate) fn to_markdown(report: &UsageReport) -> String {
    let mut out = format!(
        "# Skill usage: {} ({} session(s){})\n\n",
        report.host,
        report.sessions,
        report
            .since
            .map(|s| format!(" since {}", s.format("%Y-%m-%d")))
            .unwrap_or_default()
    );
    if report.skills.is_empty() {
        out.push_str("No skill was activated or installed: no evidence.\n");
        return out;
    }
    out.push_str("| skill | activations | sessions used | available, unused | adoption | 95% CI | tokens/activation | tokens/comparable | s/activation | s/comparable | net value (USD) | suggestion |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for s in &report.skills {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            s.skill,
            s.activations,
            s.sessions_used,
            s.sessions_available_unused,
            s.adoption_rate
                .map(|r| format!(
                    "{}/{} ({:.0}%)",
                    s.adopted,
                    s.adopted + s.overridden,
                    r * 100.0
                ))
                .unwrap_or("—".into()),
            s.adoption_interval
                .map(|i| format!("{:.2}–{:.2}", i.low, i.high))
                .unwrap_or("—".into()),
            fmt_mean(s.tokens_per_activation, ""),
            fmt_mean(s.tokens_comparable, ""),
            fmt_mean(s.seconds_per_activation, ""),
            fmt_mean(s.seconds_comparable, ""),
            s.net_value_usd
                .map(|v| format!("{v:.2}"))
                .unwrap_or("not computed".into()),
            s.verdict.as_str()
        ));
    }
    out.push('\n');
    for s in &report.skills {
        out.push_str(&format!(
            "- **{}**: {} — {}\n",
            s.skill,
            s.verdict.as_str(),
            s.reason
        ));
    }
    if report.pricing.value_per_success.is_none() {
        out.push_str("\nNet value needs --value-per-success and token prices (--input-price, --output-price, USD per million tokens).\n");
    }
    out.push_str("\nAdoption is read from what the user did next (docs/history.md: signals); suggestions are heuristic, never evidence of quality.\n");
    out
}

/// The sessions of `host`'s history (when skill-lift reads that host's history) that started
/// in the last `days` days, for `status --dashboard`: empty for a host without a history
/// reader. Returns the start of the window too.
pub(crate) fn dashboard_sessions(
    host: &str,
    roots: &crate::features::history::HistoryRoots,
    days: u32,
) -> Result<(DateTime<Utc>, Vec<HistorySession>), crate::features::history::HistoryError> {
    let since = Utc::now() - chrono::Duration::days(i64::from(days));
    let sessions = match crate::features::history::HistoryHost::parse(host) {
        Ok(history_host) => {
            crate::features::history::read_history(history_host, roots, Some(since))?.sessions
        }
        Err(_) => Vec::new(),
    };
    Ok((since, sessions))
}

/// The usage suggestion per registered skill for `status --dashboard`, from `sessions` of
/// `host` since `since`. Every skill in `skills` gets a row; without history it is
/// `no evidence`, never a green mark.
pub(crate) fn dashboard_usage(
    host: &str,
    since: DateTime<Utc>,
    sessions: &[HistorySession],
    skills: &BTreeSet<String>,
) -> UsageReport {
    let mut report = usage_report(
        host,
        Some(since),
        sessions,
        skills,
        None,
        Pricing::default(),
    );
    report.skills.retain(|s| skills.contains(&s.skill));
    report
}

/// The dashboard's usage section: one line per skill with its suggestion and evidence.
pub(crate) fn dashboard_lines(report: &UsageReport, days: u32) -> String {
    let mut out = format!(
        "use over the last {days} days ({} session(s) of {} history; docs/history.md):\n",
        report.sessions, report.host
    );
    for s in &report.skills {
        out.push_str(&format!(
            "  {}: {} — {}\n",
            s.skill,
            s.verdict.as_str(),
            s.reason
        ));
    }
    out
}

/// Why `skill-lift usage` could not report (every one an input error).
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// The session history cannot be read, or its host or `--since` is unknown.
    #[error(transparent)]
    History(#[from] crate::features::history::HistoryError),
    /// The host logs (`--logs`) cannot be listed or read.
    #[error(transparent)]
    Logs(#[from] crate::features::registry::RegistryError),
    /// A price or value is negative or not a number.
    #[error("--{flag} must be a non-negative number, got {value}")]
    NegativePrice {
        /// The flag, without its dashes.
        flag: &'static str,
        /// The value given.
        value: f64,
    },
}

/// What `skill-lift usage` reads and how it prints.
#[derive(Debug, Clone)]
pub(crate) struct UsageSettings {
    /// The session history (host, stand-in home, `--since`).
    pub history: crate::features::history::request::HistoryRequest,
    /// The window in days when `history.since` is not given.
    pub days: u32,
    /// Only this skill.
    pub skill: Option<String>,
    /// The value and prices (checked to be non-negative).
    pub pricing: Pricing,
    /// The host's skills folder (default: the host's user skills folder under the home).
    pub skills_dir: Option<PathBuf>,
    /// Host log glob whose failure lines are attributed to skills.
    pub logs: Option<PathBuf>,
    /// Print JSON instead of Markdown.
    pub json: bool,
}

impl Pricing {
    /// Refuse a value or price that is negative or not a finite number.
    pub fn check(&self) -> Result<(), UsageError> {
        let given = [
            ("value-per-success", self.value_per_success),
            ("input-price", self.input_per_mtok),
            ("output-price", self.output_per_mtok),
        ];
        for (flag, value) in given {
            if let Some(value) = value
                && !(value.is_finite() && value >= 0.0)
            {
                return Err(UsageError::NegativePrice { flag, value });
            }
        }
        Ok(())
    }
}

/// Run `skill-lift usage`: read the window's history, build the report (with the host logs'
/// failure lines per skill when `settings.logs` is given) and print it on stdout as Markdown,
/// or as JSON with personal paths redacted.
pub(crate) fn report_usage(settings: &UsageSettings) -> Result<UsageReport, UsageError> {
    let host = HistoryHost::parse(&settings.history.host)?;
    settings.pricing.check()?;
    let mut history = settings.history.clone();
    if history.since.is_none() {
        let start = Utc::now() - chrono::Duration::days(i64::from(settings.days));
        history.since = Some(start.to_rfc3339());
    }
    let since = history.since.as_deref().map(parse_since).transpose()?;
    let (roots, read) = history.read()?;
    let skills_dir =
        (settings.skills_dir.clone()).unwrap_or_else(|| host.skills_dir_in(roots.home()));
    let report = usage_report(
        host.as_str(),
        since,
        &read.sessions,
        &installed_skills(&skills_dir),
        settings.skill.as_deref(),
        settings.pricing,
    );
    let logs = (settings.logs.as_deref())
        .map(|glob| log_evidence(&report, glob))
        .transpose()?;
    if settings.json {
        let json = render_json(&report, logs.as_ref());
        crate::values::reporter::result_line(&crate::features::golden::mine::redact_personal(
            &json,
            &[roots.home().to_path_buf()],
        ));
    } else {
        crate::values::reporter::result(&to_markdown(&report));
        if let Some(probe) = &logs {
            crate::values::reporter::result_line(&render_log_line(probe));
        }
    }
    Ok(report)
}

/// The host log lines matching `glob`, attributed to the report's skills (`probe`'s reading).
fn log_evidence(report: &UsageReport, glob: &Path) -> Result<ProbeReport, UsageError> {
    let mut probe = ProbeReport {
        host: report.host.clone(),
        ..Default::default()
    };
    for skill in &report.skills {
        probe.assets.insert(skill.skill.clone(), Default::default());
    }
    let files = crate::features::registry::probe::glob_files(glob)?;
    crate::features::registry::probe::probe_logs(&mut probe, &files)?;
    Ok(probe)
}

/// The report as pretty JSON, with a `logs` object (files, lines, per skill) when `logs` is
/// given.
pub(crate) fn render_json(report: &UsageReport, logs: Option<&ProbeReport>) -> String {
    let mut value = serde_json::to_value(report).expect("a usage report serializes");
    if let Some(probe) = logs {
        let per_skill: serde_json::Map<_, _> = (probe.assets.iter())
            .map(|(name, e)| {
                let counts =
                    serde_json::json!({"lines": e.lines, "failure_lines": e.failure_lines});
                (name.clone(), counts)
            })
            .collect();
        value["logs"] = serde_json::json!({
            "files": probe.log_files.len(),
            "lines": probe.log_lines,
            "per_skill": per_skill,
        });
    }
    serde_json::to_string_pretty(&value).expect("JSON values serialize")
}

/// The line after the Markdown report that sums up the host logs per skill.
pub(crate) fn render_log_line(probe: &ProbeReport) -> String {
    let per_skill: Vec<String> = (probe.assets.iter())
        .map(|(name, e)| format!("{name} {} failure line(s) of {}", e.failure_lines, e.lines))
        .collect();
    format!(
        "\nHost logs ({} file(s), {} line(s)): {}",
        probe.log_files.len(),
        probe.log_lines,
        per_skill.join("; ")
    )
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::history::{HistoryHost, Turn};
    use crate::values::trajectory::{Trajectory, Usage};

    fn session(id: &str, turns: Vec<(&str, &[&str], u64)>) -> HistorySession {
        HistorySession {
            host: HistoryHost::ClaudeCode,
            id: id.into(),
            file: "x".into(),
            cwd: None,
            started: None,
            model: None,
            turns: turns
                .into_iter()
                .map(|(prompt, skills, tokens)| {
                    let mut turn = Turn::new(prompt.into(), None, 0);
                    turn.skills = skills.iter().map(|s| s.to_string()).collect();
                    turn.usage = Usage {
                        input_tokens: Some(tokens),
                        output_tokens: Some(0),
                        ..Usage::default()
                    };
                    turn
                })
                .collect(),
            trajectory: Trajectory::new(),
        }
    }

    #[test]
    fn adoption_net_value_and_verdicts() {
        let sessions = vec![
            session("a", vec![("p", &["notes"], 3000), ("thanks", &[], 1000)]),
            session("b", vec![("p", &["notes"], 3000), ("no, wrong", &[], 1000)]),
            session("c", vec![("p", &["notes"], 3000)]),
            session("d", vec![("other", &[], 1000)]),
        ];
        let pricing = Pricing {
            value_per_success: Some(1.0),
            input_per_mtok: Some(100.0),
            output_per_mtok: Some(100.0),
        };
        let card = skill_usage("notes", &sessions, false, pricing);
        assert_eq!(card.activations, 3);
        assert_eq!((card.adopted, card.overridden), (2, 1));
        assert_eq!(card.sessions_available_unused, 1);
        assert_eq!(card.tokens_per_activation.mean, Some(3000.0));
        assert_eq!(card.tokens_comparable.mean, Some(1000.0));
        // 2000 extra tokens at 100 USD/Mtok = 0.2 USD per activation.
        assert!((card.marginal_cost_usd.unwrap() - 0.2).abs() < 1e-12);
        assert!((card.net_value_usd.unwrap() - (2.0 - 0.6)).abs() < 1e-12);
        assert_eq!(card.verdict, UsageVerdict::Keep);
        let none = skill_usage("ghost", &sessions, true, pricing);
        assert_eq!(none.verdict, UsageVerdict::NoEvidence);
        assert_eq!(none.sessions_available_unused, 4);
        assert!(none.reason.contains("absence of evidence"));
    }

    #[test]
    fn a_negative_or_unknown_price_is_refused_by_its_flag() {
        let ok = Pricing {
            value_per_success: Some(0.0),
            input_per_mtok: None,
            output_per_mtok: Some(3.0),
        };
        assert!(ok.check().is_ok());
        let bad = Pricing {
            input_per_mtok: Some(f64::NAN),
            output_per_mtok: Some(-1.0),
            ..ok
        };
        assert_eq!(
            bad.check().unwrap_err().to_string(),
            "--input-price must be a non-negative number, got NaN"
        );
    }
}
