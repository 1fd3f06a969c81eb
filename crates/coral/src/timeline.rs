//! The timeline in the facade (SPEC 11): `coral_timeline.sqlite3` in the data directory,
//! opened on first use, with the turns of dead processes recovered when it opens.
//!
//! It is apart from the memory pool: its entries are never searched, evicted or counted
//! against capacity, and it takes no part in the engine lock (SQLite does its own locking, so
//! several processes may share it like they share the data directory).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use coral_timeline::{Durability, Options, Timeline};

use crate::config::Config;
use crate::engine::{Coral, unix_now};

pub use coral_timeline::{
    BeginTurn, Classification, Closed, CompleteTurn, Detail, EntryInput, EntryRef, EntryView,
    Error as TimelineError, ExchangeRefs, History, HistoryFormat, HistoryTokens, Metrics,
    Namespace, OpenRequest, OpenResult, OpenedMemory, Origin, Period, Policy, Projection,
    ReadRequest, ReadResult, ReadStatus, Recovered, SettledResult, SettlementReport, TimeRange,
    ToolExchange, TurnHandle, TurnRole, TurnStatus, TurnView, UnitView, View,
};

/// File name of the timeline database inside the data directory.
pub const TIMELINE_FILE: &str = "coral_timeline.sqlite3";

impl Config {
    /// The timeline database: `coral_timeline.sqlite3` next to the store's files.
    pub fn timeline_path(&self) -> PathBuf {
        self.store_paths().dir.join(TIMELINE_FILE)
    }
}

/// The timeline of one `Coral`, opened by the first call that needs it (most agents never
/// use it, and a data directory gains the file only then).
pub(crate) struct TimelineSlot {
    path: PathBuf,
    durability: Durability,
    opened: Mutex<Option<Arc<Timeline>>>,
}

impl TimelineSlot {
    pub(crate) fn new(config: &Config) -> TimelineSlot {
        TimelineSlot {
            path: config.timeline_path(),
            // `storage.sync = "always"` asks for every commit on disk before it returns.
            durability: if config.storage.sync == "always" {
                Durability::Full
            } else {
                Durability::Normal
            },
            opened: Mutex::new(None),
        }
    }
}

impl Coral {
    /// The timeline, opened (and created) on first use. Opening aborts the open turns of
    /// processes that died before completing them. A failed open is retried by the next call.
    pub fn timeline(&self) -> Result<Arc<Timeline>, TimelineError> {
        let slot = &self.timeline;
        let mut opened = slot.opened.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = opened.as_ref() {
            return Ok(Arc::clone(t));
        }
        if let Some(dir) = slot.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| TimelineError::Corrupted {
                path: slot.path.clone(),
                detail: format!("cannot create its directory: {e}"),
            })?;
        }
        let timeline = Timeline::open_with(
            &slot.path,
            Options {
                durability: slot.durability,
                ..Options::default()
            },
        )?;
        timeline.recover_orphaned_turns(unix_now())?;
        let timeline = Arc::new(timeline);
        *opened = Some(Arc::clone(&timeline));
        Ok(timeline)
    }

    /// Where the timeline database is (whether or not it exists yet).
    pub fn timeline_path(&self) -> PathBuf {
        self.timeline.path.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_appears_on_first_use_in_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            base_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        let coral =
            Coral::open_with(config, Arc::new(crate::HashEmbedder::new(16).unwrap())).unwrap();
        let path = coral.timeline_path();
        assert_eq!(path, dir.path().join("memory_data").join(TIMELINE_FILE));
        assert!(!path.exists());
        let a = coral.timeline().unwrap();
        let b = coral.timeline().unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(path.exists());
    }
}
