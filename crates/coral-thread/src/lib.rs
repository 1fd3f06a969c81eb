//! Reasoning threads: never-forgotten, cross-chat work tracking shared by several processes.
//!
//! A thread is a piece of work that spans chats: a title, a summary (the plan), a status
//! (`active`, `interrupted`, `archived`), ordered steps (who pushed it forward, when, and
//! whether that finished something) and an optional parent. Threads live in one JSON file
//! (the original Python Coral's shape, so both can share it), apart from memories: they are
//! never evicted, never counted against capacity or quota, never returned by memory search.
//!
//! Several processes (one MCP server per chat) share the file. [`ThreadStore`] re-reads it
//! whenever its fingerprint changes, writes under an `O_EXCL` lock file holding its PID (a lock
//! older than 10 s whose PID is dead is stale), merges before writing so work done elsewhere is
//! never overwritten (threads by id, steps by `step_id`, the rest by latest `updated_at`), and
//! coalesces bursts into at most one write per 250 ms, flushed by [`ThreadStore::flush`] and
//! on drop.
//!
//! An operation returns only once its record is in this process's journal
//! (`.<threads file>.journal-<pid>-<tag>`, one CRC-checked, numbered line per change, fsynced
//! as [`SyncPolicy`] says), so an acknowledged change survives the process being killed. The
//! threads file is the checkpoint: after each write the journal is emptied, on a clean close
//! it is removed, and a journal whose process died (its `flock` is free) is replayed by the
//! next store that opens or checkpoints, then removed. Damage in a journal is reported
//! ([`ThreadStore::repairs`]) and skips only the damaged record.
//!
//! ```
//! use coral_thread::{StatusReport, ThreadStore};
//!
//! let dir = tempfile::tempdir()?;
//! let store = ThreadStore::open(dir.path().join("coral_threads.json"))?;
//! let t = store.create("发布 v2.0", Some("升级嵌入模型并优化检索性能"), None, Some("聊天A"))?;
//! store.advance(&t.thread_id, "向量重建完成，检索验证通过", None, Some("聊天B"))?;
//! store.flush()?;
//!
//! // Another process (here: another store on the same file) sees it at its next call.
//! let other = ThreadStore::open(store.path())?;
//! let StatusReport::One(seen) = other.status(Some(&t.thread_id), false, None)? else {
//!     unreachable!()
//! };
//! assert_eq!(seen.step_count, 1);
//! assert!(seen.steps[0].done); // "完成" reads as done
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod codec;
mod done;
mod error;
mod ids;
mod journal;
mod lock;
mod merge;
mod model;
mod options;
mod own_journal;
mod recover;
mod set;
mod shared;
mod snapshot;
mod store;
mod threads_file;

pub use coral_base::SyncPolicy;
pub use coral_base::secrets::Redaction;
pub use done::looks_completed;
pub use error::{Error, Result};
pub use model::{
    MAX_BY_CHARS, MAX_STEP_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS, Status, StatusReport,
    StepView, ThreadEntry, ThreadView,
};
pub use options::{Clock, StoreOptions};
pub use recover::journal_moves;
pub use set::{INTERRUPT_PREFIX, checked_advance, checked_create};
pub use snapshot::{Snapshot, snapshot};
pub use store::{ImportCounts, StoreCounters, ThreadStore};

/// Parse the bytes of a threads file (the original's array or dict form) and count the threads
/// it holds. For fuzzing and diagnostics: bad bytes give an error, never a panic.
pub fn parse_threads_file(bytes: &[u8]) -> Result<usize> {
    codec::parse(bytes, std::path::Path::new("coral_threads.json")).map(|set| set.len())
}
