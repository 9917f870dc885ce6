//! Command-line interface: clap definitions (raw flags) and the dispatcher that maps each
//! command's [`Outcome`] to a documented exit code (`crate::values::exit_codes`) in one place
//! ([`Outcome::code`], in `outcome.rs`).

mod baseline;
mod calibrate;
mod changed;
mod compare;
mod fingerprint;
mod fit;
mod flag_groups;
mod formats;
mod golden;
mod grading;
mod harbor;
mod init;
mod install;
mod matrix;
mod merge;
mod monitor;
mod object_out;
mod outcome;
mod plan;
mod probe;
mod registry;
mod regrade;
mod regress;
mod report;
mod run;
mod runners;
mod shadow;
mod stopping;
mod triggers;
mod usage;
mod vet;

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

pub(crate) use outcome::Outcome;

/// Measure what an Agent Skill really adds: paired runs with and without it, graded, with a
/// confidence interval on the lift.
#[derive(Debug, Parser)]
#[command(name = "skill-lift", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a skill's golden cases with and without the skill, K attempts each, and report the lift.
    Run(Box<RunArgs>),
    /// A/A control: run the eval set R times with both arms identical and record the suite's
    /// false-verdict rate and run-to-run spread, which later runs of the suite show.
    Calibrate(Box<calibrate::CalibrateArgs>),
    /// Re-analyze recorded runs and re-render their exports, without calling any model.
    Report(ReportArgs),
    /// Merge the shard folders of one run into one run folder, analyzed as a whole.
    Merge(MergeArgs),
    /// Grade a run's recorded trajectories again (same or new judges and graders) without
    /// calling any agent; writes a new run folder beside the old one.
    Regrade(Box<regrade::RegradeArgs>),
    /// Before spending: trials, tokens, cost, and the minimum detectable lift for N cases × K.
    Plan(plan::PlanArgs),
    /// List host profiles with their resolved roots and the number of assets found.
    Hosts(registry::HostsArgs),
    /// Fingerprint every asset of a host and update registry.<host>.json; print what changed.
    Scan(registry::ScanArgs),
    /// Show a host's registry: last scan, last model bump, asset counts, assets pending.
    Status(registry::StatusArgs),
    /// Record a new model version for a host (starts the re-evaluation clock).
    Bump(registry::BumpArgs),
    /// Notice a model change by itself (trial records, session history, GET /models, agent
    /// settings) and record it as a bump; exit 1 on a change or while assets are not evaluated
    /// (or waived) under the current model since the last bump.
    Check(registry::CheckArgs),
    /// Pass-rate matrix (fingerprint × model version) with DEGRADED / VOLATILE / FINGERPRINT-DRIFT flags.
    Regress(regress::RegressArgs),
    /// After a model change: re-run the monitored suites it left pending (sequential, within a
    /// budget), then the pass-rate matrix and the roll-up of what degraded and why. Safe to
    /// schedule: one pass per host at a time, resumable, documented exit codes, --json.
    Monitor(Box<monitor::MonitorArgs>),
    /// The baseline store: replay checklists, manual merges, ingestion of recorded runs.
    Baseline(baseline::BaselineArgs),
    /// Passive runtime evidence from host logs and agent transcripts (never starts a host).
    Probe(probe::ProbeArgs),
    /// Does an installed asset already cover a need? Else a catalog suggestion. Never installs.
    Suggest(probe::SuggestArgs),
    /// Standalone fingerprint report of paths (fingerprint-report.json/.md); never the registry.
    Fingerprint(fingerprint::FingerprintArgs),
    /// Static authoring checks of skill folders (Agent Skills spec, links, scripts, size,
    /// secrets): a score and a rule table. Not runtime evidence; `--against` shows how the score
    /// relates to measured lift.
    Lint(fit::LintArgs),
    /// Environment reconciliation: the commands, interpreters, packages, MCP servers, OS, locale,
    /// context size and network a skill assumes vs this machine (satisfied / missing / unknown).
    Env(fit::EnvArgs),
    /// Install skill-lift's own Agent Skill into every agent host found (verified by
    /// fingerprint; all or nothing); `--dry-run`, `--uninstall`.
    Install(install::InstallArgs),
    /// Skills whose fingerprint changed between two git commits (text, or JSON for a CI matrix).
    Changed(changed::ChangedArgs),
    /// Scaffold a skill folder with an eval set (SKILL.md, evals/evals.json: eight positive
    /// cases with checks, a negative case, a file case), or add an eval set to an existing skill.
    Init(init::InitArgs),
    /// Two runs of one skill and eval set (other runners, models or skill versions) side by
    /// side: a table with the differences and per-case changes (Markdown, CSV, JSON, HTML).
    Compare(compare::CompareArgs),
    /// List the runner profiles `--runner NAME` can name and where each comes from (built-in,
    /// a runners folder); `runners NAME` prints one profile's TOML.
    Runners(runners::RunnersArgs),
    /// Set up what runs need on this machine: `setup local-model` (the zero-key local model).
    Setup(runners::SetupArgs),
    /// Serve the local model in the foreground (`serve local-model --port P`).
    Serve(runners::ServeArgs),
    /// Trigger precision and recall: replay should-trigger and should-not-trigger queries K
    /// times with the decoys staged and read which skill each attempt activated.
    Triggers(Box<triggers::TriggersArgs>),
    /// The new-skill workflow in one command: lint, env, triggers, a paired run sized to a
    /// stated MDE, then registration for monitoring; one go / no-go per step.
    Vet(Box<vet::VetArgs>),
    /// Golden sets from real use: `golden mine` drafts cases from agent session history.
    Golden(golden::GoldenArgs),
    /// Adoption and net value per skill from agent session history: activations, sessions
    /// where it went unused, adoption with a Wilson interval, tokens and time per activation,
    /// and a recommend / keep / rewrite / retire suggestion (or "no evidence").
    Usage(usage::UsageArgs),
    /// Shadow a new skill on recorded sessions: replay the prompts its trigger would have
    /// fired on, with the skill staged, through a real runner in throwaway workspaces, and
    /// record what would have happened next to what did (activation rate, answers).
    Shadow(Box<shadow::ShadowArgs>),
    /// Run a Harbor task's verifier as a custom grader (added by `run` for task folders).
    #[command(hide = true)]
    HarborVerify(harbor::HarborVerifyArgs),
    /// Check the input formats under folders: every skill, eval file, trigger set, Harbor task,
    /// plugin and marketplace through the loaders (`scripts/check-formats`).
    #[command(hide = true)]
    Formats(formats::FormatsArgs),
}

/// Flags of `skill-lift run`.
#[derive(Debug, Args, Clone)]
#[command(
    mut_arg("runners", |arg| arg.help("Runner profile: a name from runners/ or a .toml path. Repeat it for a runner matrix: every runner × `--model` cell is a run of its own, analyzed on its own, with a matrix report beside the cells")),
    mut_arg("models", |arg| arg.help("Model id (overrides the profile's `model`). Repeat it for a model matrix (each model on each `--runner`)")),
    mut_arg("state", |arg| arg.help("State folder holding the baseline store (default: $SKILL_LIFT_HOME, else ~/.skill-lift)")),
    mut_arg("out", |arg| arg.value_name("DIR|s3://BUCKET/PREFIX").help("Folder that receives run folders, or an S3 location `s3://BUCKET/PREFIX` that receives the finished run folder (credentials and endpoint from the AWS_* variables)")),
)]
pub struct RunArgs {
    /// The skill folder (holds SKILL.md). Not needed with --resume.
    #[arg(required_unless_present = "resume")]
    pub skill_dir: Option<PathBuf>,
    /// Eval set file (default: SKILL_DIR/evals/evals.json).
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    pub evals: Option<PathBuf>,
    // `--runner` (repeat it for a runner matrix) and `--model` (repeat it for a model matrix).
    #[command(flatten)]
    pub agent: flag_groups::RunnerArgs,
    /// Attempts per case per arm.
    #[arg(short = 'k', long = "attempts", alias = "k", value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000), conflicts_with = "resume")]
    pub k: u32,
    /// Trials in flight at once (default: the profile's `concurrency`).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub jobs: Option<u32>,
    #[command(flatten)]
    pub results: flag_groups::ResultsArgs,
    /// Run id (the run folder's name; default: time, asset and a random suffix).
    #[arg(long, value_name = "ID", conflicts_with = "resume")]
    pub run_id: Option<String>,
    /// Seed of the bootstrap and any seeded sampling.
    #[arg(
        long,
        value_name = "S",
        default_value_t = 42,
        conflicts_with = "resume"
    )]
    pub seed: u64,
    /// Continue a recorded run: run only its missing trials (`calibrate`: a calibration
    /// folder, continuing its repeats).
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// With --resume: also re-run the trials recorded unscoreable for an infrastructure cause
    /// (runner error, timeout, incomplete trajectory, staging, transcript write, internal
    /// error). The old records stay in trials.jsonl, superseded; each trial counts once.
    #[arg(long, requires = "resume")]
    pub retry_unscoreable: bool,
    /// Include golden cases with `status: draft`.
    #[arg(long, conflicts_with = "resume")]
    pub allow_draft: bool,
    /// Folder of decoy skills replacing the built-in four.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["no_decoys", "resume"])]
    pub decoys: Option<PathBuf>,
    /// Stage no decoys (recorded in the manifest).
    #[arg(long, conflicts_with = "resume")]
    pub no_decoys: bool,
    /// Keep each trial's workspace folder (paths are recorded in trials.jsonl).
    #[arg(long)]
    pub keep_workspaces: bool,
    /// Folder for trial workspaces (default: the system temporary folder).
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,
    /// Fingerprint calibre: v4-no-eval-material (leaves EVAL.md and eval sets out), v3-agent-skills or v2-capability-surface.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "v4-no-eval-material",
        conflicts_with = "resume"
    )]
    pub calibre: String,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub grading: grading::GradingArgs,
    /// No progress bar and no Markdown summary on stdout.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Progress on stderr: `auto` draws a bar on a terminal and prints a status line (done/total,
    /// running lift, ETA) every --progress-interval seconds when stderr is not a terminal or CI
    /// is set (nothing with --quiet); `always` prints status lines even on a terminal or with
    /// --quiet; `never` prints none.
    #[arg(long, value_name = "WHEN", value_enum, env = "SKILL_LIFT_PROGRESS", default_value_t = crate::report::progress::ProgressMode::Auto)]
    pub progress: crate::report::progress::ProgressMode,
    /// Seconds between two progress status lines.
    #[arg(long, value_name = "SECONDS", env = "SKILL_LIFT_PROGRESS_INTERVAL", default_value_t = crate::report::progress::DEFAULT_LINE_INTERVAL_S, value_parser = crate::pipeline::values::parse_interval)]
    pub progress_interval: f64,
    #[command(flatten)]
    pub state: flag_groups::StateArgs,
    /// Run only shard i of n (1-based): the trials whose id hashes to it (FNV-1a, pinned).
    /// `auto` reads it from the environment: a Kubernetes Indexed Job's JOB_COMPLETION_INDEX
    /// with SKILL_LIFT_SHARD_COUNT, SKILL_LIFT_SHARD_INDEX (0-based) with SKILL_LIFT_SHARD_COUNT,
    /// or GitLab / CircleCI / Buildkite parallelism (docs/kubernetes.md). Merge the shard folders
    /// with `skill-lift merge`.
    #[arg(long, value_name = "i/n|auto", conflicts_with = "resume", value_parser = crate::features::shard::parse_shard_flag)]
    pub shard: Option<crate::record::Shard>,
    /// Skip the pre-flight check (before any trial: the agent program exists and answers
    /// `--version`; each HTTP runner and judge answers one cheap request).
    #[arg(long)]
    pub no_preflight: bool,
    /// Circuit breaker: stop scheduling after N trials in a row failed for infrastructure
    /// reasons (no trial starts after the N-th; at most --jobs − 1 already in flight may still
    /// be recorded; exit 3; `--resume` continues); 0 disables it.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub breaker: usize,
    /// Add a `previous_version` arm: the skill's previous version in DIR, staged under the
    /// skill's name (compare with `--reference previous_version`).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["previous_ref", "resume"])]
    pub previous: Option<PathBuf>,
    /// Add a `previous_version` arm from the skill folder as it was at GIT_REF (the skill must
    /// be in a git repository), e.g. `HEAD~1` or `v1.2.0`.
    #[arg(long, value_name = "GIT_REF", conflicts_with = "resume")]
    pub previous_ref: Option<String>,
    /// Exposure arms besides the native one (`with_skill`): `nudge` (the prompt names the
    /// skill), `forced` (the skill's SKILL.md in the prompt). Comma-separated; `native` is
    /// always run.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "resume"
    )]
    pub exposure: Vec<crate::features::workspace::Exposure>,
    /// The arm every other arm is compared against: `without_skill` (default),
    /// `previous_version`, `with_skill`, …
    #[arg(long, value_name = "ARM", conflicts_with = "resume")]
    pub reference: Option<crate::record::Arm>,
    /// Take the reference arm's trials (default `without_skill`) from earlier runs whose trial
    /// keys match (same staged skills and decoys, case, runner settings, model, grading and
    /// skill-lift version) instead of running them: bare, from the state folder's trial store
    /// (every finished run registers there); with a path, from that run folder (or matrix
    /// folder, or state folder). Trials with no match run. See docs/run-format.md.
    #[arg(long, value_name = "STORE|RUN_DIR", num_args = 0..=1, conflicts_with = "resume")]
    pub reuse_baseline: Option<Option<PathBuf>>,
    #[command(flatten)]
    pub stopping: stopping::StoppingArgs,
    /// After the run, register the skill for monitoring on --host: its fingerprint, this eval
    /// set and these settings (runner, K, seed, calibre, decoys), which `skill-lift monitor`
    /// re-runs after a model change (docs/monitoring.md).
    #[arg(long, conflicts_with_all = ["resume", "shard"])]
    pub monitor: bool,
    /// With --monitor: the host whose registry receives the skill.
    #[arg(
        long,
        value_name = "NAME",
        env = "SKILL_LIFT_HOST",
        default_value = "claude-code"
    )]
    pub host: String,
}

/// Flags of `skill-lift merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard folders of one run (each from `skill-lift run --shard i/n`), folders holding
    /// them (e.g. the shared volume the shards of an Indexed Job wrote into), or
    /// `s3://BUCKET/PREFIX` locations holding them (downloaded first).
    #[arg(required = true, value_name = "SHARD_DIR")]
    pub shard_dirs: Vec<PathBuf>,
    /// The merged run folder to create (must not exist, or be empty).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Run id of the merged run (default: the folder name of --out).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Merge even when some shards of i/n are missing (the run is then incomplete).
    #[arg(long)]
    pub allow_missing: bool,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Do not print the Markdown summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Flags of `skill-lift report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run folders (each holds manifest.json and trials.jsonl). Several runs of one asset are
    /// also combined into a pass-rate matrix (matrix.json, matrix.html) in --out.
    #[arg(required = true, value_name = "RUN_DIR")]
    pub run_dirs: Vec<PathBuf>,
    /// Formats to write (comma-separated or repeated): all, summary-json, trials-csv, cases-csv,
    /// lift-csv, markdown, html, junit, benchmark-json, lift-json, pass-at-k-lift-json.
    #[arg(
        long,
        value_name = "FORMAT",
        value_delimiter = ',',
        default_value = "all"
    )]
    pub format: Vec<String>,
    /// Write into this folder instead of the run folder (with several runs: one sub-folder per
    /// run id, plus the matrix).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Bootstrap seed (default: the run's recorded seed).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Do not print the Markdown summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Analysis and gate flags shared by `run` and `report`.
#[derive(Debug, Args, Clone)]
pub struct AnalysisArgs {
    /// Bootstrap resamples for intervals.
    #[arg(long, value_name = "B", default_value_t = crate::analysis::stats::DEFAULT_RESAMPLES, value_parser = crate::pipeline::values::parse_resamples)]
    pub bootstrap_resamples: usize,
    /// Lift interval method: newcombe (K = 1, unclustered only; an error otherwise), bca,
    /// percentile, t (default: chosen from the data, see docs/statistics.md).
    #[arg(long, value_name = "METHOD")]
    pub method: Option<crate::record::LiftMethod>,
    /// Gate: the lift interval's lower bound must exceed this fraction (0.05 = 5 pp); exit 1 otherwise.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true, value_parser = crate::pipeline::values::parse_lift)]
    pub min_lift: Option<f64>,
    /// Gate: exit 1 when the verdict is `regressed` (or `not-improved`: anything but improved).
    #[arg(long, value_name = "VERDICT")]
    pub fail_on: Vec<crate::record::FailOn>,
    /// Exit 3 (infrastructure error) when more than this fraction of the recorded trials is
    /// unscoreable [default: 0.1, or the run's recorded value for `report` and `--resume`].
    #[arg(long, value_name = "FRACTION", value_parser = crate::pipeline::values::parse_unit_fraction)]
    pub max_unscoreable: Option<f64>,
    /// Gate: exit 1 when the P95 trial wall time of `with_skill` exceeds this multiple of the
    /// reference arm's (e.g. 1.1 with `--reference previous_version`).
    #[arg(long, value_name = "RATIO", value_parser = crate::pipeline::values::parse_ratio)]
    pub max_latency_ratio: Option<f64>,
    /// Gate: exit 1 when the tokens per trial of `with_skill` exceed this multiple of the
    /// reference arm's (e.g. 1.2).
    #[arg(long, value_name = "RATIO", value_parser = crate::pipeline::values::parse_ratio)]
    pub max_token_ratio: Option<f64>,
    /// Gate: exit 1 when the release breaks what its version promises against the previous
    /// version (`run --previous`/`--previous-ref`): a patch not shown equivalent, a minor not
    /// shown non-inferior within ±--equivalence (docs/running.md § Contracts). A run whose
    /// versions give no policy (missing, unparseable, going down) is refused before it starts.
    #[arg(long)]
    pub enforce_version_policy: bool,
}

impl AnalysisArgs {
    /// The settings these flags give (the validated form the run pipeline reads).
    pub fn overrides(&self) -> crate::pipeline::AnalysisOverrides {
        crate::pipeline::AnalysisOverrides {
            resamples: self.bootstrap_resamples,
            method: self.method,
            min_lift: self.min_lift,
            fail_on: self.fail_on.clone(),
            max_unscoreable: self.max_unscoreable,
            max_latency_ratio: self.max_latency_ratio,
            max_token_ratio: self.max_token_ratio,
            enforce_version_policy: self.enforce_version_policy,
        }
    }
}

/// An error at the command boundary: a message chain and the outcome (hence exit code) it
/// maps to.
#[derive(Debug)]
pub struct CommandError {
    /// How the command ended (an input, infrastructure, nothing-to-run … failure).
    pub code: Outcome,
    /// What went wrong, with its causes.
    pub error: anyhow::Error,
}

impl CommandError {
    /// An input error (exit 2).
    pub fn input(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: Outcome::InputError,
            error: error.into(),
        }
    }
    /// An infrastructure error (exit 3).
    pub fn infrastructure(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: Outcome::InfrastructureError,
            error: error.into(),
        }
    }
    /// A library workflow's failure, ending as the failure says.
    pub fn failed(error: impl crate::pipeline::Failure) -> Self {
        Self {
            code: error.ending(),
            error: error.into(),
        }
    }
}

impl<E: crate::pipeline::Failure> From<E> for CommandError {
    /// The library error's own ending decides the exit code ([`CommandError::failed`]).
    fn from(error: E) -> Self {
        Self::failed(error)
    }
}

/// Parse arguments, run the command, print errors, and return the exit code of its
/// [`Outcome`].
pub fn main() -> i32 {
    dispatch().code()
}

/// Parse arguments, run the command, print errors: how the command ended.
fn dispatch() -> Outcome {
    let parsed = Cli::command().try_get_matches().and_then(|matches| {
        refuse_given_with_resume(&matches)?;
        Cli::from_arg_matches(&matches)
    });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return match error.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    Outcome::Success
                }
                _ => Outcome::InputError,
            };
        }
    };
    // The runtime outlives the error report, as it outlives the command.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build();
    let result = match &runtime {
        Ok(runtime) => runtime.block_on(cli.command.run()),
        Err(error) => Err(CommandError::infrastructure(anyhow::anyhow!(
            "cannot start the async runtime: {error}"
        ))),
    };
    match result {
        Ok(code) => code,
        Err(CommandError { code, error }) => {
            crate::values::reporter::report(crate::values::reporter::Event::failed(&error));
            code
        }
    }
}

/// Refuse `--runner`, `--model` or `--out` typed beside `--resume` (a resumed run keeps its
/// own). Clap's `conflicts_with` would also refuse them from the environment
/// (`SKILL_LIFT_RUNNER`, `SKILL_LIFT_RESULTS`), so only command-line values are checked here.
fn refuse_given_with_resume(matches: &clap::ArgMatches) -> Result<(), clap::Error> {
    let Some((name, sub)) = matches.subcommand() else {
        return Ok(());
    };
    let given = |id: &str| {
        sub.try_contains_id(id).unwrap_or(false)
            && sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
    };
    let fixed = [
        ("runners", "--runner"),
        ("models", "--model"),
        ("out", "--out"),
    ];
    let Some((_, flag)) = fixed
        .into_iter()
        .find(|(id, _)| given("resume") && given(id))
    else {
        return Ok(());
    };
    let message = format!(
        "the argument '--resume <RUN_DIR>' cannot be used with '{flag}': a resumed run keeps the one it started with"
    );
    let mut root = Cli::command();
    if let Some(command) = root.find_subcommand_mut(name) {
        return Err(command.error(clap::error::ErrorKind::ArgumentConflict, message));
    }
    Err(root.error(clap::error::ErrorKind::ArgumentConflict, message))
}

impl Command {
    /// Run the command's handler (on the async runtime).
    async fn run(self) -> Result<Outcome, CommandError> {
        match self {
            Command::Run(args) => object_out::run(*args).await,
            Command::Calibrate(args) => calibrate::calibrate(*args).await,
            Command::Report(args) => report::report(args),
            Command::Merge(args) => merge::merge(args).await,
            Command::Regrade(args) => regrade::regrade(*args).await,
            Command::Plan(args) => plan::plan_command(args),
            Command::Hosts(args) => registry::hosts(args),
            Command::Scan(args) => registry::scan_command(args),
            Command::Status(args) => registry::status(args),
            Command::Bump(args) => registry::bump_command(args),
            Command::Check(args) => registry::check_command(args).await,
            Command::Regress(args) => regress::regress_command(args),
            Command::Monitor(args) => monitor::monitor(*args).await,
            Command::Baseline(args) => baseline::baseline(args),
            Command::Probe(args) => probe::probe(args),
            Command::Suggest(args) => probe::suggest_command(args),
            Command::Fingerprint(args) => fingerprint::fingerprint(args),
            Command::Lint(args) => fit::lint(args),
            Command::Env(args) => fit::env(args),
            Command::Install(args) => install::install_command(args),
            Command::Changed(args) => changed::changed(args),
            Command::Init(args) => init::init(args),
            Command::Compare(args) => compare::compare(args),
            Command::Runners(args) => runners::runners(args),
            Command::Setup(args) => runners::setup(args).await,
            Command::Serve(args) => runners::serve(args),
            Command::Triggers(args) => triggers::triggers(*args).await,
            Command::Vet(args) => vet::vet(*args).await,
            Command::Golden(args) => golden::golden(args).await,
            Command::Usage(args) => usage::usage(args),
            Command::Shadow(args) => shadow::shadow(*args).await,
            Command::HarborVerify(args) => harbor::harbor_verify(args),
            Command::Formats(args) => formats::formats(args),
        }
    }
}
