//! Damage found when the timeline opens: `Repair`, the damaged write-ahead log copied aside
//! (`<log>.<unix time>.corrupt`) and recorded in `meta` once per log generation.

use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::error::Result;
use crate::wal::{self, Damage, wal_path};

/// Damage an open found and contained.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Repair {
    /// The damaged file (the timeline's `-wal`).
    pub file: PathBuf,
    /// What is wrong and what is lost.
    pub detail: String,
    /// Where a copy of the damaged file was kept (`<file>.<unix time>.corrupt`); `None` when
    /// none could be written (read-only or full), which the detail says.
    pub quarantined: Option<PathBuf>,
    /// When it was found, Unix seconds.
    pub found_at: f64,
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.detail)?;
        if let Some(copy) = &self.quarantined {
            write!(f, "; a copy of it is kept as {}", copy.display())?;
        }
        Ok(())
    }
}

/// The quarantined copies of `path`'s damaged logs still beside it (`<file>-wal.*.corrupt`),
/// in name order.
pub(crate) fn quarantined(path: &Path) -> Vec<PathBuf> {
    let log = wal_path(path);
    let prefix = format!(
        "{}.",
        log.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .map(|n| n.to_string_lossy())
                        .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".corrupt"))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// The `meta` key recording a quarantined generation of the log.
fn record_key(salts: (u32, u32)) -> String {
    format!("wal_damage:{:08x}{:08x}", salts.0, salts.1)
}

/// Whether the file has a `meta` table (a file with no tables yet has none).
pub(crate) fn has_meta(conn: &Connection) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'meta'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Whether this generation of the log was quarantined by an earlier open.
pub(crate) fn recorded(conn: &Connection, salts: (u32, u32)) -> Result<bool> {
    if !has_meta(conn)? {
        return Ok(false);
    }
    Ok(conn
        .query_row(
            "SELECT 1 FROM meta WHERE key = ?1",
            [record_key(salts)],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// The log of `path` and its damage, unless there is none or it was quarantined already.
/// Called under the write lock, before anything is written.
pub(crate) fn inspect_log(conn: &Connection, path: &Path) -> Result<Option<(Damage, Vec<u8>)>> {
    // An unreadable log fails SQLite's own open just after; nothing to add here.
    let Ok(bytes) = std::fs::read(wal_path(path)) else {
        return Ok(None);
    };
    let Some(damage) = wal::scan(&bytes) else {
        return Ok(None);
    };
    if recorded(conn, damage.salts)? {
        return Ok(None);
    }
    Ok(Some((damage, bytes)))
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Copy the damaged log `bytes` of `path` to `<log>.<unix time>.corrupt` (a free name), synced,
/// before SQLite's next write overwrites the evidence.
pub(crate) fn quarantine(path: &Path, bytes: &[u8], damage: &Damage) -> Repair {
    let file = wal_path(path);
    let found_at = unix_now();
    let base = format!("{}.{}", file.display(), found_at as u64);
    let mut target = PathBuf::from(format!("{base}.corrupt"));
    let mut n = 1;
    while target.exists() {
        target = PathBuf::from(format!("{base}-{n}.corrupt"));
        n += 1;
    }
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        });
    match written {
        Ok(()) => Repair {
            file,
            detail: damage.detail.clone(),
            quarantined: Some(target),
            found_at,
        },
        Err(e) => {
            let _ = std::fs::remove_file(&target);
            Repair {
                file,
                detail: format!(
                    "{}; no copy could be kept ({e}), so the next writable open tries again",
                    damage.detail
                ),
                quarantined: None,
                found_at,
            }
        }
    }
}

/// Record a quarantined generation in `meta`, so later opens do not copy it again (its frames
/// stay in the log until a checkpoint restarts it). Without a copy nothing is recorded, so the
/// next open tries again.
pub(crate) fn record(conn: &Connection, salts: (u32, u32), repair: &Repair) -> Result<()> {
    let Some(copy) = &repair.quarantined else {
        return Ok(());
    };
    let value = serde_json::json!({
        "detail": repair.detail,
        "quarantined": copy.file_name().map(|n| n.to_string_lossy().into_owned()),
        "found_at": repair.found_at,
    })
    .to_string();
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
        params![record_key(salts), value.into_bytes()],
    )?;
    Ok(())
}

/// Damage in a log read where no copy can be kept (a read-only open), unless recorded.
pub(crate) fn unquarantined(conn: &Connection, path: &Path, bytes: &[u8]) -> Vec<Repair> {
    match wal::scan(bytes) {
        Some(d) if !recorded(conn, d.salts).unwrap_or(false) => vec![Repair {
            file: wal_path(path),
            detail: format!(
                "{}; opened read-only, so no copy is kept here: the next writable open keeps one",
                d.detail
            ),
            quarantined: None,
            found_at: unix_now(),
        }],
        _ => Vec::new(),
    }
}

/// What `meta` recorded about quarantined copies: file name -> detail.
pub(crate) fn recorded_copies(conn: &Connection) -> Result<Vec<(String, String)>> {
    if !has_meta(conn)? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare("SELECT value FROM meta WHERE key LIKE 'wal_damage:%'")?;
    let values: Vec<Vec<u8>> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(values
        .iter()
        .filter_map(|v| serde_json::from_slice::<serde_json::Value>(v).ok())
        .filter_map(|v| {
            Some((
                v["quarantined"].as_str()?.to_string(),
                v["detail"].as_str().unwrap_or_default().to_string(),
            ))
        })
        .collect())
}
