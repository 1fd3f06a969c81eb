//! The lock file protocol shared with the original: `<threads file>.lock`, created with
//! `O_CREAT | O_EXCL`, holding the writer's PID. A lock older than the stale age whose PID is
//! not alive was left by a dead writer and may be removed. Liveness is `coral_base::liveness`'s
//! one rule: a PID whose state the system cannot tell counts as alive (waiting is safer than
//! breaking a live writer's lock).

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use coral_base::{IoContext, liveness};

use crate::error::{Error, Result};

/// A held lock file, removed when dropped.
#[derive(Debug)]
pub(crate) struct LockFile {
    path: PathBuf,
}

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What a lock file says: its PID (when it parses) and its age.
#[derive(Clone, Debug, PartialEq)]
struct Holder {
    pid: Option<u32>,
    modified: Option<SystemTime>,
}

fn read_holder(path: &Path) -> std::io::Result<Holder> {
    let text = std::fs::read_to_string(path)?;
    let modified = std::fs::metadata(path)?.modified().ok();
    Ok(Holder {
        pid: text.trim().parse().ok(),
        modified,
    })
}

impl Holder {
    /// Stale: older than `stale_after` (by its mtime) and its writer is gone. A lock without a
    /// readable PID is judged by age alone (its writer died between create and write, or it
    /// is not ours to understand).
    fn is_stale(&self, stale_after: Duration) -> bool {
        let old = self
            .modified
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > stale_after);
        old && !self
            .pid
            .is_some_and(|pid| liveness::check(pid).counts_as_alive())
    }
}

/// Take `lock`, waiting up to `wait` with short sleeps; remove it first if it is stale.
pub(crate) fn acquire(lock: &Path, wait: Duration, stale_after: Duration) -> Result<LockFile> {
    let start = Instant::now();
    let mut sleep = Duration::from_micros(500);
    loop {
        match OpenOptions::new().write(true).create_new(true).open(lock) {
            Ok(mut f) => {
                let held = LockFile {
                    path: lock.to_path_buf(),
                };
                write!(f, "{}", std::process::id()).at(lock)?;
                return Ok(held);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {
                // The directory is missing (a fresh data directory): make it and retry.
                if let Some(dir) = lock.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).at(dir)?;
                    continue;
                }
                return Err(e).at(lock).map_err(Error::from);
            }
            Err(e) => return Err(e).at(lock).map_err(Error::from),
        }
        match read_holder(lock) {
            Ok(holder) if holder.is_stale(stale_after) => {
                break_stale(lock, &holder);
                continue;
            }
            Ok(holder) if start.elapsed() >= wait => {
                return Err(Error::LockTimeout {
                    lock: lock.to_path_buf(),
                    pid: holder.pid,
                    waited: start.elapsed(),
                });
            }
            // Released between our create and our read: try again at once.
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            _ => {}
        }
        if start.elapsed() >= wait {
            return Err(Error::LockTimeout {
                lock: lock.to_path_buf(),
                pid: None,
                waited: start.elapsed(),
            });
        }
        std::thread::sleep(sleep);
        sleep = (sleep * 2).min(Duration::from_millis(8));
    }
}

/// Remove a stale lock without removing a fresh one that replaced it in the meantime: move it
/// aside, check that what was moved is the lock judged stale, and put it back if it is not.
fn break_stale(lock: &Path, judged: &Holder) {
    let aside = lock.with_extension(format!(
        "lock.stale-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    if std::fs::rename(lock, &aside).is_err() {
        return; // someone else removed it first
    }
    if read_holder(&aside).is_ok_and(|h| h != *judged) {
        // A live writer's lock: restore it unless yet another one exists by now.
        let _ = std::fs::hard_link(&aside, lock);
    }
    let _ = std::fs::remove_file(&aside);
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(10);

    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    fn age(path: &Path, secs: u64) {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn the_lock_holds_the_pid_and_is_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("sub/t.json.lock");
        let held = acquire(&lock, LONG, LONG).unwrap();
        assert_eq!(
            std::fs::read_to_string(&lock).unwrap(),
            std::process::id().to_string()
        );
        match acquire(&lock, Duration::from_millis(20), LONG) {
            Err(Error::LockTimeout { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("{other:?}"),
        }
        drop(held);
        assert!(!lock.exists());
        drop(acquire(&lock, LONG, LONG).unwrap());
    }

    #[test]
    fn an_old_lock_of_a_dead_pid_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("t.json.lock");
        std::fs::write(&lock, dead_pid().to_string()).unwrap();
        age(&lock, 60);
        let held = acquire(&lock, Duration::from_millis(50), LONG).unwrap();
        assert_eq!(
            std::fs::read_to_string(&lock).unwrap(),
            std::process::id().to_string()
        );
        drop(held);
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 0, "the stale lock was removed, not left aside");
    }

    #[test]
    fn a_young_lock_of_a_dead_pid_and_an_old_lock_of_a_live_pid_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("t.json.lock");
        std::fs::write(&lock, dead_pid().to_string()).unwrap();
        assert!(matches!(
            acquire(&lock, Duration::from_millis(30), LONG),
            Err(Error::LockTimeout { .. })
        ));
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(&lock, sleeper.id().to_string()).unwrap();
        age(&lock, 60);
        assert!(matches!(
            acquire(&lock, Duration::from_millis(30), LONG),
            Err(Error::LockTimeout { pid: Some(p), .. }) if p == sleeper.id()
        ));
        // SIGKILL the holder: now its lock is stale.
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        drop(acquire(&lock, Duration::from_millis(30), LONG).unwrap());
    }

    #[test]
    fn an_unreadable_pid_is_judged_by_age() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("t.json.lock");
        std::fs::write(&lock, "").unwrap();
        assert!(acquire(&lock, Duration::from_millis(20), LONG).is_err());
        age(&lock, 60);
        assert!(acquire(&lock, Duration::from_millis(20), LONG).is_ok());
    }
}
