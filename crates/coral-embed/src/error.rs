//! The crate's error type, and `Looked`, the places a missing model's error lists.

/// One place looked at, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Looked {
    /// What setting or convention the place comes from.
    pub source: &'static str,
    /// The directory (a pattern for the hub cache).
    pub path: String,
}

/// Everything that can go wrong in `coral-embed`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An embedder was asked for a dimension it cannot produce.
    #[error("invalid embedding dimension {dim}: it must be at least 1")]
    InvalidDim {
        /// The dimension asked for.
        dim: usize,
    },
    /// An embedding model could not be loaded or run.
    #[error("embedding model {model}: {detail}")]
    Model {
        /// The model's name or path.
        model: String,
        /// What went wrong and what to do about it.
        detail: String,
    },
    /// An embedding model's files were not found.
    #[error("embedding model {model} {detail}")]
    ModelNotFound {
        /// The model's hub id.
        model: String,
        /// Where it was looked for and how to install it.
        detail: String,
        /// Every place looked at.
        looked: Vec<Looked>,
    },
    /// An ONNX model was asked for and this build cannot run ONNX models (no `onnx` feature).
    #[error("embedding model {model}: {detail}")]
    NoOnnxSupport {
        /// The model's name.
        model: String,
        /// What to do about it.
        detail: String,
    },
    /// The ONNX runtime library could not be found or loaded.
    #[error("ONNX runtime: {detail}")]
    Runtime {
        /// Where it was looked for, what failed, and how to fix it.
        detail: String,
    },
}

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
