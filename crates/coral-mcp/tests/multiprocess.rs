//! Several real `coral insert --stdin --jsonl` processes on one data directory (docs/storage.md):
//! thousands of interleaved inserts (some duplicated across processes), deletes and searches.
//! The directory must end with exactly the acknowledged inserts minus the acknowledged deletes,
//! every process must agree after one call, and a process killed mid-run must not cost any
//! acknowledged write.
//!
//! A kill can always land between a write becoming durable and its acknowledgement being
//! written (a commit that also checkpoints makes that window long). Such a write is stored but
//! was never acknowledged, so counting only acknowledgements is wrong (this test failed that
//! way under load). The killed process is therefore killed exactly there: its acknowledgements
//! are not read until its stdout pipe is full and it is blocked writing one, after the commit
//! of that line. That line must be stored; the lines after it were never read by it.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Worker {
    fn start(config: &Path) -> Worker {
        let mut child = Command::new(CORAL)
            .args(["-q", "--config"])
            .arg(config)
            .args(["insert", "--stdin", "--jsonl"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Worker {
            child,
            stdin: Some(stdin),
            stdout,
        }
    }

    fn stdin(&mut self) -> &mut ChildStdin {
        self.stdin.as_mut().expect("stdin still open")
    }

    fn send(&mut self, line: &Value) {
        writeln!(self.stdin(), "{line}").unwrap();
    }

    fn flush(&mut self) {
        self.stdin().flush().unwrap();
    }

    /// Whether the process's main thread (the one that answers) is blocked in `write(1, ...)`:
    /// the kernel shows a blocked thread's system call and arguments in `/proc/.../syscall`.
    fn blocked_writing_stdout(&self) -> bool {
        const WRITE: &str = if cfg!(target_arch = "aarch64") {
            "64"
        } else {
            "1" // x86_64
        };
        let pid = self.child.id();
        let path = format!("/proc/{pid}/task/{pid}/syscall");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("this test reads {path} ({e})"));
        let mut fields = text.split_whitespace();
        fields.next() == Some(WRITE) && fields.next() == Some("0x1")
    }

    /// The next acknowledgement, or None when the process is gone.
    fn ack(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(n) if n > 0 => serde_json::from_str(&line).ok(),
            _ => None,
        }
    }
}

/// xorshift64*: seeded and deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The script of process `p`: inserts of its own memories, duplicates of memories every process
/// inserts, deletes of its own earlier memories, searches.
fn script(p: usize, lines: usize, rng: &mut Rng) -> Vec<Value> {
    let mut out = Vec::with_capacity(lines);
    let mut own = Vec::new();
    for i in 0..lines {
        let roll = rng.next() % 10;
        let line = if roll < 6 || own.is_empty() {
            let content = format!(
                "进程 {p} 的记忆 {i} k{:x} m{:x}",
                rng.next() % 1_000_000_007,
                rng.next() % 998_244_353
            );
            own.push(content.clone());
            json!({"content": content})
        } else if roll < 7 {
            json!({"content": format!("shared fact {} every process knows 共享事实", rng.next() % 40)})
        } else if roll < 8 {
            let victim = own.remove((rng.next() % own.len() as u64) as usize);
            json!({"op": "delete", "content": victim})
        } else {
            json!({"op": "search", "query": format!("进程 {} 的记忆", rng.next() % 4), "top_k": 3})
        };
        out.push(line);
    }
    out
}

#[derive(Default)]
struct Acked {
    inserted: BTreeSet<String>,
    deleted: BTreeSet<String>,
    /// The insert a killed process had committed but was killed writing the answer of.
    unanswered: Option<String>,
}

impl Acked {
    fn record(&mut self, ack: &Value) {
        if ack.get("error").is_some() {
            panic!("a worker reported an error: {ack}");
        }
        if let Some(deleted) = ack.get("deleted") {
            let id = ack["item_id"].as_str().unwrap().to_string();
            if deleted == true {
                self.deleted.insert(id);
            }
        } else if let Some(id) = ack.get("item_id").and_then(Value::as_str) {
            self.inserted.insert(id.to_string());
        }
    }

    /// What must be in the directory: every acknowledged insert not acknowledged as deleted.
    /// Deletes only target a process's own memories, which no one else inserts, so the order in
    /// which processes ran cannot change this.
    fn expected(&self) -> BTreeSet<String> {
        self.inserted.difference(&self.deleted).cloned().collect()
    }
}

fn export_ids(config: &Path) -> BTreeSet<String> {
    let out = Command::new(CORAL)
        .args(["-q", "--config"])
        .arg(config)
        .arg("export")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["item_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("coral_config.json");
    // A small journal limit makes processes checkpoint under each other, so the reload path
    // runs too.
    std::fs::write(
        &config,
        r#"{"embedding": {"embedder": "hash", "dim": 64},
            "storage": {"wal_max_bytes": 200000},
            "memory": {"max_cold_entries": 100000}}"#,
    )
    .unwrap();
    (dir, config)
}

/// Kill `w`, which was just sent `round` (its 20 lines of this round), at the one moment a
/// kill can separate a durable write from its acknowledgement: blocked writing the
/// acknowledgement of a line it has committed. A burst of its own inserts follows the round
/// while its answers go unread, until its stdout pipe is full; then it is killed and its
/// answers are read. The line it was answering counts as written (and must be stored); the
/// lines after it were never read by it.
fn kill_while_acknowledging(w: &mut Worker, round: &[Value], p: usize, acked: &mut Acked) {
    // Far more answers than a pipe holds (64 KiB; an insert's answer is about 60 bytes).
    let burst: Vec<Value> = (0..4000_u64)
        // Words of their own, so that no two merge as near-duplicates.
        .map(|i| {
            json!({"content": format!(
                "burst {p} line {i} a{:x} b{:x} c{:x}",
                i * 7919 + 1,
                i * 104_729 + 7,
                i * 1_299_709 + 3
            )})
        })
        .collect();
    let sent: Vec<Value> = round.iter().chain(&burst).cloned().collect();
    // Fed from a thread: its stdin fills up too once it stops reading.
    let mut stdin = w.stdin.take().unwrap();
    let input: String = burst.iter().map(|l| format!("{l}\n")).collect();
    let feeder = std::thread::spawn(move || {
        // The pipe breaks at the kill; that is expected.
        let _ = stdin.write_all(input.as_bytes());
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !w.blocked_writing_stdout() {
        assert!(
            std::time::Instant::now() < deadline,
            "the worker never blocked on its full stdout"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    w.child.kill().unwrap();
    w.child.wait().unwrap();
    feeder.join().unwrap();
    let mut answered = 0;
    while let Some(ack) = w.ack() {
        acked.record(&ack);
        answered += 1;
    }
    // It was blocked writing the answer of line `answered` (counting from 0): the write
    // that answer reports was made before the answer was written.
    let line = &sent[answered];
    assert!(
        answered >= round.len(),
        "blocked on an answer of the round, not of the burst: {line}"
    );
    let id = coral::item_id(line["content"].as_str().unwrap());
    acked.inserted.insert(id.clone());
    acked.unanswered = Some(id);
    eprintln!(
        "killed process: {answered} lines answered, line {} stored but killed before its \
         acknowledgement was written, {} never read",
        answered + 1,
        sent.len() - answered - 1
    );
}

/// Run `n` processes concurrently over their scripts, optionally SIGKILLing one halfway.
fn run(n: usize, lines: usize, kill_one: bool, seed: u64) {
    let (_dir, config) = setup();
    let mut rng = Rng(seed);
    let scripts: Vec<Vec<Value>> = (0..n).map(|p| script(p, lines, &mut rng)).collect();
    let mut workers: Vec<Worker> = (0..n).map(|_| Worker::start(&config)).collect();
    let mut acked = Acked::default();
    // Feed the scripts in small interleaved rounds, reading each acknowledgement before the
    // next round so that the processes really alternate.
    let mut alive = vec![true; n];
    let rounds = lines / 20;
    for round in 0..rounds {
        for (p, w) in workers.iter_mut().enumerate() {
            if !alive[p] {
                continue;
            }
            for line in &scripts[p][round * 20..(round + 1) * 20] {
                w.send(line);
            }
            w.flush();
        }
        for (p, w) in workers.iter_mut().enumerate() {
            if !alive[p] {
                continue;
            }
            if kill_one && p == n - 1 && round == rounds / 2 {
                kill_while_acknowledging(
                    w,
                    &scripts[p][round * 20..(round + 1) * 20],
                    p,
                    &mut acked,
                );
                alive[p] = false;
                continue;
            }
            for _ in 0..20 {
                let ack = w.ack().expect("a live worker acknowledges every line");
                acked.record(&ack);
            }
        }
    }
    // One more call each: every survivor now agrees on the totals.
    let mut totals = Vec::new();
    for (p, w) in workers.iter_mut().enumerate() {
        if alive[p] {
            w.send(&json!({"op": "stats"}));
            w.flush();
            totals.push(w.ack().unwrap()["total"].as_u64().unwrap());
        }
    }
    let expected = acked.expected();
    assert!(
        totals.iter().all(|&t| t as usize == expected.len()),
        "totals {totals:?} vs {}",
        expected.len()
    );
    for (p, mut w) in workers.into_iter().enumerate() {
        if alive[p] {
            drop(w.stdin.take());
            assert!(w.child.wait().unwrap().success());
        }
    }
    let present = export_ids(&config);
    let lost: Vec<_> = expected.difference(&present).collect();
    let extra: Vec<_> = present.difference(&expected).collect();
    assert!(
        lost.is_empty(),
        "seed {seed}: lost acknowledged inserts {lost:?}"
    );
    assert!(
        extra.is_empty(),
        "seed {seed}: unexpected (deleted or never acknowledged) {extra:?}"
    );
    assert_eq!(
        kill_one,
        acked.unanswered.is_some_and(|id| present.contains(&id)),
        "seed {seed}: the line committed before the kill is stored"
    );
    assert!(
        acked.deleted.len() > 10 && expected.len() > 100,
        "the run exercised deletes and inserts"
    );
    // Reopening again gives the same state.
    assert_eq!(export_ids(&config), present);
}

#[test]
fn two_processes_interleave_without_loss() {
    run(2, 1_000, false, 11);
}

#[test]
fn four_processes_interleave_without_loss() {
    run(4, 600, false, 22);
}

#[test]
fn a_killed_process_costs_nothing_acknowledged() {
    run(3, 800, true, 33);
}
