//! `coral mcp` over a real pipe with raw JSON-RPC: handshake, tool list, every tool's success
//! and bad-argument cases, unknown methods, malformed lines, clean exit on EOF.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("coral_config.json");
        std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(&config)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
            next_id: 1,
            _dir: dir,
        }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "server closed stdout");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried non-JSON {line:?}: {e}"))
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let reply = self.read();
        assert_eq!(reply["id"], id, "reply to another request: {reply}");
        reply
    }

    fn initialize(&mut self, version: &str) -> Value {
        let reply = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "coral-test", "version": "1"}}),
        );
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        reply
    }

    fn call(&mut self, tool: &str, args: &Value) -> Result<Value, String> {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let result = &reply["result"];
        assert!(
            reply.get("error").is_none(),
            "protocol error for {tool}: {reply}"
        );
        // The JSON text content and structuredContent carry the same object.
        let text = result["content"][0]["text"].as_str().expect("text content");
        let parsed: Value = serde_json::from_str(text).expect("text content is JSON");
        assert_eq!(parsed, result["structuredContent"]);
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
fn handshake_and_tool_list_on_the_oldest_protocol() {
    let mut s = Server::start();
    let init = s.initialize("2024-11-05");
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(init["result"]["serverInfo"]["name"], "coral-memory");
    assert_eq!(
        init["result"]["serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    let tools = s.request("tools/list", json!({}));
    let tools = tools["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for expected in [
        "memory_search",
        "memory_insert",
        "memory_flush",
        "memory_delete",
        "memory_mark_important",
        "coral_stats",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    for t in tools {
        let schema = t["inputSchema"].to_string();
        assert!(!schema.contains("uint"), "{schema}");
        assert_eq!(t["inputSchema"]["type"], "object");
    }
    let err = s.finish();
    assert!(err.contains("coral-memory ready"), "{err}");
}

#[test]
fn every_tool_succeeds_and_rejects_bad_arguments() {
    let mut s = Server::start();
    s.initialize("2025-06-18");
    common::check_all(|tool, args| s.call(tool, args));
    s.finish();
}

#[test]
fn unknown_methods_and_tools_get_errors_and_garbage_is_survived() {
    let mut s = Server::start();
    s.initialize("2025-03-26");
    let reply = s.request("no/such/method", json!({}));
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    let reply = s.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool"),
        "{reply}"
    );
    // Malformed lines are ignored; the session goes on.
    s.send("this is not json");
    s.send("{\"jsonrpc\": \"2.0\", \"id\": ");
    s.send("");
    let reply = s.request(
        "tools/call",
        json!({"name": "memory_insert", "arguments": {"content": "still alive 仍在运行"}}),
    );
    assert_eq!(
        reply["result"]["structuredContent"]["inserted"], true,
        "{reply}"
    );
    let reply = s.request("ping", json!({}));
    assert!(reply.get("result").is_some(), "{reply}");
    s.finish();
}

#[test]
fn eof_checkpoints_and_a_new_session_sees_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("coral_config.json");
    std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
    let session = |requests: &[Value]| -> Vec<Value> {
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(&config)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut input = String::new();
        input.push_str(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).to_string());
        input.push('\n');
        input.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
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
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let call = |id: u64, name: &str, args: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}});
    session(&[call(
        1,
        "memory_insert",
        json!({"content": "周五下午开周会"}),
    )]);
    // The clean exit wrote a checkpoint: the journal holds only its header.
    let wal = std::fs::read_to_string(dir.path().join("memory_data/coral_wal.jsonl")).unwrap();
    assert_eq!(wal.lines().count(), 1, "{wal}");
    let replies = session(&[call(1, "memory_search", json!({"query": "周会"}))]);
    let hits = &replies.last().unwrap()["result"]["structuredContent"]["hits"];
    assert_eq!(hits[0]["content"], "周五下午开周会");
}
