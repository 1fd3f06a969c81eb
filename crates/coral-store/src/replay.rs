//! Opening a store: read the compatible files, replay the journal over them, set damaged
//! records aside (quarantine) and report each repair; `apply`, shared by replay and live
//! commits, so both end in the same state.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::files::{self, Skipped, StorePaths};
use coral_base::SyncPolicy;

use crate::journal::Journal;
use crate::journal_lines;
use crate::pool::{FeatureFn, Pool};
use crate::record::Record;
use crate::snapshot::Snapshot;
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

/// What a fresh read of the files and the journal produced.
pub(crate) struct Loaded {
    pub pool: Pool,
    pub skipped: [Vec<Skipped>; 3],
    pub notes: Vec<String>,
    pub repairs: Vec<Repair>,
    pub journal: Journal,
}

/// Read the compatible files and replay the journal (the caller holds the write lock).
/// With `writable` false nothing is written: damage is reported, not set aside, and the
/// journal is not opened for appending.
pub(crate) fn load(paths: &StorePaths, options: &StoreOptions, writable: bool) -> Result<Loaded> {
    let snapshot = Snapshot::read(paths, options.dim)?;
    let mut pool = Pool::new(options.dim, options.features.clone());
    let Snapshot {
        items,
        vectors,
        matrix,
        skipped,
        mut notes,
    } = snapshot;
    let sources = items
        .iter()
        .map(|(_, item)| vectors.get(&item.item_id).copied())
        .collect();
    drop(vectors);
    let saved = match crate::bitmap_file::read(&paths.bitmaps, pool.feature_fingerprint()) {
        crate::bitmap_file::Read::Found(saved) => Some(saved),
        crate::bitmap_file::Read::Missing => None,
        crate::bitmap_file::Read::Unusable(why) => {
            notes.push(format!(
                "{why}: ignored, every memory's token bitmap is computed from its text (the \
                 next checkpoint rewrites the file)"
            ));
            None
        }
    };
    coral_base::probe::mark("open: saved bitmaps read");
    pool.bulk_load(items, sources, matrix, saved.as_ref());
    drop(saved);
    coral_base::probe::mark("open: pool loaded");

    let wal_bytes = match std::fs::read(&paths.wal) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).at(&paths.wal).map_err(Into::into),
    };
    let scan = journal_lines::scan(&wal_bytes, None);
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
    coral_base::probe::mark("open: journal read");
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
    coral_base::probe::mark("open: journal replayed");
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
pub(crate) fn quarantine(
    paths: &StorePaths,
    options: &StoreOptions,
    bytes: &[u8],
    damage: &[journal_lines::Damage],
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
            journal_lines::DamageKind::Missing { from, to } => missing += to - from + 1,
            journal_lines::DamageKind::Unreadable => missing += 1,
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
pub(crate) fn apply(pool: &mut Pool, record: Record) {
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
