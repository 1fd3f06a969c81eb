//! The one storage interface of the facade (docs/postgres.md, "The storage interface"): a
//! [`Backend`] is the data directory's engine with its threads file, or one tenant of a
//! PostgreSQL database. `Coral`'s methods dispatch on it; what both share (checks, secrets,
//! embedding, ranking) is in `prepare.rs` and `rank.rs`, and an operation the database does not
//! serve yet is refused by [`Backend::local`] with [`Error::Unsupported`], never emulated.

use std::sync::Arc;

use coral_embed::Embedder;
use coral_thread::ThreadStore;

use coral_config::{Config, LiveConfig};
use coral_engine::{Engine, PgBackend};

use crate::{Error, Result};

/// Where a `Coral`'s memories and threads live.
pub(crate) enum Backend {
    /// The data directory (`storage.backend = "local"`). Boxed like the other (the engine is
    /// 2.5 KB): one pointer per call, behind a mutex anyway.
    Local(Box<Local>),
    /// A PostgreSQL database (`storage.backend = "postgres"`).
    Postgres(Box<PgBackend>),
}

/// The local backend: the engine over the data directory and the threads file.
pub(crate) struct Local {
    /// The memory engine: the store behind its commit door, the embedder, the config.
    pub(crate) engine: Engine,
    /// Reasoning threads: a separate file and lock, never part of the memory pool.
    pub(crate) threads: ThreadStore,
}

impl Backend {
    /// `storage.backend`'s name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Backend::Local(_) => "local",
            Backend::Postgres(_) => coral_engine::POSTGRES,
        }
    }

    /// The local backend, or [`Error::Unsupported`] naming `operation` for the database.
    pub(crate) fn local(&self, operation: &str) -> Result<&Local> {
        match self {
            Backend::Local(local) => Ok(local),
            Backend::Postgres(_) => Err(self.unsupported(operation)),
        }
    }

    /// The refusal of `operation` by this backend.
    pub(crate) fn unsupported(&self, operation: &str) -> Error {
        Error::Unsupported {
            operation: operation.to_string(),
            backend: self.name(),
        }
    }

    /// The configuration in force and its watcher.
    pub(crate) fn live(&self) -> &LiveConfig {
        match self {
            Backend::Local(l) => l.engine.live(),
            Backend::Postgres(p) => p.live(),
        }
    }

    /// The same, to watch its file.
    pub(crate) fn live_mut(&mut self) -> &mut LiveConfig {
        match self {
            Backend::Local(l) => l.engine.live_mut(),
            Backend::Postgres(p) => p.live_mut(),
        }
    }

    /// The configuration in force.
    pub(crate) fn config(&self) -> Arc<Config> {
        self.live().load()
    }

    /// The embedder every text goes through.
    pub(crate) fn embedder(&self) -> &Arc<dyn Embedder> {
        match self {
            Backend::Local(l) => l.engine.embedder(),
            Backend::Postgres(p) => p.embedder(),
        }
    }

    /// Why `"auto"` fell back to the hash embedder.
    pub(crate) fn set_embedder_note(&mut self, note: Option<String>) {
        match self {
            Backend::Local(l) => l.engine.set_embedder_note(note),
            Backend::Postgres(p) => p.set_embedder_note(note),
        }
    }

    /// Picks up a changed config file.
    pub(crate) fn refresh_config(&self) {
        match self {
            Backend::Local(l) => l.engine.refresh_config(),
            Backend::Postgres(p) => p.refresh_config(),
        }
    }
}
