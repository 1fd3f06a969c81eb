//! The error type of the PostgreSQL backend: what went wrong, with which value or server, and
//! what to do.

use std::time::Duration;

/// Everything that can go wrong talking to the database.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `storage.postgres_url` / `CORAL_POSTGRES_URL` cannot be used.
    #[error("postgres url {url} is not usable: {detail}; give postgres://user@host:port/database")]
    InvalidUrl {
        /// The URL with any password replaced by `***`, truncated if long.
        url: String,
        /// Why.
        detail: String,
    },
    /// No connection could be opened (refused, unreachable, or no answer within the connect
    /// timeout). Nothing was written.
    #[error(
        "cannot reach postgres at {server}: {detail}; check that the server runs and \
         storage.postgres_url points at it"
    )]
    Unreachable {
        /// `host:port` of the server.
        server: String,
        /// What the connection attempt said.
        detail: String,
    },
    /// A call did not finish within its deadline. The call's transaction was not committed
    /// unless `outcome_unknown` (the deadline passed while the commit itself was in flight).
    #[error(
        "postgres did not answer {what} within {after:?}{}",
        if *outcome_unknown {
            "; the commit was in flight, so it may or may not have happened (retrying is safe: \
             inserts merge by id)"
        } else {
            "; nothing was written"
        }
    )]
    Timeout {
        /// The operation.
        what: &'static str,
        /// The deadline.
        after: Duration,
        /// Whether the deadline passed during `COMMIT`.
        outcome_unknown: bool,
    },
    /// Every connection of the bounded pool stayed busy for the acquire timeout.
    #[error(
        "all {max} postgres connections stayed busy for {waited:?}; raise \
         storage.postgres_pool_size or lower the load"
    )]
    PoolExhausted {
        /// The pool's bound.
        max: usize,
        /// How long the call waited.
        waited: Duration,
    },
    /// The server refused or failed a statement. The call's transaction was rolled back.
    #[error("postgres failed {what}: {detail}")]
    Database {
        /// The operation.
        what: &'static str,
        /// The server's message (with its SQLSTATE when it sent one).
        detail: String,
        /// The SQLSTATE code, when the server sent one.
        code: Option<String>,
    },
    /// The database's schema is newer than this build knows: it was migrated by a newer Coral.
    #[error(
        "the database's coral schema is version {found}, newer than this build's {supported}; \
         upgrade coral on this machine (migrations only go forward)"
    )]
    SchemaTooNew {
        /// `coral_schema_version` in the database.
        found: i32,
        /// The newest version this build knows.
        supported: i32,
    },
    /// The server lacks what Coral needs (the `vector` extension, a version).
    #[error("postgres at {server} cannot serve coral: {detail}")]
    Unsupported {
        /// `host:port` of the server.
        server: String,
        /// What is missing and how to add it.
        detail: String,
    },
    /// A value handed to the backend is not acceptable; nothing was written.
    #[error("{0}")]
    InvalidInput(String),
    /// A thread or item that does not exist in this tenant.
    #[error("{what} {id} not found in this tenant")]
    NotFound {
        /// `"thread"` or `"memory"`.
        what: &'static str,
        /// The id asked for (bounded).
        id: String,
    },
    /// A stored row that cannot be read back (written by something else, or damaged).
    #[error("postgres row {what} is damaged: {detail}")]
    Corrupted {
        /// Which row.
        what: String,
        /// What was wrong.
        detail: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error of a failed statement of `what`.
    pub(crate) fn db(what: &'static str, e: &tokio_postgres::Error) -> Error {
        let code = e.code().map(|c| c.code().to_string());
        let detail = match e.as_db_error() {
            Some(db) => format!("{} (sqlstate {})", db.message(), db.code().code()),
            None => e.to_string(),
        };
        Error::Database { what, detail, code }
    }

    /// Whether retrying the whole transaction may succeed: a serialization failure or a
    /// deadlock the server broke (SQLSTATE 40001, 40P01).
    pub(crate) fn retryable(&self) -> bool {
        matches!(self, Error::Database { code: Some(c), .. } if c == "40001" || c == "40P01")
    }
}
