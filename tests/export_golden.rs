//! Exports of recorded run folders are byte-identical across refactors.
//!
//! `tests/fixtures/export-golden/<kind>/run/` holds run folders of every kind (a single run, a
//! sequential run, a model matrix, one repeat of `calibrate`, a `regrade` and a `merge` of two
//! shards) as recorded by `skill-lift` against the scripted mock server, keeping only what a run
//! records (`manifest.json`, `trials.jsonl`, `matrix-manifest.json`). The test re-exports each with
//! `skill-lift report --format all` and compares every file written with
//! `tests/fixtures/export-golden/<kind>/expected/`: small files byte for byte, rendered transcript
//! pages by SHA-256 (`expected/transcripts.sha256`).
//!
//! The expected files were written by the build before the architecture refactor (issue 33). A
//! change to an export format is a deliberate product change: regenerate them with
//! `SKILL_LIFT_UPDATE_GOLDEN=1 cargo test --test export_golden` and review the diff.
#![allow(clippy::disallowed_methods)] // tests write their fixtures directly, not through src/disk/

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The recorded kinds, each a folder under `tests/fixtures/export-golden/`.
const KINDS: &[&str] = &[
    "single",
    "seq",
    "matrix",
    "calibrate-repeat",
    "regraded",
    "merged",
];

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/export-golden")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file under `dir`, by path relative to `dir` (with `/` separators).
fn files_under(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path
                    .strip_prefix(dir)
                    .unwrap()
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                files.insert(relative, path);
            }
        }
    }
    files
}

/// Rendered transcript pages are compared by digest: they are many and large.
fn is_transcript_page(relative: &str) -> bool {
    relative.split('/').any(|part| part == "transcripts")
}

/// Export one kind into a fresh folder; returns the export folder (kept alive by `scratch`).
fn export(kind: &str, scratch: &Path) -> PathBuf {
    let runs = scratch.join("runs");
    copy_tree(&golden_root().join(kind).join("run"), &runs.join(kind));
    let out = format!("out/{kind}");
    let output = Command::new(env!("CARGO_BIN_EXE_skill-lift"))
        .current_dir(scratch)
        .env_remove("SKILL_LIFT_RUNNER")
        .env_remove("SKILL_LIFT_RESULTS")
        .env("SKILL_LIFT_HOME", scratch.join("state"))
        .env("CI", "true")
        .env("NO_COLOR", "1")
        .args(["report", &format!("runs/{kind}"), "--format", "all"])
        .args(["--out", &out, "--quiet"])
        .output()
        .unwrap();
    assert!(
        output.status.code().is_some(),
        "{kind}: report was killed: {output:?}"
    );
    let exported = scratch.join(&out);
    assert!(
        exported.is_dir(),
        "{kind}: report wrote nothing: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    exported
}

fn digest(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    format!("{:x}", Sha256::digest(bytes))
}

#[test]
fn exports_of_recorded_runs_are_unchanged() {
    let update = std::env::var_os("SKILL_LIFT_UPDATE_GOLDEN").is_some();
    let mut differences = Vec::new();
    for kind in KINDS {
        let scratch = tempfile::tempdir().unwrap();
        let exported = export(kind, scratch.path());
        let expected_dir = golden_root().join(kind).join("expected");
        let written = files_under(&exported);
        let mut pages = String::new();
        let mut plain = BTreeMap::new();
        for (relative, path) in &written {
            if is_transcript_page(relative) {
                pages.push_str(&format!("{}  {relative}\n", digest(path)));
            } else {
                plain.insert(relative.clone(), path.clone());
            }
        }
        if update {
            let _ = std::fs::remove_dir_all(&expected_dir);
            for (relative, path) in &plain {
                let target = expected_dir.join(relative);
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::copy(path, target).unwrap();
            }
            std::fs::write(expected_dir.join("transcripts.sha256"), &pages).unwrap();
            continue;
        }
        let mut expected = files_under(&expected_dir);
        let expected_pages = expected
            .remove("transcripts.sha256")
            .map(|path| std::fs::read_to_string(path).unwrap())
            .unwrap_or_default();
        if expected_pages != pages {
            differences.push(format!("{kind}: rendered transcript pages differ"));
        }
        for relative in expected.keys() {
            if !plain.contains_key(relative) {
                differences.push(format!("{kind}: {relative} is no longer written"));
            }
        }
        for (relative, path) in &plain {
            match expected.get(relative) {
                None => differences.push(format!("{kind}: {relative} is newly written")),
                Some(want) => {
                    if std::fs::read(want).unwrap() != std::fs::read(path).unwrap() {
                        differences.push(format!(
                            "{kind}: {relative} differs (compare {} with {})",
                            want.display(),
                            path.display()
                        ));
                    }
                }
            }
        }
        if !differences.is_empty() {
            // Keep the scratch folder so the differing exports can be inspected.
            let kept = scratch.keep();
            differences.push(format!("{kind}: exports kept in {}", kept.display()));
        }
    }
    assert!(
        differences.is_empty(),
        "exports changed:\n{}",
        differences.join("\n")
    );
}
