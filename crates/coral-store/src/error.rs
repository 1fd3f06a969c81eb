//! The store's error type.

use std::path::PathBuf;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system error on a file.
    #[error("i/o error on {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file's bytes are not what they must be. Nothing was changed.
    #[error(
        "{} is damaged{}: {detail}",
        path.display(),
        if *line > 0 { format!(" at line {line}") } else { String::new() }
    )]
    Corrupted {
        /// The damaged file.
        path: PathBuf,
        /// 1-based line (0 when the damage is not line-oriented, e.g. a binary header).
        line: usize,
        /// What was wrong.
        detail: String,
    },
    /// Another process holds the data directory.
    #[error(
        "data directory {} is in use by another coral process{}; stop it or use another --data-dir",
        dir.display(),
        pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Locked {
        /// The data directory.
        dir: PathBuf,
        /// The PID recorded by the holder, when readable.
        pid: Option<u32>,
    },
    /// A caller passed something the store cannot accept. Nothing was changed.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The store was opened read-only (the directory cannot be written: a read-only file
    /// system, no permission, a full disk): reads work, nothing can be recorded.
    #[error(
        "data directory {} is open read-only ({reason}): reading works, but nothing can be \
         recorded; free space or fix the permissions and try again",
        dir.display()
    )]
    ReadOnly {
        /// The data directory.
        dir: PathBuf,
        /// Why it could not be opened for writing.
        reason: String,
    },
    /// An operation named an id the store does not hold.
    #[error("no memory with id {0:?}")]
    UnknownId(String),
}

/// `Result` with the store's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}
