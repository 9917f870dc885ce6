//! The zero-key local model (SmolLM2-135M-Instruct served by llama-cpp-python on loopback):
//! the repository's `scripts/setup-local-model` and `scripts/serve-local-model`, compiled into
//! the binary so `skill-lift setup local-model` and the built-in `local` profile's managed
//! server (`skill-lift serve local-model --port P`) work from any folder. The scripts stay the
//! one source of truth; this module only hands them to `bash`. It owns no model logic.

use std::process::Command;

/// `scripts/setup-local-model`: creates the cached Python environment (idempotent).
pub(crate) const SETUP_SCRIPT: &str = include_str!("../../scripts/setup-local-model");
/// `scripts/serve-local-model`: serves the model on loopback (`exec`s the Python server).
pub(crate) const SERVE_SCRIPT: &str = include_str!("../../scripts/serve-local-model");
/// The port the shipped `local` and `local-judge` profiles use.
pub(crate) const DEFAULT_PORT: u16 = 18765;

/// The program and arguments that run the setup script (`bash -c SCRIPT setup-local-model`).
pub(crate) fn setup_argv() -> [&'static str; 4] {
    ["bash", "-c", SETUP_SCRIPT, "setup-local-model"]
}

/// The command that serves the model on `127.0.0.1:port` in the foreground.
pub(crate) fn serve_command(port: u16) -> Command {
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(SERVE_SCRIPT)
        .arg("serve-local-model")
        .arg(port.to_string());
    command
}

/// How `setup local-model` ended without failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetupEnd {
    /// The environment is set up.
    Ready,
    /// The script stopped on a missing prerequisite (Python or a compiler); it said which.
    MissingPrerequisite,
    /// Interrupted (Ctrl-C, SIGTERM): the script stopped with every process it started.
    Interrupted,
}

/// Why the local model could not be set up or served.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LocalModelError {
    /// `bash` could not be started to set the model up.
    #[error("starting bash to set up the local model")]
    StartSetup(#[source] std::io::Error),
    /// The setup script failed (its messages say why).
    #[error("setting up the local model failed ({0}); the messages above say why")]
    SetupFailed(std::process::ExitStatus),
    /// `bash` could not replace this process to serve the model.
    #[error("starting bash to serve the local model")]
    StartServe(#[source] std::io::Error),
}

/// `setup local-model`: run the setup script contained, so that an interrupt, or skill-lift's
/// end however it comes, stops it with everything it started (pip, the compiler); the
/// unfinished environment is not taken for a set-up one (the script marks it ready last).
pub(crate) async fn setup() -> Result<SetupEnd, LocalModelError> {
    let [program, arguments @ ..] = setup_argv();
    let status = crate::features::contain::run_foreground(program, &arguments)
        .await
        .map_err(LocalModelError::StartSetup)?;
    let Some(status) = status else {
        crate::values::reporter::report(crate::values::reporter::Event::LocalModelSetupInterrupted);
        return Ok(SetupEnd::Interrupted);
    };
    match status.code() {
        Some(0) => Ok(SetupEnd::Ready),
        // The script's own "Python or compiler missing" errors.
        Some(2) => Ok(SetupEnd::MissingPrerequisite),
        _ => Err(LocalModelError::SetupFailed(status)),
    }
}

/// `serve local-model`: replace this process with the server on `127.0.0.1:port`; `exec` keeps
/// this process's id, group and parent-death signal for the server, so a managed server is
/// stopped exactly as before. Returns only when the server could not be started.
pub(crate) fn serve(port: u16) -> LocalModelError {
    use std::os::unix::process::CommandExt;
    LocalModelError::StartServe(serve_command(port).exec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_scripts_are_the_repository_scripts() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
        assert_eq!(
            std::fs::read_to_string(root.join("setup-local-model")).unwrap(),
            SETUP_SCRIPT
        );
        assert_eq!(
            std::fs::read_to_string(root.join("serve-local-model")).unwrap(),
            SERVE_SCRIPT
        );
    }

    #[test]
    fn serve_reports_a_missing_setup_with_the_command_to_run() {
        let cache = tempfile::tempdir().unwrap();
        let output = serve_command(1)
            .env("SKILL_LIFT_CACHE", cache.path())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("skill-lift setup local-model"), "{stderr}");
    }
}
