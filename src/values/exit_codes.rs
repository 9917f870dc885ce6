//! The process exit codes of `skill-lift`, documented in one place (docs/results.md "Exit codes").
//!
//! Every command ends with a `cli::Outcome`; `cli::Outcome::code` (in `src/cli/outcome.rs`) maps
//! it to one of these constants, the only such mapping, and `main.rs` exits with it. The one
//! other exit is the attempt supervisor's (`crate::features::contain`), a child process that exits
//! [`INTERRUPTED`] when it is stopped.

/// The command ran and its gate passed (or no gate was set).
pub const SUCCESS: i32 = 0;
/// The command ran but a gate failed (regressed, below `--min-lift`, DEGRADED; `check`: the
/// model changed or assets are pending); `lint` found an
/// error-severity finding (or a warning with `--deny-warnings`); `env` found red flags.
pub const GATE_FAILED: i32 = 1;
/// Usage or input error: bad flags, malformed `evals.json`, `SKILL.md`, runner profile, run folder;
/// `--shard auto` without a usable index; `changed` with an unknown commit or outside a repository;
/// a malformed `s3://` location, or one holding no run folder.
pub const INPUT_ERROR: i32 = 2;
/// Infrastructure error: the runner or model server could not start, or no trial could be scored
/// because of infrastructure failures; `install` could not write into a host (all rolled back);
/// `changed`: git cannot be run; an object-store transfer failed.
pub const INFRASTRUCTURE_ERROR: i32 = 3;
/// Nothing to run: no active golden case, or every trial of the run is not gradable; `install`
/// found no agent host; `golden mine` drafted nothing; `shadow` found no eligible turn.
pub const NOTHING_TO_RUN: i32 = 4;
/// Completed with warnings: `scan` registered what it could but skipped assets it could not
/// read (malformed or duplicate-named; each is listed with its path and reason); `check` found
/// no model change and nothing pending, but a source of model evidence could not be read.
pub const COMPLETED_WITH_WARNINGS: i32 = 5;
/// Interrupted (Ctrl-C / SIGTERM); recorded trials are kept and `--resume` continues.
pub const INTERRUPTED: i32 = 130;
/// Busy: another process holds the lock the command needs (`monitor`: another pass of the same
/// host is running); nothing was done. 75 is `EX_TEMPFAIL` of sysexits.h: try again later.
pub const BUSY: i32 = 75;
