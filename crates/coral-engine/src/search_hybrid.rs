//! `retrieval.mode = "hybrid"` (the default, docs/ranking.md): relevance first, then bounded
//! priors, then a time-shaped query's window.
//!
//! Relevance is `coral_score::fuse_hybrid` of the BM25 ranking (the keyword index's scores
//! with neighbouring context: items created within `retrieval.hybrid.neighbour_gap_seconds`
//! of each other lend each other a share of their score) and, when the vector ranking has a
//! weight, the vector ranking (one pass over the pool's vectors, `coral_score::rank_lists`);
//! each in standard deviations above its own mean over every searchable item. A ranking
//! weighted 0 is not computed: with the hash embedder and the defaults only BM25's postings
//! are walked.
//!
//! Score = `relevance × (1 + project_boost for the query's project and shared items)` +
//! `retrieval.hybrid.prior × prior` + `retrieval.hybrid.time × window fit`, where the prior
//! (0..=1) is the mean of the creation recency `exp(−age / retrieval.tau_days)` and the item's
//! heat (`heat.*`: access frequency, recency of access, importance), and the window fit is
//! `coral_score::TimeWindow::preference` of the item's creation time when the query names a
//! time ("yesterday", "上周"; `coral_score::time_window` in the `timeline.timezone` zone, or
//! the search's). Items in that window are candidates even when nothing else matched.
//! `retrieval.min_score` applies to the score; ties rank the newer item first, then by id.

use coral_heat::HeatParams;
use coral_score::{
    BITMAP_WORDS, Bitmap, Bm25Query, HybridParams, ListQuery, Spread, TimeWindow,
    best_with_neighbours, bitmap_jaccard, fuse_hybrid, rank_lists, time_decay,
};
use roaring::RoaringBitmap;
use std::collections::HashMap;

use crate::engine::State;
use crate::rank::{Candidate, Priors, rank};
use crate::search_rrf::{Fused, RRF_DEPTH};
use crate::types::Scores;
use crate::vector_index::AnnUse;

/// What a hybrid search looks for.
pub(crate) struct HybridQuery<'a> {
    pub(crate) vector: Option<&'a [f32]>,
    pub(crate) bitmap: &'a Bitmap,
    pub(crate) keywords: &'a Bm25Query,
    /// One line (not a conversation): its words absent from every memory still count in the
    /// coordination factor (`Bm25Index::coverage`).
    pub(crate) question: bool,
    pub(crate) params: HybridParams,
    pub(crate) window: Option<TimeWindow>,
    pub(crate) heat: HeatParams,
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

impl State {
    /// The best `query.k` rows by hybrid score, best first.
    pub(crate) fn search_hybrid(&mut self, query: &HybridQuery) -> Vec<Fused> {
        let depth = RRF_DEPTH.max(query.k);
        let p = &query.params;
        let (pool_len, population) = {
            let pool = self.door.view().pool();
            let all = pool.len() as u64;
            (pool.len(), query.allow.map_or(all, RoaringBitmap::len))
        };
        let votes = query
            .vector
            .filter(|v| v.len() == self.door.view().pool().dim() && p.vector > 0.0)
            .is_some();
        let approximate = votes && query.ann.applies(population, pool_len);
        // The indexes are built or repaired first, so that they match the pool.
        let (keywords, vectors, store) =
            self.door.indexes(approximate.then_some(query.ann.embedder));
        let pool = store.pool();

        let allowed = |row: u32| query.allow.is_none_or(|a| a.contains(row));
        // The vector ranking, only when it votes.
        let vector = query
            .vector
            .filter(|v| v.len() == pool.dim() && p.vector > 0.0);
        let empty: Bitmap = [0; BITMAP_WORDS];
        // BM25 by slot with neighbouring context, and its spread over every searchable item:
        // one pass over the walk's sums keeps the best 4 × depth (fusion looks at those only,
        // the z-score following the score) and sums the spread of the scores as ranked (with
        // their context, so that context does not stand out against the bare scores' spread).
        let keyword_side = || {
            if p.bm25 <= 0.0 {
                return (Vec::new(), Spread::of([], population), HashMap::new());
            }
            let sheet = keywords.sheet(query.keywords);
            let filter = keywords.slot_filter(pool, query.allow, sheet.len());
            let scores = sheet.iter().filter(|&(slot, _)| filter.allows(slot));
            let (best, bm25_spread) = best_with_neighbours(
                scores,
                population,
                p.neighbours,
                4 * depth,
                |slot| {
                    keywords
                        .neighbours(slot, p.neighbour_gap)
                        .map(|n| n.filter(|&s| filter.allows(s)))
                },
                |slot| sheet.get(slot),
            );
            let mut bm25 = Vec::with_capacity(best.len());
            // Fusion asks the coverage of these only: by slot now, not by row later.
            let mut coverage = HashMap::with_capacity(best.len());
            let share = keywords.slot_coverage(query.keywords, query.question);
            for &(slot, s) in &best {
                if let Some(row) = keywords.row_of(pool, slot) {
                    bm25.push((row, s));
                    coverage.insert(row, share(slot));
                }
            }
            (bm25, bm25_spread, coverage)
        };
        let vector_side = || match (vector, vectors) {
            // Above `retrieval.ann_threshold`: the graph's candidates, re-ranked exactly, and
            // the spread from a sample (docs/ann.md).
            (Some(v), Some(index)) => {
                let (vector, vector_spread) = index.rank(pool, v, depth, query.ann.ef, query.allow);
                coral_score::Rankings {
                    vector,
                    jaccard: Vec::new(),
                    vector_spread,
                }
            }
            (Some(v), None) => rank_lists(
                &crate::pool_rows::scan_rows(pool),
                &ListQuery {
                    vector: Some(v),
                    bitmap: &empty,
                    now: query.now,
                    tau_days: query.tau_days,
                    depth,
                    allow: query.allow,
                },
            ),
            (None, _) => Default::default(),
        };
        // With the index (a pool at or above `retrieval.ann_threshold`) the two rankings are
        // independent walks of a few milliseconds each (docs/ann.md, "Measured"): they run
        // side by side on two cores. Below it, one after the other as before.
        let ((bm25, bm25_spread, coverage), lists) = if vector.is_some() && vectors.is_some() {
            rayon::join(keyword_side, vector_side)
        } else {
            (keyword_side(), vector_side())
        };
        let by_vector: Vec<(u32, f64)> = lists.vector.iter().map(|h| (h.row, h.score)).collect();
        let coverage = |row: u32| coverage.get(&row).copied().unwrap_or(0.0);

        let mut fused: Vec<(u32, f64)> = fuse_hybrid(
            &bm25,
            &bm25_spread,
            &coverage,
            &by_vector,
            &lists.vector_spread,
            p,
            depth,
        )
        .into_iter()
        .map(|r| (r.id, r.relevance))
        .collect();

        // A time-shaped query: what happened in its window is a candidate too.
        if let Some(window) = &query.window {
            let known: std::collections::HashSet<u32> = fused.iter().map(|f| f.0).collect();
            // From the index's creation-time order, not a pass over the pool: every candidate
            // down to the millisecond of the `depth`-th (so that ties and sub-millisecond
            // order come out as an exact sort would).
            let mut inside: Vec<u32> = Vec::new();
            let mut boundary = i64::MIN;
            for (ms, slot) in keywords.created_between(window.start, window.end) {
                if inside.len() >= depth && ms < boundary {
                    break;
                }
                let Some(r) = keywords.row_of(pool, slot) else {
                    continue;
                };
                if allowed(r)
                    && !known.contains(&r)
                    && window.contains(pool.timestamps()[r as usize])
                {
                    inside.push(r);
                    if inside.len() == depth {
                        boundary = ms;
                    }
                }
            }
            inside.sort_unstable();
            // The newest first, at most `depth`.
            inside.sort_by(|&a, &b| {
                pool.timestamps()[b as usize].total_cmp(&pool.timestamps()[a as usize])
            });
            fused.extend(inside.into_iter().take(depth).map(|r| (r, 0.0)));
        }

        let priors = Priors {
            params: p,
            boost: query.boost,
            window: query.window.as_ref(),
            heat: &query.heat,
            now: query.now,
            tau_days: query.tau_days,
            min_score: query.min_score,
            k: query.k,
        };
        let row_of = |row: u32| Candidate {
            item: pool.item(row),
            timestamp: pool.timestamps()[row as usize],
            tiebreak: pool.tiebreaks()[row as usize],
        };
        rank(fused, row_of, &priors)
            .into_iter()
            .map(|hit| {
                let r = hit.row as usize;
                let bm25 = keywords.score(query.keywords, &pool.item(hit.row).item_id);
                let cosine = query
                    .vector
                    .filter(|v| v.len() == pool.dim())
                    .map_or(0.0, |q| {
                        f64::from(crate::pool_rows::row_dot(q, pool.vector(hit.row)))
                    });
                Fused {
                    row: hit.row,
                    score: hit.score,
                    scores: Scores {
                        vector: cosine,
                        jaccard: bitmap_jaccard(query.bitmap, &pool.bitmaps()[r]),
                        time: time_decay(query.now - pool.timestamps()[r], query.tau_days),
                        bm25: Some(bm25),
                    },
                }
            })
            .collect()
    }
}
