//! The insert path (docs/storage.md, "Inserting"): secrets out, embed outside the lock, merge a
//! near-duplicate, journal, tier checks, governance.

use coral_embed::{TextFeatures, item_id, text_features, token_count};
use coral_store::{Item, Record, Tier};

use super::{Engine, State};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::limits::{check_importance, check_text, check_unix_time, unix_now};
use crate::types::{Insert, InsertOptions, InsertOutcome};

impl Engine {
    /// `Coral::insert_with`: checks, secrets replaced by markers, features and the vector
    /// outside the lock, then the locked part ([`State::insert`]), then governance.
    pub(crate) fn insert_with(&self, content: &str, options: InsertOptions) -> Result<Insert> {
        check_text("content", content)?;
        // Before anything is embedded, hashed into an id or journaled (docs/configuration.md,
        // "Secrets"). The switch follows `privacy.redact_secrets` through hot reload.
        self.refresh_config();
        let (content, redacted) = self.config.redaction().apply(content);
        if !redacted.is_empty() {
            // Markers can be longer than what they replace.
            check_text("content with its secrets replaced", &content)?;
        }
        let content = content.as_ref();
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
        let project = project.filter(|_| matches!(outcome, InsertOutcome::Inserted(_)));
        // The memory is durable now: a governance failure (a full disk during an eviction) is
        // reported, not returned, so a caller that retries on error never stores it twice.
        self.govern_after_change(&config, now, project.as_deref());
        Ok(Insert { outcome, redacted })
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
