//! The values of the Rust API: options in; memories, hits, counters and reports out.

use std::collections::BTreeMap;

use coral_store::{Item, Tier};
use serde::Serialize;

use crate::governance::GovernanceStats;

/// A stored memory with its tier.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Memory {
    /// The item.
    #[serde(flatten)]
    pub item: Item,
    /// Where it lives.
    pub tier: Tier,
}

/// What an insert did: stored or merged, and the secrets taken out of the text first.
#[derive(Clone, Debug, PartialEq)]
pub struct Insert {
    /// Stored, or merged into an existing memory.
    pub outcome: InsertOutcome,
    /// The kind of each secret replaced by a marker before the text was stored or embedded
    /// (`"api-key"`, `"password"`, ...), in order; empty when there was none or
    /// `privacy.redact_secrets` is off (docs/configuration.md, "Secrets").
    pub redacted: Vec<&'static str>,
}

/// Whether an insert stored a new memory or refreshed one.
#[derive(Clone, Debug, PartialEq)]
pub enum InsertOutcome {
    /// A new memory was stored.
    Inserted(Item),
    /// The text duplicated (or nearly duplicated) an existing memory, which was refreshed
    /// instead; carries that memory's id.
    Merged(String),
}

impl Insert {
    /// The id of the stored or refreshed memory.
    pub fn id(&self) -> &str {
        match &self.outcome {
            InsertOutcome::Inserted(item) => &item.item_id,
            InsertOutcome::Merged(id) => id,
        }
    }

    /// True when a new memory was stored.
    pub fn inserted(&self) -> bool {
        matches!(self.outcome, InsertOutcome::Inserted(_))
    }

    /// The new memory, when one was stored.
    pub fn item(&self) -> Option<&Item> {
        match &self.outcome {
            InsertOutcome::Inserted(item) => Some(item),
            InsertOutcome::Merged(_) => None,
        }
    }
}

/// Options of [`crate::Coral::insert_with`].
#[derive(Clone, Debug, PartialEq)]
pub struct InsertOptions {
    /// Importance in 0..1 (default 0, as the original).
    pub importance: f64,
    /// Project tag.
    pub project: Option<String>,
    /// Creation time for imported history (default: now).
    pub timestamp: Option<f64>,
    /// The clock for tier checks (default: the system clock).
    pub now: Option<f64>,
}

impl Default for InsertOptions {
    fn default() -> Self {
        InsertOptions {
            importance: 0.0,
            project: None,
            timestamp: None,
            now: None,
        }
    }
}

/// Options of [`crate::Coral::search_with`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchOptions {
    /// Hits to return (default `retrieval.top_k`).
    pub top_k: Option<usize>,
    /// Boost this project's items and shared items.
    pub project: Option<String>,
    /// Drop hits below this score (default `retrieval.min_score`).
    pub min_score: Option<f64>,
    /// Score as of this time (default: the system clock).
    pub now: Option<f64>,
    /// IANA zone of time-shaped queries ("yesterday"; default `timeline.timezone`).
    pub timezone: Option<String>,
}

/// The parts of a hit's score.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Scores {
    /// Cosine of query and memory vectors.
    pub vector: f64,
    /// Bitmap Jaccard of their tokens.
    pub jaccard: f64,
    /// Recency of the memory's creation.
    pub time: f64,
    /// BM25 of the query's keywords in the memory; reported in the hybrid and rrf modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f64>,
}

/// One search result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchHit {
    /// The memory, after this hit was counted.
    pub item: Item,
    /// Its tier.
    pub tier: Tier,
    /// Fused score.
    pub score: f64,
    /// Components of the score.
    pub scores: Scores,
}

/// Counters, all O(1) on the local backend (one query each for the postgres backend's counts).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// `storage.backend`: `"local"` (the data directory) or `"postgres"`.
    pub backend: String,
    /// The tenant served, with the postgres backend.
    pub tenant: Option<String>,
    /// Why the backend's counts could not be read (the database unreachable), when they could
    /// not; the counts are then 0.
    pub backend_error: Option<String>,
    /// Hot items.
    pub hot: usize,
    /// Warm items.
    pub warm: usize,
    /// Cold items.
    pub cold: usize,
    /// All items.
    pub total: usize,
    /// Items with a usable vector.
    pub vectors: usize,
    /// Threads (kept apart from memories).
    pub threads: usize,
    /// Configured capacity.
    pub capacity_threshold: usize,
    /// Embedder in use.
    pub embedder: String,
    /// Vector dimension.
    pub dim: usize,
    /// Why the hash embedder is in use although `embedding.embedder` is `"auto"`.
    pub embedder_note: Option<String>,
    /// Why search ignores vectors (they were made by another model) until `coral reembed`.
    pub vectors_disabled: Option<String>,
    /// File entries kept verbatim because they did not parse.
    pub skipped_lines: usize,
    /// The last config problem, if the config in force is not the file's.
    pub config_error: Option<String>,
    /// Settings changed in the file that take effect only after a restart.
    pub restart_needed: Vec<String>,
    /// Damage contained at open.
    pub repairs: Vec<String>,
    /// Why the store is read-only (reads work, nothing is recorded), when it is.
    pub read_only: Option<String>,
    /// Why the last search's hits were not recorded, when they were not.
    pub unrecorded: Option<String>,
    /// Why the last checkpoint after a commit failed, when it did (nothing was lost).
    pub checkpoint_error: Option<String>,
    /// Temp files left by interrupted checkpoints and removed at open.
    pub temp_files_removed: usize,
    /// Their bytes.
    pub temp_bytes_removed: u64,
    /// Journal size since the last checkpoint.
    pub journal_bytes: u64,
    /// Checkpoints since the directory was created.
    pub generation: u64,
    /// Distillation and disk-quota activity since open.
    pub governance: GovernanceStats,
}

/// Disk usage (docs/configuration.md, "Disk budget").
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DiskUsage {
    /// Bytes per data file.
    pub files: BTreeMap<String, u64>,
    /// Text files (everything but the `.npy`).
    pub data_bytes: u64,
    /// `items × dim × 4`: what the vectors take once checkpointed.
    pub projected_vector_bytes: u64,
    /// `data_bytes + projected_vector_bytes`.
    pub total_bytes: u64,
    /// The budget (0 = none).
    pub max_bytes: u64,
    /// What the budget counts: the items as a checkpoint writes them, plus the archive.
    pub quota_bytes: u64,
    /// `quota_bytes / max_bytes`, when there is a budget.
    pub ratio: Option<f64>,
}

/// What [`crate::Coral::import_python_dir`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// Items found per tier in the source.
    pub found: BTreeMap<String, usize>,
    /// Items added.
    pub imported: usize,
    /// Items already present (same id), left as they were.
    pub already_present: usize,
    /// Vectors computed because the source had none usable.
    pub vectors_recomputed: usize,
    /// Source entries that did not parse (left in the source).
    pub skipped_lines: usize,
    /// What reading the source noticed.
    pub notes: Vec<String>,
    /// The source's threads (`coral_threads.json` beside its memories), merged by id and step
    /// id; `None` when it has no threads file.
    pub threads: Option<coral_thread::ImportCounts>,
}
