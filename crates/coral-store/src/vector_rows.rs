//! The pool's vector storage: one dense row-major f32 matrix, or, for a large pool of sparse
//! vectors, exact sparse rows (docs/ann.md, "Memory").
//!
//! Hash vectors set about 7 % of their components (25.7 of 384 measured), so a dense row of
//! 1,536 bytes holds about 100 bytes of information. The sparse form keeps each row's non-zero
//! components as `(u16 component, f32 value)` pairs in two arenas plus a 16-byte span per row:
//! about 170 bytes a 384-dim hash vector. It is exact: densifying a row gives back the same
//! f32 values, so the files written from it are byte for byte the same.

use std::borrow::Cow;

/// Pools from this many rows whose vectors are sparse are loaded in the sparse form (the
/// default `retrieval.ann_threshold`, from which the facade searches through its vector index
/// and keeps the pool compact; below it the pool stays dense, so the exact scan is unchanged).
pub const COMPACT_FROM: usize = 50_000;

/// At most this share of non-zero components makes a pool sparse (the facade's rule for its
/// sparse vector index too: docs/ann.md, "Which path").
pub const SPARSE_DENSITY: f64 = 0.25;

/// One row's vector, as the pool holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowVector<'a> {
    /// All `dim` values.
    Dense(&'a [f32]),
    /// The non-zero components (ascending) and their values; every other component is 0.
    Sparse {
        /// Component numbers, ascending.
        components: &'a [u16],
        /// Their values.
        values: &'a [f32],
    },
}

impl<'a> RowVector<'a> {
    /// Writes the `dim` values into `out` (which has `dim` values).
    pub fn write_dense(&self, out: &mut [f32]) {
        match *self {
            RowVector::Dense(v) => out.copy_from_slice(v),
            RowVector::Sparse { components, values } => {
                out.fill(0.0);
                for (&c, &v) in components.iter().zip(values) {
                    out[c as usize] = v;
                }
            }
        }
    }

    /// The `dim` values, borrowed when dense.
    pub fn to_dense(self, dim: usize) -> Cow<'a, [f32]> {
        match self {
            RowVector::Dense(v) => Cow::Borrowed(v),
            RowVector::Sparse { .. } => {
                let mut out = vec![0.0; dim];
                self.write_dense(&mut out);
                Cow::Owned(out)
            }
        }
    }

    /// Whether every value is 0.
    pub fn is_zero(&self) -> bool {
        match *self {
            RowVector::Dense(v) => v.iter().all(|&x| x == 0.0),
            RowVector::Sparse { values, .. } => values.iter().all(|&x| x == 0.0),
        }
    }
}

/// Rows held sparse: per row a span into the component and value arenas. Replacing or
/// removing a row leaves its old entries behind as garbage, compacted away once garbage
/// outweighs the live entries.
#[derive(Clone, Debug, Default)]
pub struct SparseRows {
    spans: Vec<(u64, u32)>,
    components: Vec<u16>,
    values: Vec<f32>,
    garbage: usize,
}

impl SparseRows {
    /// Rows.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Row `r`.
    pub fn row(&self, r: usize) -> (&[u16], &[f32]) {
        let (start, len) = self.spans[r];
        let range = start as usize..start as usize + len as usize;
        (&self.components[range.clone()], &self.values[range])
    }

    /// The arrays: per row `(start, len)` into the component numbers and the values.
    pub fn parts(&self) -> (&[(u64, u32)], &[u16], &[f32]) {
        (&self.spans, &self.components, &self.values)
    }

    /// Bytes held (arenas and spans, by capacity).
    pub fn memory_bytes(&self) -> usize {
        self.spans.capacity() * 16 + self.components.capacity() * 2 + self.values.capacity() * 4
    }

    /// Appends `v`'s non-zero components as a new span (not yet a row).
    fn append(&mut self, v: &[f32]) -> (u64, u32) {
        let start = self.values.len() as u64;
        for (c, &x) in v.iter().enumerate() {
            // -0.0 == 0.0: a negative zero is written back as +0.0 bits otherwise, so keep
            // anything whose bits are not +0.0.
            if x.to_bits() != 0 {
                self.components.push(c as u16);
                self.values.push(x);
            }
        }
        (start, (self.values.len() as u64 - start) as u32)
    }

    fn push(&mut self, v: &[f32]) {
        let span = self.append(v);
        self.spans.push(span);
    }

    fn set(&mut self, r: usize, v: &[f32]) {
        self.garbage += self.spans[r].1 as usize;
        self.spans[r] = self.append(v);
        self.maybe_compact();
    }

    fn swap_remove(&mut self, r: usize) {
        self.garbage += self.spans[r].1 as usize;
        self.spans.swap_remove(r);
        self.maybe_compact();
    }

    fn maybe_compact(&mut self) {
        if self.garbage < 4096 || self.garbage * 2 < self.values.len() {
            return;
        }
        let mut components = Vec::with_capacity(self.values.len() - self.garbage);
        let mut values = Vec::with_capacity(self.values.len() - self.garbage);
        for span in &mut self.spans {
            let (start, len) = (span.0 as usize, span.1 as usize);
            let at = values.len() as u64;
            components.extend_from_slice(&self.components[start..start + len]);
            values.extend_from_slice(&self.values[start..start + len]);
            span.0 = at;
        }
        self.components = components;
        self.values = values;
        self.garbage = 0;
    }

    /// Non-zero entries held by rows.
    fn live(&self) -> usize {
        self.values.len() - self.garbage
    }
}

/// The vectors a snapshot read from `coral_vectors.npy`, in the form the pool will hold them:
/// the whole matrix, or for a large file of sparse rows those rows made sparse a chunk at a
/// time (the dense matrix is never held then).
#[derive(Default)]
pub enum LoadedVectors {
    /// No usable vectors.
    #[default]
    None,
    /// The matrix.
    Dense(crate::npy::Matrix),
    /// Sparse rows of `dim` values, in file order.
    Sparse(SparseBuilder, usize),
}

impl LoadedVectors {
    /// Rows read.
    pub fn rows(&self) -> usize {
        match self {
            LoadedVectors::None => 0,
            LoadedVectors::Dense(m) => m.rows,
            LoadedVectors::Sparse(b, _) => b.rows.len(),
        }
    }

    /// Values a row.
    pub fn cols(&self) -> usize {
        match self {
            LoadedVectors::None => 0,
            LoadedVectors::Dense(m) => m.cols,
            LoadedVectors::Sparse(_, dim) => *dim,
        }
    }

    /// Row `r`'s values; a sparse row is written into `scratch` (reused from row to row:
    /// the open checks every row).
    pub fn row<'a>(&'a self, r: usize, scratch: &'a mut Vec<f32>) -> &'a [f32] {
        match self {
            LoadedVectors::None => &[],
            LoadedVectors::Dense(m) => m.row(r),
            LoadedVectors::Sparse(b, dim) => {
                scratch.resize(*dim, 0.0);
                b.row(r).write_dense(scratch);
                scratch
            }
        }
    }
}

/// The pool's vectors in either form.
#[derive(Clone, Debug)]
pub(crate) enum VectorRows {
    Dense(Vec<f32>),
    Sparse(SparseRows),
}

impl VectorRows {
    pub(crate) fn row(&self, dim: usize, r: usize) -> RowVector<'_> {
        match self {
            VectorRows::Dense(m) => RowVector::Dense(&m[r * dim..(r + 1) * dim]),
            VectorRows::Sparse(s) => {
                let (components, values) = s.row(r);
                RowVector::Sparse { components, values }
            }
        }
    }

    pub(crate) fn push(&mut self, dim: usize, v: Option<&[f32]>) {
        match (self, v) {
            (VectorRows::Dense(m), Some(v)) => m.extend_from_slice(v),
            (VectorRows::Dense(m), None) => m.resize(m.len() + dim, 0.0),
            (VectorRows::Sparse(s), v) => s.push(v.unwrap_or(&[])),
        }
    }

    /// Sets row `r` (`None`: zeros).
    pub(crate) fn set(&mut self, dim: usize, r: usize, v: Option<&[f32]>) {
        match (self, v) {
            (VectorRows::Dense(m), Some(v)) => m[r * dim..(r + 1) * dim].copy_from_slice(v),
            (VectorRows::Dense(m), None) => m[r * dim..(r + 1) * dim].fill(0.0),
            (VectorRows::Sparse(s), v) => s.set(r, v.unwrap_or(&[])),
        }
    }

    /// Moves the last row into `r` and drops the last row.
    pub(crate) fn swap_remove(&mut self, dim: usize, r: usize) {
        match self {
            VectorRows::Dense(m) => {
                let last = m.len() / dim.max(1) - 1;
                if r != last {
                    m.copy_within(last * dim..(last + 1) * dim, r * dim);
                }
                m.truncate(m.len() - dim);
            }
            VectorRows::Sparse(s) => s.swap_remove(r),
        }
    }

    pub(crate) fn is_sparse(&self) -> bool {
        matches!(self, VectorRows::Sparse(_))
    }

    /// The same rows in the sparse form (`dim` ≤ 65,536, so components fit a u16).
    pub(crate) fn to_sparse(&self, dim: usize, rows: usize) -> Option<SparseRows> {
        let VectorRows::Dense(m) = self else {
            return None;
        };
        if dim == 0 || dim > 1 << 16 {
            return None;
        }
        let mut s = SparseRows::default();
        s.spans.reserve_exact(rows);
        for r in 0..rows {
            s.push(&m[r * dim..(r + 1) * dim]);
        }
        s.components.shrink_to_fit();
        s.values.shrink_to_fit();
        Some(s)
    }

    /// The same rows in the dense form.
    pub(crate) fn to_dense(&self, dim: usize) -> Option<Vec<f32>> {
        let VectorRows::Sparse(s) = self else {
            return None;
        };
        let mut m = vec![0.0; s.len() * dim];
        for r in 0..s.len() {
            let (components, values) = s.row(r);
            RowVector::Sparse { components, values }.write_dense(&mut m[r * dim..(r + 1) * dim]);
        }
        Some(m)
    }

    /// Share of non-zero components over an even sample of at most 4,096 of the first `rows`
    /// rows (`None` without rows or dimension).
    pub(crate) fn density(&self, dim: usize, rows: usize) -> Option<f64> {
        if rows == 0 || dim == 0 {
            return None;
        }
        if let VectorRows::Sparse(s) = self {
            return Some(s.live() as f64 / (rows * dim) as f64);
        }
        let step = rows.div_ceil(4096).max(1);
        let mut nonzero = 0usize;
        let mut seen = 0usize;
        for r in (0..rows).step_by(step) {
            nonzero += self
                .row(dim, r)
                .to_dense(dim)
                .iter()
                .filter(|&&x| x != 0.0)
                .count();
            seen += 1;
        }
        Some(nonzero as f64 / (seen * dim) as f64)
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        match self {
            VectorRows::Dense(m) => m.capacity() * 4,
            VectorRows::Sparse(s) => s.memory_bytes(),
        }
    }
}

/// Builds sparse rows from a stream of dense rows (the loader's; see `Pool::bulk_load`).
#[derive(Default)]
pub struct SparseBuilder {
    rows: SparseRows,
}

impl SparseBuilder {
    pub(crate) fn push(&mut self, v: &[f32]) {
        self.rows.push(v);
    }

    /// Row `r` as pushed.
    pub(crate) fn row(&self, r: usize) -> RowVector<'_> {
        let (components, values) = self.rows.row(r);
        RowVector::Sparse { components, values }
    }

    /// The rows reordered so that row `r` is `sources[r]`'s (an empty row for `None`); rows no
    /// one names become garbage.
    pub(crate) fn finish(self, sources: &[Option<usize>]) -> SparseRows {
        let mut s = self.rows;
        let have = s.spans.len();
        let spans: Vec<(u64, u32)> = sources
            .iter()
            .map(|src| match src {
                Some(j) if *j < have => s.spans[*j],
                _ => (0, 0),
            })
            .collect();
        let used: usize = spans.iter().map(|sp| sp.1 as usize).sum();
        s.garbage = s.values.len() - used;
        s.spans = spans;
        s.maybe_compact();
        s.components.shrink_to_fit();
        s.values.shrink_to_fit();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_rows_round_trip_through_sets_and_removals() {
        let dim = 5;
        let rows: Vec<Vec<f32>> = (0..9000)
            .map(|i| {
                let mut v = vec![0.0; dim];
                v[i % dim] = i as f32;
                v[(i * 7) % dim] = -0.0;
                v
            })
            .collect();
        let mut dense = VectorRows::Dense(Vec::new());
        for v in &rows {
            dense.push(dim, Some(v));
        }
        let mut sparse = VectorRows::Sparse(dense.to_sparse(dim, rows.len()).unwrap());
        for r in (0..9000).step_by(3) {
            let v = vec![r as f32 + 0.5; dim];
            dense.set(dim, r, Some(&v));
            sparse.set(dim, r, Some(&v));
        }
        for r in (0..6000).rev().step_by(2) {
            dense.swap_remove(dim, r);
            sparse.swap_remove(dim, r);
        }
        let n = 9000 - 3000;
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for r in 0..n {
            assert_eq!(
                bits(&sparse.row(dim, r).to_dense(dim)),
                bits(&dense.row(dim, r).to_dense(dim)),
                "row {r}"
            );
        }
        assert_eq!(
            bits(&sparse.to_dense(dim).unwrap()),
            bits(&{
                let VectorRows::Dense(m) = &dense else {
                    unreachable!()
                };
                m.clone()
            })
        );
    }
}
