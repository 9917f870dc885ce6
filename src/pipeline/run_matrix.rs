//! Runner × model matrices in one run (`run --runner A --runner B --model X --model Y`): the
//! cells a matrix plans, the matrix folder's manifest (`matrix-manifest.json`), and the matrix
//! report built from each cell's own analysis (`summary.json`, `report.md`, `report.html`,
//! `matrix.csv`).
//!
//! A matrix folder holds one complete run folder per (runner, model) cell under `cells/`, each
//! analyzed on its own with the paired statistics of a single run (its `summary.json` is the
//! cell's analysis); the matrix report only lays the cells side by side. A run with one runner
//! and one model is no matrix: it writes today's run folder.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::analysis::{Summary, Verdict};
use crate::disk::write_atomic;
use crate::record::{Arm, MATRIX_MANIFEST, RecordError};
use crate::report::html::{escape, page_end, page_start};

/// Version of `matrix-manifest.json` and of the matrix `summary.json`.
pub(crate) const MATRIX_FORMAT_VERSION: u32 = 1;
/// The folder of a matrix folder that holds the cells' run folders.
pub(crate) const CELLS_DIR: &str = "cells";

/// Errors reading a matrix folder.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MatrixError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a valid matrix manifest: {message}")]
    BadManifest { path: PathBuf, message: String },
    #[error("{path}: cell `{cell}` is not a folder inside the matrix folder")]
    UnsafeCell { path: PathBuf, cell: String },
}

/// One (runner, model) cell: a complete run folder of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MatrixCell {
    /// The runner profile as given (`--runner`: a name from `runners/` or a `.toml` path).
    pub runner: String,
    /// The model as given (`--model`); absent: the profile's own model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The cell's run id (the matrix run id and the cell's slug): distinct per cell, so each
    /// cell feeds the baseline store under its own run.
    pub run_id: String,
}

impl MatrixCell {
    /// The cell's run folder, relative to the matrix folder.
    pub(crate) fn relative_dir(&self) -> PathBuf {
        Path::new(CELLS_DIR).join(&self.run_id)
    }

    /// The cell's run folder inside `matrix_dir`.
    pub(crate) fn dir(&self, matrix_dir: &Path) -> PathBuf {
        matrix_dir.join(self.relative_dir())
    }

    /// `runner · model` for messages (the model as given, or `profile model`).
    pub(crate) fn label(&self) -> String {
        format!(
            "{} · {}",
            self.runner,
            self.model.as_deref().unwrap_or("profile model")
        )
    }
}

/// `matrix-manifest.json`: what a matrix run planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MatrixManifest {
    pub format_version: u32,
    pub run_id: String,
    pub created_at: DateTime<Utc>,
    /// The skill's name.
    pub asset: String,
    /// Cells in plan order: runners in flag order, each with the models in flag order.
    pub cells: Vec<MatrixCell>,
}

/// A path-safe slug of `text`: ASCII letters, digits, `.`, `_` and `-` kept, anything else `-`.
fn slug(text: &str) -> String {
    let stem = Path::new(text)
        .file_stem()
        .filter(|_| text.ends_with(".toml"))
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| text.to_string());
    let slug: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let slug = slug.trim_start_matches('.').to_string();
    if slug.is_empty() {
        "x".to_string()
    } else {
        slug
    }
}

/// Whether `runners` × `models` make more than one cell.
pub(crate) fn is_matrix(runners: &[String], models: &[String]) -> bool {
    plan_cells("", runners, models).len() > 1
}

/// The cells of `runners` × `models` (`models` empty: each runner's profile model), runner
/// major, flag order, duplicates dropped. Each cell's run id is `RUN_ID--RUNNER--MODEL` (slugs;
/// a number appended when two cells would share one).
pub(crate) fn plan_cells(run_id: &str, runners: &[String], models: &[String]) -> Vec<MatrixCell> {
    let mut cells: Vec<MatrixCell> = Vec::new();
    let models: Vec<Option<&String>> = if models.is_empty() {
        vec![None]
    } else {
        models.iter().map(Some).collect()
    };
    for runner in runners {
        for model in &models {
            if cells
                .iter()
                .any(|c| &c.runner == runner && c.model.as_ref() == *model)
            {
                continue;
            }
            let mut id = format!("{run_id}--{}", slug(runner));
            if let Some(model) = model {
                id.push_str("--");
                id.push_str(&slug(model));
            }
            let base = id.clone();
            let mut n = 2;
            while cells.iter().any(|c| c.run_id == id) {
                id = format!("{base}-{n}");
                n += 1;
            }
            cells.push(MatrixCell {
                runner: runner.clone(),
                model: model.cloned(),
                run_id: id,
            });
        }
    }
    cells
}

/// Read `matrix-manifest.json` of `dir`; cells whose folder would leave `dir` are refused.
pub(crate) fn read_matrix_manifest(dir: &Path) -> Result<MatrixManifest, MatrixError> {
    let path = dir.join(MATRIX_MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(|source| MatrixError::Io {
        path: path.clone(),
        source,
    })?;
    let manifest: MatrixManifest =
        serde_json::from_str(&text).map_err(|e| MatrixError::BadManifest {
            path: path.clone(),
            message: e.to_string(),
        })?;
    if manifest.format_version > MATRIX_FORMAT_VERSION {
        return Err(MatrixError::BadManifest {
            path,
            message: format!(
                "format_version {} is newer than this skill-lift reads ({MATRIX_FORMAT_VERSION})",
                manifest.format_version
            ),
        });
    }
    for cell in &manifest.cells {
        let plain = !cell.run_id.is_empty()
            && !cell.run_id.starts_with('.')
            && !cell.run_id.contains(['/', '\\']);
        if !plain {
            return Err(MatrixError::UnsafeCell {
                path: path.clone(),
                cell: cell.run_id.clone(),
            });
        }
    }
    Ok(manifest)
}

/// Write `matrix-manifest.json` into `dir` atomically.
pub(crate) fn write_matrix_manifest(
    dir: &Path,
    manifest: &MatrixManifest,
) -> Result<(), RecordError> {
    let bytes = serde_json::to_vec_pretty(manifest).expect("matrix manifest serializes");
    Ok(write_atomic(&dir.join(MATRIX_MANIFEST), &bytes)?)
}

/// A rate or a lift with its 95% interval (fractions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Interval {
    pub estimate: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// One arm compared with the cell's reference arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CellComparison {
    pub arm: Arm,
    pub reference: Arm,
    pub lift: Interval,
    pub verdict: Verdict,
}

/// One cell of the matrix report: its level without the skill, with it, and the lift.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CellSummary {
    /// The runner profile's name.
    pub runner: String,
    pub runner_kind: String,
    /// The model the cell ran.
    pub model: String,
    pub run_id: String,
    /// The cell's run folder, relative to the matrix folder.
    pub dir: PathBuf,
    pub k: u32,
    /// Cases scored in both paired arms.
    pub n_cases: usize,
    pub trials_recorded: usize,
    pub trials_planned: usize,
    pub unscoreable: usize,
    /// `without_skill` pass rate: the baseline level.
    pub baseline: Interval,
    /// `with_skill` pass rate.
    pub with_skill: Interval,
    /// Paired lift of `with_skill` over `without_skill`.
    pub lift: Interval,
    pub verdict: Verdict,
    pub p_value: Option<f64>,
    /// The other comparisons of the cell (runs with more arms or `--reference`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<CellComparison>,
}

/// The matrix `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MatrixSummary {
    /// Always `matrix` (a run's `summary.json` has no `kind`).
    pub kind: String,
    pub format_version: u32,
    pub run_id: String,
    pub asset: String,
    pub fingerprint: String,
    /// Cells in the manifest's order.
    pub cells: Vec<CellSummary>,
}

impl MatrixSummary {
    /// Every cell's other comparisons, with their cell, in cell order.
    fn comparisons(&self) -> Vec<(&CellSummary, &CellComparison)> {
        self.cells
            .iter()
            .flat_map(|cell| cell.comparisons.iter().map(move |c| (cell, c)))
            .collect()
    }
}

fn interval(estimate: Option<f64>, ci_low: Option<f64>, ci_high: Option<f64>) -> Interval {
    Interval {
        estimate,
        ci_low,
        ci_high,
    }
}

/// The matrix summary of `manifest` from each cell's analysis (in manifest order).
pub(crate) fn matrix_summary(
    manifest: &MatrixManifest,
    cells: &[(MatrixCell, Summary)],
) -> MatrixSummary {
    let fingerprint = cells
        .first()
        .map(|(_, s)| s.fingerprint.clone())
        .unwrap_or_default();
    MatrixSummary {
        kind: "matrix".to_string(),
        format_version: MATRIX_FORMAT_VERSION,
        run_id: manifest.run_id.clone(),
        asset: manifest.asset.clone(),
        fingerprint,
        cells: cells
            .iter()
            .map(|(cell, summary)| {
                let with = &summary.arms.with_skill;
                let without = &summary.arms.without_skill;
                CellSummary {
                    runner: summary.runner.clone(),
                    runner_kind: summary.runner_kind.clone(),
                    model: summary.model.clone(),
                    run_id: summary.run_id.clone(),
                    dir: cell.relative_dir(),
                    k: summary.k,
                    n_cases: summary.lift.n_cases,
                    trials_recorded: summary.trials.recorded,
                    trials_planned: summary.trials.planned,
                    unscoreable: summary.trials.outcomes.unscoreable,
                    baseline: interval(without.pass_rate, without.ci_low, without.ci_high),
                    with_skill: interval(with.pass_rate, with.ci_low, with.ci_high),
                    lift: interval(
                        summary.lift.estimate,
                        summary.lift.ci_low,
                        summary.lift.ci_high,
                    ),
                    verdict: summary.lift.verdict,
                    p_value: summary.lift.p_value,
                    comparisons: summary
                        .comparisons
                        .iter()
                        .map(|c| CellComparison {
                            arm: c.arm,
                            reference: c.reference,
                            lift: interval(c.lift.estimate, c.lift.ci_low, c.lift.ci_high),
                            verdict: c.lift.verdict,
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}

fn percent(value: Option<f64>) -> String {
    value.map_or("n/a".to_string(), |v| format!("{:.1}%", v * 100.0))
}

fn points(value: Option<f64>) -> String {
    value.map_or("n/a".to_string(), |v| format!("{:+.1} pp", v * 100.0))
}

/// `estimate [low, high]` in `unit` (the estimate alone without an interval).
fn with_interval(i: &Interval, unit: fn(Option<f64>) -> String) -> String {
    match (i.ci_low, i.ci_high) {
        (Some(low), Some(high)) => format!(
            "{} [{}, {}]",
            unit(i.estimate),
            unit(Some(low)),
            unit(Some(high))
        ),
        _ => unit(i.estimate),
    }
}

fn rate_with_interval(i: &Interval) -> String {
    with_interval(i, percent)
}

fn lift_with_interval(i: &Interval) -> String {
    with_interval(i, points)
}

/// The matrix report as Markdown: one row per cell.
pub(crate) fn matrix_markdown(summary: &MatrixSummary) -> String {
    let mut out = format!(
        "# skill-lift matrix: {} ({})\n\nRun `{}`: {} runner × model cells, each analyzed on its own (paired statistics of a single run; its folder holds its full report). Intervals are 95%.\n\n",
        summary.asset,
        summary.fingerprint,
        summary.run_id,
        summary.cells.len()
    );
    out.push_str("| Runner | Model | Baseline (without_skill) | With skill | Lift | Verdict | Cases | Trials |\n|---|---|---|---|---|---|---|---|\n");
    for cell in &summary.cells {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {}/{} |",
            cell.runner,
            cell.model,
            rate_with_interval(&cell.baseline),
            rate_with_interval(&cell.with_skill),
            lift_with_interval(&cell.lift),
            cell.verdict.as_str(),
            cell.n_cases,
            cell.trials_recorded,
            cell.trials_planned
        );
    }
    let comparisons = summary.comparisons();
    if !comparisons.is_empty() {
        out.push_str("\n## Comparisons per cell\n\n| Runner | Model | Arm | Reference | Lift | Verdict |\n|---|---|---|---|---|---|\n");
        for (cell, c) in comparisons {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                cell.runner,
                cell.model,
                c.arm,
                c.reference,
                lift_with_interval(&c.lift),
                c.verdict.as_str()
            );
        }
    }
    out.push_str("\nEach cell's report: `cells/<run id>/report.md`.\n");
    out
}

/// The matrix report as a standalone HTML page.
pub(crate) fn matrix_html(summary: &MatrixSummary) -> String {
    let mut out = String::new();
    page_start(&mut out, &format!("skill-lift matrix: {}", summary.asset));
    let _ = write!(
        out,
        "<h1>skill-lift matrix: {}</h1>\n<p>Run <code>{}</code>, fingerprint <code>{}</code>: {} runner × model cells, each analyzed on its own. Intervals are 95%.</p>\n<table>\n<thead><tr><th>Runner</th><th>Model</th><th>Baseline (without_skill)</th><th>With skill</th><th>Lift</th><th>Verdict</th><th>Cases</th><th>Trials</th><th>Report</th></tr></thead>\n<tbody>\n",
        escape(&summary.asset),
        escape(&summary.run_id),
        escape(&summary.fingerprint),
        summary.cells.len()
    );
    for cell in &summary.cells {
        let report = format!("{}/report.html", cell.dir.display());
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td><a href=\"{}\">report</a></td></tr>",
            escape(&cell.runner),
            escape(&cell.model),
            escape(&rate_with_interval(&cell.baseline)),
            escape(&rate_with_interval(&cell.with_skill)),
            escape(&lift_with_interval(&cell.lift)),
            escape(cell.verdict.as_str()),
            cell.n_cases,
            cell.trials_recorded,
            cell.trials_planned,
            escape(&report)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    let comparisons = summary.comparisons();
    if !comparisons.is_empty() {
        out.push_str("<h2>Comparisons per cell</h2>\n<table>\n<thead><tr><th>Runner</th><th>Model</th><th>Arm</th><th>Reference</th><th>Lift</th><th>Verdict</th></tr></thead>\n<tbody>\n");
        for (cell, c) in comparisons {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&cell.runner),
                escape(&cell.model),
                c.arm,
                c.reference,
                escape(&lift_with_interval(&c.lift)),
                escape(c.verdict.as_str())
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }
    page_end(&mut out);
    out
}

/// The matrix as CSV: one row per cell and comparison (`arm`, `reference`), the paired
/// `with_skill` / `without_skill` row first; rates in percent (`_pct`) and lifts in percentage
/// points (`_pp`), six decimals, as every CSV export (docs/report-formats.md).
pub(crate) fn matrix_csv(summary: &MatrixSummary) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let number = |v: Option<f64>| v.map(|v| format!("{:.6}", v * 100.0)).unwrap_or_default();
    writer
        .write_record([
            "runner",
            "model",
            "run_id",
            "arm",
            "reference",
            "baseline_pct",
            "baseline_ci_low_pct",
            "baseline_ci_high_pct",
            "with_skill_pct",
            "with_skill_ci_low_pct",
            "with_skill_ci_high_pct",
            "lift_pp",
            "lift_ci_low_pp",
            "lift_ci_high_pp",
            "verdict",
            "n_cases",
            "k",
            "trials_recorded",
            "trials_planned",
        ])
        .expect("writing to memory");
    for cell in &summary.cells {
        let rows = std::iter::once((Arm::WithSkill, Arm::WithoutSkill, &cell.lift, cell.verdict))
            .chain(
                cell.comparisons
                    .iter()
                    .filter(|c| !(c.arm == Arm::WithSkill && c.reference == Arm::WithoutSkill))
                    .map(|c| (c.arm, c.reference, &c.lift, c.verdict)),
            );
        for (arm, reference, lift, verdict) in rows {
            writer
                .write_record([
                    cell.runner.clone(),
                    cell.model.clone(),
                    cell.run_id.clone(),
                    arm.to_string(),
                    reference.to_string(),
                    number(cell.baseline.estimate),
                    number(cell.baseline.ci_low),
                    number(cell.baseline.ci_high),
                    number(cell.with_skill.estimate),
                    number(cell.with_skill.ci_low),
                    number(cell.with_skill.ci_high),
                    number(lift.estimate),
                    number(lift.ci_low),
                    number(lift.ci_high),
                    verdict.as_str().to_string(),
                    cell.n_cases.to_string(),
                    cell.k.to_string(),
                    cell.trials_recorded.to_string(),
                    cell.trials_planned.to_string(),
                ])
                .expect("writing to memory");
        }
    }
    writer.into_inner().expect("flushing to memory")
}

/// Write the matrix exports (`summary.json`, `report.md`, `report.html`, `matrix.csv`) into
/// `dir`, atomically; returns the paths written.
pub(crate) fn write_matrix_exports(
    dir: &Path,
    summary: &MatrixSummary,
) -> Result<Vec<PathBuf>, RecordError> {
    let files = [
        (
            dir.join("summary.json"),
            serde_json::to_vec_pretty(summary).expect("matrix summary serializes"),
        ),
        (dir.join("report.md"), matrix_markdown(summary).into_bytes()),
        (dir.join("report.html"), matrix_html(summary).into_bytes()),
        (dir.join("matrix.csv"), matrix_csv(summary)),
    ];
    let mut written = Vec::new();
    for (path, bytes) in files {
        write_atomic(&path, &bytes)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    #[test]
    fn cells_are_runner_major_with_distinct_run_ids() {
        let cells = plan_cells(
            "r1",
            &strings(&["mock", "runners/other.toml"]),
            &strings(&["gpt-4o", "org/model:7b"]),
        );
        let ids: Vec<&str> = cells.iter().map(|c| c.run_id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "r1--mock--gpt-4o",
                "r1--mock--org-model-7b",
                "r1--other--gpt-4o",
                "r1--other--org-model-7b"
            ]
        );
        assert_eq!(cells[3].runner, "runners/other.toml");
        assert_eq!(cells[3].model.as_deref(), Some("org/model:7b"));
        assert_eq!(cells[0].relative_dir(), Path::new("cells/r1--mock--gpt-4o"));
    }

    #[test]
    fn no_models_means_the_profile_model_and_duplicates_collapse() {
        let cells = plan_cells("r", &strings(&["a", "a", "b"]), &[]);
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[0].model, None);
        assert_eq!(cells[1].run_id, "r--b");
        // Two slugs that collide get a number.
        let cells = plan_cells("r", &strings(&["x"]), &strings(&["m/1", "m:1"]));
        assert_eq!(cells[0].run_id, "r--x--m-1");
        assert_eq!(cells[1].run_id, "r--x--m-1-2");
    }

    #[test]
    fn a_manifest_with_a_cell_outside_the_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = MatrixManifest {
            format_version: MATRIX_FORMAT_VERSION,
            run_id: "r".into(),
            created_at: Utc::now(),
            asset: "s".into(),
            cells: vec![MatrixCell {
                runner: "a".into(),
                model: None,
                run_id: "../escape".into(),
            }],
        };
        write_matrix_manifest(dir.path(), &manifest).unwrap();
        let error = read_matrix_manifest(dir.path()).unwrap_err();
        assert!(error.to_string().contains("../escape"), "{error}");
        std::fs::write(dir.path().join(MATRIX_MANIFEST), "{").unwrap();
        let error = read_matrix_manifest(dir.path()).unwrap_err();
        assert!(
            error.to_string().contains("matrix-manifest.json"),
            "{error}"
        );
    }
}
