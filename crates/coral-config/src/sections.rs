//! The sections of `coral_config.json` other than `retrieval` and `timeline`: every key with
//! its default, written once.

use serde::{Deserialize, Serialize};

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
    /// `"auto"`, `"hash"`, `"model"` (alias `"onnx"`), or the original's
    /// `"sentence-transformers"` (the model when installed, else hash with a notice).
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
    /// The project servers and hooks tag inserts with and prefer in searches when a call names
    /// none (docs/servers.md, "Projects"): `""` none, `"auto"` the client's workspace (its MCP
    /// roots, else the git root or the directory it runs in), else that name.
    pub project: String,
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
            project: String::new(),
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

impl HeatConfig {
    /// The heat formula's parameters these settings describe.
    pub fn params(&self) -> coral_heat::HeatParams {
        let w = &self.weights;
        coral_heat::HeatParams {
            weights: coral_heat::HeatWeights {
                frequency: w.frequency,
                recency: w.recency,
                importance: w.importance,
            },
            tau_days: self.tau_days,
            freq_scale: self.freq_scale,
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
    /// Where memories live: `"local"` (the data directory) or `"postgres"` (docs/postgres.md).
    pub backend: String,
    /// The database of `backend = "postgres"`; empty: `CORAL_POSTGRES_URL`.
    pub postgres_url: String,
    /// The tenant this installation reads and writes in the database (its hard key).
    pub postgres_tenant: String,
    /// The most database connections one process opens.
    pub postgres_pool_size: usize,
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
            backend: "local".into(),
            postgres_url: String::new(),
            postgres_tenant: String::new(),
            postgres_pool_size: 8,
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

/// `privacy.*` (docs/configuration.md, "Secrets")
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PrivacyConfig {
    /// Replace API keys, tokens, private keys and passwords by a marker before a memory, a
    /// thread step or a timeline entry is stored or embedded.
    pub redact_secrets: bool,
}

impl Default for PrivacyConfig {
    fn default() -> Self {
        PrivacyConfig {
            redact_secrets: true,
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

impl LlmConfig {
    /// The endpoint these settings name, else `CORAL_LLM_*`, else `DEEPSEEK_*`; `None` when
    /// none is complete.
    pub fn settings(&self) -> Option<coral_heat::LlmSettings> {
        coral_heat::LlmSettings::resolve(&self.base_url, &self.api_key, &self.model, |key| {
            std::env::var(key).ok()
        })
    }
}
