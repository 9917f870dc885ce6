//! Strict parsing of a judge's answer: exactly one JSON object of the metric's schema, alone or
//! inside one fenced code block (```` ```json ````). Anything else is malformed, with a short
//! description of the problem that is sent back to the judge when it is asked again.

use serde_json::{Map, Value};

use super::JudgeMetricKind;
use super::rubric::ACCURACY_CRITERIA;

/// One yes/no item of a validated answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ItemVerdict {
    /// `skill_identified`, …, `goal_achieved`, or `assertion_<n>` (1-based).
    pub name: String,
    /// Whether the judge answered yes.
    pub yes: bool,
    /// The judge's justification of this item (the shared `reason` for accuracy and goal).
    pub evidence: String,
}

/// A validated answer: its items in rubric order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParsedAnswer {
    pub items: Vec<ItemVerdict>,
    /// The answer's `reason` (empty for behavior_check, whose justifications are per item).
    pub reason: String,
}

impl ParsedAnswer {
    /// Fraction of items answered yes, in [0, 1].
    pub fn score(&self) -> f64 {
        if self.items.is_empty() {
            return 0.0;
        }
        self.items.iter().filter(|i| i.yes).count() as f64 / self.items.len() as f64
    }
}

/// Take the JSON object out of a judge's answer text: the text itself, or the content of one
/// fenced block (language tag `json` or none) that is the whole answer.
pub(crate) fn extract_object(text: &str) -> Result<Map<String, Value>, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("the answer was empty".to_string());
    }
    let json_text = match trimmed.strip_prefix("```") {
        Some(rest) => {
            let Some(newline) = rest.find('\n') else {
                return Err("the code fence holds no JSON object".to_string());
            };
            let tag = rest[..newline].trim();
            if !(tag.is_empty() || tag.eq_ignore_ascii_case("json")) {
                return Err(format!(
                    "the code fence is tagged `{tag}`; expected a JSON object"
                ));
            }
            let inner = &rest[newline + 1..];
            let Some(inner) = inner.trim_end().strip_suffix("```") else {
                return Err(
                    "the answer has text after the code fence, or the fence is not closed"
                        .to_string(),
                );
            };
            if inner.contains("```") {
                return Err("the answer has more than one code fence".to_string());
            }
            inner.trim()
        }
        None => trimmed,
    };
    // Raw line breaks or tabs inside a string value (common from small models) are escaped
    // before parsing: the structure is unchanged, only the text of a reason is repaired.
    let repaired = escape_control_characters_in_strings(json_text);
    let value: Value = serde_json::from_str(&repaired).map_err(|error| {
        if json_text.starts_with('{') {
            format!("the answer is not valid JSON ({error})")
        } else {
            "the answer is not a JSON object alone (it has text around the object)".to_string()
        }
    })?;
    match value {
        Value::Object(object) => Ok(object),
        _ => Err("the answer is JSON but not an object".to_string()),
    }
}

/// Escape control characters (U+0000–U+001F) that appear unescaped inside JSON string
/// literals; everything outside strings, and escaped characters, is left as it is.
fn escape_control_characters_in_strings(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c < ' ') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            } else if c < ' ' {
                match c {
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    other => out.push_str(&format!("\\u{:04x}", other as u32)),
                }
                continue;
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    std::borrow::Cow::Owned(out)
}

/// Check that `object` has exactly the keys `expected`.
fn exact_keys(object: &Map<String, Value>, expected: &[&str], what: &str) -> Result<(), String> {
    if let Some(extra) = object.keys().find(|k| !expected.contains(&k.as_str())) {
        return Err(format!("{what} has an unexpected key `{extra}`"));
    }
    if let Some(missing) = expected.iter().find(|k| !object.contains_key(**k)) {
        return Err(format!("{what} is missing the key `{missing}`"));
    }
    Ok(())
}

/// A `"yes"`/`"no"` value (any letter case, nothing else).
fn yes_no(value: &Value, key: &str) -> Result<bool, String> {
    match value.as_str() {
        Some(text) if text.eq_ignore_ascii_case("yes") => Ok(true),
        Some(text) if text.eq_ignore_ascii_case("no") => Ok(false),
        _ => Err(format!(
            "`{key}` must be \"yes\" or \"no\", not {}",
            short(&value.to_string())
        )),
    }
}

fn text(value: &Value, key: &str) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("`{key}` must be a string"))
}

fn short(text: &str) -> String {
    super::render::truncate_middle(text, 60)
}

/// Validate a parsed object against the schema of `metric` (`assertion_count` assertions for
/// behavior_check).
pub(crate) fn validate(
    metric: JudgeMetricKind,
    assertion_count: usize,
    object: &Map<String, Value>,
) -> Result<ParsedAnswer, String> {
    match metric {
        JudgeMetricKind::Accuracy => {
            let mut keys: Vec<&str> = ACCURACY_CRITERIA.to_vec();
            keys.push("reason");
            exact_keys(object, &keys, "the object")?;
            let reason = text(&object["reason"], "reason")?;
            let items = ACCURACY_CRITERIA
                .iter()
                .map(|criterion| {
                    Ok(ItemVerdict {
                        name: criterion.to_string(),
                        yes: yes_no(&object[*criterion], criterion)?,
                        evidence: reason.clone(),
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(ParsedAnswer { items, reason })
        }
        JudgeMetricKind::GoalAccuracy => {
            exact_keys(object, &["goal_achieved", "reason"], "the object")?;
            let reason = text(&object["reason"], "reason")?;
            let yes = yes_no(&object["goal_achieved"], "goal_achieved")?;
            Ok(ParsedAnswer {
                items: vec![ItemVerdict {
                    name: "goal_achieved".to_string(),
                    yes,
                    evidence: reason.clone(),
                }],
                reason,
            })
        }
        JudgeMetricKind::BehaviorCheck => {
            exact_keys(object, &["verdicts"], "the object")?;
            let Some(verdicts) = object["verdicts"].as_array() else {
                return Err("`verdicts` must be an array".to_string());
            };
            if verdicts.len() != assertion_count {
                return Err(format!(
                    "`verdicts` has {} entries; there are {assertion_count} assertions, one verdict each",
                    verdicts.len()
                ));
            }
            let mut slots: Vec<Option<ItemVerdict>> = vec![None; assertion_count];
            for (position, verdict) in verdicts.iter().enumerate() {
                let what = format!("verdict {}", position + 1);
                let Some(verdict) = verdict.as_object() else {
                    return Err(format!("{what} is not an object"));
                };
                exact_keys(verdict, &["assertion", "verdict", "evidence"], &what)?;
                let number = verdict["assertion"]
                    .as_u64()
                    .filter(|n| (1..=assertion_count as u64).contains(n))
                    .ok_or_else(|| {
                        format!(
                            "{what}: `assertion` must be a number from 1 to {assertion_count}, not {}",
                            short(&verdict["assertion"].to_string())
                        )
                    })? as usize;
                let slot = &mut slots[number - 1];
                if slot.is_some() {
                    return Err(format!("assertion {number} has more than one verdict"));
                }
                *slot = Some(ItemVerdict {
                    name: format!("assertion_{number}"),
                    yes: yes_no(&verdict["verdict"], "verdict")
                        .map_err(|problem| format!("{what}: {problem}"))?,
                    evidence: text(&verdict["evidence"], "evidence")
                        .map_err(|problem| format!("{what}: {problem}"))?,
                });
            }
            // Counts match and no number repeats, so every slot is filled.
            let items = slots.into_iter().flatten().collect();
            Ok(ParsedAnswer {
                items,
                reason: String::new(),
            })
        }
    }
}

/// Parse and validate a judge's answer text.
pub(crate) fn parse_answer(
    metric: JudgeMetricKind,
    assertion_count: usize,
    text: &str,
) -> Result<ParsedAnswer, String> {
    let object = extract_object(text)?;
    validate(metric, assertion_count, &object)
}

/// The canonical JSON of a validated answer (verdicts lower-case, assertions in order): what
/// the cache stores. It validates again under the same schema.
pub(crate) fn canonical_json(metric: JudgeMetricKind, answer: &ParsedAnswer) -> Value {
    let word = |yes: bool| Value::from(if yes { "yes" } else { "no" });
    match metric {
        JudgeMetricKind::Accuracy | JudgeMetricKind::GoalAccuracy => {
            let mut object = Map::new();
            for item in &answer.items {
                object.insert(item.name.clone(), word(item.yes));
            }
            object.insert("reason".to_string(), Value::from(answer.reason.clone()));
            Value::Object(object)
        }
        JudgeMetricKind::BehaviorCheck => {
            let verdicts: Vec<Value> = answer
                .items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    serde_json::json!({
                        "assertion": index + 1,
                        "verdict": word(item.yes),
                        "evidence": item.evidence,
                    })
                })
                .collect();
            serde_json::json!({ "verdicts": verdicts })
        }
    }
}
