//! USE multilingual v3's parameters, read from the package's `weights.npz`: the uint8
//! embedding table (kept quantised, 65 MB, each row dequantised when a token needs it) and
//! the float32 matrices of the CNN and the output layers (13 MB, packed for `gemm`), every
//! shape checked.

use std::path::Path;

use super::gemm::Packed;
use super::npy;
use super::zip::ZipArchive;

/// Width of a token embedding.
pub(crate) const EMBED: usize = 512;
/// Width of each CNN branch.
pub(crate) const CNN: usize = 256;
/// The three branches: (n-gram order, tokens of left context).
pub(crate) const ORDERS: [(usize, usize); 3] = [(2, 0), (3, 1), (5, 2)];
/// Per-token features: the embedding and the three branches.
pub(crate) const FEATURES: usize = EMBED + ORDERS.len() * CNN;
/// Width of the hidden output layers.
pub(crate) const HIDDEN: usize = 320;
/// Width of the sentence vector.
pub(crate) const DIM: usize = 512;
/// The embedding table is split into this many uint8 blocks; piece `i` is in block `i % 17`,
/// row `i / 17`, and each block has its own scale and offset.
pub(crate) const BLOCKS: usize = 17;
/// Rows per block.
pub(crate) const BLOCK_ROWS: usize = 7530;

/// One CNN branch: two layers of `relu(window · w + b) + input`.
#[derive(Debug)]
pub(crate) struct Branch {
    /// N-gram order: tokens per window.
    pub order: usize,
    /// How many of them lie before the token.
    pub left: usize,
    /// `order * CNN × CNN`.
    pub w1: Packed,
    /// `CNN`.
    pub b1: Vec<f32>,
    /// `order * CNN × CNN`.
    pub w2: Packed,
    /// `CNN`.
    pub b2: Vec<f32>,
}

/// Every parameter of the network.
#[derive(Debug)]
pub(crate) struct Weights {
    /// `BLOCKS` tables of `BLOCK_ROWS × EMBED` bytes.
    pub blocks: Vec<Vec<u8>>,
    /// Per block: value = byte * scale + lo.
    pub scale: Vec<f32>,
    /// Per block offset.
    pub lo: Vec<f32>,
    /// The three branches' input projections side by side: `EMBED × 3 * CNN`.
    pub proj: Packed,
    /// `3 * CNN`.
    pub proj_b: Vec<f32>,
    /// Layer norm over the three projections together: gain and bias, `3 * CNN` each.
    pub ln1_g: Vec<f32>,
    /// See `ln1_g`.
    pub ln1_b: Vec<f32>,
    /// The branches, in [`ORDERS`] order.
    pub branches: Vec<Branch>,
    /// Layer norm over the `FEATURES` of a token.
    pub ln_g: Vec<f32>,
    /// See `ln_g`.
    pub ln_b: Vec<f32>,
    /// `FEATURES × DIM`: the pooled features' projection.
    pub cnn_w: Packed,
    /// `DIM`, added once per token.
    pub cnn_b: Vec<f32>,
    /// `DIM × HIDDEN`.
    pub d0: Packed,
    /// `DIM × HIDDEN`.
    pub p1: Packed,
    /// `HIDDEN × HIDDEN`.
    pub d1: Packed,
    /// `HIDDEN × DIM`.
    pub d2: Packed,
    /// `HIDDEN × DIM`.
    pub p3: Packed,
    /// `DIM × DIM`.
    pub d3: Packed,
    /// Layer-norm and normalisation epsilon.
    pub eps: f32,
    /// The SIMD instructions this machine has.
    pub arch: pulp::Arch,
}

impl Weights {
    /// Read and check `weights.npz`.
    pub(crate) fn load(path: &Path) -> Result<Weights, String> {
        let mut zip = ZipArchive::open(path)?;
        let mut floats = |name: &str, shape: &[usize]| -> Result<Vec<f32>, String> {
            let bytes = zip.read(&format!("{name}.npy"))?;
            let (found, values) = npy::f32_values(&bytes).map_err(|e| format!("{name}: {e}"))?;
            if found != shape {
                return Err(format!("{name} has shape {found:?}, expected {shape:?}"));
            }
            if !values.iter().all(|v| v.is_finite()) {
                return Err(format!("{name} holds values that are not finite numbers"));
            }
            Ok(values)
        };
        let mut matrix = |name: &str, k: usize, n: usize| -> Result<Packed, String> {
            Packed::new(&floats(name, &[k, n])?, k, n).map_err(|e| format!("{name}: {e}"))
        };
        let cnn_w = matrix("cnn_W", FEATURES, DIM)?;
        let d0 = matrix("d0", DIM, HIDDEN)?;
        let p1 = matrix("p1", DIM, HIDDEN)?;
        let d1 = matrix("d1", HIDDEN, HIDDEN)?;
        let d2 = matrix("d2", HIDDEN, DIM)?;
        let p3 = matrix("p3", HIDDEN, DIM)?;
        let d3 = matrix("d3", DIM, DIM)?;
        let mut w1 = Vec::new();
        let mut w2 = Vec::new();
        for &(order, _) in &ORDERS {
            w1.push(matrix(&format!("w1_{order}"), order * CNN, CNN)?);
            w2.push(matrix(&format!("w2_{order}"), order * CNN, CNN)?);
        }
        let mut proj = vec![0.0; EMBED * 3 * CNN];
        let (mut proj_b, mut ln1_g, mut ln1_b) = (Vec::new(), Vec::new(), Vec::new());
        let mut branches = Vec::new();
        for (i, ((&(order, left), w1), w2)) in ORDERS.iter().zip(w1).zip(w2).enumerate() {
            let part = floats(&format!("proj{order}"), &[EMBED, CNN])?;
            for (row, chunk) in part.chunks_exact(CNN).enumerate() {
                let at = row * 3 * CNN + i * CNN;
                proj[at..at + CNN].copy_from_slice(chunk);
            }
            proj_b.extend(floats(&format!("proj_b{order}"), &[CNN])?);
            ln1_g.extend(floats(&format!("ln_g{order}"), &[CNN])?);
            ln1_b.extend(floats(&format!("ln_b{order}"), &[CNN])?);
            branches.push(Branch {
                order,
                left,
                w1,
                b1: floats(&format!("b1_{order}"), &[CNN])?,
                w2,
                b2: floats(&format!("b2_{order}"), &[CNN])?,
            });
        }
        let eps = floats("eps", &[])?[0];
        if !(eps.is_finite() && eps > 0.0) {
            return Err(format!("its epsilon is {eps}, not a small positive number"));
        }
        let mut weights = Weights {
            scale: floats("scale", &[BLOCKS])?,
            lo: floats("lo", &[BLOCKS])?,
            ln_g: floats("ln_g", &[FEATURES])?,
            ln_b: floats("ln_b", &[FEATURES])?,
            cnn_b: floats("cnn_b", &[DIM])?,
            proj: Packed::new(&proj, EMBED, 3 * CNN)?,
            proj_b,
            ln1_g,
            ln1_b,
            branches,
            cnn_w,
            d0,
            p1,
            d1,
            d2,
            p3,
            d3,
            eps,
            blocks: Vec::new(),
            arch: pulp::Arch::new(),
        };
        for b in 1..=BLOCKS {
            let name = format!("q{b}");
            let (shape, bytes) = npy::u8_values(zip.read(&format!("{name}.npy"))?)
                .map_err(|e| format!("{name}: {e}"))?;
            if shape != [BLOCK_ROWS, EMBED] {
                return Err(format!(
                    "{name} has shape {shape:?}, expected {:?}",
                    [BLOCK_ROWS, EMBED]
                ));
            }
            weights.blocks.push(bytes);
        }
        Ok(weights)
    }

    /// Rows in the embedding table; every piece id must be below it.
    pub(crate) fn vocab_rows(&self) -> usize {
        BLOCKS * BLOCK_ROWS
    }

    /// The dequantised embedding of piece `id` (below [`Weights::vocab_rows`]) into `out`.
    #[inline]
    pub(crate) fn embedding(&self, id: u32, out: &mut [f32]) {
        let id = id as usize;
        let block = id % BLOCKS;
        let row = id / BLOCKS;
        let bytes = &self.blocks[block][row * EMBED..(row + 1) * EMBED];
        let (scale, lo) = (self.scale[block], self.lo[block]);
        for (o, &b) in out.iter_mut().zip(bytes) {
            *o = f32::from(b) * scale + lo;
        }
    }

    /// Bytes held by the parameters.
    pub(crate) fn heap_bytes(&self) -> usize {
        let floats = [
            &self.proj,
            &self.cnn_w,
            &self.d0,
            &self.p1,
            &self.d1,
            &self.d2,
            &self.p3,
            &self.d3,
        ]
        .iter()
        .map(|m| m.len())
        .sum::<usize>()
            + self
                .branches
                .iter()
                .map(|b| b.w1.len() + b.w2.len())
                .sum::<usize>();
        BLOCKS * BLOCK_ROWS * EMBED + floats * 4
    }
}
