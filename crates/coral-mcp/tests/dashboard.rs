//! The dashboard (docs/dashboard.md): served by `coral http` and `coral ui` with its security
//! headers, and driven in the system's headless Chromium by `tests/browser/dashboard.mjs`
//! (puppeteer-core) against live servers on 127.0.0.1. Missing Chromium or npm packages fail
//! the test with the commands that install them; they are never skipped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// The browser project, with its package.json and lock file.
fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// A `coral http` (or `coral ui`) on a free loopback port, bounded by `timeout` so that it stops
/// by itself even if this test process dies, and killed when dropped.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT/`.
    url: String,
    config: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(command: &str, extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("coral_config.json");
        std::fs::write(
            &config,
            r#"{"embedding": {"embedder": "hash"}, "storage": {"sync": "never"}}"#,
        )
        .unwrap();
        let mut child = Command::new("timeout")
            .args(["--signal=TERM", "300", CORAL, "--config"])
            .arg(&config)
            .args(["-q", command, "--port", "0"])
            .args(extra)
            .env_remove("CORAL_HTTP_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("coreutils `timeout` runs the server");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let listening: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("address line {line:?}: {e}"));
        let addr = listening["listening"].as_str().unwrap().to_string();
        let url = if command == "ui" {
            let mut url = String::new();
            out.read_line(&mut url).unwrap();
            url.trim().to_string()
        } else {
            format!("http://{addr}/")
        };
        // Keep reading stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in out.lines() {});
        Server {
            child,
            url,
            config,
            _dir: dir,
        }
    }

    fn get(&self, path: &str, headers: &[(&str, &str)]) -> (u16, Vec<(String, String)>, String) {
        let mut req = ureq::get(&format!("{}{path}", self.url));
        for (k, v) in headers {
            req = req.set(k, v);
        }
        let response = match req.call() {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("transport error: {e}"),
        };
        let status = response.status();
        let names = response.headers_names();
        let headers = names
            .iter()
            .map(|n| (n.clone(), response.header(n).unwrap_or("").to_string()))
            .collect();
        (status, headers, response.into_string().unwrap())
    }
}

impl Server {
    /// Send a hand-written request (a `Host` header no client library lets one forge).
    fn raw(&self, request: &str) -> String {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://").trim_end_matches('/');
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map_or("", |(_, v)| v.as_str())
}

#[test]
fn coral_ui_prints_the_address_and_the_page_and_assets_are_served_locked_down() {
    let server = Server::start("ui", &[]);
    assert!(
        server.url.starts_with("http://127.0.0.1:") && server.url.ends_with('/'),
        "{}",
        server.url
    );
    let (status, headers, page) = server.get("", &[]);
    assert_eq!(status, 200);
    assert!(header(&headers, "content-type").starts_with("text/html"));
    assert!(page.contains("/assets/app.js") && page.contains("\"needs_token\":false"));
    let csp = header(&headers, "content-security-policy");
    for rule in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(rule), "{csp}");
    }
    assert_eq!(header(&headers, "x-frame-options"), "DENY");
    assert_eq!(header(&headers, "referrer-policy"), "no-referrer");
    let (status, headers, js) = server.get("assets/app.js", &[]);
    assert_eq!(status, 200);
    assert!(header(&headers, "content-type").starts_with("text/javascript"));
    assert!(js.contains("coral-meta"));
    assert_eq!(server.get("assets/nothing.js", &[]).0, 404);
    // The page passes the same Host and Origin checks as the API.
    let answer = server.raw("GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("DNS rebinding"), "{answer}");
    let (status, _, _) = server.get("assets/app.js", &[("Origin", "https://evil.example")]);
    assert_eq!(status, 403);
}

#[test]
fn with_a_token_the_page_loads_but_every_api_call_needs_it() {
    let token = "dashboard-token-0123456789";
    let server = Server::start("http", &["--token", token]);
    let (status, _, page) = server.get("", &[]);
    assert_eq!(
        status, 200,
        "the page holds no data and loads without the token"
    );
    assert!(page.contains("\"needs_token\":true"));
    assert_eq!(server.get("health", &[]).0, 401);
    let auth = format!("Bearer {token}");
    assert_eq!(server.get("health", &[("Authorization", &auth)]).0, 200);
}

fn install_help() -> String {
    format!(
        "install them with:\n  apt-get install -y chromium nodejs npm\n  cd {} && \
         PUPPETEER_SKIP_DOWNLOAD=1 npm ci\n(.ci/run does both)",
        browser_dir().display()
    )
}

fn chromium() -> PathBuf {
    let found = std::env::var_os("CORAL_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .iter()
                .map(PathBuf::from),
        )
        .find(|p| p.exists());
    found.unwrap_or_else(|| {
        panic!(
            "the browser test needs Chromium (/usr/bin/chromium or $CORAL_CHROMIUM); {}",
            install_help()
        )
    })
}

#[test]
fn the_dashboard_works_in_a_real_browser() {
    let chromium = chromium();
    let dir = browser_dir();
    assert!(
        dir.join("node_modules/puppeteer-core/package.json")
            .exists(),
        "the browser test needs its npm packages in {}; {}",
        dir.display(),
        install_help()
    );
    let open = Server::start("http", &[]);
    let token = "browser-token-0123456789abcdef";
    let locked = Server::start("http", &["--token", token]);
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    let out = Command::new("node")
        .arg(dir.join("dashboard.mjs"))
        .current_dir(&dir)
        .env("CORAL_BIN", CORAL)
        .env("CORAL_CONFIG", &open.config)
        .env("CORAL_URL", &open.url)
        .env("CORAL_TOKEN_URL", &locked.url)
        .env("CORAL_TOKEN", token)
        .env("CHROMIUM", &chromium)
        .env("SHOTS", &shots)
        .env("PUPPETEER_SKIP_DOWNLOAD", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run node ({e}); {}", install_help()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "the browser test failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    for view in ["overview", "settings", "memories", "threads", "timeline"] {
        assert!(
            shots.join(format!("{view}.png")).exists(),
            "no screenshot of {view}"
        );
    }
}
