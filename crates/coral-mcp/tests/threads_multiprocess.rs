//! `coral thread ...` as real OS processes sharing one threads file: concurrent advances and
//! creates lose nothing, a dead writer's lock is recovered, thread commands run while another
//! process holds the memory store, and the command-line surface (output, exit codes).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn threads_file(&self) -> PathBuf {
        self.dir.path().join("memory_data/coral_threads.json")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(CORAL);
        c.arg("--config")
            .arg(self.dir.path().join("coral_config.json"))
            .arg("-q")
            .args(args)
            .env_remove("CORAL_DATA_DIR")
            .env_remove("CORAL_CONFIG_PATH")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Run, expect `code`, return stdout.
    fn expect(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "coral {args:?}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.push("--json");
        serde_json::from_str(&self.expect(&a, 0)).unwrap()
    }

    fn create(&self, title: &str) -> String {
        self.json(&["thread", "create", title])["thread"]["thread_id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn thread(&self, id: &str) -> Value {
        self.json(&["thread", "status", id])["thread"].clone()
    }

    /// Steps of one writer (`w{writer} {i}` texts) in file order.
    fn writer_steps(thread: &Value, writer: usize) -> Vec<usize> {
        thread["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| {
                s["text"]
                    .as_str()
                    .unwrap()
                    .strip_prefix(&format!("w{writer} "))
                    .map(|n| n.parse().unwrap())
            })
            .collect()
    }
}

fn check_ninety(thread: &Value) {
    assert_eq!(thread["step_count"], 90, "{thread:#}");
    let seqs: Vec<u64> = thread["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=90).collect::<Vec<u64>>());
    let mut ids: Vec<&str> = thread["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 90, "step ids are unique");
    for w in 0..3 {
        assert_eq!(
            Env::writer_steps(thread, w),
            (0..30).collect::<Vec<usize>>(),
            "writer {w}'s steps, in its order"
        );
    }
}

#[test]
fn three_long_lived_processes_advance_one_thread_90_times() {
    let env = Env::new();
    let id = env.create("shared by three chats");
    // Three processes, each taking 30 notes on stdin as a server takes 30 tool calls: their
    // writes are coalesced and they merge each other's work. Lines are fed round-robin with
    // short pauses so that the processes' writes interleave.
    let mut children: Vec<Child> = (0..3)
        .map(|_| {
            env.command(&["thread", "advance", &id, "--stdin", "--not-done"])
                .stdin(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut inputs: Vec<_> = children
        .iter_mut()
        .map(|c| c.stdin.take().unwrap())
        .collect();
    for i in 0..30 {
        for (w, input) in inputs.iter_mut().enumerate() {
            writeln!(input, "w{w} {i}").unwrap();
            input.flush().unwrap();
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    drop(inputs);
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let acks = String::from_utf8(out.stdout).unwrap();
        assert_eq!(acks.lines().count(), 30);
        assert!(acks.lines().all(|l| l.contains("\"ok\":true")), "{acks}");
    }
    check_ninety(&env.thread(&id));
}

#[test]
fn three_processes_of_single_advances_lose_nothing() {
    // 90 short-lived processes, three at a time: each takes the lock, merges, writes, exits.
    let env = Env::new();
    let id = env.create("ninety invocations");
    std::thread::scope(|scope| {
        for w in 0..3 {
            let (env, id) = (&env, &id);
            scope.spawn(move || {
                for i in 0..30 {
                    env.expect(&["thread", "advance", id, &format!("w{w} {i}")], 0);
                }
            });
        }
    });
    check_ninety(&env.thread(&id));
}

#[test]
fn two_processes_creating_threads_concurrently_both_survive() {
    let env = Env::new();
    let made: Vec<Vec<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|p| {
                let env = &env;
                scope.spawn(move || {
                    (0..10)
                        .map(|i| env.create(&format!("process {p} thread {i}")))
                        .collect::<Vec<String>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all = env.json(&["thread", "status", "--all"]);
    assert_eq!(all["count"], 20);
    let listed: Vec<&str> = all["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["thread_id"].as_str().unwrap())
        .collect();
    for id in made.iter().flatten() {
        assert!(listed.contains(&id.as_str()), "{id} lost");
    }
}

#[test]
fn a_killed_writers_stale_lock_is_recovered() {
    let env = Env::new();
    let id = env.create("before the crash");
    // A writer SIGKILLed while holding the lock leaves its lock file behind.
    let mut writer = Command::new("sleep").arg("60").spawn().unwrap();
    let lock = env.threads_file().with_file_name("coral_threads.json.lock");
    std::fs::write(&lock, writer.id().to_string()).unwrap();
    writer.kill().unwrap();
    writer.wait().unwrap();
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(60))
        .unwrap();
    let start = Instant::now();
    env.expect(&["thread", "advance", &id, "after the crash"], 0);
    assert!(
        !lock.exists(),
        "the stale lock was removed and ours released"
    );
    assert_eq!(env.thread(&id)["step_count"], 1);
    // (How long it took is reported, not asserted.)
    eprintln!("recovered in {:?}", start.elapsed());
}

#[test]
fn thread_commands_run_while_a_server_holds_the_memory_store() {
    let env = Env::new();
    env.expect(&["insert", "a memory so the data directory exists"], 0);
    let mut server = env
        .command(&["mcp"])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the server has the data directory open (its attachment file exists).
    let data = env.dir.path().join("memory_data");
    let mine = format!(".coral.attach-{}-", server.id());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_dir(&data)
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(&mine))
        })
        .unwrap_or(false)
    {
        assert!(
            Instant::now() < deadline,
            "the server never opened the data directory"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The memory store is shared with the server ...
    env.expect(&["insert", "written while the server runs"], 0);
    // ... the threads are not.
    let id = env.create("while the server runs");
    env.expect(&["thread", "advance", &id, "works"], 0);
    drop(server.stdin.take());
    server.wait().unwrap();
    let stats = env.json(&["stats"]);
    assert_eq!(stats["stats"]["threads"], 1);
}

#[test]
fn an_original_file_loads_from_threads_path() {
    let env = Env::new();
    std::fs::create_dir_all(env.threads_file().parent().unwrap()).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../coral-thread/tests/fixtures/original_array.json");
    std::fs::copy(fixture, env.threads_file()).unwrap();
    let all = env.json(&["thread", "status", "--all"]);
    assert_eq!(all["count"], 3);
    let open = env.json(&["thread", "status"]);
    assert_eq!(open["count"], 2);
    assert_eq!(open["threads"][0]["title"], "发布 v2.0");
    assert_eq!(
        open["threads"][0]["children"],
        serde_json::json!(["7c2e9b1a4d6f8e30", "5d4c3b2a19087f6e"])
    );
    let archived = env.thread("7c2e9b1a4d6f8e30");
    assert_eq!(archived["step_count"], 2);
    assert_eq!(archived["steps"][0]["step_id"].as_str().unwrap().len(), 12);
}

#[test]
fn output_and_exit_codes() {
    let env = Env::new();
    let human = env.expect(
        &[
            "thread",
            "create",
            "发布 v2.0",
            "--summary",
            "升级嵌入模型",
            "--by",
            "聊天A",
        ],
        0,
    );
    assert!(
        human.contains("[active]") && human.contains("发布 v2.0"),
        "{human}"
    );
    let id = env.json(&["thread", "status"])["threads"][0]["thread_id"]
        .as_str()
        .unwrap()
        .to_string();
    let advanced = env.json(&["thread", "advance", &id, "向量重建完成", "--by", "聊天B"]);
    assert_eq!(advanced["ok"], true);
    assert_eq!(advanced["thread"]["steps"][0]["done"], true);
    let forced = env.json(&["thread", "advance", &id, "完成了吗", "--not-done"]);
    assert_eq!(forced["thread"]["steps"][1]["done"], false);
    let human = env.expect(&["thread", "status", &id], 0);
    assert!(
        human.contains("✓ 向量重建完成") && human.contains("聊天B"),
        "{human}"
    );
    let interrupted = env.json(&["thread", "interrupt", &id, "--reason", "等上游依赖"]);
    assert_eq!(interrupted["thread"]["status"], "interrupted");
    assert_eq!(
        env.json(&["thread", "resume", &id])["thread"]["status"],
        "active"
    );
    let child = env.create("child");
    assert_eq!(
        env.json(&["thread", "link", &child, &id]),
        serde_json::json!({"ok": true})
    );
    assert_eq!(env.thread(&child)["parent_thread_id"], id.as_str());
    assert_eq!(
        env.json(&["thread", "archive", &child])["thread"]["status"],
        "archived"
    );
    let found = env.json(&["thread", "status", "--query", "V2.0"]);
    assert_eq!(found["count"], 1);

    // Usage errors exit 2, unknown ids 1, nothing changes.
    env.expect(&["thread", "create", " "], 2);
    env.expect(&["thread", "create", &"x".repeat(81)], 2);
    env.expect(&["thread", "advance", &id], 2);
    env.expect(&["thread", "advance", &id, "note", "--stdin"], 2);
    env.expect(&["thread", "advance", &id, "x", "--done", "--not-done"], 2);
    env.expect(&["thread", "link", &id, &id], 2);
    env.expect(&["thread", "link", &id, &child], 2);
    env.expect(&["thread", "frobnicate"], 2);
    let out = env.run(&["thread", "advance", "nope", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no thread with id \"nope\""));
    env.expect(&["thread", "status", "nope"], 1);
    assert_eq!(env.thread(&id)["step_count"], 3);
}
