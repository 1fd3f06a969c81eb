//! When appended bytes reach the disk: the power-loss policy of `storage.sync` and the
//! background fsync of its interval mode, shared by the memory journal and the thread journals.
//!
//! Every acknowledged write has been handed to the OS with `write(2)`, so it survives the
//! process being killed whatever the policy; the policy decides what survives a power cut
//! (docs/storage.md).

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// When journal appends are fsynced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fsync every append before it is acknowledged (survives a power cut).
    Always,
    /// fsync in the background at most this often; an append is acknowledged once written
    /// (survives a killed process; a power cut loses at most one interval).
    Interval(Duration),
    /// Never fsync (the OS decides); checkpoints are not fsynced either.
    Never,
}

impl SyncPolicy {
    /// Whether checkpoints fsync their files and directories.
    pub fn syncs(self) -> bool {
        !matches!(self, SyncPolicy::Never)
    }
}

impl Default for SyncPolicy {
    /// `Interval(1 s)`, the default of `storage.sync` / `storage.sync_interval_ms`.
    fn default() -> Self {
        SyncPolicy::Interval(Duration::from_secs(1))
    }
}

struct Shared {
    file: Mutex<Arc<File>>,
    dirty: AtomicBool,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// The background fsync of [`SyncPolicy::Interval`]: at most one `fdatasync` per interval,
/// only when something was written since the last one; a failed one is retried at the next
/// tick. Stopped, with a last fsync of what is pending, on drop.
pub struct Syncer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Syncer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Syncer").finish_non_exhaustive()
    }
}

impl Syncer {
    /// Start syncing `file` every `every`, on a thread called `name`. Without a thread (the
    /// OS refused one), writes still reach the OS at once; only the power-loss window grows to
    /// "when the OS decides".
    pub fn start(file: Arc<File>, every: Duration, name: &str) -> Syncer {
        let shared = Arc::new(Shared {
            file: Mutex::new(file),
            dirty: AtomicBool::new(false),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let bg = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                loop {
                    let stopped = {
                        let guard = bg.stop.lock().unwrap_or_else(|e| e.into_inner());
                        // Stopped before this thread first ran (a short-lived process): the
                        // wake-up is gone, and waiting would hold the close for an interval.
                        if *guard {
                            true
                        } else {
                            let (guard, _) = bg
                                .wake
                                .wait_timeout(guard, every)
                                .unwrap_or_else(|e| e.into_inner());
                            *guard
                        }
                    };
                    if bg.dirty.swap(false, Ordering::AcqRel) {
                        let file = bg.file.lock().unwrap_or_else(|e| e.into_inner()).clone();
                        if file.sync_data().is_err() {
                            bg.dirty.store(true, Ordering::Release);
                        }
                    }
                    if stopped {
                        break;
                    }
                }
            })
            .ok();
        Syncer { shared, thread }
    }

    /// Note that bytes were written since the last fsync.
    pub fn mark(&self) {
        self.shared.dirty.store(true, Ordering::Release);
    }

    /// Sync `file` from now on (the journal was replaced by a new one, already durable); what
    /// was pending on the old one is dropped.
    pub fn replace(&self, file: Arc<File>) {
        *self.shared.file.lock().unwrap_or_else(|e| e.into_inner()) = file;
        self.shared.dirty.store(false, Ordering::Release);
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        *self.shared.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopping_before_the_thread_ran_does_not_wait_for_the_interval() {
        let dir = std::env::temp_dir().join(format!("coral-base-sync-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = Arc::new(File::create(dir.join("j")).unwrap());
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Start and stop at once, so the thread has usually not run yet when stopped.
            for _ in 0..20 {
                let s = Syncer::start(Arc::clone(&file), Duration::from_secs(3600), "t");
                s.mark();
                drop(s);
            }
            let _ = done.send(());
        });
        // With the wake-up lost, one stop alone waits an hour: fail instead of hanging.
        assert!(
            finished.recv_timeout(Duration::from_secs(600)).is_ok(),
            "a stopped syncer kept waiting for its interval"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
