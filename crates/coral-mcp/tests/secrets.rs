//! Secrets redacted on write (docs/configuration.md, "Secrets"), end to end: keys given to the
//! CLI, to the MCP tools (memories and threads) and to the timeline (a captured Claude Code
//! turn) are in no byte of any file Coral writes; the answers show the marker and count it;
//! a tool cannot turn redaction off; with it turned off by the user the same bytes are found,
//! so the scan can see them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

const OPENAI: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234";
const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
const GITHUB: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
const PASSWORD: &str = "hunter2-Zq9";
const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N";

fn home(redact: bool) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("coral_config.json");
    std::fs::write(
        &config,
        json!({"embedding": {"embedder": "hash"}, "privacy": {"redact_secrets": redact},
               "hooks": {"capture": "both"}})
        .to_string(),
    )
    .unwrap();
    (dir, config)
}

fn cli(config: &Path, args: &[&str]) -> Value {
    let out = Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(["-q", "--json"])
        .args(args)
        .env_remove("CORAL_DATA_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Run `calls` (tool name, arguments) against one `coral mcp` session; the results in order.
fn mcp(config: &Path, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(["-q", "mcp"])
        .env_remove("CORAL_DATA_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut read = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "secrets", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    read();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    let mut results = Vec::new();
    for (i, (tool, args)) in calls.iter().enumerate() {
        let request = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                             "params": {"name": tool, "arguments": args}});
        writeln!(stdin, "{request}").unwrap();
        let reply = read();
        results.push(reply["result"]["structuredContent"].clone());
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    results
}

/// Every file under `dir`, with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, bytes));
            }
        }
    }
    out
}

fn holders(dir: &Path, secret: &str) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|(_, bytes)| bytes.windows(secret.len()).any(|w| w == secret.as_bytes()))
        .map(|(p, _)| p)
        .collect()
}

/// Store every secret through every door: the CLI, the memory and thread tools, and a
/// Claude Code turn captured into the timeline and the pool.
fn write_everywhere(dir: &Path, config: &Path) -> (Value, Vec<Value>) {
    let inserted = cli(config, &["insert", &format!("my OpenAI key is {OPENAI}")]);
    let results = mcp(
        config,
        &[
            (
                "memory_insert",
                json!({"content": format!("deploy with {AWS} and password={PASSWORD}")}),
            ),
            (
                "thread_create",
                json!({"title": format!("rotate {GITHUB}"), "summary": format!("old password: {PASSWORD}")}),
            ),
            (
                "memory_search",
                json!({"query": "deploy password", "full": true}),
            ),
            ("thread_status", json!({})),
        ],
    );
    let thread = results[1]["thread"]["thread_id"]
        .as_str()
        .unwrap()
        .to_string();
    let advanced = mcp(
        config,
        &[(
            "thread_advance",
            json!({"thread_id": thread, "note": format!("token {JWT} works")}),
        )],
    );
    let transcript = dir.join("session.jsonl");
    std::fs::write(
        &transcript,
        [
            json!({"type": "user", "uuid": "u-1", "timestamp": "2026-04-10T02:00:00Z",
                   "message": {"role": "user", "content": format!("use Bearer {JWT} for the API")}}),
            json!({"type": "assistant", "timestamp": "2026-04-10T02:00:05Z",
                   "message": {"id": "m1", "role": "assistant",
                               "content": [{"type": "text", "text": format!("Stored {GITHUB} in the vault.")}]}}),
        ]
        .iter()
        .map(|l| l.to_string() + "\n")
        .collect::<String>(),
    )
    .unwrap();
    let stop = json!({"session_id": "s-1", "transcript_path": transcript,
                      "hook_event_name": "SessionEnd", "reason": "other"});
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(["hook", "claude-code", "SessionEnd"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stop.to_string().as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    // The transcript is Claude Code's file, not Coral's.
    std::fs::remove_file(&transcript).unwrap();
    // A checkpoint too, so the compatible files are written as well as the journal.
    cli(config, &["flush"]);
    let mut all = results;
    all.extend(advanced);
    (inserted, all)
}

#[test]
fn no_secret_reaches_any_file_and_the_answers_show_the_marker() {
    let (dir, config) = home(true);
    let (inserted, results) = write_everywhere(dir.path(), &config);
    assert_eq!(inserted["redacted"], 1, "{inserted}");
    let insert = &results[0];
    assert_eq!(insert["redacted"], 2, "{insert}");
    assert!(
        insert["message"].as_str().unwrap().contains("2 secret(s)"),
        "{insert}"
    );
    let search = results[2].to_string();
    assert!(search.contains("[redacted:aws-access-key]"), "{search}");
    assert!(search.contains("password=[redacted:password]"), "{search}");
    let threads = results[3].to_string();
    assert!(
        threads.contains("rotate [redacted:github-token]"),
        "{threads}"
    );
    assert!(
        results[4]
            .to_string()
            .contains("token [redacted:jwt] works")
    );
    let found = cli(&config, &["search", "OpenAI key", "--full"]).to_string();
    assert!(found.contains("[redacted:api-key]"), "{found}");
    // The timeline holds the captured turn, markers in place of the keys.
    let coral = coral::Coral::open(&config).unwrap();
    assert!(coral.timeline_path().exists());
    for secret in [OPENAI, AWS, GITHUB, PASSWORD, JWT] {
        assert_eq!(
            holders(dir.path(), secret),
            Vec::<PathBuf>::new(),
            "{secret}"
        );
    }
}

#[test]
fn with_redaction_turned_off_by_the_user_the_scan_finds_them() {
    let (dir, config) = home(false);
    let (inserted, _) = write_everywhere(dir.path(), &config);
    assert_eq!(inserted["redacted"], 0);
    for secret in [OPENAI, AWS, GITHUB, PASSWORD, JWT] {
        assert!(!holders(dir.path(), secret).is_empty(), "{secret}");
    }
}

#[test]
fn a_tool_cannot_turn_redaction_off() {
    let (_dir, config) = home(true);
    let before = std::fs::read(&config).unwrap();
    let results = mcp(
        &config,
        &[
            (
                "coral_config_set",
                json!({"key_path": "privacy.redact_secrets", "value": false}),
            ),
            ("coral_config_reset", json!({"key_path": "privacy"})),
            ("memory_insert", json!({"content": format!("key {OPENAI}")})),
        ],
    );
    for r in &results[..2] {
        assert_eq!(r["ok"], false, "{r}");
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .contains("cannot be changed by a tool"),
            "{r}"
        );
    }
    assert_eq!(results[2]["redacted"], 1);
    assert_eq!(std::fs::read(&config).unwrap(), before);
}
