//! The value card of `status --dashboard` (and of [`refresh_value_cards`], which the resident
//! console's scheduled command calls): per registered skill, the net benefit from measured
//! quantities, kept as a dated series in the state folder, and the rewrite/retire rule over
//! consecutive days of negative value. Reads the baseline store (lift, success rate, trial and
//! judge costs), the session history (calls, adoption, tokens, task frequency) and the series;
//! writes only the series, through `crate::disk`. Prints nothing.
//!
//! **The formula** (the Skill Auditor method, `shared/seeds/`: "net benefit = success-rate lift
//! × task frequency − marginal cost", with a per-skill card of calls, success rate, adoption,
//! average tokens and cumulative net benefit, and "90 days of negative net value → suggest
//! rewrite or retire"). Every term is measured, none guessed:
//!
//! - `L`, **lift** (successes per task): the paired lift of the latest recorded run with both
//!   arms under the asset's current fingerprint — the mean over cases of (with-skill − without-
//!   skill pass rate), with its 95% percentile case-bootstrap interval (`dashboard.rs`).
//! - `F`, **task frequency** (tasks per 30 days): the user turns in the session history that
//!   match the skill (`crate::features::shadow`'s eligibility rule: the prompt names it, the turn
//!   activated it, or the prompt holds two or more of its trigger terms), `k` turns over the
//!   `W` days the history covers (the window, or less when the oldest session read is more
//!   recent), scaled `F = k × 30 / W`, with Garwood's exact 95% Poisson interval of `k`, scaled
//!   the same way. When no session was read at all (a host without a history reader, no
//!   history in the window), the frequency is unknown, not zero.
//! - `C`, **marginal cost** (USD per task): the paired difference of the recorded trial cost
//!   between the arms in the same run — per case, mean with-skill cost − mean without-skill
//!   cost, averaged over the cases priced in both arms. A trial's cost is what its runner
//!   reported, else its tokens at the run's `[price]` table (`baseline.rs`).
//! - `J`, **judge spend** (USD per 30 days): what the LLM judges spent on the asset's stored
//!   trials recorded in the last 30 days (priced judges only).
//! - `V`, **value of one success** (USD): the user's figure (`--value-per-success`); the only
//!   input not measured, so the card never assumes one.
//!
//! Then, in **USD per 30 days** — what a user weighs against what the skill costs:
//!
//! ```text
//! extra successes per 30 days = F × L
//! cost per 30 days            = F × C + J
//! net benefit per 30 days     = F × L × V − (F × C + J)
//! break-even value            = (F × C + J) / (F × L)       (when F × L > 0)
//! ```
//!
//! Intervals are carried through by interval arithmetic: the net benefit is bilinear in `F`
//! and `L`, so its bounds are the least and greatest value at the four corners of the lift's
//! and the frequency's 95% intervals (a conservative bound, not a 95% interval; `C`, `J` and
//! `V` enter as points). Without `V` the net benefit is not computed, but its sign is known
//! when `L ≤ 0` and the cost is positive (negative for every value of a success).
//!
//! **Which input drives a negative value**: `lift` when `L ≤ 0` (the skill adds no success);
//! else `cost` when `L × V < C` (each use costs more than the success it adds); else
//! `frequency` (each use pays, but too few tasks repay the judge spend).
//!
//! **Value over time**: each computation appends one point per skill and day to
//! `value-series.<host>.jsonl` in the state folder (JSON Lines; a second computation on the
//! same day replaces that day's point), written atomically under the file's lock. The
//! **cumulative net benefit** integrates the series: each point's 30-day rate / 30 per day,
//! from its date until the next point's (the latest point counts its own day). The **negative
//! streak** is the run of latest points whose net value is negative (a non-negative point ends
//! it, and so does a point whose sign is unknown: no evidence of negative value), measured in
//! calendar days from its first point to its latest; days without a point inside the run carry
//! it (nothing was observed to the contrary). The rewrite/retire suggestion fires when the
//! streak spans the window (90 days by default), not earlier, naming the input that drove most
//! of its points.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use super::RegistryError;
use super::baseline::{BaselineEntry, BaselineStore, read_store};
use super::dashboard::DashboardRow;
use super::scan::Registry;
use super::state::{create_private_dir, lock_for};
use super::surface::AssetKind;
use crate::analysis::stats::{Interval, poisson_interval};
use crate::features::history::HistorySession;
use crate::features::shadow::{DEFAULT_MIN_TERMS, EligibilityRule};
use crate::features::usage::UsageReport;

/// Days the card's rates are per.
pub const RATE_DAYS: f64 = 30.0;
/// The default window of the rewrite/retire rule: consecutive days of negative net value.
pub const DEFAULT_NEGATIVE_WINDOW_DAYS: u32 = 90;
/// Confidence of the task frequency's interval.
pub const FREQUENCY_CONFIDENCE: f64 = 0.95;

/// Why the value card cannot compute or keep its series.
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    /// The state folder, registry or baseline store cannot be read, or the series written.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The session history cannot be read.
    #[error(transparent)]
    History(#[from] crate::features::history::HistoryError),
    /// A line of the series file is not a value point.
    #[error(
        "{}:{line}: not a value-series point: {message} (fix or delete the line; the other lines are kept)",
        .path.display()
    )]
    MalformedSeries {
        /// The series file.
        path: PathBuf,
        /// The line, 1-based.
        line: usize,
        /// What the JSON parser said.
        message: String,
    },
    /// `--value-per-success` is negative or not a number.
    #[error("--value-per-success must be a non-negative number of USD, got {0}")]
    BadValuePerSuccess(f64),
    /// `--value-window` is 0.
    #[error("--value-window must be at least 1 day")]
    ZeroWindow,
}

/// A measured quantity with its interval (same units as the estimate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The point estimate.
    pub estimate: f64,
    /// Its interval, when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
}

impl Estimate {
    /// The interval's bounds, or the estimate twice without one.
    fn bounds(&self) -> (f64, f64) {
        self.interval
            .map_or((self.estimate, self.estimate), |i| (i.low, i.high))
    }
}

/// The input that drove a negative net value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueDriver {
    /// The skill adds no success: lift ≤ 0.
    Lift,
    /// Each use pays, but too few tasks repay the judge spend.
    Frequency,
    /// Each use costs more than the success it adds: lift × value < marginal cost.
    Cost,
}

impl ValueDriver {
    /// The driver's name as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            ValueDriver::Lift => "lift",
            ValueDriver::Frequency => "frequency",
            ValueDriver::Cost => "cost",
        }
    }

    /// What to do about it, in one sentence.
    pub fn advice(self) -> &'static str {
        match self {
            ValueDriver::Lift => {
                "it adds no success over working without it: rewrite its instructions, or retire it"
            }
            ValueDriver::Frequency => {
                "each use pays, but the task is too rare to repay its evaluation spend: retire it, or evaluate it less often"
            }
            ValueDriver::Cost => {
                "each use costs more than the success it adds: rewrite it to spend fewer tokens (a shorter SKILL.md, fewer tool calls), or retire it"
            }
        }
    }
}

/// An input the net benefit needs that is not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingInput {
    /// No recorded run with both arms under the current fingerprint.
    Lift,
    /// No session of the host's history was read in the window (a host without a history
    /// reader, or no history there): the task frequency is unknown, not zero.
    Frequency,
    /// No trial cost in both arms of that run (no reported cost and no `[price]` table, or a
    /// run stored before costs were kept).
    Cost,
    /// No value of one success (`--value-per-success`).
    ValuePerSuccess,
}

impl fmt::Display for MissingInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MissingInput::Lift => {
                "no lift: no recorded run with both arms under the current fingerprint (`skill-lift run`)"
            }
            MissingInput::Frequency => {
                "no task frequency: no session of this host's history was read in the window (skill-lift reads the history of claude-code, codex, gemini and opencode; `--history-root DIR` for a stand-in home)"
            }
            MissingInput::Cost => {
                "no marginal cost: the latest run's trials have no cost in both arms (a runner profile `[price]` table prices them; a run stored before costs were kept gains them with `skill-lift baseline ingest RUN_DIR`)"
            }
            MissingInput::ValuePerSuccess => {
                "no value of one success (`--value-per-success USD`)"
            }
        })
    }
}

/// The net benefit of one skill from its measured inputs (module docs: the formula).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NetBenefit {
    /// `F × L`: successes per 30 days the skill adds, with interval-arithmetic bounds.
    pub extra_successes_per_30d: Estimate,
    /// `F × C + J`: USD per 30 days the skill costs (the marginal tokens of its tasks and the
    /// judge spend).
    pub cost_usd_per_30d: f64,
    /// `F × L × V − (F × C + J)`: USD per 30 days, with interval-arithmetic bounds; `None`
    /// without a value of one success.
    pub net_usd_per_30d: Option<Estimate>,
    /// `(F × C + J) / (F × L)`: the value of one success above which the skill pays, USD;
    /// `None` when it adds no success.
    pub break_even_value_usd: Option<f64>,
    /// Whether the net value is negative; `None` when its sign is unknown (no value of one
    /// success, and a positive lift).
    pub negative: Option<bool>,
    /// Which input drove a negative net value.
    pub driver: Option<ValueDriver>,
}

/// The net benefit from `lift` (successes per task), `frequency` (tasks per 30 days),
/// `marginal_cost_usd` (per task), `judge_usd_per_30d` and the value of one success (USD).
pub fn net_benefit(
    lift: Estimate,
    frequency: Estimate,
    marginal_cost_usd: f64,
    judge_usd_per_30d: f64,
    value_per_success_usd: Option<f64>,
) -> NetBenefit {
    let (l, f) = (lift.estimate, frequency.estimate);
    let ((l_low, l_high), (f_low, f_high)) = (lift.bounds(), frequency.bounds());
    let corners = [
        (f_low, l_low),
        (f_low, l_high),
        (f_high, l_low),
        (f_high, l_high),
    ];
    let span = |g: &dyn Fn(f64, f64) -> f64| {
        let values = corners.map(|(f, l)| g(f, l));
        Interval {
            low: values.iter().copied().fold(f64::INFINITY, f64::min),
            high: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    };
    let has_intervals = lift.interval.is_some() || frequency.interval.is_some();
    let extra = Estimate {
        estimate: f * l,
        interval: has_intervals.then(|| span(&|f, l| f * l)),
    };
    let cost = f * marginal_cost_usd + judge_usd_per_30d;
    let net = value_per_success_usd.map(|v| Estimate {
        estimate: f * l * v - cost,
        interval: has_intervals
            .then(|| span(&|f, l| f * (l * v - marginal_cost_usd) - judge_usd_per_30d)),
    });
    let negative = match net {
        Some(net) => Some(net.estimate < 0.0),
        None if l <= 0.0 && cost > 0.0 => Some(true),
        None => None,
    };
    let driver = (negative == Some(true)).then(|| {
        if l <= 0.0 {
            ValueDriver::Lift
        } else if value_per_success_usd.is_some_and(|v| l * v < marginal_cost_usd) {
            ValueDriver::Cost
        } else {
            ValueDriver::Frequency
        }
    });
    NetBenefit {
        extra_successes_per_30d: extra,
        cost_usd_per_30d: cost,
        net_usd_per_30d: net,
        break_even_value_usd: (f * l > 0.0).then(|| cost / (f * l)),
        negative,
        driver,
    }
}

/// The task frequency per 30 days from `matching_turns` over `window_days`, with Garwood's
/// exact Poisson interval scaled the same way; `None` for an empty window.
pub fn frequency_per_30d(matching_turns: u64, window_days: f64) -> Option<Estimate> {
    if window_days.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let scale = RATE_DAYS / window_days;
    Some(Estimate {
        estimate: matching_turns as f64 * scale,
        interval: poisson_interval(matching_turns, FREQUENCY_CONFIDENCE).map(|i| Interval {
            low: i.low * scale,
            high: i.high * scale,
        }),
    })
}

/// One skill's point of the value series (one line of `value-series.<host>.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValuePoint {
    /// The day (UTC) it was computed.
    pub date: NaiveDate,
    /// The skill.
    pub skill: String,
    /// Net benefit, USD per 30 days (`None` without a value of one success or another input).
    pub net_usd_per_30d: Option<f64>,
    /// Whether the net value was negative (`None`: unknown).
    pub negative: Option<bool>,
    /// Which input drove a negative value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<ValueDriver>,
    /// The inputs: lift (successes per task), frequency (tasks per 30 days), marginal cost
    /// (USD per task), judge spend (USD per 30 days), the value of one success (USD), the run.
    pub lift: Option<f64>,
    pub frequency_per_30d: Option<f64>,
    pub marginal_cost_usd: Option<f64>,
    pub judge_usd_per_30d: f64,
    pub value_per_success_usd: Option<f64>,
    pub run: Option<String>,
}

/// The cumulative net benefit of a series (module docs: how it integrates).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CumulativeNet {
    /// USD since `since`.
    pub usd: f64,
    /// The first point with a net value.
    pub since: NaiveDate,
    /// Days counted.
    pub days: u32,
}

/// A run of latest points with negative net value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NegativeStreak {
    /// Its first day.
    pub since: NaiveDate,
    /// Its latest day.
    pub through: NaiveDate,
    /// Calendar days from `since` to `through`, both counted.
    pub days: u32,
    /// The input that drove most of its points (the latest point's on a tie).
    pub driver: Option<ValueDriver>,
}

/// The rewrite/retire suggestion: negative net value for at least the window's days.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueSuggestion {
    /// The streak that fired it.
    pub streak: NegativeStreak,
    /// The window (days) it had to span.
    pub window_days: u32,
}

impl fmt::Display for ValueSuggestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let streak = &self.streak;
        write!(
            f,
            "rewrite or retire — net value negative for {} consecutive days (since {}, rule: {} days)",
            streak.days, streak.since, self.window_days
        )?;
        match streak.driver {
            Some(driver) => write!(f, ", driven by {}: {}", driver.as_str(), driver.advice()),
            None => Ok(()),
        }
    }
}

/// The negative streak ending at the latest of `points` (one skill's, any order).
pub fn negative_streak(points: &[&ValuePoint]) -> Option<NegativeStreak> {
    let mut sorted: Vec<&ValuePoint> = points.to_vec();
    sorted.sort_by_key(|p| p.date);
    let run: Vec<&ValuePoint> = sorted
        .iter()
        .rev()
        .take_while(|p| p.negative == Some(true))
        .copied()
        .collect();
    let (through, since) = (run.first()?.date, run.last()?.date);
    let mut counts: BTreeMap<ValueDriver, usize> = BTreeMap::new();
    for point in &run {
        if let Some(driver) = point.driver {
            *counts.entry(driver).or_default() += 1;
        }
    }
    let most = counts.values().copied().max();
    let driver = run
        .iter()
        .filter_map(|p| p.driver)
        .find(|d| Some(counts[d]) == most);
    Some(NegativeStreak {
        since,
        through,
        days: u32::try_from((through - since).num_days() + 1).unwrap_or(u32::MAX),
        driver,
    })
}

/// The suggestion when `streak` spans `window_days`.
pub fn suggestion(streak: Option<NegativeStreak>, window_days: u32) -> Option<ValueSuggestion> {
    streak
        .filter(|s| s.days >= window_days)
        .map(|streak| ValueSuggestion {
            streak,
            window_days,
        })
}

/// The cumulative net benefit of `points` (one skill's, any order); `None` without a point
/// that has a net value.
pub fn cumulative_net(points: &[&ValuePoint]) -> Option<CumulativeNet> {
    let mut known: Vec<(NaiveDate, f64)> = points
        .iter()
        .filter_map(|p| p.net_usd_per_30d.map(|net| (p.date, net)))
        .collect();
    known.sort_by_key(|(date, _)| *date);
    let since = known.first()?.0;
    let mut usd = 0.0;
    let mut days = 0;
    for (index, (date, net)) in known.iter().enumerate() {
        let span = known
            .get(index + 1)
            .map_or(1, |(next, _)| (*next - *date).num_days().max(0));
        usd += net / RATE_DAYS * span as f64;
        days += span;
    }
    Some(CumulativeNet {
        usd,
        since,
        days: u32::try_from(days).unwrap_or(u32::MAX),
    })
}

/// The series file of `host` in the state folder.
pub fn series_path(state: &Path, host: &str) -> PathBuf {
    state.join(format!("value-series.{host}.jsonl"))
}

/// Read a series file (empty when it does not exist). A line that is not a point is an error
/// naming the file and the line; blank lines are skipped.
pub fn read_series(path: &Path) -> Result<Vec<ValuePoint>, ValueError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(RegistryError::io(path)(error).into()),
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|error| ValueError::MalformedSeries {
                path: path.to_path_buf(),
                line: index + 1,
                message: error.to_string(),
            })
        })
        .collect()
}

/// Add `points` to the series at `path` — replacing a point of the same skill and day, so a
/// day holds one point per skill at most — and return the whole series, ordered by day and
/// skill. Under the file's lock; written atomically (private, like every state file). A
/// malformed file is an error and is left as it is.
pub fn record_points(path: &Path, points: &[ValuePoint]) -> Result<Vec<ValuePoint>, ValueError> {
    let _lock = lock_for(path)?;
    let mut series = read_series(path)?;
    series.retain(|old| {
        !points
            .iter()
            .any(|new| new.date == old.date && new.skill == old.skill)
    });
    series.extend(points.iter().cloned());
    series.sort_by(|a, b| (a.date, &a.skill).cmp(&(b.date, &b.skill)));
    let mut bytes = Vec::new();
    for point in &series {
        let line = serde_json::to_string(point).map_err(|error| RegistryError::Invalid {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(RegistryError::io(dir))?;
    crate::disk::write_atomic_with(path, &bytes, crate::disk::FileAccess::Private).map_err(
        |error| RegistryError::Io {
            path: error.path,
            source: error.source,
        },
    )?;
    Ok(series)
}

/// What the value cards are computed with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValueSettings {
    /// The value of one success, USD (`--value-per-success`); `None`: the net benefit is not
    /// computed (its sign still is where the lift alone decides it).
    pub value_per_success_usd: Option<f64>,
    /// Consecutive days of negative net value before the rewrite/retire suggestion
    /// (`--value-window`, default [`DEFAULT_NEGATIVE_WINDOW_DAYS`]).
    pub window_days: u32,
    /// The day the points are recorded under (today, UTC).
    pub today: NaiveDate,
}

impl ValueSettings {
    /// Settings for today (UTC).
    pub fn new(value_per_success_usd: Option<f64>, window_days: u32) -> Self {
        ValueSettings {
            value_per_success_usd,
            window_days,
            today: Utc::now().date_naive(),
        }
    }

    /// Refuse a negative or non-finite value and an empty window.
    pub fn check(&self) -> Result<(), ValueError> {
        if let Some(value) = self.value_per_success_usd
            && !(value.is_finite() && value >= 0.0)
        {
            return Err(ValueError::BadValuePerSuccess(value));
        }
        if self.window_days == 0 {
            return Err(ValueError::ZeroWindow);
        }
        Ok(())
    }
}

/// One skill's value card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValueCard {
    /// The skill.
    pub skill: String,
    /// Activations in the history window.
    pub calls: usize,
    /// With-skill pass rate of the latest run, in [0, 1].
    pub success_rate: Option<f64>,
    /// Share of activations with a follow-up signal that the user adopted, in [0, 1].
    pub adoption_rate: Option<f64>,
    /// Mean input + output tokens per activation.
    pub average_tokens: Option<f64>,
    /// The run the lift and cost come from.
    pub latest_run: Option<String>,
    /// `L`: successes per task, with its 95% interval.
    pub lift: Option<Estimate>,
    /// User turns in the history that match the skill.
    pub matching_turns: usize,
    /// Days of history they were counted over.
    pub history_days: f64,
    /// `F`: tasks per 30 days, with its 95% interval.
    pub frequency_per_30d: Option<Estimate>,
    /// `C`: USD per task (with-skill − without-skill trial cost).
    pub marginal_cost_usd: Option<f64>,
    /// Cases priced in both arms that `C` averages.
    pub cost_cases: usize,
    /// `J`: judge spend on the asset's trials recorded in the last 30 days, USD.
    pub judge_usd_per_30d: f64,
    /// The net benefit, when lift, frequency and cost are known.
    pub net: Option<NetBenefit>,
    /// What the net benefit lacks.
    pub missing: Vec<MissingInput>,
    /// The series' cumulative net benefit (today's point included).
    pub cumulative: Option<CumulativeNet>,
    /// The current run of negative days.
    pub negative_streak: Option<NegativeStreak>,
    /// The rewrite/retire suggestion, once the streak spans the window.
    pub suggestion: Option<ValueSuggestion>,
}

impl ValueCard {
    /// Today's point of the series.
    fn point(&self, settings: &ValueSettings) -> ValuePoint {
        let net = self.net.as_ref();
        ValuePoint {
            date: settings.today,
            skill: self.skill.clone(),
            net_usd_per_30d: net.and_then(|n| n.net_usd_per_30d).map(|n| n.estimate),
            negative: net.and_then(|n| n.negative),
            driver: net.and_then(|n| n.driver),
            lift: self.lift.map(|l| l.estimate),
            frequency_per_30d: self.frequency_per_30d.map(|f| f.estimate),
            marginal_cost_usd: self.marginal_cost_usd,
            judge_usd_per_30d: self.judge_usd_per_30d,
            value_per_success_usd: settings.value_per_success_usd,
            run: self.latest_run.clone(),
        }
    }
}

/// The value cards of one host, as computed and recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValueBook {
    /// The host.
    pub host: String,
    /// The day recorded.
    pub date: NaiveDate,
    /// The series file.
    pub series: PathBuf,
    /// The value of one success used, USD.
    pub value_per_success_usd: Option<f64>,
    /// The rule's window, days.
    pub window_days: u32,
    /// One card per registered skill.
    pub cards: Vec<ValueCard>,
}

/// Turns of `sessions` matching the skill `name` / `description`, and the days of history
/// they cover up to `now` (the window, or less when the oldest session is more recent; at
/// least one day).
fn matching_turns(
    name: &str,
    description: &str,
    sessions: &[HistorySession],
    window_days: u32,
    now: DateTime<Utc>,
) -> (usize, f64) {
    let rule = EligibilityRule::of_name(name, description, DEFAULT_MIN_TERMS, false);
    let count = sessions
        .iter()
        .flat_map(|s| &s.turns)
        .filter(|turn| !rule.eligibility(&turn.prompt, &turn.skills).is_empty())
        .count();
    let oldest = sessions
        .iter()
        .filter_map(|s| s.started.or_else(|| s.turns.first().and_then(|t| t.at)))
        .min();
    let covered = oldest.map_or(f64::from(window_days), |oldest| {
        ((now - oldest).num_seconds() as f64 / 86_400.0).clamp(1.0, f64::from(window_days))
    });
    (count, covered)
}

/// `C` of `run`: per case priced in both arms, mean with-skill cost − mean without-skill
/// cost, averaged over those cases; with the number of cases.
fn marginal_cost(entries: &[&BaselineEntry], run: &str) -> Option<(f64, usize)> {
    let mut per_case: BTreeMap<&str, [(f64, usize); 2]> = BTreeMap::new();
    for entry in entries.iter().filter(|e| e.run_id.as_deref() == Some(run)) {
        let side = match entry.arm.as_str() {
            "with_skill" => 0,
            "without_skill" => 1,
            _ => continue,
        };
        if let Some(cost) = entry.cost_usd {
            let slot = &mut per_case.entry(entry.case_id.as_str()).or_default()[side];
            slot.0 += cost;
            slot.1 += 1;
        }
    }
    let differences: Vec<f64> = per_case
        .values()
        .filter(|[with, without]| with.1 > 0 && without.1 > 0)
        .map(|[with, without]| with.0 / with.1 as f64 - without.0 / without.1 as f64)
        .collect();
    (!differences.is_empty()).then(|| {
        (
            differences.iter().sum::<f64>() / differences.len() as f64,
            differences.len(),
        )
    })
}

/// Everything one computation reads, already loaded.
#[derive(Debug, Clone, Copy)]
pub struct ValueSources<'a> {
    /// The host's registry.
    pub registry: &'a Registry,
    /// The baseline store.
    pub store: &'a BaselineStore,
    /// The dashboard rows (lift, success rate, latest run).
    pub rows: &'a [DashboardRow],
    /// Use from the history window (calls, adoption, tokens).
    pub usage: &'a UsageReport,
    /// The sessions of the history window.
    pub sessions: &'a [HistorySession],
    /// The history window, days.
    pub history_days: u32,
}

/// Compute the value card of every registered skill from `sources`, record today's points in
/// the host's series in `state` and return the cards with their cumulative net benefit,
/// negative streak and suggestion.
pub fn value_book(
    state: &Path,
    host: &str,
    sources: ValueSources<'_>,
    settings: &ValueSettings,
) -> Result<ValueBook, ValueError> {
    settings.check()?;
    let now = Utc::now();
    let month_ago = now - chrono::Duration::days(RATE_DAYS as i64);
    let mut cards = Vec::new();
    for (name, asset) in &sources.registry.assets {
        if asset.kind != AssetKind::Skill {
            continue;
        }
        let row = sources.rows.iter().find(|r| &r.asset == name);
        let usage = sources.usage.skills.iter().find(|s| &s.skill == name);
        let entries: Vec<&BaselineEntry> = sources
            .store
            .assets
            .get(name)
            .map(|a| a.entries.iter().collect())
            .unwrap_or_default();
        let lift = row.and_then(|r| {
            r.lift.map(|estimate| Estimate {
                estimate,
                interval: r.lift_ci.map(|(low, high)| Interval { low, high }),
            })
        });
        let latest_run = row.and_then(|r| r.latest_run.clone());
        let cost = latest_run
            .as_deref()
            .and_then(|run| marginal_cost(&entries, run));
        // `+ 0.0`: a sum of no f64 is −0.0, which would print as "-0.00".
        let judge_usd_per_30d: f64 = entries
            .iter()
            .filter(|e| e.recorded_at > month_ago)
            .filter_map(|e| e.judge_cost_usd)
            .sum::<f64>()
            + 0.0;
        let (turns, days) = matching_turns(
            name,
            &asset.description,
            sources.sessions,
            sources.history_days,
            now,
        );
        // Without any session read, the frequency is unknown, not zero.
        let frequency = (!sources.sessions.is_empty())
            .then(|| frequency_per_30d(turns as u64, days))
            .flatten();
        let mut missing = Vec::new();
        if lift.is_none() {
            missing.push(MissingInput::Lift);
        }
        if frequency.is_none() {
            missing.push(MissingInput::Frequency);
        }
        if lift.is_some() && cost.is_none() {
            missing.push(MissingInput::Cost);
        }
        if settings.value_per_success_usd.is_none() {
            missing.push(MissingInput::ValuePerSuccess);
        }
        let net = match (lift, frequency, cost) {
            (Some(lift), Some(frequency), Some((cost, _))) => Some(net_benefit(
                lift,
                frequency,
                cost,
                judge_usd_per_30d,
                settings.value_per_success_usd,
            )),
            _ => None,
        };
        cards.push(ValueCard {
            skill: name.clone(),
            calls: usage.map_or(0, |u| u.activations),
            success_rate: row.and_then(|r| r.success_rate),
            adoption_rate: usage.and_then(|u| u.adoption_rate),
            average_tokens: usage.and_then(|u| u.tokens_per_activation.mean),
            latest_run,
            lift,
            matching_turns: turns,
            history_days: days,
            frequency_per_30d: frequency,
            marginal_cost_usd: cost.map(|c| c.0),
            cost_cases: cost.map_or(0, |c| c.1),
            judge_usd_per_30d,
            net,
            missing,
            cumulative: None,
            negative_streak: None,
            suggestion: None,
        });
    }
    let path = series_path(state, host);
    let points: Vec<ValuePoint> = cards.iter().map(|c| c.point(settings)).collect();
    let series = record_points(&path, &points)?;
    for card in &mut cards {
        let mine: Vec<&ValuePoint> = series.iter().filter(|p| p.skill == card.skill).collect();
        card.cumulative = cumulative_net(&mine);
        card.negative_streak = negative_streak(&mine);
        card.suggestion = suggestion(card.negative_streak, settings.window_days);
    }
    Ok(ValueBook {
        host: host.to_string(),
        date: settings.today,
        series: path,
        value_per_success_usd: settings.value_per_success_usd,
        window_days: settings.window_days,
        cards,
    })
}

/// Recompute and record the value cards of `host` from the state folder and the session
/// history (`history_root` standing in for the home folder; the last `history_days` days):
/// the one call a scheduled command (the resident console's re-evaluation) makes to keep the
/// series current. `status --dashboard` computes the same from what it has already read.
pub fn refresh_value_cards(
    state: &Path,
    host: &str,
    history_root: Option<&Path>,
    history_days: u32,
    settings: &ValueSettings,
) -> Result<ValueBook, ValueError> {
    settings.check()?;
    let registry =
        super::scan::read_registry(state, host)?.ok_or_else(|| RegistryError::Invalid {
            path: super::scan::registry_path(state, host),
            message: format!(
                "no registry for host `{host}` yet; run `skill-lift scan --host {host}` first"
            ),
        })?;
    let store = read_store(state)?;
    let rows = super::dashboard::dashboard(&registry, &store);
    let roots = crate::features::history::HistoryRoots::resolve(history_root)?;
    let (since, sessions) = crate::features::usage::dashboard_sessions(host, &roots, history_days)?;
    let skills = registry
        .assets
        .iter()
        .filter(|(_, a)| a.kind == AssetKind::Skill)
        .map(|(name, _)| name.clone())
        .collect();
    let usage = crate::features::usage::dashboard_usage(host, since, &sessions, &skills);
    let sources = ValueSources {
        registry: &registry,
        store: &store,
        rows: &rows,
        usage: &usage,
        sessions: &sessions,
        history_days,
    };
    value_book(state, host, sources, settings)
}

fn signed(value: f64, decimals: usize) -> String {
    format!("{value:+.decimals$}")
}

fn estimate_text(estimate: Option<Estimate>, scale: f64, decimals: usize, sign: bool) -> String {
    let show = |v: f64| {
        if sign {
            signed(v * scale, decimals)
        } else {
            format!("{:.decimals$}", v * scale)
        }
    };
    match estimate {
        Some(e) => match e.interval {
            Some(i) => format!("{} [{}, {}]", show(e.estimate), show(i.low), show(i.high)),
            None => show(e.estimate),
        },
        None => "-".to_string(),
    }
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or("-".to_string(), |r| format!("{:.0}%", r * 100.0))
}

/// The value cards as `status --dashboard` prints them: a table, then one line per skill
/// saying what its net value rests on, what it lacks, or the rewrite/retire suggestion.
pub fn render_value(book: &ValueBook) -> String {
    let mut out = format!(
        "value per skill (USD per 30 days: lift × tasks × value per success − tasks × cost per task − judge spend; value per success {}; docs/registry.md#the-value-card):\n",
        book.value_per_success_usd
            .map_or("not given".to_string(), |v| format!("{v:.2} USD"))
    );
    out.push_str(&format!(
        "{:<24} {:>5} {:>7} {:>8} {:>10} {:>22} {:>20} {:>10} {:>24} {:>12}\n",
        "skill",
        "calls",
        "success",
        "adoption",
        "avg tokens",
        "lift pp [95% CI]",
        "tasks/30d [95% CI]",
        "cost/task",
        "net USD/30d [bounds]",
        "cumulative"
    ));
    for card in &book.cards {
        let net = card.net.and_then(|n| n.net_usd_per_30d);
        out.push_str(&format!(
            "{:<24} {:>5} {:>7} {:>8} {:>10} {:>22} {:>20} {:>10} {:>24} {:>12}\n",
            card.skill,
            card.calls,
            percent(card.success_rate),
            percent(card.adoption_rate),
            card.average_tokens
                .map_or("-".to_string(), |t| format!("{t:.0}")),
            estimate_text(card.lift, 100.0, 0, true),
            estimate_text(card.frequency_per_30d, 1.0, 1, false),
            card.marginal_cost_usd
                .map_or("-".to_string(), |c| format!("{c:.4}")),
            estimate_text(net, 1.0, 2, true),
            card.cumulative
                .map_or("-".to_string(), |c| signed(c.usd, 2)),
        ));
    }
    for card in &book.cards {
        let line = if let Some(suggestion) = &card.suggestion {
            suggestion.to_string()
        } else {
            let mut parts = Vec::new();
            if let Some(net) = &card.net {
                let extra = net.extra_successes_per_30d.estimate;
                parts.push(format!(
                    "adds {extra:+.2} successes and costs {:.2} USD per 30 days ({} matching turns in {:.0} days of history; judge spend {:.2} USD)",
                    net.cost_usd_per_30d, card.matching_turns, card.history_days, card.judge_usd_per_30d
                ));
                if net.net_usd_per_30d.is_none()
                    && let Some(break_even) = net.break_even_value_usd
                {
                    parts.push(format!(
                        "pays when one success is worth more than {break_even:.4} USD"
                    ));
                }
            }
            parts.extend(
                card.missing
                    .iter()
                    .filter(|m| card.net.is_none() || **m == MissingInput::ValuePerSuccess)
                    .map(ToString::to_string),
            );
            match card.negative_streak {
                Some(streak) => parts.push(format!(
                    "negative for {} day(s) since {}{}; the suggestion comes at {} days",
                    streak.days,
                    streak.since,
                    streak
                        .driver
                        .map_or(String::new(), |d| format!(" (driven by {})", d.as_str())),
                    book.window_days
                )),
                None if card.net.and_then(|n| n.negative) == Some(false) => {
                    parts.push("net value not negative today".to_string())
                }
                None => {}
            }
            parts.join("; ")
        };
        out.push_str(&format!("  {}: {line}\n", card.skill));
    }
    out.push_str(&format!(
        "series: {} (one point per skill and day)\n",
        book.series.display()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(n: i64) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Duration::days(n)
    }

    fn point(n: i64, net: f64) -> ValuePoint {
        ValuePoint {
            date: day(n),
            skill: "s".into(),
            net_usd_per_30d: Some(net),
            negative: Some(net < 0.0),
            driver: (net < 0.0).then_some(ValueDriver::Cost),
            lift: Some(0.1),
            frequency_per_30d: Some(10.0),
            marginal_cost_usd: Some(0.5),
            judge_usd_per_30d: 0.0,
            value_per_success_usd: Some(1.0),
            run: None,
        }
    }

    fn fires(points: &[ValuePoint]) -> Option<ValueSuggestion> {
        let refs: Vec<&ValuePoint> = points.iter().collect();
        suggestion(negative_streak(&refs), DEFAULT_NEGATIVE_WINDOW_DAYS)
    }

    /// The fixture of the value card: lift +0.25 [0.05, 0.45] successes per task, 12 matching
    /// turns in 60 days, marginal cost 0.04 USD per task, judge spend 0.30 USD per 30 days,
    /// 2.00 USD per success.
    #[test]
    fn net_benefit_equals_the_hand_computed_figure() {
        let frequency = frequency_per_30d(12, 60.0).unwrap();
        // F = 12 × 30 / 60 = 6 tasks per 30 days.
        assert!((frequency.estimate - 6.0).abs() < 1e-12);
        // Garwood 95% for 12 events: 6.2006–20.9622, × 30/60.
        let f = frequency.interval.unwrap();
        assert!(
            (f.low - 3.1003).abs() < 1e-3 && (f.high - 10.4811).abs() < 1e-3,
            "{f:?}"
        );
        let lift = Estimate {
            estimate: 0.25,
            interval: Some(Interval {
                low: 0.05,
                high: 0.45,
            }),
        };
        let net = net_benefit(lift, frequency, 0.04, 0.30, Some(2.0));
        // Extra successes: F × L = 6 × 0.25 = 1.5 per 30 days.
        assert!((net.extra_successes_per_30d.estimate - 1.5).abs() < 1e-12);
        // Cost: F × C + J = 6 × 0.04 + 0.30 = 0.54 USD per 30 days.
        assert!((net.cost_usd_per_30d - 0.54).abs() < 1e-12);
        // Net: F × L × V − cost = 1.5 × 2.00 − 0.54 = 2.46 USD per 30 days.
        let usd = net.net_usd_per_30d.unwrap();
        assert!((usd.estimate - 2.46).abs() < 1e-12, "{usd:?}");
        // Bounds at the corners: low F = 3.1003, L = 0.05: 3.1003 × (0.10 − 0.04) − 0.30
        // = −0.1140; high F = 10.4811, L = 0.45: 10.4811 × (0.90 − 0.04) − 0.30 = 8.7137.
        let bounds = usd.interval.unwrap();
        assert!((bounds.low - (-0.1140)).abs() < 1e-3, "{bounds:?}");
        assert!((bounds.high - 8.7137).abs() < 1e-3, "{bounds:?}");
        // Break-even: 0.54 / 1.5 = 0.36 USD per success.
        assert!((net.break_even_value_usd.unwrap() - 0.36).abs() < 1e-12);
        assert_eq!((net.negative, net.driver), (Some(false), None));
    }

    #[test]
    fn the_driver_names_lift_cost_or_frequency() {
        let frequency = Estimate {
            estimate: 6.0,
            interval: None,
        };
        let lift = |estimate| Estimate {
            estimate,
            interval: None,
        };
        // Lift ≤ 0: negative whatever a success is worth, even without a value.
        let no_lift = net_benefit(lift(-0.1), frequency, 0.04, 0.0, None);
        assert_eq!(no_lift.net_usd_per_30d, None);
        assert_eq!(
            (no_lift.negative, no_lift.driver),
            (Some(true), Some(ValueDriver::Lift))
        );
        // 0.25 × 0.10 = 0.025 < 0.04 USD per task: each use costs more than it adds.
        let costly = net_benefit(lift(0.25), frequency, 0.04, 0.0, Some(0.10));
        assert_eq!(costly.driver, Some(ValueDriver::Cost));
        // 0.25 × 2 = 0.50 > 0.04, but 6 × 0.46 = 2.76 < 5.00 USD of judge spend.
        let rare = net_benefit(lift(0.25), frequency, 0.04, 5.0, Some(2.0));
        assert!((rare.net_usd_per_30d.unwrap().estimate - (3.0 - 5.24)).abs() < 1e-12);
        assert_eq!(rare.driver, Some(ValueDriver::Frequency));
        // A positive lift without a value: the sign is unknown.
        let unknown = net_benefit(lift(0.25), frequency, 0.04, 0.0, None);
        assert_eq!((unknown.negative, unknown.driver), (None, None));
    }

    #[test]
    fn the_rule_fires_only_after_90_consecutive_negative_days() {
        // 89 negative days: no suggestion.
        let mut points: Vec<ValuePoint> = (0..89).map(|n| point(n, -1.0)).collect();
        assert_eq!(fires(&points), None);
        let streak = negative_streak(&points.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!((streak.since, streak.days), (day(0), 89));
        // The 90th: it fires, and names the driver.
        points.push(point(89, -1.0));
        let fired = fires(&points).unwrap();
        assert_eq!(fired.streak.days, 90);
        assert_eq!(fired.streak.driver, Some(ValueDriver::Cost));
        assert!(fired.to_string().contains("driven by cost"), "{fired}");
        // A positive day resets: 90 more points from a positive day 45 fire no earlier than
        // 90 days after it.
        let mut reset: Vec<ValuePoint> = (0..130).map(|n| point(n, -1.0)).collect();
        reset[45] = point(45, 0.5);
        assert_eq!(fires(&reset), None);
        let streak = negative_streak(&reset.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!((streak.since, streak.days), (day(46), 84));
        reset.extend((130..136).map(|n| point(n, -1.0)));
        assert_eq!(fires(&reset).unwrap().streak.since, day(46));
        // An unknown sign ends the streak too: no evidence of negative value.
        let mut unknown: Vec<ValuePoint> = (0..100).map(|n| point(n, -1.0)).collect();
        unknown[50].negative = None;
        unknown[50].net_usd_per_30d = None;
        assert_eq!(fires(&unknown), None);
        // A configured window.
        let refs: Vec<&ValuePoint> = points[..30].iter().collect();
        assert!(suggestion(negative_streak(&refs), 30).is_some());
        assert!(suggestion(negative_streak(&refs), 31).is_none());
    }

    #[test]
    fn cumulative_net_spreads_each_rate_until_the_next_point() {
        // 3.00 USD/30d for 10 days, then −6.00 USD/30d for 5 days, then 1 day at 30.00.
        let points = [point(0, 3.0), point(10, -6.0), point(15, 30.0)];
        let cumulative = cumulative_net(&points.iter().collect::<Vec<_>>()).unwrap();
        // 3/30 × 10 − 6/30 × 5 + 30/30 × 1 = 1 − 1 + 1 = 1.
        assert!((cumulative.usd - 1.0).abs() < 1e-12, "{cumulative:?}");
        assert_eq!((cumulative.since, cumulative.days), (day(0), 16));
    }

    #[test]
    fn the_series_keeps_one_point_per_day_and_names_a_malformed_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = series_path(dir.path(), "h");
        record_points(&path, &[point(0, 1.0), point(1, 2.0)]).unwrap();
        let series = record_points(&path, &[point(1, -3.0)]).unwrap();
        assert_eq!(series.len(), 2);
        assert_eq!(series[1].net_usd_per_30d, Some(-3.0));
        assert_eq!(read_series(&path).unwrap(), series);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"date\": \"2026-02-30\"}\n");
        std::fs::write(&path, &text).unwrap();
        let error = record_points(&path, &[point(2, 1.0)]).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("value-series.h.jsonl:3:") && message.contains("fix or delete"),
            "{message}"
        );
        // Nothing was written over the malformed file.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn marginal_cost_pairs_cases_priced_in_both_arms() {
        let entry = |case: &str, arm: &str, cost: Option<f64>| BaselineEntry {
            fingerprint: "f".into(),
            calibre: "c".into(),
            model: "m".into(),
            observed_model: None,
            trial_at: None,
            runner: "r".into(),
            case_id: case.into(),
            eval_set: None,
            arm: arm.into(),
            attempt: 1,
            verdict: crate::record::Outcome::Pass,
            source: super::super::baseline::EntrySource::Run,
            run_id: Some("run".into()),
            recorded_at: Utc::now(),
            activated: None,
            checks: vec![],
            tool_calls: None,
            tool_call_errors: None,
            reason: None,
            cost_usd: cost,
            judge_cost_usd: None,
        };
        let entries = [
            entry("a", "with_skill", Some(0.03)),
            entry("a", "with_skill", Some(0.05)),
            entry("a", "without_skill", Some(0.01)),
            entry("b", "with_skill", Some(0.02)),
            entry("b", "without_skill", Some(0.02)),
            entry("c", "with_skill", Some(0.09)),
            entry("c", "without_skill", None),
        ];
        let refs: Vec<&BaselineEntry> = entries.iter().collect();
        // a: 0.04 − 0.01 = 0.03; b: 0; c unpriced without: left out. Mean 0.015 over 2.
        let (cost, cases) = marginal_cost(&refs, "run").unwrap();
        assert!((cost - 0.015).abs() < 1e-12);
        assert_eq!(cases, 2);
        assert!(marginal_cost(&refs, "other").is_none());
    }
}
