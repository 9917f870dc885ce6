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

pub mod analysis;
pub mod asset;
pub mod calibration;
pub mod changed;
pub mod cli;
pub mod compare;
pub mod contain;
pub mod decoys;
pub mod disk;
pub mod evalset;
pub mod execute;
pub mod exit_codes;
pub mod formats_check;
pub mod golden;
pub mod grade;
pub mod history;
pub mod install;
pub mod leak_guard;
pub mod local_model;
pub mod object_out;
pub mod pipeline;
pub mod plan;
pub mod process;
pub mod progress;
pub mod projection;
pub mod record;

pub mod registry;
pub mod report;
pub mod reporter;
pub mod reuse;
pub mod run_matrix;
pub mod runner;
pub mod scaffold;
pub mod sequential;
pub mod shadow;
pub mod shard;
pub mod shell;
pub mod skill_fit;
pub mod skill_order;
pub mod stats;
pub mod terminal;
pub mod trajectory;
pub mod triggers;
pub mod usage;
pub mod vet;
pub mod workspace;

#[cfg(test)]
mod test_support;
