//! The run pipeline every command that runs trials shares (`run`, each matrix cell, each
//! `calibrate` repeat): a validated request ([`settings`]: raw flags become typed settings in
//! one step, in `cli`), [`prepare`] (resolve fresh or resumed inputs, leak guard over the
//! decoys, stopping plan, checks before spending, credentials and graders; then the run folder
//! with its manifest, atomically), [`execute_run`] (lock, resume clean-up, reuse import, servers,
//! pre-flight, the scheduler of `crate::execute`, final exports) and [`conclude`] (baseline and
//! trial stores, how the run ends); [`run_single`] is `skill-lift run` through these stages.
//! `regrade` grades a recorded run again through the same
//! dispatcher ([`regrade`]). The workflows over runs sit beside it: the A/A control
//! ([`calibrate`]), a runner × model matrix of runs ([`matrix`]), the merge of a run's shards
//! ([`merge`]) and the re-analysis of recorded runs (`report`: [`reanalyze`]); so do the
//! workflows that drive runs or ask a model: [`triggers`], [`vet`], [`shadow`] and the golden
//! cases drafted by a judge model ([`golden`]).
//!
//! Errors are typed ([`PipelineError`]; a workflow's own error implements [`Failure`]) with the
//! class the command line maps to an exit code; nothing here knows exit codes or command-line
//! flags.

pub mod calibrate;
pub mod conclude;
pub mod ending;
pub mod error;
pub mod golden;
pub mod grading;
pub mod matrix;
pub mod merge;
pub mod plan;
pub mod prepare;
pub mod reanalyze;
pub mod regrade;
pub mod replay;
pub mod resolve;
pub mod result_folder;
pub mod run;
pub mod servers;
pub mod settings;
pub mod shadow;
pub mod single;
pub mod triggers;
pub mod values;
pub mod vet;

pub use conclude::{RunConclusion, SummaryOutcome, conclude, ending_of, explain, finish};
pub use ending::{Ending, Failure};
pub use error::{ErrorClass, PipelineError};
pub use prepare::{
    NothingToRun, PreparedRun, check_before_spending, create_run_folder, prepare, prepare_run,
    report_nothing_to_run,
};
pub use regrade::{
    PreparedRegrade, RegradeFinished, RegradeRequest, execute_regrade, prepare_regrade, regrade_id,
};
pub use resolve::{
    ResolvedRun, absolute, is_plain_folder_name, locate_inputs, new_result_id, new_run_id,
    planned_arms, resolve_fresh, resolve_resume,
};
pub use run::{InterruptedBeforeTrials, RunFinished, RunOptions, execute_run};
pub use servers::start_model_server;
pub use settings::{
    AnalysisOverrides, ExecutionSettings, FreshRun, PreviousSource, ReuseFrom, RunSettings,
    RunStart, StoppingRequest,
};
pub use single::run_single;
