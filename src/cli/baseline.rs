//! `skill-lift baseline checklist|merge|ingest`: the baseline store fed by hand (manual replays
//! for hosts with no headless entry point) or from recorded run folders.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::CommandError;
use super::Outcome;
use super::flag_groups::StateArgs;
use super::registry::HostArgs;
use crate::asset::fingerprint::{Calibre, fingerprint};
use crate::registry::baseline::{checklist, merge_file, record_run};
use crate::registry::scan::read_registry;

/// `skill-lift baseline …`.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    #[command(subcommand)]
    pub command: BaselineCommand,
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Print a replay checklist of an asset's active golden cases, and optionally a merge template.
    Checklist(ChecklistArgs),
    /// Merge recorded verdicts (a replay file) into baseline-results.json.
    Merge(MergeArgs),
    /// Add the trials of recorded run folders to baseline-results.json (what `run` does itself).
    Ingest(IngestArgs),
}

/// Flags of `baseline checklist`.
#[derive(Debug, Args)]
pub struct ChecklistArgs {
    /// A skill folder, or an asset name from the host's registry.
    pub asset: String,
    #[command(flatten)]
    pub host: HostArgs,
    /// Eval set file (default: ASSET/evals/evals.json).
    #[arg(long, value_name = "FILE")]
    pub evals: Option<PathBuf>,
    /// Model the replay runs under (default: the host's current bump).
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Fingerprint calibre.
    #[arg(long, value_name = "NAME", default_value = "v4-no-eval-material")]
    pub calibre: String,
    /// Include draft cases.
    #[arg(long)]
    pub allow_draft: bool,
    /// Write a merge template (verdict: null per case) to FILE.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
}

/// Flags of `baseline merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Replay file: {asset, fingerprint, calibre, model, runner, verdicts: [{case_id, verdict, status, arm, attempt}]} or a list.
    pub file: PathBuf,
    /// Replace every stored entry of each asset in the file.
    #[arg(long)]
    pub replace: bool,
    /// Merge draft cases too.
    #[arg(long)]
    pub allow_draft: bool,
    #[command(flatten)]
    pub state: StateArgs,
}

/// Flags of `baseline ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Run folders (hold manifest.json and trials.jsonl).
    #[arg(required = true)]
    pub run_dirs: Vec<PathBuf>,
    #[command(flatten)]
    pub state: StateArgs,
}

/// Run the subcommand.
pub fn baseline(args: BaselineArgs) -> Result<Outcome, CommandError> {
    match args.command {
        BaselineCommand::Checklist(args) => checklist_command(args),
        BaselineCommand::Merge(args) => {
            let state = args.state.dir()?;
            let report = merge_file(&state, &args.file, args.replace, args.allow_draft)
                .map_err(CommandError::input)?;
            for (asset, counts) in &report.assets {
                crate::reporter::result_line(&format!(
                    "{asset}: {} verdict(s) merged, {} replaced, {} draft skipped{}, {} without verdict skipped",
                    counts.added,
                    counts.replaced,
                    counts.skipped_draft,
                    if args.allow_draft {
                        ""
                    } else {
                        " (use --allow-draft)"
                    },
                    counts.skipped_no_verdict
                ));
            }
            crate::reporter::result_line(&format!(
                "store: {}",
                crate::registry::baseline::baseline_path(&state).display()
            ));
            Ok(Outcome::Success)
        }
        BaselineCommand::Ingest(args) => {
            let state = args.state.dir()?;
            for run_dir in &args.run_dirs {
                let manifest =
                    crate::record::read_manifest(run_dir).map_err(CommandError::input)?;
                let (records, _) = crate::record::read_trials(&run_dir.join("trials.jsonl"))
                    .map_err(CommandError::input)?;
                let recorded =
                    record_run(&state, &manifest, &records).map_err(CommandError::input)?;
                crate::reporter::result_line(&format!(
                    "{}: run {} → {} verdict(s) ({} replaced) in {}",
                    recorded.asset,
                    recorded.run_id,
                    recorded.entries,
                    recorded.replaced,
                    recorded.store.display()
                ));
            }
            Ok(Outcome::Success)
        }
    }
}

fn checklist_command(args: ChecklistArgs) -> Result<Outcome, CommandError> {
    let calibre: Calibre = args
        .calibre
        .parse()
        .map_err(|e: String| CommandError::input(anyhow::anyhow!(e)))?;
    let (state, host) = args.host.resolve()?;
    let registry = read_registry(&state, &host.name).map_err(CommandError::input)?;
    let as_path = PathBuf::from(&args.asset);
    let dir = if as_path.join("SKILL.md").is_file() {
        as_path
    } else {
        match registry.as_ref().and_then(|r| r.assets.get(&args.asset)) {
            Some(entry) => entry.path.clone(),
            None => {
                return Err(CommandError::input(anyhow::anyhow!(
                    "`{}` is neither a skill folder nor an asset in host `{}`'s registry (run `skill-lift scan --host {}`)",
                    args.asset,
                    host.name,
                    host.name
                )));
            }
        }
    };
    let skill = crate::asset::load_skill(&dir).map_err(CommandError::input)?;
    let model = match args.model.clone().or_else(|| {
        registry
            .as_ref()
            .and_then(|r| r.model_bumps.last())
            .map(|b| b.model.clone())
    }) {
        Some(model) => model,
        None => {
            return Err(CommandError::input(anyhow::anyhow!(
                "no model: pass --model ID, or record one with `skill-lift bump --host {} --model ID`",
                host.name
            )));
        }
    };
    let evals = args
        .evals
        .clone()
        .unwrap_or_else(|| crate::evalset::default_eval_path(&dir));
    let eval_set = crate::evalset::load_eval_set(&evals, &dir).map_err(CommandError::input)?;
    let print = fingerprint(&dir, calibre).map_err(CommandError::input)?;
    let (text, template) = checklist(
        &skill.name,
        &print.digest,
        calibre.name(),
        &model,
        &eval_set,
        args.allow_draft,
    );
    crate::reporter::result(&text);
    if let Some(path) = &args.template {
        crate::registry::state::write_json(path, &template).map_err(CommandError::input)?;
        crate::reporter::result_line(&format!(
            "template: {} (fill each `verdict` with pass or fail, then `skill-lift baseline merge {}`)",
            path.display(),
            path.display()
        ));
    }
    Ok(Outcome::Success)
}
