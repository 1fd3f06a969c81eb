//! An exact top-k over sparse vectors (docs/ann.md, "The sparse path"): an inverted index
//! from each component to the vectors that have it non-zero, walked only along the query's
//! non-zero components, one block of ids at a time, then the best candidates re-scored by the
//! caller's own exact function.
//!
//! For the hash embedder (each token sets two of the `dim` components) most pairs of vectors
//! are nearly orthogonal, a graph over them has weak neighbourhoods, and the walk touches a
//! few per cent of the entries a full scan would read. The result is exact, not approximate:
//! the walk's sums differ from the caller's products by the values' 16-bit quantisation and
//! f32 rounding, both bounded per query (`tolerance`), and every candidate within twice that
//! bound of the k-th is re-scored.
//!
//! Labels are the caller's `u32`s. Inside, vectors get ids of their own that are never
//! reused until a compaction, so a removed vector's entries (left in the lists, skipped when
//! gathered) can never be credited to a later vector given the same label.

use std::sync::Mutex;

use crate::{Error, Hit, Result};

/// No id / no label.
const NONE: u32 = u32::MAX;

/// The largest quantisation code: a vector's values are held as `scale · code` with
/// `scale = max|v| / CODE_MAX`.
const CODE_MAX: f32 = 32767.0;

/// Ids per block by default (`2^16`): a block's f32 accumulators are 256 KB, which stay in a
/// core's L2 (2 MB here) while every list's segment for the block is added in. Walking the
/// whole id range at once scattered the adds over 4 MB at 1M vectors and measured 17 ms p50
/// (docs/ann.md, "The sparse path").
const DEFAULT_BLOCK_BITS: u32 = 16;

/// Removed vectors' entries are dropped from the lists once they are at least this many and
/// outnumber the live vectors' (the walk reads them until then).
const COMPACT_MIN_DEAD: usize = 4096;

/// Candidates kept between blocks before they are cut down to those that can still reach
/// the top k.
const CUT_AT: usize = 4096;

/// One component's entries, in id order: the id within its block and the quantised value,
/// in two arrays (4 bytes an entry), and where each block's entries begin.
#[derive(Clone, Debug, Default)]
struct List {
    locals: Vec<u16>,
    codes: Vec<i16>,
    /// `starts[b]` is the first entry whose block is `b` or later; blocks past the end have
    /// no entries.
    starts: Vec<u32>,
}

impl List {
    fn push(&mut self, block: usize, local: u16, code: i16) {
        while self.starts.len() <= block {
            self.starts.push(self.locals.len() as u32);
        }
        self.locals.push(local);
        self.codes.push(code);
    }

    /// The entries of block `b`.
    fn segment(&self, b: usize) -> (&[u16], &[i16]) {
        let Some(&start) = self.starts.get(b) else {
            return (&[], &[]);
        };
        let end = self
            .starts
            .get(b + 1)
            .map_or(self.locals.len(), |&e| e as usize);
        let range = start as usize..end;
        (&self.locals[range.clone()], &self.codes[range])
    }

    fn bytes(&self) -> usize {
        self.locals.capacity() * 2 + self.codes.capacity() * 2 + self.starts.capacity() * 4
    }
}

/// The sparse inverted index.
#[derive(Debug)]
pub struct SparseIndex {
    dim: usize,
    block_bits: u32,
    lists: Vec<List>,
    /// Per id, its label (`NONE` once removed).
    labels: Vec<u32>,
    /// Per id, its number of entries.
    counts: Vec<u32>,
    /// Per id, the value of one code step (0 for a vector with no entries or odd values).
    scales: Vec<f32>,
    /// Ids whose vectors hold a value that is not finite: never walked, always handed to the
    /// caller's product to decide (as a scan would meet them).
    odd: Vec<u32>,
    /// Per label, its id (`NONE` when absent).
    ids: Vec<u32>,
    live: usize,
    live_entries: usize,
    dead_entries: usize,
    /// The largest L2 norm inserted (bounds the rounding of a product).
    max_norm: f32,
    /// The largest code step inserted (bounds the quantisation of a product).
    max_scale: f32,
    scratch: Mutex<Vec<Scratch>>,
}

impl SparseIndex {
    /// An empty index of `dim`-component vectors.
    pub fn new(dim: usize) -> Result<SparseIndex> {
        SparseIndex::with_block_bits(dim, DEFAULT_BLOCK_BITS)
    }

    /// An empty index walking `2^block_bits` ids at a time (1 to 16): the default, 16, keeps
    /// a block's accumulators in L2; smaller blocks exist for tests that need many blocks.
    pub fn with_block_bits(dim: usize, block_bits: u32) -> Result<SparseIndex> {
        if dim == 0 || dim > u32::MAX as usize {
            return Err(Error::InvalidParams(format!(
                "dimension {dim}: use 1 to {}",
                u32::MAX
            )));
        }
        if !(1..=16).contains(&block_bits) {
            return Err(Error::InvalidParams(format!(
                "block of 2^{block_bits} ids: use 2^1 to 2^16"
            )));
        }
        Ok(SparseIndex {
            dim,
            block_bits,
            lists: vec![List::default(); dim],
            labels: Vec::new(),
            counts: Vec::new(),
            scales: Vec::new(),
            odd: Vec::new(),
            ids: Vec::new(),
            live: 0,
            live_entries: 0,
            dead_entries: 0,
            max_norm: 0.0,
            max_scale: 0.0,
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
        let lists: usize = self.lists.iter().map(List::bytes).sum();
        lists
            + (self.labels.capacity()
                + self.counts.capacity()
                + self.scales.capacity()
                + self.ids.capacity()
                + self.odd.capacity())
                * 4
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
        let finite = vector.iter().all(|v| v.is_finite());
        let (mut count, mut scale) = (0u32, 0.0f32);
        if finite {
            let max = vector.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
            if max > 0.0 {
                scale = max / CODE_MAX;
                let (block, local) = self.place(id);
                for (c, &value) in vector.iter().enumerate() {
                    if value != 0.0 {
                        let code = (value / scale).round().clamp(-CODE_MAX, CODE_MAX) as i16;
                        self.lists[c].push(block, local, code);
                        count += 1;
                    }
                }
                self.max_norm = self.max_norm.max(norm);
                self.max_scale = self.max_scale.max(scale);
            }
        } else {
            self.odd.push(id);
        }
        self.labels.push(label);
        self.counts.push(count);
        self.scales.push(scale);
        if self.ids.len() <= label as usize {
            self.ids.resize(label as usize + 1, NONE);
        }
        self.ids[label as usize] = id;
        self.live += 1;
        self.live_entries += count as usize;
        Ok(())
    }

    /// The block of an id and its place in it.
    fn place(&self, id: u32) -> (usize, u16) {
        let block = (id >> self.block_bits) as usize;
        let local = (id & ((1u32 << self.block_bits) - 1)) as u16;
        (block, local)
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

    /// Drops removed vectors' entries and renumbers the ids densely (in their old order, so
    /// each list stays in id order).
    fn compact(&mut self) {
        let mut renumber = vec![NONE; self.labels.len()];
        let mut labels = Vec::with_capacity(self.live);
        let mut counts = Vec::with_capacity(self.live);
        let mut scales = Vec::with_capacity(self.live);
        for (id, &label) in self.labels.iter().enumerate() {
            if label != NONE {
                renumber[id] = labels.len() as u32;
                self.ids[label as usize] = labels.len() as u32;
                labels.push(label);
                counts.push(self.counts[id]);
                scales.push(self.scales[id]);
            }
        }
        let bits = self.block_bits;
        for list in &mut self.lists {
            let mut fresh = List::default();
            for b in 0..list.starts.len() {
                let (locals, codes) = list.segment(b);
                for (&local, &code) in locals.iter().zip(codes) {
                    let new = renumber[(b << bits) | local as usize];
                    if new != NONE {
                        let block = (new >> bits) as usize;
                        let local = (new & ((1u32 << bits) - 1)) as u16;
                        fresh.push(block, local, code);
                    }
                }
            }
            fresh.locals.shrink_to_fit();
            fresh.codes.shrink_to_fit();
            *list = fresh;
        }
        self.odd = self
            .odd
            .iter()
            .map(|&id| renumber[id as usize])
            .filter(|&id| id != NONE)
            .collect();
        self.labels = labels;
        self.counts = counts;
        self.scales = scales;
        self.dead_entries = 0;
    }

    /// A bound on how far the walk's sum for one vector can be from the caller's product:
    /// the quantisation (each code within 0.5 of its value's step count, with a margin for
    /// the division that made it) and the f32 rounding of both sums (each term's error
    /// relative to `|q|·|v|`, with a factor of 4 to spare).
    fn tolerance(&self, query: &[f32]) -> f32 {
        let q = query.iter().map(|x| x * x).sum::<f32>().sqrt();
        let q1 = query.iter().map(|x| x.abs()).sum::<f32>();
        let rounding = 4.0 * (self.dim as f32 + 1.0) * f32::EPSILON * q * self.max_norm.max(1.0);
        rounding + 0.75 * self.max_scale * q1
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
        if query.iter().any(|q| !q.is_finite()) {
            // Every product is NaN or infinite: let the caller's products decide, as a scan.
            let mut hits: Vec<Hit> = self
                .labels()
                .filter(|&l| accept.is_none_or(|a| a(l)))
                .map(|label| Hit {
                    label,
                    score: exact(label),
                })
                .collect();
            hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.label.cmp(&b.label)));
            return hits;
        }
        let terms: Vec<(usize, f32)> = query
            .iter()
            .enumerate()
            .filter(|(_, q)| **q != 0.0)
            .map(|(c, &q)| (c, q))
            .collect();
        let eps = self.tolerance(query);
        let band = 2.0 * eps;
        let pooled = self.scratch.lock().ok().and_then(|mut p| p.pop());
        let mut sc = pooled.unwrap_or_else(Scratch::new);
        // Candidates so far (walk sum, id), all admitted; `floor` is the k-th best of them
        // minus the band once there are k: nothing below it can reach the top k, since the
        // k-th only rises.
        let mut cands: Vec<(f32, u32)> = Vec::new();
        let mut floor = f32::NEG_INFINITY;
        let blocks = self.labels.len().div_ceil(1 << self.block_bits);
        for b in 0..blocks {
            let Scratch { acc, seen } = &mut sc;
            let base = b << self.block_bits;
            let len = (self.labels.len() - base).min(1 << self.block_bits);
            let before = cands.len();
            if floor > 0.0 {
                // Only positive sums can reach the floor, and a vector the query shares no
                // component with sums to exactly 0: no need to mark what the walk touched,
                // and one streamed pass over the block's sums (most below the floor) beats
                // visiting the touched ones (measured: the gather cost as much as the walk).
                for &(c, qc) in &terms {
                    let (locals, codes) = self.lists[c].segment(b);
                    for (&l, &code) in locals.iter().zip(codes) {
                        // Indexed by a u16 into an array of 2^16: no bounds check.
                        acc[usize::from(l)] += qc * f32::from(code);
                    }
                }
                let scales = &self.scales[base..base + len];
                for (l, (a, &scale)) in acc[..len].iter_mut().zip(scales).enumerate() {
                    let s = *a * scale;
                    *a = 0.0;
                    if s >= floor && self.labels[base + l] != NONE {
                        cands.push((s, (base + l) as u32));
                    }
                }
            } else {
                for &(c, qc) in &terms {
                    let (locals, codes) = self.lists[c].segment(b);
                    for (&l, &code) in locals.iter().zip(codes) {
                        acc[usize::from(l)] += qc * f32::from(code);
                        seen[usize::from(l >> 6)] |= 1 << (l & 63);
                    }
                }
                for (w, bits) in seen.iter_mut().enumerate() {
                    let mut word = std::mem::take(bits);
                    while word != 0 {
                        let l = w * 64 + word.trailing_zeros() as usize;
                        word &= word - 1;
                        let id = base + l;
                        let s = acc[l] * self.scales[id];
                        acc[l] = 0.0;
                        if s > -eps && s >= floor && self.labels[id] != NONE {
                            cands.push((s, id as u32));
                        }
                    }
                }
            }
            if let Some(accept) = accept {
                let mut i = before;
                while i < cands.len() {
                    if accept(self.labels[cands[i].1 as usize]) {
                        i += 1;
                    } else {
                        cands.swap_remove(i);
                    }
                }
            }
            if cands.len() >= CUT_AT.max(2 * k) {
                floor = floor.max(kth(&cands, k) - band);
                cands.retain(|c| c.0 >= floor);
            }
        }
        if let Ok(mut pool) = self.scratch.lock() {
            pool.push(sc);
        }
        // The band below the k-th admitted walk sum.
        if cands.len() > k {
            let t = kth(&cands, k) - band;
            cands.retain(|c| c.0 >= t);
        }
        // Vectors with a value that is not finite: the caller's product decides.
        for &id in &self.odd {
            let label = self.labels[id as usize];
            if label != NONE && accept.is_none_or(|a| a(label)) {
                cands.push((f32::NAN, id));
            }
        }
        let mut hits: Vec<Hit> = cands
            .iter()
            .map(|&(_, id)| {
                let label = self.labels[id as usize];
                Hit {
                    label,
                    score: exact(label),
                }
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.label.cmp(&b.label)));
        hits
    }
}

/// The k-th largest walk sum of `cands` (all finite; at least `k` of them).
fn kth(cands: &[(f32, u32)], k: usize) -> f32 {
    let mut sums: Vec<f32> = cands.iter().map(|c| c.0).collect();
    sums.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    sums[k - 1]
}

/// The largest block: locals are u16.
const MAX_BLOCK: usize = 1 << 16;

/// A search's accumulators for one block, kept zeroed between blocks and searches (each
/// touched entry is reset as it is read), pooled so that searches do not allocate. Sized for
/// the largest block whatever the index's, so that a u16 index needs no bounds check.
#[derive(Debug)]
struct Scratch {
    acc: Box<[f32; MAX_BLOCK]>,
    seen: Box<[u64; MAX_BLOCK / 64]>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            acc: vec![0.0; MAX_BLOCK]
                .into_boxed_slice()
                .try_into()
                .expect("a slice of MAX_BLOCK floats"),
            seen: vec![0; MAX_BLOCK / 64]
                .into_boxed_slice()
                .try_into()
                .expect("a slice of MAX_BLOCK / 64 words"),
        }
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
