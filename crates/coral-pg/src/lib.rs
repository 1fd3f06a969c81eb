//! PostgreSQL + pgvector storage for Coral (docs/postgres.md): one tenant's memories, vectors,
//! keyword postings and threads in a database that processes on many machines share, every
//! operation one transaction, retrieval in the database and ranking with coral-score's fusion.
//!
//! The API is synchronous like the engine; the client (tokio-postgres) runs on a private
//! thread, and every call has a deadline.
//!
//! ```no_run
//! use coral_pg::{NewMemory, PgOptions, PgStore};
//! use coral_store::{Item, Tier};
//!
//! let store = PgStore::connect(PgOptions::new("postgres://coral@db:5432/coral"), "team-a", 3)?;
//! let item = Item::new("5e0f7c4b2a1d9e3f", "likes iced lattes", 4, 1_775_822_400.0, 0.5);
//! let new = NewMemory {
//!     item: &item,
//!     tier: Tier::Hot,
//!     vector: &[0.6, 0.8, 0.0],
//!     embedder: "hash",
//!     token_set: &[1, 2, 3],
//! };
//! store.insert(&new, 0.7)?;
//! assert_eq!(store.search_text("lattes", 5)?[0].item.item.item_id, "5e0f7c4b2a1d9e3f");
//! # Ok::<(), coral_pg::Error>(())
//! ```

mod error;
mod governance;
mod import;
mod memory;
mod options;
mod pool;
mod schema;
mod schema_v2;
mod search;
mod sql;
mod sql_tiers;
mod store;
mod threads;

pub use error::{Error, Result};
pub use governance::{Governing, HeatRow, Removed, TierUsage, Usage};
pub use import::{ExportPage, Exported};
pub use memory::{InsertOutcome, NewMemory, Stored, TierCounts};
pub use options::{PgOptions, URL_ENV};
pub use schema::SCHEMA_VERSION;
pub use search::{Candidates, ColdFilter, Finished, Hit, SPREAD_SAMPLES, SearchQuery};
pub use store::{MAX_TENANT_BYTES, PgStore};
