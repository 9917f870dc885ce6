//! The redaction boundary: every byte skill-lift writes into a run folder, an export, the
//! judge cache or the terminal's error lines passes through [`redact_text`] (or
//! [`redact_bytes`], or a [`RedactingWriter`]) at the writer, not at the field. New fields are
//! therefore covered without anyone remembering to redact them.
//!
//! Two kinds of secret are replaced:
//!
//! - **Credential values in play**: the values of every variable a loaded runner or judge profile
//!   names in `api_key_env` or `pass_env` (registered by [`crate::features::runner::profile::load_profile`]
//!   through [`register_credentials_of`]), plus any value registered with
//!   [`register_credential`]. Values shorter than [`MIN_CREDENTIAL_CHARS`] are ignored (too
//!   likely to match ordinary text). A value becomes `[REDACTED:$NAME]`, the marker the
//!   `security` metric already reads.
//! - **Well-known key shapes**, whoever's they are: Anthropic (`sk-ant-…`), OpenAI (`sk-…`,
//!   `sk-proj-…`), Google (`AIza…`), GitHub (`ghp_…`, `gho_…`, `ghs_…`, `ghu_…`, `ghr_…`,
//!   `github_pat_…`), Slack (`xox?-…`), AWS access key ids (`AKIA…`/`ASIA…`), the token after
//!   `Bearer`, the credential of an `Authorization` header (any scheme) and the value of an
//!   `x-api-key`/`x-goog-api-key` header. A shape becomes
//!   `[REDACTED:<kind>]` (e.g. `[REDACTED:openai-key]`).
//!
//! No pattern and no registered value contains a newline, a double quote or a backslash after
//! JSON escaping of ordinary key characters, so redacting serialized JSON or CSV text keeps it
//! well-formed, and text can be redacted line by line ([`RedactingWriter`]).
//!
//! This module must not decide *whether* something is a leak (the `security` metric does); it
//! only guarantees the value never reaches disk.

use std::borrow::Cow;
use std::io::Write;
use std::sync::{LazyLock, RwLock};

use regex::Regex;

/// Shortest credential value that is redacted, characters.
pub(crate) const MIN_CREDENTIAL_CHARS: usize = 8;

/// Registered credential values: `(variable name, value)`.
static CREDENTIALS: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());

/// One well-known key shape.
struct KeyShape {
    /// Marker kind, e.g. `openai-key`.
    kind: &'static str,
    regex: Regex,
    /// The capture group holding the secret part (0: the whole match).
    group: usize,
    /// Extra test of the secret part (e.g. a bearer token has a digit).
    accept: fn(&str) -> bool,
}

/// Accepts every match.
pub(crate) fn accept_any(_: &str) -> bool {
    true
}

/// An OpenAI-style key has a digit and a letter after `sk-` (so `sk-learn-pipeline-…` prose is
/// left alone) and is not Anthropic's.
pub(crate) fn accept_openai(matched: &str) -> bool {
    !matched.starts_with("sk-ant-")
        && matched.chars().any(|c| c.is_ascii_digit())
        && matched[3..].chars().any(|c| c.is_ascii_alphabetic())
}

/// A bearer token or header value: long enough and with a digit (prose such as "Bearer
/// authentication" is left alone).
fn accept_token(matched: &str) -> bool {
    matched.len() >= 12 && matched.chars().any(|c| c.is_ascii_digit())
}

static KEY_SHAPES: LazyLock<Vec<KeyShape>> = LazyLock::new(|| {
    let shape = |kind, regex: &str, group, accept| KeyShape {
        kind,
        regex: Regex::new(regex).expect("key shape pattern"),
        group,
        accept,
    };
    vec![
        shape(
            "anthropic-key",
            r"\bsk-ant-[A-Za-z0-9_\-]{16,}",
            0,
            accept_any,
        ),
        shape("openai-key", r"\bsk-[A-Za-z0-9_\-]{16,}", 0, accept_openai),
        shape(
            "google-api-key",
            r"\bAIza[0-9A-Za-z_\-]{30,}",
            0,
            accept_any,
        ),
        shape(
            "github-token",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
            0,
            accept_any,
        ),
        shape(
            "slack-token",
            r"\bxox[baprs]-[A-Za-z0-9\-]{10,}",
            0,
            accept_any,
        ),
        shape(
            "aws-access-key",
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            0,
            accept_any,
        ),
        shape(
            "bearer-token",
            r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/\-]+=*)",
            1,
            accept_token,
        ),
        // Any scheme (`Basic`, `Token`) or none; after `bearer-token`, so `Authorization:
        // Bearer …` is already replaced and the scheme word alone fails the acceptance test.
        shape(
            "authorization-header",
            r#"(?i)\bauthorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(?:basic|token|bearer)[ \t]+)?([A-Za-z0-9._~+/\-]+=*)"#,
            1,
            accept_token,
        ),
        shape(
            "api-key-header",
            r#"(?i)\bx-(?:goog-)?api-key["']?[ \t]*[:=][ \t]*["']?([A-Za-z0-9._~+/\-]+)"#,
            1,
            accept_token,
        ),
    ]
});

/// All shapes at once: one scan tells whether any needs replacing (the common case: none).
static SHAPE_SET: LazyLock<regex::RegexSet> = LazyLock::new(|| {
    regex::RegexSet::new(KEY_SHAPES.iter().map(|shape| shape.regex.as_str()))
        .expect("key shape set")
});

/// Literals one of which every key shape contains (the `(?i)` shapes in each ASCII case; their
/// other Unicode case forms, such as the Kelvin sign for `k`, lie outside these literals).
const SHAPE_HINTS: [&str; 15] = [
    "sk-",
    "AIza",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xoxb-",
    "xoxa-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "AKIA",
    "ASIA",
];

/// Case-insensitive words the `(?i)` shapes contain: `bearer` (its first four letters), the
/// `-api-` of `x-api-key` / `x-goog-api-key` and `auth` (of `authorization`).
const CASELESS_HINTS: [&str; 3] = ["bear", "-api-", "auth"];

/// A SIMD multi-literal searcher over [`SHAPE_HINTS`] and every ASCII case form of
/// [`CASELESS_HINTS`]: a text none of them occurs in holds no key shape, so the shape regexes
/// are neither built nor run over it (most text). `None` where the CPU lacks the SIMD it needs.
static HINTS: LazyLock<Option<aho_corasick::packed::Searcher>> = LazyLock::new(|| {
    let mut literals: Vec<String> = SHAPE_HINTS.iter().map(|s| s.to_string()).collect();
    for word in CASELESS_HINTS {
        let mut forms = vec![String::new()];
        for c in word.chars() {
            forms = forms
                .into_iter()
                .flat_map(|form| {
                    let mut cased = vec![format!("{form}{}", c.to_ascii_lowercase())];
                    if c.is_ascii_alphabetic() {
                        cased.push(format!("{form}{}", c.to_ascii_uppercase()));
                    }
                    cased
                })
                .collect();
        }
        literals.extend(forms);
    }
    aho_corasick::packed::Config::new()
        .builder()
        .extend(&literals)
        .build()
});

/// Whether `text` may hold a key shape (false: it holds none).
fn may_hold_key_shape(text: &str) -> bool {
    match &*HINTS {
        Some(searcher) => searcher.find(text).is_some(),
        None => true,
    }
}

/// Register a credential value under its variable name (ignored when shorter than
/// [`MIN_CREDENTIAL_CHARS`] or already known).
pub(crate) fn register_credential(name: &str, value: &str) {
    if value.chars().count() < MIN_CREDENTIAL_CHARS {
        return;
    }
    let mut credentials = CREDENTIALS.write().unwrap_or_else(|e| e.into_inner());
    if !credentials.iter().any(|(_, known)| known == value) {
        credentials.push((name.to_string(), value.to_string()));
        // Longest first, so a value containing another is replaced whole.
        credentials.sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
    }
}

/// Register the current values of the environment variables `names` (unset ones are skipped).
pub(crate) fn register_credentials_of<'a>(names: impl IntoIterator<Item = &'a String>) {
    for name in names {
        if let Some(value) = std::env::var_os(name) {
            register_credential(name, &value.to_string_lossy());
        }
    }
}

/// The marker written in place of the value of the credential variable `name`.
pub(crate) fn credential_marker(name: &str) -> String {
    format!("[REDACTED:${name}]")
}

/// `text` with every registered credential value and every well-known key shape replaced by a
/// marker. Borrowed when nothing matched.
pub(crate) fn redact_text(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    {
        let credentials = CREDENTIALS.read().unwrap_or_else(|e| e.into_inner());
        for (name, value) in credentials.iter() {
            // The value as written inside a JSON string, too (escaped quotes, backslashes).
            let quoted = serde_json::to_string(value).unwrap_or_default();
            let escaped = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or("");
            for form in [value.as_str(), escaped] {
                if !form.is_empty() && out.contains(form) {
                    out = Cow::Owned(out.replace(form, &credential_marker(name)));
                }
            }
        }
    }
    if !may_hold_key_shape(&out) {
        return out;
    }
    let matched = SHAPE_SET.matches(&out);
    if !matched.matched_any() {
        return out;
    }
    for (index, shape) in KEY_SHAPES.iter().enumerate() {
        if !matched.matched(index) {
            continue;
        }
        let replaced = shape
            .regex
            .replace_all(&out, |captures: &regex::Captures<'_>| {
                let whole = captures.get(0).expect("match");
                let Some(secret) = captures.get(shape.group) else {
                    return whole.as_str().to_string();
                };
                if !(shape.accept)(secret.as_str()) {
                    return whole.as_str().to_string();
                }
                let prefix = &whole.as_str()[..secret.start() - whole.start()];
                let suffix = &whole.as_str()[secret.end() - whole.start()..];
                format!("{prefix}[REDACTED:{}]{suffix}", shape.kind)
            })
            .into_owned();
        out = Cow::Owned(replaced);
    }
    out
}

/// One well-known key shape found in a text by [`find_key_shapes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyShapeMatch {
    /// Marker kind, e.g. `openai-key` (the same kinds [`redact_text`] writes).
    pub kind: &'static str,
    /// Byte range of the secret part in the text.
    pub range: std::ops::Range<usize>,
}

/// Every well-known key shape in `text` (the patterns [`redact_text`] replaces, with the same
/// acceptance tests), in text order. Registered credential values are not searched. Used by
/// `skill-lift lint` to report secrets in a skill's files without a second pattern list.
pub(crate) fn find_key_shapes(text: &str) -> Vec<KeyShapeMatch> {
    let mut found = Vec::new();
    if !may_hold_key_shape(text) {
        return found;
    }
    let matched = SHAPE_SET.matches(text);
    if !matched.matched_any() {
        return found;
    }
    for (index, shape) in KEY_SHAPES.iter().enumerate() {
        if !matched.matched(index) {
            continue;
        }
        for captures in shape.regex.captures_iter(text) {
            if let Some(secret) = captures.get(shape.group)
                && (shape.accept)(secret.as_str())
                && !found.iter().any(|m: &KeyShapeMatch| {
                    m.range.start < secret.end() && secret.start() < m.range.end
                })
            {
                found.push(KeyShapeMatch {
                    kind: shape.kind,
                    range: secret.range(),
                });
            }
        }
    }
    found.sort_by_key(|m| m.range.start);
    found
}

/// [`redact_text`] over bytes: UTF-8 runs are redacted, other bytes kept as they are.
pub(crate) fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    match std::str::from_utf8(bytes) {
        Ok(text) => match redact_text(text) {
            Cow::Borrowed(_) => Cow::Borrowed(bytes),
            Cow::Owned(owned) => Cow::Owned(owned.into_bytes()),
        },
        Err(_) => {
            // Redact the lossy text's valid runs line by line; lines with invalid bytes are
            // redacted through their lossy form (the invalid bytes become U+FFFD).
            let mut out = Vec::with_capacity(bytes.len());
            for line in bytes.split_inclusive(|b| *b == b'\n') {
                match std::str::from_utf8(line) {
                    Ok(text) => out.extend_from_slice(redact_text(text).as_bytes()),
                    Err(_) => {
                        let lossy = String::from_utf8_lossy(line);
                        match redact_text(&lossy) {
                            Cow::Borrowed(_) => out.extend_from_slice(line),
                            Cow::Owned(redacted) => out.extend_from_slice(redacted.as_bytes()),
                        }
                    }
                }
            }
            Cow::Owned(out)
        }
    }
}

/// Redact a file written by another process (a managed model server's log) in place: rewritten
/// atomically (temporary file in the same folder, then rename) when anything was replaced.
/// Returns whether it changed; a missing file is unchanged.
pub(crate) fn redact_file_in_place(path: &std::path::Path) -> std::io::Result<bool> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error),
    };
    let Cow::Owned(redacted) = redact_bytes(&bytes) else {
        return Ok(false);
    };
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    // A run folder's file: shared like the exports (0644 under umask 022).
    let mut temp = tempfile::Builder::new()
        .prefix(super::TEMP_PREFIX)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(
            super::FileAccess::Shared.mode(),
        ))
        .tempfile_in(dir)?;
    temp.write_all(&redacted)?;
    temp.as_file().sync_data()?;
    temp.persist(path).map_err(|error| error.error)?;
    Ok(true)
}

/// Redact every `*.log` file directly in `dir` (the managed servers' logs of a run folder).
/// Returns the logs that could not be redacted, each with its error (the caller warns:
/// [`crate::record::redact_logs_in`]).
pub(crate) fn redact_logs_in(dir: &std::path::Path) -> Vec<super::DiskError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut failed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "log")
            && entry.file_type().is_ok_and(|t| t.is_file())
            && let Err(error) = redact_file_in_place(&path)
        {
            failed.push(super::DiskError::new(&path, error));
        }
    }
    failed
}

/// `text` cut to at most `max` bytes (on a character boundary, `…` added), redacted first
/// ([`redact_text`]): a key cut in half would no longer match its shape or its
/// registered value, and these cut texts reach messages on the terminal (the circuit breaker's
/// last error, a runner's failure reason).
pub(crate) fn truncate(text: &str, max: usize) -> String {
    let text = redact_text(text);
    let text = text.as_ref();
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A writer that redacts what passes through it line by line (secrets never span a newline).
/// [`RedactingWriter::finish`] (or drop) flushes the last partial line.
pub(crate) struct RedactingWriter<W: Write> {
    inner: Option<W>,
    pending: Vec<u8>,
}

impl<W: Write> RedactingWriter<W> {
    /// Wrap `inner`.
    pub(crate) fn new(inner: W) -> Self {
        Self {
            inner: Some(inner),
            pending: Vec::new(),
        }
    }

    fn emit_complete_lines(&mut self) -> std::io::Result<()> {
        let Some(last_newline) = self.pending.iter().rposition(|b| *b == b'\n') else {
            return Ok(());
        };
        let rest = self.pending.split_off(last_newline + 1);
        let lines = std::mem::replace(&mut self.pending, rest);
        let inner = self.inner.as_mut().expect("writer present until finish");
        inner.write_all(&redact_bytes(&lines))
    }

    /// Redact and write what is left, flush, and return the inner writer.
    pub(crate) fn finish(mut self) -> std::io::Result<W> {
        let pending = std::mem::take(&mut self.pending);
        let mut inner = self.inner.take().expect("writer present until finish");
        inner.write_all(&redact_bytes(&pending))?;
        inner.flush()?;
        Ok(inner)
    }
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= 1 << 16 || buf.contains(&b'\n') {
            self.emit_complete_lines()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.emit_complete_lines()?;
        match self.inner.as_mut() {
            Some(inner) => inner.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_key_shapes_uses_the_same_shapes_and_acceptance() {
        let anthropic = format!("sk-ant-{}", "a1B2c3D4e5F6g7H8i9J0k1");
        let text = format!(
            "key = {anthropic} and prose sk-learn-pipeline-component-x and Bearer authentication"
        );
        let found = find_key_shapes(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, "anthropic-key");
        assert_eq!(&text[found[0].range.clone()], anthropic);
        assert!(find_key_shapes("nothing here").is_empty());
        let two = "ghp_abcdefghijklmnopqrstuvwxyz0123456789 AKIAABCDEFGHIJKLMNOP";
        let kinds: Vec<&str> = find_key_shapes(two).iter().map(|m| m.kind).collect();
        assert_eq!(kinds, ["github-token", "aws-access-key"]);
    }

    #[test]
    fn key_shapes_are_redacted_and_prose_is_not() {
        let anthropic = format!("sk-ant-api03-{}", "AbCd1234".repeat(4));
        let openai = "sk-proj-9f8e7d6c5b4a39281706abcd";
        let google = format!("AIza{}", "Sy0123456789abcdefghij_klmnopqrstu");
        let github = format!("ghp_{}", "a1B2".repeat(9));
        let text = format!(
            "Incorrect API key: Bearer tok3n-abcdef-123456 / {anthropic} / {openai} / {google} / {github} / x-api-key: k3y-ABCDEFGHIJ-99"
        );
        let redacted = redact_text(&text);
        for secret in [
            anthropic.as_str(),
            openai,
            google.as_str(),
            github.as_str(),
            "tok3n-abcdef-123456",
            "k3y-ABCDEFGHIJ-99",
        ] {
            assert!(!redacted.contains(secret), "{secret} in {redacted}");
        }
        assert!(redacted.contains("[REDACTED:anthropic-key]"), "{redacted}");
        assert!(redacted.contains("[REDACTED:openai-key]"), "{redacted}");
        assert!(
            redacted.contains("Bearer [REDACTED:bearer-token]"),
            "{redacted}"
        );
        for prose in [
            "use sk-learn-pipeline-configuration here",
            "Bearer authentication is required",
            "plain text",
        ] {
            assert_eq!(redact_text(prose), prose);
        }
    }

    /// The pre-scan never hides a shape: every sample of every shape (in odd cases for the
    /// `(?i)` ones) holds a hint, and text without a hint is left alone without the regexes.
    #[test]
    fn the_hint_scan_lets_every_shape_through() {
        assert!(HINTS.is_some(), "no SIMD searcher on this machine");
        let samples = [
            format!("sk-ant-{}", "a1B2c3D4e5F6g7H8i9J0"),
            format!("sk-proj-{}", "9f8e7d6c5b4a39281706"),
            format!("AIza{}", "Sy0123456789abcdefghij_klmnopqrstu"),
            format!("ghp_{}", "a1B2".repeat(9)),
            format!("gho_{}", "a1B2".repeat(9)),
            format!("ghu_{}", "a1B2".repeat(9)),
            format!("ghs_{}", "a1B2".repeat(9)),
            format!("ghr_{}", "a1B2".repeat(9)),
            format!("github_pat_{}", "a1B2".repeat(9)),
            "xoxb-1234567890-abcdef".to_string(),
            "xoxa-1234567890-abcdef".to_string(),
            "xoxp-1234567890-abcdef".to_string(),
            "xoxr-1234567890-abcdef".to_string(),
            "xoxs-1234567890-abcdef".to_string(),
            "AKIAABCDEFGHIJKLMNOP".to_string(),
            "ASIAABCDEFGHIJKLMNOP".to_string(),
            "bEaReR tok3n-abcdef-123456".to_string(),
            "BEARER tok3n-abcdef-123456".to_string(),
            "X-Api-Key: k3y-ABCDEFGHIJ-99".to_string(),
            "x-GOOG-API-KEY=k3y-ABCDEFGHIJ-99".to_string(),
            "Authorization: Basic dXNlcjpwYXNzMTIzNDU2".to_string(),
            "AUTHORIZATION=Token abcdefgh12345678".to_string(),
            r#"{\"authorization\": \"q9w8e7r6t5y4u3i2\"}"#.to_string(),
            "Authorization: Bearer tok3n-abcdef-123456".to_string(),
        ];
        for sample in &samples {
            let text = format!("some text {sample} more");
            assert!(may_hold_key_shape(&text), "{sample}");
            assert_eq!(find_key_shapes(&text).len(), 1, "{sample}");
            assert!(redact_text(&text).contains("[REDACTED:"), "{sample}");
        }
        let plain = r#"{"trial_id":"case-00011/with_skill/1","answer":"Aye! Question 11?"}"#;
        assert!(!may_hold_key_shape(plain));
        assert!(matches!(redact_text(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn registered_values_are_redacted_raw_and_json_escaped() {
        register_credential("REDACT_TEST_KEY", "plain\"value-QX7");
        register_credential("SHORT", "abc");
        let json =
            serde_json::to_string(&serde_json::json!({"e": "got plain\"value-QX7!"})).unwrap();
        let redacted = redact_text(&json);
        assert!(!redacted.contains("value-QX7"), "{redacted}");
        assert!(redacted.contains("[REDACTED:$REDACT_TEST_KEY]"));
        serde_json::from_str::<serde_json::Value>(&redacted).expect("still JSON");
        assert_eq!(redact_text("abc abc"), "abc abc");
    }

    #[test]
    fn logs_written_by_other_processes_are_redacted_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        std::fs::write(&log, "start\nauth header: Bearer abcdef0123456789xyz\n").unwrap();
        std::fs::write(dir.path().join("clean.log"), "nothing here\n").unwrap();
        redact_logs_in(dir.path());
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text, "start\nauth header: Bearer [REDACTED:bearer-token]\n");
        assert!(!redact_file_in_place(&dir.path().join("clean.log")).unwrap());
    }

    #[test]
    fn the_writer_redacts_across_write_boundaries() {
        let secret = "sk-proj-9f8e7d6c5b4a39281706abcd";
        let mut writer = RedactingWriter::new(Vec::new());
        writer.write_all(b"a,").unwrap();
        writer.write_all(&secret.as_bytes()[..10]).unwrap();
        writer.write_all(&secret.as_bytes()[10..]).unwrap();
        writer.write_all(b"\nnext ").unwrap();
        writer.write_all(secret.as_bytes()).unwrap();
        let bytes = writer.finish().unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert_eq!(text.matches("[REDACTED:openai-key]").count(), 2, "{text}");
    }
}
