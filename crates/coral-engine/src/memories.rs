//! The engine's calls on single memories and pages of them: get, the archive, delete,
//! importance, list and export. Each locks the engine (catching up with other processes) and
//! changes go through the commit door.

use coral_store::{Item, Record};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::list::{ListPage, ListQuery, list_page};
use crate::types::Memory;

impl Engine {
    /// One searchable memory by id.
    pub fn get(&self, id: &str) -> Option<Memory> {
        let engine = self.lock();
        engine.door.view().get(id).map(|(item, tier)| Memory {
            item: item.clone(),
            tier,
        })
    }

    /// An archived (evicted or distilled) memory by id.
    pub fn get_archived(&self, id: &str) -> Result<Option<Item>> {
        Ok(self.lock().door.view().archived(id)?)
    }

    /// Delete a memory. Returns false when no memory has that id.
    pub fn delete(&self, id: &str) -> Result<bool> {
        let mut engine = self.lock();
        if engine.door.view().get(id).is_none() {
            return Ok(false);
        }
        engine.door.commit(vec![Record::Delete { id: id.into() }])?;
        Ok(true)
    }

    /// Set a memory's importance (checked by the caller) and return the memory.
    pub fn mark_important(&self, id: &str, importance: f64) -> Result<Item> {
        let mut engine = self.lock();
        if engine.door.view().get(id).is_none() {
            return Err(Error::NotFound(id.into()));
        }
        engine.door.commit(vec![Record::Importance {
            id: id.into(),
            importance,
        }])?;
        engine
            .door
            .view()
            .get(id)
            .map(|(i, _)| i.clone())
            .ok_or_else(|| Error::NotFound(id.into()))
    }

    /// One page of the stored memories, filtered and ordered; nothing counted as an access.
    pub fn list(&self, query: &ListQuery) -> Result<ListPage> {
        let engine = self.lock();
        list_page(engine.door.view().pool(), query)
    }

    /// Every memory, oldest first (ties by id).
    pub fn export(&self) -> Vec<Memory> {
        let engine = self.lock();
        let pool = engine.door.view().pool();
        let mut out: Vec<Memory> = (0..pool.len() as u32)
            .map(|row| Memory {
                item: pool.item(row).clone(),
                tier: pool.tier(row),
            })
            .collect();
        out.sort_by(|a, b| {
            a.item
                .timestamp
                .total_cmp(&b.item.timestamp)
                .then_with(|| a.item.item_id.cmp(&b.item.item_id))
        });
        out
    }
}
