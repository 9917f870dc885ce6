//! `report.html`: one self-contained page (inline CSS and SVG, no script, no network), verdict
//! first; then a forest plot of the lift per metric with its interval, the per-arm pass rates
//! with intervals, the per-case lift distribution, and a case table linking each trial to its
//! transcript page (`transcripts/*.html`, rendered by [`transcript_html`]).
//!
//! Charts are `<svg>` elements with stable ids (`forest-plot`, `arm-rates`,
//! `case-lift-distribution`; `pass-rate-matrix` in the matrix page) that
//! `scripts/check-html-report` looks for. Pure: no clock, no file access.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use crate::analysis::{ArmSummary, Summary, Verdict};
use crate::record::{Arm, TrialRecord};
use crate::report::compat::pass_at_k;
use crate::report::{RunExport, transcript_page};

/// Escape text for HTML element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The shared stylesheet.
pub(crate) const STYLE: &str = r#"
:root { --improved: #1a7f37; --regressed: #cf222e; --inconclusive: #9a6700; --ink: #1f2328; --muted: #656d76; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); margin: 0 auto; max-width: 1040px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.verdict { display: flex; gap: 16px; align-items: center; padding: 16px; border-radius: 8px; border: 2px solid var(--line); }
.verdict .badge { font-weight: 700; font-size: 20px; letter-spacing: .05em; padding: 6px 14px; border-radius: 6px; color: #fff; }
.improved .badge { background: var(--improved); } .regressed .badge { background: var(--regressed); } .inconclusive .badge { background: var(--inconclusive); }
.improved { border-color: var(--improved); } .regressed { border-color: var(--regressed); } .inconclusive { border-color: var(--inconclusive); }
.headline { font-size: 16px; } .muted { color: var(--muted); }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg text { font: 12px system-ui, sans-serif; fill: var(--ink); }
a.trial { display: inline-block; margin: 0 3px 2px 0; padding: 0 4px; border-radius: 3px; text-decoration: none; font-family: ui-monospace, monospace; font-size: 12px; }
.pass { background: #dafbe1; color: #116329; } .fail { background: #ffebe9; color: #a40e26; } .unscoreable, .not_gradable { background: #eaeef2; color: #57606a; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f8fa; padding: 8px; border-radius: 6px; margin: 4px 0; }
.message { border-left: 3px solid var(--line); padding-left: 10px; margin: 10px 0; }
.message .role { font-weight: 600; text-transform: uppercase; font-size: 11px; color: var(--muted); }
"#;

use crate::report::tables::{percent, points};

/// Coordinates with two decimals, so output never depends on float formatting noise.
fn coordinate(value: f64) -> String {
    format!("{value:.2}")
}

/// Page header with the stylesheet.
pub(crate) fn page_start(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(title)
    );
}

/// Page footer.
pub(crate) fn page_end(out: &mut String) {
    out.push_str("</body>\n</html>\n");
}

fn verdict_block(out: &mut String, summary: &Summary) {
    // The headline is the verdict the gates judge: `with_skill` against the reference.
    let (lift, reference) = summary.headline_lift();
    let class = lift.verdict.as_str();
    let compared = if reference == crate::record::Arm::WithoutSkill {
        "with − without".to_string()
    } else {
        format!("with_skill − {reference}")
    };
    let interval = match (lift.ci_low, lift.ci_high) {
        (Some(low), Some(high)) => {
            format!("95% CI [{}, {}]", points(Some(low)), points(Some(high)))
        }
        _ => "no interval".to_string(),
    };
    let _ = write!(
        out,
        "<section class=\"verdict {class}\" id=\"verdict\" data-verdict=\"{class}\" data-lift=\"{}\">\n<span class=\"badge\">{}</span>\n<div><div class=\"headline\"><strong>Lift (pass rate, {}): {}</strong>, {interval}</div>\n<div class=\"muted\">method {}, N = {} cases, K = {}{}{}</div>\n",
        lift.estimate.map(|v| format!("{v:.6}")).unwrap_or_default(),
        class.to_uppercase(),
        escape(&compared),
        points(lift.estimate),
        escape(&lift.method),
        lift.n_cases,
        lift.k,
        match (&lift.test, lift.p_value) {
            (Some(test), Some(p)) => format!(
                ", p {} ({})",
                escape(&crate::analysis::text::format_p_value(p)),
                escape(test)
            ),
            _ => String::new(),
        } + &lift
            .mde
            .map(|m| {
                format!(
                    ", minimum detectable effect {:.1} pp (t quantiles at N = {})",
                    m * 100.0,
                    lift.n_cases
                )
            })
            .unwrap_or_default(),
        lift.correlation
            .map(|r| format!(", correlation between arms r = {r:.2}"))
            .unwrap_or_default(),
    );
    if let Some(composite) = summary
        .metric_lifts
        .iter()
        .find(|m| m.metric == crate::analysis::COMPOSITE)
    {
        let _ = writeln!(
            out,
            "<div class=\"composite\" data-composite-lift=\"{}\">Composite lift (mean of the metrics): <strong>{}</strong>, {} ({}), with_skill {}, without_skill {}</div>",
            composite
                .estimate
                .map(|v| format!("{v:.6}"))
                .unwrap_or_default(),
            points(composite.estimate),
            crate::report::tables::metric_interval_text(composite),
            escape(&composite.method),
            percent(composite.with_skill),
            percent(composite.without_skill),
        );
    }
    if !lift.verdict_reasons.is_empty() {
        let _ = writeln!(
            out,
            "<div>Verdict {class}: {}.{}</div>",
            escape(&crate::report::tables::reasons(&lift.verdict_reasons)),
            escape(&crate::report::tables::no_variance_note(
                lift.ci_low,
                lift.ci_high,
                &lift.verdict_reasons,
                lift.n_cases
            ))
        );
    }
    if let Some(warning) = summary.position.as_ref().and_then(|p| p.warning.as_ref()) {
        let _ = writeln!(
            out,
            "<div class=\"position-warning\"><strong>Warning</strong> — {}.</div>",
            escape(warning)
        );
    }
    if let Some(arm) = crate::record::CalibrationArm::of_design(summary.arm_design) {
        let _ = writeln!(
            out,
            "<div class=\"calibration\">A/A control (skill-lift calibrate): {}; any lift here is noise.</div>",
            escape(arm.describe())
        );
    } else if let Some(calibration) = &summary.calibration {
        let _ = writeln!(
            out,
            "<div class=\"calibration\">Calibration: {}.</div>",
            escape(&calibration.message)
        );
    }
    for warning in &summary.warnings {
        let _ = writeln!(
            out,
            "<div class=\"warning\">Warning: {}.</div>",
            escape(warning)
        );
    }
    if let Some(stopping) = &summary.stopping {
        let _ = writeln!(
            out,
            "<div class=\"stopping\">{}</div>",
            escape(&stopping.line())
        );
    }
    if let Some(reuse) = &summary.reuse {
        let _ = writeln!(out, "<div class=\"reuse\">{}</div>", escape(&reuse.line()));
        if reuse.reused > 0 {
            out.push_str("<p class=\"muted\">Reused trials are marked ↺ in the case table; each names the run and trial that measured it.</p>\n");
        }
    }
    if let Some(judge) = &summary.judge_spend {
        let _ = writeln!(
            out,
            "<div class=\"judge-spend\">{}</div>",
            escape(&judge.line())
        );
    }
    quality_contract_html(out, summary);
    if let Some(contract) = &summary.version_contract {
        let _ = writeln!(
            out,
            "<div class=\"version-contract\">Version policy: <strong>{}</strong> — {}{}.</div>",
            contract.verdict.as_str(),
            escape(&contract.message),
            if contract.enforced { " (enforced)" } else { "" }
        );
    }
    if let Some(test) = &summary.equivalence {
        let _ = writeln!(
            out,
            "<div class=\"version-contract\">No-effect test (--equivalence): <strong>{}</strong> — {}.</div>",
            test.verdict.as_str(),
            escape(&test.message)
        );
    }
    if let Some(gate) = &lift.gate {
        let _ = writeln!(
            out,
            "<div class=\"gate\">Gate: {}</div>",
            if gate.passed {
                "passed".to_string()
            } else {
                format!("FAILED — {}", escape(&gate.failures.join("; ")))
            }
        );
    }
    out.push_str("</div>\n</section>\n");
}

/// x position of a lift in [-1, 1] on a plot spanning `left..left + width`.
fn lift_x(value: f64, left: f64, width: f64) -> f64 {
    left + (value.clamp(-1.0, 1.0) + 1.0) / 2.0 * width
}

fn forest_plot(out: &mut String, summary: &Summary) {
    let lift = &summary.lift;
    let at_k = pass_at_k(summary);
    /// Label, point estimate, interval, verdict class.
    type ForestRow<'a> = (String, Option<f64>, Option<(f64, f64)>, &'a str);
    let mut rows: Vec<ForestRow> = vec![
        (
            lift.metric.clone(),
            lift.estimate,
            lift.ci_low.zip(lift.ci_high),
            lift.verdict.as_str(),
        ),
        (
            format!("pass@{} (no interval)", at_k.k),
            at_k.delta,
            None,
            "point",
        ),
    ];
    for metric in &summary.metric_lifts {
        rows.push((
            metric.metric.clone(),
            metric.estimate,
            metric.ci_low.zip(metric.ci_high),
            metric.verdict.as_str(),
        ));
    }
    let (left, width, row_h) = (190.0, 480.0, 34.0);
    let height = 40.0 + row_h * rows.len() as f64;
    let _ = writeln!(
        out,
        "<svg class=\"chart\" id=\"forest-plot\" role=\"img\" aria-label=\"Forest plot of lift per metric\" viewBox=\"0 0 820 {h}\" width=\"820\" height=\"{h}\">",
        h = coordinate(height)
    );
    let bottom = 10.0 + row_h * rows.len() as f64;
    for tick in [-1.0, -0.5, 0.0, 0.5, 1.0] {
        let x = coordinate(lift_x(tick, left, width));
        let dash = if tick == 0.0 {
            " stroke-dasharray=\"4 3\" stroke=\"#656d76\""
        } else {
            " stroke=\"#eaeef2\""
        };
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"6\" x2=\"{x}\" y2=\"{b}\"{dash}/><text x=\"{x}\" y=\"{t}\" text-anchor=\"middle\">{:+.0} pp</text>",
            tick * 100.0,
            b = coordinate(bottom),
            t = coordinate(bottom + 16.0)
        );
    }
    for (index, (label, estimate, interval, class)) in rows.iter().enumerate() {
        let y = 10.0 + row_h * index as f64 + row_h / 2.0;
        let colour = match *class {
            "improved" => "#1a7f37",
            "regressed" => "#cf222e",
            "inconclusive" => "#9a6700",
            _ => "#57606a",
        };
        let _ = writeln!(
            out,
            "<text x=\"8\" y=\"{}\">{}</text>",
            coordinate(y + 4.0),
            escape(label)
        );
        if let Some((low, high)) = interval {
            let _ = writeln!(
                out,
                "<line class=\"interval\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{colour}\" stroke-width=\"3\"/>",
                coordinate(lift_x(*low, left, width)),
                coordinate(lift_x(*high, left, width)),
                y = coordinate(y)
            );
        }
        match estimate {
            Some(value) => {
                let _ = writeln!(
                    out,
                    "<rect class=\"estimate\" x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"{}\">{}</text>",
                    coordinate(lift_x(*value, left, width) - 5.0),
                    coordinate(y - 5.0),
                    coordinate(left + width + 8.0),
                    coordinate(y + 4.0),
                    escape(&points(Some(*value)))
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "<text x=\"{}\" y=\"{}\">n/a</text>",
                    coordinate(left + width + 8.0),
                    coordinate(y + 4.0)
                );
            }
        }
    }
    out.push_str("</svg>\n");
}

/// The metric lifts, how trials were graded, and the judge agreement.
fn metrics_table(out: &mut String, summary: &Summary) {
    use crate::report::tables;
    if summary.metric_lifts.is_empty() {
        return;
    }
    out.push_str("<h2>Metrics (mean score per arm, lift with 95% interval)</h2>\n");
    out.push_str(&tables::html(
        &tables::metric_table(summary),
        "metrics",
        escape,
    ));
    if let Some(sentence) = tables::judge_spread_sentence(summary) {
        let _ = writeln!(out, "<p>{}</p>", escape(&sentence));
    }
    let grading = &summary.grading;
    let _ = writeln!(
        out,
        "<p class=\"muted\">Graded by: {}. Composite: {}. Pass: {}.{}</p>",
        escape(&tables::graded_by(summary)),
        escape(&grading.composite_definition),
        escape(&grading.pass_rule),
        if grading.judges.is_empty() {
            String::new()
        } else {
            format!(
                " Judges: {} (K = {}, rubric {}).",
                escape(&grading.judges.join(", ")),
                grading.judge_k,
                escape(grading.rubric_version.as_deref().unwrap_or("n/a"))
            )
        }
    );
    let Some(agreement) = &summary.judge_agreement else {
        return;
    };
    let between = tables::html(
        &tables::judge_agreement_table(summary),
        "judge-agreement",
        escape,
    );
    if !between.is_empty() {
        let _ = writeln!(
            out,
            "<h3>Judge agreement with <code>{}</code></h3>",
            escape(&agreement.primary)
        );
        out.push_str(&between);
    }
    for (judge, failures) in &agreement.other_judge_failures {
        let _ = writeln!(
            out,
            "<p>Judge <code>{}</code> failed on {failures} trials.</p>",
            escape(judge)
        );
    }
    let versus = tables::html(
        &tables::judge_versus_checks_table(summary),
        "judge-versus-checks",
        escape,
    );
    if !versus.is_empty() {
        out.push_str("<h3>Judge versus output checks (judge pass = score ≥ 0.5)</h3>\n");
        out.push_str(&versus);
    }
}

/// Where the variance comes from: cases, attempts, judge repeats, per arm.
fn noise_block(out: &mut String, summary: &Summary) {
    use crate::report::tables;
    let table = tables::html(&tables::noise_table(summary), "noise", escape);
    if table.is_empty() {
        return;
    }
    out.push_str("<h2>Where the variance comes from</h2>\n<p class=\"muted\">Variance of a case's value = cases + attempts/K + judge repeats/(K·J); shares in brackets.</p>\n");
    out.push_str(&table);
    if let Some(sentence) = tables::mde_projection_sentence(summary) {
        let _ = writeln!(out, "<p>{}</p>", escape(&sentence));
    }
}

/// The lift by the target's position in the list of skills the model was shown
/// (`table#position`).
fn position_block(out: &mut String, summary: &Summary) {
    let Some(position) = &summary.position else {
        return;
    };
    out.push_str("<h2>Lift by the target's position</h2>\n");
    let test = match position.p_value {
        Some(p) => format!(
            "Within-case permutation test of a difference between positions: p {}{}.",
            crate::analysis::text::format_p_value(p),
            if position.sensitive {
                " (position-sensitive)"
            } else {
                ""
            }
        ),
        None => "No test: the paired differences do not vary, or one position holds every pair."
            .to_string(),
    };
    let _ = writeln!(
        out,
        "<p class=\"muted\">Position 1 = listed first among the {} skills shown; the order is balanced across each case's attempts. {}</p>",
        position.positions,
        escape(&test)
    );
    out.push_str("<table id=\"position\"><thead><tr><th>position</th><th>pairs</th><th>with_skill</th><th>without_skill</th><th>lift</th></tr></thead><tbody>\n");
    for row in &position.rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            row.position,
            row.pairs,
            escape(&crate::report::tables::percent(row.with_skill)),
            escape(&crate::report::tables::percent(row.without_skill)),
            escape(&crate::report::tables::points(row.lift))
        );
    }
    out.push_str("</tbody></table>\n");
}

/// One row per comparison of an arm with the reference arm (runs with more than two arms).
fn comparisons_block(out: &mut String, summary: &Summary) {
    use crate::report::tables::{interval_text, percent, points};
    let Some(reference) = summary.reference else {
        return;
    };
    if summary.comparisons.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h2>Comparisons against <code>{}</code></h2>\n<table id=\"comparisons\"><tr><th>arm</th><th>pass rate</th><th>{}</th><th>lift</th><th>interval</th><th>N</th><th>verdict</th><th>P95 wall ratio</th><th>tokens/trial ratio</th><th>gate</th></tr>",
        escape(reference.as_str()),
        escape(reference.as_str())
    );
    let ratio = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("×{v:.2}"));
    for comparison in &summary.comparisons {
        let lift = &comparison.lift;
        let gate = match &lift.gate {
            None => "—".to_string(),
            Some(gate) if gate.passed => "passed".to_string(),
            Some(gate) => format!("FAILED — {}", gate.failures.join("; ")),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(comparison.arm.as_str()),
            percent(comparison.arm_summary.pass_rate),
            percent(comparison.reference_summary.pass_rate),
            points(lift.estimate),
            escape(&interval_text(lift.ci_low, lift.ci_high)),
            lift.n_cases,
            lift.verdict.as_str(),
            ratio(comparison.cost.latency_ratio),
            ratio(comparison.cost.token_ratio),
            escape(&gate),
        );
    }
    out.push_str("</table>\n");
}

fn arm_rates(out: &mut String, summary: &Summary) {
    let arms: [(&str, &ArmSummary, &str); 2] = [
        ("with_skill", &summary.arms.with_skill, "#0969da"),
        ("without_skill", &summary.arms.without_skill, "#8c959f"),
    ];
    let (left, width) = (130.0, 480.0);
    let _ = writeln!(
        out,
        "<svg class=\"chart\" id=\"arm-rates\" role=\"img\" aria-label=\"Pass rate per arm with 95% intervals\" viewBox=\"0 0 820 110\" width=\"820\" height=\"110\">"
    );
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let x = coordinate(left + tick * width);
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"4\" x2=\"{x}\" y2=\"84\" stroke=\"#eaeef2\"/><text x=\"{x}\" y=\"100\" text-anchor=\"middle\">{:.0}%</text>",
            tick * 100.0
        );
    }
    for (index, (name, arm, colour)) in arms.iter().enumerate() {
        let y = 12.0 + 38.0 * index as f64;
        let _ = writeln!(
            out,
            "<text x=\"8\" y=\"{}\">{name}</text>",
            coordinate(y + 15.0)
        );
        if let Some(rate) = arm.pass_rate {
            let _ = writeln!(
                out,
                "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"22\" fill=\"{colour}\" opacity=\"0.8\"/>",
                coordinate(left),
                coordinate(y),
                coordinate(rate.clamp(0.0, 1.0) * width)
            );
        }
        if let (Some(low), Some(high)) = (arm.ci_low, arm.ci_high) {
            let middle = coordinate(y + 11.0);
            let (x1, x2) = (
                coordinate(left + low.clamp(0.0, 1.0) * width),
                coordinate(left + high.clamp(0.0, 1.0) * width),
            );
            let _ = writeln!(
                out,
                "<g class=\"interval\" stroke=\"#1f2328\" stroke-width=\"1.5\"><line x1=\"{x1}\" y1=\"{middle}\" x2=\"{x2}\" y2=\"{middle}\"/><line x1=\"{x1}\" y1=\"{}\" x2=\"{x1}\" y2=\"{}\"/><line x1=\"{x2}\" y1=\"{}\" x2=\"{x2}\" y2=\"{}\"/></g>",
                coordinate(y + 4.0),
                coordinate(y + 18.0),
                coordinate(y + 4.0),
                coordinate(y + 18.0)
            );
        }
        let interval = match (arm.ci_low, arm.ci_high) {
            (Some(l), Some(h)) => format!(" [{}, {}]", percent(Some(l)), percent(Some(h))),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\">{}{}</text>",
            coordinate(left + width + 8.0),
            coordinate(y + 15.0),
            percent(arm.pass_rate),
            escape(&interval)
        );
    }
    out.push_str("</svg>\n");
}

fn case_lift_distribution(out: &mut String, summary: &Summary) {
    // Stack identical case lifts (rounded to 0.1 pp) as dots.
    let mut stacks: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    for case in &summary.cases {
        if let Some(lift) = case.lift {
            stacks
                .entry((lift * 1000.0).round() as i64)
                .or_default()
                .push(&case.case_id);
        }
    }
    let tallest = stacks.values().map(Vec::len).max().unwrap_or(0).min(20);
    let (left, width, dot) = (40.0, 640.0, 12.0);
    let base = 20.0 + dot * tallest as f64;
    let height = base + 30.0;
    let _ = writeln!(
        out,
        "<svg class=\"chart\" id=\"case-lift-distribution\" role=\"img\" aria-label=\"Distribution of per-case lifts\" viewBox=\"0 0 720 {h}\" width=\"720\" height=\"{h}\">",
        h = coordinate(height)
    );
    for tick in [-1.0, -0.5, 0.0, 0.5, 1.0] {
        let x = coordinate(lift_x(tick, left, width));
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"8\" x2=\"{x}\" y2=\"{b}\" stroke=\"{}\"/><text x=\"{x}\" y=\"{t}\" text-anchor=\"middle\">{:+.0} pp</text>",
            if tick == 0.0 { "#656d76" } else { "#eaeef2" },
            tick * 100.0,
            b = coordinate(base),
            t = coordinate(base + 16.0)
        );
    }
    for (key, cases) in &stacks {
        let value = *key as f64 / 1000.0;
        let x = lift_x(value, left, width);
        let colour = if value > 0.0 {
            "#1a7f37"
        } else if value < 0.0 {
            "#cf222e"
        } else {
            "#8c959f"
        };
        for (level, case_id) in cases.iter().take(20).enumerate() {
            let _ = writeln!(
                out,
                "<circle class=\"case\" cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{colour}\"><title>{}: {}</title></circle>",
                coordinate(x),
                coordinate(base - dot / 2.0 - dot * level as f64),
                escape(case_id),
                escape(&points(Some(value)))
            );
        }
        if cases.len() > 20 {
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"14\" text-anchor=\"middle\">+{}</text>",
                coordinate(x),
                cases.len() - 20
            );
        }
    }
    out.push_str("</svg>\n");
    let distribution = &summary.lift.case_lifts;
    let _ = writeln!(
        out,
        "<p class=\"muted\">Cases improved / unchanged / worse: {} / {} / {}; median case lift {}.</p>",
        distribution.positive,
        distribution.zero,
        distribution.negative,
        points(distribution.median)
    );
}

/// A trial's cell: a link to its transcript page, or plain text when it has none (no transcript
/// recorded, or its file is missing: `run.missing_transcripts`).
fn trial_link(run: &RunExport, record: &TrialRecord) -> String {
    let outcome = record.outcome.as_str();
    let mut title = match &record.reason {
        Some(reason) => format!("{} {}: {reason}", record.trial_id, outcome),
        None => format!("{} {outcome}", record.trial_id),
    };
    // A reused trial is marked (↺, class `reused`) and names the run and trial it came from.
    let (label, class) = match &record.reused_from {
        Some(from) => {
            title.push_str(&format!(
                " — reused from run {}, trial {}",
                from.run_id, from.trial_id
            ));
            (
                format!("{}{}↺", record.arm.letter(), record.attempt),
                format!("{outcome} reused"),
            )
        }
        None => (
            format!("{}{}", record.arm.letter(), record.attempt),
            outcome.to_string(),
        ),
    };
    let page =
        transcript_page(record).filter(|_| !run.missing_transcripts.contains(&record.trial_id));
    match page {
        Some(page) => format!(
            "<a class=\"trial {class}\" href=\"{}\" title=\"{}\">{label}</a>",
            escape(&page),
            escape(&title)
        ),
        None => format!(
            "<span class=\"trial {class}\" title=\"{}\">{label}</span>",
            escape(&title)
        ),
    }
}

fn case_table(out: &mut String, run: &RunExport) {
    let mut by_case: BTreeMap<&str, Vec<&TrialRecord>> = BTreeMap::new();
    for record in run.records {
        by_case.entry(&record.case_id).or_default().push(record);
    }
    for records in by_case.values_mut() {
        records.sort_by_key(|r| (r.arm, r.attempt));
    }
    out.push_str("<table id=\"cases\">\n<thead><tr><th>case</th><th>cluster</th><th>with_skill</th><th>without_skill</th><th>lift</th><th>trials (W = with, B = baseline)</th><th>with-skill answer</th><th>baseline answer</th></tr></thead>\n<tbody>\n");
    for case in crate::report::tables::cases_failing_first(run.summary) {
        let answer = |arm: Arm| {
            escape(&crate::report::tables::sample_text(
                crate::report::tables::sample_answer(run.answers, &case.case_id, arm),
            ))
        };
        let arm = |data: &crate::analysis::CaseArm| {
            format!(
                "{}/{} ({})",
                data.trials.pass,
                data.trials.scored(),
                percent(data.pass_rate)
            )
        };
        let links: Vec<String> = by_case
            .get(case.case_id.as_str())
            .map(|records| records.iter().map(|r| trial_link(run, r)).collect())
            .unwrap_or_default();
        let lift = match (&case.lift, &case.excluded_reason) {
            (Some(l), _) => escape(&points(Some(*l))),
            (None, Some(reason)) => {
                format!("<span title=\"{}\">excluded*</span>", escape(reason))
            }
            (None, None) => "n/a".to_string(),
        };
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"answer\">{}</td><td class=\"answer\">{}</td></tr>",
            escape(&case.case_id),
            escape(case.cluster.as_deref().unwrap_or("")),
            arm(&case.with_skill),
            arm(&case.without_skill),
            lift,
            links.join(""),
            answer(Arm::WithSkill),
            answer(Arm::WithoutSkill)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    let excluded: Vec<String> = run
        .summary
        .cases
        .iter()
        .filter_map(|c| {
            c.excluded_reason
                .as_ref()
                .map(|r| format!("<code>{}</code> ({})", escape(&c.case_id), escape(r)))
        })
        .collect();
    if !excluded.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"muted\">* Excluded from the paired analysis: {}.</p>",
            excluded.join(", ")
        );
    }
}

fn details(out: &mut String, summary: &Summary) {
    let arm_row = |name: &str, arm: &ArmSummary| {
        format!(
            "<tr><td>{name}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            arm.trials.pass,
            arm.trials.fail,
            arm.trials.unscoreable,
            arm.trials.not_gradable,
            arm.usage
                .input_tokens
                .map(|t| t.to_string())
                .unwrap_or_else(|| "n/a".into()),
            arm.usage
                .output_tokens
                .map(|t| t.to_string())
                .unwrap_or_else(|| "n/a".into()),
            arm.mean_wall_s
                .map(|s| format!("{s:.2}"))
                .unwrap_or_else(|| "n/a".into()),
            arm.retries,
        )
    };
    out.push_str("<table id=\"arms\">\n<thead><tr><th>arm</th><th>pass</th><th>fail</th><th>unscoreable</th><th>not gradable</th><th>input tokens</th><th>output tokens</th><th>mean wall s</th><th>retries</th></tr></thead>\n<tbody>\n");
    out.push_str(&arm_row("with_skill", &summary.arms.with_skill));
    out.push_str(&arm_row("without_skill", &summary.arms.without_skill));
    out.push_str("</tbody>\n</table>\n");
    let rows = [
        ("run", summary.run_id.clone()),
        ("asset", summary.asset.clone()),
        (
            "fingerprint",
            format!("{} ({})", summary.fingerprint, summary.calibre),
        ),
        ("eval set digest", summary.eval_set_digest.clone()),
        (
            "runner",
            format!(
                "{} ({}, skill mode {})",
                summary.runner, summary.runner_kind, summary.skill_mode
            ),
        ),
        ("model", summary.model.clone()),
        (
            "observed models",
            if summary.observed_models.is_empty() {
                "none reported by the server".to_string()
            } else {
                summary.observed_models.join(", ")
            },
        ),
        ("decoys", summary.decoys.join(", ")),
        (
            "trials",
            format!(
                "{} of {} planned recorded{}",
                summary.trials.recorded,
                summary.trials.planned,
                if summary.complete {
                    ""
                } else {
                    " (incomplete)"
                }
            ),
        ),
        (
            "bootstrap",
            format!("B = {}, seed {}", summary.lift.resamples, summary.lift.seed),
        ),
    ];
    out.push_str("<table id=\"run\">\n<tbody>\n");
    for (name, value) in rows {
        let _ = writeln!(out, "<tr><th>{name}</th><td>{}</td></tr>", escape(&value));
    }
    out.push_str("</tbody>\n</table>\n");
    out.push_str("<h2>Not measured</h2>\n<ul>\n");
    for item in &summary.not_measured {
        let _ = writeln!(out, "<li>{}</li>", escape(item));
    }
    out.push_str("</ul>\n");
}

/// Render `report.html` for one run.
pub(crate) fn report_html(run: &RunExport) -> String {
    let summary = run.summary;
    let mut out = String::new();
    let headline = match summary.headline_lift().0.verdict {
        Verdict::Improved => "improved",
        Verdict::Regressed => "regressed",
        Verdict::Inconclusive => "inconclusive",
    };
    page_start(
        &mut out,
        &format!("skill-lift: {} — {headline}", summary.asset),
    );
    let _ = writeln!(
        out,
        "<h1>skill-lift: <code>{}</code></h1>\n<p class=\"muted\">run {} · model {} · fingerprint {}</p>",
        escape(&summary.asset),
        escape(&summary.run_id),
        escape(&summary.model),
        escape(
            summary
                .fingerprint
                .get(..19)
                .unwrap_or(&summary.fingerprint)
        )
    );
    verdict_block(&mut out, summary);
    out.push_str("<h2>Lift per metric (with − without, 95% interval)</h2>\n");
    forest_plot(&mut out, summary);
    metrics_table(&mut out, summary);
    out.push_str("<h2>Pass rate per arm (95% interval)</h2>\n");
    arm_rates(&mut out, summary);
    comparisons_block(&mut out, summary);
    noise_block(&mut out, summary);
    position_block(&mut out, summary);
    out.push_str("<h2>Per-case lift</h2>\n");
    case_lift_distribution(&mut out, summary);
    out.push_str("<h2>Cases</h2>\n<p class=\"muted\">Each trial links to its transcript page (<code>run</code> renders them at its end, up to 5,000 planned trials; <code>skill-lift report RUN_DIR</code> renders them for any run).</p>\n");
    case_table(&mut out, run);
    out.push_str("<h2>Run</h2>\n");
    details(&mut out, summary);
    page_end(&mut out);
    out
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// Render one recorded transcript document (`transcripts/*.json`: trial id, prompt, grade,
/// trajectory) as a standalone page: grade and checks, skill activations, messages, tool calls
/// with inputs and outputs, final answer, usage. Reads fields defensively: a missing field is
/// shown as absent, never an error.
pub(crate) fn transcript_html(record: &TrialRecord, document: &Value) -> String {
    let mut out = String::new();
    page_start(&mut out, &format!("transcript {}", record.trial_id));
    let _ = writeln!(
        out,
        "<p><a href=\"../report.html\">← report</a></p>\n<h1>Trial <code>{}</code></h1>\n<p><span class=\"trial {}\">{}</span>{}</p>",
        escape(&record.trial_id),
        record.outcome.as_str(),
        record.outcome.as_str(),
        record
            .reason
            .as_ref()
            .map(|r| format!(" — {}", escape(r)))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "<p class=\"muted\">model {}{}</p>",
        escape(&record.model),
        record
            .observed_model
            .as_ref()
            .map(|m| format!(" (the server reported {})", escape(m)))
            .unwrap_or_default()
    );
    // What a reader checks first: the prompt and the answer; the rest below.
    let _ = writeln!(
        out,
        "<h2>Prompt</h2>\n<pre>{}</pre>\n<h2>Final answer</h2>\n<pre>{}</pre>",
        escape(&text(&document["prompt"])),
        escape(&text(&document["trajectory"]["final_answer"]))
    );
    out.push_str("<h2>Checks</h2>\n<table><thead><tr><th>check</th><th>passed</th><th>reason</th></tr></thead><tbody>\n");
    for check in &record.checks {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&check.check_type),
            if check.passed { "yes" } else { "no" },
            escape(&check.detail)
        );
    }
    out.push_str("</tbody></table>\n");
    // Every metric's details are in the transcript's grade (the record keeps only the judge and
    // custom-grader ones).
    let metrics: std::collections::BTreeMap<String, crate::record::MetricResult> =
        document["grade"]["metrics"]
            .as_object()
            .and_then(|_| serde_json::from_value(document["grade"]["metrics"].clone()).ok())
            .unwrap_or_else(|| record.metrics.parse());
    if !metrics.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Metrics</h2>\n<p>Composite: {}</p>\n<table><thead><tr><th>metric</th><th>score</th><th>source</th><th>reason</th><th>sub-scores</th></tr></thead><tbody>",
            record
                .composite
                .map(|c| format!("{c:.3}"))
                .unwrap_or_else(|| "n/a".to_string())
        );
        for (name, metric) in &metrics {
            let subs: Vec<String> = metric
                .sub_scores
                .iter()
                .map(|(sub, score)| {
                    format!(
                        "{sub} {} ({})",
                        score
                            .score
                            .map(|s| format!("{s:.2}"))
                            .unwrap_or_else(|| "n/a".to_string()),
                        score.reason
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(name),
                metric
                    .score
                    .map(|s| format!("{s:.3}"))
                    .unwrap_or_else(|| "n/a".to_string()),
                escape(&format!("{:?}", metric.source).to_lowercase()),
                escape(&metric.reason),
                escape(&subs.join("; ")),
            );
        }
        out.push_str("</tbody></table>\n");
    }
    let trajectory = &document["trajectory"];
    out.push_str("<h2>Skill activations</h2>\n<ul>\n");
    match trajectory["skill_activations"].as_array() {
        Some(list) if !list.is_empty() => {
            for activation in list {
                let _ = writeln!(
                    out,
                    "<li><code>{}</code> — {}{}</li>",
                    escape(&text(&activation["skill"])),
                    escape(&text(&activation["evidence"])),
                    if activation["ok"].as_bool() == Some(false) {
                        " (failed)"
                    } else {
                        ""
                    }
                );
            }
        }
        _ => out.push_str("<li>none observed</li>\n"),
    }
    out.push_str("</ul>\n<h2>Messages</h2>\n");
    for message in trajectory["messages"].as_array().into_iter().flatten() {
        let role = text(&message["role"]);
        let content = text(&message["content"]);
        if role == "system" {
            // The system prompt (every staged skill in inject mode) is long: folded.
            let _ = writeln!(
                out,
                "<details class=\"message\"><summary class=\"role\">system prompt ({} characters)</summary><pre>{}</pre></details>",
                content.chars().count(),
                escape(&content)
            );
        } else {
            let _ = writeln!(
                out,
                "<div class=\"message\"><div class=\"role\">{}</div><pre>{}</pre></div>",
                escape(&role),
                escape(&content)
            );
        }
    }
    out.push_str("<h2>Tool calls</h2>\n");
    let calls = trajectory["tool_calls"].as_array();
    if calls.is_none_or(|c| c.is_empty()) {
        out.push_str("<p class=\"muted\">none</p>\n");
    }
    for call in calls.into_iter().flatten() {
        let _ = writeln!(
            out,
            "<div class=\"message\"><div class=\"role\">{}{}</div><pre>{}</pre><pre>{}</pre></div>",
            escape(&text(&call["name"])),
            if call["is_error"].as_bool() == Some(true) {
                " (error)"
            } else {
                ""
            },
            escape(&text(&call["input"])),
            escape(&text(&call["output"]))
        );
    }
    let _ = writeln!(
        out,
        "<h2>Usage</h2>\n<pre>{}</pre>",
        escape(&text(&trajectory["usage"]))
    );
    page_end(&mut out);
    out
}

/// The quality contract's table: each declared bound, the measured value, its interval, status.
fn quality_contract_html(out: &mut String, summary: &Summary) {
    let Some(quality) = &summary.quality_contract else {
        return;
    };
    let _ = writeln!(
        out,
        "<h2>Quality contract</h2>\n<p><code>{}</code>: {}</p>\n<table id=\"quality-contract\"><tr><th>bound</th><th>limit</th><th>measured</th><th>95% interval</th><th>method</th><th>N</th><th>status</th></tr>",
        escape(&quality.path.display().to_string()),
        if quality.passed {
            "no bound violated"
        } else {
            "<strong>VIOLATED</strong>"
        }
    );
    for check in &quality.checks {
        let value =
            |v: Option<f64>, open: &str| v.map_or(open.to_string(), |v| check.bound.format(v));
        let interval =
            if check.measured.is_none() || (check.ci_low.is_none() && check.ci_high.is_none()) {
                "—".to_string()
            } else {
                format!(
                    "[{}, {}]",
                    value(check.ci_low, "open"),
                    value(check.ci_high, "open")
                )
            };
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            check.bound.key(),
            escape(&check.bound.format(check.limit)),
            escape(&value(check.measured, "—")),
            escape(&interval),
            escape(check.interval_method.as_deref().unwrap_or("—")),
            check.n,
            check.status.as_str()
        );
    }
    out.push_str("</table>\n");
}
