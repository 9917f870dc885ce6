//! `skill-lift monitor`: its flags, mapped to [`MonitorSettings`]; the pass itself is
//! `crate::pipeline::monitor::monitor`, whose suites are normal `run`s started here from their
//! argument lists, and its ending maps to the exit code here.

use clap::{Args, CommandFactory, FromArgMatches, Parser};

use super::{CommandError, Outcome};
use crate::pipeline::monitor::{MonitorSettings, SuiteEnd, SuiteRequest, monitor as run_monitor};

/// Flags of `skill-lift monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Host whose registry, model changes and monitored suites are read.
    #[arg(
        long,
        value_name = "NAME",
        env = "SKILL_LIFT_HOST",
        default_value = "claude-code"
    )]
    pub host: String,
    #[command(flatten)]
    pub state: super::flag_groups::StateArgs,
    #[command(flatten)]
    pub results: super::flag_groups::ResultsArgs,
    /// Only this monitored asset (repeat it for several; default: every monitored asset).
    #[arg(long, value_name = "NAME")]
    pub asset: Vec<String>,
    /// Run the suites under this model id instead of the last model change's.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Run every case of each suite instead of stopping early with `--sequential`.
    #[arg(long)]
    pub no_sequential: bool,
    /// The pass's wall-clock budget (90s, 15m, 1.5h; plain numbers are seconds): each suite's
    /// run gets what is left (`run --max-wall`); suites not started are deferred to the next
    /// pass.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = crate::pipeline::sequential::parse_duration_s)]
    pub max_wall: f64,
    /// Each suite's cost budget in USD (`run --max-cost-usd`).
    #[arg(long, value_name = "USD", value_parser = crate::pipeline::values::parse_usd)]
    pub max_cost_usd: Option<f64>,
    /// Each suite's token budget (`run --max-tokens`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Minimum drop, in percentage points, for DEGRADED.
    #[arg(long, value_name = "PP", default_value_t = 20.0)]
    pub threshold_pp: f64,
    /// Benjamini–Hochberg false-discovery rate for the paired tests.
    #[arg(long, value_name = "Q", default_value_t = 0.10)]
    pub q: f64,
    /// List the suites that would run; run nothing and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Report a model change this pass notices (as `check` does) without recording it as a
    /// bump; only a recorded change leaves suites pending.
    #[arg(long)]
    pub no_auto_bump: bool,
    /// A folder standing in for the home folder whose agent session history and settings are
    /// read for the model in use (default: SKILL_LIFT_HISTORY_ROOT, else the home folder).
    #[arg(long, value_name = "DIR")]
    pub history_root: Option<std::path::PathBuf>,
    /// A runner profile whose `GET /models` is read for the served model (repeat it; default:
    /// the monitored suites' runners).
    #[arg(long = "runner", value_name = "NAME")]
    pub runners: Vec<String>,
    /// The session-history window, days, for the value cards refreshed after the pass.
    #[arg(long, value_name = "N", default_value_t = 90, value_parser = clap::value_parser!(u32).range(1..))]
    pub days: u32,
    /// What one success of a skill is worth, USD: the refreshed value cards' net benefit (USD
    /// per 30 days) needs it (as `status --dashboard --value-per-success`).
    #[arg(long, value_name = "USD", value_parser = crate::pipeline::values::parse_usd)]
    pub value_per_success: Option<f64>,
    /// Consecutive days of negative net value before a value card suggests rewriting or
    /// retiring a skill.
    #[arg(
        long,
        value_name = "DAYS",
        default_value_t = crate::features::registry::value::DEFAULT_NEGATIVE_WINDOW_DAYS,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub value_window: u32,
    /// Print the report as JSON (the pass folder's monitor.json) instead of the table.
    #[arg(long, conflicts_with = "summary")]
    pub json: bool,
    /// Print only the one-line summary.
    #[arg(long)]
    pub summary: bool,
}

/// `skill-lift run`'s flags parsed from an argument list (each suite runs as a normal run).
#[derive(Debug, Parser)]
#[command(name = "run")]
struct RunLine {
    #[command(flatten)]
    run: super::RunArgs,
}

/// Run the command; returns the exit code.
pub(super) async fn monitor(args: MonitorArgs) -> Result<Outcome, CommandError> {
    let settings = MonitorSettings {
        state: args.state.dir()?,
        host: args.host,
        out: args.results.out,
        assets: args.asset,
        model: args.model,
        sequential: !args.no_sequential,
        max_wall_s: args.max_wall,
        max_cost_usd: args.max_cost_usd,
        max_tokens: args.max_tokens,
        threshold_pp: args.threshold_pp,
        q: args.q,
        dry_run: args.dry_run,
        watch: true,
        auto_bump: !args.no_auto_bump,
        history_root: args.history_root,
        runners: args.runners,
        value: crate::features::registry::value::ValueSettings::new(
            args.value_per_success,
            args.value_window,
        ),
        history_days: args.days,
    };
    let finished = run_monitor(&settings, run_suite).await?;
    if args.json {
        let json =
            serde_json::to_string_pretty(&finished.report).map_err(CommandError::infrastructure)?;
        crate::values::reporter::result_line(&json);
    } else if args.summary {
        crate::values::reporter::result_line(&finished.report.summary);
    } else {
        crate::values::reporter::result(&finished.text);
    }
    Ok(finished.ending)
}

/// One suite: `skill-lift run` with the flags the request stands for.
async fn run_suite(request: SuiteRequest) -> SuiteEnd {
    // The request names its run folder: `SKILL_LIFT_RESULTS` must not stand for `--out`.
    let command = RunLine::command().mut_arg("out", |arg| arg.env(None::<&str>));
    let parsed = command
        .try_get_matches_from(&request.argv)
        .and_then(|matches| RunLine::from_arg_matches(&matches));
    let line = match parsed {
        Ok(line) => line,
        Err(error) => {
            return SuiteEnd::Failed {
                ending: Outcome::InputError,
                error: format!("building the suite's run: {error}"),
            };
        }
    };
    match super::run::run(line.run).await {
        Ok(ending) => SuiteEnd::Exited(ending),
        Err(error) => SuiteEnd::Failed {
            ending: error.code,
            error: format!("{:#}", error.error),
        },
    }
}
