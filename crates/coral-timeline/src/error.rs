//! The timeline's error type: what a write was refused for, or what the database did wrong.

use std::path::PathBuf;

/// Everything a [`crate::Timeline`] write can fail with. A refused write changed nothing: every
/// check runs before or inside the one transaction of the operation, which is rolled back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller passed something unusable (bad kind, empty text, bad id, bad time zone).
    #[error("{0}")]
    InvalidInput(String),
    /// No turn with this id in the caller's namespace and conversation. A turn of another
    /// namespace is reported the same way, so ids never reveal what others stored.
    #[error("no turn {0:?} in this namespace and conversation; begin_turn returns the turn id")]
    UnknownTurn(String),
    /// No entry or summary with this id in the caller's namespace (another namespace's looks
    /// the same).
    #[error("{0}")]
    NotFound(String),
    /// The turn is completed or aborted and takes no more entries.
    #[error("turn {turn_id:?} is {status}; it takes no more entries (begin a new turn)")]
    TurnClosed {
        /// The turn.
        turn_id: String,
        /// `completed` or `aborted`.
        status: String,
    },
    /// `complete_turn` while some actions still lack their observation.
    #[error(
        "turn {turn_id:?} still waits for the result of {}: record each observation \
         (or abort the turn) before completing it",
        pending.join(", ")
    )]
    PendingActions {
        /// The turn.
        turn_id: String,
        /// Correlation ids of the actions without a result.
        pending: Vec<String>,
    },
    /// The write contradicts what is stored: a duplicate correlation id, a source id already
    /// used by a different entry, a retry that differs from the first call.
    #[error("{0}")]
    Conflict(String),
    /// The database file is not a timeline this build can use (newer schema, not SQLite, a
    /// stored value this build does not know).
    #[error("timeline database {}: {detail}", path.display())]
    Corrupted {
        /// The database file.
        path: PathBuf,
        /// What is wrong and what to do.
        detail: String,
    },
    /// Nothing can be recorded: the file system is read-only, the directory or file cannot be
    /// written, or the disk is full. Nothing was written; reads still work.
    #[error(
        "timeline database {}: cannot record anything here ({reason}); nothing was written \
         (free some space or make the directory writable, then retry)",
        path.display()
    )]
    Unwritable {
        /// The database file.
        path: PathBuf,
        /// Why it cannot be written.
        reason: String,
    },
    /// The summarising language model failed or gave an unusable answer; nothing was written
    /// and the next call tries again.
    #[error("summary model: {0}")]
    Llm(String),
    /// SQLite failed (I/O, locking, full disk).
    #[error("timeline database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl Error {
    /// A short machine-readable code for transports: `invalid_input`, `unknown_turn`,
    /// `turn_closed`, `pending_actions`, `conflict`, `not_found`, `llm_failed`, `corrupted`,
    /// `unwritable` or `storage`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput(_) => "invalid_input",
            Error::UnknownTurn(_) => "unknown_turn",
            Error::NotFound(_) => "not_found",
            Error::TurnClosed { .. } => "turn_closed",
            Error::PendingActions { .. } => "pending_actions",
            Error::Conflict(_) => "conflict",
            Error::Corrupted { .. } => "corrupted",
            Error::Unwritable { .. } => "unwritable",
            Error::Llm(_) => "llm_failed",
            Error::Sqlite(_) => "storage",
        }
    }

    /// True when the caller's input (not the storage) was at fault.
    pub fn is_caller_error(&self) -> bool {
        !matches!(
            self,
            Error::Corrupted { .. } | Error::Unwritable { .. } | Error::Sqlite(_) | Error::Llm(_)
        )
    }
}

/// `Result` with the timeline's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn invalid<T>(message: impl Into<String>) -> Result<T> {
    Err(Error::InvalidInput(message.into()))
}

/// A stored value this build does not know: a turn status, a policy, a settlement class, a
/// role, an origin or a summary layer that none of its names matches (a newer build wrote it,
/// or the file is damaged). Raised inside a row mapper, where only `rusqlite` errors can be
/// returned, and turned into [`Error::Corrupted`] naming the file by [`crate::Timeline`]'s
/// transactions, so a stored value is never silently read as another one.
#[derive(Debug)]
pub(crate) struct UnknownValue {
    /// Which value of which row: `turn "t1" status`.
    pub what: String,
    /// The value found.
    pub value: String,
}

impl std::fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value: String = self.value.chars().take(64).collect();
        let cut = if value.len() < self.value.len() {
            "…"
        } else {
            ""
        };
        write!(
            f,
            "{} is {value:?}{cut}, which this build does not know: a newer coral may have \
             written it (upgrade coral), or the file is damaged (coral restore from a backup)",
            self.what
        )
    }
}

impl std::error::Error for UnknownValue {}

/// The error a row mapper returns for an unknown stored value in column `column`.
pub(crate) fn unknown_value(
    column: usize,
    what: impl Into<String>,
    value: impl Into<String>,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        column,
        rusqlite::types::Type::Text,
        Box::new(UnknownValue {
            what: what.into(),
            value: value.into(),
        }),
    )
}

/// `e` as [`Error::Corrupted`] of `path` when it carries an [`UnknownValue`]; else `e`.
pub(crate) fn stored_value_error(e: Error, path: PathBuf) -> Error {
    match e {
        Error::Sqlite(rusqlite::Error::FromSqlConversionFailure(_, _, inner))
            if inner.is::<UnknownValue>() =>
        {
            Error::Corrupted {
                path,
                detail: inner.to_string(),
            }
        }
        other => other,
    }
}
