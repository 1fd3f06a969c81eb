//! `coral thread` on a directory it cannot write: a read-only bind mount and a full tmpfs,
//! each in a private mount namespace (`unshare -m`, as root) so nothing outside the test
//! sees them. Reading works and says that nothing was recorded; a change fails with a clear
//! error and records nothing; what a killed writer left in its journal is shown anyway.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// A data directory with a thread whose last steps are only in the journal of a writer that
/// was SIGKILLed: (config dir, thread id, every acknowledged step id).
fn directory_with_a_killed_writer() -> (tempfile::TempDir, String, BTreeSet<String>) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("coral_config.json");
    std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
    let coral = |args: &[&str]| {
        let out = Command::new(CORAL)
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let id = coral(&["thread", "create", "unwritable", "--json"])["thread"]["thread_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut acked = BTreeSet::new();
    for note in ["first", "second"] {
        let t = coral(&["thread", "advance", &id, note, "--json"]);
        let steps = t["thread"]["steps"].as_array().unwrap();
        acked.insert(
            steps.last().unwrap()["step_id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .args(["thread", "advance", &id, "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for i in 0..20 {
        writeln!(stdin, "streamed {i}").unwrap();
    }
    stdin.flush().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..20 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let ack: Value = serde_json::from_str(&line).unwrap();
        acked.insert(ack["step_id"].as_str().unwrap().to_string());
    }
    child.kill().unwrap(); // SIGKILL, with stdin still open: no clean shutdown
    child.wait().unwrap();
    drop(stdin);
    let data = dir.path().join("memory_data");
    let names: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.contains(".journal-")),
        "the killed writer left its journal: {names:?}"
    );
    // If the kill landed inside a checkpoint, its lock file is left too; a dead writer's lock
    // is broken after 10 s (tested elsewhere), which is not what this test waits for.
    let _ = std::fs::remove_file(data.join("coral_threads.json.lock"));
    (dir, id, acked)
}

/// Run `setup` (shell, as root, `$D` = `dir`) and then each coral command in one private
/// mount namespace; return each command's (exit code, stdout, stderr).
fn in_private_mounts(
    setup: &str,
    dir: &Path,
    config: &Path,
    commands: &[&[&str]],
) -> Vec<(i32, String, String)> {
    let out = tempfile::tempdir().unwrap();
    let mut script = format!("set -e\n{setup}\nset +e\n");
    for (i, args) in commands.iter().enumerate() {
        let o = out.path().join(i.to_string());
        script.push_str(&format!(
            "\"$CORAL\" --config \"$CONFIG\" {} > '{o}.out' 2> '{o}.err'; echo $? > '{o}.rc'\n",
            args.iter()
                .map(|a| format!("'{a}'"))
                .collect::<Vec<_>>()
                .join(" "),
            o = o.display()
        ));
    }
    let status = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .env("D", dir)
        .env("CONFIG", config)
        .env("CORAL", CORAL)
        .env_remove("CORAL_DATA_DIR")
        .env_remove("CORAL_CONFIG_PATH")
        .status()
        .expect("unshare (util-linux) runs these tests; it must be installed");
    assert!(
        status.success(),
        "setting up the mounts failed ({status}): these tests need root and `unshare -m`"
    );
    (0..commands.len())
        .map(|i| {
            let o = out.path().join(i.to_string());
            let read = |ext: &str| std::fs::read_to_string(format!("{}.{ext}", o.display()));
            (
                read("rc").unwrap().trim().parse().unwrap(),
                read("out").unwrap(),
                read("err").unwrap(),
            )
        })
        .collect()
}

fn step_ids(status_json: &str) -> BTreeSet<String> {
    let v: Value =
        serde_json::from_str(status_json).unwrap_or_else(|e| panic!("{e}: {status_json:?}"));
    v["thread"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_id"].as_str().unwrap().to_string())
        .collect()
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn thread_status_reads_a_read_only_directory_and_advance_records_nothing() {
    let (dir, id, acked) = directory_with_a_killed_writer();
    let config = dir.path().join("coral_config.json");
    let data = dir.path().join("memory_data");
    let before = listing(&data);
    let runs = in_private_mounts(
        r#"mount --bind "$D" "$D" && mount -o remount,bind,ro "$D""#,
        dir.path(),
        &config,
        &[
            &["thread", "status", &id, "--json"],
            &["thread", "status"],
            &["thread", "advance", &id, "not recorded"],
        ],
    );
    let (code, out, err) = &runs[0];
    assert_eq!(*code, 0, "status on a read-only directory: {err}");
    assert_eq!(
        step_ids(out),
        acked,
        "every acknowledged step, journal ones too"
    );
    assert!(err.contains("nothing was recorded"), "{err}");
    assert!(err.contains("Read-only file system"), "{err}");
    let (code, out, err) = &runs[1];
    assert_eq!(*code, 0, "{err}");
    assert!(out.contains("unwritable"), "{out}");
    let (code, _, err) = &runs[2];
    assert_eq!(*code, 1, "a change on a read-only directory fails: {err}");
    assert!(err.contains("nothing was recorded"), "{err}");
    assert!(
        err.contains(".journal-"),
        "the error names the journal: {err}"
    );
    // Nothing was written, removed or left behind.
    assert_eq!(listing(&data), before);
}

#[test]
fn thread_status_reads_a_full_disk_and_advance_records_nothing() {
    let (dir, id, acked) = directory_with_a_killed_writer();
    // A copy on a 1 MiB tmpfs, filled up before coral runs.
    let full = tempfile::tempdir().unwrap();
    let config = full.path().join("coral_config.json");
    let setup = format!(
        r#"mount -t tmpfs -o size=1m tmpfs "$D"
cp -a '{src}/.' "$D/"
cat /dev/zero > "$D/filler" 2>/dev/null || true
ls -a "$D/memory_data" > /dev/null"#,
        src = dir.path().display()
    );
    let runs = in_private_mounts(
        &setup,
        full.path(),
        &config,
        &[
            &["thread", "status", &id, "--json"],
            &["thread", "advance", &id, "not recorded"],
            &["thread", "status", &id, "--json"],
            &["--json", "thread", "create", "not recorded either"],
            &["thread", "status", "--all", "--json"],
        ],
    );
    let (code, out, err) = &runs[0];
    assert_eq!(*code, 0, "status on a full disk: {err}");
    assert_eq!(step_ids(out), acked);
    assert!(err.contains("nothing was recorded"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let (code, _, err) = &runs[1];
    assert_eq!(*code, 1, "an advance on a full disk fails: {err}");
    assert!(err.contains("nothing was recorded"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let (code, out, err) = &runs[2];
    assert_eq!(*code, 0, "{err}");
    assert_eq!(step_ids(out), acked, "the failed advance left no step");
    let (code, _, err) = &runs[3];
    assert_eq!(*code, 1, "{err}");
    assert!(err.contains("nothing was recorded"), "{err}");
    let (code, out, err) = &runs[4];
    assert_eq!(*code, 0, "{err}");
    let all: Value = serde_json::from_str(out).unwrap();
    assert_eq!(all["count"], 1, "the failed create left no thread: {all}");
    // The tmpfs is gone with the namespace; the original directory was never touched.
    let _: PathBuf = full.path().to_path_buf();
}
