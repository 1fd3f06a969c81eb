//! The interface every embedder implements.

use crate::Result;

/// Turns texts into L2-normalised vectors of a fixed dimension.
pub trait Embedder: Send + Sync {
    /// Short name reported in stats, e.g. `"hash"`.
    fn name(&self) -> &str;

    /// Length of every vector this embedder returns.
    fn dim(&self) -> usize;

    /// Embeds each text; the result has one row of length [`Embedder::dim`] per input text.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}
