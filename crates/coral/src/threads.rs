//! Threads in the facade: the store of `threads.path`, kept apart from memories (never
//! searched, evicted, or counted against capacity or quota).

use std::path::{Path, PathBuf};

use std::time::Duration;

use coral_thread::{StatusReport, StoreOptions, SyncPolicy, ThreadStore, ThreadView};

use crate::config::Config;
use crate::error::Result;

/// File name of the threads file inside a data-directory override.
pub const THREADS_FILE: &str = "coral_threads.json";

impl Config {
    /// The threads file: `threads.path` resolved against the config file's directory, or
    /// `coral_threads.json` in the data directory when one overrides the paths
    /// (`CORAL_DATA_DIR`, `--data-dir`).
    pub fn threads_path(&self) -> PathBuf {
        match &self.data_dir_override {
            Some(dir) => dir.join(THREADS_FILE),
            None => self.resolve(&self.threads.path),
        }
    }

    /// The thread journal's power-loss policy: `storage.sync` and `storage.sync_interval_ms`,
    /// the same as the memory journal's (docs/storage.md).
    pub fn thread_sync_policy(&self) -> SyncPolicy {
        match self.storage.sync.as_str() {
            "always" => SyncPolicy::Always,
            "never" => SyncPolicy::Never,
            _ => SyncPolicy::Interval(Duration::from_millis(self.storage.sync_interval_ms.max(1))),
        }
    }
}

/// The reasoning threads of one configuration (SPEC 8), usable without the memory store:
/// `coral thread ...` opens only this, so thread commands work while an MCP server holds the
/// data directory, and several processes share the threads file safely.
///
/// ```
/// use coral::{Config, Threads};
///
/// let dir = tempfile::tempdir()?;
/// let config = Config { base_dir: dir.path().to_path_buf(), ..Config::default() };
/// let threads = Threads::open(&config)?;
/// let t = threads.create("发布 v2.0", Some("升级嵌入模型"), None, Some("聊天A"))?;
/// let t = threads.advance(&t.thread_id, "向量重建完成", None, Some("聊天B"))?;
/// assert!(t.steps[0].done);
/// assert_eq!(serde_json::to_value(&t)?["step_count"], 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Threads {
    store: ThreadStore,
}

impl Threads {
    /// Open the threads file of `config` (created by the first change), journaling changes
    /// with the config's `storage.sync` policy.
    pub fn open(config: &Config) -> Result<Threads> {
        let options = StoreOptions {
            sync: config.thread_sync_policy(),
            ..StoreOptions::default()
        };
        Threads::open_with(config.threads_path(), options)
    }

    /// Open a threads file with explicit store options (a test clock, no coalescing, ...).
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Threads> {
        Ok(Threads {
            store: ThreadStore::open_with(path, options)?,
        })
    }

    /// The threads file.
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// Threads known to this process, archived included (O(1), no file access).
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// True when there are no threads.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// File entries kept verbatim because they are not readable threads.
    pub fn unreadable_entries(&self) -> usize {
        self.store.unreadable_entries()
    }

    /// `thread_create`: a new active thread.
    pub fn create(
        &self,
        title: &str,
        summary: Option<&str>,
        parent_thread_id: Option<&str>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        Ok(self.store.create(title, summary, parent_thread_id, by)?)
    }

    /// `thread_status`: one thread by id, or the overview (non-archived unless
    /// `include_archived`; active, then interrupted; newest update first; with child ids),
    /// filtered by `query` on title and summary, case-insensitively.
    pub fn status(
        &self,
        thread_id: Option<&str>,
        include_archived: bool,
        query: Option<&str>,
    ) -> Result<StatusReport> {
        Ok(self.store.status(thread_id, include_archived, query)?)
    }

    /// `thread_advance`: append a step; `done` omitted is detected from the note.
    pub fn advance(
        &self,
        thread_id: &str,
        note: &str,
        done: Option<bool>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        Ok(self.store.advance(thread_id, note, done, by)?)
    }

    /// `thread_interrupt`: status interrupted and a step `[中断] reason`.
    pub fn interrupt(&self, thread_id: &str, reason: Option<&str>) -> Result<ThreadView> {
        Ok(self.store.interrupt(thread_id, reason)?)
    }

    /// `thread_archive`: hidden from the overview, kept forever.
    pub fn archive(&self, thread_id: &str) -> Result<ThreadView> {
        Ok(self.store.archive(thread_id)?)
    }

    /// `thread_resume`: back to active.
    pub fn resume(&self, thread_id: &str) -> Result<ThreadView> {
        Ok(self.store.resume(thread_id)?)
    }

    /// `thread_link`: make `parent_id` the parent of `child_id` (no self-links, no cycles).
    pub fn link(&self, child_id: &str, parent_id: &str) -> Result<()> {
        Ok(self.store.link(child_id, parent_id)?)
    }

    /// Every thread in file order (checks, exports).
    pub fn all(&self) -> Result<Vec<ThreadView>> {
        Ok(self.store.all()?)
    }

    /// Write pending changes to the threads file now (every change is in the journal when
    /// its call returns; the file is otherwise rewritten within 250 ms).
    pub fn flush(&self) -> Result<()> {
        Ok(self.store.flush()?)
    }

    /// Damage found in ended processes' thread journals, one sentence each (empty when none).
    pub fn repairs(&self) -> Vec<String> {
        self.store.repairs()
    }
}
