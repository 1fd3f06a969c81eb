//! The pool's rows as the scoring kernels read them: the vectors dense or sparse
//! (`coral_store::Pool::is_compact`, docs/ann.md "Memory"), and one row's dot product.

use coral_score::{ScanRows, SparseVectors, dot, sparse_dot};
use coral_store::{Pool, RowVector};

/// The pool's arrays for `coral_score::scan` and `rank_lists`.
pub(crate) fn scan_rows(pool: &Pool) -> ScanRows<'_> {
    let sparse = pool.sparse_vectors().map(|s| {
        let (spans, components, values) = s.parts();
        SparseVectors {
            spans,
            components,
            values,
        }
    });
    ScanRows {
        dim: pool.dim(),
        vectors: pool.dense_vectors().unwrap_or(&[]),
        sparse,
        bitmaps: pool.bitmaps(),
        timestamps: pool.timestamps(),
        tiebreak: pool.tiebreaks(),
    }
}

/// Dot product of `query` with a pool row's vector, whichever form it is held in.
pub(crate) fn row_dot(query: &[f32], row: RowVector<'_>) -> f32 {
    match row {
        RowVector::Dense(v) => dot(query, v),
        RowVector::Sparse { components, values } => sparse_dot(query, components, values),
    }
}
