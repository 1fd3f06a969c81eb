//! A real full disk and a real read-only file system (small tmpfs mounts; the tests run as root,
//! as CI does, and fail rather than skip when mounting is impossible):
//!
//! - an insert that reports failure (CLI exit code, `--stdin` ack, HTTP status) stored nothing,
//!   and every acknowledged insert is there;
//! - reads (`search`, `get`, `stats`, `export`, `report`) succeed on a full disk and on a
//!   read-only directory, and say that nothing was recorded;
//! - writes on a read-only directory fail with a message that says why.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// A tmpfs of a given size, unmounted when dropped.
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
            "these tests need to mount a tmpfs (run as root, as CI does): {}",
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
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn config_in(dir: &Path) -> PathBuf {
    let config = dir.join("coral_config.json");
    std::fs::write(
        &config,
        r#"{"embedding": {"embedder": "hash"}, "storage": {"sync": "always"}}"#,
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

fn text(memory: usize) -> String {
    // Distinct words, so no insert merges into another.
    format!(
        "memory {memory} w{:x} v{:x} 第{memory}条记忆 {}",
        memory * 7919,
        memory * 104_729,
        "填充".repeat(memory % 40)
    )
}

fn exported(config: &Path) -> Vec<Value> {
    let out = coral(config, &["-q", "export"]);
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn contents(memories: &[Value]) -> BTreeSet<String> {
    memories
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_insert_that_reports_failure_on_a_full_disk_stored_nothing() {
    let mount = Mount::new("320k");
    let config = config_in(mount.path());
    let mut acked = BTreeSet::new();
    let mut failed = Vec::new();
    // One process per insert: each also checkpoints at close, where the disk fills first.
    for i in 0..400 {
        let t = text(i);
        let out = coral(&config, &["-q", "insert", &t]);
        if out.status.success() {
            acked.insert(t);
        } else {
            let err = String::from_utf8_lossy(&out.stderr).to_string();
            assert!(err.contains("No space left"), "unexpected failure: {err}");
            failed.push(t);
            if failed.len() >= 5 {
                break;
            }
        }
    }
    assert!(
        failed.len() >= 5,
        "the disk never filled ({} acked)",
        acked.len()
    );
    let stored = contents(&exported(&config));
    for t in &failed {
        assert!(!stored.contains(t), "an insert that failed was stored: {t}");
    }
    assert_eq!(stored, acked, "every acknowledged insert and nothing else");
    eprintln!(
        "full disk, one process per insert: {} acknowledged, {} refused, none of them stored",
        acked.len(),
        failed.len()
    );
}

#[test]
fn insert_stdin_acks_match_what_is_stored_on_a_full_disk() {
    let mount = Mount::new("256k");
    let config = config_in(mount.path());
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .args(["-q", "insert", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines: Vec<String> = (0..1500).map(text).collect();
    let input = lines.join("\n") + "\n";
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut ok = BTreeSet::new();
    let mut refused = BTreeSet::new();
    for (n, line) in BufReader::new(child.stdout.take().unwrap())
        .lines()
        .enumerate()
    {
        let ack: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if ack.get("error").is_some() {
            refused.insert(lines[n].clone());
        } else {
            ok.insert(lines[n].clone());
        }
    }
    feeder.join().unwrap();
    let _ = child.wait();
    assert!(!refused.is_empty(), "the disk never filled");
    let stored = contents(&exported(&config));
    assert!(
        stored.is_disjoint(&refused),
        "refused lines were stored: {:?}",
        stored.intersection(&refused).take(3).collect::<Vec<_>>()
    );
    assert_eq!(stored, ok);
}

#[test]
fn http_inserts_answered_500_stored_nothing() {
    let mount = Mount::new("256k");
    let config = config_in(mount.path());
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .args(["-q", "http", "--port", "0"])
        .env_remove("CORAL_HTTP_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let listening: Value = serde_json::from_str(&line).unwrap();
    let url = format!("http://{}/rpc", listening["listening"].as_str().unwrap());
    let (mut ok, mut refused) = (BTreeSet::new(), BTreeSet::new());
    for i in 0..2000 {
        let t = text(i);
        let body = serde_json::json!({"tool": "memory_insert", "args": {"content": t}});
        let status = match ureq::post(&url)
            .set("Content-Type", "application/json")
            .send_string(&body.to_string())
        {
            Ok(r) => r.status(),
            Err(ureq::Error::Status(code, r)) => {
                let mut s = String::new();
                let _ = r.into_reader().read_to_string(&mut s);
                assert_eq!(code, 500, "{s}");
                code
            }
            Err(e) => panic!("transport: {e}"),
        };
        if status == 200 {
            ok.insert(t);
        } else {
            refused.insert(t);
            if refused.len() >= 20 {
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(!refused.is_empty(), "the disk never filled");
    let stored = contents(&exported(&config));
    assert!(
        stored.is_disjoint(&refused),
        "an insert answered 500 was stored"
    );
    assert_eq!(stored, ok);
}

fn access_count(config: &Path, id: &str) -> u64 {
    exported(config)
        .iter()
        .find(|m| m["item_id"] == id)
        .and_then(|m| m["access_count"].as_u64())
        .unwrap()
}

/// Reads on `config` succeed (exit 0); a search either records its hit or says it did not.
fn reads_succeed(config: &Path, id: &str, context: &str) {
    let before = access_count(config, id);
    for args in [
        vec!["search", "memory 3"],
        vec!["get", id],
        vec!["stats"],
        vec!["export"],
        vec!["report"],
    ] {
        let out = coral(config, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{context}: coral {} failed: {err}",
            args.join(" ")
        );
        assert!(
            !out.stdout.is_empty(),
            "{context}: {} printed nothing",
            args[0]
        );
        if args[0] == "search" {
            let said = err.contains("nothing was recorded") || err.contains("not recorded");
            let counted = access_count(config, id) > before;
            assert!(
                said != counted,
                "{context}: the hit was {} and the search said {}: {err}",
                if counted { "counted" } else { "not counted" },
                if said { "so" } else { "nothing" }
            );
        }
    }
}

#[test]
fn reads_work_on_a_full_disk_and_on_a_read_only_directory() {
    let mount = Mount::new("256k");
    let config = config_in(mount.path());
    let out = coral(&config, &["-q", "insert", &text(3)]);
    assert!(out.status.success());
    let id = exported(&config)[0]["item_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Fill the disk to the last byte with another file.
    let mut filler = std::fs::File::create(mount.path().join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    while filler.write_all(&chunk).is_ok() {}
    while filler.write_all(&[0u8]).is_ok() {}
    drop(filler);
    // The search's bookkeeping (access counts) may not fit: it still answers, and says so.
    let before = exported(&config);
    reads_succeed(&config, &id, "full disk");

    std::fs::remove_file(mount.path().join("filler")).unwrap();
    mount.remount("ro");
    reads_succeed(&config, &id, "read-only file system");
    let out = coral(&config, &["insert", "a new memory on a read-only disk"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("read-only"), "{err}");
    mount.remount("rw");
    assert_eq!(contents(&exported(&config)), contents(&before));
}
