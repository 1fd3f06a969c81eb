//! This process's thread journal: `.<threads file>.journal-<pid>-<random>` beside the threads
//! file, created at the first change, held with an exclusive `flock` for the life of the store
//! (so other processes can tell it from the journal of a process that died), appended before
//! every acknowledgement, emptied after each checkpoint and removed on a clean close.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::journal;
use crate::model::Thread;
use coral_base::{SyncPolicy, Syncer};

/// The start of every journal's file name for `threads_path`: `.<file name>.journal-`.
pub(crate) fn name_prefix(threads_path: &Path) -> OsString {
    let mut p = OsString::from(".");
    p.push(threads_path.file_name().unwrap_or_default());
    p.push(".journal-");
    p
}

/// The directory holding the threads file (and its journals).
pub(crate) fn dir_of(threads_path: &Path) -> &Path {
    match threads_path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Whether `path` still names the file `file` is open on (a recovering process may have
/// removed it between our create and our lock).
pub(crate) fn names(path: &Path, file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(path), file.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
    }
}

/// Write all of `buf` at `offset` (one `pwrite` for a record-sized buffer).
fn write_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.write_all(buf)
    }
}

/// The open, locked journal of this store.
pub(crate) struct OwnJournal {
    path: PathBuf,
    file: Arc<File>,
    /// Bytes of complete records; the next record is written here (positioned writes, so a
    /// failed write's partial bytes are overwritten by the next record).
    len: u64,
    /// The number of the next record. Numbers keep counting across truncations, and each
    /// truncated journal starts with a begin record naming its first number, so a record
    /// missing anywhere after the first is detected.
    next_seq: u64,
    policy: SyncPolicy,
    syncer: Option<Syncer>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for OwnJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnJournal")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

fn not_recorded(path: &Path, source: std::io::Error) -> Error {
    Error::NotRecorded {
        path: path.to_path_buf(),
        source,
    }
}

impl OwnJournal {
    /// Create and lock a new journal beside `threads_path`.
    pub(crate) fn create(threads_path: &Path, policy: SyncPolicy) -> Result<OwnJournal> {
        let dir = dir_of(threads_path);
        let prefix = name_prefix(threads_path);
        let mut last_err = None;
        for _ in 0..16 {
            let mut name = prefix.clone();
            // The random part keeps a later process that reuses this PID from ever opening
            // the name of a journal a dead one left.
            name.push(format!(
                "{}-{}",
                std::process::id(),
                &crate::ids::new_thread_id()[..8]
            ));
            let path = dir.join(name);
            let file = match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(f) => f,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    // A fresh data directory: make it and retry.
                    std::fs::create_dir_all(dir).map_err(|e| not_recorded(dir, e))?;
                    last_err = Some(e);
                    continue;
                }
                Err(e) => return Err(not_recorded(&path, e)),
            };
            match file.try_lock() {
                Ok(()) => {}
                // A recovering process took it for a dead one's between our create and our
                // lock; it will remove it. Take another name.
                Err(std::fs::TryLockError::WouldBlock) => continue,
                Err(std::fs::TryLockError::Error(e)) => {
                    let _ = std::fs::remove_file(&path);
                    return Err(not_recorded(&path, e));
                }
            }
            if !names(&path, &file) {
                continue; // removed by a recovering process before we locked it
            }
            if policy.syncs() {
                // The journal's name must survive a power cut as well as its records.
                File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| not_recorded(dir, e))?;
            }
            let file = Arc::new(file);
            let syncer = match policy {
                SyncPolicy::Interval(every) => Some(Syncer::start(
                    Arc::clone(&file),
                    every,
                    "coral-threads-sync",
                )),
                _ => None,
            };
            return Ok(OwnJournal {
                path,
                file,
                len: 0,
                next_seq: 1,
                policy,
                syncer,
                buf: Vec::with_capacity(1024),
            });
        }
        Err(not_recorded(
            &dir.join(prefix),
            last_err.unwrap_or_else(|| {
                std::io::Error::new(ErrorKind::AlreadyExists, "no free journal name")
            }),
        ))
    }

    /// The journal file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Write the record of one operation (the thread as it left it, with its last `new_steps`
    /// steps). When this returns, the record survives the process being killed (and, with
    /// [`SyncPolicy::Always`], a power cut). On error nothing of it remains in the journal.
    pub(crate) fn append(&mut self, thread: &Thread, new_steps: usize) -> Result<()> {
        self.buf.clear();
        if self.len == 0 {
            journal::encode_begin(self.next_seq, &mut self.buf);
        }
        journal::encode_thread(self.next_seq, thread, new_steps, &mut self.buf);
        let written = write_at(&self.file, &self.buf, self.len).and_then(|()| {
            if self.policy == SyncPolicy::Always {
                self.file.sync_data()
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            // Leave no part of the record behind (a reader would report it as damage).
            let _ = self.file.set_len(self.len);
            return Err(not_recorded(&self.path, e));
        }
        self.len += self.buf.len() as u64;
        self.next_seq += 1;
        if let Some(s) = &self.syncer {
            s.mark();
        }
        Ok(())
    }

    /// Empty the journal: a checkpoint holds every record in it. A failure leaves the records
    /// (replaying them again is harmless), so it is not an error for the caller.
    pub(crate) fn clear(&mut self) {
        if self.len > 0 && self.file.set_len(0).is_ok() {
            self.len = 0;
        }
    }

    /// Remove the journal (clean close, everything checkpointed), then release the lock.
    pub(crate) fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
        drop(self);
    }
}

#[cfg(test)]
impl OwnJournal {
    /// A journal whose writes go to `/dev/full` (every write fails with ENOSPC). Its path is
    /// `name`, a file that does not exist, so that removing the journal never touches the
    /// device.
    pub(crate) fn failing_for_tests(name: PathBuf) -> OwnJournal {
        assert!(!name.exists());
        let file = OpenOptions::new().write(true).open("/dev/full").unwrap();
        OwnJournal {
            path: name,
            file: Arc::new(file),
            len: 0,
            next_seq: 1,
            policy: SyncPolicy::Never,
            syncer: None,
            buf: Vec::new(),
        }
    }
}
