//! Build script: compiles every shipped runner profile (`runners/*.toml`) into the binary, so a
//! `cargo install`ed or copied skill-lift finds `local`, `openai`, the agent CLIs … from any
//! folder (`crate::features::runner::builtin`). A profile added to `runners/` is built in without a code
//! change.
#![allow(clippy::disallowed_methods)]
// the build script writes its generated code

// Cargo reads its instructions from the build script's stdout (not skill-lift's terminal).
#![allow(clippy::disallowed_macros)]

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let runners = Path::new(&manifest_dir).join("runners");
    println!("cargo:rerun-if-changed={}", runners.display());
    let mut entries: Vec<(String, String)> = std::fs::read_dir(&runners)
        .unwrap_or_else(|error| panic!("{}: {error}", runners.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .filter_map(|path| {
            let name = path.file_stem()?.to_str()?.to_string();
            Some((name, path.to_str()?.to_string()))
        })
        .collect();
    entries.sort();
    let mut code = String::from(
        "/// The shipped runner profiles: (name, TOML text), by name.\npub const BUILTIN_PROFILES: &[(&str, &str)] = &[\n",
    );
    for (name, path) in &entries {
        writeln!(code, "    ({name:?}, include_str!({path:?})),").expect("writing to a String");
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("builtin_runners.rs");
    std::fs::write(&out, code).unwrap_or_else(|error| panic!("{}: {error}", out.display()));
}
