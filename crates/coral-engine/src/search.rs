//! The search path (docs/ranking.md): embed outside the lock, rank by `retrieval.mode` (hybrid
//! fusion in `search_hybrid`, the original's weighted formula in one scoring pass here, rank
//! fusion in `search_rrf`), then count each returned hit for heat.

use coral_score::{Query, Weights, scan};
use coral_store::Record;
use roaring::RoaringBitmap;

use crate::engine::Engine;
use crate::error::Result;
use crate::prepare::question;
use crate::search_hybrid::HybridQuery;
use crate::search_rrf::{Fused, RrfQuery};
use crate::types::{Scores, SearchHit, SearchOptions};
use crate::vector_index::AnnUse;
use coral_config::RetrievalMode;

impl Engine {
    /// `Coral::search_with`: checks and the query's features outside the lock, one scoring
    /// pass, then each hit counted for heat.
    pub fn search_with(&self, query: &str, options: SearchOptions) -> Result<Vec<SearchHit>> {
        self.search_counting(query, options, true)
    }

    /// `Coral::search_uncounted`: the same pass, nothing journaled.
    pub fn search_uncounted(&self, query: &str, options: SearchOptions) -> Result<Vec<SearchHit>> {
        self.search_counting(query, options, false)
    }

    fn search_counting(
        &self,
        query: &str,
        options: SearchOptions,
        count: bool,
    ) -> Result<Vec<SearchHit>> {
        self.refresh_config();
        let config = self.config();
        let asked = question(&config, self.embedder.as_ref(), query, &options)?;
        let (k, min_score, now, features, mode) = (
            asked.k,
            asked.min_score,
            asked.now,
            &asked.features,
            asked.mode,
        );
        let keywords = &asked.keywords;
        let vector = &asked.vector;
        let project = asked.project.as_deref();

        let mut engine = self.lock();
        engine.door.keep_vector_form(config.retrieval.ann_threshold);
        if mode == RetrievalMode::Weighted {
            // Weighted mode needs no keyword index: free it (the other modes build it again).
            engine.door.drop_keywords();
            engine.door.drop_vectors();
        }
        let pool = engine.door.view().pool();
        let r = &config.retrieval;
        let allow = pool.cold_filter(r.include_cold, config.memory.cold_scan_lines);
        // Weighted mode's scan takes the boosted rows as a set (it visits every row anyway);
        // the other modes ask per candidate, so that a large pool is not walked for it.
        let boosted = project
            .filter(|_| mode == RetrievalMode::Weighted)
            .map(|p| {
                (0..pool.len() as u32)
                    .filter(|&row| pool.item(row).project.as_deref().is_none_or(|ip| ip == p))
                    .collect::<RoaringBitmap>()
            });
        let project_boost = project.map(|p| (p, r.project_boost));
        // Vectors another model made are not comparable with the query's (docs/embeddings.md,
        // "Changing models").
        let vector = (vector.len() == pool.dim() && engine.vectors_disabled.is_none())
            .then_some(vector.as_slice());
        let boost = boosted.as_ref().map(|b| (b, r.project_boost));
        let ann = AnnUse {
            embedder: self.embedder.name(),
            threshold: r.ann_threshold,
            ef: r.ann_ef,
        };
        let scored: Vec<Fused> = match (mode, &keywords) {
            (RetrievalMode::Hybrid, Some(keywords)) => engine.search_hybrid(&HybridQuery {
                vector,
                bitmap: &features.bitmap,
                keywords,
                question: asked.question,
                params: asked.hybrid,
                window: asked.window,
                heat: config.heat.params(),
                now,
                tau_days: r.tau_days,
                min_score,
                k,
                allow: allow.as_ref(),
                boost: project_boost,
                ann,
            }),
            (_, Some(keywords)) => engine.search_rrf(&RrfQuery {
                vector,
                bitmap: &features.bitmap,
                keywords,
                weights: r.rrf_weights.for_embedder(self.embedder.name()),
                now,
                tau_days: r.tau_days,
                min_score,
                k,
                allow: allow.as_ref(),
                boost: project_boost,
                ann,
            }),
            (_, None) => scan(
                &crate::pool_rows::scan_rows(pool),
                &Query {
                    vector,
                    bitmap: &features.bitmap,
                    now,
                    tau_days: r.tau_days,
                    weights: Weights {
                        vector: r.weights.vector,
                        jaccard: r.weights.jaccard,
                        time: r.weights.time,
                    },
                    min_score,
                    k,
                    allow: allow.as_ref(),
                    boost,
                },
            )
            .into_iter()
            .map(|s| Fused {
                row: s.row,
                score: s.score,
                scores: Scores {
                    vector: f64::from(s.vector),
                    jaccard: s.jaccard,
                    time: s.time,
                    bm25: None,
                },
            })
            .collect(),
        };
        let pool = engine.door.view().pool();
        if !count {
            return Ok(scored
                .iter()
                .map(|s| SearchHit {
                    item: pool.item(s.row).clone(),
                    tier: pool.tier(s.row),
                    score: s.score,
                    scores: s.scores,
                })
                .collect());
        }
        let records: Vec<Record> = scored
            .iter()
            .map(|s| {
                let item = pool.item(s.row);
                Record::Touch {
                    id: item.item_id.clone(),
                    access_count: item.access_count.saturating_add(1),
                    last_access: item.last_access.max(now),
                }
            })
            .collect();
        let ids: Vec<String> = records
            .iter()
            .filter_map(|r| r.id().map(String::from))
            .collect();
        // Counting the hits is bookkeeping for heat: when it cannot be written (a read-only
        // store, a full disk) the search still answers, and says so through `unrecorded`.
        engine.unrecorded = match engine.door.view().read_only() {
            Some(reason) => Some(format!(
                "the store is read-only ({reason}): hits were not recorded"
            )),
            None => engine.door.commit(records).err().map(|e| {
                format!("the hits of a search could not be recorded ({e}); results are unaffected")
            }),
        };
        let pool = engine.door.view().pool();
        let hits = scored
            .iter()
            .zip(ids)
            .filter_map(|(s, id)| {
                let row = pool.row(&id)?;
                Some(SearchHit {
                    item: pool.item(row).clone(),
                    tier: pool.tier(row),
                    score: s.score,
                    scores: s.scores,
                })
            })
            .collect();
        Ok(hits)
    }
}
