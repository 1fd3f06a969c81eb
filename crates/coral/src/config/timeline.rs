//! `timeline.*`: the timeline's layers and reads, with MemCore's key names and defaults
//! (docs/timeline.md, "Layers").

use serde::{Deserialize, Serialize};

/// `timeline.*`: the timeline's layers and reads, with MemCore's key names and defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimelineConfig {
    /// Raw visible tokens that trigger a compaction.
    pub raw_token_trigger: u64,
    /// Share of the raw tokens one compaction summarises.
    pub raw_token_batch_ratio: f64,
    /// Closed turns a compaction always leaves raw.
    pub compaction_min_recent_turns: usize,
    /// Episodic summaries the context shows.
    pub episodic_visible_max: usize,
    /// Summaries not yet rolled up that trigger a roll-up.
    pub episodic_compact_trigger_count: usize,
    /// Summaries one roll-up turns into semantic memories.
    pub episodic_compact_batch_size: usize,
    /// Semantic memories the context shows.
    pub semantic_visible_limit: usize,
    /// Current semantic memories a roll-up may reinforce.
    pub semantic_reinforcement_lookback: usize,
    /// Overlap (shared anchors + topics, same facet, one anchor at least) needed to reinforce.
    pub semantic_reinforcement_min_overlap: usize,
    /// Hits `retrieve_for_turn` returns when the call gives no limit.
    pub retrieval_limit: usize,
    /// IANA zone of dates and times when a call gives none.
    pub timezone: String,
}

impl Default for TimelineConfig {
    fn default() -> Self {
        let l = coral_timeline::LayerSettings::default();
        TimelineConfig {
            raw_token_trigger: l.raw_token_trigger,
            raw_token_batch_ratio: l.raw_token_batch_ratio,
            compaction_min_recent_turns: l.min_recent_turns,
            episodic_visible_max: l.episodic_visible_max,
            episodic_compact_trigger_count: l.episodic_compact_trigger_count,
            episodic_compact_batch_size: l.episodic_compact_batch_size,
            semantic_visible_limit: l.semantic_visible_limit,
            semantic_reinforcement_lookback: l.semantic_reinforcement_lookback,
            semantic_reinforcement_min_overlap: l.semantic_reinforcement_min_overlap,
            retrieval_limit: coral_timeline::DEFAULT_LIMIT,
            timezone: "UTC".into(),
        }
    }
}

impl TimelineConfig {
    /// The layer thresholds these settings describe.
    pub fn layer_settings(&self) -> coral_timeline::LayerSettings {
        coral_timeline::LayerSettings {
            raw_token_trigger: self.raw_token_trigger,
            raw_token_batch_ratio: self.raw_token_batch_ratio,
            min_recent_turns: self.compaction_min_recent_turns,
            episodic_visible_max: self.episodic_visible_max,
            episodic_compact_trigger_count: self.episodic_compact_trigger_count,
            episodic_compact_batch_size: self.episodic_compact_batch_size,
            semantic_visible_limit: self.semantic_visible_limit,
            semantic_reinforcement_lookback: self.semantic_reinforcement_lookback,
            semantic_reinforcement_min_overlap: self.semantic_reinforcement_min_overlap,
        }
    }
}
