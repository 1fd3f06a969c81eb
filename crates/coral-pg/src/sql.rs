//! Every statement on Coral's tenant tables, in one place so that a test can check the rule of
//! docs/postgres.md ("Tenancy"): each one names `tenant` and takes the tenant as `$1`.

/// Takes one transaction-level advisory lock per token `$2`, keyed by the tenant and the
/// token, exclusive where `$3` says so and shared elsewhere, in the arrays' (ascending) order.
pub(crate) const LOCK_TOKENS: &str = "SELECT count(CASE WHEN x THEN pg_advisory_xact_lock(hashtextextended($1, k)) \
     ELSE pg_advisory_xact_lock_shared(hashtextextended($1, k)) END) \
     FROM unnest($2::int8[], $3::bool[]) WITH ORDINALITY AS u(k, x, n)";

/// What an insert may merge into: the item with the same id (`same`), then the hot and warm
/// items sharing a token with the new one's probe (`$3`).
pub(crate) const MERGE_CANDIDATES: &str = "SELECT key, item_id, token_set, true AS same FROM coral_items \
     WHERE tenant = $1 AND item_id = $2 \
     UNION ALL \
     SELECT key, item_id, token_set, false FROM coral_items \
     WHERE tenant = $1 AND tier IN ('hot', 'warm') AND token_set && $3::int8[] AND item_id <> $2 \
     ORDER BY 4 DESC, 1";

/// The merge of a duplicate: one more access, the later access time.
pub(crate) const TOUCH: &str = "UPDATE coral_heat SET access_count = access_count + 1, \
     last_access = GREATEST(last_access, $3) WHERE tenant = $1 AND key = $2";

/// A new memory in one statement: the item (no row, and nothing else written, when its id
/// exists), its counters, its vector (when `$17` is not null), its postings, the tenant's
/// document statistics (shard `$19`) and its project.
pub(crate) const PUT: &str = "WITH item AS ( \
     INSERT INTO coral_items (tenant, item_id, tier, project, content, created, importance, \
     token_count, token_set, terms, term_count, extra) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
     ON CONFLICT (tenant, item_id) DO NOTHING RETURNING key), \
     heat AS (INSERT INTO coral_heat (tenant, key, access_count, last_access) \
     SELECT $1, key, $13, $14 FROM item), \
     vec AS (INSERT INTO coral_vectors (tenant, key, project, dim, embedder, sample, embedding, tier) \
     SELECT $1, key, $4, $15, $16, random(), $17, $3 FROM item WHERE $17::vector IS NOT NULL), \
     post AS (INSERT INTO coral_postings (tenant, term, key, tf, len) \
     SELECT $1, u.t, item.key, u.f, $11 FROM item, unnest($10::text[], $18::int4[]) AS u(t, f)), \
     stats AS (INSERT INTO coral_doc_stats (tenant, shard, docs, total_len) \
     SELECT $1, $19, 1, $11 FROM item ON CONFLICT (tenant, shard) DO UPDATE SET \
     docs = coral_doc_stats.docs + EXCLUDED.docs, \
     total_len = coral_doc_stats.total_len + EXCLUDED.total_len), \
     proj AS (INSERT INTO coral_projects (tenant, name, created) \
     SELECT $1, $4, $6 FROM item WHERE $4::text IS NOT NULL ON CONFLICT (tenant, name) DO NOTHING) \
     SELECT key FROM item";

/// Adds to one shard of a tenant's document count and total length (negative on delete).
pub(crate) const ADD_DOC_STATS: &str = "INSERT INTO coral_doc_stats (tenant, shard, docs, total_len) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (tenant, shard) DO UPDATE SET \
     docs = coral_doc_stats.docs + EXCLUDED.docs, \
     total_len = coral_doc_stats.total_len + EXCLUDED.total_len";

/// A tenant's document count and total length.
pub(crate) const DOC_STATS: &str = "SELECT coalesce(sum(docs), 0)::int8, coalesce(sum(total_len), 0)::int8 \
     FROM coral_doc_stats WHERE tenant = $1";

/// The tenant's project names.
pub(crate) const PROJECTS: &str = "SELECT name FROM coral_projects WHERE tenant = $1 ORDER BY name";

/// Items by id, with counters.
pub(crate) const ITEMS_BY_ID: &str = "SELECT i.item_id, i.tier, i.project, i.content, i.created, i.importance, \
     i.token_count, i.extra, h.access_count, h.last_access, i.key FROM coral_items i \
     JOIN coral_heat h ON h.tenant = i.tenant AND h.key = i.key \
     WHERE i.tenant = $1 AND i.item_id = ANY($2)";

/// Items by key, with counters. Each key is looked up on its own (`LATERAL … LIMIT 1`, which
/// the planner cannot flatten into a join): with the tenant's row count underestimated (a
/// tenant that grew since the table was last analysed), `key = ANY($2)` was planned as a scan
/// of the whole tenant filtered by key, O(tenant) per search.
pub(crate) const ITEMS_BY_KEY: &str = "SELECT i.item_id, i.tier, i.project, i.content, i.created, i.importance, \
     i.token_count, i.extra, h.access_count, h.last_access, i.key FROM unnest($2::int8[]) AS k(key) \
     CROSS JOIN LATERAL (SELECT item_id, tier, project, content, created, importance, token_count, \
     extra, key FROM coral_items WHERE tenant = $1 AND key = k.key LIMIT 1) i \
     CROSS JOIN LATERAL (SELECT access_count, last_access FROM coral_heat \
     WHERE tenant = $1 AND key = k.key LIMIT 1) h";

/// Items by key with what ranking needs (times, counters, importance, project, id), without
/// their content and other keys (empty here; [`CONTENT_BY_KEY`] fetches them for the hits):
/// the columns of [`ITEMS_BY_KEY`], so one parser reads both.
pub(crate) const SCORING_BY_KEY: &str = "SELECT i.item_id, i.tier, i.project, ''::text, i.created, i.importance, \
     i.token_count, '{}'::jsonb, h.access_count, h.last_access, i.key FROM unnest($2::int8[]) AS k(key) \
     CROSS JOIN LATERAL (SELECT item_id, tier, project, created, importance, token_count, key \
     FROM coral_items WHERE tenant = $1 AND key = k.key LIMIT 1) i \
     CROSS JOIN LATERAL (SELECT access_count, last_access FROM coral_heat \
     WHERE tenant = $1 AND key = k.key LIMIT 1) h";

/// The content and other keys of items by key (a search's hits).
pub(crate) const CONTENT_BY_KEY: &str = "SELECT i.key, i.content, i.extra FROM unnest($2::int8[]) AS k(key) \
     CROSS JOIN LATERAL (SELECT key, content, extra FROM coral_items \
     WHERE tenant = $1 AND key = k.key LIMIT 1) i";

/// A search's hits counted by key: one more access each, the later access time.
pub(crate) const TOUCH_KEYS: &str = "UPDATE coral_heat SET access_count = access_count + 1, \
     last_access = GREATEST(last_access, $3) WHERE tenant = $1 AND key = ANY($2)";

/// Every item of the tenant, with counters (listing and export).
pub(crate) const ALL_ITEMS: &str = "SELECT i.item_id, i.tier, i.project, i.content, i.created, i.importance, \
     i.token_count, i.extra, h.access_count, h.last_access, i.key FROM coral_items i \
     JOIN coral_heat h ON h.tenant = i.tenant AND h.key = i.key \
     WHERE i.tenant = $1 ORDER BY i.created, i.item_id";

/// A search's hits counted: one more access each, the later access time, in one statement.
pub(crate) const TOUCH_IDS: &str = "UPDATE coral_heat h SET access_count = h.access_count + 1, \
     last_access = GREATEST(h.last_access, $3) FROM coral_items i \
     WHERE h.tenant = $1 AND i.tenant = $1 AND i.key = h.key AND i.item_id = ANY($2)";

/// A memory's importance.
pub(crate) const SET_IMPORTANCE: &str =
    "UPDATE coral_items SET importance = $3 WHERE tenant = $1 AND item_id = $2 RETURNING key";

/// Deletes items by id; returns what their postings and statistics need.
pub(crate) const DELETE_ITEMS: &str = "DELETE FROM coral_items WHERE tenant = $1 AND item_id = ANY($2) \
     RETURNING key, item_id, terms, term_count";

/// Deletes postings by (key, term) pairs.
pub(crate) const DELETE_POSTINGS: &str = "DELETE FROM coral_postings p USING unnest($2::int8[], $3::text[]) AS d(key, term) \
     WHERE p.tenant = $1 AND p.term = d.term AND p.key = d.key";

/// Deletes counters by key.
pub(crate) const DELETE_HEAT: &str = "DELETE FROM coral_heat WHERE tenant = $1 AND key = ANY($2)";

/// Deletes vectors by key.
pub(crate) const DELETE_VECTORS: &str =
    "DELETE FROM coral_vectors WHERE tenant = $1 AND key = ANY($2)";

/// Items per tier.
pub(crate) const COUNT_TIERS: &str =
    "SELECT tier, count(*) FROM coral_items WHERE tenant = $1 GROUP BY tier";

/// Items a project filter lets through: the project's and the shared ones.
pub(crate) const COUNT_IN_PROJECT: &str =
    "SELECT count(*) FROM coral_items WHERE tenant = $1 AND (project IS NULL OR project = $2)";

/// The postings of the query's terms: every document, for the document frequencies. One row
/// per term with its postings as arrays, in no order (the caller sorts by key: an `ORDER BY`
/// in each aggregate sorted each array again in the server, 22 ms of 60 for a term in 18,743
/// of 100,000 memories); a common term has tens of thousands, and one row each cost more to
/// send and read than the scan.
pub(crate) const POSTINGS: &str = "SELECT term, array_agg(key), array_agg(tf), array_agg(len), NULL::bool[] \
     FROM coral_postings WHERE tenant = $1 AND term = ANY($2) GROUP BY term";

/// The postings of the query's terms as [`POSTINGS`] gives them, with whether a project
/// filter lets each through.
pub(crate) const POSTINGS_IN_PROJECT: &str = "SELECT p.term, array_agg(p.key), array_agg(p.tf), \
     array_agg(p.len), array_agg(i.project IS NULL OR i.project = $3) \
     FROM coral_postings p JOIN coral_items i ON i.tenant = p.tenant AND i.key = p.key \
     WHERE p.tenant = $1 AND p.term = ANY($2) GROUP BY p.term";

/// The items created just before and after each candidate `$2` (by key): up to `$4` each way
/// from the candidate's own time (itself and its millisecond included; the caller keeps the
/// nearest strictly earlier and later millisecond), each saying whether the project filter
/// `$3` lets it through. Walks `coral_items_created`.
pub(crate) const NEIGHBOURS: &str = "SELECT c.key, n.key, n.item_id, n.created, \
     ($3::text IS NULL OR n.project IS NULL OR n.project = $3), false \
     FROM unnest($2::int8[]) AS k(key) CROSS JOIN LATERAL (SELECT key, created FROM coral_items \
     WHERE tenant = $1 AND key = k.key LIMIT 1) c \
     CROSS JOIN LATERAL (SELECT key, item_id, created, project FROM coral_items x \
     WHERE x.tenant = $1 AND x.created <= c.created ORDER BY x.created DESC LIMIT $4) n \
     UNION ALL \
     SELECT c.key, n.key, n.item_id, n.created, \
     ($3::text IS NULL OR n.project IS NULL OR n.project = $3), true \
     FROM unnest($2::int8[]) AS k(key) CROSS JOIN LATERAL (SELECT key, created FROM coral_items \
     WHERE tenant = $1 AND key = k.key LIMIT 1) c \
     CROSS JOIN LATERAL (SELECT key, item_id, created, project FROM coral_items x \
     WHERE x.tenant = $1 AND x.created >= c.created ORDER BY x.created LIMIT $4) n";

/// The newest `$4` items created in `[$2, $3]` that the project filter `$5` lets through
/// (the caller checks the window's exact bounds).
pub(crate) const CREATED_BETWEEN: &str = "SELECT key, created FROM coral_items \
     WHERE tenant = $1 AND created >= $2 AND created <= $3 \
     AND ($5::text IS NULL OR project IS NULL OR project = $5) \
     ORDER BY created DESC, key LIMIT $4";

/// A new thread with a random id; no row when the id is taken.
pub(crate) const INSERT_THREAD: &str = "INSERT INTO coral_threads (tenant, thread_id, title, summary, status, \
     parent_thread_id, created_at, updated_at, last_advance_by) \
     VALUES ($1, substr(md5(random()::text || clock_timestamp()::text), 1, 16), $2, $3, 'active', $4, $5, $5, $6) \
     ON CONFLICT (tenant, thread_id) DO NOTHING RETURNING thread_id";

/// Whether a thread exists.
pub(crate) const THREAD_EXISTS: &str =
    "SELECT 1 FROM coral_threads WHERE tenant = $1 AND thread_id = $2";

/// The next step number of a thread; the row lock serialises advances of one thread.
pub(crate) const BUMP_THREAD: &str = "UPDATE coral_threads SET step_count = step_count + 1, \
     updated_at = GREATEST($3, updated_at + 0.000001), last_advance_by = $4 \
     WHERE tenant = $1 AND thread_id = $2 RETURNING step_count";

/// The next step number of a thread being interrupted (its status too); `last_advance_by`
/// stays, as an interrupt is nobody's advance.
pub(crate) const INTERRUPT_THREAD: &str = "UPDATE coral_threads SET step_count = step_count + 1, \
     updated_at = GREATEST($3, updated_at + 0.000001), status = 'interrupted' \
     WHERE tenant = $1 AND thread_id = $2 RETURNING step_count";

/// A thread's status, when it is another (no row: unchanged or missing).
pub(crate) const SET_THREAD_STATUS: &str = "UPDATE coral_threads SET status = $3, \
     updated_at = GREATEST($4, updated_at + 0.000001) \
     WHERE tenant = $1 AND thread_id = $2 AND status <> $3 RETURNING 1";

/// One link at a time per tenant ("link" in ASCII as the seed): two concurrent links cannot
/// close a cycle between them.
pub(crate) const LOCK_LINKS: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended($1, 1819176555))";

/// A thread and its ancestors (stops at a missing parent and at a cycle).
pub(crate) const ANCESTORS: &str = "WITH RECURSIVE up(id) AS (SELECT $2::text UNION \
     SELECT t.parent_thread_id FROM coral_threads t JOIN up ON t.thread_id = up.id \
     WHERE t.tenant = $1 AND t.parent_thread_id IS NOT NULL) SELECT id FROM up";

/// A thread's parent, when it is another (no row: unchanged).
pub(crate) const SET_PARENT: &str = "UPDATE coral_threads SET parent_thread_id = $3, \
     updated_at = GREATEST($4, updated_at + 0.000001) \
     WHERE tenant = $1 AND thread_id = $2 AND parent_thread_id IS DISTINCT FROM $3 RETURNING 1";

/// A new step with a random id.
pub(crate) const INSERT_STEP: &str = "INSERT INTO coral_steps (tenant, thread_id, seq, step_id, text, done, at, by) \
     VALUES ($1, $2, $3, substr(md5(random()::text || clock_timestamp()::text), 1, 12), $4, $5, $6, $7)";

/// One thread.
pub(crate) const THREAD: &str = "SELECT thread_id, title, summary, status, parent_thread_id, created_at, updated_at, \
     last_advance_by, step_count FROM coral_threads WHERE tenant = $1 AND thread_id = $2";

/// Every thread of the tenant.
pub(crate) const ALL_THREADS: &str = "SELECT thread_id, title, summary, status, parent_thread_id, created_at, \
     updated_at, last_advance_by, step_count FROM coral_threads WHERE tenant = $1";

/// Every step of the tenant's threads, in order.
pub(crate) const ALL_STEPS: &str = "SELECT thread_id, step_id, seq, text, done, by, at FROM coral_steps \
     WHERE tenant = $1 ORDER BY thread_id, seq";

/// How many threads the tenant has.
pub(crate) const COUNT_THREADS: &str = "SELECT count(*) FROM coral_threads WHERE tenant = $1";

/// A thread's steps in order.
pub(crate) const STEPS: &str = "SELECT step_id, seq, text, done, by, at FROM coral_steps \
     WHERE tenant = $1 AND thread_id = $2 ORDER BY seq";

/// Every fixed statement above.
#[cfg(test)]
pub(crate) const ALL: &[&str] = &[
    LOCK_TOKENS,
    MERGE_CANDIDATES,
    TOUCH,
    PUT,
    ADD_DOC_STATS,
    DOC_STATS,
    PROJECTS,
    ITEMS_BY_ID,
    ITEMS_BY_KEY,
    SCORING_BY_KEY,
    CONTENT_BY_KEY,
    TOUCH_KEYS,
    ALL_ITEMS,
    TOUCH_IDS,
    SET_IMPORTANCE,
    DELETE_ITEMS,
    DELETE_POSTINGS,
    DELETE_HEAT,
    DELETE_VECTORS,
    COUNT_TIERS,
    COUNT_IN_PROJECT,
    POSTINGS,
    POSTINGS_IN_PROJECT,
    NEIGHBOURS,
    CREATED_BETWEEN,
    INSERT_THREAD,
    THREAD_EXISTS,
    BUMP_THREAD,
    INTERRUPT_THREAD,
    SET_THREAD_STATUS,
    LOCK_LINKS,
    ANCESTORS,
    SET_PARENT,
    INSERT_STEP,
    THREAD,
    COUNT_THREADS,
    ALL_THREADS,
    ALL_STEPS,
    STEPS,
];

/// The HNSW index of `dim`-dimensional vectors: partial (one per dimension, since an index
/// needs a fixed one) on the cast column, cosine distance.
pub(crate) fn hnsw_index(dim: usize) -> String {
    format!(
        "CREATE INDEX IF NOT EXISTS coral_vectors_hnsw_{dim} ON coral_vectors \
         USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE dim = {dim}"
    )
}

/// The nearest `$4` vectors of `dim` dimensions to `$2` by cosine distance, with their exact
/// dot products with it (the index's order is approximate, its distances are not), among the
/// tenant's (`$1`) and, when `$3` is not null, the project's and shared ones, and when `$5` is
/// not null only those of that embedder. The dimension is
/// written into the text (not a parameter) so that the planner can match the partial index.
pub(crate) fn nearest(dim: usize) -> String {
    nearest_where(dim, "")
}

/// A tenant with fewer memories than this gets its nearest vectors by an exact scan, as the
/// local pool below `retrieval.ann_threshold`: the HNSW graph is shared by every tenant of a
/// dimension, and a small tenant's rows, filtered out of a walk among many others', were
/// missed now and then (the parity test's 600 memories failed 2 runs in 6 under load). An
/// exact scan of 5,000 vectors is a few milliseconds.
pub(crate) const EXACT_BELOW: i64 = 5_000;

/// [`nearest`] with `and` (` AND …`, or empty) added to its filter: an exact scan for a
/// tenant below [`EXACT_BELOW`] memories (ordered by an expression the index does not cover),
/// else the index; the size check is a one-time filter on 16 statistics rows, so only one
/// branch runs.
pub(crate) fn nearest_where(dim: usize, and: &str) -> String {
    let select = format!(
        "SELECT key, -((embedding::vector({dim})) <#> ($2::vector({dim}))) FROM coral_vectors \
         WHERE tenant = $1 AND dim = {dim} AND ($3::text IS NULL OR project IS NULL OR project = $3) \
         AND ($5::text IS NULL OR embedder = $5){and}"
    );
    let size = "(SELECT coalesce(sum(docs), 0) FROM coral_doc_stats WHERE tenant = $1)";
    format!(
        "({select} AND {size} < {EXACT_BELOW} \
         ORDER BY embedding <=> ($2::vector({dim})), key LIMIT $4) \
         UNION ALL \
         ({select} AND {size} >= {EXACT_BELOW} \
         ORDER BY (embedding::vector({dim})) <=> ($2::vector({dim})) LIMIT $4)"
    )
}

/// The dot products of `$2` with an even sample of `$4` of the tenant's vectors (of embedder
/// `$5` when not null): the spread of the vector ranking's z-scores.
pub(crate) fn sample_dots(dim: usize) -> String {
    format!(
        "SELECT -(embedding <#> $2) FROM coral_vectors \
         WHERE tenant = $1 AND dim = {dim} AND ($3::text IS NULL OR project IS NULL OR project = $3) \
         AND ($5::text IS NULL OR embedder = $5) \
         ORDER BY sample LIMIT $4"
    )
}

/// The dot products of `$2` with the vectors of the items `$3` (by id; of embedder `$4` when
/// not null): the component score of hits that were not vector candidates.
pub(crate) fn dots_by_id(dim: usize) -> String {
    format!(
        "SELECT i.item_id, -((v.embedding::vector({dim})) <#> ($2::vector({dim}))) \
         FROM coral_vectors v JOIN coral_items i ON i.tenant = v.tenant AND i.key = v.key \
         WHERE v.tenant = $1 AND v.dim = {dim} AND i.item_id = ANY($3) \
         AND ($4::text IS NULL OR v.embedder = $4)"
    )
}

/// The dot products of `$2` with the vectors of the items `$3` (by key; of embedder `$4` when
/// not null): the component score of a search's hits that were not vector candidates, the
/// expression of [`nearest`], so the same value.
pub(crate) fn dots_by_key(dim: usize) -> String {
    format!(
        "SELECT v.key, -((v.embedding::vector({dim})) <#> ($2::vector({dim}))) \
         FROM unnest($3::int8[]) AS k(key) CROSS JOIN LATERAL (SELECT key, embedding FROM coral_vectors \
         WHERE tenant = $1 AND key = k.key AND dim = {dim} AND ($4::text IS NULL OR embedder = $4) \
         LIMIT 1) v"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/postgres.md, "Tenancy": no statement on a tenant table without the tenant.
    #[test]
    fn every_statement_is_scoped_to_the_tenant() {
        let dynamic = [
            nearest(384),
            sample_dots(384),
            dots_by_id(384),
            dots_by_key(384),
        ];
        for sql in ALL
            .iter()
            .copied()
            .chain(dynamic.iter().map(String::as_str))
        {
            assert!(
                sql.contains("coral_") || sql.contains("pg_advisory_xact_lock"),
                "{sql}"
            );
            if sql.contains("INSERT INTO") {
                // Every row written carries the tenant as its first value.
                for insert in sql.split("INSERT INTO ").skip(1) {
                    let columns = insert.split(')').next().unwrap_or("");
                    assert!(
                        columns.contains("(tenant,"),
                        "insert without the tenant: {sql}"
                    );
                    assert!(
                        insert.contains("VALUES ($1,") || insert.contains("SELECT $1,"),
                        "insert without the tenant as its first value: {sql}"
                    );
                }
            } else {
                assert!(
                    sql.contains("tenant = $1") || sql.contains("hashtextextended($1,"),
                    "statement without the tenant as $1: {sql}"
                );
            }
        }
    }
}
