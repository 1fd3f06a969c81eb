//! Weights that fuse the vector, Jaccard and recency terms into one score.

/// Linear weights of the three score terms. `Default` is 0.6 / 0.2 / 0.2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weights {
    /// Weight of the vector (dot product / cosine) term.
    pub vector: f64,
    /// Weight of the bitmap Jaccard term.
    pub jaccard: f64,
    /// Weight of the time-decay term.
    pub time: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            vector: 0.6,
            jaccard: 0.2,
            time: 0.2,
        }
    }
}

impl Weights {
    /// `vector · w.vector + jaccard · w.jaccard + time · w.time`, summed in that order.
    ///
    /// ```
    /// let w = coral_score::Weights::default();
    /// assert!((w.fuse(1.0, 0.5, 0.0) - 0.7).abs() < 1e-12);
    /// ```
    pub fn fuse(&self, vector: f64, jaccard: f64, time: f64) -> f64 {
        self.vector * vector + self.jaccard * jaccard + self.time * time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_weights_sum_to_one() {
        let w = Weights::default();
        assert_eq!((w.vector, w.jaccard, w.time), (0.6, 0.2, 0.2));
        assert!((w.fuse(1.0, 1.0, 1.0) - 1.0).abs() < 1e-12);
        assert_eq!(w.fuse(0.0, 0.0, 0.0), 0.0);
        let only_time = Weights {
            vector: 0.0,
            jaccard: 0.0,
            time: 2.0,
        };
        assert_eq!(only_time.fuse(0.9, 0.9, 0.25), 0.5);
    }
}
