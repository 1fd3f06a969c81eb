//! Opt-in phase probes for measuring where a long call spends its time and memory.
//!
//! With `CORAL_PROBE=1` in the environment, [`mark`] prints one line to stderr per phase: its
//! label, the milliseconds since the previous mark of this process, and the process's resident
//! set now and at its peak (`VmRSS`, `VmHWM` from `/proc/self/status`, Linux only). Without the
//! variable a mark costs one cached flag test. Used by `cargo xtask stress-1m` and
//! docs/ann.md's "Measured" section to split an open into its parts.

use std::sync::Mutex;
use std::sync::OnceLock;
use std::time::Instant;

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("CORAL_PROBE").is_some_and(|v| v != "0"))
}

/// A field of `/proc/self/status` in kB (0 where unavailable).
pub fn status_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .unwrap_or(0)
}

/// Print a phase line when `CORAL_PROBE` is set (see the module docs).
pub fn mark(label: &str) {
    if !enabled() {
        return;
    }
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let now = Instant::now();
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let ms = last.map_or(0.0, |t| now.duration_since(t).as_secs_f64() * 1e3);
    *last = Some(now);
    eprintln!(
        "probe {label}: {ms:.0} ms, rss {} MB, peak {} MB",
        status_kb("VmRSS:") / 1024,
        status_kb("VmHWM:") / 1024
    );
}
