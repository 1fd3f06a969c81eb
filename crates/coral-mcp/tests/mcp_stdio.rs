//! `coral mcp` over a real pipe with raw JSON-RPC: handshake, tool list, every tool's success
//! and bad-argument cases, unknown methods, malformed and oversized input (each answered, the
//! session going on), Content-Length frames, clean exit on EOF.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// How long a test waits for an answer before failing: a watchdog against hangs (answers take
/// milliseconds), not a speed assertion.
const NO_ANSWER: Duration = Duration::from_secs(60);

struct Server {
    child: Child,
    stdin: ChildStdin,
    /// Lines from the server's stdout, read by a thread so that a missing answer fails the
    /// test (after [`NO_ANSWER`]) instead of hanging it.
    stdout: mpsc::Receiver<String>,
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

    fn send_bytes(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    /// One LSP-style frame: `Content-Length: N` (plus `extra` headers), a blank line, the body.
    fn send_framed(&mut self, body: &str, extra: &str) {
        let frame = format!("Content-Length: {}\r\n{extra}\r\n{body}", body.len());
        self.send_bytes(frame.as_bytes());
    }

    /// Send a bad input, then a ping; the bad input must get exactly one error reply (with
    /// `code` and `id`) and the ping its answer, in whichever order they come.
    fn expect_error_then_serve(&mut self, bad: &[u8], code: i64, id: Value) -> Value {
        self.send_bytes(bad);
        let ping = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": ping, "method": "ping"}).to_string());
        let (a, b) = (self.read(), self.read());
        let (error, pong) = if a["id"] == ping { (b, a) } else { (a, b) };
        let shown = String::from_utf8_lossy(&bad[..bad.len().min(60)]).to_string();
        assert!(pong.get("result").is_some(), "{shown}: {pong}");
        assert_eq!(pong["id"], ping, "{shown}: {pong}");
        assert_eq!(error["jsonrpc"], "2.0", "{shown}: {error}");
        assert_eq!(error["error"]["code"], code, "{shown}: {error}");
        assert_eq!(error["id"], id, "{shown}: {error}");
        assert!(error.get("result").is_none());
        error
    }

    fn read(&mut self) -> Value {
        let line = match self.stdout.recv_timeout(NO_ANSWER) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no answer within {NO_ANSWER:?}: the client would hang")
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("server closed stdout"),
        };
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
    // Blank lines separate messages and get no answer; the session goes on.
    s.send("");
    s.send("   \r");
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

/// Every malformed line is answered (-32700 parse error, -32600 invalid request, id null when
/// it cannot be read), so a client waiting on it never hangs, and the session goes on.
#[test]
fn every_malformed_line_gets_a_json_rpc_error_and_the_session_goes_on() {
    let mut s = Server::start();
    // Before initialize too.
    s.expect_error_then_serve(b"not json at all\n", -32700, Value::Null);
    s.initialize("2025-06-18");
    let deep_call = format!(
        r#"{{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{{"name":"memory_insert","arguments":{{"content":"x","project":{}1{}}}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    let cases: Vec<(Vec<u8>, i64, Value)> = vec![
        (b"this is not json\n".to_vec(), -32700, Value::Null),
        (
            b"{\"jsonrpc\": \"2.0\", \"id\": \n".to_vec(),
            -32700,
            Value::Null,
        ),
        (b"\xff\xfe\xfd not utf-8\n".to_vec(), -32700, Value::Null),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"a\":\"\xc3\x28\"}}\n"
                .to_vec(),
            -32700,
            Value::Null,
        ),
        (
            [&b"["[..]; 100_000]
                .concat()
                .into_iter()
                .chain(*b"\n")
                .collect(),
            -32700,
            Value::Null,
        ),
        (
            format!("{}\n", "{\"a\":".repeat(100_000)).into_bytes(),
            -32700,
            Value::Null,
        ),
        // Whole but nested past 128 levels: too deep to parse, the id is still found.
        (format!("{deep_call}\n").into_bytes(), -32700, json!(77)),
        (b"[1, 2]\n".to_vec(), -32600, Value::Null),
        (b"42\n".to_vec(), -32600, Value::Null),
        (b"{\"foo\": \"bar\"}\n".to_vec(), -32600, Value::Null),
        (
            b"{\"jsonrpc\": \"1.0\", \"id\": 8, \"method\": \"ping\"}\n".to_vec(),
            -32600,
            json!(8),
        ),
        (
            b"{\"jsonrpc\": \"2.0\", \"id\": \"s\", \"method\": 12}\n".to_vec(),
            -32600,
            json!("s"),
        ),
    ];
    for (bad, code, id) in cases {
        let error = s.expect_error_then_serve(&bad, code, id);
        assert!(
            error["error"]["message"].as_str().unwrap().len() < 1_000,
            "{error}"
        );
    }
    // Still a working server: a write and a read.
    let inserted = s
        .call(
            "memory_insert",
            &json!({"content": "still serving 仍在服务"}),
        )
        .unwrap();
    assert_eq!(inserted["inserted"], true);
    let found = s
        .call("memory_search", &json!({"query": "仍在服务"}))
        .unwrap();
    assert_eq!(found["hits"][0]["content"], "still serving 仍在服务");
    let err = s.finish();
    assert!(!err.contains("panicked"), "{err}");
}

/// A line over the documented 4 MiB limit (here 50 MB, written while the server reads) gets
/// -32600 with id null and is skipped whole; a request just under the limit is served.
#[test]
fn oversized_lines_are_refused_and_the_server_keeps_serving() {
    let mut s = Server::start();
    s.initialize("2025-06-18");
    let mut huge = Vec::with_capacity(50 << 20);
    huge.extend_from_slice(br#"{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"memory_insert","arguments":{"content":""#);
    huge.resize(50 << 20, b'a');
    huge.extend_from_slice(b"\"}}}\n");
    let error = s.expect_error_then_serve(&huge, -32600, Value::Null);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("4194304"), "{message}");
    assert!(
        message.contains(&format!("{} bytes", huge.len() - 1)),
        "{message}"
    );
    // Just under the limit: parsed and answered by the tool (over its 64 KiB text limit).
    let limit = 4 * 1024 * 1024;
    let head = r#"{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"memory_insert","arguments":{"content":""#;
    let tail = r#""}}}"#;
    let body = "b".repeat(limit - head.len() - tail.len());
    s.send(&format!("{head}{body}{tail}"));
    let reply = s.read();
    assert_eq!(reply["id"], 100, "{reply}");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    // One byte more is over.
    let body = "b".repeat(limit - head.len() - tail.len() + 1);
    s.expect_error_then_serve(
        format!("{head}{body}{tail}\n").as_bytes(),
        -32600,
        Value::Null,
    );
    s.finish();
}

/// LSP-style `Content-Length` frames (what the original Python server accepted too) work for
/// the whole session, mixed with lines; replies are always one JSON object per line.
#[test]
fn content_length_frames_are_accepted_and_answered_as_lines() {
    let mut s = Server::start();
    s.send_framed(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "lsp-style", "version": "1"}}}).to_string(),
        "",
    );
    let init = s.read();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "coral-memory");
    s.send_framed(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "",
    );
    // Multi-byte text: the length counts bytes, not characters.
    s.send_framed(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_insert", "arguments": {"content": "帧格式写入的记忆 framed"}}}).to_string(),
        "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n",
    );
    let reply = s.read();
    assert_eq!(reply["id"], 2);
    assert_eq!(
        reply["result"]["structuredContent"]["inserted"], true,
        "{reply}"
    );
    // Two frames in one write, then a line.
    let a = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    let b = r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#;
    s.send_bytes(
        format!(
            "Content-Length: {}\r\n\r\n{a}content-length: {}\r\n\r\n{b}",
            a.len(),
            b.len()
        )
        .as_bytes(),
    );
    s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"帧格式"}}}"#);
    let mut replies: Vec<Value> = (0..3).map(|_| s.read()).collect();
    replies.sort_by_key(|r| r["id"].as_i64());
    assert!(replies[0]["result"]["tools"].as_array().unwrap().len() > 5);
    assert!(replies[1]["result"].is_object());
    assert_eq!(
        replies[2]["result"]["structuredContent"]["hits"][0]["content"],
        "帧格式写入的记忆 framed"
    );
    // A frame that cannot be used is answered, and framing goes on.
    s.expect_error_then_serve(b"Content-Length: twelve\r\n\r\n", -32700, Value::Null);
    s.expect_error_then_serve(
        format!(
            "Content-Length: {}\r\n\r\n{}",
            60 << 20,
            "x".repeat(60 << 20)
        )
        .as_bytes(),
        -32600,
        Value::Null,
    );
    let err = s.finish();
    assert!(!err.contains("panicked"), "{err}");
}

/// Answers to bad input are written before the process exits, and a notification before
/// initialize does not end the session.
#[test]
fn answers_are_flushed_at_eof_and_early_notifications_do_not_end_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("coral_config.json");
    std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
    let run = |input: &[u8]| {
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(&config)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        let replies: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (
            out.status.code(),
            replies,
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    // Garbage and EOF: the answer, then a clean exit.
    let (code, replies, err) = run(b"garbage\n");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0]["error"]["code"], -32700);
    // A notification before initialize is dropped; the handshake then works.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let input = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n{init}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}}\n"
    );
    let (code, replies, err) = run(input.as_bytes());
    assert_eq!(code, Some(0), "{err}");
    let ids: Vec<&Value> = replies.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)], "{replies:?}");
    assert!(replies[1]["result"]["tools"].is_array());
}
