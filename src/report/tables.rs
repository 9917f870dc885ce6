//! The grading tables shared by `report.md` and `report.html`: the same header and the same
//! formatted cells, rendered as Markdown or HTML by the caller.

use crate::analysis::Summary;

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
            "cases",
            "verdict",
        ],
        rows: summary
            .metric_lifts
            .iter()
            .map(|metric| {
                let interval = match (metric.ci_low, metric.ci_high) {
                    (Some(low), Some(high)) => {
                        format!("[{}, {}]", points(Some(low)), points(Some(high)))
                    }
                    _ => "n/a".to_string(),
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
                    metric.n_cases.to_string(),
                    metric.verdict.as_str().to_string(),
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
