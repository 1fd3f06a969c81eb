//! Opening the database file: writable (migrations, and the write-ahead log checked for damage
//! under the write lock), or read-only where nothing can be written (a read-only mount or
//! directory, a full disk), so that reads keep working and writes say why they cannot.
//!
//! A read-only open of a WAL database needs its `-shm` index, which SQLite cannot create in a
//! read-only directory. So it tries, in order: SQLite's own read-only mode (works when the
//! `-shm` exists or can be made); `immutable=1` when there is no log to replay (nothing can
//! change on a read-only mount, and everything is in the main file); and otherwise a private
//! copy of the file and its log in the temporary directory, removed when the timeline is
//! dropped. `immutable=1` is never used with a log, which it would ignore.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use coral_base::secrets::Redaction;
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::repair::{self, Repair};
use crate::schema::{self, Migrated, SCHEMA_VERSION};
use crate::snapshot::Snapshot;
use crate::timeline::{Timeline, cannot_write, retry_busy};
use crate::wal::wal_path;

/// How hard a commit waits for the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous = NORMAL`: a commit survives the process being killed; the last commits
    /// may be lost if the machine loses power (WAL mode keeps the file consistent either way).
    #[default]
    Normal,
    /// `synchronous = FULL`: every commit is on disk before it returns.
    Full,
}

/// Whether a timeline may fall back to reading only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Access {
    /// Writable; read-only when the file cannot be written, with the reason in
    /// [`Timeline::read_only`].
    #[default]
    Auto,
    /// Writable, or the error that prevents it.
    Writable,
    /// Read-only even where it could write (inspection).
    ReadOnly,
}

/// How to open a timeline.
#[derive(Clone, Debug)]
pub struct Options {
    /// Commit durability.
    pub durability: Durability,
    /// How long a write waits for another process's write transaction.
    pub busy_timeout: Duration,
    /// The process recorded as the owner of turns begun through this handle (default: this
    /// process). Recovery aborts open turns whose owner is no longer running.
    pub owner: Owner,
    /// Writable, read-only, or writable where possible (the default).
    pub access: Access,
    /// Secrets in entry texts and payloads replaced by a marker before they are written
    /// (default on; docs/timeline.md, "Secrets").
    pub redaction: Redaction,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::Normal,
            busy_timeout: Duration::from_secs(5),
            owner: Owner::current(),
            access: Access::Auto,
            redaction: Redaction::default(),
        }
    }
}

impl Timeline {
    /// Open (or create) the database at `path` with the default [`Options`].
    pub fn open(path: impl AsRef<Path>) -> Result<Timeline> {
        Timeline::open_with(path, Options::default())
    }

    /// Open (or create) the database at `path`. With [`Access::Auto`], a file that cannot be
    /// written (read-only file system or directory, full disk) is opened read-only:
    /// [`Timeline::read_only`] says why, reads work, writes answer [`Error::Unwritable`].
    ///
    /// A writable open checks the write-ahead log first: damage that would make SQLite drop
    /// committed transactions without a word is copied to
    /// `<file>-wal.<unix time>.corrupt` and reported in [`Timeline::repairs`] (and by
    /// [`Timeline::check`] while the copy exists).
    pub fn open_with(path: impl AsRef<Path>, options: Options) -> Result<Timeline> {
        let path = path.as_ref();
        match options.access {
            Access::ReadOnly => {
                open_read_only(path, &options, "opened read-only on request".into())
            }
            Access::Writable => open_writable(path, &options),
            Access::Auto => match open_writable(path, &options) {
                Err(e) => match cannot_write(&e) {
                    Some(sqlite) => open_read_only(path, &options, explain(path, sqlite)),
                    None => Err(e),
                },
                ok => ok,
            },
        }
    }

    /// A timeline in memory (tests, examples); gone when dropped.
    pub fn open_in_memory() -> Result<Timeline> {
        let mut conn = Connection::open_in_memory()?;
        let options = Options::default();
        let (from, secret, repairs) = migrate(&mut conn, None, options.busy_timeout)?;
        Ok(assemble(conn, None, from, secret, repairs, &options))
    }
}

fn assemble(
    conn: Connection,
    path: Option<PathBuf>,
    from: i64,
    secret: [u8; 32],
    repairs: Vec<Repair>,
    options: &Options,
) -> Timeline {
    conn.set_prepared_statement_cache_capacity(64);
    Timeline {
        conn: std::sync::Mutex::new(conn),
        secret,
        owner: options.owner,
        redaction: options.redaction.clone(),
        path,
        migrated_from: from,
        retrieval: Default::default(),
        read_only: None,
        repairs,
        snapshot: None,
    }
}

fn corrupted(path: Option<&Path>, detail: String) -> Error {
    Error::Corrupted {
        path: path.map_or_else(|| PathBuf::from(":memory:"), Path::to_path_buf),
        detail,
    }
}

fn too_new(path: Option<&Path>, version: i64) -> Error {
    corrupted(
        path,
        format!(
            "schema version {version} is newer than this build understands ({SCHEMA_VERSION}); \
             upgrade coral"
        ),
    )
}

fn not_a_database(path: &Path, e: Error) -> Error {
    match e {
        Error::Sqlite(ref s) if s.sqlite_error_code() == Some(ErrorCode::NotADatabase) => {
            corrupted(
                Some(path),
                "not an SQLite database; move it away and Coral starts a new timeline".into(),
            )
        }
        other => other,
    }
}

fn open_writable(path: &Path, options: &Options) -> Result<Timeline> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(options.busy_timeout)?;
    // Switching to WAL needs a lock SQLite does not wait for (the busy handler is skipped
    // to avoid deadlocks), so processes opening a new file at once retry here.
    let mode: String = retry_busy(options.busy_timeout, || {
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
    })
    .map_err(|e| not_a_database(path, Error::Sqlite(e)))?;
    if !mode.eq_ignore_ascii_case("wal") {
        // A connection SQLite could only open read-only keeps its old journal mode.
        if conn.is_readonly(rusqlite::MAIN_DB)? {
            return Err(Error::Unwritable {
                path: path.to_path_buf(),
                reason: "the file can only be opened read-only".into(),
            });
        }
        return Err(corrupted(
            Some(path),
            format!(
                "cannot switch to WAL journal mode (got {mode}); is the file on a network share?"
            ),
        ));
    }
    let sync = match options.durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync)?;
    // Freed space is overwritten with zeros, so a forgotten body leaves no copy in the file's
    // free pages or cells (docs/timeline.md, "Forgetting").
    conn.pragma_update(None, "secure_delete", true)?;
    let mut conn = conn;
    let (from, secret, repairs) = migrate(&mut conn, Some(path), options.busy_timeout)
        .map_err(|e| not_a_database(path, e))?;
    Ok(assemble(
        conn,
        Some(path.to_path_buf()),
        from,
        secret,
        repairs,
        options,
    ))
}

/// Migrate in one `BEGIN IMMEDIATE` transaction, retried while another process holds the
/// write lock; a file's write-ahead log is checked in the same transaction, before anything is
/// written.
fn migrate(
    conn: &mut Connection,
    path: Option<&Path>,
    busy_timeout: Duration,
) -> Result<(i64, [u8; 32], Vec<Repair>)> {
    let seed = schema::fresh_secret();
    let started = Instant::now();
    loop {
        match migrate_once(conn, path, seed) {
            Err(Error::Sqlite(ref e))
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && started.elapsed() < busy_timeout =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

fn migrate_once(
    conn: &mut Connection,
    path: Option<&Path>,
    seed: [u8; 32],
) -> Result<(i64, [u8; 32], Vec<Repair>)> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Under the write lock no other process appends to the log, and this transaction has
    // written nothing yet (a first write may restart the log and erase the evidence).
    let found = match path {
        Some(p) => repair::inspect_log(&tx, p)?,
        None => None,
    };
    let repair = match (path, found) {
        (Some(p), Some((damage, bytes))) => {
            Some((damage.salts, repair::quarantine(p, &bytes, &damage)))
        }
        _ => None,
    };
    let migrated = schema::migrate(&tx, seed)?;
    let (from, secret) = match migrated {
        Migrated::Ready { from, secret } => (from, secret),
        // A writable migration upgrades older files; only newer ones stop it.
        Migrated::TooNew(v) | Migrated::NeedsUpgrade(v) => return Err(too_new(path, v)),
        Migrated::BadSecret => {
            return Err(corrupted(
                path,
                "the cursor secret in table meta is damaged (expected 32 bytes)".into(),
            ));
        }
    };
    if let Some((salts, r)) = &repair {
        repair::record(&tx, *salts, r)?;
    }
    tx.commit()?;
    Ok((from, secret, repair.into_iter().map(|(_, r)| r).collect()))
}

/// Why `path` cannot be written, in the file system's words when it has them ("read-only file
/// system", "permission denied"), else SQLite's (`sqlite`: "database or disk is full").
fn explain(path: &Path, sqlite: String) -> String {
    let probe = if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
    } else {
        let dir = path.parent().unwrap_or(Path::new("."));
        let probe = dir.join(format!(".coral-timeline-probe-{}", std::process::id()));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map(|_| {
                let _ = std::fs::remove_file(&probe);
            })
    };
    let text = match probe {
        Err(e) => e.to_string(),
        Ok(()) => sqlite,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

/// `path` as an SQLite URI with `param`: every byte but unreserved ones and `/` percent-encoded.
fn uri(path: &Path, param: &str) -> Result<String> {
    let text = path.to_str().ok_or_else(|| {
        Error::InvalidInput(format!(
            "timeline path {} is not UTF-8; move the data directory to a UTF-8 path",
            path.display()
        ))
    })?;
    let mut out = String::from("file:");
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push('?');
    out.push_str(param);
    Ok(out)
}

/// A read-only connection with `param`, checked by reading the schema (the first read is when
/// SQLite opens the log and its index).
fn read_only_connection(path: &Path, param: &str) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        uri(path, param)?,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(conn)
}

fn open_read_only(path: &Path, options: &Options, reason: String) -> Result<Timeline> {
    let unwritable = |reason: String| Error::Unwritable {
        path: path.to_path_buf(),
        reason,
    };
    let empty = |why: &str| -> Result<Timeline> {
        let mut t = Timeline::open_in_memory()?;
        t.path = Some(path.to_path_buf());
        t.read_only = Some(format!(
            "{reason}; {why}, and none can be created: nothing is recorded"
        ));
        Ok(t)
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if path
                .parent()
                .is_some_and(|d| d.as_os_str().is_empty() || d.is_dir())
            {
                return empty("there is no timeline here yet");
            }
            return Err(unwritable(format!("{reason}; {e}")));
        }
        Ok(m) if m.len() == 0 => return empty("the timeline file is empty"),
        _ => {}
    }
    let wal = match std::fs::read(wal_path(path)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(unwritable(format!("{reason}; its log cannot be read: {e}"))),
    };
    let mut how = "";
    let mut snapshot = None;
    let conn = match read_only_connection(path, "mode=ro") {
        Ok(c) => c,
        Err(first) if wal.is_empty() => {
            how = " (immutable: no log to replay)";
            read_only_connection(path, "immutable=1").map_err(|_| not_a_database(path, first))?
        }
        Err(first) => {
            // The log needs an index the directory cannot hold: read a private copy.
            let (copy, db) = Snapshot::take(path, &wal).map_err(|e| {
                unwritable(format!(
                    "{reason}; reading it needs its log's index, which cannot be made here \
                     ({first}), nor in a private copy under {} ({e})",
                    std::env::temp_dir().display()
                ))
            })?;
            how = " (from a private copy, as the log's index cannot be made here)";
            let conn = Connection::open(&db)?;
            conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(|e| not_a_database(path, Error::Sqlite(e)))?;
            snapshot = Some(copy);
            conn
        }
    };
    conn.busy_timeout(options.busy_timeout)?;
    conn.pragma_update(None, "query_only", true)?;
    let (from, secret) = match schema::read_only(&conn).map_err(|e| not_a_database(path, e))? {
        Migrated::Ready { from, secret } => (from, secret),
        Migrated::TooNew(v) => return Err(too_new(Some(path), v)),
        Migrated::NeedsUpgrade(0) => return empty("the timeline file holds no tables yet"),
        Migrated::NeedsUpgrade(v) => {
            return Err(unwritable(format!(
                "{reason}; its schema version {v} needs an upgrade to {SCHEMA_VERSION}, which \
                 writes: open it once where it can be written"
            )));
        }
        Migrated::BadSecret => {
            return Err(corrupted(
                Some(path),
                "the cursor secret in table meta is damaged (expected 32 bytes)".into(),
            ));
        }
    };
    let repairs = repair::unquarantined(&conn, path, &wal);
    let mut t = assemble(
        conn,
        Some(path.to_path_buf()),
        from,
        secret,
        repairs,
        options,
    );
    t.read_only = Some(format!(
        "{reason}; opened read-only{how}: nothing is recorded"
    ));
    t.snapshot = snapshot;
    Ok(t)
}
