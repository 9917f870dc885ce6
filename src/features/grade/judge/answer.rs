//! Strict parsing of a judge's answer: exactly one JSON object of the metric's schema, alone or
//! inside one fenced code block (```` ```json ````). Anything else is malformed, with a short
//! description of the problem that is sent back to the judge when it is asked again.

use serde_json::{Map, Value};

use super::JudgeMetricKind;
use super::rubric::{ACCURACY_CRITERIA, STYLE_ITEMS};

/// What is wrong with a judge's answer. The text is sent back to the judge when it is asked
/// again, and recorded as the trial's reason when it never answers well.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum AnswerError {
    /// Nothing but white space.
    #[error("the answer was empty")]
    Empty,
    /// A code fence with nothing after its opening line.
    #[error("the code fence holds no JSON object")]
    EmptyFence,
    /// A code fence tagged with another language than `json`.
    #[error("the code fence is tagged `{tag}`; expected a JSON object")]
    FenceTag {
        /// The tag.
        tag: String,
    },
    /// Text after the closing fence, or no closing fence.
    #[error("the answer has text after the code fence, or the fence is not closed")]
    FenceNotClosed,
    /// More than one code fence.
    #[error("the answer has more than one code fence")]
    SeveralFences,
    /// Text that starts as an object but does not parse.
    #[error("the answer is not valid JSON ({detail})")]
    InvalidJson {
        /// The JSON parser's message.
        detail: String,
    },
    /// An object with text around it.
    #[error("the answer is not a JSON object alone (it has text around the object)")]
    TextAroundObject,
    /// Valid JSON of another kind than an object.
    #[error("the answer is JSON but not an object")]
    NotAnObject,
    /// A key the schema does not have.
    #[error("{what} has an unexpected key `{key}`")]
    UnexpectedKey {
        /// `the object` or `verdict <n>`.
        what: String,
        /// The key.
        key: String,
    },
    /// A key the schema requires is absent.
    #[error("{what} is missing the key `{key}`")]
    MissingKey {
        /// `the object` or `verdict <n>`.
        what: String,
        /// The key.
        key: String,
    },
    /// A verdict that is not `"yes"` or `"no"`.
    #[error("`{key}` must be \"yes\" or \"no\", not {value}")]
    NotYesNo {
        /// The key.
        key: String,
        /// The value given, shortened.
        value: String,
    },
    /// A reason or evidence that is not a string.
    #[error("`{key}` must be a string")]
    NotString {
        /// The key.
        key: String,
    },
    /// `verdicts` is not an array.
    #[error("`verdicts` must be an array")]
    VerdictsNotArray,
    /// Not one verdict per assertion.
    #[error("`verdicts` has {found} entries; there are {expected} assertions, one verdict each")]
    VerdictCount {
        /// Verdicts given.
        found: usize,
        /// Assertions asked about.
        expected: usize,
    },
    /// A verdict that is not an object.
    #[error("{what} is not an object")]
    VerdictNotObject {
        /// `verdict <n>`.
        what: String,
    },
    /// A verdict's assertion number out of range or not a number.
    #[error("{what}: `assertion` must be a number from 1 to {count}, not {value}")]
    AssertionNumber {
        /// `verdict <n>`.
        what: String,
        /// Assertions asked about.
        count: usize,
        /// The value given, shortened.
        value: String,
    },
    /// Two verdicts for one assertion.
    #[error("assertion {number} has more than one verdict")]
    RepeatedAssertion {
        /// The assertion's number (1-based).
        number: usize,
    },
    /// A problem inside one verdict.
    #[error("{what}: {problem}")]
    InVerdict {
        /// `verdict <n>`.
        what: String,
        /// The problem.
        problem: Box<AnswerError>,
    },
}

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
    pub(super) fn score(&self) -> f64 {
        if self.items.is_empty() {
            return 0.0;
        }
        self.items.iter().filter(|i| i.yes).count() as f64 / self.items.len() as f64
    }
}

/// Take the JSON object out of a judge's answer text: the text itself, or the content of one
/// fenced block (language tag `json` or none) that is the whole answer.
pub(crate) fn extract_object(text: &str) -> Result<Map<String, Value>, AnswerError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(AnswerError::Empty);
    }
    let json_text = match trimmed.strip_prefix("```") {
        Some(rest) => {
            let Some(newline) = rest.find('\n') else {
                return Err(AnswerError::EmptyFence);
            };
            let tag = rest[..newline].trim();
            if !(tag.is_empty() || tag.eq_ignore_ascii_case("json")) {
                return Err(AnswerError::FenceTag {
                    tag: tag.to_string(),
                });
            }
            let inner = &rest[newline + 1..];
            let Some(inner) = inner.trim_end().strip_suffix("```") else {
                return Err(AnswerError::FenceNotClosed);
            };
            if inner.contains("```") {
                return Err(AnswerError::SeveralFences);
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
            AnswerError::InvalidJson {
                detail: error.to_string(),
            }
        } else {
            AnswerError::TextAroundObject
        }
    })?;
    match value {
        Value::Object(object) => Ok(object),
        _ => Err(AnswerError::NotAnObject),
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
fn exact_keys(
    object: &Map<String, Value>,
    expected: &[&str],
    what: &str,
) -> Result<(), AnswerError> {
    if let Some(extra) = object.keys().find(|k| !expected.contains(&k.as_str())) {
        return Err(AnswerError::UnexpectedKey {
            what: what.to_string(),
            key: extra.clone(),
        });
    }
    if let Some(missing) = expected.iter().find(|k| !object.contains_key(**k)) {
        return Err(AnswerError::MissingKey {
            what: what.to_string(),
            key: missing.to_string(),
        });
    }
    Ok(())
}

/// A `"yes"`/`"no"` value (any letter case, nothing else).
fn yes_no(value: &Value, key: &str) -> Result<bool, AnswerError> {
    match value.as_str() {
        Some(text) if text.eq_ignore_ascii_case("yes") => Ok(true),
        Some(text) if text.eq_ignore_ascii_case("no") => Ok(false),
        _ => Err(AnswerError::NotYesNo {
            key: key.to_string(),
            value: short(&value.to_string()),
        }),
    }
}

fn text(value: &Value, key: &str) -> Result<String, AnswerError> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| AnswerError::NotString {
            key: key.to_string(),
        })
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
) -> Result<ParsedAnswer, AnswerError> {
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
                .collect::<Result<Vec<_>, AnswerError>>()?;
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
        JudgeMetricKind::Style => {
            let reason_keys: Vec<String> =
                STYLE_ITEMS.iter().map(|i| format!("{i}_reason")).collect();
            let mut keys: Vec<&str> = STYLE_ITEMS.to_vec();
            keys.extend(reason_keys.iter().map(String::as_str));
            exact_keys(object, &keys, "the object")?;
            let items = STYLE_ITEMS
                .iter()
                .zip(&reason_keys)
                .map(|(item, reason_key)| {
                    Ok(ItemVerdict {
                        name: item.to_string(),
                        yes: yes_no(&object[*item], item)?,
                        evidence: text(&object[reason_key.as_str()], reason_key)?,
                    })
                })
                .collect::<Result<Vec<_>, AnswerError>>()?;
            Ok(ParsedAnswer {
                items,
                reason: String::new(),
            })
        }
        JudgeMetricKind::BehaviorCheck => {
            exact_keys(object, &["verdicts"], "the object")?;
            let Some(verdicts) = object["verdicts"].as_array() else {
                return Err(AnswerError::VerdictsNotArray);
            };
            if verdicts.len() != assertion_count {
                return Err(AnswerError::VerdictCount {
                    found: verdicts.len(),
                    expected: assertion_count,
                });
            }
            let mut slots: Vec<Option<ItemVerdict>> = vec![None; assertion_count];
            for (position, verdict) in verdicts.iter().enumerate() {
                let what = format!("verdict {}", position + 1);
                let Some(verdict) = verdict.as_object() else {
                    return Err(AnswerError::VerdictNotObject { what });
                };
                exact_keys(verdict, &["assertion", "verdict", "evidence"], &what)?;
                let number = verdict["assertion"]
                    .as_u64()
                    .filter(|n| (1..=assertion_count as u64).contains(n))
                    .ok_or_else(|| AnswerError::AssertionNumber {
                        what: what.clone(),
                        count: assertion_count,
                        value: short(&verdict["assertion"].to_string()),
                    })? as usize;
                let in_verdict = |problem| AnswerError::InVerdict {
                    what: what.clone(),
                    problem: Box::new(problem),
                };
                let slot = &mut slots[number - 1];
                if slot.is_some() {
                    return Err(AnswerError::RepeatedAssertion { number });
                }
                *slot = Some(ItemVerdict {
                    name: format!("assertion_{number}"),
                    yes: yes_no(&verdict["verdict"], "verdict").map_err(in_verdict)?,
                    evidence: text(&verdict["evidence"], "evidence").map_err(in_verdict)?,
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
) -> Result<ParsedAnswer, AnswerError> {
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
        JudgeMetricKind::Style => {
            let mut object = Map::new();
            for item in &answer.items {
                object.insert(item.name.clone(), word(item.yes));
                object.insert(
                    format!("{}_reason", item.name),
                    Value::from(item.evidence.clone()),
                );
            }
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
