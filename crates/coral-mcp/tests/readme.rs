//! The README's client set-up: each `coral setup <client>` line run into a fresh file, and the
//! entry it writes (and the by-hand JSON entry) launched: each must start a working MCP server;
//! and the HTTP example's request must succeed.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap()
}

/// Fenced blocks of the given language.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```").unwrap();
        out.push(body[..end].to_string());
        rest = &body[end..];
    }
    out
}

fn fill(s: &str, home: &std::path::Path) -> String {
    s.replace("/path/to/coral-home", home.to_str().unwrap())
        .replace("/path/to/coral", CORAL)
}

/// Launch `command args` with `env`, initialise, list tools; returns the tool names.
fn launch(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    home: &std::path::Path,
) -> Vec<String> {
    let mut child = Command::new(command)
        .args(args)
        .envs(env.iter().cloned())
        .env_remove("CORAL_DATA_DIR")
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "readme", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
    let mut names = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 2 {
            names = v["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect();
        } else {
            assert_eq!(v["result"]["serverInfo"]["name"], "coral-memory");
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    names
}

#[test]
fn the_by_hand_json_entry_starts_the_server() {
    let text = readme();
    let configs: Vec<Value> = blocks(&text, "json")
        .iter()
        .filter(|b| b.contains("mcpServers"))
        .map(|b| serde_json::from_str(b).expect("README JSON snippet parses"))
        .collect();
    assert_eq!(configs.len(), 1, "the by-hand entry");
    for config in configs {
        let home = tempfile::tempdir().unwrap();
        let server = &config["mcpServers"]["coral"];
        let command = fill(server["command"].as_str().unwrap(), home.path());
        let args: Vec<String> = server["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| fill(a.as_str().unwrap(), home.path()))
            .collect();
        let names = launch(&command, &args, &[], home.path());
        assert!(names.contains(&"memory_search".to_string()), "{names:?}");
        // The config landed where the snippet said, and the data next to it.
        assert!(home.path().join("coral_config.json").exists());
        assert!(home.path().join("memory_data/coral_wal.jsonl").exists());
    }
}

/// The README's `coral setup <client>` lines, each run into a fresh file; the entry it writes
/// must start a working server (the DSH one read from its YAML, as DSH does).
#[test]
fn every_setup_line_writes_an_entry_that_starts_the_server() {
    let text = readme();
    let clients: Vec<String> = blocks(&text, "sh")
        .iter()
        .flat_map(|b| b.lines().map(str::to_string).collect::<Vec<_>>())
        .filter_map(|l| {
            l.strip_prefix("target/release/coral setup ")
                .and_then(|rest| rest.split_whitespace().next())
                .map(String::from)
        })
        .collect();
    assert_eq!(
        clients,
        ["claude-code", "claude-desktop", "cursor", "cline", "dsh"],
        "one setup line per client"
    );
    for client in clients {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("coral_config.json");
        let file = home.path().join(if client == "dsh" {
            "dsh/profiles/default/cordis.patch.yml"
        } else {
            "client.json"
        });
        let mut cmd = Command::new(CORAL);
        cmd.arg("--config").arg(&config).args(["setup", &client]);
        if client == "dsh" {
            cmd.env("DSH_HOME", home.path().join("dsh"));
        } else {
            cmd.arg("--config-file").arg(&file);
        }
        if client == "claude-code" {
            cmd.arg("--settings-file")
                .arg(home.path().join("settings.json"));
        }
        let out = cmd.env("HOME", home.path()).output().unwrap();
        assert!(out.status.success(), "{client}: {out:?}");
        let (command, args) = if client == "dsh" {
            let yaml = std::fs::read_to_string(&file).unwrap();
            let field = |name: &str| {
                yaml.lines()
                    .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
                    .unwrap()
                    .to_string()
            };
            assert!(yaml.contains("transport: stdio"));
            let args: Vec<String> =
                serde_json::from_str(&field("args").replace('\'', "\"")).unwrap();
            (field("command").trim_matches('\'').to_string(), args)
        } else {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            let server = &v["mcpServers"]["coral"];
            let args = server["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            (server["command"].as_str().unwrap().to_string(), args)
        };
        let names = launch(&command, &args, &[], home.path());
        assert!(
            names.contains(&"memory_insert".to_string()),
            "{client}: {names:?}"
        );
        assert!(config.exists(), "{client}");
    }
}

#[test]
fn the_http_example_request_succeeds() {
    let text = readme();
    let sh = blocks(&text, "sh")
        .into_iter()
        .find(|b| b.contains("curl"))
        .expect("HTTP snippet");
    let body = sh
        .split("-d '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("curl -d body");
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(home.path().join("coral_config.json"))
        .args(["-q", "http", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: Value = serde_json::from_str(&line).unwrap();
    let url = format!("http://{}/rpc", addr["listening"].as_str().unwrap());
    let reply: Value = ureq::post(&url)
        .set("content-type", "application/json")
        .send_string(body)
        .unwrap()
        .into_json()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(reply["ok"], true, "{reply}");
    assert_eq!(reply["result"]["inserted"], true);
}
