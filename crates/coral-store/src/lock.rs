//! Data-directory locks (docs/storage.md). Any number of processes share a directory:
//!
//! - [`Attachment`]: a shared `flock` on `.coral.attach`, held by every process with the store
//!   open. It tells a closing process whether it is alone (then it may checkpoint), and it keeps
//!   out tools that need the directory to themselves ([`DirLock`], e.g. moving files).
//! - [`WriteLock`]: an exclusive `flock` on `.coral.lock`, held for the length of one call:
//!   catching up with the journal, deciding, appending. The kernel releases it when a process
//!   dies, so a killed writer never blocks the others.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use coral_base::IoContext;

fn open_rw(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .at(path)
        .map_err(Into::into)
}

fn dir_of(path: &Path) -> PathBuf {
    path.parent().unwrap_or(Path::new(".")).to_path_buf()
}

/// This process has the store open: a shared lock on `.coral.attach` (which keeps exclusive
/// users out) plus an exclusive lock on a file of its own, `.coral.attach-<pid>-<n>`, by which
/// others can tell it is alive. (A single shared lock cannot answer "am I alone?": converting
/// a `flock` from shared to exclusive drops it first when the conversion fails.)
#[derive(Debug)]
pub struct Attachment {
    shared: File,
    own: File,
    own_path: PathBuf,
    dir: PathBuf,
    path: PathBuf,
}

const OWN_PREFIX: &str = ".coral.attach-";

impl Attachment {
    /// Attach. Fails with [`Error::Locked`] while a tool holds the directory exclusively.
    pub fn attach(path: &Path) -> Result<Attachment> {
        let shared = open_rw(path)?;
        match shared.try_lock_shared() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::Locked {
                    dir: dir_of(path),
                    pid: None,
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e).at(path).map_err(Into::into),
        }
        let dir = dir_of(path);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let own_path = dir.join(format!("{OWN_PREFIX}{}-{nanos}", std::process::id()));
        let own = open_rw(&own_path)?;
        own.lock().at(&own_path)?;
        Ok(Attachment {
            shared,
            own,
            own_path,
            dir,
            path: path.to_path_buf(),
        })
    }

    /// True when no other live process has the directory open. Files left by processes that
    /// died are removed on the way.
    pub fn alone(&self) -> bool {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return false;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let is_attach = name.to_str().is_some_and(|n| n.starts_with(OWN_PREFIX));
            let path = entry.path();
            if !is_attach || path == self.own_path {
                continue;
            }
            let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else {
                continue; // removed meanwhile
            };
            match file.try_lock() {
                Ok(()) => {
                    // Its owner is gone.
                    let _ = std::fs::remove_file(&path);
                    let _ = file.unlock();
                }
                Err(_) => return false,
            }
        }
        true
    }

    /// The shared attachment file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.own_path);
        let _ = self.own.unlock();
        let _ = self.shared.unlock();
    }
}

/// Exclusive use of a data directory: no process has the store open, and none can open it
/// until this is dropped. For operations such as moving the data files.
#[derive(Debug)]
pub struct DirLock {
    file: File,
    path: PathBuf,
}

impl DirLock {
    /// Take the directory for this process alone, or fail with [`Error::Locked`] naming the
    /// directory when any process has it open.
    pub fn acquire(attach_path: &Path) -> Result<DirLock> {
        let mut file = open_rw(attach_path)?;
        match file.try_lock() {
            Ok(()) => {
                // A note for whoever wonders who holds it.
                let _ = file.set_len(0);
                let _ = file.seek(SeekFrom::Start(0));
                let _ = write!(file, "{}", std::process::id());
                Ok(DirLock {
                    file,
                    path: attach_path.to_path_buf(),
                })
            }
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked {
                dir: dir_of(attach_path),
                pid: None,
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(e).at(attach_path).map_err(Into::into),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

/// The write lock: exclusive among processes, taken per call.
#[derive(Debug)]
pub struct WriteLock {
    file: Option<File>,
    path: PathBuf,
    held: bool,
}

impl WriteLock {
    /// Open the lock file (not yet locked).
    pub fn open(path: &Path) -> Result<WriteLock> {
        Ok(WriteLock {
            file: Some(open_rw(path)?),
            path: path.to_path_buf(),
            held: false,
        })
    }

    /// A write lock of a read-only store: never taken; [`WriteLock::lock`] fails.
    pub fn detached(path: &Path) -> WriteLock {
        WriteLock {
            file: None,
            path: path.to_path_buf(),
            held: false,
        }
    }

    /// Block until this process holds the lock. Returns false if it already did.
    pub fn lock(&mut self) -> Result<bool> {
        if self.held {
            return Ok(false);
        }
        let Some(file) = &self.file else {
            return Err(Error::ReadOnly {
                dir: dir_of(&self.path),
                reason: "opened without write access".into(),
            });
        };
        file.lock().at(&self.path)?;
        self.held = true;
        Ok(true)
    }

    /// Release the lock (a no-op when not held).
    pub fn unlock(&mut self) {
        if self.held {
            if let Some(f) = &self.file {
                let _ = f.unlock();
            }
            self.held = false;
        }
    }

    /// Whether this process holds it now.
    pub fn held(&self) -> bool {
        self.held
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        self.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_share_and_exclusive_use_waits_for_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".coral.attach");
        let a = Attachment::attach(&path).unwrap();
        assert!(a.alone());
        let b = Attachment::attach(&path).unwrap();
        assert!(!a.alone() && !b.alone());
        let err = DirLock::acquire(&path).unwrap_err();
        assert!(err.to_string().contains("in use"), "{err}");
        drop(a);
        assert!(b.alone());
        drop(b);
        let exclusive = DirLock::acquire(&path).unwrap();
        assert!(matches!(
            Attachment::attach(&path),
            Err(Error::Locked { .. })
        ));
        drop(exclusive);
        Attachment::attach(&path).unwrap();
    }

    #[test]
    fn the_write_lock_is_exclusive_and_reentrant_safe() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".coral.lock");
        let mut a = WriteLock::open(&path).unwrap();
        let b = WriteLock::open(&path).unwrap();
        assert!(a.lock().unwrap());
        assert!(!a.lock().unwrap(), "already held");
        assert!(
            b.file.as_ref().unwrap().try_lock().is_err(),
            "another holder is kept out"
        );
        a.unlock();
        assert!(b.file.as_ref().unwrap().try_lock().is_ok());
    }
}
