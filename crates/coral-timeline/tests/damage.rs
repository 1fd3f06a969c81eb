//! Damage said out loud. A write-ahead log garbled in the middle makes SQLite drop every
//! transaction after the damage and open as if nothing happened; the timeline copies the log
//! aside before SQLite's next write overwrites it, reports it at open ([`Timeline::repairs`])
//! and in [`Timeline::check`] while the copy exists, and records it so later opens do not copy
//! it again. A torn last write is not damage. `check` also runs SQLite's integrity check.

mod common;

use std::path::{Path, PathBuf};

use coral_timeline::{EntryInput, Timeline};

use common::{T0, ns};

/// A timeline of `n` standalone entries as a crash leaves it: the main file and its log
/// copied while the timeline is open (SQLite deletes the log at the last close), no `-shm`.
fn crashed(n: usize) -> (tempfile::TempDir, PathBuf) {
    let src = tempfile::tempdir().unwrap();
    let live = src.path().join("t.sqlite3");
    let t = Timeline::open(&live).unwrap();
    for i in 0..n {
        t.record_entry(
            &ns(),
            &EntryInput::user(format!("entry {i} {}", "内容".repeat(200)))
                .source_id(format!("e{i}")),
            T0 + i as f64,
        )
        .unwrap();
    }
    let dst = tempfile::tempdir().unwrap();
    let path = dst.path().join("t.sqlite3");
    std::fs::copy(&live, &path).unwrap();
    std::fs::copy(wal(&live), wal(&path)).unwrap();
    drop(t);
    (dst, path)
}

fn wal(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}-wal", path.display()))
}

/// Byte offset of frame `i` (0-based) of a log.
fn frame_at(log: &[u8], i: usize) -> usize {
    let page = u32::from_be_bytes([log[8], log[9], log[10], log[11]]) as usize;
    32 + i * (24 + page)
}

fn frames(log: &[u8]) -> usize {
    let page = u32::from_be_bytes([log[8], log[9], log[10], log[11]]) as usize;
    (log.len() - 32) / (24 + page)
}

/// How many entries the timeline holds.
fn entries(t: &Timeline) -> u64 {
    t.metrics(&ns(), true).unwrap().entries
}

fn copies(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".corrupt"))
        .collect();
    v.sort();
    v
}

#[test]
fn an_intact_log_and_a_torn_end_are_no_damage() {
    let (dir, path) = crashed(20);
    let t = Timeline::open(&path).unwrap();
    assert!(t.repairs().is_empty(), "{:?}", t.repairs());
    assert_eq!(entries(&t), 20);
    assert_eq!(t.check().unwrap(), []);
    drop(t);

    // A write cut short by a kill: the last frame is incomplete or garbled.
    let (dir2, path2) = crashed(20);
    let mut log = std::fs::read(wal(&path2)).unwrap();
    let last = frames(&log) - 1;
    let cut = frame_at(&log, last) + 24 + 100;
    log[cut - 50] ^= 0xff;
    log.truncate(cut);
    std::fs::write(wal(&path2), &log).unwrap();
    let t = Timeline::open(&path2).unwrap();
    assert!(t.repairs().is_empty(), "{:?}", t.repairs());
    assert_eq!(
        entries(&t),
        19,
        "the torn transaction is the only one missing"
    );
    assert_eq!(t.check().unwrap(), []);
    assert!(copies(dir.path()).is_empty() && copies(dir2.path()).is_empty());
}

#[test]
fn a_log_garbled_in_the_middle_is_copied_aside_and_reported() {
    let (dir, path) = crashed(20);
    let mut log = std::fs::read(wal(&path)).unwrap();
    let n = frames(&log);
    let at = frame_at(&log, n / 2) + 24 + 1000;
    log[at] ^= 0x5a;
    std::fs::write(wal(&path), &log).unwrap();

    let t = Timeline::open(&path).unwrap();
    let repairs = t.repairs().to_vec();
    assert_eq!(repairs.len(), 1, "the damage is said, not swallowed");
    let repair = &repairs[0];
    assert_eq!(repair.file, wal(&path));
    assert!(
        repair.detail.starts_with(&format!("frame {} ", n / 2 + 1)),
        "{}",
        repair.detail
    );
    assert!(
        repair
            .detail
            .contains("committed transaction(s) are not in the timeline")
    );
    let copy = repair.quarantined.clone().expect("a copy is kept");
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        log,
        "the copy is the log as found"
    );
    assert!(repair.to_string().contains(&copy.display().to_string()));
    // What SQLite could replay is there; the rest is in the copy.
    let kept = entries(&t);
    assert!(kept > 0 && kept < 20, "{kept}");
    let problems = t.check().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].file, copy);
    assert!(
        problems[0].detail.contains("frame"),
        "{}",
        problems[0].detail
    );

    // The timeline goes on; the next open does not copy the same damage again.
    t.record_entry(&ns(), &EntryInput::user("after the damage"), T0 + 100.0)
        .unwrap();
    drop(t);
    let again = Timeline::open(&path).unwrap();
    assert!(again.repairs().is_empty(), "{:?}", again.repairs());
    assert_eq!(entries(&again), kept + 1);
    assert_eq!(copies(dir.path()), std::slice::from_ref(&copy));
    assert_eq!(again.check().unwrap().len(), 1);
    // Once the copy is looked at and deleted, the timeline is healthy.
    std::fs::remove_file(&copy).unwrap();
    assert_eq!(again.check().unwrap(), []);
}

#[test]
fn a_damaged_log_header_is_reported() {
    let (dir, path) = crashed(10);
    let mut log = std::fs::read(wal(&path)).unwrap();
    log[17] ^= 1; // a salt: the header's checksum fails, SQLite ignores the whole log
    std::fs::write(wal(&path), &log).unwrap();
    let t = Timeline::open(&path).unwrap();
    assert_eq!(t.repairs().len(), 1);
    assert!(
        t.repairs()[0].detail.contains("header is damaged"),
        "{:?}",
        t.repairs()
    );
    assert_eq!(copies(dir.path()).len(), 1);
}

#[test]
fn check_runs_the_integrity_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite3");
    {
        let t = Timeline::open(&path).unwrap();
        for i in 0..200 {
            t.record_entry(
                &ns(),
                &EntryInput::user(format!("entry {i} {}", "x".repeat(3000))),
                T0 + i as f64,
            )
            .unwrap();
        }
        assert_eq!(t.check().unwrap(), []);
    }
    // Zero a page in the middle of the file (the entries' b-tree), as a bad disk would.
    let mut db = std::fs::read(&path).unwrap();
    let page = 4096;
    let middle = (db.len() / page / 2) * page;
    db[middle..middle + page].fill(0);
    std::fs::write(&path, &db).unwrap();
    let t = Timeline::open(&path).unwrap();
    let problems = t.check().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.detail.starts_with("integrity check: ")),
        "{problems:?}"
    );
    assert!(problems.iter().all(|p| p.file == path));
}
