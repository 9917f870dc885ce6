//! The registry console: per-host records of installed assets (fingerprint, calibre, capability
//! surface), the model-version lifecycle (bump/check), the shared baseline store, the pass-rate
//! matrix with regression flags, passive runtime evidence (probe) and need-based suggestions.
//!
//! | file | owns |
//! |---|---|
//! | `state.rs` | the state folder (`--state`, `SKILL_LIFT_HOME`, `~/.skill-lift/`), locks, atomic JSON |
//! | `hosts.rs` | host profiles (built-in and `hosts.json`), root resolution, asset discovery |
//! | `claude_home.rs` | Claude Code's install record: `installed_plugins.json`, `known_marketplaces.json`, `enabledPlugins` |
//! | `surface.rs` | capability surfaces of skills and plugins, and their diff |
//! | `scan.rs` | `registry.<host>.json`: scanning a host and the change report |
//! | `models.rs` | model bumps (manual and detected), waivers and the `check` of assets pending under the current model |
//! | `identity.rs` | observed model identity: evidence sources, observations, and the rule deciding a model change |
//! | `observe.rs` | reading the model from trial records, session history, `GET /models` and agent settings; [`observe::watch_model`] |
//! | `baseline.rs` | `baseline-results.json`: verdicts from runs and manual replays |
//! | `regress.rs` | pass-rate matrix, DEGRADED / VOLATILE / FINGERPRINT-DRIFT flags, attribution |
//! | `probe.rs` | passive runtime evidence from host logs and Claude Code transcripts |
//! | `console.rs` | the workflows of `hosts`, `scan`, `status`, `bump`, `check` and what they print |
//! | `dashboard.rs` | the recommend/remove dashboard of `status --dashboard` (heuristic) |
//! | `value.rs` | the value card: net benefit from measured lift, frequency and cost; its dated series and the rewrite/retire rule |
//! | `suggest.rs` | lexical match of a need against installed assets and a catalog |
//! | `fingerprint_report.rs` | the standalone `fingerprint-report.json`/`.md` |
//!
//! Hashing is never done here: fingerprints come from `crate::features::asset::fingerprint`, so a run's
//! recorded fingerprint and a scan's are the same number. Nothing here prints or exits: `console.rs`
//! renders what the commands print and reports events to `crate::values::reporter`; the CLI
//! (`crate::cli`) maps outcomes to exit codes.

pub mod baseline;
pub mod claude_home;
pub mod console;
pub mod dashboard;
pub mod fingerprint_report;
pub mod hosts;
pub mod identity;
pub mod models;
pub mod observe;
pub mod probe;
pub mod regress;
pub mod scan;
pub mod state;
pub mod suggest;
pub mod surface;
pub mod value;

use std::path::PathBuf;

/// Errors of the registry console. Every variant names the file or folder involved.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not valid JSON for {what}: {message}")]
    BadJson {
        path: PathBuf,
        what: &'static str,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(
        "{path}: schema version {found} is newer than this skill-lift reads ({supported}); upgrade skill-lift"
    )]
    SchemaVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("unknown host `{name}` (known: {known}); add it to {hosts_file}")]
    UnknownHost {
        name: String,
        known: String,
        hosts_file: PathBuf,
    },
    #[error("host `{host}` has no default root; pass --root PATH")]
    NoRoot { host: String },
    #[error("no home folder: set HOME, or pass --state DIR / set SKILL_LIFT_HOME")]
    NoHome,
    #[error(transparent)]
    Skill(#[from] crate::features::asset::SkillError),
    #[error(transparent)]
    Fingerprint(#[from] crate::features::asset::fingerprint::FingerprintError),
    #[error(transparent)]
    EvalSet(#[from] crate::features::evalset::EvalSetError),
    /// A recorded run folder cannot be read (`baseline ingest`).
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    /// A fingerprint calibre name is unknown (the message names the known ones).
    #[error(transparent)]
    Calibre(crate::values::unknown_name::UnknownName),
    /// `baseline checklist`: the asset names neither a skill folder nor a registered asset.
    #[error(
        "`{asset}` is neither a skill folder nor an asset in host `{host}`'s registry (run `skill-lift scan --host {host}`)"
    )]
    UnknownAsset { asset: String, host: String },
    /// `baseline checklist`: no model given and none recorded for the host.
    #[error(
        "no model: pass --model ID, or record one with `skill-lift bump --host {host} --model ID`"
    )]
    NoModel { host: String },
}

impl RegistryError {
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
