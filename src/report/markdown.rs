//! The short Markdown summary printed at the end of a run and written to `report.md`:
//! decision first, then per-arm rates, then what was not measured.

use std::fmt::Write;

use crate::analysis::{ArmSummary, Summary, Verdict};
use crate::record::Arm;
use crate::report::tables;

use crate::analysis::text::format_p_value;
use crate::report::tables::{percent, points};

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

/// A line on trials whose output was cut at the size caps, when there are any.
fn truncation_line(out: &mut String, summary: &Summary) {
    let (with, without) = (
        summary.arms.with_skill.truncated_trials,
        summary.arms.without_skill.truncated_trials,
    );
    if with + without > 0 {
        let _ = writeln!(
            out,
            "\nOutput cut at the runner profile's size caps (`max_stdout_bytes`, `max_stderr_bytes`, `max_transcript_bytes`): with_skill {with}, without_skill {without} trials (`truncated` in trials.jsonl)."
        );
    }
}

fn unscoreable_section(out: &mut String, summary: &Summary) {
    let unscoreable = &summary.unscoreable;
    let arms = [
        ("with_skill", &summary.arms.with_skill),
        ("without_skill", &summary.arms.without_skill),
    ];
    if arms.iter().all(|(_, arm)| arm.trials.unscoreable == 0) {
        return;
    }
    let per_arm: Vec<String> = arms
        .iter()
        .map(|(name, arm)| {
            let causes: Vec<String> = arm
                .unscoreable_causes
                .iter()
                .map(|(cause, count)| format!("{count} × {cause}"))
                .collect();
            if causes.is_empty() {
                format!("{name} {}", arm.trials.unscoreable)
            } else {
                format!("{name} {} ({})", arm.trials.unscoreable, causes.join(", "))
            }
        })
        .collect();
    let _ = writeln!(
        out,
        "\nUnscoreable (excluded, not failed): {}; {:.2}% of recorded trials (limit {:.2}%{}).",
        per_arm.join("; "),
        unscoreable.fraction * 100.0,
        unscoreable.limit * 100.0,
        if unscoreable.exceeded {
            ": **EXCEEDED**, exit 3"
        } else {
            ""
        }
    );
}

/// The A/A calibration line (`calibrated: …` / `uncalibrated: …`), or, in an A/A repeat, what
/// the run is.
fn calibration_section(out: &mut String, summary: &Summary) {
    if let Some(arm) = crate::record::CalibrationArm::of_design(summary.arm_design) {
        let _ = writeln!(
            out,
            "\nA/A control (`skill-lift calibrate`): {}; the arms are identical, so any lift here is noise.",
            arm.describe()
        );
        return;
    }
    if let Some(calibration) = &summary.calibration {
        let _ = writeln!(out, "\nCalibration: {}.", calibration.message);
    }
}

/// One line when trials failed on the security gate (they are in the fail counts).
fn security_gate_section(out: &mut String, summary: &Summary) {
    let with = summary.arms.with_skill.security_gate_failures;
    let without = summary.arms.without_skill.security_gate_failures;
    if with + without == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "\nSecurity gate: {with} with-skill and {without} baseline trials failed on a security violation (destructive command, exposed secret or access outside the workspace), whatever their other scores; `reason` in trials.jsonl names it."
    );
}

fn metrics_section(out: &mut String, summary: &Summary) {
    if summary.metric_lifts.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "\n{}",
        tables::markdown(&tables::metric_table(summary))
    );
    if let Some(sentence) = tables::judge_spread_sentence(summary) {
        let _ = writeln!(out, "\n{sentence}");
    }
    let grading = &summary.grading;
    let _ = writeln!(
        out,
        "\nGraded by: {}. Composite: {}. Pass: {}.",
        tables::graded_by(summary),
        grading.composite_definition,
        grading.pass_rule
    );
}

fn noise_section(out: &mut String, summary: &Summary) {
    let table = tables::markdown(&tables::noise_table(summary));
    if table.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "\nWhere the variance comes from (variance of a case's value: cases + attempts/K + judge repeats/(K·J)):\n\n{table}"
    );
    if let Some(sentence) = tables::mde_projection_sentence(summary) {
        let _ = writeln!(out, "\n{sentence}");
    }
}

/// The lift by the target's position in the list of skills the model was shown.
fn position_section(out: &mut String, summary: &Summary) {
    let Some(position) = &summary.position else {
        return;
    };
    let test = match position.p_value {
        Some(p) => format!(
            "within-case permutation test of a difference between positions: p {}{}",
            format_p_value(p),
            if position.sensitive {
                " (position-sensitive)"
            } else {
                ""
            }
        ),
        None => "no test: the paired differences do not vary, or one position holds every pair"
            .to_string(),
    };
    let _ = writeln!(
        out,
        "\nLift by the target's position among the {} skills shown (1 = listed first; {test}):\n",
        position.positions
    );
    let _ = writeln!(
        out,
        "| position | pairs | with_skill | without_skill | lift |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for row in &position.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            row.position,
            row.pairs,
            percent(row.with_skill),
            percent(row.without_skill),
            points(row.lift)
        );
    }
}

fn agreement_section(out: &mut String, summary: &Summary) {
    let Some(agreement) = &summary.judge_agreement else {
        return;
    };
    let between = tables::markdown(&tables::judge_agreement_table(summary));
    if !between.is_empty() {
        let _ = write!(
            out,
            "\nJudge agreement with `{}`:\n\n{between}",
            agreement.primary
        );
    }
    for (judge, failures) in &agreement.other_judge_failures {
        let _ = writeln!(
            out,
            "\nJudge `{judge}` failed on {failures} trials (missing from its agreement rows; see `other_judge_errors` in trials.jsonl)."
        );
    }
    let versus = tables::markdown(&tables::judge_versus_checks_table(summary));
    if !versus.is_empty() {
        let _ = write!(
            out,
            "\nJudge versus output checks (judge pass = score ≥ 0.5):\n\n{versus}"
        );
    }
}

/// Render the summary as Markdown.
/// One row per comparison of an arm with the reference arm: rates, paired lift with its
/// interval and verdict, then what each arm costs per trial and the ratios.
fn comparisons_section(out: &mut String, summary: &Summary) {
    let Some(reference) = summary.reference else {
        return;
    };
    if summary.comparisons.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n**Comparisons against `{reference}`** (paired over the cases scored in both arms):\n"
    );
    let _ = writeln!(
        out,
        "| arm | pass rate | {reference} | lift | 95% CI | N | verdict | gate |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for comparison in &summary.comparisons {
        let lift = &comparison.lift;
        let gate = match &lift.gate {
            None => "—".to_string(),
            Some(gate) if gate.passed => "passed".to_string(),
            Some(gate) => format!("**FAILED** — {}", gate.failures.join("; ")),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {gate} |",
            comparison.arm,
            percent(comparison.arm_summary.pass_rate),
            percent(comparison.reference_summary.pass_rate),
            points(lift.estimate),
            tables::interval_text(lift.ci_low, lift.ci_high),
            lift.n_cases,
            lift.verdict.as_str(),
        );
    }
    let seconds = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2} s"));
    let number = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.0}"));
    let dollars = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("${v:.4}"));
    let ratio = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("×{v:.2}"));
    let _ = writeln!(
        out,
        "\n| arm | P95 wall | ratio | tokens / trial | ratio | cost / trial | ratio |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for comparison in &summary.comparisons {
        let cost = &comparison.cost;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            comparison.arm,
            seconds(cost.arm.p95_wall_s),
            ratio(cost.latency_ratio),
            number(cost.arm.tokens_per_trial),
            ratio(cost.token_ratio),
            dollars(cost.arm.cost_usd_per_trial),
            ratio(cost.cost_ratio),
        );
    }
    if let Some(first) = summary.comparisons.first() {
        let cost = &first.cost.reference;
        let _ = writeln!(
            out,
            "| {reference} (reference) | {} | | {} | | {} | |",
            seconds(cost.p95_wall_s),
            number(cost.tokens_per_trial),
            dollars(cost.cost_usd_per_trial),
        );
    }
}

/// The headline block of a run with another reference than `without_skill`: the lift of
/// `with_skill` against it, its verdict and its gate, before the paired `with_skill` −
/// `without_skill` figures.
fn reference_headline(out: &mut String, lift: &crate::analysis::LiftSummary, reference: Arm) {
    let _ = write!(
        out,
        "**Lift (pass rate, with_skill − {reference}): {}**, {} ({}), N = {} cases, K = {}. Verdict: **{}**",
        points(lift.estimate),
        tables::interval_text(lift.ci_low, lift.ci_high),
        lift.method,
        lift.n_cases,
        lift.k,
        lift.verdict.as_str(),
    );
    if lift.verdict_reasons.is_empty() {
        let _ = writeln!(out, ".");
    } else {
        let _ = writeln!(out, " — {}.", tables::reasons(&lift.verdict_reasons));
    }
    match &lift.gate {
        Some(gate) if gate.passed => {
            let _ = writeln!(out, "\nGate: passed.");
        }
        Some(gate) => {
            let _ = writeln!(out, "\nGate: **FAILED** — {}.", gate.failures.join("; "));
        }
        None => {}
    }
    let _ = writeln!(
        out,
        "\nThe paired comparison of the skill with no skill (`with_skill` − `without_skill`; not gated):\n"
    );
}

/// The quality contract: one row per declared bound with the measured value, its interval and
/// whether it is met, violated or not shown.
fn quality_contract_section(out: &mut String, summary: &Summary) {
    let Some(quality) = &summary.quality_contract else {
        return;
    };
    let _ = writeln!(
        out,
        "\nQuality contract (`{}`): {}.\n",
        quality.path.display(),
        if quality.passed {
            "no bound violated"
        } else {
            "**VIOLATED**"
        }
    );
    let _ = writeln!(
        out,
        "| bound | limit | measured | 95% interval | method | N | status |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
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
        let status = match check.status {
            crate::analysis::quality::BoundStatus::Violated => "**violated**".to_string(),
            other => other.as_str().to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {interval} | {} | {} | {status} |",
            check.bound.key(),
            check.bound.format(check.limit),
            value(check.measured, "—"),
            check.interval_method.as_deref().unwrap_or("—"),
            check.n,
        );
    }
}

/// Reused trials listed one by one in `report.md` (the rest are counted).
const REUSED_TRIALS_LISTED: usize = 200;

pub(crate) fn summary_markdown(summary: &Summary) -> String {
    let lift = &summary.lift;
    let mut out = String::new();
    // The headline is the verdict the gates judge: `with_skill` against the reference.
    let (headline_lift, reference) = summary.headline_lift();
    let mut headline = match headline_lift.verdict {
        Verdict::Improved => "IMPROVED",
        Verdict::Regressed => "REGRESSED",
        Verdict::Inconclusive => "INCONCLUSIVE",
    }
    .to_string();
    if reference != Arm::WithoutSkill {
        headline.push_str(&format!(" (with_skill vs {reference})"));
    }
    if summary.complete {
        let _ = writeln!(out, "# skill-lift: `{}` — {headline}\n", summary.asset);
    } else {
        let _ = writeln!(
            out,
            "# skill-lift: `{}` — {headline} (INCOMPLETE: {} of {} planned trials; resume before deciding)\n",
            summary.asset, summary.trials.recorded, summary.trials.planned
        );
    }
    if reference != Arm::WithoutSkill {
        reference_headline(&mut out, headline_lift, reference);
    }
    let interval = tables::interval_text(lift.ci_low, lift.ci_high);
    let _ = writeln!(
        out,
        "**Lift (pass rate, with − without): {}**, {interval} ({}), N = {} cases, K = {}.{}",
        points(lift.estimate),
        lift.method,
        lift.n_cases,
        lift.k,
        tables::no_variance_note(
            lift.ci_low,
            lift.ci_high,
            &lift.verdict_reasons,
            lift.n_cases
        )
    );
    for warning in &summary.warnings {
        let _ = writeln!(out, "\n**Warning:** {warning}.");
    }
    if let Some(stopping) = &summary.stopping {
        let _ = writeln!(out, "\n{}", stopping.line());
    }
    if let Some(reuse) = &summary.reuse {
        let _ = writeln!(out, "\n{}", reuse.line());
        out.push_str(&reuse.trials_markdown(REUSED_TRIALS_LISTED));
    }
    if let Some(judge) = &summary.judge_spend {
        let _ = writeln!(out, "\n{}", judge.line());
    }
    if let Some(composite) = summary
        .metric_lifts
        .iter()
        .find(|m| m.metric == crate::analysis::COMPOSITE)
    {
        let interval = tables::metric_interval_text(composite);
        let _ = writeln!(
            out,
            "\n**Composite lift (mean of the metrics, with − without): {}**, {interval} ({}), N = {} cases; with_skill {}, without_skill {}.",
            points(composite.estimate),
            composite.method,
            composite.n_cases,
            percent(composite.with_skill),
            percent(composite.without_skill),
        );
    }
    let mut facts = Vec::new();
    if let (Some(test), Some(p)) = (&lift.test, lift.p_value) {
        facts.push(format!("p {} ({test})", format_p_value(p)));
    }
    if let Some(mde) = lift.mde {
        facts.push(format!(
            "minimum detectable effect {:.1} pp (t quantiles at N = {}; α = 0.05, power 0.8)",
            mde * 100.0,
            lift.n_cases
        ));
    }
    if let Some(r) = lift.correlation {
        facts.push(format!("correlation between arms r = {r:.2}"));
    }
    if let Some(clusters) = lift.n_clusters {
        facts.push(format!("{clusters} clusters resampled"));
    }
    if !facts.is_empty() {
        let _ = writeln!(out, "\n{}.", facts.join("; "));
    }
    if reference == Arm::WithoutSkill {
        let _ = write!(out, "\nVerdict: **{}**", lift.verdict.as_str());
    } else {
        let _ = write!(
            out,
            "\nVerdict of with_skill vs without_skill (not gated): **{}**",
            lift.verdict.as_str()
        );
    }
    if lift.verdict_reasons.is_empty() {
        let _ = writeln!(out, ".");
    } else {
        let _ = writeln!(out, " — {}.", tables::reasons(&lift.verdict_reasons));
    }
    if let Some(warning) = summary.position.as_ref().and_then(|p| p.warning.as_ref()) {
        let _ = writeln!(out, "\n**Warning — {warning}.**");
    }
    calibration_section(&mut out, summary);
    quality_contract_section(&mut out, summary);
    if let Some(contract) = &summary.version_contract {
        let _ = writeln!(
            out,
            "\nVersion policy: **{}** — {}{}.",
            contract.verdict.as_str(),
            contract.message,
            if contract.enforced {
                " (enforced: `--enforce-version-policy`)"
            } else {
                ""
            }
        );
    }
    if let Some(test) = &summary.equivalence {
        let _ = writeln!(
            out,
            "\nNo-effect test (`--equivalence`): **{}** — {}.",
            test.verdict.as_str(),
            test.message
        );
    }
    if let Some(gate) = &lift.gate {
        if gate.passed {
            let _ = writeln!(out, "\nGate: passed.");
        } else {
            let _ = writeln!(out, "\nGate: **FAILED** — {}.", gate.failures.join("; "));
        }
    }
    let negative = &lift.negative_lift;
    let _ = writeln!(
        out,
        "\nCases improved / unchanged / worse: {} / {} / {} (median case lift {}). Negative-lift classes: never discovered {}, discovered but misused {}, execution instability {}{}.\n",
        lift.case_lifts.positive,
        lift.case_lifts.zero,
        lift.case_lifts.negative,
        points(lift.case_lifts.median),
        negative.never_discovered,
        negative.discovered_but_misused,
        negative.execution_instability,
        if negative.activation_observable {
            ""
        } else {
            " (activation not observable in inject mode)"
        }
    );
    let _ = writeln!(
        out,
        "| arm | pass rate | 95% CI | interval | pass | fail | unscoreable | not gradable | tokens in / out |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    out.push_str(&arm_row("with_skill", &summary.arms.with_skill));
    out.push_str(&arm_row("without_skill", &summary.arms.without_skill));
    comparisons_section(&mut out, summary);
    unscoreable_section(&mut out, summary);
    truncation_line(&mut out, summary);
    security_gate_section(&mut out, summary);
    metrics_section(&mut out, summary);
    noise_section(&mut out, summary);
    position_section(&mut out, summary);
    agreement_section(&mut out, summary);
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
        if summary.observed_models.iter().all(|m| *m == summary.model) {
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
    let negative_cases: Vec<String> = summary
        .cases
        .iter()
        .filter_map(|c| {
            c.negative_lift_class.map(|class| {
                let class = serde_json::to_value(class)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                format!("`{}` ({}, {class})", c.case_id, points(c.lift))
            })
        })
        .collect();
    if !negative_cases.is_empty() {
        let _ = writeln!(
            out,
            "\nCases worse with the skill: {}.",
            negative_cases.join(", ")
        );
    }
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

/// The per-case table of `report.md`: failing cases first, each with its pass counts, lift and
/// one sample answer per arm (`answers`, read from the transcripts).
pub(crate) fn case_table(summary: &Summary, answers: &[crate::report::SampleAnswer]) -> String {
    let mut out = String::new();
    if summary.cases.is_empty() {
        return out;
    }
    // Table cells: no line breaks, no column separators, no raw HTML.
    let cell = |text: &str| {
        text.replace('|', "\\|")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let _ = writeln!(
        out,
        "\n## Cases, failing first\n\nOne answer per arm: a failing attempt when the arm has one (W = with skill, B = baseline, then the attempt).\n"
    );
    let _ = writeln!(
        out,
        "| case | with_skill | without_skill | lift | with-skill answer | baseline answer |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for case in tables::cases_failing_first(summary) {
        let arm = |data: &crate::analysis::CaseArm| {
            format!("{}/{}", data.trials.pass, data.trials.scored())
        };
        let lift = match (&case.lift, &case.excluded_reason) {
            (Some(l), _) => points(Some(*l)),
            (None, Some(reason)) => format!("excluded: {reason}"),
            (None, None) => "n/a".to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            case.case_id.replace('`', "'"),
            arm(&case.with_skill),
            arm(&case.without_skill),
            cell(&lift),
            cell(&tables::sample_text(tables::sample_answer(
                answers,
                &case.case_id,
                Arm::WithSkill
            ))),
            cell(&tables::sample_text(tables::sample_answer(
                answers,
                &case.case_id,
                Arm::WithoutSkill
            ))),
        );
    }
    out
}
