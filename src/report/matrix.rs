//! The pass-rate matrix of several runs of one asset: rows are fingerprints (in order of first
//! appearance), columns models (sorted), cells the with-skill pass rate with its interval, N and
//! the lift. When two runs fill the same cell, the later run id wins and the cell says how many
//! runs it hid. Rendered as `matrix.json` and as a heat map in `matrix.html`. Pure.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::analysis::Summary;
use crate::report::html::{escape, page_end, page_start};

/// One cell: one (fingerprint, model) pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct MatrixCell {
    pub fingerprint: String,
    pub model: String,
    /// Runner profile of the run.
    pub runner: String,
    /// The column the cell sits in: the model, or `model · runner` when the runs used several
    /// runners (so runs of one model on different runners never hide each other).
    pub column: String,
    pub run_id: String,
    /// With-skill pass rate (fraction) and its 95% interval.
    pub with_skill: Option<f64>,
    pub with_skill_ci_low: Option<f64>,
    pub with_skill_ci_high: Option<f64>,
    /// Baseline pass rate (fraction).
    pub without_skill: Option<f64>,
    /// Paired lift (fraction) and its 95% interval.
    pub lift: Option<f64>,
    pub lift_ci_low: Option<f64>,
    pub lift_ci_high: Option<f64>,
    pub verdict: String,
    pub n_cases: usize,
    pub k: u32,
    /// Other runs for the same cell that this one hides.
    pub hidden_runs: Vec<String>,
}

/// The matrix (`matrix.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PassRateMatrix {
    pub format_version: u32,
    pub asset: String,
    pub fingerprints: Vec<String>,
    pub models: Vec<String>,
    pub cells: Vec<MatrixCell>,
}

/// Build the matrix from runs of one asset (the caller checks they share it).
pub(crate) fn pass_rate_matrix(summaries: &[&Summary]) -> PassRateMatrix {
    let mut fingerprints: Vec<String> = Vec::new();
    let mut cells: BTreeMap<(String, String), MatrixCell> = BTreeMap::new();
    let several_runners = summaries
        .iter()
        .map(|s| &s.runner)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1;
    let mut ordered: Vec<&Summary> = summaries.to_vec();
    ordered.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    for summary in ordered {
        if !fingerprints.contains(&summary.fingerprint) {
            fingerprints.push(summary.fingerprint.clone());
        }
        let column = if several_runners {
            format!("{} · {}", summary.model, summary.runner)
        } else {
            summary.model.clone()
        };
        let key = (summary.fingerprint.clone(), column.clone());
        let hidden = cells
            .remove(&key)
            .map(|old| {
                let mut hidden = old.hidden_runs;
                hidden.push(old.run_id);
                hidden
            })
            .unwrap_or_default();
        let arm = &summary.arms.with_skill;
        cells.insert(
            key,
            MatrixCell {
                fingerprint: summary.fingerprint.clone(),
                model: summary.model.clone(),
                runner: summary.runner.clone(),
                column,
                run_id: summary.run_id.clone(),
                with_skill: arm.pass_rate,
                with_skill_ci_low: arm.ci_low,
                with_skill_ci_high: arm.ci_high,
                without_skill: summary.arms.without_skill.pass_rate,
                lift: summary.lift.estimate,
                lift_ci_low: summary.lift.ci_low,
                lift_ci_high: summary.lift.ci_high,
                verdict: summary.lift.verdict.as_str().to_string(),
                n_cases: summary.lift.n_cases,
                k: summary.lift.k,
                hidden_runs: hidden,
            },
        );
    }
    let mut models: Vec<String> = cells.keys().map(|(_, m)| m.clone()).collect();
    models.sort();
    models.dedup();
    let mut cell_list: Vec<MatrixCell> = Vec::new();
    for fingerprint in &fingerprints {
        for model in &models {
            if let Some(cell) = cells.remove(&(fingerprint.clone(), model.clone())) {
                cell_list.push(cell);
            }
        }
    }
    PassRateMatrix {
        format_version: 1,
        asset: summaries
            .first()
            .map(|s| s.asset.clone())
            .unwrap_or_default(),
        fingerprints,
        models,
        cells: cell_list,
    }
}

/// `matrix.json`.
pub(crate) fn matrix_json(matrix: &PassRateMatrix) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(matrix).expect("matrix serializes");
    bytes.push(b'\n');
    bytes
}

/// Heat-map colour of a pass rate: red (0) through yellow to green (1).
fn heat(rate: f64) -> String {
    let rate = rate.clamp(0.0, 1.0);
    let (r, g, b) = if rate < 0.5 {
        let t = rate / 0.5;
        (248.0, 81.0 + t * (214.0 - 81.0), 73.0 + t * (79.0 - 73.0))
    } else {
        let t = (rate - 0.5) / 0.5;
        (
            248.0 - t * (248.0 - 45.0),
            214.0 - t * (214.0 - 164.0),
            79.0,
        )
    };
    format!("#{:02x}{:02x}{:02x}", r as u8, g as u8, b as u8)
}

fn percent(value: Option<f64>) -> String {
    value
        .map(|v| format!("{:.0}%", v * 100.0))
        .unwrap_or_else(|| "n/a".to_string())
}

/// `matrix.html`: the heat map (rows fingerprints, columns models) with a legend.
pub(crate) fn matrix_html(matrix: &PassRateMatrix) -> String {
    let mut out = String::new();
    page_start(
        &mut out,
        &format!("skill-lift pass-rate matrix: {}", matrix.asset),
    );
    let _ = writeln!(
        out,
        "<h1>Pass-rate matrix: <code>{}</code></h1>\n<p class=\"muted\">Rows: fingerprint; columns: model. Each cell: with-skill pass rate [95% interval], N cases × K, and the paired lift over the baseline.</p>",
        escape(&matrix.asset)
    );
    let (label_w, cell_w, cell_h, top) = (180.0, 210.0, 64.0, 40.0);
    let width = label_w + cell_w * matrix.models.len().max(1) as f64 + 10.0;
    let height = top + cell_h * matrix.fingerprints.len().max(1) as f64 + 10.0;
    let _ = writeln!(
        out,
        "<svg class=\"chart\" id=\"pass-rate-matrix\" role=\"img\" aria-label=\"Pass-rate heat map\" viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" height=\"{height:.0}\">"
    );
    for (column, model) in matrix.models.iter().enumerate() {
        let _ = writeln!(
            out,
            "<text x=\"{:.2}\" y=\"28\" text-anchor=\"middle\">{}</text>",
            label_w + cell_w * column as f64 + cell_w / 2.0,
            escape(model)
        );
    }
    for (row, fingerprint) in matrix.fingerprints.iter().enumerate() {
        let y = top + cell_h * row as f64;
        let _ = writeln!(
            out,
            "<text x=\"8\" y=\"{:.2}\">{}</text>",
            y + cell_h / 2.0 + 4.0,
            escape(fingerprint.get(..19).unwrap_or(fingerprint))
        );
        for (column, model) in matrix.models.iter().enumerate() {
            let x = label_w + cell_w * column as f64;
            let cell = matrix
                .cells
                .iter()
                .find(|c| &c.fingerprint == fingerprint && &c.column == model);
            let Some(cell) = cell else {
                let _ = writeln!(
                    out,
                    "<rect class=\"empty\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"#f6f8fa\" stroke=\"#fff\"/><text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\">not run</text>",
                    cell_w,
                    cell_h,
                    x + cell_w / 2.0,
                    y + cell_h / 2.0 + 4.0
                );
                continue;
            };
            let fill = cell
                .with_skill
                .map(heat)
                .unwrap_or_else(|| "#eaeef2".to_string());
            let lift = cell
                .lift
                .map(|l| format!("lift {:+.1} pp ({})", l * 100.0, cell.verdict))
                .unwrap_or_else(|| "lift n/a".to_string());
            let _ = writeln!(
                out,
                "<g class=\"cell\"><title>{} · {}: run {}{}</title><rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{cell_w:.2}\" height=\"{cell_h:.2}\" fill=\"{fill}\" stroke=\"#fff\" stroke-width=\"2\"/><text x=\"{cx:.2}\" y=\"{:.2}\" text-anchor=\"middle\" font-weight=\"600\">{} [{}, {}]</text><text x=\"{cx:.2}\" y=\"{:.2}\" text-anchor=\"middle\">N = {} × K = {}</text><text x=\"{cx:.2}\" y=\"{:.2}\" text-anchor=\"middle\">{}</text></g>",
                escape(fingerprint),
                escape(model),
                escape(&cell.run_id),
                if cell.hidden_runs.is_empty() {
                    String::new()
                } else {
                    format!(" (hides {})", escape(&cell.hidden_runs.join(", ")))
                },
                y + 20.0,
                percent(cell.with_skill),
                percent(cell.with_skill_ci_low),
                percent(cell.with_skill_ci_high),
                y + 37.0,
                cell.n_cases,
                cell.k,
                y + 54.0,
                escape(&lift),
                cx = x + cell_w / 2.0,
            );
        }
    }
    out.push_str("</svg>\n<h2>Runs</h2>\n<table>\n<thead><tr><th>fingerprint</th><th>model</th><th>run</th><th>with_skill</th><th>without_skill</th><th>lift</th><th>verdict</th></tr></thead>\n<tbody>\n");
    for cell in &matrix.cells {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td><a href=\"{run}/report.html\">{run}</a></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            escape(cell.fingerprint.get(..19).unwrap_or(&cell.fingerprint)),
            escape(&cell.column),
            percent(cell.with_skill),
            percent(cell.without_skill),
            cell.lift
                .map(|l| format!("{:+.1} pp", l * 100.0))
                .unwrap_or_else(|| "n/a".to_string()),
            escape(&cell.verdict),
            run = escape(&cell.run_id),
        );
    }
    out.push_str("</tbody>\n</table>\n");
    page_end(&mut out);
    out
}
