//! Coral's storage engines, behind the facade (`coral::Coral`): [`Engine`], the memory engine
//! over one data directory, and [`PgBackend`], one tenant of a PostgreSQL database, with what
//! both share: the API's values (`types.rs`, `limits.rs`, `list.rs`), an insert's and a
//! search's checks (`prepare.rs`), the hybrid ranking's last step (`rank.rs`), the bulk-removal
//! guard (`guard.rs`), the disk-quota rules (`quota.rs`) and the error type.
//!
//! The engine's store is private to its one commit door (`door.rs`): every put, touch, tier
//! move, importance change, delete, archive, vector change and checkpoint goes through
//! `Door::commit`, and nothing outside this crate can reach the store at all.
//!
//! ```
//! use std::sync::Arc;
//! use coral_config::Config;
//! use coral_embed::HashEmbedder;
//! use coral_engine::{Engine, InsertOptions, SearchOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let config = Config { base_dir: dir.path().to_path_buf(), ..Config::default() };
//! let (engine, _notices) = Engine::open(config, Arc::new(HashEmbedder::new(64)?))?;
//! engine.insert_with("用户喜欢喝冰镇拿铁咖啡", InsertOptions::default())?;
//! let hits = engine.search_with("拿铁咖啡", SearchOptions::default())?;
//! assert_eq!(hits[0].item.content, "用户喜欢喝冰镇拿铁咖啡");
//! engine.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod candidates;
mod copy;
mod door;
mod engine;
mod error;
mod govern;
mod governance;
mod guard;
mod id_key;
mod import;
mod insert;
mod keyword_file;
mod keyword_index;
mod lifecycle;
mod limits;
mod list;
mod memories;
mod pg_govern;
mod pool_rows;
mod postgres;
mod prepare;
mod quota;
mod rank;
mod reconfigure;
mod reembed;
mod report;
mod search;
mod search_hybrid;
mod search_rrf;
mod stats;
mod token_sets;
mod types;
mod vector_index;
mod vectors;

pub use engine::Engine;
pub use error::{Error, Result};
pub use governance::GovernanceStats;
pub use guard::{
    Confirmed, GOVERNANCE_FILE, Held, Removal, RemovalLimits, RemovalPreview, bulk_limit,
};
pub use limits::{MAX_TEXT_BYTES, MAX_TOP_K, MAX_UNIX_TIME, check_importance, unix_now};
pub use list::{ListOrder, ListPage, ListQuery, MAX_LIST_LIMIT};
pub use postgres::{NAME as POSTGRES, PgBackend};
pub use reembed::{ReembedCheck, ReembedReport};
pub use report::{DayCount, EvictionCandidate, FuseCheck, Paths, Report, civil_date, fuse_check};
pub use types::{
    DiskUsage, ImportReport, Insert, InsertOptions, InsertOutcome, Memory, Scores, SearchHit,
    SearchOptions, Stats,
};
pub use vector_index::VectorIndexReport;
pub use vectors::{OPEN_RECOMPUTE_LIMIT, vector_meta_path};
