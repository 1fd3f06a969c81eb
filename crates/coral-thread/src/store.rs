//! `ThreadStore`: a [`ThreadSet`] kept in step with its file, shared by several processes,
//! with every change journaled before it is acknowledged.
//!
//! Every call first checks the file's fingerprint and merges what other processes wrote. A
//! change is applied in memory, then its record is written to this process's journal
//! (`own_journal.rs`); only then does the call return, so an acknowledged change survives
//! SIGKILL (and a power cut too with [`SyncPolicy::Always`]). If the record cannot be written
//! the change is taken back and the call fails. The threads file itself (the original's,
//! shared with it) is a checkpoint: rewritten at most once per coalescing window by a
//! background thread (or by the call when there is none), by `flush()` and on drop, under the
//! lock file, after merging the file again if it changed and absorbing the journals of ended
//! processes (`recover.rs`). After a checkpoint the journal is emptied and absorbed journals
//! are removed; a clean close removes the store's own journal.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crate::codec;
use coral_base::IoContext;

use crate::error::{Error, Result};
use crate::lock;
use crate::merge::{absorb, merge};
use crate::model::{Status, StatusReport, ThreadView};
use crate::own_journal::OwnJournal;
use crate::recover::{self, Claimed};
use crate::set::{ThreadSet, Undo};
use coral_base::SyncPolicy;

/// How often (clock seconds) a store also looks for ended processes' journals when it only
/// reads; checkpoints always look. A directory listing per second is noise next to the
/// calls, and a reader then shows a killed writer's last steps within about a second.
const RESCAN_SECONDS: f64 = 1.0;

/// The source of "now" (Unix seconds) for timestamps and the coalescing window. Tests pass a
/// clock they control; everything else uses [`Clock::system`].
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> f64 + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(Arc::new(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0)
        }))
    }

    /// A clock reading `f`.
    pub fn new(f: impl Fn() -> f64 + Send + Sync + 'static) -> Clock {
        Clock(Arc::new(f))
    }

    /// The current time.
    pub fn now(&self) -> f64 {
        (self.0)()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// How a [`ThreadStore`] writes.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// At most one write of the threads file per this window (default 250 ms). Zero writes
    /// every change at once. (Every change is in the journal when its call returns.)
    pub coalesce: Duration,
    /// Write the threads file from a background thread, at once when the last write is older
    /// than the window, else at its end (default true): calls then never wait for the file.
    /// Without it, the call that finds the window over writes the file itself, and changes in
    /// the window wait for the next call, `flush()` or drop.
    pub background_flush: bool,
    /// How long a writer waits for the lock file (default 11 s: the stale age plus a margin,
    /// so a lock left by a writer that died just as we started waiting turns stale in time).
    pub lock_wait: Duration,
    /// Age after which a lock file whose PID is dead may be removed (default 10 s).
    pub stale_after: Duration,
    /// When journal records reach the disk (default `Interval(1 s)`, like `storage.sync`).
    /// Every change is written to the journal before it returns whatever the policy; the
    /// policy only decides fsync. Checkpoints of the threads file fsync the file and its
    /// directory unless the policy is [`SyncPolicy::Never`].
    pub sync: SyncPolicy,
    /// The clock (default: the system clock).
    pub clock: Clock,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            coalesce: Duration::from_millis(250),
            background_flush: true,
            lock_wait: Duration::from_secs(11),
            stale_after: Duration::from_secs(10),
            sync: SyncPolicy::default(),
            clock: Clock::system(),
        }
    }
}

/// What identifies one version of the file: size and mtime (the original's fingerprint), plus
/// the inode, which every rename-into-place changes, so two writes in one mtime tick that
/// happen to leave the same size are still told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Fingerprint {
    fn of(meta: &std::fs::Metadata) -> Fingerprint {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Fingerprint {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        }
    }
}

struct State {
    set: ThreadSet,
    /// The version of the file `set` last absorbed (read or written); `None` before the file
    /// exists.
    known: Option<Fingerprint>,
    /// An open handle on that version. While it is open, "did the file change?" is one
    /// `fstat`: a writer that renames a new file into place leaves it with no links, and an
    /// in-place edit changes its size or mtime. (A path `stat` costs about three times as
    /// much, and a call that changes one thread does little else.)
    handle: Option<File>,
    dirty: bool,
    /// Clock time of the last write.
    last_write: Option<f64>,
    writes: u64,
    reloads: u64,
    stop: bool,
    /// This store's journal, created by the first change (so a store that only reads works
    /// in a read-only directory).
    journal: Option<OwnJournal>,
    /// Ended processes' journals absorbed into `set`, held until a checkpoint holds them.
    claimed: Vec<Claimed>,
    /// Clock time of the last look for ended processes' journals.
    last_scan: Option<f64>,
    journal_records: u64,
    recovered_records: u64,
    removed_temp_files: u64,
    repairs: Vec<String>,
}

struct Shared {
    path: PathBuf,
    lock_path: PathBuf,
    options: StoreOptions,
    state: Mutex<State>,
    wake: Condvar,
}

/// Threads stored in one file and shared with other processes (docs/threads.md). All methods take
/// `&self`; the store is `Send + Sync`.
pub struct ThreadStore {
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ThreadStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadStore")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

/// What [`ThreadStore::import`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ImportCounts {
    /// Threads in the source.
    pub found: usize,
    /// Threads this file did not have.
    pub added: usize,
    /// Threads it had that gained steps or newer fields.
    pub merged: usize,
    /// Threads it already had exactly.
    pub unchanged: usize,
    /// Steps added in all.
    pub steps_added: usize,
    /// Elements of the source that are not readable threads (left out).
    pub unreadable_entries: usize,
}

/// What importing one thread did.
enum Imported {
    /// New here, with this many steps.
    Added(usize),
    /// Known here: steps added, and whether anything changed.
    Merged(usize, bool),
}

/// I/O counters, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreCounters {
    /// Writes of the file by this store.
    pub writes: u64,
    /// Reads of the file that another writer had changed (including the first read).
    pub reloads: u64,
    /// Changes not written to the threads file yet (they are in a journal).
    pub pending: bool,
    /// Records this store wrote to its journal (one per change).
    pub journal_records: u64,
    /// Records replayed from the journals of ended processes.
    pub recovered_records: u64,
    /// Ended processes' journals absorbed and waiting for a checkpoint to remove them.
    pub claimed_journals: usize,
    /// Temp files of writers killed mid-checkpoint removed by this store's checkpoints.
    pub removed_temp_files: u64,
}

impl ThreadStore {
    /// Open the threads file at `path` with the default options. A missing file is an empty
    /// store (the file is created by the first change); a file that cannot be read as threads
    /// is an error naming it.
    pub fn open(path: impl AsRef<Path>) -> Result<ThreadStore> {
        ThreadStore::open_with(path, StoreOptions::default())
    }

    /// Open with explicit options.
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<ThreadStore> {
        let path = path.as_ref().to_path_buf();
        let mut lock_name = path.file_name().unwrap_or_default().to_os_string();
        lock_name.push(".lock");
        let shared = Arc::new(Shared {
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
        });
        {
            let mut st = shared.lock_state();
            shared.refresh_file(&mut st)?;
            shared.recover(&mut st)?;
        }
        let flusher = if shared.options.background_flush {
            let s = Arc::clone(&shared);
            Some(
                std::thread::Builder::new()
                    .name("coral-threads-flush".into())
                    .spawn(move || s.flush_loop())
                    .map_err(|e| crate::Error::Io {
                        path: shared.path.clone(),
                        source: e,
                    })?,
            )
        } else {
            None
        };
        Ok(ThreadStore { shared, flusher })
    }

    /// The threads file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Threads known to this process (archived included), without looking at the file: O(1).
    pub fn len(&self) -> usize {
        self.shared.lock_state().set.len()
    }

    /// Threads in the file now (archived included): what [`ThreadStore::len`] counts after
    /// catching up with other processes' changes (an `fstat`, and a read only when the file
    /// changed).
    pub fn count(&self) -> Result<usize> {
        self.shared.read(|set| Ok(set.len()))
    }

    /// True when there are no threads.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// File elements kept verbatim because they are not readable threads.
    pub fn unreadable_entries(&self) -> usize {
        self.shared.lock_state().set.unparsed.len()
    }

    /// Write and read counters.
    pub fn counters(&self) -> StoreCounters {
        let st = self.shared.lock_state();
        StoreCounters {
            writes: st.writes,
            reloads: st.reloads,
            pending: st.dirty,
            journal_records: st.journal_records,
            recovered_records: st.recovered_records,
            claimed_journals: st.claimed.len(),
            removed_temp_files: st.removed_temp_files,
        }
    }

    /// Damage found in ended processes' journals (a damaged or missing record, one sentence
    /// each, naming the journal) and where damaged journals were moved. Empty when all is
    /// well; a record that fails its check is skipped on its own, never silently.
    pub fn repairs(&self) -> Vec<String> {
        self.shared.lock_state().repairs.clone()
    }

    /// This store's journal file, once the first change created it.
    pub fn journal_path(&self) -> Option<PathBuf> {
        self.shared
            .lock_state()
            .journal
            .as_ref()
            .map(|j| j.path().to_path_buf())
    }

    /// `thread_create(title, summary?, parent_thread_id?, by?)`.
    pub fn create(
        &self,
        title: &str,
        summary: Option<&str>,
        parent_thread_id: Option<&str>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        self.shared.change(None, |set, now| {
            let t = set.create(title, summary, parent_thread_id, by, now)?;
            Ok((t.view(), true))
        })
    }

    /// `thread_status(thread_id?, include_archived?, query?)`: one thread by id, or every
    /// non-archived thread (archived too when asked) matching `query`, active first, then
    /// interrupted, newest update first, each with its children.
    pub fn status(
        &self,
        thread_id: Option<&str>,
        include_archived: bool,
        query: Option<&str>,
    ) -> Result<StatusReport> {
        self.shared
            .read(|set| set.status(thread_id, include_archived, query))
    }

    /// `thread_advance(thread_id, note, done?, by?)`: append a step; `done` omitted is
    /// detected from the note ([`crate::looks_completed`]).
    pub fn advance(
        &self,
        thread_id: &str,
        note: &str,
        done: Option<bool>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        self.shared.change(Some(thread_id), |set, now| {
            let t = set.advance(thread_id, note, done, by, now)?;
            Ok((t.view(), true))
        })
    }

    /// `thread_interrupt(thread_id, reason?)`: status interrupted, plus a step
    /// `[中断] reason`.
    pub fn interrupt(&self, thread_id: &str, reason: Option<&str>) -> Result<ThreadView> {
        self.shared.change(Some(thread_id), |set, now| {
            let t = set.interrupt(thread_id, reason, now)?;
            Ok((t.view(), true))
        })
    }

    /// `thread_archive(thread_id)`: hide from the overview; kept forever.
    pub fn archive(&self, thread_id: &str) -> Result<ThreadView> {
        self.set_status(thread_id, Status::Archived)
    }

    /// `thread_resume(thread_id)`: back to active (from interrupted or archived).
    pub fn resume(&self, thread_id: &str) -> Result<ThreadView> {
        self.set_status(thread_id, Status::Active)
    }

    fn set_status(&self, thread_id: &str, status: Status) -> Result<ThreadView> {
        self.shared.change(Some(thread_id), |set, now| {
            let changed = set.set_status(thread_id, status, now)?;
            Ok((set.view(thread_id)?, changed))
        })
    }

    /// `thread_link(child_id, parent_id)`: no self-links, no cycles.
    pub fn link(&self, child_id: &str, parent_id: &str) -> Result<()> {
        self.shared.change(Some(child_id), |set, now| {
            let changed = set.link(child_id, parent_id, now)?;
            Ok(((), changed))
        })
    }

    /// Bring in the threads of another threads file (an original Coral's `coral_threads.json`,
    /// with any journals beside it): threads merged by id and steps by `step_id`, exactly as
    /// processes sharing one file merge, each thread journaled like any change. Running it
    /// again adds nothing. The source is only read.
    pub fn import(&self, source: &Path) -> Result<ImportCounts> {
        let snapshot = crate::snapshot::snapshot(source)?;
        let theirs = codec::parse(&snapshot.bytes, source)?;
        let mut counts = ImportCounts {
            found: theirs.threads.len(),
            unreadable_entries: theirs.unparsed.len(),
            ..ImportCounts::default()
        };
        for thread in theirs.threads {
            let id = thread.thread_id.clone();
            // A thread new here is journaled as a creation, one we have as a change; another
            // process may create it in between, so a creation that finds it looks again.
            let mut known = self.shared.read(|set| Ok(set.position(&id).is_some()))?;
            loop {
                let candidate = thread.clone();
                let outcome = self.shared.change(known.then_some(id.as_str()), |set, _| {
                    let before = match set.position(&id) {
                        Some(_) if !known => return Ok((None, false)),
                        Some(i) => Some((set.threads[i].steps.len(), set.view(&id)?)),
                        None => None,
                    };
                    absorb(set, candidate);
                    let after = set.view(&id)?;
                    Ok(match before {
                        None => (Some(Imported::Added(after.step_count)), true),
                        Some((steps, view)) => {
                            let changed = view != after;
                            let new_steps = after.step_count.saturating_sub(steps);
                            (Some(Imported::Merged(new_steps, changed)), changed)
                        }
                    })
                })?;
                match outcome {
                    None => known = true,
                    Some(Imported::Added(steps)) => {
                        counts.added += 1;
                        counts.steps_added += steps;
                        break;
                    }
                    Some(Imported::Merged(steps, changed)) => {
                        if changed {
                            counts.merged += 1;
                        } else {
                            counts.unchanged += 1;
                        }
                        counts.steps_added += steps;
                        break;
                    }
                }
            }
        }
        self.flush()?;
        Ok(counts)
    }

    /// Every thread's view in file order, after merging the file (for checks and exports).
    pub fn all(&self) -> Result<Vec<ThreadView>> {
        self.shared.read(|set| Ok(set.views()))
    }

    /// Write pending changes to the threads file now (they are already in the journal).
    pub fn flush(&self) -> Result<()> {
        let pending = self.shared.lock_state().dirty;
        if pending {
            self.shared.write_pending()?;
        }
        Ok(())
    }
}

impl Drop for ThreadStore {
    fn drop(&mut self) {
        self.shared.lock_state().stop = true;
        self.shared.wake.notify_all();
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
        // Errors cannot be reported from drop; callers who care call flush() first. If the
        // checkpoint fails, the journal stays (unlocked once closed) for the next process.
        let flushed = self.flush().is_ok();
        let mut st = self.shared.lock_state();
        if let Some(j) = st.journal.take()
            && flushed
            && !st.dirty
        {
            j.remove();
        }
    }
}

impl Shared {
    fn lock_state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the state cannot leave it half-changed in a way a write would
        // make worse (operations validate before they change anything), so keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read<T>(&self, f: impl FnOnce(&ThreadSet) -> Result<T>) -> Result<T> {
        let mut st = self.lock_state();
        self.refresh(&mut st, self.options.clock.now())?;
        f(&st.set)
    }

    /// Run a change on thread `target` (`None`: the change creates a thread): merge the file,
    /// apply `f` (which returns its result and whether it changed anything), journal what it
    /// changed, then write the threads file now or schedule the write. If the journal
    /// cannot be written, the change is taken back and the call fails.
    fn change<T>(
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

    fn current(&self) -> Result<Option<Fingerprint>> {
        match std::fs::metadata(&self.path) {
            Ok(m) => Ok(Some(Fingerprint::of(&m))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).at(&self.path).map_err(Error::from),
        }
    }

    /// Whether the file may differ from the version `st` absorbed.
    fn changed(&self, st: &State) -> Result<bool> {
        #[cfg(unix)]
        if let Some(f) = &st.handle {
            return Ok(match f.metadata() {
                Ok(m) => {
                    std::os::unix::fs::MetadataExt::nlink(&m) == 0
                        || Some(Fingerprint::of(&m)) != st.known
                }
                // A handle the file system no longer honours (NFS: stale): look again.
                Err(_) => true,
            });
        }
        Ok(self.current()? != st.known)
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
    fn refresh_file(&self, st: &mut State) -> Result<()> {
        if !self.changed(st)? {
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
    fn recover(&self, st: &mut State) -> Result<()> {
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
        st.removed_temp_files += self.remove_orphaned_temp_files();
        let bytes = codec::to_bytes(&st.set);
        let (fp, handle) = self.write_file(&bytes)?;
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

    /// Remove the temp files (`.<file>.tmp-<pid>`) that writers killed between writing and
    /// renaming left. Only call this holding the lock file: then no writer is between the two.
    /// Returns how many were removed.
    fn remove_orphaned_temp_files(&self) -> u64 {
        let dir = crate::own_journal::dir_of(&self.path);
        let Some(prefix) = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .map(|n| format!(".{n}.tmp-"))
        else {
            return 0;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let orphan = name
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
            if orphan && std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    fn write_file(&self, bytes: &[u8]) -> Result<(Fingerprint, File)> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(self.path.file_name().unwrap_or_default());
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let tmp = dir.join(tmp_name);
        let result = (|| {
            let mut f = File::create(&tmp).at(&tmp)?;
            f.write_all(bytes).at(&tmp)?;
            if self.options.sync.syncs() {
                f.sync_all().at(&tmp)?;
            }
            // The renamed file keeps its inode, size and mtime: this is its fingerprint.
            let fp = Fingerprint::of(&f.metadata().at(&tmp)?);
            std::fs::rename(&tmp, &self.path).at(&self.path)?;
            if self.options.sync.syncs() {
                File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
            }
            Ok((fp, f))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// The background writer: sleeps until there is a pending change, waits for the end of
    /// the coalescing window, writes. A failed write is retried a window later.
    fn flush_loop(&self) {
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

#[cfg(test)]
impl ThreadStore {
    /// Leave as SIGKILL would: nothing more is written, the journal is closed (its lock
    /// released) but stays on disk, and absorbed journals are released unremoved.
    fn crash(mut self) {
        self.shared.lock_state().stop = true;
        self.shared.wake.notify_all();
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
        let mut st = self.shared.lock_state();
        st.journal = None;
        st.claimed.clear();
        st.dirty = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// No background writer and a window no test reaches: the file is written only by
    /// `flush()`, so every change after the first sits in the journal alone.
    fn options() -> StoreOptions {
        StoreOptions {
            coalesce: Duration::from_secs(3600),
            background_flush: false,
            lock_wait: Duration::from_secs(5),
            sync: SyncPolicy::Never,
            ..StoreOptions::default()
        }
    }

    fn journals(dir: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(".journal-"))
            .collect();
        v.sort();
        v
    }

    fn step_ids(store: &ThreadStore) -> Vec<String> {
        store
            .all()
            .unwrap()
            .iter()
            .flat_map(|t| t.steps.iter().map(|s| s.step_id.to_string()))
            .collect()
    }

    fn unique(ids: &[String]) -> bool {
        ids.iter().collect::<HashSet<_>>().len() == ids.len()
    }

    /// A store that created a thread, flushed once, then advanced `n` times and was killed:
    /// the advances are only in its journal. Returns the thread id and the acknowledged step
    /// ids.
    fn killed_writer(path: &Path, n: usize) -> (String, Vec<String>) {
        let a = ThreadStore::open_with(path, options()).unwrap();
        let id = a.create("killed", None, None, None).unwrap().thread_id;
        a.flush().unwrap();
        let acked = (0..n)
            .map(|i| {
                let t = a
                    .advance(&id, &format!("step {i}"), Some(false), None)
                    .unwrap();
                t.steps.last().unwrap().step_id.to_string()
            })
            .collect();
        assert!(a.counters().pending);
        a.crash();
        (id, acked)
    }

    #[test]
    fn a_killed_stores_acknowledged_steps_are_recovered_by_the_next_opener() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let (id, acked) = killed_writer(&path, 5);
        let on_file = codec::parse(&std::fs::read(&path).unwrap(), &path).unwrap();
        assert_eq!(
            on_file.get(&id).unwrap().steps.len(),
            0,
            "only in the journal"
        );
        assert_eq!(journals(dir.path()).len(), 1);

        let b = ThreadStore::open_with(&path, options()).unwrap();
        assert_eq!(b.counters().recovered_records, 5);
        assert_eq!(b.counters().claimed_journals, 1);
        assert_eq!(
            step_ids(&b),
            acked,
            "every step, once, in the writer's order"
        );
        assert!(b.repairs().is_empty(), "{:?}", b.repairs());
        b.flush().unwrap();
        assert!(journals(dir.path()).is_empty(), "absorbed, then removed");
        drop(b);
        let on_file = codec::parse(&std::fs::read(&path).unwrap(), &path).unwrap();
        let ids: Vec<String> = on_file
            .get(&id)
            .unwrap()
            .steps
            .iter()
            .map(|s| s.step_id.to_string())
            .collect();
        assert_eq!(ids, acked);
    }

    #[test]
    fn replaying_records_the_file_already_holds_duplicates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let a = ThreadStore::open_with(&path, options()).unwrap();
        let id = a.create("t", None, None, None).unwrap().thread_id;
        for i in 0..4 {
            a.advance(&id, &format!("s{i}"), None, None).unwrap();
        }
        let journal = a.journal_path().unwrap();
        let bytes = std::fs::read(&journal).unwrap();
        // Killed between the checkpoint's rename and the journal's truncation: the file and
        // the journal both hold the records.
        a.flush().unwrap();
        a.crash();
        std::fs::write(&journal, &bytes).unwrap();
        let b = ThreadStore::open_with(&path, options()).unwrap();
        // (The create was checkpointed at once, emptying the journal: 4 advances remain.)
        assert_eq!(b.counters().recovered_records, 4);
        let ids = step_ids(&b);
        assert_eq!(ids.len(), 4);
        assert!(unique(&ids));
        let t = b.all().unwrap().remove(0);
        assert_eq!(
            t.steps.iter().map(|s| s.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
    }

    #[test]
    fn steps_written_elsewhere_meanwhile_stay_first_and_recovered_ones_follow() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let (id, acked) = killed_writer(&path, 3);
        // A live store advanced the thread after the kill, before anyone recovered: it
        // cannot claim a journal until it looks (its next scan), so make it look now.
        let live = ThreadStore::open_with(&path, StoreOptions { ..options() }).unwrap();
        let mine = live.advance(&id, "live", None, None).unwrap();
        live.flush().unwrap();
        let ids = step_ids(&live);
        assert_eq!(ids.len(), 4);
        assert!(unique(&ids));
        // The recovered steps were absorbed at open, before the live advance.
        assert_eq!(&ids[..3], &acked[..]);
        assert_eq!(ids[3], *mine.steps.last().unwrap().step_id);
    }

    #[test]
    fn a_reader_replays_an_ended_journal_and_its_writer_thread_checkpoints_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let now = Arc::new(Mutex::new(100.0_f64));
        let at = Arc::clone(&now);
        let reader = ThreadStore::open_with(
            &path,
            StoreOptions {
                coalesce: Duration::from_millis(10),
                background_flush: true,
                clock: Clock::new(move || *at.lock().unwrap()),
                ..options()
            },
        )
        .unwrap();
        let (id, acked) = killed_writer(&path, 3);
        // Within a second of its last look the reader does not look again ...
        let seen = |r: &ThreadStore| match r.status(Some(&id), false, None).unwrap() {
            StatusReport::One(v) => v.steps.len(),
            StatusReport::Many(_) => unreachable!(),
        };
        assert_eq!(seen(&reader), 0);
        // ... after it, the killed writer's steps show, and the writer thread writes them.
        *now.lock().unwrap() += RESCAN_SECONDS;
        assert_eq!(seen(&reader), 3);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !journals(dir.path()).is_empty() {
            assert!(std::time::Instant::now() < deadline, "never checkpointed");
            std::thread::sleep(Duration::from_millis(5));
        }
        let on_file = codec::parse(&std::fs::read(&path).unwrap(), &path).unwrap();
        let ids: Vec<String> = on_file
            .get(&id)
            .unwrap()
            .steps
            .iter()
            .map(|s| s.step_id.to_string())
            .collect();
        assert_eq!(ids, acked);
    }

    #[test]
    fn a_checkpoint_removes_temp_files_killed_writers_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        for name in [
            ".coral_threads.json.tmp-123",
            ".coral_threads.json.tmp-4567",
            ".coral_threads.json.tmp-x", // not ours
            "coral_threads.json.tmp",    // the original's, written under the lock file
            ".coral_wal.jsonl.tmp-123",  // another file's
        ] {
            std::fs::write(dir.path().join(name), "partial").unwrap();
        }
        let store = ThreadStore::open_with(&path, options()).unwrap();
        store.create("t", None, None, None).unwrap();
        assert_eq!(store.counters().removed_temp_files, 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("tmp"))
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".coral_threads.json.tmp-x",
                ".coral_wal.jsonl.tmp-123",
                "coral_threads.json.tmp"
            ]
        );
    }

    #[test]
    fn a_live_stores_journal_is_never_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let a = ThreadStore::open_with(&path, options()).unwrap();
        let id = a.create("alive", None, None, None).unwrap().thread_id;
        a.advance(&id, "pending", None, None).unwrap();
        let b = ThreadStore::open_with(&path, options()).unwrap();
        assert_eq!(b.counters().claimed_journals, 0);
        assert_eq!(b.counters().recovered_records, 0);
        b.create("b's own", None, None, None).unwrap();
        b.flush().unwrap();
        assert!(a.journal_path().unwrap().exists(), "a's journal untouched");
        assert_eq!(journals(dir.path()).len(), 2);
        // a's pending step reaches the file at a's checkpoint, next to b's thread.
        a.flush().unwrap();
        let c = ThreadStore::open_with(&path, options()).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(step_ids(&c).len(), 1);
        // Clean closes remove their journals; the file then holds everything.
        drop((a, b, c));
        assert!(journals(dir.path()).is_empty());
    }

    #[test]
    fn the_journal_is_emptied_by_each_checkpoint_and_numbers_keep_counting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let a = ThreadStore::open_with(&path, options()).unwrap();
        assert!(a.journal_path().is_none(), "reading creates no journal");
        let id = a.create("t", None, None, None).unwrap().thread_id;
        let journal = a.journal_path().unwrap();
        a.flush().unwrap();
        assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
        a.advance(&id, "after the checkpoint", None, None).unwrap();
        let scan = crate::journal::scan(&std::fs::read(&journal).unwrap());
        assert!(scan.problems.is_empty());
        assert_eq!(scan.records.len(), 1);
        let text = std::fs::read_to_string(&journal).unwrap();
        assert!(text.contains(r#""op":"begin","seq":2"#), "{text}");
        assert!(text.contains(r#""op":"thread","seq":2"#), "{text}");
        assert_eq!(a.counters().journal_records, 2);
    }

    #[test]
    fn damage_in_an_ended_journal_is_reported_and_skips_only_the_damaged_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let (_, acked) = killed_writer(&path, 4);
        let journal = journals(dir.path()).remove(0);
        let text = std::fs::read_to_string(&journal).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        assert_eq!(lines.len(), 5, "begin + 4 advances");
        lines[2] = lines[2].replace("step 1", "step X"); // the CRC no longer matches
        lines.remove(3); // record of "step 2" vanishes
        std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
        let b = ThreadStore::open_with(&path, options()).unwrap();
        let repairs = b.repairs();
        assert_eq!(repairs.len(), 2, "{repairs:?}");
        assert!(
            repairs[0].contains("line 3: checksum mismatch"),
            "{repairs:?}"
        );
        assert!(repairs[1].contains("1 record(s) missing"), "{repairs:?}");
        let name = journal.file_name().unwrap().to_string_lossy().into_owned();
        assert!(repairs.iter().all(|r| r.contains(&name)), "{repairs:?}");
        assert_eq!(step_ids(&b), [acked[0].clone(), acked[3].clone()]);
        b.flush().unwrap();
        let left = journals(dir.path());
        assert_eq!(left.len(), 1);
        assert!(left[0].to_string_lossy().ends_with(".corrupt"), "{left:?}");
        assert!(b.repairs().last().unwrap().contains("kept as"));
        // A quarantined journal is not read again.
        let c = ThreadStore::open_with(&path, options()).unwrap();
        assert_eq!(c.counters().recovered_records, 0);
        assert!(c.repairs().is_empty());
    }

    #[test]
    fn a_torn_last_line_is_dropped_without_a_report() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let (_, acked) = killed_writer(&path, 3);
        let journal = journals(dir.path()).remove(0);
        let mut bytes = std::fs::read(&journal).unwrap();
        bytes.extend_from_slice(br#"{"crc":"0000"#); // a fourth record, cut off mid-write
        std::fs::write(&journal, bytes).unwrap();
        let b = ThreadStore::open_with(&path, options()).unwrap();
        assert!(b.repairs().is_empty(), "{:?}", b.repairs());
        assert_eq!(step_ids(&b), acked);
    }

    #[test]
    fn a_change_that_cannot_be_journaled_is_taken_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let store = ThreadStore::open_with(&path, options()).unwrap();
        let parent = store.create("parent", None, None, None).unwrap();
        let t = store.create("kept", None, None, None).unwrap();
        store.advance(&t.thread_id, "one", None, None).unwrap();
        let before = store.all().unwrap();
        let records = store.counters().journal_records;
        // Every write of the journal now fails with ENOSPC, as on a full disk.
        let real = store
            .shared
            .lock_state()
            .journal
            .replace(OwnJournal::failing_for_tests(
                dir.path().join("no-such-journal"),
            ));
        let full = |r: Result<()>| match r {
            Err(Error::NotRecorded { source, .. }) => {
                assert_eq!(source.raw_os_error(), Some(28), "{source}")
            }
            other => panic!("expected NotRecorded, got {other:?}"),
        };
        let id = t.thread_id.as_str();
        full(store.advance(id, "lost", None, None).map(drop));
        full(store.interrupt(id, Some("lost")).map(drop));
        full(store.archive(id).map(drop));
        full(store.link(id, &parent.thread_id));
        full(store.create("lost", None, None, None).map(drop));
        assert_eq!(store.all().unwrap(), before, "every change was taken back");
        assert_eq!(store.counters().journal_records, records);
        // A no-op change needs no record and still succeeds.
        store.resume(id).unwrap();
        // Back to the real journal: changes are recorded again.
        store.shared.lock_state().journal = real;
        store.advance(id, "recorded", None, None).unwrap();
        assert_eq!(store.counters().journal_records, records + 1);
    }
}
