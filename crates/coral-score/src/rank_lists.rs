//! The one pass behind rank fusion: a pool's best rows by vector and by bitmap Jaccard at once.

use std::ops::Range;

use rayon::prelude::*;
use roaring::RoaringBitmap;

use crate::jaccard::{bitmap_jaccard_with_count, popcount};
use crate::scan::PARALLEL_THRESHOLD;
use crate::{Bitmap, ScanRows, Scored, Spread, TopK, time_decay};

/// What [`rank_lists`] ranks.
#[derive(Clone, Copy, Debug)]
pub struct ListQuery<'a> {
    /// Query embedding. `None`, or a length other than the pool's `dim`, leaves the vector
    /// ranking empty.
    pub vector: Option<&'a [f32]>,
    /// Query token bitmap.
    pub bitmap: &'a Bitmap,
    /// Current time, Unix seconds (for the reported time term only).
    pub now: f64,
    /// Decay constant in days (for the reported time term only).
    pub tau_days: f64,
    /// Length of each ranking.
    pub depth: usize,
    /// If set, only these rows are candidates.
    pub allow: Option<&'a RoaringBitmap>,
}

/// Two rankings of the same candidates, each best first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rankings {
    /// Rows by dot product with the query vector; `score` is the dot product.
    pub vector: Vec<Scored>,
    /// Rows by bitmap Jaccard with the query bitmap; `score` is the Jaccard.
    pub jaccard: Vec<Scored>,
    /// The dot products of every candidate (empty without a query vector), for hybrid
    /// fusion's z-scores ([`crate::fuse_hybrid`]).
    pub vector_spread: Spread,
}

/// Ranks the candidate rows by vector and by bitmap Jaccard in one pass over the pool.
///
/// Each ranking holds at most `depth` rows and only rows whose key is positive: a row that
/// shares nothing with the query is not evidence for it. Ties rank like [`TopK`]: newer
/// timestamp, then smaller tiebreak key, then smaller row. Every entry carries all three
/// component scores (`vector`, `jaccard`, and the `time` decay), whatever list it is in.
/// Pools of at least [`PARALLEL_THRESHOLD`] rows are scanned in parallel chunks.
///
/// ```
/// use coral_score::{Bitmap, ListQuery, ScanRows, rank_lists};
/// let vectors = [1.0, 0.0, /* row 1 */ 0.6, 0.8];
/// let mut bitmaps: [Bitmap; 2] = [[0; 32]; 2];
/// bitmaps[1][0] = 0b1;
/// let pool = ScanRows { dim: 2, vectors: &vectors, sparse: None, bitmaps: &bitmaps, timestamps: &[0.0, 0.0], tiebreak: &[0, 1] };
/// let mut q: Bitmap = [0; 32];
/// q[0] = 0b1;
/// let lists = rank_lists(&pool, &ListQuery { vector: Some(&[1.0, 0.0]), bitmap: &q, now: 0.0, tau_days: 7.0, depth: 10, allow: None });
/// assert_eq!(lists.vector.iter().map(|h| h.row).collect::<Vec<_>>(), [0, 1]);
/// assert_eq!(lists.jaccard.iter().map(|h| h.row).collect::<Vec<_>>(), [1]);
/// ```
pub fn rank_lists(pool: &ScanRows, query: &ListQuery) -> Rankings {
    let rows = pool.len();
    let chunk_rows = if rows >= PARALLEL_THRESHOLD {
        rows.div_ceil(4 * rayon::current_num_threads()).max(256)
    } else {
        rows
    };
    rank_lists_chunked(pool, query, chunk_rows)
}

/// [`rank_lists`] with an explicit chunk size, so tests can drive the parallel path.
fn rank_lists_chunked(pool: &ScanRows, query: &ListQuery, chunk_rows: usize) -> Rankings {
    let rows = pool.len();
    if query.depth == 0 || rows == 0 {
        return Rankings::default();
    }
    let ranker = Ranker {
        pool,
        query,
        vector: query.vector.filter(|v| pool.dim > 0 && v.len() == pool.dim),
        bitmap_count: popcount(query.bitmap),
    };
    let chunk_rows = chunk_rows.max(1);
    let (vector, jaccard, vector_spread) = if chunk_rows >= rows {
        ranker.rank(0..rows)
    } else {
        (0..rows.div_ceil(chunk_rows))
            .into_par_iter()
            .map(|chunk| {
                let start = chunk * chunk_rows;
                ranker.rank(start..rows.min(start + chunk_rows))
            })
            .reduce_with(|mut a, b| {
                a.0.merge(b.0);
                a.1.merge(b.1);
                a.2.merge(&b.2);
                a
            })
            .unwrap_or_else(|| {
                (
                    TopK::new(query.depth),
                    TopK::new(query.depth),
                    Spread::default(),
                )
            })
    };
    let with_time = |top: TopK| -> Vec<Scored> {
        let mut hits = top.into_sorted_vec();
        for hit in &mut hits {
            let age = query.now - pool.timestamps[hit.row as usize];
            hit.time = time_decay(age, query.tau_days);
        }
        hits
    };
    Rankings {
        vector: with_time(vector),
        jaccard: with_time(jaccard),
        vector_spread,
    }
}

struct Ranker<'a> {
    pool: &'a ScanRows<'a>,
    query: &'a ListQuery<'a>,
    /// The query vector when it matches the pool's dimension.
    vector: Option<&'a [f32]>,
    bitmap_count: u32,
}

impl Ranker<'_> {
    fn rank(&self, rows: Range<usize>) -> (TopK, TopK, Spread) {
        let mut by_vector = TopK::new(self.query.depth);
        let mut by_jaccard = TopK::new(self.query.depth);
        let mut spread = Spread::default();
        let pool = self.pool;
        let mut visit = |r: usize| {
            let vector = match self.vector {
                Some(q) => {
                    let v = pool.dot(q, r);
                    spread.add(f64::from(v));
                    v
                }
                None => 0.0,
            };
            let jaccard = if self.bitmap_count == 0 {
                0.0
            } else {
                bitmap_jaccard_with_count(self.query.bitmap, self.bitmap_count, &pool.bitmaps[r])
            };
            let hit = Scored {
                row: r as u32,
                score: 0.0,
                vector,
                jaccard,
                time: 0.0,
            };
            let (timestamp, key) = (pool.timestamps[r], pool.tiebreak[r]);
            // `> 0.0` also keeps NaN out.
            if vector > 0.0 {
                let score = f64::from(vector);
                by_vector.push_keyed(Scored { score, ..hit }, timestamp, key);
            }
            if jaccard > 0.0 {
                by_jaccard.push_keyed(
                    Scored {
                        score: jaccard,
                        ..hit
                    },
                    timestamp,
                    key,
                );
            }
        };
        match self.query.allow {
            Some(allow) => allow
                .range(rows.start as u32..rows.end as u32)
                .for_each(|r| visit(r as usize)),
            None => rows.for_each(visit),
        }
        (by_vector, by_jaccard, spread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topk::rank;
    use crate::{bitmap_jaccard, dot};
    use proptest::prelude::*;

    /// Every candidate scored on its own, sorted in full, cut to depth.
    fn reference(pool: &ScanRows, query: &ListQuery) -> Rankings {
        let mut vector = Vec::new();
        let mut jaccard = Vec::new();
        for r in 0..pool.len() {
            if query.allow.is_some_and(|a| !a.contains(r as u32)) {
                continue;
            }
            let v = match query.vector {
                Some(q) if pool.dim > 0 && q.len() == pool.dim => {
                    dot(q, &pool.vectors[r * pool.dim..(r + 1) * pool.dim])
                }
                _ => 0.0,
            };
            let j = bitmap_jaccard(query.bitmap, &pool.bitmaps[r]);
            let hit = Scored {
                row: r as u32,
                score: 0.0,
                vector: v,
                jaccard: j,
                time: time_decay(query.now - pool.timestamps[r], query.tau_days),
            };
            let keys = (pool.timestamps[r], pool.tiebreak[r]);
            if v > 0.0 {
                vector.push((
                    Scored {
                        score: f64::from(v),
                        ..hit
                    },
                    keys.0,
                    keys.1,
                ));
            }
            if j > 0.0 {
                jaccard.push((Scored { score: j, ..hit }, keys.0, keys.1));
            }
        }
        let finish = |mut list: Vec<(Scored, f64, u64)>| {
            list.sort_by(|&a, &b| rank(a, b));
            list.into_iter()
                .take(query.depth)
                .map(|e| e.0)
                .collect::<Vec<_>>()
        };
        let vector_spread = if query
            .vector
            .is_some_and(|q| pool.dim > 0 && q.len() == pool.dim)
        {
            let allowed =
                (0..pool.len()).filter(|r| query.allow.is_none_or(|a| a.contains(*r as u32)));
            Spread::of(
                allowed.map(|r| {
                    f64::from(dot(
                        query.vector.unwrap(),
                        &pool.vectors[r * pool.dim..(r + 1) * pool.dim],
                    ))
                }),
                0,
            )
        } else {
            Spread::default()
        };
        Rankings {
            vector: finish(vector),
            jaccard: finish(jaccard),
            vector_spread,
        }
    }

    /// The lists equal, the spreads equal up to the order of additions.
    fn same(got: &Rankings, want: &Rankings) -> bool {
        let s = (&got.vector_spread, &want.vector_spread);
        got.vector == want.vector
            && got.jaccard == want.jaccard
            && s.0.count() == s.1.count()
            && (s.0.mean() - s.1.mean()).abs() < 1e-9
            && (s.0.std_dev() - s.1.std_dev()).abs() < 1e-9
    }

    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed | 1;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    proptest! {
        #[test]
        fn equals_reference(
            seed in any::<u64>(),
            rows in 0usize..60,
            depth in 0usize..12,
            chunk_rows in 1usize..20,
            filtered in any::<bool>(),
        ) {
            let mut next = xorshift(seed);
            let dim = 3;
            // Few distinct values, so ties are common.
            let vectors: Vec<f32> = (0..rows * dim).map(|_| (next() % 3) as f32 - 1.0).collect();
            let bitmaps: Vec<Bitmap> = (0..rows)
                .map(|_| {
                    let mut m = [0u64; 32];
                    m[0] = next() % 8;
                    m
                })
                .collect();
            let timestamps: Vec<f64> = (0..rows).map(|_| (next() % 3) as f64).collect();
            let tiebreak: Vec<u64> = (0..rows).map(|_| next() % 3).collect();
            let pool = ScanRows { dim, vectors: &vectors, sparse: None, bitmaps: &bitmaps, timestamps: &timestamps, tiebreak: &tiebreak };
            let mut bitmap = [0u64; 32];
            bitmap[0] = 0b101;
            let allow: RoaringBitmap = (0..rows as u32).filter(|r| r % 3 != 1).collect();
            let query = ListQuery {
                vector: Some(&[1.0, 0.5, -0.5]),
                bitmap: &bitmap,
                now: 10.0,
                tau_days: 1.0,
                depth,
                allow: filtered.then_some(&allow),
            };
            let expected = reference(&pool, &query);
            // Depth 0 ranks nothing, spreads included.
            if depth > 0 {
                prop_assert!(same(&rank_lists(&pool, &query), &expected));
                prop_assert!(same(&rank_lists_chunked(&pool, &query, chunk_rows), &expected));
            } else {
                prop_assert_eq!(&rank_lists(&pool, &query), &Rankings::default());
            }
            let no_vector = ListQuery { vector: Some(&[1.0]), ..query };
            prop_assert!(rank_lists(&pool, &no_vector).vector.is_empty());
        }
    }
}
