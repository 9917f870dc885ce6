//! skill-lift: a paired-replay evaluation harness for Agent Skills.
//!
//! Data flow (see `shared/design.md`): plan → stage ([`workspace`]) → drive ([`runner`]) →
//! normalize ([`trajectory`]) → grade ([`grade`]) → record ([`record`]) → analyze
//! ([`analysis`], on [`stats`]) → report ([`report`]). [`pipeline`] is a run's lifecycle
//! (request → prepare → execute → conclude); [`execute`] schedules its trials; [`cli`] is the
//! command-line boundary and the only place that maps outcomes to exit codes.
//!
//! The modules sit in layers; a module imports its own layer and those below it, never one
//! above (`tests/architecture.rs` checks it; `docs/architecture.md` draws it):
//!
//! 1. **disk** — [`disk`] (the only writer of files: redaction, atomic writes, modes) and
//!    [`terminal`] (the only writer of stdout and stderr);
//! 2. **values** — [`exit_codes`], [`reporter`], [`shell`], [`trajectory`];
//! 3. **record** — [`record`], the run-folder schema (`manifest.json`, `trials.jsonl`);
//! 4. **analysis** — [`stats`], [`analysis`], [`skill_order`];
//! 5. **features** — assets, eval sets, workspaces, runners, graders and the run's features
//!    ([`asset`], [`evalset`], [`workspace`], [`runner`], [`grade`], [`calibration`],
//!    [`reuse`], [`shard`], [`registry`], …);
//! 6. **report** — [`report`], [`compare`], [`object_out`], [`progress`];
//! 7. **pipeline** — [`pipeline`], [`execute`], [`sequential`], [`run_matrix`], [`plan`],
//!    [`projection`], [`vet`];
//! 8. **cli** — [`cli`].

// Test code writes its fixtures directly; the library writes through `disk` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]
// Items are visible to the crate only, unless a public module exports them (`tests/` and
// `main.rs` use the public ones).
#![warn(unreachable_pub)]

pub(crate) mod analysis;
pub mod asset;
pub(crate) mod calibration;
pub(crate) mod changed;
pub mod cli;
pub(crate) mod compare;
pub mod contain;
pub(crate) mod decoys;
pub(crate) mod disk;
pub mod evalset;
pub(crate) mod execute;
pub mod exit_codes;
pub(crate) mod formats_check;
pub(crate) mod golden;
pub(crate) mod grade;
pub mod history;
pub(crate) mod install;
pub(crate) mod leak_guard;
pub(crate) mod local_model;
pub(crate) mod object_out;
pub(crate) mod pipeline;
pub(crate) mod plan;
pub(crate) mod process;
pub(crate) mod progress;
pub(crate) mod projection;
pub mod record;

pub mod registry;
pub(crate) mod report;
pub(crate) mod reporter;
pub(crate) mod reuse;
pub(crate) mod run_matrix;
pub mod runner;
pub(crate) mod scaffold;
pub(crate) mod sequential;
pub(crate) mod shadow;
pub(crate) mod shard;
pub(crate) mod shell;
pub(crate) mod skill_fit;
pub(crate) mod skill_order;
pub(crate) mod stats;
pub(crate) mod terminal;
pub mod trajectory;
pub(crate) mod triggers;
pub(crate) mod usage;
pub(crate) mod vet;
pub(crate) mod workspace;

#[cfg(test)]
mod test_support;
