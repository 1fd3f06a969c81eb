//! `ThreadStore`: a [`ThreadSet`] kept in step with its file, shared by several processes.
//!
//! Every call first checks the file's fingerprint and merges what other processes wrote.
//! Changes are written at once when the last write is older than the coalescing window, else
//! by a background thread at the end of the window; `flush()` and drop write what is pending.
//! A write takes the lock file, merges the file again if it changed, writes a temp file and
//! renames it over the threads file.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crate::codec;
use crate::error::{IoContext, Result};
use crate::lock;
use crate::merge::merge;
use crate::model::{Status, StatusReport, ThreadView};
use crate::set::ThreadSet;

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
    /// At most one write per this window (default 250 ms). Zero writes every change at once.
    pub coalesce: Duration,
    /// Write pending changes from a background thread at the end of the window (default
    /// true). Without it, pending changes wait for the next call, `flush()` or drop.
    pub background_flush: bool,
    /// How long a writer waits for the lock file (default 11 s: the stale age plus a margin,
    /// so a lock left by a writer that died just as we started waiting turns stale in time).
    pub lock_wait: Duration,
    /// Age after which a lock file whose PID is dead may be removed (default 10 s).
    pub stale_after: Duration,
    /// fsync the file and its directory on each write (default true).
    pub sync: bool,
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
            sync: true,
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
}

struct Shared {
    path: PathBuf,
    lock_path: PathBuf,
    options: StoreOptions,
    state: Mutex<State>,
    wake: Condvar,
}

/// Threads stored in one file and shared with other processes (SPEC 8). All methods take
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

/// I/O counters, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreCounters {
    /// Writes of the file by this store.
    pub writes: u64,
    /// Reads of the file that another writer had changed (including the first read).
    pub reloads: u64,
    /// Changes not written yet.
    pub pending: bool,
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
            }),
            wake: Condvar::new(),
            options,
        });
        shared.refresh(&mut shared.lock_state())?;
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
        }
    }

    /// `thread_create(title, summary?, parent_thread_id?, by?)`.
    pub fn create(
        &self,
        title: &str,
        summary: Option<&str>,
        parent_thread_id: Option<&str>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        self.shared.change(|set, now| {
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
        self.shared.change(|set, now| {
            let t = set.advance(thread_id, note, done, by, now)?;
            Ok((t.view(), true))
        })
    }

    /// `thread_interrupt(thread_id, reason?)`: status interrupted, plus a step
    /// `[中断] reason`.
    pub fn interrupt(&self, thread_id: &str, reason: Option<&str>) -> Result<ThreadView> {
        self.shared.change(|set, now| {
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
        self.shared.change(|set, now| {
            let changed = set.set_status(thread_id, status, now)?;
            Ok((set.view(thread_id)?, changed))
        })
    }

    /// `thread_link(child_id, parent_id)`: no self-links, no cycles.
    pub fn link(&self, child_id: &str, parent_id: &str) -> Result<()> {
        self.shared.change(|set, now| {
            let changed = set.link(child_id, parent_id, now)?;
            Ok(((), changed))
        })
    }

    /// Every thread's view in file order, after merging the file (for checks and exports).
    pub fn all(&self) -> Result<Vec<ThreadView>> {
        self.shared.read(|set| Ok(set.views()))
    }

    /// Write pending changes now.
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
        // Errors cannot be reported from drop; callers who care call flush() first.
        let _ = self.flush();
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
        self.refresh(&mut st)?;
        f(&st.set)
    }

    /// Run a change: merge the file, apply `f` (which returns its result and whether it
    /// changed anything), then write now or schedule the write.
    fn change<T>(&self, f: impl FnOnce(&mut ThreadSet, f64) -> Result<(T, bool)>) -> Result<T> {
        let (out, write_now) = {
            let mut st = self.lock_state();
            self.refresh(&mut st)?;
            let now = self.options.clock.now();
            let (out, changed) = f(&mut st.set, now)?;
            let mut write_now = false;
            if changed {
                let was_pending = std::mem::replace(&mut st.dirty, true);
                write_now = st
                    .last_write
                    .is_none_or(|w| now < w || now - w >= self.options.coalesce.as_secs_f64());
                if !write_now && !was_pending {
                    // Only the first pending change wakes the writer: it then sleeps to the
                    // end of the window by itself, and waking it on every change costs a
                    // context switch and lock contention per call.
                    self.wake.notify_all();
                }
            }
            (out, write_now)
        };
        if write_now {
            self.write_pending()?;
        }
        Ok(out)
    }

    fn current(&self) -> Result<Option<Fingerprint>> {
        match std::fs::metadata(&self.path) {
            Ok(m) => Ok(Some(Fingerprint::of(&m))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).at(&self.path),
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

    /// Merge the file into memory if it changed since we last read or wrote it.
    fn refresh(&self, st: &mut State) -> Result<()> {
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
            Err(e) => return Err(e).at(&self.path),
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

    /// Write pending changes under the lock file: merge what others wrote, write a temp file,
    /// rename it in. The lock file is taken before the state, so that while another process
    /// holds it, this one's calls still read and change threads in memory.
    fn write_pending(&self) -> Result<()> {
        let _lock = lock::acquire(
            &self.lock_path,
            self.options.lock_wait,
            self.options.stale_after,
        )?;
        let mut st = self.lock_state();
        if !st.dirty {
            return Ok(()); // another thread of this process wrote it meanwhile
        }
        let st = &mut *st;
        self.refresh(st)?;
        let bytes = codec::to_bytes(&st.set);
        let (fp, handle) = self.write_file(&bytes)?;
        st.known = Some(fp);
        st.handle = Some(handle);
        st.dirty = false;
        st.last_write = Some(self.options.clock.now());
        st.writes += 1;
        Ok(())
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
            if self.options.sync {
                f.sync_all().at(&tmp)?;
            }
            // The renamed file keeps its inode, size and mtime: this is its fingerprint.
            let fp = Fingerprint::of(&f.metadata().at(&tmp)?);
            std::fs::rename(&tmp, &self.path).at(&self.path)?;
            if self.options.sync {
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
