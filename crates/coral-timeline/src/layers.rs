//! The three layers' settings and types: `LayerSettings` (MemCore's thresholds), `FACETS`,
//! `SummaryLayer`, `SummaryCard`, `LayerStatus` and `CompactReport`.
//!
//! A conversation's raw window is every closed unit (finished turn or standalone entry) at or
//! above its *raw floor*. It only grows until its visible tokens reach `raw_token_trigger`; then
//! [`Timeline::compact`](crate::Timeline::compact) summarises the oldest whole units holding about `raw_token_batch_ratio`
//! of them into one episodic summary and moves the floor past them, in one transaction. When
//! `episodic_compact_trigger_count` summaries are not yet rolled up, the oldest
//! `episodic_compact_batch_size` of them become semantic memories (long-lived facts). See
//! `docs/timeline.md`, "Layers".

use serde::{Deserialize, Serialize};

use crate::error::{Result, invalid};

/// The layer thresholds: MemCore's defaults. Serialised with MemCore's config keys (the facade
/// embeds them in its `timeline` section); a key left out keeps its default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LayerSettings {
    /// Raw visible tokens that trigger a compaction (12,000).
    pub raw_token_trigger: u64,
    /// Share of the raw tokens a compaction summarises, oldest first (0.67).
    pub raw_token_batch_ratio: f64,
    /// Closed units a compaction always leaves raw (1).
    #[serde(rename = "compaction_min_recent_turns")]
    pub min_recent_turns: usize,
    /// Episodic summaries the context shows, newest (8).
    pub episodic_visible_max: usize,
    /// Summaries not yet rolled up that trigger a roll-up (10).
    pub episodic_compact_trigger_count: usize,
    /// Summaries one roll-up turns into semantic memories, oldest first (5).
    pub episodic_compact_batch_size: usize,
    /// Semantic memories the context shows, newest (5).
    pub semantic_visible_limit: usize,
    /// Current semantic memories a roll-up may reinforce (8).
    pub semantic_reinforcement_lookback: usize,
    /// The [`reinforcement_overlap`] a new memory needs with an old one to replace it (2).
    pub semantic_reinforcement_min_overlap: usize,
}

impl Default for LayerSettings {
    fn default() -> Self {
        LayerSettings {
            raw_token_trigger: 12_000,
            raw_token_batch_ratio: 0.67,
            min_recent_turns: 1,
            episodic_visible_max: 8,
            episodic_compact_trigger_count: 10,
            episodic_compact_batch_size: 5,
            semantic_visible_limit: 5,
            semantic_reinforcement_lookback: 8,
            semantic_reinforcement_min_overlap: 2,
        }
    }
}

impl LayerSettings {
    /// Refuse settings that could not work, naming the field.
    pub fn validate(&self) -> Result<()> {
        if self.raw_token_trigger < 100 {
            return invalid(format!(
                "raw_token_trigger is {}; it must be at least 100",
                self.raw_token_trigger
            ));
        }
        if !(self.raw_token_batch_ratio > 0.0 && self.raw_token_batch_ratio < 1.0) {
            return invalid(format!(
                "raw_token_batch_ratio is {}; it must be between 0 and 1 (exclusive)",
                self.raw_token_batch_ratio
            ));
        }
        if self.episodic_compact_batch_size == 0
            || self.episodic_compact_batch_size >= self.episodic_compact_trigger_count
        {
            return invalid(format!(
                "episodic_compact_batch_size ({}) must be at least 1 and below \
                 episodic_compact_trigger_count ({})",
                self.episodic_compact_batch_size, self.episodic_compact_trigger_count
            ));
        }
        if self.episodic_compact_trigger_count > 1_000 {
            return invalid("episodic_compact_trigger_count is at most 1000");
        }
        if self.episodic_visible_max == 0 || self.episodic_visible_max > 1_000 {
            return invalid("episodic_visible_max must be between 1 and 1000");
        }
        if self.semantic_visible_limit > 1_000 {
            return invalid("semantic_visible_limit is at most 1000");
        }
        if self.semantic_reinforcement_lookback > 100 {
            return invalid("semantic_reinforcement_lookback is at most 100");
        }
        if self.semantic_reinforcement_min_overlap == 0
            || self.semantic_reinforcement_min_overlap > 100
        {
            return invalid("semantic_reinforcement_min_overlap must be between 1 and 100");
        }
        if self.min_recent_turns > 1_000 {
            return invalid("min_recent_turns (compaction_min_recent_turns) is at most 1000");
        }
        Ok(())
    }
}

/// The facets a semantic memory may have (MemCore's list).
pub const FACETS: &[&str] = &[
    "profile",
    "preference",
    "viewpoint",
    "relationship",
    "event",
    "state",
    "plan",
    "decision",
    "constraint",
    "knowledge",
    "procedure",
];

/// Which layer a summary belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SummaryLayer {
    /// A summary of whole raw turns (`sum-…`).
    Episodic,
    /// A lasting fact distilled from episodic summaries (`sem-…`).
    Semantic,
}

impl SummaryLayer {
    /// The stored name: `episodic` or `semantic`.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryLayer::Episodic => "episodic",
            SummaryLayer::Semantic => "semantic",
        }
    }

    /// The layer of a stored or given name; `None` for any other.
    pub fn parse(s: &str) -> Option<SummaryLayer> {
        match s {
            "episodic" => Some(SummaryLayer::Episodic),
            "semantic" => Some(SummaryLayer::Semantic),
            _ => None,
        }
    }
}

/// A summary or semantic memory as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SummaryCard {
    /// `sum-…` (episodic) or `sem-…` (semantic).
    pub memory_id: String,
    /// Episodic or semantic.
    pub layer: SummaryLayer,
    /// The conversation it summarises.
    pub conversation_id: String,
    /// A short title.
    pub title: String,
    /// When to look at it.
    pub hint: String,
    /// The summary, or the memory's content.
    pub body: String,
    /// Semantic memories: one of [`FACETS`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facet: Option<String>,
    /// Names of people, products, places… (normalised, distinct).
    pub entity_anchors: Vec<String>,
    /// Topics (normalised, distinct).
    pub topic_terms: Vec<String>,
    /// First source moment, Unix seconds.
    pub period_start: f64,
    /// Last source moment, Unix seconds.
    pub period_end: f64,
    /// When it was written, Unix seconds.
    pub created_at: f64,
    /// Sources: raw units (episodic) or episodic summaries (semantic).
    pub source_count: usize,
    /// Episodic: the roll-up that turned it into semantic memories, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolled_into: Option<String>,
    /// Estimated tokens of its rendered line.
    pub tokens: u64,
    /// Row number: the catalogue's tie-break and cursor position.
    #[serde(skip)]
    pub(crate) pk: i64,
    /// Semantic: the newer memory that reinforced (replaced) this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Made from something since forgotten (docs/timeline.md, "Forgetting"): kept for
    /// `open_memory`, left out of the context, the catalogue, retrieval and roll-ups.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// Where a conversation's layers stand.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayerStatus {
    /// Units below this `unit_seq` are summarised.
    pub raw_floor: i64,
    /// Closed units in the raw window.
    pub raw_units: usize,
    /// Their visible tokens.
    pub raw_tokens: u64,
    /// Episodic summaries not yet rolled up.
    pub episodic_pending: usize,
    /// Semantic memories.
    pub semantic: usize,
    /// Compactions and roll-ups done so far.
    pub compactions: i64,
    /// Roll-ups done so far.
    pub rollups: i64,
    /// Whether [`Timeline::compact`](crate::Timeline::compact) would summarise raw turns now.
    pub compaction_due: bool,
    /// Whether it would roll summaries up now.
    pub rollup_due: bool,
}

/// What one [`Timeline::compact`](crate::Timeline::compact) call did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompactReport {
    /// The new episodic summary, if raw turns were summarised.
    pub episodic: Option<SummaryCard>,
    /// Raw units it covers.
    pub summarised_units: usize,
    /// New semantic memories, if summaries were rolled up.
    pub semantic: Vec<SummaryCard>,
    /// Episodic summaries rolled up.
    pub rolled_up: usize,
    /// When the raw compaction succeeded but the roll-up after it failed: why (the roll-up is
    /// retried by the next call; the compaction stays).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollup_error: Option<String>,
    /// Semantic memories a new one reinforced (replaced), by id.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reinforced: Vec<String>,
    /// The layers afterwards.
    pub status: LayerStatus,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        assert!(LayerSettings::default().validate().is_ok());
        for bad in [
            LayerSettings {
                raw_token_batch_ratio: 1.0,
                ..LayerSettings::default()
            },
            LayerSettings {
                episodic_compact_batch_size: 10,
                ..LayerSettings::default()
            },
            LayerSettings {
                raw_token_trigger: 0,
                ..LayerSettings::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
