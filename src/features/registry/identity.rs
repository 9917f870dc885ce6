//! Observed model identity and the decision whether a host's model changed: the value types
//! ([`EvidenceSource`], [`ModelObservation`], [`SourceReport`], [`ModelChange`]) and the pure
//! rule [`decide`] that compares observations with the host's last bump. Reading the four
//! sources is `observe.rs`'s; recording a detected change as a bump is `models.rs`'s.
//!
//! The rule, in the order it applies:
//! 1. Only observations made after the last bump count (a model seen in history before the bump
//!    never triggers). A configuration file counts from the time it was last modified; a live
//!    read (`GET /models`) at the time of the read. Without a bump every observation counts.
//! 2. A live observation that the last detected bump already recorded (same source, same place,
//!    same model) is no news: a server that keeps serving what it served when the change was
//!    recorded does not raise the change again.
//! 3. What answered beats what is configured: when trial records or session history hold an
//!    observation since the bump, they decide and configured sources (agent configuration,
//!    `GET /models`) only disagree; otherwise the configured sources decide.
//! 4. Among the deciding observations, each source's newest one stands for it; the model changed
//!    when one of them names another model than the bump. The newest of those wins (ties: the
//!    source order of [`EvidenceSource`], then the place's name); the others are reported as
//!    disagreeing.
//!
//! Two names are the same model when they are equal ignoring case and a `provider/` prefix
//! (`anthropic/claude-sonnet-4-5` = `claude-sonnet-4-5`), or when one is the other plus a dated
//! snapshot suffix (`gpt-4o` = `gpt-4o-2024-08-06`, `claude-sonnet-4-5` =
//! `claude-sonnet-4-5-20250929`): an alias and what it resolves to are not a change.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::models::ModelBump;

/// Where an observed model name comes from. The order is the tie-break of [`decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceSource {
    /// A recorded trial of one of the host's assets: the model the server or agent CLI reported
    /// answering (`observed_model` in `trials.jsonl`, kept in the baseline store), else the model
    /// requested.
    TrialRecord,
    /// Model names in the host agent's session history (one observation per session: the model
    /// its last answer reported).
    SessionHistory,
    /// `GET {base_url}/models` of an HTTP runner profile (`check --runner`).
    ModelsEndpoint,
    /// The agent CLI's configured model (its settings file), with the CLI's `--version`.
    AgentConfig,
}

impl EvidenceSource {
    /// Every source, in order.
    pub const ALL: [EvidenceSource; 4] = [
        EvidenceSource::TrialRecord,
        EvidenceSource::SessionHistory,
        EvidenceSource::ModelsEndpoint,
        EvidenceSource::AgentConfig,
    ];

    /// The source in words (`trial records`, `session history`, `GET /models`, `agent config`).
    pub fn describe(self) -> &'static str {
        match self {
            EvidenceSource::TrialRecord => "trial records",
            EvidenceSource::SessionHistory => "session history",
            EvidenceSource::ModelsEndpoint => "GET /models",
            EvidenceSource::AgentConfig => "agent config",
        }
    }

    /// Whether the source says which model answered (trial records, session history) rather
    /// than which one is configured or served. What answered decides (rule 3 of [`decide`]).
    pub fn is_use(self) -> bool {
        matches!(
            self,
            EvidenceSource::TrialRecord | EvidenceSource::SessionHistory
        )
    }
}

impl std::fmt::Display for EvidenceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// One sighting of a model name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelObservation {
    /// Which source saw it.
    pub source: EvidenceSource,
    /// The model name as the source wrote it.
    pub model: String,
    /// When: the trial's start, the session's last event, the configuration file's modification
    /// time, or the time of a live read.
    pub at: DateTime<Utc>,
    /// Where: `run <id> trial <case>/<arm>/<attempt>`, a session file, a settings file, a URL.
    pub seen_in: String,
    /// What else the source said (the model requested, the CLI's version, how many models a
    /// server lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl ModelObservation {
    /// `<source> <place> at <time>`, as the change line quotes it.
    pub fn describe(&self) -> String {
        format!(
            "{} {} at {}",
            self.source,
            self.seen_in,
            self.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )
    }

    /// Whether `self` and `other` are the same sighting (source, place and model).
    fn same_sighting(&self, other: &ModelObservation) -> bool {
        self.source == other.source
            && self.seen_in == other.seen_in
            && same_model(&self.model, &other.model)
    }
}

/// Whether a source could be read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SourceState {
    /// Read; it gave this many observations (0: it names no model, `detail` says why).
    Read {
        /// Observations it gave.
        observations: usize,
    },
    /// Nothing to read here (no history folder, no settings file, a host with no reader).
    Absent {
        /// Why.
        reason: String,
    },
    /// It exists but could not be read, or does not say which model it serves: a warning,
    /// never a silent green (`check` exits 5 when nothing else failed).
    Unreadable {
        /// Why.
        reason: String,
    },
}

/// What one source gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceReport {
    /// The source.
    pub source: EvidenceSource,
    /// Which one of it (`claude-code`, the runner profile's name, …).
    pub name: String,
    /// Whether it was read, and what it gave.
    #[serde(flatten)]
    pub state: SourceState,
    /// What else it said (the agent CLI's version, sessions read, models listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl SourceReport {
    /// Whether the source exists but could not be read.
    pub fn is_unreadable(&self) -> bool {
        matches!(self.state, SourceState::Unreadable { .. })
    }
}

/// A model change [`decide`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelChange {
    /// The last bump's model; `None` when the host had no bump (the model was identified).
    pub from: Option<String>,
    /// The model observed.
    pub to: String,
    /// The earliest observation of `to` since the last bump: the time a recorded bump carries,
    /// so verdicts recorded under `to` since then count as evaluated under it.
    pub first_seen: DateTime<Utc>,
    /// The newest observation of `to` from each source that saw it, newest first.
    pub evidence: Vec<ModelObservation>,
    /// Observations of `to` since the bump, all sources.
    pub sightings: usize,
    /// Each other source's newest observation that names another model, newest first.
    pub disagreeing: Vec<ModelObservation>,
}

impl ModelChange {
    /// `model changed: A → B (seen in …)`, naming each source's newest sighting of B.
    pub fn line(&self) -> String {
        let seen: Vec<String> = self.evidence.iter().map(|o| o.describe()).collect();
        match &self.from {
            Some(from) => format!(
                "model changed: {from} → {} (seen in {})",
                self.to,
                seen.join("; ")
            ),
            None => format!(
                "model identified: {} (no bump recorded; seen in {})",
                self.to,
                seen.join("; ")
            ),
        }
    }
}

/// What [`decide`] concluded.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Decision {
    /// The change, when there is one.
    pub change: Option<ModelChange>,
    /// Each source's newest observation since the bump (all sources, whatever they name).
    pub current: Vec<ModelObservation>,
    /// Observations made before the last bump, left out (rule 1).
    pub before_bump: usize,
    /// Live observations the last detected bump already recorded, left out (rule 2).
    pub already_recorded: usize,
}

/// Lower-case, without a `provider/` prefix.
fn normalize(model: &str) -> String {
    let model = model.trim();
    let bare = model.rsplit('/').next().unwrap_or(model);
    bare.to_ascii_lowercase()
}

/// Whether `suffix` is a dated snapshot suffix: `-YYYYMMDD` or `-YYYY-MM-DD`.
fn is_date_suffix(suffix: &str) -> bool {
    let Some(rest) = suffix.strip_prefix('-') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match rest.len() {
        8 => digits(rest) && rest.starts_with("20"),
        10 => {
            let parts: Vec<&str> = rest.split('-').collect();
            parts.len() == 3
                && parts[0].len() == 4
                && parts[1].len() == 2
                && parts[2].len() == 2
                && parts.iter().all(|p| digits(p))
                && rest.starts_with("20")
        }
        _ => false,
    }
}

/// Whether `a` and `b` name the same model: equal ignoring case and a `provider/` prefix, or one
/// is the other plus a dated snapshot suffix (an alias and its resolution).
pub fn same_model(a: &str, b: &str) -> bool {
    let (a, b) = (normalize(a), normalize(b));
    if a == b {
        return true;
    }
    let (short, long) = if a.len() < b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    long.strip_prefix(short.as_str())
        .is_some_and(is_date_suffix)
}

/// The key a source's observations are grouped under: the source and, for live and configured
/// sources, the place (two runner profiles are two sources).
fn source_key(observation: &ModelObservation) -> (EvidenceSource, String) {
    let place = if observation.source.is_use() {
        String::new()
    } else {
        observation.seen_in.clone()
    };
    (observation.source, place)
}

/// Newest first; ties by source order, then place.
fn newest_first(a: &ModelObservation, b: &ModelObservation) -> std::cmp::Ordering {
    b.at.cmp(&a.at)
        .then(a.source.cmp(&b.source))
        .then(a.seen_in.cmp(&b.seen_in))
}

/// Compare `observations` with the host's `last` bump (the rule in the module documentation).
pub fn decide(last: Option<&ModelBump>, observations: &[ModelObservation]) -> Decision {
    let mut decision = Decision::default();
    let mut considered: Vec<&ModelObservation> = Vec::new();
    for observation in observations {
        if let Some(bump) = last {
            if observation.at <= bump.at {
                decision.before_bump += 1;
                continue;
            }
            let recorded = bump
                .evidence
                .iter()
                .chain(&bump.disagreeing)
                .any(|known| known.same_sighting(observation));
            if !observation.source.is_use() && recorded {
                decision.already_recorded += 1;
                continue;
            }
        }
        considered.push(observation);
    }
    // Each source's newest observation stands for it.
    let mut newest: BTreeMap<(EvidenceSource, String), &ModelObservation> = BTreeMap::new();
    for observation in &considered {
        let slot = newest.entry(source_key(observation)).or_insert(observation);
        if newest_first(observation, slot).is_lt() {
            *slot = observation;
        }
    }
    let mut current: Vec<&ModelObservation> = newest.into_values().collect();
    current.sort_by(|a, b| newest_first(a, b));
    decision.current = current.iter().map(|o| (*o).clone()).collect();
    let use_decides = current.iter().any(|o| o.source.is_use());
    let differs =
        |o: &&&ModelObservation| last.is_none_or(|bump| !same_model(&bump.model, &o.model));
    let Some(winner) = current
        .iter()
        .filter(|o| o.source.is_use() == use_decides)
        .find(differs)
    else {
        return decision;
    };
    let to = winner.model.clone();
    let sightings: Vec<&&ModelObservation> = considered
        .iter()
        .filter(|o| same_model(&o.model, &to))
        .collect();
    let first_seen = sightings.iter().map(|o| o.at).min().unwrap_or(winner.at);
    decision.change = Some(ModelChange {
        from: last.map(|bump| bump.model.clone()),
        to: to.clone(),
        first_seen,
        evidence: current
            .iter()
            .filter(|o| same_model(&o.model, &to))
            .map(|o| (*o).clone())
            .collect(),
        sightings: sightings.len(),
        disagreeing: current
            .iter()
            .filter(|o| !same_model(&o.model, &to))
            .map(|o| (*o).clone())
            .collect(),
    });
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, hour, 0, 0).unwrap()
    }

    fn seen(source: EvidenceSource, model: &str, hour: u32, place: &str) -> ModelObservation {
        ModelObservation {
            source,
            model: model.into(),
            at: at(hour),
            seen_in: place.into(),
            detail: None,
        }
    }

    fn bump(model: &str, hour: u32) -> ModelBump {
        ModelBump::manual(model, at(hour), None)
    }

    use EvidenceSource::*;

    #[test]
    fn same_model_ignores_case_provider_and_dated_snapshots_only() {
        assert!(same_model(
            "claude-sonnet-4-5",
            "anthropic/Claude-Sonnet-4-5"
        ));
        assert!(same_model(
            "claude-sonnet-4-5",
            "claude-sonnet-4-5-20250929"
        ));
        assert!(same_model("gpt-4o-2024-08-06", "gpt-4o"));
        assert!(!same_model("gpt-4o", "gpt-4o-mini"));
        assert!(!same_model("claude-sonnet-4", "claude-sonnet-4-5"));
        assert!(!same_model(
            "claude-sonnet-4-5-20250929",
            "claude-sonnet-4-5-20260101"
        ));
        assert!(!same_model("model-a", "model-b"));
    }

    #[test]
    fn history_after_the_bump_changes_the_model_and_history_before_it_does_not() {
        let last = bump("model-a", 10);
        let old = [seen(SessionHistory, "model-b", 9, "old.jsonl")];
        let decision = decide(Some(&last), &old);
        assert!(decision.change.is_none());
        assert_eq!(decision.before_bump, 1);
        let new = [
            seen(SessionHistory, "model-b", 9, "old.jsonl"),
            seen(SessionHistory, "model-b", 11, "s1.jsonl"),
            seen(SessionHistory, "model-b", 12, "s2.jsonl"),
        ];
        let change = decide(Some(&last), &new).change.unwrap();
        assert_eq!(change.from.as_deref(), Some("model-a"));
        assert_eq!(change.to, "model-b");
        assert_eq!(change.first_seen, at(11));
        assert_eq!(change.sightings, 2);
        assert_eq!(change.evidence.len(), 1);
        assert_eq!(change.evidence[0].seen_in, "s2.jsonl");
        assert!(change.line().starts_with(
            "model changed: model-a → model-b (seen in session history s2.jsonl at 2026-03-01T12:00:00Z"
        ));
    }

    #[test]
    fn the_newest_use_observation_wins_and_configuration_only_disagrees() {
        let last = bump("model-a", 10);
        let observations = [
            seen(TrialRecord, "model-c", 11, "run r"),
            seen(SessionHistory, "model-b", 12, "s.jsonl"),
            seen(AgentConfig, "model-d", 13, "settings.json"),
        ];
        let change = decide(Some(&last), &observations).change.unwrap();
        assert_eq!(change.to, "model-b");
        let disagreeing: Vec<&str> = change
            .disagreeing
            .iter()
            .map(|o| o.model.as_str())
            .collect();
        assert_eq!(disagreeing, ["model-d", "model-c"]);
        // Use evidence that still names the bumped model keeps the configuration from deciding.
        let observations = [
            seen(SessionHistory, "model-a", 12, "s.jsonl"),
            seen(AgentConfig, "model-d", 13, "settings.json"),
        ];
        let decision = decide(Some(&last), &observations);
        assert!(decision.change.is_none());
        assert_eq!(decision.current.len(), 2);
        // Without use evidence, the configuration decides.
        let observations = [seen(AgentConfig, "model-d", 13, "settings.json")];
        assert_eq!(
            decide(Some(&last), &observations).change.unwrap().to,
            "model-d"
        );
    }

    #[test]
    fn ties_go_by_source_order_and_no_bump_identifies_the_model() {
        let observations = [
            seen(SessionHistory, "model-b", 12, "s.jsonl"),
            seen(TrialRecord, "model-c", 12, "run r"),
        ];
        let change = decide(None, &observations).change.unwrap();
        assert_eq!(change.to, "model-c");
        assert_eq!(change.from, None);
        assert!(change.line().starts_with("model identified: model-c"));
        assert!(decide(None, &[]).change.is_none());
    }

    #[test]
    fn an_alias_resolving_to_its_snapshot_is_no_change() {
        let last = bump("claude-sonnet-4-5", 10);
        let observations = [seen(TrialRecord, "claude-sonnet-4-5-20250929", 11, "run r")];
        assert!(decide(Some(&last), &observations).change.is_none());
    }

    #[test]
    fn a_live_read_the_detected_bump_recorded_is_no_news() {
        let mut last = bump("model-b", 10);
        last.disagreeing = vec![seen(ModelsEndpoint, "model-a", 10, "http://x/v1/models")];
        let observations = [seen(ModelsEndpoint, "model-a", 14, "http://x/v1/models")];
        let decision = decide(Some(&last), &observations);
        assert!(decision.change.is_none());
        assert_eq!(decision.already_recorded, 1);
        // Another model from the same endpoint is news.
        let observations = [seen(ModelsEndpoint, "model-c", 14, "http://x/v1/models")];
        assert_eq!(
            decide(Some(&last), &observations).change.unwrap().to,
            "model-c"
        );
    }
}
