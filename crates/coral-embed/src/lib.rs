//! Text features and embedders for Coral: the tokeniser, token hashes and 2048-bit token
//! bitmaps, content ids, and the [`Embedder`] interface with its built-in [`HashEmbedder`].
//!
//! This crate does no I/O and knows nothing of storage or scoring: it turns text into tokens,
//! hashes and vectors.
//!
//! ```
//! use coral_embed::{Embedder, HashEmbedder, item_id, text_features, tokenize};
//!
//! assert_eq!(tokenize("Coral remembers 咖啡"), ["coral", "remembers", "咖啡", "咖", "啡"]);
//!
//! let features = text_features("Coral remembers 咖啡");
//! assert_eq!(features.token_len, 5);
//! assert_eq!(item_id("a"), "0cc175b9c0f1b6a8");
//!
//! let embedder = HashEmbedder::new(384)?;
//! let vectors = embedder.embed(&["Coral remembers 咖啡"])?;
//! assert_eq!(vectors[0].len(), embedder.dim());
//! # Ok::<(), coral_embed::Error>(())
//! ```

mod embedder;
mod error;
mod features;
mod hash_embedder;
mod id;
mod tokenize;

pub use embedder::Embedder;
pub use error::{Error, Result};
pub use features::{TextFeatures, bitmap_of, text_features, token_hash};
pub use hash_embedder::{HashEmbedder, hash_embed_into};
pub use id::{item_id, token_count};
pub use tokenize::tokenize;
