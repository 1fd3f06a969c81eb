//! The database schema and its forward-only migrations (docs/postgres.md, "Schema").
//!
//! `coral_schema_version` holds one row per applied migration. [`migrate`] applies the missing
//! ones in order, each in its own transaction under a transaction-level advisory lock, so any
//! number of processes may start at once: the first migrates, the others wait and find the
//! work done. A database whose version is newer than [`SCHEMA_VERSION`] is refused: this
//! build would not know what its rows mean.
//!
//! Every table has `tenant` first in its primary key: a tenant is a prefix of every index, and
//! every statement filters on it (`sql.rs`, checked by a test).

use crate::error::{Error, Result};
use crate::pool::Pool;

/// The newest schema this build knows.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Advisory lock key of migrations and of index creation (a constant of Coral's own: "coral"
/// in ASCII, then "schema").
pub(crate) const SCHEMA_LOCK: i64 = 0x636f_7261_6c5f_7363;

/// The longest a migration may take.
const MIGRATION_LIMIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Migrations by version: migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[V1, crate::schema_v2::V2, V3, V4];

/// Version 1: memories (items, heat, vectors, postings, document statistics, projects) and
/// threads (threads, steps).
const V1: &str = r#"
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE coral_items (
    tenant text NOT NULL,
    item_id text NOT NULL,
    key bigint GENERATED ALWAYS AS IDENTITY,
    tier text NOT NULL CHECK (tier IN ('hot', 'warm', 'cold')),
    project text,
    content text NOT NULL,
    created double precision NOT NULL,
    importance double precision NOT NULL,
    token_count bigint NOT NULL,
    -- The sorted token-hash set of the near-duplicate test (u64 bits as int8).
    token_set bigint[] NOT NULL,
    -- The distinct search terms, so that a delete finds its postings by primary key.
    terms text[] NOT NULL,
    -- BM25's document length: the number of search terms, repeats included.
    term_count integer NOT NULL,
    extra jsonb NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (tenant, item_id),
    UNIQUE (tenant, key)
);
CREATE INDEX coral_items_token_set ON coral_items USING gin (token_set);
CREATE INDEX coral_items_created ON coral_items (tenant, created);

-- Access counters apart from the item: a search hit rewrites this narrow row only.
CREATE TABLE coral_heat (
    tenant text NOT NULL,
    key bigint NOT NULL,
    access_count bigint NOT NULL,
    last_access double precision NOT NULL,
    PRIMARY KEY (tenant, key)
);

-- One vector per item; an HNSW index per dimension is made when a store of that dimension
-- first connects (`ensure_dimension`).
CREATE TABLE coral_vectors (
    tenant text NOT NULL,
    key bigint NOT NULL,
    project text,
    dim integer NOT NULL,
    embedder text NOT NULL,
    -- Uniform in [0, 1): the first rows by it are an even sample (the cosine spread).
    sample double precision NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX coral_vectors_sample ON coral_vectors (tenant, dim, sample);

CREATE TABLE coral_postings (
    tenant text NOT NULL,
    term text NOT NULL,
    key bigint NOT NULL,
    tf integer NOT NULL,
    len integer NOT NULL,
    PRIMARY KEY (tenant, term, key)
);

-- Document count and total length per tenant in 16 shards: concurrent inserts update
-- different rows, a query sums 16.
CREATE TABLE coral_doc_stats (
    tenant text NOT NULL,
    shard smallint NOT NULL,
    docs bigint NOT NULL,
    total_len bigint NOT NULL,
    PRIMARY KEY (tenant, shard)
);

CREATE TABLE coral_projects (
    tenant text NOT NULL,
    name text NOT NULL,
    created double precision NOT NULL,
    PRIMARY KEY (tenant, name)
);

CREATE TABLE coral_threads (
    tenant text NOT NULL,
    thread_id text NOT NULL,
    title text NOT NULL,
    summary text NOT NULL,
    status text NOT NULL,
    parent_thread_id text,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    last_advance_by text NOT NULL,
    step_count bigint NOT NULL DEFAULT 0,
    extra jsonb NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (tenant, thread_id)
);

CREATE TABLE coral_steps (
    tenant text NOT NULL,
    thread_id text NOT NULL,
    seq bigint NOT NULL,
    step_id text NOT NULL,
    text text NOT NULL,
    done boolean NOT NULL,
    at double precision NOT NULL,
    by text NOT NULL,
    PRIMARY KEY (tenant, thread_id, seq),
    UNIQUE (tenant, step_id)
);
"#;

/// Version 3: the token-set GIN index without its pending list. With `fastupdate` on, every
/// insert's near-duplicate query read the whole list of entries not yet merged (up to
/// `gin_pending_list_limit`, 4 MB): 26 ms of a 28 ms query at 13,000 memories under four
/// writers, against about 1 ms once the list was merged (docs/postgres.md, "Cost"). Entries
/// now go straight into the index, and what is pending is merged here.
const V3: &str = r#"
ALTER INDEX coral_items_token_set SET (fastupdate = off);
SELECT gin_clean_pending_list('coral_items_token_set'::regclass);
"#;

/// Version 4: the postings' primary key carries the term frequency and the document length,
/// so that a search reads a term's postings from the index alone (an index-only scan, once
/// vacuum has marked the pages visible) instead of one heap page per posting: a term in
/// 18,743 of 100,000 memories read 11,274 heap pages, 337 ms of a loaded machine's time
/// (docs/postgres.md, "Cost").
const V4: &str = r#"
ALTER TABLE coral_postings DROP CONSTRAINT coral_postings_pkey;
ALTER TABLE coral_postings ADD CONSTRAINT coral_postings_pkey PRIMARY KEY (tenant, term, key) INCLUDE (tf, len);
"#;

/// Brings the database to [`SCHEMA_VERSION`]; returns the version found before.
pub(crate) fn migrate(pool: &Pool) -> Result<i32> {
    pool.session("migrate", |s| {
        s.simple(
            "CREATE TABLE IF NOT EXISTS coral_schema_version (\
             version integer PRIMARY KEY, \
             applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .or_else(|e| {
            // Two processes creating the table at once: one loses the race on the catalog.
            match &e {
                Error::Database { code: Some(c), .. } if c == "23505" || c == "42P07" => Ok(()),
                _ => Err(e),
            }
        })
    })?;
    // Without the statement timeout, under a deadline of its own: version 4 rebuilds the
    // postings' key, which takes longer than a call may at a million postings.
    let begin = "BEGIN; SET LOCAL statement_timeout = 0";
    let found = pool.transaction_within(begin, "migrate", MIGRATION_LIMIT, |tx| {
        tx.query("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
        let found: i32 = tx
            .query_one(
                "SELECT coalesce(max(version), 0) FROM coral_schema_version",
                &[],
            )?
            .get(0);
        if found > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            let version = i as i32 + 1;
            tx.simple(sql).map_err(|e| match e {
                Error::Database { detail, .. } if detail.contains("vector") => Error::Unsupported {
                    server: pool.server.clone(),
                    detail: format!(
                        "migration {version} failed ({detail}); install pgvector 0.8 or \
                             newer and let this user CREATE EXTENSION vector (or create it \
                             once as a superuser)"
                    ),
                },
                other => other,
            })?;
            tx.execute(
                "INSERT INTO coral_schema_version (version) VALUES ($1)",
                &[&version],
            )?;
        }
        Ok(found)
    })?;
    Ok(found)
}

/// The HNSW index of vectors of `dim` dimensions (cosine), made once per database.
pub(crate) fn ensure_dimension(pool: &Pool, dim: usize) -> Result<()> {
    let index = crate::sql::hnsw_index(dim);
    pool.transaction("vector index", |tx| {
        tx.query("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
        tx.simple(&index)
    })
}

/// The schema version recorded in the database.
pub(crate) fn version(pool: &Pool) -> Result<i32> {
    pool.transaction("schema version", |tx| {
        Ok(tx
            .query_one(
                "SELECT coalesce(max(version), 0) FROM coral_schema_version",
                &[],
            )?
            .get(0))
    })
}
