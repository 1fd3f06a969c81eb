//! Project scope from the workspace (docs/servers.md, "Projects"), with real processes: `coral
//! mcp --project auto` tags a client's inserts with the project of its MCP roots (asked after
//! initialise and again on `roots/list_changed`, calls made meanwhile waiting for the answer),
//! else with the git root of the directory it was launched in; `--project NAME` and a call's
//! own `project` win; `memory.project` is the same as the flag and `--project ""` switches it
//! off; and the hooks derive the same name from the payload's `cwd`, tagging captures with it
//! and preferring it in recall. Expected names are computed here from their definition
//! (base name, a dash, 8 hex digits of the SHA-256 of the canonical path).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// A watchdog against hangs, not a speed assertion.
const NO_ANSWER: Duration = Duration::from_secs(60);

/// The project name of `dir` by its definition.
fn expected(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let dir = std::fs::canonicalize(dir).unwrap();
    let digest = Sha256::digest(dir.as_os_str().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let base = dir.file_name().unwrap().to_string_lossy().replace(' ', "-");
    format!("{base}-{}", &hex[..8])
}

fn file_uri(dir: &Path) -> String {
    let path = std::fs::canonicalize(dir).unwrap();
    let mut uri = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// A real git work tree with a subdirectory.
fn git_repo(parent: &Path, name: &str) -> PathBuf {
    let repo = parent.join(name);
    std::fs::create_dir_all(repo.join("src/menu")).unwrap();
    let out = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .output()
        .expect("git is needed for the git-root tests");
    assert!(out.status.success(), "{out:?}");
    repo
}

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new(config: Value) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let mut base = json!({"embedding": {"embedder": "hash"}});
        if let (Some(b), Value::Object(extra)) = (base.as_object_mut(), config) {
            b.extend(extra);
        }
        std::fs::write(dir.path().join("coral_config.json"), base.to_string()).unwrap();
        Home { dir }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("coral_config.json")
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

    /// Every memory's content and project.
    fn projects(&self) -> Vec<(String, Option<String>)> {
        let out = self.coral(&["export"]);
        let mut all: Vec<(String, Option<String>)> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let m: Value = serde_json::from_str(l).unwrap();
                (
                    m["content"].as_str().unwrap().to_string(),
                    m["project"].as_str().map(String::from),
                )
            })
            .collect();
        all.sort();
        all
    }

    fn project_of(&self, content: &str) -> Option<String> {
        self.projects()
            .into_iter()
            .find(|(c, _)| c == content)
            .unwrap_or_else(|| panic!("no memory {content:?}: {:?}", self.projects()))
            .1
    }
}

/// `coral mcp` over a pipe, spoken to with raw JSON-RPC: a client that may declare roots.
struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    next_id: u64,
}

impl Client {
    fn start(home: &Home, cwd: &Path, args: &[&str]) -> Client {
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(home.config())
            .arg("mcp")
            .args(args)
            .current_dir(cwd)
            .env_remove("CORAL_DATA_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let (send, lines) = mpsc::channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line).unwrap();
                if send.send(v).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        self.lines
            .recv_timeout(NO_ANSWER)
            .expect("the server answers within the watchdog")
    }

    /// `initialize` (with the roots capability when `roots`) and `initialized`.
    fn initialize(&mut self, roots: bool) {
        let capabilities = if roots {
            json!({"roots": {"listChanged": true}})
        } else {
            json!({})
        };
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities,
            "clientInfo": {"name": "coral-test", "version": "1"}}}),
        );
        let reply = self.read();
        assert!(reply.get("result").is_some(), "{reply}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Send a tool call; its id.
    fn send_call(&mut self, tool: &str, args: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": tool, "arguments": args}}));
        id
    }

    /// Wait for the server's `roots/list` request and answer it with `dirs`.
    fn answer_roots(&mut self, dirs: &[&Path]) {
        let request = self.read();
        assert_eq!(request["method"], "roots/list", "{request}");
        let roots: Vec<Value> = dirs
            .iter()
            .map(|d| json!({"uri": file_uri(d), "name": "workspace"}))
            .collect();
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": roots}}));
    }

    /// The result of call `id`.
    fn result(&mut self, id: u64) -> Value {
        let reply = self.read();
        assert_eq!(reply["id"], id, "{reply}");
        assert_ne!(reply["result"]["isError"], true, "{reply}");
        reply["result"]["structuredContent"].clone()
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let id = self.send_call(tool, args);
        self.result(id)
    }

    fn finish(mut self) {
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success());
    }
}

#[test]
fn a_client_with_roots_gets_its_memories_tagged_with_its_workspace() {
    let home = Home::new(json!({}));
    let places = tempfile::tempdir().unwrap();
    let launch = places.path().join("launch");
    std::fs::create_dir(&launch).unwrap();
    let shop = git_repo(places.path(), "shop");
    let cafe = places.path().join("café app");
    std::fs::create_dir(&cafe).unwrap();

    let mut client = Client::start(&home, &launch, &["--project", "auto"]);
    client.initialize(true);
    // A call sent before the roots are answered waits for them.
    let early = client.send_call(
        "memory_insert",
        json!({"content": "The menu lists iced latte first"}),
    );
    client.answer_roots(&[&shop.join("src"), &cafe]);
    assert_eq!(client.result(early)["inserted"], true);
    let found = client.call("memory_search", json!({"query": "iced latte menu"}));
    assert_eq!(found["hits"][0]["project"], expected(&shop), "{found}");
    // The client's workspace changes: it says so, and is asked again.
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    client.answer_roots(&[&cafe]);
    client.call(
        "memory_insert",
        json!({"content": "Croissants come from the bakery"}),
    );
    // A call's own project wins.
    client.call(
        "memory_insert",
        json!({"content": "Translate the manual formally", "project": "docs"}),
    );
    client.finish();

    assert_eq!(
        home.project_of("The menu lists iced latte first"),
        Some(expected(&shop)),
        "the first file root's git root"
    );
    let cafe_name = expected(&cafe);
    assert!(cafe_name.starts_with("café-app-"), "{cafe_name}");
    assert_eq!(
        home.project_of("Croissants come from the bakery"),
        Some(cafe_name)
    );
    assert_eq!(
        home.project_of("Translate the manual formally").as_deref(),
        Some("docs")
    );
}

/// A call written right behind `notifications/roots/list_changed` (in the same write, as a
/// client that changes workspace and inserts at once does) is tagged with the new roots, every
/// time: rmcp runs each message in its own task, so the server must note the change in message
/// order, not when the notification's task happens to run.
#[test]
fn a_call_right_after_roots_list_changed_gets_the_new_roots() {
    const ROUNDS: usize = 40;
    let home = Home::new(json!({}));
    let places = tempfile::tempdir().unwrap();
    let launch = places.path().join("launch");
    std::fs::create_dir(&launch).unwrap();
    let shop = git_repo(places.path(), "shop");
    let cafe = places.path().join("cafe");
    std::fs::create_dir(&cafe).unwrap();

    let mut client = Client::start(&home, &launch, &["--project", "auto"]);
    client.initialize(true);
    client.answer_roots(&[&shop]);
    let mut expected_projects = Vec::new();
    for round in 0..ROUNDS {
        let dir = if round % 2 == 0 { &cafe } else { &shop };
        let id = client.next_id;
        client.next_id += 1;
        // Words of their own, so that no two rounds' memories merge as near-duplicates.
        let digest: String = Sha256::digest(format!("round {round}").as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let words: Vec<&str> = (0..6).map(|i| &digest[i * 8..i * 8 + 8]).collect();
        let content = format!("Workspace switch {}", words.join(" "));
        let notice = json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"});
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "memory_insert", "arguments": {"content": content}}});
        write!(client.stdin, "{notice}\n{call}\n").unwrap();
        client.stdin.flush().unwrap();
        // The roots request and the call's answer, in whichever order they come.
        let mut answered = false;
        let mut asked = false;
        while !(answered && asked) {
            let message = client.read();
            if message["method"] == "roots/list" {
                let roots = json!([{"uri": file_uri(dir), "name": "workspace"}]);
                client.send(json!({"jsonrpc": "2.0", "id": message["id"],
                                   "result": {"roots": roots}}));
                asked = true;
            } else {
                assert_eq!(message["id"], id, "{message}");
                assert_eq!(
                    message["result"]["structuredContent"]["inserted"], true,
                    "{message}"
                );
                answered = true;
            }
        }
        expected_projects.push((content, expected(dir)));
    }
    client.finish();
    let stored = home.projects();
    assert_eq!(stored.len(), ROUNDS, "{stored:?}");
    let wrong: Vec<_> = expected_projects
        .iter()
        .filter(|&(content, project)| {
            !stored
                .iter()
                .any(|(c, p)| c == content && p.as_ref() == Some(project))
        })
        .map(|(content, _)| content.as_str())
        .collect();
    assert!(wrong.is_empty(), "tagged with the old roots: {wrong:?}");
}

#[test]
fn without_roots_the_launch_directory_names_the_project() {
    let home = Home::new(json!({}));
    let places = tempfile::tempdir().unwrap();
    let repo = git_repo(places.path(), "app");
    let plain = places.path().join("other").join("app");
    std::fs::create_dir_all(&plain).unwrap();

    // In a git work tree, its root; the client declares no roots.
    let mut client = Client::start(&home, &repo.join("src/menu"), &["--project", "auto"]);
    client.initialize(false);
    client.call(
        "memory_insert",
        json!({"content": "Deploys go out on Tuesday"}),
    );
    client.finish();
    // Elsewhere, the directory itself: the two `app` directories get different names.
    let mut client = Client::start(&home, &plain, &["--project", "auto"]);
    client.initialize(false);
    client.call(
        "memory_insert",
        json!({"content": "Backups run at midnight"}),
    );
    client.finish();
    let (a, b) = (expected(&repo), expected(&plain));
    assert!(a.starts_with("app-") && b.starts_with("app-"));
    assert_ne!(a, b);
    assert_eq!(home.project_of("Deploys go out on Tuesday"), Some(a));
    assert_eq!(home.project_of("Backups run at midnight"), Some(b));
}

#[test]
fn a_named_project_overrides_roots_and_the_config_key_is_the_flag() {
    let places = tempfile::tempdir().unwrap();
    let repo = git_repo(places.path(), "shop");
    // --project NAME: the client's roots are not even asked for.
    let home = Home::new(json!({"memory": {"project": "auto"}}));
    let mut client = Client::start(&home, &repo, &["--project", "fixed"]);
    client.initialize(true);
    client.call("memory_insert", json!({"content": "Named wins over roots"}));
    client.finish();
    assert_eq!(
        home.project_of("Named wins over roots").as_deref(),
        Some("fixed")
    );
    // memory.project = "auto" without the flag: the launch directory's git root.
    let mut client = Client::start(&home, &repo.join("src"), &[]);
    client.initialize(false);
    client.call(
        "memory_insert",
        json!({"content": "The config key decides"}),
    );
    client.finish();
    assert_eq!(
        home.project_of("The config key decides"),
        Some(expected(&repo))
    );
    // --project "" switches it off.
    let mut client = Client::start(&home, &repo, &["--project", ""]);
    client.initialize(false);
    client.call("memory_insert", json!({"content": "Shared by everyone"}));
    client.finish();
    assert_eq!(home.project_of("Shared by everyone"), None);
    // The HTTP sidecar takes --project too.
    let mut sidecar = Command::new(CORAL)
        .arg("--config")
        .arg(home.config())
        .args(["-q", "http", "--port", "0", "--project", "sidecar"])
        .env_remove("CORAL_DATA_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(sidecar.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: Value = serde_json::from_str(&line).unwrap();
    let url = format!("http://{}/rpc", addr["listening"].as_str().unwrap());
    let reply: Value = ureq::post(&url)
        .set("content-type", "application/json")
        .send_string(
            &json!({"tool": "memory_insert", "args": {"content": "Sent by the sidecar"}})
                .to_string(),
        )
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(reply["ok"], true, "{reply}");
    let _ = Command::new("kill")
        .args(["-TERM", &sidecar.id().to_string()])
        .status();
    assert!(sidecar.wait().unwrap().success());
    assert_eq!(
        home.project_of("Sent by the sidecar").as_deref(),
        Some("sidecar")
    );
    // A bad name is refused before anything is served.
    let out = Command::new(CORAL)
        .arg("--config")
        .arg(home.config())
        .args(["mcp", "--project", " padded"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--project") && err.contains("\" padded\""),
        "{err}"
    );
}

fn hook(home: &Home, event: &str, payload: Value) -> (Value, String) {
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(home.config())
        .args(["-v", "hook", "claude-code", event])
        .env_remove("CORAL_DATA_DIR")
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
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn hooks_take_the_project_from_the_payloads_cwd() {
    let places = tempfile::tempdir().unwrap();
    let shop = git_repo(places.path(), "shop");
    let bakery = git_repo(places.path(), "bakery");
    let home = Home::new(
        json!({"memory": {"project": "auto", "sim_threshold_hot": 1.0},
                                "hooks": {"capture": "memory", "recall_top_k": 1}}),
    );
    // Two memories equally relevant to the prompt, one per project, made at the same time.
    for (text, dir) in [
        ("Order the latte beans from the supplier alpha", &shop),
        ("Order the latte beans from the supplier omega", &bakery),
    ] {
        home.coral(&[
            "-q",
            "insert",
            text,
            "--project",
            &expected(dir),
            "--at",
            "2026-04-01T10:00:00Z",
        ]);
    }
    let prompt = |cwd: &Path| {
        json!({"session_id": "s1", "transcript_path": "/nowhere.jsonl",
               "cwd": cwd.join("src/menu"), "hook_event_name": "UserPromptSubmit",
               "prompt": "where do we order the latte beans from?"})
    };
    // Each workspace's own memory is preferred (the other one is as relevant).
    for (dir, own) in [(&shop, "alpha"), (&bakery, "omega")] {
        let (out, said) = hook(&home, "UserPromptSubmit", prompt(dir));
        let context = out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap();
        assert!(context.contains(own), "{own}: {context} {said}");
        assert_eq!(context.lines().count(), 2, "{context}");
    }
    // A capture is tagged with the workspace.
    let transcript = places.path().join("t.jsonl");
    std::fs::write(
        &transcript,
        concat!(
            r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"Which beans for the bakery?"}}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"The omega beans."}]}}"#,
            "\n"
        ),
    )
    .unwrap();
    let (_, said) = hook(
        &home,
        "Stop",
        json!({"session_id": "s1", "transcript_path": transcript, "cwd": bakery,
               "hook_event_name": "Stop", "stop_hook_active": false}),
    );
    assert!(said.contains("1 memorie(s)"), "{said}");
    assert_eq!(
        home.project_of("User: Which beans for the bakery?\nAssistant: The omega beans."),
        Some(expected(&bakery))
    );
    // The command line's --project wins over the config.
    let out = home.coral(&[
        "--json",
        "recall",
        "--project",
        &expected(&shop),
        "-k",
        "1",
        "where do we order the latte beans from?",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["context"].as_str().unwrap().contains("alpha"), "{v}");
}
