//! Memories copied out of and into the pool as they are, for `coral migrate`
//! (docs/postgres.md, "Migrating"): tiers, counters, times, importance, projects and other
//! keys kept, no merging and no governance, so that a copy there and back exports the same.

use coral_store::{Item, Record, Tier};

use crate::engine::Engine;
use crate::error::Result;
use crate::types::Memory;
use crate::vectors::write_meta;

impl Engine {
    /// Every memory in export order (oldest first, ties by id), each with its vector when the
    /// pool holds one the open embedder made (`None`: missing, or another model's).
    pub fn copy_out(&self) -> Vec<(Memory, Option<Vec<f32>>)> {
        let engine = self.lock();
        let usable = engine.vectors_disabled.is_none();
        let pool = engine.door.view().pool();
        let missing = pool.missing_vectors();
        let dim = pool.dim();
        let mut out: Vec<(Memory, Option<Vec<f32>>)> = (0..pool.len() as u32)
            .map(|row| {
                let vector = (usable && !missing.contains(row))
                    .then(|| pool.vector(row).to_dense(dim).into_owned());
                let memory = Memory {
                    item: pool.item(row).clone(),
                    tier: pool.tier(row),
                };
                (memory, vector)
            })
            .collect();
        out.sort_by(|a, b| {
            a.0.item
                .timestamp
                .total_cmp(&b.0.item.timestamp)
                .then_with(|| a.0.item.item_id.cmp(&b.0.item.item_id))
        });
        out
    }

    /// Puts `batch` in as it is, in one commit (one journal write): an id already present is
    /// left alone. Returns how many were new.
    pub fn copy_in(&self, batch: Vec<(Tier, Item, Vec<f32>)>) -> Result<usize> {
        let mut engine = self.lock();
        let mut records = Vec::with_capacity(batch.len());
        let mut seen = std::collections::HashSet::new();
        for (tier, item, vector) in batch {
            if engine.door.view().get(&item.item_id).is_some() || !seen.insert(item.item_id.clone())
            {
                continue;
            }
            records.push(Record::Put { tier, item, vector });
        }
        let added = records.len();
        if added > 0 {
            engine.door.commit(records)?;
        }
        Ok(added)
    }

    /// After the last [`Engine::copy_in`]: the vectors recorded as the open embedder's and a
    /// checkpoint, so that the directory is the original's files.
    pub fn copy_done(&self) -> Result<()> {
        let mut engine = self.lock();
        write_meta(&mut engine.door, self.embedder.as_ref())?;
        engine.door.checkpoint()
    }
}
