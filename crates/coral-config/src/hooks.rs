//! `hooks.*`: what `coral hook` and `coral recall` do for a client (docs/hooks.md): how many
//! memories a prompt gets and how relevant they must be, what the session-start snapshot holds,
//! and where the end of a turn is captured.

use serde::{Deserialize, Serialize};

/// Where `coral hook` captures a finished exchange (the user's prompt and the final answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureTarget {
    /// Nowhere.
    Off,
    /// The timeline, one turn per exchange (the default: the timeline is made for turns).
    Timeline,
    /// The memory pool, one memory per exchange.
    Memory,
    /// Both.
    Both,
}

impl CaptureTarget {
    /// Every target, in the order messages list them.
    pub const ALL: [CaptureTarget; 4] = [
        CaptureTarget::Off,
        CaptureTarget::Timeline,
        CaptureTarget::Memory,
        CaptureTarget::Both,
    ];

    /// The config file's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureTarget::Off => "off",
            CaptureTarget::Timeline => "timeline",
            CaptureTarget::Memory => "memory",
            CaptureTarget::Both => "both",
        }
    }

    /// The target a config value names, if any.
    pub fn parse(value: &str) -> Option<CaptureTarget> {
        CaptureTarget::ALL.into_iter().find(|t| t.as_str() == value)
    }

    /// Captures into the timeline.
    pub fn timeline(self) -> bool {
        matches!(self, CaptureTarget::Timeline | CaptureTarget::Both)
    }

    /// Captures into the memory pool.
    pub fn memory(self) -> bool {
        matches!(self, CaptureTarget::Memory | CaptureTarget::Both)
    }
}

/// `hooks.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HooksConfig {
    /// Most memories a prompt gets.
    pub recall_top_k: usize,
    /// Least share of content words (function words left out; their set cosine) a memory needs
    /// in common with a prompt to be shown with it.
    pub min_relevance: f64,
    /// Or, when a sentence model made the vectors, the least cosine of their vectors.
    pub min_similarity: f64,
    /// Token budget of the context added to one prompt.
    pub recall_max_tokens: usize,
    /// Memories at or above this importance are in the session-start snapshot.
    pub snapshot_min_importance: f64,
    /// Most memories in the snapshot.
    pub snapshot_max_memories: usize,
    /// Most active threads in the snapshot.
    pub snapshot_max_threads: usize,
    /// Token budget of the snapshot.
    pub snapshot_max_tokens: usize,
    /// `"timeline"`, `"memory"`, `"both"` or `"off"`.
    pub capture: String,
    /// Characters of an answer kept in a captured memory (the timeline keeps it whole).
    pub capture_max_chars: usize,
    /// Servers (`coral mcp`, `coral mcp --http`, `coral http`) answer the prompt hook's recall
    /// on a Unix socket in the data directory, and `coral hook` and `coral recall` ask there
    /// before opening the store themselves (docs/hooks.md, "Speed"). Read when a server
    /// starts.
    pub recall_socket: bool,
}

impl Default for HooksConfig {
    fn default() -> Self {
        HooksConfig {
            recall_top_k: 5,
            min_relevance: 0.25,
            min_similarity: 0.45,
            recall_max_tokens: 600,
            snapshot_min_importance: 0.8,
            snapshot_max_memories: 20,
            snapshot_max_threads: 10,
            snapshot_max_tokens: 1500,
            capture: "timeline".into(),
            capture_max_chars: 2000,
            recall_socket: true,
        }
    }
}

impl HooksConfig {
    /// `hooks.capture` as a [`CaptureTarget`]. A value [`super::Config::validate`] refuses
    /// reads as the default; every configuration Coral opens has passed it.
    pub fn capture_target(&self) -> CaptureTarget {
        CaptureTarget::parse(&self.capture).unwrap_or(CaptureTarget::Timeline)
    }

    /// Every problem with these values, each naming its key and value.
    pub(super) fn problems(&self, p: &mut Vec<String>) {
        if CaptureTarget::parse(&self.capture).is_none() {
            let names: Vec<String> = CaptureTarget::ALL
                .iter()
                .map(|t| format!("{:?}", t.as_str()))
                .collect();
            p.push(format!(
                "hooks.capture = {:?} must be {}",
                self.capture,
                names.join(", ")
            ));
        }
        for (key, v) in [
            ("hooks.min_relevance", self.min_relevance),
            ("hooks.min_similarity", self.min_similarity),
            (
                "hooks.snapshot_min_importance",
                self.snapshot_min_importance,
            ),
        ] {
            if !(0.0..=1.0).contains(&v) {
                p.push(format!("{key} = {v} must be a number in 0..=1"));
            }
        }
        for (key, v, max) in [
            ("hooks.recall_top_k", self.recall_top_k, crate::MAX_TOP_K),
            ("hooks.recall_max_tokens", self.recall_max_tokens, 100_000),
            (
                "hooks.snapshot_max_memories",
                self.snapshot_max_memories,
                1000,
            ),
            (
                "hooks.snapshot_max_threads",
                self.snapshot_max_threads,
                1000,
            ),
            (
                "hooks.snapshot_max_tokens",
                self.snapshot_max_tokens,
                100_000,
            ),
            ("hooks.capture_max_chars", self.capture_max_chars, 60_000),
        ] {
            if v == 0 || v > max {
                p.push(format!("{key} = {v} must be in 1..={max}"));
            }
        }
    }
}
