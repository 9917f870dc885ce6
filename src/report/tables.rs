//! The grading tables shared by `report.md` and `report.html`: the same header and the same
//! formatted cells, rendered as Markdown or HTML by the caller.

use crate::analysis::{Summary, VerdictReason};

/// Percentages with one decimal (`n/a` when absent).
pub(crate) fn percent(value: Option<f64>) -> String {
    value
        .map(|v| format!("{:.1}%", v * 100.0))
        .unwrap_or_else(|| "n/a".to_string())
}

/// Percentage points with one decimal and a sign (`n/a` when absent).
pub(crate) fn points(value: Option<f64>) -> String {
    value
        .map(|v| format!("{:+.1} pp", v * 100.0))
        .unwrap_or_else(|| "n/a".to_string())
}

fn number(value: Option<f64>) -> String {
    value
        .map(|v| format!("{v:.2}"))
        .unwrap_or_else(|| "n/a".to_string())
}

/// `95% CI [low, high]` in percentage points, or `no interval`.
pub(crate) fn interval_text(low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(low), Some(high)) => {
            format!("95% CI [{}, {}]", points(Some(low)), points(Some(high)))
        }
        _ => "no interval".to_string(),
    }
}

/// Whether a lift's data had no variance (every case difference the same, e.g. every case
/// scored the same in both arms): its reasons say so (`NoVariance`, `ZeroWidthInterval`), or
/// its verdict is `unchanged`. Every table then says "no variance" where the interval or the
/// verdict would be, in the words of the headline's reason.
pub(crate) fn without_variance(reasons: &[VerdictReason]) -> bool {
    use crate::analysis::InconclusiveReason;
    reasons.iter().any(|r| {
        matches!(
            r.reason,
            InconclusiveReason::NoVariance | InconclusiveReason::ZeroWidthInterval
        )
    })
}

/// [`interval_text`] of a metric's lift, saying why there is none when its data had no
/// variance (`no interval: no variance`).
pub(crate) fn metric_interval_text(metric: &crate::analysis::MetricLift) -> String {
    match (metric.ci_low, metric.ci_high) {
        (None, _) | (_, None) if metric_without_variance(metric) => {
            "no interval: no variance".to_string()
        }
        (low, high) => interval_text(low, high),
    }
}

/// [`without_variance`] for a metric's lift (an `unchanged` metric has no variance).
fn metric_without_variance(metric: &crate::analysis::MetricLift) -> bool {
    metric.verdict == crate::analysis::MetricVerdict::Unchanged
        || without_variance(&metric.verdict_reasons)
}

/// What the headline adds after a lift whose data had no variance but which has an interval
/// (the pass rate's, sized from the arms' pass rates): what that interval still says. Empty
/// otherwise.
pub(crate) fn no_variance_note(
    low: Option<f64>,
    high: Option<f64>,
    reasons: &[VerdictReason],
    n_cases: usize,
) -> String {
    if low.is_some() && high.is_some() && without_variance(reasons) {
        format!(
            " No case scored differently in the two arms: no effect was seen, and the interval is only how large a lift {n_cases} cases cannot exclude."
        )
    } else {
        String::new()
    }
}

/// A p-value for people: `0.0123`, or `< 0.0001` below the shown precision (`n/a` when absent).
pub(crate) fn p_value(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.0001 => "< 0.0001".to_string(),
        Some(p) => format!("{p:.4}"),
        None => "n/a".to_string(),
    }
}

/// The verdict reasons' messages joined with `; `.
pub(crate) fn reasons(reasons: &[VerdictReason]) -> String {
    reasons
        .iter()
        .map(|r| r.message.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// "Graded by …": the grader families whose metrics are in the metric table, each with the
/// metric names it contributed (composite excluded).
pub(crate) fn graded_by(summary: &Summary) -> String {
    use crate::record::{ACES_METRICS, CHECKS};
    let names: Vec<&str> = summary
        .metric_lifts
        .iter()
        .map(|m| m.metric.as_str())
        .filter(|m| *m != crate::analysis::COMPOSITE)
        .collect();
    let grading = &summary.grading;
    let judge_metrics: Vec<&str> = names
        .iter()
        .copied()
        .filter(|m| grading.judge_metrics.iter().any(|j| j == m))
        .collect();
    let deterministic: Vec<&str> = names
        .iter()
        .copied()
        .filter(|m| ACES_METRICS.contains(m) && !judge_metrics.contains(m))
        .collect();
    let custom: Vec<&str> = names
        .iter()
        .copied()
        .filter(|m| grading.custom_graders.iter().any(|g| g == m))
        .collect();
    let mut parts = Vec::new();
    if names.contains(&CHECKS) {
        parts.push("output checks (checks)".to_string());
    }
    if !deterministic.is_empty() {
        parts.push(format!(
            "deterministic metrics ({})",
            deterministic.join(", ")
        ));
    }
    if !judge_metrics.is_empty() {
        parts.push(format!(
            "LLM judge {} ({}; K = {}, rubric {})",
            grading.judges.join(", "),
            judge_metrics.join(", "),
            grading.judge_k,
            grading.rubric_version.as_deref().unwrap_or("n/a")
        ));
    }
    if !custom.is_empty() {
        parts.push(format!("custom graders ({})", custom.join(", ")));
    }
    let known: Vec<&str> = [CHECKS]
        .into_iter()
        .chain(deterministic.iter().copied())
        .chain(judge_metrics.iter().copied())
        .chain(custom.iter().copied())
        .collect();
    let other: Vec<&str> = names
        .iter()
        .copied()
        .filter(|m| !known.contains(m))
        .collect();
    if !other.is_empty() {
        parts.push(format!("other recorded metrics ({})", other.join(", ")));
    }
    if parts.is_empty() {
        "no metric".to_string()
    } else {
        parts.join("; ")
    }
}

/// One row per arm and score: where the variance of a case's value comes from.
pub(crate) fn noise_table(summary: &Summary) -> Table {
    let share = |value: Option<f64>| value.map(|v| format!("{:.0}%", v * 100.0));
    let variance = |value: Option<f64>| {
        value
            .map(|v| format!("{v:.4}"))
            .unwrap_or_else(|| "n/a".to_string())
    };
    let mut rows = Vec::new();
    for score in &summary.noise.scores {
        for (arm, noise) in [
            ("with_skill", &score.with_skill),
            ("without_skill", &score.without_skill),
        ] {
            let Some(noise) = noise else { continue };
            let cell = |v: Option<f64>, s: Option<f64>| match (v, share(s)) {
                (Some(v), Some(s)) => format!("{} ({s})", variance(Some(v))),
                (v, _) => variance(v),
            };
            rows.push(vec![
                score.score.clone(),
                arm.to_string(),
                format!("{:.1}", noise.attempts_per_case),
                noise
                    .judge_repeats
                    .map(|j| j.to_string())
                    .unwrap_or_else(|| "—".to_string()),
                cell(Some(noise.case_variance), noise.shares.cases),
                cell(noise.attempt_variance, noise.shares.attempts),
                if noise.judge_repeats.is_some() {
                    cell(noise.judge_variance, noise.shares.judge_repeats)
                } else {
                    "—".to_string()
                },
                if noise.clamped.is_empty() {
                    "—".to_string()
                } else {
                    format!("{} (negative estimate set to 0)", noise.clamped.join(", "))
                },
            ]);
        }
    }
    Table {
        header: &[
            "score",
            "arm",
            "K",
            "J",
            "σ² cases (share)",
            "σ² attempts (share)",
            "σ² judge repeats (share)",
            "clamped",
        ],
        rows,
    }
}

/// What more cases or attempts would buy (`None` without a projection).
pub(crate) fn mde_projection_sentence(summary: &Summary) -> Option<String> {
    summary.noise.mde_projection.as_ref().map(|p| {
        format!(
            "Planning MDE of the pass-rate lift (normal quantiles on the variance components, as `plan` computes it; α = 0.05, power 0.8): {:.1} pp now; {:.1} pp with twice the cases; {:.1} pp with twice the attempts per case (between-case lift variance ω² = {:.4}{}). The headline's minimum detectable effect uses t quantiles at this N, so it is larger at small N.",
            p.current * 100.0,
            p.twice_the_cases * 100.0,
            p.twice_the_attempts * 100.0,
            p.omega_squared,
            if p.omega_clamped {
                ", a negative estimate set to 0"
            } else {
                ""
            }
        )
    })
}

/// A table: header cells and rows of cells (plain text; the renderer escapes).
pub(crate) struct Table {
    pub header: &'static [&'static str],
    pub rows: Vec<Vec<String>>,
}

/// One row per metric lift, the composite first.
pub(crate) fn metric_table(summary: &Summary) -> Table {
    Table {
        header: &[
            "metric",
            "weight",
            "with_skill",
            "without_skill",
            "lift",
            "95% CI",
            "method",
            "p",
            "cases",
            "verdict",
        ],
        rows: summary
            .metric_lifts
            .iter()
            .map(|metric| {
                // Data without variance: the table says so in the headline's words, where the
                // interval and the verdict would be (never a bare "n/a … unchanged").
                let no_variance = metric_without_variance(metric);
                let interval = match (metric.ci_low, metric.ci_high) {
                    (Some(low), Some(high)) => {
                        format!("[{}, {}]", points(Some(low)), points(Some(high)))
                    }
                    _ if no_variance => "none: no variance".to_string(),
                    _ => "n/a".to_string(),
                };
                let verdict = if no_variance {
                    "inconclusive: no variance".to_string()
                } else {
                    metric.verdict.as_str().to_string()
                };
                vec![
                    metric.metric.clone(),
                    metric
                        .weight
                        .map(|w| format!("{w}"))
                        .unwrap_or_else(|| "—".to_string()),
                    percent(metric.with_skill),
                    percent(metric.without_skill),
                    points(metric.estimate),
                    interval,
                    metric.method.clone(),
                    p_value(metric.p_value),
                    metric.n_cases.to_string(),
                    verdict,
                ]
            })
            .collect(),
    }
}

/// Agreement of the other judges with the primary one (empty without a second judge).
pub(crate) fn judge_agreement_table(summary: &Summary) -> Table {
    Table {
        header: &[
            "judge",
            "metric",
            "trials",
            "score correlation",
            "mean abs. difference",
            "items",
            "item agreement",
            "kappa",
        ],
        rows: summary
            .judge_agreement
            .iter()
            .flat_map(|agreement| &agreement.between_judges)
            .map(|pair| {
                vec![
                    pair.judge.clone(),
                    pair.metric.clone(),
                    pair.n_trials.to_string(),
                    number(pair.correlation),
                    number(pair.mean_absolute_difference),
                    pair.n_items.to_string(),
                    percent(pair.item_agreement),
                    number(pair.kappa),
                ]
            })
            .collect(),
    }
}

/// Each judge metric against the output checks (empty without judges or checks).
pub(crate) fn judge_versus_checks_table(summary: &Summary) -> Table {
    Table {
        header: &["judge", "metric", "trials", "agreement", "kappa"],
        rows: summary
            .judge_agreement
            .iter()
            .flat_map(|agreement| &agreement.versus_checks)
            .map(|row| {
                vec![
                    row.judge.clone(),
                    row.metric.clone(),
                    row.n_trials.to_string(),
                    percent(row.agreement),
                    number(row.kappa),
                ]
            })
            .collect(),
    }
}

/// "Judge repeat spread …" when a judge was asked more than once per trial.
pub(crate) fn judge_spread_sentence(summary: &Summary) -> Option<String> {
    let spreads: Vec<String> = summary
        .metric_lifts
        .iter()
        .filter_map(|m| m.judge_repeat_sd.map(|sd| format!("{} {sd:.3}", m.metric)))
        .collect();
    (!spreads.is_empty()).then(|| {
        format!(
            "Judge repeat spread (mean standard deviation of the {} repeats per trial): {}.",
            summary.grading.judge_k,
            spreads.join(", ")
        )
    })
}

/// The table as Markdown (nothing for an empty table).
pub(crate) fn markdown(table: &Table) -> String {
    if table.rows.is_empty() {
        return String::new();
    }
    let mut out = format!("| {} |\n", table.header.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(table.header.len())));
    for row in &table.rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// The table as HTML with `id` (nothing for an empty table); `escape` escapes text.
pub(crate) fn html(table: &Table, id: &str, escape: impl Fn(&str) -> String) -> String {
    if table.rows.is_empty() {
        return String::new();
    }
    let mut out = format!("<table id=\"{id}\"><thead><tr>");
    for cell in table.header {
        out.push_str(&format!("<th>{}</th>", escape(cell)));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for cell in row {
            out.push_str(&format!("<td>{}</td>", escape(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// The cases in the order the per-case tables list them: failing first — the lowest with-skill
/// pass rate (excluded cases, with none, before all), then the lowest lift — then by case id.
pub(crate) fn cases_failing_first(
    summary: &crate::analysis::Summary,
) -> Vec<&crate::analysis::CaseSummary> {
    let mut cases: Vec<&crate::analysis::CaseSummary> = summary.cases.iter().collect();
    let key = |value: Option<f64>| value.unwrap_or(f64::NEG_INFINITY);
    cases.sort_by(|a, b| {
        key(a.with_skill.pass_rate)
            .total_cmp(&key(b.with_skill.pass_rate))
            .then(key(a.lift).total_cmp(&key(b.lift)))
            .then(a.case_id.cmp(&b.case_id))
    });
    cases
}

/// The sample answer of `case_id` in `arm`, when one was read.
pub(crate) fn sample_answer<'a>(
    answers: &'a [crate::report::SampleAnswer],
    case_id: &str,
    arm: crate::record::Arm,
) -> Option<&'a crate::report::SampleAnswer> {
    answers
        .iter()
        .find(|a| a.trial.case_id == case_id && a.trial.arm == arm)
}

/// A sample answer as table text: `W2 fail: “…”` (W = with skill, B = baseline, then the
/// attempt), or `n/a`.
pub(crate) fn sample_text(answer: Option<&crate::report::SampleAnswer>) -> String {
    let Some(answer) = answer else {
        return "n/a".to_string();
    };
    let letter = if answer.trial.arm == crate::record::Arm::WithSkill {
        "W"
    } else {
        "B"
    };
    format!(
        "{letter}{} {}: {}",
        answer.trial.attempt,
        answer.trial.outcome.as_str(),
        answer
            .answer
            .as_deref()
            .map_or_else(|| "(no answer recorded)".to_string(), |a| format!("“{a}”"))
    )
}
