//! Where a `Coral` keeps its timeline: `coral_timeline.sqlite3` in the data directory, opened by
//! the first call that needs it, with the turns of dead processes recovered when it opens.
//!
//! It is apart from the memory pool: its entries are never searched, evicted or counted
//! against capacity, and it takes no part in the engine lock (SQLite does its own locking, so
//! several processes may share it like they share the data directory).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coral_timeline::{Access, Durability, Options, Problem, Repair, Timeline};

use crate::unix_now;
use coral_config::{Config, SyncMode};

/// How long a timeline opened read-only is used before a call tries to open it writable again.
pub const READ_ONLY_RETRY: Duration = Duration::from_secs(5);

/// The timeline of one `Coral`, opened by the first call that needs it (most agents never
/// use it, and a data directory gains the file only then).
pub(crate) struct TimelineSlot {
    path: PathBuf,
    durability: Durability,
    /// `privacy.redact_secrets` in force (the engine's switch).
    redaction: coral_base::secrets::Redaction,
    opened: Mutex<Option<(Arc<Timeline>, Instant)>>,
}

impl TimelineSlot {
    pub(crate) fn new(config: &Config, redaction: coral_base::secrets::Redaction) -> TimelineSlot {
        TimelineSlot {
            path: config.timeline_path(),
            redaction,
            // `storage.sync = "always"` asks for every commit on disk before it returns.
            durability: if config.storage.sync_mode() == SyncMode::Always {
                Durability::Full
            } else {
                Durability::Normal
            },
            opened: Mutex::new(None),
        }
    }

    /// Where the database is (whether or not it exists yet).
    pub(crate) fn path(&self) -> &PathBuf {
        &self.path
    }

    /// Open the file with `access`, and abort the open turns of processes that died (skipped
    /// where nothing can be written: those turns stay open until a writable open).
    fn open(&self, access: Access) -> Result<Timeline, coral_timeline::Error> {
        let timeline = Timeline::open_with(
            &self.path,
            Options {
                durability: self.durability,
                access,
                redaction: self.redaction.clone(),
                ..Options::default()
            },
        )?;
        match timeline.recover_orphaned_turns(unix_now()) {
            Ok(_) | Err(coral_timeline::Error::Unwritable { .. }) => Ok(timeline),
            Err(e) => Err(e),
        }
    }

    /// The timeline, opened (and created) on first use; a read-only one is opened again for
    /// writing once [`READ_ONLY_RETRY`] has passed. A failed open is retried by the next call.
    pub(crate) fn get(&self) -> Result<Arc<Timeline>, coral_timeline::Error> {
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((t, at)) = opened.as_mut() {
            if t.read_only().is_none() || at.elapsed() < READ_ONLY_RETRY {
                return Ok(Arc::clone(t));
            }
            *at = Instant::now();
            match self.open(Access::Writable) {
                Ok(writable) => *t = Arc::new(writable),
                // Still unwritable: keep reading the one already open.
                Err(_) => return Ok(Arc::clone(t)),
            }
            return Ok(Arc::clone(t));
        }
        if let Some(dir) = self.path.parent()
            && !dir.is_dir()
        {
            std::fs::create_dir_all(dir).map_err(|e| coral_timeline::Error::Corrupted {
                path: self.path.clone(),
                detail: format!("cannot create its directory: {e}"),
            })?;
        }
        let timeline = Arc::new(self.open(Access::Auto)?);
        *opened = Some((Arc::clone(&timeline), Instant::now()));
        Ok(timeline)
    }

    /// Why the open timeline records nothing, when it was opened read-only.
    pub(crate) fn read_only(&self) -> Option<String> {
        let opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        opened
            .as_ref()
            .and_then(|(t, _)| t.read_only().map(String::from))
    }

    /// Damage the open found and contained; empty when not open yet.
    pub(crate) fn repairs(&self) -> Vec<Repair> {
        let opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        opened
            .as_ref()
            .map(|(t, _)| t.repairs().to_vec())
            .unwrap_or_default()
    }

    /// Every problem of the database; none when the file does not exist (it is not created).
    pub(crate) fn check(&self) -> Vec<Problem> {
        if !self.path.exists() {
            return Vec::new();
        }
        match self.get().and_then(|t| t.check()) {
            Ok(problems) => problems,
            Err(e) => vec![Problem {
                file: self.path.clone(),
                detail: format!("cannot be checked: {e}"),
            }],
        }
    }
}
