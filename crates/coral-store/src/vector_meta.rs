//! `coral_vectors.meta.json`: which embedder made the stored vectors (name and dimension).
//!
//! Vectors are derived data; the tag lets an open tell vectors of another model from its own,
//! so they are never scored against a query of a different embedder.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The embedder that made the vectors of a directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorMeta {
    /// The embedder's name (`"hash"`, a model id).
    pub embedder: String,
    /// Vector dimension.
    pub dim: usize,
}

/// Read the tag at `path`; `None` when missing or unreadable (then the caller recognises the
/// embedder from the vectors themselves).
pub fn read(path: &Path) -> Option<VectorMeta> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The bytes of a tag.
pub(crate) fn encode(meta: &VectorMeta) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(meta).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}
