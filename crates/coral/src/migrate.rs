//! `coral migrate` (docs/postgres.md, "Migrating"): a data directory copied into a tenant of
//! a PostgreSQL database ([`migrate_to_postgres`]) or a tenant copied out into a data
//! directory ([`migrate_to_dir`]), memories and threads as they are, resumable, then verified
//! by counts per tier and project and by sample searches on both sides.
//!
//! Resuming: ids are keys on both sides and every batch is one transaction (one journal
//! commit locally), so a migration killed midway and run again copies what is missing and
//! nothing twice. What tells a resumed target from one holding other data is the ids: a
//! target whose memories and threads are all in the source is taken as this migration's
//! (resumed); one holding anything else is refused before anything is written.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use coral_embed::{Embedder, text_features};
use coral_pg::{NewMemory, PgStore};
use coral_store::{Item, Tier};
use coral_thread::{StatusReport, ThreadView};
use serde::Serialize;

use crate::backend::Backend;
use crate::coral::Coral;
use crate::models::embedder_for;
use crate::unix_now;
use crate::{Error, Result};
use crate::{Memory, SearchOptions};
use coral_config::{Config, RetrievalMode};

/// A memory of the pool with its vector (`None`: to compute).
type Row = (Memory, Option<Vec<f32>>);

/// How a migration runs.
#[derive(Clone, Debug)]
pub struct MigrateOptions {
    /// Memories per transaction (1..=10,000; default 500).
    pub batch: usize,
    /// Sample searches of the verification (default 5).
    pub samples: usize,
    /// Batches written at once into the database, each on its own connection (default 2;
    /// at most `storage.postgres_pool_size`): the server's HNSW inserts take most of a
    /// batch's time, and two at once took 1.3 times one's time for twice the rows here.
    pub jobs: usize,
}

impl Default for MigrateOptions {
    fn default() -> Self {
        MigrateOptions {
            batch: 500,
            samples: 5,
            jobs: 2,
        }
    }
}

/// Where a migration stands, for a progress line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// `"memories"` or `"threads"`.
    pub what: &'static str,
    /// How many of them are on the target now (copied before included).
    pub done: usize,
    /// How many the source holds.
    pub total: usize,
}

/// What happened to one kind of record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Copied {
    /// In the source.
    pub found: usize,
    /// Copied by this run.
    pub copied: usize,
    /// On the target before this run (a migration resumed).
    pub already_there: usize,
}

/// What stayed where it was, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LeftBehind {
    /// The timeline's rows in the data directory (the postgres backend has no timeline yet).
    pub timeline: Option<coral_timeline::Totals>,
    /// Memories in the data directory's archive (the postgres backend has no archive yet).
    pub archived: usize,
    /// Project names the tenant recorded that no memory carries (a data directory knows
    /// projects only through its memories).
    pub projects_without_memories: Vec<String>,
}

/// One (tier, project) count on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CountCheck {
    /// The tier.
    pub tier: Tier,
    /// The project (`None`: shared memories).
    pub project: Option<String>,
    /// Memories in the source.
    pub source: u64,
    /// Memories in the target.
    pub target: u64,
}

/// One sample search on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchCheck {
    /// The query (the start of a sample memory).
    pub query: String,
    /// The ids of the source's best hits, best first.
    pub source: Vec<String>,
    /// The ids of the target's best hits.
    pub target: Vec<String>,
    /// Whether the best hits are the same memory.
    pub matched: bool,
}

/// The verification after the copy.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Verification {
    /// Whether every count and every search matched.
    pub ok: bool,
    /// Memories per tier and project, both sides.
    pub counts: Vec<CountCheck>,
    /// Threads on both sides.
    pub threads: [usize; 2],
    /// Steps on both sides.
    pub steps: [usize; 2],
    /// The sample searches (uncounted: nothing is recorded as an access).
    pub searches: Vec<SearchCheck>,
    /// Every mismatch, one sentence each.
    pub problems: Vec<String>,
}

/// What a migration did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MigrateReport {
    /// `"postgres"` or `"dir"`.
    pub to: &'static str,
    /// The data directory or `host:port`.
    pub source: String,
    /// The other one.
    pub target: String,
    /// The tenant.
    pub tenant: String,
    /// The embedder of the vectors written.
    pub embedder: String,
    /// Memories.
    pub memories: Copied,
    /// Vectors copied as they were.
    pub vectors_copied: usize,
    /// Vectors computed again (missing, or another embedder's).
    pub vectors_computed: usize,
    /// Threads.
    pub threads: Copied,
    /// Steps of the threads copied.
    pub steps_copied: usize,
    /// What was not copied.
    pub left_behind: LeftBehind,
    /// Counts and searches on both sides.
    pub verification: Verification,
    /// Seconds in all.
    pub seconds: f64,
    /// Memories copied per second of copying.
    pub memories_per_second: f64,
}

/// `config` for the data directory side: the local backend (whatever `storage.backend`
/// says), `dir` when given, hybrid retrieval for the verification's searches.
fn local_side(config: &Config, dir: Option<&Path>) -> Config {
    let mut c = config.clone();
    c.storage.backend = "local".into();
    if let Some(dir) = dir {
        c.data_dir_override = Some(dir.to_path_buf());
    }
    c.retrieval.mode = RetrievalMode::Hybrid;
    c
}

/// `config` for the database side: `url` (else `storage.postgres_url`, else
/// `CORAL_POSTGRES_URL`) and `tenant` (else `storage.postgres_tenant`).
fn database_side(config: &Config, url: Option<&str>, tenant: Option<&str>) -> Result<Config> {
    let mut c = config.clone();
    c.storage.backend = "postgres".into();
    if let Some(url) = url {
        c.storage.postgres_url = url.to_string();
    }
    if let Some(tenant) = tenant {
        c.storage.postgres_tenant = tenant.to_string();
    }
    if c.storage.postgres_tenant.trim().is_empty() {
        return Err(Error::InvalidInput(
            "no tenant to migrate with: give --tenant NAME or set storage.postgres_tenant".into(),
        ));
    }
    c.retrieval.mode = RetrievalMode::Hybrid;
    Ok(c)
}

fn store(coral: &Coral) -> Result<&PgStore> {
    match &coral.backend {
        Backend::Postgres(p) => Ok(p.store()),
        Backend::Local(_) => Err(Error::InvalidInput(
            "coral migrate opened the data directory where it wanted the database".into(),
        )),
    }
}

/// At most `n` ids of `ids`, for a message.
fn some(ids: &[&String], n: usize) -> String {
    ids.iter()
        .take(n)
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The refusal of a target holding memories or threads the source does not.
fn refuse_foreign(
    target: &str,
    kind: &str,
    present: &HashSet<String>,
    source: &HashSet<&str>,
    hint: &str,
) -> Result<()> {
    let mut foreign: Vec<&String> = present
        .iter()
        .filter(|id| !source.contains(id.as_str()))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    Err(Error::InvalidInput(format!(
        "{target} already holds {} {kind} that the source does not ({}{}); nothing was \
         written: {hint}",
        foreign.len(),
        some(&foreign, 3),
        if foreign.len() > 3 { ", ..." } else { "" },
    )))
}

/// The vectors of `texts` by `embedder`, in chunks.
fn embed_all(embedder: &dyn Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(256) {
        out.extend(embedder.embed(chunk)?);
    }
    Ok(out)
}

fn check_options(options: &MigrateOptions) -> Result<()> {
    if !(1..=10_000).contains(&options.batch) {
        return Err(Error::InvalidInput(format!(
            "batch size {} is outside 1..=10000: give --batch 500",
            options.batch
        )));
    }
    if !(1..=64).contains(&options.jobs) {
        return Err(Error::InvalidInput(format!(
            "jobs {} is outside 1..=64: give --jobs 2",
            options.jobs
        )));
    }
    Ok(())
}

/// What the data directory keeps that the database has no place for yet.
fn left_in_dir(config: &Config) -> LeftBehind {
    let timeline_path = config.timeline_path();
    let timeline = timeline_path.exists().then(|| {
        let options = coral_timeline::Options {
            access: coral_timeline::Access::ReadOnly,
            ..coral_timeline::Options::default()
        };
        coral_timeline::Timeline::open_with(&timeline_path, options)
            .and_then(|t| t.totals())
            .unwrap_or_default()
    });
    let archived = std::fs::read_to_string(config.store_paths().archive)
        .map(|s| s.lines().filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0);
    LeftBehind {
        timeline,
        archived,
        projects_without_memories: Vec::new(),
    }
}

/// What one batch copied.
struct Batch {
    copied: usize,
    vectors_copied: usize,
    vectors_computed: usize,
}

/// One batch of memories into the database, in one transaction: the vectors the pool holds
/// for the open embedder, the others computed (outside any transaction).
fn copy_batch(db: &PgStore, embedder: &dyn Embedder, chunk: &[&Row]) -> Result<Batch> {
    let usable = |v: &Option<Vec<f32>>| v.as_ref().is_some_and(|v| v.len() == embedder.dim());
    let missing: Vec<&str> = chunk
        .iter()
        .filter(|r| !usable(&r.1))
        .map(|r| r.0.item.content.as_str())
        .collect();
    let mut computed = embed_all(embedder, &missing)?.into_iter();
    let features: Vec<Vec<u64>> = chunk
        .iter()
        .map(|r| text_features(&r.0.item.content).token_set)
        .collect();
    let vectors: Vec<Vec<f32>> = chunk
        .iter()
        .map(|r| match &r.1 {
            Some(v) if usable(&r.1) => v.clone(),
            _ => computed.next().unwrap_or_default(),
        })
        .collect();
    let batch: Vec<NewMemory<'_>> = chunk
        .iter()
        .zip(&vectors)
        .zip(&features)
        .map(|((r, v), f)| NewMemory {
            item: &r.0.item,
            tier: r.0.tier,
            vector: v,
            embedder: embedder.name(),
            token_set: f,
        })
        .collect();
    Ok(Batch {
        copied: db.import_bulk(&batch)?,
        vectors_copied: chunk.len() - missing.len(),
        vectors_computed: missing.len(),
    })
}

/// Copies the data directory of `config` (its `--data-dir` included) into a tenant of a
/// PostgreSQL database: memories of every tier with their ids, times, counters, importance,
/// projects, other keys and vectors (the open embedder's; missing ones computed), threads with
/// their steps. Refuses a tenant holding anything the directory does not; resumes one holding
/// part of it. The timeline and the archive stay in the directory (counted in
/// [`MigrateReport::left_behind`]). `progress` is called after every batch.
pub fn migrate_to_postgres(
    config: &Config,
    url: Option<&str>,
    tenant: Option<&str>,
    options: &MigrateOptions,
    mut progress: impl FnMut(Progress),
) -> Result<MigrateReport> {
    check_options(options)?;
    let started = Instant::now();
    let (embedder, _) = embedder_for(config)?;
    let local = local_side(config, None);
    let remote = database_side(config, url, tenant)?;
    let dir = local.store_paths().dir;
    let source = Coral::open_with(local.clone(), embedder.clone())?;
    let source_local = source.backend.local("coral migrate")?;
    let rows = source_local.engine.copy_out();
    let threads = source_local.threads.all()?;
    if rows.is_empty() && threads.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{} holds no memories and no threads: nothing to migrate (give --data-dir DIR)",
            dir.display()
        )));
    }
    let target = Coral::open_with(remote.clone(), embedder.clone())?;
    let db = store(&target)?;
    let where_to = format!("tenant {} at {}", crate::echo(db.tenant()), db.server());
    let hint = "migrate into a new tenant (--tenant NAME), or into one holding only this \
                directory's memories (a migration stopped midway is resumed that way)";
    let source_ids: HashSet<&str> = rows.iter().map(|r| r.0.item.item_id.as_str()).collect();
    let present: HashSet<String> = db.item_ids()?.into_iter().collect();
    refuse_foreign(&where_to, "memories", &present, &source_ids, hint)?;
    let source_threads: HashSet<&str> = threads.iter().map(|t| t.thread_id.as_str()).collect();
    let present_threads: HashSet<String> = db.thread_ids()?.into_iter().collect();
    refuse_foreign(
        &where_to,
        "threads",
        &present_threads,
        &source_threads,
        hint,
    )?;

    let copy_started = Instant::now();
    let mut memories = Copied {
        found: rows.len(),
        already_there: present.len(),
        ..Copied::default()
    };
    let (mut vectors_copied, mut vectors_computed) = (0, 0);
    let todo: Vec<&Row> = rows
        .iter()
        .filter(|r| !present.contains(&r.0.item.item_id))
        .collect();
    progress(Progress {
        what: "memories",
        done: present.len(),
        total: rows.len(),
    });
    let chunks: Vec<&[&Row]> = todo.chunks(options.batch).collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (sent, received) = mpsc::channel::<Result<Batch>>();
    let jobs = options
        .jobs
        .min(remote.storage.postgres_pool_size)
        .clamp(1, chunks.len().max(1));
    let mut failed: Option<Error> = None;
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let sent = sent.clone();
            let (next, stop, chunks, embedder) = (&next, &stop, &chunks, &embedder);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    let done = copy_batch(db, embedder.as_ref(), chunk);
                    if done.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    if sent.send(done).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sent);
        for done in received {
            match done {
                Ok(b) => {
                    memories.copied += b.copied;
                    vectors_copied += b.vectors_copied;
                    vectors_computed += b.vectors_computed;
                    progress(Progress {
                        what: "memories",
                        done: memories.already_there + memories.copied,
                        total: rows.len(),
                    });
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let copy_seconds = copy_started.elapsed().as_secs_f64();

    let mut thread_counts = Copied {
        found: threads.len(),
        already_there: present_threads.len(),
        ..Copied::default()
    };
    let todo: Vec<ThreadView> = threads
        .iter()
        .filter(|t| !present_threads.contains(&t.thread_id))
        .cloned()
        .collect();
    let mut steps_copied = 0;
    for chunk in todo.chunks(100) {
        let added = db.import_threads(chunk)?;
        thread_counts.copied += added;
        steps_copied += chunk.iter().map(|t| t.steps.len()).sum::<usize>();
        progress(Progress {
            what: "threads",
            done: thread_counts.already_there + thread_counts.copied,
            total: threads.len(),
        });
    }

    let left_behind = left_in_dir(&local);
    let verification = verify(&source, &target, &local, options.samples)?;
    let report = MigrateReport {
        to: "postgres",
        source: dir.display().to_string(),
        target: db.server().to_string(),
        tenant: db.tenant().to_string(),
        embedder: embedder.name().to_string(),
        memories,
        vectors_copied,
        vectors_computed,
        threads: thread_counts,
        steps_copied,
        left_behind,
        verification,
        seconds: started.elapsed().as_secs_f64(),
        memories_per_second: rate(memories.copied, copy_seconds),
    };
    close_both(source, target)?;
    Ok(report)
}

/// Copies a tenant of a PostgreSQL database out into the data directory `dir` (a normal
/// one: the original's files, the threads file), memories and threads as they are. Refuses a
/// directory holding memories or threads the tenant does not; resumes one holding part of
/// it. `progress` is called after every batch.
pub fn migrate_to_dir(
    config: &Config,
    url: Option<&str>,
    tenant: Option<&str>,
    dir: &Path,
    options: &MigrateOptions,
    mut progress: impl FnMut(Progress),
) -> Result<MigrateReport> {
    check_options(options)?;
    let started = Instant::now();
    if dir.exists() && !dir.is_dir() {
        return Err(Error::InvalidInput(format!(
            "{} is not a directory: give a new or empty directory",
            dir.display()
        )));
    }
    let (embedder, _) = embedder_for(config)?;
    let remote = database_side(config, url, tenant)?;
    let local = local_side(config, Some(dir));
    let source = Coral::open_with(remote, embedder.clone())?;
    let db = store(&source)?;
    let source_ids: Vec<String> = db.item_ids()?;
    let thread_report = source.thread_status(None, true, None)?;
    let threads: Vec<ThreadView> = match thread_report {
        StatusReport::Many(entries) => entries.into_iter().map(|e| e.thread).collect(),
        StatusReport::One(t) => vec![t],
    };
    let where_from = format!("tenant {} at {}", crate::echo(db.tenant()), db.server());
    if source_ids.is_empty() && threads.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{where_from} holds no memories and no threads: nothing to migrate (check --tenant)"
        )));
    }
    let target = Coral::open_with(local.clone(), embedder.clone())?;
    let target_local = target.backend.local("coral migrate")?;
    let hint = "give a new or empty directory, or one holding only this tenant's memories (a \
                migration stopped midway is resumed that way)";
    let there = dir.display().to_string();
    let source_set: HashSet<&str> = source_ids.iter().map(String::as_str).collect();
    let present: HashSet<String> = target
        .export()?
        .into_iter()
        .map(|m| m.item.item_id)
        .collect();
    refuse_foreign(&there, "memories", &present, &source_set, hint)?;
    let source_threads: HashSet<&str> = threads.iter().map(|t| t.thread_id.as_str()).collect();
    let present_threads: HashSet<String> = target_local
        .threads
        .all()?
        .into_iter()
        .map(|t| t.thread_id)
        .collect();
    refuse_foreign(&there, "threads", &present_threads, &source_threads, hint)?;

    let copy_started = Instant::now();
    let mut memories = Copied {
        found: source_ids.len(),
        already_there: present.len(),
        ..Copied::default()
    };
    let (mut vectors_copied, mut vectors_computed) = (0, 0);
    let mut item_projects: HashSet<String> = HashSet::new();
    let mut after = 0i64;
    progress(Progress {
        what: "memories",
        done: present.len(),
        total: source_ids.len(),
    });
    loop {
        let page = db.export_page(after, options.batch)?;
        if page.memories.is_empty() {
            break;
        }
        after = page.last_key;
        let todo: Vec<&coral_pg::Exported> = page
            .memories
            .iter()
            .filter(|m| !present.contains(&m.stored.item.item_id))
            .collect();
        for m in &page.memories {
            item_projects.extend(m.stored.item.project.clone());
        }
        let usable = |m: &coral_pg::Exported| {
            m.embedder == embedder.name() && m.vector.len() == embedder.dim()
        };
        let missing: Vec<&str> = todo
            .iter()
            .filter(|m| !usable(m))
            .map(|m| m.stored.item.content.as_str())
            .collect();
        let mut computed = embed_all(embedder.as_ref(), &missing)?.into_iter();
        let batch: Vec<(Tier, Item, Vec<f32>)> = todo
            .into_iter()
            .map(|m| {
                let vector = if usable(m) {
                    vectors_copied += 1;
                    m.vector.clone()
                } else {
                    vectors_computed += 1;
                    computed.next().unwrap_or_default()
                };
                (m.stored.tier, m.stored.item.clone(), vector)
            })
            .collect();
        memories.copied += target_local.engine.copy_in(batch)?;
        progress(Progress {
            what: "memories",
            done: memories.already_there + memories.copied,
            total: source_ids.len(),
        });
    }
    target_local.engine.copy_done()?;
    let copy_seconds = copy_started.elapsed().as_secs_f64();

    let todo: Vec<&ThreadView> = threads
        .iter()
        .filter(|t| !present_threads.contains(&t.thread_id))
        .collect();
    let mut thread_counts = Copied {
        found: threads.len(),
        already_there: present_threads.len(),
        ..Copied::default()
    };
    let mut steps_copied = 0;
    if !todo.is_empty() {
        // The threads file's own import (merge by id, steps by id: running it again adds
        // nothing), from a file in the original's shape beside the target.
        let file = ThreadFile::write(dir, &todo)?;
        let counts = target_local.threads.import(&file.0)?;
        thread_counts.copied = counts.added + counts.merged;
        steps_copied = counts.steps_added;
        progress(Progress {
            what: "threads",
            done: thread_counts.already_there + thread_counts.copied,
            total: threads.len(),
        });
    }

    let mut recorded = db.projects()?;
    recorded.retain(|p| !item_projects.contains(p));
    let left_behind = LeftBehind {
        timeline: None,
        archived: 0,
        projects_without_memories: recorded,
    };
    let verification = verify(&source, &target, &local, options.samples)?;
    let report = MigrateReport {
        to: "dir",
        source: db.server().to_string(),
        target: there,
        tenant: db.tenant().to_string(),
        embedder: embedder.name().to_string(),
        memories,
        vectors_copied,
        vectors_computed,
        threads: thread_counts,
        steps_copied,
        left_behind,
        verification,
        seconds: started.elapsed().as_secs_f64(),
        memories_per_second: rate(memories.copied, copy_seconds),
    };
    close_both(source, target)?;
    Ok(report)
}

/// A temporary threads file in the original's shape (a JSON array of threads), removed on
/// drop.
struct ThreadFile(PathBuf);

impl ThreadFile {
    fn write(dir: &Path, threads: &[&ThreadView]) -> Result<ThreadFile> {
        let path = dir.join(format!(
            ".coral-migrate-threads-{}.json",
            std::process::id()
        ));
        let bytes = serde_json::to_vec(threads)
            .map_err(|e| Error::InvalidInput(format!("cannot encode the threads: {e}")))?;
        std::fs::write(&path, bytes)
            .map_err(|e| Error::InvalidInput(format!("cannot write {}: {e}", path.display())))?;
        Ok(ThreadFile(path))
    }
}

impl Drop for ThreadFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn rate(n: usize, seconds: f64) -> f64 {
    if n == 0 || seconds <= 0.0 {
        0.0
    } else {
        n as f64 / seconds
    }
}

fn close_both(a: Coral, b: Coral) -> Result<()> {
    a.close()?;
    b.close()?;
    Ok(())
}

/// Counts per (tier, project) of `memories`.
fn counts(memories: &[Memory]) -> BTreeMap<(Tier, Option<String>), u64> {
    let mut out = BTreeMap::new();
    for m in memories {
        *out.entry((m.tier, m.item.project.clone())).or_insert(0) += 1;
    }
    out
}

/// Threads and steps of a `Coral`.
fn thread_totals(coral: &Coral) -> Result<(usize, usize)> {
    Ok(match coral.thread_status(None, true, None)? {
        StatusReport::Many(entries) => (
            entries.len(),
            entries.iter().map(|e| e.thread.steps.len()).sum(),
        ),
        StatusReport::One(t) => (1, t.steps.len()),
    })
}

/// The start of `content` as a query: its first 24 words, at most 300 characters.
fn sample_query(content: &str) -> String {
    let words: Vec<&str> = content.split_whitespace().take(24).collect();
    words.join(" ").chars().take(300).collect()
}

/// The counts of both sides, and `samples` searches by the start of memories spread over
/// the source, whose best hits must be the same memory on both sides. The searches are
/// uncounted (nothing recorded as an access), so they change nothing they verify.
fn verify(source: &Coral, target: &Coral, local: &Config, samples: usize) -> Result<Verification> {
    let mut v = Verification::default();
    let from = source.export()?;
    let to = target.export()?;
    let (a, b) = (counts(&from), counts(&to));
    let keys: std::collections::BTreeSet<&(Tier, Option<String>)> =
        a.keys().chain(b.keys()).collect();
    for key in keys {
        let (s, t) = (
            a.get(key).copied().unwrap_or(0),
            b.get(key).copied().unwrap_or(0),
        );
        if s != t {
            v.problems.push(format!(
                "{} memories of project {} : {s} in the source, {t} in the target",
                key.0,
                key.1.as_deref().map(crate::echo).unwrap_or("(none)".into())
            ));
        }
        v.counts.push(CountCheck {
            tier: key.0,
            project: key.1.clone(),
            source: s,
            target: t,
        });
    }
    let (st, ss) = thread_totals(source)?;
    let (tt, ts) = thread_totals(target)?;
    v.threads = [st, tt];
    v.steps = [ss, ts];
    if st != tt || ss != ts {
        v.problems.push(format!(
            "threads: {st} with {ss} step(s) in the source, {tt} with {ts} in the target"
        ));
    }
    // With `retrieval.include_cold` off both sides keep only the newest cold memories
    // (`memory.cold_scan_lines`; docs/postgres.md, "Tiers and governance"), which need not be
    // the same ones once the copy's times differ: hot and warm hits are compared.
    let skip_cold = !local.retrieval.include_cold;
    let searchable: Vec<&Memory> = from
        .iter()
        .filter(|m| !(skip_cold && m.tier == Tier::Cold))
        .collect();
    let n = samples.min(searchable.len());
    let now = unix_now();
    for i in 0..n {
        let m = searchable[i * searchable.len() / n];
        let query = sample_query(&m.item.content);
        if query.is_empty() {
            continue;
        }
        let ask = |c: &Coral| -> Result<Vec<String>> {
            let hits = c.search_uncounted(
                &query,
                SearchOptions {
                    top_k: Some(if skip_cold { 20 } else { 5 }),
                    now: Some(now),
                    ..SearchOptions::default()
                },
            )?;
            Ok(hits
                .into_iter()
                .filter(|h| !(skip_cold && h.tier == Tier::Cold))
                .take(5)
                .map(|h| h.item.item_id)
                .collect())
        };
        let (s, t) = (ask(source)?, ask(target)?);
        let matched = s.first() == t.first();
        if !matched {
            v.problems.push(format!(
                "the search {} finds {} first in the source and {} in the target",
                crate::echo(&query),
                s.first().map(String::as_str).unwrap_or("nothing"),
                t.first().map(String::as_str).unwrap_or("nothing"),
            ));
        }
        v.searches.push(SearchCheck {
            query,
            source: s,
            target: t,
            matched,
        });
    }
    v.ok = v.problems.is_empty();
    Ok(v)
}
