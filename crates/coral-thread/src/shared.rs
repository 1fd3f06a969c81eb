//! The state behind a `ThreadStore`, kept in step with its file and shared with its writer
//! thread: every change journaled before it is acknowledged, the file merged, checkpoints.
//!
//! Every call first checks the file's fingerprint and merges what other processes wrote. A
//! change is applied in memory, then its record is written to this process's journal
//! (`own_journal.rs`); only then does the call return, so an acknowledged change survives
//! SIGKILL (and a power cut too with [`coral_base::SyncPolicy::Always`]). If the record cannot be written
//! the change is taken back and the call fails. The threads file itself (the original's,
//! shared with it) is a checkpoint: rewritten at most once per coalescing window by a
//! background thread (or by the call when there is none), by `flush()` and on drop, under the
//! lock file, after merging the file again if it changed and absorbing the journals of ended
//! processes (`recover.rs`). After a checkpoint the journal is emptied and absorbed journals
//! are removed; a clean close removes the store's own journal.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use coral_base::IoContext;

use crate::codec;
use crate::error::{Error, Result};
use crate::lock;
use crate::merge::{absorb, merge};
use crate::options::StoreOptions;
use crate::own_journal::OwnJournal;
use crate::recover::{self, Claimed};
use crate::set::{ThreadSet, Undo};
use crate::threads_file::{self, Fingerprint};

/// How often (clock seconds) a store also looks for ended processes' journals when it only
/// reads; checkpoints always look. A directory listing per second is noise next to the
/// calls, and a reader then shows a killed writer's last steps within about a second.
pub(crate) const RESCAN_SECONDS: f64 = 1.0;

/// What one store holds behind its mutex.
pub(crate) struct State {
    pub(crate) set: ThreadSet,
    /// The version of the file `set` last absorbed (read or written); `None` before the file
    /// exists.
    known: Option<Fingerprint>,
    /// An open handle on that version. While it is open, "did the file change?" is one
    /// `fstat`: a writer that renames a new file into place leaves it with no links, and an
    /// in-place edit changes its size or mtime. (A path `stat` costs about three times as
    /// much, and a call that changes one thread does little else.)
    handle: Option<File>,
    pub(crate) dirty: bool,
    /// Clock time of the last write.
    last_write: Option<f64>,
    pub(crate) writes: u64,
    pub(crate) reloads: u64,
    pub(crate) stop: bool,
    /// This store's journal, created by the first change (so a store that only reads works
    /// in a read-only directory).
    pub(crate) journal: Option<OwnJournal>,
    /// Ended processes' journals absorbed into `set`, held until a checkpoint holds them.
    pub(crate) claimed: Vec<Claimed>,
    /// Clock time of the last look for ended processes' journals.
    last_scan: Option<f64>,
    pub(crate) journal_records: u64,
    pub(crate) recovered_records: u64,
    pub(crate) removed_temp_files: u64,
    pub(crate) repairs: Vec<String>,
}

/// The part of a store its writer thread shares: the paths, the options, the state and the
/// condition variable that wakes the writer.
pub(crate) struct Shared {
    pub(crate) path: PathBuf,
    lock_path: PathBuf,
    pub(crate) options: StoreOptions,
    state: Mutex<State>,
    pub(crate) wake: Condvar,
}

impl Shared {
    /// The state of a store on the threads file at `path` that has read nothing yet.
    pub(crate) fn new(path: PathBuf, options: StoreOptions) -> Shared {
        let mut lock_name = path.file_name().unwrap_or_default().to_os_string();
        lock_name.push(".lock");
        Shared {
            lock_path: path.with_file_name(lock_name),
            path,
            state: Mutex::new(State {
                set: ThreadSet::default(),
                known: None,
                handle: None,
                dirty: false,
                last_write: None,
                writes: 0,
                reloads: 0,
                stop: false,
                journal: None,
                claimed: Vec::new(),
                last_scan: None,
                journal_records: 0,
                recovered_records: 0,
                removed_temp_files: 0,
                repairs: Vec::new(),
            }),
            wake: Condvar::new(),
            options,
        }
    }

    /// Write pending changes to the threads file now (they are already in the journal).
    pub(crate) fn flush(&self) -> Result<()> {
        let pending = self.lock_state().dirty;
        if pending {
            self.write_pending()?;
        }
        Ok(())
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the state cannot leave it half-changed in a way a write would
        // make worse (operations validate before they change anything), so keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn read<T>(&self, f: impl FnOnce(&ThreadSet) -> Result<T>) -> Result<T> {
        let mut st = self.lock_state();
        self.refresh(&mut st, self.options.clock.now())?;
        f(&st.set)
    }

    /// Run a change on thread `target` (`None`: the change creates a thread): merge the file,
    /// apply `f` (which returns its result and whether it changed anything), journal what it
    /// changed, then write the threads file now or schedule the write. If the journal
    /// cannot be written, the change is taken back and the call fails.
    pub(crate) fn change<T>(
        &self,
        target: Option<&str>,
        f: impl FnOnce(&mut ThreadSet, f64) -> Result<(T, bool)>,
    ) -> Result<T> {
        let (out, write_now) = {
            let mut guard = self.lock_state();
            let st = &mut *guard;
            let now = self.options.clock.now();
            self.refresh(st, now)?;
            let undo = match target {
                None => Undo::Created,
                Some(id) => st
                    .set
                    .undo_point(id)
                    .ok_or_else(|| Error::NotFound(id.to_string()))?,
            };
            let (out, changed) = f(&mut st.set, now)?;
            if !changed {
                return Ok(out);
            }
            if let Err(e) = self.record(st, &undo) {
                st.set.undo(undo);
                return Err(e);
            }
            let was_pending = std::mem::replace(&mut st.dirty, true);
            let due = st
                .last_write
                .is_none_or(|w| now < w || now - w >= self.options.coalesce.as_secs_f64());
            if self.options.background_flush {
                // The writer thread writes the file; the call returns as soon as the record
                // is in the journal. Only the first pending change wakes it: it then sleeps
                // to the end of the window by itself (waking it on every change costs a
                // context switch and lock contention per call).
                if !was_pending {
                    self.wake.notify_all();
                }
                (out, false)
            } else {
                (out, due)
            }
        };
        if write_now {
            // The change is journaled (acknowledged); a checkpoint that fails now (lock held
            // elsewhere, disk full) stays pending and is retried, it does not undo the change.
            let _ = self.write_pending();
        }
        Ok(out)
    }

    /// Journal the change `undo` can take back: the changed thread's scalars and the steps
    /// it gained.
    fn record(&self, st: &mut State, undo: &Undo) -> Result<()> {
        let (index, new_steps) = match undo {
            Undo::Created => {
                let i = st.set.len() - 1;
                (i, st.set.threads[i].steps.len())
            }
            Undo::Changed(c) => (
                c.index,
                st.set.threads[c.index].steps.len().saturating_sub(c.steps),
            ),
        };
        if st.journal.is_none() {
            st.journal = Some(OwnJournal::create(&self.path, self.options.sync)?);
        }
        if let Some(j) = st.journal.as_mut() {
            j.append(&st.set.threads[index], new_steps)?;
        }
        st.journal_records += 1;
        Ok(())
    }

    /// Merge what other processes wrote: the file if it changed, and, at most once per
    /// [`RESCAN_SECONDS`], the journals of processes that ended since.
    fn refresh(&self, st: &mut State, now: f64) -> Result<()> {
        self.refresh_file(st)?;
        if st
            .last_scan
            .is_none_or(|t| now < t || now - t >= RESCAN_SECONDS)
        {
            self.recover(st)?;
        }
        Ok(())
    }

    /// Merge the file into memory if it changed since we last read or wrote it.
    pub(crate) fn refresh_file(&self, st: &mut State) -> Result<()> {
        if !threads_file::changed(&self.path, st.handle.as_ref(), st.known)? {
            return Ok(());
        }
        // Read through one handle so the fingerprint matches the bytes even if the file is
        // replaced meanwhile.
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                // Removed: keep what we hold; the next write recreates the file.
                st.handle = None;
                st.known = None;
                return Ok(());
            }
            Err(e) => return Err(e).at(&self.path).map_err(Error::from),
        };
        let fp = Fingerprint::of(&file.metadata().at(&self.path)?);
        if st.known == Some(fp) {
            // Same version (we lost the handle, not the content).
            st.handle = Some(file);
            return Ok(());
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).at(&self.path)?;
        let disk = codec::parse(&bytes, &self.path)?;
        merge(&mut st.set, disk);
        st.known = Some(fp);
        st.handle = Some(file);
        st.reloads += 1;
        Ok(())
    }

    /// Claim and absorb the journals of ended processes. Their records become pending
    /// changes of this store; the journals are removed after the checkpoint that holds them.
    pub(crate) fn recover(&self, st: &mut State) -> Result<()> {
        st.last_scan = Some(self.options.clock.now());
        let own = st.journal.as_ref().map(|j| j.path().to_path_buf());
        let mut skip: Vec<&Path> = st.claimed.iter().map(|c| c.path.as_path()).collect();
        if let Some(own) = &own {
            skip.push(own);
        }
        let found = recover::claim_ended(&self.path, &skip)?;
        for (claimed, scan) in found {
            let name = claimed
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            for p in &scan.problems {
                st.repairs
                    .push(format!("thread journal {name} of an ended process: {p}"));
            }
            st.recovered_records += scan.records.len() as u64;
            for record in scan.records {
                absorb(&mut st.set, record);
            }
            st.claimed.push(claimed);
            // Even with nothing new in it, the journal goes only after a checkpoint.
            if !std::mem::replace(&mut st.dirty, true) {
                // A read found it: wake the writer thread, which sleeps until something is
                // pending.
                self.wake.notify_all();
            }
        }
        Ok(())
    }

    /// Write the threads file under the lock file: merge what others wrote (the file and
    /// ended processes' journals), write a temp file, rename it in; then empty this store's
    /// journal and remove the absorbed ones, whose records the file now holds. The lock file
    /// is taken before the state, so that while another process holds it, this one's calls
    /// still read and change threads in memory (and journal them).
    fn write_pending(&self) -> Result<()> {
        let _lock = lock::acquire(
            &self.lock_path,
            self.options.lock_wait,
            self.options.stale_after,
        )?;
        let mut st = self.lock_state();
        let st = &mut *st;
        self.refresh_file(st)?;
        self.recover(st)?;
        if !st.dirty {
            return Ok(()); // another thread of this process wrote it meanwhile
        }
        st.removed_temp_files += threads_file::remove_orphaned_temp_files(&self.path);
        let bytes = codec::to_bytes(&st.set);
        let (fp, handle) = threads_file::write(&self.path, &bytes, self.options.sync)?;
        st.known = Some(fp);
        st.handle = Some(handle);
        st.dirty = false;
        st.last_write = Some(self.options.clock.now());
        st.writes += 1;
        // The state lock was held since the set was serialised: every record in the journal
        // is in the file.
        if let Some(j) = st.journal.as_mut() {
            j.clear();
        }
        for c in st.claimed.drain(..) {
            if let Some(note) = c.finish() {
                st.repairs.push(note);
            }
        }
        Ok(())
    }

    /// The background writer: sleeps until there is a pending change, waits for the end of
    /// the coalescing window, writes. A failed write is retried a window later.
    pub(crate) fn flush_loop(&self) {
        let window = self.options.coalesce;
        loop {
            let mut st = self.lock_state();
            loop {
                if st.stop {
                    return;
                }
                if !st.dirty {
                    st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                let now = self.options.clock.now();
                let due = st.last_write.map_or(now, |w| w + window.as_secs_f64());
                if now >= st.last_write.unwrap_or(now) && now < due {
                    let wait = Duration::from_secs_f64((due - now).min(window.as_secs_f64()));
                    st = self
                        .wake
                        .wait_timeout(st, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    continue;
                }
                break;
            }
            drop(st);
            if self.write_pending().is_err() {
                let st = self.lock_state();
                if st.stop {
                    return;
                }
                let retry = window.max(Duration::from_millis(100));
                drop(self.wake.wait_timeout(st, retry));
            }
        }
    }
}
