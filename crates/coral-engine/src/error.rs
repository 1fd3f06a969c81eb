//! The error of every engine and facade call (the facade re-exports it as `coral::Error`).

use std::path::PathBuf;

/// Everything a `Coral` call (and so an engine's) can fail with.
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
    #[error("no memory with id {}", coral_base::echo(.0))]
    NotFound(String),
    /// No thread has that id.
    #[error(
        "no thread with id {} (thread_status without an id lists the threads)",
        coral_base::echo(.0)
    )]
    ThreadNotFound(String),
    /// The threads file, its lock or its directory failed.
    #[error(transparent)]
    Thread(coral_thread::Error),
    /// The PostgreSQL backend failed (unreachable, a time-out, a refused statement).
    #[error(transparent)]
    Postgres(coral_pg::Error),
    /// The operation is not served by the configured backend yet (docs/postgres.md, "What the
    /// postgres backend refuses"); nothing was changed.
    #[error(
        "{operation} is not supported by the {backend} backend yet (docs/postgres.md lists what \
         it serves); nothing was changed: use storage.backend = \"local\" for it"
    )]
    Unsupported {
        /// The operation, as a tool or method name.
        operation: String,
        /// `storage.backend`.
        backend: &'static str,
    },
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

impl From<coral_pg::Error> for Error {
    fn from(e: coral_pg::Error) -> Self {
        match e {
            coral_pg::Error::InvalidInput(m) => Error::InvalidInput(m),
            other => Error::Postgres(other),
        }
    }
}

impl From<coral_config::Error> for Error {
    /// One for one: a config error reads the same through the facade.
    fn from(e: coral_config::Error) -> Self {
        match e {
            coral_config::Error::Config { path, detail } => Error::Config { path, detail },
            coral_config::Error::InvalidInput(m) => Error::InvalidInput(m),
            coral_config::Error::Store(e) => Error::Store(e),
            // The enum is non-exhaustive: a variant added later still arrives, as its message.
            other => Error::InvalidInput(other.to_string()),
        }
    }
}
