//! The database schema and its forward-only migrations, versioned by `PRAGMA user_version`.
//!
//! Migration `i` takes the schema from version `i` to `i + 1`. Opening runs the missing ones in
//! one `BEGIN IMMEDIATE` transaction (so two processes opening a new file at once cannot both
//! migrate it), and refuses a file whose version is newer than this build knows. A read-only
//! open migrates nothing and needs the current version.
//!
//! Every table carries `hard_key` (the namespace's tenant, user and domain as one JSON array),
//! and every query of this crate filters on it.

use rusqlite::{Connection, OptionalExtension, Transaction};

use crate::error::Result;

/// `user_version` of a database this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The tables of a database at [`SCHEMA_VERSION`] (what `Timeline::check` looks for).
pub(crate) const TABLES: &[&str] = &[
    "meta",
    "turns",
    "entries",
    "settlements",
    "summaries",
    "summary_sources",
    "closures",
    "compaction",
    "vectors",
    "forgotten",
    "forgotten_entries",
];

const MIGRATIONS: &[&str] = &[
    // 0 -> 1: turns, entries, their settlement, and the cursor secret.
    r#"
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value BLOB NOT NULL
    ) STRICT;

    CREATE TABLE turns (
        turn_pk INTEGER PRIMARY KEY,
        hard_key TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        actor TEXT,
        status TEXT NOT NULL CHECK (status IN ('open', 'completed', 'aborted')),
        policy TEXT NOT NULL,
        timezone TEXT,
        owner TEXT NOT NULL,
        unit_seq INTEGER NOT NULL,
        began_at REAL NOT NULL,
        last_at REAL NOT NULL,
        ended_at REAL,
        end_reason TEXT,
        final_source_id TEXT,
        full_tokens INTEGER,
        settled_tokens INTEGER,
        UNIQUE (hard_key, turn_id)
    ) STRICT;
    CREATE INDEX turns_open ON turns (status) WHERE status = 'open';
    CREATE INDEX turns_conversation ON turns (hard_key, conversation_id, unit_seq);

    CREATE TABLE entries (
        entry_pk INTEGER PRIMARY KEY,
        hard_key TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        seq_no INTEGER NOT NULL,
        unit_seq INTEGER NOT NULL,
        unit_ts REAL NOT NULL,
        source_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        origin TEXT NOT NULL,
        turn_role TEXT NOT NULL,
        actor TEXT,
        turn_id TEXT,
        correlation_id TEXT,
        tool_name TEXT,
        status TEXT,
        ts REAL NOT NULL,
        chars INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        -- Last, so reading any other column never walks a large body's overflow pages.
        payload TEXT,
        text TEXT NOT NULL,
        UNIQUE (hard_key, source_id),
        UNIQUE (hard_key, conversation_id, seq_no)
    ) STRICT;
    CREATE INDEX entries_unit ON entries (hard_key, conversation_id, unit_seq, seq_no);
    CREATE INDEX entries_time ON entries (hard_key, ts);
    CREATE INDEX entries_turn ON entries (hard_key, turn_id, seq_no) WHERE turn_id IS NOT NULL;

    -- Apart from entries so that settling never rewrites a (possibly large) body's row.
    CREATE TABLE settlements (
        hard_key TEXT NOT NULL,
        source_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        classification TEXT NOT NULL,
        card TEXT,
        card_tokens INTEGER NOT NULL,
        PRIMARY KEY (hard_key, source_id)
    ) STRICT, WITHOUT ROWID;
    "#,
    // 1 -> 2: summaries (episodic and semantic), their sources, the order in which units
    // closed, each conversation's raw floor, and the vectors retrieval computes for entries and
    // summaries.
    r#"
    CREATE TABLE summaries (
        summary_pk INTEGER PRIMARY KEY,
        hard_key TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        summary_id TEXT NOT NULL,
        layer TEXT NOT NULL CHECK (layer IN ('episodic', 'semantic')),
        title TEXT NOT NULL,
        hint TEXT NOT NULL,
        body TEXT NOT NULL,
        facet TEXT,
        entity_anchors TEXT NOT NULL,
        topic_terms TEXT NOT NULL,
        period_start REAL NOT NULL,
        period_end REAL NOT NULL,
        created_at REAL NOT NULL,
        tokens INTEGER NOT NULL,
        first_unit_seq INTEGER,
        last_unit_seq INTEGER,
        rolled_into TEXT,
        superseded_by TEXT,
        UNIQUE (hard_key, summary_id)
    ) STRICT;
    CREATE INDEX summaries_conversation ON summaries (hard_key, conversation_id, layer, summary_pk);
    CREATE INDEX summaries_period ON summaries (hard_key, period_start);

    -- What a summary was made from: raw units (episodic) or episodic summaries (semantic).
    CREATE TABLE summary_sources (
        hard_key TEXT NOT NULL,
        summary_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        unit_seq INTEGER,
        source_summary_id TEXT,
        PRIMARY KEY (hard_key, summary_id, position)
    ) STRICT, WITHOUT ROWID;

    -- Units (turns and standalone entries) in the order they closed: the context shows them in
    -- this order, so it only ever grows at its end. Existing closed units are numbered in
    -- conversation order.
    CREATE TABLE closures (
        close_pk INTEGER PRIMARY KEY,
        hard_key TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        unit_seq INTEGER NOT NULL,
        UNIQUE (hard_key, conversation_id, unit_seq)
    ) STRICT;
    INSERT INTO closures (hard_key, conversation_id, unit_seq)
        SELECT hard_key, conversation_id, unit_seq FROM (
            SELECT hard_key, conversation_id, unit_seq FROM turns WHERE status != 'open'
            UNION
            SELECT hard_key, conversation_id, unit_seq FROM entries WHERE turn_id IS NULL
        ) ORDER BY hard_key, conversation_id, unit_seq;

    -- Closures up to raw_floor (a close_pk) are summarised: the context shows their summary.
    CREATE TABLE compaction (
        hard_key TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        raw_floor INTEGER NOT NULL,
        compactions INTEGER NOT NULL,
        rollups INTEGER NOT NULL,
        last_at REAL NOT NULL,
        PRIMARY KEY (hard_key, conversation_id)
    ) STRICT, WITHOUT ROWID;

    -- One vector per entry or summary and embedder.
    CREATE TABLE vectors (
        hard_key TEXT NOT NULL,
        model TEXT NOT NULL,
        item_id TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (hard_key, model, item_id)
    ) STRICT, WITHOUT ROWID;
    "#,
    // 2 -> 3: targeted forgetting (docs/timeline.md, "Forgetting"): a content-free record of
    // each forgetting, the entries whose bodies it removed (kept as tombstones so their turn
    // stays whole), and summaries marked stale because something they were made from is gone.
    r#"
    CREATE TABLE forgotten (
        forget_pk INTEGER PRIMARY KEY,
        hard_key TEXT NOT NULL,
        conversation_id TEXT,
        at REAL NOT NULL,
        target TEXT NOT NULL,
        selector TEXT NOT NULL,
        reason TEXT,
        entries INTEGER NOT NULL,
        units INTEGER NOT NULL,
        summaries INTEGER NOT NULL,
        marked INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX forgotten_key ON forgotten (hard_key, forget_pk);

    CREATE TABLE forgotten_entries (
        hard_key TEXT NOT NULL,
        source_id TEXT NOT NULL,
        forget_pk INTEGER NOT NULL,
        PRIMARY KEY (hard_key, source_id)
    ) STRICT, WITHOUT ROWID;

    ALTER TABLE summaries ADD COLUMN stale_at REAL;
    "#,
];

/// Bring the database of `tx` (a `BEGIN IMMEDIATE` transaction the caller commits) to
/// [`SCHEMA_VERSION`] and return the cursor secret (stored on first open), or say why the file
/// cannot be used. A file newer than this build is left untouched.
pub(crate) fn migrate(tx: &Transaction<'_>, fresh_secret: [u8; 32]) -> Result<Migrated> {
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Ok(Migrated::TooNew(version));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
    }
    if version == 0 {
        // Written with `secure_delete` from its first page: forgetting never needs to rebuild
        // this file to be sure no old copy of a body is left in its free space.
        tx.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('zeroed', X'01')",
            [],
        )?;
    }
    tx.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('cursor_secret', ?1)",
        [&fresh_secret[..]],
    )?;
    secret(tx, version)
}

/// The cursor secret of a database that cannot be written: only a current schema is usable
/// (a migration writes).
pub(crate) fn read_only(conn: &Connection) -> Result<Migrated> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Ok(Migrated::TooNew(version));
    }
    if version < SCHEMA_VERSION {
        return Ok(Migrated::NeedsUpgrade(version));
    }
    secret(conn, version)
}

fn secret(conn: &Connection, version: i64) -> Result<Migrated> {
    let stored: Option<Vec<u8>> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'cursor_secret'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let mut secret = [0u8; 32];
    match stored {
        Some(v) if v.len() == 32 => secret.copy_from_slice(&v),
        _ => return Ok(Migrated::BadSecret),
    }
    Ok(Migrated::Ready {
        from: version,
        secret,
    })
}

pub(crate) enum Migrated {
    Ready {
        from: i64,
        secret: [u8; 32],
    },
    TooNew(i64),
    /// Read-only: an older schema, which only a writable open can migrate.
    NeedsUpgrade(i64),
    BadSecret,
}

/// 32 unpredictable bytes for a new database's secret: the OS random source, mixed with the
/// clock and the process id in case it is unavailable.
pub(crate) fn fresh_secret() -> [u8; 32] {
    use sha2::{Digest, Sha256};
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = Sha256::new();
    let mut buf = [0u8; 32];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        if f.read_exact(&mut buf).is_ok() {
            hasher.update(buf);
        }
    }
    // std seeds RandomState from the OS on every platform.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    hasher.update(h.finish().to_le_bytes());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    hasher.update(now.to_le_bytes());
    hasher.finalize().into()
}
