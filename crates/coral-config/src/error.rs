//! The configuration's error type.

use std::path::PathBuf;

/// What loading or editing a configuration can fail with. The facade's error has the same
/// variants and takes these one for one, so a message reads the same wherever it surfaces.
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
    /// The caller passed something unusable (an unknown key, a value of the wrong type);
    /// nothing was changed.
    #[error("{0}")]
    InvalidInput(String),
    /// Writing the file failed.
    #[error(transparent)]
    Store(#[from] coral_store::Error),
}

/// `Result` with the configuration's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
