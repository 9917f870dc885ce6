//! [`TrialView`]: a trial record as the analysis reads it, decoded from a line of
//! `trials.jsonl` without copying its text.
//!
//! The view has every field of [`TrialRecord`] with the same JSON shape (names, required and
//! defaulted fields, types, and the same names in decoder messages), so a line decodes as a view
//! exactly when it decodes as a record, with the same first error. What differs is the cost:
//! strings borrow from the line (a copy only for one with escapes), the checks and retries are
//! checked and counted rather than kept, and the owned parts of [`TrialRecord`] that are empty in
//! most records (judge details, reuse origin) are owned only when present. A record in memory
//! gives its view without a copy ([`TrialRecord::view`]); the analysis reads views only, from
//! either source.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};

use super::{MetricDetails, TranscriptSpan, TrialRecord};
use crate::grade::Outcome;
use crate::trajectory::Usage;
use crate::workspace::Arm;

/// A trial record as the analysis reads it (see the module comment); fields as in
/// [`TrialRecord`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename = "TrialRecord", expecting = "struct TrialRecord")]
pub struct TrialView<'a> {
    #[serde(borrow)]
    pub run_id: Cow<'a, str>,
    #[serde(borrow)]
    pub trial_id: Cow<'a, str>,
    #[serde(borrow)]
    pub case_id: Cow<'a, str>,
    pub arm: Arm,
    pub attempt: u32,
    #[serde(borrow)]
    pub runner: Cow<'a, str>,
    #[serde(borrow)]
    pub model: Cow<'a, str>,
    #[serde(borrow)]
    pub observed_model: Option<Cow<'a, str>>,
    pub outcome: Outcome,
    #[serde(borrow)]
    pub reason: Option<Cow<'a, str>>,
    #[serde(default)]
    pub decided_by: Option<crate::grade::PassBasis>,
    #[serde(default)]
    pub outcome_score: Option<f64>,
    /// The checks, decoded as [`crate::grade::checks::CheckResult`]s and summarized.
    pub checks: CheckSummary,
    /// The scores, by metric name in name order (a later duplicate name replaces the earlier
    /// value, as in a map).
    #[serde(borrow)]
    pub scores: Scores<'a>,
    #[serde(default)]
    pub composite: Option<f64>,
    #[serde(default)]
    pub metrics: Cow<'a, MetricDetails>,
    #[serde(default)]
    pub other_judges: Cow<'a, BTreeMap<String, BTreeMap<String, crate::grade::MetricResult>>>,
    #[serde(default)]
    pub other_judge_errors: Cow<'a, BTreeMap<String, Vec<String>>>,
    pub usage: Usage,
    pub started_at: DateTime<Utc>,
    pub wall_s: f64,
    pub model_latency_s: f64,
    pub requests: usize,
    /// How many retries (each decoded as a [`crate::trajectory::RetryRecord`]).
    pub retries: RetryCount,
    pub tool_calls: usize,
    pub activated_skills: Cow<'a, [String]>,
    #[serde(borrow)]
    pub transcript: Option<Cow<'a, str>>,
    #[serde(default)]
    pub transcript_span: Option<TranscriptSpan>,
    pub workspace: Option<Cow<'a, std::path::Path>>,
    #[serde(default)]
    pub supersedes: bool,
    #[serde(default)]
    pub unscoreable_cause: Option<crate::grade::UnscoreableCause>,
    #[serde(default)]
    pub usage_partial: bool,
    #[serde(default)]
    pub infrastructure: Option<crate::trajectory::InfrastructureCause>,
    #[serde(default)]
    pub truncated: Cow<'a, [crate::trajectory::OutputCut]>,
    #[serde(default)]
    pub reused_from: Option<Cow<'a, crate::reuse::ReusedFrom>>,
    #[serde(default)]
    pub judge_usage: Option<Cow<'a, crate::grade::JudgeSpend>>,
}

impl TrialRecord {
    /// This record as the analysis reads it (borrowed, no copy of its text).
    pub fn view(&self) -> TrialView<'_> {
        TrialView {
            run_id: Cow::Borrowed(&self.run_id),
            trial_id: Cow::Borrowed(&self.trial_id),
            case_id: Cow::Borrowed(&self.case_id),
            arm: self.arm,
            attempt: self.attempt,
            runner: Cow::Borrowed(&self.runner),
            model: Cow::Borrowed(&self.model),
            observed_model: self.observed_model.as_deref().map(Cow::Borrowed),
            outcome: self.outcome,
            reason: self.reason.as_deref().map(Cow::Borrowed),
            decided_by: self.decided_by,
            outcome_score: self.outcome_score,
            checks: CheckSummary {
                count: self.checks.len(),
                all_passed: self.checks.iter().all(|c| c.passed),
            },
            scores: Scores(
                self.scores
                    .iter()
                    .map(|(name, score)| (Cow::Borrowed(name.as_str()), *score))
                    .collect(),
            ),
            composite: self.composite,
            metrics: Cow::Borrowed(&self.metrics),
            other_judges: Cow::Borrowed(&self.other_judges),
            other_judge_errors: Cow::Borrowed(&self.other_judge_errors),
            usage: self.usage.clone(),
            started_at: self.started_at,
            wall_s: self.wall_s,
            model_latency_s: self.model_latency_s,
            requests: self.requests,
            retries: RetryCount(self.retries.len()),
            tool_calls: self.tool_calls,
            activated_skills: Cow::Borrowed(&self.activated_skills),
            transcript: self.transcript.as_deref().map(Cow::Borrowed),
            transcript_span: self.transcript_span,
            workspace: self.workspace.as_deref().map(Cow::Borrowed),
            supersedes: self.supersedes,
            unscoreable_cause: self.unscoreable_cause,
            usage_partial: self.usage_partial,
            infrastructure: self.infrastructure,
            truncated: Cow::Borrowed(&self.truncated),
            reused_from: self.reused_from.as_ref().map(Cow::Borrowed),
            judge_usage: self.judge_usage.as_ref().map(Cow::Borrowed),
        }
    }
}

impl TrialView<'_> {
    /// Why the trial is unscoreable ([`TrialRecord::cause`]).
    pub fn cause(&self) -> Option<crate::grade::UnscoreableCause> {
        if self.outcome != Outcome::Unscoreable {
            return None;
        }
        Some(self.unscoreable_cause.unwrap_or_else(|| {
            crate::grade::UnscoreableCause::of_legacy_reason(self.reason.as_deref().unwrap_or(""))
        }))
    }

    /// The name the analysis counts an unscoreable trial's cause under
    /// ([`TrialRecord::cause_label`]).
    pub fn cause_label(&self) -> String {
        super::cause_label(
            self.unscoreable_cause,
            self.infrastructure,
            self.reason.as_deref(),
        )
    }

    /// Whether `trial_id` is `<case_id>/<arm>/<attempt>` ([`super::TrialKey::trial_id`]),
    /// compared without building the expected id.
    pub fn trial_id_matches_key(&self) -> bool {
        let expected_tail = |rest: &str| {
            rest.strip_prefix(self.arm.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|attempt| {
                    // `u32`'s decimal form: no sign, no leading zero (but "0" itself).
                    attempt.parse::<u32>().ok() == Some(self.attempt)
                        && !attempt.starts_with('+')
                        && (attempt == "0" || !attempt.starts_with('0'))
                })
        };
        self.trial_id
            .strip_prefix(self.case_id.as_ref())
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(expected_tail)
    }
}

/// The checks of a record: how many, and whether all passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CheckSummary {
    pub count: usize,
    pub all_passed: bool,
}

/// A check as recorded, decoded for its shape (the fields of
/// [`crate::grade::checks::CheckResult`]) and its verdict.
#[derive(Deserialize)]
#[serde(rename = "CheckResult", expecting = "struct CheckResult")]
#[allow(dead_code)]
struct CheckShape {
    #[serde(rename = "type")]
    check_type: StrShape,
    passed: bool,
    detail: StrShape,
}

/// Decode a sequence of `Item`s, handing each to `take`.
struct EachOf<Item, Take>(Take, PhantomData<Item>);

impl<'de, Item: Deserialize<'de>, Take: FnMut(Item)> Visitor<'de> for EachOf<Item, Take> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<Item>()? {
            (self.0)(item);
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for CheckSummary {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut summary = CheckSummary {
            count: 0,
            all_passed: true,
        };
        deserializer.deserialize_seq(EachOf(
            |check: CheckShape| {
                summary.count += 1;
                summary.all_passed &= check.passed;
            },
            PhantomData,
        ))?;
        Ok(summary)
    }
}

/// A retry as recorded, decoded for its shape (the fields of
/// [`crate::trajectory::RetryRecord`]).
#[derive(Deserialize)]
#[serde(rename = "RetryRecord", expecting = "struct RetryRecord")]
#[allow(dead_code)]
struct RetryShape {
    error: StrShape,
    waited_s: f64,
}

/// How many retries a record lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetryCount(pub usize);

impl<'de> Deserialize<'de> for RetryCount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut count = 0;
        deserializer.deserialize_seq(EachOf(|_: RetryShape| count += 1, PhantomData))?;
        Ok(RetryCount(count))
    }
}

/// A record's scores: (metric name, score) in name order, each name once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scores<'a>(pub Vec<(Cow<'a, str>, f64)>);

impl<'de: 'a, 'a> Deserialize<'de> for Scores<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScoresVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ScoresVisitor<'a> {
            type Value = Scores<'a>;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scores<'a>, A::Error> {
                let mut scores: Vec<(Cow<'a, str>, f64)> = Vec::new();
                while let Some((name, score)) = map.next_entry::<BorrowedKey<'a>, f64>()? {
                    match scores.iter_mut().find(|(known, _)| *known == name.0) {
                        Some(entry) => entry.1 = score,
                        None => scores.push((name.0, score)),
                    }
                }
                scores.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Scores(scores))
            }
        }
        deserializer.deserialize_map(ScoresVisitor(PhantomData))
    }
}

/// A map key borrowed from the input when it has no escapes.
struct BorrowedKey<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for BorrowedKey<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wrapped<'a>(#[serde(borrow)] Cow<'a, str>);
        Wrapped::deserialize(deserializer).map(|w| BorrowedKey(w.0))
    }
}

/// A string checked and not kept (what a `String` field accepts, without allocating it).
struct StrShape;

impl<'de> Deserialize<'de> for StrShape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl Visitor<'_> for StrVisitor {
            type Value = StrShape;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<StrShape, E> {
                Ok(StrShape)
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}
