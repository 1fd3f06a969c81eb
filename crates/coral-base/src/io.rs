//! I/O errors that name their file: every crate's `Io { path, source }` error is made by
//! [`IoContext::at`].

use std::path::{Path, PathBuf};

/// An operating-system error on a named file.
#[derive(Debug)]
pub struct IoError {
    /// The file or directory involved.
    pub path: PathBuf,
    /// The underlying error.
    pub source: std::io::Error,
}

impl std::fmt::Display for IoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "i/o error on {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for IoError {}

/// Name the file of an I/O error: `std::fs::read(p).at(p)?` in any crate whose error type
/// converts from [`IoError`].
pub trait IoContext<T> {
    /// The error, with `path`.
    fn at(self, path: &Path) -> Result<T, IoError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &Path) -> Result<T, IoError> {
        self.map_err(|source| IoError {
            path: path.to_path_buf(),
            source,
        })
    }
}
