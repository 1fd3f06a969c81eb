//! Watching the config file (docs/configuration.md, "Changing settings while Coral runs"): a
//! file watcher marks it dirty, and an mtime + size check every
//! `reload.check_interval_seconds` catches what the watcher misses. What to do with a changed
//! file is the engine's (`engine/reconfigure.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use notify::Watcher as _;

type Fingerprint = (SystemTime, u64);

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[derive(Default)]
struct ReloadState {
    fingerprint: Option<Fingerprint>,
    last_check: Option<Instant>,
    error: Option<String>,
    restart_needed: Vec<String>,
}

/// Watches one config file.
pub struct Reloader {
    path: PathBuf,
    dirty: Arc<AtomicBool>,
    state: Mutex<ReloadState>,
    watcher: Option<notify::RecommendedWatcher>,
}

impl Reloader {
    /// Watch the file at `path` (its directory, so that a save by rename is seen).
    pub fn new(path: &Path) -> Reloader {
        let dirty = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&dirty);
        let name = path.file_name().map(|n| n.to_os_string());
        // The directory is watched, not the file: editors save by renaming over it.
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event
                && event.paths.iter().any(|p| p.file_name() == name.as_deref())
            {
                flag.store(true, Ordering::Release);
            }
        })
        .ok()
        .and_then(|mut w| {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            w.watch(dir, notify::RecursiveMode::NonRecursive).ok()?;
            Some(w)
        });
        Reloader {
            path: path.to_path_buf(),
            dirty,
            state: Mutex::new(ReloadState {
                fingerprint: fingerprint(path),
                ..ReloadState::default()
            }),
            watcher,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ReloadState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record the file as it is now (after Coral itself wrote it).
    pub fn mark_seen(&self) {
        self.state().fingerprint = fingerprint(&self.path);
    }

    /// The last reload problem, if the config in force is not the file's.
    pub fn error(&self) -> Option<String> {
        self.state().error.clone()
    }

    /// Settings changed in the file that only a restart applies.
    pub fn restart_needed(&self) -> Vec<String> {
        self.state().restart_needed.clone()
    }

    /// Record (or clear) the reload problem shown in `stats().config_error`.
    pub fn set_error(&self, error: Option<String>) {
        self.state().error = error;
    }

    /// Record the settings changed in the file that wait for a restart.
    pub fn set_restart_needed(&self, keys: Vec<String>) {
        self.state().restart_needed = keys;
    }

    /// The config file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file should be read again now: the watcher saw it change, or `interval`
    /// has passed since the last check, and either way its fingerprint (mtime and size)
    /// moved. Called at the start of every call, so it costs one atomic swap when nothing
    /// happened.
    pub fn changed(&self, interval: Duration) -> bool {
        let mut state = self.state();
        let flagged = self.dirty.swap(false, Ordering::AcqRel);
        let due = state.last_check.is_none_or(|t| t.elapsed() >= interval);
        if !flagged && !due {
            return false;
        }
        state.last_check = Some(Instant::now());
        let now = fingerprint(&self.path);
        if now == state.fingerprint {
            return false;
        }
        state.fingerprint = now;
        true
    }
}

impl Drop for Reloader {
    fn drop(&mut self) {
        // notify's inotify watcher unwraps the write that wakes its thread when it is dropped;
        // a failed write (seen under injected I/O faults) would panic in our drop and turn a
        // clean exit into exit code 101. Stopping the watcher cannot lose anything.
        if let Some(w) = self.watcher.take() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(w)));
        }
    }
}
