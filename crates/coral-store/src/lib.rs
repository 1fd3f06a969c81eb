//! Durable, tiered storage for Coral's memories.
//!
//! A data directory holds the files of the original Python Coral (`coral_warm.json`,
//! `coral_cold.jsonl`, `coral_vectors.npy`, `coral_vector_index.json`) plus Coral's own
//! `coral_hot.json`, the write-ahead journal `coral_wal.jsonl`, the archive and a lock file.
//! Every mutation is a [`Record`] appended to the journal before it is applied, so nothing
//! acknowledged is lost when the process is killed; [`Store::checkpoint`] folds the journal back
//! into the compatible files atomically.
//!
//! The store knows items, tiers and vectors. It does not know how text is tokenised or embedded
//! (the caller passes a feature function), nor any retrieval or lifecycle policy.
//!
//! ```
//! use std::sync::Arc;
//! use coral_store::{Item, Record, Store, StoreOptions, StorePaths, SyncPolicy, Tier};
//!
//! let dir = tempfile::tempdir()?;
//! let options = StoreOptions {
//!     dim: 2,
//!     sync: SyncPolicy::Never,
//!     wal_max_bytes: 1 << 20,
//!     features: Arc::new(|_: &str| [0u64; 32]),
//! };
//! let mut store = Store::open(StorePaths::in_dir(dir.path()), options.clone())?;
//! let item = Item {
//!     item_id: "0123456789abcdef".into(),
//!     content: "the user likes iced lattes".into(),
//!     timestamp: 1.0e9,
//!     last_access: 1.0e9,
//!     token_count: 6,
//!     access_count: 1,
//!     importance: 0.5,
//!     project: None,
//!     extra: Default::default(),
//! };
//! store.commit(vec![Record::Put { tier: Tier::Hot, item, vector: vec![0.6, 0.8] }])?;
//! drop(store); // no checkpoint: the journal alone keeps the item
//! let store = Store::open(StorePaths::in_dir(dir.path()), options)?;
//! assert_eq!(store.counts().hot, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod backup;
mod bitmap_file;
mod check;
mod error;
mod files;
mod item;
mod item_meta;
mod journal;
mod journal_lines;
mod lock;
pub mod npy;
mod pool;
mod record;
mod replay;
mod snapshot;
mod store;
mod sums;
mod vector_meta;
mod vector_rows;

pub use backup::{BackupFile, backup, read_checked, restore, restore_marker};
pub use bitmap_file::TextKey;
pub use check::{CheckReport, Finding, Severity, check};
pub use coral_base::SyncPolicy;
pub use error::{Error, Result};
pub use files::{
    Loaded, Skipped, StorePaths, parse_item_array, parse_item_lines, read_item_lines, write_atomic,
    write_atomic_with,
};
pub use item::{Item, OriginalKeys, PythonCompact, Tier, to_python_line};
pub use item_meta::ItemMeta;
pub use journal_lines::{Damage, DamageKind, Line, Scan, scan as scan_journal};
pub use lock::{Attachment, DirLock, WriteLock};
pub use pool::{FeatureFn, Pool, tiebreak_key};
pub use record::Record;
pub use replay::{Repair, StoreOptions};
pub use snapshot::Snapshot;
pub use store::{Closed, Store, SyncOutcome, TierCounts};
pub use vector_meta::{VectorMeta, read as read_vector_meta};
pub use vector_rows::{
    COMPACT_FROM, LoadedVectors, RowVector, SPARSE_DENSITY, SparseBuilder, SparseRows,
};
