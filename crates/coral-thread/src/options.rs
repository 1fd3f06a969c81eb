//! How a `ThreadStore` writes: `StoreOptions` (coalescing window, writer thread, lock waits,
//! fsync policy) and the `Clock` it reads.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use coral_base::SyncPolicy;
use coral_base::secrets::Redaction;

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
    /// Secrets in titles, summaries, notes and reasons replaced by a marker before they are
    /// journaled (default on; docs/threads.md, "Secrets").
    pub redaction: Redaction,
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
            redaction: Redaction::default(),
        }
    }
}
