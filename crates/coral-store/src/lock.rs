//! The data-directory lock (`.coral.lock`): one writing process per directory for now.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// An exclusive advisory lock on a data directory, released when dropped (or by the kernel when
/// the process dies, so a killed writer never blocks the next one).
#[derive(Debug)]
pub struct DirLock {
    file: File,
    path: PathBuf,
}

impl DirLock {
    /// Take the lock at `path` or fail with [`Error::Locked`] naming the holder's PID.
    pub fn acquire(path: &Path) -> Result<DirLock> {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .at(path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(Error::Locked {
                    dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
                    pid: text.trim().parse().ok(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e).at(path),
        }
        file.set_len(0).at(path)?;
        file.seek(SeekFrom::Start(0)).at(path)?;
        write!(file, "{}", std::process::id()).at(path)?;
        Ok(DirLock {
            file,
            path: path.to_path_buf(),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".coral.lock");
        let first = DirLock::acquire(&path).unwrap();
        let err = DirLock::acquire(&path).unwrap_err();
        match &err {
            Error::Locked { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
            other => panic!("expected Locked, got {other:?}"),
        }
        assert!(err.to_string().contains(&std::process::id().to_string()));
        drop(first);
        DirLock::acquire(&path).unwrap();
    }
}
