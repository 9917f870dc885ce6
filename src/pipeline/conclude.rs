//! After a run's trials ran and its exports are written: what the run amounts to
//! ([`RunConclusion`], [`SummaryOutcome`]), what it feeds — the state folder's baseline
//! store (a complete, measured, paired, unsharded run) and trial store (any paired run) — and
//! how the command ends ([`finish`], [`ending_of`]), explained by an event; the command
//! line maps the [`Ending`] to its exit code.

use std::path::Path;

use super::Ending;
use super::run::RunFinished;
use crate::analysis::Summary;
use crate::values::reporter::{self, BaselineSkip, Event};

/// What an analyzed run's summary amounts to, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SummaryOutcome {
    /// Trials were recorded and none could be graded.
    NothingGradable,
    /// More unscoreable trials than `--max-unscoreable` allows, or no case scored in the
    /// compared arms.
    Unscoreable,
    /// A gate failed.
    GateFailed,
    /// Nothing failed (also: nothing recorded yet).
    Passed,
}

impl SummaryOutcome {
    /// The outcome of `summary`.
    pub(crate) fn of(summary: &Summary) -> Self {
        let outcomes = &summary.trials.outcomes;
        if summary.trials.recorded > 0 && outcomes.not_gradable == summary.trials.recorded {
            return SummaryOutcome::NothingGradable;
        }
        if summary.trials.recorded > 0
            && (summary.lift.n_cases == 0 || summary.unscoreable.exceeded)
        {
            return SummaryOutcome::Unscoreable;
        }
        if !summary.gates_passed() {
            return SummaryOutcome::GateFailed;
        }
        SummaryOutcome::Passed
    }

    /// The ending this outcome is: nothing gradable, too many unscoreable trials or no case
    /// scored in both arms (infrastructure), a failed gate, else success.
    pub(crate) fn ending(self) -> Ending {
        match self {
            SummaryOutcome::NothingGradable => Ending::NothingToRun,
            SummaryOutcome::Unscoreable => Ending::InfrastructureError,
            SummaryOutcome::GateFailed => Ending::GateFailed,
            SummaryOutcome::Passed => Ending::Success,
        }
    }

    /// Whether the run measured something (a run whose trials were mostly unscoreable or not
    /// gradable is no evaluation: it must not clear `check` after a model bump).
    pub(crate) fn measured(self) -> bool {
        !matches!(
            self,
            SummaryOutcome::NothingGradable | SummaryOutcome::Unscoreable
        )
    }
}

/// How an analyzed run's summary ends ([`SummaryOutcome::ending`]).
pub(crate) fn ending_of(summary: &Summary) -> Ending {
    SummaryOutcome::of(summary).ending()
}

/// After a run's trials ran and its exports are written: feed the state folder ([`conclude`];
/// `state`: the `--state` flag), report a stop (breaker, interrupt, missing trials) or explain
/// the analysis, and say how the run ends.
pub(crate) fn finish(run_dir: &Path, finished: &RunFinished, state: Option<&Path>) -> Ending {
    let event = match conclude(run_dir, finished, state) {
        RunConclusion::Breaker { reason, missing } => Event::BreakerStopped {
            reason,
            missing,
            run_dir: run_dir.to_path_buf(),
        },
        RunConclusion::Interrupted => Event::StoppedByInterrupt {
            command: "run".to_string(),
            dir: run_dir.to_path_buf(),
        },
        RunConclusion::Missing(missing) => Event::TrialsMissing {
            missing,
            run_dir: run_dir.to_path_buf(),
        },
        RunConclusion::ShardDone => return Ending::Success,
        RunConclusion::Analyzed(_) => {
            explain(&finished.summary);
            return ending_of(&finished.summary);
        }
    };
    let ending = match &event {
        Event::StoppedByInterrupt { .. } => Ending::Interrupted,
        _ => Ending::InfrastructureError,
    };
    reporter::report(event);
    ending
}

/// Report why an analyzed run's exit code is not 0 (nothing gradable, too many unscoreable
/// trials, a failed gate); nothing when it passed.
pub(crate) fn explain(summary: &Summary) {
    let event = match SummaryOutcome::of(summary) {
        SummaryOutcome::NothingGradable => Event::NothingGradable,
        SummaryOutcome::Unscoreable => Event::TooManyUnscoreable {
            unscoreable: summary.trials.outcomes.unscoreable,
            recorded: summary.trials.recorded,
            fraction: summary.unscoreable.fraction,
            limit: summary.unscoreable.limit,
            causes: unscoreable_causes(summary),
        },
        SummaryOutcome::GateFailed => Event::GateFailed {
            failures: summary.gate_failures(),
        },
        SummaryOutcome::Passed => return,
    };
    reporter::report(event);
}

/// The unscoreable causes of every arm, e.g. `grader error 3, runner error 1`.
fn unscoreable_causes(summary: &Summary) -> String {
    let mut causes: std::collections::BTreeMap<&str, usize> = Default::default();
    let extra = summary
        .comparisons
        .iter()
        .filter(|c| !crate::record::Arm::PAIRED.contains(&c.arm))
        .map(|c| &c.arm_summary);
    for arm in [&summary.arms.with_skill, &summary.arms.without_skill]
        .into_iter()
        .chain(extra)
    {
        for (cause, count) in &arm.unscoreable_causes {
            *causes.entry(cause.as_str()).or_default() += count;
        }
    }
    if causes.is_empty() {
        return "none recorded".to_string();
    }
    causes
        .iter()
        .map(|(cause, count)| format!("{cause} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a finished run ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunConclusion {
    /// The circuit breaker stopped it with `missing` planned trials not run.
    Breaker { reason: String, missing: usize },
    /// An interrupt stopped it; recorded trials are kept.
    Interrupted,
    /// Trials it was to run left no record.
    Missing(usize),
    /// A shard finished its trials (its analysis belongs to the merged run).
    ShardDone,
    /// The whole run is analyzed.
    Analyzed(SummaryOutcome),
}

/// Feed the state folder with a finished run (`state`: the `--state` flag) and say how it ends.
pub(crate) fn conclude(
    run_dir: &Path,
    finished: &RunFinished,
    state: Option<&Path>,
) -> RunConclusion {
    let RunFinished {
        manifest,
        summary,
        report,
        ..
    } = finished;
    let outcome = SummaryOutcome::of(summary);
    let stopped_early = report.interrupted || report.breaker.is_some();
    if manifest.arm_design.is_paired() {
        register_reusable_trials(run_dir, manifest, state);
    }
    if !manifest.arm_design.is_paired() {
        reporter::report(Event::BaselineStoreSkipped {
            why: BaselineSkip::AaControl,
        });
    } else if manifest.shard.is_none() && !stopped_early && outcome.measured() {
        record_in_baseline_store(run_dir, manifest, state);
    } else if manifest.shard.is_none() && !stopped_early {
        reporter::report(Event::BaselineStoreSkipped {
            why: BaselineSkip::NoLift,
        });
    }
    if let Some(reason) = &report.breaker {
        return RunConclusion::Breaker {
            reason: reason.clone(),
            missing: report.missing,
        };
    }
    if report.interrupted {
        return RunConclusion::Interrupted;
    }
    if report.missing > 0 {
        // Every planned trial is accounted for: a trial that was to run and left no record
        // makes the run an error, never a success.
        return RunConclusion::Missing(report.missing);
    }
    if manifest.shard.is_some() {
        // A shard alone is no analysis: its pairs may be split across shards. Gates apply to
        // the merged run.
        return RunConclusion::ShardDone;
    }
    RunConclusion::Analyzed(outcome)
}

/// Feed the run's verdicts to the baseline store (`baseline-results.json` in the state folder),
/// which `regress` and `check` read. A failure is a warning: the run itself is recorded, and
/// `skill-lift baseline ingest RUN_DIR` repeats this later.
pub(crate) fn record_in_baseline_store(
    run_dir: &Path,
    manifest: &crate::record::Manifest,
    state_flag: Option<&Path>,
) {
    let result = crate::record::read_trials(&run_dir.join("trials.jsonl"))
        .map_err(|e| e.to_string())
        .and_then(|(records, _)| {
            crate::features::registry::state::state_dir_from_env(state_flag)
                .and_then(|state| {
                    crate::features::registry::baseline::record_run(&state, manifest, &records)
                })
                .map_err(|e| e.to_string())
        });
    match result {
        Ok(recorded) => reporter::report(Event::BaselineStoreRecorded {
            entries: recorded.entries,
            asset: recorded.asset.to_string(),
            store: recorded.store.clone(),
        }),
        Err(error) => reporter::report(Event::BaselineStoreFailed {
            error,
            run_dir: run_dir.to_path_buf(),
        }),
    }
}

/// Register the run's measured trials in the state folder's trial store, so a later
/// `--reuse-baseline` finds them. A failure is a warning (the run itself is recorded).
pub(crate) fn register_reusable_trials(
    run_dir: &Path,
    manifest: &crate::record::Manifest,
    state_flag: Option<&Path>,
) {
    if manifest.trial_keys.is_none() {
        return;
    }
    let result = crate::record::read_trials(&run_dir.join("trials.jsonl"))
        .map_err(|e| e.to_string())
        .and_then(|(records, _)| {
            let state = crate::features::registry::state::state_dir_from_env(state_flag)
                .map_err(|e| e.to_string())?;
            crate::features::reuse::register_run(&state, run_dir, manifest, &records)
                .map(|n| (n, state))
                .map_err(|e| e.to_string())
        });
    match result {
        Ok((count, state)) => reporter::report(Event::TrialStoreRegistered {
            count,
            store: state.join(crate::features::reuse::STORE_FILE),
        }),
        Err(error) => reporter::report(Event::TrialStoreFailed { error }),
    }
}
