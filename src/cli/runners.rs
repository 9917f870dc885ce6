//! `skill-lift runners` (which runner profiles `--runner NAME` can name, and from where),
//! `skill-lift setup local-model` and `skill-lift serve local-model` (the zero-key local model,
//! from any folder: `crate::local_model`).

use anyhow::{Context, anyhow};
use clap::{Args, Subcommand};

use super::CommandError;
use super::Outcome;
use crate::runner::profile::{ProfileOrigin, list_profiles, locate_profile, profile_text};

/// Flags of `skill-lift runners`.
#[derive(Debug, Args)]
pub struct RunnersArgs {
    /// Print this profile's TOML (as `--runner NAME` would read it) instead of the list; copy
    /// it into runners/NAME.toml to customize a built-in profile.
    #[arg(value_name = "NAME|FILE")]
    pub name: Option<String>,
    /// Print the list as JSON.
    #[arg(long, conflicts_with = "name")]
    pub json: bool,
}

/// `skill-lift runners`.
pub fn runners(args: RunnersArgs) -> Result<Outcome, CommandError> {
    if let Some(name) = &args.name {
        let location = locate_profile(name).map_err(CommandError::input)?;
        let text = profile_text(&location.path).map_err(CommandError::input)?;
        let from = match &location.origin {
            ProfileOrigin::Builtin => "built in".to_string(),
            ProfileOrigin::Folder(_) | ProfileOrigin::File => location.path.display().to_string(),
        };
        crate::reporter::report(crate::reporter::Event::RunnerProfileShown {
            name: name.clone(),
            from,
        });
        crate::reporter::result(&text);
        return Ok(Outcome::Success);
    }
    let listed = list_profiles();
    if args.json {
        let json = serde_json::to_string_pretty(&listed).expect("listing serializes");
        crate::reporter::result_line(&json);
        return Ok(Outcome::Success);
    }
    let mut out = String::from("name\tkind\tmodel\tfrom\n");
    for profile in &listed {
        let from = match (&profile.origin, profile.active) {
            (ProfileOrigin::Builtin, true) => "built-in".to_string(),
            (ProfileOrigin::Builtin, false) => {
                "built-in (overridden by the folder above)".to_string()
            }
            (_, active) => format!(
                "{}{}",
                profile.path.display(),
                if active {
                    if origin_overrides_builtin(&profile.name) {
                        " (overrides the built-in)"
                    } else {
                        ""
                    }
                } else {
                    " (shadowed by an earlier folder)"
                }
            ),
        };
        let kind = profile.kind.as_deref().unwrap_or("invalid");
        let model = profile
            .model
            .clone()
            .or_else(|| profile.error.clone())
            .unwrap_or_default();
        out.push_str(&format!("{}\t{kind}\t{model}\t{from}\n", profile.name));
    }
    print_aligned(&out);
    crate::reporter::report(crate::reporter::Event::RunnerLookupRule);
    Ok(Outcome::Success)
}

fn origin_overrides_builtin(name: &str) -> bool {
    crate::runner::profile::builtin_profile(name).is_some()
}

/// Print tab-separated rows as aligned columns.
fn print_aligned(text: &str) {
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|line| line.split('\t').collect())
        .collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[c]));
            }
        }
        crate::reporter::result_line(line.trim_end());
    }
}

/// Flags of `skill-lift setup`.
#[derive(Debug, Args)]
pub struct SetupArgs {
    #[command(subcommand)]
    pub what: SetupTarget,
}

/// What `setup` sets up.
#[derive(Debug, Subcommand)]
pub enum SetupTarget {
    /// The zero-key local model (SmolLM2-135M-Instruct with llama-cpp-python[server]) in a
    /// cached Python environment under $SKILL_LIFT_CACHE (default ~/.cache/skill-lift): about
    /// 5 minutes the first time (llama.cpp is compiled), instant afterwards. Needs Python 3.9+
    /// with venv and a C/C++ compiler. Interrupted (Ctrl-C, SIGTERM), it stops with every
    /// process it started, and the next setup starts over.
    LocalModel,
}

/// `skill-lift setup local-model`. The script runs contained: an interrupt, or skill-lift's
/// end however it comes, stops it with everything it started (pip, the compiler), and the
/// unfinished environment is not taken for a set-up one (the script marks it ready last).
pub async fn setup(args: SetupArgs) -> Result<Outcome, CommandError> {
    match args.what {
        SetupTarget::LocalModel => {
            let [program, arguments @ ..] = crate::local_model::setup_argv();
            let status = crate::contain::run_foreground(program, &arguments)
                .await
                .context("starting bash to set up the local model")
                .map_err(CommandError::infrastructure)?;
            let Some(status) = status else {
                crate::reporter::report(crate::reporter::Event::LocalModelSetupInterrupted);
                return Ok(Outcome::Interrupted);
            };
            match status.code() {
                Some(0) => Ok(Outcome::Success),
                // The script's own "Python or compiler missing" errors.
                Some(2) => Ok(Outcome::InputError),
                _ => Err(CommandError::infrastructure(anyhow!(
                    "setting up the local model failed ({status}); the messages above say why"
                ))),
            }
        }
    }
}

/// Flags of `skill-lift serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(subcommand)]
    pub what: ServeTarget,
}

/// What `serve` serves.
#[derive(Debug, Subcommand)]
pub enum ServeTarget {
    /// Serve the local model on 127.0.0.1 with an OpenAI-compatible API, in the foreground
    /// (the `local` and `local-judge` profiles start this themselves when it is not running).
    LocalModel {
        /// Port on 127.0.0.1.
        #[arg(long, default_value_t = crate::local_model::DEFAULT_PORT)]
        port: u16,
    },
}

/// `skill-lift serve local-model`: replaces this process with the server.
pub fn serve(args: ServeArgs) -> Result<Outcome, CommandError> {
    match args.what {
        ServeTarget::LocalModel { port } => {
            use std::os::unix::process::CommandExt;
            // `exec` keeps this process's id, group and parent-death signal for the server, so
            // a managed server is stopped exactly as before.
            let error = crate::local_model::serve_command(port).exec();
            Err(CommandError::infrastructure(
                anyhow!(error).context("starting bash to serve the local model"),
            ))
        }
    }
}
