//! The lift by the target's position: does the measured lift depend on where the skill sat in
//! the list of skills the model was shown?
//!
//! A balanced run (`crate::analysis::skill_order`) rotates the target over the positions across each
//! case's attempts and keeps the decoys' order the same in both arms of an attempt, so the pair
//! (with-skill attempt *a*, without-skill attempt *a*) of a case differs only by the target, at
//! a known position. Per position this module reports the pairs, both arms' pass rates and the
//! lift (mean paired difference), and tests whether the lift differs between positions.
//!
//! **Test.** A within-case permutation test (a randomization test that follows the design:
//! the positions were assigned within each case, so under "position does not matter" the
//! position labels of a case's pairs are exchangeable). The statistic is the between-position
//! sum of squares of the paired differences, `S = Σ_p n_p (d̄_p − d̄)²`; the p-value is
//! `(1 + #{S* ≥ S}) / (1 + B)` over `B` = [`PERMUTATIONS`] seeded relabelings (Phipson & Smyth,
//! "Permutation p-values should never be zero", 2010). No variance at all (every difference
//! equal) gives no test and no warning. The warning is raised at p < 0.05.
//!
//! Only the `with_skill`/`without_skill` pair is read; the position comes from the with-skill
//! trial's recorded `skill_order` (`TrialRecord::skill_order`). Runs without recorded orders
//! (agent CLIs that do not report their catalogue, older runs) get no position analysis.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::{Arm, Outcome, TrialView};

/// Relabelings of the permutation test.
pub(crate) const PERMUTATIONS: usize = 10_000;

/// The significance level of the position-sensitivity warning.
pub(crate) const ALPHA: f64 = 0.05;

/// One position's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PositionRow {
    /// 1-based position of the target in the list the model was shown (1 = first).
    pub position: usize,
    /// Pairs (case, attempt) with both arms scored and the target at this position.
    pub pairs: usize,
    /// The with-skill pass rate over those pairs (fraction).
    pub with_skill: Option<f64>,
    /// The without-skill pass rate over the same pairs (fraction).
    pub without_skill: Option<f64>,
    /// The mean paired difference (with − without, fraction).
    pub lift: Option<f64>,
}

/// `summary.json` `position`: the lift by the target's position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PositionSummary {
    /// Skills the with-skill arm presented (positions 1..=`positions`).
    pub positions: usize,
    /// One row per position, first to last.
    pub rows: Vec<PositionRow>,
    /// The within-case permutation test's p-value (module comment); absent when nothing varies
    /// or fewer than two positions have pairs.
    pub p_value: Option<f64>,
    /// True when the lift differs between positions beyond noise (p < 0.05).
    pub sensitive: bool,
    /// The warning every report prints when `sensitive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

#[derive(Debug, Default, Clone)]
struct Pair {
    with_pass: Option<bool>,
    with_position: Option<(usize, usize)>,
    without_pass: Option<bool>,
}

/// Collects the pairs of a run (add every fresh record of the run).
#[derive(Debug, Default)]
pub(crate) struct PositionAccumulator {
    target: String,
    pairs: BTreeMap<(String, u32), Pair>,
}

fn scored(outcome: Outcome) -> Option<bool> {
    match outcome {
        Outcome::Pass => Some(true),
        Outcome::Fail => Some(false),
        _ => None,
    }
}

impl PositionAccumulator {
    /// An empty accumulator for the target skill `target`.
    pub(crate) fn new(target: &str) -> Self {
        Self {
            target: target.to_string(),
            pairs: BTreeMap::new(),
        }
    }

    /// Add one (fresh) record.
    pub(crate) fn add(&mut self, record: &TrialView<'_>) {
        let key = (record.case_id.to_string(), record.attempt);
        match record.arm {
            Arm::WithSkill => {
                let pair = self.pairs.entry(key).or_default();
                pair.with_pass = scored(record.outcome);
                pair.with_position = record.skill_order.as_deref().and_then(|order| {
                    crate::analysis::skill_order::position_in(order, &self.target)
                        .map(|position| (position, order.len()))
                });
            }
            Arm::WithoutSkill => {
                self.pairs.entry(key).or_default().without_pass = scored(record.outcome);
            }
            _ => {}
        }
    }

    /// The position summary; `None` when no with-skill trial recorded an order with two or more
    /// skills.
    pub(crate) fn finish(self, seed: u64) -> Option<PositionSummary> {
        let positions = self
            .pairs
            .values()
            .filter_map(|p| p.with_position.map(|(_, n)| n))
            .max()?;
        if positions < 2 {
            return None;
        }
        // (case, position, difference, with, without) of the pairs with both arms scored.
        let mut by_case: BTreeMap<&str, Vec<(usize, f64)>> = BTreeMap::new();
        let mut sums = vec![(0usize, 0.0f64, 0.0f64); positions];
        for ((case, _), pair) in &self.pairs {
            let (Some(with), Some(without), Some((position, _))) =
                (pair.with_pass, pair.without_pass, pair.with_position)
            else {
                continue;
            };
            let slot = &mut sums[position - 1];
            slot.0 += 1;
            slot.1 += f64::from(u8::from(with));
            slot.2 += f64::from(u8::from(without));
            let difference = f64::from(u8::from(with)) - f64::from(u8::from(without));
            by_case
                .entry(case.as_str())
                .or_default()
                .push((position - 1, difference));
        }
        let rows: Vec<PositionRow> = sums
            .iter()
            .enumerate()
            .map(|(index, &(pairs, with, without))| {
                let rate = |x: f64| (pairs > 0).then(|| x / pairs as f64);
                PositionRow {
                    position: index + 1,
                    pairs,
                    with_skill: rate(with),
                    without_skill: rate(without),
                    lift: rate(with - without),
                }
            })
            .collect();
        let p_value = permutation_p_value(&by_case, positions, seed);
        let sensitive = p_value.is_some_and(|p| p < ALPHA);
        let warning = sensitive.then(|| warning_text(&rows, p_value.unwrap_or(1.0)));
        Some(PositionSummary {
            positions,
            rows,
            p_value,
            sensitive,
            warning,
        })
    }
}

/// "position-sensitive: lift +X pp with the target listed last, +Y pp listed first (…)".
fn warning_text(rows: &[PositionRow], p: f64) -> String {
    let with_pairs: Vec<&PositionRow> = rows.iter().filter(|r| r.pairs > 0).collect();
    let points = |row: &PositionRow| {
        row.lift
            .map_or_else(|| "n/a".to_string(), |l| format!("{:+.1} pp", l * 100.0))
    };
    let (first, last) = (with_pairs.first(), with_pairs.last());
    let ends = match (first, last) {
        (Some(first), Some(last)) => format!(
            "lift {} at the end (target listed at position {} of {}), {} at the start (position {})",
            points(last),
            last.position,
            rows.len(),
            points(first),
            first.position
        ),
        _ => String::new(),
    };
    format!(
        "position-sensitive: {ends}; the lift differs between the target's positions beyond noise (within-case permutation test p {}). The headline lift averages over positions balanced across attempts; what the skill adds depends on where it is listed",
        crate::analysis::text::format_p_value(p)
    )
}

/// The between-position sum of squares of the differences, `Σ_p n_p (d̄_p − d̄)²`.
fn statistic(cases: &[Vec<(usize, f64)>], labels: &[Vec<usize>], positions: usize) -> f64 {
    let mut count = vec![0usize; positions];
    let mut sum = vec![0.0f64; positions];
    let (mut total_n, mut total) = (0usize, 0.0f64);
    for (case, case_labels) in cases.iter().zip(labels) {
        for (&(_, difference), &label) in case.iter().zip(case_labels) {
            count[label] += 1;
            sum[label] += difference;
            total_n += 1;
            total += difference;
        }
    }
    if total_n == 0 {
        return 0.0;
    }
    let mean = total / total_n as f64;
    count
        .iter()
        .zip(&sum)
        .filter(|(n, _)| **n > 0)
        .map(|(&n, &s)| {
            let m = s / n as f64;
            n as f64 * (m - mean) * (m - mean)
        })
        .sum()
}

/// The within-case permutation test's p-value; `None` without variance or with fewer than two
/// positions holding pairs.
fn permutation_p_value(
    by_case: &BTreeMap<&str, Vec<(usize, f64)>>,
    positions: usize,
    seed: u64,
) -> Option<f64> {
    let cases: Vec<Vec<(usize, f64)>> = by_case.values().cloned().collect();
    let values: Vec<f64> = cases.iter().flatten().map(|&(_, d)| d).collect();
    let first = *values.first()?;
    if values.iter().all(|&d| d == first) {
        return None;
    }
    let observed_labels: Vec<Vec<usize>> = cases
        .iter()
        .map(|c| c.iter().map(|&(p, _)| p).collect())
        .collect();
    let used: std::collections::BTreeSet<usize> =
        observed_labels.iter().flatten().copied().collect();
    if used.len() < 2 {
        return None;
    }
    let observed = statistic(&cases, &observed_labels, positions);
    let mut rng = crate::analysis::stats::seeded_rng(seed ^ 0x706f_7369_7469_6f6e);
    let mut labels = observed_labels.clone();
    let mut at_least = 0usize;
    for _ in 0..PERMUTATIONS {
        for (case_labels, original) in labels.iter_mut().zip(&observed_labels) {
            case_labels.copy_from_slice(original);
            for i in (1..case_labels.len()).rev() {
                let bound = u32::try_from(i + 1).unwrap_or(u32::MAX);
                let j = crate::analysis::stats::uniform_below(&mut rng, bound) as usize;
                case_labels.swap(i, j);
            }
        }
        if statistic(&cases, &labels, positions) >= observed - 1e-12 {
            at_least += 1;
        }
    }
    Some((1 + at_least) as f64 / (1 + PERMUTATIONS) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TrialRecord;

    fn record(case: &str, arm: Arm, attempt: u32, pass: bool, order: &[&str]) -> TrialRecord {
        let mut record = super::super::tests::record(
            case,
            arm,
            attempt,
            if pass { Outcome::Pass } else { Outcome::Fail },
        );
        record.skill_order = Some(order.iter().map(|s| s.to_string()).collect());
        record
    }

    fn run(follows_last: bool) -> Option<PositionSummary> {
        let decoys: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        let mut accumulator = PositionAccumulator::new("t");
        for case in 0..16 {
            let case_id = format!("case-{case}");
            for attempt in 1..=4 {
                let with = crate::analysis::skill_order::presentation_order(
                    42,
                    &case_id,
                    attempt,
                    &decoys,
                    Some("t"),
                );
                let without = crate::analysis::skill_order::presentation_order(
                    42, &case_id, attempt, &decoys, None,
                );
                let last = with.last().map(String::as_str) == Some("t");
                let pass = if follows_last { last } else { attempt % 2 == 0 };
                let with_refs: Vec<&str> = with.iter().map(String::as_str).collect();
                let without_refs: Vec<&str> = without.iter().map(String::as_str).collect();
                accumulator
                    .add(&record(&case_id, Arm::WithSkill, attempt, pass, &with_refs).view());
                accumulator.add(
                    &record(&case_id, Arm::WithoutSkill, attempt, false, &without_refs).view(),
                );
            }
        }
        accumulator.finish(42)
    }

    #[test]
    fn a_model_that_follows_only_the_last_listed_skill_is_flagged() {
        let summary = run(true).unwrap();
        assert_eq!(summary.positions, 5);
        assert!(summary.sensitive, "{summary:?}");
        let warning = summary.warning.unwrap();
        assert!(
            warning.starts_with("position-sensitive: lift +100.0 pp at the end"),
            "{warning}"
        );
        assert!(warning.contains("+0.0 pp at the start"), "{warning}");
        assert_eq!(summary.rows[4].lift, Some(1.0));
        assert_eq!(summary.rows[0].lift, Some(0.0));
    }

    #[test]
    fn a_lift_unrelated_to_position_is_not_flagged() {
        let summary = run(false).unwrap();
        assert!(!summary.sensitive, "{summary:?}");
        assert!(summary.p_value.unwrap() > ALPHA);
        assert!(summary.warning.is_none());
    }

    #[test]
    fn no_variance_gives_no_test_and_no_orders_no_summary() {
        let mut accumulator = PositionAccumulator::new("t");
        for attempt in 1..=2 {
            let order: &[&str] = if attempt == 1 {
                &["t", "a"]
            } else {
                &["a", "t"]
            };
            accumulator.add(&record("c", Arm::WithSkill, attempt, true, order).view());
            accumulator.add(&record("c", Arm::WithoutSkill, attempt, false, &["a"]).view());
        }
        let summary = accumulator.finish(1).unwrap();
        assert_eq!(summary.p_value, None);
        assert!(!summary.sensitive);
        let mut empty = PositionAccumulator::new("t");
        let mut plain = super::super::tests::record("c", Arm::WithSkill, 1, Outcome::Pass);
        plain.skill_order = None;
        empty.add(&plain.view());
        assert!(empty.finish(1).is_none());
    }
}
