//! Bulk copies in and out of a tenant, for `coral migrate` (docs/postgres.md, "Migrating"):
//! memories many to a statement (each batch one transaction, ids as keys, so a batch is
//! either all there or not at all and a repeat adds nothing), threads with their steps as
//! they are, pages of memories with their vectors by key, and the counts a migration
//! compares.
//!
//! Each statement has a fixed text (prepared once per connection, like `sql.rs`'s): a batch
//! travels as parallel arrays through `unnest`, and the per-memory arrays (token set, terms,
//! term frequencies) and the vectors as text literals cast in SQL, which keeps one statement
//! for every batch size.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use coral_store::Tier;
use coral_thread::ThreadView;
use pgvector::Vector;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::memory::{NewMemory, Stored, check_copy, sorted_set, stat_shard, stored, terms_of};
use crate::store::PgStore;

/// A batch of memories in one statement: the items that are new (`ON CONFLICT DO NOTHING`:
/// a present id is left alone), their counters, vectors (`$14` text literals, null for
/// none), postings, the tenant's document statistics (shard `$17`) and projects.
pub(crate) const IMPORT_ITEMS: &str = "WITH u AS (SELECT * FROM unnest($2::text[], $3::text[], \
     $4::text[], $5::text[], $6::float8[], $7::float8[], $8::int8[], $9::text[], $10::text[], \
     $11::int4[], $12::jsonb[], $13::int8[], $14::text[], $15::float8[], $16::text[], $18::text[]) \
     AS u(item_id, tier, project, content, created, importance, token_count, token_set, terms, \
     term_count, extra, access_count, embedding, last_access, embedder, tfs)), \
     item AS (INSERT INTO coral_items (tenant, item_id, tier, project, content, created, \
     importance, token_count, token_set, terms, term_count, extra) \
     SELECT $1, item_id, tier, project, content, created, importance, token_count, \
     token_set::int8[], terms::text[], term_count, extra FROM u \
     ON CONFLICT (tenant, item_id) DO NOTHING RETURNING key, item_id, project, created, term_count), \
     heat AS (INSERT INTO coral_heat (tenant, key, access_count, last_access) \
     SELECT $1, item.key, u.access_count, u.last_access FROM item JOIN u USING (item_id)), \
     vec AS (INSERT INTO coral_vectors (tenant, key, project, tier, dim, embedder, sample, \
     embedding) \
     SELECT $1, item.key, item.project, u.tier, vector_dims(u.embedding::vector), u.embedder, \
     random(), u.embedding::vector FROM item JOIN u USING (item_id) WHERE u.embedding IS NOT NULL), \
     post AS (INSERT INTO coral_postings (tenant, term, key, tf, len) \
     SELECT $1, p.t, item.key, p.f, item.term_count FROM item JOIN u USING (item_id), \
     unnest(u.terms::text[], u.tfs::int4[]) AS p(t, f)), \
     stats AS (INSERT INTO coral_doc_stats (tenant, shard, docs, total_len) \
     SELECT $1, $17, count(*), coalesce(sum(term_count), 0) FROM item HAVING count(*) > 0 \
     ON CONFLICT (tenant, shard) DO UPDATE SET docs = coral_doc_stats.docs + EXCLUDED.docs, \
     total_len = coral_doc_stats.total_len + EXCLUDED.total_len), \
     proj AS (INSERT INTO coral_projects (tenant, name, created) \
     SELECT $1, project, min(created) FROM item WHERE project IS NOT NULL GROUP BY project \
     ON CONFLICT (tenant, name) DO NOTHING) \
     SELECT count(*) FROM item";

/// Threads as they are (ids, times, status, parent, step count); a present id is left alone.
/// Returns the ids written, whose steps follow.
pub(crate) const IMPORT_THREADS: &str = "INSERT INTO coral_threads (tenant, thread_id, title, \
     summary, status, parent_thread_id, created_at, updated_at, last_advance_by, step_count) \
     SELECT $1, u.* FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], \
     $7::float8[], $8::float8[], $9::text[], $10::int8[]) AS u \
     ON CONFLICT (tenant, thread_id) DO NOTHING RETURNING thread_id";

/// The steps of threads just written (`$9`), as they are. No `ON CONFLICT`: a step id that
/// another thread of the tenant holds fails the batch, which then writes nothing.
pub(crate) const IMPORT_STEPS: &str = "INSERT INTO coral_steps (tenant, thread_id, seq, step_id, \
     text, done, at, by) SELECT $1, u.* FROM unnest($2::text[], $3::int8[], $4::text[], \
     $5::text[], $6::bool[], $7::float8[], $8::text[]) AS u(thread_id, seq, step_id, text, done, \
     at, by) WHERE u.thread_id = ANY($9)";

/// The ids of the tenant's memories.
pub(crate) const ITEM_IDS: &str = "SELECT item_id FROM coral_items WHERE tenant = $1";

/// The ids of the tenant's threads.
pub(crate) const THREAD_IDS: &str = "SELECT thread_id FROM coral_threads WHERE tenant = $1";

/// Memories per tier and project.
pub(crate) const COUNT_TIER_PROJECT: &str = "SELECT tier, project, count(*) FROM coral_items \
     WHERE tenant = $1 GROUP BY tier, project";

/// One page of memories by key (after `$2`, at most `$3`), with counters, vector and
/// embedder.
pub(crate) const EXPORT_PAGE: &str = "SELECT i.item_id, i.tier, i.project, i.content, i.created, \
     i.importance, i.token_count, i.extra, h.access_count, h.last_access, i.key, v.embedder, \
     v.embedding FROM coral_items i \
     JOIN coral_heat h ON h.tenant = i.tenant AND h.key = i.key \
     LEFT JOIN coral_vectors v ON v.tenant = i.tenant AND v.key = i.key \
     WHERE i.tenant = $1 AND i.key > $2 ORDER BY i.key LIMIT $3";

/// Every statement of this file, for the tenancy test.
#[cfg(test)]
pub(crate) const ALL: &[&str] = &[
    IMPORT_ITEMS,
    IMPORT_THREADS,
    IMPORT_STEPS,
    ITEM_IDS,
    THREAD_IDS,
    COUNT_TIER_PROJECT,
    EXPORT_PAGE,
];

/// A memory read back for a copy: the item, its tier, its vector (empty: none) and the
/// embedder that made it.
#[derive(Clone, Debug, PartialEq)]
pub struct Exported {
    /// The item with its counters, and its tier.
    pub stored: Stored,
    /// Its vector (empty when it has none).
    pub vector: Vec<f32>,
    /// The embedder of the vector (empty when it has none).
    pub embedder: String,
}

/// A page of [`PgStore::export_page`]: the memories and the key to ask after for the next.
#[derive(Clone, Debug, Default)]
pub struct ExportPage {
    /// The memories, by key.
    pub memories: Vec<Exported>,
    /// The last key of the page (give it as `after` for the next page).
    pub last_key: i64,
}

/// A Postgres array literal of `values`, each quoted (`"` and `\` escaped).
fn text_array<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::from("{");
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        for c in v.chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    }
    out.push('}');
    out
}

/// A Postgres array literal of integers.
fn int_array<T: std::fmt::Display>(values: impl IntoIterator<Item = T>) -> String {
    let mut out = String::from("{");
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{v}");
    }
    out.push('}');
    out
}

/// pgvector's text form of `v`: Rust's shortest round-trip form of each `f32`, which the
/// server's `strtof` reads back bit for bit.
fn vector_literal(v: &[f32]) -> String {
    let mut out = String::with_capacity(v.len() * 12);
    out.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{x}");
    }
    out.push(']');
    out
}

impl PgStore {
    /// Copies `batch` in as it is (ids, tiers, counters, times, importance, projects, other
    /// keys, vectors), many memories to one statement, in one transaction: without merging,
    /// and a present id (or a repeat within the batch) is left alone. Returns how many were
    /// new. The fast path of `coral migrate`; [`PgStore::import`] is the one-statement-per-
    /// memory form.
    pub fn import_bulk(&self, batch: &[NewMemory<'_>]) -> Result<usize> {
        let mut seen: HashSet<&str> = HashSet::with_capacity(batch.len());
        let mut cols = BulkColumns::default();
        for new in batch {
            check_copy(new, self.dim())?;
            if !seen.insert(new.item.item_id.as_str()) {
                continue;
            }
            cols.push(new);
        }
        if cols.ids.is_empty() {
            return Ok(0);
        }
        let tenant = self.tenant();
        let shard = stat_shard();
        self.pool().transaction("import", |tx| {
            let row = tx.query_one(
                IMPORT_ITEMS,
                &[
                    &tenant,
                    &cols.ids,
                    &cols.tiers,
                    &cols.projects,
                    &cols.contents,
                    &cols.created,
                    &cols.importance,
                    &cols.token_counts,
                    &cols.token_sets,
                    &cols.terms,
                    &cols.term_counts,
                    &cols.extras,
                    &cols.access,
                    &cols.vectors,
                    &cols.last_access,
                    &cols.embedders,
                    &shard,
                    &cols.tfs,
                ],
            )?;
            Ok(usize::try_from(row.get::<_, i64>(0)).unwrap_or(0))
        })
    }

    /// Copies threads in as they are (ids, times, status, parent, who advanced last, and
    /// their steps with ids, numbers and times), in one transaction; a thread whose id is
    /// present is left alone (with its steps). Returns how many were new.
    pub fn import_threads(&self, threads: &[ThreadView]) -> Result<usize> {
        for t in threads {
            let numbered = t
                .steps
                .iter()
                .enumerate()
                .all(|(i, s)| s.seq == i as u64 + 1);
            if !numbered || t.step_count != t.steps.len() {
                return Err(Error::InvalidInput(format!(
                    "thread {} has {} step(s) numbered otherwise than 1..={}: check the source \
                     with coral check",
                    coral_base::echo(&t.thread_id),
                    t.steps.len(),
                    t.steps.len()
                )));
            }
        }
        let ids: Vec<&str> = threads.iter().map(|t| t.thread_id.as_str()).collect();
        let titles: Vec<&str> = threads.iter().map(|t| t.title.as_str()).collect();
        let summaries: Vec<&str> = threads.iter().map(|t| t.summary.as_str()).collect();
        let statuses: Vec<&str> = threads.iter().map(|t| t.status.as_str()).collect();
        let parents: Vec<Option<&str>> = threads
            .iter()
            .map(|t| t.parent_thread_id.as_deref())
            .collect();
        let created: Vec<f64> = threads.iter().map(|t| t.created_at).collect();
        let updated: Vec<f64> = threads.iter().map(|t| t.updated_at).collect();
        let by: Vec<&str> = threads.iter().map(|t| t.last_advance_by.as_str()).collect();
        let counts: Vec<i64> = threads.iter().map(|t| t.steps.len() as i64).collect();
        let steps = threads
            .iter()
            .flat_map(|t| t.steps.iter().map(move |s| (t, s)));
        let (mut s_thread, mut s_seq, mut s_id, mut s_text, mut s_done, mut s_at, mut s_by) = (
            Vec::<&str>::new(),
            Vec::<i64>::new(),
            Vec::<&str>::new(),
            Vec::<&str>::new(),
            Vec::<bool>::new(),
            Vec::<f64>::new(),
            Vec::<&str>::new(),
        );
        for (t, s) in steps {
            s_thread.push(&t.thread_id);
            s_seq.push(s.seq as i64);
            s_id.push(&s.step_id);
            s_text.push(&s.text);
            s_done.push(s.done);
            s_at.push(s.at);
            s_by.push(&s.by);
        }
        let tenant = self.tenant();
        self.pool().transaction("thread import", |tx| {
            let written: Vec<String> = tx
                .query(
                    IMPORT_THREADS,
                    &[
                        &tenant, &ids, &titles, &summaries, &statuses, &parents, &created,
                        &updated, &by, &counts,
                    ],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            if !written.is_empty() && !s_thread.is_empty() {
                tx.execute(
                    IMPORT_STEPS,
                    &[
                        &tenant, &s_thread, &s_seq, &s_id, &s_text, &s_done, &s_at, &s_by, &written,
                    ],
                )?;
            }
            Ok(written.len())
        })
    }

    /// The ids of the tenant's memories (in no particular order).
    pub fn item_ids(&self) -> Result<Vec<String>> {
        let tenant = self.tenant();
        self.pool().transaction("memory ids", |tx| {
            Ok(tx
                .query(ITEM_IDS, &[&tenant])?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })
    }

    /// The ids of the tenant's threads (in no particular order).
    pub fn thread_ids(&self) -> Result<Vec<String>> {
        let tenant = self.tenant();
        self.pool().transaction("thread ids", |tx| {
            Ok(tx
                .query(THREAD_IDS, &[&tenant])?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })
    }

    /// Memories per (tier, project).
    pub fn tier_project_counts(&self) -> Result<BTreeMap<(Tier, Option<String>), u64>> {
        let tenant = self.tenant();
        self.pool().transaction("count", |tx| {
            let mut out = BTreeMap::new();
            for r in tx.query(COUNT_TIER_PROJECT, &[&tenant])? {
                let tier: String = r.get(0);
                let tier = match tier.as_str() {
                    "hot" => Tier::Hot,
                    "warm" => Tier::Warm,
                    "cold" => Tier::Cold,
                    other => {
                        return Err(Error::Corrupted {
                            what: "coral_items.tier".into(),
                            detail: format!("unknown tier {}", coral_base::echo(other)),
                        });
                    }
                };
                let n = u64::try_from(r.get::<_, i64>(2)).unwrap_or(0);
                out.insert((tier, r.get::<_, Option<String>>(1)), n);
            }
            Ok(out)
        })
    }

    /// Up to `limit` memories with keys after `after` (0 for the first page), by key, with
    /// their vectors: a tenant read out in pages, each its own snapshot.
    pub fn export_page(&self, after: i64, limit: usize) -> Result<ExportPage> {
        let tenant = self.tenant();
        let limit = i64::try_from(limit.clamp(1, 100_000)).unwrap_or(1);
        let rows = self.pool().transaction("export", |tx| {
            tx.query(EXPORT_PAGE, &[&tenant, &after, &limit])
        })?;
        let mut page = ExportPage {
            memories: Vec::with_capacity(rows.len()),
            last_key: after,
        };
        for r in &rows {
            let (key, stored) = stored(r)?;
            let embedder: Option<String> = r.get(11);
            let vector: Option<Vector> = r.get(12);
            page.last_key = key;
            page.memories.push(Exported {
                stored,
                vector: vector.map(|v| v.to_vec()).unwrap_or_default(),
                embedder: embedder.unwrap_or_default(),
            });
        }
        Ok(page)
    }
}

/// A batch as `IMPORT_ITEMS`'s parallel arrays.
#[derive(Default)]
struct BulkColumns {
    ids: Vec<String>,
    tiers: Vec<&'static str>,
    projects: Vec<Option<String>>,
    contents: Vec<String>,
    created: Vec<f64>,
    importance: Vec<f64>,
    token_counts: Vec<i64>,
    token_sets: Vec<String>,
    terms: Vec<String>,
    term_counts: Vec<i32>,
    extras: Vec<Value>,
    access: Vec<i64>,
    vectors: Vec<Option<String>>,
    last_access: Vec<f64>,
    embedders: Vec<String>,
    tfs: Vec<String>,
}

impl BulkColumns {
    fn push(&mut self, new: &NewMemory<'_>) {
        let item = new.item;
        let set = sorted_set(new.token_set);
        let terms = terms_of(&item.content);
        self.ids.push(item.item_id.clone());
        self.tiers.push(new.tier.as_str());
        self.projects.push(item.project.clone());
        self.contents.push(item.content.clone());
        self.created.push(item.timestamp);
        self.importance.push(item.importance);
        self.token_counts
            .push(i64::try_from(item.token_count).unwrap_or(i64::MAX));
        self.token_sets
            .push(int_array(set.iter().map(|&t| t as i64)));
        self.terms
            .push(text_array(terms.distinct.iter().map(String::as_str)));
        self.term_counts.push(terms.len);
        self.extras.push(Value::Object(item.extra.clone()));
        self.access
            .push(i64::try_from(item.access_count).unwrap_or(i64::MAX));
        self.vectors
            .push((!new.vector.is_empty()).then(|| vector_literal(new.vector)));
        self.last_access.push(item.last_access);
        self.embedders.push(new.embedder.to_string());
        self.tfs.push(int_array(terms.counts.iter()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_quote_what_needs_quoting() {
        assert_eq!(
            text_array(["a", "b\"c", "d\\e", "", "{,}"]),
            r#"{"a","b\"c","d\\e","","{,}"}"#
        );
        assert_eq!(int_array([1i64, -2, 3]), "{1,-2,3}");
        assert_eq!(int_array(Vec::<i64>::new()), "{}");
        assert_eq!(vector_literal(&[0.1, -2.5, 1e-7]), "[0.1,-2.5,0.0000001]");
        for x in [0.1f32, 1.0 / 3.0, f32::MIN_POSITIVE, 123_456.79] {
            let back: f32 = format!("{x}").parse().unwrap();
            assert_eq!(back.to_bits(), x.to_bits());
        }
    }

    /// docs/postgres.md, "Tenancy": every statement here names the tenant as `$1`, and every
    /// row written carries it first (the rule `sql.rs` checks for its own statements).
    #[test]
    fn every_statement_is_scoped_to_the_tenant() {
        for sql in ALL {
            assert!(
                sql.contains("tenant = $1") || sql.contains("SELECT $1,"),
                "{sql}"
            );
            for insert in sql.split("INSERT INTO ").skip(1) {
                let columns = insert.split(')').next().unwrap_or("");
                assert!(
                    columns.contains("(tenant,"),
                    "insert without the tenant: {sql}"
                );
                assert!(
                    insert.contains("SELECT $1,"),
                    "insert without the tenant as its first value: {sql}"
                );
            }
        }
    }
}
