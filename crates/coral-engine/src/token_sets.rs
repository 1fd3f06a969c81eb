//! The memo behind the near-duplicate test on insert: the token-hash set of each hot and warm
//! item, computed once from its text and forgotten when the item leaves those tiers.

use std::collections::HashMap;

use coral_embed::text_features;
use coral_store::{Pool, Record, Tier};

/// Token-hash sets by item id (sorted, de-duplicated, as `coral_embed::text_features` makes
/// them). Only a cache: a missing entry is computed again from the item's text.
#[derive(Default)]
pub(crate) struct TokenSets {
    sets: HashMap<String, Vec<u64>>,
}

impl TokenSets {
    /// The hot or warm row most similar to `tokens` by set Jaccard, if at or above
    /// `threshold`; of equally similar rows the first hot, then warm, row wins.
    pub(crate) fn near_duplicate(
        &mut self,
        pool: &Pool,
        tokens: &[u64],
        threshold: f64,
    ) -> Option<u32> {
        let rows: Vec<u32> = [Tier::Hot, Tier::Warm]
            .iter()
            .flat_map(|&tier| pool.tier_rows(tier).iter())
            .collect();
        for &row in &rows {
            let item = pool.item(row);
            self.sets
                .entry(item.item_id.clone())
                .or_insert_with(|| text_features(&item.content).token_set);
        }
        let sets = &self.sets;
        let candidates = rows.iter().filter_map(|&row| {
            let set = sets.get(&pool.item(row).item_id)?;
            Some((row, set.as_slice()))
        });
        coral_score::near_duplicate(tokens, candidates, threshold).map(|(row, _)| row)
    }

    /// Remember the token set of an item just put in the hot tier.
    pub(crate) fn remember(&mut self, id: String, tokens: Vec<u64>) {
        self.sets.insert(id, tokens);
    }

    /// Forget what `record` takes out of the hot and warm tiers (a delete, an archive, a move
    /// to cold).
    pub(crate) fn follow(&mut self, record: &Record) {
        match record {
            Record::Delete { id }
            | Record::Archive { id, .. }
            | Record::Move {
                id,
                tier: Tier::Cold,
            } => self.forget(id),
            _ => {}
        }
    }

    /// Forget one item (another process changed it).
    pub(crate) fn forget(&mut self, id: &str) {
        self.sets.remove(id);
    }

    /// Forget everything (the pool was reloaded).
    pub(crate) fn clear(&mut self) {
        self.sets.clear();
    }

    /// Bound the memo: once it holds well more entries than the hot and warm tiers have
    /// items, keep only theirs.
    pub(crate) fn trim(&mut self, pool: &Pool) {
        if self.sets.len() > 2 * (pool.tier_len(Tier::Hot) + pool.tier_len(Tier::Warm)) + 64 {
            self.sets
                .retain(|id, _| pool.row(id).is_some_and(|r| pool.tier(r) != Tier::Cold));
        }
    }
}
