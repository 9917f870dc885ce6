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
use crate::record::{Arm, Outcome};
use crate::values::trajectory::Usage;

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
    pub decided_by: Option<crate::record::PassBasis>,
    #[serde(default)]
    pub outcome_score: Option<f64>,
    /// The checks, decoded as [`crate::record::CheckResult`]s and summarized.
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
    pub other_judges: Cow<'a, BTreeMap<String, BTreeMap<String, crate::record::MetricResult>>>,
    #[serde(default)]
    pub other_judge_errors: Cow<'a, BTreeMap<String, Vec<String>>>,
    pub usage: Usage,
    #[serde(deserialize_with = "started_at")]
    pub started_at: DateTime<Utc>,
    pub wall_s: f64,
    pub model_latency_s: f64,
    pub requests: usize,
    /// How many retries (each decoded as a [`crate::values::trajectory::RetryRecord`]).
    pub retries: RetryCount,
    pub tool_calls: usize,
    #[serde(default)]
    pub tool_call_errors: usize,
    pub activated_skills: Cow<'a, [String]>,
    #[serde(borrow)]
    pub transcript: Option<Cow<'a, str>>,
    #[serde(default)]
    pub transcript_span: Option<TranscriptSpan>,
    pub workspace: Option<Cow<'a, std::path::Path>>,
    #[serde(default)]
    pub supersedes: bool,
    #[serde(default)]
    pub unscoreable_cause: Option<crate::record::UnscoreableCause>,
    #[serde(default)]
    pub usage_partial: bool,
    #[serde(default)]
    pub infrastructure: Option<crate::values::trajectory::InfrastructureCause>,
    #[serde(default)]
    pub truncated: Cow<'a, [crate::values::trajectory::OutputCut]>,
    #[serde(default)]
    pub reused_from: Option<Cow<'a, crate::record::ReusedFrom>>,
    #[serde(default)]
    pub judge_usage: Option<Cow<'a, crate::record::JudgeSpend>>,
    #[serde(default)]
    pub skill_order: Option<Cow<'a, [String]>>,
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
            tool_call_errors: self.tool_call_errors,
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
            skill_order: self.skill_order.as_deref().map(Cow::Borrowed),
        }
    }
}

impl TrialView<'_> {
    /// Why the trial is unscoreable ([`TrialRecord::cause`]).
    pub fn cause(&self) -> Option<crate::record::UnscoreableCause> {
        if self.outcome != Outcome::Unscoreable {
            return None;
        }
        Some(self.unscoreable_cause.unwrap_or_else(|| {
            crate::record::UnscoreableCause::of_legacy_reason(self.reason.as_deref().unwrap_or(""))
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
/// [`crate::record::CheckResult`]) and its verdict.
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
/// [`crate::values::trajectory::RetryRecord`]).
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

/// A `DateTime<Utc>` as chrono's serde form reads it, with the form skill-lift writes
/// (`YYYY-MM-DDTHH:MM:SS[.fraction]Z`, 1 to 9 fraction digits) read without chrono's general
/// parser, which costs more than the rest of the record's numbers together. Any other text goes
/// to chrono: the same texts are accepted, as the same instants.
fn started_at<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DateTime<Utc>, D::Error> {
    struct InstantVisitor;
    impl Visitor<'_> for InstantVisitor {
        type Value = DateTime<Utc>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("an RFC 3339 formatted date and time string")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<DateTime<Utc>, E> {
            match written_instant(text) {
                Some(instant) => Ok(instant),
                None => {
                    DateTime::<Utc>::deserialize(serde::de::value::StrDeserializer::<E>::new(text))
                }
            }
        }
    }
    deserializer.deserialize_str(InstantVisitor)
}

/// The instant `text` names when it has the form skill-lift writes (see [`started_at`]);
/// `None` for any other text (which may still be a valid instant).
fn written_instant(text: &str) -> Option<DateTime<Utc>> {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        bytes.get(range)?.iter().try_fold(0u32, |value, &byte| {
            byte.is_ascii_digit()
                .then(|| value * 10 + u32::from(byte - b'0'))
        })
    };
    if bytes.len() < 20
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || bytes[10] != b'T'
        || bytes[13] != b':'
        || bytes[16] != b':'
        || bytes.last() != Some(&b'Z')
    {
        return None;
    }
    let year = i32::try_from(digits(0..4)?).ok()?;
    let (month, day) = (digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    let nanosecond = match &bytes[19..bytes.len() - 1] {
        [] => 0,
        [b'.', fraction @ ..] if (1..=9).contains(&fraction.len()) => {
            digits(20..bytes.len() - 1)? * 10u32.pow(9 - fraction.len() as u32)
        }
        _ => return None,
    };
    // A leap second (`:60`) is left to chrono.
    if second > 59 {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(year, month, day)?;
    let time = chrono::NaiveTime::from_hms_nano_opt(hour, minute, second, nanosecond)?;
    Some(date.and_time(time).and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast form and chrono agree on every text: accepted alike, as the same instant.
    #[test]
    fn written_instants_read_as_chrono_reads_them() {
        let chrono_reads = |text: &str| {
            serde_json::from_value::<DateTime<Utc>>(serde_json::Value::String(text.into())).ok()
        };
        let mut texts: Vec<String> = [
            "2026-12-02T12:59:50.356716445Z",
            "2026-12-02T12:59:50Z",
            "2026-12-02T12:59:50.5Z",
            "2026-12-02T12:59:50.1234567890Z",
            "2026-12-02T12:59:50.Z",
            "2024-02-29T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-12-00T00:00:00Z",
            "2026-12-31T23:59:59.999999999Z",
            "2026-12-31T24:00:00Z",
            "2026-12-31T23:60:00Z",
            "2016-12-31T23:59:60Z",
            "2016-12-31T23:59:60.5Z",
            "2026-12-02t12:59:50Z",
            "2026-12-02 12:59:50Z",
            "2026-12-02T12:59:50z",
            "2026-12-02T12:59:50+00:00",
            "2026-12-02T12:59:50.25+02:00",
            "2026-12-02T12:59:50-0130",
            "+2026-12-02T12:59:50Z",
            "12026-12-02T12:59:50Z",
            "0000-01-01T00:00:00Z",
            "2026-1-02T12:59:50Z",
            "2026-12-02T12:59:5Z",
            "2026-12-02T12:59Z",
            "2026-12-02T1a:59:50Z",
            "2026-12-02T12:59:50.12a4Z",
            "2026-12-02T12:59:50.-1Z",
            "",
            "Z",
        ]
        .iter()
        .map(|text| text.to_string())
        .collect();
        // Every day of a leap year and a common one, at varied times and fractions.
        let mut day = chrono::NaiveDate::from_ymd_opt(2023, 1, 1).unwrap();
        for i in 0..730u32 {
            let digits = (i % 10) as usize;
            let fraction = format!("{:09}", i * 1_234_567 % 1_000_000_000);
            let fraction = if digits == 0 {
                String::new()
            } else {
                format!(".{}", &fraction[..digits])
            };
            texts.push(format!(
                "{day}T{:02}:{:02}:{:02}{fraction}Z",
                i % 24,
                i * 7 % 60,
                i * 13 % 60
            ));
            day = day.succ_opt().unwrap();
        }
        for text in &texts {
            let expected = chrono_reads(text);
            let view: Result<DateTime<Utc>, _> =
                started_at(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(text));
            assert_eq!(view.ok(), expected, "{text:?}");
            if let Some(fast) = written_instant(text) {
                assert_eq!(Some(fast), expected, "{text:?}");
            }
        }
        assert!(written_instant("2026-12-02T12:59:50.356716445Z").is_some());
    }
}
