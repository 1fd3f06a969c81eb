//! Thread durability with real processes: `coral thread advance --stdin` and `coral mcp`'s
//! `thread_advance` are killed with SIGKILL at varying moments after their acknowledgements,
//! round after round on one data directory, sometimes two writers at once. Every acknowledged
//! step must be there afterwards, exactly once, each writer's steps in its order.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use coral::{ThreadStore, ThreadStoreOptions, ThreadView};
use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// xorshift64*: deterministic, seeded, good enough to pick kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        // The default policy (an fsync every second in the background): acknowledgement is
        // write(2), which is what survives SIGKILL.
        std::fs::write(
            dir.path().join("coral_config.json"),
            r#"{"embedding": {"embedder": "hash"}, "storage": {"sync": "interval"}}"#,
        )
        .unwrap();
        Env { dir }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("coral_config.json")
    }

    fn threads_file(&self) -> PathBuf {
        self.dir.path().join("memory_data/coral_threads.json")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(CORAL);
        c.arg("-q")
            .arg("--config")
            .arg(self.config())
            .args(args)
            .env_remove("CORAL_DATA_DIR")
            .env_remove("CORAL_CONFIG_PATH");
        c
    }

    fn create(&self, title: &str) -> String {
        let out = self
            .command(&["thread", "create", title, "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["thread"]["thread_id"].as_str().unwrap().to_string()
    }

    /// Reopen the threads as the next process would (replaying what killed processes left)
    /// and return every thread. The store is told not to wait for a lock file a killed
    /// writer may have left (its checkpoint is then simply left for later): reading is what
    /// is checked here.
    fn reopen(&self) -> Vec<ThreadView> {
        let options = ThreadStoreOptions {
            lock_wait: Duration::ZERO,
            background_flush: false,
            ..ThreadStoreOptions::default()
        };
        let threads = ThreadStore::open_with(self.threads_file(), options).unwrap();
        assert_eq!(threads.repairs(), Vec::<String>::new(), "a kill only tears");
        threads.all().unwrap()
    }
}

/// Child stdin fed from a thread that keeps it open until told to stop, so the child never
/// reaches its clean shutdown before it is killed.
struct Feeder {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl Feeder {
    fn start(mut stdin: std::process::ChildStdin, lines: Vec<String>) -> Feeder {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            for l in lines {
                // The pipe breaks when the child is killed; that is expected.
                if stdin.write_all(l.as_bytes()).is_err() {
                    return;
                }
            }
            let _ = stdin.flush();
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        Feeder { stop, handle }
    }

    fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }
}

/// Read acknowledgement lines, `pick` turning each into a step id, until `n` of them (or
/// EOF); then let the child run `linger_ms` longer, kill it, and take the acknowledgements it
/// had already written to the pipe.
fn ack_kill_drain(
    child: &mut Child,
    reader: &mut BufReader<impl Read>,
    n: usize,
    linger_ms: u64,
    pick: impl Fn(&Value) -> Option<String>,
) -> Vec<String> {
    let mut acked = Vec::new();
    let mut line = String::new();
    while acked.len() < n {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let v: Value = serde_json::from_str(&line).expect("an acknowledgement is JSON");
        if let Some(id) = pick(&v) {
            acked.push(id);
        }
    }
    std::thread::sleep(Duration::from_millis(linger_ms));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        // A line cut by the kill was never acknowledged.
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && let Some(id) = pick(&v)
        {
            acked.push(id);
        }
    }
    acked
}

/// The outcome of a loop, checked against the reopened threads.
#[derive(Default)]
struct Tally {
    /// Whether each writer's steps must keep its order: true for `--stdin` (one line after
    /// another), false for pipelined MCP calls (the server runs them concurrently).
    ordered: bool,
    rounds: usize,
    /// Acknowledged step id → the writer that got the acknowledgement.
    acked: BTreeMap<String, String>,
}

impl Tally {
    /// Every acknowledged step present once; no step id twice anywhere; seq 1..n; each
    /// writer's steps in its order (when `ordered`). Returns (lost, duplicated, recorded but unacknowledged).
    fn check(&self, threads: &[ThreadView], what: &str) -> (usize, usize, usize) {
        let mut seen = HashSet::new();
        let mut duplicated = 0;
        let mut per_writer: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for t in threads {
            let seqs: Vec<u64> = t.steps.iter().map(|s| s.seq).collect();
            assert_eq!(
                seqs,
                (1..=t.steps.len() as u64).collect::<Vec<_>>(),
                "{what}: seq of {}",
                t.thread_id
            );
            for s in &t.steps {
                if !seen.insert(s.step_id.to_string()) {
                    duplicated += 1;
                }
                if let Some((writer, i)) = s.text.rsplit_once(' ') {
                    per_writer
                        .entry(writer.to_string())
                        .or_default()
                        .push(i.parse().unwrap());
                }
            }
        }
        for (writer, order) in per_writer.iter().filter(|_| self.ordered) {
            assert!(
                order.windows(2).all(|w| w[0] < w[1]),
                "{what}: {writer}'s steps out of order: {order:?}"
            );
        }
        let lost = self.acked.keys().filter(|id| !seen.contains(*id)).count();
        let unacked = seen.len() - (self.acked.len() - lost);
        (lost, duplicated, unacked)
    }
}

#[test]
fn every_acknowledged_thread_advance_survives_sigkill() {
    let seed = 0x7e4d_5eed_u64;
    let mut rng = Rng(seed);
    let env = Env::new();
    let id = env.create("advanced by killed writers");
    let mut tally = Tally {
        ordered: true,
        ..Tally::default()
    };
    let rounds = 36;
    for round in 0..rounds {
        // Every third round two writers share the thread and are killed at different moments.
        let writers = if round % 3 == 2 { 2 } else { 1 };
        let mut running = Vec::new();
        for w in 0..writers {
            let mut child = env
                .command(&["thread", "advance", &id, "--stdin", "--not-done"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let lines = (0..300).map(|i| format!("r{round}w{w} {i}\n")).collect();
            let feeder = Feeder::start(child.stdin.take().unwrap(), lines);
            let reader = BufReader::new(child.stdout.take().unwrap());
            running.push((child, reader, feeder, format!("r{round}w{w}")));
        }
        for (child, reader, feeder, writer) in &mut running {
            let (n, linger) = match rng.below(4) {
                0 => (0, rng.below(40)), // during start-up or the first advances
                _ => (1 + rng.below(250) as usize, rng.below(15)),
            };
            for step in ack_kill_drain(child, reader, n, linger, |v| {
                (v["ok"] == true).then(|| v["step_id"].as_str().unwrap().to_string())
            }) {
                tally.acked.insert(step, writer.clone());
            }
            let _ = feeder;
        }
        for (_, _, feeder, _) in running {
            feeder.finish();
        }
        tally.rounds += 1;
        if round % 12 == 11 {
            let (lost, duplicated, _) = tally.check(&env.reopen(), &format!("round {round}"));
            assert_eq!((lost, duplicated), (0, 0), "seed {seed:#x} round {round}");
        }
    }
    let threads = env.reopen();
    let (lost, duplicated, unacked) = tally.check(&threads, "end");
    eprintln!(
        "thread advance --stdin under SIGKILL: {} rounds, {} acknowledged steps, {lost} lost, \
         {duplicated} duplicated ({unacked} recorded but killed before their acknowledgement)",
        tally.rounds,
        tally.acked.len()
    );
    assert!(
        tally.acked.len() > 1000,
        "too few acknowledgements to mean anything: {}",
        tally.acked.len()
    );
    assert_eq!(lost, 0, "seed {seed:#x}: acknowledged steps lost");
    assert_eq!(duplicated, 0, "seed {seed:#x}: steps duplicated");
    // And the binary, opening the same directory, sees the same steps.
    let out = env
        .command(&["thread", "status", &id, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let from_cli: Vec<&str> = v["thread"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_id"].as_str().unwrap())
        .collect();
    let from_lib: Vec<&str> = threads[0].steps.iter().map(|s| &*s.step_id).collect();
    assert_eq!(from_cli, from_lib);
}

/// `coral mcp` on a pipe: initialise, create a thread, then `thread_advance` requests.
struct Mcp {
    child: Child,
    reader: BufReader<std::process::ChildStdout>,
    /// Taken by the feeder once the thread exists.
    stdin: Option<std::process::ChildStdin>,
}

impl Mcp {
    fn start(env: &Env) -> Mcp {
        let mut child = env
            .command(&["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let reader = BufReader::new(child.stdout.take().unwrap());
        Mcp {
            child,
            reader,
            stdin: Some(stdin),
        }
    }

    fn send(&mut self, v: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    fn reply(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.reader.read_line(&mut line).unwrap() > 0,
            "server closed"
        );
        serde_json::from_str(&line).unwrap()
    }

    fn call_line(id: u64, tool: &str, args: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": args}})
    }
}

#[test]
fn every_acknowledged_mcp_thread_advance_survives_sigkill() {
    let seed = 0x0a11_5eed_u64;
    let mut rng = Rng(seed);
    let env = Env::new();
    let mut tally = Tally::default();
    let rounds = 32;
    for round in 0..rounds {
        let mut mcp = Mcp::start(&env);
        mcp.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "thread-crash", "version": "1"}}}));
        assert_eq!(mcp.reply()["id"], 0);
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        // One thread per round keeps each answer (the whole thread) small.
        mcp.send(&Mcp::call_line(
            1,
            "thread_create",
            json!({"title": format!("round {round}")}),
        ));
        let created = mcp.reply();
        let id = created["result"]["structuredContent"]["thread"]["thread_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{created}"))
            .to_string();
        // Pipelined requests, as a client with several calls in flight sends them.
        let lines = (0..150)
            .map(|i| {
                let args = json!({"thread_id": id, "note": format!("m{round} {i}"), "done": false});
                format!("{}\n", Mcp::call_line(2 + i, "thread_advance", args))
            })
            .collect();
        let stdin = mcp.stdin.take().unwrap();
        let feeder = Feeder::start(stdin, lines);
        let (n, linger) = match rng.below(4) {
            0 => (0, rng.below(40)),
            _ => (1 + rng.below(120) as usize, rng.below(15)),
        };
        let writer = format!("m{round}");
        for step in ack_kill_drain(&mut mcp.child, &mut mcp.reader, n, linger, |v| {
            let r = &v["result"];
            (r["isError"] != true)
                .then(|| r["structuredContent"]["thread"]["steps"].as_array())
                .flatten()
                .and_then(|steps| steps.last())
                .map(|s| s["step_id"].as_str().unwrap().to_string())
        }) {
            tally.acked.insert(step, writer.clone());
        }
        feeder.finish();
        tally.rounds += 1;
    }
    let (lost, duplicated, unacked) = tally.check(&env.reopen(), "end");
    eprintln!(
        "MCP thread_advance under SIGKILL: {} rounds, {} acknowledged steps, {lost} lost, \
         {duplicated} duplicated ({unacked} recorded but killed before their answer)",
        tally.rounds,
        tally.acked.len()
    );
    assert!(
        tally.acked.len() > 1000,
        "too few acknowledgements to mean anything: {}",
        tally.acked.len()
    );
    assert_eq!(lost, 0, "seed {seed:#x}: acknowledged steps lost");
    assert_eq!(duplicated, 0, "seed {seed:#x}: steps duplicated");
}

#[test]
fn a_killed_writers_journal_moves_with_the_threads_file() {
    let env = Env::new();
    let id = env.create("moved after a crash");
    let mut child = env
        .command(&["thread", "advance", &id, "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = (0..50).map(|i| format!("before the move {i}\n")).collect();
    let feeder = Feeder::start(child.stdin.take().unwrap(), lines);
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let acked: HashSet<String> = ack_kill_drain(&mut child, &mut reader, 50, 0, |v| {
        v["step_id"].as_str().map(String::from)
    })
    .into_iter()
    .collect();
    feeder.finish();
    assert_eq!(acked.len(), 50);
    // Whatever a kill inside a checkpoint left of the lock file: its writer is dead (breaking
    // such a lock is tested elsewhere).
    let _ = std::fs::remove_file(env.threads_file().with_file_name("coral_threads.json.lock"));
    let out = env
        .command(&["config", "set-paths", "--threads", "elsewhere/threads.json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let old_dir: Vec<String> = std::fs::read_dir(env.threads_file().parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !old_dir.iter().any(|n| n.contains("journal")),
        "no journal left behind: {old_dir:?}"
    );
    let out = env
        .command(&["thread", "status", &id, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps: HashSet<String> = v["thread"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_id"].as_str().unwrap().to_string())
        .collect();
    assert!(acked.is_subset(&steps), "steps lost in the move");
    let moved = env.dir.path().join("elsewhere");
    assert!(moved.join("threads.json").exists());
}

#[test]
fn backup_keeps_a_killed_writers_steps_and_check_reports_a_damaged_journal_untouched() {
    let env = Env::new();
    let id = env.create("backed up after a crash");
    // This process holds the threads file's lock while the writer runs, so the writer's
    // background write waits and every step stays in its journal alone (without it, a slow
    // machine let the write land and empty the journal before the kill).
    let lock = env.threads_file().with_extension("json.lock");
    std::fs::write(&lock, std::process::id().to_string()).unwrap();
    let mut child = env
        .command(&["thread", "advance", &id, "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = (0..30)
        .map(|i| format!("before the backup {i}\n"))
        .collect();
    let feeder = Feeder::start(child.stdin.take().unwrap(), lines);
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let acked: HashSet<String> = ack_kill_drain(&mut child, &mut reader, 30, 0, |v| {
        v["step_id"].as_str().map(String::from)
    })
    .into_iter()
    .collect();
    feeder.finish();
    assert_eq!(acked.len(), 30);
    let data = env.threads_file().parent().unwrap().to_path_buf();
    std::fs::remove_file(&lock).unwrap(); // ours; the writer never took it
    let steps_in = |file: &std::path::Path| -> HashSet<String> {
        let v: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["steps"].as_array().unwrap().clone())
            .map(|s| s["step_id"].as_str().unwrap().to_string())
            .collect()
    };
    // The backup holds every acknowledged step, the ones only in the journal too.
    let dest = env.dir.path().join("backup");
    let out = env
        .command(&["backup", dest.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(acked.is_subset(&steps_in(&dest.join("coral_threads.json"))));

    // A damaged record in the ended journal: check reports it and changes nothing.
    let journal = std::fs::read_dir(&data)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".journal-"))
        .expect("the killed writer's journal");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    assert_eq!(
        lines.len(),
        31,
        "a begin record, then one per acknowledged step: {text}"
    );
    let middle = lines.len() / 2;
    lines[middle] = lines[middle].replace("before the backup", "before the backuq");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let listing = || {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&data)
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
    };
    let before = listing();
    let out = env.command(&["check"]).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("thread journal") && report.contains("checksum mismatch"),
        "{report}"
    );
    assert_eq!(listing(), before, "check changed the directory");
}
