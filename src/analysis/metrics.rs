//! Per-metric and composite lifts.
//!
//! The case is the unit, as for the pass rate: a case's value of a metric in an arm is the mean
//! of that metric over the arm's trials where it applied (unscoreable trials excluded;
//! not-applicable values skipped, never 0). The arm's value is the mean over the cases where the
//! metric applied in both arms (the paired cases), and the lift is the mean of the paired case
//! differences — the same definition for the composite (`composite`, the per-trial weighted mean
//! of the applicable metrics, `crate::grade`) as for every single metric.
//!
//! Interval: seeded case (or cluster) bootstrap, BCa with percentile fallback, for up to
//! [`BOOTSTRAP_MAX_CASES`] paired cases; the paired t interval beyond (statistics.md §5.4: with
//! thousands of cases the t interval's coverage matches the bootstrap's, at a fraction of its
//! cost).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::grade::metric::ACES_METRICS;
use crate::grade::{GradingSettings, Outcome};
use crate::record::TrialRecord;
use crate::stats::{self, BootstrapConfig, BootstrapMethod, Clusters};

use super::{AnalysisSettings, CONFIDENCE};

/// The name of the composite score in metric tables.
pub const COMPOSITE: &str = "composite";

/// Most paired cases for which a metric's interval is bootstrapped (beyond: paired t).
pub const BOOTSTRAP_MAX_CASES: usize = 2000;

/// One metric's lift (or the composite's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricLift {
    /// Metric name (`composite`, `security`, …, custom names).
    pub metric: String,
    /// Weight in the composite (absent for the composite itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Mean over the paired cases of the with-skill case means, in [0, 1].
    pub with_skill: Option<f64>,
    /// Same for the baseline arm.
    pub without_skill: Option<f64>,
    /// with − without, a fraction in [-1, 1].
    pub estimate: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Interval method (`case-bootstrap-bca`, `cluster-bootstrap-percentile`, `paired-t`, …).
    pub method: String,
    /// Cases where the metric applied in both arms.
    pub n_cases: usize,
    /// Scoreable trials where the metric applied, per arm.
    pub with_skill_trials: usize,
    pub without_skill_trials: usize,
    /// `improved` when the interval is above 0, `regressed` when below, `unchanged` when every
    /// paired case difference is exactly 0, else `inconclusive`.
    pub verdict: MetricVerdict,
    /// Judge metrics with `--judge-k` > 1: the mean over scoreable trials of the standard
    /// deviation of the judge's repeats (how much the judge disagrees with itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_repeat_sd: Option<f64>,
}

/// The verdict on one metric's lift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricVerdict {
    Improved,
    Regressed,
    /// Every paired case has the same value in both arms.
    Unchanged,
    Inconclusive,
}

impl MetricVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricVerdict::Improved => "improved",
            MetricVerdict::Regressed => "regressed",
            MetricVerdict::Unchanged => "unchanged",
            MetricVerdict::Inconclusive => "inconclusive",
        }
    }
}

/// Per-case, per-arm metric sums over scoreable trials.
#[derive(Debug, Default)]
pub(crate) struct MetricAccumulator {
    /// Per case: per arm: metric → (sum, count).
    cases: Vec<[BTreeMap<String, (f64, u32)>; 2]>,
    /// Per judge metric: (sum of repeat standard deviations, trials).
    judge_spread: BTreeMap<String, (f64, u32)>,
}

impl MetricAccumulator {
    /// Add one record of case `case` in arm index `arm` (0 = with, 1 = without);
    /// `judge_repeats` says whether the run asked its judge more than once per trial (only
    /// then are the records' metric details parsed, for the repeat spread).
    pub(crate) fn add(
        &mut self,
        case: usize,
        arm: usize,
        record: &TrialRecord,
        judge_repeats: bool,
    ) {
        if record.outcome == Outcome::Unscoreable {
            return;
        }
        if self.cases.len() <= case {
            self.cases.resize_with(case + 1, Default::default);
        }
        let sums = &mut self.cases[case][arm];
        let mut add = |name: &str, value: f64| match sums.get_mut(name) {
            Some(entry) => {
                entry.0 += value;
                entry.1 += 1;
            }
            None => {
                sums.insert(name.to_string(), (value, 1));
            }
        };
        for (name, score) in &record.scores {
            add(name, *score);
        }
        if let Some(composite) = record.composite {
            add(COMPOSITE, composite);
        }
        if !judge_repeats {
            return;
        }
        for (name, metric) in record.metrics.parse() {
            if let Some(sd) = metric.judge.as_ref().and_then(|judge| judge.sd) {
                let entry = self.judge_spread.entry(name).or_default();
                entry.0 += sd;
                entry.1 += 1;
            }
        }
    }

    /// Whether any metric was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.cases
            .iter()
            .all(|arms| arms[0].is_empty() && arms[1].is_empty())
    }

    /// The case means of case `case`: per arm, metric → mean.
    pub(crate) fn case_means(&self, case: usize) -> [BTreeMap<String, f64>; 2] {
        let means = |sums: &BTreeMap<String, (f64, u32)>| {
            sums.iter()
                .map(|(name, (sum, count))| (name.clone(), sum / *count as f64))
                .collect()
        };
        match self.cases.get(case) {
            Some([with, without]) => [means(with), means(without)],
            None => Default::default(),
        }
    }

    /// Every metric's lift, the composite first, then the six ACES metrics in their order, then
    /// `checks`, then custom metrics by name. `labels` gives each case's cluster label (the case
    /// id when unclustered) in case-index order.
    pub(crate) fn lifts(
        &self,
        labels: &[String],
        clustered: bool,
        grading: &GradingSettings,
        settings: &AnalysisSettings,
    ) -> Vec<MetricLift> {
        let mut names: Vec<String> = Vec::new();
        for arms in &self.cases {
            for arm in arms {
                for name in arm.keys() {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
            }
        }
        let rank = |name: &str| -> (usize, String) {
            if name == COMPOSITE {
                (0, String::new())
            } else if let Some(position) = ACES_METRICS.iter().position(|m| *m == name) {
                (1 + position, String::new())
            } else if name == crate::grade::metric::CHECKS {
                (10, String::new())
            } else {
                (11, name.to_string())
            }
        };
        names.sort_by_key(|name| rank(name));
        let compute = |name: &String| self.lift(name, labels, clustered, grading, settings);
        // The metrics' bootstraps are independent: one thread each.
        std::thread::scope(|scope| {
            let handles: Vec<_> = names
                .iter()
                .map(|name| scope.spawn(move || compute(name)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("metric lift thread"))
                .collect()
        })
    }

    fn lift(
        &self,
        name: &str,
        labels: &[String],
        clustered: bool,
        grading: &GradingSettings,
        settings: &AnalysisSettings,
    ) -> MetricLift {
        let mut with = Vec::new();
        let mut without = Vec::new();
        let mut pair_labels = Vec::new();
        let (mut with_trials, mut without_trials) = (0usize, 0usize);
        for (index, arms) in self.cases.iter().enumerate() {
            let with_sum = arms[0].get(name);
            let without_sum = arms[1].get(name);
            with_trials += with_sum.map_or(0, |s| s.1 as usize);
            without_trials += without_sum.map_or(0, |s| s.1 as usize);
            if let (Some((a, n_a)), Some((b, n_b))) = (with_sum, without_sum) {
                with.push(a / *n_a as f64);
                without.push(b / *n_b as f64);
                pair_labels.push(
                    labels
                        .get(index)
                        .cloned()
                        .unwrap_or_else(|| format!("case:{index}")),
                );
            }
        }
        let n = with.len();
        let mean = |values: &[f64]| {
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        let differences: Vec<f64> = with.iter().zip(&without).map(|(a, b)| a - b).collect();
        let clusters = clustered.then(|| Clusters::from_labels(&pair_labels));
        let prefix = if clustered { "cluster" } else { "case" };
        let (interval, method) = if n < 2 {
            (None, format!("{prefix}-bootstrap-bca"))
        } else if n <= BOOTSTRAP_MAX_CASES {
            let config = BootstrapConfig {
                resamples: settings.resamples,
                seed: settings.seed,
                method: BootstrapMethod::Bca,
                confidence: CONFIDENCE,
            };
            match stats::bootstrap_paired_difference(&with, &without, clusters.as_ref(), &config) {
                Ok(result) => match result.bca {
                    Some(bca) => (Some(bca), format!("{prefix}-bootstrap-bca")),
                    None => (
                        Some(result.percentile),
                        format!("{prefix}-bootstrap-percentile"),
                    ),
                },
                Err(_) => (None, format!("{prefix}-bootstrap-bca")),
            }
        } else {
            let interval = stats::paired_t(&differences, clusters.as_ref(), CONFIDENCE)
                .ok()
                .and_then(|t| t.interval)
                .map(|i| stats::Interval {
                    low: i.low.max(-1.0),
                    high: i.high.min(1.0),
                });
            (interval, "paired-t".to_string())
        };
        let verdict = match interval {
            _ if n >= 1 && differences.iter().all(|d| *d == 0.0) => MetricVerdict::Unchanged,
            Some(i) if n >= 2 && i.low > 0.0 => MetricVerdict::Improved,
            Some(i) if n >= 2 && i.high < 0.0 => MetricVerdict::Regressed,
            _ => MetricVerdict::Inconclusive,
        };
        MetricLift {
            metric: name.to_string(),
            weight: (name != COMPOSITE).then(|| grading.weight(name)),
            with_skill: mean(&with),
            without_skill: mean(&without),
            estimate: mean(&differences),
            ci_low: interval.map(|i| i.low),
            ci_high: interval.map(|i| i.high),
            method,
            n_cases: n,
            with_skill_trials: with_trials,
            without_skill_trials: without_trials,
            verdict,
            judge_repeat_sd: self
                .judge_spread
                .get(name)
                .map(|(sum, count)| sum / f64::from(*count)),
        }
    }
}
