//! skill-lift: a paired-replay evaluation harness for Agent Skills.
//!
//! Data flow (see `shared/design.md`): plan → stage ([`features::workspace`]) → drive
//! ([`features::runner`]) → normalize ([`values::trajectory`]) → grade ([`features::grade`]) →
//! record ([`record`]) → analyze ([`analysis`], on [`analysis::stats`]) → report ([`report`]).
//! [`pipeline`] is a run's lifecycle (request → prepare → execute → conclude);
//! [`pipeline::execute`] schedules its trials; [`cli`] is the command-line boundary and the only
//! place that maps outcomes to exit codes.
//!
//! The folders of `src/` are the layers, from the bottom up; a module imports its own layer and
//! those below it, never one above (`tests/architecture.rs` checks it; `docs/architecture.md`
//! draws it):
//!
//! 1. [`disk`] — the only writer of files (redaction, atomic writes, modes) and, in
//!    [`disk::terminal`], the only writer of stdout and stderr;
//! 2. [`values`] — exit codes, the reporter, shell quoting, the trajectory;
//! 3. [`record`] — the run-folder schema (`manifest.json`, `trials.jsonl`);
//! 4. [`analysis`] — statistics ([`analysis::stats`]), the analysis of a recorded run, the seeded
//!    skill order;
//! 5. [`features`] — assets, eval sets, workspaces, runners, graders, the registry and the run's
//!    features;
//! 6. [`report`] — reports, exports, comparisons, progress;
//! 7. [`pipeline`] — a run's lifecycle, trial scheduling, rounds, matrices, planning, vet and the
//!    commands' workflows;
//! 8. [`cli`] — flags to settings, outcomes to exit codes.

// Test code writes its fixtures directly; the library writes through `disk` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]
// Items are visible to the crate only, unless a public module exports them (`tests/` and
// `main.rs` use the public ones).
#![warn(unreachable_pub)]

pub(crate) mod analysis;
pub mod cli;
pub(crate) mod disk;
pub mod features;
pub(crate) mod pipeline;
pub mod record;
pub(crate) mod report;
pub mod values;

#[cfg(test)]
mod test_support;
