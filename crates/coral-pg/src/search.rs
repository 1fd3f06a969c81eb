//! Retrieval in the database, ranking in Coral (docs/postgres.md, "Search"): the vector
//! ranking from pgvector's HNSW index (iterative scan, so a tenant or project filter still
//! yields its rows) re-ranked by the exact dot product, the BM25 ranking from the stored
//! postings with the local index's formula (`coral_score::Bm25Params`), each with its spread,
//! and `coral_score::fuse_hybrid` over both: the local engine's fusion on the database's
//! candidate lists. One read-only snapshot per search; a fixed number of statements, however
//! many candidates.

use std::collections::HashMap;

use coral_score::{
    Bm25Params, Bm25Query, HybridParams, Spread, TimeWindow, fuse_hybrid, with_neighbours,
};
use coral_store::tiebreak_key;
use pgvector::Vector;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::{Error, Result};
use crate::memory::{Stored, stored};
use crate::pool::{Params, Pool};
use crate::{sql, sql_tiers};

/// Rows sampled for the spread of the query's dot products (as the local approximate index
/// does: docs/ann.md).
pub const SPREAD_SAMPLES: i64 = 2_048;

/// What a search looks for.
#[derive(Clone, Copy, Debug)]
pub struct SearchQuery<'a> {
    /// The query's vector (`None`: keywords only).
    pub vector: Option<&'a [f32]>,
    /// The BM25 query (`coral_score::search_query`).
    pub keywords: &'a Bm25Query,
    /// One line, not a conversation: query words no memory has count in coverage.
    pub question: bool,
    /// Fusion weights (`retrieval.hybrid`).
    pub params: HybridParams,
    /// Candidates each ranking contributes (the local engine's `RRF_DEPTH`, 100, or k).
    pub depth: usize,
    /// Only this project's and shared memories (`None`: the whole tenant).
    pub project: Option<&'a str>,
    /// HNSW candidate list size (`hnsw.ef_search`), at least `depth`.
    pub ef_search: usize,
    /// Only vectors this embedder made vote (`None`: any): another model's vectors are not
    /// comparable with the query's (docs/embeddings.md, "Changing models").
    pub embedder: Option<&'a str>,
    /// A time-shaped query's window (`coral_score::time_window`): its newest items are
    /// candidates too ([`Candidates::window`]).
    pub window: Option<&'a TimeWindow>,
    /// Which cold memories are searched (`retrieval.include_cold`, `memory.cold_scan_lines`).
    pub cold: ColdFilter,
}

/// Which cold memories a search sees; hot and warm ones are always searched. The filter is
/// applied in the database (in the HNSW scan, the postings, the neighbours and the window), so
/// a search still returns its k rows when many are cold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColdFilter {
    /// Every cold memory.
    #[default]
    All,
    /// Only the `n` newest cold memories by creation time (ties: the order they were stored);
    /// `Newest(0)` searches none.
    Newest(usize),
}

impl ColdFilter {
    /// The filter of `include_cold` and `cold_scan_lines` (0: all), as the local pool's
    /// `cold_filter` reads them.
    pub fn of(include_cold: bool, cold_scan_lines: usize) -> ColdFilter {
        match (include_cold, cold_scan_lines) {
            (false, _) => ColdFilter::Newest(0),
            (true, 0) => ColdFilter::All,
            (true, n) => ColdFilter::Newest(n),
        }
    }

    /// The statements' limit on cold rows, `None` when every one passes.
    fn limit(self) -> Option<i64> {
        match self {
            ColdFilter::All => None,
            ColdFilter::Newest(n) => Some(i64::try_from(n).unwrap_or(i64::MAX)),
        }
    }
}

/// The candidates of one search, numbered `0..items.len()`; the rankings refer to them by
/// number, as the local engine's refer to pool rows.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    /// Every candidate, with its counters.
    pub items: Vec<Stored>,
    /// BM25 scores of the best `4 × depth` keyword matches.
    pub bm25: Vec<(u32, f64)>,
    /// The spread of every match's BM25 score over the searchable population.
    pub bm25_spread: Spread,
    /// Per candidate, the share of the query's term weight it matches (0 when none).
    pub coverage: Vec<f64>,
    /// Exact dot products of the best `depth` by vector.
    pub vector: Vec<(u32, f64)>,
    /// The spread of the query's dot products over an even sample of the population.
    pub vector_spread: Spread,
    /// Per candidate, its own BM25 score (without neighbouring context; 0 when it matched no
    /// term): the component score a hit reports.
    pub bm25_own: Vec<f64>,
    /// The items created in the query's window that the filter lets through, newest first:
    /// the `depth` newest that are not in either ranking, and those that are.
    pub window: Vec<u32>,
    /// Each candidate's row key.
    pub(crate) keys: Vec<i64>,
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The memory.
    pub item: Stored,
    /// Fused relevance (`coral_score::fuse_hybrid`).
    pub relevance: f64,
    /// Its BM25 score (0 when it matched no term).
    pub bm25: f64,
    /// Its BM25 z-score part.
    pub bm25_z: f64,
    /// Its dot product with the query, when it was a vector candidate.
    pub vector: Option<f64>,
    /// Its vector z-score part.
    pub vector_z: f64,
}

/// What a search's caller picked from its candidates ([`search_then`]), finished in the
/// search's own snapshot.
#[derive(Debug)]
pub struct Finished {
    /// The candidates; the picked ones' items have their content and other keys, the others'
    /// only what ranking reads (times, counters, importance, project, id: the content is
    /// empty).
    pub candidates: Candidates,
    /// The candidate numbers picked, in the caller's order.
    pub picked: Vec<u32>,
    /// The dot product with the query's vector of each picked candidate that was not in the
    /// vector ranking and has a vector of the query's embedder.
    pub dots: HashMap<u32, f64>,
    /// When the picks were to be counted: how many were (one more access, the later access
    /// time), committed before the search returns, or why they were not.
    pub touched: Option<Result<u64>>,
}

/// Checks the query and opens a search's snapshot.
fn begin(dim: usize, query: &SearchQuery<'_>) -> Result<String> {
    if let Some(v) = query.vector
        && v.len() != dim
    {
        return Err(Error::InvalidInput(format!(
            "the query vector has {} dimensions; this store holds {dim}: embed the query with the \
             store's embedder",
            v.len()
        )));
    }
    let ef = query.ef_search.clamp(query.depth.max(1), 1_000);
    Ok(format!(
        "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; \
         SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {ef}"
    ))
}

/// Both rankings' candidates in one read-only snapshot, in three round trips: the
/// transaction's start with its settings, the statements of both rankings pipelined, and the
/// candidates' items (then the commit).
pub(crate) fn candidates(
    pool: &Pool,
    tenant: &str,
    dim: usize,
    query: &SearchQuery<'_>,
) -> Result<Candidates> {
    let begin = begin(dim, query)?;
    pool.transaction_from(&begin, "search", |tx| gather(tx, tenant, dim, query, true))
}

/// A search finished in its own snapshot: the candidates with only what ranking reads, then
/// `pick` (the caller's fusion and ranking) names the hits, whose content and missing dot
/// products come in one more round trip; when `touch_at` is given, the hits are counted by a
/// statement sent with the commit (docs/postgres.md, "Search": it commits before this returns,
/// so an acknowledged counted search's touches are committed).
pub(crate) fn search_then(
    pool: &Pool,
    tenant: &str,
    dim: usize,
    query: &SearchQuery<'_>,
    touch_at: Option<f64>,
    mut pick: impl FnMut(&Candidates) -> Vec<u32>,
) -> Result<Finished> {
    if let Some(at) = touch_at
        && !at.is_finite()
    {
        return Err(Error::InvalidInput(format!(
            "the access time {at} is not finite"
        )));
    }
    let begin = begin(dim, query)?;
    let dots_sql = sql::dots_by_key(dim);
    let vector = query.vector.map(|v| Vector::from(v.to_vec()));
    pool.transaction_from(&begin, "search", |tx| {
        let mut found = gather(tx, tenant, dim, query, false)?;
        let picked: Vec<u32> = pick(&found)
            .into_iter()
            .filter(|&n| (n as usize) < found.items.len())
            .collect();
        let keys: Vec<i64> = picked.iter().map(|&n| found.keys[n as usize]).collect();
        let in_vector: std::collections::HashSet<u32> = found.vector.iter().map(|v| v.0).collect();
        let missing: Vec<i64> = picked
            .iter()
            .filter(|n| !in_vector.contains(n))
            .map(|&n| found.keys[n as usize])
            .collect();
        let content_params: [&(dyn ToSql + Sync); 2] = [&tenant, &keys];
        let dots_params: [&(dyn ToSql + Sync); 4] = [&tenant, &vector, &missing, &query.embedder];
        let mut statements: Vec<(&str, &Params<'_>)> = Vec::new();
        if !keys.is_empty() {
            statements.push((sql::CONTENT_BY_KEY, &content_params));
        }
        if vector.is_some() && !missing.is_empty() {
            statements.push((&dots_sql, &dots_params));
        }
        let mut results = tx.query_all(&statements)?.into_iter();
        let number: HashMap<i64, u32> = picked
            .iter()
            .map(|&n| (found.keys[n as usize], n))
            .collect();
        if !keys.is_empty() {
            for row in results.next().unwrap_or_default() {
                let Some(&n) = number.get(&row.get::<_, i64>(0)) else {
                    continue;
                };
                let item = &mut found.items[n as usize].item;
                item.content = row.get(1);
                item.extra = match row.get::<_, serde_json::Value>(2) {
                    serde_json::Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
            }
        }
        let mut dots = HashMap::new();
        if vector.is_some() && !missing.is_empty() {
            for row in results.next().unwrap_or_default() {
                if let Some(&n) = number.get(&row.get::<_, i64>(0)) {
                    dots.insert(n, row.get::<_, f64>(1));
                }
            }
        }
        let touched = match touch_at {
            Some(at) if !keys.is_empty() => {
                Some(tx.commit_then(sql::TOUCH_KEYS, &[&tenant, &keys, &at])?)
            }
            _ => None,
        };
        Ok(Finished {
            candidates: found,
            picked,
            dots,
            touched,
        })
    })
}

/// Both rankings' candidates in the open snapshot `tx`: the statements of both rankings
/// pipelined, neighbouring context when asked, then the candidates' items (with their content
/// when `content`, else only what ranking reads).
fn gather(
    tx: &mut crate::pool::Tx<'_>,
    tenant: &str,
    dim: usize,
    query: &SearchQuery<'_>,
    content: bool,
) -> Result<Candidates> {
    if let Some(v) = query.vector
        && v.len() != dim
    {
        return Err(Error::InvalidInput(format!(
            "the query vector has {} dimensions; this store holds {dim}: embed the query with the \
             store's embedder",
            v.len()
        )));
    }
    let ef = query.ef_search.clamp(query.depth.max(1), 1_000);
    let terms: Vec<(String, f64)> = query
        .keywords
        .terms()
        .iter()
        .filter(|(_, w)| *w != 0.0 && w.is_finite())
        .cloned()
        .collect();
    let names: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
    let keywords = query.params.bm25 > 0.0 && !terms.is_empty();
    let vector = query
        .vector
        .filter(|_| query.params.vector > 0.0)
        .map(|v| Vector::from(v.to_vec()));
    let cold = query.cold.limit();
    let (nearest, sample) = match cold {
        None => (sql::nearest(dim), sql::sample_dots(dim)),
        Some(_) => (
            sql_tiers::nearest_filtered(dim),
            sql_tiers::sample_dots_filtered(dim),
        ),
    };
    let (postings_filtered, count_filtered, window_filtered) = (
        sql_tiers::postings_filtered(),
        sql_tiers::count_filtered(),
        sql_tiers::created_between_filtered(),
    );
    let cold_limit = cold.unwrap_or(0);
    let limit = ef as i64;
    {
        let by_tenant: [&(dyn ToSql + Sync); 1] = [&tenant];
        let postings_all: [&(dyn ToSql + Sync); 2] = [&tenant, &names];
        let project = query.project.unwrap_or_default();
        let postings_in: [&(dyn ToSql + Sync); 3] = [&tenant, &names, &project];
        let in_project: [&(dyn ToSql + Sync); 2] = [&tenant, &project];
        let postings_cold: [&(dyn ToSql + Sync); 4] =
            [&tenant, &names, &query.project, &cold_limit];
        let count_cold: [&(dyn ToSql + Sync); 3] = [&tenant, &query.project, &cold_limit];
        let nearest_params: [&(dyn ToSql + Sync); 6] = [
            &tenant,
            &vector,
            &query.project,
            &limit,
            &query.embedder,
            &cold_limit,
        ];
        let sample_params: [&(dyn ToSql + Sync); 6] = [
            &tenant,
            &vector,
            &query.project,
            &SPREAD_SAMPLES,
            &query.embedder,
            &cold_limit,
        ];
        // The unfiltered statements take five parameters, the cold filter's a sixth.
        let arity = if cold.is_some() { 6 } else { 5 };
        let mut statements: Vec<(&str, &Params<'_>)> = Vec::new();
        if keywords {
            statements.push((sql::DOC_STATS, &by_tenant));
            match (query.project, cold) {
                (_, Some(_)) => {
                    statements.push((&postings_filtered, &postings_cold));
                    statements.push((&count_filtered, &count_cold));
                }
                (None, None) => statements.push((sql::POSTINGS, &postings_all)),
                (Some(_), None) => {
                    statements.push((sql::POSTINGS_IN_PROJECT, &postings_in));
                    statements.push((sql::COUNT_IN_PROJECT, &in_project));
                }
            }
        }
        if vector.is_some() {
            statements.push((&nearest, &nearest_params[..arity]));
            statements.push((&sample, &sample_params[..arity]));
        }
        // The window's newest: enough that `depth` remain beside every possible candidate of
        // the rankings (4 × depth by keywords, depth by vector).
        let (start, end) = query.window.map_or((0.0, 0.0), |w| (w.start, w.end));
        let window_limit = (6 * query.depth.max(1)) as i64;
        let window_params: [&(dyn ToSql + Sync); 6] = [
            &tenant,
            &start,
            &end,
            &window_limit,
            &query.project,
            &cold_limit,
        ];
        if query.window.is_some() {
            match cold {
                None => statements.push((sql::CREATED_BETWEEN, &window_params[..5])),
                Some(_) => statements.push((&window_filtered, &window_params)),
            }
        }
        let mut results = tx.query_all(&statements)?.into_iter();
        let mut numbers = Numbering::default();
        let mut own: HashMap<i64, f64> = HashMap::new();
        let (bm25, bm25_spread, coverage) = if keywords {
            let stats = results.next().unwrap_or_default();
            let postings = results.next().unwrap_or_default();
            let population = match (query.project, cold) {
                (None, None) => None,
                _ => results
                    .next()
                    .unwrap_or_default()
                    .first()
                    .map(|r| r.get::<_, i64>(0)),
            };
            let mut raw = raw_keyword_scores(&stats, &postings, population, &terms, query);
            own = raw.positive.iter().copied().collect();
            let p = &query.params;
            if p.neighbours > 0.0 && !raw.positive.is_empty() {
                raw.positive = neighbour_context(tx, tenant, &raw.positive, query)?;
            }
            keyword_ranking(raw, query, &mut numbers)
        } else {
            (Vec::new(), Spread::default(), HashMap::new())
        };
        let (vector, vector_spread) = if vector.is_some() {
            let near = results.next().unwrap_or_default();
            let sampled = results.next().unwrap_or_default();
            vector_ranking(&near, &sampled, query.depth, &mut numbers)
        } else {
            (Vec::new(), Spread::default())
        };
        let mut window = Vec::new();
        if let Some(w) = query.window {
            let mut added = 0;
            for row in results.next().unwrap_or_default() {
                let (key, created): (i64, f64) = (row.get(0), row.get(1));
                if !w.contains(created) {
                    continue;
                }
                match numbers.index.get(&key) {
                    Some(&n) => window.push(n),
                    None if added < query.depth => {
                        window.push(numbers.number(key));
                        added += 1;
                    }
                    None => {}
                }
            }
        }
        let items_sql = if content {
            sql::ITEMS_BY_KEY
        } else {
            sql::SCORING_BY_KEY
        };
        let rows = tx.query(items_sql, &[&tenant, &numbers.keys])?;
        let mut by_key: HashMap<i64, Stored> = HashMap::with_capacity(rows.len());
        for row in &rows {
            let (key, item) = stored(row)?;
            by_key.insert(key, item);
        }
        let mut items = Vec::with_capacity(numbers.keys.len());
        for key in &numbers.keys {
            // Inside one snapshot every candidate's item is there.
            items.push(by_key.remove(key).ok_or_else(|| Error::Corrupted {
                what: format!("coral_items key {key}"),
                detail: "a posting or vector refers to no item".into(),
            })?);
        }
        let coverage = (0..items.len())
            .map(|i| coverage.get(&(i as u32)).copied().unwrap_or(0.0))
            .collect();
        let bm25_own = numbers
            .keys
            .iter()
            .map(|k| own.get(k).copied().unwrap_or(0.0))
            .collect();
        Ok(Candidates {
            items,
            bm25,
            bm25_spread,
            coverage,
            vector,
            vector_spread,
            bm25_own,
            window,
            keys: numbers.keys,
        })
    }
}

/// The best `k` of a search by fused relevance, best first (ties: the smaller candidate
/// number, as `fuse_hybrid` orders them).
pub(crate) fn search(
    pool: &Pool,
    tenant: &str,
    dim: usize,
    query: &SearchQuery<'_>,
    k: usize,
) -> Result<Vec<Hit>> {
    let mut fused = Vec::new();
    let done = search_then(pool, tenant, dim, query, None, |found| {
        let coverage = |id: u32| found.coverage.get(id as usize).copied().unwrap_or(0.0);
        fused = fuse_hybrid(
            &found.bm25,
            &found.bm25_spread,
            &coverage,
            &found.vector,
            &found.vector_spread,
            &query.params,
            query.depth,
        );
        fused.truncate(k);
        fused.iter().map(|r| r.id).collect()
    })?;
    let found = &done.candidates;
    let vector: HashMap<u32, f64> = found.vector.iter().copied().collect();
    Ok(fused
        .into_iter()
        .map(|r| Hit {
            item: found.items[r.id as usize].clone(),
            relevance: r.relevance,
            bm25: found.bm25_own.get(r.id as usize).copied().unwrap_or(0.0),
            bm25_z: r.bm25_z,
            vector: vector.get(&r.id).copied(),
            vector_z: r.vector_z,
        })
        .collect())
}

/// Candidate numbers by item key, in order of first appearance.
#[derive(Default)]
struct Numbering {
    keys: Vec<i64>,
    index: HashMap<i64, u32>,
}

impl Numbering {
    fn number(&mut self, key: i64) -> u32 {
        *self.index.entry(key).or_insert_with(|| {
            self.keys.push(key);
            (self.keys.len() - 1) as u32
        })
    }
}

/// The raw keyword scores of a search: every allowed match's BM25 score (by item key, in
/// order of first appearance), which query terms each has, and what the coverage needs.
struct RawKeywords {
    positive: Vec<(i64, f64)>,
    has: HashMap<i64, Vec<usize>>,
    masses: Vec<f64>,
    total_mass: f64,
    population: i64,
}

/// BM25 as `coral_score::Bm25Index::scores` computes it over the whole tenant (document
/// count, average length and document frequencies of every memory: `stats` and every
/// `postings` row), kept for the memories the filter lets through (the rows' last column);
/// the searchable population is `population` (the whole tenant when `None`).
fn raw_keyword_scores(
    stats: &[Row],
    rows: &[Row],
    population: Option<i64>,
    terms: &[(String, f64)],
    query: &SearchQuery<'_>,
) -> RawKeywords {
    let (n_docs, total_len): (i64, i64) = stats.first().map_or((0, 0), |s| (s.get(0), s.get(1)));
    let mut raw = RawKeywords {
        positive: Vec::new(),
        has: HashMap::new(),
        masses: Vec::with_capacity(terms.len()),
        total_mass: 0.0,
        population: population.unwrap_or(n_docs),
    };
    if n_docs <= 0 {
        return raw;
    }
    let names: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
    // Postings by query term, in the query's term order (so that each document's sum adds
    // its parts in the order the local index does).
    let position: HashMap<&str, usize> = names.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    let mut lists: Vec<Vec<(i64, u32, u32, bool)>> = vec![Vec::new(); terms.len()];
    for row in rows {
        let term: String = row.get(0);
        let Some(&i) = position.get(term.as_str()) else {
            continue;
        };
        let keys: Vec<i64> = row.get(1);
        let tfs: Vec<i32> = row.get(2);
        let lens: Vec<i32> = row.get(3);
        let allowed: Option<Vec<bool>> = row.get(4);
        lists[i] = keys
            .iter()
            .enumerate()
            .map(|(j, &key)| {
                let tf = u32::try_from(tfs.get(j).copied().unwrap_or(0)).unwrap_or(0);
                let len = u32::try_from(lens.get(j).copied().unwrap_or(0)).unwrap_or(0);
                let ok = allowed
                    .as_ref()
                    .is_none_or(|a| a.get(j).copied().unwrap_or(false));
                (key, tf, len, ok)
            })
            .collect();
        // Key order, as the local index walks its postings (the arrays come in none).
        lists[i].sort_unstable_by_key(|p| p.0);
    }
    let n = n_docs as f64;
    let avg_len = total_len as f64 / n;
    let params = Bm25Params::default();
    let mut scores: HashMap<i64, f64> = HashMap::new();
    let mut order: Vec<i64> = Vec::new();
    for (i, ((_, weight), list)) in terms.iter().zip(&lists).enumerate() {
        let df = list.len() as f64;
        let mass = if df > 0.0 || query.question {
            weight * Bm25Params::idf(n, df)
        } else {
            0.0
        };
        if *weight > 0.0 {
            raw.total_mass += mass;
        }
        raw.masses.push(if *weight > 0.0 { mass } else { 0.0 });
        if df == 0.0 {
            continue;
        }
        let idf = Bm25Params::idf(n, df);
        for &(key, tf, len, allowed) in list {
            if !allowed {
                continue;
            }
            let s = scores.entry(key).or_insert_with(|| {
                order.push(key);
                0.0
            });
            *s += weight * idf * params.term_part(tf, len, avg_len);
            raw.has.entry(key).or_default().push(i);
        }
    }
    raw.positive = order
        .iter()
        .map(|k| (*k, scores[k]))
        .filter(|&(_, s)| s > 0.0)
        .collect();
    raw
}

/// An item created near a candidate, as `NEIGHBOURS` returns it.
struct Near {
    key: i64,
    /// Its creation millisecond.
    ms: i64,
    /// `coral_store::tiebreak_key` of its id: the local order within a millisecond.
    tiebreak: u64,
    /// Whether the search's filter lets it through.
    allowed: bool,
    /// Whether it was looked for after the candidate (else before).
    later: bool,
}

/// Rows of the first walk each way from a candidate: itself and one neighbour, and one more to
/// see that the neighbour's millisecond ended.
const SHORT_WALK: i64 = 3;

/// Rows of the full walk each way (docs/postgres.md, "Next steps": more items than this in
/// one millisecond around a match are a known difference from the local index).
const FULL_WALK: i64 = 8;

/// The candidates (keys, first column) whose `NEIGHBOURS` rows with walks of `walk` rows do
/// not settle both neighbours: a walk that filled its limit and whose last row is not past the
/// nearest other millisecond, or no row of the candidate itself.
fn unsettled(rows: &[Row], walk: usize) -> Vec<i64> {
    let walked: Vec<(i64, i64, i64, bool)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), time_key(r.get::<_, f64>(3)), r.get(5)))
        .collect();
    unsettled_of(&walked, walk)
}

/// [`unsettled`] over (candidate, key, millisecond, later) rows.
fn unsettled_of(rows: &[(i64, i64, i64, bool)], walk: usize) -> Vec<i64> {
    // Per candidate: own millisecond, and per direction the rows' milliseconds.
    let mut seen: HashMap<i64, (Option<i64>, [Vec<i64>; 2])> = HashMap::new();
    for &(c, key, ms, later) in rows {
        let e = seen.entry(c).or_default();
        if c == key {
            e.0 = Some(ms);
        }
        e.1[usize::from(later)].push(ms);
    }
    let mut out: Vec<i64> = seen
        .into_iter()
        .filter(|(_, (own, walks))| {
            let Some(here) = *own else {
                return true;
            };
            walks.iter().enumerate().any(|(later, ms)| {
                if ms.len() < walk {
                    return false;
                }
                // Distances beyond the candidate's millisecond, in the walk's direction.
                let beyond: Vec<i64> = ms
                    .iter()
                    .map(|&m| if later == 1 { m - here } else { here - m })
                    .filter(|&d| d > 0)
                    .collect();
                let (Some(&nearest), Some(&last)) = (beyond.iter().min(), beyond.iter().max())
                else {
                    return true;
                };
                last <= nearest
            })
        })
        .map(|(c, _)| c)
        .collect();
    out.sort_unstable();
    out
}

/// The millisecond of a creation time, as the local keyword index orders items.
fn time_key(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

/// Neighbouring context (`coral_score::with_neighbours`, the local engine's): the best
/// `4 × depth` matches gain a share of the better score of the items created just before and
/// after them (strictly earlier and later milliseconds, within
/// `retrieval.hybrid.neighbour_gap_seconds`, let through by the filter), found in one query.
fn neighbour_context(
    tx: &mut crate::pool::Tx<'_>,
    tenant: &str,
    positive: &[(i64, f64)],
    query: &SearchQuery<'_>,
) -> Result<Vec<(i64, f64)>> {
    let p = &query.params;
    let limit = 4 * query.depth.max(1);
    // The entries `with_neighbours` looks at: the best `limit` by (score, then number).
    let numbered: Vec<(u32, f64)> = positive
        .iter()
        .enumerate()
        .map(|(i, &(_, s))| (i as u32, s))
        .collect();
    let mut best = numbered.clone();
    let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if best.len() > limit {
        best.select_nth_unstable_by(limit - 1, order);
        best.truncate(limit);
    }
    let keys: Vec<i64> = best.iter().map(|&(i, _)| positive[i as usize].0).collect();
    // A short walk first; the candidates it cannot settle (its last row still in the nearest
    // millisecond, or the candidate's own row not reached: several items at one time) walk
    // again as far as before. Same answer, a third of the rows when times rarely tie.
    let cold = query.cold.limit();
    let filtered = sql_tiers::neighbours_filtered();
    let walk = |tx: &mut crate::pool::Tx<'_>, keys: &[i64], n: i64| match cold {
        None => tx.query(sql::NEIGHBOURS, &[&tenant, &keys, &query.project, &n]),
        Some(c) => tx.query(&filtered, &[&tenant, &keys, &query.project, &c, &n]),
    };
    let mut rows = walk(tx, &keys, SHORT_WALK)?;
    let again = unsettled(&rows, SHORT_WALK as usize);
    if !again.is_empty() {
        rows.retain(|r| !again.contains(&r.get::<_, i64>(0)));
        rows.extend(walk(tx, &again, FULL_WALK)?);
    }
    // Per candidate key: its own time and the rows around it.
    let mut around: HashMap<i64, Vec<Near>> = HashMap::new();
    let mut own_time: HashMap<i64, i64> = HashMap::new();
    for r in &rows {
        let (c, key): (i64, i64) = (r.get(0), r.get(1));
        let ms = time_key(r.get::<_, f64>(3));
        if c == key {
            own_time.insert(c, ms);
        }
        around.entry(c).or_default().push(Near {
            key,
            ms,
            tiebreak: tiebreak_key(r.get::<_, &str>(2)),
            allowed: r.get(4),
            later: r.get(5),
        });
    }
    let gap = time_key(p.neighbour_gap.max(0.0));
    let index: HashMap<i64, u32> = positive
        .iter()
        .enumerate()
        .map(|(i, &(k, _))| (k, i as u32))
        .collect();
    let mut next: HashMap<u32, [Option<u32>; 2]> = HashMap::with_capacity(keys.len());
    for key in &keys {
        let (Some(&here), Some(rows)) = (own_time.get(key), around.get(key)) else {
            continue;
        };
        let before = rows
            .iter()
            .filter(|n| !n.later && n.ms < here)
            .max_by_key(|n| (n.ms, n.tiebreak));
        let after = rows
            .iter()
            .filter(|n| n.later && n.ms > here)
            .min_by_key(|n| (n.ms, n.tiebreak));
        let pick = |n: Option<&Near>| {
            n.filter(|n| (n.ms - here).abs() <= gap && n.allowed)
                .and_then(|n| index.get(&n.key).copied())
        };
        next.insert(index[key], [pick(before), pick(after)]);
    }
    let smoothed = with_neighbours(&numbered, p.neighbours, limit, |i| {
        next.get(&i).copied().unwrap_or([None, None])
    });
    Ok(smoothed
        .into_iter()
        .map(|(i, s)| (positive[i as usize].0, s))
        .collect())
}

/// The best `4 × depth` keyword matches by score (with their context), the spread of all of
/// them over the searchable population, and the coverage of each.
#[allow(clippy::type_complexity)]
fn keyword_ranking(
    raw: RawKeywords,
    query: &SearchQuery<'_>,
    numbers: &mut Numbering,
) -> (Vec<(u32, f64)>, Spread, HashMap<u32, f64>) {
    let RawKeywords {
        positive,
        has,
        masses,
        total_mass,
        population,
    } = raw;
    let spread = Spread::of(positive.iter().map(|h| h.1), population.max(0) as u64);
    let mut best = positive;
    let keep = 4 * query.depth.max(1);
    let by_score = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if best.len() > keep {
        best.select_nth_unstable_by(keep - 1, by_score);
        best.truncate(keep);
    }
    best.sort_unstable_by(by_score);
    let mut coverage = HashMap::with_capacity(best.len());
    let ranked = best
        .into_iter()
        .map(|(key, s)| {
            let id = numbers.number(key);
            let matched: f64 = has
                .get(&key)
                .map_or(0.0, |ts| ts.iter().map(|&t| masses[t]).sum());
            let share = if total_mass > 0.0 {
                matched / total_mass
            } else {
                0.0
            };
            coverage.insert(id, share);
            (id, s)
        })
        .collect();
    (ranked, spread, coverage)
}

/// The vector ranking from the nearest rows (`key`, exact dot product) the HNSW index found
/// with an iterative scan (a filter leaves rows out after the index, so the scan goes on until
/// enough pass), re-ranked by the exact dot product: the best `depth`, and the spread of an
/// even sample's dot products.
fn vector_ranking(
    near: &[Row],
    sample: &[Row],
    depth: usize,
    numbers: &mut Numbering,
) -> (Vec<(u32, f64)>, Spread) {
    let mut exact: Vec<(i64, f64)> = near
        .iter()
        .map(|r| (r.get::<_, i64>(0), r.get::<_, f64>(1)))
        .collect();
    exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    exact.truncate(depth);
    let spread = Spread::of(
        sample.iter().map(|r| r.get::<_, f64>(0)),
        sample.len() as u64,
    );
    let ranked = exact
        .into_iter()
        .map(|(key, s)| (numbers.number(key), s))
        .collect();
    (ranked, spread)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A walk of 3 rows each way: (candidate, key, millisecond, later).
    fn walk(
        c: i64,
        here: i64,
        before: &[(i64, i64)],
        after: &[(i64, i64)],
    ) -> Vec<(i64, i64, i64, bool)> {
        let mut rows = vec![(c, c, here, false), (c, c, here, true)];
        rows.extend(before.iter().map(|&(k, ms)| (c, k, ms, false)));
        rows.extend(after.iter().map(|&(k, ms)| (c, k, ms, true)));
        rows
    }

    #[test]
    fn short_walks_settle_only_when_the_nearest_millisecond_ended() {
        // Distinct times both ways: settled.
        let rows = walk(1, 100, &[(2, 90), (3, 80)], &[(4, 110), (5, 120)]);
        assert!(unsettled_of(&rows, 3).is_empty());
        // Fewer rows than the walk: the tenant ended, settled.
        let rows = walk(1, 100, &[(2, 90)], &[]);
        assert!(unsettled_of(&rows, 3).is_empty());
        // The two earlier rows share a millisecond: a third may too.
        let rows = walk(1, 100, &[(2, 90), (3, 90)], &[(4, 110), (5, 120)]);
        assert_eq!(unsettled_of(&rows, 3), vec![1]);
        // Later: another item at the candidate's own millisecond, then one: the nearest
        // later millisecond may hold more.
        let rows = walk(1, 100, &[(2, 90), (3, 80)], &[(4, 100), (5, 120)]);
        assert_eq!(unsettled_of(&rows, 3), vec![1]);
        // The candidate's own row was not reached (several items at one time).
        let rows = vec![(1, 2, 100, false), (1, 3, 100, false), (1, 4, 100, false)];
        assert_eq!(unsettled_of(&rows, 3), vec![1]);
    }
}
