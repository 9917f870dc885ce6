//! The short Markdown summary printed at the end of a run and written to `report.md`:
//! decision first, then per-arm rates, then what was not measured.

use std::fmt::Write;

use crate::analysis::{ArmSummary, Summary, Verdict};

fn percent(value: Option<f64>) -> String {
    value
        .map(|v| format!("{:.1}%", v * 100.0))
        .unwrap_or_else(|| "n/a".to_string())
}

fn points(value: Option<f64>) -> String {
    value
        .map(|v| format!("{:+.1} pp", v * 100.0))
        .unwrap_or_else(|| "n/a".to_string())
}

fn arm_row(name: &str, arm: &ArmSummary) -> String {
    let interval = match (arm.ci_low, arm.ci_high) {
        (Some(low), Some(high)) => format!("[{}, {}]", percent(Some(low)), percent(Some(high))),
        _ => "n/a".to_string(),
    };
    let tokens = match (arm.usage.input_tokens, arm.usage.output_tokens) {
        (Some(i), Some(o)) => format!("{i} / {o}"),
        _ => "n/a".to_string(),
    };
    format!(
        "| {name} | {} | {interval} | {} | {} | {} | {} | {} | {tokens} |\n",
        percent(arm.pass_rate),
        arm.interval_method.as_deref().unwrap_or("n/a"),
        arm.trials.pass,
        arm.trials.fail,
        arm.trials.unscoreable,
        arm.trials.not_gradable,
    )
}

/// Render the summary as Markdown.
pub fn summary_markdown(summary: &Summary) -> String {
    let lift = &summary.lift;
    let mut out = String::new();
    let headline = match lift.verdict {
        Verdict::Improved => "IMPROVED",
        Verdict::Regressed => "REGRESSED",
        Verdict::Inconclusive => "INCONCLUSIVE",
    };
    let _ = writeln!(out, "# skill-lift: `{}` — {headline}\n", summary.asset);
    let interval = match (lift.ci_low, lift.ci_high) {
        (Some(low), Some(high)) => {
            format!("95% CI [{}, {}]", points(Some(low)), points(Some(high)))
        }
        _ => "no interval".to_string(),
    };
    let _ = writeln!(
        out,
        "**Lift (pass rate, with − without): {}**, {interval}, method {}, N = {} cases, K = {}.",
        points(lift.estimate),
        lift.method,
        lift.n_cases,
        lift.k
    );
    if let Some(reason) = &lift.verdict_reason {
        let _ = writeln!(out, "\nVerdict {}: {reason}.", lift.verdict.as_str());
    }
    let mut extras = Vec::new();
    if let Some(p) = lift.p_value_paired_t {
        extras.push(format!("paired t p = {p:.4}"));
    }
    if let Some(r) = lift.correlation {
        extras.push(format!("correlation between arms r = {r:.2}"));
    }
    extras.push(format!(
        "cases improved / unchanged / worse: {} / {} / {}",
        lift.case_lifts.positive, lift.case_lifts.zero, lift.case_lifts.negative
    ));
    if let Some(clusters) = lift.n_clusters {
        extras.push(format!("{clusters} clusters resampled"));
    }
    let _ = writeln!(out, "\n{}.\n", extras.join("; "));
    let _ = writeln!(
        out,
        "| arm | pass rate | 95% CI | interval | pass | fail | unscoreable | not gradable | tokens in / out |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    out.push_str(&arm_row("with_skill", &summary.arms.with_skill));
    out.push_str(&arm_row("without_skill", &summary.arms.without_skill));
    let _ = writeln!(
        out,
        "\nRun `{}`: {} of {} planned trials recorded{}; runner `{}` ({}, skill mode {}), model `{}`{}; decoys: {}; fingerprint {} ({}).",
        summary.run_id,
        summary.trials.recorded,
        summary.trials.planned,
        if summary.complete {
            ""
        } else {
            " (incomplete: resume with `skill-lift run --resume <run folder>`)"
        },
        summary.runner,
        summary.runner_kind,
        summary.skill_mode,
        summary.model,
        if summary.observed_models.is_empty() {
            String::new()
        } else {
            format!(" (server reported {})", summary.observed_models.join(", "))
        },
        if summary.decoys.is_empty() {
            "none".to_string()
        } else {
            summary.decoys.join(", ")
        },
        summary
            .fingerprint
            .get(..19)
            .unwrap_or(&summary.fingerprint),
        summary.calibre,
    );
    let excluded: Vec<String> = summary
        .cases
        .iter()
        .filter_map(|c| {
            c.excluded_reason
                .as_ref()
                .map(|r| format!("`{}` ({r})", c.case_id))
        })
        .collect();
    if !excluded.is_empty() {
        let _ = writeln!(
            out,
            "\nExcluded from the paired analysis: {}.",
            excluded.join(", ")
        );
    }
    let _ = writeln!(out, "\nNot measured: {}.", summary.not_measured.join("; "));
    out
}
