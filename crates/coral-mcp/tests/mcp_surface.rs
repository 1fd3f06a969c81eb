//! MCP resources, prompts and `coral mcp --http` (Streamable HTTP) over real processes: the
//! same tools on both transports, resources read through the tools, and the HTTP guard's
//! refusals. The official
//! clients' checks are in `cargo xtask clients` (`tests/clients/python_mcp_http_client.py`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// `coral mcp` on stdio, with newline-delimited JSON-RPC.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    _dir: tempfile::TempDir,
}

impl StdioServer {
    fn start() -> StdioServer {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(CORAL)
            .arg("--data-dir")
            .arg(dir.path())
            .args(["-q", "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = StdioServer {
            child,
            stdin,
            stdout,
            _dir: dir,
        };
        s.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        );
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send a request; return every message up to and including its answer.
    fn exchange(&mut self, id: u64, method: &str, params: Value) -> Vec<Value> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut seen = Vec::new();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server hung up"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            let done = message["id"] == json!(id);
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        let answer = self.exchange(id, method, params).pop().unwrap();
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn resource_json(result: &Value) -> Value {
    let text = result["contents"][0]["text"]
        .as_str()
        .expect("text contents");
    serde_json::from_str(text).unwrap()
}

#[test]
fn resources_and_prompts_answer_through_the_tools_and_thread_changes_are_announced() {
    let mut s = StdioServer::start();
    let listed = s.request(2, "resources/list", json!({}));
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "coral://stats",
            "coral://report",
            "coral://threads",
            "coral://memories/recent"
        ]
    );

    let inserted = s.request(
        3,
        "tools/call",
        json!({"name": "memory_insert", "arguments": {"content": "用户喜欢喝冰镇拿铁咖啡"}}),
    );
    let id = inserted["structuredContent"]["item_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let stats = resource_json(&s.request(4, "resources/read", json!({"uri": "coral://stats"})));
    assert_eq!(stats["stats"]["total"], 1, "{stats}");
    let recent = resource_json(&s.request(
        5,
        "resources/read",
        json!({"uri": "coral://memories/recent"}),
    ));
    assert_eq!(recent["memories"][0]["item_id"], json!(id), "{recent}");

    // A thread created over MCP is listed; nothing but the answer comes back (clients that
    // read one line per request stay in step).
    let messages = s.exchange(
        6,
        "tools/call",
        json!({"name": "thread_create", "arguments": {"title": "发布 v2", "summary": "plan"}}),
    );
    assert_eq!(messages.len(), 1, "{messages:?}");
    let created = &messages.last().unwrap()["result"]["structuredContent"];
    let thread_id = created["thread"]["thread_id"]
        .as_str()
        .or(created["thread_id"].as_str())
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let board = resource_json(&s.request(7, "resources/read", json!({"uri": "coral://threads"})));
    assert!(board.to_string().contains("发布 v2"), "{board}");
    let one = resource_json(&s.request(
        8,
        "resources/read",
        json!({"uri": format!("coral://thread/{thread_id}")}),
    ));
    assert!(one.to_string().contains(&thread_id), "{one}");

    // Unknown and malformed URIs are errors naming the URI; nothing else is readable.
    for (n, uri) in [
        "coral://thread/no-such",
        "file:///etc/passwd",
        "coral://nothing",
    ]
    .into_iter()
    .enumerate()
    {
        let answer = s
            .exchange(10 + n as u64, "resources/read", json!({"uri": uri}))
            .pop()
            .unwrap();
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("no thread") || message.contains(uri),
            "{uri}: {answer}"
        );
    }

    let prompt = s.request(
        20,
        "prompts/get",
        json!({"name": "recall", "arguments": {"question": "拿铁咖啡"}}),
    );
    let text = prompt["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("冰镇拿铁咖啡") && text.contains("Question:"),
        "{text}"
    );
    let none = s.request(
        21,
        "prompts/get",
        json!({"name": "recall", "arguments": {"question": "quantum chromodynamics"}}),
    );
    assert!(
        none["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("No stored memory"),
        "{none}"
    );
    let missing = s
        .exchange(
            22,
            "prompts/get",
            json!({"name": "recall", "arguments": {}}),
        )
        .pop()
        .unwrap();
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("question"),
        "{missing}"
    );
}

/// `coral mcp --http` on a free port, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl HttpServer {
    fn start(extra: &[&str]) -> HttpServer {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(CORAL)
            .arg("--data-dir")
            .arg(dir.path())
            .args(["-q", "mcp", "--http", "--port", "0"])
            .args(extra)
            .env_remove("CORAL_HTTP_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let info: Value = serde_json::from_str(&line).expect("address line");
        assert_eq!(info["endpoint"], "/mcp");
        HttpServer {
            child,
            url: format!("http://{}/mcp", info["listening"].as_str().unwrap()),
            _dir: dir,
        }
    }

    /// POST one JSON-RPC message; the status, the session id and every JSON message of the
    /// answer (a JSON body or an event stream's `data:` lines).
    fn post(
        &self,
        message: &Value,
        session: Option<&str>,
        headers: &[(&str, &str)],
    ) -> (u16, Option<String>, Vec<Value>) {
        let mut req = ureq::post(&self.url)
            .set("Content-Type", "application/json")
            .set("Accept", "application/json, text/event-stream");
        if let Some(s) = session {
            req = req.set("Mcp-Session-Id", s);
        }
        for (k, v) in headers {
            req = req.set(k, v);
        }
        let response = match req.send_string(&message.to_string()) {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("transport error: {e}"),
        };
        let status = response.status();
        let session = response.header("mcp-session-id").map(String::from);
        let text = response.into_string().unwrap_or_default();
        let messages = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .chain(std::iter::once(text.as_str()).filter(|t| t.starts_with('{')))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect();
        (status, session, messages)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "test", "version": "1"}}})
}

#[test]
fn streamable_http_serves_the_stdio_tools_and_refuses_foreign_pages_and_missing_tokens() {
    let server = HttpServer::start(&[]);
    let (status, session, answer) = server.post(&initialize(), None, &[]);
    assert_eq!(status, 200, "{answer:?}");
    let session = session.expect("a session id");
    assert_eq!(answer[0]["result"]["serverInfo"]["name"], "coral-memory");
    assert!(answer[0]["result"]["capabilities"]["resources"].is_object());
    let (status, _, _) = server.post(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(&session),
        &[],
    );
    assert!(status == 202 || status == 200, "{status}");
    let (_, _, listed) = server.post(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        Some(&session),
        &[],
    );
    let names: Vec<&str> = listed[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // The same list as stdio's.
    let mut stdio = StdioServer::start();
    let stdio_list = stdio.request(2, "tools/list", json!({}));
    let stdio_names: Vec<&str> = stdio_list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, stdio_names);
    let (_, _, read) = server.post(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                "params": {"uri": "coral://stats"}}),
        Some(&session),
        &[],
    );
    assert_eq!(resource_json(&read[0]["result"])["stats"]["total"], 0);

    // DNS rebinding and cross-site pages are refused before anything is read.
    for headers in [
        [("Host", "evil.example")],
        [("Origin", "https://evil.example")],
    ] {
        let (status, _, _) = server.post(&initialize(), None, &headers);
        assert_eq!(status, 403, "{headers:?}");
    }

    // Off loopback without a token: refused at start.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(CORAL)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["-q", "mcp", "--http", "--host", "0.0.0.0", "--port", "0"])
        .env_remove("CORAL_HTTP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("without a token"));
    // --port without --http is a usage error, not a silently ignored flag.
    let out = Command::new(CORAL)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["mcp", "--port", "9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    // With a token: refused without it, served with it.
    let token = "coral-test-token-0123456789abcdef";
    let guarded = HttpServer::start(&["--token", token]);
    let (status, _, _) = guarded.post(&initialize(), None, &[]);
    assert_eq!(status, 401);
    let bearer = format!("Bearer {token}");
    let (status, session, _) = guarded.post(&initialize(), None, &[("Authorization", &bearer)]);
    assert_eq!(status, 200);
    assert!(session.is_some());
}
