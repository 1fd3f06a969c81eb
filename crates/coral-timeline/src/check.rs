//! `Timeline::check`: every problem of the database for `coral check` (integrity, schema,
//! cursor secret, journal mode, damage in the log, quarantined copies still beside it).

use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, TransactionBehavior};
use serde::Serialize;

use crate::error::Result;
use crate::repair::{has_meta, quarantined, recorded, recorded_copies};
use crate::schema::{SCHEMA_VERSION, TABLES};
use crate::timeline::Timeline;
use crate::wal::{self, wal_path};

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
        for copy in quarantined(&path) {
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
