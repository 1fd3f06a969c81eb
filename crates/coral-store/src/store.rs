//! The durable store: open (load, validate, replay, repair), commit records, checkpoint.

use std::fs::OpenOptions;
use std::io::Write;

use crate::error::{Error, Result};
use crate::files::{self, Skipped, StorePaths};
use crate::item::{Item, Tier, to_python_line};
use coral_base::SyncPolicy;

use crate::journal::Journal;
use crate::journal_lines;
use crate::lock::{Attachment, WriteLock};
use crate::npy;
use crate::pool::Pool;
use crate::record::Record;
use crate::replay::{Loaded, Repair, StoreOptions, apply, load, quarantine};
use crate::sums;
use coral_base::IoContext;

/// Counts of items per tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierCounts {
    /// Hot items.
    pub hot: usize,
    /// Warm items.
    pub warm: usize,
    /// Cold items.
    pub cold: usize,
}

/// What [`Store::acquire`] found in the journal.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SyncOutcome {
    /// Nothing new (or the lock was already held by this process).
    Current,
    /// Other processes' records were applied; these ids changed.
    Applied(Vec<String>),
    /// Another process checkpointed: everything was reloaded from the files.
    Reloaded,
}

/// The durable, tiered memory store of one data directory, shared with any number of other
/// processes (docs/storage.md).
pub struct Store {
    paths: StorePaths,
    options: StoreOptions,
    /// `None` for a read-only store (see [`Store::open_read_only`]).
    attachment: Option<Attachment>,
    /// Why the store is read-only, when it is.
    read_only: Option<String>,
    write_lock: WriteLock,
    journal: Journal,
    pool: Pool,
    skipped: [Vec<Skipped>; 3],
    repairs: Vec<Repair>,
    notes: Vec<String>,
    /// Temp files of interrupted checkpoints removed at open: (count, bytes).
    temp_files_removed: (usize, u64),
    /// Why the last checkpoint after a commit failed, until one succeeds.
    checkpoint_error: Option<String>,
}

/// What [`Store::close`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Closed {
    /// Why the closing checkpoint failed, if it did (nothing was lost).
    pub checkpoint_error: Option<String>,
}

impl Store {
    /// Open (creating if needed) the store in `paths`: attach to the directory, load the
    /// compatible files and replay the journal. Damage is contained and reported in
    /// [`Store::repairs`] and [`Store::notes`]; a file that cannot be understood at all is an
    /// error and nothing is changed. Other processes may have the same directory open.
    pub fn open(paths: StorePaths, options: StoreOptions) -> Result<Store> {
        if options.dim == 0 {
            return Err(Error::InvalidInput("vector dim must be at least 1".into()));
        }
        let marker = crate::backup::restore_marker(&paths);
        if marker.exists() {
            return Err(Error::Corrupted {
                path: marker,
                line: 0,
                detail: "a `coral restore` into this directory was interrupted, so its files \
                         are part old, part restored; run the same `coral restore` again"
                    .into(),
            });
        }
        std::fs::create_dir_all(&paths.dir).at(&paths.dir)?;
        let attachment = Attachment::attach(&paths.attach)?;
        let mut write_lock = WriteLock::open(&paths.lock)?;
        write_lock.lock()?;
        let loaded = match load(&paths, &options, true) {
            Ok(l) => l,
            Err(e) => {
                write_lock.unlock();
                return Err(e);
            }
        };
        let Loaded {
            pool,
            skipped,
            notes,
            repairs,
            journal,
        } = loaded;
        let mut store = Store {
            paths,
            options,
            attachment: Some(attachment),
            read_only: None,
            write_lock,
            journal,
            pool,
            skipped,
            repairs,
            notes,
            temp_files_removed: (0, 0),
            checkpoint_error: None,
        };
        // Under the write lock no other process is between writing a temp file and renaming
        // it, so every temp file of ours that exists now was left by a killed checkpoint.
        store.temp_files_removed = files::remove_orphaned_temp_files(&store.paths);
        let (n, bytes) = store.temp_files_removed;
        if n > 0 {
            store.notes.push(format!(
                "removed {n} temp file(s) ({bytes} bytes) left by an interrupted checkpoint"
            ));
        }
        if !store.repairs.is_empty() {
            store.fold_damage();
        }
        store.write_lock.unlock();
        Ok(store)
    }

    /// Open the store without writing anything, for reading where the directory cannot be
    /// written (`reason` says why: a read-only file system, no permission, a full disk). The
    /// files and the journal are read as [`Store::open`] reads them, damage is reported but not
    /// set aside, and the result is a snapshot: other processes' later writes are not followed.
    /// Every write fails with [`Error::ReadOnly`].
    pub fn open_read_only(
        paths: StorePaths,
        options: StoreOptions,
        reason: impl Into<String>,
    ) -> Result<Store> {
        if options.dim == 0 {
            return Err(Error::InvalidInput("vector dim must be at least 1".into()));
        }
        if !paths.dir.is_dir() {
            return Err(Error::Io {
                path: paths.dir.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "the data directory does not exist",
                ),
            });
        }
        // Read under a shared lock when the lock file exists, so no writer is half-way through
        // a checkpoint meanwhile (on a read-only file system there are no writers).
        let lock = std::fs::File::open(&paths.lock).ok();
        if let Some(f) = &lock {
            let _ = f.lock_shared();
        }
        let loaded = load(&paths, &options, false);
        drop(lock);
        let Loaded {
            pool,
            skipped,
            mut notes,
            repairs,
            journal,
        } = loaded?;
        let reason = reason.into();
        notes.push(format!(
            "read-only ({reason}): reading works, nothing is recorded"
        ));
        Ok(Store {
            write_lock: WriteLock::detached(&paths.lock),
            paths,
            options,
            attachment: None,
            read_only: Some(reason),
            journal,
            pool,
            skipped,
            repairs,
            notes,
            temp_files_removed: (0, 0),
            checkpoint_error: None,
        })
    }

    /// Whether writes are fsynced (`storage.sync` is not `"never"`), for derived files
    /// written beside the data.
    pub fn syncs(&self) -> bool {
        self.options.sync.syncs()
    }

    /// Why the store is read-only, when it is.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    fn refuse_if_read_only(&self) -> Result<()> {
        match &self.read_only {
            Some(reason) => Err(Error::ReadOnly {
                dir: self.paths.dir.clone(),
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Fold a journal in which damage was just contained into a checkpoint, so the damaged
    /// lines (already copied aside) are gone from it and the damage is reported once. Called
    /// holding the write lock. A failed checkpoint is noted, not fatal: the records are applied
    /// and the journal still holds them.
    fn fold_damage(&mut self) {
        if let Err(e) = self.checkpoint_locked() {
            self.notes.push(format!(
                "could not fold the repaired journal into a checkpoint ({e}); its damage will be \
                 reported again at the next open"
            ));
        }
    }

    /// Temp files of the store's atomic writes present now: (count, bytes). One while a
    /// checkpoint of another process is in progress; at open, left ones are removed.
    pub fn temp_file_usage(&self) -> (usize, u64) {
        files::temp_file_usage(&self.paths)
    }

    /// Temp files left by interrupted checkpoints that this open removed: (count, bytes).
    pub fn temp_files_removed(&self) -> (usize, u64) {
        self.temp_files_removed
    }

    /// Take the write lock and apply what other processes wrote since this one last looked.
    /// Hold it across reading, deciding and committing, then [`Store::release`] it. Nested
    /// calls are cheap no-ops.
    pub fn acquire(&mut self) -> Result<SyncOutcome> {
        if self.write_lock.held() || self.read_only.is_some() {
            return Ok(SyncOutcome::Current);
        }
        // Most of what others wrote is applied before waiting for the lock, so the locked
        // part of the call (and so every other process's wait) stays short.
        let mut early = self.prefetch();
        self.write_lock.lock()?;
        match self.catch_up() {
            Ok(SyncOutcome::Applied(ids)) => {
                early.extend(ids);
                Ok(SyncOutcome::Applied(early))
            }
            Ok(SyncOutcome::Current) if !early.is_empty() => Ok(SyncOutcome::Applied(early)),
            Ok(outcome) => Ok(outcome),
            Err(e) => {
                self.write_lock.unlock();
                Err(e)
            }
        }
    }

    /// Without the write lock: apply the complete, checksummed records other processes have
    /// appended since this process last looked. Writers append whole lines under the lock, so
    /// a complete line is final; a torn or damaged tail is left for [`Store::catch_up`], which
    /// runs under the lock and may cut or quarantine it. Returns the ids that changed.
    fn prefetch(&mut self) -> Vec<String> {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(&self.paths.wal) else {
            return Vec::new();
        };
        let start = self.journal.len();
        if meta.ino() != self.journal.ino() || meta.len() <= start {
            return Vec::new();
        }
        let Ok(bytes) = self.journal.read_from(start) else {
            return Vec::new();
        };
        let scan = journal_lines::scan(&bytes, self.journal.last_seq());
        // Only the clean prefix: damage is handled under the lock by `catch_up`.
        let clean = scan.damage.first().map_or(scan.records.len(), |_| 0);
        if clean == 0 {
            return Vec::new();
        }
        let mut changed = Vec::with_capacity(scan.records.len());
        for record in scan.records {
            if let Some(id) = record.id() {
                changed.push(id.to_string());
            }
            apply(&mut self.pool, record);
        }
        self.journal
            .advance_to(start + scan.valid_len as u64, scan.last_seq);
        changed
    }

    /// Release the write lock taken by [`Store::acquire`].
    pub fn release(&mut self) {
        self.write_lock.unlock();
    }

    fn catch_up(&mut self) -> Result<SyncOutcome> {
        use std::os::unix::fs::MetadataExt;
        let meta = match std::fs::metadata(&self.paths.wal) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).at(&self.paths.wal).map_err(Into::into),
        };
        let replaced = meta.as_ref().is_none_or(|m| m.ino() != self.journal.ino());
        let on_disk = meta.map_or(0, |m| m.len());
        if replaced || on_disk < self.journal.len() {
            self.reload()?;
            return Ok(SyncOutcome::Reloaded);
        }
        if on_disk == self.journal.len() {
            return Ok(SyncOutcome::Current);
        }
        let start = self.journal.len();
        let bytes = self.journal.read_from(start)?;
        let scan = journal_lines::scan(&bytes, self.journal.last_seq());
        let end = start + scan.valid_len as u64;
        let damaged = !scan.damage.is_empty();
        if damaged {
            // Offsets in the damage are relative to `bytes`.
            let repair = quarantine(&self.paths, &self.options, &bytes, &scan.damage)?;
            self.notes.push(format!("journal damaged: {repair}"));
            self.repairs.push(repair);
        }
        let mut changed = Vec::with_capacity(scan.records.len());
        for record in scan.records {
            if let Some(id) = record.id() {
                changed.push(id.to_string());
            }
            apply(&mut self.pool, record);
        }
        self.journal.set_end(end, scan.last_seq)?;
        if damaged {
            self.fold_damage();
        }
        Ok(SyncOutcome::Applied(changed))
    }

    /// Load everything again from the files (another process checkpointed).
    fn reload(&mut self) -> Result<()> {
        let Loaded {
            pool,
            skipped,
            notes,
            repairs,
            journal,
        } = load(&self.paths, &self.options, true)?;
        self.pool = pool;
        self.skipped = skipped;
        self.journal = journal;
        let damaged = !repairs.is_empty();
        self.repairs.extend(repairs);
        self.notes.extend(
            notes
                .into_iter()
                .filter(|n| n.starts_with("journal damaged")),
        );
        if damaged {
            self.fold_damage();
        }
        Ok(())
    }

    /// The live items and their arrays.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Where the files are.
    pub fn paths(&self) -> &StorePaths {
        &self.paths
    }

    /// Item by id with its tier.
    pub fn get(&self, id: &str) -> Option<(&Item, Tier)> {
        self.pool
            .row(id)
            .map(|r| (self.pool.item(r), self.pool.tier(r)))
    }

    /// Items per tier (O(1)).
    pub fn counts(&self) -> TierCounts {
        TierCounts {
            hot: self.pool.tier_len(Tier::Hot),
            warm: self.pool.tier_len(Tier::Warm),
            cold: self.pool.tier_len(Tier::Cold),
        }
    }

    /// Journal damage contained at open.
    pub fn repairs(&self) -> &[Repair] {
        &self.repairs
    }

    /// What open found worth telling (skipped lines, merged duplicates, recomputed vectors).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Entries kept verbatim because they did not parse.
    pub fn skipped_lines(&self) -> usize {
        self.skipped.iter().map(Vec::len).sum()
    }

    /// Bytes in the journal now.
    pub fn journal_bytes(&self) -> u64 {
        self.journal.len()
    }

    /// Checkpoint generation.
    pub fn generation(&self) -> u64 {
        self.journal.generation()
    }

    /// Fill in a recomputed vector for a row whose vector was missing. Not journaled: it is
    /// derived data and is written with the next checkpoint.
    pub fn set_vector(&mut self, row: u32, vector: &[f32]) -> bool {
        self.pool.set_vector(row, vector)
    }

    /// Journal `records` (one write, durable per the sync policy) and then apply them. Either
    /// every record is valid and all are applied, or an error is returned and nothing changed.
    /// Archive records also append the item to the archive file first.
    pub fn commit(&mut self, records: Vec<Record>) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        self.refuse_if_read_only()?;
        let took = !self.write_lock.held();
        self.acquire()?;
        let result = self.commit_locked(records);
        if took {
            self.release();
        }
        result
    }

    fn commit_locked(&mut self, records: Vec<Record>) -> Result<()> {
        self.validate(&records)?;
        let mut archive = Vec::new();
        for r in &records {
            if let Record::Archive {
                id,
                reason,
                summary_id,
                at,
            } = r
                && let Some(row) = self.pool.row(id)
            {
                let mut entry = self.pool.item(row).clone();
                entry
                    .extra
                    .insert("archive_reason".into(), reason.clone().into());
                entry.extra.insert("archived_at".into(), (*at).into());
                if let Some(s) = summary_id {
                    entry.extra.insert("summary_id".into(), s.clone().into());
                }
                to_python_line(&entry, &mut archive);
                archive.push(b'\n');
            }
        }
        if !archive.is_empty() {
            let path = &self.paths.archive;
            let mut f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .at(path)?;
            let before = f.metadata().at(path)?.len();
            let written = f.write_all(&archive).and_then(|()| {
                if self.options.sync == SyncPolicy::Always {
                    f.sync_data()
                } else {
                    Ok(())
                }
            });
            if let Err(e) = written {
                // A torn archive line would be read back as a skipped entry: cut it off.
                let _ = f.set_len(before);
                return Err(e).at(path).map_err(Into::into);
            }
        }
        // From here the records are durable once the append returns: nothing after it may
        // turn the commit into a failure (a caller that retries would apply it twice).
        self.journal.append(&records)?;
        for r in records {
            apply(&mut self.pool, r);
        }
        if self.journal.len() > self.options.wal_max_bytes {
            match self.checkpoint_locked() {
                Ok(()) => self.checkpoint_error = None,
                Err(e) => {
                    self.checkpoint_error = Some(format!(
                        "a checkpoint after a commit failed ({e}); nothing is lost, the journal \
                         keeps growing until one succeeds"
                    ))
                }
            }
        }
        Ok(())
    }

    fn validate(&self, records: &[Record]) -> Result<()> {
        let mut added: Vec<&str> = Vec::new();
        // Ids named by the records before the current one.
        let mut touched: Vec<&str> = Vec::new();
        for r in records {
            match r {
                Record::Begin { .. } => {
                    return Err(Error::InvalidInput(
                        "begin records are written by the store only".into(),
                    ));
                }
                Record::Put { item, vector, .. } => {
                    item.validate().map_err(Error::InvalidInput)?;
                    if !vector.is_empty() && vector.len() != self.options.dim {
                        return Err(Error::InvalidInput(format!(
                            "vector of item {} has dim {} but the store holds dim {}",
                            item.item_id,
                            vector.len(),
                            self.options.dim
                        )));
                    }
                    if vector.iter().any(|v| !v.is_finite()) {
                        return Err(Error::InvalidInput(format!(
                            "vector of item {} has non-finite values",
                            item.item_id
                        )));
                    }
                    added.push(&item.item_id);
                }
                other => {
                    let id = other.id().unwrap_or_default();
                    if self.pool.row(id).is_none() && !added.contains(&id) {
                        return Err(Error::UnknownId(id.to_string()));
                    }
                    if matches!(other, Record::Archive { .. }) && touched.contains(&id) {
                        // The archive entry is written before the batch is applied, so it
                        // would hold the item as it was before this batch changed it.
                        return Err(Error::InvalidInput(format!(
                            "item {id} is archived after another record about it in the same \
                             batch; commit them separately"
                        )));
                    }
                    match other {
                        Record::Archive { at, .. } if !at.is_finite() => {
                            return Err(Error::InvalidInput(format!(
                                "archive time {at} is not a finite time"
                            )));
                        }
                        Record::Touch { last_access, .. } if !last_access.is_finite() => {
                            return Err(Error::InvalidInput(format!(
                                "last_access {last_access} is not a finite time"
                            )));
                        }
                        Record::Importance { importance, .. }
                            if !(0.0..=1.0).contains(importance) =>
                        {
                            return Err(Error::InvalidInput(format!(
                                "importance {importance} is outside 0..1"
                            )));
                        }
                        _ => {}
                    }
                }
            }
            if let Some(id) = r.id() {
                touched.push(id);
            }
        }
        Ok(())
    }

    /// Rewrite the compatible files from memory (each atomically, files that gain items before
    /// files that lose them, so a crash at any point leaves every item in at least one file),
    /// then start a fresh journal. The journal is only reset once every file is durable.
    pub fn checkpoint(&mut self) -> Result<()> {
        self.refuse_if_read_only()?;
        let took = !self.write_lock.held();
        self.acquire()?;
        let result = self.checkpoint_locked();
        if took {
            self.release();
        }
        result
    }

    /// Holds the pool's vectors sparse or dense ([`crate::Pool::set_compact`]); nothing on disk
    /// changes. Returns whether the form changed.
    pub fn set_compact_vectors(&mut self, compact: bool) -> bool {
        self.pool.set_compact(compact)
    }

    fn checkpoint_locked(&mut self) -> Result<()> {
        let sync = self.options.sync.syncs();
        let pool = &self.pool;
        let missing = pool.missing_vectors();
        let dim = pool.dim();
        // Rows with a vector, in row order; the matrix is streamed from the pool, never copied
        // (a copy, then the file's bytes in one buffer, made a checkpoint at a million 384-dim
        // vectors hold 3 GB more than the pool).
        let stored: Vec<u32> = (0..pool.len() as u32)
            .filter(|&r| !missing.contains(r))
            .collect();
        coral_base::probe::mark("checkpoint: start");
        files::write_atomic_with(&self.paths.vectors, sync, &mut |w| {
            let rows = stored.iter().map(|&r| pool.vector(r).to_dense(dim));
            npy::write_rows(w, stored.len(), dim, rows)
        })?;
        coral_base::probe::mark("checkpoint: npy written");
        files::write_atomic(
            &self.paths.index,
            &files::encode_index(stored.iter().map(|&r| pool.item(r).item_id.as_str())),
            sync,
        )?;
        let rows_of = stored
            .iter()
            .map(|&r| (pool.item(r).item_id.as_str(), pool.vector(r).to_dense(dim)));
        files::write_atomic(&self.paths.sums, &sums::encode(rows_of), sync)?;
        coral_base::probe::mark("checkpoint: index and sums written");
        // Derived and keyed by text, so any order of these writes is safe: a file older or
        // newer than the data files only covers fewer of their texts.
        // In the order an open reads the items back, so that each entry is found in its place.
        let fingerprint = pool.feature_fingerprint();
        let order = pool.file_order();
        files::write_atomic_with(&self.paths.bitmaps, sync, &mut |w| {
            let entries = order
                .iter()
                .map(|&r| (pool.item(r).content.as_str(), &pool.bitmaps()[r as usize]));
            crate::bitmap_file::write(w, fingerprint, order.len(), entries)
        })?;
        coral_base::probe::mark("checkpoint: bitmaps written");
        // Coral's own attributes first: hot marks and project tags for the entries the data
        // files are about to hold (a crash after this leaves marks for the old files, which
        // name only ids that are still there or get replayed from the journal).
        let tiered = pool
            .items()
            .iter()
            .enumerate()
            .map(|(row, item)| (pool.tier(row as u32), item));
        files::write_atomic_with(&self.paths.item_meta, sync, &mut |w| {
            crate::ItemMeta::write_of(w, tiered.clone())
        })?;
        let sorted = |tiers: &[Tier]| -> Vec<&Item> {
            pool.rows_in_file_order(tiers)
                .into_iter()
                .map(|r| pool.item(r))
                .collect()
        };
        // Files that gain items before files that lose them: cold, then the warm file, which
        // holds the hot tier too (the original reads no other), then the old hot file goes.
        let cold = sorted(&[Tier::Cold]);
        let cold_skipped = &self.skipped[Tier::Cold.index()];
        files::write_atomic_with(&self.paths.cold, sync, &mut |w| {
            files::write_item_lines(w, cold.iter().copied(), cold_skipped)
        })?;
        drop(cold);
        coral_base::probe::mark("checkpoint: meta and cold written");
        let mut kept = self.skipped[Tier::Warm.index()].clone();
        kept.extend(self.skipped[Tier::Hot.index()].iter().cloned());
        let warm = sorted(&[Tier::Hot, Tier::Warm]);
        files::write_atomic_with(&self.paths.warm, sync, &mut |w| {
            files::write_item_array(w, warm.iter().copied(), &kept)
        })?;
        drop(warm);
        coral_base::probe::mark("checkpoint: warm written");
        match std::fs::remove_file(&self.paths.hot) {
            Ok(()) => {
                if sync {
                    files::sync_dir(&self.paths.dir)?;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).at(&self.paths.hot).map_err(Into::into),
        }
        self.skipped[Tier::Warm.index()] = kept;
        self.skipped[Tier::Hot.index()].clear();
        let next = self.journal.generation() + 1;
        self.journal.reset(next)
    }

    /// Which embedder made the stored vectors, from `coral_vectors.meta.json`.
    pub fn vector_meta(&self) -> Option<crate::VectorMeta> {
        crate::vector_meta::read(&self.paths.vector_meta())
    }

    /// Record which embedder made the stored vectors (atomically, under the write lock, so a
    /// concurrent open never takes its temp file for a leftover). A no-op when unchanged.
    pub fn set_vector_meta(&mut self, meta: &crate::VectorMeta) -> Result<()> {
        if self.vector_meta().as_ref() == Some(meta) {
            return Ok(());
        }
        self.refuse_if_read_only()?;
        let took = !self.write_lock.held();
        self.acquire()?;
        let result = files::write_atomic(
            &self.paths.vector_meta(),
            &crate::vector_meta::encode(meta),
            true,
        );
        if took {
            self.release();
        }
        result
    }

    /// fsync the journal now.
    pub fn sync(&self) -> Result<()> {
        self.journal.sync()
    }

    /// Sizes of the data files in bytes, by label (missing files count 0), and of the derived
    /// bitmap and keyword files (`"bitmaps"`, `"keywords"`).
    pub fn file_sizes(&self) -> Vec<(&'static str, u64)> {
        self.paths
            .data_files()
            .iter()
            .chain(&[
                ("bitmaps", self.paths.bitmaps.as_path()),
                ("keywords", self.paths.keywords.as_path()),
            ])
            .map(|(label, path)| {
                (
                    *label,
                    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
                )
            })
            .collect()
    }

    /// Drop the oldest archive entries until the archive file holds at most `max_bytes`
    /// (whole lines only; rewritten atomically). Returns the bytes freed.
    pub fn trim_archive(&mut self, max_bytes: u64) -> Result<u64> {
        self.refuse_if_read_only()?;
        let path = self.paths.archive.clone();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e).at(&path).map_err(Into::into),
        };
        if bytes.len() as u64 <= max_bytes {
            return Ok(0);
        }
        // Keep the newest whole lines (the end of the file) that fit: the first line start from
        // which the rest of the file is within the budget.
        let len = bytes.len();
        let start = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .find(|&start| (len - start) as u64 <= max_bytes)
            .unwrap_or(len);
        let kept = &bytes[start..];
        files::write_atomic(&path, kept, self.options.sync.syncs())?;
        Ok((bytes.len() - kept.len()) as u64)
    }

    /// An archived item by id (the latest entry for it), with the archive's extra keys.
    pub fn archived(&self, id: &str) -> Result<Option<Item>> {
        let loaded = files::read_item_lines(&self.paths.archive)?;
        Ok(loaded.items.into_iter().rev().find(|i| i.item_id == id))
    }

    /// Leave the data directory: checkpoint when no other process has it open (otherwise the
    /// journal, already durable, is left for whoever closes last), and fsync. A checkpoint that
    /// fails (a full disk) loses nothing, since the journal holds every change: it is reported
    /// in [`Closed::checkpoint_error`], and only a failed fsync of the journal is an error.
    pub fn close(mut self) -> Result<Closed> {
        if self.read_only.is_some() {
            return Ok(Closed::default());
        }
        if self.alone() {
            match self.checkpoint() {
                Ok(()) => Ok(Closed::default()),
                Err(e) => {
                    self.journal.sync()?;
                    Ok(Closed {
                        checkpoint_error: Some(format!(
                            "the closing checkpoint failed ({e}); nothing is lost: the journal \
                             holds every change and the next open replays it"
                        )),
                    })
                }
            }
        } else {
            self.journal.sync()?;
            Ok(Closed::default())
        }
    }

    /// Why the last checkpoint this store tried after a commit failed, if it did (the commit
    /// itself succeeded; the next commit tries again).
    pub fn checkpoint_error(&self) -> Option<&str> {
        self.checkpoint_error.as_deref()
    }

    /// Whether this is the only process with the directory open.
    pub fn alone(&self) -> bool {
        self.attachment.as_ref().is_some_and(Attachment::alone)
    }
}
