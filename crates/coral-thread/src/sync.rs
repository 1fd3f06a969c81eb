//! When journal bytes reach the disk: the power-loss policy and the background fsync thread.
//!
//! The same three policies as the memory store's `storage.sync` (docs/storage.md): every
//! acknowledged change has been handed to the OS with `write(2)`, so it survives the process
//! being killed; the policy decides what survives a power cut. (coral-thread is a leaf crate
//! and cannot share coral-store's type; the facade maps the one config key to both.)

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// When the thread journal is fsynced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fsync every record before the operation returns (survives a power cut).
    Always,
    /// fsync in the background at most this often; an operation returns once its record is
    /// written (survives a killed process; a power cut loses at most one interval).
    Interval(Duration),
    /// Never fsync (the OS decides); checkpoints of the threads file are not fsynced either.
    Never,
}

impl SyncPolicy {
    /// Whether checkpoints of the threads file fsync the file and its directory.
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
    file: Arc<File>,
    dirty: AtomicBool,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// The background fsync of [`SyncPolicy::Interval`]: at most one `fdatasync` per interval,
/// only when something was written since the last one. Stopped (with a last fsync) on drop.
pub(crate) struct Syncer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Syncer {
    pub(crate) fn start(file: Arc<File>, every: Duration) -> Syncer {
        let shared = Arc::new(Shared {
            file,
            dirty: AtomicBool::new(false),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let bg = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("coral-threads-sync".into())
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
                    // A failed fsync is retried at the next tick.
                    if bg.dirty.swap(false, Ordering::AcqRel) && bg.file.sync_data().is_err() {
                        bg.dirty.store(true, Ordering::Release);
                    }
                    if stopped {
                        break;
                    }
                }
            })
            // Without the thread (the OS refused one), records still reach the OS at once;
            // only the power-loss window grows to "when the OS decides".
            .ok();
        Syncer { shared, thread }
    }

    /// Note that bytes were written since the last fsync.
    pub(crate) fn mark(&self) {
        self.shared.dirty.store(true, Ordering::Release);
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
        let dir = tempfile::tempdir().unwrap();
        let file = Arc::new(File::create(dir.path().join("j")).unwrap());
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Start and stop at once, so the thread has usually not run yet when stopped.
            for _ in 0..20 {
                let s = Syncer::start(Arc::clone(&file), Duration::from_secs(3600));
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
    }
}
