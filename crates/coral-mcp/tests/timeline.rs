//! The timeline over the real transports: the host's writes through `coral http` (`POST /rpc`),
//! the model's read tools through both HTTP and `coral mcp` with the same answers, the write
//! operations absent from MCP, and a real SIGKILL between `begin_turn` and `complete_turn`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");
/// Both servers here answer for every namespace a call names (so that their answers to the
/// same calls can be compared), which over HTTP needs a token.
const TOKEN: &str = "timeline-test-token-42";

fn config_in(dir: &Path) -> PathBuf {
    let config = dir.join("coral_config.json");
    std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
    config
}

/// A running `coral http` on a free loopback port.
struct Sidecar {
    child: Child,
    base: String,
}

impl Sidecar {
    fn start(config: &Path) -> Sidecar {
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(config)
            .args([
                "-q",
                "http",
                "--port",
                "0",
                "--any-namespace",
                "--token",
                TOKEN,
            ])
            .env_remove("CORAL_HTTP_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let listening: Value = serde_json::from_str(&line).expect("address line");
        let base = format!("http://{}", listening["listening"].as_str().unwrap());
        Sidecar { child, base }
    }

    /// `(status, body)` of one tool call.
    fn call(&self, tool: &str, args: Value) -> (u16, Value) {
        let response = match ureq::post(&format!("{}/rpc", self.base))
            .set("Content-Type", "application/json")
            .set("Authorization", &format!("Bearer {TOKEN}"))
            .send_string(&json!({"tool": tool, "args": args}).to_string())
        {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("transport error: {e}"),
        };
        let status = response.status();
        (
            status,
            serde_json::from_str(&response.into_string().unwrap()).unwrap(),
        )
    }

    /// The result of a call that must succeed.
    fn ok(&self, tool: &str, args: Value) -> Value {
        let (status, body) = self.call(tool, args.clone());
        assert_eq!(status, 200, "{tool} {args}: {body}");
        assert_eq!(body["ok"], true);
        body["result"].clone()
    }

    /// The error message of a call that must be refused with 400.
    fn refused(&self, tool: &str, args: Value) -> String {
        let (status, body) = self.call(tool, args.clone());
        assert_eq!(status, 400, "{tool} {args}: {body}");
        assert_eq!(body["ok"], false);
        body["error"].as_str().unwrap().to_string()
    }

    /// SIGKILL: no shutdown code runs.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM and wait for the clean exit.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `coral mcp` session: initialise, send `requests`, close stdin; the replies by id.
fn mcp_session(config: &Path, requests: &[Value]) -> Vec<Value> {
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(["-q", "mcp", "--any-namespace"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "timeline-test", "version": "1"}}})
    .to_string();
    input.push_str("\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for r in requests {
        input.push_str(&r.to_string());
        input.push('\n');
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let mut replies: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    replies.sort_by_key(|r| r["id"].as_u64());
    replies
}

fn mcp_call(id: u64, tool: &str, args: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args}})
}

const NS: fn() -> Value = || json!({"user_id": "alice", "conversation_id": "chat-7"});

fn with(extra: Value) -> Value {
    let mut v = NS();
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

#[test]
fn host_writes_over_http_and_models_read_over_both_transports() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let http = Sidecar::start(&config);
    let turn = http.ok(
        "timeline_begin_turn",
        with(json!({"text": "帮我看看构建日志", "timezone": "Asia/Shanghai"})),
    )["turn_id"]
        .as_str()
        .unwrap()
        .to_string();
    let log = "error[E0308]: mismatched types at src/main.rs:42\n".repeat(120);
    http.ok(
        "timeline_record_tool",
        with(json!({"turn_id": turn, "tool_name": "shell", "call_id": "call_1",
                    "input": {"cmd": "cargo build"}, "result": log, "result_source_id": "build-log"})),
    );
    let m = http.refused(
        "timeline_record_tool",
        with(json!({"turn_id": turn, "tool_name": "shell", "call_id": "call_1", "result": "x"})),
    );
    assert!(m.starts_with("conflict:"), "{m}");
    let m = http.refused(
        "timeline_complete_turn",
        with(json!({"turn_id": "turn-unknown", "final_text": "x"})),
    );
    assert!(m.starts_with("unknown_turn:"), "{m}");
    let done = http.ok(
        "timeline_complete_turn",
        with(json!({"turn_id": turn, "final_text": "第 42 行类型不匹配。"})),
    );
    assert_eq!(done["turn"]["settlement"]["folded"], 1);
    let history = http.ok("timeline_history", NS());
    let card = history["messages"][2]["content"].as_str().unwrap();
    assert!(card.contains("source_id: build-log\n"), "{card}");
    assert!(history["tokens"]["saved"].as_u64().unwrap() > 500);

    let reads = [
        (
            "open_memory",
            with(json!({"memory_id": "build-log", "view": "content"})),
        ),
        ("open_memory", with(json!({"memory_id": "build-log"}))),
        (
            "read_timeline",
            with(json!({"anchor_source_id": "build-log", "timezone": "Asia/Shanghai"})),
        ),
        (
            "read_timeline",
            with(
                json!({"time_range": {"start_at": "2000-01-01 00:00", "end_at": "2100-01-01 00:00"}}),
            ),
        ),
        ("read_timeline", with(json!({"date_from": "2026-02-30"}))),
        (
            "open_memory",
            json!({"memory_id": "build-log", "user_id": "mallory"}),
        ),
        (
            "retrieve_for_turn",
            with(json!({"query": "第 42 行类型不匹配", "include_visible": true})),
        ),
        (
            "retrieve_for_turn",
            with(json!({"query": "第 42 行类型不匹配"})),
        ),
        ("browse_memory", with(json!({"keywords": ["构建"]}))),
    ];
    let over_http: Vec<Value> = reads.iter().map(|(t, a)| http.ok(t, a.clone())).collect();
    assert_eq!(over_http[0]["memory"]["content"], log.as_str());
    assert_eq!(over_http[1]["memory"]["card"], card);
    assert_eq!(over_http[2]["status"], "ok");
    assert_eq!(over_http[3]["total_units"], 1);
    assert_eq!(over_http[4]["status"], "invalid_filter");
    assert_eq!(over_http[5]["status"], "empty");
    assert_eq!(over_http[6]["status"], "ok", "{}", over_http[6]);
    assert_eq!(over_http[6]["hits"][0]["layer"], "raw");
    // The only turn is in the context already, so by default it is left out.
    assert_eq!(over_http[7]["status"], "empty");
    assert_eq!(over_http[7]["excluded_visible"], over_http[6]["candidates"]);
    assert_eq!(over_http[8]["status"], "empty");
    http.stop();

    // The same reads through MCP give the same answers; the writes are not offered there.
    let mut requests = vec![json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})];
    for (i, (t, a)) in reads.iter().enumerate() {
        requests.push(mcp_call(10 + i as u64, t, a));
    }
    requests.push(mcp_call(
        99,
        "timeline_begin_turn",
        &with(json!({"text": "x"})),
    ));
    let replies = mcp_session(&config, &requests);
    let names: Vec<&str> = replies[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for tool in [
        "open_memory",
        "read_timeline",
        "retrieve_for_turn",
        "browse_memory",
    ] {
        assert!(names.contains(&tool), "{tool} not in {names:?}");
    }
    assert!(
        names.iter().all(|n| !n.starts_with("timeline_")),
        "{names:?}"
    );
    let schema = replies[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_timeline")
        .unwrap()["inputSchema"]
        .clone();
    assert_eq!(schema["properties"]["time_range"]["type"], "object");
    assert!(!schema.to_string().contains("null"));
    for (i, expected) in over_http.iter().enumerate() {
        let reply = replies.iter().find(|r| r["id"] == 10 + i as u64).unwrap();
        assert_eq!(reply["result"]["isError"], false, "{reply}");
        assert_eq!(&reply["result"]["structuredContent"], expected, "read {i}");
    }
    let refused = replies.iter().find(|r| r["id"] == 99).unwrap();
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tool"),
        "{refused}"
    );
}

#[test]
fn sigkill_between_begin_and_complete_leaves_a_turn_that_recovery_aborts() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let http = Sidecar::start(&config);
    let turn = http.ok(
        "timeline_begin_turn",
        with(json!({"text": "跑一下测试", "turn_id": "turn-crash", "source_id": "msg-crash"})),
    )["turn_id"]
        .as_str()
        .unwrap()
        .to_string();
    let output = "test result: FAILED. 3 passed; 1 failed\n".repeat(40);
    http.ok(
        "timeline_record_tool",
        with(json!({"turn_id": turn, "tool_name": "shell", "call_id": "run_1",
                    "input": {"cmd": "cargo test"}, "result": output, "result_source_id": "test-out"})),
    );
    http.ok(
        "timeline_append_action",
        with(
            json!({"turn_id": turn, "tool_name": "shell", "call_id": "run_2",
                    "arguments": {"cmd": "cargo test -- --nocapture"}}),
        ),
    );
    let open = http.ok("timeline_turn", with(json!({"turn_id": turn})));
    assert_eq!(open["turn"]["status"], "open");
    assert_eq!(open["turn"]["pending"], json!(["run_2"]));
    http.kill();

    let http = Sidecar::start(&config);
    let after = http.ok("timeline_turn", with(json!({"turn_id": turn})));
    let t = &after["turn"];
    assert_eq!(t["status"], "aborted", "{after}");
    assert!(
        t["end_reason"]
            .as_str()
            .unwrap()
            .contains("ended before completing"),
        "{t}"
    );
    // Everything acknowledged before the kill is there, whole.
    assert_eq!(t["entries"], 4);
    assert_eq!(t["settlement"]["folded"], 1);
    let m = http.refused(
        "timeline_complete_turn",
        with(json!({"turn_id": turn, "final_text": "done"})),
    );
    assert!(m.starts_with("turn_closed:"), "{m}");
    // A retry of the first begin_turn finds the aborted turn rather than starting another.
    let retry = http.ok(
        "timeline_begin_turn",
        with(json!({"text": "跑一下测试", "turn_id": "turn-crash", "source_id": "msg-crash"})),
    );
    assert_eq!(retry["created"], false);
    // The history has no half-written pair: the unanswered call is left out.
    let history = http.ok("timeline_history", NS());
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    assert_eq!(history["messages"][1]["tool_calls"][0]["id"], "run_1");
    let opened = http.ok(
        "open_memory",
        with(json!({"memory_id": "test-out", "view": "content"})),
    );
    assert_eq!(opened["memory"]["content"], output.as_str());
    // A new turn in the same conversation works as usual.
    let next = http.ok("timeline_begin_turn", with(json!({"text": "再试一次"})));
    let next_turn = next["turn_id"].as_str().unwrap();
    let done = http.ok(
        "timeline_complete_turn",
        with(json!({"turn_id": next_turn, "final_text": "好的"})),
    );
    assert_eq!(done["turn"]["status"], "completed");
    let metrics = http.ok("timeline_metrics", NS());
    assert_eq!(metrics["metrics"]["aborted_turns"], 1);
    assert_eq!(metrics["metrics"]["open_turns"], 0);
    http.stop();
}
