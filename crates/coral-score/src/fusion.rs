//! Hybrid fusion, the relevance of `retrieval.mode = "hybrid"` and of the timeline's
//! retrieval: each ranking's scores in units of that ranking's own spread over every
//! candidate, summed with weights (docs/ranking.md).
//!
//! `relevance(d) = w_bm25 · z⁺(bm25'(d)) + w_vector · z⁺(cos(d))`, where `z⁺(x) = max(0, (x −
//! μ) / σ)` with the mean `μ` and standard deviation `σ` of that ranking over all candidates
//! (a candidate sharing no term has BM25 0 and counts), and `bm25'` is BM25 with neighbouring
//! context ([`with_neighbours`]). Both parts are on one scale whatever the embedder or the
//! query length: BM25 grows with the number of query terms and cosines sit in a band that
//! differs by model, but "three spreads above the rest" means the same for both. Subtracting
//! the mean is what discounts a word most candidates share: a term in half of them scores 1,
//! a term in one of n scores √(n − 1). Each ranking votes with its best `depth` candidates; a
//! BM25 match below the average stays a candidate with part 0.
//!
//! Measured against weighted reciprocal rank on the same lists (`cargo xtask eval`, recall@5,
//! USE vectors, MADial zh / en / LoCoMo dev): RRF at best 61.8 / 60.7 / 50.1, this
//! 62.2 / 65.4 / 55.7 (with neighbours; 62.4 / 65.7 / 52.8 without).

use std::collections::{BinaryHeap, HashMap};

/// Mean and spread of one ranking's scores over its whole population, accumulated one score
/// at a time (zeros may be added in bulk) and mergeable across parallel chunks. Welford's
/// running mean and sum of squared deviations, so that a population of nearly equal scores
/// (every document matching the same words) has a spread of nearly 0, not rounding noise.
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
    mean: f64,
    /// Sum of squared deviations from the mean.
    m2: f64,
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
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Adds `n` scores of 0.
    pub fn add_zeros(&mut self, n: u64) {
        self.merge(&Spread {
            count: n,
            mean: 0.0,
            m2: 0.0,
        });
    }

    /// Adds another chunk's scores (Chan's pairwise update).
    pub fn merge(&mut self, other: &Spread) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *other;
            return;
        }
        let (n, m) = (self.count as f64, other.count as f64);
        let total = n + m;
        let delta = other.mean - self.mean;
        self.mean += delta * m / total;
        self.m2 += other.m2 + delta * delta * n * m / total;
        self.count += other.count;
    }

    /// The spread of these scores less `part`'s, which must be among them (the inverse of
    /// [`Spread::merge`]).
    fn without(&self, part: &Spread) -> Spread {
        if part.count == 0 {
            return *self;
        }
        if part.count >= self.count {
            return Spread::default();
        }
        let (n, m) = (self.count as f64, part.count as f64);
        let rest = n - m;
        let mean = (n * self.mean - m * part.mean) / rest;
        let delta = part.mean - mean;
        let m2 = self.m2 - part.m2 - delta * delta * rest * m / n;
        Spread {
            count: self.count - part.count,
            mean,
            m2: m2.max(0.0),
        }
    }

    /// How many scores.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their mean (0 when there are none).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Their standard deviation (population form; 0 when there are fewer than two).
    pub fn std_dev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        (self.m2 / self.count as f64).max(0.0).sqrt()
    }

    /// Standard deviations `x` lies above the mean; 0 at or below it. Without a spread (one
    /// candidate, or all scoring the same) a positive score counts 1: it matched, and nothing
    /// matched better.
    pub fn z(&self, x: f64) -> f64 {
        if x.is_nan() {
            return 0.0;
        }
        let sd = self.std_dev();
        let above = x - self.mean();
        // A spread this small relative to the scores is rounding: treat it as none.
        if sd <= 1e-9 * self.mean().abs().max(x.abs()) {
            return if x > 0.0 { 1.0 } else { 0.0 };
        }
        if above > 0.0 { above / sd } else { 0.0 }
    }
}

/// The settings of hybrid ranking: the two rankings' weights, neighbouring context, and the
/// bounds of what is added to relevance (docs/ranking.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HybridParams {
    /// Of the BM25 ranking's z-score.
    pub bm25: f64,
    /// Of the vector ranking's z-score (0: vectors are not ranked at all).
    pub vector: f64,
    /// Share of the better neighbour's BM25 added to a candidate's own ([`with_neighbours`]).
    pub neighbours: f64,
    /// Exponent of the coordination factor: a candidate's BM25 part is multiplied by the share
    /// of the query's term weight it matches ([`Bm25Index::coverage`](crate::Bm25Index::coverage))
    /// to this power (0: no factor).
    pub coordination: f64,
    /// Two entries are neighbours when at most this many seconds apart.
    pub neighbour_gap: f64,
    /// The most a prior (recency, heat, importance, each in 0..=1) adds: a memory more
    /// relevant by more than this always ranks above.
    pub prior: f64,
    /// What a time-shaped query's window adds to a memory inside it ([`crate::TimeWindow`]:
    /// less outside, by distance).
    pub time: f64,
}

impl Default for HybridParams {
    /// BM25 and model vectors equal, neighbours 0.3 within 10 minutes, coordination to the
    /// power 0.25, priors at most 0.25, a time window 2 (docs/ranking.md has the measurements
    /// behind each).
    fn default() -> Self {
        HybridParams {
            bm25: 1.0,
            vector: 1.0,
            neighbours: 0.3,
            coordination: 0.25,
            neighbour_gap: 600.0,
            prior: 0.25,
            time: 2.0,
        }
    }
}

impl HybridParams {
    /// A candidate's final score: its relevance, plus its prior (clamped to 0..=1) times
    /// [`HybridParams::prior`], plus how well it fits a time-shaped query's window (0..=1,
    /// [`crate::TimeWindow::preference`]) times [`HybridParams::time`].
    ///
    /// ```
    /// use coral_score::HybridParams;
    /// let p = HybridParams::default();
    /// assert_eq!(p.score(3.0, 1.0, 0.0), 3.25);
    /// assert_eq!(p.score(3.0, 7.0, 1.0), 5.25); // priors are bounded
    /// ```
    pub fn score(&self, relevance: f64, prior: f64, time_fit: f64) -> f64 {
        let bounded = |x: f64| if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
        relevance + self.prior * bounded(prior) + self.time * bounded(time_fit)
    }
}

/// One candidate after fusion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Relevance {
    /// The caller's id (a pool row, a document number).
    pub id: u32,
    /// The fused relevance.
    pub relevance: f64,
    /// Its BM25 part before weighting (z-score, 0 if not in the ranking or below average).
    pub bm25_z: f64,
    /// Its vector part before weighting.
    pub vector_z: f64,
}

/// Neighbouring context for keyword scores: each scored candidate gains `weight` times the
/// better score of its two neighbours (`neighbours(id)`: the entries just before and after it,
/// when close enough in time to be one conversation).
///
/// A turn that answers ("yes, last Tuesday, it was lovely") often shares only a word or two
/// with the question, which its neighbour asked; with 0.3, LoCoMo dev's BM25 recall@5 goes
/// from 52.5 to 56.5 while MADial (memories days apart, so without neighbours) is unchanged.
/// Only candidates with a score of their own gain: letting neighbours in with none measured
/// the same and put unrelated memories written a minute apart into results. Only the best
/// `limit` scores are looked at (a common term can match every document); the rest keep
/// theirs. Returns the positive scores, in no particular order.
///
/// ```
/// use coral_score::with_neighbours;
/// // 0 - 1 - 2 in a row; 1 matched well, 2 a little.
/// let next = |id: u32| [id.checked_sub(1), (id < 2).then_some(id + 1)];
/// let mut out = with_neighbours(&[(1, 10.0), (2, 1.0)], 0.3, 10, next);
/// out.sort_by_key(|e| e.0);
/// assert_eq!(out, [(1, 10.3), (2, 4.0)]);
/// ```
pub fn with_neighbours(
    scores: &[(u32, f64)],
    weight: f64,
    limit: usize,
    mut neighbours: impl FnMut(u32) -> [Option<u32>; 2],
) -> Vec<(u32, f64)> {
    let mut out: Vec<(u32, f64)> = scores.iter().copied().filter(|&(_, s)| s > 0.0).collect();
    if weight.is_nan() || weight <= 0.0 || out.is_empty() {
        return out;
    }
    let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let limit = limit.clamp(1, out.len());
    if limit < out.len() {
        out.select_nth_unstable_by(limit - 1, order);
    }
    // Every score by id: a dense array when ids are compact (pool slots, document numbers: a
    // map of 20,000 scores cost a millisecond a search), a map otherwise.
    let bound = out.iter().map(|e| e.0).max().map_or(0, |m| m as usize + 1);
    let own: Scores = if bound <= 4 * out.len() + 1024 {
        let mut dense = vec![0.0; bound];
        for &(id, s) in &out {
            dense[id as usize] = s;
        }
        Scores::Dense(dense)
    } else {
        Scores::Sparse(out.iter().copied().collect())
    };
    for entry in &mut out[..limit] {
        let context = neighbours(entry.0)
            .into_iter()
            .flatten()
            .map(|n| own.get(n))
            .fold(0.0f64, f64::max);
        entry.1 += weight * context;
    }
    out
}

/// [`with_neighbours`] on an owned list, asking `score_of(id)` for a neighbour's score instead
/// of keeping a map of every score: at a million documents a common word matches most of
/// them, and the map (8 MB written a search) cost more than the few hundred look-ups it
/// served. `score_of` must give what `scores` holds for an id (anything not positive counts
/// as none, as for an id missing from `scores`). Returns the positive scores, in no
/// particular order, and whether the first `limit` of them are the best `limit` by their new
/// scores (ties: smaller id first), which a caller keeping only those can then take as they
/// are.
///
/// ```
/// use coral_score::{with_neighbours, with_neighbours_owned};
/// let next = |id: u32| [id.checked_sub(1), (id < 2).then_some(id + 1)];
/// let scores = vec![(1, 10.0), (2, 1.0)];
/// let score_of = |id: u32| scores.iter().find(|e| e.0 == id).map_or(0.0, |e| e.1);
/// let (mut out, best_first) = with_neighbours_owned(scores.clone(), 0.3, 10, next, score_of);
/// out.sort_by_key(|e| e.0);
/// assert_eq!(out, [(1, 10.3), (2, 4.0)]);
/// assert!(best_first);
/// ```
pub fn with_neighbours_owned(
    mut scores: Vec<(u32, f64)>,
    weight: f64,
    limit: usize,
    mut neighbours: impl FnMut(u32) -> [Option<u32>; 2],
    score_of: impl Fn(u32) -> f64,
) -> (Vec<(u32, f64)>, bool) {
    scores.retain(|&(_, s)| s > 0.0);
    if weight.is_nan() || weight <= 0.0 || scores.is_empty() {
        return (scores, false);
    }
    let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let limit = limit.clamp(1, scores.len());
    if limit < scores.len() {
        scores.select_nth_unstable_by(limit - 1, order);
    }
    // Context is added to the best `limit` only, so after it they are still ahead of every
    // other entry: each gains at least 0 and was ahead (score, then id) before.
    let context: Vec<f64> = scores[..limit]
        .iter()
        .map(|e| {
            neighbours(e.0)
                .into_iter()
                .flatten()
                .map(|n| score_of(n).max(0.0))
                .fold(0.0f64, f64::max)
        })
        .collect();
    for (entry, c) in scores[..limit].iter_mut().zip(context) {
        entry.1 += weight * c;
    }
    (scores, true)
}

/// The best `limit` of `scores` with neighbouring context, and the spread of every score as
/// ranked: what [`with_neighbours_owned`] followed by [`Spread::of`] over its output (in a
/// population of `population`) and the choice of its best `limit` give, in one pass over
/// `scores` with no list of them. At a million documents a common word scores most of them,
/// and the list, its two filters, the selection and the spread's division per score cost
/// about half the keyword side (docs/ann.md, "Search latency").
///
/// The entries are those `with_neighbours_owned` ranks best (by score, then smaller id; only
/// positive scores), with context added when `weight` is positive, in no particular order.
/// The spread is the same up to rounding: it is summed as distances to the first score instead
/// of with Welford's update, and the best entries' context enters by replacing their bare
/// scores.
///
/// ```
/// use coral_score::{Spread, best_with_neighbours};
/// let next = |id: u32| [id.checked_sub(1), (id < 2).then_some(id + 1)];
/// let scores = [(1, 10.0), (2, 1.0), (0, -1.0)];
/// let score_of = |id: u32| scores.iter().find(|e| e.0 == id).map_or(0.0, |e| e.1);
/// let (best, spread) = best_with_neighbours(scores, 4, 0.3, 1, next, score_of);
/// assert_eq!(best, [(1, 10.3)]);
/// let expected = Spread::of([10.3, 1.0], 4);
/// assert!((spread.mean() - expected.mean()).abs() < 1e-12);
/// assert!((spread.std_dev() - expected.std_dev()).abs() < 1e-12);
/// ```
pub fn best_with_neighbours(
    scores: impl IntoIterator<Item = (u32, f64)>,
    population: u64,
    weight: f64,
    limit: usize,
    mut neighbours: impl FnMut(u32) -> [Option<u32>; 2],
    score_of: impl Fn(u32) -> f64,
) -> (Vec<(u32, f64)>, Spread) {
    let limit = limit.max(1);
    let mut best: BinaryHeap<Worst> = BinaryHeap::with_capacity(limit + 1);
    // The entry to beat once `limit` are kept, as plain numbers: most scores fail the first
    // comparison and never reach the heap.
    let mut bar = Worst(f64::NEG_INFINITY, u32::MAX);
    let mut spread = ShiftedSums::default();
    for (id, score) in scores {
        // NaN is dropped too, as by `with_neighbours_owned`'s filter (`s > 0.0`).
        if score.is_nan() || score <= 0.0 {
            continue;
        }
        spread.add(score);
        if best.len() < limit {
            best.push(Worst(score, id));
            if best.len() == limit {
                bar = *best.peek().unwrap_or(&bar);
            }
        } else if score > bar.0 || (score == bar.0 && id < bar.1) {
            if let Some(mut worst) = best.peek_mut() {
                *worst = Worst(score, id);
            }
            bar = *best.peek().unwrap_or(&bar);
        }
    }
    let mut spread = spread.finish();
    let mut best: Vec<(u32, f64)> = best.into_iter().map(|w| (w.1, w.0)).collect();
    if !weight.is_nan() && weight > 0.0 && !best.is_empty() {
        let bare = Spread::of(best.iter().map(|e| e.1), 0);
        for entry in &mut best {
            let context = neighbours(entry.0)
                .into_iter()
                .flatten()
                .map(|n| score_of(n).max(0.0))
                .fold(0.0f64, f64::max);
            entry.1 += weight * context;
        }
        let smoothed = Spread::of(best.iter().map(|e| e.1), 0);
        spread = spread.without(&bare);
        spread.merge(&smoothed);
    }
    spread.add_zeros(population.saturating_sub(spread.count));
    (best, spread)
}

/// A kept entry of [`best_with_neighbours`], ordered so that the heap's top is the one to drop
/// first: the lower score, then the larger id ([`with_neighbours_owned`]'s order reversed).
#[derive(Clone, Copy, Debug)]
struct Worst(f64, u32);

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Worst {}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Worst {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
    }
}

/// A [`Spread`] from sums of the scores' distances to the first one (shifted data: no
/// division per score, as Welford's update needs, and no loss to cancellation while the
/// scores are near each other, as one query's are).
#[derive(Default)]
struct ShiftedSums {
    count: u64,
    shift: f64,
    sum: f64,
    squares: f64,
}

impl ShiftedSums {
    #[inline]
    fn add(&mut self, x: f64) {
        // As `Spread::add`: a non-finite score counts as 0.
        let x = if x.is_finite() { x } else { 0.0 };
        if self.count == 0 {
            self.shift = x;
        }
        self.count += 1;
        let d = x - self.shift;
        self.sum += d;
        self.squares += d * d;
    }

    fn finish(self) -> Spread {
        if self.count == 0 {
            return Spread::default();
        }
        let n = self.count as f64;
        let mean_shift = self.sum / n;
        Spread {
            count: self.count,
            mean: self.shift + mean_shift,
            m2: (self.squares - self.sum * mean_shift).max(0.0),
        }
    }
}

/// Scores by id.
enum Scores {
    Dense(Vec<f64>),
    Sparse(HashMap<u32, f64>),
}

impl Scores {
    fn get(&self, id: u32) -> f64 {
        match self {
            Scores::Dense(v) => v.get(id as usize).copied().unwrap_or(0.0),
            Scores::Sparse(m) => m.get(&id).copied().unwrap_or(0.0),
        }
    }
}

/// Fuses a BM25 ranking and a vector ranking (each `(id, score)` in any order, with the spread
/// of its scores over all candidates) into relevance, best first (ties: smaller id first).
/// Each ranking votes with its best `depth` entries scoring above its mean (BM25 matches below
/// it are kept with part 0); a ranking weighted 0 (or NaN) does not vote. `coverage(id)` is the
/// share of the query's term weight a BM25 candidate matches (0..=1), raised to
/// [`HybridParams::coordination`]: one word of a three-word question counts less than all
/// three (with USE vectors, recall@5 on MADial zh / en / LoCoMo dev 62.2 / 65.4 / 55.7 without
/// the factor, 63.0 / 67.6 / 56.5 with exponent 0.25, 61.2 / 67.2 / 56.8 with 0.5).
///
/// ```
/// use coral_score::{HybridParams, Spread, fuse_hybrid};
/// let bm25 = [(1, 9.0), (2, 1.0)];
/// let vector = [(2, 0.9), (3, 0.8), (1, 0.1)];
/// let w = HybridParams { neighbours: 0.0, ..HybridParams::default() };
/// let all = |_: u32| 1.0; // every candidate matches every query term
/// let fused = fuse_hybrid(&bm25, &Spread::of([9.0, 1.0], 10), &all, &vector, &Spread::of([0.9, 0.8, 0.1], 3), &w, 10);
/// assert_eq!(fused[0].id, 1); // far above the other BM25 scores
/// assert!(fused[0].bm25_z > 2.5 && fused[0].vector_z == 0.0);
/// ```
pub fn fuse_hybrid(
    bm25: &[(u32, f64)],
    bm25_spread: &Spread,
    coverage: &dyn Fn(u32) -> f64,
    vector: &[(u32, f64)],
    vector_spread: &Spread,
    params: &HybridParams,
    depth: usize,
) -> Vec<Relevance> {
    let mut fused: HashMap<u32, Relevance> = HashMap::new();
    for (list, spread, weight, is_bm25) in [
        (bm25, bm25_spread, params.bm25, true),
        (vector, vector_spread, params.vector, false),
    ] {
        if weight.is_nan() || weight <= 0.0 {
            continue;
        }
        let factor = |id: u32| {
            if is_bm25 && params.coordination > 0.0 {
                let c = coverage(id);
                if c.is_nan() {
                    0.0
                } else {
                    c.clamp(0.0, 1.0).powf(params.coordination)
                }
            } else {
                1.0
            }
        };
        for (id, z) in best(list, spread, depth, is_bm25, &factor) {
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

/// The best `depth` entries of `list` as (id, part), where the part is the z-score above the
/// mean (0 below it) times `factor(id)`. BM25 keeps every positive score (a match below the
/// average match is a candidate still, with part 0); a cosine below the average is no evidence
/// at all. The factor is only asked of the best `4 × depth` by z-score.
fn best(
    list: &[(u32, f64)],
    spread: &Spread,
    depth: usize,
    bm25: bool,
    factor: &dyn Fn(u32) -> f64,
) -> Vec<(u32, f64)> {
    if depth == 0 {
        return Vec::new();
    }
    let mut scored: Vec<(u32, f64, f64)> = list
        .iter()
        .map(|&(id, x)| (id, spread.z(x), x))
        .filter(|&(_, z, x)| if bm25 { x > 0.0 } else { z > 0.0 })
        .collect();
    let order = |a: &(u32, f64, f64), b: &(u32, f64, f64)| {
        b.1.total_cmp(&a.1)
            .then(b.2.total_cmp(&a.2))
            .then(a.0.cmp(&b.0))
    };
    let cut = |scored: &mut Vec<(u32, f64, f64)>, n: usize| {
        if scored.len() > n {
            scored.select_nth_unstable_by(n - 1, order);
            scored.truncate(n);
        }
    };
    cut(&mut scored, 4 * depth);
    for entry in &mut scored {
        entry.1 *= factor(entry.0);
    }
    cut(&mut scored, depth);
    scored.into_iter().map(|(id, z, _)| (id, z)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALL: fn(u32) -> f64 = |_| 1.0;

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
        assert_eq!(Spread::of([2.0], 1).z(2.0), 1.0);
        assert_eq!(Spread::of([2.0, 2.0], 2).z(2.0), 1.0);
        assert_eq!(Spread::of([2.0], 1).z(0.0), 0.0);
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
        let fused = fuse_hybrid(
            &bm25,
            &bs,
            &ALL,
            &vector,
            &vs,
            &HybridParams::default(),
            100,
        );
        assert_eq!(fused[0].id, 0);
        assert!(fused[0].relevance > 2.0 * fused[1].relevance, "{fused:?}");
        // The vector ranking alone decides when it is weighted and BM25 is not.
        let only = HybridParams {
            bm25: 0.0,
            ..HybridParams::default()
        };
        assert_eq!(
            fuse_hybrid(&bm25, &bs, &ALL, &vector, &vs, &only, 100)[0].id,
            0
        );
        assert_eq!(
            fuse_hybrid(&bm25, &bs, &ALL, &vector[1..], &vs, &only, 100)[0].id,
            1
        );
        // Depth cuts each ranking.
        assert_eq!(
            fuse_hybrid(&bm25, &bs, &ALL, &[], &vs, &HybridParams::default(), 1).len(),
            1
        );
        assert!(fuse_hybrid(&bm25, &bs, &ALL, &[], &vs, &HybridParams::default(), 0).is_empty());
    }

    #[test]
    fn neighbours_lend_a_share_of_their_score() {
        let line = |n: u32| move |id: u32| [id.checked_sub(1), (id + 1 < n).then_some(id + 1)];
        let sorted = |mut v: Vec<(u32, f64)>| {
            v.sort_by_key(|e| e.0);
            v
        };
        let out = sorted(with_neighbours(
            &[(2, 10.0), (3, 1.0), (4, 0.0)],
            0.5,
            10,
            line(5),
        ));
        assert_eq!(
            out,
            [(2, 10.5), (3, 6.0)],
            "a neighbour without a score stays out"
        );
        // Weight 0: the scores unchanged (non-positive ones dropped).
        assert_eq!(
            with_neighbours(&[(2, 10.0), (3, 0.0)], 0.0, 10, line(5)),
            [(2, 10.0)]
        );
        // The limit: only the best score gains, the others keep theirs.
        let out = sorted(with_neighbours(
            &[(0, 1.0), (1, 2.0), (9, 8.0)],
            0.5,
            1,
            line(10),
        ));
        assert_eq!(out, [(0, 1.0), (1, 2.0), (9, 8.0)]);
        let out = sorted(with_neighbours(&[(0, 1.0), (1, 8.0)], 0.5, 1, line(10)));
        assert_eq!(out, [(0, 1.0), (1, 8.5)]);
    }

    proptest! {
        /// The owned variant gives the same scores, and its first `limit` are the best.
        #[test]
        fn neighbours_owned_agree_with_the_map(
            raw in proptest::collection::btree_map(0u32..300, -1.0f64..5.0, 0..120),
            weight in prop_oneof![Just(0.0), Just(0.3), 0.0f64..1.0],
            limit in 1usize..150,
            gap in 1u32..4,
        ) {
            let scores: Vec<(u32, f64)> = raw.iter().map(|(&k, &v)| (k, v)).collect();
            let next = |id: u32| [id.checked_sub(gap), Some(id + gap)];
            let score_of = |id: u32| raw.get(&id).copied().unwrap_or(0.0);
            let mut want = with_neighbours(&scores, weight, limit, next);
            let (mut got, best_first) =
                with_neighbours_owned(scores.clone(), weight, limit, next, score_of);
            if best_first {
                let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
                let mut sorted = got.clone();
                sorted.sort_by(order);
                let n = limit.min(got.len());
                let mut head = got[..n].to_vec();
                head.sort_by(order);
                prop_assert_eq!(&head[..], &sorted[..n]);
            }
            want.sort_by_key(|e| e.0);
            got.sort_by_key(|e| e.0);
            prop_assert_eq!(got, want);
        }
    }

    /// What the keyword side did before [`best_with_neighbours`]: the owned variant, the
    /// spread of its output, and its best `limit`.
    fn composed(
        scores: &[(u32, f64)],
        population: u64,
        weight: f64,
        limit: usize,
        next: impl FnMut(u32) -> [Option<u32>; 2],
        score_of: impl Fn(u32) -> f64,
    ) -> (Vec<(u32, f64)>, Spread) {
        let (mut out, best_first) =
            with_neighbours_owned(scores.to_vec(), weight, limit, next, score_of);
        let spread = Spread::of(out.iter().map(|e| e.1), population);
        let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if out.len() > limit {
            if !best_first {
                out.select_nth_unstable_by(limit - 1, order);
            }
            out.truncate(limit);
        }
        (out, spread)
    }

    fn assert_same_spread(got: &Spread, want: &Spread) {
        assert_eq!(got.count(), want.count());
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-11 * (1.0 + a.abs().max(b.abs()));
        assert!(close(got.mean(), want.mean()), "{got:?} {want:?}");
        assert!(close(got.std_dev(), want.std_dev()), "{got:?} {want:?}");
    }

    proptest! {
        /// One pass gives the owned variant's best entries, bit for bit, and its spread up to
        /// rounding; ties, non-positive, NaN and infinite scores included.
        #[test]
        fn best_with_neighbours_agrees_with_the_composition(
            raw in proptest::collection::btree_map(
                0u32..3000,
                prop_oneof![
                    8 => (0u8..6).prop_map(f64::from),
                    8 => -1.0f64..5.0,
                    1 => Just(f64::NAN),
                    1 => Just(f64::INFINITY),
                ],
                0..2500,
            ),
            weight in prop_oneof![Just(0.0), Just(0.3), Just(f64::NAN), 0.0f64..1.0],
            limit in 1usize..600,
            gap in 1u32..4,
            extra in 0u64..1000,
        ) {
            let scores: Vec<(u32, f64)> = raw.iter().map(|(&k, &v)| (k, v)).collect();
            let next = |id: u32| [id.checked_sub(gap), Some(id + gap)];
            let score_of = |id: u32| raw.get(&id).copied().unwrap_or(0.0);
            let population = scores.len() as u64 + extra;
            let (mut want, want_spread) =
                composed(&scores, population, weight, limit, next, score_of);
            let (mut got, got_spread) = best_with_neighbours(
                scores.iter().copied(), population, weight, limit, next, score_of);
            want.sort_by_key(|e| e.0);
            got.sort_by_key(|e| e.0);
            prop_assert_eq!(
                got.iter().map(|e| (e.0, e.1.to_bits())).collect::<Vec<_>>(),
                want.iter().map(|e| (e.0, e.1.to_bits())).collect::<Vec<_>>()
            );
            assert_same_spread(&got_spread, &want_spread);
        }
    }

    /// At the size it is for (a common word scoring most of 200,000 documents),
    /// the spread still agrees with Welford's one score at a time.
    #[test]
    fn best_with_neighbours_spread_holds_over_many_chunks() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let scores: Vec<(u32, f64)> = (0..200_000u32)
            .map(|id| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (id, (x >> 11) as f64 / (1u64 << 53) as f64 * 12.0)
            })
            .collect();
        let next = |id: u32| [id.checked_sub(1), Some(id + 1)];
        let score_of = |id: u32| scores.get(id as usize).map_or(0.0, |e| e.1);
        for weight in [0.0, 0.3] {
            let (want, want_spread) = composed(&scores, 1_000_000, weight, 400, next, score_of);
            let (got, got_spread) = best_with_neighbours(
                scores.iter().copied(),
                1_000_000,
                weight,
                400,
                next,
                score_of,
            );
            assert_eq!(got.len(), want.len());
            assert_same_spread(&got_spread, &want_spread);
        }
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
            let w = HybridParams { vector: wv, ..HybridParams::default() };
            let fused = fuse_hybrid(&bm, &bs, &ALL, &vec, &vs, &w, depth);
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
