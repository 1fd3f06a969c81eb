//! After a forgetting commits, making the removed text leave the disk (docs/timeline.md,
//! "Forgetting"): freed space was overwritten with zeros by `secure_delete` (on since the
//! file's first page, or else the file is rebuilt once with `VACUUM`), and the write-ahead log,
//! which still holds the pages as they were, is checkpointed into the file and truncated.

use crate::repair::quarantined;
use crate::timeline::Timeline;

impl Timeline {
    /// `(gone, what happened, rebuilt)`: whether no copy of what was just removed is left in
    /// the file or its log.
    pub(crate) fn purge(&self) -> (bool, String, bool) {
        let Some(path) = self.path.clone() else {
            return (true, "in memory: nothing was on disk".into(), false);
        };
        let conn = self.lock();
        let zeroed: bool = conn
            .query_row("SELECT count(*) FROM meta WHERE key = 'zeroed'", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n > 0)
            .unwrap_or(false);
        let mut rebuilt = false;
        if !zeroed {
            // Written before freed space was zeroed: old copies may sit in free pages and
            // cells. Rebuilding writes every live page anew, once.
            if let Err(e) = conn.execute_batch("VACUUM") {
                return (
                    false,
                    format!(
                        "the text is removed from the tables, but {} was written before freed \
                         space was overwritten and could not be rebuilt ({e}); free some space \
                         (VACUUM needs about the file's size again) and forget again",
                        path.display()
                    ),
                    false,
                );
            }
            rebuilt = true;
            if let Err(e) = conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('zeroed', X'01')",
                [],
            ) {
                return (
                    false,
                    format!("the file was rebuilt but the mark of it was not written: {e}"),
                    true,
                );
            }
        }
        let checkpoint: rusqlite::Result<(i64, i64, i64)> =
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            });
        let mut copies = String::new();
        if !quarantined(&path).is_empty() {
            copies = "; quarantined copies of a damaged log beside it may still hold old text \
                      (residual_copies)"
                .into();
        }
        match checkpoint {
            Ok((0, _, _)) => (
                true,
                format!(
                    "removed from {} and its log (checkpointed and truncated){copies}",
                    path.display()
                ),
                rebuilt,
            ),
            Ok(_) => (
                false,
                format!(
                    "removed from the tables; another connection still reads an older snapshot, \
                     so the log keeps the old pages until the next complete checkpoint (SQLite \
                     runs one as the log grows, and forgetting again runs one now){copies}"
                ),
                rebuilt,
            ),
            Err(e) => (
                false,
                format!(
                    "removed from the tables; the log could not be checkpointed ({e}), so it \
                     keeps the old pages until a later checkpoint{copies}"
                ),
                rebuilt,
            ),
        }
    }

    /// Copies beside the file that may hold text no longer in it.
    pub(crate) fn quarantined_copies(&self) -> Vec<std::path::PathBuf> {
        self.path.as_deref().map(quarantined).unwrap_or_default()
    }
}
