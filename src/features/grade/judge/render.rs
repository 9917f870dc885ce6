//! A faithful, size-bounded text rendering of a trajectory for an LLM judge.
//!
//! Shape (sections in this order; empty sections read `(none)`):
//!
//! ```text
//! # Trajectory of the agent
//! Run status: complete.
//!
//! ## Skill activations
//! - calculator (skill under evaluation) via a skill tool call: succeeded
//!
//! ## Conversation and tool calls
//! [user]
//! …
//! [tool call 1: Bash] (error)
//! input: {"command":"ls"}
//! output:
//! …
//!
//! ## Shell commands
//! - `ls` → exit code 0
//!
//! ## Final answer
//! …
//! ```
//!
//! Sizes are counted in characters (Unicode scalar values). When everything does not fit in
//! `max_chars`, long texts (message contents, tool inputs and outputs, commands) are cut in the
//! middle with a `[… N characters omitted …]` marker, each to a common cap as large as the budget
//! allows; when even the smallest cap does not fit, whole entries are left out from the middle of
//! the record (the beginning and the end stay) with a `[… N entries omitted …]` marker. The final
//! answer is never left out: it gets at least half the budget, and is only cut in the middle when
//! it alone is larger than that.

use crate::values::trajectory::{ActivationEvidence, Role, ToolCall, Trajectory, TrajectoryStatus};

/// The default bound of a rendered trajectory, in characters.
pub(crate) const DEFAULT_MAX_TRAJECTORY_CHARS: usize = 24_000;

/// The smallest cap a long text is cut to before whole entries are left out.
const MINIMUM_TEXT_CAP: usize = 300;

/// Cut `text` to at most `cap` characters by leaving out its middle, with a marker saying how
/// many characters were left out. Texts within the cap are returned unchanged.
pub(crate) fn truncate_middle(text: &str, cap: usize) -> String {
    let length = text.chars().count();
    if length <= cap {
        return text.to_string();
    }
    // The marker's length depends on the number it shows; the number is at most `length`.
    let marker_length = omission_marker(length).chars().count();
    if cap <= marker_length {
        return text.chars().take(cap).collect();
    }
    let kept = cap - marker_length;
    let head = kept.div_ceil(2);
    let tail = kept - head;
    let omitted = length - head - tail;
    let mut out: String = text.chars().take(head).collect();
    out.push_str(&omission_marker(omitted));
    out.extend(text.chars().skip(length - tail));
    out
}

fn omission_marker(characters: usize) -> String {
    format!("[… {characters} characters omitted …]")
}

/// A part of an entry: fixed text, or a long text that may be cut to the common cap.
enum Segment {
    Fixed(String),
    Long { text: String, length: usize },
}

impl Segment {
    fn long(text: impl Into<String>) -> Segment {
        let text = text.into();
        let length = text.chars().count();
        Segment::Long { text, length }
    }

    fn length_at(&self, cap: usize) -> usize {
        match self {
            Segment::Fixed(text) => text.chars().count(),
            Segment::Long { length, .. } => (*length).min(cap),
        }
    }

    fn render_at(&self, cap: usize, out: &mut String) {
        match self {
            Segment::Fixed(text) => out.push_str(text),
            Segment::Long { text, .. } => out.push_str(&truncate_middle(text, cap)),
        }
    }
}

/// One entry of a section (a message, a tool call, an activation, a command).
struct Entry {
    segments: Vec<Segment>,
}

impl Entry {
    fn new(segments: Vec<Segment>) -> Entry {
        Entry { segments }
    }

    fn length_at(&self, cap: usize) -> usize {
        self.segments.iter().map(|s| s.length_at(cap)).sum()
    }

    fn longest(&self) -> usize {
        self.segments
            .iter()
            .map(|s| match s {
                Segment::Fixed(_) => 0,
                Segment::Long { length, .. } => *length,
            })
            .max()
            .unwrap_or(0)
    }
}

struct Section {
    title: &'static str,
    entries: Vec<Entry>,
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn tool_call_entry(number: usize, call: &ToolCall) -> Entry {
    let input = match &call.input {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut segments = vec![
        Segment::Fixed(format!(
            "[tool call {number}: {}]{}\ninput: ",
            call.name,
            if call.is_error { " (error)" } else { "" }
        )),
        Segment::long(input),
    ];
    match &call.output {
        Some(output) => {
            segments.push(Segment::Fixed("\noutput:\n".to_string()));
            segments.push(Segment::long(output.trim_end().to_string()));
            segments.push(Segment::Fixed("\n\n".to_string()));
        }
        None => segments.push(Segment::Fixed("\noutput: (none recorded)\n\n".to_string())),
    }
    Entry::new(segments)
}

fn conversation_entries(trajectory: &Trajectory) -> Vec<Entry> {
    let mut shown = vec![false; trajectory.tool_calls.len()];
    let mut entries = Vec::new();
    let final_answer = trajectory.final_answer.as_deref().map(str::trim);
    let last_assistant = trajectory
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant);
    for (index, message) in trajectory.messages.iter().enumerate() {
        match message.role {
            Role::System => continue,
            Role::Tool => {
                let call = message.tool_call_id.as_deref().and_then(|id| {
                    trajectory
                        .tool_calls
                        .iter()
                        .position(|c| c.id == id)
                        .filter(|&position| !shown[position])
                });
                if let Some(position) = call {
                    shown[position] = true;
                    entries.push(tool_call_entry(
                        position + 1,
                        &trajectory.tool_calls[position],
                    ));
                    continue;
                }
            }
            Role::Assistant if message.content.trim().is_empty() => continue,
            Role::Assistant
                if Some(index) == last_assistant
                    && final_answer == Some(message.content.trim()) =>
            {
                entries.push(Entry::new(vec![Segment::Fixed(
                    "[assistant]\n(the final answer, shown below)\n\n".to_string(),
                )]));
                continue;
            }
            _ => {}
        }
        let mut header = format!("[{}", role_name(message.role));
        if let Some(id) = &message.tool_call_id {
            header.push_str(&format!(" for call {id}"));
        }
        header.push_str("]\n");
        entries.push(Entry::new(vec![
            Segment::Fixed(header),
            Segment::long(message.content.trim_end().to_string()),
            Segment::Fixed("\n\n".to_string()),
        ]));
    }
    // Calls no tool message answered (agent CLIs that report calls apart from messages).
    let pending: Vec<usize> = (0..trajectory.tool_calls.len())
        .filter(|&i| !shown[i])
        .collect();
    if !pending.is_empty() {
        if !entries.is_empty() {
            entries.push(Entry::new(vec![Segment::Fixed(
                "(tool calls not tied to a message above, in order:)\n\n".to_string(),
            )]));
        }
        for index in pending {
            entries.push(tool_call_entry(index + 1, &trajectory.tool_calls[index]));
        }
    }
    entries
}

fn activation_entries(trajectory: &Trajectory) -> Vec<Entry> {
    trajectory
        .skill_activations
        .iter()
        .map(|activation| {
            let evidence = match activation.evidence {
                ActivationEvidence::SkillTool => "a skill tool call",
                ActivationEvidence::FileRead => "a read of its SKILL.md",
                ActivationEvidence::ShellCommand => "a shell command reading its SKILL.md",
            };
            let mut line = format!(
                "- {}{} via {evidence}: {}",
                activation.skill,
                if activation.target {
                    " (skill under evaluation)"
                } else {
                    ""
                },
                if activation.ok { "succeeded" } else { "failed" }
            );
            if let Some(call) = activation.tool_call_index {
                line.push_str(&format!(" (tool call {})", call + 1));
            }
            let mut segments = vec![Segment::Fixed(line)];
            if let Some(reason) = &activation.reason {
                segments.push(Segment::Fixed(": ".to_string()));
                segments.push(Segment::long(reason.clone()));
            }
            segments.push(Segment::Fixed("\n".to_string()));
            Entry::new(segments)
        })
        .collect()
}

fn command_entries(trajectory: &Trajectory) -> Vec<Entry> {
    trajectory
        .commands
        .iter()
        .map(|command| {
            let exit = match command.exit_code {
                Some(code) => format!("exit code {code}"),
                None => "exit code not reported".to_string(),
            };
            Entry::new(vec![
                Segment::Fixed("- `".to_string()),
                Segment::long(command.command.clone()),
                Segment::Fixed(format!("` → {exit}\n")),
            ])
        })
        .collect()
}

fn header(trajectory: &Trajectory) -> String {
    let mut status = match &trajectory.status {
        TrajectoryStatus::Complete => "Run status: complete.".to_string(),
        TrajectoryStatus::Incomplete { reason } => {
            format!(
                "Run status: incomplete ({}).",
                truncate_middle(reason, MINIMUM_TEXT_CAP)
            )
        }
    };
    if trajectory.turn_limit_reached {
        status.push_str(" The turn limit ended the conversation.");
    }
    format!("# Trajectory of the agent\n{status}\n")
}

const FINAL_TITLE: &str = "\n## Final answer\n";
const NO_FINAL_ANSWER: &str = "(the agent gave no final answer)\n";

/// Render `trajectory` for a judge in at most `max_chars` characters (see the module
/// documentation for the shape and how it is bounded). The system prompt is left out; the final
/// answer is always kept.
pub(crate) fn render_trajectory(trajectory: &Trajectory, max_chars: usize) -> String {
    let header = header(trajectory);
    let sections = [
        Section {
            title: "\n## Skill activations\n",
            entries: activation_entries(trajectory),
        },
        Section {
            title: "\n## Conversation and tool calls\n",
            entries: conversation_entries(trajectory),
        },
        Section {
            title: "\n## Shell commands\n",
            entries: command_entries(trajectory),
        },
    ];
    let fixed_length = header.chars().count()
        + sections
            .iter()
            .map(|s| s.title.chars().count() + if s.entries.is_empty() { 7 } else { 0 })
            .sum::<usize>()
        + FINAL_TITLE.chars().count();
    let all_entries: Vec<&Entry> = sections.iter().flat_map(|s| s.entries.iter()).collect();
    let full_body: usize = all_entries.iter().map(|e| e.length_at(usize::MAX)).sum();

    // The final answer: whole when it fits next to everything else or in half the budget.
    let final_text = match trajectory.final_answer.as_deref() {
        Some(answer) if !answer.trim().is_empty() => {
            let answer = answer.trim_end();
            let length = answer.chars().count() + 1;
            let room = max_chars
                .saturating_sub(fixed_length + full_body)
                .max(max_chars / 2);
            let mut text = truncate_middle(answer, room.min(length).saturating_sub(1));
            text.push('\n');
            text
        }
        _ => NO_FINAL_ANSWER.to_string(),
    };
    let body_budget =
        max_chars.saturating_sub(fixed_length + final_text.chars().count() + MARKER_RESERVE);

    // The largest common cap of long texts that fits; else the smallest, leaving entries out.
    let total_at = |cap: usize| -> usize { all_entries.iter().map(|e| e.length_at(cap)).sum() };
    let longest = all_entries.iter().map(|e| e.longest()).max().unwrap_or(0);
    let cap = if total_at(longest) <= body_budget {
        longest
    } else if total_at(MINIMUM_TEXT_CAP) > body_budget {
        MINIMUM_TEXT_CAP
    } else {
        let (mut low, mut high) = (MINIMUM_TEXT_CAP, longest);
        while low < high {
            let middle = low + (high - low).div_ceil(2);
            if total_at(middle) <= body_budget {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        low
    };
    let lengths: Vec<usize> = all_entries.iter().map(|e| e.length_at(cap)).collect();
    let kept = keep_ends(&lengths, body_budget);

    let mut out = header;
    let mut position = 0;
    let mut marker_written = false;
    for section in &sections {
        out.push_str(section.title);
        if section.entries.is_empty() {
            out.push_str("(none)\n");
        }
        for entry in &section.entries {
            if kept[position] {
                entry
                    .segments
                    .iter()
                    .for_each(|s| s.render_at(cap, &mut out));
            } else if !marker_written {
                let omitted = kept.iter().filter(|k| !**k).count();
                out.push_str(&format!("[… {omitted} entries omitted …]\n"));
                marker_written = true;
            }
            position += 1;
        }
    }
    out.push_str(FINAL_TITLE);
    out.push_str(&final_text);
    // Budgets too small for the fixed parts: a plain cut keeps the promise on size.
    if out.chars().count() > max_chars {
        out = truncate_middle(&out, max_chars);
    }
    out
}

/// Room kept for the `[… N entries omitted …]` line.
const MARKER_RESERVE: usize = 40;

/// Which entries to keep: as many as fit from both ends, alternating, so the beginning and the
/// end of the record stay and the middle goes.
fn keep_ends(lengths: &[usize], budget: usize) -> Vec<bool> {
    let total: usize = lengths.iter().sum();
    let mut kept = vec![total <= budget; lengths.len()];
    if total <= budget || lengths.is_empty() {
        return kept;
    }
    let (mut front, mut back) = (0usize, lengths.len());
    let mut used = 0usize;
    let (mut front_open, mut back_open) = (true, true);
    while front < back && (front_open || back_open) {
        if front_open {
            if used + lengths[front] <= budget {
                used += lengths[front];
                kept[front] = true;
                front += 1;
            } else {
                front_open = false;
            }
        }
        if front < back && back_open {
            if used + lengths[back - 1] <= budget {
                used += lengths[back - 1];
                kept[back - 1] = true;
                back -= 1;
            } else {
                back_open = false;
            }
        }
    }
    kept
}
