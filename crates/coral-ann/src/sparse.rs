//! An exact top-k over sparse vectors (docs/ann.md, "The sparse path"): an inverted index
//! from each component to the (vector, value) pairs that have it non-zero, walked only along
//! the query's non-zero components, then the best candidates re-scored by the caller's own
//! exact function.
//!
//! For the hash embedder (each token sets two of the `dim` components) most pairs of vectors
//! are nearly orthogonal, a graph over them has weak neighbourhoods, and the walk touches a
//! few per cent of the entries a full scan would read. The result is exact, not approximate:
//! the walk's f32 sums differ from the caller's products only by rounding, bounded per query
//! (`tolerance`), and every candidate within twice that bound of the k-th is re-scored.
//!
//! Labels are the caller's `u32`s. Inside, vectors get ids of their own that are never
//! reused until a compaction, so a removed vector's entries (left in the lists, skipped when
//! gathered) can never be credited to a later vector given the same label.

use std::sync::Mutex;

use crate::{Error, Hit, Result};

/// No id / no label.
const NONE: u32 = u32::MAX;

/// One non-zero component of one vector.
#[derive(Clone, Copy, Debug)]
struct Entry {
    id: u32,
    value: f32,
}

/// Removed vectors' entries are dropped from the lists once they are at least this many and
/// outnumber the live vectors' (the walk reads them until then).
const COMPACT_MIN_DEAD: usize = 4096;

/// The sparse inverted index.
#[derive(Debug)]
pub struct SparseIndex {
    dim: usize,
    lists: Vec<Vec<Entry>>,
    /// Per id, its label (`NONE` once removed).
    labels: Vec<u32>,
    /// Per id, its number of entries.
    counts: Vec<u32>,
    /// Per label, its id (`NONE` when absent).
    ids: Vec<u32>,
    live: usize,
    live_entries: usize,
    dead_entries: usize,
    /// The largest L2 norm inserted (bounds the rounding of a product).
    max_norm: f32,
    scratch: Mutex<Vec<Scratch>>,
}

impl SparseIndex {
    /// An empty index of `dim`-component vectors.
    pub fn new(dim: usize) -> Result<SparseIndex> {
        if dim == 0 || dim > u32::MAX as usize {
            return Err(Error::InvalidParams(format!(
                "dimension {dim}: use 1 to {}",
                u32::MAX
            )));
        }
        Ok(SparseIndex {
            dim,
            lists: vec![Vec::new(); dim],
            labels: Vec::new(),
            counts: Vec::new(),
            ids: Vec::new(),
            live: 0,
            live_entries: 0,
            dead_entries: 0,
            max_norm: 0.0,
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Whether `label` has a vector.
    pub fn contains(&self, label: u32) -> bool {
        self.ids.get(label as usize).is_some_and(|&id| id != NONE)
    }

    /// The labels held, in no particular order.
    pub fn labels(&self) -> impl Iterator<Item = u32> + '_ {
        self.labels.iter().copied().filter(|&l| l != NONE)
    }

    /// Share of the held vectors' components that are non-zero (0 when empty).
    pub fn density(&self) -> f64 {
        if self.live == 0 {
            return 0.0;
        }
        self.live_entries as f64 / (self.live as f64 * self.dim as f64)
    }

    /// Bytes of memory held (lists and maps, by capacity).
    pub fn memory_bytes(&self) -> usize {
        let lists: usize = self
            .lists
            .iter()
            .map(|l| l.capacity() * size_of::<Entry>())
            .sum();
        lists + (self.labels.capacity() + self.counts.capacity() + self.ids.capacity()) * 4
    }

    /// Adds (or replaces) `label`'s vector.
    pub fn insert(&mut self, label: u32, vector: &[f32]) -> Result<()> {
        if vector.len() != self.dim {
            return Err(Error::Dimension {
                want: self.dim,
                got: vector.len(),
            });
        }
        if label == NONE {
            return Err(Error::InvalidParams(format!(
                "label {label} is reserved; use a smaller label"
            )));
        }
        self.remove(label);
        if self.labels.len() >= NONE as usize {
            self.compact();
        }
        let id = self.labels.len() as u32;
        let mut count = 0u32;
        let mut norm = 0.0f32;
        for (c, &value) in vector.iter().enumerate() {
            if value != 0.0 {
                self.lists[c].push(Entry { id, value });
                count += 1;
                norm += value * value;
            }
        }
        self.max_norm = self.max_norm.max(norm.sqrt());
        self.labels.push(label);
        self.counts.push(count);
        if self.ids.len() <= label as usize {
            self.ids.resize(label as usize + 1, NONE);
        }
        self.ids[label as usize] = id;
        self.live += 1;
        self.live_entries += count as usize;
        Ok(())
    }

    /// Takes `label`'s vector out; false when it had none.
    pub fn remove(&mut self, label: u32) -> bool {
        let Some(&id) = self.ids.get(label as usize) else {
            return false;
        };
        if id == NONE {
            return false;
        }
        self.ids[label as usize] = NONE;
        self.labels[id as usize] = NONE;
        let count = self.counts[id as usize] as usize;
        self.live -= 1;
        self.live_entries -= count;
        self.dead_entries += count;
        if self.dead_entries >= COMPACT_MIN_DEAD && self.dead_entries > self.live_entries {
            self.compact();
        }
        true
    }

    /// Drops removed vectors' entries and renumbers the ids densely.
    fn compact(&mut self) {
        let mut renumber = vec![NONE; self.labels.len()];
        let mut labels = Vec::with_capacity(self.live);
        let mut counts = Vec::with_capacity(self.live);
        for (id, &label) in self.labels.iter().enumerate() {
            if label != NONE {
                renumber[id] = labels.len() as u32;
                self.ids[label as usize] = labels.len() as u32;
                labels.push(label);
                counts.push(self.counts[id]);
            }
        }
        for list in &mut self.lists {
            list.retain_mut(|e| {
                e.id = renumber[e.id as usize];
                e.id != NONE
            });
            list.shrink_to_fit();
        }
        self.labels = labels;
        self.counts = counts;
        self.dead_entries = 0;
    }

    /// A bound on how far the walk's sum for one vector can be from the caller's product
    /// (both are f32 sums of at most `dim` products, each term's error relative to
    /// `|q|·|v|`), with a factor of 4 to spare.
    fn tolerance(&self, query: &[f32]) -> f32 {
        let q = query.iter().map(|x| x * x).sum::<f32>().sqrt();
        4.0 * (self.dim as f32 + 1.0) * f32::EPSILON * q * self.max_norm.max(1.0)
    }

    /// The best `k` labels by `exact` (the caller's product of `query` with a label's
    /// vector) among those `accept` admits, best first (ties by label), plus any other
    /// admitted label whose product may tie with the k-th; labels whose product is not
    /// positive (no shared non-zero component, or a negative sum) may be left out. The
    /// products are the caller's own, so a ranking of these hits is the ranking of a full
    /// scan restricted to positive products.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        accept: Option<&dyn Fn(u32) -> bool>,
        exact: &dyn Fn(u32) -> f32,
    ) -> Vec<Hit> {
        if k == 0 || self.live == 0 || query.len() != self.dim {
            return Vec::new();
        }
        let n = self.labels.len();
        let pooled = self.scratch.lock().ok().and_then(|mut p| p.pop());
        let mut sc = pooled.unwrap_or_default();
        sc.size(n);
        for (c, &qc) in query.iter().enumerate() {
            if qc == 0.0 {
                continue;
            }
            for e in &self.lists[c] {
                let id = e.id as usize;
                sc.scores[id] += qc * e.value;
                sc.seen[id >> 6] |= 1 << (id & 63);
            }
        }
        let eps = self.tolerance(query);
        // A histogram of the touched sums over [0, 1] (unit vectors), so that only the best
        // few need gathering and ordering: at 1M hash vectors most rows share a component
        // with a query (common words), and gathering them all cost more than the walk.
        let mut bins = [0u32; BINS];
        for_each_touched(&sc.seen, |id| {
            let s = sc.scores[id];
            if s > -eps {
                bins[bin(s)] += 1;
            }
        });
        let desc = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        // Gather the rows above a floor that admits about `m` of them, and order only as many
        // as the admitted top k needs: a filter admitting a share s needs about k / s.
        let mut m = (4 * k).max(64);
        let mut hits = Vec::new();
        let mut cands: Vec<(f32, u32)> = Vec::new();
        loop {
            let mut above = 0usize;
            let mut b = BINS;
            while b > 0 && above < m {
                b -= 1;
                above += bins[b] as usize;
            }
            // Below bin 0 everything counts (down to -eps): no floor.
            let floor = if b == 0 {
                f32::NEG_INFINITY
            } else {
                b as f32 / BINS as f32 - 2.0 * eps
            };
            cands.clear();
            for_each_touched(&sc.seen, |id| {
                let s = sc.scores[id];
                // A NaN sum is kept for the caller's product to decide.
                if (s.is_nan() || s > -eps && s >= floor) && self.labels[id] != NONE {
                    cands.push((s, id as u32));
                }
            });
            cands.sort_unstable_by(desc);
            hits.clear();
            let mut kth: Option<f32> = None;
            for &(s, id) in &cands {
                if let Some(t) = kth
                    && s < t - 2.0 * eps
                {
                    break;
                }
                let label = self.labels[id as usize];
                if accept.is_none_or(|a| a(label)) {
                    hits.push(Hit {
                        label,
                        score: exact(label),
                    });
                    if hits.len() == k {
                        kth = Some(s);
                    }
                }
            }
            // The k-th admitted is above the floor with its whole band: nothing below the
            // floor can reach it.
            if floor == f32::NEG_INFINITY || kth.is_some_and(|t| t - 2.0 * eps >= floor) {
                break;
            }
            m = m.saturating_mul(4);
        }
        sc.clear();
        if let Ok(mut pool) = self.scratch.lock() {
            pool.push(sc);
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.label.cmp(&b.label)));
        hits
    }
}

/// Histogram bins over [0, 1].
const BINS: usize = 1024;

#[inline]
fn bin(s: f32) -> usize {
    // NaN and negatives go to bin 0, sums above 1 (rounding) to the last.
    ((s.max(0.0) * BINS as f32) as usize).min(BINS - 1)
}

/// Calls `f` with every id whose bit is set.
#[inline]
fn for_each_touched(seen: &[u64], mut f: impl FnMut(usize)) {
    for (w, &bits) in seen.iter().enumerate() {
        let mut bits = bits;
        while bits != 0 {
            f(w * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
}

/// A search's accumulators, kept zeroed between searches (only touched entries are reset),
/// pooled so that searches do not allocate and fault in 4 MB each at 1M vectors.
#[derive(Debug, Default)]
struct Scratch {
    scores: Vec<f32>,
    seen: Vec<u64>,
}

impl Scratch {
    fn size(&mut self, n: usize) {
        if self.scores.len() < n {
            self.scores.resize(n, 0.0);
            self.seen.resize(n.div_ceil(64), 0);
        }
    }

    fn clear(&mut self) {
        let Scratch { scores, seen } = self;
        for_each_touched(seen, |id| scores[id] = 0.0);
        seen.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_input_and_reuses_labels_safely() {
        assert!(SparseIndex::new(0).is_err());
        let mut index = SparseIndex::new(4).unwrap();
        let err = index.insert(0, &[1.0, 0.0]).unwrap_err().to_string();
        assert!(err.contains("2 dimensions"), "{err}");
        assert!(index.insert(u32::MAX, &[1.0, 0.0, 0.0, 0.0]).is_err());
        index.insert(3, &[1.0, 0.0, 0.0, 0.0]).unwrap();
        index.insert(3, &[0.0, 1.0, 0.0, 0.0]).unwrap();
        assert_eq!(index.len(), 1);
        let q = [1.0, 0.0, 0.0, 0.0];
        let exact = |_: u32| 0.0;
        // The old vector's entry along component 0 is not credited to the new one.
        assert!(index.search(&q, 5, None, &exact).is_empty());
        assert!(index.remove(3));
        assert!(!index.remove(3));
        assert!(!index.contains(3));
        assert_eq!(index.density(), 0.0);
    }
}
