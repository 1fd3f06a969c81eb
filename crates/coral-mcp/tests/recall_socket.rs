//! The recall socket (docs/hooks.md, "The recall socket") with real processes: a server of each
//! kind (`coral mcp`, `coral mcp --http`, `coral http`) answers the prompt hook and `coral
//! recall` on `.coral.sock`, with the same memories in the same order as the store opened by
//! the hook itself; a server killed with SIGKILL leaves a socket file that the hook sees is
//! dead and the next server replaces; two servers on one directory share it (one answers, the
//! other stands by and takes over when the first dies); a peer sending anything but a recall
//! gets a clear error; `hooks.recall_socket: false` leaves the socket off.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// How long a test waits for a server's line before failing: a watchdog against hangs, not a
/// speed assertion.
const NO_LINE: Duration = Duration::from_secs(120);

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new(config: Value) -> Home {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("coral_config.json"), config.to_string()).unwrap();
        Home { dir }
    }

    fn hash() -> Home {
        Home::new(json!({"embedding": {"embedder": "hash"}}))
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("coral_config.json")
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("memory_data/.coral.sock")
    }

    fn coral(&self, args: &[&str]) -> std::process::Output {
        let out = Command::new(CORAL)
            .arg("--config")
            .arg(self.config())
            .args(args)
            .env_remove("CORAL_DATA_DIR")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        out
    }

    /// The memories the tests recall, inserted at one time so recency decides nothing.
    fn fill(&self) {
        for (text, project) in [
            (
                "The user orders an iced latte at the corner coffee shop",
                "",
            ),
            ("The corner coffee shop opens at eight", ""),
            ("Latte art class for the shop staff on Friday", "shop"),
            ("The user likes green tea in the evening", ""),
            ("用户喜欢喝冰镇拿铁咖啡", ""),
            ("Restore the staging database before the release", "ops"),
        ] {
            let mut args = vec!["-q", "insert", text, "--at", "2026-04-01T10:00:00Z"];
            if !project.is_empty() {
                args.extend(["--project", project]);
            }
            self.coral(&args);
        }
    }

    /// `coral hook claude-code UserPromptSubmit -v` for `prompt`: stdout and stderr.
    fn hook(&self, prompt: &str) -> (String, String) {
        let payload = json!({
            "session_id": "s1", "transcript_path": "/nowhere.jsonl", "cwd": "/",
            "hook_event_name": "UserPromptSubmit", "prompt": prompt,
        });
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(self.config())
            .args(["-v", "hook", "claude-code", "UserPromptSubmit"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// `coral recall --json -v` with `extra` arguments: the memories and stderr.
    fn recall(&self, prompt: &str, extra: &[&str]) -> (Vec<Value>, String) {
        let mut args = vec!["--json", "-v", "recall", prompt];
        args.extend(extra);
        let out = self.coral(&args);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            v["memories"].as_array().unwrap().clone(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }
}

/// A server of the data directory, its stderr lines read by a thread.
struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    fn start(home: &Home, kind: &[&str]) -> Server {
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(home.config())
            .args(kind)
            .env_remove("CORAL_DATA_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (send, lines) = mpsc::channel();
        let err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Server {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Wait for a stderr line containing `needle`.
    fn wait_for(&mut self, needle: &str) -> String {
        if let Some(l) = self.seen.iter().find(|l| l.contains(needle)) {
            return l.clone();
        }
        loop {
            match self.lines.recv_timeout(NO_LINE) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {needle:?}; saw {:?}", self.seen),
            }
        }
    }

    /// The lines said so far, without waiting.
    fn said(&mut self) -> &[String] {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        &self.seen
    }

    /// A clean stop: stdin closed for `coral mcp`, SIGTERM for the HTTP servers.
    fn stop(mut self, http: bool) {
        if http {
            let pid = self.child.id().to_string();
            Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        }
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn ids(memories: &[Value]) -> Vec<&str> {
    memories.iter().map(|m| m["id"].as_str().unwrap()).collect()
}

const PROMPT: &str = "Which latte does the user order at the coffee shop?";

/// The socket's and the store's answers for the same prompts, compared: the hook's whole
/// output, and `coral recall`'s memories in order (ids and relevance; scores move with the
/// clock).
fn check_same_answers(home: &Home, kind: &[&str]) {
    let mut server = Server::start(home, kind);
    server.wait_for("recall socket at");
    let mode = std::fs::metadata(home.socket())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let (hook_socket, said) = home.hook(PROMPT);
    assert!(said.contains("through the server"), "{kind:?}: {said}");
    let (socket, said) = home.recall(PROMPT, &[]);
    assert!(said.contains("through the server"), "{said}");
    let (socket_shop, _) = home.recall(PROMPT, &["--project", "shop", "-k", "2"]);
    server.stop(kind.contains(&"--http") || kind[0] == "http");
    assert!(!home.socket().exists(), "a clean stop removes the socket");

    let (hook_direct, said) = home.hook(PROMPT);
    assert!(said.contains("from the store"), "{said}");
    assert_eq!(hook_socket, hook_direct);
    assert!(hook_direct.contains("iced latte"), "{hook_direct}");
    assert!(!hook_direct.contains("green tea"), "{hook_direct}");
    let (direct, said) = home.recall(PROMPT, &[]);
    assert!(said.contains("from the store"), "{said}");
    assert!(direct.len() >= 2, "{direct:?}");
    assert_eq!(ids(&socket), ids(&direct));
    for (s, d) in socket.iter().zip(&direct) {
        assert_eq!(s["relevance"], d["relevance"]);
        assert_eq!(s["content"], d["content"]);
    }
    let (direct_shop, _) = home.recall(PROMPT, &["--project", "shop", "-k", "2"]);
    assert_eq!(ids(&socket_shop), ids(&direct_shop));
    assert_eq!(direct_shop.len(), 2);
}

#[test]
fn every_server_kind_answers_like_the_store() {
    let home = Home::hash();
    home.fill();
    for kind in [
        &["mcp"][..],
        &["mcp", "--http", "--port", "0"],
        &["http", "--port", "0"],
    ] {
        check_same_answers(&home, kind);
    }
}

#[test]
fn with_a_model_the_socket_answers_like_the_store() {
    let Some(dir) = std::env::var("CORAL_TEST_USE_DIR")
        .ok()
        .filter(|d| !d.is_empty())
    else {
        assert_ne!(
            std::env::var("CORAL_REQUIRE_MODELS").as_deref(),
            Ok("1"),
            "CORAL_REQUIRE_MODELS=1 but CORAL_TEST_USE_DIR is not set: run eval \"$(bash \
             scripts/fetch-test-models.sh)\""
        );
        eprintln!("skipped: no USE model (run eval \"$(bash scripts/fetch-test-models.sh)\")");
        return;
    };
    let home = Home::new(json!({"embedding": {"embedder": "model",
        "model_name": "use-multilingual-v3", "dim": 512, "model_path": dir}}));
    home.fill();
    check_same_answers(&home, &["mcp"]);
}

#[test]
fn a_killed_server_leaves_a_socket_that_is_seen_dead_and_replaced() {
    let home = Home::hash();
    home.fill();
    let mut first = Server::start(&home, &["mcp"]);
    first.wait_for("recall socket at");
    first.kill();
    assert!(home.socket().exists(), "SIGKILL leaves the socket file");
    let (out, said) = home.hook(PROMPT);
    assert!(said.contains("nothing listens on"), "{said}");
    assert!(said.contains("from the store"), "{said}");
    assert!(out.contains("iced latte"), "{out}");
    // The next server replaces the dead socket and answers on it.
    let mut second = Server::start(&home, &["mcp"]);
    second.wait_for("recall socket at");
    let (again, said) = home.hook(PROMPT);
    assert!(said.contains("through the server"), "{said}");
    assert_eq!(again, out);
    second.stop(false);
}

#[test]
fn two_servers_share_the_socket_and_the_second_takes_over() {
    let home = Home::hash();
    home.fill();
    let mut owner = Server::start(&home, &["mcp"]);
    owner.wait_for("recall socket at");
    let mut standby = Server::start(&home, &["mcp", "--http", "--port", "0"]);
    standby.wait_for("stands by");
    let (out, said) = home.hook(PROMPT);
    assert!(said.contains("through the server"), "{said}");
    // While the owner lives, the other's retries (every 2 s) leave the socket alone.
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        !standby.said().iter().any(|l| l.contains("took over")),
        "{:?}",
        standby.said()
    );
    let (still, said) = home.hook(PROMPT);
    assert!(said.contains("through the server"), "{said}");
    assert_eq!(still, out);
    // The owner's death lets the other take over; then it answers alone.
    owner.kill();
    standby.wait_for("took over the recall socket");
    let (again, said) = home.hook(PROMPT);
    assert!(said.contains("through the server"), "{said}");
    assert_eq!(again, out);
    standby.stop(true);
    assert!(!home.socket().exists());
}

/// One raw exchange with the socket: what was sent, the answer line as JSON.
fn raw(path: &Path, bytes: &[u8]) -> Value {
    let mut stream = UnixStream::connect(path).unwrap();
    // The server may answer (and close) before reading everything sent.
    let _ = stream.write_all(bytes);
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert_eq!(answer.lines().count(), 1, "{answer:?}");
    serde_json::from_str(&answer).unwrap()
}

#[test]
fn a_peer_that_sends_anything_but_a_recall_gets_a_clear_error() {
    let home = Home::hash();
    home.fill();
    let before = home.coral(&["export"]).stdout;
    let mut server = Server::start(&home, &["mcp"]);
    server.wait_for("recall socket at");
    let socket = home.socket();
    let params = json!({"top_k": 3, "min_relevance": 0.25, "min_similarity": 0.45});
    for (bytes, needle) in [
        (b"not json\n".to_vec(), "not JSON"),
        (b"[1, 2]\n".to_vec(), "array, not an object"),
        (
            format!(
                "{}\n",
                json!({"protocol": 1, "op": "insert", "prompt": "x", "params": params})
            )
            .into_bytes(),
            "unknown op \"insert\"",
        ),
        (
            format!("{}\n", json!({"protocol": 9, "op": "recall"})).into_bytes(),
            "protocol 9",
        ),
        (
            format!(
                "{}\n",
                json!({"protocol": 1, "op": "recall", "prompt": "x",
                       "params": {"top_k": 0, "min_relevance": 0.2, "min_similarity": 0.4}})
            )
            .into_bytes(),
            "top_k 0 must be from 1",
        ),
        (vec![b'x'; 600 * 1024], "over 524288 bytes"),
    ] {
        let answer = raw(&socket, &bytes);
        assert_eq!(answer["ok"], false, "{answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.contains(needle), "{needle}: {error}");
    }
    // A well-formed request is answered, and the server kept serving through the bad ones.
    let good = format!(
        "{}\n",
        json!({"protocol": 1, "op": "recall", "prompt": PROMPT, "params": params})
    );
    let answer = raw(&socket, good.as_bytes());
    assert_eq!(answer["ok"], true, "{answer}");
    let memories = answer["memories"].as_array().unwrap();
    assert!(!memories.is_empty() && memories.len() <= 3, "{answer}");
    assert_eq!(answer["embedder"], "hash");
    // Nothing was counted as an access: the recall reads only.
    server.stop(false);
    assert_eq!(
        String::from_utf8(home.coral(&["export"]).stdout).unwrap(),
        String::from_utf8(before).unwrap()
    );
}

#[test]
fn with_the_socket_switched_off_the_hook_opens_the_store() {
    let home = Home::new(json!({"embedding": {"embedder": "hash"},
                                "hooks": {"recall_socket": false}}));
    home.fill();
    let mut server = Server::start(&home, &["mcp"]);
    server.wait_for("hooks.recall_socket is false");
    assert!(!home.socket().exists());
    let (out, said) = home.hook(PROMPT);
    assert!(said.contains("from the store"), "{said}");
    assert!(out.contains("iced latte"), "{out}");
    server.stop(false);
}

/// A socket file that a program other than Coral answers: whatever it says, the hook answers
/// from the store, exits 0 and notes what went wrong.
#[test]
fn a_socket_that_answers_badly_is_noted_and_the_store_answers() {
    let home = Home::hash();
    home.fill();
    let (expected, _) = home.hook(PROMPT);
    assert!(expected.contains("iced latte"), "{expected}");
    for (reply, needle) in [
        (Some(&b"garbage\n"[..]), "not the recall format"),
        (
            Some(b"{\"ok\": false, \"error\": \"no thanks\"}\n"),
            "refused: no thanks",
        ),
        (Some(b"{\"ok\": true"), "closed without a whole answer"),
        (None, "did not answer within 2000 ms"),
    ] {
        let listener = std::os::unix::net::UnixListener::bind(home.socket()).unwrap();
        let peer = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut line = String::new();
            BufReader::new(&mut stream).read_line(&mut line).unwrap();
            match reply {
                Some(bytes) => stream.write_all(bytes).unwrap(),
                // Never answer: hold the connection past the hook's deadline.
                None => std::thread::sleep(Duration::from_secs(4)),
            }
            line
        });
        let (out, said) = home.hook(PROMPT);
        let asked = peer.join().unwrap();
        assert!(asked.contains("\"op\":\"recall\""), "{asked}");
        assert!(said.contains(needle), "{needle}: {said}");
        assert!(said.contains("the store was opened instead"), "{said}");
        assert_eq!(out, expected);
        std::fs::remove_file(home.socket()).unwrap();
    }
}
