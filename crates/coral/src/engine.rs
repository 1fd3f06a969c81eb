//! `Coral`: the engine that composes the store, the text features, scoring and heat.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use coral_embed::Embedder;
use coral_store::{Item, Record, Store, StoreOptions, SyncOutcome, SyncPolicy, Tier};
use serde::Serialize;

use crate::config::Config;
use crate::error::{Error, Result};

/// Longest memory or query accepted, in UTF-8 bytes. Memories are meant to be short facts;
/// anything longer is almost certainly a mistake (a whole document pasted in).
pub const MAX_TEXT_BYTES: usize = 65_536;

/// Largest `top_k` a search accepts.
pub const MAX_TOP_K: usize = 1_000;

/// Latest time a memory may carry or a call may be scored at, in Unix seconds: the last second
/// of the year 9999 (`9999-12-31T23:59:59Z`), where RFC 3339 and most date libraries stop. The
/// earliest is 0 (1970-01-01). A time outside is a unit mistake (milliseconds for seconds) or
/// garbage (`1e300`), and it would pin a memory's heat for ever.
pub const MAX_UNIX_TIME: f64 = 253_402_300_799.0;

/// Refuse a time that is not finite or outside 0..=[`MAX_UNIX_TIME`] seconds; `what` names it
/// in the message.
pub(crate) fn check_unix_time(what: &str, t: f64) -> Result<()> {
    if t.is_finite() && (0.0..=MAX_UNIX_TIME).contains(&t) {
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "{what} {t:?} is not a Unix time in seconds from 0 to {MAX_UNIX_TIME} (1970 to the end of \
         9999); give seconds, not milliseconds"
    )))
}

/// Current Unix time in seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A stored memory with its tier.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Memory {
    /// The item.
    #[serde(flatten)]
    pub item: Item,
    /// Where it lives.
    pub tier: Tier,
}

/// What an insert did.
#[derive(Clone, Debug, PartialEq)]
pub enum Insert {
    /// A new memory was stored.
    Inserted(Item),
    /// The text duplicated (or nearly duplicated) an existing memory, which was refreshed
    /// instead; carries that memory's id.
    Merged(String),
}

impl Insert {
    /// The id of the stored or refreshed memory.
    pub fn id(&self) -> &str {
        match self {
            Insert::Inserted(item) => &item.item_id,
            Insert::Merged(id) => id,
        }
    }

    /// True when a new memory was stored.
    pub fn inserted(&self) -> bool {
        matches!(self, Insert::Inserted(_))
    }
}

/// Options of [`Coral::insert_with`].
#[derive(Clone, Debug, PartialEq)]
pub struct InsertOptions {
    /// Importance in 0..1 (default 0.5).
    pub importance: f64,
    /// Project tag.
    pub project: Option<String>,
    /// Creation time for imported history (default: now).
    pub timestamp: Option<f64>,
    /// The clock for tier checks (default: the system clock).
    pub now: Option<f64>,
}

impl Default for InsertOptions {
    fn default() -> Self {
        InsertOptions {
            importance: 0.5,
            project: None,
            timestamp: None,
            now: None,
        }
    }
}

/// Options of [`Coral::search_with`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchOptions {
    /// Hits to return (default `retrieval.top_k`).
    pub top_k: Option<usize>,
    /// Boost this project's items and shared items.
    pub project: Option<String>,
    /// Drop hits below this score (default `retrieval.min_score`).
    pub min_score: Option<f64>,
    /// Score as of this time (default: the system clock).
    pub now: Option<f64>,
    /// IANA zone of time-shaped queries ("yesterday"; default `timeline.timezone`).
    pub timezone: Option<String>,
}

/// The parts of a hit's score.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Scores {
    /// Cosine of query and memory vectors.
    pub vector: f64,
    /// Bitmap Jaccard of their tokens.
    pub jaccard: f64,
    /// Recency of the memory's creation.
    pub time: f64,
    /// BM25 of the query's keywords in the memory; reported in the hybrid and rrf modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f64>,
}

/// One search result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchHit {
    /// The memory, after this hit was counted.
    pub item: Item,
    /// Its tier.
    pub tier: Tier,
    /// Fused score.
    pub score: f64,
    /// Components of the score.
    pub scores: Scores,
}

/// Counters, all O(1).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Hot items.
    pub hot: usize,
    /// Warm items.
    pub warm: usize,
    /// Cold items.
    pub cold: usize,
    /// All items.
    pub total: usize,
    /// Items with a usable vector.
    pub vectors: usize,
    /// Threads (kept apart from memories).
    pub threads: usize,
    /// Configured capacity.
    pub capacity_threshold: usize,
    /// Embedder in use.
    pub embedder: String,
    /// Vector dimension.
    pub dim: usize,
    /// Why the hash embedder is in use although `embedding.embedder` is `"auto"`.
    pub embedder_note: Option<String>,
    /// Why search ignores vectors (they were made by another model) until `coral reembed`.
    pub vectors_disabled: Option<String>,
    /// File entries kept verbatim because they did not parse.
    pub skipped_lines: usize,
    /// The last config problem, if the config in force is not the file's.
    pub config_error: Option<String>,
    /// Settings changed in the file that take effect only after a restart.
    pub restart_needed: Vec<String>,
    /// Damage contained at open.
    pub repairs: Vec<String>,
    /// Why the store is read-only (reads work, nothing is recorded), when it is.
    pub read_only: Option<String>,
    /// Why the last search's hits were not recorded, when they were not.
    pub unrecorded: Option<String>,
    /// Why the last checkpoint after a commit failed, when it did (nothing was lost).
    pub checkpoint_error: Option<String>,
    /// Temp files left by interrupted checkpoints and removed at open.
    pub temp_files_removed: usize,
    /// Their bytes.
    pub temp_bytes_removed: u64,
    /// Journal size since the last checkpoint.
    pub journal_bytes: u64,
    /// Checkpoints since the directory was created.
    pub generation: u64,
    /// Distillation and disk-quota activity since open.
    pub governance: crate::govern::GovernanceStats,
}

/// Disk usage (SPEC 6.5).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiskUsage {
    /// Bytes per data file.
    pub files: BTreeMap<String, u64>,
    /// Text files (everything but the `.npy`).
    pub data_bytes: u64,
    /// `items × dim × 4`: what the vectors take once checkpointed.
    pub projected_vector_bytes: u64,
    /// `data_bytes + projected_vector_bytes`.
    pub total_bytes: u64,
    /// The budget (0 = none).
    pub max_bytes: u64,
    /// What the budget counts: the items as a checkpoint writes them, plus the archive.
    pub quota_bytes: u64,
    /// `quota_bytes / max_bytes`, when there is a budget.
    pub ratio: Option<f64>,
}

/// What [`Coral::import_python_dir`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// Items found per tier in the source.
    pub found: BTreeMap<String, usize>,
    /// Items added.
    pub imported: usize,
    /// Items already present (same id), left as they were.
    pub already_present: usize,
    /// Vectors computed because the source had none usable.
    pub vectors_recomputed: usize,
    /// Source entries that did not parse (left in the source).
    pub skipped_lines: usize,
    /// What reading the source noticed.
    pub notes: Vec<String>,
}

impl Engine {
    /// Disk usage of the data directory (SPEC 6.5): every data file but the `.npy` (the
    /// timeline's database included, once it exists), plus the vectors as they will be once
    /// checkpointed (`items × dim × 4`). The quota counts the memory pool only.
    pub(crate) fn disk_usage(&self, config: &Config) -> DiskUsage {
        let mut files = BTreeMap::new();
        let mut data_bytes = 0;
        for (label, bytes) in self.store.file_sizes() {
            if label != "vectors" {
                data_bytes += bytes;
            }
            files.insert(label.to_string(), bytes);
        }
        // The timeline (when it exists): the database and its write-ahead log.
        let timeline = config.timeline_path();
        let mut wal = timeline.clone().into_os_string();
        wal.push("-wal");
        let timeline_bytes: u64 = [timeline, PathBuf::from(wal)]
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        if timeline_bytes > 0 {
            data_bytes += timeline_bytes;
            files.insert("timeline".to_string(), timeline_bytes);
        }
        // Temp files of a checkpoint in progress (left ones are removed at open).
        let (temps, temp_bytes) = self.store.temp_file_usage();
        if temps > 0 {
            data_bytes += temp_bytes;
            files.insert("temp".to_string(), temp_bytes);
        }
        let projected = (self.store.pool().len() * self.store.pool().dim() * 4) as u64;
        let total = data_bytes + projected;
        let max = config.storage.max_bytes;
        DiskUsage {
            files,
            data_bytes,
            projected_vector_bytes: projected,
            total_bytes: total,
            max_bytes: max,
            quota_bytes: self.quota_bytes(),
            ratio: (max > 0).then(|| self.quota_bytes() as f64 / max as f64),
        }
    }
}

pub(crate) struct Engine {
    pub(crate) store: Store,
    /// Token-hash sets of hot and warm items, for near-duplicate detection on insert.
    pub(crate) dedup: HashMap<String, Vec<u64>>,
    /// The last failure to catch up with other processes, if the latest attempt failed.
    pub(crate) sync_error: Option<String>,
    /// Why the stored vectors must not be scored (another model made them), until a re-embed.
    pub(crate) vectors_disabled: Option<String>,
    /// BM25 index of the pool for the hybrid and rrf modes; `None` until a mode needs it.
    pub(crate) keywords: Option<crate::keyword_index::KeywordIndex>,
    /// Why the last search's hits could not be recorded (access counts), until one is.
    pub(crate) unrecorded: Option<String>,
    /// The bulk-removal guard's record and hold (guard.rs).
    pub(crate) guard: crate::guard::RecordCache,
}

impl Engine {
    /// Keep derived state in step with records other processes wrote.
    pub(crate) fn after_sync(&mut self, outcome: &SyncOutcome) {
        match outcome {
            SyncOutcome::Applied(ids) => {
                for id in ids {
                    self.dedup.remove(id);
                }
            }
            SyncOutcome::Reloaded => self.dedup.clear(),
            _ => {}
        }
        self.keywords_after_sync(outcome);
    }
}

/// [`Engine`] held by this thread and by this process across the data directory; see
/// [`Coral::lock_raw`].
pub(crate) struct EngineGuard<'a> {
    guard: MutexGuard<'a, Engine>,
}

impl std::ops::Deref for EngineGuard<'_> {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.guard
    }
}

impl std::ops::DerefMut for EngineGuard<'_> {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.guard
    }
}

impl Drop for EngineGuard<'_> {
    fn drop(&mut self) {
        self.guard.store.release();
    }
}

/// A Coral memory: one data directory, one embedder, one configuration.
///
/// All methods take `&self`; `Coral` is `Send + Sync`. Mutations are journaled before they
/// return, so nothing acknowledged is lost if the process dies.
pub struct Coral {
    pub(crate) config: arc_swap::ArcSwap<Config>,
    /// Watches the config file; `None` when opened without one.
    pub(crate) reloader: Option<crate::reload::Reloader>,
    config_path: Option<PathBuf>,
    pub(crate) embedder: Arc<dyn Embedder>,
    notices: Vec<String>,
    pub(crate) engine: Mutex<Engine>,
    /// Distillation and disk-quota state.
    pub(crate) governance: crate::govern::Governance,
    /// Reasoning threads: a separate file and lock, never part of the memory pool.
    pub(crate) threads: crate::threads::Threads,
    /// The timeline (SPEC 11): its own SQLite file, opened on first use.
    pub(crate) timeline: crate::timeline::TimelineSlot,
    /// Why `"auto"` fell back to the hash embedder.
    pub(crate) embedder_note: Option<String>,
}

fn sync_policy(config: &Config) -> SyncPolicy {
    match config.storage.sync.as_str() {
        "always" => SyncPolicy::Always,
        "never" => SyncPolicy::Never,
        _ => SyncPolicy::Interval(Duration::from_millis(
            config.storage.sync_interval_ms.max(1),
        )),
    }
}

pub use crate::models::embedder_for;

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

impl Coral {
    /// Open with the config file at `config_path` (created with defaults when missing).
    pub fn open(config_path: impl AsRef<Path>) -> Result<Coral> {
        let path = config_path.as_ref();
        Coral::open_loaded(Config::load(path)?, path)
    }

    /// Open with a configuration loaded (and perhaps adjusted) by the caller from `path`.
    pub fn open_loaded(loaded: crate::config::Loaded, path: &Path) -> Result<Coral> {
        // Name the config file actually read in errors about it.
        let (embedder, note) = embedder_for(&loaded.config).map_err(|e| match e {
            Error::Config { detail, .. } => Error::Config {
                path: path.to_path_buf(),
                detail,
            },
            e => e,
        })?;
        let mut notices = loaded.warnings;
        if loaded.created {
            notices.push(format!("created {} with the defaults", path.display()));
        }
        notices.extend(note.clone());
        let mut coral = Coral::open_with(loaded.config, embedder)?;
        coral.embedder_note = note;
        coral.config_path = Some(path.to_path_buf());
        coral.reloader = Some(crate::reload::Reloader::new(path));
        notices.append(&mut coral.notices);
        coral.notices = notices;
        Ok(coral)
    }

    /// Open with a configuration and embedder given by the caller.
    pub fn open_with(config: Config, embedder: Arc<dyn Embedder>) -> Result<Coral> {
        let problems = config.validate();
        if !problems.is_empty() {
            return Err(Error::Config {
                path: config.base_dir.clone(),
                detail: problems.join("; "),
            });
        }
        let options = StoreOptions {
            dim: embedder.dim(),
            sync: sync_policy(&config),
            wal_max_bytes: config.storage.wal_max_bytes,
            features: Arc::new(|text: &str| coral_embed::text_features(text).bitmap),
        };
        let mut store = match Store::open(config.store_paths(), options.clone()) {
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
        let vectors_disabled =
            crate::reembed::reconcile(&mut store, embedder.as_ref(), &mut notices)?;
        let threads = crate::threads::Threads::open(&config)?;
        if threads.unreadable_entries() > 0 {
            notices.push(format!(
                "{} entr(ies) of {} are not readable threads; kept in the file as they are",
                threads.unreadable_entries(),
                threads.path().display()
            ));
        }
        notices.extend(threads.repairs());
        // The keyword index is built by the first hybrid or rrf search (`ensure_keywords`), so
        // a process that only inserts or reads stats (most CLI calls) never pays for it: at
        // 15,300 memories it made `cargo xtask stress-20k`'s reopen 0.47 s instead of 0.2 s.
        let keywords = None;
        let timeline = crate::timeline::TimelineSlot::new(&config);
        let coral = Coral {
            config: arc_swap::ArcSwap::from_pointee(config),
            reloader: None,
            governance: Default::default(),
            config_path: None,
            embedder,
            notices,
            engine: Mutex::new(Engine {
                keywords,
                store,
                dedup: HashMap::new(),
                sync_error: None,
                vectors_disabled,
                unrecorded: None,
                guard: Default::default(),
            }),
            threads,
            timeline,
            embedder_note: None,
        };
        Ok(coral)
    }

    /// Things worth telling the user once (fallback embedder, repairs, skipped lines).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.config.load_full()
    }

    /// The config file, when opened from one.
    pub fn config_path(&self) -> Option<&Path> {
        self.config_path.as_deref()
    }

    /// Replace the configuration (validated first; an invalid one changes nothing). Changes
    /// apply to the next call; a lower capacity is governed at once. Paths, threads and
    /// embedding settings keep their values until a reopen. The file is not written (see
    /// [`Coral::config_set`] for that).
    pub fn set_config(&self, config: Config) -> Result<()> {
        let problems = config.validate();
        if !problems.is_empty() {
            return Err(Error::InvalidInput(problems.join("; ")));
        }
        // A Rust caller that sets a configuration means it: its limits apply at once.
        self.apply_config(config, unix_now(), true)
    }

    /// The engine, after picking up a changed config file.
    pub(crate) fn lock(&self) -> EngineGuard<'_> {
        let mut engine = self.lock_raw();
        self.reload_if_changed(&mut engine);
        engine
    }

    /// The engine locked in this process and across processes, caught up with what other
    /// processes sharing the data directory wrote. Released when the guard drops.
    pub(crate) fn lock_raw(&self) -> EngineGuard<'_> {
        // A panic while holding the lock cannot leave the store half-mutated (commit validates,
        // writes, then applies), so a poisoned lock is safe to keep using.
        let mut guard = EngineGuard {
            guard: self.engine.lock().unwrap_or_else(|e| e.into_inner()),
        };
        match guard.store.acquire() {
            Ok(outcome) => {
                guard.sync_error = None;
                guard.after_sync(&outcome);
                if outcome == SyncOutcome::Reloaded
                    && let Err(e) =
                        recompute_missing_vectors(&mut guard.store, self.embedder.as_ref())
                {
                    guard.sync_error = Some(format!("recomputing vectors after a reload: {e}"));
                }
            }
            // Reads go on with what this process has; writes retry the lock and report.
            Err(e) => guard.sync_error = Some(e.to_string()),
        }
        guard
    }

    /// The embedder in use.
    pub fn embedder(&self) -> &dyn Embedder {
        self.embedder.as_ref()
    }

    /// One memory by id (searchable items; see [`Coral::get_archived`] for the archive).
    pub fn get(&self, id: &str) -> Option<Memory> {
        let engine = self.lock();
        engine.store.get(id).map(|(item, tier)| Memory {
            item: item.clone(),
            tier,
        })
    }

    /// An archived (evicted or distilled) memory by id.
    pub fn get_archived(&self, id: &str) -> Result<Option<Item>> {
        Ok(self.lock().store.archived(id)?)
    }

    /// Delete a memory. Returns false when no memory has that id.
    pub fn delete(&self, id: &str) -> Result<bool> {
        let mut engine = self.lock();
        if engine.store.get(id).is_none() {
            return Ok(false);
        }
        engine.commit(vec![Record::Delete { id: id.into() }])?;
        engine.dedup.remove(id);
        Ok(true)
    }

    /// Set a memory's importance (0..1).
    pub fn mark_important(&self, id: &str, importance: f64) -> Result<Item> {
        check_importance(importance)?;
        let mut engine = self.lock();
        if engine.store.get(id).is_none() {
            return Err(Error::NotFound(id.into()));
        }
        engine.store.commit(vec![Record::Importance {
            id: id.into(),
            importance,
        }])?;
        engine
            .store
            .get(id)
            .map(|(i, _)| i.clone())
            .ok_or_else(|| Error::NotFound(id.into()))
    }

    /// Checkpoint: rewrite the compatible files and fsync. Data is durable without it.
    pub fn flush(&self) -> Result<()> {
        let mut engine = self.lock();
        engine.store.checkpoint()?;
        engine.store.sync()?;
        drop(engine);
        self.threads.flush()
    }

    /// Counters (O(1)).
    pub fn stats(&self) -> Stats {
        let engine = self.lock();
        let config = self.config();
        let store = &engine.store;
        let counts = store.counts();
        let total = store.pool().len();
        Stats {
            hot: counts.hot,
            warm: counts.warm,
            cold: counts.cold,
            total,
            vectors: total - store.pool().missing_vectors().len() as usize,
            threads: self.threads.len(),
            capacity_threshold: config.memory.capacity_threshold,
            embedder: self.embedder.name().to_string(),
            dim: self.embedder.dim(),
            embedder_note: self.embedder_note.clone(),
            vectors_disabled: engine.vectors_disabled.clone(),
            skipped_lines: store.skipped_lines(),
            config_error: self.reloader.as_ref().and_then(|r| r.error()),
            restart_needed: self
                .reloader
                .as_ref()
                .map(|r| r.restart_needed())
                .unwrap_or_default(),
            repairs: store.repairs().iter().map(ToString::to_string).collect(),
            read_only: store.read_only().map(String::from),
            unrecorded: engine.unrecorded.clone(),
            checkpoint_error: store.checkpoint_error().map(String::from),
            temp_files_removed: store.temp_files_removed().0,
            temp_bytes_removed: store.temp_files_removed().1,
            journal_bytes: store.journal_bytes(),
            generation: store.generation(),
            governance: crate::govern::GovernanceStats {
                held: engine.held().map(|h| {
                    format!(
                        "{}: would remove {} of {} memories ({}); {}",
                        h.preview.changes.join(", "),
                        h.preview.would_remove,
                        h.preview.memories,
                        h.preview
                            .by_reason
                            .iter()
                            .map(|(r, n)| format!("{r} {n}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        h.confirm
                    )
                }),
                ..self.governance.snapshot()
            },
        }
    }

    /// Disk usage by file and against the budget.
    pub fn disk_usage(&self) -> DiskUsage {
        let engine = self.lock();
        engine.disk_usage(&self.config())
    }

    /// Every memory, oldest first.
    pub fn export(&self) -> Vec<Memory> {
        let engine = self.lock();
        let pool = engine.store.pool();
        let mut out: Vec<Memory> = (0..pool.len() as u32)
            .map(|row| Memory {
                item: pool.item(row).clone(),
                tier: pool.tier(row),
            })
            .collect();
        out.sort_by(|a, b| {
            a.item
                .timestamp
                .total_cmp(&b.item.timestamp)
                .then_with(|| a.item.item_id.cmp(&b.item.item_id))
        });
        out
    }

    /// Why nothing this process does is recorded, if so: the store is read-only, or the last
    /// search could not record its hits (a full disk). The CLI prints it after a read.
    pub fn unrecorded(&self) -> Option<String> {
        let engine = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        engine
            .store
            .read_only()
            .map(|r| format!("the store is read-only ({r}): nothing was recorded"))
            .or_else(|| engine.unrecorded.clone())
    }

    /// Checkpoint and release the data directory. Returns warnings that lost nothing (a
    /// closing checkpoint that failed on a full disk: the journal keeps every change).
    pub fn close(self) -> Result<Vec<String>> {
        let threads = self.threads.flush();
        let engine = self.engine.into_inner().unwrap_or_else(|e| e.into_inner());
        let closed = engine.store.close()?;
        threads?;
        Ok(closed.checkpoint_error.into_iter().collect())
    }
}

pub(crate) fn check_importance(importance: f64) -> Result<()> {
    if !importance.is_finite() || !(0.0..=1.0).contains(&importance) {
        return Err(Error::InvalidInput(format!(
            "importance must be a number from 0 to 1, got {importance}"
        )));
    }
    Ok(())
}

pub(crate) fn check_text(what: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::InvalidInput(format!(
            "{what} is empty: give some text"
        )));
    }
    if text.len() > MAX_TEXT_BYTES {
        return Err(Error::InvalidInput(format!(
            "{what} is {} bytes; the limit is {MAX_TEXT_BYTES} (store a summary instead)",
            text.len()
        )));
    }
    Ok(())
}

/// Compute vectors the store could not load (other model's dim, missing `.npy`, ...): all of
/// them with the hash embedder, at most [`crate::reembed::OPEN_RECOMPUTE_LIMIT`] with a model
/// (more wait for `coral reembed`; see `reembed.rs`).
pub(crate) fn recompute_missing_vectors(
    store: &mut Store,
    embedder: &dyn Embedder,
) -> Result<usize> {
    let rows: Vec<u32> = store.pool().missing_vectors().iter().collect();
    if embedder.name() != "hash" && rows.len() > crate::reembed::OPEN_RECOMPUTE_LIMIT {
        return Ok(0);
    }
    for chunk in rows.chunks(256) {
        let texts: Vec<String> = chunk
            .iter()
            .map(|&r| store.pool().item(r).content.clone())
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&refs)?;
        for (&row, v) in chunk.iter().zip(&vectors) {
            store.set_vector(row, v);
        }
    }
    Ok(rows.len())
}
