//! The judge answer cache: one small JSON file per key, `<dir>/<key>.json`, holding the validated
//! answer of one judge repeat.
//!
//! Key (64 lower-case hex digits) = sha256 of the compact JSON object
//! `{"base_url", "format": "skill-lift-judge-cache-2", "messages_sha256", "metric", "model",
//! "repeat", "rubric_version", "sampling"}`, where `messages_sha256` is the sha256 of the exact
//! first request messages `[{"role":"system","content":…},{"role":"user","content":…}]` (which
//! hold the rendered trajectory and the case's expectations), `repeat` is the 0-based repeat
//! index and `sampling` the canonical JSON of the profile's temperature, max_tokens, seed and
//! response_format.
//!
//! File (written to a temporary file in the same folder, then renamed into place, so readers
//! never see a partial file):
//! `{"key", "rubric_version", "metric", "model", "repeat", "answer": {…canonical answer…}}`.
//! No credential and no base URL is written. A file that cannot be read or whose answer no longer
//! validates is a miss.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Version tag of the key material and file layout.
const CACHE_FORMAT: &str = "skill-lift-judge-cache-2";

/// What identifies one cached judge answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CacheKeyParts<'a> {
    /// Judge model requested.
    pub model: &'a str,
    /// The judge's base URL, as configured (after defaulting).
    pub base_url: &'a str,
    /// [`super::RUBRIC_VERSION`].
    pub rubric_version: &'a str,
    /// Metric name (`accuracy`, …).
    pub metric: &'a str,
    /// Hex sha256 of the exact first request messages.
    pub messages_sha256: &'a str,
    /// 0-based repeat index.
    pub repeat: u32,
    /// The sampling settings that shape an answer (temperature, max_tokens, seed,
    /// response_format), canonical JSON: another temperature is another instrument.
    pub sampling: &'a str,
}

impl CacheKeyParts<'_> {
    /// The key: hex sha256 of the key material (see the module documentation).
    pub(crate) fn key(&self) -> String {
        let material = serde_json::json!({
            "base_url": self.base_url,
            "format": CACHE_FORMAT,
            "messages_sha256": self.messages_sha256,
            "metric": self.metric,
            "model": self.model,
            "repeat": self.repeat,
            "rubric_version": self.rubric_version,
            "sampling": self.sampling,
        });
        sha256_hex(material.to_string().as_bytes())
    }
}

/// Hex sha256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// One cache file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CacheEntry {
    /// The entry's key (checked on read).
    pub key: String,
    /// Rubric version the answer was given under.
    pub rubric_version: String,
    /// Metric name.
    pub metric: String,
    /// Judge model requested.
    pub model: String,
    /// 0-based repeat index.
    pub repeat: u32,
    /// The validated answer, in canonical form.
    pub answer: Value,
}

/// The judge answer cache in one folder (created on first write).
#[derive(Debug, Clone)]
pub(crate) struct JudgeCache {
    dir: PathBuf,
}

impl JudgeCache {
    /// A cache in `dir` (e.g. `$SKILL_LIFT_HOME/judge-cache`).
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The file of `key`.
    pub(crate) fn path_of(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The entry stored under `key`, when there is a readable one for that key.
    pub(crate) fn load(&self, key: &str) -> Option<CacheEntry> {
        let bytes = std::fs::read(self.path_of(key)).ok()?;
        let entry: CacheEntry = serde_json::from_slice(&bytes).ok()?;
        (entry.key == key).then_some(entry)
    }

    /// Store `entry` under its key, atomically (temporary file in the folder, then rename).
    pub(crate) fn store(&self, entry: &CacheEntry) -> std::io::Result<()> {
        // The cache lives in the private state folder: 0700 folder, 0600 files.
        crate::features::registry::state::create_private_dir(&self.dir)?;
        let mut bytes = serde_json::to_vec(entry)?;
        bytes.push(b'\n');
        // The redaction boundary: a judge's answer quoting a key never reaches the cache.
        crate::disk::write_derived_with(
            &self.path_of(&entry.key),
            &bytes,
            crate::disk::FileAccess::Private,
        )
        .map_err(crate::disk::DiskError::into_io)?;
        Ok(())
    }
}
