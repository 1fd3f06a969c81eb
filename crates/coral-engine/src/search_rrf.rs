//! `retrieval.mode = "rrf"` (docs/configuration.md, "Retrieval modes"): the pool ranked by
//! vector, by bitmap Jaccard and by BM25 separately, the rankings fused by weighted reciprocal
//! rank.
//!
//! One pass over the pool's vectors and bitmaps fills the vector and Jaccard top-`depth` lists
//! (`coral_score::rank_lists`); the BM25 list comes from the inverted index, which only walks
//! the postings of the query's terms. Each list keeps rows with a positive score only, so a row
//! that shares nothing with the query gets no vote. `depth` is [`RRF_DEPTH`] (or `top_k` if
//! larger): a row ranked below 100 in a list would add less than 1/160 to its fused score,
//! under half of a first place, and cutting there keeps fusion O(depth).
//!
//! Fused score: `Σ w / (RRF_K + rank)` over the lists a row is in (1-based ranks), with each
//! list's weight `w` from `retrieval.rrf_weights` (the vector list's depends on whether the hash
//! embedder made the vectors), times `1 + retrieval.project_boost` for items of the query's
//! project and shared items. A list weighted 0 is not computed at all. The boost multiplies
//! because fused scores are small (at most `Σ w / 61`): the weighted mode's additive 0.15 would
//! put every project item above every other, whereas ×1.15 lets it win close calls, as in
//! weighted mode.
//!
//! The BM25 query is `coral_score::search_query`: the query's distinct stemmed terms without
//! function words, each weighted 1; when the query has several lines with words in them (a
//! conversation, one turn a line), the last such line's terms get
//! `retrieval.bm25_last_line_boost` more: the latest turn says what the conversation is about
//! now. `retrieval.min_score` applies to the fused score; the time term and the
//! weights play no part in the ranking. Ties rank the newer item first, then by id.

use coral_score::{
    BITMAP_WORDS, Bitmap, Bm25Query, ListQuery, Scored, TopK, bitmap_jaccard, rank_lists,
    rrf_weighted, time_decay,
};
use roaring::RoaringBitmap;

use crate::engine::State;
use crate::types::Scores;
use crate::vector_index::AnnUse;

/// The reciprocal-rank constant (the usual 60; docs/configuration.md, "Retrieval modes").
pub const RRF_K: f64 = 60.0;

/// Length of each ranking before fusion (at least `top_k`).
pub const RRF_DEPTH: usize = 100;

/// What an rrf search looks for.
pub(crate) struct RrfQuery<'a> {
    pub(crate) vector: Option<&'a [f32]>,
    pub(crate) bitmap: &'a Bitmap,
    pub(crate) keywords: &'a Bm25Query,
    /// Weights of the vector, Jaccard and BM25 lists.
    pub(crate) weights: [f64; 3],
    pub(crate) now: f64,
    pub(crate) tau_days: f64,
    pub(crate) min_score: f64,
    pub(crate) k: usize,
    pub(crate) allow: Option<&'a RoaringBitmap>,
    /// The query's project and its boost: its items and shared ones are boosted.
    pub(crate) boost: Option<(&'a str, f64)>,
    /// The approximate vector index for large pools (docs/ann.md).
    pub(crate) ann: AnnUse<'a>,
}

/// One fused hit: pool row, fused score, components.
pub(crate) struct Fused {
    pub(crate) row: u32,
    pub(crate) score: f64,
    pub(crate) scores: Scores,
}

impl State {
    /// The best `query.k` rows by reciprocal-rank fusion, best first.
    pub(crate) fn search_rrf(&mut self, query: &RrfQuery) -> Vec<Fused> {
        let depth = RRF_DEPTH.max(query.k);
        let [vector_weight, jaccard_weight, bm25_weight] = query.weights;
        let approximate = {
            let pool = self.door.view().pool();
            let population = query.allow.map_or(pool.len() as u64, RoaringBitmap::len);
            vector_weight > 0.0
                && query.vector.is_some_and(|v| v.len() == pool.dim())
                && query.ann.applies(population, pool.len())
        };
        // The indexes are built or repaired first, so that they match the pool.
        let (keywords, vectors, store) =
            self.door.indexes(approximate.then_some(query.ann.embedder));
        let pool = store.pool();
        let score_pool = crate::pool_rows::scan_rows(pool);
        let vector = query.vector.filter(|v| v.len() == pool.dim());
        let bm25 = if bm25_weight > 0.0 {
            keywords.rank(pool, query.keywords, depth, query.allow)
        } else {
            Vec::new()
        };
        // A list weighted 0 is not ranked: no vector, an empty bitmap (Jaccard 0 everywhere).
        let empty: Bitmap = [0; BITMAP_WORDS];
        let lists = match (vector, vectors) {
            // Above `retrieval.ann_threshold`: the graph's candidates re-ranked exactly, and
            // Jaccard over the candidates the other two lists found rather than a pass over
            // every bitmap (docs/ann.md, "Keywords at scale").
            (Some(v), Some(index)) => {
                let (by_vector, vector_spread) =
                    index.rank(pool, v, depth, query.ann.ef, query.allow);
                let jaccard = if jaccard_weight > 0.0 {
                    let rows = bm25.iter().chain(&by_vector).map(|h| h.row);
                    jaccard_among(pool, query.bitmap, rows, depth)
                } else {
                    Vec::new()
                };
                coral_score::Rankings {
                    vector: by_vector,
                    jaccard,
                    vector_spread,
                }
            }
            _ => rank_lists(
                &score_pool,
                &ListQuery {
                    vector: vector.filter(|_| vector_weight > 0.0),
                    bitmap: if jaccard_weight > 0.0 {
                        query.bitmap
                    } else {
                        &empty
                    },
                    now: query.now,
                    tau_days: query.tau_days,
                    depth,
                    allow: query.allow,
                },
            ),
        };
        let rows = |list: &[Scored]| list.iter().map(|h| h.row).collect::<Vec<u32>>();
        let fused = rrf_weighted(
            &[
                (&rows(&lists.vector), vector_weight),
                (&rows(&lists.jaccard), jaccard_weight),
                (&rows(&bm25), bm25_weight),
            ],
            RRF_K,
        );

        let mut top = TopK::new(query.k);
        for (row, mut score) in fused {
            if let Some((project, amount)) = query.boost
                && crate::rank::in_project(pool.item(row), project)
            {
                score *= 1.0 + amount;
            }
            if score >= query.min_score {
                let hit = Scored {
                    row,
                    score,
                    vector: 0.0,
                    jaccard: 0.0,
                    time: 0.0,
                };
                let r = row as usize;
                top.push_keyed(hit, pool.timestamps()[r], pool.tiebreaks()[r]);
            }
        }
        top.into_sorted_vec()
            .into_iter()
            .map(|hit| {
                let r = hit.row as usize;
                let bm25 = match bm25.iter().find(|b| b.row == hit.row) {
                    Some(b) => b.score,
                    None => keywords.score(query.keywords, &pool.item(hit.row).item_id),
                };
                let vector = vector.map_or(0.0, |q| {
                    f64::from(crate::pool_rows::row_dot(q, pool.vector(hit.row)))
                });
                Fused {
                    row: hit.row,
                    score: hit.score,
                    scores: Scores {
                        vector,
                        jaccard: bitmap_jaccard(query.bitmap, &pool.bitmaps()[r]),
                        time: time_decay(query.now - pool.timestamps()[r], query.tau_days),
                        bm25: Some(bm25),
                    },
                }
            })
            .collect()
    }
}

/// The best `depth` of `rows` by bitmap Jaccard with `bitmap` (positive only, each row once),
/// ranked like `coral_score::rank_lists`: newer, then smaller tie-break key, on equal scores.
fn jaccard_among(
    pool: &coral_store::Pool,
    bitmap: &Bitmap,
    rows: impl Iterator<Item = u32>,
    depth: usize,
) -> Vec<Scored> {
    let mut seen = std::collections::HashSet::new();
    let mut top = TopK::new(depth);
    for row in rows {
        if !seen.insert(row) {
            continue;
        }
        let r = row as usize;
        let jaccard = bitmap_jaccard(bitmap, &pool.bitmaps()[r]);
        if jaccard > 0.0 {
            let hit = Scored {
                row,
                score: jaccard,
                vector: 0.0,
                jaccard,
                time: 0.0,
            };
            top.push_keyed(hit, pool.timestamps()[r], pool.tiebreaks()[r]);
        }
    }
    top.into_sorted_vec()
}
