//! The memory engine: the store behind its one commit door (`door.rs`), the embedder, the
//! configuration in force and governance's counters. Every call locks it ([`Engine::lock`]),
//! which also takes the data directory's write lock and catches up with other processes.
//!
//! The files below hold one operation each (insert, search, lifecycle, governance, ...). They
//! build on this file and on the low-level ones (`door.rs`, `guard.rs`, `quota.rs`,
//! `candidates.rs`, `vectors.rs`), none of which knows the operations.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use coral_embed::Embedder;
use coral_store::{Closed, Store, StoreOptions, SyncOutcome, SyncPolicy};

use crate::door::Door;
use crate::error::Result;
use crate::governance::Governance;
use crate::guard::{self, RemovalGuard, RemovalLimits};
use crate::vector_index::VectorIndexReport;
use crate::vectors;
use coral_config::LiveConfig;
use coral_config::{Config, SyncMode};

/// The memory engine shared by every call of one `Coral`.
pub struct Engine {
    state: Mutex<State>,
    /// The embedder every text goes through.
    pub(crate) embedder: Arc<dyn Embedder>,
    /// Why `"auto"` fell back to the hash embedder.
    pub(crate) embedder_note: Option<String>,
    /// The configuration in force.
    pub(crate) config: LiveConfig,
    /// Distillation and disk-quota counters.
    pub(crate) governance: Governance,
}

/// What a call holds while it has the engine locked.
pub(crate) struct State {
    /// The store, behind its commit door.
    pub(crate) door: Door,
    /// The last failure to catch up with other processes, if the latest attempt failed.
    pub(crate) sync_error: Option<String>,
    /// Why the stored vectors must not be scored (another model made them), until a re-embed.
    pub(crate) vectors_disabled: Option<String>,
    /// Why the last search's hits could not be recorded (access counts), until one is.
    pub(crate) unrecorded: Option<String>,
    /// The bulk-removal guard's record and hold (`guard.rs`).
    pub(crate) guard: RemovalGuard,
}

impl State {
    /// The configuration governance may run under now (see `guard.rs`): `None` for `config`
    /// itself, `Some` with the accepted limits while a bulk removal is held.
    pub(crate) fn guarded(&mut self, config: &Config, now: f64) -> Option<Config> {
        self.guard.guarded(self.door.view(), config, now)
    }

    /// Make `limits` the accepted ones and lift any hold.
    pub(crate) fn accept(&mut self, limits: RemovalLimits, now: f64) {
        self.guard.accept(self.door.view(), limits, now);
    }

    /// Log a removal (counted by tier) for `reason`.
    pub(crate) fn log_removal(&mut self, reason: &str, tiers: BTreeMap<String, usize>, now: f64) {
        self.guard.log_removal(self.door.view(), reason, tiers, now);
    }

    /// The tiers of `rows`, counted.
    pub(crate) fn tiers_of(&self, rows: &[u32]) -> BTreeMap<String, usize> {
        guard::tiers_of(self.door.view().pool(), rows)
    }
}

/// [`State`] held by this thread and by this process across the data directory; see
/// [`Engine::lock_raw`].
pub(crate) struct EngineGuard<'a> {
    locked: MutexGuard<'a, State>,
}

impl std::ops::Deref for EngineGuard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.locked
    }
}

impl std::ops::DerefMut for EngineGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.locked
    }
}

impl Drop for EngineGuard<'_> {
    fn drop(&mut self) {
        self.locked.door.release();
    }
}

/// The memory journal's power-loss policy (`storage.sync`).
fn sync_policy(config: &Config) -> SyncPolicy {
    match config.storage.sync_mode() {
        SyncMode::Always => SyncPolicy::Always,
        SyncMode::Never => SyncPolicy::Never,
        SyncMode::Interval => SyncPolicy::Interval(Duration::from_millis(
            config.storage.sync_interval_ms.max(1),
        )),
    }
}

/// Why opening failed because the directory cannot be written, if that is why.
fn unwritable(e: &coral_store::Error) -> Option<String> {
    use std::io::ErrorKind;
    let coral_store::Error::Io { path, source } = e else {
        return None;
    };
    let why = match source.kind() {
        ErrorKind::ReadOnlyFilesystem => "read-only file system",
        ErrorKind::PermissionDenied => "no permission to write",
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => "the disk is full",
        _ => return None,
    };
    Some(format!("{why}: {}", path.display()))
}

impl Engine {
    /// Open the store of a validated `config` and settle its vectors against `embedder`.
    /// Returns the engine and what opening noticed (repairs, recomputed vectors).
    pub fn open(config: Config, embedder: Arc<dyn Embedder>) -> Result<(Engine, Vec<String>)> {
        let options = StoreOptions {
            dim: embedder.dim(),
            sync: sync_policy(&config),
            wal_max_bytes: config.storage.wal_max_bytes,
            features: Arc::new(coral_embed::text_bitmap),
        };
        let store = match Store::open(config.store_paths(), options.clone()) {
            Ok(store) => store,
            // A directory this process cannot write (read-only file system, no permission, a
            // full disk) can still be read: searches, exports and reports work and say that
            // nothing is recorded; every write names the reason.
            Err(e) => match unwritable(&e) {
                Some(reason) => {
                    Store::open_read_only(config.store_paths(), options, reason).map_err(|_| e)?
                }
                None => return Err(e.into()),
            },
        };
        let mut notices: Vec<String> = store.notes().to_vec();
        // The keyword index is built by the first hybrid or rrf search, so a process that only
        // inserts or reads stats (most CLI calls) never pays for it: at 15,300 memories it made
        // `cargo xtask stress-20k`'s reopen 0.47 s instead of 0.2 s.
        coral_base::probe::mark("open: store open");
        let mut door = Door::new(store);
        let vectors_disabled = vectors::reconcile(&mut door, embedder.as_ref(), &mut notices)?;
        door.keep_vector_form(config.retrieval.ann_threshold);
        coral_base::probe::mark("open: vectors reconciled");
        let engine = Engine {
            state: Mutex::new(State {
                door,
                sync_error: None,
                vectors_disabled,
                unrecorded: None,
                guard: RemovalGuard::default(),
            }),
            embedder,
            embedder_note: None,
            config: LiveConfig::new(config),
            governance: Governance::default(),
        };
        Ok((engine, notices))
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.config.load()
    }

    /// The configuration in force and its watcher.
    pub fn live(&self) -> &LiveConfig {
        &self.config
    }

    /// The same, to watch its file.
    pub fn live_mut(&mut self) -> &mut LiveConfig {
        &mut self.config
    }

    /// The embedder every text goes through.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// Why `"auto"` fell back to the hash embedder (shown by `stats`).
    pub fn set_embedder_note(&mut self, note: Option<String>) {
        self.embedder_note = note;
    }

    /// The engine locked in this process and across processes, caught up with what other
    /// processes sharing the data directory wrote. Released when the guard drops.
    pub(crate) fn lock_raw(&self) -> EngineGuard<'_> {
        // A panic while holding the lock cannot leave the store half-mutated (commit validates,
        // writes, then applies), so a poisoned lock is safe to keep using.
        let mut guard = EngineGuard {
            locked: self.state.lock().unwrap_or_else(|e| e.into_inner()),
        };
        match guard.door.acquire() {
            Ok(outcome) => {
                guard.sync_error = None;
                if outcome == SyncOutcome::Reloaded
                    && let Err(e) =
                        vectors::recompute_missing_vectors(&mut guard.door, self.embedder.as_ref())
                {
                    guard.sync_error = Some(format!("recomputing vectors after a reload: {e}"));
                }
            }
            // Reads go on with what this process has; writes retry the lock and report.
            Err(e) => guard.sync_error = Some(e.to_string()),
        }
        guard
    }

    /// The state as this process has it, without the data directory's lock or catching up
    /// (for a question about this process itself).
    pub(crate) fn peek(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checkpoint: rewrite the compatible files and fsync.
    pub fn flush(&self) -> Result<()> {
        let mut engine = self.lock();
        engine.door.checkpoint()?;
        engine.door.view().sync()?;
        Ok(())
    }

    /// Make the approximate vector index ready now instead of at the first search that needs
    /// it (see `vector_index.rs`), with `progress(done, total)`.
    pub fn prepare_vector_index(
        &self,
        mut progress: impl FnMut(usize, usize),
    ) -> VectorIndexReport {
        let mut engine = self.lock();
        engine
            .door
            .prepare_vectors(self.embedder.name(), &mut progress)
    }

    /// Checkpoint and release the data directory.
    pub fn close(self) -> Result<Closed> {
        let state = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        state.door.close()
    }
}
