//! `trials.csv` (one row per recorded trial) and `cases.csv` (one row per case × arm). Column
//! order is stable and documented in `docs/run-format.md`; units are in the column names.

use crate::analysis::{CaseArm, Summary};
use crate::record::TrialRecord;

/// Columns of `trials.csv`, in order.
pub const TRIAL_COLUMNS: [&str; 24] = [
    "run_id",
    "trial_id",
    "case_id",
    "arm",
    "attempt",
    "runner",
    "model",
    "observed_model",
    "outcome",
    "reason",
    "checks_passed",
    "checks_total",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost_usd",
    "wall_s",
    "model_latency_s",
    "requests",
    "retries",
    "tool_calls",
    "activated_skills",
    "started_at",
    "transcript",
];

/// Columns of `cases.csv`, in order.
pub const CASE_COLUMNS: [&str; 13] = [
    "case_id",
    "arm",
    "cluster",
    "trials",
    "pass",
    "fail",
    "unscoreable",
    "not_gradable",
    "pass_rate",
    "case_lift",
    "target_activations",
    "excluded_reason",
    "negative_lift_class",
];

fn optional<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

fn float(value: f64) -> String {
    format!("{value:.6}")
}

/// Streaming writer of `trials.csv`: the header, then one row per [`TrialsCsvWriter::write`].
pub struct TrialsCsvWriter<W: std::io::Write> {
    writer: csv::Writer<W>,
}

impl<W: std::io::Write> TrialsCsvWriter<W> {
    /// Start a file (writes the header row).
    pub fn new(inner: W) -> Self {
        let mut writer = csv::Writer::from_writer(inner);
        writer
            .write_record(TRIAL_COLUMNS)
            .expect("header row is valid CSV");
        Self { writer }
    }

    /// Write one record's row.
    pub fn write(&mut self, record: &TrialRecord) -> std::io::Result<()> {
        let passed = record.checks.iter().filter(|c| c.passed).count();
        self.writer
            .write_record([
                record.run_id.clone(),
                record.trial_id.clone(),
                record.case_id.clone(),
                record.arm.as_str().to_string(),
                record.attempt.to_string(),
                record.runner.clone(),
                record.model.clone(),
                optional(record.observed_model.as_ref()),
                record.outcome.as_str().to_string(),
                optional(record.reason.as_ref()),
                passed.to_string(),
                record.checks.len().to_string(),
                optional(record.usage.input_tokens),
                optional(record.usage.output_tokens),
                optional(record.usage.cached_tokens),
                optional(record.usage.cost_usd),
                float(record.wall_s),
                float(record.model_latency_s),
                record.requests.to_string(),
                record.retries.len().to_string(),
                record.tool_calls.to_string(),
                record.activated_skills.join(" "),
                record.started_at.to_rfc3339(),
                optional(record.transcript.as_ref()),
            ])
            .map_err(std::io::Error::other)
    }

    /// Flush and return the inner writer.
    pub fn into_inner(self) -> std::io::Result<W> {
        self.writer
            .into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

/// Render `trials.csv` for in-memory records.
pub fn trials_csv(records: &[TrialRecord]) -> Vec<u8> {
    let mut writer = TrialsCsvWriter::new(Vec::new());
    for record in records {
        writer.write(record).expect("in-memory write");
    }
    writer.into_inner().expect("in-memory flush")
}

/// Render `cases.csv`.
pub fn cases_csv(summary: &Summary) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(CASE_COLUMNS).expect("in-memory write");
    for case in &summary.cases {
        for (arm, data) in [
            ("with_skill", &case.with_skill),
            ("without_skill", &case.without_skill),
        ] {
            let CaseArm {
                trials,
                pass_rate,
                target_activations,
            } = data;
            writer
                .write_record([
                    case.case_id.clone(),
                    arm.to_string(),
                    optional(case.cluster.as_ref()),
                    trials.total().to_string(),
                    trials.pass.to_string(),
                    trials.fail.to_string(),
                    trials.unscoreable.to_string(),
                    trials.not_gradable.to_string(),
                    optional(pass_rate.map(float)),
                    optional(case.lift.map(float)),
                    target_activations.to_string(),
                    optional(case.excluded_reason.as_ref()),
                    optional(case.negative_lift_class.map(|c| {
                        serde_json::to_value(c)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default()
                    })),
                ])
                .expect("in-memory write");
        }
    }
    writer.into_inner().expect("in-memory flush")
}
