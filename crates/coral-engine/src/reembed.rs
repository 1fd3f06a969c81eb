//! `Coral::reembed`: every memory embedded again with the configured embedder, the vector files
//! replaced and the new vectors verified (docs/embeddings.md, "Changing models").

use std::time::Instant;

use coral_store::Store;
use serde::Serialize;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::vectors::{REEMBED_CHUNK, SAMPLE, cosine, embed_rows, sample_rows, write_meta};

/// What [`crate::Coral::reembed`] did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReembedReport {
    /// The embedder now behind every vector.
    pub embedder: String,
    /// Its dim.
    pub dim: usize,
    /// Memories re-embedded.
    pub items: usize,
    /// Wall time.
    pub seconds: f64,
    /// The sample searches that verified the new vectors.
    pub checks: Vec<ReembedCheck>,
}

/// One verification: a memory's text, embedded afresh, finds the memory's stored vector.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReembedCheck {
    /// The memory.
    pub id: String,
    /// Cosine of the fresh and the stored vector.
    pub cosine: f64,
    /// The memory's rank among all memories by vector similarity (1 = first).
    pub rank: usize,
}

impl Engine {
    /// Embed every memory again with the configured embedder, replace the vector
    /// files (checkpointed: each file is written atomically), record the embedder in
    /// `coral_vectors.meta.json`, and verify with sample searches. Embedding happens without
    /// the engine lock; memories inserted meanwhile already carry the configured embedder's
    /// vectors. `progress` is called with (done, total). Run it with no other process using the
    /// data directory.
    pub fn reembed(&self, mut progress: impl FnMut(usize, usize)) -> Result<ReembedReport> {
        let started = Instant::now();
        let memories: Vec<(String, String)> = {
            let engine = self.lock();
            let pool = engine.door.view().pool();
            pool.items()
                .iter()
                .map(|i| (i.item_id.clone(), i.content.clone()))
                .collect()
        };
        let total = memories.len();
        progress(0, total);
        let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(total);
        for chunk in memories.chunks(REEMBED_CHUNK) {
            let texts: Vec<&str> = chunk.iter().map(|(_, c)| c.as_str()).collect();
            let rows = self.embedder.embed(&texts)?;
            if rows.len() != texts.len() {
                return Err(Error::InvalidInput(format!(
                    "the {} embedder returned {} vectors for {} texts",
                    self.embedder.name(),
                    rows.len(),
                    texts.len()
                )));
            }
            vectors.extend(rows);
            progress(vectors.len(), total);
        }
        let mut engine = self.lock();
        for ((id, _), v) in memories.iter().zip(&vectors) {
            if let Some(row) = engine.door.view().pool().row(id) {
                engine.door.set_vector(row, v);
            }
        }
        let left: Vec<u32> = engine.door.view().pool().missing_vectors().iter().collect();
        embed_rows(&mut engine.door, self.embedder.as_ref(), &left)?;
        engine.door.checkpoint()?;
        write_meta(&mut engine.door, self.embedder.as_ref())?;
        engine.vectors_disabled = None;
        let checks = self.verify(engine.door.view())?;
        drop(engine);
        Ok(ReembedReport {
            embedder: self.embedder.name().to_string(),
            dim: self.embedder.dim(),
            items: total,
            seconds: started.elapsed().as_secs_f64(),
            checks,
        })
    }

    /// A few memories, embedded afresh, must find themselves: cosine ≥ 0.999 with the stored
    /// vector and within the first three by vector similarity (near-duplicates may tie).
    fn verify(&self, store: &Store) -> Result<Vec<ReembedCheck>> {
        let pool = store.pool();
        let rows = sample_rows(store, SAMPLE.min(5));
        let texts: Vec<&str> = rows
            .iter()
            .map(|&r| pool.item(r).content.as_str())
            .collect();
        let fresh = self.embedder.embed(&texts)?;
        let mut checks = Vec::new();
        for (&row, query) in rows.iter().zip(&fresh) {
            let dot = |r: usize| -> f32 { crate::pool_rows::row_dot(query, pool.vector(r as u32)) };
            let own = dot(row as usize);
            let rank = 1 + (0..pool.len()).filter(|&r| dot(r) > own).count();
            let check = ReembedCheck {
                id: pool.item(row).item_id.clone(),
                cosine: cosine(&pool.vector(row).to_dense(pool.dim()), query),
                rank,
            };
            if check.cosine < 0.999 || check.rank > 3 {
                return Err(Error::InvalidInput(format!(
                    "re-embedded, but memory {} no longer finds itself (cosine {:.4}, rank {}): \
                     the {} embedder is not deterministic or the vector files were changed \
                     meanwhile; run `coral reembed` again",
                    check.id,
                    check.cosine,
                    check.rank,
                    self.embedder.name()
                )));
            }
            checks.push(check);
        }
        Ok(checks)
    }
}
