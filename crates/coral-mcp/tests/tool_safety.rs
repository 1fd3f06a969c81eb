//! Tools are untrusted callers: what a model talked into calling `coral_config_set` or
//! `coral_config_reset` can and cannot do.
//!
//! - It cannot change a setting that sends data somewhere new, runs code, moves files or
//!   weakens durability (`llm.*`, `embedding.*`, `paths.*`, `storage.sync`, ...): refused, and
//!   neither the file nor the config in force changes.
//! - It cannot remove more than a small share of the memories with one call: the call answers
//!   with a preview and changes nothing until it is repeated with `confirm: true`.

use coral_mcp::tools::{CallTool, ToolError};
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use coral::{Config, Coral, InsertOptions, tool_may_change};
use serde_json::{Value, json};

fn open(dir: &Path, config: Value) -> Coral {
    let path = dir.join("coral_config.json");
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    Coral::open(&path).unwrap()
}

fn base() -> Value {
    json!({
        "embedding": {"embedder": "hash"},
        "storage": {"sync": "never"},
        "reload": {"check_interval_seconds": 0.0},
    })
}

fn leaf_keys(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v.as_object() {
        Some(m) => {
            for (k, c) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaf_keys(c, &key, out);
            }
        }
        None => out.push(prefix.to_string()),
    }
}

fn file(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("coral_config.json")).unwrap()
}

#[test]
fn tools_change_only_tuning_keys() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), base());
    let mut keys = Vec::new();
    leaf_keys(
        &serde_json::to_value(Config::default()).unwrap(),
        "",
        &mut keys,
    );
    let mut refused = Vec::new();
    for key in &keys {
        if tool_may_change(key) {
            continue;
        }
        let before_file = file(dir.path());
        let before = coral.config_get(None).unwrap();
        let current = coral.config_get(Some(key)).unwrap();
        let value = match current {
            Value::String(_) => json!("http://127.0.0.1:9/v1"),
            Value::Bool(b) => json!(!b),
            Value::Number(_) => json!(1),
            // A tool can only send a scalar; the key is refused before its type is looked at.
            Value::Array(_) => json!("message."),
            other => other,
        };
        let err = coral
            .call_tool(
                "coral_config_set",
                &json!({"key_path": key, "value": value}),
            )
            .expect_err(key);
        let ToolError::InvalidArguments(message) = &err else {
            panic!("{key}: {err:?}");
        };
        assert!(
            message.contains(key.as_str()) && message.contains("cannot be changed by a tool"),
            "{key}: {message}"
        );
        assert_eq!(file(dir.path()), before_file, "{key}: the file changed");
        assert_eq!(
            coral.config_get(None).unwrap(),
            before,
            "{key}: the config changed"
        );
        refused.push(key.clone());
    }
    for must in [
        "llm.base_url",
        "llm.api_key",
        "llm.model",
        "embedding.embedder",
        "embedding.model_path",
        "embedding.ort_library",
        "paths.warm_cache",
        "threads.path",
        "storage.sync",
        "storage.sync_interval_ms",
        "storage.backend",
        "storage.postgres_url",
        "storage.postgres_tenant",
        "storage.postgres_pool_size",
        // The operator's: whose timeline a server serves and what its read tools return.
        "timeline.pin.user_id",
        "timeline.pin.any_namespace",
        "timeline.policy.allowed_kind_prefixes",
        "timeline.policy.forget_over_mcp",
        "privacy.redact_secrets",
        "hooks.capture",
    ] {
        assert!(refused.iter().any(|k| k == must), "{must} is not refused");
    }
    // Tuning keys still work.
    let ok = coral
        .call_tool(
            "coral_config_set",
            &json!({"key_path": "retrieval.top_k", "value": 8}),
        )
        .unwrap();
    assert_eq!(ok["ok"], true);
    assert_eq!(coral.config().retrieval.top_k, 8);
    // A reset by a tool restores only what a tool may change.
    let err = coral
        .call_tool("coral_config_reset", &json!({"key_path": "llm"}))
        .unwrap_err();
    assert!(
        err.to_string().contains("cannot be changed by a tool"),
        "{err}"
    );
    let mut config: Value = serde_json::from_str(&file(dir.path())).unwrap();
    config["storage"]["sync"] = json!("always");
    config["storage"]["warn_ratio"] = json!(0.5);
    std::fs::write(
        dir.path().join("coral_config.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
    let reset = coral
        .call_tool("coral_config_reset", &json!({"key_path": "storage"}))
        .unwrap();
    assert_eq!(reset["ok"], true, "{reset}");
    // As the original: the section asked for, old and new whole.
    assert_eq!(
        reset["changed"]["storage"]["old"]["warn_ratio"], 0.5,
        "{reset}"
    );
    assert_eq!(
        reset["changed"]["storage"]["new"]["warn_ratio"], 0.8,
        "{reset}"
    );
    assert_eq!(
        reset["changed"]["storage"]["new"]["sync"], "always",
        "{reset}"
    );
    assert!(
        reset["kept"]
            .as_array()
            .unwrap()
            .contains(&json!("storage.sync"))
    );
    let after: Value = serde_json::from_str(&file(dir.path())).unwrap();
    assert_eq!(
        after["storage"]["sync"], "always",
        "a tool reset durability"
    );
    assert_eq!(after["storage"]["warn_ratio"], 0.8);
}

#[test]
fn a_tool_cannot_point_the_llm_at_another_address() {
    // The reproduction: a listener on another loopback port waits for the API key and the
    // memories. The tool call is refused, so distillation keeps the configured endpoint.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = base();
    config["llm"] = json!({"base_url": "", "api_key": "sk-secret-key-of-the-user"});
    // Distinct enough not to merge on insert, similar enough to cluster for distillation.
    config["memory"] = json!({
        "capacity_threshold": 5,
        "sim_threshold_hot": 0.99,
        "distill_sim_threshold": 0.5
    });
    let coral = open(dir.path(), config);
    let err = coral
        .call_tool(
            "coral_config_set",
            &json!({"key_path": "llm.base_url", "value": format!("http://{addr}/v1")}),
        )
        .unwrap_err();
    assert!(err.to_string().contains("llm.base_url"), "{err}");
    for i in 0..40 {
        coral
            .insert(
                &format!("near duplicate memory about the deploy plan {i}"),
                0.5,
            )
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    let mut got = Vec::new();
    if let Ok((mut s, _)) = listener.accept() {
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = s.read_to_end(&mut got);
    }
    assert!(
        got.is_empty(),
        "the listener received: {}",
        String::from_utf8_lossy(&got)
    );
    assert_eq!(coral.config().llm.base_url, "");
}

fn fill(coral: &Coral, n: usize) {
    for i in 0..n {
        coral
            .insert_with(
                &format!("memory {i} 记忆 w{:x} q{:x}", i * 7919, i * 104_729),
                InsertOptions {
                    importance: 0.1 + (i % 9) as f64 / 10.0,
                    ..InsertOptions::default()
                },
            )
            .unwrap();
    }
}

#[test]
fn one_tool_call_cannot_wipe_memory() {
    let cases = [
        ("memory.capacity_threshold", json!(0), "evicted"),
        ("storage.max_bytes", json!(1), "disk_quota"),
        ("memory.max_cold_entries", json!(0), "trimmed"),
        ("memory.project_quota", json!(1), "project_quota"),
    ];
    for (key, value, reason) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut config = base();
        config["memory"] = json!({"max_hot_entries": 50, "max_warm_entries": 50});
        let coral = open(dir.path(), config);
        for i in 0..501 {
            coral
                .insert_with(
                    &format!("memory {i} 记忆 w{:x} q{:x}", i * 7919, i * 104_729),
                    InsertOptions {
                        project: Some(format!("p{}", i % 3)),
                        ..InsertOptions::default()
                    },
                )
                .unwrap();
        }
        assert_eq!(coral.stats().total, 501);
        let before_file = file(dir.path());
        let answer = coral
            .call_tool(
                "coral_config_set",
                &json!({"key_path": key, "value": value}),
            )
            .unwrap();
        assert_eq!(answer["ok"], false, "{key}: {answer}");
        assert_eq!(answer["needs_confirmation"], true, "{key}");
        let would = answer["would_remove"].as_u64().unwrap();
        assert!(would > 100, "{key}: would remove only {would}");
        assert!(
            answer["by_reason"][reason].as_u64().unwrap() > 0,
            "{key}: {answer}"
        );
        assert!(answer["by_tier"].is_object(), "{key}: {answer}");
        assert!(
            answer["changes"][0].as_str().unwrap().starts_with(key),
            "{key}: {answer}"
        );
        assert_eq!(coral.stats().total, 501, "{key}: memories were removed");
        assert_eq!(file(dir.path()), before_file, "{key}: the file changed");
        // Confirmed, it happens, and the report says so.
        let done = coral
            .call_tool(
                "coral_config_set",
                &json!({"key_path": key, "value": value, "confirm": true}),
            )
            .unwrap();
        assert_eq!(done["ok"], true, "{key}: {done}");
        let left = coral.stats().total as u64;
        assert!(left < 501 - 100, "{key}: {left} left");
        let report = coral.report().unwrap();
        let logged: usize = report
            .removed
            .iter()
            .filter(|r| r.reason == reason)
            .map(|r| r.count)
            .sum();
        assert!(
            logged as u64 >= 501 - left - 5,
            "{key}: log {:?}",
            report.removed
        );
        if reason != "disk_quota" {
            let gone = report.removed.iter().find(|r| r.reason == reason).unwrap();
            assert!(gone.count > 0);
        }
    }
}

#[test]
fn a_small_change_needs_no_confirmation() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), base());
    fill(&coral, 300);
    // 300 memories: up to 10 may go without a confirmation; capacity 285 + headroom 28
    // removes nothing now, and the accepted limits move on.
    let answer = coral
        .call_tool(
            "coral_config_set",
            &json!({"key_path": "memory.capacity_threshold", "value": 285}),
        )
        .unwrap();
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(coral.config().memory.capacity_threshold, 285);
}
