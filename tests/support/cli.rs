//! The command line as the integration tests drive it: the real binary with a state folder of
//! its own and nothing inherited that picks a runner or a results folder, and the project folder
//! most tests build (the `pirate-greeting` skill, its golden cases, an `openai-chat` profile).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{Value, json};

/// A state folder for this test process, so runs never write into the real `~/.skill-lift`.
pub fn state_dir() -> &'static Path {
    static STATE: OnceLock<tempfile::TempDir> = OnceLock::new();
    STATE
        .get_or_init(|| tempfile::tempdir().expect("temporary state folder"))
        .path()
}

/// The `skill-lift` binary with `state` as `SKILL_LIFT_HOME`, no runner, results folder or job
/// summary taken from the environment, and `CI=true`.
pub fn binary_in(state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_skill-lift"));
    command
        .env_remove("SKILL_LIFT_RUNNER")
        .env_remove("SKILL_LIFT_RESULTS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("SKILL_LIFT_HOME", state)
        .env("CI", "true");
    command
}

/// [`binary_in`] this process's [`state_dir`].
pub fn binary() -> Command {
    binary_in(state_dir())
}

/// Write `text` to `root/relative`, creating the folders it needs.
pub fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// What the binary wrote to stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What the binary wrote to stdout.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The `pirate-greeting` skill of most tests: its body carries `SKILL-MARKER`, which the mock
/// servers look for to answer as the skill says.
pub const PIRATE_SKILL_MD: &str = "---\nname: pirate-greeting\ndescription: Use when greeting users in pirate style.\n---\nBegin every answer with Aye! SKILL-MARKER\n";

/// The `pirate-greeting` eval set: `cases` cases `case-00`, `case-01`, … asking `Question i?`,
/// each expecting the skill and checked by `^\s*Aye!`.
pub fn pirate_evals(cases: usize) -> Value {
    let evals: Vec<Value> = (0..cases)
        .map(|i| {
            json!({"id": format!("case-{i:02}"), "prompt": format!("Question {i}?"),
                "expected_skill": "pirate-greeting",
                "checks": [{"type": "regex", "pattern": "^\\s*Aye!"}]})
        })
        .collect();
    json!({"skill_name": "pirate-greeting", "evals": evals})
}

/// An `openai-chat` runner profile for `base_url` (model `mock-model`, 30 s trials, quick
/// retries) running `concurrency` trials at once, followed by `extra` lines.
pub fn openai_profile(base_url: &str, concurrency: usize, extra: &str) -> String {
    format!(
        "kind = \"openai-chat\"\nbase_url = \"{base_url}\"\nmodel = \"mock-model\"\ntimeout_s = 30\nconcurrency = {concurrency}\nretry_base_delay_s = 0.01\n{extra}"
    )
}

/// A temporary project folder, run with this process's [`state_dir`] or a state folder of its
/// own.
pub struct Project {
    /// The folder (removed when dropped).
    pub dir: tempfile::TempDir,
    /// The project's own state folder, when it has one.
    own_state: Option<tempfile::TempDir>,
}

impl Project {
    /// An empty project, run with this process's [`state_dir`].
    pub fn empty() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            own_state: None,
        }
    }

    /// An empty project with a state folder of its own.
    pub fn with_own_state() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            own_state: Some(tempfile::tempdir().unwrap()),
        }
    }

    /// The state folder its commands use (`SKILL_LIFT_HOME`).
    pub fn state(&self) -> &Path {
        match &self.own_state {
            Some(own) => own.path(),
            None => state_dir(),
        }
    }

    /// A project holding the `pirate-greeting` skill at `skill/pirate-greeting` with `cases`
    /// golden cases (pretty-printed `evals/evals.json`).
    pub fn pirate(cases: usize) -> Self {
        let project = Self::empty();
        project.write("skill/pirate-greeting/SKILL.md", PIRATE_SKILL_MD);
        project.write(
            "skill/pirate-greeting/evals/evals.json",
            &serde_json::to_string_pretty(&pirate_evals(cases)).unwrap(),
        );
        project
    }

    /// `relative` inside the project.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Write `text` to `relative`, creating the folders it needs.
    pub fn write(&self, relative: &str, text: &str) {
        write(self.dir.path(), relative, text);
    }

    /// Write the runner profile `runners/{name}.toml` ([`openai_profile`], 4 trials at once).
    pub fn write_profile(&self, name: &str, base_url: &str, extra: &str) {
        self.write_profile_with(name, base_url, 4, extra);
    }

    /// Write the runner profile `runners/{name}.toml` ([`openai_profile`], `concurrency`
    /// trials at once).
    pub fn write_profile_with(&self, name: &str, base_url: &str, concurrency: usize, extra: &str) {
        self.write(
            &format!("runners/{name}.toml"),
            &openai_profile(base_url, concurrency, extra),
        );
    }

    /// The `pirate-greeting` skill folder.
    pub fn skill(&self) -> PathBuf {
        self.path("skill/pirate-greeting")
    }

    /// [`binary_in`] the project's state folder, run in the project folder.
    pub fn command(&self) -> Command {
        let mut command = binary_in(self.state());
        command.current_dir(self.dir.path());
        command
    }
}

/// Assert that the binary exited with `code` and that its stderr says `text` (stderr is shown
/// when either fails).
#[track_caller]
pub fn assert_exit(output: &Output, code: i32, text: &str) {
    let said = stderr(output);
    assert_eq!(output.status.code(), Some(code), "{said}");
    assert!(said.contains(text), "{said}");
}
