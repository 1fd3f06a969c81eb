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
    let k = if k >= 0.0 { k } else { 0.0 };
    // id -> (fused score, index of the last ranking that contributed)
    let mut fused: HashMap<u32, (f64, usize)> = HashMap::new();
    for (list, ranking) in rankings.iter().enumerate() {
        for (i, &id) in ranking.iter().enumerate() {
            let contribution = 1.0 / (k + (i + 1) as f64);
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
}
