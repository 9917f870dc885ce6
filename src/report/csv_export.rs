//! `trials.csv` (one row per recorded trial), `cases.csv` (one row per case × arm) and
//! `lift.csv` (one row per lift metric). Column order is stable and documented in
//! `docs/run-format.md` and `docs/report-formats.md`; units are in the column names.

use crate::analysis::{CaseArm, Summary};
use crate::record::TrialRecord;
use crate::report::compat::pass_at_k;

/// The metric columns of `trials.csv` and `cases.csv` (scores in [0, 1]; empty when not
/// applicable); other metrics (`checks`, custom graders) go to `other_scores` as
/// `name=value` pairs separated by `;`.
pub(crate) const METRIC_COLUMNS: [&str; 7] = [
    "composite",
    "security",
    "skill_execution",
    "skill_efficiency",
    "accuracy",
    "goal_accuracy",
    "behavior_check",
];

/// The metric cells of a row: the composite, the six metrics, then `other_scores`.
fn metric_cells(
    composite: Option<f64>,
    scores: &std::collections::BTreeMap<String, f64>,
) -> Vec<String> {
    let mut cells = vec![optional(composite.map(float))];
    for name in &METRIC_COLUMNS[1..] {
        cells.push(optional(scores.get(*name).copied().map(float)));
    }
    cells.push(
        scores
            .iter()
            .filter(|(name, _)| !METRIC_COLUMNS.contains(&name.as_str()))
            .map(|(name, value)| format!("{name}={}", float(*value)))
            .collect::<Vec<_>>()
            .join(";"),
    );
    cells
}

/// Columns of `trials.csv`, in order.
pub(crate) const TRIAL_COLUMNS: [&str; 37] = [
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
    "decided_by",
    "outcome_score",
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
    "composite",
    "security",
    "skill_execution",
    "skill_efficiency",
    "accuracy",
    "goal_accuracy",
    "behavior_check",
    "other_scores",
    "infrastructure",
    "truncated",
    "reused_from",
];

/// Columns of `cases.csv`, in order (metric columns: the case's mean over scoreable attempts).
pub(crate) const CASE_COLUMNS: [&str; 21] = [
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
    "composite",
    "security",
    "skill_execution",
    "skill_efficiency",
    "accuracy",
    "goal_accuracy",
    "behavior_check",
    "other_scores",
];

fn optional<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

fn float(value: f64) -> String {
    format!("{value:.6}")
}

/// Streaming writer of `trials.csv`: the header, then one row per [`TrialsCsvWriter::write`].
pub(crate) struct TrialsCsvWriter<W: std::io::Write> {
    writer: csv::Writer<W>,
}

impl<W: std::io::Write> TrialsCsvWriter<W> {
    /// Start a file (writes the header row).
    pub(crate) fn new(inner: W) -> Self {
        let mut writer = csv::Writer::from_writer(inner);
        writer
            .write_record(TRIAL_COLUMNS)
            .expect("header row is valid CSV");
        Self { writer }
    }

    /// Write one record's row.
    pub(crate) fn write(&mut self, record: &TrialRecord) -> std::io::Result<()> {
        let passed = record.checks.iter().filter(|c| c.passed).count();
        let metrics = metric_cells(record.composite, &record.scores);
        self.writer
            .write_record(
                [
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
                    optional(record.decided_by.map(|basis| basis.as_str())),
                    optional(record.outcome_score.map(float)),
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
                ]
                .into_iter()
                .chain(metrics)
                .chain([
                    optional(record.infrastructure.map(|c| c.as_str())),
                    record
                        .truncated
                        .iter()
                        .map(|cut| match cut {
                            crate::values::trajectory::OutputCut::Stdout => "stdout",
                            crate::values::trajectory::OutputCut::Stderr => "stderr",
                            crate::values::trajectory::OutputCut::Transcript => "transcript",
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                    // `<run id>/<trial id>` of the run that measured a reused trial.
                    optional(
                        record
                            .reused_from
                            .as_ref()
                            .map(|from| format!("{}/{}", from.run_id, from.trial_id)),
                    ),
                ]),
            )
            .map_err(std::io::Error::other)
    }

    /// Flush and return the inner writer.
    pub(crate) fn into_inner(self) -> std::io::Result<W> {
        self.writer
            .into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

/// Render `trials.csv` for in-memory records.
pub(crate) fn trials_csv(records: &[TrialRecord]) -> Vec<u8> {
    let mut writer = TrialsCsvWriter::new(Vec::new());
    for record in records {
        writer.write(record).expect("in-memory write");
    }
    writer.into_inner().expect("in-memory flush")
}

/// Render `cases.csv`.
pub(crate) fn cases_csv(summary: &Summary) -> Vec<u8> {
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
                metric_means,
            } = data;
            let mut means = metric_means.clone();
            let composite = means.remove(crate::analysis::COMPOSITE);
            let metrics = metric_cells(composite, &means);
            writer
                .write_record(
                    [
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
                    ]
                    .into_iter()
                    .chain(metrics),
                )
                .expect("in-memory write");
        }
    }
    writer.into_inner().expect("in-memory flush")
}

/// Columns of `lift.csv`, in order. Rates and scores are percentages (`_pct`), lifts percentage
/// points (`_pp`). Rows: `pass_rate` (the headline lift with its interval and test), the
/// `pass_at_k` row (the difference of the shares of cases passed at least once in K attempts, no
/// interval), then one row per metric lift — `composite` first — with its interval and
/// direction in `verdict`.
pub(crate) const LIFT_COLUMNS: [&str; 26] = [
    "run_id",
    "asset",
    "fingerprint",
    "model",
    "metric",
    "with_skill_pct",
    "with_skill_ci_low_pct",
    "with_skill_ci_high_pct",
    "without_skill_pct",
    "without_skill_ci_low_pct",
    "without_skill_ci_high_pct",
    "lift_pp",
    "lift_ci_low_pp",
    "lift_ci_high_pp",
    "method",
    "n_cases",
    "k",
    "verdict",
    "test",
    "p_value",
    "p_value_paired_t",
    "mde_pp",
    "correlation",
    "cases_improved",
    "cases_worse",
    "gate",
];

fn scaled(value: Option<f64>) -> String {
    optional(value.map(|v| float(v * 100.0)))
}

/// Render `lift.csv`.
pub(crate) fn lift_csv(summary: &Summary) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(LIFT_COLUMNS).expect("in-memory write");
    let lift = &summary.lift;
    let (with, without) = (&summary.arms.with_skill, &summary.arms.without_skill);
    let identity = [
        summary.run_id.clone(),
        summary.asset.clone(),
        summary.fingerprint.clone(),
        summary.model.clone(),
    ];
    let mut row: Vec<String> = identity.to_vec();
    row.extend([
        lift.metric.clone(),
        scaled(with.pass_rate),
        scaled(with.ci_low),
        scaled(with.ci_high),
        scaled(without.pass_rate),
        scaled(without.ci_low),
        scaled(without.ci_high),
        scaled(lift.estimate),
        scaled(lift.ci_low),
        scaled(lift.ci_high),
        lift.method.clone(),
        lift.n_cases.to_string(),
        lift.k.to_string(),
        lift.verdict.as_str().to_string(),
        optional(lift.test.as_ref()),
        optional(lift.p_value.map(float)),
        optional(lift.paired_t.p_value.map(float)),
        scaled(lift.mde),
        optional(lift.correlation.map(float)),
        lift.case_lifts.positive.to_string(),
        lift.case_lifts.negative.to_string(),
        match &lift.gate {
            None => String::new(),
            Some(gate) if gate.passed => "passed".to_string(),
            Some(_) => "failed".to_string(),
        },
    ]);
    writer.write_record(&row).expect("in-memory write");
    let at_k = pass_at_k(summary);
    let mut row: Vec<String> = identity.to_vec();
    row.extend([
        format!("pass_at_{}", at_k.k),
        scaled(at_k.with_skill),
        String::new(),
        String::new(),
        scaled(at_k.without_skill),
        String::new(),
        String::new(),
        scaled(at_k.delta),
        String::new(),
        String::new(),
        "point-estimate".to_string(),
        at_k.n_cases.to_string(),
        at_k.k.to_string(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
    ]);
    writer.write_record(&row).expect("in-memory write");
    for metric in &summary.metric_lifts {
        let mut row: Vec<String> = identity.to_vec();
        row.extend([
            metric.metric.clone(),
            scaled(metric.with_skill),
            String::new(),
            String::new(),
            scaled(metric.without_skill),
            String::new(),
            String::new(),
            scaled(metric.estimate),
            scaled(metric.ci_low),
            scaled(metric.ci_high),
            metric.method.clone(),
            metric.n_cases.to_string(),
            lift.k.to_string(),
            metric.verdict.as_str().to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]);
        writer.write_record(&row).expect("in-memory write");
    }
    writer.into_inner().expect("in-memory flush")
}
