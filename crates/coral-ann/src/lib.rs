//! Approximate nearest neighbours for Coral's vectors (docs/ann.md): an HNSW graph over i8
//! codes, with insert, delete (tombstones, repaired in batches), filters applied during the
//! traversal, exact scoring of small filtered sets, exact re-ranking of the best candidates by
//! the caller's own scoring function, and a checked file format written atomically; and, for
//! sparse vectors, an exact inverted index over components ([`SparseIndex`]).
//!
//! The index knows vectors and `u32` labels only: no items, ids, tiers or projects. The caller
//! keeps the f32 vectors (the re-ranking reads them through a closure) and decides when the
//! index is worth using.
//!
//! ```
//! use coral_ann::{AnnIndex, Filter, Params, Query};
//! // 200 unit vectors around a circle.
//! let vector = |i: u32| -> Vec<f32> { let a = i as f32 * 0.03; vec![a.cos(), a.sin()] };
//! let mut index = AnnIndex::new(2, Params::default())?;
//! for label in 0..200 {
//!     index.insert(label, &vector(label))?;
//! }
//! let q = vector(42);
//! let dot = |label: u32| vector(label).iter().zip(&q).map(|(a, b)| a * b).sum::<f32>();
//! let even: roaring::RoaringBitmap = (0..200).filter(|l| l % 2 == 0).collect();
//! let query = Query { vector: &q, k: 3, ef: 32, filter: Filter::Labels(&even), exact_below: 0 };
//! let hits = index.search(&query, &dot);
//! assert_eq!(hits[0].label, 42);
//! assert!(hits.iter().all(|h| h.label % 2 == 0));
//! # Ok::<(), coral_ann::Error>(())
//! ```

mod error;
mod file;
mod hnsw;
mod quant;
mod sparse;
mod visited;

pub use error::{Error, Result};
pub use file::{FORMAT_VERSION, Saved, read_tag, temp_path};
pub use hnsw::{AnnIndex, Filter, Hit, Params, Query};
pub use sparse::SparseIndex;
