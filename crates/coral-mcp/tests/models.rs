//! Embedding models through the `coral` binary: `coral model fetch` against a loopback server
//! that serves the Hugging Face hub's URL layout, `coral model list`, `coral search` and
//! `coral reembed` with MiniLM, and the start-up errors.
//!
//! Tests that run the real model need `eval "$(scripts/fetch-test-models.sh)"`; without it they
//! say so and pass, unless `CORAL_REQUIRE_MODELS=1` (CI), where they fail.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use sha1::Digest as _;

const CORAL: &str = env!("CARGO_BIN_EXE_coral");
const MINILM: &str = "sentence-transformers/all-MiniLM-L6-v2";
const COMMIT: &str = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf";

/// The test model directory and runtime library, or `None` (test skipped) when absent.
fn test_model() -> Option<(PathBuf, PathBuf)> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    match (var("CORAL_TEST_MINILM_DIR"), var("ORT_DYLIB_PATH")) {
        (Some(dir), Some(lib)) if dir.join("model.onnx").is_file() && lib.is_file() => {
            Some((dir, lib))
        }
        _ if std::env::var("CORAL_REQUIRE_MODELS").as_deref() == Ok("1") => panic!(
            "CORAL_REQUIRE_MODELS=1 but CORAL_TEST_MINILM_DIR / ORT_DYLIB_PATH do not point at \
             the test model and runtime: run eval \"$(scripts/fetch-test-models.sh)\""
        ),
        _ => {
            eprintln!("skipped: no test model (run eval \"$(scripts/fetch-test-models.sh)\")");
            None
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One file of the fake hub repository.
#[derive(Clone)]
struct HubFile {
    path: &'static str,
    body: Vec<u8>,
    /// Large files are stored in LFS: the resolve URL redirects to a CDN URL and the etag is
    /// the content's sha256; small ones are served directly with the git blob sha1.
    lfs: bool,
    /// The etag the hub claims (normally the true one).
    etag: String,
}

impl HubFile {
    fn new(path: &'static str, body: Vec<u8>, lfs: bool) -> HubFile {
        let etag = if lfs {
            hex(&sha2::Sha256::digest(&body))
        } else {
            let mut h = sha1::Sha1::new();
            h.update(format!("blob {}\0", body.len()).as_bytes());
            h.update(&body);
            hex(&h.finalize())
        };
        HubFile {
            path,
            body,
            lfs,
            etag,
        }
    }
}

/// What the server saw: method, path, Range header, body bytes sent.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    range: Option<String>,
    sent: usize,
}

/// A loopback HTTP/1.1 server with the hub's URL layout for one repository.
struct FakeHub {
    endpoint: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeHub {
    fn start(repo: &'static str, files: Vec<HubFile>) -> FakeHub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = handle(stream, repo, &files);
                log.lock().unwrap().extend(seen);
            }
        });
        FakeHub { endpoint, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn handle(mut stream: TcpStream, repo: &str, files: &[HubFile]) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let range = headers.get("range").cloned();
    let resolve = format!("/{repo}/resolve/main/");
    let mut extra = vec![("X-Repo-Commit".to_string(), COMMIT.to_string())];
    let (status, body): (&str, &[u8]) = if let Some(name) = path.strip_prefix(&resolve) {
        match files.iter().find(|f| f.path == name) {
            None => ("404 Not Found", b"Entry not found"),
            Some(f) if f.lfs => {
                extra.push(("Location".into(), format!("/cdn/{}", f.etag)));
                extra.push(("X-Linked-Etag".into(), format!("\"{}\"", f.etag)));
                extra.push(("X-Linked-Size".into(), f.body.len().to_string()));
                extra.push(("ETag".into(), "\"pointer-etag\"".into()));
                ("302 Found", b"")
            }
            Some(f) => {
                extra.push(("ETag".into(), format!("\"{}\"", f.etag)));
                ("200 OK", &f.body)
            }
        }
    } else if let Some(f) = path
        .strip_prefix("/cdn/")
        .and_then(|etag| files.iter().find(|f| f.etag == etag))
    {
        ("200 OK", &f.body)
    } else {
        ("404 Not Found", b"")
    };
    let (status, body) = match (&range, status) {
        (Some(r), "200 OK") if path.starts_with("/cdn/") => {
            let from: usize = r
                .trim_start_matches("bytes=")
                .trim_end_matches('-')
                .parse()
                .unwrap_or(0);
            extra.push((
                "Content-Range".into(),
                format!("bytes {from}-{}/{}", body.len() - 1, body.len()),
            ));
            ("206 Partial Content", &body[from.min(body.len())..])
        }
        _ => (status, body),
    };
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in &extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    let sent = if method == "GET" {
        stream.write_all(body).ok()?;
        body.len()
    } else {
        0
    };
    stream.flush().ok()?;
    Some(Seen {
        method,
        path,
        range,
        sent,
    })
}

/// A temporary home: config file, Hugging Face cache, no other model locations.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn hf_home(&self) -> PathBuf {
        self.path().join("hf")
    }

    fn repo(&self, id: &str) -> PathBuf {
        self.hf_home()
            .join("hub")
            .join(format!("models--{}", id.replace('/', "--")))
    }

    fn config(&self, embedding: Value) {
        let config = json!({"embedding": embedding, "storage": {"sync": "never"}});
        std::fs::write(
            self.path().join("coral_config.json"),
            serde_json::to_string_pretty(&config).unwrap(),
        )
        .unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(CORAL);
        cmd.arg("--config")
            .arg(self.path().join("coral_config.json"))
            .args(args)
            .current_dir(self.path())
            .env("HOME", self.path())
            .env("HF_HOME", self.hf_home())
            .env_remove("HF_HUB_CACHE")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("CORAL_MODEL_DIR")
            .env_remove("CORAL_DATA_DIR")
            .env_remove("CORAL_CONFIG_PATH");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn fetch(&self, hub: &FakeHub, name: &str) -> Output {
        self.command(&["model", "fetch", name])
            .env("HF_ENDPOINT", &hub.endpoint)
            .output()
            .unwrap()
    }
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn failed(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A fake model: a 300 kB "ONNX file" (in LFS), a tokenizer and a length setting.
fn fake_files() -> Vec<HubFile> {
    let onnx: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    vec![
        HubFile::new("onnx/model.onnx", onnx, true),
        HubFile::new("tokenizer.json", br#"{"version": "1.0"}"#.to_vec(), false),
        HubFile::new(
            "sentence_bert_config.json",
            br#"{"max_seq_length": 256}"#.to_vec(),
            false,
        ),
    ]
}

#[test]
fn fetch_lays_out_the_hub_cache_and_list_shows_the_model() {
    let home = Home::new();
    home.config(json!({"embedder": "hash"}));
    let files = fake_files();
    let hub = FakeHub::start(MINILM, files.clone());
    let listed = ok(&home.run(&["model", "list"]));
    assert!(
        listed.contains("not installed: coral model fetch sentence-transformers/all-MiniLM-L6-v2")
    );

    let out = ok(&home.fetch(&hub, "all-MiniLM-L6-v2"));
    let repo = home.repo(MINILM);
    let snapshot = repo.join("snapshots").join(COMMIT);
    assert!(out.contains(&snapshot.display().to_string()), "{out}");
    for f in &files {
        let linked = snapshot.join(f.path);
        assert_eq!(std::fs::read(&linked).unwrap(), f.body, "{}", f.path);
        assert!(std::fs::symlink_metadata(&linked).unwrap().is_symlink());
        assert_eq!(
            std::fs::read(repo.join("blobs").join(&f.etag)).unwrap(),
            f.body
        );
    }
    assert!(!snapshot.join("1_Pooling/config.json").exists());
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).unwrap(),
        COMMIT
    );
    // The LFS file came through the redirect.
    let seen = hub.seen();
    assert!(
        seen.iter()
            .any(|s| s.method == "GET" && s.path == format!("/cdn/{}", files[0].etag))
    );

    let listed = ok(&home.run(&["model", "list"]));
    assert!(
        listed.contains(&format!(
            "installed: {} (Hugging Face cache)",
            snapshot.display()
        )),
        "{listed}"
    );
    let listed: Value =
        serde_json::from_slice(&home.run(&["--json", "model", "list"]).stdout).unwrap();
    let minilm = listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == MINILM)
        .unwrap();
    assert_eq!(minilm["configured"], true);
    assert_eq!(minilm["path"], json!(snapshot));

    // Fetching again finds every file in place and downloads nothing.
    let before = hub.seen().len();
    ok(&home.fetch(&hub, MINILM));
    assert!(hub.seen()[before..].iter().all(|s| s.method == "HEAD"));
}

#[test]
fn fetch_resumes_a_partial_download_with_a_range_request() {
    let home = Home::new();
    home.config(json!({"embedder": "hash"}));
    let files = fake_files();
    let onnx = &files[0];
    let hub = FakeHub::start(MINILM, files.clone());
    let blobs = home.repo(MINILM).join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    let half = onnx.body.len() / 2;
    std::fs::write(
        blobs.join(format!("{}.incomplete", onnx.etag)),
        &onnx.body[..half],
    )
    .unwrap();
    ok(&home.fetch(&hub, MINILM));
    assert_eq!(std::fs::read(blobs.join(&onnx.etag)).unwrap(), onnx.body);
    assert!(!blobs.join(format!("{}.incomplete", onnx.etag)).exists());
    let get = hub
        .seen()
        .into_iter()
        .find(|s| s.method == "GET" && s.path.starts_with("/cdn/"))
        .unwrap();
    assert_eq!(
        get.range.as_deref(),
        Some(format!("bytes={half}-").as_str())
    );
    assert_eq!(get.sent, onnx.body.len() - half);
}

#[test]
fn fetch_refuses_a_file_that_does_not_match_the_hubs_etag() {
    let home = Home::new();
    home.config(json!({"embedder": "hash"}));
    let mut files = fake_files();
    // The CDN serves other bytes than the hub vouched for.
    let good = files[0].etag.clone();
    files[0].body[1000] ^= 0xff;
    files[0].etag = good.clone();
    let hub = FakeHub::start(MINILM, files);
    let err = failed(&home.fetch(&hub, MINILM));
    assert!(err.contains("does not match the hub's etag"), "{err}");
    assert!(err.contains("run the command again"), "{err}");
    let blobs = home.repo(MINILM).join("blobs");
    assert!(!blobs.join(&good).exists());
    assert!(!blobs.join(format!("{good}.incomplete")).exists());
}

#[test]
fn fetch_of_a_model_without_an_onnx_export_is_a_clear_error() {
    let home = Home::new();
    home.config(json!({"embedder": "hash"}));
    let hub = FakeHub::start(
        "someone/pytorch-only",
        vec![HubFile::new("tokenizer.json", b"{}".to_vec(), false)],
    );
    let err = failed(&home.fetch(&hub, "someone/pytorch-only"));
    assert!(err.contains("has no onnx/model.onnx"), "{err}");
    assert!(err.contains("embedding.model_path"), "{err}");
    let usage = home.fetch(&hub, "not-a-hub-id");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn onnx_without_a_model_fails_at_start_up_and_names_where_it_looked() {
    let home = Home::new();
    home.config(json!({"embedder": "onnx"}));
    let err = failed(&home.run(&["stats"]));
    let cache = home.repo(MINILM).join("snapshots/*");
    assert!(err.contains(&cache.display().to_string()), "{err}");
    assert!(
        err.contains("coral model fetch sentence-transformers/all-MiniLM-L6-v2"),
        "{err}"
    );
    assert!(
        !home.path().join("memory_data").exists(),
        "nothing was opened"
    );
}

/// Serve the real test model as the hub would, fetch it, and use it with the default config.
#[test]
fn a_fetched_model_is_used_by_auto_and_ranks_a_paraphrase_first() {
    let Some((dir, _)) = test_model() else { return };
    let home = Home::new();
    let files = vec![
        HubFile::new(
            "onnx/model.onnx",
            std::fs::read(dir.join("model.onnx")).unwrap(),
            true,
        ),
        HubFile::new(
            "tokenizer.json",
            std::fs::read(dir.join("tokenizer.json")).unwrap(),
            false,
        ),
    ];
    let hub = FakeHub::start(MINILM, files);
    ok(&home.fetch(&hub, MINILM));
    home.config(json!({"embedder": "auto"}));
    for memory in [
        "The flight to Tokyo leaves early on Monday morning.",
        "When does the library close? The user does not know.",
        "The user does not like the plane trees in the park.",
        "The user is allergic to peanuts.",
    ] {
        ok(&home.run(&["insert", memory]));
    }
    let out = home.run(&["search", "When does the plane to Japan depart?", "-k", "2"]);
    let text = ok(&out);
    // The paraphrase shares no word with the query: only the model's vectors find it. (Which of
    // it and the lone shared word "plane" comes first is a close call in a pool of four under
    // the default hybrid mode, docs/ranking.md.)
    assert!(text.contains("The flight to Tokyo"), "{text}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("hash embedder"));
    let stats: Value = serde_json::from_str(&ok(&home.run(&["--json", "stats"]))).unwrap();
    assert_eq!(stats["stats"]["embedder"], MINILM);
    assert_eq!(stats["stats"]["embedder_note"], Value::Null);
}

/// The config file the original Coral writes when there is none (`"embedder":
/// "sentence-transformers"`), on a machine without the model: Coral starts with hash vectors
/// and one notice, serves MCP, and leaves the file as it was.
#[test]
fn the_originals_default_config_starts_without_a_model() {
    let home = Home::new();
    let golden = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/coral_default_config.json"
    ))
    .unwrap();
    let config = home.path().join("coral_config.json");
    std::fs::write(&config, &golden).unwrap();
    let first = home.run(&["insert", "用户喜欢喝冰镇拿铁咖啡"]);
    ok(&first);
    let said = String::from_utf8_lossy(&first.stderr);
    assert_eq!(
        said.matches("\"sentence-transformers\"").count(),
        1,
        "one notice: {said}"
    );
    assert!(said.contains("said once"), "{said}");
    let out = home.run(&["--json", "stats"]);
    let stats: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(stats["stats"]["embedder"], "hash");
    assert_eq!(stats["stats"]["total"], 1);
    let note = stats["stats"]["embedder_note"].as_str().unwrap_or_default();
    assert!(note.contains("sentence-transformers"), "{note}");
    assert!(
        note.contains("coral model fetch sentence-transformers/all-MiniLM-L6-v2"),
        "{note}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("sentence-transformers"),
        "said once per data directory: {stderr}"
    );
    let detailed = home.run(&["-v", "stats"]);
    let detail = String::from_utf8_lossy(&detailed.stderr);
    assert!(
        detail.contains("coral model fetch"),
        "-v says it in full: {detail}"
    );
    // The MCP server starts on it and answers.
    let mut mcp = home
        .command(&["mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = mcp.stdin.take().unwrap();
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2024-11-05", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
        )
        .unwrap();
    }
    let out = mcp.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(reply["result"]["serverInfo"]["name"], "coral-memory");
    assert_eq!(
        std::fs::read(&config).unwrap(),
        golden,
        "the file is untouched"
    );
}

/// `"sentence-transformers"` uses the model when it is installed, as in the original.
#[test]
fn sentence_transformers_uses_the_model_when_it_is_installed() {
    let Some((dir, _)) = test_model() else { return };
    let home = Home::new();
    let files = vec![
        HubFile::new(
            "onnx/model.onnx",
            std::fs::read(dir.join("model.onnx")).unwrap(),
            true,
        ),
        HubFile::new(
            "tokenizer.json",
            std::fs::read(dir.join("tokenizer.json")).unwrap(),
            false,
        ),
    ];
    let hub = FakeHub::start(MINILM, files);
    ok(&home.fetch(&hub, MINILM));
    home.config(json!({"embedder": "sentence-transformers"}));
    let stats: Value = serde_json::from_str(&ok(&home.run(&["--json", "stats"]))).unwrap();
    assert_eq!(stats["stats"]["embedder"], MINILM);
    assert_eq!(stats["stats"]["embedder_note"], Value::Null);
}

/// An installed but broken model is an error under `"sentence-transformers"` too, where the
/// original fell back to hash vectors (docs/embeddings.md says why): the fetched model is the
/// test model's tokenizer with its `model.onnx` cut short, the runtime is real, and nothing
/// is opened.
#[test]
fn sentence_transformers_with_a_broken_model_is_an_error_not_hash_vectors() {
    let Some((dir, lib)) = test_model() else {
        return;
    };
    let home = Home::new();
    let mut onnx = std::fs::read(dir.join("model.onnx")).unwrap();
    onnx.truncate(onnx.len() / 3);
    let files = vec![
        HubFile::new("onnx/model.onnx", onnx, true),
        HubFile::new(
            "tokenizer.json",
            std::fs::read(dir.join("tokenizer.json")).unwrap(),
            false,
        ),
    ];
    let hub = FakeHub::start(MINILM, files);
    ok(&home.fetch(&hub, MINILM));
    home.config(json!({"embedder": "sentence-transformers", "ort_library": lib}));
    let err = failed(&home.run(&["insert", "用户喜欢喝冰镇拿铁咖啡"]));
    assert!(err.contains(MINILM), "names the model: {err}");
    assert!(err.contains("model.onnx"), "names the file: {err}");
    assert!(!err.contains("hash embedder"), "no fallback: {err}");
    assert!(
        !home.path().join("memory_data").exists(),
        "nothing was opened"
    );
}

#[test]
fn a_hash_directory_switched_to_minilm_needs_reembed_and_says_so() {
    let Some((dir, lib)) = test_model() else {
        return;
    };
    let home = Home::new();
    home.config(json!({"embedder": "hash"}));
    let memories = [
        "The flight to Tokyo leaves early on Monday morning.",
        "When does the library close? The user does not know.",
        "The user does not like the plane trees in the park.",
    ];
    for m in memories {
        ok(&home.run(&["insert", m]));
    }
    // Two hits: the paraphrase (no shared word) is among them only when model vectors score.
    let query = ["search", "When does the plane to Japan depart?", "-k", "2"];
    assert!(!ok(&home.run(&query)).contains("Tokyo"));
    home.config(json!({"embedder": "onnx", "model_path": dir, "ort_library": lib}));
    let stats = ok(&home.run(&["stats"]));
    assert!(
        stats.contains("vectors not scored: the stored vectors were made by hash"),
        "{stats}"
    );
    let out = home.run(&query);
    assert!(String::from_utf8_lossy(&out.stderr).contains("coral reembed"));
    assert!(!ok(&out).contains("Tokyo"), "keywords and time only");
    let done = ok(&home.run(&["reembed"]));
    assert!(
        done.contains("re-embedded 3 memories with sentence-transformers/all-MiniLM-L6-v2"),
        "{done}"
    );
    assert!(ok(&home.run(&query)).contains("Tokyo"));
    assert!(!ok(&home.run(&["stats"])).contains("vectors not scored"));
}

#[test]
fn an_unloadable_runtime_library_is_an_error_not_a_panic() {
    let Some((dir, _)) = test_model() else { return };
    let home = Home::new();
    let lib = home.path().join("libonnxruntime.so.1.20.0");
    std::fs::write(&lib, b"\x7fELF but not really a library").unwrap();
    home.config(json!({"embedder": "onnx", "model_path": dir, "ort_library": lib}));
    let err = failed(&home.run(&["stats"]));
    assert!(err.contains("cannot load"), "{err}");
    assert!(err.contains(&lib.display().to_string()), "{err}");
    assert!(err.contains("pip install onnxruntime"), "{err}");
    // Without any runtime at all, the error names the places it looked.
    home.config(json!({"embedder": "onnx", "model_path": dir}));
    let out = home
        .command(&["stats"])
        .env_remove("ORT_DYLIB_PATH")
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let err = failed(&out);
    assert!(err.contains("ORT_DYLIB_PATH (not set)"), "{err}");
    assert!(err.contains("pip install onnxruntime"), "{err}");
}

#[test]
fn the_progress_bar_stays_off_when_output_is_not_a_terminal() {
    let home = Home::new();
    home.config(json!({"embedder": "hash"}));
    let hub = FakeHub::start(MINILM, fake_files());
    let out = home.fetch(&hub, MINILM);
    ok(&out);
    let mut stderr = String::new();
    out.stderr.as_slice().read_to_string(&mut stderr).unwrap();
    assert!(!stderr.contains("onnx/model.onnx ["), "{stderr}");
}
