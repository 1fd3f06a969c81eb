//! i8 codes of vectors: each vector scaled to unit length, then to ±127 by its largest
//! component, with one f32 scale per vector so that `cos(a, b) ≈ scale_a · scale_b · Σ a_i b_i`.
//!
//! A code is a quarter of the f32 row (384 bytes at 384 dims) and the integer dot product runs
//! on simsimd's i8 kernels (AVX-512 VNNI on this machine). The error is about 1 % of the cosine
//! on the embedders' vectors, which the exact re-ranking of the best candidates removes.

use simsimd::SpatialSimilarity;

/// Writes the code of `vector` into `out` (same length) and returns its scale; a zero (or
/// non-finite) vector gets an all-zero code and scale 0, so every similarity with it is 0.
pub(crate) fn encode(vector: &[f32], out: &mut [i8]) -> f32 {
    let norm = vector
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    let peak = vector
        .iter()
        .fold(0.0f64, |m, &x| m.max(f64::from(x).abs()));
    if !(norm.is_finite() && norm > 0.0 && peak > 0.0) {
        out.fill(0);
        return 0.0;
    }
    // Unit length first, then the largest component to 127.
    let to_code = 127.0 / peak;
    for (o, &x) in out.iter_mut().zip(vector) {
        *o = (f64::from(x) * to_code).round().clamp(-127.0, 127.0) as i8;
    }
    (peak / norm / 127.0) as f32
}

/// Integer dot product of two codes of equal length.
#[inline]
pub(crate) fn dot_codes(a: &[i8], b: &[i8]) -> f32 {
    match i8::dot(a, b) {
        Some(d) => d as f32,
        None => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_approximate_the_cosine() {
        let a = [0.6f32, -0.8, 0.0, 0.0];
        let b = [3.0f32, 0.0, 4.0, 0.0];
        let (mut ca, mut cb) = ([0i8; 4], [0i8; 4]);
        let (sa, sb) = (encode(&a, &mut ca), encode(&b, &mut cb));
        assert_eq!(ca, [95, -127, 0, 0]);
        let cos = sa * sb * dot_codes(&ca, &cb);
        assert!((cos - 0.36).abs() < 0.01, "{cos}");
        let self_cos = sa * sa * dot_codes(&ca, &ca);
        assert!((self_cos - 1.0).abs() < 0.01, "{self_cos}");
        let mut zero = [1i8; 4];
        assert_eq!(encode(&[0.0; 4], &mut zero), 0.0);
        assert_eq!(zero, [0; 4]);
        assert_eq!(encode(&[f32::NAN, 1.0, 0.0, 0.0], &mut zero), 0.0);
    }

    #[test]
    fn integer_dot_is_exact_on_long_codes() {
        let a: Vec<i8> = (0..384)
            .map(|i: i32| (i * 7) % 255 - 127)
            .map(|v| v as i8)
            .collect();
        let b: Vec<i8> = (0..384)
            .map(|i: i32| (i * 13) % 255 - 127)
            .map(|v| v as i8)
            .collect();
        let want: i64 = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| i64::from(x) * i64::from(y))
            .sum();
        assert_eq!(dot_codes(&a, &b) as i64, want);
    }
}
