//! The in-memory pool: every live item in dense, row-numbered, contiguous arrays.
//!
//! Rows are dense (a removal moves the last row into the hole), so the scoring pass reads one
//! vector matrix, one bitmap array and one timestamp array with no gaps. Row numbers are only
//! stable until the next removal; ids are the durable handle.

use std::collections::HashMap;
use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::bitmap_file::SavedBitmaps;
use crate::item::{Item, Tier};
use crate::vector_rows::{LoadedVectors, RowVector, SparseRows, VectorRows};

/// Computes an item's 2048-bit token map from its content. The store keeps the result next to
/// the vector and never interprets it.
pub type FeatureFn = Arc<dyn Fn(&str) -> [u64; 32] + Send + Sync>;

/// Dense arrays of the live items.
pub struct Pool {
    dim: usize,
    items: Vec<Item>,
    tiers: Vec<Tier>,
    vectors: VectorRows,
    bitmaps: Vec<[u64; 32]>,
    timestamps: Vec<f64>,
    tiebreaks: Vec<u64>,
    index: HashMap<String, u32>,
    tier_rows: [RoaringBitmap; 3],
    missing_vectors: RoaringBitmap,
    /// Wrapping sum of `tiebreaks`: with the length, the fingerprint derived indexes compare
    /// against in O(1) (a fold over a million keys cost about a millisecond a search).
    key_sum: u64,
    features: FeatureFn,
    /// Rows whose bitmap the last bulk load took from `coral_bitmaps.bin`.
    bitmaps_loaded: usize,
}

/// The tie-break key of an id: its value as hex when it is 16 hex digits (Coral's ids, so that
/// ordering by key is ordering by id), otherwise the FNV-1a hash of its bytes (stable, but not
/// alphabetical).
pub fn tiebreak_key(id: &str) -> u64 {
    if id.len() == 16
        && let Ok(v) = u64::from_str_radix(id, 16)
    {
        return v;
    }
    id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Pool {
    /// An empty pool for vectors of `dim`.
    pub fn new(dim: usize, features: FeatureFn) -> Pool {
        Pool {
            dim,
            items: Vec::new(),
            tiers: Vec::new(),
            vectors: VectorRows::Dense(Vec::new()),
            bitmaps: Vec::new(),
            timestamps: Vec::new(),
            tiebreaks: Vec::new(),
            index: HashMap::new(),
            tier_rows: Default::default(),
            missing_vectors: RoaringBitmap::new(),
            key_sum: 0,
            features,
            bitmaps_loaded: 0,
        }
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Live items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// No live items.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Row of an id.
    pub fn row(&self, id: &str) -> Option<u32> {
        self.index.get(id).copied()
    }

    /// Item at a row.
    pub fn item(&self, row: u32) -> &Item {
        &self.items[row as usize]
    }

    /// Tier of a row.
    pub fn tier(&self, row: u32) -> Tier {
        self.tiers[row as usize]
    }

    /// Vector of a row (zeros when missing), in the form the pool holds it.
    pub fn vector(&self, row: u32) -> RowVector<'_> {
        self.vectors.row(self.dim, row as usize)
    }

    /// All items, row order.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Row-major vector matrix, when the pool holds its vectors dense.
    pub fn dense_vectors(&self) -> Option<&[f32]> {
        match &self.vectors {
            VectorRows::Dense(m) => Some(m),
            VectorRows::Sparse(_) => None,
        }
    }

    /// The sparse rows, when the pool holds its vectors sparse.
    pub fn sparse_vectors(&self) -> Option<&SparseRows> {
        match &self.vectors {
            VectorRows::Dense(_) => None,
            VectorRows::Sparse(s) => Some(s),
        }
    }

    /// Whether the vectors are held in the sparse form.
    pub fn is_compact(&self) -> bool {
        self.vectors.is_sparse()
    }

    /// Share of non-zero vector components (over an even sample of at most 4,096 rows when
    /// dense; `None` for an empty pool).
    pub fn density(&self) -> Option<f64> {
        self.vectors.density(self.dim, self.len())
    }

    /// Bytes the vectors take (by capacity).
    pub fn vector_bytes(&self) -> usize {
        self.vectors.memory_bytes()
    }

    /// Holds the vectors in the sparse form (`true`) or dense (`false`); the values, and so
    /// every file written from them, stay the same. The facade keeps a pool sparse from its
    /// `retrieval.ann_threshold` when the vectors are sparse, and dense below it, where the
    /// exact scan reads the dense matrix. Returns whether the form changed.
    pub fn set_compact(&mut self, compact: bool) -> bool {
        if compact == self.is_compact() {
            return false;
        }
        let next = if compact {
            self.vectors
                .to_sparse(self.dim, self.len())
                .map(VectorRows::Sparse)
        } else {
            self.vectors.to_dense(self.dim).map(VectorRows::Dense)
        };
        match next {
            Some(v) => {
                self.vectors = v;
                true
            }
            None => false,
        }
    }

    /// The feature function's fingerprint (its bitmaps of fixed texts), which a saved
    /// bitmap file must carry to be used.
    pub(crate) fn feature_fingerprint(&self) -> u64 {
        crate::bitmap_file::fingerprint(&self.features)
    }

    /// Rows whose bitmap the open took from `coral_bitmaps.bin` rather than computing it from
    /// the text (docs/ann.md "Reopen").
    pub fn bitmaps_loaded(&self) -> usize {
        self.bitmaps_loaded
    }

    /// The rows of `tiers` in the order a checkpoint writes them, by creation time then id
    /// (the warm file holds the hot and warm tiers in one such list, the cold file the cold).
    pub fn rows_in_file_order(&self, tiers: &[Tier]) -> Vec<u32> {
        let mut rows: Vec<u32> = tiers
            .iter()
            .flat_map(|&t| self.tier_rows(t).iter())
            .collect();
        rows.sort_by(|&a, &b| {
            let (a, b) = (self.item(a), self.item(b));
            a.timestamp
                .total_cmp(&b.timestamp)
                .then_with(|| a.item_id.cmp(&b.item_id))
        });
        rows
    }

    /// Every row in the order an open after a checkpoint reads them back (the warm file's,
    /// then the cold file's): a pool read from those files has row `i` at position `i`.
    pub fn file_order(&self) -> Vec<u32> {
        let mut rows = self.rows_in_file_order(&[Tier::Hot, Tier::Warm]);
        rows.extend(self.rows_in_file_order(&[Tier::Cold]));
        rows
    }

    /// Token bitmaps by row.
    pub fn bitmaps(&self) -> &[[u64; 32]] {
        &self.bitmaps
    }

    /// Creation times by row.
    pub fn timestamps(&self) -> &[f64] {
        &self.timestamps
    }

    /// Tie-break keys by row (see [`tiebreak_key`]).
    pub fn tiebreaks(&self) -> &[u64] {
        &self.tiebreaks
    }

    /// Wrapping sum of the tie-break keys of every row: with [`Pool::len`], a fingerprint of
    /// which ids the pool holds, kept up to date in O(1).
    pub fn key_sum(&self) -> u64 {
        self.key_sum
    }

    /// Rows of one tier.
    pub fn tier_rows(&self, tier: Tier) -> &RoaringBitmap {
        &self.tier_rows[tier.index()]
    }

    /// Number of items in a tier.
    pub fn tier_len(&self, tier: Tier) -> usize {
        self.tier_rows[tier.index()].len() as usize
    }

    /// Rows whose vector is missing or unusable (zeros until set).
    pub fn missing_vectors(&self) -> &RoaringBitmap {
        &self.missing_vectors
    }

    /// The rows a search may return under the cold-tier settings (`retrieval.include_cold`,
    /// `memory.cold_scan_lines`): every hot and warm row, and the cold rows when
    /// `include_cold`, only the `newest_cold` most recently created ones when that is not 0.
    /// `None` when every row is allowed.
    pub fn cold_filter(&self, include_cold: bool, newest_cold: usize) -> Option<RoaringBitmap> {
        let cold = self.tier_rows(Tier::Cold);
        if include_cold && (newest_cold == 0 || cold.len() as usize <= newest_cold) {
            return None;
        }
        let mut allow: RoaringBitmap = (0..self.len() as u32).collect();
        allow -= cold;
        if include_cold {
            let mut by_age: Vec<u32> = cold.iter().collect();
            by_age.sort_by(|&a, &b| {
                self.timestamps[b as usize].total_cmp(&self.timestamps[a as usize])
            });
            allow.extend(by_age.into_iter().take(newest_cold));
        }
        Some(allow)
    }

    /// Insert or replace. An empty `vector` (or one of the wrong dim) marks it missing.
    pub fn upsert(&mut self, tier: Tier, item: Item, vector: &[f32]) -> u32 {
        let bitmap = (self.features)(&item.content);
        self.upsert_with_bitmap(tier, item, vector, bitmap)
    }

    pub(crate) fn upsert_with_bitmap(
        &mut self,
        tier: Tier,
        item: Item,
        vector: &[f32],
        bitmap: [u64; 32],
    ) -> u32 {
        let usable = vector.len() == self.dim;
        if let Some(row) = self.row(&item.item_id) {
            let r = row as usize;
            self.tier_rows[self.tiers[r].index()].remove(row);
            self.tier_rows[tier.index()].insert(row);
            self.tiers[r] = tier;
            self.timestamps[r] = item.timestamp;
            self.bitmaps[r] = bitmap;
            self.items[r] = item;
            if usable {
                self.vectors.set(self.dim, r, Some(vector));
                self.missing_vectors.remove(row);
            } else {
                self.vectors.set(self.dim, r, None);
                self.missing_vectors.insert(row);
            }
            return row;
        }
        let row = self.items.len() as u32;
        self.index.insert(item.item_id.clone(), row);
        let key = tiebreak_key(&item.item_id);
        self.key_sum = self.key_sum.wrapping_add(key);
        self.tiebreaks.push(key);
        self.timestamps.push(item.timestamp);
        self.bitmaps.push(bitmap);
        self.tiers.push(tier);
        self.tier_rows[tier.index()].insert(row);
        if usable {
            self.vectors.push(self.dim, Some(vector));
        } else {
            self.vectors.push(self.dim, None);
            self.missing_vectors.insert(row);
        }
        self.items.push(item);
        row
    }

    /// Remove by id, returning the item and its tier.
    pub fn remove(&mut self, id: &str) -> Option<(Item, Tier)> {
        let row = self.index.remove(id)?;
        let r = row as usize;
        let last = (self.items.len() - 1) as u32;
        let tier = self.tiers[r];
        self.tier_rows[tier.index()].remove(row);
        self.missing_vectors.remove(row);
        if row != last {
            let last_tier = self.tiers[last as usize];
            self.tier_rows[last_tier.index()].remove(last);
            self.tier_rows[last_tier.index()].insert(row);
            if self.missing_vectors.remove(last) {
                self.missing_vectors.insert(row);
            }
            let l = last as usize;
            let moved_id = self.items[l].item_id.clone();
            self.index.insert(moved_id, row);
        }
        self.vectors.swap_remove(self.dim, r);
        self.tiers.swap_remove(r);
        self.bitmaps.swap_remove(r);
        self.timestamps.swap_remove(r);
        let key = self.tiebreaks.swap_remove(r);
        self.key_sum = self.key_sum.wrapping_sub(key);
        let item = self.items.swap_remove(r);
        Some((item, tier))
    }

    /// Move a row to another tier.
    pub fn set_tier(&mut self, row: u32, tier: Tier) {
        let r = row as usize;
        self.tier_rows[self.tiers[r].index()].remove(row);
        self.tier_rows[tier.index()].insert(row);
        self.tiers[r] = tier;
    }

    /// Mutable access to an item's counters. Content and id must not change through this.
    pub fn item_mut(&mut self, row: u32) -> &mut Item {
        &mut self.items[row as usize]
    }

    /// Fill in a vector (after recomputing a missing one).
    pub fn set_vector(&mut self, row: u32, vector: &[f32]) -> bool {
        if vector.len() != self.dim {
            return false;
        }
        self.vectors.set(self.dim, row as usize, Some(vector));
        self.missing_vectors.remove(row);
        true
    }

    /// Bulk-load items (no duplicates) into an empty pool, computing bitmaps in parallel.
    /// `sources[i]` names entry `i`'s vector by row of `matrix` (each row at most once), `None`
    /// for a missing one. The matrix's buffer becomes the pool's: its rows are moved into pool order in
    /// place, so the vectors are held once (a copy from the decoded matrix into the pool held
    /// them twice at the open's peak, 1.5 GB more at a million 384-dim rows).
    pub(crate) fn bulk_load(
        &mut self,
        entries: Vec<(Tier, Item)>,
        sources: Vec<Option<usize>>,
        matrix: LoadedVectors,
        saved: Option<&SavedBitmaps>,
    ) {
        use rayon::prelude::*;
        debug_assert!(self.is_empty(), "bulk_load fills an empty pool");
        let features = Arc::clone(&self.features);
        // A saved bitmap is taken only for the very text it was made from (length, CRC32 and
        // a 64-bit hash of the text agree); every other text is tokenised.
        let found: Vec<([u64; 32], bool)> = entries
            .par_iter()
            .enumerate()
            .map(
                |(i, (_, item))| match saved.and_then(|s| s.get(&item.content, i)) {
                    Some(map) => (map, true),
                    None => (features(&item.content), false),
                },
            )
            .collect();
        self.bitmaps_loaded = found.iter().filter(|(_, loaded)| *loaded).count();
        self.bitmaps = found.into_iter().map(|(map, _)| map).collect();
        coral_base::probe::mark(if self.bitmaps_loaded > 0 {
            "open: bitmaps read from the saved file (the rest computed)"
        } else {
            "open: bitmaps computed"
        });
        let usable = matrix.cols() == self.dim;
        let sources: Vec<Option<usize>> = sources
            .into_iter()
            .map(|v| v.filter(|&r| usable && r < matrix.rows()))
            .collect();
        let n = entries.len();
        self.vectors = match matrix {
            LoadedVectors::Sparse(rows, _) if usable => VectorRows::Sparse(rows.finish(&sources)),
            LoadedVectors::Dense(m) if usable => {
                VectorRows::Dense(gather_rows(m.data, self.dim, &sources))
            }
            _ => VectorRows::Dense(vec![0.0; n * self.dim]),
        };
        self.tiers = entries.iter().map(|(tier, _)| *tier).collect();
        // Collected in place: the entries' buffer becomes the items' (a second vector of a
        // million items was about 140 MB more at the open's peak).
        self.items = entries.into_iter().map(|(_, item)| item).collect();
        self.timestamps = self.items.iter().map(|item| item.timestamp).collect();
        self.tiebreaks = self
            .items
            .iter()
            .map(|item| tiebreak_key(&item.item_id))
            .collect();
        self.key_sum = self
            .tiebreaks
            .iter()
            .fold(0u64, |sum, &k| sum.wrapping_add(k));
        self.index.reserve(n);
        for (row, item) in self.items.iter().enumerate() {
            self.index.insert(item.item_id.clone(), row as u32);
        }
        for (row, tier) in self.tiers.iter().enumerate() {
            self.tier_rows[tier.index()].insert(row as u32);
        }
        for (row, source) in sources.iter().enumerate() {
            if source.is_none() {
                self.missing_vectors.insert(row as u32);
            }
        }
    }
}

/// Rearranges the rows of `data` (rows of `dim` values) so that row `r` of the result is row
/// `sources[r]` of `data`, or zeros for `None`; the result has `sources.len()` rows. Rows are
/// moved in place along the permutation's cycles and chains with one row of scratch, so the
/// buffer is reused rather than copied. `sources` must name each row at most once.
fn gather_rows(mut data: Vec<f32>, dim: usize, sources: &[Option<usize>]) -> Vec<f32> {
    let n = sources.len();
    if dim == 0 {
        return Vec::new();
    }
    let have = data.len() / dim;
    let len = have.max(n);
    data.resize(len * dim, 0.0);
    // Where each source row goes.
    let mut target = vec![u32::MAX; len];
    for (r, s) in sources.iter().enumerate() {
        if let Some(s) = *s
            && s < have
        {
            target[s] = r as u32;
        }
    }
    let mut moved = vec![false; len];
    let mut carry = vec![0f32; dim];
    for start in 0..len {
        let first = target[start];
        if first == u32::MAX || moved[start] || first as usize == start {
            moved[start] = true;
            continue;
        }
        moved[start] = true;
        carry.copy_from_slice(&data[start * dim..(start + 1) * dim]);
        let mut q = first as usize;
        loop {
            let row = &mut data[q * dim..(q + 1) * dim];
            if target[q] != u32::MAX && !moved[q] {
                // q's own row still has to go on: take it, leave the carried one.
                moved[q] = true;
                row.swap_with_slice(&mut carry);
                q = target[q] as usize;
            } else {
                // q's old row is not needed (not a source, or already moved away).
                row.copy_from_slice(&carry);
                break;
            }
        }
    }
    data.truncate(n * dim);
    for (r, s) in sources.iter().enumerate() {
        if !s.is_some_and(|s| s < have) {
            data[r * dim..(r + 1) * dim].fill(0.0);
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, ts: f64) -> Item {
        Item {
            item_id: id.into(),
            content: format!("text {id}"),
            timestamp: ts,
            last_access: ts,
            token_count: 1,
            access_count: 1,
            importance: 0.5,
            project: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn swap_remove_keeps_every_array_aligned() {
        let f: FeatureFn = Arc::new(|s: &str| {
            let mut b = [0u64; 32];
            b[0] = s.len() as u64;
            b
        });
        let mut pool = Pool::new(2, f);
        pool.upsert(Tier::Hot, item("a", 1.0), &[1.0, 1.0]);
        pool.upsert(Tier::Warm, item("b", 2.0), &[]);
        pool.upsert(Tier::Cold, item("cc", 3.0), &[3.0, 3.0]);
        assert!(pool.missing_vectors().contains(1));
        pool.remove("a").unwrap();
        let row = pool.row("cc").unwrap();
        assert_eq!(row, 0);
        assert_eq!(pool.vector(row).to_dense(2).as_ref(), &[3.0, 3.0]);
        assert_eq!(pool.tier(row), Tier::Cold);
        assert_eq!(pool.timestamps()[0], 3.0);
        assert_eq!(pool.bitmaps()[0][0], 7);
        assert!(pool.tier_rows(Tier::Cold).contains(0));
        assert_eq!(pool.tier_len(Tier::Hot), 0);
        assert!(pool.missing_vectors().contains(pool.row("b").unwrap()));
        let sum = |p: &Pool| p.tiebreaks().iter().fold(0u64, |s, &k| s.wrapping_add(k));
        assert_eq!(pool.key_sum(), sum(&pool));
        pool.upsert(Tier::Hot, item("b", 5.0), &[2.0, 2.0]);
        assert_eq!(pool.key_sum(), sum(&pool));
        pool.remove("b").unwrap();
        assert_eq!(pool.key_sum(), sum(&pool));
        assert!(pool.missing_vectors().is_empty());
        assert_eq!(pool.len(), 1);
        assert_eq!(pool.dense_vectors().map(<[f32]>::len), Some(2));
    }

    #[test]
    fn cold_filter_keeps_the_newest_cold_rows() {
        let f: FeatureFn = Arc::new(|_: &str| [0u64; 32]);
        let mut pool = Pool::new(0, f);
        pool.upsert(Tier::Hot, item("h", 9.0), &[]);
        for (id, ts) in [("c1", 1.0), ("c3", 3.0), ("c2", 2.0)] {
            pool.upsert(Tier::Cold, item(id, ts), &[]);
        }
        let ids = |allow: RoaringBitmap| -> Vec<String> {
            let mut ids: Vec<String> = allow.iter().map(|r| pool.item(r).item_id.clone()).collect();
            ids.sort();
            ids
        };
        assert_eq!(pool.cold_filter(true, 0), None, "every row");
        assert_eq!(
            pool.cold_filter(true, 3),
            None,
            "no more cold rows than allowed"
        );
        assert_eq!(ids(pool.cold_filter(true, 2).unwrap()), ["c2", "c3", "h"]);
        assert_eq!(ids(pool.cold_filter(false, 0).unwrap()), ["h"]);
        assert_eq!(ids(pool.cold_filter(false, 2).unwrap()), ["h"]);
    }

    proptest::proptest! {
        #[test]
        fn gather_rows_moves_every_row_where_it_belongs(
            have in 0usize..12,
            n in 0usize..12,
            seed in proptest::prelude::any::<u64>(),
        ) {
            // A random injective map from pool rows to source rows, some rows missing.
            let mut free: Vec<usize> = (0..have).collect();
            let mut h = seed;
            let mut sources = Vec::new();
            for _ in 0..n {
                h = h.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if free.is_empty() || (h >> 60) < 3 {
                    sources.push(None);
                } else {
                    sources.push(Some(free.swap_remove((h >> 33) as usize % free.len())));
                }
            }
            let dim = 3;
            let data: Vec<f32> = (0..have * dim).map(|i| i as f32 + 1.0).collect();
            let want: Vec<f32> = sources
                .iter()
                .flat_map(|s| match s {
                    Some(s) => data[s * dim..(s + 1) * dim].to_vec(),
                    None => vec![0.0; dim],
                })
                .collect();
            proptest::prop_assert_eq!(gather_rows(data, dim, &sources), want);
        }
    }

    #[test]
    fn tiebreak_orders_hex_ids_like_strings() {
        let mut ids = ["ffff000000000000", "0123456789abcdef", "00000000000000ff"];
        let mut by_key = ids;
        ids.sort();
        by_key.sort_by_key(|id| tiebreak_key(id));
        assert_eq!(ids, by_key);
    }
}
