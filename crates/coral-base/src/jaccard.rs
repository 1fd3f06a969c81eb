//! Set Jaccard of sorted, de-duplicated token-hash sets (the near-duplicate test on insert and
//! the clustering of distillation) and the ratio rule every Jaccard shares.

use std::cmp::Ordering;

/// `|A ∩ B| / |A ∪ B|` for two sorted, de-duplicated slices; 0 when both are empty.
///
/// Unsorted or duplicated input gives a meaningless (but finite, 0..=1) number, never a panic.
pub fn set_jaccard_sorted(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut inter) = (0usize, 0usize, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    jaccard_ratio(inter, a.len() + b.len() - inter)
}

/// `inter / union`, and 0 for two empty sets (`union == 0`): the one rule of every Jaccard in
/// Coral (sets here, bitmaps in coral-score).
#[inline]
pub fn jaccard_ratio(inter: usize, union: usize) -> f64 {
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(a: &[u64], b: &[u64], expected: f64) {
        let got = set_jaccard_sorted(a, b);
        assert!(
            (got - expected).abs() < 1e-12,
            "{a:?} vs {b:?}: {got}, expected {expected}"
        );
        assert_eq!(
            got.to_bits(),
            set_jaccard_sorted(b, a).to_bits(),
            "not symmetric"
        );
    }

    #[test]
    fn jaccard_table() {
        check(&[1, 2, 3], &[4, 5], 0.0);
        check(&[1, 2, 3, 4], &[3, 4, 5, 6], 2.0 / 6.0);
        check(&[1, 5, 9], &[5], 1.0 / 3.0);
        check(&[0, u64::MAX], &[u64::MAX], 0.5);
    }

    #[test]
    fn edge_cases() {
        assert_eq!(set_jaccard_sorted(&[], &[]), 0.0);
        assert_eq!(set_jaccard_sorted(&[1], &[]), 0.0);
        assert_eq!(set_jaccard_sorted(&[1, 2, 3], &[1, 2, 3]), 1.0);
        assert_eq!(set_jaccard_sorted(&[1, 2], &[2, 3]), 1.0 / 3.0);
        let garbage = set_jaccard_sorted(&[3, 1, 1, 2], &[2, 2, 1]);
        assert!((0.0..=1.0).contains(&garbage));
    }
}
