//! `skill-lift compare RUN_A RUN_B`: analyze two recorded runs of one skill and eval set (each
//! with its own recorded gates and seed, as `report` would) and print and write the side-by-side
//! comparison (`crate::compare`).

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use clap::Args;

use super::CommandError;
use super::Outcome;
use crate::analysis::{RunAccumulator, Summary};
use crate::compare::{Comparison, check_comparable};
use crate::disk::write_atomic;
use crate::record::{Manifest, for_each_planned_trial, read_manifest};

/// Flags of `skill-lift compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first run folder (A).
    #[arg(value_name = "RUN_A")]
    pub run_a: PathBuf,
    /// The second run folder (B): the same skill and eval set, on another runner, model or
    /// skill version.
    #[arg(value_name = "RUN_B")]
    pub run_b: PathBuf,
    /// Folder for compare.md, compare.csv, compare-cases.csv, compare.json and compare.html
    /// (default: compare-<A>-vs-<B> beside RUN_A).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not print the Markdown table.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

fn analyze(run_dir: &Path) -> Result<(Manifest, Summary), CommandError> {
    let manifest = read_manifest(run_dir).map_err(CommandError::input)?;
    let mut accumulator = RunAccumulator::new(&manifest);
    for_each_planned_trial(&run_dir.join("trials.jsonl"), &manifest, |record| {
        accumulator.add(&record);
        Ok(())
    })
    .map_err(CommandError::input)?;
    let settings = super::AnalysisArgs::recorded_settings(&manifest);
    let summary = accumulator.finish(&settings);
    if summary.trials.recorded == 0 {
        return Err(CommandError::input(anyhow!(
            "{}: no trial is recorded in trials.jsonl; nothing to compare",
            run_dir.display()
        )));
    }
    Ok((manifest, summary))
}

/// `skill-lift compare`.
pub fn compare(args: CompareArgs) -> Result<Outcome, CommandError> {
    let (manifest_a, summary_a) = analyze(&args.run_a)?;
    let (manifest_b, summary_b) = analyze(&args.run_b)?;
    check_comparable(&manifest_a, &manifest_b)
        .with_context(|| {
            format!(
                "comparing {} (A) with {} (B)",
                args.run_a.display(),
                args.run_b.display()
            )
        })
        .map_err(CommandError::input)?;
    let comparison = Comparison::new((&manifest_a, &summary_a), (&manifest_b, &summary_b));
    let out = args.out.clone().unwrap_or_else(|| {
        args.run_a.parent().unwrap_or(Path::new(".")).join(format!(
            "compare-{}-vs-{}",
            manifest_a.run_id, manifest_b.run_id
        ))
    });
    std::fs::create_dir_all(&out)
        .with_context(|| format!("creating {}", out.display()))
        .map_err(CommandError::input)?;
    let markdown = comparison.markdown();
    let files = [
        (out.join("compare.md"), markdown.clone().into_bytes()),
        (out.join("compare.csv"), comparison.rows_csv()),
        (out.join("compare-cases.csv"), comparison.cases_csv()),
        (out.join("compare.json"), comparison.json()),
        (out.join("compare.html"), comparison.html().into_bytes()),
    ];
    for (path, bytes) in &files {
        write_atomic(path, bytes).map_err(CommandError::infrastructure)?;
    }
    if !args.quiet {
        crate::reporter::result(&markdown);
    }
    super::print_written(&files.map(|(path, _)| path));
    crate::report::step_summary::append_step_summary(&markdown);
    Ok(Outcome::Success)
}
