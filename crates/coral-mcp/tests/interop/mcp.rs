//! The original's MCP server (`python3 coral_mcp_server.py`) and `coral mcp`, both live over
//! stdio, driven through the same calls (the recorded transcript's 24, all 16 original tools)
//! and their replies compared key for key with `shape::compare`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use super::shape::{Diff, compare};
use super::support::{CORAL, FOREIGN_ENV, Workspace, shared_config, upstream};

/// A hung server fails the test instead of hanging it (not a speed check: a reply takes
/// milliseconds).
const REPLY_WAIT: Duration = Duration::from_secs(120);

struct Server {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    stderr: std::path::PathBuf,
}

impl Server {
    fn start(name: &'static str, mut command: Command, ws: &Workspace) -> Server {
        let stderr = ws.path().join("server.stderr");
        let mut child = command
            .current_dir(ws.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the {name} MCP server: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            name,
            child,
            stdin,
            lines,
            next_id: 0,
            stderr,
        }
    }

    /// `python3 coral_mcp_server.py` as its users start it. It changes into its own
    /// directory, and the library keeps its config beside itself (creating it when missing),
    /// so both run from links in the test's directory, with `CORAL_CONFIG_PATH` naming the
    /// config as well: nothing is written beside the original.
    fn original(ws: &Workspace) -> Server {
        for file in ["coral_mcp_server.py", "three_dog_coral.py"] {
            std::os::unix::fs::symlink(upstream().join(file), ws.path().join(file)).unwrap();
        }
        let mut c = Command::new("python3");
        for var in FOREIGN_ENV {
            c.env_remove(var);
        }
        c.arg(ws.path().join("coral_mcp_server.py"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("CORAL_CONFIG_PATH", ws.config());
        Server::start("original", c, ws)
    }

    fn coral(ws: &Workspace) -> Server {
        let mut c = Command::new(CORAL);
        for var in FOREIGN_ENV {
            c.env_remove(var);
        }
        c.arg("--config").arg(ws.config()).arg("mcp");
        Server::start("Coral", c, ws)
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self.lines.recv_timeout(REPLY_WAIT).unwrap_or_else(|e| {
                panic!(
                    "the {} server gave no reply to {method} ({e}); stderr:\n{}",
                    self.name,
                    std::fs::read_to_string(&self.stderr).unwrap_or_default()
                )
            });
            let reply: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{} server wrote {line:?}: {e}", self.name));
            if reply["id"] == id {
                return reply;
            }
        }
    }

    /// The MCP handshake; the server's `initialize` result.
    fn initialize(&mut self) -> Value {
        let init = json!({"protocolVersion": "2024-11-05", "capabilities": {},
                          "clientInfo": {"name": "interop", "version": "1"}});
        let reply = self.request("initialize", init);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        reply
    }

    /// `tools/call`: the whole reply.
    fn call(&mut self, tool: &str, arguments: &Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    fn close(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "the {} server exited with {status}; stderr:\n{}",
            self.name,
            std::fs::read_to_string(&self.stderr).unwrap_or_default()
        );
        drop(self.lines);
    }
}

/// Values that differ by design, by the end of their path, and why: listed, not failures.
const BY_DESIGN: &[(&str, &str)] = &[
    (
        ".persisted",
        "Coral's insert is durable when it answers (journal); the original's waits for memory_flush",
    ),
    (
        ".location",
        "Coral keeps flushed memories in its hot tier; the original's memory_flush moves them to warm",
    ),
    (
        "coral_config_reset {\"key_path\":\"retrieval.top_k\"}.changed.retrieval.top_k.new",
        "a reset restores Coral's default top_k (5; the original's is 3)",
    ),
    (
        "coral_report {}.stats.capacity_threshold",
        "after a full reset: Coral's default capacity (10000; the original's is 1000)",
    ),
    (
        "coral_config_reset {}.scope",
        "Coral's full reset covers its timeline section too",
    ),
];

/// The names in the original's directory: the tests must leave it as they found it.
fn upstream_listing() -> BTreeSet<String> {
    std::fs::read_dir(upstream())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn transcript() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/coral_mcp_transcript.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A tools/call reply's body: its text parsed as JSON (or the text itself, for errors).
fn body(reply: &Value) -> Value {
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {reply}"));
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Every tool of the original is listed by Coral with the same parameters, types and
/// required ones (descriptions may differ; Coral may list more tools).
fn compare_tool_lists(theirs: &Value, ours: &Value, d: &mut Diff) -> usize {
    let ours = ours["result"]["tools"].as_array().unwrap();
    let theirs = theirs["result"]["tools"].as_array().unwrap();
    for tool in theirs {
        let name = tool["name"].as_str().unwrap();
        match ours.iter().find(|t| t["name"] == name) {
            None => d.problem(&format!("tools/list.{name}"), "missing in Coral".into()),
            Some(t) => {
                let schema = |t: &Value| {
                    let mut s = t["inputSchema"].clone();
                    // The descriptions are prose, not shape.
                    if let Some(props) = s["properties"].as_object_mut() {
                        for p in props.values_mut() {
                            if let Some(p) = p.as_object_mut() {
                                p.remove("description");
                                // `anyOf` of bare types means what a type list means; Coral
                                // sends the former because more clients accept it.
                                let types: Option<Vec<Value>> =
                                    p.get("anyOf").and_then(Value::as_array).map(|branches| {
                                        branches.iter().map(|b| b["type"].clone()).collect()
                                    });
                                if let Some(types) = types {
                                    p.remove("anyOf");
                                    p.insert("type".into(), Value::Array(types));
                                }
                            }
                        }
                    }
                    s
                };
                compare(
                    &format!("tools/list.{name}.inputSchema"),
                    &schema(tool),
                    &schema(t),
                    d,
                );
            }
        }
    }
    theirs.len()
}

pub fn compare_live_servers() {
    let golden = transcript();
    let config = {
        // The original's own defaults (top_k 3, min_score 0.35), hash vectors.
        let mut c = shared_config();
        c["retrieval"]["min_score"] = json!(0.35);
        c
    };
    let upstream_before = upstream_listing();
    let (theirs_ws, ours_ws) = (Workspace::new(&config), Workspace::new(&config));
    // The recorded session had this memory already (its insert in the transcript merges): two
    // days old, so in both it is in the warm tier.
    let seed = "Translate product manuals in a formal register";
    let age = 2.0 * 86_400.0;
    theirs_ws.python_lines(
        &["write"],
        &(json!({"content": seed, "age_seconds": age}).to_string() + "\n"),
    );
    let made = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        - age;
    ours_ws.coral_out(&["insert", seed, "--at", &made.to_string()], "");

    let mut theirs = Server::original(&theirs_ws);
    let mut ours = Server::coral(&ours_ws);
    let mut d = Diff::default();
    let (ti, oi) = (theirs.initialize(), ours.initialize());
    compare("initialize", &ti["result"], &oi["result"], &mut d);
    let listed = compare_tool_lists(
        &theirs.request("tools/list", json!({})),
        &ours.request("tools/list", json!({})),
        &mut d,
    );

    // Thread ids differ per server: the transcript's ids map to each server's as created.
    let mut ids: Vec<(String, String, String)> = Vec::new();
    let calls = golden["calls"].as_array().unwrap();
    let mut tools = BTreeSet::new();
    for (i, call) in calls.iter().enumerate() {
        let tool = call["tool"].as_str().unwrap();
        tools.insert(tool);
        let recorded = call["arguments"].to_string();
        let args = |pick: fn(&(String, String, String)) -> &String| -> Value {
            let mut a = recorded.clone();
            for m in &ids {
                a = a.replace(m.0.as_str(), pick(m));
            }
            serde_json::from_str(&a).unwrap()
        };
        let (ta, oa) = (args(|m| &m.1), args(|m| &m.2));
        let tr = theirs.request("tools/call", json!({"name": tool, "arguments": ta}));
        let or = ours.request("tools/call", json!({"name": tool, "arguments": oa}));
        let at = format!("call {i} {tool} {recorded}");
        let (tb, ob) = (body(&tr), body(&or));
        if tool == "thread_create" {
            let id = |v: &Value| v["thread"]["thread_id"].as_str().unwrap_or("").to_string();
            ids.push((id(&body(&call["response"])), id(&tb), id(&ob)));
        }
        // The envelope (content type; isError may accompany an ok:false body in Coral) and
        // the body.
        compare(
            &format!("{at} content[0].type"),
            &tr["result"]["content"][0]["type"],
            &or["result"]["content"][0]["type"],
            &mut d,
        );
        if tr["result"]["isError"] != or["result"]["isError"] {
            d.values.push(format!(
                "{at} isError: {} vs {}",
                tr["result"]["isError"], or["result"]["isError"]
            ));
        }
        compare(&at, &tb, &ob, &mut d);
    }
    theirs.close();
    ours.close();
    let (by_design, problems): (Vec<_>, Vec<_>) = d
        .problems
        .iter()
        .partition(|(path, _)| BY_DESIGN.iter().any(|(end, _)| path.ends_with(end)));
    eprintln!(
        "interop (d) summary: the original lists {listed} tools, Coral lists each with the same \
         parameters; {} calls of {} tools on both servers; {} keys of the original's replies \
         compared: {} differences, {} by design, {} keys only Coral has, {} values that differ \
         by run (ids, times, sizes, messages)",
        calls.len(),
        tools.len(),
        d.compared,
        problems.len(),
        by_design.len(),
        d.added.len(),
        d.values.len()
    );
    for (path, what) in &by_design {
        let why = BY_DESIGN
            .iter()
            .find(|(end, _)| path.ends_with(end))
            .unwrap()
            .1;
        eprintln!("  by design: {path}: {what} ({why})");
    }
    assert_eq!(listed, 16, "the original lists its 16 tools");
    assert_eq!(tools.len(), 16, "the calls use every original tool");
    assert_eq!(
        upstream_listing(),
        upstream_before,
        "the original's directory changed: {}",
        upstream().display()
    );
    assert!(
        problems.is_empty(),
        "{} differences from the live original:\n{}",
        problems.len(),
        problems
            .iter()
            .map(|(path, what)| format!("{path}: {what}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A thread id neither server has.
const UNKNOWN_THREAD: &str = "0123456789abcdef";

/// Thread calls that fail, `$T` standing for a thread each server has: an unknown id in every
/// operation that takes one, an unknown parent, a thread linked to itself, an empty note and
/// an empty title.
fn failing_thread_calls() -> Vec<(&'static str, Value)> {
    vec![
        (
            "thread_advance",
            json!({"thread_id": UNKNOWN_THREAD, "note": "向量重建完成", "by": "chatB"}),
        ),
        (
            "thread_interrupt",
            json!({"thread_id": UNKNOWN_THREAD, "reason": "等上游依赖"}),
        ),
        ("thread_resume", json!({"thread_id": UNKNOWN_THREAD})),
        ("thread_archive", json!({"thread_id": UNKNOWN_THREAD})),
        (
            "thread_link",
            json!({"child_id": UNKNOWN_THREAD, "parent_id": "$T"}),
        ),
        (
            "thread_link",
            json!({"child_id": "$T", "parent_id": UNKNOWN_THREAD}),
        ),
        ("thread_link", json!({"child_id": "$T", "parent_id": "$T"})),
        (
            "thread_create",
            json!({"title": "子任务", "parent_thread_id": UNKNOWN_THREAD}),
        ),
        ("thread_advance", json!({"thread_id": "$T", "note": ""})),
        ("thread_create", json!({"title": ""})),
    ]
}

/// Both servers, live, through the failing thread calls: the original answers each with a
/// tool result `{"ok": false, "error": "..."}`, and Coral must answer with the same keys and
/// types (and `ok: false`), not an MCP error; the thread both had is unchanged afterwards.
pub fn compare_thread_errors() {
    let config = shared_config();
    let (theirs_ws, ours_ws) = (Workspace::new(&config), Workspace::new(&config));
    let mut theirs = Server::original(&theirs_ws);
    let mut ours = Server::coral(&ours_ws);
    theirs.initialize();
    ours.initialize();
    let create = json!({"title": "发布 v2.0", "summary": "升级嵌入模型", "by": "chatA"});
    let thread_of = |reply: &Value| {
        body(reply)["thread"]["thread_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no thread in {reply}"))
            .to_string()
    };
    let their_thread = thread_of(&theirs.call("thread_create", &create));
    let our_thread = thread_of(&ours.call("thread_create", &create));
    let mut d = Diff::default();
    let mut error_flags = Vec::new();
    let calls = failing_thread_calls();
    for (tool, args) in &calls {
        let with = |id: &str| -> Value {
            serde_json::from_str(&args.to_string().replace("$T", id)).unwrap()
        };
        let (tr, or) = (
            theirs.call(tool, &with(&their_thread)),
            ours.call(tool, &with(&our_thread)),
        );
        let at = format!("{tool} {args}");
        assert!(
            or["error"].is_null(),
            "{at}: Coral answers an MCP error where the original answers a tool result: {or}"
        );
        let (tb, ob) = (body(&tr), body(&or));
        // The premise: the original refuses each of these in its body.
        assert_eq!(tb["ok"], false, "{at}: the original answered {tr}");
        assert!(
            tb["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{at}: the original answered {tr}"
        );
        assert!(
            ob["error"].as_str().is_some_and(|e| !e.trim().is_empty()),
            "{at}: Coral's error is not a message: {or}"
        );
        compare(&at, &tb, &ob, &mut d);
        error_flags.push(format!(
            "{at}: the original {} (isError {}); Coral {} (isError {})",
            tb["error"], tr["result"]["isError"], ob["error"], or["result"]["isError"]
        ));
    }
    // Nothing a failing call did is left behind: the thread has no step, no parent, and is
    // the only one.
    let (ts, os) = (
        body(&theirs.call("thread_status", &json!({}))),
        body(&ours.call("thread_status", &json!({}))),
    );
    theirs.close();
    ours.close();
    compare("thread_status after the failures", &ts, &os, &mut d);
    for (who, status) in [("the original", &ts), ("Coral", &os)] {
        assert_eq!(status["count"], 1, "{who}: {status}");
        assert_eq!(status["threads"][0]["step_count"], 0, "{who}: {status}");
        assert_eq!(
            status["threads"][0]["parent_thread_id"],
            Value::Null,
            "{who}: {status}"
        );
    }
    eprintln!(
        "interop thread errors summary: {} failing thread calls on both servers, each \
         answered {{ok: false, error}} by both; {} keys of the original's replies compared: {} \
         differences, {} keys only Coral has{}",
        calls.len(),
        d.compared,
        d.problems.len(),
        d.added.len(),
        if d.added.is_empty() {
            String::new()
        } else {
            format!(" ({})", d.added.join(", "))
        }
    );
    for flag in &error_flags {
        eprintln!("  {flag}");
    }
    assert!(
        d.problems.is_empty(),
        "{} differences from the live original:\n{}",
        d.problems.len(),
        d.problems
            .iter()
            .map(|(path, what)| format!("{path}: {what}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
