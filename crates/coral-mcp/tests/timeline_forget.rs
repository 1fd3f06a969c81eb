//! Forgetting through the interfaces (docs/timeline.md, "Forgetting"): the host's
//! `timeline_forget` and the CLI remove a body from the files (scanned byte for byte), the
//! model's MCP tools offer it only when the operator allows it, and `memory_delete` of the
//! memory pool checkpoints so the deleted text leaves the journal too, and says so.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use coral::Coral;
use coral_mcp::tools::CallTool;
use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");
// Private text, not shaped like a key (a key would be redacted before it is stored).
const SECRET: &str = "diary-lisbon-4729qz-private";

fn config_in(dir: &Path) -> PathBuf {
    let config = dir.join("coral_config.json");
    std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
    config
}

/// Whether `needle` is in any file under `dir`.
fn anywhere(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .unwrap_or_default()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
            {
                found.push(p);
            }
        }
    }
    found
}

fn with(extra: Value) -> Value {
    let mut v = json!({"user_id": "dana", "conversation_id": "c1"});
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

/// One turn in which the user pasted the secret and a tool echoed it.
fn record(coral: &Coral) -> String {
    let turn = coral
        .call_tool(
            "timeline_begin_turn",
            &with(json!({"text": "帮我检查这个令牌", "source_id": "ask-1"})),
        )
        .unwrap()["turn_id"]
        .as_str()
        .unwrap()
        .to_string();
    coral
        .call_tool(
            "timeline_record_tool",
            &with(
                json!({"turn_id": turn, "tool_name": "shell", "call_id": "c1",
                         "result": format!("note={SECRET}\n").repeat(30),
                         "result_source_id": "echo-1"}),
            ),
        )
        .unwrap();
    coral
        .call_tool(
            "timeline_complete_turn",
            &with(json!({"turn_id": turn, "final_text": "令牌有效。"})),
        )
        .unwrap();
    turn
}

#[test]
fn the_host_api_forgets_an_entry_and_the_file_no_longer_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let coral = Coral::open(config_in(dir.path())).unwrap();
    record(&coral);
    assert!(
        !anywhere(dir.path(), SECRET).is_empty(),
        "the scan sees it before"
    );
    let refused = coral
        .call_tool(
            "timeline_forget",
            &with(json!({"entry_id": "echo-1", "turn_id": "t"})),
        )
        .unwrap_err()
        .to_string();
    assert!(refused.contains("give one"), "{refused}");
    let done = coral
        .call_tool(
            "timeline_forget",
            &with(json!({"entry_id": "echo-1", "reason": "pasted_secret"})),
        )
        .unwrap();
    assert_eq!(done["entries_forgotten"], 1, "{done}");
    assert_eq!(done["cards_removed"], 1, "{done}");
    assert_eq!(done["physically_removed"], true, "{done}");
    assert!(
        anywhere(dir.path(), SECRET).is_empty(),
        "still in {:?}",
        anywhere(dir.path(), SECRET)
    );
    // The turn's other entries are readable; the forgotten one shows its tombstone.
    let ask = coral
        .call_tool(
            "open_memory",
            &with(json!({"memory_id": "ask-1", "view": "content"})),
        )
        .unwrap();
    assert_eq!(ask["memory"]["content"], "帮我检查这个令牌");
    let echo = coral
        .call_tool(
            "open_memory",
            &with(json!({"memory_id": "echo-1", "view": "content"})),
        )
        .unwrap();
    assert_eq!(echo["memory"]["forgotten"], true);
    assert_eq!(echo["memory"]["content"], coral::timeline::FORGOTTEN_TEXT);
    let records = coral
        .call_tool("timeline_forgotten", &json!({"user_id": "dana"}))
        .unwrap();
    assert_eq!(records["records"][0]["selector"]["source_id"], "echo-1");
    assert_eq!(records["records"][0]["reason"], "pasted_secret");
    let other = coral
        .call_tool("timeline_forgotten", &json!({"user_id": "eve"}))
        .unwrap();
    assert_eq!(other["records"], json!([]));
}

/// `coral mcp` with `flags`: the tool names it lists and its answer to `call`.
fn mcp(config: &Path, flags: &[&str], call: (&str, Value)) -> (Vec<String>, Value) {
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(["-q", "mcp"])
        .args(flags)
        .env_remove("CORAL_USER_ID")
        .env_remove("CORAL_ANY_NAMESPACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let input = format!(
        "{}\n{}\n{}\n{}\n",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "forget-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": call.0, "arguments": call.1}}),
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let replies: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let list = replies.iter().find(|r| r["id"] == 1).unwrap();
    let names = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    (
        names,
        replies.iter().find(|r| r["id"] == 2).unwrap().clone(),
    )
}

#[test]
fn models_forget_over_mcp_only_when_the_operator_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let coral = Coral::open(&config).unwrap();
    record(&coral);
    drop(coral);
    let call = (
        "timeline_forget",
        json!({"entry_id": "echo-1", "conversation_id": "c1"}),
    );
    let (names, reply) = mcp(&config, &["--user", "dana"], call.clone());
    assert!(!names.iter().any(|n| n == "timeline_forget"), "{names:?}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool")),
        "{reply}"
    );
    assert!(!anywhere(dir.path(), SECRET).is_empty());
    // Allowed, and still confined to the pinned user.
    let (names, reply) = mcp(&config, &["--user", "eve", "--allow-forget"], call.clone());
    assert!(names.iter().any(|n| n == "timeline_forget"), "{names:?}");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("not_found")),
        "{reply}"
    );
    let (_, reply) = mcp(&config, &["--user", "dana", "--allow-forget"], call);
    assert_eq!(
        reply["result"]["structuredContent"]["physically_removed"], true,
        "{reply}"
    );
    assert!(anywhere(dir.path(), SECRET).is_empty());
}

#[test]
fn the_cli_forgets_a_turn_and_lists_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let coral = Coral::open(&config).unwrap();
    let turn = record(&coral);
    drop(coral);
    let run = |args: &[&str]| {
        let out = Command::new(CORAL)
            .arg("--config")
            .arg(&config)
            .args(["-q", "timeline"])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) = run(&["forget", "--user", "dana"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("give what to forget"), "{err}");
    let (code, out, err) = run(&[
        "forget",
        "--turn",
        &turn,
        "--user",
        "dana",
        "--conversation",
        "c1",
        "--reason",
        "privacy_request",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let done: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(done["units_removed"], 1, "{done}");
    assert_eq!(done["physically_removed"], true, "{done}");
    assert!(anywhere(dir.path(), SECRET).is_empty());
    let (code, out, _) = run(&["forgotten", "--user", "dana"]);
    assert_eq!(code, Some(0));
    let records: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(records["records"][0]["target"], "turn");
    assert_eq!(records["records"][0]["selector"]["turn_id"], turn.as_str());
}

#[test]
fn memory_delete_removes_the_text_from_the_journal_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let coral = Coral::open(config_in(dir.path())).unwrap();
    let inserted = coral
        .call_tool(
            "memory_insert",
            &json!({"content": format!("the deploy token is {SECRET}")}),
        )
        .unwrap();
    let id = inserted["item_id"].as_str().unwrap().to_string();
    coral.flush().unwrap();
    // A second memory deleted without a checkpoint stays in the journal: the scan sees it.
    let other = coral
        .insert("another private note zq9-journal-only", 0.1)
        .unwrap();
    coral.delete(other.id()).unwrap();
    assert!(!anywhere(dir.path(), "zq9-journal-only").is_empty());
    let done = coral
        .call_tool("memory_delete", &json!({"item_id": id}))
        .unwrap();
    assert_eq!(done["ok"], true);
    assert_eq!(done["physically_removed"], true, "{done}");
    assert!(done["removal"].as_str().unwrap().contains("checkpointed"));
    assert!(
        anywhere(dir.path(), SECRET).is_empty(),
        "{:?}",
        anywhere(dir.path(), SECRET)
    );
    assert!(anywhere(dir.path(), "zq9-journal-only").is_empty());
}
