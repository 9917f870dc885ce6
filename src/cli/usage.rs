//! `skill-lift usage`: adoption and net value per skill from session history (mechanics in
//! `crate::usage`), plus the host-log failure lines `probe` reads when `--logs` is given.

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;

use super::CommandError;
use super::Outcome;
use super::golden::HistoryArgs;
use crate::history::HistoryHost;
use crate::usage::{Pricing, installed_skills, to_markdown, usage_report};

/// Flags of `skill-lift usage`.
#[derive(Debug, Args)]
#[command(
    after_help = "Adoption is read from what the user did next (pushback, rewrite requests, undo, interruptions vs moving on); see docs/history.md. Without activations the verdict is `no evidence`, never a green mark."
)]
pub struct UsageArgs {
    #[command(flatten)]
    pub history: HistoryArgs,
    /// The window: sessions of the last N days (ignored with --since).
    #[arg(long, value_name = "N", default_value_t = 90)]
    pub days: u32,
    /// Only this skill.
    #[arg(long, value_name = "NAME")]
    pub skill: Option<String>,
    /// Value of one adopted activation in USD (for the net value).
    #[arg(long, value_name = "USD")]
    pub value_per_success: Option<f64>,
    /// Price of input tokens, USD per million (for the marginal cost).
    #[arg(long, value_name = "USD")]
    pub input_price: Option<f64>,
    /// Price of output tokens, USD per million (for the marginal cost).
    #[arg(long, value_name = "USD")]
    pub output_price: Option<f64>,
    /// The host's skills folder (installed skills count as available in every session).
    /// Default: the host's user skills folder under the (stand-in) home.
    #[arg(long, value_name = "DIR")]
    pub skills_dir: Option<PathBuf>,
    /// Host log glob (`probe`'s format) whose failure lines are attributed to skills.
    #[arg(long, value_name = "GLOB")]
    pub logs: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn non_negative(name: &str, value: Option<f64>) -> Result<Option<f64>, CommandError> {
    match value {
        Some(v) if !(v.is_finite() && v >= 0.0) => Err(CommandError::input(anyhow!(
            "--{name} must be a non-negative number, got {v}"
        ))),
        other => Ok(other),
    }
}

/// `skill-lift usage`.
pub fn usage(args: UsageArgs) -> Result<Outcome, CommandError> {
    let host = HistoryHost::parse(&args.history.host).map_err(CommandError::input)?;
    let pricing = Pricing {
        value_per_success: non_negative("value-per-success", args.value_per_success)?,
        input_per_mtok: non_negative("input-price", args.input_price)?,
        output_per_mtok: non_negative("output-price", args.output_price)?,
    };
    let mut history = args.history.clone();
    if history.since.is_none() {
        let start = chrono::Utc::now() - chrono::Duration::days(i64::from(args.days));
        history.since = Some(start.to_rfc3339());
    }
    let since = history
        .since
        .as_deref()
        .map(crate::history::parse_since)
        .transpose()
        .map_err(CommandError::input)?;
    let (roots, read) = history.read()?;
    let skills_dir = args
        .skills_dir
        .clone()
        .unwrap_or_else(|| host.skills_dir_in(roots.home()));
    let installed = installed_skills(&skills_dir);
    let report = usage_report(
        host.as_str(),
        since,
        &read.sessions,
        &installed,
        args.skill.as_deref(),
        pricing,
    );
    let mut log_evidence = None;
    if let Some(glob) = &args.logs {
        let mut probe = crate::registry::probe::ProbeReport {
            host: host.as_str().to_string(),
            ..Default::default()
        };
        for skill in &report.skills {
            probe.assets.insert(skill.skill.clone(), Default::default());
        }
        let files = crate::registry::probe::glob_files(glob).map_err(CommandError::input)?;
        crate::registry::probe::probe_logs(&mut probe, &files).map_err(CommandError::input)?;
        log_evidence = Some(probe);
    }
    if args.json {
        let mut value = serde_json::to_value(&report).map_err(CommandError::infrastructure)?;
        if let Some(probe) = &log_evidence {
            value["logs"] = serde_json::json!({
                "files": probe.log_files.len(),
                "lines": probe.log_lines,
                "per_skill": probe.assets.iter().map(|(name, e)| (name.clone(), serde_json::json!({"lines": e.lines, "failure_lines": e.failure_lines}))).collect::<serde_json::Map<_, _>>(),
            });
        }
        let text = serde_json::to_string_pretty(&value).map_err(CommandError::infrastructure)?;
        crate::reporter::result_line(&crate::golden::mine::redact_personal(
            &text,
            &[roots.home().to_path_buf()],
        ));
    } else {
        crate::reporter::result(&to_markdown(&report));
        if let Some(probe) = &log_evidence {
            crate::reporter::result_line(&format!(
                "\nHost logs ({} file(s), {} line(s)): {}",
                probe.log_files.len(),
                probe.log_lines,
                probe
                    .assets
                    .iter()
                    .map(|(name, e)| format!(
                        "{name} {} failure line(s) of {}",
                        e.failure_lines, e.lines
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
    }
    Ok(Outcome::Success)
}
