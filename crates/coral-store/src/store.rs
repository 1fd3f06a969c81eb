//! The durable store: open (load, validate, replay, repair), commit records, checkpoint.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::files::{self, Skipped, StorePaths};
use crate::item::{Item, Tier, to_python_line};
use crate::journal::{self, Journal, Record, SyncPolicy};
use crate::lock::{Attachment, WriteLock};
use crate::npy;
use crate::pool::{FeatureFn, Pool};
use crate::sums;
use coral_base::IoContext;

/// How to open a store.
#[derive(Clone)]
pub struct StoreOptions {
    /// Vector dimension of the configured embedder.
    pub dim: usize,
    /// Journal durability.
    pub sync: SyncPolicy,
    /// Checkpoint when the journal grows past this many bytes.
    pub wal_max_bytes: u64,
    /// Computes the token bitmap kept next to each vector.
    pub features: FeatureFn,
}

/// Damage found in the journal and contained: the damaged lines are copied aside, every valid
/// record around them is applied, and the journal is folded into a checkpoint so the damage is
/// reported once.
#[derive(Clone, Debug, PartialEq)]
pub struct Repair {
    /// The damaged file.
    pub path: PathBuf,
    /// 1-based line of the first problem.
    pub line: usize,
    /// Every problem found, `"line N: what"`, joined with `"; "`.
    pub detail: String,
    /// How many lines were set aside.
    pub lines: usize,
    /// Records lost: unreadable lines plus gaps in the sequence numbers.
    pub missing: u64,
    /// Where the set-aside lines were copied (never deleted); `None` when nothing was set
    /// aside (only missing records).
    pub quarantine: Option<PathBuf>,
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.detail)?;
        if let Some(q) = &self.quarantine {
            write!(f, "; {} line(s) moved to {}", self.lines, q.display())?;
        }
        if self.missing > 0 {
            write!(
                f,
                "; {} record(s) are lost (restore from a backup if they mattered)",
                self.missing
            )?;
        }
        Ok(())
    }
}

/// What the compatible files of a directory hold (without the journal).
pub struct Snapshot {
    /// Live items with their tier, duplicates merged, in file order (hot, warm, cold).
    pub items: Vec<(Tier, Item)>,
    /// Vectors by id, from the `.npy` + index when they are usable.
    pub vectors: HashMap<String, usize>,
    /// The decoded vector matrix (rows referenced by `vectors`).
    pub matrix: npy::Matrix,
    /// Entries that did not parse, by tier, kept for rewrite.
    pub skipped: [Vec<Skipped>; 3],
    /// Everything worth telling the user about what was found.
    pub notes: Vec<String>,
}

impl Snapshot {
    /// Read the compatible files of a directory (Coral's or the original Python version's).
    /// Vectors of another dim than `dim`, or an index that does not match the matrix, are
    /// reported and treated as missing.
    pub fn read(paths: &StorePaths, dim: usize) -> Result<Snapshot> {
        let hot = files::read_item_array(&paths.hot)?;
        let warm = files::read_item_array(&paths.warm)?;
        let cold = files::read_item_lines(&paths.cold)?;
        let mut notes = Vec::new();
        let meta = match crate::item_meta::read(&paths.item_meta) {
            Ok(meta) => meta.unwrap_or_default(),
            Err(e) => {
                notes.push(format!(
                    "{e}; every memory is intact, but hot-tier marks and project tags are \
                     not known (hot memories read as warm); the next checkpoint rewrites it"
                ));
                crate::ItemMeta::default()
            }
        };
        let mut items: Vec<(Tier, Item)> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut merged = [0usize; 3];
        for (tier, loaded) in [(Tier::Hot, &hot), (Tier::Warm, &warm), (Tier::Cold, &cold)] {
            for item in &loaded.items {
                match seen.get(&item.item_id) {
                    Some(&i) => {
                        items[i].1.merge_duplicate(item);
                        merged[tier.index()] += 1;
                    }
                    None => {
                        seen.insert(item.item_id.clone(), items.len());
                        let mut item = item.clone();
                        meta.restore(&mut item);
                        // The warm file holds the hot tier too; the sidecar says which.
                        let tier = if tier == Tier::Warm && meta.hot.contains(&item.item_id) {
                            Tier::Hot
                        } else {
                            tier
                        };
                        items.push((tier, item));
                    }
                }
            }
        }
        for (tier, n) in Tier::ALL.iter().zip(merged) {
            if n > 0 {
                notes.push(format!(
                    "merged {n} duplicate id(s) found in the {tier} tier"
                ));
            }
        }
        let skipped = [hot.skipped, warm.skipped, cold.skipped];
        for s in skipped.iter().flatten() {
            notes.push(format!(
                "{} line {}: skipped ({}), kept in the file unchanged",
                s.path.display(),
                s.line,
                s.reason
            ));
        }
        let (matrix, vectors) = read_vectors(paths, dim, &seen, &mut notes);
        Ok(Snapshot {
            items,
            vectors,
            matrix,
            skipped,
            notes,
        })
    }
}

fn read_vectors(
    paths: &StorePaths,
    dim: usize,
    live: &HashMap<String, usize>,
    notes: &mut Vec<String>,
) -> (npy::Matrix, HashMap<String, usize>) {
    let none = (npy::Matrix::default(), HashMap::new());
    let index = match files::read_index(&paths.index) {
        Ok(Some(ids)) => ids,
        Ok(None) => {
            if paths.vectors.exists() {
                notes.push(format!(
                    "{} is missing: vectors will be recomputed",
                    paths.index.display()
                ));
            }
            return none;
        }
        Err(e) => {
            notes.push(format!("{e}: vectors will be recomputed"));
            return none;
        }
    };
    let matrix = match npy::read(&paths.vectors) {
        Ok(m) => m,
        Err(e) => {
            notes.push(format!("{e}: vectors will be recomputed"));
            return none;
        }
    };
    if matrix.rows != index.len() {
        notes.push(format!(
            "{} lists {} ids but {} holds {} rows: vectors will be recomputed",
            paths.index.display(),
            index.len(),
            paths.vectors.display(),
            matrix.rows
        ));
        return none;
    }
    if matrix.rows > 0 && matrix.cols != dim {
        notes.push(format!(
            "{} holds vectors of dim {} but the embedder produces dim {dim}: \
             they were made by another model and will be recomputed",
            paths.vectors.display(),
            matrix.cols
        ));
        return none;
    }
    let sums = match sums::read(&paths.sums) {
        sums::Read::Found(s) => Some(s),
        sums::Read::Missing => None,
        sums::Read::Damaged(why) => {
            notes.push(format!(
                "{why}: the vectors were not checked against it (it is rewritten at the next \
                 checkpoint)"
            ));
            None
        }
    };
    let mut by_id = HashMap::with_capacity(index.len());
    let mut orphans = 0;
    let mut non_finite = 0;
    let mut mismatched = 0;
    for (row, id) in index.into_iter().enumerate() {
        if !live.contains_key(&id) {
            orphans += 1;
            continue;
        }
        let v = matrix.row(row);
        if v.iter().any(|x| !x.is_finite()) {
            // A NaN scores as nothing and sorts unpredictably: the memory would never be found.
            non_finite += 1;
            continue;
        }
        if sums
            .as_ref()
            .is_some_and(|s| s.check(&id, v) == sums::Check::Differs)
        {
            mismatched += 1;
            continue;
        }
        by_id.insert(id, row);
    }
    if orphans > 0 {
        notes.push(format!(
            "{orphans} vector(s) in {} belong to no stored item and were dropped",
            paths.vectors.display()
        ));
    }
    if non_finite > 0 {
        notes.push(format!(
            "damaged vectors: {non_finite} row(s) of {} hold NaN or infinite values; those \
             memories' vectors will be recomputed",
            paths.vectors.display()
        ));
    }
    if mismatched > 0 {
        notes.push(format!(
            "damaged vectors: {mismatched} row(s) of {} do not match the checksums in {} (ids \
             swapped in {} or rows changed); those memories' vectors will be recomputed",
            paths.vectors.display(),
            paths.sums.display(),
            paths.index.display()
        ));
    }
    (matrix, by_id)
}

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

/// What a fresh read of the files and the journal produced.
struct Loaded {
    pool: Pool,
    skipped: [Vec<Skipped>; 3],
    notes: Vec<String>,
    repairs: Vec<Repair>,
    journal: Journal,
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

/// Read the compatible files and replay the journal (the caller holds the write lock).
/// With `writable` false nothing is written: damage is reported, not set aside, and the
/// journal is not opened for appending.
fn load(paths: &StorePaths, options: &StoreOptions, writable: bool) -> Result<Loaded> {
    let snapshot = Snapshot::read(paths, options.dim)?;
    let mut pool = Pool::new(options.dim, options.features.clone());
    let Snapshot {
        items,
        vectors,
        matrix,
        skipped,
        mut notes,
    } = snapshot;
    let entries = items
        .into_iter()
        .map(|(tier, item)| {
            let v = vectors.get(&item.item_id).map(|&r| matrix.row(r));
            (tier, item, v)
        })
        .collect();
    pool.bulk_load(entries);

    let wal_bytes = match std::fs::read(&paths.wal) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).at(&paths.wal).map_err(Into::into),
    };
    let scan = journal::scan(&wal_bytes, None);
    let mut repairs = Vec::new();
    if !scan.damage.is_empty() {
        if writable {
            let repair = quarantine(paths, options, &wal_bytes, &scan.damage)?;
            notes.push(format!("journal damaged: {repair}"));
            repairs.push(repair);
        } else {
            let problems: Vec<String> = scan
                .damage
                .iter()
                .map(|d| format!("line {}: {}", d.line, d.detail))
                .collect();
            notes.push(format!(
                "journal damaged (not repaired: the store is read-only): {}: {}",
                paths.wal.display(),
                problems.join("; ")
            ));
        }
    }
    let mut generation = 0;
    let mut replayed = 0usize;
    for record in scan.records {
        if let Record::Begin { generation: g } = record {
            generation = g;
        } else {
            replayed += 1;
            apply(&mut pool, record);
        }
    }
    if replayed > 0 {
        notes.push(format!("replayed {replayed} journal record(s)"));
    }
    let journal = if writable {
        Journal::open(
            &paths.wal,
            scan.valid_len as u64,
            generation,
            scan.last_seq,
            options.sync,
        )?
    } else {
        Journal::detached(&paths.wal, scan.valid_len as u64, generation, scan.last_seq)
    };
    Ok(Loaded {
        pool,
        skipped,
        notes,
        repairs,
        journal,
    })
}

/// Copy the damaged lines of a journal aside (never deleted) and describe every problem.
fn quarantine(
    paths: &StorePaths,
    options: &StoreOptions,
    bytes: &[u8],
    damage: &[journal::Damage],
) -> Result<Repair> {
    let mut set_aside = Vec::new();
    let mut lines = 0;
    let mut missing = 0u64;
    for d in damage {
        if d.len > 0 {
            set_aside.extend_from_slice(&bytes[d.offset..d.offset + d.len]);
            lines += 1;
        }
        match d.kind {
            journal::DamageKind::Missing { from, to } => missing += to - from + 1,
            journal::DamageKind::Unreadable => missing += 1,
            _ => {}
        }
    }
    let quarantine = if set_aside.is_empty() {
        None
    } else {
        let target = quarantine_path(&paths.wal);
        files::write_atomic(&target, &set_aside, options.sync.syncs())?;
        Some(target)
    };
    let detail = damage
        .iter()
        .map(|d| format!("line {}: {}", d.line, d.detail))
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Repair {
        path: paths.wal.clone(),
        line: damage.first().map_or(0, |d| d.line),
        detail,
        lines,
        missing,
        quarantine,
    })
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
        let scan = journal::scan(&bytes, self.journal.last_seq());
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
        let scan = journal::scan(&bytes, self.journal.last_seq());
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

    fn checkpoint_locked(&mut self) -> Result<()> {
        let sync = self.options.sync.syncs();
        let pool = &self.pool;
        let missing = pool.missing_vectors();
        let dim = pool.dim();
        let (rows, ids, data): (usize, Vec<&str>, std::borrow::Cow<[f32]>) = if missing.is_empty() {
            let ids = pool.items().iter().map(|i| i.item_id.as_str()).collect();
            (pool.len(), ids, std::borrow::Cow::Borrowed(pool.vectors()))
        } else {
            let mut ids = Vec::new();
            let mut data = Vec::new();
            for row in 0..pool.len() as u32 {
                if !missing.contains(row) {
                    ids.push(pool.item(row).item_id.as_str());
                    data.extend_from_slice(pool.vector(row));
                }
            }
            (ids.len(), ids, std::borrow::Cow::Owned(data))
        };
        files::write_atomic(&self.paths.vectors, &npy::encode(rows, dim, &data), sync)?;
        files::write_atomic(
            &self.paths.index,
            &files::encode_index(ids.iter().copied()),
            sync,
        )?;
        let rows_of = ids
            .iter()
            .enumerate()
            .map(|(r, id)| (*id, &data[r * dim..(r + 1) * dim]));
        files::write_atomic(&self.paths.sums, &sums::encode(rows_of), sync)?;
        // Coral's own attributes first: hot marks and project tags for the entries the data
        // files are about to hold (a crash after this leaves marks for the old files, which
        // name only ids that are still there or get replayed from the journal).
        let tiered = pool
            .items()
            .iter()
            .enumerate()
            .map(|(row, item)| (pool.tier(row as u32), item));
        files::write_atomic(
            &self.paths.item_meta,
            &crate::ItemMeta::of(tiered).encode(),
            sync,
        )?;
        let sorted = |tiers: &[Tier]| {
            let mut rows: Vec<&Item> = tiers
                .iter()
                .flat_map(|&t| pool.tier_rows(t).iter().map(|r| pool.item(r)))
                .collect();
            rows.sort_by(|a, b| {
                a.timestamp
                    .total_cmp(&b.timestamp)
                    .then_with(|| a.item_id.cmp(&b.item_id))
            });
            rows
        };
        // Files that gain items before files that lose them: cold, then the warm file, which
        // holds the hot tier too (the original reads no other), then the old hot file goes.
        files::write_atomic(
            &self.paths.cold,
            &files::encode_item_lines(
                sorted(&[Tier::Cold]).into_iter(),
                &self.skipped[Tier::Cold.index()],
            ),
            sync,
        )?;
        let mut kept = self.skipped[Tier::Warm.index()].clone();
        kept.extend(self.skipped[Tier::Hot.index()].iter().cloned());
        files::write_atomic(
            &self.paths.warm,
            &files::encode_item_array(sorted(&[Tier::Hot, Tier::Warm]).into_iter(), &kept),
            sync,
        )?;
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

    /// Sizes of the data files in bytes, by label (missing files count 0).
    pub fn file_sizes(&self) -> Vec<(&'static str, u64)> {
        self.paths
            .data_files()
            .iter()
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

fn quarantine_path(wal: &Path) -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut n = 0;
    loop {
        let suffix = if n == 0 {
            format!("{stamp}.corrupt")
        } else {
            format!("{stamp}-{n}.corrupt")
        };
        let mut name = wal.as_os_str().to_owned();
        name.push(".");
        name.push(suffix);
        let candidate = PathBuf::from(name);
        if !candidate.exists() {
            return candidate;
        }
        n += 1;
    }
}

/// Apply one record to the pool. Shared by live commits and replay, so both end in the same
/// state. Records about ids that are gone are no-ops (a later delete in the same journal
/// explains them).
fn apply(pool: &mut Pool, record: Record) {
    match record {
        Record::Begin { .. } => {}
        Record::Put { tier, item, vector } => {
            pool.upsert(tier, item, &vector);
        }
        Record::Touch {
            id,
            access_count,
            last_access,
        } => {
            if let Some(row) = pool.row(&id) {
                let item = pool.item_mut(row);
                item.access_count = access_count;
                item.last_access = last_access;
            }
        }
        Record::Importance { id, importance } => {
            if let Some(row) = pool.row(&id) {
                pool.item_mut(row).importance = importance;
            }
        }
        Record::Move { id, tier } => {
            if let Some(row) = pool.row(&id) {
                pool.set_tier(row, tier);
            }
        }
        Record::Delete { id } | Record::Archive { id, .. } => {
            pool.remove(&id);
        }
    }
}
