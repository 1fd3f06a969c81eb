//! [`AnnIndex`]: a hierarchical navigable small-world graph (HNSW) over i8 codes, with
//! insert, delete by tombstone and batched repair, and filters applied during traversal.
//!
//! Nodes are the graph's own numbers; callers address vectors by a `u32` label of their choice
//! (dense: labels index a table). A removed node stays in the graph as a tombstone, walked
//! through but never returned, until enough accumulate for [`AnnIndex::repair`]: every live
//! node that links to a tombstone takes the tombstone's live neighbours in its place, and the
//! tombstones' slots are reused by later inserts.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use rayon::prelude::*;
use roaring::RoaringBitmap;

use crate::quant::{dot_codes, encode};
use crate::visited::{Visited, VisitedPool};
use crate::{Error, Result};

/// "No node" / "no label".
pub(crate) const NONE: u32 = u32::MAX;

/// Highest level a node can get (levels above 8 need about 16^8 nodes).
const MAX_LEVEL: usize = 15;

/// Tombstones are repaired once there are this many, or a 32nd of the live nodes if more:
/// a repair walks every link list once, so it is batched.
const REPAIR_MIN: usize = 256;

/// How the graph is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Links per node on the upper layers; layer 0 keeps up to `2 · m`.
    pub m: usize,
    /// Candidates kept while looking for a new node's neighbours.
    pub ef_construction: usize,
    /// Seed of the level draw (the graph is a pure function of the inserts and the seed).
    pub seed: u64,
}

impl Default for Params {
    /// `m` 16 and `ef_construction` 64 (docs/ann.md, "Parameters", has the measurements).
    fn default() -> Self {
        Params {
            m: 16,
            ef_construction: 64,
            seed: 0x00c0_7a1a_2025,
        }
    }
}

impl Params {
    fn check(&self) -> Result<()> {
        if !(2..=64).contains(&self.m) {
            return Err(Error::InvalidParams(format!(
                "m = {} must be from 2 to 64",
                self.m
            )));
        }
        if self.ef_construction == 0 || self.ef_construction > 4096 {
            return Err(Error::InvalidParams(format!(
                "ef_construction = {} must be from 1 to 4096",
                self.ef_construction
            )));
        }
        Ok(())
    }
}

/// Which labels a search may return.
#[derive(Clone, Copy)]
pub enum Filter<'a> {
    /// Every label in the index.
    All,
    /// Only these labels; a small set is scored exactly instead of searched
    /// ([`Query::exact_below`]).
    Labels(&'a RoaringBitmap),
    /// Only labels this accepts, with the share of labels it accepts (0..=1, an estimate is
    /// enough: it sizes the search).
    Accept(&'a (dyn Fn(u32) -> bool + Sync), f64),
}

/// A search.
#[derive(Clone, Copy)]
pub struct Query<'a> {
    /// The query vector (the index's dimension).
    pub vector: &'a [f32],
    /// Hits wanted.
    pub k: usize,
    /// Candidates kept during the search; the best `max(ef, k)` by code are re-ranked exactly.
    pub ef: usize,
    /// Which labels may be returned.
    pub filter: Filter<'a>,
    /// When the filter (or the whole index) admits at most this many labels, every admitted
    /// label is scored exactly instead: a traversal would visit about as many nodes.
    pub exact_below: u64,
}

/// One result: a label and its exact score (the caller's), best first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// The caller's label.
    pub label: u32,
    /// The exact score from the caller's scoring function.
    pub score: f32,
}

/// A similarity and a node, ordered by similarity, then by node (for determinism).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Near(f32, u32);

impl Eq for Near {}

impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .total_cmp(&other.0)
            .then_with(|| other.1.cmp(&self.1))
    }
}

/// An approximate nearest-neighbour index by cosine over i8 codes (see the module docs).
///
/// ```
/// use coral_ann::{AnnIndex, Filter, Params, Query};
/// let mut index = AnnIndex::new(2, Params::default())?;
/// let vectors = [[1.0f32, 0.0], [0.0, 1.0], [0.6, 0.8]];
/// for (label, v) in vectors.iter().enumerate() {
///     index.insert(label as u32, v)?;
/// }
/// let exact = |label: u32| {
///     let v = vectors[label as usize];
///     v[0] * 1.0 + v[1] * 0.0
/// };
/// let q = Query { vector: &[1.0, 0.0], k: 2, ef: 16, filter: Filter::All, exact_below: 0 };
/// let hits = index.search(&q, &exact);
/// assert_eq!(hits.iter().map(|h| h.label).collect::<Vec<_>>(), [0, 2]);
/// index.remove(0);
/// assert_eq!(index.search(&q, &exact)[0].label, 2);
/// # Ok::<(), coral_ann::Error>(())
/// ```
pub struct AnnIndex {
    pub(crate) dim: usize,
    pub(crate) params: Params,
    /// Link capacity on layer 0.
    pub(crate) m0: usize,
    /// Node -> code (`dim` bytes each).
    pub(crate) codes: Vec<i8>,
    /// Node -> scale of its code.
    pub(crate) scales: Vec<f32>,
    /// Node -> label; [`NONE`] for a free node.
    pub(crate) labels: Vec<u32>,
    /// Node -> its top level.
    pub(crate) levels: Vec<u8>,
    /// Node -> its layer-0 links (`m0` slots each, the first `lens0` used).
    pub(crate) links0: Vec<u32>,
    pub(crate) lens0: Vec<u8>,
    /// Node -> its links on levels 1..=level (only nodes above layer 0).
    pub(crate) upper: HashMap<u32, Vec<Vec<u32>>>,
    /// Label -> node ([`NONE`] when absent).
    pub(crate) node_of: Vec<u32>,
    /// Tombstoned nodes, one bit each.
    pub(crate) dead: Vec<u64>,
    pub(crate) dead_count: usize,
    /// Free nodes, reused first.
    pub(crate) free: Vec<u32>,
    pub(crate) entry: u32,
    pub(crate) top: usize,
    pub(crate) live: usize,
    /// Inserts so far (drives the level draw).
    pub(crate) inserts: u64,
    pub(crate) scratch: VisitedPool,
}

impl std::fmt::Debug for AnnIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnnIndex")
            .field("dim", &self.dim)
            .field("params", &self.params)
            .field("live", &self.live)
            .field("tombstones", &self.dead_count)
            .field("top", &self.top)
            .finish()
    }
}

impl AnnIndex {
    /// An empty index of `dim`-dimensional vectors.
    pub fn new(dim: usize, params: Params) -> Result<AnnIndex> {
        params.check()?;
        if dim == 0 || dim > 65_536 {
            return Err(Error::InvalidParams(format!(
                "dim = {dim} must be from 1 to 65536"
            )));
        }
        Ok(AnnIndex {
            dim,
            params,
            m0: 2 * params.m,
            codes: Vec::new(),
            scales: Vec::new(),
            labels: Vec::new(),
            levels: Vec::new(),
            links0: Vec::new(),
            lens0: Vec::new(),
            upper: HashMap::new(),
            node_of: Vec::new(),
            dead: Vec::new(),
            dead_count: 0,
            free: Vec::new(),
            entry: NONE,
            top: 0,
            live: 0,
            inserts: 0,
            scratch: VisitedPool::default(),
        })
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The build parameters.
    pub fn params(&self) -> Params {
        self.params
    }

    /// Labels in the index.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether the index holds no label.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Removed nodes not yet repaired away.
    pub fn tombstones(&self) -> usize {
        self.dead_count
    }

    /// Whether `label` is in the index.
    pub fn contains(&self, label: u32) -> bool {
        self.node_of_label(label) != NONE
    }

    /// Every label in the index, in no particular order.
    pub fn labels(&self) -> impl Iterator<Item = u32> + '_ {
        self.node_of
            .iter()
            .enumerate()
            .filter(|(_, n)| **n != NONE)
            .map(|(l, _)| l as u32)
    }

    /// Bytes held by the graph and codes (the allocations, not counting allocator overhead).
    pub fn memory_bytes(&self) -> usize {
        let upper: usize = self
            .upper
            .values()
            .map(|levels| 48 + levels.iter().map(|l| 24 + 4 * l.capacity()).sum::<usize>())
            .sum();
        self.codes.capacity()
            + 4 * self.scales.capacity()
            + 4 * self.labels.capacity()
            + self.levels.capacity()
            + 4 * self.links0.capacity()
            + self.lens0.capacity()
            + 4 * self.node_of.capacity()
            + 8 * self.dead.capacity()
            + 4 * self.free.capacity()
            + upper
    }

    pub(crate) fn node_of_label(&self, label: u32) -> u32 {
        self.node_of.get(label as usize).copied().unwrap_or(NONE)
    }

    fn nodes(&self) -> usize {
        self.labels.len()
    }

    #[inline]
    fn code(&self, node: u32) -> &[i8] {
        let n = node as usize;
        &self.codes[n * self.dim..(n + 1) * self.dim]
    }

    #[inline]
    fn is_dead(&self, node: u32) -> bool {
        self.dead
            .get(node as usize / 64)
            .is_some_and(|w| w >> (node % 64) & 1 == 1)
    }

    fn set_dead(&mut self, node: u32, dead: bool) {
        let word = node as usize / 64;
        if self.dead.len() <= word {
            self.dead.resize(word + 1, 0);
        }
        let bit = 1u64 << (node % 64);
        if dead {
            self.dead[word] |= bit;
        } else {
            self.dead[word] &= !bit;
        }
    }

    /// Approximate cosine of a node with a query code.
    #[inline]
    fn sim_code(&self, node: u32, code: &[i8], scale: f32) -> f32 {
        scale * self.scales[node as usize] * dot_codes(self.code(node), code)
    }

    /// Approximate cosine of two nodes.
    #[inline]
    fn sim_nodes(&self, a: u32, b: u32) -> f32 {
        self.sim_code(a, self.code(b), self.scales[b as usize])
    }

    #[inline]
    pub(crate) fn links(&self, node: u32, level: usize) -> &[u32] {
        if level == 0 {
            let n = node as usize;
            let start = n * self.m0;
            &self.links0[start..start + self.lens0[n] as usize]
        } else {
            self.upper
                .get(&node)
                .and_then(|levels| levels.get(level - 1))
                .map_or(&[], Vec::as_slice)
        }
    }

    fn set_links(&mut self, node: u32, level: usize, list: &[u32]) {
        if level == 0 {
            let n = node as usize;
            let len = list.len().min(self.m0);
            let start = n * self.m0;
            self.links0[start..start + len].copy_from_slice(&list[..len]);
            self.lens0[n] = len as u8;
        } else if let Some(levels) = self.upper.get_mut(&node)
            && let Some(slot) = levels.get_mut(level - 1)
        {
            slot.clear();
            slot.extend_from_slice(list);
        }
    }

    fn capacity(&self, level: usize) -> usize {
        if level == 0 { self.m0 } else { self.params.m }
    }

    /// The level of the `n`-th insert: geometric with ratio 1/m, from a hash of the seed and
    /// the count (reproducible, independent of labels).
    fn draw_level(&self, n: u64) -> usize {
        let mut z = self.params.seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        // Uniform in (0, 1].
        let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let level = (-u.ln() / (self.params.m as f64).ln()).floor();
        (level as usize).min(MAX_LEVEL)
    }

    /// A fresh node (a free one first), its arrays sized.
    fn alloc(&mut self) -> u32 {
        if let Some(node) = self.free.pop() {
            return node;
        }
        let node = self.labels.len() as u32;
        self.codes.resize(self.codes.len() + self.dim, 0);
        self.scales.push(0.0);
        self.labels.push(NONE);
        self.levels.push(0);
        self.links0.resize(self.links0.len() + self.m0, NONE);
        self.lens0.push(0);
        node
    }

    /// Adds `vector` under `label`, replacing what the label held. The vector need not be
    /// normalised (the graph ranks by cosine); a zero vector is accepted and is similar to
    /// nothing.
    pub fn insert(&mut self, label: u32, vector: &[f32]) -> Result<()> {
        if vector.len() != self.dim {
            return Err(Error::Dimension {
                want: self.dim,
                got: vector.len(),
            });
        }
        if label == NONE {
            return Err(Error::InvalidParams(format!(
                "label {label} is reserved; use labels below it"
            )));
        }
        self.remove(label);
        let node = self.alloc();
        let n = node as usize;
        let dim = self.dim;
        let scale = encode(vector, &mut self.codes[n * dim..(n + 1) * dim]);
        self.scales[n] = scale;
        let level = self.draw_level(self.inserts);
        self.inserts += 1;
        self.labels[n] = label;
        self.levels[n] = level as u8;
        self.lens0[n] = 0;
        if level > 0 {
            self.upper.insert(node, vec![Vec::new(); level]);
        }
        if self.node_of.len() <= label as usize {
            self.node_of.resize(label as usize + 1, NONE);
        }
        self.node_of[label as usize] = node;
        self.live += 1;
        if self.entry == NONE {
            self.entry = node;
            self.top = level;
            return Ok(());
        }
        let code: Vec<i8> = self.code(node).to_vec();
        let mut ep = self.entry;
        for lc in (level + 1..=self.top).rev() {
            ep = self.greedy(&code, scale, ep, lc);
        }
        let mut entries = vec![ep];
        for lc in (0..=level.min(self.top)).rev() {
            // Marks are per level: a node seen on level 2 is walked again on level 1.
            let mut visited = self.scratch.take(self.nodes());
            let found = self.search_layer(
                &code,
                scale,
                &entries,
                self.params.ef_construction,
                lc,
                &|n| n != node,
                &mut visited,
            );
            self.scratch.give(visited);
            let chosen = self.select(&found, self.params.m);
            self.set_links(node, lc, &chosen);
            for &e in &chosen {
                self.link_back(e, node, lc);
            }
            if !found.is_empty() {
                entries = found.iter().map(|c| c.1).collect();
            }
        }
        if level > self.top {
            self.top = level;
            self.entry = node;
        }
        Ok(())
    }

    /// Removes `label`; false when it was not there. The node becomes a tombstone until the
    /// next [`AnnIndex::repair`], which runs by itself once tombstones reach 256 or a 32nd of
    /// the live nodes.
    pub fn remove(&mut self, label: u32) -> bool {
        let node = self.node_of_label(label);
        if node == NONE {
            return false;
        }
        self.node_of[label as usize] = NONE;
        self.set_dead(node, true);
        self.dead_count += 1;
        self.live -= 1;
        if self.live == 0 {
            self.clear();
        } else if self.dead_count >= REPAIR_MIN.max(self.live / 32) {
            self.repair();
        }
        true
    }

    /// Empties the index (parameters kept).
    pub fn clear(&mut self) {
        let (dim, params) = (self.dim, self.params);
        if let Ok(empty) = AnnIndex::new(dim, params) {
            *self = empty;
        }
    }

    /// Greedy descent on one level: the closest node reachable by always moving closer.
    fn greedy(&self, code: &[i8], scale: f32, start: u32, level: usize) -> u32 {
        let mut best = start;
        let mut best_sim = self.sim_code(start, code, scale);
        loop {
            let mut moved = false;
            for &n in self.links(best, level) {
                let s = self.sim_code(n, code, scale);
                if s > best_sim {
                    best_sim = s;
                    best = n;
                    moved = true;
                }
            }
            if !moved {
                return best;
            }
        }
    }

    /// Beam search on one level from `entries`, keeping the `ef` most similar nodes that
    /// `accept` admits (tombstones are never admitted), best first. Nodes not admitted are
    /// still walked through, so a filter does not cut the graph apart.
    #[allow(clippy::too_many_arguments)]
    fn search_layer(
        &self,
        code: &[i8],
        scale: f32,
        entries: &[u32],
        ef: usize,
        level: usize,
        accept: &dyn Fn(u32) -> bool,
        visited: &mut Visited,
    ) -> Vec<Near> {
        let ef = ef.max(1);
        let mut candidates: BinaryHeap<Near> = BinaryHeap::new();
        // Min-heap of admitted results by similarity.
        let mut results: BinaryHeap<std::cmp::Reverse<Near>> = BinaryHeap::new();
        for &e in entries {
            if !visited.first_visit(e) {
                continue;
            }
            let near = Near(self.sim_code(e, code, scale), e);
            candidates.push(near);
            if !self.is_dead(e) && accept(e) {
                results.push(std::cmp::Reverse(near));
                if results.len() > ef {
                    results.pop();
                }
            }
        }
        while let Some(Near(sim, node)) = candidates.pop() {
            let worst = results.peek().map_or(f32::NEG_INFINITY, |r| r.0.0);
            if results.len() >= ef && sim < worst {
                break;
            }
            for &n in self.links(node, level) {
                if !visited.first_visit(n) {
                    continue;
                }
                let s = self.sim_code(n, code, scale);
                let worst = results.peek().map_or(f32::NEG_INFINITY, |r| r.0.0);
                if results.len() < ef || s > worst {
                    candidates.push(Near(s, n));
                    if !self.is_dead(n) && accept(n) {
                        results.push(std::cmp::Reverse(Near(s, n)));
                        if results.len() > ef {
                            results.pop();
                        }
                    }
                }
            }
        }
        let mut out: Vec<Near> = results.into_iter().map(|r| r.0).collect();
        out.sort_unstable_by(|a, b| b.cmp(a));
        out
    }

    /// HNSW's neighbour heuristic: from candidates sorted best first, keep one only if it is
    /// closer to the base than to every one kept so far (links spread in every direction), at
    /// most `m`; then fill the list up to `m` with the pruned candidates, best first (the
    /// paper's "keep pruned connections"). Without the fill, a node with a near-twin keeps
    /// that twin alone (every other candidate is closer to the twin), and when a full list is
    /// pruned again the pair can end up linking only to each other: a search entering either
    /// one saw nothing else (`follows_a_model_under_random_operations` found such a pair).
    fn select(&self, candidates: &[Near], m: usize) -> Vec<u32> {
        let mut kept: Vec<u32> = Vec::with_capacity(m);
        let mut pruned: Vec<u32> = Vec::new();
        for &Near(sim, c) in candidates {
            if kept.len() >= m {
                break;
            }
            if kept.iter().all(|&r| self.sim_nodes(c, r) < sim) {
                kept.push(c);
            } else {
                pruned.push(c);
            }
        }
        let room = m.saturating_sub(kept.len());
        kept.extend(pruned.into_iter().take(room));
        kept
    }

    /// Adds the link `from -> to` on `level`; a full list is pruned again with the heuristic.
    fn link_back(&mut self, from: u32, to: u32, level: usize) {
        let cap = self.capacity(level);
        let current = self.links(from, level);
        if current.contains(&to) {
            return;
        }
        if current.len() < cap {
            let mut list = current.to_vec();
            list.push(to);
            self.set_links(from, level, &list);
            return;
        }
        let mut candidates: Vec<Near> = current
            .iter()
            .chain(std::iter::once(&to))
            .filter(|&&n| !self.is_dead(n))
            .map(|&n| Near(self.sim_nodes(from, n), n))
            .collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        let chosen = self.select(&candidates, cap);
        self.set_links(from, level, &chosen);
    }

    /// The best `query.k` labels by the caller's exact score (`exact(label)`), best first (ties:
    /// smaller label first). The graph finds the `max(ef, k)` best candidates by code among
    /// the labels the filter admits; those are scored exactly. When the filter (or the index)
    /// admits at most `exact_below` labels, every admitted label is scored exactly instead.
    pub fn search(&self, query: &Query, exact: &(dyn Fn(u32) -> f32 + Sync)) -> Vec<Hit> {
        if query.k == 0 || self.live == 0 || query.vector.len() != self.dim {
            return Vec::new();
        }
        let admitted = match query.filter {
            Filter::All => self.live as u64,
            Filter::Labels(set) => set.len(),
            Filter::Accept(_, share) => (share.clamp(0.0, 1.0) * self.live as f64).ceil() as u64,
        };
        if admitted <= query.exact_below {
            let labels: Vec<u32> = match query.filter {
                Filter::Labels(set) => set.iter().filter(|&l| self.contains(l)).collect(),
                Filter::All => self.labels().collect(),
                Filter::Accept(accept, _) => self.labels().filter(|&l| accept(l)).collect(),
            };
            return best_exact(labels, query.k, exact);
        }
        let mut code = vec![0i8; self.dim];
        let scale = encode(query.vector, &mut code);
        let mut ep = self.entry;
        for lc in (1..=self.top).rev() {
            ep = self.greedy(&code, scale, ep, lc);
        }
        let ef = query.ef.max(query.k);
        let mut visited = self.scratch.take(self.nodes());
        let found = match query.filter {
            Filter::All => self.search_layer(&code, scale, &[ep], ef, 0, &|_| true, &mut visited),
            Filter::Labels(set) => self.search_layer(
                &code,
                scale,
                &[ep],
                ef,
                0,
                &|n| set.contains(self.labels[n as usize]),
                &mut visited,
            ),
            Filter::Accept(accept, _) => self.search_layer(
                &code,
                scale,
                &[ep],
                ef,
                0,
                &|n| accept(self.labels[n as usize]),
                &mut visited,
            ),
        };
        self.scratch.give(visited);
        best_exact(
            found.iter().map(|c| self.labels[c.1 as usize]).collect(),
            query.k,
            exact,
        )
    }

    /// Repairs the graph around every tombstone: each live node that links to one takes the
    /// tombstone's live neighbours in its place (the most similar first, up to capacity), and
    /// the tombstones' nodes are freed for reuse. Runs by itself from [`AnnIndex::remove`];
    /// public so that a caller can repair before saving.
    pub fn repair(&mut self) {
        if self.dead_count == 0 {
            return;
        }
        let nodes = self.nodes() as u32;
        let is_live = |s: &Self, n: u32| s.labels[n as usize] != NONE && !s.is_dead(n);
        // New link lists, computed in parallel from the graph as it is, then written.
        let mut changes: Vec<(u32, usize, Vec<u32>)> = Vec::new();
        for level in 0..=self.top {
            let affected: Vec<u32> = if level == 0 {
                (0..nodes)
                    .into_par_iter()
                    .filter(|&n| {
                        is_live(self, n) && self.links(n, 0).iter().any(|&l| self.is_dead(l))
                    })
                    .collect()
            } else {
                self.upper
                    .iter()
                    .filter(|(n, levels)| {
                        is_live(self, **n)
                            && levels
                                .get(level - 1)
                                .is_some_and(|l| l.iter().any(|&x| self.is_dead(x)))
                    })
                    .map(|(n, _)| *n)
                    .collect()
            };
            let fixed: Vec<(u32, usize, Vec<u32>)> = affected
                .par_iter()
                .map(|&n| (n, level, self.relinked(n, level)))
                .collect();
            changes.extend(fixed);
        }
        for (n, level, list) in changes {
            self.set_links(n, level, &list);
        }
        // Free the tombstones.
        for word in 0..self.dead.len() {
            let mut bits = self.dead[word];
            while bits != 0 {
                let node = (word * 64) as u32 + bits.trailing_zeros();
                bits &= bits - 1;
                let n = node as usize;
                self.labels[n] = NONE;
                self.lens0[n] = 0;
                self.levels[n] = 0;
                self.scales[n] = 0.0;
                self.upper.remove(&node);
                self.free.push(node);
            }
            self.dead[word] = 0;
        }
        self.dead_count = 0;
        if self
            .labels
            .get(self.entry as usize)
            .is_none_or(|&l| l == NONE)
        {
            self.pick_entry();
        }
    }

    /// The new link list of live node `n` on `level`: its live links, then the live links of
    /// its dead neighbours by similarity, up to capacity.
    fn relinked(&self, n: u32, level: usize) -> Vec<u32> {
        let cap = self.capacity(level);
        let current = self.links(n, level);
        let mut kept: Vec<u32> = current
            .iter()
            .copied()
            .filter(|&l| !self.is_dead(l))
            .collect();
        let mut extra: Vec<Near> = Vec::new();
        for &d in current.iter().filter(|&&l| self.is_dead(l)) {
            for &c in self.links(d, level) {
                if c != n
                    && !self.is_dead(c)
                    && self.labels[c as usize] != NONE
                    && !kept.contains(&c)
                    && !extra.iter().any(|e| e.1 == c)
                {
                    extra.push(Near(self.sim_nodes(n, c), c));
                }
            }
        }
        extra.sort_unstable_by(|a, b| b.cmp(a));
        for Near(_, c) in extra {
            if kept.len() >= cap {
                break;
            }
            kept.push(c);
        }
        kept
    }

    /// A new entry point: a live node of the highest level.
    fn pick_entry(&mut self) {
        let best_upper = self
            .upper
            .keys()
            .copied()
            .filter(|&n| self.labels[n as usize] != NONE)
            .max_by_key(|&n| (self.levels[n as usize], std::cmp::Reverse(n)));
        let entry = best_upper
            .or_else(|| (0..self.nodes() as u32).find(|&n| self.labels[n as usize] != NONE));
        match entry {
            Some(e) => {
                self.entry = e;
                self.top = self.levels[e as usize] as usize;
            }
            None => {
                self.entry = NONE;
                self.top = 0;
            }
        }
    }
}

/// Scores `labels` exactly and keeps the best `k`, best first, ties by smaller label.
fn best_exact(labels: Vec<u32>, k: usize, exact: &(dyn Fn(u32) -> f32 + Sync)) -> Vec<Hit> {
    let mut hits: Vec<Hit> = if labels.len() >= 4096 {
        labels
            .par_iter()
            .map(|&label| Hit {
                label,
                score: exact(label),
            })
            .collect()
    } else {
        labels
            .iter()
            .map(|&label| Hit {
                label,
                score: exact(label),
            })
            .collect()
    };
    let order = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.label.cmp(&b.label));
    if hits.len() > k {
        hits.select_nth_unstable_by(k - 1, order);
        hits.truncate(k);
    }
    hits.sort_unstable_by(order);
    hits
}
