//! `Timeline`: the SQLite connection and its two doors, `write` (one `BEGIN IMMEDIATE`
//! transaction) and `read` (one snapshot), with SQLite's failures said in words.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, ErrorCode, Transaction, TransactionBehavior};

use crate::cache::RetrievalCache;
use crate::cursor::keyed_digest;
use crate::error::{Error, Result, stored_value_error};
use crate::owner::Owner;
use crate::repair::Repair;
use crate::snapshot::Snapshot;

/// A timeline database: turns, entries and their settlement, for every namespace.
///
/// Every write is one `BEGIN IMMEDIATE` transaction, validated before anything is written, so a
/// refused or failed call leaves the file as it was. `Timeline` is `Send + Sync`; calls from
/// several threads are serialised on its connection, and several processes may open the same
/// file (SQLite's locking, WAL journal). A timeline opened where nothing can be written
/// ([`Timeline::read_only`]) reads as usual and refuses every write with
/// [`Error::Unwritable`].
pub struct Timeline {
    pub(crate) conn: Mutex<Connection>,
    pub(crate) secret: [u8; 32],
    pub(crate) owner: Owner,
    /// Whether entries are redacted before they are written (`insert.rs`).
    pub(crate) redaction: coral_base::secrets::Redaction,
    pub(crate) path: Option<PathBuf>,
    pub(crate) migrated_from: i64,
    pub(crate) retrieval: RetrievalCache,
    /// Why nothing can be written, when opened read-only.
    pub(crate) read_only: Option<String>,
    /// Damage found and contained by this open.
    pub(crate) repairs: Vec<Repair>,
    /// The private copy read instead of the file, if any; after `conn`, so the connection
    /// closes before the copy is removed.
    pub(crate) snapshot: Option<Snapshot>,
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeline")
            .field("path", &self.path)
            .field("owner", &self.owner)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl Timeline {
    /// The database file (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The schema version the file had before this open (0 for a new file).
    pub fn migrated_from(&self) -> i64 {
        self.migrated_from
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic inside a call drops its transaction (rolled back), so the connection is fine.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why nothing can be written, when the timeline was opened read-only (a read-only file
    /// system or directory, a full disk, or [`crate::Access::ReadOnly`]); `None` when writable.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// Damage this open found and contained (a damaged write-ahead log, quarantined); empty
    /// when there was none. [`Timeline::check`] lists what is left of earlier damage.
    pub fn repairs(&self) -> &[Repair] {
        &self.repairs
    }

    /// The file as error messages name it.
    pub(crate) fn display_path(&self) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| PathBuf::from(":memory:"))
    }

    /// Run `f` in one `BEGIN IMMEDIATE` transaction; commit on `Ok`, roll back on `Err`. A
    /// read-only timeline, a full disk or a file that cannot be written answer
    /// [`Error::Unwritable`], and nothing is written; a stored value this build does not know
    /// answers [`Error::Corrupted`].
    pub(crate) fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        if let Some(reason) = &self.read_only {
            return Err(Error::Unwritable {
                path: self.display_path(),
                reason: reason.clone(),
            });
        }
        let mut conn = self.lock();
        let run = || -> Result<T> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        };
        run().map_err(|e| match cannot_write(&e) {
            Some(reason) => Error::Unwritable {
                path: self.display_path(),
                reason,
            },
            None => stored_value_error(e, self.display_path()),
        })
    }

    /// Run `f` in one read transaction (a consistent snapshot across its queries); a stored
    /// value this build does not know answers [`Error::Corrupted`].
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.lock();
        let run = || -> Result<T> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
            f(&tx)
        };
        run().map_err(|e| stored_value_error(e, self.display_path()))
    }

    /// An id nobody can guess or link to another namespace: `prefix-` and 16 hex digits of a
    /// keyed digest of `parts`.
    pub(crate) fn make_id(&self, prefix: &str, parts: &[&str]) -> String {
        format!(
            "{prefix}-{}",
            &keyed_digest(&self.secret, &parts.join("\u{1f}"))[..16]
        )
    }
}

/// Why SQLite could not write, when `e` says the file cannot take writes (read-only file
/// system, directory or file, full disk, failed I/O); `None` for every other error.
pub(crate) fn cannot_write(e: &Error) -> Option<String> {
    match e {
        Error::Unwritable { reason, .. } => Some(reason.clone()),
        Error::Sqlite(s) => match s.sqlite_error_code() {
            Some(
                ErrorCode::ReadOnly
                | ErrorCode::CannotOpen
                | ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::PermissionDenied,
            ) => Some(describe(s)),
            _ => None,
        },
        _ => None,
    }
}

/// SQLite's failure in words that say what to do: its extended codes tell a full disk behind
/// a "disk I/O error" (growing the `-shm` index, writing a page).
fn describe(e: &rusqlite::Error) -> String {
    const IOERR_WRITE: i32 = 10 | (3 << 8);
    const IOERR_SHMSIZE: i32 = 10 | (19 << 8);
    const IOERR_SHMMAP: i32 = 10 | (21 << 8);
    match e {
        rusqlite::Error::SqliteFailure(f, _) => match (f.code, f.extended_code) {
            (ErrorCode::DiskFull, _) => "the disk is full".into(),
            (_, IOERR_SHMSIZE | IOERR_SHMMAP) => {
                "the log's -shm index cannot be made or grown (is the disk full?)".into()
            }
            (_, IOERR_WRITE) => "a write failed (is the disk full?)".into(),
            _ => e.to_string(),
        },
        _ => e.to_string(),
    }
}

/// Run `f` again while SQLite answers "busy", up to `timeout`.
pub(crate) fn retry_busy<T>(
    timeout: std::time::Duration,
    mut f: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let started = std::time::Instant::now();
    loop {
        match f() {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && started.elapsed() < timeout =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}
