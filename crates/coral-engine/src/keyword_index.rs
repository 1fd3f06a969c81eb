//! The BM25 index of the memory pool, kept in step with the store (for `retrieval.mode =
//! "hybrid"` and `"rrf"`), with the items in time order for neighbouring context.
//!
//! Pool rows move whenever an item is removed (the last row is swapped in), so the index keys
//! documents by a slot of its own, assigned per item id and reused after removal. It follows
//! the pool through the commit door (`door.rs`: every put, delete and archive this process
//! makes, and the records other processes wrote, applied when the door takes the lock), and a
//! fingerprint check before each use (item count and the wrapping sum of the items' tie-break
//! keys), which would catch a change that reached the store any other way and rebuild the
//! difference.
//!
//! Documents are indexed under `coral_score::search_terms` (English words stemmed). The index
//! is built by the first hybrid or rrf search, so a process that only inserts or reads stats
//! never pays for it; in weighted mode it costs nothing.

use std::collections::{BTreeSet, HashMap};

use coral_score::{Bm25Index, Bm25Params, Bm25Query, Bm25Scores, Scored, TopK, search_terms};
use coral_store::{Pool, tiebreak_key};

use crate::id_key::IdKey;
use roaring::RoaringBitmap;

/// BM25 over the pool's item contents, by item id.
#[derive(Debug, Default)]
pub(crate) struct KeywordIndex {
    index: Bm25Index,
    /// Item id -> slot (the document id in `index`).
    slots: HashMap<IdKey, u32>,
    /// Per slot: the item id (`None` when free), creation time and tie-break key.
    docs: Vec<Option<SlotDoc>>,
    free: Vec<u32>,
    /// Wrapping sum of the tie-break keys of the indexed ids (see [`KeywordIndex::matches`]).
    key_sum: u64,
    /// Times [`KeywordIndex::reconcile`] had to repair the index (0 unless a change bypassed
    /// the commit door; tests assert it stays 0).
    reconciled: u64,
    /// Slots in creation-time order: (sortable timestamp, tie-break key, slot).
    by_time: BTreeSet<(i64, u64, u32)>,
    /// Changed since it was built, loaded or last saved (`coral_keywords.idx`).
    pub(crate) dirty: bool,
}

/// Which slots a filtered search may use ([`KeywordIndex::slot_filter`]).
pub(crate) enum SlotFilter<'a> {
    /// No filter.
    All,
    /// By slot, mapped from the allowed rows.
    Slots(Vec<bool>),
    /// By the slot's pool row, looked up per slot.
    Rows {
        index: &'a KeywordIndex,
        pool: &'a Pool,
        allow: &'a RoaringBitmap,
    },
}

impl SlotFilter<'_> {
    /// Whether `slot` passes.
    #[inline]
    pub(crate) fn allows(&self, slot: u32) -> bool {
        match self {
            SlotFilter::All => true,
            SlotFilter::Slots(slots) => slots.get(slot as usize).copied().unwrap_or(false),
            SlotFilter::Rows { index, pool, allow } => {
                index.row_of(pool, slot).is_some_and(|r| allow.contains(r))
            }
        }
    }
}

/// A timestamp as an integer that sorts like it (milliseconds; Unix times here are in
/// 0..=`MAX_UNIX_TIME`).
fn time_key(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

#[derive(Debug)]
struct SlotDoc {
    id: IdKey,
    timestamp: f64,
    key: u64,
}

impl KeywordIndex {
    /// The index of every item in `pool`.
    /// Row `r` gets slot `r`, as adding the rows one by one would give. The texts' terms
    /// (tokenising and stemming, most of the build) are found on every core a chunk at a time,
    /// so at most a chunk's term lists exist at once; the documents go into the postings in
    /// row order, and the creation-time order is sorted once rather than grown an entry at a
    /// time.
    pub(crate) fn build(pool: &Pool) -> KeywordIndex {
        KeywordIndex::build_in_chunks(pool, 16_384)
    }

    fn build_in_chunks(pool: &Pool, chunk: usize) -> KeywordIndex {
        use rayon::prelude::*;
        let n = pool.len();
        let mut index = KeywordIndex::default();
        index.slots.reserve(n);
        index.docs.reserve_exact(n);
        let mut by_time = Vec::with_capacity(n);
        let keys = pool.tiebreaks();
        for (c, items) in pool.items().chunks(chunk.max(1)).enumerate() {
            let terms: Vec<Vec<String>> = items
                .par_iter()
                .map(|item| search_terms(&item.content))
                .collect();
            for (i, (item, terms)) in items.iter().zip(terms).enumerate() {
                let slot = (c * chunk.max(1) + i) as u32;
                let key = keys[slot as usize];
                index.index.insert(slot, terms);
                by_time.push((time_key(item.timestamp), key, slot));
                index.key_sum = index.key_sum.wrapping_add(key);
                let id = IdKey::of(&item.item_id);
                index.slots.insert(id.clone(), slot);
                index.docs.push(Some(SlotDoc {
                    id,
                    timestamp: item.timestamp,
                    key,
                }));
            }
        }
        by_time.sort_unstable();
        index.by_time = by_time.into_iter().collect();
        index.dirty = true;
        index
    }

    /// The index a saved file held (`keyword_file::read`), checked against `pool` document by
    /// document: a slot is kept only when the pool holds its id with the same text (length,
    /// CRC32 and hash) and creation time; the others are removed and every pool item not kept
    /// is analysed and added, as a rebuild would. Returns the index and how many documents
    /// were repaired; `None` when the slots and the BM25 documents disagree (a file no writer
    /// of this code makes).
    pub(crate) fn from_saved(
        saved: Vec<Option<crate::keyword_file::SavedDoc>>,
        bm25: Bm25Index,
        pool: &Pool,
    ) -> Option<(KeywordIndex, usize)> {
        use rayon::prelude::*;
        if bm25.len() != saved.iter().flatten().count() {
            return None;
        }
        let mut index = KeywordIndex {
            index: bm25,
            ..KeywordIndex::default()
        };
        index.slots.reserve(saved.len());
        let mut by_time = Vec::with_capacity(saved.len());
        // Whether each saved document is still its item's: on every core (a text key is a
        // CRC32 and a hash of the text).
        let current: Vec<bool> = saved
            .par_iter()
            .map(|doc| {
                doc.as_ref().is_some_and(|d| {
                    pool.row(&d.id).is_some_and(|row| {
                        let item = pool.item(row);
                        item.timestamp.to_bits() == d.timestamp.to_bits()
                            && coral_store::TextKey::of(&item.content) == d.text
                    })
                })
            })
            .collect();
        let mut stale = Vec::new();
        for (slot, doc) in saved.into_iter().enumerate() {
            let slot = slot as u32;
            let Some(doc) = doc else {
                if index.index.contains(slot) {
                    return None;
                }
                index.docs.push(None);
                index.free.push(slot);
                continue;
            };
            if !index.index.contains(slot) {
                return None;
            }
            let key = tiebreak_key(&doc.id);
            let id = IdKey::of(&doc.id);
            if index.slots.insert(id.clone(), slot).is_some() {
                return None;
            }
            if !current[slot as usize] {
                stale.push(id.clone());
            }
            by_time.push((time_key(doc.timestamp), key, slot));
            index.key_sum = index.key_sum.wrapping_add(key);
            index.docs.push(Some(SlotDoc {
                id,
                timestamp: doc.timestamp,
                key,
            }));
        }
        // Free slots are reused last first, as `remove` leaves them.
        index.free.reverse();
        by_time.sort_unstable();
        index.by_time = by_time.into_iter().collect();
        let mut repaired = stale.len();
        for id in &stale {
            index.remove(id);
        }
        for row in 0..pool.len() as u32 {
            if !index
                .slots
                .contains_key(&IdKey::of(&pool.item(row).item_id))
            {
                index.add(pool, row);
                repaired += 1;
            }
        }
        index.dirty = repaired > 0;
        Some((index, repaired))
    }

    /// Writes the slot table and the BM25 index for `keyword_file::save`, renumbered so that
    /// slot `i` is the `i`-th item of `pool` in file order (`Pool::file_order`): what an open
    /// after the checkpoint reads as row `i`, so that the index read back then is the one a
    /// build from those rows makes, posting lists in the same order. The slot count, then per
    /// slot 1, the item id (u16 length, bytes), the text key of its content and its creation
    /// time; then `Bm25Index::write_parts`. The index must match `pool`.
    pub(crate) fn write_to(
        &self,
        out: &mut dyn std::io::Write,
        pool: &Pool,
    ) -> std::io::Result<()> {
        let order = pool.file_order();
        if order.len() != self.slots.len() {
            return Err(std::io::Error::other(format!(
                "{} items in the pool, {} indexed",
                order.len(),
                self.slots.len()
            )));
        }
        let mut renumber = vec![u32::MAX; self.docs.len()];
        out.write_all(&(order.len() as u32).to_le_bytes())?;
        let mut buf = Vec::with_capacity(1 << 16);
        for (i, &row) in order.iter().enumerate() {
            let item = pool.item(row);
            let slot = *self.slots.get(&IdKey::of(&item.item_id)).ok_or_else(|| {
                std::io::Error::other(format!("{} is in the pool but not indexed", item.item_id))
            })?;
            renumber[slot as usize] = i as u32;
            let len = u16::try_from(item.item_id.len()).map_err(|_| {
                std::io::Error::other(format!("an id of {} bytes", item.item_id.len()))
            })?;
            buf.push(1);
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(item.item_id.as_bytes());
            buf.extend_from_slice(&coral_store::TextKey::of(&item.content).to_bytes());
            buf.extend_from_slice(&item.timestamp.to_bits().to_le_bytes());
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        out.write_all(&buf)?;
        self.index.write_parts(out, Some(&renumber))
    }

    /// Whether the index holds the same ids as `pool`, by count and by the wrapping sum of
    /// their tie-break keys (`Pool::key_sum`, O(1)). A mismatch means some change reached the
    /// store without passing through the commit door.
    pub(crate) fn matches(&self, pool: &Pool) -> bool {
        self.slots.len() == pool.len() && pool.key_sum() == self.key_sum
    }

    /// Brings `ids` in line with the pool: each is removed, and indexed again if the pool
    /// holds it.
    pub(crate) fn sync_ids<'a>(&mut self, pool: &Pool, ids: impl IntoIterator<Item = &'a str>) {
        for id in ids {
            self.remove(&IdKey::of(id));
            if let Some(row) = pool.row(id) {
                self.add(pool, row);
            }
        }
    }

    /// Brings the whole index in line with the pool: drops ids the pool no longer has, adds
    /// the ones it lacks.
    pub(crate) fn reconcile(&mut self, pool: &Pool) {
        self.reconciled += 1;
        let gone: Vec<IdKey> = self
            .slots
            .keys()
            .filter(|id| id.with_str(|id| pool.row(id)).is_none())
            .cloned()
            .collect();
        for id in &gone {
            self.remove(id);
        }
        for row in 0..pool.len() as u32 {
            if !self.slots.contains_key(&IdKey::of(&pool.item(row).item_id)) {
                self.add(pool, row);
            }
        }
    }

    /// The best `depth` items by BM25 among `allow` (all when `None`), best first; ties rank
    /// the newer item first, then by tie-break key. Each hit's `row` is a pool row and its
    /// `score` the BM25 score.
    pub(crate) fn rank(
        &self,
        pool: &Pool,
        query: &Bm25Query,
        depth: usize,
        allow: Option<&RoaringBitmap>,
    ) -> Vec<Scored> {
        let mut top = TopK::new(depth);
        for (slot, score) in self.index.scores(query, Bm25Params::default()) {
            let Some(doc) = &self.docs[slot as usize] else {
                continue;
            };
            // Only a filtered search needs the row now; otherwise only the winners do.
            if let Some(allow) = allow
                && !doc
                    .id
                    .with_str(|id| pool.row(id))
                    .is_some_and(|row| allow.contains(row))
            {
                continue;
            }
            if score > 0.0 {
                let hit = Scored {
                    row: slot,
                    score,
                    vector: 0.0,
                    jaccard: 0.0,
                    time: 0.0,
                };
                top.push_keyed(hit, doc.timestamp, doc.key);
            }
        }
        top.into_sorted_vec()
            .into_iter()
            .filter_map(|mut hit| {
                let doc = self.docs[hit.row as usize].as_ref()?;
                hit.row = doc.id.with_str(|id| pool.row(id))?;
                Some(hit)
            })
            .collect()
    }

    /// The query's BM25 sums by slot, for one pass over them ([`Bm25Scores::iter`]) and
    /// look-ups of single slots ([`Bm25Scores::get`], the number
    /// `Bm25Index::score` gives).
    pub(crate) fn sheet(&self, query: &Bm25Query) -> Bm25Scores<'_> {
        self.index.score_sheet(query, Bm25Params::default())
    }

    /// Whether a slot's item is among `allow` (all when `None`), for `touched` slots to be
    /// asked: with a filter smaller than that, its rows are mapped to slots once (a look-up
    /// per allowed row) instead of a look-up per slot asked.
    pub(crate) fn slot_filter<'a>(
        &'a self,
        pool: &'a Pool,
        allow: Option<&'a RoaringBitmap>,
        touched: usize,
    ) -> SlotFilter<'a> {
        match allow {
            None => SlotFilter::All,
            Some(allow) if allow.len() < touched as u64 => {
                let mut slots = vec![false; self.docs.len()];
                for row in allow.iter().filter(|&r| (r as usize) < pool.len()) {
                    if let Some(&slot) = self.slots.get(&IdKey::of(&pool.item(row).item_id)) {
                        slots[slot as usize] = true;
                    }
                }
                SlotFilter::Slots(slots)
            }
            Some(allow) => SlotFilter::Rows {
                index: self,
                pool,
                allow,
            },
        }
    }

    /// The pool row of a slot's item.
    pub(crate) fn row_of(&self, pool: &Pool, slot: u32) -> Option<u32> {
        let doc = self.docs.get(slot as usize)?.as_ref()?;
        doc.id.with_str(|id| pool.row(id))
    }

    /// The items created just before and just after a slot's, if within `gap` seconds of it.
    /// Items created at the same moment are not each other's neighbours: their order is not
    /// known (a pool keeps no insertion order), and a batch imported with dates only
    /// (MADial's memories, all at midnight) is no conversation. (Measured on MADial zh,
    /// recall@5: 56.5 with same-moment neighbours, 56.1 without, hash vectors; 63.3 and 63.2
    /// with USE: noise either way, so the rule follows what is known.)
    pub(crate) fn neighbours(&self, slot: u32, gap: f64) -> [Option<u32>; 2] {
        let Some(Some(doc)) = self.docs.get(slot as usize) else {
            return [None, None];
        };
        let here = time_key(doc.timestamp);
        let gap = time_key(gap.max(0.0));
        let near = |e: &&(i64, u64, u32)| (e.0 - here).abs() <= gap;
        let before = self
            .by_time
            .range(..(here, 0, 0))
            .next_back()
            .filter(near)
            .map(|e| e.2);
        let after = self
            .by_time
            .range((here.saturating_add(1), 0, 0)..)
            .next()
            .filter(near)
            .map(|e| e.2);
        [before, after]
    }

    /// Slots of the items created in `start..end`, newest first by millisecond, each with its
    /// millisecond key; the range is widened by a millisecond on each side, so the caller
    /// checks exact times. O(log n + items returned), not a pass over the pool.
    pub(crate) fn created_between(
        &self,
        start: f64,
        end: f64,
    ) -> impl Iterator<Item = (i64, u32)> + '_ {
        let lo = time_key(start).saturating_sub(1);
        let hi = time_key(end).saturating_add(1).max(lo);
        self.by_time
            .range((lo, 0, 0)..=(hi, u64::MAX, u32::MAX))
            .rev()
            .map(|e| (e.0, e.2))
    }

    /// The share of the query's term weight an item matches (`Bm25Index::coverage_of`), by
    /// slot.
    pub(crate) fn slot_coverage(
        &self,
        query: &Bm25Query,
        count_absent: bool,
    ) -> impl Fn(u32) -> f64 + '_ {
        self.index.coverage_of(query, count_absent)
    }

    /// The BM25 score of one item (0 when it is not indexed or shares no term).
    pub(crate) fn score(&self, query: &Bm25Query, id: &str) -> f64 {
        self.slots.get(&IdKey::of(id)).map_or(0.0, |&slot| {
            self.index.score(query, Bm25Params::default(), slot)
        })
    }

    /// Per item id, its terms and their frequencies: what the index holds, independent of
    /// slots (for comparing an index kept up to date with a fresh one).
    #[cfg(test)]
    pub(crate) fn contents(&self) -> std::collections::BTreeMap<String, Vec<(String, u32)>> {
        self.slots
            .iter()
            .map(|(id, &slot)| {
                let terms = self.index.doc_terms(slot).unwrap_or_default();
                let terms = terms.into_iter().map(|(t, f)| (t.to_string(), f)).collect();
                (id.to_string(), terms)
            })
            .collect()
    }

    fn add(&mut self, pool: &Pool, row: u32) {
        let item = pool.item(row);
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.docs.push(None);
                (self.docs.len() - 1) as u32
            }
        };
        self.index.insert(slot, search_terms(&item.content));
        self.dirty = true;
        let key = tiebreak_key(&item.item_id);
        self.by_time.insert((time_key(item.timestamp), key, slot));
        self.key_sum = self.key_sum.wrapping_add(key);
        let id = IdKey::of(&item.item_id);
        self.slots.insert(id.clone(), slot);
        self.docs[slot as usize] = Some(SlotDoc {
            id,
            timestamp: item.timestamp,
            key,
        });
    }

    fn remove(&mut self, id: &IdKey) {
        if let Some(slot) = self.slots.remove(id) {
            self.index.remove(slot);
            self.dirty = true;
            if let Some(doc) = self.docs[slot as usize].take() {
                self.key_sum = self.key_sum.wrapping_sub(doc.key);
                self.by_time
                    .remove(&(time_key(doc.timestamp), doc.key, slot));
            }
            self.free.push(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use coral_store::Record;

    use coral_config::{Config, RetrievalMode};
    use coral_embed::HashEmbedder;

    use crate::engine::Engine;
    use crate::limits::unix_now;
    use crate::types::{InsertOptions, SearchOptions};

    const NOW: f64 = 1_775_822_400.0;
    const DAY: f64 = 86_400.0;

    fn config(dir: &Path, mode: &str) -> Config {
        let mut config = Config {
            base_dir: dir.to_path_buf(),
            ..Config::default()
        };
        config.storage.sync = "never".into();
        config.retrieval.mode = mode.parse().unwrap();
        // Distinct test texts share words; keep them apart.
        config.memory.sim_threshold_hot = 0.99;
        config
    }

    /// A store in `mode`; outside weighted mode its index is built at once (as the first
    /// search would), so every later mutation must keep it in step.
    fn open(dir: &Path, mode: &str) -> Engine {
        let coral = Engine::open(config(dir, mode), Arc::new(HashEmbedder::new(64).unwrap()))
            .unwrap()
            .0;
        if mode != "weighted" {
            coral.lock_raw().door.keywords();
        }
        coral
    }

    fn insert(coral: &Engine, text: &str, age_days: f64) -> String {
        let options = InsertOptions {
            timestamp: Some(NOW - age_days * DAY),
            now: Some(NOW),
            ..InsertOptions::default()
        };
        coral.insert_with(text, options).unwrap().id().to_string()
    }

    fn search(coral: &Engine, query: &str, k: usize) -> Vec<(String, f64)> {
        let options = SearchOptions {
            top_k: Some(k),
            now: Some(NOW),
            ..SearchOptions::default()
        };
        let hits = coral.search_with(query, options).unwrap();
        hits.into_iter()
            .map(|h| (h.item.item_id, h.score))
            .collect()
    }

    /// The index kept up to date by the mutation paths equals one built fresh from the pool,
    /// and no repair was needed to get there.
    fn assert_fresh(coral: &Engine) {
        let engine = coral.lock_raw();
        let pool = engine.door.view().pool();
        let kept = engine
            .door
            .keyword_index()
            .expect("rrf mode keeps an index");
        assert_eq!(
            kept.reconciled, 0,
            "a mutation path bypassed the commit door"
        );
        assert!(kept.matches(pool));
        assert_eq!(kept.contents(), KeywordIndex::build(pool).contents());
        assert_eq!(kept.contents().len(), pool.len());
    }

    fn texts(n: usize) -> Vec<String> {
        let topics = [
            "拿铁咖啡",
            "爬山看日出",
            "formal manuals",
            "火锅 麻辣",
            "rust code review",
        ];
        (0..n)
            .map(|i| {
                format!(
                    "memory {i} about {} number{i} 第{i}条",
                    topics[i % topics.len()]
                )
            })
            .collect()
    }

    struct Summarizer;

    impl coral_heat::Llm for Summarizer {
        fn summarize(&self, texts: &[&str]) -> coral_heat::Result<String> {
            Ok(format!(
                "summary of {} memories about 拿铁咖啡",
                texts.len()
            ))
        }
    }

    #[test]
    fn the_chunked_build_is_the_one_by_one_build() {
        let dir = tempfile::tempdir().unwrap();
        let coral = open(dir.path(), "hybrid");
        for (i, t) in texts(23).iter().enumerate() {
            insert(&coral, t, i as f64 * 0.5);
        }
        let engine = coral.lock_raw();
        let pool = engine.door.view().pool();
        let mut one_by_one = KeywordIndex::default();
        for row in 0..pool.len() as u32 {
            one_by_one.add(pool, row);
        }
        for chunk in [1, 5, 16_384] {
            let built = KeywordIndex::build_in_chunks(pool, chunk);
            assert_eq!(built.contents(), one_by_one.contents(), "chunk {chunk}");
            assert_eq!(built.by_time, one_by_one.by_time, "chunk {chunk}");
            assert_eq!(built.key_sum, one_by_one.key_sum);
            let slots = |k: &KeywordIndex| {
                let mut v: Vec<(String, u32)> =
                    k.slots.iter().map(|(id, &s)| (id.to_string(), s)).collect();
                v.sort();
                v
            };
            assert_eq!(slots(&built), slots(&one_by_one));
            let query = Bm25Query::from_text("rust code review 拿铁");
            assert_eq!(
                built.rank(pool, &query, 10, None),
                one_by_one.rank(pool, &query, 10, None)
            );
        }
    }

    /// Both forms of the slot filter (allowed rows mapped to slots, or each slot's row looked
    /// up) say what the row says, after deletes have moved rows and reused slots.
    #[test]
    fn slot_filters_agree_with_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let coral = open(dir.path(), "hybrid");
        let ids: Vec<String> = texts(60)
            .iter()
            .enumerate()
            .map(|(i, t)| insert(&coral, t, i as f64 * 0.1))
            .collect();
        for id in ids.iter().step_by(7) {
            assert!(coral.delete(id).unwrap());
        }
        for t in texts(70).iter().skip(60) {
            insert(&coral, t, 0.0);
        }
        let engine = coral.lock_raw();
        let pool = engine.door.view().pool();
        let index = engine
            .door
            .keyword_index()
            .expect("hybrid mode keeps an index");
        let n = pool.len() as u32;
        let allows: [RoaringBitmap; 3] = [
            (0..n).filter(|r| r % 3 == 0).collect(),
            (0..n).filter(|&r| r != 5).collect(),
            [2u32].into_iter().collect(),
        ];
        for allow in &allows {
            let slots = index.slot_filter(pool, Some(allow), usize::MAX);
            let rows = index.slot_filter(pool, Some(allow), 0);
            assert!(matches!(slots, SlotFilter::Slots(_)));
            assert!(matches!(rows, SlotFilter::Rows { .. }));
            let mut passed = 0;
            for slot in 0..index.docs.len() as u32 + 2 {
                let want = index.row_of(pool, slot).is_some_and(|r| allow.contains(r));
                assert_eq!(slots.allows(slot), want, "slot {slot}");
                assert_eq!(rows.allows(slot), want, "slot {slot}");
                passed += usize::from(want);
            }
            assert_eq!(passed as u64, allow.len());
        }
    }

    #[test]
    fn follows_insert_delete_evict_distill_import_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let coral = open(dir.path(), "rrf");
        assert_fresh(&coral);
        let ids: Vec<String> = texts(40)
            .iter()
            .enumerate()
            .map(|(i, t)| insert(&coral, t, i as f64 * 0.1))
            .collect();
        assert_fresh(&coral);

        assert!(coral.delete(&ids[3]).unwrap());
        assert!(coral.delete(&ids[39]).unwrap());
        coral.mark_important(&ids[5], 0.9).unwrap();
        assert_fresh(&coral);
        assert!(search(&coral, "number3", 10).iter().all(|h| h.0 != ids[3]));

        // Old items age out of the hot tier; similar ones distil into one summary.
        for i in 0..4 {
            insert(&coral, &format!("用户喜欢喝冰镇拿铁咖啡 第{i}次"), 30.0);
        }
        assert_fresh(&coral);
        assert!(coral.distill_with(&Summarizer, NOW).unwrap() > 0);
        assert_fresh(&coral);
        let top = coral
            .search_with(
                "summary",
                SearchOptions {
                    top_k: Some(1),
                    now: Some(NOW),
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(top[0].item.content.starts_with("summary of"));

        // A lower capacity evicts at once.
        let mut lower = coral.config().as_ref().clone();
        lower.memory.capacity_threshold = 12;
        coral.apply_config(lower, unix_now(), true).unwrap();
        assert!(coral.stats(0).total <= 12 + 1);
        assert_fresh(&coral);

        // Import from another directory's compatible files.
        let other_dir = tempfile::tempdir().unwrap();
        let other = open(other_dir.path(), "weighted");
        insert(&other, "imported memory about sailing 航海", 1.0);
        insert(&other, "imported memory about chess 国际象棋", 1.0);
        other.close().unwrap();
        let source = config(other_dir.path(), "weighted").store_paths().dir;
        let report = coral.import_python_dir(&source, |_, _| {}).unwrap();
        assert_eq!(report.imported, 2);
        assert_fresh(&coral);
        assert_eq!(search(&coral, "航海", 1).len(), 1);

        let before = search(&coral, "拿铁咖啡 rust review", 8);
        coral.close().unwrap();
        let coral = open(dir.path(), "rrf");
        assert_fresh(&coral);
        let after = search(&coral, "拿铁咖啡 rust review", 8);
        assert_eq!(
            before.iter().map(|h| &h.0).collect::<Vec<_>>(),
            after.iter().map(|h| &h.0).collect::<Vec<_>>()
        );
    }

    #[test]
    fn follows_other_processes_and_repairs_a_bypass() {
        let dir = tempfile::tempdir().unwrap();
        let a = open(dir.path(), "rrf");
        let b = open(dir.path(), "rrf");
        let x = insert(&b, "written by b about 帆船 sailing", 1.0);
        assert_eq!(search(&a, "帆船", 5)[0].0, x);
        assert_fresh(&a);
        assert!(b.delete(&x).unwrap());
        // a catches up at its next call (the lock), before any search.
        assert_fresh(&a);
        assert!(search(&a, "帆船", 5).is_empty());

        // A checkpoint by b makes a reload everything: the index is rebuilt on demand.
        insert(&b, "another one 冲浪 surfing", 1.0);
        b.flush().unwrap();
        let found = search(&a, "冲浪", 5);
        assert_eq!(found.len(), 1);
        assert_fresh(&a);

        // A change that skips the door is caught by the fingerprint and repaired.
        let id = found[0].0.clone();
        {
            let mut engine = a.lock_raw();
            engine
                .door
                .commit_bypassing_indexes(vec![Record::Delete { id }])
                .unwrap();
            let pool = engine.door.view().pool();
            assert!(!engine.door.keyword_index().unwrap().matches(pool));
        }
        assert!(search(&a, "冲浪", 5).is_empty());
        let engine = a.lock_raw();
        let kept = engine.door.keyword_index().unwrap();
        assert_eq!(kept.reconciled, 1);
        assert_eq!(
            kept.contents(),
            KeywordIndex::build(engine.door.view().pool()).contents()
        );
    }

    #[test]
    fn weighted_mode_keeps_no_index_and_rrf_builds_it_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let coral = open(dir.path(), "weighted");
        insert(&coral, "用户喜欢喝冰镇拿铁咖啡", 1.0);
        assert!(coral.lock_raw().door.keyword_index().is_none());
        let mut rrf = coral.config().as_ref().clone();
        rrf.retrieval.mode = RetrievalMode::Rrf;
        coral.apply_config(rrf, unix_now(), true).unwrap();
        assert_eq!(search(&coral, "拿铁", 1).len(), 1);
        assert_fresh(&coral);
        let mut weighted = coral.config().as_ref().clone();
        weighted.retrieval.mode = RetrievalMode::Weighted;
        coral.apply_config(weighted, unix_now(), true).unwrap();
        search(&coral, "拿铁", 1);
        assert!(coral.lock_raw().door.keyword_index().is_none());
    }
}
