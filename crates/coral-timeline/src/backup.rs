//! Copying a timeline database out and back in while other processes use it: SQLite's own
//! snapshot (`VACUUM INTO`) and online backup, never a copy of the file and its `-wal`.

use std::path::Path;

use rusqlite::{Connection, MAIN_DB, OpenFlags};

use crate::error::{Error, Result};

/// Write a consistent copy of the database at `db` to `dest` (which must not exist): one
/// transaction's view, including what is still in the `-wal`. Returns false when `db` does not
/// exist (no timeline yet).
pub fn backup_file(db: &Path, dest: &Path) -> Result<bool> {
    if !db.exists() {
        return Ok(false);
    }
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    let target = dest
        .to_str()
        .ok_or_else(|| Error::InvalidInput(format!("{} is not a UTF-8 path", dest.display())))?;
    conn.execute("VACUUM INTO ?1", [target])?;
    Ok(true)
}

/// Replace the content of the database at `db` with the database at `src`, through SQLite's
/// online backup: other connections to `db` wait for it, then see the restored content (their
/// caches are invalidated by SQLite). `src` is checked first (`PRAGMA integrity_check`); a
/// damaged copy changes nothing.
pub fn restore_file(db: &Path, src: &Path) -> Result<()> {
    let source = Connection::open_with_flags(src, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let verdict: String = source.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if verdict != "ok" {
        return Err(Error::Corrupted {
            path: src.to_path_buf(),
            detail: format!("the backup's timeline fails SQLite's integrity check: {verdict}"),
        });
    }
    drop(source);
    let mut conn = Connection::open(db)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.restore(MAIN_DB, src, None::<fn(rusqlite::backup::Progress)>)?;
    Ok(())
}
