//! [`Coral`], the Rust API: opening and closing, memories, governance, reports, configuration
//! and the threads. (The timeline's part of the API is `timeline.rs`.) The engine (`engine/`)
//! does the work; each method here says what it takes and what it returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use coral_embed::Embedder;
use coral_heat::Llm;
use coral_store::Item;
use coral_thread::{StatusReport as ThreadStatusReport, ThreadStore, ThreadView};
use serde_json::Value;

use coral_config::{Config, ConfigFile, Loaded, Reloader};
use coral_config::{get_in, refuse_for_tools, tool_may_change};
use coral_engine::{
    Engine, FuseCheck, PgBackend, ReembedReport, Report, check_importance, fuse_check,
};

use crate::backend::{Backend, Local};
use crate::models::embedder_for;
use crate::timeline_slot::TimelineSlot;
use crate::{
    ConfigChange, Confirmed, DiskUsage, Error, Held, ImportReport, Insert, InsertOptions, ListPage,
    ListQuery, Memory, RemovalPreview, Result, SearchHit, SearchOptions, Stats, unix_now,
};

/// A Coral memory: one data directory (or one tenant of a PostgreSQL database, with
/// `storage.backend = "postgres"`), one embedder, one configuration.
///
/// All methods take `&self`; `Coral` is `Send + Sync`. Mutations are journaled (or committed
/// in the database) before they return, so nothing acknowledged is lost if the process dies.
pub struct Coral {
    /// Where memories and threads live: the data directory or a database (`backend.rs`).
    pub(crate) backend: Backend,
    /// The timeline: its own SQLite file, opened on first use.
    pub(crate) timeline: TimelineSlot,
    notices: Vec<String>,
    config_path: Option<PathBuf>,
}

impl Coral {
    /// Open with the config file at `config_path` (created with defaults when missing).
    pub fn open(config_path: impl AsRef<Path>) -> Result<Coral> {
        let path = config_path.as_ref();
        Coral::open_loaded(Config::load(path)?, path)
    }

    /// Open with a configuration loaded (and perhaps adjusted) by the caller from `path`.
    pub fn open_loaded(loaded: Loaded, path: &Path) -> Result<Coral> {
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
        coral.backend.set_embedder_note(note);
        coral.config_path = Some(path.to_path_buf());
        coral.backend.live_mut().watch(Reloader::new(path));
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
        if config.storage.backend() == coral_config::StorageBackend::Postgres {
            // Memories and threads in the database; nothing of them in the data directory.
            let backend = PgBackend::open(config.clone(), embedder)?;
            // Standing facts worth one line: what the database does not do yet.
            let notices = vec![
                "storage.backend = \"postgres\": tiers, capacity, the quotas, the archive and the \
                 removal guard are applied per tenant; distillation and coral report are not \
                 served by the database yet (docs/postgres.md)"
                    .to_string(),
            ];
            let timeline = TimelineSlot::new(&config, backend.live().redaction().clone());
            return Ok(Coral {
                backend: Backend::Postgres(Box::new(backend)),
                timeline,
                notices,
                config_path: None,
            });
        }
        let (engine, mut notices) = Engine::open(config.clone(), embedder)?;
        // The thread store and the timeline follow `privacy.redact_secrets` through the
        // engine's switch, so a config edit reaches them too.
        let redaction = engine.live().redaction().clone();
        let threads = ThreadStore::open_with(
            config.threads_path(),
            coral_thread::StoreOptions {
                redaction: redaction.clone(),
                ..config.thread_store_options()
            },
        )?;
        if threads.unreadable_entries() > 0 {
            notices.push(format!(
                "{} entr(ies) of {} are not readable threads; kept in the file as they are",
                threads.unreadable_entries(),
                threads.path().display()
            ));
        }
        notices.extend(threads.repairs());
        let timeline = TimelineSlot::new(&config, redaction);
        Ok(Coral {
            backend: Backend::Local(Box::new(Local { engine, threads })),
            timeline,
            notices,
            config_path: None,
        })
    }

    /// Things worth telling the user once (fallback embedder, repairs, skipped lines).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.backend.config()
    }

    /// `storage.backend` of this Coral: `"local"` or `"postgres"`.
    pub fn backend(&self) -> &'static str {
        self.backend.name()
    }

    /// The config file, when opened from one.
    pub fn config_path(&self) -> Option<&Path> {
        self.config_path.as_deref()
    }

    /// The embedder in use.
    pub fn embedder(&self) -> &dyn Embedder {
        self.backend.embedder().as_ref()
    }

    /// Checkpoint: rewrite the compatible files and fsync. Data is durable without it. (The
    /// postgres backend has nothing to checkpoint: every call is a committed transaction.)
    pub fn flush(&self) -> Result<()> {
        let Backend::Local(l) = &self.backend else {
            return Ok(());
        };
        l.engine.flush()?;
        Ok(l.threads.flush()?)
    }

    /// Checkpoint and release the data directory. Returns warnings that lost nothing (a
    /// closing checkpoint that failed on a full disk: the journal keeps every change).
    pub fn close(self) -> Result<Vec<String>> {
        let Backend::Local(l) = self.backend else {
            return Ok(Vec::new());
        };
        let Local { engine, threads } = *l;
        let threads = threads.flush();
        let closed = engine.close()?;
        threads?;
        Ok(closed.checkpoint_error.into_iter().collect())
    }

    // Memories.

    /// Store a memory with the given importance (0..1). A text that duplicates a hot or warm
    /// memory (set-Jaccard ≥ `memory.sim_threshold_hot`) refreshes that memory instead.
    pub fn insert(&self, content: &str, importance: f64) -> Result<Insert> {
        self.insert_with(
            content,
            InsertOptions {
                importance,
                ..InsertOptions::default()
            },
        )
    }

    /// [`Coral::insert`] with a project tag, an explicit creation time or clock.
    pub fn insert_with(&self, content: &str, options: InsertOptions) -> Result<Insert> {
        match &self.backend {
            Backend::Local(l) => l.engine.insert_with(content, options),
            Backend::Postgres(p) => p.insert_with(content, options),
        }
    }

    /// [`Coral::search_with`] without counting the hits as accesses, so nothing is journaled:
    /// for memories shown without being asked for (a client hook's recall before each prompt),
    /// which would otherwise gain heat from every prompt that mentions their words.
    pub fn search_uncounted(&self, query: &str, options: SearchOptions) -> Result<Vec<SearchHit>> {
        match &self.backend {
            Backend::Local(l) => l.engine.search_uncounted(query, options),
            Backend::Postgres(p) => p.search(query, options, false),
        }
    }

    /// The `top_k` memories most relevant to `query`.
    pub fn search(&self, query: &str, top_k: usize) -> Result<Vec<SearchHit>> {
        self.search_with(
            query,
            SearchOptions {
                top_k: Some(top_k),
                ..SearchOptions::default()
            },
        )
    }

    /// [`Coral::search`] with a project, a score floor or a clock.
    pub fn search_with(&self, query: &str, options: SearchOptions) -> Result<Vec<SearchHit>> {
        match &self.backend {
            Backend::Local(l) => l.engine.search_with(query, options),
            Backend::Postgres(p) => p.search(query, options, true),
        }
    }

    /// One memory by id (searchable items; see [`Coral::get_archived`] for the archive).
    /// Fails only when the backend cannot be read (the database unreachable).
    pub fn get(&self, id: &str) -> Result<Option<Memory>> {
        let l = match &self.backend {
            Backend::Local(l) => l,
            Backend::Postgres(p) => return p.get(id),
        };
        Ok(l.engine.get(id))
    }

    /// An archived (evicted or distilled) memory by id.
    pub fn get_archived(&self, id: &str) -> Result<Option<Item>> {
        let l = match &self.backend {
            Backend::Local(l) => l,
            Backend::Postgres(p) => return p.get_archived(id),
        };
        l.engine.get_archived(id)
    }

    /// Delete a memory. Returns false when no memory has that id.
    pub fn delete(&self, id: &str) -> Result<bool> {
        let l = match &self.backend {
            Backend::Local(l) => l,
            Backend::Postgres(p) => return p.delete(id),
        };
        l.engine.delete(id)
    }

    /// Set a memory's importance (0..1).
    pub fn mark_important(&self, id: &str, importance: f64) -> Result<Item> {
        check_importance(importance)?;
        let l = match &self.backend {
            Backend::Local(l) => l,
            Backend::Postgres(p) => return p.mark_important(id, importance),
        };
        l.engine.mark_important(id, importance)
    }

    /// One page of the stored memories, filtered and ordered ([`ListQuery`]). Nothing is
    /// counted as an access; other processes' writes are caught up with first.
    pub fn list(&self, query: &ListQuery) -> Result<ListPage> {
        let l = match &self.backend {
            Backend::Local(l) => l,
            Backend::Postgres(p) => return p.list(query),
        };
        l.engine.list(query)
    }

    /// Every memory, oldest first (ties by id). Fails only when the backend cannot be read.
    pub fn export(&self) -> Result<Vec<Memory>> {
        let l = match &self.backend {
            Backend::Local(l) => l,
            Backend::Postgres(p) => return p.export(),
        };
        Ok(l.engine.export())
    }

    /// Copy the memories of a Python Coral data directory into this one, preserving ids,
    /// counters, timestamps and tiers. Items already present are left alone. The source is only
    /// read. `progress` is called with (done, total) as items are written.
    pub fn import_python_dir(
        &self,
        source: &Path,
        progress: impl FnMut(usize, usize),
    ) -> Result<ImportReport> {
        let l = self.backend.local("coral import")?;
        let mut report = l.engine.import_python_dir(source, progress)?;
        // The threads, which the original keeps beside its memories by default.
        let threads = source.join(crate::THREADS_FILE);
        if threads.exists() {
            report.threads = Some(l.threads.import(&threads)?);
        }
        Ok(report)
    }

    /// Embed every memory again with the configured embedder, replace the vector files
    /// (checkpointed: each file is written atomically), record the embedder in
    /// `coral_vectors.meta.json`, and verify with sample searches. Embedding happens without
    /// the engine lock; memories inserted meanwhile already carry the configured embedder's
    /// vectors. `progress` is called with (done, total). Run it with no other process using the
    /// data directory.
    pub fn reembed(&self, progress: impl FnMut(usize, usize)) -> Result<ReembedReport> {
        self.backend
            .local("coral reembed")?
            .engine
            .reembed(progress)
    }

    /// Make the approximate vector index ready now (docs/ann.md) instead of at the first
    /// search that needs it: loaded from `coral_ann.idx` and caught up with the pool, or, when
    /// that file is missing, damaged or of another embedder, built from the pool with
    /// `progress(done, total)`. Works whatever the pool's size (`retrieval.ann_threshold` only
    /// decides when searches use it).
    pub fn prepare_vector_index(
        &self,
        progress: impl FnMut(usize, usize),
    ) -> Result<crate::VectorIndexReport> {
        let l = self.backend.local("preparing the vector index")?;
        Ok(l.engine.prepare_vector_index(progress))
    }

    // Governance.

    /// Distil now with a given client (tests and tools inject their own), whatever the
    /// capacity: the coolest clusters become summaries. Returns how many clusters were replaced.
    pub fn distill_with(&self, llm: &dyn Llm, now: f64) -> Result<usize> {
        self.backend
            .local("distillation")?
            .engine
            .distill_with(llm, now)
    }

    /// What the configuration in force would remove now, and whether a change is held.
    pub fn removal_preview(&self) -> Result<(RemovalPreview, Option<Held>)> {
        match &self.backend {
            Backend::Local(l) => Ok(l.engine.removal_preview()),
            Backend::Postgres(p) => p.removal_preview(),
        }
    }

    /// Accept the limits of the configuration in force, whatever they remove, and govern now
    /// (`coral govern --confirm`; a tool's `confirm: true`).
    pub fn confirm_removals(&self) -> Result<Confirmed> {
        match &self.backend {
            Backend::Local(l) => l.engine.confirm_removals(),
            Backend::Postgres(p) => p.confirm_removals(),
        }
    }

    // Reports.

    /// Counters (O(1)).
    pub fn stats(&self) -> Stats {
        let l = match &self.backend {
            Backend::Local(l) => l,
            Backend::Postgres(p) => return p.stats(),
        };
        // Another process (`coral thread ...`, a second server) may have changed the file. When
        // it cannot be read now, the count this process holds is still true for it, and the
        // thread tools report the read error.
        let threads = l.threads.count().unwrap_or_else(|_| l.threads.len());
        l.engine.stats(threads)
    }

    /// Disk usage by file and against the budget. With the postgres backend the data
    /// directory holds no memories: no files, and the tenant's bytes against the budget
    /// (`quota_bytes`, docs/postgres.md, "Quotas").
    pub fn disk_usage(&self) -> DiskUsage {
        let l = match &self.backend {
            Backend::Local(l) => l,
            Backend::Postgres(p) => return p.disk_usage(),
        };
        l.engine.disk_usage()
    }

    /// Why nothing this process does is recorded, if so: the store is read-only, or the last
    /// search could not record its hits (a full disk). The CLI prints it after a read.
    pub fn unrecorded(&self) -> Option<String> {
        match &self.backend {
            Backend::Local(l) => l.engine.unrecorded(),
            Backend::Postgres(p) => p.unrecorded(),
        }
    }

    /// Stats, disk usage, a 14-day histogram, the five memories closest to eviction and
    /// absolute paths.
    pub fn report(&self) -> Result<Report> {
        self.report_at(unix_now())
    }

    /// [`Coral::report`] as of `now`.
    pub fn report_at(&self, now: f64) -> Result<Report> {
        let l = self.backend.local("coral report")?;
        let stats = self.stats();
        let disk_usage = self.disk_usage();
        Ok(l.engine.report(stats, disk_usage, self.config_path(), now))
    }

    /// Whether these texts together exceed `memory.token_fuse_threshold` tokens.
    pub fn fuse_check<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> FuseCheck {
        let threshold = self.config().memory.token_fuse_threshold;
        let tokens = texts.into_iter().map(coral_embed::token_count).sum();
        fuse_check(tokens, threshold)
    }

    // Configuration.

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
        self.apply_config(config, true)
    }

    /// `config` in force now; locally governed at once (`confirmed`: whatever it removes).
    fn apply_config(&self, config: Config, confirmed: bool) -> Result<()> {
        match &self.backend {
            Backend::Local(l) => l.engine.apply_config(config, unix_now(), confirmed),
            Backend::Postgres(p) => p.apply_config(config, confirmed),
        }
    }

    /// The configuration in force (or one dotted key or section of it), API key masked.
    pub fn config_get(&self, path: Option<&str>) -> Result<Value> {
        Ok(get_in(&self.config(), path)?)
    }

    /// [`ConfigFile::set`] on this Coral's file, then in force at once; returns
    /// `{key_path, old, new}` (secrets masked). For the operator (a Rust caller): every key but
    /// the file locations, and whatever the new limits remove. Tools use
    /// [`Coral::config_set_by_tool`].
    pub fn config_set(&self, key_path: &str, value: Value) -> Result<Value> {
        let edit = self.config_file()?.set(key_path, value)?;
        self.put_in_force(edit.config, true)?;
        Ok(edit.result)
    }

    /// [`ConfigFile::reset`] on this Coral's file, then in force at once; returns
    /// `{reset, scope, changed}`. Never touches data.
    pub fn config_reset(&self, key_path: Option<&str>) -> Result<Value> {
        let edit = self.config_file()?.reset(key_path)?;
        self.put_in_force(edit.config, true)?;
        Ok(edit.result)
    }

    /// A tool's `coral_config_set`: only [`crate::TOOL_SETTABLE`] keys; a change that would
    /// remove more than [`crate::bulk_limit`] memories at once is not made unless `confirm`,
    /// and the answer is then the preview.
    pub fn config_set_by_tool(
        &self,
        key_path: &str,
        value: Value,
        confirm: bool,
    ) -> Result<ConfigChange> {
        let key = key_path.trim();
        if !tool_may_change(key) {
            return Err(refuse_for_tools(key).into());
        }
        let file = self.config_file()?;
        let planned = file.preview_set(key, value.clone())?;
        if let Some(preview) = self.needs_confirmation(&planned.config, confirm)? {
            return Ok(ConfigChange::NeedsConfirmation(preview));
        }
        let edit = file.set(key, value)?;
        self.put_in_force(edit.config, confirm)?;
        Ok(ConfigChange::Done(edit.result))
    }

    /// A tool's `coral_config_reset`: only [`crate::TOOL_SETTABLE`] keys are reset (the others
    /// of a section are listed as `kept`); guarded like [`Coral::config_set_by_tool`].
    pub fn config_reset_by_tool(
        &self,
        key_path: Option<&str>,
        confirm: bool,
    ) -> Result<ConfigChange> {
        let file = self.config_file()?;
        let planned = file.reset_for_tool(key_path, false)?;
        if let Some(preview) = self.needs_confirmation(&planned.config, confirm)? {
            return Ok(ConfigChange::NeedsConfirmation(preview));
        }
        let edit = file.reset_for_tool(key_path, true)?;
        self.put_in_force(edit.config, confirm)?;
        Ok(ConfigChange::Done(edit.result))
    }

    fn config_file(&self) -> Result<ConfigFile> {
        self.config_path().map(ConfigFile::new).ok_or_else(|| {
            Error::InvalidInput(
                "this Coral was opened without a config file; there is nothing to edit".into(),
            )
        })
    }

    fn put_in_force(&self, mut config: Config, confirmed: bool) -> Result<()> {
        let current = self.config();
        config.base_dir = current.base_dir.clone();
        config.data_dir_override = current.data_dir_override.clone();
        self.apply_config(config, confirmed)
    }

    /// The preview of `planned` when it would remove in bulk and is not confirmed.
    fn needs_confirmation(
        &self,
        planned: &Config,
        confirm: bool,
    ) -> Result<Option<RemovalPreview>> {
        if confirm {
            return Ok(None);
        }
        let current = self.config();
        let mut planned = planned.clone();
        planned.base_dir = current.base_dir.clone();
        planned.data_dir_override = current.data_dir_override.clone();
        let preview = match &self.backend {
            Backend::Local(l) => l.engine.preview_change(&planned),
            Backend::Postgres(p) => p.preview_change(&planned)?,
        };
        Ok(preview.in_bulk().then_some(preview))
    }

    // Threads.

    /// The reasoning threads of the local backend (docs/storage.md, "Threads"): a separate
    /// file and lock, never part of the memory pool. The seven operations (`create`, `status`,
    /// `advance`, `interrupt`, `archive`, `resume`, `link`) are the store's; their results
    /// serialise to the `thread` / `threads` parts of the tool results. With the postgres
    /// backend the threads are in the database: use [`Coral::thread_create`] and the methods
    /// beside it, which serve both.
    pub fn threads(&self) -> Result<&ThreadStore> {
        Ok(&self.backend.local("the threads file")?.threads)
    }

    /// `thread_create(title, summary?, parent_thread_id?, by?)`.
    pub fn thread_create(
        &self,
        title: &str,
        summary: Option<&str>,
        parent_thread_id: Option<&str>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        match &self.backend {
            Backend::Local(l) => Ok(l.threads.create(title, summary, parent_thread_id, by)?),
            Backend::Postgres(p) => p.thread_create(title, summary, parent_thread_id, by),
        }
    }

    /// `thread_status(thread_id?, include_archived?, query?)`: one thread, or the overview
    /// (the overview is not served by the postgres backend yet).
    pub fn thread_status(
        &self,
        thread_id: Option<&str>,
        include_archived: bool,
        query: Option<&str>,
    ) -> Result<ThreadStatusReport> {
        match &self.backend {
            Backend::Local(l) => Ok(l.threads.status(thread_id, include_archived, query)?),
            Backend::Postgres(p) => p.thread_status(thread_id, include_archived, query),
        }
    }

    /// `thread_advance(thread_id, note, done?, by?)`: one more step.
    pub fn thread_advance(
        &self,
        thread_id: &str,
        note: &str,
        done: Option<bool>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        match &self.backend {
            Backend::Local(l) => Ok(l.threads.advance(thread_id, note, done, by)?),
            Backend::Postgres(p) => p.thread_advance(thread_id, note, done, by),
        }
    }

    /// `thread_interrupt(thread_id, reason?)`: status interrupted, plus a step
    /// `[中断] reason`.
    pub fn thread_interrupt(&self, thread_id: &str, reason: Option<&str>) -> Result<ThreadView> {
        match &self.backend {
            Backend::Local(l) => Ok(l.threads.interrupt(thread_id, reason)?),
            Backend::Postgres(p) => p.thread_interrupt(thread_id, reason),
        }
    }

    /// `thread_archive(thread_id)`: hidden from the overview, kept forever.
    pub fn thread_archive(&self, thread_id: &str) -> Result<ThreadView> {
        match &self.backend {
            Backend::Local(l) => Ok(l.threads.archive(thread_id)?),
            Backend::Postgres(p) => p.thread_set_status(thread_id, crate::ThreadStatus::Archived),
        }
    }

    /// `thread_resume(thread_id)`: back to active.
    pub fn thread_resume(&self, thread_id: &str) -> Result<ThreadView> {
        match &self.backend {
            Backend::Local(l) => Ok(l.threads.resume(thread_id)?),
            Backend::Postgres(p) => p.thread_set_status(thread_id, crate::ThreadStatus::Active),
        }
    }

    /// `thread_link(child_id, parent_id)`: no self-links, no cycles.
    pub fn thread_link(&self, child_id: &str, parent_id: &str) -> Result<()> {
        match &self.backend {
            Backend::Local(l) => Ok(l.threads.link(child_id, parent_id)?),
            Backend::Postgres(p) => p.thread_link(child_id, parent_id),
        }
    }
}
