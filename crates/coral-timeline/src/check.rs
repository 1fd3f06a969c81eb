//! Damage said out loud: the write-ahead log checked when the timeline opens (damage copied
//! aside, recorded once per log generation, reported), and [`Timeline::check`], every problem
//! of the database for `coral check`.

use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::error::Result;
use crate::open::wal_path;
use crate::schema::{SCHEMA_VERSION, TABLES};
use crate::timeline::Timeline;
use crate::wal::{self, Damage};

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

/// One problem [`Timeline::check`] found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file concerned: the database, its log, or a quarantined copy.
    pub file: PathBuf,
    /// What is wrong and what to do.
    pub detail: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.detail)
    }
}

/// The `meta` key recording a quarantined generation of the log.
fn record_key(salts: (u32, u32)) -> String {
    format!("wal_damage:{:08x}{:08x}", salts.0, salts.1)
}

fn has_meta(conn: &Connection) -> Result<bool> {
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
fn recorded(conn: &Connection, salts: (u32, u32)) -> Result<bool> {
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
fn recorded_copies(conn: &Connection) -> Result<Vec<(String, String)>> {
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

fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

impl Timeline {
    /// Every problem of the database, for `coral check`: SQLite's `PRAGMA integrity_check`, the
    /// schema version and tables, the cursor secret, the journal mode, damage in the
    /// write-ahead log, and quarantined copies of a damaged log still beside it (each stays a
    /// problem until it is deleted, once looked at). Empty when all is well. Reads only; the
    /// log is read under the write lock when the timeline is writable, so no other process
    /// appends meanwhile.
    pub fn check(&self) -> Result<Vec<Problem>> {
        let file = self.display_path();
        let mut problems = Vec::new();
        let mut problem = |file: &Path, detail: String| {
            problems.push(Problem {
                file: file.to_path_buf(),
                detail,
            })
        };
        let mut conn = self.lock();
        let integrity = conn
            .prepare("PRAGMA integrity_check(100)")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            });
        match integrity {
            Ok(rows) if rows == ["ok"] => {}
            Ok(rows) => rows
                .into_iter()
                .for_each(|row| problem(&file, format!("integrity check: {row}"))),
            // Damage bad enough that the check itself stops is one problem, not an error.
            Err(e) if is_damage(&e) => {
                problem(&file, format!("integrity check: {e}"));
                return Ok(problems);
            }
            Err(e) => return Err(e.into()),
        }
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version != SCHEMA_VERSION {
            problem(
                &file,
                format!("schema version is {version}; this build expects {SCHEMA_VERSION}"),
            );
        }
        for table in TABLES {
            let found = conn
                .query_row(
                    "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                    [table],
                    |_| Ok(()),
                )
                .optional()?;
            if found.is_none() {
                problem(&file, format!("table {table} is missing"));
            }
        }
        if has_meta(&conn)? {
            let secret: Option<Vec<u8>> = conn
                .query_row(
                    "SELECT value FROM meta WHERE key = 'cursor_secret'",
                    [],
                    |r| r.get(0),
                )
                .optional()?;
            if secret.is_none_or(|s| s.len() != 32) {
                problem(
                    &file,
                    "the cursor secret in table meta is missing or not 32 bytes".into(),
                );
            }
        }
        let Some(path) = self.path.clone() else {
            return Ok(problems);
        };
        if self.read_only.is_none() {
            let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                problem(&file, format!("journal mode is {mode}, not wal"));
            }
        }
        let log = wal_path(&path);
        let bytes = if self.read_only.is_none() {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let bytes = std::fs::read(&log).unwrap_or_default();
            drop(tx);
            bytes
        } else {
            std::fs::read(&log).unwrap_or_default()
        };
        if let Some(d) = wal::scan(&bytes)
            && !recorded(&conn, d.salts)?
        {
            problem(
                &log,
                format!(
                    "{}; open the timeline where it can be written to keep a copy",
                    d.detail
                ),
            );
        }
        let copies = recorded_copies(&conn)?;
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
        for copy in found {
            let name = copy
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let what = copies
                .iter()
                .find(|(n, _)| *n == name)
                .map_or_else(String::new, |(_, d)| format!(" ({d})"));
            problem(
                &copy,
                format!(
                    "a copy of a damaged write-ahead log{what}; the timeline holds what came \
                     before the damage. Delete the copy once you no longer need it"
                ),
            );
        }
        Ok(problems)
    }
}
