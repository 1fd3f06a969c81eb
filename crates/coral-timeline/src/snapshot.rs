//! A private copy of a database and its log in the temporary directory, read where the log's
//! `-shm` index cannot be made (a read-only directory), and removed with the timeline.

use std::path::{Path, PathBuf};

/// Names of private copies in the temporary directory: `coral-timeline-<pid>-<nanos>`.
const SNAPSHOT_PREFIX: &str = "coral-timeline-";

/// A private copy of a database and its log, removed with the timeline that reads it (or, when
/// its process was killed, by the next copy any process takes).
#[derive(Debug)]
pub(crate) struct Snapshot {
    dir: PathBuf,
}

impl Snapshot {
    /// Copy `path` and its log (`wal`, the bytes already read) into a new temporary directory,
    /// after removing the copies of processes that died without removing theirs (SIGKILL).
    pub(crate) fn take(path: &Path, wal: &[u8]) -> std::io::Result<(Snapshot, PathBuf)> {
        let temp = std::env::temp_dir();
        Snapshot::remove_orphans(&temp);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = temp.join(format!("{SNAPSHOT_PREFIX}{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir)?;
        let snapshot = Snapshot { dir };
        let db = snapshot.dir.join("timeline.sqlite3");
        std::fs::copy(path, &db)?;
        std::fs::write(snapshot.dir.join("timeline.sqlite3-wal"), wal)?;
        Ok((snapshot, db))
    }
}

impl Snapshot {
    fn remove_orphans(temp: &Path) {
        let Ok(entries) = std::fs::read_dir(temp) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix(SNAPSHOT_PREFIX))
                .and_then(|rest| rest.split_once('-'))
                .and_then(|(pid, _)| pid.parse::<u32>().ok());
            if let Some(pid) = pid
                && !coral_base::liveness::check(pid).counts_as_alive()
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        // Best effort: a copy left in the temporary directory harms nothing.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
