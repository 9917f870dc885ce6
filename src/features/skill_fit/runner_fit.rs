//! What a runner can do, for setting a skill's declared assumptions
//! ([`super::assumptions`]) against it: whether its model calls tools, runs code and sees
//! images ([`RunnerFacts`], from the profile and the runner kind), and which of the tools a
//! skill's `allowed-tools` names it grants ([`RunnerFacts::grant`]). Then
//! [`reconcile_declared`] turns each declared assumption into an environment finding:
//! satisfied, missing (a red flag) or unknown — never a guess: what neither the profile nor the
//! kind says is unknown, with the profile key that would say it.

use serde::Serialize;

use super::assumptions::{DeclaredAssumption, Requirement, ToolAccess};
use super::environment::{
    ContextLimit, EnvFinding, FindingKind, FitStatus, OperatingSystem, locale_language,
};
use crate::features::runner::{RunnerKind, RunnerProfile, SkillMode};

/// Whether a runner has a capability, and why that is known (or why not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "why", rename_all = "snake_case")]
pub(crate) enum Support {
    /// It has it.
    Yes(String),
    /// It has not.
    No(String),
    /// Neither the profile nor the kind says.
    Unknown(String),
}

/// What a runner profile, as configured, offers the skills it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct RunnerFacts {
    /// The profile's name.
    pub profile: String,
    /// Its kind.
    pub kind: RunnerKind,
    /// The model id checked (the profile's, or `--model`).
    pub model: String,
    /// Whether the model calls tools in this runner.
    pub tool_use: Support,
    /// Whether the agent can run commands or code.
    pub code_execution: Support,
    /// Whether the model receives images.
    pub vision: Support,
    /// `extra_args` of the profile (agent CLIs' permission flags are read from it).
    #[serde(skip)]
    extra_args: Vec<String>,
}

/// Model families documented by their vendors as accepting image input; matched on the
/// lowercased model id's prefix (after a `provider/`). A profile's `vision` wins.
const KNOWN_VISION_MODELS: [&str; 8] = [
    "claude-3",
    "claude-sonnet-4",
    "claude-opus-4",
    "claude-haiku-4",
    "gpt-4o",
    "gpt-4.1",
    "gpt-5",
    "gemini-",
];

/// Whether `model`'s family is documented as accepting images.
fn known_vision_model(model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    let lower = lower.rsplit('/').next().unwrap_or(&lower);
    KNOWN_VISION_MODELS
        .iter()
        .any(|prefix| lower.starts_with(prefix))
}

impl RunnerFacts {
    /// The facts of `profile` (named `profile_name`), for `model` when given instead of the
    /// profile's model.
    pub(crate) fn of_profile(
        profile_name: &str,
        profile: &RunnerProfile,
        model: Option<&str>,
    ) -> Self {
        let model = model.unwrap_or(&profile.model).to_string();
        let kind = profile.kind;
        let name = kind.name();
        let model_api = matches!(kind, RunnerKind::OpenaiChat | RunnerKind::AnthropicMessages);
        let tool_use = if !model_api {
            Support::Yes(format!("{name} is an agent that calls tools"))
        } else if !profile.tool_calls {
            Support::No(format!("profile {profile_name} sets tool_calls = false"))
        } else if profile.skill_mode == SkillMode::Inject {
            Support::No(format!(
                "profile {profile_name} uses skill_mode = \"inject\": one turn, no tools"
            ))
        } else {
            Support::Yes(format!(
                "{name} in skill_mode = \"tools\" offers activate_skill, read_file and final_answer"
            ))
        };
        let capabilities = kind.capabilities(profile);
        let code_execution = if capabilities.can_run_commands {
            Support::Yes(format!("{name} runs commands"))
        } else {
            Support::No(format!(
                "{name} is driven by skill-lift's own agent loop, which has no shell or code tool"
            ))
        };
        let vision = match profile.vision {
            _ if model_api => Support::No(format!(
                "{name} is driven by skill-lift's own agent loop, which sends text only (read_file returns text)"
            )),
            Some(true) => Support::Yes(format!("profile {profile_name} sets vision = true")),
            Some(false) => Support::No(format!("profile {profile_name} sets vision = false")),
            None if kind == RunnerKind::Command => Support::Unknown(format!(
                "a command runner's model is not known: set `vision` in profile {profile_name}"
            )),
            None if known_vision_model(&model) => Support::Yes(format!(
                "model {model} belongs to a family documented to accept images"
            )),
            None => Support::Unknown(format!(
                "not known whether model {model} accepts images: set `vision` in profile {profile_name}"
            )),
        };
        Self {
            profile: profile_name.to_string(),
            kind,
            model,
            tool_use,
            code_execution,
            vision,
            extra_args: profile.extra_args.clone(),
        }
    }

    /// Whether this runner lets the agent use a tool of `access` named in `allowed-tools`.
    pub(crate) fn grant(&self, access: ToolAccess) -> Support {
        let name = self.kind.name();
        let has_arg = |args: &[&str]| {
            self.extra_args.iter().any(|a| {
                args.iter()
                    .any(|wanted| a == wanted || a.starts_with(&format!("{wanted}=")))
            })
        };
        match self.kind {
            RunnerKind::OpenaiChat | RunnerKind::AnthropicMessages => {
                let tools = matches!(self.tool_use, Support::Yes(_));
                match access {
                    ToolAccess::Todo => Support::Yes("the agent's own state".to_string()),
                    ToolAccess::Skill => Support::Yes(format!(
                        "{name} hands skills to the model itself (system prompt or activate_skill)"
                    )),
                    ToolAccess::ReadFiles if tools => {
                        Support::Yes(format!("{name} offers read_file in skill_mode = \"tools\""))
                    }
                    ToolAccess::ReadFiles => Support::No(format!(
                        "{name} without tools (skill_mode = \"inject\" or tool_calls = false) reads no files"
                    )),
                    _ => Support::No(format!(
                        "skill-lift's agent loop ({name}) offers only activate_skill, read_file and final_answer"
                    )),
                }
            }
            RunnerKind::ClaudeCode => {
                if has_arg(&["--disallowedTools", "--disallowed-tools"]) {
                    return Support::Unknown(
                        "the profile's extra_args disallow some tools (--disallowedTools)".to_string(),
                    );
                }
                Support::Yes(
                    "Claude Code pre-approves a skill's allowed-tools while the skill is active"
                        .to_string(),
                )
            }
            RunnerKind::Codex => {
                let full = has_arg(&[
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--yolo",
                ]) || self
                    .extra_args
                    .windows(2)
                    .any(|w| matches!(w[0].as_str(), "-s" | "--sandbox") && w[1] == "danger-full-access");
                let write = full
                    || has_arg(&["--full-auto"])
                    || self.extra_args.windows(2).any(|w| {
                        matches!(w[0].as_str(), "-s" | "--sandbox") && w[1] == "workspace-write"
                    });
                match access {
                    ToolAccess::ReadFiles | ToolAccess::Skill | ToolAccess::Todo => {
                        Support::Yes("codex exec reads files in its default read-only sandbox".to_string())
                    }
                    ToolAccess::Shell => Support::Yes(if write {
                        "codex exec runs commands (sandbox per the profile's extra_args)".to_string()
                    } else {
                        "codex exec runs commands in its default read-only sandbox".to_string()
                    }),
                    ToolAccess::WriteFiles if write => {
                        Support::Yes("the profile's extra_args allow workspace writes".to_string())
                    }
                    ToolAccess::WriteFiles => Support::No(
                        "codex exec's default sandbox is read-only (add `--full-auto` or `-s workspace-write` to extra_args)".to_string(),
                    ),
                    ToolAccess::Web if full => {
                        Support::Yes("the profile's extra_args lift the sandbox".to_string())
                    }
                    ToolAccess::Web => Support::No(
                        "codex exec's sandbox has no network access by default".to_string(),
                    ),
                    ToolAccess::Subagents => Support::Unknown(
                        "codex exec's sub-agents are not known to skill-lift".to_string(),
                    ),
                }
            }
            RunnerKind::Gemini | RunnerKind::QwenCode => Support::Yes(format!(
                "{name} runs with --approval-mode yolo: every tool is approved"
            )),
            RunnerKind::Cursor => {
                Support::Yes("cursor-agent runs with --force: every tool is approved".to_string())
            }
            RunnerKind::Copilot => Support::Yes(
                "copilot runs with --allow-all-tools: every tool is approved".to_string(),
            ),
            RunnerKind::Goose => {
                Support::Yes("goose runs with GOOSE_MODE=auto: every tool is approved".to_string())
            }
            RunnerKind::Opencode => match access {
                ToolAccess::ReadFiles | ToolAccess::Skill | ToolAccess::Todo => {
                    Support::Yes("opencode allows reading by default".to_string())
                }
                _ if has_arg(&["--auto", "--yolo", "--dangerously-skip-permissions"]) => {
                    Support::Yes("the profile's extra_args approve every ask (--auto)".to_string())
                }
                _ => Support::Unknown(
                    "opencode run rejects every permission ask without --auto; whether this tool asks depends on its permission settings".to_string(),
                ),
            },
            RunnerKind::Command => Support::Unknown(
                "a command runner's tools are not known to skill-lift".to_string(),
            ),
        }
    }
}

/// What declared assumptions are checked against: the runner (when a profile is known), its
/// context window, the user's locale and the OS.
pub(crate) struct DeclaredContext<'a> {
    /// The runner; `None`: no profile named or found.
    pub runner: Option<&'a RunnerFacts>,
    /// The model's context window; `None`: unknown.
    pub context_limit: Option<&'a ContextLimit>,
    /// `LC_ALL` / `LC_MESSAGES` / `LANG`.
    pub locale: Option<&'a str>,
    /// The OS checked against.
    pub os: Option<OperatingSystem>,
}

/// The finding of one declared assumption: its kind, subject, status and why, quoting the
/// sentence that declares it.
pub(crate) fn reconcile_declared(
    assumption: &DeclaredAssumption,
    context: &DeclaredContext<'_>,
) -> EnvFinding {
    let no_runner =
        || FitStatus::Unknown.with("no runner profile to check against: pass --runner".to_string());
    let of_support = |support: &Support, needed: &str| match support {
        Support::Yes(why) => FitStatus::Satisfied.with(format!("{needed}: {why}")),
        Support::No(why) => FitStatus::Missing.with(format!("the skill needs {needed}; {why}")),
        Support::Unknown(why) => {
            FitStatus::Unknown.with(format!("the skill needs {needed}; {why}"))
        }
    };
    let (subject, (status, detail)) = match &assumption.requirement {
        Requirement::ContextWindow { tokens } => {
            let subject = format!("{} context window", token_label(*tokens));
            let verdict = match context.context_limit {
                None => FitStatus::Unknown.with(
                    "the runner's context window is unknown: set `context_tokens` in its profile or pass --context-limit".to_string(),
                ),
                Some(limit) if limit.tokens >= *tokens => FitStatus::Satisfied.with(format!(
                    "the model's window is {} tokens ({})",
                    limit.tokens, limit.source
                )),
                Some(limit) => FitStatus::Missing.with(format!(
                    "the skill needs a {}-token context window; the model's is {} tokens ({})",
                    tokens, limit.tokens, limit.source
                )),
            };
            (subject, verdict)
        }
        Requirement::OutputLanguage { language } => {
            let name = super::environment::language_name(language).to_string();
            let verdict = match context.locale {
                None => FitStatus::Unknown
                    .with("no locale set (LC_ALL, LC_MESSAGES, LANG)".to_string()),
                Some(locale) => match locale_language(locale) {
                    None => FitStatus::Unknown.with(format!("locale `{locale}` names no language")),
                    Some(user) if user == *language => {
                        FitStatus::Satisfied.with(format!("matches the locale {locale}"))
                    }
                    Some(user) => FitStatus::Missing.with(format!(
                        "the skill answers in {name} whatever the user writes; your locale is {locale} ({})",
                        super::environment::language_name(&user)
                    )),
                },
            };
            (name, verdict)
        }
        Requirement::OperatingSystem { any_of } => {
            let labels = any_of
                .iter()
                .map(|o| o.label())
                .collect::<Vec<_>>()
                .join(" / ");
            let verdict = match context.os {
                None => {
                    FitStatus::Unknown.with("this OS is none of macOS, Linux, Windows".to_string())
                }
                Some(here) if any_of.contains(&here) => FitStatus::Satisfied.with(format!(
                    "declares {labels}; this machine runs {}",
                    here.label()
                )),
                Some(here) => FitStatus::Missing.with(format!(
                    "the skill declares {labels}; this machine runs {}",
                    here.label()
                )),
            };
            (format!("declared: {labels}"), verdict)
        }
        Requirement::Vision => (
            "image input".to_string(),
            context.runner.map_or_else(no_runner, |r| {
                of_support(&r.vision, "a model that sees images")
            }),
        ),
        Requirement::ToolUse => (
            "tool calls".to_string(),
            context.runner.map_or_else(no_runner, |r| {
                of_support(&r.tool_use, "a model that calls tools")
            }),
        ),
        Requirement::CodeExecution => (
            "running commands".to_string(),
            context.runner.map_or_else(no_runner, |r| {
                of_support(&r.code_execution, "an agent that runs commands")
            }),
        ),
        Requirement::ToolPermission { tool, access } => (
            tool.clone(),
            context.runner.map_or_else(no_runner, |r| {
                of_support(&r.grant(*access), &format!("{tool} ({})", access.label()))
            }),
        ),
    };
    EnvFinding {
        kind: FindingKind::from(assumption.requirement.kind()),
        subject,
        status,
        detail,
        evidence: vec![assumption.quote.clone()],
    }
}

/// `200k`, `1M`, `32768` tokens, for a finding's subject.
fn token_label(tokens: u64) -> String {
    if tokens >= 1_000_000 && tokens.is_multiple_of(1_000_000) {
        format!("{}M-token", tokens / 1_000_000)
    } else if tokens >= 1_000 && tokens.is_multiple_of(1_000) {
        format!("{}k-token", tokens / 1_000)
    } else {
        format!("{tokens}-token")
    }
}

impl FitStatus {
    /// This status with its detail.
    fn with(self, detail: String) -> (FitStatus, String) {
        (self, detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::skill_fit::Evidence;

    fn profile(text: &str) -> RunnerProfile {
        toml::from_str(text).unwrap()
    }

    fn declared(requirement: Requirement) -> DeclaredAssumption {
        DeclaredAssumption {
            requirement,
            declared_in: super::super::assumptions::DeclaredIn::Body,
            quote: Evidence::at("SKILL.md", 7, "Requires it."),
        }
    }

    #[test]
    fn model_api_runners_see_no_images_and_grant_only_reading() {
        let tools = RunnerFacts::of_profile(
            "api",
            &profile(
                "kind = \"openai-chat\"\nbase_url = \"http://x/v1\"\nmodel = \"gpt-4o\"\nskill_mode = \"tools\"\nvision = true\n",
            ),
            None,
        );
        assert!(matches!(tools.vision, Support::No(_)), "{:?}", tools.vision);
        assert!(matches!(tools.tool_use, Support::Yes(_)));
        assert!(matches!(tools.code_execution, Support::No(_)));
        assert!(matches!(
            tools.grant(ToolAccess::ReadFiles),
            Support::Yes(_)
        ));
        assert!(matches!(
            tools.grant(ToolAccess::WriteFiles),
            Support::No(_)
        ));
        assert!(matches!(tools.grant(ToolAccess::Shell), Support::No(_)));
        let inject = RunnerFacts::of_profile(
            "local",
            &profile(
                "kind = \"openai-chat\"\nbase_url = \"http://x/v1\"\nmodel = \"m\"\nskill_mode = \"inject\"\n",
            ),
            None,
        );
        assert!(matches!(inject.tool_use, Support::No(_)));
        assert!(matches!(
            inject.grant(ToolAccess::ReadFiles),
            Support::No(_)
        ));
    }

    #[test]
    fn agent_cli_vision_from_the_profile_then_the_model_family_else_unknown() {
        let facts = |extra: &str, model: Option<&str>| {
            RunnerFacts::of_profile(
                "cli",
                &profile(&format!(
                    "kind = \"claude-code\"\nmodel = \"claude-sonnet-4-5\"\n{extra}"
                )),
                model,
            )
            .vision
        };
        assert!(matches!(facts("", None), Support::Yes(_)));
        assert!(matches!(facts("vision = false\n", None), Support::No(_)));
        assert!(matches!(
            facts("", Some("my-local-model")),
            Support::Unknown(_)
        ));
        assert!(matches!(
            facts("vision = true\n", Some("my-local-model")),
            Support::Yes(_)
        ));
    }

    #[test]
    fn codex_writes_only_when_its_sandbox_allows() {
        let codex = |extra: &str| {
            RunnerFacts::of_profile(
                "codex",
                &profile(&format!("kind = \"codex\"\nmodel = \"gpt-5\"\n{extra}")),
                None,
            )
        };
        assert!(matches!(
            codex("").grant(ToolAccess::WriteFiles),
            Support::No(_)
        ));
        assert!(matches!(
            codex("").grant(ToolAccess::Shell),
            Support::Yes(_)
        ));
        assert!(matches!(
            codex("extra_args = [\"--full-auto\"]\n").grant(ToolAccess::WriteFiles),
            Support::Yes(_)
        ));
        assert!(matches!(codex("").grant(ToolAccess::Web), Support::No(_)));
    }

    #[test]
    fn declared_requirements_reconciled() {
        let limit = ContextLimit {
            tokens: 8192,
            source: "test".to_string(),
            reply_tokens: 0,
        };
        let context = DeclaredContext {
            runner: None,
            context_limit: Some(&limit),
            locale: Some("en_US.UTF-8"),
            os: Some(OperatingSystem::Linux),
        };
        let check = |requirement| reconcile_declared(&declared(requirement), &context);
        let window = check(Requirement::ContextWindow { tokens: 200_000 });
        assert_eq!(window.status, FitStatus::Missing);
        assert_eq!(window.subject, "200k-token context window");
        assert_eq!(window.evidence[0].location(), "SKILL.md:7");
        assert_eq!(
            check(Requirement::ContextWindow { tokens: 8_000 }).status,
            FitStatus::Satisfied
        );
        assert_eq!(
            check(Requirement::OutputLanguage { language: "ja" }).status,
            FitStatus::Missing
        );
        assert_eq!(
            check(Requirement::OutputLanguage { language: "en" }).status,
            FitStatus::Satisfied
        );
        assert_eq!(
            check(Requirement::OperatingSystem {
                any_of: vec![OperatingSystem::Macos]
            })
            .status,
            FitStatus::Missing
        );
        assert_eq!(
            check(Requirement::OperatingSystem {
                any_of: vec![OperatingSystem::Macos, OperatingSystem::Linux]
            })
            .status,
            FitStatus::Satisfied
        );
        // Without a runner, what depends on it is unknown, never missing.
        let vision = check(Requirement::Vision);
        assert_eq!(vision.status, FitStatus::Unknown);
        assert!(vision.detail.contains("--runner"));
        let no_limit = DeclaredContext {
            context_limit: None,
            locale: None,
            ..context
        };
        assert_eq!(
            reconcile_declared(
                &declared(Requirement::ContextWindow { tokens: 1_000 }),
                &no_limit
            )
            .status,
            FitStatus::Unknown
        );
        assert_eq!(
            reconcile_declared(
                &declared(Requirement::OutputLanguage { language: "ja" }),
                &no_limit
            )
            .status,
            FitStatus::Unknown
        );
    }
}
