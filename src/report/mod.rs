//! Exporters: pure functions from an analyzed run (and its records) to bytes, one module per
//! format. [`export_run`] streams `trials.jsonl` once — feeding the analysis accumulator and
//! writing `trials.csv` row by row — so exporting a run of millions of trials holds only
//! per-case counters in memory; every file is written atomically (temporary file + rename).

pub mod csv_export;
pub mod markdown;

use std::io::Write;
use std::path::Path;

use crate::analysis::{AnalysisSettings, RunAccumulator, Summary};
use crate::record::{Manifest, RecordError, for_each_trial, write_atomic};

/// `summary.json`: the [`Summary`], pretty-printed, with a trailing newline.
pub fn summary_json(summary: &Summary) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(summary).expect("summary serializes");
    bytes.push(b'\n');
    bytes
}

/// Analyze the run in `run_dir` and write `summary.json`, `trials.csv`, `cases.csv` and
/// `report.md` into it. Returns the summary.
pub fn export_run(
    run_dir: &Path,
    manifest: &Manifest,
    settings: &AnalysisSettings,
) -> Result<Summary, RecordError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source: std::io::Error| RecordError::Io { path, source }
    };
    let trials_csv_path = run_dir.join("trials.csv");
    let temp = tempfile::NamedTempFile::new_in(run_dir).map_err(io(run_dir))?;
    let mut writer =
        csv_export::TrialsCsvWriter::new(std::io::BufWriter::with_capacity(1 << 20, temp));
    let mut accumulator = RunAccumulator::new(manifest);
    for_each_trial(&run_dir.join("trials.jsonl"), |record| {
        accumulator.add(&record);
        writer.write(&record).map_err(io(&trials_csv_path))
    })?;
    let buffered = writer.into_inner().map_err(io(&trials_csv_path))?;
    let temp = buffered
        .into_inner()
        .map_err(|e| io(&trials_csv_path)(e.into_error()))?;
    temp.as_file().sync_data().map_err(io(&trials_csv_path))?;
    temp.persist(&trials_csv_path)
        .map_err(|e| io(&trials_csv_path)(e.error))?;
    let summary = accumulator.finish(settings);
    write_atomic(&run_dir.join("summary.json"), &summary_json(&summary))?;
    write_atomic(&run_dir.join("cases.csv"), &csv_export::cases_csv(&summary))?;
    let markdown = markdown::summary_markdown(&summary);
    write_atomic(&run_dir.join("report.md"), markdown.as_bytes())?;
    if let Some(step_summary) = std::env::var_os("GITHUB_STEP_SUMMARY") {
        // GitHub Actions job summary: append, as the runner expects.
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&step_summary)
        {
            let _ = file.write_all(markdown.as_bytes());
        }
    }
    Ok(summary)
}
