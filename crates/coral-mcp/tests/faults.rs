//! Syscall-level fault injection: real `coral` processes run under `strace -e inject=…`, which
//! makes one chosen call of `write`, `pwrite64`, `fsync`, `fdatasync` or `rename` fail with
//! `ENOSPC` or `EIO` (the Nth call, or every call from the Nth on), across the write paths:
//! memory inserts (`coral insert --stdin`), timeline writes (`coral http`) and thread advances
//! (`coral thread advance --stdin`).
//!
//! Every run must end with a clear answer (an acknowledgement or an error for each request, an
//! exit code of 0 or 1, never a panic or a signal), and afterwards, opened without faults, the
//! directory must hold every acknowledged write and pass `coral check` with no problem.
//!
//! `strace` comes from Debian's package (`.ci/run` installs it); the tests fail without it.

mod sidecar;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// One injected fault.
#[derive(Clone, Copy, Debug)]
struct Fault {
    syscall: &'static str,
    errno: &'static str,
    /// strace's `when`: `"5"` is the fifth call only, `"5+"` the fifth and every later one.
    when: &'static str,
}

impl Fault {
    fn strace_args(&self) -> Vec<String> {
        vec![
            "-f".into(),
            "-qq".into(),
            "-o".into(),
            "/dev/null".into(),
            "-e".into(),
            format!(
                "inject={}:error={}:when={}",
                self.syscall, self.errno, self.when
            ),
        ]
    }
}

fn strace() -> &'static str {
    let ok = Command::new("strace")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "these tests need strace (Debian package `strace`; .ci/run installs it)"
    );
    "strace"
}

fn config_in(dir: &Path) -> PathBuf {
    let config = dir.join("coral_config.json");
    // Every write is fsynced, so fsync faults land on the acknowledgement path; a small
    // journal limit makes checkpoints (renames) happen during the run too.
    std::fs::write(
        &config,
        r#"{"embedding": {"embedder": "hash"},
            "storage": {"sync": "always", "wal_max_bytes": 8192}}"#,
    )
    .unwrap();
    config
}

/// A clear end: exit 0 or 1 (not a signal, not a panic), saying why when it fails, unless
/// every write fails (stderr too: there is nowhere to say it).
fn assert_clear_end(status: std::process::ExitStatus, stderr: &str, fault: &Fault) {
    let what = format!("{fault:?}");
    assert!(
        matches!(status.code(), Some(0) | Some(1)),
        "{what}: ended with {status:?}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{what}: panicked: {stderr}");
    let mute = fault.syscall == "write" && fault.when.ends_with('+');
    if status.code() == Some(1) && !mute {
        assert!(
            stderr.contains("coral: "),
            "{what}: exit 1 without saying why: {stderr}"
        );
    }
}

fn coral(config: &Path, args: &[&str]) -> std::process::Output {
    Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap()
}

/// `coral check` after the run: no problem (notes such as a temp file left are fine).
fn assert_sound(config: &Path, what: &str) {
    let out = coral(config, &["-q", "--json", "check"]);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: check output ({e})"));
    let problems: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "problem")
        .collect();
    assert!(
        problems.is_empty(),
        "{what}: damage after the fault: {problems:?}"
    );
}

/// Run `coral -q <args>` under `fault`, feeding it `lines` on stdin; check it ended clearly
/// and return its output and stderr.
fn run_stream(
    strace: &str,
    fault: &Fault,
    config: &Path,
    args: &[&str],
    lines: &[String],
) -> (std::process::Output, String) {
    let mut child = Command::new(strace)
        .args(fault.strace_args())
        .arg(CORAL)
        .arg("--config")
        .arg(config)
        .arg("-q")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = lines.join("\n") + "\n";
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_clear_end(out.status, &stderr, fault);
    (out, stderr)
}

fn memory_faults() -> Vec<Fault> {
    let mut out = Vec::new();
    for errno in ["ENOSPC", "EIO"] {
        for when in ["2", "4", "6", "9", "13", "18", "25+"] {
            out.push(Fault {
                syscall: "write",
                errno,
                when,
            });
        }
    }
    for when in ["1", "2", "3", "5", "8", "12+"] {
        out.push(Fault {
            syscall: "fdatasync",
            errno: "EIO",
            when,
        });
    }
    for when in ["1", "3", "6"] {
        out.push(Fault {
            syscall: "fsync",
            errno: "EIO",
            when,
        });
    }
    for (errno, when) in [("ENOSPC", "1"), ("EIO", "2"), ("ENOSPC", "3+")] {
        out.push(Fault {
            syscall: "rename",
            errno,
            when,
        });
    }
    out
}

#[test]
fn memory_inserts_under_injected_faults_lose_nothing_acknowledged() {
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let faults = memory_faults();
    let mut failed_calls = 0;
    for (n, fault) in faults.iter().enumerate() {
        let lines: Vec<String> = (0..40)
            .map(|i| {
                format!(
                    "fault run {n} memory {i} w{:x} 第{i}条",
                    (n * 41 + i) * 7919
                )
            })
            .collect();
        let (out, _) = run_stream(strace, fault, &config, &["insert", "--stdin"], &lines);
        let what = format!("{fault:?}");
        for (i, line) in String::from_utf8_lossy(&out.stdout).lines().enumerate() {
            let ack: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{what}: ack {i} is not JSON ({e}): {line}"));
            match ack["item_id"].as_str() {
                Some(id) if ack.get("error").is_none() => {
                    acked.insert(id.to_string());
                }
                _ => {
                    assert!(ack["error"].is_string(), "{what}: unclear ack {ack}");
                    failed_calls += 1;
                }
            }
        }
        // Opened without faults: everything acknowledged is there, and nothing is damaged.
        let exported = coral(&config, &["-q", "export"]);
        assert!(exported.status.success(), "{what}: export failed");
        let present: BTreeSet<String> = String::from_utf8_lossy(&exported.stdout)
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["item_id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let lost: Vec<&String> = acked.difference(&present).collect();
        assert!(
            lost.is_empty(),
            "{what}: lost acknowledged inserts {lost:?}"
        );
        assert_sound(&config, &what);
    }
    eprintln!(
        "memory inserts: {} faults injected, {} inserts acknowledged, {} refused with an error, \
         0 lost, 0 damaged",
        faults.len(),
        acked.len(),
        failed_calls
    );
    assert!(acked.len() > 200 && failed_calls > 0);
}

/// strace counts calls per thread, and the server runs each call on one of a pool of
/// threads, so these faults recur (`N+S`: the Nth call of a thread and every S-th after it).
fn timeline_faults() -> Vec<Fault> {
    let mut out = Vec::new();
    for errno in ["ENOSPC", "EIO"] {
        for when in ["2+5", "3+9", "4+13", "6+4"] {
            out.push(Fault {
                syscall: "pwrite64",
                errno,
                when,
            });
        }
    }
    for syscall in ["fdatasync", "fsync"] {
        for when in ["1+4", "2+7", "3+11"] {
            out.push(Fault {
                syscall,
                errno: "EIO",
                when,
            });
        }
    }
    out
}

/// Kill a process running under strace: the traced process first (killing strace alone
/// detaches it, and it would run on holding the pipes), then strace.
fn kill_traced(child: &mut std::process::Child) {
    let pid = child.id();
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    for tracee in children.split_whitespace() {
        let _ = Command::new("kill").args(["-KILL", tracee]).status();
    }
    let _ = child.kill();
}

#[test]
fn timeline_writes_under_injected_faults_lose_nothing_acknowledged() {
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    let config = sidecar::config_in(dir.path());
    // Full durability: every commit's fsync is on the acknowledgement path.
    std::fs::write(
        &config,
        r#"{"embedding": {"embedder": "hash"}, "storage": {"sync": "always"}}"#,
    )
    .unwrap();
    let scope = ["--user", "host", "--conversation", "faults"];
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let mut refused = 0;
    let faults = timeline_faults();
    for (n, fault) in faults.iter().enumerate() {
        let what = format!("{fault:?}");
        let mut child = Command::new(strace)
            .args(fault.strace_args())
            .arg(CORAL)
            .arg("--config")
            .arg(&config)
            // The host records for the user it serves, pinned like a deployment would be.
            .args(["-q", "http", "--port", "0", "--user", "host"])
            .env_remove("CORAL_HTTP_TOKEN")
            .env_remove("CORAL_ANY_NAMESPACE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let listening: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{what}: no address line ({e}): {line:?}"));
        let url = format!("http://{}/rpc", listening["listening"].as_str().unwrap());
        let post = |tool: &str, args: Value| -> Option<(u16, Value)> {
            let body = json!({"tool": tool, "args": args}).to_string();
            let response = match ureq::post(&url)
                .set("Content-Type", "application/json")
                .timeout(std::time::Duration::from_secs(30))
                .send_string(&body)
            {
                Ok(r) => r,
                Err(ureq::Error::Status(_, r)) => r,
                Err(_) => return None,
            };
            let status = response.status();
            let text = response.into_string().ok()?;
            Some((status, serde_json::from_str(&text).ok()?))
        };
        for t in 0..8 {
            let turn = format!("run{n}-turn{t}");
            let base = json!({"user_id": "host", "conversation_id": "faults", "turn_id": turn});
            let with = |extra: Value| {
                let mut a = base.clone();
                a.as_object_mut()
                    .unwrap()
                    .extend(extra.as_object().unwrap().clone());
                a
            };
            let steps = [
                (
                    "timeline_begin_turn",
                    with(
                        json!({"text": format!("question {n}.{t}"), "source_id": format!("q{n}-{t}")}),
                    ),
                    vec![format!("q{n}-{t}")],
                ),
                (
                    "timeline_record_tool",
                    with(json!({"tool_name": "shell", "call_id": format!("c{n}-{t}"),
                                "input": {"cmd": "ls"}, "result": "a\nb\n".repeat(30),
                                "call_source_id": format!("c{n}-{t}"),
                                "result_source_id": format!("r{n}-{t}")})),
                    vec![format!("c{n}-{t}"), format!("r{n}-{t}")],
                ),
                (
                    "timeline_complete_turn",
                    with(
                        json!({"final_text": format!("answer {n}.{t}"), "source_id": format!("a{n}-{t}")}),
                    ),
                    vec![format!("a{n}-{t}")],
                ),
            ];
            for (tool, args, ids) in steps {
                match post(tool, args) {
                    Some((200, _)) => acked.extend(ids),
                    Some((status, body)) => {
                        assert!(
                            status == 400 || status == 500,
                            "{what}: {tool} answered {status}: {body}"
                        );
                        assert!(body["error"].is_string(), "{what}: {body}");
                        refused += 1;
                        // The turn cannot go on; the host starts the next one.
                        break;
                    }
                    None => break,
                }
            }
        }
        kill_traced(&mut child);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        // Restarted without faults: every acknowledged entry reads back, nothing is damaged.
        let (ids, _) = sidecar::read_all(&config, &scope);
        let present: BTreeSet<String> = ids.into_iter().collect();
        let lost: Vec<&String> = acked.difference(&present).collect();
        assert!(
            lost.is_empty(),
            "{what}: lost acknowledged entries {lost:?}"
        );
        assert_sound(&config, &what);
    }
    eprintln!(
        "timeline writes: {} faults injected, {} entries acknowledged, {} calls refused with an \
         error, 0 lost, 0 damaged",
        faults.len(),
        acked.len(),
        refused
    );
    assert!(acked.len() > 100 && refused > 0);
}

/// Faults on the thread write path: the journal's `pwrite64` and `fdatasync` (the
/// acknowledgement path with `storage.sync = "always"`), the directory `fsync` when the
/// journal is created and at checkpoints, and the checkpoint's `write` and `rename` on the
/// writer thread (strace counts per thread, so a `write` fault lands on stdout's
/// acknowledgements or on the checkpoint's temp file, whichever thread reaches the count).
fn thread_faults() -> Vec<Fault> {
    vec![
        Fault {
            syscall: "pwrite64",
            errno: "ENOSPC",
            when: "3",
        },
        Fault {
            syscall: "pwrite64",
            errno: "EIO",
            when: "7+5",
        },
        Fault {
            syscall: "pwrite64",
            errno: "ENOSPC",
            when: "12+",
        },
        Fault {
            syscall: "fdatasync",
            errno: "EIO",
            when: "2",
        },
        Fault {
            syscall: "fdatasync",
            errno: "EIO",
            when: "5+4",
        },
        Fault {
            syscall: "fdatasync",
            errno: "EIO",
            when: "9+",
        },
        Fault {
            syscall: "fsync",
            errno: "EIO",
            when: "1",
        },
        Fault {
            syscall: "fsync",
            errno: "EIO",
            when: "2+",
        },
        Fault {
            syscall: "write",
            errno: "ENOSPC",
            when: "1",
        },
        Fault {
            syscall: "write",
            errno: "EIO",
            when: "6",
        },
        Fault {
            syscall: "rename",
            errno: "ENOSPC",
            when: "1",
        },
        Fault {
            syscall: "rename",
            errno: "EIO",
            when: "1+",
        },
    ]
}

/// A thread's steps as a fresh process reads them: `(step_id, text)` in order, checked for
/// seq 1..n.
fn thread_steps(config: &Path, id: &str, what: &str) -> Vec<(String, String)> {
    let out = coral(config, &["-q", "thread", "status", id, "--json"]);
    assert!(
        out.status.success(),
        "{what}: status failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = v["thread"]["steps"].as_array().unwrap();
    let seqs: Vec<u64> = steps.iter().map(|s| s["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=steps.len() as u64).collect::<Vec<_>>(),
        "{what}: seq"
    );
    steps
        .iter()
        .map(|s| {
            (
                s["step_id"].as_str().unwrap().to_string(),
                s["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn thread_advances_under_injected_faults_lose_nothing_acknowledged() {
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let created = coral(
        &config,
        &["-q", "thread", "create", "under faults", "--json"],
    );
    assert!(created.status.success());
    let id = serde_json::from_slice::<Value>(&created.stdout).unwrap()["thread"]["thread_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let mut refused = 0;
    let mut unanswered = 0;
    let mut refused_texts: BTreeSet<String> = BTreeSet::new();
    let faults = thread_faults();
    for (n, fault) in faults.iter().enumerate() {
        let what = format!("{fault:?}");
        let lines: Vec<String> = (0..30).map(|i| format!("fault run {n} step {i}")).collect();
        let args = ["thread", "advance", &id, "--stdin", "--not-done"];
        let (out, stderr) = run_stream(strace, fault, &config, &args, &lines);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut answered = 0;
        for (i, line) in stdout.lines().enumerate() {
            let ack: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{what}: ack {i} is not JSON ({e}): {line}"));
            answered += 1;
            if ack["ok"] == true {
                acked.insert(ack["step_id"].as_str().unwrap().to_string());
            } else {
                let error = ack["error"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{what}: {ack}"));
                assert!(
                    error.contains("nothing was recorded"),
                    "{what}: unclear error {error}"
                );
                assert_eq!(ack["line"], i + 1, "{what}: {ack}");
                refused_texts.insert(lines[i].clone());
                refused += 1;
            }
        }
        if answered < lines.len() {
            // Only a failed acknowledgement (stdout) stops the stream; it must say so.
            assert_eq!(out.status.code(), Some(1), "{what}: {answered} answers");
            // It names the line it stopped at and whether that line was stored.
            assert!(
                stderr.contains(&format!("acknowledgement of line {}", answered + 1))
                    || stderr.contains(&format!("acknowledgement of line {answered}")),
                "{what}: stopped without saying where: {stderr}"
            );
            unanswered += lines.len() - answered;
        }
        // A fresh process reads every acknowledged step, once, and nothing is damaged.
        let steps = thread_steps(&config, &id, &what);
        let present: BTreeSet<String> = steps.iter().map(|(s, _)| s.clone()).collect();
        assert_eq!(present.len(), steps.len(), "{what}: a step twice");
        let lost: Vec<&String> = acked.difference(&present).collect();
        assert!(lost.is_empty(), "{what}: lost acknowledged steps {lost:?}");
        // A refused step was taken back: it is not there either.
        let stored: Vec<&String> = steps
            .iter()
            .map(|(_, text)| text)
            .filter(|t| refused_texts.contains(*t))
            .collect();
        assert!(stored.is_empty(), "{what}: refused steps stored {stored:?}");
        assert_sound(&config, &what);
    }
    eprintln!(
        "thread advances: {} faults injected, {} steps acknowledged, {refused} refused with an \
         error, {unanswered} not read after an acknowledgement could not be written, 0 lost, 0 damaged",
        faults.len(),
        acked.len(),
    );
    assert!(acked.len() > 150 && refused > 0);
}
