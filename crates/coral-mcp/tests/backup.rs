//! `coral check`, `coral backup` and `coral restore` on real directories with real processes:
//! check finds every kind of damage without changing a byte; a backup taken while a writer
//! runs is one consistent version that opens; a restore under a running process is seen by it
//! at its next call; a damaged backup or an interrupted restore changes nothing silently.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

fn config_in(dir: &Path) -> PathBuf {
    let config = dir.join("coral_config.json");
    std::fs::write(
        &config,
        r#"{"embedding": {"embedder": "hash"}, "storage": {"sync": "never"}}"#,
    )
    .unwrap();
    config
}

fn coral(config: &Path, args: &[&str]) -> Output {
    Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap()
}

fn ok(config: &Path, args: &[&str]) -> String {
    let out = coral(config, args);
    assert!(
        out.status.success(),
        "coral {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn check_json(config: &Path) -> (i32, Value) {
    let out = coral(config, &["-q", "--json", "check"]);
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), report)
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_file() {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
    out
}

fn seeded(dir: &Path, n: usize) -> PathBuf {
    let config = config_in(dir);
    let lines: String = (0..n)
        .map(|i| format!("seed memory {i} w{:x} 第{i}条\n", i * 7919))
        .collect();
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .args(["-q", "insert", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    ok(
        &config,
        &["-q", "thread", "create", "发布 v2.0", "--by", "chatA"],
    );
    config
}

fn findings(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["severity"].as_str().unwrap().to_string(),
                format!(
                    "{} {}",
                    f["path"].as_str().unwrap(),
                    f["detail"].as_str().unwrap()
                ),
            )
        })
        .collect()
}

#[test]
fn check_finds_every_kind_of_damage_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = seeded(dir.path(), 30);
    let data = dir.path().join("memory_data");
    let (code, report) = check_json(&config);
    assert_eq!(code, 0, "a clean directory: {report}");
    assert_eq!(report["items"], 30);
    // Journal records after a checkpoint, for the journal cases.
    ok(&config, &["-q", "insert", "after the checkpoint one"]);
    ok(&config, &["-q", "insert", "after the checkpoint two"]);
    // Keep the journal: the process above checkpointed at close; write records again without
    // a checkpoint by killing a writer after its acks.
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .args(["-q", "insert", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        "journal only a\njournal only b\njournal only c\njournal only d"
    )
    .unwrap();
    stdin.flush().unwrap();
    let mut acks = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..4 {
        let mut l = String::new();
        acks.read_line(&mut l).unwrap();
    }
    child.kill().unwrap();
    child.wait().unwrap();

    type Damage = fn(&Path);
    let cases: Vec<(&str, Damage, &str)> = vec![
        (
            "a flipped byte in a journal record",
            |d| {
                let p = d.join("coral_wal.jsonl");
                let mut b = std::fs::read(&p).unwrap();
                let second = b.iter().position(|&c| c == b'\n').unwrap() + 60;
                b[second] ^= 1;
                std::fs::write(&p, b).unwrap();
            },
            "unreadable record",
        ),
        (
            "a journal line deleted",
            |d| {
                let p = d.join("coral_wal.jsonl");
                let text = std::fs::read_to_string(&p).unwrap();
                let lines: Vec<&str> = text.lines().collect();
                let kept: Vec<&str> = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != 2)
                    .map(|(_, l)| *l)
                    .collect();
                std::fs::write(&p, kept.join("\n") + "\n").unwrap();
            },
            "missing",
        ),
        (
            "a NaN vector row",
            |d| {
                // .npy v1: magic (6), version (2), header length (2), header, then the data.
                let p = d.join("coral_vectors.npy");
                let mut b = std::fs::read(&p).unwrap();
                let start = 10 + u16::from_le_bytes([b[8], b[9]]) as usize;
                b[start..start + 4].copy_from_slice(&f32::NAN.to_le_bytes());
                std::fs::write(&p, b).unwrap();
            },
            "NaN",
        ),
        (
            "two ids swapped in the vector index",
            |d| {
                let p = d.join("coral_vector_index.json");
                let mut ids: Vec<String> =
                    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
                ids.swap(0, 1);
                std::fs::write(&p, serde_json::to_vec(&ids).unwrap()).unwrap();
            },
            "do not match their checksums",
        ),
        (
            "an empty warm file",
            |d| std::fs::write(d.join("coral_warm.json"), b"").unwrap(),
            "empty",
        ),
        (
            "an unreadable cold line",
            |d| {
                let p = d.join("coral_cold.jsonl");
                let mut b = std::fs::read(&p).unwrap();
                b.extend_from_slice(b"{\"item_id\": 12, \"content\": \n");
                std::fs::write(&p, b).unwrap();
            },
            "not a readable memory",
        ),
        (
            "an unreadable thread",
            |d| {
                let p = d.join("coral_threads.json");
                let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
                v.as_array_mut().unwrap().push(json!({"title": 5}));
                std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
            },
            "not readable threads",
        ),
    ];
    let pristine = snapshot(&data);
    for (what, damage, needle) in cases {
        for (p, b) in &pristine {
            std::fs::write(p, b).unwrap();
        }
        damage(&data);
        let before = snapshot(&data);
        let (code, report) = check_json(&config);
        assert_eq!(code, 1, "{what}: exit code, report {report}");
        let found = findings(&report);
        assert!(
            found
                .iter()
                .any(|(sev, text)| sev == "problem" && text.contains(needle)),
            "{what}: no problem mentions {needle:?}: {found:?}"
        );
        assert_eq!(
            snapshot(&data),
            before,
            "{what}: check changed the directory"
        );
        // The text form says the same.
        let out = coral(&config, &["check"]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("problem:"),
            "{what}"
        );
    }
    for (p, b) in &pristine {
        std::fs::write(p, b).unwrap();
    }
    // A damaged timeline: SQLite's integrity check reports it.
    ok(&config, &["-q", "timeline", "context", "--user", "u1"]);
    let (code, _) = check_json(&config);
    assert_eq!(code, 0, "a fresh timeline is sound");
    let db = data.join("coral_timeline.sqlite3");
    let mut b = std::fs::read(&db).unwrap();
    let page = 4096;
    assert!(b.len() >= 8 * page, "the timeline has pages to damage");
    // The b-tree page headers of pages 2 to 8 (the tables' and indexes' roots).
    for n in 1..8 {
        for x in &mut b[n * page..n * page + 8] {
            *x = 0xa5;
        }
    }
    std::fs::write(&db, &b).unwrap();
    let (code, report) = check_json(&config);
    assert_eq!(code, 1, "{report}");
    assert!(
        findings(&report)
            .iter()
            .any(|(s, t)| s == "problem" && t.contains("coral_timeline.sqlite3")),
        "{report}"
    );
}

#[test]
fn a_backup_taken_while_a_writer_runs_is_one_consistent_version() {
    let dir = tempfile::tempdir().unwrap();
    let config = seeded(dir.path(), 50);
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .args(["-q", "insert", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        for i in 0..3000 {
            if writeln!(stdin, "live memory {i} v{:x}", i * 104_729).is_err() {
                break;
            }
        }
    });
    let mut acks = BufReader::new(child.stdout.take().unwrap());
    let mut acked = 0;
    let mut line = String::new();
    while acked < 500 {
        line.clear();
        acks.read_line(&mut line).unwrap();
        acked += 1;
    }
    let backup = dir.path().join("backup");
    let out = ok(
        &config,
        &["-q", "--json", "backup", backup.to_str().unwrap()],
    );
    let manifest: Value = serde_json::from_str(&out).unwrap();
    // Everything acknowledged before the backup started is in it.
    let memories = manifest["memories"].as_u64().unwrap();
    assert!(memories >= 50 + 500, "backup holds {memories}");
    assert_eq!(manifest["threads"], 1);
    feeder.join().unwrap();
    for l in acks.lines() {
        l.unwrap();
    }
    child.wait().unwrap();
    // The backup is a data directory of its own that opens cleanly with that many memories.
    let (code, report) = {
        let out = Command::new(CORAL)
            .arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(&backup)
            .args(["-q", "--json", "check"])
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        )
    };
    assert_eq!(code, 0, "{report}");
    let exported = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(&backup)
        .args(["-q", "export"])
        .output()
        .unwrap();
    let lines = String::from_utf8(exported.stdout).unwrap().lines().count() as u64;
    assert_eq!(lines, memories);
    // A backup never goes into a directory that holds something.
    let again = coral(&config, &["backup", backup.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));
}

#[test]
fn a_restore_is_seen_by_a_running_process_and_a_damaged_backup_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = seeded(dir.path(), 20);
    let backup = dir.path().join("b");
    ok(&config, &["-q", "backup", backup.to_str().unwrap()]);
    // A long-running process (a server stand-in) keeps the directory open.
    let mut server = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .args(["-q", "insert", "--stdin", "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to = server.stdin.take().unwrap();
    let mut from = BufReader::new(server.stdout.take().unwrap());
    let mut ask = |line: Value| -> Value {
        writeln!(to, "{line}").unwrap();
        to.flush().unwrap();
        let mut answer = String::new();
        from.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    for i in 0..10 {
        ask(json!({"content": format!("after the backup {i}")}));
    }
    assert_eq!(ask(json!({"op": "stats"}))["total"], 30);

    // A damaged backup is refused before anything changes.
    let data = dir.path().join("memory_data");
    let before = snapshot(&data);
    let warm = backup.join("coral_warm.json");
    let good = std::fs::read(&warm).unwrap();
    let mut bad = good.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0x20;
    std::fs::write(&warm, &bad).unwrap();
    let out = coral(&config, &["restore", backup.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("coral_warm.json") && err.contains("manifest"),
        "{err}"
    );
    assert_eq!(snapshot(&data), before, "a refused restore changed files");
    std::fs::write(&warm, &good).unwrap();

    ok(&config, &["-q", "restore", backup.to_str().unwrap()]);
    // The running process sees the restored directory at its next call.
    assert_eq!(ask(json!({"op": "stats"}))["total"], 20);
    ask(json!({"content": "after the restore"}));
    drop(to);
    server.wait().unwrap();
    assert_eq!(ok(&config, &["-q", "export"]).lines().count(), 21);

    // An interrupted restore keeps the directory from opening until it is run again.
    std::fs::write(
        data.join(".coral_restore.json"),
        br#"{"restoring_from": "elsewhere"}"#,
    )
    .unwrap();
    let out = coral(&config, &["stats"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("coral restore"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, report) = check_json(&config);
    assert_eq!(code, 1, "{report}");
    ok(&config, &["-q", "restore", backup.to_str().unwrap()]);
    assert_eq!(ok(&config, &["-q", "export"]).lines().count(), 20);
}
