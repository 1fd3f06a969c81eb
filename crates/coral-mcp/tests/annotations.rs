//! Tool annotations over a real `coral mcp`: every listed tool has a title and all four hints,
//! and the read-only and destructive sets are the known ones (docs/servers.md, "Tool
//! annotations").

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// The tools a client may keep in a read-only mode.
const READ_ONLY: &[&str] = &[
    "memory_search",
    "memory_list",
    "coral_stats",
    "thread_status",
    "coral_config_get",
    "coral_report",
    "open_memory",
    "retrieve_for_turn",
    "browse_memory",
    "read_timeline",
];

/// The tools a client should ask before running.
const DESTRUCTIVE: &[&str] = &[
    "memory_delete",
    "memory_mark_important",
    "coral_config_set",
    "coral_config_reset",
];

/// `tools/list` of a fresh server, as JSON.
fn listed_tools() -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("coral_config.json");
    std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .args(["-q", "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "annotations", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
    let mut tools = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let reply: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if reply["id"] == 2 {
            tools = reply["result"]["tools"].as_array().cloned();
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    tools.expect("a tools/list answer")
}

fn names_where(tools: &[Value], hint: &str) -> BTreeSet<String> {
    tools
        .iter()
        .filter(|t| t["annotations"][hint] == true)
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn every_listed_tool_has_a_title_and_all_four_hints() {
    let tools = listed_tools();
    assert!(tools.len() >= 20, "{} tools", tools.len());
    for t in &tools {
        let name = &t["name"];
        let a = &t["annotations"];
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(a[hint].is_boolean(), "{name}: {hint} missing in {a}");
        }
        let title = t["title"].as_str().unwrap_or_default();
        assert_eq!(a["title"], t["title"], "{name}");
        // Bilingual, like the descriptions.
        assert!(
            !title.is_ascii() && title.contains(" / "),
            "{name}: {title:?}"
        );
        // A read-only tool is never destructive; no tool of Coral's reaches the open world
        // over MCP (timeline_compact, which calls the LLM, is HTTP-only).
        if a["readOnlyHint"] == true {
            assert_eq!(a["destructiveHint"], false, "{name}");
        }
        assert_eq!(a["openWorldHint"], false, "{name}");
    }
}

#[test]
fn the_read_only_and_destructive_sets_are_the_known_ones() {
    let tools = listed_tools();
    assert_eq!(names_where(&tools, "readOnlyHint"), set(READ_ONLY));
    assert_eq!(names_where(&tools, "destructiveHint"), set(DESTRUCTIVE));
    // Deleting twice, or setting the same value twice, changes nothing more.
    let idempotent = names_where(&tools, "idempotentHint");
    for name in DESTRUCTIVE {
        assert!(idempotent.contains(*name), "{name}");
    }
    // Creating a thread twice makes two threads.
    assert!(!idempotent.contains("thread_create"));
}
