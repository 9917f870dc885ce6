//! Per-metric and composite lifts.
//!
//! The case is the unit, as for the pass rate: a case's value of a metric in an arm is the mean
//! of that metric over the arm's trials where it applied (unscoreable trials excluded;
//! not-applicable values skipped, never 0). The arm's value is the mean over the cases where the
//! metric applied in both arms (the paired cases), and the lift is the mean of the paired case
//! differences — the same definition for the composite (`composite`, the per-trial weighted mean
//! of the applicable metrics, `crate::features::grade`) as for every single metric.
//!
//! Interval, test and verdict: the same policy as the headline (`super::inference`: paired t
//! below the bootstrap switch point, cluster t for few clusters, BCa otherwise), except that
//! beyond [`BOOTSTRAP_MAX_CASES`] paired cases the paired t interval replaces the bootstrap
//! (with thousands of cases its coverage matches the bootstrap's, at a fraction of its cost).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analysis::stats::Clusters;
use crate::record::{ACES_METRICS, GradingSettings, Outcome, TrialView};

use super::AnalysisSettings;
use super::inference::{self, Direction, PairedData, VerdictReason};
use super::noise::CaseMoments;

/// The name of the composite score in metric tables.
pub(crate) const COMPOSITE: &str = "composite";

/// Most paired cases for which a metric's interval is bootstrapped (beyond: paired t).
pub(crate) const BOOTSTRAP_MAX_CASES: usize = 2000;

/// One metric's lift (or the composite's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MetricLift {
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
    /// Test behind `p_value` (`paired-t`, `cluster-t`, `sign-flip-permutation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// Two-sided p-value of no lift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// `improved` when the interval is above 0 and the test agrees (p < 0.05), `regressed`
    /// likewise below, `unchanged` when every paired case difference is exactly 0, else
    /// `inconclusive` (see `verdict_reasons`).
    pub verdict: MetricVerdict,
    /// Why the verdict is inconclusive (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdict_reasons: Vec<VerdictReason>,
    /// Judge metrics with `--judge-k` > 1: the mean over scoreable trials of the standard
    /// deviation of the judge's repeats (how much the judge disagrees with itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_repeat_sd: Option<f64>,
}

/// The verdict on one metric's lift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MetricVerdict {
    Improved,
    Regressed,
    /// Every paired case has the same value in both arms.
    Unchanged,
    Inconclusive,
}

impl MetricVerdict {
    pub(crate) fn as_str(self) -> &'static str {
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
    /// Per case: per arm: metric → moments (count, sum, sum of squares, judge repeat variance).
    cases: Vec<[BTreeMap<String, CaseMoments>; 2]>,
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
        record: &TrialView<'_>,
        judge_repeats: bool,
    ) {
        if record.outcome == Outcome::Unscoreable {
            return;
        }
        if self.cases.len() <= case {
            self.cases.resize_with(case + 1, Default::default);
        }
        let sums = &mut self.cases[case][arm];
        let mut add = |name: &str, value: f64| {
            let entry = match sums.get_mut(name) {
                Some(entry) => entry,
                None => sums.entry(name.to_string()).or_default(),
            };
            entry.count += 1;
            entry.sum += value;
            entry.sum_squares += value * value;
        };
        for (name, score) in &record.scores.0 {
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
                let entry = self.judge_spread.entry(name.clone()).or_default();
                entry.0 += sd;
                entry.1 += 1;
                if let Some(moments) = sums.get_mut(&name) {
                    moments.judge_variance_sum += sd * sd;
                    moments.judge_attempts += 1;
                }
            }
        }
    }

    /// Whether any metric was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.cases
            .iter()
            .all(|arms| arms[0].is_empty() && arms[1].is_empty())
    }

    /// Per judge metric graded with repeats: the moments of both arms for every case where the
    /// metric has a value in both (for the noise decomposition).
    pub(crate) fn judge_moments(&self) -> BTreeMap<String, Vec<[CaseMoments; 2]>> {
        self.judge_spread
            .keys()
            .map(|name| {
                let cases = self
                    .cases
                    .iter()
                    .filter_map(|[with, without]| Some([*with.get(name)?, *without.get(name)?]))
                    .collect();
                (name.clone(), cases)
            })
            .collect()
    }

    /// The case means of case `case`: per arm, metric → mean.
    pub(crate) fn case_means(&self, case: usize) -> [BTreeMap<String, f64>; 2] {
        let means = |sums: &BTreeMap<String, CaseMoments>| {
            sums.iter()
                .map(|(name, m)| (name.clone(), m.sum / f64::from(m.count)))
                .collect()
        };
        match self.cases.get(case) {
            Some([with, without]) => [means(with), means(without)],
            None => Default::default(),
        }
    }

    /// Every metric's lift, the composite first, then the six ACES metrics in their order, then
    /// `style`, then `checks`, then custom metrics by name. `labels` gives each case's cluster label (the case
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
            } else if name == crate::record::STYLE {
                (9, String::new())
            } else if name == crate::record::CHECKS {
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
            with_trials += with_sum.map_or(0, |s| s.count as usize);
            without_trials += without_sum.map_or(0, |s| s.count as usize);
            if let (Some(a), Some(b)) = (with_sum, without_sum) {
                with.push(a.sum / f64::from(a.count));
                without.push(b.sum / f64::from(b.count));
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
        let clusters = clustered.then(|| Clusters::from_labels(&pair_labels));
        // Beyond BOOTSTRAP_MAX_CASES the t interval (same coverage, a fraction of the cost).
        let requested = (n > BOOTSTRAP_MAX_CASES).then_some(crate::record::LiftMethod::T);
        let mut inference = inference::infer(
            &PairedData {
                with: &with,
                without: &without,
                clusters: clusters.as_ref(),
                binary_table: None,
                arm_trials: None,
            },
            requested,
            settings.resamples,
            settings.seed,
        );
        let unchanged = n >= 1 && inference.differences.iter().all(|d| *d == 0.0);
        // Every case difference the same (0 or not): no variance, so no zero-width interval
        // beside the one statement the verdict reason makes (the headline states the same).
        let constant = n >= inference::MIN_VERDICT_CASES
            && inference.differences.windows(2).all(|w| w[0] == w[1]);
        let (direction, verdict_reasons) = inference::decide(&mut inference);
        if constant {
            inference.interval = None;
        }
        let (verdict, verdict_reasons) = match direction {
            _ if unchanged => (
                MetricVerdict::Unchanged,
                verdict_reasons
                    .into_iter()
                    .filter(|r| r.reason == inference::InconclusiveReason::NoVariance)
                    .collect(),
            ),
            Direction::Up => (MetricVerdict::Improved, verdict_reasons),
            Direction::Down => (MetricVerdict::Regressed, verdict_reasons),
            Direction::None => (MetricVerdict::Inconclusive, verdict_reasons),
        };
        let interval = inference.interval;
        let method = inference.method.as_str().to_string();
        MetricLift {
            metric: name.to_string(),
            // The composite has no weight, and style none: it never counts toward a score.
            weight: (name != COMPOSITE
                && !(name == crate::record::STYLE
                    && grading.judge_metrics.iter().any(|m| m == name)))
            .then(|| grading.weight(name)),
            with_skill: mean(&with),
            without_skill: mean(&without),
            estimate: inference.estimate,
            ci_low: interval.map(|i| i.low),
            ci_high: interval.map(|i| i.high),
            method,
            n_cases: n,
            with_skill_trials: with_trials,
            without_skill_trials: without_trials,
            test: inference.test.map(|t| t.as_str().to_string()),
            p_value: inference.p_value,
            verdict,
            verdict_reasons,
            judge_repeat_sd: self
                .judge_spread
                .get(name)
                .map(|(sum, count)| sum / f64::from(*count)),
        }
    }
}
