//! The facade's error type.

use std::path::PathBuf;

/// Everything a [`crate::Coral`] call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration file is missing something, malformed, or has a bad value.
    #[error("config {}: {detail}", path.display())]
    Config {
        /// The config file.
        path: PathBuf,
        /// Every problem found, each naming its key and value.
        detail: String,
    },
    /// The store failed (I/O, damage, lock).
    #[error(transparent)]
    Store(#[from] coral_store::Error),
    /// The embedder failed.
    #[error("embedding failed: {0}")]
    Embed(#[from] coral_embed::Error),
    /// The caller passed something unusable; nothing was changed.
    #[error("{0}")]
    InvalidInput(String),
    /// No memory has that id.
    #[error("no memory with id {}", crate::echo(.0))]
    NotFound(String),
    /// No thread has that id.
    #[error(
        "no thread with id {} (thread_status without an id lists the threads)",
        crate::echo(.0)
    )]
    ThreadNotFound(String),
    /// The threads file, its lock or its directory failed.
    #[error(transparent)]
    Thread(coral_thread::Error),
}

/// `Result` with the facade's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<coral_thread::Error> for Error {
    fn from(e: coral_thread::Error) -> Self {
        match e {
            coral_thread::Error::InvalidInput(m) => Error::InvalidInput(m),
            coral_thread::Error::NotFound(id) => Error::ThreadNotFound(id),
            other => Error::Thread(other),
        }
    }
}
