//! Dense vector similarity over `f32` slices: dot product and cosine.

use simsimd::SpatialSimilarity;

/// Dot product of two vectors.
///
/// Uses simsimd's runtime-dispatched SIMD kernel and falls back to a scalar loop if simsimd
/// declines. If the lengths differ, only the common prefix (the shorter length) is used; an
/// empty input gives `0.0`.
///
/// ```
/// assert_eq!(coral_score::dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
/// assert_eq!(coral_score::dot(&[1.0, 2.0], &[3.0]), 3.0);
/// ```
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_f64(a, b) as f32
}

/// Cosine similarity of two vectors that need not be normalised.
///
/// Uses the common prefix like [`dot`]. Returns `0.0` when either vector has norm zero. The
/// result is not clamped, so rounding may take it a hair outside `[-1, 1]`.
///
/// ```
/// let c = coral_score::cosine(&[3.0, 0.0], &[2.0, 2.0]);
/// assert!((c - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
/// assert_eq!(coral_score::cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
/// ```
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let norm_a = dot_f64(a, a);
    let norm_b = dot_f64(b, b);
    if norm_a == 0.0 || norm_b == 0.0 {
        return 0.0;
    }
    (dot_f64(a, b) / (norm_a.sqrt() * norm_b.sqrt())) as f32
}

/// [`dot`] before the final rounding to `f32`.
fn dot_f64(a: &[f32], b: &[f32]) -> f64 {
    let n = a.len().min(b.len());
    if n == 0 {
        return 0.0;
    }
    let (a, b) = (&a[..n], &b[..n]);
    <f32 as SpatialSimilarity>::dot(a, b).unwrap_or_else(|| scalar_dot(a, b))
}

/// Portable dot product with eight independent accumulators so the compiler can vectorise it.
/// Callers pass slices of equal length.
fn scalar_dot(a: &[f32], b: &[f32]) -> f64 {
    const LANES: usize = 8;
    let chunks_a = a.chunks_exact(LANES);
    let chunks_b = b.chunks_exact(LANES);
    let tail: f64 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| f64::from(x * y))
        .sum();
    let mut lanes = [0.0f32; LANES];
    for (xs, ys) in chunks_a.zip(chunks_b) {
        for ((lane, x), y) in lanes.iter_mut().zip(xs).zip(ys) {
            *lane += x * y;
        }
    }
    lanes.iter().map(|&l| f64::from(l)).sum::<f64>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_dot(a: &[f32], b: &[f32], expected: f32) {
        let got = dot(a, b);
        assert!(
            (got - expected).abs() <= 1e-5,
            "dot({a:?}, {b:?}) = {got}, want {expected}"
        );
    }

    #[test]
    fn dot_cases() {
        check_dot(&[], &[], 0.0);
        check_dot(&[], &[1.0], 0.0);
        check_dot(&[2.0], &[3.0], 6.0);
        check_dot(&[1.0, -1.0, 0.5], &[1.0, 1.0, 2.0], 1.0);
        check_dot(&[1.0, 2.0, 3.0, 4.0], &[1.0, 1.0], 3.0);
        let ones = vec![1.0f32; 385];
        check_dot(&ones, &ones, 385.0);
    }

    #[test]
    fn scalar_fallback_matches_simd() {
        for n in [1usize, 7, 8, 9, 31, 384, 512, 1000] {
            let a: Vec<f32> = (0..n).map(|i| ((i * 7 % 13) as f32 - 6.0) / 10.0).collect();
            let b: Vec<f32> = (0..n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 10.0).collect();
            let simd = dot_f64(&a, &b);
            let scalar = scalar_dot(&a, &b);
            assert!((simd - scalar).abs() < 1e-4, "n={n}: {simd} vs {scalar}");
        }
    }

    #[test]
    fn cosine_cases() {
        assert_eq!(cosine(&[], &[]), 0.0);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 0.0]), 0.0);
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert!((cosine(&[1.0, 2.0], &[-2.0, -4.0]) + 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 5.0]).abs() < 1e-6);
    }
}
