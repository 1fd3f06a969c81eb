//! `Timeline`: the SQLite file, its connection and the shared row helpers.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior};

use crate::check::Repair;
use crate::cursor::keyed_digest;
use crate::error::{Error, Result};
use crate::owner::Owner;

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
    pub(crate) path: Option<PathBuf>,
    pub(crate) migrated_from: i64,
    pub(crate) retrieval: crate::retrieve::RetrievalCache,
    /// Why nothing can be written, when opened read-only.
    pub(crate) read_only: Option<String>,
    /// Damage found and contained by this open.
    pub(crate) repairs: Vec<Repair>,
    /// The private copy read instead of the file, if any; after `conn`, so the connection
    /// closes before the copy is removed.
    pub(crate) snapshot: Option<crate::open::Snapshot>,
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
    /// [`Error::Unwritable`], and nothing is written.
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
            None => e,
        })
    }

    /// Run `f` in one read transaction (a consistent snapshot across its queries).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
        f(&tx)
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

/// One stored entry, as the read paths see it.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub conversation_id: String,
    pub seq_no: i64,
    pub unit_seq: i64,
    pub unit_ts: f64,
    pub source_id: String,
    pub kind: String,
    pub origin: String,
    pub turn_role: String,
    pub actor: Option<String>,
    pub turn_id: Option<String>,
    pub correlation_id: Option<String>,
    pub tool_name: Option<String>,
    pub status: Option<String>,
    pub ts: f64,
    pub text: String,
    pub payload: Option<String>,
    pub chars: i64,
    pub bytes: i64,
    pub tokens: i64,
    pub sha256: String,
    pub settlement: Option<String>,
    pub card: Option<String>,
    pub card_tokens: Option<i64>,
}

/// The select [`Row::from_sql`] reads: an entry (`e`) with its settlement (`s`), if any. Every
/// statement built on it adds a `WHERE e.hard_key = ?`.
pub(crate) const ROW_SELECT: &str = "SELECT e.conversation_id, e.seq_no, e.unit_seq, \
     e.unit_ts, e.source_id, e.kind, e.origin, e.turn_role, e.actor, e.turn_id, \
     e.correlation_id, e.tool_name, e.status, e.ts, e.text, e.payload, e.chars, e.bytes, \
     e.tokens, e.sha256, s.classification, s.card, s.card_tokens FROM entries e \
     LEFT JOIN settlements s ON s.hard_key = e.hard_key AND s.source_id = e.source_id";

/// [`ROW_SELECT`] without the bodies the conversation shows as cards (their `text` is empty)
/// and without payloads: for rendering and token counts.
pub(crate) const LIGHT_ROW_SELECT: &str = "SELECT e.conversation_id, e.seq_no, e.unit_seq, \
     e.unit_ts, e.source_id, e.kind, e.origin, e.turn_role, e.actor, e.turn_id, \
     e.correlation_id, e.tool_name, e.status, e.ts, \
     CASE WHEN s.classification = 'compact_reloadable' AND s.card IS NOT NULL THEN '' \
     ELSE e.text END, NULL, e.chars, e.bytes, e.tokens, e.sha256, s.classification, s.card, \
     s.card_tokens FROM entries e \
     LEFT JOIN settlements s ON s.hard_key = e.hard_key AND s.source_id = e.source_id";

impl Row {
    pub(crate) fn from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
        Ok(Row {
            conversation_id: r.get(0)?,
            seq_no: r.get(1)?,
            unit_seq: r.get(2)?,
            unit_ts: r.get(3)?,
            source_id: r.get(4)?,
            kind: r.get(5)?,
            origin: r.get(6)?,
            turn_role: r.get(7)?,
            actor: r.get(8)?,
            turn_id: r.get(9)?,
            correlation_id: r.get(10)?,
            tool_name: r.get(11)?,
            status: r.get(12)?,
            ts: r.get(13)?,
            text: r.get(14)?,
            payload: r.get(15)?,
            chars: r.get(16)?,
            bytes: r.get(17)?,
            tokens: r.get(18)?,
            sha256: r.get(19)?,
            settlement: r.get(20)?,
            card: r.get(21)?,
            card_tokens: r.get(22)?,
        })
    }

    /// Whether the model-visible form of this entry is its reload card.
    pub(crate) fn folded(&self) -> bool {
        self.settlement.as_deref() == Some("compact_reloadable") && self.card.is_some()
    }

    /// The model-visible text: the card when folded, else the body.
    pub(crate) fn visible_text(&self) -> &str {
        match (&self.card, self.folded()) {
            (Some(card), true) => card,
            _ => &self.text,
        }
    }

    /// Estimated tokens of [`Row::visible_text`].
    pub(crate) fn visible_tokens(&self) -> u64 {
        if self.folded() {
            self.card_tokens.unwrap_or(self.tokens) as u64
        } else {
            self.tokens as u64
        }
    }
}

/// Which calls of a unit the conversation leaves out: in an aborted turn, a call that never got
/// its result (providers reject an unanswered call). One rule for the provider history, the
/// context and retrieval.
pub(crate) struct Unanswered<'a> {
    aborted: bool,
    answered: std::collections::BTreeSet<&'a str>,
}

impl<'a> Unanswered<'a> {
    /// The rule for the rows of one unit; `aborted` says whether its turn was aborted.
    pub(crate) fn of(rows: &'a [Row], aborted: bool) -> Unanswered<'a> {
        let answered = if aborted {
            rows.iter()
                .filter(|r| r.turn_role == "observation")
                .filter_map(|r| r.correlation_id.as_deref())
                .collect()
        } else {
            Default::default()
        };
        Unanswered { aborted, answered }
    }

    /// Whether `row` is left out.
    pub(crate) fn hides(&self, row: &Row) -> bool {
        self.aborted
            && row.turn_role == "action"
            && !self
                .answered
                .contains(row.correlation_id.as_deref().unwrap_or(""))
    }
}

/// Every entry of one unit (a turn, or a standalone entry), in order.
pub(crate) fn unit_rows(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
    unit_seq: i64,
) -> Result<Vec<Row>> {
    let mut stmt = tx.prepare_cached(&format!(
        "{ROW_SELECT} WHERE e.hard_key = ?1 AND e.conversation_id = ?2 AND e.unit_seq = ?3 \
         ORDER BY e.seq_no"
    ))?;
    let rows = stmt
        .query_map(
            rusqlite::params![hard_key, conversation_id, unit_seq],
            Row::from_sql,
        )?
        .collect::<rusqlite::Result<Vec<Row>>>()?;
    Ok(rows)
}

/// One entry by source id within the hard key (and the conversation, when given).
pub(crate) fn find_row(
    tx: &Transaction<'_>,
    hard_key: &str,
    source_id: &str,
    conversation_id: Option<&str>,
) -> Result<Option<Row>> {
    let mut stmt = tx.prepare_cached(&format!(
        "{ROW_SELECT} WHERE e.hard_key = ?1 AND e.source_id = ?2 \
         AND (?3 IS NULL OR e.conversation_id = ?3)"
    ))?;
    Ok(stmt
        .query_row(
            rusqlite::params![hard_key, source_id, conversation_id],
            Row::from_sql,
        )
        .optional()?)
}

/// The status of a turn within the hard key.
pub(crate) fn turn_status(
    tx: &Transaction<'_>,
    hard_key: &str,
    turn_id: &str,
) -> Result<Option<String>> {
    let mut stmt =
        tx.prepare_cached("SELECT status FROM turns WHERE hard_key = ?1 AND turn_id = ?2")?;
    Ok(stmt
        .query_row(rusqlite::params![hard_key, turn_id], |r| r.get(0))
        .optional()?)
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
