//! The near-duplicate test: the candidate token set most similar to a query's, by set Jaccard,
//! when it reaches a threshold.

use coral_base::set_jaccard_sorted;

/// The candidate whose sorted, de-duplicated token-hash set is most similar to `query` by set
/// Jaccard, with that similarity, if it is at least `threshold`. Candidates are `(row, set)`;
/// of equally similar ones the first wins.
///
/// Jaccard can never exceed `|small| / |large|`, so a pair whose sizes alone rule out the
/// threshold is skipped without comparing hashes: on insert most of the hot and warm tiers are
/// skipped this way.
///
/// ```
/// use coral_score::near_duplicate;
///
/// let candidates = [(7, &[1, 2, 3, 4][..]), (9, &[1, 2, 3][..])];
/// assert_eq!(near_duplicate(&[1, 2, 3], candidates, 0.7), Some((9, 1.0)));
/// assert_eq!(near_duplicate(&[5, 6], candidates, 0.7), None);
/// ```
pub fn near_duplicate<'a>(
    query: &[u64],
    candidates: impl IntoIterator<Item = (u32, &'a [u64])>,
    threshold: f64,
) -> Option<(u32, f64)> {
    let mut best: Option<(u32, f64)> = None;
    for (row, set) in candidates {
        let (small, large) = if set.len() < query.len() {
            (set.len(), query.len())
        } else {
            (query.len(), set.len())
        };
        if large > 0 && (small as f64) < threshold * large as f64 {
            continue;
        }
        let j = set_jaccard_sorted(set, query);
        if j >= threshold && best.is_none_or(|(_, b)| j > b) {
            best = Some((row, j));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(query: &[u64], candidates: &[(u32, &[u64])], threshold: f64, expected: Option<u32>) {
        let got = near_duplicate(query, candidates.iter().copied(), threshold).map(|(r, _)| r);
        assert_eq!(
            got, expected,
            "{query:?} against {candidates:?} at {threshold}"
        );
    }

    #[test]
    fn best_match_at_or_above_the_threshold() {
        let a: &[u64] = &[1, 2, 3, 4];
        let b: &[u64] = &[1, 2, 3];
        let c: &[u64] = &[10, 11];
        check(&[1, 2, 3], &[(0, a), (1, b), (2, c)], 0.7, Some(1));
        // 3 of 4 shared: 0.75 reaches 0.75, not 0.76.
        check(&[1, 2, 3], &[(0, a)], 0.75, Some(0));
        check(&[1, 2, 3], &[(0, a)], 0.76, None);
        check(&[1, 2, 3], &[], 0.5, None);
        // Equal similarity: the first candidate wins.
        check(&[1, 2], &[(4, &[1, 2][..]), (5, &[1, 2][..])], 0.5, Some(4));
    }

    #[test]
    fn the_size_bound_never_skips_a_match() {
        // Sizes 2 and 3 bound Jaccard by 2/3: at threshold 2/3 the pair is compared and matches.
        let two_thirds = 2.0 / 3.0;
        check(&[1, 2], &[(0, &[1, 2, 3][..])], two_thirds, Some(0));
        // Two empty sets have Jaccard 0: only a zero threshold takes them.
        check(&[], &[(0, &[][..])], 0.0, Some(0));
        check(&[], &[(0, &[][..])], 0.1, None);
    }
}
