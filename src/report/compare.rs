//! `skill-lift compare RUN_A RUN_B`: two analyzed runs of the same skill and eval set (other
//! runners, models or skill versions) side by side — one table of setup and results with the
//! difference B − A, and the per-case lifts with what changed — rendered as Markdown, CSV, JSON
//! and a self-contained HTML page.
//!
//! [`check_comparable`] says which manifest field makes two runs incomparable, and
//! [`Comparison::new`] builds the comparison from two manifests and their [`Summary`]s (both
//! pure); [`compare_runs`], the command's workflow, analyzes the run folders and writes the
//! files. Nothing here re-runs statistics: each run's own analysis is shown (with its recorded
//! gates and seed), and a difference of two lifts is a plain difference (not a test).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::analysis::Summary;
use crate::record::Manifest;
use crate::report::html::{STYLE, escape};

/// Why two runs cannot be compared: the manifest field and both values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the runs are not comparable: `{field}` differs (A: {a}; B: {b}){hint}")]
pub(crate) struct NotComparable {
    /// The manifest field, as written in `manifest.json` (`asset.name`, `eval_set.digest`, …).
    pub field: &'static str,
    pub a: String,
    pub b: String,
    /// What to do, or which cases differ.
    pub hint: String,
}

/// Refuse two runs that do not measure the same thing: another skill (`asset.name`), another
/// eval set (`eval_set.digest`, with the cases only one run has), other arms
/// (`arm_design`). Runner, model, skill version (fingerprint), K and seed may differ: that is
/// what a comparison is for.
pub(crate) fn check_comparable(a: &Manifest, b: &Manifest) -> Result<(), NotComparable> {
    if a.asset.name != b.asset.name {
        return Err(NotComparable {
            field: "asset.name",
            a: a.asset.name.clone(),
            b: b.asset.name.clone(),
            hint: "; compare runs of one skill".to_string(),
        });
    }
    if a.eval_set.digest != b.eval_set.digest || a.eval_set.case_ids != b.eval_set.case_ids {
        let only = |x: &Manifest, y: &Manifest| -> Vec<String> {
            x.eval_set
                .case_ids
                .iter()
                .filter(|id| !y.eval_set.case_ids.contains(id))
                .cloned()
                .collect()
        };
        let (only_a, only_b) = (only(a, b), only(b, a));
        let hint = if only_a.is_empty() && only_b.is_empty() {
            "; the same case ids, but the eval file's content differs (prompts, checks or expectations changed): compare runs of one eval set".to_string()
        } else {
            format!(
                "; cases only in A: [{}], only in B: [{}]",
                only_a.join(", "),
                only_b.join(", ")
            )
        };
        return Err(NotComparable {
            field: "eval_set.digest",
            a: format!("{} ({})", a.eval_set.digest, a.eval_set.path.display()),
            b: format!("{} ({})", b.eval_set.digest, b.eval_set.path.display()),
            hint,
        });
    }
    if a.arm_design != b.arm_design {
        return Err(NotComparable {
            field: "arm_design",
            a: format!("{:?}", a.arm_design),
            b: format!("{:?}", b.arm_design),
            hint: "; an A/A calibration repeat is not a paired run".to_string(),
        });
    }
    Ok(())
}

/// One row of the side-by-side table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CompareRow {
    /// What the row shows (`lift`, `model`, …).
    pub field: String,
    pub a: String,
    pub b: String,
    /// B − A for numeric rows (percentage points for rates), `same` / `differs` otherwise.
    pub difference: String,
    /// The numeric values behind `a` and `b` (fractions for rates), when numeric.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_value: Option<f64>,
}

/// One case in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CaseComparison {
    pub case_id: String,
    /// Per run: with-skill and without-skill case pass rates and their difference.
    pub a_with: Option<f64>,
    pub a_without: Option<f64>,
    pub a_lift: Option<f64>,
    pub b_with: Option<f64>,
    pub b_without: Option<f64>,
    pub b_lift: Option<f64>,
    /// `b_lift − a_lift` when both exist.
    pub lift_change: Option<f64>,
    /// What changed: `same`, `better in B`, `worse in B`, `lift changed sign`, `scored in one run only`.
    pub change: String,
}

/// The comparison of two runs (`compare.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Comparison {
    /// The skill both runs measure.
    pub asset: String,
    pub run_a: String,
    pub run_b: String,
    /// Setup and results, side by side.
    pub rows: Vec<CompareRow>,
    /// Every case of the eval set, in its order.
    pub cases: Vec<CaseComparison>,
    /// Notes the reader needs (grading differs, a run is incomplete).
    pub notes: Vec<String>,
    /// The style tie-break, when either run has a `style` metric ([`style_tie_break`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub style_tie_break: Option<StyleTieBreak>,
}

/// Two runs' style scores closer than this do not separate them (a margin, not a test: a
/// style score is the mean of thirds over the cases).
pub(crate) const STYLE_TIE_MARGIN: f64 = 0.05;

/// Whether style breaks a tie between two runs, and what compare says about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct StyleTieBreak {
    /// Run A's style score: the with-skill mean of its `style` metric (absent: not graded).
    pub a: Option<f64>,
    /// Run B's.
    pub b: Option<f64>,
    /// Whether the two lifts are indistinguishable (their 95% intervals overlap); absent when
    /// an interval is missing.
    pub lifts_indistinguishable: Option<bool>,
    /// The run style prefers when it breaks the tie (`A` or `B`); absent otherwise.
    pub prefers: Option<String>,
    /// What compare says.
    pub statement: String,
}

/// The style tie-break of two runs (`None` when neither has a `style` metric). The rule: the
/// lifts are indistinguishable when both 95% intervals are known and overlap; then, when both
/// runs have a style score (the with-skill mean of `style`) and they differ by at least
/// [`STYLE_TIE_MARGIN`], the higher one breaks the tie. When the lifts are distinguishable
/// style is shown but not used. Style never changes a verdict or an exit code.
pub(crate) fn style_tie_break(sa: &Summary, sb: &Summary) -> Option<StyleTieBreak> {
    let has_style = |s: &Summary| {
        s.grading
            .judge_metrics
            .iter()
            .any(|m| m == crate::record::STYLE)
    };
    let style = |s: &Summary| {
        has_style(s).then_some(())?;
        s.metric_lifts
            .iter()
            .find(|m| m.metric == crate::record::STYLE)
            .and_then(|m| m.with_skill)
    };
    if !has_style(sa) && !has_style(sb) {
        return None;
    }
    let interval = |s: &Summary| s.lift.ci_low.zip(s.lift.ci_high);
    Some(tie_break(
        (interval(sa), style(sa)),
        (interval(sb), style(sb)),
    ))
}

/// The tie-break rule of [`style_tie_break`] on each run's lift interval and style score.
fn tie_break(
    (a_interval, a): (Option<(f64, f64)>, Option<f64>),
    (b_interval, b): (Option<(f64, f64)>, Option<f64>),
) -> StyleTieBreak {
    let score = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"));
    let scores = format!("A {} vs B {}", score(a), score(b));
    let lifts_indistinguishable = match (a_interval, b_interval) {
        (Some((al, ah)), Some((bl, bh))) => Some(al <= bh && bl <= ah),
        _ => None,
    };
    let mut prefers = None;
    let statement = match (lifts_indistinguishable, a, b) {
        (None, _, _) => format!(
            "style is not used: a lift interval is missing, so whether the lifts are indistinguishable is not known (style {scores})"
        ),
        (Some(false), _, _) => format!(
            "the lifts are distinguishable (their 95% intervals do not overlap): style is shown ({scores}) but not used"
        ),
        (Some(true), Some(a), Some(b)) if (a - b).abs() >= STYLE_TIE_MARGIN => {
            let better = if a > b { "A" } else { "B" };
            prefers = Some(better.to_string());
            format!(
                "the lifts are indistinguishable (their 95% intervals overlap); style breaks the tie: {scores} — {better}'s answers match the user's style reference better"
            )
        }
        (Some(true), Some(_), Some(_)) => format!(
            "the lifts are indistinguishable (their 95% intervals overlap), and the style scores do not separate them either: {scores} (closer than {STYLE_TIE_MARGIN})"
        ),
        (Some(true), _, _) => format!(
            "the lifts are indistinguishable (their 95% intervals overlap), but only one run has a style score ({scores}): no tie-break"
        ),
    };
    StyleTieBreak {
        a,
        b,
        lifts_indistinguishable,
        prefers,
        statement,
    }
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{:.1}%", v * 100.0))
}

fn points(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{:+.1} pp", v * 100.0))
}

fn with_interval(value: Option<f64>, low: Option<f64>, high: Option<f64>, rate: bool) -> String {
    let show = |v: Option<f64>| if rate { percent(v) } else { points(v) };
    match (low, high) {
        (Some(_), Some(_)) => format!("{} [{}, {}]", show(value), show(low), show(high)),
        _ => show(value),
    }
}

/// The decoys a run staged: their source and names (`none` for `--no-decoys`).
fn decoys_text(manifest: &Manifest) -> String {
    if manifest.decoys.skills.is_empty() {
        return "none".to_string();
    }
    let names: Vec<&str> = manifest
        .decoys
        .skills
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    format!("{} ({})", names.join(", "), manifest.decoys.source)
}

fn skill_order_text(ordering: crate::record::SkillOrdering) -> String {
    match ordering {
        crate::record::SkillOrdering::ByName => "by name",
        crate::record::SkillOrdering::Balanced => "balanced (seeded per trial)",
    }
    .to_string()
}

/// Manifest fields the setup rows already show, or that name the run rather than a setting.
const NOT_SETTINGS: &[&str] = &[
    "run_id",
    "created_at",
    "model",
    "k",
    "seed",
    "skill_order",
    "decoys",
    "asset",
    "eval_set",
    "runner.name",
    "runner.kind",
    "runner.skill_mode",
    "trial_keys",
    "calibration",
    "reuse",
    "stopping.outcome",
    "shard",
    "trials_planned",
    "regraded_from",
];

/// Every other setting that differs between the two manifests, as `(path, a, b)`: the
/// manifests flattened to their leaves (`runner.base_url`, `grading.pass_threshold`, …),
/// compared leaf by leaf; a setting one run lacks reads `absent`.
fn other_setting_differences(a: &Manifest, b: &Manifest) -> Vec<(String, String, String)> {
    fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, child) in map {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    flatten(&path, child, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let leaves = |manifest: &Manifest| {
        let mut out = BTreeMap::new();
        if let Ok(value) = serde_json::to_value(manifest) {
            flatten("", &value, &mut out);
        }
        out.retain(|path, _| {
            !NOT_SETTINGS
                .iter()
                .any(|skip| path == skip || path.starts_with(&format!("{skip}.")))
        });
        out
    };
    let (la, lb) = (leaves(a), leaves(b));
    let paths: std::collections::BTreeSet<&String> = la.keys().chain(lb.keys()).collect();
    paths
        .into_iter()
        .filter(|path| la.get(*path) != lb.get(*path))
        .map(|path| {
            let shown = |leaves: &BTreeMap<String, String>| {
                leaves
                    .get(path)
                    .cloned()
                    .unwrap_or_else(|| "absent".to_string())
            };
            (path.clone(), shown(&la), shown(&lb))
        })
        .collect()
}

fn text_row(field: &str, a: String, b: String) -> CompareRow {
    let difference = if a == b { "same" } else { "differs" }.to_string();
    CompareRow {
        field: field.to_string(),
        a,
        b,
        difference,
        a_value: None,
        b_value: None,
    }
}

/// How a numeric row shows its values, and so its difference: fractions as percentage points
/// to one decimal, or plain numbers to a number of decimals.
#[derive(Debug, Clone, Copy)]
enum Shown {
    PercentagePoints,
    Decimals(i32),
}

/// A numeric row. The difference B − A is shown as the values are ([`Shown`]); one that rounds
/// to 0 there is shown as ≈ 0 (never +0.00 or -0.0), equal values as `same`.
fn number_row(
    field: &str,
    (a_text, a): (String, Option<f64>),
    (b_text, b): (String, Option<f64>),
    shown: Shown,
) -> CompareRow {
    let difference = match (a, b) {
        (Some(a), Some(b)) if a == b => "same".to_string(),
        (Some(a), Some(b)) => {
            let (difference, decimals, unit) = match shown {
                Shown::PercentagePoints => ((b - a) * 100.0, 1, " pp"),
                Shown::Decimals(decimals) => (b - a, decimals, ""),
            };
            if (difference * 10f64.powi(decimals)).round() == 0.0 {
                format!("≈ 0{unit}")
            } else {
                format!(
                    "{difference:+.decimals$}{unit}",
                    decimals = decimals as usize
                )
            }
        }
        _ => "n/a".to_string(),
    };
    CompareRow {
        field: field.to_string(),
        a: a_text,
        b: b_text,
        difference,
        a_value: a,
        b_value: b,
    }
}

fn mean_tokens(summary: &Summary) -> Option<f64> {
    let trials = summary.trials.recorded;
    let arms = [&summary.arms.with_skill, &summary.arms.without_skill];
    let total: Option<u64> = arms
        .iter()
        .map(
            |arm| match (arm.usage.input_tokens, arm.usage.output_tokens) {
                (None, None) => None,
                (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
            },
        )
        .try_fold(0u64, |sum, value| value.map(|v| sum + v));
    (trials > 0).then_some(())?;
    total.map(|t| t as f64 / trials as f64)
}

fn cost(summary: &Summary) -> Option<f64> {
    match (
        summary.arms.with_skill.usage.cost_usd,
        summary.arms.without_skill.usage.cost_usd,
    ) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

impl Comparison {
    /// Compare run A with run B (call [`check_comparable`] first).
    pub(crate) fn new(a: (&Manifest, &Summary), b: (&Manifest, &Summary)) -> Self {
        let ((ma, sa), (mb, sb)) = (a, b);
        let short = |digest: &str| {
            digest
                .trim_start_matches("sha256:")
                .chars()
                .take(12)
                .collect::<String>()
        };
        let mut rows = vec![
            text_row("run", ma.run_id.clone(), mb.run_id.clone()),
            text_row(
                "skill fingerprint",
                short(&ma.asset.fingerprint),
                short(&mb.asset.fingerprint),
            ),
            text_row(
                "runner",
                format!("{} ({})", ma.runner.name, ma.runner.kind),
                format!("{} ({})", mb.runner.name, mb.runner.kind),
            ),
            text_row("model", ma.model.clone(), mb.model.clone()),
            text_row(
                "skill mode",
                ma.runner.skill_mode.clone(),
                mb.runner.skill_mode.clone(),
            ),
            text_row("K", ma.k.to_string(), mb.k.to_string()),
            text_row("decoys", decoys_text(ma), decoys_text(mb)),
            text_row("seed", ma.seed.to_string(), mb.seed.to_string()),
            text_row(
                "skill order",
                skill_order_text(ma.skill_order),
                skill_order_text(mb.skill_order),
            ),
            text_row(
                "trials recorded",
                format!("{}/{}", sa.trials.recorded, sa.trials.planned),
                format!("{}/{}", sb.trials.recorded, sb.trials.planned),
            ),
            text_row("graded by", grading_text(sa), grading_text(sb)),
            text_row(
                "verdict",
                sa.lift.verdict.as_str().to_string(),
                sb.lift.verdict.as_str().to_string(),
            ),
            number_row(
                "lift (pass rate, with − without)",
                (
                    with_interval(sa.lift.estimate, sa.lift.ci_low, sa.lift.ci_high, false),
                    sa.lift.estimate,
                ),
                (
                    with_interval(sb.lift.estimate, sb.lift.ci_low, sb.lift.ci_high, false),
                    sb.lift.estimate,
                ),
                Shown::PercentagePoints,
            ),
            text_row(
                "lift method",
                sa.lift.method.clone(),
                sb.lift.method.clone(),
            ),
            number_row(
                "p-value",
                (
                    sa.lift.p_value.map_or("n/a".into(), |p| format!("{p:.4}")),
                    sa.lift.p_value,
                ),
                (
                    sb.lift.p_value.map_or("n/a".into(), |p| format!("{p:.4}")),
                    sb.lift.p_value,
                ),
                Shown::Decimals(4),
            ),
            number_row(
                "minimum detectable effect",
                (points(sa.lift.mde), sa.lift.mde),
                (points(sb.lift.mde), sb.lift.mde),
                Shown::PercentagePoints,
            ),
            number_row(
                "paired cases (N)",
                (sa.lift.n_cases.to_string(), Some(sa.lift.n_cases as f64)),
                (sb.lift.n_cases.to_string(), Some(sb.lift.n_cases as f64)),
                Shown::Decimals(0),
            ),
        ];
        // Every other setting that differs, right after the setup rows.
        let after_setup = rows
            .iter()
            .position(|row| row.field == "skill order")
            .map_or(rows.len(), |i| i + 1);
        let others: Vec<CompareRow> = other_setting_differences(ma, mb)
            .into_iter()
            .map(|(path, a, b)| text_row(&format!("setting `{path}`"), a, b))
            .collect();
        rows.splice(after_setup..after_setup, others);
        for (label, arm_a, arm_b) in [
            (
                "with-skill pass rate",
                &sa.arms.with_skill,
                &sb.arms.with_skill,
            ),
            (
                "without-skill pass rate",
                &sa.arms.without_skill,
                &sb.arms.without_skill,
            ),
        ] {
            rows.push(number_row(
                label,
                (
                    with_interval(arm_a.pass_rate, arm_a.ci_low, arm_a.ci_high, true),
                    arm_a.pass_rate,
                ),
                (
                    with_interval(arm_b.pass_rate, arm_b.ci_low, arm_b.ci_high, true),
                    arm_b.pass_rate,
                ),
                Shown::PercentagePoints,
            ));
        }
        let composite = |s: &Summary| {
            s.metric_lifts
                .iter()
                .find(|m| m.metric == "composite")
                .cloned()
        };
        if let (Some(ca), Some(cb)) = (composite(sa), composite(sb)) {
            rows.push(number_row(
                "composite lift",
                (
                    with_interval(ca.estimate, ca.ci_low, ca.ci_high, false),
                    ca.estimate,
                ),
                (
                    with_interval(cb.estimate, cb.ci_low, cb.ci_high, false),
                    cb.estimate,
                ),
                Shown::PercentagePoints,
            ));
        }
        rows.push(number_row(
            "unscoreable trials",
            (
                percent(Some(sa.unscoreable.fraction)),
                Some(sa.unscoreable.fraction),
            ),
            (
                percent(Some(sb.unscoreable.fraction)),
                Some(sb.unscoreable.fraction),
            ),
            Shown::PercentagePoints,
        ));
        let (ta, tb) = (mean_tokens(sa), mean_tokens(sb));
        rows.push(number_row(
            "tokens per trial (input + output)",
            (ta.map_or("n/a".into(), |t| format!("{t:.0}")), ta),
            (tb.map_or("n/a".into(), |t| format!("{t:.0}")), tb),
            Shown::Decimals(0),
        ));
        let (ca, cb) = (cost(sa), cost(sb));
        rows.push(number_row(
            "cost (USD, both arms)",
            (ca.map_or("n/a".into(), |c| format!("{c:.4}")), ca),
            (cb.map_or("n/a".into(), |c| format!("{c:.4}")), cb),
            Shown::Decimals(4),
        ));
        let (wa, wb) = (
            sa.arms.with_skill.mean_wall_s,
            sb.arms.with_skill.mean_wall_s,
        );
        rows.push(number_row(
            "mean trial time, with skill (s)",
            (wa.map_or("n/a".into(), |w| format!("{w:.2}")), wa),
            (wb.map_or("n/a".into(), |w| format!("{w:.2}")), wb),
            Shown::Decimals(2),
        ));

        let by_id_b: BTreeMap<&str, &crate::analysis::CaseSummary> =
            sb.cases.iter().map(|c| (c.case_id.as_str(), c)).collect();
        let cases = sa
            .cases
            .iter()
            .filter_map(|case_a| {
                let case_b = by_id_b.get(case_a.case_id.as_str())?;
                let lift_change = match (case_a.lift, case_b.lift) {
                    (Some(a), Some(b)) => Some(b - a),
                    _ => None,
                };
                let change = match (case_a.lift, case_b.lift) {
                    (Some(a), Some(b)) if (a > 0.0 && b < 0.0) || (a < 0.0 && b > 0.0) => {
                        "lift changed sign"
                    }
                    (Some(a), Some(b)) if (b - a).abs() < 1e-9 => "same",
                    (Some(a), Some(b)) if b > a => "better in B",
                    (Some(_), Some(_)) => "worse in B",
                    (None, None) => "scored in neither run",
                    _ => "scored in one run only",
                }
                .to_string();
                Some(CaseComparison {
                    case_id: case_a.case_id.clone(),
                    a_with: case_a.with_skill.pass_rate,
                    a_without: case_a.without_skill.pass_rate,
                    a_lift: case_a.lift,
                    b_with: case_b.with_skill.pass_rate,
                    b_without: case_b.without_skill.pass_rate,
                    b_lift: case_b.lift,
                    lift_change,
                    change,
                })
            })
            .collect();
        let mut notes = Vec::new();
        if grading_text(sa) != grading_text(sb)
            || sa.grading.pass_threshold != sb.grading.pass_threshold
        {
            notes.push(
                "The runs were graded differently: a pass does not mean the same in both."
                    .to_string(),
            );
        }
        for (name, summary) in [("A", sa), ("B", sb)] {
            if !summary.complete {
                notes.push(format!(
                    "Run {name} ({}) is incomplete: {} of {} planned trials recorded.",
                    summary.run_id, summary.trials.recorded, summary.trials.planned
                ));
            }
        }
        if ma.asset.fingerprint != mb.asset.fingerprint {
            notes.push(
                "The skill's fingerprint differs: the runs measure two versions of the skill."
                    .to_string(),
            );
        }
        let style_tie_break = style_tie_break(sa, sb);
        if let Some(tie) = &style_tie_break {
            rows.push(number_row(
                "style (with skill, mean score)",
                (tie.a.map_or("n/a".into(), |v| format!("{v:.2}")), tie.a),
                (tie.b.map_or("n/a".into(), |v| format!("{v:.2}")), tie.b),
                Shown::Decimals(2),
            ));
            notes.push(format!(
                "Style tie-break: {}. Style never changes a verdict or an exit code.",
                tie.statement
            ));
        }
        notes.push("Each run's lift, interval and verdict are its own analysis; the difference column is B − A, not a test of the difference.".to_string());
        Comparison {
            asset: ma.asset.name.clone(),
            run_a: ma.run_id.clone(),
            run_b: mb.run_id.clone(),
            rows,
            cases,
            notes,
            style_tie_break,
        }
    }

    /// `compare.md`.
    pub(crate) fn markdown(&self) -> String {
        let cell = |text: &str| text.replace('|', "\\|");
        let mut out = format!(
            "# skill-lift compare: `{}`\n\nA = `{}`, B = `{}`\n\n| | A | B | B − A |\n|---|---|---|---|\n",
            self.asset, self.run_a, self.run_b
        );
        for row in &self.rows {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                cell(&row.field),
                cell(&row.a),
                cell(&row.b),
                cell(&row.difference)
            ));
        }
        out.push_str("\n## Cases\n\n| case | A with | A without | A lift | B with | B without | B lift | lift B − A | change |\n|---|---|---|---|---|---|---|---|---|\n");
        for case in &self.cases {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                cell(&case.case_id),
                percent(case.a_with),
                percent(case.a_without),
                points(case.a_lift),
                percent(case.b_with),
                percent(case.b_without),
                points(case.b_lift),
                points(case.lift_change),
                case.change
            ));
        }
        out.push('\n');
        for note in &self.notes {
            out.push_str(&format!("- {note}\n"));
        }
        out
    }

    /// `compare.csv`: the side-by-side rows (`field,a,b,difference`).
    pub(crate) fn rows_csv(&self) -> Vec<u8> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        let _ = writer.write_record(["field", "a", "b", "difference", "a_value", "b_value"]);
        for row in &self.rows {
            let number = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
            let _ = writer.write_record([
                row.field.as_str(),
                &row.a,
                &row.b,
                &row.difference,
                &number(row.a_value),
                &number(row.b_value),
            ]);
        }
        writer.into_inner().unwrap_or_default()
    }

    /// `compare-cases.csv`: one row per case (fractions; empty when not scored).
    pub(crate) fn cases_csv(&self) -> Vec<u8> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        let _ = writer.write_record([
            "case_id",
            "a_with",
            "a_without",
            "a_lift",
            "b_with",
            "b_without",
            "b_lift",
            "lift_change",
            "change",
        ]);
        let number = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        for case in &self.cases {
            let _ = writer.write_record([
                case.case_id.clone(),
                number(case.a_with),
                number(case.a_without),
                number(case.a_lift),
                number(case.b_with),
                number(case.b_without),
                number(case.b_lift),
                number(case.lift_change),
                case.change.clone(),
            ]);
        }
        writer.into_inner().unwrap_or_default()
    }

    /// `compare.json`.
    pub(crate) fn json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("comparison serializes");
        bytes.push(b'\n');
        bytes
    }

    /// `compare.html`: self-contained, cases whose lift changed highlighted.
    pub(crate) fn html(&self) -> String {
        let mut out = format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>skill-lift compare: {}</title><style>{STYLE}\ntr.changed td {{ background: #fff8c5; }}\ntr.sign td {{ background: #ffebe9; }}</style></head><body>\n<h1>skill-lift compare: <code>{}</code></h1>\n<p>A = <code>{}</code>, B = <code>{}</code></p>\n<table><thead><tr><th></th><th>A</th><th>B</th><th>B − A</th></tr></thead><tbody>\n",
            escape(&self.asset),
            escape(&self.asset),
            escape(&self.run_a),
            escape(&self.run_b)
        );
        for row in &self.rows {
            let class = if row.difference == "same" || row.difference.starts_with("+0.0") {
                ""
            } else {
                " class=\"changed\""
            };
            out.push_str(&format!(
                "<tr{class}><th>{}</th><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                escape(&row.field),
                escape(&row.a),
                escape(&row.b),
                escape(&row.difference)
            ));
        }
        out.push_str("</tbody></table>\n<h2>Cases</h2>\n<table><thead><tr><th>case</th><th>A with</th><th>A without</th><th>A lift</th><th>B with</th><th>B without</th><th>B lift</th><th>lift B − A</th><th>change</th></tr></thead><tbody>\n");
        for case in &self.cases {
            let class = match case.change.as_str() {
                "same" => "",
                "lift changed sign" => " class=\"sign\"",
                _ => " class=\"changed\"",
            };
            out.push_str(&format!(
                "<tr{class}><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                escape(&case.case_id),
                percent(case.a_with),
                percent(case.a_without),
                points(case.a_lift),
                percent(case.b_with),
                percent(case.b_without),
                points(case.b_lift),
                points(case.lift_change),
                escape(&case.change)
            ));
        }
        out.push_str("</tbody></table>\n<ul>\n");
        for note in &self.notes {
            out.push_str(&format!("<li>{}</li>\n", escape(note)));
        }
        out.push_str("</ul>\n</body></html>\n");
        out
    }
}

fn grading_text(summary: &Summary) -> String {
    let mut parts = Vec::new();
    if !summary.grading.judges.is_empty() {
        parts.push(format!("judges {}", summary.grading.judges.join(", ")));
    }
    if !summary.grading.custom_graders.is_empty() {
        parts.push(format!(
            "graders {}",
            summary.grading.custom_graders.join(", ")
        ));
    }
    if parts.is_empty() {
        "output checks".to_string()
    } else {
        format!("output checks, {}", parts.join("; "))
    }
}

/// What `skill-lift compare` compares and where it writes.
#[derive(Debug, Clone)]
pub(crate) struct CompareSettings {
    /// The first run folder (A).
    pub run_a: PathBuf,
    /// The second run folder (B).
    pub run_b: PathBuf,
    /// The folder for the files (default: `compare-<A>-vs-<B>` beside A).
    pub out: Option<PathBuf>,
    /// Do not print the Markdown table.
    pub quiet: bool,
}

/// Why `skill-lift compare` could not compare: the runs (input errors) or writing a file
/// ([`CompareError::is_infrastructure`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompareError {
    /// A run folder cannot be read.
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    /// A run folder records no trial.
    #[error("{}: no trial is recorded in trials.jsonl; nothing to compare", .0.display())]
    NoTrials(PathBuf),
    /// The runs do not measure the same thing.
    #[error("comparing {} (A) with {} (B)", .a.display(), .b.display())]
    NotComparable {
        /// Run A's folder.
        a: PathBuf,
        /// Run B's folder.
        b: PathBuf,
        /// The field that differs.
        #[source]
        source: Box<NotComparable>,
    },
    /// The output folder cannot be created.
    #[error("creating {}", .0.display())]
    CreateOut(PathBuf, #[source] std::io::Error),
    /// A file cannot be written.
    #[error(transparent)]
    Write(#[from] crate::disk::DiskError),
}

impl CompareError {
    /// Whether the failure is the infrastructure's (writing a file).
    pub(crate) fn is_infrastructure(&self) -> bool {
        matches!(self, Self::Write(_))
    }
}

/// Run `skill-lift compare`: analyze both runs (each with its recorded gates and seed), refuse
/// runs that are not comparable, write `compare.md`, `.csv`, `-cases.csv`, `.json` and `.html`,
/// print the Markdown table (unless quiet), report the files and append the table to the
/// GitHub step summary. Returns the files written.
pub(crate) fn compare_runs(settings: &CompareSettings) -> Result<Vec<PathBuf>, CompareError> {
    let (manifest_a, summary_a) = analyze(&settings.run_a)?;
    let (manifest_b, summary_b) = analyze(&settings.run_b)?;
    check_comparable(&manifest_a, &manifest_b).map_err(|source| CompareError::NotComparable {
        a: settings.run_a.clone(),
        b: settings.run_b.clone(),
        source: Box::new(source),
    })?;
    let comparison = Comparison::new((&manifest_a, &summary_a), (&manifest_b, &summary_b));
    let out = settings.out.clone().unwrap_or_else(|| {
        let parent = settings.run_a.parent().unwrap_or(Path::new("."));
        parent.join(format!(
            "compare-{}-vs-{}",
            manifest_a.run_id, manifest_b.run_id
        ))
    });
    std::fs::create_dir_all(&out).map_err(|e| CompareError::CreateOut(out.clone(), e))?;
    let markdown = comparison.markdown();
    let files = [
        (out.join("compare.md"), markdown.clone().into_bytes()),
        (out.join("compare.csv"), comparison.rows_csv()),
        (out.join("compare-cases.csv"), comparison.cases_csv()),
        (out.join("compare.json"), comparison.json()),
        (out.join("compare.html"), comparison.html().into_bytes()),
    ];
    for (path, bytes) in &files {
        crate::disk::write_atomic(path, bytes)?;
    }
    if !settings.quiet {
        crate::values::reporter::result(&markdown);
    }
    let paths = files.map(|(path, _)| path).to_vec();
    crate::values::reporter::report_written(&paths);
    crate::report::step_summary::append_step_summary(&markdown);
    Ok(paths)
}

/// The manifest of the run in `run_dir` and its analysis with the run's recorded settings; a
/// run without a recorded trial is refused.
fn analyze(run_dir: &Path) -> Result<(Manifest, Summary), CompareError> {
    let manifest = crate::record::read_manifest(run_dir)?;
    let mut accumulator = crate::analysis::RunAccumulator::new(&manifest);
    let trials = run_dir.join("trials.jsonl");
    crate::record::for_each_planned_trial(&trials, &manifest, |record| {
        accumulator.add(&record);
        Ok(())
    })?;
    let summary = accumulator.finish(&crate::analysis::AnalysisSettings::recorded(&manifest));
    if summary.trials.recorded == 0 {
        return Err(CompareError::NoTrials(run_dir.to_path_buf()));
    }
    Ok((manifest, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn difference(a: f64, b: f64, shown: Shown) -> String {
        number_row(
            "x",
            (String::new(), Some(a)),
            (String::new(), Some(b)),
            shown,
        )
        .difference
    }

    /// The difference is shown to the precision of the values: what rounds to nothing there is
    /// ≈ 0, never +0.0008 beside 0.00 and 0.00.
    #[test]
    fn a_difference_is_shown_as_its_values_are() {
        assert_eq!(difference(0.0012, 0.0020, Shown::Decimals(2)), "≈ 0");
        assert_eq!(difference(0.0012, 0.0312, Shown::Decimals(2)), "+0.03");
        assert_eq!(difference(890.0, 890.4, Shown::Decimals(0)), "≈ 0");
        assert_eq!(difference(890.0, 880.0, Shown::Decimals(0)), "-10");
        assert_eq!(difference(0.01, 0.0125, Shown::Decimals(4)), "+0.0025");
        assert_eq!(difference(0.5, 0.5004, Shown::PercentagePoints), "≈ 0 pp");
        assert_eq!(difference(0.5, 0.25, Shown::PercentagePoints), "-25.0 pp");
        assert_eq!(difference(0.25, 0.25, Shown::Decimals(2)), "same");
        let missing = number_row(
            "x",
            ("n/a".into(), None),
            ("1".into(), Some(1.0)),
            Shown::Decimals(0),
        );
        assert_eq!(missing.difference, "n/a");
    }

    /// Style breaks a tie only between overlapping lift intervals, and only by the margin;
    /// distinguishable lifts show style without using it; a missing score or interval never
    /// breaks a tie.
    #[test]
    fn style_breaks_a_tie_only_between_indistinguishable_lifts() {
        let overlap = (Some((0.05, 0.40)), Some((0.10, 0.45)));
        let tie = tie_break((overlap.0, Some(0.9)), (overlap.1, Some(0.4)));
        assert_eq!(tie.lifts_indistinguishable, Some(true));
        assert_eq!(tie.prefers.as_deref(), Some("A"));
        assert!(
            tie.statement
                .contains("style breaks the tie: A 0.90 vs B 0.40"),
            "{}",
            tie.statement
        );
        let tie = tie_break((overlap.0, Some(0.40)), (overlap.1, Some(0.9)));
        assert_eq!(tie.prefers.as_deref(), Some("B"));
        // Touching intervals overlap.
        let tie = tie_break((Some((0.0, 0.2)), Some(0.2)), (Some((0.2, 0.5)), Some(0.8)));
        assert_eq!(tie.lifts_indistinguishable, Some(true));
        assert_eq!(tie.prefers.as_deref(), Some("B"));
        // Within the margin: no separation.
        let tie = tie_break((overlap.0, Some(0.50)), (overlap.1, Some(0.53)));
        assert_eq!(tie.prefers, None);
        assert!(
            tie.statement.contains("do not separate them either"),
            "{}",
            tie.statement
        );
        // Distinguishable lifts: shown, not used, whatever the scores.
        let tie = tie_break(
            (Some((0.3, 0.6)), Some(1.0)),
            (Some((-0.2, 0.1)), Some(0.0)),
        );
        assert_eq!(tie.lifts_indistinguishable, Some(false));
        assert_eq!(tie.prefers, None);
        assert!(
            tie.statement
                .contains("shown (A 1.00 vs B 0.00) but not used"),
            "{}",
            tie.statement
        );
        // One score or one interval missing.
        let tie = tie_break((overlap.0, Some(1.0)), (overlap.1, None));
        assert_eq!(tie.prefers, None);
        assert!(tie.statement.contains("only one run has a style score"));
        let tie = tie_break((None, Some(1.0)), (overlap.1, Some(0.0)));
        assert_eq!((tie.lifts_indistinguishable, tie.prefers), (None, None));
    }
}
