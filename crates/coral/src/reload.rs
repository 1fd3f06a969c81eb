//! Config hot reload (SPEC 7): a file watcher marks the config dirty, an mtime + size check every
//! `reload.check_interval_seconds` catches what the watcher misses, and the next call swaps the
//! new config in. An invalid file keeps the previous config in force and shows the error in
//! `stats().config_error`; path, thread-path and embedding changes wait for a restart.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use notify::Watcher as _;

use crate::config::Config;
use crate::engine::{Coral, Engine, unix_now};
use crate::error::Result;

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
pub(crate) struct Reloader {
    path: PathBuf,
    dirty: Arc<AtomicBool>,
    state: Mutex<ReloadState>,
    watcher: Option<notify::RecommendedWatcher>,
}

impl Reloader {
    pub(crate) fn new(path: &Path) -> Reloader {
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
    pub(crate) fn mark_seen(&self) {
        self.state().fingerprint = fingerprint(&self.path);
    }

    /// The last reload problem, if the config in force is not the file's.
    pub(crate) fn error(&self) -> Option<String> {
        self.state().error.clone()
    }

    /// Settings changed in the file that only a restart applies.
    pub(crate) fn restart_needed(&self) -> Vec<String> {
        self.state().restart_needed.clone()
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

/// Keys whose change needs a restart (or a re-embed), compared between two configs.
fn restart_keys(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if old.paths != new.paths {
        out.push("paths".to_string());
    }
    if old.threads != new.threads {
        out.push("threads.path".to_string());
    }
    if old.embedding != new.embedding {
        out.push("embedding (needs coral reembed)".to_string());
    }
    out
}

impl Coral {
    /// Put `config` in force now and govern at once (a lower capacity evicts right away).
    /// `confirmed`: the caller accepted whatever the new limits remove (see guard.rs);
    /// otherwise a bulk removal is held until confirmed.
    pub(crate) fn apply_config(&self, config: Config, now: f64, confirmed: bool) -> Result<()> {
        let mut engine = self.lock_raw();
        let config = self.swap_config(config);
        if confirmed {
            engine.accept(crate::engine::guard::RemovalLimits::of(&config), now);
        }
        if let Some(r) = &self.reloader {
            r.mark_seen();
            r.state().error = None;
        }
        drop(engine);
        self.govern(&config, now, None)
    }

    /// Put `config` in force (keeping the settings that need a restart) and return it.
    fn swap_config(&self, mut config: Config) -> Arc<Config> {
        let current = self.config();
        let pending = restart_keys(&current, &config);
        // Settings that need a restart stay as they are until then.
        config.paths = current.paths.clone();
        config.threads = current.threads.clone();
        config.embedding = current.embedding.clone();
        config.base_dir = current.base_dir.clone();
        config.data_dir_override = current.data_dir_override.clone();
        let config = Arc::new(config);
        self.config.store(Arc::clone(&config));
        if let Some(r) = &self.reloader {
            r.state().restart_needed = pending;
        }
        config
    }

    /// Pick up a changed config file before a call reads the config.
    pub(crate) fn refresh_config(&self) {
        if self.reloader.is_some() {
            drop(self.lock());
        }
    }

    /// Called with the engine locked at the start of every call: reload the file when the
    /// watcher saw it change or the fallback interval has passed and its fingerprint moved.
    pub(crate) fn reload_if_changed(&self, engine: &mut Engine) {
        let Some(r) = &self.reloader else {
            return;
        };
        let interval =
            Duration::from_secs_f64(self.config().reload.check_interval_seconds.max(0.0));
        {
            let mut state = r.state();
            let flagged = r.dirty.swap(false, Ordering::AcqRel);
            let due = state.last_check.is_none_or(|t| t.elapsed() >= interval);
            if !flagged && !due {
                return;
            }
            state.last_check = Some(Instant::now());
            let now = fingerprint(&r.path);
            if now == state.fingerprint {
                return;
            }
            state.fingerprint = now;
        }
        let loaded = std::fs::read_to_string(&r.path)
            .map_err(|e| format!("cannot read {}: {e}", r.path.display()))
            .and_then(|text| Config::from_json(&text));
        match loaded {
            Ok((config, _warnings)) => {
                let config = self.swap_config(config);
                // Under the lock: no distillation here (it would hold the lock across an LLM
                // call); a lower capacity is governed by eviction at once.
                let now = unix_now();
                let held = engine.guarded(&config, now);
                let config = held.as_ref().unwrap_or(&config);
                let governed = engine
                    .maintain(config, now)
                    .and_then(|()| self.enforce_disk_quota(engine, config, now));
                r.state().error = governed
                    .err()
                    .map(|e| format!("reloaded, but governance failed: {e}"));
            }
            Err(e) => {
                r.state().error = Some(format!(
                    "{}: {e}; still using the previous config",
                    r.path.display()
                ));
            }
        }
    }
}
