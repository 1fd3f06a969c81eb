//! Copying a data directory's store files out (`coral backup`) and back in (`coral restore`),
//! while other processes use it: the caller holds the write lock, so no process is between
//! reading and writing them.
//!
//! A backup is a plain data directory (every file under its default name, openable with
//! `--data-dir`) plus a manifest the caller writes, naming each file with its size and CRC32.
//! A restore writes every file atomically, the journal last: a running process notices the new
//! journal at its next call and reloads everything from the files. While it runs, a marker
//! file says a restore is under way, so an interrupted one is finished, never half-trusted.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::files::{self, StorePaths};

/// One file of a backup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupFile {
    /// Its name in the backup directory (the default name of that kind of file).
    pub name: String,
    /// Bytes.
    pub bytes: u64,
    /// CRC32 of its bytes, 8 hex digits.
    pub crc32: String,
}

impl BackupFile {
    /// The entry of a file called `name` holding `bytes`.
    pub fn of(name: &str, bytes: &[u8]) -> BackupFile {
        BackupFile {
            name: name.to_string(),
            bytes: bytes.len() as u64,
            crc32: format!("{:08x}", crc32fast::hash(bytes)),
        }
    }
}

/// The store's files with their names in a backup, the journal last.
fn files_of(paths: &StorePaths) -> Vec<(PathBuf, String)> {
    let default = StorePaths::in_dir("");
    let mut out: Vec<(PathBuf, String)> = paths
        .data_files()
        .iter()
        .zip(default.data_files())
        .filter(|((label, _), _)| *label != "journal")
        .map(|((_, p), (_, d))| (p.to_path_buf(), name_of(d)))
        .collect();
    out.push((paths.vector_meta(), name_of(&default.vector_meta())));
    out.push((paths.wal.clone(), name_of(&default.wal)));
    out
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Copy the store's files of `paths` into `dest` (an existing directory) as one consistent
/// version: under the write lock, so no process changes them meanwhile (on a directory this
/// process cannot write, under a shared lock on the existing lock file). Returns what was
/// copied; the caller writes the manifest.
pub fn backup(paths: &StorePaths, dest: &Path) -> Result<Vec<BackupFile>> {
    let _lock = DirWriteLock::take(paths)?;
    copy_out(paths, dest)
}

/// Replace the store's files of `paths` with the backup files `listed` in `src` (checked
/// against the manifest first; a mismatch changes nothing). Runs under the write lock, so
/// processes using the directory see either the old files or the restored ones, and reload at
/// their next call. A marker file guards the install: an interrupted restore keeps the
/// directory from opening until it is run again.
pub fn restore(paths: &StorePaths, src: &Path, listed: &[BackupFile]) -> Result<()> {
    let checked = read_checked(src, listed)?;
    let mut lock = crate::lock::WriteLock::open(&paths.lock)?;
    lock.lock()?;
    let marker = restore_marker(paths);
    let note = serde_json::json!({
        "restoring_from": src.display().to_string(),
        "note": "a restore was interrupted: run `coral restore` with this directory again"
    });
    files::write_atomic(&marker, note.to_string().as_bytes(), true)?;
    install(paths, &checked)?;
    std::fs::remove_file(&marker).at(&marker)?;
    files::sync_dir(&paths.dir)?;
    Ok(())
}

/// The write lock for the length of a backup, or a shared lock where the directory cannot be
/// written.
struct DirWriteLock {
    _exclusive: Option<crate::lock::WriteLock>,
    _shared: Option<std::fs::File>,
}

impl DirWriteLock {
    fn take(paths: &StorePaths) -> Result<DirWriteLock> {
        match crate::lock::WriteLock::open(&paths.lock) {
            Ok(mut l) => {
                l.lock()?;
                Ok(DirWriteLock {
                    _exclusive: Some(l),
                    _shared: None,
                })
            }
            Err(_) => {
                let shared = std::fs::File::open(&paths.lock).ok();
                if let Some(f) = &shared {
                    f.lock_shared().at(&paths.lock)?;
                }
                Ok(DirWriteLock {
                    _exclusive: None,
                    _shared: shared,
                })
            }
        }
    }
}

fn copy_out(paths: &StorePaths, dest: &Path) -> Result<Vec<BackupFile>> {
    let mut out = Vec::new();
    for (from, name) in files_of(paths) {
        let bytes = match std::fs::read(&from) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).at(&from),
        };
        files::write_atomic(&dest.join(&name), &bytes, true)?;
        out.push(BackupFile::of(&name, &bytes));
    }
    Ok(out)
}

/// Read the files `listed` from `src`, each checked against its size and CRC32.
pub fn read_checked(src: &Path, listed: &[BackupFile]) -> Result<Vec<(BackupFile, Vec<u8>)>> {
    let mut out = Vec::with_capacity(listed.len());
    for f in listed {
        if f.name.contains('/') || f.name.contains('\\') || f.name.starts_with('.') {
            return Err(Error::InvalidInput(format!(
                "the backup's manifest names {:?}, which is not a plain file name",
                f.name
            )));
        }
        let path = src.join(&f.name);
        let bytes = std::fs::read(&path).at(&path)?;
        let got = BackupFile::of(&f.name, &bytes);
        if got != *f {
            return Err(Error::Corrupted {
                path,
                line: 0,
                detail: format!(
                    "does not match the backup's manifest ({} bytes, crc {}; the manifest says \
                     {} bytes, crc {}): the backup is damaged, nothing was restored",
                    got.bytes, got.crc32, f.bytes, f.crc32
                ),
            });
        }
        out.push((got, bytes));
    }
    Ok(out)
}

/// The marker of a restore under way, in the data directory.
pub fn restore_marker(paths: &StorePaths) -> PathBuf {
    paths.dir.join(".coral_restore.json")
}

/// Install checked backup files over the store's files: every listed file written atomically,
/// the journal last; store files the backup does not have are removed. The caller holds the
/// write lock and has written the marker.
fn install(paths: &StorePaths, checked: &[(BackupFile, Vec<u8>)]) -> Result<()> {
    let find = |name: &str| checked.iter().find(|(f, _)| f.name == name);
    for (target, name) in files_of(paths) {
        let is_journal = target == paths.wal;
        match find(&name) {
            Some((_, bytes)) => files::write_atomic(&target, bytes, true)?,
            None if is_journal => {
                // A backup always has a journal; without one, start an empty one so running
                // processes still see a new file and reload.
                files::write_atomic(&target, b"", true)?
            }
            None => match std::fs::remove_file(&target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).at(&target),
            },
        }
    }
    Ok(())
}
