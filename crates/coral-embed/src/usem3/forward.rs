//! The network's forward pass: token rows through the three CNN branches into per-token
//! features, summed per sentence; then the output layers into the L2-normalised vector.
//!
//! Rows of several sentences (or pieces of one long sentence) run together, so each weight
//! matrix is streamed once per batch of rows (`gemm`, on weights packed at load). A window slot outside its own segment reads zeros, which
//! is the model's zero padding at sentence edges. A token's features depend on the tokens at
//! most [`HALO`] away (two layers of windows reaching two tokens either side), so a long
//! sentence can be cut into segments that carry `HALO` extra tokens on each side: their own
//! rows come out exactly as if the sentence ran whole, and only those are summed.

use std::ops::Range;

use super::gemm::matmul;
use super::weights::{Branch, CNN, DIM, EMBED, FEATURES, HIDDEN, Weights};

/// How far a token's features reach: two layers, each reaching two tokens either way.
pub(crate) const HALO: usize = 4;

/// Tokens of one sentence that run in one batch: `ids` includes the halo, `own` (a range of
/// `ids`) is what this segment contributes to the sentence's sum.
#[derive(Clone, Debug)]
pub(crate) struct Segment<'a> {
    /// Index of the sentence in the call.
    pub sentence: usize,
    /// Token ids, halo included.
    pub ids: &'a [u32],
    /// The rows of `ids` whose features this segment adds.
    pub own: Range<usize>,
}

/// Layer norm of one row, in place (numpy's order of operations).
fn layer_norm(row: &mut [f32], gain: &[f32], bias: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let mut var = 0.0;
    for v in row.iter_mut() {
        *v -= mean;
        var += *v * *v;
    }
    let inv = 1.0 / (var / n + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(gain).zip(bias) {
        *v = *v * inv * g + b;
    }
}

/// Per row: the rows `[lo, hi)` of its own segment, the only ones its windows may read.
#[derive(Debug, Default)]
struct Bounds {
    lo: Vec<usize>,
    hi: Vec<usize>,
}

/// The windows of `branch` over `CNN` columns of `src` (starting at `col`, rows `ld` apart)
/// into `out` (`rows × order * CNN`): slot `s` of row `r` is row `r + s - left`, or zeros.
fn gather(src: &[f32], ld: usize, col: usize, branch: &Branch, bounds: &Bounds, out: &mut [f32]) {
    let width = branch.order * CNN;
    for (r, window) in out.chunks_exact_mut(width).enumerate() {
        for (slot, dst) in window.chunks_exact_mut(CNN).enumerate() {
            let at = (r + slot).checked_sub(branch.left);
            match at {
                Some(at) if at >= bounds.lo[r] && at < bounds.hi[r] => {
                    dst.copy_from_slice(&src[at * ld + col..at * ld + col + CNN]);
                }
                _ => dst.fill(0.0),
            }
        }
    }
}

/// `rows[r] = relu(rows[r] + bias) + residual[r]` for `CNN`-wide rows `ld` / `res_ld` apart.
fn relu_bias_residual(
    rows: &mut [f32],
    ld: usize,
    bias: &[f32],
    residual: &[f32],
    res_ld: usize,
    count: usize,
) {
    for r in 0..count {
        let row = &mut rows[r * ld..r * ld + CNN];
        let res = &residual[r * res_ld..r * res_ld + CNN];
        for ((v, b), x) in row.iter_mut().zip(bias).zip(res) {
            *v = (*v + b).max(0.0) + x;
        }
    }
}

/// The buffers of one batch, kept between batches so that steady embedding does not allocate
/// (and so that freed megabytes do not pile up in the allocator's per-thread arenas).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    feats: Vec<f32>,
    x: Vec<f32>,
    window: Vec<f32>,
    h: Vec<f32>,
    bounds: Bounds,
}

/// `v` resized to `len` zeros, reusing its allocation.
fn zeroed(v: &mut Vec<f32>, len: usize) -> &mut [f32] {
    v.clear();
    v.resize(len, 0.0);
    v
}

/// Each segment's sum of its own rows' features (`segments.len() × FEATURES`).
pub(crate) fn feature_sums(
    w: &Weights,
    segments: &[Segment<'_>],
    scratch: &mut Scratch,
) -> Vec<f32> {
    let rows: usize = segments.iter().map(|s| s.ids.len()).sum();
    let Scratch {
        feats,
        x,
        window,
        h,
        bounds,
    } = scratch;
    bounds.lo.clear();
    bounds.hi.clear();
    let feats = zeroed(feats, rows * FEATURES);
    let mut r = 0;
    for s in segments {
        let start = r;
        for &id in s.ids {
            w.embedding(id, &mut feats[r * FEATURES..r * FEATURES + EMBED]);
            bounds.lo.push(start);
            bounds.hi.push(start + s.ids.len());
            r += 1;
        }
    }

    // The three branches' projections, layer-normed together.
    let proj_w = 3 * CNN;
    let x = zeroed(x, rows * proj_w);
    matmul(w.arch, rows, feats, FEATURES, &w.proj, x, proj_w, false);
    for row in x.chunks_exact_mut(proj_w) {
        for (v, b) in row.iter_mut().zip(&w.proj_b) {
            *v += b;
        }
        layer_norm(row, &w.ln1_g, &w.ln1_b, w.eps);
    }

    let widest = w.branches.iter().map(|b| b.order).max().unwrap_or(1) * CNN;
    let window = zeroed(window, rows * widest);
    let h = zeroed(h, rows * CNN);
    for (i, branch) in w.branches.iter().enumerate() {
        let k = branch.order * CNN;
        let window = &mut window[..rows * k];
        gather(x, proj_w, i * CNN, branch, bounds, window);
        matmul(w.arch, rows, window, k, &branch.w1, h, CNN, false);
        relu_bias_residual(h, CNN, &branch.b1, &x[i * CNN..], proj_w, rows);
        gather(h, CNN, 0, branch, bounds, window);
        let out = &mut feats[EMBED + i * CNN..];
        matmul(w.arch, rows, window, k, &branch.w2, out, FEATURES, false);
        relu_bias_residual(out, FEATURES, &branch.b2, h, CNN, rows);
    }

    let mut sums = vec![0.0f32; segments.len() * FEATURES];
    let mut r = 0;
    for (s, sum) in segments.iter().zip(sums.chunks_exact_mut(FEATURES)) {
        for t in s.own.clone() {
            let row = &mut feats[(r + t) * FEATURES..(r + t + 1) * FEATURES];
            layer_norm(row, &w.ln_g, &w.ln_b, w.eps);
            for (acc, v) in sum.iter_mut().zip(row.iter()) {
                *acc += v;
            }
        }
        r += s.ids.len();
    }
    sums
}

/// Sentence vectors from feature sums (`lens.len() × FEATURES`) and token counts.
pub(crate) fn sentence_vectors(w: &Weights, sums: &[f32], lens: &[usize]) -> Vec<Vec<f32>> {
    let n = lens.len();
    let mut m = vec![0.0f32; n * DIM];
    matmul(w.arch, n, sums, FEATURES, &w.cnn_w, &mut m, DIM, false);
    for (row, &len) in m.chunks_exact_mut(DIM).zip(lens) {
        let len = len as f32;
        let inv = 1.0 / len.sqrt();
        for (v, b) in row.iter_mut().zip(&w.cnn_b) {
            *v = (*v + len * b) * inv;
        }
    }
    let relu = |v: &mut [f32]| v.iter_mut().for_each(|x| *x = x.max(0.0));
    let mut y0 = vec![0.0f32; n * HIDDEN];
    matmul(w.arch, n, &m, DIM, &w.d0, &mut y0, HIDDEN, false);
    relu(&mut y0);
    let mut y1 = vec![0.0f32; n * HIDDEN];
    matmul(w.arch, n, &m, DIM, &w.p1, &mut y1, HIDDEN, false);
    matmul(w.arch, n, &y0, HIDDEN, &w.d1, &mut y1, HIDDEN, true);
    relu(&mut y1);
    let mut y2 = vec![0.0f32; n * DIM];
    matmul(w.arch, n, &y1, HIDDEN, &w.d2, &mut y2, DIM, false);
    relu(&mut y2);
    let mut z = vec![0.0f32; n * DIM];
    matmul(w.arch, n, &y1, HIDDEN, &w.p3, &mut z, DIM, false);
    matmul(w.arch, n, &y2, DIM, &w.d3, &mut z, DIM, true);
    z.chunks_exact(DIM)
        .map(|row| {
            let mut v: Vec<f32> = row.iter().map(|x| x.tanh()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().max(w.eps).sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        })
        .collect()
}
