//! The PostgreSQL backend of the facade (docs/postgres.md): `storage.backend = "postgres"`
//! serves memories and threads from `coral_pg::PgStore`, one tenant pinned by the operator's
//! `storage.postgres_tenant`. Checks, secrets and embedding are the facade's (`prepare.rs`);
//! the database finds the candidates and the facade ranks them with the local engine's code
//! (`coral_score::fuse_hybrid`, `rank.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coral_embed::{Embedder, item_id, text_features, token_count};
use std::io::Write as _;

use coral_pg::{Candidates, ColdFilter, NewMemory, PgOptions, PgStore, SearchQuery};
use coral_score::{HybridParams, Scored, bitmap_jaccard, fuse_hybrid, time_decay};
use coral_store::{Item, Tier, tiebreak_key};
use coral_thread::{Status as ThreadStatus, StatusReport, ThreadView};

use crate::error::{Error, Result};
use crate::governance::{Governance, GovernanceStats};
use crate::guard::{Confirmed, Held, RemovalLimits, RemovalPreview, held_line};
use crate::limits::{check_importance, unix_now};
use crate::list::{ListPage, ListQuery, list_rows};
use crate::pg_govern::{self, Projects};
use crate::prepare::{new_text, question};
use crate::rank::{Candidate, Priors, rank};
use crate::search_rrf::RRF_DEPTH;
use crate::types::{
    DiskUsage, Insert, InsertOptions, InsertOutcome, Memory, Scores, SearchHit, SearchOptions,
    Stats,
};
use coral_config::LiveConfig;
use coral_config::{Config, RetrievalMode};

/// `storage.backend`'s name of this backend, in errors.
pub const NAME: &str = "postgres";

/// The connection settings of `config`: `storage.postgres_url` (else `CORAL_POSTGRES_URL`)
/// and `storage.postgres_pool_size`; the tenant is `storage.postgres_tenant`, pinned for the
/// life of the process (a tool can change none of them: `config_ops.rs`).
pub(crate) fn options(config: &Config) -> Result<PgOptions> {
    let storage = &config.storage;
    let mut options = PgOptions::from_config_or_env(Some(&storage.postgres_url))?;
    options.max_connections = storage.postgres_pool_size;
    Ok(options)
}

/// The memories and threads of one tenant in a shared database.
pub struct PgBackend {
    store: PgStore,
    /// The configuration in force.
    config: LiveConfig,
    /// The embedder every text goes through.
    embedder: Arc<dyn Embedder>,
    /// Why `"auto"` fell back to the hash embedder.
    embedder_note: Option<String>,
    /// Why the last search's hits could not be counted, until one is.
    unrecorded: Mutex<Option<String>>,
    /// What governance did since open (`governance.rs`'s counters, as locally).
    governance: Governance,
    /// The change held back by the removal guard, as this process last saw it.
    held: Mutex<Option<Held>>,
}

impl PgBackend {
    /// Connects to the database of a validated `config` as its tenant, for `embedder`'s
    /// vectors (the schema migrated, the HNSW index of its dimension made).
    pub fn open(config: Config, embedder: Arc<dyn Embedder>) -> Result<PgBackend> {
        let store = PgStore::connect(
            options(&config)?,
            &config.storage.postgres_tenant,
            embedder.dim(),
        )?;
        Ok(PgBackend {
            store,
            config: LiveConfig::new(config),
            embedder,
            embedder_note: None,
            unrecorded: Mutex::new(None),
            governance: Governance::default(),
            held: Mutex::new(None),
        })
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

    /// Why `"auto"` fell back to the hash embedder.
    pub fn set_embedder_note(&mut self, note: Option<String>) {
        self.embedder_note = note;
    }

    /// The store, for `coral migrate`'s bulk copies (`migrate.rs`).
    pub fn store(&self) -> &PgStore {
        &self.store
    }

    /// The tenant this backend serves.
    pub fn tenant(&self) -> &str {
        self.store.tenant()
    }

    /// Picks up a changed config file (as the local engine does at the start of each call),
    /// and governs under it at once (a lower capacity evicts right away; no distillation).
    pub fn refresh_config(&self) {
        let Some(r) = self.config.reloader() else {
            return;
        };
        let interval =
            Duration::from_secs_f64(self.config.load().reload.check_interval_seconds.max(0.0));
        if !r.changed(interval) {
            return;
        }
        let loaded = std::fs::read_to_string(r.path())
            .map_err(|e| format!("cannot read {}: {e}", r.path().display()))
            .and_then(|text| Config::from_json(&text));
        match loaded {
            Ok((config, _warnings)) => {
                let config = self.config.swap(config);
                let governed = self.govern(&config, unix_now(), Projects::All);
                r.set_error(
                    governed
                        .err()
                        .map(|e| format!("reloaded, but governance failed: {e}")),
                );
            }
            Err(e) => r.set_error(Some(format!(
                "{}: {e}; still using the previous config",
                r.path().display()
            ))),
        }
    }

    /// `Coral::insert_with`: the same id or a hot or warm memory at least
    /// `memory.sim_threshold_hot` similar is refreshed, else the memory is stored; one
    /// transaction, exact across processes (docs/postgres.md, "Writes and duplicates").
    pub fn insert_with(&self, content: &str, options: InsertOptions) -> Result<Insert> {
        self.refresh_config();
        let text = new_text(&self.config, self.embedder.as_ref(), content, &options)?;
        let config = self.config.load();
        let content = text.content.as_ref();
        let item = Item {
            project: text.project.clone(),
            ..Item::new(
                item_id(content),
                content,
                token_count(content),
                text.at,
                text.importance,
            )
        };
        let new = NewMemory {
            item: &item,
            tier: Tier::Hot,
            vector: &text.vector,
            embedder: self.embedder.name(),
            token_set: &text.features.token_set,
        };
        let outcome = match self.store.insert(&new, config.memory.sim_threshold_hot)? {
            coral_pg::InsertOutcome::Inserted(_) => InsertOutcome::Inserted(item),
            coral_pg::InsertOutcome::Merged { id, .. } => InsertOutcome::Merged(id),
        };
        let projects = match (&outcome, text.project.as_deref()) {
            (InsertOutcome::Inserted(_), Some(p)) => Projects::One(p),
            _ => Projects::Neither,
        };
        // The memory is committed: a governance failure is reported in the counters, not
        // returned, so a caller that retries on error never stores it twice (as locally).
        self.govern_after_change(&config, text.now, projects);
        Ok(Insert {
            outcome,
            redacted: text.redacted,
        })
    }

    /// `Coral::search_with` (`count`: the hits counted as accesses) in `"hybrid"` mode: the
    /// database's candidates, fused and ranked by the local engine's code.
    pub fn search(
        &self,
        query: &str,
        options: SearchOptions,
        count: bool,
    ) -> Result<Vec<SearchHit>> {
        self.refresh_config();
        let config = self.config.load();
        let asked = question(&config, self.embedder.as_ref(), query, &options)?;
        let keywords = match (&asked.keywords, asked.mode) {
            (Some(k), RetrievalMode::Hybrid) => k,
            (_, mode) => {
                return Err(Error::Unsupported {
                    operation: format!("retrieval.mode = \"{}\"", mode.as_str()),
                    backend: NAME,
                });
            }
        };
        let r = &config.retrieval;
        let depth = RRF_DEPTH.max(asked.k);
        let vector = (asked.vector.len() == self.store.dim()).then_some(asked.vector.as_slice());
        let p = &asked.hybrid;
        let heat = config.heat.params();
        let priors = Priors {
            params: p,
            boost: asked.project.as_deref().map(|p| (p, r.project_boost)),
            window: asked.window.as_ref(),
            heat: &heat,
            now: asked.now,
            tau_days: r.tau_days,
            min_score: asked.min_score,
            k: asked.k,
        };
        let search = SearchQuery {
            vector,
            keywords,
            question: asked.question,
            params: *p,
            depth,
            // A project boosts its own and shared memories (`rank.rs`); it filters nothing,
            // as locally.
            project: None,
            ef_search: r.ann_ef.max(depth),
            embedder: Some(self.embedder.name()),
            window: asked.window.as_ref(),
            cold: ColdFilter::of(r.include_cold, config.memory.cold_scan_lines),
        };
        // Fusion and ranking run inside the search's snapshot; the hits' content, their
        // missing cosines and (counted) their touches follow in it (docs/postgres.md,
        // "Search").
        let mut ranked = Vec::new();
        let done = self
            .store
            .search_then(&search, count.then_some(asked.now), |found| {
                ranked = rank_candidates(found, p, depth, &priors);
                ranked.iter().map(|h| h.row).collect()
            })?;
        let found = &done.candidates;

        // The component scores the local engine reports: the cosine (the database's dot
        // product, fetched for hits that were not vector candidates), the bitmap Jaccard,
        // the creation recency and the BM25 score.
        let by_vector: std::collections::HashMap<u32, f64> = found.vector.iter().copied().collect();
        let mut hits: Vec<SearchHit> = ranked
            .iter()
            .map(|h| {
                let stored = &found.items[h.row as usize];
                let item = &stored.item;
                let cosine = match vector {
                    None => 0.0,
                    Some(_) => by_vector
                        .get(&h.row)
                        .or_else(|| done.dots.get(&h.row))
                        .copied()
                        .unwrap_or(0.0),
                };
                SearchHit {
                    item: item.clone(),
                    tier: stored.tier,
                    score: h.score,
                    scores: Scores {
                        vector: cosine,
                        jaccard: bitmap_jaccard(
                            &asked.features.bitmap,
                            &text_features(&item.content).bitmap,
                        ),
                        time: time_decay(asked.now - item.timestamp, r.tau_days),
                        bm25: Some(found.bm25_own.get(h.row as usize).copied().unwrap_or(0.0)),
                    },
                }
            })
            .collect();
        if let Some(touched) = done.touched {
            // Counting the hits is bookkeeping for heat: when it fails the search still
            // answers, and says so through `unrecorded` (as the local engine does).
            let mut unrecorded = self.unrecorded.lock().unwrap_or_else(|e| e.into_inner());
            match touched {
                Ok(_) => {
                    *unrecorded = None;
                    for h in &mut hits {
                        h.item.access_count = h.item.access_count.saturating_add(1);
                        h.item.last_access = h.item.last_access.max(asked.now);
                    }
                }
                Err(e) => {
                    *unrecorded = Some(format!(
                        "the hits of a search could not be recorded ({e}); results are unaffected"
                    ))
                }
            }
        }
        Ok(hits)
    }

    /// Why the last search's hits were not counted.
    pub fn unrecorded(&self) -> Option<String> {
        self.unrecorded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// One memory by id.
    pub fn get(&self, id: &str) -> Result<Option<Memory>> {
        Ok(self.store.get(&[id])?.pop().map(|s| Memory {
            item: s.item,
            tier: s.tier,
        }))
    }

    /// Deletes a memory; false when no memory has that id.
    pub fn delete(&self, id: &str) -> Result<bool> {
        Ok(!self.store.delete(&[id])?.is_empty())
    }

    /// Sets a memory's importance.
    pub fn mark_important(&self, id: &str, importance: f64) -> Result<Item> {
        check_importance(importance)?;
        if !self.store.set_importance(id, importance)? {
            return Err(Error::NotFound(id.into()));
        }
        self.get(id)?
            .map(|m| m.item)
            .ok_or_else(|| Error::NotFound(id.into()))
    }

    /// Every memory, oldest first (ties by id).
    pub fn export(&self) -> Result<Vec<Memory>> {
        Ok(self
            .store
            .all()?
            .into_iter()
            .map(|s| Memory {
                item: s.item,
                tier: s.tier,
            })
            .collect())
    }

    /// One page of the memories: the local listing's filter and order over the tenant's
    /// memories (read whole: one query, O(n) per page; docs/postgres.md, "Cost").
    pub fn list(&self, query: &ListQuery) -> Result<ListPage> {
        let all = self.store.all()?;
        let tiers: Vec<Tier> = all.iter().map(|s| s.tier).collect();
        let items: Vec<Item> = all.into_iter().map(|s| s.item).collect();
        list_rows(&items, |row| tiers[row as usize], query)
    }

    /// The counters; `backend_error` says why the database's could not be read.
    pub fn stats(&self) -> Stats {
        let config = self.config.load();
        let reloader = self.config.reloader();
        let counts = self.store.count();
        let threads = self.store.thread_count();
        let backend_error = match (&counts, &threads) {
            (Err(e), _) | (_, Err(e)) => Some(e.to_string()),
            _ => None,
        };
        let counts = counts.unwrap_or_default();
        let total = counts.total() as usize;
        Stats {
            hot: counts.hot as usize,
            warm: counts.warm as usize,
            cold: counts.cold as usize,
            total,
            // Every memory the facade stores carries its embedder's vector.
            vectors: total,
            threads: threads.unwrap_or(0) as usize,
            capacity_threshold: config.memory.capacity_threshold,
            embedder: self.embedder.name().to_string(),
            dim: self.embedder.dim(),
            embedder_note: self.embedder_note.clone(),
            config_error: reloader.and_then(|r| r.error()),
            restart_needed: reloader.map(|r| r.restart_needed()).unwrap_or_default(),
            unrecorded: self.unrecorded(),
            backend: NAME.to_string(),
            tenant: Some(self.tenant().to_string()),
            backend_error,
            governance: GovernanceStats {
                held: self.held().as_ref().map(held_line),
                ..self.governance.snapshot()
            },
            ..Stats::default()
        }
    }

    /// The change the removal guard holds back in this process.
    pub fn held(&self) -> Option<Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// One governance pass under `config` (docs/postgres.md, "Tiers and governance"): the
    /// guard, tier moves, the archive's removals and the disk quota, in one transaction under
    /// the tenant's lock; the counters and the hold updated after it commits.
    pub(crate) fn govern(&self, config: &Config, now: f64, projects: Projects<'_>) -> Result<()> {
        let dim = self.embedder.dim();
        let held_before = self.held();
        let warned = self.governance.snapshot().disk_warning.is_some();
        let done = self.store.govern(|g| {
            pg_govern::pass(g, config, dim, now, projects, held_before.as_ref(), warned)
        })?;
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) = done.held;
        if let Some(plan) = &done.quota {
            let s = &config.storage;
            if plan.warn {
                let message = format!(
                    "tenant {} uses {} bytes, {:.0}% of storage.max_bytes {}",
                    coral_base::echo(self.tenant()),
                    done.counted,
                    plan.ratio * 100.0,
                    s.max_bytes
                );
                let _ = writeln!(std::io::stderr(), "coral: warning: {message}");
                self.governance.update(|g| {
                    g.disk_warning = Some(message);
                    g.disk_warnings += 1;
                });
            } else if !plan.above_warn {
                self.governance.update(|g| g.disk_warning = None);
            }
        }
        self.governance.update(|g| {
            g.quota_removed += done.quota_removed;
            g.quota_archive_bytes_trimmed += done.archive_trimmed;
        });
        Ok(())
    }

    /// [`PgBackend::govern`] after a change that is already committed: a failure is recorded
    /// in `GovernanceStats::last_error` instead of failing the change.
    pub(crate) fn govern_after_change(&self, config: &Config, now: f64, projects: Projects<'_>) {
        let outcome = self.govern(config, now, projects);
        self.governance.update(|g| {
            g.last_error = outcome.err().map(|e| {
                format!("governance after the last change failed ({e}); the change was kept")
            })
        });
    }

    /// `config` in force now, governed at once; `confirmed`: whatever its limits remove.
    pub fn apply_config(&self, config: Config, confirmed: bool) -> Result<()> {
        let config = self.config.swap(config);
        if let Some(r) = self.config.reloader() {
            r.mark_seen();
            r.set_error(None);
        }
        let now = unix_now();
        if confirmed {
            self.accept(&config, now)?;
        }
        self.govern(&config, now, Projects::All)
    }

    /// Makes the limits of `config` the tenant's accepted ones (every process of the tenant
    /// reads them at its next pass) and lifts this process's hold.
    fn accept(&self, config: &Config, now: f64) -> Result<()> {
        let limits = RemovalLimits::of(config);
        self.store.govern(|g| {
            let mut record = pg_govern::read_record(g)?;
            if record.accepted.as_ref() != Some(&limits) {
                record.accepted = Some(limits.clone());
                record.accepted_at = Some(now);
                pg_govern::write_record(g, &record)?;
            }
            Ok(())
        })?;
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(())
    }

    /// What `config` would remove now, with the settings that differ from the accepted ones.
    pub fn preview_change(&self, config: &Config) -> Result<RemovalPreview> {
        let dim = self.embedder.dim();
        let now = unix_now();
        Ok(self.store.govern(|g| {
            let record = pg_govern::read_record(g)?;
            let rows = g.rows(&Tier::ALL)?;
            let usage = g.usage()?;
            let mut p = pg_govern::preview(&rows, &usage, config, dim, now);
            p.changes = RemovalLimits::of(config).changes_from(record.accepted.as_ref());
            Ok(p)
        })?)
    }

    /// What the configuration in force would remove now, and the change held, if any.
    pub fn removal_preview(&self) -> Result<(RemovalPreview, Option<Held>)> {
        self.refresh_config();
        let config = self.config.load();
        let preview = self.preview_change(&config)?;
        Ok((preview, self.held()))
    }

    /// Accepts the limits in force, whatever they remove, and governs now (`coral govern
    /// --confirm`; a tool's `confirm: true`).
    pub fn confirm_removals(&self) -> Result<Confirmed> {
        self.refresh_config();
        let config = self.config.load();
        let now = unix_now();
        // The hold as of now (a pass under the accepted limits finds it), then the acceptance.
        self.govern(&config, now, Projects::Neither)?;
        let preview = self.held().map(|h| h.preview);
        let before = self.store.count()?.total() as usize;
        self.accept(&config, now)?;
        self.govern(&config, now, Projects::All)?;
        let after = self.store.count()?.total() as usize;
        Ok(Confirmed {
            preview,
            before,
            after,
        })
    }

    /// What the disk quota counts for the tenant (docs/postgres.md, "Quotas"): no files (the
    /// data directory holds no memories), the tenant's bytes against `storage.max_bytes`.
    pub fn disk_usage(&self) -> DiskUsage {
        let config = self.config.load();
        let max = config.storage.max_bytes;
        match self.store.usage() {
            Ok(usage) => {
                let quota = pg_govern::counted_bytes(&usage, self.embedder.dim());
                DiskUsage {
                    max_bytes: max,
                    quota_bytes: quota,
                    ratio: (max > 0).then(|| quota as f64 / max as f64),
                    ..DiskUsage::default()
                }
            }
            Err(_) => DiskUsage {
                max_bytes: max,
                ..DiskUsage::default()
            },
        }
    }

    /// An archived (evicted, trimmed or over its project's quota) memory by id.
    pub fn get_archived(&self, id: &str) -> Result<Option<Item>> {
        Ok(self.store.archived(id)?)
    }

    /// `thread_create`, the title and summary with secrets replaced.
    pub fn thread_create(
        &self,
        title: &str,
        summary: Option<&str>,
        parent: Option<&str>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        self.refresh_config();
        let redaction = self.config.redaction();
        let title = redaction.apply(title).0;
        let summary = summary.map(|s| redaction.apply(s).0);
        self.store
            .thread_create(&title, summary.as_deref(), parent, by, unix_now())
            .map_err(|e| thread_error(e, parent.unwrap_or_default()))
    }

    /// `thread_advance`, the note with secrets replaced.
    pub fn thread_advance(
        &self,
        thread_id: &str,
        note: &str,
        done: Option<bool>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        self.refresh_config();
        let note = self.config.redaction().apply(note).0;
        self.store
            .thread_advance(thread_id, &note, done, by, unix_now())
            .map_err(|e| thread_error(e, thread_id))
    }

    /// `thread_interrupt`, the reason with secrets replaced.
    pub fn thread_interrupt(&self, thread_id: &str, reason: Option<&str>) -> Result<ThreadView> {
        self.refresh_config();
        let reason = reason.map(|r| self.config.redaction().apply(r).0);
        self.store
            .thread_interrupt(thread_id, reason.as_deref(), unix_now())
            .map_err(|e| thread_error(e, thread_id))
    }

    /// `thread_archive` / `thread_resume`.
    pub fn thread_set_status(&self, thread_id: &str, status: ThreadStatus) -> Result<ThreadView> {
        self.store
            .thread_set_status(thread_id, status, unix_now())
            .map_err(|e| thread_error(e, thread_id))
    }

    /// `thread_link`.
    pub fn thread_link(&self, child_id: &str, parent_id: &str) -> Result<()> {
        self.store
            .thread_link(child_id, parent_id, unix_now())
            .map_err(|e| match e {
                coral_pg::Error::NotFound { what: "thread", id } => {
                    // The store names the missing one, quoted.
                    let id = if id == coral_base::echo(child_id) {
                        child_id
                    } else {
                        parent_id
                    };
                    Error::ThreadNotFound(id.into())
                }
                other => other.into(),
            })
    }

    /// `thread_status`: one thread by id, or the overview.
    pub fn thread_status(
        &self,
        thread_id: Option<&str>,
        include_archived: bool,
        query: Option<&str>,
    ) -> Result<StatusReport> {
        match thread_id.map(str::trim).filter(|i| !i.is_empty()) {
            Some(id) => self
                .store
                .thread_status(id)
                .map(StatusReport::One)
                .map_err(|e| thread_error(e, id)),
            None => Ok(StatusReport::Many(
                self.store.thread_overview(include_archived, query)?,
            )),
        }
    }
}

/// The database's candidates fused (`coral_score::fuse_hybrid`, plus a time window's newest
/// not fused already, as the local engine adds them) and ranked (`rank.rs`): the hits, best
/// first, by candidate number.
fn rank_candidates(
    found: &Candidates,
    p: &HybridParams,
    depth: usize,
    priors: &Priors<'_>,
) -> Vec<Scored> {
    let coverage = |id: u32| found.coverage.get(id as usize).copied().unwrap_or(0.0);
    let mut fused: Vec<(u32, f64)> = fuse_hybrid(
        &found.bm25,
        &found.bm25_spread,
        &coverage,
        &found.vector,
        &found.vector_spread,
        p,
        depth,
    )
    .into_iter()
    .map(|f| (f.id, f.relevance))
    .collect();
    // A time-shaped query: what happened in its window is a candidate too, the newest
    // `depth` of those not fused already (as the local engine adds them).
    if !found.window.is_empty() {
        let known: std::collections::HashSet<u32> = fused.iter().map(|f| f.0).collect();
        let inside: Vec<u32> = found
            .window
            .iter()
            .copied()
            .filter(|n| !known.contains(n))
            .take(depth)
            .collect();
        fused.extend(inside.into_iter().map(|n| (n, 0.0)));
    }
    let tiebreaks: Vec<u64> = found
        .items
        .iter()
        .map(|s| tiebreak_key(&s.item.item_id))
        .collect();
    let row = |n: u32| {
        let item = &found.items[n as usize].item;
        Candidate {
            item,
            timestamp: item.timestamp,
            tiebreak: tiebreaks[n as usize],
        }
    };
    rank(fused, row, priors)
}

/// A database error of a thread operation on `id`, with "no such thread" as the facade's.
fn thread_error(e: coral_pg::Error, id: &str) -> Error {
    match e {
        coral_pg::Error::NotFound { what: "thread", .. } => Error::ThreadNotFound(id.into()),
        other => other.into(),
    }
}
