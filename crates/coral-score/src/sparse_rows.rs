//! Rows of a pool held sparse (a span of component numbers and values per row) and their dot
//! product with a dense query, equal to the dense product, for pools that keep their hash
//! vectors compact (docs/ann.md, "Memory").

/// Sparse rows, borrowed: row `r`'s non-zero components are
/// `components[s..s + n]` with values `values[s..s + n]`, where `(s, n) = spans[r]`.
#[derive(Clone, Copy, Debug)]
pub struct SparseVectors<'a> {
    /// Per row: start and length in the two arrays.
    pub spans: &'a [(u64, u32)],
    /// Component numbers.
    pub components: &'a [u16],
    /// Their values.
    pub values: &'a [f32],
}

impl SparseVectors<'_> {
    /// Rows.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Dot product of row `r` with the dense `query`; components beyond the query count as 0.
    #[inline]
    pub fn dot(&self, query: &[f32], r: usize) -> f32 {
        let (start, len) = self.spans[r];
        let range = start as usize..start as usize + len as usize;
        sparse_dot(query, &self.components[range.clone()], &self.values[range])
    }
}

/// Dot product of a dense `query` with a sparse vector, equal bit for bit to [`crate::dot`]
/// of the query with the vector made dense: the row is scattered into a per-thread scratch row
/// of zeros (and cleared again after), so the sum is simsimd's, in simsimd's order. A pool's
/// results therefore do not depend on the form it holds its vectors in. Components beyond the
/// query are ignored, as `dot` ignores values beyond the shorter slice.
///
/// ```
/// assert_eq!(coral_score::sparse_dot(&[1.0, 2.0, 3.0], &[0, 2], &[4.0, 6.0]), 22.0);
/// ```
pub fn sparse_dot(query: &[f32], components: &[u16], values: &[f32]) -> f32 {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|scratch| {
        let mut row = scratch.borrow_mut();
        if row.len() < query.len() {
            row.resize(query.len(), 0.0);
        }
        let row = &mut row[..query.len()];
        for (&c, &v) in components.iter().zip(values) {
            if let Some(slot) = row.get_mut(c as usize) {
                *slot = v;
            }
        }
        let d = crate::dot(query, row);
        for &c in components {
            if let Some(slot) = row.get_mut(c as usize) {
                *slot = 0.0;
            }
        }
        d
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_dense_product_bit_for_bit() {
        let dim = 384;
        let mut h = 7u64;
        let mut next = || {
            h = h
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            h >> 33
        };
        for _ in 0..200 {
            let q: Vec<f32> = (0..dim)
                .map(|_| (next() % 1000) as f32 / 997.0 - 0.5)
                .collect();
            let mut v = vec![0f32; dim];
            let mut components = Vec::new();
            for _ in 0..26 {
                v[next() as usize % dim] = (next() % 1000) as f32 / 991.0 - 0.5;
            }
            let mut values = Vec::new();
            for (c, &x) in v.iter().enumerate() {
                if x != 0.0 {
                    components.push(c as u16);
                    values.push(x);
                }
            }
            let dense = crate::dot(&q, &v);
            let sparse = sparse_dot(&q, &components, &values);
            assert_eq!(dense.to_bits(), sparse.to_bits(), "{dense} {sparse}");
            // A shorter query counts the components beyond it as 0, as `dot` does.
            assert_eq!(
                sparse_dot(&q[..100], &components, &values).to_bits(),
                crate::dot(&q[..100], &v).to_bits()
            );
        }
    }
}
