//! Is the judge a reliable instrument? Agreement between two judges (`--judge A --judge B`) and
//! between each judge and the deterministic output checks, where both graded the same trial.
//!
//! - Scores: Pearson correlation and mean absolute difference of the two judges' metric scores
//!   over the trials both scored.
//! - Yes/no items (accuracy criteria, assertions): each judge's majority answer over its repeats
//!   (yes when more than half the repeats said yes), compared item by item with Cohen's kappa
//!   (Cohen 1960) and the raw agreement rate.
//! - Versus checks: on trials whose case has output checks, "the judge says pass" (metric score
//!   ≥ 0.5) against "every check passed", with kappa and the agreement rate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analysis::stats;
use crate::record::{MetricResult, Outcome, TrialView};

/// Agreement of the second (or later) judge with the primary one on one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JudgePairAgreement {
    /// The other judge's profile name.
    pub judge: String,
    pub metric: String,
    /// Trials both judges scored.
    pub n_trials: usize,
    /// Pearson correlation of the scores (`None` when a judge's scores are constant).
    pub correlation: Option<f64>,
    /// Mean |primary − other| of the scores.
    pub mean_absolute_difference: Option<f64>,
    /// Yes/no items both judges answered.
    pub n_items: usize,
    /// Fraction of those items with the same majority answer.
    pub item_agreement: Option<f64>,
    /// Cohen's kappa over the items.
    pub kappa: Option<f64>,
}

/// Agreement of a judge metric with the deterministic output checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JudgeCheckAgreement {
    pub judge: String,
    pub metric: String,
    /// Trials with both a judge score and output checks.
    pub n_trials: usize,
    /// `[both pass, only judge pass, only checks pass, both fail]`.
    pub table: [u64; 4],
    /// Fraction of trials where they agree.
    pub agreement: Option<f64>,
    /// Cohen's kappa.
    pub kappa: Option<f64>,
}

/// The judge-agreement section of `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JudgeAgreement {
    /// The primary judge (the one whose scores count).
    pub primary: String,
    pub between_judges: Vec<JudgePairAgreement>,
    pub versus_checks: Vec<JudgeCheckAgreement>,
    /// Trials on which a second (or later) judge failed, by judge name (those trials are
    /// missing from its agreement rows; `other_judge_errors` in `trials.jsonl` says why).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_judge_failures: BTreeMap<String, usize>,
}

#[derive(Debug, Default)]
struct PairData {
    primary: Vec<f64>,
    other: Vec<f64>,
    items: [u64; 4],
}

/// Streaming accumulator of judge agreement.
#[derive(Debug, Default)]
pub(crate) struct AgreementAccumulator {
    pairs: BTreeMap<(String, String), PairData>,
    versus_checks: BTreeMap<(String, String), [u64; 4]>,
    failures: BTreeMap<String, usize>,
}

fn table_cell(a: bool, b: bool) -> usize {
    match (a, b) {
        (true, true) => 0,
        (true, false) => 1,
        (false, true) => 2,
        (false, false) => 3,
    }
}

fn majority_items(result: &MetricResult) -> BTreeMap<&str, bool> {
    result
        .judge
        .iter()
        .flat_map(|spread| &spread.items)
        .filter(|item| item.total > 0)
        .map(|item| (item.name.as_str(), item.yes * 2 > item.total))
        .collect()
}

impl AgreementAccumulator {
    /// Add one trial record; `primary` is the primary judge's name.
    pub(crate) fn add(&mut self, primary: &str, record: &TrialView<'_>) {
        if record.outcome == Outcome::Unscoreable {
            return;
        }
        for judge in record.other_judge_errors.keys() {
            *self.failures.entry(judge.clone()).or_default() += 1;
        }
        let checks_pass = (record.checks.count > 0).then_some(record.checks.all_passed);
        let mut versus = |judge: &str, metric: &str, result: &MetricResult| {
            if let (Some(checks_pass), Some(score)) = (checks_pass, result.score) {
                let table = self
                    .versus_checks
                    .entry((judge.to_string(), metric.to_string()))
                    .or_default();
                table[table_cell(score >= 0.5, checks_pass)] += 1;
            }
        };
        let primary_metrics = record.metrics.parse();
        for (metric, result) in &primary_metrics {
            if result.source == crate::record::MetricSource::Judge {
                versus(primary, metric, result);
            }
        }
        for (judge, metrics) in record.other_judges.iter() {
            for (metric, other) in metrics {
                versus(judge, metric, other);
            }
        }
        for (judge, metrics) in record.other_judges.iter() {
            for (metric, other) in metrics {
                let Some(first) = primary_metrics.get(metric) else {
                    continue;
                };
                let data = self
                    .pairs
                    .entry((judge.clone(), metric.clone()))
                    .or_default();
                if let (Some(a), Some(b)) = (first.score, other.score) {
                    data.primary.push(a);
                    data.other.push(b);
                }
                let other_items = majority_items(other);
                for (name, yes) in majority_items(first) {
                    if let Some(other_yes) = other_items.get(name) {
                        data.items[table_cell(yes, *other_yes)] += 1;
                    }
                }
            }
        }
    }

    /// The agreement section, `None` when no judge graded anything.
    pub(crate) fn finish(self, primary: Option<&str>) -> Option<JudgeAgreement> {
        let primary = primary?;
        let between_judges = self
            .pairs
            .into_iter()
            .map(|((judge, metric), data)| {
                let n = data.primary.len();
                let n_items = data.items.iter().sum::<u64>() as usize;
                JudgePairAgreement {
                    judge,
                    metric,
                    n_trials: n,
                    correlation: stats::pearson_correlation(&data.primary, &data.other),
                    mean_absolute_difference: (n > 0).then(|| {
                        data.primary
                            .iter()
                            .zip(&data.other)
                            .map(|(a, b)| (a - b).abs())
                            .sum::<f64>()
                            / n as f64
                    }),
                    n_items,
                    item_agreement: (n_items > 0)
                        .then(|| (data.items[0] + data.items[3]) as f64 / n_items as f64),
                    kappa: stats::cohen_kappa(data.items),
                }
            })
            .collect();
        let versus_checks = self
            .versus_checks
            .into_iter()
            .map(|((judge, metric), table)| {
                let n = table.iter().sum::<u64>();
                JudgeCheckAgreement {
                    judge,
                    metric,
                    n_trials: n as usize,
                    table,
                    agreement: (n > 0).then(|| (table[0] + table[3]) as f64 / n as f64),
                    kappa: stats::cohen_kappa(table),
                }
            })
            .collect();
        Some(JudgeAgreement {
            primary: primary.to_string(),
            between_judges,
            versus_checks,
            other_judge_failures: self.failures,
        })
    }
}
