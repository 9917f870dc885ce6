//! Exporters: pure functions from an analyzed run (and its records) to bytes, one module per
//! format. Writing files is the caller's job ([`write_exports`] writes them atomically).

pub mod csv_export;
pub mod markdown;

use std::path::Path;

use crate::analysis::Summary;
use crate::record::{RecordError, TrialRecord, write_atomic};

/// `summary.json`: the [`Summary`], pretty-printed, with a trailing newline.
pub fn summary_json(summary: &Summary) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(summary).expect("summary serializes");
    bytes.push(b'\n');
    bytes
}

/// Write `summary.json`, `trials.csv`, `cases.csv` and `report.md` into `run_dir`, each
/// atomically (temporary file + rename), so a crash never leaves a half-written export.
pub fn write_exports(
    run_dir: &Path,
    summary: &Summary,
    records: &[TrialRecord],
) -> Result<(), RecordError> {
    write_atomic(&run_dir.join("summary.json"), &summary_json(summary))?;
    write_atomic(
        &run_dir.join("trials.csv"),
        &csv_export::trials_csv(records),
    )?;
    write_atomic(&run_dir.join("cases.csv"), &csv_export::cases_csv(summary))?;
    write_atomic(
        &run_dir.join("report.md"),
        markdown::summary_markdown(summary).as_bytes(),
    )?;
    Ok(())
}
