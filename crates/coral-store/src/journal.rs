//! The write-ahead journal (`coral_wal.jsonl`): an open journal appending checksummed records
//! (`journal_lines.rs`) under a sync policy (`coral_base::SyncPolicy`).
//!
//! One record per line. Every record is idempotent (a put carries the full item and vector, a
//! touch carries absolute counters), so replaying a journal over a checkpoint that already
//! contains some of it is harmless.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use coral_base::{IoContext, SyncPolicy, Syncer};

use crate::error::Result;
use crate::journal_lines::encode_line;
use crate::record::Record;

/// An open journal, appending.
pub struct Journal {
    path: PathBuf,
    /// `None` for a journal read but not opened for writing (a read-only store).
    file: Option<Arc<File>>,
    len: u64,
    /// Sequence number of the next record appended.
    next_seq: u64,
    policy: SyncPolicy,
    syncer: Option<Syncer>,
    generation: u64,
    buf: Vec<u8>,
}

impl Journal {
    /// Open an existing journal for appending at `valid_len` (dropping any torn tail);
    /// `last_seq` is the highest sequence number its valid part holds.
    pub fn open(
        path: &Path,
        valid_len: u64,
        generation: u64,
        last_seq: Option<u64>,
        policy: SyncPolicy,
    ) -> Result<Journal> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .at(path)?;
        let on_disk = file.metadata().at(path)?.len();
        if on_disk != valid_len {
            file.set_len(valid_len).at(path)?;
            if policy.syncs() {
                file.sync_all().at(path)?;
            }
        }
        let next_seq = last_seq.map_or(1, |s| s.saturating_add(1));
        let mut journal = Journal::wrap(path, file, valid_len, next_seq, generation, policy);
        if valid_len == 0 {
            journal.next_seq = 0;
            journal.append(&[Record::Begin { generation }])?;
        }
        Ok(journal)
    }

    /// A journal that was read (its valid part is `len` bytes, the last record `last_seq`) but
    /// is not open for writing: every write fails with [`crate::Error::ReadOnly`].
    pub fn detached(path: &Path, len: u64, generation: u64, last_seq: Option<u64>) -> Journal {
        Journal {
            path: path.to_path_buf(),
            file: None,
            len,
            next_seq: last_seq.map_or(0, |s| s.saturating_add(1)),
            policy: SyncPolicy::Never,
            syncer: None,
            generation,
            buf: Vec::new(),
        }
    }

    fn file(&self) -> Result<&Arc<File>> {
        self.file.as_ref().ok_or_else(|| crate::Error::ReadOnly {
            dir: self.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            reason: "opened without write access".into(),
        })
    }

    /// Atomically replace the journal with a fresh one for `generation`.
    pub fn reset(&mut self, generation: u64) -> Result<()> {
        self.file()?;
        let mut buf = Vec::new();
        encode_line(0, &Record::Begin { generation }, &mut buf);
        crate::files::write_atomic(&self.path, &buf, self.policy.syncs())?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .at(&self.path)?;
        let file = Arc::new(file);
        if let Some(s) = &self.syncer {
            s.replace(Arc::clone(&file));
        }
        self.file = Some(file);
        self.len = buf.len() as u64;
        self.next_seq = 1;
        self.generation = generation;
        Ok(())
    }

    fn wrap(
        path: &Path,
        file: File,
        len: u64,
        next_seq: u64,
        generation: u64,
        policy: SyncPolicy,
    ) -> Journal {
        let file = Arc::new(file);
        let syncer = match policy {
            SyncPolicy::Interval(every) => {
                Some(Syncer::start(Arc::clone(&file), every, "coral-wal-sync"))
            }
            _ => None,
        };
        Journal {
            path: path.to_path_buf(),
            file: Some(file),
            len,
            next_seq,
            policy,
            syncer,
            generation,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Append records in one write; when this returns they survive a killed process (and, with
    /// [`SyncPolicy::Always`], a power cut). When it fails, nothing was appended: a partial
    /// write, or a write whose fsync failed, is cut off again, so a failed call never leaves a
    /// record that a later open would replay.
    pub fn append(&mut self, records: &[Record]) -> Result<()> {
        let file = Arc::clone(self.file()?);
        self.buf.clear();
        let mut seq = self.next_seq;
        for r in records {
            encode_line(seq, r, &mut self.buf);
            seq += 1;
        }
        // Position explicitly: the file may have been truncated by recovery.
        use std::io::{Seek, SeekFrom};
        (&*file).seek(SeekFrom::Start(self.len)).at(&self.path)?;
        let written = (&*file)
            .write_all(&self.buf)
            .and_then(|()| match self.policy {
                SyncPolicy::Always => file.sync_data(),
                _ => Ok(()),
            });
        if let Err(e) = written {
            // Leave no record behind that the caller was told failed. If even the cut fails,
            // say so: the record may come back at the next open.
            if let Err(cut) = file.set_len(self.len) {
                return Err(crate::Error::Io {
                    path: self.path.clone(),
                    source: std::io::Error::new(
                        e.kind(),
                        format!(
                            "{e}; cutting the journal back to {} bytes also failed ({cut}), so \
                             the failed write may still be replayed",
                            self.len
                        ),
                    ),
                });
            }
            return Err(e).at(&self.path).map_err(Into::into);
        }
        self.len += self.buf.len() as u64;
        self.next_seq = seq;
        if let Some(s) = &self.syncer {
            s.mark();
        }
        Ok(())
    }

    /// Identity of the file this journal writes (a checkpoint elsewhere replaces the file).
    pub fn ino(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map_or(0, |m| m.ino())
    }

    /// Bytes from `offset` to the end of the file, as other processes left them.
    pub fn read_from(&self, offset: u64) -> Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file: &File = self.file()?;
        file.seek(SeekFrom::Start(offset)).at(&self.path)?;
        let mut out = Vec::new();
        file.read_to_end(&mut out).at(&self.path)?;
        Ok(out)
    }

    /// Take `len` as the journal's end: records up to it are applied, the last of them
    /// numbered `last_seq`. Anything after it (a torn line left by a process that died
    /// mid-append) is cut off; only call this holding the write lock, when no append can be in
    /// progress.
    pub fn set_end(&mut self, len: u64, last_seq: Option<u64>) -> Result<()> {
        let file = self.file()?;
        let on_disk = file.metadata().at(&self.path)?.len();
        if on_disk > len {
            file.set_len(len).at(&self.path)?;
        }
        self.len = len;
        self.note_seq(last_seq);
        Ok(())
    }

    /// Move the applied end forward without touching the file (records up to `len`, the last
    /// numbered `last_seq`, were read and applied outside the write lock).
    pub fn advance_to(&mut self, len: u64, last_seq: Option<u64>) {
        if len > self.len {
            self.len = len;
            self.note_seq(last_seq);
        }
    }

    fn note_seq(&mut self, last_seq: Option<u64>) {
        if let Some(s) = last_seq {
            self.next_seq = self.next_seq.max(s.saturating_add(1));
        }
    }

    /// The sequence number of the last record applied (`None` before the first).
    pub fn last_seq(&self) -> Option<u64> {
        self.next_seq.checked_sub(1)
    }

    /// fsync now (nothing to do when not open for writing).
    pub fn sync(&self) -> Result<()> {
        match &self.file {
            Some(f) => f.sync_data().at(&self.path).map_err(Into::into),
            None => Ok(()),
        }
    }

    /// Bytes in the journal.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The checkpoint generation this journal continues.
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn closing_a_journal_at_once_does_not_wait_for_the_sync_interval() {
        // A short-lived process (one CLI command) closes its journal before the background
        // fsync thread first waits; the stop must not be lost, or the close waits an interval.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal.jsonl");
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for _ in 0..20 {
                let policy = SyncPolicy::Interval(Duration::from_secs(3600));
                let mut j = Journal::open(&path, 0, 1, None, policy).unwrap();
                j.append(&[Record::Delete { id: "x".into() }]).unwrap();
                drop(j);
                std::fs::remove_file(&path).unwrap();
            }
            let _ = done.send(());
        });
        assert!(
            finished.recv_timeout(Duration::from_secs(120)).is_ok(),
            "a closed journal kept its syncer waiting for the interval"
        );
    }
}
