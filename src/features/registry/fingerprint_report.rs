//! The standalone fingerprint report: `fingerprint-report.json` and `fingerprint-report.md` for
//! any paths, computed by `crate::features::asset::fingerprint` (the same code as `scan` and `run`). It
//! never reads or writes a registry.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::RegistryError;
use super::state::write_json;
use crate::features::asset::fingerprint::{Calibre, fingerprint};

/// One fingerprinted path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportEntry {
    pub path: PathBuf,
    /// Folder name.
    pub name: String,
    pub fingerprint: String,
    pub calibre: Calibre,
    pub files: Vec<String>,
    pub bytes: u64,
}

/// `fingerprint-report.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FingerprintReport {
    pub created_at: DateTime<Utc>,
    pub calibre: Calibre,
    pub entries: Vec<ReportEntry>,
    pub note: String,
}

/// Fingerprint each path (a folder) under `calibre`.
pub fn build(paths: &[PathBuf], calibre: Calibre) -> Result<FingerprintReport, RegistryError> {
    let mut entries = Vec::new();
    for path in paths {
        if !path.is_dir() {
            return Err(RegistryError::Invalid {
                path: path.clone(),
                message: "not a folder (fingerprints are of asset folders)".to_string(),
            });
        }
        let print = fingerprint(path, calibre)?;
        let name = path
            .canonicalize()
            .unwrap_or_else(|_| path.clone())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        entries.push(ReportEntry {
            path: path.clone(),
            name,
            fingerprint: print.digest,
            calibre,
            files: print.files,
            bytes: print.bytes,
        });
    }
    Ok(FingerprintReport {
        created_at: Utc::now(),
        calibre,
        entries,
        note: "standalone report; the registry was not read or written".to_string(),
    })
}

/// The Markdown rendering.
pub fn to_markdown(report: &FingerprintReport) -> String {
    let mut out = format!(
        "# Fingerprint report\n\ncalibre `{}`, {} path(s), {}\n\n| asset | fingerprint | files | bytes |\n|---|---|---|---|\n",
        report.calibre,
        report.entries.len(),
        report.note
    );
    for entry in &report.entries {
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            entry.name,
            entry.fingerprint,
            entry.files.len(),
            entry.bytes
        ));
    }
    for entry in &report.entries {
        out.push_str(&format!(
            "\n## {}\n\n`{}`\n\n",
            entry.name,
            entry.path.display()
        ));
        for file in &entry.files {
            out.push_str(&format!("- {file}\n"));
        }
    }
    out
}

/// Write both files into `out_dir` atomically; returns their paths.
pub fn write(report: &FingerprintReport, out_dir: &Path) -> Result<[PathBuf; 2], RegistryError> {
    let json = out_dir.join("fingerprint-report.json");
    let markdown = out_dir.join("fingerprint-report.md");
    write_json(&json, report)?;
    crate::disk::write_atomic(&markdown, to_markdown(report).as_bytes()).map_err(|error| {
        RegistryError::Invalid {
            path: markdown.clone(),
            message: error.to_string(),
        }
    })?;
    Ok([json, markdown])
}

/// Run `skill-lift fingerprint`: build the report of `paths`, write both files into `out_dir`
/// and print one line per asset (fingerprint, path, files, bytes) and the files written.
pub fn fingerprint_command(
    paths: &[PathBuf],
    calibre: Calibre,
    out_dir: &Path,
) -> Result<FingerprintReport, RegistryError> {
    let report = build(paths, calibre)?;
    let [json, markdown] = write(&report, out_dir)?;
    let mut text = String::new();
    for entry in &report.entries {
        text.push_str(&format!(
            "{}  {}  ({} files, {} bytes)\n",
            entry.fingerprint,
            entry.path.display(),
            entry.files.len(),
            entry.bytes
        ));
    }
    text.push_str(&format!(
        "wrote {} and {} (registry untouched)\n",
        json.display(),
        markdown.display()
    ));
    crate::values::reporter::result(&text);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_matches_the_fingerprint_module_and_writes_two_files() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("s");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(skill.join("SKILL.md"), "abc").unwrap();
        let report = build(std::slice::from_ref(&skill), Calibre::V3AgentSkills).unwrap();
        assert_eq!(
            report.entries[0].fingerprint,
            fingerprint(&skill, Calibre::V3AgentSkills).unwrap().digest
        );
        let [json, md] = write(&report, dir.path()).unwrap();
        assert!(json.is_file() && md.is_file());
        assert!(build(&[dir.path().join("missing")], Calibre::V3AgentSkills).is_err());
    }
}
