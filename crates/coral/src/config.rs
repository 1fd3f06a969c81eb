//! `coral_config.json`: every key with its default, loading, validation, path resolution.
//!
//! Each default is written once, in the `Default` impls below, and serde uses the same impls
//! through `#[serde(default)]`. Validation lives in [`Config::validate`] and reports every problem
//! with the dotted key and the offending value. Nothing ever falls back to defaults silently.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
pub use crate::retrieval::{HybridConfig, RETRIEVAL_MODES, RetrievalMode};

/// The whole configuration (SPEC 7). Unknown keys are reported by [`Config::load`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Data file locations.
    pub paths: PathsConfig,
    /// Embedder choice.
    pub embedding: EmbeddingConfig,
    /// Tier sizes, dedup, capacity.
    pub memory: MemoryConfig,
    /// Search scoring.
    pub retrieval: RetrievalConfig,
    /// Heat formula.
    pub heat: HeatConfig,
    /// Config hot reload.
    pub reload: ReloadConfig,
    /// Concurrency knobs.
    pub parallelism: ParallelismConfig,
    /// Durability and disk budget.
    pub storage: StorageConfig,
    /// Threads file.
    pub threads: ThreadsConfig,
    /// `timeline.*`
    pub timeline: TimelineConfig,
    /// LLM endpoint for distillation.
    pub llm: LlmConfig,
    /// Directory that relative paths are resolved against (the config file's directory).
    #[serde(skip)]
    pub base_dir: PathBuf,
    /// Data directory override (`CORAL_DATA_DIR` or `--data-dir`): every data file lives there.
    #[serde(skip)]
    pub data_dir_override: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            paths: PathsConfig::default(),
            embedding: EmbeddingConfig::default(),
            memory: MemoryConfig::default(),
            retrieval: RetrievalConfig::default(),
            heat: HeatConfig::default(),
            reload: ReloadConfig::default(),
            parallelism: ParallelismConfig::default(),
            storage: StorageConfig::default(),
            threads: ThreadsConfig::default(),
            timeline: TimelineConfig::default(),
            llm: LlmConfig::default(),
            base_dir: PathBuf::from("."),
            data_dir_override: None,
        }
    }
}

/// `paths.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PathsConfig {
    /// Warm tier JSON array.
    pub warm_cache: String,
    /// Cold tier JSON Lines.
    pub cold_archive: String,
    /// Vector matrix `.npy`.
    pub vector_store: String,
    /// Vector row ids.
    pub vector_index: String,
}

impl Default for PathsConfig {
    fn default() -> Self {
        PathsConfig {
            warm_cache: "memory_data/coral_warm.json".into(),
            cold_archive: "memory_data/coral_cold.jsonl".into(),
            vector_store: "memory_data/coral_vectors.npy".into(),
            vector_index: "memory_data/coral_vector_index.json".into(),
        }
    }
}

/// `embedding.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EmbeddingConfig {
    /// `"auto"`, `"hash"`, `"model"` (aliases `"onnx"`, `"sentence-transformers"`).
    pub embedder: String,
    /// Model name (`"use-multilingual-v3"`, a hub id, or a short name of the model table).
    pub model_name: String,
    /// Vector dimension (used by the hash embedder; models bring their own).
    pub dim: usize,
    /// L2-normalise vectors.
    pub normalize: bool,
    /// Explicit model directory.
    pub model_path: String,
    /// Explicit ONNX runtime library.
    pub ort_library: String,
    /// Pooling of a model Coral does not know: `"mean"` or `"cls"` (`""` = the model table's,
    /// else the model directory's `1_Pooling/config.json`).
    pub pooling: String,
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        EmbeddingConfig {
            embedder: "auto".into(),
            model_name: "sentence-transformers/all-MiniLM-L6-v2".into(),
            dim: 384,
            normalize: true,
            model_path: String::new(),
            ort_library: String::new(),
            pooling: String::new(),
        }
    }
}

/// `memory.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryConfig {
    /// Set-Jaccard at or above which an insert merges into a hot/warm item.
    pub sim_threshold_hot: f64,
    /// Hours before a hot item moves to warm.
    pub hot_ttl_hours: f64,
    /// Hot tier size before LRU overflow to cold.
    pub max_hot_entries: usize,
    /// Warm tier size before LRU overflow to cold.
    pub max_warm_entries: usize,
    /// Cold tier size before heat trim to the archive.
    pub max_cold_entries: usize,
    /// `fuse_check` token budget.
    pub token_fuse_threshold: u64,
    /// Total items kept; governance evicts down to it.
    pub capacity_threshold: usize,
    /// Slack above capacity before governance runs (0 = automatic).
    pub governance_headroom: usize,
    /// Distil before evicting.
    pub distill_first: bool,
    /// Set-Jaccard that clusters items for distillation.
    pub distill_sim_threshold: f64,
    /// Smallest cluster worth distilling.
    pub distill_min_cluster: usize,
    /// Search only the newest N cold items (0 = all).
    pub cold_scan_lines: usize,
    /// Items per project kept by governance (0 = no quota).
    pub project_quota: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            sim_threshold_hot: 0.7,
            hot_ttl_hours: 24.0,
            max_hot_entries: 50,
            max_warm_entries: 200,
            max_cold_entries: 5000,
            token_fuse_threshold: 4000,
            capacity_threshold: 10_000,
            governance_headroom: 0,
            distill_first: true,
            distill_sim_threshold: 0.6,
            distill_min_cluster: 3,
            cold_scan_lines: 0,
            project_quota: 0,
        }
    }
}

/// `retrieval.weights`
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrievalWeights {
    /// Vector cosine weight.
    pub vector: f64,
    /// Bitmap Jaccard weight.
    pub jaccard: f64,
    /// Recency weight.
    pub time: f64,
}

impl Default for RetrievalWeights {
    fn default() -> Self {
        RetrievalWeights {
            vector: 0.6,
            jaccard: 0.2,
            time: 0.2,
        }
    }
}

/// `retrieval.rrf_weights`: each ranking's weight in `retrieval.mode = "rrf"`.
///
/// The defaults follow `cargo xtask eval` (docs/configuration.md, "Retrieval modes"): a model's
/// vectors are evidence BM25 does not have and vote fully; hash vectors and bitmap Jaccard are
/// hashed word overlap, which BM25 already scores better (it weighs rare words up and long
/// texts down), so by default they do not vote: with the hash embedder, rrf ranks by BM25.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RrfWeights {
    /// The vector ranking, when a model made the vectors.
    pub vector: f64,
    /// The vector ranking, when the hash embedder made them.
    pub hash_vector: f64,
    /// The bitmap-Jaccard ranking.
    pub jaccard: f64,
    /// The BM25 ranking.
    pub bm25: f64,
}

impl Default for RrfWeights {
    fn default() -> Self {
        RrfWeights {
            vector: 1.0,
            hash_vector: 0.0,
            jaccard: 0.0,
            bm25: 1.0,
        }
    }
}

impl RrfWeights {
    /// The weights of the three rankings (vector, Jaccard, BM25) for vectors made by the
    /// embedder called `embedder` (the hash embedder is `"hash"`).
    pub fn for_embedder(&self, embedder: &str) -> [f64; 3] {
        let vector = if embedder == "hash" {
            self.hash_vector
        } else {
            self.vector
        };
        [vector, self.jaccard, self.bm25]
    }
}

/// `retrieval.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrievalConfig {
    /// Fusion weights.
    pub weights: RetrievalWeights,
    /// Hits returned by default.
    pub top_k: usize,
    /// Recency decay constant in days.
    pub tau_days: f64,
    /// Hits below this score are dropped.
    pub min_score: f64,
    /// Search the cold tier too.
    pub include_cold: bool,
    /// How the pool ranks: `"hybrid"` (the default), `"weighted"` or `"rrf"`. A config without
    /// the key (the original's) ranks with the default.
    pub mode: RetrievalMode,
    /// Score added to items of the searched project and to shared items.
    pub project_boost: f64,
    /// Ranking weights of the rrf mode.
    pub rrf_weights: RrfWeights,
    /// Weight added to the BM25 terms of a multi-line query's last line (rrf and hybrid).
    pub bm25_last_line_boost: f64,
    /// Weights and bounds of the hybrid mode (and the timeline's retrieval).
    pub hybrid: HybridConfig,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig {
            weights: RetrievalWeights::default(),
            top_k: 5,
            tau_days: 7.0,
            min_score: 0.0,
            include_cold: true,
            mode: RetrievalMode::default(),
            project_boost: 0.15,
            rrf_weights: RrfWeights::default(),
            bm25_last_line_boost: 1.0,
            hybrid: HybridConfig::default(),
        }
    }
}

/// `heat.weights`
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeatWeightsConfig {
    /// Access-frequency weight.
    pub frequency: f64,
    /// Recency weight.
    pub recency: f64,
    /// Importance weight.
    pub importance: f64,
}

impl Default for HeatWeightsConfig {
    fn default() -> Self {
        HeatWeightsConfig {
            frequency: 0.4,
            recency: 0.3,
            importance: 0.3,
        }
    }
}

/// `heat.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeatConfig {
    /// Term weights.
    pub weights: HeatWeightsConfig,
    /// Recency decay constant in days.
    pub tau_days: f64,
    /// Access count that saturates the frequency term.
    pub freq_scale: f64,
    /// Kept for compatibility (hits are journaled at once in Coral).
    pub cold_fold_interval_seconds: f64,
}

impl Default for HeatConfig {
    fn default() -> Self {
        HeatConfig {
            weights: HeatWeightsConfig::default(),
            tau_days: 7.0,
            freq_scale: 10.0,
            cold_fold_interval_seconds: 30.0,
        }
    }
}

/// `reload.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReloadConfig {
    /// Fallback mtime check interval.
    pub check_interval_seconds: f64,
}

impl Default for ReloadConfig {
    fn default() -> Self {
        ReloadConfig {
            check_interval_seconds: 2.0,
        }
    }
}

/// `parallelism.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ParallelismConfig {
    /// Embedding batch window in ms (0 = no batching).
    pub embed_batch_window_ms: u64,
}

impl Default for ParallelismConfig {
    fn default() -> Self {
        ParallelismConfig {
            embed_batch_window_ms: 8,
        }
    }
}

/// `storage.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageConfig {
    /// Kept for compatibility (vectors are journaled with their item in Coral).
    pub vector_save_interval_seconds: f64,
    /// Disk budget in bytes (0 = none).
    pub max_bytes: u64,
    /// Usage ratio that warns.
    pub warn_ratio: f64,
    /// Usage ratio trimmed down to when over budget.
    pub hard_ratio: f64,
    /// `"always"`, `"interval"` or `"never"`.
    pub sync: String,
    /// fsync interval for `"interval"`.
    pub sync_interval_ms: u64,
    /// Journal size that triggers a checkpoint.
    pub wal_max_bytes: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            vector_save_interval_seconds: 5.0,
            max_bytes: 0,
            warn_ratio: 0.8,
            hard_ratio: 0.85,
            sync: "interval".into(),
            sync_interval_ms: 1000,
            wal_max_bytes: 64 * 1024 * 1024,
        }
    }
}

/// `threads.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadsConfig {
    /// Threads file.
    pub path: String,
}

impl Default for ThreadsConfig {
    fn default() -> Self {
        ThreadsConfig {
            path: "memory_data/coral_threads.json".into(),
        }
    }
}

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

/// `llm.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmConfig {
    /// OpenAI-compatible base URL.
    pub base_url: String,
    /// API key (never logged or returned unmasked).
    pub api_key: String,
    /// Model name.
    pub model: String,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            base_url: String::new(),
            api_key: String::new(),
            model: "deepseek-chat".into(),
        }
    }
}

/// Keys the original wrote but never used: accepted and ignored.
const IGNORED_KEYS: [&str; 3] = [
    "memory.sim_threshold_warm",
    "memory.sim_threshold_cold",
    "parallelism.vectorized_jaccard",
];

/// A loaded configuration and what loading it noticed.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The configuration.
    pub config: Config,
    /// Warnings (unknown keys).
    pub warnings: Vec<String>,
    /// The file was missing and has been created with the defaults.
    pub created: bool,
}

impl Config {
    /// The config file path: `explicit`, else `CORAL_CONFIG_PATH`, else `./coral_config.json`.
    pub fn resolve_path(explicit: Option<&Path>) -> PathBuf {
        explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("CORAL_CONFIG_PATH").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("coral_config.json"))
    }

    /// Load `path`, creating it with the defaults when missing. `CORAL_DATA_DIR` overrides the
    /// data directory. A file that does not parse, a wrongly typed or out-of-range value is an
    /// error naming the key and the value.
    pub fn load(path: &Path) -> Result<Loaded> {
        let err = |detail: String| Error::Config {
            path: path.to_path_buf(),
            detail,
        };
        let mut created = false;
        let text = match std::fs::read(path) {
            Ok(bytes) => {
                String::from_utf8(bytes).map_err(|_| err("the file is not valid UTF-8".into()))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| err(format!("cannot create {}: {e}", dir.display())))?;
                }
                let text = Config::default().to_json_pretty();
                coral_store::write_atomic(path, text.as_bytes(), true)
                    .map_err(|e| err(format!("cannot create the default config: {e}")))?;
                created = true;
                text
            }
            Err(e) => return Err(err(format!("cannot read: {e}"))),
        };
        let (mut config, warnings) = Config::from_json(&text).map_err(err)?;
        config.base_dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        if let Some(dir) = std::env::var_os("CORAL_DATA_DIR").filter(|d| !d.is_empty()) {
            config.data_dir_override = Some(PathBuf::from(dir));
        }
        Ok(Loaded {
            config,
            warnings,
            created,
        })
    }

    /// Parse and validate JSON text. Returns the config and warnings, or one message listing
    /// every problem.
    pub fn from_json(text: &str) -> std::result::Result<(Config, Vec<String>), String> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            format!(
                "not valid JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            )
        })?;
        if !value.is_object() {
            return Err("the top level must be a JSON object".into());
        }
        let config: Config = serde_path_to_error::deserialize(&value).map_err(|e| {
            let path = e.path().to_string();
            let shown = lookup(&value, &path)
                .map(|v| format!(" (value {v})"))
                .unwrap_or_default();
            format!("{path}{shown}: {}", e.into_inner())
        })?;
        let mut warnings = Vec::new();
        let defaults = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
        unknown_keys(&value, &defaults, "", &mut warnings);
        let problems = config.validate();
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        Ok((config, warnings))
    }

    /// Every problem with the values, each naming its key and value.
    pub fn validate(&self) -> Vec<String> {
        let mut p = Vec::new();
        let mut finite = |key: &str, v: f64, min: f64, max: f64| {
            if !v.is_finite() || v < min || v > max {
                p.push(format!("{key} = {v} must be a number in {min}..={max}"));
            }
        };
        let m = &self.memory;
        finite("memory.sim_threshold_hot", m.sim_threshold_hot, 0.0, 1.0);
        finite("memory.hot_ttl_hours", m.hot_ttl_hours, 0.0, 1e9);
        finite(
            "memory.distill_sim_threshold",
            m.distill_sim_threshold,
            0.0,
            1.0,
        );
        let r = &self.retrieval;
        finite("retrieval.weights.vector", r.weights.vector, -1e6, 1e6);
        finite("retrieval.weights.jaccard", r.weights.jaccard, -1e6, 1e6);
        finite("retrieval.weights.time", r.weights.time, -1e6, 1e6);
        finite("retrieval.tau_days", r.tau_days, 0.0, 1e9);
        finite("retrieval.min_score", r.min_score, -1e6, 1e6);
        finite("retrieval.project_boost", r.project_boost, -1e6, 1e6);
        let w = &r.rrf_weights;
        finite("retrieval.rrf_weights.vector", w.vector, 0.0, 1000.0);
        finite(
            "retrieval.rrf_weights.hash_vector",
            w.hash_vector,
            0.0,
            1000.0,
        );
        finite("retrieval.rrf_weights.jaccard", w.jaccard, 0.0, 1000.0);
        finite("retrieval.rrf_weights.bm25", w.bm25, 0.0, 1000.0);
        finite(
            "retrieval.bm25_last_line_boost",
            r.bm25_last_line_boost,
            0.0,
            1000.0,
        );
        let h = &self.heat;
        finite("heat.weights.frequency", h.weights.frequency, -1e6, 1e6);
        finite("heat.weights.recency", h.weights.recency, -1e6, 1e6);
        finite("heat.weights.importance", h.weights.importance, -1e6, 1e6);
        finite("heat.tau_days", h.tau_days, 0.0, 1e9);
        finite("heat.freq_scale", h.freq_scale, 0.0, 1e12);
        finite(
            "heat.cold_fold_interval_seconds",
            h.cold_fold_interval_seconds,
            0.0,
            1e9,
        );
        finite(
            "reload.check_interval_seconds",
            self.reload.check_interval_seconds,
            0.0,
            1e9,
        );
        let s = &self.storage;
        finite(
            "storage.vector_save_interval_seconds",
            s.vector_save_interval_seconds,
            0.0,
            1e9,
        );
        finite("storage.warn_ratio", s.warn_ratio, 0.0, 1.0);
        finite("storage.hard_ratio", s.hard_ratio, 0.0, 1.0);
        if r.top_k == 0 {
            p.push("retrieval.top_k = 0 must be at least 1".into());
        }
        for (vectors, key) in [("model", "vector"), ("hash", "hash_vector")] {
            let [v, j, b] = w.for_embedder(vectors);
            // Written so that NaN (reported above) does not count as a zero.
            if v == 0.0 && j == 0.0 && b == 0.0 {
                p.push(format!(
                    "retrieval.rrf_weights: {key}, jaccard and bm25 are all 0, so rrf would rank \
                     nothing with {vectors} vectors; give one of them a positive weight"
                ));
            }
        }
        p.extend(r.hybrid.problems());
        if !matches!(s.sync.as_str(), "always" | "interval" | "never") {
            p.push(format!(
                "storage.sync = {:?} must be \"always\", \"interval\" or \"never\"",
                s.sync
            ));
        }
        if let Err(e) = self.timeline.layer_settings().validate() {
            p.push(format!("timeline.{e}"));
        }
        if self.timeline.retrieval_limit == 0
            || self.timeline.retrieval_limit > coral_timeline::MAX_LIMIT
        {
            p.push(format!(
                "timeline.retrieval_limit = {} must be in 1..={}",
                self.timeline.retrieval_limit,
                coral_timeline::MAX_LIMIT
            ));
        }
        if let Err(e) = coral_timeline::parse_zone(&self.timeline.timezone) {
            p.push(format!("timeline.timezone: {e}"));
        }
        if s.wal_max_bytes < 4096 {
            p.push(format!(
                "storage.wal_max_bytes = {} must be at least 4096",
                s.wal_max_bytes
            ));
        }
        if !matches!(
            self.embedding.embedder.as_str(),
            "auto" | "hash" | "onnx" | "sentence-transformers" | "model"
        ) {
            p.push(format!(
                "embedding.embedder = {:?} must be \"auto\", \"hash\" or \"model\" (also \
                 written \"onnx\")",
                self.embedding.embedder
            ));
        }
        if !matches!(self.embedding.pooling.as_str(), "" | "mean" | "cls") {
            p.push(format!(
                "embedding.pooling = {:?} must be \"mean\", \"cls\" or \"\" (from the model)",
                self.embedding.pooling
            ));
        }
        if self.embedding.dim == 0 || self.embedding.dim > 65_536 {
            p.push(format!(
                "embedding.dim = {} must be in 1..=65536",
                self.embedding.dim
            ));
        }
        for (key, v) in [
            ("paths.warm_cache", &self.paths.warm_cache),
            ("paths.cold_archive", &self.paths.cold_archive),
            ("paths.vector_store", &self.paths.vector_store),
            ("paths.vector_index", &self.paths.vector_index),
            ("threads.path", &self.threads.path),
        ] {
            if v.trim().is_empty() {
                p.push(format!("{key} is empty"));
            }
        }
        p
    }

    /// The configuration as pretty JSON (the shape of `coral_config.json`).
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Resolve a configured path against the config file's directory.
    pub fn resolve(&self, configured: &str) -> PathBuf {
        let p = Path::new(configured);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base_dir.join(p)
        }
    }

    /// Where the store's files are.
    pub fn store_paths(&self) -> coral_store::StorePaths {
        if let Some(dir) = &self.data_dir_override {
            return coral_store::StorePaths::in_dir(dir);
        }
        let warm = self.resolve(&self.paths.warm_cache);
        let dir = warm
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.base_dir.clone());
        let mut paths = coral_store::StorePaths::in_dir(dir);
        paths.warm = warm;
        paths.cold = self.resolve(&self.paths.cold_archive);
        paths.vectors = self.resolve(&self.paths.vector_store);
        paths.index = self.resolve(&self.paths.vector_index);
        paths.sums = paths.vectors.with_extension("sums");
        paths
    }
}

fn lookup<'a>(value: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted
        .split('.')
        .try_fold(value, |v, key| v.get(key))
        .filter(|v| !v.is_object())
}

fn unknown_keys(value: &Value, defaults: &Value, prefix: &str, out: &mut Vec<String>) {
    let (Some(obj), Some(known)) = (value.as_object(), defaults.as_object()) else {
        return;
    };
    for (key, v) in obj {
        let dotted = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match known.get(key) {
            Some(d) => unknown_keys(v, d, &dotted, out),
            None if IGNORED_KEYS.contains(&dotted.as_str()) => {}
            None => out.push(format!("unknown config key {dotted} (ignored)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_original_default_config_loads() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/compat/coral_test_vectors.json"
        );
        let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let text = data["default_config"].to_string();
        let (config, warnings) = Config::from_json(&text).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(config.retrieval.top_k, 3);
        assert_eq!(config.memory.capacity_threshold, 1000);
        assert_eq!(config.embedding.embedder, "sentence-transformers");
    }

    #[test]
    fn defaults_round_trip_and_match_the_spec() {
        let c = Config::default();
        let (back, warnings) = Config::from_json(&c.to_json_pretty()).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(back.memory, c.memory);
        assert_eq!(c.memory.max_cold_entries, 5000);
        assert_eq!(c.storage.wal_max_bytes, 67_108_864);
        assert_eq!(c.retrieval.weights.vector, 0.6);
    }

    #[test]
    fn errors_name_the_key_and_value() {
        let check = |text: &str, needles: &[&str]| {
            let err = Config::from_json(text).unwrap_err();
            for n in needles {
                assert!(err.contains(n), "{err:?} should contain {n:?}");
            }
        };
        check(
            r#"{"memory": {"capacity_threshold": "lots"}}"#,
            &["memory.capacity_threshold", "lots"],
        );
        check(
            r#"{"memory": {"capacity_threshold": -5}}"#,
            &["memory.capacity_threshold", "-5"],
        );
        check(
            r#"{"storage": {"hard_ratio": 1.5}}"#,
            &["storage.hard_ratio", "1.5"],
        );
        check(
            r#"{"retrieval": {"mode": "magic"}}"#,
            &["retrieval.mode", "magic", "\"rrf\"", "\"hybrid\""],
        );
        check(r#"{"memory": {"#, &["line 1"]);
        check("[1]", &["object"]);
        check(
            r#"{"storage": {"warn_ratio": 2, "sync": "sometimes"}}"#,
            &["storage.warn_ratio", "storage.sync"],
        );
    }

    #[test]
    fn rrf_weights_and_last_line_boost_are_validated() {
        let (c, warnings) = Config::from_json(
            r#"{"retrieval": {"rrf_weights": {"jaccard": 0.5}, "bm25_last_line_boost": 0}}"#,
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        // Keys left out keep their defaults.
        let w = c.retrieval.rrf_weights;
        assert_eq!(
            (w.vector, w.hash_vector, w.jaccard, w.bm25),
            (1.0, 0.0, 0.5, 1.0)
        );
        assert_eq!(c.retrieval.bm25_last_line_boost, 0.0);
        assert_eq!(w.for_embedder("hash"), [0.0, 0.5, 1.0]);
        assert_eq!(w.for_embedder("all-MiniLM-L6-v2"), [1.0, 0.5, 1.0]);

        let check = |text: &str, needles: &[&str]| {
            let err = Config::from_json(text).unwrap_err();
            for n in needles {
                assert!(err.contains(n), "{err:?} should contain {n:?}");
            }
        };
        check(
            r#"{"retrieval": {"rrf_weights": {"bm25": -1}}}"#,
            &["retrieval.rrf_weights.bm25", "-1", "0..=1000"],
        );
        check(
            r#"{"retrieval": {"rrf_weights": {"hash_vector": "high"}}}"#,
            &["retrieval.rrf_weights.hash_vector", "high"],
        );
        check(
            r#"{"retrieval": {"bm25_last_line_boost": 1e9}}"#,
            &["retrieval.bm25_last_line_boost", "1000000000"],
        );
        // Every ranking off for one kind of vectors.
        check(
            r#"{"retrieval": {"rrf_weights": {"bm25": 0}}}"#,
            &["retrieval.rrf_weights", "hash_vector", "hash vectors"],
        );
        let err = Config::from_json(
            r#"{"retrieval": {"rrf_weights": {"vector": 0, "hash_vector": 1, "bm25": 0}}}"#,
        )
        .unwrap_err();
        assert!(
            err.contains("model vectors") && !err.contains("hash vectors"),
            "{err}"
        );
        // A misspelt weight is a warning, not silently a default.
        let (_, w) = Config::from_json(r#"{"retrieval": {"rrf_weights": {"bm52": 2}}}"#).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("retrieval.rrf_weights.bm52"), "{w:?}");
    }

    #[test]
    fn every_listed_retrieval_mode_is_accepted() {
        assert!(RETRIEVAL_MODES.contains(&RetrievalConfig::default().mode.as_str()));
        for mode in RETRIEVAL_MODES {
            let text = format!(r#"{{"retrieval": {{"mode": "{mode}"}}}}"#);
            let (config, warnings) = Config::from_json(&text).unwrap();
            assert_eq!(config.retrieval.mode.as_str(), *mode);
            assert!(warnings.is_empty());
        }
        // The original's configs have no retrieval.mode: they rank with the default.
        let (config, _) = Config::from_json(r#"{"retrieval": {"top_k": 3}}"#).unwrap();
        assert_eq!(config.retrieval.mode, RetrievalMode::Hybrid);
    }

    #[test]
    fn unknown_keys_warn_and_original_unused_keys_do_not() {
        let (_, w) = Config::from_json(
            r#"{"memory": {"sim_threshold_warm": 0.5, "bogus": 1}, "extra_section": {}}"#,
        )
        .unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("memory.bogus"));
    }

    #[test]
    fn relative_paths_resolve_against_the_config_directory() {
        let mut c = Config {
            base_dir: PathBuf::from("/srv/agent"),
            ..Config::default()
        };
        let p = c.store_paths();
        assert_eq!(
            p.warm,
            PathBuf::from("/srv/agent/memory_data/coral_warm.json")
        );
        assert_eq!(
            p.wal,
            PathBuf::from("/srv/agent/memory_data/coral_wal.jsonl")
        );
        c.data_dir_override = Some(PathBuf::from("/data"));
        assert_eq!(
            c.store_paths().cold,
            PathBuf::from("/data/coral_cold.jsonl")
        );
    }
}
