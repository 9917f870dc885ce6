//! Baseline reuse in a run's analysis: how many trials of each arm were taken from earlier runs,
//! and from which (`summary.json` `reuse`). The reuse itself (matching trial keys, the trial
//! store) is `crate::features::reuse`'s; this is the count over the recorded trials.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::{Arm, Manifest, TrialRecord, TrialView};

/// The reused trials of a run's records, for reports: how many in each arm and from which
/// runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReuseSummary {
    /// Where the run looked (`manifest.reuse.source`, described).
    pub source: String,
    /// Reused trials in all.
    pub reused: usize,
    /// Reused trials by arm.
    pub by_arm: BTreeMap<Arm, usize>,
    /// Reused trials by the run that measured them.
    pub from_runs: BTreeMap<String, usize>,
    /// Planned trials of the reused arms that found no match and ran.
    pub not_found: usize,
    /// Every reused trial: which of this run's trials, and the run and trial that measured it
    /// (in the order the records were read).
    #[serde(default)]
    pub trials: Vec<ReusedTrial>,
}

/// One reused trial of a run and where it was measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReusedTrial {
    /// The trial in this run.
    pub case_id: String,
    pub arm: Arm,
    pub attempt: u32,
    /// The run and trial that measured it.
    pub from_run: String,
    pub from_trial: String,
}

impl ReuseSummary {
    /// The summary of a run that asked for reuse (`None` otherwise).
    pub(crate) fn of_run<'a>(
        manifest: &Manifest,
        records: impl IntoIterator<Item = &'a TrialRecord>,
    ) -> Option<Self> {
        let asked = manifest.reuse.as_ref()?;
        let mut summary = ReuseSummary {
            source: asked.source.describe(),
            not_found: asked.not_found,
            ..Default::default()
        };
        for record in records {
            summary.count(&record.view());
        }
        Some(summary)
    }

    /// Count `record` when it was reused.
    pub(crate) fn count(&mut self, record: &TrialView<'_>) {
        if let Some(from) = &record.reused_from {
            self.reused += 1;
            *self.by_arm.entry(record.arm).or_default() += 1;
            *self.from_runs.entry(from.run_id.clone()).or_default() += 1;
            self.trials.push(ReusedTrial {
                case_id: record.case_id.to_string(),
                arm: record.arm,
                attempt: record.attempt,
                from_run: from.run_id.clone(),
                from_trial: from.trial_id.clone(),
            });
        }
    }
}
