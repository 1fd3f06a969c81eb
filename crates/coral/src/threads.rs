//! Threads in the facade (docs/storage.md, "Threads"): the thread store of `threads.path`,
//! kept apart from memories (never searched, evicted, or counted against capacity or quota).
//! The operations are `coral_thread::ThreadStore`'s, re-exported as they are.

use coral_thread::ThreadStore;

use crate::Result;
use coral_config::Config;

/// The thread store of `config` (created by the first change), journaling changes with the
/// config's `storage.sync` policy. It needs no memory store: `coral thread ...` opens only
/// this, so thread commands work while an MCP server holds the data directory, and several
/// processes share the threads file safely. [`crate::Coral::threads`] is the same store.
///
/// ```
/// use coral::{Config, open_threads};
///
/// let dir = tempfile::tempdir()?;
/// let config = Config { base_dir: dir.path().to_path_buf(), ..Config::default() };
/// let threads = open_threads(&config)?;
/// let t = threads.create("发布 v2.0", Some("升级嵌入模型"), None, Some("聊天A"))?;
/// let t = threads.advance(&t.thread_id, "向量重建完成", None, Some("聊天B"))?;
/// assert!(t.steps[0].done);
/// assert_eq!(serde_json::to_value(&t)?["step_count"], 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_threads(config: &Config) -> Result<ThreadStore> {
    Ok(ThreadStore::open_with(
        config.threads_path(),
        config.thread_store_options(),
    )?)
}
