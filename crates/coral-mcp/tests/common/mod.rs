//! Shared by the MCP and HTTP tests: one table of tool calls and what each must answer, so both
//! transports are held to the same behaviour.

#![allow(dead_code)]

use serde_json::{Value, json};

/// The id of the first memory the cases insert (MD5 of its content, first 16 hex chars).
pub const COFFEE_ID: &str = "3fc954c05432b266";

/// A tool call and the expected outcome: `Ok(check)` must succeed and satisfy `check`;
/// `Err(needle)` must fail with a message containing `needle`.
pub struct Case {
    pub tool: &'static str,
    pub args: Value,
    pub expect: Result<fn(&Value) -> bool, &'static str>,
}

fn case(tool: &'static str, args: Value, expect: Result<fn(&Value) -> bool, &'static str>) -> Case {
    Case { tool, args, expect }
}

/// Every tool: a success and its bad-argument cases, in an order where the successes build on
/// each other (insert before search before delete).
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "memory_insert",
            json!({"content": "用户喜欢喝冰镇拿铁咖啡", "importance": 0.8}),
            Ok(|r| r["inserted"] == true && r["item_id"] == COFFEE_ID && r["persisted"] == true),
        ),
        case(
            "memory_insert",
            json!({"content": "Translate product manuals in a formal register", "project": "docs"}),
            Ok(|r| r["inserted"] == true),
        ),
        case(
            "memory_insert",
            json!({"content": "用户喜欢喝冰镇拿铁咖啡！"}),
            Ok(|r| {
                r["inserted"] == false && r["item_id"].is_null() && r["merged_into"] == COFFEE_ID
            }),
        ),
        case(
            "memory_insert",
            json!({}),
            Err("missing required argument \"content\""),
        ),
        case(
            "memory_insert",
            json!({"content": 5}),
            Err("must be a string"),
        ),
        case(
            "memory_insert",
            json!({"content": "   "}),
            Err("content is empty"),
        ),
        case(
            "memory_insert",
            json!({"content": "x", "importance": 1.5}),
            Err("from 0 to 1"),
        ),
        case(
            "memory_insert",
            json!({"content": "x", "importance": -0.1}),
            Err("from 0 to 1"),
        ),
        case(
            "memory_insert",
            json!({"content": "x", "importance": "high"}),
            Err("must be a number"),
        ),
        case(
            "memory_insert",
            json!({"content": "x", "bogus": 1}),
            Err("unknown argument \"bogus\""),
        ),
        case(
            "memory_search",
            json!({"query": "拿铁 咖啡"}),
            Ok(|r| {
                r["count"].as_u64() >= Some(1)
                    && r["hits"][0]["id"] == COFFEE_ID
                    && r["hits"][0]["scores"]["jaccard"].as_f64() > Some(0.0)
                    && r["hits"][0]["truncated"] == false
            }),
        ),
        case(
            "memory_search",
            json!({"query": "formal manuals", "top_k": 1, "full": true, "project": "docs"}),
            Ok(|r| {
                r["count"] == 1
                    && r["hits"][0]["content"] == "Translate product manuals in a formal register"
            }),
        ),
        case(
            "memory_search",
            json!({}),
            Err("missing required argument \"query\""),
        ),
        case("memory_search", json!({"query": ""}), Err("query is empty")),
        case(
            "memory_search",
            json!({"query": "x", "top_k": 0}),
            Err("from 1 to 1000"),
        ),
        case(
            "memory_search",
            json!({"query": "x", "top_k": "5"}),
            Err("must be a whole number"),
        ),
        case(
            "memory_search",
            json!({"query": "x", "full": "yes"}),
            Err("true or false"),
        ),
        case(
            "memory_mark_important",
            json!({"item_id": COFFEE_ID, "importance": 0.9}),
            Ok(|r| r["ok"] == true && r["importance"] == 0.9),
        ),
        case(
            "memory_mark_important",
            json!({"item_id": "0000000000000000"}),
            Err("no memory with item_id"),
        ),
        case(
            "memory_mark_important",
            json!({"item_id": COFFEE_ID, "importance": 2}),
            Err("from 0 to 1"),
        ),
        case(
            "memory_mark_important",
            json!({}),
            Err("missing required argument \"item_id\""),
        ),
        case(
            "coral_stats",
            json!({}),
            Ok(|r| {
                r["ok"] == true
                    && r["stats"]["total"] == 2
                    && r["disk_usage"]["total_bytes"].as_u64() > Some(0)
            }),
        ),
        case(
            "coral_stats",
            json!({"verbose": true}),
            Err("unknown argument"),
        ),
        case(
            "memory_list",
            json!({"order": "importance", "limit": 1}),
            Ok(|r| {
                r["total"] == 2
                    && r["matched"] == 2
                    && r["next_offset"] == 1
                    && r["items"][0]["id"] == COFFEE_ID
                    && r["items"][0]["importance"] == 0.9
                    && r["projects"]["docs"] == 1
            }),
        ),
        case(
            "memory_list",
            json!({"project": "docs", "tier": "hot"}),
            Ok(|r| {
                r["matched"] == 1 && r["next_offset"].is_null() && r["items"][0]["tier"] == "hot"
            }),
        ),
        case(
            "memory_list",
            json!({"tier": "lukewarm"}),
            Err("tier \"lukewarm\" is not hot, warm or cold"),
        ),
        case(
            "memory_list",
            json!({"order": "random"}),
            Err("order \"random\" is not one of newest"),
        ),
        case("memory_list", json!({"limit": 201}), Err("from 1 to 200")),
        case(
            "memory_flush",
            json!({}),
            Ok(|r| r["flushed"] == true && r["stats"]["total"] == 2),
        ),
        case(
            "memory_delete",
            json!({"item_id": "0000000000000000"}),
            Err("no memory with item_id"),
        ),
        case(
            "memory_delete",
            json!({"item_id": 7}),
            Err("must be a string"),
        ),
        case(
            "memory_delete",
            json!({"item_id": COFFEE_ID}),
            Ok(|r| r["ok"] == true && r["item_id"] == COFFEE_ID),
        ),
        case(
            "memory_search",
            json!({"query": "拿铁 咖啡", "full": true}),
            Ok(|r| {
                r["hits"]
                    .as_array()
                    .is_some_and(|h| h.iter().all(|x| x["id"] != COFFEE_ID))
            }),
        ),
        // Threads. "$THREAD" stands for the id the first thread_create returned.
        case(
            "thread_create",
            json!({"title": "发布 v2.0", "summary": "升级嵌入模型", "by": "聊天A"}),
            Ok(|r| {
                r["ok"] == true
                    && r["thread"]["status"] == "active"
                    && r["thread"]["step_count"] == 0
            }),
        ),
        case(
            "thread_create",
            json!({}),
            Err("missing required argument \"title\""),
        ),
        case("thread_create", json!({"title": "   "}), Err("title")),
        case(
            "thread_create",
            json!({"title": "x", "parent_thread_id": "nope"}),
            Err("nope"),
        ),
        case(
            "thread_advance",
            json!({"thread_id": "$THREAD", "note": "向量重建完成，检索验证通过", "by": "聊天B"}),
            Ok(|r| {
                r["thread"]["step_count"] == 1
                    && r["thread"]["steps"][0]["done"] == true
                    && r["thread"]["last_advance_by"] == "聊天B"
            }),
        ),
        case(
            "thread_advance",
            json!({"thread_id": "$THREAD", "note": "下一步：完成测试"}),
            Ok(|r| r["thread"]["steps"][1]["done"] == false),
        ),
        case(
            "thread_advance",
            json!({"thread_id": "nope", "note": "x"}),
            Err("no thread with id"),
        ),
        case(
            "thread_advance",
            json!({"thread_id": "$THREAD"}),
            Err("missing required argument \"note\""),
        ),
        case(
            "thread_advance",
            json!({"thread_id": "$THREAD", "note": ""}),
            Err("note"),
        ),
        case(
            "thread_advance",
            json!({"thread_id": "$THREAD", "note": "x", "done": "yes"}),
            Err("true or false"),
        ),
        case(
            "thread_status",
            json!({}),
            Ok(|r| r["ok"] == true && r["count"] == 1 && r["threads"][0]["title"] == "发布 v2.0"),
        ),
        case(
            "thread_status",
            json!({"thread_id": "$THREAD"}),
            Ok(|r| r["count"] == 1 && r["thread"]["step_count"] == 2),
        ),
        case(
            "thread_status",
            json!({"query": "不存在的"}),
            Ok(|r| r["count"] == 0),
        ),
        case(
            "thread_status",
            json!({"thread_id": "nope"}),
            Ok(|r| r["ok"] == true && r["count"] == 0 && r["thread"].is_null()),
        ),
        case(
            "thread_interrupt",
            json!({"thread_id": "$THREAD", "reason": "等待评审"}),
            Ok(|r| {
                r["thread"]["status"] == "interrupted"
                    && r["thread"]["steps"][2]["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("[中断]") && t.contains("等待评审"))
            }),
        ),
        case(
            "thread_resume",
            json!({"thread_id": "$THREAD"}),
            Ok(|r| r["thread"]["status"] == "active"),
        ),
        case(
            "thread_link",
            json!({"child_id": "$THREAD", "parent_id": "$THREAD"}),
            Err("itself"),
        ),
        case(
            "thread_link",
            json!({"child_id": "$THREAD"}),
            Err("missing required argument \"parent_id\""),
        ),
        case(
            "thread_archive",
            json!({"thread_id": "$THREAD"}),
            Ok(|r| r["thread"]["status"] == "archived"),
        ),
        case(
            "thread_archive",
            json!({"thread_id": 3}),
            Err("must be a string"),
        ),
        case("thread_status", json!({}), Ok(|r| r["count"] == 0)),
        case(
            "thread_status",
            json!({"include_archived": true}),
            Ok(|r| r["count"] == 1),
        ),
        // Threads are never memories.
        case(
            "memory_search",
            json!({"query": "发布 v2.0 升级嵌入模型"}),
            Ok(|r| {
                r["hits"].as_array().is_some_and(|h| {
                    h.iter()
                        .all(|x| !x["content"].as_str().unwrap_or("").contains("发布"))
                })
            }),
        ),
        // Config.
        case(
            "coral_config_get",
            json!({"path": "memory.capacity_threshold"}),
            Ok(|r| r["ok"] == true && r["config"] == 10000),
        ),
        case(
            "coral_config_get",
            json!({}),
            Ok(|r| r["config"]["retrieval"]["top_k"] == 5),
        ),
        case(
            "coral_config_get",
            json!({"path": "nope.key"}),
            Err("no config key"),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "retrieval.top_k", "value": 8}),
            Ok(|r| r["ok"] == true && r["old"] == 5 && r["new"] == 8),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "retrieval.top_k", "value": "9"}),
            Ok(|r| r["new"] == 9),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "retrieval.top_k", "value": "many"}),
            Err("whole number"),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "retrieval.top_k", "value": 0}),
            Err("retrieval.top_k"),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "storage.hard_ratio", "value": 1.5}),
            Err("storage.hard_ratio"),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "paths.warm_cache", "value": "/tmp/x.json"}),
            Err("cannot be changed"),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "embedding.dim", "value": 512}),
            Err("cannot be changed"),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "memory.no_such_key", "value": 1}),
            Err("no config key"),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "retrieval.top_k"}),
            Err("missing required argument \"value\""),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "retrieval.top_k", "value": [1]}),
            Err("a string, a number or true/false"),
        ),
        // The LLM endpoint and key are the user's: a tool would send memories elsewhere.
        case(
            "coral_config_set",
            json!({"key_path": "llm.api_key", "value": "sk-very-secret"}),
            Err("cannot be changed by a tool"),
        ),
        case(
            "coral_config_set",
            json!({"key_path": "llm.base_url", "value": "http://127.0.0.1:9/v1"}),
            Err("cannot be changed by a tool"),
        ),
        case(
            "coral_config_get",
            json!({"path": "llm"}),
            Ok(|r| r["config"]["api_key"] == "" && r["config"]["base_url"] == ""),
        ),
        case(
            "coral_config_reset",
            json!({"key_path": "retrieval.top_k"}),
            Ok(|r| {
                r["ok"] == true
                    && r["reset"] == true
                    && r["scope"] == "retrieval.top_k"
                    && r["changed"]["retrieval.top_k"]["new"] == 5
                    && r["changed"]["retrieval.top_k"]["old"].is_u64()
                    && r["memory_data_untouched"] == true
            }),
        ),
        case(
            "coral_config_get",
            json!({"path": "retrieval.top_k"}),
            Ok(|r| r["config"] == 5),
        ),
        case(
            "coral_config_reset",
            json!({"key_path": "embedding"}),
            Err("cannot be changed"),
        ),
        case(
            "coral_config_reset",
            json!({"key_path": "memory.bogus"}),
            Err("no config key"),
        ),
        case(
            "coral_config_reset",
            json!({}),
            Ok(|r| {
                r["scope"] == "memory/retrieval/heat/storage/parallelism/reload/timeline"
                    && r["reset"] == true
                    && r["changed"].is_object()
                    && r["sections"].as_array().is_some_and(|a| {
                        a.len() == 7
                            && a.contains(&json!("memory"))
                            && a.contains(&json!("timeline"))
                    })
            }),
        ),
        case(
            "coral_report",
            json!({}),
            Ok(|r| {
                r["ok"] == true
                    && r["day_histogram"]["last_14_days"]
                        .as_object()
                        .is_some_and(|d| d.len() == 14 && d.values().any(|n| n.as_u64() >= Some(1)))
                    && r["day_histogram"]["total"] == r["stats"]["total"]
                    && r["day_histogram"]["earlier"] == 0
                    && r["eviction_preview"].as_array().is_some_and(|e| {
                        !e.is_empty()
                            && e.len() <= 5
                            && e.iter().all(|c| {
                                c["location"].is_string()
                                    && c["days_old"].as_f64().is_some_and(|d| d >= 0.0)
                            })
                    })
                    && r["paths"]["data_dir"]
                        .as_str()
                        .is_some_and(|p| p.starts_with('/'))
                    && r["stats"]["total"].as_u64() >= Some(1)
            }),
        ),
        case("coral_report", json!({"x": 1}), Err("unknown argument")),
    ]
}

/// Run every case through `call` (which returns the tool's result or its error message).
pub fn check_all(mut call: impl FnMut(&str, &Value) -> Result<Value, String>) {
    let mut thread: Option<String> = None;
    for (i, c) in cases().iter().enumerate() {
        let args = match &thread {
            Some(id) => serde_json::from_str(&c.args.to_string().replace("$THREAD", id)).unwrap(),
            None => c.args.clone(),
        };
        let got = call(c.tool, &args);
        if let (None, "thread_create", Ok(r)) = (&thread, c.tool, &got) {
            thread = r["thread"]["thread_id"].as_str().map(String::from);
        }
        match (&c.expect, &got) {
            (Ok(check), Ok(result)) => {
                assert!(
                    check(result),
                    "case {i} {} {}: unexpected result {result}",
                    c.tool,
                    c.args
                )
            }
            (Err(needle), Err(message)) => assert!(
                message.contains(needle),
                "case {i} {} {}: error {message:?} should contain {needle:?}",
                c.tool,
                c.args
            ),
            _ => panic!(
                "case {i} {} {}: expected {}, got {got:?}",
                c.tool,
                c.args,
                if c.expect.is_ok() {
                    "success"
                } else {
                    "an error"
                }
            ),
        }
    }
}
