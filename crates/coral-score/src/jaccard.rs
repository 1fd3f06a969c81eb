//! Jaccard similarity over 2048-bit token bitmaps and over sorted token-hash sets.

use coral_base::jaccard_ratio;
use simsimd::BinarySimilarity;

/// Number of `u64` words in a [`Bitmap`].
pub const BITMAP_WORDS: usize = 32;

/// A 2048-bit token map: bit `h % 2048` is set for every token hash `h`; bit `i` lives in word
/// `i / 64` at position `i % 64` (least significant bit first).
pub type Bitmap = [u64; BITMAP_WORDS];

/// Jaccard similarity of two bitmaps: `popcount(a & b) / popcount(a | b)`, `0.0` when both are
/// empty. Always in `[0, 1]`.
///
/// ```
/// let mut a = [0u64; coral_score::BITMAP_WORDS];
/// let mut b = a;
/// a[0] = 0b0111;
/// b[0] = 0b1110;
/// assert_eq!(coral_score::bitmap_jaccard(&a, &b), 0.5);
/// ```
pub fn bitmap_jaccard(a: &Bitmap, b: &Bitmap) -> f64 {
    bitmap_jaccard_with_count(a, popcount(a), b)
}

/// [`bitmap_jaccard`] with `popcount(a)` already known, for scoring many rows against one
/// query bitmap.
///
/// The counts come from simsimd's runtime-dispatched popcount (AVX-512 VPOPCNTDQ or POPCNT where
/// available; the portable `count_ones` fallback is 3-4x slower without `target-cpu` flags):
/// with `h = hamming(a, b)`, `|a ∩ b| = (|a| + |b| − h) / 2` and `|a ∪ b| = (|a| + |b| + h) / 2`,
/// all exact integers.
pub(crate) fn bitmap_jaccard_with_count(a: &Bitmap, count_a: u32, b: &Bitmap) -> f64 {
    let sum = count_a + popcount(b);
    let hamming = hamming(a, b);
    jaccard_ratio(
        ((sum - hamming) / 2) as usize,
        ((sum + hamming) / 2) as usize,
    )
}

const ZERO: Bitmap = [0; BITMAP_WORDS];

/// Number of set bits.
pub(crate) fn popcount(a: &Bitmap) -> u32 {
    hamming(a, &ZERO)
}

/// Number of bits that differ.
fn hamming(a: &Bitmap, b: &Bitmap) -> u32 {
    let (bytes_a, bytes_b) = (bytemuck::bytes_of(a), bytemuck::bytes_of(b));
    match <u8 as BinarySimilarity>::hamming(bytes_a, bytes_b) {
        // An exact count of at most 2048, carried in an f64.
        Some(distance) => distance as u32,
        None => a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coral_base::set_jaccard_sorted;
    use proptest::prelude::*;

    fn bitmap(bits: &[usize]) -> Bitmap {
        let mut map = [0u64; BITMAP_WORDS];
        for &bit in bits {
            map[bit / 64] |= 1 << (bit % 64);
        }
        map
    }

    fn check_bitmap(a: &[usize], b: &[usize], expected: f64) {
        let got = bitmap_jaccard(&bitmap(a), &bitmap(b));
        assert_eq!(got, expected, "bitmap_jaccard({a:?}, {b:?})");
    }

    fn check_set(a: &[u64], b: &[u64], expected: f64) {
        assert_eq!(
            set_jaccard_sorted(a, b),
            expected,
            "set_jaccard_sorted({a:?}, {b:?})"
        );
        assert_eq!(
            set_jaccard_sorted(b, a),
            expected,
            "set_jaccard_sorted({b:?}, {a:?})"
        );
    }

    fn portable_jaccard(a: &Bitmap, b: &Bitmap) -> f64 {
        let inter: u32 = a.iter().zip(b).map(|(x, y)| (x & y).count_ones()).sum();
        let union: u32 = a.iter().zip(b).map(|(x, y)| (x | y).count_ones()).sum();
        jaccard_ratio(inter as usize, union as usize)
    }

    #[test]
    fn bitmap_cases() {
        check_bitmap(&[], &[], 0.0);
        check_bitmap(&[5], &[], 0.0);
        check_bitmap(&[0, 2047], &[0, 2047], 1.0);
        check_bitmap(&[0, 64, 128], &[64], 1.0 / 3.0);
        check_bitmap(&[63, 64], &[64, 65], 1.0 / 3.0);
    }

    #[test]
    fn set_cases() {
        check_set(&[], &[], 0.0);
        check_set(&[1], &[], 0.0);
        check_set(&[1, 2], &[1, 2], 1.0);
        check_set(&[1, 3, 5, 7], &[3, 4, 5], 2.0 / 5.0);
        check_set(&[u64::MAX], &[0, u64::MAX], 0.5);
    }

    fn sorted_set() -> impl Strategy<Value = Vec<u64>> {
        proptest::collection::btree_set(0u64..64, 0..24).prop_map(|s| s.into_iter().collect())
    }

    proptest! {
        #[test]
        fn bitmap_jaccard_in_unit_range(
            a in proptest::array::uniform32(any::<u64>()),
            b in proptest::array::uniform32(any::<u64>()),
        ) {
            let j = bitmap_jaccard(&a, &b);
            prop_assert!((0.0..=1.0).contains(&j));
            prop_assert_eq!(j, portable_jaccard(&a, &b));
            prop_assert_eq!(j, bitmap_jaccard(&b, &a));
            let self_j = bitmap_jaccard(&a, &a);
            prop_assert_eq!(self_j, if a.iter().all(|&w| w == 0) { 0.0 } else { 1.0 });
        }

        #[test]
        fn set_jaccard_symmetric_and_in_range(a in sorted_set(), b in sorted_set()) {
            let j = set_jaccard_sorted(&a, &b);
            prop_assert!((0.0..=1.0).contains(&j));
            prop_assert_eq!(j, set_jaccard_sorted(&b, &a));
        }

        #[test]
        fn set_and_bitmap_agree_without_collisions(a in sorted_set(), b in sorted_set()) {
            let bits = |s: &[u64]| bitmap(&s.iter().map(|&x| x as usize * 31).collect::<Vec<_>>());
            prop_assert_eq!(set_jaccard_sorted(&a, &b), bitmap_jaccard(&bits(&a), &bits(&b)));
        }

        #[test]
        fn set_jaccard_never_panics_on_unsorted(
            a in proptest::collection::vec(0u64..8, 0..12),
            b in proptest::collection::vec(0u64..8, 0..12),
        ) {
            prop_assert!((0.0..=1.0).contains(&set_jaccard_sorted(&a, &b)));
        }
    }
}
