pub mod cli;
pub mod mock_anthropic;
pub mod mock_chat_stream;
pub mod mock_fault;
pub mod mock_gemini;
pub mod mock_judge;
pub mod mock_messages;
pub mod mock_openai;
pub mod mock_responses;
pub mod mock_router;
pub mod serve;

/// Reading a run folder's transcripts the way skill-lift does, in either form: a span of the
/// transcript log (`transcript_span`, format 4 on) or a file of its own (older run folders).
#[allow(dead_code)]
pub mod transcripts {
    use std::path::Path;

    use serde_json::Value;

    /// The transcript document `record` (a `trials.jsonl` line) points at.
    pub fn of(run_dir: &Path, record: &Value) -> Value {
        let relative = record["transcript"]
            .as_str()
            .unwrap_or_else(|| panic!("no transcript in {record}"));
        let bytes = std::fs::read(run_dir.join(relative)).unwrap();
        let bytes = match record.get("transcript_span") {
            Some(span) => {
                let offset = span["offset"].as_u64().unwrap() as usize;
                let length = span["length"].as_u64().unwrap() as usize;
                bytes[offset..offset + length].to_vec()
            }
            None => bytes,
        };
        serde_json::from_slice(&bytes).unwrap()
    }

    /// Every recorded trial's transcript document, in `trials.jsonl` order.
    pub fn all(run_dir: &Path) -> Vec<Value> {
        std::fs::read_to_string(run_dir.join("trials.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|record| record["transcript"].is_string())
            .map(|record| of(run_dir, &record))
            .collect()
    }
}
