//! The insert path (SPEC 6.2): embed outside the lock, dedup, journal, tier checks, governance.

use coral_embed::{TextFeatures, item_id, text_features, token_count};
use coral_store::{Item, Record, Tier};

use crate::config::Config;
use crate::engine::{
    Coral, Engine, Insert, InsertOptions, check_importance, check_text, check_unix_time, unix_now,
};
use crate::error::{Error, Result};

impl Coral {
    /// Store a memory with the given importance (0..1). A text that duplicates a hot or warm
    /// memory (set-Jaccard ≥ `memory.sim_threshold_hot`) refreshes that memory instead.
    pub fn insert(&self, content: &str, importance: f64) -> Result<Insert> {
        self.insert_with(
            content,
            InsertOptions {
                importance,
                ..InsertOptions::default()
            },
        )
    }

    /// [`Coral::insert`] with a project tag, an explicit creation time or clock.
    pub fn insert_with(&self, content: &str, options: InsertOptions) -> Result<Insert> {
        check_text("content", content)?;
        check_importance(options.importance)?;
        for (what, t) in [("timestamp", options.timestamp), ("now", options.now)] {
            if let Some(t) = t {
                check_unix_time(what, t)?;
            }
        }
        let project = match options.project.as_deref().map(str::trim) {
            Some("") | None => None,
            Some(p) if p.len() > 256 => {
                return Err(Error::InvalidInput(format!(
                    "project name is {} bytes; the limit is 256",
                    p.len()
                )));
            }
            Some(p) => Some(p.to_string()),
        };
        let now = options.now.unwrap_or_else(unix_now);
        let at = options.timestamp.unwrap_or(now);
        let features = text_features(content);
        let vector = self
            .embedder
            .embed(&[content])?
            .pop()
            .ok_or_else(|| Error::InvalidInput("the embedder returned no vector".into()))?;
        self.refresh_config();
        let config = self.config();
        let mut engine = self.lock();
        let new = NewItem {
            content,
            features,
            vector,
            importance: options.importance,
            project,
            at,
        };
        let project = new.project.clone();
        let outcome = engine.insert(&config, new)?;
        drop(engine);
        let project = project.filter(|_| outcome.inserted());
        // The memory is durable now: a governance failure (a full disk during an eviction) is
        // reported, not returned, so a caller that retries on error never stores it twice.
        self.govern_after_change(&config, now, project.as_deref());
        Ok(outcome)
    }
}

pub(crate) struct NewItem<'a> {
    pub(crate) content: &'a str,
    pub(crate) features: TextFeatures,
    pub(crate) vector: Vec<f32>,
    pub(crate) importance: f64,
    pub(crate) project: Option<String>,
    pub(crate) at: f64,
}

impl Engine {
    fn insert(&mut self, config: &Config, new: NewItem<'_>) -> Result<Insert> {
        let id = item_id(new.content);
        let twin = self
            .store
            .pool()
            .row(&id)
            .or_else(|| self.near_duplicate(config, &new.features.token_set));
        if let Some(row) = twin {
            let item = self.store.pool().item(row);
            let id = item.item_id.clone();
            let record = Record::Touch {
                id: id.clone(),
                access_count: item.access_count.saturating_add(1),
                last_access: item.last_access.max(new.at),
            };
            self.store.commit(vec![record])?;
            return Ok(Insert::Merged(id));
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
        self.commit(vec![Record::Put {
            tier: Tier::Hot,
            item: item.clone(),
            vector: new.vector,
        }])?;
        self.dedup.insert(id, new.features.token_set);
        Ok(Insert::Inserted(item))
    }

    /// The hot or warm item most similar to `tokens`, if at or above the merge threshold.
    fn near_duplicate(&mut self, config: &Config, tokens: &[u64]) -> Option<u32> {
        let pool = self.store.pool();
        let rows: Vec<u32> = [Tier::Hot, Tier::Warm]
            .iter()
            .flat_map(|&tier| pool.tier_rows(tier).iter())
            .collect();
        for &row in &rows {
            let item = pool.item(row);
            self.dedup
                .entry(item.item_id.clone())
                .or_insert_with(|| text_features(&item.content).token_set);
        }
        let dedup = &self.dedup;
        let candidates = rows.iter().filter_map(|&row| {
            let set = dedup.get(&pool.item(row).item_id)?;
            Some((row, set.as_slice()))
        });
        coral_score::near_duplicate(tokens, candidates, config.memory.sim_threshold_hot)
            .map(|(row, _)| row)
    }
}
