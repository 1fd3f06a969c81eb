//! Helpers shared by the timeline's integration tests.

#![allow(dead_code)]

use std::path::Path;

use coral_timeline::{Namespace, Timeline};
use rusqlite::types::ValueRef;

/// 2026-04-10 08:00 in Asia/Shanghai (00:00 UTC).
pub const T0: f64 = 1_775_779_200.0;

/// A timeline in a fresh temporary directory (kept alive by the returned guard).
pub fn temp_timeline() -> (Timeline, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let t = Timeline::open(dir.path().join("timeline.sqlite3")).unwrap();
    (t, dir)
}

pub fn ns() -> Namespace {
    Namespace::new("u_001", "c_001")
}

/// Every row of every table and the schema version, as text: two equal dumps mean nothing
/// was written in between.
pub fn dump(path: &Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut out = String::new();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    out.push_str(&format!("user_version {version}\n"));
    for (table, order) in [
        ("meta", "rowid"),
        ("turns", "rowid"),
        ("entries", "rowid"),
        ("settlements", "1, 2"),
        ("summaries", "rowid"),
        ("summary_sources", "1, 2, 3"),
        ("compaction", "1, 2"),
    ] {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
            .unwrap();
        let n = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            out.push_str(table);
            for i in 0..n {
                let cell = match row.get_ref(i).unwrap() {
                    ValueRef::Null => "NULL".to_string(),
                    ValueRef::Integer(v) => v.to_string(),
                    ValueRef::Real(v) => v.to_string(),
                    ValueRef::Text(t) => format!("{:?}", String::from_utf8_lossy(t)),
                    ValueRef::Blob(b) => format!("{b:?}"),
                };
                out.push(' ');
                out.push_str(&cell);
            }
            out.push('\n');
        }
    }
    out
}

/// xorshift64*: deterministic test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A tool output of exactly `bytes` UTF-8 bytes: log-like lines mixing English and Chinese.
pub fn body(rng: &mut Rng, bytes: usize) -> String {
    const LINES: [&str; 6] = [
        "GET /api/v2/items?page=3 200 OK 12ms\n",
        "北京今天晴，气温 25°C，空气质量优。\n",
        "error: connection reset by peer (retrying)\n",
        "fn main() { println!(\"hello\"); }\n",
        "检索结果：文旅答辩项目 第七版 已归档\n",
        "{\"id\": 42, \"status\": \"done\"}\n",
    ];
    let mut s = String::with_capacity(bytes + 64);
    while s.len() < bytes {
        s.push_str(LINES[rng.below(LINES.len() as u64) as usize]);
    }
    // Cut back to a char boundary at or below `bytes`, then pad with ASCII to the exact size.
    let mut cut = bytes;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    while s.len() < bytes {
        s.push('.');
    }
    s
}
