//! A bounded top-k collector of scored rows with a total, deterministic ranking order.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One scored pool row with its component scores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored {
    /// Row number in the pool.
    pub row: u32,
    /// Fused score (including any boost).
    pub score: f64,
    /// Vector term (dot product), before weighting.
    pub vector: f32,
    /// Bitmap Jaccard term, before weighting.
    pub jaccard: f64,
    /// Time-decay term, before weighting.
    pub time: f64,
}

/// Keeps the best `k` hits seen so far in O(k) memory.
///
/// Ranking: higher score first, then newer timestamp first, then smaller tiebreak key first,
/// and finally smaller row number, so the order is total and does not depend on push order.
/// Floats are compared with [`f64::total_cmp`].
///
/// ```
/// use coral_score::{Scored, TopK};
/// let hit = |row, score| Scored { row, score, vector: 0.0, jaccard: 0.0, time: 0.0 };
/// let mut top = TopK::new(2);
/// for (row, score) in [(0, 0.1), (1, 0.9), (2, 0.5), (3, 0.7)] {
///     top.push(hit(row, score));
/// }
/// let rows: Vec<u32> = top.into_sorted_vec().iter().map(|h| h.row).collect();
/// assert_eq!(rows, [1, 3]);
/// ```
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    /// Max-heap under [`Entry`]'s order, whose greatest element ranks last: the root is the
    /// current worst kept hit, the one a better newcomer replaces.
    heap: BinaryHeap<Entry>,
}

impl TopK {
    /// An empty collector keeping at most `k` hits (`k == 0` keeps nothing).
    pub fn new(k: usize) -> Self {
        // Cap the up-front allocation: `k` may be "everything" (usize::MAX).
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1024)),
        }
    }

    /// Offers a hit on its own. With no pool at hand, the time term `hit.time` stands in for
    /// the timestamp (it is monotone in it) and the row number is the tiebreak key.
    pub fn push(&mut self, hit: Scored) {
        self.push_keyed(hit, hit.time, u64::from(hit.row));
    }

    /// Offers a hit with its explicit tie-break keys: the row's `timestamp` (newer wins) and
    /// `tiebreak` key (smaller wins).
    pub fn push_keyed(&mut self, hit: Scored, timestamp: f64, tiebreak: u64) {
        self.push_entry(Entry {
            hit,
            timestamp,
            tiebreak,
        });
    }

    /// Number of hits currently kept.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no hit is kept.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The kept hits, best first.
    pub fn into_sorted_vec(self) -> Vec<Scored> {
        // Ascending under Entry's order is best first.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| e.hit)
            .collect()
    }

    /// Folds another collector's hits into this one.
    pub(crate) fn merge(&mut self, other: TopK) {
        for entry in other.heap {
            self.push_entry(entry);
        }
    }

    fn push_entry(&mut self, entry: Entry) {
        if self.heap.len() < self.k {
            self.heap.push(entry);
        } else if let Some(mut worst) = self.heap.peek_mut()
            && entry < *worst
        {
            *worst = entry;
        }
    }
}

/// A hit plus the keys that break score ties.
#[derive(Clone, Copy, Debug)]
struct Entry {
    hit: Scored,
    timestamp: f64,
    tiebreak: u64,
}

/// `Less` means "ranks before" (better).
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .hit
            .score
            .total_cmp(&self.hit.score)
            .then_with(|| other.timestamp.total_cmp(&self.timestamp))
            .then_with(|| self.tiebreak.cmp(&other.tiebreak))
            .then_with(|| self.hit.row.cmp(&other.hit.row))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

/// Ranks two hits with explicit keys the way [`TopK`] does (`Less` = `a` first). Used by tests
/// as the reference order.
#[cfg(test)]
pub(crate) fn rank(a: (Scored, f64, u64), b: (Scored, f64, u64)) -> Ordering {
    let entry = |(hit, timestamp, tiebreak)| Entry {
        hit,
        timestamp,
        tiebreak,
    };
    entry(a).cmp(&entry(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hit(row: u32, score: f64) -> Scored {
        Scored {
            row,
            score,
            vector: 0.0,
            jaccard: 0.0,
            time: 0.0,
        }
    }

    #[test]
    fn zero_k_keeps_nothing() {
        let mut top = TopK::new(0);
        top.push(hit(0, 1.0));
        assert!(top.is_empty());
        assert!(top.into_sorted_vec().is_empty());
    }

    #[test]
    fn ties_break_by_timestamp_then_key_then_row() {
        let mut top = TopK::new(4);
        top.push_keyed(hit(0, 0.5), 10.0, 7);
        top.push_keyed(hit(1, 0.5), 20.0, 9);
        top.push_keyed(hit(2, 0.5), 10.0, 3);
        top.push_keyed(hit(3, 0.5), 10.0, 3);
        top.push_keyed(hit(4, 0.5), 5.0, 0);
        let rows: Vec<u32> = top.into_sorted_vec().iter().map(|h| h.row).collect();
        assert_eq!(rows, [1, 2, 3, 0]);
    }

    #[test]
    fn huge_k_does_not_preallocate() {
        let mut top = TopK::new(usize::MAX);
        top.push(hit(1, 1.0));
        assert_eq!(top.len(), 1);
    }

    proptest! {
        #[test]
        fn equals_full_sort_prefix(
            items in proptest::collection::vec((0u8..6, 0u8..4, 0u64..4), 0..80),
            k in 0usize..12,
            split in 0usize..80,
        ) {
            let keyed: Vec<(Scored, f64, u64)> = items
                .iter()
                .enumerate()
                .map(|(row, &(s, t, tb))| (hit(row as u32, f64::from(s) / 4.0), f64::from(t), tb))
                .collect();
            // Two collectors merged must equal one collector and the sorted prefix.
            let split = split.min(keyed.len());
            let mut left = TopK::new(k);
            let mut right = TopK::new(k);
            for &(h, t, tb) in &keyed[..split] {
                left.push_keyed(h, t, tb);
            }
            for &(h, t, tb) in &keyed[split..] {
                right.push_keyed(h, t, tb);
            }
            left.merge(right);
            let mut reference = keyed.clone();
            reference.sort_by(|&a, &b| rank(a, b));
            let expected: Vec<Scored> = reference.iter().take(k).map(|e| e.0).collect();
            prop_assert_eq!(left.into_sorted_vec(), expected);
        }
    }
}
