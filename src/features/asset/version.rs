//! The version a skill declares, for the evolution contract (`crate::analysis::evolution`):
//! frontmatter `metadata.version` in `SKILL.md`, else the `version` of the Claude Code plugin
//! the skill belongs to (`.claude-plugin/plugin.json` in the skill folder or one of the four
//! folders above it). The text is kept as written: a YAML number such as `version: 1.10`
//! (which YAML reads as the float 1.1) is taken from the frontmatter line, not from the parsed
//! number. Nothing here interprets the version.

use std::path::{Path, PathBuf};

use crate::record::DeclaredVersion;

/// Where `metadata.version` is read from, as reports name it.
pub const METADATA_SOURCE: &str = "SKILL.md metadata.version";

/// The plugin manifest's path inside a plugin.
pub const PLUGIN_MANIFEST: &str = ".claude-plugin/plugin.json";

/// The version `dir`'s skill declares (its `SKILL.md` frontmatter, else its plugin's
/// manifest); `None` when neither declares one.
pub fn declared_version(dir: &Path) -> Option<DeclaredVersion> {
    metadata_version(dir).or_else(|| {
        let root = plugin_root(dir)?;
        plugin_version(&root.join(PLUGIN_MANIFEST)).map(|text| DeclaredVersion {
            text,
            source: format!("{} version", root.join(PLUGIN_MANIFEST).display()),
        })
    })
}

/// `metadata.version` of `dir/SKILL.md`, as written.
pub fn metadata_version(dir: &Path) -> Option<DeclaredVersion> {
    let text = std::fs::read_to_string(dir.join("SKILL.md")).ok()?;
    let (yaml, _) = super::split_frontmatter(&text)?;
    let text = raw_metadata_version(yaml).or_else(|| {
        // Flow style (`metadata: {version: 1.2.0}`) and other layouts: the parsed value.
        let skill = super::parse_skill_text(&text, &dir.join("SKILL.md"), dir, "").ok()?;
        skill.metadata.get("version").cloned()
    })?;
    let text = text.trim().to_string();
    (!text.is_empty()).then(|| DeclaredVersion {
        text,
        source: METADATA_SOURCE.to_string(),
    })
}

/// The nearest folder holding `.claude-plugin/plugin.json`: `dir` itself or one of the four
/// folders above it.
pub fn plugin_root(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .take(5)
        .find(|a| a.join(PLUGIN_MANIFEST).is_file())
        .map(Path::to_path_buf)
}

/// The `version` string of a plugin manifest's text.
pub fn plugin_version_of(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let version = value.get("version")?.as_str()?.trim();
    (!version.is_empty()).then(|| version.to_string())
}

fn plugin_version(path: &Path) -> Option<String> {
    plugin_version_of(&std::fs::read_to_string(path).ok()?)
}

/// The `version:` line of the block `metadata:` opens, unquoted and without a trailing
/// comment, read from the frontmatter text (block style only).
fn raw_metadata_version(yaml: &str) -> Option<String> {
    let mut in_metadata = false;
    for line in yaml.lines() {
        let indented = line.starts_with([' ', '\t']);
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if !indented {
            in_metadata = trimmed == "metadata:" || trimmed.starts_with("metadata: #");
            continue;
        }
        if !in_metadata {
            continue;
        }
        let Some(value) = trimmed.strip_prefix("version:") else {
            continue;
        };
        let value = value.trim();
        let value = match value.chars().next() {
            Some(quote @ ('"' | '\'')) => value[1..].split(quote).next().unwrap_or(""),
            _ => value.split(" #").next().unwrap_or("").trim(),
        };
        return Some(value.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(dir: &Path, frontmatter: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: s\ndescription: d\n{frontmatter}---\nBody\n"),
        )
        .unwrap();
    }

    #[test]
    fn metadata_version_is_kept_as_written() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("s");
        skill(
            &dir,
            "metadata:\n  author: me\n  version: 1.10 # minor ten\n",
        );
        let version = declared_version(&dir).unwrap();
        assert_eq!(version.text, "1.10");
        assert_eq!(version.source, METADATA_SOURCE);
        skill(&dir, "metadata:\n  version: \"2.0.1\"\n");
        assert_eq!(declared_version(&dir).unwrap().text, "2.0.1");
        skill(&dir, "metadata: {version: 3.1.4}\n");
        assert_eq!(declared_version(&dir).unwrap().text, "3.1.4");
        // `version` outside `metadata` is not the skill's version.
        skill(&dir, "license: MIT\nmetadata:\n  author: me\n");
        assert_eq!(declared_version(&dir), None);
    }

    #[test]
    fn the_plugin_version_applies_when_the_skill_declares_none() {
        let root = tempfile::tempdir().unwrap();
        let plugin = root.path().join("plugin");
        let dir = plugin.join("skills").join("s");
        skill(&dir, "");
        std::fs::create_dir_all(plugin.join(".claude-plugin")).unwrap();
        std::fs::write(
            plugin.join(PLUGIN_MANIFEST),
            r#"{"name": "p", "version": "0.4.2"}"#,
        )
        .unwrap();
        let version = declared_version(&dir).unwrap();
        assert_eq!(version.text, "0.4.2");
        assert!(
            version
                .source
                .ends_with(".claude-plugin/plugin.json version")
        );
        // The skill's own version wins.
        skill(&dir, "metadata:\n  version: 1.0.0\n");
        assert_eq!(declared_version(&dir).unwrap().text, "1.0.0");
    }
}
