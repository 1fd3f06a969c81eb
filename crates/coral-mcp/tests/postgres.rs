//! `storage.backend = "postgres"` through the tools and the real binary (docs/postgres.md):
//! two `coral mcp` processes with separate data directories and one tenant share one memory
//! and one thread over a real PostgreSQL server (`coral_report` refused by name), a third tenant
//! sees none of it, and every
//! built-in tool called from another tenant leaks nothing. Needs `CORAL_POSTGRES_URL`
//! (`scripts/pg-test-server.sh start`); without it the tests say so and pass, unless
//! `CORAL_REQUIRE_POSTGRES=1`, where they fail.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use coral::{Config, Coral, HashEmbedder};
use coral_mcp::tools::{CallTool, Kind, tools};
use serde_json::{Map, Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// A watchdog against hangs (answers take milliseconds), not a speed assertion.
const NO_ANSWER: Duration = Duration::from_secs(60);

fn url() -> Option<String> {
    match std::env::var("CORAL_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("CORAL_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
            panic!("CORAL_REQUIRE_POSTGRES=1 but CORAL_POSTGRES_URL is not set")
        }
        _ => {
            eprintln!("CORAL_POSTGRES_URL is not set: this PostgreSQL test did not run");
            None
        }
    }
}

fn tenant(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("mcp-{name}-{}-{nanos}", std::process::id())
}

/// A config file for `tenant` at `url` in `dir`.
fn write_config(dir: &Path, url: &str, tenant: &str) -> std::path::PathBuf {
    let path = dir.join("coral_config.json");
    let config = json!({
        "embedding": {"embedder": "hash"},
        "storage": {"backend": "postgres", "postgres_url": url, "postgres_tenant": tenant},
    });
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: mpsc::Receiver<String>,
    next_id: u64,
}

impl Server {
    fn start(config: &Path) -> Server {
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(config)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let (lines, stdout) = mpsc::channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { return };
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "coral-test", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        writeln!(
            s.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        s
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let line = match self.stdout.recv_timeout(NO_ANSWER) {
            Ok(line) => line,
            Err(e) => panic!("no answer to {method}: {e}"),
        };
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    /// A tool's result, or its error message.
    fn call(&mut self, tool: &str, args: Value) -> Result<Value, String> {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(reply.get("error").is_none(), "protocol error: {reply}");
        let result = &reply["result"];
        let parsed: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        if result["isError"] == true {
            Err(parsed["error"].as_str().unwrap_or_default().to_string())
        } else {
            Ok(parsed)
        }
    }

    fn finish(mut self) -> String {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(status.success(), "exit {status}: {err}");
        err
    }
}

#[test]
fn two_servers_share_one_tenant_and_a_third_tenant_sees_nothing() {
    let Some(url) = url() else { return };
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let shared = tenant("shared");
    let a_config = write_config(dirs[0].path(), &url, &shared);
    let b_config = write_config(dirs[1].path(), &url, &shared);
    let c_config = write_config(dirs[2].path(), &url, &tenant("other"));
    let mut a = Server::start(&a_config);
    let mut b = Server::start(&b_config);
    let mut c = Server::start(&c_config);

    let stored = a
        .call(
            "memory_insert",
            json!({"content": "the staging database moved to eu-west-3", "importance": 0.4}),
        )
        .unwrap();
    assert_eq!(stored["inserted"], true, "{stored}");
    let id = stored["item_id"].as_str().unwrap().to_string();
    let again = b
        .call(
            "memory_insert",
            json!({"content": "the staging database moved to eu-west-3"}),
        )
        .unwrap();
    assert_eq!(
        again["merged_into"],
        id.as_str(),
        "b merges into a's memory: {again}"
    );

    let found = b
        .call(
            "memory_search",
            json!({"query": "where is the staging database", "top_k": 3}),
        )
        .unwrap();
    assert_eq!(found["count"], 1, "{found}");
    let hit = &found["hits"][0];
    assert_eq!(hit["id"], id.as_str());
    for part in ["bm25", "jaccard", "time", "vector"] {
        assert!(hit["scores"][part].as_f64().is_some(), "{part}: {hit}");
    }
    assert!(hit["scores"]["bm25"].as_f64().unwrap() > 0.0, "{hit}");
    let stats = a.call("coral_stats", json!({})).unwrap();
    assert_eq!(stats["stats"]["backend"], "postgres", "{stats}");
    assert_eq!(stats["stats"]["total"], 1);
    assert_eq!(stats["stats"]["tenant"], shared.as_str());

    let thread = a
        .call("thread_create", json!({"title": "move staging", "by": "a"}))
        .unwrap();
    let thread_id = thread["thread"]["thread_id"].as_str().unwrap().to_string();
    b.call(
        "thread_advance",
        json!({"thread_id": thread_id, "note": "dns switched", "by": "b"}),
    )
    .unwrap();
    let status = a
        .call("thread_status", json!({"thread_id": thread_id}))
        .unwrap();
    assert_eq!(status["thread"]["step_count"], 1, "{status}");
    assert_eq!(status["thread"]["steps"][0]["by"], "b");
    let archived = b
        .call("thread_archive", json!({"thread_id": thread_id}))
        .unwrap();
    assert_eq!(archived["thread"]["status"], "archived", "{archived}");
    let overview = b
        .call("thread_status", json!({"include_archived": true}))
        .unwrap();
    assert_eq!(overview["count"], 1, "{overview}");
    assert_eq!(overview["threads"][0]["thread_id"], thread_id.as_str());
    let refused = b.call("coral_report", json!({})).unwrap_err();
    assert!(
        refused.contains("coral report is not supported by the postgres backend"),
        "{refused}"
    );

    // The other tenant: nothing of it.
    let none = c
        .call(
            "memory_search",
            json!({"query": "where is the staging database"}),
        )
        .unwrap();
    assert_eq!(none["count"], 0, "{none}");
    let none = c
        .call("thread_status", json!({"thread_id": thread_id}))
        .unwrap();
    assert_eq!(none["count"], 0, "{none}");
    assert!(c.call("memory_delete", json!({"item_id": id})).is_err());
    assert_eq!(
        c.call("coral_stats", json!({})).unwrap()["stats"]["total"],
        0
    );

    // A delete by b is seen by a at its next call.
    let deleted = b.call("memory_delete", json!({"item_id": id})).unwrap();
    assert_eq!(deleted["physically_removed"], true, "{deleted}");
    let gone = a
        .call(
            "memory_search",
            json!({"query": "where is the staging database"}),
        )
        .unwrap();
    assert_eq!(gone["count"], 0, "{gone}");
    for s in [a, b, c] {
        s.finish();
    }
    // No memory files in the data directories.
    for d in &dirs {
        let data = d.path().join("memory_data");
        assert!(!data.join("coral_wal.jsonl").exists());
        assert!(!data.join("coral_warm.json").exists());
    }
}

/// A plausible value for an argument of a tool called by tenant b about tenant a's rows.
fn value_for(name: &str, kind: &Kind, a_memory: &str, a_thread: &str) -> Value {
    match (name, kind) {
        ("item_id" | "memory_id", _) => json!(a_memory),
        ("thread_id" | "child_id" | "parent_id" | "parent_thread_id", _) => json!(a_thread),
        ("query" | "contains", _) => json!("llama farm acquisition"),
        (_, Kind::String | Kind::Scalar) => json!("tenant b's own text"),
        (_, Kind::Integer { min, .. }) => json!((*min).max(1)),
        (_, Kind::Number { min, .. }) => json!(min),
        (_, Kind::Boolean) => json!(false),
        (_, Kind::Strings) => json!(["tenant b"]),
        (_, Kind::Object(_)) => json!({}),
    }
}

/// docs/postgres.md, "Tenancy": every built-in tool, called by tenant b with tenant a's ids
/// and words, answers without a's rows.
#[test]
fn no_tool_shows_one_tenant_another_tenants_rows() {
    let Some(url) = url() else { return };
    let open = |dir: &Path, tenant: &str| {
        let mut config = Config {
            base_dir: dir.to_path_buf(),
            ..Config::default()
        };
        config.storage.backend = "postgres".into();
        config.storage.postgres_url = url.clone();
        config.storage.postgres_tenant = tenant.into();
        Coral::open_with(config, Arc::new(HashEmbedder::new(64).unwrap())).unwrap()
    };
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = open(da.path(), &tenant("a"));
    let b = open(db.path(), &tenant("b"));
    let marker = "zqxmarker";
    let memory = a
        .insert(&format!("the {marker} plan: llama farm acquisition"), 0.9)
        .unwrap()
        .id()
        .to_string();
    let thread = a
        .thread_create(&format!("{marker} thread"), Some(marker), None, None)
        .unwrap();
    a.thread_advance(&thread.thread_id, &format!("{marker} step"), None, None)
        .unwrap();

    let mut called = 0;
    for tool in tools() {
        let mut args = Map::new();
        for arg in tool.args {
            let wanted =
                arg.required || matches!(arg.name, "query" | "thread_id" | "item_id" | "contains");
            if wanted {
                args.insert(
                    arg.name.into(),
                    value_for(arg.name, &arg.kind, &memory, &thread.thread_id),
                );
            }
        }
        let answer = match b.call_tool(tool.name, &Value::Object(args.clone())) {
            Ok(v) => v.to_string(),
            Err(e) => format!("{e:?}"),
        };
        called += 1;
        assert!(
            !answer.contains(marker),
            "{} {}: tenant a's rows reached tenant b: {answer}",
            tool.name,
            Value::Object(args)
        );
    }
    assert!(called > 30, "{called} tools");
    // a still has all of it, untouched.
    let m = a.get(&memory).unwrap().unwrap();
    assert!(m.item.content.contains(marker));
    let t = a
        .thread_status(Some(&thread.thread_id), false, None)
        .unwrap();
    assert_eq!(t.views()[0].step_count, 1);
}

/// A word of seven letters from `seed`: texts built of them share no tokens by chance.
fn word(seed: u64) -> String {
    let mut h = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (0..7)
        .map(|_| {
            h = h
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (b'a' + ((h >> 33) % 26) as u8) as char
        })
        .collect()
}

/// Two `coral mcp` processes insert into one tenant at once under a capacity of 40 (headroom
/// 1), one weighing heat by recency only and the other by importance only, with importance
/// falling as the memories get newer: the two would evict disjoint sets from the same rows.
/// Their governance passes take the tenant's lock in turn, so each plans from what the other
/// committed and the memories, once 40, never drop below 40 (each writer checks after each
/// insert); every acknowledged memory is either live or in the archive, once. With the lock
/// taken out of `PgStore::govern` a writer saw 37 or 38 (3 runs of 3).
#[test]
fn two_processes_evicting_one_tenant_never_over_evict() {
    let Some(url) = url() else { return };
    let shared = tenant("evict");
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let configs: Vec<std::path::PathBuf> = dirs
        .iter()
        .enumerate()
        .map(|(p, d)| {
            let path = d.path().join("coral_config.json");
            let weights = if p == 0 {
                json!({"frequency": 0.0, "recency": 1.0, "importance": 0.0})
            } else {
                json!({"frequency": 0.0, "recency": 0.0, "importance": 1.0})
            };
            let config = json!({
                "embedding": {"embedder": "hash"},
                "heat": {"weights": weights},
                "memory": {"capacity_threshold": 40, "governance_headroom": 1,
                           "max_hot_entries": 1000, "max_warm_entries": 1000,
                           "max_cold_entries": 1000},
                "storage": {"backend": "postgres", "postgres_url": url, "postgres_tenant": shared},
            });
            std::fs::write(&path, config.to_string()).unwrap();
            path
        })
        .collect();
    const EACH: u64 = 120;
    let writers: Vec<std::thread::JoinHandle<(Vec<String>, u64)>> = configs
        .iter()
        .enumerate()
        .map(|(p, config)| {
            let mut server = Server::start(config);
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                let mut fewest = u64::MAX;
                for i in 0..EACH {
                    let seed = (p as u64) << 32 | i;
                    let content = (0..4)
                        .map(|j| word(seed * 8 + j))
                        .collect::<Vec<_>>()
                        .join(" ");
                    let importance = 1.0 - i as f64 / EACH as f64;
                    let stored = server
                        .call(
                            "memory_insert",
                            json!({"content": content, "importance": importance}),
                        )
                        .unwrap();
                    assert_eq!(stored["inserted"], true, "{stored}");
                    ids.push(stored["item_id"].as_str().unwrap().to_string());
                    // Once this writer alone stored 40, the tenant never holds fewer.
                    if i >= 40 {
                        let stats = server.call("coral_stats", json!({})).unwrap();
                        fewest = fewest.min(stats["stats"]["total"].as_u64().unwrap());
                    }
                }
                server.finish();
                (ids, fewest)
            })
        })
        .collect();
    let mut ids: Vec<String> = Vec::new();
    for w in writers {
        let (mine, fewest) = w.join().unwrap();
        assert!(
            fewest >= 40,
            "a writer saw {fewest} memories: two governance passes planned from the same rows and both evicted"
        );
        ids.extend(mine);
    }
    assert_eq!(ids.len(), 2 * EACH as usize);

    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        base_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    config.storage.backend = "postgres".into();
    config.storage.postgres_url = url.clone();
    config.storage.postgres_tenant = shared.clone();
    let coral = Coral::open_with(config, Arc::new(HashEmbedder::new(384).unwrap())).unwrap();
    let total = coral.stats().total;
    assert!(
        (40..=41).contains(&total),
        "{total} memories left: governance evicted below the capacity of 40 or left more than 41"
    );
    let mut live = 0;
    for id in &ids {
        let here = coral.get(id).unwrap().is_some();
        let archived = coral.get_archived(id).unwrap().is_some();
        assert!(here != archived, "{id}: live {here}, archived {archived}");
        live += usize::from(here);
    }
    assert_eq!(live, total);
}
