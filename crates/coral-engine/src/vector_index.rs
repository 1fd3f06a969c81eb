//! The pool's approximate vector index (docs/ann.md): a `coral_ann::AnnIndex` of every stored
//! vector, kept in step with the store through the commit door like the keyword index, used
//! for the vector ranking once the searchable pool reaches `retrieval.ann_threshold` items.
//!
//! Pool rows move when an item is removed (the last row is swapped into the hole), so the graph
//! labels vectors by a slot of its own per item id, and each slot remembers its item's current
//! row. A batch of changes can only move items into the holes its removals left, so after each
//! batch the rows at those holes are looked up again (`sync_ids`); a lookup also checks the
//! row's tie-break key, and falls back to the id if they disagree. The fingerprint of the
//! keyword index (item count and sum of tie-break keys) catches anything that bypassed the door.
//!
//! Two kinds, chosen per pool from its vectors when the index is built (docs/ann.md, "Which
//! path"): when at most `SPARSE_DENSITY` of the components of a sample of the stored vectors
//! are non-zero (the hash embedder's), an exact sparse inverted index (`coral_ann::SparseIndex`,
//! its top k identical to a full scan's); otherwise the HNSW graph. Both are labelled by slot.
//!
//! The graph is saved beside the data as `coral_ann.idx` (derived, never trusted over the journal): the file
//! carries the embedder and dimension it was built for and, per slot, the item id and a CRC32 of
//! its vector. Loading checks every pool item against it (present, same vector) and repairs the
//! difference, so a file saved before the last changes, or by another process, is caught up
//! rather than believed; a file that is damaged, torn, of another format or embedder is
//! rebuilt from the pool.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use coral_ann::{AnnIndex, Filter, Params, Query, SparseIndex};
use coral_score::{Scored, Spread, TopK};
use coral_store::Pool;

use crate::id_key::IdKey;
use crate::pool_rows::row_dot;
use roaring::RoaringBitmap;

/// The file beside the data.
pub(crate) const FILE_NAME: &str = "coral_ann.idx";

/// Rows sampled to estimate the spread of the query's cosines over the searchable pool (the
/// hybrid ranking's z-scores; an exact spread would be the very pass the index avoids). With
/// 2,048 rows the standard error of the mean is about 2 % of a spread and of the spread about
/// 1.6 %; the order within the vector ranking does not depend on it at all.
const SPREAD_SAMPLES: u64 = 2048;

/// A filter admitting at most this share of the pool is scored exactly over the rows it
/// admits (`coral_score::rank_lists` with `allow`): a traversal that must skip 19 of 20 nodes
/// visits about as many (docs/ann.md, "Filters").
pub(crate) const EXACT_SHARE: f64 = 0.05;

/// The pool is indexed sparsely (and its vectors held sparse, `coral_store::Pool::set_compact`)
/// when at most this share of its vectors' components is non-zero. The walk reads about
/// `density² · dim` entries per vector where a scan reads `dim` values; at 1M hash vectors of
/// 384 dims the density measured 0.067 (docs/ann.md, "Which path"), while dense model vectors
/// have density 1. One value with the store's, which loads a large sparse pool compact.
pub(crate) use coral_store::SPARSE_DENSITY;

/// Rows sampled to measure the density of the pool's vectors.
const DENSITY_SAMPLES: u64 = 4096;

/// The index proper, labelled by slot.
enum Backend {
    /// Both boxed: the structs are a few hundred bytes each and of different sizes.
    Graph(Box<AnnIndex>),
    Sparse(Box<SparseIndex>),
}

impl Backend {
    fn insert(&mut self, label: u32, v: &[f32]) -> coral_ann::Result<()> {
        match self {
            Backend::Graph(g) => g.insert(label, v),
            Backend::Sparse(s) => s.insert(label, v),
        }
    }

    fn remove(&mut self, label: u32) -> bool {
        match self {
            Backend::Graph(g) => g.remove(label),
            Backend::Sparse(s) => s.remove(label),
        }
    }

    fn contains(&self, label: u32) -> bool {
        match self {
            Backend::Graph(g) => g.contains(label),
            Backend::Sparse(s) => s.contains(label),
        }
    }

    fn len(&self) -> usize {
        match self {
            Backend::Graph(g) => g.len(),
            Backend::Sparse(s) => s.len(),
        }
    }

    fn labels(&self) -> Vec<u32> {
        match self {
            Backend::Graph(g) => g.labels().collect(),
            Backend::Sparse(s) => s.labels().collect(),
        }
    }
}

/// Share of non-zero components over an even sample of the pool's stored vectors; `None`
/// when it holds none.
pub(crate) fn pool_density(pool: &Pool) -> Option<f64> {
    let len = pool.len() as u64;
    let samples = DENSITY_SAMPLES.min(len);
    let (mut nonzero, mut seen) = (0usize, 0usize);
    for i in 0..samples {
        let row = (i * len / samples) as u32;
        if pool.missing_vectors().contains(row) {
            continue;
        }
        let v = pool.vector(row).to_dense(pool.dim());
        nonzero += v.iter().filter(|x| **x != 0.0).count();
        seen += v.len();
    }
    (seen > 0).then(|| nonzero as f64 / seen as f64)
}

/// Whether a pool's vectors are sparse enough for the sparse index.
fn is_sparse(pool: &Pool) -> bool {
    pool_density(pool).is_some_and(|d| d <= SPARSE_DENSITY)
}

/// One indexed item.
#[derive(Debug)]
struct Slot {
    id: IdKey,
    /// Tie-break key of the id (validates `row`).
    key: u64,
    /// Its pool row as of the last change seen.
    row: u32,
    /// CRC32 of its vector (0 and no graph node when the vector is missing).
    sum: u32,
}

/// What loading or building the index did, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorIndexReport {
    /// Vectors in the index.
    pub vectors: usize,
    /// Whether a saved file was loaded (else the index was built from the pool).
    pub loaded: bool,
    /// Whether it is the exact sparse index (else the graph).
    pub sparse: bool,
    /// Items the loaded file did not have right (added, removed or re-embedded since it was
    /// saved), repaired from the pool.
    pub repaired: usize,
}

/// The approximate index of the pool's vectors, by item id.
pub(crate) struct VectorIndex {
    ann: Backend,
    /// The embedder whose vectors these are.
    embedder: String,
    slots: HashMap<IdKey, u32>,
    docs: Vec<Option<Slot>>,
    free: Vec<u32>,
    key_sum: u64,
    /// Changed since it was last saved or loaded.
    dirty: bool,
    /// Times a full reconcile was needed (0 unless a change bypassed the door).
    pub(crate) reconciled: u64,
}

/// CRC32 of a vector's little-endian bytes, fed 256 values at a time (a call per value made
/// this most of the cost of summing a 384-dim row).
fn vector_sum(v: &[f32]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    let mut buf = [0u8; 1024];
    for chunk in v.chunks(256) {
        for (i, x) in chunk.iter().enumerate() {
            buf[4 * i..4 * i + 4].copy_from_slice(&x.to_le_bytes());
        }
        h.update(&buf[..4 * chunk.len()]);
    }
    h.finalize()
}

impl VectorIndex {
    fn empty(dim: usize, embedder: &str, sparse: bool) -> Option<VectorIndex> {
        let ann = if sparse {
            Backend::Sparse(Box::new(SparseIndex::new(dim).ok()?))
        } else {
            Backend::Graph(Box::new(AnnIndex::new(dim, Params::default()).ok()?))
        };
        Some(VectorIndex {
            ann,
            embedder: embedder.to_string(),
            slots: HashMap::new(),
            docs: Vec::new(),
            free: Vec::new(),
            key_sum: 0,
            dirty: true,
            reconciled: 0,
        })
    }

    /// The index of every vector in `pool`, made by `embedder`, of the kind its vectors'
    /// density calls for; `progress(done, total)` is called every 4,096 items. `None` when
    /// the pool has no vectors (dimension 0).
    pub(crate) fn build(
        pool: &Pool,
        embedder: &str,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Option<VectorIndex> {
        use rayon::prelude::*;
        let mut index = VectorIndex::empty(pool.dim(), embedder, is_sparse(pool))?;
        let total = pool.len();
        let dim = pool.dim();
        progress(0, total);
        // Each chunk's rows made dense and summed on every core, then inserted in row order
        // (the index is a function of its inserts in order).
        const CHUNK: usize = 4096;
        for start in (0..total).step_by(CHUNK) {
            let end = (start + CHUNK).min(total);
            let prepared: Vec<Option<(Cow<'_, [f32]>, u32)>> = (start..end)
                .into_par_iter()
                .map(|row| {
                    let row = row as u32;
                    (!pool.missing_vectors().contains(row)).then(|| {
                        let v = pool.vector(row).to_dense(dim);
                        let sum = vector_sum(&v);
                        (v, sum)
                    })
                })
                .collect();
            for (i, vector) in prepared.into_iter().enumerate() {
                index.add_prepared(pool, (start + i) as u32, vector);
            }
            if end.is_multiple_of(CHUNK) {
                progress(end, total);
            }
        }
        progress(total, total);
        Some(index)
    }

    /// Vectors in the index.
    pub(crate) fn vectors(&self) -> usize {
        self.ann.len()
    }

    /// Whether it is the sparse index.
    pub(crate) fn is_sparse(&self) -> bool {
        matches!(self.ann, Backend::Sparse(_))
    }

    /// The embedder the index was built for.
    pub(crate) fn embedder(&self) -> &str {
        &self.embedder
    }

    /// Same ids as the pool (count and sum of tie-break keys, O(1)).
    pub(crate) fn matches(&self, pool: &Pool) -> bool {
        self.slots.len() == pool.len() && self.key_sum == pool.key_sum()
    }

    fn add(&mut self, pool: &Pool, row: u32) {
        let vector = (!pool.missing_vectors().contains(row)).then(|| {
            let v = pool.vector(row).to_dense(pool.dim());
            let sum = vector_sum(&v);
            (v, sum)
        });
        self.add_prepared(pool, row, vector);
    }

    /// [`VectorIndex::add`] with the row's dense vector and its sum already made (`None` when
    /// the row has no vector).
    fn add_prepared(&mut self, pool: &Pool, row: u32, vector: Option<(Cow<'_, [f32]>, u32)>) {
        let item = pool.item(row);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.docs.push(None);
                (self.docs.len() - 1) as u32
            }
        };
        let key = pool.tiebreaks()[row as usize];
        let sum = match vector {
            None => {
                self.ann.remove(slot);
                0
            }
            Some((v, sum)) => {
                // The dimension is the pool's, so this cannot fail.
                let _ = self.ann.insert(slot, &v);
                sum
            }
        };
        self.key_sum = self.key_sum.wrapping_add(key);
        let id = IdKey::of(&item.item_id);
        self.slots.insert(id.clone(), slot);
        self.docs[slot as usize] = Some(Slot { id, key, row, sum });
        self.dirty = true;
    }

    /// Puts `row`'s vector in the graph under `slot` (or takes the slot out when the vector is
    /// missing); returns the vector's sum.
    fn place(&mut self, pool: &Pool, slot: u32, row: u32) -> u32 {
        if pool.missing_vectors().contains(row) {
            self.ann.remove(slot);
            return 0;
        }
        let v = pool.vector(row).to_dense(pool.dim());
        // The dimension is the pool's, so this cannot fail.
        let _ = self.ann.insert(slot, &v);
        vector_sum(&v)
    }

    fn remove(&mut self, id: &IdKey) -> Option<u32> {
        let slot = self.slots.remove(id)?;
        self.ann.remove(slot);
        let doc = self.docs[slot as usize].take()?;
        self.key_sum = self.key_sum.wrapping_sub(doc.key);
        self.free.push(slot);
        self.dirty = true;
        Some(doc.row)
    }

    /// Brings `ids` in line with the pool after a batch of changes, and the rows of the items
    /// the batch moved (into the holes its removals left).
    pub(crate) fn sync_ids<'a>(&mut self, pool: &Pool, ids: impl IntoIterator<Item = &'a str>) {
        let mut holes: Vec<u32> = Vec::new();
        for id in ids {
            let key = IdKey::of(id);
            match (self.slots.get(&key).copied(), pool.row(id)) {
                (Some(slot), Some(row)) => {
                    let missing = pool.missing_vectors().contains(row);
                    let sum = if missing {
                        0
                    } else {
                        vector_sum(&pool.vector(row).to_dense(pool.dim()))
                    };
                    let Some(doc) = self.docs[slot as usize].as_mut() else {
                        continue;
                    };
                    holes.push(doc.row);
                    doc.row = row;
                    let changed = doc.sum != sum || self.ann.contains(slot) == missing;
                    if changed {
                        doc.sum = sum;
                        self.place(pool, slot, row);
                        self.dirty = true;
                    }
                }
                (Some(_), None) => holes.extend(self.remove(&key)),
                (None, Some(row)) => self.add(pool, row),
                (None, None) => {}
            }
        }
        for p in holes {
            if (p as usize) < pool.len()
                && let Some(&slot) = self.slots.get(&IdKey::of(&pool.item(p).item_id))
                && let Some(doc) = self.docs[slot as usize].as_mut()
            {
                doc.row = p;
            }
        }
    }

    /// A row's vector was set (re-embedding, a missing vector filled in).
    pub(crate) fn vector_set(&mut self, pool: &Pool, row: u32) {
        let id = pool.item(row).item_id.clone();
        self.sync_ids(pool, [id.as_str()]);
    }

    /// Brings the whole index in line with the pool: every id, row and vector checked.
    /// Returns how many items needed a change.
    pub(crate) fn reconcile(&mut self, pool: &Pool) -> usize {
        self.reconciled += 1;
        let gone: Vec<IdKey> = self
            .slots
            .keys()
            .filter(|id| id.with_str(|id| pool.row(id)).is_none())
            .cloned()
            .collect();
        let mut repaired = gone.len();
        for id in &gone {
            self.remove(id);
        }
        for row in 0..pool.len() as u32 {
            let id = IdKey::of(&pool.item(row).item_id);
            match self.slots.get(&id).copied() {
                None => {
                    self.add(pool, row);
                    repaired += 1;
                }
                Some(slot) => {
                    let missing = pool.missing_vectors().contains(row);
                    let sum = if missing {
                        0
                    } else {
                        vector_sum(&pool.vector(row).to_dense(pool.dim()))
                    };
                    let Some(doc) = self.docs[slot as usize].as_mut() else {
                        continue;
                    };
                    doc.row = row;
                    if doc.sum != sum || self.ann.contains(slot) == missing {
                        doc.sum = sum;
                        self.place(pool, slot, row);
                        repaired += 1;
                    }
                }
            }
        }
        // A graph node whose slot holds no item (a file written by a bug): take it out.
        let orphans: Vec<u32> = self
            .ann
            .labels()
            .into_iter()
            .filter(|&l| self.docs.get(l as usize).is_none_or(Option::is_none))
            .collect();
        for l in orphans {
            self.ann.remove(l);
            repaired += 1;
        }
        if repaired > 0 {
            self.dirty = true;
        }
        repaired
    }

    /// The pool row of a slot's item.
    #[inline]
    fn row_of(&self, pool: &Pool, slot: u32) -> Option<u32> {
        let doc = self.docs.get(slot as usize)?.as_ref()?;
        if pool.tiebreaks().get(doc.row as usize) == Some(&doc.key) {
            Some(doc.row)
        } else {
            doc.id.with_str(|id| pool.row(id))
        }
    }

    /// The best `depth` rows by dot product with `query` among `allow` (all when `None`),
    /// best first, positive products only, ties like `coral_score::rank_lists` (newer, then
    /// smaller tie-break key); and the spread of the products over the searchable rows,
    /// estimated from an even sample. `ef` candidates are found on the graph and re-ranked
    /// by their exact f32 products.
    pub(crate) fn rank(
        &self,
        pool: &Pool,
        query: &[f32],
        depth: usize,
        ef: usize,
        allow: Option<&RoaringBitmap>,
    ) -> (Vec<Scored>, Spread) {
        let exact = |slot: u32| match self.row_of(pool, slot) {
            Some(r) => row_dot(query, pool.vector(r)),
            None => f32::NEG_INFINITY,
        };
        let accept = |slot: u32| {
            self.row_of(pool, slot)
                .is_some_and(|r| allow.is_none_or(|a| a.contains(r)))
        };
        let hits = match &self.ann {
            Backend::Graph(graph) => {
                let share = allow.map_or(1.0, |a| a.len() as f64 / pool.len().max(1) as f64);
                graph.search(
                    &Query {
                        vector: query,
                        k: depth,
                        ef: ef.max(depth),
                        filter: match allow {
                            None => Filter::All,
                            Some(_) => Filter::Accept(&accept, share),
                        },
                        exact_below: 0,
                    },
                    &exact,
                )
            }
            // Exact: every row the scan would rank (a positive product) within reach.
            Backend::Sparse(sparse) => sparse.search(
                query,
                depth,
                allow.map(|_| &accept as &dyn Fn(u32) -> bool),
                &exact,
            ),
        };
        let mut top = TopK::new(depth);
        for hit in hits {
            let Some(row) = self.row_of(pool, hit.label) else {
                continue;
            };
            // `> 0.0` also keeps NaN out, as the exact ranking does.
            if hit.score > 0.0 {
                let r = row as usize;
                let scored = Scored {
                    row,
                    score: f64::from(hit.score),
                    vector: hit.score,
                    jaccard: 0.0,
                    time: 0.0,
                };
                top.push_keyed(scored, pool.timestamps()[r], pool.tiebreaks()[r]);
            }
        }
        (top.into_sorted_vec(), sample_spread(pool, query, allow))
    }

    /// Saves the graph beside the data when it changed since it was loaded or last saved (the
    /// sparse index is not saved: building it is one pass over the vectors, 2.1 s at 1M by `cargo xtask sparse-walk`).
    pub(crate) fn save_if_changed(&mut self, dir: &Path) -> coral_ann::Result<()> {
        let Backend::Graph(graph) = &self.ann else {
            self.dirty = false;
            return Ok(());
        };
        if !self.dirty {
            return Ok(());
        }
        let mut payload = Vec::with_capacity(self.docs.len() * 24);
        for doc in &self.docs {
            match doc {
                None => payload.extend_from_slice(&u16::MAX.to_le_bytes()),
                Some(d) => {
                    let id = d.id.to_string();
                    let id = id.as_bytes();
                    let len = id.len().min(u16::MAX as usize - 1);
                    payload.extend_from_slice(&(len as u16).to_le_bytes());
                    payload.extend_from_slice(&id[..len]);
                    payload.extend_from_slice(&d.sum.to_le_bytes());
                }
            }
        }
        graph.save(
            &dir.join(FILE_NAME),
            &tag(&self.embedder, graph.dim()),
            &payload,
        )?;
        self.dirty = false;
        Ok(())
    }

    /// The saved index of `dir`, caught up with `pool`, when there is one for `embedder` and
    /// the pool's dimension; `None` when it is missing, damaged, torn, or of another format,
    /// embedder or dimension, or when the pool is sparse (the caller builds a new one).
    pub(crate) fn load(dir: &Path, pool: &Pool, embedder: &str) -> Option<(VectorIndex, usize)> {
        if is_sparse(pool) {
            return None;
        }
        let (ann, file_tag, payload) = AnnIndex::load(&dir.join(FILE_NAME)).ok()?;
        if file_tag != tag(embedder, pool.dim()) || ann.dim() != pool.dim() {
            return None;
        }
        let mut docs: Vec<Option<Slot>> = Vec::new();
        let mut at = 0usize;
        while at < payload.len() {
            let len = u16::from_le_bytes([*payload.get(at)?, *payload.get(at + 1)?]);
            at += 2;
            if len == u16::MAX {
                docs.push(None);
                continue;
            }
            let id = std::str::from_utf8(payload.get(at..at + len as usize)?).ok()?;
            at += len as usize;
            let s = payload.get(at..at + 4)?;
            at += 4;
            docs.push(Some(Slot {
                id: IdKey::of(id),
                key: coral_store::tiebreak_key(id),
                // Unknown until the reconcile below.
                row: u32::MAX,
                sum: u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
            }));
        }
        let mut slots = HashMap::with_capacity(docs.len());
        let mut free = Vec::new();
        let mut key_sum = 0u64;
        for (slot, doc) in docs.iter().enumerate() {
            match doc {
                Some(d) => {
                    if slots.insert(d.id.clone(), slot as u32).is_some() {
                        return None;
                    }
                    key_sum = key_sum.wrapping_add(d.key);
                }
                None => free.push(slot as u32),
            }
        }
        let mut index = VectorIndex {
            ann: Backend::Graph(Box::new(ann)),
            embedder: embedder.to_string(),
            slots,
            docs,
            free,
            key_sum,
            dirty: false,
            reconciled: 0,
        };
        let repaired = index.reconcile(pool);
        index.reconciled = 0;
        Some((index, repaired))
    }

    /// Per item id, its vector's sum and whether the graph holds it (tests compare an index
    /// kept up to date with a fresh one).
    #[cfg(test)]
    pub(crate) fn contents(&self) -> std::collections::BTreeMap<String, (u32, bool, u32)> {
        self.slots
            .iter()
            .map(|(id, &slot)| {
                let doc = self.docs[slot as usize].as_ref().expect("a slot's doc");
                (id.to_string(), (doc.sum, self.ann.contains(slot), doc.row))
            })
            .collect()
    }
}

/// What an index file is of: the format, embedder and dimension.
fn tag(embedder: &str, dim: usize) -> Vec<u8> {
    format!("coral pool vectors v1; embedder={embedder}; dim={dim}").into_bytes()
}

/// Mean and spread of the query's dot products over an even sample of the searchable rows.
fn sample_spread(pool: &Pool, query: &[f32], allow: Option<&RoaringBitmap>) -> Spread {
    let population = allow.map_or(pool.len() as u64, RoaringBitmap::len);
    let mut spread = Spread::default();
    if population == 0 {
        return spread;
    }
    let samples = SPREAD_SAMPLES.min(population);
    for i in 0..samples {
        let nth = (i * population / samples) as u32;
        let row = match allow {
            Some(a) => match a.select(nth) {
                Some(r) => r,
                None => continue,
            },
            None => nth,
        };
        if (row as usize) < pool.len() {
            spread.add(f64::from(row_dot(query, pool.vector(row))));
        }
    }
    spread
}

/// Whether and how a search uses the vector index (`retrieval.ann_threshold`, `ann_ef`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AnnUse<'a> {
    /// The embedder whose vectors the pool holds.
    pub(crate) embedder: &'a str,
    pub(crate) threshold: usize,
    pub(crate) ef: usize,
}

impl AnnUse<'_> {
    /// Whether a vector ranking over `population` searchable rows of a pool of `pool_len`
    /// uses the index: at or above the threshold, unless the rows are so few a share of the
    /// pool that the exact pass over just them is cheaper than a filtered traversal.
    pub(crate) fn applies(&self, population: u64, pool_len: usize) -> bool {
        self.threshold > 0
            && population >= self.threshold as u64
            && population as f64 > EXACT_SHARE * pool_len as f64
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use coral_config::Config;
    use coral_embed::HashEmbedder;

    use crate::engine::Engine;
    use crate::limits::unix_now;
    use crate::types::{InsertOptions, SearchOptions};

    const NOW: f64 = 1_775_822_400.0;

    /// The sum saved in `coral_ann.idx` is the CRC32 of the vector's little-endian bytes,
    /// whatever the length (files written before the sum was fed in blocks still match).
    #[test]
    fn vector_sums_are_the_crc_of_the_bytes() {
        for len in [0usize, 1, 255, 256, 257, 384, 512, 777] {
            let v: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            assert_eq!(vector_sum(&v), crc32fast::hash(&bytes), "len {len}");
        }
    }

    fn config(dir: &Path) -> Config {
        let mut config = Config {
            base_dir: dir.to_path_buf(),
            ..Config::default()
        };
        config.storage.sync = "never".into();
        config.memory.sim_threshold_hot = 0.99;
        config.retrieval.ann_threshold = 1;
        config.retrieval.hybrid.hash_vector = 1.0;
        config
    }

    fn open(dir: &Path) -> Engine {
        Engine::open(config(dir), Arc::new(HashEmbedder::new(32).unwrap()))
            .unwrap()
            .0
    }

    fn insert(coral: &Engine, text: &str) -> String {
        let options = InsertOptions {
            timestamp: Some(NOW - 3600.0),
            now: Some(NOW),
            ..InsertOptions::default()
        };
        coral.insert_with(text, options).unwrap().id().to_string()
    }

    fn search(coral: &Engine, query: &str) -> Vec<String> {
        let options = SearchOptions {
            top_k: Some(5),
            now: Some(NOW),
            ..SearchOptions::default()
        };
        let hits = coral.search_with(query, options).unwrap();
        hits.into_iter().map(|h| h.item.item_id).collect()
    }

    /// The index kept up to date equals one built fresh from the pool, rows included, and no
    /// repair was needed.
    fn assert_fresh(coral: &Engine) {
        let engine = coral.lock_raw();
        let pool = engine.door.view().pool();
        let kept = engine.door.vector_index().expect("an index");
        assert_eq!(kept.reconciled, 0, "a change bypassed the commit door");
        assert!(kept.matches(pool));
        let fresh = VectorIndex::build(pool, "hash", &mut |_, _| {}).unwrap();
        assert_eq!(kept.contents(), fresh.contents());
        assert_eq!(
            kept.vectors(),
            pool.len() - pool.missing_vectors().len() as usize
        );
    }

    fn texts(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("memory {i} about topic{} and word{} 第{i}条", i % 7, i % 11))
            .collect()
    }

    /// Hits with every score as bits, so that equal means byte-identical.
    fn scored(coral: &Engine, query: &str) -> Vec<(String, [u64; 4])> {
        let options = SearchOptions {
            top_k: Some(8),
            now: Some(NOW),
            ..SearchOptions::default()
        };
        let hits = coral.search_with(query, options).unwrap();
        hits.into_iter()
            .map(|h| {
                let s = h.scores;
                let bits = [
                    h.score.to_bits(),
                    s.vector.to_bits(),
                    s.jaccard.to_bits(),
                    s.bm25.unwrap_or(-1.0).to_bits(),
                ];
                (h.item.item_id, bits)
            })
            .collect()
    }

    #[test]
    fn a_compact_pool_gives_the_dense_pools_results_byte_for_byte() {
        let texts: Vec<String> = (0..90)
            .map(|i| {
                format!(
                    "note {i} on topic{} with word{} and more{}",
                    i % 7,
                    i % 11,
                    i % 5
                )
            })
            .collect();
        use coral_config::RetrievalMode;
        for mode in [
            RetrievalMode::Hybrid,
            RetrievalMode::Weighted,
            RetrievalMode::Rrf,
        ] {
            let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
            let open = |dir: &Path, threshold: usize| {
                let mut config = config(dir);
                config.retrieval.ann_threshold = threshold;
                config.retrieval.mode = mode;
                Engine::open(config, Arc::new(HashEmbedder::new(384).unwrap()))
                    .unwrap()
                    .0
            };
            // From 60 items the first holds its vectors sparse; the second never does.
            let compact = open(dirs[0].path(), 60);
            let dense = open(dirs[1].path(), 1_000_000);
            let is_compact = |c: &Engine| c.lock_raw().door.view().pool().is_compact();
            for (i, t) in texts.iter().enumerate() {
                insert(&compact, t);
                insert(&dense, t);
                assert_eq!(
                    is_compact(&compact),
                    i + 1 >= 60,
                    "{mode:?}: after {} items",
                    i + 1
                );
            }
            assert!(!is_compact(&dense));
            for q in ["topic3 word5", "more2 note", "word7 topic1 more4 note 12"] {
                assert_eq!(scored(&compact, q), scored(&dense, q), "{mode:?}: {q:?}");
            }
            // Below the threshold again: dense, as before.
            for id in compact
                .export()
                .iter()
                .take(40)
                .map(|h| h.item.item_id.clone())
            {
                compact.delete(&id).unwrap();
            }
            scored(&compact, "topic3");
            assert!(!is_compact(&compact), "{mode:?}");
        }
    }

    #[test]
    fn follows_inserts_deletes_eviction_and_other_processes() {
        let dir = tempfile::tempdir().unwrap();
        let coral = open(dir.path());
        let ids: Vec<String> = texts(60).iter().map(|t| insert(&coral, t)).collect();
        assert_eq!(search(&coral, "topic3 word5").len(), 5);
        assert_fresh(&coral);
        // Deletes move the last rows into the holes; several in one batch (eviction).
        for id in [&ids[0], &ids[59], &ids[30]] {
            assert!(coral.delete(id).unwrap());
        }
        assert_fresh(&coral);
        let mut lower = coral.config().as_ref().clone();
        lower.memory.capacity_threshold = 20;
        coral.apply_config(lower, unix_now(), true).unwrap();
        assert!(coral.stats(0).total <= 21);
        assert_fresh(&coral);
        assert!(search(&coral, "memory 30").iter().all(|id| id != &ids[30]));

        // Another process writes and deletes; this one follows at its next call.
        let other = open(dir.path());
        let x = insert(&other, "written by another process about sailing 帆船");
        let present = coral.export()[0].item.item_id.clone();
        assert!(other.delete(&present).unwrap());
        search(&coral, "帆船");
        assert_fresh(&coral);
        assert_eq!(search(&coral, "帆船 sailing")[0], x);
        drop(other);
    }

    #[test]
    fn a_saved_index_is_caught_up_never_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let coral = open(dir.path());
        let ids: Vec<String> = texts(40).iter().map(|t| insert(&coral, t)).collect();
        coral.prepare_vector_index(|_, _| {});
        coral.flush().unwrap();
        let file = coral.config().store_paths().dir.join(FILE_NAME);
        assert!(file.exists(), "the checkpoint saved the index");
        let saved = std::fs::read(&file).unwrap();
        // Changes after the save reach the journal only; the file is stale.
        coral.delete(&ids[3]).unwrap();
        let late = insert(&coral, "a late memory about kites 风筝");
        drop(coral);
        std::fs::write(&file, &saved).unwrap();
        let coral = open(dir.path());
        let report = coral.prepare_vector_index(|_, _| {});
        assert!(report.loaded);
        assert!(report.repaired >= 2, "{report:?}");
        assert_fresh(&coral);
        assert_eq!(search(&coral, "kites 风筝")[0], late);

        // Damaged, torn or foreign files are rebuilt from the pool.
        for bytes in [
            {
                let mut b = saved.clone();
                let mid = b.len() / 2;
                b[mid] ^= 1;
                b
            },
            saved[..saved.len() / 3].to_vec(),
        ] {
            std::fs::write(&file, &bytes).unwrap();
            let reopened = open(dir.path());
            let report = reopened.prepare_vector_index(|_, _| {});
            assert!(!report.loaded);
            assert_fresh(&reopened);
        }
    }
}
