//! Config operations and hot reload against a real config file.

use coral_mcp::tools::CallTool;
use std::path::Path;
use std::time::Duration;

use coral::{Config, Coral, InsertOptions};
use serde_json::{Value, json};

fn open(dir: &Path, extra: Value) -> Coral {
    let mut config = json!({
        "embedding": {"embedder": "hash"},
        "storage": {"sync": "never"},
        "reload": {"check_interval_seconds": 0.0},
    });
    merge(&mut config, extra);
    let path = dir.join("coral_config.json");
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    Coral::open(&path).unwrap()
}

fn merge(base: &mut Value, extra: Value) {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        for (k, v) in e {
            match b.get_mut(&k) {
                Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                _ => {
                    b.insert(k, v);
                }
            }
        }
    }
}

fn edit(dir: &Path, f: impl FnOnce(&mut Value)) {
    let path = dir.join("coral_config.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

fn fill(coral: &Coral, n: usize) {
    for i in 0..n {
        let options = InsertOptions {
            importance: 0.1 + (i % 9) as f64 / 10.0,
            ..InsertOptions::default()
        };
        coral
            .insert_with(
                &format!("memory {i} 记忆 w{:x} q{:x}", i * 7919, i * 104_729),
                options,
            )
            .unwrap();
    }
}

#[test]
fn every_key_round_trips_through_set_get_and_reset() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), json!({}));
    let defaults = serde_json::to_value(Config::default()).unwrap();
    let mut checked = 0;
    for key in coral_keys(&defaults) {
        let current = coral.config_get(Some(&key)).unwrap();
        // The operator (a Rust caller, the CLI) may change everything but the file locations,
        // which `set_paths` moves.
        let protected = ["paths.", "threads."].iter().any(|p| key.starts_with(p));
        let proposed = match &current {
            Value::Bool(b) => json!(!b),
            Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap();
                json!(if f > 0.5 { f * 0.9 } else { (f + 0.1) * 0.5 })
            }
            Value::Number(n) => json!(n.as_u64().unwrap() + 1),
            Value::String(_) if key == "retrieval.mode" => json!("rrf"),
            Value::String(_) if key == "storage.sync" => json!("always"),
            Value::String(_) if key == "timeline.timezone" => json!("Asia/Shanghai"),
            Value::String(_) if key == "timeline.prompt.summary_language" => json!("zh"),
            Value::String(_) if key == "embedding.embedder" => json!("hash"),
            Value::String(_) if key == "embedding.pooling" => json!("cls"),
            Value::String(_) if key == "hooks.capture" => json!("both"),
            // Postgres needs a tenant as well; the default is what a valid edit can keep.
            Value::String(_) if key == "storage.backend" => json!("local"),
            Value::String(_) if key == "storage.postgres_url" => {
                json!("postgres://coral@127.0.0.1:9/coral")
            }
            Value::String(_) => json!("changed-value"),
            Value::Array(_) => json!(["message.", "tool.shell."]),
            other => panic!("{key}: unexpected {other}"),
        };
        let result = coral.config_set(&key, proposed.clone());
        if protected {
            let err = result.unwrap_err().to_string();
            assert!(
                err.contains(&key) && err.contains("cannot be changed"),
                "{err}"
            );
            continue;
        }
        let result = result.unwrap_or_else(|e| panic!("{key} = {proposed}: {e}"));
        assert_eq!(result["key_path"], key.as_str());
        // Embedding settings wait for a restart (and a re-embed): only the file changes now.
        // So do where the memories live (the open store).
        let waits = key.starts_with("embedding.")
            || key == "storage.backend"
            || key.starts_with("storage.postgres_");
        let in_force = !waits;
        if key != "llm.api_key" && in_force {
            assert_eq!(result["new"], proposed, "{key}");
            assert_eq!(coral.config_get(Some(&key)).unwrap(), proposed, "{key}");
        }
        // The file holds the new value too.
        let on_disk: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("coral_config.json")).unwrap(),
        )
        .unwrap();
        let stored = key.split('.').fold(&on_disk, |v, k| &v[k]);
        assert_eq!(stored, &proposed, "{key} on disk");
        let reset = coral.config_reset(Some(&key)).unwrap();
        let default = key.split('.').fold(&defaults, |v, k| &v[k]);
        let expected = if &proposed == default {
            json!([])
        } else {
            json!([key.clone()])
        };
        assert_eq!(reset["changed"], expected, "{key}");
        let back = coral.config_get(Some(&key)).unwrap();
        if key != "llm.api_key" && in_force {
            assert_eq!(&back, default, "{key} after reset");
        }
        let on_disk: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("coral_config.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            key.split('.').fold(&on_disk, |v, k| &v[k]),
            default,
            "{key} on disk after reset"
        );
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} keys checked");
}

fn coral_keys(defaults: &Value) -> Vec<String> {
    fn walk(v: &Value, prefix: &str, out: &mut Vec<String>) {
        match v.as_object() {
            Some(m) => {
                for (k, c) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(c, &key, out);
                }
            }
            None => out.push(prefix.to_string()),
        }
    }
    let mut out = Vec::new();
    walk(defaults, "", &mut out);
    out
}

#[test]
fn wrong_types_and_ranges_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), json!({}));
    let before = std::fs::read(dir.path().join("coral_config.json")).unwrap();
    for (key, value, needle) in [
        ("memory.capacity_threshold", json!("lots"), "whole number"),
        ("memory.capacity_threshold", json!(1.5), "whole number"),
        (
            "memory.capacity_threshold",
            json!(-5),
            "memory.capacity_threshold",
        ),
        ("retrieval.weights.vector", json!(true), "a number"),
        ("storage.warn_ratio", json!(1.2), "storage.warn_ratio"),
        ("retrieval.mode", json!("fancy"), "retrieval.mode"),
        ("retrieval", json!(1), "no config key"),
        ("nope", json!(1), "no config key"),
    ] {
        let err = coral
            .config_set(key, value.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{key} = {value}: {err}");
    }
    assert_eq!(
        std::fs::read(dir.path().join("coral_config.json")).unwrap(),
        before
    );
    assert_eq!(coral.config().memory.capacity_threshold, 10_000);
}

#[test]
fn a_valid_edit_is_seen_by_the_next_call_and_a_broken_one_keeps_the_old_config() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), json!({}));
    fill(&coral, 12);
    assert_eq!(coral.search("memory 记忆", 10).unwrap().len(), 10);
    edit(dir.path(), |v| v["retrieval"]["top_k"] = json!(3));
    let hits = coral
        .search_with("memory 记忆", coral::SearchOptions::default())
        .unwrap();
    assert_eq!(
        hits.len(),
        3,
        "the edit applies to the next search without a restart"
    );

    std::fs::write(
        dir.path().join("coral_config.json"),
        "{ \"retrieval\": { \"top_k\": ",
    )
    .unwrap();
    let hits = coral
        .search_with("memory 记忆", coral::SearchOptions::default())
        .unwrap();
    assert_eq!(hits.len(), 3, "a broken file keeps the previous config");
    let error = coral.stats().config_error.expect("the error is reported");
    assert!(
        error.contains("coral_config.json") && error.contains("previous config"),
        "{error}"
    );

    edit_text(
        dir.path(),
        r#"{"retrieval": {"top_k": "five"}, "embedding": {"embedder": "hash"}}"#,
    );
    coral.stats();
    let error = coral.stats().config_error.expect("bad value reported");
    assert!(error.contains("retrieval.top_k"), "{error}");

    edit_text(
        dir.path(),
        r#"{"retrieval": {"top_k": 4}, "embedding": {"embedder": "hash"}, "paths": {"warm_cache": "elsewhere/w.json"}}"#,
    );
    let stats = coral.stats();
    assert_eq!(stats.config_error, None, "fixed file clears the error");
    assert_eq!(
        coral
            .search_with("memory 记忆", coral::SearchOptions::default())
            .unwrap()
            .len(),
        4
    );
    assert_eq!(stats.restart_needed, vec!["paths".to_string()]);
    assert_eq!(
        coral.config().paths.warm_cache,
        "memory_data/coral_warm.json",
        "paths wait for a restart"
    );
}

fn edit_text(dir: &Path, text: &str) {
    // A different length guarantees the fingerprint changes even within one mtime tick.
    std::fs::write(dir.join("coral_config.json"), text).unwrap();
    std::thread::sleep(Duration::from_millis(5));
}

#[test]
fn lowering_the_capacity_governs_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), json!({"memory": {"capacity_threshold": 100}}));
    fill(&coral, 60);
    assert_eq!(coral.stats().total, 60);
    coral
        .config_set("memory.capacity_threshold", json!(20))
        .unwrap();
    // Governed by the set itself: no insert needed. Headroom for 20 is 10, so 60 > 30 -> 20.
    assert_eq!(coral.stats().total, 20);
    // The evicted items are in the archive, not lost.
    let kept: Vec<String> = coral
        .export()
        .unwrap()
        .into_iter()
        .map(|m| m.item.item_id)
        .collect();
    let all: Vec<String> = (0..60).map(coral_embed_id).collect();
    let evicted: Vec<&String> = all.iter().filter(|id| !kept.contains(id)).collect();
    assert_eq!(evicted.len(), 40);
    for id in evicted {
        let archived = coral.get_archived(id).unwrap().expect("archived");
        assert_eq!(archived.extra["archive_reason"], "evicted");
    }
    // Through a file edit, a change that would remove most of what is left waits for a
    // confirmation: before, any edit of the file (by anything that can write it) evicted at
    // once.
    edit(dir.path(), |v| v["memory"]["capacity_threshold"] = json!(5));
    let stats = coral.stats();
    assert_eq!(stats.total, 20, "a bulk removal by a file edit is held");
    let held = stats.governance.held.expect("the hold is reported");
    assert!(
        held.contains("memory.capacity_threshold 20 → 5") && held.contains("15 of 20"),
        "{held}"
    );
    let report = coral.report().unwrap();
    assert_eq!(
        report.held_change.as_ref().unwrap().preview.would_remove,
        15
    );
    fill(&coral, 1);
    assert_eq!(
        coral.stats().total,
        21,
        "inserts go on under the accepted limits"
    );
    let done = coral.confirm_removals().unwrap();
    assert_eq!((done.before, done.after), (21, 5));
    assert!(coral.stats().governance.held.is_none());
    let removed: usize = coral
        .report()
        .unwrap()
        .removed
        .iter()
        .map(|r| r.count)
        .sum();
    assert_eq!(removed, 40 + 16, "every removal is in the report's log");
}

fn coral_embed_id(i: usize) -> String {
    coral::item_id(&format!(
        "memory {i} 记忆 w{:x} q{:x}",
        i * 7919,
        i * 104_729
    ))
}

#[test]
fn timeline_settings_are_checked_and_reach_the_tools() {
    for (bad, key) in [
        (
            json!({"raw_token_batch_ratio": 1.5}),
            "timeline.raw_token_batch_ratio",
        ),
        (
            json!({"raw_token_trigger": 10}),
            "timeline.raw_token_trigger",
        ),
        (
            json!({"episodic_compact_batch_size": 10}),
            "timeline.episodic_compact_batch_size",
        ),
        (json!({"retrieval_limit": 0}), "timeline.retrieval_limit"),
        (json!({"timezone": "Mars/Olympus"}), "timeline.timezone"),
    ] {
        let text = json!({"timeline": bad}).to_string();
        let err = Config::from_json(&text).unwrap_err();
        assert!(err.contains(key), "{bad}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let coral = open(
        dir.path(),
        json!({"timeline": {"timezone": "Asia/Shanghai", "retrieval_limit": 1}}),
    );
    for (i, text) in ["预算第一版", "预算第二版", "预算第三版"]
        .iter()
        .enumerate()
    {
        coral
            .call_tool(
                "timeline_record_entry",
                &json!({"kind": "message.user", "text": text, "timestamp": 1_775_779_200 + i}),
            )
            .unwrap();
    }
    let r = coral
        .call_tool(
            "retrieve_for_turn",
            &json!({"query": "预算", "include_visible": true}),
        )
        .unwrap();
    assert_eq!(r["timezone"], "Asia/Shanghai");
    assert_eq!(r["hits"].as_array().unwrap().len(), 1);
    assert_eq!(r["hits"][0]["time"], "2026-04-10 08:00");
    // Changed at run time, used by the next call.
    coral
        .config_set("timeline.retrieval_limit", json!(3))
        .unwrap();
    let r = coral
        .call_tool(
            "retrieve_for_turn",
            &json!({"query": "预算", "include_visible": true}),
        )
        .unwrap();
    assert_eq!(r["hits"].as_array().unwrap().len(), 3);
}
