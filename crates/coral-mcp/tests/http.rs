//! `coral http` over real loopback HTTP: every tool through `POST /rpc`, status codes and error
//! bodies, the token, the body limit, and concurrent clients.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// A running sidecar on a free loopback port, killed when dropped.
struct Sidecar {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Sidecar {
    fn start(extra: &[&str]) -> Sidecar {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("coral_config.json");
        std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(&config)
            .args(["-q", "http", "--port", "0"])
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
        let listening: Value = serde_json::from_str(&line).expect("address line");
        let base = format!("http://{}", listening["listening"].as_str().unwrap());
        Sidecar {
            child,
            base,
            _dir: dir,
        }
    }

    /// POST raw bytes to /rpc; returns status and parsed body.
    fn post(&self, body: &[u8], token: Option<&str>) -> (u16, Value) {
        let mut req =
            ureq::post(&format!("{}/rpc", self.base)).set("Content-Type", "application/json");
        if let Some(t) = token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let response = match req.send_bytes(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("transport error: {e}"),
        };
        let status = response.status();
        let text = response.into_string().unwrap();
        let json = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("body {text:?} is not JSON: {e}"));
        (status, json)
    }

    /// The bound address, `127.0.0.1:PORT`.
    fn addr(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// POST /rpc with this server's Host, JSON content type and more hand-written headers.
    fn raw_post(&self, headers: &str, body: &[u8]) -> (u16, Value) {
        let addr = self.addr();
        self.raw(
            &format!(
                "POST /rpc HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{headers}"
            ),
            body,
        )
    }

    /// A request written byte for byte over a raw socket (`head` is the request line and
    /// headers, each ending in CRLF); returns status and parsed body.
    fn raw(&self, head: &str, body: &[u8]) -> (u16, Value) {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(self.addr()).unwrap();
        let head = format!("{head}Connection: close\r\n\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        // The server may answer and close before taking everything; that is the point.
        let _ = stream.write_all(body);
        let mut reply = Vec::new();
        let _ = stream.read_to_end(&mut reply);
        let text = String::from_utf8_lossy(&reply);
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
        // The body may itself be chunked; take the JSON object inside it.
        let json = body
            .find('{')
            .and_then(|a| body.rfind('}').map(|b| &body[a..=b]))
            .unwrap_or("null");
        (status, serde_json::from_str(json).unwrap_or(Value::Null))
    }

    fn call(&self, tool: &str, args: &Value) -> (u16, Value) {
        self.post(
            json!({"tool": tool, "args": args}).to_string().as_bytes(),
            None,
        )
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn every_tool_through_rpc() {
    let s = Sidecar::start(&[]);
    common::check_all(|tool, args| {
        let (status, body) = s.call(tool, args);
        match status {
            200 => {
                assert_eq!(body["ok"], true);
                Ok(body["result"].clone())
            }
            400 => {
                assert_eq!(body["ok"], false);
                Err(body["error"].as_str().unwrap().to_string())
            }
            other => panic!("{tool}: unexpected status {other}: {body}"),
        }
    });
}

#[test]
fn status_codes_and_error_bodies() {
    let s = Sidecar::start(&[]);
    let (status, body) = s.call("no_such_tool", &json!({}));
    assert_eq!((status, body["ok"].clone()), (404, json!(false)));
    assert!(body["error"].as_str().unwrap().contains("no_such_tool"));
    for bad in [
        &b"{not json"[..],
        b"[1, 2]",
        b"{\"args\": {}}",
        b"{\"tool\": 5}",
        b"{\"tool\": \"coral_stats\", \"x\": 1}",
        b"",
    ] {
        let (status, body) = s.post(bad, None);
        assert_eq!(status, 400, "{:?}: {body}", String::from_utf8_lossy(bad));
        assert_eq!(body["ok"], false);
    }
    // Over 1 MiB: refused from the declared length, before the body is read. Raw TCP so the
    // client does not race the early answer while still writing.
    let (status, body) = s.raw_post(
        &format!("Content-Length: {}\r\n", 1024 * 1024 + 1),
        b"{\"tool\": ",
    );
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["ok"], false);
    // Chunked with no declared length: refused once the stream passes the limit.
    let mut chunked = Vec::new();
    let chunk = vec![b' '; 64 * 1024];
    for _ in 0..17 {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(&chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (status, body) = s.raw_post("Transfer-Encoding: chunked\r\n", &chunked);
    assert_eq!(status, 413, "{body}");
    // Health, wrong path, wrong method: JSON every time.
    let health: Value = ureq::get(&format!("{}/health", s.base))
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(health["ok"], true);
    assert_eq!(health["name"], "coral-memory");
    match ureq::get(&format!("{}/nope", s.base)).call() {
        Err(ureq::Error::Status(404, r)) => {
            assert_eq!(r.into_json::<Value>().unwrap()["ok"], false)
        }
        other => panic!("expected 404, got {other:?}"),
    }
    match ureq::get(&format!("{}/rpc", s.base)).call() {
        Err(ureq::Error::Status(405, r)) => {
            assert_eq!(r.into_json::<Value>().unwrap()["ok"], false)
        }
        other => panic!("expected 405, got {other:?}"),
    }
    // Nothing that failed stored anything.
    let (_, stats) = s.call("coral_stats", &json!({}));
    assert_eq!(stats["result"]["stats"]["total"], 0);
}

const TOKEN: &str = "s3cret-0123456789abcdef";

/// What a web page can send: simple (unpreflighted) cross-site POSTs and DNS-rebinding
/// requests that carry the attacker's name in Host. None is served, none stores anything,
/// every refusal is a JSON error; the same request from a local client is served.
#[test]
fn cross_site_and_rebinding_requests_are_refused() {
    let s = Sidecar::start(&[]);
    let addr = s.addr().to_string();
    let port = addr.rsplit(':').next().unwrap().to_string();
    let body =
        json!({"tool": "memory_insert", "args": {"content": "planted by a web page 网页植入"}})
            .to_string();
    let request = |host: &str, extra: &str| {
        s.raw(
            &format!(
                "POST /rpc HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: {}\r\n",
                body.len()
            ),
            body.as_bytes(),
        )
    };
    // The reproduction: text/plain, a foreign Origin and a rebound Host.
    let (status, reply) = request(
        &format!("evil.example:{port}"),
        "Content-Type: text/plain\r\nOrigin: https://evil.example\r\n",
    );
    assert_eq!(status, 403, "{reply}");
    assert_eq!(reply["ok"], false);
    assert!(
        reply["error"].as_str().unwrap().contains("evil.example"),
        "{reply}"
    );
    let cases: Vec<(String, &str, u16, &str)> = vec![
        // DNS rebinding: the page's name in Host, even with JSON and no Origin.
        (
            format!("evil.example:{port}"),
            "Content-Type: application/json\r\n",
            403,
            "rebinding",
        ),
        (
            format!("localhost.evil.example:{port}"),
            "Content-Type: application/json\r\n",
            403,
            "rebinding",
        ),
        (
            "localhost".into(),
            "Content-Type: application/json\r\n",
            403,
            "rebinding",
        ),
        // A cross-site page on the right Host: its Origin gives it away.
        (
            addr.clone(),
            "Content-Type: application/json\r\nOrigin: https://evil.example\r\n",
            403,
            "--allowed-origin",
        ),
        (
            addr.clone(),
            "Content-Type: application/json\r\nOrigin: null\r\n",
            403,
            "--allowed-origin",
        ),
        // A simple request (no preflight) from a form or fetch with no-cors.
        (
            addr.clone(),
            "Content-Type: text/plain;charset=UTF-8\r\n",
            415,
            "application/json",
        ),
        (
            addr.clone(),
            "Content-Type: application/x-www-form-urlencoded\r\n",
            415,
            "application/json",
        ),
        (
            addr.clone(),
            "Content-Type: multipart/form-data; boundary=x\r\n",
            415,
            "application/json",
        ),
        (addr.clone(), "", 415, "application/json"),
    ];
    for (host, extra, expected, hint) in &cases {
        let (status, reply) = request(host, extra);
        assert_eq!(status, *expected, "{host} {extra:?}: {reply}");
        assert_eq!(reply["ok"], false, "{reply}");
        let error = reply["error"].as_str().unwrap();
        assert!(error.contains(hint), "{error}");
    }
    // The preflight a browser sends before a JSON POST from another origin is refused too.
    let (status, _) = s.raw(
        &format!(
            "OPTIONS /rpc HTTP/1.1\r\nHost: {addr}\r\nOrigin: https://evil.example\r\n\
             Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n"
        ),
        b"",
    );
    assert_eq!(status, 403);
    // GET /health from a rebinding page: refused as well.
    let (status, _) = s.raw(
        &format!("GET /health HTTP/1.1\r\nHost: evil.example:{port}\r\n"),
        b"",
    );
    assert_eq!(status, 403);
    let (_, stats) = s.call("coral_stats", &json!({}));
    assert_eq!(stats["result"]["stats"]["total"], 0, "nothing was stored");

    // The same request from Coral's own origins and loopback names, JSON with parameters.
    for (i, (host, origin)) in [
        (addr.clone(), format!("http://127.0.0.1:{port}")),
        (
            format!("localhost:{port}"),
            format!("http://localhost:{port}"),
        ),
        (format!("LocalHost:{port}"), String::new()),
    ]
    .iter()
    .enumerate()
    {
        let origin = if origin.is_empty() {
            String::new()
        } else {
            format!("Origin: {origin}\r\n")
        };
        let content = [
            "周五下午开周会",
            "the user prefers metric units",
            "项目 A 在四月上线",
        ][i];
        let body = json!({"tool": "memory_insert", "args": {"content": content}}).to_string();
        let (status, reply) = s.raw(
            &format!(
                "POST /rpc HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: Application/JSON; charset=utf-8\r\nContent-Length: {}\r\n",
                body.len()
            ),
            body.as_bytes(),
        );
        assert_eq!(status, 200, "{host} {origin}: {reply}");
    }
    let (_, stats) = s.call("coral_stats", &json!({}));
    assert_eq!(stats["result"]["stats"]["total"], 3);
}

/// `--allowed-host` and `--allowed-origin` let a reverse proxy's name and a web app in, and
/// nothing else; bad values stop the server at startup.
#[test]
fn allowed_hosts_and_origins_are_the_only_additions() {
    let s = Sidecar::start(&[
        "--allowed-host",
        "memory.example.com",
        "--allowed-origin",
        "https://app.example.com",
    ]);
    let port = s.addr().rsplit(':').next().unwrap().to_string();
    let body = json!({"tool": "coral_stats", "args": {}}).to_string();
    let request = |host: &str, origin: &str| {
        s.raw(
            &format!(
                "POST /rpc HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ),
            body.as_bytes(),
        )
        .0
    };
    assert_eq!(
        request("memory.example.com", "https://app.example.com"),
        200
    );
    assert_eq!(
        request(&format!("localhost:{port}"), "https://app.example.com"),
        200
    );
    assert_eq!(request("other.example.com", "https://app.example.com"), 403);
    assert_eq!(request("memory.example.com", "https://evil.example"), 403);
    assert_eq!(request("memory.example.com", "http://app.example.com"), 403);
    for (flag, value) in [
        ("--allowed-host", "http://memory.example.com"),
        ("--allowed-host", "a/b"),
        ("--allowed-origin", "app.example.com"),
        ("--allowed-origin", "https://app.example.com/path"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(CORAL)
            .arg("--config")
            .arg(dir.path().join("c.json"))
            .args(["http", "--port", "0", flag, value])
            .env_remove("CORAL_HTTP_TOKEN")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag) && err.contains(value), "{err}");
    }
}

#[test]
fn tokens_guard_every_request_and_open_binds_need_one() {
    let s = Sidecar::start(&["--token", TOKEN]);
    let body = json!({"tool": "coral_stats", "args": {}}).to_string();
    assert_eq!(s.post(body.as_bytes(), None).0, 401);
    assert_eq!(s.post(body.as_bytes(), Some("wrong")).0, 401);
    assert_eq!(s.post(body.as_bytes(), Some(&TOKEN[1..])).0, 401);
    assert_eq!(s.post(body.as_bytes(), Some(TOKEN)).0, 200);
    match ureq::get(&format!("{}/health", s.base)).call() {
        Err(ureq::Error::Status(401, _)) => {}
        other => panic!("expected 401, got {other:?}"),
    }
    // The scheme is case-insensitive (RFC 7235): bearer, BEARER.
    for scheme in ["bearer", "BEARER", "Bearer", "beaRER"] {
        let (status, reply) = s.raw_post(
            &format!(
                "Authorization: {scheme} {TOKEN}\r\nContent-Length: {}\r\n",
                body.len()
            ),
            body.as_bytes(),
        );
        assert_eq!(status, 200, "{scheme}: {reply}");
        assert_eq!(reply["ok"], true);
    }
    let (status, reply) = s.raw_post(
        &format!(
            "Authorization: Basic {TOKEN}\r\nContent-Length: {}\r\n",
            body.len()
        ),
        body.as_bytes(),
    );
    assert_eq!(status, 401, "{reply}");
    assert!(
        reply["error"].as_str().unwrap().contains("Bearer"),
        "{reply}"
    );

    // Blank, short or spaced tokens are refused at startup (exit 2), before anything is opened,
    // from the flag and from $CORAL_HTTP_TOKEN, also on loopback.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.json");
    for (host, token) in [
        ("0.0.0.0", " "),
        ("0.0.0.0", "                    "),
        ("127.0.0.1", ""),
        ("127.0.0.1", "short"),
        ("127.0.0.1", "0123456789abcde"),
        ("0.0.0.0", "0123456789 abcdef"),
    ] {
        for via_env in [false, true] {
            if via_env && token.is_empty() {
                continue; // an empty variable counts as unset
            }
            let mut command = Command::new(CORAL);
            command
                .arg("--config")
                .arg(&config)
                .args(["http", "--host", host, "--port", "0"])
                .env_remove("CORAL_HTTP_TOKEN");
            if via_env {
                command.env("CORAL_HTTP_TOKEN", token);
            } else {
                command.args(["--token", token]);
            }
            let out = command.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{host} {token:?} env={via_env}: {err}"
            );
            assert!(err.contains("token") && err.contains("16"), "{err}");
            assert!(!config.exists(), "refused before touching anything");
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(CORAL)
        .arg("--config")
        .arg(dir.path().join("c.json"))
        .args(["http", "--host", "0.0.0.0", "--port", "0"])
        .env_remove("CORAL_HTTP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without a token"), "{err}");
    assert!(
        !dir.path().join("c.json").exists(),
        "refused before touching anything"
    );
}

#[test]
fn concurrent_clients_reach_a_consistent_state() {
    let s = Sidecar::start(&[]);
    let base = s.base.clone();
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let base = base.clone();
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().build();
                let mut ids = Vec::new();
                for i in 0..25 {
                    // Distinct enough that no two memories merge as near-duplicates.
                    let n = (c * 1000 + i) as u64;
                    let content = format!("客户端记忆 w{:x} q{:x} z{:x} 第{n}条", n * 7919, n * 104_729, n * 1_299_709);
                    let r: Value = agent
                        .post(&format!("{base}/rpc"))
                        .send_json(json!({"tool": "memory_insert", "args": {"content": &content}}))
                        .unwrap()
                        .into_json()
                        .unwrap();
                    ids.push(r["result"]["item_id"].as_str().unwrap().to_string());
                    let r: Value = agent
                        .post(&format!("{base}/rpc"))
                        .send_json(json!({"tool": "memory_search", "args": {"query": content, "top_k": 1}}))
                        .unwrap()
                        .into_json()
                        .unwrap();
                    assert_eq!(r["result"]["hits"][0]["id"], *ids.last().unwrap(), "read your own write");
                }
                ids
            })
        })
        .collect();
    let mut all: Vec<String> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 200);
    let (_, stats) = s.call("coral_stats", &json!({}));
    assert_eq!(stats["result"]["stats"]["total"], 200);
}

/// The DSH plugin, run by Node.js as a function body (as a `cordis_define` flow runs it) with a
/// stand-in `harness`, returns `(ctx) => {...}`, which registers every tool in the original's
/// shape (its parameter notation, `output: {schema, render}`); `execute` reaches the real
/// sidecar.
#[test]
fn the_harness_plugin_registers_every_tool_and_calls_the_sidecar() {
    let s = Sidecar::start(&["--token", TOKEN]);
    let out = Command::new(CORAL)
        .args([
            "plugin-js",
            "--url",
            &format!("{}/rpc", s.base),
            "--token",
            TOKEN,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let js = String::from_utf8(out.stdout).unwrap();
    assert!(
        js.starts_with("// Coral Memory by Mr. Code Muggle (@Ne)"),
        "{js}"
    );
    assert!(
        js.contains("// coral-memory (author: @Ne) —— 二次开发请保留此注释"),
        "the original's credit line stays: {js}"
    );
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("coral_plugin.js");
    std::fs::write(&plugin, &js).unwrap();
    let driver = dir.path().join("driver.js");
    std::fs::write(
        &driver,
        r#"
const fs = require("fs");
const registered = [];
globalThis.harness = {
  defineTool: (def) => def,
  registerTool: (ctx, def) => { if (ctx.marker !== 7) throw new Error("ctx not passed"); registered.push(def); },
};
const plugin = new Function("harness", fs.readFileSync(process.argv[2], "utf8"))(globalThis.harness);
if (typeof plugin !== "function") throw new Error("the body returns " + typeof plugin);
plugin({ marker: 7 });
(async () => {
  const tool = (name) => registered.find((t) => t.name === name);
  const inserted = await tool("memory_insert").execute({ content: "插件写入的记忆 plugin memory", importance: 0.7 });
  const found = await tool("memory_search").execute({ query: "插件 记忆" });
  const bad = await tool("memory_insert").execute({ content: "" });
  const rendered = tool("coral_stats").output.render({}, { ok: true });
  const outputSchema = tool("coral_stats").output.schema;
  console.log(JSON.stringify({ names: registered.map((t) => t.name), schema: tool("memory_search").parameters, inserted, found, bad, rendered, outputSchema }));
})().catch((e) => { console.error(e); process.exit(1); });
"#,
    )
    .unwrap();
    let out = Command::new("node")
        .arg(&driver)
        .arg(&plugin)
        .output()
        .expect("node is installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = r["names"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
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
            "{expected} not registered: {names:?}"
        );
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "each tool registered once");
    assert_eq!(r["schema"]["query"]["type"], "string");
    assert_eq!(r["schema"]["query"]["required"], true);
    assert_eq!(r["schema"]["top_k"]["required"], false);
    assert_eq!(r["outputSchema"], json!({"type": "object"}));
    assert_eq!(
        r["rendered"],
        json!([{"type": "text", "text": "{\"ok\":true}"}])
    );
    assert_eq!(r["inserted"]["ok"], true);
    assert_eq!(
        r["found"]["result"]["hits"][0]["content"],
        "插件写入的记忆 plugin memory"
    );
    assert_eq!(r["bad"]["ok"], false);
    assert!(r["bad"]["error"].as_str().unwrap().contains("empty"));
}
