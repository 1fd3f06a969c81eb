//! The crate's one error type.

use std::path::PathBuf;

/// What can go wrong building, saving or loading an index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A vector of the wrong length.
    #[error(
        "vector has {got} dimensions but the index holds {want}; embed with the index's model or rebuild the index"
    )]
    Dimension {
        /// The index's dimension.
        want: usize,
        /// The vector's.
        got: usize,
    },
    /// Parameters no index can be built with.
    #[error("invalid index parameter: {0}")]
    InvalidParams(String),
    /// Reading or writing an index file failed.
    #[error("index file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An index file that is not a whole, intact index of this format: it is never loaded.
    #[error("index file {} is not usable ({detail}); it is derived data: delete it or let it be rebuilt", path.display())]
    Corrupted {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
