//! One reporter owns the terminal: no other module prints, the command line (`src/cli/`,
//! `src/main.rs`) included. Reads every file under `src/` and fails on a print macro (`outln!`,
//! `out!`, `errln!`, `errout!`, and the standard ones clippy refuses anyway) outside the modules
//! allowed to print: the reporter (`src/values/reporter.rs`), the terminal writer that defines
//! the macros (`src/disk/terminal.rs`), the progress display (`src/report/progress.rs`) and the
//! attempt supervisor, a process of its own (`src/features/contain.rs`). The rest of the disk
//! layer (`src/disk/`) does not print either: the logs it cannot redact go back to
//! `crate::record`, which reports them. Unit tests (after `#[cfg(test)]`, or in `tests.rs` /
//! `*_tests.rs` files) may print.

use std::path::{Path, PathBuf};

const ALLOWED: &[&str] = &[
    "src/values/reporter.rs",
    "src/disk/terminal.rs",
    "src/report/progress.rs",
    "src/features/contain.rs",
];

const MACROS: &[&str] = &[
    "outln!",
    "out!",
    "errln!",
    "errout!",
    "println!",
    "eprintln!",
    "print!",
    "eprint!",
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Whether `line` calls `name` (not as part of a longer identifier, not in a comment).
fn calls(line: &str, name: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn no_module_but_the_reporter_prints_not_even_the_command_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut offending = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let name = file.file_name().unwrap().to_string_lossy();
        if ALLOWED.contains(&relative.as_str()) || name == "tests.rs" || name.ends_with("_tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if line.contains("macro_rules!") {
                continue;
            }
            if let Some(found) = MACROS.iter().find(|m| calls(line, m)) {
                offending.push(format!(
                    "{relative}:{}: {found} {}",
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        offending.is_empty(),
        "print macros outside the reporter (report a crate::values::reporter::Event instead):\n{}",
        offending.join("\n")
    );
}
