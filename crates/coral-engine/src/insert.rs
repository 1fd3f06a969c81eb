//! The insert path (docs/storage.md, "Inserting"): secrets out, embed outside the lock, merge a
//! near-duplicate, journal, tier checks, governance.

use coral_embed::{TextFeatures, item_id, token_count};
use coral_store::{Item, Record, Tier};

use crate::engine::{Engine, State};
use crate::error::Result;
use crate::prepare::new_text;
use crate::types::{Insert, InsertOptions, InsertOutcome};
use coral_config::Config;

impl Engine {
    /// `Coral::insert_with`: checks, secrets replaced by markers, features and the vector
    /// outside the lock, then the locked part ([`State::insert`]), then governance.
    pub fn insert_with(&self, content: &str, options: InsertOptions) -> Result<Insert> {
        self.refresh_config();
        let text = new_text(&self.config, self.embedder.as_ref(), content, &options)?;
        let config = self.config();
        let mut engine = self.lock();
        let new = NewItem {
            content: &text.content,
            features: text.features,
            vector: text.vector,
            importance: text.importance,
            project: text.project,
            at: text.at,
        };
        let project = new.project.clone();
        let outcome = engine.insert(&config, new)?;
        drop(engine);
        let project = project.filter(|_| matches!(outcome, InsertOutcome::Inserted(_)));
        // The memory is durable now: a governance failure (a full disk during an eviction) is
        // reported, not returned, so a caller that retries on error never stores it twice.
        self.govern_after_change(&config, text.now, project.as_deref());
        Ok(Insert {
            outcome,
            redacted: text.redacted,
        })
    }
}

/// A checked memory with its features and vector, ready for the locked part.
struct NewItem<'a> {
    content: &'a str,
    features: TextFeatures,
    vector: Vec<f32>,
    importance: f64,
    project: Option<String>,
    at: f64,
}

impl State {
    /// Under the lock: refresh the same or a nearly identical hot or warm memory
    /// (set-Jaccard ≥ `memory.sim_threshold_hot`), else put a new one in the hot tier.
    fn insert(&mut self, config: &Config, new: NewItem<'_>) -> Result<InsertOutcome> {
        let id = item_id(new.content);
        let twin = self.door.view().pool().row(&id).or_else(|| {
            self.door
                .near_duplicate(&new.features.token_set, config.memory.sim_threshold_hot)
        });
        if let Some(row) = twin {
            let item = self.door.view().pool().item(row);
            let id = item.item_id.clone();
            let record = Record::Touch {
                id: id.clone(),
                access_count: item.access_count.saturating_add(1),
                last_access: item.last_access.max(new.at),
            };
            self.door.commit(vec![record])?;
            return Ok(InsertOutcome::Merged(id));
        }
        let item = Item {
            project: new.project,
            ..Item::new(
                id.clone(),
                new.content,
                token_count(new.content),
                new.at,
                new.importance,
            )
        };
        self.door.commit(vec![Record::Put {
            tier: Tier::Hot,
            item: item.clone(),
            vector: new.vector,
        }])?;
        self.door.remember_tokens(id, new.features.token_set);
        Ok(InsertOutcome::Inserted(item))
    }
}
