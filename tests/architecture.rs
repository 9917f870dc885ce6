//! The crate's layers, checked from its source: every `use crate::…` / `use super::…` line and
//! every `crate::x::…` path in `src/**/*.rs` (test modules left out) is an import of one file by
//! another; each file sits in the folder of one layer of [`LAYERS`] (`src/<layer>/`), and
//!
//! - no import may run from a lower layer to a higher one (imports inside a layer and downward are
//!   free);
//! - no import cycle (strongly connected component of the file graph) may hold more than
//!   [`MAX_CYCLE_FILES`] files.
//!
//! A failure prints the offending edges (`from.rs -> to.rs`). `docs/architecture.md` explains
//! the layers and where new code goes. The reader is a small lexer, not a Rust parser: comments,
//! strings and character literals are blanked before the paths are read, and `#[cfg(test)]`
//! modules are dropped. Calls of methods whose `impl` block lives in another module are not
//! imports and are not seen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers from the bottom up. Each layer is a folder of `src/` (`src/NAME/`, with
/// `src/NAME.rs` allowed beside it as the layer's own module file) and the module of that name;
/// a module may import its own layer and the layers below it.
const LAYERS: &[&str] = &[
    // The boundary to the outside: files (redaction, atomic writes, modes) and the terminal.
    "disk",
    // Value types and tiny mechanics that many layers share and that import only the disk; the
    // reporter, which turns the library's events into terminal lines, sits here so that every
    // layer above can report to it.
    "values",
    // The run-folder schema (manifest.json, trials.jsonl) and its readers and writers.
    "record",
    // Statistics, the analysis of a recorded run, and the seeded skill order it recomputes.
    "analysis",
    // What skill-lift measures and how: assets, eval sets, workspaces, runners, graders, the
    // run's features (calibration, baseline reuse, shards) and the registry and history.
    "features",
    // What a person or a dashboard reads: reports, exports, comparisons, progress.
    "report",
    // A run's lifecycle and the workflows over runs: scheduling trials and rounds, a run's
    // stages, matrices of runs, planning and projecting a run, vet.
    "pipeline", // The command line: flags to settings, outcomes to exit codes.
    "cli",
];

/// Files of `src/` that sit outside the layer folders: the crate root, the binary's entry and
/// the unit tests' shared helpers.
const OUTSIDE_LAYERS: &[&str] = &["lib.rs", "main.rs", "test_support.rs"];

/// The largest import cycle allowed, in files.
const MAX_CYCLE_FILES: usize = 5;

/// One source file: its path under `src/` and its module path (`["record", "view"]`).
struct SourceFile {
    rel: String,
    module: Vec<String>,
    text: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

fn module_path(rel: &str) -> Vec<String> {
    let stem = rel.strip_suffix(".rs").expect(".rs file");
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    }
    parts
}

/// Blank comments, string literals and character literals, keeping everything else (and the
/// line structure) so that paths are read from code only.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            continue;
        }
        // Raw strings r"…", r#"…"#, br"…".
        if (b[i] == b'r' || (b[i] == b'b' && b.get(i + 1) == Some(&b'r')))
            && (i == 0 || !ident(b[i - 1]))
        {
            let mut j = i + if b[i] == b'b' { 2 } else { 1 };
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&b'"') {
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                j += 1;
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = (j + close.len()).min(b.len());
                out.push_str("\"\"");
                continue;
            }
        }
        if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            i = (j + 1).min(b.len());
            out.push_str("\"\"");
            continue;
        }
        if b[i] == b'\'' {
            // A character literal ('x', '\n', '\'', '\u{..}', '\x41'); a lifetime is left alone.
            let rest = &b[i + 1..];
            let len = if rest.first() == Some(&b'\\') {
                rest.iter().skip(1).position(|&c| c == b'\'').map(|p| p + 2)
            } else {
                let ch_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(ch_len) == Some(&b'\'')).then_some(ch_len)
            };
            if let Some(len) = len {
                i += len + 2;
                out.push_str("' '");
                continue;
            }
        }
        let ch = text[i..].chars().next().expect("char");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Drop every `#[cfg(test)] mod NAME { … }` block (braces are balanced once strings and
/// comments are blanked).
fn cut_test_modules(text: &str) -> String {
    let mut text = text.to_owned();
    while let Some(start) = text.find("#[cfg(test)]") {
        let after = &text[start + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let item = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        let Some(rest) = item.strip_prefix("mod ") else {
            // Another test-only item (a function, an impl): drop just the attribute.
            text.replace_range(start..start + "#[cfg(test)]".len(), "");
            continue;
        };
        let semi = rest.find(';');
        let brace = rest.find('{');
        let open = match (semi, brace) {
            (Some(s), Some(b)) if s < b => None,
            (_, Some(b)) => Some(b),
            _ => None,
        };
        let base = text.len() - rest.len();
        let Some(open) = open else {
            // `#[cfg(test)] mod tests;`: the file itself is left out elsewhere.
            text.replace_range(start..start + "#[cfg(test)]".len(), "");
            continue;
        };
        let bytes = text.as_bytes();
        let mut depth = 0usize;
        let mut end = base + open;
        while end < bytes.len() {
            match bytes[end] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end += 1;
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
        text.replace_range(start..end, "");
    }
    text
}

/// The files declared by `#[cfg(test)] mod NAME;`: test-only, left out of the graph.
fn test_only_files(files: &[SourceFile]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for file in files {
        let code = strip(&file.text);
        let mut rest = code.as_str();
        while let Some(at) = rest.find("#[cfg(test)]") {
            rest = &rest[at + "#[cfg(test)]".len()..];
            let item = rest.trim_start();
            let item = item.strip_prefix("pub(crate) ").unwrap_or(item);
            if let Some(decl) = item.strip_prefix("mod ") {
                let name: String = decl
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if decl[name.len()..].trim_start().starts_with(';') {
                    let dir = if file.rel == "lib.rs" || file.rel.ends_with("/mod.rs") {
                        Path::new(&file.rel).parent().map(Path::to_path_buf)
                    } else {
                        Some(PathBuf::from(file.rel.trim_end_matches(".rs")))
                    }
                    .unwrap_or_default();
                    for candidate in [
                        dir.join(format!("{name}.rs")),
                        dir.join(&name).join("mod.rs"),
                    ] {
                        out.insert(candidate.to_string_lossy().replace('\\', "/"));
                    }
                }
            }
        }
    }
    out
}

/// Expand a use tree (`a::{b, c::{d, e as f}}`) into its paths.
fn expand_use_tree(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{')
        && tree.ends_with('}')
    {
        let mut base = prefix.to_vec();
        base.extend(
            tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
        let inner = &tree[open + 1..tree.len() - 1];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use_tree(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        if !inner[start..].trim().is_empty() {
            expand_use_tree(&inner[start..], &base, out);
        }
        return;
    }
    let tree = tree.split(" as ").next().unwrap_or(tree);
    let mut path = prefix.to_vec();
    path.extend(
        tree.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "*")
            .map(str::to_owned),
    );
    out.push(path);
}

/// The paths a file imports, each as an absolute module path (starting below `crate`).
fn imported_paths(file: &SourceFile, code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` declarations (any visibility), resolved against crate, self and super.
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = &code[..code.len() - rest.len() + at];
        let starts_word = before
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        rest = &rest[at + 4..];
        if !starts_word {
            continue;
        }
        let tree_text = rest.trim_start();
        let head: String = tree_text
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !matches!(head.as_str(), "crate" | "self" | "super") {
            continue;
        }
        let Some(end) = tree_text.find(';') else {
            continue;
        };
        let mut paths = Vec::new();
        expand_use_tree(&tree_text[..end], &[], &mut paths);
        for path in paths {
            if let Some(absolute) = absolute(file, &path) {
                out.push(absolute);
            }
        }
    }
    // Inline paths `crate::a::b` anywhere in code.
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::") {
        let start = from + at;
        from = start + "crate::".len();
        if start > 0 {
            let prev = bytes[start - 1];
            if prev.is_ascii_alphanumeric() || prev == b'_' || prev == b':' {
                continue;
            }
        }
        let path_text: String = code[start..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let path: Vec<String> = path_text
            .split("::")
            .skip(1)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        out.push(path);
    }
    out
}

fn absolute(file: &SourceFile, path: &[String]) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" => Some(rest.to_vec()),
        "self" => {
            let mut base = file.module.clone();
            base.extend(rest.iter().cloned());
            Some(base)
        }
        "super" => {
            let mut base = file.module.clone();
            let mut rest = path;
            while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
                base.pop();
                rest = tail;
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        _ => None,
    }
}

struct Graph {
    /// File → the files it imports (paths under `src/`).
    edges: BTreeMap<String, BTreeSet<String>>,
}

fn build_graph() -> Graph {
    let src = src_dir();
    let mut paths = Vec::new();
    collect(&src, &mut paths);
    let files: Vec<SourceFile> = paths
        .iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            SourceFile {
                module: module_path(&rel),
                text: std::fs::read_to_string(p)
                    .unwrap_or_else(|e| panic!("read {}: {e}", p.display())),
                rel,
            }
        })
        .collect();
    let test_only = test_only_files(&files);
    let by_module: BTreeMap<Vec<String>, String> = files
        .iter()
        .filter(|f| f.rel != "main.rs")
        .map(|f| (f.module.clone(), f.rel.clone()))
        .collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        if file.rel == "main.rs" || test_only.contains(&file.rel) {
            continue;
        }
        let code = cut_test_modules(&strip(&file.text));
        let mut targets = BTreeSet::new();
        for path in imported_paths(file, &code) {
            // The longest prefix that names a module file is the file imported.
            let target = (0..=path.len())
                .rev()
                .find_map(|n| by_module.get(&path[..n]));
            if let Some(target) = target
                && *target != file.rel
                && target != "lib.rs"
                && !test_only.contains(target)
            {
                targets.insert(target.clone());
            }
        }
        edges.insert(file.rel.clone(), targets);
    }
    Graph { edges }
}

fn top_module(rel: &str) -> &str {
    let first = rel.split('/').next().expect("path");
    first.strip_suffix(".rs").unwrap_or(first)
}

fn layer_of(module: &str) -> Option<(usize, &'static str)> {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, name)| **name == module)
        .map(|(i, name)| (i, *name))
}

/// Strongly connected components (Tarjan, iterative), largest first.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = graph.edges.keys().collect();
    let index_of: BTreeMap<&String, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adjacency: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            graph.edges[*n]
                .iter()
                .filter_map(|t| index_of.get(t).copied())
                .collect()
        })
        .collect();
    let n = nodes.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut components = Vec::new();
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, child)) = work.last() {
            if child < adjacency[v].len() {
                let w = adjacency[v][child];
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        component.push(nodes[w].clone());
                        if w == v {
                            break;
                        }
                    }
                    component.sort();
                    components.push(component);
                }
            }
        }
    }
    components.sort_by_key(|c| std::cmp::Reverse(c.len()));
    components
}

#[test]
fn every_file_sits_in_a_layer_folder() {
    let src = src_dir();
    let mut paths = Vec::new();
    collect(&src, &mut paths);
    let mut outside = BTreeSet::new();
    for path in &paths {
        let rel = path
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if OUTSIDE_LAYERS.contains(&rel.as_str()) {
            continue;
        }
        if layer_of(top_module(&rel)).is_none() {
            outside.insert(rel);
        }
    }
    assert!(
        outside.is_empty(),
        "files outside the layer folders (move each into src/<layer>/, declare it in that \
         layer's mod.rs; a new layer goes in LAYERS in tests/architecture.rs and in \
         docs/architecture.md): {outside:?}"
    );
}

#[test]
fn no_import_runs_up_the_layers() {
    let graph = build_graph();
    let mut upward = BTreeSet::new();
    for (from, targets) in &graph.edges {
        let Some((from_layer, _)) = layer_of(top_module(from)) else {
            continue;
        };
        for to in targets {
            let Some((to_layer, _)) = layer_of(top_module(to)) else {
                continue;
            };
            if to_layer > from_layer {
                upward.insert((from.clone(), to.clone()));
            }
        }
    }
    let upward: Vec<String> = upward
        .iter()
        .map(|(a, b)| {
            let la = layer_of(top_module(a)).map_or("?", |l| l.1);
            let lb = layer_of(top_module(b)).map_or("?", |l| l.1);
            format!("  {a} ({la}) -> {b} ({lb})")
        })
        .collect();
    assert!(
        upward.is_empty(),
        "imports against the layer order (move the item down, or the caller up; see \
         docs/architecture.md):\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_import_cycle_holds_more_than_five_files() {
    let graph = build_graph();
    let components = cycles(&graph);
    let largest = components.first().map_or(0, Vec::len);
    let big: Vec<&Vec<String>> = components
        .iter()
        .filter(|c| c.len() > MAX_CYCLE_FILES)
        .collect();
    let describe = |component: &Vec<String>| {
        let members: BTreeSet<&String> = component.iter().collect();
        let edges: Vec<String> = component
            .iter()
            .flat_map(|from| {
                graph.edges[from]
                    .iter()
                    .filter(|to| members.contains(to))
                    .map(move |to| format!("    {from} -> {to}"))
            })
            .collect();
        format!(
            "  {} files: {}\n  edges inside:\n{}",
            component.len(),
            component.join(", "),
            edges.join("\n")
        )
    };
    assert!(
        big.is_empty(),
        "import cycles of more than {MAX_CYCLE_FILES} files (largest {largest}):\n{}",
        big.iter()
            .map(|c| describe(c))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_reader_sees_use_trees_and_inline_paths() {
    let file = SourceFile {
        rel: "a/b.rs".into(),
        module: vec!["a".into(), "b".into()],
        text: String::new(),
    };
    let code = strip(
        "use crate::x::{y, z::{w as v}};\n// use crate::comment;\nlet s = \"crate::string\";\n\
         fn f() { super::c::d(); crate::e::f(); let c = '{'; }\nuse super::g;",
    );
    let mut paths = imported_paths(&file, &code);
    paths.sort();
    let expected: Vec<Vec<String>> = vec![
        vec!["a".into(), "g".into()],
        vec!["e".into(), "f".into()],
        // The inline scan also reads the use line's prefix: the same file or its parent.
        vec!["x".into()],
        vec!["x".into(), "y".into()],
        vec!["x".into(), "z".into(), "w".into()],
    ];
    assert_eq!(paths, expected);
    let cut =
        cut_test_modules("fn a() {}\n#[cfg(test)]\nmod tests {\n fn b() { {} }\n}\nfn c() {}");
    assert_eq!(cut, "fn a() {}\n\nfn c() {}");
}
