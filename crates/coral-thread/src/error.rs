//! The thread store's error type.

use std::path::PathBuf;
use std::time::Duration;

/// Everything a thread operation can fail with. Validation errors change nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No thread has that id.
    #[error("no thread with id {0:?} (thread_status without an id lists the threads)")]
    NotFound(String),
    /// The caller passed something unusable (empty title or note, too long, self-link, cycle).
    /// Nothing was changed.
    #[error("{0}")]
    InvalidInput(String),
    /// An operating-system error on the threads file, its lock or its directory.
    #[error("i/o error on {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The change could not be written to this process's journal (read-only or full file
    /// system, ...). It was taken back: nothing was recorded.
    #[error(
        "nothing was recorded: cannot write the thread journal {}: {source}",
        path.display()
    )]
    NotRecorded {
        /// The journal file (or the directory it would be created in).
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The threads file is not something this crate can read. Nothing was written over it.
    #[error(
        "{} is not a readable threads file: {detail}; fix or move it (it was not changed)",
        path.display()
    )]
    Corrupted {
        /// The threads file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// Another live process kept the lock file for the whole wait.
    #[error(
        "could not lock {} within {} s: held{}; if no coral process is running, delete the lock file",
        lock.display(),
        waited.as_secs_f64(),
        pid.map(|p| format!(" by pid {p}")).unwrap_or_default()
    )]
    LockTimeout {
        /// The lock file (`<threads file>.lock`).
        lock: PathBuf,
        /// The PID written in it, when readable.
        pid: Option<u32>,
        /// How long we waited.
        waited: Duration,
    },
}

impl Error {
    /// True for errors caused by the caller's arguments (bad input or an unknown id), as
    /// opposed to the file system.
    pub fn is_caller_error(&self) -> bool {
        matches!(self, Error::NotFound(_) | Error::InvalidInput(_))
    }
}

/// `Result` with the thread store's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<coral_base::IoError> for Error {
    fn from(e: coral_base::IoError) -> Self {
        Error::Io {
            path: e.path,
            source: e.source,
        }
    }
}
