//! The one door every change to the memory store passes: [`Door`] owns the `coral_store::Store`
//! (no other code can reach it mutably) and the indexes derived from the pool, and keeps them in
//! step with every commit and with what other processes wrote.
//!
//! Derived state kept here: the BM25 index of `retrieval.mode = "rrf"` (`keyword_index.rs`),
//! the approximate vector index of large pools (`vector_index.rs`, saved beside the data at
//! checkpoints) and the memo of hot and warm token sets behind the near-duplicate test
//! (`token_sets.rs`).
//! Reads go through [`Door::view`], a shared borrow of the store: its API changes nothing.

use coral_store::{Closed, Record, Store, SyncOutcome, VectorMeta};

use crate::error::Result;
use crate::keyword_file;
use crate::keyword_index::KeywordIndex;
use crate::token_sets::TokenSets;
use crate::vector_index::{VectorIndex, VectorIndexReport};

/// The memory store behind its one commit door.
pub(crate) struct Door {
    store: Store,
    /// BM25 index of the pool for the hybrid and rrf modes; `None` until a search needs it.
    keywords: Option<KeywordIndex>,
    /// Approximate index of the vectors; `None` until a search of a large pool needs it.
    vectors: Option<VectorIndex>,
    /// Why the vector index could not be saved at the last checkpoint (it is rebuilt or
    /// caught up at the next load; nothing is lost).
    pub(crate) vector_save_error: Option<String>,
    /// Why the keyword index could not be saved at the last checkpoint or close (the next
    /// first search builds it; nothing is lost).
    pub(crate) keyword_save_error: Option<String>,
    /// How the keyword index was last made: `Some(Ok(repaired))` when read from
    /// `coral_keywords.idx` (with that many documents repaired from the pool), `Some(Err(why))`
    /// when a file was there but not used, `None` when it was built with no file.
    pub(crate) keyword_load: Option<std::result::Result<usize, String>>,
    /// Token-hash sets of hot and warm items, for near-duplicate detection on insert.
    tokens: TokenSets,
    /// From this many items the pool holds sparse vectors sparse (`retrieval.ann_threshold`,
    /// see [`Door::keep_vector_form`]).
    compact_from: usize,
    /// The pool's size when its vectors last measured dense (checked again once it doubles),
    /// 0 when not measured.
    measured_dense_at: usize,
}

impl Door {
    /// The door of `store`; the BM25 index waits for the first search that needs it.
    pub(crate) fn new(store: Store) -> Door {
        Door {
            store,
            keywords: None,
            vectors: None,
            vector_save_error: None,
            keyword_save_error: None,
            keyword_load: None,
            tokens: TokenSets::default(),
            compact_from: coral_store::COMPACT_FROM,
            measured_dense_at: 0,
        }
    }

    /// Holds the pool's vectors in the sparse form from `threshold` items when they are sparse
    /// (hash vectors: about 170 bytes a 384-dim row instead of 1,536, docs/ann.md "Memory"),
    /// and dense below it, where searches take the exact path: there the scan reads the dense
    /// matrix as before, at the same speed. Either way a row's product with a query is the
    /// same, bit for bit (`coral_score::sparse_dot`), so results never depend on the form.
    /// Called with the configured threshold by every search and at open, and by every commit
    /// with the last one seen (so a pool that grows past it is compacted while it grows, not
    /// after). A threshold of 0 turns the index off, not the memory saving: such a pool is
    /// compact from `coral_store::COMPACT_FROM` items (the default threshold).
    pub(crate) fn keep_vector_form(&mut self, threshold: usize) {
        self.compact_from = match threshold {
            0 => coral_store::COMPACT_FROM,
            t => t,
        };
        let pool = self.store.pool();
        let len = pool.len();
        let compact = if len < self.compact_from {
            false
        } else if pool.is_compact() {
            true
        } else if self.measured_dense_at > 0 && len < 2 * self.measured_dense_at {
            false
        } else {
            let sparse = pool
                .density()
                .is_some_and(|d| d <= coral_store::SPARSE_DENSITY);
            if !sparse {
                self.measured_dense_at = len;
            }
            sparse
        };
        if compact != pool.is_compact() {
            self.store.set_compact_vectors(compact);
        }
    }

    /// The store, read-only.
    pub(crate) fn view(&self) -> &Store {
        &self.store
    }

    /// Commit `records` (the store validates them all before writing any) and keep the derived
    /// indexes in step: every put, touch, tier move, importance change, delete and archive of
    /// this process passes here.
    pub(crate) fn commit(&mut self, records: Vec<Record>) -> Result<()> {
        // Touches, moves and importance changes leave an item's text and presence alone, which
        // is all the keyword index holds.
        let changed: Vec<String> = match self.keywords.is_some() || self.vectors.is_some() {
            true => records
                .iter()
                .filter(|r| {
                    !matches!(
                        r,
                        Record::Touch { .. } | Record::Importance { .. } | Record::Move { .. }
                    )
                })
                .filter_map(|r| r.id().map(String::from))
                .collect(),
            false => Vec::new(),
        };
        for record in &records {
            self.tokens.follow(record);
        }
        let result = self.store.commit(records);
        // Also on failure: the sync looks at what the pool holds, whatever happened.
        if let Some(keywords) = &mut self.keywords {
            keywords.sync_ids(self.store.pool(), changed.iter().map(String::as_str));
        }
        if let Some(vectors) = &mut self.vectors {
            vectors.sync_ids(self.store.pool(), changed.iter().map(String::as_str));
        }
        self.keep_vector_form(self.compact_from);
        result?;
        Ok(())
    }

    /// Take the data directory's write lock and apply what other processes wrote, keeping the
    /// derived indexes in step.
    pub(crate) fn acquire(&mut self) -> Result<SyncOutcome> {
        let outcome = self.store.acquire()?;
        match &outcome {
            SyncOutcome::Applied(ids) => {
                for id in ids {
                    self.tokens.forget(id);
                }
                if let Some(keywords) = &mut self.keywords {
                    keywords.sync_ids(self.store.pool(), ids.iter().map(String::as_str));
                }
                if let Some(vectors) = &mut self.vectors {
                    vectors.sync_ids(self.store.pool(), ids.iter().map(String::as_str));
                }
            }
            SyncOutcome::Reloaded => {
                self.tokens.clear();
                self.keywords = None;
                // Rows were renumbered by the reload; ids and vectors mostly did not change:
                // check every item rather than build the graph again.
                if let Some(vectors) = &mut self.vectors {
                    vectors.reconcile(self.store.pool());
                }
            }
            _ => {}
        }
        Ok(outcome)
    }

    /// Release the write lock taken by [`Door::acquire`].
    pub(crate) fn release(&mut self) {
        self.store.release();
    }

    /// Set the vector of a row (derived data: re-embedding, filling in missing vectors); the
    /// vector index follows.
    pub(crate) fn set_vector(&mut self, row: u32, vector: &[f32]) -> bool {
        let set = self.store.set_vector(row, vector);
        if set && let Some(vectors) = &mut self.vectors {
            vectors.vector_set(self.store.pool(), row);
        }
        set
    }

    /// Record which embedder made the vectors (`coral_vectors.meta.json`).
    pub(crate) fn set_vector_meta(&mut self, meta: &VectorMeta) -> Result<()> {
        Ok(self.store.set_vector_meta(meta)?)
    }

    /// Rewrite the compatible files and start a fresh journal (no item changes), then save the
    /// vector index if it changed.
    pub(crate) fn checkpoint(&mut self) -> Result<()> {
        self.store.checkpoint()?;
        self.save_vectors();
        self.save_keywords();
        Ok(())
    }

    /// Saves the keyword index beside the data (`coral_keywords.idx`) if it changed since it
    /// was built, loaded or saved. A failure is kept in `keyword_save_error` and costs only
    /// time: the next first search builds the index.
    fn save_keywords(&mut self) {
        if self.store.read_only().is_some() {
            return;
        }
        let Some(keywords) = &mut self.keywords else {
            return;
        };
        if !keywords.dirty {
            return;
        }
        let pool = self.store.pool();
        if !keywords.matches(pool) {
            keywords.reconcile(pool);
        }
        let path = self.store.paths().keywords.clone();
        match keyword_file::save(&path, keywords, pool, self.store.syncs()) {
            Ok(()) => {
                keywords.dirty = false;
                self.keyword_save_error = None;
            }
            Err(e) => self.keyword_save_error = Some(e),
        }
        coral_base::probe::mark("keyword index saved");
    }

    /// Saves the vector index beside the data if it changed. A failure is kept in
    /// `vector_save_error` and costs only time: the next load catches the file up or rebuilds.
    fn save_vectors(&mut self) {
        if self.store.read_only().is_some() {
            return;
        }
        if let Some(vectors) = &mut self.vectors {
            let dir = self.store.paths().dir.clone();
            self.vector_save_error = vectors
                .save_if_changed(&dir)
                .err()
                .map(|e| format!("the vector index was not saved: {e}"));
        }
    }

    /// Trim the archive file to at most `max_bytes` (the archive is not searched or indexed).
    pub(crate) fn trim_archive(&mut self, max_bytes: u64) -> Result<u64> {
        Ok(self.store.trim_archive(max_bytes)?)
    }

    /// Save the vector index, checkpoint and release the data directory.
    pub(crate) fn close(mut self) -> Result<Closed> {
        self.save_vectors();
        self.save_keywords();
        Ok(self.store.close()?)
    }

    /// The keyword index, built or repaired first so that it matches the pool, with the store
    /// it indexes.
    pub(crate) fn keywords(&mut self) -> (&KeywordIndex, &Store) {
        if self.keywords.is_none() {
            let (index, how) = load_keywords(&self.store);
            self.keywords = Some(index);
            self.keyword_load = how;
        }
        let pool = self.store.pool();
        // Set just above; the closure never runs.
        let keywords = self
            .keywords
            .get_or_insert_with(|| KeywordIndex::build(pool));
        if !keywords.matches(pool) {
            keywords.reconcile(pool);
        }
        (keywords, &self.store)
    }

    /// Makes the vector index of the pool for `embedder`'s vectors ready: loaded from its file
    /// (and caught up with the pool) or built (reporting `progress(done, total)`) when there is
    /// none, then repaired if its fingerprint disagrees with the pool. No index when the pool
    /// has no vectors.
    pub(crate) fn prepare_vectors(
        &mut self,
        embedder: &str,
        progress: &mut dyn FnMut(usize, usize),
    ) -> VectorIndexReport {
        let mut report = VectorIndexReport::default();
        if self
            .vectors
            .as_ref()
            .is_some_and(|v| v.embedder() != embedder)
        {
            self.vectors = None;
        }
        let pool = self.store.pool();
        if self.vectors.is_none() {
            self.vectors = match VectorIndex::load(&self.store.paths().dir, pool, embedder) {
                Some((index, repaired)) => {
                    report.loaded = true;
                    report.repaired = repaired;
                    Some(index)
                }
                None => VectorIndex::build(pool, embedder, progress),
            };
        }
        if let Some(vectors) = &mut self.vectors
            && !vectors.matches(pool)
        {
            vectors.reconcile(pool);
        }
        report.vectors = self.vectors.as_ref().map_or(0, VectorIndex::vectors);
        report.sparse = self.vectors.as_ref().is_some_and(VectorIndex::is_sparse);
        report
    }

    /// The keyword index (built or repaired first) and, when `vectors_for` names the
    /// embedder, the vector index (made ready first), with the store they index.
    pub(crate) fn indexes(
        &mut self,
        vectors_for: Option<&str>,
    ) -> (&KeywordIndex, Option<&VectorIndex>, &Store) {
        if let Some(embedder) = vectors_for {
            self.prepare_vectors(embedder, &mut |_, _| {});
        }
        self.keywords();
        let keywords = self.keywords.as_ref().expect("just built");
        let vectors = vectors_for.and(self.vectors.as_ref());
        (keywords, vectors, &self.store)
    }

    /// Save and forget the vector index (weighted mode uses none); a later large search
    /// loads it again.
    pub(crate) fn drop_vectors(&mut self) {
        self.save_vectors();
        self.vectors = None;
    }

    /// The vector index as it is, not repaired (tests check it was kept in step).
    #[cfg(test)]
    pub(crate) fn vector_index(&self) -> Option<&VectorIndex> {
        self.vectors.as_ref()
    }

    /// Forget the keyword index (weighted mode needs none; the other modes build it again).
    pub(crate) fn drop_keywords(&mut self) {
        self.keywords = None;
    }

    /// The hot or warm row most similar to `tokens` by set Jaccard, if at or above
    /// `threshold`.
    pub(crate) fn near_duplicate(&mut self, tokens: &[u64], threshold: f64) -> Option<u32> {
        self.tokens
            .near_duplicate(self.store.pool(), tokens, threshold)
    }

    /// Remember the token set of an item just put in the hot tier.
    pub(crate) fn remember_tokens(&mut self, id: String, tokens: Vec<u64>) {
        self.tokens.remember(id, tokens);
    }

    /// Drop remembered token sets of items no longer hot or warm, once there are many.
    pub(crate) fn trim_tokens(&mut self) {
        self.tokens.trim(self.store.pool());
    }

    /// The keyword index as it is, not repaired (tests check it was kept in step).
    #[cfg(test)]
    pub(crate) fn keyword_index(&self) -> Option<&KeywordIndex> {
        self.keywords.as_ref()
    }

    /// A commit that skips the door's bookkeeping, as a bug would: tests check that the
    /// keyword index notices and repairs itself.
    #[cfg(test)]
    pub(crate) fn commit_bypassing_indexes(&mut self, records: Vec<Record>) -> Result<()> {
        Ok(self.store.commit(records)?)
    }
}

/// The keyword index of `store`'s pool: read from `coral_keywords.idx` and checked against the
/// pool document by document when the file is usable, else built from every text; with how
/// (see `Door::keyword_load`).
fn load_keywords(store: &Store) -> (KeywordIndex, Option<std::result::Result<usize, String>>) {
    let pool = store.pool();
    let how = match keyword_file::read(&store.paths().keywords) {
        Ok(None) => None,
        Ok(Some((saved, bm25))) => match KeywordIndex::from_saved(saved, bm25, pool) {
            Some((index, repaired)) => {
                coral_base::probe::mark("keyword index read and checked");
                return (index, Some(Ok(repaired)));
            }
            None => Some(Err(format!(
                "{}: its slots and documents disagree: ignored, the keyword index is rebuilt",
                store.paths().keywords.display()
            ))),
        },
        Err(why) => Some(Err(why)),
    };
    let index = KeywordIndex::build(pool);
    coral_base::probe::mark("keyword index built");
    (index, how)
}
