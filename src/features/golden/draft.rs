//! `golden draft`: ask a model (a judge profile: `openai-chat` or `anthropic-messages`, through
//! the runners' HTTP client with its retries) for draft cases that fill the gaps the author's
//! cases leave — positive cases, near-miss negatives (similar wording, but the skill should
//! not be used) and edge cases.
//!
//! The model sees `SKILL.md` and the author's cases (`EVAL.md`, the skill's eval set) with the
//! kinds they already cover, and answers one JSON object `{"cases": [{"kind", "prompt",
//! "expected_output", "expected_behaviors", "why"}]}`. A reply that is not that shape is
//! corrected once (the problem is sent back), then an error. Drafts whose prompt repeats an
//! author case are dropped; every kept draft is `status: draft`, `origin: generated`, with
//! provenance (profile, model). Author files are never written.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::features::evalset::{ExpectedSkill, GoldenCase};
use crate::features::runner::http::{RetryPolicy, post_json_with_retries_and_headers};
use crate::features::runner::profile::{LoadedProfile, RunnerKind};

/// The kind of a drafted case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DraftKind {
    /// The skill should be used and succeed.
    Positive,
    /// Similar wording, but the skill should not be used (a negative case).
    NearMiss,
    /// An unusual input the skill should still handle.
    Edge,
}

impl DraftKind {
    fn parse(text: &str) -> Option<Self> {
        match text.trim().to_lowercase().replace(['-', ' '], "_").as_str() {
            "positive" => Some(DraftKind::Positive),
            "near_miss" | "near_miss_negative" | "negative" => Some(DraftKind::NearMiss),
            "edge" | "edge_case" => Some(DraftKind::Edge),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            DraftKind::Positive => "positive",
            DraftKind::NearMiss => "near_miss",
            DraftKind::Edge => "edge",
        }
    }
}

/// One case the model drafted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct GeneratedCase {
    pub kind: DraftKind,
    pub prompt: String,
    pub expected_output: Option<String>,
    pub expected_behaviors: Vec<String>,
    pub why: Option<String>,
}

/// Errors of `golden draft`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DraftError {
    #[error(
        "profile `{profile}` has kind `{kind}`; golden draft needs a judge profile of kind openai-chat or anthropic-messages"
    )]
    Kind { profile: String, kind: String },
    #[error("profile `{profile}`: {message}")]
    Request { profile: String, message: String },
    #[error("profile `{profile}`: no usable drafts after a correction: {problem}")]
    Answer { profile: String, problem: String },
}

/// The system message.
pub(crate) const SYSTEM: &str = "You write evaluation cases (golden_cases) for an Agent Skill. Answer with one JSON object only: {\"cases\": [{\"kind\": \"positive\" | \"near_miss\" | \"edge\", \"prompt\": string, \"expected_output\": string or null, \"expected_behaviors\": [string], \"why\": string}]}. positive: a realistic user request the skill is for. near_miss: a request worded like the skill's domain that the skill should NOT handle. edge: an unusual but valid request the skill should still handle. Never repeat or paraphrase the author's cases; fill the gaps they leave.";

/// The user message: the skill, the author's cases and what to add.
pub(crate) fn user_message(skill_md: &str, author: &[GoldenCase], count: usize) -> String {
    let positive = author
        .iter()
        .filter(|c| c.expected_skill != ExpectedSkill::None)
        .count();
    let negative = author.len() - positive;
    let mut text = format!(
        "## SKILL.md\n\n{skill_md}\n\n## The author's cases ({positive} positive, {negative} negative)\n\n"
    );
    if author.is_empty() {
        text.push_str("(none)\n");
    }
    for case in author {
        text.push_str(&format!(
            "- [{}] {}\n",
            if case.expected_skill == ExpectedSkill::None {
                "negative"
            } else {
                "positive"
            },
            case.prompt.replace('\n', " ")
        ));
    }
    text.push_str(&format!(
        "\n## Task\n\nDraft {count} new cases. Cover every kind at least once (positive, near_miss, edge), favouring the kinds the author has fewest of{}.\n",
        if negative == 0 { " (the author has no negative case: include near misses)" } else { "" }
    ));
    text
}

/// What is wrong with the model's answer (sent back to it in the correction).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ReplyError {
    /// The answer does not parse as JSON.
    #[error("the answer is not JSON: {0}")]
    NotJson(String),
    /// No `cases` list.
    #[error("the answer has no `cases` list")]
    NoCases,
    /// A case's `kind` is not one of the three.
    #[error("cases[{0}].kind must be positive, near_miss or edge")]
    Kind(usize),
    /// A case's `prompt` is missing or empty.
    #[error("cases[{0}].prompt must be a non-empty string")]
    Prompt(usize),
    /// A case's `expected_behaviors` holds something else than strings.
    #[error("cases[{0}].expected_behaviors must be strings")]
    BehaviorNotAString(usize),
    /// A case's `expected_behaviors` is not a list.
    #[error("cases[{0}].expected_behaviors must be a list")]
    BehaviorsNotAList(usize),
    /// The `cases` list is empty.
    #[error("the `cases` list is empty")]
    Empty,
}

/// Read the model's answer.
pub(crate) fn parse_reply(text: &str) -> Result<Vec<GeneratedCase>, ReplyError> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .map(|rest| rest.trim_end().trim_end_matches("```"))
        .unwrap_or(trimmed);
    let value: Value =
        serde_json::from_str(body).map_err(|e| ReplyError::NotJson(e.to_string()))?;
    let Some(items) = value.get("cases").and_then(Value::as_array) else {
        return Err(ReplyError::NoCases);
    };
    let mut cases = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let kind = item
            .get("kind")
            .and_then(Value::as_str)
            .and_then(DraftKind::parse)
            .ok_or(ReplyError::Kind(index))?;
        let prompt = item
            .get("prompt")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .ok_or(ReplyError::Prompt(index))?;
        let behaviors = match item.get("expected_behaviors") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .map(|b| {
                    b.as_str()
                        .map(str::to_string)
                        .ok_or(ReplyError::BehaviorNotAString(index))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(ReplyError::BehaviorsNotAList(index)),
        };
        cases.push(GeneratedCase {
            kind,
            prompt: prompt.to_string(),
            expected_output: item
                .get("expected_output")
                .and_then(Value::as_str)
                .map(str::to_string)
                .filter(|o| !o.trim().is_empty()),
            expected_behaviors: behaviors,
            why: item.get("why").and_then(Value::as_str).map(str::to_string),
        });
    }
    if cases.is_empty() {
        return Err(ReplyError::Empty);
    }
    Ok(cases)
}

/// Ask the model for drafts: one request, plus one correction when the answer is unusable.
pub(crate) async fn ask(
    profile: &LoadedProfile,
    api_key: Option<&str>,
    user: &str,
) -> Result<Vec<GeneratedCase>, DraftError> {
    let settings = &profile.profile;
    let anthropic = match settings.kind {
        RunnerKind::OpenaiChat => false,
        RunnerKind::AnthropicMessages => true,
        other => {
            return Err(DraftError::Kind {
                profile: profile.name.clone(),
                kind: other.name().to_string(),
            });
        }
    };
    let base = settings.base_url.trim().trim_end_matches('/');
    let base = if base.is_empty() && anthropic {
        "https://api.anthropic.com/v1"
    } else {
        base
    };
    let url = if anthropic {
        format!("{base}/messages")
    } else {
        format!("{base}/chat/completions")
    };
    let client = reqwest::Client::new();
    let policy = RetryPolicy {
        max_retries: settings.max_retries,
        base_delay: Duration::from_secs_f64(settings.retry_base_delay_s.max(0.0)),
        max_delay: Duration::from_secs_f64(settings.max_retry_delay_s),
        max_response_bytes: crate::features::runner::profile::DEFAULT_MAX_RESPONSE_BYTES,
    };
    let mut turns = vec![json!({"role": "user", "content": user})];
    let mut problem = String::new();
    for _ in 0..2 {
        let deadline = Instant::now() + Duration::from_secs_f64(settings.timeout_s.max(1.0));
        let mut headers: Vec<(&str, &str)> = Vec::new();
        let (body, bearer) = if anthropic {
            if let Some(key) = api_key {
                headers.push(("x-api-key", key));
            }
            headers.push(("anthropic-version", "2023-06-01"));
            (
                json!({"model": settings.model, "max_tokens": settings.max_tokens.unwrap_or(4096),
                       "system": SYSTEM, "messages": turns}),
                None,
            )
        } else {
            let mut messages = vec![json!({"role": "system", "content": SYSTEM})];
            messages.extend(turns.iter().cloned());
            let mut body = json!({"model": settings.model, "messages": messages});
            if let Some(temperature) = settings.temperature {
                body["temperature"] = json!(temperature);
            }
            (body, api_key)
        };
        let outcome = post_json_with_retries_and_headers(
            &client, &url, bearer, &headers, &body, policy, deadline,
        )
        .await
        .map_err(|failure| DraftError::Request {
            profile: profile.name.clone(),
            message: failure.message,
        })?;
        let text = if anthropic {
            outcome.body["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        } else {
            outcome.body["choices"][0]["message"]["content"]
                .as_str()
                .unwrap_or("")
                .to_string()
        };
        match parse_reply(&text) {
            Ok(cases) => return Ok(cases),
            Err(found) => {
                problem = found.to_string();
                turns.push(json!({"role": "assistant", "content": text}));
                turns.push(json!({"role": "user", "content": format!("That answer cannot be used: {problem}. Answer again with the JSON object only.")}));
            }
        }
    }
    Err(DraftError::Answer {
        profile: profile.name.clone(),
        problem,
    })
}

/// The drafts as an eval set: prompts that repeat an author case (or each other) dropped;
/// ids `gen-<kind>-<n>` not used by an author case; `status: draft`, `origin: generated`.
/// Returns the set and how many drafts were dropped.
pub(crate) fn to_eval_set(
    skill: &str,
    author: &[GoldenCase],
    drafts: &[GeneratedCase],
    profile: &str,
    model: &str,
) -> (Value, usize) {
    let key = super::mine::prompt_key;
    let mut prompts: BTreeSet<String> = author.iter().map(|c| key(&c.prompt)).collect();
    let ids: BTreeSet<&str> = author.iter().map(|c| c.id.as_str()).collect();
    let mut evals = Vec::new();
    let mut dropped = 0;
    let mut number = 0;
    for draft in drafts {
        if !prompts.insert(key(&draft.prompt)) {
            dropped += 1;
            continue;
        }
        let id = loop {
            number += 1;
            let id = format!("gen-{}-{number}", draft.kind.as_str().replace('_', "-"));
            if !ids.contains(id.as_str()) {
                break id;
            }
        };
        let mut case = json!({
            "id": id,
            "prompt": crate::disk::redact::redact_text(&draft.prompt),
            "status": "draft",
            "origin": "generated",
            "expected_skill": if draft.kind == DraftKind::NearMiss { Value::Null } else { json!(skill) },
            "files": [],
            "provenance": {"source": "generated", "kind": draft.kind, "profile": profile, "model": model, "why": draft.why},
        });
        if let Some(expected) = &draft.expected_output {
            case["expected_output"] = json!(crate::disk::redact::redact_text(expected));
        }
        if !draft.expected_behaviors.is_empty() {
            case["assertions"] = json!(draft.expected_behaviors);
        }
        evals.push(case);
    }
    (json!({"skill_name": skill, "evals": evals}), dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_and_checked() {
        let good = r#"```json
{"cases": [{"kind": "near-miss", "prompt": "explain what a changelog is", "expected_output": null, "expected_behaviors": [], "why": "no notes to write"},
           {"kind": "edge", "prompt": "notes for a tag with no commits", "expected_behaviors": ["says there is nothing to report"]}]}
```"#;
        let cases = parse_reply(good).unwrap();
        assert_eq!(cases[0].kind, DraftKind::NearMiss);
        assert_eq!(cases[1].expected_behaviors.len(), 1);
        assert!(
            parse_reply("sure, here you go")
                .unwrap_err()
                .to_string()
                .contains("not JSON")
        );
        assert!(
            parse_reply(r#"{"cases": [{"kind": "odd", "prompt": "x"}]}"#)
                .unwrap_err()
                .to_string()
                .contains("cases[0].kind")
        );
        assert!(
            parse_reply(r#"{"cases": []}"#)
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
    }

    #[test]
    fn drafts_never_repeat_author_cases_or_ids() {
        let mut author = GoldenCase::new("gen-positive-1", "Draft release notes since v2.2");
        author.expected_skill = ExpectedSkill::Named("notes".into());
        let drafts = vec![
            GeneratedCase {
                kind: DraftKind::Positive,
                prompt: "draft release notes  since v2.2".into(),
                expected_output: None,
                expected_behaviors: vec![],
                why: None,
            },
            GeneratedCase {
                kind: DraftKind::Positive,
                prompt: "Notes for the 3.0 release".into(),
                expected_output: Some("A list".into()),
                expected_behaviors: vec![],
                why: None,
            },
            GeneratedCase {
                kind: DraftKind::NearMiss,
                prompt: "What is a release note?".into(),
                expected_output: None,
                expected_behaviors: vec![],
                why: None,
            },
        ];
        let (set, dropped) = to_eval_set("notes", &[author], &drafts, "judge", "m");
        assert_eq!(dropped, 1);
        let evals = set["evals"].as_array().unwrap();
        assert_eq!(evals.len(), 2);
        assert_eq!(evals[0]["id"], "gen-positive-2");
        assert_eq!(evals[0]["status"], "draft");
        assert_eq!(evals[0]["origin"], "generated");
        assert_eq!(evals[1]["expected_skill"], Value::Null);
    }
}
