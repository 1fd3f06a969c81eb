//! The timeline's file in real trouble, through the `coral` binary: a write-ahead log garbled
//! in the middle is said out loud (it used to lose entries with exit 0 and no message), and
//! `coral timeline read` / `coral timeline open` work on a read-only file system and on a full
//! disk (small tmpfs mounts; the tests run as root, as CI does, and fail rather than skip when
//! mounting is impossible), saying that nothing is recorded, while writes fail saying why.

mod sidecar;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use sidecar::{Sidecar, config_in, coral, read_all};

/// A tmpfs of `size`, unmounted when dropped.
struct Mount {
    dir: tempfile::TempDir,
}

impl Mount {
    fn new(size: &str) -> Mount {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "these tests mount a tmpfs (run as root, as CI does): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Mount { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remount(&self, options: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Fill the file system to its last byte.
    fn fill(&self) {
        use std::io::Write;
        let mut filler = std::fs::File::create(self.path().join("filler")).unwrap();
        let chunk = vec![0u8; 4096];
        while filler.write_all(&chunk).is_ok() {}
        while filler.write_all(&[0u8]).is_ok() {}
    }

    fn unfill(&self) {
        std::fs::remove_file(self.path().join("filler")).unwrap();
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}

const SCOPE: [&str; 4] = ["--user", "alice", "--conversation", "c1"];

fn ns(extra: Value) -> Value {
    let mut v = json!({"user_id": "alice", "conversation_id": "c1"});
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

/// Record `n` entries (a turn with a tool exchange every third) through `coral http`.
fn record(http: &Sidecar, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        if i % 3 == 0 {
            let turn = http.ok(
                "timeline_begin_turn",
                ns(json!({"text": format!("question {i}"), "source_id": format!("q{i}")})),
            );
            http.ok(
                "timeline_record_tool",
                ns(json!({"turn_id": turn["turn_id"], "tool_name": "shell",
                          "call_id": format!("call{i}"), "result": format!("output {i}"),
                          "call_source_id": format!("c{i}"), "result_source_id": format!("r{i}")})),
            );
            http.ok(
                "timeline_complete_turn",
                ns(
                    json!({"turn_id": turn["turn_id"], "final_text": format!("answer {i}"),
                          "source_id": format!("a{i}")}),
                ),
            );
            ids.extend([
                format!("q{i}"),
                format!("c{i}"),
                format!("r{i}"),
                format!("a{i}"),
            ]);
        } else {
            http.ok(
                "timeline_record_entry",
                ns(json!({"kind": "message.user", "text": format!("note {i}"),
                          "source_id": format!("n{i}")})),
            );
            ids.push(format!("n{i}"));
        }
    }
    ids
}

fn log_of(config: &Path) -> PathBuf {
    config
        .parent()
        .unwrap()
        .join("memory_data")
        .join("coral_timeline.sqlite3-wal")
}

#[test]
fn a_garbled_log_is_said_out_loud() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let http = Sidecar::start(&config);
    let ids = record(&http, 30);
    http.kill();
    let log = log_of(&config);
    let mut bytes = std::fs::read(&log).unwrap();
    let page = u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
    let frames = (bytes.len() - 32) / (24 + page);
    assert!(frames > 10, "{frames} frames");
    bytes[32 + (frames / 2) * (24 + page) + 24 + 777] ^= 0x40;
    std::fs::write(&log, &bytes).unwrap();

    let (found, said) = read_all(&config, &SCOPE);
    assert!(
        found.len() < ids.len(),
        "SQLite dropped what followed the damage"
    );
    assert!(
        said.contains("coral: repaired: ") && said.contains(&log.display().to_string()),
        "the damage was not said: {said:?}"
    );
    assert!(
        said.contains("committed transaction(s) are not in the timeline"),
        "{said}"
    );
    let copies: Vec<PathBuf> = std::fs::read_dir(log.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".corrupt"))
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(std::fs::read(&copies[0]).unwrap(), bytes);
    assert!(said.contains(&copies[0].display().to_string()), "{said}");
    // Said once: the next command finds the damage recorded.
    let (again, said) = read_all(&config, &SCOPE);
    assert_eq!(again, found);
    assert!(!said.contains("repaired"), "{said}");
    // The metrics carry it for the process that found it.
    let http = Sidecar::start(&config);
    let metrics = http.ok("timeline_metrics", ns(json!({})));
    assert_eq!(metrics["repairs"], json!([]), "recorded, not found again");
    assert_eq!(metrics["read_only"], Value::Null);
    http.stop();
}

/// How the server left the timeline before the trouble.
#[derive(Clone, Copy, Debug)]
enum Left {
    /// SIGTERM: checkpointed, no log.
    Clean,
    /// SIGKILL: the log and its `-shm` index.
    Killed,
    /// SIGKILL, then the `-shm` index lost (a copy that took only the database and the log).
    KilledNoIndex,
}

fn prepare(mount: &Mount, left: Left) -> (PathBuf, Vec<String>) {
    let config = config_in(mount.path());
    let http = Sidecar::start(&config);
    let ids = record(&http, 12);
    match left {
        Left::Clean => http.stop(),
        Left::Killed | Left::KilledNoIndex => http.kill(),
    }
    let shm = log_of(&config).with_file_name("coral_timeline.sqlite3-shm");
    match left {
        Left::Clean => assert!(!log_of(&config).exists()),
        Left::Killed => assert!(log_of(&config).exists() && shm.exists()),
        Left::KilledNoIndex => std::fs::remove_file(shm).unwrap(),
    }
    (config, ids)
}

/// `timeline read` finds every entry and `timeline open` the exact body, exit 0; returns what
/// they said on stderr.
fn reads_work(config: &Path, ids: &[String], context: &str) -> String {
    let (found, mut said) = read_all(config, &SCOPE);
    assert_eq!(found, ids, "{context}: {said}");
    let mut args = vec!["timeline", "open", "r6", "--view", "content"];
    args.extend_from_slice(&SCOPE);
    let (code, out, err) = coral(config, &args);
    assert_eq!(code, Some(0), "{context}: timeline open: {err}");
    let opened: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        opened["memory"]["content"], "output 6",
        "{context}: {opened}"
    );
    said.push_str(&err);
    // The other reads too: the context, and retrieval (its vectors cannot be saved).
    for read in [
        vec!["timeline", "context"],
        vec!["timeline", "retrieve", "output 6", "--include-visible"],
    ] {
        let mut args = read.clone();
        args.extend_from_slice(&SCOPE);
        let (code, out, err) = coral(config, &args);
        assert_eq!(code, Some(0), "{context}: {read:?}: {err}");
        assert!(
            out.contains("output 6") || out.contains("question 6"),
            "{context}: {out}"
        );
        said.push_str(&err);
    }
    said
}

/// A write through a server on `config` fails, saying why; the server is returned.
fn writes_fail(config: &Path, entries: usize, why: &str, context: &str) -> Sidecar {
    let http = Sidecar::start(config);
    let (status, body) = http
        .try_call(
            "timeline_record_entry",
            &ns(json!({"kind": "message.user", "text": "not recorded"})),
        )
        .unwrap();
    assert_eq!(status, 500, "{context}: {body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.starts_with("unwritable: ")
            && error.contains("nothing was written")
            && error.contains(why),
        "{context}: {error}"
    );
    let metrics = http.ok("timeline_metrics", ns(json!({})));
    assert_eq!(
        metrics["metrics"]["entries"], entries,
        "{context}: {metrics}"
    );
    http
}

#[test]
fn timeline_reads_work_on_a_read_only_file_system() {
    // A copy left by a process killed while it read one.
    let mut gone = Command::new("true").spawn().unwrap();
    let orphan = std::env::temp_dir().join(format!("coral-timeline-{}-1", gone.id()));
    gone.wait().unwrap();
    std::fs::create_dir_all(&orphan).unwrap();
    std::fs::write(orphan.join("timeline.sqlite3"), b"left behind").unwrap();
    for left in [Left::Clean, Left::Killed, Left::KilledNoIndex] {
        let context = format!("read-only after {left:?}");
        let mount = Mount::new("8m");
        let (config, ids) = prepare(&mount, left);
        mount.remount("ro");
        let said = reads_work(&config, &ids, &context);
        assert!(
            said.contains("coral: note: timeline: read-only file system")
                && said.contains("nothing is recorded"),
            "{context}: {said:?}"
        );
        writes_fail(&config, ids.len(), "read-only file system", &context).stop();
        // Writable again: nothing was lost, and it records.
        mount.remount("rw");
        let http = Sidecar::start(&config);
        http.ok(
            "timeline_record_entry",
            ns(json!({"kind": "message.user", "text": "back", "source_id": "back"})),
        );
        http.stop();
        let (found, said) = read_all(&config, &SCOPE);
        assert_eq!(found.len(), ids.len() + 1, "{context}: {said}");
        assert!(!said.contains("nothing is recorded"), "{context}: {said}");
    }
    assert!(!orphan.exists(), "the next copy removes a dead process's");
    no_orphan_copies();
}

/// Private copies read where the log's index cannot be made are removed by the process that
/// made them, or after it died by the next copy taken: none belongs to a dead process.
fn no_orphan_copies() {
    for entry in std::fs::read_dir(std::env::temp_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix("coral-timeline-") {
            let pid = rest.split('-').next().unwrap();
            assert!(
                Path::new(&format!("/proc/{pid}")).exists(),
                "{name} was left by a process that is gone"
            );
        }
    }
}

#[test]
fn timeline_reads_work_on_a_full_disk() {
    for left in [Left::Clean, Left::Killed, Left::KilledNoIndex] {
        let context = format!("full disk after {left:?}");
        let mount = Mount::new("8m");
        let (config, ids) = prepare(&mount, left);
        mount.fill();
        let said = reads_work(&config, &ids, &context);
        if matches!(left, Left::Clean) {
            // No log index can be made: read-only, and said so.
            assert!(said.contains("nothing is recorded"), "{context}: {said:?}");
        }
        let http = writes_fail(&config, ids.len(), "disk", &context);
        mount.unfill();
        // The same server records again once there is space: a timeline it opened read-only
        // is opened for writing again by a call after READ_ONLY_RETRY.
        let again = json!({"kind": "message.user", "text": "space again", "source_id": "later"});
        let deadline = std::time::Instant::now() + coral::timeline::READ_ONLY_RETRY * 3;
        loop {
            let (status, body) = http
                .try_call("timeline_record_entry", &ns(again.clone()))
                .unwrap();
            if status == 200 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{context}: still refused: {body}"
            );
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        http.stop();
        let (found, _) = read_all(&config, &SCOPE);
        assert_eq!(found.len(), ids.len() + 1, "{context}");
    }
    no_orphan_copies();
}
