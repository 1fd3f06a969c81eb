//! Memories in the database: insert with the exact-id and near-duplicate merges, import,
//! get, delete, touch and counts, each one transaction (docs/postgres.md, "Writes").

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use coral_store::{Item, Tier};
use pgvector::Vector;
use serde_json::{Map, Value};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::{Error, Result};
use crate::pool::{Params, Pool, Tx};
use crate::sql;

/// A memory to store, with what the facade derived from its text outside any lock.
#[derive(Clone, Copy, Debug)]
pub struct NewMemory<'a> {
    /// The item as `Item::new` made it (id, content, counters, importance, project).
    pub item: &'a Item,
    /// Where it goes (inserts: hot).
    pub tier: Tier,
    /// Its vector (empty: none), of the store's dimension.
    pub vector: &'a [f32],
    /// The embedder that made the vector.
    pub embedder: &'a str,
    /// Its token-hash set (`coral_embed::text_features`), for the near-duplicate test.
    pub token_set: &'a [u64],
}

/// What an insert did.
#[derive(Clone, Debug, PartialEq)]
pub enum InsertOutcome {
    /// A new memory with this id.
    Inserted(String),
    /// An existing memory (the same id, or a hot or warm one at least as similar as the
    /// threshold) was refreshed instead: one more access, the later access time.
    Merged {
        /// The memory merged into.
        id: String,
        /// Its set-Jaccard similarity to the new text (1 for the same id).
        similarity: f64,
    },
}

/// A stored memory and its tier.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// The item with its current counters.
    pub item: Item,
    /// Its tier.
    pub tier: Tier,
}

/// Items per tier of one tenant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierCounts {
    /// Hot items.
    pub hot: u64,
    /// Warm items.
    pub warm: u64,
    /// Cold items.
    pub cold: u64,
}

impl TierCounts {
    /// All items.
    pub fn total(&self) -> u64 {
        self.hot + self.warm + self.cold
    }
}

/// An insert's transaction start: no sequential scans (see [`insert`]).
const INSERT_BEGIN: &str = "BEGIN; SET LOCAL enable_seqscan = off";

/// Shards of `coral_doc_stats` per tenant.
const STAT_SHARDS: u64 = 16;

/// The shard this call adds to: spread over processes and calls, so that concurrent writers
/// rarely wait on one row.
pub(crate) fn stat_shard() -> i16 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let n = u64::from(std::process::id())
        .wrapping_mul(0x9e37_79b9)
        .wrapping_add(CALLS.fetch_add(1, Ordering::Relaxed));
    (n % STAT_SHARDS) as i16
}

/// A memory's search terms as stored: distinct terms, their frequencies, and the length.
pub(crate) struct Terms {
    pub(crate) distinct: Vec<String>,
    pub(crate) counts: Vec<i32>,
    pub(crate) len: i32,
}

pub(crate) fn terms_of(content: &str) -> Terms {
    let all = coral_score::search_terms(content);
    let mut counts: HashMap<&str, i32> = HashMap::new();
    let mut distinct: Vec<String> = Vec::new();
    for t in &all {
        let c = counts.entry(t.as_str()).or_insert(0);
        if *c == 0 {
            distinct.push(t.clone());
        }
        *c = c.saturating_add(1);
    }
    let counts = distinct.iter().map(|t| counts[t.as_str()]).collect();
    Terms {
        distinct,
        counts,
        len: i32::try_from(all.len()).unwrap_or(i32::MAX),
    }
}

/// The sorted, de-duplicated token set.
pub(crate) fn sorted_set(tokens: &[u64]) -> Vec<u64> {
    let mut set = tokens.to_vec();
    set.sort_unstable();
    set.dedup();
    set
}

/// The tokens of `set` (sorted) at least one of which any set at least `threshold` similar
/// by set Jaccard contains: if `J(x, y) ≥ t` then `|x ∩ y| ≥ ⌈t·|x|⌉`, so `y` meets the first
/// `|x| − ⌈t·|x|⌉ + 1` tokens of `x`. Two such sets' prefixes meet too (prefix filtering
/// under one order), which is what makes the per-token locks exclusive between near
/// duplicates (docs/postgres.md, "Duplicates").
pub(crate) fn prefix(set: &[u64], threshold: f64) -> &[u64] {
    if set.is_empty() {
        return set;
    }
    let n = set.len();
    // The product is rounded first so that 0.7 × 10 counts as 7, not 7.000000000000001.
    let need = ((threshold * n as f64 * 1e9).round() / 1e9).ceil() as usize;
    let keep = (n + 1).saturating_sub(need.clamp(1, n));
    &set[..keep]
}

/// Sets of at most this many tokens lock every token (the probe's exclusively, the others
/// shared); larger ones lock their prefix only, as before, so that one memory never takes
/// more than a few hundred locks. Both kinds exclude each other ([`lock_plan`]).
const LOCK_ALL_UP_TO: usize = 256;

/// Counters of this store's stored tokens, by the token's low 16 bits (collisions only make a
/// token look commoner): which tokens of a new memory are rare in the tenant, as far as this
/// process has seen. The near-duplicate probe takes the rarest, so that the candidate query
/// does not read every memory holding "the" (docs/postgres.md, "Writes and duplicates").
/// Any choice is correct; the estimate only decides how many rows the query reads.
pub(crate) struct Rarity {
    counts: Vec<AtomicU32>,
}

impl Default for Rarity {
    fn default() -> Rarity {
        Rarity {
            counts: (0..1 << 16).map(|_| AtomicU32::new(0)).collect(),
        }
    }
}

impl Rarity {
    fn count(&self, token: u64) -> u32 {
        self.counts[(token & 0xffff) as usize].load(Ordering::Relaxed)
    }

    /// Counts the tokens of a stored memory.
    pub(crate) fn add(&self, set: &[u64]) {
        for &t in set {
            let c = &self.counts[(t & 0xffff) as usize];
            // Saturating: a counter that reached the top stays there.
            let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1));
        }
    }

    /// The near-duplicate probe of `set` (sorted): as many of its tokens as its prefix has
    /// ([`prefix`]), the rarest by this estimate (ties: the prefix's order), sorted. Any set
    /// at least `threshold` similar contains one of them: it shares at least `⌈t·|x|⌉` tokens
    /// with `set`, and the tokens left out are one fewer.
    pub(crate) fn probe(&self, set: &[u64], threshold: f64) -> Vec<u64> {
        let keep = prefix(set, threshold).len();
        let mut by_rarity = set.to_vec();
        by_rarity.sort_by_key(|&t| (self.count(t), t));
        by_rarity.truncate(keep);
        by_rarity.sort_unstable();
        by_rarity
    }
}

/// The advisory locks of an insert, ascending by token (one order for every insert, so no
/// cycle): up to [`LOCK_ALL_UP_TO`] tokens, every token, the probe's exclusively and the others
/// shared; above it the prefix exclusively. Two near duplicates `x`, `y` always conflict: the
/// one locking every token (say `y`) holds a lock on a token of `x`'s exclusive ones (its probe
/// or its prefix, each of which `y` meets); when both lock only prefixes, the prefixes meet
/// (prefix filtering under one order).
fn lock_plan(set: &[u64], threshold: f64, probe: &[i64]) -> (Vec<i64>, Vec<bool>) {
    lock_plan_up_to(set, threshold, probe, LOCK_ALL_UP_TO)
}

fn lock_plan_up_to(
    set: &[u64],
    threshold: f64,
    probe: &[i64],
    all_up_to: usize,
) -> (Vec<i64>, Vec<bool>) {
    if set.len() > all_up_to {
        let p = as_i64(prefix(set, threshold));
        let n = p.len();
        return (p, vec![true; n]);
    }
    let locks = as_i64(set);
    let exclusive = locks.iter().map(|t| probe.contains(t)).collect();
    (locks, exclusive)
}

fn as_i64(set: &[u64]) -> Vec<i64> {
    set.iter().map(|&t| t as i64).collect()
}

/// Every check of a memory, before anything is written.
fn check(new: &NewMemory<'_>, dim: usize, threshold: f64) -> Result<()> {
    new.item
        .validate()
        .map_err(|e| Error::InvalidInput(format!("memory refused: {e}")))?;
    for (what, v) in [
        ("last_access", new.item.last_access),
        ("timestamp", new.item.timestamp),
    ] {
        if !v.is_finite() {
            return Err(Error::InvalidInput(format!(
                "{what} is {v}: give a finite time"
            )));
        }
    }
    if !new.vector.is_empty() && new.vector.len() != dim {
        return Err(Error::InvalidInput(format!(
            "the vector has {} dimensions; this store holds {dim}: use the store's embedder",
            new.vector.len()
        )));
    }
    if new.vector.iter().any(|x| !x.is_finite()) {
        return Err(Error::InvalidInput(
            "the vector has a non-finite value: embed the text again".into(),
        ));
    }
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(Error::InvalidInput(format!(
            "near-duplicate threshold {threshold} is outside (0, 1]: check memory.sim_threshold_hot"
        )));
    }
    Ok(())
}

/// `Coral::insert` on the database: the same id or a hot or warm memory at least
/// `threshold` similar is refreshed; otherwise the memory is stored with its counters,
/// vector, postings and the tenant's statistics, all in one transaction.
pub(crate) fn insert(
    pool: &Pool,
    tenant: &str,
    dim: usize,
    new: &NewMemory<'_>,
    threshold: f64,
    rarity: &Rarity,
) -> Result<InsertOutcome> {
    check(new, dim, threshold)?;
    let set = sorted_set(new.token_set);
    let probe = as_i64(&rarity.probe(&set, threshold));
    let (locks, exclusive) = lock_plan(&set, threshold, &probe);
    let terms = terms_of(&new.item.content);
    // Without index scans forced, the planner read the whole tenant for the candidate query
    // (its estimate of the GIN index's cost is far too high): 39 ms at 13,000 memories
    // against 1.2 ms through `coral_items_token_set` (EXPLAIN ANALYZE, a probe of 4 rare
    // tokens), so inserts slowed as the tenant grew. Nothing else in an insert scans.
    pool.transaction_from(INSERT_BEGIN, "insert", |tx| {
        // The locks first, in a statement of their own: under READ COMMITTED the next
        // statement's snapshot then holds whatever a near duplicate's transaction committed
        // while this one waited.
        // Both go out in one round trip with the transaction's start; the server runs them in
        // order, so the candidate query still starts after the locks are held.
        let at = new.item.last_access;
        let id = &new.item.item_id;
        let lock_params: [&(dyn ToSql + Sync); 3] = [&tenant, &locks, &exclusive];
        let probe_params: [&(dyn ToSql + Sync); 3] = [&tenant, id, &probe];
        let mut statements: Vec<(&str, &Params<'_>)> = Vec::with_capacity(2);
        if !locks.is_empty() {
            statements.push((sql::LOCK_TOKENS, &lock_params));
        }
        statements.push((sql::MERGE_CANDIDATES, &probe_params));
        let rows = tx.query_all(&statements)?.pop().unwrap_or_default();
        if let Some(merged) = merge_into(tx, tenant, id, &set, threshold, at, &rows)? {
            return Ok(merged);
        }
        match put(tx, tenant, new, &set, &terms)? {
            true => {
                rarity.add(&set);
                Ok(InsertOutcome::Inserted(new.item.item_id.clone()))
            }
            // Only a memory without tokens takes no lock: another process stored the same
            // text first.
            false => merge(tx, tenant, &new.item.item_id, &set, threshold, at)?.ok_or_else(|| {
                Error::Database {
                    what: "insert",
                    detail: "the id was taken and then gone within one transaction".into(),
                    code: None,
                }
            }),
        }
    })
}

/// Copies memories in as they are (no merging; an id already present is left alone), in one
/// transaction. Returns how many were new.
pub(crate) fn import(
    pool: &Pool,
    tenant: &str,
    dim: usize,
    batch: &[NewMemory<'_>],
) -> Result<usize> {
    for new in batch {
        check(new, dim, 1.0)?;
    }
    let prepared: Vec<(Vec<u64>, Terms)> = batch
        .iter()
        .map(|n| (sorted_set(n.token_set), terms_of(&n.item.content)))
        .collect();
    pool.transaction("import", |tx| {
        let mut added = 0;
        for (new, (set, terms)) in batch.iter().zip(&prepared) {
            if put(tx, tenant, new, set, terms)? {
                added += 1;
            }
        }
        Ok(added)
    })
}

/// The checks of a memory copied in as it is (`import.rs`): those of an insert.
pub(crate) fn check_copy(new: &NewMemory<'_>, dim: usize) -> Result<()> {
    check(new, dim, 1.0)
}

/// The refresh of the memory with the same id, else of the hot or warm memory most similar
/// to `set` if one reaches `threshold` (`coral_score::near_duplicate`, the local engine's
/// test), in one query for both.
fn merge(
    tx: &mut Tx<'_>,
    tenant: &str,
    id: &str,
    set: &[u64],
    threshold: f64,
    at: f64,
) -> Result<Option<InsertOutcome>> {
    let probe = as_i64(prefix(set, threshold));
    let rows = tx.query(sql::MERGE_CANDIDATES, &[&tenant, &id, &probe])?;
    merge_into(tx, tenant, id, set, threshold, at, &rows)
}

/// [`merge`] with the rows of `MERGE_CANDIDATES` at hand.
fn merge_into(
    tx: &mut Tx<'_>,
    tenant: &str,
    id: &str,
    set: &[u64],
    threshold: f64,
    at: f64,
    rows: &[Row],
) -> Result<Option<InsertOutcome>> {
    let mut candidates: Vec<(i64, String, Vec<u64>)> = Vec::with_capacity(rows.len());
    for r in rows {
        let key: i64 = r.get(0);
        if r.get::<_, bool>(3) {
            tx.execute(sql::TOUCH, &[&tenant, &key, &at])?;
            return Ok(Some(InsertOutcome::Merged {
                id: id.to_string(),
                similarity: 1.0,
            }));
        }
        let tokens: Vec<i64> = r.get(2);
        candidates.push((
            key,
            r.get(1),
            tokens.into_iter().map(|t| t as u64).collect(),
        ));
    }
    let best = coral_score::near_duplicate(
        set,
        candidates
            .iter()
            .enumerate()
            .map(|(i, c)| (i as u32, c.2.as_slice())),
        threshold,
    );
    let Some((i, similarity)) = best else {
        return Ok(None);
    };
    let (key, id, _) = &candidates[i as usize];
    tx.execute(sql::TOUCH, &[&tenant, key, &at])?;
    Ok(Some(InsertOutcome::Merged {
        id: id.clone(),
        similarity,
    }))
}

/// Writes a new memory's rows in one statement; false when its id is already there
/// (nothing written).
fn put(
    tx: &mut Tx<'_>,
    tenant: &str,
    new: &NewMemory<'_>,
    set: &[u64],
    terms: &Terms,
) -> Result<bool> {
    let item = new.item;
    let tokens = as_i64(set);
    let token_count = i64::try_from(item.token_count).unwrap_or(i64::MAX);
    let extra = Value::Object(item.extra.clone());
    let tier = new.tier.as_str();
    let access = i64::try_from(item.access_count).unwrap_or(i64::MAX);
    let dim = new.vector.len() as i32;
    let vector = (!new.vector.is_empty()).then(|| Vector::from(new.vector.to_vec()));
    let row = tx.query_opt(
        sql::PUT,
        &[
            &tenant,
            &item.item_id,
            &tier,
            &item.project,
            &item.content,
            &item.timestamp,
            &item.importance,
            &token_count,
            &tokens,
            &terms.distinct,
            &terms.len,
            &extra,
            &access,
            &item.last_access,
            &dim,
            &new.embedder,
            &vector,
            &terms.counts,
            &stat_shard(),
        ],
    )?;
    Ok(row.is_some())
}

/// Deletes memories by id, with their counters, vectors, postings and statistics; returns
/// the ids that were there.
pub(crate) fn delete(pool: &Pool, tenant: &str, ids: &[&str]) -> Result<Vec<String>> {
    let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    pool.transaction("delete", |tx| delete_in(tx, tenant, &ids))
}

/// [`delete`] inside a transaction of the caller's (governance's removals).
pub(crate) fn delete_in(tx: &mut Tx<'_>, tenant: &str, ids: &[String]) -> Result<Vec<String>> {
    {
        let rows = tx.query(sql::DELETE_ITEMS, &[&tenant, &ids])?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let mut keys: Vec<i64> = Vec::with_capacity(rows.len());
        let mut gone: Vec<String> = Vec::with_capacity(rows.len());
        let (mut pair_keys, mut pair_terms): (Vec<i64>, Vec<String>) = (Vec::new(), Vec::new());
        let mut total_len = 0i64;
        for row in &rows {
            let key: i64 = row.get(0);
            keys.push(key);
            gone.push(row.get(1));
            let terms: Vec<String> = row.get(2);
            for t in terms {
                pair_keys.push(key);
                pair_terms.push(t);
            }
            total_len += i64::from(row.get::<_, i32>(3));
        }
        tx.execute(sql::DELETE_POSTINGS, &[&tenant, &pair_keys, &pair_terms])?;
        tx.execute(sql::DELETE_HEAT, &[&tenant, &keys])?;
        tx.execute(sql::DELETE_VECTORS, &[&tenant, &keys])?;
        let docs = -(keys.len() as i64);
        tx.execute(
            sql::ADD_DOC_STATS,
            &[&tenant, &stat_shard(), &docs, &-total_len],
        )?;
        Ok(gone)
    }
}

/// Memories by id (those that exist), in no particular order.
pub(crate) fn get(pool: &Pool, tenant: &str, ids: &[&str]) -> Result<Vec<Stored>> {
    let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    pool.transaction("get", |tx| {
        tx.query(sql::ITEMS_BY_ID, &[&tenant, &ids])?
            .iter()
            .map(|r| stored(r).map(|s| s.1))
            .collect()
    })
}

/// Every memory of the tenant, oldest first (ties by id).
pub(crate) fn all(pool: &Pool, tenant: &str) -> Result<Vec<Stored>> {
    pool.transaction("list", |tx| {
        tx.query(sql::ALL_ITEMS, &[&tenant])?
            .iter()
            .map(|r| stored(r).map(|s| s.1))
            .collect()
    })
}

/// Counts `ids` as accessed at `at` (one more access, the later access time), in one
/// statement; returns how many were there.
pub(crate) fn touch(pool: &Pool, tenant: &str, ids: &[&str], at: f64) -> Result<u64> {
    if !at.is_finite() {
        return Err(Error::InvalidInput(format!(
            "the access time {at} is not finite"
        )));
    }
    let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    pool.transaction("touch", |tx| {
        tx.execute(sql::TOUCH_IDS, &[&tenant, &ids, &at])
    })
}

/// Sets a memory's importance; false when no memory has that id.
pub(crate) fn set_importance(pool: &Pool, tenant: &str, id: &str, importance: f64) -> Result<bool> {
    if !(0.0..=1.0).contains(&importance) {
        return Err(Error::InvalidInput(format!(
            "importance {importance} is outside 0..=1"
        )));
    }
    pool.transaction("mark important", |tx| {
        Ok(tx
            .query_opt(sql::SET_IMPORTANCE, &[&tenant, &id, &importance])?
            .is_some())
    })
}

/// The dot products of `vector` with the stored vectors of `ids` (those that have one, of
/// `embedder` when given).
pub(crate) fn dots(
    pool: &Pool,
    tenant: &str,
    dim: usize,
    ids: &[&str],
    vector: &[f32],
    embedder: Option<&str>,
) -> Result<HashMap<String, f64>> {
    if vector.len() != dim {
        return Err(Error::InvalidInput(format!(
            "the query vector has {} dimensions; this store holds {dim}",
            vector.len()
        )));
    }
    let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    let v = Vector::from(vector.to_vec());
    let statement = sql::dots_by_id(dim);
    pool.transaction("vector scores", |tx| {
        Ok(tx
            .query(&statement, &[&tenant, &v, &ids, &embedder])?
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, f64>(1)))
            .collect())
    })
}

/// Items per tier.
pub(crate) fn count(pool: &Pool, tenant: &str) -> Result<TierCounts> {
    pool.transaction("count", |tx| {
        let mut counts = TierCounts::default();
        for row in tx.query(sql::COUNT_TIERS, &[&tenant])? {
            let tier: String = row.get(0);
            let n = u64::try_from(row.get::<_, i64>(1)).unwrap_or(0);
            match tier.as_str() {
                "hot" => counts.hot = n,
                "warm" => counts.warm = n,
                "cold" => counts.cold = n,
                other => {
                    return Err(Error::Corrupted {
                        what: "coral_items.tier".into(),
                        detail: format!("unknown tier {}", coral_base::echo(other)),
                    });
                }
            }
        }
        Ok(counts)
    })
}

/// The tenant's project names, sorted.
pub(crate) fn projects(pool: &Pool, tenant: &str) -> Result<Vec<String>> {
    pool.transaction("projects", |tx| {
        Ok(tx
            .query(sql::PROJECTS, &[&tenant])?
            .iter()
            .map(|r| r.get(0))
            .collect())
    })
}

/// A row of `ITEMS_BY_ID` / `ITEMS_BY_KEY` as (key, stored memory).
pub(crate) fn stored(row: &Row) -> Result<(i64, Stored)> {
    let id: String = row.get(0);
    let tier: String = row.get(1);
    let tier = match tier.as_str() {
        "hot" => Tier::Hot,
        "warm" => Tier::Warm,
        "cold" => Tier::Cold,
        other => {
            return Err(Error::Corrupted {
                what: format!("coral_items {id}"),
                detail: format!("unknown tier {}", coral_base::echo(other)),
            });
        }
    };
    let extra = match row.get::<_, Value>(7) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let item = Item {
        item_id: id,
        content: row.get(3),
        timestamp: row.get(4),
        last_access: row.get(9),
        token_count: u64::try_from(row.get::<_, i64>(6)).unwrap_or(0),
        access_count: u64::try_from(row.get::<_, i64>(8)).unwrap_or(0),
        importance: row.get(5),
        project: row.get(2),
        extra,
    };
    Ok((row.get(10), Stored { item, tier }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prefixes_have_the_length_the_bound_needs() {
        let set: Vec<u64> = (0..10).collect();
        assert_eq!(prefix(&set, 0.7), &set[..4]);
        assert_eq!(prefix(&set, 1.0), &set[..1]);
        assert_eq!(prefix(&set, 0.05), &set[..10]);
        assert!(prefix(&[], 0.7).is_empty());
    }

    proptest! {
        /// Two sets at least `t` similar always share a prefix token (the locks' guarantee)
        /// and each meets the other's prefix (the candidate query's).
        #[test]
        fn near_duplicates_share_a_prefix_token(
            common in proptest::collection::btree_set(0u64..400, 1..30),
            a in proptest::collection::btree_set(0u64..400, 0..6),
            b in proptest::collection::btree_set(0u64..400, 0..6),
            t in 0.3f64..1.0,
        ) {
            let x: Vec<u64> = common.union(&a).copied().collect();
            let y: Vec<u64> = common.union(&b).copied().collect();
            let j = coral_base::set_jaccard_sorted(&x, &y);
            if j >= t {
                let (px, py) = (prefix(&x, t), prefix(&y, t));
                prop_assert!(px.iter().any(|p| py.contains(p)), "{x:?} {y:?} {t}");
                prop_assert!(px.iter().any(|p| y.contains(p)));
            }
        }

        /// Whatever tokens each process's estimate calls rare, and whichever lock plan each
        /// set's size picks, two sets at least `t` similar want one lock in conflicting modes
        /// (one exclusive), and each meets the other's probe.
        #[test]
        fn near_duplicates_always_conflict_on_a_lock(
            common in proptest::collection::btree_set(0u64..400, 1..30),
            a in proptest::collection::btree_set(0u64..400, 0..6),
            b in proptest::collection::btree_set(0u64..400, 0..6),
            t in 0.3f64..1.0,
            seen_x in proptest::collection::vec(0u64..400, 0..60),
            seen_y in proptest::collection::vec(0u64..400, 0..60),
            all_up_to in prop_oneof![Just(0usize), Just(20), Just(LOCK_ALL_UP_TO)],
        ) {
            let x: Vec<u64> = common.union(&a).copied().collect();
            let y: Vec<u64> = common.union(&b).copied().collect();
            let j = coral_base::set_jaccard_sorted(&x, &y);
            if j >= t {
                let (rx, ry) = (Rarity::default(), Rarity::default());
                rx.add(&seen_x);
                ry.add(&seen_y);
                let (qx, qy) = (rx.probe(&x, t), ry.probe(&y, t));
                prop_assert!(qx.iter().any(|p| y.contains(p)), "{x:?} {y:?} {qx:?}");
                prop_assert!(qy.iter().any(|p| x.contains(p)), "{x:?} {y:?} {qy:?}");
                let (lx, ex) = lock_plan_up_to(&x, t, &as_i64(&qx), all_up_to);
                let (ly, ey) = lock_plan_up_to(&y, t, &as_i64(&qy), all_up_to);
                let conflict = lx.iter().zip(&ex).any(|(k, &e)| {
                    ly.iter()
                        .zip(&ey)
                        .any(|(l, &f)| k == l && (e || f))
                });
                prop_assert!(conflict, "{x:?} {y:?} {lx:?} {ex:?} {ly:?} {ey:?}");
                prop_assert!(lx.windows(2).all(|w| w[0] < w[1]), "locks out of order");
            }
        }

        /// The probe has the prefix's length, holds the rarest tokens, and comes sorted.
        #[test]
        fn probes_take_the_rarest_tokens(
            set in proptest::collection::btree_set(0u64..1000, 1..40),
            t in 0.3f64..1.0,
        ) {
            let set: Vec<u64> = set.into_iter().collect();
            let rarity = Rarity::default();
            // The first half of the set is seen often, the rest never.
            let common: Vec<u64> = set[..set.len() / 2].to_vec();
            for _ in 0..3 {
                rarity.add(&common);
            }
            let probe = rarity.probe(&set, t);
            prop_assert_eq!(probe.len(), prefix(&set, t).len());
            prop_assert!(probe.windows(2).all(|w| w[0] < w[1]));
            let rare = set.len() - common.len();
            if probe.len() <= rare {
                prop_assert!(probe.iter().all(|p| !common.contains(p)), "{:?}", probe);
            }
        }
    }
}
