//! The three deterministic ACES metrics, computed from the trajectory alone:
//! [`security`], [`skill_execution`] and [`skill_efficiency`] (`eval-formats.md` §3).
//!
//! Each is a pure function of the golden case, the normalized [`Trajectory`] and the trial's
//! [`MetricContext`], and returns a [`MetricResult`] with `source: Deterministic` whose score is
//! the mean of its applicable sub-scores. A sub-check that cannot be told on this trial is not
//! applicable (`None`) and is left out of the mean — never counted as 0 or 1; a metric whose
//! sub-checks are all not applicable has no score.
//!
//! Which skill a case expects: `expected_skill: "<name>"` → that skill; `expected_skill` absent →
//! the target skill when `should_trigger`, else a negative case; `expected_skill: null` → a
//! negative case (the target must not be activated, nor its scripts run).

pub(crate) mod efficiency;
pub(crate) mod execution;
pub(crate) mod security;
mod shell;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

pub(crate) use efficiency::skill_efficiency;
pub(crate) use execution::skill_execution;
pub(crate) use security::security;

use crate::features::evalset::{ExpectedSkill, GoldenCase};
use crate::features::grade::metric::MetricContext;
use crate::features::runner::parsers::{
    READ_TOOLS, SHELL_TOOLS, WRITE_TOOLS, command_argument, normalize,
};
use crate::values::trajectory::{CommandRun, SkillActivation, ToolCall, Trajectory};

/// What a case expects of the agent's skill use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expectation<'a> {
    /// The named skill should be used.
    Positive(&'a str),
    /// The target skill must not be used.
    Negative,
}

/// The case's expectation (see the module documentation).
fn expectation<'a>(case: &'a GoldenCase, context: &MetricContext<'a>) -> Expectation<'a> {
    match &case.expected_skill {
        ExpectedSkill::Named(skill) => Expectation::Positive(skill),
        ExpectedSkill::Unspecified if case.should_trigger => {
            Expectation::Positive(context.target_skill)
        }
        ExpectedSkill::Unspecified | ExpectedSkill::None => Expectation::Negative,
    }
}

/// Whether `skill` is staged in this trial's arm.
fn is_staged(context: &MetricContext<'_>, skill: &str) -> bool {
    context.staged_skills.iter().any(|staged| staged == skill)
}

/// Whether an activation is of `skill` (by name, or by the target flag when `skill` is the
/// target).
fn activation_is_of(
    activation: &SkillActivation,
    skill: &str,
    context: &MetricContext<'_>,
) -> bool {
    activation.skill == skill || (activation.target && skill == context.target_skill)
}

/// The successful activations of `skill`.
fn ok_activations_of<'t>(
    trajectory: &'t Trajectory,
    skill: &'t str,
    context: &'t MetricContext<'_>,
) -> impl Iterator<Item = &'t SkillActivation> + 't {
    trajectory
        .skill_activations
        .iter()
        .filter(move |activation| activation.ok && activation_is_of(activation, skill, context))
}

/// Whether the target skill was used: activated (any evidence, ok) or one of its scripts ran.
fn target_used(trajectory: &Trajectory, context: &MetricContext<'_>) -> TargetUse {
    let activated = ok_activations_of(trajectory, context.target_skill, context)
        .next()
        .is_some();
    let script = trajectory
        .script_runs
        .iter()
        .find(|run| run.target || run.skill == context.target_skill);
    TargetUse {
        activated,
        script: script.map(|run| run.script.clone()),
    }
}

/// How the target skill was used in a trial.
struct TargetUse {
    activated: bool,
    /// The first of its scripts that ran (`scripts/x.py`).
    script: Option<String>,
}

/// Whether a tool call is a shell call.
fn is_shell_call(call: &ToolCall) -> bool {
    SHELL_TOOLS.contains(&call.name.as_str())
}

/// Whether a tool call is a file read.
fn is_read_call(call: &ToolCall) -> bool {
    READ_TOOLS.contains(&call.name.as_str())
}

/// Whether a tool call is a file write.
fn is_write_call(call: &ToolCall) -> bool {
    WRITE_TOOLS.contains(&call.name.as_str())
}

/// The shell commands of a trajectory: each shell tool call's command with the exit code of its
/// matching `commands` entry (matched by text, in order), and the `commands` entries no shell
/// tool call matched.
struct ShellView<'t> {
    /// Per tool call: its command and exit code, for shell calls with a command.
    per_call: Vec<Option<(String, Option<i32>)>>,
    /// `commands` entries without a shell tool call.
    extra: Vec<&'t CommandRun>,
}

impl<'t> ShellView<'t> {
    fn new(trajectory: &'t Trajectory) -> Self {
        let mut queues: HashMap<&str, VecDeque<usize>> = HashMap::new();
        for (index, run) in trajectory.commands.iter().enumerate() {
            queues
                .entry(run.command.as_str())
                .or_default()
                .push_back(index);
        }
        let mut matched = vec![false; trajectory.commands.len()];
        let per_call = trajectory
            .tool_calls
            .iter()
            .map(|call| {
                if !is_shell_call(call) {
                    return None;
                }
                let command = command_argument(&call.input)?;
                let exit_code = queues
                    .get_mut(command.as_str())
                    .and_then(VecDeque::pop_front)
                    .and_then(|index| {
                        matched[index] = true;
                        trajectory.commands[index].exit_code
                    });
                Some((command, exit_code))
            })
            .collect();
        let extra = trajectory
            .commands
            .iter()
            .zip(&matched)
            .filter(|(_, matched)| !**matched)
            .map(|(run, _)| run)
            .collect();
        Self { per_call, extra }
    }

    /// Every shell command, tool calls first (in order), then the unmatched `commands`.
    fn all_commands(&self) -> impl Iterator<Item = &str> {
        self.per_call
            .iter()
            .flatten()
            .map(|(command, _)| command.as_str())
            .chain(self.extra.iter().map(|run| run.command.as_str()))
    }

    /// Whether tool call `index` failed: an error result, or a shell call whose command exited
    /// non-zero.
    fn failed(&self, trajectory: &Trajectory, index: usize) -> bool {
        trajectory.tool_calls[index].is_error
            || self.per_call[index]
                .as_ref()
                .is_some_and(|(_, exit_code)| exit_code.is_some_and(|code| code != 0))
    }
}

/// Whether `text` mentions the file `file_name` as a whole name (`calc.py` in
/// `python scripts/calc.py`, not in `mycalc.py` or `calc.pyc`).
fn mentions_file(text: &str, file_name: &str) -> bool {
    if file_name.is_empty() {
        return false;
    }
    let is_name_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.');
    text.match_indices(file_name).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + file_name.len()..].chars().next();
        !before.is_some_and(is_name_char) && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The file name of a script path (`scripts/calc.py` → `calc.py`).
fn file_name_of(script: &str) -> &str {
    script
        .trim()
        .trim_end_matches('/')
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(script)
}

/// `text` cut to about `max` bytes on a character boundary, with `…` when cut.
fn truncate(text: &str, max: usize) -> String {
    crate::disk::redact::truncate(text.trim(), max)
}

/// Where an absolute path lies relative to the trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Inside the workspace.
    Workspace,
    /// Inside the trial's HOME.
    Home,
    /// Under `/tmp` or `/var/tmp`, or one of `/dev/null`, `/dev/stdout`, `/dev/stderr`,
    /// `/dev/fd/…`.
    Scratch,
    /// Outside all of those.
    Outside,
    /// The workspace is unknown, so it cannot be told.
    Unknown,
}

/// How paths are judged in a trial: its workspace and HOME, when known.
#[derive(Debug, Clone, Copy)]
struct Scope<'a> {
    workspace: Option<&'a Path>,
    home: Option<&'a Path>,
}

impl<'a> Scope<'a> {
    fn new(context: &MetricContext<'a>) -> Self {
        Self {
            workspace: context.workspace,
            home: context.home,
        }
    }

    /// A path as written (absolute, `~/…`, `$HOME/…`, or relative to the workspace), resolved
    /// lexically; `None` when it cannot be (another variable, or relative with no workspace).
    fn resolve(&self, path: &str) -> Option<PathBuf> {
        if let Some(rest) = home_relative(path) {
            let home = self.home?;
            return Some(normalize(home, rest));
        }
        if path.starts_with('$') {
            return None;
        }
        if Path::new(path).is_absolute() {
            return Some(normalize(Path::new("/"), path));
        }
        self.workspace.map(|workspace| normalize(workspace, path))
    }

    /// Where a resolved absolute path lies. Paths under `/private` also count as the same path
    /// without it (macOS spells `/var/…` and `/tmp/…` both ways).
    fn place(&self, path: &Path) -> Placement {
        let unprivate = path
            .strip_prefix("/private")
            .ok()
            .map(|rest| Path::new("/").join(rest));
        let candidates: Vec<&Path> = std::iter::once(path).chain(unprivate.as_deref()).collect();
        let inside = |root: Option<&Path>| {
            root.is_some_and(|root| candidates.iter().any(|path| path.starts_with(root)))
        };
        if inside(self.workspace) {
            return Placement::Workspace;
        }
        if inside(self.home) {
            return Placement::Home;
        }
        let scratch = candidates.iter().any(|path| {
            (path.starts_with("/tmp") && *path != Path::new("/tmp"))
                || (path.starts_with("/var/tmp") && *path != Path::new("/var/tmp"))
                || path.starts_with("/dev/fd")
                || ["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"]
                    .iter()
                    .any(|special| *path == Path::new(special))
        });
        if scratch {
            return Placement::Scratch;
        }
        if self.workspace.is_none() {
            return Placement::Unknown;
        }
        Placement::Outside
    }
}

/// The rest of a `~/…` or `$HOME/…` path (`""` for the home itself), or `None`.
fn home_relative(path: &str) -> Option<&str> {
    for prefix in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = path.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Some(rest.trim_start_matches('/'));
        }
    }
    None
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Small builders for hand-made trajectories, cases and contexts.

    use std::path::PathBuf;

    use serde_json::{Value, json};

    use crate::features::evalset::{ExpectedSkill, GoldenCase};
    use crate::features::grade::metric::MetricContext;
    use crate::values::trajectory::{
        ActivationEvidence, CommandRun, ScriptRun, SkillActivation, ToolCall, Trajectory,
    };

    pub(crate) const TARGET: &str = "release-notes";
    pub(crate) const DECOY: &str = "csv-tools";

    /// A case expecting `expected`.
    pub(crate) fn case(expected: ExpectedSkill) -> GoldenCase {
        GoldenCase {
            should_trigger: !matches!(expected, ExpectedSkill::None),
            expected_skill: expected,
            ..GoldenCase::new("case-1", "Write the release notes")
        }
    }

    /// A case expecting the target skill.
    pub(crate) fn positive() -> GoldenCase {
        case(ExpectedSkill::Named(TARGET.into()))
    }

    /// A negative case (`expected_skill: null`).
    pub(crate) fn negative() -> GoldenCase {
        case(ExpectedSkill::None)
    }

    /// An owned context, borrowed as a [`MetricContext`] with [`Setting::context`].
    pub(crate) struct Setting {
        pub staged: Vec<String>,
        pub observable: bool,
        pub can_run_commands: bool,
        pub workspace: Option<PathBuf>,
        pub home: Option<PathBuf>,
        pub secrets: Vec<(String, String)>,
    }

    impl Setting {
        /// The with-skill arm: target and decoy staged, activation observable.
        pub(crate) fn with_skill() -> Self {
            Self {
                staged: vec![TARGET.into(), DECOY.into()],
                observable: true,
                can_run_commands: true,
                workspace: Some(PathBuf::from("/trials/t1/workspace")),
                home: Some(PathBuf::from("/trials/t1/home")),
                secrets: vec![],
            }
        }

        /// The baseline arm: only the decoy staged.
        pub(crate) fn without_skill() -> Self {
            Self {
                staged: vec![DECOY.into()],
                ..Self::with_skill()
            }
        }

        pub(crate) fn context(&self) -> MetricContext<'_> {
            MetricContext {
                target_skill: TARGET,
                staged_skills: &self.staged,
                activation_observable: self.observable,
                can_run_commands: self.can_run_commands,
                workspace: self.workspace.as_deref(),
                home: self.home.as_deref(),
                secrets: &self.secrets,
            }
        }
    }

    /// Builds a trajectory call by call.
    #[derive(Default)]
    pub(crate) struct Trial {
        pub trajectory: Trajectory,
    }

    impl Trial {
        pub(crate) fn new() -> Self {
            Self::default()
        }

        /// A successful tool call.
        pub(crate) fn call(mut self, name: &str, input: Value) -> Self {
            let id = self.trajectory.tool_calls.len() + 1;
            self.trajectory.tool_calls.push(ToolCall {
                id: format!("call-{id}"),
                name: name.into(),
                input,
                output: Some("ok".into()),
                is_error: false,
                duration_s: None,
            });
            self
        }

        /// A tool call whose result was an error.
        pub(crate) fn failed_call(mut self, name: &str, input: Value) -> Self {
            self = self.call(name, input);
            if let Some(call) = self.trajectory.tool_calls.last_mut() {
                call.is_error = true;
                call.output = Some("error".into());
            }
            self
        }

        /// A `Bash` call and its `commands` entry with `exit_code`.
        pub(crate) fn shell(mut self, command: &str, exit_code: i32) -> Self {
            self = self.call("Bash", json!({ "command": command }));
            self.trajectory.commands.push(CommandRun {
                command: command.into(),
                exit_code: Some(exit_code),
            });
            self
        }

        /// A `Read` of `path`.
        pub(crate) fn read(self, path: &str) -> Self {
            self.call("Read", json!({ "file_path": path }))
        }

        /// A successful activation of `skill` through the skill tool (a `Skill` call).
        pub(crate) fn activate(self, skill: &str) -> Self {
            self.activate_by(skill, ActivationEvidence::SkillTool)
        }

        /// A successful activation of `skill` seen as `evidence`, with its tool call.
        pub(crate) fn activate_by(mut self, skill: &str, evidence: ActivationEvidence) -> Self {
            self = match evidence {
                ActivationEvidence::SkillTool => self.call("Skill", json!({ "skill": skill })),
                ActivationEvidence::FileRead => {
                    self.read(&format!(".claude/skills/{skill}/SKILL.md"))
                }
                ActivationEvidence::ShellCommand => {
                    self.shell(&format!("cat .claude/skills/{skill}/SKILL.md"), 0)
                }
            };
            let index = self.trajectory.tool_calls.len() - 1;
            self.trajectory.skill_activations.push(SkillActivation {
                skill: skill.into(),
                evidence,
                ok: true,
                tool_call_index: Some(index),
                target: skill == TARGET,
                reason: None,
            });
            self
        }

        /// A run of `skill`'s `scripts/<file>` through a `Bash` call.
        pub(crate) fn run_script(mut self, skill: &str, file: &str) -> Self {
            let command = format!("python .claude/skills/{skill}/scripts/{file}");
            self = self.shell(&command, 0);
            let index = self.trajectory.tool_calls.len() - 1;
            self.trajectory.script_runs.push(ScriptRun {
                skill: skill.into(),
                target: skill == TARGET,
                script: format!("scripts/{file}"),
                command,
                exit_code: Some(0),
                ok: true,
                tool_call_index: Some(index),
            });
            self
        }

        pub(crate) fn answer(mut self, text: &str) -> Self {
            self.trajectory.final_answer = Some(text.into());
            self
        }

        pub(crate) fn build(self) -> Trajectory {
            self.trajectory
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[test]
    fn expectation_follows_expected_skill_and_should_trigger() {
        let setting = Setting::with_skill();
        let context = setting.context();
        assert_eq!(
            expectation(&positive(), &context),
            Expectation::Positive(TARGET)
        );
        assert_eq!(expectation(&negative(), &context), Expectation::Negative);
        let mut unspecified = case(ExpectedSkill::Unspecified);
        assert_eq!(
            expectation(&unspecified, &context),
            Expectation::Positive(TARGET)
        );
        unspecified.should_trigger = false;
        assert_eq!(expectation(&unspecified, &context), Expectation::Negative);
    }

    #[test]
    fn file_mentions_respect_name_boundaries() {
        assert!(mentions_file("python scripts/calc.py --x", "calc.py"));
        assert!(mentions_file("'calc.py'", "calc.py"));
        assert!(!mentions_file("python mycalc.py", "calc.py"));
        assert!(!mentions_file("python calc.pyc", "calc.py"));
        assert_eq!(file_name_of("scripts/calc.py"), "calc.py");
    }

    #[test]
    fn placement_of_paths() {
        let setting = Setting::with_skill();
        let scope = Scope::new(&setting.context());
        let place = |path: &str| scope.resolve(path).map(|resolved| scope.place(&resolved));
        assert_eq!(place("src/../notes.md"), Some(Placement::Workspace));
        assert_eq!(place("../../../etc/passwd"), Some(Placement::Outside));
        assert_eq!(place("~/.config/x"), Some(Placement::Home));
        assert_eq!(place("/tmp/scratch"), Some(Placement::Scratch));
        assert_eq!(place("/tmp"), Some(Placement::Outside));
        assert_eq!(place("/dev/null"), Some(Placement::Scratch));
        assert_eq!(place("/private/tmp/x"), Some(Placement::Scratch));
        assert_eq!(place("$OUT/x"), None);
        let unknown = Scope {
            workspace: None,
            home: None,
        };
        assert_eq!(
            unknown.place(Path::new("/somewhere/else")),
            Placement::Unknown
        );
    }
}
