//! [`PgStore`], the public handle: one tenant of one database, its pool of connections, and
//! the operations, each one call into `memory.rs`, `search.rs` or `threads.rs`.

use coral_score::Bm25Query;
use coral_thread::ThreadView;

use crate::error::{Error, Result};
use crate::governance::{self, Governing};
use crate::memory::{self, InsertOutcome, NewMemory, Stored, TierCounts};
use crate::options::PgOptions;
use crate::pool::Pool;
use crate::schema;
use crate::search::{self, Candidates, Finished, Hit, SearchQuery};
use crate::threads;

/// Longest tenant name, in bytes.
pub const MAX_TENANT_BYTES: usize = 200;

/// One tenant's memories and threads in a shared PostgreSQL database. Every statement it runs
/// carries its tenant (docs/postgres.md, "Tenancy"): a store never reads or writes another
/// tenant's rows. Cheap to share between threads (`&self` everywhere; the pool is bounded).
pub struct PgStore {
    pool: Pool,
    tenant: String,
    dim: usize,
    /// Which tokens are common in the tenant, as this store has seen them.
    rarity: memory::Rarity,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("server", &self.pool.server)
            .field("tenant", &self.tenant)
            .field("dim", &self.dim)
            .finish()
    }
}

/// `tenant` if it can be a tenant key: not empty, at most [`MAX_TENANT_BYTES`], no control
/// characters, no spaces at either end.
fn check_tenant(tenant: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::InvalidInput(format!(
            "tenant {} {why}: give a name like \"team-a\"",
            coral_base::echo(tenant)
        )))
    };
    if tenant.is_empty() {
        return bad("is empty");
    }
    if tenant.len() > MAX_TENANT_BYTES {
        return bad(&format!("is longer than {MAX_TENANT_BYTES} bytes"));
    }
    if tenant.chars().any(char::is_control) {
        return bad("has a control character");
    }
    if tenant.trim() != tenant {
        return bad("starts or ends with a space");
    }
    Ok(())
}

impl PgStore {
    /// Connects to the database of `options` as `tenant`, for vectors of `dim` dimensions:
    /// brings the schema up to date (`schema.rs`) and makes the HNSW index of `dim`. Fails with
    /// [`Error::Unreachable`] within the connect timeout when the server is down.
    pub fn connect(options: PgOptions, tenant: &str, dim: usize) -> Result<PgStore> {
        check_tenant(tenant)?;
        if !(1..=16_000).contains(&dim) {
            return Err(Error::InvalidInput(format!(
                "vector dimension {dim} is outside 1..=16000 (pgvector's limit for stored vectors)"
            )));
        }
        let pool = Pool::new(options)?;
        schema::migrate(&pool)?;
        schema::ensure_dimension(&pool, dim)?;
        Ok(PgStore {
            pool,
            tenant: tenant.to_string(),
            dim,
            rarity: memory::Rarity::default(),
        })
    }

    /// The tenant this store reads and writes.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The dimension of its vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// `host:port` of the server.
    pub fn server(&self) -> &str {
        &self.pool.server
    }

    /// Its pool, for the bulk copies of `import.rs`.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The options it was made with.
    pub fn options(&self) -> &PgOptions {
        self.pool.options()
    }

    /// The database's schema version.
    pub fn schema_version(&self) -> Result<i32> {
        schema::version(&self.pool)
    }

    /// Stores a memory, or refreshes the same id or a hot or warm memory at least
    /// `threshold` similar by token-set Jaccard (`memory.sim_threshold_hot`); exact across
    /// processes (docs/postgres.md, "Duplicates").
    pub fn insert(&self, new: &NewMemory<'_>, threshold: f64) -> Result<InsertOutcome> {
        memory::insert(
            &self.pool,
            &self.tenant,
            self.dim,
            new,
            threshold,
            &self.rarity,
        )
    }

    /// Copies memories in as they are, without merging (a present id is left alone), in one
    /// transaction; returns how many were new.
    pub fn import(&self, batch: &[NewMemory<'_>]) -> Result<usize> {
        memory::import(&self.pool, &self.tenant, self.dim, batch)
    }

    /// Memories by id (the ones that exist, in no particular order).
    pub fn get(&self, ids: &[&str]) -> Result<Vec<Stored>> {
        memory::get(&self.pool, &self.tenant, ids)
    }

    /// Deletes memories by id; returns the ids that were there.
    pub fn delete(&self, ids: &[&str]) -> Result<Vec<String>> {
        memory::delete(&self.pool, &self.tenant, ids)
    }

    /// Every memory of the tenant, oldest first (ties by id): for listing and export.
    pub fn all(&self) -> Result<Vec<Stored>> {
        memory::all(&self.pool, &self.tenant)
    }

    /// Counts the memories `ids` as accessed at `at` (a search's hits: one more access, the
    /// later access time), in one statement; returns how many were there.
    pub fn touch(&self, ids: &[&str], at: f64) -> Result<u64> {
        memory::touch(&self.pool, &self.tenant, ids, at)
    }

    /// Sets a memory's importance (0..=1); false when no memory has that id.
    pub fn set_importance(&self, id: &str, importance: f64) -> Result<bool> {
        memory::set_importance(&self.pool, &self.tenant, id, importance)
    }

    /// The dot products of `vector` with the stored vectors of `ids` (those that have one, of
    /// `embedder` when given).
    pub fn dots(
        &self,
        ids: &[&str],
        vector: &[f32],
        embedder: Option<&str>,
    ) -> Result<std::collections::HashMap<String, f64>> {
        memory::dots(&self.pool, &self.tenant, self.dim, ids, vector, embedder)
    }

    /// One governance pass (docs/postgres.md, "Tiers and governance"): `body` runs in one
    /// transaction after the tenant's governance lock is taken, so passes of several processes
    /// on one tenant run one at a time, each seeing what the previous one committed; what it
    /// moves, archives and removes commits together or not at all. A serialization failure
    /// runs `body` again, so it must decide from what it reads.
    pub fn govern<T>(
        &self,
        mut body: impl FnMut(&mut Governing<'_, '_>) -> Result<T>,
    ) -> Result<T> {
        let tenant = self.tenant.as_str();
        self.pool.transaction("governance", |tx| {
            tx.query(crate::sql_tiers::LOCK_GOVERN, &[&tenant])?;
            body(&mut Governing { tx, tenant })
        })
    }

    /// The tenant's storage by tier and its archive's bytes (what the disk quota counts).
    pub fn usage(&self) -> Result<governance::Usage> {
        let tenant = self.tenant.as_str();
        self.pool
            .transaction("usage", |tx| Governing { tx, tenant }.usage())
    }

    /// The latest archive entry of `id` (evicted, trimmed or over a project quota).
    pub fn archived(&self, id: &str) -> Result<Option<coral_store::Item>> {
        let tenant = self.tenant.as_str();
        self.pool
            .transaction("archive", |tx| governance::archived(tx, tenant, id))
    }

    /// Memories per tier.
    pub fn count(&self) -> Result<TierCounts> {
        memory::count(&self.pool, &self.tenant)
    }

    /// The project names memories were stored under, sorted.
    pub fn projects(&self) -> Result<Vec<String>> {
        memory::projects(&self.pool, &self.tenant)
    }

    /// Both rankings' candidates of a search, for a caller that fuses and scores itself.
    pub fn candidates(&self, query: &SearchQuery<'_>) -> Result<Candidates> {
        search::candidates(&self.pool, &self.tenant, self.dim, query)
    }

    /// A search finished in its own snapshot: `pick` gets the candidates (items with what
    /// ranking reads; the content empty) and names the hits, which come back with their
    /// content and, when they were not vector candidates, their dot products; with
    /// `touch_at` they are counted (one more access, the later access time) by a statement
    /// sent with the commit, committed before this returns (docs/postgres.md, "Search").
    pub fn search_then(
        &self,
        query: &SearchQuery<'_>,
        touch_at: Option<f64>,
        pick: impl FnMut(&Candidates) -> Vec<u32>,
    ) -> Result<Finished> {
        search::search_then(&self.pool, &self.tenant, self.dim, query, touch_at, pick)
    }

    /// The best `k` memories by fused relevance (`coral_score::fuse_hybrid`), best first.
    pub fn search(&self, query: &SearchQuery<'_>, k: usize) -> Result<Vec<Hit>> {
        search::search(&self.pool, &self.tenant, self.dim, query, k)
    }

    /// A keyword-only query of `text` (`coral_score::search_query`) with default weights,
    /// for quick checks and tests.
    pub fn search_text(&self, text: &str, k: usize) -> Result<Vec<Hit>> {
        let keywords: Bm25Query = coral_score::search_query(text, 0.0);
        let query = SearchQuery {
            vector: None,
            keywords: &keywords,
            question: true,
            params: coral_score::HybridParams::default(),
            depth: 100.max(k),
            project: None,
            ef_search: 100.max(k),
            embedder: None,
            window: None,
            cold: crate::search::ColdFilter::All,
        };
        self.search(&query, k)
    }

    /// `thread_create`.
    pub fn thread_create(
        &self,
        title: &str,
        summary: Option<&str>,
        parent: Option<&str>,
        by: Option<&str>,
        now: f64,
    ) -> Result<ThreadView> {
        threads::create(&self.pool, &self.tenant, title, summary, parent, by, now)
    }

    /// `thread_advance`: one more step, numbered exactly under concurrency.
    pub fn thread_advance(
        &self,
        thread_id: &str,
        note: &str,
        done: Option<bool>,
        by: Option<&str>,
        now: f64,
    ) -> Result<ThreadView> {
        threads::advance(&self.pool, &self.tenant, thread_id, note, done, by, now)
    }

    /// `thread_interrupt`: status interrupted and a step `[中断] reason`.
    pub fn thread_interrupt(
        &self,
        thread_id: &str,
        reason: Option<&str>,
        now: f64,
    ) -> Result<ThreadView> {
        threads::interrupt(&self.pool, &self.tenant, thread_id, reason, now)
    }

    /// `thread_archive` (`Status::Archived`) and `thread_resume` (`Status::Active`).
    pub fn thread_set_status(
        &self,
        thread_id: &str,
        status: coral_thread::Status,
        now: f64,
    ) -> Result<ThreadView> {
        threads::set_status(&self.pool, &self.tenant, thread_id, status, now)
    }

    /// `thread_link`: no self-links, no cycles.
    pub fn thread_link(&self, child_id: &str, parent_id: &str, now: f64) -> Result<()> {
        threads::link(&self.pool, &self.tenant, child_id, parent_id, now)
    }

    /// `thread_status` without an id: the overview (archived threads when asked, those whose
    /// title or summary contains `query`), in the file store's order.
    pub fn thread_overview(
        &self,
        include_archived: bool,
        query: Option<&str>,
    ) -> Result<Vec<coral_thread::ThreadEntry>> {
        threads::overview(&self.pool, &self.tenant, include_archived, query)
    }

    /// How many threads the tenant has.
    pub fn thread_count(&self) -> Result<u64> {
        threads::count(&self.pool, &self.tenant)
    }

    /// `thread_status` of one thread.
    pub fn thread_status(&self, thread_id: &str) -> Result<ThreadView> {
        threads::status(&self.pool, &self.tenant, thread_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_names_are_checked() {
        assert!(check_tenant("team-a").is_ok());
        assert!(check_tenant("团队").is_ok());
        for bad in ["", " a", "a\n", &"x".repeat(201)] {
            let e = check_tenant(bad).unwrap_err().to_string();
            assert!(e.starts_with("tenant "), "{e}");
        }
    }
}
