//! Layer 5, **features**: what skill-lift measures and how. Assets and their fingerprints
//! ([`asset`]), eval sets ([`evalset`]), workspaces and the arms they stage ([`workspace`],
//! [`decoys`], [`leak_guard`]), runners and agent processes ([`runner`], [`process`],
//! [`contain`]), graders ([`grade`]), the run's features (calibration, baseline reuse, shards),
//! the registry console and agent session history ([`registry`], [`history`]), and the commands'
//! own library code that needs no run lifecycle (golden sets, install, scaffolding, skill fit,
//! usage, triggers, shadow replay, format checks, the local model).
//!
//! A feature may import other features and the layers below (analysis, record, values, disk).

pub mod asset;
pub(crate) mod calibration;
pub(crate) mod changed;
pub mod contain;
pub(crate) mod decoys;
pub mod evalset;
pub(crate) mod formats_check;
pub(crate) mod golden;
pub(crate) mod grade;
pub mod history;
pub(crate) mod install;
pub(crate) mod leak_guard;
pub(crate) mod local_model;
pub(crate) mod process;
pub mod registry;
pub(crate) mod reuse;
pub mod runner;
pub(crate) mod scaffold;
pub(crate) mod shadow;
pub(crate) mod shard;
pub(crate) mod skill_fit;
pub(crate) mod triggers;
pub(crate) mod usage;
pub(crate) mod workspace;
