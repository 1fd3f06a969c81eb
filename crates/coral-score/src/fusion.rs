//! Hybrid fusion, the relevance of `retrieval.mode = "hybrid"` and of the timeline's
//! retrieval: each ranking's scores in standard deviations above that ranking's own mean over
//! every candidate, summed with weights (docs/ranking.md).
//!
//! `relevance(d) = w_bm25 · z⁺(bm25'(d)) + w_vector · z⁺(cos(d))`, where `z⁺(x) = max(0, (x −
//! μ) / σ)` with the mean `μ` and spread `σ` of that ranking over all candidates (a candidate
//! sharing no term has BM25 0 and counts), and `bm25'` is BM25 with neighbouring context
//! ([`with_neighbours`]). Both parts are on one scale whatever the embedder or the query
//! length: BM25 grows with the number of query terms and cosines sit in a band that differs by
//! model, but "three spreads above the rest" means the same for both. A ranking only votes for
//! what it puts above its own average, and only for its best `depth` candidates.
//!
//! Measured against weighted reciprocal rank on the same lists (`cargo xtask eval`, recall@5,
//! USE vectors, MADial zh / en / LoCoMo dev): RRF 59.2 / 62.4 / 41.0, this 62.2 / 65.4 / 55.7
//! (with neighbours; 62.4 / 65.7 / 52.8 without).

use std::collections::{HashMap, HashSet};

/// Mean and spread of one ranking's scores over its whole population, accumulated one score
/// at a time (zeros may be added in bulk) and mergeable across parallel chunks.
///
/// ```
/// use coral_score::Spread;
/// let mut s = Spread::default();
/// for x in [1.0, 2.0, 3.0] {
///     s.add(x);
/// }
/// s.add_zeros(1);
/// assert_eq!(s.count(), 4);
/// assert!((s.mean() - 1.5).abs() < 1e-12);
/// assert!((s.z(3.0) - 1.5 / 1.25f64.sqrt()).abs() < 1e-12);
/// assert_eq!(s.z(1.0), 0.0); // below the mean: no vote
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    count: u64,
    sum: f64,
    sum_sq: f64,
}

impl Spread {
    /// The spread of `scores` in a population of `population` candidates, those without a
    /// score counting as 0 (BM25's non-matching documents).
    pub fn of(scores: impl IntoIterator<Item = f64>, population: u64) -> Spread {
        let mut spread = Spread::default();
        for x in scores {
            spread.add(x);
        }
        spread.add_zeros(population.saturating_sub(spread.count));
        spread
    }

    /// Adds one score (a non-finite one counts as 0).
    #[inline]
    pub fn add(&mut self, x: f64) {
        let x = if x.is_finite() { x } else { 0.0 };
        self.count += 1;
        self.sum += x;
        self.sum_sq += x * x;
    }

    /// Adds `n` scores of 0.
    pub fn add_zeros(&mut self, n: u64) {
        self.count += n;
    }

    /// Adds another chunk's scores.
    pub fn merge(&mut self, other: &Spread) {
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// How many scores.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their mean (0 when there are none).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// Their standard deviation (population form; 0 when there are fewer than two).
    pub fn std_dev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let mean = self.mean();
        (self.sum_sq / self.count as f64 - mean * mean)
            .max(0.0)
            .sqrt()
    }

    /// Standard deviations `x` lies above the mean; 0 at or below it. When every score is the
    /// same (no spread), a score above the mean counts 1: the one candidate that matched.
    pub fn z(&self, x: f64) -> f64 {
        let above = x - self.mean();
        // `> 0.0` is false for NaN too.
        if above.is_nan() || above <= 0.0 {
            return 0.0;
        }
        let sd = self.std_dev();
        // A spread this small relative to the scores is rounding: treat it as none.
        if sd <= 1e-12 * above.abs().max(1.0) {
            1.0
        } else {
            above / sd
        }
    }
}

/// Weights of hybrid fusion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HybridWeights {
    /// Of the BM25 ranking's z-score.
    pub bm25: f64,
    /// Of the vector ranking's z-score (0: vectors are not ranked at all).
    pub vector: f64,
    /// Share of the better neighbour's BM25 added to a candidate's own ([`with_neighbours`]).
    pub neighbours: f64,
}

impl Default for HybridWeights {
    /// BM25 and model vectors equal, neighbours 0.3 (docs/ranking.md).
    fn default() -> Self {
        HybridWeights {
            bm25: 1.0,
            vector: 1.0,
            neighbours: 0.3,
        }
    }
}

/// One candidate after fusion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Relevance {
    /// The caller's id (a pool row, a document number).
    pub id: u32,
    /// The fused relevance.
    pub relevance: f64,
    /// Its BM25 part before weighting (z-score, 0 if not in the ranking).
    pub bm25_z: f64,
    /// Its vector part before weighting.
    pub vector_z: f64,
}

/// Neighbouring context for keyword scores: each candidate gains `weight` times the better
/// score of its two neighbours (`neighbours(id)`: the entries just before and after it, when
/// close enough in time to be one conversation).
///
/// A turn that answers ("yes, last Tuesday, it was lovely") often shares no word with the
/// question its neighbour asked; with 0.3, LoCoMo dev's BM25 recall@5 goes from 52.5 to 56.4
/// while MADial (memories days apart, so without neighbours) is unchanged. Only the best
/// `limit` scores and their neighbours are considered (a common term can match every
/// document, and a candidate outside them gains at most `weight` times a score below them).
/// Returns every considered id with its new score, in no particular order; a neighbour with no
/// score of its own enters with `weight` times its neighbour's.
///
/// ```
/// use coral_score::with_neighbours;
/// // 0 - 1 - 2 in a row; only 1 matched.
/// let next = |id: u32| [id.checked_sub(1), (id < 2).then_some(id + 1)];
/// let mut out = with_neighbours(&[(1, 10.0)], 0.3, 10, next);
/// out.sort_by_key(|e| e.0);
/// assert_eq!(out, [(0, 3.0), (1, 10.0), (2, 3.0)]);
/// ```
pub fn with_neighbours(
    scores: &[(u32, f64)],
    weight: f64,
    limit: usize,
    mut neighbours: impl FnMut(u32) -> [Option<u32>; 2],
) -> Vec<(u32, f64)> {
    let mut best: Vec<(u32, f64)> = scores.iter().copied().filter(|&(_, s)| s > 0.0).collect();
    if weight.is_nan() || weight <= 0.0 || best.is_empty() {
        return best;
    }
    if best.len() > limit {
        best.select_nth_unstable_by(limit.max(1) - 1, |a, b| b.1.total_cmp(&a.1));
        best.truncate(limit.max(1));
    }
    let own: HashMap<u32, f64> = scores.iter().copied().collect();
    let mut ids: Vec<u32> = Vec::with_capacity(best.len() * 3);
    let mut seen: HashSet<u32> = HashSet::with_capacity(best.len() * 3);
    for &(id, _) in &best {
        for n in std::iter::once(id).chain(neighbours(id).into_iter().flatten()) {
            if seen.insert(n) {
                ids.push(n);
            }
        }
    }
    ids.into_iter()
        .map(|id| {
            let context = neighbours(id)
                .into_iter()
                .flatten()
                .filter_map(|n| own.get(&n).copied())
                .fold(0.0f64, f64::max);
            (id, own.get(&id).copied().unwrap_or(0.0) + weight * context)
        })
        .collect()
}

/// Fuses a BM25 ranking and a vector ranking (each `(id, score)` in any order, with the spread
/// of its scores over all candidates) into relevance, best first (ties: smaller id first).
/// Each ranking votes with its best `depth` entries scoring above its mean; a ranking weighted
/// 0 (or NaN) does not vote.
///
/// ```
/// use coral_score::{HybridWeights, Spread, fuse_hybrid};
/// let bm25 = [(1, 9.0), (2, 1.0)];
/// let vector = [(2, 0.9), (3, 0.8), (1, 0.1)];
/// let w = HybridWeights { bm25: 1.0, vector: 1.0, neighbours: 0.0 };
/// let fused = fuse_hybrid(&bm25, &Spread::of([9.0, 1.0], 10), &vector, &Spread::of([0.9, 0.8, 0.1], 3), &w, 10);
/// assert_eq!(fused[0].id, 1); // far above the other BM25 scores
/// assert!(fused[0].bm25_z > 2.5 && fused[0].vector_z == 0.0);
/// ```
pub fn fuse_hybrid(
    bm25: &[(u32, f64)],
    bm25_spread: &Spread,
    vector: &[(u32, f64)],
    vector_spread: &Spread,
    weights: &HybridWeights,
    depth: usize,
) -> Vec<Relevance> {
    let mut fused: HashMap<u32, Relevance> = HashMap::new();
    for (list, spread, weight, is_bm25) in [
        (bm25, bm25_spread, weights.bm25, true),
        (vector, vector_spread, weights.vector, false),
    ] {
        if weight.is_nan() || weight <= 0.0 {
            continue;
        }
        for (id, z) in best(list, spread, depth) {
            let entry = fused.entry(id).or_insert(Relevance {
                id,
                relevance: 0.0,
                bm25_z: 0.0,
                vector_z: 0.0,
            });
            entry.relevance += weight * z;
            if is_bm25 {
                entry.bm25_z = z;
            } else {
                entry.vector_z = z;
            }
        }
    }
    let mut out: Vec<Relevance> = fused.into_values().collect();
    out.sort_by(|a, b| b.relevance.total_cmp(&a.relevance).then(a.id.cmp(&b.id)));
    out
}

/// The best `depth` entries of `list` with a positive z-score, as (id, z).
fn best(list: &[(u32, f64)], spread: &Spread, depth: usize) -> Vec<(u32, f64)> {
    let mut scored: Vec<(u32, f64)> = list
        .iter()
        .map(|&(id, x)| (id, spread.z(x)))
        .filter(|&(_, z)| z > 0.0)
        .collect();
    let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if scored.len() > depth {
        if depth == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable_by(depth - 1, order);
        scored.truncate(depth);
    }
    scored
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spread_matches_the_textbook_formulas() {
        let xs = [0.5, 0.25, 0.75, 0.0, 1.0];
        let s = Spread::of(xs, 8);
        let all = [0.5, 0.25, 0.75, 0.0, 1.0, 0.0, 0.0, 0.0];
        let mean = all.iter().sum::<f64>() / 8.0;
        let var = all.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 8.0;
        assert_eq!(s.count(), 8);
        assert!((s.mean() - mean).abs() < 1e-12);
        assert!((s.std_dev() - var.sqrt()).abs() < 1e-12);
        let mut a = Spread::of([0.5, 0.25], 2);
        a.merge(&Spread::of([0.75, 0.0, 1.0], 6));
        assert!((a.std_dev() - s.std_dev()).abs() < 1e-12);
        // Empty, single and constant populations: no division by zero.
        assert_eq!(Spread::default().z(1.0), 1.0);
        assert_eq!(Spread::of([2.0], 1).z(2.0), 0.0);
        assert_eq!(Spread::of([2.0, 2.0], 2).z(3.0), 1.0);
        assert_eq!(Spread::of([f64::NAN], 1).mean(), 0.0);
        assert_eq!(s.z(f64::NAN), 0.0);
    }

    #[test]
    fn a_weak_ranking_cannot_outvote_a_clear_keyword_match() {
        // BM25: one document far above the rest. Vectors: a flat band, every cosine close.
        let bm25: Vec<(u32, f64)> = vec![(0, 12.0), (1, 2.0), (2, 1.5), (3, 1.0)];
        let vector: Vec<(u32, f64)> = (0..50).map(|i| (i, 0.30 - f64::from(i) * 0.001)).collect();
        let bs = Spread::of(bm25.iter().map(|h| h.1), 50);
        let vs = Spread::of(vector.iter().map(|h| h.1), 50);
        let fused = fuse_hybrid(&bm25, &bs, &vector, &vs, &HybridWeights::default(), 100);
        assert_eq!(fused[0].id, 0);
        assert!(fused[0].relevance > 2.0 * fused[1].relevance, "{fused:?}");
        // The vector ranking alone decides when it is weighted and BM25 is not.
        let only = HybridWeights {
            bm25: 0.0,
            ..HybridWeights::default()
        };
        assert_eq!(fuse_hybrid(&bm25, &bs, &vector, &vs, &only, 100)[0].id, 0);
        assert_eq!(
            fuse_hybrid(&bm25, &bs, &vector[1..], &vs, &only, 100)[0].id,
            1
        );
        // Depth cuts each ranking.
        assert_eq!(
            fuse_hybrid(&bm25, &bs, &[], &vs, &HybridWeights::default(), 1).len(),
            1
        );
        assert!(fuse_hybrid(&bm25, &bs, &[], &vs, &HybridWeights::default(), 0).is_empty());
    }

    #[test]
    fn neighbours_lend_a_share_of_their_score() {
        let line = |n: u32| move |id: u32| [id.checked_sub(1), (id + 1 < n).then_some(id + 1)];
        let mut out = with_neighbours(&[(2, 10.0), (3, 1.0)], 0.5, 10, line(5));
        out.sort_by_key(|e| e.0);
        assert_eq!(out, [(1, 5.0), (2, 10.5), (3, 6.0), (4, 0.5)]);
        // Weight 0: the scores unchanged (non-positive ones dropped).
        assert_eq!(
            with_neighbours(&[(2, 10.0), (3, 0.0)], 0.0, 10, line(5)),
            [(2, 10.0)]
        );
        // The limit keeps the best scores' neighbourhoods only.
        let mut out = with_neighbours(&[(0, 1.0), (9, 8.0)], 0.5, 1, line(10));
        out.sort_by_key(|e| e.0);
        assert_eq!(out, [(8, 4.0), (9, 8.0)]);
    }

    proptest! {
        /// Relevance is finite, non-negative, sorted, and every id comes from an input list.
        #[test]
        fn fused_relevance_is_well_formed(
            bm in proptest::collection::vec((0u32..40, 0.0f64..20.0), 0..30),
            vec in proptest::collection::vec((0u32..40, -1.0f64..1.0), 0..30),
            wv in 0.0f64..3.0,
            depth in 0usize..40,
        ) {
            let bs = Spread::of(bm.iter().map(|h| h.1), 40);
            let vs = Spread::of(vec.iter().map(|h| h.1), 40);
            let w = HybridWeights { bm25: 1.0, vector: wv, neighbours: 0.0 };
            let fused = fuse_hybrid(&bm, &bs, &vec, &vs, &w, depth);
            for pair in fused.windows(2) {
                prop_assert!(pair[0].relevance >= pair[1].relevance);
            }
            for f in &fused {
                prop_assert!(f.relevance.is_finite() && f.relevance >= 0.0);
                prop_assert!(bm.iter().any(|h| h.0 == f.id) || vec.iter().any(|h| h.0 == f.id));
            }
        }
    }
}
