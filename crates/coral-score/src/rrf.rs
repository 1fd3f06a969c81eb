//! Reciprocal-rank fusion of several rankings.

use std::collections::HashMap;

/// Fuses rankings (each a list of ids, best first) by reciprocal rank: every id scores
/// `Σ 1 / (k + rank)` over the rankings it appears in, with 1-based ranks. The usual `k` is 60;
/// a negative or NaN `k` is treated as 0. An id repeated within one ranking counts once, at its
/// best rank. The result is sorted by fused score descending, then id ascending.
///
/// ```
/// let fused = coral_score::rrf(&[&[7, 3], &[3, 9]], 60.0);
/// assert_eq!(fused[0].0, 3);
/// assert!((fused[0].1 - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
/// let ids: Vec<u32> = fused.iter().map(|&(id, _)| id).collect();
/// assert_eq!(ids, [3, 7, 9]);
/// ```
pub fn rrf(rankings: &[&[u32]], k: f64) -> Vec<(u32, f64)> {
    let weighted: Vec<(&[u32], f64)> = rankings.iter().map(|&r| (r, 1.0)).collect();
    rrf_weighted(&weighted, k)
}

/// [`rrf`] with a weight per ranking: every id scores `Σ w / (k + rank)` over the rankings it
/// appears in. A ranking whose weight is 0, negative or NaN is left out altogether, so an id
/// that only it holds is not in the result. Ties and repeats are handled as in [`rrf`].
///
/// A weight below 1 makes a ranking a minority voter: with `k = 60`, the first place of a
/// ranking weighted 0.25 adds `0.25 / 61`, what place 184 of a ranking weighted 1 adds.
///
/// ```
/// // Equal weights: the first place of either ranking wins (ids break the tie).
/// let equal = coral_score::rrf_weighted(&[(&[1, 2], 1.0), (&[2, 1], 1.0)], 0.0);
/// assert_eq!(equal[0].0, 1);
/// // The second ranking weighted 3: its first place wins.
/// let fused = coral_score::rrf_weighted(&[(&[1, 2], 1.0), (&[2, 1], 3.0)], 0.0);
/// assert_eq!(fused[0], (2, 0.5 + 3.0));
/// // Weight 0 leaves a ranking out.
/// assert_eq!(coral_score::rrf_weighted(&[(&[1], 1.0), (&[9], 0.0)], 60.0).len(), 1);
/// ```
pub fn rrf_weighted(rankings: &[(&[u32], f64)], k: f64) -> Vec<(u32, f64)> {
    let k = if k >= 0.0 { k } else { 0.0 };
    // id -> (fused score, index of the last ranking that contributed)
    let mut fused: HashMap<u32, (f64, usize)> = HashMap::new();
    for (list, &(ranking, weight)) in rankings.iter().enumerate() {
        if weight.is_nan() || weight <= 0.0 {
            continue;
        }
        for (i, &id) in ranking.iter().enumerate() {
            let contribution = weight / (k + (i + 1) as f64);
            match fused.get_mut(&id) {
                Some((_, last)) if *last == list => {}
                Some((score, last)) => {
                    *score += contribution;
                    *last = list;
                }
                None => {
                    fused.insert(id, (contribution, list));
                }
            }
        }
    }
    let mut out: Vec<(u32, f64)> = fused.into_iter().map(|(id, (s, _))| (id, s)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(rankings: &[&[u32]], k: f64, expected: &[(u32, f64)]) {
        let got = rrf(rankings, k);
        assert_eq!(got.len(), expected.len(), "{got:?}");
        for (g, e) in got.iter().zip(expected) {
            assert_eq!(g.0, e.0, "{got:?}");
            assert!((g.1 - e.1).abs() < 1e-12, "{got:?}");
        }
    }

    #[test]
    fn cases() {
        check(&[], 60.0, &[]);
        check(&[&[]], 60.0, &[]);
        check(&[&[5]], 60.0, &[(5, 1.0 / 61.0)]);
        check(
            &[&[1, 2], &[2, 1]],
            60.0,
            &[(1, 1.0 / 61.0 + 1.0 / 62.0), (2, 1.0 / 61.0 + 1.0 / 62.0)],
        );
        check(&[&[4, 4, 8]], 0.0, &[(4, 1.0), (8, 1.0 / 3.0)]);
        check(&[&[1], &[2, 3]], f64::NAN, &[(1, 1.0), (2, 1.0), (3, 0.5)]);
        check(&[&[9, 1], &[1]], 1.0, &[(1, 1.0 / 3.0 + 0.5), (9, 0.5)]);
    }

    fn ids(fused: &[(u32, f64)]) -> Vec<u32> {
        fused.iter().map(|&(id, _)| id).collect()
    }

    /// A strong ranking and a weak one that disagree: with equal weights the weak one's first
    /// place wins; weighted a quarter it only lifts its second place (3: 1/63 + 0.25/62) over
    /// its first (4: 1/64 + 0.25/61); weight 0 or below (or NaN) removes it, its ids included.
    #[test]
    fn weights_decide_which_ranking_leads() {
        let strong: &[u32] = &[1, 2, 3, 4];
        let weak: &[u32] = &[4, 3, 9];
        assert_eq!(
            ids(&rrf_weighted(&[(strong, 1.0), (weak, 1.0)], 60.0)),
            [4, 3, 1, 2, 9]
        );
        assert_eq!(ids(&rrf(&[strong, weak], 60.0)), [4, 3, 1, 2, 9]);
        assert_eq!(
            ids(&rrf_weighted(&[(strong, 1.0), (weak, 0.25)], 60.0)),
            [3, 4, 1, 2, 9]
        );
        for off in [0.0, -1.0, f64::NAN] {
            let fused = rrf_weighted(&[(strong, 1.0), (weak, off)], 60.0);
            assert_eq!(ids(&fused), [1, 2, 3, 4]);
            assert!((fused[3].1 - 1.0 / 64.0).abs() < 1e-12);
        }
        // Weights scale contributions exactly.
        let fused = rrf_weighted(&[(&[5], 2.0), (&[5], 0.5)], 60.0);
        assert_eq!(fused.len(), 1);
        assert!((fused[0].1 - 2.5 / 61.0).abs() < 1e-12);
        assert!(rrf_weighted(&[(strong, 0.0)], 60.0).is_empty());
    }
}
