//! `coral backup`, `coral restore` and `coral check` for a whole data directory: the memory
//! store's files, the threads file and the timeline, while servers keep running.
//!
//! A backup directory is itself a data directory (open it with `--data-dir`) plus
//! `coral_backup.json`, the manifest: every file with its size and CRC32, and what it holds.
//! A restore checks every file against the manifest before it changes anything.

use std::path::{Path, PathBuf};

use coral_store::{BackupFile, CheckReport, Finding, Severity, StorePaths};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};
use coral_config::Config;
use coral_config::{THREADS_FILE, TIMELINE_FILE};

/// The manifest's file name in a backup directory.
pub const MANIFEST: &str = "coral_backup.json";

/// What a backup holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Manifest format (1).
    pub format: u32,
    /// When it was made, Unix seconds.
    pub created_at: f64,
    /// The Coral that made it.
    pub coral_version: String,
    /// The data directory it was made from.
    pub source: String,
    /// Memories in it.
    pub memories: usize,
    /// Threads in it.
    pub threads: usize,
    /// Whether it holds a timeline.
    pub timeline: bool,
    /// Every file, with its size and CRC32.
    pub files: Vec<BackupFile>,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Store(coral_store::Error::Io {
        path: path.to_path_buf(),
        source: e,
    })
}

/// Make a consistent copy of the data directory of `config` in `dest` (created; it must be
/// empty if it exists). Other processes may keep using the directory: the memory files are
/// copied under the store's write lock, the threads file as one complete version, the timeline
/// through SQLite's snapshot.
pub fn backup(config: &Config, dest: &Path) -> Result<Manifest> {
    if dest.exists() {
        let mut entries = std::fs::read_dir(dest).map_err(|e| io(dest, e))?;
        if entries.next().is_some() {
            return Err(Error::InvalidInput(format!(
                "{} is not empty; back up into a new or empty directory",
                dest.display()
            )));
        }
    }
    std::fs::create_dir_all(dest).map_err(|e| io(dest, e))?;
    let paths = config.store_paths();
    let mut files = coral_store::backup(&paths, dest)?;
    // The threads file is replaced by rename, so one read sees one whole version; the thread
    // journals (read first) add what processes acknowledged since their last checkpoint.
    let threads = config.threads_path();
    let snap = coral_thread::snapshot(&threads)?;
    if threads.exists() || snap.journals > 0 {
        coral_store::write_atomic(&dest.join(THREADS_FILE), &snap.bytes, true)?;
        files.push(BackupFile::of(THREADS_FILE, &snap.bytes));
    }
    let timeline = dest.join(TIMELINE_FILE);
    let has_timeline = coral_timeline::backup_file(&config.timeline_path(), &timeline)
        .map_err(|e| Error::InvalidInput(format!("backing up the timeline: {e}")))?;
    if has_timeline {
        let bytes = std::fs::read(&timeline).map_err(|e| io(&timeline, e))?;
        files.push(BackupFile::of(TIMELINE_FILE, &bytes));
    }
    // Prove the copy opens, and count what it holds.
    let (memories, threads_n) = contents(dest, config)?;
    let manifest = Manifest {
        format: 1,
        created_at: crate::unix_now(),
        coral_version: env!("CARGO_PKG_VERSION").to_string(),
        source: std::path::absolute(&paths.dir)
            .unwrap_or(paths.dir.clone())
            .display()
            .to_string(),
        memories,
        threads: threads_n,
        timeline: has_timeline,
        files,
    };
    let mut bytes = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
    bytes.push(b'\n');
    coral_store::write_atomic(&dest.join(MANIFEST), &bytes, true)?;
    Ok(manifest)
}

/// Memories and threads in the data directory `dir`, read without writing.
fn contents(dir: &Path, config: &Config) -> Result<(usize, usize)> {
    let options = coral_store::StoreOptions {
        dim: config.embedding.dim.max(1),
        sync: coral_store::SyncPolicy::Never,
        wal_max_bytes: u64::MAX,
        features: std::sync::Arc::new(|_: &str| [0u64; 32]),
    };
    // The dimension does not matter for counting: vectors of another dim are only noted.
    let store =
        coral_store::Store::open_read_only(StorePaths::in_dir(dir), options, "counting a backup")?;
    let threads = match std::fs::read(dir.join(THREADS_FILE)) {
        Ok(bytes) => serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.as_array().map(Vec::len))
            .unwrap_or(0),
        Err(_) => 0,
    };
    Ok((store.pool().len(), threads))
}

/// The manifest of the backup in `src`.
pub fn read_manifest(src: &Path) -> Result<Manifest> {
    let path = src.join(MANIFEST);
    let bytes = std::fs::read(&path).map_err(|e| {
        Error::InvalidInput(format!(
            "{} is not a Coral backup ({}: {e}); make one with `coral backup DIR`",
            src.display(),
            path.display()
        ))
    })?;
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
        Error::Store(coral_store::Error::Corrupted {
            path: path.clone(),
            line: e.line(),
            detail: format!("not a backup manifest: {e}"),
        })
    })?;
    if manifest.format != 1 {
        return Err(Error::InvalidInput(format!(
            "{} is in backup format {}; this Coral reads format 1",
            path.display(),
            manifest.format
        )));
    }
    Ok(manifest)
}

/// What a restore did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Restored {
    /// The manifest of the backup restored.
    pub manifest: Manifest,
    /// The data directory restored into.
    pub data_dir: PathBuf,
}

/// Replace the data directory of `config` with the backup in `src`. Every file is checked
/// against the manifest first; a damaged backup changes nothing. Processes using the directory
/// reload the memories at their next call. Threads are merged by id and step id by every
/// process that still holds some in memory (threads are never forgotten), so a restore cannot
/// remove a thread a running server knows.
pub fn restore(config: &Config, src: &Path) -> Result<Restored> {
    let manifest = read_manifest(src)?;
    // Everything is checked before anything is written.
    coral_store::read_checked(src, &manifest.files)?;
    let (store_files, other): (Vec<BackupFile>, Vec<BackupFile>) = manifest
        .files
        .iter()
        .cloned()
        .partition(|f| f.name != THREADS_FILE && f.name != TIMELINE_FILE);
    let paths = config.store_paths();
    std::fs::create_dir_all(&paths.dir).map_err(|e| io(&paths.dir, e))?;
    coral_store::restore(&paths, src, &store_files)?;
    for f in &other {
        let from = src.join(&f.name);
        if f.name == THREADS_FILE {
            let bytes = std::fs::read(&from).map_err(|e| io(&from, e))?;
            coral_store::write_atomic(&config.threads_path(), &bytes, true)?;
        } else {
            coral_timeline::restore_file(&config.timeline_path(), &from)
                .map_err(|e| Error::InvalidInput(format!("restoring the timeline: {e}")))?;
        }
    }
    Ok(Restored {
        manifest,
        data_dir: paths.dir,
    })
}

/// Every problem in the data directory of `config`, found without changing anything: the
/// store's files (coral_store::check), the threads file, the timeline (SQLite's integrity
/// check) and an interrupted restore.
pub fn check(config: &Config) -> CheckReport {
    let paths = config.store_paths();
    let mut report = coral_store::check(&paths, config.embedding.dim.max(1));
    let marker = coral_store::restore_marker(&paths);
    if marker.exists() {
        report.findings.insert(
            0,
            Finding {
                severity: Severity::Problem,
                path: marker,
                detail: "a `coral restore` was interrupted: run it again before using the \
                         directory"
                    .into(),
            },
        );
    }
    // The threads file and its journals, read without replaying anything into the file (an
    // open would claim ended processes' journals and rewrite the file).
    let threads = config.threads_path();
    match coral_thread::snapshot(&threads) {
        Ok(snap) => {
            if snap.unreadable_entries > 0 {
                report.findings.push(Finding {
                    severity: Severity::Problem,
                    path: threads.clone(),
                    detail: format!(
                        "{} entr(ies) are not readable threads (kept in the file as they are)",
                        snap.unreadable_entries
                    ),
                });
            }
            for p in snap.problems {
                report.findings.push(Finding {
                    severity: Severity::Problem,
                    path: threads.clone(),
                    detail: format!("{p}; the next open skips only that record and reports it"),
                });
            }
        }
        Err(e) => report.findings.push(Finding {
            severity: Severity::Problem,
            path: threads.clone(),
            detail: e.to_string(),
        }),
    }
    // The timeline's own check (integrity, schema, log damage, quarantined copies), on a
    // read-only open so nothing is recovered or repaired.
    let timeline = config.timeline_path();
    if timeline.exists() {
        let options = coral_timeline::Options {
            access: coral_timeline::Access::ReadOnly,
            ..Default::default()
        };
        let problems = coral_timeline::Timeline::open_with(&timeline, options)
            .and_then(|t| t.check())
            .unwrap_or_else(|e| {
                vec![coral_timeline::Problem {
                    file: timeline.clone(),
                    detail: format!("cannot be checked: {e}"),
                }]
            });
        for p in problems {
            report.findings.push(Finding {
                severity: Severity::Problem,
                path: p.file,
                detail: p.detail,
            });
        }
    }
    report
        .findings
        .sort_by_key(|f| std::cmp::Reverse(f.severity));
    report
}
