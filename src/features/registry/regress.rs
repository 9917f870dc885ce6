//! The pass-rate matrix of each asset from the baseline store: rows = fingerprint × runner ×
//! eval set (verdicts of different runners or eval sets are never pooled or compared), columns
//! = model version, cells = pass rate with interval, N and K (a cell pools the attempts of every
//! run in it: the same cases, runner and eval set), and the regression flags of
//! `shared/design.md`:
//!
//! - `DEGRADED`: under one fingerprint, between consecutive model versions with data, the pass
//!   rate over the cases both cells share drops by at least the threshold (20 pp by default), more
//!   cases went down than up, and the paired test over cases (McNemar mid-p at K = 1, sign-flip
//!   permutation otherwise; statistics.md §5–6) is significant after Benjamini–Hochberg across
//!   the asset's matrix (q = 0.10 by default, §8);
//! - `VOLATILE`: a drop the same paired test finds significant after the same adjustment
//!   (BH-adjusted p ≤ q) that misses DEGRADED's threshold or has no more cases down than up: a
//!   real but smaller drop, to watch. A drop the test does not find significant is `STABLE`
//!   (before, any drop was VOLATILE: 84–93% of synthetic stores where nothing changed raised
//!   it; `scripts/check-regress` measures the criterion's rate under no change);
//! - `FINGERPRINT-DRIFT`: the asset has several fingerprints: it was edited; rows coexist and are
//!   never compared with each other.
//!
//! Per-case Fisher exact p-values (§7) with BH adjustment are listed for cases that went down (at
//! least two trials a side), labelled "low power" below 10 trials. Attribution of each DEGRADED comparison reads the stored
//! trajectory signals (activation, tool-call errors, check types) into a typed [`Cause`]. Everything here is a pure function of the store,
//! except the command's workflow ([`regress_command`]), which reads the store and prints and
//! writes the report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::RegistryError;
use super::baseline::{BaselineEntry, BaselineStore};
use crate::analysis::stats::{
    BootstrapMethod, benjamini_hochberg, bootstrap_mean_interval, mcnemar, regression_fisher_p,
    sign_flip_test, wilson_interval,
};

/// Settings of the matrix and flags.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegressSettings {
    /// Only this asset (all when `None`).
    pub asset: Option<String>,
    /// Arm whose pass rate fills the matrix.
    pub arm: String,
    /// Minimum drop for DEGRADED, percentage points.
    pub threshold_pp: f64,
    /// Benjamini–Hochberg false-discovery rate.
    pub q: f64,
    /// Explicit column order; other models follow by first verdict time.
    pub model_order: Vec<String>,
    /// Seed of the case bootstrap and Monte Carlo permutation.
    pub seed: u64,
}

impl Default for RegressSettings {
    fn default() -> Self {
        Self {
            asset: None,
            arm: "with_skill".to_string(),
            threshold_pp: 20.0,
            q: 0.10,
            model_order: Vec::new(),
            seed: 42,
        }
    }
}

/// Trials below which a per-case Fisher flag is "low power / suggestive" (statistics.md §7).
pub const LOW_POWER_TRIALS: u64 = 10;
const BOOTSTRAP_RESAMPLES: usize = 4000;
const PERMUTATION_RESAMPLES: usize = 10_000;

/// One cell: an asset's pass rate under one fingerprint and model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub model: String,
    /// Cases with at least one scored (pass/fail) verdict.
    pub n_cases: usize,
    /// Largest number of scored trials of one case, pooled over the cell's runs.
    pub k: u64,
    /// Runs whose verdicts the cell pools (manual verdicts count as one).
    pub runs: usize,
    pub passes: u64,
    pub trials: u64,
    /// Unscoreable / not-gradable verdicts, excluded from the rate.
    pub unscored: u64,
    /// Mean of the case pass rates.
    pub rate: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// `wilson` (one trial per case) or `case-bootstrap-percentile`.
    pub method: String,
    /// Case id → (passes, trials).
    #[serde(skip)]
    pub cases: BTreeMap<String, (u64, u64)>,
}

/// One row: a fingerprint measured by one runner on one eval set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub fingerprint: String,
    pub calibre: String,
    /// The runner profile of every verdict in the row.
    pub runner: String,
    /// The eval set's `sha256:` digest; `None` for manual verdicts and older entries.
    pub eval_set: Option<String>,
    pub first_seen: DateTime<Utc>,
    /// One per column; `None` where the fingerprint has no verdict under that model.
    pub cells: Vec<Option<Cell>>,
}

/// A comparison of consecutive model versions inside one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub fingerprint: String,
    /// The row's runner and eval set.
    pub runner: String,
    pub eval_set: Option<String>,
    pub from_model: String,
    pub to_model: String,
    /// Cases present in both cells.
    pub paired_cases: usize,
    pub from_rate: f64,
    pub to_rate: f64,
    /// `(from - to) × 100` over the paired cases; positive = a drop.
    pub drop_pp: f64,
    pub cases_down: usize,
    pub cases_up: usize,
    /// `mcnemar-mid-p` or `sign-flip`.
    pub test: String,
    pub p: f64,
    /// Benjamini–Hochberg adjusted across the asset's comparisons.
    pub p_adjusted: f64,
    /// `DEGRADED`, `VOLATILE`, or `STABLE`.
    pub flag: String,
    /// For DEGRADED: where to look.
    pub attribution: Option<Attribution>,
}

/// Where a degradation most likely comes from, with the evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attribution {
    /// What to look at (JSON: its words, e.g. `trigger description`).
    pub target: Cause,
    /// The signals that decided it, in words (rates before → after).
    pub evidence: String,
}

/// The part of a skill (or the model) a degradation is attributed to, from the stored
/// trajectory signals ([`attribute`]). Serialized as the words the report prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Cause {
    /// Skill activation fell: the model no longer picks the skill.
    #[serde(rename = "trigger description")]
    TriggerDescription,
    /// More trials had a tool call that returned an error: the model calls the skill's tools
    /// wrongly (or they fail) under the new model.
    #[serde(rename = "tool description")]
    ToolDescription,
    /// Output-format checks (`regex`, `json_path`, `file_exists`) fell.
    #[serde(rename = "tool description / format")]
    ToolDescriptionFormat,
    /// Format checks hold, content checks fell.
    #[serde(rename = "instructions")]
    Instructions,
    /// Activation, tool calls and structure unchanged; only the answer fails.
    #[serde(rename = "model-internal regression; single-model dependent")]
    ModelInternal,
    /// No trajectory signals (manual verdicts).
    #[serde(rename = "unknown")]
    Unknown,
}

/// What a degradation asks of its owner, by [`Cause`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// Rewrite this part of the skill (`trigger description`, `tool description`,
    /// `instructions`).
    Rewrite(&'static str),
    /// Nothing in the skill explains it: the new model answers worse.
    ModelDependent,
    /// The verdicts carry no signal to decide.
    Unattributed,
}

impl Cause {
    /// The words the report prints (and JSON holds).
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::TriggerDescription => "trigger description",
            Cause::ToolDescription => "tool description",
            Cause::ToolDescriptionFormat => "tool description / format",
            Cause::Instructions => "instructions",
            Cause::ModelInternal => "model-internal regression; single-model dependent",
            Cause::Unknown => "unknown",
        }
    }

    /// What the owner does about it: which part to rewrite, or nothing the skill can fix.
    pub fn remedy(self) -> Remedy {
        match self {
            Cause::TriggerDescription => Remedy::Rewrite("trigger description"),
            Cause::ToolDescription | Cause::ToolDescriptionFormat => {
                Remedy::Rewrite("tool description")
            }
            Cause::Instructions => Remedy::Rewrite("instructions"),
            Cause::ModelInternal => Remedy::ModelDependent,
            Cause::Unknown => Remedy::Unattributed,
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A per-case Fisher flag for a case that went down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseFlag {
    pub fingerprint: String,
    /// The row's runner.
    pub runner: String,
    pub case_id: String,
    pub from_model: String,
    pub to_model: String,
    pub from: (u64, u64),
    pub to: (u64, u64),
    pub fisher_p: f64,
    pub p_adjusted: f64,
    pub low_power: bool,
}

/// One asset's matrix and flags.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssetMatrix {
    pub asset: String,
    pub models: Vec<String>,
    pub rows: Vec<Row>,
    pub comparisons: Vec<Comparison>,
    pub case_flags: Vec<CaseFlag>,
    /// Asset-level flags, sorted: `DEGRADED`, `FINGERPRINT-DRIFT`, `VOLATILE`.
    pub flags: Vec<String>,
    /// Explanation of FINGERPRINT-DRIFT when flagged.
    pub drift: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegressReport {
    pub settings: RegressSettings,
    pub assets: Vec<AssetMatrix>,
    /// What the report does not measure.
    pub notes: Vec<String>,
}

impl RegressReport {
    /// Whether any asset is DEGRADED.
    pub fn any_degraded(&self) -> bool {
        self.assets
            .iter()
            .any(|a| a.flags.iter().any(|f| f == "DEGRADED"))
    }
}

/// Build the report from the store.
pub fn regress(store: &BaselineStore, settings: &RegressSettings) -> RegressReport {
    let assets = store
        .assets
        .iter()
        .filter(|(name, _)| settings.asset.as_ref().is_none_or(|a| a == *name))
        .filter_map(|(name, baseline)| asset_matrix(name, &baseline.entries, settings))
        .collect();
    RegressReport {
        settings: settings.clone(),
        assets,
        notes: vec![
            "Rates are per case (mean of case pass rates); unscoreable verdicts are excluded and counted.".to_string(),
            "Rows are fingerprint × runner × eval set: verdicts of different runners or eval sets are never pooled; a cell pools the attempts of every run in it (K counts them; `runs` says how many runs).".to_string(),
            "Only consecutive model versions in the same row are compared; different rows never are.".to_string(),
            "Attribution is heuristic: it reads stored activation and check verdicts, not the full transcripts; manual verdicts carry none.".to_string(),
        ],
    }
}

/// What a row holds: fingerprint, calibre, runner, eval set.
type RowKey<'a> = (&'a str, &'a str, &'a str, Option<&'a str>);

fn row_key(e: &BaselineEntry) -> RowKey<'_> {
    (&e.fingerprint, &e.calibre, &e.runner, e.eval_set.as_deref())
}

fn asset_matrix(
    asset: &str,
    entries: &[BaselineEntry],
    settings: &RegressSettings,
) -> Option<AssetMatrix> {
    let entries: Vec<&BaselineEntry> = entries.iter().filter(|e| e.arm == settings.arm).collect();
    if entries.is_empty() {
        return None;
    }
    // Columns: explicit order first, then by first verdict time.
    let mut first_model: BTreeMap<&str, DateTime<Utc>> = BTreeMap::new();
    let mut first_print: BTreeMap<RowKey, DateTime<Utc>> = BTreeMap::new();
    for entry in &entries {
        let at = first_model.entry(&entry.model).or_insert(entry.recorded_at);
        *at = (*at).min(entry.recorded_at);
        let at = first_print
            .entry(row_key(entry))
            .or_insert(entry.recorded_at);
        *at = (*at).min(entry.recorded_at);
    }
    let mut models: Vec<String> = settings
        .model_order
        .iter()
        .filter(|m| first_model.contains_key(m.as_str()))
        .cloned()
        .collect();
    let mut rest: Vec<(&str, DateTime<Utc>)> = first_model
        .iter()
        .filter(|(m, _)| !models.iter().any(|x| x == *m))
        .map(|(m, t)| (*m, *t))
        .collect();
    rest.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
    models.extend(rest.into_iter().map(|(m, _)| m.to_string()));
    let mut prints: Vec<(RowKey, DateTime<Utc>)> = first_print.into_iter().collect();
    prints.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));

    let mut rows = Vec::new();
    for (key, first_seen) in &prints {
        let cells = models
            .iter()
            .map(|model| {
                let in_cell: Vec<&&BaselineEntry> = entries
                    .iter()
                    .filter(|e| row_key(e) == *key && &e.model == model)
                    .collect();
                build_cell(model, &in_cell, settings.seed)
            })
            .collect();
        let (print, calibre, runner, eval_set) = *key;
        rows.push(Row {
            fingerprint: print.to_string(),
            calibre: calibre.to_string(),
            runner: runner.to_string(),
            eval_set: eval_set.map(str::to_string),
            first_seen: *first_seen,
            cells,
        });
    }

    let mut comparisons = Vec::new();
    let mut case_flags = Vec::new();
    for row in &rows {
        let present: Vec<&Cell> = row.cells.iter().flatten().collect();
        for pair in present.windows(2) {
            let (old, new) = (pair[0], pair[1]);
            if let Some(comparison) = compare(row, old, new, settings.seed) {
                comparisons.push(comparison);
            }
            for (case_id, &(old_pass, old_trials)) in &old.cases {
                let Some(&(new_pass, new_trials)) = new.cases.get(case_id) else {
                    continue;
                };
                let old_rate = old_pass as f64 / old_trials as f64;
                let new_rate = new_pass as f64 / new_trials as f64;
                // One trial a side can never reach p < 1: per-case flags need K ≥ 2.
                if new_rate >= old_rate || old_trials < 2 || new_trials < 2 {
                    continue;
                }
                if let Some(p) = regression_fisher_p(old_pass, old_trials, new_pass, new_trials) {
                    case_flags.push(CaseFlag {
                        fingerprint: row.fingerprint.clone(),
                        runner: row.runner.clone(),
                        case_id: case_id.clone(),
                        from_model: old.model.clone(),
                        to_model: new.model.clone(),
                        from: (old_pass, old_trials),
                        to: (new_pass, new_trials),
                        fisher_p: p,
                        p_adjusted: p,
                        low_power: old_trials.min(new_trials) < LOW_POWER_TRIALS,
                    });
                }
            }
        }
    }
    adjust(&mut comparisons, |c| c.p, |c, p| c.p_adjusted = p);
    adjust(&mut case_flags, |c| c.fisher_p, |c, p| c.p_adjusted = p);
    for comparison in &mut comparisons {
        let degraded = comparison.drop_pp >= settings.threshold_pp - 1e-9
            && comparison.cases_down > comparison.cases_up
            && comparison.p_adjusted <= settings.q;
        comparison.flag = if degraded {
            "DEGRADED"
        } else if comparison.drop_pp > 1e-9 && comparison.p_adjusted <= settings.q {
            "VOLATILE"
        } else {
            "STABLE"
        }
        .to_string();
        if degraded {
            let in_row = |e: &BaselineEntry| {
                e.fingerprint == comparison.fingerprint
                    && e.runner == comparison.runner
                    && e.eval_set == comparison.eval_set
            };
            let old: Vec<&BaselineEntry> = entries
                .iter()
                .copied()
                .filter(|e| in_row(e) && e.model == comparison.from_model)
                .collect();
            let new: Vec<&BaselineEntry> = entries
                .iter()
                .copied()
                .filter(|e| in_row(e) && e.model == comparison.to_model)
                .collect();
            comparison.attribution = Some(attribute(&old, &new));
        }
    }
    let mut flags = BTreeSet::new();
    for comparison in &comparisons {
        if comparison.flag != "STABLE" {
            flags.insert(comparison.flag.clone());
        }
    }
    // Fingerprints in first-seen order, each with the models it has verdicts under.
    let mut fingerprints: Vec<(&str, &str, BTreeSet<&str>)> = Vec::new();
    for row in &rows {
        let under = row.cells.iter().flatten().map(|c| c.model.as_str());
        match fingerprints
            .iter_mut()
            .find(|(print, calibre, _)| *print == row.fingerprint && *calibre == row.calibre)
        {
            Some((_, _, models)) => models.extend(under),
            None => fingerprints.push((
                row.fingerprint.as_str(),
                row.calibre.as_str(),
                under.collect(),
            )),
        }
    }
    let drift = (fingerprints.len() > 1).then(|| {
        flags.insert("FINGERPRINT-DRIFT".to_string());
        let described: Vec<String> = fingerprints
            .iter()
            .map(|(print, calibre, under)| {
                let under: Vec<&str> = under.iter().copied().collect();
                format!("{} ({calibre}) under {}", short(print), under.join(", "))
            })
            .collect();
        format!(
            "the asset was edited: {} fingerprints — {}; each row stands alone and changes between rows belong to the skill, not the model",
            fingerprints.len(),
            described.join("; ")
        )
    });
    Some(AssetMatrix {
        asset: asset.to_string(),
        models,
        rows,
        comparisons,
        case_flags,
        flags: flags.into_iter().collect(),
        drift,
    })
}

fn adjust<T>(items: &mut [T], get: impl Fn(&T) -> f64, set: impl Fn(&mut T, f64)) {
    let p: Vec<f64> = items.iter().map(&get).collect();
    if let Ok(adjusted) = benjamini_hochberg(&p) {
        for (item, value) in items.iter_mut().zip(adjusted) {
            set(item, value);
        }
    }
}

/// First 12 hex digits of a `sha256:` digest.
pub fn short(fingerprint: &str) -> String {
    let hex = fingerprint.strip_prefix("sha256:").unwrap_or(fingerprint);
    hex.chars().take(12).collect()
}

fn build_cell(model: &str, entries: &[&&BaselineEntry], seed: u64) -> Option<Cell> {
    if entries.is_empty() {
        return None;
    }
    let mut cases: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut unscored = 0;
    let runs: BTreeSet<Option<&str>> = entries.iter().map(|e| e.run_id.as_deref()).collect();
    for entry in entries {
        match entry.verdict {
            crate::record::Outcome::Pass | crate::record::Outcome::Fail => {
                let slot = cases.entry(entry.case_id.clone()).or_default();
                slot.1 += 1;
                if entry.verdict == crate::record::Outcome::Pass {
                    slot.0 += 1;
                }
            }
            _ => unscored += 1,
        }
    }
    let passes: u64 = cases.values().map(|c| c.0).sum();
    let trials: u64 = cases.values().map(|c| c.1).sum();
    let k = cases.values().map(|c| c.1).max().unwrap_or(0);
    let rates: Vec<f64> = cases.values().map(|&(p, n)| p as f64 / n as f64).collect();
    let (rate, low, high, method) = if rates.is_empty() {
        (f64::NAN, f64::NAN, f64::NAN, "none".to_string())
    } else if k == 1 {
        let interval = wilson_interval(passes, trials, 0.95).expect("trials > 0");
        (
            passes as f64 / trials as f64,
            interval.low,
            interval.high,
            "wilson".to_string(),
        )
    } else {
        let rate = rates.iter().sum::<f64>() / rates.len() as f64;
        match bootstrap_mean_interval(
            &rates,
            None,
            BOOTSTRAP_RESAMPLES,
            seed,
            BootstrapMethod::Percentile,
        ) {
            Ok(result) => (
                rate,
                result.percentile.low,
                result.percentile.high,
                "case-bootstrap-percentile".to_string(),
            ),
            Err(_) => (rate, f64::NAN, f64::NAN, "none".to_string()),
        }
    };
    Some(Cell {
        model: model.to_string(),
        n_cases: cases.len(),
        k,
        runs: runs.len(),
        passes,
        trials,
        unscored,
        rate,
        ci_low: low,
        ci_high: high,
        method,
        cases,
    })
}

fn compare(row: &Row, old: &Cell, new: &Cell, seed: u64) -> Option<Comparison> {
    let paired: Vec<(f64, f64, bool)> = old
        .cases
        .iter()
        .filter_map(|(case, &(op, on))| {
            new.cases.get(case).map(|&(np, nn)| {
                (
                    op as f64 / on as f64,
                    np as f64 / nn as f64,
                    on == 1 && nn == 1,
                )
            })
        })
        .collect();
    if paired.is_empty() {
        return None;
    }
    let n = paired.len() as f64;
    let from_rate = paired.iter().map(|p| p.0).sum::<f64>() / n;
    let to_rate = paired.iter().map(|p| p.1).sum::<f64>() / n;
    let cases_down = paired.iter().filter(|p| p.1 < p.0).count();
    let cases_up = paired.iter().filter(|p| p.1 > p.0).count();
    let binary = paired.iter().all(|p| p.2);
    let (test, p) = if binary {
        (
            "mcnemar-mid-p",
            mcnemar(cases_down as u64, cases_up as u64).mid_p,
        )
    } else {
        let differences: Vec<f64> = paired.iter().map(|p| p.0 - p.1).collect();
        let p = sign_flip_test(&differences, PERMUTATION_RESAMPLES, seed)
            .map(|r| r.two_sided_p)
            .unwrap_or(1.0);
        ("sign-flip", p)
    };
    Some(Comparison {
        fingerprint: row.fingerprint.clone(),
        runner: row.runner.clone(),
        eval_set: row.eval_set.clone(),
        from_model: old.model.clone(),
        to_model: new.model.clone(),
        paired_cases: paired.len(),
        from_rate,
        to_rate,
        drop_pp: (from_rate - to_rate) * 100.0,
        cases_down,
        cases_up,
        test: test.to_string(),
        p,
        p_adjusted: p,
        flag: String::new(),
        attribution: None,
    })
}

const FORMAT_CHECKS: [&str; 3] = ["regex", "json_path", "file_exists"];
const CONTENT_CHECKS: [&str; 4] = ["contains", "not_contains", "equals", "file_contains"];
/// A signal "fell" when its rate dropped by at least this much.
const SIGNAL_DROP: f64 = 0.2;

fn rate_of<'a>(values: impl Iterator<Item = bool> + 'a) -> Option<f64> {
    let (yes, all) = values.fold((0usize, 0usize), |(y, a), v| (y + v as usize, a + 1));
    (all > 0).then(|| yes as f64 / all as f64)
}

fn check_rate(entries: &[&BaselineEntry], types: &[&str]) -> Option<f64> {
    rate_of(
        entries
            .iter()
            .flat_map(|e| e.checks.iter())
            .filter(|c| types.contains(&c.check_type.as_str()))
            .map(|c| c.passed),
    )
}

fn percent(value: Option<f64>) -> String {
    value.map_or("n/a".to_string(), |v| format!("{:.0}%", v * 100.0))
}

/// Share of trials with at least one tool call that returned an error, among the entries that
/// recorded it; `None` when none did (manual verdicts, entries stored before it was counted).
fn tool_error_rate(entries: &[&BaselineEntry]) -> Option<f64> {
    rate_of(
        entries
            .iter()
            .filter_map(|e| e.tool_call_errors)
            .map(|errors| errors > 0),
    )
}

/// Errored tool calls over all recorded tool calls of `entries` (those that recorded both).
fn tool_errors_of(entries: &[&BaselineEntry]) -> (usize, usize) {
    entries
        .iter()
        .filter_map(|e| Some((e.tool_call_errors?, e.tool_calls?)))
        .fold((0, 0), |(errors, calls), (e, c)| (errors + e, calls + c))
}

/// Attribute a degradation from the stored signals of the old and new cells, in this order:
/// activation fell (≥ 20 points) → trigger description; the share of trials with an erroring
/// tool call rose (≥ 20 points) → tool description; output-format checks fell → tool
/// description / format; content checks fell with format checks holding → instructions;
/// otherwise model-internal. Verdicts with no signal at all → unknown.
pub fn attribute(old: &[&BaselineEntry], new: &[&BaselineEntry]) -> Attribution {
    // Activation is a signal only where the runner reports it (tools mode): when no trial of
    // either cell activated the skill, it is treated as unknown rather than "0 %".
    let reported = old.iter().chain(new).any(|e| e.activated == Some(true));
    let activation = |e: &[&BaselineEntry]| {
        if reported {
            rate_of(e.iter().filter_map(|x| x.activated))
        } else {
            None
        }
    };
    let (act_old, act_new) = (activation(old), activation(new));
    let (err_old, err_new) = (tool_error_rate(old), tool_error_rate(new));
    let (fmt_old, fmt_new) = (
        check_rate(old, &FORMAT_CHECKS),
        check_rate(new, &FORMAT_CHECKS),
    );
    let (con_old, con_new) = (
        check_rate(old, &CONTENT_CHECKS),
        check_rate(new, &CONTENT_CHECKS),
    );
    let fell = |a: Option<f64>, b: Option<f64>| matches!((a, b), (Some(a), Some(b)) if a - b >= SIGNAL_DROP);
    if act_old.is_none() && fmt_old.is_none() && con_old.is_none() && err_old.is_none() {
        return Attribution {
            target: Cause::Unknown,
            evidence: "the verdicts carry no trajectory signals (manual replay, or no activation, tool-call or check results recorded); inspect transcripts by hand".to_string(),
        };
    }
    if fell(act_old, act_new) {
        return Attribution {
            target: Cause::TriggerDescription,
            evidence: format!(
                "skill activation fell from {} to {}",
                percent(act_old),
                percent(act_new)
            ),
        };
    }
    if fell(err_new, err_old) {
        let ((errors_old, calls_old), (errors_new, calls_new)) =
            (tool_errors_of(old), tool_errors_of(new));
        return Attribution {
            target: Cause::ToolDescription,
            evidence: format!(
                "trials with a tool call that returned an error rose from {} to {} ({errors_old} of {calls_old} tool calls errored before, {errors_new} of {calls_new} after); activation {} → {}",
                percent(err_old),
                percent(err_new),
                percent(act_old),
                percent(act_new)
            ),
        };
    }
    if fell(fmt_old, fmt_new) {
        return Attribution {
            target: Cause::ToolDescriptionFormat,
            evidence: format!(
                "output-format checks (regex, json_path, file_exists) fell from {} to {}",
                percent(fmt_old),
                percent(fmt_new)
            ),
        };
    }
    if fell(con_old, con_new) && fmt_new.is_some() {
        return Attribution {
            target: Cause::Instructions,
            evidence: format!(
                "structure checks hold ({} → {}) but content checks fell from {} to {}",
                percent(fmt_old),
                percent(fmt_new),
                percent(con_old),
                percent(con_new)
            ),
        };
    }
    Attribution {
        target: Cause::ModelInternal,
        evidence: format!(
            "activation ({} → {}), tool-call errors ({} → {} of trials) and structure ({} → {}) unchanged; only the final answer fails (content {} → {})",
            percent(act_old),
            percent(act_new),
            percent(err_old),
            percent(err_new),
            percent(fmt_old),
            percent(fmt_new),
            percent(con_old),
            percent(con_new)
        ),
    }
}

fn pct(value: f64) -> String {
    if value.is_nan() {
        "n/a".to_string()
    } else {
        format!("{:.1}%", value * 100.0)
    }
}

/// Terminal rendering.
pub fn to_table(report: &RegressReport) -> String {
    let mut out = String::new();
    if report.assets.is_empty() {
        out.push_str("no verdicts in the baseline store for this selection; run `skill-lift run` or `skill-lift baseline merge` first\n");
        return out;
    }
    for asset in &report.assets {
        let flags = if asset.flags.is_empty() {
            "no flags".to_string()
        } else {
            asset.flags.join(" ")
        };
        out.push_str(&format!("asset {}  [{}]\n", asset.asset, flags));
        let labels: Vec<String> = asset.rows.iter().map(row_label).collect();
        let width = labels
            .iter()
            .map(|l| l.chars().count())
            .chain(["fingerprint runner eval-set".len()])
            .max()
            .unwrap_or(0);
        out.push_str(&format!("  {:<width$}", "fingerprint runner eval-set"));
        for model in &asset.models {
            out.push_str(&format!(" | {:<42}", model));
        }
        out.push('\n');
        for (row, label) in asset.rows.iter().zip(&labels) {
            out.push_str(&format!("  {label:<width$}"));
            for cell in &row.cells {
                let text = match cell {
                    Some(c) => format!(
                        "{} [{}, {}] n={} K={}{}",
                        pct(c.rate),
                        pct(c.ci_low),
                        pct(c.ci_high),
                        c.n_cases,
                        c.k,
                        if c.runs > 1 {
                            format!(" ({} runs)", c.runs)
                        } else {
                            String::new()
                        }
                    ),
                    None => "—".to_string(),
                };
                out.push_str(&format!(" | {:<42}", text));
            }
            out.push('\n');
        }
        for c in &asset.comparisons {
            out.push_str(&format!(
                "  {} {} {} → {}: {} → {} ({:+.1} pp), cases down {} / up {}, {} p {} adj {}",
                c.flag,
                c.runner,
                c.from_model,
                c.to_model,
                pct(c.from_rate),
                pct(c.to_rate),
                -c.drop_pp,
                c.cases_down,
                c.cases_up,
                c.test,
                crate::analysis::text::format_p_value(c.p),
                crate::analysis::text::format_p_value(c.p_adjusted)
            ));
            if let Some(a) = &c.attribution {
                out.push_str(&format!("\n    attribution: {} ({})", a.target, a.evidence));
            }
            out.push('\n');
        }
        if let Some(drift) = &asset.drift {
            out.push_str(&format!("  FINGERPRINT-DRIFT: {drift}\n"));
        }
        for flag in &asset.case_flags {
            out.push_str(&format!(
                "  case {} {}/{} → {}/{} Fisher p {} adj {}{}\n",
                flag.case_id,
                flag.from.0,
                flag.from.1,
                flag.to.0,
                flag.to.1,
                crate::analysis::text::format_p_value(flag.fisher_p),
                crate::analysis::text::format_p_value(flag.p_adjusted),
                if flag.low_power {
                    " (low power / suggestive: K < 10)"
                } else {
                    ""
                }
            ));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "DEGRADED = drop ≥ {} pp, more cases down than up, BH-adjusted p ≤ {q}; VOLATILE = any other drop with BH-adjusted p ≤ {q} (watch); a drop the test does not find is STABLE.\n",
        report.settings.threshold_pp,
        q = report.settings.q
    ));
    for note in &report.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

/// A row's label: short fingerprint, runner, short eval-set digest (`manual` without one).
fn row_label(row: &Row) -> String {
    format!(
        "{} {} {}",
        short(&row.fingerprint),
        row.runner,
        row.eval_set
            .as_deref()
            .map_or("manual".to_string(), |digest| short(digest)
                .chars()
                .take(8)
                .collect())
    )
}

/// CSV: one line per cell, with the comparison that ends in it.
pub fn to_csv(report: &RegressReport) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let _ = writer.write_record([
        "asset",
        "fingerprint",
        "calibre",
        "runner",
        "eval_set",
        "model",
        "n_cases",
        "k",
        "runs",
        "passes",
        "trials",
        "unscored",
        "rate",
        "ci_low",
        "ci_high",
        "method",
        "flag",
        "from_model",
        "drop_pp",
        "p",
        "p_adjusted",
        "attribution",
        "asset_flags",
    ]);
    let number = |v: f64| {
        if v.is_nan() {
            String::new()
        } else {
            format!("{v:.6}")
        }
    };
    for asset in &report.assets {
        for row in &asset.rows {
            for cell in row.cells.iter().flatten() {
                let comparison = asset.comparisons.iter().find(|c| {
                    c.fingerprint == row.fingerprint
                        && c.runner == row.runner
                        && c.eval_set == row.eval_set
                        && c.to_model == cell.model
                });
                let _ = writer.write_record([
                    asset.asset.clone(),
                    row.fingerprint.clone(),
                    row.calibre.clone(),
                    row.runner.clone(),
                    row.eval_set.clone().unwrap_or_default(),
                    cell.model.clone(),
                    cell.n_cases.to_string(),
                    cell.k.to_string(),
                    cell.runs.to_string(),
                    cell.passes.to_string(),
                    cell.trials.to_string(),
                    cell.unscored.to_string(),
                    number(cell.rate),
                    number(cell.ci_low),
                    number(cell.ci_high),
                    cell.method.clone(),
                    comparison.map(|c| c.flag.clone()).unwrap_or_default(),
                    comparison.map(|c| c.from_model.clone()).unwrap_or_default(),
                    comparison.map(|c| number(c.drop_pp)).unwrap_or_default(),
                    comparison.map(|c| number(c.p)).unwrap_or_default(),
                    comparison.map(|c| number(c.p_adjusted)).unwrap_or_default(),
                    comparison
                        .and_then(|c| c.attribution.as_ref())
                        .map(|a| a.target.as_str().to_string())
                        .unwrap_or_default(),
                    asset.flags.join(" "),
                ]);
            }
        }
    }
    String::from_utf8(writer.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// How `skill-lift regress` prints the report on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RegressFormat {
    // The aligned text table of `to_table`.
    Table,
    // The whole report as pretty JSON.
    Json,
    // The matrix rows as CSV (`to_csv`).
    Csv,
}

/// What `skill-lift regress` reads, computes, prints and writes.
#[derive(Debug, Clone)]
pub struct RegressCommand {
    /// `--state` as given (resolved with `SKILL_LIFT_HOME` and the home folder).
    pub state: Option<PathBuf>,
    /// Only assets registered on this host.
    pub host: Option<String>,
    /// The matrix and flags' settings (`settings.asset`: only this asset).
    pub settings: RegressSettings,
    /// The format on stdout.
    pub format: RegressFormat,
    /// Also write `regress.json` and `regress.csv` into this folder.
    pub out: Option<PathBuf>,
}

/// Why `skill-lift regress` could not report: the inputs (the flags, the state folder, an
/// unknown host or asset) or, when writing `--out`, the infrastructure
/// ([`RegressCommandError::is_infrastructure`]).
#[derive(Debug, thiserror::Error)]
pub enum RegressCommandError {
    /// The threshold or false-discovery rate is out of range.
    #[error("--threshold-pp must be in [0, 100] and --q in [0, 1]")]
    OutOfRange,
    /// The state folder, the host or its registry, or the store cannot be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// `--host` has no registry yet.
    #[error("no registry for host `{host}` yet; run `skill-lift scan --host {host}` first")]
    NoRegistry {
        /// The host.
        host: String,
    },
    /// The store holds no verdicts for the asset asked for.
    #[error("{}: no verdicts for asset `{asset}` (known: {known})", .store.display())]
    UnknownAsset {
        /// The store's file.
        store: PathBuf,
        /// The asset asked for.
        asset: String,
        /// The assets it holds, comma-separated.
        known: String,
    },
    /// The `--out` folder cannot be created.
    #[error("{}: {source}", .dir.display())]
    CreateOut {
        /// The folder.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A report file cannot be written.
    #[error(transparent)]
    Write(#[from] crate::disk::DiskError),
}

impl RegressCommandError {
    /// Whether the failure is the infrastructure's (writing `--out`).
    pub fn is_infrastructure(&self) -> bool {
        matches!(self, Self::CreateOut { .. } | Self::Write(_))
    }
}

/// Run `skill-lift regress`: read the store (only the host's assets with `command.host`),
/// build the report, print it in `command.format` and write `regress.json` and `regress.csv`
/// into `command.out` when given.
pub fn regress_command(command: &RegressCommand) -> Result<RegressReport, RegressCommandError> {
    let settings = &command.settings;
    if !(0.0..=100.0).contains(&settings.threshold_pp) || !(0.0..=1.0).contains(&settings.q) {
        return Err(RegressCommandError::OutOfRange);
    }
    let state = super::state::state_dir_from_env(command.state.as_deref())?;
    let store = read_store_for(&state, command.host.as_deref(), settings.asset.as_deref())?;
    let report = regress(&store, settings);
    let json = serde_json::to_string_pretty(&report).expect("a regress report serializes");
    match command.format {
        RegressFormat::Table => crate::values::reporter::result(&to_table(&report)),
        RegressFormat::Json => crate::values::reporter::result_line(&json),
        RegressFormat::Csv => crate::values::reporter::result(&to_csv(&report)),
    }
    if let Some(dir) = &command.out {
        std::fs::create_dir_all(dir).map_err(|source| RegressCommandError::CreateOut {
            dir: dir.clone(),
            source,
        })?;
        crate::disk::write_atomic(&dir.join("regress.json"), json.as_bytes())?;
        crate::disk::write_atomic(&dir.join("regress.csv"), to_csv(&report).as_bytes())?;
    }
    Ok(report)
}

/// The baseline store of `state`, only the assets registered on `host` when given; an
/// `asset` it holds no verdicts for is refused.
fn read_store_for(
    state: &Path,
    host: Option<&str>,
    asset: Option<&str>,
) -> Result<BaselineStore, RegressCommandError> {
    let mut store = super::baseline::read_store(state)?;
    if let Some(host) = host {
        super::hosts::find_host(state, host)?;
        let registry = super::scan::read_registry(state, host)?.ok_or_else(|| {
            RegressCommandError::NoRegistry {
                host: host.to_string(),
            }
        })?;
        store
            .assets
            .retain(|name, _| registry.assets.contains_key(name));
    }
    if let Some(asset) = asset
        && !store.assets.contains_key(asset)
    {
        return Err(RegressCommandError::UnknownAsset {
            store: super::baseline::baseline_path(state),
            asset: asset.to_string(),
            known: store.assets.keys().cloned().collect::<Vec<_>>().join(", "),
        });
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::registry::baseline::{AssetBaseline, CheckVerdict, EntrySource};
    use crate::record::Outcome;

    fn entry(
        print: &str,
        model: &str,
        case: &str,
        attempt: u32,
        pass: bool,
        activated: bool,
        minutes: i64,
    ) -> BaselineEntry {
        BaselineEntry {
            fingerprint: print.into(),
            calibre: "v3-agent-skills".into(),
            model: model.into(),
            observed_model: None,
            trial_at: None,
            runner: "r".into(),
            case_id: case.into(),
            eval_set: None,
            arm: "with_skill".into(),
            attempt,
            verdict: if pass { Outcome::Pass } else { Outcome::Fail },
            source: EntrySource::Run,
            run_id: Some(model.into()),
            recorded_at: DateTime::<Utc>::from_timestamp(1_700_000_000 + minutes * 60, 0).unwrap(),
            activated: Some(activated),
            checks: vec![CheckVerdict {
                check_type: "regex".into(),
                passed: pass,
            }],
            tool_calls: Some(1),
            tool_call_errors: Some(0),
            reason: None,
            cost_usd: None,
            judge_cost_usd: None,
        }
    }

    fn store(entries: Vec<BaselineEntry>) -> BaselineStore {
        let mut store = BaselineStore::default();
        store.assets.insert("s".into(), AssetBaseline { entries });
        store
    }

    #[test]
    fn designed_drop_is_degraded_with_trigger_attribution() {
        let mut entries = Vec::new();
        for case in 0..10 {
            entries.push(entry(
                "sha256:aa",
                "m1",
                &format!("c{case}"),
                1,
                true,
                true,
                0,
            ));
            entries.push(entry(
                "sha256:aa",
                "m2",
                &format!("c{case}"),
                1,
                case < 2,
                case < 2,
                10,
            ));
        }
        let report = regress(&store(entries), &RegressSettings::default());
        let asset = &report.assets[0];
        assert_eq!(asset.models, vec!["m1", "m2"]);
        let c = &asset.comparisons[0];
        assert_eq!(c.flag, "DEGRADED");
        assert!((c.drop_pp - 80.0).abs() < 1e-9);
        assert_eq!(c.test, "mcnemar-mid-p");
        assert_eq!(
            c.attribution.as_ref().unwrap().target,
            Cause::TriggerDescription
        );
        assert_eq!(asset.flags, vec!["DEGRADED"]);
        let cell = asset.rows[0].cells[0].as_ref().unwrap();
        assert_eq!(cell.method, "wilson");
        assert_eq!(cell.ci_high, 1.0);
        // K = 1: no per-case Fisher flags (one trial a side can never reach p < 1).
        assert!(asset.case_flags.is_empty());
        assert!(to_csv(&report).lines().count() == 3);
        assert!(to_table(&report).contains("DEGRADED"));
    }

    #[test]
    fn small_drop_is_volatile_only_when_significant_and_edit_is_drift_not_compared() {
        // One case of ten down (10 pp, p = 1): noise, STABLE. Row bb (an edit, under m3 only)
        // is never compared with row aa.
        let mut entries = Vec::new();
        for case in 0..10 {
            entries.push(entry(
                "sha256:aa",
                "m1",
                &format!("c{case}"),
                1,
                true,
                true,
                0,
            ));
            entries.push(entry(
                "sha256:aa",
                "m2",
                &format!("c{case}"),
                1,
                case != 0,
                true,
                10,
            ));
            entries.push(entry(
                "sha256:bb",
                "m3",
                &format!("c{case}"),
                1,
                false,
                true,
                20,
            ));
        }
        let report = regress(&store(entries), &RegressSettings::default());
        let asset = &report.assets[0];
        assert_eq!(asset.comparisons.len(), 1);
        assert_eq!(asset.comparisons[0].flag, "STABLE");
        assert_eq!(asset.flags, vec!["FINGERPRINT-DRIFT"]);
        assert!(asset.drift.as_ref().unwrap().contains("edited"));
        // Ten cases of sixty down (16.7 pp < 20): significant (McNemar mid-p ≈ 0.002) but
        // below the threshold: VOLATILE.
        let mut entries = Vec::new();
        for case in 0..60 {
            let id = format!("c{case}");
            entries.push(entry("sha256:aa", "m1", &id, 1, true, true, 0));
            entries.push(entry("sha256:aa", "m2", &id, 1, case >= 10, true, 10));
        }
        let report = regress(&store(entries), &RegressSettings::default());
        let c = &report.assets[0].comparisons[0];
        assert!(c.drop_pp < 20.0 && c.p_adjusted <= 0.10, "{c:?}");
        assert_eq!(c.flag, "VOLATILE");
        assert_eq!(report.assets[0].flags, vec!["VOLATILE"]);
    }

    #[test]
    fn runners_and_eval_sets_are_rows_of_their_own_and_k_counts_one_rows_attempts() {
        let mut entries = Vec::new();
        // Two K = 1 runs of runner r on eval set e1, one K = 1 run of runner q on e1, one
        // K = 3 run of r on e2 (other cases): all under model m.
        let mut add = |runner: &str, eval_set: &str, run: &str, cases: &[&str], k: u32| {
            for case in cases {
                for attempt in 1..=k {
                    let mut e = entry("sha256:aa", "m", case, attempt, true, true, 0);
                    e.runner = runner.into();
                    e.eval_set = Some(eval_set.into());
                    e.run_id = Some(run.into());
                    entries.push(e);
                }
            }
        };
        add("r", "sha256:e1", "run-1", &["c1", "c2"], 1);
        add("r", "sha256:e1", "run-2", &["c1", "c2"], 1);
        add("q", "sha256:e1", "run-3", &["c1", "c2"], 1);
        add("r", "sha256:e2", "run-4", &["d1", "d2", "d3"], 3);
        let report = regress(&store(entries), &RegressSettings::default());
        let asset = &report.assets[0];
        assert_eq!(asset.rows.len(), 3);
        let cell = |runner: &str, eval_set: &str| {
            let row = asset
                .rows
                .iter()
                .find(|r| r.runner == runner && r.eval_set.as_deref() == Some(eval_set))
                .unwrap();
            row.cells[0].clone().unwrap()
        };
        // The two runs of r on e1 pool their attempts of the same cases, and say so.
        let pooled = cell("r", "sha256:e1");
        assert_eq!((pooled.n_cases, pooled.k, pooled.runs), (2, 2, 2));
        let other_runner = cell("q", "sha256:e1");
        assert_eq!(
            (other_runner.n_cases, other_runner.k, other_runner.runs),
            (2, 1, 1)
        );
        let other_set = cell("r", "sha256:e2");
        assert_eq!((other_set.n_cases, other_set.k, other_set.runs), (3, 3, 1));
        // One fingerprint: rows of other runners or eval sets are no drift.
        assert!(asset.drift.is_none());
        let table = to_table(&report);
        assert!(table.contains("aa r e1"), "{table}");
        assert!(table.contains("n=2 K=2 (2 runs)"), "{table}");
        let csv = to_csv(&report);
        assert!(
            csv.lines()
                .next()
                .unwrap()
                .contains(",runner,eval_set,model,n_cases,k,runs,")
        );
        assert_eq!(csv.lines().count(), 4);
    }

    #[test]
    fn k_above_one_uses_bootstrap_and_sign_flip() {
        let mut entries = Vec::new();
        for case in 0..8 {
            for attempt in 1..=3 {
                entries.push(entry(
                    "sha256:aa",
                    "m1",
                    &format!("c{case}"),
                    attempt,
                    true,
                    true,
                    0,
                ));
                entries.push(entry(
                    "sha256:aa",
                    "m2",
                    &format!("c{case}"),
                    attempt,
                    attempt == 1,
                    true,
                    10,
                ));
            }
        }
        let report = regress(&store(entries), &RegressSettings::default());
        let asset = &report.assets[0];
        let cell = asset.rows[0].cells[1].as_ref().unwrap();
        assert_eq!(cell.method, "case-bootstrap-percentile");
        // 3/3 → 1/3 per case: Fisher p = 0.4 each, low power.
        assert_eq!(asset.case_flags.len(), 8);
        assert!(
            asset
                .case_flags
                .iter()
                .all(|f| f.low_power && (f.fisher_p - 0.4).abs() < 1e-9)
        );
        assert!((cell.rate - 1.0 / 3.0).abs() < 1e-9);
        let c = &asset.comparisons[0];
        assert_eq!(c.test, "sign-flip");
        // 8 of 8 cases down: exact sign-flip p = 2/256.
        assert!((c.p - 2.0 / 256.0).abs() < 1e-12, "{}", c.p);
        assert_eq!(c.flag, "DEGRADED");
        // Activation unchanged, regex (format) checks fell → format.
        assert_eq!(
            c.attribution.as_ref().unwrap().target,
            Cause::ToolDescriptionFormat
        );
    }

    #[test]
    fn attribution_instructions_and_model_internal() {
        let mut old = entry("x", "m1", "c", 1, true, true, 0);
        old.checks = vec![
            CheckVerdict {
                check_type: "json_path".into(),
                passed: true,
            },
            CheckVerdict {
                check_type: "contains".into(),
                passed: true,
            },
        ];
        let mut new = old.clone();
        new.checks[1].passed = false;
        assert_eq!(attribute(&[&old], &[&new]).target, Cause::Instructions);
        let mut plain_old = old.clone();
        plain_old.checks.clear();
        let plain_new = plain_old.clone();
        assert_eq!(
            attribute(&[&plain_old], &[&plain_new]).target,
            Cause::ModelInternal
        );
        // Inject mode: nobody ever "activates"; activation is unknown, not 0 %.
        let mut inject_old = old.clone();
        inject_old.activated = Some(false);
        let mut inject_new = new.clone();
        inject_new.activated = Some(false);
        let attribution = attribute(&[&inject_old], &[&inject_new]);
        assert_eq!(attribution.target, Cause::Instructions);
        assert!(!attribution.evidence.contains("activation"));
        let mut manual = plain_old.clone();
        manual.activated = None;
        manual.tool_call_errors = None;
        assert_eq!(attribute(&[&manual], &[&manual]).target, Cause::Unknown);
        // Activation holds, but every new trial has a tool call that errors: tool description,
        // ahead of the format checks that fell with it.
        let mut tool_old = entry("x", "m1", "c", 1, true, true, 0);
        tool_old.tool_calls = Some(2);
        let mut tool_new = entry("x", "m2", "c", 1, false, true, 10);
        tool_new.tool_calls = Some(2);
        tool_new.tool_call_errors = Some(1);
        let attribution = attribute(&[&tool_old], &[&tool_new]);
        assert_eq!(attribution.target, Cause::ToolDescription);
        assert_eq!(
            attribution.target.remedy(),
            Remedy::Rewrite("tool description")
        );
        assert!(
            attribution.evidence.contains("from 0% to 100%")
                && attribution
                    .evidence
                    .contains("(0 of 2 tool calls errored before, 1 of 2 after)"),
            "{}",
            attribution.evidence
        );
        // Fewer errors under the new model is no cause.
        assert_eq!(
            attribute(&[&tool_new], &[&tool_old]).target,
            Cause::ModelInternal
        );
    }
}
