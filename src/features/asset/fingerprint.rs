//! Asset fingerprints: sha256 over the sorted relative paths and bytes of an asset's
//! capability-surface files, under a named rule set (the *calibre*).
//!
//! Hash layout (stable for a calibre): for each selected file in byte-wise ascending order of its
//! `/`-separated relative path: `path bytes`, `0x00`, file length as u64 little-endian, file bytes.
//! The digest is written `sha256:<64 hex>`. Excluded folders are skipped without being read, so a
//! plugin with a large `node_modules/` costs nothing extra.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A named rule set deciding which files of an asset enter its fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Calibre {
    /// The seeds' rule: `SKILL.md`, `scripts/`, `lib/`, `dist/`, `templates/`, `package.json`,
    /// `plugin.json`, `cordis.patch.yml`, template files; minus the common exclusions.
    #[serde(rename = "v2-capability-surface")]
    V2CapabilitySurface,
    /// Everything in the folder minus the common exclusions (so `references/`, text `assets/`
    /// and `agents/` count). The default before `v4-no-eval-material`: it hashes `EVAL.md`.
    #[serde(rename = "v3-agent-skills")]
    V3AgentSkills,
    /// `v3-agent-skills` minus the skill's eval material by name (`EVAL.md`, Vally
    /// `eval.yaml`, `evals.json` and its kin, at any depth; `evals/` was never hashed): what
    /// no arm ever sees does not make the fingerprint (`crate::features::asset::eval_material`). The
    /// default.
    #[default]
    #[serde(rename = "v4-no-eval-material")]
    V4NoEvalMaterial,
}

impl Calibre {
    /// The calibre's recorded name.
    pub fn name(self) -> &'static str {
        match self {
            Self::V2CapabilitySurface => "v2-capability-surface",
            Self::V3AgentSkills => "v3-agent-skills",
            Self::V4NoEvalMaterial => "v4-no-eval-material",
        }
    }

    /// Every calibre, the default first.
    pub const ALL: [Calibre; 3] = [
        Self::V4NoEvalMaterial,
        Self::V3AgentSkills,
        Self::V2CapabilitySurface,
    ];

    /// Whether the calibre leaves the skill's eval material out.
    fn excludes_eval_material(self) -> bool {
        self == Self::V4NoEvalMaterial
    }
}

impl fmt::Display for Calibre {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Calibre {
    type Err = crate::values::unknown_name::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "v2-capability-surface" | "v2" => Ok(Self::V2CapabilitySurface),
            "v3-agent-skills" | "v3" => Ok(Self::V3AgentSkills),
            "v4-no-eval-material" | "v4" => Ok(Self::V4NoEvalMaterial),
            other => Err(crate::values::unknown_name::UnknownName::new(
                "calibre",
                other,
                [
                    "v4-no-eval-material",
                    "v3-agent-skills",
                    "v2-capability-surface",
                ],
            )),
        }
    }
}

/// Folder names never descended into by any calibre. `evals/` and `results/` hold the golden set
/// and run output, which are not what the asset offers an agent (and are never staged).
const EXCLUDED_DIRS: [&str; 8] = [
    "node_modules",
    "docs",
    ".git",
    "evals",
    "results",
    "__pycache__",
    ".venv",
    "target",
];

const EXCLUDED_EXTENSIONS: [&str; 24] = [
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "svg", "tiff", "mp3", "wav", "ogg", "flac",
    "m4a", "mp4", "ttf", "otf", "woff", "woff2", "eot", "map", "lock", "lockb", "pyc",
];

const LOCK_FILES: [&str; 6] = [
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "npm-shrinkwrap.json",
    "Cargo.lock",
    "poetry.lock",
];

/// Whether a folder (by its name) is skipped by every calibre: the exclusion list plus `test*/`.
pub fn is_excluded_dir(name: &str) -> bool {
    EXCLUDED_DIRS.contains(&name) || name.starts_with("test")
}

/// Whether a file (by its name) is excluded by every calibre.
pub fn is_excluded_file(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper.starts_with("README") || upper.starts_with("CHANGELOG") || upper.starts_with("LICENSE")
    {
        return true;
    }
    if LOCK_FILES.contains(&name) || name == ".DS_Store" {
        return true;
    }
    match name.rsplit_once('.') {
        Some((_, extension)) => {
            EXCLUDED_EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str())
        }
        None => false,
    }
}

/// Whether the v2 calibre includes the file at `relative` (`/`-separated), exclusions aside.
fn v2_includes(relative: &str) -> bool {
    const ROOT_FILES: [&str; 4] = [
        "SKILL.md",
        "package.json",
        "plugin.json",
        "cordis.patch.yml",
    ];
    const DIRS: [&str; 5] = ["scripts/", "lib/", "dist/", "templates/", "template/"];
    if ROOT_FILES.contains(&relative) {
        return true;
    }
    if DIRS.iter().any(|d| relative.starts_with(d)) {
        return true;
    }
    let file = relative.rsplit('/').next().unwrap_or(relative);
    file.ends_with(".tmpl") || file.ends_with(".template") || file.contains(".template.")
}

/// A computed fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// `sha256:<hex>` digest as described in the module documentation.
    pub digest: String,
    /// The calibre that selected the files.
    pub calibre: Calibre,
    /// The selected files' relative paths, sorted.
    pub files: Vec<String>,
    /// Total bytes hashed (file contents only).
    pub bytes: u64,
}

/// Why a fingerprint could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum FingerprintError {
    #[error("{path}: cannot read while fingerprinting: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: cannot walk folder while fingerprinting: {message}")]
    Walk { path: PathBuf, message: String },
}

/// List the files of `root` that `calibre` selects, as sorted `/`-separated relative paths.
/// Symbolic links are not followed.
pub fn selected_files(root: &Path, calibre: Calibre) -> Result<Vec<String>, FingerprintError> {
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir && entry.depth() > 0 && is_excluded_dir(&entry.file_name().to_string_lossy()))
        })
        .build();
    for entry in walker {
        let entry = entry.map_err(|error| FingerprintError::Walk {
            path: root.to_path_buf(),
            message: error.to_string(),
        })?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        if is_excluded_file(&name) {
            continue;
        }
        let relative =
            crate::disk::slash_path(entry.path().strip_prefix(root).unwrap_or(entry.path()));
        if calibre == Calibre::V2CapabilitySurface && !v2_includes(&relative) {
            continue;
        }
        if calibre.excludes_eval_material()
            && super::eval_material::is_eval_material_path(&relative)
        {
            continue;
        }
        files.push(relative);
    }
    files.sort();
    Ok(files)
}

/// Whether `calibre` selects the file at `relative` (`/`-separated, relative to the asset
/// folder): no folder on its way is excluded ([`is_excluded_dir`]), its name is not excluded
/// ([`is_excluded_file`]), and under v2 the calibre's list includes it. The rule
/// [`selected_files`] applies while walking a folder, for a path list from elsewhere (a git tree).
pub fn selects(relative: &str, calibre: Calibre) -> bool {
    let mut parts: Vec<&str> = relative.split('/').collect();
    let Some(name) = parts.pop() else {
        return false;
    };
    if name.is_empty() || parts.iter().any(|dir| is_excluded_dir(dir)) || is_excluded_file(name) {
        return false;
    }
    if calibre.excludes_eval_material() && super::eval_material::is_eval_material_path(relative) {
        return false;
    }
    calibre != Calibre::V2CapabilitySurface || v2_includes(relative)
}

/// Builds a [`Fingerprint`] from files given one by one, in the hash layout of the module
/// documentation. Files must come in byte-wise ascending order of their relative path (the
/// order [`selected_files`] returns), each once.
#[derive(Debug, Clone)]
pub struct FingerprintHasher {
    hasher: Sha256,
    calibre: Calibre,
    files: Vec<String>,
    bytes: u64,
}

impl FingerprintHasher {
    /// An empty fingerprint under `calibre`.
    pub fn new(calibre: Calibre) -> Self {
        Self {
            hasher: Sha256::new(),
            calibre,
            files: Vec::new(),
            bytes: 0,
        }
    }

    /// Add the file at `relative` (`/`-separated) with its bytes.
    pub fn add(&mut self, relative: &str, content: &[u8]) {
        debug_assert!(
            self.files
                .last()
                .is_none_or(|last| last.as_str() < relative),
            "files must be added in ascending order of path"
        );
        self.hasher.update(relative.as_bytes());
        self.hasher.update([0u8]);
        self.hasher.update((content.len() as u64).to_le_bytes());
        self.hasher.update(content);
        self.bytes += content.len() as u64;
        self.files.push(relative.to_string());
    }

    /// The finished fingerprint.
    pub fn finish(self) -> Fingerprint {
        Fingerprint {
            digest: format!("sha256:{}", hex::encode(self.hasher.finalize())),
            calibre: self.calibre,
            files: self.files,
            bytes: self.bytes,
        }
    }
}

/// Compute the fingerprint of the asset folder `root` under `calibre`.
pub fn fingerprint(root: &Path, calibre: Calibre) -> Result<Fingerprint, FingerprintError> {
    let files = selected_files(root, calibre)?;
    let mut hasher = FingerprintHasher::new(calibre);
    let mut buffer = Vec::new();
    for relative in &files {
        let path = root.join(relative);
        buffer.clear();
        std::fs::File::open(&path)
            .and_then(|mut file| file.read_to_end(&mut buffer))
            .map_err(|source| FingerprintError::Read {
                path: path.clone(),
                source,
            })?;
        hasher.add(relative, &buffer);
    }
    Ok(hasher.finish())
}

/// sha256 of a byte string as `sha256:<hex>` (used for eval-set digests).
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::write;

    fn sample() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (relative, text) in [
            ("SKILL.md", "---\nname: s\ndescription: d\n---\n"),
            ("scripts/run.py", "print(1)"),
            ("references/guide.md", "guide"),
            ("README.md", "readme"),
            ("LICENSE.txt", "mit"),
            ("logo.png", "png"),
            ("node_modules/x/index.js", "x"),
            ("tests/test_a.py", "t"),
            ("docs/a.md", "d"),
            ("evals/evals.json", "{}"),
            ("package-lock.json", "{}"),
            ("dist/app.js.map", "map"),
        ] {
            write(root, relative, text);
        }
        dir
    }

    #[test]
    fn calibres_select_the_documented_files() {
        let dir = sample();
        let v3 = selected_files(dir.path(), Calibre::V3AgentSkills).unwrap();
        assert_eq!(
            v3,
            vec!["SKILL.md", "references/guide.md", "scripts/run.py"]
        );
        let v2 = selected_files(dir.path(), Calibre::V2CapabilitySurface).unwrap();
        assert_eq!(v2, vec!["SKILL.md", "scripts/run.py"]);
    }

    #[test]
    fn v4_leaves_eval_material_out_and_v3_keeps_reading_it() {
        let dir = sample();
        let root = dir.path();
        write(root, "EVAL.md", "## case\nexpected: the secret answer\n");
        write(root, "nested/eval.yaml", "scenarios: []\n");
        let v3 = selected_files(root, Calibre::V3AgentSkills).unwrap();
        assert!(v3.contains(&"EVAL.md".to_string()), "{v3:?}");
        let v4 = selected_files(root, Calibre::V4NoEvalMaterial).unwrap();
        assert_eq!(
            v4,
            vec!["SKILL.md", "references/guide.md", "scripts/run.py"]
        );
        assert!(!selects("EVAL.md", Calibre::V4NoEvalMaterial));
        assert!(selects("EVAL.md", Calibre::V3AgentSkills));
        let before = fingerprint(root, Calibre::V4NoEvalMaterial).unwrap();
        let v3_before = fingerprint(root, Calibre::V3AgentSkills).unwrap();
        write(root, "EVAL.md", "## case\nexpected: another answer\n");
        assert_eq!(
            fingerprint(root, Calibre::V4NoEvalMaterial).unwrap().digest,
            before.digest
        );
        assert_ne!(
            fingerprint(root, Calibre::V3AgentSkills).unwrap().digest,
            v3_before.digest
        );
        assert_eq!(Calibre::default(), Calibre::V4NoEvalMaterial);
        assert_eq!("v4".parse::<Calibre>().unwrap(), Calibre::V4NoEvalMaterial);
    }

    #[test]
    fn digest_changes_with_content_and_path_but_not_with_excluded_files() {
        let dir = sample();
        let first = fingerprint(dir.path(), Calibre::V3AgentSkills).unwrap();
        write(dir.path(), "README.md", "changed readme");
        write(dir.path(), "evals/evals.json", "[]");
        assert_eq!(
            first,
            fingerprint(dir.path(), Calibre::V3AgentSkills).unwrap()
        );
        write(dir.path(), "references/guide.md", "guide v2");
        let second = fingerprint(dir.path(), Calibre::V3AgentSkills).unwrap();
        assert_ne!(first.digest, second.digest);
        // The v2 calibre ignores references/.
        let v2_before = fingerprint(dir.path(), Calibre::V2CapabilitySurface).unwrap();
        write(dir.path(), "references/guide.md", "guide v3");
        assert_eq!(
            v2_before,
            fingerprint(dir.path(), Calibre::V2CapabilitySurface).unwrap()
        );
        // A rename changes the digest even with the same bytes.
        std::fs::rename(
            dir.path().join("scripts/run.py"),
            dir.path().join("scripts/go.py"),
        )
        .unwrap();
        assert_ne!(
            v2_before.digest,
            fingerprint(dir.path(), Calibre::V2CapabilitySurface)
                .unwrap()
                .digest
        );
    }

    #[test]
    fn same_tree_elsewhere_has_the_same_digest() {
        let a = sample();
        let b = sample();
        assert_eq!(
            fingerprint(a.path(), Calibre::V3AgentSkills)
                .unwrap()
                .digest,
            fingerprint(b.path(), Calibre::V3AgentSkills)
                .unwrap()
                .digest
        );
    }

    #[test]
    fn known_digest_is_stable() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "SKILL.md", "abc");
        let expected = {
            let mut hasher = Sha256::new();
            hasher.update(b"SKILL.md\0");
            hasher.update(3u64.to_le_bytes());
            hasher.update(b"abc");
            format!("sha256:{}", hex::encode(hasher.finalize()))
        };
        assert_eq!(
            fingerprint(dir.path(), Calibre::V3AgentSkills)
                .unwrap()
                .digest,
            expected
        );
    }

    #[test]
    fn calibre_names_round_trip() {
        for calibre in [Calibre::V2CapabilitySurface, Calibre::V3AgentSkills] {
            assert_eq!(calibre.name().parse::<Calibre>().unwrap(), calibre);
        }
        assert!("v9".parse::<Calibre>().is_err());
    }

    #[test]
    fn path_rule_agrees_with_the_walk() {
        let dir = sample();
        write(dir.path(), "lib/node_modules/y.js", "y");
        write(dir.path(), "scripts/testdata/z.py", "z");
        write(dir.path(), ".hidden/notes.md", "h");
        let all: Vec<String> = ignore::WalkBuilder::new(dir.path())
            .standard_filters(false)
            .build()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| {
                e.path()
                    .strip_prefix(dir.path())
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/")
            })
            .collect();
        for calibre in [Calibre::V2CapabilitySurface, Calibre::V3AgentSkills] {
            let mut by_rule: Vec<String> = all
                .iter()
                .filter(|p| selects(p, calibre))
                .cloned()
                .collect();
            by_rule.sort();
            assert_eq!(
                by_rule,
                selected_files(dir.path(), calibre).unwrap(),
                "{calibre}"
            );
        }
        assert!(selects(".hidden/notes.md", Calibre::V3AgentSkills));
        assert!(!selects("scripts/testdata/z.py", Calibre::V3AgentSkills));
    }
}
