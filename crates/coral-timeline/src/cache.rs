//! The per-hard-key retrieval indexes a `Timeline` keeps in memory: one lock each, at most
//! [`CACHED_HARD_KEYS`] of them, the least recently used idle one dropped first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::index::HardKeyIndex;

/// Hard keys whose indexes stay in memory; beyond it the least recently used one not in use
/// is dropped (and rebuilt from the file if that user comes back).
pub(crate) const CACHED_HARD_KEYS: usize = 64;

/// One hard key's index, locked on its own.
type SharedIndex = Arc<Mutex<HardKeyIndex>>;

/// The per-hard-key indexes of a `Timeline`.
#[derive(Default)]
pub(crate) struct RetrievalCache {
    /// One lock per hard key, so one user's slow first call (embedding a long history) does
    /// not hold up the others; with the call counter value of its last use.
    indexes: Mutex<HashMap<String, (SharedIndex, u64)>>,
    uses: std::sync::atomic::AtomicU64,
}

impl RetrievalCache {
    /// The index of `hk`, created on first use; evicts the least recently used idle index when
    /// more than [`CACHED_HARD_KEYS`] are held.
    pub(crate) fn slot(&self, hk: &str) -> SharedIndex {
        let tick = self.uses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut indexes = self.indexes.lock().unwrap_or_else(|e| e.into_inner());
        if !indexes.contains_key(hk) && indexes.len() >= CACHED_HARD_KEYS {
            let idle = indexes
                .iter()
                .filter(|(_, (slot, _))| Arc::strong_count(slot) == 1)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(k) = idle {
                indexes.remove(&k);
            }
        }
        let entry = indexes.entry(hk.to_string()).or_default();
        entry.1 = tick;
        Arc::clone(&entry.0)
    }

    /// Hard keys with an index in memory (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.indexes.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_a_bounded_number_of_users() {
        let cache = RetrievalCache::default();
        let held = cache.slot("in-use");
        for i in 0..(CACHED_HARD_KEYS * 2) {
            cache.slot(&format!("user-{i}"));
            cache.slot("hot");
        }
        assert_eq!(cache.len(), CACHED_HARD_KEYS);
        // The index in use and the one used all the time stayed.
        let indexes = cache.indexes.lock().unwrap();
        assert!(indexes.contains_key("in-use") && indexes.contains_key("hot"));
        assert!(!indexes.contains_key("user-0"));
        drop(indexes);
        drop(held);
    }
}
