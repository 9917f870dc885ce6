//! The run pipeline every command that runs trials shares (`run`, each matrix cell, each
//! `calibrate` repeat): a validated request ([`settings`]: raw flags become typed settings in
//! one step, in `cli`), [`prepare`] (resolve fresh or resumed inputs, leak guard over the
//! decoys, stopping plan, checks before spending, credentials and graders; then the run folder
//! with its manifest, atomically), [`execute_run`] (lock, resume clean-up, reuse import, servers,
//! pre-flight, the scheduler of `crate::pipeline::execute`, final exports) and [`conclude`] (baseline and
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

pub(crate) mod calibrate;
pub(crate) mod conclude;
pub(crate) mod ending;
pub(crate) mod error;
pub(crate) mod execute;
pub(crate) mod golden;
pub(crate) mod grading;
pub(crate) mod matrix;
pub(crate) mod merge;
pub(crate) mod monitor;
pub(crate) mod plan;
pub(crate) mod prepare;
pub(crate) mod projection;
pub(crate) mod reanalyze;
pub(crate) mod regrade;
pub(crate) mod replay;
pub(crate) mod resolve;
pub(crate) mod result_folder;
pub(crate) mod run;
pub(crate) mod run_matrix;
pub(crate) mod sequential;
pub(crate) mod servers;
pub(crate) mod settings;
pub(crate) mod shadow;
pub(crate) mod single;
pub(crate) mod triggers;
pub(crate) mod values;
pub(crate) mod vet;

pub(crate) use conclude::{ending_of, explain, finish};
pub(crate) use ending::{Ending, Failure};
pub(crate) use error::{ErrorClass, PipelineError};
pub(crate) use prepare::{
    PreparedRun, check_before_spending, create_run_folder, prepare, prepare_run,
    report_nothing_to_run,
};
pub(crate) use resolve::{
    absolute, is_plain_folder_name, locate_inputs, new_result_id, new_run_id, planned_arms,
    resolve_fresh, resolve_resume,
};
pub(crate) use run::{RunFinished, RunOptions, execute_run};
pub(crate) use servers::start_model_server;
pub(crate) use settings::{
    AnalysisOverrides, ExecutionSettings, FreshRun, PreviousSource, ReuseFrom, RunSettings,
    RunStart, StoppingRequest,
};
pub(crate) use single::run_single;
